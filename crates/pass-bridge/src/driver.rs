//! The run loops of pattern and decompose passes (GE's `PatternFusionPass::Run` and
//! `DecomposePass::Run`).

use crate::{DecomposePass, HookError, HookResult, PassContext, PassStats, PatternFusionPass};
use es_core::pattern::{find_matches, rewrite, rewritten_outputs, SubgraphBoundary};
use es_core::{Graph, NodeId, OutPort};
use rustc_hash::FxHashMap;

fn follow(moved: &FxHashMap<OutPort, OutPort>, mut p: OutPort) -> OutPort {
    // Each step goes to a port created later, so this ends.
    while let Some(&q) = moved.get(&p) {
        p = q;
    }
    p
}

/// Rewrites `boundary` by `replacement`, recording where its outputs went in `moved`.
fn apply(
    graph: &mut Graph,
    boundary: &SubgraphBoundary,
    replacement: &Graph,
    moved: &mut FxHashMap<OutPort, OutPort>,
) -> HookResult<()> {
    let created = rewrite(graph, boundary, replacement)?;
    for (old, new) in
        boundary
            .outputs
            .iter()
            .zip(rewritten_outputs(replacement, boundary, &created)?)
    {
        moved.insert(*old, new);
    }
    Ok(())
}

/// Runs a pattern pass: per round, per pattern, per match (in [`find_matches`] order):
/// `meet_requirements`, then `replacement`, then the rewrite. A match's inputs that an earlier
/// rewrite of the same round replaced are followed to their replacements before the hooks see
/// the match. A skip from a hook skips that match. Rounds repeat while something was rewritten,
/// up to [`PatternFusionPass::max_rounds`].
pub fn run_pattern_pass(
    pass: &mut dyn PatternFusionPass,
    graph: &mut Graph,
    ctx: &mut PassContext,
    stats: &mut PassStats,
) -> HookResult<()> {
    let patterns = pass.patterns(ctx)?;
    let cfg = pass.matcher_config();
    let max_rounds = pass.max_rounds().max(1);
    for _ in 0..max_rounds {
        stats.rounds += 1;
        let mut changed = false;
        for (pi, pattern) in patterns.iter().enumerate() {
            let matches = find_matches(graph, pattern, cfg)?;
            let mut moved: FxHashMap<OutPort, OutPort> = FxHashMap::default();
            for mut m in matches {
                if !moved.is_empty() {
                    for p in m.inputs.iter_mut() {
                        *p = follow(&moved, *p);
                    }
                    for ports in m.captures.values_mut() {
                        for p in ports.iter_mut() {
                            *p = follow(&moved, *p);
                        }
                    }
                }
                stats.matches_tried += 1;
                match pass.meet_requirements(graph, pi, &m, ctx) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(HookError::Skip(_)) => {
                        stats.skipped += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                stats.matches_accepted += 1;
                let replacement = match pass.replacement(graph, pi, &m, ctx) {
                    Ok(g) => g,
                    Err(HookError::Skip(_)) => {
                        stats.skipped += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let boundary = m.to_boundary();
                apply(graph, &boundary, &replacement, &mut moved).map_err(|e| {
                    HookError::Failed(format!(
                        "cannot replace a match of pattern '{}': {e}",
                        m.pattern_name
                    ))
                })?;
                stats.rewritten += 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(())
}

/// The boundary of one node: its connected inputs in input order, all its outputs.
pub(crate) fn node_boundary(graph: &Graph, node: NodeId) -> HookResult<SubgraphBoundary> {
    let n = graph.node(node)?;
    let inputs = n.inputs.iter().filter_map(|i| i.source).collect();
    let outputs = (0..n.outputs.len())
        .map(|a| OutPort {
            node,
            index: a as u32,
        })
        .collect();
    Ok(SubgraphBoundary::new(vec![node], inputs, outputs))
}

/// Runs a decompose pass: every node whose op type is in `op_types`, in creation order, is
/// offered to `meet_requirements` and, if accepted, replaced by `replacement(node)`. The
/// replacement's inputs are the node's connected inputs in input order; its outputs replace
/// the node's outputs in order. A skip from a hook skips that node.
pub fn run_decompose_pass(
    pass: &mut dyn DecomposePass,
    op_types: &[String],
    graph: &mut Graph,
    ctx: &mut PassContext,
    stats: &mut PassStats,
) -> HookResult<()> {
    stats.rounds = 1;
    let targets: Vec<NodeId> = graph
        .nodes()
        .into_iter()
        .filter(|&id| {
            graph
                .node(id)
                .map(|n| op_types.iter().any(|t| t.as_str() == n.op_type.as_str()))
                .unwrap_or(false)
        })
        .collect();
    for node in targets {
        if !graph.contains(node) {
            continue;
        }
        stats.matches_tried += 1;
        match pass.meet_requirements(graph, node, ctx) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(HookError::Skip(_)) => {
                stats.skipped += 1;
                continue;
            }
            Err(e) => return Err(e),
        }
        stats.matches_accepted += 1;
        let name = graph.node(node)?.name.to_string();
        let replacement = match pass.replacement(graph, node, ctx) {
            Ok(g) => g,
            Err(HookError::Skip(_)) => {
                stats.skipped += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        // Read from the graph as it is now: earlier rewrites rewired this node's inputs.
        let boundary = node_boundary(graph, node)?;
        rewrite(graph, &boundary, &replacement)
            .map_err(|e| HookError::Failed(format!("cannot decompose node '{name}': {e}")))?;
        stats.rewritten += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_chains_ports() {
        let mut g = Graph::new("g");
        let a = g.add_node(es_core::Node::new("a", "Relu")).unwrap();
        let b = g.add_node(es_core::Node::new("b", "Relu")).unwrap();
        let c = g.add_node(es_core::Node::new("c", "Relu")).unwrap();
        let p = |n| OutPort { node: n, index: 0 };
        let mut moved = FxHashMap::default();
        moved.insert(p(a), p(b));
        moved.insert(p(b), p(c));
        assert_eq!(follow(&moved, p(a)), p(c));
        assert_eq!(follow(&moved, p(c)), p(c));
    }
}
