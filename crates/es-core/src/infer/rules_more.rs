//! Inference rules of the operators added for the ONNX importer's `missing` family: grid
//! sampling, non-max suppression, bit casts and shifts, ROI align, unique, deformable
//! convolution and the matrix determinant.
//!
//! The conventions are those of `rules.rs`: unknown dims (-1) and ranks (`[-2]`) propagate
//! without errors; data-dependent sizes are -1; errors name the input or attribute and show
//! expected and actual values. Small helpers that `rules.rs` keeps private are copied below.

use super::rules::{
    attr_dtype, check_rank, dtype_like, merge_dim, opt_bool, opt_int, opt_ints, opt_str,
    output_allows, single,
};
use super::{broadcast, InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this module, if it has one.
pub fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "GridSampler2D" => grid_sampler_2d,
        "RandomUniform" => random_uniform,
        "GridSampler3D" => grid_sampler_3d,
        "NonMaxSuppressionV6" => nms_v6,
        "Bitcast" => bitcast,
        "LeftShift" | "RightShift" => shift,
        "ROIAlign" => roi_align,
        "UniqueWithCountsAndSorting" => unique_sorting,
        "DeformableConv2D" => deformable_conv2d,
        "MatrixDeterminant" => matrix_determinant,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The dim `i` of a shape, unknown for an unknown rank.
fn dim(s: &Shape, i: usize) -> i64 {
    if s.is_unknown_rank() {
        UNKNOWN_DIM
    } else {
        s.0.get(i).copied().unwrap_or(UNKNOWN_DIM)
    }
}

/// Merges dim `ia` of `a` with dim `ib` of `b`; an error names both inputs.
fn merge_named(
    ctx: &InferCtx,
    (na, a, ia): (&str, &Shape, usize),
    (nb, b, ib): (&str, &Shape, usize),
) -> Result<i64> {
    let (x, y) = (dim(a, ia), dim(b, ib));
    merge_dim(x, y).ok_or_else(|| {
        ctx.err(format!(
            "dim {ia} of input '{na}' {a} ({x}) must equal dim {ib} of input '{nb}' {b} ({y})"
        ))
    })
}

/// Checks that a known dim equals `want`.
fn check_dim(ctx: &InferCtx, name: &str, s: &Shape, i: usize, want: i64, what: &str) -> Result<()> {
    let d = dim(s, i);
    if d != UNKNOWN_DIM && d != want {
        return Err(ctx.err(format!(
            "input '{name}' {s}: dim {i} ({what}) must be {want}, got {d}"
        )));
    }
    Ok(())
}

/// Element width in bits (sub-byte INT4 included), None for types without a fixed width.
fn bits(t: DataType) -> Option<i64> {
    match t {
        DataType::INT4 => Some(4),
        _ => t.size().map(|s| s as i64 * 8),
    }
}

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

/// GridSampler2D: x [N, C, H, W], grid [N, H_out, W_out, 2] -> [N, C, H_out, W_out].
fn grid_sampler_2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let grid = ctx.req("grid")?;
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "grid", &grid.shape, 4)?;
    check_dim(ctx, "grid", &grid.shape, 3, 2, "the (x, y) coordinates")?;
    let n = merge_named(ctx, ("x", &x.shape, 0), ("grid", &grid.shape, 0))?;
    let shape = Shape::from_slice(&[
        n,
        dim(&x.shape, 1),
        dim(&grid.shape, 1),
        dim(&grid.shape, 2),
    ]);
    Ok(single(dtype_like(ctx, 0, Some(x)), shape))
}

/// GridSampler3D: x [N, C, D, H, W] (NCDHW) or [N, D, H, W, C] (NDHWC), grid
/// [N, D_out, H_out, W_out, 3] -> x's layout with D/H/W from grid.
fn grid_sampler_3d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let grid = ctx.req("grid")?;
    let fmt = opt_str(ctx, "data_format", "NCDHW")?;
    let c_last = match fmt {
        "NCDHW" => false,
        "NDHWC" => true,
        other => {
            return Err(ctx.err(format!(
                "attribute 'data_format' must be \"NCDHW\" or \"NDHWC\", got {other:?}"
            )))
        }
    };
    check_rank(ctx, "x", &x.shape, 5)?;
    check_rank(ctx, "grid", &grid.shape, 5)?;
    check_dim(ctx, "grid", &grid.shape, 4, 3, "the (x, y, z) coordinates")?;
    let n = merge_named(ctx, ("x", &x.shape, 0), ("grid", &grid.shape, 0))?;
    let (d, h, w) = (
        dim(&grid.shape, 1),
        dim(&grid.shape, 2),
        dim(&grid.shape, 3),
    );
    let dims = if c_last {
        [n, d, h, w, dim(&x.shape, 4)]
    } else {
        [n, dim(&x.shape, 1), d, h, w]
    };
    Ok(single(
        dtype_like(ctx, 0, Some(x)),
        Shape::from_slice(&dims),
    ))
}

/// NonMaxSuppressionV6: boxes [B, S, 4], scores [B, K, S] -> selected_indices [-1, 3] int32.
fn nms_v6(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let boxes = ctx.req("boxes")?;
    let scores = ctx.req("scores")?;
    check_rank(ctx, "boxes", &boxes.shape, 3)?;
    check_rank(ctx, "scores", &scores.shape, 3)?;
    check_dim(ctx, "boxes", &boxes.shape, 2, 4, "the box coordinates")?;
    merge_named(
        ctx,
        ("boxes", &boxes.shape, 0),
        ("scores", &scores.shape, 0),
    )?;
    merge_named(
        ctx,
        ("boxes", &boxes.shape, 1),
        ("scores", &scores.shape, 2),
    )?;
    let cpb = opt_int(ctx, "center_point_box", 0)?;
    if cpb != 0 && cpb != 1 {
        return Err(ctx.err(format!(
            "attribute 'center_point_box' must be 0 or 1, got {cpb}"
        )));
    }
    for name in ["max_output_size", "iou_threshold", "score_threshold"] {
        if let Some(d) = ctx.input(name)? {
            if let Some(r) = d.shape.rank() {
                let n: i64 = d.shape.0.iter().product();
                if r > 1 || (r == 1 && n != 1 && !d.shape.0.contains(&UNKNOWN_DIM)) {
                    return Err(ctx.err(format!(
                        "input '{name}' must be a scalar (or a 1-element vector), got shape {}",
                        d.shape
                    )));
                }
            }
        }
    }
    Ok(single(
        DataType::INT32,
        Shape::from_slice(&[UNKNOWN_DIM, 3]),
    ))
}

/// Bitcast: with keep_dim the last dim is scaled by in_bits / out_bits (ONNX BitCast); without,
/// TensorFlow's rule: a wider input gets a trailing dim of in_bits / out_bits, a narrower one
/// loses its last dim, which must be out_bits / in_bits.
fn bitcast(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let to = attr_dtype(ctx, "type", None)?;
    if !output_allows(ctx, 0, to) {
        return Err(ctx.err(format!(
            "attribute 'type' is {to}, which output 'y' does not allow"
        )));
    }
    let keep_dim = opt_bool(ctx, "keep_dim", false)?;
    let (Some(bi), Some(bo)) = (bits(x.dtype), bits(to)) else {
        return Err(ctx.err(format!(
            "cannot bitcast {} to {to}: both need a fixed element width",
            x.dtype
        )));
    };
    if x.shape.is_unknown_rank() || bi == bo {
        return Ok(single(to, x.shape.clone()));
    }
    let mut dims = x.shape.0.clone();
    if keep_dim {
        let Some(last) = dims.last_mut() else {
            return Err(ctx.err(format!(
                "cannot bitcast a scalar {} to {to} with keep_dim: the sizes differ",
                x.dtype
            )));
        };
        if *last != UNKNOWN_DIM {
            let total = *last * bi;
            if total % bo != 0 {
                return Err(ctx.err(format!(
                    "input 'x' {}: last dim {} x {bi} bits is not a multiple of {to}'s {bo} bits",
                    x.shape, *last
                )));
            }
            *last = total / bo;
        }
    } else if bi > bo {
        if bi % bo != 0 {
            return Err(ctx.err(format!(
                "{} ({bi} bits) is not a multiple of {to} ({bo} bits)",
                x.dtype
            )));
        }
        dims.push(bi / bo);
    } else {
        if bo % bi != 0 {
            return Err(ctx.err(format!(
                "{to} ({bo} bits) is not a multiple of {} ({bi} bits)",
                x.dtype
            )));
        }
        let want = bo / bi;
        match dims.last().copied() {
            None => {
                let dt = x.dtype;
                return Err(ctx.err(format!(
                    "input 'x' is a scalar {dt}; bitcasting to the wider {to} needs a last dim of {want}"
                )));
            }
            Some(l) if l != UNKNOWN_DIM && l != want => {
                return Err(ctx.err(format!(
                    "input 'x' {}: the last dim must be {want} to bitcast {} to {to}, got {l}",
                    x.shape, x.dtype
                )))
            }
            _ => {
                dims.pop();
            }
        }
    }
    Ok(single(to, Shape(dims)))
}

/// LeftShift / RightShift: broadcast of x and y.
fn shift(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let y = ctx.req("y")?;
    let shape = broadcast(&x.shape, &y.shape).map_err(|e| ctx.err(e))?;
    Ok(single(dtype_like(ctx, 0, Some(x)), shape))
}

/// ROIAlign: features [N, C, H, W] (NHWC by format), rois [R, 5] -> [R, C, ph, pw] (NHWC:
/// [R, ph, pw, C]).
fn roi_align(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let f = ctx.req("features")?;
    let rois = ctx.req("rois")?;
    check_rank(ctx, "features", &f.shape, 4)?;
    check_rank(ctx, "rois", &rois.shape, 2)?;
    check_dim(
        ctx,
        "rois",
        &rois.shape,
        1,
        5,
        "(batch index, x0, y0, x1, y1)",
    )?;
    let ph = ctx.attr_int("pooled_height")?;
    let pw = ctx.attr_int("pooled_width")?;
    for (name, v) in [("pooled_height", ph), ("pooled_width", pw)] {
        if v < 1 {
            return Err(ctx.err(format!("attribute '{name}' must be >= 1, got {v}")));
        }
    }
    let sample_num = opt_int(ctx, "sample_num", 2)?;
    if sample_num < 0 {
        return Err(ctx.err(format!(
            "attribute 'sample_num' must be >= 0, got {sample_num}"
        )));
    }
    let mode = opt_str(ctx, "pool_mode", "avg")?;
    if mode != "avg" && mode != "max" {
        return Err(ctx.err(format!(
            "attribute 'pool_mode' must be \"avg\" or \"max\", got {mode:?}"
        )));
    }
    let r = dim(&rois.shape, 0);
    let dims = if f.format == Format::NHWC {
        [r, ph, pw, dim(&f.shape, 3)]
    } else {
        [r, dim(&f.shape, 1), ph, pw]
    };
    Ok(single(
        dtype_like(ctx, 0, Some(f)),
        Shape::from_slice(&dims),
    ))
}

/// UniqueWithCountsAndSorting: y [-1] (the unique count is data-dependent); indices has x's
/// shape when return_inverse, else [0]; counts [-1] when return_counts, else [0].
fn unique_sorting(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let idx = attr_dtype(ctx, "out_idx", Some(DataType::INT64))?;
    if idx != DataType::INT32 && idx != DataType::INT64 {
        return Err(ctx.err(format!(
            "attribute 'out_idx' must be DT_INT32 or DT_INT64, got {idx}"
        )));
    }
    let inverse = opt_bool(ctx, "return_inverse", false)?;
    let counts = opt_bool(ctx, "return_counts", false)?;
    let y_len = match x.shape.rank() {
        Some(0) => 1,
        Some(_) if x.shape.0.contains(&0) => 0,
        _ => UNKNOWN_DIM,
    };
    Ok(vec![
        TensorDesc::new(dtype_like(ctx, 0, Some(x)), Shape::from_slice(&[y_len])),
        TensorDesc::new(
            idx,
            if inverse {
                x.shape.clone()
            } else {
                Shape::from_slice(&[0])
            },
        ),
        TensorDesc::new(idx, Shape::from_slice(&[if counts { y_len } else { 0 }])),
    ])
}

/// DeformableConv2D: Conv2D's output sizes; offsets carry deformable_groups x kh x kw x
/// (3 when modulated, else 2) channels at the output's spatial size.
fn deformable_conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let offsets = ctx.req("offsets")?;
    let xl = super::layout::data_layout(
        Some(x),
        opt_str(ctx, "data_format", "NHWC")?,
        super::layout::DATA_2D,
    )
    .map_err(|e| ctx.err(e))?;
    let fmt = xl.name().trim_start_matches("FORMAT_");
    let (ci, hi, wi) = if super::layout::channel_last(xl) {
        (3, 1, 2)
    } else {
        (1, 2, 3)
    };
    let strides = ctx.attr_ints("strides")?;
    let pads = ctx.attr_ints("pads")?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1])?;
    for (name, v) in [
        ("strides", strides),
        ("pads", pads),
        ("dilations", dilations),
    ] {
        if v.len() != 4 {
            return Err(ctx.err(format!("attribute '{name}' must have 4 values, got {v:?}")));
        }
    }
    let (sh, sw, dh, dw) = (strides[hi], strides[wi], dilations[hi], dilations[wi]);
    if sh < 1 || sw < 1 || dh < 1 || dw < 1 {
        return Err(ctx.err(format!(
            "H/W strides {strides:?} and dilations {dilations:?} must be >= 1"
        )));
    }
    if let Some(p) = pads.iter().find(|&&p| p < 0) {
        return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
    }
    let groups = opt_int(ctx, "groups", 1)?;
    let dgroups = opt_int(ctx, "deformable_groups", 1)?;
    for (name, v) in [("groups", groups), ("deformable_groups", dgroups)] {
        if v < 1 {
            return Err(ctx.err(format!("attribute '{name}' must be >= 1, got {v}")));
        }
    }
    let modulated = opt_bool(ctx, "modulated", true)?;
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    check_rank(ctx, "offsets", &offsets.shape, 4)?;
    let fl = super::layout::filter_layout(Some(filter), Some(x), super::layout::FILTER_2D)
        .map_err(|e| ctx.err(e))?;
    let (fo, fc, fh, fw) = match super::layout::filter_positions(fl) {
        Some(&[o, c, h, w]) => (o, c, h, w),
        _ => return Err(ctx.err(format!("input 'filter' has format {fl}"))),
    };
    let (n, c, h, w) = (
        dim(&x.shape, 0),
        dim(&x.shape, ci),
        dim(&x.shape, hi),
        dim(&x.shape, wi),
    );
    let (kn, kc, kh, kw) = (
        dim(&filter.shape, fo),
        dim(&filter.shape, fc),
        dim(&filter.shape, fh),
        dim(&filter.shape, fw),
    );
    if c >= 0 && kc >= 0 && i128::from(c) != i128::from(kc) * i128::from(groups) {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {c} input channels ({fmt}), filter {} has {kc} per group x groups {groups}",
            x.shape, filter.shape
        )));
    }
    let out = |size: i64, k: i64, s: i64, d: i64, p: i64| -> Result<i64> {
        if size < 0 || k < 0 {
            return Ok(UNKNOWN_DIM);
        }
        let eff = i128::from(d) * (i128::from(k) - 1) + 1;
        let span = i128::from(size) + i128::from(p) - eff;
        if span < 0 {
            return Err(ctx.err(format!(
                "input {} (padded by {p}) is smaller than the dilated kernel ({eff})",
                x.shape
            )));
        }
        Ok((span / i128::from(s) + 1) as i64)
    };
    let ho = out(h, kh, sh, dh, pads[0] + pads[1])?;
    let wo = out(w, kw, sw, dw, pads[2] + pads[3])?;
    // Offsets: [N, dg*kh*kw*k, Ho, Wo] (NCHW) or [N, Ho, Wo, dg*kh*kw*k] (NHWC).
    merge_named(ctx, ("x", &x.shape, 0), ("offsets", &offsets.shape, 0))?;
    if kh >= 0 && kw >= 0 {
        let per = if modulated { 3 } else { 2 };
        let want = dgroups * kh * kw * per;
        check_dim(
            ctx,
            "offsets",
            &offsets.shape,
            ci,
            want,
            "deformable_groups x kh x kw x (3 modulated / 2)",
        )?;
    }
    let oh = merge_dim(ho, dim(&offsets.shape, hi));
    let ow = merge_dim(wo, dim(&offsets.shape, wi));
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(ctx.err(format!(
            "input 'offsets' {} must have the output's spatial size {ho} x {wo}",
            offsets.shape
        )));
    };
    if let Some(b) = ctx.input("bias")? {
        check_rank(ctx, "bias", &b.shape, 1)?;
        let bl = dim(&b.shape, 0);
        if merge_dim(bl, kn).is_none() {
            return Err(ctx.err(format!(
                "input 'bias' {} must have the filter's {kn} output channels",
                b.shape
            )));
        }
    }
    let dims = if ci == 1 {
        [n, kn, oh, ow]
    } else {
        [n, oh, ow, kn]
    };
    Ok(vec![TensorDesc::new(
        dtype_like(ctx, 0, Some(x)),
        Shape::from_slice(&dims),
    )
    .with_format(xl)])
}

/// MatrixDeterminant: x [..., M, M] -> [...].
fn matrix_determinant(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r < 2 {
        return Err(ctx.err(format!(
            "input 'x' must have rank >= 2 ([..., M, M]), got rank {r} shape {}",
            x.shape
        )));
    }
    let (a, b) = (x.shape.0[r - 2], x.shape.0[r - 1]);
    if merge_dim(a, b).is_none() {
        return Err(ctx.err(format!(
            "input 'x' {} must hold square matrices, got {a} x {b}",
            x.shape
        )));
    }
    Ok(single(dt, Shape::from_slice(&x.shape.0[..r - 2])))
}

/// RandomUniform: a tensor of the constant `shape` (rank from the shape input's length when the
/// value is unknown), of the `dtype` attribute.
fn random_uniform(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dtype = attr_dtype(ctx, "dtype", None)?;
    if !output_allows(ctx, 0, dtype) {
        return Err(ctx.err(format!(
            "attribute 'dtype' is {dtype}, which output 'y' does not allow"
        )));
    }
    let shape_in = ctx.req("shape")?;
    if let Some(r) = shape_in.shape.rank() {
        if r != 1 {
            return Err(ctx.err(format!(
                "input 'shape' must be 1-D, got shape {}",
                shape_in.shape
            )));
        }
    }
    let shape = match ctx.const_ints("shape")? {
        Some(dims) => {
            if let Some(d) = dims.iter().find(|&&d| d < 0) {
                return Err(ctx.err(format!("input 'shape' holds a negative dim {d}")));
            }
            Shape::new(dims)
        }
        None => match shape_in.shape.dims() {
            [n] if *n >= 0 => Shape::unknown_dims(*n as usize),
            _ => Shape::unknown_rank(),
        },
    };
    Ok(single(dtype, shape))
}
