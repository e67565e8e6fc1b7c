//! Registers a Rust pattern pass that fuses `Relu(Add(a, b))` into `FusedAddRelu(a, b)`, runs
//! it on a chain of 1000 blocks, and prints the statistics.
use es_core::pattern::{MatchResult, Pattern};
use es_core::Graph;
use pass_bridge::testkit::{add_relu_chain, add_relu_pattern, fused_add_relu_replacement};
use pass_bridge::{
    run_passes, HookResult, PassContext, PassDescriptor, PassInstance, PassKind, PassRegistry,
    PassStage, PatternFusionPass, RunOptions,
};
use std::sync::Arc;

struct FuseAddRelu;

impl PatternFusionPass for FuseAddRelu {
    fn patterns(&mut self, _ctx: &mut PassContext) -> HookResult<Vec<Pattern>> {
        Ok(vec![add_relu_pattern()?])
    }
    fn replacement(
        &mut self,
        _graph: &mut Graph,
        _pattern: usize,
        _m: &MatchResult,
        _ctx: &mut PassContext,
    ) -> HookResult<Graph> {
        Ok(fused_add_relu_replacement()?)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = PassRegistry::new();
    registry.register(
        PassDescriptor::new(
            "FuseAddRelu",
            "example",
            "FuseAddRelu",
            PassKind::PatternFusion,
            PassStage::AfterInferShape,
            vec![],
        ),
        Arc::new(|| Ok(PassInstance::Pattern(Box::new(FuseAddRelu)))),
    )?;
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut graph = add_relu_chain(n)?;
    let report = run_passes(&registry, &mut graph, &RunOptions::default())?;
    for s in &report.passes {
        println!("{s}");
    }
    graph.validate()?;
    Ok(())
}
