//! `ge.onnx` glue: loading ONNX models through ge-onnx.

use crate::errors::onnx_to_py;
use crate::graph::PyGraph;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn options(unsupported: &str) -> PyResult<ge_onnx::Options> {
    let mode = match unsupported {
        "error" => ge_onnx::UnsupportedMode::Error,
        "opaque" => ge_onnx::UnsupportedMode::Opaque,
        other => {
            return Err(PyValueError::new_err(format!(
                "unsupported must be \"error\" or \"opaque\", got {other:?}"
            )))
        }
    };
    Ok(ge_onnx::Options {
        unsupported: mode,
        ..Default::default()
    })
}

/// Loads an ONNX model from a path (external data read from its directory) or from bytes.
#[pyfunction]
#[pyo3(signature = (src, unsupported = "error"))]
pub fn _onnx_load(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    unsupported: &str,
) -> PyResult<Py<PyGraph>> {
    let opts = options(unsupported)?;
    let g = if let Ok(b) = src.downcast::<PyBytes>() {
        let bytes = b.as_bytes().to_vec();
        py.allow_threads(|| ge_onnx::load_bytes(&bytes, &opts))
    } else if let Ok(p) = src.extract::<std::path::PathBuf>() {
        py.allow_threads(|| ge_onnx::load_file(&p, &opts))
    } else {
        return Err(PyTypeError::new_err(format!(
            "expected a path or bytes, got {}",
            src.get_type().name()?
        )));
    };
    PyGraph::from_graph(py, g.map_err(onnx_to_py)?)
}

/// The op types the built-in translators handle (`OpType` or `domain::OpType`).
#[pyfunction]
pub fn _onnx_translator_keys() -> Vec<String> {
    ge_onnx::ops::builtin().keys()
}
