//! Matrix products: MatMul, Gemm, Einsum.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::opmath::{parse_einsum, EinsumTerm};
use es_core::{AttrValue, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] =
    &[("MatMul", matmul), ("Gemm", gemm), ("Einsum", einsum)];

// ---------------------------------------------------------------------------------------------
// MatMul, Gemm
// ---------------------------------------------------------------------------------------------

fn matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let ranks = (
        ctx.input_desc(0)?.shape.rank(),
        ctx.input_desc(1)?.shape.rank(),
    );
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    match ranks {
        (Some(ra), Some(rb)) => Ok(vec![Some(matmul_ports(ctx, a, b, ra, rb)?)]),
        _ => one(matmul_any_rank(ctx, a, b)?),
    }
}

/// MatMul when a rank is not known at import (resolved at compile from the fed shapes): each
/// operand is reshaped to at least a matrix (a 1-D A to [1, K], a 1-D B to [K, 1]) by a shape
/// computed at run time, BatchMatMulV2 multiplies them (broadcasting the batch dims), and the
/// dims a 1-D operand added are removed again. A scalar operand is an error at run time.
fn matmul_any_rank(ctx: &mut NodeCtx<'_>, a: OutPort, b: OutPort) -> Result<OutPort> {
    let one = ctx.const_i64(&[1], &[1])?;
    let (zero_s, one_s, two_s) = (
        ctx.const_i64(&[0], &[])?,
        ctx.const_i64(&[1], &[])?,
        ctx.const_i64(&[2], &[])?,
    );
    let size =
        |ctx: &mut NodeCtx<'_>, s: OutPort| ctx.op1("Size", &[s], vec![("dtype", dtype_attr(I64))]);
    let (sa, sb) = (ctx.shape_i64(a)?, ctx.shape_i64(b)?);
    let (ra, rb) = (size(ctx, sa)?, size(ctx, sb)?);
    // A: the last max(rank, 2) entries of [1] ++ shape(A).
    let ea = ctx.concat(&[one, sa], 0)?;
    let ka = ctx.bin("Maximum", ra, two_s)?;
    let end = ctx.bin("Add", ra, one_s)?;
    let start = ctx.bin("Sub", end, ka)?;
    let idx = ctx.op1("Range", &[start, end, one_s], vec![])?;
    let shape_a = ctx.op1("GatherV2", &[ea, idx, zero_s], vec![])?;
    // B: the first max(rank, 2) entries of shape(B) ++ [1].
    let eb = ctx.concat(&[sb, one], 0)?;
    let kb = ctx.bin("Maximum", rb, two_s)?;
    let idx = ctx.op1("Range", &[zero_s, kb, one_s], vec![])?;
    let shape_b = ctx.op1("GatherV2", &[eb, idx, zero_s], vec![])?;
    let a2 = ctx.op1("Reshape", &[a, shape_a], vec![])?;
    let b2 = ctx.op1("Reshape", &[b, shape_b], vec![])?;
    let y = ctx.op1("BatchMatMulV2", &[a2, b2], vec![])?;
    // Y's dims without dim -2 when A is 1-D and dim -1 when B is 1-D.
    let sy = ctx.shape_i64(y)?;
    let ry = size(ctx, sy)?;
    let pos = ctx.op1("Range", &[zero_s, ry, one_s], vec![])?;
    let drop = |ctx: &mut NodeCtx<'_>, r: OutPort, back: OutPort| -> Result<OutPort> {
        let vec1 = ctx.bin("Equal", r, one_s)?;
        let at = ctx.bin("Sub", ry, back)?;
        let here = ctx.bin("Equal", pos, at)?;
        ctx.bin("LogicalAnd", here, vec1)
    };
    let (da, db) = (drop(ctx, ra, two_s)?, drop(ctx, rb, one_s)?);
    let dropped = ctx.bin("LogicalOr", da, db)?;
    let keep = ctx.un("LogicalNot", dropped)?;
    ctx.reshape_to_kept(y, sy, keep)
}

fn gemm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "transA", "transB", "broadcast"])?;
    let alpha = f64::from(ctx.attr_f("alpha", 1.0)?);
    let beta = f64::from(ctx.attr_f("beta", 1.0)?);
    let ta = ctx.attr_i("transA", 0)? != 0;
    let tb = ctx.attr_i("transB", 0)? != 0;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let mut y = ctx.op1(
        "MatMulV2",
        &[a, b],
        vec![
            ("transpose_x1", AttrValue::Bool(ta)),
            ("transpose_x2", AttrValue::Bool(tb)),
        ],
    )?;
    if alpha != 1.0 {
        let k = ctx.scalar_as(y, alpha)?;
        y = ctx.op1("Mul", &[y, k], vec![])?;
    }
    if let Some(mut c) = ctx.opt_input(2)? {
        if beta != 1.0 {
            let k = ctx.scalar_as(c, beta)?;
            c = ctx.op1("Mul", &[c, k], vec![])?;
        }
        y = ctx.op1("Add", &[y, c], vec![])?;
    }
    Ok(vec![Some(y)])
}

/// GE's Einsum takes float16, float32 and int32; other dtypes are refused (a cast would not be
/// exact for every value).
fn einsum(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["equation"])?;
    let eq = ctx.attr_s("equation", "")?;
    if eq.is_empty() {
        return Err(Error::tr("Einsum needs the attribute 'equation'"));
    }
    let mut xs = Vec::new();
    for i in 0..ctx.num_inputs() {
        xs.push(Some(ctx.input(i)?));
    }
    let dt = ctx.in_dtype(0)?;
    if !ctx.accepts("Einsum", dt)? && ctx.accepts("Mul", dt)? && ctx.accepts("ReduceSum", dt)? {
        let ports: Vec<OutPort> = xs.iter().flatten().copied().collect();
        return one(einsum_composite(ctx, &eq, &ports)?);
    }
    if !ctx.accepts("Einsum", dt)? {
        return Err(unsupported(
            ctx,
            format_args!(
                "inputs of dtype {dt} (GE's Einsum takes float16, float32 and int32; a cast \
                 would not be exact for every value)"
            ),
        ));
    }
    let n = xs.len() as i64;
    let outs = ctx.op(
        "Einsum",
        vec![xs],
        vec![
            ("equation", AttrValue::String(eq)),
            ("N", AttrValue::Int(n)),
        ],
    )?;
    Ok(outs.into_iter().take(1).map(Some).collect())
}

// Einsum as products and sums.

/// The terms of `eq` (inputs, output) with `...` replaced by capital letters (ranks must be
/// known), and the output made explicit.
fn einsum_terms(
    ctx: &NodeCtx<'_>,
    eq: &str,
    ranks: &[usize],
) -> Result<(Vec<Vec<char>>, Vec<char>)> {
    let e = parse_einsum(eq).map_err(|t| Error::tr(format!("Einsum: invalid term '{t}'")))?;
    if e.inputs.len() != ranks.len() {
        return Err(Error::tr(format!(
            "Einsum: the equation has {} operands, the node {}",
            e.inputs.len(),
            ranks.len()
        )));
    }
    let named = |t: &EinsumTerm| t.pre.len() + t.post.len();
    let mut ell = 0usize;
    for (t, &r) in e.inputs.iter().zip(ranks) {
        if t.ellipsis {
            ell = ell.max(r.checked_sub(named(t)).ok_or_else(|| {
                Error::tr(format!(
                    "Einsum: a term of '{}' has more letters than rank {r}",
                    e.text
                ))
            })?);
        }
    }
    if ell > 26 {
        return Err(unsupported(ctx, "more than 26 ellipsis dims"));
    }
    let caps: Vec<char> = ('A'..='Z').take(ell).collect();
    // The term's letters with its ellipsis as the last `k` capitals.
    let expand = |t: &EinsumTerm, k: usize| -> Vec<char> {
        let mut out = t.pre.clone();
        if t.ellipsis {
            out.extend_from_slice(&caps[ell - k..]);
        }
        out.extend_from_slice(&t.post);
        out
    };
    let mut terms = Vec::new();
    for (t, &r) in e.inputs.iter().zip(ranks) {
        if !t.ellipsis && named(t) != r {
            return Err(Error::tr(format!(
                "Einsum: a term of '{}' does not match rank {r}",
                e.text
            )));
        }
        if ell > 0 && t.letters().any(|c| c.is_ascii_uppercase()) {
            return Err(unsupported(
                ctx,
                "capital letters together with an ellipsis",
            ));
        }
        terms.push(expand(t, r.saturating_sub(named(t))));
    }
    Ok((terms, expand(&e.output_term(), ell)))
}

/// Einsum for dtypes GE's Einsum does not take: diagonals by masking, then every operand
/// transposed and unsqueezed onto one letter order, multiplied (broadcasting), the letters
/// not in the output summed, and the rest transposed into the output order. Exact products;
/// the sums' order may differ from other implementations.
/// The positions in `order` of the letters that are not in `letters`.
fn positions_not_in(order: &[char], letters: &[char]) -> Vec<i64> {
    (0..order.len())
        .filter(|&i| !letters.contains(&order[i]))
        .map(|i| i as i64)
        .collect()
}

fn einsum_composite(ctx: &mut NodeCtx<'_>, eq: &str, xs: &[OutPort]) -> Result<OutPort> {
    let mut ranks = Vec::new();
    for &x in xs {
        ranks.push(
            ctx.desc(x)?
                .shape
                .rank()
                .ok_or_else(|| unsupported(ctx, "inputs of unknown rank"))?,
        );
    }
    let (terms, out) = einsum_terms(ctx, eq, &ranks)?;
    let mut order: Vec<char> = Vec::new();
    for t in &terms {
        for &c in t {
            if !order.contains(&c) {
                order.push(c);
            }
        }
    }
    for c in &out {
        if !order.contains(c) {
            return Err(Error::tr(format!(
                "Einsum: output letter '{c}' is in no input"
            )));
        }
    }
    let mut acc: Option<OutPort> = None;
    for (&x0, t0) in xs.iter().zip(&terms) {
        let mut x = x0;
        let mut t = t0.clone();
        // Diagonals: a letter at positions p < q keeps x where index p == index q, summed
        // over q.
        while let Some((p, q)) =
            (0..t.len()).find_map(|p| ((p + 1)..t.len()).find(|&q| t[q] == t[p]).map(|q| (p, q)))
        {
            let n = ctx.static_dim(x, p)?.ok_or_else(|| {
                unsupported(ctx, "a repeated letter over a dim unknown at import")
            })?;
            let mut shape = vec![1i64; t.len()];
            shape[p] = n;
            shape[q] = n;
            let nn = (n * n) as usize;
            let mask: Vec<bool> = (0..nn).map(|k| k / n as usize == k % n as usize).collect();
            let m = ctx.constant(Tensor::from_values(&mask, shape)?)?;
            let dt = ctx.port_dtype(x)?;
            let zero = ctx.scalar(dt, 0.0)?;
            let sel = ctx.op1("SelectV2", &[m, x, zero], vec![])?;
            x = reduce_op(ctx, "ReduceSum", sel, &Axes::List(vec![q as i64]), false)?;
            t.remove(q);
        }
        // Transpose into `order`'s relative order, then unsqueeze the missing letters.
        let mut perm: Vec<usize> = (0..t.len()).collect();
        perm.sort_by_key(|&i| order.iter().position(|c| *c == t[i]));
        if perm.iter().enumerate().any(|(i, &p)| i != p) {
            let pv: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
            let pc = ctx.const_i64(&pv, &[pv.len() as i64])?;
            x = ctx.op1("Transpose", &[x, pc], vec![])?;
        }
        let missing = positions_not_in(&order, &t);
        if !missing.is_empty() {
            x = ctx.op1(
                "Unsqueeze",
                &[x],
                vec![("axes", AttrValue::ListInt(missing))],
            )?;
        }
        acc = Some(match acc {
            None => x,
            Some(a) => ctx.bin("Mul", a, x)?,
        });
    }
    let mut y = acc.ok_or_else(|| Error::tr("Einsum needs at least one input"))?;
    let summed = positions_not_in(&order, &out);
    let kept: Vec<char> = order.iter().copied().filter(|c| out.contains(c)).collect();
    if !summed.is_empty() {
        y = reduce_op(ctx, "ReduceSum", y, &Axes::List(summed), false)?;
    }
    let perm: Vec<i64> = out
        .iter()
        .map(|c| kept.iter().position(|k| k == c).map(|p| p as i64))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::tr("Einsum: an output letter repeats"))?;
    if perm.len() != kept.len() {
        return Err(Error::tr("Einsum: an output letter repeats"));
    }
    if perm.iter().enumerate().any(|(i, &p)| i as i64 != p) {
        let pc = ctx.const_i64(&perm, &[perm.len() as i64])?;
        y = ctx.op1("Transpose", &[y, pc], vec![])?;
    }
    Ok(y)
}
