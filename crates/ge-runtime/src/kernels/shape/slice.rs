//! Slicing: Slice(D), StridedSlice(D) (TensorFlow's masks), StridedSliceV2 (GE's form of ONNX
//! Slice: begin/end/strides along optional axes, then StridedSlice's masks) and ReverseV2.
//! Every index read from a tensor is checked: an index out of range is a kernel error, never a
//! panic.

use super::reshaped;
use super::strided::take;
use crate::error::{Error, Result};
use crate::kernels::common::{bad_attr, full, ints, resolve, Maps};
use crate::kernels::{input, norm_axis, Kernel, NodeInfo};
use crate::value::Value;
use es_core::opmath::slice::bit;
use es_core::opmath::{spread_over_axes, strided_range, SliceMasks};

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
        Ok(vec![take(x, &maps)?])
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

/// The five mask attributes of a StridedSlice(D/V2) node (0 when absent).
fn slice_masks(info: &NodeInfo) -> Result<SliceMasks> {
    Ok(SliceMasks {
        begin: info.int("begin_mask", 0)?,
        end: info.int("end_mask", 0)?,
        ellipsis: info.int("ellipsis_mask", 0)?,
        new_axis: info.int("new_axis_mask", 0)?,
        shrink: info.int("shrink_axis_mask", 0)?,
    })
}

/// x sliced by the spec (begin, end, strides) under the masks `m`.
fn strided(x: &Value, [b, e, s]: [&[i64]; 3], m: SliceMasks) -> Result<Value> {
    let (maps, out) = strided_plan(x.shape(), b, e, s, m)?;
    let y = take(x, &maps)?;
    reshaped(y, &out)
}

pub(super) fn strided_slice_factory(info: &NodeInfo) -> Result<Kernel> {
    let m = slice_masks(info)?;
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
        Ok(vec![strided(x, [&b, &e, &s], m)?])
    }))
}

/// StridedSliceV2's axes for x of rank `rank`: each normalised (negative from the end) and
/// named once, in the order given (begin/end/strides follow it).
fn v2_axes(axes: &[i64], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let r = i64::try_from(rank).unwrap_or(i64::MAX);
        let ax = if a < 0 { a.checked_add(r) } else { Some(a) };
        let ax = ax.filter(|&v| v >= 0 && v < r).ok_or_else(|| {
            Error::kernel(format!(
                "input 'axes' {axes:?}: axis {a} is out of range for rank {rank}"
            ))
        })? as usize;
        if out.contains(&ax) {
            return Err(Error::kernel(format!(
                "input 'axes' {axes:?} names dim {ax} twice"
            )));
        }
        out.push(ax);
    }
    Ok(out)
}

/// StridedSliceV2 (inputs x, begin, end, optional axes, optional strides): begin/end/strides
/// spread over x's dims by axes ([`spread_over_axes`], as the shape inference), the dims not
/// named whole, then StridedSlice's plan with the masks. Every dtype.
pub(super) fn strided_slice_v2_factory(info: &NodeInfo) -> Result<Kernel> {
    let m = slice_masks(info)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let rank = x.shape().len();
        let (b, e) = (ints(input(inputs, 1)?), ints(input(inputs, 2)?));
        let optional = |i: usize| inputs.get(i).copied().flatten().map(ints);
        let axes = optional(3).map(|a| v2_axes(&a, rank)).transpose()?;
        let steps = optional(4);
        let [b, e, s] = spread_over_axes(rank, &b, &e, axes.as_deref(), steps.as_deref())
            .map_err(|why| Error::kernel(format!("{why} (x {:?})", x.shape())))?;
        Ok(vec![strided(x, [&b, &e, &s], m)?])
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
        Ok(vec![take(x, &maps)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::{
        arr, f32s, i32s, i64s, node_with_outputs, run, some, vals,
    };
    use es_core::attr::AttrValue;

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

    /// StridedSliceV2 of x by begin/end and optional axes/strides (absent: None), with masks.
    fn v2(
        x: &Value,
        b: &[i64],
        e: &[i64],
        axes: Option<&[i64]>,
        strides: Option<&[i64]>,
        masks: &[(&str, AttrValue)],
    ) -> Result<Value> {
        let n = node_with_outputs("StridedSliceV2", masks, &[]);
        let (b, e) = (i64s(&[b.len()], b), i64s(&[e.len()], e));
        // axes as int32 where they fit (GE's IndexNumberType), else int64.
        let a = axes.map(|a| {
            match a
                .iter()
                .map(|&v| i32::try_from(v))
                .collect::<std::result::Result<Vec<i32>, _>>()
            {
                Ok(v) => i32s(&[a.len()], &v),
                Err(_) => i64s(&[a.len()], a),
            }
        });
        let s = strides.map(|s| i64s(&[s.len()], s));
        Ok(run(&n, &[Some(x), Some(&b), Some(&e), a.as_ref(), s.as_ref()])?.remove(0))
    }

    fn iota(dims: &[usize]) -> Value {
        let n = dims.iter().product::<usize>();
        f32s(dims, &(0..n).map(|v| v as f32).collect::<Vec<_>>())
    }

    #[test]
    fn strided_slice_v2_negative_strides_and_clamping() {
        let x = iota(&[5]);
        // x[::-1] written as ONNX does: start -1, end below -dim.
        let y = v2(&x, &[-1], &[i64::MIN], None, Some(&[-1]), &[]).unwrap();
        assert_eq!(vals(&y), [4.0, 3.0, 2.0, 1.0, 0.0]);
        // x[3:0:-2] and x[-1:-10:-2]
        let y = v2(&x, &[3], &[0], None, Some(&[-2]), &[]).unwrap();
        assert_eq!(vals(&y), [3.0, 1.0]);
        let y = v2(&x, &[-1], &[-10], None, Some(&[-2]), &[]).unwrap();
        assert_eq!(vals(&y), [4.0, 2.0, 0.0]);
        // Out-of-range begin and end are clamped; an empty range gives an empty tensor.
        let y = v2(&x, &[-100], &[100], None, None, &[]).unwrap();
        assert_eq!(vals(&y), [0.0, 1.0, 2.0, 3.0, 4.0]);
        let y = v2(&x, &[4], &[1], None, None, &[]).unwrap();
        assert_eq!((y.dims(), vals(&y).len()), (vec![0], 0));
        let y = v2(&x, &[i64::MAX], &[i64::MIN], None, Some(&[i64::MIN]), &[]).unwrap();
        assert_eq!(vals(&y), [4.0]);
    }

    #[test]
    fn strided_slice_v2_axes_subset_and_defaults() {
        let x = iota(&[2, 3, 4]);
        // Axis 2 only (named negatively): the other dims whole.
        let y = v2(&x, &[1], &[-1], Some(&[-1]), Some(&[1]), &[]).unwrap();
        assert_eq!(y.dims(), vec![2, 3, 2]);
        assert_eq!(&vals(&y)[..4], [1.0, 2.0, 5.0, 6.0]);
        // Axes in another order than x's dims: begin/end/strides follow the axes.
        let y = v2(&x, &[3, 1], &[0, 2], Some(&[2, 0]), Some(&[-2, 1]), &[]).unwrap();
        assert_eq!(y.dims(), vec![1, 3, 2]);
        assert_eq!(&vals(&y)[..4], [15.0, 13.0, 19.0, 17.0]);
        // No axes: the leading dims; no strides: 1.
        let y = v2(&x, &[1], &[2], None, None, &[]).unwrap();
        assert_eq!(y.dims(), vec![1, 3, 4]);
        assert_eq!(vals(&y)[0], 12.0);
        // The masks apply to the spread spec: shrink dim 1 at index 2.
        let shrink = [("shrink_axis_mask", AttrValue::Int(2))];
        let y = v2(&x, &[2], &[3], Some(&[1]), None, &shrink).unwrap();
        assert_eq!(y.dims(), vec![2, 4]);
        assert_eq!(&vals(&y)[..4], [8.0, 9.0, 10.0, 11.0]);
    }

    #[test]
    fn strided_slice_v2_every_dtype() {
        let b = Value::Bool(arr(&[2, 3], vec![true, false, true, false, false, true]));
        let y = v2(&b, &[1, 0], &[2, 3], Some(&[0, 1]), Some(&[1, 2]), &[]).unwrap();
        assert_eq!(y, Value::Bool(arr(&[1, 2], vec![false, true])));
        let i = Value::I8(arr(&[4], vec![-128, -1, 0, 127]));
        let y = v2(&i, &[-1], &[0], None, Some(&[-1]), &[]).unwrap();
        assert_eq!(y, Value::I8(arr(&[3], vec![127, 0, -1])));
        let u = Value::U64(arr(&[3], vec![u64::MAX, 1, 2]));
        let y = v2(&u, &[0], &[1], None, None, &[]).unwrap();
        assert_eq!(y, Value::U64(arr(&[1], vec![u64::MAX])));
        let f = Value::F64(arr(&[3], vec![f64::NAN, -0.0, f64::INFINITY]));
        let y = v2(&f, &[1], &[3], None, None, &[]).unwrap();
        assert_eq!(y.dtype(), f.dtype());
        assert_eq!(vals(&y), [0.0, f64::INFINITY]);
    }

    #[test]
    fn strided_slice_v2_bad_specs_are_errors() {
        let x = iota(&[2, 3]);
        for (b, e, axes, strides, want) in [
            (
                &[0][..],
                &[1][..],
                Some(&[2][..]),
                None,
                "out of range for rank 2",
            ),
            (
                &[0][..],
                &[1][..],
                Some(&[-3][..]),
                None,
                "out of range for rank 2",
            ),
            (
                &[0, 0][..],
                &[1, 1][..],
                Some(&[1, -1][..]),
                None,
                "names dim 1 twice",
            ),
            (&[0][..], &[1][..], None, Some(&[0][..]), "zero stride"),
            (&[0][..], &[1, 2][..], None, None, "'end' has 2 values"),
            (
                &[0, 0, 0][..],
                &[1, 1, 1][..],
                None,
                None,
                "more values than the rank 2",
            ),
            (
                &[0][..],
                &[1][..],
                Some(&[i64::MIN][..]),
                None,
                "out of range",
            ),
        ] {
            let err = v2(&x, b, e, axes, strides, &[]).unwrap_err().to_string();
            assert!(err.contains(want), "{err} (want {want})");
        }
    }
}
