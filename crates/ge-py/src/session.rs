//! `ge.session` glue: a ge-runtime `Session` whose compiles run the registered passes. Inputs
//! arrive as `ge.graph.Tensor`s or numpy arrays; runs release the GIL (Python passes take it
//! back only around their hooks).

use crate::convert::{downcast_arg, set_fields};
use crate::errors::IntoPyResult;
use crate::graph::Graph;
use crate::guard::guarded;
use ge_runtime::{Error, Session, Value};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A run's input: a tensor (a `ge.graph.Tensor` or anything numpy can make an array of), a
/// Python list of them (a sequence, `DT_VARIANT`), or None (an empty optional).
/// The `index` attributes of `graph`'s Data and RefData nodes whose output is DT_VARIANT.
fn variant_inputs(graph: &es_core::Graph) -> Vec<i64> {
    graph
        .input_nodes()
        .into_iter()
        .filter_map(|id| graph.node(id).ok())
        .filter(|n| matches!(&*n.op_type, "Data" | "RefData"))
        .filter(|n| n.outputs.first().map(|o| o.desc.dtype) == Some(es_core::DataType::VARIANT))
        .filter_map(|n| n.attrs.get("index").and_then(es_core::AttrValue::as_int))
        .collect()
}

fn value_from_py(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Value> {
    use ge_runtime::value::Variant;
    let tensor = |x: &Bound<'_, PyAny>| -> PyResult<Value> {
        crate::tensor::value_from_py(x)?.map_err(|e| match e {
            Error::Input(m) => PyValueError::new_err(m),
            e => crate::errors::Error::from(e).into(),
        })
    };
    if x.is_none() {
        return Ok(Value::Variant(Variant::Optional(None)));
    }
    let Ok(list) = x.downcast::<pyo3::types::PyList>() else {
        return tensor(x);
    };
    let mut items = Vec::with_capacity(list.len());
    for (k, e) in list.iter().enumerate() {
        let v = tensor(&e).map_err(|err| {
            PyValueError::new_err(format!("sequence element {k}: {}", err.value(py)))
        })?;
        if let Some(first) = items.first().map(Value::dtype) {
            if v.dtype() != first {
                return Err(PyValueError::new_err(format!(
                    "sequence element {k} is {}, element 0 is {first}: a sequence holds one dtype",
                    v.dtype()
                )));
            }
        }
        items.push(v);
    }
    let dt = items
        .first()
        .map_or(es_core::DataType::UNDEFINED, Value::dtype);
    Ok(Value::Variant(Variant::List(dt, items)))
}

/// A run's output for Python: a `ge.graph.Tensor`, a list of them for a sequence, None for an
/// empty optional (an optional holding a value gives that value). The tensors hold the values
/// as they are (no copy: `numpy()` views them).
fn value_to_py(py: Python<'_>, v: Value) -> PyResult<PyObject> {
    use ge_runtime::value::Variant;
    match v {
        Value::Variant(Variant::List(_, items)) => {
            let objs = items
                .into_iter()
                .map(|x| value_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(pyo3::types::PyList::new(py, objs)?.into_any().unbind())
        }
        Value::Variant(Variant::Optional(None)) => Ok(py.None()),
        Value::Variant(Variant::Optional(Some(x))) => value_to_py(py, *x),
        v => crate::tensor::wrap_value(py, v),
    }
}

/// How many of the largest tensors `plan_memory` lists.
const LARGEST_IN_PLAN_MEMORY: usize = 10;

#[pyclass(module = "ge._native", frozen)]
pub struct SessionCore {
    inner: Arc<Session>,
}

guarded! {
    #[pymethods]
    impl SessionCore {
        /// `run_passes=False` compiles without the registered passes (`ge.passes.testing` runs
        /// the graph as it is with it).
        #[new]
        #[pyo3(signature = (options = None, run_passes = true))]
        fn new(options: Option<BTreeMap<String, String>>, run_passes: bool) -> PyResult<Self> {
            let opts = options.unwrap_or_default();
            let mut s = Session::new(&opts).py()?;
            if run_passes {
                s = s.with_passes(Arc::new(|| Some(crate::passes::registry_snapshot())));
            }
            Ok(SessionCore { inner: Arc::new(s) })
        }

        /// Adds a copy of a graph; returns the Data indexes that take a list or an optional
        /// (DT_VARIANT), where a run may feed None (an empty optional).
        #[pyo3(signature = (graph_id, graph, options = None))]
        fn add_graph(
            &self,
            py: Python<'_>,
            graph_id: u32,
            graph: &Bound<'_, PyAny>,
            options: Option<BTreeMap<String, String>>,
        ) -> PyResult<Vec<i64>> {
            let g = downcast_arg::<Graph>(graph, "add_graph needs a ge.graph.Graph")?.get();
            let copy = g.src.read(&g.path, |gr| Ok(gr.clone()))?;
            let variant_at = variant_inputs(&copy);
            let opts = options.unwrap_or_default();
            py.allow_threads(|| self.inner.add_graph(graph_id, copy, &opts))
                .py()?;
            Ok(variant_at)
        }

        /// Adds graph `index` of an offline model (already compiled: its runs only plan it).
        #[pyo3(signature = (graph_id, model, index = 0, options = None))]
        fn add_compiled_graph(
            &self,
            py: Python<'_>,
            graph_id: u32,
            model: PyRef<'_, crate::om::OmModelCore>,
            index: usize,
            options: Option<BTreeMap<String, String>>,
        ) -> PyResult<()> {
            let g = model.graph_at(index)?;
            let (graph, sig) = (g.graph.clone(), g.signature.clone());
            let opts = options.unwrap_or_default();
            py.allow_threads(|| self.inner.add_compiled_graph(graph_id, graph, sig, &opts))
                .py()
        }

        fn remove_graph(&self, graph_id: u32) -> PyResult<()> {
            self.inner.remove_graph(graph_id).py()
        }

        /// Runs a graph; returns native tensors (`ge.graph.Tensor` wraps them).
        fn run_graph(
            &self,
            py: Python<'_>,
            graph_id: u32,
            inputs: Vec<Bound<'_, PyAny>>,
        ) -> PyResult<Vec<PyObject>> {
            let mut values = Vec::with_capacity(inputs.len());
            for (i, x) in inputs.iter().enumerate() {
                values.push(value_from_py(py, x).map_err(|e| {
                    PyValueError::new_err(format!("input {i}: {}", e.value(py)))
                })?);
            }
            let session = self.inner.clone();
            let outs = py
                .allow_threads(move || session.run_graph(graph_id, values))
                .py()?;
            outs.into_iter().map(|v| value_to_py(py, v)).collect()
        }

        fn graph_cache_stats<'py>(
            &self,
            py: Python<'py>,
            graph_id: u32,
        ) -> PyResult<Bound<'py, PyDict>> {
            let s = self.inner.graph_cache_stats(graph_id).py()?;
            let d = PyDict::new(py);
            set_fields!(d, s; hits, misses, captures, evictions, size, capacity);
            Ok(d)
        }

        /// The counters of a graph's eager node caches: hits (node runs that reused a compile),
        /// misses (node compiles), whole_graph_runs (eager runs that compiled the whole graph).
        fn graph_eager_stats<'py>(
            &self,
            py: Python<'py>,
            graph_id: u32,
        ) -> PyResult<Bound<'py, PyDict>> {
            let s = self.inner.eager_stats(graph_id).py()?;
            let d = PyDict::new(py);
            set_fields!(d, s; hits, misses, whole_graph_runs);
            Ok(d)
        }

        /// The latest compile report of a graph as text, or None before its first compile.
        fn compile_report(&self, graph_id: u32) -> PyResult<Option<String>> {
            Ok(self
                .inner
                .compile_report(graph_id)
                .py()?
                .map(|r| r.to_string()))
        }

        /// The memory plan of the graph's latest compile as a dict (see docs/running.md), or
        /// None before its first compile (or on a backend that makes none).
        fn plan_memory<'py>(
            &self,
            py: Python<'py>,
            graph_id: u32,
        ) -> PyResult<Option<Bound<'py, PyDict>>> {
            let Some(m) = self.inner.plan_memory(graph_id).py()? else {
                return Ok(None);
            };
            let limit = self.inner.graph_options(graph_id).py()?.memory_limit;
            let d = PyDict::new(py);
            d.set_item("peak_bytes", m.peak_bytes())?;
            d.set_item("limit_bytes", limit)?;
            set_fields!(d, m; arena_bytes, const_bytes, input_bytes, naive_bytes, live_peak_bytes);
            d.set_item("tensors", m.tensors.len() - m.unknown)?;
            d.set_item("unknown_tensors", m.unknown)?;
            let mut largest = Vec::new();
            for t in m.largest(LARGEST_IN_PLAN_MEMORY) {
                let e = PyDict::new(py);
                e.set_item("name", &t.name)?;
                e.set_item("op", &t.op)?;
                e.set_item("dtype", t.dtype.name())?;
                e.set_item(
                    "shape",
                    if t.unknown_rank { None } else { Some(t.shape.clone()) },
                )?;
                e.set_item("bytes", t.bytes)?;
                e.set_item("offset", t.offset)?;
                e.set_item("first_step", t.first)?;
                e.set_item("last_step", t.last)?;
                largest.push(e);
            }
            d.set_item("largest", largest)?;
            Ok(Some(d))
        }

        fn graph_ids(&self) -> Vec<u32> {
            self.inner.graph_ids()
        }

        /// The resolved options: (device, graph mode, cache capacity, threads, device id,
        /// memory limit in bytes).
        fn _options(&self) -> PyResult<(String, bool, usize, usize, i32, u64)> {
            let o = self.inner.options();
            Ok((
                format!("{:?}", o.device).to_lowercase(),
                o.graph_mode,
                o.cache_capacity,
                o.threads,
                o.device_id,
                o.memory_limit,
            ))
        }

        /// Why `ge.device=auto` chose the CPU, since the last call.
        fn _take_device_notes(&self) -> Vec<String> {
            self.inner.take_device_notes()
        }

        /// Where graph `graph_id` runs: "cpu" or "acl" (`auto` resolves when the graph is added).
        fn graph_device(&self, graph_id: u32) -> PyResult<&'static str> {
            Ok(if self.inner.runs_on_acl(graph_id).py()? {
                "acl"
            } else {
                "cpu"
            })
        }
    }
}

guarded! {
    /// The GE operators the ACL backend runs.
    #[pyfunction]
    pub fn _acl_op_types() -> Vec<&'static str> {
        ge_acl::ACL_OPS.to_vec()
    }
}

guarded! {
    /// The process's collective world: (rank, world size, what runs it), made on first use
    /// (MPI under `mpiexec`, else a single process).
    #[pyfunction]
    pub fn _collective_world() -> PyResult<(usize, usize, String)> {
        let w = ge_runtime::collective::world().py()?;
        Ok((w.rank(), w.size(), w.name()))
    }
}

guarded! {
    /// Creates the collective group `name` of the world ranks `ranks` (HCCL's
    /// `HcomCreateGroup`; every rank of the group calls it).
    #[pyfunction]
    pub fn _collective_create_group(py: Python<'_>, name: &str, ranks: Vec<usize>) -> PyResult<()> {
        py.allow_threads(|| ge_runtime::collective::create_group(name, &ranks)).py()
    }
}

guarded! {
    /// Forgets the collective group `name`; False when there is none.
    #[pyfunction]
    pub fn _collective_destroy_group(name: &str) -> bool {
        ge_runtime::collective::destroy_group(name)
    }
}

guarded! {
    /// The world ranks of collective group `name`, or None when there is no such group.
    #[pyfunction]
    pub fn _collective_group_ranks(name: &str) -> PyResult<Option<Vec<usize>>> {
        ge_runtime::collective::group_ranks(name).py()
    }
}

guarded! {
    /// The world size an MPI launcher announced in the environment (`PMI_SIZE`, ...), or None
    /// when no launcher started this process.
    #[pyfunction]
    pub fn _launched_world_size() -> Option<usize> {
        ge_runtime::collective::launched_size().map(|(n, _)| n)
    }
}

guarded! {
    /// The option keys a session or graph accepts.
    #[pyfunction]
    pub fn _session_option_keys() -> Vec<&'static str> {
        ge_runtime::session::OPTION_KEYS.to_vec()
    }
}

guarded! {
    /// The op types the CPU backend has kernels for.
    #[pyfunction]
    pub fn _cpu_kernel_op_types() -> Vec<String> {
        ge_runtime::kernels::kernel_op_types()
    }
}

/// Runs a Python kernel: inputs as numpy arrays (None when absent), the node's IR attributes
/// as keyword arguments; the result (an array, or a tuple/list of them) must have one array
/// per output, each of the output's dtype.
fn call_python_kernel(
    fun: &Py<PyAny>,
    op: &str,
    attrs: &[(String, es_core::attr::AttrValue)],
    out_dtypes: &[es_core::DataType],
    inputs: &[Option<&Value>],
) -> ge_runtime::Result<Vec<Value>> {
    Python::with_gil(|py| -> PyResult<ge_runtime::Result<Vec<Value>>> {
        let mut args = Vec::with_capacity(inputs.len());
        for v in inputs {
            args.push(match v {
                None => py.None(),
                Some(v) => {
                    let t = match v.to_tensor() {
                        Ok(t) => t,
                        Err(e) => return Ok(Err(e)),
                    };
                    crate::tensor::wrap_tensor(py, t)?
                        .bind(py)
                        .call_method0("numpy")?
                        .unbind()
                }
            });
        }
        let kwargs = PyDict::new(py);
        for (k, v) in attrs {
            kwargs.set_item(k, crate::attrs::attr_to_py(py, v)?)?;
        }
        let r = match fun
            .bind(py)
            .call(pyo3::types::PyTuple::new(py, args)?, Some(&kwargs))
        {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(Error::kernel(format!(
                    "the Python kernel of {op} raised {}: {}",
                    e.get_type(py).name()?,
                    e.value(py)
                ))))
            }
        };
        let items: Vec<Bound<'_, PyAny>> = if r.is_instance_of::<pyo3::types::PyTuple>()
            || r.is_instance_of::<pyo3::types::PyList>()
        {
            r.try_iter()?.collect::<PyResult<_>>()?
        } else {
            vec![r]
        };
        if items.len() != out_dtypes.len() {
            return Ok(Err(Error::kernel(format!(
                "the Python kernel of {op} returned {} arrays, the node has {} outputs",
                items.len(),
                out_dtypes.len()
            ))));
        }
        let mut outs = Vec::with_capacity(items.len());
        for (i, (item, &dt)) in items.iter().zip(out_dtypes).enumerate() {
            let v = match crate::tensor::value_from_py(item)? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            if dt != es_core::DataType::UNDEFINED && v.dtype() != dt {
                return Ok(Err(Error::kernel(format!(
                    "the Python kernel of {op} returned {} for output {i}, which is {dt}",
                    v.dtype()
                ))));
            }
            outs.push(v);
        }
        Ok(Ok(outs))
    })
    .unwrap_or_else(|e| {
        Err(Error::kernel(format!(
            "the Python kernel of {op} failed: {e}"
        )))
    })
}

guarded! {
    /// Registers a Python function as the CPU kernel of `op_type` (`ge.ops.register_kernel`).
    #[pyfunction]
    pub fn _register_kernel(op_type: String, fun: Py<PyAny>) -> PyResult<()> {
        if op_type.is_empty() {
            return Err(PyValueError::new_err("op_type must not be empty"));
        }
        let fun = Arc::new(fun);
        let op = op_type.clone();
        ge_runtime::kernels::register_custom(
            &op_type,
            Arc::new(move |info: &ge_runtime::kernels::NodeInfo| {
                let attrs: Vec<(String, es_core::attr::AttrValue)> = info
                    .node
                    .attrs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect();
                let out_dtypes: Vec<es_core::DataType> =
                    info.node.outputs.iter().map(|o| o.desc.dtype).collect();
                let (fun, op) = (fun.clone(), op.clone());
                let kernel: ge_runtime::kernels::Kernel =
                    Box::new(move |inputs| call_python_kernel(&fun, &op, &attrs, &out_dtypes, inputs));
                Ok(kernel)
            }),
        );
        Ok(())
    }
}

guarded! {
    /// Removes a kernel registered from Python; returns whether there was one.
    #[pyfunction]
    pub fn _unregister_kernel(op_type: &str) -> bool {
        ge_runtime::kernels::unregister_custom(op_type)
    }
}
