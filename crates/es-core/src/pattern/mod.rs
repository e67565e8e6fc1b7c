//! Pattern matching and subgraph rewriting, with the semantics of GE's pattern matcher.
//!
//! A [`Pattern`] is a graph built with the ordinary [`crate::builder::GraphBuilder`]:
//!
//! - its `Data` nodes are the pattern inputs; a pattern input matches any producer (an output
//!   port of the target graph); the same pattern input used twice must bind the same port;
//! - a `Const` node matches a `Const` node of the target, and its value too when
//!   [`PatternMatcherConfig::const_value_match`] is on;
//! - every other node matches a target node of the same op type with the same input and output
//!   counts, and equal IR attributes when [`PatternMatcherConfig::ir_attr_match`] is on (floats
//!   compared with [`crate::attr::AttrValue::approx_eq`]);
//! - the pattern's graph outputs are the pattern outputs (several are allowed);
//! - beyond GE: with [`PatternMatcherConfig::commutative`], a two-input op that the operator
//!   library marks commutative also matches with its two inputs swapped (the matcher tries both
//!   orders itself: no 2^k copies of the pattern are needed).
//!
//! A match is valid only if its boundary is self-contained (a matched tensor used outside the
//! match, or as a graph output, must be a pattern output; a pattern input is never produced
//! inside the match) and rewriting it would not create a cycle.
//!
//! [`find_matches`] returns non-overlapping matches in a deterministic order: anchors (target
//! nodes of the op type of the pattern's first output node) in creation order, each taking the
//! first valid binding in a fixed search order; a node claimed by an earlier match is never
//! reused. The target is indexed by op type and topologically sorted once per call, so the cost
//! is linear in the graph size for patterns of bounded size (see [`find_matches`] for the
//! cycle check's cost).
//!
//! Beyond GE, [`explain_match`] tells why a pattern does not match at a given anchor node (the
//! deepest failed step of the search, as a [`NoMatchReason`]).
//!
//! [`SubgraphBoundary`] (from a [`MatchResult`] or by hand) and [`rewrite`] /
//! [`SubgraphRewriter`] replace the boundary's nodes by a copy of a replacement graph (beyond
//! GE, carrying the old outputs' descriptions and attributes over where the replacement leaves
//! them unset).
//!
//! [`resolve_boundary`] builds a [`SubgraphBoundary`] from GE's anchor form (the input ports a
//! logical input feeds, the output ports leaving), [`SubgraphBoundary::input_anchors`] goes
//! back, and [`can_fuse`] tells whether a set of nodes can become one without a cycle.
//!
//! Layout: this module holds the public types; `matcher` the search ([`find_matches`],
//! [`explain_match`]), `rewrite` the rewriting, `boundary` the anchor form and [`can_fuse`].

use crate::error::{Error, Result};
use crate::graph::{is_data_op, Graph, Name, Node, NodeId, OutPort};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::fmt::Write as _;

/// Options of the matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternMatcherConfig {
    /// A pattern Const matches only a target Const of equal dtype, shape and bytes.
    pub const_value_match: bool,
    /// A pattern node matches only a target node with the same IR attributes, equal values
    /// (floats within [`crate::attr::AttrValue::approx_eq`]'s tolerance).
    pub ir_attr_match: bool,
    /// Beyond GE: two-input ops marked commutative in the operator library also match with
    /// their inputs swapped.
    pub commutative: bool,
}

impl Default for PatternMatcherConfig {
    fn default() -> Self {
        PatternMatcherConfig {
            const_value_match: false,
            ir_attr_match: false,
            commutative: true,
        }
    }
}

fn is_const_op(op: &str) -> bool {
    op == "Const" || op == "Constant"
}

/// How the search reaches one pattern node from an already bound one.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The first node: every target node of its op type (in creation order).
    Anchor,
    /// The node produces input `input` of bound node `from`.
    Back { from: usize, input: usize },
    /// The node consumes output `output` of bound node `from` at its input `input`.
    Fwd {
        from: usize,
        output: u32,
        input: usize,
    },
}

/// A pattern: a graph whose Data nodes are inputs and whose graph outputs are the outputs.
#[derive(Debug, Clone)]
pub struct Pattern {
    graph: Graph,
    /// The graph's name, as each match carries it.
    name: Name,
    /// Pattern nodes, dense index → id (creation order).
    ids: Vec<NodeId>,
    index: FxHashMap<NodeId, usize>,
    is_data: Vec<bool>,
    commutative: Vec<bool>,
    /// Search order: (dense node index, how it is reached).
    plan: Vec<(usize, Step)>,
    /// Dense indexes of the Data nodes, in input-index order.
    inputs: Vec<usize>,
    /// Pattern outputs as (dense node index, output index).
    outputs: Vec<(usize, u32)>,
}

impl Pattern {
    /// A pattern from a graph; its name is the graph's name. The graph must have at least one
    /// output, no output on a Data node, and be connected (through data edges, Data nodes
    /// included).
    pub fn new(graph: Graph) -> Result<Self> {
        let bad = |m: String| Error::build(format!("pattern '{}': {m}", graph.name));
        if graph.outputs.is_empty() {
            return Err(bad("a pattern needs at least one output".into()));
        }
        let ids = graph.nodes();
        let index: FxHashMap<NodeId, usize> =
            ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let reg = crate::ops::global_registry();
        let mut is_data = Vec::with_capacity(ids.len());
        let mut commutative = Vec::with_capacity(ids.len());
        for &id in &ids {
            let n = graph.node(id)?;
            is_data.push(is_data_op(&n.op_type));
            commutative.push(
                n.inputs.len() == 2 && reg.get(&n.op_type).map(|p| p.commutative).unwrap_or(false),
            );
        }
        let mut outputs = Vec::with_capacity(graph.outputs.len());
        for p in &graph.outputs {
            let i = *index
                .get(&p.node)
                .ok_or_else(|| bad("an output points at no node".into()))?;
            if is_data[i] {
                return Err(bad(format!(
                    "output on input node '{}': a pattern output must be computed",
                    graph.node(p.node)?.name
                )));
            }
            outputs.push((i, p.index));
        }
        let inputs: Vec<usize> = graph.input_nodes().iter().map(|id| index[id]).collect();
        // Breadth-first plan from the first output's node, over data edges both ways.
        let anchor = outputs[0].0;
        let mut seen = vec![false; ids.len()];
        seen[anchor] = true;
        let mut plan = vec![(anchor, Step::Anchor)];
        let mut head = 0;
        while head < plan.len() {
            let r = plan[head].0;
            head += 1;
            let n = graph.node(ids[r])?;
            for (k, inp) in n.inputs.iter().enumerate() {
                if let Some(src) = inp.source {
                    let q = *index
                        .get(&src.node)
                        .ok_or_else(|| bad("an edge points at no node".into()))?;
                    if !seen[q] {
                        seen[q] = true;
                        plan.push((q, Step::Back { from: r, input: k }));
                    }
                }
            }
            for (a, out) in n.outputs.iter().enumerate() {
                for c in &out.consumers {
                    let q = *index
                        .get(&c.node)
                        .ok_or_else(|| bad("an edge points at no node".into()))?;
                    if !seen[q] {
                        seen[q] = true;
                        plan.push((
                            q,
                            Step::Fwd {
                                from: r,
                                output: a as u32,
                                input: c.index as usize,
                            },
                        ));
                    }
                }
            }
        }
        if plan.len() != ids.len() {
            let lost = (0..ids.len()).find(|&i| !seen[i]).unwrap_or(0);
            return Err(bad(format!(
                "the pattern must be connected; node '{}' is not connected to output 0",
                graph.node(ids[lost])?.name
            )));
        }
        Ok(Pattern {
            name: Name::new(&graph.name),
            graph,
            ids,
            index,
            is_data,
            commutative,
            plan,
            inputs,
            outputs,
        })
    }

    pub fn name(&self) -> &str {
        &self.graph.name
    }
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
    /// The pattern inputs (Data nodes), in input-index order.
    pub fn inputs(&self) -> Vec<NodeId> {
        self.inputs.iter().map(|&i| self.ids[i]).collect()
    }
    /// The pattern outputs.
    pub fn outputs(&self) -> &[OutPort] {
        &self.graph.outputs
    }
    /// The op type of the anchor: the pattern node of the first pattern output, which the
    /// search binds first. [`find_matches`] tries every target node of this op type (any
    /// `Const`/`Constant` for a Const anchor); [`explain_match`] takes one as `at`.
    pub fn anchor_op_type(&self) -> &str {
        self.pnode(self.plan[0].0).op_type.as_str()
    }

    fn pnode(&self, i: usize) -> &Node {
        // Ids come from the graph itself.
        self.graph.node(self.ids[i]).expect("pattern node")
    }
}

/// One match of a pattern in a target graph.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchResult {
    pub pattern_name: Name,
    /// (pattern node, target node) for every non-Data pattern node, in pattern creation order.
    pub nodes: Vec<(NodeId, NodeId)>,
    /// The target port bound to each pattern input (in input-index order).
    pub inputs: Vec<OutPort>,
    /// The target port of each pattern output.
    pub outputs: Vec<OutPort>,
    /// Captured tensors by pattern node name, in pattern node order: the target ports of that
    /// node's outputs (for a pattern input, the one bound port). A list, not a map: a pattern
    /// has a handful of nodes, and a match is made for every candidate (one allocation).
    pub captures: Vec<(Name, SmallVec<[OutPort; 2]>)>,
    /// Names of the pattern nodes, parallel to `nodes`.
    pattern_node_names: Vec<Name>,
}

impl MatchResult {
    /// The target nodes of the match.
    pub fn target_nodes(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|p| p.1).collect()
    }

    /// The target node matched by a pattern node.
    pub fn target_of(&self, pattern_node: NodeId) -> Option<NodeId> {
        self.nodes.iter().find(|p| p.0 == pattern_node).map(|p| p.1)
    }

    /// The target tensor of a pattern tensor (pattern node, output index): the output of a
    /// pattern input (`pattern_inputs[k]`, the pattern's Data nodes in input order) is the
    /// match's input k; any other node's is that output of its matched node. Errors name what
    /// the match lacks.
    pub fn target_port(
        &self,
        pattern_inputs: &[NodeId],
        pattern_node: NodeId,
        index: u32,
    ) -> std::result::Result<OutPort, &'static str> {
        if let Some(k) = pattern_inputs.iter().position(|&d| d == pattern_node) {
            return self
                .inputs
                .get(k)
                .copied()
                .ok_or("the match lacks a pattern input");
        }
        let node = self
            .target_of(pattern_node)
            .ok_or("the captured node is not in the match")?;
        Ok(OutPort { node, index })
    }

    /// Captured tensor `index` of the pattern node named `name`.
    pub fn captured(&self, name: &str, index: usize) -> Option<OutPort> {
        self.captures
            .iter()
            .find(|c| c.0 == name)
            .and_then(|c| c.1.get(index).copied())
    }

    /// The match as a boundary to rewrite.
    pub fn to_boundary(&self) -> SubgraphBoundary {
        SubgraphBoundary {
            nodes: self.target_nodes(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
        }
    }

    /// A readable description, with names looked up in `target`.
    pub fn to_text(&self, target: &Graph) -> String {
        let name = |id: NodeId| {
            target
                .node(id)
                .map(|n| format!("{} ({})", n.name, n.op_type))
                .unwrap_or_else(|_| "<removed>".to_string())
        };
        let port = |p: &OutPort| {
            target
                .node(p.node)
                .map(|n| format!("{}:{}", n.name, p.index))
                .unwrap_or_else(|_| "<removed>".to_string())
        };
        let mut s = format!("match of pattern '{}'\n  nodes:\n", self.pattern_name);
        for ((_, t), pn) in self.nodes.iter().zip(&self.pattern_node_names) {
            let _ = writeln!(s, "    {pn} -> {}", name(*t));
        }
        s.push_str("  inputs:\n");
        for (i, p) in self.inputs.iter().enumerate() {
            let _ = writeln!(s, "    {i}: {}", port(p));
        }
        s.push_str("  outputs:\n");
        for (i, p) in self.outputs.iter().enumerate() {
            let _ = writeln!(s, "    {i}: {}", port(p));
        }
        s
    }
}

/// A region of a graph to replace: its nodes, the ports feeding it (in replacement input
/// order) and the ports leaving it (in replacement output order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubgraphBoundary {
    pub nodes: Vec<NodeId>,
    pub inputs: Vec<OutPort>,
    pub outputs: Vec<OutPort>,
}

impl SubgraphBoundary {
    pub fn new(nodes: Vec<NodeId>, inputs: Vec<OutPort>, outputs: Vec<OutPort>) -> Self {
        SubgraphBoundary {
            nodes,
            inputs,
            outputs,
        }
    }
}

impl From<&MatchResult> for SubgraphBoundary {
    fn from(m: &MatchResult) -> Self {
        m.to_boundary()
    }
}

mod boundary;
mod matcher;
mod rewrite;

pub use boundary::{can_fuse, replace_boundary, resolve_boundary, Replaced};
pub use matcher::{explain_match, find_matches, MatchExplanation, NoMatchReason};
pub use rewrite::{rewrite, rewrite_matches, rewrite_owned, rewritten_outputs, SubgraphRewriter};
