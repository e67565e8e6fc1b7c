//! Attribute values: every type of seed 000's attribute table, plus subgraph references.

use crate::error::{Error, Result};
use crate::types::{DataType, Tensor};

// `AttrValue` and `AttrMap` are defined in `types`, beside `Tensor` and `TensorDesc`: the three
// contain each other. Everything an attribute value does is here.
pub use crate::types::{AttrMap, AttrValue};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The type of an attribute, with the names GE's REG_OP uses (`Int`, `ListInt`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AttrType {
    Int,
    Float,
    String,
    Bool,
    Type,
    ListInt,
    ListFloat,
    ListBool,
    ListType,
    ListListInt,
    Tensor,
    ListString,
}

impl AttrType {
    pub const ALL: &'static [AttrType] = &[
        AttrType::Int,
        AttrType::Float,
        AttrType::String,
        AttrType::Bool,
        AttrType::Type,
        AttrType::ListInt,
        AttrType::ListFloat,
        AttrType::ListBool,
        AttrType::ListType,
        AttrType::ListListInt,
        AttrType::Tensor,
        AttrType::ListString,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AttrType::Int => "Int",
            AttrType::Float => "Float",
            AttrType::String => "String",
            AttrType::Bool => "Bool",
            AttrType::Type => "Type",
            AttrType::ListInt => "ListInt",
            AttrType::ListFloat => "ListFloat",
            AttrType::ListBool => "ListBool",
            AttrType::ListType => "ListType",
            AttrType::ListListInt => "ListListInt",
            AttrType::Tensor => "Tensor",
            AttrType::ListString => "ListString",
        }
    }

    /// Parses our names and GE's REG_OP spellings (`Int`, `INT`, `ListInt`, `LIST_INT`, `Str`...).
    pub fn parse(s: &str) -> Result<Self> {
        let norm: String = s
            .chars()
            .filter(|c| *c != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        Ok(match norm.as_str() {
            "int" => AttrType::Int,
            "float" => AttrType::Float,
            "string" | "str" => AttrType::String,
            "bool" => AttrType::Bool,
            "type" | "datatype" => AttrType::Type,
            "listint" => AttrType::ListInt,
            "listfloat" => AttrType::ListFloat,
            "listbool" => AttrType::ListBool,
            "listtype" | "listdatatype" => AttrType::ListType,
            "listlistint" => AttrType::ListListInt,
            "tensor" => AttrType::Tensor,
            "liststring" | "liststr" => AttrType::ListString,
            _ => return Err(Error::value(format!("unknown attribute type '{s}'"))),
        })
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for AttrValue {
    /// Floats compare by bit pattern, so NaN attributes survive round trips as equal.
    fn eq(&self, other: &Self) -> bool {
        use AttrValue::*;
        match (self, other) {
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (ListInt(a), ListInt(b)) => a == b,
            (ListFloat(a), ListFloat(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (ListBool(a), ListBool(b)) => a == b,
            (ListType(a), ListType(b)) => a == b,
            (ListListInt(a), ListListInt(b)) => a == b,
            (Tensor(a), Tensor(b)) => a == b,
            (ListString(a), ListString(b)) => a == b,
            _ => false,
        }
    }
}

impl AttrValue {
    pub fn attr_type(&self) -> AttrType {
        match self {
            AttrValue::Int(_) => AttrType::Int,
            AttrValue::Float(_) => AttrType::Float,
            AttrValue::String(_) => AttrType::String,
            AttrValue::Bool(_) => AttrType::Bool,
            AttrValue::Type(_) => AttrType::Type,
            AttrValue::ListInt(_) => AttrType::ListInt,
            AttrValue::ListFloat(_) => AttrType::ListFloat,
            AttrValue::ListBool(_) => AttrType::ListBool,
            AttrValue::ListType(_) => AttrType::ListType,
            AttrValue::ListListInt(_) => AttrType::ListListInt,
            AttrValue::Tensor(_) => AttrType::Tensor,
            AttrValue::ListString(_) => AttrType::ListString,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttrValue::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_float(&self) -> Option<f32> {
        match self {
            AttrValue::Float(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttrValue::Bool(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::String(v) => Some(v),
            _ => None,
        }
    }
    pub fn as_list_int(&self) -> Option<&[i64]> {
        match self {
            AttrValue::ListInt(v) => Some(v),
            _ => None,
        }
    }
    pub fn as_type(&self) -> Option<DataType> {
        match self {
            AttrValue::Type(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            AttrValue::Tensor(v) => Some(v),
            _ => None,
        }
    }

    /// Equality for compatibility checks: floats within 1e-5 (absolute or relative).
    pub fn approx_eq(&self, other: &AttrValue) -> bool {
        fn close(a: f32, b: f32) -> bool {
            if !a.is_finite() || !b.is_finite() {
                return a.to_bits() == b.to_bits();
            }
            a.to_bits() == b.to_bits()
                || (a - b).abs() <= 1e-5
                || (a - b).abs() <= 1e-5 * a.abs().max(b.abs())
        }
        match (self, other) {
            (AttrValue::Float(a), AttrValue::Float(b)) => close(*a, *b),
            (AttrValue::ListFloat(a), AttrValue::ListFloat(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y))
            }
            _ => self == other,
        }
    }

    /// JSON form used by the operator library (`ops/`): floats that JSON cannot hold are the
    /// strings "inf", "-inf", "nan"; dtypes are GE names; a tensor is
    /// `{"dtype": "DT_FLOAT", "shape": [..], "values": [..]}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Value};
        /// A float as JSON: a number, or "inf" / "-inf" / "nan".
        fn f64v(v: f64) -> Value {
            if v.is_finite() {
                json!(v)
            } else if v.is_nan() {
                json!("nan")
            } else if v > 0.0 {
                json!("inf")
            } else {
                json!("-inf")
            }
        }
        fn f(v: f32) -> Value {
            f64v(f64::from(v))
        }
        match self {
            AttrValue::Int(v) => json!(v),
            AttrValue::Float(v) => f(*v),
            AttrValue::String(v) => json!(v),
            AttrValue::Bool(v) => json!(v),
            AttrValue::Type(v) => json!(v.name()),
            AttrValue::ListInt(v) => json!(v),
            AttrValue::ListFloat(v) => Value::Array(v.iter().map(|x| f(*x)).collect()),
            AttrValue::ListBool(v) => json!(v),
            AttrValue::ListType(v) => json!(v.iter().map(|d| d.name()).collect::<Vec<_>>()),
            AttrValue::ListListInt(v) => json!(v),
            AttrValue::ListString(v) => json!(v),
            AttrValue::Tensor(t) => {
                let dt = t.desc.dtype;
                let values: Value = if dt == DataType::DOUBLE {
                    Value::Array(
                        t.values::<f64>()
                            .unwrap_or_default()
                            .into_iter()
                            .map(f64v)
                            .collect(),
                    )
                } else if dt.is_float() {
                    Value::Array(
                        t.to_f64_vec()
                            .unwrap_or_default()
                            .iter()
                            .map(|x| f(*x as f32))
                            .collect(),
                    )
                } else if dt == DataType::UINT64 {
                    json!(t.values::<u64>().unwrap_or_default())
                } else {
                    json!(t.to_i64_vec().unwrap_or_default())
                };
                json!({"dtype": t.desc.dtype.name(), "shape": t.desc.shape.0, "values": values})
            }
        }
    }

    /// Parses the JSON form of [`AttrValue::to_json`] for a given attribute type.
    pub fn from_json(ty: AttrType, v: &serde_json::Value) -> Result<AttrValue> {
        use serde_json::Value;
        let bad = || Error::value(format!("{v} is not a valid {ty} value"));
        fn float(v: &Value) -> Option<f32> {
            match v {
                Value::Number(n) => n.as_f64().map(|x| x as f32),
                Value::String(s) => match s.as_str() {
                    "inf" => Some(f32::INFINITY),
                    "-inf" => Some(f32::NEG_INFINITY),
                    "nan" => Some(f32::NAN),
                    _ => None,
                },
                _ => None,
            }
        }
        /// Every element of a JSON array through `f`; None when `v` is no array or `f` fails.
        fn each<T>(v: &Value, f: impl Fn(&Value) -> Option<T>) -> Option<Vec<T>> {
            v.as_array()?.iter().map(f).collect()
        }
        Ok(match ty {
            AttrType::Int => AttrValue::Int(v.as_i64().ok_or_else(bad)?),
            AttrType::Float => AttrValue::Float(float(v).ok_or_else(bad)?),
            AttrType::String => AttrValue::String(v.as_str().ok_or_else(bad)?.to_string()),
            AttrType::Bool => AttrValue::Bool(v.as_bool().ok_or_else(bad)?),
            AttrType::Type => AttrValue::Type(DataType::from_name(v.as_str().ok_or_else(bad)?)?),
            AttrType::ListInt => AttrValue::ListInt(each(v, Value::as_i64).ok_or_else(bad)?),
            AttrType::ListFloat => AttrValue::ListFloat(each(v, float).ok_or_else(bad)?),
            AttrType::ListBool => AttrValue::ListBool(each(v, Value::as_bool).ok_or_else(bad)?),
            AttrType::ListType => AttrValue::ListType(
                v.as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(|x| DataType::from_name(x.as_str().ok_or_else(bad)?))
                    .collect::<Result<_>>()?,
            ),
            AttrType::ListListInt => {
                AttrValue::ListListInt(each(v, |row| each(row, Value::as_i64)).ok_or_else(bad)?)
            }
            AttrType::ListString => {
                AttrValue::ListString(each(v, |x| x.as_str().map(str::to_string)).ok_or_else(bad)?)
            }
            AttrType::Tensor => {
                let obj = v.as_object().ok_or_else(bad)?;
                let dtype = DataType::from_name(
                    obj.get("dtype")
                        .and_then(Value::as_str)
                        .unwrap_or("DT_FLOAT"),
                )?;
                let shape: Vec<i64> = match obj.get("shape") {
                    Some(s) => serde_json::from_value(s.clone()).map_err(|_| bad())?,
                    None => Vec::new(),
                };
                let empty = Vec::new();
                let values = obj
                    .get("values")
                    .and_then(Value::as_array)
                    .unwrap_or(&empty);
                let exact = |x: &Value| -> Option<i64> { x.as_i64() };
                AttrValue::Tensor(if dtype == DataType::UINT64 {
                    let v = values
                        .iter()
                        .map(|x| x.as_u64().ok_or_else(bad))
                        .collect::<Result<Vec<u64>>>()?;
                    Tensor::from_values(&v, shape)?
                } else if dtype.is_integer() || dtype == DataType::BOOL {
                    let v = values
                        .iter()
                        .map(|x| exact(x).ok_or_else(bad))
                        .collect::<Result<Vec<i64>>>()?;
                    crate::types::tensor_from_i64(dtype, shape, &v)?
                } else {
                    let fl = |x: &Value| -> Option<f64> {
                        match x {
                            Value::Number(n) => n.as_f64(),
                            _ => float(x).map(f64::from),
                        }
                    };
                    let v = values
                        .iter()
                        .map(|x| fl(x).ok_or_else(bad))
                        .collect::<Result<Vec<f64>>>()?;
                    crate::types::tensor_from_f64(dtype, shape, &v)?
                })
            }
        })
    }
}

/// Text form used by dumps: strings quoted, floats bare (`nan`, `inf` included), dtypes bare
/// (`DT_FLOAT`), so values of different types never print alike.
impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T>(
            f: &mut fmt::Formatter<'_>,
            v: &[T],
            item: impl Fn(&T) -> String,
        ) -> fmt::Result {
            write!(f, "[{}]", v.iter().map(item).collect::<Vec<_>>().join(", "))
        }
        match self {
            AttrValue::Int(v) => write!(f, "{v}"),
            AttrValue::Float(v) => write!(f, "{v:?}"),
            AttrValue::String(s) => write!(f, "{s:?}"),
            AttrValue::Bool(v) => write!(f, "{v}"),
            AttrValue::Type(d) => write!(f, "{d}"),
            AttrValue::ListInt(v) => list(f, v, |x| x.to_string()),
            AttrValue::ListFloat(v) => list(f, v, |x| format!("{x:?}")),
            AttrValue::ListBool(v) => list(f, v, |x| x.to_string()),
            AttrValue::ListType(v) => list(f, v, |x| x.to_string()),
            AttrValue::ListListInt(v) => list(f, v, |r| format!("{r:?}")),
            AttrValue::ListString(v) => list(f, v, |x| format!("{x:?}")),
            AttrValue::Tensor(t) => write!(f, "tensor({})", t.desc),
        }
    }
}

impl AttrValue {
    /// Like `Display`, but a tensor also shows its bytes (hex up to 1 KiB, else their length and
    /// an FNV-1a hash), so two dumps are equal only if the values are.
    pub fn full_text(&self) -> String {
        match self {
            AttrValue::Tensor(t) => {
                let data = if t.data.len() <= 1024 {
                    t.data
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                } else {
                    let h = t.data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                    format!("<{} bytes, fnv1a {h:016x}>", t.data.len())
                };
                format!("tensor({} data={data})", t.desc)
            }
            other => other.to_string(),
        }
    }
}

macro_rules! from_impl {
    ($t:ty, $var:ident) => {
        impl From<$t> for AttrValue {
            fn from(v: $t) -> Self {
                AttrValue::$var(v)
            }
        }
    };
}
from_impl!(i64, Int);
from_impl!(f32, Float);
from_impl!(String, String);
from_impl!(bool, Bool);
from_impl!(DataType, Type);
from_impl!(Vec<i64>, ListInt);
from_impl!(Vec<f32>, ListFloat);
from_impl!(Vec<bool>, ListBool);
from_impl!(Vec<DataType>, ListType);
from_impl!(Vec<Vec<i64>>, ListListInt);
from_impl!(Tensor, Tensor);
from_impl!(Vec<String>, ListString);

impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        AttrValue::String(v.to_string())
    }
}
