//! Inference rules of the HCCL collectives (HcomAllReduce, HcomAllGather, HcomReduceScatter,
//! HcomBroadcast, HcomAllToAllV, HcomSend, HcomReceive): all-gather multiplies dim 0 by
//! rank_size, reduce-scatter divides it; all-to-all-v's output is 1-D, its length known when
//! the receive counts and displacements are constants (GE's rule); a receive's output is its
//! `shape` and `dtype` attributes; a send has no output.

use super::common::{dtype_like, one_per_input, opt_int, out_dtype_attr, same_as_x, single};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "HcomAllReduce" => all_reduce,
        "HcomAllGather" | "HcomReduceScatter" => gather_scatter,
        "HcomBroadcast" => broadcast_collective,
        "HcomAllToAllV" => all_to_all_v,
        "HcomSend" => send,
        "HcomReceive" => receive,
        _ => return None,
    })
}

/// The reductions the collectives take (HCCL's names).
pub const REDUCTIONS: &[&str] = &["sum", "prod", "max", "min"];

/// The `reduction` attribute of a collective, checked.
fn check_reduction(ctx: &InferCtx) -> Result<()> {
    let r = ctx.attr_str("reduction")?;
    if !REDUCTIONS.contains(&r) {
        return Err(ctx.err(format!(
            "attribute 'reduction' is {r:?}; expected one of {}",
            REDUCTIONS.join(", ")
        )));
    }
    Ok(())
}

/// HcomAllReduce: y like x.
fn all_reduce(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    check_reduction(ctx)?;
    ctx.attr_str("group")?;
    same_as_x(ctx)
}

/// HcomAllGather (dim 0 times rank_size) and HcomReduceScatter (dim 0 divided by rank_size,
/// which must divide it).
fn gather_scatter(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let gather = ctx.proto.name == "HcomAllGather";
    if !gather {
        check_reduction(ctx)?;
    }
    ctx.attr_str("group")?;
    let n = ctx.attr_int("rank_size")?;
    if n < 1 {
        return Err(ctx.err(format!(
            "attribute 'rank_size' is {n}; it must be at least 1"
        )));
    }
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r == 0 {
        return Err(ctx.err(format!("input 'x' {} must have at least one dim", x.shape)));
    }
    let mut dims = x.shape.0.to_vec();
    let d0 = dims[0];
    dims[0] = if d0 == UNKNOWN_DIM {
        UNKNOWN_DIM
    } else if gather {
        d0.checked_mul(n)
            .ok_or_else(|| ctx.err(format!("dim 0 of x {} times {n} overflows", x.shape)))?
    } else if d0 % n != 0 {
        return Err(ctx.err(format!(
            "dim 0 of input 'x' {} is not divisible by attribute 'rank_size' {n}",
            x.shape
        )));
    } else {
        d0 / n
    };
    Ok(single(dt, Shape::from(dims)))
}

/// HcomBroadcast: each y like its x.
fn broadcast_collective(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.attr_str("group")?;
    let root = opt_int(ctx, "root_rank", 0)?;
    if root < 0 {
        return Err(ctx.err(format!("attribute 'root_rank' is {root}; it must be >= 0")));
    }
    let xs = ctx.inputs_of("x")?;
    one_per_input(
        ctx,
        &xs,
        |x| dtype_like(ctx, 0, Some(x)),
        |i, o| format!("{i} inputs 'x' but {o} outputs 'y'"),
    )
}

/// HcomAllToAllV: `recv_data` is 1-D, of send_data's dtype; its length is the largest
/// `recv_displacements[i] + recv_counts[i]` when both are constants (GE's
/// `HcomAllToAllVInferShape`), else unknown. Counts and displacements are 1-D and alike.
fn all_to_all_v(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.attr_str("group")?;
    let x = ctx.req("send_data")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let names = [
        "send_counts",
        "send_displacements",
        "recv_counts",
        "recv_displacements",
    ];
    let mut lens = Vec::with_capacity(names.len());
    for name in names {
        let d = ctx.req(name)?;
        match d.shape.rank() {
            Some(1) => lens.push(d.shape.0[0]),
            Some(_) => {
                return Err(ctx.err(format!(
                    "input '{name}' {} must be 1-D (one entry per rank)",
                    d.shape
                )))
            }
            None => lens.push(UNKNOWN_DIM),
        }
    }
    let known: Vec<i64> = lens.iter().copied().filter(|&n| n != UNKNOWN_DIM).collect();
    if known.windows(2).any(|w| w[0] != w[1]) {
        return Err(ctx.err(format!(
            "the counts and displacements must have one entry per rank each, got lengths {}",
            lens.iter()
                .map(|n| if *n == UNKNOWN_DIM {
                    "?".into()
                } else {
                    n.to_string()
                })
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for name in names {
        if let Some(v) = ctx.const_ints(name)? {
            if let Some(n) = v.iter().find(|&&n| n < 0) {
                return Err(ctx.err(format!("input '{name}' holds {n}; it must be >= 0")));
            }
        }
    }
    let (Some(counts), Some(displs)) = (
        ctx.const_ints("recv_counts")?,
        ctx.const_ints("recv_displacements")?,
    ) else {
        return Ok(single(dt, Shape::from(vec![UNKNOWN_DIM])));
    };
    let mut len = 0i64;
    for (c, d) in counts.iter().zip(&displs) {
        let end = c
            .checked_add(*d)
            .ok_or_else(|| ctx.err(format!("recv displacement {d} + count {c} overflows")))?;
        len = len.max(end);
    }
    Ok(single(dt, Shape::from(vec![len])))
}

/// The attributes HcomSend and HcomReceive share: `group`, `sr_tag` and the peer's rank
/// (`dest_rank` or `src_rank`), which must be >= 0.
fn p2p_attrs(ctx: &InferCtx, peer: &str) -> Result<()> {
    ctx.attr_str("group")?;
    ctx.attr_int("sr_tag")?;
    let rank = ctx.attr_int(peer)?;
    if rank < 0 {
        return Err(ctx.err(format!("attribute '{peer}' is {rank}; it must be >= 0")));
    }
    Ok(())
}

/// HcomSend: no output; its attributes are checked.
fn send(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    p2p_attrs(ctx, "dest_rank")?;
    ctx.req("x")?;
    Ok(Vec::new())
}

/// HcomReceive: y of the `shape` and `dtype` attributes (GE's `HcomReceiveInferShape`).
fn receive(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    p2p_attrs(ctx, "src_rank")?;
    let dims = ctx.attr_ints("shape")?;
    if let Some(n) = dims.iter().find(|&&n| n < 0) {
        return Err(ctx.err(format!(
            "attribute 'shape' {dims:?} has dim {n}; a received tensor's shape is known"
        )));
    }
    let dt = out_dtype_attr(ctx, "dtype", None)?;
    Ok(single(dt, Shape::from(dims.to_vec())))
}
