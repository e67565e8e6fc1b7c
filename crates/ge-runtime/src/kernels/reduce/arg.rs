//! ArgMaxV2, ArgMaxD and ArgMin: the index of the first largest (smallest) value along an
//! axis; NaN wins (numpy).

use crate::error::{Error, Result};
use crate::kernels::common::{array, axis_of, is_nan, std_slice, with_capacity, IntParam};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::DataType;
use ndarray::ArrayD;

/// The index of the first largest (smallest) value along `axis`; NaN wins (numpy).
fn arg_reduce<T: Copy + PartialOrd>(a: &ArrayD<T>, axis: usize, max: bool) -> Result<ArrayD<i64>> {
    let xs = a.shape();
    let n = xs[axis];
    if n == 0 {
        return Err(Error::kernel(format!(
            "arg max/min over an empty dim {axis} of {xs:?}"
        )));
    }
    let outer: usize = xs[..axis].iter().product();
    let inner: usize = xs[axis + 1..].iter().product();
    let src = std_slice(a);
    let get = |i: usize| {
        src.get(i)
            .copied()
            .ok_or_else(|| Error::kernel("internal error: argmax out of bounds"))
    };
    let mut out = with_capacity(outer * inner)?;
    for o in 0..outer {
        for i in 0..inner {
            let mut best = get(o * n * inner + i)?;
            let mut bi = 0usize;
            for k in 1..n {
                if is_nan(&best) {
                    break;
                }
                let v = get((o * n + k) * inner + i)?;
                if is_nan(&v) || (max && v > best) || (!max && v < best) {
                    best = v;
                    bi = k;
                }
            }
            out.push(bi as i64);
        }
    }
    let mut dims = xs.to_vec();
    dims.remove(axis);
    array(&dims, out)
}

pub(super) fn arg_factory(info: &NodeInfo) -> Result<Kernel> {
    let max = info.op() != "ArgMin";
    let dimension = IntParam::of(info, "ArgMaxD", "dimension")?;
    let out = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axis = dimension.get(inputs, 1)?;
        let ax = axis_of("arg max/min", x.shape(), axis)?;
        let y = Value::I64(crate::with_array!(x, a => arg_reduce(a, ax, max)?));
        let dt = if matches!(out, DataType::INT32 | DataType::INT64) {
            out
        } else {
            DataType::INT64
        };
        Ok(vec![y.cast(dt)?])
    }))
}
