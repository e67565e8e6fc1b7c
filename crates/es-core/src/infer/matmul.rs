//! Inference rules of the matrix products (MatMul, BatchMatMul, GEMM, Einsum) and
//! MatrixDeterminant.

use super::common::{
    check_one_element, check_rank, dtype_like, merge_dim, opt_bool, product_dtype, single,
};
use super::{broadcast, InferCtx, InferFn};
use crate::error::Result;
use crate::opmath::parse_einsum;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "MatMul" | "MatMulV2" => matmul,
        "BatchMatMul" | "BatchMatMulV2" => batch_matmul,
        "GEMM" => gemm,
        "Einsum" => einsum,
        "MatrixDeterminant" => matrix_determinant,
        _ => return None,
    })
}

/// (rows, cols) of a 2-D operand after an optional transpose; unknown for unknown rank.
fn mat_dims(s: &Shape, transpose: bool) -> (i64, i64) {
    match s.dims() {
        [r, c] if s.rank() == Some(2) => {
            if transpose {
                (*c, *r)
            } else {
                (*r, *c)
            }
        }
        _ => (UNKNOWN_DIM, UNKNOWN_DIM),
    }
}

/// Error for differing inner dimensions.
fn inner_mismatch(
    ctx: &InferCtx,
    (n1, s1, t1, a1): (&str, &Shape, bool, &str),
    k1: i64,
    (n2, s2, t2, a2): (&str, &Shape, bool, &str),
    k2: i64,
) -> crate::error::Error {
    let mut flags = Vec::new();
    if t1 {
        flags.push(format!("{a1}=true"));
    }
    if t2 {
        flags.push(format!("{a2}=true"));
    }
    let suffix = if flags.is_empty() {
        String::new()
    } else {
        format!(" ({})", flags.join(", "))
    };
    ctx.err(format!(
        "inner dimensions differ: {n1} {s1} (k={k1}) vs {n2} {s2} (k={k2}){suffix}"
    ))
}

/// Checks an optional bias against the output shape (it must broadcast into it).
fn check_bias_into(
    ctx: &InferCtx,
    name: &str,
    bias: Option<&TensorDesc>,
    out: &Shape,
) -> Result<()> {
    let Some(b) = bias else { return Ok(()) };
    let r = broadcast(&b.shape, out).map_err(|e| {
        ctx.err(format!(
            "input '{name}' {} does not fit the output {out}: {e}",
            b.shape
        ))
    })?;
    if let (Some(rb), Some(ro)) = (b.shape.rank(), out.rank()) {
        if rb > ro
            || r.dims()
                .iter()
                .zip(out.dims())
                .any(|(&a, &o)| o >= 0 && a >= 0 && a != o)
        {
            return Err(ctx.err(format!(
                "input '{name}' {} does not fit the output {out}",
                b.shape
            )));
        }
    }
    Ok(())
}

/// The first operand and the [m, n] shape of op(x1) @ op(x2) for 2-D inputs x1 and x2, op
/// transposing where the optional Bool attribute says; each side is (input name, the transpose
/// attribute's name).
fn matmul_2d<'a>(
    ctx: &InferCtx<'a>,
    (n1, a1): (&str, &str),
    (n2, a2): (&str, &str),
) -> Result<(&'a TensorDesc, Shape)> {
    let x1 = ctx.req(n1)?;
    let x2 = ctx.req(n2)?;
    let t1 = opt_bool(ctx, a1, false)?;
    let t2 = opt_bool(ctx, a2, false)?;
    let (s1, s2) = (&x1.shape, &x2.shape);
    check_rank(ctx, n1, s1, 2)?;
    check_rank(ctx, n2, s2, 2)?;
    let (m, k1) = mat_dims(s1, t1);
    let (k2, n) = mat_dims(s2, t2);
    if merge_dim(k1, k2).is_none() {
        return Err(inner_mismatch(
            ctx,
            (n1, s1, t1, a1),
            k1,
            (n2, s2, t2, a2),
            k2,
        ));
    }
    Ok((x1, Shape::from(vec![m, n])))
}

/// MatMul / MatMulV2: 2-D x1 [m, k] @ x2 [k, n] with transpose_x1 / transpose_x2.
fn matmul(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (x1, out) = matmul_2d(ctx, ("x1", "transpose_x1"), ("x2", "transpose_x2"))?;
    with_bias(ctx, x1, out)
}

/// The product's output: `out` of x1's product dtype, after checking the optional bias (where
/// the prototype has one) against it.
fn with_bias(ctx: &InferCtx, x1: &TensorDesc, out: Shape) -> Result<Vec<TensorDesc>> {
    if ctx.proto.input("bias").is_some() {
        check_bias_into(ctx, "bias", ctx.input("bias")?, &out)?;
    }
    Ok(single(product_dtype(ctx, x1), out))
}

/// BatchMatMul / BatchMatMulV2: [..., m, k] @ [..., k, n] with broadcast batch dims.
fn batch_matmul(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x1 = ctx.req("x1")?;
    let x2 = ctx.req("x2")?;
    let a1 = opt_bool(ctx, "adj_x1", false)?;
    let a2 = opt_bool(ctx, "adj_x2", false)?;
    for (name, d) in [("x1", x1), ("x2", x2)] {
        if let Some(r) = d.shape.rank() {
            if r < 2 {
                return Err(ctx.err(format!(
                    "input '{name}' must have rank >= 2, got rank {r} shape {}",
                    d.shape
                )));
            }
        }
    }
    let last2 = |s: &Shape, adj: bool| -> (i64, i64) {
        match s.rank() {
            Some(r) => {
                let (a, b) = (s.0[r - 2], s.0[r - 1]);
                if adj {
                    (b, a)
                } else {
                    (a, b)
                }
            }
            None => (UNKNOWN_DIM, UNKNOWN_DIM),
        }
    };
    let (m, k1) = last2(&x1.shape, a1);
    let (k2, n) = last2(&x2.shape, a2);
    if merge_dim(k1, k2).is_none() {
        return Err(inner_mismatch(
            ctx,
            ("x1", &x1.shape, a1, "adj_x1"),
            k1,
            ("x2", &x2.shape, a2, "adj_x2"),
            k2,
        ));
    }
    let out = match (x1.shape.rank(), x2.shape.rank()) {
        (Some(r1), Some(r2)) => {
            let b1 = Shape::from(x1.shape.0[..r1 - 2].to_vec());
            let b2 = Shape::from(x2.shape.0[..r2 - 2].to_vec());
            let mut b = broadcast(&b1, &b2).map_err(|e| {
                ctx.err(format!(
                    "batch dimensions of x1 {} and x2 {} cannot be broadcast: {e}",
                    x1.shape, x2.shape
                ))
            })?;
            b.0.extend([m, n]);
            b
        }
        _ => Shape::unknown_rank(),
    };
    with_bias(ctx, x1, out)
}

/// GEMM: y = alpha * op(a) @ op(b) + beta * c, all 2-D.
fn gemm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (a, out) = matmul_2d(ctx, ("a", "transpose_a"), ("b", "transpose_b"))?;
    let c = ctx.req("c")?;
    check_bias_into(ctx, "c", Some(c), &out)?;
    check_one_element(ctx, "alpha", ctx.input("alpha")?)?;
    check_one_element(ctx, "beta", ctx.input("beta")?)?;
    let mut t = ctx.output_dtype(0);
    if t == DataType::UNDEFINED {
        t = dtype_like(ctx, 0, Some(c));
    }
    if t == DataType::UNDEFINED {
        t = product_dtype(ctx, a);
    }
    Ok(single(t, out))
}

/// Einsum: the output dims from the equation's labels; ellipsis dims broadcast.
fn einsum(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    let raw = ctx.attr_str("equation")?;
    let parsed = parse_einsum(raw).map_err(|t| {
        let eq: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
        ctx.err(format!(
            "attribute 'equation' {eq:?} has an invalid term {t:?}"
        ))
    })?;
    let eq = &parsed.text;
    let terms = &parsed.inputs;
    let dt = dtype_like(ctx, 0, xs.first().copied());
    if terms.len() != xs.len() {
        return Err(ctx.err(format!(
            "attribute 'equation' {eq:?} has {} operands, input 'x' has {} tensors",
            terms.len(),
            xs.len()
        )));
    }
    let counts = parsed.counts();
    // Label dims and the broadcast ellipsis dims.
    let mut dims: Vec<(char, i64)> = Vec::new();
    let mut ell: Option<Shape> = Some(Shape::scalar());
    for (k, (t, x)) in terms.iter().zip(&xs).enumerate() {
        let labels: Vec<char> = t.letters().collect();
        let Some(r) = x.shape.rank() else {
            if t.ellipsis {
                ell = None;
            }
            continue;
        };
        let nl = labels.len();
        if (t.ellipsis && r < nl) || (!t.ellipsis && r != nl) {
            return Err(ctx.err(format!(
                "operand {k} of equation {eq:?} has {nl} labels, but x{k} {} has rank {r}",
                x.shape
            )));
        }
        let ne = r - nl;
        let mut pos = 0usize;
        let mut assign = |c: char, d: i64| -> Result<()> {
            match dims.iter_mut().find(|(l, _)| *l == c) {
                Some(e) => {
                    e.1 = merge_dim(e.1, d).ok_or_else(|| {
                        ctx.err(format!(
                            "label '{c}' of equation {eq:?} has size {} and {d} (x{k} {})",
                            e.1, x.shape
                        ))
                    })?;
                }
                None => dims.push((c, d)),
            }
            Ok(())
        };
        for &c in &t.pre {
            assign(c, x.shape.0[pos])?;
            pos += 1;
        }
        if t.ellipsis {
            let e = Shape::from(x.shape.0[pos..pos + ne].to_vec());
            if let Some(acc) = &ell {
                ell = Some(broadcast(acc, &e).map_err(|m| {
                    ctx.err(format!(
                        "the ellipsis dims of equation {eq:?} cannot be broadcast: {m}"
                    ))
                })?);
            }
            pos += ne;
        }
        for &c in &t.post {
            assign(c, x.shape.0[pos])?;
            pos += 1;
        }
    }
    let out_term = parsed.output_term();
    let mut out = Vec::new();
    let dim_of = |c: char| -> Result<i64> {
        if !counts.iter().any(|(l, _)| *l == c) {
            return Err(ctx.err(format!(
                "output label '{c}' of equation {eq:?} appears in no operand"
            )));
        }
        Ok(dims
            .iter()
            .find(|(l, _)| *l == c)
            .map_or(UNKNOWN_DIM, |e| e.1))
    };
    for &c in &out_term.pre {
        out.push(dim_of(c)?);
    }
    if out_term.ellipsis {
        match &ell {
            Some(e) => out.extend_from_slice(&e.0),
            None => {
                for &c in &out_term.post {
                    dim_of(c)?;
                }
                return Ok(single(dt, Shape::unknown_rank()));
            }
        }
    }
    for &c in &out_term.post {
        out.push(dim_of(c)?);
    }
    Ok(single(dt, Shape::from(out)))
}

/// MatrixDeterminant: x [..., M, M] -> [...].
fn matrix_determinant(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r < 2 {
        return Err(ctx.err(format!(
            "input 'x' must have rank >= 2 ([..., M, M]), got rank {r} shape {}",
            x.shape
        )));
    }
    let (a, b) = (x.shape.0[r - 2], x.shape.0[r - 1]);
    if merge_dim(a, b).is_none() {
        return Err(ctx.err(format!(
            "input 'x' {} must hold square matrices, got {a} x {b}",
            x.shape
        )));
    }
    Ok(single(dt, Shape::from_slice(&x.shape.0[..r - 2])))
}
