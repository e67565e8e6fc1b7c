//! The generated files (`src/ops_generated.rs`, the per-operator headers, `es_all_ops*.h`,
//! `es_c_types.h`) match what `codegen/gen.rs` makes from the current operator library.
//! `ES_CAPI_REGEN=1 cargo test -p es-capi --test generated_current` rewrites them.

#[path = "../codegen/gen.rs"]
mod gen;

use std::path::Path;

/// Every built-in library version, oldest first (the current one last).
fn libraries() -> Vec<std::sync::Arc<es_core::OpRegistry>> {
    let mut v: Vec<_> = es_core::ops::builtin_versions()
        .into_iter()
        .map(|v| es_core::ops::builtin_library(v).unwrap())
        .collect();
    let current = v
        .iter()
        .position(|l| l.version == es_core::ops::BUILTIN_VERSION)
        .unwrap();
    let cur = v.remove(current);
    v.push(cur);
    v
}

#[test]
fn generated_files_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = gen::generate(&libraries());
    let regen = std::env::var_os("ES_CAPI_REGEN").is_some();
    let wanted: std::collections::HashSet<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let mut stale = Vec::new();
    for (rel, text) in &files {
        let path = root.join(rel);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            if regen {
                std::fs::write(&path, text).unwrap();
            } else {
                stale.push(rel.clone());
            }
        }
    }
    for e in std::fs::read_dir(root.join("include")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let rel = format!("include/{name}");
        if gen::is_generated_header(&name) && !wanted.contains(&rel) {
            if regen {
                std::fs::remove_file(root.join(&rel)).unwrap();
            } else {
                stale.push(format!("{rel} (no such operator)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated files out of date: {stale:?}; run ES_CAPI_REGEN=1 cargo test -p es-capi --test generated_current"
    );
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
