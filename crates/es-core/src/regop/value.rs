//! Attribute default values: the C++ expressions of `ATTR(name, Type, default)` and their
//! conversion to [`AttrValue`]s of the declared type.

use crate::attr::{AttrType, AttrValue};
use crate::types::{DataType, Format, Tensor};

#[derive(Debug)]
pub(super) enum Val {
    /// An integer literal's magnitude.
    Int(i128),
    Float(f64),
    Str(String),
    /// An identifier such as `true`, `DT_FLOAT`, `INFINITY` (`::`-joined).
    Name(String),
    Call(String, Vec<V>),
    List(Vec<V>),
    Neg(Box<V>),
}

#[derive(Debug)]
pub(super) struct V {
    pub(super) val: Val,
    pub(super) line: usize,
    pub(super) col: usize,
}

fn show(v: &V) -> String {
    match &v.val {
        Val::Int(n) => n.to_string(),
        Val::Float(f) => format!("{f:?}"),
        Val::Str(s) => format!("\"{}\"", s.chars().take(40).collect::<String>()),
        Val::Name(n) => n.clone(),
        Val::Call(n, a) => format!("{n}({})", if a.is_empty() { "" } else { "..." }),
        Val::List(_) => "{...}".into(),
        Val::Neg(x) => format!("-{}", show(x)),
    }
}

/// An integer or floating literal, with C suffixes (`u`, `l`, `ll`, `f`) and prefixes (`0x`,
/// `0b`, leading `0` for octal).
pub(super) fn parse_number(text: &str) -> Option<Val> {
    let t = text.replace('\'', "").to_ascii_lowercase();
    let int = |digits: &str, radix: u32| -> Option<Val> {
        let d = digits.trim_end_matches(['u', 'l']);
        if d.is_empty() {
            return None;
        }
        let n = u64::from_str_radix(d, radix).ok()?;
        Some(Val::Int(i128::from(n)))
    };
    if let Some(h) = t.strip_prefix("0x") {
        return int(h, 16);
    }
    if let Some(b) = t.strip_prefix("0b") {
        return int(b, 2);
    }
    if t.contains('.') || t.contains('e') || t.ends_with('f') {
        let f = t.trim_end_matches(['f', 'l']);
        if f.is_empty() || !f.chars().all(|c| c.is_ascii_digit() || "+-.e".contains(c)) {
            return None;
        }
        return f.parse::<f64>().ok().map(Val::Float);
    }
    if t.len() > 1 && t.starts_with('0') {
        return int(&t[1..], 8);
    }
    int(&t, 10)
}

type Conv<T> = std::result::Result<T, (usize, usize, String)>;

fn fail<T>(v: &V, expect: &str) -> Conv<T> {
    Err((
        v.line,
        v.col,
        format!("must be {expect}, found {}", show(v)),
    ))
}

fn int_value(v: &V) -> Option<i128> {
    match &v.val {
        Val::Int(n) => Some(*n),
        Val::Neg(x) => int_value(x).map(|n| -n),
        Val::Name(n) => {
            if n.starts_with("DT_") {
                if let Ok(d) = DataType::from_name(n) {
                    return Some(i128::from(d.value()));
                }
            }
            if n.starts_with("FORMAT_") {
                if let Ok(f) = Format::from_name(n) {
                    return Some(i128::from(f.value()));
                }
            }
            Some(match n.as_str() {
                "INT_MAX" | "INT32_MAX" => i128::from(i32::MAX),
                "INT_MIN" | "INT32_MIN" => i128::from(i32::MIN),
                "INT64_MAX" | "LLONG_MAX" | "LONG_MAX" => i128::from(i64::MAX),
                "INT64_MIN" | "LLONG_MIN" | "LONG_MIN" => i128::from(i64::MIN),
                "UINT32_MAX" | "UINT_MAX" => i128::from(u32::MAX),
                _ => return None,
            })
        }
        _ => None,
    }
}

fn to_int(v: &V) -> Conv<i64> {
    match int_value(v) {
        Some(n) => i64::try_from(n).map_err(|_| {
            (
                v.line,
                v.col,
                format!("{} is out of range for Int", show(v)),
            )
        }),
        None => fail(v, "an integer"),
    }
}

fn float_value(v: &V) -> Option<f64> {
    match &v.val {
        Val::Float(f) => Some(*f),
        Val::Int(n) => Some(*n as f64),
        Val::Neg(x) => float_value(x).map(|f| -f),
        Val::Name(n) => Some(match n.as_str() {
            "INFINITY" | "HUGE_VALF" | "HUGE_VAL" => f64::INFINITY,
            "NAN" => f64::NAN,
            "FLT_MAX" => f64::from(f32::MAX),
            "FLT_MIN" => f64::from(f32::MIN_POSITIVE),
            "FLT_EPSILON" => f64::from(f32::EPSILON),
            _ => return None,
        }),
        _ => None,
    }
}

fn to_float(v: &V) -> Conv<f32> {
    match float_value(v) {
        Some(f) => {
            let x = f as f32;
            if f.is_finite() && !x.is_finite() {
                return Err((
                    v.line,
                    v.col,
                    format!("{} is out of range for Float", show(v)),
                ));
            }
            Ok(x)
        }
        None => fail(v, "a number"),
    }
}

fn to_bool(v: &V) -> Conv<bool> {
    match &v.val {
        Val::Name(n) if n == "true" => Ok(true),
        Val::Name(n) if n == "false" => Ok(false),
        _ => fail(v, "true or false"),
    }
}

fn to_string(v: &V) -> Conv<String> {
    match &v.val {
        Val::Str(s) => Ok(s.clone()),
        Val::Call(n, args)
            if matches!(
                n.as_str(),
                "AscendString" | "string" | "std::string" | "OpString" | "OpAscendString"
            ) =>
        {
            match args.as_slice() {
                [] => Ok(String::new()),
                [a] => to_string(a),
                _ => fail(v, "a string literal"),
            }
        }
        _ => fail(v, "a string literal"),
    }
}

fn to_type(v: &V) -> Conv<DataType> {
    match &v.val {
        Val::Name(n) if n.starts_with("DT_") => DataType::from_name(n)
            .map_err(|_| (v.line, v.col, format!("names unknown data type '{n}'"))),
        Val::Int(n) => i64::try_from(*n)
            .ok()
            .and_then(|n| DataType::from_value(n).ok())
            .map_or_else(|| fail(v, "a data type (DT_...)"), Ok),
        _ => fail(v, "a data type (DT_...)"),
    }
}

fn to_list<'v, T>(v: &'v V, elem: &str, f: impl Fn(&'v V) -> Conv<T>) -> Conv<Vec<T>> {
    match &v.val {
        Val::List(items) => items.iter().map(f).collect(),
        _ => fail(v, &format!("a {{...}} list of {elem}")),
    }
}

fn empty_tensor() -> Conv<Tensor> {
    Tensor::from_values::<f32>(&[], vec![0]).map_err(|e| (0, 0, e.to_string()))
}

/// Converts a default-value expression to an attribute value of type `ty`. Errors name the
/// position of the offending (sub-)expression.
pub(super) fn convert(ty: AttrType, v: &V) -> Conv<AttrValue> {
    Ok(match ty {
        AttrType::Int => AttrValue::Int(to_int(v)?),
        AttrType::Float => AttrValue::Float(to_float(v)?),
        AttrType::Bool => AttrValue::Bool(to_bool(v)?),
        AttrType::String => AttrValue::String(to_string(v)?),
        AttrType::Type => AttrValue::Type(to_type(v)?),
        AttrType::ListInt => AttrValue::ListInt(to_list(v, "integers", to_int)?),
        AttrType::ListFloat => AttrValue::ListFloat(to_list(v, "numbers", to_float)?),
        AttrType::ListBool => AttrValue::ListBool(to_list(v, "true/false", to_bool)?),
        AttrType::ListString => AttrValue::ListString(to_list(v, "string literals", to_string)?),
        AttrType::ListType => AttrValue::ListType(to_list(v, "data types (DT_...)", to_type)?),
        AttrType::ListListInt => AttrValue::ListListInt(to_list(
            v,
            "{...} integer lists (e.g. {{}, {1, 2}})",
            |row| to_list(row, "integers", to_int),
        )?),
        AttrType::Tensor => match &v.val {
            Val::Call(n, args)
                if args.is_empty() && matches!(n.as_str(), "Tensor" | "OpTensor") =>
            {
                AttrValue::Tensor(empty_tensor().map_err(|(_, _, m)| (v.line, v.col, m))?)
            }
            _ => return fail(v, "Tensor() (only an empty tensor default is supported)"),
        },
    })
}
