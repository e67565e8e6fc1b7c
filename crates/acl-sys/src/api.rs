//! Finding and loading the ACL libraries, and the table of resolved functions.

use crate::error::{LoadError, Result};
use crate::ffi;
use libloading::Library;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The library holding the runtime (`aclrt*`, `aclmdlRI*`, `aclInit`).
pub const RUNTIME_LIBRARY: &str = "libascendcl.so";
/// The library holding `aclCreateTensor` and the other nnopbase objects.
pub const NNOPBASE_LIBRARY: &str = "libnnopbase.so";
/// The library holding the aclnn operators.
pub const OPAPI_LIBRARY: &str = "libopapi.so";
/// The default CANN install, searched last.
pub const DEFAULT_TOOLKIT: &str = "/usr/local/Ascend/ascend-toolkit/latest";

/// The directories searched for the libraries, in order: `$ASCEND_HOME_PATH/lib64`,
/// `$ASCEND_TOOLKIT_HOME/lib64`, then `/usr/local/Ascend/ascend-toolkit/latest/lib64`.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for var in ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"] {
        if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            v.push(PathBuf::from(p).join("lib64"));
        }
    }
    v.push(Path::new(DEFAULT_TOOLKIT).join("lib64"));
    v
}

/// The runtime functions every supported CANN has.
#[allow(non_snake_case)]
pub struct Runtime {
    pub aclInit: ffi::aclInit,
    pub aclFinalize: ffi::aclFinalize,
    pub aclrtSetDevice: ffi::aclrtSetDevice,
    pub aclrtResetDevice: ffi::aclrtResetDevice,
    pub aclrtGetDeviceCount: ffi::aclrtGetDeviceCount,
    pub aclrtCreateContext: ffi::aclrtCreateContext,
    pub aclrtDestroyContext: ffi::aclrtDestroyContext,
    pub aclrtSetCurrentContext: ffi::aclrtSetCurrentContext,
    pub aclrtCreateStream: ffi::aclrtCreateStream,
    pub aclrtDestroyStream: ffi::aclrtDestroyStream,
    pub aclrtSynchronizeStream: ffi::aclrtSynchronizeStream,
    pub aclrtMalloc: ffi::aclrtMalloc,
    pub aclrtFree: ffi::aclrtFree,
    pub aclrtMallocHost: ffi::aclrtMallocHost,
    pub aclrtFreeHost: ffi::aclrtFreeHost,
    pub aclrtMemcpy: ffi::aclrtMemcpy,
    pub aclrtMemcpyAsync: ffi::aclrtMemcpyAsync,
    pub aclrtMemset: ffi::aclrtMemset,
    pub aclGetRecentErrMsg: ffi::aclGetRecentErrMsg,
}

/// The graph-capture functions (CANN 8.2 and later; absent from older versions).
#[allow(non_snake_case)]
pub struct Capture {
    pub aclmdlRICaptureBegin: ffi::aclmdlRICaptureBegin,
    pub aclmdlRICaptureGetInfo: ffi::aclmdlRICaptureGetInfo,
    pub aclmdlRICaptureEnd: ffi::aclmdlRICaptureEnd,
    pub aclmdlRICaptureThreadExchangeMode: ffi::aclmdlRICaptureThreadExchangeMode,
    pub aclmdlRIExecuteAsync: ffi::aclmdlRIExecuteAsync,
    pub aclmdlRIDestroy: ffi::aclmdlRIDestroy,
}

/// The nnopbase functions (tensors, scalars, int arrays).
#[allow(non_snake_case)]
pub struct Nnopbase {
    pub aclCreateTensor: ffi::aclCreateTensor,
    pub aclDestroyTensor: ffi::aclDestroyTensor,
    pub aclCreateScalar: ffi::aclCreateScalar,
    pub aclDestroyScalar: ffi::aclDestroyScalar,
    pub aclCreateIntArray: ffi::aclCreateIntArray,
    pub aclDestroyIntArray: ffi::aclDestroyIntArray,
    /// Optional: frees executors that are never launched (without it they leak).
    pub aclDestroyAclOpExecutor: Option<ffi::aclDestroyAclOpExecutor>,
}

/// One aclnn operator: its first phase (`aclnnXGetWorkspaceSize`) and its launch (`aclnnX`).
#[derive(Clone, Copy)]
pub struct OpFns<G> {
    pub get_workspace_size: G,
    pub launch: ffi::aclnnLaunch,
}

/// The aclnn operators this crate binds; `None` where `libopapi.so` lacks the pair.
#[derive(Default)]
pub struct Ops {
    pub add: Option<OpFns<ffi::aclnnBinaryAlphaGetWorkspaceSize>>,
    pub sub: Option<OpFns<ffi::aclnnBinaryAlphaGetWorkspaceSize>>,
    pub mul: Option<OpFns<ffi::aclnnBinaryGetWorkspaceSize>>,
    pub div: Option<OpFns<ffi::aclnnBinaryGetWorkspaceSize>>,
    pub matmul: Option<OpFns<ffi::aclnnMatmulGetWorkspaceSize>>,
    pub relu: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub exp: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub sigmoid: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub tanh: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub sqrt: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub neg: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub abs: Option<OpFns<ffi::aclnnUnaryGetWorkspaceSize>>,
    pub softmax: Option<OpFns<ffi::aclnnSoftmaxGetWorkspaceSize>>,
    pub cast: Option<OpFns<ffi::aclnnCastGetWorkspaceSize>>,
    pub permute: Option<OpFns<ffi::aclnnPermuteGetWorkspaceSize>>,
    pub reduce_sum: Option<OpFns<ffi::aclnnReduceDtypeGetWorkspaceSize>>,
    pub mean: Option<OpFns<ffi::aclnnReduceDtypeGetWorkspaceSize>>,
    pub amax: Option<OpFns<ffi::aclnnReduceGetWorkspaceSize>>,
    pub amin: Option<OpFns<ffi::aclnnReduceGetWorkspaceSize>>,
}

/// The loaded ACL libraries and their resolved functions. The function pointers stay valid
/// as long as the `Api` lives (it keeps the libraries loaded).
pub struct Api {
    pub runtime: Runtime,
    /// `None` on a CANN without graph capture: eager execution still works.
    pub capture: Option<Capture>,
    pub nnopbase: Nnopbase,
    pub ops: Ops,
    dir: PathBuf,
    _libs: Vec<Library>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("dir", &self.dir)
            .field("capture", &self.capture.is_some())
            .finish()
    }
}

fn open(path: &Path) -> Result<Library> {
    // SAFETY: loading a shared library runs its initialisers; the ACL libraries are trusted
    // code the user installed (and chose through the search path).
    unsafe { Library::new(path) }.map_err(|e| LoadError::Load {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Resolves `name` in `lib` as a `T` (a function pointer type from [`ffi`]).
fn optional<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    // SAFETY: `T` is the function pointer type CANN's headers declare for `name`; the pointer
    // is only used while the library stays loaded (it is kept in the `Api`).
    unsafe { lib.get::<T>(&bytes).ok().map(|s| *s) }
}

fn required<T: Copy>(lib: &Library, path: &Path, name: &str) -> Result<T> {
    optional(lib, name).ok_or_else(|| LoadError::MissingSymbol {
        library: path.to_path_buf(),
        symbol: name.to_string(),
    })
}

fn op<G: Copy>(lib: &Library, name: &str) -> Option<OpFns<G>> {
    Some(OpFns {
        get_workspace_size: optional(lib, &format!("{name}GetWorkspaceSize"))?,
        launch: optional(lib, name)?,
    })
}

impl Api {
    /// Loads the libraries from the first of `dirs` that holds `libascendcl.so`.
    pub fn load_from(dirs: &[PathBuf]) -> Result<Api> {
        let dir = dirs
            .iter()
            .find(|d| d.join(RUNTIME_LIBRARY).exists())
            .ok_or_else(|| LoadError::NotFound {
                searched: dirs.to_vec(),
            })?;
        let rt_path = dir.join(RUNTIME_LIBRARY);
        let nn_path = dir.join(NNOPBASE_LIBRARY);
        let op_path = dir.join(OPAPI_LIBRARY);
        let rt = open(&rt_path)?;
        let nn = open(&nn_path)?;
        let ops = open(&op_path)?;
        let p = &rt_path;
        let runtime = Runtime {
            aclInit: required(&rt, p, "aclInit")?,
            aclFinalize: required(&rt, p, "aclFinalize")?,
            aclrtSetDevice: required(&rt, p, "aclrtSetDevice")?,
            aclrtResetDevice: required(&rt, p, "aclrtResetDevice")?,
            aclrtGetDeviceCount: required(&rt, p, "aclrtGetDeviceCount")?,
            aclrtCreateContext: required(&rt, p, "aclrtCreateContext")?,
            aclrtDestroyContext: required(&rt, p, "aclrtDestroyContext")?,
            aclrtSetCurrentContext: required(&rt, p, "aclrtSetCurrentContext")?,
            aclrtCreateStream: required(&rt, p, "aclrtCreateStream")?,
            aclrtDestroyStream: required(&rt, p, "aclrtDestroyStream")?,
            aclrtSynchronizeStream: required(&rt, p, "aclrtSynchronizeStream")?,
            aclrtMalloc: required(&rt, p, "aclrtMalloc")?,
            aclrtFree: required(&rt, p, "aclrtFree")?,
            aclrtMallocHost: required(&rt, p, "aclrtMallocHost")?,
            aclrtFreeHost: required(&rt, p, "aclrtFreeHost")?,
            aclrtMemcpy: required(&rt, p, "aclrtMemcpy")?,
            aclrtMemcpyAsync: required(&rt, p, "aclrtMemcpyAsync")?,
            aclrtMemset: required(&rt, p, "aclrtMemset")?,
            aclGetRecentErrMsg: required(&rt, p, "aclGetRecentErrMsg")?,
        };
        let capture = (|| {
            Some(Capture {
                aclmdlRICaptureBegin: optional(&rt, "aclmdlRICaptureBegin")?,
                aclmdlRICaptureGetInfo: optional(&rt, "aclmdlRICaptureGetInfo")?,
                aclmdlRICaptureEnd: optional(&rt, "aclmdlRICaptureEnd")?,
                aclmdlRICaptureThreadExchangeMode: optional(
                    &rt,
                    "aclmdlRICaptureThreadExchangeMode",
                )?,
                aclmdlRIExecuteAsync: optional(&rt, "aclmdlRIExecuteAsync")?,
                aclmdlRIDestroy: optional(&rt, "aclmdlRIDestroy")?,
            })
        })();
        if capture.is_none() {
            log::info!(
                "{}: no aclmdlRI* capture functions (CANN older than 8.2?): graph capture is off",
                rt_path.display()
            );
        }
        let p = &nn_path;
        let nnopbase = Nnopbase {
            aclCreateTensor: required(&nn, p, "aclCreateTensor")?,
            aclDestroyTensor: required(&nn, p, "aclDestroyTensor")?,
            aclCreateScalar: required(&nn, p, "aclCreateScalar")?,
            aclDestroyScalar: required(&nn, p, "aclDestroyScalar")?,
            aclCreateIntArray: required(&nn, p, "aclCreateIntArray")?,
            aclDestroyIntArray: required(&nn, p, "aclDestroyIntArray")?,
            aclDestroyAclOpExecutor: optional(&nn, "aclDestroyAclOpExecutor"),
        };
        let table = Ops {
            add: op(&ops, "aclnnAdd"),
            sub: op(&ops, "aclnnSub"),
            mul: op(&ops, "aclnnMul"),
            div: op(&ops, "aclnnDiv"),
            matmul: op(&ops, "aclnnMatmul"),
            relu: op(&ops, "aclnnRelu"),
            exp: op(&ops, "aclnnExp"),
            sigmoid: op(&ops, "aclnnSigmoid"),
            tanh: op(&ops, "aclnnTanh"),
            sqrt: op(&ops, "aclnnSqrt"),
            neg: op(&ops, "aclnnNeg"),
            abs: op(&ops, "aclnnAbs"),
            softmax: op(&ops, "aclnnSoftmax"),
            cast: op(&ops, "aclnnCast"),
            permute: op(&ops, "aclnnPermute"),
            reduce_sum: op(&ops, "aclnnReduceSum"),
            mean: op(&ops, "aclnnMean"),
            amax: op(&ops, "aclnnAmax"),
            amin: op(&ops, "aclnnAmin"),
        };
        Ok(Api {
            runtime,
            capture,
            nnopbase,
            ops: table,
            dir: dir.clone(),
            _libs: vec![ops, nn, rt],
        })
    }

    /// Loads the libraries from [`search_dirs`].
    pub fn load() -> Result<Api> {
        Api::load_from(&search_dirs())
    }

    /// The process-wide `Api`, loaded on first success (a failure is not remembered: a later
    /// call searches again, so setting `ASCEND_HOME_PATH` and retrying works).
    pub fn global() -> Result<&'static Api> {
        static API: Mutex<Option<&'static Api>> = Mutex::new(None);
        let mut g = API.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = *g {
            return Ok(a);
        }
        let a: &'static Api = Box::leak(Box::new(Api::load()?));
        log::info!("ACL loaded from {}", a.dir.display());
        *g = Some(a);
        Ok(a)
    }

    /// The directory the libraries were loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether graph capture (`aclmdlRI*`) is available.
    pub fn has_capture(&self) -> bool {
        self.capture.is_some()
    }

    /// ACL's most recent error message on this thread (`aclGetRecentErrMsg`), or "".
    pub fn recent_error(&self) -> String {
        // SAFETY: declared `const char *aclGetRecentErrMsg()`: a NUL-terminated string owned
        // by the runtime, or NULL.
        unsafe {
            let p = (self.runtime.aclGetRecentErrMsg)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }
}
