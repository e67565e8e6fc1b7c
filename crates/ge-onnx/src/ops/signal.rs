//! Signal ops: DFT, STFT.
//!
//! GE has no DFT operator in the library; both are composed of GE operators. The transform is
//! a product with cos/sin matrices built at run time (Range, Mul, FloorMod, Cos, Sin), so the
//! axis, the signal length and `dft_length` may all be run-time values (they are inputs since
//! opset 20, and often graph inputs). Angles are reduced modulo the length in integers and the
//! matrices are built in f64; where the product's size is known at import and small enough the
//! product is summed in f64 too and rounded once to the input's dtype (so an f32 DFT matches
//! numpy's to f32 rounding), else it is a BatchMatMulV2 in the input's dtype.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[("DFT", dft), ("STFT", stft)];

const F64: DataType = DataType::DOUBLE;
const I64: DataType = DataType::INT64;

/// Largest product (elements of the broadcast [..., n, K] term) summed in f64.
const F64_PRODUCT_MAX: i64 = 1 << 24;

/// What [`transform`] computes.
#[derive(Clone, Copy)]
struct Kind {
    inverse: bool,
    onesided: bool,
}

impl Kind {
    /// Output bins (or samples) for length `len`, and the output's component count.
    fn out_len(self, ctx: &mut NodeCtx<'_>, len: OutPort) -> Result<(OutPort, usize)> {
        if !self.inverse && self.onesided {
            let two = ctx.const_i64(&[2], &[])?;
            let one = ctx.const_i64(&[1], &[])?;
            let h = ctx.bin("FloorDiv", len, two)?;
            Ok((ctx.bin("Add", h, one)?, 2))
        } else {
            Ok((len, if self.inverse && self.onesided { 1 } else { 2 }))
        }
    }
}

/// `x` [..., n, c_in] (the transformed axis next to the component dim) transformed along
/// dim -2 with length `len` (int64 scalars `n` and `len`): forward (onesided keeps len/2 + 1
/// bins), inverse (1/len, conjugate), inverse onesided (numpy's irfft: the Hermitian extension,
/// a real output). Input samples past `len` are dropped, missing ones read as zeros. The result
/// is [..., K, c_out] in `x`'s dtype; `f64_product` sums the product in f64 (always for f64).
fn transform(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    n: OutPort,
    len: OutPort,
    c_in: usize,
    kind: Kind,
    f64_product: bool,
) -> Result<OutPort> {
    let dt = ctx.port_dtype(x)?;
    // GE's matrix products take no f64: a f64 input always sums elementwise.
    let f64_product = f64_product || dt == F64;
    let (k, c_out) = kind.out_len(ctx, len)?;
    // Angles 2 pi ((i j) mod len) / len, i the input index (column), j the output one (row).
    let i = ctx.iota(n, &[-1, 1])?;
    let j = ctx.iota(k, &[1, -1])?;
    let ij = ctx.bin("Mul", i, j)?;
    let ij = ctx.bin("FloorMod", ij, len)?;
    let ij = ctx.cast(ij, F64)?;
    let len_f = ctx.cast(len, F64)?;
    let tau = ctx.scalar(F64, 2.0 * std::f64::consts::PI)?;
    let step = ctx.bin("RealDiv", tau, len_f)?;
    let ang = ctx.bin("Mul", ij, step)?;
    let cos = ctx.un("Cos", ang)?;
    let sin = ctx.un("Sin", ang)?;
    // Per input row: whether it takes part, its Hermitian weight (irfft) and 1/len (inverse).
    let half = if kind.inverse && kind.onesided {
        let two = ctx.const_i64(&[2], &[])?;
        let one = ctx.const_i64(&[1], &[])?;
        let h = ctx.bin("FloorDiv", len, two)?;
        ctx.bin("Add", h, one)?
    } else {
        len
    };
    let valid = ctx.bin("Less", i, half)?;
    let mut f = ctx.cast(valid, F64)?;
    if kind.inverse && kind.onesided {
        // Bins 0 and len/2 (even len) count once, the others twice.
        let zero = ctx.const_i64(&[0], &[])?;
        let two = ctx.const_i64(&[2], &[])?;
        let i2 = ctx.bin("Mul", i, two)?;
        let e0 = ctx.bin("Equal", i, zero)?;
        let eh = ctx.bin("Equal", i2, len)?;
        let once = ctx.bin("LogicalOr", e0, eh)?;
        let w1 = ctx.scalar(F64, 1.0)?;
        let w2 = ctx.scalar(F64, 2.0)?;
        let w = ctx.op1("SelectV2", &[once, w1, w2], vec![])?;
        f = ctx.bin("Mul", f, w)?;
    }
    if kind.inverse {
        f = ctx.bin("RealDiv", f, len_f)?;
    }
    let cos = ctx.bin("Mul", cos, f)?;
    let sin = ctx.bin("Mul", sin, f)?;
    let (cos, sin) = if f64_product {
        (cos, sin)
    } else {
        (ctx.cast(cos, dt)?, ctx.cast(sin, dt)?)
    };
    // The real and imaginary parts of the input, [..., n].
    let parts = ctx.split_n(x, -1, c_in)?;
    let mut xs = Vec::with_capacity(c_in);
    for p in parts {
        let p = ctx.squeeze(p, &[-1])?;
        xs.push(if f64_product { ctx.cast(p, F64)? } else { p });
    }
    let prod = |ctx: &mut NodeCtx<'_>, v: OutPort, m: OutPort| -> Result<OutPort> {
        if f64_product {
            let v = ctx.unsqueeze(v, &[-1])?;
            let p = ctx.bin("Mul", v, m)?;
            let ax = ctx.const_i64(&[-2], &[1])?;
            ctx.op1(
                "ReduceSum",
                &[p, ax],
                vec![("keep_dims", es_core::AttrValue::Bool(false))],
            )
        } else {
            let v = ctx.unsqueeze(v, &[-2])?;
            let p = ctx.bin("BatchMatMulV2", v, m)?;
            ctx.squeeze(p, &[-2])
        }
    };
    // Forward: re = xr cos + xi sin, im = xi cos - xr sin; inverse: the conjugate signs.
    let rc = prod(ctx, xs[0], cos)?;
    let rs = prod(ctx, xs[0], sin)?;
    let (mut re, mut im) = (rc, rs);
    if kind.inverse {
        if c_in == 2 {
            let is = prod(ctx, xs[1], sin)?;
            let ic = prod(ctx, xs[1], cos)?;
            re = ctx.bin("Sub", rc, is)?;
            im = ctx.bin("Add", ic, rs)?;
        }
    } else if c_in == 2 {
        let is = prod(ctx, xs[1], sin)?;
        let ic = prod(ctx, xs[1], cos)?;
        re = ctx.bin("Add", rc, is)?;
        im = ctx.bin("Sub", ic, rs)?;
    } else {
        im = ctx.un("Neg", rs)?;
    }
    let re = ctx.unsqueeze(re, &[-1])?;
    let y = if c_out == 1 {
        re
    } else {
        let im = ctx.unsqueeze(im, &[-1])?;
        ctx.concat(&[re, im], -1)?
    };
    ctx.cast(y, dt)
}

/// Whether the f64 product fits: `elems` (the input's element count) times the output length
/// `k` bounded by [`F64_PRODUCT_MAX`], both known at import.
fn small_product(elems: Option<i64>, k: Option<i64>) -> bool {
    matches!((elems, k), (Some(e), Some(k)) if e.saturating_mul(k.max(1)) <= F64_PRODUCT_MAX)
}

/// The element count of static `dims`, when every dim is known.
fn static_elems(dims: &[i64]) -> Option<i64> {
    dims.iter()
        .try_fold(1i64, |a, &d| (d >= 0).then(|| a.saturating_mul(d)))
}

/// A scalar int64 input (`what`) at run time: the constant when known.
fn scalar_input(ctx: &mut NodeCtx<'_>, i: usize, what: &str) -> Result<(OutPort, Option<i64>)> {
    if let Some(v) = ctx.const_ints(i, what).ok().flatten() {
        return match v.as_slice() {
            [x] => Ok((ctx.const_i64(&[*x], &[])?, Some(*x))),
            _ => Err(Error::tr(format!(
                "{}: {what} must hold one value",
                ctx.op_type()
            ))),
        };
    }
    if ctx.vec_len(i)?.is_some_and(|n| n != 1) {
        return Err(Error::tr(format!(
            "{}: {what} must hold one value",
            ctx.op_type()
        )));
    }
    let p = ctx.input(i)?;
    let p = ctx.cast(p, I64)?;
    let s = ctx.const_i64(&[], &[0])?;
    Ok((ctx.op1("Reshape", &[p, s], vec![])?, None))
}

/// DFT along `axis` (an attribute before opset 20, an input since): the axis is moved next to
/// the component dim (a run-time permutation when the axis is a run-time value), transformed,
/// and moved back.
fn dft(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "inverse", "onesided"])?;
    let kind = Kind {
        inverse: ctx.attr_i("inverse", 0)? != 0,
        onesided: ctx.attr_i("onesided", 0)? != 0,
    };
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    if !dt.is_float() {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    }
    let dims = ctx
        .input_dims(0)?
        .ok_or_else(|| unsupported(ctx, "the input's rank must be known at import"))?;
    let r = dims.len();
    if r < 2 {
        return Err(Error::tr(
            "DFT: the input needs a signal dim and a component dim",
        ));
    }
    let c_in = dims[r - 1];
    if c_in != 1 && c_in != 2 {
        return Err(Error::tr(format!(
            "DFT: the last dim must be 1 (real) or 2 (complex), got {c_in}"
        )));
    }
    // The axis: a constant (static permutation) or a run-time scalar.
    let axis: std::result::Result<usize, OutPort> = if ctx.opset >= 20 {
        if ctx.has_input(2) {
            match scalar_input(ctx, 2, "axis")? {
                (_, Some(a)) => Ok(norm_axis(a, r, "DFT axis")?),
                (p, None) => {
                    let rk = ctx.const_i64(&[r as i64], &[])?;
                    Err(wrap_negative(ctx, p, rk)?)
                }
            }
        } else {
            Ok(r - 2)
        }
    } else {
        if ctx.has_input(2) {
            return Err(Error::tr("DFT: axis is an attribute before opset 20"));
        }
        Ok(norm_axis(ctx.attr_i("axis", 1)?, r, "DFT axis")?)
    };
    if matches!(axis, Ok(a) if a == r - 1) {
        return Err(Error::tr("DFT: axis must not be the last (component) dim"));
    }
    let (xt, inv, n, n_static) = match axis {
        Ok(a) => {
            let mut perm: Vec<i64> = (0..r as i64 - 1).filter(|&i| i != a as i64).collect();
            perm.push(a as i64);
            perm.push(r as i64 - 1);
            let mut inv = vec![0i64; r];
            for (i, &p) in perm.iter().enumerate() {
                inv[p as usize] = i as i64;
            }
            let moved = a != r - 2;
            let xt = if moved { ctx.transpose(x, &perm)? } else { x };
            let inv = if moved {
                Some(ctx.const_i64(&inv, &[r as i64])?)
            } else {
                None
            };
            let n = ctx.dim_scalar(x, a)?;
            (xt, inv, n, Some(dims[a]).filter(|&d| d >= 0))
        }
        Err(a) => {
            let (perm, inv) = runtime_perm(ctx, a, r)?;
            let xt = ctx.op1("Transpose", &[x, perm], vec![])?;
            let s = ctx.shape_i64(x)?;
            let zero = ctx.const_i64(&[0], &[])?;
            let n = ctx.op1("GatherV2", &[s, a, zero], vec![])?;
            (xt, Some(inv), n, None)
        }
    };
    let (len, len_static) = if ctx.has_input(1) {
        let (p, v) = scalar_input(ctx, 1, "dft_length")?;
        if let Some(l) = v.filter(|&l| l < 1) {
            return Err(Error::tr(format!("DFT: dft_length {l} must be positive")));
        }
        (p, v)
    } else if kind.inverse && kind.onesided {
        let one = ctx.const_i64(&[1], &[])?;
        let two = ctx.const_i64(&[2], &[])?;
        let m = ctx.bin("Sub", n, one)?;
        (ctx.bin("Mul", m, two)?, n_static.map(|n| 2 * (n - 1)))
    } else {
        (n, n_static)
    };
    let k_bound = len_static.or_else(|| dims[..r - 1].iter().copied().max());
    let f64p = small_product(static_elems(&dims), k_bound);
    let mut y = transform(ctx, xt, n, len, c_in as usize, kind, f64p)?;
    if let Some(inv) = inv {
        y = ctx.op1("Transpose", &[y, inv], vec![])?;
    }
    one(y)
}

/// The permutation moving the run-time axis `a` (normalised, int64 scalar) of a rank-`r`
/// tensor next to its last dim, and its inverse, as int64 vectors.
fn runtime_perm(ctx: &mut NodeCtx<'_>, a: OutPort, r: usize) -> Result<(OutPort, OutPort)> {
    let a1 = ctx.unsqueeze(a, &[0])?;
    let last = ctx.const_i64(&[r as i64 - 1], &[1])?;
    // perm[p] = p + (p >= a) for p < r - 2, then a, then r - 1.
    let head: Vec<i64> = (0..r as i64 - 2).collect();
    let head = ctx.const_i64(&head, &[r as i64 - 2])?;
    let ge = ctx.bin("GreaterEqual", head, a)?;
    let ge = ctx.cast(ge, I64)?;
    let head = ctx.bin("Add", head, ge)?;
    let perm = ctx.concat(&[head, a1, last], 0)?;
    // inv[q] = r - 2 for q = a, q - (q > a) otherwise, for q < r - 1, then r - 1.
    let q: Vec<i64> = (0..r as i64 - 1).collect();
    let q = ctx.const_i64(&q, &[r as i64 - 1])?;
    let gt = ctx.bin("Greater", q, a)?;
    let gt = ctx.cast(gt, I64)?;
    let down = ctx.bin("Sub", q, gt)?;
    let eq = ctx.bin("Equal", q, a)?;
    let moved = ctx.const_i64(&[r as i64 - 2], &[])?;
    let inv = ctx.op1("SelectV2", &[eq, moved, down], vec![])?;
    let inv = ctx.concat(&[inv, last], 0)?;
    Ok((perm, inv))
}

/// STFT: frames `f * frame_step + t` (t < the frame length) gathered from the signal
/// [batch, length, c], weighted by the window, and transformed along the frame (forward,
/// onesided by default): [batch, frames, bins, 2], frames = 1 + (length - frame_length) /
/// frame_step. The frame length is `frame_length`, else the window's length, else the signal's.
fn stft(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["onesided"])?;
    let kind = Kind {
        inverse: false,
        onesided: ctx.attr_i("onesided", 1)? != 0,
    };
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    if !dt.is_float() {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    }
    let dims = ctx.input_dims(0)?;
    let dims = match dims {
        Some(d) if d.len() == 3 && (d[2] == 1 || d[2] == 2) => d,
        Some(d) if d.len() == 3 && d[2] >= 0 => {
            return Err(Error::tr(format!(
                "STFT: the signal's last dim must be 1 (real) or 2 (complex), got {}",
                d[2]
            )))
        }
        Some(d) if d.len() != 3 => {
            return Err(Error::tr(format!(
                "STFT: the signal must be [batch, length, 1 or 2], got rank {}",
                d.len()
            )))
        }
        _ => {
            return Err(unsupported(
                ctx,
                "the signal's rank and last dim must be known at import",
            ))
        }
    };
    let (step, step_v) = scalar_input(ctx, 1, "frame_step")?;
    if let Some(s) = step_v.filter(|&s| s < 1) {
        return Err(Error::tr(format!("STFT: frame_step {s} must be positive")));
    }
    let window = ctx.opt_input(2)?;
    let (flen, flen_v) = if ctx.has_input(3) {
        scalar_input(ctx, 3, "frame_length")?
    } else if let Some(w) = window {
        let v = ctx.static_dim(w, 0)?;
        (ctx.dim_scalar(w, 0)?, v)
    } else {
        (ctx.dim_scalar(x, 1)?, ctx.static_dim(x, 1)?)
    };
    if let Some(l) = flen_v.filter(|&l| l < 1) {
        return Err(Error::tr(format!(
            "STFT: frame_length {l} must be positive"
        )));
    }
    // frames = 1 + (length - frame_length) / step; idx[f, t] = f * step + t.
    let length = ctx.dim_scalar(x, 1)?;
    let d = ctx.bin("Sub", length, flen)?;
    let d = ctx.bin("FloorDiv", d, step)?;
    let one_i = ctx.const_i64(&[1], &[])?;
    let frames = ctx.bin("Add", d, one_i)?;
    let f = ctx.iota(frames, &[-1, 1])?;
    let t = ctx.iota(flen, &[1, -1])?;
    let fs = ctx.bin("Mul", f, step)?;
    let idx = ctx.bin("Add", fs, t)?;
    let ax = ctx.const_i64(&[1], &[])?;
    let mut xf = ctx.op1("GatherV2", &[x, idx, ax], vec![])?;
    if let Some(w) = window {
        let w = ctx.cast(w, dt)?;
        let w = ctx.unsqueeze(w, &[-1])?;
        xf = ctx.bin("Mul", xf, w)?;
    }
    let elems = match (static_elems(&dims), flen_v) {
        (Some(e), Some(l)) => Some(e.saturating_mul(l)),
        _ => None,
    };
    let f64p = small_product(elems, flen_v);
    let y = transform(ctx, xf, flen, flen, dims[2] as usize, kind, f64p)?;
    one(y)
}
