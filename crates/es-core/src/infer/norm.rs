//! Inference rules of the normalizations (BatchNorm, LayerNorm, InstanceNorm, GroupNorm, LRN,
//! RmsNorm, AddRmsNorm) and Softmax/LogSoftmax.
//!
//! RmsNorm and AddRmsNorm follow CANN ops-nn `rms_norm_infershape.cpp` and
//! `add_rms_norm_infershape.cpp`.

use super::common::{
    channel_format, check_min_rank, check_param_shape, check_rank, dims_agree, dtype_like, layout,
    merge_dim, opt_bool, opt_int, opt_ints, opt_str, out_name, output_allows, single, vector_len,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "BatchNorm" => batch_norm,
        "SoftmaxV2" | "LogSoftmaxV2" => softmax,
        "LayerNorm" => layer_norm,
        "InstanceNorm" => instance_norm,
        "GroupNorm" => group_norm,
        "LRN" => lrn,
        "RmsNorm" | "AddRmsNorm" => rms_norm,
        _ => return None,
    })
}

/// The outputs of a normalisation: "y" like x, every other output (the statistics) of shape
/// `stat`, all of x's dtype unless bound otherwise.
fn y_and_stats(ctx: &InferCtx, x: &TensorDesc, stat: Shape) -> Vec<TensorDesc> {
    ctx.output_ir
        .iter()
        .map(|&ir| {
            let shape = if out_name(ctx, ir) == "y" {
                x.shape.clone()
            } else {
                stat.clone()
            };
            TensorDesc::new(dtype_like(ctx, ir as usize, Some(x)), shape)
        })
        .collect()
}

/// BatchNorm: y like x; per-channel statistics [C]; reserve_space_3 [1].
fn batch_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (fmt, channel_last) = channel_format(ctx)?;
    let mut c = match x.shape.rank() {
        None => UNKNOWN_DIM,
        Some(r) if r == 4 || r == 5 => {
            if channel_last {
                x.shape.0[r - 1]
            } else {
                x.shape.0[1]
            }
        }
        Some(r) => {
            return Err(ctx.err(format!(
                "x must be 4-D or 5-D, got rank {r} shape {}",
                x.shape
            )))
        }
    };
    let c_from_x = c;
    for name in ["scale", "offset", "mean", "variance"] {
        if ctx.proto.input(name).is_none() {
            continue;
        }
        let d = ctx.input(name)?;
        if let Some(len) = vector_len(ctx, name, d)? {
            c = merge_dim(c, len).ok_or_else(|| {
                ctx.err(format!(
                    "input '{name}' has {len} values, but x {} has {} channels ({fmt})",
                    x.shape,
                    if c_from_x >= 0 { c_from_x } else { c }
                ))
            })?;
        }
    }
    let stat_like = ctx.input("scale")?;
    let mut out = Vec::with_capacity(ctx.num_outputs());
    for &ir in ctx.output_ir {
        let name = out_name(ctx, ir);
        let ir = ir as usize;
        let d = match name {
            "y" => TensorDesc::new(dtype_like(ctx, ir, Some(x)), x.shape.clone()),
            "reserve_space_3" => {
                TensorDesc::new(dtype_like(ctx, ir, stat_like), Shape::from(vec![1]))
            }
            _ => TensorDesc::new(dtype_like(ctx, ir, stat_like), Shape::from(vec![c])),
        };
        out.push(d);
    }
    Ok(out)
}

/// SoftmaxV2 / LogSoftmaxV2: the input's shape; `axes` must lie in its rank.
fn softmax(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xname = ctx.input_name(0, "x");
    let x = ctx.req(xname)?;
    let axes = opt_ints(ctx, "axes", &[-1])?;
    if let Some(r) = x.shape.rank() {
        let mut seen = Vec::new();
        for &a in axes {
            let n = if r == 0 && (a == 0 || a == -1) {
                0
            } else {
                ctx.axis(a, r, "attribute 'axes' value")?
            };
            if seen.contains(&n) {
                return Err(ctx.err(format!("attribute 'axes' {axes:?} repeats axis {a}")));
            }
            seen.push(n);
        }
    }
    let mut dt = dtype_like(ctx, 0, Some(x));
    if opt_bool(ctx, "half_to_float", false)?
        && x.dtype == DataType::FLOAT16
        && output_allows(ctx, 0, DataType::FLOAT)
    {
        dt = DataType::FLOAT;
    }
    Ok(single(dt, x.shape.clone()))
}

/// LayerNorm: y like x; mean and variance keep the dims before begin_norm_axis, the rest are 1.
fn layer_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let bna = opt_int(ctx, "begin_norm_axis", 0)?;
    let bpa = opt_int(ctx, "begin_params_axis", 0)?;
    let stat = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => {
            let n = ctx.axis(bna, r, "attribute 'begin_norm_axis'")?;
            let p = ctx.axis(bpa, r, "attribute 'begin_params_axis'")?;
            let want = &x.shape.0[p..];
            let why = format!("the dims of x {} from begin_params_axis {bpa}", x.shape);
            check_param_shape(ctx, "gamma", want, &why)?;
            check_param_shape(ctx, "beta", want, &why)?;
            let mut s = x.shape.0[..n].to_vec();
            s.resize(r, 1);
            Shape::from(s)
        }
    };
    Ok(y_and_stats(ctx, x, stat))
}

/// The channel count of a parameter input (its element count), checked against `c`.
fn check_channel_param(ctx: &InferCtx, name: &str, c: i64, x: &Shape) -> Result<()> {
    let Some(d) = ctx.input(name)? else {
        return Ok(());
    };
    if let Some(n) = d.shape.num_elements() {
        if c >= 0 && n != c {
            return Err(ctx.err(format!(
                "input '{name}' {} has {n} elements, but x {x} has {c} channels",
                d.shape
            )));
        }
    }
    Ok(())
}

/// InstanceNorm: y like x; mean and variance keep N and C, the spatial dims become 1.
fn instance_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let fmt = opt_str(ctx, "data_format", "NDHWC")?;
    let l = layout(ctx, "data_format", fmt, &["NCHW", "NHWC", "NCDHW", "NDHWC"])?;
    let stat = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) if r == 4 || r == 5 => {
            let c = if l.channel_last { r - 1 } else { 1 };
            check_channel_param(ctx, "gamma", x.shape.0[c], &x.shape)?;
            check_channel_param(ctx, "beta", x.shape.0[c], &x.shape)?;
            Shape::from(
                (0..r)
                    .map(|i| if i == 0 || i == c { x.shape.0[i] } else { 1 })
                    .collect::<Vec<i64>>(),
            )
        }
        Some(r) => {
            return Err(ctx.err(format!(
                "input 'x' must be 4-D or 5-D, got rank {r} shape {}",
                x.shape
            )))
        }
    };
    let gamma = ctx.input("gamma")?;
    Ok(ctx
        .output_ir
        .iter()
        .map(|&ir| {
            if out_name(ctx, ir) == "y" {
                TensorDesc::new(dtype_like(ctx, ir as usize, Some(x)), x.shape.clone())
            } else {
                TensorDesc::new(
                    dtype_like(ctx, ir as usize, gamma.or(Some(x))),
                    stat.clone(),
                )
            }
        })
        .collect())
}

/// GroupNorm: y like x; mean and variance are [N, num_groups].
fn group_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let groups = ctx.attr_int("num_groups")?;
    if groups < 1 {
        return Err(ctx.err(format!("attribute 'num_groups' must be >= 1, got {groups}")));
    }
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    let channel_last = match fmt {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" | "ND" => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'data_format' must be \"NCHW\", \"NHWC\", \"NCDHW\", \"NDHWC\" or \"ND\", got {other:?}"
            )))
        }
    };
    check_min_rank(ctx, "x", &x.shape, 2)?;
    let (n, c) = match x.shape.rank() {
        None => (UNKNOWN_DIM, UNKNOWN_DIM),
        Some(r) => (
            x.shape.0[0],
            x.shape.0[if channel_last { r - 1 } else { 1 }],
        ),
    };
    if c >= 0 && c % groups != 0 {
        return Err(ctx.err(format!(
            "x {} has {c} channels ({fmt}), which num_groups {groups} does not divide",
            x.shape
        )));
    }
    check_channel_param(ctx, "gamma", c, &x.shape)?;
    check_channel_param(ctx, "beta", c, &x.shape)?;
    Ok(y_and_stats(ctx, x, Shape::from(vec![n, groups])))
}

/// LRN: a 4-D x, unchanged shape.
fn lrn(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_rank(ctx, "x", &x.shape, 4)?;
    let r = opt_int(ctx, "depth_radius", 5)?;
    if r < 0 {
        return Err(ctx.err(format!("attribute 'depth_radius' must be >= 0, got {r}")));
    }
    let region = opt_str(ctx, "norm_region", "ACROSS_CHANNELS")?;
    if !matches!(region, "ACROSS_CHANNELS" | "WITHIN_CHANNEL") {
        return Err(ctx.err(format!(
            "attribute 'norm_region' must be \"ACROSS_CHANNELS\" or \"WITHIN_CHANNEL\", got {region:?}"
        )));
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

/// x1 and x2 of AddRmsNorm: the same shape (dims merged), no broadcasting.
fn merged(ctx: &InferCtx, a: &TensorDesc, b: &TensorDesc) -> Result<Shape> {
    match (a.shape.rank(), b.shape.rank()) {
        (None, _) => Ok(b.shape.clone()),
        (_, None) => Ok(a.shape.clone()),
        (Some(ra), Some(rb)) => {
            let dims: Option<Vec<i64>> = (ra == rb)
                .then(|| {
                    a.shape
                        .0
                        .iter()
                        .zip(b.shape.0.iter())
                        .map(|(&p, &q)| merge_dim(p, q))
                        .collect()
                })
                .flatten();
            dims.map(Shape::from).ok_or_else(|| {
                ctx.err(format!(
                    "inputs 'x1' {} and 'x2' {} must have the same shape",
                    a.shape, b.shape
                ))
            })
        }
    }
}

/// RmsNorm (x, gamma) -> (y like x, rstd float32) and AddRmsNorm (x1, x2, gamma) -> (y, rstd,
/// x = x1 + x2). gamma covers the trailing dims of x; rstd keeps the leading dims and has 1 for
/// the dims gamma covers.
fn rms_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let add = ctx.proto.name == "AddRmsNorm";
    let (x, x_shape) = if add {
        let (x1, x2) = (ctx.req("x1")?, ctx.req("x2")?);
        (x1, merged(ctx, x1, x2)?)
    } else {
        let x = ctx.req("x")?;
        (x, x.shape.clone())
    };
    let gamma = ctx.req("gamma")?;
    let rstd = match (x_shape.rank(), gamma.shape.rank()) {
        (Some(r), Some(g)) => {
            let x_name = if add { "x1 + x2" } else { "x" };
            if g > r {
                return Err(ctx.err(format!(
                    "input 'gamma' {} has more dims than {x_name} {x_shape}",
                    gamma.shape
                )));
            }
            let lead = r - g;
            if !dims_agree(&x_shape.0[lead..], &gamma.shape.0) {
                return Err(ctx.err(format!(
                    "input 'gamma' {} must match the trailing dims of {x_name} {x_shape}",
                    gamma.shape
                )));
            }
            let mut s = x_shape.0[..lead].to_vec();
            s.resize(r, 1);
            Shape::from(s)
        }
        _ => Shape::unknown_rank(),
    };
    let dt = dtype_like(ctx, 0, Some(x));
    let mut out = vec![
        TensorDesc::new(dt, x_shape.clone()),
        TensorDesc::new(DataType::FLOAT, rstd),
    ];
    if add {
        out.push(TensorDesc::new(dt, x_shape));
    }
    Ok(out)
}
