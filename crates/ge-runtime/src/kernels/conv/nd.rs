//! The N-D convolution kernels: Conv2DTranspose, Conv3D and DeformableConv2D.
//!
//! Conv3D and Conv2DTranspose share one 3-D engine (a 2-D convolution is a 3-D one of depth 1):
//! the forward convolution unfolds each image and group (vol2col) in tiles of output rows that
//! stay in the L2 cache and multiplies each tile by the filter (`gemm_into`); a 1x1 kernel with
//! unit strides and no pads multiplies the input in place; large convolutions split across the
//! run's threads by tiles or, with few pixels, by output channels; depthwise convolutions run
//! a direct vectorised kernel (`depthwise.rs`); a constant filter is packed once (permuted and
//! cast) when the kernel is made, if that changes it. Conv2DTranspose, the gradient of Conv2D with respect
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

use crate::arena::{out_slice, Dest, ElemArray};
use crate::error::{Error, Result};
use crate::kernels::common::{
    count_attr, filter_positions_of, four, input_desc, layout_2d, pads_attr, positive_hw, sub,
    sub_mut,
};
use crate::kernels::index::{
    alloc, array, bad_attr, cast_to, ints, numel, std_slice, str_attr, Pick,
};
use crate::kernels::matmul::gemm_into;
use crate::kernels::{input, Kernel, NodeInfo};
use crate::par;
use crate::value::usize_dims;
use crate::value::Value;
use es_core::infer::layout;
use es_core::opmath::{conv_out_size, same_pads_usize};
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, CowArray, IxDyn, LinalgScalar};
use std::borrow::Cow;
use std::ops::Range;

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
/// whose input is inside the volume, per kernel tap (row `r` of the columns) and output (z, y),
/// for the output rows (z * oh + y) in `rows` only, output starts counted from the first.
fn each_run(
    v: &Vol,
    rows: Range<usize>,
    mut f: impl FnMut(usize, usize, usize, usize) -> Result<()>,
) -> Result<()> {
    let [id, ih, iw] = v.i;
    let [_, oh, ow] = v.o;
    let first = rows.start * ow;
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
                        // This plane's rows z * oh + y inside `rows`.
                        let lo = y0.max(rows.start.saturating_sub(z * oh));
                        let hi = y1.min(rows.end.saturating_sub(z * oh));
                        for y in lo..hi {
                            let iy = at(y, v.s[1], v.off(1, kh));
                            f(
                                r,
                                (z * oh + y) * ow + x0 - first,
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

/// All output rows of `v`.
fn all_rows(v: &Vol) -> Range<usize> {
    0..v.o[0] * v.o[1]
}

/// [`each_run`] over `cg` channels: calls `f(column offset, volume offset, count)` with the
/// offsets into the columns ([cg * k_len, pixels of `rows`]) and the volume ([cg, i...]).
fn each_channel_run(
    v: &Vol,
    cg: usize,
    rows: Range<usize>,
    mut f: impl FnMut(usize, usize, usize) -> Result<()>,
) -> Result<()> {
    let pix = rows.len() * v.o[2];
    for c in 0..cg {
        let (cols, vol) = (c * v.k_len * pix, c * v.in_len);
        each_run(v, rows.clone(), |r, o0, i0, n| {
            f(cols + r * pix + o0, vol + i0, n)
        })?;
    }
    Ok(())
}

/// Unfolds the `cg` channels of one image and group (`xs`: [cg, i...]) into `col`:
/// [cg * k_len, pixels of the output rows `rows`], zeros where a window reads padding. Every
/// element is written once: the runs come in increasing column order (channel, tap, output
/// row, column), so the zeros are the gaps between consecutive runs and the tail after the last.
/// One channel's runs are found once ([`channel_runs`]); every channel copies the same runs
/// from its own plane into its own rows.
fn vol2col<T: Copy>(
    xs: &[T],
    v: &Vol,
    cg: usize,
    rows: Range<usize>,
    col: &mut [T],
    zero: T,
) -> Result<()> {
    let sw = v.s[2];
    let per = numel(&[v.k_len, rows.len(), v.o[2]])?;
    let runs = channel_runs(v, rows)?;
    for c in 0..cg {
        let dst = sub_mut(col, c * per, per)?;
        let src = sub(xs, c * v.in_len, v.in_len)?;
        let mut done = 0;
        for &(co, vo, n) in &runs {
            fill_gap(sub_mut(dst, done, co - done)?, zero);
            gather_strided(sub_mut(dst, co, n)?, sub(src, vo, (n - 1) * sw + 1)?, sw);
            done = co + n;
        }
        fill_gap(sub_mut(dst, done, per - done)?, zero);
    }
    col.get_mut(cg * per..)
        .ok_or_else(|| Error::kernel("internal error: convolution columns out of bounds"))?
        .fill(zero);
    Ok(())
}

/// The runs of one channel's unfolding (see [`vol2col`]) for the output rows `rows`: (column
/// offset into [k_len, pixels of `rows`], volume offset into [i...], count), in increasing
/// column order, not empty and not overlapping; runs that continue the previous one in both the
/// columns and the volume (a whole output row after another: the centre taps at unit stride)
/// merged into one.
fn channel_runs(v: &Vol, rows: Range<usize>) -> Result<Vec<(usize, usize, usize)>> {
    let sw = v.s[2];
    let pix = rows.len() * v.o[2];
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    each_run(v, rows, |r, o0, i0, n| {
        let co = r * pix + o0;
        match runs.last_mut() {
            Some((pc, pv, pn)) if co == *pc + *pn && i0 == *pv + *pn * sw => *pn += n,
            Some((pc, _, pn)) if co < *pc + *pn => {
                return Err(Error::kernel(
                    "internal error: convolution columns out of order",
                ))
            }
            _ => runs.push((co, i0, n)),
        }
        Ok(())
    })?;
    Ok(runs)
}

/// `d.fill(zero)`, a gap of one element (a window's one column of padding) without a call.
fn fill_gap<T: Copy>(d: &mut [T], zero: T) {
    match d {
        [] => {}
        [x] => *x = zero,
        d => d.fill(zero),
    }
}

/// `dst[j] = src[j * s]` for the `j` of `dst` that `src` reaches; stride 2 by pairs
/// (vectorised de-interleaving) rather than a strided scalar copy.
fn gather_strided<T: Copy>(dst: &mut [T], src: &[T], s: usize) {
    match s {
        0 | 1 => {
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = x;
            }
        }
        2 => {
            let pairs = src.chunks_exact(2);
            let (n, last) = (pairs.len(), pairs.remainder().first().copied());
            for (d, p) in dst.iter_mut().zip(pairs) {
                *d = p[0];
            }
            if let (Some(x), Some(d)) = (last, dst.get_mut(n)) {
                *d = x;
            }
        }
        _ => {
            for (d, &x) in dst.iter_mut().zip(src.iter().step_by(s)) {
                *d = x;
            }
        }
    }
}

/// Adds the columns `col` ([cg * k_len, out_len]) back into the volume `ys` ([cg, i...]): the
/// adjoint of [`vol2col`].
fn col2vol<T: LinalgScalar + Send + Sync>(
    col: &[T],
    v: &Vol,
    cg: usize,
    ys: &mut [T],
) -> Result<()> {
    let sw = v.s[2];
    each_channel_run(v, cg, all_rows(v), |co, vo, n| {
        let src = sub(col, co, n)?;
        if sw == 1 {
            for (d, &x) in sub_mut(ys, vo, n)?.iter_mut().zip(src) {
                *d = *d + x;
            }
        } else {
            let d = sub_mut(ys, vo, (n - 1) * sw + 1)?;
            for (d, &x) in d.iter_mut().step_by(sw).zip(src) {
                *d = *d + x;
            }
        }
        Ok(())
    })
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

/// Bytes of columns one tile of a convolution unfolds at a time (they stay in the L2 cache
/// between [`vol2col`] and the product).
const TILE_BYTES: usize = 512 << 10;

/// The fewest output pixels a tile gets (narrower products lose efficiency).
const MIN_TILE_PIX: usize = 256;

/// The fewest output channels a thread's share gets when a convolution splits by channels.
const MIN_SPLIT_CHANNELS: usize = 16;

/// Output rows (z * oh + y) per tile of a convolution with `kk` filter values per output
/// channel: about [`TILE_BYTES`] of columns (all rows when nothing is unfolded), and, when the
/// pixels allow a split into `parts`, a multiple of `parts` tiles of near-equal rows (three
/// tiles of 10, 10 and 8 rows on two threads would leave one idle for a third of the time;
/// four of 7 keep both busy).
fn tile_rows(v: &Vol, kk: usize, elem: usize, direct: bool, parts: usize) -> usize {
    let (rows, ow) = (v.o[0] * v.o[1], v.o[2].max(1));
    let mut per = if direct {
        rows
    } else {
        let cols = (TILE_BYTES / kk.saturating_mul(elem).max(1)).max(MIN_TILE_PIX);
        cols.div_ceil(ow)
    };
    per = per.clamp(1, rows.max(1));
    if parts > 1 && rows * ow >= parts * MIN_TILE_PIX / 4 {
        let tiles = rows.div_ceil(per).div_ceil(parts) * parts;
        per = rows.div_ceil(tiles.min(rows).max(1));
    }
    per.clamp(1, rows.max(1))
}

thread_local! {
    /// Each thread's column buffers, kept between convolutions (no allocation, no page faults
    /// on every run).
    static SCRATCH_F32: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    static SCRATCH_F64: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most bytes a thread's kept column buffer may hold; a larger one is freed after use.
const SCRATCH_KEEP: usize = 64 << 20;

/// `f` on this thread's column buffer of `T` (f32, f64), any length and contents; a new empty
/// buffer for other types, or when the thread's is in use (a convolution whose product ran
/// another one's tile on this thread).
fn with_scratch<T: 'static, R>(f: impl FnOnce(&mut Vec<T>) -> R) -> R {
    use std::any::Any;
    fn on<U: 'static, T: 'static, R, F: FnOnce(&mut Vec<T>) -> R>(
        key: &'static std::thread::LocalKey<std::cell::RefCell<Vec<U>>>,
        f: F,
    ) -> std::result::Result<R, F> {
        key.with(|cell| match cell.try_borrow_mut() {
            Ok(mut kept) => match (&mut *kept as &mut dyn Any).downcast_mut::<Vec<T>>() {
                Some(col) => {
                    let r = f(col);
                    if col.capacity() * std::mem::size_of::<T>() > SCRATCH_KEEP {
                        *col = Vec::new();
                    }
                    Ok(r)
                }
                None => Err(f),
            },
            Err(_) => Err(f),
        })
    }
    let f = match on(&SCRATCH_F32, f) {
        Ok(r) => return r,
        Err(f) => f,
    };
    match on(&SCRATCH_F64, f) {
        Ok(r) => r,
        Err(f) => f(&mut Vec::new()),
    }
}

/// `y` ([n, o, pix]) `+= bias` per output channel.
fn add_plane_bias<T: LinalgScalar>(y: &mut [T], bias: Option<&[T]>, o: usize, pix: usize) {
    if let Some(b) = bias {
        for (k, plane) in y.chunks_exact_mut(pix.max(1)).enumerate() {
            let bv = b[k % o];
            plane.iter_mut().for_each(|v| *v = *v + bv);
        }
    }
}

/// `c += bias` per row (output channel).
fn add_row_bias<T: LinalgScalar>(c: &mut ArrayViewMut2<'_, T>, bias: Option<&[T]>) {
    if let Some(b) = bias {
        for (mut row, &bv) in c.rows_mut().into_iter().zip(b) {
            row.map_inplace(|v| *v = *v + bv);
        }
    }
}

/// `c = a @ b` with the rows of `a` and `c` split into `parts` blocks across the run's threads.
fn gemm_by_rows<T: LinalgScalar + Send + Sync>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    mut c: ArrayViewMut2<'_, T>,
    parts: usize,
) {
    use rayon::prelude::*;
    let rows = a.nrows().div_ceil(parts.max(1)).max(1);
    let blocks: Vec<_> = a
        .axis_chunks_iter(Axis(0), rows)
        .zip(c.axis_chunks_iter_mut(Axis(0), rows))
        .collect();
    par::install(|| {
        blocks
            .into_par_iter()
            .for_each(|(a, c)| gemm_into(a, b.view(), c))
    });
}

/// The convolution of `x` ([n, c, i...]) with `f` ([o, c / groups, k...]) plus the optional
/// per-channel `bias`: [n, o, o...]. One input channel per group (depthwise) convolves each
/// plane directly ([`depthwise`]). Otherwise each image and group is unfolded ([`vol2col`]) in
/// tiles of output rows (about [`TILE_BYTES`] of columns each; a 1x1x1 kernel with unit strides
/// and no pads reads the input as it is) and each tile multiplied by the filter into its
/// columns of y, the bias added while they are in cache. Large convolutions split across the
/// run's threads: by tiles when the image has enough pixels, else by output channels.
fn conv_fwd<T: LinalgScalar + Send + Sync>(
    x: &[T],
    f: &[T],
    ch: Chans,
    v: &Vol,
    bias: Option<&[T]>,
) -> Result<Vec<T>> {
    let mut y = alloc(numel(&[ch.n, ch.o, v.out_len])?, T::zero())?;
    conv_fwd_into(x, f, ch, v, bias, &mut y)?;
    Ok(y)
}

/// [`conv_fwd`] into `y` ([n, o, o...]; its previous contents are overwritten).
fn conv_fwd_into<T: LinalgScalar + Send + Sync>(
    x: &[T],
    f: &[T],
    ch: Chans,
    v: &Vol,
    bias: Option<&[T]>,
    y: &mut [T],
) -> Result<()> {
    let (cg, og) = (ch.c / ch.groups, ch.o / ch.groups);
    let kk = numel(&[cg, v.k_len])?;
    let pix = v.out_len;
    if y.len() != numel(&[ch.n, ch.o, pix])? {
        return Err(Error::kernel(format!(
            "internal error: a convolution output of {} values for [{}, {}, {pix}]",
            y.len(),
            ch.n,
            ch.o
        )));
    }
    if let Some(b) = bias {
        if b.len() != ch.o {
            return Err(Error::kernel(format!(
                "bias has {} values, the convolution has {} output channels",
                b.len(),
                ch.o
            )));
        }
    }
    if kk == 0 || (cg == 1 && ch.groups > 1) {
        // The direct depthwise kernel accumulates into zeros; no filter values: the bias alone.
        y.fill(T::zero());
    }
    if kk == 0 {
        add_plane_bias(y, bias, ch.o, pix);
        return Ok(());
    }
    if cg == 1 && ch.groups > 1 && depthwise::depthwise(x, f, ch, v, y)? {
        add_plane_bias(y, bias, ch.o, pix);
        return Ok(());
    }
    let direct = v.direct();
    let parts = par::chunks_for(numel(&[og, pix, kk])? / par::MACS_PER_UNIT);
    let ow = v.o[2].max(1);
    let rows = tile_rows(v, kk, std::mem::size_of::<T>(), direct, parts);
    let all = all_rows(v).len();
    for ni in 0..ch.n {
        for gi in 0..ch.groups {
            let xs = sub(x, (ni * ch.c + gi * cg) * v.in_len, cg * v.in_len)?;
            let a = ArrayView2::from_shape((og, kk), sub(f, gi * og * kk, og * kk)?)
                .map_err(shape_err)?;
            let bg = bias.map(|b| sub(b, gi * og, og)).transpose()?;
            let yg = sub_mut(y, (ni * ch.o + gi * og) * pix, og * pix)?;
            let mut c = ArrayViewMut2::from_shape((og, pix), yg).map_err(shape_err)?;
            // One tile's columns: the input itself (direct) or unfolded into `col`.
            let tile = |col: &mut Vec<T>, r: Range<usize>, mut c: ArrayViewMut2<'_, T>| {
                let (p0, p1) = (r.start * ow, r.end * ow);
                if direct {
                    let b = ArrayView2::from_shape((kk, pix), xs).map_err(shape_err)?;
                    gemm_into(a, b.slice(ndarray::s![.., p0..p1]), c.view_mut());
                } else {
                    let need = numel(&[kk, p1 - p0])?;
                    if col.len() < need {
                        *col = alloc(need, T::zero())?;
                    }
                    let col = &mut col[..need];
                    vol2col(xs, v, cg, r, col, T::zero())?;
                    let b = ArrayView2::from_shape((kk, p1 - p0), &*col).map_err(shape_err)?;
                    gemm_into(a, b, c.view_mut());
                }
                add_row_bias(&mut c, bg);
                Ok::<_, Error>(())
            };
            if rows >= all {
                if parts > 1 && og >= parts * MIN_SPLIT_CHANNELS {
                    // Too few pixels to split: split the output channels instead.
                    with_scratch(|col: &mut Vec<T>| {
                        let b = if direct {
                            xs
                        } else {
                            let need = numel(&[kk, pix])?;
                            if col.len() < need {
                                *col = alloc(need, T::zero())?;
                            }
                            let col = &mut col[..need];
                            vol2col(xs, v, cg, 0..all, col, T::zero())?;
                            &*col
                        };
                        let b = ArrayView2::from_shape((kk, pix), b).map_err(shape_err)?;
                        gemm_by_rows(a, b, c.view_mut(), parts);
                        add_row_bias(&mut c, bg);
                        Ok::<_, Error>(())
                    })?;
                } else {
                    with_scratch(|col| tile(col, 0..all, c))?;
                }
                continue;
            }
            let tiles: Vec<_> = c
                .axis_chunks_iter_mut(Axis(1), rows * ow)
                .enumerate()
                .map(|(t, c)| (t * rows..((t + 1) * rows).min(all), c))
                .collect();
            if parts > 1 {
                use rayon::prelude::*;
                // Each tile unfolds into its thread's kept buffer (a new one per tile cost an
                // allocation and its page faults every time).
                par::install(|| {
                    tiles
                        .into_par_iter()
                        .try_for_each(|(r, c)| with_scratch(|col| tile(col, r, c)))
                })?;
            } else {
                with_scratch(|col| tiles.into_iter().try_for_each(|(r, c)| tile(col, r, c)))?;
            }
        }
    }
    Ok(())
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
    /// TensorFlow's SAME padding (pads from the input size; `p` unused).
    same: bool,
    groups: usize,
    /// DepthwiseConv2D: one group per input channel (`groups` unused), the filter's in and
    /// out dims giving a channel multiplier.
    depthwise: bool,
    /// Filter dims of (out, in / groups, spatial...): `rank + 2` entries used (for
    /// DepthwiseConv2D the filter's (in, multiplier) dims in that order).
    fpos: [usize; 5],
}

impl ConvAttrs {
    fn fpos(&self) -> &[usize] {
        &self.fpos[..self.rank + 2]
    }
}

/// `groups` (>= 1).
fn groups_attr(info: &NodeInfo, name: &str) -> Result<usize> {
    count_attr(info, name, 1, 1)
}

/// The attributes of a 2-D convolution (x input `x_input`, filter `filter_input`): layout,
/// strides, dilations, pads and groups. With `modes` (Conv2D, DepthwiseConv2D) the `padding`
/// attribute may choose SAME or VALID instead of the pads, and DepthwiseConv2D has no groups.
fn conv2d_attrs(
    info: &NodeInfo,
    x_input: usize,
    filter_input: usize,
    modes: bool,
) -> Result<ConvAttrs> {
    let op = info.op();
    let last = !layout_2d(info, x_input, "NHWC")?;
    let (_, s) = four(info, "strides", None, !last)?;
    let [sh, sw] = positive_hw(info, "strides", s)?;
    let (_, d) = four(info, "dilations", Some([1; 4]), !last)?;
    let [dh, dw] = positive_hw(info, "dilations", d)?;
    let padding = if modes {
        str_attr(info, "padding", "")?
    } else {
        String::new()
    };
    let [pt, pb, pl, pr] = match padding.as_str() {
        "" => pads_attr(info, "pads")?,
        "SAME" | "VALID" => [0; 4],
        other => return Err(Error::unsupported(format!("{op} with padding {other:?}"))),
    };
    let depthwise = modes && op == "DepthwiseConv2D";
    let [mut a, mut b, c, e] = filter_positions_of(info, x_input, filter_input)?;
    if depthwise {
        // The filter's in dim leads: [C, K, k...] (or [1, C * K, k...]), which in standard
        // layout is [C * K, 1, k...], output channel c * K + k from input channel c.
        std::mem::swap(&mut a, &mut b);
    }
    Ok(ConvAttrs {
        rank: 2,
        last,
        s: [1, sh, sw],
        d: [1, dh, dw],
        p: [[0, 0], [pt, pb], [pl, pr]],
        same: padding == "SAME",
        groups: if depthwise {
            1
        } else {
            groups_attr(info, "groups")?
        },
        depthwise,
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

/// x and the filter in the compute type `T`; x must be `r`-D.
type Operands<'v, T> = (Cow<'v, ArrayD<T>>, Cow<'v, ArrayD<T>>);

fn operands<'v, T: Pick>(x: &'v Value, f: &'v Value, r: usize) -> Result<Operands<'v, T>> {
    let xa = cast_to::<T>(x)?;
    if xa.ndim() != r {
        return Err(Error::kernel(format!(
            "x must be {r}-D, got shape {:?}",
            xa.shape()
        )));
    }
    Ok((xa, cast_to::<T>(f)?))
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

/// One run of a convolution with attributes `A` on x, the filter and an optional bias.
struct Run<'a, A> {
    a: &'a A,
    x: &'a Value,
    f: &'a Value,
    bias: Option<&'a Value>,
}

impl<'a, A> Run<'a, A> {
    /// The run of `a` on a node's inputs: x at `x`, the filter after it, the optional bias at
    /// `bias`.
    fn of(a: &'a A, inputs: &[Option<&'a Value>], x: usize, bias: usize) -> Result<Self> {
        Ok(Run {
            a,
            x: input(inputs, x)?,
            f: input(inputs, x + 1)?,
            bias: inputs.get(bias).copied().flatten(),
        })
    }
}

type ConvRun<'a> = Run<'a, ConvAttrs>;

impl Compute for ConvRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let a = self.a;
        let r = a.rank + 2;
        let (xa, fa) = operands::<T>(self.x, self.f, r)?;
        let xc = channels_first(&xa, a.last);
        let fc = filter_std(&fa, a.fpos())?;
        let (ch, v, dims) = geometry(a, xc.shape(), fc.shape(), xa.shape(), fa.shape())?;
        let bias = self.bias.map(cast_to::<T>).transpose()?;
        let bias = bias.as_ref().map(|b| std_slice(b));
        let (xsl, fsl) = (slice_of(&xc, "x")?, slice_of(&fc, "filter")?);
        let y = conv_fwd(xsl, fsl, ch, &v, bias.as_deref())?;
        Ok(channels_back(array(&dims, y)?, a.last))
    }
}

/// The channels, spatial geometry and channels-first output dims of a forward convolution of
/// x (`xs`, channels first) with the filter (`fs`, standard layout); `x_shape` and `f_shape`
/// as given, for errors.
fn geometry(
    a: &ConvAttrs,
    xs: &[usize],
    fs: &[usize],
    x_shape: &[usize],
    f_shape: &[usize],
) -> Result<(Chans, Vol, Vec<usize>)> {
    let (n, c) = (xs[0], xs[1]);
    let (groups, o) = conv_groups(a, c, fs, x_shape, f_shape)?;
    let pads = if a.same {
        let mut p = [[0; 2]; 3];
        for (j, (&i, &k)) in three(&xs[2..]).iter().zip(&three(&fs[2..])).enumerate() {
            let (p0, p1) = same_pads_usize(i, k, a.s[j], a.d[j])
                .ok_or_else(|| Error::kernel("internal error: bad convolution geometry"))?;
            p[j] = [p0, p1];
        }
        p
    } else {
        a.p
    };
    let v = Vol::forward(three(&xs[2..]), three(&fs[2..]), a.s, a.d, pads)?;
    let mut dims = vec![n, o];
    dims.extend_from_slice(&v.o[3 - a.rank..]);
    Ok((Chans { n, c, o, groups }, v, dims))
}

/// The groups and output channels of a forward convolution of `c` input channels with the
/// filter `fs` (standard layout, [out, in, k...]; [in, multiplier, k...] for a depthwise one):
/// channel mismatches are errors naming x's and the filter's shapes as given.
fn conv_groups(
    a: &ConvAttrs,
    c: usize,
    fs: &[usize],
    x_shape: &[usize],
    f_shape: &[usize],
) -> Result<(usize, usize)> {
    let mismatch = |detail: String| {
        Error::kernel(format!(
            "channel mismatch: x {x_shape:?} has {c} channels, the filter {f_shape:?} {detail}"
        ))
    };
    if a.depthwise {
        if c == 0 {
            return Err(Error::kernel("depthwise convolution of x with no channels"));
        }
        // [kh, kw, C, K] (HWCN) gives C * K channels; a filter with one input channel
        // ([C * K, 1, kh, kw]) is the same.
        let (fc, fo) = (fs[0], fs[1]);
        let o = if fc == c {
            fo.checked_mul(c)
        } else if fc == 1 && fo % c == 0 {
            Some(fo)
        } else {
            None
        };
        let o = o.ok_or_else(|| mismatch(format!("has {fc} (out {fo})")))?;
        return Ok((c, o));
    }
    let (fo, fi) = (fs[0], fs[1]);
    if fi.checked_mul(a.groups) != Some(c) || fo % a.groups != 0 {
        return Err(mismatch(format!(
            "has {fi} per group and {fo} outputs, groups {}",
            a.groups
        )));
    }
    Ok((a.groups, fo))
}

pub(super) fn conv3d_factory(info: &NodeInfo) -> Result<Kernel> {
    let a = conv3d_attrs(info)?;
    Ok(conv_kernel(info, a, info.out_dtype(0).ok()))
}

/// Conv3D's attributes (quantization refused).
fn conv3d_attrs(info: &NodeInfo) -> Result<ConvAttrs> {
    let df = str_attr(info, "data_format", "NDHWC")?;
    let xl = layout::data_layout(input_desc(info, 0), &df, layout::DATA_3D)
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
    let fl = layout::filter_layout(input_desc(info, 1), input_desc(info, 0), layout::FILTER_3D)
        .map_err(|e| bad_attr(info, e))?;
    let fpos: [usize; 5] = layout::filter_positions(fl)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| Error::unsupported(format!("Conv3D with a filter of format {fl}")))?;
    Ok(ConvAttrs {
        rank: 3,
        last,
        s,
        d,
        p,
        same: false,
        groups: groups_attr(info, "groups")?,
        depthwise: false,
        fpos,
    })
}

/// The kernel of a forward convolution (inputs x, filter, optional bias), cast to `out`.
/// A constant filter is packed once here: permuted to [out, in, k...] and cast to the compute
/// type of x's dtype, when either changes it (else it is used as it is, with no copy).
fn conv_kernel(info: &NodeInfo, a: ConvAttrs, out: Option<DataType>) -> Kernel {
    let op = info.op().to_string();
    let packed = packed_filter(info, &a);
    let packed_attrs = standard_filter(a);
    Box::new(move |inputs| {
        let r = match &packed {
            Some(f) => Run {
                f,
                ..ConvRun::of(&packed_attrs, inputs, 0, 2)?
            },
            None => ConvRun::of(&a, inputs, 0, 2)?,
        };
        Ok(vec![dispatch(&op, r.x, true, out, &r)?])
    })
}

/// The node's constant filter packed by [`pack_filter`], when packing changes it.
fn packed_filter(info: &NodeInfo, a: &ConvAttrs) -> Option<Value> {
    info.const_inputs
        .get(1)
        .and_then(Option::as_ref)
        .zip(input_desc(info, 0).map(|d| d.dtype))
        .and_then(|(f, x)| pack_filter(f, a.fpos(), x))
}

/// `a` for a filter in standard layout ([out, in, k...], as [`pack_filter`] gives it).
fn standard_filter(mut a: ConvAttrs) -> ConvAttrs {
    a.fpos = [0, 1, 2, 3, 4];
    a
}

/// The constant filter `f` (dims `fpos` of out, in, k...) in standard layout and the compute
/// type of an x of dtype `x` (f32 for f16 and bf16), when that differs from `f` as given; None
/// when it would not (or for integer convolutions, left to the run).
fn pack_filter(f: &Value, fpos: &[usize], x: DataType) -> Option<Value> {
    let identity = fpos.iter().enumerate().all(|(i, &p)| i == p);
    fn std_as<T: Pick>(f: &Value, fpos: &[usize]) -> Option<ArrayD<T>> {
        let c = cast_to::<T>(f).ok()?;
        Some(filter_std(&c, fpos).ok()?.into_owned())
    }
    let std_of = |f: &Value| match x {
        DataType::FLOAT | DataType::FLOAT16 | DataType::BF16 => std_as(f, fpos).map(Value::F32),
        DataType::DOUBLE => std_as(f, fpos).map(Value::F64),
        _ => None,
    };
    let packed = std_of(f)?;
    (!identity || packed.dtype() != f.dtype()).then_some(packed)
}

/// Conv2D and DepthwiseConv2D: the engine with two spatial dims.
pub(super) fn conv2d_factory(info: &NodeInfo) -> Result<Kernel> {
    let a = conv2d_attrs(info, 0, 1, true)?;
    no_quant(info, 3)?;
    Ok(conv_kernel(info, a, Some(info.out_dtype(0)?)))
}

// ---------------------------------------------------------------------------------------------
// Into a plan's buffer
// ---------------------------------------------------------------------------------------------

/// Conv2D, DepthwiseConv2D and Conv3D writing into a given output ([`crate::kernels::IntoOp`]):
/// channels-first x (NCHW, NCDHW) in standard layout and a filter, bias and output of x's
/// dtype (f32 or f64). It computes what [`conv_kernel`]'s kernel computes, through the same
/// engine ([`conv_fwd_into`]); other cases run that kernel.
pub(crate) struct ConvInto {
    a: ConvAttrs,
    /// The constant filter, packed ([`pack_filter`]) when packing changes it.
    packed: Option<Value>,
}

impl ConvInto {
    pub(crate) fn of(info: &NodeInfo) -> Result<Option<ConvInto>> {
        let a = match info.op() {
            "Conv2D" | "DepthwiseConv2D" => conv2d_attrs(info, 0, 1, true),
            "Conv3D" => conv3d_attrs(info),
            _ => return Ok(None),
        };
        // Bad attributes and quantization: the allocating kernel reports them.
        let Ok(a) = a else { return Ok(None) };
        if a.last || no_quant(info, 3).is_err() {
            return Ok(None);
        }
        let packed = packed_filter(info, &a);
        let a = if packed.is_some() {
            standard_filter(a)
        } else {
            a
        };
        Ok(Some(ConvInto { a, packed }))
    }

    /// x, the filter (standard layout) and the bias as slices of `T`, and the geometry; None
    /// when this step is not one [`ConvInto`] computes into an output of `dims`.
    #[allow(clippy::type_complexity)]
    fn operands<'v, T: ElemArray>(
        &'v self,
        args: &[Option<&'v Value>],
        dims: &[usize],
    ) -> Option<(&'v [T], &'v [T], Option<&'v [T]>, Chans, Vol)> {
        let a = &self.a;
        let x = T::array(args.first().copied().flatten()?)?;
        let f = T::array(self.packed.as_ref().or(args.get(1).copied().flatten())?)?;
        let identity = a.fpos().iter().enumerate().all(|(i, &p)| i == p);
        if x.ndim() != a.rank + 2 || f.ndim() != a.rank + 2 || !identity {
            return None;
        }
        if args.get(3).copied().flatten().is_some() {
            return None;
        }
        let bias = match args.get(2).copied().flatten() {
            None => None,
            Some(b) => Some(T::array(b)?.as_slice()?),
        };
        let (ch, v, want) = geometry(a, x.shape(), f.shape(), x.shape(), f.shape()).ok()?;
        (want == dims).then_some(())?;
        Some((x.as_slice()?, f.as_slice()?, bias, ch, v))
    }

    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        match dtype {
            DataType::FLOAT => self.operands::<f32>(args, dims).is_some(),
            DataType::DOUBLE => self.operands::<f64>(args, dims).is_some(),
            _ => false,
        }
    }

    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        fn go<T: ElemArray + LinalgScalar + Send + Sync>(
            c: &ConvInto,
            args: &[Option<&Value>],
            d: Dest<'_>,
        ) -> Result<()> {
            let (x, f, bias, ch, v) = c
                .operands::<T>(args, d.dims)
                .ok_or_else(|| Error::kernel("internal error: a convolution it does not take"))?;
            let dt = d.out.dtype();
            let y = out_slice::<T>(d.out, d.range)
                .ok_or_else(|| Error::kernel(format!("an output buffer of {dt} does not fit")))?;
            conv_fwd_into(x, f, ch, &v, bias, y)
        }
        match d.out.dtype() {
            DataType::FLOAT => go::<f32>(self, args, d),
            DataType::DOUBLE => go::<f64>(self, args, d),
            dt => Err(Error::unsupported(format!("a convolution into {dt}"))),
        }
    }
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

type TransposeRun<'a> = Run<'a, TransposeAttrs>;

impl Compute for TransposeRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let TransposeAttrs { conv: a, y: ys, op } = *self.a;
        let (xa, fa) = operands::<T>(self.x, self.f, 4)?;
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
    let conv = conv2d_attrs(info, 1, 2, false)?;
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
    let dims = usize_dims(&size).ok_or_else(|| {
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
        let r = TransposeRun::of(&a, inputs, 1, 3)?;
        Ok(vec![dispatch("Conv2DTranspose", r.x, true, out, &r)?])
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

/// A deformable convolution's run: x, filter and bias as [`Run`]'s, and the offsets.
struct DeformRun<'a> {
    run: Run<'a, DeformAttrs>,
    offsets: &'a Value,
}

impl Compute for DeformRun<'_> {
    fn run<T: Pick + LinalgScalar>(&self) -> Result<ArrayD<T>> {
        let DeformAttrs {
            conv: a,
            dg,
            modulated,
        } = *self.run.a;
        let xa = cast_to::<T>(self.run.x)?;
        let fa = cast_to::<T>(self.run.f)?;
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
        add_bias(&mut y, self.run.bias, o, pix)?;
        Ok(channels_back(array(&[n, o, oh, ow], y)?, a.last))
    }
}

pub(super) fn deformable_conv2d_factory(info: &NodeInfo) -> Result<Kernel> {
    let conv = conv2d_attrs(info, 0, 1, false)?;
    let a = DeformAttrs {
        conv,
        dg: groups_attr(info, "deformable_groups")?,
        modulated: info.bool("modulated", true)?,
    };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let r = DeformRun {
            run: Run::of(&a, inputs, 0, 3)?,
            offsets: input(inputs, 2)?,
        };
        Ok(vec![dispatch("DeformableConv2D", r.run.x, false, out, &r)?])
    }))
}

#[path = "depthwise.rs"]
pub(in crate::kernels) mod depthwise;

#[cfg(test)]
#[path = "nd_tests.rs"]
mod tests;
