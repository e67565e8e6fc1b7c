//! Inference rules of the control-flow operators (If, Case, While).

use super::common::{check_one_element, outputs_are_inputs};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::TensorDesc;

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "If" | "Case" => branch_op,
        "While" => while_op,
        _ => return None,
    })
}

/// If / Case: the outputs come from the branches, which the rule does not see.
fn branch_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    if ctx.proto.input("branch_index").is_some() {
        check_one_element(ctx, "branch_index", ctx.input("branch_index")?)?;
    }
    Ok(vec![TensorDesc::default(); ctx.num_outputs()])
}

/// While: the loop variables keep their descriptions.
fn while_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    outputs_are_inputs(ctx, |i, o| {
        format!("a While node has one output per input: {i} inputs, {o} outputs")
    })
}
