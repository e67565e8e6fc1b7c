//! Compiles the C and C++ examples (`examples/c`, `examples/cpp` at the repository root)
//! with the system compiler against the headers (the hand-written ones in `include/`, the
//! build's generated ones) and this crate's `cdylib`, runs them (under
//! AddressSanitizer, leak checking included, where the compiler supports it) and checks their
//! results. `CC` / `CXX` pick other compilers.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory holding `libes_capi.so` of this build (beside the test binary).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    let so = dir.join(format!(
        "{}es_capi{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        so.exists(),
        "{} is missing: cargo builds it with the tests",
        so.display()
    );
    dir
}

/// The include directories of this build: the hand-written headers, then the generated ones.
fn includes() -> Vec<PathBuf> {
    vec![
        root().join("crates/es-capi/include"),
        PathBuf::from(env!("ES_CAPI_GENERATED_INCLUDE")),
    ]
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("es-capi-examples");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn compiler(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

/// Whether `cc` builds and runs an AddressSanitizer program here (probed once per compiler).
fn asan_works(cc: &str, dir: &Path) -> bool {
    static PROBED: std::sync::Mutex<Vec<(String, bool)>> = std::sync::Mutex::new(Vec::new());
    let mut probed = PROBED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, ok)) = probed.iter().find(|(c, _)| c == cc) {
        return *ok;
    }
    let src = dir.join("asan_probe.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\nint main(void) { free(malloc(4)); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join(format!("asan_probe_{}", probed.len()));
    let built = Command::new(cc)
        .args(["-x", "c", "-fsanitize=address", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let ok = built && Command::new(&exe).status().is_ok_and(|s| s.success());
    probed.push((cc.to_string(), ok));
    ok
}

/// The linker arguments for the shared library (with an rpath) or the static one.
fn link_args(lib: &Path, static_lib: bool) -> Vec<String> {
    if static_lib {
        let a = lib.join(format!("{}es_capi{}", std::env::consts::DLL_PREFIX, ".a"));
        let mut v = vec!["-Wl,--gc-sections".to_string(), a.display().to_string()];
        v.extend(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil"].map(String::from));
        v
    } else {
        vec![
            format!("-L{}", lib.display()),
            "-les_capi".into(),
            format!("-Wl,-rpath,{}", lib.display()),
            "-lm".into(),
        ]
    }
}

/// Compiles `src` with `cc` against the headers in `include` (searched in order) and the
/// library; returns the
/// executable, or the compiler's messages.
fn compile(
    cc: &str,
    std: &str,
    src: &Path,
    name: &str,
    include: &[PathBuf],
    static_lib: bool,
) -> Result<PathBuf, String> {
    let dir = out_dir();
    let lib = lib_dir();
    let exe = dir.join(name);
    let mut cmd = Command::new(cc);
    cmd.arg(std)
        .args(["-Wall", "-Wextra", "-Werror", "-g"])
        .args(include.iter().map(|d| format!("-I{}", d.display())))
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .args(link_args(&lib, static_lib));
    if asan_works(cc, &dir) {
        cmd.arg("-fsanitize=address");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    if out.status.success() {
        Ok(exe)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Runs an example; asserts it succeeds and returns its standard output.
fn run(exe: &Path) -> String {
    // Cargo's LD_LIBRARY_PATH may name an older libes_capi (target/debug): use the rpath.
    let run = Command::new(exe)
        .env_remove("LD_LIBRARY_PATH")
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        exe.display(),
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// Builds `src` with `cc` against this build's headers and runs it; returns its standard output.
fn build_and_run(cc: &str, std: &str, src: &Path, name: &str) -> String {
    let exe = compile(cc, std, src, name, &includes(), false)
        .unwrap_or_else(|e| panic!("{cc} failed on {}:\n{e}", src.display()));
    run(&exe)
}

fn c(name: &str) -> String {
    build_and_run(
        &compiler("CC", "cc"),
        "-std=c11",
        &root().join(format!("examples/c/{name}.c")),
        &format!("c_{name}"),
    )
}

fn cpp(name: &str) -> String {
    build_and_run(
        &compiler("CXX", "c++"),
        "-std=c++17",
        &root().join(format!("examples/cpp/{name}.cpp")),
        &format!("cpp_{name}"),
    )
}

fn has_line(out: &str, line: &str) {
    assert!(
        out.lines().any(|l| l.trim() == line),
        "no line '{line}' in:\n{out}"
    );
}

#[test]
fn c_add() {
    let out = c("add");
    has_line(&out, "add: 11 22 33");
    has_line(&out, "producer: Add Add_0");
    has_line(&out, "expected error: Add: input 'x2' is required");
    assert!(out.contains("Add(%input_0, %input_1)"), "{out}");
}

#[test]
fn c_mlp() {
    let out = c("mlp");
    has_line(&out, "relu(x @ w^T + bias): 0 2 0 1 4 3");
    has_line(&out, "second layer: 2 8");
}

#[test]
fn c_if_subgraph() {
    let out = c("if_subgraph");
    has_line(&out, "then (relu): 0 2");
    has_line(&out, "else (x + 1): -0.5 3");
}

#[test]
fn c_split() {
    let out = c("split");
    has_line(&out, "part: 1 2");
    has_line(&out, "part: 5 6");
    has_line(
        &out,
        "expected error: SplitD: y_num is 2 but attribute 'num_split' is 3",
    );
}

/// The seed's advice for C: link the static library into the program.
#[test]
fn c_split_linked_statically() {
    let cc = compiler("CC", "cc");
    let src = root().join("examples/c/split.c");
    let exe = compile(&cc, "-std=c11", &src, "c_split_static", &includes(), true)
        .unwrap_or_else(|e| panic!("{cc} failed on {}:\n{e}", src.display()));
    let out = run(&exe);
    // The executable holds the whole library: do not keep it.
    std::fs::remove_file(&exe).unwrap();
    has_line(&out, "part: 5 6");
}

#[test]
fn cpp_add() {
    let out = cpp("add");
    has_line(&out, "add: 11 22 33");
    has_line(&out, "producer: Add");
    assert!(
        out.contains("expected error: not supported: EsSetOriginSymbolShape"),
        "{out}"
    );
}

#[test]
fn cpp_mlp() {
    let out = cpp("mlp");
    has_line(&out, "relu(x @ w^T + bias): 0 2 0 1 4 3");
    has_line(&out, "2 * (h @ 1) - 1: 3 15");
    has_line(&out, "10 / (z + 2): 2 0.588235");
    has_line(&out, "x @ w^T (8.0.0 form): 1 2 3 3 4 7");
}

#[test]
fn cpp_if_subgraph() {
    let out = cpp("if_subgraph");
    has_line(&out, "then (relu): 0 2");
    has_line(&out, "else (x + 1): -0.5 3");
}

#[test]
fn cpp_split() {
    let out = cpp("split");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("part:")).count(),
        3,
        "{out}"
    );
    has_line(&out, "part: 3 4");
}

/// ABI compatibility (the seed's rule for C, by versioned symbols): a program compiled against
/// the 8.0.0 library's headers, calling operators whose signatures changed in 8.1.0, runs
/// against this library. The same program does not compile against the current headers.
#[test]
fn abi_program_built_against_the_8_0_0_headers_runs() {
    #[path = "../codegen/gen.rs"]
    #[allow(dead_code)]
    mod gen;
    let old = es_core::ops::builtin_library("8.0.0").unwrap();
    let old_include = out_dir().join("include_8.0.0");
    if old_include.exists() {
        std::fs::remove_dir_all(&old_include).unwrap();
    }
    std::fs::create_dir_all(&old_include).unwrap();
    for (rel, text) in gen::generate(&[old]) {
        if let Some(name) = rel.strip_prefix("include/") {
            std::fs::write(old_include.join(name), text).unwrap();
        }
    }
    // The hand-written headers, then the 8.0.0 library's generated ones.
    let include = vec![root().join("crates/es-capi/include"), old_include];
    let src = root().join("crates/es-capi/tests/abi/old_signatures.c");
    let cc = compiler("CC", "cc");
    let exe = compile(&cc, "-std=c11", &src, "abi_8_0_0", &include, false).unwrap_or_else(|e| {
        panic!(
            "{cc} failed on {} with the 8.0.0 headers:\n{e}",
            src.display()
        )
    });
    let out = run(&exe);
    has_line(&out, "output 0: 3 7");
    has_line(&out, "output 1: 2 4");
    has_line(&out, "output 2: 5 11 11 25");
    let err = compile(&cc, "-std=c11", &src, "abi_current", &includes(), false)
        .expect_err("the 8.0.0 calls must not compile against the current headers");
    assert!(err.contains("EsReduceSum"), "{err}");
}

/// The pkg-config file the build writes names the headers and the library.
#[test]
fn pkg_config_file_names_headers_and_library() {
    let pc_dir = env!("ES_CAPI_PC_DIR");
    let text = std::fs::read_to_string(Path::new(pc_dir).join("es-capi.pc")).unwrap();
    assert!(text.contains("-les_capi"), "{text}");
    let include = root()
        .join("crates/es-capi/include")
        .canonicalize()
        .unwrap();
    let includedir = text
        .lines()
        .find_map(|l| l.strip_prefix("includedir="))
        .expect("includedir line");
    assert_eq!(Path::new(includedir).canonicalize().unwrap(), include);
    let generated = text
        .lines()
        .find_map(|l| l.strip_prefix("generated_includedir="))
        .expect("generated_includedir line");
    assert_eq!(
        Path::new(generated).canonicalize().unwrap(),
        Path::new(env!("ES_CAPI_GENERATED_INCLUDE"))
            .canonicalize()
            .unwrap()
    );
    assert!(
        text.contains("Cflags: -I${includedir} -I${generated_includedir}"),
        "{text}"
    );
    // With pkg-config on the machine, its flags compile an example.
    let Ok(out) = Command::new("pkg-config")
        .args(["--cflags", "es-capi"])
        .env("PKG_CONFIG_PATH", pc_dir)
        .output()
    else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cflags = String::from_utf8(out.stdout).unwrap();
    let obj = out_dir().join("add_pkg_config.o");
    let status = Command::new(compiler("CC", "cc"))
        .args(cflags.split_whitespace())
        .args(["-std=c11", "-c", "-o"])
        .arg(&obj)
        .arg(root().join("examples/c/add.c"))
        .status()
        .unwrap();
    assert!(status.success());
}

/// The CMake package the build writes beside `es-capi.pc` (`es-capiConfig.cmake` and its
/// version file): imported targets for both libraries, found beside the file, carrying the
/// pkg-config file's include directories. With cmake on the machine (`CMAKE` picks one), a
/// project using the package builds the add example against each library and runs it;
/// without cmake only the files are checked.
#[test]
fn cmake_package_links_both_libraries() {
    let pc_dir = Path::new(env!("ES_CAPI_PC_DIR"));
    let config = std::fs::read_to_string(pc_dir.join("es-capiConfig.cmake")).unwrap();
    let includes = includes();
    let include_line = format!(
        "set(es-capi_INCLUDE_DIRS \"{}\" \"{}\")",
        includes[0].canonicalize().unwrap().display(),
        includes[1].display()
    );
    has_line(&config, &include_line);
    for line in [
        "set(es-capi_LIBRARY \"${CMAKE_CURRENT_LIST_DIR}/libes_capi.so\")",
        "set(es-capi_STATIC_LIBRARY \"${CMAKE_CURRENT_LIST_DIR}/libes_capi.a\")",
        "add_library(es-capi::es_capi SHARED IMPORTED)",
        "add_library(es-capi::es_capi_static STATIC IMPORTED)",
        "INTERFACE_LINK_LIBRARIES \"pthread;dl;m;rt;util\")",
    ] {
        has_line(&config, line);
    }
    let version = std::fs::read_to_string(pc_dir.join("es-capiConfigVersion.cmake")).unwrap();
    has_line(
        &version,
        &format!("set(PACKAGE_VERSION \"{}\")", env!("CARGO_PKG_VERSION")),
    );

    let cmake = compiler("CMAKE", "cmake");
    if Command::new(&cmake).arg("--version").output().is_err() {
        eprintln!("no cmake here: the package's files were checked, not used");
        return;
    }
    // The package as `cargo build` leaves it: the files beside this build's libraries.
    let dir = out_dir().join("cmake");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let pkg = dir.join("es-capi");
    std::fs::create_dir_all(&pkg).unwrap();
    for f in ["es-capiConfig.cmake", "es-capiConfigVersion.cmake"] {
        std::fs::copy(pc_dir.join(f), pkg.join(f)).unwrap();
    }
    for lib in ["libes_capi.so", "libes_capi.a"] {
        std::os::unix::fs::symlink(lib_dir().join(lib), pkg.join(lib)).unwrap();
    }
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let add_c = root().join("examples/c/add.c");
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\nproject(es_capi_cmake_check C)\n\
             find_package(es-capi 0.1 CONFIG REQUIRED)\n\
             add_executable(add_shared \"{0}\")\ntarget_link_libraries(add_shared PRIVATE es-capi::es_capi)\n\
             add_executable(add_static \"{0}\")\ntarget_link_libraries(add_static PRIVATE es-capi::es_capi_static)\n",
            add_c.display()
        ),
    )
    .unwrap();
    let build = dir.join("build");
    let cmake_ok = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(&cmake).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "cmake {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    cmake_ok(&[
        "-S".as_ref(),
        project.as_os_str(),
        "-B".as_ref(),
        build.as_os_str(),
        format!("-DCMAKE_PREFIX_PATH={}", dir.display()).as_ref(),
        format!("-DCMAKE_C_COMPILER={}", compiler("CC", "cc")).as_ref(),
    ]);
    cmake_ok(&["--build".as_ref(), build.as_os_str()]);
    for exe in ["add_shared", "add_static"] {
        has_line(&run(&build.join(exe)), "add: 11 22 33");
    }
    // The static executable holds the whole library: do not keep it.
    std::fs::remove_dir_all(&dir).unwrap();
}
