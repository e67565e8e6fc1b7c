//! ONNX's protobuf messages, as prost types generated at build time from `proto/onnx.proto`
//! (ONNX 1.23.2, proto2 syntax; see `build.rs`: prost-build over protox, no `protoc`).
//!
//! Every message and field of the schema is here; ge-rs reads and writes a subset (fields it
//! does not use stay empty on export). Enum-typed fields are `Option<i32>` with a getter
//! returning the enum (`AttributeProto::r#type()`, `TensorProto::data_location()`); fields
//! ONNX declares as `int32` but fills with `TensorProto.DataType` values (`data_type`,
//! `elem_type`, `key_type`) are compared through [`ElemType`].

/// The code prost-build generated (its doc comments are ONNX's, as written in the schema).
#[allow(clippy::all)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}

pub use generated::*;

pub use attribute_proto::AttributeType;
pub use tensor_proto::{DataLocation, DataType as ElemType};

/// The ONNX name of an element type (`TensorProto.DataType`), for messages.
pub fn elem_type_name(t: i32) -> String {
    match ElemType::try_from(t) {
        Ok(e) => e.as_str_name().to_string(),
        Err(_) => format!("element type {t}"),
    }
}

/// The element type of an `int32` field that holds a `TensorProto.DataType` value, `None` when
/// the value is not one of the enum's.
pub fn elem_type(t: i32) -> Option<ElemType> {
    ElemType::try_from(t).ok()
}

impl NodeProto {
    /// The domain, with `ai.onnx` spelled as the empty string.
    pub fn onnx_domain(&self) -> &str {
        match self.domain.as_deref() {
            None | Some("ai.onnx") => "",
            Some(d) => d,
        }
    }
    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }
}

impl ModelProto {
    pub fn decode_bytes(bytes: &[u8]) -> Result<ModelProto, prost::DecodeError> {
        <ModelProto as prost::Message>::decode(bytes)
    }
}
