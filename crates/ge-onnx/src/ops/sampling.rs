//! Sampling: Resize, Upsample, GridSample, RoiAlign, NonMaxSuppression.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("GridSample", Arc::new(grid_sample));
    r.register("RoiAlign", Arc::new(roi_align));
    r.register("NonMaxSuppression", Arc::new(nms));
}

// ---------------------------------------------------------------------------------------------
// GridSample, RoiAlign, NonMaxSuppression
// ---------------------------------------------------------------------------------------------

fn grid_sample(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["align_corners", "mode", "padding_mode"])?;
    let r = ctx.input_rank(0)?;
    let def = if ctx.opset >= 20 {
        "linear"
    } else {
        "bilinear"
    };
    let mode = ctx.attr_s("mode", def)?;
    let interp = match mode.as_str() {
        "linear" | "bilinear" => "bilinear",
        "nearest" => "nearest",
        "cubic" | "bicubic" if r == 4 => "bicubic",
        "cubic" | "bicubic" => {
            return Err(Error::unsupported(
                "GridSample with cubic mode over 3 spatial dims (GE's GridSampler3D has none)",
            ))
        }
        other => return Err(Error::tr(format!("GridSample mode {other:?} is unknown"))),
    };
    let pad = ctx.attr_s("padding_mode", "zeros")?;
    if !matches!(pad.as_str(), "zeros" | "border" | "reflection") {
        return Err(Error::tr(format!(
            "GridSample padding_mode {pad:?} is unknown"
        )));
    }
    if interp == "bicubic" && pad != "zeros" {
        // ONNX first clamps (reflects) a coordinate outside the image, then pads each cubic
        // tap; GE's GridSampler2D (PyTorch's rule) pads the taps only.
        return Err(Error::unsupported(format!(
            "GridSample with cubic mode and padding_mode {pad} (ONNX pads the coordinate before \
             the taps, GE's GridSampler2D the taps only)"
        )));
    }
    let ac = ctx.attr_i("align_corners", 0)? != 0;
    let (x, grid) = (ctx.input(0)?, ctx.input(1)?);
    let mut attrs = vec![
        ("interpolation_mode", st(interp)),
        ("padding_mode", st(&pad)),
        ("align_corners", AttrValue::Bool(ac)),
    ];
    let op = match r {
        4 => "GridSampler2D",
        5 => {
            attrs.push(("data_format", st("NCDHW")));
            "GridSampler3D"
        }
        _ => {
            return Err(Error::unsupported(format!(
                "GridSample of a rank-{r} input (2-D and 3-D sampling are supported)"
            )))
        }
    };
    Ok(vec![Some(ctx.op1(op, &[x, grid], attrs)?)])
}

fn roi_align(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "coordinate_transformation_mode",
        "mode",
        "output_height",
        "output_width",
        "sampling_ratio",
        "spatial_scale",
    ])?;
    let def = if ctx.opset >= 16 {
        "half_pixel"
    } else {
        "output_half_pixel"
    };
    let end_mode = match ctx.attr_s("coordinate_transformation_mode", def)?.as_str() {
        "half_pixel" => 2,
        "output_half_pixel" => 0,
        other => {
            return Err(Error::tr(format!(
                "RoiAlign coordinate_transformation_mode {other:?} is unknown"
            )))
        }
    };
    let mode = ctx.attr_s("mode", "avg")?;
    if mode == "max" {
        return Err(Error::unsupported(
            "RoiAlign mode max (ONNX takes the max of the weighted bilinear corners, GE's \
             ROIAlign the max of the interpolated samples)",
        ));
    }
    if mode != "avg" {
        return Err(Error::tr(format!("RoiAlign mode {mode:?} is unknown")));
    }
    let (x, rois, idx) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let dt = ctx.desc(rois)?.dtype;
    let idx = ctx.cast(idx, dt)?;
    let idx = ctx.unsqueeze(idx, &[1])?;
    let axis = ctx.const_i32(&[1], &[])?;
    let rois5 = ctx.op(
        "ConcatV2",
        vec![vec![Some(idx), Some(rois)], vec![Some(axis)]],
        vec![("N", AttrValue::Int(2))],
    )?[0];
    let y = ctx.op1(
        "ROIAlign",
        &[x, rois5],
        vec![
            (
                "spatial_scale",
                AttrValue::Float(ctx.attr_f("spatial_scale", 1.0)?),
            ),
            (
                "pooled_height",
                AttrValue::Int(ctx.attr_i("output_height", 1)?),
            ),
            (
                "pooled_width",
                AttrValue::Int(ctx.attr_i("output_width", 1)?),
            ),
            (
                "sample_num",
                AttrValue::Int(ctx.attr_i("sampling_ratio", 0)?),
            ),
            ("roi_end_mode", AttrValue::Int(end_mode)),
            ("pool_mode", st(&mode)),
        ],
    )?;
    Ok(vec![Some(y)])
}

fn nms(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["center_point_box"])?;
    let cpb = ctx.attr_i("center_point_box", 0)?;
    if cpb != 0 && cpb != 1 {
        return Err(Error::tr(format!(
            "NonMaxSuppression center_point_box must be 0 or 1, got {cpb}"
        )));
    }
    let (boxes, scores) = (ctx.input(0)?, ctx.input(1)?);
    let max = match ctx.opt_input(2)? {
        Some(m) => Some(ctx.cast(m, DataType::INT32)?),
        None => None,
    };
    let mut th = Vec::new();
    for i in [3, 4] {
        th.push(match ctx.opt_input(i)? {
            Some(t) => Some(ctx.cast(t, DataType::FLOAT)?),
            None => None,
        });
    }
    let outs = ctx.op(
        "NonMaxSuppressionV6",
        vec![
            vec![Some(boxes)],
            vec![Some(scores)],
            vec![max],
            vec![th[0]],
            vec![th[1]],
        ],
        vec![("center_point_box", AttrValue::Int(cpb))],
    )?;
    let y = ctx.cast(outs[0], DataType::INT64)?;
    Ok(vec![Some(y)])
}
