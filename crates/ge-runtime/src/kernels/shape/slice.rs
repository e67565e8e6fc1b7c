//! Slicing: Slice(D), StridedSlice(D) (TensorFlow's masks) and ReverseV2. Every index read
//! from a tensor is checked: an index out of range is a kernel error, never a panic.

use super::reshaped;
use crate::error::{Error, Result};
use crate::kernels::common::{bad_attr, full, ints, resolve, take_value, Maps};
use crate::kernels::{input, norm_axis, Kernel, NodeInfo};
use es_core::opmath::slice::bit;
use es_core::opmath::{strided_range, SliceMasks};

/// Slice maps: offsets (negative from the end) and sizes (-1: the rest).
fn slice_maps(xs: &[usize], offsets: &[i64], sizes: &[i64]) -> Result<Maps> {
    if offsets.len() != xs.len() || sizes.len() != xs.len() {
        return Err(Error::kernel(format!(
            "offsets {offsets:?} and size {sizes:?} must have one value per dim of x {xs:?}"
        )));
    }
    let mut maps = Vec::with_capacity(xs.len());
    for (i, ((&d, &o), &s)) in xs.iter().zip(offsets).zip(sizes).enumerate() {
        let di = d as i128;
        let b = if o < 0 {
            i128::from(o) + di
        } else {
            i128::from(o)
        };
        if b < 0 || b > di {
            return Err(Error::kernel(format!(
                "offset {o} is out of range for dim {i} of x {xs:?}"
            )));
        }
        let len = match s {
            -1 => di - b,
            s if s >= 0 && b + i128::from(s) <= di => i128::from(s),
            _ => {
                return Err(Error::kernel(format!(
                    "size {s} at offset {o} does not fit dim {i} of x {xs:?}"
                )))
            }
        };
        maps.push((b as usize..(b + len) as usize).map(Some).collect());
    }
    Ok(maps)
}

pub(super) fn slice_factory(info: &NodeInfo) -> Result<Kernel> {
    let attrs = if info.op() == "SliceD" {
        let o = info
            .ints("offsets")?
            .ok_or_else(|| bad_attr(info, "attribute 'offsets' is required"))?;
        let s = info
            .ints("size")?
            .ok_or_else(|| bad_attr(info, "attribute 'size' is required"))?;
        Some((o, s))
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (o, s) = match &attrs {
            Some((o, s)) => (o.clone(), s.clone()),
            None => (ints(input(inputs, 1)?), ints(input(inputs, 2)?)),
        };
        let maps = slice_maps(x.shape(), &o, &s)?;
        Ok(vec![take_value(x, &maps, None)?])
    }))
}

/// The indices one strided dim of size `d` reads (TensorFlow's canonical begin/end,
/// `es_core::opmath::strided_range`).
fn strided_indices(d: usize, b: i64, e: i64, s: i64, bm: bool, em: bool) -> Vec<Option<usize>> {
    let dd = i128::try_from(d).unwrap_or(i128::MAX);
    let (mut i, e) = strided_range(i64::try_from(d).unwrap_or(i64::MAX), b, e, s, bm, em);
    let s = i128::from(s);
    let mut out = Vec::new();
    while (s > 0 && i < e) || (s < 0 && i > e) {
        if i >= 0 && i < dd {
            out.push(Some(i as usize));
        }
        i += s;
    }
    out
}

fn dim_at(xs: &[usize], j: usize) -> Result<usize> {
    xs.get(j)
        .copied()
        .ok_or_else(|| Error::kernel(format!("the slice spec needs more dims than x {xs:?} has")))
}

/// A StridedSlice as index maps over x's dims plus the output dims (new axes inserted, shrunk
/// dims dropped), following TensorFlow (and the shape-inference rule).
fn strided_plan(
    xs: &[usize],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    m: SliceMasks,
) -> Result<(Maps, Vec<usize>)> {
    let n = begin.len();
    if end.len() != n || strides.len() != n {
        return Err(Error::kernel(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} must have the same length"
        )));
    }
    if let Some(i) = strides.iter().position(|&s| s == 0) {
        return Err(Error::kernel(format!(
            "strides {strides:?} has a zero at {i}"
        )));
    }
    if !m.one_ellipsis() {
        return Err(Error::kernel(format!(
            "ellipsis_mask {} must have at most one bit set",
            m.ellipsis
        )));
    }
    let r = xs.len();
    let real = (0..n)
        .filter(|&i| !bit(m.ellipsis, i) && !bit(m.new_axis, i))
        .count();
    if real > r {
        return Err(Error::kernel(format!(
            "the slice spec has {real} indices, more than the rank {r} of x {xs:?}"
        )));
    }
    let ell = r - real;
    let mut maps: Maps = Vec::with_capacity(r);
    let mut out = Vec::new();
    let mut saw_ellipsis = false;
    for i in 0..n {
        if bit(m.ellipsis, i) {
            saw_ellipsis = true;
            for _ in 0..ell {
                let d = dim_at(xs, maps.len())?;
                maps.push(full(d));
                out.push(d);
            }
            continue;
        }
        if bit(m.new_axis, i) {
            out.push(1);
            continue;
        }
        let j = maps.len();
        let d = dim_at(xs, j)?;
        if bit(m.shrink, i) {
            let idx = resolve(begin[i], d, true).map_err(|_| {
                Error::kernel(format!(
                    "shrink_axis_mask index {} (spec {i}) is out of range for dim {j} of x {xs:?}",
                    begin[i]
                ))
            })?;
            maps.push(vec![Some(idx)]);
            continue;
        }
        let map = strided_indices(
            d,
            begin[i],
            end[i],
            strides[i],
            bit(m.begin, i),
            bit(m.end, i),
        );
        out.push(map.len());
        maps.push(map);
    }
    if !saw_ellipsis {
        while maps.len() < r {
            let d = dim_at(xs, maps.len())?;
            maps.push(full(d));
            out.push(d);
        }
    }
    Ok((maps, out))
}

pub(super) fn strided_slice_factory(info: &NodeInfo) -> Result<Kernel> {
    let m = SliceMasks {
        begin: info.int("begin_mask", 0)?,
        end: info.int("end_mask", 0)?,
        ellipsis: info.int("ellipsis_mask", 0)?,
        new_axis: info.int("new_axis_mask", 0)?,
        shrink: info.int("shrink_axis_mask", 0)?,
    };
    let attrs = if info.op() == "StridedSliceD" {
        let mut v = Vec::new();
        for name in ["begin", "end", "strides"] {
            v.push(
                info.ints(name)?
                    .ok_or_else(|| bad_attr(info, format!("attribute '{name}' is required")))?,
            );
        }
        Some(v)
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (b, e, s) = match &attrs {
            Some(v) => (v[0].clone(), v[1].clone(), v[2].clone()),
            None => (
                ints(input(inputs, 1)?),
                ints(input(inputs, 2)?),
                ints(input(inputs, 3)?),
            ),
        };
        let (maps, out) = strided_plan(x.shape(), &b, &e, &s, m)?;
        let y = take_value(x, &maps, None)?;
        Ok(vec![reshaped(y, &out)?])
    }))
}

pub(super) fn reverse_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let axes = ints(input(inputs, 1)?);
        let xs = x.shape();
        let mut maps: Maps = xs.iter().map(|&d| full(d)).collect();
        let mut seen = vec![false; xs.len()];
        for &a in &axes {
            let ax = norm_axis(a, xs.len())?;
            if xs.is_empty() {
                continue;
            }
            if std::mem::replace(&mut seen[ax], true) {
                return Err(Error::kernel(format!("axis {axes:?} repeats dim {ax}")));
            }
            maps[ax].reverse();
        }
        Ok(vec![take_value(x, &maps, None)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::some;

    #[test]
    fn strided_indices_follow_tensorflow() {
        // x[1:5:2] of 6
        assert_eq!(strided_indices(6, 1, 5, 2, false, false), some(&[1, 3]));
        // x[::-1]
        assert_eq!(
            strided_indices(4, 0, 0, -1, true, true),
            some(&[3, 2, 1, 0])
        );
        // x[-2:] and clamped ends
        assert_eq!(strided_indices(5, -2, 100, 1, false, false), some(&[3, 4]));
        assert_eq!(strided_indices(5, -100, 2, 1, false, false), some(&[0, 1]));
        // x[3:0:-1], x[-1:-10:-2]
        assert_eq!(strided_indices(5, 3, 0, -1, false, false), some(&[3, 2, 1]));
        assert_eq!(
            strided_indices(5, -1, -10, -2, false, false),
            some(&[4, 2, 0])
        );
        // empty and extreme values: no overflow
        assert!(strided_indices(5, 3, 1, 1, false, false).is_empty());
        assert!(strided_indices(0, 0, 5, 1, false, false).is_empty());
        assert_eq!(
            strided_indices(3, i64::MIN, i64::MAX, i64::MAX, false, false),
            some(&[0])
        );
        assert_eq!(
            strided_indices(3, i64::MAX, i64::MIN, i64::MIN, false, false),
            some(&[2])
        );
    }

    #[test]
    fn strided_plan_masks() {
        let xs = [2, 3, 4];
        let m = |begin, end, ellipsis, new_axis, shrink| SliceMasks {
            begin,
            end,
            ellipsis,
            new_axis,
            shrink,
        };
        // x[1, :, ::2] with shrink on dim 0 and begin/end masks on dim 1.
        let (maps, out) =
            strided_plan(&xs, &[1, 0, 0], &[2, 0, 4], &[1, 1, 2], m(2, 2, 0, 0, 1)).unwrap();
        assert_eq!(out, vec![3, 2]);
        assert_eq!(maps, vec![some(&[1]), some(&[0, 1, 2]), some(&[0, 2])]);
        // x[..., 1] (ellipsis then shrink): [2, 3]
        let (maps, out) = strided_plan(&xs, &[0, 1], &[0, 2], &[1, 1], m(0, 0, 1, 0, 2)).unwrap();
        assert_eq!(out, vec![2, 3]);
        assert_eq!(maps[2], some(&[1]));
        // x[:, None, 0] (new axis, shrink; implicit rest): [2, 1, 4]
        let (_, out) =
            strided_plan(&xs, &[0, 0, 0], &[0, 0, 1], &[1, 1, 1], m(1, 1, 0, 2, 4)).unwrap();
        assert_eq!(out, vec![2, 1, 4]);
        // x[-1] shrink with a negative index; x[3] is out of range.
        let (maps, out) = strided_plan(&xs, &[-1], &[0], &[1], m(0, 0, 0, 0, 1)).unwrap();
        assert_eq!((maps[0].clone(), out), (some(&[1]), vec![3, 4]));
        assert!(strided_plan(&xs, &[2], &[3], &[1], m(0, 0, 0, 0, 1)).is_err());
        // Zero stride, two ellipses, too many indices, mismatched lengths.
        assert!(strided_plan(&xs, &[0], &[1], &[0], SliceMasks::default()).is_err());
        assert!(strided_plan(&xs, &[0, 0], &[1, 1], &[1, 1], m(0, 0, 3, 0, 0)).is_err());
        assert!(strided_plan(&xs, &[0; 4], &[1; 4], &[1; 4], SliceMasks::default()).is_err());
        assert!(strided_plan(&xs, &[0], &[1, 1], &[1], SliceMasks::default()).is_err());
        // Masks with high bits do not overflow a shift.
        assert!(strided_plan(&xs, &[0], &[1], &[1], m(i64::MIN, -1, 0, 0, 0)).is_ok());
    }
}
