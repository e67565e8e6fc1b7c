//! Errors of compiling and running graphs.

use thiserror::Error;

#[derive(Debug, Clone, Error, PartialEq)]
pub enum Error {
    /// Something the backend does not do (an operator without a kernel, a dtype, an
    /// attribute value); the message starts with "not supported: ".
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A kernel failed on a node (bad values at run time, such as an index out of range).
    #[error("node '{node}' ({op}): {message}")]
    Execution {
        node: String,
        op: String,
        message: String,
    },
    /// The inputs given to a run do not fit the graph.
    #[error("{0}")]
    Input(String),
    /// An unknown or malformed option.
    #[error("{0}")]
    Option(String),
    /// The graph could not be compiled (validation, a pass).
    #[error("{0}")]
    Compile(String),
    /// Shape or dtype inference for the fed inputs failed at compile.
    #[error("{0}")]
    ShapeInference(String),
    /// A graph id that is not (or already) in the session.
    #[error("{0}")]
    Graph(String),
    /// A device or its runtime is unavailable.
    #[error("{0}")]
    Device(String),
    /// Not enough memory: a plan whose peak is over the memory limit (`ge.memoryLimit`), a
    /// buffer over it, or an allocation the allocator refused.
    #[error("{0}")]
    Resource(String),
}

impl Error {
    pub fn unsupported(m: impl Into<String>) -> Self {
        Error::Unsupported(m.into())
    }
    /// A kernel's own error (without the node), to be wrapped by the executor.
    pub fn kernel(m: impl Into<String>) -> Self {
        Error::Execution {
            node: String::new(),
            op: String::new(),
            message: m.into(),
        }
    }
    /// Names the node where a kernel error happened.
    pub fn at(self, node: &str, op: &str) -> Self {
        match self {
            Error::Execution { message, .. } => Error::Execution {
                node: node.to_string(),
                op: op.to_string(),
                message,
            },
            Error::Unsupported(m) => Error::Unsupported(format!("{m} (node '{node}', {op})")),
            Error::Resource(m) => Error::Resource(format!("node '{node}' ({op}): {m}")),
            e => e,
        }
    }
}

impl From<es_core::Error> for Error {
    fn from(e: es_core::Error) -> Self {
        Error::Compile(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;
