//! Sources and shape queries: Data, Const, Fill, Shape, Size, Rank (`src/infer/source.rs`).

use super::*;

#[test]
fn data_like_ops_pass_their_input_through() {
    for ty in ["Data", "RefData", "Variable"] {
        let mut t = T::new();
        let x = t.input_fmt(FLOAT16, Format::NCHW, &[2, U, 4]);
        let id = t.call(ty, &[("x", &[x])], &[]).unwrap();
        let d = t.out(id, 0);
        assert_eq!(
            (d.dtype, d.shape.to_vec(), d.format),
            (FLOAT16, vec![2, U, 4], Format::NCHW),
            "{ty}"
        );
        let x = t.input(INT32, &[-2]);
        let id = t.call(ty, &[("x", &[x])], &[]).unwrap();
        assert_eq!(t.outs(id), vec![(INT32, vec![-2])], "{ty}");
    }
}

#[test]
fn data_without_input_is_undefined_unknown_rank() {
    for ty in ["Data", "RefData", "Variable"] {
        let out = infer_raw(ty, vec![None], vec![0], vec![0], &Default::default()).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].dtype, out[0].shape.clone()),
            (UNDEFINED, Shape::unknown_rank()),
            "{ty}"
        );
    }
}

#[test]
fn create_input_sets_data_desc() {
    let mut t = T::new();
    let x = t.input(INT64, &[3, U]);
    let d = t.b.graph().out_desc(x).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (INT64, vec![3, U]));
}

#[test]
fn const_takes_the_value_desc() {
    let mut t = T::new();
    let v = Tensor::from_values(&[1i64, 2, 3, 4, 5, 6], vec![2, 3]).unwrap();
    let (dt, dims) = t.ok("Const", &[], &[("value", AttrValue::Tensor(v))]);
    assert_eq!((dt, dims), (INT64, vec![2, 3]));
    let (dt, dims) = t.ok(
        "Const",
        &[],
        &[("value", AttrValue::Tensor(Tensor::scalar(true)))],
    );
    assert_eq!((dt, dims), (BOOL, vec![]));
    // create_const agrees with the rule.
    let p = t.scalar_f(1.5);
    let d = t.b.graph().out_desc(p).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (FLOAT, vec![]));
}

#[test]
fn const_without_a_tensor_value_fails() {
    let mut attrs = es_core::AttrMap::new();
    attrs.insert("value".into(), i(3));
    let e = infer_raw("Const", vec![], vec![], vec![0], &attrs).unwrap_err();
    has(&e.to_string(), &["Const 'n'", "'value'", "Tensor"]);
}

#[test]
fn fill() {
    let mut t = T::new();
    let d = t.ints(&[2, 3]);
    let v = t.scalar_f(1.0);
    assert_eq!(
        t.ok("Fill", &[("dims", &[d]), ("value", &[v])], &[]),
        (FLOAT, vec![2, 3])
    );
    let vi = t.b.create_const(Tensor::scalar(7i64), None).unwrap();
    assert_eq!(
        t.ok_in("Fill", &[("dims", I64(&[4])), ("value", Port(vi))], &[]),
        (INT64, vec![4])
    );
    assert_eq!(
        t.dims_in(
            "Fill",
            &[("dims", Typed(INT32, &[3])), ("value", Port(v))],
            &[]
        ),
        vec![U, U, U]
    );
    assert_eq!(
        t.dims_in(
            "Fill",
            &[("dims", Typed(INT32, &[U])), ("value", Port(v))],
            &[]
        ),
        vec![-2]
    );
    t.rejects_each_in(
        "Fill",
        &[
            (
                &[("dims", I32(&[2, -1])), ("value", Port(v))],
                &[],
                &["negative dim -1"],
            ),
            (
                &[("dims", Port(d)), ("value", F(&[2]))],
                &[],
                &["'value'", "scalar"],
            ),
        ],
    );
}

#[test]
fn shape_op() {
    let mut t = T::new();
    let x = t.f(&[2, U, 3]);
    assert_eq!(t.ok("Shape", &[("x", &[x])], &[]), (INT32, vec![3]));
    assert_eq!(
        t.ok("Shape", &[("x", &[x])], &[("dtype", i(INT64 as i64))]),
        (INT64, vec![3])
    );
    assert_eq!(t.ok_in("Shape", &[("x", F(&[]))], &[]), (INT32, vec![0]));
    assert_eq!(t.ok_in("Shape", &[("x", F(&[-2]))], &[]), (INT32, vec![U]));
    t.rejects(
        "Shape",
        &[("x", &[x])],
        &[("dtype", i(FLOAT as i64))],
        &["'dtype'", "DT_FLOAT"],
    );
}

#[test]
fn size_and_rank_are_scalars() {
    let mut t = T::new();
    assert_eq!(t.ok_in("Size", &[("x", F(&[2, 3]))], &[]), (INT32, vec![]));
    assert_eq!(
        t.ok_in("Size", &[("x", F(&[-2]))], &[("dtype", i(9))]),
        (INT64, vec![])
    );
    t.rejects_in(
        "Size",
        &[("x", F(&[2, 3]))],
        &[("dtype", i(1))],
        &[
            "attribute 'dtype' must be DT_INT32 (3) or DT_INT64 (9)",
            "DT_FLOAT16",
        ],
    );
    let x = t.input(BOOL, &[2, U, 4]);
    assert_eq!(t.ok("Rank", &[("x", &[x])], &[]), (INT32, vec![]));
    assert_eq!(t.ok_in("Rank", &[("x", F(&[-2]))], &[]), (INT32, vec![]));
}
