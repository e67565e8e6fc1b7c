//! Kernels of the HCCL collectives HcomAllReduce, HcomAllGather, HcomReduceScatter,
//! HcomBroadcast, HcomAllToAllV and of HcomSend/HcomReceive, on the communicator of the node's
//! `group` ([`crate::collective::group`]: the world for `hccl_world_group`, else a group made
//! from a rank list).
//!
//! Without an MPI launch the world has one rank: all-reduce, all-gather and reduce-scatter of
//! one rank, a broadcast from rank 0 and an all-to-all-v are exact copies, and a node that
//! needs more ranks (rank_size above 1, a root_rank other than 0, a peer for a send) is refused
//! when the graph is compiled, with an error naming `pip install ge-rs[mpi]` and `mpiexec`.
//! Under `mpiexec -n N` the world is MPI's (`hccl_world_group` is every rank): `rank_size` must
//! be the group's size and `root_rank`, `dest_rank`, `src_rank` ranks of the group.
//!
//! An all-to-all-v first exchanges every rank's send and receive counts: what rank r sends to
//! rank j must be what j expects from r, else every rank raises the same error. A send
//! carries a header (dtype, shape) before its data, so a receive whose `shape`/`dtype` differ
//! from what its peer sent is an error naming both (the data is still taken off the wire).
//!
//! Before each collective on more than one rank the ranks exchange a small descriptor (the
//! operator, its reduction, rank_size or root, each input's dtype and shape): when they
//! disagree every rank raises the same error listing each rank's input, instead of running a
//! collective whose sizes differ (which would hang or corrupt memory). float16 and bfloat16
//! reduce in float32, rounded once at the end.

use super::common::str_attr;
use super::{input, Kernel, Kernels, NodeInfo};
pub use crate::collective::WORLD_GROUP;
use crate::collective::{group, Communicator, Elem, Exchange, ReduceOp, INSTALL_HINT};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::DataType;
use ndarray::{ArrayD, IxDyn};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

/// The error of a collective that needs more ranks than its group has.
fn needs_ranks(op: &str, what: String, comm: &dyn Communicator, group: &str) -> Error {
    let n = comm.size();
    if n == 1 && group == WORLD_GROUP {
        Error::unsupported(format!(
            "{op} needs {what}: ge-rs runs collectives in one process only (world size 1) \
             unless launched by MPI: `{INSTALL_HINT}`, then `mpiexec -n <ranks> python prog.py`"
        ))
    } else if group == WORLD_GROUP {
        Error::unsupported(format!(
            "{op} needs {what}, but {WORLD_GROUP} has {n} ranks ({}): launch with as many \
             ranks as the graph was built for",
            comm.name()
        ))
    } else {
        Error::unsupported(format!(
            "{op} needs {what}, but group '{group}' has {n} ranks: the graph was built for \
             another group"
        ))
    }
}

/// The most an `sr_tag` may be (MPI's smallest guaranteed tag bound).
const MAX_SR_TAG: i64 = 32767;

/// What each collective does, read from its node once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter(ReduceOp),
    Broadcast(usize),
    AllToAllV,
    /// To this rank (of the group), with this tag.
    Send(usize, i32),
}

impl Kind {
    /// The words of the descriptor that name the collective.
    fn code(self) -> [i64; 2] {
        let red = |r: ReduceOp| r as i64;
        match self {
            Kind::AllReduce(r) => [1, red(r)],
            Kind::AllGather => [2, 0],
            Kind::ReduceScatter(r) => [3, red(r)],
            Kind::Broadcast(root) => [4, root as i64],
            Kind::AllToAllV => [5, 0],
            Kind::Send(..) => [6, 0],
        }
    }
}

/// A collective node read once: its communicator and what it does.
pub(crate) struct Collective {
    comm: Arc<dyn Communicator>,
    op: String,
    action: Action,
}

enum Action {
    Run(Kind),
    /// A receive from this rank (of the group), with this tag.
    Receive(usize, i32, Want),
}

impl Collective {
    /// Runs it on the arguments of one call (a kernel's: each input present).
    pub(crate) fn call_args(&self, inputs: &[Option<&Value>]) -> Result<Vec<Value>> {
        let xs = (0..inputs.len())
            .map(|i| input(inputs, i))
            .collect::<Result<Vec<&Value>>>()?;
        self.call(&xs)
    }

    /// Runs it on inputs it owns (a plan's: each input its step reads last moved in): an
    /// all-reduce and a broadcast then work in place on their input, without a copy.
    pub(crate) fn call_owned(&self, inputs: Vec<Option<Value>>) -> Result<Vec<Value>> {
        let kind = match self.action {
            Action::Run(k @ (Kind::AllReduce(_) | Kind::Broadcast(_))) => k,
            _ => {
                let args: Vec<Option<&Value>> = inputs.iter().map(Option::as_ref).collect();
                return self.call_args(&args);
            }
        };
        let xs = inputs
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| Error::kernel(format!("input {i} is missing"))))
            .collect::<Result<Vec<Value>>>()?;
        if self.comm.size() == 1 {
            return Ok(xs);
        }
        let op = self.op.as_str();
        agree(&*self.comm, op, kind, &xs.iter().collect::<Vec<_>>())?;
        let comm = &self.comm;
        let outs: Result<Vec<Value>> = match kind {
            Kind::AllReduce(r) => xs
                .into_iter()
                .take(1)
                .map(|x| {
                    let dims = x.shape().to_vec();
                    reduce(x, |bytes, elem| {
                        comm.all_reduce(bytes, elem, r)?;
                        Ok((dims, None))
                    })
                })
                .collect(),
            _ => xs.into_iter().map(|x| broadcast(comm, x, kind)).collect(),
        };
        outs.map_err(|e| device_error_of(op, e))
    }

    /// Runs it on the inputs of one call (an all-reduce or broadcast on copies of them).
    fn call(&self, xs: &[&Value]) -> Result<Vec<Value>> {
        match &self.action {
            Action::Run(Kind::AllReduce(_) | Kind::Broadcast(_)) => {
                self.call_owned(xs.iter().map(|&x| Some(x.clone())).collect())
            }
            Action::Run(kind) => run(&self.comm, &self.op, *kind, xs),
            Action::Receive(r, t, want) => receive(&*self.comm, *r, *t, want).map(|v| vec![v]),
        }
    }

    /// Whether a plan may start it and take its result later ([`crate::collective::worker`]):
    /// a collective on more than one rank that waits for its peers (a send does not: its
    /// transfer already finishes in the background).
    pub(crate) fn waits_for_peers(&self) -> bool {
        self.comm.size() > 1 && !matches!(self.action, Action::Run(Kind::Send(..)))
    }
}

/// The ops [`collective_of`] reads.
pub(crate) const COLLECTIVE_OPS: &[&str] = &[
    "HcomAllReduce",
    "HcomAllGather",
    "HcomReduceScatter",
    "HcomBroadcast",
    "HcomAllToAllV",
    "HcomSend",
    "HcomReceive",
];

fn collective_factory(info: &NodeInfo) -> Result<Kernel> {
    let c = collective_of(info)?;
    Ok(Box::new(move |inputs| {
        if c.waits_for_peers() {
            crate::collective::worker::wait_idle();
        }
        c.call_args(inputs)
    }))
}

/// The checks every collective makes at compile time: its group, its reduction (where it has
/// one) and the group size or root its attributes ask for.
pub(crate) fn collective_of(info: &NodeInfo) -> Result<Collective> {
    let op = info.op().to_string();
    let group_name = str_attr(info, "group", WORLD_GROUP)?;
    let comm = group(&group_name).map_err(|e| match e {
        Error::Option(m) => Error::Compile(format!("node '{}' ({op}): {m}", info.node.name)),
        e => e,
    })?;
    let group = group_name.as_str();
    let reduction = || -> Result<ReduceOp> {
        let r = str_attr(info, "reduction", "")?;
        ReduceOp::parse(&r).map_err(|_| {
            Error::unsupported(format!(
                "{op} with reduction {r:?} (expected one of {})",
                es_core::infer::REDUCTIONS.join(", ")
            ))
        })
    };
    let rank_size = || -> Result<()> {
        let n = info.int("rank_size", 1)?;
        if n != comm.size() as i64 {
            return Err(needs_ranks(
                &op,
                format!("{n} ranks (rank_size={n})"),
                &*comm,
                group,
            ));
        }
        Ok(())
    };
    // A peer of a send or receive: another rank of the group; the tag: MPI's.
    let peer = |attr: &str| -> Result<(usize, i32)> {
        let r = info.int(attr, -1)?;
        let tag = info.int("sr_tag", 0)?;
        if !(0..=MAX_SR_TAG).contains(&tag) {
            return Err(Error::unsupported(format!(
                "{op} with sr_tag {tag} (ge-rs takes 0..={MAX_SR_TAG})"
            )));
        }
        if r < 0 || r >= comm.size() as i64 {
            return Err(needs_ranks(
                &op,
                format!("at least {} ranks ({attr}={r})", r.saturating_add(1)),
                &*comm,
                group,
            ));
        }
        if r as usize == comm.rank() {
            return Err(Error::unsupported(format!(
                "{op} with {attr}={r}, this rank itself: a send and its receive run on two \
                 ranks"
            )));
        }
        Ok((r as usize, tag as i32))
    };
    let kind = match op.as_str() {
        "HcomAllToAllV" => Kind::AllToAllV,
        "HcomSend" => {
            let (r, t) = peer("dest_rank")?;
            Kind::Send(r, t)
        }
        "HcomReceive" => {
            let (r, t) = peer("src_rank")?;
            let dims = info.ints("shape")?.unwrap_or_default();
            let dt = info.dtype_attr("dtype")?.unwrap_or(DataType::UNDEFINED);
            let want = Want { dtype: dt, dims };
            return Ok(Collective {
                comm,
                op,
                action: Action::Receive(r, t, want),
            });
        }
        "HcomAllReduce" => Kind::AllReduce(reduction()?),
        "HcomAllGather" => {
            rank_size()?;
            Kind::AllGather
        }
        "HcomReduceScatter" => {
            let r = reduction()?;
            rank_size()?;
            Kind::ReduceScatter(r)
        }
        _ => {
            let root = info.int("root_rank", 0)?;
            if root < 0 || root >= comm.size() as i64 {
                return Err(needs_ranks(
                    &op,
                    format!(
                        "at least {} ranks (root_rank={root})",
                        root.saturating_add(1)
                    ),
                    &*comm,
                    group,
                ));
            }
            Kind::Broadcast(root as usize)
        }
    };
    Ok(Collective {
        comm,
        op,
        action: Action::Run(kind),
    })
}

/// Runs one collective on the world.
fn run(comm: &Arc<dyn Communicator>, op: &str, kind: Kind, xs: &[&Value]) -> Result<Vec<Value>> {
    let tag_errors = |e| match e {
        Error::Device(m) => Error::Device(format!("{op}: {m}")),
        e => e,
    };
    match kind {
        Kind::AllToAllV => return all_to_all_v(&**comm, op, xs).map_err(tag_errors),
        Kind::Send(dest, tag) => return send(&**comm, dest, tag, xs[0]).map_err(tag_errors),
        _ => {}
    }
    if comm.size() == 1 {
        // One rank: every collective hands each input through.
        return Ok(xs.iter().map(|&x| x.clone()).collect());
    }
    agree(&**comm, op, kind, xs)?;
    collective(comm, kind, xs).map_err(|e| device_error_of(op, e))
}

/// A device error of collective `op` named as its.
fn device_error_of(op: &str, e: Error) -> Error {
    match e {
        Error::Device(m) => Error::Device(format!("{op}: {m}")),
        e => e,
    }
}

/// Broadcasts `x` (in place where its elements are one block) from the root of `kind`.
fn broadcast(comm: &Arc<dyn Communicator>, mut x: Value, kind: Kind) -> Result<Value> {
    let Kind::Broadcast(root) = kind else {
        return Err(Error::kernel("a broadcast without its root".to_string()));
    };
    if let Some(bytes) = le_bytes_mut(&mut x) {
        comm.broadcast(bytes, root)?;
        return Ok(x);
    }
    let mut bytes = x.to_le_bytes();
    comm.broadcast(&mut bytes, root)?;
    Value::from_le_bytes(x.dtype(), x.shape(), &bytes)
}

/// The collective itself, once the ranks agree on its inputs.
fn collective(comm: &Arc<dyn Communicator>, kind: Kind, xs: &[&Value]) -> Result<Vec<Value>> {
    match kind {
        Kind::ReduceScatter(r) => {
            let n = comm.size();
            let mut dims = xs[0].shape().to_vec();
            dims[0] /= n;
            // From the input's buffer straight into the output's, where both are one block.
            let x = xs[0];
            if let (Some(elem), Some(send), Some(mut y)) =
                (elem_of(x.dtype()), le_bytes(x), block(x.dtype(), &dims))
            {
                if let Some(recv) = le_bytes_mut(&mut y) {
                    comm.reduce_scatter(send, recv, elem, r)?;
                    return Ok(vec![y]);
                }
            }
            Ok(vec![reduce(xs[0].clone(), |bytes, elem| {
                let mut out = vec![0u8; bytes.len() / n];
                comm.reduce_scatter(bytes, &mut out, elem, r)?;
                Ok((dims, Some(out)))
            })?])
        }
        Kind::AllGather => {
            let x = xs[0];
            let send = le_bytes(x).map_or_else(|| x.to_le_bytes().into(), Cow::Borrowed);
            let mut dims = x.shape().to_vec();
            dims[0] *= comm.size();
            if let Some(mut y) = block(x.dtype(), &dims) {
                if let Some(recv) = le_bytes_mut(&mut y) {
                    comm.all_gather(&send, recv)?;
                    return Ok(vec![y]);
                }
            }
            let mut recv = vec![0u8; send.len() * comm.size()];
            comm.all_gather(&send, &mut recv)?;
            Ok(vec![Value::from_le_bytes(x.dtype(), &dims, &recv)?])
        }
        Kind::AllReduce(_) | Kind::Broadcast(_) | Kind::AllToAllV | Kind::Send(..) => {
            Err(Error::kernel(format!(
                "{kind:?} reached the path of the collectives that copy their input"
            )))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HcomAllToAllV
// ---------------------------------------------------------------------------------------------

/// The counts (or displacements) input `i` of an all-to-all-v, in elements.
fn counts_of(
    xs: &[&Value],
    i: usize,
    name: &str,
    n: usize,
) -> std::result::Result<Vec<i64>, String> {
    let v = xs[i].to_i64_vec();
    if xs[i].shape().len() != 1 || v.len() != n {
        return Err(format!(
            "{name} has shape {:?}; it must be 1-D with one entry per rank ({n})",
            xs[i].shape()
        ));
    }
    if let Some(k) = v.iter().position(|&c| c < 0) {
        return Err(format!("{name}[{k}] is {}; it must be >= 0", v[k]));
    }
    Ok(v)
}

/// This rank's all-to-all-v, in elements, checked against its own buffers.
struct Plan {
    sc: Vec<i64>,
    sd: Vec<i64>,
    rc: Vec<i64>,
    rd: Vec<i64>,
    /// The output's length: the largest `rd[j] + rc[j]` (GE's shape rule).
    len: i64,
}

fn local_plan(xs: &[&Value], n: usize) -> std::result::Result<Plan, String> {
    let sc = counts_of(xs, 1, "send_counts", n)?;
    let sd = counts_of(xs, 2, "send_displacements", n)?;
    let rc = counts_of(xs, 3, "recv_counts", n)?;
    let rd = counts_of(xs, 4, "recv_displacements", n)?;
    let total = xs[0].shape().iter().product::<usize>() as i64;
    for j in 0..n {
        if sd[j].checked_add(sc[j]).is_none_or(|e| e > total) {
            return Err(format!(
                "the block for rank {j} ({} elements from element {}) is outside send_data's \
                 {total} elements",
                sc[j], sd[j]
            ));
        }
    }
    let mut len = 0i64;
    let mut blocks: Vec<(i64, i64)> = Vec::with_capacity(n);
    for j in 0..n {
        let end = rd[j]
            .checked_add(rc[j])
            .ok_or_else(|| format!("recv_displacements[{j}] + recv_counts[{j}] overflows"))?;
        len = len.max(end);
        if rc[j] > 0 {
            blocks.push((rd[j], end));
        }
    }
    blocks.sort_unstable();
    if let Some(w) = blocks.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(format!(
            "the receive blocks [{}, {}) and [{}, {}) overlap",
            w[0].0, w[0].1, w[1].0, w[1].1
        ));
    }
    Ok(Plan {
        sc,
        sd,
        rc,
        rd,
        len,
    })
}

/// Runs an all-to-all-v: the ranks first agree on the dtype, then exchange every rank's send
/// and receive counts and check that they pair up; every rank raises the same error otherwise.
fn all_to_all_v(comm: &dyn Communicator, op: &str, xs: &[&Value]) -> Result<Vec<Value>> {
    let n = comm.size();
    let x = xs[0];
    let dt = x.dtype();
    if n > 1 {
        let mut d = descriptor(Kind::AllToAllV, &[]);
        d[3] = 1;
        d[4] = dt.value() as i64;
        d[5] = -1; // the shapes may differ: only the dtype is compared
        agree_on(comm, op, d)?;
    }
    let local = local_plan(xs, n);
    // [status, send counts, receive counts] of every rank.
    let mut mine = vec![0i64; 1 + 2 * n];
    match &local {
        Ok(p) => {
            mine[1..1 + n].copy_from_slice(&p.sc);
            mine[1 + n..].copy_from_slice(&p.rc);
        }
        Err(_) => mine[0] = 1,
    }
    let all = exchange_words(comm, op, &mine)?;
    let p = match local {
        Ok(p) => p,
        Err(m) => return Err(Error::kernel(format!("{op} on rank {}: {m}", comm.rank()))),
    };
    if let Some(r) = all.iter().position(|d| d[0] != 0) {
        return Err(Error::kernel(format!(
            "{op}: the counts or displacements of rank {r} are invalid (its error says why)"
        )));
    }
    for (r, dr) in all.iter().enumerate() {
        for (j, dj) in all.iter().enumerate() {
            let (sent, expected) = (dr[1 + j], dj[1 + n + r]);
            if sent != expected {
                return Err(Error::kernel(format!(
                    "the ranks disagree on the counts of {op}: rank {r} sends {sent} elements \
                     to rank {j} (send_counts[{j}]), which expects {expected} from it \
                     (recv_counts[{r}]); every send count must be its peer's receive count"
                )));
            }
        }
    }
    let size = dt
        .size()
        .ok_or_else(|| Error::unsupported(format!("{op} of {dt}")))?;
    let bytes = |v: &[i64]| v.iter().map(|&c| c as usize * size).collect::<Vec<usize>>();
    let ex = Exchange {
        send_counts: bytes(&p.sc),
        send_displs: bytes(&p.sd),
        recv_counts: bytes(&p.rc),
        recv_displs: bytes(&p.rd),
    };
    let send = x.to_le_bytes();
    let mut recv = vec![0u8; p.len as usize * size];
    comm.all_to_all_v(&send, &mut recv, &ex)?;
    Ok(vec![Value::from_le_bytes(dt, &[p.len as usize], &recv)?])
}

/// Every rank's `words` (each rank gives as many), in rank order.
fn exchange_words(comm: &dyn Communicator, op: &str, words: &[i64]) -> Result<Vec<Vec<i64>>> {
    let send: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut recv = vec![0u8; send.len() * comm.size()];
    comm.all_gather(&send, &mut recv).map_err(|e| match e {
        Error::Device(m) => Error::Device(format!(
            "{op}: {m} (exchanging the ranks' input descriptors before it)"
        )),
        e => e,
    })?;
    Ok(recv
        .chunks_exact(words.len().max(1) * 8)
        .map(|c| {
            c.chunks_exact(8)
                .map(|w| i64::from_le_bytes(w.try_into().unwrap_or_default()))
                .collect()
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// HcomSend / HcomReceive
// ---------------------------------------------------------------------------------------------

/// A send's header and data go out without another send of this process between them, and a
/// receive's come in without another receive between them (the two messages of one tensor stay
/// together). Sends and receives do not wait for each other: a receive started early (see
/// [`crate::collective::worker`]) must not hold back the send its peer waits for.
static SENDING: Mutex<()> = Mutex::new(());
static RECEIVING: Mutex<()> = Mutex::new(());

const P2P_MAGIC: i64 = 0x4745_5032_5048; // "GEP2PH"
const HEADER_WORDS: usize = 16;

/// What a receive expects: its `dtype` and `shape` attributes.
struct Want {
    dtype: DataType,
    dims: Vec<i64>,
}

/// The header of a sent tensor: magic, dtype, rank, bytes, the first dims, a hash of all dims.
fn header(dtype: DataType, dims: &[usize], nbytes: usize) -> [i64; HEADER_WORDS] {
    let mut h = [0i64; HEADER_WORDS];
    h[0] = P2P_MAGIC;
    h[1] = dtype.value() as i64;
    h[2] = dims.len() as i64;
    h[3] = nbytes as i64;
    for (slot, &d) in h[4..4 + DESC_DIMS].iter_mut().zip(dims) {
        *slot = d as i64;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &d in dims {
        for b in (d as u64).to_le_bytes() {
            hash = (hash ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h[4 + DESC_DIMS] = hash as i64;
    h
}

/// A header's tensor as text ("DT_FLOAT [2, 3]").
fn header_text(h: &[i64]) -> String {
    let mut d = [0i64; DESC_WORDS];
    d[3] = 1;
    d[4] = h[1];
    d[5] = h[2];
    d[6..6 + DESC_DIMS].copy_from_slice(&h[4..4 + DESC_DIMS]);
    describe(&d)
}

fn send(comm: &dyn Communicator, dest: usize, tag: i32, x: &Value) -> Result<Vec<Value>> {
    let data = x.to_le_bytes();
    let h: Vec<u8> = header(x.dtype(), x.shape(), data.len())
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let _g = SENDING.lock().unwrap_or_else(|p| p.into_inner());
    comm.send(&h, dest, tag)?;
    comm.send(&data, dest, tag)?;
    Ok(Vec::new())
}

fn receive(comm: &dyn Communicator, src: usize, tag: i32, want: &Want) -> Result<Value> {
    let ctx = |e: Error| match e {
        Error::Device(m) => {
            Error::Device(format!("HcomReceive from rank {src} (sr_tag {tag}): {m}"))
        }
        e => e,
    };
    let _g = RECEIVING.lock().unwrap_or_else(|p| p.into_inner());
    let mut hb = vec![0u8; HEADER_WORDS * 8];
    comm.recv(&mut hb, src, tag).map_err(ctx)?;
    let h: Vec<i64> = hb
        .chunks_exact(8)
        .map(|w| i64::from_le_bytes(w.try_into().unwrap_or_default()))
        .collect();
    if h[0] != P2P_MAGIC || h[3] < 0 {
        return Err(Error::kernel(format!(
            "HcomReceive from rank {src} (sr_tag {tag}): what arrived is no HcomSend's tensor"
        )));
    }
    // The data is taken off the wire whatever it is, so the next message stays in step.
    let mut data = vec![0u8; h[3] as usize];
    comm.recv(&mut data, src, tag).map_err(ctx)?;
    let dims: Vec<usize> = want.dims.iter().map(|&d| d.max(0) as usize).collect();
    let w = header(want.dtype, &dims, 0);
    if h[1..3] != w[1..3] || h[4..5 + DESC_DIMS] != w[4..5 + DESC_DIMS] {
        return Err(Error::kernel(format!(
            "HcomReceive from rank {src} (sr_tag {tag}) expects {} (its dtype and shape), but \
             rank {src} sent {}",
            header_text(&w),
            header_text(&h)
        )));
    }
    Value::from_le_bytes(want.dtype, &dims, &data)
}

/// The element type MPI reduces `dt` as (16-bit floats widen to f32).
fn elem_of(dt: DataType) -> Option<Elem> {
    Some(match dt {
        DataType::FLOAT | DataType::FLOAT16 | DataType::BF16 => Elem::F32,
        DataType::DOUBLE => Elem::F64,
        DataType::INT8 => Elem::I8,
        DataType::INT16 => Elem::I16,
        DataType::INT32 => Elem::I32,
        DataType::INT64 => Elem::I64,
        DataType::UINT8 => Elem::U8,
        DataType::UINT16 => Elem::U16,
        DataType::UINT32 => Elem::U32,
        DataType::UINT64 => Elem::U64,
        _ => return None,
    })
}

/// Runs a reduction `f` over `x`'s bytes (widened to f32 for 16-bit floats); `f` gives the
/// result's dims and, where it wrote elsewhere, its bytes.
fn reduce(
    x: Value,
    f: impl FnOnce(&mut [u8], Elem) -> Result<(Vec<usize>, Option<Vec<u8>>)>,
) -> Result<Value> {
    let dt = x.dtype();
    let elem =
        elem_of(dt).ok_or_else(|| Error::unsupported(format!("a collective reduction of {dt}")))?;
    let wide = matches!(dt, DataType::FLOAT16 | DataType::BF16);
    let mut src = if wide { x.cast(DataType::FLOAT)? } else { x };
    // In place on the copy where its elements are one block (no copy in or out of bytes).
    let v = if let Some(bytes) = le_bytes_mut(&mut src) {
        match f(bytes, elem)? {
            (dims, Some(out)) => Value::from_le_bytes(src.dtype(), &dims, &out)?,
            (dims, None) if dims == src.shape() => src,
            (dims, None) => Value::from_le_bytes(src.dtype(), &dims, &src.to_le_bytes())?,
        }
    } else {
        let mut bytes = src.to_le_bytes();
        let (dims, out) = f(&mut bytes, elem)?;
        Value::from_le_bytes(src.dtype(), &dims, out.as_deref().unwrap_or(&bytes))?
    };
    if wide {
        v.cast(dt)
    } else {
        Ok(v)
    }
}

/// The bytes of `v`'s elements where they are plain numbers in one row-major block and the
/// machine is little-endian: what [`Value::to_le_bytes`] copies, without the copy. None
/// otherwise (the callers then copy).
fn le_bytes(v: &Value) -> Option<&[u8]> {
    macro_rules! pod {
        ($($var:ident),*) => {
            match v {
                $(Value::$var(a) => a.as_slice().map(|s| bytemuck::cast_slice(s)),)*
                _ => None,
            }
        };
    }
    if cfg!(target_endian = "big") {
        return None;
    }
    pod!(F32, F64, I8, I16, I32, I64, U8, U16, U32, U64)
}

/// A zero tensor of `dt` and `dims` that [`le_bytes_mut`] takes (plain numbers), for a
/// collective to write into; None for other dtypes.
fn block(dt: DataType, dims: &[usize]) -> Option<Value> {
    let d = IxDyn(dims);
    Some(match dt {
        DataType::FLOAT => Value::F32(ArrayD::zeros(d)),
        DataType::DOUBLE => Value::F64(ArrayD::zeros(d)),
        DataType::INT8 => Value::I8(ArrayD::zeros(d)),
        DataType::INT16 => Value::I16(ArrayD::zeros(d)),
        DataType::INT32 => Value::I32(ArrayD::zeros(d)),
        DataType::INT64 => Value::I64(ArrayD::zeros(d)),
        DataType::UINT8 => Value::U8(ArrayD::zeros(d)),
        DataType::UINT16 => Value::U16(ArrayD::zeros(d)),
        DataType::UINT32 => Value::U32(ArrayD::zeros(d)),
        DataType::UINT64 => Value::U64(ArrayD::zeros(d)),
        _ => return None,
    })
}

/// [`le_bytes`] to write: a collective works in place on a tensor it owns.
fn le_bytes_mut(v: &mut Value) -> Option<&mut [u8]> {
    macro_rules! pod {
        ($($var:ident),*) => {
            match v {
                $(Value::$var(a) => a.as_slice_mut().map(|s| bytemuck::cast_slice_mut(s)),)*
                _ => None,
            }
        };
    }
    if cfg!(target_endian = "big") {
        return None;
    }
    pod!(F32, F64, I8, I16, I32, I64, U8, U16, U32, U64)
}

/// Words in each rank's descriptor.
const DESC_WORDS: usize = 16;
/// Dims of the first input a descriptor spells out (the rest, and every other input, go into
/// its hash word).
const DESC_DIMS: usize = 8;
const DESC_MAGIC: i64 = 0x4745_4843_4f4d; // "GEHCOM"

/// This rank's descriptor of a collective over `xs`.
fn descriptor(kind: Kind, xs: &[&Value]) -> [i64; DESC_WORDS] {
    let mut d = [0i64; DESC_WORDS];
    let [k, p] = kind.code();
    d[0] = DESC_MAGIC;
    d[1] = k;
    d[2] = p;
    d[3] = xs.len() as i64;
    if let Some(x) = xs.first() {
        d[4] = x.dtype().value() as i64;
        d[5] = x.shape().len() as i64;
        for (slot, &n) in d[6..6 + DESC_DIMS].iter_mut().zip(x.shape()) {
            *slot = n as i64;
        }
    }
    // FNV-1a over every input's dtype and full shape.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in xs {
        let words = std::iter::once(x.dtype().value() as u64)
            .chain(std::iter::once(x.shape().len() as u64))
            .chain(x.shape().iter().map(|&n| n as u64));
        for w in words {
            for b in w.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    d[6 + DESC_DIMS] = h as i64;
    d
}

/// A descriptor's input as text ("float32 [4, 8]", "... and 1 more input").
fn describe(d: &[i64]) -> String {
    let dt =
        DataType::from_value(d[4]).map_or_else(|_| format!("dtype {}", d[4]), |t| t.to_string());
    if d[5] < 0 {
        return dt; // no shape (an all-to-all-v's inputs differ in shape from rank to rank)
    }
    let rank = d[5] as usize;
    let mut dims: Vec<String> = d[6..6 + rank.min(DESC_DIMS)]
        .iter()
        .map(i64::to_string)
        .collect();
    if rank > DESC_DIMS {
        dims.push("...".into());
    }
    let mut s = format!("{dt} [{}]", dims.join(", "));
    if d[3] > 1 {
        s.push_str(&format!(" (+{} more inputs)", d[3] - 1));
    }
    s
}

/// Exchanges the descriptors and fails, on every rank alike, when the ranks disagree.
fn agree(comm: &dyn Communicator, op: &str, kind: Kind, xs: &[&Value]) -> Result<()> {
    agree_on(comm, op, descriptor(kind, xs))
}

/// Exchanges this rank's descriptor `mine` and fails, on every rank alike, when they differ.
fn agree_on(comm: &dyn Communicator, op: &str, mine: [i64; DESC_WORDS]) -> Result<()> {
    let all = exchange_words(comm, op, &mine)?;
    if all.iter().all(|d| d[..] == all[0][..]) {
        return Ok(());
    }
    if all
        .iter()
        .any(|d| d[0] != DESC_MAGIC || d[1..3] != all[0][1..3])
    {
        return Err(Error::kernel(format!(
            "the ranks ran different collectives at this step ({op} here on rank {}); every \
             rank must run the same graph's collectives in the same order",
            comm.rank()
        )));
    }
    let per_rank: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(r, d)| format!("rank {r}: {}", describe(d)))
        .collect();
    Err(Error::kernel(format!(
        "the ranks disagree on the inputs of {op}: {}; every rank must give the same dtype and \
         shape",
        per_rank.join("; ")
    )))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[(COLLECTIVE_OPS, collective_factory)];

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    #[test]
    fn descriptors_name_dtype_and_shape() {
        let a = Value::F32(ArrayD::zeros(vec![4, 8]));
        let b = Value::I64(ArrayD::zeros(vec![2]));
        let d = descriptor(Kind::AllReduce(ReduceOp::Sum), &[&a]);
        assert_eq!(describe(&d), "DT_FLOAT [4, 8]");
        let d2 = descriptor(Kind::Broadcast(1), &[&a, &b]);
        assert_eq!(describe(&d2), "DT_FLOAT [4, 8] (+1 more inputs)");
        assert_ne!(d[1..3], d2[1..3]);
        let c = Value::F32(ArrayD::zeros(vec![4, 6]));
        assert_ne!(
            descriptor(Kind::AllGather, &[&a]),
            descriptor(Kind::AllGather, &[&c])
        );
        let d3 = descriptor(Kind::Broadcast(1), &[&a, &a]);
        assert_ne!(d2[6 + DESC_DIMS], d3[6 + DESC_DIMS]);
    }

    fn ints(v: &[i64]) -> Value {
        Value::I64(ArrayD::from_shape_vec(vec![v.len()], v.to_vec()).unwrap())
    }

    #[test]
    fn all_to_all_v_on_one_rank_copies_its_block() {
        let c = crate::collective::SingleProcess;
        let x = Value::F32(
            ArrayD::from_shape_vec(vec![2, 3], (0..6).map(|i| i as f32).collect()).unwrap(),
        );
        let (sc, sd, rc, rd) = (ints(&[4]), ints(&[1]), ints(&[4]), ints(&[2]));
        let y = all_to_all_v(&c, "HcomAllToAllV", &[&x, &sc, &sd, &rc, &rd]).unwrap();
        assert_eq!(y[0].shape(), [6]);
        assert_eq!(y[0].to_f64_vec(), [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
        for (ins, want) in [
            (
                [ints(&[4]), ints(&[3]), ints(&[4]), ints(&[0])],
                "outside send_data's 6 elements",
            ),
            (
                [ints(&[4]), ints(&[0]), ints(&[3]), ints(&[0])],
                "rank 0 sends 4 elements to rank 0",
            ),
            (
                [ints(&[4, 0]), ints(&[0]), ints(&[4]), ints(&[0])],
                "one entry per rank (1)",
            ),
            (
                [ints(&[-1]), ints(&[0]), ints(&[4]), ints(&[0])],
                "send_counts[0] is -1",
            ),
        ] {
            let xs = [&x, &ins[0], &ins[1], &ins[2], &ins[3]];
            let e = all_to_all_v(&c, "HcomAllToAllV", &xs)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn receive_blocks_must_not_overlap() {
        let x = Value::F32(ArrayD::zeros(vec![4]));
        let xs = [ints(&[2, 2]), ints(&[0, 2]), ints(&[2, 2]), ints(&[0, 1])];
        let e = local_plan(&[&x, &xs[0], &xs[1], &xs[2], &xs[3]], 2)
            .err()
            .unwrap();
        assert!(e.contains("[0, 2) and [1, 3) overlap"), "{e}");
    }

    #[test]
    fn p2p_headers_name_dtype_and_shape() {
        let h = header(DataType::FLOAT, &[2, 3], 24);
        assert_eq!(header_text(&h), "DT_FLOAT [2, 3]");
        assert_ne!(h, header(DataType::FLOAT, &[3, 2], 24));
        assert_eq!(h[1..3], header(DataType::FLOAT, &[2, 3], 0)[1..3]);
        let c = crate::collective::SingleProcess;
        assert!(send(&c, 0, 1, &Value::F32(ArrayD::zeros(vec![1]))).is_err());
    }

    #[test]
    fn reductions_widen_16_bit_floats() {
        let x = Value::F32(ArrayD::from_shape_vec(vec![2], vec![1.5, -2.0]).unwrap())
            .cast(DataType::FLOAT16)
            .unwrap();
        let y = reduce(x, |bytes, elem| {
            assert_eq!(elem, Elem::F32);
            assert_eq!(bytes.len(), 8);
            let copy = bytes.to_vec();
            ReduceOp::Sum.apply(elem, bytes, &copy);
            Ok((vec![2], None))
        })
        .unwrap();
        assert_eq!(y.dtype(), DataType::FLOAT16);
        assert_eq!(y.to_f64_vec(), vec![3.0, -4.0]);
        let s = Value::Bool(ArrayD::from_elem(vec![1], true));
        assert!(reduce(s, |_, _| Ok((vec![1], None))).is_err());
    }

    #[test]
    fn reductions_in_place_equal_the_copies_of_bytes() {
        // A row-major tensor is reduced in place; a transposed one (not one row-major block)
        // through its bytes: both give what reducing `to_le_bytes` gives, bit for bit.
        let a = ArrayD::from_shape_fn(vec![3, 5], |i| (i[0] * 5 + i[1]) as f32 * 0.37 - 2.0);
        let t = Value::F32(a.clone().reversed_axes());
        let x = Value::F32(a);
        assert!(le_bytes(&x).is_some() && le_bytes(&t).is_none());
        assert_eq!(le_bytes(&x).unwrap(), &x.to_le_bytes()[..]);
        for v in [&x, &t, &x.cast(DataType::FLOAT16).unwrap()] {
            let double = |bytes: &mut [u8], elem: Elem| {
                let copy = bytes.to_vec();
                ReduceOp::Sum.apply(elem, bytes, &copy);
                Ok((v.shape().to_vec(), None))
            };
            let y = reduce(v.clone(), double).unwrap();
            let want = v.to_f64_vec().iter().map(|e| e * 2.0).collect::<Vec<_>>();
            assert_eq!((y.dtype(), y.shape()), (v.dtype(), v.shape()));
            assert_eq!(y.to_f64_vec(), want);
        }
        // A result of other dims, or written elsewhere.
        let r = reduce(x.clone(), |bytes, _| {
            Ok((vec![15], Some(bytes[..60].to_vec())))
        })
        .unwrap();
        assert_eq!((r.shape(), r.to_f64_vec()), (&[15][..], x.to_f64_vec()));
        let r = reduce(x.clone(), |_, _| Ok((vec![5, 3], None))).unwrap();
        assert_eq!((r.shape(), r.to_f64_vec()), (&[5, 3][..], x.to_f64_vec()));
        let i = Value::I64(ArrayD::from_shape_fn(vec![4], |i| i[0] as i64));
        let mut j = i.clone();
        le_bytes_mut(&mut j).unwrap()[0] = 7;
        assert_eq!(j.to_f64_vec(), vec![7.0, 1.0, 2.0, 3.0]);
        assert!(le_bytes(&Value::Bool(ArrayD::from_elem(vec![2], true))).is_none());
        // The outputs a reduce-scatter or all-gather writes into.
        let mut b = block(DataType::INT16, &[2, 3]).unwrap();
        assert_eq!((b.dtype(), b.shape()), (DataType::INT16, &[2, 3][..]));
        assert_eq!(le_bytes_mut(&mut b).map(|s| s.len()), Some(12));
        assert!(block(DataType::FLOAT16, &[2]).is_none() && block(DataType::BOOL, &[2]).is_none());
    }
}
