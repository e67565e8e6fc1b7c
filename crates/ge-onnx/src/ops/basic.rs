//! Special handlers for the basic operators: Constant, Cast, CastLike, Identity, Flatten
//! (Div and the other arithmetic: `math.rs`).
//! (Also the pattern for other handler files: a `register` function, one `fn` per op type.)

use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("Constant", Arc::new(constant));
    r.register("Cast", Arc::new(cast));
    r.register("CastLike", Arc::new(cast_like));
    r.register("Identity", Arc::new(identity));
    r.register("Flatten", Arc::new(flatten));
}

/// `value` (tensor), `value_float(s)`, `value_int(s)`; strings and sparse values are refused.
fn constant(ctx: &mut NodeCtx<'_>) -> Out {
    let t = if let Some(t) = ctx.attr_tensor("value")? {
        t
    } else if ctx.has_attr("value_float") {
        Tensor::scalar(ctx.attr_f("value_float", 0.0)?)
    } else if let Some(v) = ctx.attr_floats("value_floats")? {
        Tensor::from_values(&v, vec![v.len() as i64])?
    } else if ctx.has_attr("value_int") {
        Tensor::scalar(ctx.attr_i("value_int", 0)?)
    } else if let Some(v) = ctx.attr_ints("value_ints")? {
        Tensor::from_values(&v, vec![v.len() as i64])?
    } else if ctx.has_attr("value_string") || ctx.has_attr("value_strings") {
        return Err(Error::unsupported(
            "string constants (the IR holds numeric tensors only)",
        ));
    } else if ctx.has_attr("sparse_value") {
        return Err(Error::unsupported("sparse constants"));
    } else {
        return Err(Error::tr("Constant has no value attribute"));
    };
    Ok(vec![Some(ctx.constant(t)?)])
}

/// The IR dtype of the ONNX element type in attribute `to`.
fn to_dtype(ctx: &NodeCtx<'_>) -> Result<DataType> {
    let to = ctx.attr_i("to", -1)?;
    if to < 0 {
        return Err(Error::tr("Cast needs the attribute 'to'"));
    }
    crate::types::dtype_from_onnx(to as i32).map_err(|e| e.context("attribute 'to'"))
}

fn cast_to(ctx: &mut NodeCtx<'_>, to: DataType) -> Out {
    if ctx.attr_i("saturate", 1)? == 0 {
        return Err(Error::unsupported(
            "Cast with saturate=0 (GE's Cast saturates float8 conversions)",
        ));
    }
    let x = ctx.input(0)?;
    let y = ctx.op1(
        "Cast",
        &[x],
        vec![("dst_type", AttrValue::Int(to.value() as i64))],
    )?;
    Ok(vec![Some(y)])
}

fn cast(ctx: &mut NodeCtx<'_>) -> Out {
    let to = to_dtype(ctx)?;
    cast_to(ctx, to)
}

fn cast_like(ctx: &mut NodeCtx<'_>) -> Out {
    let to = ctx.input_desc(1)?.dtype;
    if to == DataType::UNDEFINED {
        return Err(Error::unsupported(
            "CastLike: the dtype of target_type must be known at import",
        ));
    }
    cast_to(ctx, to)
}

fn identity(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    Ok(vec![Some(ctx.op1("Identity", &[x], vec![])?)])
}

/// axis > 0: Flatten(axis); axis = 0: Reshape to [1, -1].
fn flatten(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    // ONNX allows axis in [-rank, rank]; a negative one counts from the end (-1 = rank - 1).
    let a = ctx.attr_i("axis", 1)?;
    let axis = if a < 0 { a + rank as i64 } else { a };
    if !(0..=rank as i64).contains(&axis) {
        return Err(Error::tr(format!(
            "Flatten axis {a} is out of range for rank {rank}"
        )));
    }
    let axis = axis as usize;
    let y = if axis == 0 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        ctx.op1("Reshape", &[x, shape], vec![])?
    } else {
        ctx.op1("Flatten", &[x], vec![("axis", AttrValue::Int(axis as i64))])?
    };
    Ok(vec![Some(y)])
}
