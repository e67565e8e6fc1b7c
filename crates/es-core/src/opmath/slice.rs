//! TensorFlow's StridedSlice: a slice spec of `n` entries (begin/end/strides) with five bit
//! masks. Bit `i` of `ellipsis` makes entry `i` the ellipsis (the dims no other entry takes;
//! at most one), of `new_axis` inserts a dim of 1, of `shrink` takes the single index `begin`
//! and drops the dim; `begin`/`end` bits make that bound the start/end for the stride's
//! direction. Without an ellipsis the dims after the spec are kept whole.

/// The five masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceMasks {
    pub begin: i64,
    pub end: i64,
    pub ellipsis: i64,
    pub new_axis: i64,
    pub shrink: i64,
}

/// Whether bit `i` of `mask` is set (bits past 62 are never set).
pub fn bit(mask: i64, i: usize) -> bool {
    i < 63 && (mask >> i) & 1 == 1
}

impl SliceMasks {
    /// Whether `ellipsis` sets at most one bit (and is not negative).
    pub fn one_ellipsis(&self) -> bool {
        self.ellipsis >= 0 && self.ellipsis.count_ones() <= 1
    }
}

/// What one entry of the spec (or one kept trailing dim) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecDim {
    /// Dim `dim` of x kept whole (the ellipsis's dims, or the dims after a spec without one).
    Keep { dim: usize },
    /// A new dim of 1.
    NewAxis,
    /// Entry `spec` takes one index of dim `dim` (the dim is dropped).
    Shrink { spec: usize, dim: usize },
    /// Entry `spec` slices dim `dim` with its begin/end/stride.
    Slice { spec: usize, dim: usize },
}

/// StridedSliceV2 (ONNX Slice): `begin`/`end`/`strides` (None: all 1) given for `axes`
/// (normalised and distinct; None: the leading dims, one per value) spread into a full spec of
/// `rank` entries, the dims not named taken whole (begin 0, end `i64::MAX`, stride 1), as GE's
/// StridedSliceV2 does. `Err`: what is wrong (lengths that differ, a zero stride, too many
/// values).
pub fn spread_over_axes(
    rank: usize,
    begin: &[i64],
    end: &[i64],
    axes: Option<&[usize]>,
    strides: Option<&[i64]>,
) -> Result<[Vec<i64>; 3], String> {
    let n = axes.map_or(begin.len(), <[usize]>::len);
    if axes.is_none() && n > rank {
        return Err(format!(
            "input 'begin' {begin:?} has more values than the rank {rank} of x"
        ));
    }
    let ones = vec![1; n];
    let strides = strides.unwrap_or(&ones);
    for (name, len) in [
        ("begin", begin.len()),
        ("end", end.len()),
        ("strides", strides.len()),
    ] {
        if len != n {
            return Err(format!(
                "input '{name}' has {len} values but the slice has {n} axes; begin, end, axes \
                 and strides must have the same length"
            ));
        }
    }
    if let Some(k) = strides.iter().position(|&s| s == 0) {
        return Err(format!(
            "input 'strides' {strides:?} has a zero stride at index {k}"
        ));
    }
    let mut out = [vec![0i64; rank], vec![i64::MAX; rank], vec![1i64; rank]];
    for k in 0..n {
        let a = axes.map_or(k, |a| a[k]);
        if a >= rank {
            return Err(format!("axis {a} is out of range for rank {rank}"));
        }
        out[0][a] = begin[k];
        out[1][a] = end[k];
        out[2][a] = strides[k];
    }
    Ok(out)
}

/// The walk of a spec of `n` entries over x of rank `rank`, in output order (a `Shrink` gives
/// no output dim). `Err(real)`: the spec has `real` entries that consume dims, more than
/// `rank`. The caller checks [`SliceMasks::one_ellipsis`] first.
pub fn slice_spec(n: usize, rank: usize, m: &SliceMasks) -> Result<Vec<SpecDim>, usize> {
    let real = (0..n)
        .filter(|&i| !bit(m.ellipsis, i) && !bit(m.new_axis, i))
        .count();
    if real > rank {
        return Err(real);
    }
    let ell = rank - real;
    let mut out = Vec::with_capacity(n + rank);
    let mut j = 0usize;
    let mut saw_ellipsis = false;
    for i in 0..n {
        if bit(m.ellipsis, i) {
            saw_ellipsis = true;
            out.extend((j..j + ell).map(|dim| SpecDim::Keep { dim }));
            j += ell;
        } else if bit(m.new_axis, i) {
            out.push(SpecDim::NewAxis);
        } else {
            out.push(if bit(m.shrink, i) {
                SpecDim::Shrink { spec: i, dim: j }
            } else {
                SpecDim::Slice { spec: i, dim: j }
            });
            j += 1;
        }
    }
    if !saw_ellipsis {
        out.extend((j..rank).map(|dim| SpecDim::Keep { dim }));
    }
    Ok(out)
}

/// The canonical [start, end) (or (end, start] for a negative stride) of one sliced dim of
/// size `d`: negative values count from the end, then clamp; a masked bound is the start/end
/// for the stride's direction. `s` must not be 0.
pub fn strided_range(d: i64, b: i64, e: i64, s: i64, bm: bool, em: bool) -> (i128, i128) {
    let d = i128::from(d);
    let (lower, upper) = if s > 0 { (0, d) } else { (-1, d - 1) };
    let canon = |v: i64, masked: bool, is_begin: bool| -> i128 {
        if masked {
            if (s > 0) == is_begin {
                lower
            } else {
                upper
            }
        } else {
            let v = i128::from(v);
            let v = if v < 0 { v + d } else { v };
            v.clamp(lower, upper)
        }
    };
    (canon(b, bm, true), canon(e, em, false))
}

/// The number of elements one sliced dim of size `d` keeps.
pub fn strided_len(d: i64, b: i64, e: i64, s: i64, bm: bool, em: bool) -> i64 {
    let (b, e) = strided_range(d, b, e, s, bm, em);
    let interval = e - b;
    let s = i128::from(s);
    if interval == 0 || (interval < 0) != (s < 0) {
        0
    } else {
        (interval / s + i128::from(interval % s != 0)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_walk_with_masks() {
        use SpecDim::*;
        let m = SliceMasks::default();
        assert_eq!(
            slice_spec(1, 3, &m),
            Ok(vec![
                Slice { spec: 0, dim: 0 },
                Keep { dim: 1 },
                Keep { dim: 2 }
            ])
        );
        // x[..., None, 0] on rank 3: ellipsis takes dims 0 and 1.
        let m = SliceMasks {
            ellipsis: 1,
            new_axis: 2,
            shrink: 4,
            ..Default::default()
        };
        assert_eq!(
            slice_spec(3, 3, &m),
            Ok(vec![
                Keep { dim: 0 },
                Keep { dim: 1 },
                NewAxis,
                Shrink { spec: 2, dim: 2 }
            ])
        );
        assert_eq!(slice_spec(3, 2, &SliceMasks::default()), Err(3));
        assert!(!SliceMasks { ellipsis: 3, ..m }.one_ellipsis());
        assert!(!SliceMasks { ellipsis: -1, ..m }.one_ellipsis());
        assert!(!bit(-1, 63));
    }

    #[test]
    fn tensorflow_bounds() {
        assert_eq!(strided_len(10, 2, 8, 3, false, false), 2);
        assert_eq!(strided_len(10, -1, 0, -1, false, false), 9);
        assert_eq!(strided_len(10, 0, 0, -1, true, true), 10);
        assert_eq!(strided_len(10, 5, 100, 1, false, false), 5);
        assert_eq!(strided_len(10, 5, 2, 1, false, false), 0);
        assert_eq!(strided_range(10, -100, 100, 1, false, false), (0, 10));
        assert_eq!(strided_range(10, 100, -100, -1, false, false), (9, -1));
    }

    proptest! {
        /// The length is the number of indices a loop from start to end visits.
        #[test]
        fn length_counts_the_visited_indices(
            d in 0i64..12, b in -15i64..15, e in -15i64..15,
            s in prop_oneof![-4i64..0, 1i64..5], bm in any::<bool>(), em in any::<bool>(),
        ) {
            let (mut i, end) = strided_range(d, b, e, s, bm, em);
            let mut n = 0;
            while (s > 0 && i < end) || (s < 0 && i > end) {
                prop_assert!(i >= 0 && i < i128::from(d));
                n += 1;
                i += i128::from(s);
            }
            prop_assert_eq!(strided_len(d, b, e, s, bm, em), n);
        }
    }

    #[test]
    fn spread_over_axes_fills_the_dims_not_named() {
        let m = i64::MAX;
        assert_eq!(
            spread_over_axes(3, &[1], &[-1], Some(&[2]), Some(&[-2])).unwrap(),
            [vec![0, 0, 1], vec![m, m, -1], vec![1, 1, -2]]
        );
        // Without axes: the leading dims; without strides: 1.
        assert_eq!(
            spread_over_axes(2, &[3], &[5], None, None).unwrap(),
            [vec![3, 0], vec![5, m], vec![1, 1]]
        );
        for (b, e, a, s, want) in [
            (
                &[0, 1, 2][..],
                &[1, 2, 3][..],
                None,
                None,
                "more values than the rank 2",
            ),
            (&[0][..], &[1, 2][..], None, None, "'end' has 2 values"),
            (
                &[0][..],
                &[1][..],
                Some(&[1usize][..]),
                Some(&[0i64][..]),
                "zero stride",
            ),
            (
                &[0][..],
                &[1][..],
                Some(&[2usize][..]),
                None,
                "out of range",
            ),
        ] {
            let err = spread_over_axes(2, b, e, a, s).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}
