//! Normalisations and softmax.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("BatchNormalization", batch_norm),
    ("InstanceNormalization", instance_norm),
    ("LayerNormalization", layer_norm),
    ("LRN", lrn),
    ("GroupNormalization", group_norm),
    ("RMSNormalization", rms_norm),
    ("MeanVarianceNormalization", mvn),
    ("LpNormalization", lp_normalization),
];

// ---------------------------------------------------------------------------------------------
// Normalisations
// ---------------------------------------------------------------------------------------------

/// x of rank 2 or 3 gets trailing dims of 1 to rank 4 (for the NCHW operators); returns the
/// axes to squeeze afterwards.
fn to_4d(ctx: &mut NodeCtx<'_>, x: OutPort, r: usize) -> Result<(OutPort, Vec<i64>)> {
    if r >= 4 {
        return Ok((x, Vec::new()));
    }
    let axes: Vec<i64> = (r as i64..4).collect();
    Ok((ctx.unsqueeze(x, &axes)?, axes))
}

fn batch_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "epsilon",
        "momentum",
        "spatial",
        "is_test",
        "consumed_inputs",
        "training_mode",
    ])?;
    if ctx.opset < 9 && ctx.attr_i("spatial", 1)? == 0 {
        return Err(Error::unsupported(
            "BatchNormalization with spatial=0 (per-activation statistics)",
        ));
    }
    let training = ctx.opset >= 14 && ctx.attr_i("training_mode", 0)? != 0;
    if !training && (1..ctx.num_outputs()).any(|i| ctx.output_used(i)) {
        return Err(Error::unsupported(
            "BatchNormalization outputs other than Y outside training_mode (opset >= 14)",
        ));
    }
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let momentum = f64::from(ctx.attr_f("momentum", 0.9)?);
    let r = ctx.input_rank(0)?;
    if r < 2 {
        return Err(Error::tr(format!(
            "BatchNormalization needs an input of rank >= 2, got rank {r}"
        )));
    }
    let x = ctx.input(0)?;
    // GE's BatchNorm takes 4-D or 5-D: lower ranks get unit dims, higher ones their spatial
    // dims flattened (the per-channel statistics are the same).
    let (x4, sq, flat) = if r <= 5 {
        let (x4, sq) = to_4d(ctx, x, r)?;
        (x4, sq, None)
    } else {
        let (x4, shape) = flatten_spatial(ctx, x)?;
        (x4, Vec::new(), Some(shape))
    };
    let mut params = Vec::with_capacity(4);
    for i in 1..5 {
        let p = ctx.input(i)?;
        params.push(ctx.cast(p, DataType::FLOAT)?);
    }
    let fmt = if r == 5 { "NCDHW" } else { "NCHW" };
    let outs = ctx.op(
        "BatchNorm",
        vec![
            vec![Some(x4)],
            vec![Some(params[0])],
            vec![Some(params[1])],
            vec![Some(params[2])],
            vec![Some(params[3])],
        ],
        vec![
            ("epsilon", AttrValue::Float(eps)),
            ("data_format", st(fmt)),
            ("is_training", AttrValue::Bool(training)),
        ],
    )?;
    let mut y = outs[0];
    if !sq.is_empty() {
        y = ctx.squeeze(y, &sq)?;
    }
    if let Some(shape) = flat {
        y = ctx.op1("Reshape", &[y, shape], vec![])?;
    }
    let mut res = vec![Some(y)];
    if training {
        // running = input * momentum + batch * (1 - momentum); the batch variance biased.
        for (old, batch) in [(params[2], outs[3]), (params[3], outs[4])] {
            let m = ctx.const_of(DataType::FLOAT, &[momentum], &[])?;
            let m1 = ctx.const_of(DataType::FLOAT, &[1.0 - momentum], &[])?;
            let a = ctx.op1("Mul", &[old, m], vec![])?;
            let b = ctx.op1("Mul", &[batch, m1], vec![])?;
            let mut v = ctx.op1("Add", &[a, b], vec![])?;
            let want = ctx.input_desc(3)?.dtype;
            if want != DataType::UNDEFINED {
                v = ctx.cast(v, want)?;
            }
            res.push(Some(v));
        }
    }
    Ok(res)
}

/// GE's InstanceNorm takes 4-D (NCHW) or 5-D (NCDHW) inputs: a rank-3 input (N, C, L) gets a
/// trailing unit dim, a rank >= 6 one has its spatial dims flattened to (N, C, -1, 1) (the
/// statistics are over all spatial positions either way), and the result is shaped back.
fn instance_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["epsilon", "consumed_inputs"])?;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let r = ctx.input_rank(0)?;
    if r < 3 {
        return Err(Error::tr(format!(
            "InstanceNormalization needs an input of rank >= 3, got rank {r}"
        )));
    }
    let (x, scale, b) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let norm = |ctx: &mut NodeCtx<'_>, x: OutPort, fmt: &str| -> Result<OutPort> {
        let outs = ctx.op(
            "InstanceNorm",
            vec![vec![Some(x)], vec![Some(scale)], vec![Some(b)]],
            vec![("data_format", st(fmt)), ("epsilon", AttrValue::Float(eps))],
        )?;
        Ok(outs[0])
    };
    let y = match r {
        4 => norm(ctx, x, "NCHW")?,
        5 => norm(ctx, x, "NCDHW")?,
        3 => {
            let x4 = ctx.unsqueeze(x, &[3])?;
            let y = norm(ctx, x4, "NCHW")?;
            ctx.squeeze(y, &[3])?
        }
        _ => {
            let (x4, shape) = flatten_spatial(ctx, x)?;
            let y = norm(ctx, x4, "NCHW")?;
            ctx.op1("Reshape", &[y, shape], vec![])?
        }
    };
    Ok(vec![Some(y)])
}

/// `x` (N, C, d1, ..., dk) reshaped to (N, C, d1*...*dk, 1), and the shape of `x` to shape the
/// result back with.
fn flatten_spatial(ctx: &mut NodeCtx<'_>, x: OutPort) -> Result<(OutPort, OutPort)> {
    let shape = ctx.shape_i64(x)?;
    let nc = ctx.gather_const(shape, &[0, 1])?;
    let rest = ctx.const_i64(&[-1, 1], &[2])?;
    let s4 = ctx.concat(&[nc, rest], 0)?;
    Ok((ctx.op1("Reshape", &[x, s4], vec![])?, shape))
}

/// The attribute `stash_type`: the float type the statistics are computed in.
fn stash_type(ctx: &NodeCtx<'_>) -> Result<DataType> {
    let stash = ctx.attr_i("stash_type", 1)?;
    let stash_dt = crate::types::dtype_from_onnx(stash as i32)
        .map_err(|e| e.context("attribute 'stash_type'"))?;
    if !stash_dt.is_float() {
        return Err(Error::tr(format!(
            "attribute 'stash_type' must be a float type, got {stash_dt}"
        )));
    }
    Ok(stash_dt)
}

fn layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "epsilon", "stash_type"])?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, r, "LayerNormalization axis")? as i64;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let stash_dt = stash_type(ctx)?;
    let (x, scale) = (ctx.input(0)?, ctx.input(1)?);
    let bias = match ctx.opt_input(2)? {
        Some(b) => b,
        None => ctx.op1("ZerosLike", &[scale], vec![])?,
    };
    let outs = ctx.op(
        "LayerNorm",
        vec![vec![Some(x)], vec![Some(scale)], vec![Some(bias)]],
        vec![
            ("begin_norm_axis", AttrValue::Int(axis)),
            ("begin_params_axis", AttrValue::Int(axis)),
            ("epsilon", AttrValue::Float(eps)),
        ],
    )?;
    let mut res = vec![Some(outs[0])];
    if ctx.output_used(1) || ctx.output_used(2) {
        let mean = ctx.cast(outs[1], stash_dt)?;
        let var = ctx.cast(outs[2], stash_dt)?;
        let e = ctx.const_of(stash_dt, &[f64::from(eps)], &[])?;
        let ve = ctx.op1("Add", &[var, e], vec![])?;
        let inv = ctx.op1("Rsqrt", &[ve], vec![])?;
        res.push(Some(mean));
        res.push(Some(inv));
    }
    Ok(res)
}

fn lrn(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "bias", "size"])?;
    let size = ctx.attr_i("size", 0)?;
    if size < 1 {
        return Err(Error::tr(format!(
            "LRN needs the attribute 'size' >= 1, got {size}"
        )));
    }
    if size % 2 == 0 {
        return Err(Error::unsupported(format!(
            "LRN with an even size {size} (its window is asymmetric; GE's LRN takes a radius)"
        )));
    }
    let alpha = ctx.attr_f("alpha", 1e-4)?;
    let beta = ctx.attr_f("beta", 0.75)?;
    let bias = ctx.attr_f("bias", 1.0)?;
    let x = ctx.input(0)?;
    one(ctx.op1(
        "LRN",
        &[x],
        vec![
            ("depth_radius", AttrValue::Int((size - 1) / 2)),
            ("bias", AttrValue::Float(bias)),
            ("alpha", AttrValue::Float(alpha / size as f32)),
            ("beta", AttrValue::Float(beta)),
            ("norm_region", st("ACROSS_CHANNELS")),
        ],
    )?)
}

// ---------------------------------------------------------------------------------------------
// More normalisations and pooling: GroupNormalization, RMSNormalization, LpPool
// ---------------------------------------------------------------------------------------------

fn group_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["epsilon", "num_groups", "stash_type"])?;
    let eps = ctx.attr_f("epsilon", 1e-5)?;
    let g = ctx.attr_i("num_groups", 0)?;
    if g < 1 {
        return Err(Error::tr(format!(
            "GroupNormalization needs the attribute 'num_groups' >= 1, got {g}"
        )));
    }
    if ctx.attr_i("stash_type", 1)? != 1 {
        return Err(Error::unsupported(
            "GroupNormalization with a stash_type other than float (GE computes in f64 and \
             rounds once)",
        ));
    }
    let xd = spatial_input_dims(ctx)?;
    let (x, mut scale, mut bias) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    if ctx.opset < 21 {
        // Opset 18: one scale and bias per group; repeat them to one per channel.
        let c = xd[1];
        if c < 0 || c % g != 0 {
            return Err(Error::unsupported(format!(
                "GroupNormalization (opset {}): per-group scale and bias need the channel count \
                 at import, a multiple of num_groups {g}; got the input dims {xd:?}",
                ctx.opset
            )));
        }
        for p in [&mut scale, &mut bias] {
            let s1 = ctx.const_i64(&[g, 1], &[2])?;
            let r = ctx.op1("Reshape", &[*p, s1], vec![])?;
            let m = ctx.const_i64(&[1, c / g], &[2])?;
            let t = ctx.op1("Tile", &[r, m], vec![])?;
            let s2 = ctx.const_i64(&[c], &[1])?;
            *p = ctx.op1("Reshape", &[t, s2], vec![])?;
        }
    }
    let fmt = if xd.len() == 5 { "NCDHW" } else { "NCHW" };
    let outs = ctx.op(
        "GroupNorm",
        vec![vec![Some(x)], vec![Some(scale)], vec![Some(bias)]],
        vec![
            ("num_groups", AttrValue::Int(g)),
            ("data_format", st(fmt)),
            ("eps", AttrValue::Float(eps)),
            ("is_training", AttrValue::Bool(false)),
        ],
    )?;
    Ok(vec![Some(outs[0])])
}

fn rms_norm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "epsilon", "stash_type"])?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, r, "RMSNormalization axis")?;
    let eps = f64::from(ctx.attr_f("epsilon", 1e-5)?);
    let stash_dt = stash_type(ctx)?;
    let (x, scale) = (ctx.input(0)?, ctx.input(1)?);
    let xdt = ctx.desc(x)?.dtype;
    let xs = ctx.cast(x, stash_dt)?;
    let sq = ctx.op1("Mul", &[xs, xs], vec![])?;
    let axes: Vec<i64> = (axis as i64..r as i64).collect();
    let m = ctx.reduce_keep("ReduceMean", sq, &axes)?;
    let e = ctx.const_of(stash_dt, &[eps], &[])?;
    let me = ctx.op1("Add", &[m, e], vec![])?;
    let inv = ctx.op1("Rsqrt", &[me], vec![])?;
    let n = ctx.op1("Mul", &[xs, inv], vec![])?;
    let n = ctx.cast(n, xdt)?;
    one(ctx.op1("Mul", &[n, scale], vec![])?)
}

// Softmax, LogSoftmax, Hardmax.

variants!(Soft {
    Softmax,
    LogSoftmax,
    Hardmax
});

/// Registers the translators of the variants of [`Soft`].
pub(super) fn register_variant_ops(r: &mut Registry) {
    // Softmax, LogSoftmax, Hardmax: the ONNX name is the variant's name.
    register_variants(r, Soft::ALL, |v| format!("{v:?}"), softmax);
}

/// The op along `axis` (normalised) of `x` (rank `rank`).
fn soft_along(ctx: &mut NodeCtx<'_>, s: Soft, x: OutPort, axis: usize) -> Result<OutPort> {
    match s {
        Soft::Softmax => ctx.op1(
            "SoftmaxV2",
            &[x],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        ),
        Soft::LogSoftmax => ctx.op1(
            "LogSoftmaxV2",
            &[x],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        ),
        Soft::Hardmax => {
            let Some(n) = ctx.static_dim(x, axis)? else {
                return Err(unsupported(
                    ctx,
                    "the size of the axis must be known at import",
                ));
            };
            let dt = ctx.port_dtype(x)?;
            let dim = ctx.const_i64(&[axis as i64], &[])?;
            let i = ctx.op1(
                "ArgMaxV2",
                &[x, dim],
                vec![("dtype", AttrValue::Type(DataType::INT64))],
            )?;
            let depth = ctx.const_i64(&[n], &[])?;
            let on = ctx.scalar(dt, 1.0)?;
            let off = ctx.scalar(dt, 0.0)?;
            ctx.op1(
                "OneHot",
                &[i, depth, on, off],
                vec![("axis", AttrValue::Int(axis as i64))],
            )
        }
    }
}

fn softmax(ctx: &mut NodeCtx<'_>, s: Soft) -> Out {
    ctx.known_attrs(&["axis"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let old = ctx.opset < 13;
    let axis = norm_axis(ctx.attr_i("axis", if old { 1 } else { -1 })?, rank, "axis")?;
    if !old || axis + 1 == rank || rank == 0 {
        return one(soft_along(ctx, s, x, axis)?);
    }
    // Opsets < 13: the input is coerced to 2-D [d0*..*d(axis-1), d(axis)*..*d(n-1)].
    let flat = if axis == 0 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        ctx.op1("Reshape", &[x, shape], vec![])?
    } else {
        ctx.op1("Flatten", &[x], vec![("axis", AttrValue::Int(axis as i64))])?
    };
    let y = soft_along(ctx, s, flat, 1)?;
    let shape = ctx.op1("Shape", &[x], vec![("dtype", AttrValue::Int(9))])?;
    one(ctx.op1("Reshape", &[y, shape], vec![])?)
}

/// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
fn mvn(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axes"])?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let rank = ctx.input_rank(0)?;
    let axes = ctx.attr_ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let axes: Vec<i64> = norm_axes(&axes, rank, "axes")?
        .into_iter()
        .map(|a| a as i64)
        .collect();
    let ax = Axes::List(axes);
    let mean = reduce_op(ctx, "ReduceMean", x, &ax, true)?;
    let mean2 = ctx.bin("Mul", mean, mean)?;
    let x2 = ctx.bin("Mul", x, x)?;
    let ex2 = reduce_op(ctx, "ReduceMean", x2, &ax, true)?;
    let var = ctx.bin("Sub", ex2, mean2)?;
    let std = ctx.un("Sqrt", var)?;
    let eps = ctx.scalar(dt, 1e-9)?;
    let den = ctx.bin("Add", std, eps)?;
    let num = ctx.bin("Sub", x, mean)?;
    one(ctx.bin("RealDiv", num, den)?)
}

/// x / ||x||_p along `axis` (p = 1: sum |x|, or 2).
fn lp_normalization(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "p"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, rank, "axis")?;
    let p = ctx.attr_i("p", 2)?;
    let ax = Axes::List(vec![axis as i64]);
    let norm = match p {
        1 => {
            let a = ctx.un("Abs", x)?;
            reduce_op(ctx, "ReduceSum", a, &ax, true)?
        }
        2 => {
            let sq = ctx.bin("Mul", x, x)?;
            let s = reduce_op(ctx, "ReduceSum", sq, &ax, true)?;
            ctx.un("Sqrt", s)?
        }
        _ => {
            return Err(Error::tr(format!(
                "LpNormalization: p must be 1 or 2, got {p}"
            )))
        }
    };
    // A zero norm gives 0 (not NaN), as ONNX's reference implementation.
    let dt = ctx.in_dtype(0)?;
    let zero = ctx.scalar(dt, 0.0)?;
    let is0 = ctx.bin("Equal", norm, zero)?;
    let q = ctx.bin("RealDiv", x, norm)?;
    one(ctx.op1("SelectV2", &[is0, zero, q], vec![])?)
}
