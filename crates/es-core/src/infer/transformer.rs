//! Inference rules of the transformer operators: DynamicQuant, MoeGatingTopKSoftmax,
//! PromptFlashAttention, IncreFlashAttention, FusedInferAttentionScore and
//! GroupedMatmulFinalizeRouting.
//!
//! The shape rules are those of the operators' infer functions in CANN (ops-nn
//! `dynamic_quant_infershape.cpp`; ops-transformer `moe_gating_top_k_softmax_infershape.cpp`,
//! `prompt_flash_attention_infershape.cpp`, `fused_infer_attention_score_infershape.cpp`,
//! `grouped_matmul_finalize_routing_infershape.cpp`).

use super::common::{
    attr_dtype, check_param_shape, dtype_like, merge_dim, opt_bool, opt_int, opt_str, single,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "DynamicQuant" => dynamic_quant,
        "MoeGatingTopKSoftmax" => moe_gating_top_k_softmax,
        "PromptFlashAttention" => prompt_flash_attention,
        "IncreFlashAttention" => incre_flash_attention,
        "FusedInferAttentionScore" => fused_infer_attention_score,
        "GroupedMatmulFinalizeRouting" => grouped_matmul_finalize_routing,
        _ => return None,
    })
}

/// The dtypes DynamicQuant's dst_type may name (ops-nn's infer function).
pub const QUANT_DTYPES: &[DataType] = &[
    DataType::INT8,
    DataType::INT4,
    DataType::HIFLOAT8,
    DataType::FLOAT8_E5M2,
    DataType::FLOAT8_E4M3FN,
];

/// DynamicQuant: y like x in dst_type; scale (float32) has x's dims but the last.
fn dynamic_quant(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dst = attr_dtype(ctx, "dst_type", Some(DataType::INT8))?;
    if !QUANT_DTYPES.contains(&dst) {
        let names: Vec<String> = QUANT_DTYPES.iter().map(|d| d.to_string()).collect();
        return Err(ctx.err(format!(
            "attribute 'dst_type' is {dst}; expected one of {}",
            names.join(", ")
        )));
    }
    let smooth = ctx.input("smooth_scales")?;
    let group = ctx.input("group_index")?;
    if let Some(s) = smooth {
        if s.dtype != x.dtype {
            return Err(ctx.err(format!(
                "input 'smooth_scales' is {}, but x is {}; they must have one dtype",
                s.dtype, x.dtype
            )));
        }
    }
    if group.is_some() && smooth.is_none() {
        return Err(ctx.err("input 'group_index' needs input 'smooth_scales'"));
    }
    let scale = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(0) => {
            return Err(ctx.err(format!("input 'x' {} must have at least one dim", x.shape)));
        }
        Some(r) => {
            let h = x.shape.0[r - 1];
            match (smooth, group) {
                (Some(_), None) => {
                    check_param_shape(ctx, "smooth_scales", &[h], "[last dim of x]")?
                }
                (Some(_), Some(g)) => {
                    let e = match g.shape.rank() {
                        Some(1) => g.shape.0[0],
                        Some(_) => {
                            return Err(
                                ctx.err(format!("input 'group_index' {} must be 1-D", g.shape))
                            )
                        }
                        None => UNKNOWN_DIM,
                    };
                    check_param_shape(ctx, "smooth_scales", &[e, h], "[groups, last dim of x]")?;
                }
                _ => {}
            }
            Shape::from(x.shape.0[..r - 1].to_vec())
        }
    };
    Ok(vec![
        TensorDesc::new(dst, x.shape.clone()),
        TensorDesc::new(DataType::FLOAT, scale),
    ])
}

/// The largest k MoeGatingTopKSoftmax takes (ops-transformer's infer function).
pub const MOE_MAX_K: i64 = 1024;

/// MoeGatingTopKSoftmax: x of rank 2 or 3; y (x's dtype), expert_idx and row_idx (int32) have
/// x's dims with k last.
fn moe_gating_top_k_softmax(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let k = ctx.attr_int("k")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        if !(1..=MOE_MAX_K).contains(&k) {
            return Err(ctx.err(format!(
                "attribute 'k' is {k}; it must be in [1, {MOE_MAX_K}]"
            )));
        }
        let u = Shape::unknown_rank();
        return Ok(vec![
            TensorDesc::new(dt, u.clone()),
            TensorDesc::new(DataType::INT32, u.clone()),
            TensorDesc::new(DataType::INT32, u),
        ]);
    };
    if r != 2 && r != 3 {
        return Err(ctx.err(format!("input 'x' {} must be 2-D or 3-D", x.shape)));
    }
    let e = x.shape.0[r - 1];
    let top = if e == UNKNOWN_DIM {
        MOE_MAX_K
    } else {
        e.min(MOE_MAX_K)
    };
    if k < 1 || k > top {
        return Err(ctx.err(format!(
            "attribute 'k' is {k}; it must be in [1, {top}] (x {}, at most {MOE_MAX_K})",
            x.shape
        )));
    }
    let lead = &x.shape.0[..r - 1];
    check_param_shape(ctx, "finished", lead, "the dims of x but the last")?;
    let mut dims = x.shape.0.to_vec();
    dims[r - 1] = k;
    let s = Shape::from(dims);
    Ok(vec![
        TensorDesc::new(dt, s.clone()),
        TensorDesc::new(DataType::INT32, s.clone()),
        TensorDesc::new(DataType::INT32, s),
    ])
}

/// The layouts PromptFlashAttention's shape rule knows, with the rank of query in each: the
/// first seven of FusedInferAttentionScore's.
const PFA_LAYOUTS: &[(&str, usize)] = FIA_LAYOUTS.split_at(7).0;

/// What PromptFlashAttention, IncreFlashAttention and FusedInferAttentionScore check alike.
struct Heads<'a> {
    n: i64,
    kvn: i64,
    layout: &'a str,
    /// The rank of query in `layout`.
    want: usize,
    /// attention_out's dtype: int8 with quant_scale2, else query's (float16 for int8).
    dt: DataType,
}

/// num_heads (at least 1), num_key_value_heads (0: num_heads; must divide it), input_layout
/// (one of `layouts`) and the output dtype.
fn heads<'a>(ctx: &InferCtx<'a>, layouts: &[(&str, usize)], kvn_default: i64) -> Result<Heads<'a>> {
    let q = ctx.req("query")?;
    let n = ctx.attr_int("num_heads")?;
    if n < 1 {
        return Err(ctx.err(format!(
            "attribute 'num_heads' is {n}; it must be at least 1"
        )));
    }
    let kvn = match opt_int(ctx, "num_key_value_heads", kvn_default)? {
        0 => n,
        k => k,
    };
    if kvn < 1 || n % kvn != 0 {
        return Err(ctx.err(format!(
            "attribute 'num_key_value_heads' {kvn} must be a positive divisor of num_heads {n}"
        )));
    }
    let layout = opt_str(ctx, "input_layout", "BSH")?;
    let Some(&(_, want)) = layouts.iter().find(|(l, _)| *l == layout) else {
        let names: Vec<&str> = layouts.iter().map(|(l, _)| *l).collect();
        return Err(ctx.err(format!(
            "attribute 'input_layout' is {layout:?}; expected one of {}",
            names.join(", ")
        )));
    };
    let dt = if ctx.input("quant_scale2")?.is_some() {
        DataType::INT8
    } else if q.dtype == DataType::INT8 {
        DataType::FLOAT16
    } else {
        q.dtype
    };
    Ok(Heads {
        n,
        kvn,
        layout,
        want,
        dt,
    })
}

/// PromptFlashAttention (ops-transformer's infer function): attention_out has query's shape,
/// with value's head size (BSH: value's hidden size / num_key_value_heads * num_heads;
/// BNSD_BSND transposes to BSND); int8 when quant_scale2 is given, else query's dtype
/// (float16 for an int8 query).
fn prompt_flash_attention(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let q = ctx.req("query")?;
    let v = ctx.req("value")?;
    let Heads {
        n,
        kvn,
        layout,
        want,
        dt,
    } = heads(ctx, PFA_LAYOUTS, 0)?;
    let Some(r) = q.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r != want {
        return Err(ctx.err(format!(
            "input 'query' {} must be {want}-D for input_layout {layout}",
            q.shape
        )));
    }
    let mut d = q.shape.0.to_vec();
    let v_last = match v.shape.rank() {
        Some(vr) if vr == want => v.shape.0[vr - 1],
        _ => UNKNOWN_DIM,
    };
    if v_last != UNKNOWN_DIM && v_last != 0 && d[r - 1] != 0 {
        d[r - 1] = match layout {
            "BSH" => v_last / kvn * n,
            "SH" | "NSD" => d[r - 1],
            _ => v_last,
        };
    }
    if layout == "BNSD_BSND" {
        d.swap(1, 2);
    }
    Ok(single(dt, Shape::from(d)))
}

/// GroupedMatmulFinalizeRouting (ops-transformer's infer function, less the NPU's size
/// limits): x [m, k], w [e, k, n], scale [e, n] (or [e, 1, n], int4 weights), y float32
/// [output_bs, n] with 0 <= output_bs <= m; shared_input [bs, n] must fit at
/// shared_input_offset.
fn grouped_matmul_finalize_routing(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let w = ctx.req("w")?;
    let scale = ctx
        .input("scale")?
        .ok_or_else(|| ctx.err("input 'scale' is not given"))?;
    let bs = opt_int(ctx, "output_bs", 0)?;
    let off = opt_int(ctx, "shared_input_offset", 0)?;
    let (m, k) = match x.shape.rank() {
        Some(2) => (x.shape.0[0], x.shape.0[1]),
        Some(_) => return Err(ctx.err(format!("input 'x' {} must be 2-D [m, k]", x.shape))),
        None => (UNKNOWN_DIM, UNKNOWN_DIM),
    };
    let (e, n) = match w.shape.rank() {
        Some(3) => {
            if merge_dim(w.shape.0[1], k).is_none() {
                return Err(ctx.err(format!(
                    "input 'w' {} must be [e, k, n] with k {k} of x {}",
                    w.shape, x.shape
                )));
            }
            (w.shape.0[0], w.shape.0[2])
        }
        Some(_) => return Err(ctx.err(format!("input 'w' {} must be 3-D [e, k, n]", w.shape))),
        None => (UNKNOWN_DIM, UNKNOWN_DIM),
    };
    if let Some(r) = scale.shape.rank() {
        let want: &[i64] = if r == 3 { &[e, 1, n] } else { &[e, n] };
        check_param_shape(ctx, "scale", want, "[e, n] of w")?;
    }
    if bs < 0 || (m != UNKNOWN_DIM && bs > m) {
        return Err(ctx.err(format!(
            "attribute 'output_bs' is {bs}; it must be in [0, m] (x {})",
            x.shape
        )));
    }
    if let Some(sh) = ctx.input("shared_input")? {
        if let Some(r) = sh.shape.rank() {
            let sb = if r == 2 { sh.shape.0[0] } else { UNKNOWN_DIM };
            check_param_shape(ctx, "shared_input", &[sb, n], "[bs, n]")?;
            if sb != UNKNOWN_DIM && sb + off > bs {
                return Err(ctx.err(format!(
                    "input 'shared_input' {} at shared_input_offset {off} does not fit \
                     output_bs {bs}",
                    sh.shape
                )));
            }
        }
    }
    Ok(single(DataType::FLOAT, Shape::from(vec![bs, n])))
}

/// IncreFlashAttention: attention_out has query's shape (layouts BSH, BNSD, BSND); int8 when
/// quant_scale2 is given, else query's dtype (float16 for an int8 query). key and value are
/// lists of one length.
fn incre_flash_attention(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let q = ctx.req("query")?;
    first_value(ctx)?;
    let Heads {
        layout, want, dt, ..
    } = heads(ctx, &[("BSH", 3), ("BNSD", 4), ("BSND", 4)], 1)?;
    if let Some(r) = q.shape.rank() {
        if r != want {
            return Err(ctx.err(format!(
                "input 'query' {} must be {want}-D for input_layout {layout}",
                q.shape
            )));
        }
    }
    Ok(single(dt, q.shape.clone()))
}

/// The key and value lists of IncreFlashAttention and FusedInferAttentionScore: of one, non-zero
/// length; returns the first value (the one GE's shape rules read).
fn first_value<'a>(ctx: &InferCtx<'a>) -> Result<&'a TensorDesc> {
    let (keys, values) = (ctx.inputs_of("key")?, ctx.inputs_of("value")?);
    match values.first() {
        Some(v) if keys.len() == values.len() => Ok(v),
        _ => Err(ctx.err(format!(
            "inputs 'key' ({}) and 'value' ({}) must be lists of one, non-zero length",
            keys.len(),
            values.len()
        ))),
    }
}

/// The layouts FusedInferAttentionScore's shape rule knows, with the rank of query in each.
const FIA_LAYOUTS: &[(&str, usize)] = &[
    ("BSH", 3),
    ("BNSD", 4),
    ("BSND", 4),
    ("BNSD_BSND", 4),
    ("SH", 2),
    ("NSD", 3),
    ("TND", 3),
    ("BNSD_NBSD", 4),
    ("BSND_NBSD", 4),
    ("BSH_NBSD", 3),
    ("TND_NTD", 3),
    ("NTD_TND", 3),
];

/// The head size of attention_out as FusedInferAttentionScore's shape rule reads it from value
/// (BSH: the hidden size of num_heads heads): value of query's rank, or with page attention
/// (block_table) [blocks, block_size, H] (per head: H / num_key_value_heads), [blocks, N,
/// block_size, D] or the NZ form [blocks, N, D / 16, block_size, 16].
fn fia_value_d(ctx: &InferCtx, h: &Heads, v: &Shape, paged: bool) -> Result<i64> {
    let vd = &v.0;
    let ranks: &[usize] = match (paged, h.layout) {
        (false, _) => &[h.want],
        (true, "BSH" | "BSND") => &[3, 5],
        (true, "BNSD_BSND") => &[3, 4],
        (true, _) => &[3, 4, 5],
    };
    if !ranks.contains(&vd.len()) {
        let want: Vec<String> = ranks.iter().map(|r| format!("{r}-D")).collect();
        let paged = if paged { " with block_table" } else { "" };
        return Err(ctx.err(format!(
            "input 'value' {v} must be {} for input_layout {}{paged}",
            want.join(" or "),
            h.layout
        )));
    }
    let known = |ds: &[i64]| ds.iter().all(|&x| x != UNKNOWN_DIM);
    let per_head = match vd.len() {
        3 if paged || h.layout == "BSH" => {
            if known(&vd[2..3]) {
                vd[2] / h.kvn
            } else {
                UNKNOWN_DIM
            }
        }
        3 => vd[2],
        4 => vd[3],
        _ => {
            if known(&[vd[2], vd[4]]) {
                vd[2] * vd[4]
            } else {
                UNKNOWN_DIM
            }
        }
    };
    Ok(match h.layout {
        "BSH" if per_head != UNKNOWN_DIM => per_head * h.n,
        _ => per_head,
    })
}

/// FusedInferAttentionScore (ops-transformer's infer function): attention_out has query's shape
/// with value's head size, permuted as the layout's output part says (BNSD_BSND: BSND,
/// ..._NBSD: NBSD, TND_NTD: NTD, NTD_TND: TND; BSH_NBSD splits H into num_heads heads);
/// softmax_lse is float32 [B, N, S, 1] ([T, N, 1] for TND-like layouts) with
/// softmax_lse_flag, else [0]. attention_out is int8 with quant_scale2, else query's dtype (for
/// an int8 query: query_rope's, float16 without one).
fn fused_infer_attention_score(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let q = ctx.req("query")?;
    let v = first_value(ctx)?;
    let mut h = heads(ctx, FIA_LAYOUTS, 0)?;
    if q.dtype == DataType::INT8 && ctx.input("quant_scale2")?.is_none() {
        if let Some(rope) = ctx.input("query_rope")? {
            h.dt = rope.dtype;
        }
    }
    let flag = opt_bool(ctx, "softmax_lse_flag", false)?;
    let (Some(r), Some(_)) = (q.shape.rank(), v.shape.rank()) else {
        let u = || TensorDesc::new(DataType::FLOAT, Shape::unknown_rank());
        return Ok(vec![TensorDesc::new(h.dt, Shape::unknown_rank()), u()]);
    };
    let layout = h.layout;
    if r != h.want {
        return Err(ctx.err(format!(
            "input 'query' {} must be {}-D for input_layout {layout}",
            q.shape, h.want
        )));
    }
    let paged = ctx.input("block_table")?.is_some();
    let qd = &q.shape.0;
    // value's head size, where the layout reads it; 0 (in value or query) keeps query's.
    let d = match layout {
        // GE reads nothing from a value whose hidden size is unknown.
        "BSH" if v.shape.0.get(2) == Some(&UNKNOWN_DIM) => qd[2],
        "BSH" | "BSND" | "BNSD" | "BNSD_BSND" => match fia_value_d(ctx, &h, &v.shape, paged)? {
            0 => qd[r - 1],
            _ if qd[r - 1] == 0 => 0,
            x => x,
        },
        "TND" | "NTD_TND" => fia_value_d(ctx, &h, &v.shape, paged)?,
        _ => qd[r - 1],
    };
    let n = h.n;
    let out: Vec<i64> = match layout {
        "SH" | "NSD" => qd.to_vec(),
        "BSH" | "TND" => vec![qd[0], qd[1], d],
        "BSND" | "BNSD" => vec![qd[0], qd[1], qd[2], d],
        "BNSD_BSND" => vec![qd[0], qd[2], qd[1], d],
        "BNSD_NBSD" => vec![qd[1], qd[0], qd[2], qd[3]],
        "BSND_NBSD" => vec![qd[2], qd[0], qd[1], qd[3]],
        "BSH_NBSD" => {
            let hd = if qd[2] == UNKNOWN_DIM {
                UNKNOWN_DIM
            } else {
                qd[2] / n
            };
            vec![n, qd[0], qd[1], hd]
        }
        "TND_NTD" => vec![qd[1], qd[0], qd[2]],
        _ => vec![qd[1], qd[0], d], // NTD_TND
    };
    let lse: Vec<i64> = if !flag {
        vec![0]
    } else {
        match layout {
            "TND" | "TND_NTD" => vec![qd[0], if paged { n } else { qd[1] }, 1],
            "NTD_TND" => vec![qd[1], if paged { n } else { qd[0] }, 1],
            "SH" => vec![1, n, qd[0], 1],
            "NSD" => vec![1, n, qd[1], 1],
            "BNSD" | "BNSD_BSND" | "BNSD_NBSD" => vec![qd[0], n, qd[2], 1],
            _ => vec![qd[0], n, qd[1], 1], // BSH, BSND, BSND_NBSD, BSH_NBSD
        }
    };
    Ok(vec![
        TensorDesc::new(h.dt, Shape::from(out)),
        TensorDesc::new(DataType::FLOAT, Shape::from(lse)),
    ])
}
