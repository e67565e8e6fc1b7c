//! Reductions: Reduce*, ArgMax/ArgMin, and the losses that reduce to them.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};

type Out = Result<Vec<Option<OutPort>>>;

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("NegativeLogLikelihoodLoss", nll_loss),
    ("SoftmaxCrossEntropyLoss", softmax_cross_entropy),
    ("ArgMax", |c| arg(c, true)),
    ("ArgMin", |c| arg(c, false)),
];

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

// Reductions.

variants!(Red {
    Max,
    Min,
    Sum,
    Mean,
    Prod,
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare
});

/// Registers the translators of the variants of [`Red`].
pub(super) fn register_variant_ops(r: &mut Registry) {
    // ReduceMax, ..., ReduceSumSquare: the ONNX name is "Reduce" and the variant's name.
    register_variants(r, Red::ALL, |v| format!("Reduce{v:?}"), reduce);
}

fn reduce_axes(ctx: &mut NodeCtx<'_>) -> Result<Axes> {
    let noop = ctx.attr_i("noop_with_empty_axes", 0)? != 0;
    if !ctx.has_input(1) {
        return Ok(if noop { Axes::Noop } else { Axes::All });
    }
    if let Some(t) = ctx.const_input(1) {
        let v = t.to_i64_vec()?;
        if v.is_empty() {
            return Ok(if noop { Axes::Noop } else { Axes::All });
        }
        let v = match ctx.input_desc(0)?.shape.rank() {
            Some(r) => norm_axes(&v, r, "axes")?
                .into_iter()
                .map(|a| a as i64)
                .collect(),
            None => v,
        };
        return Ok(Axes::List(v));
    }
    let p = ctx.input(1)?;
    let p = ctx.cast(p, DataType::INT64)?;
    Ok(Axes::Dyn(p, noop))
}

fn reduce(ctx: &mut NodeCtx<'_>, red: Red) -> Out {
    let axes_since = if red == Red::Sum { 13 } else { 18 };
    if ctx.opset >= axes_since && ctx.has_attr("axes") {
        return Err(Error::tr(format!(
            "{} (opset {}) takes axes as an input, not an attribute",
            ctx.op_type(),
            ctx.opset
        )));
    }
    ctx.known_attrs(&["keepdims", "noop_with_empty_axes", "axes"])?;
    let keep = ctx.attr_i("keepdims", 1)? != 0;
    let axes = reduce_axes(ctx)?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    use DataType::*;
    if matches!(red, Red::Max | Red::Min | Red::LogSumExp) {
        if let Some(y) = empty_reduction(ctx, red, x, &axes, keep)? {
            return one(y);
        }
    }
    let y = match red {
        Red::Max | Red::Min if dt == BOOL => {
            if let Axes::Dyn(..) = axes {
                // Max/Min of 0/1 values is any/all; the uint8 reductions take axes tensors.
                let u = ctx.cast(x, UINT8)?;
                let op = if red == Red::Max {
                    "ReduceMax"
                } else {
                    "ReduceMin"
                };
                let r = reduce_op(ctx, op, u, &axes, keep)?;
                ctx.cast(r, BOOL)?
            } else {
                let op = if red == Red::Max {
                    "ReduceAny"
                } else {
                    "ReduceAll"
                };
                reduce_op(ctx, op, x, &axes, keep)?
            }
        }
        Red::Max => reduce_op(ctx, "ReduceMax", x, &axes, keep)?,
        Red::Min => reduce_op(ctx, "ReduceMin", x, &axes, keep)?,
        Red::Sum => reduce_op(ctx, "ReduceSum", x, &axes, keep)?,
        Red::Mean => reduce_op(ctx, "ReduceMean", x, &axes, keep)?,
        Red::Prod => reduce_op(ctx, "ReduceProd", x, &axes, keep)?,
        Red::L1 => {
            let a = if is_unsigned(dt) {
                x
            } else {
                ctx.un("Abs", x)?
            };
            reduce_op(ctx, "ReduceSum", a, &axes, keep)?
        }
        Red::SumSquare => {
            let sq = ctx.bin("Mul", x, x)?;
            reduce_op(ctx, "ReduceSum", sq, &axes, keep)?
        }
        Red::L2 | Red::LogSum | Red::LogSumExp => {
            if !dt.is_float() && red != Red::L2 {
                return Err(unsupported(
                    ctx,
                    format_args!("inputs of dtype {dt} (Exp and Log take floats)"),
                ));
            }
            // Integer L2 as numpy: in f64, truncated back.
            let xf = if dt.is_float() {
                x
            } else {
                ctx.cast(x, DOUBLE)?
            };
            let wt = ctx.port_dtype(xf)?;
            let y = match red {
                Red::L2 => {
                    let sq = ctx.bin("Mul", xf, xf)?;
                    let s = reduce_op(ctx, "ReduceSum", sq, &axes, keep)?;
                    ctx.un("Sqrt", s)?
                }
                Red::LogSum => {
                    let s = reduce_op(ctx, "ReduceSum", xf, &axes, keep)?;
                    ctx.un("Log", s)?
                }
                _ => {
                    let direct = matches!(axes, Axes::List(_) | Axes::All)
                        && ctx.accepts("ReduceLogSumExp", wt)?;
                    if direct {
                        reduce_op(ctx, "ReduceLogSumExp", xf, &axes, keep)?
                    } else {
                        // max + log(sum(exp(x - max))), an infinite max taken as 0 (as ONNX's
                        // reference does), so all -inf rows give -inf and +inf rows +inf.
                        let m = reduce_op(ctx, "ReduceMax", xf, &axes, true)?;
                        let inf = ctx.un("IsInf", m)?;
                        let zero = ctx.scalar(wt, 0.0)?;
                        let m = ctx.op1("SelectV2", &[inf, zero, m], vec![])?;
                        let d = ctx.bin("Sub", xf, m)?;
                        let e = ctx.un("Exp", d)?;
                        let s = reduce_op(ctx, "ReduceSum", e, &axes, keep)?;
                        let l = ctx.un("Log", s)?;
                        let m = if keep {
                            m
                        } else {
                            reduce_op(ctx, "ReduceMax", m, &axes, false)?
                        };
                        ctx.bin("Add", l, m)?
                    }
                }
            };
            ctx.cast(y, dt)?
        }
    };
    one(y)
}

/// A reduction over an empty set of a statically shaped input: a constant of the result's
/// shape holding the reduction's identity (-inf for Max and LogSumExp, +inf for Min; the
/// dtype's lowest/highest value for integers), as ONNX defines it.
fn empty_reduction(
    ctx: &mut NodeCtx<'_>,
    red: Red,
    x: OutPort,
    axes: &Axes,
    keep: bool,
) -> Result<Option<OutPort>> {
    let d = ctx.desc(x)?;
    if !d.shape.is_static() || d.shape.rank().is_none() {
        return Ok(None);
    }
    let dims = d.shape.dims().to_vec();
    let ax: Vec<usize> = match axes {
        Axes::All => (0..dims.len()).collect(),
        Axes::List(v) => v.iter().map(|&a| a as usize).collect(),
        _ => return Ok(None),
    };
    if ax.iter().any(|&a| a >= dims.len()) || !ax.iter().any(|&a| dims[a] == 0) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for (i, &n) in dims.iter().enumerate() {
        if !ax.contains(&i) {
            out.push(n);
        } else if keep {
            out.push(1);
        }
    }
    // The result is materialised: bound it (a model may declare any static shape).
    let count = out
        .iter()
        .try_fold(1i64, |acc, &n| acc.checked_mul(n))
        .filter(|&c| (0..=1 << 24).contains(&c))
        .ok_or_else(|| {
            Error::unsupported(format!(
                "a reduction over an empty axis with an output of shape {out:?} (more than 2^24 \
                 elements)"
            ))
        })?;
    let dt = d.dtype;
    let hi = red == Red::Min;
    let t = match (dt, dtype_range(dt)) {
        (DataType::BOOL, _) => Tensor::from_values(&vec![hi; count as usize], out.clone())?,
        (DataType::INT64, _) => Tensor::from_values(
            &vec![if hi { i64::MAX } else { i64::MIN }; count as usize],
            out.clone(),
        )?,
        (DataType::UINT64, _) => Tensor::from_values(
            &vec![if hi { u64::MAX } else { 0 }; count as usize],
            out.clone(),
        )?,
        (_, Some((lo, h))) => es_core::types::tensor_from_f64(
            dt,
            out.clone(),
            &vec![if hi { h } else { lo }; count as usize],
        )?,
        _ => return Ok(None),
    };
    Ok(Some(ctx.constant(t)?))
}

// ArgMax/ArgMin.

fn arg(ctx: &mut NodeCtx<'_>, max: bool) -> Out {
    ctx.known_attrs(&["axis", "keepdims", "select_last_index"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", 0)?, rank, "axis")?;
    let keep = ctx.attr_i("keepdims", 1)? != 0;
    let last = ctx.attr_i("select_last_index", 0)? != 0;
    let op = if max { "ArgMaxV2" } else { "ArgMin" };
    let dim = ctx.const_i64(&[axis as i64], &[])?;
    let attrs = || vec![("dtype", AttrValue::Type(DataType::INT64))];
    let y = if last {
        let Some(n) = ctx.static_dim(x, axis)? else {
            return Err(unsupported(
                ctx,
                "select_last_index=1 needs the size of the reduced axis at import",
            ));
        };
        let ax = ctx.const_i64(&[axis as i64], &[1])?;
        let r = ctx.op1("ReverseV2", &[x, ax], vec![])?;
        let i = ctx.op1(op, &[r, dim], attrs())?;
        let top = ctx.const_i64(&[n - 1], &[])?;
        ctx.bin("Sub", top, i)?
    } else {
        ctx.op1(op, &[x, dim], attrs())?
    };
    let y = if keep {
        ctx.op1(
            "Unsqueeze",
            &[y],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        )?
    } else {
        y
    };
    one(y)
}
