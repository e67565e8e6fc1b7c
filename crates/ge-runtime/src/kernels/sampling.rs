//! Resampling and detection kernels: ResizeNearestNeighborV2, ResizeBilinearV2, Resize,
//! GridSampler2D/3D, ROIAlign, NonMaxSuppressionV6.
//!
//! - **ResizeNearestNeighborV2 / ResizeBilinearV2** follow TensorFlow's CPU kernels exactly: the
//!   scale is `in / out` (`(in - 1) / (out - 1)` with `align_corners` and `out > 1`), in f32;
//!   nearest takes `floor(o * scale)` (`round` half away from zero with `align_corners`;
//!   `floor((o + 0.5) * scale)` with `half_pixel_centers`), clamped to the input; bilinear samples
//!   at `o * scale` (`(o + 0.5) * scale - 0.5` with `half_pixel_centers`) between the rows
//!   `max(floor, 0)` and `min(ceil, in - 1)`, lerping top, bottom, then across, in f32 (as
//!   TensorFlow does, whatever the input dtype); its output is rounded to the `dtype` attribute
//!   (a float-to-uint8 conversion truncates and saturates). The layout is x's tensor format:
//!   NCHW, anything else NHWC (as the shape rule reads it). `size` may be a run-time value.
//!   A non-zero `scales` attribute is not supported.
//! - **Resize** follows ONNX Resize (opsets 11-13): one value of `scales` or `sizes` per dim, or
//!   `[h, w]` for a 4-D x (placed by its format); empty inputs count as absent. `scales` gives
//!   `floor(in * scale)` outputs and is itself the coordinate scale; `sizes` gives the scale
//!   `out / in`. Every coordinate transformation mode (half_pixel, pytorch_half_pixel,
//!   align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with `roi` [starts,
//!   ends], `extrapolation_value` where the coordinate leaves [0, in - 1] on any axis), nearest
//!   (four rounding modes, indices clamped), linear and cubic (`cubic_coeff_a`,
//!   `exclude_outside`) modes. Source coordinates are computed in f32 as onnxruntime does (so
//!   nearest picks the same pixels); a dim of scale 1 is left as it is (onnxruntime's rule),
//!   except with tf_crop_and_resize. Linear and cubic are separable passes over the resized
//!   axes, innermost first (the ONNX reference's recursion), with edge-clamped neighbours;
//!   weights in f64; values in f32 for f32/f16/bf16 (rounded once at the end), f64 for f64, and
//!   f64 rounded half away from zero (saturating) for integers. Nearest copies elements of any
//!   dtype.
//! - **GridSampler2D / GridSampler3D** follow PyTorch's `grid_sample` (CPU): x NCHW (3D: NCDHW or
//!   NDHWC by `data_format`), grid [N, H_out, W_out, 2] of (x, y) (3D: [..., 3] of (x, y, z)),
//!   bilinear/trilinear, nearest (round half to even) and, in 2D, bicubic (A = -0.75, padding
//!   applied to each tap); padding zeros, border or reflection; align_corners. f32 and f64 in
//!   their own precision, f16/bf16 in f32.
//! - **ROIAlign** follows CANN's definition: rois [R, 5] rows (batch index, x1, y1, x2, y2)
//!   scaled by `spatial_scale`; `roi_end_mode` 0: as is, 1: the ends + 1 before scaling
//!   (`end * scale + scale`), 2 and 3: every coordinate - 0.5 after scaling (aligned; CANN's
//!   reference treats its "PyTorch" and "MMDetection v0.6" modes alike); with modes 0 and 1 the
//!   region is at least 1 x 1; the batch index is truncated toward zero. `sample_num` points per bin side (0: `ceil`
//!   of the bin size), Caffe2/mmcv bilinear sampling (points beyond one pixel outside give 0),
//!   `pool_mode` avg (each sample divided by the count, then summed) or max (of the sampled
//!   values); a bin without samples gives 0. Features NCHW or NHWC by their format; f32
//!   arithmetic. `rois_n` is reserved by GE and ignored. A batch index outside the features is
//!   an error.
//! - **NonMaxSuppressionV6** follows ONNX NonMaxSuppression (as onnxruntime computes it, in
//!   f32): per batch and class, boxes with score > score_threshold (all but NaN scores without
//!   one) by descending score (ties: lower index first), each kept unless its IoU with a kept
//!   box is > iou_threshold (which must lie in [0, 1]); at most max_output_size (absent: 0,
//!   negative: 0) per class. Output int32 [num_selected, 3] of (batch, class, box) in that
//!   order; a positive `max_boxes_size` caps the rows (no padding).

use super::index::{
    alloc, array, bad_attr, cast_to, ints, numel, std_slice, str_attr, strides_of, with_capacity,
    Pick,
};
use super::{input, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use crate::map_array;
use crate::value::{Elem, Value};
use es_core::attr::AttrValue;
use es_core::{DataType, Format};
use rustc_hash::FxHashMap;
use std::ops::{Add, Div, Mul, Rem, Sub};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A float type kernels compute in (f32 or f64).
trait Real:
    Pick
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    fn of(v: f64) -> Self;
    fn of_i(v: i64) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
    fn round_even(self) -> Self;
    /// Truncated toward zero, saturating (NaN gives 0).
    fn to_i64(self) -> i64;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn of(v: f64) -> Self {
                v as $t
            }
            fn of_i(v: i64) -> Self {
                v as $t
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
        }
    };
}
real!(f32);
real!(f64);

/// `len` elements of `s` from `start`.
fn sub<T>(s: &[T], start: usize, len: usize) -> Result<&[T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

fn sub_mut<T>(s: &mut [T], start: usize, len: usize) -> Result<&mut [T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get_mut(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

/// A value of dtype `dt` from elements of a working type in standard order.
fn real_out<W: Real>(dims: &[usize], v: Vec<W>, dt: DataType) -> Result<Value> {
    let a = W::wrap(array(dims, v)?);
    if dt == W::DTYPE {
        Ok(a)
    } else {
        a.cast(dt)
    }
}

/// The one number held by `v`.
fn one_value(v: &Value, what: &str) -> Result<f64> {
    match v.to_f64_vec().as_slice() {
        [x] => Ok(*x),
        _ => Err(Error::kernel(format!(
            "{what} must hold one value, got shape {:?}",
            v.shape()
        ))),
    }
}

/// A required attribute's presence.
fn required(info: &NodeInfo, name: &str) -> Result<()> {
    match info.attr(name) {
        Some(_) => Ok(()),
        None => Err(bad_attr(info, format!("attribute '{name}' is required"))),
    }
}

/// Row-major odometer over `dims` except the last: calls `f` with the outer position for each
/// row of the last dim (once with an empty position for rank 1). `dims` must not be empty or
/// hold a zero.
fn for_each_row(dims: &[usize], mut f: impl FnMut(&[usize]) -> Result<()>) -> Result<()> {
    let Some(outer) = dims.len().checked_sub(1) else {
        return Ok(());
    };
    let mut pos = vec![0usize; outer];
    loop {
        f(&pos)?;
        let mut d = outer;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < dims[d] {
                break;
            }
            pos[d] = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ResizeNearestNeighborV2 / ResizeBilinearV2 (TensorFlow)
// ---------------------------------------------------------------------------------------------

/// A 4-D image batch: sizes and layout.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Img {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    nchw: bool,
}

impl Img {
    fn of(shape: &[usize], nchw: bool, what: &str) -> Result<Img> {
        let &[a, b, c, d] = shape else {
            return Err(Error::kernel(format!(
                "{what} must be 4-D, got shape {shape:?}"
            )));
        };
        Ok(if nchw {
            Img {
                n: a,
                c: b,
                h: c,
                w: d,
                nchw,
            }
        } else {
            Img {
                n: a,
                c: d,
                h: b,
                w: c,
                nchw,
            }
        })
    }
    fn dims(&self) -> Vec<usize> {
        if self.nchw {
            vec![self.n, self.c, self.h, self.w]
        } else {
            vec![self.n, self.h, self.w, self.c]
        }
    }
    fn with_hw(self, h: usize, w: usize) -> Img {
        Img { h, w, ..self }
    }
}

/// TensorFlow's resize scale, in f32 as TensorFlow computes it.
fn tf_scale(inp: usize, out: usize, align: bool) -> f32 {
    if align && out > 1 {
        (inp - 1) as f32 / (out - 1) as f32
    } else {
        inp as f32 / out as f32
    }
}

/// Source indices of nearest-neighbour resizing (TensorFlow's ResizeNearestNeighbor).
fn tf_nearest_map(inp: usize, out: usize, align: bool, half: bool) -> Vec<usize> {
    let scale = tf_scale(inp, out, align);
    let last = inp as i64 - 1;
    (0..out)
        .map(|o| {
            let s = if half {
                (o as f32 + 0.5) * scale
            } else {
                o as f32 * scale
            };
            let i = if align { s.round() } else { s.floor() } as i64;
            i.min(last).max(0) as usize
        })
        .collect()
}

/// (lower, upper, lerp) of bilinear resizing (TensorFlow's compute_interpolation_weights).
fn tf_linear_map(inp: usize, out: usize, align: bool, half: bool) -> Vec<(usize, usize, f32)> {
    let scale = tf_scale(inp, out, align);
    let last = inp as i64 - 1;
    (0..out)
        .map(|o| {
            let s = if half {
                (o as f32 + 0.5) * scale - 0.5
            } else {
                o as f32 * scale
            };
            let f = s.floor();
            let lo = (f as i64).clamp(0, last) as usize;
            let hi = (s.ceil() as i64).clamp(0, last) as usize;
            (lo, hi, s - f)
        })
        .collect()
}

fn tf_gather<T: Copy>(x: &[T], g: Img, ys: &[usize], xs: &[usize]) -> Result<Vec<T>> {
    let total = numel(&[g.n, g.c, ys.len(), xs.len()])?;
    let mut out = with_capacity(total)?;
    if total == 0 {
        return Ok(out);
    }
    let (h, w, c) = (g.h, g.w, g.c);
    if g.nchw {
        for p in 0..g.n * c {
            let plane = sub(x, p * h * w, h * w)?;
            for &y in ys {
                let row = sub(plane, y * w, w)?;
                for &xi in xs {
                    out.push(row[xi]);
                }
            }
        }
    } else {
        for n in 0..g.n {
            let img = sub(x, n * h * w * c, h * w * c)?;
            for &y in ys {
                let row = sub(img, y * w * c, w * c)?;
                for &xi in xs {
                    out.extend_from_slice(sub(row, xi * c, c)?);
                }
            }
        }
    }
    Ok(out)
}

/// TensorFlow's compute_lerp.
fn tf_lerp(tl: f32, tr: f32, bl: f32, br: f32, xl: f32, yl: f32) -> f32 {
    let top = tl + (tr - tl) * xl;
    let bottom = bl + (br - bl) * xl;
    top + (bottom - top) * yl
}

type LinMap = [(usize, usize, f32)];

fn tf_bilinear(x: &[f32], g: Img, ys: &LinMap, xs: &LinMap) -> Result<Vec<f32>> {
    let total = numel(&[g.n, g.c, ys.len(), xs.len()])?;
    let mut out = with_capacity(total)?;
    if total == 0 {
        return Ok(out);
    }
    let (h, w, c) = (g.h, g.w, g.c);
    if g.nchw {
        for p in 0..g.n * c {
            let plane = sub(x, p * h * w, h * w)?;
            for &(y0, y1, yl) in ys {
                let (r0, r1) = (sub(plane, y0 * w, w)?, sub(plane, y1 * w, w)?);
                for &(x0, x1, xl) in xs {
                    out.push(tf_lerp(r0[x0], r0[x1], r1[x0], r1[x1], xl, yl));
                }
            }
        }
    } else {
        for n in 0..g.n {
            let img = sub(x, n * h * w * c, h * w * c)?;
            for &(y0, y1, yl) in ys {
                let (r0, r1) = (sub(img, y0 * w * c, w * c)?, sub(img, y1 * w * c, w * c)?);
                for &(x0, x1, xl) in xs {
                    let (tl, tr) = (sub(r0, x0 * c, c)?, sub(r0, x1 * c, c)?);
                    let (bl, br) = (sub(r1, x0 * c, c)?, sub(r1, x1 * c, c)?);
                    for k in 0..c {
                        out.push(tf_lerp(tl[k], tr[k], bl[k], br[k], xl, yl));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The [new_height, new_width] of a `size` input.
fn tf_size(v: &Value) -> Result<(usize, usize)> {
    let s = ints(v);
    match s.as_slice() {
        &[h, w] if h > 0 && w > 0 => Ok((h as usize, w as usize)),
        _ => Err(Error::kernel(format!(
            "size must hold 2 positive values [new_height, new_width], got {s:?}"
        ))),
    }
}

fn tf_resize_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let bilinear = op == "ResizeBilinearV2";
    let align = info.bool("align_corners", false)?;
    let half = info.bool("half_pixel_centers", false)?;
    if align && half {
        return Err(bad_attr(
            info,
            "attributes 'align_corners' and 'half_pixel_centers' cannot both be true",
        ));
    }
    match info.attr("scales") {
        None => {}
        Some(AttrValue::ListFloat(v)) if v.iter().all(|&s| s == 0.0) => {}
        Some(AttrValue::ListFloat(v)) => {
            return Err(Error::unsupported(format!(
                "{op} with non-zero scales {v:?}"
            )))
        }
        Some(_) => {
            return Err(bad_attr(
                info,
                "attribute 'scales' must be a list of floats",
            ))
        }
    }
    let nchw = info
        .inputs
        .first()
        .and_then(Option::as_ref)
        .is_some_and(|d| d.format == Format::NCHW);
    let out_dt = if bilinear {
        Some(info.out_dtype(0)?)
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (oh, ow) = tf_size(input(inputs, 1)?)?;
        let g = Img::of(x.shape(), nchw, "x")?;
        if g.h == 0 || g.w == 0 {
            return Err(Error::kernel(format!(
                "x must have a non-empty height and width, got shape {:?}",
                x.shape()
            )));
        }
        let dims = g.with_hw(oh, ow).dims();
        let y = match out_dt {
            Some(dt) => {
                let ys = tf_linear_map(g.h, oh, align, half);
                let xs = tf_linear_map(g.w, ow, align, half);
                let xf = cast_to::<f32>(x)?;
                let v = tf_bilinear(&std_slice(&xf), g, &ys, &xs)?;
                real_out(&dims, v, dt)?
            }
            None => {
                let ys = tf_nearest_map(g.h, oh, align, half);
                let xs = tf_nearest_map(g.w, ow, align, half);
                map_array!(x, a => array(&dims, tf_gather(&std_slice(a), g, &ys, &xs)?)?)
            }
        };
        Ok(vec![y])
    }))
}

// ---------------------------------------------------------------------------------------------
// Resize (ONNX)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Coord {
    HalfPixel,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Rounding {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Interp {
    Nearest(Rounding),
    Linear,
    Cubic { a: f64, exclude: bool },
}

#[derive(Clone, Copy, Debug)]
struct ResizeAttrs {
    interp: Interp,
    coord: Coord,
    extrapolation: f64,
    /// The dims a 2-value list addresses in a 4-D x (H and W by its format).
    hw: [usize; 2],
}

/// The source coordinate of output position `o` along one axis, in f32 as onnxruntime computes it
/// (so nearest rounding and the extrapolation test see the same values).
fn source_coord(c: Coord, o: usize, scale: f32, inp: usize, out: usize, roi: (f32, f32)) -> f64 {
    let x = o as f32;
    let (inp_m1, out_m1) = (inp as f32 - 1.0, out as f32 - 1.0);
    f64::from(match c {
        Coord::HalfPixel => (x + 0.5) / scale - 0.5,
        Coord::PytorchHalfPixel => {
            if out > 1 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        Coord::AlignCorners => {
            if out == 1 {
                0.0
            } else {
                x * inp_m1 / out_m1
            }
        }
        Coord::Asymmetric => x / scale,
        Coord::TfHalfPixelForNn => (x + 0.5) / scale,
        Coord::TfCropAndResize => {
            let (start, end) = roi;
            if out > 1 {
                start * inp_m1 + (x * (end - start) * inp_m1) / out_m1
            } else {
                (0.5 * f64::from(start + end) * f64::from(inp_m1)) as f32
            }
        }
    })
}

/// An index (an integral float) clamped to [0, inp - 1]; inp >= 1.
fn clamp_index(v: f64, inp: usize) -> usize {
    if v > 0.0 {
        (v as usize).min(inp - 1)
    } else {
        0
    }
}

/// ONNX's cubic coefficients of the 4 neighbours floor(x) - 1 .. floor(x) + 2 at ratio `t`.
fn onnx_cubic(t: f64, a: f64) -> [f64; 4] {
    let far = |r: f64| ((a * r - 5.0 * a) * r + 8.0 * a) * r - 4.0 * a;
    let near = |r: f64| ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0;
    [far(t + 1.0), near(t), near(1.0 - t), far((1.0 - t) + 1.0)]
}

/// How one axis is resampled: `k` taps (source index, weight) per output position.
#[derive(Debug)]
struct AxisMap {
    inp: usize,
    out: usize,
    k: usize,
    idx: Vec<usize>,
    w: Vec<f64>,
    /// Whether the source coordinate lies outside the input (tf_crop_and_resize only).
    outside: Vec<bool>,
}

impl AxisMap {
    fn new(a: &ResizeAttrs, inp: usize, out: usize, scale: f32, roi: (f32, f32)) -> Result<Self> {
        let k = match a.interp {
            Interp::Nearest(_) => 1,
            Interp::Linear => 2,
            Interp::Cubic { .. } => 4,
        };
        let n = out
            .checked_mul(k)
            .ok_or_else(|| Error::kernel("output too large"))?;
        let mut m = AxisMap {
            inp,
            out,
            k,
            idx: with_capacity(n)?,
            w: with_capacity(n)?,
            outside: with_capacity(out)?,
        };
        if inp == 0 {
            if out > 0 {
                return Err(Error::kernel(format!(
                    "cannot resize an empty dim to {out}"
                )));
            }
            return Ok(m);
        }
        for o in 0..out {
            let x = source_coord(a.coord, o, scale, inp, out, roi);
            m.outside
                .push(a.coord == Coord::TfCropAndResize && !(x >= 0.0 && x <= inp as f64 - 1.0));
            match a.interp {
                Interp::Nearest(r) => {
                    let v = match r {
                        Rounding::RoundPreferFloor if x - x.floor() == 0.5 => x.floor(),
                        Rounding::RoundPreferFloor | Rounding::RoundPreferCeil => x.round(),
                        Rounding::Floor => x.floor(),
                        Rounding::Ceil => x.ceil(),
                    };
                    m.idx.push(clamp_index(v, inp));
                    m.w.push(1.0);
                }
                Interp::Linear => {
                    let f = x.floor();
                    let t = x - f;
                    m.idx.push(clamp_index(f, inp));
                    m.idx.push(clamp_index(f + 1.0, inp));
                    m.w.push(1.0 - t);
                    m.w.push(t);
                }
                Interp::Cubic { a, exclude } => {
                    let f = x.floor();
                    let mut c = onnx_cubic(x - f, a);
                    if exclude {
                        for (i, ci) in c.iter_mut().enumerate() {
                            let j = f - 1.0 + i as f64;
                            if !(j >= 0.0 && j < inp as f64) {
                                *ci = 0.0;
                            }
                        }
                        let s: f64 = c.iter().sum();
                        c.iter_mut().for_each(|ci| *ci /= s);
                    }
                    for (i, ci) in c.into_iter().enumerate() {
                        m.idx.push(clamp_index(f - 1.0 + i as f64, inp));
                        m.w.push(ci);
                    }
                }
            }
        }
        Ok(m)
    }

    /// Whether the map copies its input unchanged.
    fn is_identity(&self) -> bool {
        self.inp == self.out
            && !self.outside.iter().any(|&b| b)
            && self
                .idx
                .chunks_exact(self.k)
                .zip(self.w.chunks_exact(self.k))
                .enumerate()
                .all(|(o, (ix, ws))| {
                    ix.iter()
                        .zip(ws)
                        .all(|(&i, &w)| w == 0.0 || (i == o && w == 1.0))
                        && ws.iter().filter(|&&w| w != 0.0).count() == 1
                })
    }
}

/// One separable pass along `axis` of `src` (of `shape`): the new elements.
fn resize_pass<W: Real>(src: &[W], shape: &[usize], axis: usize, m: &AxisMap) -> Result<Vec<W>> {
    let outer = numel(&shape[..axis])?;
    let inner = numel(&shape[axis + 1..])?;
    let mut dims = shape.to_vec();
    dims[axis] = m.out;
    let total = numel(&dims)?;
    let mut out = alloc(total, W::ZERO)?;
    if total == 0 {
        return Ok(out);
    }
    let ws: Vec<W> = m.w.iter().map(|&w| W::of(w)).collect();
    let (ib, ob) = (m.inp * inner, m.out * inner);
    for o in 0..outer {
        let sblk = sub(src, o * ib, ib)?;
        let dblk = sub_mut(&mut out, o * ob, ob)?;
        for j in 0..m.out {
            let drow = sub_mut(dblk, j * inner, inner)?;
            let taps = (j * m.k..(j + 1) * m.k).map(|t| (m.w[t], ws[t], m.idx[t]));
            for (w64, w, i) in taps {
                if w64 == 0.0 {
                    continue;
                }
                let srow = sub(sblk, i * inner, inner)?;
                for (d, &s) in drow.iter_mut().zip(srow) {
                    *d = *d + w * s;
                }
            }
        }
    }
    Ok(out)
}

/// Gathers (nearest mode) the elements of `src` (of `shape`) through the axis maps (`None`:
/// unchanged axis); `fill` where a source coordinate lies outside.
fn resize_gather<T: Copy>(
    src: &[T],
    shape: &[usize],
    maps: &[Option<AxisMap>],
    out_dims: &[usize],
    fill: T,
) -> Result<Vec<T>> {
    let total = numel(out_dims)?;
    let mut out = with_capacity(total)?;
    if total == 0 {
        return Ok(out);
    }
    if shape.is_empty() {
        out.extend(src.first().copied());
        return Ok(out);
    }
    let strides = strides_of(shape);
    let mut offs = Vec::with_capacity(shape.len());
    let mut bad = Vec::with_capacity(shape.len());
    for (d, m) in maps.iter().enumerate() {
        match m {
            Some(m) => {
                offs.push(m.idx.iter().map(|&i| i * strides[d]).collect::<Vec<_>>());
                bad.push(m.outside.clone());
            }
            None => {
                offs.push((0..shape[d]).map(|i| i * strides[d]).collect());
                bad.push(vec![false; shape[d]]);
            }
        }
    }
    let last = shape.len() - 1;
    let (loffs, lbad) = (&offs[last], &bad[last]);
    for_each_row(out_dims, |pos| {
        let base: usize = pos.iter().enumerate().map(|(d, &p)| offs[d][p]).sum();
        let outer_bad = pos.iter().enumerate().any(|(d, &p)| bad[d][p]);
        for (&o, &b) in loffs.iter().zip(lbad) {
            out.push(if outer_bad || b {
                fill
            } else {
                *src.get(base + o)
                    .ok_or_else(|| Error::kernel("internal error: resize index"))?
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Sets `fill` where any axis' source coordinate lies outside (tf_crop_and_resize).
fn resize_extrapolate<W: Copy>(
    y: &mut [W],
    out_dims: &[usize],
    maps: &[Option<AxisMap>],
    fill: W,
) -> Result<()> {
    if y.is_empty() || out_dims.is_empty() {
        return Ok(());
    }
    let any_outside = |m: &Option<AxisMap>| m.as_ref().is_some_and(|m| m.outside.contains(&true));
    if !maps.iter().any(any_outside) {
        return Ok(());
    }
    let bad: Vec<&[bool]> = maps
        .iter()
        .map(|m| m.as_ref().map_or(&[][..], |m| m.outside.as_slice()))
        .collect();
    let is_bad = |d: usize, p: usize| bad[d].get(p).copied().unwrap_or(false);
    let last = out_dims.len() - 1;
    let row = out_dims[last];
    let mut r = 0usize;
    for_each_row(out_dims, |pos| {
        let outer_bad = pos.iter().enumerate().any(|(d, &p)| is_bad(d, p));
        let dst = sub_mut(y, r * row, row)?;
        for (j, v) in dst.iter_mut().enumerate() {
            if outer_bad || is_bad(last, j) {
                *v = fill;
            }
        }
        r += 1;
        Ok(())
    })
}

/// `v` as an element of `_like`'s type (integers: rounded half away from zero, saturating).
fn fill_like<T: Elem>(_like: &ndarray::ArrayD<T>, v: f64) -> T {
    T::from_f64(if T::INTEGRAL { v.round() } else { v })
}

/// Linear or cubic resizing in the working type `W`.
fn resize_interp<W: Real>(
    x: &Value,
    maps: &[Option<AxisMap>],
    fill: f64,
) -> Result<(Vec<W>, Vec<usize>)> {
    let xw = cast_to::<W>(x)?;
    let mut shape = x.shape().to_vec();
    let mut cur: Option<Vec<W>> = None;
    for (d, m) in maps.iter().enumerate().rev() {
        let Some(m) = m else { continue };
        let next = match &cur {
            Some(c) => resize_pass(c, &shape, d, m)?,
            None => resize_pass(&std_slice(&xw), &shape, d, m)?,
        };
        shape[d] = m.out;
        cur = Some(next);
    }
    let mut y = match cur {
        Some(c) => c,
        None => std_slice(&xw).into_owned(),
    };
    resize_extrapolate(&mut y, &shape, maps, W::of(fill))?;
    Ok((y, shape))
}

/// `v` unless it is absent or empty.
fn nonempty(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_empty())
}

fn resize_run(
    x: &Value,
    roi: Option<&Value>,
    scales: Option<&Value>,
    sizes: Option<&Value>,
    a: &ResizeAttrs,
) -> Result<Value> {
    let shape = x.shape().to_vec();
    let r = shape.len();
    let (scales, sizes) = (nonempty(scales), nonempty(sizes));
    let targets = |n: usize, what: &str| -> Result<Vec<usize>> {
        if n == r {
            Ok((0..r).collect())
        } else if n == 2 && r == 4 {
            Ok(a.hw.to_vec())
        } else {
            Err(Error::kernel(format!(
                "{what} has {n} values, x of shape {shape:?} needs one per dim ({r})"
            )))
        }
    };
    // (dim, output size, scale) of each resized dim.
    let mut plan: Vec<(usize, usize, f32)> = Vec::new();
    match (scales, sizes) {
        (Some(_), Some(_)) => {
            return Err(Error::kernel(
                "inputs 'sizes' and 'scales' are both given; only one of them may be non-empty",
            ))
        }
        (None, None) => {
            return Err(Error::kernel(
                "Resize needs a non-empty 'scales' or 'sizes' input",
            ))
        }
        (None, Some(s)) => {
            if s.dtype().is_float() {
                return Err(Error::kernel(format!(
                    "sizes must be an integer tensor, got {}",
                    s.dtype()
                )));
            }
            let v = ints(s);
            for (d, &o) in targets(v.len(), "sizes")?.into_iter().zip(&v) {
                let o = usize::try_from(o)
                    .map_err(|_| Error::kernel(format!("sizes {v:?} has a negative size {o}")))?;
                let scale = if shape[d] == 0 {
                    1.0
                } else {
                    o as f32 / shape[d] as f32
                };
                plan.push((d, o, scale));
            }
        }
        (Some(s), None) => {
            if !s.dtype().is_float() {
                return Err(Error::kernel(format!(
                    "scales must be a float tensor, got {}",
                    s.dtype()
                )));
            }
            let v = s.to_f64_vec();
            for (d, &sc) in targets(v.len(), "scales")?.into_iter().zip(&v) {
                if !(sc > 0.0 && sc.is_finite()) {
                    return Err(Error::kernel(format!(
                        "scales {v:?} has a non-positive or non-finite scale {sc}"
                    )));
                }
                let o = (shape[d] as f64 * sc).floor();
                if o >= i64::MAX as f64 {
                    return Err(Error::kernel(format!("scale {sc} makes dim {d} too large")));
                }
                plan.push((d, o as usize, sc as f32));
            }
        }
    }
    // tf_crop_and_resize's region: (start, end) per resized dim.
    let roi_v: Option<Vec<f32>> = match nonempty(roi) {
        Some(v) if a.coord == Coord::TfCropAndResize => {
            if !v.dtype().is_float() {
                return Err(Error::kernel(format!(
                    "roi must be a float tensor, got {}",
                    v.dtype()
                )));
            }
            Some(v.to_f64_vec().into_iter().map(|r| r as f32).collect())
        }
        _ => None,
    };
    let mut maps: Vec<Option<AxisMap>> = (0..r).map(|_| None).collect();
    let mut out_dims = shape.clone();
    let np = plan.len();
    for (i, &(d, o, scale)) in plan.iter().enumerate() {
        let region = match &roi_v {
            None => (0.0, 1.0),
            Some(v) if v.len() == 2 * r => (v[d], v[r + d]),
            Some(v) if v.len() == 2 * np => (v[i], v[np + i]),
            Some(v) => {
                return Err(Error::kernel(format!(
                    "roi has {} values; x of shape {shape:?} needs {} ([starts, ends])",
                    v.len(),
                    2 * r
                )))
            }
        };
        out_dims[d] = o;
        // A dim of scale 1 stays as it is (as in onnxruntime), except for a crop.
        if o == shape[d] && scale == 1.0 && a.coord != Coord::TfCropAndResize {
            continue;
        }
        let m = AxisMap::new(a, shape[d], o, scale, region)?;
        if !m.is_identity() {
            maps[d] = Some(m);
        }
    }
    numel(&out_dims)?;
    let fill = a.extrapolation;
    match a.interp {
        Interp::Nearest(_) => Ok(map_array!(x, arr => {
            let v = resize_gather(&std_slice(arr), &shape, &maps, &out_dims, fill_like(arr, fill))?;
            array(&out_dims, v)?
        })),
        _ => match x.dtype() {
            DataType::DOUBLE => {
                let (v, dims) = resize_interp::<f64>(x, &maps, fill)?;
                real_out(&dims, v, DataType::DOUBLE)
            }
            dt if dt.is_float() => {
                let (v, dims) = resize_interp::<f32>(x, &maps, fill)?;
                real_out(&dims, v, dt)
            }
            dt => {
                let (v, dims) = resize_interp::<f64>(x, &maps, fill)?;
                let v = v.into_iter().map(f64::round).collect();
                real_out(&dims, v, dt)
            }
        },
    }
}

fn resize_factory(info: &NodeInfo) -> Result<Kernel> {
    let unsupported = |what: &str, v: &str| Error::unsupported(format!("Resize with {what} {v:?}"));
    let coord = match str_attr(info, "coordinate_transformation_mode", "half_pixel")?.as_str() {
        "half_pixel" => Coord::HalfPixel,
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "align_corners" => Coord::AlignCorners,
        "asymmetric" => Coord::Asymmetric,
        "tf_half_pixel_for_nn" => Coord::TfHalfPixelForNn,
        "tf_crop_and_resize" => Coord::TfCropAndResize,
        other => return Err(unsupported("coordinate_transformation_mode", other)),
    };
    let interp = match str_attr(info, "mode", "nearest")?.as_str() {
        "nearest" => Interp::Nearest(
            match str_attr(info, "nearest_mode", "round_prefer_floor")?.as_str() {
                "round_prefer_floor" => Rounding::RoundPreferFloor,
                "round_prefer_ceil" => Rounding::RoundPreferCeil,
                "floor" => Rounding::Floor,
                "ceil" => Rounding::Ceil,
                other => return Err(unsupported("nearest_mode", other)),
            },
        ),
        "linear" => Interp::Linear,
        "cubic" => Interp::Cubic {
            a: f64::from(info.float("cubic_coeff_a", -0.75)?),
            exclude: info.int("exclude_outside", 0)? != 0,
        },
        other => return Err(unsupported("mode", other)),
    };
    let nchw = info
        .inputs
        .first()
        .and_then(Option::as_ref)
        .is_some_and(|d| d.format == Format::NCHW);
    let a = ResizeAttrs {
        interp,
        coord,
        extrapolation: f64::from(info.float("extrapolation_value", 0.0)?),
        hw: if nchw { [2, 3] } else { [1, 2] },
    };
    Ok(Box::new(move |inputs| {
        let opt = |i: usize| inputs.get(i).copied().flatten();
        Ok(vec![resize_run(
            input(inputs, 0)?,
            opt(1),
            opt(2),
            opt(3),
            &a,
        )?])
    }))
}

// ---------------------------------------------------------------------------------------------
// GridSampler2D / GridSampler3D (PyTorch's grid_sample)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum GsInterp {
    Bilinear,
    Nearest,
    Bicubic,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GsPad {
    Zeros,
    Border,
    Reflection,
}

#[derive(Clone, Copy, Debug)]
struct GsAttrs {
    interp: GsInterp,
    pad: GsPad,
    align: bool,
    /// 2 or 3 spatial dims.
    sd: usize,
    channel_last: bool,
}

fn gs_unnormalize<W: Real>(c: W, size: usize, align: bool) -> W {
    let s = W::of_i(size as i64);
    let two = W::of(2.0);
    if align {
        (c + W::ONE) / two * (s - W::ONE)
    } else {
        ((c + W::ONE) * s - W::ONE) / two
    }
}

/// PyTorch's clip_coordinates: min(size - 1, max(c, 0)) (NaN gives size - 1).
fn gs_clip<W: Real>(c: W, size: usize) -> W {
    let m = if c < W::ZERO { W::ZERO } else { c };
    let lim = W::of_i(size as i64 - 1);
    if m < lim {
        m
    } else {
        lim
    }
}

/// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
fn gs_reflect<W: Real>(c: W, twice_low: i64, twice_high: i64) -> W {
    if twice_low == twice_high {
        return W::ZERO;
    }
    let two = W::of(2.0);
    let min = W::of_i(twice_low) / two;
    let span = W::of_i(twice_high - twice_low) / two;
    let c = (c - min).abs();
    let extra = c % span;
    let flips = (c / span).floor().to_i64();
    if flips % 2 == 0 {
        extra + min
    } else {
        span - extra + min
    }
}

/// A coordinate after padding (border: clipped, reflection: reflected then clipped).
fn gs_pad<W: Real>(c: W, size: usize, pad: GsPad, align: bool) -> W {
    let s = size as i64;
    match pad {
        GsPad::Zeros => c,
        GsPad::Border => gs_clip(c, size),
        GsPad::Reflection => {
            let r = if align {
                gs_reflect(c, 0, 2 * (s - 1))
            } else {
                gs_reflect(c, -1, 2 * s - 1)
            };
            gs_clip(r, size)
        }
    }
}

/// PyTorch's bicubic coefficients (A = -0.75) at ratio `t`.
fn gs_cubic<W: Real>(t: W) -> [W; 4] {
    let a = W::of(-0.75);
    let (two, three, four, five, eight) =
        (W::of(2.0), W::of(3.0), W::of(4.0), W::of(5.0), W::of(8.0));
    let conv1 = |x: W| ((a + two) * x - (a + three)) * x * x + W::ONE;
    let conv2 = |x: W| ((a * x - five * a) * x + eight * a) * x - four * a;
    let x2 = W::ONE - t;
    [conv2(t + W::ONE), conv1(t), conv1(x2), conv2(x2 + W::ONE)]
}

/// The taps (spatial offset in the input, weight) of every output point of one image: the taps
/// of point `p` are `taps[start[p]..start[p + 1]]`. Taps outside the input are left out.
struct Taps<W> {
    taps: Vec<(usize, W)>,
    start: Vec<usize>,
}

/// The taps of the `p_out` grid points `g` (`sd` coordinates each, x first) over an input of
/// spatial `size` ([D, H, W]; D = 1 in 2D).
fn gs_taps<W: Real>(g: &[W], p_out: usize, size: [usize; 3], a: &GsAttrs) -> Result<Taps<W>> {
    let per = match (a.interp, a.sd) {
        (GsInterp::Nearest, _) => 1,
        (GsInterp::Bilinear, 2) => 4,
        (GsInterp::Bilinear, _) => 8,
        (GsInterp::Bicubic, _) => 16,
    };
    let mut t = Taps {
        taps: with_capacity(p_out.saturating_mul(per))?,
        start: with_capacity(p_out + 1)?,
    };
    let [sd_, sh, sw] = size;
    let (d_, h_, w_) = (sd_ as i64, sh as i64, sw as i64);
    // The offset of (z, y, x) when inside the input.
    let at = |z: i64, y: i64, x: i64| -> Option<usize> {
        ((0..d_).contains(&z) && (0..h_).contains(&y) && (0..w_).contains(&x))
            .then(|| ((z * h_ + y) * w_ + x) as usize)
    };
    for p in 0..p_out {
        t.start.push(t.taps.len());
        let c = sub(g, p * a.sd, a.sd)?;
        let (gx, gy) = (c[0], c[1]);
        let gz = if a.sd == 3 { c[2] } else { W::ZERO };
        match a.interp {
            GsInterp::Bicubic => {
                let ix = gs_unnormalize(gx, sw, a.align);
                let iy = gs_unnormalize(gy, sh, a.align);
                let (x0, y0) = (ix.floor(), iy.floor());
                let (cx, cy) = (gs_cubic(ix - x0), gs_cubic(iy - y0));
                for (i, &wy) in cy.iter().enumerate() {
                    let yy = gs_pad(y0 + W::of_i(i as i64 - 1), sh, a.pad, a.align).to_i64();
                    for (j, &wx) in cx.iter().enumerate() {
                        let xx = gs_pad(x0 + W::of_i(j as i64 - 1), sw, a.pad, a.align).to_i64();
                        if let Some(o) = at(0, yy, xx) {
                            t.taps.push((o, wy * wx));
                        }
                    }
                }
            }
            GsInterp::Nearest | GsInterp::Bilinear => {
                let ix = gs_pad(gs_unnormalize(gx, sw, a.align), sw, a.pad, a.align);
                let iy = gs_pad(gs_unnormalize(gy, sh, a.align), sh, a.pad, a.align);
                let iz = if a.sd == 3 {
                    gs_pad(gs_unnormalize(gz, sd_, a.align), sd_, a.pad, a.align)
                } else {
                    W::ZERO
                };
                if a.interp == GsInterp::Nearest {
                    let (x, y, z) = (
                        ix.round_even().to_i64(),
                        iy.round_even().to_i64(),
                        iz.round_even().to_i64(),
                    );
                    if let Some(o) = at(z, y, x) {
                        t.taps.push((o, W::ONE));
                    }
                    continue;
                }
                let (x0, y0, z0) = (ix.floor(), iy.floor(), iz.floor());
                let wx = [(x0 + W::ONE) - ix, ix - x0];
                let wy = [(y0 + W::ONE) - iy, iy - y0];
                let wz = [(z0 + W::ONE) - iz, iz - z0];
                let (xi, yi, zi) = (x0.to_i64(), y0.to_i64(), z0.to_i64());
                let nz = if a.sd == 3 { 2 } else { 1 };
                for dz in 0..nz {
                    for dy in 0..2 {
                        for dx in 0..2 {
                            let Some(o) = at(
                                zi.saturating_add(dz),
                                yi.saturating_add(dy),
                                xi.saturating_add(dx),
                            ) else {
                                continue;
                            };
                            let w = wx[dx as usize] * wy[dy as usize];
                            let w = if a.sd == 3 { w * wz[dz as usize] } else { w };
                            t.taps.push((o, w));
                        }
                    }
                }
            }
        }
    }
    t.start.push(t.taps.len());
    Ok(t)
}

fn grid_sample<W: Real>(x: &Value, grid: &Value, a: &GsAttrs) -> Result<(Vec<W>, Vec<usize>)> {
    let (xs, gsh) = (x.shape(), grid.shape());
    let sd = a.sd;
    if xs.len() != sd + 2 || gsh.len() != sd + 2 || gsh[sd + 1] != sd || gsh[0] != xs[0] {
        return Err(Error::kernel(format!(
            "x {xs:?} and grid {gsh:?} must be [N, C, {sp}] and [N, {sp_out}, {sd}]",
            sp = if sd == 3 { "D, H, W" } else { "H, W" },
            sp_out = if sd == 3 {
                "D_out, H_out, W_out"
            } else {
                "H_out, W_out"
            },
        )));
    }
    let n = xs[0];
    let (c, sp_in) = if a.channel_last {
        (xs[sd + 1], &xs[1..sd + 1])
    } else {
        (xs[1], &xs[2..])
    };
    let sp_out = &gsh[1..sd + 1];
    let size = if sd == 3 {
        [sp_in[0], sp_in[1], sp_in[2]]
    } else {
        [1, sp_in[0], sp_in[1]]
    };
    let (s_in, p_out) = (numel(sp_in)?, numel(sp_out)?);
    let mut dims = vec![n];
    if a.channel_last {
        dims.extend_from_slice(sp_out);
        dims.push(c);
    } else {
        dims.push(c);
        dims.extend_from_slice(sp_out);
    }
    let total = numel(&dims)?;
    let mut out: Vec<W> = with_capacity(total)?;
    if total == 0 {
        return Ok((out, dims));
    }
    if s_in == 0 {
        return Err(Error::kernel(format!(
            "x {xs:?} has an empty spatial dim to sample from"
        )));
    }
    let xw = cast_to::<W>(x)?;
    let xv = std_slice(&xw);
    let gw = cast_to::<W>(grid)?;
    let gv = std_slice(&gw);
    let img = c * s_in;
    for i in 0..n {
        let t = gs_taps(sub(&gv, i * p_out * sd, p_out * sd)?, p_out, size, a)?;
        let xi = sub(&xv, i * img, img)?;
        let point = |p: usize| &t.taps[t.start[p]..t.start[p + 1]];
        if a.channel_last {
            let mut acc = vec![W::ZERO; c];
            for p in 0..p_out {
                acc.iter_mut().for_each(|v| *v = W::ZERO);
                for &(o, w) in point(p) {
                    for (v, &s) in acc.iter_mut().zip(sub(xi, o * c, c)?) {
                        *v = *v + w * s;
                    }
                }
                out.extend_from_slice(&acc);
            }
        } else {
            for ch in 0..c {
                let plane = sub(xi, ch * s_in, s_in)?;
                for p in 0..p_out {
                    let mut v = W::ZERO;
                    for &(o, w) in point(p) {
                        v = v + w * plane.get(o).copied().unwrap_or(W::ZERO);
                    }
                    out.push(v);
                }
            }
        }
    }
    Ok((out, dims))
}

fn grid_sampler_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let sd = if op == "GridSampler3D" { 3 } else { 2 };
    let interp = match str_attr(info, "interpolation_mode", "bilinear")?.as_str() {
        "bilinear" => GsInterp::Bilinear,
        "nearest" => GsInterp::Nearest,
        "bicubic" if sd == 2 => GsInterp::Bicubic,
        other => {
            return Err(Error::unsupported(format!(
                "{op} with interpolation_mode {other:?}"
            )))
        }
    };
    let pad = match str_attr(info, "padding_mode", "zeros")?.as_str() {
        "zeros" => GsPad::Zeros,
        "border" => GsPad::Border,
        "reflection" => GsPad::Reflection,
        other => {
            return Err(Error::unsupported(format!(
                "{op} with padding_mode {other:?}"
            )))
        }
    };
    let channel_last = if sd == 3 {
        match str_attr(info, "data_format", "NCDHW")?.as_str() {
            "NCDHW" => false,
            "NDHWC" => true,
            other => {
                return Err(Error::unsupported(format!(
                    "{op} with data_format {other:?}"
                )))
            }
        }
    } else {
        false
    };
    let a = GsAttrs {
        interp,
        pad,
        align: info.bool("align_corners", false)?,
        sd,
        channel_last,
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let grid = input(inputs, 1)?;
        let y = match x.dtype() {
            DataType::DOUBLE => {
                let (v, dims) = grid_sample::<f64>(x, grid, &a)?;
                real_out(&dims, v, DataType::DOUBLE)?
            }
            dt => {
                let (v, dims) = grid_sample::<f32>(x, grid, &a)?;
                real_out(&dims, v, dt)?
            }
        };
        Ok(vec![y])
    }))
}

// ---------------------------------------------------------------------------------------------
// ROIAlign
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct RoiAttrs {
    scale: f32,
    ph: usize,
    pw: usize,
    sample: usize,
    end_mode: i64,
    max: bool,
    nhwc: bool,
}

/// The bilinear taps (offsets y * w + x, weights) of a sample point at (y, x), Caffe2/mmcv
/// style; `None` where the point lies more than one pixel outside (its value is 0).
fn roi_bilinear(y: f32, x: f32, h: usize, w: usize) -> Option<[(usize, f32); 4]> {
    let (hf, wf) = (h as f32, w as f32);
    if y < -1.0 || y > hf || x < -1.0 || x > wf || y.is_nan() || x.is_nan() {
        return None;
    }
    let (mut y, mut x) = (y.max(0.0), x.max(0.0));
    let (mut y0, mut x0) = (y as usize, x as usize);
    let y1 = if y0 >= h - 1 {
        y0 = h - 1;
        y = y0 as f32;
        y0
    } else {
        y0 + 1
    };
    let x1 = if x0 >= w - 1 {
        x0 = w - 1;
        x = x0 as f32;
        x0
    } else {
        x0 + 1
    };
    let (ly, lx) = (y - y0 as f32, x - x0 as f32);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    Some([
        (y0 * w + x0, hy * hx),
        (y0 * w + x1, hy * lx),
        (y1 * w + x0, ly * hx),
        (y1 * w + x1, ly * lx),
    ])
}

fn roi_align(f: &Value, rois: &Value, a: &RoiAttrs) -> Result<(Vec<f32>, Vec<usize>)> {
    let g = Img::of(f.shape(), !a.nhwc, "features")?;
    let rs = rois.shape();
    let &[r, 5] = rs else {
        return Err(Error::kernel(format!(
            "rois must be [R, 5] rows (batch index, x1, y1, x2, y2), got shape {rs:?}"
        )));
    };
    let (c, h, w) = (g.c, g.h, g.w);
    let dims = if a.nhwc {
        vec![r, a.ph, a.pw, c]
    } else {
        vec![r, c, a.ph, a.pw]
    };
    let total = numel(&dims)?;
    let mut out = alloc(total, 0f32)?;
    if total == 0 {
        return Ok((out, dims));
    }
    if h == 0 || w == 0 {
        return Err(Error::kernel(format!(
            "features {:?} have an empty height or width",
            f.shape()
        )));
    }
    let fw = cast_to::<f32>(f)?;
    let fx = std_slice(&fw);
    let rw = cast_to::<f32>(rois)?;
    let rx = std_slice(&rw);
    let (s, bins) = (a.scale, a.ph * a.pw);
    let (phf, pwf) = (a.ph as f32, a.pw as f32);
    let img = c * h * w;
    let mut samples: Vec<Option<[(usize, f32); 4]>> = Vec::new();
    for i in 0..r {
        let roi = sub(&rx, i * 5, 5)?;
        let b = roi[0].trunc();
        if !(b >= 0.0 && (b as usize) < g.n) {
            return Err(Error::kernel(format!(
                "roi {i} has batch index {b}, features have {} images",
                g.n
            )));
        }
        let fimg = sub(&fx, b as usize * img, img)?;
        let (mut x1, mut y1, mut x2, mut y2) = (roi[1] * s, roi[2] * s, roi[3] * s, roi[4] * s);
        if a.end_mode == 1 {
            x2 += s;
            y2 += s;
        } else if a.end_mode >= 2 {
            x1 -= 0.5;
            y1 -= 0.5;
            x2 -= 0.5;
            y2 -= 0.5;
        }
        let (mut roi_w, mut roi_h) = (x2 - x1, y2 - y1);
        if a.end_mode < 2 {
            roi_w = roi_w.max(1.0);
            roi_h = roi_h.max(1.0);
        }
        let (bw, bh) = (roi_w / pwf, roi_h / phf);
        let grid = |b: f32| -> Result<usize> {
            if a.sample > 0 {
                return Ok(a.sample);
            }
            let g = b.ceil();
            if g > 1e6 {
                return Err(Error::kernel(format!(
                    "roi {i}: a bin of size {b} needs too many samples (sample_num 0)"
                )));
            }
            Ok(if g > 0.0 { g as usize } else { 0 })
        };
        let (gh, gw) = (grid(bh)?, grid(bw)?);
        let per_bin = gh
            .checked_mul(gw)
            .ok_or_else(|| Error::kernel(format!("roi {i}: too many samples per bin")))?;
        let cnt = per_bin as f32;
        // The sample taps of every bin, bin-major.
        samples.clear();
        samples
            .try_reserve_exact(bins.saturating_mul(per_bin))
            .map_err(|_| Error::kernel("cannot allocate the ROI samples"))?;
        for py in 0..a.ph {
            for px in 0..a.pw {
                for iy in 0..gh {
                    let y = y1 + py as f32 * bh + (iy as f32 + 0.5) * bh / gh as f32;
                    for ix in 0..gw {
                        let x = x1 + px as f32 * bw + (ix as f32 + 0.5) * bw / gw as f32;
                        samples.push(roi_bilinear(y, x, h, w));
                    }
                }
            }
        }
        // Channel `ch` of pixel `o` is at `ch * cstride + o * pstride`.
        let (cstride, pstride) = if a.nhwc { (1, c) } else { (h * w, 1) };
        for ch in 0..c {
            let base = ch * cstride;
            let read = |o: usize| fimg.get(base + o * pstride).copied().unwrap_or(0.0);
            let value = |t: &Option<[(usize, f32); 4]>| match t {
                None => 0.0,
                Some(t) => {
                    t[0].1 * read(t[0].0)
                        + t[1].1 * read(t[1].0)
                        + t[2].1 * read(t[2].0)
                        + t[3].1 * read(t[3].0)
                }
            };
            for bin in 0..bins {
                let pts = samples
                    .get(bin * per_bin..(bin + 1) * per_bin)
                    .unwrap_or(&[]);
                let v = if pts.is_empty() {
                    0.0
                } else if a.max {
                    let mut m = f32::NEG_INFINITY;
                    for t in pts {
                        let v = value(t);
                        if v.is_nan() || m.is_nan() {
                            m = f32::NAN;
                        } else if v > m {
                            m = v;
                        }
                    }
                    m
                } else {
                    pts.iter().fold(0.0, |acc, t| acc + value(t) / cnt)
                };
                let at = if a.nhwc {
                    (i * bins + bin) * c + ch
                } else {
                    (i * c + ch) * bins + bin
                };
                if let Some(slot) = out.get_mut(at) {
                    *slot = v;
                }
            }
        }
    }
    Ok((out, dims))
}

fn roi_align_factory(info: &NodeInfo) -> Result<Kernel> {
    for name in ["spatial_scale", "pooled_height", "pooled_width"] {
        required(info, name)?;
    }
    let positive = |name: &str| -> Result<usize> {
        let v = info.int(name, 0)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v >= 1)
            .ok_or_else(|| bad_attr(info, format!("attribute '{name}' must be >= 1, got {v}")))
    };
    let (ph, pw) = (positive("pooled_height")?, positive("pooled_width")?);
    let sample = info.int("sample_num", 2)?;
    let sample = usize::try_from(sample).map_err(|_| {
        bad_attr(
            info,
            format!("attribute 'sample_num' must be >= 0, got {sample}"),
        )
    })?;
    let end_mode = info.int("roi_end_mode", 1)?;
    if !(0..=3).contains(&end_mode) {
        return Err(bad_attr(
            info,
            format!("attribute 'roi_end_mode' must be 0, 1, 2 or 3, got {end_mode}"),
        ));
    }
    let max = match str_attr(info, "pool_mode", "avg")?.as_str() {
        "avg" => false,
        "max" => true,
        other => {
            return Err(bad_attr(
                info,
                format!("attribute 'pool_mode' must be \"avg\" or \"max\", got {other:?}"),
            ))
        }
    };
    let nhwc = info
        .inputs
        .first()
        .and_then(Option::as_ref)
        .is_some_and(|d| d.format == Format::NHWC);
    let a = RoiAttrs {
        scale: info.float("spatial_scale", 1.0)?,
        ph,
        pw,
        sample,
        end_mode,
        max,
        nhwc,
    };
    Ok(Box::new(move |inputs| {
        let f = input(inputs, 0)?;
        let (v, dims) = roi_align(f, input(inputs, 1)?, &a)?;
        let dt = if f.dtype().is_float() {
            f.dtype()
        } else {
            DataType::FLOAT
        };
        Ok(vec![real_out(&dims, v, dt)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppressionV6 (ONNX)
// ---------------------------------------------------------------------------------------------

/// A box as (x_min, y_min, x_max, y_max) and its area, as onnxruntime computes them.
#[derive(Clone, Copy, Debug)]
struct NmsBox {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    area: f32,
}

impl NmsBox {
    fn new(b: &[f32], center: bool) -> NmsBox {
        let min_max = |a: f32, b: f32| if a >= b { (b, a) } else { (a, b) };
        let (x0, x1, y0, y1) = if center {
            let (hw, hh) = (b[2] / 2.0, b[3] / 2.0);
            (b[0] - hw, b[0] + hw, b[1] - hh, b[1] + hh)
        } else {
            let (x0, x1) = min_max(b[1], b[3]);
            let (y0, y1) = min_max(b[0], b[2]);
            (x0, x1, y0, y1)
        };
        NmsBox {
            x0,
            y0,
            x1,
            y1,
            area: (x1 - x0) * (y1 - y0),
        }
    }

    /// Whether the IoU of `self` and `o` is > `t` (onnxruntime's SuppressByIOU).
    fn suppresses(&self, o: &NmsBox, t: f32) -> bool {
        // std::max / std::min with their NaN behaviour.
        let mx = |a: f32, b: f32| if a < b { b } else { a };
        let mn = |a: f32, b: f32| if b < a { b } else { a };
        let (ix0, ix1) = (mx(self.x0, o.x0), mn(self.x1, o.x1));
        if ix1 <= ix0 {
            return false;
        }
        let (iy0, iy1) = (mx(self.y0, o.y0), mn(self.y1, o.y1));
        if iy1 <= iy0 {
            return false;
        }
        let inter = (ix1 - ix0) * (iy1 - iy0);
        if inter <= 0.0 {
            return false;
        }
        let union = self.area + o.area - inter;
        if self.area <= 0.0 || o.area <= 0.0 || union <= 0.0 {
            return false;
        }
        inter / union > t
    }
}

fn nms(
    boxes: &Value,
    scores: &Value,
    limits: (Option<&Value>, Option<&Value>, Option<&Value>),
    center: bool,
    max_rows: usize,
) -> Result<Value> {
    let (bs, ss) = (boxes.shape(), scores.shape());
    let ok = matches!((bs, ss), (&[b, s, 4], &[b2, _, s2]) if b == b2 && s == s2);
    if !ok {
        return Err(Error::kernel(format!(
            "boxes {bs:?} and scores {ss:?} must be [batches, boxes, 4] and \
             [batches, classes, boxes]"
        )));
    }
    let (nb, ns, nk) = (bs[0], bs[1], ss[1]);
    let (max_out, iou, score_t) = limits;
    let per_class = match max_out {
        None => 0,
        Some(v) => {
            let m = one_value(v, "max_output_size")?;
            if m > 0.0 {
                m as usize
            } else {
                0
            }
        }
    };
    let iou_t = match iou {
        None => 0.0,
        Some(v) => one_value(v, "iou_threshold")? as f32,
    };
    if !(0.0..=1.0).contains(&iou_t) {
        return Err(Error::kernel(format!(
            "iou_threshold must lie in [0, 1], got {iou_t}"
        )));
    }
    let score_t = score_t
        .map(|v| one_value(v, "score_threshold").map(|t| t as f32))
        .transpose()?;
    let bw = cast_to::<f32>(boxes)?;
    let bv = std_slice(&bw);
    let sw = cast_to::<f32>(scores)?;
    let sv = std_slice(&sw);
    let all: Vec<NmsBox> = bv.chunks_exact(4).map(|b| NmsBox::new(b, center)).collect();
    let mut rows: Vec<i32> = Vec::new();
    let idx = |v: usize| {
        i32::try_from(v).map_err(|_| Error::kernel(format!("index {v} does not fit int32")))
    };
    let mut count = 0usize;
    'all: for b in 0..nb {
        let bb = sub(&all, b * ns, ns)?;
        for k in 0..nk {
            if per_class == 0 {
                break 'all;
            }
            let cs = sub(&sv, (b * nk + k) * ns, ns)?;
            let mut cand: Vec<(f32, usize)> = cs
                .iter()
                .enumerate()
                .filter(|(_, &s)| !s.is_nan() && score_t.is_none_or(|t| s > t))
                .map(|(i, &s)| (s, i))
                .collect();
            cand.sort_by(|x, y| {
                y.0.partial_cmp(&x.0)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(x.1.cmp(&y.1))
            });
            let mut kept: Vec<usize> = Vec::new();
            for (_, i) in cand {
                if kept.len() >= per_class {
                    break;
                }
                if kept.iter().all(|&j| !bb[i].suppresses(&bb[j], iou_t)) {
                    kept.push(i);
                    rows.extend([idx(b)?, idx(k)?, idx(i)?]);
                    count += 1;
                    if max_rows > 0 && count >= max_rows {
                        break 'all;
                    }
                }
            }
        }
    }
    Ok(Value::I32(array(&[count, 3], rows)?))
}

fn nms_factory(info: &NodeInfo) -> Result<Kernel> {
    let cpb = info.int("center_point_box", 0)?;
    if cpb != 0 && cpb != 1 {
        return Err(bad_attr(
            info,
            format!("attribute 'center_point_box' must be 0 or 1, got {cpb}"),
        ));
    }
    let mb = info.int("max_boxes_size", 0)?;
    let max_rows = usize::try_from(mb).map_err(|_| {
        bad_attr(
            info,
            format!("attribute 'max_boxes_size' must be >= 0, got {mb}"),
        )
    })?;
    Ok(Box::new(move |inputs| {
        let opt = |i: usize| inputs.get(i).copied().flatten();
        Ok(vec![nms(
            input(inputs, 0)?,
            input(inputs, 1)?,
            (opt(2), opt(3), opt(4)),
            cpb == 1,
            max_rows,
        )?])
    }))
}

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("ResizeNearestNeighborV2", tf_resize_factory);
    m.insert("ResizeBilinearV2", tf_resize_factory);
    m.insert("Resize", resize_factory);
    m.insert("GridSampler2D", grid_sampler_factory);
    m.insert("GridSampler3D", grid_sampler_factory);
    m.insert("ROIAlign", roi_align_factory);
    m.insert("NonMaxSuppressionV6", nms_factory);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn f32s(dims: &[usize], v: Vec<f32>) -> Value {
        Value::F32(ArrayD::from_shape_vec(IxDyn(dims), v).unwrap())
    }

    fn vals(v: &Value) -> Vec<f64> {
        v.to_f64_vec()
    }

    #[test]
    fn tensorflow_nearest_and_bilinear_indices() {
        assert_eq!(tf_nearest_map(4, 2, false, false), vec![0, 2]);
        // align_corners: scale 1.5, round half away from zero.
        assert_eq!(tf_nearest_map(4, 3, true, false), vec![0, 2, 3]);
        // half_pixel_centers: floor((o + 0.5) * 0.5).
        assert_eq!(tf_nearest_map(2, 4, false, true), vec![0, 0, 1, 1]);
        assert_eq!(
            tf_linear_map(2, 4, false, false),
            vec![(0, 0, 0.0), (0, 1, 0.5), (1, 1, 0.0), (1, 1, 0.5)]
        );
        // Half pixel: -0.25 clamps to row 0 with lerp 0.75 (both taps row 0).
        assert_eq!(tf_linear_map(2, 4, false, true)[0], (0, 0, 0.75));
    }

    #[test]
    fn tensorflow_bilinear_align_corners_hits_the_centre() {
        let g = Img::of(&[1, 1, 2, 2], true, "x").unwrap();
        let ys = tf_linear_map(2, 3, true, false);
        let y = tf_bilinear(&[1.0, 2.0, 3.0, 4.0], g, &ys, &ys).unwrap();
        assert_eq!(y, vec![1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]);
        // NHWC with two channels gives the same numbers per channel.
        let g = Img::of(&[1, 2, 2, 2], false, "x").unwrap();
        let y = tf_bilinear(&[1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0], g, &ys, &ys).unwrap();
        assert_eq!(y[8], 2.5);
        assert_eq!(y[9], 25.0);
        assert!(tf_size(&Value::I32(ArrayD::from_elem(IxDyn(&[2]), 0))).is_err());
        assert!(tf_size(&Value::I32(ArrayD::from_elem(IxDyn(&[3]), 2))).is_err());
    }

    fn attrs(interp: Interp, coord: Coord) -> ResizeAttrs {
        ResizeAttrs {
            interp,
            coord,
            extrapolation: -1.0,
            hw: [2, 3],
        }
    }

    #[test]
    fn onnx_nearest_rounding_modes() {
        // Asymmetric, 2 -> 4 (scale 2): coordinates 0, 0.5, 1, 1.5.
        let idx = |r| {
            AxisMap::new(
                &attrs(Interp::Nearest(r), Coord::Asymmetric),
                2,
                4,
                2.0,
                (0.0, 1.0),
            )
            .unwrap()
            .idx
        };
        assert_eq!(idx(Rounding::RoundPreferFloor), vec![0, 0, 1, 1]);
        assert_eq!(idx(Rounding::RoundPreferCeil), vec![0, 1, 1, 1]);
        assert_eq!(idx(Rounding::Floor), vec![0, 0, 1, 1]);
        assert_eq!(idx(Rounding::Ceil), vec![0, 1, 1, 1]);
        let m = AxisMap::new(
            &attrs(Interp::Nearest(Rounding::Floor), Coord::HalfPixel),
            3,
            3,
            1.0,
            (0.0, 1.0),
        )
        .unwrap();
        assert!(m.is_identity());
    }

    #[test]
    fn onnx_linear_cubic_and_crop() {
        let x = f32s(&[2], vec![0.0, 1.0]);
        let lin = attrs(Interp::Linear, Coord::HalfPixel);
        let sc = f32s(&[1], vec![2.0]);
        let y = resize_run(&x, None, Some(&sc), None, &lin).unwrap();
        assert_eq!(vals(&y), vec![0.0, 0.25, 0.75, 1.0]);
        // Cubic weights sum to 1; exclude_outside renormalises at the border.
        for t in [0.0, 0.3, 0.5, 0.9] {
            let s: f64 = onnx_cubic(t, -0.75).iter().sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
        let cub = attrs(
            Interp::Cubic {
                a: -0.5,
                exclude: true,
            },
            Coord::AlignCorners,
        );
        let m = AxisMap::new(&cub, 4, 7, 1.75, (0.0, 1.0)).unwrap();
        assert_eq!(m.w[0], 0.0);
        assert!((m.w[..4].iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // tf_crop_and_resize: the region [0.5, 1.5] of [0, 1] leaves the input at the end.
        let crop = attrs(Interp::Linear, Coord::TfCropAndResize);
        let roi = f32s(&[2], vec![0.5, 1.5]);
        let sz = Value::I64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![3]).unwrap());
        let y = resize_run(&x, Some(&roi), None, Some(&sz), &crop).unwrap();
        assert_eq!(vals(&y), vec![0.5, 1.0, -1.0]);
        // Integers round half away from zero.
        let xi = Value::I32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1, 2]).unwrap());
        let sz = Value::I64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![3]).unwrap());
        let ac = attrs(Interp::Linear, Coord::AlignCorners);
        let y = resize_run(&xi, None, None, Some(&sz), &ac).unwrap();
        assert_eq!(y.dtype(), DataType::INT32);
        assert_eq!(vals(&y), vec![1.0, 2.0, 2.0]);
    }

    #[test]
    fn onnx_resize_errors() {
        let x = f32s(&[1, 1, 2, 2], vec![1.0; 4]);
        let a = attrs(Interp::Linear, Coord::HalfPixel);
        let sc = f32s(&[4], vec![1.0, 1.0, 2.0, 2.0]);
        let sz = Value::I64(ArrayD::from_shape_vec(IxDyn(&[4]), vec![1, 1, 4, 4]).unwrap());
        assert!(resize_run(&x, None, Some(&sc), Some(&sz), &a).is_err());
        assert!(resize_run(&x, None, None, None, &a).is_err());
        assert!(resize_run(&x, None, Some(&f32s(&[3], vec![1.0; 3])), None, &a).is_err());
        assert!(resize_run(&x, None, Some(&f32s(&[2], vec![0.0, 2.0])), None, &a).is_err());
        let neg = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![-1, 2]).unwrap());
        assert!(resize_run(&x, None, None, Some(&neg), &a).is_err());
        // Two values address H and W.
        let y = resize_run(&x, None, Some(&f32s(&[2], vec![2.0, 1.5])), None, &a).unwrap();
        assert_eq!(y.shape(), &[1, 1, 4, 3]);
    }

    fn gs(interp: GsInterp, pad: GsPad, align: bool) -> GsAttrs {
        GsAttrs {
            interp,
            pad,
            align,
            sd: 2,
            channel_last: false,
        }
    }

    #[test]
    fn grid_sample_identity_padding_and_reflection() {
        let x = f32s(&[1, 1, 2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // The pixel centres with align_corners: x in {-1, 0, 1}, y in {-1, 1}.
        let mut g = Vec::new();
        for y in [-1.0f32, 1.0] {
            for xx in [-1.0f32, 0.0, 1.0] {
                g.extend([xx, y]);
            }
        }
        let grid = f32s(&[1, 2, 3, 2], g);
        for interp in [GsInterp::Bilinear, GsInterp::Nearest, GsInterp::Bicubic] {
            let (y, dims) = grid_sample::<f32>(&x, &grid, &gs(interp, GsPad::Zeros, true)).unwrap();
            assert_eq!(dims, vec![1, 1, 2, 3]);
            for (a, b) in y.iter().zip([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) {
                assert!((a - b).abs() < 1e-5, "{interp:?}: {y:?}");
            }
        }
        // Far outside: zeros gives 0, border the corner value.
        let far = f32s(&[1, 1, 1, 2], vec![5.0, -5.0]);
        let (y, _) =
            grid_sample::<f32>(&x, &far, &gs(GsInterp::Bilinear, GsPad::Zeros, false)).unwrap();
        assert_eq!(y, vec![0.0]);
        let (y, _) =
            grid_sample::<f32>(&x, &far, &gs(GsInterp::Bilinear, GsPad::Border, false)).unwrap();
        assert_eq!(y, vec![3.0]);
        // Reflection about [-0.5, 2.5] (align_corners false): x = 3.0 reflects to 2.0.
        assert_eq!(gs_reflect(3.0f64, -1, 5), 2.0);
        assert_eq!(gs_reflect(-1.5f64, -1, 5), 0.5);
        assert_eq!(gs_reflect(7.0f64, 0, 4), 1.0);
        // A grid that does not match x is an error.
        assert!(grid_sample::<f32>(
            &x,
            &f32s(&[2, 1, 1, 2], vec![0.0; 4]),
            &gs(GsInterp::Bilinear, GsPad::Zeros, false)
        )
        .is_err());
    }

    fn roi_attrs(end_mode: i64, max: bool) -> RoiAttrs {
        RoiAttrs {
            scale: 1.0,
            ph: 2,
            pw: 2,
            sample: 2,
            end_mode,
            max,
            nhwc: false,
        }
    }

    #[test]
    fn roi_align_constant_features_and_errors() {
        let f = f32s(
            &[1, 2, 4, 4],
            (0..32).map(|i| if i < 16 { 3.0 } else { 5.0 }).collect(),
        );
        let rois = f32s(&[1, 5], vec![0.0, 0.0, 0.0, 2.0, 2.0]);
        for mode in 0..4 {
            let (y, dims) = roi_align(&f, &rois, &roi_attrs(mode, false)).unwrap();
            assert_eq!(dims, vec![1, 2, 2, 2]);
            assert_eq!(
                y,
                vec![3.0, 3.0, 3.0, 3.0, 5.0, 5.0, 5.0, 5.0],
                "mode {mode}"
            );
        }
        // A linear ramp along x: the bin means are the sample x positions.
        let f = f32s(&[1, 1, 1, 4], vec![0.0, 1.0, 2.0, 3.0]);
        let rois = f32s(&[1, 5], vec![0.0, 0.0, 0.0, 2.0, 0.0]);
        let mut a = roi_attrs(0, false);
        a.ph = 1;
        let (y, _) = roi_align(&f, &rois, &a).unwrap();
        // Bins [0, 1] and [1, 2]; samples at 0.25, 0.75 and 1.25, 1.75.
        assert_eq!(y, vec![0.5, 1.5]);
        a.max = true;
        let (y, _) = roi_align(&f, &rois, &a).unwrap();
        assert_eq!(y, vec![0.75, 1.75]);
        let bad = f32s(&[1, 5], vec![1.0, 0.0, 0.0, 1.0, 1.0]);
        assert!(roi_align(&f, &bad, &a).is_err());
        assert!(roi_align(&f, &f32s(&[1, 4], vec![0.0; 4]), &a).is_err());
    }

    #[test]
    fn nms_onnx_examples() {
        let scores = f32s(&[1, 1, 6], vec![0.9, 0.75, 0.6, 0.95, 0.5, 0.3]);
        let lim = |m: i32| {
            (
                Value::I32(ArrayD::from_elem(IxDyn(&[1]), m)),
                f32s(&[1], vec![0.5]),
                f32s(&[1], vec![0.0]),
            )
        };
        let corners = f32s(
            &[1, 6, 4],
            vec![
                0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, -0.1, 1.0, 0.9, 0.0, 10.0, 1.0, 11.0,
                0.0, 10.1, 1.0, 11.1, 0.0, 100.0, 1.0, 101.0,
            ],
        );
        let centers = f32s(
            &[1, 6, 4],
            vec![
                0.5, 0.5, 1.0, 1.0, 0.5, 0.6, 1.0, 1.0, 0.5, 0.4, 1.0, 1.0, 0.5, 10.5, 1.0, 1.0,
                0.5, 10.6, 1.0, 1.0, 0.5, 100.5, 1.0, 1.0,
            ],
        );
        let (m, i, s) = lim(3);
        for (boxes, center) in [(&corners, false), (&centers, true)] {
            let y = nms(boxes, &scores, (Some(&m), Some(&i), Some(&s)), center, 0).unwrap();
            assert_eq!(y.shape(), &[3, 3]);
            assert_eq!(vals(&y), vec![0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0]);
        }
        // max_boxes_size caps the rows; no max_output_size selects nothing.
        let y = nms(&corners, &scores, (Some(&m), Some(&i), Some(&s)), false, 2).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        let y = nms(&corners, &scores, (None, Some(&i), Some(&s)), false, 0).unwrap();
        assert_eq!(y.shape(), &[0, 3]);
        // A score threshold of 0.7 keeps boxes 3 and 0 only.
        let hi = f32s(&[1], vec![0.7]);
        let y = nms(&corners, &scores, (Some(&m), Some(&i), Some(&hi)), false, 0).unwrap();
        assert_eq!(vals(&y), vec![0.0, 0.0, 3.0, 0.0, 0.0, 0.0]);
        let two = Value::I32(ArrayD::from_elem(IxDyn(&[2]), 1));
        let e = nms(&corners, &scores, (Some(&two), None, None), false, 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("max_output_size must hold one value"),
            "{e}"
        );
        let bad_iou = f32s(&[1], vec![1.5]);
        assert!(nms(
            &corners,
            &scores,
            (Some(&m), Some(&bad_iou), None),
            false,
            0
        )
        .is_err());
        assert!(nms(
            &corners,
            &f32s(&[1, 1, 5], vec![0.0; 5]),
            (Some(&m), None, None),
            false,
            0
        )
        .is_err());
    }
}
