//! The N-D convolution kernels: Conv2DTranspose, Conv3D and DeformableConv2D.
//!
//! Conv3D and Conv2DTranspose share one 3-D engine (a 2-D convolution is a 3-D one of depth 1):
//! Conv3D unfolds each image and group (vol2col) and multiplies by the filter (`gemm_into`, as
//! MatMul: split across the run's threads when large); Conv2DTranspose, the gradient of Conv2D with respect
//! to its input, multiplies the transposed filter by x and scatters the columns back (col2vol).
//! DeformableConv2D fills its columns by bilinear sampling, then multiplies the same way.
//!
//! Dtypes (as conv/mod.rs's Conv2D): f32 and f64 compute in their own precision, f16 and bf16 in f32
//! rounded once at the end, int8 in i64 giving int32 (Conv2DTranspose, Conv3D); the result is
//! then cast to the node's output dtype when that differs. Pooling: max compares in x's dtype
//! (int8 giving int32), average sums in f64 and rounds once.
//!
//! Layouts. Conv3D: x NDHWC (default) or NCDHW; strides and dilations are 5 values in that order
//! (the N and C entries are ignored), pads 6 values [head, tail, top, bottom, left, right]; the
//! filter is read in its tensor format as the shape rule reads it (NCDHW, ND or NCHW: [out,
//! in/groups, kd, kh, kw]; NDHWC: [out, kd, kh, kw, in/groups]; DHWCN: [kd, kh, kw, in/groups,
//! out]). The 2-D ops: x NHWC (default) or NCHW, 4-value strides/dilations in that order, pads
//! [top, bottom, left, right], filters as conv/mod.rs's Conv2D (NCHW/ND, NHWC, HWCN).
//!
//! Conv2DTranspose: the filter is the forward Conv2D's, [x channels, y channels / groups, kh,
//! kw] in NCHW terms (PyTorch's ConvTranspose2d weight; TensorFlow's HWCN [kh, kw, y channels,
//! x channels]). `input_size` (y's shape in data_format order) must be a constant; it must agree
//! with x through GE's relation x_dim = (y_dim + pad_begin + pad_end - output_padding -
//! (dilation * (k - 1) + 1)) / stride + 1 (floor), which the shape rule's default size
//! satisfies. Output elements no window reaches are 0 (plus the bias).
//!
//! DeformableConv2D (GE's REG_OP, the mmcv/torchvision deformable convolution v2, v1 when
//! `modulated` is false): offsets are [N, Ho, Wo, P * dg * kh * kw] (NHWC; [N, P * dg * kh * kw,
//! Ho, Wo] for NCHW) with P = 3 (2 when not modulated) and channel index
//! `part * dg * kh * kw + g * kh * kw + i * kw + j`: part 0 the x (width) offsets, part 1 the y
//! (height) offsets, part 2 the masks (GE's order: torch_npu's DCNv2 puts mmcv's interleaved
//! (y, x) pairs in this order, x first). Input channel c uses deformable group
//! `c / (C / dg)`. Tap (i, j) of output (oy, ox) samples x at y = oy * sh - pad_top + i * dh +
//! dy, x = ox * sw - pad_left + j * dw + dx, bilinearly from the four neighbours
//! (floor(y), floor(x)) .. (+1, +1), a neighbour outside the image reading 0 (a NaN position
//! reads 0 too), times the mask.
//!

use super::conv_out_size;
use crate::error::{Error, Result};
use crate::kernels::common::{
    filter_positions_of, four, layout_2d, pads_attr, positive_hw, sub, sub_mut,
};
use crate::kernels::index::{
    alloc, array, bad_attr, cast_to, ints, numel, std_slice, str_attr, Pick,
};
use crate::kernels::matmul::gemm_into;
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::infer::layout;
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, CowArray, IxDyn, LinalgScalar};

// ---------------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------------

/// The spatial geometry of one convolution, 3-D (a 2-D one has depth 1): the forward
/// convolution reads `i` and writes `o`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vol {
    i: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    d: [usize; 3],
    /// Leading pads.
    p: [usize; 3],
    o: [usize; 3],
    in_len: usize,
    out_len: usize,
    k_len: usize,
}

const AXES: [&str; 3] = ["depth", "height", "width"];

impl Vol {
    fn new(
        i: [usize; 3],
        k: [usize; 3],
        (s, d, p): ([usize; 3], [usize; 3], [usize; 3]),
        o: [usize; 3],
    ) -> Result<Vol> {
        if k.contains(&0) || s.contains(&0) || d.contains(&0) {
            return Err(Error::kernel(format!(
                "a convolution needs kernel, strides and dilations >= 1, got kernel {k:?}, \
                 strides {s:?}, dilations {d:?}"
            )));
        }
        Ok(Vol {
            i,
            k,
            s,
            d,
            p,
            o,
            in_len: numel(&i)?,
            out_len: numel(&o)?,
            k_len: numel(&k)?,
        })
    }

    /// The forward convolution of `i` (floor mode); `p`: [begin, end] pads per dim.
    fn forward(
        i: [usize; 3],
        k: [usize; 3],
        s: [usize; 3],
        d: [usize; 3],
        p: [[usize; 2]; 3],
    ) -> Result<Vol> {
        let mut o = [0; 3];
        for a in 0..3 {
            let [p0, p1] = p[a];
            o[a] = conv_out_size(i[a], k[a], s[a], d[a], p0, p1).ok_or_else(|| {
                Error::kernel(format!(
                    "output {} would be empty: input {} + pads {p0} + {p1} is smaller than the \
                     kernel {} dilated by {}",
                    AXES[a], i[a], k[a], d[a]
                ))
            })?;
        }
        Vol::new(i, k, (s, d, [p[0][0], p[1][0], p[2][0]]), o)
    }

    /// The offset `q * d - p` of kernel tap `q` along dim `a`.
    fn off(&self, a: usize, q: usize) -> i64 {
        (q * self.d[a]) as i64 - self.p[a] as i64
    }

    /// Whether the unfolded input is the input itself (a 1x1x1 kernel, unit strides, no pads).
    fn direct(&self) -> bool {
        self.k == [1; 3] && self.s == [1; 3] && self.p == [0; 3] && self.o == self.i
    }
}

/// The outputs `j` in `[lo, hi)` (of `n`) whose input `j * s + off` lies in `[0, size)`.
pub(in crate::kernels) fn span(n: usize, s: usize, off: i64, size: usize) -> (usize, usize) {
    let (n, s, off, size) = (n as i128, s.max(1) as i128, i128::from(off), size as i128);
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let hi = if size - off <= 0 {
        0
    } else {
        ((size - off + s - 1) / s).min(n)
    };
    let lo = lo.min(hi);
    (lo as usize, hi as usize)
}

/// The input index of output `j` (inside its [`span`]).
fn at(j: usize, s: usize, off: i64) -> usize {
    (j as i64 * s as i64 + off) as usize
}

/// Calls `f(kernel row, output start, input start, count)` for every run of outputs along W
/// whose input is inside the volume, per kernel tap (row `r` of the columns) and output (z, y).
fn each_run(v: &Vol, mut f: impl FnMut(usize, usize, usize, usize) -> Result<()>) -> Result<()> {
    let [id, ih, iw] = v.i;
    let [_, oh, ow] = v.o;
    let mut r = 0;
    for kd in 0..v.k[0] {
        let (z0, z1) = span(v.o[0], v.s[0], v.off(0, kd), id);
        for kh in 0..v.k[1] {
            let (y0, y1) = span(oh, v.s[1], v.off(1, kh), ih);
            for kw in 0..v.k[2] {
                let (x0, x1) = span(ow, v.s[2], v.off(2, kw), iw);
                if x0 < x1 {
                    let ix0 = at(x0, v.s[2], v.off(2, kw));
                    for z in z0..z1 {
                        let iz = at(z, v.s[0], v.off(0, kd));
                        for y in y0..y1 {
                            let iy = at(y, v.s[1], v.off(1, kh));
                            f(
                                r,
                                (z * oh + y) * ow + x0,
                                (iz * ih + iy) * iw + ix0,
                                x1 - x0,
                            )?;
                        }
                    }
                }
                r += 1;
            }
        }
    }
    Ok(())
}

/// Unfolds the `cg` channels of one image and group (`xs`: [cg, i...]) into `col`:
/// [cg * k_len, out_len], zeros where a window reads padding.
fn vol2col<T: Copy>(xs: &[T], v: &Vol, cg: usize, col: &mut [T], zero: T) -> Result<()> {
    let (pix, sw) = (v.out_len, v.s[2]);
    col.fill(zero);
    for c in 0..cg {
        let src = sub(xs, c * v.in_len, v.in_len)?;
        let rows = sub_mut(col, c * v.k_len * pix, v.k_len * pix)?;
        each_run(v, |r, o0, i0, n| {
            let dst = sub_mut(rows, r * pix + o0, n)?;
            if sw == 1 {
                dst.copy_from_slice(sub(src, i0, n)?);
            } else {
                let s = sub(src, i0, (n - 1) * sw + 1)?;
                for (d, &x) in dst.iter_mut().zip(s.iter().step_by(sw)) {
                    *d = x;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Adds the columns `col` ([cg * k_len, out_len]) back into the volume `ys` ([cg, i...]): the
/// adjoint of [`vol2col`].
fn col2vol<T: LinalgScalar + Send + Sync>(
    col: &[T],
    v: &Vol,
    cg: usize,
    ys: &mut [T],
) -> Result<()> {
    let (pix, sw) = (v.out_len, v.s[2]);
    for c in 0..cg {
        let dst = sub_mut(ys, c * v.in_len, v.in_len)?;
        let rows = sub(col, c * v.k_len * pix, v.k_len * pix)?;
        each_run(v, |r, o0, i0, n| {
            let src = sub(rows, r * pix + o0, n)?;
            if sw == 1 {
                for (d, &x) in sub_mut(dst, i0, n)?.iter_mut().zip(src) {
                    *d = *d + x;
                }
            } else {
                let d = sub_mut(dst, i0, (n - 1) * sw + 1)?;
                for (d, &x) in d.iter_mut().step_by(sw).zip(src) {
                    *d = *d + x;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Batch and channels of a convolution: the forward convolution maps `c` channels to `o` in
/// `groups` groups (filter [o, c / groups, k...]).
#[derive(Clone, Copy, Debug)]
struct Chans {
    n: usize,
    c: usize,
    o: usize,
    groups: usize,
}

fn shape_err(e: ndarray::ShapeError) -> Error {
    Error::kernel(format!("internal error: {e}"))
}

/// The convolution of `x` ([n, c, i...]) with `f` ([o, c / groups, k...]): [n, o, o...].
fn conv_fwd<T: LinalgScalar + Send + Sync>(x: &[T], f: &[T], ch: Chans, v: &Vol) -> Result<Vec<T>> {
    let (cg, og) = (ch.c / ch.groups, ch.o / ch.groups);
    let kk = numel(&[cg, v.k_len])?;
    let pix = v.out_len;
    let mut y = alloc(numel(&[ch.n, ch.o, pix])?, T::zero())?;
    let direct = v.direct();
    let mut col = if direct {
        Vec::new()
    } else {
        alloc(numel(&[kk, pix])?, T::zero())?
    };
    for ni in 0..ch.n {
        for gi in 0..ch.groups {
            let xs = sub(x, (ni * ch.c + gi * cg) * v.in_len, cg * v.in_len)?;
            let cols: &[T] = if direct {
                xs
            } else {
                vol2col(xs, v, cg, &mut col, T::zero())?;
                &col
            };
            let a = ArrayView2::from_shape((og, kk), sub(f, gi * og * kk, og * kk)?)
                .map_err(shape_err)?;
            let b = ArrayView2::from_shape((kk, pix), cols).map_err(shape_err)?;
            let ys = sub_mut(&mut y, (ni * ch.o + gi * og) * pix, og * pix)?;
            let mut c = ArrayViewMut2::from_shape((og, pix), ys).map_err(shape_err)?;
            gemm_into(a, b, c.view_mut());
        }
    }
    Ok(y)
}

/// The gradient of [`conv_fwd`] with respect to its input: `x` ([n, o, o...], the forward
/// output) times the transposed filter, scattered into [n, c, i...].
fn conv_bwd_input<T: LinalgScalar + Send + Sync>(
    x: &[T],
    f: &[T],
    ch: Chans,
    v: &Vol,
) -> Result<Vec<T>> {
    let (cg, og) = (ch.c / ch.groups, ch.o / ch.groups);
    let kk = numel(&[cg, v.k_len])?;
    let pix = v.out_len;
    let mut y = alloc(numel(&[ch.n, ch.c, v.in_len])?, T::zero())?;
    let direct = v.direct();
    let mut col = if direct {
        Vec::new()
    } else {
        alloc(numel(&[kk, pix])?, T::zero())?
    };
    for ni in 0..ch.n {
        for gi in 0..ch.groups {
            let xs = sub(x, (ni * ch.o + gi * og) * pix, og * pix)?;
            let a = ArrayView2::from_shape((og, kk), sub(f, gi * og * kk, og * kk)?)
                .map_err(shape_err)?
                .reversed_axes();
            let b = ArrayView2::from_shape((og, pix), xs).map_err(shape_err)?;
            let ys = sub_mut(&mut y, (ni * ch.c + gi * cg) * v.in_len, cg * v.in_len)?;
            if direct {
                let mut c = ArrayViewMut2::from_shape((kk, pix), ys).map_err(shape_err)?;
                gemm_into(a, b, c.view_mut());
            } else {
                let mut c =
                    ArrayViewMut2::from_shape((kk, pix), &mut col[..]).map_err(shape_err)?;
                gemm_into(a, b, c.view_mut());
                col2vol(&col, v, cg, ys)?;
            }
        }
    }
    Ok(y)
}

/// Adds a per-channel bias to `y` ([n, ch, sp]).
fn add_bias<T: Pick + LinalgScalar>(
    y: &mut [T],
    bias: Option<&Value>,
    ch: usize,
    sp: usize,
) -> Result<()> {
    let Some(b) = bias else {
        return Ok(());
    };
    let b = cast_to::<T>(b)?;
    if b.len() != ch {
        return Err(Error::kernel(format!(
            "bias has {} values, the convolution has {ch} output channels",
            b.len()
        )));
    }
    let bs = std_slice(&b);
    if sp == 0 || ch == 0 {
        return Ok(());
    }
    for (k, chunk) in y.chunks_exact_mut(sp).enumerate() {
        let bv = bs[k % ch];
        for v in chunk {
            *v = *v + bv;
        }
    }
    Ok(())
}

/// `a` ([n, ..., c] when `last`, else [n, c, ...]) as [n, c, ...] in standard layout.
fn channels_first<T: Clone>(a: &ArrayD<T>, last: bool) -> CowArray<'_, T, IxDyn> {
    let r = a.ndim();
    if !last || r < 3 {
        return standard(a.view());
    }
    let mut perm = vec![0, r - 1];
    perm.extend(1..r - 1);
    standard(a.view().permuted_axes(IxDyn(&perm)))
}

/// `v` in standard layout, borrowed when it already is.
fn standard<T: Clone>(v: ArrayViewD<'_, T>) -> CowArray<'_, T, IxDyn> {
    if v.is_standard_layout() {
        CowArray::from(v)
    } else {
        CowArray::from(v.as_standard_layout().into_owned())
    }
}

/// `y` ([n, c, ...]) back to [n, ..., c] when `last`.
fn channels_back<T: Clone>(y: ArrayD<T>, last: bool) -> ArrayD<T> {
    let r = y.ndim();
    if !last || r < 3 {
        return y;
    }
    let mut perm = vec![0];
    perm.extend(2..r);
    perm.push(1);
    y.permuted_axes(IxDyn(&perm))
        .as_standard_layout()
        .into_owned()
}

/// The elements of a standard-layout array.
fn slice_of<'a, T>(a: &'a CowArray<'_, T, IxDyn>, what: &str) -> Result<&'a [T]> {
    a.as_slice()
        .ok_or_else(|| Error::kernel(format!("internal error: {what} layout")))
}

/// The filter `f` read in its format (`fpos`: the dims of out, in, spatial...) as
/// [out, in, spatial...], in standard layout.
fn filter_std<'a, T: Clone>(f: &'a ArrayD<T>, fpos: &[usize]) -> Result<CowArray<'a, T, IxDyn>> {
    if f.ndim() != fpos.len() {
        return Err(Error::kernel(format!(
            "the filter must be {}-D, got shape {:?}",
            fpos.len(),
            f.shape()
        )));
    }
    Ok(standard(f.view().permuted_axes(IxDyn(fpos))))
}

/// Spatial dims as 3-D (a leading 1 for 2-D).
fn three(sp: &[usize]) -> [usize; 3] {
    match *sp {
        [d, h, w] => [d, h, w],
        [h, w] => [1, h, w],
        _ => [1, 1, 1],
    }
}

// ---------------------------------------------------------------------------------------------
// Attributes and dtypes
// ---------------------------------------------------------------------------------------------

/// The attributes of a 2-D or 3-D convolution, spatial values as 3-D (depth 1, stride 1, no
/// pads for 2-D).
#[derive(Clone, Copy, Debug)]
struct ConvAttrs {
    /// Spatial rank: 2 or 3.
    rank: usize,
    /// Channels last (NHWC, NDHWC).
    last: bool,
    s: [usize; 3],
    d: [usize; 3],
    p: [[usize; 2]; 3],
    groups: usize,
    /// Filter dims of (out, in / groups, spatial...): `rank + 2` entries used.
    fpos: [usize; 5],
}

impl ConvAttrs {
    fn fpos(&self) -> &[usize] {
        &self.fpos[..self.rank + 2]
    }
}

/// `groups` (>= 1).
fn groups_attr(info: &NodeInfo, name: &str) -> Result<usize> {
    let g = info.int(name, 1)?;
    usize::try_from(g)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| bad_attr(info, format!("attribute '{name}' must be >= 1, got {g}")))
}

/// The 2-D attributes shared by Conv2DTranspose and DeformableConv2D.
fn conv2d_attrs(info: &NodeInfo, x_input: usize, filter_input: usize) -> Result<ConvAttrs> {
    let last = !layout_2d(info, x_input, "NHWC")?;
    let (_, s) = four(info, "strides", None, !last)?;
    let [sh, sw] = positive_hw(info, "strides", s)?;
    let (_, d) = four(info, "dilations", Some([1; 4]), !last)?;
    let [dh, dw] = positive_hw(info, "dilations", d)?;
    let [pt, pb, pl, pr] = pads_attr(info, "pads")?;
    let [a, b, c, e] = filter_positions_of(info, x_input, filter_input)?;
    Ok(ConvAttrs {
        rank: 2,
        last,
        s: [1, sh, sw],
        d: [1, dh, dw],
        p: [[0, 0], [pt, pb], [pl, pr]],
        groups: groups_attr(info, "groups")?,
        fpos: [a, b, c, e, 0],
    })
}

/// Refuses the quantization inputs and attributes (offset_x, offset_w).
fn no_quant(info: &NodeInfo, offset_w: usize) -> Result<()> {
    let op = info.op();
    if info.int("offset_x", 0)? != 0 {
        return Err(Error::unsupported(format!("{op} with offset_x != 0")));
    }
    if info.inputs.get(offset_w).is_some_and(Option::is_some) {
        return Err(Error::unsupported(format!(
            "{op} with offset_w (quantized)"
        )));
    }
    Ok(())
}

/// A computation generic over the compute type.
trait Compute {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>>;
}

/// Runs `c` in the compute type of `x`'s dtype (f32 for f16/bf16, i64 for int8 when `int8`),
/// and casts the result to `out` when given and different.
fn dispatch(
    op: &str,
    x: &Value,
    int8: bool,
    out: Option<DataType>,
    c: &impl Compute,
) -> Result<Value> {
    let y = match x {
        Value::F32(_) => Value::F32(c.run::<f32>()?),
        Value::F64(_) => Value::F64(c.run::<f64>()?),
        Value::F16(_) => Value::F16(c.run::<f32>()?.mapv(f16::from_f32)),
        Value::BF16(_) => Value::BF16(c.run::<f32>()?.mapv(bf16::from_f32)),
        Value::I8(_) if int8 => Value::I32(c.run::<i64>()?.mapv(|v| v as i32)),
        v => {
            return Err(Error::kernel(format!(
                "{op} of a {} tensor is not supported on the CPU backend",
                v.dtype()
            )))
        }
    };
    match out {
        Some(dt) if dt != y.dtype() && crate::value::supported_dtype(dt) => y.cast(dt),
        _ => Ok(y),
    }
}

// ---------------------------------------------------------------------------------------------
// Conv3D
// ---------------------------------------------------------------------------------------------

struct ConvRun<'a> {
    a: &'a ConvAttrs,
    x: &'a Value,
    f: &'a Value,
    bias: Option<&'a Value>,
}

impl Compute for ConvRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let a = self.a;
        let xa = cast_to::<T>(self.x)?;
        let fa = cast_to::<T>(self.f)?;
        let r = a.rank + 2;
        if xa.ndim() != r {
            return Err(Error::kernel(format!(
                "x must be {r}-D, got shape {:?}",
                xa.shape()
            )));
        }
        let xc = channels_first(&xa, a.last);
        let fc = filter_std(&fa, a.fpos())?;
        let (xs, fs) = (xc.shape(), fc.shape());
        let (n, c, fo, fi) = (xs[0], xs[1], fs[0], fs[1]);
        if fi.checked_mul(a.groups) != Some(c) || fo % a.groups != 0 {
            return Err(Error::kernel(format!(
                "channel mismatch: x {:?} has {c} channels, the filter {:?} has {fi} per group \
                 and {fo} outputs, groups {}",
                xa.shape(),
                fa.shape(),
                a.groups
            )));
        }
        let v = Vol::forward(three(&xs[2..]), three(&fs[2..]), a.s, a.d, a.p)?;
        let ch = Chans {
            n,
            c,
            o: fo,
            groups: a.groups,
        };
        let mut y = conv_fwd(slice_of(&xc, "x")?, slice_of(&fc, "filter")?, ch, &v)?;
        add_bias(&mut y, self.bias, fo, v.out_len)?;
        let mut dims = vec![n, fo];
        dims.extend_from_slice(&v.o[3 - a.rank..]);
        Ok(channels_back(array(&dims, y)?, a.last))
    }
}

pub(super) fn conv3d_factory(info: &NodeInfo) -> Result<Kernel> {
    let df = str_attr(info, "data_format", "NDHWC")?;
    let xl = layout::data_layout(
        info.inputs.first().and_then(Option::as_ref),
        &df,
        layout::DATA_3D,
    )
    .map_err(|e| bad_attr(info, e))?;
    let last = layout::channel_last(xl);
    let sp: [usize; 3] = if last { [1, 2, 3] } else { [2, 3, 4] };
    let five = |name: &str, default: Option<[i64; 5]>| -> Result<[usize; 3]> {
        let v = match (info.ints(name)?, default) {
            (Some(v), _) => v,
            (None, Some(d)) => d.to_vec(),
            (None, None) => return Err(bad_attr(info, format!("attribute '{name}' is required"))),
        };
        let bad = || {
            bad_attr(
                info,
                format!("attribute '{name}' must be 5 values with D, H and W >= 1, got {v:?}"),
            )
        };
        if v.len() != 5 {
            return Err(bad());
        }
        let mut out = [0; 3];
        for (o, &p) in out.iter_mut().zip(&sp) {
            *o = usize::try_from(v[p])
                .ok()
                .filter(|&x| x >= 1)
                .ok_or_else(bad)?;
        }
        Ok(out)
    };
    let s = five("strides", None)?;
    let d = five("dilations", Some([1; 5]))?;
    let pv = info
        .ints("pads")?
        .ok_or_else(|| bad_attr(info, "attribute 'pads' is required"))?;
    let bad_pads = || {
        bad_attr(
            info,
            format!(
                "attribute 'pads' must be 6 values >= 0 [head, tail, top, bottom, left, right], \
                 got {pv:?}"
            ),
        )
    };
    if pv.len() != 6 {
        return Err(bad_pads());
    }
    let mut p = [[0usize; 2]; 3];
    for (i, v) in pv.iter().enumerate() {
        p[i / 2][i % 2] = usize::try_from(*v).map_err(|_| bad_pads())?;
    }
    no_quant(info, 3)?;
    let fl = layout::filter_layout(
        info.inputs.get(1).and_then(Option::as_ref),
        info.inputs.first().and_then(Option::as_ref),
        layout::FILTER_3D,
    )
    .map_err(|e| bad_attr(info, e))?;
    let fpos: [usize; 5] = layout::filter_positions(fl)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| Error::unsupported(format!("Conv3D with a filter of format {fl}")))?;
    let a = ConvAttrs {
        rank: 3,
        last,
        s,
        d,
        p,
        groups: groups_attr(info, "groups")?,
        fpos,
    };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let r = ConvRun {
            a: &a,
            x,
            f: input(inputs, 1)?,
            bias: inputs.get(2).copied().flatten(),
        };
        Ok(vec![dispatch("Conv3D", x, true, out, &r)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// Conv2DTranspose
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct TransposeAttrs {
    conv: ConvAttrs,
    /// y's shape as [n, c, h, w].
    y: [usize; 4],
    /// output_padding of H and W.
    op: [usize; 2],
}

struct TransposeRun<'a> {
    a: &'a TransposeAttrs,
    x: &'a Value,
    f: &'a Value,
    bias: Option<&'a Value>,
}

impl Compute for TransposeRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let TransposeAttrs { conv: a, y: ys, op } = *self.a;
        let xa = cast_to::<T>(self.x)?;
        let fa = cast_to::<T>(self.f)?;
        if xa.ndim() != 4 {
            return Err(Error::kernel(format!(
                "x must be 4-D, got shape {:?}",
                xa.shape()
            )));
        }
        let xc = channels_first(&xa, a.last);
        let fc = filter_std(&fa, a.fpos())?;
        let (xs, fs) = (xc.shape(), fc.shape());
        let (n, cx, fo, fi) = (xs[0], xs[1], fs[0], fs[1]);
        if fo != cx || cx % a.groups != 0 || fi.checked_mul(a.groups) != Some(ys[1]) {
            return Err(Error::kernel(format!(
                "channel mismatch: x {:?} has {cx} channels, the filter {:?} has {fo} (its N \
                 dim) and {fi} outputs per group, groups {}, input_size has {} channels",
                xa.shape(),
                fa.shape(),
                a.groups,
                ys[1]
            )));
        }
        if n != ys[0] {
            return Err(Error::kernel(format!(
                "x {:?} has batch {n}, input_size has {}",
                xa.shape(),
                ys[0]
            )));
        }
        // GE's relation: x = (y + pads - (dilation * (k - 1) + 1) - output_padding) / s + 1.
        for i in 0..2 {
            let (a3, size, k) = (i + 1, ys[2 + i], fs[2 + i]);
            let [p0, p1] = a.p[a3];
            let (s, d) = (a.s[a3], a.d[a3]);
            let want = k
                .checked_sub(1)
                .and_then(|k1| d.checked_mul(k1))
                .and_then(|e| e.checked_add(1))
                .and_then(|e| e.checked_add(op[i]))
                .and_then(|need| {
                    let padded = size.checked_add(p0)?.checked_add(p1)?;
                    (padded <= i64::MAX as usize / 2)
                        .then(|| padded.checked_sub(need).map(|r| r / s + 1))?
                });
            if want != Some(xs[2 + i]) {
                return Err(Error::kernel(format!(
                    "x {:?} has {} {}, but input_size {} with kernel {k}, stride {s}, \
                     dilation {d}, pads {p0} + {p1} and output_padding {} gives {}",
                    xa.shape(),
                    xs[2 + i],
                    AXES[a3],
                    size,
                    op[i],
                    want.map_or("no output".to_string(), |w| w.to_string())
                )));
            }
        }
        let v = Vol::new(
            [1, ys[2], ys[3]],
            [1, fs[2], fs[3]],
            (a.s, a.d, [0, a.p[1][0], a.p[2][0]]),
            [1, xs[2], xs[3]],
        )?;
        let ch = Chans {
            n,
            c: ys[1],
            o: cx,
            groups: a.groups,
        };
        let mut y = conv_bwd_input(slice_of(&xc, "x")?, slice_of(&fc, "filter")?, ch, &v)?;
        add_bias(&mut y, self.bias, ys[1], v.in_len)?;
        Ok(channels_back(array(&ys, y)?, a.last))
    }
}

pub(super) fn conv2d_transpose_factory(info: &NodeInfo) -> Result<Kernel> {
    let conv = conv2d_attrs(info, 1, 2)?;
    no_quant(info, 4)?;
    let nchw = !conv.last;
    let (nc, hw) = four(info, "output_padding", Some([0; 4]), nchw)?;
    let bad_op = || {
        bad_attr(
            info,
            format!(
                "attribute 'output_padding' must be 0 for N and C and >= 0 for H and W, got \
                 N, C {nc:?} and H, W {hw:?}"
            ),
        )
    };
    if nc != [0, 0] {
        return Err(bad_op());
    }
    let op = [
        usize::try_from(hw[0]).map_err(|_| bad_op())?,
        usize::try_from(hw[1]).map_err(|_| bad_op())?,
    ];
    let size = ints(info.const_input(0, "input_size")?);
    let dims: Vec<usize> = size
        .iter()
        .map(|&v| usize::try_from(v))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            bad_attr(
                info,
                format!("input 'input_size' has a negative dim: {size:?}"),
            )
        })?;
    let &[a, b, c, d] = dims.as_slice() else {
        return Err(bad_attr(
            info,
            format!("input 'input_size' must hold 4 values, got {size:?}"),
        ));
    };
    let y = if nchw { [a, b, c, d] } else { [a, d, b, c] };
    numel(&y)?;
    let a = TransposeAttrs { conv, y, op };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 1)?;
        let r = TransposeRun {
            a: &a,
            x,
            f: input(inputs, 2)?,
            bias: inputs.get(3).copied().flatten(),
        };
        Ok(vec![dispatch("Conv2DTranspose", x, true, out, &r)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// DeformableConv2D
// ---------------------------------------------------------------------------------------------

/// One bilinear sample: the plane indices of its four neighbours (`usize::MAX` outside) and
/// their weights (times the mask).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tap<T> {
    idx: [usize; 4],
    w: [T; 4],
}

impl<T: Pick + LinalgScalar> Tap<T> {
    /// The sample of an `h` x `w` plane at (`y`, `x`), scaled by `m`.
    fn new(y: f64, x: f64, h: usize, w: usize, m: f64) -> Tap<T> {
        let (y0, x0) = (y.floor(), x.floor());
        let (ly, lx) = (y - y0, x - x0);
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        let inside = |yy: f64, xx: f64| {
            if yy >= 0.0 && yy < h as f64 && xx >= 0.0 && xx < w as f64 {
                yy as usize * w + xx as usize
            } else {
                usize::MAX
            }
        };
        Tap {
            idx: [
                inside(y0, x0),
                inside(y0, x0 + 1.0),
                inside(y0 + 1.0, x0),
                inside(y0 + 1.0, x0 + 1.0),
            ],
            w: [hy * hx, hy * lx, ly * hx, ly * lx].map(|v| T::from_f64(v * m)),
        }
    }

    fn sample(&self, plane: &[T]) -> T {
        let mut s = T::zero();
        for (&i, &w) in self.idx.iter().zip(&self.w) {
            if let Some(&v) = plane.get(i) {
                s = s + w * v;
            }
        }
        s
    }
}

#[derive(Clone, Copy, Debug)]
struct DeformAttrs {
    conv: ConvAttrs,
    dg: usize,
    modulated: bool,
}

struct DeformRun<'a> {
    a: &'a DeformAttrs,
    x: &'a Value,
    f: &'a Value,
    offsets: &'a Value,
    bias: Option<&'a Value>,
}

impl Compute for DeformRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let DeformAttrs {
            conv: a,
            dg,
            modulated,
        } = *self.a;
        let xa = cast_to::<T>(self.x)?;
        let fa = cast_to::<T>(self.f)?;
        let oa = cast_to::<f64>(self.offsets)?;
        if xa.ndim() != 4 || oa.ndim() != 4 {
            return Err(Error::kernel(format!(
                "x and offsets must be 4-D, got shapes {:?} and {:?}",
                xa.shape(),
                oa.shape()
            )));
        }
        let xc = channels_first(&xa, a.last);
        let fc = filter_std(&fa, a.fpos())?;
        let oc = channels_first(&oa, a.last);
        let (xs, fs, os) = (xc.shape(), fc.shape(), oc.shape());
        let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
        let (o, cg, kh, kw) = (fs[0], fs[1], fs[2], fs[3]);
        if cg.checked_mul(a.groups) != Some(c) || o % a.groups != 0 {
            return Err(Error::kernel(format!(
                "channel mismatch: x {:?} has {c} channels, the filter {:?} has {cg} per group \
                 and {o} outputs, groups {}",
                xa.shape(),
                fa.shape(),
                a.groups
            )));
        }
        if c % dg != 0 {
            return Err(Error::kernel(format!(
                "x {:?} has {c} channels, which deformable_groups {dg} does not divide",
                xa.shape()
            )));
        }
        let v = Vol::forward([1, h, w], [1, kh, kw], a.s, a.d, a.p)?;
        let (oh, ow, pix) = (v.o[1], v.o[2], v.out_len);
        let kk = v.k_len;
        let parts = if modulated { 3 } else { 2 };
        let chans = numel(&[parts, dg, kk])?;
        if os != [n, chans, oh, ow] {
            return Err(Error::kernel(format!(
                "offsets {:?} must hold {chans} channels (deformable_groups {dg} x kernel \
                 {kh}x{kw} x {parts}) at the output size {oh}x{ow} for batch {n}",
                oa.shape()
            )));
        }
        let (xsl, osl) = (slice_of(&xc, "x")?, slice_of(&oc, "offsets")?);
        let fsl = slice_of(&fc, "filter")?;
        let hw = h * w;
        let cpd = c / dg;
        let mut taps = alloc(
            numel(&[dg, kk, pix])?,
            Tap {
                idx: [usize::MAX; 4],
                w: [T::zero(); 4],
            },
        )?;
        let mut col = alloc(numel(&[c, kk, pix])?, T::zero())?;
        let mut y = alloc(numel(&[n, o, pix])?, T::zero())?;
        let (og, ckk) = (o / a.groups, cg * kk);
        let (sh, sw, dh, dw) = (a.s[1], a.s[2], a.d[1], a.d[2]);
        let (pt, pl) = (a.p[1][0] as f64, a.p[2][0] as f64);
        for ni in 0..n {
            let plane_of = |part: usize, g: usize, k: usize| {
                sub(osl, ((ni * parts + part) * dg * kk + g * kk + k) * pix, pix)
            };
            for g in 0..dg {
                for k in 0..kk {
                    let (ki, kj) = (k / kw, k % kw);
                    let dx = plane_of(0, g, k)?;
                    let dy = plane_of(1, g, k)?;
                    let mask = if modulated {
                        Some(plane_of(2, g, k)?)
                    } else {
                        None
                    };
                    let row = sub_mut(&mut taps, (g * kk + k) * pix, pix)?;
                    for (p, t) in row.iter_mut().enumerate() {
                        let (oy, ox) = (p / ow.max(1), p % ow.max(1));
                        let by = (oy * sh + ki * dh) as f64 - pt;
                        let bx = (ox * sw + kj * dw) as f64 - pl;
                        let m = mask.map_or(1.0, |m| m.get(p).copied().unwrap_or(0.0));
                        let (ddy, ddx) = (
                            dy.get(p).copied().unwrap_or(0.0),
                            dx.get(p).copied().unwrap_or(0.0),
                        );
                        *t = Tap::new(by + ddy, bx + ddx, h, w, m);
                    }
                }
            }
            for ci in 0..c {
                let plane = sub(xsl, (ni * c + ci) * hw, hw)?;
                let g = ci / cpd.max(1);
                for k in 0..kk {
                    let row = sub_mut(&mut col, (ci * kk + k) * pix, pix)?;
                    let tk = sub(&taps, (g * kk + k) * pix, pix)?;
                    for (d, t) in row.iter_mut().zip(tk) {
                        *d = t.sample(plane);
                    }
                }
            }
            for gi in 0..a.groups {
                let fa2 = ArrayView2::from_shape((og, ckk), sub(fsl, gi * og * ckk, og * ckk)?)
                    .map_err(shape_err)?;
                let b = ArrayView2::from_shape((ckk, pix), sub(&col, gi * ckk * pix, ckk * pix)?)
                    .map_err(shape_err)?;
                let ys = sub_mut(&mut y, (ni * o + gi * og) * pix, og * pix)?;
                let mut cm = ArrayViewMut2::from_shape((og, pix), ys).map_err(shape_err)?;
                gemm_into(fa2, b, cm.view_mut());
            }
        }
        add_bias(&mut y, self.bias, o, pix)?;
        Ok(channels_back(array(&[n, o, oh, ow], y)?, a.last))
    }
}

pub(super) fn deformable_conv2d_factory(info: &NodeInfo) -> Result<Kernel> {
    let conv = conv2d_attrs(info, 0, 1)?;
    let a = DeformAttrs {
        conv,
        dg: groups_attr(info, "deformable_groups")?,
        modulated: info.bool("modulated", true)?,
    };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let r = DeformRun {
            a: &a,
            x,
            f: input(inputs, 1)?,
            offsets: input(inputs, 2)?,
            bias: inputs.get(3).copied().flatten(),
        };
        Ok(vec![dispatch("DeformableConv2D", x, false, out, &r)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::{arr, factory, li, node, unsupported};
    use es_core::attr::AttrValue;

    /// A small deterministic pseudo-random sequence of integers in [-4, 4].
    fn ints_seq(n: usize, seed: u64) -> Vec<i64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) % 9) as i64 - 4
            })
            .collect()
    }

    fn attrs3(p: [[usize; 2]; 3], groups: usize) -> ConvAttrs {
        ConvAttrs {
            rank: 3,
            last: false,
            s: [1; 3],
            d: [1; 3],
            p,
            groups,
            fpos: [0, 1, 2, 3, 4],
        }
    }

    #[test]
    fn spans_of_outputs_reading_the_input() {
        // Pad 1 (offset -1), stride 1: output 0 reads the pad.
        assert_eq!(span(3, 1, -1, 3), (1, 3));
        assert_eq!(span(3, 1, 1, 3), (0, 2));
        // Stride 2, offset -1, size 5: outputs 1 and 2 read 1 and 3.
        assert_eq!(span(3, 2, -1, 5), (1, 3));
        assert_eq!(span(2, 1, 5, 3), (0, 0));
        assert_eq!(span(4, usize::MAX, -3, 2), (1, 1));
        assert_eq!(span(0, 1, 0, 3), (0, 0));
    }

    #[test]
    fn conv3d_of_depth_one_is_a_2d_conv() {
        // x 1..9 (3x3), 2x2 ones kernel, pads 1 on top/left only (as conv/mod.rs's test).
        let x = Value::F64(arr(&[1, 1, 1, 3, 3], (1..=9).map(f64::from).collect()));
        let f = Value::F64(arr(&[1, 1, 1, 2, 2], vec![1.0; 4]));
        let a = attrs3([[0, 0], [1, 0], [1, 0]], 1);
        let r = ConvRun {
            a: &a,
            x: &x,
            f: &f,
            bias: None,
        };
        let y = r.run::<f64>().unwrap();
        assert_eq!(y.shape(), &[1, 1, 1, 3, 3]);
        let want = [1., 3., 5., 5., 12., 16., 11., 24., 28.];
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
    }

    #[test]
    fn conv3d_sums_a_cube() {
        // x 1..8 (2x2x2), a 2x2x2 ones kernel, pads 1 everywhere: the centre sums all (36),
        // a corner reads one element.
        let x = Value::I8(arr(&[1, 2, 2, 2, 1], (1..=8).collect()));
        let f = Value::I8(arr(&[1, 2, 2, 2, 1], vec![1; 8]));
        let b = Value::I32(arr(&[1], vec![100]));
        let mut a = attrs3([[1, 1]; 3], 1);
        a.last = true;
        a.fpos = [0, 4, 1, 2, 3];
        let r = ConvRun {
            a: &a,
            x: &x,
            f: &f,
            bias: Some(&b),
        };
        let y = dispatch("Conv3D", &x, true, None, &r).unwrap();
        assert_eq!(y.shape(), &[1, 3, 3, 3, 1]);
        let v = y.to_i64_vec();
        assert_eq!(v[13], 136);
        assert_eq!(v[0], 101);
        assert_eq!(v[26], 108);
        assert_eq!(y.dtype(), DataType::INT32);
        // A bias of the wrong length and a mismatched filter are errors.
        let b2 = Value::I32(arr(&[2], vec![1, 2]));
        let r2 = ConvRun {
            a: &a,
            x: &x,
            f: &f,
            bias: Some(&b2),
        };
        assert!(r2.run::<i64>().is_err());
        let f2 = Value::I8(arr(&[1, 2, 2, 2, 2], vec![1; 16]));
        let r3 = ConvRun {
            a: &a,
            x: &x,
            f: &f2,
            bias: None,
        };
        assert!(r3.run::<i64>().is_err());
        // A kernel larger than the padded input.
        let mut a4 = a;
        a4.p = [[0, 0]; 3];
        a4.d = [3, 1, 1];
        let r4 = ConvRun {
            a: &a4,
            x: &x,
            f: &f,
            bias: None,
        };
        assert!(r4.run::<i64>().is_err());
    }

    #[test]
    fn transposed_conv_is_the_adjoint_of_the_conv() {
        // <conv(x), g> == <x, conv_transpose(g)> for a grouped, strided, dilated, padded 3-D
        // geometry (exact in integers).
        let ch = Chans {
            n: 2,
            c: 4,
            o: 6,
            groups: 2,
        };
        let v = Vol::forward(
            [3, 7, 6],
            [2, 3, 2],
            [1, 2, 3],
            [2, 1, 2],
            [[1, 0], [1, 2], [0, 1]],
        )
        .unwrap();
        let x = ints_seq(ch.n * ch.c * v.in_len, 1);
        let f = ints_seq(ch.o * (ch.c / ch.groups) * v.k_len, 2);
        let g = ints_seq(ch.n * ch.o * v.out_len, 3);
        let y = conv_fwd(&x, &f, ch, &v).unwrap();
        let xt = conv_bwd_input(&g, &f, ch, &v).unwrap();
        assert_eq!(y.len(), g.len());
        assert_eq!(xt.len(), x.len());
        let dot = |a: &[i64], b: &[i64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<i64>();
        assert_eq!(dot(&y, &g), dot(&x, &xt));
        assert_ne!(dot(&y, &g), 0);
    }

    #[test]
    fn conv2d_transpose_scatters_each_input() {
        // x 2x2 = 1..4, a 2x2 kernel [1, 10, 100, 1000], stride 2: each x value becomes a
        // 2x2 block of the 4x4 output.
        let input_size = Value::I32(arr(&[4], vec![1, 1, 4, 4]));
        let n = node(
            "Conv2DTranspose",
            &[
                ("strides", li(&[1, 1, 2, 2])),
                ("pads", li(&[0, 0, 0, 0])),
                ("data_format", AttrValue::String("NCHW".into())),
            ],
        );
        let k = factory(conv2d_transpose_factory, &n, vec![Some(input_size)]).unwrap();
        let x = Value::F32(arr(&[1, 1, 2, 2], vec![1., 2., 3., 4.]));
        let f = Value::F32(arr(&[1, 1, 2, 2], vec![1., 10., 100., 1000.]));
        let y = &k(&[None, Some(&x), Some(&f)]).unwrap()[0];
        assert_eq!(y.shape(), &[1, 1, 4, 4]);
        let want = [
            1., 10., 2., 20., 100., 1000., 200., 2000., 3., 30., 4., 40., 300., 3000., 400., 4000.,
        ];
        assert_eq!(y.to_f64_vec(), want);
        // An input_size the geometry does not give.
        let bad = Value::I32(arr(&[4], vec![1, 1, 6, 4]));
        let k = factory(conv2d_transpose_factory, &n, vec![Some(bad)]).unwrap();
        let e = k(&[None, Some(&x), Some(&f)]).unwrap_err().to_string();
        assert!(e.contains("input_size"), "{e}");
        // Channels: input_size's C must be the filter's per-group outputs times groups.
        let bad = Value::I32(arr(&[4], vec![1, 2, 4, 4]));
        let k = factory(conv2d_transpose_factory, &n, vec![Some(bad)]).unwrap();
        assert!(k(&[None, Some(&x), Some(&f)]).is_err());
    }

    #[test]
    fn conv2d_transpose_factory_errors() {
        let base = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[0, 0, 0, 0]))];
        let size = || Some(Value::I64(arr(&[4], vec![1, 3, 3, 1])));
        let n = node("Conv2DTranspose", &base);
        let e = unsupported(factory(conv2d_transpose_factory, &n, vec![None]));
        assert!(e.contains("non-constant input_size"), "{e}");
        let mut attrs = base.to_vec();
        attrs.push(("output_padding", li(&[1, 0, 0, 0])));
        let n = node("Conv2DTranspose", &attrs);
        assert!(factory(conv2d_transpose_factory, &n, vec![size()]).is_err());
        let mut attrs = base.to_vec();
        attrs.push(("offset_x", AttrValue::Int(3)));
        let n = node("Conv2DTranspose", &attrs);
        let e = unsupported(factory(conv2d_transpose_factory, &n, vec![size()]));
        assert!(e.contains("offset_x"), "{e}");
        let n = node("Conv2DTranspose", &base);
        let three = Some(Value::I64(arr(&[3], vec![1, 3, 3])));
        assert!(factory(conv2d_transpose_factory, &n, vec![three]).is_err());
        let neg = Some(Value::I64(arr(&[4], vec![1, -3, 3, 1])));
        assert!(factory(conv2d_transpose_factory, &n, vec![neg]).is_err());
    }

    fn deform(
        x: &Value,
        f: &Value,
        off: &Value,
        pads: [usize; 4],
        dg: usize,
        modulated: bool,
    ) -> Result<ArrayD<f64>> {
        let a = DeformAttrs {
            conv: ConvAttrs {
                rank: 2,
                last: false,
                s: [1; 3],
                d: [1; 3],
                p: [[0, 0], [pads[0], pads[1]], [pads[2], pads[3]]],
                groups: 1,
                fpos: [0, 1, 2, 3, 0],
            },
            dg,
            modulated,
        };
        DeformRun {
            a: &a,
            x,
            f,
            offsets: off,
            bias: None,
        }
        .run::<f64>()
    }

    #[test]
    fn deformable_conv_with_zero_offsets_is_a_conv() {
        let x = Value::F64(arr(&[1, 2, 3, 3], (0..18).map(f64::from).collect()));
        let fv: Vec<f64> = ints_seq(3 * 2 * 4, 7)
            .into_iter()
            .map(|v| v as f64)
            .collect();
        let f = Value::F64(arr(&[3, 2, 2, 2], fv.clone()));
        // dg 2, modulated: 3 * 2 * 4 channels at 3x3 (pads 1 on bottom/right); masks 1.
        let mut ov = vec![0.0; 24 * 9];
        ov[16 * 9..].fill(1.0);
        let off = Value::F64(arr(&[1, 24, 3, 3], ov));
        let y = deform(&x, &f, &off, [0, 1, 0, 1], 2, true).unwrap();
        let v = Vol::forward(
            [1, 3, 3],
            [1, 2, 2],
            [1; 3],
            [1; 3],
            [[0, 0], [0, 1], [0, 1]],
        )
        .unwrap();
        let ch = Chans {
            n: 1,
            c: 2,
            o: 3,
            groups: 1,
        };
        let xv: Vec<f64> = (0..18).map(f64::from).collect();
        let want = conv_fwd(&xv, &fv, ch, &v).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
        // Offsets of the wrong size, and channels that deformable_groups does not divide.
        let short = Value::F64(arr(&[1, 16, 3, 3], vec![0.0; 16 * 9]));
        assert!(deform(&x, &f, &short, [0, 1, 0, 1], 2, true).is_err());
        assert!(deform(&x, &f, &short, [0, 1, 0, 1], 2, false).is_ok());
        let off3 = Value::F64(arr(&[1, 36, 3, 3], vec![0.0; 36 * 9]));
        assert!(deform(&x, &f, &off3, [0, 1, 0, 1], 3, true).is_err());
    }

    #[test]
    fn deformable_conv_samples_bilinearly() {
        // One channel 1x3 = [1, 2, 4], a 1x1 kernel of 1, v1 (no mask).
        let x = Value::F64(arr(&[1, 1, 1, 3], vec![1., 2., 4.]));
        let f = Value::F64(arr(&[1, 1, 1, 1], vec![1.]));
        let run = |dx: [f64; 3], dy: [f64; 3]| {
            let mut v = dx.to_vec();
            v.extend(dy);
            let off = Value::F64(arr(&[1, 2, 1, 3], v));
            deform(&x, &f, &off, [0; 4], 1, false)
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>()
        };
        assert_eq!(run([0.; 3], [0.; 3]), [1., 2., 4.]);
        // x + 1: the last samples outside (0).
        assert_eq!(run([1.; 3], [0.; 3]), [2., 4., 0.]);
        // x + 0.5: the mean of two neighbours; the last half outside.
        assert_eq!(run([0.5; 3], [0.; 3]), [1.5, 3., 2.]);
        // y - 0.25: a quarter of the row above (outside) is lost; NaN reads 0.
        assert_eq!(run([0.; 3], [-0.25, f64::NAN, 0.]), [0.75, 0., 4.]);
        // Modulated: a mask scales the sample.
        let off = Value::F64(arr(
            &[1, 3, 1, 3],
            vec![0., 0., 0., 0., 0., 0., 0.5, 2., 0.],
        ));
        let y = deform(&x, &f, &off, [0; 4], 1, true).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), [0.5, 4., 0.]);
    }

    #[test]
    fn conv3d_factory_errors() {
        let base = [
            ("strides", li(&[1, 1, 1, 1, 1])),
            ("pads", li(&[0, 0, 0, 0, 0, 0])),
        ];
        let mut a = base.to_vec();
        a.push(("data_format", AttrValue::String("NHWC".into())));
        let e = factory(conv3d_factory, &node("Conv3D", &a), Vec::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("data_format"), "{e}");
        let a = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[0; 6]))];
        assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
        let a = [("strides", li(&[1, 1, 0, 1, 1])), ("pads", li(&[0; 6]))];
        assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
        let a = [("strides", li(&[1; 5])), ("pads", li(&[0, 0, -1, 0, 0, 0]))];
        assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
        let mut a = base.to_vec();
        a.push(("groups", AttrValue::Int(0)));
        assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
        let mut a = base.to_vec();
        a.push(("offset_x", AttrValue::Int(1)));
        let e = unsupported(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()));
        assert!(e.contains("offset_x"), "{e}");
        // A float x of an unsupported dtype at run time is an error, not a panic.
        let k = factory(conv3d_factory, &node("Conv3D", &base), Vec::new()).unwrap();
        let x = Value::I16(arr(&[1, 1, 1, 1, 1], vec![1]));
        assert!(k(&[Some(&x), Some(&x)]).is_err());
    }
}
