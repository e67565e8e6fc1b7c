//! Pass descriptors, the registry, and the executor.

use crate::driver::{run_decompose_pass, run_pattern_pass};
use crate::{
    DecomposePass, FusionPass, FusionReport, HookError, PassContext, PassError, PatternFusionPass,
};
use es_core::Graph;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kind of a pass; the names are GE's descriptor kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PassKind {
    FusionBase,
    PatternFusion,
    Decompose,
}

impl PassKind {
    pub const VALUES: [PassKind; 3] = [
        PassKind::FusionBase,
        PassKind::PatternFusion,
        PassKind::Decompose,
    ];
    /// "fusion_base", "pattern_fusion" or "decompose".
    pub fn as_str(self) -> &'static str {
        match self {
            PassKind::FusionBase => "fusion_base",
            PassKind::PatternFusion => "pattern_fusion",
            PassKind::Decompose => "decompose",
        }
    }
    pub fn parse(s: &str) -> Option<PassKind> {
        PassKind::VALUES.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for PassKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a pass runs in the compile pipeline; the values are GE's stage names, in pipeline
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PassStage {
    BeforeInferShape,
    AfterInferShape,
    AfterBuiltinFusionPass,
    AfterOriginGraphOptimize,
}

impl PassStage {
    /// The stages in pipeline order.
    pub const VALUES: [PassStage; 4] = [
        PassStage::BeforeInferShape,
        PassStage::AfterInferShape,
        PassStage::AfterBuiltinFusionPass,
        PassStage::AfterOriginGraphOptimize,
    ];
    /// GE's value: "BeforeInferShape", "AfterInferShape", "AfterBuiltinFusionPass",
    /// "AfterOriginGraphOptimize".
    pub fn as_str(self) -> &'static str {
        match self {
            PassStage::BeforeInferShape => "BeforeInferShape",
            PassStage::AfterInferShape => "AfterInferShape",
            PassStage::AfterBuiltinFusionPass => "AfterBuiltinFusionPass",
            PassStage::AfterOriginGraphOptimize => "AfterOriginGraphOptimize",
        }
    }
    pub fn parse(s: &str) -> Option<PassStage> {
        PassStage::VALUES.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for PassStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a pass is. `descriptor_key` = "module:class:name" identifies it; `pass_name` is unique
/// too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassDescriptor {
    pub descriptor_key: String,
    pub pass_name: String,
    pub module_name: String,
    pub class_name: String,
    pub kind: PassKind,
    pub stage: PassStage,
    /// The op types a decompose pass replaces (empty for the other kinds).
    pub op_types: Vec<String>,
}

impl PassDescriptor {
    /// A descriptor with `descriptor_key` built as "module:class:name".
    pub fn new(
        pass_name: impl Into<String>,
        module_name: impl Into<String>,
        class_name: impl Into<String>,
        kind: PassKind,
        stage: PassStage,
        op_types: Vec<String>,
    ) -> Self {
        let (pass_name, module_name, class_name) =
            (pass_name.into(), module_name.into(), class_name.into());
        PassDescriptor {
            descriptor_key: format!("{module_name}:{class_name}:{pass_name}"),
            pass_name,
            module_name,
            class_name,
            kind,
            stage,
            op_types,
        }
    }
}

/// A fresh pass object, of one of the three kinds.
pub enum PassInstance {
    Fusion(Box<dyn FusionPass>),
    Pattern(Box<dyn PatternFusionPass>),
    Decompose(Box<dyn DecomposePass>),
}

impl PassInstance {
    pub fn kind(&self) -> PassKind {
        match self {
            PassInstance::Fusion(_) => PassKind::FusionBase,
            PassInstance::Pattern(_) => PassKind::PatternFusion,
            PassInstance::Decompose(_) => PassKind::Decompose,
        }
    }
}

/// Makes a fresh instance for each run of a pass (so a pass's own fields are scratch space for
/// one run).
pub type PassFactory = Arc<dyn Fn() -> Result<PassInstance, HookError> + Send + Sync>;

/// Registered passes, in registration order.
#[derive(Clone, Default)]
pub struct PassRegistry {
    entries: Vec<(PassDescriptor, PassFactory)>,
    by_key: FxHashMap<String, usize>,
    by_name: FxHashMap<String, usize>,
}

impl fmt::Debug for PassRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.0.descriptor_key))
            .finish()
    }
}

impl PassRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a pass. A second pass with the same `descriptor_key` or `pass_name` is an
    /// error, as is a decompose pass without op types.
    pub fn register(
        &mut self,
        descriptor: PassDescriptor,
        factory: PassFactory,
    ) -> Result<(), PassError> {
        if descriptor.pass_name.is_empty() {
            return Err(PassError::Registry("a pass name must not be empty".into()));
        }
        if self.by_key.contains_key(&descriptor.descriptor_key) {
            return Err(PassError::Registry(format!(
                "pass descriptor_key already registered: {}",
                descriptor.descriptor_key
            )));
        }
        if self.by_name.contains_key(&descriptor.pass_name) {
            return Err(PassError::Registry(format!(
                "pass name already registered: {}",
                descriptor.pass_name
            )));
        }
        if descriptor.kind == PassKind::Decompose
            && (descriptor.op_types.is_empty() || descriptor.op_types.iter().any(String::is_empty))
        {
            return Err(PassError::Registry(format!(
                "decompose pass '{}' needs a non-empty list of non-empty op types",
                descriptor.pass_name
            )));
        }
        let i = self.entries.len();
        self.by_key.insert(descriptor.descriptor_key.clone(), i);
        self.by_name.insert(descriptor.pass_name.clone(), i);
        log::debug!(
            "registered pass {} ({}, {})",
            descriptor.descriptor_key,
            descriptor.kind,
            descriptor.stage
        );
        self.entries.push((descriptor, factory));
        Ok(())
    }

    /// Removes one pass by descriptor key; returns whether it was registered.
    pub fn unregister(&mut self, descriptor_key: &str) -> bool {
        let Some(i) = self.by_key.get(descriptor_key).copied() else {
            return false;
        };
        self.entries.remove(i);
        self.reindex();
        true
    }

    fn reindex(&mut self) {
        self.by_key.clear();
        self.by_name.clear();
        for (i, (d, _)) in self.entries.iter().enumerate() {
            self.by_key.insert(d.descriptor_key.clone(), i);
            self.by_name.insert(d.pass_name.clone(), i);
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_key.clear();
        self.by_name.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The descriptors, in registration order.
    pub fn descriptors(&self) -> impl Iterator<Item = &PassDescriptor> {
        self.entries.iter().map(|e| &e.0)
    }

    pub fn get(&self, descriptor_key: &str) -> Option<&PassDescriptor> {
        self.by_key.get(descriptor_key).map(|&i| &self.entries[i].0)
    }

    pub fn get_by_name(&self, pass_name: &str) -> Option<&PassDescriptor> {
        self.by_name.get(pass_name).map(|&i| &self.entries[i].0)
    }

    /// The entry for a pass name or a descriptor key.
    fn lookup(&self, name_or_key: &str) -> Option<usize> {
        self.by_name
            .get(name_or_key)
            .or_else(|| self.by_key.get(name_or_key))
            .copied()
    }
}

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
    let result = result.and_then(|()| {
        graph
            .topo_order()
            .map(|_| ())
            .map_err(|e| HookError::Failed(format!("the graph after the pass is not valid: {e}")))
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
