//! Inference rules of the HCCL collectives (HcomAllReduce, HcomAllGather, HcomReduceScatter,
//! HcomBroadcast): all-gather multiplies dim 0 by rank_size, reduce-scatter divides it.

use super::common::{dtype_like, one_per_input, opt_int, same_as_x, single};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "HcomAllReduce" => all_reduce,
        "HcomAllGather" | "HcomReduceScatter" => gather_scatter,
        "HcomBroadcast" => broadcast_collective,
        _ => return None,
    })
}

/// The reductions the collectives take (HCCL's names).
pub const REDUCTIONS: &[&str] = &["sum", "prod", "max", "min"];

/// The `reduction` attribute of a collective, checked.
fn check_reduction(ctx: &InferCtx) -> Result<()> {
    let r = ctx.attr_str("reduction")?;
    if !REDUCTIONS.contains(&r) {
        return Err(ctx.err(format!(
            "attribute 'reduction' is {r:?}; expected one of {}",
            REDUCTIONS.join(", ")
        )));
    }
    Ok(())
}

/// HcomAllReduce: y like x.
fn all_reduce(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    check_reduction(ctx)?;
    ctx.attr_str("group")?;
    same_as_x(ctx)
}

/// HcomAllGather (dim 0 times rank_size) and HcomReduceScatter (dim 0 divided by rank_size,
/// which must divide it).
fn gather_scatter(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let gather = ctx.proto.name == "HcomAllGather";
    if !gather {
        check_reduction(ctx)?;
    }
    ctx.attr_str("group")?;
    let n = ctx.attr_int("rank_size")?;
    if n < 1 {
        return Err(ctx.err(format!(
            "attribute 'rank_size' is {n}; it must be at least 1"
        )));
    }
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r == 0 {
        return Err(ctx.err(format!("input 'x' {} must have at least one dim", x.shape)));
    }
    let mut dims = x.shape.0.to_vec();
    let d0 = dims[0];
    dims[0] = if d0 == UNKNOWN_DIM {
        UNKNOWN_DIM
    } else if gather {
        d0.checked_mul(n)
            .ok_or_else(|| ctx.err(format!("dim 0 of x {} times {n} overflows", x.shape)))?
    } else if d0 % n != 0 {
        return Err(ctx.err(format!(
            "dim 0 of input 'x' {} is not divisible by attribute 'rank_size' {n}",
            x.shape
        )));
    } else {
        d0 / n
    };
    Ok(single(dt, Shape::from(dims)))
}

/// HcomBroadcast: each y like its x.
fn broadcast_collective(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.attr_str("group")?;
    let root = opt_int(ctx, "root_rank", 0)?;
    if root < 0 {
        return Err(ctx.err(format!("attribute 'root_rank' is {root}; it must be >= 0")));
    }
    let xs = ctx.inputs_of("x")?;
    one_per_input(
        ctx,
        &xs,
        |x| dtype_like(ctx, 0, Some(x)),
        |i, o| format!("{i} inputs 'x' but {o} outputs 'y'"),
    )
}
