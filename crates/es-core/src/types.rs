//! Data types, formats, shapes, tensor descriptions and tensors, with GE's names and values.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

macro_rules! ge_enum {
    ($(#[$m:meta])* $name:ident, $prefix:literal, { $($var:ident = $val:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[repr(i32)]
        pub enum $name { $($var = $val),* }

        impl $name {
            /// Every value, in numeric order. (Not `ALL`: `Format::ALL` is GE's FORMAT_ALL.)
            pub const VALUES: &'static [$name] = &[$($name::$var),*];

            /// GE's name, e.g. `DT_FLOAT` or `FORMAT_NCHW`.
            pub fn name(self) -> &'static str {
                match self { $($name::$var => concat!($prefix, stringify!($var))),* }
            }

            /// GE's numeric value.
            pub fn value(self) -> i32 { self as i32 }

            pub fn from_value(v: i64) -> Result<Self> {
                match v {
                    $($val => Ok($name::$var),)*
                    _ => Err(Error::value(format!(
                        "{} has no value {}", stringify!($name), v))),
                }
            }

            /// Parse GE's name; the prefix may be left out (`FLOAT` for `DT_FLOAT`).
            pub fn from_name(s: &str) -> Result<Self> {
                let bare = s.strip_prefix($prefix).unwrap_or(s);
                match bare {
                    $(stringify!($var) => Ok($name::$var),)*
                    _ => Err(Error::value(format!(
                        "unknown {} '{}'", stringify!($name), s))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.name()) }
        }
    };
}

ge_enum!(
    /// GE's `ge::DataType`.
    #[allow(non_camel_case_types)]
    DataType, "DT_", {
    FLOAT = 0, FLOAT16 = 1, INT8 = 2, INT32 = 3, UINT8 = 4, INT16 = 6, UINT16 = 7, UINT32 = 8,
    INT64 = 9, UINT64 = 10, DOUBLE = 11, BOOL = 12, STRING = 13, DUAL_SUB_INT8 = 14,
    DUAL_SUB_UINT8 = 15, COMPLEX64 = 16, COMPLEX128 = 17, QINT8 = 18, QINT16 = 19, QINT32 = 20,
    QUINT8 = 21, QUINT16 = 22, RESOURCE = 23, STRING_REF = 24, DUAL = 25, VARIANT = 26, BF16 = 27,
    UNDEFINED = 28, INT4 = 29, UINT1 = 30, INT2 = 31, UINT2 = 32, COMPLEX32 = 33, HIFLOAT8 = 34,
    FLOAT8_E5M2 = 35, FLOAT8_E4M3FN = 36, FLOAT8_E8M0 = 37, FLOAT6_E3M2 = 38, FLOAT6_E2M3 = 39,
    FLOAT4_E2M1 = 40, FLOAT4_E1M2 = 41, HIFLOAT4 = 42, HIFLOAT4_SCALE = 43,
    // ge-rs extensions (ONNX element types GE has no DataType for), outside GE's range and
    // named in its style: 4-bit unsigned integers and the float8 variants without negative
    // zero or infinities ("finite, unsigned zero").
    UINT4 = 1000, FLOAT8_E4M3FNUZ = 1001, FLOAT8_E5M2FNUZ = 1002,
});

impl DataType {
    /// Size in bytes of one element, where it is a whole number of bytes.
    pub fn size(self) -> Option<usize> {
        use DataType::*;
        Some(match self {
            FLOAT | INT32 | UINT32 | QINT32 | COMPLEX32 => 4,
            FLOAT16 | BF16 | INT16 | UINT16 | QINT16 | QUINT16 => 2,
            INT8 | UINT8 | BOOL | QINT8 | QUINT8 | DUAL_SUB_INT8 | DUAL_SUB_UINT8 | HIFLOAT8
            | FLOAT8_E5M2 | FLOAT8_E4M3FN | FLOAT8_E8M0 | FLOAT8_E4M3FNUZ | FLOAT8_E5M2FNUZ => 1,
            INT64 | UINT64 | DOUBLE | COMPLEX64 => 8,
            COMPLEX128 => 16,
            _ => return None,
        })
    }

    /// Size in bits of one element, sub-byte types included (4 for INT4, 2 for INT2, 1 for
    /// UINT1); sub-byte elements are packed, the first in the lowest bits of a byte (GE's and
    /// ONNX's order). None where an element has no fixed size (strings, resources).
    pub fn bits(self) -> Option<usize> {
        use DataType::*;
        match self {
            INT4 | UINT4 | FLOAT4_E2M1 | FLOAT4_E1M2 | HIFLOAT4 => Some(4),
            INT2 | UINT2 => Some(2),
            UINT1 => Some(1),
            _ => self.size().map(|s| s * 8),
        }
    }

    /// The bytes `n` elements take, sub-byte types packed (the last byte padded); None where an
    /// element has no fixed size or the count overflows.
    pub fn bytes_for(self, n: usize) -> Option<usize> {
        n.checked_mul(self.bits()?).map(|b| b.div_ceil(8))
    }

    /// The 8-bit and narrower floating types and the 4- and 2-bit integers: stored by the CPU
    /// backend as one bit pattern a byte, converted by Cast, moved by the data-movement ops.
    pub fn is_low_precision(self) -> bool {
        use DataType::*;
        matches!(
            self,
            FLOAT8_E4M3FN
                | FLOAT8_E4M3FNUZ
                | FLOAT8_E5M2
                | FLOAT8_E5M2FNUZ
                | FLOAT8_E8M0
                | FLOAT4_E2M1
                | INT4
                | UINT4
                | INT2
                | UINT2
        )
    }

    pub fn is_float(self) -> bool {
        use DataType::*;
        matches!(self, FLOAT | FLOAT16 | BF16 | DOUBLE)
    }

    pub fn is_integer(self) -> bool {
        use DataType::*;
        matches!(
            self,
            INT8 | INT16 | INT32 | INT64 | UINT8 | UINT16 | UINT32 | UINT64
        )
    }

    /// The dtype two operands are computed in, by GE's promotion rule (CANN's `PromoteType`
    /// table, which Add's dtype inference and the aclnn element-wise kernels use): bool < integer
    /// < floating < complex; u8 with i8 gives i16; f16 with bf16 gives f32; an integer with a
    /// floating type gives that floating type; a complex type widens to hold the other operand's
    /// float part. None where GE has no promotion (u16/u32/u64 with another type, strings,
    /// quantised and sub-byte types).
    pub fn promote(self, other: DataType) -> Option<DataType> {
        use DataType::*;
        if self == other {
            return Some(self);
        }
        // (kind, width): kind 0 bool, 1 integer, 2 floating, 3 complex; width in bytes of the
        // value (of each part for complex).
        fn class(t: DataType) -> Option<(u8, u8)> {
            Some(match t {
                BOOL => (0, 1),
                UINT8 | INT8 => (1, 1),
                INT16 => (1, 2),
                INT32 => (1, 4),
                INT64 => (1, 8),
                FLOAT16 | BF16 => (2, 2),
                FLOAT => (2, 4),
                DOUBLE => (2, 8),
                COMPLEX32 => (3, 2),
                COMPLEX64 => (3, 4),
                COMPLEX128 => (3, 8),
                _ => return None,
            })
        }
        // Two floating types: the wider; f16 and bf16 meet in f32.
        fn floats(a: DataType, b: DataType) -> DataType {
            match (a, b) {
                (FLOAT16, BF16) | (BF16, FLOAT16) => FLOAT,
                _ if a.size() >= b.size() => a,
                _ => b,
            }
        }
        let ((ka, wa), (kb, wb)) = (class(self)?, class(other)?);
        if ka != kb {
            let (hi, lo, klo) = if ka > kb {
                (self, other, kb)
            } else {
                (other, self, ka)
            };
            if hi.is_float() || klo < 2 {
                return Some(hi); // bool/int under anything, a float under a complex part too
            }
            // A complex type and a floating type: the complex type whose parts hold both.
            let part = match hi {
                COMPLEX32 => FLOAT16,
                COMPLEX64 => FLOAT,
                _ => DOUBLE,
            };
            return Some(match floats(part, lo) {
                FLOAT16 => COMPLEX32,
                FLOAT => COMPLEX64,
                _ => COMPLEX128,
            });
        }
        Some(match ka {
            1 if wa == wb => INT16, // u8 and i8
            2 => floats(self, other),
            _ if wa >= wb => self,
            _ => other,
        })
    }
}

ge_enum!(
    /// GE's `ge::Format`.
    #[allow(non_camel_case_types)]
    Format, "FORMAT_", {
    NCHW = 0, NHWC = 1, ND = 2, NC1HWC0 = 3, FRACTAL_Z = 4, NC1C0HWPAD = 5, NHWC1C0 = 6,
    FSR_NCHW = 7, FRACTAL_DECONV = 8, C1HWNC0 = 9, FRACTAL_DECONV_TRANSPOSE = 10,
    FRACTAL_DECONV_SP_STRIDE_TRANS = 11, NC1HWC0_C04 = 12, FRACTAL_Z_C04 = 13, CHWN = 14,
    FRACTAL_DECONV_SP_STRIDE8_TRANS = 15, HWCN = 16, NC1KHKWHWC0 = 17, BN_WEIGHT = 18,
    FILTER_HWCK = 19, HASHTABLE_LOOKUP_LOOKUPS = 20, HASHTABLE_LOOKUP_KEYS = 21,
    HASHTABLE_LOOKUP_VALUE = 22, HASHTABLE_LOOKUP_OUTPUT = 23, HASHTABLE_LOOKUP_HITS = 24,
    C1HWNCoC0 = 25, MD = 26, NDHWC = 27, FRACTAL_ZZ = 28, FRACTAL_NZ = 29, NCDHW = 30,
    DHWCN = 31, NDC1HWC0 = 32, FRACTAL_Z_3D = 33, CN = 34, NC = 35, DHWNC = 36,
    FRACTAL_Z_3D_TRANSPOSE = 37, FRACTAL_ZN_LSTM = 38, FRACTAL_Z_G = 39, RESERVED = 40,
    ALL = 41, NULL = 42, ND_RNN_BIAS = 43, FRACTAL_ZN_RNN = 44, NYUV = 45, NYUV_A = 46,
    NCL = 47, FRACTAL_Z_WINO = 48, C1HWC0 = 49, FRACTAL_NZ_C0_16 = 50, FRACTAL_NZ_C0_32 = 51,
});

ge_enum!(
    /// GE's `ge::Placement`.
    #[allow(non_camel_case_types)]
    Placement, "PLACEMENT_", { HOST = 0, DEVICE = 1 });

/// A dim of -1 is unknown.
pub const UNKNOWN_DIM: i64 = -1;
/// The shape `[-2]` is a tensor of unknown rank.
pub const UNKNOWN_RANK: i64 = -2;

/// Dims of a shape: up to 4 are stored inline (no heap allocation).
pub type Dims = smallvec::SmallVec<[i64; 4]>;

/// A tensor shape with GE's conventions: `-1` is an unknown dim, `[-2]` an unknown rank,
/// `[]` a scalar.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Shape(pub Dims);

impl Shape {
    pub fn new(dims: Vec<i64>) -> Self {
        Shape(Dims::from_vec(dims))
    }
    pub fn from_slice(dims: &[i64]) -> Self {
        Shape(Dims::from_slice(dims))
    }
    pub fn scalar() -> Self {
        Shape(Dims::new())
    }
    pub fn unknown_rank() -> Self {
        Shape(smallvec::smallvec![UNKNOWN_RANK])
    }
    /// A shape of `rank` unknown dims.
    pub fn unknown_dims(rank: usize) -> Self {
        Shape(smallvec::smallvec![UNKNOWN_DIM; rank])
    }
    /// The dims as a Vec.
    pub fn to_vec(&self) -> Vec<i64> {
        self.0.to_vec()
    }
    /// Checks that every dim is >= 0, -1, or that the shape is exactly `[-2]`.
    pub fn validate(dims: &[i64]) -> Result<()> {
        if dims == [UNKNOWN_RANK] {
            return Ok(());
        }
        for (i, &d) in dims.iter().enumerate() {
            if d < UNKNOWN_DIM {
                return Err(Error::value(format!(
                    "invalid dim {d} at axis {i} of shape {dims:?}: dims are >= 0, -1 (unknown), \
                     or the whole shape is [-2] (unknown rank)"
                )));
            }
        }
        Ok(())
    }
    pub fn dims(&self) -> &[i64] {
        &self.0
    }
    pub fn is_unknown_rank(&self) -> bool {
        self.0.as_slice() == [UNKNOWN_RANK]
    }
    /// Rank, or None for unknown rank.
    pub fn rank(&self) -> Option<usize> {
        if self.is_unknown_rank() {
            None
        } else {
            Some(self.0.len())
        }
    }
    pub fn is_scalar(&self) -> bool {
        self.0.is_empty()
    }
    /// Every dim is known.
    pub fn is_static(&self) -> bool {
        self.0.iter().all(|&d| d >= 0)
    }
    /// Number of elements, when every dim is known.
    pub fn num_elements(&self) -> Option<i64> {
        if !self.is_static() {
            return None;
        }
        crate::opmath::checked_product(&self.0)
    }
}

impl From<Vec<i64>> for Shape {
    fn from(v: Vec<i64>) -> Self {
        Shape::new(v)
    }
}

impl From<&[i64]> for Shape {
    fn from(v: &[i64]) -> Self {
        Shape::from_slice(v)
    }
}

impl From<Dims> for Shape {
    fn from(v: Dims) -> Self {
        Shape(v)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

/// Description of a tensor: dtype, shape, format, their origins, placement and tensor attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorDesc {
    pub dtype: DataType,
    pub format: Format,
    pub shape: Shape,
    pub origin_format: Format,
    pub origin_shape: Shape,
    pub placement: Placement,
    /// Attributes of this tensor (private attributes of a node output or input).
    #[serde(default)]
    pub attrs: AttrMap,
}

impl Default for TensorDesc {
    fn default() -> Self {
        TensorDesc::new(DataType::UNDEFINED, Shape::unknown_rank())
    }
}

impl TensorDesc {
    pub fn new(dtype: DataType, shape: Shape) -> Self {
        TensorDesc {
            dtype,
            format: Format::ND,
            origin_format: Format::ND,
            origin_shape: shape.clone(),
            shape,
            placement: Placement::HOST,
            attrs: AttrMap::new(),
        }
    }
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = format;
        self.origin_format = format;
        self
    }
    /// Sets shape and origin shape together.
    pub fn set_shape(&mut self, shape: Shape) {
        self.origin_shape = shape.clone();
        self.shape = shape;
    }
}

/// A [`TensorDesc`] shared copy-on-write: an input's description starts as its producer's
/// (GE's OpDesc keeps a copy; here the copy is the same allocation until one side changes).
/// Reads go through `Deref`; a write (`DerefMut`, [`SharedDesc::set`]) first makes the
/// description this owner's own (`Arc::make_mut`), so every owner sees value semantics:
/// changing an output's description never changes a consumer's, nor the reverse. Equality,
/// `Debug` and the saved form are those of the description itself.
#[derive(Clone, Default)]
pub struct SharedDesc(Arc<TensorDesc>);

impl SharedDesc {
    pub fn new(desc: TensorDesc) -> Self {
        SharedDesc(Arc::new(desc))
    }
    /// Replaces the description (this owner's only; others keep theirs).
    pub fn set(&mut self, desc: TensorDesc) {
        self.0 = Arc::new(desc);
    }
    /// The description, moved out when no other owner shares it.
    pub fn into_inner(self) -> TensorDesc {
        Arc::unwrap_or_clone(self.0)
    }
    /// Whether both owners share one allocation (a copy made by cloning, not changed since).
    pub fn is_shared_with(&self, other: &SharedDesc) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for SharedDesc {
    type Target = TensorDesc;
    fn deref(&self) -> &TensorDesc {
        &self.0
    }
}

impl std::ops::DerefMut for SharedDesc {
    fn deref_mut(&mut self) -> &mut TensorDesc {
        Arc::make_mut(&mut self.0)
    }
}

impl From<TensorDesc> for SharedDesc {
    fn from(d: TensorDesc) -> Self {
        SharedDesc::new(d)
    }
}

impl PartialEq for SharedDesc {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl PartialEq<TensorDesc> for SharedDesc {
    fn eq(&self, other: &TensorDesc) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedDesc> for TensorDesc {
    fn eq(&self, other: &SharedDesc) -> bool {
        *self == *other.0
    }
}

impl fmt::Debug for SharedDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for SharedDesc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SharedDesc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        TensorDesc::deserialize(d).map(SharedDesc::new)
    }
}

impl fmt::Display for TensorDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{} {}", self.dtype, self.shape, self.format)
    }
}

/// Attributes by name, in name order (deterministic dumps and files).
pub type AttrMap = BTreeMap<String, AttrValue>;

/// An attribute value. Defined here because it and [`Tensor`] / [`TensorDesc`] contain each
/// other (a tensor attribute, a description's attributes); what a value does (its type, typed
/// getters, parsing, display) is in [`crate::attr`], re-exported there as `attr::AttrValue`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum AttrValue {
    Int(i64),
    Float(f32),
    String(String),
    Bool(bool),
    Type(DataType),
    ListInt(Vec<i64>),
    ListFloat(Vec<f32>),
    ListBool(Vec<bool>),
    ListType(Vec<DataType>),
    ListListInt(Vec<Vec<i64>>),
    Tensor(Tensor),
    ListString(Vec<String>),
}

/// A tensor: its description and its bytes (little-endian, row-major). Bytes are shared,
/// so cloning a tensor is cheap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub desc: TensorDesc,
    #[serde(with = "serde_bytes_arc")]
    pub data: Arc<Vec<u8>>,
}

mod serde_bytes_arc {
    use serde::{Deserializer, Serializer};
    use std::sync::Arc;
    pub fn serialize<S: Serializer>(v: &Arc<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<Vec<u8>>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(V).map(Arc::new)
    }
}

/// Element types that can be stored in a [`Tensor`].
pub trait Element: Copy + 'static {
    const DTYPE: DataType;
    fn write_le(self, out: &mut Vec<u8>);
    fn read_le(b: &[u8]) -> Self;
}

macro_rules! element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DataType = DataType::$dt;
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
element!(f32, FLOAT);
element!(f64, DOUBLE);
element!(i8, INT8);
element!(i16, INT16);
element!(i32, INT32);
element!(i64, INT64);
element!(u8, UINT8);
element!(u16, UINT16);
element!(u32, UINT32);
element!(u64, UINT64);
element!(half::f16, FLOAT16);
element!(half::bf16, BF16);

impl Element for bool {
    const DTYPE: DataType = DataType::BOOL;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn read_le(b: &[u8]) -> Self {
        b[0] != 0
    }
}

impl Tensor {
    /// A tensor from a description and bytes; checks that the byte count fits the shape.
    pub fn new(desc: TensorDesc, data: Vec<u8>) -> Result<Self> {
        if let Some(want) = crate::opmath::byte_size("tensor", desc.dtype, &desc.shape)? {
            if want != data.len() {
                return Err(Error::value(format!(
                    "tensor of {} {} needs {} bytes, got {}",
                    desc.dtype,
                    desc.shape,
                    want,
                    data.len()
                )));
            }
        } else if !desc.shape.is_static() {
            return Err(Error::value(format!(
                "a tensor with data needs a known shape, got {}",
                desc.shape
            )));
        }
        let t = Tensor {
            desc,
            data: Arc::new(data),
        };
        if t.desc.dtype == DataType::STRING {
            t.string_bytes()?; // GE's layout (crate::strings), checked once here
        }
        Ok(t)
    }

    /// A tensor from typed values and a shape.
    pub fn from_values<T: Element>(values: &[T], shape: Vec<i64>) -> Result<Self> {
        Shape::validate(&shape)?;
        let mut data = Vec::with_capacity(std::mem::size_of_val(values));
        for &v in values {
            v.write_le(&mut data);
        }
        Tensor::new(TensorDesc::new(T::DTYPE, Shape::new(shape)), data)
    }

    pub fn scalar<T: Element>(v: T) -> Self {
        let mut data = Vec::new();
        v.write_le(&mut data);
        Tensor {
            desc: TensorDesc::new(T::DTYPE, Shape::scalar()),
            data: Arc::new(data),
        }
    }

    /// Values as `T`, when the dtype is `T`'s.
    pub fn values<T: Element>(&self) -> Result<Vec<T>> {
        if self.desc.dtype != T::DTYPE {
            return Err(Error::type_err(format!(
                "tensor has dtype {}, not {}",
                self.desc.dtype,
                T::DTYPE
            )));
        }
        let sz = std::mem::size_of::<T>().max(1);
        Ok(self.data.chunks_exact(sz).map(T::read_le).collect())
    }

    /// Values of an integer tensor as i64 (any integer dtype, or bool).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        use DataType::*;
        Ok(match self.desc.dtype {
            INT8 => self.values::<i8>()?.into_iter().map(i64::from).collect(),
            INT16 => self.values::<i16>()?.into_iter().map(i64::from).collect(),
            INT32 => self.values::<i32>()?.into_iter().map(i64::from).collect(),
            INT64 => self.values::<i64>()?,
            UINT8 => self.values::<u8>()?.into_iter().map(i64::from).collect(),
            UINT16 => self.values::<u16>()?.into_iter().map(i64::from).collect(),
            UINT32 => self.values::<u32>()?.into_iter().map(i64::from).collect(),
            UINT64 => self
                .values::<u64>()?
                .into_iter()
                .map(|v| v as i64)
                .collect(),
            BOOL => self.values::<bool>()?.into_iter().map(i64::from).collect(),
            dt => {
                return Err(Error::type_err(format!(
                    "expected an integer tensor, got {dt}"
                )))
            }
        })
    }

    /// Values of a numeric tensor as f64.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        use DataType::*;
        Ok(match self.desc.dtype {
            FLOAT => self.values::<f32>()?.into_iter().map(f64::from).collect(),
            DOUBLE => self.values::<f64>()?,
            FLOAT16 => self
                .values::<half::f16>()?
                .into_iter()
                .map(f64::from)
                .collect(),
            BF16 => self
                .values::<half::bf16>()?
                .into_iter()
                .map(f64::from)
                .collect(),
            _ => self.to_i64_vec()?.into_iter().map(|v| v as f64).collect(),
        })
    }
}

/// Builds a tensor of an integer (or bool) `dtype` from i64 values; values out of the dtype's
/// range are an error.
pub fn tensor_from_i64(dtype: DataType, shape: Vec<i64>, values: &[i64]) -> Result<Tensor> {
    use DataType::*;
    macro_rules! conv {
        ($t:ty) => {{
            let v = values
                .iter()
                .map(|&x| {
                    <$t>::try_from(x)
                        .map_err(|_| Error::value(format!("{x} is out of range for {dtype}")))
                })
                .collect::<Result<Vec<$t>>>()?;
            Tensor::from_values(&v, shape)
        }};
    }
    match dtype {
        INT8 => conv!(i8),
        INT16 => conv!(i16),
        INT32 => conv!(i32),
        INT64 => Tensor::from_values(values, shape),
        UINT8 => conv!(u8),
        UINT16 => conv!(u16),
        UINT32 => conv!(u32),
        UINT64 => conv!(u64),
        BOOL => Tensor::from_values(&values.iter().map(|&v| v != 0).collect::<Vec<_>>(), shape),
        other => Err(Error::value(format!("{other} is not an integer dtype"))),
    }
}

/// Builds a tensor of `dtype` from f64 values (integers are truncated toward zero).
pub fn tensor_from_f64(dtype: DataType, shape: Vec<i64>, values: &[f64]) -> Result<Tensor> {
    use DataType::*;
    macro_rules! conv {
        (|&$v:ident| $e:expr) => {
            Tensor::from_values(&values.iter().map(|&$v| $e).collect::<Vec<_>>(), shape)
        };
        ($t:ty) => {
            conv!(|&v| v as $t)
        };
    }
    match dtype {
        FLOAT => conv!(f32),
        DOUBLE => conv!(f64),
        INT8 => conv!(i8),
        INT16 => conv!(i16),
        INT32 => conv!(i32),
        INT64 => conv!(i64),
        UINT8 => conv!(u8),
        UINT16 => conv!(u16),
        UINT32 => conv!(u32),
        UINT64 => conv!(u64),
        FLOAT16 => conv!(|&v| half::f16::from_f64(v)),
        BF16 => conv!(|&v| half::bf16::from_f64(v)),
        BOOL => conv!(|&v| v != 0.0),
        other => Err(Error::NotSupported(format!(
            "tensor values of dtype {other}"
        ))),
    }
}

#[cfg(test)]
mod promote_tests {
    use super::DataType;

    fn short(s: &str) -> DataType {
        use DataType::*;
        match s {
            "b1" => BOOL,
            "u1" => UINT8,
            "i1" => INT8,
            "i2" => INT16,
            "i4" => INT32,
            "i8" => INT64,
            "f2" => FLOAT16,
            "bf" => BF16,
            "f4" => FLOAT,
            "f8" => DOUBLE,
            "c2" => COMPLEX32,
            "c4" => COMPLEX64,
            "c8" => COMPLEX128,
            _ => panic!("{s}"),
        }
    }

    /// GE's promotion table (CANN `op_common/data_type_utils.h`), row by column, for the types
    /// it promotes.
    #[test]
    fn promotion_follows_ges_table() {
        let rows = [
            "b1: b1 u1 i1 i2 i4 i8 f2 bf f4 f8 c2 c4 c8",
            "u1: u1 u1 i2 i2 i4 i8 f2 bf f4 f8 c2 c4 c8",
            "i1: i1 i2 i1 i2 i4 i8 f2 bf f4 f8 c2 c4 c8",
            "i2: i2 i2 i2 i2 i4 i8 f2 bf f4 f8 c2 c4 c8",
            "i4: i4 i4 i4 i4 i4 i8 f2 bf f4 f8 c2 c4 c8",
            "i8: i8 i8 i8 i8 i8 i8 f2 bf f4 f8 c2 c4 c8",
            "f2: f2 f2 f2 f2 f2 f2 f2 f4 f4 f8 c2 c4 c8",
            "bf: bf bf bf bf bf bf f4 bf f4 f8 c4 c4 c8",
            "f4: f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c4 c4 c8",
            "f8: f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c8 c8 c8",
            "c2: c2 c2 c2 c2 c2 c2 c2 c4 c4 c8 c2 c4 c8",
            "c4: c4 c4 c4 c4 c4 c4 c4 c4 c4 c8 c4 c4 c8",
            "c8: c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8",
        ];
        let cols: Vec<DataType> = rows.iter().map(|r| short(&r[..2])).collect();
        for r in rows {
            let a = short(&r[..2]);
            for (b, want) in cols.iter().zip(r[4..].split(' ')) {
                assert_eq!(a.promote(*b), Some(short(want)), "{a} with {b}");
            }
        }
    }

    #[test]
    fn types_ge_does_not_promote_give_none() {
        use DataType::*;
        assert_eq!(UINT16.promote(FLOAT), None);
        assert_eq!(STRING.promote(INT32), None);
        assert_eq!(UINT32.promote(UINT32), Some(UINT32));
        assert_eq!(INT4.promote(INT8), None);
    }
}
