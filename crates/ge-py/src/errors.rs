//! The `ge.GeError` tree and the one mapping from the crates' errors to Python exceptions.
//!
//! Every error of es-core, ge-runtime, ge-onnx and pass-bridge reaches Python through
//! [`Error`]: a `From` impl per crate, and one `From<Error> for PyErr` that picks the exception
//! class (GE's built-in `ValueError`/`TypeError`/`RuntimeError` where its API specifies one).
//! `result.py()` ([`IntoPyResult`]) converts any of those results.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::{create_exception, import_exception};

// The base of every ge-rs error is GE's `ge.error.GeError` (a RuntimeError with `error_message`,
// `api_name` and `context`), defined in Python (python/ge/error.py), so that `except
// ge.error.GeError` catches them all. The classes below are created under `ge`, where users
// import them from (`ge.GraphBuildError`): their `__module__`, `repr` and tracebacks say `ge`.
import_exception!(ge.error, GeError);
create_exception!(
    ge,
    GraphBuildError,
    GeError,
    "A graph cannot be built as asked."
);
create_exception!(
    ge,
    ShapeInferenceError,
    GeError,
    "Shape or dtype inference failed."
);
create_exception!(
    ge,
    CompatibilityError,
    GeError,
    "Operator-library versions do not fit."
);
create_exception!(ge, PassError, GeError, "A graph pass failed.");
create_exception!(
    ge,
    TranslationError,
    GeError,
    "A model could not be translated."
);
create_exception!(ge, ExecutionError, GeError, "A graph failed to run.");
create_exception!(
    ge,
    DeviceError,
    GeError,
    "A device or its runtime is unavailable."
);
create_exception!(
    ge,
    ResourceError,
    GeError,
    "Not enough memory: a plan over the memory limit (ge.memoryLimit), or an allocation refused."
);
create_exception!(
    ge,
    InternalError,
    GeError,
    "A bug in ge-rs (a Rust panic, caught at the Python boundary): please report it."
);

/// An error of one of the crates under ge-py, on its way to Python.
#[derive(Debug)]
pub enum Error {
    Core(es_core::Error),
    Runtime(ge_runtime::Error),
    Onnx(ge_onnx::Error),
    Pass(pass_bridge::PassError),
}

/// `From<crate error> for Error`, one per variant.
macro_rules! from_crate_errors {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::$variant(e)
            }
        })*
    };
}

from_crate_errors!(
    Core(es_core::Error),
    Runtime(ge_runtime::Error),
    Onnx(ge_onnx::Error),
    Pass(pass_bridge::PassError),
);

/// The one mapping to the exception tree.
impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Core(e) => {
                use es_core::Error::*;
                match e {
                    GraphBuild(m) => GraphBuildError::new_err(m),
                    ShapeInference(m) => ShapeInferenceError::new_err(m),
                    Compatibility(m) => CompatibilityError::new_err(m),
                    Serialization(m) => GeError::new_err(m),
                    Value(m) => PyValueError::new_err(m),
                    Type(m) => PyTypeError::new_err(m),
                    State(m) => PyRuntimeError::new_err(m),
                    e @ NotSupported(_) => GeError::new_err(e.to_string()),
                }
            }
            Error::Runtime(e) => {
                use ge_runtime::Error::*;
                match e {
                    Unsupported(_) => GeError::new_err(e.to_string()),
                    Execution { .. } => ExecutionError::new_err(e.to_string()),
                    Input(m) | Option(m) | Graph(m) => PyValueError::new_err(m),
                    Compile(m) => GeError::new_err(m),
                    ShapeInference(m) => ShapeInferenceError::new_err(m),
                    Device(m) => DeviceError::new_err(m),
                    Resource(m) => ResourceError::new_err(m),
                }
            }
            // Translation problems (and files that cannot be read or written) are
            // `TranslationError`; IR errors outside a node keep their own class.
            Error::Onnx(ge_onnx::Error::Core(c)) => Error::Core(c).into(),
            Error::Onnx(e) => TranslationError::new_err(e.to_string()),
            // A bad registration or request is GE's ValueError; a failing pass is `PassError`.
            Error::Pass(e @ pass_bridge::PassError::Registry(_)) => {
                PyValueError::new_err(e.to_string())
            }
            Error::Pass(e) => PassError::new_err(e.to_string()),
        }
    }
}

/// `?`-friendly conversion of any crate's result.
pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}

impl<T, E: Into<Error>> IntoPyResult<T> for Result<T, E> {
    fn py(self) -> PyResult<T> {
        self.map_err(|e| PyErr::from(e.into()))
    }
}
