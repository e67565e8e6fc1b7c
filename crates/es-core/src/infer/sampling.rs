//! Inference rules of the sampling operators: resizes, grid samplers, ROIAlign and non-max
//! suppression.

use super::common::{
    check_dim, check_rank, dim, dtype_like, merge_named, opt_bool, opt_int, opt_str,
    out_dtype_attr, single, vector_len,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "ResizeNearestNeighborV2" | "ResizeBilinearV2" => resize_2d,
        "Resize" => resize,
        "GridSampler2D" => grid_sampler_2d,
        "GridSampler3D" => grid_sampler_3d,
        "NonMaxSuppressionV6" => nms_v6,
        "ROIAlign" => roi_align,
        _ => return None,
    })
}

/// Positions of H and W of a 4-D image by its tensor format (NCHW, else NHWC).
fn image_hw(x: &TensorDesc) -> (usize, usize) {
    if x.format == Format::NCHW {
        (2, 3)
    } else {
        (1, 2)
    }
}

/// ResizeNearestNeighborV2 / ResizeBilinearV2: H and W from the constant `size` [h, w].
fn resize_2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let sin = ctx.req("size")?;
    check_rank(ctx, "x", &x.shape, 4)?;
    if opt_bool(ctx, "align_corners", false)? && opt_bool(ctx, "half_pixel_centers", false)? {
        return Err(
            ctx.err("attributes 'align_corners' and 'half_pixel_centers' cannot both be true")
        );
    }
    if let Some(n) = vector_len(ctx, "size", Some(sin))? {
        if n != 2 {
            return Err(ctx.err(format!(
                "input 'size' must hold 2 values [new_height, new_width], got shape {}",
                sin.shape
            )));
        }
    }
    let hw = match ctx.const_ints("size")? {
        Some(v) => {
            if v.len() != 2 || v.iter().any(|&d| d <= 0) {
                return Err(ctx.err(format!(
                    "input 'size' must hold 2 positive values [new_height, new_width], got {v:?}"
                )));
            }
            [v[0], v[1]]
        }
        None => [UNKNOWN_DIM, UNKNOWN_DIM],
    };
    let (h, w) = image_hw(x);
    let mut out = match x.shape.rank() {
        Some(_) => x.shape.0.to_vec(),
        None => vec![UNKNOWN_DIM; 4],
    };
    out[h] = hw[0];
    out[w] = hw[1];
    let dt = if ctx.proto.attr("dtype").is_some() {
        out_dtype_attr(ctx, "dtype", Some(DataType::FLOAT))?
    } else {
        dtype_like(ctx, 0, Some(x))
    };
    Ok(single(dt, Shape::from(out)))
}

/// Resize (ONNX): the constant `sizes`, or x's dims times the constant `scales` (floored); one
/// value per dim, or [h, w] for a 4-D x (placed by its format). Empty constants count as absent.
fn resize(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let mode = opt_str(ctx, "mode", "nearest")?;
    if !matches!(mode, "nearest" | "linear" | "cubic") {
        return Err(ctx.err(format!(
            "attribute 'mode' must be \"nearest\", \"linear\" or \"cubic\", got {mode:?}"
        )));
    }
    let sizes = match ctx.input("sizes")? {
        Some(_) => ctx.const_ints("sizes")?.filter(|v| !v.is_empty()),
        None => None,
    };
    let scales = match ctx.const_of("scales")? {
        Some(t) => Some(
            t.to_f64_vec()
                .map_err(|e| ctx.err(format!("input 'scales': {e}")))?,
        )
        .filter(|v| !v.is_empty()),
        None => None,
    };
    if sizes.is_some() && scales.is_some() {
        return Err(ctx
            .err("inputs 'sizes' and 'scales' are both given; only one of them may be non-empty"));
    }
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    // Dims addressed by a list of `n` values.
    let targets = |name: &str, n: usize| -> Result<Vec<usize>> {
        if n == r {
            Ok((0..r).collect())
        } else if n == 2 && r == 4 {
            let (h, w) = image_hw(x);
            Ok(vec![h, w])
        } else {
            Err(ctx.err(format!(
                "input '{name}' has {n} values, x {} needs one per dim ({r})",
                x.shape
            )))
        }
    };
    let mut out = x.shape.0.to_vec();
    if let Some(s) = sizes {
        let pos = targets("sizes", s.len())?;
        if let Some(v) = s.iter().find(|&&v| v < 0) {
            return Err(ctx.err(format!("input 'sizes' {s:?} has negative size {v}")));
        }
        for (p, v) in pos.into_iter().zip(s) {
            out[p] = v;
        }
    } else if let Some(s) = scales {
        let pos = targets("scales", s.len())?;
        if let Some(v) = s.iter().find(|&&v| v.is_nan() || v <= 0.0) {
            return Err(ctx.err(format!("input 'scales' {s:?} has non-positive scale {v}")));
        }
        for (p, v) in pos.into_iter().zip(s) {
            if out[p] >= 0 {
                out[p] = (out[p] as f64 * v).floor() as i64;
            }
        }
    } else {
        out = vec![UNKNOWN_DIM; r];
    }
    Ok(single(dt, Shape::from(out)))
}

/// The inputs `names`, both of rank `rank`, where dim `i` of input `names[k]` must be `len`
/// (`what` it holds), given `(k, i, len, what)`; and their batch (dim 0), which must agree.
fn batched_pair<'a>(
    ctx: &InferCtx<'a>,
    names: [&str; 2],
    rank: usize,
    (k, i, len, what): (usize, usize, i64, &str),
) -> Result<([&'a TensorDesc; 2], i64)> {
    let d = [ctx.req(names[0])?, ctx.req(names[1])?];
    for (name, x) in names.iter().zip(d) {
        check_rank(ctx, name, &x.shape, rank)?;
    }
    check_dim(ctx, names[k], &d[k].shape, i, len, what)?;
    let n = merge_named(ctx, (names[0], &d[0].shape, 0), (names[1], &d[1].shape, 0))?;
    Ok((d, n))
}

/// GridSampler2D: x [N, C, H, W], grid [N, H_out, W_out, 2] -> [N, C, H_out, W_out].
fn grid_sampler_2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let ([x, grid], n) = batched_pair(ctx, ["x", "grid"], 4, (1, 3, 2, "the (x, y) coordinates"))?;
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
    let ([boxes, scores], _) = batched_pair(
        ctx,
        ["boxes", "scores"],
        3,
        (0, 2, 4, "the box coordinates"),
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
                let n = crate::opmath::checked_product(&d.shape.0);
                if r > 1 || (r == 1 && n.is_some_and(|n| n != 1)) {
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
