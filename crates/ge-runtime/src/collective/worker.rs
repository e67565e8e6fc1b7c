//! The thread that runs a replayed plan's collectives while the plan computes on.
//!
//! A plan whose collective has compute between it and its first reader splits it in two
//! (see `plan.rs`): a start step hands the collective to this process's one communication
//! thread ([`start`]) and a wait step before the first reader takes its result
//! ([`Pending::wait`]). The thread runs what it is given one at a time, in the order it was
//! given: the plan's order, which is the same on every rank, so the ranks still issue their
//! collectives alike. It drives MPI's progress itself (MPICH progresses only inside MPI calls),
//! so the transfer goes on while the plan's kernels run on the calling thread and the pool.
//!
//! A collective that runs where it stands (blocking: one whose next step reads it, or an eager
//! one) first waits for the thread to be idle ([`wait_idle`]), so it too comes after the
//! collectives started before it. Sends stay on the calling thread: they do not wait for their
//! peer.
//!
//! `GE_COLLECTIVE_OVERLAP=0` turns the split off: every collective then runs where it stands,
//! blocking the plan (eager runs always do).

use crate::error::{Error, Result};
use crate::value::Value;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Condvar, Mutex, OnceLock};

/// The collectives handed to the thread and not yet finished, and its signal when that falls.
static IN_FLIGHT: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

fn in_flight(change: isize) {
    let mut n = IN_FLIGHT.0.lock().unwrap_or_else(|p| p.into_inner());
    *n = n.saturating_add_signed(change);
    if *n == 0 {
        IN_FLIGHT.1.notify_all();
    }
}

/// Runs waiting for the communication thread ([`Pending::wait`], [`wait_idle`]).
static WAITERS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static ON_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether a result is awaited now: always on a thread other than the communication thread
/// (its collective runs where it stands, blocking); on the communication thread, while a run
/// waits for it. MPI's polling is eager then, and gentle otherwise.
pub fn awaited() -> bool {
    !ON_THREAD.with(Cell::get) || WAITERS.load(Ordering::Relaxed) > 0
}

/// Counts a waiter while it lives.
struct Waiting;

impl Waiting {
    fn new() -> Waiting {
        WAITERS.fetch_add(1, Ordering::Relaxed);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Waits until every collective handed to the communication thread finished: a collective
/// about to run where it stands (blocking) then comes after them, as on every other rank.
pub fn wait_idle() {
    let mut n = IN_FLIGHT.0.lock().unwrap_or_else(|p| p.into_inner());
    let _w = (*n > 0).then(Waiting::new);
    while *n > 0 {
        n = IN_FLIGHT.1.wait(n).unwrap_or_else(|p| p.into_inner());
    }
}

/// A collective to run: it owns what it reads.
type Job = Box<dyn FnOnce() -> Result<Vec<Value>> + Send>;
/// A job with where its outputs go.
type Queued = (Job, Sender<Result<Vec<Value>>>);

/// A collective handed to the communication thread: its outputs, once it finished.
pub struct Pending(Receiver<Result<Vec<Value>>>);

impl Pending {
    /// Waits for the collective and gives its outputs (or its error). A collective always
    /// ends: each of its MPI calls fails after the collective timeout.
    pub fn wait(self) -> Result<Vec<Value>> {
        let _w = Waiting::new();
        self.0.recv().unwrap_or_else(|_| {
            Err(Error::Device(
                "the communication thread stopped before the collective finished".into(),
            ))
        })
    }
}

/// Whether plans compiled now split their collectives (`GE_COLLECTIVE_OVERLAP`, on unless
/// `0`; read at each compile).
pub fn overlap_enabled() -> bool {
    std::env::var("GE_COLLECTIVE_OVERLAP").map_or(true, |v| v.trim() != "0")
}

fn queue() -> Option<&'static Mutex<Sender<Queued>>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Queued>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Queued>();
            std::thread::Builder::new()
                .name("ge-collectives".into())
                .spawn(move || {
                    ON_THREAD.with(|t| t.set(true));
                    for (job, reply) in rx {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
                            .unwrap_or_else(|_| Err(Error::Device("a collective panicked".into())));
                        // The run that waits may have ended with another step's error.
                        let _ = reply.send(r);
                        in_flight(-1);
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        })
        .as_ref()
}

/// Hands `job` to the communication thread (run here, at once, where the thread could not be
/// made).
pub fn start(job: impl FnOnce() -> Result<Vec<Value>> + Send + 'static) -> Pending {
    let (tx, rx) = channel();
    let job: Job = Box::new(job);
    in_flight(1);
    let sent = match queue() {
        Some(q) => {
            let q = q.lock().unwrap_or_else(|p| p.into_inner());
            q.send((job, tx)).map_err(|e| e.0)
        }
        None => Err((job, tx)),
    };
    if let Err((job, tx)) = sent {
        let _ = tx.send(job());
        in_flight(-1);
    }
    Pending(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    #[test]
    fn jobs_run_in_the_order_given_and_give_their_results() {
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let pending: Vec<Pending> = (0..8)
            .map(|i| {
                let order = order.clone();
                start(move || {
                    order.lock().unwrap().push(i);
                    Ok(vec![Value::F32(ArrayD::from_elem(vec![2], i as f32))])
                })
            })
            .collect();
        // Waited for in reverse: each still gives its own result.
        for (i, p) in pending.into_iter().enumerate().rev() {
            let v = p.wait().unwrap();
            assert_eq!(v[0], Value::F32(ArrayD::from_elem(vec![2], i as f32)));
        }
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn waiting_for_idle_waits_for_every_job() {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let pending: Vec<Pending> = (0..4)
            .map(|_| {
                let done = done.clone();
                start(move || {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Vec::new())
                })
            })
            .collect();
        wait_idle();
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 4);
        drop(pending);
    }

    #[test]
    fn errors_and_panics_come_back_as_errors() {
        let e = start(|| Err(Error::Device("no peer".into()))).wait();
        assert!(e.unwrap_err().to_string().contains("no peer"));
        let p = start(|| panic!("boom"));
        assert!(p.wait().unwrap_err().to_string().contains("panicked"));
        // The thread lives on.
        assert!(start(|| Ok(Vec::new())).wait().unwrap().is_empty());
    }
}
