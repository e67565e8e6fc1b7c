//! The search: binding pattern nodes to target nodes, boundary and cycle checks,
//! [`find_matches`] and [`explain_match`].

use super::{is_const_op, MatchResult, Pattern, PatternMatcherConfig, Step};
use crate::attr::AttrMap;
use crate::error::Result;
use crate::graph::{Graph, InPort, NodeId, OutPort};
use crate::types::Tensor;
use rustc_hash::FxHashSet;
use std::fmt::Write as _;

/// What one pattern node is bound to during the search.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Free,
    /// A pattern input bound to a target port.
    Port(OutPort),
    /// A node bound to a target node; `swapped`: its two inputs are matched in reverse order.
    Node {
        id: NodeId,
        swapped: bool,
    },
}

/// Why a pattern node cannot be bound to a target node on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Misfit {
    /// Bound to another pattern node of the same search.
    Used,
    /// Claimed by an earlier match of the same [`find_matches`] call.
    Claimed,
    /// Not a live node of the target.
    Gone,
    OpType,
    InputCount,
    OutputCount,
    ConstValue,
    IrAttr,
}

/// Why one step of the search failed: ids and indexes only, so building one costs nothing.
/// Only [`explain_match`] turns it into a [`NoMatchReason`] (see [`Ctx::fail`]).
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// Pattern node `q` cannot be bound to target node `t`.
    Node { q: usize, t: NodeId, why: Misfit },
    /// Pattern input `k` of freshly bound `q` disagrees with the target's input.
    InputEdge { q: usize, k: usize },
    /// The pattern edge from output `a` of freshly bound `q` to input `k` of `r` (bound
    /// before `q`) is not in the target.
    ConsumerEdge {
        q: usize,
        a: usize,
        r: usize,
        k: usize,
    },
    /// Pattern node `q` consumes its own output (not a valid pattern).
    SelfLoop { q: usize },
    /// Step `Back`: input `input` of the target node of `from` is unconnected.
    NoProducer { q: usize, from: usize, input: usize },
    /// Step `Fwd`: `port` (of the target node of `from`) has no consumer.
    NoConsumer {
        q: usize,
        from: usize,
        port: OutPort,
    },
    /// Step `Fwd`: `c` consumes `port` at another input than the pattern's `input`.
    WrongSlot {
        q: usize,
        port: OutPort,
        c: InPort,
        input: usize,
    },
    /// Pattern input `i` is bound to a port produced inside the match.
    InputInside { i: usize },
    /// Output `a` of the target node of `q` is used outside the match (by `consumer`, or as a
    /// graph output when `None`) but is not a pattern output.
    UsedOutside {
        q: usize,
        a: u32,
        consumer: Option<InPort>,
    },
    /// Rewriting would close a cycle: external successor `succ` reaches external predecessor
    /// `pred`.
    Cycle { succ: NodeId, pred: NodeId },
}

type Check = std::result::Result<(), Failure>;

/// Why a pattern does not match at one anchor (see [`explain_match`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoMatchReason {
    /// Name of the pattern node where the search failed deepest.
    pub pattern_node: String,
    /// Name of the target node it was being compared with, if any.
    pub target_node: Option<String>,
    /// A readable sentence; pairs of values are written pattern first, then target.
    pub reason: String,
}

impl std::fmt::Display for NoMatchReason {
    /// `pattern node 'add' vs target node 'Mul_3': op type Add != Mul`, or
    /// `pattern node 'add': ...` when no target node is involved.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.target_node {
            Some(t) => write!(
                f,
                "pattern node '{}' vs target node '{t}': {}",
                self.pattern_node, self.reason
            ),
            None => write!(f, "pattern node '{}': {}", self.pattern_node, self.reason),
        }
    }
}

/// The outcome of [`explain_match`].
#[derive(Debug, Clone, PartialEq)]
pub enum MatchExplanation {
    /// The pattern matches at the anchor; the match [`find_matches`] would report there
    /// (unless an earlier match claimed one of its nodes).
    Matched(MatchResult),
    /// The pattern does not match at the anchor, with the failure of the deepest search step.
    NoMatch(NoMatchReason),
}

/// Records the deepest failure while explaining (absent in [`find_matches`]).
#[derive(Debug, Default)]
struct Recorder {
    /// (search depth, reason); only a strictly deeper failure replaces it.
    deepest: Option<(usize, NoMatchReason)>,
}

/// What the search looks up in the target: each node's topological position and the graph
/// outputs.
struct TargetIndex {
    topo: slotmap::SecondaryMap<NodeId, usize>,
    graph_outputs: FxHashSet<OutPort>,
}

impl TargetIndex {
    /// Errors: the target is cyclic.
    fn of(target: &Graph) -> Result<Self> {
        let order = target.topo_order()?;
        let mut topo = slotmap::SecondaryMap::with_capacity(order.len());
        for (i, id) in order.iter().enumerate() {
            topo.insert(*id, i);
        }
        Ok(TargetIndex {
            topo,
            graph_outputs: target.outputs.iter().copied().collect(),
        })
    }
}

struct Ctx<'a> {
    target: &'a Graph,
    pattern: &'a Pattern,
    cfg: PatternMatcherConfig,
    index: &'a TargetIndex,
    /// Target nodes of earlier matches of the same [`find_matches`] call.
    claimed: FxHashSet<NodeId>,
    bound: Vec<Bound>,
    /// Target nodes bound so far (a pattern has few nodes: a scan is cheaper than hashing).
    used: Vec<NodeId>,
    /// `Some` only in [`explain_match`]: failures are described and kept there.
    rec: Option<Recorder>,
}

fn attrs_equal(a: &AttrMap, b: &AttrMap) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).map(|w| v.approx_eq(w)).unwrap_or(false))
}

fn const_equal(a: Option<&Tensor>, b: Option<&Tensor>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.desc.dtype == b.desc.dtype && a.desc.shape == b.desc.shape && a.data == b.data
        }
        _ => false,
    }
}

fn perm(swapped: bool, k: usize) -> usize {
    if swapped {
        1 - k
    } else {
        k
    }
}

/// The first attribute on which `p` (pattern) and `t` (target) differ, as a sentence.
fn attr_difference(p: &AttrMap, t: &AttrMap) -> String {
    let keys: std::collections::BTreeSet<&String> = p.keys().chain(t.keys()).collect();
    for k in keys {
        match (p.get(k), t.get(k)) {
            (Some(a), Some(b)) if !a.approx_eq(b) => {
                return format!("IR attribute '{k}' differs: {a} != {b}");
            }
            (Some(a), None) => {
                return format!(
                    "IR attribute '{k}' = {a} is set in the pattern, not in the target"
                );
            }
            (None, Some(b)) => {
                return format!(
                    "IR attribute '{k}' = {b} is set in the target, not in the pattern"
                );
            }
            _ => {}
        }
    }
    "IR attributes differ".to_string()
}

/// How two Const values differ, as a sentence.
fn const_difference(p: Option<&Tensor>, t: Option<&Tensor>) -> String {
    let hex = |d: &[u8]| -> String {
        if d.len() <= 32 {
            d.iter().map(|b| format!("{b:02x}")).collect()
        } else {
            format!("<{} bytes>", d.len())
        }
    };
    match (p, t) {
        (None, _) => "const value differs: the pattern Const has no value".to_string(),
        (_, None) => "const value differs: the target Const has no value".to_string(),
        (Some(a), Some(b)) if a.desc.dtype != b.desc.dtype => format!(
            "const value differs: dtype {} != {}",
            a.desc.dtype, b.desc.dtype
        ),
        (Some(a), Some(b)) if a.desc.shape != b.desc.shape => format!(
            "const value differs: shape {} != {}",
            a.desc.shape, b.desc.shape
        ),
        (Some(a), Some(b)) => {
            let first = a
                .data
                .iter()
                .zip(b.data.iter())
                .position(|(x, y)| x != y)
                .unwrap_or(a.data.len().min(b.data.len()));
            format!(
                "const value differs: bytes {} != {} (first difference at byte {first})",
                hex(&a.data),
                hex(&b.data)
            )
        }
    }
}

impl<'a> Ctx<'a> {
    fn new(
        target: &'a Graph,
        pattern: &'a Pattern,
        cfg: PatternMatcherConfig,
        index: &'a TargetIndex,
        claimed: FxHashSet<NodeId>,
        rec: Option<Recorder>,
    ) -> Self {
        Ctx {
            target,
            pattern,
            cfg,
            index,
            claimed,
            bound: vec![Bound::Free; pattern.ids.len()],
            used: Vec::with_capacity(pattern.ids.len()),
            rec,
        }
    }
}

impl Ctx<'_> {
    /// Notes a failure at search depth `depth`: nothing unless explaining.
    #[inline]
    fn fail(&mut self, depth: usize, f: Failure) {
        if self.rec.is_some() {
            self.record(depth, f);
        }
    }

    #[cold]
    fn record(&mut self, depth: usize, f: Failure) {
        let deeper = match &self.rec {
            Some(r) => r.deepest.as_ref().is_none_or(|(d, _)| depth > *d),
            None => false,
        };
        if deeper {
            let reason = self.describe(f);
            if let Some(r) = &mut self.rec {
                r.deepest = Some((depth, reason));
            }
        }
    }

    /// Whether pattern node `q` (not a Data) can be bound to target node `t` on its own.
    fn node_fits(&self, q: usize, t: NodeId) -> Check {
        let bad = |why| Err(Failure::Node { q, t, why });
        if self.used.contains(&t) {
            return bad(Misfit::Used);
        }
        if self.claimed.contains(&t) {
            return bad(Misfit::Claimed);
        }
        let pn = self.pattern.pnode(q);
        let Ok(tn) = self.target.node(t) else {
            return bad(Misfit::Gone);
        };
        if is_const_op(&pn.op_type) {
            if !is_const_op(&tn.op_type) {
                return bad(Misfit::OpType);
            }
            if self.cfg.const_value_match && !const_equal(pn.const_value(), tn.const_value()) {
                return bad(Misfit::ConstValue);
            }
            return Ok(());
        }
        if pn.op_type != tn.op_type {
            return bad(Misfit::OpType);
        }
        if pn.inputs.len() != tn.inputs.len() {
            return bad(Misfit::InputCount);
        }
        if pn.outputs.len() != tn.outputs.len() {
            return bad(Misfit::OutputCount);
        }
        if self.cfg.ir_attr_match && !attrs_equal(&pn.attrs, &tn.attrs) {
            return bad(Misfit::IrAttr);
        }
        Ok(())
    }

    /// The target producer of input `k` of bound pattern node `r`.
    fn target_source(&self, r: usize, k: usize) -> Option<OutPort> {
        match self.bound[r] {
            Bound::Node { id, swapped } => {
                self.target
                    .node(id)
                    .ok()?
                    .inputs
                    .get(perm(swapped, k))?
                    .source
            }
            _ => None,
        }
    }

    /// The target port bound to output `idx` of pattern node `p`, if `p` is bound.
    fn bound_port(&self, p: usize, idx: u32) -> Option<OutPort> {
        match self.bound[p] {
            Bound::Free => None,
            Bound::Port(port) => Some(port),
            Bound::Node { id, .. } => Some(OutPort {
                node: id,
                index: idx,
            }),
        }
    }

    /// Checks the pattern edges between freshly bound `q` and the nodes bound before it.
    fn edges_consistent(&self, q: usize) -> Check {
        let pn = self.pattern.pnode(q);
        if let Bound::Node { .. } = self.bound[q] {
            for (k, inp) in pn.inputs.iter().enumerate() {
                let ts = self.target_source(q, k);
                let ok = match inp.source {
                    None => ts.is_none(),
                    Some(src) => match self.bound_port(self.pattern.index[&src.node], src.index) {
                        Some(want) => ts == Some(want),
                        None => ts.is_some(),
                    },
                };
                if !ok {
                    return Err(Failure::InputEdge { q, k });
                }
            }
        }
        for (a, out) in pn.outputs.iter().enumerate() {
            // `q` is bound by the caller: `bound_port` is never `None` here.
            let Some(port) = self.bound_port(q, a as u32) else {
                continue;
            };
            for c in &out.consumers {
                let r = self.pattern.index[&c.node];
                if r == q {
                    // A self loop cannot occur in a valid pattern; refuse it.
                    return Err(Failure::SelfLoop { q });
                }
                if matches!(self.bound[r], Bound::Node { .. })
                    && self.target_source(r, c.index as usize) != Some(port)
                {
                    return Err(Failure::ConsumerEdge {
                        q,
                        a,
                        r,
                        k: c.index as usize,
                    });
                }
            }
        }
        Ok(())
    }

    fn try_bind(&mut self, depth: usize, q: usize, b: Bound) -> bool {
        self.bound[q] = b;
        if let Bound::Node { id, .. } = b {
            self.used.push(id);
        }
        match self.edges_consistent(q) {
            Ok(()) => {
                if self.search(depth + 1) {
                    return true;
                }
            }
            Err(f) => self.fail(depth, f),
        }
        if let Bound::Node { id, .. } = b {
            // Bindings are undone in reverse order: `id` is the last one.
            if let Some(k) = self.used.iter().rposition(|&u| u == id) {
                self.used.remove(k);
            }
        }
        self.bound[q] = Bound::Free;
        false
    }

    fn swaps(&self, q: usize) -> &'static [bool] {
        if self.cfg.commutative && self.pattern.commutative[q] {
            &[false, true]
        } else {
            &[false]
        }
    }

    /// Tries target node `cand` as the anchor; on success leaves the binding in `bound`.
    fn match_at(&mut self, cand: NodeId) -> bool {
        let (anchor, _) = self.pattern.plan[0];
        if let Err(f) = self.node_fits(anchor, cand) {
            self.fail(0, f);
            return false;
        }
        for &swapped in self.swaps(anchor) {
            let b = Bound::Node { id: cand, swapped };
            if self.try_bind(0, anchor, b) {
                return true;
            }
        }
        false
    }

    /// Depth-first search over the plan; leaves the first valid binding in `bound`.
    fn search(&mut self, depth: usize) -> bool {
        if depth == self.pattern.plan.len() {
            return match self.valid() {
                Ok(()) => true,
                Err(f) => {
                    self.fail(depth, f);
                    false
                }
            };
        }
        let (q, step) = self.pattern.plan[depth];
        match step {
            Step::Anchor => false, // The anchor is bound by the caller.
            Step::Back { from, input } => {
                let Some(src) = self.target_source(from, input) else {
                    self.fail(depth, Failure::NoProducer { q, from, input });
                    return false;
                };
                if self.pattern.is_data[q] {
                    return self.try_bind(depth, q, Bound::Port(src));
                }
                // The output index is checked by `edges_consistent` (edge from q to `from`).
                self.bind_node(depth, q, src.node, None)
            }
            Step::Fwd {
                from,
                output,
                input,
            } => {
                let Some(port) = self.bound_port(from, output) else {
                    return false;
                };
                let Ok(pn) = self.target.node(port.node) else {
                    return false;
                };
                let Some(out) = pn.outputs.get(port.index as usize) else {
                    return false;
                };
                let consumers: Vec<InPort> = out.consumers.clone();
                if consumers.is_empty() {
                    self.fail(depth, Failure::NoConsumer { q, from, port });
                }
                consumers
                    .into_iter()
                    .any(|c| self.bind_node(depth, q, c.node, Some((port, c, input))))
            }
        }
    }

    /// Binds pattern node `q` to target node `id` under the first of q's input swaps that
    /// completes the match. `slot` (forward steps) is the consumer port `c` of `port` that q's
    /// pattern input `input` must land on once swapped.
    fn bind_node(
        &mut self,
        depth: usize,
        q: usize,
        id: NodeId,
        slot: Option<(OutPort, InPort, usize)>,
    ) -> bool {
        if let Err(f) = self.node_fits(q, id) {
            self.fail(depth, f);
            return false;
        }
        for &swapped in self.swaps(q) {
            if let Some((port, c, input)) = slot {
                if perm(swapped, input) != c.index as usize {
                    self.fail(depth, Failure::WrongSlot { q, port, c, input });
                    continue;
                }
            }
            if self.try_bind(depth, q, Bound::Node { id, swapped }) {
                return true;
            }
        }
        false
    }

    fn node_of(&self, q: usize) -> Option<NodeId> {
        match self.bound[q] {
            Bound::Node { id, .. } => Some(id),
            _ => None,
        }
    }

    /// Boundary and cycle checks of a complete binding.
    fn valid(&self) -> Check {
        let p = self.pattern;
        let g = self.target;

        // External predecessors (producers of inputs, control predecessors) and successors.
        let mut preds: Vec<NodeId> = Vec::new();
        let mut succs: Vec<NodeId> = Vec::new();
        for &i in &p.inputs {
            if let Bound::Port(port) = self.bound[i] {
                if self.used.contains(&port.node) {
                    return Err(Failure::InputInside { i });
                }
                preds.push(port.node);
            }
        }
        for q in 0..p.ids.len() {
            let Some(t) = self.node_of(q) else { continue };
            let Ok(tn) = g.node(t) else {
                return Err(Failure::Node {
                    q,
                    t,
                    why: Misfit::Gone,
                });
            };
            for (a, out) in tn.outputs.iter().enumerate() {
                let a = a as u32;
                let mut outside = out
                    .consumers
                    .iter()
                    .filter(|c| !self.used.contains(&c.node));
                if p.outputs.contains(&(q, a)) {
                    succs.extend(outside.map(|c| c.node));
                } else if let Some(c) = outside.next() {
                    // An inner tensor used outside the match.
                    return Err(Failure::UsedOutside {
                        q,
                        a,
                        consumer: Some(*c),
                    });
                } else if self
                    .index
                    .graph_outputs
                    .contains(&OutPort { node: t, index: a })
                {
                    return Err(Failure::UsedOutside {
                        q,
                        a,
                        consumer: None,
                    });
                }
            }
            preds.extend(tn.in_control.iter().filter(|c| !self.used.contains(c)));
            succs.extend(tn.out_control.iter().filter(|c| !self.used.contains(c)));
        }
        match self.creates_cycle(&preds, &succs) {
            Some((succ, pred)) => Err(Failure::Cycle { succ, pred }),
            None => Ok(()),
        }
    }

    /// Whether contracting the match would close a cycle: whether some external predecessor
    /// of the match is reachable from some external successor. See [`find_matches`]. Returns
    /// that (successor, predecessor) pair.
    fn creates_cycle(&self, preds: &[NodeId], succs: &[NodeId]) -> Option<(NodeId, NodeId)> {
        let topo = |n: &NodeId| self.index.topo.get(*n).copied().unwrap_or(usize::MAX);
        let max_pred = preds.iter().map(topo).max()?;
        // (node, the successor its search started from)
        let mut stack: Vec<(NodeId, NodeId)> = succs
            .iter()
            .filter(|s| topo(s) <= max_pred)
            .map(|&s| (s, s))
            .collect();
        if stack.is_empty() {
            // Every successor comes after every predecessor in a topological order.
            return None;
        }
        let pred_set: FxHashSet<NodeId> = preds.iter().copied().collect();
        let mut seen: FxHashSet<NodeId> = stack.iter().map(|p| p.0).collect();
        while let Some((n, origin)) = stack.pop() {
            if pred_set.contains(&n) {
                return Some((origin, n));
            }
            let Ok(node) = self.target.node(n) else {
                continue;
            };
            let next = node
                .outputs
                .iter()
                .flat_map(|o| o.consumers.iter().map(|c| c.node))
                .chain(node.out_control.iter().copied());
            for m in next {
                if topo(&m) <= max_pred && !self.used.contains(&m) && seen.insert(m) {
                    stack.push((m, origin));
                }
            }
        }
        None
    }

    fn result(&self) -> MatchResult {
        let p = self.pattern;
        let mut nodes = Vec::new();
        let mut names = Vec::new();
        let mut captures = Vec::with_capacity(p.ids.len());
        for q in 0..p.ids.len() {
            let pn = p.pnode(q);
            match self.bound[q] {
                Bound::Node { id, .. } => {
                    nodes.push((p.ids[q], id));
                    names.push(pn.name.clone());
                    let ports = (0..pn.outputs.len())
                        .map(|a| OutPort {
                            node: id,
                            index: a as u32,
                        })
                        .collect();
                    captures.push((pn.name.clone(), ports));
                }
                Bound::Port(port) => {
                    captures.push((pn.name.clone(), smallvec::smallvec![port]));
                }
                Bound::Free => {}
            }
        }
        let inputs = p
            .inputs
            .iter()
            .filter_map(|&i| match self.bound[i] {
                Bound::Port(port) => Some(port),
                _ => None,
            })
            .collect();
        let outputs = p
            .outputs
            .iter()
            .filter_map(|&(q, a)| self.node_of(q).map(|id| OutPort { node: id, index: a }))
            .collect();
        MatchResult {
            pattern_name: p.name.clone(),
            nodes,
            inputs,
            outputs,
            captures,
            pattern_node_names: names,
        }
    }

    // ---- explaining (only called through `record`) ----

    fn pname(&self, q: usize) -> String {
        self.pattern.pnode(q).name.to_string()
    }

    fn tname(&self, t: NodeId) -> String {
        self.target
            .node(t)
            .map(|n| n.name.to_string())
            .unwrap_or_else(|_| "<removed>".to_string())
    }

    /// `name:index` of a target port.
    fn tport(&self, p: OutPort) -> String {
        format!("{}:{}", self.tname(p.node), p.index)
    }

    /// The pattern node bound to target node `t`, if any.
    fn pattern_node_of(&self, t: NodeId) -> Option<usize> {
        (0..self.bound.len()).find(|&q| self.node_of(q) == Some(t))
    }

    /// What a target input must be for the pattern edge from output `idx` of pattern node `p`.
    fn wanted(&self, p: usize, idx: u32) -> String {
        match self.bound[p] {
            Bound::Port(port) => format!(
                "'{}' (the tensor bound to pattern input '{}')",
                self.tport(port),
                self.pname(p)
            ),
            Bound::Node { id, .. } => format!(
                "output {idx} of '{}' (the output of pattern node '{}')",
                self.tname(id),
                self.pname(p)
            ),
            Bound::Free => format!(
                "a producer (output {idx} of pattern node '{}')",
                self.pname(p)
            ),
        }
    }

    /// "is produced by 'x:0'" or "is unconnected".
    fn found(&self, ts: Option<OutPort>) -> String {
        match ts {
            Some(p) => format!("is produced by '{}'", self.tport(p)),
            None => "is unconnected".to_string(),
        }
    }

    /// A [`NoMatchReason`] for a failure, read against the current binding.
    fn describe(&self, f: Failure) -> NoMatchReason {
        let reason = |q: usize, t: Option<NodeId>, reason: String| NoMatchReason {
            pattern_node: self.pname(q),
            target_node: t.map(|t| self.tname(t)),
            reason,
        };
        match f {
            Failure::Node { q, t, why } => {
                let pn = self.pattern.pnode(q);
                let text = match (why, self.target.node(t)) {
                    (Misfit::Used, _) => match self.pattern_node_of(t) {
                        Some(r) => format!(
                            "the target node is already matched by pattern node '{}'",
                            self.pname(r)
                        ),
                        None => "the target node is already used by the match".to_string(),
                    },
                    (Misfit::Claimed, _) => {
                        "the target node belongs to an earlier match".to_string()
                    }
                    (Misfit::Gone, _) | (_, Err(_)) => {
                        "the target node is not in the graph".to_string()
                    }
                    (Misfit::OpType, Ok(tn)) => {
                        let mut s = format!("op type {} != {}", pn.op_type, tn.op_type);
                        if q == self.pattern.plan[0].0 {
                            let _ = write!(
                                s,
                                " (the anchor, pattern node '{}' of pattern output 0, only \
                                 matches {} nodes)",
                                pn.name, pn.op_type
                            );
                        }
                        s
                    }
                    (Misfit::InputCount, Ok(tn)) => {
                        format!("input count {} != {}", pn.inputs.len(), tn.inputs.len())
                    }
                    (Misfit::OutputCount, Ok(tn)) => {
                        format!("output count {} != {}", pn.outputs.len(), tn.outputs.len())
                    }
                    (Misfit::ConstValue, Ok(tn)) => {
                        const_difference(pn.const_value(), tn.const_value())
                    }
                    (Misfit::IrAttr, Ok(tn)) => attr_difference(&pn.attrs, &tn.attrs),
                };
                reason(q, Some(t), text)
            }
            Failure::InputEdge { q, k } => {
                let (t, swapped) = match self.bound[q] {
                    Bound::Node { id, swapped } => (Some(id), swapped),
                    _ => (None, false),
                };
                let tk = perm(swapped, k);
                let ts = self.target_source(q, k);
                let tn = t.map(|t| self.tname(t)).unwrap_or_default();
                let want = match self.pattern.pnode(q).inputs.get(k).and_then(|i| i.source) {
                    None => format!("the pattern leaves its input {k} unconnected"),
                    Some(src) => format!(
                        "the pattern needs {}",
                        self.wanted(self.pattern.index[&src.node], src.index)
                    ),
                };
                let swap = if swapped { " (inputs swapped)" } else { "" };
                let text = format!(
                    "input {tk} of '{tn}' in the target {}, {want}{swap}",
                    self.found(ts)
                );
                reason(q, t, text)
            }
            Failure::ConsumerEdge { q, a, r, k } => {
                let (tr, swapped) = match self.bound[r] {
                    Bound::Node { id, swapped } => (Some(id), swapped),
                    _ => (None, false),
                };
                let trn = tr.map(|t| self.tname(t)).unwrap_or_default();
                let text = format!(
                    "input {} of '{trn}' (matched by pattern node '{}') in the target {}, \
                     the pattern needs {}",
                    perm(swapped, k),
                    self.pname(r),
                    self.found(self.target_source(r, k)),
                    self.wanted(q, a as u32)
                );
                let t = self.bound_port(q, a as u32).map(|p| p.node);
                reason(q, t, text)
            }
            Failure::SelfLoop { q } => {
                let t = self.node_of(q);
                reason(q, t, "the pattern node consumes its own output".to_string())
            }
            Failure::NoProducer { q, from, input } => {
                let (tf, swapped) = match self.bound[from] {
                    Bound::Node { id, swapped } => (Some(id), swapped),
                    _ => (None, false),
                };
                let text = format!(
                    "input {} of '{}' (matched by pattern node '{}') is unconnected in the \
                     target, the pattern needs it produced by '{}'",
                    perm(swapped, input),
                    tf.map(|t| self.tname(t)).unwrap_or_default(),
                    self.pname(from),
                    self.pname(q)
                );
                reason(q, None, text)
            }
            Failure::NoConsumer { q, from, port } => {
                let text = format!(
                    "'{}' (matched by pattern node '{}') has no consumer in the target, the \
                     pattern needs it consumed by '{}'",
                    self.tport(port),
                    self.pname(from),
                    self.pname(q)
                );
                reason(q, None, text)
            }
            Failure::WrongSlot { q, port, c, input } => {
                let text = format!(
                    "the target node consumes '{}' at its input {}, the pattern needs input {input}",
                    self.tport(port),
                    c.index
                );
                reason(q, Some(c.node), text)
            }
            Failure::InputInside { i } => {
                let Bound::Port(port) = self.bound[i] else {
                    return reason(
                        i,
                        None,
                        "a pattern input is produced inside the match".into(),
                    );
                };
                let by = match self.pattern_node_of(port.node) {
                    Some(r) => format!(" (by pattern node '{}')", self.pname(r)),
                    None => String::new(),
                };
                let text = format!(
                    "pattern input '{}' is bound to '{}', which is produced inside the \
                     match{by}; a pattern input must come from outside the match",
                    self.pname(i),
                    self.tport(port)
                );
                reason(i, Some(port.node), text)
            }
            Failure::UsedOutside { q, a, consumer } => {
                let t = self.node_of(q);
                let tn = t.map(|t| self.tname(t)).unwrap_or_default();
                let used = match consumer {
                    Some(c) => format!(
                        "is used outside the match by '{}' (input {})",
                        self.tname(c.node),
                        c.index
                    ),
                    None => "is a graph output".to_string(),
                };
                let text = format!(
                    "boundary not self-contained: output {a} of '{tn}' {used} but output {a} \
                     of pattern node '{}' is not a pattern output",
                    self.pname(q)
                );
                reason(q, t, text)
            }
            Failure::Cycle { succ, pred } => {
                // The match node that `succ` follows, and how `pred` enters the match.
                let feeds = |t: NodeId| {
                    self.target.node(t).is_ok_and(|n| {
                        n.out_control.contains(&succ)
                            || n.outputs
                                .iter()
                                .any(|o| o.consumers.iter().any(|c| c.node == succ))
                    })
                };
                let from = (0..self.bound.len())
                    .find(|&q| self.node_of(q).is_some_and(feeds))
                    .unwrap_or(self.pattern.plan[0].0);
                let enters = match self
                    .pattern
                    .inputs
                    .iter()
                    .find(|&&i| matches!(self.bound[i], Bound::Port(p) if p.node == pred))
                {
                    Some(&i) => format!("feeds the match as pattern input '{}'", self.pname(i)),
                    None => "is a control predecessor of the match".to_string(),
                };
                let t = self.node_of(from);
                let text = format!(
                    "the rewrite would create a cycle: '{}' uses the output of '{}' and \
                     reaches '{}', which {enters}",
                    self.tname(succ),
                    t.map(|t| self.tname(t)).unwrap_or_default(),
                    self.tname(pred)
                );
                reason(from, t, text)
            }
        }
    }
}

/// Finds non-overlapping matches of `pattern` in `target`, in a deterministic order (anchors
/// in creation order; greedy: a node claimed by an earlier match is not reused).
///
/// The target must be acyclic (else the error of [`Graph::topo_order`]).
///
/// **No-cycle check.** Replacing a match M by one block R creates a cycle exactly when, in the
/// original graph, some external successor s of M (a node outside M consuming an output of M,
/// or a control successor) reaches some external predecessor p of M (the producer of a bound
/// input, or a control predecessor): then R → s → … → p → R. Conversely a cycle through R
/// leaves R to some s and re-enters it from some p, and that path s → … → p existed before.
/// A path s → … → p that passes through M can be cut at its first node of M, whose
/// predecessor on the path is itself an external predecessor, so it suffices to search paths
/// outside M. Every edge (data or control) goes from a lower to a higher position of one
/// topological order computed once per call, so every node on a path to p has a position
/// ≤ pos(p) ≤ max over predecessors. The search therefore starts only from successors at
/// positions ≤ that maximum and never leaves that window: it is exact (no path is pruned) and
/// costs nothing when every successor sorts after every predecessor (the common case, e.g.
/// chains), otherwise the edges inside the window. Each match is checked against the graph
/// as it is: after rewriting one match, look for the next ones again (or check the result).
/// Treating the replacement as one block (as GE does) is conservative for a replacement some
/// output of which does not depend on every input.
///
/// **Cost.** One op-type index and one topological sort per call; per anchor, a search bounded
/// by the pattern's size times the fan-out of the ports it follows forward (a pattern reached
/// only backwards from its anchor, like a chain or a tree, costs O(pattern) per anchor).
///
/// To learn why a pattern does not match at some node, see [`explain_match`].
pub fn find_matches(
    target: &Graph,
    pattern: &Pattern,
    cfg: PatternMatcherConfig,
) -> Result<Vec<MatchResult>> {
    let index = TargetIndex::of(target)?;
    // The anchor's candidates: the target nodes of its op type, in creation order.
    let anchor_type = pattern.anchor_op_type();
    let anchor_const = is_const_op(anchor_type);
    let candidates: Vec<NodeId> = target
        .nodes()
        .into_iter()
        .filter(|&id| {
            target.node(id).is_ok_and(|n| {
                if anchor_const {
                    is_const_op(&n.op_type)
                } else {
                    n.op_type == anchor_type
                }
            })
        })
        .collect();
    let mut results = Vec::new();
    // One search context for every anchor: reset (not reallocated) between them.
    let mut ctx = Ctx::new(target, pattern, cfg, &index, FxHashSet::default(), None);
    for cand in candidates {
        ctx.bound.fill(Bound::Free);
        ctx.used.clear();
        if ctx.match_at(cand) {
            results.push(ctx.result());
            let Ctx { claimed, used, .. } = &mut ctx;
            claimed.extend(used.iter().copied());
        }
    }
    Ok(results)
}

/// Beyond GE: explains whether and why `pattern` matches with target node `at` as its anchor
/// (the target node bound to the pattern node of the first pattern output, see
/// [`Pattern::anchor_op_type`]).
///
/// The search is the one of [`find_matches`] for that anchor, with two differences: nodes
/// claimed by other matches are not excluded (the graph is explained as it is, alone), and
/// every failed step is recorded. On success the result is the match; otherwise
/// [`MatchExplanation::NoMatch`] carries the failure recorded at the greatest search depth
/// (the first of those on a tie; the pattern's nodes are searched breadth-first from the
/// anchor, the boundary and cycle checks of a complete binding come last). Reasons include:
/// op type, input or output count, IR attribute (with `ir_attr_match`) or const value (with
/// `const_value_match`) differences; a pattern edge absent from the target; a target node
/// already bound to another pattern node; a boundary that is not self-contained; a pattern
/// input produced inside the match; a rewrite that would create a cycle.
///
/// [`find_matches`] does not pay for this: it records nothing.
///
/// Errors: `at` is not a live node of `target`, or `target` is cyclic.
pub fn explain_match(
    target: &Graph,
    pattern: &Pattern,
    cfg: PatternMatcherConfig,
    at: NodeId,
) -> Result<MatchExplanation> {
    let at_name = target.node(at)?.name.to_string();
    let index = TargetIndex::of(target)?;
    let mut ctx = Ctx::new(
        target,
        pattern,
        cfg,
        &index,
        FxHashSet::default(),
        Some(Recorder::default()),
    );
    if ctx.match_at(at) {
        return Ok(MatchExplanation::Matched(ctx.result()));
    }
    let reason = ctx
        .rec
        .and_then(|r| r.deepest)
        .map(|(_, r)| r)
        .unwrap_or_else(|| NoMatchReason {
            // Every failure is recorded; this is only a safe default.
            pattern_node: pattern.pnode(pattern.plan[0].0).name.to_string(),
            target_node: Some(at_name),
            reason: "no binding found".to_string(),
        });
    Ok(MatchExplanation::NoMatch(reason))
}
