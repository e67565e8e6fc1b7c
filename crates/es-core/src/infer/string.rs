//! Inference rules of the string operators (StringJoin, StaticRegexFullMatch, RegexFullMatch,
//! AsString, StringToNumber, StringNormalizer, StringSplitPadded, LabelEncoder).

use super::common::{bcast, out_dtype_attr, single};
use super::{InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "StringJoin" => string_join,
        "StaticRegexFullMatch" | "RegexFullMatch" => full_match,
        "AsString" => as_string,
        "StringToNumber" => string_to_number,
        "StringNormalizer" => string_normalizer,
        "StringSplitPadded" => string_split_padded,
        "LabelEncoder" => label_encoder,
        _ => return None,
    })
}

/// The first input's shape (its name read from the prototype).
fn first_shape(ctx: &InferCtx) -> Result<Shape> {
    Ok(ctx.req(ctx.input_name(0, "x"))?.shape.clone())
}

/// StringJoin: the broadcast of every input's shape.
fn string_join(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    let mut shape = Shape::scalar();
    for (i, x) in xs.iter().enumerate() {
        shape = bcast(ctx, ("x", &shape), (&format!("x{i}"), &x.shape))?;
    }
    if xs.is_empty() {
        return Err(ctx.err("needs at least one input"));
    }
    Ok(single(DataType::STRING, shape))
}

/// StaticRegexFullMatch and RegexFullMatch: bool of the strings' shape.
fn full_match(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    if ctx.proto.name == "StaticRegexFullMatch" {
        ctx.attr_str("pattern")?;
    }
    Ok(single(DataType::BOOL, first_shape(ctx)?))
}

fn as_string(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    Ok(single(DataType::STRING, first_shape(ctx)?))
}

fn string_to_number(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dt = out_dtype_attr(ctx, "out_type", Some(DataType::FLOAT))?;
    Ok(single(dt, first_shape(ctx)?))
}

/// StringNormalizer: x is [C] or [1, C]; y has the same rank, its last dim unknown (stop words
/// are dropped).
fn string_normalizer(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = first_shape(ctx)?;
    let shape = match x.rank() {
        None => Shape::unknown_rank(),
        Some(1) => Shape::new(vec![UNKNOWN_DIM]),
        Some(2) if matches!(x.dims()[0], 1 | UNKNOWN_DIM) => Shape::new(vec![1, UNKNOWN_DIM]),
        _ => return Err(ctx.err(format!("x must be [C] or [1, C], got {x}"))),
    };
    Ok(single(DataType::STRING, shape))
}

/// StringSplitPadded: y is x's shape plus one unknown dim; z (int64) is x's shape.
fn string_split_padded(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = first_shape(ctx)?;
    let y = match x.rank() {
        None => Shape::unknown_rank(),
        Some(_) => {
            let mut d = x.dims().to_vec();
            d.push(UNKNOWN_DIM);
            Shape::new(d)
        }
    };
    Ok(vec![
        TensorDesc::new(DataType::STRING, y),
        TensorDesc::new(DataType::INT64, x),
    ])
}

/// LabelEncoder: x's shape, the dtype of the `values` tensor attribute.
fn label_encoder(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dt = match ctx.attr("values")? {
        AttrValue::Tensor(t) => t.desc.dtype,
        other => return Err(ctx.err(format!("attribute 'values' must be a Tensor, got {other}"))),
    };
    Ok(single(dt, first_shape(ctx)?))
}
