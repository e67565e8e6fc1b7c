//! Generates es-capi's per-operator code from the operator library (`codegen/gen.rs`, over
//! es-core's built-in libraries) into `OUT_DIR`: `ops_generated.rs` (included by `src/lib.rs`)
//! and the generated headers in `OUT_DIR/include` (per-operator C and C++ headers,
//! `es_all_ops_c.h`, `es_all_ops.h`, `es_c_types.h`), copied to
//! `target/<profile>/include/es-capi`. The hand-written headers stay in the crate's `include/`.
//!
//! Writes `es-capi.pc` (pkg-config) and `es-capiConfig.cmake` / `es-capiConfigVersion.cmake`
//! (a CMake package) beside the libraries `cargo build` makes (`target/<profile>/`) and in
//! `OUT_DIR`, so that C and C++ programs find both header directories and the library:
//! `PKG_CONFIG_PATH=target/release pkg-config --cflags --libs es-capi`, or CMake's
//! `find_package(es-capi CONFIG REQUIRED)` with `CMAKE_PREFIX_PATH=target/release`.

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
        "prefix={}\nlibdir=${{prefix}}\nincludedir={}\ngenerated_includedir={}\n\nName: es-capi\nDescription: ge-rs ES C and C++ graph-building API\nVersion: {}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -les_capi\nLibs.private: {}\nCflags: -I${{includedir}} -I${{generated_includedir}}\n",
        libdir.display(),
        manifest.join("include").display(),
        include.display(),
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
        STATIC_SYSTEM_LIBS
            .iter()
            .map(|l| format!("-l{l}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    std::fs::write(out.join("es-capi.pc"), &pc).expect("write OUT_DIR/es-capi.pc");
    let cmake = cmake_config(&manifest.join("include"), &include);
    let cmake_version = cmake_config_version();
    std::fs::write(out.join("es-capiConfig.cmake"), &cmake)
        .expect("write OUT_DIR/es-capiConfig.cmake");
    std::fs::write(out.join("es-capiConfigVersion.cmake"), &cmake_version)
        .expect("write OUT_DIR/es-capiConfigVersion.cmake");
    if let Some(dir) = profile_dir {
        // Best effort: the profile directory is cargo's, not ours.
        let _ = std::fs::write(dir.join("es-capi.pc"), &pc);
        let _ = std::fs::write(dir.join("es-capiConfig.cmake"), &cmake);
        let _ = std::fs::write(dir.join("es-capiConfigVersion.cmake"), &cmake_version);
        let _ = write_dir(&dir.join("include").join("es-capi"), &headers);
    }
    println!("cargo:rustc-env=ES_CAPI_PC_DIR={}", out.display());
    println!(
        "cargo:rustc-env=ES_CAPI_GENERATED_INCLUDE={}",
        include.display()
    );
}

/// The system libraries a program linking the static library needs besides it (Rust's std).
const STATIC_SYSTEM_LIBS: &[&str] = &["pthread", "dl", "m", "rt", "util"];

/// `es-capiConfig.cmake`: imported targets `es-capi::es_capi` (the shared library) and
/// `es-capi::es_capi_static` (the static library), found beside the file itself, both carrying
/// the two include directories.
fn cmake_config(include: &Path, generated: &Path) -> String {
    let macos = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "macos");
    let shared = if macos {
        "libes_capi.dylib"
    } else {
        "libes_capi.so"
    };
    let system_libs = if macos {
        String::new()
    } else {
        STATIC_SYSTEM_LIBS.join(";")
    };
    format!(
        r#"# es-capi's CMake package, written by crates/es-capi/build.rs (cargo build -p es-capi) beside
# the libraries it describes.
#   find_package(es-capi CONFIG REQUIRED)   # CMAKE_PREFIX_PATH or es-capi_DIR names this directory
#   target_link_libraries(prog PRIVATE es-capi::es_capi)          # the shared library
#   target_link_libraries(prog PRIVATE es-capi::es_capi_static)   # or the static one
# Both targets carry the include directories (the hand-written and the generated headers).
set(es-capi_INCLUDE_DIRS "{include}" "{generated}")
set(es-capi_LIBRARY "${{CMAKE_CURRENT_LIST_DIR}}/{shared}")
set(es-capi_STATIC_LIBRARY "${{CMAKE_CURRENT_LIST_DIR}}/libes_capi.a")
if(NOT TARGET es-capi::es_capi)
  add_library(es-capi::es_capi SHARED IMPORTED)
  # The library has no SONAME: link it as -les_capi, not by its path.
  set_target_properties(es-capi::es_capi PROPERTIES
    IMPORTED_LOCATION "${{es-capi_LIBRARY}}"
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${{es-capi_INCLUDE_DIRS}}")
endif()
if(NOT TARGET es-capi::es_capi_static)
  add_library(es-capi::es_capi_static STATIC IMPORTED)
  set_target_properties(es-capi::es_capi_static PROPERTIES
    IMPORTED_LOCATION "${{es-capi_STATIC_LIBRARY}}"
    INTERFACE_INCLUDE_DIRECTORIES "${{es-capi_INCLUDE_DIRS}}"
    INTERFACE_LINK_LIBRARIES "{system_libs}")
endif()
"#,
        include = include.display(),
        generated = generated.display(),
    )
}

/// `es-capiConfigVersion.cmake`: this version satisfies a request for an equal or older one of
/// the same major version (of the same minor version while the major version is 0).
fn cmake_config_version() -> String {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    format!(
        r#"# es-capi's CMake package version, written by crates/es-capi/build.rs.
set(PACKAGE_VERSION "{version}")
string(REPLACE "." ";" _es_capi_have "${{PACKAGE_VERSION}}")
string(REPLACE "." ";" _es_capi_want "${{PACKAGE_FIND_VERSION}}.0.0")
list(GET _es_capi_have 0 _es_capi_have_major)
list(GET _es_capi_have 1 _es_capi_have_minor)
list(GET _es_capi_want 0 _es_capi_want_major)
list(GET _es_capi_want 1 _es_capi_want_minor)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
   OR NOT _es_capi_have_major EQUAL _es_capi_want_major
   OR (_es_capi_have_major EQUAL 0 AND NOT _es_capi_have_minor EQUAL _es_capi_want_minor))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
"#
    )
}
