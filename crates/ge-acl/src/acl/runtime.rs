//! Safe wrappers over the runtime: the process-wide initialisation, devices, streams, device
//! and pinned host buffers, stream capture and captured graphs. Each wrapper owns its ACL
//! object and releases it in `Drop`.
//!
//! While a stream captures ([`Stream::capture`] returns a [`Capture`] that borrows both the
//! stream and the device mutably), the calls ACL forbids during capture cannot be written:
//! allocation, synchronous copies and memset are `Device` methods and synchronisation is a
//! `Stream` method, and both are borrowed by the `Capture`, which offers only launches and
//! device-to-device asynchronous copies. A buffer dropped during capture (the one thing the
//! borrow checker cannot stop) is freed after the capture ends.
//!
//! ```no_run
//! # fn f(acl: ge_acl::acl::Acl) -> ge_acl::acl::Result<()> {
//! let mut device = acl.open_device(0)?;
//! let mut stream = device.create_stream()?;
//! let scratch = device.alloc(1024)?; // allocate before the capture
//! let mut capture = stream.capture(&mut device)?;
//! // capture.launch(...), capture.copy_async(...)
//! let graph = capture.end()?;
//! graph.replay(&mut stream)?;
//! stream.synchronize()?;
//! # drop(scratch); Ok(()) }
//! ```
//!
//! Allocating, copying synchronously or synchronising while the capture lives does not
//! compile:
//!
//! ```compile_fail,E0502
//! # fn f(acl: ge_acl::acl::Acl) -> ge_acl::acl::Result<()> {
//! let mut device = acl.open_device(0)?;
//! let mut stream = device.create_stream()?;
//! let capture = stream.capture(&mut device)?;
//! let buffer = device.alloc(1024)?; // error: `device` is borrowed by the capture
//! let graph = capture.end()?;
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0499
//! # fn f(acl: ge_acl::acl::Acl) -> ge_acl::acl::Result<()> {
//! let mut device = acl.open_device(0)?;
//! let mut stream = device.create_stream()?;
//! let capture = stream.capture(&mut device)?;
//! stream.synchronize()?; // error: `stream` is borrowed by the capture
//! let graph = capture.end()?;
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0502
//! # fn f(acl: ge_acl::acl::Acl, buffer: &ge_acl::acl::DeviceBuffer) -> ge_acl::acl::Result<()> {
//! let mut device = acl.open_device(0)?;
//! let mut stream = device.create_stream()?;
//! let capture = stream.capture(&mut device)?;
//! device.copy_to_device(buffer, 0, &[0u8; 4])?; // error: a synchronous copy
//! let graph = capture.end()?;
//! # Ok(()) }
//! ```

use super::error::{ApiExt, Error, Result};
use super::memory::{lock, Deferred, DeviceShared};
pub use super::memory::{DeviceBuffer, HostBuffer};
use super::ops::Executor;
use acl_sys::{ffi, Api};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The ACL runtime, initialised (`aclInit`) once per process and per loaded [`Api`].
#[derive(Debug, Clone, Copy)]
pub struct Acl {
    api: &'static Api,
}

impl Acl {
    /// Loads ACL from the standard places ([`acl_sys::search_dirs`]) and initialises it.
    pub fn init() -> Result<Acl> {
        Acl::with_api(Api::global()?)
    }

    /// Initialises ACL through `api` (once: later calls return the same runtime).
    pub fn with_api(api: &'static Api) -> Result<Acl> {
        static DONE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let mut done = lock(&DONE);
        let key = api as *const Api as usize;
        if !done.contains(&key) {
            // SAFETY: `aclError aclInit(const char *configPath)`; NULL means no config file.
            let code = unsafe { (api.runtime.aclInit)(std::ptr::null()) };
            // 100002 (ACL_ERROR_REPEAT_INITIALIZE): something else in the process initialised
            // ACL already, which is fine.
            if code != 100002 {
                api.check("aclInit", code)?;
            }
            done.push(key);
        }
        Ok(Acl { api })
    }

    pub fn api(&self) -> &'static Api {
        self.api
    }

    /// The number of devices (`aclrtGetDeviceCount`).
    pub fn device_count(&self) -> Result<u32> {
        let mut n = 0u32;
        // SAFETY: `aclError aclrtGetDeviceCount(uint32_t *count)`.
        let code = unsafe { (self.api.runtime.aclrtGetDeviceCount)(&mut n) };
        self.api.check("aclrtGetDeviceCount", code)?;
        Ok(n)
    }

    /// Opens device `id`: sets it (`aclrtSetDevice`) and creates a context for it.
    pub fn open_device(&self, id: i32) -> Result<Device> {
        let api = self.api;
        // SAFETY: `aclError aclrtSetDevice(int32_t deviceId)`.
        api.check("aclrtSetDevice", unsafe {
            (api.runtime.aclrtSetDevice)(id)
        })?;
        let mut ctx: ffi::aclrtContext = std::ptr::null_mut();
        // SAFETY: `aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)`.
        let code = unsafe { (api.runtime.aclrtCreateContext)(&mut ctx, id) };
        if let Err(e) = api.check("aclrtCreateContext", code) {
            // SAFETY: undoes the aclrtSetDevice above.
            unsafe { (api.runtime.aclrtResetDevice)(id) };
            return Err(e);
        }
        Ok(Device {
            shared: Arc::new(DeviceShared {
                api,
                id,
                ctx,
                capturing: AtomicUsize::new(0),
                deferred: Mutex::new(Vec::new()),
            }),
        })
    }
}

/// An open device with its context. Dropped last (buffers, streams and graphs keep it alive):
/// destroys the context and resets the device.
pub struct Device {
    shared: Arc<DeviceShared>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.shared.id)
    }
}

impl Device {
    pub fn id(&self) -> i32 {
        self.shared.id
    }
    pub fn api(&self) -> &'static Api {
        self.shared.api
    }

    /// Makes this device's context current on the calling thread (ACL contexts are per
    /// thread; every method here does it itself).
    pub fn bind(&self) -> Result<()> {
        self.shared.bind()
    }

    /// Allocates `bytes` of device memory (`aclrtMalloc`, huge pages first); at least 1 byte.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer> {
        self.bind()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        let len = bytes.max(1);
        // SAFETY: `aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy)`.
        let code = unsafe {
            (self.api().runtime.aclrtMalloc)(&mut p, len, ffi::ACL_MEM_MALLOC_HUGE_FIRST)
        };
        self.api().check("aclrtMalloc", code)?;
        Ok(DeviceBuffer {
            shared: self.shared.clone(),
            ptr: p,
            len,
        })
    }

    /// Allocates `bytes` of pinned host memory (`aclrtMallocHost`), zeroed.
    pub fn alloc_host(&self, bytes: usize) -> Result<HostBuffer> {
        self.bind()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        let len = bytes.max(1);
        // SAFETY: `aclError aclrtMallocHost(void **hostPtr, size_t size)`.
        let code = unsafe { (self.api().runtime.aclrtMallocHost)(&mut p, len) };
        self.api().check("aclrtMallocHost", code)?;
        // SAFETY: the runtime gave `len` writable host bytes at `p`.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
        Ok(HostBuffer {
            shared: self.shared.clone(),
            ptr: p,
            len,
        })
    }

    /// Creates a stream on this device.
    pub fn create_stream(&self) -> Result<Stream> {
        self.bind()?;
        let mut s: ffi::aclrtStream = std::ptr::null_mut();
        // SAFETY: `aclError aclrtCreateStream(aclrtStream *stream)`.
        let code = unsafe { (self.api().runtime.aclrtCreateStream)(&mut s) };
        self.api().check("aclrtCreateStream", code)?;
        Ok(Stream {
            shared: self.shared.clone(),
            raw: s,
        })
    }

    fn check_range(what: &str, off: usize, n: usize, len: usize) -> Result<()> {
        if off.checked_add(n).is_none_or(|end| end > len) {
            return Err(Error::Invalid(format!(
                "{what}: {n} bytes at offset {off} do not fit a buffer of {len} bytes"
            )));
        }
        Ok(())
    }

    /// Copies `src` into `dst` at byte `offset` (`aclrtMemcpy`, host to device; synchronous).
    pub fn copy_to_device(&self, dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
        self.same(&dst.shared)?;
        Self::check_range("copy to device", offset, src.len(), dst.len)?;
        // SAFETY: the range was checked; `src` is readable host memory.
        unsafe {
            self.memcpy(
                (dst.ptr as *mut u8).add(offset) as *mut c_void,
                dst.len - offset,
                src.as_ptr() as *const c_void,
                src.len(),
                ffi::ACL_MEMCPY_HOST_TO_DEVICE,
            )
        }
    }

    /// Copies from `src` at byte `offset` into `dst` (`aclrtMemcpy`, device to host;
    /// synchronous). Synchronise the stream that wrote `src` first.
    pub fn copy_from_device(
        &self,
        dst: &mut [u8],
        src: &DeviceBuffer,
        offset: usize,
    ) -> Result<()> {
        self.same(&src.shared)?;
        Self::check_range("copy from device", offset, dst.len(), src.len)?;
        // SAFETY: the range was checked; `dst` is writable host memory of its length.
        unsafe {
            self.memcpy(
                dst.as_mut_ptr() as *mut c_void,
                dst.len(),
                (src.ptr as *const u8).add(offset) as *const c_void,
                dst.len(),
                ffi::ACL_MEMCPY_DEVICE_TO_HOST,
            )
        }
    }

    /// `aclrtMemcpy` of `count` bytes (nothing for 0).
    ///
    /// # Safety
    /// `dst` must be writable for `dst_max` bytes and `src` readable for `count`, each on the
    /// side `kind` says.
    unsafe fn memcpy(
        &self,
        dst: *mut c_void,
        dst_max: usize,
        src: *const c_void,
        count: usize,
        kind: ffi::aclrtMemcpyKind,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        self.bind()?;
        let code = (self.api().runtime.aclrtMemcpy)(dst, dst_max, src, count, kind);
        self.api().check("aclrtMemcpy", code)
    }

    /// Sets every byte of `dst` to `value` (`aclrtMemset`; synchronous).
    pub fn memset(&self, dst: &DeviceBuffer, value: u8) -> Result<()> {
        self.same(&dst.shared)?;
        self.bind()?;
        // SAFETY: the whole buffer, which is live device memory of `len` bytes.
        let code =
            unsafe { (self.api().runtime.aclrtMemset)(dst.ptr, dst.len, value as i32, dst.len) };
        self.api().check("aclrtMemset", code)
    }

    fn same(&self, other: &Arc<DeviceShared>) -> Result<()> {
        if Arc::ptr_eq(&self.shared, other) {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "the buffer or stream belongs to another device than device {}",
                self.shared.id
            )))
        }
    }
}

/// `launch` and `copy_async` (documented `$launch` and `$copy`) for a type whose `queue` method
/// gives the device state and the stream to queue on: a [`Stream`], or a [`Capture`] of one.
macro_rules! queue_methods {
    ($launch:literal, $copy:literal) => {
        #[doc = $launch]
        pub fn launch(&mut self, exec: Executor, workspace: Option<&DeviceBuffer>) -> Result<()> {
            let (shared, stream) = self.queue()?;
            let need = exec.workspace_size();
            let (ptr, have) = match workspace {
                Some(w) => (w.ptr, w.len as u64),
                None => (std::ptr::null_mut(), 0),
            };
            if need > have {
                return Err(Error::Invalid(format!(
                    "{} needs a workspace of {need} bytes, got {have}",
                    exec.op()
                )));
            }
            let (op, code) = exec.launch(ptr, need, stream);
            shared.api.check(op, code)
        }

        #[doc = $copy]
        pub fn copy_async(
            &mut self,
            dst: &DeviceBuffer,
            dst_offset: usize,
            src: &DeviceBuffer,
            src_offset: usize,
            bytes: usize,
        ) -> Result<()> {
            let (shared, stream) = self.queue()?;
            Device::check_range("device copy (destination)", dst_offset, bytes, dst.len)?;
            Device::check_range("device copy (source)", src_offset, bytes, src.len)?;
            if bytes == 0 {
                return Ok(());
            }
            // SAFETY: both ranges are inside live device buffers.
            let code = unsafe {
                (shared.api.runtime.aclrtMemcpyAsync)(
                    (dst.ptr as *mut u8).add(dst_offset) as *mut c_void,
                    dst.len - dst_offset,
                    (src.ptr as *const u8).add(src_offset) as *const c_void,
                    bytes,
                    ffi::ACL_MEMCPY_DEVICE_TO_DEVICE,
                    stream,
                )
            };
            shared.api.check("aclrtMemcpyAsync", code)
        }
    };
}

/// A stream, destroyed (`aclrtDestroyStream`) in `Drop`.
pub struct Stream {
    shared: Arc<DeviceShared>,
    raw: ffi::aclrtStream,
}

// SAFETY: an opaque handle, used from one thread at a time (methods take `&mut self`).
unsafe impl Send for Stream {}

impl Stream {
    queue_methods!(
        "Queues an aclnn operator prepared with [`super::ops`]. `workspace` must hold at least \
         the executor's workspace size.",
        "Queues a device-to-device copy of `bytes` bytes."
    );

    /// The device state and the stream to queue on, made current.
    fn queue(&mut self) -> Result<(&DeviceShared, ffi::aclrtStream)> {
        self.shared.bind()?;
        Ok((&self.shared, self.raw))
    }

    /// Waits until everything queued on the stream has run (`aclrtSynchronizeStream`).
    pub fn synchronize(&mut self) -> Result<()> {
        self.shared.bind()?;
        // SAFETY: our live stream.
        let code = unsafe { (self.shared.api.runtime.aclrtSynchronizeStream)(self.raw) };
        self.shared.api.check("aclrtSynchronizeStream", code)
    }

    /// Begins capturing this stream (`aclmdlRICaptureBegin`, global mode). The returned
    /// [`Capture`] borrows the stream and `device` until it ends, so nothing illegal during
    /// capture can be called meanwhile.
    pub fn capture<'a>(&'a mut self, device: &'a mut Device) -> Result<Capture<'a>> {
        device.same(&self.shared)?;
        let api = self.shared.api;
        let cap = api.capture.as_ref().ok_or_else(|| {
            Error::Unsupported(format!(
                "graph capture: {} has no aclmdlRICaptureBegin (CANN 8.2 or later has it)",
                api.dir().display()
            ))
        })?;
        self.shared.bind()?;
        {
            // No free may run while the capture begins (see DeviceShared::release).
            let _frees = lock(&self.shared.deferred);
            // SAFETY: `aclError aclmdlRICaptureBegin(aclrtStream, aclmdlRICaptureMode)`.
            let code = unsafe {
                (cap.aclmdlRICaptureBegin)(self.raw, ffi::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)
            };
            api.check("aclmdlRICaptureBegin", code)?;
            self.shared.capturing.fetch_add(1, Ordering::SeqCst);
        }
        Ok(Capture {
            stream: self,
            _device: device,
            open: true,
        })
    }

    /// Whether the stream is capturing now, as ACL reports it (`aclmdlRICaptureGetInfo`).
    pub fn capture_status(&self) -> Result<ffi::aclmdlRICaptureStatus> {
        let api = self.shared.api;
        let cap = api
            .capture
            .as_ref()
            .ok_or_else(|| Error::Unsupported("graph capture (no aclmdlRI* functions)".into()))?;
        let mut status = ffi::ACL_MODEL_RI_CAPTURE_STATUS_NONE;
        let mut ri: ffi::aclmdlRI = std::ptr::null_mut();
        // SAFETY: out-pointers to locals.
        let code = unsafe { (cap.aclmdlRICaptureGetInfo)(self.raw, &mut status, &mut ri) };
        api.check("aclmdlRICaptureGetInfo", code)?;
        Ok(status)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.shared.bind();
        // SAFETY: our live stream, destroyed once.
        let code = unsafe { (self.shared.api.runtime.aclrtDestroyStream)(self.raw) };
        if let Err(e) = self.shared.api.check("aclrtDestroyStream", code) {
            log::warn!("{e}");
        }
    }
}

/// A stream being captured. Launches and device copies are recorded into the graph that
/// [`Capture::end`] returns; allocation, synchronous copies and synchronisation cannot be
/// called while it lives (it borrows the device and the stream). Dropped without `end`, it
/// ends the capture and destroys what was captured.
pub struct Capture<'a> {
    stream: &'a mut Stream,
    _device: &'a mut Device,
    open: bool,
}

impl Capture<'_> {
    queue_methods!(
        "Records an aclnn operator launch.",
        "Records a device-to-device copy."
    );

    /// The device state and the captured stream.
    fn queue(&mut self) -> Result<(&DeviceShared, ffi::aclrtStream)> {
        Ok((&self.stream.shared, self.stream.raw))
    }

    fn finish(&mut self) -> Result<ffi::aclmdlRI> {
        self.open = false;
        let shared = &self.stream.shared;
        let api = shared.api;
        let cap = api
            .capture
            .as_ref()
            .expect("a capture began, so capture exists");
        let mut ri: ffi::aclmdlRI = std::ptr::null_mut();
        // SAFETY: `aclError aclmdlRICaptureEnd(aclrtStream, aclmdlRI *)` on our capturing stream.
        let code = unsafe { (cap.aclmdlRICaptureEnd)(self.stream.raw, &mut ri) };
        shared.capturing.fetch_sub(1, Ordering::SeqCst);
        shared.flush_deferred();
        api.check("aclmdlRICaptureEnd", code)?;
        if ri.is_null() {
            return Err(Error::Acl {
                call: "aclmdlRICaptureEnd",
                code: 0,
                message: "returned no graph".into(),
            });
        }
        Ok(ri)
    }

    /// Ends the capture (`aclmdlRICaptureEnd`) and returns the captured graph.
    pub fn end(mut self) -> Result<CapturedGraph> {
        let ri = self.finish()?;
        Ok(CapturedGraph {
            shared: self.stream.shared.clone(),
            raw: ri,
        })
    }
}

impl Drop for Capture<'_> {
    fn drop(&mut self) {
        if self.open {
            if let Ok(ri) = self.finish() {
                drop(CapturedGraph {
                    shared: self.stream.shared.clone(),
                    raw: ri,
                });
            }
        }
    }
}

/// A captured graph (`aclmdlRI`), destroyed (`aclmdlRIDestroy`) in `Drop`.
pub struct CapturedGraph {
    shared: Arc<DeviceShared>,
    raw: ffi::aclmdlRI,
}

// SAFETY: an opaque handle; replays go through `&mut Stream`.
unsafe impl Send for CapturedGraph {}
unsafe impl Sync for CapturedGraph {}

impl CapturedGraph {
    /// Queues a replay of the graph on `stream` (`aclmdlRIExecuteAsync`).
    pub fn replay(&self, stream: &mut Stream) -> Result<()> {
        if !Arc::ptr_eq(&self.shared, &stream.shared) {
            return Err(Error::Invalid(
                "a captured graph replays only on its own device".into(),
            ));
        }
        let api = self.shared.api;
        let cap = api
            .capture
            .as_ref()
            .expect("a graph was captured, so capture exists");
        self.shared.bind()?;
        // SAFETY: our live graph and stream.
        let code = unsafe { (cap.aclmdlRIExecuteAsync)(self.raw, stream.raw) };
        api.check("aclmdlRIExecuteAsync", code)
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        // Destroyed now, or after the capture going on ends.
        self.shared.release(Deferred::Graph(self.raw));
    }
}
