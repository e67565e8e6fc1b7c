//! Kernels of the string operators: GE's StringJoin, StaticRegexFullMatch, RegexFullMatch,
//! AsString and StringToNumber, and the ge-rs operators StringNormalizer, StringSplitPadded and
//! LabelEncoder (ONNX's semantics; the operator library documents each). Equal and NotEqual on
//! strings are the elementwise family's ([`compare_strings`]).

use super::common::{broadcast_shape, numel, str_attr};
use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::attr::AttrValue;
use es_core::DataType;
use ndarray::{ArrayD, IxDyn};
use regex::Regex;
use std::collections::HashMap;

/// The strings of `v`; another dtype is an error naming `what`.
fn strings<'v>(v: &'v Value, what: &str) -> Result<&'v ArrayD<String>> {
    match v {
        Value::Str(a) => Ok(a),
        v => Err(Error::kernel(format!(
            "{what} must be a string tensor, got {}",
            v.dtype()
        ))),
    }
}

fn string_array(dims: &[usize], v: Vec<String>) -> Result<ArrayD<String>> {
    ArrayD::from_shape_vec(IxDyn(dims), v).map_err(|e| Error::kernel(e.to_string()))
}

/// `f` over the elements of string arrays broadcast together (numpy's rules), row-major.
fn zip_strings<O>(xs: &[&ArrayD<String>], f: impl Fn(&[&str]) -> O) -> Result<ArrayD<O>> {
    let mut dims: Vec<usize> = Vec::new();
    for x in xs {
        dims = broadcast_shape(&dims, x.shape())?;
    }
    let views = xs
        .iter()
        .map(|x| {
            x.broadcast(IxDyn(&dims))
                .ok_or_else(|| Error::kernel("internal error: broadcast failed"))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut iters: Vec<_> = views.iter().map(|v| v.iter()).collect();
    let mut out = Vec::with_capacity(numel(&dims)?);
    let mut row: Vec<&str> = Vec::with_capacity(xs.len());
    for _ in 0..numel(&dims)? {
        row.clear();
        for it in iters.iter_mut() {
            row.push(it.next().map_or("", String::as_str));
        }
        out.push(f(&row));
    }
    ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| Error::kernel(e.to_string()))
}

/// Equal, NotEqual and the orderings of two string tensors (byte-wise, as numpy compares str),
/// broadcast; `None` when either value is not a string tensor.
pub(crate) fn compare_strings(
    a: &Value,
    b: &Value,
    test: impl Fn(Option<std::cmp::Ordering>) -> bool,
) -> Option<Result<Value>> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => {
            Some(zip_strings(&[x, y], |s| test(Some(s[0].cmp(s[1])))).map(Value::Bool))
        }
        (Value::Str(_), _) | (_, Value::Str(_)) => Some(Err(Error::kernel(format!(
            "comparing {} with {}",
            a.dtype(),
            b.dtype()
        )))),
        _ => None,
    }
}

/// StringJoin: the inputs (broadcast) joined element by element with `separator`.
fn string_join_factory(info: &NodeInfo) -> Result<Kernel> {
    let sep = str_attr(info, "separator", "")?;
    Ok(Box::new(move |inputs| {
        let xs = inputs
            .iter()
            .flatten()
            .map(|v| strings(v, "StringJoin input"))
            .collect::<Result<Vec<_>>>()?;
        if xs.is_empty() {
            return Err(Error::kernel("StringJoin needs at least one input"));
        }
        Ok(vec![Value::Str(zip_strings(&xs, |s| s.join(&sep))?)])
    }))
}

/// A pattern that must match a whole string (RE2's FullMatch): `^(?:pattern)$`.
fn full_match_regex(pattern: &str) -> Result<Regex> {
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| Error::kernel(format!("pattern {pattern:?} is not a valid regex: {e}")))
}

fn full_match(re: &Regex, x: &Value) -> Result<Value> {
    Ok(Value::Bool(strings(x, "input")?.map(|s| re.is_match(s))))
}

/// StaticRegexFullMatch: whether each string matches `pattern` as a whole.
fn static_regex_full_match_factory(info: &NodeInfo) -> Result<Kernel> {
    let re = full_match_regex(&str_attr(info, "pattern", "")?)?;
    Ok(Box::new(move |inputs| {
        Ok(vec![full_match(&re, input(inputs, 0)?)?])
    }))
}

/// RegexFullMatch: as StaticRegexFullMatch, the pattern a scalar string input (compiled once
/// when it is a constant).
fn regex_full_match_factory(info: &NodeInfo) -> Result<Kernel> {
    fn pattern(v: &Value) -> Result<Regex> {
        let p = strings(v, "pattern")?;
        match p.iter().next() {
            Some(s) if p.len() == 1 => full_match_regex(s),
            _ => Err(Error::kernel(format!(
                "pattern must hold one string, got shape {:?}",
                p.shape()
            ))),
        }
    }
    let fixed = match info.const_inputs.get(1).and_then(Option::as_ref) {
        Some(v) => Some(pattern(v)?),
        None => None,
    };
    Ok(Box::new(move |inputs| {
        let re = match &fixed {
            Some(r) => r.clone(),
            None => pattern(input(inputs, 1)?)?,
        };
        Ok(vec![full_match(&re, input(inputs, 0)?)?])
    }))
}

/// StringNormalizer (ONNX): drops the elements equal to a stop word (compared after lowering
/// both when not case-sensitive), then changes case (`LOWER`, `UPPER`, `NONE`); x is [C] or
/// [1, C]; when nothing is left, one empty string remains.
fn string_normalizer_factory(info: &NodeInfo) -> Result<Kernel> {
    let action = str_attr(info, "case_change_action", "NONE")?;
    if !matches!(action.as_str(), "LOWER" | "UPPER" | "NONE") {
        return Err(Error::kernel(format!(
            "case_change_action must be LOWER, UPPER or NONE, got {action:?}"
        )));
    }
    let sensitive = info.bool("is_case_sensitive", false)?;
    let stops: Vec<String> = match info.attr("stopwords") {
        None => Vec::new(),
        Some(AttrValue::ListString(v)) => v.clone(),
        Some(_) => return Err(Error::kernel("attribute 'stopwords' must be a ListString")),
    };
    let fold = move |s: &str| {
        if sensitive {
            s.to_string()
        } else {
            s.to_lowercase()
        }
    };
    let stops: std::collections::HashSet<String> = stops.iter().map(|s| fold(s)).collect();
    Ok(Box::new(move |inputs| {
        let x = strings(input(inputs, 0)?, "x")?;
        let two_d = match x.shape() {
            [_] => false,
            [1, _] => true,
            s => {
                return Err(Error::kernel(format!(
                    "StringNormalizer takes x of shape [C] or [1, C], got {s:?}"
                )))
            }
        };
        let mut kept: Vec<String> = x
            .iter()
            .filter(|s| !stops.contains(&fold(s)))
            .map(|s| match action.as_str() {
                "LOWER" => s.to_lowercase(),
                "UPPER" => s.to_uppercase(),
                _ => s.clone(),
            })
            .collect();
        if kept.is_empty() {
            kept.push(String::new());
        }
        let n = kept.len();
        let dims: Vec<usize> = if two_d { vec![1, n] } else { vec![n] };
        Ok(vec![Value::Str(string_array(&dims, kept)?)])
    }))
}

/// Python's `str.split(sep, maxsplit)`: `sep` None splits on runs of whitespace, dropping
/// leading and trailing whitespace (also after the last split, as ONNX's words and onnxruntime
/// do, where Python keeps it); a negative `maxsplit` is no limit.
fn py_split(s: &str, sep: Option<&str>, maxsplit: i64) -> Vec<String> {
    let limit = usize::try_from(maxsplit).ok();
    match sep {
        Some(sep) => match limit {
            Some(m) => s.splitn(m + 1, sep).map(str::to_string).collect(),
            None => s.split(sep).map(str::to_string).collect(),
        },
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_start();
            while !rest.is_empty() {
                if limit.is_some_and(|m| out.len() == m) {
                    // ONNX drops trailing whitespace here too (Python's str.split keeps it).
                    out.push(rest.trim_end().to_string());
                    break;
                }
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                out.push(rest[..end].to_string());
                rest = rest[end..].trim_start();
            }
            out
        }
    }
}

/// StringSplitPadded (ONNX's StringSplit): each string split as Python's `str.split` does
/// (`delimiter` empty: runs of whitespace; `maxsplit` negative: no limit); y is x's shape plus
/// one dim, the longest split, shorter ones padded with empty strings; z (int64) the counts.
fn string_split_padded_factory(info: &NodeInfo) -> Result<Kernel> {
    let delim = str_attr(info, "delimiter", "")?;
    let maxsplit = info.int("maxsplit", -1)?;
    Ok(Box::new(move |inputs| {
        let x = strings(input(inputs, 0)?, "x")?;
        let sep = (!delim.is_empty()).then_some(delim.as_str());
        let parts: Vec<Vec<String>> = x.iter().map(|s| py_split(s, sep, maxsplit)).collect();
        let width = parts.iter().map(Vec::len).max().unwrap_or(0);
        let counts: Vec<i64> = parts.iter().map(|p| p.len() as i64).collect();
        let mut flat = Vec::with_capacity(numel(&[parts.len(), width])?);
        for mut p in parts {
            p.resize(width, String::new());
            flat.extend(p);
        }
        let mut dims = x.shape().to_vec();
        dims.push(width);
        let z = ArrayD::from_shape_vec(IxDyn(x.shape()), counts)
            .map_err(|e| Error::kernel(e.to_string()))?;
        Ok(vec![Value::Str(string_array(&dims, flat)?), Value::I64(z)])
    }))
}

/// A key of LabelEncoder: strings, integers and floats compared by value (NaN equals NaN,
/// -0.0 equals 0.0).
#[derive(Hash, PartialEq, Eq)]
enum Key {
    Str(String),
    Int(i64),
    Float(u64),
}

fn keys_of(v: &Value) -> Result<Vec<Key>> {
    Ok(match v {
        Value::Str(a) => a.iter().cloned().map(Key::Str).collect(),
        Value::F32(_) | Value::F64(_) | Value::F16(_) | Value::BF16(_) => v
            .to_f64_vec()
            .into_iter()
            .map(|f| {
                Key::Float(if f.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    (f + 0.0).to_bits()
                })
            })
            .collect(),
        Value::Lowp(dt, _) => {
            return Err(Error::unsupported(format!("LabelEncoder keys of {dt}")));
        }
        _ => v.to_i64_vec().into_iter().map(Key::Int).collect(),
    })
}

/// LabelEncoder (ai.onnx.ml): each element of x replaced by the value of the equal key, or by
/// `default`; `keys`, `values` and `default` (one element) are tensor attributes, x of the keys'
/// dtype, y of the values'.
fn label_encoder_factory(info: &NodeInfo) -> Result<Kernel> {
    let tensor = |name: &str| -> Result<Value> {
        match info.attr(name) {
            Some(AttrValue::Tensor(t)) => Value::from_tensor(t),
            _ => Err(Error::kernel(format!(
                "LabelEncoder needs the tensor attribute '{name}'"
            ))),
        }
    };
    let (keys, values, default) = (tensor("keys")?, tensor("values")?, tensor("default")?);
    if keys.len() != values.len() || default.len() != 1 || values.dtype() != default.dtype() {
        return Err(Error::kernel(format!(
            "LabelEncoder needs as many values as keys ({} and {}) and one default of the \
             values' dtype (got {} of {})",
            keys.len(),
            values.len(),
            default.len(),
            default.dtype()
        )));
    }
    let key_dt = keys.dtype();
    let mut index: HashMap<Key, usize> = HashMap::new();
    for (i, k) in keys_of(&keys)?.into_iter().enumerate() {
        index.entry(k).or_insert(i);
    }
    // The values then the default: position keys.len() is "no key".
    let table = super::shape::concat(
        &[
            &super::shape::reshape(&values, &[values.len()])?,
            &super::shape::reshape(&default, &[1])?,
        ],
        0,
    )?;
    let missing = keys.len();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        if x.dtype() != key_dt {
            return Err(Error::kernel(format!(
                "LabelEncoder: x is {}, the keys are {key_dt}",
                x.dtype()
            )));
        }
        let idx: Vec<usize> = keys_of(x)?
            .iter()
            .map(|k| index.get(k).copied().unwrap_or(missing))
            .collect();
        Ok(vec![
            crate::map_any!(&table, a => take(a, &idx, x.shape())?),
        ])
    }))
}

/// The elements of 1-D `a` at `idx`, as an array of shape `dims`.
fn take<T: Clone>(a: &ArrayD<T>, idx: &[usize], dims: &[usize]) -> Result<ArrayD<T>> {
    let v = idx
        .iter()
        .map(|&i| a.get(i).cloned())
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| Error::kernel("internal error: a LabelEncoder index is out of range"))?;
    ArrayD::from_shape_vec(IxDyn(dims), v).map_err(|e| Error::kernel(e.to_string()))
}

/// AsString: numbers as text. `shortest` writes ONNX's Cast-to-string text (numpy's `str`:
/// shortest round-trip digits, bool as True/False); otherwise floats are written as C's `%f`
/// (`scientific`: `%e`) with `precision` digits (6 when negative) and integers in decimal,
/// bool as true/false (TensorFlow's); `width` pads on the left with `fill` (one character,
/// a space when empty).
fn as_string_factory(info: &NodeInfo) -> Result<Kernel> {
    let shortest = info.bool("shortest", false)?;
    let scientific = info.bool("scientific", false)?;
    let precision = info.int("precision", -1)?;
    let width = usize::try_from(info.int("width", -1)?).unwrap_or(0);
    let fill = str_attr(info, "fill", "")?;
    let fill = match fill.chars().count() {
        0 => ' ',
        1 => fill.chars().next().unwrap_or(' '),
        _ => {
            return Err(Error::kernel(format!(
                "attribute 'fill' must be one character, got {fill:?}"
            )))
        }
    };
    let p = usize::try_from(precision).unwrap_or(6);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let text = if shortest {
            x.cast(DataType::STRING)?
        } else {
            let float = matches!(
                x.dtype(),
                DataType::FLOAT | DataType::DOUBLE | DataType::FLOAT16 | DataType::BF16
            ) || x.dtype().is_low_precision();
            let words: Vec<String> = match x {
                Value::Bool(a) => a.iter().map(|b| b.to_string()).collect(),
                Value::Str(_) => return Err(Error::kernel("AsString takes numbers, got strings")),
                _ if float => x
                    .to_f64_vec()
                    .into_iter()
                    .map(|f| c_float(f, p, scientific))
                    .collect(),
                _ => match x.cast(DataType::STRING)? {
                    Value::Str(a) => a.into_iter().collect(),
                    _ => unreachable!("a cast to DT_STRING gives strings"),
                },
            };
            Value::Str(string_array(x.shape(), words)?)
        };
        Ok(vec![match text {
            Value::Str(a) if width > 0 => Value::Str(a.mapv(|s| {
                let n = s.chars().count();
                let pad: String = std::iter::repeat_n(fill, width.saturating_sub(n)).collect();
                pad + &s
            })),
            t => t,
        }])
    }))
}

/// C's `%.{p}f` or `%.{p}e` of `f` (`inf`, `nan` as C writes them).
fn c_float(f: f64, p: usize, scientific: bool) -> String {
    if !f.is_finite() {
        let s = if f.is_nan() { "nan" } else { "inf" };
        return if f.is_sign_negative() {
            format!("-{s}")
        } else {
            s.to_string()
        };
    }
    if !scientific {
        return format!("{f:.p$}");
    }
    let s = format!("{f:.p$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// StringToNumber: each string read as a number of `out_type` (plain or scientific notation;
/// integer types take integers only) — ONNX's Cast from strings.
fn string_to_number_factory(info: &NodeInfo) -> Result<Kernel> {
    let to = info.dtype_attr("out_type")?.unwrap_or(DataType::FLOAT);
    if to == DataType::STRING || !crate::value::supported_dtype(to) {
        return Err(Error::unsupported(format!("StringToNumber to {to}")));
    }
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        strings(x, "x")?;
        Ok(vec![x.cast(to)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["StringJoin"], string_join_factory),
    (&["StaticRegexFullMatch"], static_regex_full_match_factory),
    (&["RegexFullMatch"], regex_full_match_factory),
    (&["StringNormalizer"], string_normalizer_factory),
    (&["StringSplitPadded"], string_split_padded_factory),
    (&["LabelEncoder"], label_encoder_factory),
    (&["AsString"], as_string_factory),
    (&["StringToNumber"], string_to_number_factory),
];

#[cfg(test)]
mod tests {
    use super::super::common::testing::{i64s, node_with_outputs, run, run1, s};
    use super::*;
    use es_core::Tensor;

    fn st(dims: &[usize], v: &[&str]) -> Value {
        Value::strings(dims, v.iter().map(|s| s.to_string()).collect()).unwrap()
    }
    fn texts(v: &Value) -> Vec<String> {
        v.to_tensor().unwrap().strings().unwrap()
    }
    fn bools(v: &Value) -> Vec<i64> {
        assert_eq!(v.dtype(), DataType::BOOL);
        v.to_i64_vec()
    }

    #[test]
    fn join_broadcasts_and_compare_orders_bytes() {
        let a = st(&[2, 1], &["a", "b"]);
        let b = st(&[3], &["x", "", "é"]);
        let y = run1("StringJoin", &[("separator", s("-"))], &[&a, &b]).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        assert_eq!(texts(&y), ["a-x", "a-", "a-é", "b-x", "b-", "b-é"]);
        let eq = run1("Equal", &[], &[&st(&[2], &["a", "b"]), &st(&[], &["b"])]).unwrap();
        assert_eq!(bools(&eq), [0, 1]);
        let ne = run1("NotEqual", &[], &[&st(&[2], &["a", "b"]), &st(&[], &["b"])]).unwrap();
        assert_eq!(bools(&ne), [1, 0]);
        let e = run1("Equal", &[], &[&st(&[1], &["1"]), &i64s(&[1], &[1])]).unwrap_err();
        assert!(e.to_string().contains("DT_STRING with DT_INT64"), "{e}");
    }

    #[test]
    fn regex_full_match_matches_whole_strings() {
        let x = st(&[4], &["abc", "abcd", "", "ABC"]);
        let y = run1("StaticRegexFullMatch", &[("pattern", s("[a-c]+"))], &[&x]).unwrap();
        assert_eq!(bools(&y), [1, 0, 0, 0]);
        // An alternation is anchored as a whole.
        let y = run1("StaticRegexFullMatch", &[("pattern", s("a|abc"))], &[&x]).unwrap();
        assert_eq!(bools(&y), [1, 0, 0, 0]);
        let y = run1("RegexFullMatch", &[], &[&x, &st(&[], &["(?i)abc"])]).unwrap();
        assert_eq!(bools(&y), [1, 0, 0, 1]);
        let e = run1("StaticRegexFullMatch", &[("pattern", s("(a"))], &[&x]).unwrap_err();
        assert!(e.to_string().contains("not a valid regex"), "{e}");
    }

    #[test]
    fn normalizer_drops_stop_words_then_changes_case() {
        let stops = AttrValue::ListString(vec!["monday".into()]);
        let x = st(&[4], &["Monday", "tuesday", "monday", "Ünter"]);
        let y = run1(
            "StringNormalizer",
            &[
                ("stopwords", stops.clone()),
                ("case_change_action", s("UPPER")),
            ],
            &[&x],
        )
        .unwrap();
        assert_eq!(texts(&y), ["TUESDAY", "ÜNTER"]);
        let y = run1(
            "StringNormalizer",
            &[
                ("stopwords", stops.clone()),
                ("is_case_sensitive", AttrValue::Bool(true)),
            ],
            &[&st(&[1, 2], &["Monday", "monday"])],
        )
        .unwrap();
        assert_eq!(
            (y.shape(), texts(&y)),
            (&[1, 1][..], vec!["Monday".to_string()])
        );
        let y = run1(
            "StringNormalizer",
            &[("stopwords", stops)],
            &[&st(&[1], &["MONDAY"])],
        );
        assert_eq!(texts(&y.unwrap()), [""]);
        let e = run1("StringNormalizer", &[], &[&st(&[2, 1], &["a", "b"])]).unwrap_err();
        assert!(e.to_string().contains("[C] or [1, C]"), "{e}");
    }

    #[test]
    fn split_follows_python_and_pads() {
        assert_eq!(py_split("  a b  c ", None, -1), ["a", "b", "c"]);
        assert_eq!(py_split("  a b  c ", None, 1), ["a", "b  c"]);
        assert_eq!(py_split("a,,b", Some(","), -1), ["a", "", "b"]);
        assert_eq!(py_split("a,,b", Some(","), 1), ["a", ",b"]);
        assert_eq!(py_split("", None, -1), Vec::<String>::new());
        assert_eq!(py_split("", Some(","), -1), [""]);
        let n = node_with_outputs("StringSplitPadded", &[("delimiter", s("-"))], &[]);
        let x = st(&[2], &["a-b-c", "d"]);
        let out = run(&n, &[Some(&x)]).unwrap();
        assert_eq!(out[0].shape(), &[2, 3]);
        assert_eq!(texts(&out[0]), ["a", "b", "c", "d", "", ""]);
        assert_eq!(out[1], i64s(&[2], &[3, 1]));
        let empty = run(&n, &[Some(&st(&[0], &[]))]).unwrap();
        assert_eq!(
            (empty[0].shape(), empty[1].shape()),
            (&[0, 0][..], &[0][..])
        );
    }

    #[test]
    fn label_encoder_maps_keys_to_values() {
        let t = |v: &Value| AttrValue::Tensor(v.to_tensor().unwrap());
        let keys = st(&[2], &["a", "b"]);
        let attrs = [
            ("keys", t(&keys)),
            ("values", t(&i64s(&[2], &[1, 2]))),
            ("default", t(&i64s(&[1], &[-1]))),
        ];
        let y = run1(
            "LabelEncoder",
            &attrs,
            &[&st(&[2, 2], &["b", "c", "a", "a"])],
        )
        .unwrap();
        assert_eq!(y, i64s(&[2, 2], &[2, -1, 1, 1]));
        // Float keys: NaN finds NaN; -0.0 finds 0.0. Values are strings.
        let fk = Value::F32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![f32::NAN, 0.0]).unwrap());
        let attrs = [
            ("keys", t(&fk)),
            ("values", t(&st(&[2], &["nan", "zero"]))),
            (
                "default",
                AttrValue::Tensor(Tensor::from_strings(&["?"], vec![]).unwrap()),
            ),
        ];
        let x = Value::F32(ArrayD::from_shape_vec(IxDyn(&[3]), vec![-0.0, f32::NAN, 1.0]).unwrap());
        assert_eq!(
            texts(&run1("LabelEncoder", &attrs, &[&x]).unwrap()),
            ["zero", "nan", "?"]
        );
        let e = run1("LabelEncoder", &attrs, &[&keys]).unwrap_err();
        assert!(
            e.to_string()
                .contains("x is DT_STRING, the keys are DT_FLOAT"),
            "{e}"
        );
    }

    #[test]
    fn data_movement_takes_strings() {
        let x = st(&[2, 2], &["a", "b", "c", "d"]);
        let n = node_with_outputs("SplitV", &[("num_split", AttrValue::Int(2))], &[]);
        let sizes = i64s(&[2], &[1, 1]);
        let axis = i64s(&[], &[1]);
        let parts = run(&n, &[Some(&x), Some(&sizes), Some(&axis)]).unwrap();
        assert_eq!(
            (texts(&parts[0]), texts(&parts[1])),
            (vec!["a".into(), "c".into()], vec!["b".into(), "d".into()])
        );
        let r = run1("ReverseV2", &[], &[&x, &i64s(&[1], &[0])]).unwrap();
        assert_eq!(texts(&r), ["c", "d", "a", "b"]);
        let sl = run1(
            "Slice",
            &[],
            &[&x, &i64s(&[2], &[1, 0]), &i64s(&[2], &[1, 2])],
        )
        .unwrap();
        assert_eq!(
            (sl.shape(), texts(&sl)),
            (&[1, 2][..], vec!["c".into(), "d".into()])
        );
        let c = Value::Bool(ArrayD::from_shape_vec(IxDyn(&[2]), vec![true, false]).unwrap());
        let y = run1("SelectV2", &[], &[&c, &x, &st(&[], &["-"])]).unwrap();
        assert_eq!(texts(&y), ["a", "-", "c", "-"]);
        let e = run1("SelectV2", &[], &[&c, &x, &i64s(&[], &[0])]).unwrap_err();
        assert!(e.to_string().contains("dtypes"), "{e}");
    }

    #[test]
    fn as_string_and_string_to_number() {
        let x = Value::F64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![1.5, -0.25, 1e20]).unwrap());
        let y = run1("AsString", &[("shortest", AttrValue::Bool(true))], &[&x]).unwrap();
        assert_eq!(texts(&y), ["1.5", "-0.25", "1e+20"]);
        assert_eq!(texts(&run1("AsString", &[], &[&x]).unwrap())[0], "1.500000");
        let sci = [
            ("scientific", AttrValue::Bool(true)),
            ("precision", AttrValue::Int(2)),
            ("width", AttrValue::Int(10)),
            ("fill", s("*")),
        ];
        assert_eq!(
            texts(&run1("AsString", &sci, &[&x]).unwrap()),
            ["**1.50e+00", "*-2.50e-01", "**1.00e+20"]
        );
        let b = Value::Bool(ArrayD::from_shape_vec(IxDyn(&[1]), vec![true]).unwrap());
        assert_eq!(texts(&run1("AsString", &[], &[&b]).unwrap()), ["true"]);
        let to_i32 = [("out_type", AttrValue::Type(DataType::INT32))];
        let n = run1("StringToNumber", &to_i32, &[&st(&[2], &["-7", "12"])]).unwrap();
        assert_eq!(
            n,
            Value::I32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![-7, 12]).unwrap())
        );
        let e = run1("StringToNumber", &to_i32, &[&st(&[1], &["x"])]).unwrap_err();
        assert!(e.to_string().contains("not an integer"), "{e}");
        assert!(run1("StringToNumber", &to_i32, &[&x]).is_err());
    }
}
