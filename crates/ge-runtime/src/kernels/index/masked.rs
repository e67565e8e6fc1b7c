//! MaskedFill: x where the (bool) mask is false, `value` where it is true; broadcast.

use crate::error::{Error, Result};
use crate::kernels::common::{cast_to, first, zip2, Pick};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::map_array;
use crate::value::Value;
use ndarray::ArrayD;

fn masked_fill<T: Pick>(x: &ArrayD<T>, mask: &ArrayD<bool>, value: &Value) -> Result<ArrayD<T>> {
    let v = first(cast_to::<T>(value)?.as_ref(), "value")?;
    zip2(x, mask, |e, m| if m { v } else { e })
}

pub(super) fn masked_fill_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let Value::Bool(mask) = input(inputs, 1)? else {
            return Err(Error::kernel(format!(
                "MaskedFill: mask must be bool, got {}",
                input(inputs, 1)?.dtype()
            )));
        };
        let value = input(inputs, 2)?;
        Ok(vec![map_array!(x, a => masked_fill(a, mask, value)?)])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use ndarray::{ArrayD, IxDyn};

    use crate::kernels::common::testing::{i64s, run1};

    #[test]
    fn masked_fill_fills_and_broadcasts() {
        let x = i64s(&[2, 2], &[1, 2, 3, 4]);
        let m = Value::Bool(ArrayD::from_shape_vec(IxDyn(&[2]), vec![true, false]).unwrap());
        let y = run1("MaskedFill", &[], &[&x, &m, &i64s(&[], &[9])]).unwrap();
        assert_eq!(y.to_i64_vec(), vec![9, 2, 9, 4]);
        let e = run1("MaskedFill", &[], &[&x, &x, &i64s(&[], &[9])]).unwrap_err();
        assert!(e.to_string().contains("mask must be bool"), "{e}");
        let e = run1("MaskedFill", &[], &[&x, &m, &i64s(&[2], &[9, 9])]).unwrap_err();
        assert!(e.to_string().contains("one value"), "{e}");
    }
}
