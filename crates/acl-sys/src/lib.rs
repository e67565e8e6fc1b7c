//! acl-sys: the raw bindings to Huawei's ACL runtime (Ascend NPUs) and their loader.
//!
//! Nothing links against CANN: [`Api::load`] finds `libascendcl.so`, `libnnopbase.so` and
//! `libopapi.so` under `$ASCEND_HOME_PATH/lib64`, `$ASCEND_TOOLKIT_HOME/lib64`, then
//! `/usr/local/Ascend/ascend-toolkit/latest/lib64`, and resolves the functions declared in
//! [`ffi`] (exactly as CANN's public headers declare them) into tables of function pointers.
//! A missing library is a [`LoadError::NotFound`] that names the directories searched and says
//! to source `set_env.sh`. The graph-capture functions (`aclmdlRI*`, CANN 8.2 and later) are
//! optional: without them [`Api::has_capture`] is false and eager launches still work.
//!
//! The safe layer over these functions (devices, streams, buffers, capture, aclnn tensors
//! and executors, each releasing its ACL object in `Drop`) is `ge_acl::acl`; the ge-rs
//! backend that runs graphs through it is the `ge-acl` crate.
//!
//! No NPU was available where this crate was written. With the `test-double` feature,
//! [`test_double`] builds a small C library that stands in for ACL (named a test double
//! everywhere; it is not Huawei's runtime and says nothing about running on hardware).
//!
//! ```no_run
//! let api = acl_sys::Api::load()?;
//! println!("ACL from {}, capture: {}", api.dir().display(), api.has_capture());
//! # Ok::<(), acl_sys::LoadError>(())
//! ```

mod api;
mod error;
pub mod ffi;
#[cfg(feature = "test-double")]
pub mod test_double;

pub use api::{
    search_dirs, Api, Capture as CaptureFns, Nnopbase, OpFns, Ops, Runtime as RuntimeFns,
    DEFAULT_TOOLKIT, NNOPBASE_LIBRARY, OPAPI_LIBRARY, RUNTIME_LIBRARY,
};
pub use error::{LoadError, Result};
