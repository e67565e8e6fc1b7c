//! Bitwise kernels: Invert, LeftShift, RightShift and Bitcast.
//!
//! - Invert: bitwise not; on bool (which the prototype does not list) logical not, as numpy.
//! - LeftShift / RightShift: numpy's (`npy_lshift` / `npy_rshift`): the count is read as an
//!   unsigned number, so a negative count is a huge one; a count >= the bit width gives 0, and
//!   for an arithmetic right shift of a negative value -1. Right shifts of signed types are
//!   arithmetic.
//! - Bitcast: TensorFlow's shape rule (a wider x gets a trailing dim, a narrower one loses its
//!   last dim, which must hold the size ratio), or with `keep_dim` the last dim scaled by the
//!   size ratio; the bytes are reinterpreted (little-endian). A bool result holds `byte != 0`.

use super::zip2;
use crate::error::{Error, Result};
use crate::kernels::common::{required, same_dtype2, type_attr};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::{supported_dtype, Value};
use es_core::DataType;

pub(super) fn invert_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        Ok(vec![match x {
            Value::I8(a) => Value::I8(a.mapv(|v| !v)),
            Value::I16(a) => Value::I16(a.mapv(|v| !v)),
            Value::I32(a) => Value::I32(a.mapv(|v| !v)),
            Value::I64(a) => Value::I64(a.mapv(|v| !v)),
            Value::U8(a) => Value::U8(a.mapv(|v| !v)),
            Value::U16(a) => Value::U16(a.mapv(|v| !v)),
            Value::U32(a) => Value::U32(a.mapv(|v| !v)),
            Value::U64(a) => Value::U64(a.mapv(|v| !v)),
            Value::Bool(a) => Value::Bool(a.mapv(|v| !v)),
            _ => {
                return Err(Error::kernel(format!(
                    "Invert needs an integer or bool tensor, got {}",
                    x.dtype()
                )))
            }
        }])
    }))
}

/// numpy's shifts (`npy_lshift`, `npy_rshift`).
trait Shift: Copy {
    fn shl_np(self, n: Self) -> Self;
    fn shr_np(self, n: Self) -> Self;
}

macro_rules! shift {
    ($($t:ty),*) => {
        $(impl Shift for $t {
            #[allow(unused_comparisons)]
            fn shl_np(self, n: Self) -> Self {
                // The count as an unsigned number: a negative one is >= the width.
                if n >= 0 && (n as u128) < u128::from(<$t>::BITS) {
                    self.wrapping_shl(n as u32)
                } else {
                    0
                }
            }
            #[allow(unused_comparisons)]
            fn shr_np(self, n: Self) -> Self {
                if n >= 0 && (n as u128) < u128::from(<$t>::BITS) {
                    self >> (n as u32)
                } else if self < 0 {
                    !0
                } else {
                    0
                }
            }
        })*
    };
}
shift!(i8, i16, i32, i64, u8, u16, u32, u64);

fn shift_values(name: &str, a: &Value, b: &Value, left: bool) -> Result<Value> {
    macro_rules! go {
        ($var:ident, $x:expr, $y:expr) => {
            Value::$var(if left {
                zip2($x, $y, Shift::shl_np)?
            } else {
                zip2($x, $y, Shift::shr_np)?
            })
        };
    }
    Ok(same_dtype2!(
        a,
        b,
        go,
        [I8, I16, I32, I64, U8, U16, U32, U64],
        {
            return Err(Error::kernel(format!(
                "{name} needs integer inputs of one dtype, got {} and {}",
                a.dtype(),
                b.dtype()
            )));
        }
    ))
}

pub(super) fn shift_factory(info: &NodeInfo) -> Result<Kernel> {
    let left = info.op() == "LeftShift";
    let name = if left { "LeftShift" } else { "RightShift" };
    Ok(Box::new(move |inputs| {
        Ok(vec![shift_values(
            name,
            input(inputs, 0)?,
            input(inputs, 1)?,
            left,
        )?])
    }))
}

/// The shape of a bitcast of `dims` from `from` to `to` (the shape rule's).
fn bitcast_dims(dims: &[usize], from: DataType, to: DataType, keep: bool) -> Result<Vec<usize>> {
    let size = |t: DataType| {
        t.size()
            .ok_or_else(|| Error::unsupported(format!("Bitcast of {t}")))
    };
    let (bi, bo) = (size(from)?, size(to)?);
    let mut out = dims.to_vec();
    if bi == bo {
        return Ok(out);
    }
    if keep {
        let Some(last) = out.last_mut() else {
            return Err(Error::kernel(format!(
                "Bitcast with keep_dim: a scalar {from} cannot become {to}, the sizes differ"
            )));
        };
        let total = last
            .checked_mul(bi)
            .ok_or_else(|| Error::kernel("Bitcast: too many elements"))?;
        if total % bo != 0 {
            return Err(Error::kernel(format!(
                "Bitcast of {from} {dims:?} to {to} with keep_dim: the last dim's {total} bytes \
                 are not a multiple of {bo}"
            )));
        }
        *last = total / bo;
    } else if bi > bo {
        out.push(bi / bo);
    } else {
        let want = bo / bi;
        if out.last() != Some(&want) {
            return Err(Error::kernel(format!(
                "Bitcast of {from} {dims:?} to {to}: the last dim must be {want}"
            )));
        }
        out.pop();
    }
    Ok(out)
}

pub(super) fn bitcast_factory(info: &NodeInfo) -> Result<Kernel> {
    required(info, "type")?;
    let to = type_attr(info, "type")?.unwrap_or(DataType::UNDEFINED);
    if !supported_dtype(to) {
        return Err(Error::unsupported(format!("Bitcast to {to}")));
    }
    let keep = info.bool("keep_dim", false)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dims = bitcast_dims(x.shape(), x.dtype(), to, keep)?;
        let y = Value::from_le_bytes(to, &dims, &x.to_le_bytes())
            .map_err(|e| Error::kernel(format!("Bitcast: {e}")))?;
        Ok(vec![y])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;
    use es_core::DataType;

    use crate::kernels::common::testing::{i32s, i8s, run1};

    #[test]
    fn shifts_follow_numpy() {
        assert_eq!(1i8.shl_np(7), i8::MIN);
        assert_eq!(1i8.shl_np(8), 0);
        assert_eq!(1i8.shl_np(-1), 0);
        assert_eq!((-5i8).shr_np(1), -3);
        assert_eq!((-5i8).shr_np(9), -1);
        assert_eq!((-5i8).shr_np(-1), -1);
        assert_eq!(5i8.shr_np(100), 0);
        assert_eq!(0x80u8.shr_np(7), 1);
        assert_eq!(0x80u8.shr_np(8), 0);
        assert_eq!(3u64.shl_np(63), 1 << 63);
        let e = shift_values("LeftShift", &i8s(&[1], &[1]), &i32s(&[1], &[1]), true).unwrap_err();
        assert!(e.to_string().contains("one dtype"), "{e}");
    }

    #[test]
    fn bitcast_shapes_follow_tensorflow() {
        use DataType::*;
        assert_eq!(bitcast_dims(&[3], INT32, UINT8, false).unwrap(), vec![3, 4]);
        assert_eq!(bitcast_dims(&[3, 4], UINT8, INT32, false).unwrap(), vec![3]);
        assert_eq!(
            bitcast_dims(&[3, 4], UINT8, INT32, true).unwrap(),
            vec![3, 1]
        );
        assert_eq!(
            bitcast_dims(&[2, 3], INT64, INT16, true).unwrap(),
            vec![2, 12]
        );
        assert!(bitcast_dims(&[3, 3], UINT8, INT32, false).is_err());
        assert!(bitcast_dims(&[3, 3], UINT8, INT32, true).is_err());
        assert!(bitcast_dims(&[], INT16, INT8, true).is_err());
        let y = run1(
            "Bitcast",
            &[("type", AttrValue::Type(UINT8))],
            &[&i32s(&[1], &[0x0102_0304])],
        )
        .unwrap();
        assert_eq!(y.to_i64_vec(), vec![4, 3, 2, 1]);
        let e = run1(
            "Bitcast",
            &[("type", AttrValue::Type(COMPLEX64))],
            &[&i32s(&[1], &[1])],
        )
        .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
