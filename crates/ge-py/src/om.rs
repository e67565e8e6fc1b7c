//! `ge.offline_compile` glue: an offline model (ge-runtime's `.om` container) built from
//! graphs, or read from a file's bytes; `SessionCore.add_compiled_graph` runs one of its graphs.

use crate::convert::downcast_arg;
use crate::errors::IntoPyResult;
use crate::graph::Graph;
use crate::guard::guarded;
use es_core::DataType;
use ge_runtime::om::{self, OmModel};
use ge_runtime::plan::InputSignature;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::BTreeMap;

/// One graph to build: the graph, its build options, its inputs' (dtype value, dims).
type GraphSpec<'py> = (
    Bound<'py, PyAny>,
    BTreeMap<String, String>,
    Vec<(i64, Vec<usize>)>,
);

/// An offline model: its parsed graphs and its file's bytes.
#[pyclass(module = "ge._native", frozen)]
pub struct OmModelCore {
    pub model: OmModel,
    bytes: Vec<u8>,
}

impl OmModelCore {
    pub fn graph_at(&self, index: usize) -> PyResult<&om::OmGraph> {
        self.model.graphs.get(index).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "the model has {} graph(s), no graph {index}",
                self.model.graphs.len()
            ))
        })
    }
}

guarded! {
    #[pymethods]
    impl OmModelCore {
        /// Compiles each graph for its inputs (the registered passes run at their stages) and
        /// checks that the CPU backend can plan it.
        #[staticmethod]
        fn build(
            py: Python<'_>,
            graphs: Vec<GraphSpec<'_>>,
            soc_version: String,
            options: BTreeMap<String, String>,
        ) -> PyResult<Self> {
            let mut compiled = Vec::with_capacity(graphs.len());
            for (g, opts, inputs) in graphs {
                let g = downcast_arg::<Graph>(&g, "graph must be a Graph")?.get();
                let graph = g.src.read(&g.path, |gr| Ok(gr.clone()))?;
                let sig = inputs
                    .into_iter()
                    .map(|(dt, dims)| {
                        Ok(InputSignature {
                            dtype: DataType::from_value(dt)?,
                            dims,
                        })
                    })
                    .collect::<es_core::Result<Vec<_>>>()
                    .py()?;
                let passes = crate::passes::registry_snapshot();
                compiled.push(
                    py.allow_threads(|| om::compile_graph(&graph, &sig, opts, Some(&passes)))
                        .py()?,
                );
            }
            let model = OmModel {
                soc_version,
                options,
                graphs: compiled,
            };
            let bytes = py.allow_threads(|| model.to_bytes()).py()?;
            Ok(OmModelCore { model, bytes })
        }

        /// Parses a model file's bytes.
        #[staticmethod]
        fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
            let bytes = data.to_vec();
            let model = py.allow_threads(|| OmModel::from_bytes(&bytes)).py()?;
            Ok(OmModelCore { model, bytes })
        }

        /// Reads and parses a model file (`ModelFileError`'s text comes from here, without the
        /// path: the caller names the file).
        #[staticmethod]
        fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
            let (model, bytes) = py
                .allow_threads(|| {
                    let bytes = std::fs::read(&path)
                        .map_err(|e| es_core::Error::serial(format!("cannot read the file: {e}")))?;
                    OmModel::from_bytes(&bytes).map(|m| (m, bytes))
                })
                .py()?;
            Ok(OmModelCore { model, bytes })
        }

        /// The file's bytes.
        fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
            PyBytes::new(py, &self.bytes)
        }

        fn __len__(&self) -> usize {
            self.bytes.len()
        }

        /// The manifest, as the JSON text the file holds.
        fn manifest(&self) -> String {
            // The bytes hold the header (magic, version, manifest length), then the manifest.
            let written = self.bytes.get(12..20).and_then(|n| {
                let mut len = [0u8; 8];
                len.copy_from_slice(n);
                let end = 20usize.checked_add(usize::try_from(u64::from_le_bytes(len)).ok()?)?;
                std::str::from_utf8(self.bytes.get(20..end)?).ok()
            });
            match written {
                Some(m) => m.to_string(),
                None => self.model.manifest().to_string(),
            }
        }

        fn graph_count(&self) -> usize {
            self.model.graphs.len()
        }

        /// A copy of compiled graph `index`.
        fn graph(&self, py: Python<'_>, index: usize) -> PyResult<Py<Graph>> {
            Graph::from_graph(py, self.graph_at(index)?.graph.clone())
        }
    }
}
