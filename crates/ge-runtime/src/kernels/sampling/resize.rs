//! Resizing: ResizeNearestNeighborV2 / ResizeBilinearV2 (TensorFlow's) and Resize (ONNX's);
//! the semantics are in [`super`]'s documentation.

use super::{for_each_row, real_out, Img, Real};
use crate::error::{Error, Result};
use crate::kernels::common::{
    alloc, array, bad_attr, cast_to, input_desc, ints, numel, std_slice, str_attr, strides_of, sub,
    sub_mut, with_capacity,
};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::map_array;
use crate::value::{Elem, Value};
use es_core::attr::AttrValue;
use es_core::{DataType, Format};

// ---------------------------------------------------------------------------------------------
// ResizeNearestNeighborV2 / ResizeBilinearV2 (TensorFlow)
// ---------------------------------------------------------------------------------------------

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

/// Samples the images of `x` at each output row `ys` and column `xs`: `pixel(image, y, x, out)`
/// pushes one output pixel's channels, where an image is a plane of one channel in NCHW and a
/// whole image of `c` channels in NHWC (its rows `w * c` long).
fn tf_sample<T: Copy, Y: Copy, X: Copy, O>(
    x: &[T],
    g: Img,
    ys: &[Y],
    xs: &[X],
    pixel: impl Fn(Image<T>, Y, X, &mut Vec<O>) -> Result<()>,
) -> Result<Vec<O>> {
    let total = numel(&[g.n, g.c, ys.len(), xs.len()])?;
    let mut out = with_capacity(total)?;
    if total == 0 {
        return Ok(out);
    }
    let (images, c) = if g.nchw { (g.n * g.c, 1) } else { (g.n, g.c) };
    let len = g.h * g.w * c;
    for i in 0..images {
        let data = sub(x, i * len, len)?;
        let img = Image {
            data,
            row: g.w * c,
            c,
        };
        for &y in ys {
            for &xi in xs {
                pixel(img, y, xi, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// One image of [`tf_sample`]: its elements, row length and channels per pixel.
#[derive(Clone, Copy)]
struct Image<'a, T> {
    data: &'a [T],
    row: usize,
    c: usize,
}

impl<'a, T: Copy> Image<'a, T> {
    /// The channels of pixel (y, x).
    fn at(self, y: usize, x: usize) -> Result<&'a [T]> {
        sub(self.data, y * self.row + x * self.c, self.c)
    }
}

fn tf_gather<T: Copy>(x: &[T], g: Img, ys: &[usize], xs: &[usize]) -> Result<Vec<T>> {
    tf_sample(x, g, ys, xs, |img, y, xi, out| {
        out.extend_from_slice(img.at(y, xi)?);
        Ok(())
    })
}

/// TensorFlow's compute_lerp.
fn tf_lerp(tl: f32, tr: f32, bl: f32, br: f32, xl: f32, yl: f32) -> f32 {
    let top = tl + (tr - tl) * xl;
    let bottom = bl + (br - bl) * xl;
    top + (bottom - top) * yl
}

type LinMap = [(usize, usize, f32)];

fn tf_bilinear(x: &[f32], g: Img, ys: &LinMap, xs: &LinMap) -> Result<Vec<f32>> {
    tf_sample(x, g, ys, xs, |img, (y0, y1, yl), (x0, x1, xl), out| {
        let (tl, tr) = (img.at(y0, x0)?, img.at(y0, x1)?);
        let (bl, br) = (img.at(y1, x0)?, img.at(y1, x1)?);
        for k in 0..img.c {
            out.push(tf_lerp(tl[k], tr[k], bl[k], br[k], xl, yl));
        }
        Ok(())
    })
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

pub(super) fn tf_resize_factory(info: &NodeInfo) -> Result<Kernel> {
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
    let nchw = input_desc(info, 0).is_some_and(|d| d.format == Format::NCHW);
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
    HalfPixelSymmetric,
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
            // The resized length is the unrounded `inp * scale` (ONNX's reference), which is
            // `out` when the scale came from sizes.
            let len_m1 = inp as f32 * scale - 1.0;
            if out == 1 || len_m1 == 0.0 {
                0.0
            } else {
                x * inp_m1 / len_m1
            }
        }
        Coord::HalfPixelSymmetric => {
            // The rounding of the output length, split evenly over both ends.
            let adjustment = out as f32 / (inp as f32 * scale);
            let offset = inp as f32 / 2.0 * (1.0 - adjustment);
            offset + (x + 0.5) / scale - 0.5
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

pub(super) fn resize_factory(info: &NodeInfo) -> Result<Kernel> {
    let unsupported = |what: &str, v: &str| Error::unsupported(format!("Resize with {what} {v:?}"));
    let coord = match str_attr(info, "coordinate_transformation_mode", "half_pixel")?.as_str() {
        "half_pixel" => Coord::HalfPixel,
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "align_corners" => Coord::AlignCorners,
        "asymmetric" => Coord::Asymmetric,
        "tf_half_pixel_for_nn" => Coord::TfHalfPixelForNn,
        "tf_crop_and_resize" => Coord::TfCropAndResize,
        "half_pixel_symmetric" => Coord::HalfPixelSymmetric,
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
    let nchw = input_desc(info, 0).is_some_and(|d| d.format == Format::NCHW);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::{f32v as f32s, vals};
    use ndarray::{ArrayD, IxDyn};

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
}
