//! The TypeTranslator: ONNX element types, value infos and tensors ⇄ the IR's `DataType`,
//! `TensorDesc` and `Tensor`. External data is read only from inside the model's directory,
//! and every size read from a model is bounded.

use crate::error::{Error, Result};
use crate::proto::{
    elem_type, elem_type_name, type_proto, DataLocation, ElemType as E, TensorProto, TypeProto,
};
use es_core::{DataType, Shape, Tensor, TensorDesc};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bounds on what a model may make the importer read or allocate.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest model file (protobuf) read, in bytes.
    pub max_model_bytes: u64,
    /// Largest single tensor (initializer, attribute or external data), in bytes.
    pub max_tensor_bytes: u64,
    /// Deepest nesting of subgraphs (If/Loop/Scan bodies) and function calls.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_model_bytes: 4 << 30,
            max_tensor_bytes: 8 << 30,
            max_depth: 32,
        }
    }
}

/// Where external tensor data may be read from: the model's directory, or nowhere (a model
/// given as bytes).
#[derive(Debug, Clone, Default)]
pub struct DataDir {
    dir: Option<PathBuf>,
}

impl DataDir {
    pub fn new(dir: Option<&Path>) -> Result<DataDir> {
        let dir = match dir {
            None => None,
            Some(d) => Some(
                d.canonicalize()
                    .map_err(|e| Error::Io(format!("model directory '{}': {e}", d.display())))?,
            ),
        };
        Ok(DataDir { dir })
    }

    /// The file `location` inside the directory; refused when it would leave it (absolute
    /// paths, `..`, symbolic links pointing outside).
    fn resolve(&self, location: &str, tensor: &str) -> Result<PathBuf> {
        let Some(dir) = &self.dir else {
            return Err(Error::tr(format!(
                "tensor '{tensor}' keeps its data in the external file '{location}', but the \
                 model was given as bytes; load it from its path so the file can be found"
            )));
        };
        let rel = Path::new(location);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(Error::tr(format!(
                "tensor '{tensor}': external data location '{location}' must be a relative \
                 path inside the model's directory"
            )));
        }
        let path = dir.join(rel).canonicalize().map_err(|e| {
            Error::Io(format!(
                "tensor '{tensor}': external data file '{location}': {e}"
            ))
        })?;
        if !path.starts_with(dir) {
            return Err(Error::tr(format!(
                "tensor '{tensor}': external data file '{location}' lies outside the model's \
                 directory"
            )));
        }
        Ok(path)
    }
}

/// The IR dtype of an ONNX element type.
pub fn dtype_from_onnx(t: i32) -> Result<DataType> {
    use DataType as D;
    Ok(match elem_type(t) {
        Some(E::Float) => D::FLOAT,
        Some(E::Uint8) => D::UINT8,
        Some(E::Int8) => D::INT8,
        Some(E::Uint16) => D::UINT16,
        Some(E::Int16) => D::INT16,
        Some(E::Int32) => D::INT32,
        Some(E::Int64) => D::INT64,
        Some(E::Bool) => D::BOOL,
        Some(E::Float16) => D::FLOAT16,
        Some(E::Double) => D::DOUBLE,
        Some(E::Uint32) => D::UINT32,
        Some(E::Uint64) => D::UINT64,
        Some(E::Complex64) => D::COMPLEX64,
        Some(E::Complex128) => D::COMPLEX128,
        Some(E::Bfloat16) => D::BF16,
        Some(E::Float8e4m3fn) => D::FLOAT8_E4M3FN,
        Some(E::Float8e5m2) => D::FLOAT8_E5M2,
        Some(E::Float8e8m0) => D::FLOAT8_E8M0,
        Some(E::Float8e4m3fnuz) => D::FLOAT8_E4M3FNUZ,
        Some(E::Float8e5m2fnuz) => D::FLOAT8_E5M2FNUZ,
        Some(E::Int4) => D::INT4,
        Some(E::Uint4) => D::UINT4,
        Some(E::Int2) => D::INT2,
        Some(E::Uint2) => D::UINT2,
        Some(E::Float4e2m1) => D::FLOAT4_E2M1,
        Some(E::Float6e2m3) => D::FLOAT6_E2M3,
        Some(E::Float6e3m2) => D::FLOAT6_E3M2,
        Some(E::String) => D::STRING,
        Some(E::Undefined) => return Err(Error::tr("element type is UNDEFINED")),
        _ => {
            return Err(Error::unsupported(format!(
                "ONNX element type {} has no GE DataType",
                elem_type_name(t)
            )))
        }
    })
}

/// The ONNX element type of an IR dtype, when ONNX has one.
pub fn dtype_to_onnx(d: DataType) -> Option<i32> {
    use DataType as D;
    let e = match d {
        D::FLOAT => E::Float,
        D::UINT8 => E::Uint8,
        D::INT8 => E::Int8,
        D::UINT16 => E::Uint16,
        D::INT16 => E::Int16,
        D::INT32 => E::Int32,
        D::INT64 => E::Int64,
        D::BOOL => E::Bool,
        D::FLOAT16 => E::Float16,
        D::DOUBLE => E::Double,
        D::UINT32 => E::Uint32,
        D::UINT64 => E::Uint64,
        D::COMPLEX64 => E::Complex64,
        D::COMPLEX128 => E::Complex128,
        D::BF16 => E::Bfloat16,
        D::FLOAT8_E4M3FN => E::Float8e4m3fn,
        D::FLOAT8_E5M2 => E::Float8e5m2,
        D::FLOAT8_E8M0 => E::Float8e8m0,
        D::FLOAT8_E4M3FNUZ => E::Float8e4m3fnuz,
        D::FLOAT8_E5M2FNUZ => E::Float8e5m2fnuz,
        D::INT4 => E::Int4,
        D::UINT4 => E::Uint4,
        D::INT2 => E::Int2,
        D::UINT2 => E::Uint2,
        D::FLOAT4_E2M1 => E::Float4e2m1,
        D::FLOAT6_E2M3 => E::Float6e2m3,
        D::FLOAT6_E3M2 => E::Float6e3m2,
        D::STRING => E::String,
        _ => return None,
    };
    Some(e as i32)
}

/// The IR shape of an ONNX tensor type: symbolic and missing dims are -1, a missing shape is
/// unknown rank.
pub fn shape_from_onnx(shape: Option<&crate::proto::TensorShapeProto>) -> Result<Shape> {
    use crate::proto::tensor_shape_proto::dimension::Value;
    let Some(s) = shape else {
        return Ok(Shape::unknown_rank());
    };
    let mut dims = Vec::with_capacity(s.dim.len());
    for d in &s.dim {
        dims.push(match d.value {
            Some(Value::DimValue(v)) if v >= 0 => v,
            Some(Value::DimValue(v)) => {
                return Err(Error::tr(format!(
                    "negative dimension {v} in a tensor type"
                )))
            }
            _ => -1,
        });
    }
    Ok(Shape::new(dims))
}

/// The IR description of a value's type; only tensor types exist in the IR.
pub fn desc_from_type(tp: Option<&TypeProto>, what: &str) -> Result<TensorDesc> {
    match tp.and_then(|t| t.value.as_ref()) {
        None => Ok(TensorDesc::default()),
        Some(type_proto::Value::TensorType(t)) => {
            let dtype = match t.elem_type.filter(|&e| e != E::Undefined as i32) {
                None => DataType::UNDEFINED,
                Some(e) => dtype_from_onnx(e).map_err(|e| e.context(what))?,
            };
            Ok(TensorDesc::new(dtype, shape_from_onnx(t.shape.as_ref())?))
        }
        Some(type_proto::Value::SequenceType(t)) => {
            // A list: DT_VARIANT, its element type in the description's attributes.
            let e = desc_from_type(t.elem_type.as_deref(), what)?;
            crate::ops::sequence::list_desc(&e, what)
        }
        Some(type_proto::Value::OptionalType(t)) => {
            let e = desc_from_type(t.elem_type.as_deref(), what)?;
            crate::ops::sequence::optional_desc(&e, what)
        }
        Some(type_proto::Value::MapType(_)) => Err(Error::unsupported(format!(
            "{what} is a map (the IR has tensors only)"
        ))),
        Some(type_proto::Value::SparseTensorType(_)) => {
            Err(Error::unsupported(format!("{what} is a sparse tensor")))
        }
        Some(type_proto::Value::OpaqueType(_)) => {
            Err(Error::unsupported(format!("{what} has an opaque type")))
        }
    }
}

/// The ONNX type of an IR description.
pub fn type_from_desc(d: &TensorDesc) -> Result<TypeProto> {
    use crate::proto::tensor_shape_proto::{dimension::Value, Dimension};
    let elem = if d.dtype == DataType::UNDEFINED {
        E::Undefined as i32
    } else {
        dtype_to_onnx(d.dtype).ok_or_else(|| {
            Error::unsupported(format!("dtype {} has no ONNX element type", d.dtype))
        })?
    };
    let shape = if d.shape.is_unknown_rank() {
        None
    } else {
        Some(crate::proto::TensorShapeProto {
            dim: d
                .shape
                .dims()
                .iter()
                .map(|&v| Dimension {
                    denotation: None,
                    value: (v >= 0).then_some(Value::DimValue(v)),
                })
                .collect(),
        })
    };
    Ok(TypeProto {
        denotation: None,
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: Some(elem),
            shape,
        })),
    })
}

fn element_count(dims: &[i64], name: &str, limits: &Limits, elem_size: usize) -> Result<usize> {
    let mut n: u128 = 1;
    for &d in dims {
        if d < 0 {
            return Err(Error::tr(format!(
                "tensor '{name}' has a negative dimension {d}"
            )));
        }
        n = n.saturating_mul(d as u128);
    }
    if n.saturating_mul(elem_size as u128) > limits.max_tensor_bytes as u128 {
        return Err(Error::tr(format!(
            "tensor '{name}' of shape {dims:?} is larger than the limit of {} bytes",
            limits.max_tensor_bytes
        )));
    }
    Ok(n as usize)
}

/// Reads `length` bytes at `offset` from an external data file.
fn read_external(t: &TensorProto, name: &str, dir: &DataDir, limits: &Limits) -> Result<Vec<u8>> {
    let mut location = None;
    let mut offset: u64 = 0;
    let mut length: Option<u64> = None;
    for kv in &t.external_data {
        let v = kv.value.as_deref().unwrap_or("");
        let num = |what: &str| {
            v.parse::<u64>().map_err(|_| {
                Error::tr(format!(
                    "tensor '{name}': external data {what} '{v}' is not a number"
                ))
            })
        };
        match kv.key.as_deref() {
            Some("location") => location = Some(v.to_string()),
            Some("offset") => offset = num("offset")?,
            Some("length") => length = Some(num("length")?),
            _ => {}
        }
    }
    let location = location.ok_or_else(|| {
        Error::tr(format!(
            "tensor '{name}' has external data without a location"
        ))
    })?;
    let path = dir.resolve(&location, name)?;
    let mut f = std::fs::File::open(&path)
        .map_err(|e| Error::Io(format!("tensor '{name}': {}: {e}", path.display())))?;
    let size = f
        .metadata()
        .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?
        .len();
    let length = length.unwrap_or(size.saturating_sub(offset));
    if offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(Error::tr(format!(
            "tensor '{name}': external data [{offset}, {offset}+{length}) is past the end of \
             '{location}' ({size} bytes)"
        )));
    }
    if length > limits.max_tensor_bytes {
        return Err(Error::tr(format!(
            "tensor '{name}': external data of {length} bytes is larger than the limit of {} \
             bytes",
            limits.max_tensor_bytes
        )));
    }
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    let mut buf = vec![0u8; length as usize];
    f.read_exact(&mut buf)
        .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    Ok(buf)
}

/// An IR tensor from an ONNX tensor (any storage field, raw or external data).
pub fn tensor_from_proto(t: &TensorProto, dir: &DataDir, limits: &Limits) -> Result<Tensor> {
    let name = t.name.as_deref().unwrap_or("");
    let what = if name.is_empty() {
        "a tensor".to_string()
    } else {
        format!("tensor '{name}'")
    };
    let onnx_type = t.data_type.unwrap_or(E::Undefined as i32);
    let dtype = dtype_from_onnx(onnx_type).map_err(|e| e.context(&what))?;
    if dtype == DataType::STRING {
        return string_tensor_from_proto(t, &what, limits);
    }
    // Sub-byte types are packed (ONNX's order: the first element in the lowest bits), in
    // raw_data and in int32_data (one packed byte an entry) alike.
    if dtype.bits().is_none() {
        return Err(Error::unsupported(format!(
            "{what}: element type {}",
            elem_type_name(onnx_type)
        )));
    }
    let size = dtype.size().unwrap_or(1);
    let n = element_count(&t.dims, name, limits, size)?;
    let desc = TensorDesc::new(dtype, Shape::new(t.dims.clone()));
    let want = dtype.bytes_for(n).unwrap_or(usize::MAX);
    let data: Vec<u8> = if t.data_location() == DataLocation::External {
        read_external(t, name, dir, limits)?
    } else if let Some(raw) = &t.raw_data {
        raw.clone()
    } else {
        let mut out = Vec::with_capacity(want);
        let count_err = |got: usize| {
            Error::tr(format!(
                "{what} of shape {:?} needs {n} values, the model gives {got}",
                t.dims
            ))
        };
        match elem_type(onnx_type) {
            Some(E::Float | E::Complex64) => {
                for v in &t.float_data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Some(E::Double | E::Complex128) => {
                for v in &t.double_data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Some(E::Int64) => {
                for v in &t.int64_data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Some(E::Uint32) => {
                for v in &t.uint64_data {
                    out.extend_from_slice(&(*v as u32).to_le_bytes());
                }
            }
            Some(E::Uint64) => {
                for v in &t.uint64_data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Some(E::Int32) => {
                for v in &t.int32_data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Some(E::Int16 | E::Uint16 | E::Float16 | E::Bfloat16) => {
                for v in &t.int32_data {
                    out.extend_from_slice(&(*v as u16).to_le_bytes());
                }
            }
            Some(
                E::Int8
                | E::Uint8
                | E::Bool
                | E::Float8e4m3fn
                | E::Float8e4m3fnuz
                | E::Float8e5m2
                | E::Float8e5m2fnuz
                | E::Float8e8m0
                | E::Int4
                | E::Uint4
                | E::Int2
                | E::Uint2
                | E::Float4e2m1,
            ) => {
                for v in &t.int32_data {
                    out.push(*v as u8);
                }
            }
            _ => {
                return Err(Error::unsupported(format!(
                    "{what}: element type {}",
                    elem_type_name(onnx_type)
                )))
            }
        }
        if out.len() != want {
            return Err(count_err(out.len() / size));
        }
        out
    };
    if data.len() != want {
        return Err(Error::tr(format!(
            "{what} of shape {:?} and type {} needs {want} bytes, the model gives {}",
            t.dims,
            elem_type_name(onnx_type),
            data.len()
        )));
    }
    Tensor::new(desc, data).map_err(|e| Error::tr(format!("{what}: {e}")))
}

/// A `DT_STRING` tensor from an ONNX tensor's `string_data` (ONNX keeps strings nowhere else).
fn string_tensor_from_proto(t: &TensorProto, what: &str, limits: &Limits) -> Result<Tensor> {
    let n = element_count(&t.dims, t.name.as_deref().unwrap_or(""), limits, 16)?;
    if t.raw_data.is_some() || t.data_location() == DataLocation::External {
        return Err(Error::tr(format!(
            "{what}: a string tensor keeps its values in string_data, not raw or external data"
        )));
    }
    if t.string_data.len() != n {
        return Err(Error::tr(format!(
            "{what} of shape {:?} needs {n} values, the model gives {}",
            t.dims,
            t.string_data.len()
        )));
    }
    let strings: Vec<String> = t
        .string_data
        .iter()
        .enumerate()
        .map(|(i, b)| {
            String::from_utf8(b.clone())
                .map_err(|e| Error::tr(format!("{what}: string {i} is not UTF-8: {e}")))
        })
        .collect::<Result<_>>()?;
    Tensor::from_strings(&strings, t.dims.clone()).map_err(|e| Error::tr(format!("{what}: {e}")))
}

/// An ONNX tensor (raw data; strings in `string_data`) from an IR tensor.
pub fn tensor_to_proto(t: &Tensor, name: &str) -> Result<TensorProto> {
    let elem = dtype_to_onnx(t.desc.dtype).ok_or_else(|| {
        Error::unsupported(format!(
            "tensor '{name}': dtype {} has no ONNX element type",
            t.desc.dtype
        ))
    })?;
    let mut p = TensorProto {
        dims: t.desc.shape.dims().to_vec(),
        data_type: Some(elem),
        name: (!name.is_empty()).then(|| name.to_string()),
        ..Default::default()
    };
    if t.desc.dtype == DataType::STRING {
        let strings = t
            .string_bytes()
            .map_err(|e| Error::tr(format!("tensor '{name}': {e}")))?;
        p.string_data = strings.into_iter().map(<[u8]>::to_vec).collect();
    } else {
        p.raw_data = Some(t.data.as_ref().clone());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn typed_fields_and_raw_data_agree() {
        let raw = TensorProto {
            dims: vec![2],
            data_type: Some(E::Float as i32),
            raw_data: Some([1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()),
            ..Default::default()
        };
        let typed = TensorProto {
            dims: vec![2],
            data_type: Some(E::Float as i32),
            float_data: vec![1.5, -2.0],
            ..Default::default()
        };
        let d = DataDir::default();
        assert_eq!(
            tensor_from_proto(&raw, &d, &limits()).unwrap(),
            tensor_from_proto(&typed, &d, &limits()).unwrap()
        );
    }

    #[test]
    fn half_and_bool_from_int32_data() {
        // (element type, int32_data, the bytes of the tensor)
        let cases: [(E, Vec<i32>, &[u8]); 2] = [
            (E::Float16, vec![0x3c00], &[0x00, 0x3c]),
            (E::Bool, vec![1, 0, 1], &[1, 0, 1]),
        ];
        for (ty, int32_data, bytes) in cases {
            let p = TensorProto {
                dims: vec![int32_data.len() as i64],
                data_type: Some(ty as i32),
                int32_data,
                ..Default::default()
            };
            let t = tensor_from_proto(&p, &DataDir::default(), &limits()).unwrap();
            assert_eq!(t.data.as_slice(), bytes);
        }
    }

    #[test]
    fn wrong_counts_and_sizes_are_errors() {
        let short = TensorProto {
            dims: vec![3],
            data_type: Some(E::Float as i32),
            float_data: vec![1.0],
            ..Default::default()
        };
        let e = tensor_from_proto(&short, &DataDir::default(), &limits()).unwrap_err();
        assert!(e.to_string().contains("needs 3 values"), "{e}");
        let huge = TensorProto {
            dims: vec![1 << 40, 1 << 40],
            data_type: Some(E::Float as i32),
            ..Default::default()
        };
        let e = tensor_from_proto(&huge, &DataDir::default(), &limits()).unwrap_err();
        assert!(e.to_string().contains("larger than the limit"), "{e}");
        let neg = TensorProto {
            dims: vec![-1],
            data_type: Some(E::Float as i32),
            ..Default::default()
        };
        assert!(tensor_from_proto(&neg, &DataDir::default(), &limits()).is_err());
        let s = TensorProto {
            dims: vec![1],
            data_type: Some(E::String as i32),
            ..Default::default()
        };
        // A string tensor needs its string_data (strings are DT_STRING tensors now).
        let e = tensor_from_proto(&s, &DataDir::default(), &limits()).unwrap_err();
        assert!(
            e.to_string().contains("needs 1 values, the model gives 0"),
            "{e}"
        );
        let raw = TensorProto {
            raw_data: Some(vec![0; 16]),
            ..s.clone()
        };
        let e = tensor_from_proto(&raw, &DataDir::default(), &limits()).unwrap_err();
        assert!(e.to_string().contains("string_data"), "{e}");
        let ok = TensorProto {
            string_data: vec![b"ab".to_vec()],
            ..s
        };
        let t = tensor_from_proto(&ok, &DataDir::default(), &limits()).unwrap();
        assert_eq!(t.strings().unwrap(), ["ab"]);
        let back = tensor_to_proto(&t, "s").unwrap();
        assert_eq!(
            (back.string_data, back.raw_data),
            (vec![b"ab".to_vec()], None)
        );
    }

    #[test]
    fn external_data_stays_inside_the_model_directory() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("model");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(inner.join("w.bin"), [0u8, 0, 128, 63, 0, 0, 0, 64]).unwrap();
        std::fs::write(dir.path().join("secret.bin"), [0u8; 8]).unwrap();
        let ext = |loc: &str, offset: &str, length: &str| TensorProto {
            dims: vec![1],
            data_type: Some(E::Float as i32),
            name: Some("w".into()),
            data_location: Some(DataLocation::External as i32),
            external_data: vec![
                crate::proto::StringStringEntryProto {
                    key: Some("location".into()),
                    value: Some(loc.into()),
                },
                crate::proto::StringStringEntryProto {
                    key: Some("offset".into()),
                    value: Some(offset.into()),
                },
                crate::proto::StringStringEntryProto {
                    key: Some("length".into()),
                    value: Some(length.into()),
                },
            ],
            ..Default::default()
        };
        let d = DataDir::new(Some(&inner)).unwrap();
        let t = tensor_from_proto(&ext("w.bin", "4", "4"), &d, &limits()).unwrap();
        assert_eq!(t.values::<f32>().unwrap(), vec![2.0]);
        for bad in ["../secret.bin", "/etc/passwd", "./../secret.bin"] {
            let e = tensor_from_proto(&ext(bad, "0", "4"), &d, &limits()).unwrap_err();
            assert!(
                e.to_string().contains("inside the model's directory"),
                "{bad}: {e}"
            );
        }
        let e = tensor_from_proto(&ext("w.bin", "6", "4"), &d, &limits()).unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
        let e =
            tensor_from_proto(&ext("w.bin", "0", "4"), &DataDir::default(), &limits()).unwrap_err();
        assert!(e.to_string().contains("given as bytes"), "{e}");
    }
}
