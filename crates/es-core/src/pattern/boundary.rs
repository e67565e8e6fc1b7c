//! Boundaries given by anchors (GE's `SubgraphBoundary` form) and the fusability check.
//!
//! GE describes a region to replace by its input anchors (for each logical input, the input
//! ports inside the region that it feeds) and output anchors (one output port inside the
//! region per logical output). [`resolve_boundary`] turns that into a [`SubgraphBoundary`]
//! (nodes, feeding ports, leaving ports); [`SubgraphBoundary::input_anchors`] goes the other
//! way. [`can_fuse`] tells whether a set of nodes can become one node without a cycle;
//! [`replace_boundary`] does GE's `SubgraphRewriter.replace` with both.

use super::SubgraphBoundary;
use crate::error::{Error, Result};
use crate::graph::{is_data_op, Graph, InPort, NodeId, OutPort};
use rustc_hash::FxHashSet;

impl SubgraphBoundary {
    /// GE's anchor form of the inputs: for input slot i, every input port of a boundary node
    /// fed by `self.inputs[i]`, in the producer's consumer order. Errors: an input's producer
    /// is not a live node of `g`, or has no such output.
    pub fn input_anchors(&self, g: &Graph) -> Result<Vec<Vec<InPort>>> {
        let inside: FxHashSet<NodeId> = self.nodes.iter().copied().collect();
        self.inputs
            .iter()
            .map(|p| {
                let producer = g.node(p.node)?;
                let out = producer.outputs.get(p.index as usize).ok_or_else(|| {
                    Error::value(format!(
                        "node '{}' has no output {}",
                        producer.name, p.index
                    ))
                })?;
                Ok(out
                    .consumers
                    .iter()
                    .filter(|c| inside.contains(&c.node))
                    .copied()
                    .collect())
            })
            .collect()
    }
}

/// Checks that slot numbers are 0..n in order.
fn dense_slots(keys: impl Iterator<Item = u32>, what: &str) -> Result<()> {
    let keys: Vec<u32> = keys.collect();
    if keys.iter().enumerate().any(|(i, k)| *k != i as u32) {
        return Err(Error::value(format!(
            "the boundary's {what} slots must be 0..n without gaps, got {keys:?}"
        )));
    }
    Ok(())
}

/// Resolves a boundary given by anchors, GE's way, to a [`SubgraphBoundary`].
///
/// `inputs` are (slot, input anchors) and `outputs` (slot, output anchor), each sorted by slot;
/// slots must be 0..n without gaps. Every anchor of one input slot must be fed by the same
/// producer, which becomes that boundary input. The boundary's nodes are those reached walking
/// back (along data edges) from the output anchors' nodes without crossing an input anchor,
/// sorted by creation order.
///
/// Errors ([`Error::Value`], the graph is only read): gaps in the slots; an anchor on a
/// missing input or an unconnected one; one slot's anchors fed by different tensors; a slot
/// without anchors; a walk that reaches a graph input (`Data`), i.e. an input is missing; an
/// input produced inside the boundary. A node id that is not live gives [`Graph::node`]'s
/// error.
pub fn resolve_boundary(
    g: &Graph,
    inputs: &[(u32, Vec<InPort>)],
    outputs: &[(u32, OutPort)],
) -> Result<SubgraphBoundary> {
    dense_slots(inputs.iter().map(|p| p.0), "input")?;
    dense_slots(outputs.iter().map(|p| p.0), "output")?;
    let mut stop: FxHashSet<InPort> = FxHashSet::default();
    let mut in_ports = Vec::with_capacity(inputs.len());
    for (i, anchors) in inputs {
        let mut producer: Option<OutPort> = None;
        for &anchor in anchors {
            let n = g.node(anchor.node)?;
            let k = anchor.index;
            let slot = n.inputs.get(k as usize).ok_or_else(|| {
                Error::value(format!(
                    "boundary input {i}: node '{}' has no input {k}",
                    n.name
                ))
            })?;
            let src = slot.source.ok_or_else(|| {
                Error::value(format!(
                    "boundary input {i}: input {k} of '{}' is not connected",
                    n.name
                ))
            })?;
            if producer.is_some_and(|p| p != src) {
                return Err(Error::value(format!(
                    "boundary input {i}: its anchors are fed by different tensors"
                )));
            }
            producer = Some(src);
            stop.insert(anchor);
        }
        in_ports.push(
            producer.ok_or_else(|| Error::value(format!("boundary input {i} has no anchor")))?,
        );
    }
    let out_ports: Vec<OutPort> = outputs.iter().map(|(_, p)| *p).collect();
    let mut seen: FxHashSet<NodeId> = FxHashSet::default();
    let mut nodes = Vec::new();
    let mut stack: Vec<NodeId> = out_ports.iter().map(|p| p.node).collect();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        let node = g.node(n)?;
        if is_data_op(&node.op_type) {
            return Err(Error::value(format!(
                "the boundary is not closed: walking back from its outputs reaches the graph input '{}'; add a boundary input before it",
                node.name
            )));
        }
        nodes.push(n);
        for (k, slot) in node.inputs.iter().enumerate() {
            let Some(src) = slot.source else { continue };
            if !stop.contains(&InPort {
                node: n,
                index: k as u32,
            }) {
                stack.push(src.node);
            }
        }
    }
    let name = |id: NodeId| g.node(id).map(|n| n.name.to_string()).unwrap_or_default();
    if let Some((i, p)) = in_ports
        .iter()
        .enumerate()
        .find(|(_, p)| seen.contains(&p.node))
    {
        return Err(Error::value(format!(
            "boundary input {i} is produced by '{}', which is inside the boundary",
            name(p.node)
        )));
    }
    nodes.sort_by_key(|id| g.node(*id).map(|n| n.seq).unwrap_or(0));
    Ok(SubgraphBoundary::new(nodes, in_ports, out_ports))
}

/// Whether `nodes` can become one node: `Err(reason)` when the set is empty, holds a node that
/// is not live in `g`, or when a path (data or control edges) leaves the set and comes back to
/// it, which fusing would turn into a cycle through the fused node. Costs the nodes reachable
/// from the set's successors.
pub fn can_fuse(g: &Graph, nodes: &[NodeId]) -> std::result::Result<(), String> {
    if nodes.is_empty() {
        return Err("no nodes to fuse".into());
    }
    if nodes.iter().any(|&id| !g.contains(id)) {
        return Err("a node has been removed from the graph".into());
    }
    let set: FxHashSet<NodeId> = nodes.iter().copied().collect();
    let succ = |id: NodeId| -> Vec<NodeId> {
        g.node(id)
            .map(|n| {
                n.outputs
                    .iter()
                    .flat_map(|o| o.consumers.iter().map(|c| c.node))
                    .chain(n.out_control.iter().copied())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut stack: Vec<NodeId> = Vec::new();
    let mut seen: FxHashSet<NodeId> = FxHashSet::default();
    for &id in nodes {
        for s in succ(id) {
            if !set.contains(&s) && seen.insert(s) {
                stack.push(s);
            }
        }
    }
    while let Some(n) = stack.pop() {
        for s in succ(n) {
            if set.contains(&s) {
                let name = |id: NodeId| g.node(id).map(|n| n.name.to_string()).unwrap_or_default();
                return Err(format!(
                    "fusing would create a cycle: '{}' (outside) depends on a fused node and feeds '{}'",
                    name(n),
                    name(s)
                ));
            }
            if seen.insert(s) {
                stack.push(s);
            }
        }
    }
    Ok(())
}

/// The names of the nodes a replacement removed (`before`) and created (`after`): a fusion
/// report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replaced {
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// GE's `SubgraphRewriter.replace`: resolves the boundary given by its anchors
/// ([`resolve_boundary`]), checks first, when `check_fusable`, that its nodes can become one
/// node ([`can_fuse`]; a `GraphBuild` error naming the reason otherwise), and replaces it by a
/// copy of `replacement` ([`super::rewrite`]). The graph is unchanged on error.
pub fn replace_boundary(
    g: &mut Graph,
    inputs: &[(u32, Vec<InPort>)],
    outputs: &[(u32, OutPort)],
    replacement: &Graph,
    check_fusable: bool,
) -> Result<Replaced> {
    let b = resolve_boundary(g, inputs, outputs)?;
    let before = live_names(g, &b.nodes);
    if check_fusable {
        can_fuse(g, &b.nodes)
            .map_err(|why| Error::build(format!("SubgraphRewriter.replace: {why}")))?;
    }
    let created = super::rewrite(g, &b, replacement)?;
    let after = live_names(g, &created);
    Ok(Replaced { before, after })
}

/// The names of those of `ids` that are live nodes of `g`, in order.
fn live_names(g: &Graph, ids: &[NodeId]) -> Vec<String> {
    ids.iter()
        .filter_map(|id| g.node(*id).ok().map(|n| n.name.to_string()))
        .collect()
}
