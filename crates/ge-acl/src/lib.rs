//! ge-acl: ge-rs graphs on Huawei's Ascend NPUs through ACL.
//!
//! - [`acl`]: the safe layer over `acl-sys`'s raw functions (devices, streams, buffers,
//!   capture, aclnn tensors and executors, each released in `Drop`);
//! - [`backend`]: the ACL backend of a ge-runtime session ([`AclDevice`], a
//!   [`ge_runtime::Backend`]): aclnn launches, captured once per input signature and replayed;
//! - [`register`]: makes `ge.device=acl` (and `auto`) sessions open it. ge-runtime does not
//!   depend on this crate; a program that wants ACL calls `register()` once (the Python
//!   extension does at import).
//!
//! ```no_run
//! use ge_runtime::Session;
//! use std::collections::BTreeMap;
//! ge_acl::register();
//! let o: BTreeMap<String, String> = [("ge.device".to_string(), "acl".to_string())].into();
//! let session = Session::new(&o)?; // an error saying where it looked when ACL is missing
//! # Ok::<(), ge_runtime::Error>(())
//! ```
//!
//! No NPU was available where this was written: it is tested against the ACL test double
//! (`acl_sys::test_double`), never on hardware.

pub mod acl;
pub mod backend;

pub use backend::{AclBackend, AclDevice, AclPlan, RunMode, ACL_OPS};

/// Registers the ACL backend with ge-runtime: sessions with `ge.device=acl` (or `auto`) open
/// their devices through [`AclDevice::open`]. Calling it again changes nothing.
pub fn register() {
    ge_runtime::backend::register_acl_backend(|device_id| {
        Ok(std::sync::Arc::new(AclDevice::open(device_id)?))
    });
}
