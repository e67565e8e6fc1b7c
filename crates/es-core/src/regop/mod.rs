//! A parser for GE's operator prototype text: the `REG_OP` macro language of the CANN operator
//! headers.
//!
//! ```text
//! /**
//! * @brief Multiplies matrix "a" by matrix "b", producing "a * b".
//! */
//! REG_OP(MatMulV2)
//!     .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
//!     .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
//!     .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
//!     .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
//!     .ATTR(transpose_x1, Bool, false)
//!     .OP_END_FACTORY_REG(MatMulV2)
//! ```
//!
//! [`parse_regop`] turns every `REG_OP(..)...OP_END_FACTORY_REG(..)` block of a text into an
//! [`OpProto`](crate::ops::OpProto). Everything outside the blocks (includes, namespaces, other C++ code, comments,
//! preprocessor lines) is skipped; the nearest comment before a block gives the prototype's
//! `doc` (the first sentence of its `@brief`).
//!
//! Chained methods: `INPUT`, `OPTIONAL_INPUT`, `DYNAMIC_INPUT`, `OUTPUT`, `DYNAMIC_OUTPUT`,
//! `ATTR`, `REQUIRED_ATTR`, `GRAPH`, `DYNAMIC_GRAPH`, `DATATYPE` and `INFER_SHAPE_AND_TYPE`
//! (accepted and ignored). Type expressions: `TensorType({DT_A, DT_B})`, `TensorType(DT_A)`,
//! `TensorType{DT_A}`, `TensorType::<Set>()`, a bare `DT_A`, `ListTensorType(<type>)`, unions
//! of these inside `TensorType(...)`, and `"T"` (a `DATATYPE` type variable).
//!
//! Errors are [`Error::Value`](crate::error::Error::Value) whose message starts with the 1-based line (and column) of the
//! problem. The parser never panics, whatever the input.
//!
//! The work is split by stage: `lex` (tokens and comments), `parse` (the chained methods,
//! type expressions and the default-value expressions), `value` (default values converted to
//! attribute values), `proto` (a block assembled into a checked prototype) and `doc` (the
//! doc sentence of the comment before a block).

mod doc;
mod lex;
mod parse;
mod proto;
mod value;

pub use parse::parse_regop;
