//! Errors of the ONNX importer and exporter. Every variant reaches Python as
//! `ge.TranslationError`, except [`Error::Core`] outside a node, which keeps es-core's mapping.

use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// The model is malformed, or one of its nodes cannot be translated; the message names
    /// the node (or graph, tensor, attribute) at fault.
    #[error("{0}")]
    Translation(String),
    /// Operator types no translator handles: `(op type, a node using it)`, one per type; the
    /// node is `node 'name'`, or `node producing 'output'` for an unnamed one.
    #[error("{}", unsupported_message(.0))]
    Unsupported(Vec<(String, String)>),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// A feature ge-rs does not have.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// An error of the IR (building or inferring a node), outside any ONNX node.
    #[error(transparent)]
    Core(#[from] es_core::Error),
}

fn unsupported_message(ops: &[(String, String)]) -> String {
    let list: Vec<String> = ops
        .iter()
        .map(|(op, node)| format!("{op} ({node})"))
        .collect();
    format!(
        "not supported: {} ONNX operator type{} without a translator: {}; load with \
         unsupported=\"opaque\" to keep them as nodes a pass can replace, or register a \
         translator with ge.onnx.register_translator",
        ops.len(),
        if ops.len() == 1 { "" } else { "s" },
        list.join(", ")
    )
}

impl Error {
    pub fn tr(msg: impl Into<String>) -> Self {
        Error::Translation(msg.into())
    }
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Error::NotSupported(msg.into())
    }
    /// This error with `context: ` in front (IR errors become translation errors).
    pub fn context(self, context: &str) -> Self {
        match self {
            Error::Translation(m) => Error::Translation(format!("{context}: {m}")),
            Error::NotSupported(m) => Error::NotSupported(format!("{context}: {m}")),
            Error::Io(m) => Error::Io(format!("{context}: {m}")),
            Error::Core(es_core::Error::NotSupported(m)) => {
                Error::NotSupported(format!("{context}: {m}"))
            }
            Error::Core(e) => Error::Translation(format!("{context}: {e}")),
            e @ Error::Unsupported(_) => e,
        }
    }
}
