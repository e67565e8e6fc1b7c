//! Writes `es-capi.pc` (pkg-config) beside the libraries `cargo build` makes
//! (`target/<profile>/`) and in `OUT_DIR`, so that C and C++ programs find the headers and the
//! library: `PKG_CONFIG_PATH=target/release pkg-config --cflags --libs es-capi`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    // OUT_DIR is <target>/<profile>/build/es-capi-<hash>/out.
    let profile_dir = out.ancestors().nth(3).map(PathBuf::from);
    let libdir = profile_dir.clone().unwrap_or_else(|| out.clone());
    let pc = format!(
        "prefix={}\nlibdir=${{prefix}}\nincludedir={}\n\nName: es-capi\nDescription: ge-rs ES C and C++ graph-building API\nVersion: {}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -les_capi\nLibs.private: -lpthread -ldl -lm -lrt -lutil\nCflags: -I${{includedir}}\n",
        libdir.display(),
        manifest.join("include").display(),
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    );
    std::fs::write(out.join("es-capi.pc"), &pc).expect("write OUT_DIR/es-capi.pc");
    if let Some(dir) = profile_dir.filter(|d| d.is_dir()) {
        // Best effort: the profile directory is cargo's, not ours.
        let _ = std::fs::write(dir.join("es-capi.pc"), &pc);
    }
    println!("cargo:rustc-env=ES_CAPI_PC_DIR={}", out.display());
}
