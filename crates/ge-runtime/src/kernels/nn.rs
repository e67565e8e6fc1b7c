//! Neural-network kernels: Conv2D and DepthwiseConv2D (im2col and one matrix product per image
//! and group, through ndarray's `general_mat_mul`, i.e. matrixmultiply), MaxPool/MaxPoolV3,
//! AvgPool/AvgPoolV2, GlobalAveragePool, BatchNorm, LayerNorm, InstanceNorm, GroupNorm, LRN and
//! PRelu.
//!
//! Convolutions compute f32 and f64 in their own precision, f16 and bf16 in f32 (rounded once at
//! the end), int8 in i64 (giving int32). Max pooling compares in the input's own dtype. Average
//! pooling and the normalisations accumulate in f64 and round once to the output dtype.
//!
//! Layouts are those the shape rules use, decided by `es_core::infer::layout`: x in the format
//! it states (NCHW or NHWC), else in `data_format`'s; a convolution filter in the format it
//! states (NCHW: [out, in/groups, kh, kw]; NHWC: [out, kh, kw, in/groups]; HWCN: [kh, kw,
//! in/groups, out]), else in the one x states, else NCHW. Pads are [top, bottom, left, right].

use super::index::{alloc, array, bad_attr, cast_to, numel, std_slice, str_attr, Pick};
use super::matmul::gemm_into;
use super::{input, norm_axis, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use crate::map_array;
use crate::par;
use crate::value::{Elem, Value};
use es_core::infer::layout;
use es_core::{DataType, Format};
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayView2, ArrayViewMut2, IxDyn, LinalgScalar};
use rustc_hash::FxHashMap;
use std::ops::Range;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The layout of feature map input `x` by `es_core::infer::layout::data_layout` (`default` is
/// data_format's default): true for NCHW, false for NHWC.
pub(super) fn layout_2d(info: &NodeInfo, x: usize, default: &str) -> Result<bool> {
    let df = str_attr(info, "data_format", default)?;
    let f = layout::data_layout(
        info.inputs.get(x).and_then(Option::as_ref),
        &df,
        layout::DATA_2D,
    )
    .map_err(|e| bad_attr(info, e))?;
    Ok(!layout::channel_last(f))
}

/// The positions of a 2-D convolution filter's [out, in/groups, kh, kw] dims (inputs `x` and
/// `filter`), its layout by `es_core::infer::layout::filter_layout`.
pub(super) fn filter_positions_of(info: &NodeInfo, x: usize, filter: usize) -> Result<[usize; 4]> {
    let fl = layout::filter_layout(
        info.inputs.get(filter).and_then(Option::as_ref),
        info.inputs.get(x).and_then(Option::as_ref),
        layout::FILTER_2D,
    )
    .map_err(|e| bad_attr(info, e))?;
    filter_positions(fl)
        .ok_or_else(|| Error::unsupported(format!("{} with a filter of format {fl}", info.op())))
}

/// A 4-value list attribute in data-format order: its (N, C) and (H, W) entries.
pub(super) fn four(
    info: &NodeInfo,
    name: &str,
    default: Option<[i64; 4]>,
    nchw: bool,
) -> Result<([i64; 2], [i64; 2])> {
    let v = match (info.ints(name)?, default) {
        (Some(v), _) => v,
        (None, Some(d)) => d.to_vec(),
        (None, None) => return Err(bad_attr(info, format!("attribute '{name}' is required"))),
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad_attr(
            info,
            format!("attribute '{name}' must have 4 values, got {v:?}"),
        ));
    };
    Ok(if nchw {
        ([a, b], [c, d])
    } else {
        ([a, d], [b, c])
    })
}

/// The H and W entries of a list attribute, each >= 1.
pub(super) fn positive_hw(info: &NodeInfo, name: &str, hw: [i64; 2]) -> Result<[usize; 2]> {
    let f = |v: i64| {
        usize::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
            bad_attr(
                info,
                format!("attribute '{name}' must have H and W values >= 1, got {hw:?}"),
            )
        })
    };
    Ok([f(hw[0])?, f(hw[1])?])
}

/// Explicit pads [top, bottom, left, right], each >= 0.
pub(super) fn pads_attr(info: &NodeInfo, name: &str) -> Result<[usize; 4]> {
    let v = info.ints(name)?.unwrap_or_else(|| vec![0; 4]);
    let bad = || {
        bad_attr(
            info,
            format!(
                "attribute '{name}' must be 4 values >= 0 [top, bottom, left, right], got {v:?}"
            ),
        )
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad());
    };
    let f = |x: i64| usize::try_from(x).map_err(|_| bad());
    Ok([f(a)?, f(b)?, f(c)?, f(d)?])
}

/// The elements of a float value as f64, in standard order.
pub(super) fn floats(x: &Value, what: &str) -> Result<Vec<f64>> {
    if !x.dtype().is_float() {
        return Err(Error::kernel(format!(
            "{what} must be a float tensor, got {}",
            x.dtype()
        )));
    }
    Ok(x.to_f64_vec())
}

/// A value of `dt` from f64 elements in standard order.
pub(super) fn from_f64(dt: DataType, dims: &[usize], v: Vec<f64>) -> Result<Value> {
    let a = Value::F64(array(dims, v)?);
    if dt == DataType::DOUBLE {
        Ok(a)
    } else {
        a.cast(dt)
    }
}

/// The dtype to round a float result to: the node's output dtype when it is a float, else `x`'s.
pub(super) fn float_out(out: Option<DataType>, x: DataType) -> DataType {
    match out {
        Some(d) if d.is_float() => d,
        _ if x.is_float() => x,
        _ => DataType::FLOAT,
    }
}

/// `len` elements of `s` from `start`.
pub(super) fn sub<T>(s: &[T], start: usize, len: usize) -> Result<&[T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

pub(super) fn sub_mut<T>(s: &mut [T], start: usize, len: usize) -> Result<&mut [T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get_mut(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

/// Per-group mean and (biased) variance of `x`, the group of element `i` being `gid(i)`.
fn group_stats(x: &[f64], groups: usize, gid: impl Fn(usize) -> usize) -> (Vec<f64>, Vec<f64>) {
    let mut sum = vec![0.0; groups];
    let mut cnt = vec![0usize; groups];
    for (i, &v) in x.iter().enumerate() {
        if let (Some(s), Some(c)) = (sum.get_mut(gid(i)), cnt.get_mut(gid(i))) {
            *s += v;
            *c += 1;
        }
    }
    let mean: Vec<f64> = sum.iter().zip(&cnt).map(|(&s, &c)| s / c as f64).collect();
    let mut sq = vec![0.0; groups];
    for (i, &v) in x.iter().enumerate() {
        let g = gid(i);
        if let (Some(s), Some(m)) = (sq.get_mut(g), mean.get(g)) {
            *s += (v - m) * (v - m);
        }
    }
    let var = sq.iter().zip(&cnt).map(|(&s, &c)| s / c as f64).collect();
    (mean, var)
}

/// `x` normalised per group and scaled per channel: (x - mean) / sqrt(var + eps) * g + b.
fn normalize(
    x: &[f64],
    (mean, var): (&[f64], &[f64]),
    eps: f64,
    gid: impl Fn(usize) -> usize,
    (gamma, beta): (&[f64], &[f64]),
    cid: impl Fn(usize) -> usize,
) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (g, c) = (gid(i), cid(i));
            let m = mean.get(g).copied().unwrap_or(f64::NAN);
            let s = var.get(g).copied().unwrap_or(f64::NAN);
            let a = gamma.get(c).copied().unwrap_or(f64::NAN);
            let b = beta.get(c).copied().unwrap_or(f64::NAN);
            (v - m) / (s + eps).sqrt() * a + b
        })
        .collect()
}

/// A per-channel parameter: `len` values.
fn param(v: &Value, len: usize, what: &str) -> Result<Vec<f64>> {
    if v.len() != len {
        return Err(Error::kernel(format!(
            "{what} has {} values, expected {len}",
            v.len()
        )));
    }
    Ok(v.to_f64_vec())
}

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------

/// One output dim of a convolution (floor mode); `None` when the dilated kernel does not fit
/// the padded input or a size does not fit i64.
pub(super) fn conv_out_size(
    size: usize,
    k: usize,
    s: usize,
    d: usize,
    p0: usize,
    p1: usize,
) -> Option<usize> {
    if k == 0 || s == 0 || d == 0 {
        return None;
    }
    let eff = d.checked_mul(k - 1)?.checked_add(1)?;
    let padded = size.checked_add(p0)?.checked_add(p1)?;
    if padded < eff || padded > i64::MAX as usize {
        return None;
    }
    Some((padded - eff) / s + 1)
}

/// TensorFlow's SAME padding of one dim: the output is ceil(size / s); the pads (extra at the
/// end) make the last window fit.
fn same_pads(size: usize, k: usize, s: usize, d: usize) -> Option<(usize, usize)> {
    if k == 0 || s == 0 || d == 0 {
        return None;
    }
    let eff = d.checked_mul(k - 1)?.checked_add(1)?;
    let out = size.div_ceil(s);
    let need = out.saturating_sub(1).checked_mul(s)?.checked_add(eff)?;
    let total = need.saturating_sub(size);
    Some((total / 2, total - total / 2))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ConvPad {
    Explicit([usize; 4]),
    Same,
    Valid,
}

#[derive(Clone, Copy, Debug)]
struct ConvAttrs {
    nchw: bool,
    s: [usize; 2],
    d: [usize; 2],
    pad: ConvPad,
    /// `None`: depthwise (one group per input channel).
    groups: Option<usize>,
    /// Filter dims of (out channels, in channels, kh, kw).
    fpos: [usize; 4],
    out: DataType,
}

/// The geometry of one convolution, NCHW.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    o: usize,
    groups: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    pt: usize,
    pl: usize,
    oh: usize,
    ow: usize,
}

impl Geom {
    #[allow(clippy::too_many_arguments)]
    fn new(
        (n, c, h, w): (usize, usize, usize, usize),
        o: usize,
        groups: usize,
        (kh, kw): (usize, usize),
        s: [usize; 2],
        d: [usize; 2],
        pad: ConvPad,
    ) -> Result<Geom> {
        let bad = || Error::kernel("internal error: bad convolution geometry");
        let [pt, pb, pl, pr] = match pad {
            ConvPad::Explicit(p) => p,
            ConvPad::Valid => [0; 4],
            ConvPad::Same => {
                let (a, b) = same_pads(h, kh, s[0], d[0]).ok_or_else(bad)?;
                let (c, e) = same_pads(w, kw, s[1], d[1]).ok_or_else(bad)?;
                [a, b, c, e]
            }
        };
        let out = |what: &str, size, k, s, d, p0, p1| {
            conv_out_size(size, k, s, d, p0, p1).ok_or_else(|| {
                Error::kernel(format!(
                    "output {what} would be empty: input {size} + pads {p0} + {p1} is smaller \
                     than the kernel {k} dilated by {d}"
                ))
            })
        };
        let oh = out("height", h, kh, s[0], d[0], pt, pb)?;
        let ow = out("width", w, kw, s[1], d[1], pl, pr)?;
        if groups == 0 || c % groups != 0 || !o.is_multiple_of(groups) {
            return Err(bad());
        }
        Ok(Geom {
            n,
            c,
            h,
            w,
            o,
            groups,
            kh,
            kw,
            sh: s[0],
            sw: s[1],
            dh: d[0],
            dw: d[1],
            pt,
            pl,
            oh,
            ow,
        })
    }
}

/// Unfolds the `cg` channels of one image and group (`xs`: [cg, h, w]) into `col`:
/// [cg * kh * kw, oh * ow], zeros where a window reads padding.
fn im2col<T: Copy>(xs: &[T], g: &Geom, cg: usize, col: &mut [T], zero: T) -> Result<()> {
    let (h, w) = (g.h as i64, g.w as i64);
    let (hw, pix) = (g.h * g.w, g.oh * g.ow);
    if pix == 0 {
        return Ok(());
    }
    let mut rows = col.chunks_exact_mut(pix);
    for c in 0..cg {
        let plane = sub(xs, c * hw, hw)?;
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let dst = rows
                    .next()
                    .ok_or_else(|| Error::kernel("internal error: im2col rows"))?;
                let ioff = (ki * g.dh) as i64 - g.pt as i64;
                let joff = (kj * g.dw) as i64 - g.pl as i64;
                for (oy, drow) in dst.chunks_exact_mut(g.ow).enumerate() {
                    let iy = (oy * g.sh) as i64 + ioff;
                    if iy < 0 || iy >= h {
                        drow.fill(zero);
                        continue;
                    }
                    let srow = sub(plane, iy as usize * g.w, g.w)?;
                    if g.sw == 1 {
                        let ow = g.ow as i64;
                        let lo = (-joff).clamp(0, ow) as usize;
                        let hi = (w - joff).clamp(0, ow) as usize;
                        if lo >= hi {
                            drow.fill(zero);
                            continue;
                        }
                        drow[..lo].fill(zero);
                        drow[hi..].fill(zero);
                        let s0 = (lo as i64 + joff) as usize;
                        drow[lo..hi].copy_from_slice(sub(srow, s0, hi - lo)?);
                    } else {
                        for (ox, v) in drow.iter_mut().enumerate() {
                            let ix = (ox * g.sw) as i64 + joff;
                            *v = if ix >= 0 && ix < w {
                                srow[ix as usize]
                            } else {
                                zero
                            };
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Adds the convolution of one input plane (`plane`: [h, w]) with one kh x kw kernel (`k`) to
/// one output plane (`out`: [oh, ow]), directly (depthwise convolutions: one input channel per
/// group, where a matrix product would have a single row).
fn conv_plane<T: LinalgScalar>(plane: &[T], k: &[T], g: &Geom, out: &mut [T]) -> Result<()> {
    let (h, w, ow) = (g.h as i64, g.w as i64, g.ow as i64);
    if g.ow == 0 {
        return Ok(());
    }
    for ki in 0..g.kh {
        for kj in 0..g.kw {
            let wv = *k
                .get(ki * g.kw + kj)
                .ok_or_else(|| Error::kernel("internal error: kernel out of bounds"))?;
            let ioff = (ki * g.dh) as i64 - g.pt as i64;
            let joff = (kj * g.dw) as i64 - g.pl as i64;
            // Columns ox whose input column ox * sw + joff lies in [0, w).
            let sw = g.sw as i64;
            let lo = if joff >= 0 { 0 } else { (-joff + sw - 1) / sw };
            let hi = if w - joff <= 0 {
                0
            } else {
                ((w - joff + sw - 1) / sw).min(ow)
            };
            if lo >= hi {
                continue;
            }
            let (lo, hi) = (lo as usize, hi as usize);
            for (oy, orow) in out.chunks_exact_mut(g.ow).enumerate() {
                let iy = (oy * g.sh) as i64 + ioff;
                if iy < 0 || iy >= h {
                    continue;
                }
                let srow = sub(plane, iy as usize * g.w, g.w)?;
                let s0 = (lo as i64 * sw + joff) as usize;
                if g.sw == 1 {
                    let src = sub(srow, s0, hi - lo)?;
                    for (d, &v) in orow[lo..hi].iter_mut().zip(src) {
                        *d = *d + wv * v;
                    }
                } else {
                    for (d, v) in orow[lo..hi]
                        .iter_mut()
                        .zip(srow.iter().skip(s0).step_by(g.sw))
                    {
                        *d = *d + wv * *v;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The convolution of NCHW `x` with OIHW `f` (f: [o, c / groups, kh, kw]): NCHW output.
fn conv_core<T: LinalgScalar + Send + Sync>(x: &[T], f: &[T], g: &Geom) -> Result<Vec<T>> {
    let cg = g.c / g.groups;
    let og = g.o / g.groups;
    if cg == 1 && g.groups > 1 {
        let (hw, khw, pix) = (g.h * g.w, g.kh * g.kw, numel(&[g.oh, g.ow])?);
        let mut y = alloc(numel(&[g.n, g.o, pix])?, T::zero())?;
        for ni in 0..g.n {
            for gi in 0..g.groups {
                let plane = sub(x, (ni * g.c + gi) * hw, hw)?;
                for oc in gi * og..(gi + 1) * og {
                    let k = sub(f, oc * khw, khw)?;
                    conv_plane(plane, k, g, sub_mut(&mut y, (ni * g.o + oc) * pix, pix)?)?;
                }
            }
        }
        return Ok(y);
    }
    let kk = numel(&[cg, g.kh, g.kw])?;
    let (hw, pix) = (g.h * g.w, numel(&[g.oh, g.ow])?);
    let mut y = alloc(numel(&[g.n, g.o, pix])?, T::zero())?;
    // A 1x1 kernel with unit strides and no padding reads the input as it is.
    let direct = g.kh == 1
        && g.kw == 1
        && g.sh == 1
        && g.sw == 1
        && g.pt == 0
        && g.pl == 0
        && g.oh == g.h
        && g.ow == g.w;
    let shape_err = |e: ndarray::ShapeError| Error::kernel(e.to_string());
    // Images in parallel when there are several and the work is large (each part has its own
    // im2col buffer); a single image parallelises inside its matrix products.
    let image = g.o * pix;
    let work = numel(&[g.n, g.o, pix, kk])? / par::MACS_PER_UNIT;
    par::for_chunks_mut(
        &mut y,
        image,
        if g.n > 1 { work } else { 0 },
        |start, ys| {
            let mut col = if direct {
                Vec::new()
            } else {
                alloc(numel(&[kk, pix])?, T::zero())?
            };
            for (i, yi) in ys.chunks_exact_mut(image.max(1)).enumerate() {
                let ni = start / image.max(1) + i;
                for gi in 0..g.groups {
                    let xs = sub(x, (ni * g.c + gi * cg) * hw, cg * hw)?;
                    let cols: &[T] = if direct {
                        xs
                    } else {
                        im2col(xs, g, cg, &mut col, T::zero())?;
                        &col
                    };
                    let a = ArrayView2::from_shape((og, kk), sub(f, gi * og * kk, og * kk)?)
                        .map_err(shape_err)?;
                    let b = ArrayView2::from_shape((kk, pix), cols).map_err(shape_err)?;
                    let c =
                        ArrayViewMut2::from_shape((og, pix), sub_mut(yi, gi * og * pix, og * pix)?)
                            .map_err(shape_err)?;
                    gemm_into(a, b, c);
                }
            }
            Ok(())
        },
    )?;
    Ok(y)
}

fn run_conv<T: Pick + LinalgScalar + Send + Sync>(
    x: &Value,
    f: &Value,
    bias: Option<&Value>,
    a: &ConvAttrs,
) -> Result<ArrayD<T>> {
    let xa = cast_to::<T>(x)?;
    let fa = cast_to::<T>(f)?;
    let (xs, fs) = (xa.shape(), fa.shape());
    if xs.len() != 4 || fs.len() != 4 {
        return Err(Error::kernel(format!(
            "a 2-D convolution needs 4-D x and filter, got {xs:?} and {fs:?}"
        )));
    }
    let (n, c, h, w) = if a.nchw {
        (xs[0], xs[1], xs[2], xs[3])
    } else {
        (xs[0], xs[3], xs[1], xs[2])
    };
    let [po, pc, ph, pw] = a.fpos;
    let (fo, fc, kh, kw) = (fs[po], fs[pc], fs[ph], fs[pw]);
    let mismatch = || {
        Error::kernel(format!(
            "channel mismatch: x {xs:?} has {c} channels, filter {fs:?} has {fc} (out {fo})"
        ))
    };
    let (groups, o, perm) = match a.groups {
        None => {
            // Depthwise: [kh, kw, C, K] (HWCN) gives C * K channels, channel c * K + k from
            // input channel c; a filter with one input channel ([C * K, 1, kh, kw]) is the same.
            if c == 0 {
                return Err(Error::kernel("depthwise convolution of x with no channels"));
            }
            let o = if fc == c {
                fo.checked_mul(c)
            } else if fc == 1 && fo % c == 0 {
                Some(fo)
            } else {
                None
            }
            .ok_or_else(mismatch)?;
            (c, o, [pc, po, ph, pw])
        }
        Some(g) => {
            if fc.checked_mul(g) != Some(c) || fo % g != 0 {
                return Err(Error::kernel(format!(
                    "channel mismatch: x {xs:?} has {c} channels, filter {fs:?} has {fc} per \
                     group and {fo} outputs, groups {g}"
                )));
            }
            (g, fo, [po, pc, ph, pw])
        }
    };
    let g = Geom::new((n, c, h, w), o, groups, (kh, kw), a.s, a.d, a.pad)?;
    let fv = fa.view().permuted_axes(IxDyn(&perm));
    let fstd = fv.as_standard_layout();
    let fsl = fstd
        .as_slice()
        .ok_or_else(|| Error::kernel("internal error: filter layout"))?;
    let xv = if a.nchw {
        xa.view()
    } else {
        xa.view().permuted_axes(IxDyn(&[0, 3, 1, 2]))
    };
    let xstd = xv.as_standard_layout();
    let xsl = xstd
        .as_slice()
        .ok_or_else(|| Error::kernel("internal error: input layout"))?;
    let mut y = conv_core(xsl, fsl, &g)?;
    if let Some(b) = bias {
        let b = cast_to::<T>(b)?;
        if b.len() != o {
            return Err(Error::kernel(format!(
                "bias has {} values, the convolution has {o} output channels",
                b.len()
            )));
        }
        let bs = std_slice(&b);
        let pix = g.oh * g.ow;
        if pix > 0 {
            for (k, chunk) in y.chunks_exact_mut(pix).enumerate() {
                let bv = bs[k % o];
                for v in chunk {
                    *v = *v + bv;
                }
            }
        }
    }
    let y = array(&[n, o, g.oh, g.ow], y)?;
    Ok(if a.nchw {
        y
    } else {
        y.permuted_axes(IxDyn(&[0, 2, 3, 1]))
            .as_standard_layout()
            .into_owned()
    })
}

/// Filter dims (out channels, in channels, kh, kw) by the filter's tensor format.
pub(super) fn filter_positions(f: Format) -> Option<[usize; 4]> {
    match f {
        // A filter stating no layout: its output channels lead in either of x's layouts.
        Format::ND => Some([0, 1, 2, 3]),
        f => layout::filter_positions(f).and_then(|p| p.try_into().ok()),
    }
}

fn conv_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let depthwise = op == "DepthwiseConv2D";
    let nchw = layout_2d(info, 0, "NHWC")?;
    let (_, s) = four(info, "strides", None, nchw)?;
    let s = positive_hw(info, "strides", s)?;
    let (_, d) = four(info, "dilations", Some([1; 4]), nchw)?;
    let d = positive_hw(info, "dilations", d)?;
    let pad = match str_attr(info, "padding", "")?.as_str() {
        "" => ConvPad::Explicit(pads_attr(info, "pads")?),
        "SAME" => ConvPad::Same,
        "VALID" => ConvPad::Valid,
        other => return Err(Error::unsupported(format!("{op} with padding {other:?}"))),
    };
    let groups =
        if depthwise {
            None
        } else {
            let g = info.int("groups", 1)?;
            Some(usize::try_from(g).ok().filter(|&g| g >= 1).ok_or_else(|| {
                bad_attr(info, format!("attribute 'groups' must be >= 1, got {g}"))
            })?)
        };
    if info.int("offset_x", 0)? != 0 {
        return Err(Error::unsupported(format!("{op} with offset_x != 0")));
    }
    if info.inputs.get(3).is_some_and(Option::is_some) {
        return Err(Error::unsupported(format!(
            "{op} with offset_w (quantized)"
        )));
    }
    let fpos = filter_positions_of(info, 0, 1)?;
    let a = ConvAttrs {
        nchw,
        s,
        d,
        pad,
        groups,
        fpos,
        out: info.out_dtype(0)?,
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let f = input(inputs, 1)?;
        let bias = inputs.get(2).copied().flatten();
        let y = match x {
            Value::F32(_) => Value::F32(run_conv::<f32>(x, f, bias, &a)?),
            Value::F64(_) => Value::F64(run_conv::<f64>(x, f, bias, &a)?),
            Value::F16(_) => Value::F16(run_conv::<f32>(x, f, bias, &a)?.mapv(f16::from_f32)),
            Value::BF16(_) => Value::BF16(run_conv::<f32>(x, f, bias, &a)?.mapv(bf16::from_f32)),
            Value::I8(_) => Value::I32(run_conv::<i64>(x, f, bias, &a)?.mapv(|v| v as i32)),
            v => {
                return Err(Error::kernel(format!(
                    "{op} of a {} tensor is not supported on the CPU backend",
                    v.dtype()
                )))
            }
        };
        let y = if y.dtype() != a.out && crate::value::supported_dtype(a.out) {
            y.cast(a.out)?
        } else {
            y
        };
        Ok(vec![y])
    }))
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum PoolPad {
    Same,
    Valid,
    /// Explicit [top, bottom, left, right]; ceil mode (PyTorch's rule: the last window starts
    /// inside the input or the leading pad).
    Explicit {
        pads: [usize; 4],
        ceil: bool,
    },
}

/// One pooled dim: the output size and the leading and trailing pads; `None` when the window
/// does not fit.
fn pool_dim(
    size: usize,
    k: usize,
    s: usize,
    pad: PoolPad,
    p: (usize, usize),
) -> Option<(usize, usize, usize)> {
    if k == 0 || s == 0 || size > i64::MAX as usize / 4 || k > i64::MAX as usize / 4 {
        return None;
    }
    match pad {
        PoolPad::Same => {
            let out = size.div_ceil(s);
            let total = (out.saturating_sub(1) * s + k).saturating_sub(size);
            Some((out, total / 2, total - total / 2))
        }
        PoolPad::Valid => (size >= k).then(|| ((size - k) / s + 1, 0, 0)),
        PoolPad::Explicit { ceil, .. } => {
            let (p0, p1) = p;
            let padded = size.checked_add(p0)?.checked_add(p1)?;
            if padded < k || padded > i64::MAX as usize / 4 {
                return None;
            }
            let mut o = if ceil {
                (padded - k).div_ceil(s) + 1
            } else {
                (padded - k) / s + 1
            };
            if ceil && (o - 1) * s >= size + p0 {
                o -= 1;
            }
            Some((o, p0, p1))
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Avg {
    /// Divide by the number of input elements in the window (not counting padding).
    pub(super) exclusive: bool,
    /// A fixed divisor (0: none).
    pub(super) divisor: usize,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct PoolAttrs {
    pub(super) nchw: bool,
    pub(super) k: [usize; 2],
    pub(super) s: [usize; 2],
    pub(super) pad: PoolPad,
    pub(super) global: bool,
    pub(super) avg: Option<Avg>,
}

struct PoolGeom {
    nchw: bool,
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    pt: usize,
    pb: usize,
    pl: usize,
    pr: usize,
    oh: usize,
    ow: usize,
}

impl PoolGeom {
    fn new(xs: &[usize], a: &PoolAttrs) -> Result<PoolGeom> {
        if xs.len() != 4 {
            return Err(Error::kernel(format!("pooling needs a 4-D x, got {xs:?}")));
        }
        let (n, c, h, w) = if a.nchw {
            (xs[0], xs[1], xs[2], xs[3])
        } else {
            (xs[0], xs[3], xs[1], xs[2])
        };
        let (k, s, pad) = if a.global {
            ([h, w], [1, 1], PoolPad::Valid)
        } else {
            (a.k, a.s, a.pad)
        };
        let p = match pad {
            PoolPad::Explicit { pads, .. } => pads,
            _ => [0; 4],
        };
        let dim = |what: &str, size, i: usize| {
            pool_dim(size, k[i], s[i], pad, (p[2 * i], p[2 * i + 1])).ok_or_else(|| {
                Error::kernel(format!(
                    "output {what} would be empty: input {size} with the pads is smaller than \
                     the window {}",
                    k[i]
                ))
            })
        };
        let (oh, pt, pb) = dim("height", h, 0)?;
        let (ow, pl, pr) = dim("width", w, 1)?;
        Ok(PoolGeom {
            nchw: a.nchw,
            n,
            c,
            h,
            w,
            kh: k[0],
            kw: k[1],
            sh: s[0],
            sw: s[1],
            pt,
            pb,
            pl,
            pr,
            oh,
            ow,
        })
    }

    fn xi(&self, n: usize, c: usize, y: usize, x: usize) -> usize {
        if self.nchw {
            ((n * self.c + c) * self.h + y) * self.w + x
        } else {
            ((n * self.h + y) * self.w + x) * self.c + c
        }
    }

    fn yi(&self, n: usize, c: usize, y: usize, x: usize) -> usize {
        if self.nchw {
            ((n * self.c + c) * self.oh + y) * self.ow + x
        } else {
            ((n * self.oh + y) * self.ow + x) * self.c + c
        }
    }

    fn out_dims(&self) -> Vec<usize> {
        if self.nchw {
            vec![self.n, self.c, self.oh, self.ow]
        } else {
            vec![self.n, self.oh, self.ow, self.c]
        }
    }

    /// One window: the input rows and columns it reads, and its size within the padded input.
    fn window(&self, oy: usize, ox: usize) -> (Range<usize>, Range<usize>, usize) {
        let span = |o: usize, s: usize, p0: usize, k: usize, size: usize, p1: usize| {
            let start = (o * s) as i64 - p0 as i64;
            let end = start + k as i64;
            let lo = start.max(0) as usize;
            let hi = end.clamp(0, size as i64) as usize;
            let padded = (end.min((size + p1) as i64) - start).max(0) as usize;
            (lo..hi.max(lo), padded)
        };
        let (ry, py) = span(oy, self.sh, self.pt, self.kh, self.h, self.pb);
        let (rx, px) = span(ox, self.sw, self.pl, self.kw, self.w, self.pr);
        (ry, rx, py * px)
    }

    /// Calls `f(out_index, rows, cols, padded_count, n, c)` for every output element.
    fn each(&self, mut f: impl FnMut(usize, Range<usize>, Range<usize>, usize, usize, usize)) {
        for n in 0..self.n {
            for c in 0..self.c {
                for oy in 0..self.oh {
                    for ox in 0..self.ow {
                        let (ry, rx, cnt) = self.window(oy, ox);
                        f(self.yi(n, c, oy, ox), ry, rx, cnt, n, c);
                    }
                }
            }
        }
    }
}

/// The larger of `b` (seen first) and `v`: `b` when it is NaN or `v` is not larger, so a NaN
/// anywhere in a window wins and of equal values the first seen is kept.
/// (Both tests always evaluated, so that loops over it vectorise into compares and blends.)
#[inline(always)]
fn keep_max<T: PartialOrd>(b: T, v: T) -> T {
    #[allow(clippy::eq_op)]
    let keep = (b != b) | (v <= b);
    if keep {
        b
    } else {
        v
    }
}

pub(super) fn max_pool<T: Copy + PartialOrd + Elem>(
    x: &ArrayD<T>,
    a: &PoolAttrs,
) -> Result<ArrayD<T>> {
    let g = PoolGeom::new(x.shape(), a)?;
    let src = std_slice(x);
    let low = T::from_f64(f64::NEG_INFINITY);
    let dims = g.out_dims();
    let mut y = alloc(numel(&dims)?, low)?;
    if g.nchw {
        max_pool_planes(&src, &g, low, &mut y)?;
        return array(&dims, y);
    }
    g.each(|at, ry, rx, _, n, c| {
        let mut m: Option<T> = None;
        for iy in ry {
            for ix in rx.clone() {
                if let Some(&v) = src.get(g.xi(n, c, iy, ix)) {
                    m = Some(m.map_or(v, |b| keep_max(b, v)));
                }
            }
        }
        if let (Some(slot), Some(m)) = (y.get_mut(at), m) {
            *slot = m;
        }
    });
    array(&dims, y)
}

/// NCHW max pooling plane by plane, separably: each input row's window maxima along W, then
/// those rows' maxima along H per output row. Rows and columns are visited in the order the
/// window-by-window scan visits them, so [`keep_max`] keeps the same element (NaN wins, the
/// first of equal values); a window with no input element gives `low`.
fn max_pool_planes<T: Copy + PartialOrd + Send + Sync>(
    src: &[T],
    g: &PoolGeom,
    low: T,
    y: &mut [T],
) -> Result<()> {
    let rows: Vec<Range<usize>> = (0..g.oh).map(|oy| g.window(oy, 0).0).collect();
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    if plane_out == 0 || y.is_empty() {
        return Ok(());
    }
    let work = numel(&[g.n, g.c, plane_out, g.kh * g.kw])?;
    par::for_chunks_mut(y, plane_out, work, |start, ys| {
        // tmp[iy][ox]: the maximum of input row iy over output column ox's window.
        let mut tmp: Vec<T> = Vec::with_capacity(g.h * g.ow);
        for (k, yp) in ys.chunks_exact_mut(plane_out).enumerate() {
            let p = start / plane_out + k;
            let xp = sub(src, p * plane_in, plane_in)?;
            tmp.clear();
            tmp.resize(g.h * g.ow, low);
            for (iy, t) in tmp.chunks_exact_mut(g.ow).enumerate() {
                row_maxima(sub(xp, iy * g.w, g.w)?, g, t);
            }
            // (y starts as `low`: a row of windows with no input row keeps it.)
            for (yr, r) in yp.chunks_exact_mut(g.ow).zip(&rows) {
                let mut iys = r.clone();
                if let Some(first) = iys.next() {
                    yr.copy_from_slice(sub(&tmp, first * g.ow, g.ow)?);
                }
                for iy in iys {
                    for (d, &v) in yr.iter_mut().zip(sub(&tmp, iy * g.ow, g.ow)?) {
                        *d = keep_max(*d, v);
                    }
                }
            }
        }
        Ok(())
    })
}

/// `t[ox]`: the maximum of input row `xr` over output column ox's window, tap by tap (a pass
/// per kernel column, vectorised at unit stride), in the window scan's order: the first valid
/// tap of each window assigns (tap 0, or the tap that reads input column 0 at the left edge),
/// later ones combine; windows with no valid tap keep `t`'s value.
fn row_maxima<T: Copy + PartialOrd>(xr: &[T], g: &PoolGeom, t: &mut [T]) {
    for j in 0..g.kw {
        let off = j as i64 - g.pl as i64;
        let (lo, hi) = super::convnd::span(t.len(), g.sw, off, xr.len());
        if lo >= hi {
            continue;
        }
        let ix = |ox: usize| (ox as i64 * g.sw as i64 + off) as usize;
        // Windows [lo, mid) take this tap first; [mid, hi) combine it.
        let mid = if j == 0 {
            hi
        } else if ix(lo) == 0 {
            lo + 1
        } else {
            lo
        };
        for (range, first) in [(lo..mid, true), (mid..hi, false)] {
            if range.is_empty() {
                continue;
            }
            let src = &xr[ix(range.start)..];
            let dst = &mut t[range];
            match (g.sw, first) {
                (1, true) => dst.copy_from_slice(&src[..dst.len()]),
                (1, false) => {
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = keep_max(*d, v);
                    }
                }
                (sw, true) => {
                    for (d, &v) in dst.iter_mut().zip(src.iter().step_by(sw)) {
                        *d = v;
                    }
                }
                (sw, false) => {
                    for (d, &v) in dst.iter_mut().zip(src.iter().step_by(sw)) {
                        *d = keep_max(*d, v);
                    }
                }
            }
        }
    }
}

pub(super) fn avg_pool(x: &Value, a: &PoolAttrs, avg: Avg, out: DataType) -> Result<Value> {
    let g = PoolGeom::new(x.shape(), a)?;
    let src = floats(x, "x")?;
    let dims = g.out_dims();
    let mut y = alloc(numel(&dims)?, 0.0f64)?;
    g.each(|at, ry, rx, padded, n, c| {
        let mut sum = 0.0;
        let mut cnt = 0usize;
        for iy in ry {
            for ix in rx.clone() {
                if let Some(&v) = src.get(g.xi(n, c, iy, ix)) {
                    sum += v;
                    cnt += 1;
                }
            }
        }
        let div = if avg.divisor > 0 {
            avg.divisor
        } else if avg.exclusive {
            cnt
        } else {
            padded
        };
        if let Some(slot) = y.get_mut(at) {
            *slot = sum / div as f64;
        }
    });
    from_f64(out, &dims, y)
}

fn pool_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let v1 = op == "MaxPool" || op == "AvgPool";
    let nchw = layout_2d(info, 0, if v1 { "NHWC" } else { "NCHW" })?;
    let mut hw = [[0usize; 2]; 2];
    for (i, name) in ["ksize", "strides"].into_iter().enumerate() {
        let (nc, v) = four(info, name, None, nchw)?;
        if nc != [1, 1] {
            return Err(Error::unsupported(format!(
                "{op} with {name} over N or C (N, C entries {nc:?})"
            )));
        }
        hw[i] = positive_hw(info, name, v)?;
    }
    let pad = if v1 {
        match str_attr(info, "padding", "")?.as_str() {
            "SAME" => PoolPad::Same,
            "VALID" => PoolPad::Valid,
            other => return Err(Error::unsupported(format!("{op} with padding {other:?}"))),
        }
    } else {
        match str_attr(info, "padding_mode", "CALCULATED")?.as_str() {
            "SAME" => PoolPad::Same,
            "VALID" => PoolPad::Valid,
            "CALCULATED" => PoolPad::Explicit {
                pads: pads_attr(info, "pads")?,
                ceil: info.bool("ceil_mode", false)?,
            },
            other => {
                return Err(Error::unsupported(format!(
                    "{op} with padding_mode {other:?}"
                )))
            }
        }
    };
    let avg = if op.starts_with("Avg") {
        let d = info.int("divisor_override", 0)?;
        Some(Avg {
            exclusive: v1 || info.bool("exclusive", true)?,
            divisor: usize::try_from(d).map_err(|_| {
                bad_attr(
                    info,
                    format!("attribute 'divisor_override' must be >= 0, got {d}"),
                )
            })?,
        })
    } else {
        None
    };
    let a = PoolAttrs {
        nchw,
        k: hw[0],
        s: hw[1],
        pad,
        global: !v1 && info.bool("global_pooling", false)?,
        avg,
    };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let y = match a.avg {
            Some(avg) => avg_pool(x, &a, avg, float_out(out, x.dtype()))?,
            None => map_array!(x, v => max_pool(v, &a)?),
        };
        Ok(vec![y])
    }))
}

fn global_avg_pool_factory(info: &NodeInfo) -> Result<Kernel> {
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        if xs.len() < 3 {
            return Err(Error::kernel(format!(
                "GlobalAveragePool needs x of rank >= 3, got {xs:?}"
            )));
        }
        let v = floats(x, "x")?;
        let inner: usize = xs[2..].iter().product();
        let y: Vec<f64> = if inner == 0 {
            vec![f64::NAN; xs[0] * xs[1]]
        } else {
            v.chunks_exact(inner)
                .map(|c| c.iter().sum::<f64>() / inner as f64)
                .collect()
        };
        let mut dims = vec![xs[0], xs[1]];
        dims.resize(xs.len(), 1);
        Ok(vec![from_f64(float_out(out, x.dtype()), &dims, y)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------

/// (channel axis, channels, elements after the channel axis) of `xs`.
fn channels(xs: &[usize], channel_last: bool) -> Result<(usize, usize, usize)> {
    if xs.len() < 2 {
        return Err(Error::kernel(format!(
            "x must have rank >= 2 (a channel dim), got {xs:?}"
        )));
    }
    let ca = if channel_last { xs.len() - 1 } else { 1 };
    Ok((ca, xs[ca], xs[ca + 1..].iter().product()))
}

/// BatchNorm (TensorFlow's FusedBatchNormV3). Inference (`is_training` false): y from the mean
/// and variance inputs, which batch_mean/batch_variance and reserve_space_1/2 pass through.
/// Training: y from the batch statistics (biased variance); batch_mean and batch_variance are
/// the running statistics, `(1 - f) * input + f * batch` with f = exponential_avg_factor (the
/// batch's own when f is 1 or the inputs are absent; the variance Bessel-corrected);
/// reserve_space_1/2 the batch mean and biased variance. reserve_space_3 is [0.0].
fn batch_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let eps = f64::from(info.float("epsilon", 1e-4)?);
    let channel_last = match str_attr(info, "data_format", "NHWC")?.as_str() {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => {
            return Err(Error::unsupported(format!(
                "BatchNorm with data_format {other:?}"
            )))
        }
    };
    let training = info.bool("is_training", true)?;
    let factor = f64::from(info.float("exponential_avg_factor", 1.0)?);
    let n_out = info.node.outputs.len();
    let y_dt = info.out_dtype(0).ok();
    let stat_dt = float_out(info.out_dtype(1).ok(), DataType::FLOAT);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let scale = param(input(inputs, 1)?, c, "scale")?;
        let offset = param(input(inputs, 2)?, c, "offset")?;
        let mean_in = match inputs.get(3).copied().flatten() {
            Some(v) => Some(param(v, c, "mean")?),
            None => None,
        };
        let var_in = match inputs.get(4).copied().flatten() {
            Some(v) => Some(param(v, c, "variance")?),
            None => None,
        };
        if !training {
            if let (Some(m), Some(v)) = (&mean_in, &var_in) {
                let factor: Vec<f64> = scale
                    .iter()
                    .zip(v)
                    .map(|(&a, &s)| a / (s + eps).sqrt())
                    .collect();
                let per = Affine {
                    shift: m,
                    factor: &factor,
                    offset: &offset,
                };
                let y = match x {
                    Value::F32(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::F64(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::F16(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::BF16(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    _ => None,
                };
                if let Some(y) = y.filter(|_| float_out(y_dt, x.dtype()) == x.dtype()) {
                    let mut out = vec![y];
                    for s in [m, v, m, v] {
                        out.push(from_f64(stat_dt, &[c], s.clone())?);
                    }
                    out.push(from_f64(stat_dt, &[1], vec![0.0])?);
                    out.truncate(n_out);
                    return Ok(out);
                }
            }
        }
        let xv = floats(x, "x")?;
        let (m, v, stats) = if training {
            let (bm, bv) = group_stats(&xv, c, cid);
            let count = xv.len().checked_div(c).unwrap_or(0);
            let adjust = if count > 1 {
                count as f64 / (count - 1) as f64
            } else {
                1.0
            };
            let blend = |old: &Option<Vec<f64>>, new: Vec<f64>| -> Vec<f64> {
                match old {
                    Some(o) if factor != 1.0 => o
                        .iter()
                        .zip(&new)
                        .map(|(&a, &b)| (1.0 - factor) * a + factor * b)
                        .collect(),
                    _ => new,
                }
            };
            let running_mean = blend(&mean_in, bm.clone());
            let running_var = blend(&var_in, bv.iter().map(|&s| s * adjust).collect());
            let stats = [running_mean, running_var, bm.clone(), bv.clone()];
            (bm, bv, stats)
        } else {
            let (Some(m), Some(v)) = (mean_in, var_in) else {
                return Err(Error::kernel(
                    "BatchNorm in inference (is_training=false) needs the mean and variance inputs",
                ));
            };
            let stats = [m.clone(), v.clone(), m.clone(), v.clone()];
            (m, v, stats)
        };
        let y = normalize(&xv, (&m, &v), eps, cid, (&scale, &offset), cid);
        let mut out = vec![from_f64(float_out(y_dt, x.dtype()), xs, y)?];
        for s in stats {
            out.push(from_f64(stat_dt, &[c], s)?);
        }
        out.push(from_f64(stat_dt, &[1], vec![0.0])?);
        out.truncate(n_out);
        Ok(out)
    }))
}

/// Per channel k: `y = (x - shift[k]) * factor[k] + offset[k]`.
#[derive(Clone, Copy)]
struct Affine<'a> {
    shift: &'a [f64],
    factor: &'a [f64],
    offset: &'a [f64],
}

/// [`Affine`] over the channels of a standard-layout `x` ([n, c, inner] or [n, inner, c] with
/// `channel_last`), in f64 per element and rounded once to x's dtype, split across the run's
/// threads; `None` when x is not in standard layout.
fn per_channel_affine<T: Elem>(
    x: &ArrayD<T>,
    channel_last: bool,
    c: usize,
    inner: usize,
    per: Affine<'_>,
) -> Result<Option<Value>> {
    let Some(xs) = x.as_slice() else {
        return Ok(None);
    };
    let Affine {
        shift,
        factor,
        offset,
    } = per;
    if shift.len() != c || factor.len() != c || offset.len() != c {
        return Err(Error::kernel(format!(
            "BatchNorm parameters need {c} values per channel"
        )));
    }
    // One unit: a channel's run of `inner` elements, or one position's `c` channels.
    let unit = if channel_last { c } else { inner }.max(1);
    let mut out = alloc(xs.len(), T::from_f64(0.0))?;
    par::for_chunks_mut(&mut out, unit, xs.len(), |start, chunk| {
        let src = &xs[start..start + chunk.len()];
        for (k, (dst, src)) in chunk.chunks_mut(unit).zip(src.chunks(unit)).enumerate() {
            if channel_last {
                for (j, (d, &e)) in dst.iter_mut().zip(src).enumerate() {
                    *d = T::from_f64((e.to_f64() - shift[j]) * factor[j] + offset[j]);
                }
            } else {
                let ch = (start / unit + k) % c;
                let (m, f, b) = (shift[ch], factor[ch], offset[ch]);
                for (d, &e) in dst.iter_mut().zip(src) {
                    *d = T::from_f64((e.to_f64() - m) * f + b);
                }
            }
        }
        Ok(())
    })?;
    let y = ArrayD::from_shape_vec(x.raw_dim(), out)
        .map_err(|e| Error::kernel(format!("internal error: {e}")))?;
    Ok(Some(T::wrap(y)))
}

/// A normalised tensor with each row's mean and variance.
type Normalised<Y> = (Y, Vec<f64>, Vec<f64>);

/// LayerNorm of a float `x` whose parameters cover the normalised dims (the usual case), row by
/// row: mean and variance in f64, y rounded once to x's dtype; rows split across the run's
/// threads. Returns y and each row's mean and variance; `None` for a layout or dtype this path
/// does not take.
fn layer_norm_rows(
    x: &Value,
    inner: usize,
    eps: f64,
    gamma: &[f64],
    beta: &[f64],
) -> Result<Option<Normalised<Value>>> {
    fn rows<T: Elem + Default>(
        a: &ArrayD<T>,
        inner: usize,
        eps: f64,
        gamma: &[f64],
        beta: &[f64],
    ) -> Result<Option<Normalised<ArrayD<T>>>> {
        let Some(data) = a.as_slice() else {
            return Ok(None);
        };
        let n_rows = data.len() / inner;
        // Each row's output, then its mean and variance: one buffer per row-chunk.
        let mut out = vec![T::default(); data.len()];
        let mut stats = vec![(0.0f64, 0.0f64); n_rows];
        let work = data.len().saturating_mul(4);
        let chunk_rows = n_rows.div_ceil(par::chunks_for(work).max(1)).max(1);
        type Part<'a, T> = (usize, (&'a mut [T], &'a mut [(f64, f64)]));
        let run = |(start_row, (ys, st)): Part<'_, T>| -> Result<()> {
            let mut row = Vec::with_capacity(inner);
            for (i, (y, st)) in ys.chunks_exact_mut(inner).zip(st.iter_mut()).enumerate() {
                row.clear();
                row.extend(
                    sub(data, (start_row + i) * inner, inner)?
                        .iter()
                        .map(|v| v.to_f64()),
                );
                let mean = row.iter().sum::<f64>() / inner as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
                let sd = (var + eps).sqrt();
                for (((y, &v), &g), &b) in y.iter_mut().zip(&row).zip(gamma).zip(beta) {
                    *y = T::from_f64((v - mean) / sd * g + b);
                }
                *st = (mean, var);
            }
            Ok(())
        };
        let parts: Vec<_> = out
            .chunks_mut(chunk_rows * inner)
            .zip(stats.chunks_mut(chunk_rows))
            .enumerate()
            .map(|(i, p)| (i * chunk_rows, p))
            .collect();
        if parts.len() > 1 {
            use rayon::prelude::*;
            par::install(|| parts.into_par_iter().try_for_each(run))?;
        } else {
            parts.into_iter().try_for_each(run)?;
        }
        let (mean, var) = stats.into_iter().unzip();
        Ok(Some((array(a.shape(), out)?, mean, var)))
    }
    Ok(match x {
        Value::F32(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::F32(y), m, v)),
        Value::F64(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::F64(y), m, v)),
        Value::F16(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::F16(y), m, v)),
        Value::BF16(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::BF16(y), m, v)),
        _ => None,
    })
}

fn layer_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let bna = info.int("begin_norm_axis", 0)?;
    let bpa = info.int("begin_params_axis", 0)?;
    let eps = f64::from(info.float("epsilon", 1e-7)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let r = xs.len();
        let (n, p) = (norm_axis(bna, r)?, norm_axis(bpa, r)?);
        let inner: usize = xs[n.min(r)..].iter().product();
        let plen: usize = xs[p.min(r)..].iter().product();
        let gamma = param(input(inputs, 1)?, plen, "gamma")?;
        let beta = param(input(inputs, 2)?, plen, "beta")?;
        let dt = |i: usize| float_out(outs.get(i).copied(), x.dtype());
        let fast = if plen == inner && inner > 0 && dt(0) == x.dtype() {
            layer_norm_rows(x, inner, eps, &gamma, &beta)?
        } else {
            None
        };
        let (y, mean, var) = match fast {
            Some(r) => r,
            None => {
                let xv = floats(x, "x")?;
                let groups = xv.len().checked_div(inner).unwrap_or(0);
                let gid = |i: usize| i / inner.max(1);
                let cid = |i: usize| i % plen.max(1);
                let (mean, var) = group_stats(&xv, groups, gid);
                let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
                (from_f64(dt(0), xs, y)?, mean, var)
            }
        };
        let mut sd = xs[..n.min(r)].to_vec();
        sd.resize(r, 1);
        let mut out = vec![y, from_f64(dt(1), &sd, mean)?, from_f64(dt(2), &sd, var)?];
        out.truncate(outs.len());
        Ok(out)
    }))
}

fn instance_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let channel_last = match str_attr(info, "data_format", "NDHWC")?.as_str() {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => {
            return Err(Error::unsupported(format!(
                "InstanceNorm with data_format {other:?}"
            )))
        }
    };
    let eps = f64::from(info.float("epsilon", 1e-6)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        if xs.len() < 3 {
            return Err(Error::kernel(format!(
                "InstanceNorm needs x of rank >= 3, got {xs:?}"
            )));
        }
        let (ca, c, inner) = channels(xs, channel_last)?;
        let per_n: usize = xs[1..].iter().product();
        let gamma = param(input(inputs, 1)?, c, "gamma")?;
        let beta = param(input(inputs, 2)?, c, "beta")?;
        let xv = floats(x, "x")?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let gid = |i: usize| (i / per_n.max(1)) * c + cid(i);
        let (mean, var) = group_stats(&xv, xs[0] * c, gid);
        let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
        let sd: Vec<usize> = (0..xs.len())
            .map(|i| if i == 0 || i == ca { xs[i] } else { 1 })
            .collect();
        let dt = |i: usize, like: DataType| float_out(outs.get(i).copied(), like);
        let sdt = input(inputs, 1)?.dtype();
        let mut out = vec![
            from_f64(dt(0, x.dtype()), xs, y)?,
            from_f64(dt(1, sdt), &sd, mean)?,
            from_f64(dt(2, sdt), &sd, var)?,
        ];
        out.truncate(outs.len());
        Ok(out)
    }))
}

fn group_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let groups = info.int("num_groups", 1)?;
    let groups = usize::try_from(groups)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| {
            bad_attr(
                info,
                format!("attribute 'num_groups' must be >= 1, got {groups}"),
            )
        })?;
    let channel_last = match str_attr(info, "data_format", "NHWC")?.as_str() {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" | "ND" => false,
        other => {
            return Err(Error::unsupported(format!(
                "GroupNorm with data_format {other:?}"
            )))
        }
    };
    let eps = f64::from(info.float("eps", 1e-4)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        if c % groups != 0 {
            return Err(Error::kernel(format!(
                "x {xs:?} has {c} channels, which num_groups {groups} does not divide"
            )));
        }
        let cpg = (c / groups).max(1);
        let per_n: usize = xs[1..].iter().product();
        let gamma = param(input(inputs, 1)?, c, "gamma")?;
        let beta = param(input(inputs, 2)?, c, "beta")?;
        let xv = floats(x, "x")?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let gid = |i: usize| (i / per_n.max(1)) * groups + cid(i) / cpg;
        let (mean, var) = group_stats(&xv, xs[0] * groups, gid);
        let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
        let sd = [xs[0], groups];
        let dt = |i: usize| float_out(outs.get(i).copied(), x.dtype());
        let mut out = vec![
            from_f64(dt(0), xs, y)?,
            from_f64(dt(1), &sd, mean)?,
            from_f64(dt(2), &sd, var)?,
        ];
        out.truncate(outs.len());
        Ok(out)
    }))
}

/// LRN (TensorFlow's formula): y = x / (bias + alpha * sum of x^2 over channels c - r ..= c + r)
/// ^ beta. The channel axis is 1, or the last for an x of format NHWC.
fn lrn_factory(info: &NodeInfo) -> Result<Kernel> {
    let r = info.int("depth_radius", 5)?;
    let r = usize::try_from(r).map_err(|_| {
        bad_attr(
            info,
            format!("attribute 'depth_radius' must be >= 0, got {r}"),
        )
    })?;
    let bias = f64::from(info.float("bias", 1.0)?);
    let alpha = f64::from(info.float("alpha", 1.0)?);
    let beta = f64::from(info.float("beta", 0.5)?);
    let region = str_attr(info, "norm_region", "ACROSS_CHANNELS")?;
    if region != "ACROSS_CHANNELS" {
        return Err(Error::unsupported(format!(
            "LRN with norm_region {region:?}"
        )));
    }
    let channel_last = info
        .inputs
        .first()
        .and_then(Option::as_ref)
        .is_some_and(|d| d.format == Format::NHWC);
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        let xv = floats(x, "x")?;
        let sq: Vec<f64> = xv.iter().map(|v| v * v).collect();
        let y: Vec<f64> = xv
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let ci = (i / inner.max(1)) % c.max(1);
                let base = i - ci * inner;
                let lo = ci.saturating_sub(r);
                let hi = ci.saturating_add(r).min(c.saturating_sub(1));
                let s: f64 = (lo..=hi).filter_map(|k| sq.get(base + k * inner)).sum();
                v / (bias + alpha * s).powf(beta)
            })
            .collect();
        Ok(vec![from_f64(float_out(out, x.dtype()), xs, y)?])
    }))
}

/// PRelu: x for x >= 0, weight * x otherwise; weight holds one value or one per channel (dim 1).
fn prelu_factory(info: &NodeInfo) -> Result<Kernel> {
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let w = input(inputs, 1)?.to_f64_vec();
        let xs = x.shape();
        let xv = floats(x, "x")?;
        let (c, inner) = match (w.len(), xs.len()) {
            (1, _) => (1, 1),
            (n, r) if r >= 2 && n == xs[1] => (n, xs[2..].iter().product::<usize>()),
            (n, _) => {
                return Err(Error::kernel(format!(
                    "weight has {n} values; expected 1 or the channels (dim 1) of x {xs:?}"
                )))
            }
        };
        let y: Vec<f64> = xv
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if v >= 0.0 {
                    v
                } else {
                    let a = w.get((i / inner.max(1)) % c.max(1)).copied().unwrap_or(0.0);
                    a * v
                }
            })
            .collect();
        Ok(vec![from_f64(float_out(out, x.dtype()), xs, y)?])
    }))
}

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("Conv2D", conv_factory);
    m.insert("DepthwiseConv2D", conv_factory);
    for op in ["MaxPool", "MaxPoolV3", "AvgPool", "AvgPoolV2"] {
        m.insert(op, pool_factory);
    }
    m.insert("GlobalAveragePool", global_avg_pool_factory);
    m.insert("BatchNorm", batch_norm_factory);
    m.insert("LayerNorm", layer_norm_factory);
    m.insert("InstanceNorm", instance_norm_factory);
    m.insert("GroupNorm", group_norm_factory);
    m.insert("LRN", lrn_factory);
    m.insert("PRelu", prelu_factory);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The NCHW plane-by-plane max pool keeps exactly the element the window-by-window scan
        /// keeps (NaN, the first of +0/-0): checked against the NHWC scan of the same data.
        #[test]
        fn separable_max_pool_matches_the_window_scan(
            (n, c, h, w) in (1usize..3, 1usize..4, 1usize..9, 1usize..9),
            k in (1usize..4, 1usize..4),
            s in (1usize..4, 1usize..4),
            pads in proptest::array::uniform4(0usize..3),
            ceil in any::<bool>(),
            same in any::<bool>(),
            picks in proptest::collection::vec(0usize..6, 512),
        ) {
            const VALUES: [f32; 6] = [f32::NAN, 0.0, -0.0, 1.0, -2.0, f32::NEG_INFINITY];
            let len = n * c * h * w;
            let data: Vec<f32> = (0..len).map(|i| VALUES[picks[i % picks.len()]]).collect();
            let x = ArrayD::from_shape_vec(IxDyn(&[n, c, h, w]), data).unwrap();
            // Pads smaller than the window, as the operators require.
            let pads = [pads[0] % k.0, pads[1] % k.0, pads[2] % k.1, pads[3] % k.1];
            let pad = if same { PoolPad::Same } else { PoolPad::Explicit { pads, ceil } };
            let attrs = |nchw| PoolAttrs {
                nchw,
                k: [k.0, k.1],
                s: [s.0, s.1],
                pad,
                global: false,
                avg: None,
            };
            let planes = max_pool(&x, &attrs(true));
            let nhwc = x.view().permuted_axes(IxDyn(&[0, 2, 3, 1])).as_standard_layout().into_owned();
            let scan = max_pool(&nhwc, &attrs(false));
            match (planes, scan) {
                (Ok(a), Ok(b)) => {
                    let b = b.permuted_axes(IxDyn(&[0, 3, 1, 2]));
                    prop_assert_eq!(a.shape(), b.shape());
                    for (p, q) in a.iter().zip(b.iter()) {
                        prop_assert_eq!(p.to_bits(), q.to_bits());
                    }
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "one failed: {:?} vs {:?}", a.err(), b.err()),
            }
        }
    }

    #[test]
    fn conv_output_sizes() {
        // 5 wide, kernel 3: 3 (valid), 5 with pads 1/1, 3 with stride 2 and pads 1/1.
        assert_eq!(conv_out_size(5, 3, 1, 1, 0, 0), Some(3));
        assert_eq!(conv_out_size(5, 3, 1, 1, 1, 1), Some(5));
        assert_eq!(conv_out_size(5, 3, 2, 1, 1, 1), Some(3));
        // Dilation 2: effective kernel 5.
        assert_eq!(conv_out_size(5, 3, 1, 2, 0, 0), Some(1));
        assert_eq!(conv_out_size(4, 3, 1, 2, 0, 0), None);
        assert_eq!(conv_out_size(5, 0, 1, 1, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 0, 1, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 1, usize::MAX, 0, 0), None);
        assert_eq!(conv_out_size(5, 3, 1, 1, usize::MAX, 1), None);
        // SAME: ceil(size / stride) outputs, the odd pad at the end.
        assert_eq!(same_pads(5, 3, 1, 1), Some((1, 1)));
        assert_eq!(same_pads(6, 3, 2, 1), Some((0, 1)));
        assert_eq!(same_pads(5, 1, 2, 1), Some((0, 0)));
    }

    #[test]
    fn pool_output_sizes() {
        let ex = |ceil| PoolPad::Explicit { pads: [0; 4], ceil };
        assert_eq!(pool_dim(5, 2, 2, ex(false), (0, 0)), Some((2, 0, 0)));
        assert_eq!(pool_dim(5, 2, 2, ex(true), (0, 0)), Some((3, 0, 0)));
        // ceil mode: a window starting in the trailing pad is dropped.
        assert_eq!(pool_dim(4, 2, 2, ex(true), (1, 1)), Some((3, 1, 1)));
        assert_eq!(pool_dim(5, 3, 2, PoolPad::Same, (0, 0)), Some((3, 1, 1)));
        assert_eq!(pool_dim(4, 3, 2, PoolPad::Same, (0, 0)), Some((2, 0, 1)));
        assert_eq!(pool_dim(5, 3, 2, PoolPad::Valid, (0, 0)), Some((2, 0, 0)));
        assert_eq!(pool_dim(2, 3, 1, PoolPad::Valid, (0, 0)), None);
        assert_eq!(pool_dim(2, 3, 0, PoolPad::Valid, (0, 0)), None);
        assert_eq!(pool_dim(2, 3, 1, ex(false), (usize::MAX, 1)), None);
    }

    fn arr<T>(dims: &[usize], v: Vec<T>) -> ArrayD<T> {
        ArrayD::from_shape_vec(IxDyn(dims), v).unwrap()
    }

    fn attrs(nchw: bool, pad: ConvPad, groups: Option<usize>) -> ConvAttrs {
        ConvAttrs {
            nchw,
            s: [1, 1],
            d: [1, 1],
            pad,
            groups,
            fpos: [0, 1, 2, 3],
            out: DataType::DOUBLE,
        }
    }

    #[test]
    fn conv_matches_a_direct_sum() {
        // x 1x1x3x3 = 1..9, 2x2 ones kernel, pads 1 on top/left only.
        let x = Value::F64(arr(&[1, 1, 3, 3], (1..=9).map(f64::from).collect()));
        let f = Value::F64(arr(&[1, 1, 2, 2], vec![1.0; 4]));
        let a = attrs(true, ConvPad::Explicit([1, 0, 1, 0]), Some(1));
        let y = run_conv::<f64>(&x, &f, None, &a).unwrap();
        assert_eq!(y.shape(), &[1, 1, 3, 3]);
        let want = [1., 3., 5., 5., 12., 16., 11., 24., 28.];
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
        // Bias, and NHWC gives the same numbers for one channel.
        let b = Value::F64(arr(&[1], vec![0.5]));
        let mut a2 = a;
        a2.nchw = false;
        let x2 = super::super::shape::reshape(&x, &[1, 3, 3, 1]).unwrap();
        let y2 = run_conv::<f64>(&x2, &f, Some(&b), &a2).unwrap();
        assert_eq!(y2.shape(), &[1, 3, 3, 1]);
        assert_eq!(
            y2.iter().copied().collect::<Vec<_>>(),
            want.iter().map(|v| v + 0.5).collect::<Vec<_>>()
        );
        // A mismatched filter and too much dilation are errors, not panics.
        let f3 = Value::F64(arr(&[1, 2, 2, 2], vec![1.0; 8]));
        assert!(run_conv::<f64>(&x, &f3, None, &a).is_err());
        let mut a3 = attrs(true, ConvPad::Valid, Some(1));
        a3.d = [5, 5];
        assert!(run_conv::<f64>(&x, &f, None, &a3).is_err());
    }

    #[test]
    fn depthwise_is_a_grouped_conv() {
        // 2 channels, multiplier 1, 1x1 kernel: y = x * w[c].
        let x = Value::F32(arr(&[1, 2, 1, 2], vec![1., 2., 3., 4.]));
        let f = Value::F32(arr(&[2, 1, 1, 1], vec![10., 100.]));
        let a = attrs(true, ConvPad::Valid, None);
        let y = run_conv::<f32>(&x, &f, None, &a).unwrap();
        assert_eq!(
            y.iter().copied().collect::<Vec<_>>(),
            vec![10., 20., 300., 400.]
        );
    }
}
