//! The string operators: shapes and dtypes of their outputs, and what they refuse.

use super::*;

fn t(dt: DataType, dims: &[i64]) -> TensorDesc {
    TensorDesc::new(dt, Shape::new(dims.to_vec()))
}

fn attrs(kv: &[(&str, AttrValue)]) -> es_core::AttrMap {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn one(ty: &str, x: &TensorDesc, a: &[(&str, AttrValue)]) -> es_core::Result<Vec<TensorDesc>> {
    let outs = if ty == "StringSplitPadded" {
        vec![0, 1]
    } else {
        vec![0]
    };
    infer_raw(ty, vec![Some(x)], vec![0], outs, &attrs(a))
}

const S: DataType = DataType::STRING;

#[test]
fn join_broadcasts_its_inputs() {
    let (a, b) = (t(S, &[2, 1]), t(S, &[3]));
    let out = infer_raw(
        "StringJoin",
        vec![Some(&a), Some(&b)],
        vec![0, 0],
        vec![0],
        &attrs(&[]),
    )
    .unwrap();
    assert_eq!(out, vec![t(S, &[2, 3])]);
    let c = t(S, &[4]);
    let e = infer_raw(
        "StringJoin",
        vec![Some(&b), Some(&c)],
        vec![0, 0],
        vec![0],
        &attrs(&[]),
    );
    assert!(e.unwrap_err().to_string().contains("cannot be broadcast"));
}

#[test]
fn element_wise_string_ops_keep_the_shape() {
    let x = t(S, &[2, -1]);
    let p = [("pattern", AttrValue::String("a+".into()))];
    assert_eq!(
        one("StaticRegexFullMatch", &x, &p).unwrap(),
        vec![t(BOOL, &[2, -1])]
    );
    assert!(
        one("StaticRegexFullMatch", &x, &[]).is_err(),
        "pattern is required"
    );
    let n = t(FLOAT, &[3]);
    assert_eq!(one("AsString", &n, &[]).unwrap(), vec![t(S, &[3])]);
    let to = [("out_type", AttrValue::Type(INT32))];
    assert_eq!(
        one("StringToNumber", &x, &to).unwrap(),
        vec![t(INT32, &[2, -1])]
    );
    assert_eq!(
        one("StringToNumber", &x, &[]).unwrap(),
        vec![t(FLOAT, &[2, -1])]
    );
    let values = Tensor::from_values(&[1i64, 2], vec![2]).unwrap();
    let le = [("values", AttrValue::Tensor(values))];
    assert_eq!(
        one("LabelEncoder", &x, &le).unwrap(),
        vec![t(INT64, &[2, -1])]
    );
}

#[test]
fn normalizer_and_split_shapes() {
    assert_eq!(
        one("StringNormalizer", &t(S, &[4]), &[]).unwrap(),
        vec![t(S, &[-1])]
    );
    assert_eq!(
        one("StringNormalizer", &t(S, &[1, 4]), &[]).unwrap(),
        vec![t(S, &[1, -1])]
    );
    let e = one("StringNormalizer", &t(S, &[2, 4]), &[]).unwrap_err();
    assert!(e.to_string().contains("[C] or [1, C]"), "{e}");
    let out = one("StringSplitPadded", &t(S, &[2, 3]), &[]).unwrap();
    assert_eq!(out, vec![t(S, &[2, 3, -1]), t(INT64, &[2, 3])]);
    let u = TensorDesc::new(S, Shape::unknown_rank());
    assert!(one("StringSplitPadded", &u, &[]).unwrap()[0]
        .shape
        .is_unknown_rank());
}
