//! Transformer operators: Attention and RotaryEmbedding; quantization (QuantizeLinear,
//! DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger,
//! QLinearConv).

use super::conv::conv_window;
use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{unify_captures, NodeCtx};
use es_core::{AttrValue, DataType, OpArgs, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("Attention", attention),
    ("RotaryEmbedding", rotary_embedding),
    ("LinearAttention", linear_attention),
    ("CausalConvWithState", causal_conv_with_state),
    ("ai.onnx.preview::FlexAttention", flex_attention),
    ("QuantizeLinear", quantize_linear),
    ("DequantizeLinear", dequantize_linear),
    ("DynamicQuantizeLinear", dynamic_quantize_linear),
    ("MatMulInteger", matmul_integer),
    ("QLinearMatMul", qlinear_matmul),
    ("ConvInteger", conv_integer),
    ("QLinearConv", qlinear_conv),
];

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
    ctx.known_attrs(&[
        "is_causal",
        "kv_num_heads",
        "left_window_size",
        "q_num_heads",
        "qk_matmul_output_mode",
        "right_window_size",
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
    // Only the hidden/head sizes and head counts must be known at import; batch, sequence
    // and past lengths are read at run time where they are not.
    let rank = |ctx: &NodeCtx<'_>, p: OutPort, what: &str| -> Result<usize> {
        ctx.desc(p)?.shape.rank().ok_or_else(|| {
            Error::unsupported(format!(
                "Attention: the rank of {what} must be known at import"
            ))
        })
    };
    let r = rank(ctx, q, "Q")?;
    if rank(ctx, k, "K")? != r || rank(ctx, v, "V")? != r || !(r == 3 || r == 4) {
        return Err(Error::tr(
            "Attention: Q, K and V must all be 3-D or all 4-D",
        ));
    }
    let need = |ctx: &NodeCtx<'_>, p: OutPort, axis: usize, what: &str| -> Result<i64> {
        ctx.static_dim(p, axis)?.ok_or_else(|| {
            Error::unsupported(format!("Attention: {what} must be static at import"))
        })
    };
    let three = r == 3;
    let (mut q4, mut k4, mut v4) = (q, k, v);
    let (qh, kvh, dq, dv);
    if three {
        qh = ctx.attr_i("q_num_heads", 0)?;
        kvh = ctx.attr_i("kv_num_heads", 0)?;
        let qhid = need(ctx, q, 2, "the hidden size of Q")?;
        let khid = need(ctx, k, 2, "the hidden size of K")?;
        let vhid = need(ctx, v, 2, "the hidden size of V")?;
        if qh <= 0 || kvh <= 0 || qhid % qh != 0 || khid % kvh != 0 || vhid % kvh != 0 {
            return Err(Error::tr(
                "Attention: 3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes",
            ));
        }
        let split = |ctx: &mut NodeCtx<'_>, x: OutPort, hid: i64, h: i64| -> Result<OutPort> {
            let s =
                ctx.shape_from(&[Dim::Of(x, 0), Dim::Of(x, 1), Dim::Is(h), Dim::Is(hid / h)])?;
            let y = ctx.op1("Reshape", &[x, s], vec![])?;
            ctx.transpose(y, &[0, 2, 1, 3])
        };
        q4 = split(ctx, q, qhid, qh)?;
        k4 = split(ctx, k, khid, kvh)?;
        v4 = split(ctx, v, vhid, kvh)?;
        (dq, dv) = (qhid / qh, vhid / kvh);
    } else {
        if ctx.has_attr("q_num_heads") || ctx.has_attr("kv_num_heads") {
            return Err(Error::tr(
                "Attention: q_num_heads and kv_num_heads must not be given for 4-D inputs",
            ));
        }
        qh = need(ctx, q, 1, "the number of heads of Q")?;
        kvh = need(ctx, k, 1, "the number of heads of K")?;
        dq = need(ctx, q, 3, "the head size of Q")?;
        dv = need(ctx, v, 3, "the head size of V")?;
    }
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
    if let Some((pk, pv)) = past {
        k4 = ctx.concat(&[pk, k4], 2)?;
        v4 = ctx.concat(&[pv, v4], 2)?;
    }
    let (present_k, present_v) = (k4, v4);
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
        ks = repeat_heads(ctx, ks, qh / kvh, qh, dq)?;
        vr = repeat_heads(ctx, vr, qh / kvh, qh, dv)?;
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
        let total = need(ctx, k4, 2, "the key length (with attn_mask)")?;
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
        let total = ctx.dim_scalar(k4, 2)?;
        let j = ctx.iota(total, &[1, 1, 1, -1])?;
        let z = ctx.const_of(dt, &[0.0], &[])?;
        let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        let ok = ctx.op1("Less", &[j, n], vec![])?;
        let mut nb = ctx.op1("SelectV2", &[ok, z, ninf], vec![])?;
        if causal {
            let sq = ctx.dim_scalar(q4, 2)?;
            let i = ctx.iota(sq, &[1, 1, -1, 1])?;
            let i = ctx.op1("Sub", &[i, sq], vec![])?;
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
        // Query i (of Sq) sees keys j <= i + the past length.
        let c = causal_bias(ctx, q4, past.map(|(pk, _)| pk), k4, dt)?;
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, c], vec![])?,
            None => c,
        });
    }
    let (left, right) = (
        ctx.attr_i("left_window_size", -1)?,
        ctx.attr_i("right_window_size", -1)?,
    );
    if left < -1 || right < -1 {
        return Err(Error::tr(format!(
            "Attention: left_window_size {left} and right_window_size {right} must be -1 or \
             nonnegative"
        )));
    }
    if left >= 0 || right >= 0 {
        let w = window_bias(
            ctx,
            q4,
            k4,
            past.map(|(pk, _)| pk),
            nonpad,
            (left, right),
            dt,
        )?;
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, w], vec![])?,
            None => w,
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
        let mx = ctx.reduce_keep("ReduceMax", bb, &[-1])?;
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
        let s = ctx.shape_from(&[Dim::Of(y, 0), Dim::Of(y, 1), Dim::Is(qh * dv)])?;
        y = ctx.op1("Reshape", &[y, s], vec![])?;
    }
    Ok(vec![
        Some(y),
        Some(present_k),
        Some(present_v),
        Some(qk_out),
    ])
}

/// `x` [B, kvh, S, d] with each head repeated `reps` times in place (head h of the result is
/// head h / reps of `x`): [B, qh, S, d].
fn repeat_heads(ctx: &mut NodeCtx<'_>, x: OutPort, reps: i64, qh: i64, d: i64) -> Result<OutPort> {
    let y = ctx.unsqueeze(x, &[2])?;
    let m = ctx.const_i64(&[1, 1, reps, 1, 1], &[5])?;
    let y = ctx.op1("Tile", &[y, m], vec![])?;
    let s4 = ctx.shape_from(&[Dim::Of(x, 0), Dim::Is(qh), Dim::Of(x, 2), Dim::Is(d)])?;
    ctx.op1("Reshape", &[y, s4], vec![])
}

/// Attention's causal bias [Sq, T] (0 where key j <= query i + the past length, -inf
/// elsewhere): a constant when Sq, T and the past length are known at import, else built from
/// Range at run time.
fn causal_bias(
    ctx: &mut NodeCtx<'_>,
    q4: OutPort,
    past_key: Option<OutPort>,
    k4: OutPort,
    dt: DataType,
) -> Result<OutPort> {
    let past = match past_key {
        Some(pk) => ctx.static_dim(pk, 2)?,
        None => Some(0),
    };
    let (sq, total) = (ctx.static_dim(q4, 2)?, ctx.static_dim(k4, 2)?);
    if let (Some(sq), Some(total), Some(past)) = (sq, total, past) {
        super::util::const_elems(&[sq, total], "Attention causal mask")?;
        let mut vals = Vec::with_capacity((sq * total).max(0) as usize);
        for i in 0..sq {
            for j in 0..total {
                vals.push(if j <= i + past {
                    0.0
                } else {
                    f64::NEG_INFINITY
                });
            }
        }
        return ctx.const_of(dt, &vals, &[sq, total]);
    }
    let sq = ctx.dim_scalar(q4, 2)?;
    let total = ctx.dim_scalar(k4, 2)?;
    let i = ctx.iota(sq, &[-1, 1])?;
    let lim = match past_key {
        Some(pk) => {
            let p = ctx.dim_scalar(pk, 2)?;
            ctx.op1("Add", &[i, p], vec![])?
        }
        None => i,
    };
    let j = ctx.iota(total, &[1, -1])?;
    let ok = ctx.op1("LessEqual", &[j, lim], vec![])?;
    let z = ctx.const_of(dt, &[0.0], &[])?;
    let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
    ctx.op1("SelectV2", &[ok, z, ninf], vec![])
}

/// The sliding-window bias (opset 25): query `i` at absolute position `p = offset + i` sees
/// key `j` when `p - left <= j <= p + right`, a side of -1 unbounded; `offset` as the causal
/// frontier's: the past length, `nonpad_kv_seqlen[b] - Sq` (`nonpad`, [B,1,1,1]), or 0.
fn window_bias(
    ctx: &mut NodeCtx<'_>,
    q4: OutPort,
    k4: OutPort,
    past_key: Option<OutPort>,
    nonpad: Option<OutPort>,
    (left, right): (i64, i64),
    dt: DataType,
) -> Result<OutPort> {
    let sq = ctx.dim_scalar(q4, 2)?;
    let total = ctx.dim_scalar(k4, 2)?;
    let mut p = ctx.iota(sq, &[1, 1, -1, 1])?;
    if let Some(pk) = past_key {
        let pl = ctx.dim_scalar(pk, 2)?;
        p = ctx.bin("Add", p, pl)?;
    } else if let Some(n) = nonpad {
        p = ctx.bin("Add", p, n)?;
        p = ctx.bin("Sub", p, sq)?;
    }
    let j = ctx.iota(total, &[1, 1, 1, -1])?;
    let diff = ctx.bin("Sub", p, j)?;
    let mut ok = None;
    if left >= 0 {
        let l = ctx.const_i64(&[left], &[])?;
        ok = Some(ctx.bin("LessEqual", diff, l)?);
    }
    if right >= 0 {
        let r = ctx.const_i64(&[-right], &[])?;
        let c = ctx.bin("GreaterEqual", diff, r)?;
        ok = Some(match ok {
            Some(a) => ctx.bin("LogicalAnd", a, c)?,
            None => c,
        });
    }
    let ok = ok.ok_or_else(|| Error::tr("Attention: a window without a bound"))?;
    let z = ctx.const_of(dt, &[0.0], &[])?;
    let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
    ctx.op1("SelectV2", &[ok, z, ninf], vec![])
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding (opset 23)
// ---------------------------------------------------------------------------------------------

fn rotary_embedding(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["interleaved", "num_heads", "rotary_embedding_dim"])?;
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

// ---------------------------------------------------------------------------------------------
// Quantization
// ---------------------------------------------------------------------------------------------

/// The integer range of a quantized dtype.
fn qrange(dt: DataType) -> Option<(f64, f64)> {
    Some(match dt {
        DataType::UINT8 => (0.0, 255.0),
        DataType::INT8 => (-128.0, 127.0),
        DataType::UINT16 => (0.0, 65535.0),
        DataType::INT16 => (-32768.0, 32767.0),
        DataType::INT32 => (-2147483648.0, 2147483647.0),
        DataType::INT4 => (-8.0, 7.0),
        DataType::UINT4 => (0.0, 15.0),
        DataType::INT2 => (-2.0, 1.0),
        DataType::UINT2 => (0.0, 3.0),
        _ => return None,
    })
}

/// A per-axis scale or zero point `p` (1-D over `axis` of a rank-`r` tensor) cast to `dt` and
/// reshaped to broadcast; a scalar (or 1-element) one only cast. Blocked quantization is refused.
/// The cast comes first: a 4- or 2-bit zero point is moved only in `dt`.
fn per_axis(ctx: &mut NodeCtx<'_>, i: usize, axis: i64, r: usize, dt: DataType) -> Result<OutPort> {
    let p = ctx.input(i)?;
    let p = ctx.cast(p, dt)?;
    let d = ctx.rank_dims(i)?;
    if d.is_empty() || (d.len() == 1 && d[0] == 1) {
        return Ok(p);
    }
    if d.len() != 1 {
        return Err(Error::unsupported(format!(
            "{}: blocked quantization (a scale or zero point of rank {})",
            ctx.op_type(),
            d.len()
        )));
    }
    let a = norm_axis(axis, r, "quantization axis")?;
    let mut shape = vec![1i64; r];
    shape[a] = -1;
    let s = ctx.const_i64(&shape, &[r as i64])?;
    ctx.op1("Reshape", &[p, s], vec![])
}

fn quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "axis",
        "saturate",
        "block_size",
        "output_dtype",
        "precision",
    ])?;
    let block = ctx.attr_i("block_size", 0)?;
    if ctx.attr_i("precision", 0)? != 0 {
        return Err(Error::unsupported(
            "QuantizeLinear with a precision attribute",
        ));
    }
    let r = ctx.input_rank(0)?;
    let axis = ctx.attr_i("axis", 1)?;
    let out_attr = ctx.attr_i("output_dtype", 0)?;
    let out_dt = if out_attr != 0 {
        crate::types::dtype_from_onnx(out_attr as i32)
            .map_err(|e| e.context("attribute 'output_dtype'"))?
    } else if ctx.has_input(2) {
        ctx.input_desc(2)?.dtype
    } else {
        DataType::UINT8
    };
    // The float8 and float4 types: x / scale (+ zero point) cast with ONNX's rounding and
    // saturation; the integers: rounded, shifted, clipped to the type's range.
    let float_q = out_dt.is_low_precision() && qrange(out_dt).is_none();
    if !float_q && qrange(out_dt).is_none() || out_dt == DataType::FLOAT8_E8M0 {
        return Err(Error::unsupported(format!(
            "QuantizeLinear to {out_dt} (integers of 2 to 32 bits, float8 and float4 are \
             supported)"
        )));
    }
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    let cdt = if xdt == DataType::DOUBLE {
        DataType::DOUBLE
    } else {
        DataType::FLOAT
    };
    let xf = ctx.cast(x, cdt)?;
    let scale = per_block(ctx, 1, axis, r, block, cdt)?;
    let q = ctx.op1("RealDiv", &[xf, scale], vec![])?;
    if float_q {
        let mut q = q;
        if ctx.has_input(2) {
            let zp = per_block(ctx, 2, axis, r, block, cdt)?;
            q = ctx.op1("Add", &[q, zp], vec![])?;
        }
        let saturate = ctx.attr_i("saturate", 1)? != 0;
        return Ok(vec![Some(super::elementwise::cast_with(
            ctx, q, out_dt, saturate, "up",
        )?)]);
    }
    let (lo, hi) = qrange(out_dt).unwrap_or((0.0, 0.0));
    let mut q = ctx.op1("Round", &[q], vec![])?;
    if ctx.has_input(2) {
        let zp = per_block(ctx, 2, axis, r, block, cdt)?;
        q = ctx.op1("Add", &[q, zp], vec![])?;
    }
    let lo = ctx.const_of(cdt, &[lo], &[])?;
    let hi = ctx.const_of(cdt, &[hi], &[])?;
    let q = ctx.op1("ClipByValue", &[q, lo, hi], vec![])?;
    Ok(vec![Some(ctx.cast(q, out_dt)?)])
}

fn dequantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "block_size", "output_dtype"])?;
    let block = ctx.attr_i("block_size", 0)?;
    let r = ctx.input_rank(0)?;
    let axis = ctx.attr_i("axis", 1)?;
    let sdt = ctx.input_desc(1)?.dtype;
    let out_attr = ctx.attr_i("output_dtype", 0)?;
    let out_dt = if out_attr != 0 {
        crate::types::dtype_from_onnx(out_attr as i32)
            .map_err(|e| e.context("attribute 'output_dtype'"))?
    } else {
        sdt
    };
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    if !(qrange(xdt).is_some() || xdt.is_low_precision()) {
        return Err(Error::unsupported(format!(
            "DequantizeLinear of {xdt} (integers of 2 to 32 bits, float8 and float4 are \
             supported)"
        )));
    }
    let cdt = if sdt == DataType::DOUBLE {
        DataType::DOUBLE
    } else {
        DataType::FLOAT
    };
    let mut v = ctx.cast(x, cdt)?;
    if ctx.has_input(2) {
        let zp = per_block(ctx, 2, axis, r, block, cdt)?;
        v = ctx.op1("Sub", &[v, zp], vec![])?;
    }
    let scale = per_block(ctx, 1, axis, r, block, cdt)?;
    let y = ctx.op1("Mul", &[v, scale], vec![])?;
    Ok(vec![Some(ctx.cast(y, out_dt)?)])
}

fn dynamic_quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let r = ctx.input_rank(0)?;
    let x = ctx.input(0)?;
    let x = ctx.cast(x, DataType::FLOAT)?;
    let axes: Vec<i64> = (0..r as i64).collect();
    let axes = ctx.const_i64(&axes, &[r as i64])?;
    let zero = ctx.const_of(DataType::FLOAT, &[0.0], &[])?;
    let mx = ctx.op1("ReduceMax", &[x, axes], vec![])?;
    let mx = ctx.op1("Maximum", &[mx, zero], vec![])?;
    let mn = ctx.op1("ReduceMin", &[x, axes], vec![])?;
    let mn = ctx.op1("Minimum", &[mn, zero], vec![])?;
    let range = ctx.op1("Sub", &[mx, mn], vec![])?;
    let q = ctx.const_of(DataType::FLOAT, &[255.0], &[])?;
    let scale = ctx.op1("RealDiv", &[range, q], vec![])?;
    // zero point = saturate(round(0 - min / scale))
    let ms = ctx.op1("RealDiv", &[mn, scale], vec![])?;
    let zp = ctx.op1("Sub", &[zero, ms], vec![])?;
    let hi = ctx.const_of(DataType::FLOAT, &[255.0], &[])?;
    let zp = ctx.op1("ClipByValue", &[zp, zero, hi], vec![])?;
    let zp = ctx.op1("Round", &[zp], vec![])?;
    let y = ctx.op1("RealDiv", &[x, scale], vec![])?;
    let y = ctx.op1("Round", &[y], vec![])?;
    let y = ctx.op1("Add", &[y, zp], vec![])?;
    let y = ctx.op1("ClipByValue", &[y, zero, hi], vec![])?;
    let y = ctx.cast(y, DataType::UINT8)?;
    let zp = ctx.cast(zp, DataType::UINT8)?;
    Ok(vec![Some(y), Some(scale), Some(zp)])
}

/// `x` (input `xi`) dequantized to f32: (x - zero point) * scale, the scale and zero point
/// (inputs `si`, `zi`) per tensor or per `axis`.
fn dequant(ctx: &mut NodeCtx<'_>, xi: usize, si: usize, zi: usize, axis: i64) -> Result<OutPort> {
    let r = ctx.input_rank(xi)?;
    let x = ctx.input(xi)?;
    let mut v = ctx.cast(x, DataType::FLOAT)?;
    if ctx.has_input(zi) {
        let zp = per_axis(ctx, zi, axis, r, DataType::FLOAT)?;
        v = ctx.op1("Sub", &[v, zp], vec![])?;
    }
    let s = per_axis(ctx, si, axis, r, DataType::FLOAT)?;
    ctx.op1("Mul", &[v, s], vec![])
}

/// f32 `v` quantized with the scale and zero point of inputs `si`, `zi` (per tensor), to the
/// zero point's dtype.
fn requant(ctx: &mut NodeCtx<'_>, v: OutPort, si: usize, zi: usize) -> Result<OutPort> {
    let out_dt = if ctx.has_input(zi) {
        ctx.input_desc(zi)?.dtype
    } else {
        DataType::UINT8
    };
    let Some((lo, hi)) = qrange(out_dt) else {
        return Err(Error::unsupported(format!(
            "{} to {out_dt} (8-, 16- and 32-bit integers are supported)",
            ctx.op_type()
        )));
    };
    let s = ctx.input(si)?;
    let s = ctx.cast(s, DataType::FLOAT)?;
    let q = ctx.op1("RealDiv", &[v, s], vec![])?;
    let mut q = ctx.op1("Round", &[q], vec![])?;
    if ctx.has_input(zi) {
        let zp = ctx.input(zi)?;
        let zp = ctx.cast(zp, DataType::FLOAT)?;
        q = ctx.op1("Add", &[q, zp], vec![])?;
    }
    let lo = ctx.const_of(DataType::FLOAT, &[lo], &[])?;
    let hi = ctx.const_of(DataType::FLOAT, &[hi], &[])?;
    let q = ctx.op1("ClipByValue", &[q, lo, hi], vec![])?;
    ctx.cast(q, out_dt)
}

/// Integer operands less their zero points, in int32 (exact), then an int32 product.
fn matmul_integer(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
    let mut ops = Vec::new();
    for (i, zi) in [(0usize, 2usize), (1, 3)] {
        let x = ctx.input(i)?;
        let mut v = ctx.cast(x, DataType::INT32)?;
        if let Some(zp) = ctx.opt_input(zi)? {
            let zd = ctx.rank_dims(zi)?;
            let mut zp = ctx.cast(zp, DataType::INT32)?;
            if i == 0 && zd.len() == 1 && zd[0] != 1 {
                // a per-row zero point of A: [M] -> [M, 1]
                zp = ctx.unsqueeze(zp, &[1])?;
            }
            v = ctx.op1("Sub", &[v, zp], vec![])?;
        }
        ops.push(v);
    }
    Ok(vec![Some(matmul_ports(ctx, ops[0], ops[1], ra, rb)?)])
}

fn qlinear_matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(3)?);
    let a = dequant(ctx, 0, 1, 2, 1)?;
    let b = dequant(ctx, 3, 4, 5, 1)?;
    let y = matmul_ports(ctx, a, b, ra, rb)?;
    Ok(vec![Some(requant(ctx, y, 6, 7)?)])
}

/// Float convolution of the operands less their zero points, cast to int32. Exact while every
/// partial sum stays below 2^24 (f32's integer range).
fn conv_integer(ctx: &mut NodeCtx<'_>) -> Out {
    let (win, group) = conv_window(ctx, 1)?;
    let mut ops = Vec::new();
    for (i, zi) in [(0usize, 2usize), (1, 3)] {
        let r = ctx.input_rank(i)?;
        let x = ctx.input(i)?;
        let mut v = ctx.cast(x, DataType::FLOAT)?;
        if ctx.has_input(zi) {
            let zp = per_axis(ctx, zi, 0, r, DataType::FLOAT)?;
            v = ctx.op1("Sub", &[v, zp], vec![])?;
        }
        ops.push(v);
    }
    let y = conv_core(ctx, ops[0], ops[1], None, &win, group)?;
    Ok(vec![Some(ctx.cast(y, DataType::INT32)?)])
}

fn qlinear_conv(ctx: &mut NodeCtx<'_>) -> Out {
    let (win, group) = conv_window(ctx, 3)?;
    let x = dequant(ctx, 0, 1, 2, 1)?;
    let w = dequant(ctx, 3, 4, 5, 0)?;
    let y = conv_core(ctx, x, w, None, &win, group)?;
    let r = ctx.input_rank(0)?;
    let y = if let Some(b) = ctx.opt_input(8)? {
        // int32 bias in units of x_scale * w_scale (per output channel when w_scale is).
        let b = ctx.cast(b, DataType::FLOAT)?;
        let xs = ctx.input(1)?;
        let xs = ctx.cast(xs, DataType::FLOAT)?;
        let ws = ctx.input(4)?;
        let ws = ctx.cast(ws, DataType::FLOAT)?;
        let s = ctx.op1("Mul", &[xs, ws], vec![])?;
        let b = ctx.op1("Mul", &[b, s], vec![])?;
        let mut shape = vec![1i64, -1];
        shape.resize(r, 1);
        let sh = ctx.const_i64(&shape, &[r as i64])?;
        let b = ctx.op1("Reshape", &[b, sh], vec![])?;
        ctx.op1("Add", &[y, b], vec![])?
    } else {
        y
    };
    Ok(vec![Some(requant(ctx, y, 6, 7)?)])
}

/// A blocked scale or zero point (input `i`, the input's rank, dim `axis` holding one value
/// per block of `block` elements) cast to `dt` and repeated to the input's dims; others as
/// [`per_axis`].
fn per_block(
    ctx: &mut NodeCtx<'_>,
    i: usize,
    axis: i64,
    r: usize,
    block: i64,
    dt: DataType,
) -> Result<OutPort> {
    if block == 0 {
        return per_axis(ctx, i, axis, r, dt);
    }
    if block < 0 {
        return Err(Error::tr(format!("block_size must be >= 0, got {block}")));
    }
    let d = ctx.rank_dims(i)?;
    let xd = ctx.rank_dims(0)?;
    if d.len() != r {
        return Err(Error::tr(format!(
            "{}: a blocked scale or zero point must have the input's rank {r}, got {d:?}",
            ctx.op_type()
        )));
    }
    let a = norm_axis(axis, r, "quantization axis")?;
    if d.iter().any(|&v| v < 0) || xd[a] < 0 {
        return Err(Error::unsupported(format!(
            "{}: blocked quantization needs the dims of the scale {d:?} and of the input's \
             axis at import",
            ctx.op_type()
        )));
    }
    if d[a] * block < xd[a] {
        return Err(Error::tr(format!(
            "{}: {} blocks of {block} do not cover the input's dim {}",
            ctx.op_type(),
            d[a],
            xd[a]
        )));
    }
    let p = ctx.input(i)?;
    let p = ctx.cast(p, dt)?;
    let u = ctx.unsqueeze(p, &[a as i64 + 1])?;
    let mut mult = vec![1i64; r + 1];
    mult[a + 1] = block;
    let m = ctx.const_i64(&mult, &[r as i64 + 1])?;
    let t = ctx.op1("Tile", &[u, m], vec![])?;
    let mut shape = d.clone();
    shape[a] = d[a] * block;
    let s = ctx.const_i64(&shape, &[r as i64])?;
    let mut y = ctx.op1("Reshape", &[t, s], vec![])?;
    if shape[a] != xd[a] {
        let bounds = ctx.axis_slice_bounds(r, a, (0, xd[a], 1))?;
        y = ctx.strided_slice(y, bounds, axis_mask(r, a))?;
    }
    Ok(y)
}

// ---------------------------------------------------------------------------------------------
// LinearAttention (opset 26): the recurrence over the (static) sequence, unrolled in float32
// as onnx's reference computes it; q_num_heads / kv_num_heads query heads read each state.
// ---------------------------------------------------------------------------------------------

/// Longest sequence a recurrence is unrolled over (as for RNN/GRU/LSTM).
const MAX_STEPS: i64 = 4096;

fn float_like(ctx: &NodeCtx<'_>, dt: DataType) -> Result<()> {
    if matches!(dt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "{} on {dt} (float, float16 and bfloat16 are supported)",
        ctx.op_type()
    )))
}

fn need_rank(ctx: &NodeCtx<'_>, p: OutPort, r: usize, what: &str) -> Result<()> {
    match ctx.desc(p)?.shape.rank() {
        Some(n) if n == r => Ok(()),
        Some(n) => Err(Error::tr(format!(
            "{}: {what} must be {r}-D, not {n}-D",
            ctx.op_type()
        ))),
        None => Err(Error::unsupported(format!(
            "{}: the rank of {what} must be known at import",
            ctx.op_type()
        ))),
    }
}

fn need_dim(ctx: &NodeCtx<'_>, p: OutPort, axis: usize, what: &str) -> Result<i64> {
    ctx.static_dim(p, axis)?.ok_or_else(|| {
        Error::unsupported(format!(
            "{}: {what} must be static at import",
            ctx.op_type()
        ))
    })
}

/// LinearAttention's input `i` (decay or beta): required when the update rule uses it,
/// refused otherwise.
fn rule_input(
    ctx: &mut NodeCtx<'_>,
    i: usize,
    used: bool,
    rule: &str,
    what: &str,
) -> Result<Option<OutPort>> {
    match (used, ctx.opt_input(i)?) {
        (true, None) => Err(Error::tr(format!(
            "LinearAttention: update_rule '{rule}' needs the {what} input"
        ))),
        (false, Some(_)) => Err(Error::tr(format!(
            "LinearAttention: update_rule '{rule}' takes no {what} input"
        ))),
        (_, p) => Ok(p),
    }
}

fn linear_attention(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "chunk_size",
        "kv_num_heads",
        "q_num_heads",
        "scale",
        "update_rule",
    ])?;
    let (q, k, v) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let dt = ctx.desc(q)?.dtype;
    float_like(ctx, dt)?;
    let rule = ctx.attr_s("update_rule", "gated_delta")?;
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        _ => {
            return Err(Error::tr(format!(
            "LinearAttention: update_rule '{rule}' is not one of linear, gated, delta, gated_delta"
        )))
        }
    };
    let (qh, kvh) = (
        ctx.attr_i("q_num_heads", 0)?,
        ctx.attr_i("kv_num_heads", 0)?,
    );
    if qh <= 0 || kvh <= 0 || qh % kvh != 0 {
        return Err(Error::tr(format!(
            "LinearAttention: q_num_heads ({qh}) must be a positive multiple of kv_num_heads ({kvh})"
        )));
    }
    for (p, what) in [(q, "query"), (k, "key"), (v, "value")] {
        need_rank(ctx, p, 3, what)?;
    }
    let t = need_dim(
        ctx,
        q,
        1,
        "the sequence length (the recurrence is unrolled)",
    )?;
    if !(1..=MAX_STEPS).contains(&t) {
        return Err(Error::unsupported(format!(
            "LinearAttention: a sequence of {t} steps (1 to {MAX_STEPS} are unrolled)"
        )));
    }
    let qhid = need_dim(ctx, q, 2, "the hidden size of query")?;
    let khid = need_dim(ctx, k, 2, "the hidden size of key")?;
    let vhid = need_dim(ctx, v, 2, "the hidden size of value")?;
    if qhid % qh != 0 || vhid % kvh != 0 || khid != kvh * (qhid / qh) {
        return Err(Error::tr(format!(
            "LinearAttention: hidden sizes {qhid}/{khid}/{vhid} do not fit {qh} query and {kvh} key/value heads"
        )));
    }
    let (dk, dv, g) = (qhid / qh, vhid / kvh, qh / kvh);
    let f32 = DataType::FLOAT;
    // (B, T, h*d) -> (B, h, T, d) in float32.
    let to4 = |ctx: &mut NodeCtx<'_>, x: OutPort, h: i64, d: i64| -> Result<OutPort> {
        let s = ctx.shape_from(&[Dim::Of(x, 0), Dim::Is(t), Dim::Is(h), Dim::Is(d)])?;
        let y = ctx.op1("Reshape", &[x, s], vec![])?;
        let y = ctx.transpose(y, &[0, 2, 1, 3])?;
        ctx.cast(y, f32)
    };
    // Query as (B, kvh, T*g, dk): step t reads rows t*g..(t+1)*g, the g heads of a state.
    let qg = {
        let s = ctx.shape_from(&[Dim::Of(q, 0), Dim::Is(t), Dim::Is(kvh), Dim::Is(g * dk)])?;
        let y = ctx.op1("Reshape", &[q, s], vec![])?;
        let y = ctx.transpose(y, &[0, 2, 1, 3])?;
        let s = ctx.shape_from(&[Dim::Of(q, 0), Dim::Is(kvh), Dim::Is(t * g), Dim::Is(dk)])?;
        let y = ctx.op1("Reshape", &[y, s], vec![])?;
        ctx.cast(y, f32)?
    };
    let k4 = to4(ctx, k, kvh, dk)?;
    let v4 = to4(ctx, v, kvh, dv)?;
    let n = t as usize;
    let qs = ctx.split_n(qg, 2, n)?;
    let ks = ctx.split_n(k4, 2, n)?;
    let vs = ctx.split_n(v4, 2, n)?;
    // Decay exp(g_t) as (B, kvh, 1 or dk, 1) per step.
    let decays = match rule_input(ctx, 4, gating, &rule, "decay")? {
        Some(d) => {
            need_rank(ctx, d, 3, "decay")?;
            let last = need_dim(ctx, d, 2, "the last dim of decay")?;
            let per = if last == kvh {
                1
            } else if last == kvh * dk {
                dk
            } else {
                return Err(Error::tr(format!(
                    "LinearAttention: decay's last dim {last} must be kv_num_heads ({kvh}) or kv_num_heads*d_k ({})",
                    kvh * dk
                )));
            };
            let d4 = to4(ctx, d, kvh, per)?;
            let e = ctx.un("Exp", d4)?;
            let e = ctx.transpose(e, &[0, 1, 3, 2])?;
            ctx.split_n(e, 3, n)?
        }
        None => vec![],
    };
    // Beta as (B, kvh or 1, 1, 1) per step.
    let betas = match rule_input(ctx, 5, delta, &rule, "beta")? {
        Some(b) => {
            need_rank(ctx, b, 3, "beta")?;
            let last = need_dim(ctx, b, 2, "the last dim of beta")?;
            if last != kvh && last != 1 {
                return Err(Error::tr(format!(
                    "LinearAttention: beta's last dim {last} must be kv_num_heads ({kvh}) or 1"
                )));
            }
            let b4 = to4(ctx, b, last, 1)?;
            ctx.split_n(b4, 2, n)?
        }
        None => vec![],
    };
    // The state (B, kvh, dk, dv); None stands for zeros.
    let (mut state, state_dt) = match ctx.opt_input(3)? {
        Some(p) => {
            need_rank(ctx, p, 4, "past_state")?;
            for (axis, want) in [(1, kvh), (2, dk), (3, dv)] {
                if let Some(got) = ctx.static_dim(p, axis)? {
                    if got != want {
                        return Err(Error::tr(format!(
                            "LinearAttention: past_state dim {axis} is {got}, expected {want}"
                        )));
                    }
                }
            }
            let sdt = ctx.desc(p)?.dtype;
            float_like(ctx, sdt)?;
            (Some(ctx.cast(p, f32)?), sdt)
        }
        None => (None, dt),
    };
    let bmm = |ctx: &mut NodeCtx<'_>, a: OutPort, b: OutPort, adj1: bool| {
        ctx.op1(
            "BatchMatMulV2",
            &[a, b],
            vec![("adj_x1", AttrValue::Bool(adj1))],
        )
    };
    let mut outs = Vec::with_capacity(n);
    for i in 0..n {
        if let (Some(s), Some(&e)) = (state, decays.get(i)) {
            state = Some(ctx.bin("Mul", s, e)?);
        }
        let mut vt = vs[i];
        if delta {
            if let Some(s) = state {
                let r = bmm(ctx, ks[i], s, false)?;
                vt = ctx.bin("Sub", vt, r)?;
            }
            vt = ctx.bin("Mul", betas[i], vt)?;
        }
        let upd = bmm(ctx, ks[i], vt, true)?;
        let s = match state {
            Some(s) => ctx.bin("Add", s, upd)?,
            None => upd,
        };
        state = Some(s);
        outs.push(bmm(ctx, qs[i], s, false)?);
    }
    let state = state.ok_or_else(|| Error::tr("internal: LinearAttention without steps"))?;
    // (B, kvh, T*g, dv) -> (B, T, qh*dv), scaled.
    let o = ctx.concat(&outs, 2)?;
    let s = ctx.shape_from(&[Dim::Of(q, 0), Dim::Is(kvh), Dim::Is(t), Dim::Is(g * dv)])?;
    let o = ctx.op1("Reshape", &[o, s], vec![])?;
    let o = ctx.transpose(o, &[0, 2, 1, 3])?;
    let s = ctx.shape_from(&[Dim::Of(q, 0), Dim::Is(t), Dim::Is(qh * dv)])?;
    let o = ctx.op1("Reshape", &[o, s], vec![])?;
    let scale = match ctx.attr_f("scale", 0.0)? {
        0.0 => 1.0 / (dk as f64).sqrt(),
        x => x as f64,
    };
    let sc = ctx.scalar(f32, scale)?;
    let o = ctx.bin("Mul", o, sc)?;
    Ok(vec![
        Some(ctx.cast(o, dt)?),
        Some(ctx.cast(state, state_dt)?),
    ])
}

// ---------------------------------------------------------------------------------------------
// CausalConvWithState (opset 26): the past state (or zeros) before the input, a depthwise
// Conv2D without padding, optional SiLU in float32; the present state is the last k-1 steps.
// ---------------------------------------------------------------------------------------------

fn causal_conv_with_state(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["activation"])?;
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.desc(x)?.dtype;
    float_like(ctx, dt)?;
    need_rank(ctx, x, 3, "input")?;
    need_rank(ctx, w, 3, "weight")?;
    let c = need_dim(ctx, x, 1, "the channel count")?;
    let k = need_dim(ctx, w, 2, "the kernel size")?;
    if !(1..=MAX_WINDOW).contains(&k) {
        return Err(Error::tr(format!(
            "CausalConvWithState: kernel size {k} is out of range"
        )));
    }
    for (axis, want) in [(0, c), (1, 1)] {
        if ctx.static_dim(w, axis)?.is_some_and(|got| got != want) {
            return Err(Error::tr(format!(
                "CausalConvWithState: weight must be ({c}, 1, {k})"
            )));
        }
    }
    let act = ctx.attr_s("activation", "none")?;
    if !matches!(act.as_str(), "none" | "silu" | "swish") {
        return Err(Error::tr(format!(
            "CausalConvWithState: activation '{act}' is not one of none, silu, swish"
        )));
    }
    let bias = ctx.opt_input(2)?;
    let padded = match ctx.opt_input(3)? {
        Some(p) => {
            need_rank(ctx, p, 3, "past_state")?;
            if ctx.static_dim(p, 2)?.is_some_and(|l| l != k - 1) {
                return Err(Error::tr(format!(
                    "CausalConvWithState: past_state must hold k-1 = {} steps",
                    k - 1
                )));
            }
            ctx.concat(&[p, x], 2)?
        }
        None if k == 1 => x,
        None => {
            let pads = ctx.const_i64(&[0, 0, 0, 0, k - 1, 0], &[3, 2])?;
            ctx.op1("Pad", &[x, pads], vec![])?
        }
    };
    let win = Window {
        k: vec![k],
        s: vec![1],
        d: vec![1],
        p0: vec![0],
        p1: vec![0],
    };
    let mut y = conv_core(ctx, padded, w, bias, &win, c)?;
    if act != "none" {
        let f = ctx.cast(y, DataType::FLOAT)?;
        let f = ctx.op1("Swish", &[f], vec![("scale", AttrValue::Float(1.0))])?;
        y = ctx.cast(f, dt)?;
    }
    // The last k-1 steps of the padded input (none when k is 1).
    let start = if k == 1 { i64::MAX } else { -(k - 1) };
    let bounds = ctx.axis_slice_bounds(3, 2, (start, i64::MAX, 1))?;
    let present = ctx.strided_slice(padded, bounds, axis_mask(3, 2))?;
    Ok(vec![Some(y), Some(present)])
}

// ---------------------------------------------------------------------------------------------
// ai.onnx.preview::FlexAttention: sqrt(scale) on Q and K, GQA by repeated K/V heads, scores
// in the softmax precision through score_mod, SoftmaxV2, prob_mod, * V. A modifier subgraph
// runs as the branch of an If on a constant true.
// ---------------------------------------------------------------------------------------------

fn flex_attention(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["prob_mod", "scale", "score_mod", "softmax_precision"])?;
    let (q, k, v) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let dt = ctx.desc(q)?.dtype;
    if !matches!(
        dt,
        DataType::FLOAT | DataType::FLOAT16 | DataType::BF16 | DataType::DOUBLE
    ) {
        return Err(Error::unsupported(format!(
            "FlexAttention on {dt} (float, float16, bfloat16 and double are supported)"
        )));
    }
    for (p, what) in [(q, "Q"), (k, "K"), (v, "V")] {
        need_rank(ctx, p, 4, what)?;
    }
    let qh = need_dim(ctx, q, 1, "the number of heads of Q")?;
    let kvh = need_dim(ctx, k, 1, "the number of heads of K")?;
    let e = need_dim(ctx, q, 3, "the head size of Q")?;
    let ev = need_dim(ctx, v, 3, "the head size of V")?;
    if kvh <= 0 || qh % kvh != 0 {
        return Err(Error::tr(format!(
            "FlexAttention: {qh} query heads are not a multiple of {kvh} key/value heads"
        )));
    }
    let scale = if ctx.has_attr("scale") {
        ctx.attr_f("scale", 1.0)? as f64
    } else {
        1.0 / (e as f64).sqrt()
    };
    let sc = ctx.scalar(dt, (scale as f32).sqrt() as f64)?;
    let qs = ctx.bin("Mul", q, sc)?;
    let mut ks = ctx.bin("Mul", k, sc)?;
    let mut vr = v;
    if qh != kvh {
        ks = repeat_heads(ctx, ks, qh / kvh, qh, e)?;
        vr = repeat_heads(ctx, vr, qh / kvh, qh, ev)?;
    }
    let scores = matmul4(ctx, qs, ks, true)?;
    // The reference's softmax dtype: softmax_precision, else float32 for the 16-bit types and
    // the input's for float and double.
    let cdt = if ctx.has_attr("softmax_precision") {
        crate::types::dtype_from_onnx(ctx.attr_i("softmax_precision", 1)? as i32)?
    } else if dt == DataType::DOUBLE {
        dt
    } else {
        DataType::FLOAT
    };
    let scores = ctx.cast(scores, cdt)?;
    let scores = modifier(ctx, "score_mod", scores)?;
    let p = ctx.op1("SoftmaxV2", &[scores], vec![("axes", li(&[-1]))])?;
    let p = modifier(ctx, "prob_mod", p)?;
    let vf = ctx.cast(vr, cdt)?;
    let y = matmul4(ctx, p, vf, false)?;
    one(ctx.cast(y, dt)?)
}

/// The product of 4-D `a` [B, H, M, K] and `b` ([B, H, N, K] with `adj_b`, else [B, H, K, N]):
/// BatchMatMulV2, or for double (which GE's BatchMatMulV2 lacks) Mul and ReduceSum over K.
fn matmul4(ctx: &mut NodeCtx<'_>, a: OutPort, b: OutPort, adj_b: bool) -> Result<OutPort> {
    if ctx.desc(a)?.dtype != DataType::DOUBLE {
        return ctx.op1(
            "BatchMatMulV2",
            &[a, b],
            vec![("adj_x2", AttrValue::Bool(adj_b))],
        );
    }
    // adj_b: [B,H,M,1,K] * [B,H,1,N,K], summed over 4; else [B,H,M,K,1] * [B,H,1,K,N] over 3.
    let (ua, axis) = if adj_b { (3, 4) } else { (4, 3) };
    let a = ctx.unsqueeze(a, &[ua])?;
    let b = ctx.unsqueeze(b, &[2])?;
    let prod = ctx.bin("Mul", a, b)?;
    let axes = ctx.const_i64(&[axis], &[1])?;
    ctx.op1("ReduceSum", &[prod, axes], vec![])
}

/// `x` through the one-input, one-output graph attribute `attr` (when the node has it).
fn modifier(ctx: &mut NodeCtx<'_>, attr: &str, x: OutPort) -> Result<OutPort> {
    let Some(g) = ctx.attr_graph(attr)? else {
        return Ok(x);
    };
    if g.input.len() != 1 || g.output.len() != 1 {
        return Err(Error::tr(format!(
            "{}: {attr} must have one input and one output, not {} and {}",
            ctx.op_type(),
            g.input.len(),
            g.output.len()
        )));
    }
    let d = ctx.desc(x)?;
    let mut subs = vec![
        ctx.subgraph(g, std::slice::from_ref(&d))?,
        ctx.subgraph(g, std::slice::from_ref(&d))?,
    ];
    let caps = unify_captures(&mut subs)?;
    let cond = ctx.constant(es_core::Tensor::from_values(&[true], vec![])?)?;
    let mut inputs = vec![Some(x)];
    inputs.extend(caps.into_iter().map(Some));
    let mut graphs = subs.into_iter().map(|s| vec![s.graph]);
    let (Some(t), Some(e)) = (graphs.next(), graphs.next()) else {
        return Err(Error::tr("internal: two branches"));
    };
    let name = ctx.fresh_name("If");
    let outs = ctx.add(
        "If",
        OpArgs {
            inputs: vec![vec![Some(cond)], inputs],
            attrs: Default::default(),
            subgraphs: vec![t, e],
            output_counts: [("output".to_string(), 1)].into_iter().collect(),
            name: Some(name),
        },
    )?;
    first(outs, "If")
}
