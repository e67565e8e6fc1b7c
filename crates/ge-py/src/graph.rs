//! `Graph` and `Node` views. A graph object is a root cell plus a path of (node, subgraph name)
//! down to a subgraph; a node object adds a node id. Every access re-resolves the path, so a
//! removed node or subgraph is an error, never a dangling reference.

use crate::attrs::{attr_to_py, attr_value, set_node_attr};
use crate::convert::{downcast_arg, dtype_from_py, format_from_py, graph_name_arg};
use crate::errors::IntoPyResult;
use crate::guard::guarded;
use crate::source::{GraphCell, GraphSource, Path};
use es_core::{AttrValue, Graph as CoreGraph, InPort, NodeId, OutPort, TensorDesc};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::atomic::Ordering;

#[pyclass(module = "ge._native", frozen, weakref, subclass)]
pub struct Graph {
    pub src: GraphSource,
    pub path: Path,
}

#[pyclass(module = "ge._native", frozen, weakref)]
pub struct Node {
    pub src: GraphSource,
    pub path: Path,
    pub id: NodeId,
}

impl Node {
    pub fn new(src: GraphSource, id: NodeId) -> Self {
        Node {
            src,
            path: Vec::new(),
            id,
        }
    }
    fn view(&self, id: NodeId) -> Node {
        Node {
            src: self.src.clone(),
            path: self.path.clone(),
            id,
        }
    }
    fn read<R>(&self, f: impl FnOnce(&CoreGraph, &es_core::Node) -> PyResult<R>) -> PyResult<R> {
        self.src.read(&self.path, |g| {
            let n = g
                .node(self.id)
                .map_err(|_| PyRuntimeError::new_err("the node has been removed from its graph"))?;
            f(g, n)
        })
    }
    fn write<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut es_core::Node) -> PyResult<R>,
    ) -> PyResult<R> {
        self.src.write(&self.path, what, |g| {
            let n = g
                .node_mut(self.id)
                .map_err(|_| PyRuntimeError::new_err("the node has been removed from its graph"))?;
            f(n)
        })
    }
}

impl Graph {
    pub fn from_graph(py: Python<'_>, g: CoreGraph) -> PyResult<Py<Graph>> {
        Py::new(
            py,
            Graph {
                src: GraphSource::Cell(GraphCell::new(g)),
                path: Vec::new(),
            },
        )
    }

    /// A copy of the graph an object refers to (for passing as a subgraph). Checks that it can
    /// still be moved.
    pub fn extract_graph_obj(o: &Bound<'_, PyAny>) -> PyResult<CoreGraph> {
        let g = o.downcast::<Graph>()?;
        let g = g.get();
        if !g.path.is_empty() {
            return Err(PyValueError::new_err(
                "a subgraph view cannot be passed as a subgraph; pass a whole graph",
            ));
        }
        match &g.src {
            GraphSource::Cell(c) => {
                c.check()?;
                let st = c.read_state()?;
                if let Some(to) = &st.moved_to {
                    return Err(PyRuntimeError::new_err(format!(
                        "graph '{}' already belongs to {to}; a graph can be passed as a subgraph only once",
                        st.graph.name
                    )));
                }
                Ok(st.graph.clone())
            }
            GraphSource::Builder(_) => Err(PyValueError::new_err(
                "a graph under construction cannot be passed as a subgraph",
            )),
        }
    }

    /// The graph of an object a hook returned: taken out of the object when nothing else can
    /// reach it (the caller holds the only reference, and no view shares its graph), which is
    /// what returning `builder.build_and_reset(...)` gives; otherwise a copy, as
    /// [`Graph::extract_graph_obj`] makes it. The taken object is left empty and marked moved.
    pub fn take_or_copy(o: &Bound<'_, PyAny>) -> PyResult<CoreGraph> {
        if o.get_refcnt() == 1 {
            let g = o.downcast::<Graph>()?.get();
            if let (true, GraphSource::Cell(c)) = (g.path.is_empty(), &g.src) {
                if std::sync::Arc::strong_count(c) == 1 && c.check().is_ok() {
                    let mut st = c.write_state()?;
                    if st.moved_to.is_none() && st.detached.is_empty() {
                        let empty = CoreGraph::new(st.graph.name.clone());
                        st.moved_to = Some("the pass it was returned to".into());
                        return Ok(std::mem::replace(&mut st.graph, empty));
                    }
                }
            }
        }
        Self::extract_graph_obj(o)
    }

    /// Marks a graph object as moved into `to`.
    pub fn mark_moved(o: &Bound<'_, PyAny>, to: &str) -> PyResult<()> {
        let g = o.downcast::<Graph>()?;
        if let GraphSource::Cell(c) = &g.get().src {
            let mut st = c.write_state()?;
            st.moved_to = Some(to.to_string());
        }
        Ok(())
    }

    fn node_obj(&self, id: NodeId) -> Node {
        Node {
            src: self.src.clone(),
            path: self.path.clone(),
            id,
        }
    }

    fn node_arg(&self, n: &Bound<'_, PyAny>, what: &str) -> PyResult<NodeId> {
        let n = downcast_arg::<Node>(n, format!("{what} must be a Node"))?;
        let n = n.get();
        if !n.src.same(&self.src) || n.path != self.path {
            return Err(PyValueError::new_err(format!(
                "{what} belongs to another graph"
            )));
        }
        Ok(n.id)
    }

    /// An edit of the edge between the (source node, source port, destination node,
    /// destination port) arguments of an edge method: the arguments are checked, then `edit`
    /// runs on the graph (`action` names it in lock errors); its failure `why` becomes GE's
    /// RuntimeError "Failed to <what> from Node a, Port Index i to Node b, Port Index j: why".
    fn edit_edge(
        &self,
        [src_node, src_port_index, dst_node, dst_port_index]: [&Bound<'_, PyAny>; 4],
        action: &str,
        what: &str,
        edit: impl FnOnce(&mut CoreGraph, (NodeId, i64, NodeId, i64)) -> Result<(), String>,
    ) -> PyResult<()> {
        let s = self.node_arg(src_node, "src_node")?;
        let d = self.node_arg(dst_node, "dst_node")?;
        let si = py_int(src_port_index, "src_port_index")?;
        let di = py_int(dst_port_index, "dst_port_index")?;
        self.src.write(&self.path, action, |g| {
            edit(g, (s, si, d, di)).map_err(|why| {
                PyRuntimeError::new_err(format!(
                    "Failed to {what} from Node {}, Port Index {si} to Node {}, Port Index {di}: {why}",
                    node_name(g, s),
                    node_name(g, d)
                ))
            })
        })
    }

    /// The nodes and the subgraphs of this graph and of its subgraphs, recursively.
    fn nested(&self) -> PyResult<Nested> {
        self.src.read(&self.path, |g| {
            let mut out = Nested::default();
            out.walk(g, &self.path);
            Ok(out)
        })
    }

    /// The subgraphs added without a parent node (only a root graph has them), less those whose
    /// graph has gone (a view of a subgraph since removed from its owner).
    fn detached(&self) -> PyResult<Vec<(GraphSource, Path)>> {
        let all = match (&self.src, self.path.is_empty()) {
            (GraphSource::Cell(c), true) => {
                c.check()?;
                c.read_state()?.detached.clone()
            }
            _ => Vec::new(),
        };
        Ok(all
            .into_iter()
            .filter(|(src, path)| src.read(path, |_| Ok(())).is_ok())
            .collect())
    }

    /// GE's one-argument `add_subgraph`: shares `sub` in this root graph's subgraph list.
    fn add_detached(&self, py: Python<'_>, sub: &Graph) -> PyResult<()> {
        let gname = self.name()?;
        let sname = sub.name()?;
        let GraphSource::Cell(cell) = &self.src else {
            return Err(PyRuntimeError::new_err(format!(
                "not supported: add_subgraph(subgraph) on graph '{gname}' under construction; build it first"
            )));
        };
        if !self.path.is_empty() {
            return Err(PyRuntimeError::new_err(format!(
                "not supported: add_subgraph(subgraph) on subgraph '{gname}'; add it to the root graph, or pass a parent node"
            )));
        }
        if sub.src.same(&self.src) {
            return Err(PyRuntimeError::new_err(format!(
                "Failed to add subgraph '{sname}' to graph '{gname}': a graph cannot be its own subgraph"
            )));
        }
        // A graph that (through its own list) holds this one would make a reference cycle.
        if let GraphSource::Cell(sc) = &sub.src {
            let holds_us = sc
                .read_state()?
                .detached
                .iter()
                .any(|(s, _)| s.same(&self.src));
            if holds_us {
                return Err(PyRuntimeError::new_err(format!(
                    "Failed to add subgraph '{sname}' to graph '{gname}': '{sname}' holds '{gname}' as a subgraph"
                )));
            }
        }
        for existing in self.get_all_subgraphs(py)? {
            if existing.get().name()? == sname {
                return Err(PyRuntimeError::new_err(format!(
                    "Failed to add subgraph '{sname}' to graph '{gname}': a subgraph with that name exists"
                )));
            }
        }
        cell.write_state()?
            .detached
            .push((sub.src.clone(), sub.path.clone()));
        Ok(())
    }
}

/// A `str` argument; GE's `TypeError` "<what> must be a string" otherwise.
fn str_arg(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    v.extract::<String>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a string")))
}

/// An attribute name; GE's `TypeError` "Attribute name must be a string" otherwise.
/// The `key` argument of `get_attr` / `set_attr`.
fn attr_key_arg(v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.extract::<String>()
        .map_err(|_| PyTypeError::new_err("Attribute key must be a string"))
}

/// `get_attr`'s result: the attribute `key` of a Graph or a Node (`owner`), an error when unset.
fn attr_found(py: Python<'_>, v: Option<AttrValue>, key: &str, owner: &str) -> PyResult<PyObject> {
    match v {
        Some(v) => attr_to_py(py, &v),
        None => Err(PyRuntimeError::new_err(format!(
            "Failed to get attribute '{key}' from {owner}: not set"
        ))),
    }
}

fn attr_name_arg(v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.extract::<String>()
        .map_err(|_| PyTypeError::new_err("Attribute name must be a string"))
}

/// Every node (with the path of its graph) and every subgraph (its path) below a graph, in the
/// order of a depth-first walk.
#[derive(Default)]
struct Nested {
    nodes: Vec<(Path, NodeId)>,
    subgraphs: Vec<Path>,
}

impl Nested {
    fn walk(&mut self, g: &CoreGraph, path: &Path) {
        for id in g.nodes() {
            self.nodes.push((path.clone(), id));
            if let Ok(n) = g.node(id) {
                for s in &n.subgraphs {
                    let mut p = path.clone();
                    p.push((id, s.name.to_string()));
                    self.subgraphs.push(p.clone());
                    self.walk(&s.graph, &p);
                }
            }
        }
    }
}

/// The data edge of (source node, source port, destination node, destination port); None when
/// a port index is negative.
fn data_edge((s, si, d, di): (NodeId, i64, NodeId, i64)) -> Option<(OutPort, InPort)> {
    let (Ok(si), Ok(di)) = (u32::try_from(si), u32::try_from(di)) else {
        return None;
    };
    Some((
        OutPort { node: s, index: si },
        InPort { node: d, index: di },
    ))
}

/// A node's name for a message (the node may be gone).
fn node_name(g: &CoreGraph, id: NodeId) -> String {
    g.node(id)
        .map(|n| n.name.to_string())
        .unwrap_or_else(|_| "<removed>".to_string())
}

fn py_int(v: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if v.is_instance_of::<pyo3::types::PyBool>() || !v.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err(format!("{what} must be an integer")));
    }
    v.extract()
}

fn desc_to_py(py: Python<'_>, d: &TensorDesc) -> PyResult<PyObject> {
    let attrs = PyDict::new(py);
    for (k, v) in &d.attrs {
        attrs.set_item(k, attr_to_py(py, v)?)?;
    }
    let raw = PyTuple::new(
        py,
        [
            d.dtype.value().into_pyobject(py)?.into_any(),
            d.format.value().into_pyobject(py)?.into_any(),
            d.shape.0.clone().into_pyobject(py)?.into_any(),
            d.origin_format.value().into_pyobject(py)?.into_any(),
            d.origin_shape.0.clone().into_pyobject(py)?.into_any(),
            d.placement.value().into_pyobject(py)?.into_any(),
            attrs.into_any(),
        ],
    )?;
    Ok(py
        .import("ge.graph.tensor_desc")?
        .getattr("TensorDesc")?
        .call_method1("_from_raw", (raw,))?
        .unbind())
}

/// `TensorDesc._raw()`: dtype, format, shape, origin format, origin shape, placement, attrs.
type RawDesc<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Vec<i64>,
    Bound<'py, PyAny>,
    Vec<i64>,
    i64,
    Bound<'py, PyDict>,
);

fn desc_from_py(o: &Bound<'_, PyAny>) -> PyResult<TensorDesc> {
    let raw = o
        .call_method0("_raw")
        .map_err(|_| PyTypeError::new_err("tensor_desc must be a TensorDesc"))?;
    let (dt, fmt, shape, ofmt, oshape, place, attrs): RawDesc<'_> = raw.extract()?;
    es_core::Shape::validate(&shape).py()?;
    es_core::Shape::validate(&oshape).py()?;
    let mut d = TensorDesc::new(dtype_from_py(&dt)?, es_core::Shape::new(shape));
    d.format = format_from_py(&fmt)?;
    d.origin_format = format_from_py(&ofmt)?;
    d.origin_shape = es_core::Shape::new(oshape);
    d.placement = es_core::Placement::from_value(place).py()?;
    for (k, v) in attrs.iter() {
        let k: String = k.extract()?;
        d.attrs
            .insert(k.clone(), crate::attrs::attr_infer_from_py(&v, &k)?);
    }
    Ok(d)
}

const DUMP_ONNX: i64 = 0;
const DUMP_TXT: i64 = 1;
const DUMP_READABLE: i64 = 2;

fn dump_format(f: &Bound<'_, PyAny>) -> PyResult<i64> {
    let v = f
        .getattr("value")
        .and_then(|v| v.extract::<i64>())
        .or_else(|_| f.extract::<i64>())
        .map_err(|_| {
            PyTypeError::new_err(
                "Format must be in [DumpFormat.kOnnx, DumpFormat.kTxt, DumpFormat.kReadable]",
            )
        })?;
    if !(0..=2).contains(&v) {
        return Err(PyTypeError::new_err(
            "Format must be in [DumpFormat.kOnnx, DumpFormat.kTxt, DumpFormat.kReadable]",
        ));
    }
    Ok(v)
}

/// A `.air` path argument: a `str`, as GE requires, or an `os.PathLike` giving one.
fn air_path(p: &Bound<'_, PyAny>) -> PyResult<std::path::PathBuf> {
    let bad = || PyTypeError::new_err("file_path must be a string");
    if let Ok(s) = p.extract::<String>() {
        return Ok(s.into());
    }
    if p.hasattr("__fspath__")? {
        let s = p.call_method0("__fspath__")?;
        return s.extract::<String>().map(Into::into).map_err(|_| bad());
    }
    Err(bad())
}

/// `e` with `prefix: ` in front of its message, same exception type.
fn with_prefix(py: Python<'_>, e: PyErr, prefix: &str) -> PyErr {
    let msg = e.value(py).to_string();
    PyErr::from_type(e.get_type(py), format!("{prefix}: {msg}"))
}

/// The next index of each dump format's files (GE counts each format on its own).
static DUMP_INDEX: [std::sync::atomic::AtomicU64; 3] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// GE's dump file name for a format and suffix (graph id 0: ge-rs keeps no graph ids).
fn dump_file_name(format: i64, suffix: &str) -> String {
    let n = DUMP_INDEX[format as usize].fetch_add(1, Ordering::Relaxed);
    // GE's GetSanitizedName.
    let suffix: String = suffix
        .chars()
        .map(|c| if "/\\:*?\"<>|".contains(c) { '_' } else { c })
        .collect();
    match format {
        DUMP_ONNX => {
            let name = format!("ge_onnx_{n:08}_graph_0_{suffix}.pbtxt");
            if name.len() >= 255 {
                // GE keeps the first 248 bytes (cut at a character boundary here).
                let mut cut = 248;
                while !name.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}.pbtxt", &name[..cut])
            } else {
                name
            }
        }
        DUMP_TXT => format!("ge_proto_{n:08}_graph_0_{suffix}.txt"),
        _ => format!("ge_readable_{n:08}_graph_0_{suffix}.txt"),
    }
}

/// The directory GE dumps graphs into, with its trailing `/` (see `dump_to_file`), created
/// when missing.
fn dump_dir(py: Python<'_>) -> PyResult<String> {
    let var = |k: &str| std::env::var(k).ok();
    let pid = std::process::id();
    let dir = if let Some(p) = var("NPU_COLLECT_PATH") {
        format!("{p}/extra-info/graph/{pid}_0/")
    } else if let Some(p) = var("DUMP_GRAPH_PATH") {
        let base = if p.is_empty() {
            String::new()
        } else {
            format!("{p}/")
        };
        format!("{base}pid_{pid}_deviceid_0/")
    } else {
        match var("ASCEND_WORK_PATH") {
            Some(p) if std::fs::create_dir_all(&p).is_ok() => match std::fs::canonicalize(&p) {
                Ok(real) => format!("{}/", real.display()),
                Err(_) => "./".to_string(),
            },
            _ => "./".to_string(),
        }
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        let msg = format!("cannot create the dump directory {dir} ({e}); dumping into ./");
        py.import("logging")?
            .call_method1("getLogger", ("ge",))?
            .call_method1("warning", (msg,))?;
        return Ok("./".to_string());
    }
    Ok(dir)
}

guarded! {
    #[pymethods]
    impl Graph {
        #[new]
        #[pyo3(signature = (name = None))]
        fn new(name: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
            let name = graph_name_arg(name)?;
            Ok(Graph {
                src: GraphSource::Cell(GraphCell::new(CoreGraph::new(name))),
                path: Vec::new(),
            })
        }

        #[getter]
        fn name(&self) -> PyResult<String> {
            self.src.read(&self.path, |g| Ok(g.name.clone()))
        }

        /// Operator-library version the graph was built against.
        #[getter]
        fn ops_version(&self) -> PyResult<String> {
            self.src.read(&self.path, |g| Ok(g.ops_version.clone()))
        }

        /// Nodes of this graph and of all its subgraphs.
        fn get_all_nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<Node>>> {
            self.nested()?
                .nodes
                .into_iter()
                .map(|(path, id)| {
                    Py::new(
                        py,
                        Node {
                            src: self.src.clone(),
                            path,
                            id,
                        },
                    )
                })
                .collect()
        }

        /// Nodes of this graph only, in creation order.
        fn get_direct_nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<Node>>> {
            let ids = self.src.read(&self.path, |g| Ok(g.nodes()))?;
            ids.into_iter()
                .map(|id| Py::new(py, self.node_obj(id)))
                .collect()
        }

        /// The node named `name` in this graph (not its subgraphs); GE's `RuntimeError` "Failed to
        /// find Node name ..." when there is none.
        fn find_node_by_name(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<Node>> {
            let name = str_arg(name, "name")?;
            let id = self.src.read(&self.path, |g| Ok(g.find(&name)))?;
            match id {
                Some(id) => Py::new(py, self.node_obj(id)),
                None => Err(PyRuntimeError::new_err(format!(
                    "Failed to find Node name {name}"
                ))),
            }
        }

        fn get_attr(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
            let key = attr_key_arg(key)?;
            let v = self
                .src
                .read(&self.path, |g| Ok(g.attrs.get(&key).cloned()))?;
            attr_found(py, v, &key, "Graph")
        }

        fn has_attr(&self, key: &str) -> PyResult<bool> {
            self.src.read(&self.path, |g| Ok(g.attrs.contains_key(key)))
        }

        #[pyo3(signature = (key, value, ty = None))]
        fn set_attr(
            &self,
            key: &Bound<'_, PyAny>,
            value: &Bound<'_, PyAny>,
            ty: Option<&str>,
        ) -> PyResult<()> {
            let key = attr_key_arg(key)?;
            let a = attr_value(value, ty, &key)?;
            self.src.write(&self.path, "set a graph attribute", |g| {
                g.attrs.insert(key, a);
                Ok(())
            })
        }

        /// The dump as text: readable, `kTxt` (ge-rs's complete text form) or `kOnnx` (the ONNX
        /// dump form, GE op types kept, in protobuf text format, as GE's `Graph::Dump`).
        #[pyo3(signature = (format = None))]
        fn dump_to_stream(&self, format: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
            let f = match format {
                Some(f) => dump_format(f)?,
                None => DUMP_READABLE,
            };
            self.src.read(&self.path, |g| match f {
                DUMP_READABLE => Ok(es_core::dump::readable(g)),
                DUMP_TXT => Ok(es_core::dump::txt(g)),
                _ => ge_onnx::export::to_onnx_dump(g)
                    .map(|m| ge_onnx::text::model(&m))
                    .py(),
            })
        }

        fn __str__(&self) -> PyResult<String> {
            self.dump_to_stream(None)
        }

        /// Writes the dump to a file named as GE names it and returns its path:
        /// `ge_readable_<n>_graph_0_<suffix>.txt` (kReadable), `ge_proto_<n>_graph_0_<suffix>.txt`
        /// (kTxt), `ge_onnx_<n>_graph_0_<suffix>.pbtxt` (kOnnx, protobuf text), where `<n>` counts
        /// this process's dumps of that format (8 digits, from 0) and `<suffix>` has each of
        /// `/\:*?"<>|` replaced by `_`; in the directory GE picks: `$NPU_COLLECT_PATH/extra-info/
        /// graph/<pid>_<device>/`, else `$DUMP_GRAPH_PATH/pid_<pid>_deviceid_<device>/`, else
        /// `$ASCEND_WORK_PATH/`, else `./` (created when missing; `./` when that fails). ge-rs
        /// keeps no graph ids and no device context, so both are 0.
        #[pyo3(signature = (format = None, suffix = None))]
        fn dump_to_file(
            &self,
            py: Python<'_>,
            format: Option<&Bound<'_, PyAny>>,
            suffix: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<String> {
            let suffix: String = match suffix {
                Some(s) => s
                    .extract()
                    .map_err(|_| PyTypeError::new_err("Suffix must be a string"))?,
                None => String::new(),
            };
            let f = match format {
                Some(f) => dump_format(f)?,
                None => DUMP_READABLE,
            };
            let text = self.dump_to_stream(format)?;
            let name = dump_file_name(f, &suffix);
            let dir = dump_dir(py)?;
            let path = format!("{dir}{name}");
            std::fs::write(&path, text).map_err(|e| {
                PyRuntimeError::new_err(format!(
                    "Failed to dump graph {} to {path}: {e}",
                    self.name().unwrap_or_default()
                ))
            })?;
            Ok(path)
        }

        fn __repr__(&self) -> PyResult<String> {
            self.src.read(&self.path, |g| {
                Ok(format!("Graph('{}', {} nodes)", g.name, g.node_count()))
            })
        }

        /// Saves the graph in ge-rs's native format.
        fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
            let bytes = self
                .src
                .read(&self.path, |g| es_core::serialize::to_bytes(g).py())?;
            py.allow_threads(|| std::fs::write(&path, bytes))
                .map_err(|e| {
                    crate::errors::GeError::new_err(format!("cannot write {}: {e}", path.display()))
                })
        }

        /// The graph as bytes in ge-rs's native format.
        fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
            let bytes = self
                .src
                .read(&self.path, |g| es_core::serialize::to_bytes(g).py())?;
            Ok(pyo3::types::PyBytes::new(py, &bytes))
        }

        #[staticmethod]
        /// Parses a graph from `bytes`, `bytearray` or anything `bytes()` accepts.
        fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Py<Graph>> {
            let owned: Vec<u8> = if let Ok(b) = data.downcast::<pyo3::types::PyBytes>() {
                b.as_bytes().to_vec()
            } else if let Ok(b) = data.downcast::<pyo3::types::PyByteArray>() {
                b.to_vec()
            } else if data.is_instance_of::<pyo3::types::PyString>() {
                return Err(PyTypeError::new_err("from_bytes takes bytes, not str"));
            } else {
                let b = py
                    .import("builtins")?
                    .getattr("bytes")?
                    .call1((data,))
                    .map_err(|_| {
                        PyTypeError::new_err("from_bytes takes bytes, bytearray or a buffer")
                    })?;
                b.downcast::<pyo3::types::PyBytes>()?.as_bytes().to_vec()
            };
            let g = py
                .allow_threads(|| es_core::serialize::from_bytes(&owned))
                .py()?;
            Graph::from_graph(py, g)
        }

        /// Loads a graph saved with `save`.
        #[staticmethod]
        fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Py<Graph>> {
            let g = py.allow_threads(|| es_core::serialize::load(&path)).py()?;
            Graph::from_graph(py, g)
        }

        /// Saves the graph in GE's `.air` format (ModelDef protobuf of ge_ir.proto). `file_path`
        /// is a `str` (GE) or an `os.PathLike`; a failure raises GE's "Failed to save graph to AIR
        /// format", followed by the reason.
        fn save_to_air(slf: &Bound<'_, Self>, file_path: &Bound<'_, PyAny>) -> PyResult<()> {
            let path = air_path(file_path)?;
            let bytes = {
                let g = slf.get();
                g.src
                    .read(&g.path, |graph| ge_onnx::air::to_bytes(graph).py())?
            };
            slf.py()
                .allow_threads(|| std::fs::write(&path, bytes))
                .map_err(|e| {
                    crate::errors::TranslationError::new_err(format!("{}: {e}", path.display()))
                })
                .map_err(|e| with_prefix(slf.py(), e, "Failed to save graph to AIR format"))
        }

        /// Loads a graph from a `.air` file (GE's ModelDef protobuf). A failure raises "Failed to
        /// load graph from AIR format", followed by the reason.
        #[staticmethod]
        fn load_from_air(py: Python<'_>, file_path: &Bound<'_, PyAny>) -> PyResult<Py<Graph>> {
            let path = air_path(file_path)?;
            py.allow_threads(|| ge_onnx::air::load(&path))
                .py()
                .and_then(|g| Graph::from_graph(py, g))
                .map_err(|e| with_prefix(py, e, "Failed to load graph from AIR format"))
        }

        /// Replaces this graph's contents by a copy of `other`'s (GE's instance form of
        /// `load_from_air` loads into the graph it is called on). A subgraph keeps its parent link.
        fn _assign(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
            let new = Graph::extract_graph_obj(other)?;
            self.src.write(&self.path, "load into the graph", |g| {
                let parent = g.parent_node.take();
                *g = new;
                g.parent_node = parent;
                Ok(())
            })
        }

        /// Checks the graph (edges, required inputs, outputs, input indexes, no cycle).
        fn validate(&self) -> PyResult<()> {
            self.src.read(&self.path, |g| g.validate().py())
        }

        fn remove_node(&self, node: &Bound<'_, PyAny>) -> PyResult<()> {
            let id = self.node_arg(node, "node")?;
            let gname = self.name()?;
            self.src.write(&self.path, "remove a node", |g| {
                let nname = node_name(g, id);
                g.remove_node(id).map(|_| ()).map_err(|e| {
                    PyRuntimeError::new_err(format!(
                        "Failed to remove Node {nname} from Graph {gname}: {e}"
                    ))
                })
            })
        }

        fn add_data_edge(
            &self,
            src_node: &Bound<'_, PyAny>,
            src_port_index: &Bound<'_, PyAny>,
            dst_node: &Bound<'_, PyAny>,
            dst_port_index: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            let args = [src_node, src_port_index, dst_node, dst_port_index];
            self.edit_edge(args, "add a data edge", "add DataEdge", |g, ports| {
                let (from, to) = data_edge(ports).ok_or("port indexes must be >= 0")?;
                g.add_data_edge(from, to).map_err(|e| e.to_string())
            })
        }

        fn add_control_edge(
            &self,
            src_node: &Bound<'_, PyAny>,
            dst_node: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            let s = self.node_arg(src_node, "src_node")?;
            let d = self.node_arg(dst_node, "dst_node")?;
            self.src.write(&self.path, "add a control edge", |g| {
                let (sn, dn) = (node_name(g, s), node_name(g, d));
                g.add_control_edge(s, d).map_err(|e| {
                    PyRuntimeError::new_err(format!(
                        "Failed to add Control from Node {sn} to Node {dn}: {e}"
                    ))
                })
            })
        }

        /// Removes a data edge, or a control edge when both port indexes are -1.
        fn remove_edge(
            &self,
            src_node: &Bound<'_, PyAny>,
            src_port_index: &Bound<'_, PyAny>,
            dst_node: &Bound<'_, PyAny>,
            dst_port_index: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            let args = [src_node, src_port_index, dst_node, dst_port_index];
            self.edit_edge(args, "remove an edge", "remove Edge", |g, ports| {
                let r = match (ports, data_edge(ports)) {
                    ((s, -1, d, -1), _) => g.remove_control_edge(s, d),
                    (_, Some((from, to))) => g.remove_data_edge(from, to),
                    (_, None) => return Err("use -1 for both ports to remove a control edge".into()),
                };
                r.map(|_| ()).map_err(|e| e.to_string())
            })
        }

        /// Sets graph output `index` to output `port` of `node`.
        fn set_output(&self, index: i64, node: &Bound<'_, PyAny>, port: i64) -> PyResult<()> {
            let id = self.node_arg(node, "node")?;
            let (Ok(index), Ok(port)) = (usize::try_from(index), u32::try_from(port)) else {
                return Err(PyValueError::new_err(format!(
                    "graph output index and port must be >= 0, got {index} and {port}"
                )));
            };
            self.src.write(&self.path, "set a graph output", |g| {
                g.set_output(
                    index,
                    OutPort {
                        node: id,
                        index: port,
                    },
                )
                .py()
            })
        }

        /// (node, port) of every graph output.
        fn get_outputs(&self, py: Python<'_>) -> PyResult<Vec<(Py<Node>, u32)>> {
            let outs = self.src.read(&self.path, |g| Ok(g.outputs.clone()))?;
            outs.into_iter()
                .map(|p| Ok((Py::new(py, self.node_obj(p.node))?, p.index)))
                .collect()
        }

        /// Every subgraph, recursively, then those added without a parent node.
        fn get_all_subgraphs(&self, py: Python<'_>) -> PyResult<Vec<Py<Graph>>> {
            let mut views: Vec<Py<Graph>> = self
                .nested()?
                .subgraphs
                .into_iter()
                .map(|path| {
                    Py::new(
                        py,
                        Graph {
                            src: self.src.clone(),
                            path,
                        },
                    )
                })
                .collect::<PyResult<_>>()?;
            for (src, path) in self.detached()? {
                views.push(Py::new(py, Graph { src, path })?);
            }
            Ok(views)
        }

        /// The subgraph whose graph name is `name` (searched recursively), or None.
        fn get_subgraph(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Option<Py<Graph>>> {
            let name = str_arg(name, "name")?;
            for sg in self.get_all_subgraphs(py)? {
                if sg.get().name()? == name {
                    return Ok(Some(sg));
                }
            }
            Ok(None)
        }

        /// GE's form `add_subgraph(subgraph)`: adds `subgraph` to this graph's subgraphs, indexed by
        /// its name (a name already there is GE's `RuntimeError` "Failed to add subgraph ..."); the
        /// graph is shared, not copied, and no node refers to it.
        /// ge-rs's form `add_subgraph(subgraph, parent_node, name=None)` attaches `subgraph` to
        /// `parent_node` (a node of this graph) under `name` (default: the subgraph's name). The
        /// graph object moves: it stays readable, further changes go through the parent.
        #[pyo3(signature = (subgraph, parent_node = None, name = None))]
        fn add_subgraph(
            &self,
            py: Python<'_>,
            subgraph: &Bound<'_, PyAny>,
            parent_node: Option<&Bound<'_, PyAny>>,
            name: Option<String>,
        ) -> PyResult<()> {
            let Ok(sg) = subgraph.downcast::<Graph>() else {
                return Err(PyTypeError::new_err("subgraph must be a Graph"));
            };
            let Some(parent_node) = parent_node else {
                if name.is_some() {
                    return Err(PyTypeError::new_err(
                        "add_subgraph: name is given with parent_node only",
                    ));
                }
                return self.add_detached(py, sg.get());
            };
            let pid = self.node_arg(parent_node, "parent_node")?;
            if sg.get().src.same(&self.src) {
                return Err(PyValueError::new_err(
                    "a graph cannot be added as a subgraph of itself or of one of its own subgraphs",
                ));
            }
            let mut g = Graph::extract_graph_obj(subgraph)?;
            let slot_name = name.unwrap_or_else(|| g.name.clone());
            let parent_name = self.src.write(&self.path, "add a subgraph", |root| {
                let n = root
                    .node_mut(pid)
                    .map_err(|_| PyRuntimeError::new_err("the node has been removed"))?;
                if n.subgraph(&slot_name).is_some() {
                    return Err(PyValueError::new_err(format!(
                        "node '{}' already has a subgraph '{slot_name}'",
                        n.name
                    )));
                }
                g.parent_node = Some(n.name.clone());
                let ir_index = n.subgraphs.len() as u32;
                n.subgraphs.push(es_core::graph::SubgraphSlot {
                    name: slot_name.as_str().into(),
                    ir_index,
                    graph: g,
                });
                Ok(n.name.clone())
            })?;
            Graph::mark_moved(subgraph, &format!("node '{parent_name}'"))
        }

        /// Removes the subgraph whose graph name is `name` (GE's `RuntimeError` "Failed to remove
        /// subgraph ..." when there is none).
        fn remove_subgraph(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
            fn rm(g: &mut CoreGraph, name: &str) -> bool {
                for id in g.nodes() {
                    if let Ok(n) = g.node_mut(id) {
                        if let Some(i) = n.subgraphs.iter().position(|s| s.graph.name == name) {
                            n.subgraphs.remove(i);
                            return true;
                        }
                        for s in &mut n.subgraphs {
                            if rm(&mut s.graph, name) {
                                return true;
                            }
                        }
                    }
                }
                false
            }
            let name = str_arg(name, "name")?;
            let gname = self.name()?;
            if self
                .src
                .write(&self.path, "remove a subgraph", |g| Ok(rm(g, &name)))?
            {
                return Ok(());
            }
            let found = self
                .detached()?
                .into_iter()
                .find(|(src, path)| src.read(path, |g| Ok(g.name == name)).unwrap_or(false));
            match (found, &self.src) {
                (Some((src, path)), GraphSource::Cell(c)) => {
                    c.write_state()?
                        .detached
                        .retain(|(s, p)| !(s.same(&src) && *p == path));
                    Ok(())
                }
                _ => Err(PyRuntimeError::new_err(format!(
                    "Failed to remove subgraph '{name}' from graph '{gname}': no such subgraph"
                ))),
            }
        }

        fn get_parent_graph(&self, py: Python<'_>) -> PyResult<Option<Py<Graph>>> {
            if self.path.is_empty() {
                return Ok(None);
            }
            let mut p = self.path.clone();
            p.pop();
            Ok(Some(Py::new(
                py,
                Graph {
                    src: self.src.clone(),
                    path: p,
                },
            )?))
        }

        fn get_parent_node(&self, py: Python<'_>) -> PyResult<Option<Py<Node>>> {
            let Some((nid, _)) = self.path.last() else {
                return Ok(None);
            };
            let mut p = self.path.clone();
            p.pop();
            Ok(Some(Py::new(
                py,
                Node {
                    src: self.src.clone(),
                    path: p,
                    id: *nid,
                },
            )?))
        }

        /// True when this object was passed as a subgraph and is now read-only.
        #[getter]
        fn is_moved(&self) -> PyResult<bool> {
            Ok(match &self.src {
                GraphSource::Cell(c) => c
                    .state
                    .read()
                    .map(|s| s.moved_to.is_some())
                    .unwrap_or(false),
                GraphSource::Builder(_) => false,
            })
        }

        fn __copy__(&self) -> PyResult<()> {
            Err(PyRuntimeError::new_err("Graph does not support copy"))
        }
        fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<()> {
            Err(PyRuntimeError::new_err("Graph does not support deepcopy"))
        }
    }
}

/// Which of a node's port lists a per-port method reads: inputs or outputs.
#[derive(Clone, Copy)]
enum Side {
    Input,
    Output,
}

impl Side {
    /// The port index argument (GE's error names it "Input index" / "Output index"), and
    /// "input" / "output" for messages.
    fn index_arg(self, index: &Bound<'_, PyAny>) -> PyResult<(i64, &'static str)> {
        let (word, cap) = match self {
            Side::Input => ("input", "Input"),
            Side::Output => ("output", "Output"),
        };
        Ok((py_int(index, &format!("{cap} index"))?, word))
    }
    fn desc(self, n: &es_core::Node, i: i64) -> Option<&TensorDesc> {
        let i = usize::try_from(i).ok()?;
        match self {
            Side::Input => n.inputs.get(i).map(|s| &*s.desc),
            Side::Output => n.outputs.get(i).map(|s| &*s.desc),
        }
    }
    fn desc_mut(self, n: &mut es_core::Node, i: i64) -> Option<&mut TensorDesc> {
        let i = usize::try_from(i).ok()?;
        match self {
            Side::Input => n.inputs.get_mut(i).map(|s| &mut *s.desc),
            Side::Output => n.outputs.get_mut(i).map(|s| &mut *s.desc),
        }
    }
}

/// The per-port methods of `Node` (`get_input_attr`, `update_output_desc`, ...), one body for
/// both sides.
impl Node {
    fn port_attr(
        &self,
        py: Python<'_>,
        side: Side,
        attr_name: &Bound<'_, PyAny>,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        let (i, word) = side.index_arg(index)?;
        let attr_name = attr_name_arg(attr_name)?;
        let attr_name = attr_name.as_str();
        let v = self.read(|_, n| {
            let d = side.desc(n, i).ok_or_else(|| {
                PyRuntimeError::new_err(format!("'{}' has no {word} {i}", n.name))
            })?;
            d.attrs.get(attr_name).cloned().ok_or_else(|| {
                PyRuntimeError::new_err(format!(
                    "Failed to get Node {} {word} attribute '{attr_name}' for index {i}",
                    n.name
                ))
            })
        })?;
        attr_to_py(py, &v)
    }
    fn set_port_attr(
        &self,
        side: Side,
        attr_name: &Bound<'_, PyAny>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (i, word) = side.index_arg(index)?;
        let attr_name = attr_name_arg(attr_name)?;
        let attr_name = attr_name.as_str();
        let a = attr_value(value, None, attr_name)?;
        self.write(&format!("set an {word} attribute"), |n| {
            let name = n.name.clone();
            let d = side
                .desc_mut(n, i)
                .ok_or_else(|| PyRuntimeError::new_err(format!("'{name}' has no {word} {i}")))?;
            d.attrs.insert(attr_name.to_string(), a);
            Ok(())
        })
    }
    fn port_desc(
        &self,
        py: Python<'_>,
        side: Side,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        let (i, word) = side.index_arg(index)?;
        let d = self.read(|_, n| {
            side.desc(n, i).cloned().ok_or_else(|| {
                PyRuntimeError::new_err(format!("Failed to get {word} desc for index {i}"))
            })
        })?;
        desc_to_py(py, &d)
    }
    fn update_port_desc(
        &self,
        side: Side,
        index: &Bound<'_, PyAny>,
        tensor_desc: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (i, word) = side.index_arg(index)?;
        let d = desc_from_py(tensor_desc)?;
        self.write(&format!("update an {word} desc"), |n| {
            let s = side.desc_mut(n, i).ok_or_else(|| {
                PyRuntimeError::new_err(format!("Failed to update {word} desc for index {i}"))
            })?;
            *s = d;
            Ok(())
        })
    }
}

guarded! {
    #[pymethods]
    impl Node {
        #[getter]
        fn name(&self) -> PyResult<String> {
            self.read(|_, n| Ok(n.name.to_string()))
        }
        #[getter]
        fn r#type(&self) -> PyResult<String> {
            self.read(|_, n| Ok(n.op_type.to_string()))
        }
        fn get_inputs_size(&self) -> PyResult<usize> {
            self.read(|_, n| Ok(n.inputs.len()))
        }
        fn get_outputs_size(&self) -> PyResult<usize> {
            self.read(|_, n| Ok(n.outputs.len()))
        }
        fn get_in_control_nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<Node>>> {
            let ids = self.read(|_, n| Ok(n.in_control.clone()))?;
            ids.into_iter()
                .map(|id| Py::new(py, self.view(id)))
                .collect()
        }
        fn get_out_control_nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<Node>>> {
            let ids = self.read(|_, n| Ok(n.out_control.clone()))?;
            ids.into_iter()
                .map(|id| Py::new(py, self.view(id)))
                .collect()
        }
        /// (producer node, producer output index) of input `in_index`.
        fn get_in_data_nodes_and_port_indexes(
            &self,
            py: Python<'_>,
            in_index: &Bound<'_, PyAny>,
        ) -> PyResult<(Py<Node>, u32)> {
            let i = py_int(in_index, "Input index")?;
            let src = self.read(|_, n| {
                let slot = usize::try_from(i)
                    .ok()
                    .and_then(|i| n.inputs.get(i))
                    .ok_or_else(|| {
                        PyRuntimeError::new_err(format!(
                            "Failed to get input data node for index {i}: '{}' has {} inputs",
                            n.name,
                            n.inputs.len()
                        ))
                    })?;
                slot.source.ok_or_else(|| {
                    PyRuntimeError::new_err(format!(
                        "Failed to get input data node for index {i}: input '{}' is not connected",
                        slot.name
                    ))
                })
            })?;
            Ok((Py::new(py, self.view(src.node))?, src.index))
        }
        /// Every (consumer node, consumer input index) of output `out_index`.
        fn get_out_data_nodes_and_port_indexes(
            &self,
            py: Python<'_>,
            out_index: &Bound<'_, PyAny>,
        ) -> PyResult<Vec<(Py<Node>, u32)>> {
            let i = py_int(out_index, "Output index")?;
            let cons = self.read(|_, n| {
                let o = usize::try_from(i)
                    .ok()
                    .and_then(|i| n.outputs.get(i))
                    .ok_or_else(|| {
                        PyRuntimeError::new_err(format!(
                            "Failed to get output data node for index {i}: '{}' has {} outputs",
                            n.name,
                            n.outputs.len()
                        ))
                    })?;
                Ok(o.consumers.clone())
            })?;
            cons.into_iter()
                .map(|c| Ok((Py::new(py, self.view(c.node))?, c.index)))
                .collect()
        }
        fn get_attr(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
            let key = attr_key_arg(key)?;
            let v = self.read(|_, n| Ok(n.attr(&key).cloned()))?;
            attr_found(py, v, &key, "Node")
        }
        fn has_attr(&self, attr_name: &Bound<'_, PyAny>) -> PyResult<bool> {
            let key: String = attr_name
                .extract()
                .map_err(|_| PyTypeError::new_err("attr_name must be a string"))?;
            self.read(|_, n| Ok(n.attr(&key).is_some()))
        }
        #[pyo3(signature = (key, value, ty = None))]
        fn set_attr(
            &self,
            key: &Bound<'_, PyAny>,
            value: &Bound<'_, PyAny>,
            ty: Option<&str>,
        ) -> PyResult<()> {
            let key = attr_key_arg(key)?;
            self.src.write(&self.path, "set a node attribute", |g| {
                set_node_attr(g, self.id, &key, value, ty)
            })
        }
        /// IR attributes only (prototype attributes).
        fn get_ir_attrs(&self, py: Python<'_>) -> PyResult<PyObject> {
            let attrs = self.read(|_, n| Ok(n.attrs.clone()))?;
            let d = PyDict::new(py);
            for (k, v) in &attrs {
                d.set_item(k, attr_to_py(py, v)?)?;
            }
            Ok(d.into_any().unbind())
        }
        /// Private attributes only.
        fn get_private_attrs(&self, py: Python<'_>) -> PyResult<PyObject> {
            let attrs = self.read(|_, n| Ok(n.private_attrs.clone()))?;
            let d = PyDict::new(py);
            for (k, v) in &attrs {
                d.set_item(k, attr_to_py(py, v)?)?;
            }
            Ok(d.into_any().unbind())
        }
        fn get_input_attr(
            &self,
            py: Python<'_>,
            attr_name: &Bound<'_, PyAny>,
            input_index: &Bound<'_, PyAny>,
        ) -> PyResult<PyObject> {
            self.port_attr(py, Side::Input, attr_name, input_index)
        }
        fn set_input_attr(
            &self,
            attr_name: &Bound<'_, PyAny>,
            input_index: &Bound<'_, PyAny>,
            value: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            self.set_port_attr(Side::Input, attr_name, input_index, value)
        }
        fn get_output_attr(
            &self,
            py: Python<'_>,
            attr_name: &Bound<'_, PyAny>,
            output_index: &Bound<'_, PyAny>,
        ) -> PyResult<PyObject> {
            self.port_attr(py, Side::Output, attr_name, output_index)
        }
        fn set_output_attr(
            &self,
            attr_name: &Bound<'_, PyAny>,
            output_index: &Bound<'_, PyAny>,
            value: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            self.set_port_attr(Side::Output, attr_name, output_index, value)
        }
        fn get_input_desc(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<PyObject> {
            self.port_desc(py, Side::Input, index)
        }
        fn get_output_desc(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<PyObject> {
            self.port_desc(py, Side::Output, index)
        }
        fn update_input_desc(
            &self,
            index: &Bound<'_, PyAny>,
            tensor_desc: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            self.update_port_desc(Side::Input, index, tensor_desc)
        }
        fn update_output_desc(
            &self,
            index: &Bound<'_, PyAny>,
            tensor_desc: &Bound<'_, PyAny>,
        ) -> PyResult<()> {
            self.update_port_desc(Side::Output, index, tensor_desc)
        }
        /// Names of this node's subgraph instances.
        fn get_subgraph_names(&self) -> PyResult<Vec<String>> {
            self.read(|_, n| Ok(n.subgraphs.iter().map(|s| s.name.to_string()).collect()))
        }
        /// A view of one of this node's subgraphs.
        fn get_subgraph(&self, py: Python<'_>, name: &str) -> PyResult<Py<Graph>> {
            self.read(|_, n| {
                n.subgraph(name).map(|_| ()).ok_or_else(|| {
                    PyRuntimeError::new_err(format!("node '{}' has no subgraph '{name}'", n.name))
                })
            })?;
            let mut p = self.path.clone();
            p.push((self.id, name.to_string()));
            Py::new(
                py,
                Graph {
                    src: self.src.clone(),
                    path: p,
                },
            )
        }
        /// The graph this node is in.
        fn get_owner_graph(&self, py: Python<'_>) -> PyResult<Py<Graph>> {
            match &self.src {
                GraphSource::Cell(_) => Py::new(
                    py,
                    Graph {
                        src: self.src.clone(),
                        path: self.path.clone(),
                    },
                ),
                GraphSource::Builder(_) => Err(PyRuntimeError::new_err(
                    "the node belongs to a graph under construction",
                )),
            }
        }
        fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
            match other.downcast::<Node>() {
                Ok(o) => {
                    let o = o.get();
                    o.src.same(&self.src) && o.path == self.path && o.id == self.id
                }
                Err(_) => false,
            }
        }
        fn __hash__(&self) -> u64 {
            use slotmap::Key;
            self.id.data().as_ffi()
        }
        fn __repr__(&self) -> String {
            self.read(|_, n| Ok(format!("Node('{}', {})", n.name, n.op_type)))
                .unwrap_or_else(|_| "Node(<removed>)".into())
        }
    }
}
