//! The safe layer over ACL's raw functions ([`acl_sys`]).
//!
//! [`Acl`], [`Device`], [`Stream`], [`DeviceBuffer`], [`HostBuffer`], [`Capture`],
//! [`CapturedGraph`], and in [`ops`] tensors and aclnn executors, own every ACL object and
//! release it in `Drop`; every failing call becomes an [`Error::Acl`] carrying
//! `aclGetRecentErrMsg()`. While a stream captures, the calls ACL forbids during capture
//! (allocation, synchronous copies, synchronisation) cannot be made: see [`Capture`].
//!
//! The modules are layered without cycles: [`error`] and `memory` (buffers and the
//! per-device state) below [`ops`] (tensors, executors, the aclnn first phase) below
//! `runtime` (devices, streams, capture, which launch executors).
//!
//! ```no_run
//! use ge_acl::acl::{ops, Acl, Tensor};
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
//! # Ok::<(), ge_acl::acl::Error>(())
//! ```

pub mod error;
mod memory;
pub mod ops;
mod runtime;

pub use error::{ApiExt, Error, Result};
pub use ops::{Executor, IntArray, Scalar, Tensor};
pub use runtime::{Acl, Capture, CapturedGraph, Device, DeviceBuffer, HostBuffer, Stream};
