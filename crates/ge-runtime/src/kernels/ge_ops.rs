//! Kernels of operators that GE programs use beside the common library: RmsNorm, AddRmsNorm,
//! Threshold, Concat (concat_dim as the first input), the HCCL collectives HcomAllReduce,
//! HcomAllGather, HcomReduceScatter and HcomBroadcast, DynamicQuant and MoeGatingTopKSoftmax.
//!
//! ge-rs runs a graph in one process, so a collective runs on a world of one rank: all-reduce,
//! all-gather and reduce-scatter of one rank and a broadcast from rank 0 are the identity. A node
//! that needs more ranks (rank_size above 1, a root_rank other than 0) is refused when the graph
//! is compiled, with an error that says so.

use super::index::str_attr;
use super::nn::{floats, from_f64};
use super::shape::concat;
use super::{input, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::DataType;
use rustc_hash::FxHashMap;

// ---------------------------------------------------------------------------------------------
// RmsNorm, AddRmsNorm
// ---------------------------------------------------------------------------------------------

/// y = gamma * x * rstd and rstd = 1 / sqrt(mean(x^2) + eps) over each row of `inner` elements
/// (the dims gamma covers), in f64.
fn rms_rows(x: &[f64], gamma: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let inner = gamma.len().max(1);
    let mut y = Vec::with_capacity(x.len());
    let mut rstd = Vec::with_capacity(x.len() / inner);
    for row in x.chunks(inner) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / inner as f64;
        let r = 1.0 / (ms + eps).sqrt();
        y.extend(row.iter().zip(gamma).map(|(v, g)| g * (v * r)));
        rstd.push(r);
    }
    (y, rstd)
}

/// The shape of rstd: x's dims with 1 for the trailing dims gamma covers; gamma's shape must
/// be the trailing dims of x's.
fn rstd_dims(op: &str, x: &[usize], gamma: &[usize]) -> Result<Vec<usize>> {
    if gamma.len() > x.len() || x[x.len() - gamma.len()..] != *gamma {
        return Err(Error::kernel(format!(
            "{op}: gamma {gamma:?} must match the trailing dims of x {x:?}"
        )));
    }
    let lead = x.len() - gamma.len();
    let mut d = x[..lead].to_vec();
    d.resize(x.len(), 1);
    Ok(d)
}

fn rms_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let eps = f64::from(info.float("epsilon", 1e-6)?);
    let add = info.op() == "AddRmsNorm";
    let op = info.op().to_string();
    Ok(Box::new(move |inputs| {
        let (x, sum, gi) = if add {
            let (x1, x2) = (input(inputs, 0)?, input(inputs, 1)?);
            if x1.shape() != x2.shape() || x1.dtype() != x2.dtype() {
                return Err(Error::kernel(format!(
                    "{op}: x1 {:?} ({}) and x2 {:?} ({}) must have the same shape and dtype",
                    x1.shape(),
                    x1.dtype(),
                    x2.shape(),
                    x2.dtype()
                )));
            }
            let s: Vec<f64> = floats(x1, "x1")?
                .iter()
                .zip(floats(x2, "x2")?)
                .map(|(a, b)| a + b)
                .collect();
            (x1, s, 2)
        } else {
            let x = input(inputs, 0)?;
            (x, floats(x, "x")?, 1)
        };
        let gamma = input(inputs, gi)?;
        let sd = rstd_dims(&op, x.shape(), gamma.shape())?;
        let (y, rstd) = rms_rows(&sum, &floats(gamma, "gamma")?, eps);
        let dt = x.dtype();
        let mut out = vec![
            from_f64(dt, x.shape(), y)?,
            from_f64(DataType::FLOAT, &sd, rstd)?,
        ];
        if add {
            out.push(from_f64(dt, x.shape(), sum)?);
        }
        Ok(out)
    }))
}

// ---------------------------------------------------------------------------------------------
// Threshold, Concat
// ---------------------------------------------------------------------------------------------

fn threshold_factory(info: &NodeInfo) -> Result<Kernel> {
    let t = f64::from(info.float("threshold", 0.0)?);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let y = floats(x, "x")?
            .into_iter()
            .map(|v| if v > t { 1.0 } else { 0.0 })
            .collect();
        Ok(vec![from_f64(x.dtype(), x.shape(), y)?])
    }))
}

/// Concat: concat_dim (a one-element tensor) first, then the tensors of x.
fn concat_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let axis = *input(inputs, 0)?
            .to_i64_vec()
            .first()
            .ok_or_else(|| Error::kernel("concat_dim is empty"))?;
        let xs: Vec<&Value> = inputs.iter().skip(1).flatten().copied().collect();
        Ok(vec![concat(&xs, axis)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// HCCL collectives on a world of one rank
// ---------------------------------------------------------------------------------------------

/// The error of a collective that needs more than the one rank ge-rs has.
fn needs_ranks(op: &str, what: String) -> Error {
    Error::unsupported(format!(
        "{op} needs {what}: ge-rs runs collectives in one process only (world size 1); \
         build the graph for one rank to run it here, or run it with GE on a cluster"
    ))
}

/// The checks every collective makes at compile time: its reduction (where it has one) and the
/// group size its attributes ask for.
fn collective_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    if op == "HcomAllReduce" || op == "HcomReduceScatter" {
        let r = str_attr(info, "reduction", "")?;
        if !es_core::infer::REDUCTIONS.contains(&r.as_str()) {
            return Err(Error::unsupported(format!(
                "{op} with reduction {r:?} (expected one of {})",
                es_core::infer::REDUCTIONS.join(", ")
            )));
        }
    }
    if op == "HcomAllGather" || op == "HcomReduceScatter" {
        let n = info.int("rank_size", 1)?;
        if n != 1 {
            return Err(needs_ranks(&op, format!("{n} ranks (rank_size={n})")));
        }
    }
    if op == "HcomBroadcast" {
        let root = info.int("root_rank", 0)?;
        if root != 0 {
            return Err(needs_ranks(
                &op,
                format!(
                    "at least {} ranks (root_rank={root})",
                    root.saturating_add(1)
                ),
            ));
        }
    }
    // One rank: every collective hands each input through.
    Ok(Box::new(|inputs| {
        inputs
            .iter()
            .enumerate()
            .map(|(i, _)| input(inputs, i).cloned())
            .collect()
    }))
}

// ---------------------------------------------------------------------------------------------
// DynamicQuant, MoeGatingTopKSoftmax
// ---------------------------------------------------------------------------------------------

/// The row of each group with `group_index` (each group's end, non-decreasing, the last one
/// `rows`): group of row `r`.
fn row_groups(gi: &[i64], rows: usize) -> Result<Vec<usize>> {
    let bad = || {
        Error::kernel(format!(
            "DynamicQuant: group_index {gi:?} must be non-decreasing ends of the row groups, \
             from 0 up, the last one {rows} (the rows of x)"
        ))
    };
    let mut out = Vec::with_capacity(rows);
    let mut start = 0usize;
    for (e, &end) in gi.iter().enumerate() {
        let end = usize::try_from(end).map_err(|_| bad())?;
        if end < start || end > rows {
            return Err(bad());
        }
        out.resize(end, e);
        start = end;
    }
    if start != rows {
        return Err(bad());
    }
    Ok(out)
}

fn dynamic_quant_factory(info: &NodeInfo) -> Result<Kernel> {
    let dst = info.out_dtype(0)?;
    if dst != DataType::INT8 {
        return Err(Error::unsupported(format!(
            "DynamicQuant with dst_type {dst} (the CPU backend quantizes to DT_INT8 only)"
        )));
    }
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dims = x.shape();
        let h = *dims
            .last()
            .ok_or_else(|| Error::kernel("DynamicQuant: x must have at least one dim"))?;
        let rows = x.len().checked_div(h).unwrap_or(0);
        let xs = x.cast(DataType::FLOAT)?.to_f64_vec();
        let smooth = inputs.get(1).copied().flatten();
        let groups = match inputs.get(2).copied().flatten() {
            Some(g) => Some(row_groups(&g.to_i64_vec(), rows)?),
            None => None,
        };
        let ss = match smooth {
            Some(s) => {
                let n_groups = match &groups {
                    Some(_) => s.shape().first().copied().unwrap_or(0),
                    None => 1,
                };
                if s.len() != n_groups * h {
                    return Err(Error::kernel(format!(
                        "DynamicQuant: smooth_scales {:?} does not fit x {dims:?}",
                        s.shape()
                    )));
                }
                Some(s.cast(DataType::FLOAT)?.to_f64_vec())
            }
            None => None,
        };
        let mut y = Vec::with_capacity(xs.len());
        let mut scales = Vec::with_capacity(rows);
        let mut row = vec![0f32; h];
        for (r, xr) in xs.chunks(h.max(1)).enumerate().take(rows) {
            // In float32, as the NPU kernel: the product of two 16-bit floats is exact there.
            let off = match (&ss, &groups) {
                (Some(_), Some(g)) => g[r] * h,
                _ => 0,
            };
            for (j, v) in row.iter_mut().enumerate() {
                let s = ss.as_ref().map_or(1.0, |s| s[off + j] as f32);
                *v = xr[j] as f32 * s;
            }
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let scale = max / 127.0;
            for &v in &row {
                let q = if scale > 0.0 {
                    (v / scale).round_ties_even()
                } else {
                    0.0
                };
                y.push(f64::from(q.clamp(-128.0, 127.0)));
            }
            scales.push(f64::from(scale));
        }
        Ok(vec![
            from_f64(DataType::INT8, dims, y)?,
            from_f64(DataType::FLOAT, &dims[..dims.len() - 1], scales)?,
        ])
    }))
}

fn moe_gating_top_k_softmax_factory(info: &NodeInfo) -> Result<Kernel> {
    let k = usize::try_from(info.int("k", 0)?)
        .map_err(|_| Error::kernel("MoeGatingTopKSoftmax: k must be positive"))?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dims = x.shape();
        let e = *dims.last().unwrap_or(&0);
        if !(2..=3).contains(&dims.len()) || k == 0 || k > e {
            return Err(Error::kernel(format!(
                "MoeGatingTopKSoftmax: x {dims:?} must be 2-D or 3-D with at least k = {k} experts"
            )));
        }
        let rows = x.len() / e;
        let finished = match inputs.get(1).copied().flatten() {
            Some(f) if f.len() == rows => Some(f.to_i64_vec()),
            Some(f) => {
                return Err(Error::kernel(format!(
                    "MoeGatingTopKSoftmax: finished {:?} must have x's dims but the last ({:?})",
                    f.shape(),
                    &dims[..dims.len() - 1]
                )))
            }
            None => None,
        };
        let xs = floats(x, "x")?;
        let (mut y, mut idx, mut rid) = (
            Vec::with_capacity(rows * k),
            Vec::with_capacity(rows * k),
            Vec::with_capacity(rows * k),
        );
        let mut order: Vec<usize> = Vec::with_capacity(e);
        for (r, xr) in xs.chunks(e).enumerate() {
            let m = xr.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ex: Vec<f64> = xr.iter().map(|v| (v - m).exp()).collect();
            let sum: f64 = ex.iter().sum();
            order.clear();
            order.extend(0..e);
            // Largest first (softmax keeps the order of x); equal values keep the lower
            // expert first.
            order.sort_by(|&a, &b| xr[b].total_cmp(&xr[a]));
            let done = finished.as_ref().is_some_and(|f| f[r] != 0);
            for (j, &o) in order.iter().take(k).enumerate() {
                y.push(ex[o] / sum);
                idx.push(if done { e as f64 } else { o as f64 });
                rid.push((j * rows + r) as f64);
            }
        }
        let mut od = dims.to_vec();
        od[dims.len() - 1] = k;
        Ok(vec![
            from_f64(x.dtype(), &od, y)?,
            from_f64(DataType::INT32, &od, idx)?,
            from_f64(DataType::INT32, &od, rid)?,
        ])
    }))
}

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("RmsNorm", rms_norm_factory);
    m.insert("AddRmsNorm", rms_norm_factory);
    m.insert("Threshold", threshold_factory);
    m.insert("Concat", concat_factory);
    m.insert("HcomAllReduce", collective_factory);
    m.insert("HcomAllGather", collective_factory);
    m.insert("HcomReduceScatter", collective_factory);
    m.insert("HcomBroadcast", collective_factory);
    m.insert("DynamicQuant", dynamic_quant_factory);
    m.insert("MoeGatingTopKSoftmax", moe_gating_top_k_softmax_factory);
}
