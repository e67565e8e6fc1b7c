//! Convolution kernels. Here Conv2D and DepthwiseConv2D (im2col and one matrix product per image
//! and group, through ndarray's `general_mat_mul`, i.e. matrixmultiply); in `nd` Conv3D,
//! Conv2DTranspose and DeformableConv2D (vol2col). The table below registers both.
//!
//! Convolutions compute f32 and f64 in their own precision, f16 and bf16 in f32 (rounded once at
//! the end), int8 in i64 (giving int32).
//!
//! Layouts are those the shape rules use, decided by `es_core::infer::layout`: x in the format
//! it states (NCHW or NHWC), else in `data_format`'s; a convolution filter in the format it
//! states (NCHW: [out, in/groups, kh, kw]; NHWC: [out, kh, kw, in/groups]; HWCN: [kh, kw,
//! in/groups, out]), else in the one x states, else NCHW. Pads are [top, bottom, left, right].

pub(super) mod nd;

use super::common::{filter_positions_of, four, layout_2d, pads_attr, positive_hw, sub, sub_mut};
use super::index::{alloc, array, bad_attr, cast_to, numel, std_slice, str_attr, Pick};
use super::matmul::gemm_into;
use super::{input, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use crate::par;
use crate::value::Value;
use es_core::infer::layout;
use es_core::{DataType, Format};
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayView2, ArrayViewMut2, IxDyn, LinalgScalar};
use rustc_hash::FxHashMap;

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

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("Conv2D", conv_factory);
    m.insert("DepthwiseConv2D", conv_factory);
    m.insert("Conv3D", nd::conv3d_factory);
    m.insert("Conv2DTranspose", nd::conv2d_transpose_factory);
    m.insert("DeformableConv2D", nd::deformable_conv2d_factory);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::arr;

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
