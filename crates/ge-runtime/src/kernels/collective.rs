//! Kernels of the HCCL collectives HcomAllReduce, HcomAllGather, HcomReduceScatter and
//! HcomBroadcast, on the process's communicator ([`crate::collective::world`]).
//!
//! Without an MPI launch the world has one rank: all-reduce, all-gather and reduce-scatter of
//! one rank and a broadcast from rank 0 are the identity, and a node that needs more ranks
//! (rank_size above 1, a root_rank other than 0) is refused when the graph is compiled, with an
//! error naming `pip install ge-rs[mpi]` and `mpiexec`. Under `mpiexec -n N` the world is MPI's
//! (`hccl_world_group` is every rank): `rank_size` must be N and `root_rank` below N.
//!
//! Before each collective on more than one rank the ranks exchange a small descriptor (the
//! operator, its reduction, rank_size or root, each input's dtype and shape): when they
//! disagree every rank raises the same error listing each rank's input, instead of running a
//! collective whose sizes differ (which would hang or corrupt memory). float16 and bfloat16
//! reduce in float32, rounded once at the end.

use super::common::str_attr;
use super::{input, Kernel, Kernels, NodeInfo};
use crate::collective::{world, Communicator, Elem, ReduceOp, INSTALL_HINT};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::DataType;
use std::borrow::Cow;
use std::sync::Arc;

/// GE's group of every rank.
pub const WORLD_GROUP: &str = "hccl_world_group";

/// The error of a collective that needs more ranks than the world has.
fn needs_ranks(op: &str, what: String, comm: &dyn Communicator) -> Error {
    let n = comm.size();
    if n == 1 {
        Error::unsupported(format!(
            "{op} needs {what}: ge-rs runs collectives in one process only (world size 1) \
             unless launched by MPI: `{INSTALL_HINT}`, then `mpiexec -n <ranks> python prog.py`"
        ))
    } else {
        Error::unsupported(format!(
            "{op} needs {what}, but {WORLD_GROUP} has {n} ranks ({}): launch with as many \
             ranks as the graph was built for",
            comm.name()
        ))
    }
}

/// What each collective does, read from its node once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter(ReduceOp),
    Broadcast(usize),
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
        }
    }
}

/// The checks every collective makes at compile time: its group, its reduction (where it has
/// one) and the group size or root its attributes ask for.
fn collective_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let group = str_attr(info, "group", WORLD_GROUP)?;
    if group != WORLD_GROUP {
        return Err(Error::unsupported(format!(
            "{op} on group {group:?}: ge-rs runs collectives on {WORLD_GROUP} (every rank) only"
        )));
    }
    let comm = world()?;
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
            ));
        }
        Ok(())
    };
    let kind = match op.as_str() {
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
                ));
            }
            Kind::Broadcast(root as usize)
        }
    };
    Ok(Box::new(move |inputs| {
        let xs = (0..inputs.len())
            .map(|i| input(inputs, i))
            .collect::<Result<Vec<&Value>>>()?;
        run(&comm, &op, kind, &xs)
    }))
}

/// Runs one collective on the world.
fn run(comm: &Arc<dyn Communicator>, op: &str, kind: Kind, xs: &[&Value]) -> Result<Vec<Value>> {
    if comm.size() == 1 {
        // One rank: every collective hands each input through.
        return Ok(xs.iter().map(|&x| x.clone()).collect());
    }
    agree(&**comm, op, kind, xs)?;
    collective(comm, kind, xs).map_err(|e| match e {
        Error::Device(m) => Error::Device(format!("{op}: {m}")),
        e => e,
    })
}

/// The collective itself, once the ranks agree on its inputs.
fn collective(comm: &Arc<dyn Communicator>, kind: Kind, xs: &[&Value]) -> Result<Vec<Value>> {
    match kind {
        Kind::AllReduce(r) => Ok(vec![reduce(xs[0], |bytes, elem| {
            comm.all_reduce(bytes, elem, r)?;
            Ok((xs[0].shape().to_vec(), None))
        })?]),
        Kind::ReduceScatter(r) => {
            let n = comm.size();
            let mut dims = xs[0].shape().to_vec();
            dims[0] /= n;
            Ok(vec![reduce(xs[0], |bytes, elem| {
                let mut out = vec![0u8; bytes.len() / n];
                comm.reduce_scatter(bytes, &mut out, elem, r)?;
                Ok((dims, Some(out)))
            })?])
        }
        Kind::AllGather => {
            let x = xs[0];
            let send = le_bytes(x).map_or_else(|| x.to_le_bytes().into(), Cow::Borrowed);
            let mut recv = vec![0u8; send.len() * comm.size()];
            comm.all_gather(&send, &mut recv)?;
            let mut dims = x.shape().to_vec();
            dims[0] *= comm.size();
            Ok(vec![Value::from_le_bytes(x.dtype(), &dims, &recv)?])
        }
        Kind::Broadcast(root) => xs
            .iter()
            .map(|&x| {
                let mut y = x.clone();
                if let Some(bytes) = le_bytes_mut(&mut y) {
                    comm.broadcast(bytes, root)?;
                    return Ok(y);
                }
                let mut bytes = x.to_le_bytes();
                comm.broadcast(&mut bytes, root)?;
                Value::from_le_bytes(x.dtype(), x.shape(), &bytes)
            })
            .collect(),
    }
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
    x: &Value,
    f: impl FnOnce(&mut [u8], Elem) -> Result<(Vec<usize>, Option<Vec<u8>>)>,
) -> Result<Value> {
    let dt = x.dtype();
    let elem =
        elem_of(dt).ok_or_else(|| Error::unsupported(format!("a collective reduction of {dt}")))?;
    let wide = matches!(dt, DataType::FLOAT16 | DataType::BF16);
    let mut src = if wide {
        x.cast(DataType::FLOAT)?
    } else {
        x.clone()
    };
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
    let rank = d[5].max(0) as usize;
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
    let mine = descriptor(kind, xs);
    let send: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut recv = vec![0u8; send.len() * comm.size()];
    comm.all_gather(&send, &mut recv).map_err(|e| match e {
        Error::Device(m) => Error::Device(format!(
            "{op}: {m} (exchanging the ranks' input descriptors before it)"
        )),
        e => e,
    })?;
    let all: Vec<Vec<i64>> = recv
        .chunks_exact(DESC_WORDS * 8)
        .map(|c| {
            c.chunks_exact(8)
                .map(|w| i64::from_le_bytes(w.try_into().unwrap_or_default()))
                .collect()
        })
        .collect();
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
pub(super) const KERNELS: Kernels = &[(
    &[
        "HcomAllReduce",
        "HcomAllGather",
        "HcomReduceScatter",
        "HcomBroadcast",
    ],
    collective_factory,
)];

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

    #[test]
    fn reductions_widen_16_bit_floats() {
        let x = Value::F32(ArrayD::from_shape_vec(vec![2], vec![1.5, -2.0]).unwrap())
            .cast(DataType::FLOAT16)
            .unwrap();
        let y = reduce(&x, |bytes, elem| {
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
        assert!(reduce(&s, |_, _| Ok((vec![1], None))).is_err());
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
            let y = reduce(v, double).unwrap();
            let want = v.to_f64_vec().iter().map(|e| e * 2.0).collect::<Vec<_>>();
            assert_eq!((y.dtype(), y.shape()), (v.dtype(), v.shape()));
            assert_eq!(y.to_f64_vec(), want);
        }
        // A result of other dims, or written elsewhere.
        let r = reduce(&x, |bytes, _| Ok((vec![15], Some(bytes[..60].to_vec())))).unwrap();
        assert_eq!((r.shape(), r.to_f64_vec()), (&[15][..], x.to_f64_vec()));
        let r = reduce(&x, |_, _| Ok((vec![5, 3], None))).unwrap();
        assert_eq!((r.shape(), r.to_f64_vec()), (&[5, 3][..], x.to_f64_vec()));
        let i = Value::I64(ArrayD::from_shape_fn(vec![4], |i| i[0] as i64));
        let mut j = i.clone();
        le_bytes_mut(&mut j).unwrap()[0] = 7;
        assert_eq!(j.to_f64_vec(), vec![7.0, 1.0, 2.0, 3.0]);
        assert!(le_bytes(&Value::Bool(ArrayD::from_elem(vec![2], true))).is_none());
    }
}
