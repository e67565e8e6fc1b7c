//! Device and pinned host memory, and the per-device state they share with streams and
//! captured graphs: a release asked for while a stream of the device captures waits until the
//! capture ends. Below [`super::ops`] and [`super::runtime`], which both use these buffers.

use super::error::{ApiExt, Result};
use acl_sys::{ffi, Api};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) enum Deferred {
    Device(*mut c_void),
    Host(*mut c_void),
    Graph(ffi::aclmdlRI),
}

pub(super) struct DeviceShared {
    pub(super) api: &'static Api,
    pub(super) id: i32,
    pub(super) ctx: ffi::aclrtContext,
    /// Streams of this device capturing now.
    pub(super) capturing: AtomicUsize,
    /// Frees and graph destructions asked for during a capture, done when it ends.
    pub(super) deferred: Mutex<Vec<Deferred>>,
}

// SAFETY: the context handle is an opaque token ACL lets any thread use (after
// aclrtSetCurrentContext, which every call path here does first).
unsafe impl Send for DeviceShared {}
unsafe impl Sync for DeviceShared {}

impl DeviceShared {
    pub(super) fn bind(&self) -> Result<()> {
        // SAFETY: `aclError aclrtSetCurrentContext(aclrtContext context)` with our live context.
        let code = unsafe { (self.api.runtime.aclrtSetCurrentContext)(self.ctx) };
        self.api.check("aclrtSetCurrentContext", code)
    }

    pub(super) fn release(&self, d: Deferred) {
        // Held while freeing, so a capture cannot begin between the check and the free.
        let mut pending = lock(&self.deferred);
        if self.capturing.load(Ordering::SeqCst) > 0 {
            pending.push(d);
            return;
        }
        let _ = self.bind();
        // SAFETY: the pointer came from aclrtMalloc / aclrtMallocHost and is freed once.
        let (call, code) = unsafe {
            match d {
                Deferred::Device(p) => ("aclrtFree", (self.api.runtime.aclrtFree)(p)),
                Deferred::Host(p) => ("aclrtFreeHost", (self.api.runtime.aclrtFreeHost)(p)),
                Deferred::Graph(g) => match self.api.capture.as_ref() {
                    Some(c) => ("aclmdlRIDestroy", (c.aclmdlRIDestroy)(g)),
                    None => return,
                },
            }
        };
        if let Err(e) = self.api.check(call, code) {
            log::warn!("{e}");
        }
    }

    pub(super) fn flush_deferred(&self) {
        let pending = std::mem::take(&mut *lock(&self.deferred));
        for d in pending {
            self.release(d);
        }
    }
}

impl Drop for DeviceShared {
    fn drop(&mut self) {
        self.flush_deferred();
        // SAFETY: every buffer, stream and graph holds an Arc of this, so none is left.
        unsafe {
            let code = (self.api.runtime.aclrtDestroyContext)(self.ctx);
            if let Err(e) = self.api.check("aclrtDestroyContext", code) {
                log::warn!("{e}");
            }
            let code = (self.api.runtime.aclrtResetDevice)(self.id);
            if let Err(e) = self.api.check("aclrtResetDevice", code) {
                log::warn!("{e}");
            }
        }
    }
}

/// Declares a buffer of one device: its address and length in bytes, `len`, `is_empty`, and a
/// `Drop` that hands the address to the device's release (`Deferred::$kind`: freed at once, or
/// after a capture that may still use it).
macro_rules! buffer {
    ($(#[$meta:meta])* $name:ident, $kind:ident) => {
        $(#[$meta])*
        pub struct $name {
            pub(super) shared: std::sync::Arc<DeviceShared>,
            pub(super) ptr: *mut c_void,
            pub(super) len: usize,
        }

        impl $name {
            pub fn len(&self) -> usize {
                self.len
            }
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                self.shared.release(Deferred::$kind(self.ptr));
            }
        }
    };
}

buffer! {
    /// Device memory from `aclrtMalloc`, freed (`aclrtFree`) in `Drop`. A handle: the memory is
    /// not host-addressable, so copies into it take `&self`.
    DeviceBuffer, Device
}

buffer! {
    /// Pinned host memory from `aclrtMallocHost`, freed (`aclrtFreeHost`) in `Drop`.
    HostBuffer, Host
}

// SAFETY: a device address, usable from any thread with the device's context.
unsafe impl Send for DeviceBuffer {}
unsafe impl Sync for DeviceBuffer {}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({:p}, {} bytes)", self.ptr, self.len)
    }
}

impl DeviceBuffer {
    /// The device address (for tensor descriptors; not dereferenceable on the host).
    pub fn device_ptr(&self) -> *mut c_void {
        self.ptr
    }
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised (zeroed at allocation) host bytes owned by this value.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}
