//! Inference rules of the source operators: graph inputs, constants, variables, fills, ranges,
//! random generators and the shape queries that read no values (Shape, Size, Rank).

use super::common::{
    attr_dtype, check_one_element, dtype_like, opt_bool, out_dtype_attr, shape_from_input, single,
    vector_len,
};
use super::{InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "Data" | "RefData" => data,
        "Variable" => variable,
        "Const" | "Constant" => constant,
        "Fill" => fill,
        "Shape" => shape_op,
        "Range" => range,
        "Size" => size_op,
        "Rank" => rank_op,
        "RandomUniform" => random_uniform,
        _ => return None,
    })
}

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

/// Fill: a tensor of shape `dims` filled with the scalar `value`.
fn fill(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let value = ctx.req("value")?;
    check_one_element(ctx, "value", Some(value))?;
    let out = shape_from_input(ctx, "dims")?;
    Ok(single(dtype_like(ctx, 0, Some(value)), out))
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

/// Range: a vector of ceil((limit - start) / delta) values (floor(...) + 1 when is_closed),
/// known when the three scalars are constants, else [-1].
fn range(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let names = ["start", "limit", "delta"];
    for n in names {
        check_one_element(ctx, n, Some(ctx.req(n)?))?;
    }
    let closed = opt_bool(ctx, "is_closed", false)?;
    let dt = dtype_like(ctx, 0, ctx.input("start")?);
    let mut vals = [0f64; 3];
    let mut ints = [0i64; 3];
    let mut all_int = true;
    for (i, n) in names.iter().enumerate() {
        let Some(t) = ctx.const_of(n)? else {
            return Ok(single(dt, Shape::from(vec![UNKNOWN_DIM])));
        };
        let v = t
            .to_f64_vec()
            .map_err(|e| ctx.err(format!("input '{n}': {e}")))?;
        if v.len() != 1 {
            return Err(ctx.err(format!(
                "input '{n}' must hold one value, got {} values",
                v.len()
            )));
        }
        vals[i] = v[0];
        match t.to_i64_vec() {
            Ok(iv) if t.desc.dtype.is_integer() => ints[i] = iv[0],
            _ => all_int = false,
        }
    }
    let [start, limit, delta] = vals;
    if delta == 0.0 || !delta.is_finite() || !start.is_finite() || !limit.is_finite() {
        return Err(ctx.err(format!(
            "input 'delta' must be a finite non-zero value and 'start'/'limit' finite, got \
             start {start}, limit {limit}, delta {delta}"
        )));
    }
    // The length, rounded as the op rounds; i128 / f64 so that nothing overflows here.
    let n: f64 = if all_int {
        let [s, l, d] = ints;
        let span = l as i128 - s as i128;
        let d = d as i128;
        let (q, r) = (span / d, span % d);
        let inexact = r != 0;
        // Quotient rounded toward -inf.
        let floor = if inexact && ((span < 0) != (d < 0)) {
            q - 1
        } else {
            q
        };
        // closed: floor + 1; open: ceil, which is floor + 1 unless the division was exact.
        (if closed || inexact { floor + 1 } else { floor }) as f64
    } else {
        let q = (limit - start) / delta;
        if closed {
            q.floor() + 1.0
        } else {
            q.ceil()
        }
    };
    if n < 0.0 {
        return Err(ctx.err(format!(
            "start {start}, limit {limit} and delta {delta} give a negative length: delta must \
             move start toward limit"
        )));
    }
    // A length beyond i64 cannot be a real tensor; report it unknown rather than wrap.
    let n = if n < i64::MAX as f64 {
        n as i64
    } else {
        UNKNOWN_DIM
    };
    Ok(single(dt, Shape::from(vec![n])))
}

/// Size: a scalar of `dtype` (int32 or int64).
fn size_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.req("x")?;
    let t = attr_dtype(ctx, "dtype", Some(DataType::INT32))?;
    if !matches!(t, DataType::INT32 | DataType::INT64) {
        return Err(ctx.err(format!(
            "attribute 'dtype' must be DT_INT32 (3) or DT_INT64 (9), got {t}"
        )));
    }
    Ok(single(t, Shape::scalar()))
}

/// Rank: an int32 scalar.
fn rank_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.req("x")?;
    Ok(single(DataType::INT32, Shape::scalar()))
}

/// RandomUniform: a tensor of the constant `shape` (rank from the shape input's length when the
/// value is unknown), of the `dtype` attribute.
fn random_uniform(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dtype = out_dtype_attr(ctx, "dtype", None)?;
    let len = vector_len(ctx, "shape", Some(ctx.req("shape")?))?;
    let shape = match ctx.const_ints("shape")? {
        Some(dims) => {
            if let Some(d) = dims.iter().find(|&&d| d < 0) {
                return Err(ctx.err(format!("input 'shape' holds a negative dim {d}")));
            }
            Shape::new(dims)
        }
        None => match len {
            Some(n) => Shape::unknown_dims(n as usize),
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dtype, shape))
}
