//! Convolutions: Conv, ConvTranspose, DeformConv.
//!
//! Layout conventions of the GE operators used here: NCHW (NCDHW) `data_format`, 4-value
//! (5-value) strides and dilations in that order, pads `[top, bottom, left, right]` (3-D: `[head,
//! tail, top, bottom, left, right]`). 1-D operators go through the 2-D ones with an inserted
//! height of 1. (The windows, kernel shapes and the shared convolution core: `util.rs`.)

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::opmath::split_pads;
use es_core::{AttrValue, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("Conv", conv),
    ("ConvTranspose", conv_transpose),
    ("DeformConv", deform_conv),
];

/// The attributes of Conv (ConvTranspose adds `output_padding` and `output_shape`).
const CONV_ATTRS: [&str; 6] = [
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];

fn conv(ctx: &mut NodeCtx<'_>) -> Out {
    let (win, group) = conv_window(ctx, 1)?;
    let (x, w, b) = (ctx.input(0)?, ctx.input(1)?, ctx.opt_input(2)?);
    one(conv_core(ctx, x, w, b, &win, group)?)
}

/// The attribute `group`, >= 1.
fn group_attr(ctx: &NodeCtx<'_>) -> Result<i64> {
    let group = ctx.attr_i("group", 1)?;
    if group < 1 {
        return Err(Error::tr(format!(
            "attribute 'group' must be >= 1, got {group}"
        )));
    }
    Ok(group)
}

/// The geometry attributes of a convolution node (Conv, ConvInteger, QLinearConv) over input 0
/// and weight `wi`: its window and group.
pub(super) fn conv_window(ctx: &NodeCtx<'_>, wi: usize) -> Result<(Window, i64)> {
    ctx.known_attrs(&CONV_ATTRS)?;
    let xd = spatial_input_dims(ctx)?;
    let k = kernel_shape(ctx, xd.len() - 2, wi)?;
    let win = window(ctx, k, &xd[2..])?;
    Ok((win, group_attr(ctx)?))
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose
// ---------------------------------------------------------------------------------------------

fn conv_transpose(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[&CONV_ATTRS[..], &["output_padding", "output_shape"]].concat())?;
    let xd = spatial_input_dims(ctx)?;
    let n = xd.len() - 2;
    if n > 3 {
        return Err(Error::unsupported(format!(
            "ConvTranspose over {n} spatial dims (1-D, 2-D and 3-D are supported)"
        )));
    }
    let wd = ctx.rank_dims(1)?;
    let group = group_attr(ctx)?;
    let k = kernel_shape(ctx, n, 1)?;
    let s = spatial_list(ctx, "strides", n, 1, 1)?;
    let d = spatial_list(ctx, "dilations", n, 1, 1)?;
    let op = spatial_list(ctx, "output_padding", n, 0, 0)?;
    if xd[0] < 0 || xd[2..].iter().any(|&v| v < 0) || wd.get(1).is_none_or(|&v| v < 0) {
        return Err(Error::unsupported(format!(
            "ConvTranspose: GE's Conv2DTranspose needs the output size at import; the input \
             dims {xd:?} (batch and spatial) and the weight's dim 1 ({wd:?}) must be known"
        )));
    }
    check_bound(&k, MAX_WINDOW, "kernel_shape")?;
    check_bound(&xd, MAX_DIM, "input dim")?;
    check_bound(&[wd[1], group], MAX_DIM, "weight dim and group")?;
    let m = wd[1] * group;
    let eff: Vec<i64> = (0..n).map(|i| (k[i] - 1) * d[i] + 1).collect();
    let full: Vec<i64> = (0..n)
        .map(|i| s[i] * (xd[2 + i] - 1) + op[i] + eff[i])
        .collect();
    let auto_pad = ctx.attr_s("auto_pad", "NOTSET")?;
    let out_shape = ctx.attr_ints("output_shape")?;
    // Floor halves (ONNX's reference), also for negative totals.
    let split = |total: &[i64], upper: bool| -> (Vec<i64>, Vec<i64>) {
        total.iter().map(|&t| split_pads(t, upper)).unzip()
    };
    let (p0, p1) = if let Some(os) = out_shape {
        if os.len() < n {
            return Err(Error::tr(format!(
                "attribute 'output_shape' {os:?} must give the {n} spatial dims"
            )));
        }
        let os = &os[os.len() - n..];
        let total: Vec<i64> = (0..n).map(|i| full[i] - os[i]).collect();
        split(&total, auto_pad == "SAME_UPPER")
    } else {
        match auto_pad.as_str() {
            "NOTSET" | "" => {
                let p = ctx.attr_ints("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
                if p.len() != 2 * n {
                    return Err(Error::tr(format!(
                        "attribute 'pads' must have {} values, got {p:?}",
                        2 * n
                    )));
                }
                (p[..n].to_vec(), p[n..].to_vec())
            }
            "VALID" => (vec![0; n], vec![0; n]),
            "SAME_UPPER" | "SAME_LOWER" => {
                let total: Vec<i64> = (0..n).map(|i| full[i] - xd[2 + i] * s[i]).collect();
                split(&total, auto_pad == "SAME_UPPER")
            }
            other => {
                return Err(Error::tr(format!(
                    "attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \
                     {other:?}"
                )))
            }
        }
    };
    // Negative pads (an output larger than the full transposed convolution): the full one,
    // padded with zeros, then the bias.
    let grow0: Vec<i64> = p0.iter().map(|&p| (-p).max(0)).collect();
    let grow1: Vec<i64> = p1.iter().map(|&p| (-p).max(0)).collect();
    let grow = grow0.iter().chain(&grow1).any(|&g| g > 0);
    let p0: Vec<i64> = p0.iter().map(|&p| p.max(0)).collect();
    let p1: Vec<i64> = p1.iter().map(|&p| p.max(0)).collect();
    let out: Vec<i64> = (0..n).map(|i| full[i] - p0[i] - p1[i]).collect();
    if out.iter().any(|&o| o < 1) {
        return Err(Error::tr(format!(
            "ConvTranspose output size {out:?} is empty"
        )));
    }
    let (mut x, mut w, bias) = (ctx.input(0)?, ctx.input(1)?, ctx.opt_input(2)?);
    if n == 3 {
        let t = Transposed3d {
            xd: &xd,
            k: &k,
            s: &s,
            d: &d,
            op: &op,
            p0: &p0,
            p1: &p1,
            grow0: &grow0,
            grow1: &grow1,
            group,
        };
        return one(conv_transpose_3d(ctx, x, w, bias, &t)?);
    }
    let b = if grow { None } else { bias };
    // 2-D terms: 1-D gets a height of 1.
    let pad = |i: usize, v: &[i64], one: i64| -> Vec<i64> {
        if n == 1 {
            vec![one, v[i]]
        } else {
            v.to_vec()
        }
    };
    let (s2, d2, op2) = (pad(0, &s, 1), pad(0, &d, 1), pad(0, &op, 0));
    let (a0, a1) = (pad(0, &p0, 0), pad(0, &p1, 0));
    let o2 = pad(0, &out, 1);
    if n == 1 {
        x = ctx.unsqueeze(x, &[2])?;
        w = ctx.unsqueeze(w, &[2])?;
    }
    let size = ctx.const_i64(&[xd[0], m, o2[0], o2[1]], &[4])?;
    let y = ctx.op(
        "Conv2DTranspose",
        vec![vec![Some(size)], vec![Some(x)], vec![Some(w)], vec![b]],
        vec![
            ("strides", li(&[1, 1, s2[0], s2[1]])),
            ("pads", li(&[a0[0], a1[0], a0[1], a1[1]])),
            ("dilations", li(&[1, 1, d2[0], d2[1]])),
            ("groups", AttrValue::Int(group)),
            ("data_format", st("NCHW")),
            ("output_padding", li(&[0, 0, op2[0], op2[1]])),
        ],
    )?;
    let mut y = if n == 1 {
        ctx.squeeze(y[0], &[2])?
    } else {
        y[0]
    };
    if grow {
        let r = n + 2;
        let mut pads = vec![0i64; 2 * r];
        for i in 0..n {
            pads[2 * (2 + i)] = grow0[i];
            pads[2 * (2 + i) + 1] = grow1[i];
        }
        let pads = ctx.const_i64(&pads, &[2 * r as i64])?;
        let zero = ctx.scalar_as(y, 0.0)?;
        y = ctx.op1("PadV3", &[y, pads, zero], vec![("mode", st("constant"))])?;
        if let Some(b) = bias {
            let mut shape = vec![1i64, -1];
            shape.resize(r, 1);
            let s = ctx.const_i64(&shape, &[r as i64])?;
            let b = ctx.op1("Reshape", &[b, s], vec![])?;
            y = ctx.op1("Add", &[y, b], vec![])?;
        }
    }
    Ok(vec![Some(y)])
}

/// The geometry of a 3-D ConvTranspose: input dims, kernel, strides, dilations, output
/// padding, the (non-negative) pads and the growth of negative pads at both ends.
struct Transposed3d<'a> {
    xd: &'a [i64],
    k: &'a [i64],
    s: &'a [i64],
    d: &'a [i64],
    op: &'a [i64],
    p0: &'a [i64],
    p1: &'a [i64],
    grow0: &'a [i64],
    grow1: &'a [i64],
    group: i64,
}

/// A 3-D ConvTranspose as GE's Conv3D: x with `stride - 1` zeros inserted after each element
/// (an 8-D reshape, pad and reshape), padded by `eff - 1 - pad` (plus output_padding and the
/// growth of negative pads), correlated with the spatially flipped filter whose in/out channels
/// are swapped within each group, at stride 1 and the node's dilations.
fn conv_transpose_3d(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    w: OutPort,
    b: Option<OutPort>,
    t: &Transposed3d<'_>,
) -> Result<OutPort> {
    let xd = t.xd;
    let c = xd[1];
    if c < 0 || c % t.group != 0 {
        return Err(Error::unsupported(format!(
            "ConvTranspose: the input channels ({c}) must be known at import and divisible by \
             group {}",
            t.group
        )));
    }
    let wd = ctx.rank_dims(1)?;
    let m_g = wd[1];
    // Zero insertion: [N, C, D, 1, H, 1, W, 1] padded to [N, C, D, s, H, s, W, s].
    let mut x8 = vec![xd[0], c];
    let mut pads8 = vec![0i64; 16];
    let mut up = vec![xd[0], c];
    for i in 0..3 {
        x8.extend([xd[2 + i], 1]);
        pads8[2 * (3 + 2 * i) + 1] = t.s[i] - 1;
        up.push(xd[2 + i] * t.s[i]);
    }
    let mut xu = x;
    if t.s.iter().any(|&v| v > 1) {
        let sh = ctx.const_i64(&x8, &[8])?;
        xu = ctx.op1("Reshape", &[x, sh], vec![])?;
        let p = ctx.const_i64(&pads8, &[16])?;
        let zero = ctx.scalar_as(x, 0.0)?;
        xu = ctx.op1("PadV3", &[xu, p, zero], vec![("mode", st("constant"))])?;
        let sh = ctx.const_i64(&up, &[5])?;
        xu = ctx.op1("Reshape", &[xu, sh], vec![])?;
    }
    // Pads of the correlation; the inserted tail (stride - 1 zeros) counts toward the end pad,
    // a negative pad crops.
    let mut begin = vec![0i64; 5];
    let mut end = up.clone();
    let mut pads = Vec::with_capacity(6);
    let mut crop = false;
    for i in 0..3 {
        let eff = (t.k[i] - 1) * t.d[i] + 1;
        let pb = eff - 1 - t.p0[i] + t.grow0[i];
        let pe = eff - 1 - t.p1[i] + t.grow1[i] + t.op[i] - (t.s[i] - 1);
        if pb < 0 {
            begin[2 + i] = -pb;
            crop = true;
        }
        if pe < 0 {
            end[2 + i] += pe;
            crop = true;
        }
        pads.extend([pb.max(0), pe.max(0)]);
    }
    if crop {
        let bp = ctx.const_i64(&begin, &[5])?;
        let ep = ctx.const_i64(&end, &[5])?;
        let one = ctx.const_i64(&[1; 5], &[5])?;
        xu = ctx.strided_slice(xu, [bp, ep, one], 0)?;
    }
    // Filter [C, M/g, k...] -> flipped, [g, C/g, M/g, k...] -> [g, M/g, C/g, k...] -> [M, C/g, k...].
    let axes = ctx.const_i64(&[2, 3, 4], &[3])?;
    let wf = ctx.op1("ReverseV2", &[w, axes], vec![])?;
    let g = t.group;
    let sh = ctx.const_i64(&[g, c / g, m_g, t.k[0], t.k[1], t.k[2]], &[6])?;
    let wf = ctx.op1("Reshape", &[wf, sh], vec![])?;
    let wf = ctx.transpose(wf, &[0, 2, 1, 3, 4, 5])?;
    let sh = ctx.const_i64(&[g * m_g, c / g, t.k[0], t.k[1], t.k[2]], &[5])?;
    let wf = ctx.op1("Reshape", &[wf, sh], vec![])?;
    let y = ctx.op(
        "Conv3D",
        vec![vec![Some(xu)], vec![Some(wf)], vec![b]],
        vec![
            ("strides", li(&[1, 1, 1, 1, 1])),
            ("pads", li(&pads)),
            ("dilations", li(&[1, 1, t.d[0], t.d[1], t.d[2]])),
            ("groups", AttrValue::Int(g)),
            ("data_format", st("NCDHW")),
        ],
    )?;
    Ok(y[0])
}

// ---------------------------------------------------------------------------------------------
// DeformConv
// ---------------------------------------------------------------------------------------------

/// DeformConv (2-D) as GE's DeformableConv2D: ONNX's offsets [N, og * kh * kw * 2, Ho, Wo]
/// hold interleaved (y, x) pairs per tap; GE's hold every x offset, then every y offset, then
/// the masks ([N, 3 * og * kh * kw, Ho, Wo], NCHW), so the offsets are reshaped to
/// [N, og, kh * kw, 2, Ho, Wo], moved to [N, 2, og, kh * kw, Ho, Wo], reversed on the pair axis
/// and the mask appended (without a mask: GE's unmodulated form).
fn deform_conv(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "dilations",
        "group",
        "kernel_shape",
        "offset_group",
        "pads",
        "strides",
    ])?;
    let xd = spatial_input_dims(ctx)?;
    let n = xd.len() - 2;
    if n != 2 {
        return Err(Error::unsupported(format!(
            "DeformConv over {n} spatial dims (GE's DeformableConv2D is 2-D)"
        )));
    }
    let k = kernel_shape(ctx, n, 1)?;
    let win = window(ctx, k, &xd[2..])?;
    let group = group_attr(ctx)?;
    let og = ctx.attr_i("offset_group", 1)?;
    if og < 1 {
        return Err(Error::tr(format!(
            "attribute 'offset_group' must be >= 1, got {og}"
        )));
    }
    let (x, w, off) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let (b, mask) = (ctx.opt_input(3)?, ctx.opt_input(4)?);
    let taps = win.k[0] * win.k[1];
    let shape = ctx.shape_from(&[
        Dim::Of(off, 0),
        Dim::Is(og),
        Dim::Is(taps),
        Dim::Is(2),
        Dim::Of(off, 2),
        Dim::Of(off, 3),
    ])?;
    let o = ctx.op1("Reshape", &[off, shape], vec![])?;
    let o = ctx.transpose(o, &[0, 3, 1, 2, 4, 5])?;
    let axis = ctx.const_i64(&[1], &[1])?;
    let o = ctx.op1("ReverseV2", &[o, axis], vec![])?;
    let shape = ctx.shape_from(&[
        Dim::Of(off, 0),
        Dim::Is(2 * og * taps),
        Dim::Of(off, 2),
        Dim::Of(off, 3),
    ])?;
    let mut o = ctx.op1("Reshape", &[o, shape], vec![])?;
    if let Some(m) = mask {
        o = ctx.concat(&[o, m], 1)?;
    }
    let y = ctx.op(
        "DeformableConv2D",
        vec![vec![Some(x)], vec![Some(w)], vec![Some(o)], vec![b]],
        vec![
            ("strides", li(&[1, 1, win.s[0], win.s[1]])),
            ("pads", li(&[win.p0[0], win.p1[0], win.p0[1], win.p1[1]])),
            ("dilations", li(&[1, 1, win.d[0], win.d[1]])),
            ("groups", AttrValue::Int(group)),
            ("data_format", st("NCHW")),
            ("deformable_groups", AttrValue::Int(og)),
            ("modulated", AttrValue::Bool(mask.is_some())),
        ],
    )?;
    Ok(vec![Some(y[0])])
}
