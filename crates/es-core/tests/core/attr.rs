//! Attribute values: types, JSON forms, tolerance, accessors (`es_core::attr`).

use super::*;

/// Tensors whose JSON form parses back exactly. (The JSON path carries tensor values as f32, so
/// integers beyond 2^24 and f64 values that are not f32 values are left out here.)
fn sample_tensors() -> Vec<Tensor> {
    use half::{bf16, f16};
    vec![
        Tensor::from_values(&[1.0f32, -2.5, 0.1, 3.0e38], vec![2, 2]).unwrap(),
        Tensor::from_values(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], vec![3]).unwrap(),
        Tensor::from_values(&[0.5f64, -8.0], vec![2]).unwrap(),
        Tensor::from_values(&[f16::from_f32(1.5), f16::from_f32(-0.125)], vec![2]).unwrap(),
        Tensor::from_values(&[bf16::from_f32(2.0), bf16::from_f32(-1.0)], vec![1, 2]).unwrap(),
        Tensor::from_values(&[i8::MIN, i8::MAX], vec![2]).unwrap(),
        Tensor::from_values(&[i16::MIN, i16::MAX], vec![2]).unwrap(),
        Tensor::from_values(&[-(1i32 << 24), 1 << 24, -123_456], vec![3]).unwrap(),
        Tensor::from_values(&[-(1i64 << 24), 1 << 24, 99_999], vec![3]).unwrap(),
        Tensor::from_values(&[0u8, 255], vec![2]).unwrap(),
        Tensor::from_values(&[0u16, 65535], vec![2]).unwrap(),
        Tensor::from_values(&[0u32, 1 << 24, 77_777], vec![3]).unwrap(),
        Tensor::from_values(&[0u64, 1 << 24, 55_555], vec![3]).unwrap(),
        Tensor::from_values(&[true, false, true], vec![3]).unwrap(),
        Tensor::from_values::<f32>(&[], vec![0]).unwrap(),
        Tensor::from_values::<i32>(&[], vec![2, 0]).unwrap(),
        Tensor::scalar(42i32),
        Tensor::scalar(-0.75f32),
    ]
}

/// Values of every attribute type, with the awkward ones (inf, -inf, nan, extremes, empties).
fn sample_attrs() -> Vec<AttrValue> {
    let mut v = vec![
        AttrValue::Int(0),
        AttrValue::Int(-7),
        AttrValue::Int(i64::MAX),
        AttrValue::Int(i64::MIN),
        AttrValue::Float(0.0),
        AttrValue::Float(-0.0),
        AttrValue::Float(1.5),
        AttrValue::Float(0.1),
        AttrValue::Float(f32::MAX),
        AttrValue::Float(f32::MIN_POSITIVE),
        AttrValue::Float(1e-40),
        AttrValue::Float(f32::INFINITY),
        AttrValue::Float(f32::NEG_INFINITY),
        AttrValue::Float(f32::NAN),
        AttrValue::String(String::new()),
        AttrValue::String("héllo \"quoted\" \n nan".into()),
        AttrValue::String("inf".into()),
        AttrValue::Bool(true),
        AttrValue::Bool(false),
        AttrValue::ListInt(vec![]),
        AttrValue::ListInt(vec![1, -2, i64::MAX, i64::MIN]),
        AttrValue::ListFloat(vec![]),
        AttrValue::ListFloat(vec![
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
            0.3,
        ]),
        AttrValue::ListBool(vec![]),
        AttrValue::ListBool(vec![true, false]),
        AttrValue::ListType(vec![]),
        AttrValue::ListType(all_dtypes()),
        AttrValue::ListListInt(vec![]),
        AttrValue::ListListInt(vec![vec![], vec![1, 2], vec![-3]]),
        AttrValue::ListString(vec![]),
        AttrValue::ListString(vec!["a".into(), "".into(), "nan".into()]),
    ];
    v.extend(all_dtypes().iter().map(|d| AttrValue::Type(*d)));
    v.extend(sample_tensors().into_iter().map(AttrValue::Tensor));
    v
}

#[test]
fn attr_samples_cover_every_type() {
    let samples = sample_attrs();
    for t in AttrType::ALL {
        assert!(
            samples.iter().any(|a| a.attr_type() == *t),
            "no sample of {t}"
        );
    }
}

#[test]
fn attr_json_round_trip_every_type() {
    for a in sample_attrs() {
        let j = a.to_json();
        let back = AttrValue::from_json(a.attr_type(), &j)
            .unwrap_or_else(|e| panic!("{a:?} -> {j} does not parse back: {e}"));
        assert_eq!(back, a, "json {j}");
        // Through JSON text as well.
        let text = serde_json::to_string(&j).unwrap();
        let j2: serde_json::Value = serde_json::from_str(&text).unwrap();
        let back2 = AttrValue::from_json(a.attr_type(), &j2).unwrap();
        assert_eq!(back2, a, "text {text}");
    }
}

#[test]
fn attr_json_special_floats_are_strings() {
    for (v, want) in [
        (AttrValue::Float(f32::INFINITY), "inf"),
        (AttrValue::Float(f32::NEG_INFINITY), "-inf"),
        (AttrValue::Float(f32::NAN), "nan"),
        (AttrValue::Type(DataType::BF16), "DT_BF16"),
    ] {
        assert_eq!(v.to_json(), serde_json::json!(want), "{v:?}");
    }
    let t = AttrValue::Tensor(Tensor::from_values(&[1i32, 2], vec![2]).unwrap()).to_json();
    assert_eq!(
        t,
        serde_json::json!({"dtype": "DT_INT32", "shape": [2], "values": [1, 2]})
    );
    // Types accept bare names too.
    assert_eq!(
        AttrValue::from_json(AttrType::Type, &serde_json::json!("INT64")).unwrap(),
        AttrValue::Type(DataType::INT64)
    );
}

#[test]
fn attr_from_json_rejects_wrong_shapes() {
    use serde_json::json;
    let bad = [
        (AttrType::Int, json!("1")),
        (AttrType::Int, json!(1.5)),
        (AttrType::Int, json!(null)),
        (AttrType::Float, json!("abc")),
        (AttrType::Float, json!(true)),
        (AttrType::String, json!(3)),
        (AttrType::Bool, json!("true")),
        (AttrType::Type, json!("DT_NOPE")),
        (AttrType::Type, json!(0)),
        (AttrType::ListInt, json!([1, "2"])),
        (AttrType::ListInt, json!(1)),
        (AttrType::ListFloat, json!([1.0, "infinity"])),
        (AttrType::ListBool, json!([true, 0])),
        (AttrType::ListType, json!(["DT_FLOAT", "DT_NOPE"])),
        (AttrType::ListListInt, json!([1, 2])),
        (AttrType::ListListInt, json!([[1], ["x"]])),
        (AttrType::ListString, json!(["a", 1])),
        (AttrType::Tensor, json!([1, 2])),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": [3], "values": [1, 2]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": "x", "values": []}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": [-3], "values": []}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_NOPE", "shape": [], "values": [1]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_STRING", "shape": [1], "values": [1]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_INT32", "shape": [1], "values": ["a"]}),
        ),
    ];
    for (t, j) in bad {
        assert!(
            AttrValue::from_json(t, &j).is_err(),
            "{t} from {j} should fail"
        );
    }
}

#[test]
fn attr_approx_eq_tolerance() {
    let f = AttrValue::Float;
    assert!(f(1.0).approx_eq(&f(1.0)));
    assert!(f(1.0).approx_eq(&f(1.0 + 5e-6)));
    assert!(!f(1.0).approx_eq(&f(1.0 + 5e-5)));
    assert!(f(0.0).approx_eq(&f(9e-6)));
    assert!(!f(0.0).approx_eq(&f(2e-5)));
    // Relative tolerance for large magnitudes.
    assert!(f(1.0e6).approx_eq(&f(1.0e6 + 5.0)));
    assert!(!f(1.0e6).approx_eq(&f(1.0e6 + 50.0)));
    assert!(f(f32::NAN).approx_eq(&f(f32::NAN)));
    assert!(f(f32::INFINITY).approx_eq(&f(f32::INFINITY)));
    assert!(!f(f32::NAN).approx_eq(&f(1.0)));
    let l = AttrValue::ListFloat;
    assert!(l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0 + 1e-6, 2.0 - 1e-6])));
    assert!(!l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0, 2.001])));
    assert!(!l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0])));
    // Non-float types compare exactly.
    assert!(ints(3).approx_eq(&ints(3)));
    assert!(!ints(3).approx_eq(&ints(4)));
    assert!(!ints(1).approx_eq(&f(1.0)));
    assert!(AttrValue::String("a".into()).approx_eq(&"a".into()));
    // Exact equality: bit patterns (NaN equals itself; 0.0 and -0.0 differ).
    assert_eq!(f(f32::NAN), f(f32::NAN));
    assert_ne!(f(0.0), f(-0.0));
    assert_ne!(f(1.0), f(1.0 + 5e-6));
    assert_ne!(ints(1), AttrValue::ListInt(vec![1]));
}

#[test]
fn attr_type_parse_ge_spellings() {
    let cases = [
        ("Int", AttrType::Int),
        ("INT", AttrType::Int),
        ("int", AttrType::Int),
        ("Float", AttrType::Float),
        ("FLOAT", AttrType::Float),
        ("String", AttrType::String),
        ("Str", AttrType::String),
        ("STR", AttrType::String),
        ("Bool", AttrType::Bool),
        ("Type", AttrType::Type),
        ("DataType", AttrType::Type),
        ("DATA_TYPE", AttrType::Type),
        ("ListInt", AttrType::ListInt),
        ("LIST_INT", AttrType::ListInt),
        ("ListFloat", AttrType::ListFloat),
        ("LIST_FLOAT", AttrType::ListFloat),
        ("ListBool", AttrType::ListBool),
        ("ListType", AttrType::ListType),
        ("ListDataType", AttrType::ListType),
        ("ListListInt", AttrType::ListListInt),
        ("LIST_LIST_INT", AttrType::ListListInt),
        ("Tensor", AttrType::Tensor),
        ("TENSOR", AttrType::Tensor),
        ("ListString", AttrType::ListString),
        ("ListStr", AttrType::ListString),
        ("LIST_STR", AttrType::ListString),
    ];
    for (s, t) in cases {
        assert_eq!(AttrType::parse(s).unwrap(), t, "{s}");
    }
    for t in AttrType::ALL {
        assert_eq!(AttrType::parse(t.name()).unwrap(), *t);
        assert_eq!(t.to_string(), t.name());
    }
    for bad in [
        "",
        "Integer",
        "List",
        "ListListFloat",
        "NamedAttrs",
        "Tensors",
    ] {
        assert!(AttrType::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn attr_accessors_and_from() {
    assert_eq!(AttrValue::from(3i64).as_int(), Some(3));
    assert_eq!(AttrValue::from(1.5f32).as_float(), Some(1.5));
    assert_eq!(AttrValue::from(true).as_bool(), Some(true));
    assert_eq!(AttrValue::from("s").as_str(), Some("s"));
    assert_eq!(
        AttrValue::from(vec![1i64, 2]).as_list_int(),
        Some(&[1i64, 2][..])
    );
    assert_eq!(
        AttrValue::from(DataType::INT8).as_type(),
        Some(DataType::INT8)
    );
    assert!(AttrValue::from(Tensor::scalar(1.0f32))
        .as_tensor()
        .is_some());
    assert_eq!(AttrValue::from(3i64).as_float(), None);
    assert_eq!(AttrValue::from(1.5f32).as_int(), None);
}

#[test]
fn approx_eq_does_not_match_infinity_with_numbers() {
    let inf = AttrValue::Float(f32::INFINITY);
    assert!(inf.approx_eq(&AttrValue::Float(f32::INFINITY)));
    assert!(!inf.approx_eq(&AttrValue::Float(f32::NEG_INFINITY)));
    assert!(!inf.approx_eq(&AttrValue::Float(1.0)));
    assert!(!AttrValue::Float(f32::NAN).approx_eq(&AttrValue::Float(0.0)));
}

#[test]
fn tensor_attribute_json_is_exact() {
    let cases = vec![
        Tensor::from_values(&[16_777_217i32, -2_147_483_648], vec![2]).expect("i32"),
        Tensor::from_values(&[i64::MAX, i64::MIN, 9_007_199_254_740_993], vec![3]).expect("i64"),
        Tensor::from_values(&[u64::MAX, 0], vec![2]).expect("u64"),
        Tensor::from_values(&[0.1f64, 1e300, f64::INFINITY], vec![3]).expect("f64"),
        Tensor::from_values(&[0.1f32, -0.0], vec![2]).expect("f32"),
    ];
    for t in cases {
        let a = AttrValue::Tensor(t);
        let back = AttrValue::from_json(AttrType::Tensor, &a.to_json()).expect("parse");
        assert_eq!(back, a, "{}", a.to_json());
    }
    let out_of_range = serde_json::json!({"dtype": "DT_INT8", "shape": [1], "values": [300]});
    assert!(AttrValue::from_json(AttrType::Tensor, &out_of_range).is_err());
}
