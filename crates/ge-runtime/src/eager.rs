//! Eager runs (`ge.graphMode` = off): node by node, each node's compiled step cached by the
//! node's input signature.
//!
//! An eager run walks the graph's needed nodes in topological order. For each node it compares
//! the signature of the values reaching it (per input: dtype and shape; for a small integer
//! value that depends on no graph input's values, such as a shape computed by Shape, the value
//! itself) with the signatures it compiled the node for before. A hit reuses that compile: the
//! inferred outputs, the selected kernel, its constants and its into-kernel; a miss compiles
//! the node alone (a graph of that node with its constants, its run-time inputs as Data nodes
//! of the values' descriptions and its value inputs as constants, through the same inference,
//! promotion casts, folding and kernel selection as graph mode: [`plan::prepare`]) and keeps
//! it, the latest [`PER_NODE`] signatures per node. Buffers are reused as in graph mode: an
//! element-wise step whose input dies there writes over it, other into-steps write into a
//! buffer freed by an earlier node (or an earlier run). Nothing of a cached step depends on a
//! run-time value that is not part of its signature, so a hit gives the result a fresh compile
//! would, and the same kernels make graph mode's results, bit for bit (except where graph
//! mode rewrites across nodes: BatchNorm folded into a convolution's weights).
//!
//! The first eager run of a graph signature compiles the whole graph, as graph mode would, and
//! runs that plan (its compile report is the graph's); later runs of the signature go node by
//! node only where that compile rewrote nothing across nodes ([`Eager::keeps_nodes`]: no
//! BatchNorm folded into a convolution, no pattern replaced, no duplicate merged, no promotion
//! cast; the epilogue fusion of a product with its bias and activation gives the same bits
//! either way), so that eager results equal graph mode's bit for bit; otherwise every run
//! compiles the whole graph, as before. Where a node cannot be compiled alone (its compile
//! fails, or its memory plan is over the limit), the run compiles the whole graph instead
//! ([`Outcome::Whole`]), and so do later runs of that signature.

use crate::arena;
use crate::error::{Error, Result};
use crate::plan::{self, Plan, Src, StepArg};
use crate::value::{InputSignature, Signature, Value};
use es_core::graph::is_data_op;
use es_core::{AttrValue, DataType, Graph, InPort, Node, NodeId, OutPort};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Signatures kept per node (most recently used first).
pub const PER_NODE: usize = 4;

/// Elements of a value that is part of a node's signature (above: its shape only).
const VALUE_KEY_LIMIT: usize = 256;

/// Free buffers a run keeps for later steps.
const SPARE: usize = 8;

struct ENode {
    id: NodeId,
    inputs: Vec<Option<Src>>,
    outputs: Vec<usize>,
    /// Slots whose last reader is this node.
    free: Vec<usize>,
    /// Per input: whether the node may take its value (a node's output, no graph output, read
    /// by this input only and dying here).
    takes: SmallVec<[bool; 4]>,
}

/// What an input of a node contributes to its signature.
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Absent,
    Const,
    Shape(DataType, SmallVec<[usize; 4]>),
    Value(Value),
}

/// A node compiled for one signature.
struct Entry {
    key: SmallVec<[Key; 4]>,
    plan: Plan,
    /// The slot of each of the plan's inputs.
    data: SmallVec<[usize; 4]>,
    /// The step's arguments, where the plan is one step ([`Plan::one_step`]).
    direct: Option<Vec<StepArg>>,
    into: Option<(DataType, Vec<usize>, bool)>,
}

/// What one run holds: the values alive, the node caches, free buffers.
struct Ws {
    slots: Vec<Option<Value>>,
    cache: Vec<SmallVec<[Arc<Entry>; 2]>>,
    spare: Vec<Value>,
}

/// Counters of a graph's eager node caches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EagerStats {
    /// Node executions that reused a compile.
    pub hits: u64,
    /// Node compiles.
    pub misses: u64,
    /// Runs that compiled the whole graph instead.
    pub whole_graph_runs: u64,
}

/// How an eager run ended.
pub(crate) enum Outcome {
    Done(Vec<Value>),
    /// A node could not be compiled alone: the run's inputs back, for a whole-graph compile.
    Whole(Vec<Value>),
}

/// A graph prepared for eager runs (once per graph; nothing in it depends on a signature but
/// the node caches).
pub(crate) struct Eager {
    nodes: Vec<ENode>,
    slots: usize,
    /// The graph outputs that are constants.
    consts: Vec<Value>,
    inputs: Vec<Option<usize>>,
    outputs: Vec<Src>,
    /// Per slot: whether its value depends on no graph input's values (only on shapes and
    /// constants, deterministically), so that a small one is compiled in as a constant.
    static_value: Vec<bool>,
    pool: Mutex<Vec<Ws>>,
    /// Per graph signature seen: whether its runs go node by node (else whole-graph compiles).
    verdicts: Mutex<Vec<(Signature, bool)>>,
    hits: AtomicU64,
    misses: AtomicU64,
    whole_runs: AtomicU64,
}

/// Ops whose outputs depend only on their inputs' shapes.
fn shape_op(op: &str) -> bool {
    matches!(op, "Shape" | "ShapeN" | "Size" | "Rank")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Eager {
    /// Prepares `graph` (valid) for eager runs (its runs take the same graph).
    pub(crate) fn new(graph: &Graph) -> Result<Eager> {
        let order = crate::optimize::needed_nodes(graph)?;
        let data = graph.input_nodes();
        let mut slot_of: FxHashMap<OutPort, Src> = FxHashMap::default();
        let mut slots = 0usize;
        let mut inputs = vec![None; data.len()];
        let mut nodes = Vec::new();
        let mut static_value = Vec::new();
        let mut const_of: FxHashMap<usize, NodeId> = FxHashMap::default();
        let mut n_consts = 0usize;
        for &id in &order {
            let n = graph.node(id)?;
            if is_data_op(&n.op_type) {
                if let Some(k) = data.iter().position(|&d| d == id) {
                    inputs[k] = Some(slots);
                }
                slot_of.insert(OutPort { node: id, index: 0 }, Src::Slot(slots));
                static_value.push(false);
                slots += 1;
                continue;
            }
            if n.const_value().is_some() {
                slot_of.insert(OutPort { node: id, index: 0 }, Src::Const(n_consts));
                const_of.insert(n_consts, id);
                n_consts += 1;
                continue;
            }
            let mut srcs = Vec::with_capacity(n.inputs.len());
            for inp in &n.inputs {
                srcs.push(match inp.source {
                    Some(p) => Some(*slot_of.get(&p).ok_or_else(|| {
                        Error::Compile(format!(
                            "node '{}' reads a value that is not planned",
                            n.name
                        ))
                    })?),
                    None => None,
                });
            }
            let stat = shape_op(&n.op_type)
                || (!crate::optimize::nondeterministic(&n.op_type)
                    && !crate::kernels::is_custom(&n.op_type)
                    && n.subgraphs.is_empty()
                    && srcs.iter().flatten().all(|s| match s {
                        Src::Const(_) => true,
                        Src::Slot(k) => static_value[*k],
                    }));
            let outs = plan::output_slots(&mut slot_of, id, n.outputs.len(), &mut slots);
            static_value.resize(slots, stat);
            nodes.push(ENode {
                id,
                inputs: srcs,
                outputs: outs,
                free: Vec::new(),
                takes: SmallVec::new(),
            });
        }
        let outputs = plan::graph_outputs(graph, &slot_of)?;
        // The graph outputs that are constants, loaded once.
        let mut consts = Vec::new();
        let mut out_src = Vec::with_capacity(outputs.len());
        for o in outputs {
            out_src.push(match o {
                Src::Const(c) => {
                    let n = graph.node(const_of[&c])?;
                    let t = n.const_value().expect("a constant node");
                    consts.push(Value::from_tensor(t).map_err(|e| e.at(&n.name, &n.op_type))?);
                    Src::Const(consts.len() - 1)
                }
                s => s,
            });
        }
        Self::liveness(&mut nodes, &out_src, &inputs, slots);
        Ok(Eager {
            nodes,
            slots,
            consts,
            inputs,
            outputs: out_src,
            static_value,
            pool: Mutex::new(Vec::new()),
            verdicts: Mutex::new(Vec::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            whole_runs: AtomicU64::new(0),
        })
    }

    /// Each slot's last reader (graph inputs and outputs are kept to the end of the run), and
    /// which inputs a node may take.
    fn liveness(nodes: &mut [ENode], outputs: &[Src], inputs: &[Option<usize>], slots: usize) {
        let mut last = vec![usize::MAX; slots];
        let mut readers = vec![0usize; slots];
        let mut produced = vec![false; slots];
        for (i, n) in nodes.iter().enumerate() {
            for &k in &n.outputs {
                last[k] = i;
                produced[k] = true;
            }
            for s in n.inputs.iter().flatten() {
                if let Src::Slot(k) = s {
                    last[*k] = i;
                    readers[*k] += 1;
                }
            }
        }
        let mut kept = vec![false; slots];
        for o in outputs {
            if let Src::Slot(k) = o {
                kept[*k] = true;
            }
        }
        for k in inputs.iter().flatten() {
            kept[*k] = true;
        }
        for k in 0..slots {
            if !kept[k] && last[k] != usize::MAX {
                nodes[last[k]].free.push(k);
            }
        }
        for (i, n) in nodes.iter_mut().enumerate() {
            let inputs = &n.inputs;
            n.takes = inputs
                .iter()
                .map(|s| match s {
                    Some(Src::Slot(k)) => {
                        produced[*k]
                            && !kept[*k]
                            && last[*k] == i
                            && inputs.iter().filter(|x| **x == Some(Src::Slot(*k))).count() == 1
                    }
                    _ => false,
                })
                .collect();
        }
    }

    pub(crate) fn stats(&self) -> EagerStats {
        EagerStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            whole_graph_runs: self.whole_runs.load(Ordering::Relaxed),
        }
    }

    /// Whether runs of `sig` go node by node (true) or compile the whole graph (false); None
    /// before its first run.
    pub(crate) fn verdict(&self, sig: &Signature) -> Option<bool> {
        lock(&self.verdicts)
            .iter()
            .find(|(s, _)| s == sig)
            .map(|(_, v)| *v)
    }

    /// Records how runs of `sig` go.
    pub(crate) fn set_verdict(&self, sig: &Signature, node_by_node: bool) {
        let mut w = lock(&self.verdicts);
        match w.iter_mut().find(|(s, _)| s == sig) {
            Some(x) => x.1 = node_by_node,
            None => {
                if w.len() >= 64 {
                    w.clear();
                }
                w.push((sig.clone(), node_by_node));
            }
        }
    }

    /// Counts an eager run that compiled the whole graph.
    pub(crate) fn note_whole_run(&self) {
        self.whole_runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `prepared` (`graph` through every compile stage) computes what running
    /// `graph`'s nodes one by one does: each of its computing nodes is a node of `graph` (same
    /// name, op and attributes) reading the same producers' outputs, or constants where
    /// `graph` computed a value (folded), and the graph outputs are the same nodes'. A
    /// BatchNorm folded into a convolution, a replaced pattern, a merged duplicate, a removed
    /// identity or a promotion cast makes it false.
    pub(crate) fn keeps_nodes(graph: &Graph, prepared: &Graph) -> bool {
        let same_source = |p: Option<OutPort>, q: Option<OutPort>| -> bool {
            let (Some(p), Some(q)) = (p, q) else {
                return p.is_none() && q.is_none();
            };
            let (Ok(pn), Ok(qn)) = (prepared.node(p.node), graph.node(q.node)) else {
                return false;
            };
            if pn.const_value().is_some() && qn.const_value().is_none() {
                return !is_data_op(&qn.op_type); // folded
            }
            pn.name == qn.name && p.index == q.index
        };
        let nodes_kept = prepared.iter().all(|(_, pn)| {
            if is_data_op(&pn.op_type) || pn.const_value().is_some() {
                return true;
            }
            let Some(qn) = graph.find(&pn.name).and_then(|q| graph.node(q).ok()) else {
                return false;
            };
            qn.op_type == pn.op_type
                && qn.attrs == pn.attrs
                && qn.inputs.len() == pn.inputs.len()
                && qn.outputs.len() == pn.outputs.len()
                && pn
                    .inputs
                    .iter()
                    .zip(&qn.inputs)
                    .all(|(a, b)| same_source(a.source, b.source))
        });
        nodes_kept
            && prepared.outputs.len() == graph.outputs.len()
            && prepared
                .outputs
                .iter()
                .zip(&graph.outputs)
                .all(|(p, q)| same_source(Some(*p), Some(*q)))
    }

    /// Runs the graph on `inputs` (of signature `sig`) node by node; `limit`: the memory limit
    /// a node's plan is checked against.
    pub(crate) fn run(
        &self,
        graph: &Graph,
        inputs: Vec<Value>,
        sig: &Signature,
        limit: u64,
    ) -> Result<Outcome> {
        plan::check_input_count(self.inputs.len(), inputs.len())?;
        let mut ws = lock(&self.pool).pop().unwrap_or_else(|| Ws {
            slots: vec![None; self.slots],
            cache: (0..self.nodes.len()).map(|_| SmallVec::new()).collect(),
            spare: Vec::new(),
        });
        for (v, s) in inputs.into_iter().zip(&self.inputs) {
            if let Some(k) = s {
                ws.slots[*k] = Some(v);
            }
        }
        let r = self.run_nodes(graph, &mut ws, limit);
        let out = match r {
            Ok(true) => Ok(Outcome::Done(self.take_outputs(&mut ws)?)),
            Ok(false) => {
                self.set_verdict(sig, false);
                let back = self
                    .inputs
                    .iter()
                    .map(|s| s.and_then(|k| ws.slots[k].take()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Error::Compile("an eager run lost an input".into()))?;
                Ok(Outcome::Whole(back))
            }
            Err(e) => Err(e),
        };
        for s in ws.slots.iter_mut() {
            *s = None;
        }
        lock(&self.pool).push(ws);
        out
    }

    /// Runs every node; false where one did not compile alone.
    fn run_nodes(&self, graph: &Graph, ws: &mut Ws, limit: u64) -> Result<bool> {
        for (i, n) in self.nodes.iter().enumerate() {
            let hit = ws.cache[i]
                .iter()
                .position(|e| self.matches(n, &ws.slots, &e.key));
            let entry = match hit {
                Some(p) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    if p > 0 {
                        let e = ws.cache[i].remove(p);
                        ws.cache[i].insert(0, e);
                    }
                    ws.cache[i][0].clone()
                }
                None => {
                    self.misses.fetch_add(1, Ordering::Relaxed);
                    let Ok(e) = self.compile(graph, n, &ws.slots, limit) else {
                        return Ok(false);
                    };
                    let e = Arc::new(e);
                    ws.cache[i].insert(0, e.clone());
                    ws.cache[i].truncate(PER_NODE);
                    e
                }
            };
            self.exec(n, &entry, ws)?;
            for &k in &n.free {
                if let Some(v) = ws.slots[k].take() {
                    if arena::recyclable(&v) {
                        if ws.spare.len() >= SPARE {
                            ws.spare.remove(0);
                        }
                        ws.spare.push(v);
                    }
                }
            }
        }
        Ok(true)
    }

    fn take_outputs(&self, ws: &mut Ws) -> Result<Vec<Value>> {
        let mut outs = Vec::with_capacity(self.outputs.len());
        for (i, s) in self.outputs.iter().enumerate() {
            outs.push(match s {
                Src::Const(c) => self.consts[*c].clone(),
                Src::Slot(k) => {
                    let again = self.outputs[i + 1..].contains(s);
                    let v = if again {
                        ws.slots[*k].clone()
                    } else {
                        ws.slots[*k].take()
                    };
                    v.ok_or_else(|| Error::Compile("a graph output was not computed".into()))?
                }
            });
        }
        Ok(outs)
    }

    /// Whether slot `k`'s value (`v`) is part of a signature (not only its shape).
    fn value_keyed(&self, k: usize, v: &Value) -> bool {
        self.static_value[k]
            && v.len() <= VALUE_KEY_LIMIT
            && (v.dtype().is_integer() || v.dtype() == DataType::BOOL)
            && arena::recyclable(v)
    }

    fn key_of(&self, n: &ENode, slots: &[Option<Value>]) -> SmallVec<[Key; 4]> {
        n.inputs
            .iter()
            .map(|s| match s {
                None => Key::Absent,
                Some(Src::Const(_)) => Key::Const,
                Some(Src::Slot(k)) => match &slots[*k] {
                    Some(v) if self.value_keyed(*k, v) => Key::Value(v.clone()),
                    Some(v) => Key::Shape(v.dtype(), v.shape().into()),
                    None => Key::Absent,
                },
            })
            .collect()
    }

    fn matches(&self, n: &ENode, slots: &[Option<Value>], key: &[Key]) -> bool {
        n.inputs.iter().zip(key).all(|(s, k)| match (s, k) {
            (None, Key::Absent) | (Some(Src::Const(_)), Key::Const) => true,
            (Some(Src::Slot(x)), Key::Shape(dt, dims)) => slots[*x]
                .as_ref()
                .is_some_and(|v| v.shape() == &dims[..] && v.dtype() == *dt),
            (Some(Src::Slot(x)), Key::Value(w)) => slots[*x].as_ref() == Some(w),
            _ => false,
        })
    }

    /// Compiles node `n` alone for the values reaching it.
    fn compile(
        &self,
        graph: &Graph,
        n: &ENode,
        slots: &[Option<Value>],
        limit: u64,
    ) -> Result<Entry> {
        let node = graph.node(n.id)?;
        let key = self.key_of(n, slots);
        let mut g = Graph::new(graph.name.clone());
        let id = g.add_node(node.clone())?;
        let mut port_of: FxHashMap<OutPort, OutPort> = FxHashMap::default();
        let mut data: SmallVec<[usize; 4]> = SmallVec::new();
        let mut sig: Signature = Vec::new();
        for (j, (inp, src)) in node.inputs.iter().zip(&n.inputs).enumerate() {
            let (Some(p), Some(src)) = (inp.source, src) else {
                continue;
            };
            let mp = match port_of.get(&p) {
                Some(mp) => *mp,
                None => {
                    let prod = graph.node(p.node)?;
                    let made = match (src, &key[j]) {
                        (Src::Const(_), _) => g.add_node(prod.clone())?,
                        (Src::Slot(_), Key::Value(v)) => {
                            let t = v.to_tensor()?;
                            let mut c = Node::new(g.unique_name(&prod.name), "Const");
                            c.outputs
                                .push(es_core::graph::OutputSlot::new("y", 0, t.desc.clone()));
                            c.attrs.insert("value".into(), AttrValue::Tensor(t));
                            g.add_node(c)?
                        }
                        (Src::Slot(k), _) => {
                            let v = slots[*k].as_ref().ok_or_else(|| {
                                Error::Compile(format!(
                                    "node '{}' reads a value that was not computed",
                                    node.name
                                ))
                            })?;
                            let desc = graph.out_desc(p)?.clone();
                            let mut d = Node::new(g.unique_name(&prod.name), "Data");
                            d.attrs
                                .insert("index".into(), AttrValue::Int(data.len() as i64));
                            d.inputs
                                .push(es_core::graph::InputSlot::new("x", 0, desc.clone()));
                            d.outputs
                                .push(es_core::graph::OutputSlot::new("y", 0, desc));
                            data.push(*k);
                            sig.push(InputSignature {
                                dtype: v.dtype(),
                                dims: v.shape().to_vec(),
                            });
                            g.add_node(d)?
                        }
                    };
                    let mp = OutPort {
                        node: made,
                        index: if matches!(src, Src::Const(_)) {
                            p.index
                        } else {
                            0
                        },
                    };
                    port_of.insert(p, mp);
                    mp
                }
            };
            g.add_data_edge(
                mp,
                InPort {
                    node: id,
                    index: j as u32,
                },
            )?;
        }
        for a in 0..node.outputs.len() {
            g.set_output(
                a,
                OutPort {
                    node: id,
                    index: a as u32,
                },
            )?;
        }
        plan::check_input_dtypes(&sig)?;
        let plan = plan::plan_prepared(plan::prepare(&g, &sig, None)?, &sig)?;
        if let Some(m) = &plan.report().memory {
            m.check(limit)?;
        }
        let direct = plan.one_step();
        let into = direct.as_ref().and_then(|_| plan.one_step_into());
        Ok(Entry {
            key,
            plan,
            data,
            direct,
            into,
        })
    }

    /// Runs a compiled node on the run's values.
    fn exec(&self, n: &ENode, e: &Entry, ws: &mut Ws) -> Result<()> {
        let Some(direct) = &e.direct else {
            return self.exec_plan(n, e, ws);
        };
        if let Some((dt, dims, elementwise)) = &e.into {
            let ok = {
                let args = Self::args(e, direct, &ws.slots, None);
                e.plan.one_step_accepts(&args)
            };
            if ok {
                // In place: an element-wise step over an input that dies here.
                let alias = if *elementwise {
                    direct.iter().enumerate().find_map(|(j, a)| match a {
                        StepArg::Input(i) => {
                            let k = e.data[*i];
                            let x = n.inputs.iter().position(|s| *s == Some(Src::Slot(k)))?;
                            (n.takes[x]
                                && ws.slots[k]
                                    .as_ref()
                                    .is_some_and(|v| arena::writable(v, *dt, dims)))
                            .then_some((j, k))
                        }
                        _ => None,
                    })
                } else {
                    None
                };
                let mut out = match alias {
                    Some((_, k)) => ws.slots[k]
                        .take()
                        .ok_or_else(|| Error::kernel("the in-place input is missing"))?,
                    None => Self::buffer(&mut ws.spare, *dt, dims)?,
                };
                let r = {
                    let args = Self::args(e, direct, &ws.slots, alias.map(|a| a.0));
                    e.plan.run_one_into(&args, &mut out, alias.map(|a| a.0))
                };
                ws.slots[n.outputs[0]] = Some(out);
                return r;
            }
        }
        let outs = {
            let args = Self::args(e, direct, &ws.slots, None);
            e.plan.run_one_kernel(&args)?
        };
        for (v, &k) in outs.into_iter().zip(&n.outputs) {
            ws.slots[k] = Some(v);
        }
        Ok(())
    }

    /// The step's arguments from the run's values and the plan's constants (`skip`: an
    /// argument moved into the output, absent).
    fn args<'a>(
        e: &'a Entry,
        direct: &[StepArg],
        slots: &'a [Option<Value>],
        skip: Option<usize>,
    ) -> SmallVec<[Option<&'a Value>; 4]> {
        direct
            .iter()
            .enumerate()
            .map(|(j, a)| match a {
                _ if Some(j) == skip => None,
                StepArg::Absent => None,
                StepArg::Const(c) => Some(e.plan.const_value(*c)),
                StepArg::Input(i) => slots[e.data[*i]].as_ref(),
            })
            .collect()
    }

    /// A buffer for an output of `dtype` and `dims`: a free one that holds it, or a new one.
    fn buffer(spare: &mut Vec<Value>, dtype: DataType, dims: &[usize]) -> Result<Value> {
        let n: usize = dims.iter().product();
        let old = spare
            .iter()
            .rposition(|v| v.dtype() == dtype && v.len() >= n)
            .map(|p| spare.swap_remove(p));
        arena::fit(old, dtype, dims, n)
    }

    /// Runs a node whose compile is more than one step (a promotion cast before it, or folded)
    /// through its plan.
    fn exec_plan(&self, n: &ENode, e: &Entry, ws: &mut Ws) -> Result<()> {
        let mut inputs = Vec::with_capacity(e.data.len());
        for &k in &e.data {
            let x = n.inputs.iter().position(|s| *s == Some(Src::Slot(k)));
            let take = x.is_some_and(|x| n.takes[x]);
            let v = if take {
                ws.slots[k].take()
            } else {
                ws.slots[k].clone()
            };
            inputs.push(v.ok_or_else(|| Error::Compile("an eager input was not computed".into()))?);
        }
        let outs = e.plan.execute(inputs)?;
        for (v, &k) in outs.into_iter().zip(&n.outputs) {
            ws.slots[k] = Some(v);
        }
        Ok(())
    }
}
