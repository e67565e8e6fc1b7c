//! Where a `Graph`/`Node` view reads its graph from: a built graph's cell ([`GraphCell`]) or a
//! builder's graph under construction ([`BuilderCell`]), and the path down to a subgraph.
//! Below every view type (graph.rs, builder.rs, passes.rs use it; it uses none of them).

use es_core::{Graph as CoreGraph, GraphBuilder, NodeId};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub struct BuilderState {
    pub b: GraphBuilder,
    pub built: bool,
    /// The nodes' names when the graph was built: a tensor's `name` still reads after the
    /// build, as in GE.
    pub built_names: slotmap::SecondaryMap<NodeId, es_core::graph::Name>,
}

/// Shared by a builder object and every tensor it made.
pub struct BuilderCell {
    pub name: String,
    state: Mutex<BuilderState>,
}

impl BuilderCell {
    pub fn new(name: String, b: GraphBuilder) -> Arc<BuilderCell> {
        Arc::new(BuilderCell {
            name,
            state: Mutex::new(BuilderState {
                b,
                built: false,
                built_names: Default::default(),
            }),
        })
    }
    pub fn lock(&self) -> MutexGuard<'_, BuilderState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
    /// The state, if the builder has not been built yet.
    pub fn usable(&self, what: &str) -> PyResult<MutexGuard<'_, BuilderState>> {
        let g = self.lock();
        if g.built {
            return Err(PyRuntimeError::new_err(format!(
                "Cannot {what}: GraphBuilder '{}' has already been built. Create a new GraphBuilder to build another graph.",
                self.name
            )));
        }
        Ok(g)
    }
}

pub struct GraphState {
    pub graph: CoreGraph,
    /// Where the graph went when it was passed as a subgraph; it stays readable.
    pub moved_to: Option<String>,
    /// Subgraphs added without a parent node (GE's one-argument `Graph.add_subgraph`): views
    /// shared with their owner, listed, found and removed by name; compiling, running and saving
    /// the graph do not use them (no node refers to them).
    pub detached: Vec<(GraphSource, Path)>,
}

pub struct GraphCell {
    pub state: RwLock<GraphState>,
    /// Set when a view handed to a pass outlives its run: every access then fails with
    /// "graph handle has expired".
    pub expired: AtomicBool,
}

impl GraphCell {
    pub fn new(graph: CoreGraph) -> Arc<GraphCell> {
        Arc::new(GraphCell {
            state: RwLock::new(GraphState {
                graph,
                moved_to: None,
                detached: Vec::new(),
            }),
            expired: AtomicBool::new(false),
        })
    }
    /// The state, read-locked.
    pub fn read_state(&self) -> PyResult<RwLockReadGuard<'_, GraphState>> {
        self.state
            .read()
            .map_err(|_| PyRuntimeError::new_err("graph lock poisoned"))
    }
    /// The state, write-locked.
    pub fn write_state(&self) -> PyResult<RwLockWriteGuard<'_, GraphState>> {
        self.state
            .write()
            .map_err(|_| PyRuntimeError::new_err("graph lock poisoned"))
    }
    pub fn check(&self) -> PyResult<()> {
        if self.expired.load(Ordering::Acquire) {
            return Err(PyRuntimeError::new_err("graph handle has expired"));
        }
        Ok(())
    }
}

/// What a view reads from: a built graph, or a builder's graph under construction.
#[derive(Clone)]
pub enum GraphSource {
    Cell(Arc<GraphCell>),
    Builder(Arc<BuilderCell>),
}

pub type Path = Vec<(NodeId, String)>;

fn descend<'a>(mut g: &'a CoreGraph, path: &Path) -> PyResult<&'a CoreGraph> {
    for (nid, name) in path {
        let n = g.node(*nid).map_err(|_| parent_removed())?;
        g = n.subgraph(name).ok_or_else(|| subgraph_removed(name))?;
    }
    Ok(g)
}

fn descend_mut<'a>(mut g: &'a mut CoreGraph, path: &Path) -> PyResult<&'a mut CoreGraph> {
    for (nid, name) in path {
        let n = g.node_mut(*nid).map_err(|_| parent_removed())?;
        g = n.subgraph_mut(name).ok_or_else(|| subgraph_removed(name))?;
    }
    Ok(g)
}

/// A subgraph view whose parent node is gone.
fn parent_removed() -> PyErr {
    PyRuntimeError::new_err("the parent node of this subgraph has been removed")
}

/// A subgraph view whose subgraph is gone from its parent node.
fn subgraph_removed(name: &str) -> PyErr {
    PyRuntimeError::new_err(format!("subgraph '{name}' has been removed"))
}

impl GraphSource {
    pub fn read<R>(&self, path: &Path, f: impl FnOnce(&CoreGraph) -> PyResult<R>) -> PyResult<R> {
        match self {
            GraphSource::Cell(c) => {
                c.check()?;
                let st = c.read_state()?;
                f(descend(&st.graph, path)?)
            }
            GraphSource::Builder(b) => {
                let st = b.usable("use a node of this builder")?;
                f(descend(st.b.graph(), path)?)
            }
        }
    }

    pub fn write<R>(
        &self,
        path: &Path,
        what: &str,
        f: impl FnOnce(&mut CoreGraph) -> PyResult<R>,
    ) -> PyResult<R> {
        match self {
            GraphSource::Cell(c) => {
                c.check()?;
                let mut st = c.write_state()?;
                if let Some(to) = &st.moved_to {
                    return Err(PyRuntimeError::new_err(format!(
                        "Cannot {what}: graph '{}' was passed as a subgraph and now belongs to {to}; it can be read but not changed",
                        st.graph.name
                    )));
                }
                f(descend_mut(&mut st.graph, path)?)
            }
            GraphSource::Builder(b) => {
                let mut st = b.usable(what)?;
                f(descend_mut(st.b.graph_mut(), path)?)
            }
        }
    }

    pub fn same(&self, o: &GraphSource) -> bool {
        match (self, o) {
            (GraphSource::Cell(a), GraphSource::Cell(b)) => Arc::ptr_eq(a, b),
            (GraphSource::Builder(a), GraphSource::Builder(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
