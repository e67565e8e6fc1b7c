//! Neural-network operators: convolutions, pooling, normalisations, matrix products.
//!
//! Layout conventions of the GE operators used here: NCHW (NCDHW) `data_format`, 4-value
//! (5-value) strides and dilations in that order, pads `[top, bottom, left, right]` (3-D: `[head,
//! tail, top, bottom, left, right]`). 1-D operators go through the 2-D ones with an inserted
//! height of 1. Pooling that the GE pooling operators cannot express (3-D windows, dilations)
//! is built separably from strided slices: one slice per kernel tap and spatial dim, combined
//! with Maximum (max) or Add (average, then a constant divisor).

use super::util::norm_axis;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("Conv", Arc::new(conv));
    r.register("ConvTranspose", Arc::new(conv_transpose));
    r.register("MatMul", Arc::new(matmul));
    r.register("Gemm", Arc::new(gemm));
    r.register("MaxPool", Arc::new(max_pool));
    r.register("AveragePool", Arc::new(average_pool));
    r.register("GlobalMaxPool", Arc::new(global_max_pool));
    r.register("BatchNormalization", Arc::new(batch_norm));
    r.register("InstanceNormalization", Arc::new(instance_norm));
    r.register("LayerNormalization", Arc::new(layer_norm));
    r.register("LRN", Arc::new(lrn));
    r.register("GroupNormalization", Arc::new(group_norm));
    r.register("RMSNormalization", Arc::new(rms_norm));
    r.register("LpPool", Arc::new(lp_pool));
    r.register("GridSample", Arc::new(grid_sample));
    r.register("RoiAlign", Arc::new(roi_align));
    r.register("NonMaxSuppression", Arc::new(nms));
    r.register("QuantizeLinear", Arc::new(quantize_linear));
    r.register("DequantizeLinear", Arc::new(dequantize_linear));
    r.register("DynamicQuantizeLinear", Arc::new(dynamic_quantize_linear));
    r.register("MatMulInteger", Arc::new(matmul_integer));
    r.register("QLinearMatMul", Arc::new(qlinear_matmul));
    r.register("ConvInteger", Arc::new(conv_integer));
    r.register("QLinearConv", Arc::new(qlinear_conv));
    r.register("NegativeLogLikelihoodLoss", Arc::new(nll_loss));
    r.register("SoftmaxCrossEntropyLoss", Arc::new(softmax_cross_entropy));
    r.register("MaxUnpool", Arc::new(max_unpool));
}

fn li(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

fn st(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}

impl NodeCtx<'_> {
    /// Every attribute of the node must be one of `known` (the translation handles them).
    fn known_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "attribute '{name}' of {} is not handled by its translation",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }

    /// The dims of input `i` (-1 where unknown); its rank must be known.
    fn rank_dims(&self, i: usize) -> Result<Vec<i64>> {
        self.input_rank(i)?;
        Ok(self.input_desc(i)?.shape.dims().to_vec())
    }

    fn unsqueeze(&mut self, x: OutPort, axes: &[i64]) -> Result<OutPort> {
        self.op1("Unsqueeze", &[x], vec![("axes", li(axes))])
    }

    fn squeeze(&mut self, x: OutPort, axes: &[i64]) -> Result<OutPort> {
        self.op1("Squeeze", &[x], vec![("axis", li(axes))])
    }

    /// A scalar constant of the dtype of `like`.
    fn scalar_as(&mut self, like: OutPort, v: f64) -> Result<OutPort> {
        let dt = self.desc(like)?.dtype;
        self.const_of(dt, &[v], &[])
    }
}

// ---------------------------------------------------------------------------------------------
// Windows: kernel, strides, dilations, pads (auto_pad resolved)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Window {
    k: Vec<i64>,
    s: Vec<i64>,
    d: Vec<i64>,
    /// Leading and trailing pads per spatial dim.
    p0: Vec<i64>,
    p1: Vec<i64>,
}

/// A per-spatial-dim list attribute (default `def` for every dim), each value >= `min`.
/// Largest kernel size, stride, dilation or pad accepted: window arithmetic on model-given
/// values must not overflow.
const MAX_WINDOW: i64 = 1 << 20;
/// Largest spatial dim used in window arithmetic.
const MAX_DIM: i64 = 1 << 40;

fn check_bound(v: &[i64], max: i64, what: &str) -> Result<()> {
    match v.iter().find(|&&x| x > max) {
        Some(bad) => Err(Error::unsupported(format!(
            "{what} value {bad} is larger than {max}"
        ))),
        None => Ok(()),
    }
}

fn spatial_list(ctx: &NodeCtx<'_>, name: &str, n: usize, def: i64, min: i64) -> Result<Vec<i64>> {
    let v = ctx.attr_ints(name)?.unwrap_or_else(|| vec![def; n]);
    check_bound(&v, MAX_WINDOW, &format!("attribute '{name}'"))?;
    if v.len() != n {
        return Err(Error::tr(format!(
            "attribute '{name}' must have {n} values (one per spatial dim), got {v:?}"
        )));
    }
    if let Some(bad) = v.iter().find(|&&x| x < min) {
        return Err(Error::tr(format!(
            "attribute '{name}' values must be >= {min}, got {bad} in {v:?}"
        )));
    }
    Ok(v)
}

/// The window of a convolution or pooling node with kernel `k` over spatial dims `sp` (-1 where
/// unknown; they are needed only for auto_pad SAME_*).
fn window(ctx: &NodeCtx<'_>, k: Vec<i64>, sp: &[i64]) -> Result<Window> {
    let n = k.len();
    if let Some(bad) = k.iter().find(|&&x| x < 1) {
        return Err(Error::tr(format!(
            "kernel_shape values must be >= 1, got {bad} in {k:?}"
        )));
    }
    check_bound(&k, MAX_WINDOW, "kernel_shape")?;
    check_bound(sp, MAX_DIM, "input spatial dim")?;
    let s = spatial_list(ctx, "strides", n, 1, 1)?;
    let d = spatial_list(ctx, "dilations", n, 1, 1)?;
    let auto_pad = ctx.attr_s("auto_pad", "NOTSET")?;
    let (p0, p1) = match auto_pad.as_str() {
        "NOTSET" | "" => {
            let p = ctx.attr_ints("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
            if p.len() != 2 * n || p.iter().any(|&x| x < 0) {
                return Err(Error::tr(format!(
                    "attribute 'pads' must have {} values >= 0, got {p:?}",
                    2 * n
                )));
            }
            check_bound(&p, MAX_WINDOW, "attribute 'pads'")?;
            (p[..n].to_vec(), p[n..].to_vec())
        }
        "VALID" => (vec![0; n], vec![0; n]),
        "SAME_UPPER" | "SAME_LOWER" => {
            if sp.len() != n || sp.iter().any(|&x| x < 0) {
                return Err(Error::unsupported(format!(
                    "{}: auto_pad {auto_pad} needs the spatial dims of the input at import, \
                     got {sp:?}",
                    ctx.op_type()
                )));
            }
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for i in 0..n {
                let out = (sp[i] + s[i] - 1) / s[i];
                let eff = (k[i] - 1) * d[i] + 1;
                let total = ((out - 1) * s[i] + eff - sp[i]).max(0);
                if auto_pad == "SAME_UPPER" {
                    a.push(total / 2);
                    b.push(total - total / 2);
                } else {
                    a.push(total - total / 2);
                    b.push(total / 2);
                }
            }
            (a, b)
        }
        other => {
            return Err(Error::tr(format!(
            "attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got {other:?}"
        )))
        }
    };
    Ok(Window { k, s, d, p0, p1 })
}

/// The required attribute `kernel_shape`, with one value per spatial dim.
fn required_kernel_shape(ctx: &NodeCtx<'_>, n: usize) -> Result<Vec<i64>> {
    let k = ctx
        .attr_ints("kernel_shape")?
        .ok_or_else(|| Error::tr("attribute 'kernel_shape' is required"))?;
    if k.len() != n {
        return Err(Error::tr(format!(
            "kernel_shape {k:?} must have {n} values (one per spatial dim of the input)"
        )));
    }
    Ok(k)
}

/// The kernel's spatial dims: attribute `kernel_shape`, or the weight's dims 2.. .
fn kernel_shape(ctx: &NodeCtx<'_>, n: usize, w: usize) -> Result<Vec<i64>> {
    let k = match ctx.attr_ints("kernel_shape")? {
        Some(k) => k,
        None => {
            let wd = ctx.rank_dims(w)?;
            let k = wd.get(2..).map(<[i64]>::to_vec).unwrap_or_default();
            if k.iter().any(|&x| x < 0) {
                return Err(Error::unsupported(format!(
                    "{}: without kernel_shape the weight's spatial dims must be known at \
                     import, got {wd:?}",
                    ctx.op_type()
                )));
            }
            k
        }
    };
    if k.len() != n {
        return Err(Error::tr(format!(
            "kernel_shape {k:?} must have {n} values (one per spatial dim of the input)"
        )));
    }
    Ok(k)
}

// ---------------------------------------------------------------------------------------------
// Conv
// ---------------------------------------------------------------------------------------------

/// Conv2D/Conv3D (NCHW/NCDHW) over an N-D input, 1-D through an inserted height of 1.
fn conv_core(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    w: OutPort,
    b: Option<OutPort>,
    win: &Window,
    group: i64,
) -> Result<OutPort> {
    let n = win.k.len();
    let base = |v: &[i64]| -> Vec<i64> {
        let mut o = vec![1, 1];
        o.extend_from_slice(v);
        o
    };
    let pads: Vec<i64> = (0..n).flat_map(|i| [win.p0[i], win.p1[i]]).collect();
    let ins = |x, w| vec![vec![Some(x)], vec![Some(w)], vec![b]];
    match n {
        1 => {
            let x2 = ctx.unsqueeze(x, &[2])?;
            let w2 = ctx.unsqueeze(w, &[2])?;
            let y = ctx.op(
                "Conv2D",
                ins(x2, w2),
                vec![
                    ("strides", li(&[1, 1, 1, win.s[0]])),
                    ("pads", li(&[0, 0, pads[0], pads[1]])),
                    ("dilations", li(&[1, 1, 1, win.d[0]])),
                    ("groups", AttrValue::Int(group)),
                    ("data_format", st("NCHW")),
                ],
            )?;
            ctx.squeeze(y[0], &[2])
        }
        2 | 3 => {
            let (op, fmt) = if n == 2 {
                ("Conv2D", "NCHW")
            } else {
                ("Conv3D", "NCDHW")
            };
            let y = ctx.op(
                op,
                ins(x, w),
                vec![
                    ("strides", li(&base(&win.s))),
                    ("pads", li(&pads)),
                    ("dilations", li(&base(&win.d))),
                    ("groups", AttrValue::Int(group)),
                    ("data_format", st(fmt)),
                ],
            )?;
            Ok(y[0])
        }
        _ => Err(Error::unsupported(format!(
            "{}: {n}-D convolution (1-D, 2-D and 3-D are supported)",
            ctx.op_type()
        ))),
    }
}

fn conv(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "pads",
        "strides",
    ])?;
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "Conv needs an input of rank >= 3 (N, C, spatial dims), got {xd:?}"
        )));
    }
    let n = xd.len() - 2;
    let k = kernel_shape(ctx, n, 1)?;
    let win = window(ctx, k, &xd[2..])?;
    let group = ctx.attr_i("group", 1)?;
    if group < 1 {
        return Err(Error::tr(format!(
            "attribute 'group' must be >= 1, got {group}"
        )));
    }
    let (x, w, b) = (ctx.input(0)?, ctx.input(1)?, ctx.opt_input(2)?);
    Ok(vec![Some(conv_core(ctx, x, w, b, &win, group)?)])
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose
// ---------------------------------------------------------------------------------------------

fn conv_transpose(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "output_padding",
        "output_shape",
        "pads",
        "strides",
    ])?;
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "ConvTranspose needs an input of rank >= 3, got {xd:?}"
        )));
    }
    let n = xd.len() - 2;
    if n > 2 {
        return Err(Error::unsupported(format!(
            "ConvTranspose over {n} spatial dims (GE has Conv2DTranspose only; 1-D and 2-D \
             are supported)"
        )));
    }
    let wd = ctx.rank_dims(1)?;
    let group = ctx.attr_i("group", 1)?;
    if group < 1 {
        return Err(Error::tr(format!(
            "attribute 'group' must be >= 1, got {group}"
        )));
    }
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
    let split = |total: &[i64], upper: bool| -> (Vec<i64>, Vec<i64>) {
        // Floor halves (ONNX's reference), also for negative totals.
        let half = |t: &i64| t.div_euclid(2);
        if upper {
            (
                total.iter().map(half).collect(),
                total.iter().map(|t| t - half(t)).collect(),
            )
        } else {
            (
                total.iter().map(|t| t - half(t)).collect(),
                total.iter().map(half).collect(),
            )
        }
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

// ---------------------------------------------------------------------------------------------
// MatMul, Gemm
// ---------------------------------------------------------------------------------------------

fn matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    Ok(vec![Some(matmul_ports(ctx, a, b, ra, rb)?)])
}

fn gemm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "transA", "transB", "broadcast"])?;
    let alpha = f64::from(ctx.attr_f("alpha", 1.0)?);
    let beta = f64::from(ctx.attr_f("beta", 1.0)?);
    let ta = ctx.attr_i("transA", 0)? != 0;
    let tb = ctx.attr_i("transB", 0)? != 0;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let mut y = ctx.op1(
        "MatMulV2",
        &[a, b],
        vec![
            ("transpose_x1", AttrValue::Bool(ta)),
            ("transpose_x2", AttrValue::Bool(tb)),
        ],
    )?;
    if alpha != 1.0 {
        let k = ctx.scalar_as(y, alpha)?;
        y = ctx.op1("Mul", &[y, k], vec![])?;
    }
    if let Some(mut c) = ctx.opt_input(2)? {
        if beta != 1.0 {
            let k = ctx.scalar_as(c, beta)?;
            c = ctx.op1("Mul", &[c, k], vec![])?;
        }
        y = ctx.op1("Add", &[y, c], vec![])?;
    }
    Ok(vec![Some(y)])
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
    let eff = (win.k[i] - 1) * win.d[i] + 1;
    let span = size + win.p0[i] + win.p1[i] - eff;
    if span < 0 {
        return Err(Error::tr(format!(
            "the pooling window {eff} (dilated) is larger than the padded input {}",
            size + win.p0[i] + win.p1[i]
        )));
    }
    let s = win.s[i];
    let mut o = if ceil {
        (span + s - 1) / s + 1
    } else {
        span / s + 1
    };
    if ceil && (o - 1) * s >= size + win.p0[i] {
        o -= 1;
    }
    Ok(o)
}

fn pool(ctx: &mut NodeCtx<'_>, kind: Pool) -> Result<OutPort> {
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "{} needs an input of rank >= 3 (N, C, spatial dims), got {xd:?}",
            ctx.op_type()
        )));
    }
    let n = xd.len() - 2;
    let k = required_kernel_shape(ctx, n)?;
    let win = window(ctx, k, &xd[2..])?;
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
        let mask = ((1i64 << r) - 1) & !(1i64 << axis);
        let mut acc: Option<OutPort> = None;
        for j in 0..k {
            let mut begin = vec![0i64; r];
            let mut endv = vec![0i64; r];
            let mut strides = vec![1i64; r];
            begin[axis] = j * d;
            endv[axis] = j * d + (o - 1) * s + 1;
            strides[axis] = s;
            let bb = ctx.const_i64(&begin, &[r as i64])?;
            let ee = ctx.const_i64(&endv, &[r as i64])?;
            let ss = ctx.const_i64(&strides, &[r as i64])?;
            let part = ctx.op1(
                "StridedSlice",
                &[y, bb, ee, ss],
                vec![
                    ("begin_mask", AttrValue::Int(mask)),
                    ("end_mask", AttrValue::Int(mask)),
                ],
            )?;
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
    let axes = ctx.const_i64(&axes, &[r as i64 - 2])?;
    let y = ctx.op1(
        "ReduceMax",
        &[x, axes],
        vec![("keep_dims", AttrValue::Bool(true))],
    )?;
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// Normalisations
// ---------------------------------------------------------------------------------------------

/// x of rank 2 or 3 gets trailing dims of 1 to rank 4 (for the NCHW operators); returns the
/// axes to squeeze afterwards.
fn to_4d(ctx: &mut NodeCtx<'_>, x: OutPort, r: usize) -> Result<(OutPort, Vec<i64>)> {
    if r >= 4 {
        return Ok((x, Vec::new()));
    }
    let axes: Vec<i64> = (r as i64..4).collect();
    Ok((ctx.unsqueeze(x, &axes)?, axes))
}

fn batch_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "epsilon",
        "momentum",
        "spatial",
        "is_test",
        "consumed_inputs",
        "training_mode",
    ])?;
    if ctx.opset < 9 && ctx.attr_i("spatial", 1)? == 0 {
        return Err(Error::unsupported(
            "BatchNormalization with spatial=0 (per-activation statistics)",
        ));
    }
    let training = ctx.opset >= 14 && ctx.attr_i("training_mode", 0)? != 0;
    if !training && (1..ctx.num_outputs()).any(|i| ctx.output_used(i)) {
        return Err(Error::unsupported(
            "BatchNormalization outputs other than Y outside training_mode (opset >= 14)",
        ));
    }
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let momentum = f64::from(ctx.attr_f("momentum", 0.9)?);
    let r = ctx.input_rank(0)?;
    if !(2..=5).contains(&r) {
        return Err(Error::unsupported(format!(
            "BatchNormalization of a rank-{r} input (ranks 2 to 5 are supported)"
        )));
    }
    let x = ctx.input(0)?;
    let (x4, sq) = to_4d(ctx, x, r)?;
    let mut params = Vec::with_capacity(4);
    for i in 1..5 {
        let p = ctx.input(i)?;
        params.push(ctx.cast(p, DataType::FLOAT)?);
    }
    let fmt = if r == 5 { "NCDHW" } else { "NCHW" };
    let outs = ctx.op(
        "BatchNorm",
        vec![
            vec![Some(x4)],
            vec![Some(params[0])],
            vec![Some(params[1])],
            vec![Some(params[2])],
            vec![Some(params[3])],
        ],
        vec![
            ("epsilon", AttrValue::Float(eps)),
            ("data_format", st(fmt)),
            ("is_training", AttrValue::Bool(training)),
        ],
    )?;
    let mut y = outs[0];
    if !sq.is_empty() {
        y = ctx.squeeze(y, &sq)?;
    }
    let mut res = vec![Some(y)];
    if training {
        // running = input * momentum + batch * (1 - momentum); the batch variance biased.
        for (old, batch) in [(params[2], outs[3]), (params[3], outs[4])] {
            let m = ctx.const_of(DataType::FLOAT, &[momentum], &[])?;
            let m1 = ctx.const_of(DataType::FLOAT, &[1.0 - momentum], &[])?;
            let a = ctx.op1("Mul", &[old, m], vec![])?;
            let b = ctx.op1("Mul", &[batch, m1], vec![])?;
            let mut v = ctx.op1("Add", &[a, b], vec![])?;
            let want = ctx.input_desc(3)?.dtype;
            if want != DataType::UNDEFINED {
                v = ctx.cast(v, want)?;
            }
            res.push(Some(v));
        }
    }
    Ok(res)
}

fn instance_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["epsilon", "consumed_inputs"])?;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let r = ctx.input_rank(0)?;
    if r < 3 {
        return Err(Error::tr(format!(
            "InstanceNormalization needs an input of rank >= 3, got rank {r}"
        )));
    }
    let (x, scale, b) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let fmt = if r == 5 { "NCDHW" } else { "NCHW" };
    let outs = ctx.op(
        "InstanceNorm",
        vec![vec![Some(x)], vec![Some(scale)], vec![Some(b)]],
        vec![("data_format", st(fmt)), ("epsilon", AttrValue::Float(eps))],
    )?;
    Ok(vec![Some(outs[0])])
}

fn layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "epsilon", "stash_type"])?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, r, "LayerNormalization axis")? as i64;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let stash = ctx.attr_i("stash_type", 1)?;
    let stash_dt = crate::types::dtype_from_onnx(stash as i32)
        .map_err(|e| e.context("attribute 'stash_type'"))?;
    if !stash_dt.is_float() {
        return Err(Error::tr(format!(
            "attribute 'stash_type' must be a float type, got {stash_dt}"
        )));
    }
    let (x, scale) = (ctx.input(0)?, ctx.input(1)?);
    let bias = match ctx.opt_input(2)? {
        Some(b) => b,
        None => ctx.op1("ZerosLike", &[scale], vec![])?,
    };
    let outs = ctx.op(
        "LayerNorm",
        vec![vec![Some(x)], vec![Some(scale)], vec![Some(bias)]],
        vec![
            ("begin_norm_axis", AttrValue::Int(axis)),
            ("begin_params_axis", AttrValue::Int(axis)),
            ("epsilon", AttrValue::Float(eps)),
        ],
    )?;
    let mut res = vec![Some(outs[0])];
    if ctx.output_used(1) || ctx.output_used(2) {
        let mean = ctx.cast(outs[1], stash_dt)?;
        let var = ctx.cast(outs[2], stash_dt)?;
        let e = ctx.const_of(stash_dt, &[f64::from(eps)], &[])?;
        let ve = ctx.op1("Add", &[var, e], vec![])?;
        let inv = ctx.op1("Rsqrt", &[ve], vec![])?;
        res.push(Some(mean));
        res.push(Some(inv));
    }
    Ok(res)
}

fn lrn(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "bias", "size"])?;
    let size = ctx.attr_i("size", 0)?;
    if size < 1 {
        return Err(Error::tr(format!(
            "LRN needs the attribute 'size' >= 1, got {size}"
        )));
    }
    if size % 2 == 0 {
        return Err(Error::unsupported(format!(
            "LRN with an even size {size} (its window is asymmetric; GE's LRN takes a radius)"
        )));
    }
    let alpha = ctx.attr_f("alpha", 1e-4)?;
    let beta = ctx.attr_f("beta", 0.75)?;
    let bias = ctx.attr_f("bias", 1.0)?;
    let x = ctx.input(0)?;
    let y = ctx.op1(
        "LRN",
        &[x],
        vec![
            ("depth_radius", AttrValue::Int((size - 1) / 2)),
            ("bias", AttrValue::Float(bias)),
            ("alpha", AttrValue::Float(alpha / size as f32)),
            ("beta", AttrValue::Float(beta)),
            ("norm_region", st("ACROSS_CHANNELS")),
        ],
    )?;
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// More normalisations and pooling: GroupNormalization, RMSNormalization, LpPool
// ---------------------------------------------------------------------------------------------

fn group_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["epsilon", "num_groups", "stash_type"])?;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let g = ctx.attr_i("num_groups", 0)?;
    if g < 1 {
        return Err(Error::tr(format!(
            "GroupNormalization needs the attribute 'num_groups' >= 1, got {g}"
        )));
    }
    if ctx.attr_i("stash_type", 1)? != 1 {
        return Err(Error::unsupported(
            "GroupNormalization with a stash_type other than float (GE computes in f64 and \
             rounds once)",
        ));
    }
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "GroupNormalization needs an input of rank >= 3, got {xd:?}"
        )));
    }
    let (x, mut scale, mut bias) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    if ctx.opset < 21 {
        // Opset 18: one scale and bias per group; repeat them to one per channel.
        let c = xd[1];
        if c < 0 || c % g != 0 {
            return Err(Error::unsupported(format!(
                "GroupNormalization (opset {}): per-group scale and bias need the channel count \
                 at import, a multiple of num_groups {g}; got the input dims {xd:?}",
                ctx.opset
            )));
        }
        for p in [&mut scale, &mut bias] {
            let s1 = ctx.const_i64(&[g, 1], &[2])?;
            let r = ctx.op1("Reshape", &[*p, s1], vec![])?;
            let m = ctx.const_i64(&[1, c / g], &[2])?;
            let t = ctx.op1("Tile", &[r, m], vec![])?;
            let s2 = ctx.const_i64(&[c], &[1])?;
            *p = ctx.op1("Reshape", &[t, s2], vec![])?;
        }
    }
    let fmt = if xd.len() == 5 { "NCDHW" } else { "NCHW" };
    let outs = ctx.op(
        "GroupNorm",
        vec![vec![Some(x)], vec![Some(scale)], vec![Some(bias)]],
        vec![
            ("num_groups", AttrValue::Int(g)),
            ("data_format", st(fmt)),
            ("eps", AttrValue::Float(eps)),
            ("is_training", AttrValue::Bool(false)),
        ],
    )?;
    Ok(vec![Some(outs[0])])
}

fn rms_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "epsilon", "stash_type"])?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, r, "RMSNormalization axis")?;
    let eps = f64::from(ctx.attr_f("epsilon", 1e-5)?);
    let stash = ctx.attr_i("stash_type", 1)?;
    let stash_dt = crate::types::dtype_from_onnx(stash as i32)
        .map_err(|e| e.context("attribute 'stash_type'"))?;
    if !stash_dt.is_float() {
        return Err(Error::tr(format!(
            "attribute 'stash_type' must be a float type, got {stash_dt}"
        )));
    }
    let (x, scale) = (ctx.input(0)?, ctx.input(1)?);
    let xdt = ctx.desc(x)?.dtype;
    let xs = ctx.cast(x, stash_dt)?;
    let sq = ctx.op1("Mul", &[xs, xs], vec![])?;
    let axes: Vec<i64> = (axis as i64..r as i64).collect();
    let axes = ctx.const_i64(&axes, &[(r - axis) as i64])?;
    let m = ctx.op1(
        "ReduceMean",
        &[sq, axes],
        vec![("keep_dims", AttrValue::Bool(true))],
    )?;
    let e = ctx.const_of(stash_dt, &[eps], &[])?;
    let me = ctx.op1("Add", &[m, e], vec![])?;
    let inv = ctx.op1("Rsqrt", &[me], vec![])?;
    let n = ctx.op1("Mul", &[xs, inv], vec![])?;
    let n = ctx.cast(n, xdt)?;
    let y = ctx.op1("Mul", &[n, scale], vec![])?;
    Ok(vec![Some(y)])
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
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "LpPool needs an input of rank >= 3, got {xd:?}"
        )));
    }
    let n = xd.len() - 2;
    let k = required_kernel_shape(ctx, n)?;
    let win = window(ctx, k, &xd[2..])?;
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

// ---------------------------------------------------------------------------------------------
// Quantization
// ---------------------------------------------------------------------------------------------

/// The integer range of a quantized dtype.
fn qrange(dt: DataType) -> Option<(f64, f64)> {
    Some(match dt {
        DataType::UINT8 => (0.0, 255.0),
        DataType::INT8 => (-128.0, 127.0),
        DataType::UINT16 => (0.0, 65535.0),
        DataType::INT16 => (-32768.0, 32767.0),
        DataType::INT32 => (-2147483648.0, 2147483647.0),
        _ => return None,
    })
}

/// A per-axis scale or zero point `p` (1-D over `axis` of a rank-`r` tensor) reshaped to
/// broadcast; a scalar (or 1-element) one as is. Blocked quantization is refused.
fn per_axis(ctx: &mut NodeCtx<'_>, i: usize, axis: i64, r: usize) -> Result<OutPort> {
    let p = ctx.input(i)?;
    let d = ctx.rank_dims(i)?;
    if d.is_empty() || (d.len() == 1 && d[0] == 1) {
        return Ok(p);
    }
    if d.len() != 1 {
        return Err(Error::unsupported(format!(
            "{}: blocked quantization (a scale or zero point of rank {})",
            ctx.op_type(),
            d.len()
        )));
    }
    let a = norm_axis(axis, r, "quantization axis")?;
    let mut shape = vec![1i64; r];
    shape[a] = -1;
    let s = ctx.const_i64(&shape, &[r as i64])?;
    ctx.op1("Reshape", &[p, s], vec![])
}

fn quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "axis",
        "saturate",
        "block_size",
        "output_dtype",
        "precision",
    ])?;
    let block = ctx.attr_i("block_size", 0)?;
    if ctx.attr_i("precision", 0)? != 0 {
        return Err(Error::unsupported(
            "QuantizeLinear with a precision attribute",
        ));
    }
    let r = ctx.input_rank(0)?;
    let axis = ctx.attr_i("axis", 1)?;
    let out_attr = ctx.attr_i("output_dtype", 0)?;
    let out_dt = if out_attr != 0 {
        crate::types::dtype_from_onnx(out_attr as i32)
            .map_err(|e| e.context("attribute 'output_dtype'"))?
    } else if ctx.has_input(2) {
        ctx.input_desc(2)?.dtype
    } else {
        DataType::UINT8
    };
    let Some((lo, hi)) = qrange(out_dt) else {
        return Err(Error::unsupported(format!(
            "QuantizeLinear to {out_dt} (8-, 16- and 32-bit integers are supported)"
        )));
    };
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    let cdt = if xdt == DataType::DOUBLE {
        DataType::DOUBLE
    } else {
        DataType::FLOAT
    };
    let xf = ctx.cast(x, cdt)?;
    let scale = per_block(ctx, 1, axis, r, block)?;
    let scale = ctx.cast(scale, cdt)?;
    let q = ctx.op1("RealDiv", &[xf, scale], vec![])?;
    let mut q = ctx.op1("Round", &[q], vec![])?;
    if ctx.has_input(2) {
        let zp = per_block(ctx, 2, axis, r, block)?;
        let zp = ctx.cast(zp, cdt)?;
        q = ctx.op1("Add", &[q, zp], vec![])?;
    }
    let lo = ctx.const_of(cdt, &[lo], &[])?;
    let hi = ctx.const_of(cdt, &[hi], &[])?;
    let q = ctx.op1("ClipByValue", &[q, lo, hi], vec![])?;
    Ok(vec![Some(ctx.cast(q, out_dt)?)])
}

fn dequantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "block_size", "output_dtype"])?;
    let block = ctx.attr_i("block_size", 0)?;
    let r = ctx.input_rank(0)?;
    let axis = ctx.attr_i("axis", 1)?;
    let sdt = ctx.input_desc(1)?.dtype;
    let out_attr = ctx.attr_i("output_dtype", 0)?;
    let out_dt = if out_attr != 0 {
        crate::types::dtype_from_onnx(out_attr as i32)
            .map_err(|e| e.context("attribute 'output_dtype'"))?
    } else {
        sdt
    };
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    if !(qrange(xdt).is_some() || matches!(xdt, DataType::FLOAT8_E4M3FN | DataType::FLOAT8_E5M2)) {
        return Err(Error::unsupported(format!(
            "DequantizeLinear of {xdt} (8-, 16-, 32-bit integers and float8 are supported)"
        )));
    }
    let cdt = if sdt == DataType::DOUBLE {
        DataType::DOUBLE
    } else {
        DataType::FLOAT
    };
    let mut v = ctx.cast(x, cdt)?;
    if ctx.has_input(2) {
        let zp = per_block(ctx, 2, axis, r, block)?;
        let zp = ctx.cast(zp, cdt)?;
        v = ctx.op1("Sub", &[v, zp], vec![])?;
    }
    let scale = per_block(ctx, 1, axis, r, block)?;
    let scale = ctx.cast(scale, cdt)?;
    let y = ctx.op1("Mul", &[v, scale], vec![])?;
    Ok(vec![Some(ctx.cast(y, out_dt)?)])
}

fn dynamic_quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let r = ctx.input_rank(0)?;
    let x = ctx.input(0)?;
    let x = ctx.cast(x, DataType::FLOAT)?;
    let axes: Vec<i64> = (0..r as i64).collect();
    let axes = ctx.const_i64(&axes, &[r as i64])?;
    let zero = ctx.const_of(DataType::FLOAT, &[0.0], &[])?;
    let mx = ctx.op1("ReduceMax", &[x, axes], vec![])?;
    let mx = ctx.op1("Maximum", &[mx, zero], vec![])?;
    let mn = ctx.op1("ReduceMin", &[x, axes], vec![])?;
    let mn = ctx.op1("Minimum", &[mn, zero], vec![])?;
    let range = ctx.op1("Sub", &[mx, mn], vec![])?;
    let q = ctx.const_of(DataType::FLOAT, &[255.0], &[])?;
    let scale = ctx.op1("RealDiv", &[range, q], vec![])?;
    // zero point = saturate(round(0 - min / scale))
    let ms = ctx.op1("RealDiv", &[mn, scale], vec![])?;
    let zp = ctx.op1("Sub", &[zero, ms], vec![])?;
    let hi = ctx.const_of(DataType::FLOAT, &[255.0], &[])?;
    let zp = ctx.op1("ClipByValue", &[zp, zero, hi], vec![])?;
    let zp = ctx.op1("Round", &[zp], vec![])?;
    let y = ctx.op1("RealDiv", &[x, scale], vec![])?;
    let y = ctx.op1("Round", &[y], vec![])?;
    let y = ctx.op1("Add", &[y, zp], vec![])?;
    let y = ctx.op1("ClipByValue", &[y, zero, hi], vec![])?;
    let y = ctx.cast(y, DataType::UINT8)?;
    let zp = ctx.cast(zp, DataType::UINT8)?;
    Ok(vec![Some(y), Some(scale), Some(zp)])
}

/// `x` (input `xi`) dequantized to f32: (x - zero point) * scale, the scale and zero point
/// (inputs `si`, `zi`) per tensor or per `axis`.
fn dequant(ctx: &mut NodeCtx<'_>, xi: usize, si: usize, zi: usize, axis: i64) -> Result<OutPort> {
    let r = ctx.input_rank(xi)?;
    let x = ctx.input(xi)?;
    let mut v = ctx.cast(x, DataType::FLOAT)?;
    if ctx.has_input(zi) {
        let zp = per_axis(ctx, zi, axis, r)?;
        let zp = ctx.cast(zp, DataType::FLOAT)?;
        v = ctx.op1("Sub", &[v, zp], vec![])?;
    }
    let s = per_axis(ctx, si, axis, r)?;
    let s = ctx.cast(s, DataType::FLOAT)?;
    ctx.op1("Mul", &[v, s], vec![])
}

/// f32 `v` quantized with the scale and zero point of inputs `si`, `zi` (per tensor), to the
/// zero point's dtype.
fn requant(ctx: &mut NodeCtx<'_>, v: OutPort, si: usize, zi: usize) -> Result<OutPort> {
    let out_dt = if ctx.has_input(zi) {
        ctx.input_desc(zi)?.dtype
    } else {
        DataType::UINT8
    };
    let Some((lo, hi)) = qrange(out_dt) else {
        return Err(Error::unsupported(format!(
            "{} to {out_dt} (8-, 16- and 32-bit integers are supported)",
            ctx.op_type()
        )));
    };
    let s = ctx.input(si)?;
    let s = ctx.cast(s, DataType::FLOAT)?;
    let q = ctx.op1("RealDiv", &[v, s], vec![])?;
    let mut q = ctx.op1("Round", &[q], vec![])?;
    if ctx.has_input(zi) {
        let zp = ctx.input(zi)?;
        let zp = ctx.cast(zp, DataType::FLOAT)?;
        q = ctx.op1("Add", &[q, zp], vec![])?;
    }
    let lo = ctx.const_of(DataType::FLOAT, &[lo], &[])?;
    let hi = ctx.const_of(DataType::FLOAT, &[hi], &[])?;
    let q = ctx.op1("ClipByValue", &[q, lo, hi], vec![])?;
    ctx.cast(q, out_dt)
}

/// A matrix product with ONNX MatMul's rank rules (1-D operands, batch broadcast).
fn matmul_ports(
    ctx: &mut NodeCtx<'_>,
    a: OutPort,
    b: OutPort,
    ra: usize,
    rb: usize,
) -> Result<OutPort> {
    if ra == 0 || rb == 0 {
        return Err(Error::tr(format!(
            "{} operands must have rank >= 1",
            ctx.op_type()
        )));
    }
    let (a, b) = (
        if ra == 1 { ctx.unsqueeze(a, &[0])? } else { a },
        if rb == 1 { ctx.unsqueeze(b, &[1])? } else { b },
    );
    let (ra2, rb2) = (ra.max(2), rb.max(2));
    let op = if ra2 == 2 && rb2 == 2 {
        "MatMulV2"
    } else {
        "BatchMatMulV2"
    };
    let mut y = ctx.op1(op, &[a, b], vec![])?;
    let yr = ra2.max(rb2) as i64;
    let mut sq = Vec::new();
    if ra == 1 {
        sq.push(yr - 2);
    }
    if rb == 1 {
        sq.push(yr - 1);
    }
    if !sq.is_empty() {
        y = ctx.squeeze(y, &sq)?;
    }
    Ok(y)
}

/// Integer operands less their zero points, in int32 (exact), then an int32 product.
fn matmul_integer(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
    let mut ops = Vec::new();
    for (i, zi) in [(0usize, 2usize), (1, 3)] {
        let x = ctx.input(i)?;
        let mut v = ctx.cast(x, DataType::INT32)?;
        if let Some(zp) = ctx.opt_input(zi)? {
            let zd = ctx.rank_dims(zi)?;
            let mut zp = ctx.cast(zp, DataType::INT32)?;
            if i == 0 && zd.len() == 1 && zd[0] != 1 {
                // a per-row zero point of A: [M] -> [M, 1]
                zp = ctx.unsqueeze(zp, &[1])?;
            }
            v = ctx.op1("Sub", &[v, zp], vec![])?;
        }
        ops.push(v);
    }
    Ok(vec![Some(matmul_ports(ctx, ops[0], ops[1], ra, rb)?)])
}

fn qlinear_matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(3)?);
    let a = dequant(ctx, 0, 1, 2, 1)?;
    let b = dequant(ctx, 3, 4, 5, 1)?;
    let y = matmul_ports(ctx, a, b, ra, rb)?;
    Ok(vec![Some(requant(ctx, y, 6, 7)?)])
}

/// The geometry attributes of a convolution node over input 0 and weight `wi`.
fn conv_window(ctx: &NodeCtx<'_>, wi: usize) -> Result<(Window, i64)> {
    ctx.known_attrs(&[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "pads",
        "strides",
    ])?;
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "{} needs an input of rank >= 3 (N, C, spatial dims), got {xd:?}",
            ctx.op_type()
        )));
    }
    let k = kernel_shape(ctx, xd.len() - 2, wi)?;
    let win = window(ctx, k, &xd[2..])?;
    let group = ctx.attr_i("group", 1)?;
    if group < 1 {
        return Err(Error::tr(format!(
            "attribute 'group' must be >= 1, got {group}"
        )));
    }
    Ok((win, group))
}

/// Float convolution of the operands less their zero points, cast to int32. Exact while every
/// partial sum stays below 2^24 (f32's integer range).
fn conv_integer(ctx: &mut NodeCtx<'_>) -> Out {
    let (win, group) = conv_window(ctx, 1)?;
    let mut ops = Vec::new();
    for (i, zi) in [(0usize, 2usize), (1, 3)] {
        let r = ctx.input_rank(i)?;
        let x = ctx.input(i)?;
        let mut v = ctx.cast(x, DataType::FLOAT)?;
        if ctx.has_input(zi) {
            let zp = per_axis(ctx, zi, 0, r)?;
            let zp = ctx.cast(zp, DataType::FLOAT)?;
            v = ctx.op1("Sub", &[v, zp], vec![])?;
        }
        ops.push(v);
    }
    let y = conv_core(ctx, ops[0], ops[1], None, &win, group)?;
    Ok(vec![Some(ctx.cast(y, DataType::INT32)?)])
}

fn qlinear_conv(ctx: &mut NodeCtx<'_>) -> Out {
    let (win, group) = conv_window(ctx, 3)?;
    let x = dequant(ctx, 0, 1, 2, 1)?;
    let w = dequant(ctx, 3, 4, 5, 0)?;
    let y = conv_core(ctx, x, w, None, &win, group)?;
    let r = ctx.input_rank(0)?;
    let y = if let Some(b) = ctx.opt_input(8)? {
        // int32 bias in units of x_scale * w_scale (per output channel when w_scale is).
        let b = ctx.cast(b, DataType::FLOAT)?;
        let xs = ctx.input(1)?;
        let xs = ctx.cast(xs, DataType::FLOAT)?;
        let ws = ctx.input(4)?;
        let ws = ctx.cast(ws, DataType::FLOAT)?;
        let s = ctx.op1("Mul", &[xs, ws], vec![])?;
        let b = ctx.op1("Mul", &[b, s], vec![])?;
        let mut shape = vec![1i64, -1];
        shape.resize(r, 1);
        let sh = ctx.const_i64(&shape, &[r as i64])?;
        let b = ctx.op1("Reshape", &[b, sh], vec![])?;
        ctx.op1("Add", &[y, b], vec![])?
    } else {
        y
    };
    Ok(vec![Some(requant(ctx, y, 6, 7)?)])
}

// ---------------------------------------------------------------------------------------------
// Losses
// ---------------------------------------------------------------------------------------------

/// NegativeLogLikelihoodLoss of the log-probabilities `x` ([N, C, d...]) at the targets of input
/// `ti`, weighted by input `wi` when present.
fn nll(ctx: &mut NodeCtx<'_>, x: OutPort, ti: usize, wi: usize) -> Result<OutPort> {
    let reduction = ctx.attr_s("reduction", "mean")?;
    if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
        return Err(Error::tr(format!(
            "reduction must be none, sum or mean, got {reduction:?}"
        )));
    }
    let ignore = if ctx.has_attr("ignore_index") {
        Some(ctx.attr_i("ignore_index", 0)?)
    } else {
        None
    };
    let tr = ctx.input_rank(ti)?;
    let dt = ctx.desc(x)?.dtype;
    let t = ctx.input(ti)?;
    let t = ctx.cast(t, DataType::INT64)?;
    let (t, mask) = match ignore {
        Some(ii) => {
            let iiv = ctx.const_i64(&[ii], &[])?;
            let mask = ctx.op1("Equal", &[t, iiv], vec![])?;
            let zero = ctx.const_i64(&[0], &[])?;
            let safe = ctx.op1("SelectV2", &[mask, zero, t], vec![])?;
            (safe, Some(mask))
        }
        None => (t, None),
    };
    let tu = ctx.unsqueeze(t, &[1])?;
    let g = ctx.op1("GatherElements", &[x, tu], vec![("dim", AttrValue::Int(1))])?;
    let g = ctx.squeeze(g, &[1])?;
    let mut loss = ctx.op1("Neg", &[g], vec![])?;
    let mut w = match ctx.opt_input(wi)? {
        Some(wt) => {
            let axis = ctx.const_i64(&[0], &[])?;
            Some(ctx.op1("GatherV2", &[wt, t, axis], vec![])?)
        }
        None => None,
    };
    if let Some(mask) = mask {
        let zero = ctx.const_of(dt, &[0.0], &[])?;
        let base = match w {
            Some(w) => w,
            None => {
                let one = ctx.const_of(dt, &[1.0], &[])?;
                let z = ctx.op1("ZerosLike", &[loss], vec![])?;
                ctx.op1("Add", &[z, one], vec![])?
            }
        };
        w = Some(ctx.op1("SelectV2", &[mask, zero, base], vec![])?);
    }
    if let Some(w) = w {
        loss = ctx.op1("Mul", &[loss, w], vec![])?;
    }
    if reduction == "none" {
        return Ok(loss);
    }
    let axes: Vec<i64> = (0..tr as i64).collect();
    let axes = ctx.const_i64(&axes, &[tr as i64])?;
    let sum = ctx.op1("ReduceSum", &[loss, axes], vec![])?;
    if reduction == "sum" {
        return Ok(sum);
    }
    match w {
        Some(w) => {
            let ws = ctx.op1("ReduceSum", &[w, axes], vec![])?;
            ctx.op1("RealDiv", &[sum, ws], vec![])
        }
        None => ctx.op1("ReduceMean", &[loss, axes], vec![]),
    }
}

fn nll_loss(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["ignore_index", "reduction"])?;
    let x = ctx.input(0)?;
    Ok(vec![Some(nll(ctx, x, 1, 2)?)])
}

fn softmax_cross_entropy(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["ignore_index", "reduction"])?;
    let x = ctx.input(0)?;
    let lp = ctx.op1("LogSoftmaxV2", &[x], vec![("axes", li(&[1]))])?;
    let loss = nll(ctx, lp, 1, 2)?;
    Ok(vec![Some(loss), Some(lp)])
}

/// A blocked scale or zero point (input `i`, the input's rank, dim `axis` holding one value
/// per block of `block` elements) repeated to the input's dims; others as [`per_axis`].
fn per_block(ctx: &mut NodeCtx<'_>, i: usize, axis: i64, r: usize, block: i64) -> Result<OutPort> {
    if block == 0 {
        return per_axis(ctx, i, axis, r);
    }
    if block < 0 {
        return Err(Error::tr(format!("block_size must be >= 0, got {block}")));
    }
    let d = ctx.rank_dims(i)?;
    let xd = ctx.rank_dims(0)?;
    if d.len() != r {
        return Err(Error::tr(format!(
            "{}: a blocked scale or zero point must have the input's rank {r}, got {d:?}",
            ctx.op_type()
        )));
    }
    let a = norm_axis(axis, r, "quantization axis")?;
    if d.iter().any(|&v| v < 0) || xd[a] < 0 {
        return Err(Error::unsupported(format!(
            "{}: blocked quantization needs the dims of the scale {d:?} and of the input's \
             axis at import",
            ctx.op_type()
        )));
    }
    if d[a] * block < xd[a] {
        return Err(Error::tr(format!(
            "{}: {} blocks of {block} do not cover the input's dim {}",
            ctx.op_type(),
            d[a],
            xd[a]
        )));
    }
    let p = ctx.input(i)?;
    let u = ctx.unsqueeze(p, &[a as i64 + 1])?;
    let mut mult = vec![1i64; r + 1];
    mult[a + 1] = block;
    let m = ctx.const_i64(&mult, &[r as i64 + 1])?;
    let t = ctx.op1("Tile", &[u, m], vec![])?;
    let mut shape = d.clone();
    shape[a] = d[a] * block;
    let s = ctx.const_i64(&shape, &[r as i64])?;
    let mut y = ctx.op1("Reshape", &[t, s], vec![])?;
    if shape[a] != xd[a] {
        let mask = ((1i64 << r) - 1) & !(1i64 << a);
        let mut end = vec![0i64; r];
        end[a] = xd[a];
        let b = ctx.const_i64(&vec![0; r], &[r as i64])?;
        let e = ctx.const_i64(&end, &[r as i64])?;
        let st1 = ctx.const_i64(&vec![1; r], &[r as i64])?;
        y = ctx.op1(
            "StridedSlice",
            &[y, b, e, st1],
            vec![
                ("begin_mask", AttrValue::Int(mask)),
                ("end_mask", AttrValue::Int(mask)),
            ],
        )?;
    }
    Ok(y)
}

/// MaxPool with its Indices output: values and flat indices ((n * C + c) * S + the spatial
/// offset, row-major, or column-major for storage_order 1) reduced together, one spatial dim
/// at a time from the last (so that ties keep the first in row-major order); x's dims must be
/// known.
fn max_pool_indices(ctx: &mut NodeCtx<'_>, col_major: bool) -> Result<Vec<Option<OutPort>>> {
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "MaxPool needs an input of rank >= 3 (N, C, spatial dims), got {xd:?}"
        )));
    }
    if xd.iter().any(|&v| v < 0) {
        return Err(Error::unsupported(format!(
            "MaxPool with the Indices output needs the input dims at import, got {xd:?}"
        )));
    }
    let r = xd.len();
    let n = r - 2;
    let k = required_kernel_shape(ctx, n)?;
    let win = window(ctx, k, &xd[2..])?;
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
        let mask = ((1i64 << r) - 1) & !(1i64 << axis);
        let mut acc: Option<(OutPort, OutPort)> = None;
        for j in 0..k {
            let mut begin = vec![0i64; r];
            let mut end = vec![0i64; r];
            let mut strides = vec![1i64; r];
            begin[axis] = j * d;
            end[axis] = j * d + (o - 1) * s + 1;
            strides[axis] = s;
            let bb = ctx.const_i64(&begin, &[r as i64])?;
            let ee = ctx.const_i64(&end, &[r as i64])?;
            let ss = ctx.const_i64(&strides, &[r as i64])?;
            let masks = vec![
                ("begin_mask", AttrValue::Int(mask)),
                ("end_mask", AttrValue::Int(mask)),
            ];
            let pv = ctx.op1("StridedSlice", &[vp, bb, ee, ss], masks.clone())?;
            let pi = ctx.op1("StridedSlice", &[ip, bb, ee, ss], masks)?;
            acc = Some(match acc {
                None => (pv, pi),
                Some((av, ai)) => {
                    let gt = ctx.op1("Greater", &[pv, av], vec![])?;
                    let v = ctx.op1("SelectV2", &[gt, pv, av], vec![])?;
                    let ix = ctx.op1("SelectV2", &[gt, pi, ai], vec![])?;
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
    let k = required_kernel_shape(ctx, n)?;
    let win = window(ctx, k, &xd[2..])?;
    let mut out = xd[..2].to_vec();
    for i in 0..n {
        out.push((xd[2 + i] - 1) * win.s[i] + win.k[i] - win.p0[i] - win.p1[i]);
    }
    if let Some(os) = ctx.const_ints(2, "output_shape")? {
        if os != out {
            // onnx's reference places the indices by their coordinates in the default shape,
            // runtimes by flat position in the given one: ambiguous, refused.
            return Err(Error::unsupported(format!(
                "MaxUnpool with an output_shape {os:?} other than the default {out:?}"
            )));
        }
    }
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
    let y = ctx.op1(
        "ScatterElements",
        &[zeros, i_f, xf],
        vec![("axis", AttrValue::Int(0))],
    )?;
    let shape = ctx.const_i64(&out, &[out.len() as i64])?;
    Ok(vec![Some(ctx.op1("Reshape", &[y, shape], vec![])?)])
}
