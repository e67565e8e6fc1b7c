//! The generated code is the build's, made by `build.rs` from `codegen/gen.rs` (nothing
//! generated is checked in). These tests check what the build script's own success cannot:
//! that its generated directory holds exactly the headers `gen.rs` makes for the operator
//! library this crate links (no header left from an operator since removed, none missing), that
//! `ops_generated.rs` is the one compiled in, and that the crate's `include/` holds only the
//! hand-written headers (a generated one left there would shadow the build's).

#[path = "../codegen/gen.rs"]
mod gen;

use std::path::Path;

fn generated_include() -> &'static Path {
    Path::new(env!("ES_CAPI_GENERATED_INCLUDE"))
}

#[test]
fn the_builds_generated_files_are_what_gen_makes_for_the_linked_library() {
    let files = gen::generate(&gen::builtin_libraries());
    let include = generated_include();
    let mut wanted = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for (rel, text) in &files {
        let path = match rel.strip_prefix("include/") {
            Some(name) => {
                wanted.insert(name.to_string());
                include.join(name)
            }
            None => include.parent().unwrap().join(rel),
        };
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            wrong.push(path.display().to_string());
        }
    }
    assert!(wrong.is_empty(), "differ from gen.rs's output: {wrong:?}");
    let present: std::collections::BTreeSet<String> = std::fs::read_dir(include)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(present, wanted, "{} holds other headers", include.display());
    // Every operator of the library has its C and C++ headers, and the umbrella headers name them.
    let all_c = std::fs::read_to_string(include.join("es_all_ops_c.h")).unwrap();
    for op in es_core::ops::global_registry().iter() {
        assert!(
            present.contains(&format!("es_{}_c.h", op.name)),
            "{}",
            op.name
        );
        assert!(
            present.contains(&format!("es_{}.h", op.name)),
            "{}",
            op.name
        );
        assert!(
            all_c.contains(&format!("#include \"es_{}_c.h\"", op.name)),
            "{}",
            op.name
        );
    }
}

#[test]
fn the_crate_include_dir_holds_only_the_hand_written_headers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(root.join("include"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut hand: Vec<String> = gen::HAND_WRITTEN.iter().map(|s| s.to_string()).collect();
    hand.sort();
    assert_eq!(names, hand);
}

/// Every function `include/esb_funcs.h` declares is exported by the library, and every
/// hand-written `#[no_mangle]` function is declared there (the core header is hand-written).
#[test]
fn core_header_matches_the_exports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(root.join("include/esb_funcs.h")).unwrap();
    let mut declared = std::collections::BTreeSet::new();
    for l in header.lines() {
        let l = l.trim();
        if l.starts_with("//") || l.starts_with('*') || l.starts_with("/*") || l.starts_with('#') {
            continue;
        }
        // A declaration: the identifier right before the first '('.
        if let Some(j) = l.find('(') {
            let head = l[..j].trim_end();
            let name: String = head
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if name.starts_with("Es") && !l.starts_with("typedef") {
                declared.insert(name);
            }
        }
    }
    let mut exported = std::collections::BTreeSet::new();
    for f in std::fs::read_dir(root.join("src")).unwrap() {
        let p = f.unwrap().path();
        if p.file_name().unwrap() == "ops_generated.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for l in text.lines() {
            let t = l.trim();
            if t.starts_with("pub unsafe extern \"C\" fn $")
                || t.starts_with("pub extern \"C\" fn $")
            {
                continue;
            }
            for pre in ["pub unsafe extern \"C\" fn ", "pub extern \"C\" fn "] {
                if let Some(r) = t.strip_prefix(pre) {
                    exported.insert(r[..r.find('(').unwrap()].to_string());
                }
            }
        }
        // Functions made by the macros: their names are listed in the invocations.
        for line in text.lines() {
            for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("EsCreateConst")
                    || word.starts_with("EsCreateVector")
                    || word.starts_with("EsCreateScalar")
                    || (word.starts_with("EsSet") && word.contains("AttrFor"))
                {
                    exported.insert(word.to_string());
                }
            }
        }
    }
    let missing: Vec<_> = exported.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "exported but not declared in esb_funcs.h: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "declared in esb_funcs.h but not exported: {extra:?}"
    );
}
