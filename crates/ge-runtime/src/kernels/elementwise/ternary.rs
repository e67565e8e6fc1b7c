//! Three-operand element-wise kernels: FusedMulAdd (`x1 * x2 + x3`, a multiply and an add, not
//! one fused rounding), Addcmul (`input_data + value * x1 * x2`, PyTorch's order:
//! `(value * x1) * x2`) and ClipByValue (numpy's `clip`, `min(max(x, lo), hi)` with NaN in any
//! operand propagating). Operands broadcast together (numpy's rules); f16 and bf16 compute in
//! f32, rounded once; integers wrap around.

use super::Arith;
use crate::error::{Error, Result};
use crate::kernels::common::{broadcast_shape, cast_to, first, numel, Pick};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn, Zip};

/// `f` over `a`, `b` and `c` broadcast together (numpy's rules).
fn zip3<A: Copy, B: Copy, C: Copy, O>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    c: &ArrayD<C>,
    f: impl Fn(A, B, C) -> O,
) -> Result<ArrayD<O>> {
    if a.shape() == b.shape() && a.shape() == c.shape() {
        return Ok(Zip::from(a)
            .and(b)
            .and(c)
            .map_collect(|&x, &y, &z| f(x, y, z)));
    }
    let shape = broadcast_shape(&broadcast_shape(a.shape(), b.shape())?, c.shape())?;
    numel(&shape)?;
    let bad = || Error::kernel("internal error: broadcast failed");
    let av = a.broadcast(IxDyn(&shape)).ok_or_else(bad)?;
    let bv = b.broadcast(IxDyn(&shape)).ok_or_else(bad)?;
    let cv = c.broadcast(IxDyn(&shape)).ok_or_else(bad)?;
    Ok(Zip::from(&av)
        .and(&bv)
        .and(&cv)
        .map_collect(|&x, &y, &z| f(x, y, z)))
}

/// An element type and the type it computes in: f16 and bf16 in f32, the others in themselves.
trait Lift: Pick {
    type C: Arith;
    fn up(self) -> Self::C;
    fn down(c: Self::C) -> Self;
}

macro_rules! lift_self {
    ($($t:ty),*) => {
        $(impl Lift for $t {
            type C = $t;
            fn up(self) -> $t {
                self
            }
            fn down(c: $t) -> $t {
                c
            }
        })*
    };
}
lift_self!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! lift_half {
    ($t:ty) => {
        impl Lift for $t {
            type C = f32;
            fn up(self) -> f32 {
                self.to_f32()
            }
            fn down(c: f32) -> $t {
                <$t>::from_f32(c)
            }
        }
    };
}
lift_half!(f16);
lift_half!(bf16);

/// numpy's maximum: NaN in either operand wins.
fn nan_max<T: PartialOrd>(a: T, b: T) -> T {
    if a >= b || a.partial_cmp(&a).is_none() {
        a
    } else {
        b
    }
}

/// numpy's minimum: NaN in either operand wins.
fn nan_min<T: PartialOrd>(a: T, b: T) -> T {
    if a <= b || a.partial_cmp(&a).is_none() {
        a
    } else {
        b
    }
}

/// Runs `$body` with `$x`, `$y`, `$z` bound to the arrays of three values of one numeric
/// dtype, rebuilding a value of that dtype; bool and mixed dtypes are errors.
macro_rules! same3 {
    ($what:expr, $a:expr, $b:expr, $c:expr, |$x:ident, $y:ident, $z:ident| $body:expr) => {
        same3!(
            @[F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64],
            $what, $a, $b, $c, |$x, $y, $z| $body
        )
    };
    (@[$($v:ident),*], $what:expr, $a:expr, $b:expr, $c:expr, |$x:ident, $y:ident, $z:ident| $body:expr) => {
        match ($a, $b, $c) {
            $((Value::$v($x), Value::$v($y), Value::$v($z)) => Value::$v($body),)*
            (Value::Bool(_), Value::Bool(_), Value::Bool(_)) => {
                return Err(Error::kernel(format!(
                    "{} does not take bool tensors",
                    $what
                )))
            }
            (a, b, c) => {
                return Err(Error::kernel(format!(
                    "{}: the inputs have dtypes {}, {} and {}, which must agree",
                    $what,
                    a.dtype(),
                    b.dtype(),
                    c.dtype()
                )))
            }
        }
    };
}

fn fused_mul_add<T: Lift>(a: &ArrayD<T>, b: &ArrayD<T>, c: &ArrayD<T>) -> Result<ArrayD<T>> {
    zip3(a, b, c, |x, y, z| {
        T::down(Arith::add(Arith::mul(x.up(), y.up()), z.up()))
    })
}

pub(super) fn fused_mul_add_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (a, b, c) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        Ok(vec![same3!("FusedMulAdd", a, b, c, |x, y, z| {
            fused_mul_add(x, y, z)?
        })])
    }))
}

fn addcmul<T: Lift>(
    d: &ArrayD<T>,
    a: &ArrayD<T>,
    b: &ArrayD<T>,
    value: &Value,
) -> Result<ArrayD<T>> {
    let v = first(cast_to::<T>(value)?.as_ref(), "value")?.up();
    zip3(d, a, b, |p, q, r| {
        T::down(Arith::add(
            p.up(),
            Arith::mul(Arith::mul(v, q.up()), r.up()),
        ))
    })
}

pub(super) fn addcmul_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (d, a, b) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let value = input(inputs, 3)?;
        Ok(vec![same3!("Addcmul", d, a, b, |p, q, r| {
            addcmul(p, q, r, value)?
        })])
    }))
}

pub(super) fn clip_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (x, lo, hi) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        Ok(vec![same3!("ClipByValue", x, lo, hi, |a, l, h| zip3(
            a,
            l,
            h,
            |v, p, q| nan_min(nan_max(v, p), q)
        )?)])
    }))
}

#[cfg(test)]
mod tests {

    use crate::kernels::common::testing::{f32s, i32s, i8s, run1};

    #[test]
    fn clip_and_fused_ops_broadcast() {
        let x = f32s(&[3], &[-2.0, 0.5, f32::NAN]);
        let y = run1(
            "ClipByValue",
            &[],
            &[&x, &f32s(&[], &[0.0]), &f32s(&[1], &[1.0])],
        )
        .unwrap();
        let v = y.to_f64_vec();
        assert_eq!(&v[..2], &[0.0, 0.5]);
        assert!(v[2].is_nan());
        let y = run1(
            "FusedMulAdd",
            &[],
            &[
                &i32s(&[2, 1], &[1, 2]),
                &i32s(&[3], &[1, 2, 3]),
                &i32s(&[], &[10]),
            ],
        )
        .unwrap();
        assert_eq!(y.to_i64_vec(), vec![11, 12, 13, 12, 14, 16]);
        let y = run1(
            "Addcmul",
            &[],
            &[
                &i8s(&[2], &[1, 2]),
                &i8s(&[2], &[100, 3]),
                &i8s(&[1], &[2]),
                &i8s(&[1, 1], &[2]),
            ],
        )
        .unwrap();
        // 1 + 2 * 100 * 2 wraps in int8: 401 - 512 = -111.
        assert_eq!(y.to_i64_vec(), vec![-111, 14]);
        assert_eq!(y.shape(), &[2]);
        let e = run1(
            "FusedMulAdd",
            &[],
            &[
                &i32s(&[2], &[1, 2]),
                &i32s(&[3], &[1, 2, 3]),
                &i32s(&[], &[1]),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("broadcast"), "{e}");
        let e = run1(
            "FusedMulAdd",
            &[],
            &[&i32s(&[1], &[1]), &f32s(&[1], &[1.0]), &i32s(&[], &[1])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("must agree"), "{e}");
    }
}
