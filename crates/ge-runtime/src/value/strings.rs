//! Casts between string tensors and the numeric types, with ONNX's rules (its reference
//! implementation is numpy's `astype`): numbers are written as numpy's `str` writes them
//! (shortest round-trip digits; positional between 1e-4 and a per-type bound, scientific
//! outside it: `1.0`, `0.1`, `1e-05`, `1.2345679e+08`, `inf`, `nan`; bool as `True`/`False`),
//! and strings are read as numbers in plain or scientific notation (`inf`/`nan` in any case).

use super::{Elem, Value};
use crate::error::{Error, Result};
use crate::lowp::CastMode;
use es_core::DataType;
use half::{bf16, f16};
use ndarray::ArrayD;

/// `v` cast to `dt` where one side is `DT_STRING` (the other any dtype a value may have).
pub(crate) fn cast(v: &Value, dt: DataType) -> Result<Value> {
    match v {
        Value::Str(a) if dt == DataType::STRING => Ok(Value::Str(a.clone())),
        Value::Str(a) => from_strings(a, dt),
        _ => Ok(Value::Str(to_strings(v)?)),
    }
}

/// numpy's `str` of a float `x` with `digits` its shortest round-trip digits and `exp` their
/// decimal exponent (x = d.ddd × 10^exp); positional when 1e-4 <= |x| < 10^`pos_below` (the
/// exact value compared, as numpy does).
fn numpy_float(x: f64, digits: &str, exp: i32, pos_below: i32) -> String {
    let neg = x.is_sign_negative();
    let sign = if neg { "-" } else { "" };
    let zero = digits.bytes().all(|b| b == b'0');
    if zero || (1e-4..10f64.powi(pos_below)).contains(&x.abs()) {
        let (int, frac) = if zero {
            ("0".to_string(), "0".to_string())
        } else if exp >= 0 {
            let e = exp as usize;
            let padded = format!("{digits:0<width$}", width = e + 1);
            let frac = padded[e + 1..].to_string();
            (
                padded[..=e].to_string(),
                if frac.is_empty() { "0".into() } else { frac },
            )
        } else {
            (
                "0".to_string(),
                format!("{}{digits}", "0".repeat((-exp - 1) as usize)),
            )
        };
        return format!("{sign}{int}.{frac}");
    }
    let mant = if digits.len() > 1 {
        format!("{}.{}", &digits[..1], &digits[1..])
    } else {
        digits.to_string()
    };
    let es = if exp < 0 { '-' } else { '+' };
    format!("{sign}{mant}e{es}{:02}", exp.abs())
}

/// The shortest digits and exponent of `x` that read back as the same value of a type whose
/// values `same` compares (after reading the decimal text as f64).
fn shortest(x: f64, same: impl Fn(f64) -> bool) -> (String, i32) {
    for p in 0..17 {
        let t = format!("{:.*e}", p, x.abs());
        if same(t.parse::<f64>().unwrap_or(f64::NAN)) || p == 16 {
            let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
            let digits: String = m.chars().filter(|c| c.is_ascii_digit()).collect();
            let digits = digits.trim_end_matches('0');
            let digits = if digits.is_empty() { "0" } else { digits };
            return (digits.to_string(), e.parse().unwrap_or(0));
        }
    }
    ("0".to_string(), 0)
}

fn float_text(x: f64, same: impl Fn(f64) -> bool, pos_below: i32) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let (d, e) = shortest(x, same);
    numpy_float(x, &d, e, pos_below)
}

/// Each element of `v` as numpy's `str` writes it.
fn to_strings(v: &Value) -> Result<ArrayD<String>> {
    Ok(match v {
        Value::F64(a) => a.mapv(|x| float_text(x, |y| y == x, 16)),
        Value::F32(a) => a.mapv(|x| float_text(x as f64, |y| y as f32 == x, 6)),
        Value::F16(a) => a.mapv(|x| float_text(x.to_f64(), |y| f16::from_f64(y) == x, 3)),
        Value::BF16(a) => a.mapv(|x| float_text(x.to_f64(), |y| bf16::from_f64(y) == x, 3)),
        Value::Bool(a) => a.mapv(|b| if b { "True" } else { "False" }.to_string()),
        Value::Lowp(..) => return to_strings(&v.cast(DataType::FLOAT)?),
        Value::Str(a) => a.clone(),
        _ => crate::with_array!(v, a => a.mapv(|x| x.to_i64_bits().to_string()), _s => {
            return Err(Error::kernel("internal error: strings reached the numeric path"))
        }),
    }
    .into_owned_std())
}

trait OwnedStd {
    fn into_owned_std(self) -> Self;
}
impl OwnedStd for ArrayD<String> {
    fn into_owned_std(self) -> Self {
        if self.is_standard_layout() {
            self
        } else {
            self.as_standard_layout().into_owned()
        }
    }
}

/// A number read from `s` (plain or scientific; `inf`, `infinity`, `nan` in any case).
fn parse_float(s: &str, i: usize) -> Result<f64> {
    s.trim().parse::<f64>().map_err(|_| not_a_number(s, i))
}

fn not_a_number(s: &str, i: usize) -> Error {
    Error::kernel(format!("Cast: string element {i} ({s:?}) is not a number"))
}

/// The strings of `a` read as `dt`: integers read exactly (an integer type refuses text with a
/// fraction or exponent, as numpy does), floats as f64 then rounded once, bool `True`/`False`
/// (any case) or a number (nonzero is true).
fn from_strings(a: &ArrayD<String>, dt: DataType) -> Result<Value> {
    let flat: Vec<&String> = a.iter().collect();
    let dims = a.shape().to_vec();
    let wide = match dt {
        DataType::BOOL => {
            let v = flat
                .iter()
                .enumerate()
                .map(|(i, s)| match s.trim().to_ascii_lowercase().as_str() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    t => parse_float(t, i).map(|x| x != 0.0),
                })
                .collect::<Result<Vec<bool>>>()?;
            return Ok(Value::Bool(
                ArrayD::from_shape_vec(dims, v).map_err(shape_err)?,
            ));
        }
        DataType::INT8
        | DataType::INT16
        | DataType::INT32
        | DataType::INT64
        | DataType::UINT8
        | DataType::UINT16
        | DataType::UINT32
        | DataType::UINT64 => {
            let v = flat
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let t = s.trim();
                    t.parse::<i64>()
                        .or_else(|_| t.parse::<u64>().map(|u| u as i64))
                        .map_err(|_| {
                            Error::kernel(format!(
                                "Cast: string element {i} ({s:?}) is not an integer"
                            ))
                        })
                })
                .collect::<Result<Vec<i64>>>()?;
            Value::I64(ArrayD::from_shape_vec(dims, v).map_err(shape_err)?)
        }
        DataType::FLOAT => {
            // Read as f32 directly: through f64 a value could round twice.
            let v = flat
                .iter()
                .enumerate()
                .map(|(i, s)| s.trim().parse::<f32>().map_err(|_| not_a_number(s, i)))
                .collect::<Result<Vec<f32>>>()?;
            return Ok(Value::F32(
                ArrayD::from_shape_vec(dims, v).map_err(shape_err)?,
            ));
        }
        _ => {
            let v = flat
                .iter()
                .enumerate()
                .map(|(i, s)| parse_float(s, i))
                .collect::<Result<Vec<f64>>>()?;
            Value::F64(ArrayD::from_shape_vec(dims, v).map_err(shape_err)?)
        }
    };
    wide.cast_with(dt, CastMode::default())
}

fn shape_err(e: impl std::fmt::Display) -> Error {
    Error::kernel(format!(
        "internal error: strings do not fit their shape: {e}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    fn texts(v: Value) -> Vec<String> {
        match cast(&v, DataType::STRING).unwrap() {
            Value::Str(a) => a.into_iter().collect(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn numbers_are_written_as_numpy_writes_them() {
        let f32s = vec![
            0.1f32,
            1.0,
            1e20,
            1e-5,
            123456789.0,
            -0.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let want = [
            "0.1",
            "1.0",
            "1e+20",
            "1e-05",
            "1.2345679e+08",
            "-0.0",
            "inf",
            "nan",
        ];
        let v = Value::F32(ArrayD::from_shape_vec(IxDyn(&[8]), f32s).unwrap());
        assert_eq!(texts(v), want);
        let f64s = vec![123456789.0, 0.0001, 1.23456789012345, 1e16, 999999.9];
        let want = [
            "123456789.0",
            "0.0001",
            "1.23456789012345",
            "1e+16",
            "999999.9",
        ];
        assert_eq!(
            texts(Value::F64(
                ArrayD::from_shape_vec(IxDyn(&[5]), f64s).unwrap()
            )),
            want
        );
        let f32s = vec![0.0001f32, 999999.9, 1e6, 16777216.0];
        let want = ["1e-04", "999999.9", "1e+06", "1.6777216e+07"];
        assert_eq!(
            texts(Value::F32(
                ArrayD::from_shape_vec(IxDyn(&[4]), f32s).unwrap()
            )),
            want
        );
        let h = [999.5f32, 1000.0, 2048.0, 0.1].map(f16::from_f32).to_vec();
        let want = ["999.5", "1e+03", "2.048e+03", "0.1"];
        assert_eq!(
            texts(Value::F16(ArrayD::from_shape_vec(IxDyn(&[4]), h).unwrap())),
            want
        );
        let i = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![-3, 7]).unwrap());
        assert_eq!(texts(i), ["-3", "7"]);
        let b = Value::Bool(ArrayD::from_shape_vec(IxDyn(&[2]), vec![true, false]).unwrap());
        assert_eq!(texts(b), ["True", "False"]);
    }

    #[test]
    fn strings_are_read_as_numbers_or_refused() {
        let s = |v: &[&str]| {
            Value::Str(
                ArrayD::from_shape_vec(
                    IxDyn(&[v.len()]),
                    v.iter().map(|x| x.to_string()).collect(),
                )
                .unwrap(),
            )
        };
        let f = s(&["1e5", "INF", "-inf", " 2 ", "0.1"])
            .cast(DataType::FLOAT)
            .unwrap();
        assert_eq!(
            f.to_f64_vec()[..4],
            [1e5, f64::INFINITY, f64::NEG_INFINITY, 2.0]
        );
        assert_eq!(f.to_f64_vec()[4], 0.1f32 as f64);
        assert!(s(&["NaN"]).cast(DataType::DOUBLE).unwrap().to_f64_vec()[0].is_nan());
        assert_eq!(
            s(&["-12", "300"])
                .cast(DataType::INT16)
                .unwrap()
                .to_i64_vec(),
            [-12, 300]
        );
        let e = s(&["1", "1.5"])
            .cast(DataType::INT64)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("element 1") && e.contains("not an integer"),
            "{e}"
        );
        let e = s(&["abc"]).cast(DataType::FLOAT).unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
        assert_eq!(
            s(&["True", "false", "0", "2"])
                .cast(DataType::BOOL)
                .unwrap()
                .to_i64_vec(),
            [1, 0, 0, 1]
        );
        // Through a string and back, every f32 is exact (shortest round-trip digits).
        let x =
            Value::F32(ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.3f32, 1e-7, 3.4e38]).unwrap());
        assert_eq!(
            x.cast(DataType::STRING)
                .unwrap()
                .cast(DataType::FLOAT)
                .unwrap(),
            x
        );
    }
}
