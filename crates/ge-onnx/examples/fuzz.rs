//! Long fuzz run of the ONNX loader and the native graph format:
//! `cargo run --release -p ge-onnx --example fuzz -- [--seconds N] [--seed S] [--corpus DIR]`.
//! Prints the cases run and their outcomes; a panicking input is written to
//! `fuzz-crash-<seed>.onnx` and the run exits with status 1.

use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let mut seconds = 60u64;
    let mut seed = 1u64;
    let mut corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--seconds" => seconds = v.parse().unwrap_or(seconds),
            "--seed" => seed = v.parse().unwrap_or(seed),
            "--corpus" => corpus = PathBuf::from(v),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let seeds = match ge_onnx::fuzz::read_corpus(&corpus) {
        Ok(s) if !s.is_empty() => s,
        _ => {
            eprintln!("no *.onnx seeds in {}", corpus.display());
            std::process::exit(2);
        }
    };
    // Silence the default panic message; panics are reported below.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut total = ge_onnx::fuzz::Stats::default();
    let mut round = 0u64;
    while start.elapsed() < Duration::from_secs(seconds) {
        let s = seed.wrapping_add(round);
        match ge_onnx::fuzz::run(&seeds, 1000, s) {
            Ok(st) => {
                total.cases += st.cases;
                total.accepted += st.accepted;
                total.rejected += st.rejected;
            }
            Err((bytes, msg)) => {
                let out = format!("fuzz-crash-{s}.onnx");
                let _ = std::fs::write(&out, bytes);
                eprintln!("PANIC with seed {s}: {msg} (input in {out})");
                std::process::exit(1);
            }
        }
        round += 1;
    }
    println!(
        "{} cases in {:.1} s ({} seeds): {} loaded, {} rejected with an error, 0 panics",
        total.cases,
        start.elapsed().as_secs_f64(),
        seeds.len(),
        total.accepted,
        total.rejected
    );
}
