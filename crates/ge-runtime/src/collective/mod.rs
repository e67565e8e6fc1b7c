//! Collective communication between the processes ("ranks") that run one graph each: the
//! backend of the HCCL operators (`HcomAllReduce`, `HcomAllGather`, ...).
//!
//! [`Communicator`] is the one trait: world size, rank, all-reduce, all-gather, reduce-scatter,
//! broadcast, all-to-all-v, send/receive and barrier over byte buffers with an element type
//! ([`Elem`]) where a reduction needs one. Two implementations:
//!
//! - [`SingleProcess`]: a world of one rank, exact (every collective is a copy);
//! - [`mpi::Mpi`]: MPI, loaded at run time with libloading (no build-time MPI). MPICH's ABI is
//!   supported (the `mpich` wheel that `pip install ge-rs[mpi]` brings); another library kind
//!   (Open MPI) is refused with an error that says so. Every call is nonblocking and polled
//!   against the collective timeout ([`set_timeout`]), so ranks that stopped agreeing get an
//!   error instead of a hang.
//!
//! [`world`] gives the process's communicator, made on first use: MPI when the process was
//! launched by `mpiexec`/`mpirun` with more than one rank (`PMI_SIZE`, `OMPI_COMM_WORLD_SIZE`,
//! `PMIX_SIZE`/`MPI_LOCALNRANKS`), or when a libmpi is already loaded in the process (mpi4py);
//! otherwise the single process. The library is a libmpi already loaded in the process (it
//! must be shared), else `GE_MPI_LIBRARY` when set (the Python package sets it to the `mpich`
//! wheel's library), else `libmpi.so.12` from the loader's path.

pub mod mpi;
pub mod worker;

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The element type of a reduction's buffer (the types MPI reduces natively; 16-bit floats are
/// widened to f32 by the kernels before they reduce).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 => 1,
            Elem::I16 | Elem::U16 => 2,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }
}

/// A reduction (HCCL's names: sum, prod, max, min).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

impl ReduceOp {
    /// The reduction named by a collective's `reduction` attribute.
    pub fn parse(name: &str) -> Result<ReduceOp> {
        Ok(match name {
            "sum" => ReduceOp::Sum,
            "prod" => ReduceOp::Prod,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            _ => {
                return Err(Error::unsupported(format!(
                    "reduction {name:?} (expected one of sum, prod, max, min)"
                )))
            }
        })
    }

    /// `a` reduced with `b`, element by element, into `a` (buffers of `elem`).
    pub fn apply(self, elem: Elem, a: &mut [u8], b: &[u8]) {
        macro_rules! go {
            ($t:ty, $sum:expr, $prod:expr) => {{
                let n = std::mem::size_of::<$t>();
                for (x, y) in a.chunks_exact_mut(n).zip(b.chunks_exact(n)) {
                    let p = <$t>::from_ne_bytes(x.try_into().unwrap_or_default());
                    let q = <$t>::from_ne_bytes(y.try_into().unwrap_or_default());
                    let r: $t = match self {
                        ReduceOp::Sum => $sum(p, q),
                        ReduceOp::Prod => $prod(p, q),
                        ReduceOp::Max => {
                            if q > p {
                                q
                            } else {
                                p
                            }
                        }
                        ReduceOp::Min => {
                            if q < p {
                                q
                            } else {
                                p
                            }
                        }
                    };
                    x.copy_from_slice(&r.to_ne_bytes());
                }
            }};
        }
        match elem {
            Elem::I8 => go!(i8, i8::wrapping_add, i8::wrapping_mul),
            Elem::I16 => go!(i16, i16::wrapping_add, i16::wrapping_mul),
            Elem::I32 => go!(i32, i32::wrapping_add, i32::wrapping_mul),
            Elem::I64 => go!(i64, i64::wrapping_add, i64::wrapping_mul),
            Elem::U8 => go!(u8, u8::wrapping_add, u8::wrapping_mul),
            Elem::U16 => go!(u16, u16::wrapping_add, u16::wrapping_mul),
            Elem::U32 => go!(u32, u32::wrapping_add, u32::wrapping_mul),
            Elem::U64 => go!(u64, u64::wrapping_add, u64::wrapping_mul),
            Elem::F32 => go!(f32, |p: f32, q: f32| p + q, |p: f32, q: f32| p * q),
            Elem::F64 => go!(f64, |p: f64, q: f64| p + q, |p: f64, q: f64| p * q),
        }
    }
}

/// One all-to-all-v exchange: per peer rank, the byte count and offset of what this rank
/// sends to it and receives from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exchange {
    pub send_counts: Vec<usize>,
    pub send_displs: Vec<usize>,
    pub recv_counts: Vec<usize>,
    pub recv_displs: Vec<usize>,
}

/// A world of ranks that run collectives together. Every method is collective over the world
/// (each rank calls it in the same order with agreeing sizes), except `send`/`recv`.
pub trait Communicator: Send + Sync {
    /// What implements it ("single process", "MPI (MPICH 5.0.2)").
    fn name(&self) -> String;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// `buf` (elements of `elem`) reduced over the ranks, in place.
    fn all_reduce(&self, buf: &mut [u8], elem: Elem, op: ReduceOp) -> Result<()>;
    /// Each rank's `send` stacked in rank order into `recv` (`size() * send.len()` bytes).
    fn all_gather(&self, send: &[u8], recv: &mut [u8]) -> Result<()>;
    /// `send` reduced over the ranks; this rank keeps block `rank()` of `size()` equal blocks
    /// in `recv` (`send.len() / size()` bytes).
    fn reduce_scatter(&self, send: &[u8], recv: &mut [u8], elem: Elem, op: ReduceOp) -> Result<()>;
    /// `buf` of rank `root` copied to every rank.
    fn broadcast(&self, buf: &mut [u8], root: usize) -> Result<()>;
    /// Blocks of `send` to each rank, blocks of `recv` from each (bytes, per [`Exchange`]).
    fn all_to_all_v(&self, send: &[u8], recv: &mut [u8], x: &Exchange) -> Result<()>;
    /// `buf` to rank `dest` with `tag`.
    fn send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<()>;
    /// `buf.len()` bytes from rank `src` with `tag`.
    fn recv(&self, buf: &mut [u8], src: usize, tag: i32) -> Result<()>;
    fn barrier(&self) -> Result<()>;
    /// The communicator of the ranks `ranks` of this one (ascending, this rank among them),
    /// collective over those ranks only; `tag` tells apart groups made at the same time.
    fn subgroup(&self, ranks: &[usize], tag: i32) -> Result<Arc<dyn Communicator>>;
}

/// A world of one rank: every collective is exact (a copy, or nothing).
#[derive(Debug, Default)]
pub struct SingleProcess;

fn one_rank(what: &str, rank: usize) -> Result<()> {
    if rank == 0 {
        Ok(())
    } else {
        Err(Error::Device(format!(
            "{what} rank {rank} in a world of one rank (rank 0 only)"
        )))
    }
}

fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::kernel(format!(
            "{what}: buffers of {a} and {b} bytes should be the same size"
        )))
    }
}

impl Communicator for SingleProcess {
    fn name(&self) -> String {
        "single process".into()
    }
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_reduce(&self, _: &mut [u8], _: Elem, _: ReduceOp) -> Result<()> {
        Ok(())
    }
    fn all_gather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        same_len("all-gather", send.len(), recv.len())?;
        recv.copy_from_slice(send);
        Ok(())
    }
    fn reduce_scatter(&self, send: &[u8], recv: &mut [u8], _: Elem, _: ReduceOp) -> Result<()> {
        same_len("reduce-scatter", send.len(), recv.len())?;
        recv.copy_from_slice(send);
        Ok(())
    }
    fn broadcast(&self, _: &mut [u8], root: usize) -> Result<()> {
        one_rank("broadcast from", root)
    }
    fn all_to_all_v(&self, send: &[u8], recv: &mut [u8], x: &Exchange) -> Result<()> {
        x.check(1, send.len(), recv.len())?;
        let n = x.send_counts[0];
        same_len("all-to-all-v", n, x.recv_counts[0])?;
        let (s, r) = (x.send_displs[0], x.recv_displs[0]);
        recv[r..r + n].copy_from_slice(&send[s..s + n]);
        Ok(())
    }
    fn send(&self, _: &[u8], dest: usize, _: i32) -> Result<()> {
        one_rank("send to", dest)?;
        Err(Error::Device(
            "send to rank 0 from rank 0: a world of one rank has no peer".into(),
        ))
    }
    fn recv(&self, _: &mut [u8], src: usize, _: i32) -> Result<()> {
        one_rank("receive from", src)?;
        Err(Error::Device(
            "receive from rank 0 on rank 0: a world of one rank has no peer".into(),
        ))
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
    fn subgroup(&self, ranks: &[usize], _: i32) -> Result<Arc<dyn Communicator>> {
        match ranks {
            [0] => Ok(Arc::new(SingleProcess)),
            _ => Err(Error::Device(format!(
                "a group of ranks {ranks:?} in a world of one rank (rank 0 only)"
            ))),
        }
    }
}

impl Exchange {
    /// Checks the counts and offsets fit a world of `size` and the two buffers.
    pub fn check(&self, size: usize, send_len: usize, recv_len: usize) -> Result<()> {
        let lists = [
            (&self.send_counts, &self.send_displs, send_len, "send"),
            (&self.recv_counts, &self.recv_displs, recv_len, "receive"),
        ];
        for (counts, displs, len, what) in lists {
            if counts.len() != size || displs.len() != size {
                return Err(Error::kernel(format!(
                    "all-to-all-v: {} {what} counts and {} offsets for a world of {size} ranks",
                    counts.len(),
                    displs.len()
                )));
            }
            for (r, (&c, &d)) in counts.iter().zip(displs.iter()).enumerate() {
                if d.checked_add(c).is_none_or(|end| end > len) {
                    return Err(Error::kernel(format!(
                        "all-to-all-v: the {what} block of rank {r} ({c} bytes at {d}) is \
                         outside its buffer of {len} bytes"
                    )));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The process's world and the collective timeout
// ---------------------------------------------------------------------------------------------

/// The collective timeout when neither `ge.exec.hcclExecuteTimeOut` nor `GE_COLLECTIVE_TIMEOUT`
/// sets it, in seconds.
pub const DEFAULT_TIMEOUT_S: u64 = 300;

static TIMEOUT_MS: AtomicU64 = AtomicU64::new(0);

/// How long one collective may wait for the other ranks before it fails: the last
/// [`set_timeout`], else `GE_COLLECTIVE_TIMEOUT` (seconds), else [`DEFAULT_TIMEOUT_S`].
pub fn timeout() -> Duration {
    match TIMEOUT_MS.load(Ordering::Relaxed) {
        0 => {
            let s = std::env::var("GE_COLLECTIVE_TIMEOUT")
                .ok()
                .and_then(|v| parse_timeout(&v, "GE_COLLECTIVE_TIMEOUT").ok());
            s.unwrap_or(Duration::from_secs(DEFAULT_TIMEOUT_S))
        }
        ms => Duration::from_millis(ms),
    }
}

/// Sets the collective timeout of the process (`ge.exec.hcclExecuteTimeOut`).
pub fn set_timeout(d: Duration) {
    TIMEOUT_MS.store(
        d.as_millis().clamp(1, u64::MAX as u128) as u64,
        Ordering::Relaxed,
    );
}

/// A timeout in seconds (decimals allowed); 0 is no timeout (HCCL's meaning of 0).
pub fn parse_timeout(v: &str, from: &str) -> Result<Duration> {
    match v.trim().parse::<f64>() {
        Ok(0.0) => Ok(Duration::MAX),
        Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::Option(format!(
            "{from} must be a number of seconds (0 or more; 0 waits without a limit), got '{v}'"
        ))),
    }
}

/// The world size the launcher announced in the environment (MPICH's Hydra: `PMI_SIZE`; Open
/// MPI: `OMPI_COMM_WORLD_SIZE`; PMIx launchers: `PMIX_SIZE`...), with the variable's name.
pub fn launched_size() -> Option<(usize, &'static str)> {
    [
        "PMI_SIZE",
        "OMPI_COMM_WORLD_SIZE",
        "PMIX_SIZE",
        "MPI_LOCALNRANKS",
    ]
    .into_iter()
    .find_map(|k| {
        let n = std::env::var(k).ok()?.trim().parse::<usize>().ok()?;
        Some((n, k))
    })
}

/// What `pip` installs to run graphs on several ranks.
pub const INSTALL_HINT: &str = "pip install ge-rs[mpi]";

fn make_world() -> Result<Arc<dyn Communicator>> {
    let launched = launched_size();
    let loaded = mpi::loaded_library();
    let wanted = std::env::var("GE_MPI_LIBRARY")
        .ok()
        .filter(|p| !p.is_empty());
    let need_mpi = launched.is_some_and(|(n, _)| n > 1) || loaded.is_some();
    if !need_mpi {
        return Ok(Arc::new(SingleProcess));
    }
    // A library already in the process (mpi4py's) first: two MPIs in one process cannot work.
    let path = loaded.or(wanted);
    match mpi::Mpi::open(path.as_deref()) {
        Ok(m) => Ok(Arc::new(m)),
        Err(e) => {
            let (n, var) = launched.unwrap_or((1, "an MPI library in the process"));
            Err(Error::Device(format!(
                "this process was launched with {n} ranks ({var}) but MPI is not usable: {e} \
                 (install MPICH with `{INSTALL_HINT}`, or set GE_MPI_LIBRARY to an MPICH \
                 libmpi.so)"
            )))
        }
    }
}

/// The process's communicator (made on first use; see the module's text). An MPI launch whose
/// library cannot be loaded is an error, the same on every call.
pub fn world() -> Result<Arc<dyn Communicator>> {
    static WORLD: OnceLock<std::result::Result<Arc<dyn Communicator>, Error>> = OnceLock::new();
    WORLD.get_or_init(make_world).clone()
}

// ---------------------------------------------------------------------------------------------
// Groups: GE's (HCCL's) groups of ranks made from rank lists
// ---------------------------------------------------------------------------------------------

/// GE's group of every rank.
pub const WORLD_GROUP: &str = "hccl_world_group";

/// A group made by [`create_group`]: its world ranks, and its communicator on the ranks in it.
struct GroupEntry {
    ranks: Vec<usize>,
    comm: Option<Arc<dyn Communicator>>,
}

fn groups() -> std::sync::MutexGuard<'static, HashMap<String, GroupEntry>> {
    static GROUPS: OnceLock<Mutex<HashMap<String, GroupEntry>>> = OnceLock::new();
    GROUPS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Creates group `name` of the world ranks `ranks` (HCCL's `HcomCreateGroup`): every rank of
/// the group calls it with the same ranks (the ranks outside may call it too, to learn its
/// ranks; they make no communicator). Ranks ascend, without repeats, below the world size;
/// `hccl_world_group` and a name in use are refused.
pub fn create_group(name: &str, ranks: &[usize]) -> Result<()> {
    let bad = |why: String| Error::Option(format!("group '{name}' of ranks {ranks:?}: {why}"));
    if name.is_empty() || name.len() > 128 {
        return Err(bad("a group's name has 1 to 128 characters".into()));
    }
    if name == WORLD_GROUP {
        return Err(bad(format!(
            "{WORLD_GROUP} is every rank; it is not created"
        )));
    }
    if ranks.is_empty() {
        return Err(bad("a group has at least one rank".into()));
    }
    if ranks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("the ranks must ascend, without repeats".into()));
    }
    let w = world()?;
    if let Some(r) = ranks.iter().find(|&&r| r >= w.size()) {
        return Err(bad(format!(
            "rank {r} is outside the world of {} ranks ({})",
            w.size(),
            w.name()
        )));
    }
    if groups().contains_key(name) {
        return Err(bad(format!(
            "a group named '{name}' exists (destroy_group it first)"
        )));
    }
    let comm = if ranks.contains(&w.rank()) {
        // The same tag on every rank of the group: from its name.
        let tag = name.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ b as u32).wrapping_mul(0x0100_0193)
        }) & 0x7fff;
        Some(w.subgroup(ranks, tag as i32)?)
    } else {
        None
    };
    groups().insert(
        name.to_string(),
        GroupEntry {
            ranks: ranks.to_vec(),
            comm,
        },
    );
    Ok(())
}

/// Creates the groups of GE's `ge.exec.hcomGrouplist` option: a JSON list of
/// `{"group_name": ..., "group_rank_list": [...]}` (GE's `InitGroup`). `hccl_world_group` is
/// skipped, as is a group that exists with the same ranks (the option is read at every level);
/// one that exists with other ranks is an error.
pub fn create_groups_from_option(text: &str) -> Result<()> {
    let key = "ge.exec.hcomGrouplist";
    let bad = |why: String| Error::Option(format!("{key} {why}"));
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("is not JSON ({e}): '{text}'")))?;
    let list = json.as_array().ok_or_else(|| {
        bad(format!(
            "must be a JSON list of {{\"group_name\": ..., \"group_rank_list\": [...]}}, got \
             '{text}'"
        ))
    })?;
    for g in list {
        let name = g.get("group_name").and_then(|v| v.as_str());
        let ranks: Option<Vec<usize>> = g
            .get("group_rank_list")
            .and_then(|v| v.as_array())
            .and_then(|a| a.iter().map(|r| r.as_u64().map(|r| r as usize)).collect());
        let (Some(name), Some(ranks)) = (name, ranks) else {
            return Err(bad(format!(
                "entry {g} needs \"group_name\" (a string) and \"group_rank_list\" (rank \
                 numbers)"
            )));
        };
        if name == WORLD_GROUP {
            continue;
        }
        match group_ranks(name)? {
            Some(have) if have == ranks => continue,
            Some(have) => {
                return Err(bad(format!(
                    "gives group '{name}' ranks {ranks:?}, but it exists with ranks {have:?}"
                )))
            }
            None => create_group(name, &ranks)?,
        }
    }
    Ok(())
}

/// Forgets group `name` (graphs compiled with it keep their communicator); false when there is
/// no such group.
pub fn destroy_group(name: &str) -> bool {
    groups().remove(name).is_some()
}

/// The world ranks of group `name` (every rank for `hccl_world_group`), if it exists.
pub fn group_ranks(name: &str) -> Result<Option<Vec<usize>>> {
    if name == WORLD_GROUP {
        return Ok(Some((0..world()?.size()).collect()));
    }
    Ok(groups().get(name).map(|g| g.ranks.clone()))
}

/// The communicator of group `name` on this rank: the world for `hccl_world_group`; an error
/// when no such group was created here or this rank is not in it.
pub fn group(name: &str) -> Result<Arc<dyn Communicator>> {
    if name == WORLD_GROUP {
        return world();
    }
    let w = world()?;
    match groups().get(name) {
        Some(GroupEntry { comm: Some(c), .. }) => Ok(c.clone()),
        Some(GroupEntry { ranks, comm: None }) => Err(Error::Option(format!(
            "rank {} is not in group '{name}' (ranks {ranks:?}): only the group's ranks run \
             its collectives",
            w.rank()
        ))),
        None => Err(Error::Option(format!(
            "group '{name}' does not exist on rank {}: create it with \
             ge.distributed.create_group('{name}', ranks) on every rank of the group (or use \
             {WORLD_GROUP})",
            w.rank()
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// GE's rank options: ge.exec.rankTableFile, ge.exec.rankId
// ---------------------------------------------------------------------------------------------

/// The ranks of a GE rank table (its `rank_id`s with the `device_id` beside each, at any depth:
/// version 1.0 lists them under `server_list[].device[]`, 2.0 under `rank_list[]`).
pub fn rank_table(path: &str) -> Result<Vec<(usize, Option<String>)>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Option(format!(
            "ge.exec.rankTableFile '{path}' cannot be read: {e}"
        ))
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::Option(format!(
            "ge.exec.rankTableFile '{path}' is not a JSON rank table: {e}"
        ))
    })?;
    fn text_of(v: &serde_json::Value) -> Option<String> {
        match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
    fn walk(v: &serde_json::Value, out: &mut Vec<(String, Option<String>)>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(r) = m.get("rank_id").and_then(text_of) {
                    out.push((r, m.get("device_id").and_then(text_of)));
                }
                m.values().for_each(|c| walk(c, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&json, &mut found);
    let mut ranks = Vec::with_capacity(found.len());
    for (r, d) in found {
        let id = r.trim().parse::<usize>().map_err(|_| {
            Error::Option(format!(
                "ge.exec.rankTableFile '{path}': rank_id '{r}' is not a rank number"
            ))
        })?;
        if ranks.iter().any(|(q, _)| *q == id) {
            return Err(Error::Option(format!(
                "ge.exec.rankTableFile '{path}' lists rank_id {id} twice"
            )));
        }
        ranks.push((id, d));
    }
    if ranks.is_empty() {
        return Err(Error::Option(format!(
            "ge.exec.rankTableFile '{path}' lists no rank (no rank_id)"
        )));
    }
    ranks.sort();
    Ok(ranks)
}

/// Checks GE's rank options against the world: the rank table's rank count is the world size
/// and its ranks are 0..N; `ge.exec.rankId` is this process's rank; where the table gives this
/// rank a `device_id` and `ge.exec.deviceId` was given, they agree.
pub fn check_rank_options(
    comm: &dyn Communicator,
    table: Option<&str>,
    rank_id: Option<usize>,
    device_id: Option<i32>,
) -> Result<()> {
    let (rank, size) = (comm.rank(), comm.size());
    if let Some(id) = rank_id {
        if id != rank {
            return Err(Error::Option(format!(
                "ge.exec.rankId is {id}, but this process is rank {rank} of {size} ({}); \
                 under mpiexec the rank comes from MPI: leave ge.exec.rankId out or give {rank}",
                comm.name()
            )));
        }
    }
    let Some(path) = table else { return Ok(()) };
    let ranks = rank_table(path)?;
    if ranks.len() != size {
        return Err(Error::Option(format!(
            "ge.exec.rankTableFile '{path}' lists {} ranks, but the world has {size} ({}); \
             launch with `mpiexec -n {} ...`",
            ranks.len(),
            comm.name(),
            ranks.len()
        )));
    }
    if let Some((i, (id, _))) = ranks.iter().enumerate().find(|(i, (id, _))| i != id) {
        return Err(Error::Option(format!(
            "ge.exec.rankTableFile '{path}': the rank_ids must be 0..{size}, but rank_id {id} \
             is in place {i}"
        )));
    }
    if let (Some(dev), Some(table_dev)) = (device_id, ranks[rank].1.as_deref()) {
        if table_dev.trim() != dev.to_string() {
            return Err(Error::Option(format!(
                "ge.exec.deviceId is {dev}, but ge.exec.rankTableFile '{path}' gives rank \
                 {rank} device_id {table_dev}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_process_is_exact() {
        let c = SingleProcess;
        assert_eq!((c.rank(), c.size()), (0, 1));
        let mut b = vec![1u8, 2, 3, 4];
        c.all_reduce(&mut b, Elem::F32, ReduceOp::Sum).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        let mut r = vec![0u8; 4];
        c.all_gather(&b, &mut r).unwrap();
        assert_eq!(r, b);
        let mut r = vec![0u8; 4];
        c.reduce_scatter(&b, &mut r, Elem::I8, ReduceOp::Max)
            .unwrap();
        assert_eq!(r, b);
        c.broadcast(&mut r, 0).unwrap();
        assert!(c.broadcast(&mut r, 1).is_err());
        let x = Exchange {
            send_counts: vec![2],
            send_displs: vec![1],
            recv_counts: vec![2],
            recv_displs: vec![0],
        };
        let mut r = vec![0u8; 2];
        c.all_to_all_v(&b, &mut r, &x).unwrap();
        assert_eq!(r, [2, 3]);
        let bad = Exchange {
            send_displs: vec![3],
            ..x
        };
        let e = c.all_to_all_v(&b, &mut r, &bad).unwrap_err();
        assert!(e.to_string().contains("outside its buffer"), "{e}");
        assert!(c.send(&b, 0, 0).is_err());
        c.barrier().unwrap();
        assert_eq!(
            c.all_gather(&b, &mut [0u8; 3]).unwrap_err().to_string(),
            "node '' (): all-gather: buffers of 4 and 3 bytes should be the same size"
        );
    }

    #[test]
    fn single_process_groups_are_rank_zero_only() {
        create_group("m1_g0", &[0]).unwrap();
        assert_eq!(group_ranks("m1_g0").unwrap(), Some(vec![0]));
        assert_eq!(group("m1_g0").unwrap().size(), 1);
        let e = create_group("m1_g0", &[0]).unwrap_err().to_string();
        assert!(e.contains("exists"), "{e}");
        for (ranks, want) in [
            (&[0usize, 1][..], "rank 1 is outside the world of 1 ranks"),
            (&[][..], "at least one rank"),
            (&[1, 0][..], "must ascend"),
        ] {
            let e = create_group("m1_bad", ranks).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let e = create_group(WORLD_GROUP, &[0]).unwrap_err().to_string();
        assert!(e.contains("is every rank"), "{e}");
        assert!(destroy_group("m1_g0"));
        assert!(!destroy_group("m1_g0"));
        let e = group("m1_g0").err().unwrap().to_string();
        assert!(e.contains("group 'm1_g0' does not exist on rank 0"), "{e}");
        assert_eq!(group(WORLD_GROUP).unwrap().size(), 1);
        assert!(SingleProcess.subgroup(&[0, 1], 0).is_err());
    }

    #[test]
    fn ge_group_lists_create_groups() {
        let list = r#"[{"group_name": "m1_l0", "group_rank_list": [0]},
                       {"group_name": "hccl_world_group", "group_rank_list": [0]}]"#;
        create_groups_from_option(list).unwrap();
        create_groups_from_option(list).unwrap(); // again: the same group, skipped
        assert_eq!(group_ranks("m1_l0").unwrap(), Some(vec![0]));
        for (text, want) in [
            ("nope", "is not JSON"),
            ("{}", "must be a JSON list"),
            (r#"[{"group_name": "m1_l1"}]"#, "needs \"group_name\""),
            (
                r#"[{"group_name": "m1_l0", "group_rank_list": [0, 1]}]"#,
                "exists with ranks [0]",
            ),
            (
                r#"[{"group_name": "m1_l2", "group_rank_list": [1]}]"#,
                "rank 1 is outside the world",
            ),
        ] {
            let e = create_groups_from_option(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(destroy_group("m1_l0"));
    }

    #[test]
    fn reductions_apply_elementwise() {
        let enc = |v: &[f32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let dec = |b: &[u8]| {
            b.chunks_exact(4)
                .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
                .collect::<Vec<f32>>()
        };
        for (op, want) in [
            (ReduceOp::Sum, [4.0, -1.0]),
            (ReduceOp::Prod, [3.0, -6.0]),
            (ReduceOp::Max, [3.0, 2.0]),
            (ReduceOp::Min, [1.0, -3.0]),
        ] {
            let mut a = enc(&[1.0, 2.0]);
            op.apply(Elem::F32, &mut a, &enc(&[3.0, -3.0]));
            assert_eq!(dec(&a), want, "{op:?}");
        }
        let mut a = vec![200u8];
        ReduceOp::Sum.apply(Elem::U8, &mut a, &[100]);
        assert_eq!(a, [44]); // wraps, as MPI's integer sum does in practice
        assert!(ReduceOp::parse("mean").is_err());
        assert_eq!(ReduceOp::parse("prod").unwrap(), ReduceOp::Prod);
    }

    #[test]
    fn timeouts_parse_in_seconds() {
        assert_eq!(
            parse_timeout("2.5", "t").unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(parse_timeout("0", "t").unwrap(), Duration::MAX);
        for bad in ["-1", "x", "", "inf", "1e10"] {
            assert!(parse_timeout(bad, "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn rank_tables_are_checked_against_the_world() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rt.json");
        let p = path.to_str().unwrap();
        std::fs::write(
            &path,
            r#"{"version": "1.0", "server_list": [{"device": [
                {"device_id": "0", "rank_id": "0"}, {"device_id": "3", "rank_id": "1"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            rank_table(p).unwrap(),
            vec![(0, Some("0".into())), (1, Some("3".into()))]
        );
        let e = check_rank_options(&SingleProcess, Some(p), None, None).unwrap_err();
        assert!(
            e.to_string().contains("lists 2 ranks, but the world has 1"),
            "{e}"
        );
        let e = check_rank_options(&SingleProcess, None, Some(1), None).unwrap_err();
        assert!(e.to_string().contains("ge.exec.rankId is 1"), "{e}");
        check_rank_options(&SingleProcess, None, Some(0), Some(4)).unwrap();
        std::fs::write(&path, r#"{"rank_list": [{"rank_id": 0, "device_id": 2}]}"#).unwrap();
        check_rank_options(&SingleProcess, Some(p), Some(0), Some(2)).unwrap();
        let e = check_rank_options(&SingleProcess, Some(p), None, Some(1)).unwrap_err();
        assert!(e.to_string().contains("gives rank 0 device_id 2"), "{e}");
        std::fs::write(&path, "{}").unwrap();
        assert!(rank_table(p).unwrap_err().to_string().contains("no rank"));
        std::fs::write(&path, "nope").unwrap();
        assert!(rank_table(p).is_err());
    }
}
