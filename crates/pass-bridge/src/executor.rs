//! The executor: [`run_passes`] runs registered passes stage by stage and returns their
//! [`PassStats`]; the run loops of pattern and decompose passes (GE's `PatternFusionPass::Run`
//! and `DecomposePass::Run`) are here too.

use crate::hooks::{
    Decision, DecomposePass, FusionReport, HookError, HookResult, PassContext, PassError,
    PatternFusionPass,
};
use crate::registry::{
    PassDescriptor, PassFactory, PassInstance, PassKind, PassRegistry, PassStage,
};
use es_core::pattern::{find_matches, rewrite_owned, SubgraphBoundary};
use es_core::{Graph, NodeId, OutPort};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which passes [`run_passes`] runs, and the options their contexts see.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Only passes of this stage (all stages, in pipeline order, when `None`).
    pub stage: Option<PassStage>,
    /// Only these passes, by name or descriptor key (all when `None`). They still run in
    /// stage and registration order.
    pub passes: Option<Vec<String>>,
    /// Options a pass reads through [`PassContext::option`].
    pub options: BTreeMap<String, String>,
}

/// Statistics of one pass run.
#[derive(Debug, Clone, PartialEq)]
pub struct PassStats {
    pub pass_name: String,
    pub descriptor_key: String,
    pub kind: PassKind,
    pub stage: PassStage,
    /// Matches found (pattern passes) or nodes of the op types (decompose passes) offered to
    /// `meet_requirements`; 0 for fusion passes.
    pub matches_tried: usize,
    /// Of those, the ones `meet_requirements` accepted.
    pub matches_accepted: usize,
    /// Rewrites applied.
    pub rewritten: usize,
    /// Matches or nodes the pass skipped with a skip exception.
    pub skipped: usize,
    /// Match-and-rewrite rounds run (pattern passes; see
    /// [`PatternFusionPass::max_rounds`]).
    pub rounds: usize,
    /// A fusion pass asked to skip: its changes were undone.
    pub skipped_run: bool,
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// Fusions the pass reported (GE's `report_fuse`, or `SubgraphRewriter` with a context).
    pub fusions: Vec<FusionReport>,
    pub elapsed: Duration,
}

impl PassStats {
    fn new(d: &PassDescriptor, nodes_before: usize) -> Self {
        PassStats {
            pass_name: d.pass_name.clone(),
            descriptor_key: d.descriptor_key.clone(),
            kind: d.kind,
            stage: d.stage,
            matches_tried: 0,
            matches_accepted: 0,
            rewritten: 0,
            skipped: 0,
            rounds: 0,
            skipped_run: false,
            nodes_before,
            nodes_after: nodes_before,
            fusions: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }
}

impl fmt::Display for PassStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}, {}]: tried {}, accepted {}, rewritten {}, skipped {}, nodes {} -> {}, {:.3} ms",
            self.pass_name,
            self.kind,
            self.stage,
            self.matches_tried,
            self.matches_accepted,
            self.rewritten,
            self.skipped,
            self.nodes_before,
            self.nodes_after,
            self.elapsed.as_secs_f64() * 1e3
        )
    }
}

/// What [`run_passes`] did: one entry per pass run, in run order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    pub passes: Vec<PassStats>,
    pub elapsed: Duration,
}

/// Runs registered passes on `graph`: stage by stage in pipeline order (or only
/// `options.stage`), each stage's passes in registration order (or only `options.passes`), a
/// fresh instance from the factory for each run.
///
/// A pass that fails (fatal error, other error, a rewrite that cannot be applied, or a result
/// with a cycle) stops the run with [`PassError`] naming it, and the graph is restored to what
/// it was before that pass; the passes before it keep their effect. Each pass run costs one
/// copy of the graph for that guarantee.
pub fn run_passes(
    registry: &PassRegistry,
    graph: &mut Graph,
    options: &RunOptions,
) -> Result<RunReport, PassError> {
    let start = Instant::now();
    let selected: Option<Vec<usize>> = match &options.passes {
        None => None,
        Some(names) => {
            let mut v = Vec::with_capacity(names.len());
            for n in names {
                let i = registry.lookup(n).ok_or_else(|| {
                    PassError::Registry(format!(
                        "no registered pass named '{n}' (registered: {})",
                        registry
                            .descriptors()
                            .map(|d| d.pass_name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                v.push(i);
            }
            Some(v)
        }
    };
    let stages: Vec<PassStage> = match options.stage {
        Some(s) => vec![s],
        None => PassStage::VALUES.to_vec(),
    };
    let mut report = RunReport::default();
    for stage in stages {
        for (i, (d, factory)) in registry.entries.iter().enumerate() {
            if d.stage != stage || selected.as_ref().is_some_and(|s| !s.contains(&i)) {
                continue;
            }
            let stats = run_one(d, factory, graph, &options.options)?;
            log::info!("{stats}");
            report.passes.push(stats);
        }
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

fn run_one(
    d: &PassDescriptor,
    factory: &PassFactory,
    graph: &mut Graph,
    options: &BTreeMap<String, String>,
) -> Result<PassStats, PassError> {
    let start = Instant::now();
    let mut stats = PassStats::new(d, graph.node_count());
    let fail = |e: HookError| match e {
        HookError::Fatal(message) => PassError::Fatal {
            pass: d.pass_name.clone(),
            message,
        },
        HookError::Failed(message) | HookError::Skip(message) => PassError::Failed {
            pass: d.pass_name.clone(),
            message,
        },
    };
    let instance = match factory() {
        Ok(i) => i,
        Err(HookError::Skip(m)) => {
            log::info!("pass {} skipped at creation: {m}", d.pass_name);
            stats.skipped_run = true;
            stats.elapsed = start.elapsed();
            return Ok(stats);
        }
        Err(e) => return Err(fail(e)),
    };
    if instance.kind() != d.kind {
        return Err(PassError::Registry(format!(
            "pass '{}' is registered as {} but its factory made a {} pass",
            d.pass_name,
            d.kind,
            instance.kind()
        )));
    }
    let mut ctx = PassContext::new(d.pass_name.clone(), options.clone());
    let backup = graph.clone();
    let result = match instance {
        PassInstance::Fusion(mut p) => p.run(graph, &mut ctx),
        PassInstance::Pattern(mut p) => run_pattern_pass(p.as_mut(), graph, &mut ctx, &mut stats),
        PassInstance::Decompose(mut p) => {
            run_decompose_pass(p.as_mut(), &d.op_types, graph, &mut ctx, &mut stats)
        }
    };
    // The graph after the pass must pass the checks a build does (es-core's Graph::validate:
    // live edges, required inputs connected, outputs set, Data indexes, no cycle), unless the
    // graph before it did not either (then only the absence of a cycle is required).
    let result = result.and_then(|()| {
        let invalid = |e: &dyn fmt::Display| {
            HookError::Failed(format!("the graph after the pass is not valid: {e}"))
        };
        // `validate` includes the cycle check (a topological sort when edges do not follow
        // creation order, as after most rewrites): sorted once when the graph is valid.
        match graph.validate() {
            Ok(()) => Ok(()),
            Err(e) if backup.validate().is_ok() => Err(invalid(&e)),
            Err(_) => graph.topo_order().map(drop).map_err(|e| invalid(&e)),
        }
    });
    match result {
        Ok(()) => {}
        Err(HookError::Skip(m)) => {
            log::info!("pass {} skipped: {m}", d.pass_name);
            *graph = backup;
            stats.skipped_run = true;
        }
        Err(e) => {
            *graph = backup;
            let e = match e {
                HookError::Failed(m) if !ctx.error_message().is_empty() => {
                    HookError::Failed(format!("{m} ({})", ctx.error_message()))
                }
                e => e,
            };
            return Err(fail(e));
        }
    }
    if !stats.skipped_run {
        stats.fusions = ctx.fusion_reports().to_vec();
    }
    stats.nodes_after = graph.node_count();
    stats.elapsed = start.elapsed();
    Ok(stats)
}

fn follow(moved: &FxHashMap<OutPort, OutPort>, mut p: OutPort) -> OutPort {
    // Each step goes to a port created later, so this ends.
    while let Some(&q) = moved.get(&p) {
        p = q;
    }
    p
}

/// The value of a hook's result; `None` when the hook asked to skip the current match or node
/// (counted in `stats.skipped`); the hook's other errors as they are.
fn unless_skipped<T>(result: HookResult<T>, stats: &mut PassStats) -> HookResult<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(HookError::Skip(_)) => {
            stats.skipped += 1;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Rewrites `boundary` by `replacement` (moved in), recording where its outputs went in
/// `moved`.
fn apply(
    graph: &mut Graph,
    boundary: &SubgraphBoundary,
    replacement: Graph,
    moved: &mut FxHashMap<OutPort, OutPort>,
) -> HookResult<()> {
    let (_, outs) = rewrite_owned(graph, boundary, replacement)?;
    for (old, new) in boundary.outputs.iter().zip(outs) {
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
                    for (_, ports) in m.captures.iter_mut() {
                        for p in ports.iter_mut() {
                            *p = follow(&moved, *p);
                        }
                    }
                }
                stats.matches_tried += 1;
                let shared = Arc::new(m);
                let replacement = match pass.decide(graph, pi, &shared, ctx)? {
                    Decision::Rejected => continue,
                    Decision::Skipped { accepted } => {
                        stats.matches_accepted += usize::from(accepted);
                        stats.skipped += 1;
                        continue;
                    }
                    Decision::Replace(g) => g,
                };
                // The hooks' views of the match have expired; a copy only if one was kept.
                let mut m = Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone());
                stats.matches_accepted += 1;
                // The match is not read again: its ports move into the boundary.
                let boundary = SubgraphBoundary::new(
                    m.target_nodes(),
                    std::mem::take(&mut m.inputs),
                    std::mem::take(&mut m.outputs),
                );
                apply(graph, &boundary, replacement, &mut moved).map_err(|e| {
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
fn node_boundary(graph: &Graph, node: NodeId) -> HookResult<SubgraphBoundary> {
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
        if unless_skipped(pass.meet_requirements(graph, node, ctx), stats)? != Some(true) {
            continue;
        }
        stats.matches_accepted += 1;
        let name = graph.node(node)?.name.to_string();
        let Some(replacement) = unless_skipped(pass.replacement(graph, node, ctx), stats)? else {
            continue;
        };
        // Read from the graph as it is now: earlier rewrites rewired this node's inputs.
        let boundary = node_boundary(graph, node)?;
        rewrite_owned(graph, &boundary, replacement)
            .map(drop)
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
