//! Inference rules of the reductions, arg-reductions and cumulative operators.

use super::common::{
    attr_dtype, check_one_element, const_scalar, dtype_like, norm_axes, opt_bool, opt_ints,
    output_allows, single, vector_len,
};
use super::{InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "ReduceSum" | "ReduceSumD" => reduce_sum,
        // `axes` input (ReduceSum's rule reads the input or the attribute, whichever exists).
        "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceLogSumExp"
        | "ReduceAll" | "ReduceAny" => reduce_sum,
        "ReduceMeanD" | "ReduceMaxD" | "ReduceMinD" | "ReduceProdD" => reduce_d,
        "ArgMaxV2" | "ArgMin" | "ArgMaxD" => arg_reduce,
        "Cumsum" | "CumsumD" | "Cumprod" => cumulative,
        _ => return None,
    })
}

/// ReduceSum (constant `axes` input) / ReduceSumD (`axes` attribute).
fn reduce_sum(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let keep = opt_bool(ctx, "keep_dims", false)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let by_input = ctx.proto.input("axes").is_some();
    let (axes, axes_len): (Option<Vec<i64>>, Option<i64>) = if by_input {
        let l = match ctx.input("axes")? {
            Some(d) if d.shape.is_scalar() => Some(1),
            d => vector_len(ctx, "axes", d)?,
        };
        (ctx.const_ints("axes")?, l)
    } else {
        let a = opt_ints(ctx, "axes", &[])?.to_vec();
        let l = a.len() as i64;
        (Some(a), Some(l))
    };
    // Empty axes: ReduceSum's noop_with_empty_axes (default true: identity, as TensorFlow's Sum);
    // ReduceSumD reduces every dim.
    let empty_is_noop = if by_input {
        opt_bool(ctx, "noop_with_empty_axes", true)?
    } else {
        false
    };
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let dims = &x.shape.0;
    let axes = match axes {
        Some(a) => a,
        None if axes_len == Some(0) => Vec::new(),
        None => {
            let out = if keep {
                Shape::from(
                    dims.iter()
                        .map(|&d| if d == 1 { 1 } else { UNKNOWN_DIM })
                        .collect::<Vec<i64>>(),
                )
            } else if r == 0 {
                Shape::scalar()
            } else {
                Shape::unknown_rank()
            };
            return Ok(single(dt, out));
        }
    };
    let pos: Vec<usize> = if axes.is_empty() {
        if empty_is_noop {
            return Ok(single(dt, x.shape.clone()));
        }
        (0..r).collect()
    } else {
        let what = if by_input {
            "input 'axes' value"
        } else {
            "attribute 'axes' value"
        };
        norm_axes(ctx, &axes, r, what, true)?
    };
    let out: Vec<i64> = if keep {
        dims.iter()
            .enumerate()
            .map(|(i, &d)| if pos.contains(&i) { 1 } else { d })
            .collect()
    } else {
        dims.iter()
            .enumerate()
            .filter(|(i, _)| !pos.contains(i))
            .map(|(_, &d)| d)
            .collect()
    };
    Ok(single(dt, Shape::from(out)))
}

/// Reduce*D: `axes` attribute; empty axes reduce every dim unless `noop_with_empty_axes` is
/// set, which keeps x (ReduceSum's rule covers the rest).
fn reduce_d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let empty = ctx
        .attrs
        .get("axes")
        .and_then(AttrValue::as_list_int)
        .is_some_and(<[i64]>::is_empty);
    if empty && opt_bool(ctx, "noop_with_empty_axes", false)? {
        let x = ctx.req("x")?;
        return Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()));
    }
    match super::builtin_rule("ReduceSumD") {
        Some(f) => f(ctx),
        None => Err(ctx.err("the ReduceSumD rule is missing")),
    }
}

/// ArgMaxV2 / ArgMin (axis in the `dimension` input) and ArgMaxD (`dimension` attribute):
/// x without the reduced axis; dtype from the `dtype` attribute (int32 or int64), or the one
/// dtype the output allows.
fn arg_reduce(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let by_input = ctx.proto.input("dimension").is_some();
    let (axis, what) = if by_input {
        check_one_element(ctx, "dimension", ctx.input("dimension")?)?;
        (const_scalar(ctx, "dimension")?, "input 'dimension'")
    } else {
        (Some(ctx.attr_int("dimension")?), "attribute 'dimension'")
    };
    let fixed = ctx.output_dtype(0);
    let t = if fixed != DataType::UNDEFINED {
        fixed
    } else {
        let t = attr_dtype(ctx, "dtype", Some(DataType::INT64))?;
        if !matches!(t, DataType::INT32 | DataType::INT64) || !output_allows(ctx, 0, t) {
            return Err(ctx.err(format!(
                "attribute 'dtype' must be DT_INT32 or DT_INT64, got {t}"
            )));
        }
        t
    };
    let shape = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(0) => {
            return Err(ctx.err(format!(
                "x must have rank >= 1 to reduce along {what}, got shape {}",
                x.shape
            )))
        }
        Some(r) => match axis {
            Some(a) => {
                let a = ctx.axis(a, r, what)?;
                let mut d = x.shape.0.clone();
                d.remove(a);
                Shape(d)
            }
            None => Shape::unknown_dims(r - 1),
        },
    };
    Ok(single(t, shape))
}

/// Cumsum / Cumprod (`axis` input) and CumsumD (`axis` attribute): x's shape; a known axis must
/// be inside x's rank.
fn cumulative(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (axis, what) = if ctx.proto.input("axis").is_some() {
        check_one_element(ctx, "axis", ctx.input("axis")?)?;
        (const_scalar(ctx, "axis")?, "input 'axis'")
    } else {
        (Some(ctx.attr_int("axis")?), "attribute 'axis'")
    };
    if let (Some(a), Some(r)) = (axis, x.shape.rank()) {
        ctx.axis(a, r, what)?;
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}
