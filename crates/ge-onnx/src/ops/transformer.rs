//! Transformer operators: Attention and RotaryEmbedding.

use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("Attention", Arc::new(attention));
    r.register("RotaryEmbedding", Arc::new(rotary_embedding));
}

// ---------------------------------------------------------------------------------------------
// Attention (opset 23), following onnx's reference: 3-D inputs split into heads, past key/value
// concatenated (present outputs), sqrt(scale) on Q and K, GQA by repeating K/V heads, softcap,
// mask (bool or additive, padded to the key length) and offset causal bias, softmax (in
// softmax_precision), fully masked rows zeroed, * V.
// ---------------------------------------------------------------------------------------------

fn static_dims(ctx: &NodeCtx<'_>, p: OutPort, what: &str) -> Result<Vec<i64>> {
    let d = ctx.desc(p)?;
    if !d.shape.is_static() || d.shape.is_unknown_rank() {
        return Err(Error::unsupported(format!(
            "{}: the shape of {what} must be static at import",
            ctx.op_type()
        )));
    }
    Ok(d.shape.dims().to_vec())
}

fn attention(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.check_attrs(&[
        "is_causal",
        "kv_num_heads",
        "q_num_heads",
        "qk_matmul_output_mode",
        "scale",
        "softcap",
        "softmax_precision",
    ])?;
    let q = ctx.input(0)?;
    let k = ctx.input(1)?;
    let v = ctx.input(2)?;
    let dt = ctx.desc(q)?.dtype;
    if !matches!(dt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Err(Error::unsupported(format!(
            "Attention on {dt} (GE's BatchMatMulV2 takes float, float16 and bfloat16)"
        )));
    }
    let qd = static_dims(ctx, q, "Q")?;
    let kd = static_dims(ctx, k, "K")?;
    let vd = static_dims(ctx, v, "V")?;
    if qd.len() != kd.len() || qd.len() != vd.len() || !(qd.len() == 3 || qd.len() == 4) {
        return Err(Error::tr(
            "Attention: Q, K and V must all be 3-D or all 4-D",
        ));
    }
    let three = qd.len() == 3;
    let (mut q4, mut k4, mut v4) = (q, k, v);
    let (qh, kvh);
    if three {
        qh = ctx.attr_i("q_num_heads", 0)?;
        kvh = ctx.attr_i("kv_num_heads", 0)?;
        if qh <= 0 || kvh <= 0 || qd[2] % qh != 0 || kd[2] % kvh != 0 || vd[2] % kvh != 0 {
            return Err(Error::tr(
                "Attention: 3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes",
            ));
        }
        let split = |ctx: &mut NodeCtx<'_>, x: OutPort, d: &[i64], h: i64| -> Result<OutPort> {
            let s = ctx.const_i64(&[d[0], d[1], h, d[2] / h], &[4])?;
            let y = ctx.op1("Reshape", &[x, s], vec![])?;
            ctx.transpose(y, &[0, 2, 1, 3])
        };
        q4 = split(ctx, q, &qd, qh)?;
        k4 = split(ctx, k, &kd, kvh)?;
        v4 = split(ctx, v, &vd, kvh)?;
    } else {
        if ctx.has_attr("q_num_heads") || ctx.has_attr("kv_num_heads") {
            return Err(Error::tr(
                "Attention: q_num_heads and kv_num_heads must not be given for 4-D inputs",
            ));
        }
        qh = qd[1];
        kvh = kd[1];
    }
    let q4d = static_dims(ctx, q4, "Q")?;
    let (b, sq, dq) = (q4d[0], q4d[2], q4d[3]);
    // Cache.
    let past = match (ctx.opt_input(4)?, ctx.opt_input(5)?) {
        (Some(pk), Some(pv)) => Some((pk, pv)),
        (None, None) => None,
        _ => {
            return Err(Error::tr(
                "Attention: past_key and past_value must be given together",
            ))
        }
    };
    let mut past_len = 0;
    if let Some((pk, pv)) = past {
        past_len = static_dims(ctx, pk, "past_key")?
            .get(2)
            .copied()
            .unwrap_or(0);
        k4 = ctx.concat(&[pk, k4], 2)?;
        v4 = ctx.concat(&[pv, v4], 2)?;
    }
    let (present_k, present_v) = (k4, v4);
    let total = static_dims(ctx, k4, "the keys")?[2];
    let dv = static_dims(ctx, v4, "the values")?[3];
    // Scale: sqrt(scale) on Q and on K, in the input dtype.
    let scale = if ctx.has_attr("scale") {
        ctx.attr_f("scale", 1.0)? as f64
    } else {
        1.0 / (dq as f64).sqrt()
    };
    let s = (scale.sqrt() as f32) as f64;
    let sc = ctx.const_of(dt, &[s], &[])?;
    let qs = ctx.op1("Mul", &[q4, sc], vec![])?;
    let mut ks = ctx.op1("Mul", &[k4, sc], vec![])?;
    let mut vr = v4;
    if qh != kvh {
        if kvh <= 0 || qh % kvh != 0 {
            return Err(Error::tr(format!(
                "Attention: {qh} query heads are not a multiple of {kvh} key/value heads"
            )));
        }
        let reps = qh / kvh;
        let rep = |ctx: &mut NodeCtx<'_>, x: OutPort, d: i64| -> Result<OutPort> {
            let s5 = ctx.const_i64(&[b, kvh, 1, total, d], &[5])?;
            let y = ctx.op1("Reshape", &[x, s5], vec![])?;
            let m = ctx.const_i64(&[1, 1, reps, 1, 1], &[5])?;
            let y = ctx.op1("Tile", &[y, m], vec![])?;
            let s4 = ctx.const_i64(&[b, qh, total, d], &[4])?;
            ctx.op1("Reshape", &[y, s4], vec![])
        };
        ks = rep(ctx, ks, dq)?;
        vr = rep(ctx, vr, dv)?;
    }
    let mut scores = ctx.op1(
        "BatchMatMulV2",
        &[qs, ks],
        vec![("adj_x2", AttrValue::Bool(true))],
    )?;
    let softcap = ctx.attr_f("softcap", 0.0)?;
    if softcap > 0.0 {
        let c = ctx.const_of(dt, &[softcap as f64], &[])?;
        let y = ctx.op1("RealDiv", &[scores, c], vec![])?;
        let y = ctx.op1("Tanh", &[y], vec![])?;
        scores = ctx.op1("Mul", &[y, c], vec![])?;
    }
    // The additive bias.
    let mut bias: Option<OutPort> = None;
    if let Some(mask) = ctx.opt_input(3)? {
        let md = static_dims(ctx, mask, "attn_mask")?;
        let mdt = ctx.desc(mask)?.dtype;
        let last = md.last().copied().unwrap_or(0);
        let mut m = mask;
        if last < total {
            let mut pshape = md.clone();
            if let Some(l) = pshape.last_mut() {
                *l = total - last;
            }
            let n = pshape.iter().product::<i64>().max(0) as usize;
            let pad = if mdt == DataType::BOOL {
                ctx.constant(es_core::Tensor::from_values(
                    &vec![false; n],
                    pshape.clone(),
                )?)?
            } else {
                ctx.const_of(mdt, &vec![f64::NEG_INFINITY; n], &pshape)?
            };
            m = ctx.concat(&[m, pad], md.len() as i64 - 1)?;
        }
        if mdt == DataType::BOOL {
            let z = ctx.const_of(dt, &[0.0], &[])?;
            let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
            m = ctx.op1("SelectV2", &[m, z, ninf], vec![])?;
        } else {
            m = ctx.cast(m, dt)?;
        }
        bias = Some(m);
    }
    let nonpad = match ctx.opt_input(6)? {
        Some(n) if past.is_some() => {
            let _ = n;
            return Err(Error::tr(
                "Attention: nonpad_kv_seqlen cannot be combined with past_key/past_value",
            ));
        }
        Some(n) => {
            let n = ctx.cast(n, DataType::INT64)?;
            let s = ctx.const_i64(&[-1, 1, 1, 1], &[4])?;
            Some(ctx.op1("Reshape", &[n, s], vec![])?)
        }
        None => None,
    };
    let causal = ctx.attr_i("is_causal", 0)? != 0;
    if let Some(n) = nonpad {
        // Per batch item: keys j < nonpad[b]; causal: j <= i + nonpad[b] - Sq.
        let jv: Vec<i64> = (0..total).collect();
        let j = ctx.const_i64(&jv, &[1, 1, 1, total])?;
        let z = ctx.const_of(dt, &[0.0], &[])?;
        let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        let ok = ctx.op1("Less", &[j, n], vec![])?;
        let mut nb = ctx.op1("SelectV2", &[ok, z, ninf], vec![])?;
        if causal {
            let iv: Vec<i64> = (0..sq).map(|i| i - sq).collect();
            let i = ctx.const_i64(&iv, &[1, 1, sq, 1])?;
            let lim = ctx.op1("Add", &[i, n], vec![])?;
            let ok = ctx.op1("LessEqual", &[j, lim], vec![])?;
            let cb = ctx.op1("SelectV2", &[ok, z, ninf], vec![])?;
            nb = ctx.op1("Add", &[nb, cb], vec![])?;
        }
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, nb], vec![])?,
            None => nb,
        });
    }
    if causal && nonpad.is_none() {
        super::util::const_elems(&[sq, total], "Attention causal mask")?;
        let mut vals = Vec::with_capacity((sq * total).max(0) as usize);
        for i in 0..sq {
            for j in 0..total {
                vals.push(if j <= i + past_len {
                    0.0
                } else {
                    f64::NEG_INFINITY
                });
            }
        }
        let c = ctx.const_of(dt, &vals, &[sq, total])?;
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, c], vec![])?,
            None => c,
        });
    }
    let with_bias = match bias {
        Some(bb) => ctx.op1("Add", &[scores, bb], vec![])?,
        None => scores,
    };
    let mode = ctx.attr_i("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(Error::tr(format!(
            "Attention: qk_matmul_output_mode {mode} must be 0..3"
        )));
    }
    let mut x = with_bias;
    if ctx.has_attr("softmax_precision") {
        let sp = crate::types::dtype_from_onnx(ctx.attr_i("softmax_precision", 1)? as i32)?;
        x = ctx.cast(x, sp)?;
    }
    let mut p = ctx.op1(
        "SoftmaxV2",
        &[x],
        vec![("axes", AttrValue::ListInt(vec![-1]))],
    )?;
    p = ctx.cast(p, dt)?;
    if let Some(bb) = bias {
        // Rows whose bias is -inf everywhere give 0.
        let ax = ctx.const_i64(&[-1], &[1])?;
        let mx = ctx.op1(
            "ReduceMax",
            &[bb, ax],
            vec![("keep_dims", AttrValue::Bool(true))],
        )?;
        let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        let all = ctx.op1("Equal", &[mx, ninf], vec![])?;
        let z = ctx.const_of(dt, &[0.0], &[])?;
        p = ctx.op1("SelectV2", &[all, z, p], vec![])?;
    }
    let qk_out = match mode {
        2 => with_bias,
        3 => p,
        _ => scores,
    };
    let mut y = ctx.op1("BatchMatMulV2", &[p, vr], vec![])?;
    if three {
        y = ctx.transpose(y, &[0, 2, 1, 3])?;
        let s = ctx.const_i64(&[b, sq, qh * dv], &[3])?;
        y = ctx.op1("Reshape", &[y, s], vec![])?;
    }
    Ok(vec![
        Some(y),
        Some(present_k),
        Some(present_v),
        Some(qk_out),
    ])
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding (opset 23)
// ---------------------------------------------------------------------------------------------

fn rotary_embedding(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.check_attrs(&["interleaved", "num_heads", "rotary_embedding_dim"])?;
    let x = ctx.input(0)?;
    let cos = ctx.input(1)?;
    let sin = ctx.input(2)?;
    let dt = ctx.desc(x)?.dtype;
    let xd = static_dims(ctx, x, "the input")?;
    let interleaved = ctx.attr_i("interleaved", 0)? != 0;
    // To [batch, seq, heads, head_size].
    let (x4, d4) = match xd.len() {
        4 => {
            let y = ctx.transpose(x, &[0, 2, 1, 3])?;
            (y, vec![xd[0], xd[2], xd[1], xd[3]])
        }
        3 => {
            let nh = ctx.attr_i("num_heads", 0)?;
            if nh <= 0 || xd[2] % nh != 0 {
                return Err(Error::tr(
                    "RotaryEmbedding: a 3-D input needs num_heads dividing its hidden size",
                ));
            }
            let d = vec![xd[0], xd[1], nh, xd[2] / nh];
            let s = ctx.const_i64(&d, &[4])?;
            (ctx.op1("Reshape", &[x, s], vec![])?, d)
        }
        _ => return Err(Error::tr("RotaryEmbedding: the input must be 3-D or 4-D")),
    };
    let head = d4[3];
    let mut rd = ctx.attr_i("rotary_embedding_dim", 0)?;
    if rd == 0 {
        rd = head;
    }
    if rd <= 0 || rd > head || rd % 2 != 0 {
        return Err(Error::tr(format!(
            "RotaryEmbedding: rotary_embedding_dim {rd} must be even and at most the head size {head}"
        )));
    }
    let half = rd / 2;
    let (x_rot, x_pass) = if rd < head {
        let sizes = ctx.const_i64(&[rd, head - rd], &[2])?;
        let ax = ctx.const_i64(&[3], &[])?;
        let parts = ctx.op(
            "SplitV",
            vec![vec![Some(x4)], vec![Some(sizes)], vec![Some(ax)]],
            vec![("num_split", AttrValue::Int(2))],
        )?;
        (parts[0], Some(parts[1]))
    } else {
        (x4, None)
    };
    let (mut c, mut s) = (cos, sin);
    if let Some(pos) = ctx.opt_input(3)? {
        let ax = ctx.const_i64(&[0], &[])?;
        c = ctx.op1("GatherV2", &[c, pos, ax], vec![])?;
        s = ctx.op1("GatherV2", &[s, pos, ax], vec![])?;
    }
    let cs = ctx.const_i64(&[d4[0], d4[1], 1, half], &[4])?;
    let c = ctx.op1("Reshape", &[c, cs], vec![])?;
    let s = ctx.op1("Reshape", &[s, cs], vec![])?;
    let c = ctx.cast(c, dt)?;
    let s = ctx.cast(s, dt)?;
    let (x1, x2) = if interleaved {
        let sh = ctx.const_i64(&[d4[0], d4[1], d4[2], half, 2], &[5])?;
        let y = ctx.op1("Reshape", &[x_rot, sh], vec![])?;
        let parts = ctx.op(
            "Unpack",
            vec![vec![Some(y)]],
            vec![("num", AttrValue::Int(2)), ("axis", AttrValue::Int(4))],
        )?;
        (parts[0], parts[1])
    } else {
        let parts = ctx.split_n(x_rot, 3, 2)?;
        (parts[0], parts[1])
    };
    let a = ctx.op1("Mul", &[c, x1], vec![])?;
    let bb = ctx.op1("Mul", &[s, x2], vec![])?;
    let real = ctx.op1("Sub", &[a, bb], vec![])?;
    let a = ctx.op1("Mul", &[s, x1], vec![])?;
    let bb = ctx.op1("Mul", &[c, x2], vec![])?;
    let imag = ctx.op1("Add", &[a, bb], vec![])?;
    let mut rot = if interleaved {
        let y = ctx.pack(&[real, imag], 4)?;
        let sh = ctx.const_i64(&[d4[0], d4[1], d4[2], rd], &[4])?;
        ctx.op1("Reshape", &[y, sh], vec![])?
    } else {
        ctx.concat(&[real, imag], 3)?
    };
    if let Some(p) = x_pass {
        rot = ctx.concat(&[rot, p], 3)?;
    }
    let y = if xd.len() == 4 {
        ctx.transpose(rot, &[0, 2, 1, 3])?
    } else {
        let sh = ctx.const_i64(&xd, &[3])?;
        ctx.op1("Reshape", &[rot, sh], vec![])?
    };
    Ok(vec![Some(y)])
}
