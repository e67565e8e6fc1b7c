//! Kernels of the transformer operators: DynamicQuant, MoeGatingTopKSoftmax,
//! PromptFlashAttention, IncreFlashAttention and FusedInferAttentionScore (their plain path:
//! float query/key/value, BSH/BNSD/BSND, atten_mask) and GroupedMatmulFinalizeRouting (int8 x
//! and ND w, float32 scale).

use super::common::{floats, from_f64, str_attr};
use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::DataType;

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

// ---------------------------------------------------------------------------------------------
// PromptFlashAttention
// ---------------------------------------------------------------------------------------------

/// PromptFlashAttention's inputs, in IR order.
const PFA_INPUTS: &[&str] = &[
    "query",
    "key",
    "value",
    "pse_shift",
    "atten_mask",
    "actual_seq_lengths",
    "actual_seq_lengths_kv",
    "deq_scale1",
    "quant_scale1",
    "deq_scale2",
    "quant_scale2",
    "quant_offset2",
];

/// Where a tensor of one attention layout keeps element (batch, head, position, d).
#[derive(Clone, Copy)]
struct Layout {
    /// BSH and BSND: [B, S, N, D] in memory; BNSD: [B, N, S, D].
    heads_first: bool,
    heads: usize,
    seq: usize,
    dim: usize,
}

impl Layout {
    fn of(op: &str, name: &str, dims: &[usize], layout: &str, heads: usize) -> Result<Layout> {
        let bad = || {
            Error::kernel(format!(
                "{op}: {name} {dims:?} does not fit input_layout {layout} with {heads} heads"
            ))
        };
        let (heads_first, seq, dim) = match (layout, dims) {
            ("BSH", [_, s, h]) if h % heads == 0 => (false, *s, h / heads),
            ("BSND", [_, s, n, d]) if *n == heads => (false, *s, *d),
            ("BNSD", [_, n, s, d]) if *n == heads => (true, *s, *d),
            _ => return Err(bad()),
        };
        Ok(Layout {
            heads_first,
            heads,
            seq,
            dim,
        })
    }
    fn at(&self, b: usize, h: usize, s: usize) -> usize {
        let (n, sq, d) = (self.heads, self.seq, self.dim);
        if self.heads_first {
            ((b * n + h) * sq + s) * d
        } else {
            ((b * sq + s) * n + h) * d
        }
    }
}

/// The index of mask element (batch, row, col) for a mask of dims `m` over [S, Skv], or an
/// error for a shape the kernel does not take.
fn mask_index(
    op: &str,
    m: &[usize],
    batch: usize,
    s: usize,
    t: usize,
) -> Result<impl Fn(usize, usize, usize) -> usize> {
    let per = s * t;
    let batched = match m {
        [a, b] if *a == s && *b == t => false,
        [1, a, b] | [1, 1, a, b] if *a == s && *b == t => false,
        [x, a, b] | [x, 1, a, b] if *x == batch && *a == s && *b == t => true,
        // One query position (IncreFlashAttention): [B, Skv].
        [x, b] if s == 1 && *x == batch && *b == t => true,
        _ => {
            return Err(Error::kernel(format!(
                "{op}: atten_mask {m:?} must be [S, Skv], [B, S, Skv] or [B, 1, S, Skv] \
                 (S {s}, Skv {t}, B {batch})"
            )))
        }
    };
    Ok(move |b: usize, i: usize, j: usize| if batched { b * per } else { 0 } + i * t + j)
}

/// The checks PromptFlashAttention and IncreFlashAttention make alike: a float query and a
/// layout the kernel takes; returns the layout and inner_precise.
fn attention_checks(info: &NodeInfo, op: &str) -> Result<(String, i64)> {
    if let Some(Some(q)) = info.inputs.first() {
        if !q.dtype.is_float() {
            return Err(Error::unsupported(format!(
                "{op} with a {} query (quantized attention)",
                q.dtype
            )));
        }
    }
    let layout = str_attr(info, "input_layout", "BSH")?;
    if !["BSH", "BNSD", "BSND"].contains(&layout.as_str()) {
        return Err(Error::unsupported(format!(
            "{op} with input_layout {layout:?} (the CPU kernel takes BSH, BNSD and BSND)"
        )));
    }
    Ok((layout, info.int("inner_precise", 1)?))
}

/// The modes the CPU kernel refuses: inner_precise outside 0..=`max_precise`, sparse_mode other
/// than 0 and block_size other than 0 (page attention); an operator without one of these
/// attributes has its default.
fn plain_modes(info: &NodeInfo, op: &str, precise: i64, max_precise: i64) -> Result<()> {
    if !(0..=max_precise).contains(&precise) {
        let range = if max_precise == 1 {
            "0 or 1".to_string()
        } else {
            format!("0 to {max_precise}")
        };
        return Err(Error::unsupported(format!(
            "{op} with inner_precise {precise} ({range})"
        )));
    }
    let sparse = info.int("sparse_mode", 0)?;
    if sparse != 0 {
        return Err(Error::unsupported(format!(
            "{op} with sparse_mode {sparse} (the CPU kernel takes 0)"
        )));
    }
    let block = info.int("block_size", 0)?;
    if block != 0 {
        return Err(Error::unsupported(format!(
            "{op} with block_size {block} (page attention)"
        )));
    }
    Ok(())
}

fn prompt_flash_attention_factory(info: &NodeInfo) -> Result<Kernel> {
    const OP: &str = "PromptFlashAttention";
    for (i, name) in PFA_INPUTS.iter().enumerate().skip(3) {
        if i != 4 && info.inputs.get(i).is_some_and(Option::is_some) {
            return Err(Error::unsupported(format!("{OP} with {name} (input {i})")));
        }
    }
    let (layout, precise) = attention_checks(info, OP)?;
    plain_modes(info, OP, precise, 3)?;
    let band = (
        info.int("pre_tokens", 214_748_647)?,
        info.int("next_tokens", 0)?,
    );
    let geo = Attention::new(info, OP, layout, (0, "scale_value"), band, 1)?;
    Ok(Box::new(move |inputs| {
        let (q, k, v) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        Ok(vec![geo.run(q, k, v, inputs.get(4).copied().flatten())?.0])
    }))
}

/// The geometry and attributes of one attention node (PromptFlashAttention,
/// IncreFlashAttention, FusedInferAttentionScore).
struct Attention {
    op: &'static str,
    layout: String,
    heads: usize,
    kv_heads: usize,
    scale: f64,
    /// (pre_tokens, next_tokens): with a mask, positions outside the band are masked too,
    /// when query has at least `band_min_rows` positions.
    band: (i64, i64),
    band_min_rows: usize,
}

impl Attention {
    /// The attention of node `info` (operator `op`): num_heads, and num_key_value_heads (0:
    /// num_heads; absent: `kvn_default`), which must divide it; the scale from attribute
    /// `scale_attr` (default 1).
    fn new(
        info: &NodeInfo,
        op: &'static str,
        layout: String,
        (kvn_default, scale_attr): (i64, &str),
        band: (i64, i64),
        band_min_rows: usize,
    ) -> Result<Self> {
        let n = usize::try_from(info.int("num_heads", 1)?).unwrap_or(0);
        let kvn = match info.int("num_key_value_heads", kvn_default)? {
            0 => n,
            k => usize::try_from(k).unwrap_or(0),
        };
        if n == 0 || kvn == 0 || n % kvn != 0 {
            return Err(Error::kernel(format!(
                "{op}: num_key_value_heads {kvn} must be a positive divisor of num_heads {n}"
            )));
        }
        Ok(Attention {
            op,
            layout,
            heads: n,
            kv_heads: kvn,
            scale: f64::from(info.float(scale_attr, 1.0)?),
            band,
            band_min_rows,
        })
    }

    /// softmax(scale * Q K^T, masked) V per head, in f64, rounded once to query's dtype; a row
    /// with every position masked gives zeros. Also returns each row's log-sum-exp of its
    /// scores, [B, N, S] (+inf for a row with every position masked).
    fn run(
        &self,
        q: &Value,
        k: &Value,
        v: &Value,
        mask: Option<&Value>,
    ) -> Result<(Value, Vec<f64>)> {
        let Attention {
            op,
            ref layout,
            heads: n,
            kv_heads: kvn,
            scale,
            band,
            band_min_rows,
        } = *self;
        let ql = Layout::of(op, "query", q.shape(), layout, n)?;
        let kl = Layout::of(op, "key", k.shape(), layout, kvn)?;
        let vl = Layout::of(op, "value", v.shape(), layout, kvn)?;
        let batch = q.shape()[0];
        if k.shape()[0] != batch || v.shape()[0] != batch || kl.dim != ql.dim || vl.seq != kl.seq {
            return Err(Error::kernel(format!(
                "{op}: query {:?}, key {:?} and value {:?} do not agree (batch, key/value \
                 length, query/key head size)",
                q.shape(),
                k.shape(),
                v.shape()
            )));
        }
        let (s, t, d, dv) = (ql.seq, kl.seq, ql.dim, vl.dim);
        let (pre, next) = if s >= band_min_rows {
            band
        } else {
            (i64::MAX, i64::MAX)
        };
        let (qs, ks, vs) = (floats(q, "query")?, floats(k, "key")?, floats(v, "value")?);
        let mask = match mask {
            Some(m) => Some((m.to_f64_vec(), mask_index(op, m.shape(), batch, s, t)?)),
            None => None,
        };
        let ol = Layout { dim: dv, ..ql };
        let mut out = vec![0f64; batch * n * s * dv];
        let mut lse = vec![f64::INFINITY; batch * n * s];
        let mut scores = vec![0f64; t];
        for b in 0..batch {
            for h in 0..n {
                let kh = h / (n / kvn);
                for i in 0..s {
                    let qo = ql.at(b, h, i);
                    let qr = &qs[qo..qo + d];
                    let mut max = f64::NEG_INFINITY;
                    for (j, sc) in scores.iter_mut().enumerate() {
                        let masked = mask.as_ref().is_some_and(|(m, at)| {
                            m[at(b, i, j)] != 0.0
                                || j as i64 - i as i64 > next
                                || i as i64 - j as i64 > pre
                        });
                        *sc = if masked {
                            f64::NEG_INFINITY
                        } else {
                            let ko = kl.at(b, kh, j);
                            scale
                                * qr.iter()
                                    .zip(&ks[ko..ko + d])
                                    .map(|(a, c)| a * c)
                                    .sum::<f64>()
                        };
                        max = max.max(*sc);
                    }
                    // A row with every position masked gives zeros.
                    if max == f64::NEG_INFINITY {
                        continue;
                    }
                    let mut sum = 0.0;
                    for sc in scores.iter_mut() {
                        *sc = (*sc - max).exp();
                        sum += *sc;
                    }
                    lse[(b * n + h) * s + i] = max + sum.ln();
                    let oo = ol.at(b, h, i);
                    for (j, &p) in scores.iter().enumerate() {
                        if p == 0.0 {
                            continue;
                        }
                        let vo = vl.at(b, kh, j);
                        for (o, &x) in out[oo..oo + dv].iter_mut().zip(&vs[vo..vo + dv]) {
                            *o += p / sum * x;
                        }
                    }
                }
            }
        }
        let dims: Vec<usize> = match layout.as_str() {
            "BSH" => vec![batch, s, n * dv],
            "BSND" => vec![batch, s, n, dv],
            _ => vec![batch, n, s, dv],
        };
        Ok((from_f64(q.dtype(), &dims, out)?, lse))
    }
}

// ---------------------------------------------------------------------------------------------
// IncreFlashAttention
// ---------------------------------------------------------------------------------------------

/// Where each of `taken` stands among the node's inputs, the layout and inner_precise.
type KvListChecked = (Vec<Option<usize>>, String, i64);

/// Checks of IncreFlashAttention and FusedInferAttentionScore, whose key and value are lists:
/// one key and one value tensor, none of the optional inputs (IR inputs from 3 on) connected
/// but those named in `taken`, `attention_checks`, then a float key and value.
fn kv_list_checks(info: &NodeInfo, op: &str, taken: &[&str]) -> Result<KvListChecked> {
    let slots = &info.node.inputs;
    let keys = slots.iter().filter(|x| x.ir_index == 1).count();
    if keys != 1 {
        return Err(Error::unsupported(format!(
            "{op} with {keys} key and value tensors (a key/value list per batch; the CPU kernel \
             takes one key and one value tensor)"
        )));
    }
    for (p, slot) in slots.iter().enumerate() {
        let connected = info.inputs.get(p).is_some_and(Option::is_some);
        if slot.ir_index >= 3 && connected && !taken.contains(&slot.name.as_str()) {
            return Err(Error::unsupported(format!(
                "{op} with {} (input {})",
                slot.name, slot.ir_index
            )));
        }
    }
    let (layout, precise) = attention_checks(info, op)?;
    for i in [1usize, 2] {
        if let Some(Some(d)) = info.inputs.get(i) {
            if !d.dtype.is_float() {
                let name = if i == 1 { "key" } else { "value" };
                return Err(Error::unsupported(format!(
                    "{op} with a {} {name} (antiquant attention)",
                    d.dtype
                )));
            }
        }
    }
    let at = taken
        .iter()
        .map(|name| {
            slots
                .iter()
                .position(|x| x.ir_index >= 3 && x.name.as_str() == *name)
        })
        .collect();
    Ok((at, layout, precise))
}

fn incre_flash_attention_factory(info: &NodeInfo) -> Result<Kernel> {
    const OP: &str = "IncreFlashAttention";
    let (at, layout, precise) = kv_list_checks(info, OP, &["atten_mask"])?;
    let mask_at = at[0];
    plain_modes(info, OP, precise, 1)?;
    let band = (i64::MAX, i64::MAX);
    let geo = Attention::new(info, OP, layout, (1, "scale_value"), band, 1)?;
    Ok(Box::new(move |inputs| {
        let (q, k, v) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let mask = mask_at.and_then(|p| inputs.get(p).copied().flatten());
        Ok(vec![geo.run(q, k, v, mask)?.0])
    }))
}

// ---------------------------------------------------------------------------------------------
// FusedInferAttentionScore
// ---------------------------------------------------------------------------------------------

/// The lengths of actual_seq_lengths(_kv) must be the full `len` positions (where they change
/// nothing); shorter ones are refused, longer ones are an error.
fn full_lengths(op: &str, name: &str, of: &str, lengths: Option<&Value>, len: usize) -> Result<()> {
    let Some(l) = lengths else { return Ok(()) };
    let vals: Vec<i64> = l.to_f64_vec().into_iter().map(|x| x as i64).collect();
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    if vals.iter().any(|&x| x > len_i) {
        return Err(Error::kernel(format!(
            "{op}: {name} {vals:?} exceed the {len} positions of {of}"
        )));
    }
    if vals.iter().any(|&x| x != len_i) {
        return Err(Error::unsupported(format!(
            "{op} with {name} {vals:?} shorter than the {len} positions of {of} (the CPU kernel \
             takes full lengths only)"
        )));
    }
    Ok(())
}

fn fused_infer_attention_score_factory(info: &NodeInfo) -> Result<Kernel> {
    const OP: &str = "FusedInferAttentionScore";
    let taken = ["atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv"];
    let (at, layout, precise) = kv_list_checks(info, OP, &taken)?;
    plain_modes(info, OP, precise, 3)?;
    let lse_flag = info.bool("softmax_lse_flag", false)?;
    let band = (
        info.int("pre_tokens", 2_147_483_647)?,
        info.int("next_tokens", 2_147_483_647)?,
    );
    // A single query position (the incremental step) ignores pre_tokens and next_tokens.
    let geo = Attention::new(info, OP, layout, (0, "scale"), band, 2)?;
    let n = geo.heads;
    Ok(Box::new(move |inputs| {
        let (q, k, v) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let get = |i: usize| at[i].and_then(|p| inputs.get(p).copied().flatten());
        let (out, lse) = geo.run(q, k, v, get(0))?;
        let heads_first = geo.layout == "BNSD";
        let seq = |x: &Value| x.shape()[if heads_first { 2 } else { 1 }];
        full_lengths(OP, "actual_seq_lengths", "query", get(1), seq(q))?;
        full_lengths(OP, "actual_seq_lengths_kv", "key", get(2), seq(k))?;
        let lse = if lse_flag {
            let (b, s) = (q.shape()[0], seq(q));
            from_f64(DataType::FLOAT, &[b, n, s, 1], lse)?
        } else {
            from_f64(DataType::FLOAT, &[0], Vec::new())?
        };
        Ok(vec![out, lse])
    }))
}

// ---------------------------------------------------------------------------------------------
// GroupedMatmulFinalizeRouting
// ---------------------------------------------------------------------------------------------

/// GroupedMatmulFinalizeRouting's inputs, in IR order.
const GMMFR_INPUTS: &[&str] = &[
    "x",
    "w",
    "scale",
    "bias",
    "pertoken_scale",
    "group_list",
    "shared_input",
    "logit",
    "row_index",
    "offset",
];

fn grouped_matmul_finalize_routing_factory(info: &NodeInfo) -> Result<Kernel> {
    const OP: &str = "GroupedMatmulFinalizeRouting";
    for i in [3usize, 9] {
        if info.inputs.get(i).is_some_and(Option::is_some) {
            let name = GMMFR_INPUTS[i];
            return Err(Error::unsupported(format!("{OP} with {name} (input {i})")));
        }
    }
    for (i, want) in [(1usize, DataType::INT8), (2, DataType::FLOAT)] {
        if let Some(Some(d)) = info.inputs.get(i) {
            if d.dtype != want {
                let name = GMMFR_INPUTS[i];
                return Err(Error::unsupported(format!(
                    "{OP} with a {} {name} (the CPU kernel takes {want})",
                    d.dtype
                )));
            }
        }
    }
    let dtype = info.int("dtype", 0)?;
    if dtype != 0 {
        return Err(Error::unsupported(format!(
            "{OP} with dtype {dtype} (the CPU kernel writes float32 only, dtype 0)"
        )));
    }
    for a in ["transpose_x", "transpose_w"] {
        if info.bool(a, false)? {
            return Err(Error::unsupported(format!("{OP} with {a}=true")));
        }
    }
    let cumsum = match info.int("group_list_type", 1)? {
        0 => true,
        1 => false,
        t => {
            return Err(Error::unsupported(format!(
                "{OP} with group_list_type {t} (0: cumulative, 1: counts)"
            )))
        }
    };
    let weight = f64::from(info.float("shared_input_weight", 1.0)?);
    let shared_offset = usize::try_from(info.int("shared_input_offset", 0)?)
        .map_err(|_| Error::kernel(format!("{OP}: shared_input_offset must be >= 0")))?;
    let bs = usize::try_from(info.int("output_bs", 0)?)
        .map_err(|_| Error::kernel(format!("{OP}: output_bs must be >= 0")))?;
    Ok(Box::new(move |inputs| {
        let opt = |i: usize| inputs.get(i).copied().flatten();
        let (x, w) = (input(inputs, 0)?, input(inputs, 1)?);
        let scale = opt(2).ok_or_else(|| Error::kernel(format!("{OP}: scale is not given")))?;
        let groups = opt(5)
            .ok_or_else(|| Error::unsupported(format!("{OP} without group_list")))?
            .to_i64_vec();
        let (&[m, k], &[e, wk, n]) = (x.shape(), w.shape()) else {
            return Err(Error::kernel(format!(
                "{OP}: x {:?} must be [m, k] and w {:?} [e, k, n]",
                x.shape(),
                w.shape()
            )));
        };
        if wk != k || scale.shape() != [e, n] || groups.len() != e {
            return Err(Error::kernel(format!(
                "{OP}: x {:?}, w {:?}, scale {:?} and group_list {:?} do not agree \
                 (x [m, k], w [e, k, n], scale [e, n], group_list [e])",
                x.shape(),
                w.shape(),
                scale.shape(),
                groups
            )));
        }
        let per_row = |i: usize, what: &str| -> Result<Option<Vec<f64>>> {
            match opt(i) {
                Some(v) if v.len() == m => Ok(Some(v.to_f64_vec())),
                Some(v) => Err(Error::kernel(format!(
                    "{OP}: {what} {:?} must have the {m} rows of x",
                    v.shape()
                ))),
                None => Ok(None),
            }
        };
        let pertoken = per_row(4, "pertoken_scale")?;
        let logit = per_row(7, "logit")?;
        let rows = per_row(8, "row_index")?;
        // Each group's end row.
        let mut ends = Vec::with_capacity(e);
        let mut acc = 0i64;
        for &g in &groups {
            acc = if cumsum { g } else { acc.saturating_add(g) };
            ends.push(acc);
        }
        if ends.windows(2).any(|p| p[1] < p[0])
            || ends.first().is_some_and(|&f| f < 0)
            || ends.last().is_some_and(|&l| l > m as i64)
        {
            return Err(Error::kernel(format!(
                "{OP}: group_list {groups:?} must cover at most the {m} rows of x"
            )));
        }
        let (xs, ws, ss) = (x.to_i64_vec(), w.to_i64_vec(), scale.to_f64_vec());
        let mut y = vec![0f64; bs * n];
        let mut start = 0usize;
        for (g, &end) in ends.iter().enumerate() {
            let end = end as usize;
            for i in start..end {
                let r = rows.as_ref().map_or(i as f64, |r| r[i]);
                if r < 0.0 || r >= bs as f64 {
                    return Err(Error::kernel(format!(
                        "{OP}: row_index {r} of row {i} is outside [0, {bs}) (output_bs)"
                    )));
                }
                let f =
                    pertoken.as_ref().map_or(1.0, |p| p[i]) * logit.as_ref().map_or(1.0, |l| l[i]);
                let out = &mut y[r as usize * n..(r as usize + 1) * n];
                for (j, o) in out.iter_mut().enumerate() {
                    let dot: i64 = (0..k)
                        .map(|t| xs[i * k + t] * ws[(g * k + t) * n + j])
                        .sum();
                    *o += dot as f64 * ss[g * n + j] * f;
                }
            }
            start = end;
        }
        if let Some(sh) = opt(6) {
            let sb = sh.shape().first().copied().unwrap_or(0);
            if sh.shape() != [sb, n] || shared_offset + sb > bs {
                return Err(Error::kernel(format!(
                    "{OP}: shared_input {:?} must be [bs, {n}] with bs + shared_input_offset \
                     {shared_offset} <= output_bs {bs}",
                    sh.shape()
                )));
            }
            for (o, v) in y[shared_offset * n..].iter_mut().zip(sh.to_f64_vec()) {
                *o += v * weight;
            }
        }
        Ok(vec![from_f64(DataType::FLOAT, &[bs, n], y)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["DynamicQuant"], dynamic_quant_factory),
    (&["MoeGatingTopKSoftmax"], moe_gating_top_k_softmax_factory),
    (&["PromptFlashAttention"], prompt_flash_attention_factory),
    (&["IncreFlashAttention"], incre_flash_attention_factory),
    (
        &["FusedInferAttentionScore"],
        fused_infer_attention_score_factory,
    ),
    (
        &["GroupedMatmulFinalizeRouting"],
        grouped_matmul_finalize_routing_factory,
    ),
];
