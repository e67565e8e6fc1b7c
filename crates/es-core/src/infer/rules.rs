//! Built-in inference rules, by operator type.
//!
//! Conventions shared by every rule:
//! - a dim of -1 is unknown and a shape of `[-2]` has unknown rank; rules propagate both and
//!   never fail because something is unknown, only because something known is wrong;
//! - value-dependent shapes (Reshape's `shape`, Transpose's `perm`, ...) are resolved when the
//!   value comes from a Const node, otherwise the rank is kept where it is knowable;
//! - errors name the input or attribute and show expected and actual values; [`InferCtx::err`]
//!   prefixes the operator type and node name;
//! - output dtypes come from the type variables; where the prototype gives an explicit list
//!   instead, the dtype of the input the output follows is used when the list allows it.

use super::{broadcast, InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The built-in rule of an operator type, if it has one.
pub fn builtin_rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "Data" | "RefData" => data,
        "Variable" => variable,
        "Const" | "Constant" => constant,
        "Add" | "Sub" | "Mul" | "Div" | "RealDiv" | "Maximum" | "Minimum" => elementwise_binary,
        "Neg" | "Relu" | "Relu6" | "Sigmoid" | "Exp" | "Sqrt" | "Identity" | "TensorMove"
        | "LogicalNot" | "ZerosLike" => unary,
        "Cast" => cast,
        "MatMul" | "MatMulV2" => matmul,
        "BatchMatMul" | "BatchMatMulV2" => batch_matmul,
        "GEMM" => gemm,
        "FusedMulAdd" => fused_mul_add,
        "Reshape" => reshape,
        "Transpose" => transpose,
        "Unsqueeze" => unsqueeze,
        "Squeeze" => squeeze,
        "ConcatV2" | "ConcatD" | "Concat" => concat,
        "Pack" => pack,
        "Split" | "SplitD" => split,
        "SplitV" => split_v,
        "IdentityN" => identity_n,
        "ReduceSum" | "ReduceSumD" => reduce_sum,
        "Fill" => fill,
        "Shape" => shape_op,
        "BroadcastTo" => broadcast_to,
        "Tile" => tile,
        "TopKV2" => top_k,
        "ScatterElements" => scatter_elements,
        "GatherElements" => gather_elements,
        "MaskedFill" => masked_fill,
        "Conv2D" => conv2d,
        "BatchNorm" => batch_norm,
        "If" | "Case" => branch_op,
        "While" => while_op,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The shape of an optional description; unknown rank when absent.
fn shape_of(d: Option<&TensorDesc>) -> Shape {
    d.map(|d| d.shape.clone())
        .unwrap_or_else(Shape::unknown_rank)
}

/// The dtype of output `out_ir`: its type variable's binding, else the dtype of `like` when the
/// output's type list allows it (or `like` is UNDEFINED), else UNDEFINED.
pub(super) fn dtype_like(ctx: &InferCtx, out_ir: usize, like: Option<&TensorDesc>) -> DataType {
    let t = ctx.output_dtype(out_ir);
    if t != DataType::UNDEFINED {
        return t;
    }
    let Some(d) = like else {
        return DataType::UNDEFINED;
    };
    match ctx
        .proto
        .outputs
        .get(out_ir)
        .and_then(|o| ctx.proto.allowed(&o.ty))
    {
        Some(list) if !list.contains(&d.dtype) => DataType::UNDEFINED,
        _ => d.dtype,
    }
}

/// Whether output `out_ir` may have dtype `t` (true when the prototype does not say).
pub(super) fn output_allows(ctx: &InferCtx, out_ir: usize, t: DataType) -> bool {
    match ctx
        .proto
        .outputs
        .get(out_ir)
        .and_then(|o| ctx.proto.allowed(&o.ty))
    {
        Some(list) => list.contains(&t),
        None => true,
    }
}

/// One output description.
pub(super) fn single(dtype: DataType, shape: Shape) -> Vec<TensorDesc> {
    vec![TensorDesc::new(dtype, shape)]
}

pub(super) fn opt_bool(ctx: &InferCtx, name: &str, default: bool) -> Result<bool> {
    match ctx.attrs.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| ctx.err(format!("attribute '{name}' must be a Bool, got {v}"))),
    }
}

pub(super) fn opt_int(ctx: &InferCtx, name: &str, default: i64) -> Result<i64> {
    match ctx.attrs.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_int()
            .ok_or_else(|| ctx.err(format!("attribute '{name}' must be an Int, got {v}"))),
    }
}

pub(super) fn opt_str<'a>(ctx: &InferCtx<'a>, name: &str, default: &'a str) -> Result<&'a str> {
    match ctx.attrs.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_str()
            .ok_or_else(|| ctx.err(format!("attribute '{name}' must be a String, got {v}"))),
    }
}

pub(super) fn opt_ints<'a>(
    ctx: &InferCtx<'a>,
    name: &str,
    default: &'a [i64],
) -> Result<&'a [i64]> {
    match ctx.attrs.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_list_int()
            .ok_or_else(|| ctx.err(format!("attribute '{name}' must be a ListInt, got {v}"))),
    }
}

/// A dtype attribute: GE stores them as Int (`Cast.dst_type`, `Shape.dtype`); Type is accepted too.
pub(super) fn attr_dtype(
    ctx: &InferCtx,
    name: &str,
    default: Option<DataType>,
) -> Result<DataType> {
    match ctx.attrs.get(name) {
        None => default.ok_or_else(|| ctx.err(format!("attribute '{name}' is not set"))),
        Some(AttrValue::Type(t)) => Ok(*t),
        Some(AttrValue::Int(v)) => DataType::from_value(*v).map_err(|_| {
            ctx.err(format!(
                "attribute '{name}' is {v}, which is not a data type value"
            ))
        }),
        Some(other) => Err(ctx.err(format!(
            "attribute '{name}' must be a data type (Int or Type), got {other}"
        ))),
    }
}

/// Two dims that must be equal: the known one of the two, or None when both are known and differ.
pub(super) fn merge_dim(a: i64, b: i64) -> Option<i64> {
    if a == UNKNOWN_DIM {
        Some(b)
    } else if b == UNKNOWN_DIM || a == b {
        Some(a)
    } else {
        None
    }
}

/// Product of dims, None when one is unknown (or it overflows).
pub(super) fn product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(
        1i64,
        |acc, &d| if d < 0 { None } else { acc.checked_mul(d) },
    )
}

/// Broadcast with an error that names both inputs.
fn bcast(ctx: &InferCtx, a: (&str, &Shape), b: (&str, &Shape)) -> Result<Shape> {
    broadcast(a.1, b.1).map_err(|e| {
        ctx.err(format!(
            "inputs '{}' {} and '{}' {} cannot be broadcast: {e}",
            a.0, a.1, b.0, b.1
        ))
    })
}

/// The integer values of a constant input that must hold exactly one value (scalar or [1]).
pub(super) fn const_scalar(ctx: &InferCtx, name: &str) -> Result<Option<i64>> {
    match ctx.const_ints(name)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(v) => Err(ctx.err(format!(
            "input '{name}' must hold one value, got {} values {v:?}",
            v.len()
        ))),
    }
}

/// Checks that a known-rank input is 1-D; returns its length when known.
pub(super) fn vector_len(
    ctx: &InferCtx,
    name: &str,
    d: Option<&TensorDesc>,
) -> Result<Option<i64>> {
    let Some(d) = d else { return Ok(None) };
    match d.shape.rank() {
        None => Ok(None),
        Some(1) => Ok(if d.shape.0[0] >= 0 {
            Some(d.shape.0[0])
        } else {
            None
        }),
        Some(r) => Err(ctx.err(format!(
            "input '{name}' must be 1-D, got rank {r} shape {}",
            d.shape
        ))),
    }
}

/// The largest rank a rule builds from a length it reads off a description (a shape input of
/// shape `[n]`); beyond it the rank is reported unknown rather than allocating `n` dims.
const MAX_RANK: i64 = 1024;

/// `n` unknown dims, or unknown rank when `n` is implausibly large.
pub(super) fn unknown_dims_of(n: i64) -> Shape {
    if (0..=MAX_RANK).contains(&n) {
        Shape::unknown_dims(n as usize)
    } else {
        Shape::unknown_rank()
    }
}

/// Checks that a static input holds exactly one element.
pub(super) fn check_one_element(ctx: &InferCtx, name: &str, d: Option<&TensorDesc>) -> Result<()> {
    if let Some(d) = d {
        if let Some(n) = d.shape.num_elements() {
            if n != 1 {
                return Err(ctx.err(format!(
                    "input '{name}' must be a scalar (one element), got shape {} with {n} elements",
                    d.shape
                )));
            }
        }
    }
    Ok(())
}

/// Checks that a known rank equals `want`.
pub(super) fn check_rank(ctx: &InferCtx, name: &str, s: &Shape, want: usize) -> Result<()> {
    match s.rank() {
        Some(r) if r != want => Err(ctx.err(format!(
            "input '{name}' must be {want}-D, got rank {r} shape {s}"
        ))),
        _ => Ok(()),
    }
}

/// Normalises a list of axes against `rank`, rejecting repeats.
fn norm_axes(
    ctx: &InferCtx,
    axes: &[i64],
    rank: usize,
    what: &str,
    allow_repeat: bool,
) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = ctx.axis(a, rank, what)?;
        if out.contains(&n) {
            if allow_repeat {
                continue;
            }
            return Err(ctx.err(format!("{what} {a} is repeated in {axes:?}")));
        }
        out.push(n);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// Data / RefData / Variable: the output is the input's description when it is connected.
fn data(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let d = match ctx.inputs.first().copied().flatten() {
        Some(d) => {
            let mut d = d.clone();
            d.attrs.clear();
            d
        }
        None => TensorDesc::default(),
    };
    Ok(vec![d; ctx.num_outputs()])
}

/// Variable: its input's description when connected, else its `value` attribute's (the
/// initial value), else unknown.
fn variable(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    if ctx.inputs.first().copied().flatten().is_none() {
        if let Some(t) = ctx.attrs.get("value").and_then(AttrValue::as_tensor) {
            if !t.data.is_empty() {
                let mut d = t.desc.clone();
                d.attrs.clear();
                return Ok(vec![d; ctx.num_outputs()]);
            }
        }
    }
    data(ctx)
}

/// Const: the description of the `value` tensor.
fn constant(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let v = ctx.attr("value")?;
    let t = v
        .as_tensor()
        .ok_or_else(|| ctx.err(format!("attribute 'value' must be a Tensor, got {v}")))?;
    let mut d = t.desc.clone();
    d.attrs.clear();
    Ok(vec![d])
}

// ---------------------------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------------------------

/// Output = broadcast of the two inputs; dtype from the type variable.
fn elementwise_binary(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let a = ctx.inputs.first().copied().flatten();
    let b = ctx.inputs.get(1).copied().flatten();
    let na = ctx
        .proto
        .inputs
        .first()
        .map(|d| d.name.as_str())
        .unwrap_or("x1");
    let nb = ctx
        .proto
        .inputs
        .get(1)
        .map(|d| d.name.as_str())
        .unwrap_or("x2");
    let s = bcast(ctx, (na, &shape_of(a)), (nb, &shape_of(b)))?;
    Ok(single(dtype_like(ctx, 0, a), s))
}

/// Output has the input's shape; dtype from the type variable.
fn unary(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.inputs.first().copied().flatten();
    Ok(single(dtype_like(ctx, 0, x), shape_of(x)))
}

/// Cast: the input's shape, dtype `dst_type`.
fn cast(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let t = attr_dtype(ctx, "dst_type", None)?;
    if t == DataType::UNDEFINED || !output_allows(ctx, 0, t) {
        return Err(ctx.err(format!(
            "attribute 'dst_type' is {t}, which output 'y' does not allow"
        )));
    }
    Ok(single(t, x.shape.clone()))
}

/// FusedMulAdd: y = x1 * x2 + x3, broadcast.
fn fused_mul_add(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x1 = ctx.req("x1")?;
    let x2 = ctx.req("x2")?;
    let x3 = ctx.req("x3")?;
    let s = bcast(ctx, ("x1", &x1.shape), ("x2", &x2.shape))?;
    let s = broadcast(&s, &x3.shape).map_err(|e| {
        ctx.err(format!(
            "x1 * x2 {s} and input 'x3' {} cannot be broadcast: {e}",
            x3.shape
        ))
    })?;
    Ok(single(dtype_like(ctx, 0, Some(x1)), s))
}

/// MaskedFill: x where mask is false, value elsewhere; shape = broadcast(x, mask).
fn masked_fill(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let mask = ctx.req("mask")?;
    check_one_element(ctx, "value", ctx.input("value")?)?;
    let s = bcast(ctx, ("x", &x.shape), ("mask", &mask.shape))?;
    Ok(single(dtype_like(ctx, 0, Some(x)), s))
}

// ---------------------------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------------------------

/// Output dtype of a matrix product: the bound type, else x's dtype, with int8/int4 giving int32.
fn product_dtype(ctx: &InferCtx, x: &TensorDesc) -> DataType {
    let t = ctx.output_dtype(0);
    if t != DataType::UNDEFINED {
        return t;
    }
    if matches!(x.dtype, DataType::INT8 | DataType::INT4) && output_allows(ctx, 0, DataType::INT32)
    {
        return DataType::INT32;
    }
    dtype_like(ctx, 0, Some(x))
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

/// MatMul / MatMulV2: 2-D x1 [m, k] @ x2 [k, n] with transpose_x1 / transpose_x2.
fn matmul(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x1 = ctx.req("x1")?;
    let x2 = ctx.req("x2")?;
    let t1 = opt_bool(ctx, "transpose_x1", false)?;
    let t2 = opt_bool(ctx, "transpose_x2", false)?;
    check_rank(ctx, "x1", &x1.shape, 2)?;
    check_rank(ctx, "x2", &x2.shape, 2)?;
    let (m, k1) = mat_dims(&x1.shape, t1);
    let (k2, n) = mat_dims(&x2.shape, t2);
    if merge_dim(k1, k2).is_none() {
        return Err(inner_mismatch(
            ctx,
            ("x1", &x1.shape, t1, "transpose_x1"),
            k1,
            ("x2", &x2.shape, t2, "transpose_x2"),
            k2,
        ));
    }
    let out = Shape::from(vec![m, n]);
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
    if ctx.proto.input("bias").is_some() {
        check_bias_into(ctx, "bias", ctx.input("bias")?, &out)?;
    }
    Ok(single(product_dtype(ctx, x1), out))
}

/// GEMM: y = alpha * op(a) @ op(b) + beta * c, all 2-D.
fn gemm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let a = ctx.req("a")?;
    let b = ctx.req("b")?;
    let c = ctx.req("c")?;
    let ta = opt_bool(ctx, "transpose_a", false)?;
    let tb = opt_bool(ctx, "transpose_b", false)?;
    check_rank(ctx, "a", &a.shape, 2)?;
    check_rank(ctx, "b", &b.shape, 2)?;
    let (m, k1) = mat_dims(&a.shape, ta);
    let (k2, n) = mat_dims(&b.shape, tb);
    if merge_dim(k1, k2).is_none() {
        return Err(inner_mismatch(
            ctx,
            ("a", &a.shape, ta, "transpose_a"),
            k1,
            ("b", &b.shape, tb, "transpose_b"),
            k2,
        ));
    }
    let out = Shape::from(vec![m, n]);
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

// ---------------------------------------------------------------------------------------------
// Shape manipulation
// ---------------------------------------------------------------------------------------------

/// Resolves a Reshape target `spec` against the dims it replaces (`src`, None when unknown):
/// 0 copies the dim at the same position, -1 is inferred from the element count.
fn resolve_reshape(
    ctx: &InferCtx,
    src: Option<&[i64]>,
    spec: &[i64],
    x: &Shape,
) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(spec.len());
    let mut infer_at: Option<usize> = None;
    for (i, &v) in spec.iter().enumerate() {
        match v {
            -1 => {
                if let Some(j) = infer_at {
                    return Err(ctx.err(format!(
                        "input 'shape' {spec:?} has more than one -1 (at {j} and {i})"
                    )));
                }
                infer_at = Some(i);
                out.push(UNKNOWN_DIM);
            }
            0 => match src {
                Some(s) => match s.get(i) {
                    Some(&d) => out.push(d),
                    None => {
                        return Err(ctx.err(format!(
                            "input 'shape' {spec:?} has 0 (copy) at index {i}, but x {x} has no such dim"
                        )))
                    }
                },
                None => out.push(UNKNOWN_DIM),
            },
            v if v < -1 => {
                return Err(ctx.err(format!("input 'shape' {spec:?} has invalid value {v} at index {i}")))
            }
            v => out.push(v),
        }
    }
    let total = src.and_then(product);
    match infer_at {
        Some(i) => {
            let rest: Vec<i64> = out
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, &d)| d)
                .collect();
            if let (Some(t), Some(r)) = (total, product(&rest)) {
                if r == 0 {
                    return Err(ctx.err(format!(
                        "input 'shape' {spec:?}: cannot infer the -1 dim when the other dims hold 0 elements (x {x})"
                    )));
                }
                if t % r != 0 {
                    return Err(ctx.err(format!(
                        "element count mismatch: x {x} has {t} elements, which is not a multiple of {r} (shape {spec:?})"
                    )));
                }
                out[i] = t / r;
            }
        }
        None => {
            if let (Some(t), Some(r)) = (total, product(&out)) {
                if t != r {
                    return Err(ctx.err(format!(
                        "element count mismatch: x {x} has {t} elements, shape {spec:?} has {r}"
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// Reshape: x to the constant `shape`; `axis` / `num_axes` (Caffe) reshape a range of dims.
fn reshape(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let shape_in = ctx.req("shape")?;
    let axis = opt_int(ctx, "axis", 0)?;
    let num_axes = opt_int(ctx, "num_axes", -1)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let spec_len = vector_len(ctx, "shape", Some(shape_in))?;
    let spec = ctx.const_ints("shape")?;
    if let (Some(v), Some(n)) = (&spec, spec_len) {
        if v.len() as i64 != n {
            return Err(ctx.err(format!(
                "input 'shape' has {} values but shape {}",
                v.len(),
                shape_in.shape
            )));
        }
    }
    let full = axis == 0 && num_axes == -1;
    if num_axes < -1 {
        return Err(ctx.err(format!(
            "attribute 'num_axes' must be >= -1, got {num_axes}"
        )));
    }
    // The range [start, end) of x's dims that is replaced.
    let range = match x.shape.rank() {
        Some(r) => {
            let r = r as i64;
            let start = if axis < 0 { axis + r + 1 } else { axis };
            if start < 0 || start > r {
                return Err(ctx.err(format!(
                    "attribute 'axis' {axis} is out of range for x {} (rank {r})",
                    x.shape
                )));
            }
            let end = if num_axes == -1 {
                r
            } else {
                start.saturating_add(num_axes)
            };
            if end > r {
                return Err(ctx.err(format!(
                    "attributes 'axis' {axis} and 'num_axes' {num_axes} reach past the rank {r} of x {}",
                    x.shape
                )));
            }
            Some((start as usize, end as usize))
        }
        None => None,
    };
    let new_dims: Option<Vec<i64>> = match &spec {
        Some(v) => {
            let src = range.map(|(s, e)| &x.shape.0[s..e]);
            Some(resolve_reshape(ctx, src, v, &x.shape)?)
        }
        None => spec_len.map(|n| unknown_dims_of(n).to_vec()),
    };
    let out = match (new_dims, range) {
        (Some(d), _) if full => Shape::from(d),
        (Some(d), Some((s, e))) => {
            let mut o = x.shape.0[..s].to_vec();
            o.extend(d);
            o.extend_from_slice(&x.shape.0[e..]);
            Shape::from(o)
        }
        _ => Shape::unknown_rank(),
    };
    Ok(single(dt, out))
}

/// Transpose: y[i] = x[perm[i]].
fn transpose(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let perm_in = ctx.req("perm")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let plen = vector_len(ctx, "perm", Some(perm_in))?;
    if let (Some(p), Some(r)) = (plen, x.shape.rank()) {
        if p != r as i64 {
            return Err(ctx.err(format!(
                "input 'perm' has {p} values, x {} has rank {r}",
                x.shape
            )));
        }
    }
    let out = match ctx.const_ints("perm")? {
        Some(perm) => {
            let r = x.shape.rank().unwrap_or(perm.len());
            if perm.len() != r {
                return Err(ctx.err(format!(
                    "input 'perm' {perm:?} has {} values, x {} has rank {r}",
                    perm.len(),
                    x.shape
                )));
            }
            let mut seen = vec![false; r];
            let mut o = Vec::with_capacity(r);
            for &p in &perm {
                let a = ctx.axis(p, r, "perm value")?;
                if r == 0 || seen[a] {
                    return Err(ctx.err(format!(
                        "input 'perm' {perm:?} is not a permutation of 0..{r}"
                    )));
                }
                seen[a] = true;
                o.push(if x.shape.is_unknown_rank() {
                    UNKNOWN_DIM
                } else {
                    x.shape.0[a]
                });
            }
            Shape::from(o)
        }
        None => match (x.shape.rank(), plen) {
            (Some(r), _) => Shape::unknown_dims(r),
            (None, Some(p)) => unknown_dims_of(p),
            _ => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Unsqueeze: inserts dims of 1 at `axes` (positions in the output).
fn unsqueeze(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let axes = opt_ints(ctx, "axes", &[])?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let out_rank = r + axes.len();
    let pos = norm_axes(ctx, axes, out_rank, "attribute 'axes' value", false)?;
    let mut src = x.shape.0.iter();
    let mut out = Vec::with_capacity(out_rank);
    for i in 0..out_rank {
        if pos.contains(&i) {
            out.push(1);
        } else {
            out.push(src.next().copied().unwrap_or(UNKNOWN_DIM));
        }
    }
    Ok(single(dt, Shape::from(out)))
}

/// Squeeze: removes the dims of 1 at `axis` (all dims of 1 when empty).
fn squeeze(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let name = if ctx.attrs.contains_key("axis") {
        "axis"
    } else {
        "axes"
    };
    let axes = opt_ints(ctx, name, &[])?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let dims = &x.shape.0;
    if axes.is_empty() {
        if dims.contains(&UNKNOWN_DIM) {
            return Ok(single(dt, Shape::unknown_rank()));
        }
        return Ok(single(
            dt,
            Shape::from(
                dims.iter()
                    .copied()
                    .filter(|&d| d != 1)
                    .collect::<Vec<i64>>(),
            ),
        ));
    }
    if r == 0 {
        return Err(ctx.err(format!(
            "cannot squeeze a scalar x (attribute '{name}' {axes:?})"
        )));
    }
    let pos = norm_axes(ctx, axes, r, &format!("attribute '{name}' value"), true)?;
    for &p in &pos {
        if dims[p] != 1 && dims[p] != UNKNOWN_DIM {
            return Err(ctx.err(format!(
                "cannot squeeze axis {p} of x {}: the dim is {}, not 1",
                x.shape, dims[p]
            )));
        }
    }
    let out: Vec<i64> = dims
        .iter()
        .enumerate()
        .filter(|(i, _)| !pos.contains(i))
        .map(|(_, &d)| d)
        .collect();
    Ok(single(dt, Shape::from(out)))
}

/// ConcatV2 (constant `concat_dim` input) / ConcatD (`concat_dim` attribute).
fn concat(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    if xs.is_empty() {
        return Err(ctx.err("input 'x' needs at least one tensor"));
    }
    let axis: Option<i64> = if ctx.proto.input("concat_dim").is_some() {
        check_one_element(ctx, "concat_dim", ctx.input("concat_dim")?)?;
        const_scalar(ctx, "concat_dim")?
    } else {
        Some(ctx.attr_int("concat_dim")?)
    };
    let dt = dtype_like(ctx, 0, xs.first().copied());
    // Rank: every known-rank input must agree.
    let mut rank: Option<(usize, usize)> = None; // (rank, index of the first input having it)
    for (i, d) in xs.iter().enumerate() {
        if let Some(r) = d.shape.rank() {
            match rank {
                None => rank = Some((r, i)),
                Some((r0, i0)) if r0 != r => {
                    let (s0, s1) = (&xs[i0].shape, &d.shape);
                    let m = format!("x{i0} {s0} has rank {r0}, x{i} {s1} has rank {r}");
                    return Err(ctx.err(format!("inputs must have the same rank: {m}")));
                }
                _ => {}
            }
        }
    }
    let Some((r, _)) = rank else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r == 0 {
        return Err(ctx.err("cannot concatenate scalars (inputs 'x' have rank 0)"));
    }
    let Some(axis) = axis else {
        if xs.len() == 1 {
            return Ok(single(dt, xs[0].shape.clone()));
        }
        return Ok(single(dt, Shape::unknown_dims(r)));
    };
    let a = ctx.axis(axis, r, "concat_dim")?;
    let mut out = vec![UNKNOWN_DIM; r];
    let mut first: Vec<Option<usize>> = vec![None; r];
    let mut sum: Option<i64> = Some(0);
    for (i, d) in xs.iter().enumerate() {
        if d.shape.is_unknown_rank() {
            sum = None;
            continue;
        }
        for (j, &v) in d.shape.0.iter().enumerate() {
            if j == a {
                sum = match (sum, v) {
                    (Some(s), v) if v >= 0 => s.checked_add(v),
                    _ => None,
                };
                continue;
            }
            match merge_dim(out[j], v) {
                Some(m) => {
                    if out[j] == UNKNOWN_DIM && v != UNKNOWN_DIM {
                        first[j] = Some(i);
                    }
                    out[j] = m;
                }
                None => {
                    let i0 = first[j].unwrap_or(0);
                    return Err(ctx.err(format!(
                        "x{i0} {} and x{i} {} differ at dim {j} ({} vs {v}), which is not the concat dim {a}",
                        xs[i0].shape, d.shape, out[j]
                    )));
                }
            }
        }
    }
    out[a] = sum.unwrap_or(UNKNOWN_DIM);
    Ok(single(dt, Shape::from(out)))
}

/// The merged shape of inputs that must all have the same shape (Pack).
fn merge_same_shapes(ctx: &InferCtx, xs: &[&TensorDesc]) -> Result<Shape> {
    let mut acc = Shape::unknown_rank();
    let mut from = 0usize;
    for (i, d) in xs.iter().enumerate() {
        if d.shape.is_unknown_rank() {
            continue;
        }
        if acc.is_unknown_rank() {
            acc = d.shape.clone();
            from = i;
            continue;
        }
        let mismatch = || {
            ctx.err(format!(
                "inputs must have the same shape: x{from} {} vs x{i} {}",
                xs[from].shape, d.shape
            ))
        };
        if acc.0.len() != d.shape.0.len() {
            return Err(mismatch());
        }
        for j in 0..acc.0.len() {
            acc.0[j] = merge_dim(acc.0[j], d.shape.0[j]).ok_or_else(mismatch)?;
        }
    }
    Ok(acc)
}

/// Pack: stacks N same-shape tensors along a new axis.
fn pack(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    if xs.is_empty() {
        return Err(ctx.err("input 'x' needs at least one tensor"));
    }
    let axis = opt_int(ctx, "axis", 0)?;
    let dt = dtype_like(ctx, 0, xs.first().copied());
    let s = merge_same_shapes(ctx, &xs)?;
    let Some(r) = s.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let a = ctx.axis(axis, r + 1, "attribute 'axis'")?;
    let mut out = s.0;
    out.insert(a, xs.len() as i64);
    Ok(single(dt, Shape::from(out)))
}

/// Split (constant `split_dim` input) / SplitD (`split_dim` attribute): num_split equal parts.
fn split(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let num = ctx.attr_int("num_split")?;
    if num < 1 {
        return Err(ctx.err(format!("attribute 'num_split' must be >= 1, got {num}")));
    }
    let n_out = ctx.num_outputs();
    if n_out as i64 != num {
        return Err(ctx.err(format!(
            "attribute 'num_split' is {num} but the node has {n_out} outputs 'y'"
        )));
    }
    let axis: Option<i64> = if ctx.proto.input("split_dim").is_some() {
        check_one_element(ctx, "split_dim", ctx.input("split_dim")?)?;
        const_scalar(ctx, "split_dim")?
    } else {
        Some(ctx.attr_int("split_dim")?)
    };
    let dt = dtype_like(ctx, 0, Some(x));
    let shape = match (x.shape.rank(), axis) {
        (None, _) => Shape::unknown_rank(),
        (Some(r), None) => Shape::unknown_dims(r),
        (Some(r), Some(axis)) => {
            if r == 0 {
                return Err(ctx.err("cannot split a scalar x"));
            }
            let a = ctx.axis(axis, r, "split_dim")?;
            let mut o = x.shape.0.clone();
            let d = o[a];
            if d >= 0 {
                if d % num != 0 {
                    return Err(ctx.err(format!(
                        "dim {a} of x {} is {d}, which num_split {num} does not divide",
                        x.shape
                    )));
                }
                o[a] = d / num;
            }
            Shape::from(o)
        }
    };
    Ok(vec![TensorDesc::new(dt, shape); n_out])
}

/// SplitV: parts of the sizes in `size_splits` (one may be -1) along `split_dim`.
fn split_v(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let num = ctx.attr_int("num_split")?;
    if num < 1 {
        return Err(ctx.err(format!("attribute 'num_split' must be >= 1, got {num}")));
    }
    let n_out = ctx.num_outputs();
    if n_out as i64 != num {
        return Err(ctx.err(format!(
            "attribute 'num_split' is {num} but the node has {n_out} outputs 'y'"
        )));
    }
    let n = n_out;
    let slen = vector_len(ctx, "size_splits", ctx.input("size_splits")?)?;
    if let Some(l) = slen {
        if l != num {
            return Err(ctx.err(format!(
                "input 'size_splits' has {l} values, num_split is {num}"
            )));
        }
    }
    check_one_element(ctx, "split_dim", ctx.input("split_dim")?)?;
    let axis = const_scalar(ctx, "split_dim")?;
    let sizes = ctx.const_ints("size_splits")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(vec![TensorDesc::new(dt, Shape::unknown_rank()); n]);
    };
    if r == 0 {
        return Err(ctx.err("cannot split a scalar x"));
    }
    let Some(axis) = axis else {
        return Ok(vec![TensorDesc::new(dt, Shape::unknown_dims(r)); n]);
    };
    let a = ctx.axis(axis, r, "split_dim")?;
    let dim = x.shape.0[a];
    let parts: Vec<i64> = match sizes {
        None => vec![UNKNOWN_DIM; n],
        Some(mut s) => {
            if s.len() != n {
                return Err(ctx.err(format!(
                    "input 'size_splits' {s:?} has {} values, num_split is {num}",
                    s.len()
                )));
            }
            let mut infer_at = None;
            for (i, &v) in s.iter().enumerate() {
                if v < -1 {
                    return Err(ctx.err(format!(
                        "input 'size_splits' {s:?} has invalid size {v} at index {i}"
                    )));
                }
                if v == -1 {
                    if infer_at.is_some() {
                        return Err(
                            ctx.err(format!("input 'size_splits' {s:?} has more than one -1"))
                        );
                    }
                    infer_at = Some(i);
                }
            }
            let known: i64 = s
                .iter()
                .filter(|&&v| v >= 0)
                .fold(0i64, |a, &v| a.saturating_add(v));
            if dim >= 0 {
                match infer_at {
                    Some(i) => {
                        if known > dim {
                            return Err(ctx.err(format!(
                                "input 'size_splits' {s:?} sums to {known}, more than dim {a} of x {} ({dim})",
                                x.shape
                            )));
                        }
                        s[i] = dim - known;
                    }
                    None => {
                        if known != dim {
                            return Err(ctx.err(format!(
                                "input 'size_splits' {s:?} sums to {known}, but dim {a} of x {} is {dim}",
                                x.shape
                            )));
                        }
                    }
                }
            }
            s
        }
    };
    Ok(parts
        .into_iter()
        .map(|p| {
            let mut o = x.shape.0.clone();
            o[a] = p;
            TensorDesc::new(dt, Shape::from(o))
        })
        .collect())
}

/// IdentityN: every output is its input.
fn identity_n(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs: Vec<&TensorDesc> = ctx.inputs.iter().filter_map(|d| *d).collect();
    if xs.len() != ctx.num_outputs() {
        return Err(ctx.err(format!(
            "the node has {} inputs 'x' but {} outputs 'y'; they must match",
            xs.len(),
            ctx.num_outputs()
        )));
    }
    Ok(xs
        .iter()
        .map(|d| TensorDesc::new(d.dtype, d.shape.clone()))
        .collect())
}

/// ReduceSum (constant `axes` input) / ReduceSumD (`axes` attribute).
fn reduce_sum(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let keep = opt_bool(ctx, "keep_dims", false)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let by_input = ctx.proto.input("axes").is_some();
    let (axes, axes_len): (Option<Vec<i64>>, Option<i64>) = if by_input {
        let l = match ctx.input("axes")? {
            Some(d) if d.shape.is_scalar() => Some(1),
            d => vector_len(ctx, "axes", d)?,
        };
        (ctx.const_ints("axes")?, l)
    } else {
        let a = opt_ints(ctx, "axes", &[])?.to_vec();
        let l = a.len() as i64;
        (Some(a), Some(l))
    };
    // Empty axes: ReduceSum's noop_with_empty_axes (default true: identity, as TensorFlow's Sum);
    // ReduceSumD reduces every dim.
    let empty_is_noop = if by_input {
        opt_bool(ctx, "noop_with_empty_axes", true)?
    } else {
        false
    };
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let dims = &x.shape.0;
    let axes = match axes {
        Some(a) => a,
        None if axes_len == Some(0) => Vec::new(),
        None => {
            let out = if keep {
                Shape::from(
                    dims.iter()
                        .map(|&d| if d == 1 { 1 } else { UNKNOWN_DIM })
                        .collect::<Vec<i64>>(),
                )
            } else if r == 0 {
                Shape::scalar()
            } else {
                Shape::unknown_rank()
            };
            return Ok(single(dt, out));
        }
    };
    let pos: Vec<usize> = if axes.is_empty() {
        if empty_is_noop {
            return Ok(single(dt, x.shape.clone()));
        }
        (0..r).collect()
    } else {
        let what = if by_input {
            "input 'axes' value"
        } else {
            "attribute 'axes' value"
        };
        norm_axes(ctx, &axes, r, what, true)?
    };
    let out: Vec<i64> = if keep {
        dims.iter()
            .enumerate()
            .map(|(i, &d)| if pos.contains(&i) { 1 } else { d })
            .collect()
    } else {
        dims.iter()
            .enumerate()
            .filter(|(i, _)| !pos.contains(i))
            .map(|(_, &d)| d)
            .collect()
    };
    Ok(single(dt, Shape::from(out)))
}

/// Fill: a tensor of shape `dims` filled with the scalar `value`.
fn fill(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dims_in = ctx.req("dims")?;
    let value = ctx.req("value")?;
    check_one_element(ctx, "value", Some(value))?;
    let len = vector_len(ctx, "dims", Some(dims_in))?;
    let dt = dtype_like(ctx, 0, Some(value));
    let out = match ctx.const_ints("dims")? {
        Some(v) => {
            if let Some((i, d)) = v.iter().enumerate().find(|(_, &d)| d < 0) {
                return Err(ctx.err(format!(
                    "input 'dims' {v:?} has negative dim {d} at index {i}"
                )));
            }
            Shape::from(v)
        }
        None => match len {
            Some(n) => unknown_dims_of(n),
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Shape: the 1-D shape of x, dtype from `dtype` (int32 or int64).
fn shape_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let t = attr_dtype(ctx, "dtype", Some(DataType::INT32))?;
    if !matches!(t, DataType::INT32 | DataType::INT64) {
        return Err(ctx.err(format!(
            "attribute 'dtype' must be DT_INT32 or DT_INT64, got {t}"
        )));
    }
    let n = x.shape.rank().map(|r| r as i64).unwrap_or(UNKNOWN_DIM);
    Ok(single(t, Shape::from(vec![n])))
}

/// BroadcastTo: x broadcast to the constant `shape`.
fn broadcast_to(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let len = vector_len(ctx, "shape", Some(ctx.req("shape")?))?;
    let dt = dtype_like(ctx, 0, Some(x));
    let xr = x.shape.rank();
    if let (Some(xr), Some(n)) = (xr, len) {
        if xr as i64 > n {
            return Err(ctx.err(format!(
                "x {} has rank {xr}, more than the {n} dims of 'shape'",
                x.shape
            )));
        }
    }
    let out = match ctx.const_ints("shape")? {
        Some(t) => {
            if let Some((i, d)) = t.iter().enumerate().find(|(_, &d)| d < 0) {
                return Err(ctx.err(format!(
                    "input 'shape' {t:?} has negative dim {d} at index {i}"
                )));
            }
            if let Some(xr) = xr {
                if xr > t.len() {
                    return Err(ctx.err(format!(
                        "x {} has rank {xr}, more than the target shape {t:?}",
                        x.shape
                    )));
                }
                let off = t.len() - xr;
                for (j, &d) in x.shape.0.iter().enumerate() {
                    if d != 1 && d != UNKNOWN_DIM && d != t[off + j] {
                        return Err(ctx.err(format!(
                            "x {} cannot be broadcast to {t:?}: dim {j} is {d}, target {}",
                            x.shape,
                            t[off + j]
                        )));
                    }
                }
            }
            Shape::from(t)
        }
        None => match len {
            Some(n) if n > MAX_RANK => Shape::unknown_rank(),
            Some(n) => {
                let n = n as usize;
                let mut o = vec![UNKNOWN_DIM; n];
                if let Some(xr) = xr {
                    // A known x dim other than 1 is the output dim.
                    for (j, &d) in x.shape.0.iter().enumerate() {
                        if d != 1 {
                            o[n - xr + j] = d;
                        }
                    }
                }
                Shape::from(o)
            }
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Tile: x repeated `multiples` times per dim (x is right-aligned when `multiples` is longer).
fn tile(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let len = vector_len(ctx, "multiples", Some(ctx.req("multiples")?))?;
    let dt = dtype_like(ctx, 0, Some(x));
    let xr = x.shape.rank();
    if let (Some(xr), Some(n)) = (xr, len) {
        if (n as usize) < xr {
            return Err(ctx.err(format!(
                "input 'multiples' has {n} values, fewer than the rank {xr} of x {}",
                x.shape
            )));
        }
    }
    let out = match ctx.const_ints("multiples")? {
        Some(m) => {
            if let Some((i, v)) = m.iter().enumerate().find(|(_, &v)| v < 0) {
                return Err(ctx.err(format!(
                    "input 'multiples' {m:?} has negative value {v} at index {i}"
                )));
            }
            match xr {
                Some(xr) => {
                    if m.len() < xr {
                        return Err(ctx.err(format!(
                            "input 'multiples' {m:?} has {} values, fewer than the rank {xr} of x {}",
                            m.len(),
                            x.shape
                        )));
                    }
                    let off = m.len() - xr;
                    Shape::from(
                        m.iter()
                            .enumerate()
                            .map(|(i, &k)| {
                                let d = if i < off { 1 } else { x.shape.0[i - off] };
                                if k == 0 {
                                    0
                                } else if d < 0 {
                                    UNKNOWN_DIM
                                } else {
                                    d.checked_mul(k).unwrap_or(UNKNOWN_DIM)
                                }
                            })
                            .collect::<Vec<i64>>(),
                    )
                }
                None => Shape::from(
                    m.iter()
                        .map(|&k| if k == 0 { 0 } else { UNKNOWN_DIM })
                        .collect::<Vec<i64>>(),
                ),
            }
        }
        None => match len {
            Some(n) => unknown_dims_of(n),
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// TopKV2: the k largest (or smallest) along `dim`; values, and indices of `indices_dtype`
/// (int32 when the prototype has no such attribute).
fn top_k(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_one_element(ctx, "k", ctx.input("k")?)?;
    let k = const_scalar(ctx, "k")?;
    let dim = opt_int(ctx, "dim", -1)?;
    if let Some(k) = k {
        if k < 0 {
            return Err(ctx.err(format!("input 'k' must be >= 0, got {k}")));
        }
    }
    let shape = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(0) => return Err(ctx.err(format!("x must have rank >= 1, got shape {}", x.shape))),
        Some(r) => {
            let a = ctx.axis(dim, r, "attribute 'dim'")?;
            let mut o = x.shape.0.clone();
            if let Some(k) = k {
                if o[a] >= 0 && k > o[a] {
                    return Err(ctx.err(format!(
                        "input 'k' is {k}, more than dim {a} of x {} ({})",
                        x.shape, o[a]
                    )));
                }
                o[a] = k;
            } else {
                o[a] = UNKNOWN_DIM;
            }
            Shape::from(o)
        }
    };
    let mut out = Vec::with_capacity(ctx.num_outputs());
    for &ir in &ctx.output_ir {
        let ir = ir as usize;
        let name = ctx
            .proto
            .outputs
            .get(ir)
            .map(|o| o.name.as_str())
            .unwrap_or("");
        let t = if name == "indices" {
            let t = attr_dtype(ctx, "indices_dtype", Some(DataType::INT32))?;
            if !matches!(t, DataType::INT32 | DataType::INT64) || !output_allows(ctx, ir, t) {
                return Err(ctx.err(format!(
                    "attribute 'indices_dtype' must be DT_INT32 or DT_INT64, got {t}"
                )));
            }
            t
        } else {
            dtype_like(ctx, ir, Some(x))
        };
        out.push(TensorDesc::new(t, shape.clone()));
    }
    Ok(out)
}

/// GatherElements: output has index's shape; ranks of x and index match.
fn gather_elements(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let index = ctx.req("index")?;
    let dim = opt_int(ctx, "dim", 0)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let r = x.shape.rank().or(index.shape.rank());
    if let (Some(rx), Some(ri)) = (x.shape.rank(), index.shape.rank()) {
        if rx != ri {
            return Err(ctx.err(format!(
                "x {} and index {} must have the same rank ({rx} vs {ri})",
                x.shape, index.shape
            )));
        }
        let a = ctx.axis(dim, rx, "attribute 'dim'")?;
        for j in 0..rx {
            let (dx, di) = (x.shape.0[j], index.shape.0[j]);
            if j != a && dx >= 0 && di > dx {
                return Err(ctx.err(format!(
                    "index {} is larger than x {} at dim {j} ({di} > {dx}), which is not 'dim' {a}",
                    index.shape, x.shape
                )));
            }
        }
    } else if let Some(r) = r {
        ctx.axis(dim, r, "attribute 'dim'")?;
    }
    let out = if index.shape.is_unknown_rank() {
        match x.shape.rank() {
            Some(r) => Shape::unknown_dims(r),
            None => Shape::unknown_rank(),
        }
    } else {
        index.shape.clone()
    };
    Ok(single(dt, out))
}

/// ScatterElements: output has data's shape; indices and updates have data's rank and equal shapes.
fn scatter_elements(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let data = ctx.req("data")?;
    let indices = ctx.req("indices")?;
    let updates = ctx.req("updates")?;
    let axis = opt_int(ctx, "axis", 0)?;
    let reduction = opt_str(ctx, "reduction", "none")?;
    if !matches!(reduction, "none" | "add" | "mul" | "max" | "min") {
        return Err(ctx.err(format!(
            "attribute 'reduction' must be one of \"none\", \"add\", \"mul\", \"max\", \"min\", got {reduction:?}"
        )));
    }
    let dt = dtype_like(ctx, 0, Some(data));
    for (name, d) in [("indices", indices), ("updates", updates)] {
        if let (Some(r0), Some(r)) = (data.shape.rank(), d.shape.rank()) {
            if r0 != r {
                return Err(ctx.err(format!(
                    "input '{name}' {} must have the rank of data {} ({r} vs {r0})",
                    d.shape, data.shape
                )));
            }
        }
    }
    if let (Some(ri), Some(ru)) = (indices.shape.rank(), updates.shape.rank()) {
        let same = ri == ru
            && indices
                .shape
                .0
                .iter()
                .zip(&updates.shape.0)
                .all(|(&a, &b)| merge_dim(a, b).is_some());
        if !same {
            return Err(ctx.err(format!(
                "indices {} and updates {} must have the same shape",
                indices.shape, updates.shape
            )));
        }
    }
    if let Some(r) = data
        .shape
        .rank()
        .or(indices.shape.rank())
        .or(updates.shape.rank())
    {
        ctx.axis(axis, r, "attribute 'axis'")?;
    }
    Ok(single(dt, data.shape.clone()))
}

// ---------------------------------------------------------------------------------------------
// Neural network
// ---------------------------------------------------------------------------------------------

/// Conv2D: 4-D x and filter, each read in the layout [`layout`](super::layout) gives it (x's
/// stated format, else `data_format`; the filter's, else the one x states, else NCHW); y in x's
/// layout.
fn conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    use super::layout;
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let data_format = opt_str(ctx, "data_format", "NHWC")?;
    let xl = layout::data_layout(Some(x), data_format, layout::DATA_2D).map_err(|e| ctx.err(e))?;
    let fl =
        layout::filter_layout(Some(filter), Some(x), layout::FILTER_2D).map_err(|e| ctx.err(e))?;
    let fmt = if layout::channel_last(xl) {
        "NHWC"
    } else {
        "NCHW"
    };
    let (ni, ci, hi, wi) = if layout::channel_last(xl) {
        (0, 3, 1, 2)
    } else {
        (0, 1, 2, 3)
    };
    let four = |name: &str, v: &[i64]| -> Result<()> {
        if v.len() != 4 {
            return Err(ctx.err(format!(
                "attribute '{name}' must have 4 values ({fmt} order), got {v:?}"
            )));
        }
        Ok(())
    };
    let strides = ctx.attr_ints("strides")?;
    four("strides", strides)?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1])?;
    four("dilations", dilations)?;
    let pads = ctx.attr_ints("pads")?;
    if pads.len() != 4 {
        return Err(ctx.err(format!(
            "attribute 'pads' must have 4 values [top, bottom, left, right], got {pads:?}"
        )));
    }
    let groups = opt_int(ctx, "groups", 1)?;
    if groups < 1 {
        return Err(ctx.err(format!("attribute 'groups' must be >= 1, got {groups}")));
    }
    let (sh, sw) = (strides[hi], strides[wi]);
    let (dh, dw) = (dilations[hi], dilations[wi]);
    if sh < 1 || sw < 1 {
        return Err(ctx.err(format!(
            "attribute 'strides' {strides:?} must have H and W strides >= 1"
        )));
    }
    if dh < 1 || dw < 1 {
        return Err(ctx.err(format!(
            "attribute 'dilations' {dilations:?} must have H and W dilations >= 1"
        )));
    }
    let padding = opt_str(ctx, "padding", "")?;
    if !matches!(padding, "" | "SAME" | "VALID") {
        return Err(ctx.err(format!(
            "attribute 'padding' must be \"SAME\", \"VALID\" or empty, got {padding:?}"
        )));
    }
    if padding.is_empty() {
        if let Some(p) = pads.iter().find(|&&p| p < 0) {
            return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
        }
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    // Filter positions: out_c, in_c / groups, kh, kw.
    let (fo, fc, fh, fw) = match layout::filter_positions(fl) {
        Some(&[o, c, h, w]) => (o, c, h, w),
        _ => return Err(ctx.err(format!("input 'filter' has format {fl}"))),
    };
    let xd = |i: usize| {
        if x.shape.is_unknown_rank() {
            UNKNOWN_DIM
        } else {
            x.shape.0[i]
        }
    };
    let fd = |i: usize| {
        if filter.shape.is_unknown_rank() {
            UNKNOWN_DIM
        } else {
            filter.shape.0[i]
        }
    };
    let (n, c, h, w) = (xd(ni), xd(ci), xd(hi), xd(wi));
    let (kn, kc, kh, kw) = (fd(fo), fd(fc), fd(fh), fd(fw));
    for (what, k) in [("height", kh), ("width", kw)] {
        if k == 0 {
            return Err(ctx.err(format!(
                "filter {} ({}) has kernel {what} 0; it must be >= 1",
                filter.shape, fl
            )));
        }
    }
    if c >= 0 && kc >= 0 && i128::from(c) != i128::from(kc) * i128::from(groups) {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {c} input channels ({fmt}), filter {} ({}) has {kc} per group x groups {groups} = {}",
            x.shape,
            filter.shape,
            fl,
            i128::from(kc) * i128::from(groups)
        )));
    }
    if kn >= 0 && kn % groups != 0 {
        return Err(ctx.err(format!(
            "filter {} has {kn} output channels, which groups {groups} does not divide",
            filter.shape
        )));
    }
    if c >= 0 && c % groups != 0 {
        return Err(ctx.err(format!(
            "x {} has {c} input channels, which groups {groups} does not divide",
            x.shape
        )));
    }
    // Output size along one spatial dim, in i128 so that no attribute value can overflow.
    let out_dim = |what: &str, size: i64, k: i64, s: i64, d: i64, pad: (i64, i64)| -> Result<i64> {
        if size < 0 || (k < 0 && padding != "SAME") {
            return Ok(UNKNOWN_DIM);
        }
        let (size, k, s, d) = (
            i128::from(size),
            i128::from(k),
            i128::from(s),
            i128::from(d),
        );
        let (p0, p1) = match padding {
            "" => (i128::from(pad.0), i128::from(pad.1)),
            _ => (0, 0),
        };
        let o = if padding == "SAME" {
            (size + s - 1) / s
        } else {
            let eff = d * (k - 1) + 1;
            let padded = size + p0 + p1;
            if padded < eff {
                return Err(ctx.err(format!(
                    "output {what} would be empty: padded input {padded} ({size} + pads {p0} + {p1}) \
                     is smaller than the dilated kernel {eff}"
                )));
            }
            (padded - eff) / s + 1
        };
        i64::try_from(o).map_err(|_| ctx.err(format!("output {what} {o} is too large")))
    };
    let oh = out_dim("height", h, kh, sh, dh, (pads[0], pads[1]))?;
    let ow = out_dim("width", w, kw, sw, dw, (pads[2], pads[3]))?;
    if let Some(b) = ctx.input("bias")? {
        match b.shape.rank() {
            Some(1) if kn >= 0 && b.shape.0[0] >= 0 && b.shape.0[0] != kn => {
                return Err(ctx.err(format!(
                    "input 'bias' {} must have the {kn} output channels of filter {}",
                    b.shape, filter.shape
                )));
            }
            Some(1) | None => {}
            Some(r) => {
                return Err(ctx.err(format!(
                    "input 'bias' must be 1-D, got rank {r} shape {}",
                    b.shape
                )))
            }
        }
    }
    let out = if fmt == "NCHW" {
        vec![n, kn, oh, ow]
    } else {
        vec![n, oh, ow, kn]
    };
    Ok(vec![TensorDesc::new(
        product_dtype(ctx, x),
        Shape::from(out),
    )
    .with_format(xl)])
}

/// BatchNorm: y like x; per-channel statistics [C]; reserve_space_3 [1].
fn batch_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    let channel_last = match fmt {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'data_format' must be \"NHWC\", \"NCHW\", \"NDHWC\" or \"NCDHW\", got {other:?}"
            )))
        }
    };
    let mut c = match x.shape.rank() {
        None => UNKNOWN_DIM,
        Some(r) if r == 4 || r == 5 => {
            if channel_last {
                x.shape.0[r - 1]
            } else {
                x.shape.0[1]
            }
        }
        Some(r) => {
            return Err(ctx.err(format!(
                "x must be 4-D or 5-D, got rank {r} shape {}",
                x.shape
            )))
        }
    };
    let c_from_x = c;
    for name in ["scale", "offset", "mean", "variance"] {
        if ctx.proto.input(name).is_none() {
            continue;
        }
        let d = ctx.input(name)?;
        if let Some(len) = vector_len(ctx, name, d)? {
            c = merge_dim(c, len).ok_or_else(|| {
                ctx.err(format!(
                    "input '{name}' has {len} values, but x {} has {} channels ({fmt})",
                    x.shape,
                    if c_from_x >= 0 { c_from_x } else { c }
                ))
            })?;
        }
    }
    let stat_like = ctx.input("scale")?;
    let mut out = Vec::with_capacity(ctx.num_outputs());
    for &ir in &ctx.output_ir {
        let ir = ir as usize;
        let name = ctx
            .proto
            .outputs
            .get(ir)
            .map(|o| o.name.as_str())
            .unwrap_or("");
        let d = match name {
            "y" => TensorDesc::new(dtype_like(ctx, ir, Some(x)), x.shape.clone()),
            "reserve_space_3" => {
                TensorDesc::new(dtype_like(ctx, ir, stat_like), Shape::from(vec![1]))
            }
            _ => TensorDesc::new(dtype_like(ctx, ir, stat_like), Shape::from(vec![c])),
        };
        out.push(d);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Control flow
// ---------------------------------------------------------------------------------------------

/// If / Case: the outputs come from the branches, which the rule does not see.
fn branch_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    if ctx.proto.input("branch_index").is_some() {
        check_one_element(ctx, "branch_index", ctx.input("branch_index")?)?;
    }
    Ok(vec![TensorDesc::default(); ctx.num_outputs()])
}

/// While: the loop variables keep their descriptions.
fn while_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs: Vec<&TensorDesc> = ctx.inputs.iter().filter_map(|d| *d).collect();
    if xs.len() != ctx.num_outputs() {
        return Err(ctx.err(format!(
            "a While node has one output per input: {} inputs, {} outputs",
            xs.len(),
            ctx.num_outputs()
        )));
    }
    Ok(xs
        .iter()
        .map(|d| TensorDesc::new(d.dtype, d.shape.clone()))
        .collect())
}
