//! UniqueWithCountsAndSorting: PyTorch's `_unique2`: sorted ascending (NaN last, each NaN its
//! own value, as numpy's `unique(equal_nan=False)`); with `sorted` false the values come in
//! the order of their first occurrence (PyTorch's order there is unspecified).

use crate::error::Result;
use crate::kernels::common::{
    alloc, array, bad_attr, rank_cmp, std_slice, type_attr, with_capacity,
};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::{Elem, Value};
use crate::with_array;
use es_core::DataType;
use ndarray::ArrayD;

/// The unique values of `a` (sorted, or in order of first occurrence), the inverse indices (x's
/// shape, or [0]) and the counts (or [0]).
fn unique<T: Elem + PartialOrd>(
    a: &ArrayD<T>,
    sorted: bool,
    inverse: bool,
    counts: bool,
    dt: DataType,
) -> Result<Vec<Value>> {
    let x = std_slice(a);
    let mut order: Vec<usize> = with_capacity(x.len())?;
    order.extend(0..x.len());
    // Stable: equal values keep their order, so a group's first entry is its first occurrence.
    order.sort_by(|&i, &j| rank_cmp(&x[i], &x[j]));
    let mut group = alloc(x.len(), 0usize)?;
    let (mut firsts, mut count): (Vec<usize>, Vec<i64>) = (Vec::new(), Vec::new());
    for (k, &i) in order.iter().enumerate() {
        // NaN != NaN: every NaN is a value of its own.
        if k == 0 || x[order[k - 1]] != x[i] {
            firsts.push(i);
            count.push(0);
        }
        let g = firsts.len() - 1;
        group[i] = g;
        count[g] += 1;
    }
    if !sorted {
        let mut by_first: Vec<usize> = (0..firsts.len()).collect();
        by_first.sort_by_key(|&g| firsts[g]);
        let mut rank = vec![0usize; firsts.len()];
        for (r, &g) in by_first.iter().enumerate() {
            rank[g] = r;
        }
        firsts = by_first.iter().map(|&g| firsts[g]).collect();
        count = by_first.iter().map(|&g| count[g]).collect();
        for g in group.iter_mut() {
            *g = rank[*g];
        }
    }
    let k = firsts.len();
    let y = array(&[k], firsts.iter().map(|&i| x[i]).collect())?;
    let inv = if inverse {
        array(a.shape(), group.into_iter().map(|g| g as i64).collect())?
    } else {
        array(&[0], Vec::new())?
    };
    let cnt = if counts {
        array(&[k], count)?
    } else {
        array(&[0], Vec::new())?
    };
    Ok(vec![
        T::wrap(y),
        Value::I64(inv).cast(dt)?,
        Value::I64(cnt).cast(dt)?,
    ])
}

pub(super) fn unique_factory(info: &NodeInfo) -> Result<Kernel> {
    let sorted = info.bool("sorted", true)?;
    let inverse = info.bool("return_inverse", false)?;
    let counts = info.bool("return_counts", false)?;
    let dt = match type_attr(info, "out_idx")? {
        None | Some(DataType::INT64) => DataType::INT64,
        Some(DataType::INT32) => DataType::INT32,
        Some(t) => {
            return Err(bad_attr(
                info,
                format!("attribute 'out_idx' must be DT_INT32 or DT_INT64, got {t}"),
            ))
        }
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        with_array!(x, a => unique(a, sorted, inverse, counts, dt))
    }))
}

#[cfg(test)]
mod tests {

    use es_core::attr::AttrValue;
    use es_core::DataType;

    use crate::kernels::common::testing::{f32s, i64s, node_with_outputs as node, run};

    #[test]
    fn unique_sorts_and_counts() {
        let x = f32s(&[2, 3], &[3.0, 1.0, f32::NAN, 3.0, f32::NAN, -1.0]);
        let attrs = [
            ("return_inverse", AttrValue::Bool(true)),
            ("return_counts", AttrValue::Bool(true)),
        ];
        let n = node("UniqueWithCountsAndSorting", &attrs, &[]);
        let r = run(&n, &[Some(&x)]).unwrap();
        let y = r[0].to_f64_vec();
        assert_eq!(&y[..3], &[-1.0, 1.0, 3.0]);
        assert!(y[3].is_nan() && y[4].is_nan());
        assert_eq!(r[1].shape(), &[2, 3]);
        assert_eq!(r[1].to_i64_vec(), vec![2, 1, 3, 2, 4, 0]);
        assert_eq!(r[2].to_i64_vec(), vec![1, 1, 2, 1, 1]);
        let mut attrs = attrs.to_vec();
        attrs.push(("sorted", AttrValue::Bool(false)));
        attrs.push(("out_idx", AttrValue::Type(DataType::INT32)));
        let r = run(
            &node("UniqueWithCountsAndSorting", &attrs, &[]),
            &[Some(&i64s(&[5], &[5, 2, 5, 7, 2]))],
        )
        .unwrap();
        assert_eq!(r[0].to_i64_vec(), vec![5, 2, 7]);
        assert_eq!(
            (r[1].dtype(), r[1].to_i64_vec()),
            (DataType::INT32, vec![0, 1, 0, 2, 1])
        );
        assert_eq!(r[2].to_i64_vec(), vec![2, 2, 1]);
        let r = run(
            &node("UniqueWithCountsAndSorting", &[], &[]),
            &[Some(&i64s(&[3], &[2, 2, 1]))],
        )
        .unwrap();
        assert_eq!(r[0].to_i64_vec(), vec![1, 2]);
        assert_eq!((r[1].shape(), r[2].shape()), (&[0][..], &[0][..]));
        let e = run(
            &node(
                "UniqueWithCountsAndSorting",
                &[("out_idx", AttrValue::Type(DataType::FLOAT))],
                &[],
            ),
            &[Some(&x)],
        )
        .unwrap_err();
        assert!(e.to_string().contains("out_idx"), "{e}");
    }
}
