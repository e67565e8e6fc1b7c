//! `GraphBuilderBase` (subclassed by `ge.es.GraphBuilder`), `TensorHolder`, the op-call entry
//! used by every generated op function, and the thread-local attribute / control scopes.

use crate::attrs::{attr_from_py, attr_infer_from_py, attr_value, set_node_attr};
use crate::convert::{downcast_arg, dtype_from_py, format_from_py, graph_name_arg, shape_from_py};
use crate::errors::IntoPyResult;
use crate::graph::{Graph, Node};
use crate::guard::guarded;
use crate::source::{BuilderCell, BuilderState, GraphSource};
use es_core::builder::OpArgs;
use es_core::ops::{AttrDef, IoKind, OpProto, SubgraphKind, TypeSpec};
use es_core::{AttrValue, DataType, GraphBuilder, NodeId, OutPort, Shape, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};
use std::cell::RefCell;
use std::sync::Arc;

#[pyclass(module = "ge._native", subclass, frozen, weakref)]
pub struct GraphBuilderBase {
    pub cell: Arc<BuilderCell>,
}

#[pyclass(module = "ge._native", frozen, weakref)]
pub struct TensorHolder {
    pub cell: Arc<BuilderCell>,
    /// The Python builder object: a tensor keeps its builder alive (no cycle: builders hold
    /// no tensors).
    pub owner: PyObject,
    pub port: OutPort,
}

/// One control-dependency scope: (builder, node) pairs.
type ControlScope = Vec<(Arc<BuilderCell>, NodeId)>;

/// A flattened nested list: values as f64, values as i64, all ints?, shape.
type Flat = (Vec<f64>, Vec<i64>, bool, Vec<i64>);

thread_local! {
    static ATTR_SCOPE: RefCell<Vec<Vec<(String, AttrValue)>>> = const { RefCell::new(Vec::new()) };
    static CTRL_SCOPE: RefCell<Vec<ControlScope>> = const { RefCell::new(Vec::new()) };
}

guarded! {
    /// Enters an attribute scope (`ge.es.attr_scope`).
    #[pyfunction]
    pub fn _push_attr_scope(attrs: &Bound<'_, PyDict>) -> PyResult<()> {
        let mut v = Vec::new();
        for (k, val) in attrs.iter() {
            let k: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("attribute names must be str"))?;
            let a = attr_infer_from_py(&val, &format!("attribute '{k}'"))?;
            v.push((k, a));
        }
        ATTR_SCOPE.with(|s| s.borrow_mut().push(v));
        Ok(())
    }

    #[pyfunction]
    pub fn _pop_attr_scope() -> PyResult<()> {
        leave(&ATTR_SCOPE)
    }

    /// Enters a control-dependency scope (`ge.es.control_dependency_scope`).
    #[pyfunction]
    pub fn _push_control_scope(tensors: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut v = Vec::new();
        for t in tensors.try_iter()? {
            let t = t?;
            let th = t.downcast::<TensorHolder>().map_err(|_| {
                PyTypeError::new_err("control_dependency_scope takes a list of TensorHolder")
            })?;
            let th = th.get();
            v.push((th.cell.clone(), th.port.node));
        }
        CTRL_SCOPE.with(|s| s.borrow_mut().push(v));
        Ok(())
    }

    #[pyfunction]
    pub fn _pop_control_scope() -> PyResult<()> {
        leave(&CTRL_SCOPE)
    }
}

/// Leaves the innermost scope of a scope stack.
fn leave<T>(scopes: &'static std::thread::LocalKey<RefCell<Vec<T>>>) -> PyResult<()> {
    scopes.with(|s| s.borrow_mut().pop());
    Ok(())
}

/// Applies the current scopes to a new node.
/// Applies the current scopes to a node just added. If a scope cannot apply (a tensor of another
/// builder, or of a removed node), the node is removed again and the error returned, so a failed
/// call leaves the graph as it was.
fn apply_scopes(cell: &Arc<BuilderCell>, st: &mut BuilderState, node: NodeId) -> PyResult<()> {
    let empty =
        ATTR_SCOPE.with(|s| s.borrow().is_empty()) && CTRL_SCOPE.with(|s| s.borrow().is_empty());
    if empty {
        return Ok(());
    }
    let attrs: Vec<(String, AttrValue)> =
        ATTR_SCOPE.with(|s| s.borrow().iter().flatten().cloned().collect());
    let ctrl: ControlScope = CTRL_SCOPE.with(|s| s.borrow().iter().flatten().cloned().collect());
    let g = st.b.graph_mut();
    let problem = ctrl.iter().find_map(|(src_cell, src)| {
        if !Arc::ptr_eq(src_cell, cell) {
            Some(PyValueError::new_err(format!(
                "control_dependency_scope holds a tensor of builder '{}', but the node is built by '{}'",
                src_cell.name, cell.name
            )))
        } else if !g.contains(*src) {
            Some(PyRuntimeError::new_err("control_dependency_scope holds a tensor whose node was removed"))
        } else {
            None
        }
    });
    if let Some(e) = problem {
        let _ = g.remove_node(node);
        return Err(e);
    }
    for (_, src) in ctrl {
        if src != node {
            g.add_control_edge(src, node).py()?;
        }
    }
    let n = g.node_mut(node).py()?;
    for (k, v) in attrs {
        n.private_attrs.insert(k, v);
    }
    Ok(())
}

fn new_tensor(
    py: Python<'_>,
    cell: &Arc<BuilderCell>,
    owner: &PyObject,
    port: OutPort,
) -> PyResult<Py<TensorHolder>> {
    Py::new(
        py,
        TensorHolder {
            cell: cell.clone(),
            owner: owner.clone_ref(py),
            port,
        },
    )
}

guarded! {
    #[pymethods]
    impl GraphBuilderBase {
        #[new]
        #[pyo3(signature = (name = None))]
        fn new(name: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
            let name = graph_name_arg(name)?;
            Ok(GraphBuilderBase {
                cell: BuilderCell::new(name.clone(), GraphBuilder::new(name)),
            })
        }

        #[getter]
        fn name(&self) -> String {
            self.cell.name.clone()
        }

        #[getter]
        fn _is_built(&self) -> bool {
            self.cell.lock().built
        }

        #[pyo3(signature = (index, name, type_str, data_type, format, shape))]
        fn _create_input(
            slf: &Bound<'_, Self>,
            index: i64,
            name: Option<String>,
            type_str: &str,
            data_type: &Bound<'_, PyAny>,
            format: &Bound<'_, PyAny>,
            shape: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Py<TensorHolder>> {
            let dt = dtype_from_py(data_type)?;
            let fmt = format_from_py(format)?;
            // No shape: GE replaces the description with the fed tensor's at compile, so the
            // input is of unknown rank until then (not a scalar).
            let shape = match shape {
                Some(s) => Shape::new(shape_from_py(s)?),
                None => Shape::unknown_rank(),
            };
            Self::add_node(slf, "create input", |b| {
                b.create_input(index, name, type_str, dt, fmt, shape)
            })
        }

        /// Adds a Const node from a native tensor.
        #[pyo3(signature = (tensor, name = None))]
        fn _create_const(
            slf: &Bound<'_, Self>,
            tensor: &Bound<'_, PyAny>,
            name: Option<String>,
        ) -> PyResult<Py<TensorHolder>> {
            let t = crate::tensor::tensor_from_py(tensor)?;
            Self::add_node(slf, "create constant", |b| b.create_const(t, name))
        }

        fn _create_variable(
            slf: &Bound<'_, Self>,
            index: i64,
            name: &str,
        ) -> PyResult<Py<TensorHolder>> {
            Self::add_node(slf, "create variable", |b| b.create_variable(index, name))
        }

        fn set_graph_output(
            &self,
            tensor: &Bound<'_, PyAny>,
            output_index: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            let th = downcast_arg::<TensorHolder>(tensor, "Tensor must be a TensorHolder")?;
            let th = th.get();
            if output_index.is_instance_of::<PyBool>() || !output_index.is_instance_of::<PyInt>() {
                return Err(PyTypeError::new_err("Output index must be an integer"));
            }
            let idx: i64 = output_index.extract()?;
            if idx < 0 {
                return Err(PyValueError::new_err(format!(
                    "Output index must be >= 0, got {idx}"
                )));
            }
            self.check_same(th, "set graph output")?;
            let mut st = self.cell.usable("set graph output")?;
            st.b.set_output(th.port, idx as usize).py()
        }

        /// Sets a graph attribute (`ty` None: inferred from the value).
        #[pyo3(signature = (name, value, ty = None))]
        fn _set_graph_attr(
            &self,
            name: &str,
            value: &Bound<'_, PyAny>,
            ty: Option<&str>,
        ) -> PyResult<()> {
            let a = attr_value(value, ty, name)?;
            let mut st = self.cell.usable("set graph attribute")?;
            st.b.graph_mut().attrs.insert(name.to_string(), a);
            Ok(())
        }

        /// Sets an attribute of a tensor (the producer's output description).
        #[pyo3(signature = (tensor, name, value, ty = None))]
        fn _set_tensor_attr(
            &self,
            tensor: &Bound<'_, TensorHolder>,
            name: &str,
            value: &Bound<'_, PyAny>,
            ty: Option<&str>,
        ) -> PyResult<()> {
            self.edit_tensor(tensor, "set tensor attribute", |g, port| {
                let a = attr_value(value, ty, name)?;
                let n = g.node_mut(port.node).py()?;
                n.outputs[port.index as usize]
                    .desc
                    .attrs
                    .insert(name.to_string(), a);
                Ok(())
            })
        }

        /// Sets an attribute of a tensor's producer node (IR attribute if the prototype has it,
        /// else private).
        #[pyo3(signature = (tensor, name, value, ty = None))]
        fn _set_node_attr(
            &self,
            tensor: &Bound<'_, TensorHolder>,
            name: &str,
            value: &Bound<'_, PyAny>,
            ty: Option<&str>,
        ) -> PyResult<()> {
            self.edit_tensor(tensor, "set node attribute", |g, port| {
                set_node_attr(g, port.node, name, value, ty)
            })
        }

        fn add_control_dependency(
            &self,
            dst_tensor: &Bound<'_, PyAny>,
            src_tensors: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            let dst = downcast_arg::<TensorHolder>(dst_tensor, "dst_tensor must be a TensorHolder")?;
            if !src_tensors.is_instance_of::<PyList>() {
                return Err(PyTypeError::new_err("src_tensors must be a list"));
            }
            let mut srcs = Vec::new();
            for s in src_tensors.try_iter()? {
                let s = s?;
                let s = downcast_arg::<TensorHolder>(&s, "src_tensors must be a list of TensorHolder")?;
                self.check_same(s.get(), "add control dependency")?;
                srcs.push(s.get().port.node);
            }
            let dst = dst.get();
            self.check_same(dst, "add control dependency")?;
            let mut st = self.cell.usable("add control dependency")?;
            st.b.add_control_dependency(dst.port.node, &srcs).py()
        }

        /// Finishes the graph; the builder and its tensors cannot be used afterwards.
        fn _build_and_reset(&self, py: Python<'_>) -> PyResult<Py<Graph>> {
            let mut st = self.cell.usable("build_and_reset")?;
            // Names are inline strings (or shared): a copy per node, no allocation.
            let names = st.b.graph().iter().map(|(id, n)| (id, n.name.clone())).collect();
            let g = st.b.build_and_reset().py()?;
            st.built = true;
            st.built_names = names;
            drop(st);
            Graph::from_graph(py, g)
        }

        /// Refreshes the operator registry snapshot (after run-time registration).
        fn _refresh_registry(&self) -> PyResult<()> {
            self.cell.lock().b.refresh_registry();
            Ok(())
        }

        fn __copy__(&self) -> PyResult<()> {
            Err(PyRuntimeError::new_err(
                "GraphBuilder does not support copy",
            ))
        }
        fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<()> {
            Err(PyRuntimeError::new_err(
                "GraphBuilder does not support deepcopy",
            ))
        }
    }
}

impl GraphBuilderBase {
    /// The node `create` adds (`what` names it in errors), under the current scopes, as a new
    /// tensor of this builder.
    pub(crate) fn add_node<E: Into<crate::errors::Error>>(
        slf: &Bound<'_, Self>,
        what: &str,
        create: impl FnOnce(&mut GraphBuilder) -> Result<OutPort, E>,
    ) -> PyResult<Py<TensorHolder>> {
        let this = slf.get();
        let mut st = this.cell.usable(what)?;
        let port = create(&mut st.b).py()?;
        apply_scopes(&this.cell, &mut st, port.node)?;
        drop(st);
        new_tensor(slf.py(), &this.cell, &slf.clone().into_any().unbind(), port)
    }

    /// Runs `edit` on the graph and the port of `tensor`, a tensor of this builder (`what` names
    /// the edit in errors).
    fn edit_tensor<R>(
        &self,
        tensor: &Bound<'_, TensorHolder>,
        what: &str,
        edit: impl FnOnce(&mut es_core::Graph, OutPort) -> PyResult<R>,
    ) -> PyResult<R> {
        let th = tensor.get();
        self.check_same(th, what)?;
        let mut st = self.cell.usable(what)?;
        edit(st.b.graph_mut(), th.port)
    }

    fn check_same(&self, th: &TensorHolder, what: &str) -> PyResult<()> {
        if !Arc::ptr_eq(&th.cell, &self.cell) {
            return Err(PyValueError::new_err(format!(
                "Cannot {what}: the tensor belongs to GraphBuilder '{}', not '{}'",
                th.cell.name, self.cell.name
            )));
        }
        Ok(())
    }
}

fn binary(
    slf: &Bound<'_, TensorHolder>,
    op: &str,
    other: &Bound<'_, PyAny>,
    reflected: bool,
) -> PyResult<PyObject> {
    let py = slf.py();
    if let Ok(o) = other.downcast::<TensorHolder>() {
        let (a, b) = (&slf.get().cell, &o.get().cell);
        if !Arc::ptr_eq(a, b) {
            // GE's ValueError and wording (TensorHolder._validate_operation).
            return Err(PyValueError::new_err(format!(
                "Cannot perform {}: tensors from different GraphBuilders ('{}' vs '{}')",
                op.to_lowercase(),
                a.name,
                b.name
            )));
        }
    }
    let me = slf.clone().into_any();
    let args = if reflected {
        PyTuple::new(py, [other.clone(), me])?
    } else {
        PyTuple::new(py, [me, other.clone()])?
    };
    call_op_impl(py, op, &args, None, None, None, None)
}

/// `#[pymethods] impl TensorHolder`: the arithmetic operators (forward and reflected) and GE's
/// method forms (`add`, `sub`, ...) generated from one table, each a call of [`binary`]; the
/// other methods are passed through as written.
macro_rules! tensor_holder_methods {
    (
        operators { $($fwd:ident / $rev:ident => $op:literal),* $(,)? }
        methods { $($m:ident => $mop:literal),* $(,)? }
        $($rest:tt)*
    ) => {
        guarded! {
            #[pymethods]
            impl TensorHolder {
                $(
                    fn $fwd(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
                        binary(slf, $op, other, false)
                    }
                    fn $rev(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
                        binary(slf, $op, other, true)
                    }
                )*
                $(
                    fn $m(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
                        binary(slf, $mop, other, false)
                    }
                )*
                $($rest)*
            }
        }
    };
}

tensor_holder_methods! {
    operators {
        __add__ / __radd__ => "Add",
        __sub__ / __rsub__ => "Sub",
        __mul__ / __rmul__ => "Mul",
        __truediv__ / __rtruediv__ => "Div",
    }
    // GE's method forms of the operators.
    methods { add => "Add", sub => "Sub", mul => "Mul", div => "Div" }

    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "TensorHolder objects should not be created directly",
        ))
    }

    /// Name of the producer node.
    #[getter]
    fn name(&self) -> PyResult<String> {
        let st = self.cell.lock();
        if st.built {
            if let Some(n) = st.built_names.get(self.port.node) {
                return Ok(n.to_string());
            }
            drop(st);
            return self
                .cell
                .usable("get the tensor name")
                .map(|_| String::new());
        }
        Ok(st.b.graph().node(self.port.node).py()?.name.to_string())
    }

    /// Index of this tensor among its producer's outputs.
    #[getter]
    fn output_index(&self) -> u32 {
        self.port.index
    }

    fn get_owner_builder(&self, py: Python<'_>) -> PyObject {
        self.owner.clone_ref(py)
    }

    /// The producer node, as a `Node` view valid until the builder is built.
    fn get_producer(&self, py: Python<'_>) -> PyResult<Py<Node>> {
        Py::new(
            py,
            Node::new(GraphSource::Builder(self.cell.clone()), self.port.node),
        )
    }

    /// GE's name for `get_producer` (what `Pattern.capture_tensor` reads from a TensorHolder).
    fn _get_node_snapshot(&self, py: Python<'_>) -> PyResult<Py<Node>> {
        self.get_producer(py)
    }

    fn set_data_type(slf: &Bound<'_, Self>, data_type: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let dt = dtype_from_py(data_type)
            .map_err(|_| PyTypeError::new_err("Data type must be a DataType enum"))?;
        slf.get().with_desc("set data type", |d| d.dtype = dt)?;
        Ok(slf.clone().unbind())
    }
    fn set_format(slf: &Bound<'_, Self>, format: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let f = format_from_py(format)
            .map_err(|_| PyTypeError::new_err("Format must be a Format enum"))?;
        slf.get().with_desc("set format", |d| {
            d.format = f;
            d.origin_format = f;
        })?;
        Ok(slf.clone().unbind())
    }
    fn set_shape(slf: &Bound<'_, Self>, shape: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        if !shape.is_instance_of::<PyList>() {
            return Err(PyTypeError::new_err("Shape must be a list of integers"));
        }
        for d in shape.try_iter()? {
            let d = d?;
            if d.is_instance_of::<pyo3::types::PyBool>()
                || !d.is_instance_of::<pyo3::types::PyInt>()
            {
                return Err(PyTypeError::new_err(
                    "All shape dimensions must be integers",
                ));
            }
        }
        let dims = shape_from_py(shape)?;
        slf.get()
            .with_desc("set shape", |d| d.set_shape(Shape::new(dims)))?;
        Ok(slf.clone().unbind())
    }

    /// (dtype, shape) of this tensor as the builder knows it.
    #[getter]
    fn _desc(&self) -> PyResult<(i32, Vec<i64>, i32)> {
        let st = self.cell.lock();
        let d = st.b.graph().out_desc(self.port).py()?;
        Ok((d.dtype.value(), d.shape.0.to_vec(), d.format.value()))
    }

    fn __matmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let op = matmul_op(slf, o)?;
        binary(slf, op, o, false)
    }
    fn __rmatmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let op = matmul_op(slf, o)?;
        binary(slf, op, o, true)
    }
    fn __pow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        binary(slf, "Pow", o, false)
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        binary(slf, "Pow", o, true)
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        let py = slf.py();
        call_op_impl(
            py,
            "Neg",
            &PyTuple::new(py, [slf.clone().into_any()])?,
            None,
            None,
            None,
            None,
        )
    }

    fn __bool__(&self) -> PyResult<bool> {
        Err(PyTypeError::new_err(
            "a TensorHolder has no truth value while the graph is being built (use If/Case for data-dependent control flow)",
        ))
    }

    fn __repr__(&self) -> String {
        let st = self.cell.lock();
        match st.b.graph().node(self.port.node) {
            Ok(n) => format!(
                "TensorHolder({}:{} {})",
                n.name,
                self.port.index,
                n.outputs
                    .get(self.port.index as usize)
                    .map(|o| o.desc.to_string())
                    .unwrap_or_default()
            ),
            Err(_) => "TensorHolder(<built>)".to_string(),
        }
    }
}

fn matmul_op(a: &Bound<'_, TensorHolder>, b: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let rank = |t: &TensorHolder| -> Option<usize> {
        let st = t.cell.lock();
        st.b.graph()
            .out_desc(t.port)
            .ok()
            .and_then(|d| d.shape.rank())
    };
    let ra = rank(a.get());
    let rb = b
        .downcast::<TensorHolder>()
        .ok()
        .and_then(|t| rank(t.get()));
    Ok(match (ra, rb) {
        (Some(2), Some(2)) | (Some(2), None) | (None, Some(2)) => "MatMulV2",
        _ => "BatchMatMulV2",
    })
}

impl TensorHolder {
    fn with_desc(&self, what: &str, f: impl FnOnce(&mut es_core::TensorDesc)) -> PyResult<()> {
        let mut st = self.cell.usable(what)?;
        let g = st.b.graph_mut();
        let n = g.node_mut(self.port.node).py()?;
        let o = n
            .outputs
            .get_mut(self.port.index as usize)
            .ok_or_else(|| PyValueError::new_err("output index out of range"))?;
        f(&mut o.desc);
        // Data-like nodes keep input and output descriptions equal.
        if es_core::graph::is_data_op(&n.op_type) {
            let d = n.outputs[0].desc.clone();
            if let Some(i) = n.inputs.get_mut(0) {
                i.desc = d;
            }
        }
        st.b.description_set(self.port.node).py()
    }
}

/// Flattens a nested list of numbers: (values as f64, all ints?, ints, shape).
fn flatten(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Flat> {
    fn rec(
        v: &Bound<'_, PyAny>,
        f: &mut Vec<f64>,
        i: &mut Vec<i64>,
        all_int: &mut bool,
        what: &str,
    ) -> PyResult<Vec<i64>> {
        if v.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "{what}: bool values cannot be used as tensors here"
            )));
        }
        if v.is_instance_of::<PyInt>() {
            let x: i64 = v.extract().map_err(|_| {
                PyValueError::new_err(format!("{what}: integer does not fit in int64"))
            })?;
            f.push(x as f64);
            i.push(x);
            return Ok(Vec::new());
        }
        if v.is_instance_of::<PyFloat>() {
            let x: f64 = v.extract()?;
            *all_int = false;
            f.push(x);
            i.push(x as i64);
            return Ok(Vec::new());
        }
        if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
            if items.is_empty() {
                return Ok(vec![0]);
            }
            let mut inner: Option<Vec<i64>> = None;
            for it in &items {
                let s = rec(it, f, i, all_int, what)?;
                match &inner {
                    None => inner = Some(s),
                    Some(p) if *p != s => {
                        return Err(PyValueError::new_err(format!(
                            "{what}: irregular nested list: all sub-lists must have the same shape"
                        )))
                    }
                    _ => {}
                }
            }
            let mut shape = vec![items.len() as i64];
            shape.extend(inner.unwrap_or_default());
            return Ok(shape);
        }
        Err(PyTypeError::new_err(format!(
            "{what} must be a TensorHolder, an int or float, or a nested list of them; got {}",
            v.get_type().name()?
        )))
    }
    let (mut f, mut i, mut all_int) = (Vec::new(), Vec::new(), true);
    let shape = rec(v, &mut f, &mut i, &mut all_int, what)?;
    Ok((f, i, all_int, shape))
}

/// A constant tensor from a number or nested list. The dtype is `target` when given (the dtype
/// the other inputs of the same type variable have), else GE's rule: int64 for ints, float32
/// when any float is present.
fn const_from_like(v: &Bound<'_, PyAny>, target: Option<DataType>, what: &str) -> PyResult<Tensor> {
    let (f, i, all_int, shape) = flatten(v, what)?;
    let dt = target.unwrap_or(if all_int {
        DataType::INT64
    } else {
        DataType::FLOAT
    });
    if dt == DataType::INT64 && all_int {
        return Tensor::from_values(&i, shape).py();
    }
    if dt.is_integer() && !all_int {
        return Err(PyTypeError::new_err(format!(
            "{what}: float values given where {dt} is expected"
        )));
    }
    es_core::types::tensor_from_f64(dt, shape, &f).py()
}

enum Group<'py> {
    One(Arg<'py>),
    Many(Vec<Arg<'py>>),
}

impl<'py> Group<'py> {
    fn args(&self) -> &[Arg<'py>] {
        match self {
            Group::One(a) => std::slice::from_ref(a),
            Group::Many(v) => v,
        }
    }
}

enum Arg<'py> {
    Tensor(Bound<'py, TensorHolder>),
    Like(Bound<'py, PyAny>),
    None,
}

fn classify<'py>(v: &Bound<'py, PyAny>) -> Arg<'py> {
    if v.is_none() {
        Arg::None
    } else if let Ok(t) = v.downcast::<TensorHolder>() {
        Arg::Tensor(t.clone())
    } else {
        Arg::Like(v.clone())
    }
}

/// The attributes in the order of GE's generated parameters: required ones first, then those
/// with defaults, each group in IR order (derived ones included).
fn ge_attr_order(p: &OpProto) -> Vec<&AttrDef> {
    let mut v: Vec<&AttrDef> = p.attrs.iter().collect();
    v.sort_by_key(|a| !a.required());
    v
}

/// A float default as GE's generated signature shows it: C's `%f` of the float32 value
/// (`1e-07` shows as `0.000000`).
fn ge_printed(x: f32) -> f32 {
    format!("{:.6}", x as f64)
        .parse::<f64>()
        .map_or(x, |v| v as f32)
}

/// Whether `v` equals the default `d` as GE's generated C compares them (float32 values against
/// the printed default). Tensors are always set, as in GE.
fn is_ge_default(v: &AttrValue, d: &AttrValue) -> bool {
    let same = |a: f32, b: f32| a == b || a == ge_printed(b);
    match (v, d) {
        (AttrValue::Float(a), AttrValue::Float(b)) => same(*a, *b),
        (AttrValue::ListFloat(a), AttrValue::ListFloat(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(*x, *y))
        }
        (AttrValue::Tensor(_), _) => false,
        _ => v == d,
    }
}

/// The input tensors of a plain op call (see `call_op_impl`), or None when the call is not plain.
fn plain_ports(
    p: &OpProto,
    items: &[Bound<'_, PyAny>],
    cell: &Arc<BuilderCell>,
    attrs: Option<&Bound<'_, PyTuple>>,
    subgraphs: Option<&Bound<'_, PyTuple>>,
    counts: Option<&Bound<'_, PyTuple>>,
) -> Option<Vec<OutPort>> {
    let empty = |t: Option<&Bound<'_, PyTuple>>| t.is_none_or(|t| t.is_empty());
    if !(empty(attrs) && empty(subgraphs) && empty(counts))
        || items.len() != p.inputs.len()
        || p.inputs.iter().any(|d| d.kind == IoKind::Dynamic)
        || p.outputs.len() > 1
        || p.outputs.iter().any(|d| d.kind == IoKind::Dynamic)
    {
        return None;
    }
    let mut ports = Vec::with_capacity(items.len());
    for item in items {
        let t = item.downcast::<TensorHolder>().ok()?.get();
        if !Arc::ptr_eq(&t.cell, cell) {
            return None;
        }
        ports.push(t.port);
    }
    Some(ports)
}

guarded! {
    /// The entry of every generated op function.
    ///
    /// `inputs`: one item per IR input (a tensor, a TensorLike, None for an absent optional input,
    /// or a list for a dynamic input). `attrs`: attribute values in GE's parameter order (required
    /// ones, then those with defaults; None or the shown default: the library's default).
    /// `subgraphs`: one item per subgraph declaration (a Graph, or a list for a dynamic one).
    /// `counts`: one instance count per dynamic output, in output order (checked against a count
    /// rule where the library has one; may be left out for outputs with rules).
    #[pyfunction]
    #[pyo3(signature = (op_type, inputs, attrs = None, subgraphs = None, counts = None, owner_builder = None))]
    pub fn _call_op(
        py: Python<'_>,
        op_type: &str,
        inputs: &Bound<'_, PyTuple>,
        attrs: Option<&Bound<'_, PyTuple>>,
        subgraphs: Option<&Bound<'_, PyTuple>>,
        counts: Option<&Bound<'_, PyTuple>>,
        owner_builder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        call_op_impl(py, op_type, inputs, attrs, subgraphs, counts, owner_builder)
    }
}

pub fn call_op_impl(
    py: Python<'_>,
    op_type: &str,
    inputs: &Bound<'_, PyTuple>,
    attrs: Option<&Bound<'_, PyTuple>>,
    subgraphs: Option<&Bound<'_, PyTuple>>,
    counts: Option<&Bound<'_, PyTuple>>,
    owner_builder: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    // Find the builder: the first tensor among the inputs (or inside a list), else owner_builder.
    let items: Vec<Bound<'_, PyAny>> = inputs.iter().collect();
    let mut cell: Option<Arc<BuilderCell>> = None;
    let mut owner: Option<PyObject> = None;
    'find: for item in &items {
        if let Ok(t) = item.downcast::<TensorHolder>() {
            cell = Some(t.get().cell.clone());
            owner = Some(t.get().owner.clone_ref(py));
            break 'find;
        }
        let is_list = item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>();
        let cands: Vec<Bound<'_, PyAny>> = if is_list {
            item.try_iter()?.collect::<PyResult<_>>()?
        } else {
            vec![item.clone()]
        };
        for c in cands {
            if let Ok(t) = c.downcast::<TensorHolder>() {
                cell = Some(t.get().cell.clone());
                owner = Some(t.get().owner.clone_ref(py));
                break 'find;
            }
        }
    }
    if cell.is_none() {
        if let Some(b) = owner_builder {
            if !b.is_none() {
                let pb =
                    downcast_arg::<GraphBuilderBase>(b, "owner_builder must be a GraphBuilder")?;
                cell = Some(pb.get().cell.clone());
                owner = Some(b.clone().unbind());
            }
        }
    }
    let (Some(cell), Some(owner)) = (cell, owner) else {
        return Err(PyValueError::new_err(format!(
            "{op_type}: Please ensure at least one input tensor or an explicit owner_builder is provided when supported"
        )));
    };
    let mut st = cell.usable(op_type)?;
    let proto = st.b.proto(op_type).py()?;
    let p: &OpProto = &proto;
    // The common call: one tensor of this builder per (static) input, no attributes, no
    // subgraphs, no dynamic outputs. Exactly what the general path below does for it, without
    // its argument grouping; anything else (or an error) takes the general path.
    if let Some(ports) = plain_ports(p, &items, &cell, attrs, subgraphs, counts) {
        let node = st.b.add_op_ports(p, &ports).py()?;
        apply_scopes(&cell, &mut st, node)?;
        drop(st);
        return Ok(new_tensor(py, &cell, &owner, OutPort { node, index: 0 })?.into_any());
    }
    // Trailing optional inputs may be left out (internal callers such as `@`).
    let mut items = items;
    while items.len() < p.inputs.len() && p.inputs[items.len()].kind == IoKind::Optional {
        items.push(py.None().into_bound(py));
    }
    if items.len() != p.inputs.len() {
        return Err(PyTypeError::new_err(format!(
            "{}() takes {} inputs ({}), got {}",
            p.name,
            p.inputs.len(),
            p.inputs
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            items.len()
        )));
    }
    // One group of arguments per IR input: a list for a dynamic input is its instances; a list
    // for any other input is one TensorLike constant.
    let mut groups: Vec<Group<'_>> = Vec::with_capacity(items.len());
    for (def, item) in p.inputs.iter().zip(&items) {
        let is_list = item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>();
        if def.kind == IoKind::Dynamic {
            if !is_list {
                return Err(PyTypeError::new_err(format!(
                    "{}: input '{}' is dynamic and takes a list of tensors",
                    p.name, def.name
                )));
            }
            groups.push(Group::Many(
                item.try_iter()?
                    .map(|x| x.map(|x| classify(&x)))
                    .collect::<PyResult<_>>()?,
            ));
        } else if is_list {
            groups.push(Group::One(Arg::Like(item.clone())));
        } else {
            groups.push(Group::One(classify(item)));
        }
    }
    // Dtypes bound by the tensor inputs, for TensorLike conversion.
    let mut bound: Vec<(&str, DataType)> = Vec::new();
    for (def, g) in p.inputs.iter().zip(&groups) {
        if let TypeSpec::Var(v) = &def.ty {
            for a in g.args() {
                if let Arg::Tensor(t) = a {
                    let t = t.get();
                    if Arc::ptr_eq(&t.cell, &cell) {
                        if let Ok(d) = st.b.graph().out_desc(t.port) {
                            if d.dtype != DataType::UNDEFINED
                                && !bound.iter().any(|(k, _)| *k == v.as_str())
                            {
                                bound.push((v.as_str(), d.dtype));
                            }
                        }
                    }
                }
            }
        }
    }
    let mut op_args = OpArgs::default();
    op_args.inputs.reserve(groups.len());
    let mut created_consts: Vec<NodeId> = Vec::new();
    let result = (|| -> PyResult<NodeId> {
        for (def, g) in p.inputs.iter().zip(groups) {
            let what = || format!("{}: input '{}'", p.name, def.name);
            let args = match g {
                Group::One(a) => vec![a],
                Group::Many(v) => v,
            };
            let mut ports = Vec::with_capacity(args.len());
            // A number or list becomes a constant as GE's tensor_like makes it (ints DT_INT64,
            // any float DT_FLOAT) where the op promotes its operands (GE's rule decides the
            // result); elsewhere it takes the dtype its type variable is bound to, so that
            // `Pow(x, 2)` works for a float x where GE would need a cast.
            let promotes = es_core::infer::promotes(&p.name);
            let target = match &def.ty {
                TypeSpec::Var(_) if promotes => None,
                TypeSpec::Var(v) => bound
                    .iter()
                    .find(|(k, _)| *k == v.as_str())
                    .map(|(_, d)| *d),
                TypeSpec::List(l) if l.len() == 1 => Some(l[0]),
                _ => None,
            };
            for a in args {
                match a {
                    Arg::None => {
                        if def.kind == IoKind::Required {
                            return Err(PyTypeError::new_err(format!(
                                "{} is required, got None",
                                what()
                            )));
                        }
                        ports.push(None);
                    }
                    Arg::Tensor(t) => {
                        let t = t.get();
                        if !Arc::ptr_eq(&t.cell, &cell) {
                            return Err(PyValueError::new_err(format!(
                                "{} comes from GraphBuilder '{}', but the other inputs come from '{}'",
                                what(),
                                t.cell.name,
                                cell.name
                            )));
                        }
                        ports.push(Some(t.port));
                    }
                    Arg::Like(v) => {
                        let t = const_from_like(&v, target, &what())?;
                        let port = st.b.create_const(t, None).py()?;
                        created_consts.push(port.node);
                        ports.push(Some(port));
                    }
                }
            }
            op_args.inputs.push(ports);
        }
        // Attributes, in GE's parameter order (required ones, then those with defaults). Like
        // GE's generated C, a value equal to the default the signature shows sets nothing: the
        // node keeps the library's default, and a derived attribute (ConcatV2's N) is derived.
        if let Some(attrs) = attrs.filter(|a| !a.is_empty()) {
            let order = ge_attr_order(p);
            if attrs.len() > order.len() {
                return Err(PyTypeError::new_err(format!(
                    "{}() takes {} attributes, got {}",
                    p.name,
                    order.len(),
                    attrs.len()
                )));
            }
            for (def, v) in order.iter().zip(attrs.iter()) {
                if v.is_none() && def.default.is_some() {
                    continue;
                }
                let a = attr_from_py(&v, def.ty, &format!("{}: attribute '{}'", p.name, def.name))?;
                if def.default.as_ref().is_some_and(|d| is_ge_default(&a, d)) {
                    continue;
                }
                op_args.attrs.insert(def.name.clone(), a);
            }
        }
        // Subgraphs.
        if let Some(sgs) = subgraphs {
            for (def, v) in p.subgraphs.iter().zip(sgs.iter()) {
                let what = format!("{}: subgraph '{}'", p.name, def.name);
                let objs: Vec<Bound<'_, PyAny>> = match def.kind {
                    SubgraphKind::Static => vec![v],
                    SubgraphKind::Dynamic => {
                        if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
                            return Err(PyTypeError::new_err(format!(
                                "{what} takes a list of Graph"
                            )));
                        }
                        v.try_iter()?.collect::<PyResult<_>>()?
                    }
                };
                let mut graphs = Vec::new();
                for o in objs {
                    if o.downcast::<Graph>().is_err() {
                        return Err(PyTypeError::new_err(format!("{what} must be a Graph")));
                    }
                    let g = Graph::extract_graph_obj(&o)?;
                    graphs.push(g);
                }
                op_args.subgraphs.push(graphs);
            }
        }
        // Dynamic output counts: one per dynamic output (GE's `<output>_num`); where the library
        // has a count rule, the count must agree with it.
        let given: Vec<Bound<'_, PyAny>> = counts.map(|c| c.iter().collect()).unwrap_or_default();
        let dynamic: Vec<&str> = p
            .outputs
            .iter()
            .filter(|d| d.kind == IoKind::Dynamic)
            .map(|d| d.name.as_str())
            .collect();
        if !given.is_empty() && given.len() != dynamic.len() {
            return Err(PyTypeError::new_err(format!(
                "{}() takes {} output counts ({}), got {}",
                p.name,
                dynamic.len(),
                dynamic
                    .iter()
                    .map(|d| format!("{d}_num"))
                    .collect::<Vec<_>>()
                    .join(", "),
                given.len()
            )));
        }
        for (k, out) in dynamic.iter().enumerate() {
            let n = match given.get(k) {
                None => None,
                Some(c) => {
                    let n: i64 = c.extract().map_err(|_| {
                        PyTypeError::new_err(format!("{}: {out}_num must be an int", p.name))
                    })?;
                    if n < 0 {
                        return Err(PyValueError::new_err(format!(
                            "{}: {out}_num must be >= 0, got {n}",
                            p.name
                        )));
                    }
                    Some(n)
                }
            };
            // es-core checks a count against the library's rule where there is one.
            match (n, p.output_counts.contains_key(*out)) {
                (Some(n), _) => {
                    op_args.output_counts.insert(out.to_string(), n as usize);
                }
                (None, true) => {}
                (None, false) => {
                    return Err(PyTypeError::new_err(format!(
                        "{}: {out}_num is required",
                        p.name
                    )))
                }
            }
        }
        // Move subgraphs: validated first, then marked moved (exactly once).
        let node = st.b.add_op_with(p, std::mem::take(&mut op_args)).py()?;
        Ok(node)
    })();
    let node = match result {
        Ok(n) => n,
        Err(e) => {
            for c in created_consts {
                let _ = st.b.graph_mut().remove_node(c);
            }
            return Err(e);
        }
    };
    if let Err(e) = apply_scopes(&cell, &mut st, node) {
        for c in created_consts {
            let _ = st.b.graph_mut().remove_node(c);
        }
        return Err(e);
    }
    // Subgraph objects passed in are now owned by this node.
    if let Some(sgs) = subgraphs {
        let node_name =
            st.b.graph()
                .node(node)
                .map(|n| n.name.clone())
                .unwrap_or_default();
        for v in sgs.iter() {
            let objs: Vec<Bound<'_, PyAny>> =
                if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
                    v.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![v]
                };
            for o in objs {
                Graph::mark_moved(
                    &o,
                    &format!("node '{}' of GraphBuilder '{}'", node_name, cell.name),
                )?;
            }
        }
    }
    // One output, or none (GE's handle on the node, for control edges).
    if p.outputs.len() <= 1 && p.outputs.first().is_none_or(|d| d.kind != IoKind::Dynamic) {
        drop(st);
        return Ok(new_tensor(py, &cell, &owner, OutPort { node, index: 0 })?.into_any());
    }
    let n = st.b.graph().node(node).py()?;
    let outs: Vec<(u32, u32)> = n
        .outputs
        .iter()
        .enumerate()
        .map(|(i, o)| (i as u32, o.ir_index))
        .collect();
    drop(st);
    let mut per_ir: Vec<PyObject> = Vec::with_capacity(p.outputs.len());
    for (ir, def) in p.outputs.iter().enumerate() {
        let ts: Vec<Py<TensorHolder>> = outs
            .iter()
            .filter(|(_, oir)| *oir as usize == ir)
            .map(|(i, _)| new_tensor(py, &cell, &owner, OutPort { node, index: *i }))
            .collect::<PyResult<_>>()?;
        if def.kind == IoKind::Dynamic {
            per_ir.push(PyList::new(py, ts)?.into_any().unbind());
        } else if let Some(t) = ts.into_iter().next() {
            per_ir.push(t.into_any());
        }
    }
    if p.outputs.len() == 1 {
        return Ok(per_ir.remove(0));
    }
    Ok(PyTuple::new(py, per_ir)?.into_any().unbind())
}
