//! Detection: ROIAlign (CANN's) and NonMaxSuppressionV6 (ONNX's); the semantics are in
//! [`super`]'s documentation.

use super::{one_value, real_out, required, Img};
use crate::error::{Error, Result};
use crate::kernels::common::{
    alloc, array, bad_attr, cast_to, count_attr, input_desc, numel, std_slice, str_attr, sub,
};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::{DataType, Format};

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

pub(super) fn roi_align_factory(info: &NodeInfo) -> Result<Kernel> {
    for name in ["spatial_scale", "pooled_height", "pooled_width"] {
        required(info, name)?;
    }
    let ph = count_attr(info, "pooled_height", 0, 1)?;
    let pw = count_attr(info, "pooled_width", 0, 1)?;
    let sample = count_attr(info, "sample_num", 2, 0)?;
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
    let nhwc = input_desc(info, 0).is_some_and(|d| d.format == Format::NHWC);
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

pub(super) fn nms_factory(info: &NodeInfo) -> Result<Kernel> {
    let cpb = info.int("center_point_box", 0)?;
    if cpb != 0 && cpb != 1 {
        return Err(bad_attr(
            info,
            format!("attribute 'center_point_box' must be 0 or 1, got {cpb}"),
        ));
    }
    let max_rows = count_attr(info, "max_boxes_size", 0, 0)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::{f32v as f32s, vals};
    use ndarray::{ArrayD, IxDyn};

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
