//! EmbeddingBag: PyTorch's `_embedding_bag` forward: bags from `offsets` (1-D indices; the
//! first offset must be 0, offsets non-decreasing, the last bag runs to the end of indices as
//! in PyTorch's `offset2bag`) or the rows of a 2-D indices; `padding_idx >= 0` entries are
//! skipped and not counted; mean divides by the count (an empty bag gives 0); max keeps the
//! first of equal maxima and `max_indices` holds the chosen weight rows (0 for an empty bag).
//! `bag_size` is computed in every mode; `max_indices` is zeros outside max mode (PyTorch
//! leaves both undefined there). `per_sample_weights` only with mode sum (PyTorch's rule).
//! Sums accumulate in f32 (f64 for f64 weights) and round once.

use crate::error::{Error, Result};
use crate::kernels::common::{
    alloc, array, bad_attr, ints, numel, std_slice, str_attr, with_capacity, Real,
};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::{Elem, Value};
use es_core::DataType;

/// An index dtype (int32 or int64) for an output: the node's, else int64.
fn index_dtype(info: &NodeInfo, i: usize) -> DataType {
    match info.out_dtype(i) {
        Ok(DataType::INT32) => DataType::INT32,
        _ => DataType::INT64,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BagMode {
    Sum,
    Mean,
    Max,
}

/// The index range of every bag: from offsets (1-D indices), or the rows of 2-D indices.
fn bag_bounds(
    idx_shape: &[usize],
    offsets: Option<&Value>,
    last: bool,
) -> Result<Vec<(usize, usize)>> {
    let n = numel(idx_shape)?;
    let Some(o) = offsets else {
        let &[rows, len] = idx_shape else {
            return Err(Error::kernel(format!(
                "EmbeddingBag without offsets needs 2-D indices [bags, n], got shape {idx_shape:?}"
            )));
        };
        return Ok((0..rows).map(|r| (r * len, r * len + len)).collect());
    };
    if idx_shape.len() != 1 || o.shape().len() != 1 {
        return Err(Error::kernel(format!(
            "EmbeddingBag with offsets needs 1-D indices and offsets, got shapes {idx_shape:?} \
             and {:?}",
            o.shape()
        )));
    }
    let off = ints(o);
    let bags = if last {
        off.len().checked_sub(1).ok_or_else(|| {
            Error::kernel("EmbeddingBag: include_last_offset needs at least one offset")
        })?
    } else {
        off.len()
    };
    if off.first().is_some_and(|&f| f != 0) {
        return Err(Error::kernel(format!(
            "EmbeddingBag: offsets[0] must be 0, got {}",
            off[0]
        )));
    }
    let bad = |b: usize, v: i64| {
        Error::kernel(format!(
            "EmbeddingBag: offsets must be non-decreasing and at most {n} (the number of \
             indices), got offsets[{b}] = {v}"
        ))
    };
    let mut out = with_capacity(bags)?;
    let mut prev = 0usize;
    for (b, &v) in off.iter().enumerate() {
        let at = usize::try_from(v)
            .ok()
            .filter(|&at| at >= prev && at <= n)
            .ok_or_else(|| bad(b, v))?;
        prev = at;
    }
    for b in 0..bags {
        // Validated above: 0 = offsets[0] <= offsets[1] <= ... <= n. The last bag runs to the
        // end of indices (PyTorch's offset2bag and bag_size).
        let s = off[b] as usize;
        let e = if b + 1 < bags { off[b + 1] as usize } else { n };
        out.push((s, e));
    }
    Ok(out)
}

/// What an EmbeddingBag computes: y, offset2bag, bag_size and max_indices.
struct Bags<T> {
    y: Vec<T>,
    offset2bag: Vec<i64>,
    bag_size: Vec<i64>,
    max_indices: Vec<i64>,
}

fn embedding_bag<T: Elem, A: Real>(
    w: &[T],
    d: usize,
    idx: &[i64],
    bounds: &[(usize, usize)],
    psw: Option<&[f64]>,
    mode: BagMode,
    padding: i64,
) -> Result<Bags<T>> {
    let num = w.len().checked_div(d).unwrap_or(0);
    let bags = bounds.len();
    let total = numel(&[bags, d])?;
    let mut acc: Vec<A> = alloc(total, A::zero())?;
    let mut offset2bag = alloc(idx.len(), 0i64)?;
    let mut bag_size = alloc(bags, 0i64)?;
    let mut max_indices = alloc(if mode == BagMode::Max { total } else { bags }, 0i64)?;
    for (b, &(s, e)) in bounds.iter().enumerate() {
        let row = &mut acc[b * d..(b + 1) * d];
        let mut count = 0i64;
        let range = || Error::kernel("internal error: bag out of range");
        let ids = idx.get(s..e).ok_or_else(range)?;
        let bag_of = offset2bag.get_mut(s..e).ok_or_else(range)?;
        for (k, (&ix, o2b)) in ids.iter().zip(bag_of).enumerate() {
            let i = s + k;
            *o2b = b as i64;
            if ix < 0 || ix as u64 >= num as u64 {
                return Err(Error::kernel(format!(
                    "EmbeddingBag: index {ix} (position {i}) is out of range for {num} embeddings"
                )));
            }
            if padding >= 0 && ix == padding {
                continue;
            }
            let src = &w[ix as usize * d..(ix as usize + 1) * d];
            match mode {
                BagMode::Sum | BagMode::Mean => {
                    let scale = match psw {
                        Some(p) => A::from_f64(*p.get(i).ok_or_else(|| {
                            Error::kernel("internal error: per_sample_weights out of range")
                        })?),
                        None => A::one(),
                    };
                    for (o, &v) in row.iter_mut().zip(src) {
                        *o += A::of(v) * scale;
                    }
                }
                BagMode::Max => {
                    let mi = &mut max_indices[b * d..(b + 1) * d];
                    for ((o, m), &v) in row.iter_mut().zip(mi).zip(src) {
                        let v = A::of(v);
                        if count == 0 || v > *o {
                            *o = v;
                            *m = ix;
                        }
                    }
                }
            }
            count += 1;
        }
        bag_size[b] = count;
        if mode == BagMode::Mean && count > 0 {
            let c = A::from_f64(count as f64);
            for o in row.iter_mut() {
                *o = *o / c;
            }
        }
    }
    Ok(Bags {
        y: acc.into_iter().map(|a| a.to::<T>()).collect(),
        offset2bag,
        bag_size,
        max_indices,
    })
}

pub(super) fn embedding_bag_factory(info: &NodeInfo) -> Result<Kernel> {
    let mode = match str_attr(info, "mode", "mean")?.as_str() {
        "sum" => BagMode::Sum,
        "mean" => BagMode::Mean,
        "max" => BagMode::Max,
        other => {
            return Err(bad_attr(
                info,
                format!("attribute 'mode' must be \"sum\", \"mean\" or \"max\", got {other:?}"),
            ))
        }
    };
    let last = info.bool("include_last_offset", false)?;
    let padding = info.int("padding_idx", -1)?;
    let weighted = info.inputs.get(3).is_some_and(Option::is_some);
    if weighted && mode != BagMode::Sum {
        return Err(Error::unsupported(format!(
            "EmbeddingBag with per_sample_weights in mode {mode:?} (only mode sum takes them, \
             as in PyTorch)"
        )));
    }
    let dts = [
        index_dtype(info, 1),
        index_dtype(info, 2),
        index_dtype(info, 3),
    ];
    Ok(Box::new(move |inputs| {
        let w = input(inputs, 0)?;
        let idx_v = input(inputs, 1)?;
        let offsets = inputs.get(2).copied().flatten();
        let psw = inputs.get(3).copied().flatten();
        let &[_, d] = w.shape() else {
            return Err(Error::kernel(format!(
                "EmbeddingBag needs a 2-D weight, got shape {:?}",
                w.shape()
            )));
        };
        if psw.is_some() && mode != BagMode::Sum {
            return Err(Error::unsupported(format!(
                "EmbeddingBag with per_sample_weights in mode {mode:?}"
            )));
        }
        let idx = ints(idx_v);
        let bounds = bag_bounds(idx_v.shape(), offsets, last)?;
        let psw = match psw {
            Some(p) if p.shape() != idx_v.shape() => {
                return Err(Error::kernel(format!(
                    "EmbeddingBag: per_sample_weights {:?} must have the shape of indices {:?}",
                    p.shape(),
                    idx_v.shape()
                )))
            }
            Some(p) => Some(p.to_f64_vec()),
            None => None,
        };
        let psw = psw.as_deref();
        let bags = bounds.len();
        macro_rules! go {
            ($var:ident, $a:expr, $acc:ty) => {{
                let r =
                    embedding_bag::<_, $acc>(&std_slice($a), d, &idx, &bounds, psw, mode, padding)?;
                (
                    Value::$var(array(&[bags, d], r.y)?),
                    r.offset2bag,
                    r.bag_size,
                    r.max_indices,
                )
            }};
        }
        let (y, o2b, size, mi) = match w {
            Value::F32(a) => go!(F32, a, f32),
            Value::F64(a) => go!(F64, a, f64),
            Value::F16(a) => go!(F16, a, f32),
            Value::BF16(a) => go!(BF16, a, f32),
            _ => {
                return Err(Error::kernel(format!(
                    "EmbeddingBag needs a float weight, got {}",
                    w.dtype()
                )))
            }
        };
        let mi_dims: Vec<usize> = if mode == BagMode::Max {
            vec![bags, d]
        } else {
            vec![bags]
        };
        Ok(vec![
            y,
            Value::I64(array(&[idx.len()], o2b)?).cast(dts[0])?,
            Value::I64(array(&[bags], size)?).cast(dts[1])?,
            Value::I64(array(&mi_dims, mi)?).cast(dts[2])?,
        ])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;
    use es_core::DataType;

    use crate::kernels::common::testing::{f32s, i64s, node_with_outputs as node, run, s};

    fn bag(
        mode: &str,
        extra: &[(&str, AttrValue)],
        inputs: &[Option<&Value>],
    ) -> Result<Vec<Value>> {
        let mut attrs = vec![("mode", s(mode))];
        attrs.extend_from_slice(extra);
        let n = node(
            "EmbeddingBag",
            &attrs,
            &[
                DataType::FLOAT,
                DataType::INT64,
                DataType::INT64,
                DataType::INT64,
            ],
        );
        run(&n, inputs)
    }

    #[test]
    fn embedding_bag_follows_pytorch() {
        let w = f32s(&[4, 2], &[0.0, 1.0, 10.0, 11.0, 20.0, -21.0, 30.0, 31.0]);
        let idx = i64s(&[5], &[1, 2, 3, 0, 2]);
        let off = i64s(&[3], &[0, 2, 2]);
        let r = bag("sum", &[], &[Some(&w), Some(&idx), Some(&off), None]).unwrap();
        assert_eq!(r[0].to_f64_vec(), vec![30.0, -10.0, 0.0, 0.0, 50.0, 11.0]);
        assert_eq!(r[1].to_i64_vec(), vec![0, 0, 2, 2, 2]);
        assert_eq!(r[2].to_i64_vec(), vec![2, 0, 3]);
        let r = bag(
            "mean",
            &[("padding_idx", AttrValue::Int(2))],
            &[Some(&w), Some(&idx), Some(&off), None],
        )
        .unwrap();
        assert_eq!(r[0].to_f64_vec(), vec![10.0, 11.0, 0.0, 0.0, 15.0, 16.0]);
        assert_eq!(r[2].to_i64_vec(), vec![1, 0, 2]);
        let r = bag("max", &[], &[Some(&w), Some(&idx), Some(&off), None]).unwrap();
        assert_eq!(r[0].to_f64_vec(), vec![20.0, 11.0, 0.0, 0.0, 30.0, 31.0]);
        assert_eq!(r[3].shape(), &[3, 2]);
        assert_eq!(r[3].to_i64_vec(), vec![2, 1, 0, 0, 3, 3]);
        // 2-D indices: one bag per row; per-sample weights in sum mode.
        let idx2 = i64s(&[2, 2], &[0, 1, 3, 3]);
        let psw = f32s(&[2, 2], &[1.0, 2.0, 0.5, 0.5]);
        let r = bag("sum", &[], &[Some(&w), Some(&idx2), None, Some(&psw)]).unwrap();
        assert_eq!(r[0].to_f64_vec(), vec![20.0, 23.0, 30.0, 31.0]);
        // include_last_offset: one bag fewer.
        let off4 = i64s(&[3], &[0, 3, 5]);
        let r = bag(
            "sum",
            &[("include_last_offset", AttrValue::Bool(true))],
            &[Some(&w), Some(&idx), Some(&off4), None],
        )
        .unwrap();
        assert_eq!(r[0].shape(), &[2, 2]);
    }

    #[test]
    fn embedding_bag_errors() {
        let w = f32s(&[2, 1], &[1.0, 2.0]);
        let idx = i64s(&[2], &[0, 2]);
        let off = i64s(&[1], &[0]);
        let e = bag("sum", &[], &[Some(&w), Some(&idx), Some(&off), None]).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let idx = i64s(&[2], &[0, 1]);
        let e = bag(
            "sum",
            &[],
            &[Some(&w), Some(&idx), Some(&i64s(&[1], &[1])), None],
        )
        .unwrap_err();
        assert!(e.to_string().contains("offsets[0]"), "{e}");
        let e = bag(
            "sum",
            &[],
            &[Some(&w), Some(&idx), Some(&i64s(&[2], &[0, 3])), None],
        )
        .unwrap_err();
        assert!(e.to_string().contains("non-decreasing"), "{e}");
        let e = bag("sum", &[], &[Some(&w), Some(&idx), None, None]).unwrap_err();
        assert!(e.to_string().contains("2-D indices"), "{e}");
        let psw = f32s(&[2], &[1.0, 1.0]);
        let e = bag("mean", &[], &[Some(&w), Some(&idx), Some(&off), Some(&psw)]).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        let e = bag("median", &[], &[Some(&w), Some(&idx), Some(&off), None]).unwrap_err();
        assert!(e.to_string().contains("mode"), "{e}");
    }
}
