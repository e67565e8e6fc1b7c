//! Rewrite throughput: a chain of N Add→Relu blocks fused into FusedAddRelu by a Rust pattern
//! pass through the executor (compare with benches/python/bench_rewrite.py, which adds Python
//! callbacks per match).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use es_core::pattern::{MatchResult, Pattern};
use es_core::Graph;
use pass_bridge::testkit::{add_relu_chain, add_relu_pattern, fused_add_relu_replacement};
use pass_bridge::{
    run_passes, HookResult, PassContext, PassDescriptor, PassInstance, PassKind, PassRegistry,
    PassStage, PatternFusionPass, RunOptions,
};
use std::sync::Arc;

struct Fuse(Graph);

impl PatternFusionPass for Fuse {
    fn patterns(&mut self, _ctx: &mut PassContext) -> HookResult<Vec<Pattern>> {
        Ok(vec![add_relu_pattern()?])
    }
    fn replacement(
        &mut self,
        _g: &mut Graph,
        _p: usize,
        _m: &MatchResult,
        _c: &mut PassContext,
    ) -> HookResult<Graph> {
        Ok(self.0.clone())
    }
}

fn bench(c: &mut Criterion) {
    let rep = fused_add_relu_replacement().expect("replacement");
    let mut reg = PassRegistry::new();
    reg.register(
        PassDescriptor::new(
            "Fuse",
            "bench",
            "Fuse",
            PassKind::PatternFusion,
            PassStage::AfterInferShape,
            vec![],
        ),
        Arc::new(move || Ok(PassInstance::Pattern(Box::new(Fuse(rep.clone()))))),
    )
    .expect("register");
    let mut group = c.benchmark_group("fuse_add_relu");
    group.sample_size(10);
    for n in [1_000usize, 10_000] {
        let g = add_relu_chain(n).expect("chain");
        group.bench_with_input(BenchmarkId::from_parameter(n), &g, |b, g| {
            b.iter_batched(
                || g.clone(),
                |mut g| run_passes(&reg, &mut g, &RunOptions::default()).expect("run"),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
