//! Rewriting: replacing a [`SubgraphBoundary`] by a copy of a replacement graph.

use super::{MatchResult, SubgraphBoundary};
use crate::attr::AttrValue;
use crate::error::{Error, Result};
use crate::graph::{Graph, InPort, Name, NodeId, OutPort, SharedNode};
use crate::types::{DataType, TensorDesc};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// Replaces subgraph boundaries with replacement graphs (see [`rewrite`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SubgraphRewriter;

impl SubgraphRewriter {
    pub fn rewrite(
        &self,
        target: &mut Graph,
        boundary: &SubgraphBoundary,
        replacement: &Graph,
    ) -> Result<Vec<NodeId>> {
        rewrite(target, boundary, replacement)
    }
}

/// Replaces the nodes of `boundary` by a copy of `replacement`: the replacement's non-Data
/// nodes are copied (fresh unique names, attributes, descriptions, subgraphs, inner data and
/// control edges); consumers of its Data with index i are connected to `boundary.inputs[i]`;
/// every consumer outside the boundary of `boundary.outputs[j]`, and every graph output equal
/// to it, is reconnected to the replacement's graph output j; control edges between the
/// boundary and the rest move to every copied node; then the boundary's nodes are removed.
/// Returns the new nodes, in the replacement's creation order.
///
/// **Carry-over** (beyond GE). When boundary output j is replaced by an output of a copied
/// replacement node (not by a replacement input passed through, which carries nothing), what
/// the replacement leaves unset is taken from the old output and its node, and nothing the
/// replacement sets is overwritten:
///
/// - the description: an undefined dtype ([`DataType::UNDEFINED`]) takes the old output's
///   dtype; a shape of unknown rank takes the old shape (and an origin shape of unknown rank
///   the old origin shape), and unknown dims (-1) of a shape of the old rank take the old
///   dims; when both dtype and shape were unknown, the format, origin format and placement
///   are taken as well;
/// - the old output's tensor attributes ([`crate::TensorDesc::attrs`]) that the new output
///   lacks;
/// - the old node's private attributes ([`crate::Node::private_attrs`]; IR attributes are
///   never carried) that the new node lacks.
///
/// When several boundary outputs meet on one new output or node, the earlier j wins.
///
/// Checked first, leaving the graph unchanged on error: input and output counts, live nodes
/// and ports, inputs produced outside the boundary, outputs produced inside, and no tensor of
/// the boundary other than its outputs used outside it. Cycles are not checked here (see
/// [`super::find_matches`], which only returns matches whose rewrite creates none).
pub fn rewrite(
    target: &mut Graph,
    boundary: &SubgraphBoundary,
    replacement: &Graph,
) -> Result<Vec<NodeId>> {
    rewrite_impl(target, boundary, Replacement::Borrowed(replacement)).map(|r| r.0)
}

/// [`rewrite`] with the replacement taken by value: its nodes are moved into `target`, not
/// copied. Returns the new nodes (as [`rewrite`]) and where each boundary output went (as
/// [`rewritten_outputs`]). On error the replacement is dropped and `target` is unchanged.
pub fn rewrite_owned(
    target: &mut Graph,
    boundary: &SubgraphBoundary,
    mut replacement: Graph,
) -> Result<(Vec<NodeId>, Vec<OutPort>)> {
    rewrite_impl(target, boundary, Replacement::Owned(&mut replacement))
}

/// The replacement of one rewrite: copied from (borrowed) or moved out of (owned).
enum Replacement<'a> {
    Borrowed(&'a Graph),
    /// A graph dropped after the rewrite: its nodes are taken out of it.
    Owned(&'a mut Graph),
}

impl Replacement<'_> {
    fn graph(&self) -> &Graph {
        match self {
            Replacement::Borrowed(g) => g,
            Replacement::Owned(g) => g,
        }
    }
    /// Node `r`, copied or moved out.
    fn take(&mut self, r: NodeId) -> Result<SharedNode> {
        match self {
            Replacement::Borrowed(g) => Ok(g.shared_record(r)?),
            Replacement::Owned(g) => g
                .take_record(r)
                .ok_or_else(|| Error::value("the node has been removed from the graph")),
        }
    }
}

/// A new node's edges in the replacement: its inputs' producers, its control predecessors.
type NewNodeEdges = (SmallVec<[Option<OutPort>; 4]>, Vec<NodeId>);

/// A set of the few nodes of a boundary: a scan for small ones, hashed for large ones.
struct NodeSet<'a> {
    nodes: &'a [NodeId],
    hashed: Option<FxHashSet<NodeId>>,
}

impl<'a> NodeSet<'a> {
    fn new(nodes: &'a [NodeId]) -> Self {
        let hashed = (nodes.len() > 16).then(|| nodes.iter().copied().collect());
        NodeSet { nodes, hashed }
    }
    fn contains(&self, n: &NodeId) -> bool {
        match &self.hashed {
            Some(h) => h.contains(n),
            None => self.nodes.contains(n),
        }
    }
    fn has_duplicates(&self) -> bool {
        match &self.hashed {
            Some(h) => h.len() != self.nodes.len(),
            None => self
                .nodes
                .iter()
                .enumerate()
                .any(|(i, n)| self.nodes[..i].contains(n)),
        }
    }
}

/// The name a node copied into the target graph asks for: `<prefix>/<name>` (or `name`
/// without a prefix); made unique when it is added.
fn copied_name(prefix: &str, name: &str) -> Name {
    if prefix.is_empty() {
        Name::new(name)
    } else {
        smol_str::format_smolstr!("{prefix}/{name}")
    }
}

fn rewrite_impl(
    target: &mut Graph,
    boundary: &SubgraphBoundary,
    mut rep: Replacement<'_>,
) -> Result<(Vec<NodeId>, Vec<OutPort>)> {
    let replacement = rep.graph();
    let err = |m: String| Error::build(format!("rewrite with '{}': {m}", replacement.name));
    // ---- checks (no mutation) ----
    let data = replacement.input_nodes();
    let data_pos = |id: NodeId| data.iter().position(|&d| d == id);
    for (i, &d) in data.iter().enumerate() {
        let idx = replacement
            .node(d)?
            .attrs
            .get("index")
            .and_then(AttrValue::as_int)
            .unwrap_or(0);
        if idx != i as i64 {
            return Err(err(format!(
                "replacement inputs must have indexes 0..{}",
                data.len()
            )));
        }
    }
    if data.len() != boundary.inputs.len() {
        return Err(err(format!(
            "the replacement has {} inputs, the boundary {}",
            data.len(),
            boundary.inputs.len()
        )));
    }
    if replacement.outputs.len() != boundary.outputs.len() {
        return Err(err(format!(
            "the replacement has {} outputs, the boundary {}",
            replacement.outputs.len(),
            boundary.outputs.len()
        )));
    }
    let inside = NodeSet::new(&boundary.nodes);
    if inside.has_duplicates() {
        return Err(err("a boundary node is listed twice".into()));
    }
    for &n in &boundary.nodes {
        target.node(n)?;
    }
    for p in &boundary.inputs {
        target.out_desc(*p)?;
        if inside.contains(&p.node) {
            return Err(err(
                "a boundary input is produced inside the boundary".into()
            ));
        }
    }
    for (j, p) in boundary.outputs.iter().enumerate() {
        target.out_desc(*p)?;
        if !inside.contains(&p.node) {
            return Err(err(
                "a boundary output is produced outside the boundary".into()
            ));
        }
        if boundary.outputs[..j].contains(p) {
            return Err(err("a boundary output is listed twice".into()));
        }
    }
    for &n in &boundary.nodes {
        for (a, out) in target.node(n)?.outputs.iter().enumerate() {
            let port = OutPort {
                node: n,
                index: a as u32,
            };
            if boundary.outputs.contains(&port) {
                continue;
            }
            if out.consumers.iter().any(|c| !inside.contains(&c.node))
                || target.outputs.contains(&port)
            {
                return Err(err(format!(
                    "output {a} of '{}' is used outside the boundary but is not a boundary output",
                    target.node(n)?.name
                )));
            }
        }
    }
    let rep_nodes: Vec<NodeId> = replacement
        .nodes()
        .into_iter()
        .filter(|id| data_pos(*id).is_none())
        .collect();
    for &r in &rep_nodes {
        if replacement.node(r)?.name.is_empty() {
            return Err(err("a replacement node has no name".into()));
        }
        for inp in &replacement.node(r)?.inputs {
            if let Some(s) = inp.source {
                replacement.out_desc(s)?;
            }
        }
    }
    for p in &replacement.outputs {
        replacement.out_desc(*p)?;
    }
    let rep_outputs = replacement.outputs.clone();
    // ---- mutation ----
    let prefix = boundary
        .nodes
        .first()
        .and_then(|n| target.node(*n).ok())
        .map(|n| n.name.clone())
        .unwrap_or_default();
    let mut map: FxHashMap<NodeId, NodeId> = FxHashMap::default();
    let mut created = Vec::with_capacity(rep_nodes.len());
    // Per new node: its inputs' producers and its control predecessors in the replacement.
    let mut edges: Vec<NewNodeEdges> = Vec::with_capacity(rep_nodes.len());
    for &r in &rep_nodes {
        let mut node = rep.take(r)?;
        edges.push((
            node.inputs.iter().map(|i| i.source).collect(),
            std::mem::take(&mut node.in_control),
        ));
        node.name = copied_name(&prefix, &node.name);
        let id = target.add_record_renaming(node)?;
        map.insert(r, id);
        created.push(id);
    }
    let resolve = |p: OutPort, map: &FxHashMap<NodeId, NodeId>| -> OutPort {
        match data_pos(p.node) {
            Some(i) => boundary.inputs[i],
            None => OutPort {
                node: map[&p.node],
                index: p.index,
            },
        }
    };
    for (&new, (sources, ctl)) in created.iter().zip(&edges) {
        for (k, s) in sources.iter().enumerate() {
            if let Some(s) = s {
                let dst = InPort {
                    node: new,
                    index: k as u32,
                };
                target.add_data_edge(resolve(*s, &map), dst)?;
            }
        }
        for c in ctl {
            if let Some(&src) = map.get(c) {
                target.add_control_edge(src, new)?;
            }
        }
    }
    let mut outs = Vec::with_capacity(boundary.outputs.len());
    for (j, old) in boundary.outputs.iter().enumerate() {
        let new = resolve(rep_outputs[j], &map);
        outs.push(new);
        if data_pos(rep_outputs[j].node).is_none() {
            carry_over(target, *old, new)?;
        }
        let consumers: SmallVec<[InPort; 4]> = target.node(old.node)?.outputs[old.index as usize]
            .consumers
            .iter()
            .copied()
            .filter(|c| !inside.contains(&c.node))
            .collect();
        for c in consumers {
            target.remove_data_edge(*old, c)?;
            target.add_data_edge(new, c)?;
        }
        for o in target.outputs.iter_mut() {
            if *o == *old {
                *o = new;
            }
        }
    }
    let mut ctl_in: Vec<NodeId> = Vec::new();
    let mut ctl_out: Vec<NodeId> = Vec::new();
    for &n in &boundary.nodes {
        let node = target.node(n)?;
        ctl_in.extend(node.in_control.iter().filter(|c| !inside.contains(c)));
        ctl_out.extend(node.out_control.iter().filter(|c| !inside.contains(c)));
    }
    for &new in &created {
        for &c in &ctl_in {
            target.add_control_edge(c, new)?;
        }
        for &c in &ctl_out {
            target.add_control_edge(new, c)?;
        }
    }
    target.delete_nodes(&boundary.nodes)?;
    Ok((created, outs))
}

/// Fills what new output `new` (of a node copied from the replacement) leaves unset from old
/// boundary output `old` and its node (see [`rewrite`]'s carry-over).
fn carry_over(target: &mut Graph, old: OutPort, new: OutPort) -> Result<()> {
    // The old node is removed after the rewrite: it is read, not changed (a graph shared
    // copy-on-write with an undo copy would copy its record). Its private attributes may be
    // carried to several new nodes.
    let old_node = target.node(old.node)?;
    let Some(old_slot) = old_node.outputs.get(old.index as usize) else {
        return Err(Error::build(format!(
            "node '{}' has no output {}",
            old_node.name, old.index
        )));
    };
    let old_desc = old_slot.desc.clone();
    let old_private = (!old_node.private_attrs.is_empty()).then(|| old_node.private_attrs.clone());
    let node = target.node_mut(new.node)?;
    for (k, v) in old_private.into_iter().flatten() {
        node.private_attrs.entry(k).or_insert(v);
    }
    let Some(slot) = node.outputs.get_mut(new.index as usize) else {
        return Err(Error::build(format!(
            "node '{}' has no output {}",
            node.name, new.index
        )));
    };
    let dtype_unknown = slot.desc.dtype == DataType::UNDEFINED;
    let rank_unknown = slot.desc.shape.is_unknown_rank();
    let dims_unknown = !rank_unknown
        && slot.desc.shape.dims().len() == old_desc.shape.dims().len()
        && slot.desc.shape.dims().contains(&crate::types::UNKNOWN_DIM);
    let attrs_missing = old_desc
        .attrs
        .keys()
        .any(|k| !slot.desc.attrs.contains_key(k));
    if !(dtype_unknown || rank_unknown || dims_unknown || attrs_missing) {
        return Ok(()); // nothing to fill: the description is not written (nor copied)
    }
    let d: &mut TensorDesc = &mut slot.desc;
    if dtype_unknown {
        d.dtype = old_desc.dtype;
    }
    if rank_unknown {
        d.shape = old_desc.shape.clone();
        if d.origin_shape.is_unknown_rank() {
            d.origin_shape = old_desc.origin_shape.clone();
        }
    } else if dims_unknown {
        // The new output computes the same tensor as the old: an unknown dim takes the old
        // one's value (a replacement input that carried only a value, such as a shape, leaves
        // dims unknown that the old graph knew).
        let dims: Vec<i64> = d
            .shape
            .dims()
            .iter()
            .zip(old_desc.shape.dims())
            .map(|(&n, &o)| if n == crate::types::UNKNOWN_DIM { o } else { n })
            .collect();
        d.shape = crate::types::Shape::new(dims);
    }
    if dtype_unknown && rank_unknown {
        d.format = old_desc.format;
        d.origin_format = old_desc.origin_format;
        d.placement = old_desc.placement;
    }
    for (k, v) in &old_desc.attrs {
        d.attrs.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Ok(())
}

/// Where the outputs of a boundary went after [`rewrite`] returned `created`: replacement
/// output j resolved to its copied node, or, for an output that passes a replacement input
/// through, to the boundary input it forwards.
pub fn rewritten_outputs(
    replacement: &Graph,
    boundary: &SubgraphBoundary,
    created: &[NodeId],
) -> Result<Vec<OutPort>> {
    let data = replacement.input_nodes();
    let rep_nodes: Vec<NodeId> = replacement
        .nodes()
        .into_iter()
        .filter(|id| !data.contains(id))
        .collect();
    replacement
        .outputs
        .iter()
        .map(|r| match data.iter().position(|d| *d == r.node) {
            Some(i) => boundary
                .inputs
                .get(i)
                .copied()
                .ok_or_else(|| Error::build("replacement input without a boundary input")),
            None => rep_nodes
                .iter()
                .position(|n| *n == r.node)
                .and_then(|k| created.get(k))
                .map(|&node| OutPort {
                    node,
                    index: r.index,
                })
                .ok_or_else(|| Error::build("replacement output points at no node")),
        })
        .collect()
}

/// Rewrites every match of one [`super::find_matches`] call with `replacement`, in order. A
/// match's inputs that an earlier rewrite replaced (an output of an earlier match feeding a
/// later one) are followed to their replacements. All or nothing: on any error, including a
/// cycle that only the combination of several matches closes (each match is checked alone by
/// `find_matches`), the graph is left as it was. Returns the new nodes of each match.
pub fn rewrite_matches(
    target: &mut Graph,
    matches: &[MatchResult],
    replacement: &Graph,
) -> Result<Vec<Vec<NodeId>>> {
    let backup = target.clone();
    let res = rewrite_matches_inner(target, matches, replacement);
    if res.is_err() {
        *target = backup;
    }
    res
}

fn rewrite_matches_inner(
    target: &mut Graph,
    matches: &[MatchResult],
    replacement: &Graph,
) -> Result<Vec<Vec<NodeId>>> {
    let mut moved: FxHashMap<OutPort, OutPort> = FxHashMap::default();
    let mut out = Vec::with_capacity(matches.len());
    for m in matches {
        let mut b = m.to_boundary();
        for p in &mut b.inputs {
            // Each step goes to a port created later, so this ends.
            while let Some(&q) = moved.get(p) {
                *p = q;
            }
        }
        let created = rewrite(target, &b, replacement)?;
        for (old, new) in b
            .outputs
            .iter()
            .zip(rewritten_outputs(replacement, &b, &created)?)
        {
            moved.insert(*old, new);
        }
        out.push(created);
    }
    target.topo_order()?;
    Ok(out)
}
