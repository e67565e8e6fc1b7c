//! Shape kernels that rearrange elements by an attribute: ExpandD, FlattenV2, SpaceToDepth and
//! DepthToSpace.
//!
//! - ExpandD: the two-way (numpy) broadcast of x and the `shape` attribute (ONNX Expand).
//! - SpaceToDepth / DepthToSpace: TensorFlow's (output channel `(bh * b + bw) * C + c`);
//!   DepthToSpace mode DCR is that order, CRD is ONNX's (`c * b * b + bh * b + bw`).

use super::reshape;
use crate::error::{Error, Result};
use crate::kernels::common::{
    alloc, array, axis_of, bad_attr, broadcast_shape, numel, owned, required, std_slice, str_attr,
    strides_of,
};
use crate::kernels::{input, norm_axis, Kernel, NodeInfo};
use crate::map_array;
use crate::value::usize_dims;
use ndarray::{ArrayD, IxDyn};

pub(super) fn expand_d_factory(info: &NodeInfo) -> Result<Kernel> {
    let shape = info
        .ints("shape")?
        .ok_or_else(|| bad_attr(info, "attribute 'shape' is required"))?;
    let want = usize_dims(&shape).ok_or_else(|| {
        bad_attr(
            info,
            format!("attribute 'shape' {shape:?} has a negative dim"),
        )
    })?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dims = broadcast_shape(x.shape(), &want)?;
        Ok(vec![map_array!(x, a => {
            let v = a
                .broadcast(IxDyn(&dims))
                .ok_or_else(|| Error::kernel("internal error: broadcast failed"))?;
            owned(v, &dims)?
        })])
    }))
}

pub(super) fn flatten_v2_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 1)?;
    let end = info.int("end_axis", -1)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (a, e) = (axis_of("FlattenV2", xs, axis)?, norm_axis(end, xs.len())?);
        if a > e {
            return Err(Error::kernel(format!(
                "FlattenV2: axis {axis} comes after end_axis {end} for x {xs:?}"
            )));
        }
        let mut dims = xs[..a].to_vec();
        dims.push(numel(&xs[a..=e])?);
        dims.extend_from_slice(&xs[e + 1..]);
        Ok(vec![reshape(x, &dims)?])
    }))
}

/// SpaceToDepth (`to_depth`) or DepthToSpace.
#[derive(Clone, Copy, Debug)]
struct Blocks {
    b: usize,
    nchw: bool,
    to_depth: bool,
    /// DepthToSpace's CRD order (else DCR).
    crd: bool,
}

/// Strides of the logical (n, h, w, c) dims of a 4-D tensor of `dims` in its layout.
fn nhwc_strides(dims: &[usize; 4], nchw: bool) -> [usize; 4] {
    let s = strides_of(dims);
    if nchw {
        [s[0], s[2], s[3], s[1]]
    } else {
        [s[0], s[1], s[2], s[3]]
    }
}

fn space_depth<T: Copy>(x: &ArrayD<T>, k: Blocks) -> Result<ArrayD<T>> {
    let &[d0, d1, d2, d3] = x.shape() else {
        return Err(Error::kernel(format!(
            "{} needs a 4-D x, got shape {:?}",
            if k.to_depth {
                "SpaceToDepth"
            } else {
                "DepthToSpace"
            },
            x.shape()
        )));
    };
    let (n, h, w, c) = if k.nchw {
        (d0, d2, d3, d1)
    } else {
        (d0, d1, d2, d3)
    };
    let b = k.b;
    let bb = b
        .checked_mul(b)
        .ok_or_else(|| Error::kernel("block_size is too large"))?;
    let too_big = || Error::kernel("the result has too many elements");
    // The deep side has (dh, dw, dc) = (h / b, w / b, c * b * b) of the wide side's (h, w, c).
    let (dh, dw, wc, oh, ow, oc) = if k.to_depth {
        if h % b != 0 || w % b != 0 {
            return Err(Error::kernel(format!(
                "SpaceToDepth: block_size {b} does not divide the height {h} and width {w}"
            )));
        }
        (
            h / b,
            w / b,
            c,
            h / b,
            w / b,
            c.checked_mul(bb).ok_or_else(too_big)?,
        )
    } else {
        if c % bb != 0 {
            return Err(Error::kernel(format!(
                "DepthToSpace: block_size^2 = {bb} does not divide the {c} channels"
            )));
        }
        let (oh, ow) = (
            h.checked_mul(b).ok_or_else(too_big)?,
            w.checked_mul(b).ok_or_else(too_big)?,
        );
        (h, w, c / bb, oh, ow, c / bb)
    };
    let out_dims: [usize; 4] = if k.nchw {
        [n, oc, oh, ow]
    } else {
        [n, oh, ow, oc]
    };
    let total = numel(&out_dims)?;
    let src = std_slice(x);
    let Some(&fill) = src.first() else {
        return array(&out_dims, Vec::new());
    };
    let mut out = alloc(total, fill)?;
    let in_dims: [usize; 4] = [d0, d1, d2, d3];
    let (ds, ws) = if k.to_depth {
        (
            nhwc_strides(&out_dims, k.nchw),
            nhwc_strides(&in_dims, k.nchw),
        )
    } else {
        (
            nhwc_strides(&in_dims, k.nchw),
            nhwc_strides(&out_dims, k.nchw),
        )
    };
    for ni in 0..n {
        for y in 0..dh {
            for xi in 0..dw {
                for bh in 0..b {
                    for bw in 0..b {
                        let deep0 = ni * ds[0] + y * ds[1] + xi * ds[2];
                        let wide0 = ni * ws[0] + (y * b + bh) * ws[1] + (xi * b + bw) * ws[2];
                        for cc in 0..wc {
                            let dc = if k.crd {
                                cc * bb + bh * b + bw
                            } else {
                                (bh * b + bw) * wc + cc
                            };
                            let (deep, wide) = (deep0 + dc * ds[3], wide0 + cc * ws[3]);
                            if k.to_depth {
                                out[deep] = src[wide];
                            } else {
                                out[wide] = src[deep];
                            }
                        }
                    }
                }
            }
        }
    }
    array(&out_dims, out)
}

pub(super) fn space_depth_factory(info: &NodeInfo) -> Result<Kernel> {
    let to_depth = info.op() == "SpaceToDepth";
    required(info, "block_size")?;
    let b = info.int("block_size", 0)?;
    let b = usize::try_from(b).ok().filter(|&b| b >= 2).ok_or_else(|| {
        bad_attr(
            info,
            format!("attribute 'block_size' must be >= 2, got {b}"),
        )
    })?;
    let nchw = match str_attr(info, "data_format", "NHWC")?.as_str() {
        "NHWC" => false,
        "NCHW" => true,
        other => {
            return Err(Error::unsupported(format!(
                "{} with data_format {other:?}",
                info.op()
            )))
        }
    };
    let crd = !to_depth
        && match str_attr(info, "mode", "DCR")?.as_str() {
            "DCR" => false,
            "CRD" => true,
            other => {
                return Err(bad_attr(
                    info,
                    format!("attribute 'mode' must be \"DCR\" or \"CRD\", got {other:?}"),
                ))
            }
        };
    let k = Blocks {
        b,
        nchw,
        to_depth,
        crd,
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        Ok(vec![map_array!(x, a => space_depth(a, k)?)])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;

    use crate::kernels::common::testing::{f32s, i64s, run1, s};

    #[test]
    fn expand_and_flatten() {
        let y = run1(
            "ExpandD",
            &[("shape", AttrValue::ListInt(vec![2, 1, 1]))],
            &[&i64s(&[3], &[1, 2, 3])],
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 1, 3]);
        let e = run1(
            "ExpandD",
            &[("shape", AttrValue::ListInt(vec![-2]))],
            &[&i64s(&[3], &[1, 2, 3])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        let z = f32s(&[2, 3, 4, 5], &[0.0; 120]);
        let flat = |a: i64, e: i64| {
            run1(
                "FlattenV2",
                &[("axis", AttrValue::Int(a)), ("end_axis", AttrValue::Int(e))],
                &[&z],
            )
        };
        assert_eq!(flat(1, 2).unwrap().shape(), &[2, 12, 5]);
        assert_eq!(flat(0, -1).unwrap().shape(), &[120]);
        assert!(flat(2, 1).is_err());
        assert!(flat(1, 4).is_err());
    }

    #[test]
    fn space_and_depth_follow_tensorflow() {
        // TensorFlow's example: [1, 2, 2, 1] -> [1, 1, 1, 4].
        let x = i64s(&[1, 2, 2, 1], &[1, 2, 3, 4]);
        let b2 = [("block_size", AttrValue::Int(2))];
        let y = run1("SpaceToDepth", &b2, &[&x]).unwrap();
        assert_eq!(
            (y.shape(), y.to_i64_vec()),
            (&[1, 1, 1, 4][..], vec![1, 2, 3, 4])
        );
        let back = run1("DepthToSpace", &b2, &[&y]).unwrap();
        assert_eq!(back, x);
        // [1, 2, 2, 2] -> channels interleave per block position.
        let x = i64s(&[1, 2, 2, 2], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let y = run1("SpaceToDepth", &b2, &[&x]).unwrap();
        assert_eq!(y.to_i64_vec(), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        // CRD reads channel c * 4 + block position.
        let d = i64s(&[1, 1, 1, 8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let crd = run1("DepthToSpace", &[b2[0].clone(), ("mode", s("CRD"))], &[&d]).unwrap();
        assert_eq!(crd.shape(), &[1, 2, 2, 2]);
        assert_eq!(crd.to_i64_vec(), vec![1, 5, 2, 6, 3, 7, 4, 8]);
        // NCHW: the same data transposed.
        let xn = i64s(&[1, 1, 2, 2], &[1, 2, 3, 4]);
        let y = run1(
            "SpaceToDepth",
            &[b2[0].clone(), ("data_format", s("NCHW"))],
            &[&xn],
        )
        .unwrap();
        assert_eq!(
            (y.shape(), y.to_i64_vec()),
            (&[1, 4, 1, 1][..], vec![1, 2, 3, 4])
        );
        assert!(run1("SpaceToDepth", &b2, &[&i64s(&[1, 3, 2, 1], &[0; 6])]).is_err());
        assert!(run1("DepthToSpace", &b2, &[&i64s(&[1, 1, 1, 2], &[0; 2])]).is_err());
        assert!(run1("SpaceToDepth", &b2, &[&i64s(&[2, 2], &[0; 4])]).is_err());
        let e = run1("SpaceToDepth", &[("block_size", AttrValue::Int(1))], &[&x]).unwrap_err();
        assert!(e.to_string().contains("block_size"), "{e}");
        let e = run1(
            "SpaceToDepth",
            &[b2[0].clone(), ("data_format", s("NCDHW"))],
            &[&x],
        )
        .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
