//! Inference rules of the element-wise operators: unary and binary math, comparisons, logic,
//! bit operations and shifts, activations, casts, clipping and selection.

use super::common::{
    attr_dtype, bcast, check_one_element, dtype_like, opt_bool, opt_str, out_dtype_attr,
    output_allows, outputs_are_inputs, same_as_x, single,
};
use super::{broadcast, InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "Add" | "Sub" | "Mul" | "Div" | "RealDiv" | "Maximum" | "Minimum" => elementwise_binary,
        "Neg" | "Relu" | "Relu6" | "Sigmoid" | "Exp" | "Sqrt" | "Identity" | "TensorMove"
        | "LogicalNot" | "ZerosLike" => unary,
        "Cast" => cast,
        "FusedMulAdd" => fused_mul_add,
        "IdentityN" => identity_n,
        // Same shape and dtype (or the single dtype the output allows, e.g. bool).
        "Abs" | "Acos" | "Acosh" | "Asin" | "Asinh" | "Atan" | "Atanh" | "Cos" | "Cosh" | "Sin"
        | "Sinh" | "Tan" | "Tanh" | "Ceil" | "Floor" | "Round" | "Sign" | "Reciprocal"
        | "Log1p" | "Erf" | "Softplus" | "Softsign" | "Elu" | "Selu" | "LeakyRelu"
        | "HardSigmoid" | "Gelu" | "Mish" | "Swish" | "IsNan" | "IsInf" | "Square" | "Rsqrt"
        | "Invert" | "Expm1" | "Fills" => unary,
        // Numpy broadcast of two inputs; comparisons get bool from their output list.
        "Pow" | "FloorDiv" | "FloorMod" | "Mod" | "Equal" | "NotEqual" | "Greater"
        | "GreaterEqual" | "Less" | "LessEqual" | "LogicalAnd" | "LogicalOr" | "BitwiseAnd"
        | "BitwiseOr" | "BitwiseXor" | "SquaredDifference" | "Atan2" | "DivNoNan" => {
            elementwise_binary
        }
        "Log" => log,
        "PRelu" => prelu,
        "ClipByValue" => clip_by_value,
        "Select" => select,
        "SelectV2" => select_v2,
        "Addcmul" => addcmul,
        "Bitcast" => bitcast,
        "LeftShift" | "RightShift" => shift,
        "Threshold" => same_as_x,
        "GeluV2" => gelu_v2,
        _ => return None,
    })
}

/// The shape of an optional description; unknown rank when absent.
fn shape_of(d: Option<&TensorDesc>) -> Shape {
    d.map(|d| d.shape.clone())
        .unwrap_or_else(Shape::unknown_rank)
}

/// Output = broadcast of the two inputs; dtype from the type variable.
fn elementwise_binary(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let a = ctx.inputs.first().copied().flatten();
    let b = ctx.inputs.get(1).copied().flatten();
    let na = ctx.input_name(0, "x1");
    let nb = ctx.input_name(1, "x2");
    let s = bcast(ctx, (na, &shape_of(a)), (nb, &shape_of(b)))?;
    Ok(single(dtype_like(ctx, 0, a), s))
}

/// Output has the input's shape; dtype from the type variable.
fn unary(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.inputs.first().copied().flatten();
    Ok(single(dtype_like(ctx, 0, x), shape_of(x)))
}

/// GeluV2's `approximate` values (ops-nn `activation/gelu_v2`: the tiling refuses any other).
pub const GELU_APPROXIMATIONS: &[&str] = &["none", "tanh"];

/// GeluV2: like x; `approximate` must be "none" (erf) or "tanh".
fn gelu_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let a = opt_str(ctx, "approximate", "none")?;
    if !GELU_APPROXIMATIONS.contains(&a) {
        return Err(ctx.err(format!(
            "attribute 'approximate' is {a:?}; expected \"none\" or \"tanh\""
        )));
    }
    unary(ctx)
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

/// IdentityN: every output is its input.
fn identity_n(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    outputs_are_inputs(ctx, |i, o| {
        format!("the node has {i} inputs 'x' but {o} outputs 'y'; they must match")
    })
}

/// Numpy broadcast of the named required inputs; the error names the input that does not fit.
fn broadcast_all(ctx: &InferCtx, names: &[&str]) -> Result<Shape> {
    let mut acc: Option<(Shape, String)> = None;
    for &n in names {
        let d = ctx.req(n)?;
        acc = Some(match acc {
            None => (d.shape.clone(), format!("'{n}' {}", d.shape)),
            Some((s, what)) => {
                let b = broadcast(&s, &d.shape).map_err(|e| {
                    ctx.err(format!(
                        "input '{n}' {} cannot be broadcast with {what}: {e}",
                        d.shape
                    ))
                })?;
                (b, format!("{what} and '{n}' {}", d.shape))
            }
        });
    }
    Ok(acc.map(|(s, _)| s).unwrap_or_else(Shape::unknown_rank))
}

/// Log: x's shape; integer and bool inputs give float32 (GE promotes them), other dtypes keep.
fn log(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let t = if x.dtype == DataType::UNDEFINED || output_allows(ctx, 0, x.dtype) {
        x.dtype
    } else if x.dtype.is_integer() || x.dtype == DataType::BOOL {
        DataType::FLOAT
    } else {
        DataType::UNDEFINED
    };
    Ok(single(t, x.shape.clone()))
}

/// PRelu: x's shape; weight holds one value or one per channel (dim 1 of x; x of rank < 2 has
/// a single channel, as in PyTorch).
fn prelu(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let w = ctx.req("weight")?;
    if let (Some(n), Some(r)) = (w.shape.num_elements(), x.shape.rank()) {
        if n != 1 {
            if r < 2 {
                return Err(ctx.err(format!(
                    "input 'weight' {} has {n} elements, but x {} has no channel dim (rank < 2), \
                     so weight must hold 1 element",
                    w.shape, x.shape
                )));
            }
            let c = x.shape.0[1];
            if c >= 0 && c != n {
                return Err(ctx.err(format!(
                    "input 'weight' {} has {n} elements, expected 1 or the {c} channels of x {} \
                     (dim 1)",
                    w.shape, x.shape
                )));
            }
        }
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

/// ClipByValue: broadcast of x, clip_value_min and clip_value_max.
fn clip_by_value(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let s = broadcast_all(ctx, &["x", "clip_value_min", "clip_value_max"])?;
    Ok(single(dtype_like(ctx, 0, ctx.input("x")?), s))
}

/// Addcmul: broadcast of input_data, x1 and x2; value holds one element.
fn addcmul(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    check_one_element(ctx, "value", ctx.input("value")?)?;
    let s = broadcast_all(ctx, &["input_data", "x1", "x2"])?;
    Ok(single(dtype_like(ctx, 0, ctx.input("input_data")?), s))
}

/// Select (TensorFlow semantics): x1 and x2 broadcast; condition either broadcasts with them or,
/// when it is a vector and x1/x2 have rank > 1, selects along their first dim.
fn select(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let cond = ctx.req("condition")?;
    let s = broadcast_all(ctx, &["x1", "x2"])?;
    let dt = dtype_like(ctx, 0, ctx.input("x1")?);
    if let (Some(1), Some(r)) = (cond.shape.rank(), s.rank()) {
        if r > 1 {
            let (c, d) = (cond.shape.0[0], s.0[0]);
            let mut out = s.clone();
            if c >= 0 && d >= 0 && c != d {
                return Err(ctx.err(format!(
                    "input 'condition' {} is a vector, so its length must equal the first dim of \
                     x1/x2 {} ({d}), got {c}",
                    cond.shape, s
                )));
            }
            if d < 0 {
                out.0[0] = c;
            }
            return Ok(single(dt, out));
        }
    }
    let out = broadcast(&cond.shape, &s).map_err(|e| {
        ctx.err(format!(
            "input 'condition' {} cannot be broadcast with x1/x2 {s}: {e}",
            cond.shape
        ))
    })?;
    Ok(single(dt, out))
}

/// SelectV2: broadcast of condition, then and else.
fn select_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let s = broadcast_all(ctx, &["condition", "then", "else"])?;
    Ok(single(dtype_like(ctx, 0, ctx.input("then")?), s))
}

/// Element width in bits (sub-byte INT4 included), None for types without a fixed width.
fn bits(t: DataType) -> Option<i64> {
    match t {
        DataType::INT4 => Some(4),
        _ => t.size().map(|s| s as i64 * 8),
    }
}

/// Bitcast: with keep_dim the last dim is scaled by in_bits / out_bits (ONNX BitCast); without,
/// TensorFlow's rule: a wider input gets a trailing dim of in_bits / out_bits, a narrower one
/// loses its last dim, which must be out_bits / in_bits.
fn bitcast(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let to = out_dtype_attr(ctx, "type", None)?;
    let keep_dim = opt_bool(ctx, "keep_dim", false)?;
    let (Some(bi), Some(bo)) = (bits(x.dtype), bits(to)) else {
        return Err(ctx.err(format!(
            "cannot bitcast {} to {to}: both need a fixed element width",
            x.dtype
        )));
    };
    if x.shape.is_unknown_rank() || bi == bo {
        return Ok(single(to, x.shape.clone()));
    }
    let mut dims = x.shape.0.clone();
    if keep_dim {
        let Some(last) = dims.last_mut() else {
            return Err(ctx.err(format!(
                "cannot bitcast a scalar {} to {to} with keep_dim: the sizes differ",
                x.dtype
            )));
        };
        if *last != UNKNOWN_DIM {
            let total = *last * bi;
            if total % bo != 0 {
                return Err(ctx.err(format!(
                    "input 'x' {}: last dim {} x {bi} bits is not a multiple of {to}'s {bo} bits",
                    x.shape, *last
                )));
            }
            *last = total / bo;
        }
    } else if bi > bo {
        if bi % bo != 0 {
            return Err(ctx.err(format!(
                "{} ({bi} bits) is not a multiple of {to} ({bo} bits)",
                x.dtype
            )));
        }
        dims.push(bi / bo);
    } else {
        if bo % bi != 0 {
            return Err(ctx.err(format!(
                "{to} ({bo} bits) is not a multiple of {} ({bi} bits)",
                x.dtype
            )));
        }
        let want = bo / bi;
        match dims.last().copied() {
            None => {
                let dt = x.dtype;
                return Err(ctx.err(format!(
                    "input 'x' is a scalar {dt}; bitcasting to the wider {to} needs a last dim of {want}"
                )));
            }
            Some(l) if l != UNKNOWN_DIM && l != want => {
                return Err(ctx.err(format!(
                    "input 'x' {}: the last dim must be {want} to bitcast {} to {to}, got {l}",
                    x.shape, x.dtype
                )))
            }
            _ => {
                dims.pop();
            }
        }
    }
    Ok(single(to, Shape(dims)))
}

/// LeftShift / RightShift: broadcast of x and y.
fn shift(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let y = ctx.req("y")?;
    let shape = broadcast(&x.shape, &y.shape).map_err(|e| ctx.err(e))?;
    Ok(single(dtype_like(ctx, 0, Some(x)), shape))
}
