//! Inference rules of the pooling operators.

use super::common::{
    check_len, check_min_at, check_min_rank, check_rank, data_layout, dim, dtype_like, in_layout,
    opt_bool, opt_int, opt_ints, opt_str, single, Layout,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::opmath::{same_out, window_out, SizeError};
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "MaxPool" | "AvgPool" => pool_padding,
        "MaxPoolV3" | "AvgPoolV2" => pool_v2,
        "GlobalAveragePool" => global_pool,
        "Pooling" => caffe_pooling,
        _ => return None,
    })
}

/// How a pooling output size is computed.
#[derive(Clone, Copy, PartialEq)]
enum PoolPad {
    Same,
    Valid,
    /// Explicit pads; ceil mode (PyTorch/Caffe rule: the last window must start inside the
    /// input or the leading pad).
    Calculated {
        ceil: bool,
    },
}

/// One pooled dim ([`window_out`]; SAME gives ceil(size / stride)).
fn pool_out(
    ctx: &InferCtx,
    what: &str,
    size: i64,
    (k, s): (i64, i64),
    (p0, p1): (i64, i64),
    mode: PoolPad,
) -> Result<i64> {
    let r = match mode {
        _ if size < 0 => return Ok(UNKNOWN_DIM),
        PoolPad::Same => return Ok(same_out(size, s)),
        PoolPad::Valid => window_out(size, k, s, 1, (0, 0), false),
        PoolPad::Calculated { ceil } => window_out(size, k, s, 1, (p0, p1), ceil),
    };
    r.map_err(|e| {
        ctx.err(match e {
            SizeError::Empty { .. } if mode == PoolPad::Valid => format!(
                "output {what} would be empty: input {size} is smaller than the window {k} (VALID padding)"
            ),
            SizeError::Empty { padded, .. } => format!(
                "output {what} would be empty: padded input {padded} ({size} + pads {p0} + {p1}) \
                 is smaller than the window {k}"
            ),
            SizeError::TooLarge(o) => format!("output {what} {o} is too large"),
            SizeError::NotPositive => {
                format!("output {what}: window {k} and stride {s} must be >= 1")
            }
        })
    })
}

/// The pooled H and W of `x`: window and stride per dim, pads [top, bottom, left, right].
fn pool_hw(
    ctx: &InferCtx,
    x: &Shape,
    l: Layout,
    win: [(i64, i64); 2],
    pads: &[i64],
    mode: PoolPad,
) -> Result<[i64; 2]> {
    let mut hw = [0i64; 2];
    for (i, name) in ["height", "width"].iter().enumerate() {
        let p = (pads[2 * i], pads[2 * i + 1]);
        hw[i] = pool_out(ctx, name, dim(x, l.sp(i)), win[i], p, mode)?;
    }
    Ok(hw)
}

/// The ksize/strides of a 2-D pooling op: H and W of 4-value lists in data_format order.
fn pool_window(ctx: &InferCtx, l: Layout, fmt: &str) -> Result<[(i64, i64); 2]> {
    let ksize = ctx.attr_ints("ksize")?;
    let strides = ctx.attr_ints("strides")?;
    check_len(ctx, "ksize", ksize, 4, &format!("{fmt} order"))?;
    check_len(ctx, "strides", strides, 4, &format!("{fmt} order"))?;
    let (h, w) = (l.sp(0), l.sp(1));
    for (name, v) in [("ksize", ksize), ("strides", strides)] {
        // GE pools over H and W only; the kernel refuses the rest with the same words.
        let nc = [v[0], v[l.c()]];
        if nc != [1, 1] {
            return Err(ctx.err(format!(
                "not supported: {} with {name} over N or C (N, C entries {nc:?})",
                ctx.proto.name
            )));
        }
    }
    check_min_at(ctx, "ksize", ksize, &[h, w], 1, "H and W")?;
    check_min_at(ctx, "strides", strides, &[h, w], 1, "H and W")?;
    Ok([(ksize[h], strides[h]), (ksize[w], strides[w])])
}

/// The output of a 2-D pooling: x with its H and W replaced, of dtype `dt`, in x's layout `xl`.
fn pooled(
    x: &TensorDesc,
    (l, xl): (Layout, Format),
    dt: DataType,
    hw: [i64; 2],
) -> Vec<TensorDesc> {
    let mut o = match x.shape.rank() {
        None => vec![UNKNOWN_DIM; 4],
        Some(_) => x.shape.0.to_vec(),
    };
    o[l.sp(0)] = hw[0];
    o[l.sp(1)] = hw[1];
    in_layout(dt, Shape::from(o), xl)
}

/// MaxPool / AvgPool: `padding` "SAME" or "VALID".
fn pool_padding(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, fmt) = data_layout(ctx, x, "NHWC", super::layout::DATA_2D)?;
    let win = pool_window(ctx, l, fmt)?;
    let padding = ctx.attr_str("padding")?;
    let mode = match padding {
        "SAME" => PoolPad::Same,
        "VALID" => PoolPad::Valid,
        other => {
            return Err(ctx.err(format!(
                "attribute 'padding' must be \"SAME\" or \"VALID\", got {other:?}"
            )))
        }
    };
    check_rank(ctx, "x", &x.shape, 4)?;
    let hw = pool_hw(ctx, &x.shape, l, win, &[0; 4], mode)?;
    Ok(pooled(x, (l, xl), dtype_like(ctx, 0, Some(x)), hw))
}

/// MaxPoolV3 / AvgPoolV2: `padding_mode` CALCULATED (explicit pads), SAME or VALID; ceil_mode;
/// global_pooling.
fn pool_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, fmt) = data_layout(ctx, x, "NCHW", super::layout::DATA_2D)?;
    let win = pool_window(ctx, l, fmt)?;
    let pads = opt_ints(ctx, "pads", &[0, 0, 0, 0])?;
    check_len(ctx, "pads", pads, 4, "top, bottom, left, right")?;
    let ceil = opt_bool(ctx, "ceil_mode", false)?;
    let global = opt_bool(ctx, "global_pooling", false)?;
    let pm = opt_str(ctx, "padding_mode", "CALCULATED")?;
    let mode = match pm {
        "SAME" => PoolPad::Same,
        "VALID" => PoolPad::Valid,
        "CALCULATED" => {
            if let Some(p) = pads.iter().find(|&&p| p < 0) {
                return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
            }
            PoolPad::Calculated { ceil }
        }
        other => {
            return Err(ctx.err(format!(
            "attribute 'padding_mode' must be \"CALCULATED\", \"SAME\" or \"VALID\", got {other:?}"
        )))
        }
    };
    if ctx.proto.attr("divisor_override").is_some() {
        let d = opt_int(ctx, "divisor_override", 0)?;
        if d < 0 {
            return Err(ctx.err(format!(
                "attribute 'divisor_override' must be >= 0, got {d}"
            )));
        }
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    let hw = if global {
        [1, 1]
    } else {
        pool_hw(ctx, &x.shape, l, win, pads, mode)?
    };
    Ok(pooled(x, (l, xl), dtype_like(ctx, 0, Some(x)), hw))
}

/// GlobalAveragePool: N and C kept, every other dim 1.
fn global_pool(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_min_rank(ctx, "x", &x.shape, 3)?;
    let out = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => Shape::from(
            (0..r)
                .map(|i| if i < 2 { x.shape.0[i] } else { 1 })
                .collect::<Vec<i64>>(),
        ),
    };
    Ok(single(dtype_like(ctx, 0, Some(x)), out))
}

/// Pooling (Caffe): window/stride [h, w], pad [top, bottom, left, right], ceil_mode 0 (ceil)
/// or 1 (floor); an int8 x gives an int32 y.
fn caffe_pooling(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, _) = data_layout(ctx, x, "NCHW", super::layout::DATA_2D)?;
    let window = opt_ints(ctx, "window", &[1, 1])?;
    let stride = opt_ints(ctx, "stride", &[1, 1])?;
    let pad = opt_ints(ctx, "pad", &[0, 0, 0, 0])?;
    check_len(ctx, "window", window, 2, "h, w")?;
    check_len(ctx, "stride", stride, 2, "h, w")?;
    check_len(ctx, "pad", pad, 4, "top, bottom, left, right")?;
    check_min_at(ctx, "window", window, &[0, 1], 1, "all")?;
    check_min_at(ctx, "stride", stride, &[0, 1], 1, "all")?;
    check_min_at(ctx, "pad", pad, &[0, 1, 2, 3], 0, "all")?;
    let ceil = match opt_int(ctx, "ceil_mode", 0)? {
        0 => true,
        1 => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'ceil_mode' must be 0 (ceil) or 1 (floor), got {other}"
            )))
        }
    };
    check_rank(ctx, "x", &x.shape, 4)?;
    let hw = if opt_bool(ctx, "global_pooling", false)? {
        [1, 1]
    } else {
        let win = [(window[0], stride[0]), (window[1], stride[1])];
        pool_hw(ctx, &x.shape, l, win, pad, PoolPad::Calculated { ceil })?
    };
    let dt = if x.dtype == DataType::INT8 {
        DataType::INT32
    } else {
        dtype_like(ctx, 0, Some(x))
    };
    Ok(pooled(x, (l, xl), dt, hw))
}
