//! ge-onnx: ONNX models ⇄ the ge-rs IR.
//!
//! - [`proto`]: ONNX's protobuf messages (prost, no `protoc` needed);
//! - [`types`]: the TypeTranslator (element types, value infos, tensors, external data);
//! - [`attrs`]: the AttributeTranslator (typed attribute values, coercion to GE types);
//! - [`compat`]: OpCompatInfo (opset differences resolved to the newest form);
//! - [`translate`]: the ProgramTranslator and the [`NodeCtx`] translators work through;
//! - [`ops`]: the built-in OpTranslator registry (the table `ops/onnx_mapping.json` plus
//!   special handlers);
//! - [`fuzz`]: the mutation fuzzer of the loaders (ONNX and the native graph format).
//!
//! ```no_run
//! let graph = ge_onnx::load_file("model.onnx".as_ref(), &ge_onnx::Options::default())?;
//! println!("{} nodes", graph.node_count());
//! # Ok::<(), ge_onnx::Error>(())
//! ```

pub mod air;
pub mod attrs;
pub mod compat;
pub mod error;
pub mod export;
pub mod fuzz;
pub mod ops;
pub mod proto;
pub mod text;
pub mod translate;
pub mod types;

pub use error::{Error, Result};
pub use translate::{
    op_key, unify_captures, NodeCtx, OpTranslator, Options, Registry, Subgraph, UnsupportedMode,
};
pub use types::{DataDir, Limits};

use prost::Message;
use std::path::Path;

/// Decodes a model, bounded by `limits`.
pub fn decode_model(bytes: &[u8], limits: &Limits) -> Result<proto::ModelProto> {
    if bytes.len() as u64 > limits.max_model_bytes {
        return Err(Error::tr(format!(
            "the model is {} bytes, larger than the limit of {} bytes",
            bytes.len(),
            limits.max_model_bytes
        )));
    }
    proto::ModelProto::decode(bytes)
        .map_err(|e| Error::tr(format!("not a valid ONNX model (protobuf): {e}")))
}

/// Translates a model held in memory with `registry`; external data cannot be read.
pub fn load_bytes_with(
    bytes: &[u8],
    registry: &Registry,
    options: &Options,
) -> Result<es_core::Graph> {
    let model = decode_model(bytes, &options.limits)?;
    translate::translate_model(&model, registry, DataDir::default(), options.clone())
}

/// Translates the model file at `path` with `registry`; external data is read from the
/// file's directory only.
pub fn load_file_with(
    path: &Path,
    registry: &Registry,
    options: &Options,
) -> Result<es_core::Graph> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    if meta.len() > options.limits.max_model_bytes {
        return Err(Error::tr(format!(
            "{}: the model is {} bytes, larger than the limit of {} bytes",
            path.display(),
            meta.len(),
            options.limits.max_model_bytes
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    let model = decode_model(&bytes, &options.limits)?;
    let dir = DataDir::new(Some(path.parent().unwrap_or(Path::new("."))))?;
    translate::translate_model(&model, registry, dir, options.clone())
}

/// [`load_bytes_with`] with the built-in registry.
pub fn load_bytes(bytes: &[u8], options: &Options) -> Result<es_core::Graph> {
    load_bytes_with(bytes, ops::builtin(), options)
}

/// [`load_file_with`] with the built-in registry.
pub fn load_file(path: &Path, options: &Options) -> Result<es_core::Graph> {
    load_file_with(path, ops::builtin(), options)
}
