//! The loader of acl-sys: where it looks, what its errors say, and loading the ACL test
//! double (a C library built by these tests that stands in for ACL; see
//! `acl_sys::test_double`, behind the `test-double` feature). Nothing here runs on an NPU.

use acl_sys::test_double::TestDouble;
use acl_sys::{Api, LoadError};
use std::path::PathBuf;

#[test]
fn missing_library_names_the_paths_and_set_env() {
    let dirs = vec![
        PathBuf::from("/nonexistent/a/lib64"),
        PathBuf::from("/nonexistent/b/lib64"),
    ];
    let e = Api::load_from(&dirs).unwrap_err();
    assert!(matches!(e, LoadError::NotFound { .. }));
    let m = e.to_string();
    assert!(
        m.contains("/nonexistent/a/lib64") && m.contains("/nonexistent/b/lib64"),
        "{m}"
    );
    assert!(m.contains("set_env.sh"), "{m}");
    assert!(m.contains("libascendcl.so"), "{m}");
}

#[test]
fn search_dirs_follow_the_documented_order() {
    let d = acl_sys::search_dirs();
    assert_eq!(
        d.last().unwrap(),
        &PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest/lib64")
    );
}

#[test]
fn a_library_that_cannot_load_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("libascendcl.so"), b"not a library").unwrap();
    let e = Api::load_from(&[dir.path().to_path_buf()]).unwrap_err();
    assert!(matches!(e, LoadError::Load { .. }), "{e}");
    assert!(e.to_string().contains("libascendcl.so"), "{e}");
}

/// The double checks itself (its own C self-test: operators against hand-computed values,
/// capture semantics, illegal calls, fault injection, leak counts).
#[test]
fn the_test_double_passes_its_self_test() {
    let dir = tempfile::tempdir().unwrap();
    let double = TestDouble::build(dir.path()).expect("the test double builds");
    let exe = dir.path().join("selftest");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdouble/selftest.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ok = std::process::Command::new(&cc)
        .args(["-std=c11", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(ok.success());
    let out = std::process::Command::new(&exe)
        .arg(double.lib_dir().join(acl_sys::test_double::LIBRARY_FILE))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("selftest ok"),
        "{text}"
    );
}

#[test]
fn the_double_loads_with_and_without_the_capture_functions() {
    let dir = tempfile::tempdir().unwrap();
    let double = TestDouble::build(dir.path()).expect("the test double builds");
    let api = Api::load_from(&[PathBuf::from("/nonexistent/lib64"), double.lib_dir()]).unwrap();
    assert_eq!(api.dir(), double.lib_dir());
    assert!(api.has_capture());
    assert!(api.ops.relu.is_some() && api.ops.matmul.is_some());
    let old_dir = tempfile::tempdir().unwrap();
    let old = TestDouble::build_with(old_dir.path(), &["-DACL_TEST_DOUBLE_NO_CAPTURE"]).unwrap();
    let api = Api::load_from(&[old.lib_dir()]).unwrap();
    assert!(!api.has_capture());
}
