//! Pooling kernels: MaxPool/MaxPoolV3, AvgPool/AvgPoolV2, GlobalAveragePool and Caffe's Pooling.
//!
//! Max pooling compares in the input's own dtype. Average pooling accumulates in f64 and rounds
//! once to the output dtype. Layouts are those the shape rules use, decided by
//! `es_core::infer::layout`: x in the format it states (NCHW or NHWC), else in `data_format`'s.
//! Pads are [top, bottom, left, right].
//!
//! Pooling (Caffe): mode 0 max, 1 average; `ceil_mode` 0 rounds the output size up (Caffe's
//! default), 1 down, a last window starting in the trailing pad dropped (the shape rule's
//! formula); an average divides by the window clipped to the padded input (Caffe's pool_size:
//! pads count, the part beyond the trailing pad does not); a max ignores pads. `global_pooling`
//! pools the whole plane. pad is [top, bottom, left, right]; data_format NCHW (default) or NHWC.

use super::common::{
    alloc, array, bad_attr, float_out, floats, four, from_f64, input_desc, layout_2d, need_rank,
    numel, pads_attr, positive_hw, std_slice, str_attr, sub, sub_mut,
};
use super::conv::nd::depthwise::{simd as conv_simd, Simd};
use super::{input, Kernel, Kernels, NodeInfo};
use crate::arena::{out_slice, Dest, ElemArray};
use crate::error::{Error, Result};
use crate::map_array;
use crate::par;
use crate::value::{Elem, Value};
use es_core::DataType;
use ndarray::ArrayD;
use std::ops::Range;

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
        let (ry, py) = self.row_span(oy);
        let (rx, px) = self.col_span(ox);
        (ry, rx, py * px)
    }

    /// The input rows output row `oy`'s windows read, and their height within the padded input.
    fn row_span(&self, oy: usize) -> (Range<usize>, usize) {
        Self::span(oy, self.sh, self.pt, self.kh, self.h, self.pb)
    }

    /// The input columns output column `ox`'s windows read, and their width within the padded
    /// input.
    fn col_span(&self, ox: usize) -> (Range<usize>, usize) {
        Self::span(ox, self.sw, self.pl, self.kw, self.w, self.pr)
    }

    fn span(
        o: usize,
        s: usize,
        p0: usize,
        k: usize,
        size: usize,
        p1: usize,
    ) -> (Range<usize>, usize) {
        let start = (o * s) as i64 - p0 as i64;
        let end = start + k as i64;
        let lo = start.max(0) as usize;
        let hi = end.clamp(0, size as i64) as usize;
        let padded = (end.min((size + p1) as i64) - start).max(0) as usize;
        (lo..hi.max(lo), padded)
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

/// The larger of `b` (seen first) and `v`, NaN skipped (the ONNX reference implementation's
/// MaxPool, numpy's `nanmax`): `v` when it is larger or `b` is NaN, so a window's maximum is
/// that of its numbers, NaN only when all are NaN, and of equal values the first seen is kept.
/// (Both tests always evaluated, so that loops over it vectorise into compares and blends.)
#[inline(always)]
fn keep_max<T: PartialOrd>(b: T, v: T) -> T {
    #[allow(clippy::eq_op)]
    let take = (b != b) | (v > b);
    if take {
        v
    } else {
        b
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
/// window-by-window scan visits them, so [`keep_max`] keeps the same element (NaN skipped, the
/// first of equal values); a window with no input element gives `low`. Planes go in groups of
/// about 16 KiB; the passes are compiled for AVX-512 or AVX2 where the CPU has them.
fn max_pool_planes<T: Copy + PartialOrd + Send + Sync>(
    src: &[T],
    g: &PoolGeom,
    low: T,
    y: &mut [T],
) -> Result<()> {
    max_pool_planes_at(src, g, low, y, conv_simd())
}

fn max_pool_planes_at<T: Copy + PartialOrd + Send + Sync>(
    src: &[T],
    g: &PoolGeom,
    low: T,
    y: &mut [T],
    level: Simd,
) -> Result<()> {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    if plane_out == 0 || y.is_empty() {
        return Ok(());
    }
    let p = MaxPlanes {
        g,
        rows: (0..g.oh).map(|oy| g.window(oy, 0).0).collect(),
        taps: tap_runs(g),
        edge_cols: edges(g.ow, g.kw, g.pl)
            .map(|ox| (ox, g.col_span(ox).0))
            .filter(|(_, r)| !r.is_empty())
            .collect(),
        pairs: pair_windows(g),
        group: (4096 / plane_in.max(1)).max(1),
        low,
    };
    let work = numel(&[g.n, g.c, plane_out, g.kh * g.kw])?;
    par::for_chunks_mut(y, plane_out, work, |start, ys| {
        // tmp[iy][ox]: the maximum of input row iy over output column ox's window. Columns no
        // tap reaches are never written and keep `low`.
        let mut tmp: Vec<T> = Vec::new();
        let first = start / plane_out;
        for (k, yg) in ys.chunks_mut(plane_out * p.group).enumerate() {
            let planes = yg.len() / plane_out;
            let xg = sub(src, (first + k * p.group) * plane_in, planes * plane_in)?;
            if tmp.len() < planes * g.h * g.ow {
                tmp.resize(planes * g.h * g.ow, low);
            }
            p.group_at(level, xg, &mut tmp[..planes * g.h * g.ow], yg)?;
        }
        Ok(())
    })
}

/// What every group of planes of one max pool shares.
struct MaxPlanes<'g, T> {
    g: &'g PoolGeom,
    /// Per output row, the input rows its windows read.
    rows: Vec<Range<usize>>,
    taps: Vec<TapRun>,
    /// The edge columns of a stride-1 "same" window (see [`edges`]) and the input columns each
    /// reads.
    edge_cols: Vec<(usize, Range<usize>)>,
    /// A stride-2 window of 2 or 3 columns: see [`PairWindows`].
    pairs: Option<PairWindows>,
    /// Planes per group.
    group: usize,
    low: T,
}

impl<T: Copy + PartialOrd> MaxPlanes<'_, T> {
    fn group_at(&self, level: Simd, x: &[T], tmp: &mut [T], y: &mut [T]) -> Result<()> {
        #[cfg(target_arch = "x86_64")]
        match level {
            // SAFETY: the CPU has the features each copy is compiled for (`simd` checked them
            // at run time; a lower level is only ever asked for, never a higher one).
            Simd::Avx512 => return unsafe { self.group_avx512(x, tmp, y) },
            Simd::Avx2 => return unsafe { self.group_avx2(x, tmp, y) },
            Simd::Portable => {}
        }
        let _ = level;
        self.group(x, tmp, y)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn group_avx512(&self, x: &[T], tmp: &mut [T], y: &mut [T]) -> Result<()> {
        self.group(x, tmp, y)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn group_avx2(&self, x: &[T], tmp: &mut [T], y: &mut [T]) -> Result<()> {
        self.group(x, tmp, y)
    }

    /// Max pools the planes of `x` (whole planes) into `y`, through `tmp` (h × ow per plane).
    /// A stride-1 pass whose output is as wide (tall) as its input ("same" pads) runs over the
    /// group's rows as one flat array, its edge columns (rows) then redone window by window.
    #[inline(always)]
    fn group(&self, x: &[T], tmp: &mut [T], y: &mut [T]) -> Result<()> {
        let g = self.g;
        let rows_in = x.len() / g.w.max(1);
        if g.sw == 1 && g.ow == g.w {
            flat_taps(x, tmp, g.kw, g.pl, 1);
            for (t, xr) in tmp.chunks_exact_mut(g.ow).zip(x.chunks_exact(g.w)) {
                for (ox, rx) in &self.edge_cols {
                    if let (Some(m), Some(d)) =
                        (scan_max(sub(xr, rx.start, rx.len())?), t.get_mut(*ox))
                    {
                        *d = m;
                    }
                }
            }
        } else if let Some(pw) = &self.pairs {
            for iy in 0..rows_in {
                pw.row(sub(x, iy * g.w, g.w)?, sub_mut(tmp, iy * g.ow, g.ow)?)?;
            }
        } else {
            for iy in 0..rows_in {
                row_maxima(
                    sub(x, iy * g.w, g.w)?,
                    g.sw,
                    &self.taps,
                    sub_mut(tmp, iy * g.ow, g.ow)?,
                );
            }
        }
        let (plane_t, plane_y) = (g.h * g.ow, g.oh * g.ow);
        let flat = g.sh == 1 && g.oh == g.h;
        if flat {
            flat_taps(tmp, y, g.kh, g.pt, g.ow);
        }
        for (yp, tp) in y.chunks_exact_mut(plane_y).zip(tmp.chunks_exact(plane_t)) {
            for (oy, (yr, r)) in yp.chunks_exact_mut(g.ow).zip(&self.rows).enumerate() {
                let edge = oy < g.pt || oy + g.kh > g.h + g.pt;
                if flat && !edge {
                    continue;
                }
                combine_rows(yr, tp, r.clone(), self.low)?;
            }
        }
        Ok(())
    }
}

/// The horizontal pass of a stride-2 window 2 or 3 columns wide (GoogLeNet's and SqueezeNet's
/// 3x3/2 pools) in one pass over the input's pairs of columns: each window's taps combined in
/// order and written once (the tap-by-tap passes of [`row_maxima`] read each output back).
struct PairWindows {
    k: usize,
    /// The windows whose taps are all inside the row, and the input column of the first's.
    full: Range<usize>,
    at: usize,
    /// The other windows with input, and the input columns each reads.
    cut: Vec<(usize, Range<usize>)>,
}

fn pair_windows(g: &PoolGeom) -> Option<PairWindows> {
    if g.sw != 2 || !(g.kw == 2 || g.kw == 3) || g.w + g.pl < g.kw {
        return None;
    }
    let lo = g.pl.div_ceil(2);
    let hi = ((g.w + g.pl - g.kw) / 2 + 1).min(g.ow);
    if lo >= hi {
        return None;
    }
    let cut = (0..lo)
        .chain(hi..g.ow)
        .map(|ox| (ox, g.col_span(ox).0))
        .filter(|(_, r)| !r.is_empty())
        .collect();
    Some(PairWindows {
        k: g.kw,
        full: lo..hi,
        at: 2 * lo - g.pl,
        cut,
    })
}

impl PairWindows {
    /// `t[ox]`: the maximum of input row `xr` over window `ox` (windows with no input keep it).
    #[inline(always)]
    fn row<T: Copy + PartialOrd>(&self, xr: &[T], t: &mut [T]) -> Result<()> {
        let n = self.full.len();
        // Window i of `full` reads xs[2i..2i + k]: n pairs, and one more column when k is 3.
        let xs = sub(xr, self.at, 2 * n + self.k - 2)?;
        let dst = sub_mut(t, self.full.start, n)?;
        let (pairs, _) = xs.as_chunks::<2>();
        if self.k == 2 {
            for (d, p) in dst.iter_mut().zip(pairs) {
                *d = keep_max(p[0], p[1]);
            }
        } else if let (Some((last, body)), Some(&end)) = (dst.split_last_mut(), xs.last()) {
            for ((d, p), q) in body.iter_mut().zip(pairs).zip(&pairs[1..]) {
                *d = keep_max(keep_max(p[0], p[1]), q[0]);
            }
            if let Some(p) = pairs.get(n - 1) {
                *last = keep_max(keep_max(p[0], p[1]), end);
            }
        }
        for (ox, r) in &self.cut {
            if let (Some(m), Some(d)) = (scan_max(sub(xr, r.start, r.len())?), t.get_mut(*ox)) {
                *d = m;
            }
        }
        Ok(())
    }
}

/// `yr[i]`: the [`keep_max`] of `tp`'s rows `r` (of `yr.len()` elements each) at `i`, in order;
/// `low` for no rows. The first three rows in one pass (each output written once: a masked
/// vector store read back by the next pass stalls), further rows one pass each.
#[inline(always)]
fn combine_rows<T: Copy + PartialOrd>(
    yr: &mut [T],
    tp: &[T],
    r: Range<usize>,
    low: T,
) -> Result<()> {
    let w = yr.len();
    let row = |iy: usize| sub(tp, iy * w, w);
    match r.len() {
        0 => yr.fill(low),
        1 => yr.copy_from_slice(row(r.start)?),
        2 => {
            for ((d, &a), &b) in yr.iter_mut().zip(row(r.start)?).zip(row(r.start + 1)?) {
                *d = keep_max(a, b);
            }
        }
        _ => {
            let (a, b, c) = (row(r.start)?, row(r.start + 1)?, row(r.start + 2)?);
            for (((d, &a), &b), &c) in yr.iter_mut().zip(a).zip(b).zip(c) {
                *d = keep_max(keep_max(a, b), c);
            }
            for iy in r.start + 3..r.end {
                for (d, &v) in yr.iter_mut().zip(row(iy)?) {
                    *d = keep_max(*d, v);
                }
            }
        }
    }
    Ok(())
}

/// `d[i]`: the [`keep_max`] of `s[i + (j - p) * unit]` over taps `j` in 0..k, in order, for
/// every `i` where each of those is inside `s`; other `d[i]` are left partly combined (the
/// caller redoes them: they are the edge columns or rows of a "same" window).
#[inline(always)]
fn flat_taps<T: Copy + PartialOrd>(s: &[T], d: &mut [T], k: usize, p: usize, unit: usize) {
    let n = d.len().min(s.len());
    for j in 0..k {
        // d[i] combines s[i + off], off = (j - p) * unit: i in lo..hi keeps that inside s.
        let (lo, hi, at) = if j < p {
            let back = (p - j) * unit;
            (back.min(n), n, 0)
        } else {
            let fwd = (j - p) * unit;
            (0, n.saturating_sub(fwd), fwd)
        };
        let (Some(dst), Some(src)) = (d.get_mut(lo..hi), s.get(at..)) else {
            continue;
        };
        if j == 0 {
            dst.copy_from_slice(&src[..dst.len()]);
        } else {
            for (d, &v) in dst.iter_mut().zip(src) {
                *d = keep_max(*d, v);
            }
        }
    }
}

/// The output columns (or rows) of a stride-1 "same" window of `k` with `p` leading pads whose
/// window is cut by an edge: the first `p`, the last `k - 1 - p`.
fn edges(o: usize, k: usize, p: usize) -> impl Iterator<Item = usize> {
    let tail = k.saturating_sub(1 + p);
    (0..p.min(o)).chain(o.saturating_sub(tail).max(p.min(o))..o)
}

/// The [`keep_max`] of `v` in order; None when empty.
#[inline(always)]
fn scan_max<T: Copy + PartialOrd>(v: &[T]) -> Option<T> {
    let (&first, rest) = v.split_first()?;
    Some(rest.iter().fold(first, |b, &v| keep_max(b, v)))
}

/// One pass of [`row_maxima`]: kernel column tap `j` over the windows `windows` (output
/// columns), reading the input row from `src` at the W stride; `first`: the windows' first
/// valid tap (it assigns; later ones combine).
struct TapRun {
    windows: Range<usize>,
    src: usize,
    first: bool,
}

/// The passes of [`row_maxima`] for `g` (the same for every input row), in the window scan's
/// order: per kernel column, the windows it reaches; the first valid tap of each window
/// assigns (tap 0, or the tap that reads input column 0 at the left edge), later ones combine.
fn tap_runs(g: &PoolGeom) -> Vec<TapRun> {
    let mut runs = Vec::new();
    for j in 0..g.kw {
        let off = j as i64 - g.pl as i64;
        let (lo, hi) = super::conv::nd::span(g.ow, g.sw, off, g.w);
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
        for (windows, first) in [(lo..mid, true), (mid..hi, false)] {
            if !windows.is_empty() {
                let src = ix(windows.start);
                runs.push(TapRun {
                    windows,
                    src,
                    first,
                });
            }
        }
    }
    runs
}

/// `t[ox]`: the maximum of input row `xr` over output column ox's window, tap by tap (a pass
/// per kernel column from [`tap_runs`], vectorised at unit stride and stride 2); windows with
/// no valid tap keep `t`'s value.
fn row_maxima<T: Copy + PartialOrd>(xr: &[T], sw: usize, runs: &[TapRun], t: &mut [T]) {
    for run in runs {
        let (Some(src), Some(dst)) = (xr.get(run.src..), t.get_mut(run.windows.clone())) else {
            continue;
        };
        match (sw, run.first) {
            (1, true) => {
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = v;
                }
            }
            (1, false) => {
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = keep_max(*d, v);
                }
            }
            (2, true) => each_even(dst, src, |_, v| v),
            (2, false) => each_even(dst, src, keep_max),
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

/// `dst[i] = f(dst[i], src[2 * i])` for the `i` of `dst` that `src` reaches, read by pairs
/// (the even elements de-interleaved, which vectorises) rather than a strided scalar loop.
#[inline(always)]
fn each_even<T: Copy>(dst: &mut [T], src: &[T], f: impl Fn(T, T) -> T) {
    let (pairs, rest) = src.as_chunks::<2>();
    for (d, p) in dst.iter_mut().zip(pairs) {
        *d = f(*d, p[0]);
    }
    if let (Some(&v), Some(d)) = (rest.first(), dst.get_mut(pairs.len())) {
        *d = f(*d, v);
    }
}

pub(super) fn avg_pool(x: &Value, a: &PoolAttrs, avg: Avg, out: DataType) -> Result<Value> {
    let g = PoolGeom::new(x.shape(), a)?;
    let dims = g.out_dims();
    if g.nchw {
        let planes = match x {
            Value::F32(v) => v.as_slice().map(|s| avg_pool_planes(s, &g, avg)),
            Value::F64(v) => v.as_slice().map(|s| avg_pool_planes(s, &g, avg)),
            _ => None,
        };
        if let Some(y) = planes {
            return from_f64(out, &dims, y?);
        }
    }
    let src = floats(x, "x")?;
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

/// NCHW average pooling plane by plane, reading x in its own type (no f64 copy of it): each
/// window summed in f64 in the order of [`avg_pool`]'s scan (rows, then columns), so the same
/// bits; the rows and columns of each output row and column found once.
fn avg_pool_planes<T: Elem>(src: &[T], g: &PoolGeom, avg: Avg) -> Result<Vec<f64>> {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    let mut y = alloc(numel(&[g.n, g.c, plane_out])?, 0.0f64)?;
    if plane_out == 0 || y.is_empty() {
        return Ok(y);
    }
    let rows: Vec<_> = (0..g.oh).map(|oy| g.row_span(oy)).collect();
    let cols: Vec<_> = (0..g.ow).map(|ox| g.col_span(ox)).collect();
    let work = numel(&[g.n, g.c, plane_out, g.kh * g.kw])?;
    par::for_chunks_mut(&mut y, plane_out, work, |start, ys| {
        for (k, yp) in ys.chunks_exact_mut(plane_out).enumerate() {
            let xp = sub(src, (start / plane_out + k) * plane_in, plane_in)?;
            for (yr, (ry, py)) in yp.chunks_exact_mut(g.ow).zip(&rows) {
                for (slot, (rx, px)) in yr.iter_mut().zip(&cols) {
                    let mut sum = 0.0;
                    for iy in ry.clone() {
                        for &v in sub(xp, iy * g.w + rx.start, rx.len())? {
                            sum += v.to_f64();
                        }
                    }
                    let div = if avg.divisor > 0 {
                        avg.divisor
                    } else if avg.exclusive {
                        ry.len() * rx.len()
                    } else {
                        py * px
                    };
                    *slot = sum / div as f64;
                }
            }
        }
        Ok(())
    })?;
    Ok(y)
}

fn pool_factory(info: &NodeInfo) -> Result<Kernel> {
    let a = pool_attrs(info)?;
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

/// MaxPool/MaxPoolV3/AvgPool/AvgPoolV2's attributes.
fn pool_attrs(info: &NodeInfo) -> Result<PoolAttrs> {
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
    Ok(PoolAttrs {
        nchw,
        k: hw[0],
        s: hw[1],
        pad,
        global: !v1 && info.bool("global_pooling", false)?,
        avg,
    })
}

/// An NCHW max pool of f32 or f64 written into a plan's buffer (the allocating kernel's
/// [`max_pool`], without its new output and the fill of it).
pub(crate) struct MaxPoolInto {
    a: PoolAttrs,
}

impl MaxPoolInto {
    pub(crate) fn of(info: &NodeInfo) -> Result<Option<MaxPoolInto>> {
        if !matches!(info.op(), "MaxPool" | "MaxPoolV3") {
            return Ok(None);
        }
        // Bad attributes: the allocating kernel reports them.
        match pool_attrs(info) {
            Ok(a) if a.nchw && a.avg.is_none() => Ok(Some(MaxPoolInto { a })),
            _ => Ok(None),
        }
    }

    /// x as a slice and the geometry, when x is a standard-layout array of `T` whose pooled
    /// dims are `dims`.
    fn operands<'v, T: ElemArray>(
        &self,
        args: &[Option<&'v Value>],
        dims: &[usize],
    ) -> Option<(&'v [T], PoolGeom)> {
        let x = T::array(args.first().copied().flatten()?)?;
        let g = PoolGeom::new(x.shape(), &self.a).ok()?;
        (g.out_dims() == dims).then_some(())?;
        Some((x.as_slice()?, g))
    }

    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        match dtype {
            DataType::FLOAT => self.operands::<f32>(args, dims).is_some(),
            DataType::DOUBLE => self.operands::<f64>(args, dims).is_some(),
            _ => false,
        }
    }

    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        fn go<T: ElemArray + PartialOrd + Send + Sync>(
            m: &MaxPoolInto,
            args: &[Option<&Value>],
            d: Dest<'_>,
        ) -> Result<()> {
            let (x, g) = m
                .operands::<T>(args, d.dims)
                .ok_or_else(|| Error::kernel("internal error: a max pool it does not take"))?;
            let dt = d.out.dtype();
            let y = out_slice::<T>(d.out, d.range)
                .ok_or_else(|| Error::kernel(format!("an output buffer of {dt} does not fit")))?;
            if y.len() != numel(&g.out_dims())? {
                return Err(Error::kernel(
                    "internal error: a max pool output of another size",
                ));
            }
            max_pool_planes(x, &g, T::from_f64(f64::NEG_INFINITY), y)
        }
        match d.out.dtype() {
            DataType::FLOAT => go::<f32>(self, args, d),
            DataType::DOUBLE => go::<f64>(self, args, d),
            dt => Err(Error::unsupported(format!("a max pool into {dt}"))),
        }
    }
}

fn global_avg_pool_factory(info: &NodeInfo) -> Result<Kernel> {
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        need_rank("GlobalAveragePool", xs, 3)?;
        let inner: usize = xs[2..].iter().product();
        // Each plane summed in f64 in order; f32 and f64 read as they are (no f64 copy of x).
        fn means<T: Elem>(v: &[T], inner: usize) -> Vec<f64> {
            plane_sums(v, inner)
                .into_iter()
                .map(|s| s / inner as f64)
                .collect()
        }
        let y: Vec<f64> = if inner == 0 {
            vec![f64::NAN; xs[0] * xs[1]]
        } else {
            match x {
                Value::F32(a) => means(&std_slice(a), inner),
                Value::F64(a) => means(&std_slice(a), inner),
                _ => means(&floats(x, "x")?, inner),
            }
        };
        let mut dims = vec![xs[0], xs[1]];
        dims.resize(xs.len(), 1);
        Ok(vec![from_f64(float_out(out, x.dtype()), &dims, y)?])
    }))
}

/// The f64 sum of each plane of `inner` elements of `v`, each added in order from -0.0, so each
/// is what `iter().sum()` gives (-0.0 for a plane of -0.0s); eight planes at a time, so the sums' additions are eight
/// independent chains rather than one (a plane's chain waits on each addition's latency).
fn plane_sums<T: Elem>(v: &[T], inner: usize) -> Vec<f64> {
    const LANES: usize = 8;
    let mut out = Vec::with_capacity(v.len().checked_div(inner).unwrap_or(0));
    if inner == 0 {
        return out;
    }
    let mut blocks = v.chunks_exact(inner * LANES);
    for b in &mut blocks {
        let mut acc = [-0.0f64; LANES];
        for i in 0..inner {
            for (l, a) in acc.iter_mut().enumerate() {
                *a += b[l * inner + i].to_f64();
            }
        }
        out.extend_from_slice(&acc);
    }
    for c in blocks.remainder().chunks_exact(inner) {
        out.push(c.iter().fold(-0.0f64, |s, e| s + e.to_f64()));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Pooling (Caffe)
// ---------------------------------------------------------------------------------------------

/// `name`: `n` values >= `min`.
fn list_at_least<const N: usize>(
    info: &NodeInfo,
    name: &str,
    default: [i64; N],
    min: i64,
    order: &str,
) -> Result<[usize; N]> {
    let v = info.ints(name)?.unwrap_or_else(|| default.to_vec());
    let bad = || {
        bad_attr(
            info,
            format!("attribute '{name}' must be {N} values >= {min} ({order}), got {v:?}"),
        )
    };
    if v.len() != N {
        return Err(bad());
    }
    let mut out = [0; N];
    for (o, &x) in out.iter_mut().zip(&v) {
        if x < min {
            return Err(bad());
        }
        *o = usize::try_from(x).map_err(|_| bad())?;
    }
    Ok(out)
}

fn pooling_factory(info: &NodeInfo) -> Result<Kernel> {
    let avg = match info.int("mode", 0)? {
        0 => false,
        1 => true,
        2 => {
            return Err(Error::unsupported(
                "Pooling with mode 2 (stochastic pooling)",
            ))
        }
        m => {
            return Err(bad_attr(
                info,
                format!("attribute 'mode' must be 0 (max), 1 (average) or 2 (stochastic), got {m}"),
            ))
        }
    };
    let nchw = layout_2d(info, 0, "NCHW")?;
    let k = list_at_least(info, "window", [1, 1], 1, "h, w")?;
    let s = list_at_least(info, "stride", [1, 1], 1, "h, w")?;
    let [pt, pb, pl, pr] = list_at_least(info, "pad", [0; 4], 0, "top, bottom, left, right")?;
    let dil = list_at_least(info, "dilation", [1; 4], 1, "4 values")?;
    if dil != [1; 4] {
        return Err(Error::unsupported(format!(
            "Pooling with dilation {dil:?} (Caffe pooling has none)"
        )));
    }
    let ceil = match info.int("ceil_mode", 0)? {
        0 => true,
        1 => false,
        m => {
            return Err(bad_attr(
                info,
                format!("attribute 'ceil_mode' must be 0 (ceil) or 1 (floor), got {m}"),
            ))
        }
    };
    let int8_avg = || Error::unsupported("Pooling with mode 1 (average) of an int8 x (quantized)");
    if avg && input_desc(info, 0).is_some_and(|d| d.dtype == DataType::INT8) {
        return Err(int8_avg());
    }
    let a = PoolAttrs {
        nchw,
        k,
        s,
        pad: PoolPad::Explicit {
            pads: [pt, pb, pl, pr],
            ceil,
        },
        global: info.bool("global_pooling", false)?,
        avg: avg.then_some(Avg {
            exclusive: false,
            divisor: 0,
        }),
    };
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let y = match a.avg {
            Some(_) if x.dtype() == DataType::INT8 => return Err(int8_avg()),
            Some(avg) => avg_pool(x, &a, avg, float_out(out, x.dtype()))?,
            None => {
                let y = map_array!(x, v => max_pool(v, &a)?);
                // int8 gives int32 (the prototype's output types).
                let dt = out.filter(|&d| crate::value::supported_dtype(d));
                match dt {
                    Some(d) if d != y.dtype() => y.cast(d)?,
                    None if y.dtype() == DataType::INT8 => y.cast(DataType::INT32)?,
                    _ => y,
                }
            }
        };
        Ok(vec![y])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (
        &["MaxPool", "MaxPoolV3", "AvgPool", "AvgPoolV2"],
        pool_factory,
    ),
    (&["GlobalAveragePool"], global_avg_pool_factory),
    (&["Pooling"], pooling_factory),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::{arr, factory, li, node, unsupported};
    use crate::kernels::conv::nd::depthwise::levels;
    use es_core::attr::AttrValue;
    use ndarray::IxDyn;
    use proptest::prelude::*;

    #[test]
    fn max_pool_skips_nan_like_the_onnx_reference() {
        // The reference's MaxPool (numpy's nanmax): [1, NaN] gives 1, [NaN, -2] gives -2, an
        // all-NaN window NaN, -inf an ordinary value; NCHW (planes) and NHWC (scan) alike.
        let n = f32::NAN;
        let ninf = f32::NEG_INFINITY;
        let x = arr(&[1, 1, 1, 8], vec![1.0, n, -2.0, n, n, ninf, ninf, 3.0]);
        for nchw in [true, false] {
            let x = if nchw {
                x.clone()
            } else {
                x.clone()
                    .into_shape_with_order(IxDyn(&[1, 1, 8, 1]))
                    .unwrap()
            };
            let a = PoolAttrs {
                nchw,
                k: [1, 2],
                s: [1, 1],
                pad: PoolPad::Explicit {
                    pads: [0; 4],
                    ceil: false,
                },
                global: false,
                avg: None,
            };
            let y: Vec<f32> = max_pool(&x, &a).unwrap().iter().copied().collect();
            let want = [1.0, -2.0, -2.0, n, ninf, ninf, 3.0];
            assert_eq!(y.len(), want.len());
            for (g, w) in y.iter().zip(want) {
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "{y:?}"
                );
            }
        }
    }

    proptest! {
        /// The NCHW plane-by-plane max pool keeps exactly the element the window-by-window scan
        /// keeps (NaN skipped, the first of +0/-0): checked against the NHWC scan of the same data.
        #[test]
        fn separable_max_pool_matches_the_window_scan(
            ([n, c, h, w], geo) in pool_case(),
            picks in proptest::collection::vec(0usize..6, 512),
        ) {
            const VALUES: [f32; 6] = [f32::NAN, 0.0, -0.0, 1.0, -2.0, f32::NEG_INFINITY];
            let len = n * c * h * w;
            let data: Vec<f32> = (0..len).map(|i| VALUES[picks[i % picks.len()]]).collect();
            let x = ArrayD::from_shape_vec(IxDyn(&[n, c, h, w]), data).unwrap();
            let attrs = |nchw| PoolAttrs { nchw, ..geo };
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
                    // Every vector level the CPU has keeps the same elements.
                    let g = PoolGeom::new(x.shape(), &attrs(true)).unwrap();
                    for level in levels() {
                        let mut y = vec![0.5f32; a.len()];
                        max_pool_planes_at(x.as_slice().unwrap(), &g, f32::NEG_INFINITY, &mut y, level).unwrap();
                        for (p, q) in y.iter().zip(b.iter()) {
                            prop_assert_eq!(p.to_bits(), q.to_bits(), "{:?}", level);
                        }
                    }
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "one failed: {:?} vs {:?}", a.err(), b.err()),
            }
        }
    }

    /// Planes larger than a group (4096 elements) and many small planes in one group, at every
    /// vector level, the same bits as the window scan; "same" 3x3 windows (the flat passes) and
    /// GoogLeNet's 3x3/2 ceil-mode one (the row passes).
    #[test]
    fn max_pool_groups_of_planes_match_the_window_scan() {
        for (dims, k, s, pads, ceil) in [
            ([1, 3, 70, 65], 3, 1, [1, 1, 1, 1], false),
            ([2, 37, 7, 7], 3, 1, [1, 1, 1, 1], false),
            ([1, 5, 1, 1], 3, 1, [1, 1, 1, 1], false),
            ([1, 19, 9, 13], 5, 1, [2, 2, 2, 2], false),
            ([1, 6, 112, 112], 3, 2, [0; 4], true),
            ([1, 21, 14, 14], 3, 2, [0; 4], true),
        ] {
            let len: usize = dims.iter().product();
            let data: Vec<f32> = (0..len)
                .map(|i| ((i * 7919) % 1013) as f32 - 500.0)
                .collect();
            let x = ArrayD::from_shape_vec(IxDyn(&dims), data).unwrap();
            let attrs = |nchw| PoolAttrs {
                nchw,
                k: [k, k],
                s: [s, s],
                pad: PoolPad::Explicit { pads, ceil },
                global: false,
                avg: None,
            };
            let nhwc = x
                .view()
                .permuted_axes(IxDyn(&[0, 2, 3, 1]))
                .as_standard_layout()
                .into_owned();
            let b = max_pool(&nhwc, &attrs(false))
                .unwrap()
                .permuted_axes(IxDyn(&[0, 3, 1, 2]));
            let g = PoolGeom::new(x.shape(), &attrs(true)).unwrap();
            for level in levels() {
                let mut y = vec![0.5f32; b.len()];
                max_pool_planes_at(x.as_slice().unwrap(), &g, f32::NEG_INFINITY, &mut y, level)
                    .unwrap();
                assert!(
                    y.iter().zip(b.iter()).all(|(p, q)| p == q),
                    "{dims:?} {level:?}"
                );
            }
        }
    }

    /// A small x's dims [n, c, h, w] and a pooling geometry (NCHW, max) over them: windows and
    /// strides 1-3, pads smaller than the window (as the operators require), SAME or explicit
    /// with either rounding.
    fn pool_case() -> impl Strategy<Value = ([usize; 4], PoolAttrs)> {
        (
            (1usize..3, 1usize..4, 1usize..9, 1usize..9),
            (1usize..4, 1usize..4),
            (1usize..4, 1usize..4),
            proptest::array::uniform4(0usize..3),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|((n, c, h, w), k, s, pads, ceil, same)| {
                let pads = [pads[0] % k.0, pads[1] % k.0, pads[2] % k.1, pads[3] % k.1];
                let pad = if same {
                    PoolPad::Same
                } else {
                    PoolPad::Explicit { pads, ceil }
                };
                let geo = PoolAttrs {
                    nchw: true,
                    k: [k.0, k.1],
                    s: [s.0, s.1],
                    pad,
                    global: false,
                    avg: None,
                };
                ([n, c, h, w], geo)
            })
    }

    /// `x` (f32 or f64) with its axes permuted, in standard layout.
    fn permuted(x: &Value, p: &[usize]) -> Value {
        match x {
            Value::F32(a) => Value::F32(
                a.view()
                    .permuted_axes(IxDyn(p))
                    .as_standard_layout()
                    .into_owned(),
            ),
            Value::F64(a) => Value::F64(
                a.view()
                    .permuted_axes(IxDyn(p))
                    .as_standard_layout()
                    .into_owned(),
            ),
            _ => unreachable!("f32 or f64"),
        }
    }

    proptest! {
        /// The NCHW plane-by-plane average pool (x read in its own type) gives the bits of the
        /// window-by-window scan (over x converted to f64), f32 and f64, every divisor rule.
        #[test]
        fn planar_avg_pool_matches_the_window_scan(
            ([n, c, h, w], geo) in pool_case(),
            exclusive in any::<bool>(),
            divisor in 0usize..3,
            data in proptest::collection::vec(-1e3f64..1e3, 200),
        ) {
            let len = n * c * h * w;
            let data: Vec<f64> = (0..len).map(|i| data[i % data.len()]).collect();
            let avg = Avg { exclusive, divisor };
            let attrs = |nchw| PoolAttrs { nchw, avg: Some(avg), ..geo };
            let x = ArrayD::from_shape_vec(IxDyn(&[n, c, h, w]), data).unwrap();
            for x in [Value::F64(x.clone()), Value::F32(x.mapv(|v| v as f32))] {
                let dt = x.dtype();
                let planes = avg_pool(&x, &attrs(true), avg, dt);
                let nhwc = permuted(&x, &[0, 2, 3, 1]);
                let scan = avg_pool(&nhwc, &attrs(false), avg, dt);
                match (planes, scan) {
                    (Ok(a), Ok(b)) => {
                        let b = permuted(&b, &[0, 3, 1, 2]);
                        prop_assert_eq!(a.shape(), b.shape());
                        let (a, b) = (a.to_f64_vec(), b.to_f64_vec());
                        for (p, q) in a.iter().zip(&b) {
                            prop_assert_eq!(p.to_bits(), q.to_bits());
                        }
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => prop_assert!(false, "one failed: {:?} vs {:?}", a.err(), b.err()),
                }
            }
        }
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

    fn pool(attrs: &[(&str, AttrValue)], x: &Value) -> Result<Value> {
        let n = node("Pooling", attrs);
        let k = factory(pooling_factory, &n, Vec::new())?;
        Ok(k(&[Some(x)])?.remove(0))
    }

    #[test]
    fn plane_sums_add_each_plane_in_order() {
        // Values whose f64 sum depends on the order: eight-plane blocks and the remainder give
        // exactly the in-order sum of each plane.
        for (planes, inner) in [(1, 5), (8, 3), (19, 7), (16, 1), (3, 0)] {
            let v: Vec<f32> = (0..planes * inner)
                .map(|i| {
                    if i % 3 == 0 {
                        1e8
                    } else {
                        (i as f32) * 0.37 - 3.3e-3
                    }
                })
                .collect();
            let want: Vec<f64> = if inner == 0 {
                vec![]
            } else {
                v.chunks_exact(inner)
                    .map(|c| c.iter().map(|&e| e as f64).sum::<f64>())
                    .collect()
            };
            let got = plane_sums(&v, inner);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_bits(), w.to_bits(), "{planes}x{inner}");
            }
        }
    }

    #[test]
    fn global_average_pool_sums_each_plane_in_f64() {
        // Values whose f32 running sum would round: the f64 sum, rounded once.
        let vals: Vec<f32> = (0..2 * 3 * 7)
            .map(|i| 1.0 + i as f32 * 1e-7 + (i % 3) as f32 * 3e7)
            .collect();
        let n = node("GlobalAveragePool", &[]);
        let k = factory(global_avg_pool_factory, &n, Vec::new()).unwrap();
        for strided in [false, true] {
            let mut a = arr(&[2, 3, 7, 1], vals.clone());
            if strided {
                // The same values, not in standard layout.
                let mut t = arr(&[2, 3, 1, 7], vals.clone());
                t.swap_axes(2, 3);
                a = t;
            }
            let y = k(&[Some(&Value::F32(a))]).unwrap().remove(0);
            assert_eq!(y.shape(), &[2, 3, 1, 1]);
            let got = y.to_f64_vec();
            for (p, plane) in vals.chunks(7).enumerate() {
                let want = (plane.iter().map(|&v| f64::from(v)).sum::<f64>() / 7.0) as f32;
                assert_eq!(got[p] as f32, want, "plane {p}, strided {strided}");
            }
        }
    }

    #[test]
    fn caffe_pooling() {
        let x = Value::F32(arr(&[1, 1, 3, 3], (1..=9).map(|v| v as f32).collect()));
        let w2 = [("window", li(&[2, 2])), ("stride", li(&[2, 2]))];
        // Ceil mode (the default): 2x2 outputs, the last windows clipped.
        let y = pool(&w2, &x).unwrap();
        assert_eq!(y.to_f64_vec(), [5., 6., 8., 9.]);
        let mut avg = w2.to_vec();
        avg.push(("mode", AttrValue::Int(1)));
        let y = pool(&avg, &x).unwrap();
        assert_eq!(y.to_f64_vec(), [3., 4.5, 7.5, 9.]);
        // Floor mode: one window.
        avg.push(("ceil_mode", AttrValue::Int(1)));
        assert_eq!(pool(&avg, &x).unwrap().to_f64_vec(), [3.]);
        // Pads count in the average's divisor (Caffe's pool_size).
        let p = [
            ("mode", AttrValue::Int(1)),
            ("window", li(&[3, 3])),
            ("stride", li(&[2, 2])),
            ("pad", li(&[1, 1, 1, 1])),
        ];
        let y = pool(&p, &x).unwrap();
        let want = [12. / 9., 16. / 9., 24. / 9., 28. / 9.];
        for (g, w) in y.to_f64_vec().iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
        // Global pooling; int8 max gives int32.
        let g = [
            ("mode", AttrValue::Int(1)),
            ("global_pooling", AttrValue::Bool(true)),
        ];
        assert_eq!(pool(&g, &x).unwrap().to_f64_vec(), [5.]);
        let xi = Value::I8(arr(&[1, 1, 2, 2], vec![-5, 7, 3, -128]));
        let y = pool(&[("global_pooling", AttrValue::Bool(true))], &xi).unwrap();
        assert_eq!(y, Value::I32(arr(&[1, 1, 1, 1], vec![7])));
    }

    #[test]
    fn pooling_errors() {
        let x = Value::F32(arr(&[1, 1, 3, 3], vec![0.0; 9]));
        let n = node("Pooling", &[("mode", AttrValue::Int(2))]);
        let e = unsupported(factory(pooling_factory, &n, Vec::new()));
        assert!(e.contains("stochastic"), "{e}");
        assert!(pool(&[("mode", AttrValue::Int(7))], &x).is_err());
        let n = node("Pooling", &[("dilation", li(&[1, 1, 2, 2]))]);
        let e = unsupported(factory(pooling_factory, &n, Vec::new()));
        assert!(e.contains("dilation"), "{e}");
        assert!(pool(&[("ceil_mode", AttrValue::Int(2))], &x).is_err());
        assert!(pool(&[("window", li(&[0, 1]))], &x).is_err());
        assert!(pool(&[("pad", li(&[0, 0, 0]))], &x).is_err());
        let xi = Value::I8(arr(&[1, 1, 2, 2], vec![0; 4]));
        let e = pool(&[("mode", AttrValue::Int(1))], &xi).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
