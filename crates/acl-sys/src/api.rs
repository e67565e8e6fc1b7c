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

/// Declares a table of functions, each field named as CANN names the function and typed from
/// [`ffi`], and its `resolve`, which looks them up in a loaded library: a missing function is
/// an error, except those marked `?` (an `Option` field, `None` when missing).
macro_rules! fn_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($f:ident,)*
            $($(#[$ometa:meta])* ?$o:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        pub struct $name {
            $(pub $f: ffi::$f,)*
            $($(#[$ometa])* pub $o: Option<ffi::$o>,)*
        }

        impl $name {
            fn resolve(lib: &Library, path: &Path) -> Result<Self> {
                Ok($name {
                    $($f: required(lib, path, stringify!($f))?,)*
                    $($o: optional(lib, stringify!($o)),)*
                })
            }
        }
    };
}

fn_table! {
    /// The runtime functions every supported CANN has.
    pub struct Runtime {
        aclInit,
        aclFinalize,
        aclrtSetDevice,
        aclrtResetDevice,
        aclrtGetDeviceCount,
        aclrtCreateContext,
        aclrtDestroyContext,
        aclrtSetCurrentContext,
        aclrtCreateStream,
        aclrtDestroyStream,
        aclrtSynchronizeStream,
        aclrtMalloc,
        aclrtFree,
        aclrtMallocHost,
        aclrtFreeHost,
        aclrtMemcpy,
        aclrtMemcpyAsync,
        aclrtMemset,
        aclGetRecentErrMsg,
    }
}

fn_table! {
    /// The graph-capture functions (CANN 8.2 and later; absent from older versions).
    pub struct Capture {
        aclmdlRICaptureBegin,
        aclmdlRICaptureGetInfo,
        aclmdlRICaptureEnd,
        aclmdlRICaptureThreadExchangeMode,
        aclmdlRIExecuteAsync,
        aclmdlRIDestroy,
    }
}

fn_table! {
    /// The nnopbase functions (tensors, scalars, int arrays).
    pub struct Nnopbase {
        aclCreateTensor,
        aclDestroyTensor,
        aclCreateScalar,
        aclDestroyScalar,
        aclCreateIntArray,
        aclDestroyIntArray,
        /// Optional: frees executors that are never launched (without it they leak).
        ?aclDestroyAclOpExecutor,
    }
}

/// One aclnn operator: its first phase (`aclnnXGetWorkspaceSize`) and its launch (`aclnnX`).
#[derive(Clone, Copy)]
pub struct OpFns<G> {
    pub get_workspace_size: G,
    pub launch: ffi::aclnnLaunch,
}

/// Declares [`Ops`], a field per operator (`field: aclnnName as FirstPhaseType`), and its
/// `resolve`.
macro_rules! op_table {
    ($($field:ident: $symbol:ident as $first_phase:ident,)*) => {
        /// The aclnn operators this crate binds; `None` where `libopapi.so` lacks the pair.
        #[derive(Default)]
        pub struct Ops {
            $(pub $field: Option<OpFns<ffi::$first_phase>>,)*
        }

        impl Ops {
            fn resolve(lib: &Library) -> Self {
                Ops {
                    $($field: op(lib, stringify!($symbol)),)*
                }
            }
        }
    };
}

op_table! {
    add: aclnnAdd as aclnnBinaryAlphaGetWorkspaceSize,
    sub: aclnnSub as aclnnBinaryAlphaGetWorkspaceSize,
    mul: aclnnMul as aclnnBinaryGetWorkspaceSize,
    div: aclnnDiv as aclnnBinaryGetWorkspaceSize,
    matmul: aclnnMatmul as aclnnMatmulGetWorkspaceSize,
    relu: aclnnRelu as aclnnUnaryGetWorkspaceSize,
    exp: aclnnExp as aclnnUnaryGetWorkspaceSize,
    sigmoid: aclnnSigmoid as aclnnUnaryGetWorkspaceSize,
    tanh: aclnnTanh as aclnnUnaryGetWorkspaceSize,
    sqrt: aclnnSqrt as aclnnUnaryGetWorkspaceSize,
    neg: aclnnNeg as aclnnUnaryGetWorkspaceSize,
    abs: aclnnAbs as aclnnUnaryGetWorkspaceSize,
    softmax: aclnnSoftmax as aclnnSoftmaxGetWorkspaceSize,
    cast: aclnnCast as aclnnCastGetWorkspaceSize,
    permute: aclnnPermute as aclnnPermuteGetWorkspaceSize,
    reduce_sum: aclnnReduceSum as aclnnReduceDtypeGetWorkspaceSize,
    mean: aclnnMean as aclnnReduceDtypeGetWorkspaceSize,
    amax: aclnnAmax as aclnnReduceGetWorkspaceSize,
    amin: aclnnAmin as aclnnReduceGetWorkspaceSize,
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
        let runtime = Runtime::resolve(&rt, &rt_path)?;
        let capture = Capture::resolve(&rt, &rt_path).ok();
        if capture.is_none() {
            log::info!(
                "{}: no aclmdlRI* capture functions (CANN older than 8.2?): graph capture is off",
                rt_path.display()
            );
        }
        let nnopbase = Nnopbase::resolve(&nn, &nn_path)?;
        let table = Ops::resolve(&ops);
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
