//! Small graphs and one pattern pass for the examples, tests and benches of this crate (public so
//! that they can share them; not part of the stable API).

use crate::hooks::{HookResult, PassContext, PassError, PatternFusionPass};
use crate::registry::{PassDescriptor, PassInstance, PassKind, PassRegistry, PassStage};
use es_core::pattern::{MatchResult, Pattern};
use es_core::{es, DataType, Format, Graph, GraphBuilder, OutPort, Result, Shape, Tensor};
use std::sync::Arc;

/// The REG_OP text of `FusedAddRelu(x1, x2) -> y`, the fused op of the examples.
pub const FUSED_ADD_RELU_REGOP: &str = r#"
REG_OP(FusedAddRelu)
    .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16}))
    .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(FusedAddRelu)
"#;

/// Registers `FusedAddRelu` in the global operator registry (idempotent).
pub fn register_fused_add_relu() -> Result<()> {
    if es_core::ops::global_registry()
        .get("FusedAddRelu")
        .is_some()
    {
        return Ok(());
    }
    es_core::ops::register_global(es_core::regop::parse_regop(FUSED_ADD_RELU_REGOP)?)
}

/// A float `[16]` Data input number `index` of `b` (the input of every graph here).
pub fn float_input(b: &mut GraphBuilder, index: i64) -> Result<OutPort> {
    b.create_input(
        index,
        None,
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::new(vec![16]),
    )
}

/// `x -> (Add c -> Relu) * n -> y`: a chain of `n` Add→Relu blocks.
pub fn add_relu_chain(n: usize) -> Result<Graph> {
    let mut b = GraphBuilder::new("chain");
    let mut x = float_input(&mut b, 0)?;
    let c = b.create_const(Tensor::scalar(1.0f32), None)?;
    for _ in 0..n {
        let a = es::add(&mut b, x, c)?;
        x = es::relu(&mut b, a)?;
    }
    b.set_output(x, 0)?;
    b.build_and_reset()
}

/// The pattern `Relu(Add(a, b))`.
pub fn add_relu_pattern() -> Result<Pattern> {
    let mut b = GraphBuilder::new("add_relu");
    let x = float_input(&mut b, 0)?;
    let y = float_input(&mut b, 1)?;
    let a = es::add(&mut b, x, y)?;
    let r = es::relu(&mut b, a)?;
    b.set_output(r, 0)?;
    Pattern::new(b.build_and_reset()?)
}

/// The replacement `FusedAddRelu(a, b)` (registers the op first).
pub fn fused_add_relu_replacement() -> Result<Graph> {
    register_fused_add_relu()?;
    let mut b = GraphBuilder::new("fused");
    let x = float_input(&mut b, 0)?;
    let y = float_input(&mut b, 1)?;
    let f = b.add_op(
        "FusedAddRelu",
        es_core::OpArgs {
            inputs: vec![vec![Some(x)], vec![Some(y)]],
            ..Default::default()
        },
    )?;
    b.set_output(OutPort { node: f, index: 0 }, 0)?;
    b.build_and_reset()
}

/// A pattern pass that replaces every match of `pattern` by a copy of `replacement`, for up to
/// `max_rounds` rounds: the pass of this crate's example, bench and tests.
#[derive(Debug, Clone)]
pub struct ReplaceMatches {
    pub pattern: Pattern,
    pub replacement: Graph,
    pub max_rounds: usize,
}

impl ReplaceMatches {
    /// `Relu(Add(a, b))` becomes `FusedAddRelu(a, b)`, in one round.
    pub fn fuse_add_relu() -> Result<Self> {
        Ok(ReplaceMatches {
            pattern: add_relu_pattern()?,
            replacement: fused_add_relu_replacement()?,
            max_rounds: 1,
        })
    }
}

impl PatternFusionPass for ReplaceMatches {
    fn patterns(&mut self, _ctx: &mut PassContext) -> HookResult<Vec<Pattern>> {
        Ok(vec![self.pattern.clone()])
    }
    fn max_rounds(&self) -> usize {
        self.max_rounds
    }
    fn replacement(
        &mut self,
        _graph: &mut Graph,
        _pattern: usize,
        _m: &MatchResult,
        _ctx: &mut PassContext,
    ) -> HookResult<Graph> {
        Ok(self.replacement.clone())
    }
}

/// A registry with one pass, `pass` under the name `name` (descriptor key
/// `<module>:ReplaceMatches:<name>`, a pattern pass at `AfterInferShape`).
pub fn replace_matches_registry(
    name: &str,
    module: &str,
    pass: ReplaceMatches,
) -> std::result::Result<PassRegistry, PassError> {
    let mut registry = PassRegistry::new();
    registry.register(
        PassDescriptor::new(
            name,
            module,
            "ReplaceMatches",
            PassKind::PatternFusion,
            PassStage::AfterInferShape,
            vec![],
        ),
        Arc::new(move || Ok(PassInstance::Pattern(Box::new(pass.clone())))),
    )?;
    Ok(registry)
}
