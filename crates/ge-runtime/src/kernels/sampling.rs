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
//!   align_corners (over the unrounded resized length `in * scale`, as ONNX's reference),
//!   asymmetric, tf_half_pixel_for_nn, half_pixel_symmetric, tf_crop_and_resize with `roi` [starts,
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

use super::common::{array, bad_attr, Pick};
use super::{Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::DataType;
use std::ops::{Add, Div, Mul, Rem, Sub};

mod detection;
mod grid;
mod resize;

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

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (
        &["ResizeNearestNeighborV2", "ResizeBilinearV2"],
        resize::tf_resize_factory,
    ),
    (&["Resize"], resize::resize_factory),
    (
        &["GridSampler2D", "GridSampler3D"],
        grid::grid_sampler_factory,
    ),
    (&["ROIAlign"], detection::roi_align_factory),
    (&["NonMaxSuppressionV6"], detection::nms_factory),
];
