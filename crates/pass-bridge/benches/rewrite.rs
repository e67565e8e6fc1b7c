//! Rewrite throughput: a chain of N Add→Relu blocks fused into FusedAddRelu by a Rust pattern
//! pass through the executor (compare with benches/python/bench_rewrite.py, which adds Python
//! callbacks per match).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pass_bridge::testkit::{add_relu_chain, replace_matches_registry, ReplaceMatches};
use pass_bridge::{run_passes, RunOptions};

fn bench(c: &mut Criterion) {
    let pass = ReplaceMatches::fuse_add_relu().expect("pass");
    let reg = replace_matches_registry("Fuse", "bench", pass).expect("register");
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
