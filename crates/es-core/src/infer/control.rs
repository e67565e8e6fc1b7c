//! Inference rules of the control-flow operators (If, Case, While).

use super::common::{check_one_element, outputs_are_inputs};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "If" | "Case" => branch_op,
        "While" => while_op,
        _ => return None,
    })
}

/// If / Case: each output is the merge of the branches' descriptions of it, as GE's
/// `UpdateParentNodeForBranch` does: the dtypes must agree, a differing rank gives an unknown
/// rank, a differing dim an unknown dim. A branch without that output (or a node built without
/// its branches) adds nothing; with no branch giving it, the output is blank.
fn branch_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    if ctx.proto.input("branch_index").is_some() {
        check_one_element(ctx, "branch_index", ctx.input("branch_index")?)?;
    }
    (0..ctx.num_outputs())
        .map(|i| merge_branch_outputs(ctx, i))
        .collect()
}

/// Output `i` of an If/Case from its branches (see [`branch_op`]). A blank (UNDEFINED) dtype is
/// a description not inferred: it agrees with any dtype, and its unknown rank merges as such.
fn merge_branch_outputs(ctx: &InferCtx, i: usize) -> Result<TensorDesc> {
    let mut descs = ctx
        .subgraph_outputs
        .iter()
        .filter_map(|b| b.get(i).copied());
    let Some(first) = descs.next() else {
        return Ok(TensorDesc::default());
    };
    if first.dtype == DataType::VARIANT {
        // Lists and optionals: what the branches say they hold, merged.
        let all = ctx
            .subgraph_outputs
            .iter()
            .filter_map(|b| b.get(i).copied());
        if all.clone().all(|d| d.dtype == DataType::VARIANT) {
            return Ok(super::sequence::merge_variants(all));
        }
    }
    let (mut dtype, mut shape, mut format) = (first.dtype, first.shape.clone(), first.format);
    for (k, d) in descs.enumerate() {
        if dtype == DataType::UNDEFINED {
            dtype = d.dtype;
        } else if d.dtype != DataType::UNDEFINED && d.dtype != dtype {
            return Err(ctx.err(format!(
                "output {i}: the branches give different dtypes ({} and {} in branch {}); \
                 the branches of an {} must agree on each output's dtype",
                dtype.name(),
                d.dtype.name(),
                k + 1,
                ctx.proto.name
            )));
        }
        shape = match (shape.rank(), d.shape.rank()) {
            (Some(a), Some(b)) if a == b => Shape::from(
                shape
                    .0
                    .iter()
                    .zip(d.shape.0.iter())
                    .map(|(&x, &y)| if x == y { x } else { UNKNOWN_DIM })
                    .collect::<Vec<i64>>(),
            ),
            _ => Shape::unknown_rank(),
        };
        if d.format != format {
            format = Format::ND;
        }
    }
    Ok(TensorDesc::new(dtype, shape).with_format(format))
}

/// While: the loop variables keep their descriptions.
fn while_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    outputs_are_inputs(ctx, |i, o| {
        format!("a While node has one output per input: {i} inputs, {o} outputs")
    })
}
