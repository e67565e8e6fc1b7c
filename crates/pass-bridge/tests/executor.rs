//! The executor: order, fresh instances, statistics, skip/fatal/failure handling, decompose
//! passes, the fixpoint driver.
use es_core::pattern::{MatchResult, Pattern};
use es_core::{Graph, NodeId};
use pass_bridge::testkit::{
    add_relu_chain, add_relu_pattern, float_input, fused_add_relu_replacement, ReplaceMatches,
};
use pass_bridge::{
    run_passes, DecomposePass, FusionPass, HookError, HookResult, PassContext, PassDescriptor,
    PassError, PassFactory, PassInstance, PassKind, PassRegistry, PassStage, PatternFusionPass,
    RunOptions, RunReport,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn desc(name: &str, kind: PassKind, stage: PassStage) -> PassDescriptor {
    PassDescriptor::new(name, "tests", name, kind, stage, vec![])
}

/// A registry holding one pass.
fn one_pass(d: PassDescriptor, factory: PassFactory) -> PassRegistry {
    let mut reg = PassRegistry::new();
    reg.register(d, factory).unwrap();
    reg
}

/// Runs every registered pass with the default options; the run must succeed.
fn run_all(reg: &PassRegistry, g: &mut Graph) -> RunReport {
    run_passes(reg, g, &RunOptions::default()).unwrap()
}

fn count(g: &Graph, op: &str) -> usize {
    g.nodes()
        .into_iter()
        .filter(|&id| g.node(id).unwrap().op_type == op)
        .count()
}

/// A fusion pass that appends its name to a shared log and optionally fails.
struct Logger {
    name: String,
    log: Arc<Mutex<Vec<String>>>,
    outcome: HookResult<()>,
}

impl FusionPass for Logger {
    fn run(&mut self, graph: &mut Graph, ctx: &mut PassContext) -> HookResult<()> {
        self.log.lock().unwrap().push(self.name.clone());
        assert_eq!(ctx.pass_name(), self.name);
        // Change the graph so that a rollback is visible.
        let first = graph.nodes()[0];
        graph
            .node_mut(first)
            .unwrap()
            .private_attrs
            .insert("touched".into(), es_core::AttrValue::Bool(true));
        self.outcome.clone()
    }
}

type Log = Arc<Mutex<Vec<String>>>;

/// A registry of [`Logger`] passes (name, stage, outcome), registered in that order, and their
/// shared log.
fn loggers(passes: Vec<(&str, PassStage, HookResult<()>)>) -> (PassRegistry, Log) {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let mut reg = PassRegistry::new();
    for (name, stage, outcome) in passes {
        let (log, n) = (log.clone(), name.to_string());
        reg.register(
            desc(name, PassKind::FusionBase, stage),
            Arc::new(move || {
                Ok(PassInstance::Fusion(Box::new(Logger {
                    name: n.clone(),
                    log: log.clone(),
                    outcome: outcome.clone(),
                })))
            }),
        )
        .unwrap();
    }
    (reg, log)
}

fn touched(g: &Graph) -> bool {
    g.node(g.nodes()[0])
        .unwrap()
        .private_attrs
        .contains_key("touched")
}

#[test]
fn passes_run_by_stage_then_registration_order() {
    let (reg, log) = loggers(vec![
        ("c", PassStage::AfterOriginGraphOptimize, Ok(())),
        ("a", PassStage::BeforeInferShape, Ok(())),
        ("b", PassStage::AfterInferShape, Ok(())),
        ("a2", PassStage::BeforeInferShape, Ok(())),
    ]);
    let mut g = add_relu_chain(2).unwrap();
    let report = run_all(&reg, &mut g);
    assert_eq!(*log.lock().unwrap(), vec!["a", "a2", "b", "c"]);
    assert_eq!(report.passes.len(), 4);
    log.lock().unwrap().clear();
    let opts = RunOptions {
        stage: Some(PassStage::BeforeInferShape),
        ..Default::default()
    };
    run_passes(&reg, &mut g, &opts).unwrap();
    assert_eq!(*log.lock().unwrap(), vec!["a", "a2"]);
    log.lock().unwrap().clear();
    let opts = RunOptions {
        passes: Some(vec!["c".into(), "tests:a:a".into()]),
        ..Default::default()
    };
    run_passes(&reg, &mut g, &opts).unwrap();
    assert_eq!(*log.lock().unwrap(), vec!["a", "c"]);
}

#[test]
fn unknown_pass_name_is_an_error() {
    let reg = PassRegistry::new();
    let mut g = add_relu_chain(1).unwrap();
    let opts = RunOptions {
        passes: Some(vec!["nope".into()]),
        ..Default::default()
    };
    let e = run_passes(&reg, &mut g, &opts).unwrap_err();
    assert!(matches!(e, PassError::Registry(m) if m.contains("nope")));
}

#[test]
fn duplicate_registrations_are_refused() {
    let (mut reg, _log) = loggers(vec![("a", PassStage::BeforeInferShape, Ok(()))]);
    let f: PassFactory = Arc::new(|| Err(HookError::Failed("unused".into())));
    let e = reg
        .register(
            desc("a", PassKind::FusionBase, PassStage::AfterInferShape),
            f.clone(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("already registered"), "{e}");
    let mut d = desc("b", PassKind::FusionBase, PassStage::AfterInferShape);
    d.descriptor_key = "tests:a:a".into();
    assert!(reg.register(d, f.clone()).is_err());
    let e = reg
        .register(
            desc("d", PassKind::Decompose, PassStage::AfterInferShape),
            f,
        )
        .unwrap_err();
    assert!(e.to_string().contains("op types"), "{e}");
    assert_eq!(reg.len(), 1);
    assert!(reg.unregister("tests:a:a"));
    assert!(reg.is_empty());
}

#[test]
fn skip_undoes_a_fusion_pass_and_is_not_an_error() {
    let skip = Err(HookError::Skip("not today".into()));
    let (reg, _log) = loggers(vec![("s", PassStage::BeforeInferShape, skip)]);
    let mut g = add_relu_chain(2).unwrap();
    let report = run_all(&reg, &mut g);
    assert!(report.passes[0].skipped_run);
    assert!(!touched(&g));
}

#[test]
fn fatal_and_failed_name_the_pass_and_restore_the_graph() {
    for (outcome, fatal) in [
        (Err(HookError::Fatal("broken invariant".into())), true),
        (Err(HookError::Failed("Traceback: boom".into())), false),
    ] {
        let (reg, log) = loggers(vec![
            ("ok", PassStage::BeforeInferShape, Ok(())),
            ("bad", PassStage::AfterInferShape, outcome),
            ("never", PassStage::AfterInferShape, Ok(())),
        ]);
        let mut g = add_relu_chain(2).unwrap();
        let e = run_passes(&reg, &mut g, &RunOptions::default()).unwrap_err();
        assert_eq!(e.pass_name(), Some("bad"));
        assert_eq!(matches!(e, PassError::Fatal { .. }), fatal);
        // "ok" kept its change, "bad" was undone, "never" did not run.
        assert!(touched(&g));
        assert_eq!(*log.lock().unwrap(), vec!["ok", "bad"]);
    }
}

struct Fuse {
    rounds: usize,
    /// Accept only every other match.
    alternate: bool,
    seen: usize,
    skip_first: bool,
    /// Skip in `replacement` when called for this match (1-based).
    skip_replacement_at: Option<usize>,
}

impl PatternFusionPass for Fuse {
    fn patterns(&mut self, _ctx: &mut PassContext) -> HookResult<Vec<Pattern>> {
        Ok(vec![add_relu_pattern()?])
    }
    fn max_rounds(&self) -> usize {
        self.rounds
    }
    fn meet_requirements(
        &mut self,
        _g: &mut Graph,
        _p: usize,
        _m: &MatchResult,
        _ctx: &mut PassContext,
    ) -> HookResult<bool> {
        self.seen += 1;
        if self.skip_first && self.seen == 1 {
            return Err(HookError::Skip("first".into()));
        }
        Ok(!self.alternate || self.seen % 2 == 1)
    }
    fn replacement(
        &mut self,
        _g: &mut Graph,
        _p: usize,
        _m: &MatchResult,
        _ctx: &mut PassContext,
    ) -> HookResult<Graph> {
        if self.skip_replacement_at == Some(self.seen) {
            return Err(HookError::Skip("in replacement".into()));
        }
        Ok(fused_add_relu_replacement()?)
    }
}

fn fuse_registry(rounds: usize, alternate: bool, skip_first: bool) -> PassRegistry {
    one_pass(
        desc("fuse", PassKind::PatternFusion, PassStage::AfterInferShape),
        Arc::new(move || {
            Ok(PassInstance::Pattern(Box::new(Fuse {
                rounds,
                alternate,
                seen: 0,
                skip_first,
                skip_replacement_at: None,
            })))
        }),
    )
}

#[test]
fn pattern_pass_rewrites_every_accepted_match_and_counts() {
    let mut g = add_relu_chain(10).unwrap();
    let report = run_all(&fuse_registry(1, true, false), &mut g);
    let s = &report.passes[0];
    assert_eq!(
        (s.matches_tried, s.matches_accepted, s.rewritten),
        (10, 5, 5)
    );
    assert_eq!(count(&g, "FusedAddRelu"), 5);
    assert_eq!(count(&g, "Relu"), 5);
    g.validate().unwrap();
    assert_eq!(s.nodes_after, g.node_count());
    // A fresh instance per run: `seen` starts at 0 again, so the same alternation repeats.
    let report = run_all(&fuse_registry(1, true, false), &mut g);
    assert_eq!(report.passes[0].matches_tried, 5);
}

#[test]
fn skip_in_a_pattern_hook_skips_that_match_only() {
    let mut g = add_relu_chain(4).unwrap();
    let report = run_all(&fuse_registry(1, false, true), &mut g);
    let s = &report.passes[0];
    assert_eq!((s.skipped, s.rewritten), (1, 3));
    assert_eq!(count(&g, "FusedAddRelu"), 3);
}

fn relu_chain(n: usize) -> Graph {
    let mut b = es_core::GraphBuilder::new("relus");
    let mut x = float_input(&mut b, 0).unwrap();
    for _ in 0..n {
        x = es_core::es::relu(&mut b, x).unwrap();
    }
    b.set_output(x, 0).unwrap();
    b.build_and_reset().unwrap()
}

/// Relu(Relu(x)) -> Relu(x), for up to `rounds` rounds: each round halves a chain of Relus.
fn idempotent(rounds: usize) -> ReplaceMatches {
    let mut pattern = relu_chain(2);
    pattern.name = "relu_relu".into();
    ReplaceMatches {
        pattern: Pattern::new(pattern).unwrap(),
        replacement: relu_chain(1),
        max_rounds: rounds,
    }
}

#[test]
fn fixpoint_rounds_stop_when_nothing_changes() {
    let run = |rounds: usize| {
        let reg = one_pass(
            desc("idem", PassKind::PatternFusion, PassStage::AfterInferShape),
            factory_of(idempotent(rounds)),
        );
        let mut g = relu_chain(8);
        let report = run_all(&reg, &mut g);
        (count(&g, "Relu"), report.passes[0].clone())
    };
    // GE's single round: 8 -> 4.
    let (relus, s) = run(1);
    assert_eq!((relus, s.rounds, s.rewritten), (4, 1, 4));
    // 8 -> 4 -> 2 -> 1, then a round that finds nothing.
    let (relus, s) = run(10);
    assert_eq!((relus, s.rounds, s.rewritten), (1, 4, 7));
    // The bound stops it early.
    let (relus, s) = run(2);
    assert_eq!((relus, s.rounds, s.rewritten), (2, 2, 6));
}

/// A factory of copies of `pass`.
fn factory_of(pass: ReplaceMatches) -> PassFactory {
    Arc::new(move || Ok(PassInstance::Pattern(Box::new(pass.clone()))))
}

/// A pattern pass whose replacement has the wrong number of inputs (one; a match has two).
fn bad_replacement() -> PassFactory {
    let mut one_input = add_relu_chain(1).unwrap();
    one_input.name = "one_input".into();
    factory_of(ReplaceMatches {
        pattern: add_relu_pattern().unwrap(),
        replacement: one_input,
        max_rounds: 1,
    })
}

/// Runs [`bad_replacement`], registered as pass `name` of `kind`, on a chain of `n` Add+Relu
/// pairs, which must fail: the graph before, after, and the error.
fn run_bad_replacement(name: &str, kind: PassKind, n: usize) -> (Graph, Graph, PassError) {
    let reg = one_pass(
        desc(name, kind, PassStage::AfterInferShape),
        bad_replacement(),
    );
    let mut g = add_relu_chain(n).unwrap();
    let before = g.clone();
    let e = run_passes(&reg, &mut g, &RunOptions::default()).unwrap_err();
    (before, g, e)
}

/// A replacement with the wrong number of inputs makes the pass fail, naming it, and restores
/// the graph.
#[test]
fn a_replacement_that_does_not_fit_fails_the_pass_and_restores() {
    let (before, g, e) = run_bad_replacement("bad", PassKind::PatternFusion, 3);
    assert_eq!(e.pass_name(), Some("bad"));
    assert!(e.to_string().contains("inputs"), "{e}");
    assert_eq!(g, before);
}

/// Decomposes Relu into Relu(Relu(x)) (a toy: checks wiring and counts).
struct DoubleRelu {
    calls: Arc<AtomicUsize>,
}

impl DecomposePass for DoubleRelu {
    fn meet_requirements(
        &mut self,
        g: &mut Graph,
        node: NodeId,
        _ctx: &mut PassContext,
    ) -> HookResult<bool> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(!g.node(node)?.private_attrs.contains_key("keep"))
    }
    fn replacement(
        &mut self,
        _g: &mut Graph,
        _node: NodeId,
        _ctx: &mut PassContext,
    ) -> HookResult<Graph> {
        let mut b = es_core::GraphBuilder::new("double");
        let x = float_input(&mut b, 0)?;
        let r1 = es_core::es::relu(&mut b, x)?;
        let r2 = es_core::es::relu(&mut b, r1)?;
        b.set_output(r2, 0)?;
        Ok(b.build_and_reset()?)
    }
}

#[test]
fn decompose_pass_replaces_each_node_of_its_op_types() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let reg = one_pass(
        PassDescriptor::new(
            "double",
            "tests",
            "DoubleRelu",
            PassKind::Decompose,
            PassStage::AfterInferShape,
            vec!["Relu".into()],
        ),
        Arc::new(move || {
            Ok(PassInstance::Decompose(Box::new(DoubleRelu {
                calls: c2.clone(),
            })))
        }),
    );
    let mut g = add_relu_chain(3).unwrap();
    let keep = g
        .nodes()
        .into_iter()
        .find(|&id| g.node(id).unwrap().op_type == "Relu")
        .unwrap();
    g.node_mut(keep)
        .unwrap()
        .private_attrs
        .insert("keep".into(), es_core::AttrValue::Bool(true));
    let report = run_all(&reg, &mut g);
    let s = &report.passes[0];
    assert_eq!(
        (s.matches_tried, s.matches_accepted, s.rewritten),
        (3, 2, 2)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(count(&g, "Relu"), 5);
    g.validate().unwrap();
    assert_eq!(g.topo_order().unwrap().len(), g.node_count());
}

#[test]
fn a_factory_of_the_wrong_kind_is_refused() {
    let (_, _, e) = run_bad_replacement("x", PassKind::FusionBase, 1);
    assert!(matches!(e, PassError::Registry(m) if m.contains("pattern_fusion")));
}

#[test]
fn options_reach_the_context() {
    struct Reader(Arc<Mutex<Option<String>>>);
    impl FusionPass for Reader {
        fn run(&mut self, _g: &mut Graph, ctx: &mut PassContext) -> HookResult<()> {
            *self.0.lock().unwrap() = ctx.option("my.key").map(str::to_string);
            assert_eq!(ctx.option("absent"), None);
            Ok(())
        }
    }
    let got = Arc::new(Mutex::new(None));
    let g2 = got.clone();
    let reg = one_pass(
        desc("r", PassKind::FusionBase, PassStage::AfterInferShape),
        Arc::new(move || Ok(PassInstance::Fusion(Box::new(Reader(g2.clone()))))),
    );
    let mut opts = RunOptions::default();
    opts.options.insert("my.key".into(), "v".into());
    let mut g = add_relu_chain(1).unwrap();
    run_passes(&reg, &mut g, &opts).unwrap();
    assert_eq!(got.lock().unwrap().as_deref(), Some("v"));
}

#[test]
fn kinds_and_stages_round_trip_their_names() {
    for k in PassKind::VALUES {
        assert_eq!(PassKind::parse(k.as_str()), Some(k));
    }
    for s in PassStage::VALUES {
        assert_eq!(PassStage::parse(s.as_str()), Some(s));
    }
    assert_eq!(PassStage::parse("Later"), None);
}

/// A fusion pass that removes every Add (whose outputs Relu reads) and reports success.
struct BreaksGraph;

impl FusionPass for BreaksGraph {
    fn run(&mut self, graph: &mut Graph, _ctx: &mut PassContext) -> HookResult<()> {
        for id in graph.nodes() {
            if graph.node(id).unwrap().op_type == "Add" {
                graph.remove_node(id).unwrap();
            }
        }
        Ok(())
    }
}

#[test]
fn a_pass_leaving_the_graph_invalid_fails_and_is_rolled_back() {
    let reg = one_pass(
        desc("breaks", PassKind::FusionBase, PassStage::AfterInferShape),
        Arc::new(|| Ok(PassInstance::Fusion(Box::new(BreaksGraph)))),
    );
    let mut g = add_relu_chain(2).unwrap();
    g.validate().unwrap();
    let before = (g.node_count(), count(&g, "Add"));
    let e = run_passes(&reg, &mut g, &RunOptions::default()).unwrap_err();
    assert_eq!(e.pass_name(), Some("breaks"));
    assert!(e.to_string().contains("not valid"), "{e}");
    assert_eq!((g.node_count(), count(&g, "Add")), before);
    g.validate().unwrap();
}

#[test]
fn a_skip_in_replacement_counts_the_match_as_accepted() {
    let mut g = add_relu_chain(4).unwrap();
    // Match 1 skipped by meet_requirements, match 2 accepted then skipped by replacement.
    let reg = one_pass(
        desc("skips", PassKind::PatternFusion, PassStage::AfterInferShape),
        Arc::new(|| {
            Ok(PassInstance::Pattern(Box::new(Fuse {
                rounds: 1,
                alternate: false,
                seen: 0,
                skip_first: true,
                skip_replacement_at: Some(2),
            })))
        }),
    );
    let report = run_all(&reg, &mut g);
    let s = &report.passes[0];
    assert_eq!(
        (s.matches_tried, s.matches_accepted, s.skipped, s.rewritten),
        (4, 3, 2, 2)
    );
    assert_eq!(count(&g, "FusedAddRelu"), 2);
    g.validate().unwrap();
}
