//! The error type of es-core. Every variant maps to one class of the Python `ge.GeError` tree
//! (or to the built-in ValueError/TypeError/RuntimeError where GE's API specifies those).

use thiserror::Error;

/// Result alias used across es-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// A graph cannot be built as asked (bad op call, bad edge, cycle, invalid graph).
    #[error("{0}")]
    GraphBuild(String),
    /// Shape or dtype inference failed.
    #[error("{0}")]
    ShapeInference(String),
    /// A graph or prototype is not compatible with the requested operator-library version.
    #[error("{0}")]
    Compatibility(String),
    /// A file could not be read or written, or is not a valid graph file.
    #[error("{0}")]
    Serialization(String),
    /// A bad value (maps to Python `ValueError`).
    #[error("{0}")]
    Value(String),
    /// A value of the wrong kind (maps to Python `TypeError`).
    #[error("{0}")]
    Type(String),
    /// An object used in a state where the operation is not allowed (maps to `RuntimeError`).
    #[error("{0}")]
    State(String),
    /// A feature ge-rs does not have.
    #[error("not supported: {0}")]
    NotSupported(String),
}

/// `Error::<ctor>(msg)`: the constructor of each message-carrying variant.
macro_rules! constructors {
    ($($ctor:ident => $variant:ident),* $(,)?) => {
        impl Error {
            $(
                pub fn $ctor(msg: impl Into<String>) -> Self {
                    Error::$variant(msg.into())
                }
            )*
        }
    };
}

constructors! {
    build => GraphBuild,
    infer => ShapeInference,
    value => Value,
    type_err => Type,
    state => State,
    serial => Serialization,
}
