//! Reductions (ReduceSum/Mean/Max/Min/Prod with axes as a tensor or an attribute, ReduceAll,
//! ReduceAny), and in the submodules the cumulative ones, ArgMax/ArgMin and ReduceLogSumExp.
//!
//! Floats accumulate in f64 and round once to their dtype (numpy accumulates float32 in
//! float32 pairwise, so sums may differ in the last bits). Max and Min propagate NaN (numpy).
//! Integers accumulate exactly in i128 (every i64 and u64 value fits): sums and products wrap
//! into the dtype, the mean is the exact mean truncated toward zero.

use super::{input, norm_axes, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::{Elem, Value};
use es_core::DataType;
use ndarray::{ArrayD, Axis};

mod arg;
mod cumulative;
mod log_sum_exp;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Red {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    All,
    Any,
}

pub(super) fn axes_of(axes: &[i64], rank: usize) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..rank).collect());
    }
    norm_axes(axes, rank)
}

pub(super) fn fold<T: Copy>(
    a: &ArrayD<T>,
    axes: &[usize],
    keep: bool,
    init: T,
    f: impl Fn(T, T) -> T + Copy,
) -> ArrayD<T> {
    let mut cur = a.clone();
    for &ax in axes.iter().rev() {
        cur = cur.fold_axis(Axis(ax), init, |&acc, &x| f(acc, x));
        if keep {
            cur.insert_axis_inplace(Axis(ax));
        }
    }
    cur
}

/// Sum/Mean/Prod/Max/Min of floats over the last axis of a standard-layout array, row by row
/// in f64 (the same arithmetic as the general path, without its temporaries).
fn reduce_rows<T: Elem>(op: Red, a: &ArrayD<T>, keep: bool) -> Option<ArrayD<T>> {
    let n = *a.shape().last()?;
    if n == 0 {
        return None;
    }
    let data = a.as_slice()?;
    let out: Vec<T> = data
        .chunks_exact(n)
        .map(|row| {
            let it = row.iter().map(|&v| v.to_f64());
            let r = match op {
                Red::Sum => it.sum::<f64>(),
                Red::Mean => it.sum::<f64>() / n as f64,
                Red::Prod => it.product::<f64>(),
                Red::Max => it.fold(f64::NEG_INFINITY, |p, q| {
                    if !p.is_nan() && (q > p || q.is_nan()) {
                        q
                    } else {
                        p
                    }
                }),
                Red::Min => it.fold(f64::INFINITY, |p, q| {
                    if !p.is_nan() && (q < p || q.is_nan()) {
                        q
                    } else {
                        p
                    }
                }),
                Red::All | Red::Any => f64::NAN,
            };
            T::from_f64(r)
        })
        .collect();
    let mut dims = a.shape().to_vec();
    if keep {
        *dims.last_mut()? = 1;
    } else {
        dims.pop();
    }
    ArrayD::from_shape_vec(ndarray::IxDyn(&dims), out).ok()
}

fn reduce_last_fast(op: Red, x: &Value, ax: &[usize], keep: bool) -> Option<Value> {
    if matches!(op, Red::All | Red::Any) || ax != [x.shape().len().checked_sub(1)?] {
        return None;
    }
    Some(match x {
        Value::F32(a) => Value::F32(reduce_rows(op, a, keep)?),
        Value::F64(a) => Value::F64(reduce_rows(op, a, keep)?),
        Value::F16(a) => Value::F16(reduce_rows(op, a, keep)?),
        Value::BF16(a) => Value::BF16(reduce_rows(op, a, keep)?),
        _ => return None,
    })
}

fn reduce(op: Red, x: &Value, axes: &[i64], keep: bool) -> Result<Value> {
    let rank = x.shape().len();
    let ax = axes_of(axes, rank)?;
    let count: usize = ax.iter().map(|&a| x.shape()[a]).product();
    let dt = x.dtype();
    match op {
        Red::All | Red::Any => {
            let Value::Bool(a) = x else {
                return Err(Error::kernel(format!(
                    "{op:?} needs a bool input, got {dt}"
                )));
            };
            let out = if op == Red::All {
                fold(a, &ax, keep, true, |p, q| p && q)
            } else {
                fold(a, &ax, keep, false, |p, q| p || q)
            };
            return Ok(Value::Bool(out));
        }
        _ => {}
    }
    if matches!(x, Value::Bool(_)) {
        return Err(Error::unsupported(format!(
            "{op:?} reduction of bool tensors"
        )));
    }
    if dt.is_float() {
        if let Some(v) = reduce_last_fast(op, x, &ax, keep) {
            return Ok(v);
        }
        let Value::F64(a) = x.cast(DataType::DOUBLE)? else {
            return Err(Error::kernel("internal cast error"));
        };
        // Max/min of an empty set: -inf/+inf (ONNX's and TensorFlow's identities).
        let out = match op {
            Red::Sum => fold(&a, &ax, keep, 0.0, |p, q| p + q),
            Red::Mean => fold(&a, &ax, keep, 0.0, |p, q| p + q).mapv(|s| s / count as f64),
            Red::Prod => fold(&a, &ax, keep, 1.0, |p, q| p * q),
            // A NaN, once met, stays.
            Red::Max => fold(&a, &ax, keep, f64::NEG_INFINITY, |p, q| {
                if !p.is_nan() && (q > p || q.is_nan()) {
                    q
                } else {
                    p
                }
            }),
            Red::Min => fold(&a, &ax, keep, f64::INFINITY, |p, q| {
                if !p.is_nan() && (q < p || q.is_nan()) {
                    q
                } else {
                    p
                }
            }),
            Red::All | Red::Any => unreachable!("handled above"),
        };
        return Value::F64(out).cast(dt);
    }
    // Integers: exact in i128; wrapping mod 2^128 then keeping the dtype's low bits is the
    // dtype's own wrap-around.
    let a = to_i128(x).ok_or_else(|| Error::unsupported(format!("{op:?} reduction of {dt}")))?;
    // Max/min of an empty set: the dtype's lowest/highest value (ONNX, TensorFlow).
    let (lowest, highest) = int_limits(dt)?;
    let out = match op {
        Red::Sum => fold(&a, &ax, keep, 0, i128::wrapping_add),
        Red::Mean => {
            if count == 0 {
                return Err(Error::kernel("mean of an empty set of integers"));
            }
            fold(&a, &ax, keep, 0, i128::wrapping_add).mapv(|s| s / count as i128)
        }
        Red::Prod => fold(&a, &ax, keep, 1, i128::wrapping_mul),
        Red::Max => fold(&a, &ax, keep, lowest, i128::max),
        Red::Min => fold(&a, &ax, keep, highest, i128::min),
        Red::All | Red::Any => unreachable!("handled above"),
    };
    from_i128(&out, dt)
}

/// The elements of an integer value as i128 (`None` for other dtypes).
fn to_i128(x: &Value) -> Option<ArrayD<i128>> {
    Some(match x {
        Value::I8(a) => a.mapv(i128::from),
        Value::I16(a) => a.mapv(i128::from),
        Value::I32(a) => a.mapv(i128::from),
        Value::I64(a) => a.mapv(i128::from),
        Value::U8(a) => a.mapv(i128::from),
        Value::U16(a) => a.mapv(i128::from),
        Value::U32(a) => a.mapv(i128::from),
        Value::U64(a) => a.mapv(i128::from),
        _ => return None,
    })
}

/// The lowest and highest values of an integer dtype.
fn int_limits(dt: DataType) -> Result<(i128, i128)> {
    use DataType::*;
    Ok(match dt {
        INT8 => (i8::MIN.into(), i8::MAX.into()),
        INT16 => (i16::MIN.into(), i16::MAX.into()),
        INT32 => (i32::MIN.into(), i32::MAX.into()),
        INT64 => (i64::MIN.into(), i64::MAX.into()),
        UINT8 => (0, u8::MAX.into()),
        UINT16 => (0, u16::MAX.into()),
        UINT32 => (0, u32::MAX.into()),
        UINT64 => (0, u64::MAX.into()),
        _ => return Err(Error::kernel(format!("{dt} is not an integer dtype"))),
    })
}

/// i128 results into integer dtype `dt`, keeping the low bits (numpy's wrap-around).
fn from_i128(a: &ArrayD<i128>, dt: DataType) -> Result<Value> {
    use DataType::*;
    Ok(match dt {
        INT8 => Value::I8(a.mapv(|v| v as i8)),
        INT16 => Value::I16(a.mapv(|v| v as i16)),
        INT32 => Value::I32(a.mapv(|v| v as i32)),
        INT64 => Value::I64(a.mapv(|v| v as i64)),
        UINT8 => Value::U8(a.mapv(|v| v as u8)),
        UINT16 => Value::U16(a.mapv(|v| v as u16)),
        UINT32 => Value::U32(a.mapv(|v| v as u32)),
        UINT64 => Value::U64(a.mapv(|v| v as u64)),
        _ => return Err(Error::kernel(format!("{dt} is not an integer dtype"))),
    })
}

fn op_of(name: &str) -> Option<Red> {
    Some(match name.trim_end_matches('D') {
        "ReduceSum" => Red::Sum,
        "ReduceMean" => Red::Mean,
        "ReduceMax" => Red::Max,
        "ReduceMin" => Red::Min,
        "ReduceProd" => Red::Prod,
        "ReduceAll" => Red::All,
        "ReduceAny" => Red::Any,
        _ => return None,
    })
}

fn reduce_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = op_of(info.op()).ok_or_else(|| Error::unsupported(info.op().to_string()))?;
    let keep = info.bool("keep_dims", false)?;
    let attr_axes = if info.op().ends_with('D') {
        Some(info.ints("axes")?.unwrap_or_default())
    } else {
        None
    };
    // GE's defaults (and shape inference's): empty axes in a tensor reduce nothing (ReduceSum
    // ... ReduceProd default noop_with_empty_axes to true; ReduceAll/ReduceAny, without the
    // attribute, follow TensorFlow: no axes, no reduction); the *D forms reduce every dim.
    let noop_empty = info.bool("noop_with_empty_axes", attr_axes.is_none())?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axes = match &attr_axes {
            Some(a) => a.clone(),
            None => match inputs.get(1).copied().flatten() {
                Some(v) => v.to_i64_vec(),
                None => Vec::new(),
            },
        };
        if axes.is_empty() && noop_empty {
            return Ok(vec![x.clone()]);
        }
        Ok(vec![reduce(op, x, &axes, keep)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (
        &[
            "ReduceSum",
            "ReduceSumD",
            "ReduceMean",
            "ReduceMeanD",
            "ReduceMax",
            "ReduceMaxD",
            "ReduceMin",
            "ReduceMinD",
            "ReduceProd",
            "ReduceProdD",
            "ReduceAll",
            "ReduceAny",
        ],
        reduce_factory,
    ),
    (&["Cumprod"], cumulative::cumprod_factory),
    (&["Cumsum", "CumsumD"], cumulative::cumsum_factory),
    (&["ArgMaxV2", "ArgMaxD", "ArgMin"], arg::arg_factory),
    (&["ReduceLogSumExp"], log_sum_exp::log_sum_exp_factory),
];

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    #[test]
    fn reduce_axes_and_keep_dims() {
        let x = Value::F32(
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1., 2., 3., 4., 5., 6.]).unwrap(),
        );
        let s = reduce(Red::Sum, &x, &[1], false).unwrap();
        assert_eq!(s.shape(), &[2]);
        assert_eq!(s.to_f64_vec(), vec![6.0, 15.0]);
        let m = reduce(Red::Mean, &x, &[], true).unwrap();
        assert_eq!(m.shape(), &[1, 1]);
        assert_eq!(m.to_f64_vec(), vec![3.5]);
        assert!(reduce(Red::Sum, &x, &[2], false).is_err());
    }

    #[test]
    fn empty_axes_reduce_nothing_unless_the_axes_are_an_attribute() {
        let x = Value::F32(
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1., 2., 3., 4., 5., 6.]).unwrap(),
        );
        let none = Value::I64(ArrayD::from_shape_vec(IxDyn(&[0]), vec![]).unwrap());
        let kernel = |op: &str| {
            let node = es_core::Node::new("r", op);
            let info = NodeInfo {
                node: &node,
                inputs: Vec::new(),
                const_inputs: Vec::new(),
            };
            reduce_factory(&info).unwrap()
        };
        // No noop_with_empty_axes attribute: GE's default (true) for the axes-tensor form.
        assert_eq!(kernel("ReduceSum")(&[Some(&x), Some(&none)]).unwrap()[0], x);
        let b = Value::Bool(ArrayD::from_elem(IxDyn(&[2]), true));
        assert_eq!(kernel("ReduceAll")(&[Some(&b), Some(&none)]).unwrap()[0], b);
        // ReduceSumD with empty axes: every dim.
        let all = kernel("ReduceSumD")(&[Some(&x)]).unwrap();
        assert_eq!(all[0].to_f64_vec(), vec![21.0]);
    }

    #[test]
    fn max_and_min_keep_a_nan_met_first() {
        let x = Value::F32(ArrayD::from_shape_vec(IxDyn(&[3]), vec![f32::NAN, 1., 2.]).unwrap());
        for op in [Red::Max, Red::Min] {
            assert!(reduce(op, &x, &[], false).unwrap().to_f64_vec()[0].is_nan());
        }
    }

    #[test]
    fn integer_reductions_are_exact_and_wrap() {
        let u =
            Value::U64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![u64::MAX, 1 << 63, 3]).unwrap());
        let max = reduce(Red::Max, &u, &[], false).unwrap();
        assert_eq!(max, Value::U64(ArrayD::from_elem(IxDyn(&[]), u64::MAX)));
        let mean = reduce(Red::Mean, &u, &[], false).unwrap();
        let want = ((u64::MAX as u128 + (1u128 << 63) + 3) / 3) as u64;
        assert_eq!(mean, Value::U64(ArrayD::from_elem(IxDyn(&[]), want)));
        let i = Value::I8(ArrayD::from_shape_vec(IxDyn(&[3]), vec![100, 100, -7]).unwrap());
        let sum = reduce(Red::Sum, &i, &[], false).unwrap();
        assert_eq!(
            sum,
            Value::I8(ArrayD::from_elem(IxDyn(&[]), (193i32 - 256) as i8))
        );
        let prod = reduce(Red::Prod, &i, &[], false).unwrap();
        assert_eq!(
            prod,
            Value::I8(ArrayD::from_elem(IxDyn(&[]), (-70000i32) as i8))
        );
        let mean = reduce(Red::Mean, &i, &[], false).unwrap();
        assert_eq!(mean, Value::I8(ArrayD::from_elem(IxDyn(&[]), 64)));
    }
}
