//! Registers a Rust pattern pass that fuses `Relu(Add(a, b))` into `FusedAddRelu(a, b)`, runs
//! it on a chain of 1000 blocks (`N` in the environment to change it), and prints the
//! statistics. The pass is a `pass_bridge::testkit::ReplaceMatches` (a `PatternFusionPass`:
//! its patterns, then a replacement per match) and `replace_matches_registry` registers it.
use pass_bridge::testkit::{add_relu_chain, replace_matches_registry, ReplaceMatches};
use pass_bridge::{run_passes, RunOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry =
        replace_matches_registry("FuseAddRelu", "example", ReplaceMatches::fuse_add_relu()?)?;
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
