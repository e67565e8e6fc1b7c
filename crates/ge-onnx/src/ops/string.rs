//! Strings: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, ai.onnx.ml
//! LabelEncoder, and Cast/CastLike to and from strings ([`string_cast`]). GE's operators where
//! GE has one (StringJoin, StaticRegexFullMatch, AsString, StringToNumber), else the ge-rs
//! operators StringNormalizer, StringSplitPadded and LabelEncoder (see the operator library).

use super::util::*;
use crate::attrs::OnnxAttr;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, DataType, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("StringNormalizer", string_normalizer),
    ("StringSplit", string_split),
    ("StringConcat", string_concat),
    ("RegexFullMatch", regex_full_match),
    ("ai.onnx.ml::LabelEncoder", label_encoder),
];

/// A STRINGS attribute (None when absent).
pub(super) fn attr_strings(ctx: &NodeCtx<'_>, name: &str) -> Result<Option<Vec<String>>> {
    match ctx.attr(name)? {
        None => Ok(None),
        Some(OnnxAttr::Strings(v)) => Ok(Some(v)),
        Some(a) => Err(Error::tr(format!(
            "attribute '{name}' must be STRINGS, got {}",
            a.kind()
        ))),
    }
}

fn string_normalizer(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "case_change_action",
        "is_case_sensitive",
        "locale",
        "stopwords",
    ])?;
    let action = ctx.attr_s("case_change_action", "NONE")?;
    if !matches!(action.as_str(), "LOWER" | "UPPER" | "NONE") {
        return Err(Error::tr(format!(
            "StringNormalizer: case_change_action must be LOWER, UPPER or NONE, got {action:?}"
        )));
    }
    let mut attrs = vec![
        ("case_change_action", AttrValue::String(action)),
        (
            "is_case_sensitive",
            AttrValue::Bool(ctx.attr_i("is_case_sensitive", 0)? != 0),
        ),
        ("locale", AttrValue::String(ctx.attr_s("locale", "")?)),
    ];
    if let Some(stops) = attr_strings(ctx, "stopwords")? {
        attrs.push(("stopwords", AttrValue::ListString(stops)));
    }
    let x = ctx.input(0)?;
    one(ctx.op1("StringNormalizer", &[x], attrs)?)
}

fn string_split(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["delimiter", "maxsplit"])?;
    let delimiter = ctx.attr_s("delimiter", "")?;
    let maxsplit = match ctx.attr("maxsplit")? {
        None => -1,
        Some(_) => {
            let m = ctx.attr_i("maxsplit", -1)?;
            if m < 0 {
                return Err(Error::tr(format!(
                    "StringSplit: maxsplit must be >= 0, got {m}"
                )));
            }
            m
        }
    };
    let x = ctx.input(0)?;
    let outs = ctx.op(
        "StringSplitPadded",
        vec![vec![Some(x)]],
        vec![
            ("delimiter", AttrValue::String(delimiter)),
            ("maxsplit", AttrValue::Int(maxsplit)),
        ],
    )?;
    Ok(outs.into_iter().map(Some).collect())
}

fn string_concat(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (x, y) = (ctx.input(0)?, ctx.input(1)?);
    let outs = ctx.op(
        "StringJoin",
        vec![vec![Some(x), Some(y)]],
        vec![("separator", AttrValue::String(String::new()))],
    )?;
    Ok(vec![outs.first().copied()])
}

fn regex_full_match(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["pattern"])?;
    if !ctx.has_attr("pattern") {
        return Err(Error::tr("RegexFullMatch: attribute 'pattern' is required"));
    }
    let pattern = ctx.attr_s("pattern", "")?;
    let x = ctx.input(0)?;
    one(ctx.op1(
        "StaticRegexFullMatch",
        &[x],
        vec![("pattern", AttrValue::String(pattern))],
    )?)
}

/// One of LabelEncoder's key, value or default forms as a tensor: `<what>_strings`,
/// `<what>_int64s`, `<what>_floats` (`_string`, `_int64`, `_float` for the default) or
/// `<what>_tensor`; None when none is given.
fn encoder_tensor(ctx: &NodeCtx<'_>, what: &str) -> Result<Option<Tensor>> {
    let list = what != "default";
    let suffix = |s: &str| {
        if list {
            format!("{what}_{s}s")
        } else {
            format!("{what}_{s}")
        }
    };
    let mut found = Vec::new();
    if let Some(t) = ctx.attr_tensor(&format!("{what}_tensor"))? {
        found.push(t);
    }
    if list {
        if let Some(v) = attr_strings(ctx, &suffix("string"))? {
            found.push(Tensor::from_strings(&v, vec![v.len() as i64])?);
        }
        if let Some(v) = ctx.attr_ints(&suffix("int64"))? {
            found.push(Tensor::from_values(&v, vec![v.len() as i64])?);
        }
        if let Some(v) = ctx.attr_floats(&suffix("float"))? {
            found.push(Tensor::from_values(&v, vec![v.len() as i64])?);
        }
    } else {
        if ctx.has_attr("default_string") {
            found.push(Tensor::from_strings(
                &[ctx.attr_s("default_string", "")?],
                vec![],
            )?);
        }
        if ctx.has_attr("default_int64") {
            found.push(Tensor::scalar(ctx.attr_i("default_int64", -1)?));
        }
        if ctx.has_attr("default_float") {
            found.push(Tensor::scalar(ctx.attr_f("default_float", -0.0)?));
        }
    }
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => Err(Error::tr(format!(
            "LabelEncoder: more than one form of '{what}' is given"
        ))),
    }
}

fn label_encoder(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "keys_strings",
        "keys_int64s",
        "keys_floats",
        "keys_tensor",
        "values_strings",
        "values_int64s",
        "values_floats",
        "values_tensor",
        "default_string",
        "default_int64",
        "default_float",
        "default_tensor",
    ])?;
    let need = |t: Option<Tensor>, what: &str| {
        t.ok_or_else(|| Error::tr(format!("LabelEncoder: no '{what}' attribute is given")))
    };
    let keys = need(encoder_tensor(ctx, "keys")?, "keys")?;
    let values = need(encoder_tensor(ctx, "values")?, "values")?;
    // The default of the values' type where it is not given (ONNX's: "_Unused", -1, -0.0).
    let default = match encoder_tensor(ctx, "default")? {
        Some(d) if d.desc.dtype == values.desc.dtype => d,
        Some(_) | None => match values.desc.dtype {
            DataType::STRING => Tensor::from_strings(&["_Unused"], vec![])?,
            DataType::INT64 => Tensor::scalar(-1i64),
            DataType::FLOAT => Tensor::scalar(-0.0f32),
            dt => es_core::types::tensor_from_f64(dt, vec![], &[0.0])?,
        },
    };
    let x = ctx.input(0)?;
    one(ctx.op1(
        "LabelEncoder",
        &[x],
        vec![
            ("keys", AttrValue::Tensor(keys)),
            ("values", AttrValue::Tensor(values)),
            ("default", AttrValue::Tensor(default)),
        ],
    )?)
}

/// Cast (and CastLike) where either side is a string: AsString (ONNX's text: `shortest`) or
/// StringToNumber; None when neither side is one.
pub(super) fn string_cast(ctx: &mut NodeCtx<'_>, to: DataType) -> Result<Option<OutPort>> {
    let from = ctx.input_desc(0)?.dtype;
    if from != DataType::STRING && to != DataType::STRING {
        return Ok(None);
    }
    let x = ctx.input(0)?;
    Ok(Some(if from == to {
        ctx.op1("Identity", &[x], vec![])?
    } else if to == DataType::STRING {
        ctx.op1("AsString", &[x], vec![("shortest", AttrValue::Bool(true))])?
    } else {
        ctx.op1(
            "StringToNumber",
            &[x],
            vec![("out_type", AttrValue::Type(to))],
        )?
    }))
}
