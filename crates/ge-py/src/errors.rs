//! The `ge.GeError` tree and the one mapping from es-core errors to Python exceptions.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::{create_exception, import_exception};

// The base of every ge-rs error is GE's `ge.error.GeError` (a RuntimeError with `error_message`,
// `api_name` and `context`), defined in Python (python/ge/error.py), so that `except
// ge.error.GeError` catches them all.
import_exception!(ge.error, GeError);
create_exception!(
    _native,
    GraphBuildError,
    GeError,
    "A graph cannot be built as asked."
);
create_exception!(
    _native,
    ShapeInferenceError,
    GeError,
    "Shape or dtype inference failed."
);
create_exception!(
    _native,
    CompatibilityError,
    GeError,
    "Operator-library versions do not fit."
);
create_exception!(_native, PassError, GeError, "A graph pass failed.");
create_exception!(
    _native,
    TranslationError,
    GeError,
    "A model could not be translated."
);
create_exception!(_native, ExecutionError, GeError, "A graph failed to run.");
create_exception!(
    _native,
    DeviceError,
    GeError,
    "A device or its runtime is unavailable."
);

/// es-core error → Python exception.
pub fn to_py(e: es_core::Error) -> PyErr {
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

/// `?`-friendly conversion.
pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for es_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("GeError", py.get_type::<GeError>())?;
    m.add("GraphBuildError", py.get_type::<GraphBuildError>())?;
    m.add("ShapeInferenceError", py.get_type::<ShapeInferenceError>())?;
    m.add("CompatibilityError", py.get_type::<CompatibilityError>())?;
    m.add("PassError", py.get_type::<PassError>())?;
    m.add("TranslationError", py.get_type::<TranslationError>())?;
    m.add("ExecutionError", py.get_type::<ExecutionError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    Ok(())
}

/// ge-onnx error → Python exception: translation problems are `TranslationError`, IR errors
/// outside a node keep their own class.
pub fn onnx_to_py(e: ge_onnx::Error) -> PyErr {
    match e {
        ge_onnx::Error::Core(c) => to_py(c),
        e @ ge_onnx::Error::Io(_) => TranslationError::new_err(e.to_string()),
        e => TranslationError::new_err(e.to_string()),
    }
}
