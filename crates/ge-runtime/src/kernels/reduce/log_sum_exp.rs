//! ReduceLogSumExp: `max + log(sum(exp(x - max)))` in f64, rounded once; an empty reduction is
//! -inf; empty `axes` reduce every dim unless `noop_with_empty_axes` (absent: true, the shape
//! rule's default).

use super::axes_of;
use crate::error::{Error, Result};
use crate::kernels::common::{array, ints, with_capacity};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::DataType;
use ndarray::IxDyn;

/// log(sum(exp(row))) with the maximum taken out; NaN anywhere gives NaN, an infinite maximum
/// gives itself.
fn log_sum_exp_row(row: &[f64]) -> f64 {
    let mut m = f64::NEG_INFINITY;
    for &v in row {
        if v.is_nan() {
            return f64::NAN;
        }
        if v > m {
            m = v;
        }
    }
    if m.is_infinite() {
        return m;
    }
    m + row.iter().map(|&v| (v - m).exp()).sum::<f64>().ln()
}

fn log_sum_exp(x: &Value, axes: &[i64], keep: bool) -> Result<Value> {
    let dt = x.dtype();
    if !dt.is_float() {
        return Err(Error::kernel(format!(
            "ReduceLogSumExp needs a float input, got {dt}"
        )));
    }
    let Value::F64(a) = x.cast(DataType::DOUBLE)? else {
        return Err(Error::kernel("internal error: cast gave another dtype"));
    };
    let xs = a.shape().to_vec();
    let rank = xs.len();
    let ax = axes_of(axes, rank)?;
    let kept: Vec<usize> = (0..rank).filter(|i| !ax.contains(i)).collect();
    let mut perm = kept.clone();
    perm.extend_from_slice(&ax);
    let moved = a.view().permuted_axes(IxDyn(&perm));
    let moved = moved.as_standard_layout();
    let data = moved
        .as_slice()
        .ok_or_else(|| Error::kernel("internal error: layout"))?;
    let n: usize = ax.iter().map(|&i| xs[i]).product();
    let rows: usize = kept.iter().map(|&i| xs[i]).product();
    let mut out = with_capacity(rows)?;
    if n == 0 {
        out.resize(rows, f64::NEG_INFINITY); // log(0)
    } else {
        out.extend(data.chunks_exact(n).map(log_sum_exp_row));
    }
    let dims: Vec<usize> = if keep {
        (0..rank)
            .map(|i| if ax.contains(&i) { 1 } else { xs[i] })
            .collect()
    } else {
        kept.iter().map(|&i| xs[i]).collect()
    };
    Value::F64(array(&dims, out)?).cast(dt)
}

pub(super) fn log_sum_exp_factory(info: &NodeInfo) -> Result<Kernel> {
    let keep = info.bool("keep_dims", false)?;
    // Absent: the shape rule's default for reductions with an axes input.
    let noop = info.bool("noop_with_empty_axes", true)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axes = match inputs.get(1).copied().flatten() {
            Some(v) => ints(v),
            None => Vec::new(),
        };
        if axes.is_empty() && noop {
            return Ok(vec![x.clone()]);
        }
        Ok(vec![log_sum_exp(x, &axes, keep)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;

    use crate::kernels::common::testing::{f32s, f64s, i32s, i64s, run1};

    #[test]
    fn log_sum_exp_is_stable() {
        let x = f64s(&[2, 2], &[1000.0, 1000.0, -1.0, f64::NEG_INFINITY]);
        let y = run1("ReduceLogSumExp", &[], &[&x, &i64s(&[1], &[-1])]).unwrap();
        let v = y.to_f64_vec();
        assert!((v[0] - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert_eq!(v[1], -1.0);
        assert_eq!(log_sum_exp_row(&[f64::NEG_INFINITY; 2]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp_row(&[1.0, f64::INFINITY]), f64::INFINITY);
        assert!(log_sum_exp_row(&[f64::NAN, f64::INFINITY]).is_nan());
        let keep = run1(
            "ReduceLogSumExp",
            &[
                ("keep_dims", AttrValue::Bool(true)),
                ("noop_with_empty_axes", AttrValue::Bool(false)),
            ],
            &[&x, &i64s(&[0], &[])],
        )
        .unwrap();
        assert_eq!(keep.shape(), &[1, 1]);
        let empty = log_sum_exp(&f32s(&[2, 0], &[]), &[1], false).unwrap();
        assert_eq!(empty.to_f64_vec(), vec![f64::NEG_INFINITY; 2]);
        assert!(log_sum_exp(&i32s(&[1], &[1]), &[0], false).is_err());
        assert!(log_sum_exp(&x, &[2], false).is_err());
    }
}
