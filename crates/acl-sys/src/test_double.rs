//! The ACL **test double**: a small C library (`testdouble/`, the files in [`SOURCES`]) that exports
//! the ACL functions this crate loads, keeps "device" memory on the host, computes the supported
//! operators, records every call and flags illegal use (for example a synchronous call while a
//! stream captures). It lets the tests check how ge-rs drives ACL without an NPU. It is not
//! Huawei's runtime: nothing that passes against it has run on an NPU.
//!
//! [`TestDouble::build`] compiles it with the system C compiler (`$CC`, else `cc`) into
//! `<dir>/lib64/` and links `libascendcl.so`, `libnnopbase.so` and `libopapi.so` to it, so
//! `ASCEND_HOME_PATH=<dir>` makes [`crate::Api::load`] load it; the handle it returns reads
//! the double's records (the same loaded library: all names point at one file).

use libloading::Library;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `(name, text)` of files in `testdouble/`, the text included at compile time.
macro_rules! testdouble_files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../testdouble/", $name)))),*]
    };
}

/// The double's C sources as (file name, text), compiled together into one library
/// (`testdouble/acl_double_internal.h` says what each one holds).
pub const SOURCES: &[(&str, &str)] = testdouble_files![
    "acl_test_double.c",
    "acl_double_runtime.c",
    "acl_double_capture.c",
    "acl_double_tensor.c",
    "acl_double_kernels.c",
    "acl_double_ops.c",
];

/// The header with the CANN ABI types that [`SOURCES`] (and the double's self-test) includes,
/// as `acl_abi.h`.
pub const ABI_HEADER: &str = include_str!("../testdouble/acl_abi.h");

/// The header the [`SOURCES`] share their state and helpers through, as `acl_double_internal.h`.
pub const INTERNAL_HEADER: &str = include_str!("../testdouble/acl_double_internal.h");

/// The file the double is built into (inside `<dir>/lib64/`).
pub const LIBRARY_FILE: &str = "libacl_test_double.so";

/// A built and loaded test double.
pub struct TestDouble {
    root: PathBuf,
    lib: Library,
}

impl std::fmt::Debug for TestDouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TestDouble({})", self.root.display())
    }
}

impl TestDouble {
    /// Compiles the double into `dir/lib64/` (with the three ACL library names linked to it)
    /// and loads it. `dir` is what `ASCEND_HOME_PATH` should be set to.
    pub fn build(dir: &Path) -> Result<TestDouble, String> {
        TestDouble::build_with(dir, &[])
    }

    /// [`TestDouble::build`] with extra compiler flags: `-DACL_TEST_DOUBLE_NO_CAPTURE` leaves
    /// out the `aclmdlRI*` functions, as on a CANN older than 8.2.
    pub fn build_with(dir: &Path, flags: &[&str]) -> Result<TestDouble, String> {
        let lib64 = dir.join("lib64");
        std::fs::create_dir_all(&lib64).map_err(|e| format!("{}: {e}", lib64.display()))?;
        let headers = [
            ("acl_abi.h", ABI_HEADER),
            ("acl_double_internal.h", INTERNAL_HEADER),
        ];
        let mut sources = Vec::with_capacity(SOURCES.len());
        for (name, text) in headers.iter().chain(SOURCES) {
            let path = lib64.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            if name.ends_with(".c") {
                sources.push(path);
            }
        }
        let out = lib64.join(LIBRARY_FILE);
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-std=c11", "-shared", "-fPIC", "-O1"])
            .args(flags)
            // Every symbol resolved at link time: a source left out of SOURCES fails here.
            .arg("-Wl,-z,defs")
            .arg("-o")
            .arg(&out)
            .args(&sources)
            .args(["-lm", "-lpthread"])
            .output()
            .map_err(|e| format!("running the C compiler '{cc}': {e}"))?;
        if !status.status.success() {
            return Err(format!(
                "compiling the ACL test double failed:\n{}",
                String::from_utf8_lossy(&status.stderr)
            ));
        }
        for name in [
            crate::RUNTIME_LIBRARY,
            crate::NNOPBASE_LIBRARY,
            crate::OPAPI_LIBRARY,
        ] {
            let link = lib64.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(LIBRARY_FILE, &link)
                .map_err(|e| format!("{}: {e}", link.display()))?;
        }
        // SAFETY: the library just built from SOURCES.
        let lib = unsafe { Library::new(&out) }.map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(TestDouble {
            root: dir.to_path_buf(),
            lib,
        })
    }

    /// The directory to use as `ASCEND_HOME_PATH`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding the libraries (`<root>/lib64`).
    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("lib64")
    }

    fn sym<T: Copy>(&self, name: &[u8]) -> T {
        // SAFETY: the double exports these with the types used below.
        unsafe {
            *self
                .lib
                .get::<T>(name)
                .expect("the test double exports its hooks")
        }
    }

    /// Clears the call log, counts, violations and pending failures (not live objects).
    pub fn reset(&self) {
        let f: unsafe extern "C" fn() = self.sym(b"acl_test_double_reset\0");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    /// Sets how many devices `aclrtGetDeviceCount` reports.
    pub fn set_device_count(&self, n: u32) {
        let f: unsafe extern "C" fn(u32) = self.sym(b"acl_test_double_set_device_count\0");
        // SAFETY: a plain integer.
        unsafe { f(n) }
    }

    /// Makes the next call to `function` fail with `code`, setting the recent error message
    /// to `message`.
    pub fn fail_next(&self, function: &str, code: i32, message: &str) {
        let f: unsafe extern "C" fn(*const c_char, c_int, *const c_char) =
            self.sym(b"acl_test_double_fail_next\0");
        let (a, b) = (cstr(function), cstr(message));
        // SAFETY: NUL-terminated strings that live for the call (the double copies them).
        unsafe { f(a.as_ptr(), code, b.as_ptr()) }
    }

    /// How many times `function` was called since the last reset.
    pub fn calls(&self, function: &str) -> i64 {
        let f: unsafe extern "C" fn(*const c_char) -> i64 = self.sym(b"acl_test_double_calls\0");
        let a = cstr(function);
        // SAFETY: a NUL-terminated string that lives for the call.
        unsafe { f(a.as_ptr()) }
    }

    /// Live objects of a kind: "device_buffers", "host_buffers", "streams", "contexts",
    /// "graphs", "tensors", "scalars", "int_arrays", "executors", "devices", "initialized",
    /// "capturing".
    pub fn live(&self, kind: &str) -> i64 {
        let f: unsafe extern "C" fn(*const c_char) -> i64 = self.sym(b"acl_test_double_live\0");
        let a = cstr(kind);
        // SAFETY: as above.
        unsafe { f(a.as_ptr()) }
    }

    /// How many illegal uses the double saw since the last reset.
    pub fn violations(&self) -> i64 {
        let f: unsafe extern "C" fn() -> i64 = self.sym(b"acl_test_double_violations\0");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    /// The call log since the last reset: one line per call (`name -> code`), with
    /// `VIOLATION: ...` lines where illegal use happened.
    pub fn log(&self) -> String {
        let f: unsafe extern "C" fn() -> *const c_char = self.sym(b"acl_test_double_log\0");
        // SAFETY: the double returns a NUL-terminated string valid until its next call.
        unsafe {
            let p = f();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// The called function names in order (the log without codes and violations).
    pub fn call_names(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| !l.starts_with("VIOLATION"))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("no NUL left")
}

#[cfg(test)]
mod tests {
    /// SOURCES names every C source of the double in `testdouble/` (the Python tests compile
    /// the `acl_*.c` files found there), the self-test aside.
    #[test]
    fn sources_are_the_c_files_of_testdouble() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdouble");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("acl_") && n.ends_with(".c"))
            .collect();
        found.sort();
        let mut listed: Vec<String> = super::SOURCES.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(listed, found);
    }
}
