//! pass-bridge: graph passes for ge-rs.
//!
//! - [`PassDescriptor`]: what a pass is (`descriptor_key` = "module:class:name", kind, stage,
//!   op types), the same record for Rust and Python passes;
//! - [`PassRegistry`]: descriptors with a factory each, in registration order;
//! - the three kinds of pass, with GE's contracts: [`FusionPass`] (`run` over the whole graph),
//!   [`PatternFusionPass`] (patterns, a condition, a replacement per match) and
//!   [`DecomposePass`] (one op type into a subgraph);
//! - [`run_passes`]: the executor. It runs the registered passes stage by stage, in
//!   registration order, a fresh instance per run, and returns [`PassStats`] per pass
//!   (matches tried, accepted, rewritten, time). A pass that fails leaves the graph as it was.
//!
//! No Python here: the `ge-py` crate implements the three traits for Python classes, so Rust
//! and Python passes go through one executor, in one order.

mod executor;
mod hooks;
mod registry;
pub mod testkit;

pub use executor::{
    run_decompose_pass, run_passes, run_pattern_pass, PassStats, RunOptions, RunReport,
};
pub use hooks::{
    Decision, DecomposePass, FusionPass, FusionReport, HookError, HookResult, PassContext,
    PassError, PatternFusionPass,
};
pub use registry::{PassDescriptor, PassFactory, PassInstance, PassKind, PassRegistry, PassStage};
