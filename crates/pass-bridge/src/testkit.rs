//! Small graphs for the examples, tests and benches of this crate (public so that they can
//! share it; not part of the stable API).

use es_core::pattern::Pattern;
use es_core::{es, DataType, Format, Graph, GraphBuilder, OutPort, Result, Shape, Tensor};

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

fn input(b: &mut GraphBuilder, index: i64) -> Result<OutPort> {
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
    let mut x = input(&mut b, 0)?;
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
    let x = input(&mut b, 0)?;
    let y = input(&mut b, 1)?;
    let a = es::add(&mut b, x, y)?;
    let r = es::relu(&mut b, a)?;
    b.set_output(r, 0)?;
    Pattern::new(b.build_and_reset()?)
}

/// The replacement `FusedAddRelu(a, b)` (registers the op first).
pub fn fused_add_relu_replacement() -> Result<Graph> {
    register_fused_add_relu()?;
    let mut b = GraphBuilder::new("fused");
    let x = input(&mut b, 0)?;
    let y = input(&mut b, 1)?;
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
