//! Element-wise kernels with numpy broadcasting: arithmetic, comparisons, logic, activations
//! and math functions, Cast, Threshold and BiasAdd (x plus a bias along its channel axis).
//!
//! Floats: f32 and f64 compute in their own precision; f16 and bf16 compute in f32 and round
//! once (as numpy does). Integers wrap on overflow (numpy's behaviour); integer division or
//! remainder by zero is an error, not a crash.

use super::common::zip2;
use super::common::{float_out, floats, from_f64, map};
use super::{input, Kernel, Kernels, NodeInfo};

mod bitwise;
mod math;
mod ternary;

use crate::error::{Error, Result};
use crate::par;
use crate::value::{Elem, Value};
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewMutD, IxDyn, Zip};
use std::ops::Range;

// ---------------------------------------------------------------------------------------------
// Arithmetic per element type
// ---------------------------------------------------------------------------------------------

/// Binary arithmetic with numpy's semantics for one element type.
pub(crate) trait Arith: Elem + PartialOrd + Default {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// True division for floats; truncating division for integers (`None` on zero).
    fn div(self, o: Self) -> Option<Self>;
    /// Floor division (`None` for an integer zero divisor).
    fn floor_div(self, o: Self) -> Option<Self>;
    /// Remainder with the sign of the divisor (numpy's `mod`).
    fn floor_mod(self, o: Self) -> Option<Self>;
    /// Remainder with the sign of the dividend (C's `%`, numpy's `fmod`).
    fn trunc_mod(self, o: Self) -> Option<Self>;
    fn pow(self, o: Self) -> Self;
    fn zero() -> Self;
}

/// numpy's `npy_divmod` for floats: the floor quotient (snapped to an integral value) and the
/// remainder with the divisor's sign, so that `x == q * y + r` as closely as rounding allows
/// (`1.0 // 0.1` is 9, not `floor(1.0 / 0.1)` = 10). A zero divisor gives `x / y` and NaN.
macro_rules! divmod_fn {
    ($name:ident, $t:ty) => {
        fn $name(x: $t, y: $t) -> ($t, $t) {
            let m = x % y;
            if y == 0.0 {
                return (x / y, m);
            }
            let mut div = (x - m) / y;
            let mut m = m;
            if m != 0.0 {
                if (y < 0.0) != (m < 0.0) {
                    m += y;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(y);
            }
            let q = if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(x / y)
            };
            (q, m)
        }
    };
}
divmod_fn!(divmod_f32, f32);
divmod_fn!(divmod_f64, f64);

/// [`divmod_f32`] or [`divmod_f64`], by the type floats of one dtype compute in.
trait DivMod: Sized {
    fn divmod(self, y: Self) -> (Self, Self);
}
impl DivMod for f32 {
    fn divmod(self, y: Self) -> (Self, Self) {
        divmod_f32(self, y)
    }
}
impl DivMod for f64 {
    fn divmod(self, y: Self) -> (Self, Self) {
        divmod_f64(self, y)
    }
}

macro_rules! arith_float {
    ($t:ty, $via:ty) => {
        impl Arith for $t {
            fn add(self, o: Self) -> Self {
                <$t>::from_f64((self.to_f64() as $via + o.to_f64() as $via) as f64)
            }
            fn sub(self, o: Self) -> Self {
                <$t>::from_f64((self.to_f64() as $via - o.to_f64() as $via) as f64)
            }
            fn mul(self, o: Self) -> Self {
                <$t>::from_f64((self.to_f64() as $via * o.to_f64() as $via) as f64)
            }
            fn div(self, o: Self) -> Option<Self> {
                Some(<$t>::from_f64(
                    (self.to_f64() as $via / o.to_f64() as $via) as f64,
                ))
            }
            fn floor_div(self, o: Self) -> Option<Self> {
                let (q, _) = (self.to_f64() as $via).divmod(o.to_f64() as $via);
                Some(<$t>::from_f64(q as f64))
            }
            fn floor_mod(self, o: Self) -> Option<Self> {
                let (_, r) = (self.to_f64() as $via).divmod(o.to_f64() as $via);
                Some(<$t>::from_f64(r as f64))
            }
            fn trunc_mod(self, o: Self) -> Option<Self> {
                Some(<$t>::from_f64(
                    (self.to_f64() as $via % o.to_f64() as $via) as f64,
                ))
            }
            fn pow(self, o: Self) -> Self {
                <$t>::from_f64((self.to_f64() as $via).powf(o.to_f64() as $via) as f64)
            }
            fn zero() -> Self {
                <$t>::from_f64(0.0)
            }
        }
    };
}
arith_float!(f32, f32);
arith_float!(f64, f64);
arith_float!(f16, f32);
arith_float!(bf16, f32);

macro_rules! arith_int {
    ($t:ty) => {
        impl Arith for $t {
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Option<Self> {
                (o != 0).then(|| self.wrapping_div(o))
            }
            #[allow(unused_comparisons)]
            fn floor_div(self, o: Self) -> Option<Self> {
                if o == 0 {
                    return None;
                }
                let q = self.wrapping_div(o);
                let r = self.wrapping_rem(o);
                Some(if r != 0 && ((r < 0) != (o < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                })
            }
            #[allow(unused_comparisons)]
            fn floor_mod(self, o: Self) -> Option<Self> {
                if o == 0 {
                    return None;
                }
                let r = self.wrapping_rem(o);
                Some(if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                })
            }
            fn trunc_mod(self, o: Self) -> Option<Self> {
                (o != 0).then(|| self.wrapping_rem(o))
            }
            #[allow(unused_comparisons)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    // numpy refuses negative integer powers; 1/x^n truncated is what C gives.
                    return match self as i128 {
                        1 => 1 as $t,
                        -1 => {
                            if (o as i128) % 2 == 0 {
                                1 as $t
                            } else {
                                self
                            }
                        }
                        _ => 0 as $t,
                    };
                }
                // By squaring, wrapping; the whole exponent counts (`wrapping_pow` takes a u32).
                let (mut e, mut base, mut acc) = (o as u64, self, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            fn zero() -> Self {
                0
            }
        }
    };
}
arith_int!(i8);
arith_int!(i16);
arith_int!(i32);
arith_int!(i64);
arith_int!(u8);
arith_int!(u16);
arith_int!(u32);
arith_int!(u64);

#[derive(Clone, Copy, Debug)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    FloorMod,
    Mod,
    Pow,
    Maximum,
    Minimum,
    SquaredDifference,
    DivNoNan,
}

/// `$zip` with `$f` bound to the element function of op `$op` on `$t`, or, for the integer
/// divisions that can fail, `$checked` with `$g` bound to the fallible one (a function item, so
/// it inlines into the element loop: no call per element): what the
/// allocating kernel and the into-kernel ([`into`]) both compute.
macro_rules! with_bin {
    ($op:expr, $t:ty, $f:ident => $zip:expr, $g:ident => $checked:expr) => {
        match $op {
            Bin::Add => {
                let $f = <$t>::add;
                $zip
            }
            Bin::Sub => {
                let $f = <$t>::sub;
                $zip
            }
            Bin::Mul => {
                let $f = <$t>::mul;
                $zip
            }
            Bin::Pow => {
                let $f = <$t>::pow;
                $zip
            }
            Bin::Div => {
                let $g = <$t as $crate::kernels::elementwise::Arith>::div;
                $checked
            }
            Bin::FloorDiv => {
                let $g = <$t as $crate::kernels::elementwise::Arith>::floor_div;
                $checked
            }
            Bin::FloorMod => {
                let $g = <$t as $crate::kernels::elementwise::Arith>::floor_mod;
                $checked
            }
            Bin::Mod => {
                let $g = <$t as $crate::kernels::elementwise::Arith>::trunc_mod;
                $checked
            }
            // NaN wins, as in numpy (`partial_cmp` of NaN with itself is None).
            Bin::Maximum => {
                let $f = |x: $t, y: $t| {
                    if x >= y || x.partial_cmp(&x).is_none() {
                        x
                    } else {
                        y
                    }
                };
                $zip
            }
            Bin::Minimum => {
                let $f = |x: $t, y: $t| {
                    if x <= y || x.partial_cmp(&x).is_none() {
                        x
                    } else {
                        y
                    }
                };
                $zip
            }
            Bin::SquaredDifference => {
                let $f = |x: $t, y: $t| {
                    let d = x.sub(y);
                    d.mul(d)
                };
                $zip
            }
            Bin::DivNoNan => {
                let $f = |x: $t, y: $t| {
                    if y == <$t>::zero() {
                        <$t>::zero()
                    } else {
                        x.div(y).unwrap_or_else(<$t>::zero)
                    }
                };
                $zip
            }
        }
    };
}

/// `$run` with `$h` bound to the fallible element function `$g` on `$t` made total (zero where
/// it returns None), then the error of an integer division by zero if it returned None.
macro_rules! checked_pairs {
    ($g:expr, $t:ty, |$h:ident| $run:expr) => {{
        let failed = std::sync::atomic::AtomicBool::new(false);
        let g = $g;
        let $h = |x: $t, y: $t| {
            g(x, y).unwrap_or_else(|| {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                <$t>::zero()
            })
        };
        let out = $run?;
        if failed.into_inner() {
            return Err(Error::kernel("integer division by zero"));
        }
        Ok(out)
    }};
}

fn arith<T: Arith>(op: Bin, a: &ArrayD<T>, b: &ArrayD<T>) -> Result<ArrayD<T>> {
    with_bin!(op, T, f => zip2(a, b, f), g => checked_pairs!(g, T, |h| zip2(a, b, h)))
}

/// `a + b` with broadcasting (numpy's rules for every dtype).
pub(crate) fn add(a: &Value, b: &Value) -> Result<Value> {
    binary_arith(Bin::Add, "Add", a, b)
}

fn mismatch(op: &str, a: &Value, b: &Value) -> Error {
    Error::kernel(format!(
        "{op}: inputs have dtypes {} and {}, which must agree",
        a.dtype(),
        b.dtype()
    ))
}

fn binary_arith(op: Bin, name: &'static str, a: &Value, b: &Value) -> Result<Value> {
    use Value::*;
    Ok(match (a, b) {
        (F32(x), F32(y)) => F32(arith(op, x, y)?),
        (F64(x), F64(y)) => F64(arith(op, x, y)?),
        (F16(x), F16(y)) => F16(arith(op, x, y)?),
        (BF16(x), BF16(y)) => BF16(arith(op, x, y)?),
        (I8(x), I8(y)) => I8(arith(op, x, y)?),
        (I16(x), I16(y)) => I16(arith(op, x, y)?),
        (I32(x), I32(y)) => I32(arith(op, x, y)?),
        (I64(x), I64(y)) => I64(arith(op, x, y)?),
        (U8(x), U8(y)) => U8(arith(op, x, y)?),
        (U16(x), U16(y)) => U16(arith(op, x, y)?),
        (U32(x), U32(y)) => U32(arith(op, x, y)?),
        (U64(x), U64(y)) => U64(arith(op, x, y)?),
        // numpy: + and * of bools are or / and.
        (Bool(x), Bool(y)) => match op {
            Bin::Add | Bin::Maximum => Bool(zip2(x, y, |p, q| p | q)?),
            Bin::Mul | Bin::Minimum => Bool(zip2(x, y, |p, q| p & q)?),
            _ => {
                return Err(Error::unsupported(format!("{name} on bool tensors")));
            }
        },
        _ => return Err(mismatch(name, a, b)),
    })
}

/// Runs `$body` with `$x`, `$y` bound to the arrays of two values of one dtype.
macro_rules! pair {
    ($name:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (Value::F32($x), Value::F32($y)) => $body,
            (Value::F64($x), Value::F64($y)) => $body,
            (Value::F16($x), Value::F16($y)) => $body,
            (Value::BF16($x), Value::BF16($y)) => $body,
            (Value::I8($x), Value::I8($y)) => $body,
            (Value::I16($x), Value::I16($y)) => $body,
            (Value::I32($x), Value::I32($y)) => $body,
            (Value::I64($x), Value::I64($y)) => $body,
            (Value::U8($x), Value::U8($y)) => $body,
            (Value::U16($x), Value::U16($y)) => $body,
            (Value::U32($x), Value::U32($y)) => $body,
            (Value::U64($x), Value::U64($y)) => $body,
            (Value::Bool($x), Value::Bool($y)) => $body,
            (a, b) => return Err(mismatch($name, a, b)),
        }
    };
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

fn compare(op: Cmp, name: &'static str, a: &Value, b: &Value) -> Result<Value> {
    use std::cmp::Ordering::*;
    let test = move |o: Option<std::cmp::Ordering>| match op {
        Cmp::Eq => o == Some(Equal),
        // NaN != anything (numpy).
        Cmp::Ne => o != Some(Equal),
        Cmp::Gt => o == Some(Greater),
        Cmp::Ge => matches!(o, Some(Greater | Equal)),
        Cmp::Lt => o == Some(Less),
        Cmp::Le => matches!(o, Some(Less | Equal)),
    };
    if let Some(r) = super::string::compare_strings(a, b, test) {
        return r;
    }
    Ok(Value::Bool(pair!(name, a, b, |x, y| zip2(
        x,
        y,
        |p, q| test(p.partial_cmp(&q))
    )?)))
}

fn logic(name: &'static str, a: &Value, b: &Value, f: fn(bool, bool) -> bool) -> Result<Value> {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Ok(Value::Bool(zip2(x, y, f)?)),
        _ => Err(Error::kernel(format!(
            "{name} needs bool inputs, got {} and {}",
            a.dtype(),
            b.dtype()
        ))),
    }
}

fn bitwise(name: &'static str, a: &Value, b: &Value, op: u8) -> Result<Value> {
    macro_rules! go {
        ($x:expr, $y:expr) => {
            match op {
                0 => zip2($x, $y, |p, q| p & q)?,
                1 => zip2($x, $y, |p, q| p | q)?,
                _ => zip2($x, $y, |p, q| p ^ q)?,
            }
        };
    }
    use Value::*;
    Ok(match (a, b) {
        (I8(x), I8(y)) => I8(go!(x, y)),
        (I16(x), I16(y)) => I16(go!(x, y)),
        (I32(x), I32(y)) => I32(go!(x, y)),
        (I64(x), I64(y)) => I64(go!(x, y)),
        (U8(x), U8(y)) => U8(go!(x, y)),
        (U16(x), U16(y)) => U16(go!(x, y)),
        (U32(x), U32(y)) => U32(go!(x, y)),
        (U64(x), U64(y)) => U64(go!(x, y)),
        (Bool(x), Bool(y)) => Bool(go!(x, y)),
        _ => {
            return Err(Error::kernel(format!(
                "{name} needs integer or bool inputs of one dtype, got {} and {}",
                a.dtype(),
                b.dtype()
            )))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Unary
// ---------------------------------------------------------------------------------------------

/// A float function, given for f32 and f64 (f16/bf16 go through f32).
#[derive(Clone, Copy)]
struct FloatFn {
    f32: fn(f32, &[f32]) -> f32,
    f64: fn(f64, &[f64]) -> f64,
}

macro_rules! relu {
    ($x:expr) => {{
        let x = $x;
        if x > 0.0 || x.is_nan() {
            x
        } else {
            0.0
        }
    }};
}

macro_rules! relu6 {
    ($x:expr) => {{
        let x = $x;
        if x.is_nan() {
            x
        } else {
            x.clamp(0.0, 6.0)
        }
    }};
}

/// Functions so cheap that a call through [`FloatFn`] per element costs more than they do: on
/// f32 and f64 they run inlined (vectorised), with the same expressions as their [`float_fn`]
/// entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cheap {
    Abs,
    Neg,
    Relu,
    Relu6,
}

impl Cheap {
    fn of(op: &str) -> Option<Cheap> {
        Some(match op {
            "Abs" => Cheap::Abs,
            "Neg" => Cheap::Neg,
            "Relu" => Cheap::Relu,
            "Relu6" => Cheap::Relu6,
            _ => return None,
        })
    }
}

/// Runs `$body` with `$f` bound to the cheap function `$k` on `$t` (a closure the compiler
/// inlines into `$body`'s loop).
macro_rules! with_cheap {
    ($k:expr, $t:ty, $f:ident => $body:expr) => {
        match $k {
            Cheap::Abs => {
                let $f = |x: $t| x.abs();
                $body
            }
            Cheap::Neg => {
                let $f = |x: $t| -x;
                $body
            }
            Cheap::Relu => {
                let $f = |x: $t| relu!(x);
                $body
            }
            Cheap::Relu6 => {
                let $f = |x: $t| relu6!(x);
                $body
            }
        }
    };
}

/// `out`: the node's output dtype; integer (and bool) inputs compute in f64 and give `out` when
/// it is a float (Log), their own dtype otherwise (truncated, numpy's `astype`).
fn float_unary(
    name: &str,
    x: &Value,
    f: FloatFn,
    params: &[f64],
    out: es_core::DataType,
) -> Result<Value> {
    match (Cheap::of(name), x) {
        (Some(k), Value::F32(a)) => return Ok(with_cheap!(k, f32, g => Value::F32(map(a, g)))),
        (Some(k), Value::F64(a)) => return Ok(with_cheap!(k, f64, g => Value::F64(map(a, g)))),
        _ => {}
    }
    if let (Some(v), Value::F32(a)) = (super::vmath::VFn::of_op(name, params), x) {
        if let Some(s) = a.as_slice() {
            let mut y = super::common::alloc(s.len(), 0.0f32)?;
            super::vmath::map_par(v, Some(s), &mut y);
            return Ok(Value::F32(super::common::array(a.shape(), y)?));
        }
    }
    let p32: Vec<f32> = params.iter().map(|&v| v as f32).collect();
    Ok(match x {
        Value::F32(a) => Value::F32(map(a, |v| (f.f32)(v, &p32))),
        Value::F64(a) => Value::F64(map(a, |v| (f.f64)(v, params))),
        Value::F16(a) => Value::F16(map(a, |v| f16::from_f32((f.f32)(v.to_f32(), &p32)))),
        Value::BF16(a) => Value::BF16(map(a, |v| bf16::from_f32((f.f32)(v.to_f32(), &p32)))),
        // Integer inputs of float functions (where a prototype allows them) compute in f64.
        v => {
            let dt = v.dtype();
            let as_f = v.cast(es_core::DataType::DOUBLE)?;
            let to = if out.is_float() { out } else { dt };
            match as_f {
                Value::F64(a) => Value::F64(a.mapv(|v| (f.f64)(v, params))).cast(to)?,
                _ => return Err(Error::unsupported(format!("{name} on {dt}"))),
            }
        }
    })
}

/// The logistic function without overflow: exp of a negative argument only, so that a result
/// in the normal range (sigmoid(-90) in f32, x * sigmoid(x) for Swish) is not lost to 1 / inf.
macro_rules! sigmoid {
    ($t:expr) => {{
        let t = $t;
        if t >= 0.0 {
            1.0 / (1.0 + (-t).exp())
        } else {
            let e = t.exp();
            e / (1.0 + e)
        }
    }};
}

/// ln(1 + e^x) to the last bit for every x: max(x, 0) + ln(1 + e^-|x|) (a fixed cut-over to x
/// at x > 20 is off by e^-20 relative in f64). NaN stays NaN.
macro_rules! softplus {
    ($x:expr) => {{
        let x = $x;
        x.max(0.0) + (-x.abs()).exp().ln_1p()
    }};
}

macro_rules! ff {
    (|$x:ident, $p:ident| $body:expr) => {
        FloatFn {
            f32: |$x: f32, $p: &[f32]| {
                let _ = $p;
                $body
            },
            f64: |$x: f64, $p: &[f64]| {
                let _ = $p;
                $body
            },
        }
    };
}

fn erf32(x: f32) -> f32 {
    libm::erff(x)
}
fn erf64(x: f64) -> f64 {
    libm::erf(x)
}

/// Unary ops that keep integers exact: Abs, Neg, Relu, Relu6, Square, Sign.
fn int_exact(name: &str, x: &Value) -> Option<Result<Value>> {
    macro_rules! signed {
        ($a:expr, $w:ident, $t:ty) => {
            Some(Ok(Value::$w(match name {
                "Abs" => $a.mapv(|v: $t| v.wrapping_abs()),
                "Neg" => $a.mapv(|v: $t| v.wrapping_neg()),
                "Relu" => $a.mapv(|v: $t| v.max(0)),
                "Relu6" => $a.mapv(|v: $t| v.clamp(0, 6)),
                "Square" => $a.mapv(|v: $t| v.wrapping_mul(v)),
                "Sign" => $a.mapv(|v: $t| v.signum()),
                _ => return None,
            })))
        };
    }
    macro_rules! unsigned {
        ($a:expr, $w:ident, $t:ty) => {
            Some(Ok(Value::$w(match name {
                "Abs" | "Relu" => $a.clone(),
                "Neg" => $a.mapv(|v: $t| v.wrapping_neg()),
                "Relu6" => $a.mapv(|v: $t| v.min(6)),
                "Square" => $a.mapv(|v: $t| v.wrapping_mul(v)),
                "Sign" => $a.mapv(|v: $t| (v > 0) as $t),
                _ => return None,
            })))
        };
    }
    match x {
        Value::I8(a) => signed!(a, I8, i8),
        Value::I16(a) => signed!(a, I16, i16),
        Value::I32(a) => signed!(a, I32, i32),
        Value::I64(a) => signed!(a, I64, i64),
        Value::U8(a) => unsigned!(a, U8, u8),
        Value::U16(a) => unsigned!(a, U16, u16),
        Value::U32(a) => unsigned!(a, U32, u32),
        Value::U64(a) => unsigned!(a, U64, u64),
        _ => None,
    }
}

fn float_fn(op: &str) -> Option<FloatFn> {
    Some(match op {
        "Abs" => ff!(|x, p| x.abs()),
        "Neg" => ff!(|x, p| -x),
        // base^(scale * x + shift), base -1 meaning e (GE's attributes).
        "Exp" => ff!(|x, p| {
            let t = p[1] * x + p[2];
            if p[0] == -1.0 {
                t.exp()
            } else {
                p[0].powf(t)
            }
        }),
        "Expm1" => ff!(|x, p| x.exp_m1()),
        // log_base(shift + scale * x), base -1 meaning e.
        "Log" => ff!(|x, p| {
            let y = (p[2] + p[1] * x).ln();
            if p[0] == -1.0 {
                y
            } else {
                y / p[0].ln()
            }
        }),
        "Log1p" => ff!(|x, p| x.ln_1p()),
        "Sqrt" => ff!(|x, p| x.sqrt()),
        "Rsqrt" => ff!(|x, p| 1.0 / x.sqrt()),
        "Reciprocal" => ff!(|x, p| 1.0 / x),
        "Square" => ff!(|x, p| x * x),
        "Sin" => ff!(|x, p| x.sin()),
        "Cos" => ff!(|x, p| x.cos()),
        "Tan" => ff!(|x, p| x.tan()),
        "Asin" => ff!(|x, p| x.asin()),
        "Acos" => ff!(|x, p| x.acos()),
        "Atan" => ff!(|x, p| x.atan()),
        "Sinh" => ff!(|x, p| x.sinh()),
        "Cosh" => ff!(|x, p| x.cosh()),
        "Tanh" => ff!(|x, p| x.tanh()),
        // libm's: std's asinh/acosh overflow to infinity for |x| near the largest finite value.
        "Asinh" => FloatFn {
            f32: |x, _| libm::asinhf(x),
            f64: |x, _| libm::asinh(x),
        },
        "Acosh" => FloatFn {
            f32: |x, _| libm::acoshf(x),
            f64: |x, _| libm::acosh(x),
        },
        "Atanh" => FloatFn {
            f32: |x, _| libm::atanhf(x),
            f64: |x, _| libm::atanh(x),
        },
        "Floor" => ff!(|x, p| x.floor()),
        "Ceil" => ff!(|x, p| x.ceil()),
        "Sign" => ff!(|x, p| if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            x * 0.0
        }),
        "Relu" => ff!(|x, p| relu!(x)),
        "Relu6" => ff!(|x, p| relu6!(x)),
        "Sigmoid" => ff!(|x, p| sigmoid!(x)),
        "Softplus" => ff!(|x, p| softplus!(x)),
        "Softsign" => ff!(|x, p| x / (1.0 + x.abs())),
        "Mish" => ff!(|x, p| x * softplus!(x).tanh()),
        // The SELU constants in each type's precision.
        "Selu" => FloatFn {
            f32: |x, _| {
                let (alpha, scale) = (1.673_263_2_f32, 1.050_701_f32);
                if x > 0.0 {
                    scale * x
                } else {
                    scale * alpha * x.exp_m1()
                }
            },
            f64: |x, _| {
                let (alpha, scale) = (1.673_263_242_354_377_3_f64, 1.050_700_987_355_480_5_f64);
                if x > 0.0 {
                    scale * x
                } else {
                    scale * alpha * x.exp_m1()
                }
            },
        },
        "Erf" => FloatFn {
            f32: |x, _| erf32(x),
            f64: |x, _| erf64(x),
        },
        // GE's Gelu, the tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
        // computed as GE documents it, x / (1 + exp(-2u)) = x * sigmoid(2u): no cancellation
        // for negative x.
        "Gelu" => FloatFn {
            f32: |x, _| x * sigmoid!(1.595_769_2_f32 * (x + 0.044_715 * x * x * x)),
            f64: |x, _| x * sigmoid!(1.595_769_121_605_730_8_f64 * (x + 0.044_715 * x * x * x)),
        },
        // GE's GeluV2: p[0] 0 is `approximate` "none", x Phi(x) by erf (f32: the vectorised
        // kernel's arithmetic at every layout; f64: 0.5 x erfc(-x / sqrt 2), no cancellation);
        // 1 is "tanh", Gelu's arithmetic.
        "GeluV2" => FloatFn {
            f32: |x, p| {
                if p[0] == 0.0 {
                    super::vmath::gelu_erf(x)
                } else {
                    x * sigmoid!(1.595_769_2_f32 * (x + 0.044_715 * x * x * x))
                }
            },
            f64: |x, p| {
                if p[0] == 0.0 {
                    0.5 * x * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
                } else {
                    x * sigmoid!(1.595_769_121_605_730_8_f64 * (x + 0.044_715 * x * x * x))
                }
            },
        },
        // Parameterised ones: p holds the attributes in the order `unary_params` gives.
        "Elu" => ff!(|x, p| if x > 0.0 {
            p[2] * x
        } else {
            p[2] * p[0] * (p[1] * x).exp_m1()
        }),
        "LeakyRelu" => ff!(|x, p| if x >= 0.0 { x } else { p[0] * x }),
        "HardSigmoid" => ff!(|x, p| (p[0] * x + p[1]).clamp(0.0, 1.0)),
        "Swish" => ff!(|x, p| x * sigmoid!(p[0] * x)),
        _ => return None,
    })
}

/// The attribute values a parameterised float function reads, in order, with GE's defaults.
fn unary_params(info: &NodeInfo) -> Result<Vec<f64>> {
    let f = |n: &str, d: f32| info.float(n, d).map(f64::from);
    Ok(match info.op() {
        "Elu" => vec![f("alpha", 1.0)?, f("input_scale", 1.0)?, f("scale", 1.0)?],
        "LeakyRelu" => vec![f("negative_slope", 0.0)?],
        "HardSigmoid" => vec![f("alpha", 0.166_666_67)?, f("beta", 0.5)?],
        "Exp" | "Log" => vec![f("base", -1.0)?, f("scale", 1.0)?, f("shift", 0.0)?],
        "Swish" => vec![f("scale", 1.0)?],
        "GeluV2" => match info.typed_attr::<&str>("approximate", "none")? {
            "none" => vec![0.0],
            "tanh" => vec![1.0],
            a => {
                return Err(Error::Compile(format!(
                    "node '{}' (GeluV2): attribute 'approximate' is {a:?}; expected \"none\" or \"tanh\"",
                    info.node.name
                )))
            }
        },
        _ => Vec::new(),
    })
}

const UNARY: &[&str] = &[
    "Abs",
    "Neg",
    "Exp",
    "Expm1",
    "Log",
    "Log1p",
    "Sqrt",
    "Rsqrt",
    "Reciprocal",
    "Square",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Tanh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Floor",
    "Ceil",
    "Sign",
    "Relu",
    "Relu6",
    "Sigmoid",
    "Softplus",
    "Softsign",
    "Mish",
    "Selu",
    "Erf",
    "Gelu",
    "GeluV2",
    "Elu",
    "LeakyRelu",
    "HardSigmoid",
    "Swish",
];

fn unary_factory(info: &NodeInfo) -> Result<Kernel> {
    let op: &'static str = UNARY
        .iter()
        .copied()
        .find(|o| *o == info.op())
        .ok_or_else(|| Error::unsupported(info.op().to_string()))?;
    let f = float_fn(op).ok_or_else(|| Error::unsupported(op.to_string()))?;
    let params = unary_params(info)?;
    let out = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        if let Some(r) = int_exact(op, x) {
            return Ok(vec![r?]);
        }
        if matches!(x, Value::Bool(_)) {
            if op == "Abs" {
                return Ok(vec![x.clone()]); // numpy: |b| is b
            }
            if !out.is_float() {
                return Err(Error::unsupported(format!("{op} on bool tensors")));
            }
        }
        Ok(vec![float_unary(op, x, f, &params, out)?])
    }))
}

/// What a fused product does to its output in place: `y = act(y + bias)` (either part
/// optional), f32 and f64 only, with exactly the arithmetic of the Add and activation kernels
/// it replaces (so fused and unfused plans give identical results).
pub(crate) struct Epilogue {
    bias: Option<Value>,
    act: Option<(FloatFn, Vec<f64>, Vec<f32>)>,
    cheap: Option<Cheap>,
    /// The vectorised form of the activation on f32 (what the unfused kernel uses on a
    /// standard-layout input, so that fusing changes no bit).
    vfn: Option<super::vmath::VFn>,
}

impl Epilogue {
    /// Whether an activation of type `op` can be fused (it is a unary float function of the
    /// element-wise kernels).
    pub(crate) fn supports(op: &str) -> bool {
        UNARY.contains(&op) && float_fn(op).is_some()
    }

    /// The epilogue for a constant `bias` and an activation node.
    pub(crate) fn new(bias: Option<Value>, act: Option<&NodeInfo>) -> Result<Epilogue> {
        let cheap = act.and_then(|info| Cheap::of(info.op()));
        let act_info = act;
        let act = match act {
            None => None,
            Some(info) => {
                let f = float_fn(info.op())
                    .filter(|_| Self::supports(info.op()))
                    .ok_or_else(|| Error::unsupported(format!("fusing {}", info.op())))?;
                let p = unary_params(info)?;
                let p32 = p.iter().map(|&v| v as f32).collect();
                Some((f, p, p32))
            }
        };
        let vfn = act
            .as_ref()
            .zip(act_info)
            .and_then(|((_, p, _), info)| super::vmath::VFn::of_op(info.op(), p));
        Ok(Epilogue {
            bias,
            act,
            cheap,
            vfn,
        })
    }

    /// Applies the epilogue to `y` (f32 or f64, the bias of the same dtype, broadcasting into
    /// y's shape).
    pub(crate) fn apply(&self, y: &mut Value) -> Result<()> {
        match y {
            Value::F32(a) => self.apply_view(FloatView::F32(a.view_mut())),
            Value::F64(a) => self.apply_view(FloatView::F64(a.view_mut())),
            y => Err(Self::not_float(y.dtype())),
        }
    }

    /// Applies the epilogue to elements `range` of `out` (a buffer of f32 or f64 in standard
    /// layout), read as an array of `dims`.
    pub(crate) fn apply_into(
        &self,
        out: &mut Value,
        range: Range<usize>,
        dims: &[usize],
    ) -> Result<()> {
        fn view<'a, T: crate::arena::ElemArray>(
            out: &'a mut Value,
            range: Range<usize>,
            dims: &[usize],
        ) -> Result<ArrayViewMutD<'a, T>> {
            let dt = out.dtype();
            let s = crate::arena::out_slice::<T>(out, range).ok_or_else(|| {
                Error::kernel(format!("fused epilogue: an output of {dt} does not fit"))
            })?;
            ArrayViewMutD::from_shape(IxDyn(dims), s).map_err(|e| Error::kernel(e.to_string()))
        }
        match out.dtype() {
            es_core::DataType::FLOAT => self.apply_view(FloatView::F32(view(out, range, dims)?)),
            es_core::DataType::DOUBLE => self.apply_view(FloatView::F64(view(out, range, dims)?)),
            dt => Err(Self::not_float(dt)),
        }
    }

    fn not_float(dt: es_core::DataType) -> Error {
        Error::kernel(format!("fused epilogue on {dt}: only float32 and float64"))
    }

    fn apply_view(&self, y: FloatView<'_>) -> Result<()> {
        fn run<T: Copy + Send + Sync>(
            y: ArrayViewMutD<'_, T>,
            bias: Option<&ArrayD<T>>,
            add: impl Fn(T, T) -> T + Sync,
            act: Option<impl Fn(T) -> T + Sync>,
        ) -> Result<()> {
            let per = if y.is_standard_layout() {
                par::cost::ELEMENT
            } else {
                par::cost::STRIDED
            };
            let parallel = par::chunks_for(par::work(y.len(), per)) > 1;
            match (bias, act) {
                (Some(b), act) => {
                    let bv = b.broadcast(y.raw_dim()).ok_or_else(|| {
                        Error::kernel(format!(
                            "fused bias of shape {:?} does not broadcast to {:?}",
                            b.shape(),
                            y.shape()
                        ))
                    })?;
                    let z = Zip::from(y).and(&bv);
                    let f = |y: &mut T, &b: &T| {
                        let v = add(*y, b);
                        *y = match &act {
                            Some(a) => a(v),
                            None => v,
                        };
                    };
                    if parallel {
                        par::install(|| z.par_for_each(f))
                    } else {
                        z.for_each(f)
                    }
                }
                (None, Some(a)) => {
                    let z = Zip::from(y);
                    if parallel {
                        par::install(|| z.par_for_each(|y| *y = a(*y)))
                    } else {
                        z.for_each(|y| *y = a(*y))
                    }
                }
                (None, None) => {}
            }
            Ok(())
        }
        match (y, &self.bias) {
            (FloatView::F32(mut a), b) => {
                let b = match b {
                    Some(Value::F32(b)) => Some(b),
                    None => None,
                    Some(_) => return Err(Error::kernel("fused bias dtype differs")),
                };
                if let Some(k) = self.cheap {
                    return with_cheap!(k, f32, g => run(a, b, |x, y| x + y, Some(g)));
                }
                if let (Some(v), true) = (self.vfn, a.is_standard_layout()) {
                    run(a.view_mut(), b, |x, y| x + y, None::<fn(f32) -> f32>)?;
                    if let Some(s) = a.as_slice_mut() {
                        super::vmath::map_par(v, None, s);
                    }
                    return Ok(());
                }
                let act = self.act.as_ref().map(|(f, _, p)| move |v| (f.f32)(v, p));
                run(a, b, |x, y| x + y, act)
            }
            (FloatView::F64(a), b) => {
                let b = match b {
                    Some(Value::F64(b)) => Some(b),
                    None => None,
                    Some(_) => return Err(Error::kernel("fused bias dtype differs")),
                };
                if let Some(k) = self.cheap {
                    return with_cheap!(k, f64, g => run(a, b, |x, y| x + y, Some(g)));
                }
                let act = self.act.as_ref().map(|(f, p, _)| move |v| (f.f64)(v, p));
                run(a, b, |x, y| x + y, act)
            }
        }
    }
}

/// A mutable view of f32 or f64 values (what an [`Epilogue`] applies to).
enum FloatView<'a> {
    F32(ArrayViewMutD<'a, f32>),
    F64(ArrayViewMutD<'a, f64>),
}

fn predicate_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let test: fn(f64) -> bool = match op.as_str() {
            "IsNan" => f64::is_nan,
            "IsInf" => f64::is_infinite,
            "IsFinite" => f64::is_finite,
            _ => return Err(Error::unsupported(op.clone())),
        };
        Ok(vec![Value::Bool(
            crate::with_array!(x, a => a.mapv(|v| test(Elem::to_f64(v)))),
        )])
    }))
}

fn logical_not(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| match input(inputs, 0)? {
        Value::Bool(a) => Ok(vec![Value::Bool(a.mapv(|v| !v))]),
        v => Err(Error::kernel(format!(
            "LogicalNot needs bool, got {}",
            v.dtype()
        ))),
    }))
}

/// A binary kernel body.
type BinaryFn = fn(&Value, &Value) -> Result<Value>;

/// The binary ops: name and body (one table for the registry and the factory).
const BINARY: &[(&str, BinaryFn)] = &[
    ("Add", |a, b| binary_arith(Bin::Add, "Add", a, b)),
    ("AddV2", |a, b| binary_arith(Bin::Add, "AddV2", a, b)),
    ("Sub", |a, b| binary_arith(Bin::Sub, "Sub", a, b)),
    ("Mul", |a, b| binary_arith(Bin::Mul, "Mul", a, b)),
    ("Div", |a, b| binary_arith(Bin::Div, "Div", a, b)),
    ("RealDiv", |a, b| binary_arith(Bin::Div, "RealDiv", a, b)),
    ("DivNoNan", |a, b| {
        binary_arith(Bin::DivNoNan, "DivNoNan", a, b)
    }),
    ("FloorDiv", |a, b| {
        binary_arith(Bin::FloorDiv, "FloorDiv", a, b)
    }),
    ("FloorMod", |a, b| {
        binary_arith(Bin::FloorMod, "FloorMod", a, b)
    }),
    ("Mod", |a, b| binary_arith(Bin::Mod, "Mod", a, b)),
    ("Pow", |a, b| binary_arith(Bin::Pow, "Pow", a, b)),
    ("Maximum", |a, b| {
        binary_arith(Bin::Maximum, "Maximum", a, b)
    }),
    ("Minimum", |a, b| {
        binary_arith(Bin::Minimum, "Minimum", a, b)
    }),
    ("SquaredDifference", |a, b| {
        binary_arith(Bin::SquaredDifference, "SquaredDifference", a, b)
    }),
    ("Equal", |a, b| compare(Cmp::Eq, "Equal", a, b)),
    ("NotEqual", |a, b| compare(Cmp::Ne, "NotEqual", a, b)),
    ("Greater", |a, b| compare(Cmp::Gt, "Greater", a, b)),
    ("GreaterEqual", |a, b| {
        compare(Cmp::Ge, "GreaterEqual", a, b)
    }),
    ("Less", |a, b| compare(Cmp::Lt, "Less", a, b)),
    ("LessEqual", |a, b| compare(Cmp::Le, "LessEqual", a, b)),
    ("LogicalAnd", |a, b| {
        logic("LogicalAnd", a, b, |p, q| p && q)
    }),
    ("LogicalOr", |a, b| logic("LogicalOr", a, b, |p, q| p || q)),
    ("BitwiseAnd", |a, b| bitwise("BitwiseAnd", a, b, 0)),
    ("BitwiseOr", |a, b| bitwise("BitwiseOr", a, b, 1)),
    ("BitwiseXor", |a, b| bitwise("BitwiseXor", a, b, 2)),
];

/// The names of the binary ops, for the registry.
const BINARY_OPS: [&str; BINARY.len()] = binary_names();

const fn binary_names<const N: usize>() -> [&'static str; N] {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = BINARY[i].0;
        i += 1;
    }
    names
}

fn binary_factory(info: &NodeInfo) -> Result<Kernel> {
    let f: BinaryFn = BINARY
        .iter()
        .find(|(name, _)| *name == info.op())
        .map(|&(_, f)| f)
        .ok_or_else(|| Error::unsupported(info.op().to_string()))?;
    Ok(Box::new(move |inputs| {
        Ok(vec![f(input(inputs, 0)?, input(inputs, 1)?)?])
    }))
}

fn cast_factory(info: &NodeInfo) -> Result<Kernel> {
    // GE's Cast stores dst_type as an Int (a DataType value); a Type attribute works too.
    let to = match info.attr("dst_type") {
        Some(v) => match (v.as_type(), v.as_int()) {
            (Some(dt), _) => dt,
            (None, Some(i)) => {
                es_core::DataType::from_value(i).map_err(|e| Error::Compile(e.to_string()))?
            }
            _ => {
                return Err(Error::Compile(
                    "Cast: attribute 'dst_type' must be a data type".into(),
                ))
            }
        },
        None => info.out_dtype(0)?,
    };
    if !crate::value::supported_dtype(to) {
        return Err(Error::unsupported(format!("Cast to {to}")));
    }
    // ONNX's saturate and round_mode (private attributes: GE's Cast has only dst_type): how
    // values reach the float8 types.
    let round = match info.attr("_round_mode") {
        None => crate::lowp::E8m0Round::Up,
        Some(v) => v
            .as_str()
            .and_then(crate::lowp::E8m0Round::from_name)
            .ok_or_else(|| {
                Error::Compile(
                    "Cast: attribute '_round_mode' must be \"up\", \"down\" or \"nearest\"".into(),
                )
            })?,
    };
    let mode = crate::lowp::CastMode {
        saturate: info.int("_saturate", 1)? != 0,
        e8m0_round: round,
    };
    Ok(Box::new(move |inputs| {
        Ok(vec![input(inputs, 0)?.cast_with(to, mode)?])
    }))
}

fn identity_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        inputs
            .iter()
            .map(|v| v.cloned().ok_or_else(|| Error::kernel("input missing")))
            .collect()
    }))
}

fn threshold_factory(info: &NodeInfo) -> Result<Kernel> {
    let t = f64::from(info.float("threshold", 0.0)?);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let y = floats(x, "x")?
            .into_iter()
            .map(|v| if v > t { 1.0 } else { 0.0 })
            .collect();
        Ok(vec![from_f64(x.dtype(), x.shape(), y)?])
    }))
}

/// PRelu: x for x >= 0, weight * x otherwise; weight holds one value or one per channel (dim 1).
fn prelu_factory(info: &NodeInfo) -> Result<Kernel> {
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let w = input(inputs, 1)?.to_f64_vec();
        let xs = x.shape();
        let xv = floats(x, "x")?;
        let (c, inner) = match (w.len(), xs.len()) {
            (1, _) => (1, 1),
            (n, r) if r >= 2 && n == xs[1] => (n, xs[2..].iter().product::<usize>()),
            (n, _) => {
                return Err(Error::kernel(format!(
                    "weight has {n} values; expected 1 or the channels (dim 1) of x {xs:?}"
                )))
            }
        };
        let y: Vec<f64> = xv
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if v >= 0.0 {
                    v
                } else {
                    let a = w.get((i / inner.max(1)) % c.max(1)).copied().unwrap_or(0.0);
                    a * v
                }
            })
            .collect();
        Ok(vec![from_f64(float_out(out, x.dtype()), xs, y)?])
    }))
}

/// BiasAdd: x + bias along x's channel axis (1 for a `data_format` starting NC, else the last).
fn bias_add_factory(info: &NodeInfo) -> Result<Kernel> {
    let fmt = match info.attr("data_format").and_then(|v| v.as_str()) {
        Some(s) => s.to_string(),
        None => "NHWC".to_string(),
    };
    Ok(Box::new(move |inputs| {
        let (x, b) = (input(inputs, 0)?, input(inputs, 1)?);
        let rank = x.shape().len();
        if b.shape().len() != 1 || rank < 2 {
            return Err(Error::kernel(format!(
                "BiasAdd needs a 1-D bias and x of rank >= 2, got {:?} and {:?}",
                x.shape(),
                b.shape()
            )));
        }
        let ch = if fmt.starts_with("NC") { 1 } else { rank - 1 };
        let mut dims = vec![1; rank];
        dims[ch] = b.len();
        let b = super::shape::reshape(b, &dims)?;
        add(x, &b).map(|v| vec![v])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (UNARY, unary_factory),
    (&BINARY_OPS, binary_factory),
    (&["IsNan", "IsInf", "IsFinite"], predicate_factory),
    (&["LogicalNot"], logical_not),
    (&["Cast"], cast_factory),
    (&["Identity", "IdentityN", "TensorMove"], identity_factory),
    (&["Threshold"], threshold_factory),
    (&["PRelu"], prelu_factory),
    (&["BiasAdd"], bias_add_factory),
    (&["FusedMulAdd"], ternary::fused_mul_add_factory),
    (&["Addcmul"], ternary::addcmul_factory),
    (&["ClipByValue"], ternary::clip_factory),
    (&["Atan2"], math::atan2_factory),
    (&["Round"], math::round_factory),
    (&["Fills"], math::fills_factory),
    (&["Invert"], bitwise::invert_factory),
    (&["LeftShift", "RightShift"], bitwise::shift_factory),
    (&["Bitcast"], bitwise::bitcast_factory),
];

mod into;
pub(crate) use into::{broadcasts, zip_into, ArithInto, UnaryInto};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::broadcast_shape;
    use ndarray::IxDyn;

    #[test]
    fn float_floor_div_and_mod_follow_numpy() {
        // numpy: 1.0 // 0.1 == 9.0 and 1.0 % 0.1 == 0.09999999999999995 (x == q * y + r).
        assert_eq!(1.0f64.floor_div(0.1), Some(9.0));
        assert_eq!(1.0f64.floor_mod(0.1), Some(0.099_999_999_999_999_95));
        assert_eq!((-7.5f32).floor_div(2.0), Some(-4.0));
        assert_eq!((-7.5f32).floor_mod(2.0), Some(0.5));
        // A zero remainder takes the divisor's sign; a zero divisor gives x / y and NaN.
        assert!(6.0f64.floor_mod(-3.0).unwrap().is_sign_negative());
        assert_eq!(1.0f64.floor_div(0.0), Some(f64::INFINITY));
        assert!(1.0f64.floor_mod(0.0).unwrap().is_nan());
        assert_eq!((-5.0f64).floor_div(f64::INFINITY), Some(-1.0));
    }

    #[test]
    fn integer_pow_takes_the_whole_exponent_and_wraps() {
        // wrapping_pow(e as u32) would see 2^33 + 1 as 1.
        let want = 3i64
            .wrapping_pow(1 << 16)
            .wrapping_pow(1 << 17)
            .wrapping_mul(3);
        assert_eq!(Arith::pow(3i64, (1 << 33) + 1), want);
        assert_eq!(Arith::pow(3i8, 5), -13);
        assert_eq!(Arith::pow(-1i64, (1 << 40) + 1), -1);
        assert_eq!(Arith::pow(2u64, 64), 0);
        assert_eq!(Arith::pow(7u8, 0), 1);
    }

    #[test]
    fn shapes_that_do_not_broadcast_are_an_error() {
        let a = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
        let b = ArrayD::<f32>::zeros(IxDyn(&[4]));
        let e = zip2(&a, &b, |x, y| x + y).unwrap_err();
        assert!(e.to_string().contains("do not broadcast"), "{e}");
        assert_eq!(broadcast_shape(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast_shape(&[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
    }
}
