//! MPI as a [`Communicator`], loaded at run time (libloading): MPICH's ABI.
//!
//! MPI's C ABI differs between implementations: MPICH (and its derivatives) passes handles as
//! `int`s with fixed values (the constants below are those of MPICH's `mpi.h`), Open MPI as
//! pointers to global objects. [`Mpi::open`] asks the library what it is
//! (`MPI_Get_library_version`) and refuses anything but MPICH.
//!
//! MPI is initialised here (`MPI_Init_thread`, `MPI_THREAD_MULTIPLE` asked) unless the process
//! already did (mpi4py shares the same library: `MPI_Initialized` first); what was initialised
//! here is finalised at exit. Calls are serialised by a mutex (held for each call, not between
//! polls) and are all nonblocking
//! (`MPI_I*`), polled with `MPI_Test` until they finish or the collective timeout passes; after
//! a timeout the communicator is unusable (a collective cannot be cancelled) and says so.
//!
//! A send is started and left to finish in the background (its bytes copied, its request
//! completed by the calls that follow), so ranks that all send before they receive (a ring)
//! cannot deadlock on MPI's rendezvous. Groups ([`Mpi::subgroup`]) are communicators made
//! with `MPI_Comm_create_group` by the group's ranks only; they share the library, the lock
//! and the pending sends of the world's.

use super::{timeout, worker, Communicator, Elem, Exchange, ReduceOp};
use crate::error::{Error, Result};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
type Request = c_int;
type Group = c_int;

// MPICH's mpi.h.
const MPI_SUCCESS: c_int = 0;
const MPI_COMM_WORLD: Comm = 0x4400_0000;
const MPI_REQUEST_NULL: Request = 0x2c00_0000;
const MPI_ERRORS_RETURN: c_int = 0x5400_0001;
const MPI_THREAD_MULTIPLE: c_int = 3;
const MPI_MAX_LIBRARY_VERSION_STRING: usize = 8192;
const MPI_MAX_ERROR_STRING: usize = 512;
const MPI_BYTE: Datatype = 0x4c00_010d;
const MPI_STATUS_IGNORE: *mut c_void = std::ptr::without_provenance_mut(1);
const MPI_IN_PLACE: *const c_void = -1isize as *const c_void;

fn datatype(e: Elem) -> Datatype {
    match e {
        Elem::I8 => 0x4c00_0137,
        Elem::I16 => 0x4c00_0238,
        Elem::I32 => 0x4c00_0439,
        Elem::I64 => 0x4c00_083a,
        Elem::U8 => 0x4c00_013b,
        Elem::U16 => 0x4c00_023c,
        Elem::U32 => 0x4c00_043d,
        Elem::U64 => 0x4c00_083e,
        Elem::F32 => 0x4c00_040a,
        Elem::F64 => 0x4c00_080b,
    }
}

fn op(o: ReduceOp) -> Op {
    match o {
        ReduceOp::Max => 0x5800_0001,
        ReduceOp::Min => 0x5800_0002,
        ReduceOp::Sum => 0x5800_0003,
        ReduceOp::Prod => 0x5800_0004,
    }
}

type FnFlag = unsafe extern "C" fn(*mut c_int) -> c_int;
type FnInitThread =
    unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int;
type FnVoid = unsafe extern "C" fn() -> c_int;
type FnVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
type FnCommInt = unsafe extern "C" fn(Comm, *mut c_int) -> c_int;
type FnSetErrhandler = unsafe extern "C" fn(Comm, c_int) -> c_int;
type FnErrorString = unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int;
type FnIallreduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    c_int,
    Datatype,
    Op,
    Comm,
    *mut Request,
) -> c_int;
type FnIallgather = unsafe extern "C" fn(
    *const c_void,
    c_int,
    Datatype,
    *mut c_void,
    c_int,
    Datatype,
    Comm,
    *mut Request,
) -> c_int;
type FnIreduceScatterBlock = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    c_int,
    Datatype,
    Op,
    Comm,
    *mut Request,
) -> c_int;
type FnIbcast =
    unsafe extern "C" fn(*mut c_void, c_int, Datatype, c_int, Comm, *mut Request) -> c_int;
type FnIalltoallv = unsafe extern "C" fn(
    *const c_void,
    *const c_int,
    *const c_int,
    Datatype,
    *mut c_void,
    *const c_int,
    *const c_int,
    Datatype,
    Comm,
    *mut Request,
) -> c_int;
type FnIsend =
    unsafe extern "C" fn(*const c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request) -> c_int;
type FnIrecv =
    unsafe extern "C" fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request) -> c_int;
type FnIbarrier = unsafe extern "C" fn(Comm, *mut Request) -> c_int;
type FnTest = unsafe extern "C" fn(*mut Request, *mut c_int, *mut c_void) -> c_int;
type FnCommGroup = unsafe extern "C" fn(Comm, *mut Group) -> c_int;
type FnGroupIncl = unsafe extern "C" fn(Group, c_int, *const c_int, *mut Group) -> c_int;
type FnGroupFree = unsafe extern "C" fn(*mut Group) -> c_int;
type FnCommCreateGroup = unsafe extern "C" fn(Comm, Group, c_int, *mut Comm) -> c_int;
type FnCommFree = unsafe extern "C" fn(*mut Comm) -> c_int;

/// The MPI functions ge-rs calls.
struct Fns {
    initialized: FnFlag,
    finalized: FnFlag,
    init_thread: FnInitThread,
    finalize: FnVoid,
    comm_rank: FnCommInt,
    comm_size: FnCommInt,
    set_errhandler: FnSetErrhandler,
    error_string: FnErrorString,
    iallreduce: FnIallreduce,
    iallgather: FnIallgather,
    ireduce_scatter_block: FnIreduceScatterBlock,
    ibcast: FnIbcast,
    ialltoallv: FnIalltoallv,
    isend: FnIsend,
    irecv: FnIrecv,
    ibarrier: FnIbarrier,
    test: FnTest,
    comm_group: FnCommGroup,
    group_incl: FnGroupIncl,
    group_free: FnGroupFree,
    comm_create_group: FnCommCreateGroup,
    comm_free: FnCommFree,
}

/// What the world's communicator and its groups share: the library, the lock that serialises
/// calls, whether MPI is unusable, and the sends still in flight.
struct Shared {
    _lib: &'static Library,
    fns: Fns,
    path: String,
    version: String,
    lock: Mutex<Pending>,
    /// Set when a call timed out: its request is still pending, so nothing more can run.
    broken: AtomicBool,
}

/// Sends started and not yet known to be complete: each request with the bytes it sends.
#[derive(Default)]
struct Pending(Vec<(Request, Vec<u8>)>);

/// An MPI communicator (the world's, or a group's), through a loaded MPICH library.
pub struct Mpi {
    sh: Arc<Shared>,
    comm: Comm,
    rank: usize,
    size: usize,
}

/// Whether this process initialised MPI (and so finalises it at exit), and the finaliser.
static FINALIZE: Mutex<Option<(FnFlag, FnVoid, FnTest)>> = Mutex::new(None);
/// The sends of the world's communicator (and its groups) that may still be in flight, for the
/// exit: MPI_Finalize waits for them.
static PENDING: Mutex<Option<Arc<Shared>>> = Mutex::new(None);
static POISONED: AtomicBool = AtomicBool::new(false);

extern "C" fn finalize_at_exit() {
    let f = FINALIZE.lock().ok().and_then(|mut g| g.take());
    // After a timed-out collective MPI_Finalize could wait for the other ranks forever: the
    // process leaves without it (the launcher then ends the job).
    if let Some((finalized, finalize, test)) = f {
        if POISONED.load(Ordering::Relaxed) {
            return;
        }
        // Sends still in flight are given the collective timeout to be received; a send no
        // rank receives would make MPI_Finalize wait forever, so the process leaves without it.
        let shared = PENDING.lock().ok().and_then(|g| g.clone());
        if let Some(sh) = shared {
            let mut p = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            let t0 = Instant::now();
            loop {
                // SAFETY: MPI_Test on requests this process started (see `Shared::reap`).
                p.0.retain_mut(|(req, _)| {
                    let mut done: c_int = 0;
                    let rc = unsafe { test(req, &mut done, MPI_STATUS_IGNORE) };
                    rc == MPI_SUCCESS && done == 0
                });
                if p.0.is_empty() {
                    break;
                }
                if t0.elapsed() > timeout() {
                    return;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        let mut done = 0;
        // SAFETY: `int MPI_Finalized(int *flag)`, `int MPI_Finalize(void)`, from the library
        // this process loaded and initialised (it stays loaded: leaked on purpose).
        unsafe {
            if finalized(&mut done) == MPI_SUCCESS && done == 0 {
                finalize();
            }
        }
    }
}

extern "C" {
    fn atexit(cb: extern "C" fn()) -> c_int;
}

/// The path of a libmpi already mapped into this process (mpi4py imported first), from
/// `/proc/self/maps` (Linux).
pub fn loaded_library() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|l| {
        let path = l.split_whitespace().nth(5)?;
        let name = path.rsplit('/').next()?;
        (name.starts_with("libmpi.so") || name.starts_with("libmpich.so")).then(|| path.into())
    })
}

/// The library kind a version string names (`MPI_Get_library_version`).
pub fn library_kind(version: &str) -> &'static str {
    let v = version.to_ascii_lowercase();
    if v.contains("open mpi") {
        "Open MPI"
    } else if v.contains("mpich")
        || v.contains("intel(r) mpi")
        || v.contains("mvapich")
        || v.contains("cray mpich")
    {
        "MPICH"
    } else {
        "unknown"
    }
}

fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T> {
    // SAFETY: each `T` is the function's type as MPICH's mpi.h declares it.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| Error::Device(format!("the MPI library has no {name}: {e}")))
}

fn count(n: usize, what: &str) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| {
        Error::unsupported(format!(
            "an MPI {what} of {n} elements (more than 2^31-1 in one call)"
        ))
    })
}

impl Mpi {
    /// Loads MPI from `path` (else `libmpi.so.12`, then `libmpi.so`, from the loader's path),
    /// checks it is MPICH, initialises it unless the process has, and reads the world.
    pub fn open(path: Option<&str>) -> Result<Mpi> {
        let candidates: Vec<&str> = match path {
            Some(p) => vec![p],
            None => vec!["libmpi.so.12", "libmpi.so"],
        };
        let mut errs = Vec::new();
        let mut found = None;
        for c in &candidates {
            // SAFETY: loading MPI runs its initialisers, which have no preconditions.
            match unsafe { Library::new(c) } {
                Ok(l) => {
                    found = Some((l, c.to_string()));
                    break;
                }
                Err(e) => errs.push(format!("{c}: {e}")),
            }
        }
        let Some((lib, path)) = found else {
            return Err(Error::Device(format!(
                "no MPI library could be loaded ({})",
                errs.join("; ")
            )));
        };
        // The library stays loaded for the process (MPI cannot be initialised twice).
        let lib: &'static Library = Box::leak(Box::new(lib));
        let get_version: FnVersion = sym(lib, "MPI_Get_library_version")?;
        let mut buf = vec![0u8; MPI_MAX_LIBRARY_VERSION_STRING + 1];
        let mut len: c_int = 0;
        // SAFETY: `int MPI_Get_library_version(char *version, int *resultlen)` with a buffer of
        // MPI_MAX_LIBRARY_VERSION_STRING bytes; callable before MPI_Init.
        let rc = unsafe { get_version(buf.as_mut_ptr().cast(), &mut len) };
        if rc != MPI_SUCCESS {
            return Err(Error::Device(format!(
                "{path}: MPI_Get_library_version failed ({rc})"
            )));
        }
        buf.truncate(len.clamp(0, MPI_MAX_LIBRARY_VERSION_STRING as c_int) as usize);
        let version = String::from_utf8_lossy(&buf)
            .trim_end_matches('\0')
            .trim()
            .to_string();
        let first = version.lines().next().unwrap_or("").trim().to_string();
        let kind = library_kind(&version);
        if kind != "MPICH" {
            return Err(Error::unsupported(format!(
                "the MPI library {path} is {kind} ({first}); ge-rs speaks MPICH's ABI only \
                 (`pip install mpich`, or set GE_MPI_LIBRARY to an MPICH libmpi.so)"
            )));
        }
        let fns = Fns {
            initialized: sym(lib, "MPI_Initialized")?,
            finalized: sym(lib, "MPI_Finalized")?,
            init_thread: sym(lib, "MPI_Init_thread")?,
            finalize: sym(lib, "MPI_Finalize")?,
            comm_rank: sym(lib, "MPI_Comm_rank")?,
            comm_size: sym(lib, "MPI_Comm_size")?,
            set_errhandler: sym(lib, "MPI_Comm_set_errhandler")?,
            error_string: sym(lib, "MPI_Error_string")?,
            iallreduce: sym(lib, "MPI_Iallreduce")?,
            iallgather: sym(lib, "MPI_Iallgather")?,
            ireduce_scatter_block: sym(lib, "MPI_Ireduce_scatter_block")?,
            ibcast: sym(lib, "MPI_Ibcast")?,
            ialltoallv: sym(lib, "MPI_Ialltoallv")?,
            isend: sym(lib, "MPI_Isend")?,
            irecv: sym(lib, "MPI_Irecv")?,
            ibarrier: sym(lib, "MPI_Ibarrier")?,
            test: sym(lib, "MPI_Test")?,
            comm_group: sym(lib, "MPI_Comm_group")?,
            group_incl: sym(lib, "MPI_Group_incl")?,
            group_free: sym(lib, "MPI_Group_free")?,
            comm_create_group: sym(lib, "MPI_Comm_create_group")?,
            comm_free: sym(lib, "MPI_Comm_free")?,
        };
        let mut m = Mpi {
            sh: Arc::new(Shared {
                _lib: lib,
                fns,
                path,
                version: first,
                lock: Mutex::new(Pending::default()),
                broken: AtomicBool::new(false),
            }),
            comm: MPI_COMM_WORLD,
            rank: 0,
            size: 1,
        };
        m.init()?;
        Ok(m)
    }

    fn init(&mut self) -> Result<()> {
        let f = &self.sh.fns;
        let (mut inited, mut finalized) = (0, 0);
        // SAFETY: `int MPI_Initialized(int *flag)` / `MPI_Finalized`, callable at any time.
        unsafe {
            self.check((f.initialized)(&mut inited), "MPI_Initialized")?;
            self.check((f.finalized)(&mut finalized), "MPI_Finalized")?;
        }
        if finalized != 0 {
            return Err(Error::Device(
                "MPI was already finalised in this process".into(),
            ));
        }
        if inited == 0 {
            let mut provided = 0;
            // SAFETY: `int MPI_Init_thread(int *argc, char ***argv, int required, int
            // *provided)`; MPI allows null argc/argv.
            let rc = unsafe {
                (f.init_thread)(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    MPI_THREAD_MULTIPLE,
                    &mut provided,
                )
            };
            self.check(rc, "MPI_Init_thread")?;
            if let Ok(mut g) = FINALIZE.lock() {
                if g.is_none() {
                    *g = Some((f.finalized, f.finalize, f.test));
                    // SAFETY: registers a plain `extern "C" fn()` with the C library.
                    unsafe { atexit(finalize_at_exit) };
                }
            }
        }
        (self.rank, self.size) = self.place_in(MPI_COMM_WORLD)?;
        if let Ok(mut p) = PENDING.lock() {
            *p = Some(self.sh.clone());
        }
        Ok(())
    }

    /// MPI's return code `rc` of `what` as a result.
    fn check(&self, rc: c_int, what: &str) -> Result<()> {
        if rc == MPI_SUCCESS {
            return Ok(());
        }
        let mut buf = vec![0u8; MPI_MAX_ERROR_STRING + 1];
        let mut len: c_int = 0;
        // SAFETY: `int MPI_Error_string(int errorcode, char *string, int *resultlen)` with a
        // buffer of MPI_MAX_ERROR_STRING bytes.
        let ok = unsafe { (self.sh.fns.error_string)(rc, buf.as_mut_ptr().cast(), &mut len) };
        let text = if ok == MPI_SUCCESS {
            buf.truncate(len.clamp(0, MPI_MAX_ERROR_STRING as c_int) as usize);
            String::from_utf8_lossy(&buf).trim().to_string()
        } else {
            format!("error {rc}")
        };
        Err(Error::Device(format!(
            "{what} failed on rank {}: {text}",
            self.rank
        )))
    }

    /// The library's path and version line.
    pub fn library(&self) -> (&str, &str) {
        (&self.sh.path, &self.sh.version)
    }

    /// Starts one nonblocking call (`start` fills in its request) and polls it until it
    /// finishes or the collective timeout passes.
    /// The lock is held for each MPI call only, not between the polls: a send from another
    /// thread goes out while a collective or receive of the communication thread waits.
    fn run(&self, what: &str, start: impl FnOnce(*mut Request) -> c_int) -> Result<()> {
        let mut req: Request = MPI_REQUEST_NULL;
        {
            let mut g = self.sh.lock.lock().unwrap_or_else(|p| p.into_inner());
            if self.sh.broken.load(Ordering::Relaxed) {
                return Err(Error::Device(format!(
                    "{what}: MPI is unusable in this process since an earlier collective timed \
                     out (its ranks stopped running the same collectives)"
                )));
            }
            self.reap(&mut g, what)?;
            self.check(start(&mut req), what)?;
        }
        let limit = timeout();
        let t0 = Instant::now();
        let mut spins = 0u32;
        loop {
            let mut done: c_int = 0;
            let rc = {
                let _g = self.sh.lock.lock().unwrap_or_else(|p| p.into_inner());
                // SAFETY: `int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)`
                // on the request this call started (only this thread tests it);
                // MPI_STATUS_IGNORE is MPICH's (MPI_Status *)1.
                unsafe { (self.sh.fns.test)(&mut req, &mut done, MPI_STATUS_IGNORE) }
            };
            self.check(rc, what)?;
            if done != 0 {
                return Ok(());
            }
            if t0.elapsed() > limit {
                self.sh.broken.store(true, Ordering::Relaxed);
                POISONED.store(true, Ordering::Relaxed);
                return Err(Error::Device(format!(
                    "{what} timed out on rank {} of {} after {:.1} s waiting for the other \
                     ranks (ge.exec.hcclExecuteTimeOut / GE_COLLECTIVE_TIMEOUT); the ranks did \
                     not run the same collectives",
                    self.rank,
                    self.size,
                    limit.as_secs_f64()
                )));
            }
            spins = spins.saturating_add(1);
            // Polled hard (as MPICH's blocking calls poll: spinning, then yielding the core to
            // any other runnable rank) while someone waits for the result; gently (a sleep
            // between polls) while a started collective runs beside the plan's compute, so the
            // compute keeps its core.
            if worker::awaited() {
                if spins < 1000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            } else if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Completes the sends that finished (their bytes are freed); an error of one is this
    /// call's.
    fn reap(&self, p: &mut Pending, what: &str) -> Result<()> {
        let mut err = None;
        p.0.retain_mut(|(req, _)| {
            let mut done: c_int = 0;
            // SAFETY: MPI_Test on a send request this process started; its buffer is alive.
            let rc = unsafe { (self.sh.fns.test)(req, &mut done, MPI_STATUS_IGNORE) };
            if rc != MPI_SUCCESS {
                err.get_or_insert(rc);
                return false;
            }
            done == 0
        });
        match err {
            Some(rc) => self.check(rc, &format!("{what} (an earlier send)")),
            None => Ok(()),
        }
    }

    /// The communicator of the group of world ranks `ranks` (ascending, this rank among them),
    /// made with `MPI_Comm_create_group` by the group's ranks only. Creating it waits for the
    /// other ranks of the group at most the collective timeout.
    pub fn subgroup(&self, ranks: &[usize], tag: i32) -> Result<Mpi> {
        let ids: Vec<c_int> = ranks
            .iter()
            .map(|&r| self.peer(r, "a group with"))
            .collect::<Result<_>>()?;
        let n = count(ids.len(), "group")?;
        let _g = self.sh.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.sh.broken.load(Ordering::Relaxed) {
            return Err(Error::Device(
                "MPI is unusable in this process since an earlier collective timed out".into(),
            ));
        }
        let f = &self.sh.fns;
        let (mut world, mut group) = (0 as Group, 0 as Group);
        // SAFETY: out-pointers to handles; `ids` holds n valid ranks of this communicator.
        unsafe {
            self.check((f.comm_group)(self.comm, &mut world), "MPI_Comm_group")?;
            let rc = (f.group_incl)(world, n, ids.as_ptr(), &mut group);
            (f.group_free)(&mut world);
            self.check(rc, "MPI_Group_incl")?;
        }
        // MPI_Comm_create_group has no nonblocking form: it runs on a thread of its own, waited
        // for at most the timeout (a group whose ranks never all create it would hang).
        let (tx, rx) = std::sync::mpsc::channel();
        let (create, comm) = (f.comm_create_group, self.comm);
        std::thread::spawn(move || {
            let mut out: Comm = 0;
            // SAFETY: `int MPI_Comm_create_group(MPI_Comm, MPI_Group, int tag, MPI_Comm *)`
            // with live handles; the process asked for MPI_THREAD_MULTIPLE.
            let rc = unsafe { create(comm, group, tag, &mut out) };
            let _ = tx.send((rc, out));
        });
        let limit = timeout();
        let got = rx.recv_timeout(limit);
        let Ok((rc, new)) = got else {
            self.sh.broken.store(true, Ordering::Relaxed);
            POISONED.store(true, Ordering::Relaxed);
            return Err(Error::Device(format!(
                "creating the group of ranks {ranks:?} timed out on rank {} after {:.1} s: \
                 every rank of a group must create it (with the same ranks)",
                self.rank,
                limit.as_secs_f64()
            )));
        };
        // SAFETY: frees the group handle made above.
        unsafe { (f.group_free)(&mut group) };
        self.check(rc, "MPI_Comm_create_group")?;
        let (rank, size) = self.place_in(new)?;
        Ok(Mpi {
            sh: self.sh.clone(),
            comm: new,
            rank,
            size,
        })
    }

    /// Makes `comm`'s errors return codes, and gives this process's rank in it and its size.
    fn place_in(&self, comm: Comm) -> Result<(usize, usize)> {
        let f = &self.sh.fns;
        let (mut rank, mut size) = (0, 0);
        // SAFETY: a live communicator handle (the world's constant, or one MPI made); the
        // out-pointers are valid.
        unsafe {
            self.check(
                (f.set_errhandler)(comm, MPI_ERRORS_RETURN),
                "MPI_Comm_set_errhandler",
            )?;
            self.check((f.comm_rank)(comm, &mut rank), "MPI_Comm_rank")?;
            self.check((f.comm_size)(comm, &mut size), "MPI_Comm_size")?;
        }
        Ok((rank.max(0) as usize, size.max(1) as usize))
    }

    fn peer(&self, r: usize, what: &str) -> Result<c_int> {
        if r >= self.size {
            return Err(Error::kernel(format!(
                "{what} rank {r}: its ranks are 0..{}",
                self.size
            )));
        }
        Ok(r as c_int)
    }
}

/// A group's communicator is freed when the last plan using it and its name are gone
/// (`destroy_group`); the world's is MPI's own. Nothing is freed after MPI was finalised, or
/// once a timed-out call left MPI unusable.
impl Drop for Mpi {
    fn drop(&mut self) {
        if self.comm == MPI_COMM_WORLD || self.sh.broken.load(Ordering::Relaxed) {
            return;
        }
        let _g = self.sh.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut finalized = 1;
        // SAFETY: `MPI_Finalized` is callable at any time; `MPI_Comm_free` on a communicator
        // this value made (`subgroup`) and no one else holds.
        unsafe {
            if (self.sh.fns.finalized)(&mut finalized) == MPI_SUCCESS && finalized == 0 {
                (self.sh.fns.comm_free)(&mut self.comm);
            }
        }
    }
}

impl Communicator for Mpi {
    fn name(&self) -> String {
        format!("MPI: {}", self.sh.version)
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }

    fn all_reduce(&self, buf: &mut [u8], elem: Elem, o: ReduceOp) -> Result<()> {
        let n = count(buf.len() / elem.size(), "all-reduce")?;
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: in place (MPI_IN_PLACE) over `n` elements of `buf`, alive until the request
        // completes inside `run`.
        self.run("MPI_Iallreduce", |req| unsafe {
            (self.sh.fns.iallreduce)(MPI_IN_PLACE, p, n, datatype(elem), op(o), self.comm, req)
        })
    }

    fn all_gather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        if recv.len() != send.len() * self.size {
            return Err(Error::kernel(format!(
                "all-gather: {} bytes received for {} sent by each of {} ranks",
                recv.len(),
                send.len(),
                self.size
            )));
        }
        let n = count(send.len(), "all-gather")?;
        let (s, r) = (send.as_ptr().cast::<c_void>(), recv.as_mut_ptr().cast());
        // SAFETY: `send` holds n bytes and `recv` size * n, both alive until completion.
        self.run("MPI_Iallgather", |req| unsafe {
            (self.sh.fns.iallgather)(s, n, MPI_BYTE, r, n, MPI_BYTE, self.comm, req)
        })
    }

    fn reduce_scatter(&self, send: &[u8], recv: &mut [u8], elem: Elem, o: ReduceOp) -> Result<()> {
        if send.len() != recv.len() * self.size || !recv.len().is_multiple_of(elem.size()) {
            return Err(Error::kernel(format!(
                "reduce-scatter: {} bytes sent for {} kept by each of {} ranks",
                send.len(),
                recv.len(),
                self.size
            )));
        }
        let n = count(recv.len() / elem.size(), "reduce-scatter")?;
        let (s, r) = (send.as_ptr().cast::<c_void>(), recv.as_mut_ptr().cast());
        // SAFETY: `send` holds size * n elements and `recv` n, both alive until completion.
        self.run("MPI_Ireduce_scatter_block", |req| unsafe {
            (self.sh.fns.ireduce_scatter_block)(s, r, n, datatype(elem), op(o), self.comm, req)
        })
    }

    fn broadcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        let root = self.peer(root, "broadcast from")?;
        let n = count(buf.len(), "broadcast")?;
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: `buf` holds n bytes, alive until completion.
        self.run("MPI_Ibcast", |req| unsafe {
            (self.sh.fns.ibcast)(p, n, MPI_BYTE, root, self.comm, req)
        })
    }

    fn all_to_all_v(&self, send: &[u8], recv: &mut [u8], x: &Exchange) -> Result<()> {
        x.check(self.size, send.len(), recv.len())?;
        let ints = |v: &[usize]| -> Result<Vec<c_int>> {
            v.iter().map(|&n| count(n, "all-to-all-v")).collect()
        };
        let (sc, sd) = (ints(&x.send_counts)?, ints(&x.send_displs)?);
        let (rc, rd) = (ints(&x.recv_counts)?, ints(&x.recv_displs)?);
        let (s, r) = (send.as_ptr().cast::<c_void>(), recv.as_mut_ptr().cast());
        // SAFETY: every block lies inside its buffer (checked above); the buffers and the
        // count arrays are alive until completion.
        self.run("MPI_Ialltoallv", |req| unsafe {
            (self.sh.fns.ialltoallv)(
                s,
                sc.as_ptr(),
                sd.as_ptr(),
                MPI_BYTE,
                r,
                rc.as_ptr(),
                rd.as_ptr(),
                MPI_BYTE,
                self.comm,
                req,
            )
        })
    }

    fn send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<()> {
        let d = self.peer(dest, "send to")?;
        let n = count(buf.len(), "send")?;
        let what = "MPI_Isend";
        let mut g = self.sh.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.sh.broken.load(Ordering::Relaxed) {
            return Err(Error::Device(format!(
                "{what}: MPI is unusable in this process since an earlier collective timed out"
            )));
        }
        self.reap(&mut g, what)?;
        // The bytes are kept with the request until it completes (a later call reaps it).
        let bytes = buf.to_vec();
        let mut req: Request = MPI_REQUEST_NULL;
        // SAFETY: `bytes` holds n bytes; its heap buffer does not move when the Vec moves into
        // the pending list, where it stays until MPI_Test says the send completed.
        let rc = unsafe {
            (self.sh.fns.isend)(
                bytes.as_ptr().cast::<c_void>(),
                n,
                MPI_BYTE,
                d,
                tag,
                self.comm,
                &mut req,
            )
        };
        self.check(rc, what)?;
        g.0.push((req, bytes));
        Ok(())
    }

    fn recv(&self, buf: &mut [u8], src: usize, tag: i32) -> Result<()> {
        let s = self.peer(src, "receive from")?;
        let n = count(buf.len(), "receive")?;
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: `buf` holds n bytes, alive until completion.
        self.run("MPI_Irecv", |req| unsafe {
            (self.sh.fns.irecv)(p, n, MPI_BYTE, s, tag, self.comm, req)
        })
    }

    fn subgroup(&self, ranks: &[usize], tag: i32) -> Result<Arc<dyn Communicator>> {
        Ok(Arc::new(Mpi::subgroup(self, ranks, tag)?))
    }

    fn barrier(&self) -> Result<()> {
        // SAFETY: a request out-pointer only.
        self.run("MPI_Ibarrier", |req| unsafe {
            (self.sh.fns.ibarrier)(self.comm, req)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_kinds_are_told_apart() {
        assert_eq!(
            library_kind("MPICH Version:      5.0.2\nMPICH Release"),
            "MPICH"
        );
        assert_eq!(
            library_kind("Open MPI v5.0.3, package: Open MPI ..."),
            "Open MPI"
        );
        assert_eq!(library_kind("Intel(R) MPI Library 2021.10"), "MPICH");
        assert_eq!(library_kind("something else"), "unknown");
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_crash() {
        let e = Mpi::open(Some("/nonexistent/libmpi.so.12"))
            .err()
            .expect("no library there");
        assert!(
            e.to_string().contains("no MPI library could be loaded"),
            "{e}"
        );
    }
}
