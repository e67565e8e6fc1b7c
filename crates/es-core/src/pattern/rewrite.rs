//! Rewriting: replacing a [`SubgraphBoundary`] by a copy of a replacement graph.

use super::{MatchResult, SubgraphBoundary};
use crate::attr::AttrValue;
use crate::error::{Error, Result};
use crate::graph::{Graph, InPort, Name, NodeId, OutPort};
use crate::types::DataType;
use rustc_hash::{FxHashMap, FxHashSet};

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
    let err = |m: String| Error::build(format!("rewrite with '{}': {m}", replacement.name));
    // ---- checks (no mutation) ----
    let data = replacement.input_nodes();
    let mut data_index: FxHashMap<NodeId, usize> = FxHashMap::default();
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
        data_index.insert(d, i);
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
    let inside: FxHashSet<NodeId> = boundary.nodes.iter().copied().collect();
    if inside.len() != boundary.nodes.len() {
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
    let mut out_set: FxHashSet<OutPort> = FxHashSet::default();
    for p in &boundary.outputs {
        target.out_desc(*p)?;
        if !inside.contains(&p.node) {
            return Err(err(
                "a boundary output is produced outside the boundary".into()
            ));
        }
        if !out_set.insert(*p) {
            return Err(err("a boundary output is listed twice".into()));
        }
    }
    for &n in &boundary.nodes {
        for (a, out) in target.node(n)?.outputs.iter().enumerate() {
            let port = OutPort {
                node: n,
                index: a as u32,
            };
            if out_set.contains(&port) {
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
        .filter(|id| !data_index.contains_key(id))
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
    // ---- mutation ----
    let prefix = boundary
        .nodes
        .first()
        .and_then(|n| target.node(*n).ok())
        .map(|n| n.name.to_string())
        .unwrap_or_default();
    let mut map: FxHashMap<NodeId, NodeId> = FxHashMap::default();
    let mut created = Vec::with_capacity(rep_nodes.len());
    for &r in &rep_nodes {
        let mut node = replacement.node(r)?.clone();
        let base = if prefix.is_empty() {
            node.name.to_string()
        } else {
            format!("{prefix}/{}", node.name)
        };
        node.name = Name::new(target.unique_name(&base));
        let id = target.add_node(node)?;
        map.insert(r, id);
        created.push(id);
    }
    let resolve = |p: OutPort, map: &FxHashMap<NodeId, NodeId>| -> OutPort {
        match data_index.get(&p.node) {
            Some(&i) => boundary.inputs[i],
            None => OutPort {
                node: map[&p.node],
                index: p.index,
            },
        }
    };
    for &r in &rep_nodes {
        let rn = replacement.node(r)?;
        for (k, inp) in rn.inputs.iter().enumerate() {
            if let Some(s) = inp.source {
                let dst = InPort {
                    node: map[&r],
                    index: k as u32,
                };
                target.add_data_edge(resolve(s, &map), dst)?;
            }
        }
        for c in &rn.in_control {
            if let Some(&src) = map.get(c) {
                target.add_control_edge(src, map[&r])?;
            }
        }
    }
    for (j, old) in boundary.outputs.iter().enumerate() {
        let new = resolve(replacement.outputs[j], &map);
        if !data_index.contains_key(&replacement.outputs[j].node) {
            carry_over(target, *old, new)?;
        }
        let consumers: Vec<InPort> = target.node(old.node)?.outputs[old.index as usize]
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
    let mut matched = boundary.nodes.clone();
    matched.sort_unstable();
    matched.dedup();
    target.remove_nodes(&matched)?;
    Ok(created)
}

/// Fills what new output `new` (of a node copied from the replacement) leaves unset from old
/// boundary output `old` and its node (see [`rewrite`]'s carry-over).
fn carry_over(target: &mut Graph, old: OutPort, new: OutPort) -> Result<()> {
    let old_desc = target.out_desc(old)?.clone();
    let old_private = target.node(old.node)?.private_attrs.clone();
    let node = target.node_mut(new.node)?;
    for (k, v) in old_private {
        node.private_attrs.entry(k).or_insert(v);
    }
    let Some(slot) = node.outputs.get_mut(new.index as usize) else {
        return Err(Error::build(format!(
            "node '{}' has no output {}",
            node.name, new.index
        )));
    };
    let d = &mut slot.desc;
    let dtype_unknown = d.dtype == DataType::UNDEFINED;
    let rank_unknown = d.shape.is_unknown_rank();
    if dtype_unknown {
        d.dtype = old_desc.dtype;
    }
    if rank_unknown {
        d.shape = old_desc.shape.clone();
        if d.origin_shape.is_unknown_rank() {
            d.origin_shape = old_desc.origin_shape;
        }
    } else if d.shape.dims().len() == old_desc.shape.dims().len()
        && d.shape.dims().contains(&crate::types::UNKNOWN_DIM)
    {
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
    for (k, v) in old_desc.attrs {
        d.attrs.entry(k).or_insert(v);
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
