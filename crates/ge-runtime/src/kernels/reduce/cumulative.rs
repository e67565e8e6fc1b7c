//! Cumsum(D) and Cumprod: TensorFlow's (`exclusive`, `reverse`), one scan. Cumprod: TensorFlow's (`exclusive`, `reverse`), sharing Cumsum's scan; f16/bf16 round each
//! step (numpy's `cumprod` in that dtype).

use crate::error::{Error, Result};
use crate::kernels::common::{alloc, array, axis_of, map_num, scalar_int, std_slice, IntParam};
use crate::kernels::elementwise::Arith;
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Elem;
use ndarray::ArrayD;

pub(super) fn cumprod_factory(info: &NodeInfo) -> Result<Kernel> {
    let exclusive = info.bool("exclusive", false)?;
    let reverse = info.bool("reverse", false)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axis = scalar_int(input(inputs, 1)?, "axis")?;
        let ax = axis_of("Cumprod", x.shape(), axis)?;
        Ok(vec![map_num!(x, "Cumprod", a => {
            scan(a, ax, exclusive, reverse, Elem::from_f64(1.0), Arith::mul)?
        })])
    }))
}

/// An inclusive (or exclusive) scan of `f` along `axis`, from the end when `reverse`, starting
/// from `init` (Cumsum: 0 and add; Cumprod: 1 and mul).
pub(super) fn scan<T: Copy>(
    a: &ArrayD<T>,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    init: T,
    f: impl Fn(T, T) -> T,
) -> Result<ArrayD<T>> {
    let xs = a.shape();
    let outer: usize = xs[..axis].iter().product();
    let n = xs[axis];
    let inner: usize = xs[axis + 1..].iter().product();
    let src = std_slice(a);
    let mut out = alloc(src.len(), init)?;
    // Row by row along the axis, each step a contiguous row of `inner` accumulators.
    let mut acc = alloc(inner, init)?;
    let bad = || Error::kernel("internal error: scan out of bounds");
    for o in 0..outer {
        acc.fill(init);
        for step in 0..n {
            let k = if reverse { n - 1 - step } else { step };
            let at = (o * n + k) * inner;
            let row = src.get(at..at + inner).ok_or_else(bad)?;
            let dst = out.get_mut(at..at + inner).ok_or_else(bad)?;
            for ((d, s), &v) in dst.iter_mut().zip(acc.iter_mut()).zip(row) {
                if exclusive {
                    *d = *s;
                    *s = f(*s, v);
                } else {
                    *s = f(*s, v);
                    *d = *s;
                }
            }
        }
    }
    array(xs, out)
}

pub(super) fn cumsum_factory(info: &NodeInfo) -> Result<Kernel> {
    let exclusive = info.bool("exclusive", false)?;
    let reverse = info.bool("reverse", false)?;
    let axis = IntParam::of(info, "CumsumD", "axis")?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axis = axis.get(inputs, 1)?;
        let ax = axis_of("Cumsum", x.shape(), axis)?;
        Ok(vec![
            map_num!(x, "Cumsum", a => scan(a, ax, exclusive, reverse, Arith::zero(), Arith::add)?),
        ])
    }))
}

#[cfg(test)]
mod tests {

    use es_core::attr::AttrValue;

    use crate::kernels::common::testing::{i32s, i64s, run1};

    #[test]
    fn cumprod_scans() {
        let x = i64s(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let y = run1("Cumprod", &[], &[&x, &i32s(&[], &[1])]).unwrap();
        assert_eq!(y.to_i64_vec(), vec![1, 2, 6, 4, 20, 120]);
        let attrs = [
            ("exclusive", AttrValue::Bool(true)),
            ("reverse", AttrValue::Bool(true)),
        ];
        let y = run1("Cumprod", &attrs, &[&x, &i32s(&[], &[-1])]).unwrap();
        assert_eq!(y.to_i64_vec(), vec![6, 3, 1, 30, 6, 1]);
        assert!(run1("Cumprod", &[], &[&x, &i32s(&[], &[2])]).is_err());
        assert!(run1("Cumprod", &[], &[&i64s(&[], &[2]), &i32s(&[], &[0])]).is_err());
    }
}
