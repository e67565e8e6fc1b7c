//! The AttributeTranslator: ONNX attributes as typed values, and their coercion to the type a
//! GE prototype declares (ONNX has no bool or dtype attributes: those arrive as ints).

use crate::error::{Error, Result};
use crate::proto::{AttributeProto, AttributeType as At, GraphProto, TensorProto};
use es_core::{AttrType, AttrValue, DataType};

/// One ONNX attribute's value.
#[derive(Debug, Clone)]
pub enum OnnxAttr<'a> {
    Float(f32),
    Int(i64),
    String(String),
    Tensor(&'a TensorProto),
    Graph(&'a GraphProto),
    Floats(&'a [f32]),
    Ints(&'a [i64]),
    Strings(Vec<String>),
    Tensors(&'a [TensorProto]),
    Graphs(&'a [GraphProto]),
}

impl OnnxAttr<'_> {
    pub fn kind(&self) -> &'static str {
        match self {
            OnnxAttr::Float(_) => "FLOAT",
            OnnxAttr::Int(_) => "INT",
            OnnxAttr::String(_) => "STRING",
            OnnxAttr::Tensor(_) => "TENSOR",
            OnnxAttr::Graph(_) => "GRAPH",
            OnnxAttr::Floats(_) => "FLOATS",
            OnnxAttr::Ints(_) => "INTS",
            OnnxAttr::Strings(_) => "STRINGS",
            OnnxAttr::Tensors(_) => "TENSORS",
            OnnxAttr::Graphs(_) => "GRAPHS",
        }
    }
}

fn utf8(b: &[u8], name: &str) -> Result<String> {
    String::from_utf8(b.to_vec())
        .map_err(|_| Error::tr(format!("attribute '{name}' is not valid UTF-8")))
}

/// The value of an attribute. Models written before attribute types existed leave `type`
/// unset; the field that is set decides then.
pub fn read(a: &AttributeProto) -> Result<OnnxAttr<'_>> {
    let name = a.name.as_deref().unwrap_or("");
    let ty = match a.r#type {
        Some(t) if t != At::Undefined as i32 => At::try_from(t)
            .map_err(|_| Error::tr(format!("attribute '{name}' has unknown type {t}")))?,
        _ => {
            if a.f.is_some() {
                At::Float
            } else if a.i.is_some() {
                At::Int
            } else if a.s.is_some() {
                At::String
            } else if a.t.is_some() {
                At::Tensor
            } else if a.g.is_some() {
                At::Graph
            } else if !a.floats.is_empty() {
                At::Floats
            } else if !a.ints.is_empty() {
                At::Ints
            } else if !a.strings.is_empty() {
                At::Strings
            } else if !a.tensors.is_empty() {
                At::Tensors
            } else if !a.graphs.is_empty() {
                At::Graphs
            } else {
                return Err(Error::tr(format!("attribute '{name}' has no value")));
            }
        }
    };
    Ok(match ty {
        At::Float => OnnxAttr::Float(a.f.unwrap_or(0.0)),
        At::Int => OnnxAttr::Int(a.i.unwrap_or(0)),
        At::String => OnnxAttr::String(utf8(a.s.as_deref().unwrap_or(&[]), name)?),
        At::Tensor => OnnxAttr::Tensor(
            a.t.as_ref()
                .ok_or_else(|| Error::tr(format!("attribute '{name}' has no tensor")))?,
        ),
        At::Graph => OnnxAttr::Graph(
            a.g.as_ref()
                .ok_or_else(|| Error::tr(format!("attribute '{name}' has no graph")))?,
        ),
        At::Floats => OnnxAttr::Floats(&a.floats),
        At::Ints => OnnxAttr::Ints(&a.ints),
        At::Strings => OnnxAttr::Strings(
            a.strings
                .iter()
                .map(|s| utf8(s, name))
                .collect::<Result<_>>()?,
        ),
        At::Tensors => OnnxAttr::Tensors(&a.tensors),
        At::Graphs => OnnxAttr::Graphs(&a.graphs),
        At::SparseTensor | At::SparseTensors => {
            return Err(Error::unsupported(format!(
                "attribute '{name}' holds a sparse tensor"
            )))
        }
        At::TypeProto | At::TypeProtos => {
            return Err(Error::unsupported(format!(
                "attribute '{name}' holds a type"
            )))
        }
        At::Undefined => return Err(Error::tr(format!("attribute '{name}' has no value"))),
    })
}

/// The attribute converted to a GE attribute of type `target` (`Int` → `Bool`, `Int` →
/// `Float`, a single value → a one-element list, ONNX element type → `DataType`, ...).
pub fn coerce(v: &OnnxAttr<'_>, target: AttrType, name: &str) -> Result<AttrValue> {
    let bad = || {
        Error::tr(format!(
            "attribute '{name}' is {}, which cannot become a GE {target}",
            v.kind()
        ))
    };
    let dtype = |t: i64| -> Result<DataType> {
        crate::types::dtype_from_onnx(i32::try_from(t).map_err(|_| bad())?)
            .map_err(|e| e.context(&format!("attribute '{name}'")))
    };
    Ok(match (target, v) {
        (AttrType::Int, OnnxAttr::Int(i)) => AttrValue::Int(*i),
        (AttrType::Int, OnnxAttr::Float(f)) if f.fract() == 0.0 => AttrValue::Int(*f as i64),
        (AttrType::Float, OnnxAttr::Float(f)) => AttrValue::Float(*f),
        (AttrType::Float, OnnxAttr::Int(i)) => AttrValue::Float(*i as f32),
        (AttrType::Bool, OnnxAttr::Int(i)) => AttrValue::Bool(*i != 0),
        (AttrType::String, OnnxAttr::String(s)) => AttrValue::String(s.clone()),
        (AttrType::Type, OnnxAttr::Int(i)) => AttrValue::Type(dtype(*i)?),
        (AttrType::ListInt, OnnxAttr::Ints(v)) => AttrValue::ListInt(v.to_vec()),
        (AttrType::ListInt, OnnxAttr::Int(i)) => AttrValue::ListInt(vec![*i]),
        (AttrType::ListFloat, OnnxAttr::Floats(v)) => AttrValue::ListFloat(v.to_vec()),
        (AttrType::ListFloat, OnnxAttr::Float(f)) => AttrValue::ListFloat(vec![*f]),
        (AttrType::ListFloat, OnnxAttr::Ints(v)) => {
            AttrValue::ListFloat(v.iter().map(|&i| i as f32).collect())
        }
        (AttrType::ListBool, OnnxAttr::Ints(v)) => {
            AttrValue::ListBool(v.iter().map(|&i| i != 0).collect())
        }
        (AttrType::ListType, OnnxAttr::Ints(v)) => {
            AttrValue::ListType(v.iter().map(|&i| dtype(i)).collect::<Result<_>>()?)
        }
        (AttrType::ListString, OnnxAttr::Strings(v)) => AttrValue::ListString(v.clone()),
        (AttrType::ListString, OnnxAttr::String(s)) => AttrValue::ListString(vec![s.clone()]),
        (AttrType::Tensor, OnnxAttr::Tensor(t)) => AttrValue::Tensor(
            crate::types::tensor_from_proto(
                t,
                &crate::types::DataDir::default(),
                &crate::types::Limits::default(),
            )
            .map_err(|e| e.context(&format!("attribute '{name}'")))?,
        ),
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(name: &str, f: impl FnOnce(&mut AttributeProto)) -> AttributeProto {
        let mut a = AttributeProto {
            name: Some(name.into()),
            ..Default::default()
        };
        f(&mut a);
        a
    }

    #[test]
    fn untyped_attributes_are_read_by_their_field() {
        let a = attr("alpha", |a| a.f = Some(0.5));
        assert!(matches!(read(&a).unwrap(), OnnxAttr::Float(f) if f == 0.5));
        let a = attr("axes", |a| a.ints = vec![1, 2]);
        assert!(matches!(read(&a).unwrap(), OnnxAttr::Ints(v) if v == [1, 2]));
        let a = attr("empty", |_| {});
        assert!(read(&a).is_err());
    }

    #[test]
    fn the_type_field_decides_and_unknown_types_are_errors() {
        // UNDEFINED is the same as unset: the field that is set decides.
        let a = attr("n", |a| {
            a.r#type = Some(At::Undefined as i32);
            a.i = Some(3);
        });
        assert!(matches!(read(&a).unwrap(), OnnxAttr::Int(3)));
        // A declared type wins over the fields (a missing graph is an error, not a guess).
        let a = attr("body", |a| {
            a.r#type = Some(At::Graph as i32);
            a.i = Some(3);
        });
        let e = read(&a).unwrap_err().to_string();
        assert!(e.contains("attribute 'body' has no graph"), "{e}");
        let a = attr("g", |a| {
            a.r#type = Some(At::Graph as i32);
            a.g = Some(GraphProto::default());
        });
        assert!(matches!(read(&a).unwrap(), OnnxAttr::Graph(_)));
        let a = attr("odd", |a| {
            a.r#type = Some(99);
            a.i = Some(3);
        });
        let e = read(&a).unwrap_err().to_string();
        assert!(e.contains("attribute 'odd' has unknown type 99"), "{e}");
        let a = attr("sp", |a| a.r#type = Some(At::SparseTensor as i32));
        let e = read(&a).unwrap_err().to_string();
        assert!(
            e.contains("not supported") && e.contains("sparse tensor"),
            "{e}"
        );
    }

    #[test]
    fn coercion_to_ge_types() {
        let i = OnnxAttr::Int(1);
        assert_eq!(
            coerce(&i, AttrType::Bool, "x").unwrap(),
            AttrValue::Bool(true)
        );
        assert_eq!(
            coerce(&i, AttrType::Type, "to").unwrap(),
            AttrValue::Type(DataType::FLOAT)
        );
        assert_eq!(
            coerce(&OnnxAttr::Int(3), AttrType::ListInt, "x").unwrap(),
            AttrValue::ListInt(vec![3])
        );
        let e = coerce(&OnnxAttr::String("a".into()), AttrType::Int, "mode").unwrap_err();
        assert!(e.to_string().contains("attribute 'mode' is STRING"), "{e}");
        // 8 is ONNX's STRING, now DT_STRING; a value that is no ONNX type is not supported.
        assert_eq!(
            coerce(&OnnxAttr::Int(8), AttrType::Type, "to").unwrap(),
            AttrValue::Type(DataType::STRING)
        );
        let e = coerce(&OnnxAttr::Int(99), AttrType::Type, "to").unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
    }
}
