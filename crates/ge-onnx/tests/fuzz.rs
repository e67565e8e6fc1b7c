//! A short fuzz run of the loaders over the seed corpus: no input may make them panic.
//! `GE_FUZZ_CASES` sets the number of cases (default 3000); the long run is the `fuzz` example.

use std::path::Path;

#[test]
fn mutated_models_never_panic_the_loaders() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let corpus = ge_onnx::fuzz::read_corpus(&dir).expect("corpus");
    assert!(corpus.len() >= 20, "the seed corpus is missing");
    let cases = std::env::var("GE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    match ge_onnx::fuzz::run(&corpus, cases, 0x5eed) {
        Ok(st) => {
            assert_eq!(st.cases, cases);
            // Both outcomes must occur, or the mutations are not reaching the translator.
            assert!(st.accepted > 0 && st.rejected > 0, "{st:?}");
        }
        Err((bytes, msg)) => {
            let out = std::env::temp_dir().join("ge-onnx-fuzz-crash.onnx");
            let _ = std::fs::write(&out, &bytes);
            panic!(
                "a loader panicked: {msg} (input written to {})",
                out.display()
            );
        }
    }
}

#[test]
fn every_seed_loads_or_fails_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for b in ge_onnx::fuzz::read_corpus(&dir).expect("corpus") {
        ge_onnx::fuzz::check_one(&b).expect("no panic");
    }
}
