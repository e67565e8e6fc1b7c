//! `ge.ops`: operators registered at run time (JSON prototypes, Python inference rules).

use crate::attrs::attr_to_py;
use crate::convert::{dtype_from_py, shape_from_py};
use crate::errors::IntoPyResult;
use crate::guard::guarded;
use es_core::infer::{register_rule, InferCtx};
use es_core::ops::{global_registry, register_global, OpProto};
use es_core::{Shape, TensorDesc};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::Arc;

guarded! {
    /// Registers prototypes from JSON: one operator object, a list of them, or a library document
    /// (`{"operators": [...]}`). Returns the names registered.
    #[pyfunction]
    pub fn _register_ops_json(text: &str) -> PyResult<Vec<String>> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| PyValueError::new_err(format!("operator JSON is not valid: {e}")))?;
        let items: Vec<serde_json::Value> = match &v {
            serde_json::Value::Array(a) => a.clone(),
            serde_json::Value::Object(o) if o.contains_key("operators") => o
                .get("operators")
                .and_then(|x| x.as_array())
                .cloned()
                .ok_or_else(|| PyValueError::new_err("\"operators\" must be a list"))?,
            serde_json::Value::Object(_) => vec![v.clone()],
            _ => {
                return Err(PyTypeError::new_err(
                    "operator JSON must be an object or a list",
                ))
            }
        };
        let protos = items
            .iter()
            .map(OpProto::from_json)
            .collect::<es_core::Result<Vec<_>>>()
            .py()?;
        register(protos)
    }
}

pub fn register(protos: Vec<OpProto>) -> PyResult<Vec<String>> {
    let names = protos.iter().map(|p| p.name.clone()).collect();
    register_global(protos).py()?;
    Ok(names)
}

guarded! {
    /// The JSON object of one operator, or None.
    #[pyfunction]
    pub fn _op_json(name: &str) -> Option<String> {
        global_registry().get(name).map(|p| p.to_json().to_string())
    }
}

fn desc_tuple<'py>(py: Python<'py>, d: &TensorDesc) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            crate::convert::dtype_to_py(py, d.dtype)?.into_bound(py),
            PyList::new(py, d.shape.dims())?.into_any(),
        ],
    )
}

guarded! {
    /// Registers a Python shape/dtype inference function for an operator type:
    /// `fn(inputs, attrs) -> [(dtype, shape), ...]`, where `inputs` lists `(dtype, shape)` per input
    /// instance (None for an absent optional input) and `attrs` maps names to values.
    #[pyfunction]
    pub fn _register_infer(op_type: &str, func: PyObject) -> PyResult<()> {
        Python::with_gil(|py| {
            if !func.bind(py).is_callable() {
                return Err(PyTypeError::new_err("the inference rule must be callable"));
            }
            Ok(())
        })?;
        let func = Arc::new(func);
        let op = op_type.to_string();
        register_rule(
            op_type,
            Arc::new(move |ctx: &InferCtx| -> es_core::Result<Vec<TensorDesc>> {
                Python::with_gil(|py| -> PyResult<Vec<TensorDesc>> {
                    let inputs = PyList::empty(py);
                    for d in ctx.inputs {
                        match d {
                            Some(d) => inputs.append(desc_tuple(py, d)?)?,
                            None => inputs.append(py.None())?,
                        }
                    }
                    let attrs = PyDict::new(py);
                    for (k, v) in ctx.attrs {
                        attrs.set_item(k, attr_to_py(py, v)?)?;
                    }
                    let out = func.call1(py, (inputs, attrs))?;
                    let out = out.bind(py);
                    let mut descs = Vec::new();
                    for item in out.try_iter()? {
                        let item = item?;
                        let (dt, shape): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                            item.extract().map_err(|_| {
                                PyTypeError::new_err(
                                    "an inference rule returns a list of (dtype, shape) pairs",
                                )
                            })?;
                        descs.push(TensorDesc::new(
                            dtype_from_py(&dt)?,
                            Shape::new(shape_from_py(&shape)?),
                        ));
                    }
                    Ok(descs)
                })
                .map_err(|e| {
                    Python::with_gil(|py| {
                        es_core::Error::ShapeInference(format!(
                            "{op} '{}': the Python inference rule failed: {}",
                            ctx.node_name,
                            e.value(py)
                        ))
                    })
                })
            }),
        );
        Ok(())
    }
}

guarded! {
    /// The built-in library versions, oldest first.
    #[pyfunction]
    pub fn _library_versions() -> Vec<String> {
        es_core::ops::builtin_versions()
            .into_iter()
            .map(str::to_string)
            .collect()
    }
}

guarded! {
    /// Adapts a graph in place to another built-in library version; returns what changed.
    #[pyfunction]
    pub fn _adapt(graph: &Bound<'_, crate::graph::Graph>, target: &str) -> PyResult<Vec<String>> {
        let g = graph.get();
        g.src.write(&g.path, "adapt the graph", |graph| {
            let from = es_core::ops::builtin_library(&graph.ops_version).py()?;
            let to = es_core::ops::builtin_library(target).py()?;
            let report = es_core::compat::adapt(graph, &from, &to).py()?;
            Ok(report.changes.iter().map(|c| c.to_string()).collect())
        })
    }
}

guarded! {
    /// Adapts a graph in place from one operator library to another, both given as library JSON
    /// (`{"version": ..., "operators": [...]}`); returns what changed.
    #[pyfunction]
    pub fn _adapt_between(
        graph: &Bound<'_, crate::graph::Graph>,
        from_json: &str,
        to_json: &str,
    ) -> PyResult<Vec<String>> {
        let from = es_core::OpRegistry::from_json_str(from_json).py()?;
        let to = es_core::OpRegistry::from_json_str(to_json).py()?;
        let g = graph.get();
        g.src.write(&g.path, "adapt the graph", |graph| {
            let report = es_core::compat::adapt(graph, &from, &to).py()?;
            Ok(report.changes.iter().map(|c| c.to_string()).collect())
        })
    }
}
