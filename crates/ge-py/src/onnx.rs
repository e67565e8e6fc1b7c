//! `ge.onnx` glue: loading ONNX models through ge-onnx.

use crate::errors::IntoPyResult;
use crate::graph::Graph;
use crate::guard::guarded;
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

guarded! {
    /// Loads an ONNX model from a path (external data read from its directory) or from bytes.
    #[pyfunction]
    #[pyo3(signature = (src, unsupported = "error"))]
    pub fn _onnx_load(
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        unsupported: &str,
    ) -> PyResult<Py<Graph>> {
        let opts = options(unsupported)?;
        let reg = registry();
        let g = if let Ok(b) = src.downcast::<PyBytes>() {
            let bytes = b.as_bytes().to_vec();
            py.allow_threads(|| ge_onnx::load_bytes_with(&bytes, &reg, &opts))
        } else if let Ok(p) = src.extract::<std::path::PathBuf>() {
            py.allow_threads(|| ge_onnx::load_file_with(&p, &reg, &opts))
        } else {
            return Err(PyTypeError::new_err(format!(
                "expected a path or bytes, got {}",
                src.get_type().name()?
            )));
        };
        Graph::from_graph(py, g.py()?)
    }
}

guarded! {
    /// The op types the built-in translators handle (`OpType` or `domain::OpType`).
    #[pyfunction]
    pub fn _onnx_translator_keys() -> Vec<String> {
        registry().keys()
    }
}

// ---------------------------------------------------------------------------------------------
// Translators written in Python (`@ge.onnx.register_translator("domain::OpType")`).

use crate::builder::GraphBuilderBase;
use crate::builder::TensorHolder;
use ge_onnx::attrs::OnnxAttr;
use ge_onnx::{NodeCtx, OpTranslator, Registry};
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::{Arc, Mutex};

/// User translators by key, in registration order (a later one replaces an earlier one).
static USER_TRANSLATORS: Mutex<Vec<(String, Arc<dyn OpTranslator>)>> = Mutex::new(Vec::new());

fn user_translators() -> std::sync::MutexGuard<'static, Vec<(String, Arc<dyn OpTranslator>)>> {
    USER_TRANSLATORS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The built-in registry with the user translators over it.
fn registry() -> Registry {
    let mut r = ge_onnx::ops::builtin().clone();
    for (k, t) in user_translators().iter() {
        r.register(k, t.clone());
    }
    r
}

struct PyTranslator {
    key: String,
    func: PyObject,
}

fn attr_to_py(py: Python<'_>, v: OnnxAttr<'_>) -> PyResult<Option<PyObject>> {
    Ok(Some(match v {
        OnnxAttr::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        OnnxAttr::Int(x) => x.into_pyobject(py)?.into_any().unbind(),
        OnnxAttr::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        OnnxAttr::Floats(v) => PyList::new(py, v.iter().copied())?.into_any().unbind(),
        OnnxAttr::Ints(v) => PyList::new(py, v.iter().copied())?.into_any().unbind(),
        OnnxAttr::Strings(v) => PyList::new(py, v)?.into_any().unbind(),
        OnnxAttr::Tensor(t) => {
            let t = ge_onnx::types::tensor_from_proto(
                t,
                &ge_onnx::DataDir::default(),
                &ge_onnx::Limits::default(),
            )
            .py()?;
            crate::tensor::wrap_tensor(py, t)?
                .bind(py)
                .call_method0("numpy")?
                .unbind()
        }
        // Graphs and tensor lists are not offered to Python translators.
        OnnxAttr::Graph(_) | OnnxAttr::Graphs(_) | OnnxAttr::Tensors(_) => return Ok(None),
    }))
}

impl PyTranslator {
    fn call(
        &self,
        py: Python<'_>,
        ctx_fields: (&str, &str, &str, i64, usize),
        io_names: (&[String], &[String]),
        inputs: &[Option<es_core::OutPort>],
        attrs: Vec<(String, OnnxAttr<'_>)>,
        builder: &mut es_core::GraphBuilder,
    ) -> PyResult<Option<Vec<Option<es_core::OutPort>>>> {
        let (op_type, domain, name, opset, num_outputs) = ctx_fields;
        let gb = py
            .import("ge.es")?
            .getattr("GraphBuilder")?
            .call1((format!("onnx_{op_type}"),))?;
        let cell = gb.downcast::<GraphBuilderBase>()?.get().cell.clone();
        std::mem::swap(&mut cell.lock().b, builder);
        let result = (|| -> PyResult<Option<Vec<Option<es_core::OutPort>>>> {
            let owner: PyObject = gb.clone().unbind();
            let mut holders: Vec<PyObject> = Vec::with_capacity(inputs.len());
            for p in inputs {
                holders.push(match p {
                    Some(port) => Py::new(
                        py,
                        TensorHolder {
                            cell: cell.clone(),
                            owner: owner.clone_ref(py),
                            port: *port,
                        },
                    )?
                    .into_any(),
                    None => py.None(),
                });
            }
            let d = PyDict::new(py);
            for (k, v) in attrs {
                if let Some(v) = attr_to_py(py, v)? {
                    d.set_item(k, v)?;
                }
            }
            let ctx = py.import("ge.onnx")?.getattr("TranslatorContext")?.call1((
                op_type,
                domain,
                name,
                opset,
                PyList::new(py, holders)?,
                d,
                num_outputs,
                gb.clone(),
                PyTuple::new(py, io_names.0)?,
                PyTuple::new(py, io_names.1)?,
            ))?;
            let out = self.func.bind(py).call1((ctx,))?;
            // NotImplemented: the translator declines the node; the built-in translator runs.
            if out.is(&py.NotImplemented()) {
                return Ok(None);
            }
            let items: Vec<Bound<'_, PyAny>> =
                if out.is_instance_of::<PyList>() || out.is_instance_of::<PyTuple>() {
                    out.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![out]
                };
            let mut ports = Vec::with_capacity(items.len());
            for (i, it) in items.iter().enumerate() {
                if it.is_none() {
                    ports.push(None);
                    continue;
                }
                let th = it.downcast::<TensorHolder>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "output {i} must be a TensorHolder (or None), got {}",
                        it.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })?;
                let th = th.get();
                if !Arc::ptr_eq(&th.cell, &cell) {
                    return Err(PyValueError::new_err(format!(
                        "output {i} was built with another GraphBuilder; build outputs from \
                         ctx.inputs or ctx.builder"
                    )));
                }
                ports.push(Some(th.port));
            }
            Ok(Some(ports))
        })();
        {
            let mut st = cell.lock();
            std::mem::swap(&mut st.b, builder);
            // Tensors the translator kept cannot reach the graph any more.
            st.built = true;
        }
        result
    }
}

impl OpTranslator for PyTranslator {
    fn translate(&self, ctx: &mut NodeCtx<'_>) -> ge_onnx::Result<Vec<Option<es_core::OutPort>>> {
        let mut inputs = Vec::with_capacity(ctx.num_inputs());
        for i in 0..ctx.num_inputs() {
            inputs.push(ctx.opt_input(i)?);
        }
        let mut attrs = Vec::new();
        for a in &ctx.node.attribute {
            attrs.push((a.name.clone().unwrap_or_default(), ge_onnx::attrs::read(a)?));
        }
        let op_type = ctx.op_type().to_string();
        let domain = ctx.node.onnx_domain().to_string();
        let name = ctx.name().to_string();
        let fields = (
            op_type.as_str(),
            domain.as_str(),
            name.as_str(),
            ctx.opset,
            ctx.num_outputs(),
        );
        let io_names = (ctx.node.input.clone(), ctx.node.output.clone());
        let mut b = ctx.take_builder();
        let r = Python::with_gil(|py| {
            self.call(
                py,
                fields,
                (&io_names.0, &io_names.1),
                &inputs,
                attrs,
                &mut b,
            )
            .map_err(|e| {
                let msg = e.value(py).to_string();
                let ty = e
                    .get_type(py)
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                ge_onnx::Error::tr(format!(
                    "the Python translator registered for '{}' raised {ty}: {msg}",
                    self.key
                ))
            })
        });
        ctx.put_builder(b);
        match r? {
            Some(ports) => Ok(ports),
            None => match ge_onnx::ops::builtin().get(&domain, &op_type) {
                Some(t) => t.clone().translate(ctx),
                None => Err(ge_onnx::Error::tr(format!(
                    "the Python translator registered for '{}' declined node '{name}' \
                     (returned NotImplemented) and no built-in translator handles it",
                    self.key
                ))),
            },
        }
    }
}

guarded! {
    /// Registers a Python translator for `key` (`OpType` or `domain::OpType`).
    #[pyfunction]
    pub fn _onnx_register_translator(key: &str, func: PyObject) -> PyResult<()> {
        if key.is_empty() || key.starts_with("::") || key.ends_with("::") {
            return Err(PyValueError::new_err(format!(
                "translator key must be 'OpType' or 'domain::OpType', got {key:?}"
            )));
        }
        let t: Arc<dyn OpTranslator> = Arc::new(PyTranslator {
            key: key.to_string(),
            func,
        });
        let mut u = user_translators();
        u.retain(|(k, _)| k != key);
        u.push((key.to_string(), t));
        Ok(())
    }
}

guarded! {
    /// Removes the Python translator of `key`; returns whether there was one.
    #[pyfunction]
    pub fn _onnx_unregister_translator(key: &str) -> bool {
        let mut u = user_translators();
        let n = u.len();
        u.retain(|(k, _)| k != key);
        u.len() != n
    }
}
