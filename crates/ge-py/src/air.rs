//! Glue for ONNX export (ge-onnx's `export` module); `.air` files are read and written by
//! `Graph.save_to_air`/`load_from_air` in graph.rs.

use crate::errors::IntoPyResult;
use crate::graph::Graph;
use crate::guard::guarded;
use es_core::Graph as CoreGraph;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Runs `f` on the graph a `Graph` object refers to.
pub fn with_graph<R>(
    g: &Bound<'_, Graph>,
    f: impl FnOnce(&CoreGraph) -> ge_onnx::Result<R>,
) -> PyResult<R> {
    let g = g.get();
    g.src.read(&g.path, |graph| f(graph).py())
}

guarded! {
    /// Writes a graph as an ONNX model that onnxruntime runs (`ge.onnx.save`).
    #[pyfunction]
    pub fn _onnx_save(graph: &Bound<'_, Graph>, path: PathBuf) -> PyResult<()> {
        let bytes = with_graph(graph, ge_onnx::export::to_onnx_bytes)?;
        graph
            .py()
            .allow_threads(|| std::fs::write(&path, bytes))
            .map_err(|e| crate::errors::TranslationError::new_err(format!("{}: {e}", path.display())))
    }
}

guarded! {
    /// The graph as serialized ONNX (`ge.onnx.save` to bytes).
    #[pyfunction]
    pub fn _onnx_export_bytes<'py>(
        graph: &Bound<'py, Graph>,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let bytes = with_graph(graph, ge_onnx::export::to_onnx_bytes)?;
        Ok(pyo3::types::PyBytes::new(graph.py(), &bytes))
    }
}

guarded! {
    /// The GE op types `ge.onnx.save` can export.
    #[pyfunction]
    pub fn _onnx_exporter_keys() -> Vec<String> {
        ge_onnx::export::exporters()
            .keys()
            .map(|k| k.to_string())
            .collect()
    }
}
