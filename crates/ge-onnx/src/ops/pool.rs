//! Pooling: MaxPool, AveragePool, GlobalMaxPool, LpPool, MaxUnpool.
//!
//! Layout conventions as in `conv.rs`. Pooling that the GE pooling operators cannot express
//! (3-D windows, dilations) is built separably from strided slices: one slice per kernel tap
//! and spatial dim, combined with Maximum (max) or Add (average, then a constant divisor).

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::opmath::{window_out, SizeError};
use es_core::{AttrValue, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("MaxPool", max_pool),
    ("AveragePool", average_pool),
    ("GlobalMaxPool", global_max_pool),
    ("LpPool", lp_pool),
    ("MaxUnpool", max_unpool),
];

/// The window of a pooling node over an input of dims `xd` (N, C, spatial dims): the required
/// attribute `kernel_shape`, with one value per spatial dim, and the strides, dilations and pads.
fn pool_window(ctx: &NodeCtx<'_>, xd: &[i64]) -> Result<Window> {
    let n = xd.len() - 2;
    let k = ctx
        .attr_ints("kernel_shape")?
        .ok_or_else(|| Error::tr("attribute 'kernel_shape' is required"))?;
    if k.len() != n {
        return Err(Error::tr(format!(
            "kernel_shape {k:?} must have {n} values (one per spatial dim of the input)"
        )));
    }
    window(ctx, k, &xd[2..])
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Pool {
    Max,
    Avg {
        include_pad: bool,
    },
    /// Window sums (LpPool).
    Sum,
}

/// One pooled dim's output size (ONNX's rule; ceil mode drops a last window starting in the
/// trailing pad).
fn pooled_size(size: i64, win: &Window, i: usize, ceil: bool) -> Result<i64> {
    check_bound(&[size], MAX_DIM, "input spatial dim")?;
    let (k, s, d, pads) = (win.k[i], win.s[i], win.d[i], (win.p0[i], win.p1[i]));
    window_out(size, k, s, d, pads, ceil).map_err(|e| match e {
        SizeError::Empty { padded, span } => Error::tr(format!(
            "the pooling window {span} (dilated) is larger than the padded input {padded}"
        )),
        SizeError::TooLarge(o) => Error::tr(format!("the pooled size {o} is too large")),
        SizeError::NotPositive => Error::tr(format!(
            "kernel {k}, stride {s} and dilation {d} must be >= 1"
        )),
    })
}

fn pool(ctx: &mut NodeCtx<'_>, kind: Pool) -> Result<OutPort> {
    let xd = spatial_input_dims(ctx)?;
    let n = xd.len() - 2;
    let win = pool_window(ctx, &xd)?;
    let ceil = ctx.attr_i("ceil_mode", 0)? != 0;
    let x = ctx.input(0)?;
    if n <= 2 && win.d.iter().all(|&d| d == 1) && kind != Pool::Sum {
        let (x2, h) = if n == 1 {
            (ctx.unsqueeze(x, &[2])?, 1)
        } else {
            (x, 0)
        };
        let two = |v: &[i64], one: i64| -> Vec<i64> {
            if h == 1 {
                vec![one, v[0]]
            } else {
                v.to_vec()
            }
        };
        let (kk, ss, a, b) = (
            two(&win.k, 1),
            two(&win.s, 1),
            two(&win.p0, 0),
            two(&win.p1, 0),
        );
        let mut attrs = vec![
            ("ksize", li(&[1, 1, kk[0], kk[1]])),
            ("strides", li(&[1, 1, ss[0], ss[1]])),
            ("padding_mode", st("CALCULATED")),
            ("pads", li(&[a[0], b[0], a[1], b[1]])),
            ("data_format", st("NCHW")),
            ("ceil_mode", AttrValue::Bool(ceil)),
        ];
        let op = match kind {
            Pool::Max => "MaxPoolV3",
            Pool::Avg { include_pad } => {
                attrs.push(("exclusive", AttrValue::Bool(!include_pad)));
                "AvgPoolV2"
            }
            Pool::Sum => return Err(Error::tr("internal: sum pooling has no native form")),
        };
        let y = ctx.op1(op, &[x2], attrs)?;
        return if h == 1 { ctx.squeeze(y, &[2]) } else { Ok(y) };
    }
    separable_pool(ctx, x, &xd, &win, ceil, kind)
}

/// Pooling built from strided slices, one spatial dim after the other (max and sums are
/// separable over a box window); the spatial dims must be known.
fn separable_pool(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    xd: &[i64],
    win: &Window,
    ceil: bool,
    kind: Pool,
) -> Result<OutPort> {
    let r = xd.len();
    let n = r - 2;
    if xd[2..].iter().any(|&v| v < 0) {
        return Err(Error::unsupported(format!(
            "{} with dilations or over 3 spatial dims needs the spatial dims at import, got \
             {xd:?}",
            ctx.op_type()
        )));
    }
    let dt = ctx.desc(x)?.dtype;
    let fill = if kind == Pool::Max {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    let mut y = x;
    let mut outs = Vec::with_capacity(n);
    // Per dim, the divisor of each output position (average pooling).
    let mut counts: Vec<Vec<f64>> = Vec::with_capacity(n);
    for i in 0..n {
        let axis = 2 + i;
        let size = xd[axis];
        let o = pooled_size(size, win, i, ceil)?;
        outs.push(o);
        let (k, s, d, p0) = (win.k[i], win.s[i], win.d[i], win.p0[i]);
        let need = (o - 1) * s + (k - 1) * d + 1;
        let end = (need - size - p0).max(0);
        if p0 > 0 || end > 0 {
            let mut pads = vec![0i64; 2 * r];
            pads[2 * axis] = p0;
            pads[2 * axis + 1] = end;
            let pads = ctx.const_i64(&pads, &[2 * r as i64])?;
            let v = ctx.const_of(dt, &[fill], &[])?;
            y = ctx.op1("PadV3", &[y, pads, v], vec![("mode", st("constant"))])?;
        }
        let mask = axis_mask(r, axis);
        let mut acc: Option<OutPort> = None;
        for j in 0..k {
            let tap = (j * d, j * d + (o - 1) * s + 1, s);
            let bounds = ctx.axis_slice_bounds(r, axis, tap)?;
            let part = ctx.strided_slice(y, bounds, mask)?;
            acc = Some(match acc {
                None => part,
                Some(a) => {
                    let op = if kind == Pool::Max { "Maximum" } else { "Add" };
                    ctx.op1(op, &[a, part], vec![])?
                }
            });
        }
        y = acc.ok_or_else(|| Error::tr("empty pooling window"))?;
        if let Pool::Avg { include_pad } = kind {
            let (lo, hi) = if include_pad {
                (-p0, size + win.p1[i])
            } else {
                (0, size)
            };
            counts.push(
                (0..o)
                    .map(|q| {
                        (0..k)
                            .filter(|j| {
                                let t = q * s - p0 + j * d;
                                t >= lo && t < hi
                            })
                            .count() as f64
                    })
                    .collect(),
            );
        }
    }
    if let Pool::Avg { .. } = kind {
        // The divisor: the product of the per-dim counts, shaped [1, 1, o...].
        let mut div = vec![1.0f64];
        for c in &counts {
            div = div
                .iter()
                .flat_map(|a| c.iter().map(move |b| a * b))
                .collect();
        }
        if div.contains(&0.0) {
            return Err(Error::unsupported(format!(
                "{}: a window covers padding only (its average is undefined)",
                ctx.op_type()
            )));
        }
        let mut shape = vec![1i64, 1];
        shape.extend_from_slice(&outs);
        let dv = ctx.const_of(dt, &div, &shape)?;
        y = ctx.op1("RealDiv", &[y, dv], vec![])?;
    }
    Ok(y)
}

fn max_pool(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "storage_order",
        "strides",
    ])?;
    let order = ctx.attr_i("storage_order", 0)?;
    if order != 0 && order != 1 {
        return Err(Error::tr(format!(
            "attribute 'storage_order' must be 0 or 1, got {order}"
        )));
    }
    if ctx.output_used(1) {
        return max_pool_indices(ctx, order == 1);
    }
    Ok(vec![Some(pool(ctx, Pool::Max)?)])
}

fn average_pool(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
    ])?;
    let include_pad = ctx.attr_i("count_include_pad", 0)? != 0;
    Ok(vec![Some(pool(ctx, Pool::Avg { include_pad })?)])
}

fn global_max_pool(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let r = ctx.input_rank(0)?;
    if r < 3 {
        return Err(Error::tr(format!(
            "GlobalMaxPool needs an input of rank >= 3, got rank {r}"
        )));
    }
    let x = ctx.input(0)?;
    let axes: Vec<i64> = (2..r as i64).collect();
    one(ctx.reduce_keep("ReduceMax", x, &axes)?)
}

fn lp_pool(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "p",
        "pads",
        "strides",
    ])?;
    let p = if ctx.opset < 2 {
        f64::from(ctx.attr_f("p", 2.0)?)
    } else {
        ctx.attr_i("p", 2)? as f64
    };
    if p <= 0.0 {
        return Err(Error::tr(format!("LpPool needs p > 0, got {p}")));
    }
    let xd = spatial_input_dims(ctx)?;
    let win = pool_window(ctx, &xd)?;
    let ceil = ctx.attr_i("ceil_mode", 0)? != 0;
    let x = ctx.input(0)?;
    let a = if p == 2.0 {
        ctx.op1("Mul", &[x, x], vec![])?
    } else {
        let a = ctx.op1("Abs", &[x], vec![])?;
        if p == 1.0 {
            a
        } else {
            let e = ctx.scalar_as(x, p)?;
            ctx.op1("Pow", &[a, e], vec![])?
        }
    };
    let s = separable_pool(ctx, a, &xd, &win, ceil, Pool::Sum)?;
    let y = if p == 2.0 {
        ctx.op1("Sqrt", &[s], vec![])?
    } else if p == 1.0 {
        s
    } else {
        let e = ctx.scalar_as(x, 1.0 / p)?;
        ctx.op1("Pow", &[s, e], vec![])?
    };
    Ok(vec![Some(y)])
}

/// MaxPool with its Indices output: values and flat indices ((n * C + c) * S + the spatial
/// offset, row-major, or column-major for storage_order 1) reduced together, one spatial dim
/// at a time from the last (so that ties keep the first in row-major order); x's dims must be
/// known.
fn max_pool_indices(ctx: &mut NodeCtx<'_>, col_major: bool) -> Result<Vec<Option<OutPort>>> {
    let xd = spatial_input_dims(ctx)?;
    if xd.iter().any(|&v| v < 0) {
        return Err(Error::unsupported(format!(
            "MaxPool with the Indices output needs the input dims at import, got {xd:?}"
        )));
    }
    let r = xd.len();
    let n = r - 2;
    let win = pool_window(ctx, &xd)?;
    let ceil = ctx.attr_i("ceil_mode", 0)? != 0;
    let x = ctx.input(0)?;
    let dt = ctx.desc(x)?.dtype;
    let sp = &xd[2..];
    // Output sizes and the padded extents.
    let mut outs = Vec::with_capacity(n);
    let mut ends = Vec::with_capacity(n);
    for (i, &size) in sp.iter().enumerate() {
        let o = pooled_size(size, &win, i, ceil)?;
        let need = (o - 1) * win.s[i] + (win.k[i] - 1) * win.d[i] + 1;
        outs.push(o);
        ends.push((need - size - win.p0[i]).max(0));
    }
    let total = super::util::const_elems(sp, "MaxPool Indices input")? as i64;
    // The spatial index of every padded position (-1 in the pads).
    let padded: Vec<i64> = (0..n).map(|i| win.p0[i] + sp[i] + ends[i]).collect();
    let count = super::util::const_elems(&padded, "MaxPool Indices table")? as i64;
    let mut idx = Vec::with_capacity(count as usize);
    for f in 0..count {
        let mut rem = f;
        let mut pos = vec![0i64; n];
        for i in (0..n).rev() {
            pos[i] = rem % padded[i] - win.p0[i];
            rem /= padded[i];
        }
        if (0..n).any(|i| pos[i] < 0 || pos[i] >= sp[i]) {
            idx.push(-1);
            continue;
        }
        let mut v = 0i64;
        if col_major {
            for i in (0..n).rev() {
                v = v * sp[i] + pos[i];
            }
        } else {
            for i in 0..n {
                v = v * sp[i] + pos[i];
            }
        }
        idx.push(v);
    }
    let mut ishape = vec![1i64, 1];
    ishape.extend_from_slice(&padded);
    let mut ip = ctx.const_i64(&idx, &ishape)?;
    let mut vp = x;
    if win.p0.iter().chain(&ends).any(|&p| p > 0) {
        let mut pads = vec![0i64; 2 * r];
        for i in 0..n {
            pads[2 * (2 + i)] = win.p0[i];
            pads[2 * (2 + i) + 1] = ends[i];
        }
        let pads = ctx.const_i64(&pads, &[2 * r as i64])?;
        let low = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        vp = ctx.op1("PadV3", &[vp, pads, low], vec![("mode", st("constant"))])?;
    }
    for i in (0..n).rev() {
        let axis = 2 + i;
        let (k, s, d, o) = (win.k[i], win.s[i], win.d[i], outs[i]);
        let mask = axis_mask(r, axis);
        let mut acc: Option<(OutPort, OutPort)> = None;
        for j in 0..k {
            let tap = (j * d, j * d + (o - 1) * s + 1, s);
            let bounds = ctx.axis_slice_bounds(r, axis, tap)?;
            let pv = ctx.strided_slice(vp, bounds, mask)?;
            let pi = ctx.strided_slice(ip, bounds, mask)?;
            acc = Some(match acc {
                None => (pv, pi),
                Some((av, ai)) => {
                    // The tap replaces the window's maximum so far when it is larger, when
                    // that maximum is still a pad, or when it is NaN and the tap is a number
                    // (NaN skipped, the ONNX reference implementation's rule, as the MaxPool
                    // kernel): Y and Indices then agree, and an index is never a pad's -1.
                    let gt = ctx.op1("Greater", &[pv, av], vec![])?;
                    let none = ctx.const_i64(&[-1], &[])?;
                    let a_pad = ctx.op1("Equal", &[ai, none], vec![])?;
                    let p_real = ctx.op1("NotEqual", &[pi, none], vec![])?;
                    let a_nan = ctx.op1("NotEqual", &[av, av], vec![])?;
                    let p_num = ctx.op1("Equal", &[pv, pv], vec![])?;
                    let num = ctx.op1("LogicalAnd", &[p_real, p_num], vec![])?;
                    let over_nan = ctx.op1("LogicalAnd", &[a_nan, num], vec![])?;
                    let take = ctx.op1("LogicalOr", &[gt, a_pad], vec![])?;
                    let take = ctx.op1("LogicalOr", &[take, over_nan], vec![])?;
                    let v = ctx.op1("SelectV2", &[take, pv, av], vec![])?;
                    let ix = ctx.op1("SelectV2", &[take, pi, ai], vec![])?;
                    (v, ix)
                }
            });
        }
        let (v, ix) = acc.ok_or_else(|| Error::tr("empty pooling window"))?;
        vp = v;
        ip = ix;
    }
    // (n * C + c) * S offsets.
    let (nn, c) = (xd[0], xd[1]);
    super::util::const_elems(&[nn, c], "MaxPool Indices offsets")?;
    let offs: Vec<i64> = (0..nn * c).map(|v| v * total).collect();
    let mut oshape = vec![nn, c];
    oshape.resize(r, 1);
    let off = ctx.const_i64(&offs, &oshape)?;
    let ip = ctx.op1("Add", &[ip, off], vec![])?;
    Ok(vec![Some(vp), Some(ip)])
}

/// MaxUnpool: X scattered at its flat indices I into zeros of the output's size (I indexes the
/// whole output tensor, as MaxPool's Indices do); the dims must be known at import.
fn max_unpool(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["kernel_shape", "pads", "strides"])?;
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 || xd.iter().any(|&v| v < 0) {
        return Err(Error::unsupported(format!(
            "MaxUnpool needs an input of rank >= 3 with dims known at import, got {xd:?}"
        )));
    }
    let n = xd.len() - 2;
    let win = pool_window(ctx, &xd)?;
    let mut out = xd[..2].to_vec();
    for i in 0..n {
        out.push((xd[2 + i] - 1) * win.s[i] + win.k[i] - win.p0[i] - win.p1[i]);
    }
    // An output_shape other than the default: onnx's reference scatters by flat position in
    // the default shape, then places that at the origin of the given shape (zeros after it).
    let os = match ctx.opt_input(2)? {
        Some(p) => {
            let known = match ctx.const_input(2) {
                Some(t) => Some(t.to_i64_vec()?),
                None => None,
            };
            if let Some(v) = &known {
                if v.len() != out.len() || v.iter().zip(&out).any(|(a, b)| a < b) {
                    return Err(Error::tr(format!(
                        "MaxUnpool output_shape {v:?} must have the rank of the input and \
                         dims at least the default {out:?}"
                    )));
                }
            }
            (known.as_ref() != Some(&out)).then_some(p)
        }
        None => None,
    };
    if out.iter().any(|&v| v < 1) {
        return Err(Error::tr(format!(
            "MaxUnpool output shape {out:?} is empty"
        )));
    }
    let total = out
        .iter()
        .try_fold(1i64, |a, &b| a.checked_mul(b))
        .filter(|&t| t <= super::util::MAX_CONST_ELEMS)
        .ok_or_else(|| Error::unsupported(format!("MaxUnpool output {out:?} is too large")))?;
    let (x, i) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.desc(x)?.dtype;
    let zeros = ctx.const_of(dt, &vec![0.0; total as usize], &[total])?;
    let flat = ctx.const_i64(&[-1], &[1])?;
    let xf = ctx.op1("Reshape", &[x, flat], vec![])?;
    let i_f = ctx.op1("Reshape", &[i, flat], vec![])?;
    let y = ctx.scatter_axis0(zeros, i_f, xf, None)?;
    let shape = ctx.const_i64(&out, &[out.len() as i64])?;
    let y = ctx.op1("Reshape", &[y, shape], vec![])?;
    let Some(os) = os else {
        return one(y);
    };
    // Trailing zero pads up to output_shape: [0, os_i - out_i] per dim (PadV3's order).
    let r = out.len() as i64;
    let os = ctx.cast(os, I64)?;
    let tail = ctx.bin("Sub", os, shape)?;
    let zeros = ctx.const_i64(&vec![0; out.len()], &[r])?;
    let pads = ctx.pack(&[zeros, tail], 1)?;
    let flat = ctx.const_i64(&[2 * r], &[1])?;
    let pads = ctx.op1("Reshape", &[pads, flat], vec![])?;
    let zero = ctx.scalar_as(y, 0.0)?;
    one(ctx.op1("PadV3", &[y, pads, zero], vec![("mode", st("constant"))])?)
}
