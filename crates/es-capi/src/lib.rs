//! es-capi: GE's C ES API (`esb_funcs.h` and one `Es<Op>` per operator of the library) over
//! es-core's builder and ge-runtime's CPU session, built as a `cdylib` and a `staticlib`; the
//! header-only C++ API (namespace `es`) in `include/` calls it.
//!
//! Every entry point catches panics and reports failures through its return value (a status
//! code, NULL, or a zeroed output struct) and the thread-local `EsGetLastErrorMessage`. The
//! headers in `include/` and `src/ops_generated.rs` are generated from the operator library by
//! `codegen/gen.rs`; `cargo test -p es-capi` checks they are current
//! (`ES_CAPI_REGEN=1 cargo test -p es-capi --test generated_current` rewrites them).
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
#[rustfmt::skip]
pub mod ops_generated;
pub mod tensor;
#[cfg(test)]
mod tests;

pub use builder::*;
pub use error::*;
pub use graph::*;
pub use ops_generated::*;
pub use tensor::*;
