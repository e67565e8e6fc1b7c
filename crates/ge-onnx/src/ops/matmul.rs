//! Matrix products: MatMul, Gemm, Einsum, DFT.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::opmath::{parse_einsum, EinsumTerm};
use es_core::{AttrValue, DataType, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("MatMul", matmul),
    ("Gemm", gemm),
    ("Einsum", einsum),
    ("DFT", dft),
];

// ---------------------------------------------------------------------------------------------
// MatMul, Gemm
// ---------------------------------------------------------------------------------------------

fn matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    Ok(vec![Some(matmul_ports(ctx, a, b, ra, rb)?)])
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

// DFT.

/// A product with a constant matrix along `axis`: the input [..., N, c_in] (axis moved next to
/// the last) flattened to [B, N * c_in] times W [N * c_in, K * c_out], whose entries are the
/// DFT's cos/sin terms (angles reduced mod the length, in f64): forward (onesided keeps
/// L/2 + 1 bins), inverse (1/L, conjugate), and inverse onesided (numpy's irfft: the Hermitian
/// extension, a real output). The input's shape and dft_length/axis must be known at import.
fn dft(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "inverse", "onesided"])?;
    let inverse = ctx.attr_i("inverse", 0)? != 0;
    let onesided = ctx.attr_i("onesided", 0)? != 0;
    let x = ctx.input(0)?;
    let d = ctx.input_desc(0)?;
    let dt = ctx.in_dtype(0)?;
    let dims = d.shape.dims().to_vec();
    if d.shape.rank().is_none() || !d.shape.is_static() {
        return Err(unsupported(
            ctx,
            "the input's shape must be known at import",
        ));
    }
    let r = dims.len();
    if r < 2 {
        return Err(Error::tr(
            "DFT: the input needs a signal dim and a component dim",
        ));
    }
    let axis = if ctx.opset >= 20 {
        match ctx.const_ints(2, "axis")? {
            Some(v) if v.len() == 1 => v[0],
            Some(_) => return Err(Error::tr("DFT: axis must be a scalar")),
            None => -2,
        }
    } else {
        if ctx.has_input(2) {
            return Err(Error::tr("DFT: axis is an attribute before opset 20"));
        }
        ctx.attr_i("axis", 1)?
    };
    let a = norm_axis(axis, r, "DFT axis")?;
    if a == r - 1 {
        return Err(Error::tr("DFT: axis must not be the last (component) dim"));
    }
    let c_in = dims[r - 1] as usize;
    if c_in != 1 && c_in != 2 {
        return Err(Error::tr(format!(
            "DFT: the last dim must be 1 (real) or 2 (complex), got {c_in}"
        )));
    }
    let n = dims[a];
    let len = match ctx.const_ints(1, "dft_length")? {
        Some(v) if v.len() == 1 => v[0],
        Some(_) => return Err(Error::tr("DFT: dft_length must be a scalar")),
        None if inverse && onesided => 2 * (n - 1),
        None => n,
    };
    if len < 1 {
        return Err(Error::tr(format!("DFT: dft_length {len} must be positive")));
    }
    let half = len / 2 + 1;
    let (k_out, c_out) = match (inverse, onesided) {
        (false, true) => (half, 2),
        (true, true) => (len, 1),
        _ => (len, 2),
    };
    let rows = n as usize * c_in;
    let cols = k_out as usize * c_out;
    if rows.saturating_mul(cols) > 1 << 26 {
        return Err(unsupported(ctx, "a DFT matrix of more than 2^26 elements"));
    }
    // W[row(i, comp_in), col(j, comp_out)].
    let mut w = vec![0f64; rows * cols];
    let lf = len as f64;
    let angle = |p: i64, q: i64| 2.0 * std::f64::consts::PI * ((p * q) % len) as f64 / lf;
    for i in 0..n {
        for j in 0..k_out {
            let base_r = i as usize * c_in;
            let base_c = j as usize * c_out;
            let mut put = |ci: usize, co: usize, v: f64| {
                if ci < c_in {
                    w[(base_r + ci) * cols + base_c + co] = v;
                }
            };
            if !inverse {
                // Input sample i, output bin j: re += xr cos + xi sin, im += xi cos - xr sin.
                if i >= len {
                    continue;
                }
                let t = angle(i, j);
                let (c, s) = (t.cos(), t.sin());
                put(0, 0, c);
                put(1, 0, s);
                put(0, 1, -s);
                put(1, 1, c);
            } else if !onesided {
                // Input bin i, output sample j: (Xr cos - Xi sin, Xi cos + Xr sin) / L.
                if i >= len {
                    continue;
                }
                let t = angle(i, j);
                let (c, s) = (t.cos() / lf, t.sin() / lf);
                put(0, 0, c);
                put(1, 0, -s);
                put(0, 1, s);
                put(1, 1, c);
            } else {
                // irfft: bins 0..=L/2 with Hermitian weights, real output.
                if i >= half {
                    continue;
                }
                let wgt = if i == 0 || (len % 2 == 0 && i == len / 2) {
                    1.0
                } else {
                    2.0
                };
                let t = angle(i, j);
                put(0, 0, wgt * t.cos() / lf);
                if i != 0 && !(len % 2 == 0 && i == len / 2) {
                    put(1, 0, -wgt * t.sin() / lf);
                }
            }
        }
    }
    // Move the axis next to the component dim, flatten, multiply, restore.
    let mut perm: Vec<usize> = (0..r - 1).filter(|&i| i != a).collect();
    perm.push(a);
    perm.push(r - 1);
    let moved = perm.iter().enumerate().any(|(i, &p)| i != p);
    let mut xt = x;
    if moved {
        let pv: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        let pc = ctx.const_i64(&pv, &[r as i64])?;
        xt = ctx.op1("Transpose", &[x, pc], vec![])?;
    }
    let flat = ctx.const_i64(&[-1, rows as i64], &[2])?;
    let x2 = ctx.op1("Reshape", &[xt, flat], vec![])?;
    let y = if ctx.accepts("BatchMatMulV2", dt)? && dt.is_float() {
        let wt = es_core::types::tensor_from_f64(dt, vec![rows as i64, cols as i64], &w)?;
        let wc = ctx.constant(wt)?;
        ctx.op1("BatchMatMulV2", &[x2, wc], vec![])?
    } else if dt == DataType::DOUBLE {
        // sum over rows of x[:, :, None] * W
        let wt = es_core::types::tensor_from_f64(dt, vec![rows as i64, cols as i64], &w)?;
        let wc = ctx.constant(wt)?;
        let x3 = ctx.op1(
            "Unsqueeze",
            &[x2],
            vec![("axes", AttrValue::ListInt(vec![2]))],
        )?;
        let p = ctx.bin("Mul", x3, wc)?;
        reduce_op(ctx, "ReduceSum", p, &Axes::List(vec![1]), false)?
    } else {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    };
    let mut out_dims: Vec<i64> = perm[..r - 2].iter().map(|&p| dims[p]).collect();
    out_dims.push(k_out);
    out_dims.push(c_out as i64);
    let sc = ctx.const_i64(&out_dims, &[r as i64])?;
    let mut y = ctx.op1("Reshape", &[y, sc], vec![])?;
    if moved {
        // Inverse permutation.
        let mut inv = vec![0i64; r];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i as i64;
        }
        let pc = ctx.const_i64(&inv, &[r as i64])?;
        y = ctx.op1("Transpose", &[y, pc], vec![])?;
    }
    one(y)
}
