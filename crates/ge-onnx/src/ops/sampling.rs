//! Sampling: Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("GridSample", grid_sample),
    ("AffineGrid", affine_grid),
    ("RoiAlign", roi_align),
    ("NonMaxSuppression", nms),
    ("Resize", resize),
    ("Upsample", upsample),
];

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

/// AffineGrid: the base grid of `size` (known only at run time: Range over each spatial dim,
/// normalised to [-1, 1] by align_corners' rule, then x, y, (z), 1 stacked on a new last axis)
/// times theta transposed (a batched MatMul), reshaped to [N, (D,) H, W, 2 (3)].
fn affine_grid(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["align_corners"])?;
    let ac = ctx.attr_i("align_corners", 0)? != 0;
    let nd = match ctx.vec_len(1)? {
        Some(4) => 2,
        Some(5) => 3,
        Some(l) => {
            return Err(Error::tr(format!(
                "AffineGrid size must have 4 (2-D) or 5 (3-D) values, got {l}"
            )))
        }
        None => {
            return Err(Error::unsupported(
                "AffineGrid: the length of size must be known at import",
            ))
        }
    };
    let dt = ctx.in_dtype(0)?;
    let theta = ctx.input(0)?;
    let size = ctx.input(1)?;
    let size = ctx.cast(size, I64)?;
    let spatial: Vec<i64> = (2..2 + nd as i64).collect();
    let sp = ctx.gather_const(size, &spatial)?;
    let one_i = ctx.const_i64(&[1], &[])?;
    let zero_i = ctx.const_i64(&[0], &[])?;
    let two = ctx.scalar(dt, 2.0)?;
    let one_f = ctx.scalar(dt, 1.0)?;
    // Per spatial dim (D, H, W order): its coordinates broadcast over the grid.
    let mut coords = Vec::with_capacity(nd + 1);
    for k in 0..nd {
        let ax = ctx.const_i64(&[2 + k as i64], &[])?;
        let d = ctx.op1("GatherV2", &[size, ax, zero_i], vec![])?;
        let a = ctx.op1("Range", &[zero_i, d, one_i], vec![])?;
        let a = ctx.cast(a, dt)?;
        let a = if ac {
            // -1 + i * 2 / (d - 1); a dim of 1 gives -1.
            let dm1 = ctx.bin("Sub", d, one_i)?;
            let dm1 = ctx.bin("Maximum", dm1, one_i)?;
            let dm1 = ctx.cast(dm1, dt)?;
            let step = ctx.bin("RealDiv", two, dm1)?;
            let a = ctx.bin("Mul", a, step)?;
            ctx.bin("Sub", a, one_f)?
        } else {
            // (2 i + 1) / d - 1.
            let df = ctx.cast(d, dt)?;
            let a = ctx.bin("Mul", a, two)?;
            let a = ctx.bin("Add", a, one_f)?;
            let a = ctx.bin("RealDiv", a, df)?;
            ctx.bin("Sub", a, one_f)?
        };
        let mut shape = vec![1i64; nd];
        shape[k] = -1;
        let shape = ctx.const_i64(&shape, &[nd as i64])?;
        let a = ctx.op1("Reshape", &[a, shape], vec![])?;
        coords.push(ctx.op1("BroadcastTo", &[a, sp], vec![])?);
    }
    coords.reverse();
    coords.push(ctx.op1("BroadcastTo", &[one_f, sp], vec![])?);
    let base = ctx.pack(&coords, nd as i64)?;
    let rows = ctx.const_i64(&[-1, nd as i64 + 1], &[2])?;
    let base = ctx.op1("Reshape", &[base, rows], vec![])?;
    let tt = ctx.transpose(theta, &[0, 2, 1])?;
    let g = matmul_ports(ctx, base, tt, 2, 3)?;
    let n = ctx.gather_const(size, &[0])?;
    let last = ctx.const_i64(&[nd as i64], &[1])?;
    let shape = ctx.concat(&[n, sp, last], 0)?;
    one(ctx.op1("Reshape", &[g, shape], vec![])?)
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
    one(ctx.op1(
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
    )?)
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

// ---------------------------------------------------------------------------------------------
// Resize, Upsample
// ---------------------------------------------------------------------------------------------

/// GE's Resize is ONNX Resize (opsets 11-13). Opset 18's axes are resolved into full-rank
/// scales/sizes/roi, keep_aspect_ratio_policy as [`aspect_policy`] says; antialias as
/// [`resize_antialias`] says.
fn resize(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "mode",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "nearest_mode",
        "antialias",
        "axes",
        "keep_aspect_ratio_policy",
    ])?;
    let old = ctx.opset < 11;
    let mode = ctx.attr_s("mode", "nearest")?;
    let mode = match mode.as_str() {
        "nearest" | "linear" | "cubic" => mode,
        "bilinear" if old => "linear".to_string(),
        m => return Err(Error::unsupported(format!("Resize mode {m:?}"))),
    };
    let coord = if old {
        "asymmetric".to_string()
    } else {
        ctx.attr_s("coordinate_transformation_mode", "half_pixel")?
    };
    if !matches!(
        coord.as_str(),
        "half_pixel"
            | "pytorch_half_pixel"
            | "align_corners"
            | "asymmetric"
            | "tf_half_pixel_for_nn"
            | "tf_crop_and_resize"
            | "half_pixel_symmetric"
    ) {
        return Err(Error::unsupported(format!(
            "Resize coordinate_transformation_mode {coord:?}"
        )));
    }
    let x = ctx.input(0)?;
    let dims = ctx.input_dims(0)?;
    let rank = dims.as_ref().map(Vec::len);
    let axes = match ctx.attr_ints("axes")? {
        Some(a) => {
            let r = rank
                .ok_or_else(|| Error::unsupported("Resize: axes need the rank of X at import"))?;
            Some(norm_axes(&a, r, "Resize axes")?)
        }
        None => None,
    };
    // Empty inputs count as absent.
    let present = |ctx: &NodeCtx<'_>, i: usize| -> Result<bool> {
        if !ctx.has_input(i) {
            return Ok(false);
        }
        Ok(ctx.input_desc(i)?.shape.num_elements() != Some(0))
    };
    let has_scales = present(ctx, 2)?;
    let has_sizes = present(ctx, 3)?;
    if has_scales == has_sizes {
        return Err(Error::tr(
            "Resize needs exactly one of scales and sizes (non-empty)",
        ));
    }
    if ctx.attr_i("antialias", 0)? != 0 {
        return resize_antialias(ctx, &mode, &coord, axes, has_scales);
    }
    let mut nearest = ctx.attr_s("nearest_mode", "round_prefer_floor")?;
    if old && mode == "nearest" {
        // Opsets before 11 (and Upsample): asymmetric coordinates, floor when upsampling
        // (onnxruntime's rule; it rounds up when downsampling).
        let sc = ctx
            .const_floats(2, "scales")?
            .ok_or_else(|| Error::unsupported("Resize-10 nearest: scales must be a constant"))?;
        nearest = if sc.iter().all(|&s| s >= 1.0) {
            "floor".into()
        } else if sc.iter().all(|&s| s <= 1.0) {
            "ceil".into()
        } else {
            return Err(Error::unsupported(
                "Resize-10 nearest with both up- and downsampled dims",
            ));
        };
    }
    let policy = ctx.attr_s("keep_aspect_ratio_policy", "stretch")?;
    let mut scales = None;
    let mut sizes = None;
    let mut x_in = x;
    let mut crop = None;
    if has_scales {
        let s = ctx.input(2)?;
        let s = ctx.cast(s, DataType::FLOAT)?;
        scales = Some(match (&axes, rank) {
            (Some(ax), Some(r)) => ctx.scatter_axes(s, ax, r, &[1.0])?,
            _ => s,
        });
    } else {
        let s = ctx.input(3)?;
        let s = ctx.cast(s, I64)?;
        if policy != "stretch" {
            let (y, pad_sizes) = aspect_policy(ctx, x, s, &policy, &coord, &axes, rank)?;
            x_in = y;
            scales = Some(pad_sizes.0);
            crop = Some(pad_sizes.1);
        } else {
            sizes = Some(match (&axes, rank) {
                (Some(ax), Some(r)) => {
                    // Untouched axes keep X's dims: Concat([sizes, Shape(X)]) gathered.
                    let shp = ctx.shape_i64(x)?;
                    let both = ctx.concat(&[s, shp], 0)?;
                    ctx.gather_const(both, &placement(ax, r))?
                }
                _ => s,
            });
        }
    }
    let roi = if coord == "tf_crop_and_resize" {
        let r = ctx
            .opt_input(1)?
            .ok_or_else(|| Error::tr("Resize: tf_crop_and_resize needs roi"))?;
        let r = ctx.cast(r, DataType::FLOAT)?;
        Some(match (&axes, rank) {
            (Some(ax), Some(rk)) => {
                let mut full = ax.clone();
                full.extend(ax.iter().map(|a| a + rk));
                // starts 0 and ends 1 for untouched axes.
                let fill: Vec<f64> = (0..2 * rk)
                    .map(|i| if i < rk { 0.0 } else { 1.0 })
                    .collect();
                scatter_fill(ctx, r, &full, &fill)?
            }
            _ => r,
        })
    } else {
        None
    };
    let y = ctx.op(
        "Resize",
        vec![vec![Some(x_in)], vec![roi], vec![scales], vec![sizes]],
        vec![
            ("mode", AttrValue::String(mode)),
            ("coordinate_transformation_mode", AttrValue::String(coord)),
            ("nearest_mode", AttrValue::String(nearest)),
            (
                "cubic_coeff_a",
                AttrValue::Float(ctx.attr_f("cubic_coeff_a", -0.75)?),
            ),
            (
                "exclude_outside",
                AttrValue::Int(ctx.attr_i("exclude_outside", 0)?),
            ),
            (
                "extrapolation_value",
                AttrValue::Float(ctx.attr_f("extrapolation_value", 0.0)?),
            ),
        ],
    )?[0];
    let y = match crop {
        // keep_aspect_ratio_policy: the first round(scale * dim) outputs.
        Some(end) => {
            let r = rank.unwrap_or(0) as i64;
            let zeros = ctx.const_i64(&vec![0; r as usize], &[r])?;
            let ones = ctx.const_i64(&vec![1; r as usize], &[r])?;
            ctx.strided_slice(y, [zeros, end, ones], 0)?
        }
        None => y,
    };
    Ok(vec![Some(y)])
}

/// Resize with antialias=1 (opset 18), which GE's Resize lacks. ONNX's reference resizes one
/// axis at a time, each output a weighted sum of the input positions along the axis, so each
/// resized axis becomes an [out, in] weight matrix ([`antialias_weights`], built at run time
/// from the scale or size, which may be run-time values) applied by BatchMatMulV2 with that
/// axis moved last. Axes whose constant scale and size leave them unchanged are skipped, as
/// the reference skips them. Computed in float and cast back to X's dtype.
fn resize_antialias(
    ctx: &mut NodeCtx<'_>,
    mode: &str,
    coord: &str,
    axes: Option<Vec<usize>>,
    has_scales: bool,
) -> Out {
    let cubic = match mode {
        "linear" => None,
        "cubic" => Some(ctx.attr_f("cubic_coeff_a", -0.75)? as f64),
        _ => {
            return Err(Error::tr(format!(
                "Resize: antialias applies to the linear and cubic modes, not {mode:?}"
            )))
        }
    };
    // (the caller checked coord is one of ONNX's modes)
    if matches!(coord, "tf_half_pixel_for_nn" | "tf_crop_and_resize") {
        return Err(Error::unsupported(format!(
            "Resize antialias with coordinate_transformation_mode {coord:?}"
        )));
    }
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    if !matches!(xdt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Err(Error::unsupported(format!(
            "Resize antialias on {xdt} (float, float16 and bfloat16: GE's BatchMatMulV2 applies \
             the weights)"
        )));
    }
    let r = ctx.input_rank(0)?;
    let ax: Vec<usize> = axes.unwrap_or_else(|| (0..r).collect());
    let (input, what) = if has_scales {
        (2, "scales")
    } else {
        (3, "sizes")
    };
    if let Some(n) = ctx.vec_len(input)? {
        if n != ax.len() {
            return Err(Error::tr(format!(
                "Resize: {what} has {n} entries, {} axes need one each",
                ax.len()
            )));
        }
    }
    let policy = ctx.attr_s("keep_aspect_ratio_policy", "stretch")?;
    let reduce = match (has_scales, policy.as_str()) {
        (true, _) | (false, "stretch") => None,
        (false, "not_larger") => Some("Minimum"),
        (false, "not_smaller") => Some("Maximum"),
        (false, p) => {
            return Err(Error::tr(format!(
                "Resize: unknown keep_aspect_ratio_policy {p:?}"
            )))
        }
    };
    // Axes left unchanged, where the values and dims are known at import.
    let dims = ctx.input_dims(0)?;
    let known = ctx.const_input(input).map(|t| t.to_f64_vec()).transpose()?;
    let unchanged = |i: usize, a: usize| -> bool {
        let (Some(v), Some(d)) = (&known, &dims) else {
            return false;
        };
        let (v, d) = (v.get(i).copied(), d.get(a).copied().filter(|&d| d > 0));
        match (v, d) {
            (Some(v), Some(_)) if has_scales => v == 1.0,
            (Some(v), Some(d)) => reduce.is_none() && v == d as f64,
            _ => false,
        }
    };
    let f64_ = DataType::DOUBLE;
    let vals = ctx.input(input)?;
    let vals = ctx.cast(vals, f64_)?;
    let mut per_axis = Vec::with_capacity(ax.len()); // (in, in as double, value)
    for (i, &a) in ax.iter().enumerate() {
        let d = ctx.dim_scalar(x, a)?;
        let df = ctx.cast(d, f64_)?;
        let iv = ctx.const_i64(&[i as i64], &[])?;
        let zero = ctx.const_i64(&[0], &[])?;
        let v = ctx.op1("GatherV2", &[vals, iv, zero], vec![])?;
        per_axis.push((d, df, v));
    }
    // keep_aspect_ratio_policy: one scale, the min or max of sizes / dims.
    let mut common = None;
    if let Some(op) = reduce {
        for &(_, df, v) in &per_axis {
            let s = ctx.bin("RealDiv", v, df)?;
            common = Some(match common {
                Some(c) => ctx.bin(op, c, s)?,
                None => s,
            });
        }
    }
    let half = ctx.scalar(f64_, 0.5)?;
    let mut y = ctx.cast(x, DataType::FLOAT)?;
    for (i, (&a, &(d, df, v))) in ax.iter().zip(&per_axis).enumerate() {
        if unchanged(i, a) {
            continue;
        }
        let (scale, out) = if has_scales {
            let o = ctx.bin("Mul", v, df)?;
            let o = ctx.un("Floor", o)?;
            (v, ctx.cast(o, I64)?)
        } else if let Some(c) = common {
            let o = ctx.bin("Mul", c, df)?;
            let o = ctx.bin("Add", o, half)?;
            let o = ctx.un("Floor", o)?;
            (c, ctx.cast(o, I64)?)
        } else {
            (ctx.bin("RealDiv", v, df)?, ctx.cast(v, I64)?)
        };
        let w = antialias_weights(ctx, d, scale, out, cubic, coord)?;
        // Axis a moved last, times W^T, moved back.
        let mut perm: Vec<i64> = (0..r as i64).filter(|&p| p != a as i64).collect();
        perm.push(a as i64);
        let last = a + 1 == r;
        let t = if last { y } else { ctx.transpose(y, &perm)? };
        let t = if r == 1 { ctx.unsqueeze(t, &[0])? } else { t };
        let t = ctx.op1(
            "BatchMatMulV2",
            &[t, w],
            vec![("adj_x2", AttrValue::Bool(true))],
        )?;
        let t = if r == 1 { ctx.squeeze(t, &[0])? } else { t };
        y = if last {
            t
        } else {
            let mut inv = vec![0i64; r];
            for (k, &p) in perm.iter().enumerate() {
                inv[p as usize] = k as i64;
            }
            ctx.transpose(t, &inv)?
        };
    }
    one(ctx.cast(y, xdt)?)
}

/// The [out, in] float weights of one antialiased Resize axis (`inw` inputs, `scale` and
/// `outw` outputs: int64 and double scalars), as ONNX's reference computes them: output `o`'s
/// source coordinate `x` by `coord`; the linear (`cubic` None) or cubic (coefficient a) kernel
/// K stretched by 1 / scale when downsampling, K((j - x) * min(scale, 1)) at every position j
/// within its reach (the reference's taps, whatever their window), positions outside the input
/// dropped (`exclude_outside`) or read at the edge, normalised to sum 1.
fn antialias_weights(
    ctx: &mut NodeCtx<'_>,
    inw: OutPort,
    scale: OutPort,
    outw: OutPort,
    cubic: Option<f64>,
    coord: &str,
) -> Result<OutPort> {
    let d = DataType::DOUBLE;
    let c = |ctx: &mut NodeCtx<'_>, v: f64| ctx.scalar(d, v);
    let (zero, half, one) = (c(ctx, 0.0)?, c(ctx, 0.5)?, c(ctx, 1.0)?);
    let in_f = ctx.cast(inw, d)?;
    let out_real = ctx.bin("Mul", scale, in_f)?; // the reference's output_width
    let o = ctx.iota(outw, &[-1, 1])?;
    let o = ctx.cast(o, d)?;
    let hp = ctx.bin("Add", o, half)?;
    let hp = ctx.bin("RealDiv", hp, scale)?;
    let hp = ctx.bin("Sub", hp, half)?;
    let single = ctx.bin("Equal", out_real, one)?;
    let x = match coord {
        "asymmetric" => ctx.bin("RealDiv", o, scale)?,
        "pytorch_half_pixel" => {
            let m = c(ctx, -0.5)?;
            ctx.op1("SelectV2", &[single, m, hp], vec![])?
        }
        "align_corners" => {
            let den = ctx.bin("Sub", out_real, one)?;
            let den = ctx.op1("SelectV2", &[single, one, den], vec![])?;
            let num = ctx.bin("Sub", in_f, one)?;
            let v = ctx.bin("Mul", o, num)?;
            let v = ctx.bin("RealDiv", v, den)?;
            ctx.op1("SelectV2", &[single, zero, v], vec![])?
        }
        "half_pixel_symmetric" => {
            let oi = ctx.cast(outw, d)?;
            let adj = ctx.bin("RealDiv", oi, out_real)?;
            let center = ctx.bin("Mul", in_f, half)?;
            let k = ctx.bin("Sub", one, adj)?;
            let off = ctx.bin("Mul", center, k)?;
            ctx.bin("Add", off, hp)?
        }
        _ => hp,
    };
    let s = ctx.bin("Minimum", scale, one)?;
    // Positions j in [-p, in + p) with p = ceil(reach / s) + 1 cover every tap.
    let reach = c(ctx, if cubic.is_some() { 2.0 } else { 1.0 })?;
    let p = ctx.bin("RealDiv", reach, s)?;
    let p = ctx.un("Ceil", p)?;
    let p = ctx.cast(p, I64)?;
    let one_i = ctx.const_i64(&[1], &[])?;
    let p = ctx.bin("Add", p, one_i)?;
    let lo = ctx.un("Neg", p)?;
    let hi = ctx.bin("Add", inw, p)?;
    let j = ctx.op1("Range", &[lo, hi, one_i], vec![])?;
    let jf = ctx.cast(j, d)?;
    let jf = ctx.unsqueeze(jf, &[0])?; // [1, V]
    let arg = ctx.bin("Sub", jf, x)?;
    let arg = ctx.bin("Mul", arg, s)?;
    let t = ctx.un("Abs", arg)?;
    let mut k = match cubic {
        None => {
            let v = ctx.bin("Sub", one, t)?;
            ctx.bin("Maximum", v, zero)?
        }
        Some(a) => {
            let t2 = ctx.bin("Mul", t, t)?;
            let t3 = ctx.bin("Mul", t2, t)?;
            let poly = |ctx: &mut NodeCtx<'_>, cs: [f64; 4]| -> Result<OutPort> {
                // cs[0] t^3 + cs[1] t^2 + cs[2] t + cs[3]
                let mut acc = c(ctx, cs[3])?;
                for (ci, tp) in cs[..3].iter().zip([t3, t2, t]) {
                    let cc = c(ctx, *ci)?;
                    let term = ctx.bin("Mul", cc, tp)?;
                    acc = ctx.bin("Add", acc, term)?;
                }
                Ok(acc)
            };
            let near = poly(ctx, [a + 2.0, -(a + 3.0), 0.0, 1.0])?;
            let far = poly(ctx, [a, -5.0 * a, 8.0 * a, -4.0 * a])?;
            let two = c(ctx, 2.0)?;
            let in_far = ctx.bin("Less", t, two)?;
            let far = ctx.op1("SelectV2", &[in_far, far, zero], vec![])?;
            let in_near = ctx.bin("LessEqual", t, one)?;
            ctx.op1("SelectV2", &[in_near, near, far], vec![])?
        }
    };
    let zero_i = ctx.const_i64(&[0], &[])?;
    let last = ctx.bin("Sub", inw, one_i)?;
    if ctx.attr_i("exclude_outside", 0)? != 0 {
        let ge0 = ctx.bin("GreaterEqual", j, zero_i)?;
        let lt = ctx.bin("Less", j, inw)?;
        let inside = ctx.bin("LogicalAnd", ge0, lt)?;
        k = ctx.op1("SelectV2", &[inside, k, zero], vec![])?;
    }
    let sum = ctx.reduce_keep("ReduceSum", k, &[-1])?;
    let none = ctx.bin("Equal", sum, zero)?;
    let sum = ctx.op1("SelectV2", &[none, one, sum], vec![])?;
    let k = ctx.bin("RealDiv", k, sum)?;
    let k = ctx.cast(k, DataType::FLOAT)?;
    // Positions outside the input read the edge: M[v, i] = (clamp(j_v) == i).
    let jc = ctx.bin("Maximum", j, zero_i)?;
    let jc = ctx.bin("Minimum", jc, last)?;
    let jc = ctx.unsqueeze(jc, &[1])?; // [V, 1]
    let cols = ctx.iota(inw, &[1, -1])?;
    let m = ctx.bin("Equal", jc, cols)?;
    let m = ctx.cast(m, DataType::FLOAT)?;
    ctx.op1("MatMulV2", &[k, m], vec![])
}

/// keep_aspect_ratio_policy (opset 18) with `sizes` (int64, one per axis) known at run time:
/// ONNX takes one scale for the axes, the min (not_larger) or max (not_smaller) of
/// sizes / dims, makes the output round(scale * dim) long and maps coordinates with that
/// scale. GE's Resize takes scales or sizes, not both; with scales alone it makes floor(dim *
/// scale) outputs. So `x` is first extended along the axes by p = ceil(0.5 / scale) + 1 copies
/// of its last element (what ONNX's clamping of source coordinates reads there), resized by the
/// scale (the mapping of the first outputs depends only on the scale for these coordinate
/// modes) and the result cropped to round(scale * dim). Returns the extended x, and the
/// full-rank scales and crop ends.
fn aspect_policy(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    sizes: OutPort,
    policy: &str,
    coord: &str,
    axes: &Option<Vec<usize>>,
    rank: Option<usize>,
) -> Result<(OutPort, (OutPort, OutPort))> {
    let reduce = match policy {
        "not_larger" => "ReduceMin",
        "not_smaller" => "ReduceMax",
        p => {
            return Err(Error::tr(format!(
                "Resize: unknown keep_aspect_ratio_policy {p:?}"
            )))
        }
    };
    if !matches!(coord, "half_pixel" | "asymmetric" | "tf_half_pixel_for_nn") {
        return Err(Error::unsupported(format!(
            "Resize keep_aspect_ratio_policy {policy:?} with coordinate_transformation_mode \
             {coord:?} (only half_pixel, asymmetric and tf_half_pixel_for_nn map the first \
             outputs independently of the output length)"
        )));
    }
    if ctx.attr_i("exclude_outside", 0)? != 0 {
        return Err(Error::unsupported(format!(
            "Resize keep_aspect_ratio_policy {policy:?} with exclude_outside=1"
        )));
    }
    let r = rank.ok_or_else(|| {
        Error::unsupported("Resize keep_aspect_ratio_policy: the rank of X must be known at import")
    })?;
    let ax: Vec<usize> = axes.clone().unwrap_or_else(|| (0..r).collect());
    if let Some(n) = ctx.vec_len(3)? {
        if n != ax.len() {
            return Err(Error::tr(format!(
                "Resize: sizes has {n} entries, {} axes need one each",
                ax.len()
            )));
        }
    }
    let f64_ = DataType::DOUBLE;
    let shp = ctx.shape_i64(x)?;
    let ax_i: Vec<i64> = ax.iter().map(|&a| a as i64).collect();
    let d = ctx.gather_const(shp, &ax_i)?;
    let d_f = ctx.cast(d, f64_)?;
    let s_f = ctx.cast(sizes, f64_)?;
    let ratio = ctx.bin("RealDiv", s_f, d_f)?;
    let scale = reduce_op(ctx, reduce, ratio, &Axes::List(vec![0]), false)?;
    // round(scale * d) (half up), one per axis.
    let half = ctx.scalar(f64_, 0.5)?;
    let sd = ctx.bin("Mul", d_f, scale)?;
    let sd = ctx.bin("Add", sd, half)?;
    let out = ctx.un("Floor", sd)?;
    let out = ctx.cast(out, I64)?;
    let both = ctx.concat(&[out, shp], 0)?;
    let end = ctx.gather_const(both, &placement(&ax, r))?;
    // p = ceil(0.5 / scale) + 1 edge copies: floor((d + p) * scale) >= round(scale * d).
    let p = ctx.bin("RealDiv", half, scale)?;
    let p = ctx.un("Ceil", p)?;
    let p = ctx.cast(p, I64)?;
    let one = ctx.const_i64(&[1], &[])?;
    let p = ctx.bin("Add", p, one)?;
    let mut xp = x;
    for &a in &ax {
        let da = ctx.dim_scalar(x, a)?;
        let n = ctx.bin("Add", da, p)?;
        let idx = ctx.iota(n, &[-1])?;
        let last = ctx.bin("Sub", da, one)?;
        let idx = ctx.bin("Minimum", idx, last)?;
        let a = ctx.const_i64(&[a as i64], &[])?;
        xp = ctx.op1("GatherV2", &[xp, idx, a], vec![])?;
    }
    let nax = ctx.const_i64(&[ax.len() as i64], &[1])?;
    let sc = ctx.op1("BroadcastTo", &[scale, nax], vec![])?;
    let sc = ctx.cast(sc, DataType::FLOAT)?;
    let scales = ctx.scatter_axes(sc, &ax, r, &[1.0])?;
    Ok((xp, (scales, end)))
}

/// Upsample (opsets 7-9): Resize-10's behaviour (the compatibility layer moved scales to
/// input 2).
fn upsample(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["mode"], &[("height_scale", 7), ("width_scale", 7)])?;
    if ctx.has_attr("height_scale") || ctx.has_attr("width_scale") {
        return Err(Error::unsupported(
            "Upsample-1 (height_scale/width_scale attributes)",
        ));
    }
    let x = ctx.input(0)?;
    let mode = ctx.attr_s("mode", "nearest")?;
    let mode = match mode.as_str() {
        "nearest" => "nearest",
        "linear" | "bilinear" => "linear",
        m => return Err(Error::unsupported(format!("Upsample mode {m:?}"))),
    };
    // Upsample's scales are >= 1 (the spec): nearest takes the floor of the source
    // coordinate (onnxruntime's rule when upsampling).
    if let Some(sc) = ctx.const_input(2) {
        if sc.to_f64_vec()?.iter().any(|&s| s < 1.0) {
            return Err(Error::tr("Upsample: scales must be >= 1"));
        }
    }
    let nearest = if mode == "nearest" {
        "floor"
    } else {
        "round_prefer_floor"
    };
    let s = ctx.input(2)?;
    let s = ctx.cast(s, DataType::FLOAT)?;
    let y = ctx.op(
        "Resize",
        vec![vec![Some(x)], vec![None], vec![Some(s)], vec![None]],
        vec![
            ("mode", AttrValue::String(mode.into())),
            (
                "coordinate_transformation_mode",
                AttrValue::String("asymmetric".into()),
            ),
            ("nearest_mode", AttrValue::String(nearest.into())),
        ],
    )?[0];
    Ok(vec![Some(y)])
}
