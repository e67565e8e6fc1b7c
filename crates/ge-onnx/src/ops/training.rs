//! ai.onnx.preview.training optimizer steps: Adagrad, Adam, Momentum (standard and Nesterov),
//! composed of element-wise GE ops in the dtype of the tensors being optimized, as onnx's
//! reference computes them. Inputs: R (learning rate), T (step count), then the n tensors X,
//! their gradients G and accumulators (Adagrad: H; Adam: V, H; Momentum: V), each group of n
//! in order; outputs: the new X, then the new accumulators, each group of n.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("ai.onnx.preview.training::Adagrad", adagrad),
    ("ai.onnx.preview.training::Adam", adam),
    ("ai.onnx.preview.training::Momentum", momentum),
];

/// One optimizer step on n tensors: R, T and each tensor's [X, G, accumulators...] (in `dt`).
struct Step {
    r: OutPort,
    t: OutPort,
    /// T > 0, as bool.
    started: OutPort,
    dt: DataType,
    per: Vec<Vec<OutPort>>,
}

/// Reads R, T and the `groups` groups of n inputs (X, G, accumulators).
fn step(ctx: &mut NodeCtx<'_>, groups: usize) -> Result<Step> {
    let op = ctx.op_type().to_string();
    let rest = ctx.num_inputs().saturating_sub(2);
    if rest == 0
        || !rest.is_multiple_of(groups)
        || ctx.num_outputs() != rest / groups * (groups - 1)
    {
        return Err(Error::tr(format!(
            "{op}: expected R, T and {groups} groups of n inputs with {} groups of n outputs, got {} inputs and {} outputs",
            groups - 1,
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    let n = rest / groups;
    let x0 = ctx.input(2)?;
    let dt = ctx.desc(x0)?.dtype;
    if !matches!(dt, DataType::FLOAT | DataType::DOUBLE) {
        return Err(Error::unsupported(format!(
            "{op} on {dt} (float and double are supported)"
        )));
    }
    let r = ctx.input(0)?;
    let r = ctx.cast(r, dt)?;
    let t = ctx.input(1)?;
    let zero = ctx.const_i64(&[0], &[])?;
    let t64 = ctx.cast(t, DataType::INT64)?;
    let started = ctx.bin("Greater", t64, zero)?;
    let t = ctx.cast(t64, dt)?;
    let mut per = Vec::with_capacity(n);
    for i in 0..n {
        let mut ins = Vec::with_capacity(groups);
        for g in 0..groups {
            let p = ctx.input(2 + g * n + i)?;
            if ctx.desc(p)?.dtype != dt {
                return Err(Error::tr(format!(
                    "{op}: input {} is not of X's dtype {dt}",
                    2 + g * n + i
                )));
            }
            ins.push(p);
        }
        per.push(ins);
    }
    Ok(Step {
        r,
        t,
        started,
        dt,
        per,
    })
}

/// `a * x + y` with a constant `a`.
fn axpy(ctx: &mut NodeCtx<'_>, a: f64, x: OutPort, y: OutPort, dt: DataType) -> Result<OutPort> {
    let c = ctx.scalar(dt, a)?;
    let ax = ctx.bin("Mul", c, x)?;
    ctx.bin("Add", ax, y)
}

/// The outputs in ONNX order: every tensor's first result, then every second, ...
fn interleave(res: Vec<Vec<OutPort>>) -> Out {
    let k = res.first().map_or(0, Vec::len);
    Ok((0..k)
        .flat_map(|j| res.iter().map(move |r| Some(r[j])))
        .collect())
}

fn adagrad(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["decay_factor", "epsilon", "norm_coefficient"])?;
    let decay = ctx.attr_f("decay_factor", 0.0)? as f64;
    let eps = ctx.attr_f("epsilon", 1e-6)? as f64;
    let nc = ctx.attr_f("norm_coefficient", 0.0)? as f64;
    let s = step(ctx, 3)?;
    let dt = s.dt;
    // r / (1 + t * decay_factor)
    let one = ctx.scalar(dt, 1.0)?;
    let td = {
        let d = ctx.scalar(dt, decay)?;
        ctx.bin("Mul", s.t, d)?
    };
    let den = ctx.bin("Add", one, td)?;
    let r = ctx.bin("RealDiv", s.r, den)?;
    let e = ctx.scalar(dt, eps)?;
    let mut res = Vec::new();
    for p in &s.per {
        let (x, g, h) = (p[0], p[1], p[2]);
        let gr = axpy(ctx, nc, x, g, dt)?;
        let g2 = ctx.bin("Mul", gr, gr)?;
        let h_new = ctx.bin("Add", h, g2)?;
        let sq = ctx.un("Sqrt", h_new)?;
        let sq = ctx.bin("Add", sq, e)?;
        let upd = ctx.bin("Mul", r, gr)?;
        let upd = ctx.bin("RealDiv", upd, sq)?;
        let x_new = ctx.bin("Sub", x, upd)?;
        res.push(vec![x_new, h_new]);
    }
    interleave(res)
}

fn adam(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "alpha",
        "beta",
        "epsilon",
        "norm_coefficient",
        "norm_coefficient_post",
    ])?;
    let alpha = ctx.attr_f("alpha", 0.9)? as f64;
    let beta = ctx.attr_f("beta", 0.999)? as f64;
    let eps = ctx.attr_f("epsilon", 1e-6)? as f64;
    let nc = ctx.attr_f("norm_coefficient", 0.0)? as f64;
    let post = ctx.attr_f("norm_coefficient_post", 0.0)? as f64;
    let s = step(ctx, 4)?;
    let dt = s.dt;
    // t > 0: r * sqrt(1 - beta^t) / (1 - alpha^t); else r.
    let one = ctx.scalar(dt, 1.0)?;
    let pow = |ctx: &mut NodeCtx<'_>, b: f64| -> Result<OutPort> {
        let c = ctx.scalar(dt, b)?;
        let p = ctx.bin("Pow", c, s.t)?;
        ctx.bin("Sub", one, p)
    };
    let bt = pow(ctx, beta)?;
    let at = pow(ctx, alpha)?;
    let bt = ctx.un("Sqrt", bt)?;
    let ra = ctx.bin("Mul", s.r, bt)?;
    let ra = ctx.bin("RealDiv", ra, at)?;
    let r = ctx.op1("SelectV2", &[s.started, ra, s.r], vec![])?;
    let e = ctx.scalar(dt, eps)?;
    let keep = ctx.scalar(dt, 1.0 - post)?;
    let mut res = Vec::new();
    for p in &s.per {
        let (x, g, v, h) = (p[0], p[1], p[2], p[3]);
        let gr = axpy(ctx, nc, x, g, dt)?;
        let gv = {
            let c = ctx.scalar(dt, 1.0 - alpha)?;
            ctx.bin("Mul", c, gr)?
        };
        let v_new = axpy(ctx, alpha, v, gv, dt)?;
        let g2 = ctx.bin("Mul", gr, gr)?;
        let gh = {
            let c = ctx.scalar(dt, 1.0 - beta)?;
            ctx.bin("Mul", c, g2)?
        };
        let h_new = axpy(ctx, beta, h, gh, dt)?;
        let sq = ctx.un("Sqrt", h_new)?;
        let sq = ctx.bin("Add", sq, e)?;
        let upd = ctx.bin("RealDiv", v_new, sq)?;
        let upd = ctx.bin("Mul", r, upd)?;
        let x_new = ctx.bin("Sub", x, upd)?;
        let x_new = ctx.bin("Mul", keep, x_new)?;
        res.push(vec![x_new, v_new, h_new]);
    }
    interleave(res)
}

fn momentum(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "mode", "norm_coefficient"])?;
    for a in ["alpha", "beta", "mode", "norm_coefficient"] {
        if !ctx.has_attr(a) {
            return Err(Error::tr(format!("Momentum needs the attribute '{a}'")));
        }
    }
    let alpha = ctx.attr_f("alpha", 0.0)? as f64;
    let beta = ctx.attr_f("beta", 0.0)? as f64;
    let nc = ctx.attr_f("norm_coefficient", 0.0)? as f64;
    let mode = ctx.attr_s("mode", "standard")?;
    let nesterov = match mode.as_str() {
        "standard" => false,
        "nesterov" => true,
        _ => {
            return Err(Error::tr(format!(
                "Momentum: mode '{mode}' is not standard or nesterov"
            )))
        }
    };
    let s = step(ctx, 3)?;
    let dt = s.dt;
    let (b, one) = (ctx.scalar(dt, beta)?, ctx.scalar(dt, 1.0)?);
    let b = ctx.op1("SelectV2", &[s.started, b, one], vec![])?;
    let mut res = Vec::new();
    for p in &s.per {
        let (x, g, v) = (p[0], p[1], p[2]);
        let gr = axpy(ctx, nc, x, g, dt)?;
        let bg = ctx.bin("Mul", b, gr)?;
        let v_new = axpy(ctx, alpha, v, bg, dt)?;
        let dir = if nesterov {
            axpy(ctx, alpha, v_new, gr, dt)?
        } else {
            v_new
        };
        let upd = ctx.bin("Mul", s.r, dir)?;
        let x_new = ctx.bin("Sub", x, upd)?;
        res.push(vec![x_new, v_new]);
    }
    interleave(res)
}
