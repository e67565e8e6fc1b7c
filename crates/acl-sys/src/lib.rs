//! acl-sys: Huawei's ACL runtime (Ascend NPUs) for ge-rs, loaded at run time.
//!
//! Nothing links against CANN: [`Api::load`] finds `libascendcl.so`, `libnnopbase.so` and
//! `libopapi.so` under `$ASCEND_HOME_PATH/lib64`, `$ASCEND_TOOLKIT_HOME/lib64`, then
//! `/usr/local/Ascend/ascend-toolkit/latest/lib64`, and resolves the functions declared in
//! [`ffi`] (exactly as CANN's public headers declare them). A missing library is an
//! [`Error::NotFound`] that names the directories searched and says to source `set_env.sh`.
//! The graph-capture functions (`aclmdlRI*`, CANN 8.2 and later) are optional: without them
//! [`Api::has_capture`] is false and eager launches still work.
//!
//! The safe layer ([`Acl`], [`Device`], [`Stream`], [`DeviceBuffer`], [`HostBuffer`],
//! [`Capture`], [`CapturedGraph`], and in [`ops`] tensors and aclnn executors) owns every ACL
//! object and releases it in `Drop`; every failing call becomes an [`Error::Acl`] carrying
//! `aclGetRecentErrMsg()`. While a stream captures, the calls ACL forbids during capture
//! (allocation, synchronous copies, synchronisation) cannot be made: see [`Capture`].
//!
//! No NPU was available where this crate was written: it is tested against [`test_double`],
//! a small C library that stands in for ACL (named a test double everywhere; it is not
//! Huawei's runtime and says nothing about running on hardware).
//!
//! ```no_run
//! use acl_sys::{ops, Acl, Tensor};
//! let acl = Acl::init()?; // loads the libraries and calls aclInit once
//! let device = acl.open_device(0)?;
//! let mut stream = device.create_stream()?;
//! let x = device.alloc(16)?;
//! let y = device.alloc(16)?;
//! let xs: Vec<u8> = [-1.0f32, 2.0, -3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! device.copy_to_device(&x, 0, &xs)?;
//! let api = acl.api();
//! let (tx, ty) = (
//!     Tensor::contiguous(api, acl_sys::ffi::ACL_FLOAT, &[4], &x)?,
//!     Tensor::contiguous(api, acl_sys::ffi::ACL_FLOAT, &[4], &y)?,
//! );
//! stream.launch(ops::unary(api, ops::Unary::Relu, &tx, &ty)?, None)?;
//! stream.synchronize()?;
//! let mut out = [0u8; 16];
//! device.copy_from_device(&mut out, &y, 0)?;
//! # Ok::<(), acl_sys::Error>(())
//! ```

mod api;
mod error;
pub mod ffi;
pub mod ops;
mod runtime;
pub mod test_double;

pub use api::{
    search_dirs, Api, Capture as CaptureFns, Nnopbase, OpFns, Ops, Runtime as RuntimeFns,
    DEFAULT_TOOLKIT, NNOPBASE_LIBRARY, OPAPI_LIBRARY, RUNTIME_LIBRARY,
};
pub use error::{Error, Result};
pub use ops::{Executor, IntArray, Scalar, Tensor};
pub use runtime::{Acl, Capture, CapturedGraph, Device, DeviceBuffer, HostBuffer, Stream};
