//! Kernels of the HCCL collectives HcomAllReduce, HcomAllGather, HcomReduceScatter and
//! HcomBroadcast.
//!
//! ge-rs runs a graph in one process, so a collective runs on a world of one rank: all-reduce,
//! all-gather and reduce-scatter of one rank and a broadcast from rank 0 are the identity. A node
//! that needs more ranks (rank_size above 1, a root_rank other than 0) is refused when the graph
//! is compiled, with an error that says so.

use super::common::str_attr;
use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};

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
