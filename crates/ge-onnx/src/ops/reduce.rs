//! Reductions: Reduce*, ArgMax/ArgMin, and the losses that reduce to them.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("NegativeLogLikelihoodLoss", Arc::new(nll_loss));
    r.register("SoftmaxCrossEntropyLoss", Arc::new(softmax_cross_entropy));
}

// ---------------------------------------------------------------------------------------------
// Losses
// ---------------------------------------------------------------------------------------------

/// NegativeLogLikelihoodLoss of the log-probabilities `x` ([N, C, d...]) at the targets of input
/// `ti`, weighted by input `wi` when present.
fn nll(ctx: &mut NodeCtx<'_>, x: OutPort, ti: usize, wi: usize) -> Result<OutPort> {
    let reduction = ctx.attr_s("reduction", "mean")?;
    if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
        return Err(Error::tr(format!(
            "reduction must be none, sum or mean, got {reduction:?}"
        )));
    }
    let ignore = if ctx.has_attr("ignore_index") {
        Some(ctx.attr_i("ignore_index", 0)?)
    } else {
        None
    };
    let tr = ctx.input_rank(ti)?;
    let dt = ctx.desc(x)?.dtype;
    let t = ctx.input(ti)?;
    let t = ctx.cast(t, DataType::INT64)?;
    let (t, mask) = match ignore {
        Some(ii) => {
            let iiv = ctx.const_i64(&[ii], &[])?;
            let mask = ctx.op1("Equal", &[t, iiv], vec![])?;
            let zero = ctx.const_i64(&[0], &[])?;
            let safe = ctx.op1("SelectV2", &[mask, zero, t], vec![])?;
            (safe, Some(mask))
        }
        None => (t, None),
    };
    let tu = ctx.unsqueeze(t, &[1])?;
    let g = ctx.op1("GatherElements", &[x, tu], vec![("dim", AttrValue::Int(1))])?;
    let g = ctx.squeeze(g, &[1])?;
    let mut loss = ctx.op1("Neg", &[g], vec![])?;
    let mut w = match ctx.opt_input(wi)? {
        Some(wt) => {
            let axis = ctx.const_i64(&[0], &[])?;
            Some(ctx.op1("GatherV2", &[wt, t, axis], vec![])?)
        }
        None => None,
    };
    if let Some(mask) = mask {
        let zero = ctx.const_of(dt, &[0.0], &[])?;
        let base = match w {
            Some(w) => w,
            None => {
                let one = ctx.const_of(dt, &[1.0], &[])?;
                let z = ctx.op1("ZerosLike", &[loss], vec![])?;
                ctx.op1("Add", &[z, one], vec![])?
            }
        };
        w = Some(ctx.op1("SelectV2", &[mask, zero, base], vec![])?);
    }
    if let Some(w) = w {
        loss = ctx.op1("Mul", &[loss, w], vec![])?;
    }
    if reduction == "none" {
        return Ok(loss);
    }
    let axes: Vec<i64> = (0..tr as i64).collect();
    let axes = ctx.const_i64(&axes, &[tr as i64])?;
    let sum = ctx.op1("ReduceSum", &[loss, axes], vec![])?;
    if reduction == "sum" {
        return Ok(sum);
    }
    match w {
        Some(w) => {
            let ws = ctx.op1("ReduceSum", &[w, axes], vec![])?;
            ctx.op1("RealDiv", &[sum, ws], vec![])
        }
        None => ctx.op1("ReduceMean", &[loss, axes], vec![]),
    }
}

fn nll_loss(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["ignore_index", "reduction"])?;
    let x = ctx.input(0)?;
    Ok(vec![Some(nll(ctx, x, 1, 2)?)])
}

fn softmax_cross_entropy(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["ignore_index", "reduction"])?;
    let x = ctx.input(0)?;
    let lp = ctx.op1("LogSoftmaxV2", &[x], vec![("axes", li(&[1]))])?;
    let loss = nll(ctx, lp, 1, 2)?;
    Ok(vec![Some(loss), Some(lp)])
}
