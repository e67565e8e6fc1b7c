//! Element-wise Atan2, Round and Fills.
//!
//! - Atan2: float inputs of one dtype (f16 and bf16 in f32), broadcast.
//! - Round: half to even, numpy's `round(x, decimals)` (`rint(x * 10^d) / 10^d`, for a negative
//!   `d` `rint(x / 10^-d) * 10^-d`); integers are unchanged for `decimals >= 0` and rounded
//!   exactly (half to even) to a multiple of `10^-decimals` otherwise.
//! - Fills: x's shape and dtype filled with the `value` attribute (required).

use super::zip2;
use crate::error::{Error, Result};
use crate::kernels::common::{bad_attr, first, required, Real};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::{Elem, Value};
use crate::with_array;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};

pub(super) fn atan2_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (a, b) = (input(inputs, 0)?, input(inputs, 1)?);
        Ok(vec![match (a, b) {
            (Value::F32(x), Value::F32(y)) => Value::F32(zip2(x, y, f32::atan2)?),
            (Value::F64(x), Value::F64(y)) => Value::F64(zip2(x, y, f64::atan2)?),
            (Value::F16(x), Value::F16(y)) => Value::F16(zip2(x, y, |p, q| {
                f16::from_f32(p.to_f32().atan2(q.to_f32()))
            })?),
            (Value::BF16(x), Value::BF16(y)) => Value::BF16(zip2(x, y, |p, q| {
                bf16::from_f32(p.to_f32().atan2(q.to_f32()))
            })?),
            _ => {
                return Err(Error::kernel(format!(
                    "Atan2 needs float inputs of one dtype, got {} and {}",
                    a.dtype(),
                    b.dtype()
                )))
            }
        }])
    }))
}

/// numpy's `round(x, d)` in `R`: `rint(x * 10^d) / 10^d` (`d < 0`: `rint(x / 10^-d) * 10^-d`).
fn round_real<R: Real>(x: R, d: i32) -> R {
    if d == 0 {
        return x.rint();
    }
    let f = R::from_f64(10f64.powi(d.saturating_abs()));
    match (d > 0, f.is_infinite()) {
        // More digits than the type has: x is already rounded.
        (true, true) => x,
        (true, false) => (x * f).rint() / f,
        // A multiple of more than the largest value: 0 (with x's sign).
        (false, true) => x * R::zero(),
        (false, false) => (x / f).rint() * f,
    }
}

/// Integers as i128 and back (wrapping), for exact rounding.
trait Wide: Copy {
    fn wide(self) -> i128;
    fn narrow(v: i128) -> Self;
}

macro_rules! wide {
    ($($t:ty),*) => {
        $(impl Wide for $t {
            fn wide(self) -> i128 {
                self as i128
            }
            fn narrow(v: i128) -> Self {
                v as $t
            }
        })*
    };
}
wide!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `x` rounded half to even to a multiple of `10^-d` (unchanged for `d >= 0`), wrapping.
fn round_int<T: Wide>(x: T, d: i32) -> T {
    if d >= 0 {
        return x;
    }
    let Some(f) = 10i128.checked_pow(d.unsigned_abs()) else {
        return T::narrow(0); // 10^-d > 2^64 > |x|: the nearest multiple is 0
    };
    let v = x.wide();
    let (q, r) = (v.div_euclid(f), v.rem_euclid(f));
    let up = r > f - r || (r == f - r && q.rem_euclid(2) == 1);
    T::narrow((q + i128::from(up)).wrapping_mul(f))
}

fn round_value(x: &Value, d: i32) -> Result<Value> {
    Ok(match x {
        Value::F32(a) => Value::F32(a.mapv(|v| round_real(v, d))),
        Value::F64(a) => Value::F64(a.mapv(|v| round_real(v, d))),
        Value::F16(a) => Value::F16(a.mapv(|v| f16::from_f32(round_real(v.to_f32(), d)))),
        Value::BF16(a) => Value::BF16(a.mapv(|v| bf16::from_f32(round_real(v.to_f32(), d)))),
        Value::I8(a) => Value::I8(a.mapv(|v| round_int(v, d))),
        Value::I16(a) => Value::I16(a.mapv(|v| round_int(v, d))),
        Value::I32(a) => Value::I32(a.mapv(|v| round_int(v, d))),
        Value::I64(a) => Value::I64(a.mapv(|v| round_int(v, d))),
        Value::U8(a) => Value::U8(a.mapv(|v| round_int(v, d))),
        Value::U16(a) => Value::U16(a.mapv(|v| round_int(v, d))),
        Value::U32(a) => Value::U32(a.mapv(|v| round_int(v, d))),
        Value::U64(a) => Value::U64(a.mapv(|v| round_int(v, d))),
        Value::Bool(_) => return Err(Error::kernel("Round does not take bool tensors")),
        Value::Lowp(dt, _) => return Err(Error::unsupported(format!("Round on {dt}"))),
        Value::Str(_) => return Err(crate::value::numeric_only()),
        Value::Variant(_) => return Err(crate::value::not_a_tensor()),
    })
}

pub(super) fn round_factory(info: &NodeInfo) -> Result<Kernel> {
    let decimals = info.int("decimals", 0)?;
    let d = i32::try_from(decimals).map_err(|_| {
        bad_attr(
            info,
            format!("attribute 'decimals' {decimals} is out of range"),
        )
    })?;
    Ok(Box::new(move |inputs| {
        Ok(vec![round_value(input(inputs, 0)?, d)?])
    }))
}

pub(super) fn fills_factory(info: &NodeInfo) -> Result<Kernel> {
    required(info, "value")?;
    let v = f64::from(info.float("value", 0.0)?);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let s = Value::scalar_f64(x.dtype(), v)?;
        Ok(vec![with_array!(&s, a => {
            let e = first(a, "value")?;
            Elem::wrap(ArrayD::from_elem(IxDyn(x.shape()), e))
        })])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;
    use es_core::DataType;
    use ndarray::{ArrayD, IxDyn};

    use crate::kernels::common::testing::{f32s, f64s, i32s, i8s, run1};

    #[test]
    fn round_is_half_to_even() {
        assert_eq!(round_real(2.5f32, 0), 2.0);
        assert_eq!(round_real(-3.5f64, 0), -4.0);
        assert_eq!(round_real(1.25f64, 1), 1.2);
        assert_eq!(round_real(1250.0f64, -2), 1200.0);
        assert_eq!(round_real(7.0f32, -60), 0.0);
        assert_eq!(round_real(7.5f32, 60), 7.5);
        assert_eq!(round_int(25i32, -1), 20);
        assert_eq!(round_int(35i32, -1), 40);
        assert_eq!(round_int(-25i32, -1), -20);
        assert_eq!(round_int(-26i64, -1), -30);
        assert_eq!(round_int(125i8, -1), 120);
        assert_eq!(
            round_int(u64::MAX, -1),
            18_446_744_073_709_551_620u128 as u64
        );
        assert_eq!(round_int(77u8, 3), 77);
        assert_eq!(round_int(i64::MAX, -40), 0);
        let e = round_value(&Value::Bool(ArrayD::from_elem(IxDyn(&[]), true)), 0).unwrap_err();
        assert!(e.to_string().contains("bool"), "{e}");
    }

    #[test]
    fn fills_round_invert_atan2() {
        let x = i32s(&[2], &[0, 0]);
        let y = run1("Fills", &[("value", AttrValue::Float(2.75))], &[&x]).unwrap();
        assert_eq!((y.dtype(), y.to_i64_vec()), (DataType::INT32, vec![2, 2]));
        assert!(run1("Fills", &[], &[&x]).is_err());
        let y = run1(
            "Round",
            &[("decimals", AttrValue::Int(-1))],
            &[&i32s(&[3], &[15, 25, -15])],
        )
        .unwrap();
        assert_eq!(y.to_i64_vec(), vec![20, 20, -20]);
        let y = run1("Invert", &[], &[&i8s(&[2], &[0, -1])]).unwrap();
        assert_eq!(y.to_i64_vec(), vec![-1, 0]);
        assert!(run1("Invert", &[], &[&f32s(&[1], &[1.0])]).is_err());
        let y = run1(
            "Atan2",
            &[],
            &[&f64s(&[2], &[1.0, -1.0]), &f64s(&[1], &[0.0])],
        )
        .unwrap();
        let h = std::f64::consts::FRAC_PI_2;
        assert_eq!(y.to_f64_vec(), vec![h, -h]);
        assert!(run1("Atan2", &[], &[&i32s(&[1], &[1]), &i32s(&[1], &[1])]).is_err());
    }
}
