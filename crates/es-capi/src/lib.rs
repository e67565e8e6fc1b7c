//! es-capi: GE's C ES API (`esb_funcs.h` and one `Es<Op>` per operator of the library) over
//! es-core's builder and ge-runtime's CPU session, built as a `cdylib` and a `staticlib`; the
//! header-only C++ API (namespace `es`: `include/es_graph_builder.h` and the generated
//! per-operator headers) calls it.
//!
//! Every entry point catches panics and reports failures through its return value (a status
//! code, NULL, or a zeroed output struct) and the thread-local `EsGetLastErrorMessage`. The
//! per-operator code ([`ops_generated`]) and headers are generated from the operator library by
//! `codegen/gen.rs` at build time (`build.rs`, into `OUT_DIR`); the core headers in `include/`
//! are hand-written.
//!
//! ```
//! use es_capi::*;
//! unsafe {
//!     let b = EsCreateGraphBuilder(c"add".as_ptr());
//!     let x = EsCreateGraphInput(b, 0);
//!     let one = EsCreateScalarFloat(b, 1.0);
//!     let y = EsAdd(x, one);
//!     assert_eq!(EsSetGraphOutput(y, 0), ES_SUCCESS);
//!     let g = EsBuildGraphAndReset(b);
//!     assert!(!g.is_null());
//!     EsDestroyGraph(g);
//!     EsDestroyGraphBuilder(b);
//! }
//! ```
#![allow(clippy::missing_safety_doc, non_snake_case)]

pub mod builder;
pub mod error;
pub mod ffi;
pub mod graph;
pub mod opcall;
/// One `Es<Op>` per operator (and signature), generated at build time by `codegen/gen.rs`.
#[allow(clippy::too_many_arguments, unused_mut, non_snake_case)]
pub mod ops_generated {
    include!(concat!(env!("OUT_DIR"), "/ops_generated.rs"));
}
pub mod tensor;
#[cfg(test)]
mod tests;

pub use builder::*;
pub use error::*;
pub use graph::*;
pub use ops_generated::*;
pub use tensor::*;
