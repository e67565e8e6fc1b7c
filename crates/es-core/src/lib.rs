//! es-core: the IR of ge-rs and everything that needs only the IR.
//!
//! - [`types`]: `DataType`, `Format`, `Shape`, `TensorDesc`, `Tensor` with GE's names and values;
//! - [`attr`]: attribute values of every type of GE's attribute table;
//! - [`graph`]: the graph arena (nodes, data and control edges, subgraphs, validation);
//! - [`ops`]: operator prototypes and the operator library in `ops/`;
//! - [`infer`]: shape and dtype inference rules;
//! - [`opmath`]: the operator arithmetic every layer shares (window sizes and padding,
//!   broadcasting, einsum equations, StridedSlice masks, typed attribute getters);
//! - [`builder`]: the eager-style builder that validates and infers each op call;
//! - [`es`]: typed builder functions, one per operator, generated from the library;
//! - [`strings`]: string tensors (`DT_STRING`) in GE's layout (`StringHead` records, then bytes);
//! - [`serialize`] and [`dump`]: the native file format and text dumps;
//! - [`regop`]: GE's REG_OP prototype text → prototypes;
//! - [`compat`]: adapting a graph between operator-library versions;
//! - [`pattern`]: pattern matching and subgraph rewriting (GE's matcher semantics), boundaries
//!   given by anchors and the fusability check of GE's pass API.

pub mod attr;
pub mod builder;
pub mod compat;
pub mod dump;
pub mod error;
pub mod es;
pub mod graph;
pub mod infer;
pub mod opmath;
pub mod ops;
pub mod pattern;
pub mod regop;
pub mod serialize;
pub mod strings;
pub mod types;

pub use attr::{AttrMap, AttrType, AttrValue};
pub use builder::{GraphBuilder, OpArgs};
pub use error::{Error, Result};
pub use graph::{Graph, InPort, Node, NodeId, OutPort};
pub use ops::{OpProto, OpRegistry};
pub use types::{DataType, Format, Placement, Shape, SharedDesc, Tensor, TensorDesc};
