//! Generates es-capi's per-operator code from the operator library (`codegen/gen.rs`, over
//! es-core's built-in libraries) into `OUT_DIR`: `ops_generated.rs` (included by `src/lib.rs`)
//! and the generated headers in `OUT_DIR/include` (per-operator C and C++ headers,
//! `es_all_ops_c.h`, `es_all_ops.h`, `es_c_types.h`), copied to
//! `target/<profile>/include/es-capi`. The hand-written headers stay in the crate's `include/`.
//!
//! Writes `es-capi.pc` (pkg-config) beside the libraries `cargo build` makes
//! (`target/<profile>/`) and in `OUT_DIR`, so that C and C++ programs find both header
//! directories and the library: `PKG_CONFIG_PATH=target/release pkg-config --cflags --libs es-capi`.

#[path = "codegen/gen.rs"]
#[allow(dead_code)] // HAND_WRITTEN is for the tests
mod gen;

use std::path::{Path, PathBuf};

/// Replaces `dir` by a directory holding exactly `files` (name, contents).
fn write_dir(dir: &Path, files: &[(&str, &str)]) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=codegen/gen.rs");
    // The operator library: es-core embeds ops/registry/<version>/operators.json (and its build
    // reads ops/index.json), so a change there rebuilds es-core, which reruns this script; the
    // lines say so directly.
    println!("cargo:rerun-if-changed=../../ops/index.json");
    println!("cargo:rerun-if-changed=../../ops/registry");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));

    let files = gen::generate(&gen::builtin_libraries());
    let mut headers = Vec::new();
    for (rel, text) in &files {
        match rel.strip_prefix("include/") {
            Some(name) => headers.push((name, text.as_str())),
            None => std::fs::write(out.join(rel), text).expect("write OUT_DIR/ops_generated.rs"),
        }
    }
    let include = out.join("include");
    write_dir(&include, &headers).expect("write OUT_DIR/include");

    // OUT_DIR is <target>/<profile>/build/es-capi-<hash>/out.
    let profile_dir = out
        .ancestors()
        .nth(3)
        .map(PathBuf::from)
        .filter(|d| d.is_dir());
    let libdir = profile_dir.clone().unwrap_or_else(|| out.clone());
    let pc = format!(
        "prefix={}\nlibdir=${{prefix}}\nincludedir={}\ngenerated_includedir={}\n\nName: es-capi\nDescription: ge-rs ES C and C++ graph-building API\nVersion: {}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -les_capi\nLibs.private: -lpthread -ldl -lm -lrt -lutil\nCflags: -I${{includedir}} -I${{generated_includedir}}\n",
        libdir.display(),
        manifest.join("include").display(),
        include.display(),
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    );
    std::fs::write(out.join("es-capi.pc"), &pc).expect("write OUT_DIR/es-capi.pc");
    if let Some(dir) = profile_dir {
        // Best effort: the profile directory is cargo's, not ours.
        let _ = std::fs::write(dir.join("es-capi.pc"), &pc);
        let _ = write_dir(&dir.join("include").join("es-capi"), &headers);
    }
    println!("cargo:rustc-env=ES_CAPI_PC_DIR={}", out.display());
    println!(
        "cargo:rustc-env=ES_CAPI_GENERATED_INCLUDE={}",
        include.display()
    );
}
