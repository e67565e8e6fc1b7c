//! Lists and optionals (DT_VARIANT): what their descriptions carry through the list and
//! optional operators.

use super::*;
use es_core::infer::sequence::{VariantInfo, VariantKind};

fn list(dt: DataType, dims: Option<&[i64]>) -> TensorDesc {
    let shape = dims.map_or_else(Shape::unknown_rank, |d| Shape::new(d.to_vec()));
    VariantInfo::new(VariantKind::Sequence, dt, shape).desc()
}

fn t(dt: DataType, dims: &[i64]) -> TensorDesc {
    TensorDesc::new(dt, Shape::new(dims.to_vec()))
}

fn attrs(kv: &[(&str, AttrValue)]) -> es_core::AttrMap {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

#[test]
fn a_variant_description_round_trips_its_contents() {
    let d = list(FLOAT, Some(&[2, -1]));
    assert_eq!((d.dtype, d.shape.dims()), (DataType::VARIANT, &[][..]));
    let v = VariantInfo::of(&d).unwrap();
    assert_eq!(v.kind, Some(VariantKind::Sequence));
    assert_eq!((v.elem_dtype, v.elem_shape.dims()), (FLOAT, &[2, -1][..]));
    assert_eq!(v.element_desc(), t(FLOAT, &[2, -1]));
    assert!(VariantInfo::of(&t(FLOAT, &[2])).is_none());
    let unknown = VariantInfo::of(&list(UNDEFINED, None)).unwrap();
    assert!(unknown.elem_shape.is_unknown_rank());
}

#[test]
fn pushing_merges_element_shapes_and_checks_the_dtype() {
    let a = attrs(&[("element_dtype", AttrValue::Type(FLOAT))]);
    let l = list(FLOAT, Some(&[2, 3]));
    let out = infer_raw(
        "TensorListPushBack",
        vec![Some(&l), Some(&t(FLOAT, &[4, 3]))],
        vec![0, 1],
        vec![0],
        &a,
    )
    .unwrap();
    let v = VariantInfo::of(&out[0]).unwrap();
    assert_eq!(v.elem_shape.dims(), &[-1, 3]);
    let e = infer_raw(
        "TensorListPushBack",
        vec![Some(&l), Some(&t(INT64, &[4, 3]))],
        vec![0, 1],
        vec![0],
        &a,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("DT_INT64") && e.contains("DT_FLOAT"), "{e}");
    // A tensor is no list.
    let e = infer_raw(
        "TensorListLength",
        vec![Some(&t(FLOAT, &[2]))],
        vec![0],
        vec![0],
        &attrs(&[]),
    );
    assert!(e.is_ok(), "TensorListLength's rule reads no input");
    let e = infer_raw(
        "TensorListGetItem",
        vec![Some(&t(FLOAT, &[2])), Some(&t(INT32, &[]))],
        vec![0, 1],
        vec![0],
        &a,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("must be a list"), "{e}");
}

#[test]
fn items_splits_and_concatenations_get_their_shapes() {
    let a = attrs(&[("element_dtype", AttrValue::Type(FLOAT))]);
    let l = list(FLOAT, Some(&[2, 3]));
    let item = infer_raw(
        "TensorListGetItem",
        vec![Some(&l), Some(&t(INT32, &[]))],
        vec![0, 1],
        vec![0],
        &a,
    )
    .unwrap();
    assert_eq!(item[0], t(FLOAT, &[2, 3]));
    let split = attrs(&[("axis", AttrValue::Int(1)), ("keepdims", AttrValue::Int(0))]);
    let s = infer_raw(
        "SplitToSequence",
        vec![Some(&t(FLOAT, &[4, 5]))],
        vec![0],
        vec![0],
        &split,
    )
    .unwrap();
    assert_eq!(VariantInfo::of(&s[0]).unwrap().elem_shape.dims(), &[4]);
    let cat = attrs(&[
        ("axis", AttrValue::Int(-1)),
        ("new_axis", AttrValue::Int(1)),
    ]);
    let c = infer_raw("ConcatFromSequence", vec![Some(&l)], vec![0], vec![0], &cat).unwrap();
    assert_eq!(c[0], t(FLOAT, &[2, 3, -1]));
    let cat0 = attrs(&[("axis", AttrValue::Int(0)), ("new_axis", AttrValue::Int(0))]);
    let c = infer_raw(
        "ConcatFromSequence",
        vec![Some(&l)],
        vec![0],
        vec![0],
        &cat0,
    )
    .unwrap();
    assert_eq!(c[0], t(FLOAT, &[-1, 3]));
}

#[test]
fn optionals_wrap_and_unwrap_their_contents() {
    let none = attrs(&[]);
    let o = infer_raw(
        "OptionalFromValue",
        vec![Some(&t(INT64, &[2]))],
        vec![0],
        vec![0],
        &none,
    )
    .unwrap();
    let v = VariantInfo::of(&o[0]).unwrap();
    assert_eq!(v.kind, Some(VariantKind::OptionalTensor));
    let g = infer_raw(
        "OptionalGetValue",
        vec![Some(&o[0])],
        vec![0],
        vec![0],
        &none,
    )
    .unwrap();
    assert_eq!(g[0], t(INT64, &[2]));
    let ol = infer_raw(
        "OptionalFromValue",
        vec![Some(&list(FLOAT, None))],
        vec![0],
        vec![0],
        &none,
    )
    .unwrap();
    let g = infer_raw(
        "OptionalGetValue",
        vec![Some(&ol[0])],
        vec![0],
        vec![0],
        &none,
    )
    .unwrap();
    assert_eq!(
        VariantInfo::of(&g[0]).unwrap().kind,
        Some(VariantKind::Sequence)
    );
    let h = infer_raw(
        "OptionalHasValue",
        vec![Some(&o[0])],
        vec![0],
        vec![0],
        &none,
    )
    .unwrap();
    assert_eq!(h[0], t(BOOL, &[]));
}
