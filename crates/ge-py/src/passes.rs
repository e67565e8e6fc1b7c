//! `ge.passes` glue: the native classes of GE's pass API (`Pattern`, `MatchResult`,
//! `PassContext`, `PatternMatcherConfig(Builder)`, `SubgraphInput/Output/Boundary`,
//! `SubgraphRewriter`, `can_fuse`, `report_fuse`, `infer_shape`), the adapters that run Python
//! pass classes through pass-bridge's executor, and the process-wide pass registry.
//!
//! Views handed to a pass (graph, nodes, match results, context) point at a per-run
//! [`GraphCell`]; the graph is swapped into that cell only while a Python hook runs, and the
//! cell is marked expired when the run ends, so a view kept past its run raises
//! `RuntimeError("graph handle has expired")`. The GIL is released while the executor matches
//! and rewrites, and taken only around Python hooks.

use crate::builder::{GraphBuilderBase, TensorHolder};
use crate::convert::{downcast_arg, set_fields};
use crate::errors::IntoPyResult;
use crate::graph::{Graph, Node};
use crate::guard::guarded;
use crate::source::{GraphCell, GraphSource, GraphState};
use es_core::pattern::{
    MatchResult as CoreMatchResult, Pattern as CorePattern,
    PatternMatcherConfig as CoreMatcherConfig, SubgraphBoundary as CoreBoundary,
};
use es_core::{DataType, Format, Graph as CoreGraph, InPort, NodeId, OutPort, Shape};
use pass_bridge::{
    Decision, DecomposePass, FusionPass, HookError, HookResult, PassContext as CorePassContext,
    PassDescriptor, PassInstance, PassKind, PassRegistry, PassStage, PatternFusionPass, RunOptions,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLockWriteGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn write_cell(c: &GraphCell) -> RwLockWriteGuard<'_, GraphState> {
    c.state.write().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Exceptions raised by pass code
// ---------------------------------------------------------------------------------------------

static SKIP_EXC: GILOnceCell<PyObject> = GILOnceCell::new();
static FATAL_EXC: GILOnceCell<PyObject> = GILOnceCell::new();
static NODE_IO: GILOnceCell<PyObject> = GILOnceCell::new();

fn passes_attr<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<PyObject>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let o = cell.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import(module)?.getattr(name)?.unbind())
    })?;
    Ok(o.bind(py).clone())
}

/// The last Python exception that failed a pass, chained as `__cause__` of the `PassError`.
static LAST_FAILURE: Mutex<Option<PyErr>> = Mutex::new(None);

/// A Python exception from a hook → how the executor treats it.
fn classify(py: Python<'_>, e: PyErr) -> HookError {
    let is = |cell: &'static GILOnceCell<PyObject>, name: &str| {
        passes_attr(py, cell, "ge.passes.errors", name)
            .map(|t| e.is_instance(py, &t))
            .unwrap_or(false)
    };
    let msg = e.value(py).to_string();
    if is(&SKIP_EXC, "PassSkipException") {
        return HookError::Skip(msg);
    }
    if is(&FATAL_EXC, "PassFatalError") {
        return HookError::Fatal(msg);
    }
    let text = py
        .import("traceback")
        .and_then(|tb| {
            tb.call_method1(
                "format_exception",
                (e.get_type(py), e.value(py), e.traceback(py)),
            )
        })
        .and_then(|lines| lines.extract::<Vec<String>>())
        .map(|l| l.concat())
        .unwrap_or_else(|_| format!("{}: {msg}", e.get_type(py)));
    *lock(&LAST_FAILURE) = Some(e);
    HookError::Failed(text.trim_end().to_string())
}

// ---------------------------------------------------------------------------------------------
// PassContext
// ---------------------------------------------------------------------------------------------

/// GE's `PassContext`: the pass name, an error message, and the compile options.
#[pyclass(module = "ge._native", frozen)]
pub struct PassContext {
    inner: Mutex<CorePassContext>,
    expired: AtomicBool,
}

impl PassContext {
    fn with<R>(&self, f: impl FnOnce(&mut CorePassContext) -> R) -> PyResult<R> {
        if self.expired.load(Ordering::Acquire) {
            return Err(PyRuntimeError::new_err("pass context has expired"));
        }
        Ok(f(&mut lock(&self.inner)))
    }
}

guarded! {
    #[pymethods]
    impl PassContext {
        /// A context for calling a pass by hand (in tests); the executor makes its own.
        #[new]
        #[pyo3(signature = (pass_name = String::new(), options = None))]
        fn py_new(pass_name: String, options: Option<BTreeMap<String, String>>) -> PyResult<Self> {
            Ok(PassContext {
                inner: Mutex::new(CorePassContext::new(pass_name, options.unwrap_or_default())),
                expired: AtomicBool::new(false),
            })
        }
        fn get_pass_name(&self) -> PyResult<String> {
            self.with(|c| c.pass_name().to_string())
        }
        fn set_pass_name(&self, name: String) -> PyResult<()> {
            self.with(|c| c.set_pass_name(name))
        }
        fn get_error_message(&self) -> PyResult<String> {
            self.with(|c| c.error_message().to_string())
        }
        fn set_error_message(&self, message: String) -> PyResult<()> {
            self.with(|c| c.set_error_message(message))
        }
        /// The value of a compile option; RuntimeError when it is not set.
        fn get_option_value(&self, key: &str) -> PyResult<String> {
            self.with(|c| c.option(key).map(str::to_string))?
                .ok_or_else(|| PyRuntimeError::new_err(format!("option '{key}' is not set")))
        }
        /// The fusions reported so far, as (names before, names after) pairs.
        fn get_fusion_reports(&self) -> PyResult<Vec<(Vec<String>, Vec<String>)>> {
            self.with(|c| {
                c.fusion_reports()
                    .iter()
                    .map(|r| (r.before.clone(), r.after.clone()))
                    .collect()
            })
        }
        fn __repr__(&self) -> PyResult<String> {
            self.with(|c| format!("PassContext(pass_name={:?})", c.pass_name()))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PatternMatcherConfig(Builder)
// ---------------------------------------------------------------------------------------------

/// GE's `PatternMatcherConfig`. GE's default matches neither const values nor IR attributes;
/// commutative matching (beyond GE) is off unless enabled.
#[pyclass(module = "ge._native", frozen)]
#[derive(Clone)]
pub struct PatternMatcherConfig {
    cfg: CoreMatcherConfig,
}

fn ge_default_config() -> CoreMatcherConfig {
    CoreMatcherConfig {
        const_value_match: false,
        ir_attr_match: false,
        commutative: false,
    }
}

guarded! {
    #[pymethods]
    impl PatternMatcherConfig {
        #[new]
        fn py_new() -> PyResult<Self> {
            Ok(PatternMatcherConfig {
                cfg: ge_default_config(),
            })
        }
        fn is_enable_const_value_match(&self) -> bool {
            self.cfg.const_value_match
        }
        fn is_enable_ir_attr_match(&self) -> bool {
            self.cfg.ir_attr_match
        }
        fn is_enable_commutative_match(&self) -> bool {
            self.cfg.commutative
        }
        fn __repr__(&self) -> String {
            format!(
                "PatternMatcherConfig(const_value_match={}, ir_attr_match={}, commutative_match={})",
                self.cfg.const_value_match, self.cfg.ir_attr_match, self.cfg.commutative
            )
        }
    }
}

/// GE's fluent `PatternMatcherConfigBuilder`.
#[pyclass(module = "ge._native", frozen)]
pub struct PatternMatcherConfigBuilder {
    cfg: Mutex<CoreMatcherConfig>,
}

guarded! {
    #[pymethods]
    impl PatternMatcherConfigBuilder {
        #[new]
        fn py_new() -> PyResult<Self> {
            Ok(PatternMatcherConfigBuilder {
                cfg: Mutex::new(ge_default_config()),
            })
        }
        fn enable_const_value_match(slf: Py<Self>, py: Python<'_>) -> Py<Self> {
            lock(&slf.get().cfg).const_value_match = true;
            slf.clone_ref(py)
        }
        fn enable_ir_attr_match(slf: Py<Self>, py: Python<'_>) -> Py<Self> {
            lock(&slf.get().cfg).ir_attr_match = true;
            slf.clone_ref(py)
        }
        /// Beyond GE: two-input ops the library marks commutative also match with swapped inputs.
        fn enable_commutative_match(slf: Py<Self>, py: Python<'_>) -> Py<Self> {
            lock(&slf.get().cfg).commutative = true;
            slf.clone_ref(py)
        }
        fn build(&self) -> PyResult<PatternMatcherConfig> {
            Ok(PatternMatcherConfig {
                cfg: *lock(&self.cfg),
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pattern
// ---------------------------------------------------------------------------------------------

/// Captured tensors of a pattern: (pattern node, output index), in capture order.
type Captures = Vec<(NodeId, u32)>;

/// What the match views of one pattern share.
struct PatternMeta {
    /// Captured (pattern node, output index), in capture order.
    captures: Captures,
    /// Pattern inputs (Data nodes) in input-index order.
    inputs: Vec<NodeId>,
}

struct PatternState {
    pattern: CorePattern,
    /// Captured tensors: (pattern node, output index), in capture order.
    captures: Vec<(NodeId, u32)>,
    released: bool,
}

/// GE's `Pattern`: a pattern graph plus the tensors captured for `MatchResult`.
#[pyclass(module = "ge._native", frozen)]
pub struct Pattern {
    /// The pattern graph, for the node views of `get_captured_tensors`.
    cell: Arc<GraphCell>,
    state: Mutex<PatternState>,
}

impl Pattern {
    fn from_graph(graph: &Bound<'_, PyAny>) -> PyResult<Self> {
        let g = Graph::extract_graph_obj(graph).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(graph.py()) {
                PyTypeError::new_err("Pattern() needs a ge.graph.Graph")
            } else {
                e
            }
        })?;
        let pattern = CorePattern::new(g.clone()).py()?;
        Graph::mark_moved(graph, &format!("pattern '{}'", pattern.name()))?;
        Ok(Pattern {
            cell: GraphCell::new(g),
            state: Mutex::new(PatternState {
                pattern,
                captures: Vec::new(),
                released: false,
            }),
        })
    }

    /// The pattern and its captures, for the executor.
    fn take(&self) -> (CorePattern, Vec<(NodeId, u32)>) {
        let mut st = lock(&self.state);
        st.released = true;
        (st.pattern.clone(), st.captures.clone())
    }
}

/// (node id, output index) of a TensorHolder, Node or NodeIo-like object.
fn port_of(source: &Bound<'_, PyAny>, index: Option<i64>, what: &str) -> PyResult<(NodeId, u32)> {
    let idx = |default: u32| -> PyResult<u32> {
        match index {
            None => Ok(default),
            Some(i) => u32::try_from(i)
                .map_err(|_| PyValueError::new_err(format!("{what}: bad output index {i}"))),
        }
    };
    if let Ok(t) = source.downcast::<TensorHolder>() {
        let p = t.get().port;
        return Ok((p.node, idx(p.index)?));
    }
    if let Ok(n) = source.downcast::<Node>() {
        return Ok((n.get().id, idx(0)?));
    }
    if let (Ok(node), Ok(i)) = (source.getattr("node"), source.getattr("index")) {
        if index.is_some() {
            return Err(PyValueError::new_err(format!(
                "{what}: pass no index with a NodeIo"
            )));
        }
        let n = downcast_arg::<Node>(&node, format!("{what}: NodeIo.node must be a Node"))?;
        let i: u32 = i.extract()?;
        return Ok((n.get().id, i));
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected a TensorHolder, a Node or a NodeIo, got {}",
        source.get_type().name()?
    )))
}

fn node_io(py: Python<'_>, src: &GraphSource, port: OutPort) -> PyResult<PyObject> {
    let cls = passes_attr(py, &NODE_IO, "ge.passes.pattern", "NodeIo")?;
    let node = Py::new(py, Node::new(src.clone(), port.node))?;
    Ok(cls.call1((node, port.index))?.unbind())
}

guarded! {
    #[pymethods]
    impl Pattern {
        /// Moves `graph` into the pattern: the graph object can be read but no longer changed.
        #[new]
        fn py_new(graph: &Bound<'_, PyAny>) -> PyResult<Self> {
            Pattern::from_graph(graph)
        }

        /// Captures a tensor of the pattern graph (a TensorHolder or Node of it, with an output
        /// index, or a NodeIo); `MatchResult.get_captured_tensor(i)` returns the i-th capture's
        /// match. Returns the pattern, for chaining.
        #[pyo3(signature = (source, index = None))]
        fn capture_tensor(
            slf: Py<Self>,
            py: Python<'_>,
            source: &Bound<'_, PyAny>,
            index: Option<i64>,
        ) -> PyResult<Py<Self>> {
            let (node, out) = port_of(source, index, "capture_tensor")?;
            {
                let this = slf.get();
                let mut st = lock(&this.state);
                if st.released {
                    return Err(PyRuntimeError::new_err("the pattern has been released"));
                }
                let g = st.pattern.graph();
                let n = g.node(node).map_err(|_| {
                    PyValueError::new_err(
                        "capture_tensor: the tensor does not belong to this pattern's graph",
                    )
                })?;
                if out as usize >= n.outputs.len() {
                    return Err(PyValueError::new_err(format!(
                        "capture_tensor: node '{}' has {} outputs, no output {out}",
                        n.name,
                        n.outputs.len()
                    )));
                }
                st.captures.push((node, out));
            }
            Ok(slf.clone_ref(py))
        }

        fn get_captured_tensors(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
            let caps = lock(&self.state).captures.clone();
            let src = GraphSource::Cell(self.cell.clone());
            caps.into_iter()
                .map(|(n, i)| node_io(py, &src, OutPort { node: n, index: i }))
                .collect()
        }

        fn is_valid(&self) -> bool {
            !lock(&self.state).released
        }

        /// Hands the pattern to the executor (GE's bridge calls this; pass code need not). Returns
        /// an opaque handle; afterwards `is_valid()` is False.
        fn release(&self) -> PyResult<u64> {
            let mut st = lock(&self.state);
            if st.released {
                return Err(PyRuntimeError::new_err(
                    "the pattern has already been released",
                ));
            }
            st.released = true;
            Ok(Arc::as_ptr(&self.cell) as u64)
        }

        /// The pattern graph's name.
        #[getter]
        fn name(&self) -> String {
            lock(&self.state).pattern.name().to_string()
        }

        /// Beyond GE: why this pattern does (not) match with `node` as its anchor (the node of its
        /// first output). Returns the match text or the reason.
        #[pyo3(signature = (node, config = None))]
        fn explain(
            &self,
            node: &Bound<'_, PyAny>,
            config: Option<PyRef<'_, PatternMatcherConfig>>,
        ) -> PyResult<String> {
            let n = downcast_arg::<Node>(node, "explain: node must be a Node")?;
            let n = n.get();
            let cfg = config.map(|c| c.cfg).unwrap_or_else(ge_default_config);
            let pattern = lock(&self.state).pattern.clone();
            n.src.read(&n.path, |g| {
                match es_core::pattern::explain_match(g, &pattern, cfg, n.id).py()? {
                    es_core::pattern::MatchExplanation::Matched(m) => Ok(m.to_text(g)),
                    es_core::pattern::MatchExplanation::NoMatch(r) => Ok(format!("no match: {r}")),
                }
            })
        }

        fn __repr__(&self) -> String {
            let st = lock(&self.state);
            format!(
                "Pattern(name={:?}, captures={}, valid={})",
                st.pattern.name(),
                st.captures.len(),
                !st.released
            )
        }
    }
}

/// `patterns()` item → (pattern, captures).
fn to_pattern(item: &Bound<'_, PyAny>) -> PyResult<(CorePattern, Vec<(NodeId, u32)>)> {
    if let Ok(p) = item.downcast::<Pattern>() {
        return Ok(p.get().take());
    }
    if item.downcast::<Graph>().is_ok() {
        let p = Pattern::from_graph(item)?;
        return Ok(p.take());
    }
    Err(PyTypeError::new_err(format!(
        "patterns() must return Pattern or Graph objects, got {}",
        item.get_type().name()?
    )))
}

// ---------------------------------------------------------------------------------------------
// MatchResult
// ---------------------------------------------------------------------------------------------

/// GE's `MatchResult`: one match, valid during the hook it is passed to.
#[pyclass(module = "ge._native", frozen)]
pub struct MatchResult {
    m: Arc<CoreMatchResult>,
    /// Of the matched pattern: its captures and its inputs (shared by all its matches).
    meta: Arc<PatternMeta>,
    cell: Arc<GraphCell>,
    valid: AtomicBool,
}

impl MatchResult {
    fn check(&self) -> PyResult<()> {
        if !self.valid.load(Ordering::Acquire) {
            return Err(PyRuntimeError::new_err("graph handle has expired"));
        }
        self.cell.check()
    }
    fn src(&self) -> GraphSource {
        GraphSource::Cell(self.cell.clone())
    }
    /// The dtype, format and dims of each of the match's inputs, in input order.
    fn input_descs(&self) -> PyResult<Vec<(DataType, Format, Vec<i64>)>> {
        self.check()?;
        self.src().read(&Vec::new(), |g| {
            self.m
                .inputs
                .iter()
                .map(|p| {
                    let d = g.out_desc(*p).py()?;
                    Ok((d.dtype, d.format, d.shape.dims().to_vec()))
                })
                .collect()
        })
    }
    fn capture_port(&self, i: usize) -> PyResult<OutPort> {
        let (pn, idx) = *self.meta.captures.get(i).ok_or_else(|| {
            PyValueError::new_err(format!(
                "capture index {i} out of range: the pattern captured {} tensors",
                self.meta.captures.len()
            ))
        })?;
        self.m
            .target_port(&self.meta.inputs, pn, idx)
            .map_err(PyRuntimeError::new_err)
    }
}

guarded! {
    #[pymethods]
    impl MatchResult {
        /// The matched nodes of the target graph, in pattern order.
        fn get_matched_nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<Node>>> {
            self.check()?;
            self.m
                .target_nodes()
                .into_iter()
                .map(|id| Py::new(py, Node::new(self.src(), id)))
                .collect()
        }
        /// The target tensor of the `capture_index`-th captured tensor, as a NodeIo.
        fn get_captured_tensor(&self, py: Python<'_>, capture_index: usize) -> PyResult<PyObject> {
            self.check()?;
            let p = self.capture_port(capture_index)?;
            node_io(py, &self.src(), p)
        }
        /// Beyond GE: every captured tensor, in capture order.
        fn get_captured_tensors(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
            self.check()?;
            (0..self.meta.captures.len())
                .map(|i| node_io(py, &self.src(), self.capture_port(i)?))
                .collect()
        }
        /// How many inputs the match has (the pattern's Data nodes).
        fn _num_inputs(&self) -> usize {
            self.m.inputs.len()
        }
        /// The descriptions of the match's inputs, in input order, as (dtype value, dims, format
        /// value): expression-style replacements create their inputs with them.
        fn _input_descs(&self) -> PyResult<Vec<(i32, Vec<i64>, i32)>> {
            Ok(self
                .input_descs()?
                .into_iter()
                .map(|(dt, fmt, dims)| (dt.value(), dims, fmt.value()))
                .collect())
        }
        /// Creates the match's inputs in `builder` (a replacement's builder), in input order:
        /// input `i` named `input_<i>`, a `Data` node with the dtype, shape and format of the
        /// matched tensor it stands for; the same nodes as `_create_input(i, None, "Data", ...)`
        /// with [`MatchResult::_input_descs`]' values, in one call.
        fn _create_inputs(
            &self,
            builder: &Bound<'_, GraphBuilderBase>,
        ) -> PyResult<Vec<Py<TensorHolder>>> {
            self.input_descs()?
                .into_iter()
                .enumerate()
                .map(|(i, (dt, fmt, dims))| {
                    GraphBuilderBase::add_node(builder, "create input", |b| {
                        b.create_input(i as i64, None, "Data", dt, fmt, Shape::new(dims))
                    })
                })
                .collect()
        }
        fn get_pattern_graph_name(&self) -> PyResult<String> {
            self.check()?;
            Ok(self.m.pattern_name.to_string())
        }
        /// The match as a `SubgraphBoundary` (its inputs and outputs, in pattern order).
        fn to_boundary(&self, py: Python<'_>) -> PyResult<SubgraphBoundary> {
            self.check()?;
            let b = self.m.to_boundary();
            let src = self.src();
            let inputs = self.cell.read_state()?;
            boundary_from_es(py, &inputs.graph, &src, &b)
        }
        /// GE's bridge invalidates a match after the hook; pass code should not call this.
        fn _invalidate(&self) -> PyResult<()> {
            self.valid.store(false, Ordering::Release);
            Ok(())
        }
        fn __str__(&self) -> PyResult<String> {
            self.check()?;
            GraphSource::Cell(self.cell.clone()).read(&Vec::new(), |g| Ok(self.m.to_text(g)))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SubgraphInput / SubgraphOutput / SubgraphBoundary / SubgraphRewriter
// ---------------------------------------------------------------------------------------------

/// One anchor: a node view and a port index.
struct Anchor {
    node: Py<Node>,
    index: u32,
}

impl Anchor {
    fn in_port(&self) -> InPort {
        InPort {
            node: self.node.get().id,
            index: self.index,
        }
    }
    fn out_port(&self) -> OutPort {
        OutPort {
            node: self.node.get().id,
            index: self.index,
        }
    }
    fn clone_ref(&self, py: Python<'_>) -> Anchor {
        Anchor {
            node: self.node.clone_ref(py),
            index: self.index,
        }
    }
}

fn anchor(node: &Bound<'_, PyAny>, index: i64, what: &str) -> PyResult<Anchor> {
    let n = downcast_arg::<Node>(node, format!("{what}: expected a Node"))?;
    let index = u32::try_from(index)
        .map_err(|_| PyValueError::new_err(format!("{what}: bad index {index}")))?;
    Ok(Anchor {
        node: n.clone().unbind(),
        index,
    })
}

/// GE's `SubgraphInput`: one logical input of a boundary, as the input anchors (node, input
/// index) inside the boundary that it feeds; all must be fed by one producer.
#[pyclass(module = "ge._native", frozen)]
pub struct SubgraphInput {
    anchors: Mutex<Vec<Anchor>>,
}

guarded! {
    #[pymethods]
    impl SubgraphInput {
        #[new]
        #[pyo3(signature = (node_inputs = None))]
        fn py_new(node_inputs: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
            let mut anchors = Vec::new();
            if let Some(items) = node_inputs {
                for item in items.try_iter()? {
                    let item = item?;
                    let t = item.downcast::<PyTuple>().map_err(|_| {
                        PyRuntimeError::new_err(
                            "SubgraphInput: each item must be a (node, index) tuple",
                        )
                    })?;
                    if t.len() != 2 {
                        return Err(PyRuntimeError::new_err(
                            "SubgraphInput: each item must be a (node, index) tuple",
                        ));
                    }
                    anchors.push(anchor(
                        &t.get_item(0)?,
                        t.get_item(1)?.extract()?,
                        "SubgraphInput",
                    )?);
                }
            }
            Ok(SubgraphInput {
                anchors: Mutex::new(anchors),
            })
        }
        /// Adds an input anchor (a node inside the boundary and one of its input indexes); returns
        /// 0.
        fn add_input(&self, node: &Bound<'_, PyAny>, index: i64) -> PyResult<u32> {
            lock(&self.anchors).push(anchor(node, index, "SubgraphInput.add_input")?);
            Ok(0)
        }
    }
}

/// GE's `SubgraphOutput`: one output of a boundary, a (node, output index) inside it.
#[pyclass(module = "ge._native", frozen)]
pub struct SubgraphOutput {
    anchor: Mutex<Option<Anchor>>,
}

guarded! {
    #[pymethods]
    impl SubgraphOutput {
        #[new]
        #[pyo3(signature = (node = None, index = 0))]
        fn py_new(node: Option<&Bound<'_, PyAny>>, index: i64) -> PyResult<Self> {
            let a = match node {
                Some(n) => Some(anchor(n, index, "SubgraphOutput")?),
                None => None,
            };
            Ok(SubgraphOutput {
                anchor: Mutex::new(a),
            })
        }
        fn set_output(&self, node: &Bound<'_, PyAny>, index: i64) -> PyResult<u32> {
            *lock(&self.anchor) = Some(anchor(node, index, "SubgraphOutput.set_output")?);
            Ok(0)
        }
    }
}

/// GE's `SubgraphBoundary`: logical input and output slots, in replacement-graph order.
#[pyclass(module = "ge._native", frozen)]
pub struct SubgraphBoundary {
    inputs: Mutex<BTreeMap<u32, Vec<Anchor>>>,
    outputs: Mutex<BTreeMap<u32, Anchor>>,
}

fn slot(index: i64, what: &str) -> PyResult<u32> {
    u32::try_from(index).map_err(|_| PyValueError::new_err(format!("{what}: bad slot {index}")))
}

guarded! {
    #[pymethods]
    impl SubgraphBoundary {
        #[new]
        fn py_new() -> PyResult<Self> {
            Ok(SubgraphBoundary {
                inputs: Mutex::new(BTreeMap::new()),
                outputs: Mutex::new(BTreeMap::new()),
            })
        }
        fn add_input(&self, index: i64, input: PyRef<'_, SubgraphInput>) -> PyResult<u32> {
            let i = slot(index, "SubgraphBoundary.add_input")?;
            let anchors: Vec<Anchor> = lock(&input.anchors)
                .iter()
                .map(|a| a.clone_ref(input.py()))
                .collect();
            if anchors.is_empty() {
                return Err(PyValueError::new_err(
                    "SubgraphBoundary.add_input: the SubgraphInput has no anchor",
                ));
            }
            lock(&self.inputs).insert(i, anchors);
            Ok(0)
        }
        fn add_output(&self, index: i64, output: PyRef<'_, SubgraphOutput>) -> PyResult<u32> {
            let i = slot(index, "SubgraphBoundary.add_output")?;
            let a = lock(&output.anchor)
                .as_ref()
                .map(|a| a.clone_ref(output.py()))
                .ok_or_else(|| {
                    PyValueError::new_err("SubgraphBoundary.add_output: the SubgraphOutput is not set")
                })?;
            lock(&self.outputs).insert(i, a);
            Ok(0)
        }
        /// The first anchor (node, input index) of each input slot, in slot order
        /// (`ge.passes.infer_shape` reads the boundary's input descriptions through them).
        fn _input_anchors(&self, py: Python<'_>) -> Vec<(Py<Node>, u32)> {
            lock(&self.inputs)
                .values()
                .filter_map(|v| v.first())
                .map(|a| (a.node.clone_ref(py), a.index))
                .collect()
        }
    }
}

/// A boundary from a match (for `MatchResult.to_boundary`): input slot i is every anchor inside
/// the match fed by the match's input i ([`SubgraphBoundary::input_anchors`]).
fn boundary_from_es(
    py: Python<'_>,
    g: &CoreGraph,
    src: &GraphSource,
    b: &CoreBoundary,
) -> PyResult<SubgraphBoundary> {
    let view = |node: NodeId, index: u32| -> PyResult<Anchor> {
        Ok(Anchor {
            node: Py::new(py, Node::new(src.clone(), node))?,
            index,
        })
    };
    let mut inputs = BTreeMap::new();
    for (i, ports) in b.input_anchors(g).py()?.into_iter().enumerate() {
        let anchors = ports
            .into_iter()
            .map(|c| view(c.node, c.index))
            .collect::<PyResult<Vec<_>>>()?;
        inputs.insert(i as u32, anchors);
    }
    let mut outputs = BTreeMap::new();
    for (j, p) in b.outputs.iter().enumerate() {
        outputs.insert(j as u32, view(p.node, p.index)?);
    }
    Ok(SubgraphBoundary {
        inputs: Mutex::new(inputs),
        outputs: Mutex::new(outputs),
    })
}

/// The graph source shared by every node of a boundary.
fn common_source<'a>(nodes: impl Iterator<Item = &'a Node>) -> PyResult<GraphSource> {
    let mut src: Option<&GraphSource> = None;
    for n in nodes {
        if !n.path.is_empty() {
            return Err(PyValueError::new_err(
                "not supported: rewriting inside a subgraph view (rewrite the subgraph's own graph)",
            ));
        }
        match src {
            None => src = Some(&n.src),
            Some(s) if s.same(&n.src) => {}
            Some(_) => {
                return Err(PyValueError::new_err(
                    "the boundary's nodes belong to different graphs",
                ))
            }
        }
    }
    src.cloned()
        .ok_or_else(|| PyValueError::new_err("the boundary has no inputs or outputs"))
}

fn node_ids(nodes: &Bound<'_, PyAny>, what: &str) -> PyResult<(Option<GraphSource>, Vec<NodeId>)> {
    let mut views: Vec<Py<Node>> = Vec::new();
    for n in nodes.try_iter()? {
        let n = n?;
        let v = n.downcast::<Node>().map_err(|_| {
            PyTypeError::new_err(format!("{what}: nodes must be ge.graph.Node objects"))
        })?;
        views.push(v.clone().unbind());
    }
    if views.is_empty() {
        return Ok((None, Vec::new()));
    }
    let src = common_source(views.iter().map(|v| v.get()))?;
    Ok((Some(src), views.iter().map(|v| v.get().id).collect()))
}

guarded! {
    /// `can_fuse(nodes) -> (ok, reason)`: whether the nodes can become one node without creating a
    /// cycle.
    #[pyfunction]
    pub fn _can_fuse(nodes: &Bound<'_, PyAny>) -> PyResult<(bool, String)> {
        let (src, ids) = node_ids(nodes, "can_fuse")?;
        let Some(src) = src else {
            return Ok((false, "no nodes to fuse".into()));
        };
        src.read(&Vec::new(), |g| {
            Ok(match es_core::pattern::can_fuse(g, &ids) {
                Ok(()) => (true, String::new()),
                Err(why) => (false, why),
            })
        })
    }
}

fn names(src: &Option<GraphSource>, ids: &[NodeId]) -> PyResult<Vec<String>> {
    match src {
        None => Ok(Vec::new()),
        Some(s) => s.read(&Vec::new(), |g| {
            ids.iter()
                .map(|id| {
                    g.node(*id).map(|n| n.name.to_string()).map_err(|_| {
                        PyRuntimeError::new_err("a node has been removed from its graph")
                    })
                })
                .collect()
        }),
    }
}

guarded! {
    /// `report_fuse(nodes_before, nodes_after, context)`: records a fusion done by hand.
    #[pyfunction]
    pub fn _report_fuse(
        nodes_before: &Bound<'_, PyAny>,
        nodes_after: &Bound<'_, PyAny>,
        context: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let ctx = downcast_arg::<PassContext>(context, "report_fuse: context must be a PassContext")?;
        let (sb, before) = node_ids(nodes_before, "report_fuse")?;
        let (sa, after) = node_ids(nodes_after, "report_fuse")?;
        let (before, after) = (names(&sb, &before)?, names(&sa, &after)?);
        ctx.get().with(|c| c.report_fuse(before, after))
    }
}

/// `SubgraphRewriter.replace(boundary, replacement, context=None)`.
#[pyclass(module = "ge._native", frozen)]
pub struct SubgraphRewriter;

guarded! {
    #[pymethods]
    impl SubgraphRewriter {
        /// Replaces the boundary's subgraph by a copy of `replacement`. Returns 0; raises
        /// GraphBuildError/ValueError naming the problem (the graph is unchanged then). With a
        /// `context`, checks `can_fuse` first and reports the fusion.
        #[staticmethod]
        #[pyo3(signature = (boundary, replacement, context = None))]
        fn replace(
            py: Python<'_>,
            boundary: PyRef<'_, SubgraphBoundary>,
            replacement: &Bound<'_, PyAny>,
            context: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<u32> {
            if replacement.downcast::<Graph>().is_err() {
                return Err(PyTypeError::new_err(
                    "SubgraphRewriter.replace: replacement must be a ge.graph.Graph",
                ));
            }
            let rep = Graph::extract_graph_obj(replacement)?;
            let (inputs, outputs) = {
                let ins = lock(&boundary.inputs);
                let outs = lock(&boundary.outputs);
                let inputs: Vec<(u32, Vec<InPort>)> = ins
                    .iter()
                    .map(|(k, v)| (*k, v.iter().map(Anchor::in_port).collect()))
                    .collect();
                let outputs: Vec<(u32, OutPort)> =
                    outs.iter().map(|(k, a)| (*k, a.out_port())).collect();
                let views: Vec<Py<Node>> = ins
                    .values()
                    .flatten()
                    .chain(outs.values())
                    .map(|a| a.node.clone_ref(py))
                    .collect();
                (inputs, (outputs, views))
            };
            let (outputs, views) = outputs;
            let src = common_source(views.iter().map(|v| v.get()))?;
            let ctx = match context {
                Some(c) => {
                    Some(downcast_arg::<PassContext>(c, "context must be a PassContext")?.clone())
                }
                None => None,
            };
            let report = src.write(&Vec::new(), "rewrite a subgraph", |g| {
                es_core::pattern::replace_boundary(g, &inputs, &outputs, &rep, ctx.is_some()).py()
            })?;
            if let Some(c) = ctx {
                c.get()
                    .with(|c| c.report_fuse(report.before, report.after))?;
            }
            Ok(0)
        }
    }
}

guarded! {
    /// `infer_shape(node_or_graph)`: re-runs shape and dtype inference for a node (from its
    /// producers' descriptions) or for a whole graph in topological order.
    #[pyfunction]
    pub fn _infer_shape(target: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(n) = target.downcast::<Node>() {
            let n = n.get();
            return n.src.write(&n.path, "infer a node's shape", |g| {
                es_core::infer::infer_node(g, n.id).py()
            });
        }
        if let Ok(g) = target.downcast::<Graph>() {
            let g = g.get();
            return g.src.write(&g.path, "infer shapes", |g| {
                es_core::infer::infer_graph(g).py()
            });
        }
        Err(PyTypeError::new_err(
            "infer_shape: expected a ge.graph.Node or ge.graph.Graph",
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Adapters: Python pass classes as pass-bridge passes
// ---------------------------------------------------------------------------------------------

/// What every adapter holds: the fresh Python instance and the per-run cell its views use.
struct PyPassCore {
    instance: PyObject,
    cell: Arc<GraphCell>,
    context: Option<Py<PassContext>>,
}

impl Drop for PyPassCore {
    fn drop(&mut self) {
        self.cell.expired.store(true, Ordering::Release);
        if let Some(c) = &self.context {
            c.get().expired.store(true, Ordering::Release);
        }
    }
}

impl PyPassCore {
    fn new(instance: PyObject) -> Self {
        PyPassCore {
            instance,
            cell: GraphCell::new(CoreGraph::new("")),
            context: None,
        }
    }

    /// Runs `f` with the GIL and with `graph` moved into the run's cell (and back after).
    fn call<R>(
        &self,
        graph: &mut CoreGraph,
        f: impl FnOnce(Python<'_>, &Self) -> PyResult<R>,
    ) -> HookResult<R> {
        self.call_hooks(graph, |py, core| f(py, core).map_err(|e| classify(py, e)))
    }

    /// [`PyPassCore::call`] for an `f` that classifies its Python errors itself.
    fn call_hooks<R>(
        &self,
        graph: &mut CoreGraph,
        f: impl FnOnce(Python<'_>, &Self) -> HookResult<R>,
    ) -> HookResult<R> {
        Python::with_gil(|py| {
            std::mem::swap(&mut write_cell(&self.cell).graph, graph);
            let r = f(py, self);
            std::mem::swap(&mut write_cell(&self.cell).graph, graph);
            r
        })
    }

    fn graph_view(&self, py: Python<'_>) -> PyResult<Py<Graph>> {
        Py::new(
            py,
            Graph {
                src: GraphSource::Cell(self.cell.clone()),
                path: Vec::new(),
            },
        )
    }

    fn node_view(&self, py: Python<'_>, id: NodeId) -> PyResult<Py<Node>> {
        Py::new(py, Node::new(GraphSource::Cell(self.cell.clone()), id))
    }
}

/// A hook's returned graph: moved out of the returned object when nothing else holds it,
/// else copied.
fn returned_graph(r: &Bound<'_, PyAny>, hook: &str) -> PyResult<CoreGraph> {
    if r.downcast::<Graph>().is_err() {
        return Err(PyTypeError::new_err(format!(
            "{hook}() must return a ge.graph.Graph, got {}",
            r.get_type().name()?
        )));
    }
    Graph::take_or_copy(r)
}

/// The context handed to one hook call: a view of the run's context, valid during the call.
fn hook_context(py: Python<'_>, ctx: &CorePassContext) -> PyResult<Py<PassContext>> {
    Py::new(
        py,
        PassContext {
            inner: Mutex::new(ctx.clone()),
            expired: AtomicBool::new(false),
        },
    )
}

/// Takes back what the hook recorded in its context, and expires the view.
fn end_hook_context(pyctx: &Py<PassContext>, ctx: &mut CorePassContext) {
    let c = pyctx.get();
    c.expired.store(true, Ordering::Release);
    // Expired: the view is never read again, so its context is moved out, not copied.
    *ctx = std::mem::take(&mut *lock(&c.inner));
}

struct PyFusion(PyPassCore);

impl FusionPass for PyFusion {
    fn run(&mut self, graph: &mut CoreGraph, ctx: &mut CorePassContext) -> HookResult<()> {
        let core = &mut self.0;
        let pyctx = Python::with_gil(|py| hook_context(py, ctx))
            .map_err(|e| HookError::Failed(e.to_string()))?;
        core.context = Some(Python::with_gil(|py| pyctx.clone_ref(py)));
        let status = core.call(graph, |py, core| {
            let g = core.graph_view(py)?;
            let r = core
                .instance
                .bind(py)
                .call_method1("run", (g, pyctx.clone_ref(py)))?;
            // StatusLike: None or truthy is success; False or 0 is failure.
            Ok(r.is_none() || r.is_truthy()?)
        });
        *ctx = lock(&pyctx.get().inner).clone();
        if !status? {
            return Err(HookError::Failed(format!(
                "run() returned a failure status{}",
                if ctx.error_message().is_empty() {
                    String::new()
                } else {
                    format!(": {}", ctx.error_message())
                }
            )));
        }
        Ok(())
    }
}

struct PyPatternPass {
    core: PyPassCore,
    cfg: CoreMatcherConfig,
    max_rounds: usize,
    /// Per pattern: its captures and its inputs.
    meta: Vec<Arc<PatternMeta>>,
}

impl PyPatternPass {
    fn match_obj(
        &self,
        py: Python<'_>,
        pattern: usize,
        m: &Arc<CoreMatchResult>,
    ) -> PyResult<Py<MatchResult>> {
        let meta = self
            .meta
            .get(pattern)
            .cloned()
            .ok_or_else(|| PyRuntimeError::new_err("unknown pattern index"))?;
        Py::new(
            py,
            MatchResult {
                m: m.clone(),
                meta,
                cell: self.core.cell.clone(),
                valid: AtomicBool::new(true),
            },
        )
    }

    /// Calls hook `name(match view, context view)` on the instance (the graph is in the run's
    /// cell): both views are made for this call and expire after it, as in GE. Hooks are
    /// called as hook(match_result, context) (the Python classes adapt GE's forms).
    fn call_hook<'py>(
        &self,
        py: Python<'py>,
        pattern: usize,
        m: &Arc<CoreMatchResult>,
        ctx: &mut CorePassContext,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mo = self.match_obj(py, pattern, m)?;
        let pyctx = hook_context(py, ctx)?;
        let r = self
            .core
            .instance
            .bind(py)
            .call_method1(name, (mo.clone_ref(py), pyctx.clone_ref(py)));
        mo.get().valid.store(false, Ordering::Release);
        end_hook_context(&pyctx, ctx);
        r
    }

    fn hook<R>(
        &mut self,
        graph: &mut CoreGraph,
        pattern: usize,
        m: &CoreMatchResult,
        ctx: &mut CorePassContext,
        name: &str,
        convert: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<R>,
    ) -> HookResult<R> {
        // One GIL acquisition per hook: the match view is made inside the call.
        let m = Arc::new(m.clone());
        self.core.call(graph, |py, _| {
            let r = self.call_hook(py, pattern, &m, ctx, &PyString::intern(py, name))?;
            convert(&r)
        })
    }
}

impl PatternFusionPass for PyPatternPass {
    fn patterns(&mut self, _ctx: &mut CorePassContext) -> HookResult<Vec<CorePattern>> {
        let mut dummy = CoreGraph::new("");
        let items: Vec<(CorePattern, Vec<(NodeId, u32)>)> =
            self.core.call(&mut dummy, |py, core| {
                let r = core.instance.bind(py).call_method0("patterns")?;
                let mut out = Vec::new();
                for item in r.try_iter().map_err(|_| {
                    PyTypeError::new_err("patterns() must return an iterable of Pattern or Graph")
                })? {
                    out.push(to_pattern(&item?)?);
                }
                Ok(out)
            })?;
        if items.is_empty() {
            return Err(HookError::Failed("patterns() returned no pattern".into()));
        }
        self.meta = items
            .iter()
            .map(|(p, c)| {
                Arc::new(PatternMeta {
                    captures: c.clone(),
                    inputs: p.inputs(),
                })
            })
            .collect();
        Ok(items.into_iter().map(|(p, _)| p).collect())
    }
    fn matcher_config(&self) -> CoreMatcherConfig {
        self.cfg
    }
    fn max_rounds(&self) -> usize {
        self.max_rounds
    }
    fn meet_requirements(
        &mut self,
        graph: &mut CoreGraph,
        pattern: usize,
        m: &CoreMatchResult,
        ctx: &mut CorePassContext,
    ) -> HookResult<bool> {
        self.hook(graph, pattern, m, ctx, "meet_requirements", |r| {
            r.is_truthy()
        })
    }
    fn replacement(
        &mut self,
        graph: &mut CoreGraph,
        pattern: usize,
        m: &CoreMatchResult,
        ctx: &mut CorePassContext,
    ) -> HookResult<CoreGraph> {
        self.hook(graph, pattern, m, ctx, "replacement", |r| {
            returned_graph(r, "replacement")
        })
    }
    /// One crossing per match: one GIL acquisition, one graph hand-over and one copy of the
    /// match for both hooks (the outcome is the default `decide`'s).
    fn decide(
        &mut self,
        graph: &mut CoreGraph,
        pattern: usize,
        m: &Arc<CoreMatchResult>,
        ctx: &mut CorePassContext,
    ) -> HookResult<Decision> {
        // One match record shared by both views (each hook still gets its own view).
        self.core.call_hooks(graph, |py, _| {
            let fail = |e: PyErr| classify(py, e);
            let ok = self
                .call_hook(py, pattern, m, ctx, intern!(py, "meet_requirements"))
                .and_then(|r| r.is_truthy());
            match ok.map_err(fail) {
                Ok(true) => {}
                Ok(false) => return Ok(Decision::Rejected),
                Err(HookError::Skip(_)) => return Ok(Decision::Skipped { accepted: false }),
                Err(e) => return Err(e),
            }
            let g = self
                .call_hook(py, pattern, m, ctx, intern!(py, "replacement"))
                .and_then(|r| returned_graph(&r, "replacement"));
            match g.map_err(fail) {
                Ok(g) => Ok(Decision::Replace(g)),
                Err(HookError::Skip(_)) => Ok(Decision::Skipped { accepted: true }),
                Err(e) => Err(e),
            }
        })
    }
}

struct PyDecompose(PyPassCore);

impl PyDecompose {
    /// Calls `hook(node view, context)` on the Python instance and converts its result.
    fn hook<R>(
        &mut self,
        graph: &mut CoreGraph,
        node: NodeId,
        ctx: &mut CorePassContext,
        name: &str,
        convert: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<R>,
    ) -> HookResult<R> {
        self.0.call(graph, |py, core| {
            let n = core.node_view(py, node)?;
            let pyctx = hook_context(py, ctx)?;
            let r = core
                .instance
                .bind(py)
                .call_method1(name, (n, pyctx.clone_ref(py)));
            end_hook_context(&pyctx, ctx);
            convert(&r?)
        })
    }
}

impl DecomposePass for PyDecompose {
    fn meet_requirements(
        &mut self,
        graph: &mut CoreGraph,
        node: NodeId,
        ctx: &mut CorePassContext,
    ) -> HookResult<bool> {
        self.hook(graph, node, ctx, "meet_requirements", |r| r.is_truthy())
    }
    fn replacement(
        &mut self,
        graph: &mut CoreGraph,
        node: NodeId,
        ctx: &mut CorePassContext,
    ) -> HookResult<CoreGraph> {
        self.hook(graph, node, ctx, "replacement", |r| {
            returned_graph(r, "replacement")
        })
    }
}

/// A factory that instantiates the Python class for each run.
fn python_factory(cls: PyObject, kind: PassKind) -> pass_bridge::PassFactory {
    Arc::new(move || {
        Python::with_gil(|py| -> HookResult<PassInstance> {
            let inst = cls.bind(py).call0().map_err(|e| classify(py, e))?;
            let core = PyPassCore::new(inst.clone().unbind());
            Ok(match kind {
                PassKind::FusionBase => PassInstance::Fusion(Box::new(PyFusion(core))),
                PassKind::Decompose => PassInstance::Decompose(Box::new(PyDecompose(core))),
                PassKind::PatternFusion => {
                    let cfg = inst
                        .getattr("matcher_config")
                        .ok()
                        .filter(|c| !c.is_none())
                        .map(|c| {
                            c.downcast::<PatternMatcherConfig>()
                                .map(|c| c.get().cfg)
                                .map_err(|_| {
                                    HookError::Failed(
                                        "matcher_config must be a PatternMatcherConfig".into(),
                                    )
                                })
                        })
                        .transpose()?
                        .unwrap_or_else(ge_default_config);
                    let max_rounds = inst
                        .getattr("max_rounds")
                        .ok()
                        .and_then(|r| r.extract::<usize>().ok())
                        .unwrap_or(1);
                    PassInstance::Pattern(Box::new(PyPatternPass {
                        core,
                        cfg,
                        max_rounds,
                        meta: Vec::new(),
                    }))
                }
            })
        })
    })
}

// ---------------------------------------------------------------------------------------------
// The registry and run_passes
// ---------------------------------------------------------------------------------------------

static REGISTRY: Mutex<Option<PassRegistry>> = Mutex::new(None);

/// A copy of the process-wide registry (its factories are shared), for a compile.
pub fn registry_snapshot() -> PassRegistry {
    with_registry(|r| r.clone())
}

fn with_registry<R>(f: impl FnOnce(&mut PassRegistry) -> R) -> R {
    let mut g = lock(&REGISTRY);
    f(g.get_or_insert_with(PassRegistry::new))
}

guarded! {
    /// Registers a Python pass class under a descriptor (called by `ge.passes` decorators).
    #[pyfunction]
    #[pyo3(signature = (pass_name, module_name, class_name, kind, stage, op_types, cls))]
    #[allow(clippy::too_many_arguments)]
    pub fn _register_pass(
        pass_name: String,
        module_name: String,
        class_name: String,
        kind: &str,
        stage: &str,
        op_types: Vec<String>,
        cls: PyObject,
    ) -> PyResult<String> {
        let kind = PassKind::parse(kind).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown pass kind '{kind}' (fusion_base, pattern_fusion, decompose)"
            ))
        })?;
        let stage = PassStage::parse(stage).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown pass stage '{stage}' (known: {})",
                PassStage::VALUES.map(|s| s.as_str()).join(", ")
            ))
        })?;
        let d = PassDescriptor::new(pass_name, module_name, class_name, kind, stage, op_types);
        let key = d.descriptor_key.clone();
        with_registry(|r| r.register(d, python_factory(cls, kind))).py()?;
        Ok(key)
    }
}

guarded! {
    #[pyfunction]
    pub fn _unregister_pass(descriptor_key: &str) -> bool {
        with_registry(|r| r.unregister(descriptor_key))
    }
}

guarded! {
    #[pyfunction]
    pub fn _clear_passes() -> PyResult<()> {
        with_registry(|r| r.clear());
        Ok(())
    }
}

guarded! {
    /// Registered descriptor keys, in registration order.
    #[pyfunction]
    pub fn _registered_pass_keys() -> Vec<String> {
        with_registry(|r| r.descriptors().map(|d| d.descriptor_key.clone()).collect())
    }
}

fn stats_dict<'py>(py: Python<'py>, s: &pass_bridge::PassStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    set_fields!(d, s; pass_name, descriptor_key);
    d.set_item("kind", s.kind.as_str())?;
    d.set_item("stage", s.stage.as_str())?;
    set_fields!(d, s; matches_tried, matches_accepted, rewritten, skipped, rounds, skipped_run,
        nodes_before, nodes_after);
    let fusions = PyList::empty(py);
    for f in &s.fusions {
        fusions.append((f.before.clone(), f.after.clone()))?;
    }
    d.set_item("fusions", fusions)?;
    d.set_item("seconds", s.elapsed.as_secs_f64())?;
    Ok(d)
}

guarded! {
    /// Runs registered passes on a graph (see `ge.passes.run_passes`). The GIL is released while
    /// the executor runs; Python hooks take it.
    #[pyfunction]
    #[pyo3(signature = (graph, stage = None, passes = None, options = None))]
    pub fn _run_passes<'py>(
        py: Python<'py>,
        graph: &Bound<'py, PyAny>,
        stage: Option<&str>,
        passes: Option<Vec<String>>,
        options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let g = downcast_arg::<Graph>(graph, "run_passes: graph must be a ge.graph.Graph")?.get();
        if !g.path.is_empty() {
            return Err(PyValueError::new_err(
                "run_passes: pass a whole graph, not a subgraph view",
            ));
        }
        let GraphSource::Cell(cell) = &g.src else {
            return Err(PyValueError::new_err(
                "run_passes: the graph is still being built; call build_and_reset() first",
            ));
        };
        let stage = match stage {
            None => None,
            Some(s) => Some(PassStage::parse(s).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown pass stage '{s}' (known: {})",
                    PassStage::VALUES.map(|s| s.as_str()).join(", ")
                ))
            })?),
        };
        let opts = RunOptions {
            stage,
            passes,
            options: options.unwrap_or_default(),
        };
        cell.check()?;
        let mut target = {
            let mut st = write_cell(cell);
            if let Some(to) = &st.moved_to {
                return Err(PyRuntimeError::new_err(format!(
                    "run_passes: graph '{}' belongs to {to}; it can be read but not changed",
                    st.graph.name
                )));
            }
            let name = st.graph.name.clone();
            std::mem::replace(&mut st.graph, CoreGraph::new(name))
        };
        let registry = with_registry(|r| r.clone());
        *lock(&LAST_FAILURE) = None;
        let result = py.allow_threads(|| pass_bridge::run_passes(&registry, &mut target, &opts));
        std::mem::swap(&mut write_cell(cell).graph, &mut target);
        match result {
            Ok(report) => report.passes.iter().map(|s| stats_dict(py, s)).collect(),
            Err(e) => {
                let registry_error = matches!(e, pass_bridge::PassError::Registry(_));
                let err = PyErr::from(crate::errors::Error::from(e));
                if let Some(cause) = lock(&LAST_FAILURE).take().filter(|_| !registry_error) {
                    err.set_cause(py, Some(cause));
                }
                Err(err)
            }
        }
    }
}
