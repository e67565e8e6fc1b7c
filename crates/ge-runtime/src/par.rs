//! Threads: the `ge.threads` option and how kernels split large work.
//!
//! A run executes on its caller's thread; [`run_with`] records how many threads its kernels
//! may use and, for more than one, makes the calling thread worker 0 of its own rayon pool of
//! that size (made on the thread's first such run and kept while the thread lives: `n - 1`
//! pool threads plus the caller). A kernel with large work calls [`install`], which then runs
//! its parallel section right on the caller: rayon's work stealing hands part of it to the
//! other workers while the caller works through the rest, so a worker that wakes late costs
//! nothing but the wake-up (the caller takes back what was not stolen). After each parallel
//! section the caller hands its pool a *spinner* (one at a time): a worker keeps looking for
//! work for [`SPIN`] after the last job it ran, so a section that follows soon finds it awake
//! instead of paying a wake-up, then returns to rayon's sleep (a few rounds of `yield_now`, then
//! parked). A spinner that finds itself descheduled for [`PREEMPTED`] (another process wants the
//! core) stops at once and no spinner starts for [`BACK_OFF`]: on a loaded machine the workers
//! sleep between kernels instead of competing with the caller for its core (`GE_CPU_SPIN_US`
//! sets the spin in microseconds; 0: none). A thread that cannot have its own pool (already a
//! worker of another rayon pool, a second thread count on the same thread, or more calling
//! threads than [`MAX_CALLER_POOLS`]) hands its parallel sections to a shared pool of `n`
//! threads instead and waits for them. Small kernels never leave the caller's thread, and
//! inside a parallel section [`threads`] is 1: nested kernels do not split again.

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Work below which a kernel stays on one thread: waking the pool would cost more than
/// splitting saves. Work is counted in units of about the same time in every kernel (see
/// [`cost`]): this bound is about 27 us of work on the project's 2-core VM.
pub const MIN_PARALLEL_WORK: usize = 1 << 18;

/// Multiply-adds of a matrix product that count as one unit of work (they cost about one
/// element-wise operation).
pub const MACS_PER_UNIT: usize = 8;

/// What one element of each kind of kernel costs, in units of work: one unit is one element of
/// a plain element-wise f32 operation over contiguous memory (an Add of two arrays, 0.10 ns per
/// element at 1 thread on the project's 2-core AMD EPYC VM), so that [`MIN_PARALLEL_WORK`]
/// means about the same time for every kernel. Measured per element at 1 thread over chains
/// of nine operators in cache (docs/perf-runtime.md, "Both cores, session 25").
pub mod cost {
    /// A plain element-wise element or a contiguous copy's (Add 0.10 ns, Relu 0.07, a Split
    /// into contiguous halves and their Concat 0.12 each).
    pub const ELEMENT: usize = 1;
    /// An element copied through a strided view (Transpose, the channel shuffle, Slice and
    /// Split of non-contiguous runs, element-wise ops over views that are not contiguous):
    /// 0.16 ns.
    pub const STRIDED: usize = 2;
    /// An element of an inference BatchNorm (per-channel shift and scale in f64, rounded
    /// once): 0.34 ns.
    pub const NORM: usize = 3;
    /// One filter tap of a depthwise convolution's output element: a 3x3 output element is
    /// nine taps, 1.1 ns over 28x28 images, 2.6 ns over 7x7 ones (0.12-0.29 ns a tap). At 2
    /// units a 3x3 one over 7x7x464 (60 us) splits: 33-37 us at 2 threads.
    pub const DEPTHWISE_TAP: usize = 2;
}

/// `elements` of a kernel whose elements cost `per` units each (see [`cost`]), saturating.
pub fn work(elements: usize, per: usize) -> usize {
    elements.saturating_mul(per)
}

/// Calling threads that may own a pool (each keeps `n - 1` pool threads for its life).
pub const MAX_CALLER_POOLS: usize = 8;

/// How long a spinning worker keeps looking for work after the last job it ran (unless
/// `GE_CPU_SPIN_US` says otherwise).
pub const SPIN: Duration = Duration::from_micros(100);

/// A gap this long between two looks of a spinning worker means it lost its core.
pub const PREEMPTED: Duration = Duration::from_micros(500);

/// How long no spinner starts after one lost its core.
pub const BACK_OFF: Duration = Duration::from_millis(20);

thread_local! {
    static THREADS: Cell<usize> = const { Cell::new(1) };
    /// Parallel sections this thread ran in its own pool (a count that wraps).
    static SECTIONS: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread's last outermost [`run_with`] ran a section in its own pool.
    static SPLIT_LAST_RUN: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is inside an outermost [`run_with`].
    static IN_RUN: Cell<bool> = const { Cell::new(false) };
    /// The pool this thread is worker 0 of (made by [`run_with`]).
    static OWN_POOL: RefCell<Option<OwnPool>> = const { RefCell::new(None) };
}

/// Calling threads that own a pool now.
static OWN_POOLS: AtomicUsize = AtomicUsize::new(0);

/// A calling thread's pool: its workers stop when the thread ends.
struct OwnPool {
    size: usize,
    pool: rayon::ThreadPool,
    spin: Arc<Spin>,
}

/// How long spinners look for work: [`SPIN`], or `GE_CPU_SPIN_US` microseconds (read once; 0:
/// no spinners, the workers sleep right after each section as rayon has them).
fn spin_time() -> Duration {
    static T: OnceLock<Duration> = OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("GE_CPU_SPIN_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_micros)
            .unwrap_or(SPIN)
    })
}

/// The spinner state of one caller's pool.
struct Spin {
    /// A spinner is queued or running.
    active: AtomicBool,
    /// No spinner starts before this many nanoseconds after `epoch`.
    quiet_until: AtomicU64,
    epoch: Instant,
    /// Spinners that ran on a worker, and those of them that stopped because they lost their
    /// core (logged when the pool ends).
    runs: AtomicUsize,
    preempted: AtomicUsize,
}

impl Spin {
    fn new() -> Self {
        Spin {
            active: AtomicBool::new(false),
            quiet_until: AtomicU64::new(0),
            epoch: Instant::now(),
            runs: AtomicUsize::new(0),
            preempted: AtomicUsize::new(0),
        }
    }

    fn nanos(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Hands `pool` a spinner unless one is active or spinning backs off now.
    fn start(self: &Arc<Self>, pool: &rayon::ThreadPool) {
        if spin_time().is_zero()
            || self.nanos(Instant::now()) < self.quiet_until.load(Ordering::Relaxed)
            || self.active.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let spin = self.clone();
        // From worker 0 this goes on the caller's own deque, where a worker steals it.
        pool.spawn(move || spin.run());
    }

    /// Looks for work on a worker until [`SPIN`] passes without any (or the core is lost).
    fn run(&self) {
        // The caller may pop the spinner itself while it waits for a stolen job: it must not
        // spin there.
        if rayon::current_thread_index() != Some(0) {
            self.runs.fetch_add(1, Ordering::Relaxed);
            let mut last_work = Instant::now();
            let mut last_look = last_work;
            loop {
                if let Some(rayon::Yield::Executed) = rayon::yield_now() {
                    last_work = Instant::now();
                    last_look = last_work;
                    continue;
                }
                let now = Instant::now();
                if now.saturating_duration_since(last_look) >= PREEMPTED {
                    self.preempted.fetch_add(1, Ordering::Relaxed);
                    self.quiet_until
                        .store(self.nanos(now + BACK_OFF), Ordering::Relaxed);
                    break;
                }
                if now.saturating_duration_since(last_work) >= spin_time() {
                    break;
                }
                last_look = now;
                std::thread::yield_now();
            }
        }
        self.active.store(false, Ordering::Release);
    }
}

impl Drop for OwnPool {
    fn drop(&mut self) {
        log::debug!(
            "a caller's pool of {} threads ends: {} spinners ran, {} of them lost their core",
            self.size,
            self.spin.runs.load(Ordering::Relaxed),
            self.spin.preempted.load(Ordering::Relaxed)
        );
        OWN_POOLS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The threads the current kernel may use.
pub fn threads() -> usize {
    THREADS.with(Cell::get)
}

/// The work below which kernels stay on one thread: [`MIN_PARALLEL_WORK`], or `GE_CPU_MIN_WORK`
/// units (read once; at least 2).
pub fn min_parallel_work() -> usize {
    static W: OnceLock<usize> = OnceLock::new();
    *W.get_or_init(|| {
        std::env::var("GE_CPU_MIN_WORK")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map(|w| w.max(2))
            .unwrap_or(MIN_PARALLEL_WORK)
    })
}

/// The number of chunks to split `work` units into: 1 unless the work is large and threads are
/// available.
pub fn chunks_for(work: usize) -> usize {
    let t = threads();
    let min = min_parallel_work();
    if t <= 1 || work < min {
        1
    } else {
        t.min(work / (min / 2)).max(1)
    }
}

/// The default thread count: the machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn pool(n: usize) -> Result<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<FxHashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(p) = pools.get(&n) {
        return Ok(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(move |i| format!("ge-cpu-{n}-{i}"))
        .build()
        .map_err(|e| Error::Execution {
            node: String::new(),
            op: String::new(),
            message: format!("could not start {n} threads: {e}"),
        })?;
    let p = Arc::new(p);
    pools.insert(n, p.clone());
    Ok(p)
}

/// Makes this thread worker 0 of a pool of `n` threads unless it has one; true when the
/// thread's own pool has `n` threads.
fn own_pool(n: usize) -> bool {
    OWN_POOL.with(|own| {
        let mut own = own.borrow_mut();
        if let Some(p) = own.as_ref() {
            return p.size == n;
        }
        // A worker of another pool cannot join a second one.
        if rayon::current_thread_index().is_some() {
            return false;
        }
        let id = OWN_POOLS.fetch_add(1, Ordering::Relaxed);
        if id >= MAX_CALLER_POOLS {
            OWN_POOLS.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .use_current_thread()
            .thread_name(move |i| format!("ge-cpu-{id}-{i}"))
            .build();
        match built {
            Ok(pool) => {
                *own = Some(OwnPool {
                    size: n,
                    pool,
                    spin: Arc::new(Spin::new()),
                });
                true
            }
            Err(e) => {
                OWN_POOLS.fetch_sub(1, Ordering::Relaxed);
                log::warn!("could not start {n} threads for this caller: {e}");
                false
            }
        }
    })
}

/// True when this thread is worker 0 of its own pool of `n` threads.
fn in_own_pool(n: usize) -> bool {
    OWN_POOL.with(|own| matches!(own.borrow().as_ref(), Some(p) if p.size == n))
}

/// Hands this thread's own pool a spinner (after a parallel section).
fn spin_own_pool() {
    OWN_POOL.with(|own| {
        if let Some(p) = own.borrow().as_ref() {
            p.spin.start(&p.pool);
        }
    })
}

/// Runs `f` with `n` threads available to its kernels (on the calling thread, which becomes
/// worker 0 of its own pool of `n` threads when `n > 1`). When the thread's previous run split
/// work in its own pool, a spinner starts right away: the workers, asleep since then, wake
/// while the run does its first serial steps instead of when its first parallel section is
/// already under way (a run that never splits wakes nobody).
pub fn run_with<R>(n: usize, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let n = n.max(1);
    let outer = threads() == 1 && !IN_RUN.with(Cell::get);
    if n > 1 && own_pool(n) && outer && SPLIT_LAST_RUN.with(Cell::get) {
        spin_own_pool();
    }
    let sections = SECTIONS.with(Cell::get);
    let _restore = Restore(THREADS.with(|t| t.replace(n)));
    let _in_run = outer.then(|| InRun(IN_RUN.with(|r| r.replace(true))));
    let r = f();
    if outer {
        SPLIT_LAST_RUN.with(|s| s.set(SECTIONS.with(Cell::get) != sections));
    }
    r
}

/// Clears [`IN_RUN`] when the outermost run ends (also when it unwinds).
struct InRun(bool);

impl Drop for InRun {
    fn drop(&mut self) {
        IN_RUN.with(|r| r.set(self.0));
    }
}

/// Puts the previous thread count back when a scope ends (also when it unwinds).
struct Restore(usize);

impl Drop for Restore {
    fn drop(&mut self) {
        THREADS.with(|t| t.set(self.0));
    }
}

/// Runs the parallel section `f` with [`threads`] threads: on this thread when it is worker 0
/// of its own pool of that size (the other workers steal part of it), else in a shared pool
/// (on this thread alone when that is 1 or no pool can start). Inside `f`, [`threads`] is 1.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let n = threads();
    if n <= 1 {
        return f();
    }
    if in_own_pool(n) {
        SECTIONS.with(|s| s.set(s.get().wrapping_add(1)));
        let r = {
            let _restore = Restore(THREADS.with(|t| t.replace(1)));
            f()
        };
        spin_own_pool();
        return r;
    }
    match pool(n) {
        Ok(p) => p.install(f),
        Err(e) => {
            log::warn!("{e}: running on one thread");
            f()
        }
    }
}

/// Calls `f(start, chunk)` on consecutive chunks of `out` (each `unit` elements times a whole
/// number of units), in parallel when `work` is large enough.
pub fn for_chunks_mut<T: Send>(
    out: &mut [T],
    unit: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) -> Result<()> + Sync,
) -> Result<()> {
    let units = out.len().checked_div(unit).unwrap_or(0);
    let parts = chunks_for(work).min(units.max(1));
    if parts <= 1 {
        return f(0, out);
    }
    let per = units.div_ceil(parts) * unit;
    use rayon::prelude::*;
    install(|| {
        out.par_chunks_mut(per)
            .enumerate()
            .try_for_each(|(i, c)| f(i * per, c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_outside_a_pool_and_the_pool_size_inside() {
        assert_eq!(threads(), 1);
        assert_eq!(chunks_for(1 << 30), 1);
        let inside = run_with(3, || Ok(threads())).unwrap();
        assert_eq!(inside, 3);
        assert_eq!(threads(), 1);
        // In a pool thread kernels do not split again.
        assert_eq!(run_with(3, || Ok(install(threads))).unwrap(), 1);
        assert_eq!(run_with(3, || Ok(chunks_for(10))).unwrap(), 1);
        assert_eq!(run_with(3, || Ok(chunks_for(1 << 30))).unwrap(), 3);
    }

    #[test]
    fn chunks_cover_the_output_once() {
        for n in [1, 2, 4] {
            let mut v = vec![0u32; 100_003];
            run_with(n, || {
                for_chunks_mut(&mut v, 1, 1 << 20, |start, c| {
                    for (i, x) in c.iter_mut().enumerate() {
                        *x += (start + i) as u32;
                    }
                    Ok(())
                })
            })
            .unwrap();
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        }
    }

    #[test]
    fn the_caller_is_worker_zero_of_its_own_pool() {
        std::thread::spawn(|| {
            let me = std::thread::current().id();
            let (on_caller, size, index, inside) = run_with(2, || {
                Ok(install(|| {
                    (
                        std::thread::current().id() == me,
                        rayon::current_num_threads(),
                        rayon::current_thread_index(),
                        threads(),
                    )
                }))
            })
            .unwrap();
            assert!(on_caller, "the parallel section runs on the calling thread");
            assert_eq!((size, index, inside), (2, Some(0), 1));
            // Both workers take part: some of a long split runs on another thread.
            let others = AtomicUsize::new(0);
            run_with(2, || {
                install(|| {
                    use rayon::prelude::*;
                    (0..64).into_par_iter().for_each(|_| {
                        if std::thread::current().id() != me {
                            others.fetch_add(1, Ordering::Relaxed);
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    })
                });
                Ok(())
            })
            .unwrap();
            assert!(others.load(Ordering::Relaxed) > 0);
        })
        .join()
        .unwrap();
    }

    /// This thread's spinner state (after it has its own pool).
    fn own_spin() -> Arc<Spin> {
        OWN_POOL.with(|own| own.borrow().as_ref().unwrap().spin.clone())
    }

    /// Waits (up to a minute: a liveness bound, not a timing claim) until no spinner is active.
    fn wait_idle(spin: &Spin) {
        let end = Instant::now() + Duration::from_secs(60);
        while spin.active.load(Ordering::Acquire) {
            assert!(Instant::now() < end, "the spinner never stopped");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_section_leaves_a_spinner_that_stops_and_later_sections_still_split() {
        std::thread::spawn(|| {
            let me = std::thread::current().id();
            let count_others = || {
                let others = AtomicUsize::new(0);
                let mut v = vec![0u32; 64_000];
                run_with(2, || {
                    install(|| {
                        use rayon::prelude::*;
                        v.par_chunks_mut(1000).enumerate().for_each(|(i, c)| {
                            if std::thread::current().id() != me {
                                others.fetch_add(1, Ordering::Relaxed);
                            }
                            c.fill(i as u32);
                            std::thread::sleep(Duration::from_millis(1));
                        })
                    });
                    Ok(())
                })
                .unwrap();
                assert!(v.iter().enumerate().all(|(i, &x)| x == (i / 1000) as u32));
                others.load(Ordering::Relaxed)
            };
            assert!(count_others() > 0);
            let spin = own_spin();
            wait_idle(&spin);
            // Back to back (the spinner of one section may take the next one's work) and after
            // the workers went back to sleep: both workers still take part every time.
            for _ in 0..20 {
                assert!(count_others() > 0);
            }
            wait_idle(&spin);
            assert!(count_others() > 0);
            wait_idle(&spin);
        })
        .join()
        .unwrap();
    }

    /// One (empty) parallel section at 2 threads.
    fn section() {
        run_with(2, || {
            install(|| ());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn no_spinner_starts_while_spinning_backs_off() {
        if spin_time().is_zero() {
            return; // GE_CPU_SPIN_US=0: no spinners at all
        }
        std::thread::spawn(|| {
            section();
            let spin = own_spin();
            wait_idle(&spin);
            let runs = || spin.runs.load(Ordering::Relaxed);
            let before = runs();
            let later = spin.nanos(Instant::now() + Duration::from_secs(3600));
            spin.quiet_until.store(later, Ordering::Relaxed);
            section();
            assert!(!spin.active.load(Ordering::Acquire));
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(runs(), before);
            spin.quiet_until.store(0, Ordering::Relaxed);
            section();
            wait_idle(&spin);
            assert_eq!(runs(), before + 1, "a worker ran the spinner");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_run_after_one_that_split_wakes_the_workers_at_its_start() {
        if spin_time().is_zero() {
            return; // GE_CPU_SPIN_US=0: no spinners at all
        }
        std::thread::spawn(|| {
            section();
            let spin = own_spin();
            let runs = || spin.runs.load(Ordering::Relaxed);
            let quiet = || {
                wait_idle(&spin);
                // (A spinner that lost its core on a busy machine backs off: not here.)
                spin.quiet_until.store(0, Ordering::Relaxed);
                runs()
            };
            // The last run split: the next one starts a spinner before any section of its own.
            let before = quiet();
            run_with(2, || Ok(())).unwrap();
            assert_eq!(quiet(), before + 1, "the run after a split woke a worker");
            // That run did not split: the next one wakes nobody.
            run_with(2, || Ok(())).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(quiet(), before + 1);
            // Nested runs neither wake the workers nor count as the thread's last run.
            section();
            let before = quiet();
            run_with(2, || run_with(2, || Ok(()))).unwrap();
            assert_eq!(quiet(), before + 1, "only the outer run woke a worker");
            run_with(2, || Ok(())).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(quiet(), before + 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn another_thread_count_on_the_same_thread_uses_a_shared_pool() {
        std::thread::spawn(|| {
            let me = std::thread::current().id();
            for (n, on_caller) in [(2, true), (3, false), (2, true)] {
                let (here, size) = run_with(n, || {
                    Ok(install(|| {
                        (
                            std::thread::current().id() == me,
                            rayon::current_num_threads(),
                        )
                    }))
                })
                .unwrap();
                assert_eq!((here, size), (on_caller, n));
                let mut v = vec![0u32; 70_001];
                run_with(n, || {
                    for_chunks_mut(&mut v, 7, 1 << 22, |start, c| {
                        c.iter_mut()
                            .enumerate()
                            .for_each(|(i, x)| *x = (start + i) as u32);
                        Ok(())
                    })
                })
                .unwrap();
                assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_worker_of_another_pool_runs_with_threads() {
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let v = other.install(|| {
            let mut v = vec![0u8; 100_000];
            run_with(2, || {
                for_chunks_mut(&mut v, 1, 1 << 22, |_, c| {
                    c.fill(1);
                    Ok(())
                })
            })
            .map(|()| v)
        });
        assert!(v.unwrap().iter().all(|&x| x == 1));
    }
}
