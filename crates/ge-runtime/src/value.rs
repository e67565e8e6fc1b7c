//! Run-time tensors: an n-dimensional array of one of the dtypes the CPU backend computes with.

use crate::error::{Error, Result};
use crate::lowp::{self, CastMode};
use es_core::{DataType, Shape, Tensor, TensorDesc};
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};

mod strings;

/// A tensor during a run: one `ndarray` array per dtype (standard layout once a kernel made it).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    F16(ArrayD<f16>),
    BF16(ArrayD<bf16>),
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    Bool(ArrayD<bool>),
    /// A low-precision type ([`DataType::is_low_precision`]: the float8 and float4 types, the
    /// 4- and 2-bit integers), one bit pattern a byte (the sub-byte types unpacked, in the low
    /// bits). Only Cast and the data-movement kernels take it (see [`crate::lowp`]); in
    /// [`with_array!`] and [`map_array!`] it is its array of patterns, the dtype kept.
    Lowp(DataType, ArrayD<u8>),
    /// A string tensor (`DT_STRING`): one UTF-8 `String` an element (in the IR, GE's layout:
    /// [`es_core::strings`]). Numeric kernels never receive one: the kernel lookup refuses string
    /// inputs to the kernels not in its list of string-taking ops, and [`with_array!`] and
    /// [`map_array!`] return [`numeric_only`]'s error for it; the data-movement kernels take it
    /// through [`with_any!`] and [`map_any!`].
    Str(ArrayD<String>),
    /// A list of tensors or an optional (`DT_VARIANT`, a scalar handle in the IR: see
    /// [`Variant`]). Only Identity, the control-flow kernels and the list and optional kernels
    /// take it (the kernel lookup refuses it elsewhere at compile time); [`with_array!`],
    /// [`map_array!`], [`with_any!`] and [`map_any!`] return [`not_a_tensor`]'s error for it.
    Variant(Variant),
}

/// What a [`Value::Variant`] holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Variant {
    /// A list of tensors of one dtype (ONNX's sequence; UNDEFINED: an empty list fed without
    /// one).
    List(DataType, Vec<Value>),
    /// An optional: empty, or a tensor or a list.
    Optional(Option<Box<Value>>),
}

/// The error of an array path given a list or optional (the kernel lookup refuses such a node
/// at compile time; this is the run-time guard behind it).
#[doc(hidden)]
pub fn not_a_tensor() -> Error {
    Error::unsupported("a tensor kernel on a sequence or optional (DT_VARIANT values go to the sequence and optional ops, Identity and control flow)")
}

/// The error of a numeric-only path given a string tensor (the kernel lookup refuses such a
/// node at compile time; this is the run-time guard behind it).
#[doc(hidden)]
pub fn numeric_only() -> Error {
    Error::unsupported("a numeric kernel on DT_STRING (string tensors go to the string ops, Cast, Equal and the data-movement kernels)")
}

/// The dtype of a [`Value::Lowp`] as matched (by value or by reference): for [`map_array!`].
#[doc(hidden)]
pub fn lowp_tag(dt: &DataType) -> DataType {
    *dt
}

/// Runs `$body` with `$a` bound to the array inside `$v`, whatever its numeric dtype; a string
/// tensor returns [`numeric_only`]'s error from the enclosing function, or, in the form
/// `with_array!(v, a => body, s => str_body)`, evaluates `str_body` with `s` its `ArrayD<String>`.
#[macro_export]
macro_rules! with_array {
    ($v:expr, $a:ident => $body:expr) => {
        $crate::with_array!($v, $a => $body, _s => return Err($crate::value::numeric_only()))
    };
    ($v:expr, $a:ident => $body:expr, $s:ident => $str:expr) => {
        $crate::with_array!($v, $a => $body, $s => $str,
            _h => return Err($crate::value::not_a_tensor()))
    };
    ($v:expr, $a:ident => $body:expr, $s:ident => $str:expr, $h:ident => $var:expr) => {
        match $v {
            $crate::Value::F32($a) => $body,
            $crate::Value::F64($a) => $body,
            $crate::Value::F16($a) => $body,
            $crate::Value::BF16($a) => $body,
            $crate::Value::I8($a) => $body,
            $crate::Value::I16($a) => $body,
            $crate::Value::I32($a) => $body,
            $crate::Value::I64($a) => $body,
            $crate::Value::U8($a) => $body,
            $crate::Value::U16($a) => $body,
            $crate::Value::U32($a) => $body,
            $crate::Value::U64($a) => $body,
            $crate::Value::Bool($a) => $body,
            $crate::Value::Lowp(_, $a) => $body,
            #[allow(unused_variables)]
            $crate::Value::Str($s) => $str,
            #[allow(unused_variables)]
            $crate::Value::Variant($h) => $var,
        }
    };
}

/// Like [`with_array!`], rebuilding a value of the same dtype from the body's array (a string
/// tensor: [`numeric_only`]'s error, or in the three-part form the value `str_body` gives).
#[macro_export]
macro_rules! map_array {
    ($v:expr, $a:ident => $body:expr) => {
        $crate::map_array!($v, $a => $body, _s => return Err($crate::value::numeric_only()))
    };
    ($v:expr, $a:ident => $body:expr, $s:ident => $str:expr) => {
        match $v {
            #[allow(unused_variables)]
            $crate::Value::Variant(_) => return Err($crate::value::not_a_tensor()),
            $crate::Value::F32($a) => $crate::Value::F32($body),
            $crate::Value::F64($a) => $crate::Value::F64($body),
            $crate::Value::F16($a) => $crate::Value::F16($body),
            $crate::Value::BF16($a) => $crate::Value::BF16($body),
            $crate::Value::I8($a) => $crate::Value::I8($body),
            $crate::Value::I16($a) => $crate::Value::I16($body),
            $crate::Value::I32($a) => $crate::Value::I32($body),
            $crate::Value::I64($a) => $crate::Value::I64($body),
            $crate::Value::U8($a) => $crate::Value::U8($body),
            $crate::Value::U16($a) => $crate::Value::U16($body),
            $crate::Value::U32($a) => $crate::Value::U32($body),
            $crate::Value::U64($a) => $crate::Value::U64($body),
            $crate::Value::Bool($a) => $crate::Value::Bool($body),
            $crate::Value::Lowp(__dt, $a) => {
                $crate::Value::Lowp($crate::value::lowp_tag(&__dt), $body)
            }
            #[allow(unused_variables)]
            $crate::Value::Str($s) => $str,
        }
    };
}

/// Like [`with_array!`], string tensors included (`$a` an `ArrayD<String>` for them): for bodies
/// that only move or clone elements.
#[macro_export]
macro_rules! with_any {
    ($v:expr, $a:ident => $body:expr) => {
        $crate::with_array!($v, $a => $body, $a => $body)
    };
}

/// Like [`map_array!`], string tensors included: for bodies that only move or clone elements.
#[macro_export]
macro_rules! map_any {
    ($v:expr, $a:ident => $body:expr) => {
        $crate::map_array!($v, $a => $body, $a => $crate::Value::Str($body))
    };
}

/// `v` as dims, `None` where a value is negative.
pub(crate) fn usize_dims(v: &[i64]) -> Option<Vec<usize>> {
    v.iter().map(|&d| usize::try_from(d).ok()).collect()
}

/// Runs `$body` with `$t` the element type of dtype `$dt`; a dtype the CPU backend does not
/// compute with evaluates `$other`.
macro_rules! with_elem_type {
    ($dt:expr, $t:ident => $body:expr, $other:expr) => {
        with_elem_type!(
            @[FLOAT f32, DOUBLE f64, FLOAT16 f16, BF16 bf16, INT8 i8, INT16 i16, INT32 i32,
              INT64 i64, UINT8 u8, UINT16 u16, UINT32 u32, UINT64 u64, BOOL bool],
            $dt, $t => $body, $other
        )
    };
    (@[$($c:ident $ty:ty),*], $dt:expr, $t:ident => $body:expr, $other:expr) => {
        match $dt {
            $(DataType::$c => {
                type $t = $ty;
                $body
            })*
            _ => $other,
        }
    };
}

/// An element type the CPU backend computes with.
pub trait Elem: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const DTYPE: DataType;
    fn wrap(a: ArrayD<Self>) -> Value;
    fn from_le(b: &[u8]) -> Self;
    fn to_le(self, out: &mut Vec<u8>);
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Integers and bool: converted between each other through [`Elem::to_i64_bits`] and
    /// [`Elem::from_i64_bits`] (numpy's wrap-around), not through f64.
    const INTEGRAL: bool;
    /// The value as i64: integers as two's complement bits (a u64 above `i64::MAX` wraps),
    /// bool as 0/1, floats truncated.
    fn to_i64_bits(self) -> i64;
    /// A value from i64 bits: integers keep the low bits (wrap), bool is `v != 0`.
    fn from_i64_bits(v: i64) -> Self;
    /// The value as f32, rounded once (an i64 or u64 does not go through f64 first).
    fn to_f32(self) -> f32;
    /// The elements as little-endian bytes without a copy, where the type is plain data and the
    /// machine little-endian (so conversions are one memcpy); `None` otherwise (bool).
    fn as_le_bytes(s: &[Self]) -> Option<&[u8]> {
        let _ = s;
        None
    }
    /// Elements from little-endian bytes in one copy, where [`Elem::as_le_bytes`] applies.
    fn vec_from_le_bytes(b: &[u8]) -> Option<Vec<Self>> {
        let _ = b;
        None
    }
}

/// [`Elem::as_le_bytes`] and [`Elem::vec_from_le_bytes`] for plain-data types.
macro_rules! pod_bytes {
    () => {
        fn as_le_bytes(s: &[Self]) -> Option<&[u8]> {
            cfg!(target_endian = "little").then(|| bytemuck::cast_slice(s))
        }
        fn vec_from_le_bytes(b: &[u8]) -> Option<Vec<Self>> {
            if !cfg!(target_endian = "little") || b.len() % std::mem::size_of::<Self>() != 0 {
                return None;
            }
            // One pass over the memory: the bytes copied into uninitialised capacity (bytemuck's
            // pod_collect_to_vec zero-fills the vector first, a second pass).
            fn plain_data<T: bytemuck::Pod>() {}
            plain_data::<Self>(); // what the SAFETY below relies on, checked at compile time
            let n = b.len() / std::mem::size_of::<Self>();
            let mut v = Vec::<Self>::with_capacity(n);
            // SAFETY: `v` has room for `n` elements, `b.len()` bytes, and does not overlap `b`;
            // `Self` is plain data (bytemuck::Pod: every bit pattern is a value, no padding), so
            // once the bytes are written the first `n` elements are initialised.
            unsafe {
                std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr().cast::<u8>(), b.len());
                v.set_len(n);
            }
            Some(v)
        }
    };
}

macro_rules! elem_num {
    ($t:ty, $var:ident, $dt:ident, $integral:expr) => {
        impl Elem for $t {
            pod_bytes!();
            const DTYPE: DataType = DataType::$dt;
            const INTEGRAL: bool = $integral;
            fn wrap(a: ArrayD<Self>) -> Value {
                Value::$var(a)
            }
            fn from_le(b: &[u8]) -> Self {
                let mut x = [0u8; std::mem::size_of::<$t>()];
                x.copy_from_slice(b);
                <$t>::from_le_bytes(x)
            }
            fn to_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64_bits(self) -> i64 {
                self as i64
            }
            fn from_i64_bits(v: i64) -> Self {
                v as $t
            }
            fn to_f32(self) -> f32 {
                self as f32
            }
        }
    };
}
elem_num!(f32, F32, FLOAT, false);
elem_num!(f64, F64, DOUBLE, false);
elem_num!(i8, I8, INT8, true);
elem_num!(i16, I16, INT16, true);
elem_num!(i32, I32, INT32, true);
elem_num!(i64, I64, INT64, true);
elem_num!(u8, U8, UINT8, true);
elem_num!(u16, U16, UINT16, true);
elem_num!(u32, U32, UINT32, true);
elem_num!(u64, U64, UINT64, true);

macro_rules! elem_half {
    ($t:ty, $var:ident, $dt:ident) => {
        impl Elem for $t {
            pod_bytes!();
            const DTYPE: DataType = DataType::$dt;
            const INTEGRAL: bool = false;
            fn wrap(a: ArrayD<Self>) -> Value {
                Value::$var(a)
            }
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes([b[0], b[1]])
            }
            fn to_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i64_bits(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            fn from_i64_bits(v: i64) -> Self {
                <$t>::from_f64(v as f64)
            }
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
        }
    };
}
elem_half!(f16, F16, FLOAT16);
elem_half!(bf16, BF16, BF16);

impl Elem for bool {
    const DTYPE: DataType = DataType::BOOL;
    const INTEGRAL: bool = true;
    fn wrap(a: ArrayD<Self>) -> Value {
        Value::Bool(a)
    }
    fn from_le(b: &[u8]) -> Self {
        b[0] != 0
    }
    fn to_le(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn to_i64_bits(self) -> i64 {
        self as i64
    }
    fn from_i64_bits(v: i64) -> Self {
        v != 0
    }
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
}

/// Whether the CPU backend has arrays of `dt` (the low-precision types as their bit patterns).
pub fn supported_dtype(dt: DataType) -> bool {
    use DataType::*;
    dt.is_low_precision()
        || matches!(
            dt,
            STRING
                | FLOAT
                | DOUBLE
                | FLOAT16
                | BF16
                | INT8
                | INT16
                | INT32
                | INT64
                | UINT8
                | UINT16
                | UINT32
                | UINT64
                | BOOL
        )
}

fn from_bytes<T: Elem>(dims: &[usize], data: &[u8]) -> Result<ArrayD<T>> {
    let sz = std::mem::size_of::<T>().max(1);
    let v: Vec<T> = match T::vec_from_le_bytes(data) {
        Some(v) => v,
        None => data.chunks_exact(sz).map(T::from_le).collect(),
    };
    ArrayD::from_shape_vec(IxDyn(dims), v)
        .map_err(|e| Error::Input(format!("bytes do not fit shape {dims:?}: {e}")))
}

impl Value {
    pub fn dtype(&self) -> DataType {
        use DataType::*;
        match self {
            Value::F32(_) => FLOAT,
            Value::F64(_) => DOUBLE,
            Value::F16(_) => FLOAT16,
            Value::BF16(_) => BF16,
            Value::I8(_) => INT8,
            Value::I16(_) => INT16,
            Value::I32(_) => INT32,
            Value::I64(_) => INT64,
            Value::U8(_) => UINT8,
            Value::U16(_) => UINT16,
            Value::U32(_) => UINT32,
            Value::U64(_) => UINT64,
            Value::Bool(_) => BOOL,
            Value::Lowp(dt, _) => *dt,
            Value::Str(_) => STRING,
            Value::Variant(_) => VARIANT,
        }
    }

    /// The shape (a list or optional: a scalar handle, `[]`).
    pub fn shape(&self) -> &[usize] {
        with_array!(self, a => a.shape(), s => s.shape(), _h => &[])
    }

    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape as GE dims.
    pub fn dims(&self) -> Vec<i64> {
        self.shape().iter().map(|&d| d as i64).collect()
    }

    /// A value of `dt` and `dims` from little-endian bytes.
    pub fn from_le_bytes(dt: DataType, dims: &[usize], data: &[u8]) -> Result<Value> {
        let n: usize = dims.iter().product();
        if dt == DataType::STRING {
            let v = es_core::strings::decode(data, n)?
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    String::from_utf8(b.to_vec())
                        .map_err(|e| Error::Input(format!("string element {i} is not UTF-8: {e}")))
                })
                .collect::<Result<Vec<String>>>()?;
            return Value::strings(dims, v);
        }
        if dt.is_low_precision() {
            let v = lowp::unpack(dt, n, data).ok_or_else(|| {
                Error::Input(format!(
                    "a {dt} tensor of shape {dims:?} needs {} bytes, got {}",
                    dt.bytes_for(n).unwrap_or(usize::MAX),
                    data.len()
                ))
            })?;
            let a = ArrayD::from_shape_vec(IxDyn(dims), v)
                .map_err(|e| Error::Input(format!("bytes do not fit shape {dims:?}: {e}")))?;
            return Ok(Value::Lowp(dt, a));
        }
        let sz = dt
            .size()
            .filter(|_| supported_dtype(dt))
            .ok_or_else(|| Error::unsupported(format!("dtype {dt} on the CPU backend")))?;
        if n.checked_mul(sz) != Some(data.len()) {
            return Err(Error::Input(format!(
                "a {dt} tensor of shape {dims:?} needs {} bytes, got {}",
                n.saturating_mul(sz),
                data.len()
            )));
        }
        Ok(
            with_elem_type!(dt, T => T::wrap(from_bytes::<T>(dims, data)?), {
                return Err(Error::unsupported(format!("dtype {dt} on the CPU backend")))
            }),
        )
    }

    /// The elements as little-endian bytes, in standard (row-major) order.
    /// String tensors give GE's layout ([`es_core::strings`]).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        if let Value::Lowp(dt, a) = self {
            return lowp::pack(*dt, a.iter().copied());
        }
        with_array!(self, a => {
            if let Some(b) = a.as_slice().and_then(|s| Elem::as_le_bytes(s)) {
                return b.to_vec();
            }
            let mut out = Vec::with_capacity(a.len() * a.first().map_or(1, std::mem::size_of_val));
            for &x in a.iter() {
                Elem::to_le(x, &mut out);
            }
            out
        }, s => es_core::strings::encode(&s.iter().collect::<Vec<_>>()), _h => Vec::new())
    }

    /// A string tensor of `dims` from its elements in row-major order.
    pub fn strings(dims: &[usize], v: Vec<String>) -> Result<Value> {
        ArrayD::from_shape_vec(IxDyn(dims), v)
            .map(Value::Str)
            .map_err(|e| Error::Input(format!("strings do not fit shape {dims:?}: {e}")))
    }

    /// A value from an IR tensor (a Const's value, a user's input).
    pub fn from_tensor(t: &Tensor) -> Result<Value> {
        if t.desc.dtype == DataType::STRING {
            let dims = usize_dims(t.desc.shape.dims()).unwrap_or_default();
            return Value::strings(&dims, t.strings()?);
        }
        let dims = usize_dims(t.desc.shape.dims()).ok_or_else(|| {
            Error::Input(format!(
                "a tensor needs a known shape, got {}",
                t.desc.shape
            ))
        })?;
        Value::from_le_bytes(t.desc.dtype, &dims, &t.data)
    }

    /// The value as an IR tensor (format ND).
    pub fn to_tensor(&self) -> Result<Tensor> {
        if let Value::Variant(_) = self {
            return Err(Error::unsupported(
                "a sequence or optional (DT_VARIANT) as an IR tensor",
            ));
        }
        if let Value::Str(a) = self {
            let v: Vec<&String> = a.iter().collect();
            return Tensor::from_strings(&v, self.dims()).map_err(Error::from);
        }
        let desc = TensorDesc::new(self.dtype(), Shape::new(self.dims()));
        Tensor::new(desc, self.to_le_bytes()).map_err(Error::from)
    }

    /// The elements as f64 (bool as 0/1), in standard order.
    /// Strings are parsed as numbers (NaN where one is not).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        if let Value::Lowp(dt, a) = self {
            return a.iter().map(|&b| lowp::decode(*dt, b)).collect();
        }
        with_array!(self, a => a.iter().map(|&x| Elem::to_f64(x)).collect(),
            s => s.iter().map(|t| t.trim().parse().unwrap_or(f64::NAN)).collect(), _h => Vec::new())
    }

    /// The elements as i64 (floats truncated), in standard order.
    pub fn to_i64_vec(&self) -> Vec<i64> {
        if let Value::Lowp(..) | Value::Str(_) = self {
            return self.to_f64_vec().into_iter().map(|x| x as i64).collect();
        }
        with_array!(self, a => a.iter().map(|&x| Elem::to_f64(x) as i64).collect(), _s => vec![],
            _h => vec![])
    }

    /// This value converted to `dt` (numpy's `astype`: floats to integers truncate toward
    /// zero, out-of-range values saturate; integers to integers wrap around (keep the low
    /// bits); every conversion rounds once; anything nonzero to bool is true).
    pub fn cast(&self, dt: DataType) -> Result<Value> {
        self.cast_with(dt, CastMode::default())
    }

    /// [`Value::cast`], with ONNX's saturation and FLOAT8_E8M0 rounding for conversions to the
    /// low-precision types (see [`crate::lowp`]); a low-precision value converts through its
    /// exact value (an integer for the 4- and 2-bit integers).
    pub fn cast_with(&self, dt: DataType, mode: CastMode) -> Result<Value> {
        if dt == self.dtype() {
            return Ok(self.clone());
        }
        if dt == DataType::STRING || matches!(self, Value::Str(_)) {
            return strings::cast(self, dt);
        }
        if let Value::Lowp(src, a) = self {
            let wide = if lowp::is_small_int(*src) {
                Value::I64(a.mapv(|b| lowp::decode_int(*src, b).unwrap_or(0)))
            } else {
                Value::F64(a.mapv(|b| lowp::decode(*src, b)))
            };
            return wide.cast_with(dt, mode);
        }
        if dt.is_low_precision() {
            fn enc<S: Elem>(a: &ArrayD<S>, dt: DataType, mode: CastMode) -> ArrayD<u8> {
                if S::INTEGRAL {
                    a.mapv(|x| lowp::encode_int(dt, x.to_i64_bits(), mode))
                } else {
                    a.mapv(|x| lowp::encode(dt, x.to_f64(), mode))
                }
            }
            return Ok(Value::Lowp(dt, with_array!(self, a => enc(a, dt, mode))));
        }
        fn conv<S: Elem, T: Elem>(a: &ArrayD<S>) -> ArrayD<T> {
            if S::INTEGRAL && T::INTEGRAL {
                a.mapv(|x| T::from_i64_bits(x.to_i64_bits()))
            } else {
                a.mapv(|x| T::from_f64(x.to_f64()))
            }
        }
        if dt == DataType::FLOAT {
            // Directly, not through f64: an i64 or u64 would be rounded twice.
            return Ok(with_array!(self, a => Value::F32(a.mapv(Elem::to_f32))));
        }
        Ok(
            with_elem_type!(dt, T => with_array!(self, a => T::wrap(conv::<_, T>(a))), {
                return Err(Error::unsupported(format!(
                    "Cast to {dt} on the CPU backend"
                )))
            }),
        )
    }

    /// A scalar of `dt` holding `v`.
    pub fn scalar_f64(dt: DataType, v: f64) -> Result<Value> {
        Value::F64(ArrayD::from_elem(IxDyn(&[]), v)).cast(dt)
    }
}

/// The dtype and shape of one graph input: what a plan is specialised for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InputSignature {
    pub dtype: DataType,
    pub dims: Vec<usize>,
}

/// The signature of a run: one entry per graph input, in input-index order. (Inputs are
/// contiguous row-major arrays by the time they reach a plan, so strides add nothing.)
pub type Signature = Vec<InputSignature>;

/// A signature in words: `DT_FLOAT[1, 3], DT_INT64[2]`.
pub fn signature_text(sig: &Signature) -> String {
    sig.iter()
        .map(|s| format!("{}{:?}", s.dtype, s.dims))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn signature(inputs: &[Value]) -> Signature {
    inputs
        .iter()
        .map(|v| InputSignature {
            dtype: v.dtype(),
            dims: v.shape().to_vec(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_every_dtype() {
        use DataType::*;
        for dt in [
            FLOAT, DOUBLE, FLOAT16, BF16, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64,
            BOOL,
        ] {
            let v = Value::F64(
                ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0.0, 1.0, 2.0, 3.0]).unwrap(),
            )
            .cast(dt)
            .unwrap();
            assert_eq!(v.dtype(), dt);
            let back = Value::from_le_bytes(dt, &[2, 2], &v.to_le_bytes()).unwrap();
            assert_eq!(back, v, "{dt}");
            let t = v.to_tensor().unwrap();
            assert_eq!(Value::from_tensor(&t).unwrap(), v);
        }
    }

    #[test]
    fn bytes_are_read_bit_for_bit_from_any_address() {
        use DataType::*;
        // All 256 byte values scrambled (NaN payloads, subnormals, -0.0), read from an odd address.
        let raw: Vec<u8> = (0..=255u8)
            .map(|i| i.wrapping_mul(97).wrapping_add(3))
            .collect();
        let b = &raw[1..];
        for dt in [
            FLOAT, DOUBLE, FLOAT16, BF16, INT16, INT32, INT64, UINT16, UINT32, UINT64,
        ] {
            let n = b.len() / dt.size().unwrap();
            let bytes = &b[..n * dt.size().unwrap()];
            let v = Value::from_le_bytes(dt, &[n], bytes).unwrap();
            assert_eq!(v.to_le_bytes(), bytes, "{dt}");
            assert!(Value::from_le_bytes(dt, &[n + 1], bytes).is_err(), "{dt}");
        }
        let v = Value::from_le_bytes(BOOL, &[4], &[0, 1, 2, 255]).unwrap();
        assert_eq!(v.to_le_bytes(), [0, 1, 1, 1]);
    }

    #[test]
    fn low_precision_values_pack_cast_and_decode() {
        use DataType::*;
        let x = Value::F32(
            ArrayD::from_shape_vec(IxDyn(&[5]), vec![0.5, -1.5, 3.0, 1e6, f32::NAN]).unwrap(),
        );
        for dt in [
            FLOAT8_E4M3FN,
            FLOAT8_E4M3FNUZ,
            FLOAT8_E5M2,
            FLOAT8_E5M2FNUZ,
            FLOAT8_E8M0,
            FLOAT4_E2M1,
            INT4,
            UINT4,
            INT2,
            UINT2,
        ] {
            let v = x.cast(dt).unwrap();
            assert_eq!(v.dtype(), dt);
            assert_eq!(v.shape(), &[5]);
            // Packed in bytes (sub-byte types: 5 elements in 3 or 2 bytes), unpacked back.
            let bytes = v.to_le_bytes();
            assert_eq!(bytes.len(), dt.bytes_for(5).unwrap(), "{dt}");
            let back = Value::from_le_bytes(dt, &[5], &bytes).unwrap();
            assert_eq!(back, v, "{dt}");
            assert_eq!(Value::from_tensor(&v.to_tensor().unwrap()).unwrap(), v);
            assert!(Value::from_le_bytes(dt, &[5], &bytes[1..]).is_err());
            // Same-type casts keep the patterns; through f32 the values are exact.
            let f = v.cast(FLOAT).unwrap();
            assert_eq!(f.cast(dt).unwrap(), v, "{dt}");
        }
        let e4 = x.cast(FLOAT8_E4M3FN).unwrap().to_f64_vec();
        assert_eq!(&e4[..4], &[0.5, -1.5, 3.0, 448.0]);
        assert!(e4[4].is_nan());
        let no_sat = CastMode {
            saturate: false,
            ..CastMode::default()
        };
        assert!(x.cast_with(FLOAT8_E5M2, no_sat).unwrap().to_f64_vec()[3].is_infinite());
        assert_eq!(
            x.cast(INT4).unwrap().to_i64_vec(),
            vec![0, -1, 3, 0, 0],
            "truncated; 1e6 keeps its low bits (0x...240 -> 0)"
        );
        // A 4-bit integer to another integer type goes through its value.
        let i4 = Value::I8(ArrayD::from_shape_vec(IxDyn(&[3]), vec![-8, 7, -1]).unwrap())
            .cast(INT4)
            .unwrap();
        assert_eq!(i4.cast(INT8).unwrap().to_i64_vec(), vec![-8, 7, -1]);
        assert_eq!(i4.cast(UINT4).unwrap().to_i64_vec(), vec![8, 7, 15]);
        assert_eq!(i4.to_le_bytes(), vec![0x78, 0x0F]);
    }

    #[test]
    fn string_values_round_trip_and_stay_out_of_numeric_paths() {
        let v = Value::strings(&[2, 1], vec!["a".into(), "héllo".into()]).unwrap();
        assert_eq!(
            (v.dtype(), v.shape(), v.len()),
            (DataType::STRING, &[2, 1][..], 2)
        );
        // Bytes are GE's layout: two 16-byte heads, then "a\0" and "héllo\0".
        let bytes = v.to_le_bytes();
        assert_eq!(bytes.len(), 32 + 2 + 7);
        assert_eq!(
            Value::from_le_bytes(DataType::STRING, &[2, 1], &bytes).unwrap(),
            v
        );
        let t = v.to_tensor().unwrap();
        assert_eq!(t.strings().unwrap(), vec!["a", "héllo"]);
        assert_eq!(Value::from_tensor(&t).unwrap(), v);
        assert!(supported_dtype(DataType::STRING));
        assert!(Value::strings(&[3], vec!["a".into()]).is_err());
        // Numeric paths refuse it; data movement takes it.
        fn numeric(v: &Value) -> Result<usize> {
            Ok(with_array!(v, a => a.len()))
        }
        let e = numeric(&v).unwrap_err().to_string();
        assert!(
            e.contains("not supported") && e.contains("DT_STRING"),
            "{e}"
        );
        fn moved(v: &Value) -> Result<Value> {
            Ok(map_any!(v, a => a.t().as_standard_layout().into_owned()))
        }
        let m = moved(&v).unwrap();
        assert_eq!(m.shape(), &[1, 2]);
        assert_eq!(m.len(), 2);
        // Casts to and from strings (value/strings.rs has the formatting rules).
        let n = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![-4, 10]).unwrap());
        let s = n.cast(DataType::STRING).unwrap();
        assert_eq!(
            s,
            Value::strings(&[2], vec!["-4".into(), "10".into()]).unwrap()
        );
        assert_eq!(s.cast(DataType::INT64).unwrap(), n);
        assert_eq!(s.to_f64_vec(), vec![-4.0, 10.0]);
    }

    #[test]
    fn wrong_byte_count_and_dtype_are_errors() {
        assert!(Value::from_le_bytes(DataType::FLOAT, &[3], &[0; 8]).is_err());
        assert!(Value::from_le_bytes(DataType::STRING, &[1], &[0; 8]).is_err());
    }

    #[test]
    fn cast_follows_numpy() {
        let v =
            Value::F32(ArrayD::from_shape_vec(IxDyn(&[4]), vec![-1.7, 0.0, 2.9, 300.0]).unwrap());
        assert_eq!(
            v.cast(DataType::INT32).unwrap().to_i64_vec(),
            vec![-1, 0, 2, 300]
        );
        assert_eq!(
            v.cast(DataType::UINT8).unwrap().to_i64_vec(),
            vec![0, 0, 2, 255]
        );
        assert_eq!(
            v.cast(DataType::BOOL).unwrap().to_i64_vec(),
            vec![1, 0, 1, 1]
        );
        let big = Value::I64(ArrayD::from_elem(IxDyn(&[]), (1i64 << 60) + 1));
        assert_eq!(
            big.cast(DataType::UINT64)
                .unwrap()
                .cast(DataType::INT64)
                .unwrap(),
            big
        );
    }

    #[test]
    fn integer_casts_wrap_and_wide_integers_round_to_f32_once() {
        let v = Value::I64(
            ArrayD::from_shape_vec(IxDyn(&[4]), vec![-1, 300, (1 << 40) + 5, -129]).unwrap(),
        );
        assert_eq!(
            v.cast(DataType::UINT8).unwrap().to_i64_vec(),
            vec![255, 44, 5, 127]
        );
        assert_eq!(
            v.cast(DataType::INT32).unwrap().to_i64_vec(),
            vec![-1, 300, 5, -129]
        );
        let u = Value::U64(ArrayD::from_elem(IxDyn(&[]), u64::MAX));
        assert_eq!(u.cast(DataType::INT8).unwrap().to_i64_vec(), vec![-1]);
        // 2^60 + 2^36 + 1 is just above the midpoint of two f32 values: rounded once it goes up;
        // through f64 it would first become the midpoint and then go to even (down).
        let x = (1i64 << 60) + (1 << 36) + 1;
        let f = Value::I64(ArrayD::from_elem(IxDyn(&[]), x))
            .cast(DataType::FLOAT)
            .unwrap();
        assert_eq!(f, Value::F32(ArrayD::from_elem(IxDyn(&[]), x as f32)));
        assert_eq!(f.to_f64_vec(), vec![((1u64 << 60) + (1 << 37)) as f64]);
    }
}
