//! Convolutions: Conv, ConvTranspose.
//!
//! Layout conventions of the GE operators used here: NCHW (NCDHW) `data_format`, 4-value
//! (5-value) strides and dilations in that order, pads `[top, bottom, left, right]` (3-D: `[head,
//! tail, top, bottom, left, right]`). 1-D operators go through the 2-D ones with an inserted
//! height of 1. (The windows, kernel shapes and the shared convolution core: `util.rs`.)

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::opmath::split_pads;
use es_core::AttrValue;

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] =
    &[("Conv", conv), ("ConvTranspose", conv_transpose)];

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
    if n > 2 {
        return Err(Error::unsupported(format!(
            "ConvTranspose over {n} spatial dims (GE has Conv2DTranspose only; 1-D and 2-D \
             are supported)"
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
