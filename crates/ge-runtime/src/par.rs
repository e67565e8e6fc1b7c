//! Threads: the `ge.threads` option and how kernels split large work.
//!
//! A run executes on its caller's thread; [`run_with`] records how many threads its kernels
//! may use and, for more than one, makes the calling thread worker 0 of its own rayon pool of
//! that size (made on the thread's first such run and kept while the thread lives: `n - 1`
//! pool threads plus the caller). A kernel with large work calls [`install`], which then runs
//! its parallel section right on the caller: rayon's work stealing hands part of it to the
//! other workers while the caller works through the rest, so a worker that wakes late costs
//! nothing but the wake-up (the caller takes back what was not stolen), and the idle workers
//! sleep between kernels (rayon spins a few rounds of `yield_now`, then parks) instead of
//! competing with the caller for its core. A thread that cannot have its own pool (already a
//! worker of another rayon pool, a second thread count on the same thread, or more calling
//! threads than [`MAX_CALLER_POOLS`]) hands its parallel sections to a shared pool of `n`
//! threads instead and waits for them. Small kernels never leave the caller's thread, and
//! inside a parallel section [`threads`] is 1: nested kernels do not split again.

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Work (elements, or multiply-adds divided by [`MACS_PER_UNIT`]) below which a kernel stays
/// on one thread: waking the pool would cost more than splitting saves.
pub const MIN_PARALLEL_WORK: usize = 1 << 18;

/// Multiply-adds that count as one unit of work (they cost about one element-wise operation).
pub const MACS_PER_UNIT: usize = 8;

/// Calling threads that may own a pool (each keeps `n - 1` pool threads for its life).
pub const MAX_CALLER_POOLS: usize = 8;

thread_local! {
    static THREADS: Cell<usize> = const { Cell::new(1) };
    /// The pool this thread is worker 0 of (made by [`run_with`]).
    static OWN_POOL: RefCell<Option<OwnPool>> = const { RefCell::new(None) };
}

/// Calling threads that own a pool now.
static OWN_POOLS: AtomicUsize = AtomicUsize::new(0);

/// A calling thread's pool: its workers stop when the thread ends.
struct OwnPool {
    size: usize,
    _pool: rayon::ThreadPool,
}

impl Drop for OwnPool {
    fn drop(&mut self) {
        OWN_POOLS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The threads the current kernel may use.
pub fn threads() -> usize {
    THREADS.with(Cell::get)
}

/// The number of chunks to split `work` units into: 1 unless the work is large and threads are
/// available.
pub fn chunks_for(work: usize) -> usize {
    let t = threads();
    if t <= 1 || work < MIN_PARALLEL_WORK {
        1
    } else {
        t.min(work / (MIN_PARALLEL_WORK / 2)).max(1)
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
                    _pool: pool,
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

/// Runs `f` with `n` threads available to its kernels (on the calling thread, which becomes
/// worker 0 of its own pool of `n` threads when `n > 1`).
pub fn run_with<R>(n: usize, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let n = n.max(1);
    if n > 1 {
        own_pool(n);
    }
    let _restore = Restore(THREADS.with(|t| t.replace(n)));
    f()
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
        let _restore = Restore(THREADS.with(|t| t.replace(1)));
        return f();
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
