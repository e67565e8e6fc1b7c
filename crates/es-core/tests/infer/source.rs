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
    t.dims_each_in(
        "Fill",
        rows![
            &[("dims", Typed(INT32, &[3])), ("value", Port(v))], &[] => &[U, U, U];
            &[("dims", Typed(INT32, &[U])), ("value", Port(v))], &[] => &[-2];
        ],
    );
    t.rejects_each_in(
        "Fill",
        rows![
            &[("dims", I32(&[2, -1])), ("value", Port(v))], &[] => &["negative dim -1"];
            &[("dims", Port(d)), ("value", F(&[2]))], &[] => &["'value'", "scalar"];
        ],
    );
}

#[test]
fn shape_op() {
    let mut t = T::new();
    let x = t.f(&[2, U, 3]);
    t.ok_each(
        "Shape",
        rows![
            &[("x", &[x])], &[] => (INT32, &[3]);
            &[("x", &[x])], &[("dtype", i(INT64 as i64))] => (INT64, &[3]);
        ],
    );
    t.ok_each_in(
        "Shape",
        rows![
            &[("x", F(&[]))], &[] => (INT32, &[0]);
            &[("x", F(&[-2]))], &[] => (INT32, &[U]);
        ],
    );
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
    t.ok_each_in(
        "Size",
        rows![
            &[("x", F(&[2, 3]))], &[] => (INT32, &[]);
            &[("x", F(&[-2]))], &[("dtype", i(9))] => (INT64, &[]);
        ],
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

// ------------------------------------------------------------------------------ generators

#[test]
fn range_from_constants() {
    let mut t = T::new();
    let ins = ["start", "limit", "delta"];
    let cases_i: &[(i32, i32, i32, bool, i64)] = &[
        (0, 10, 3, false, 4),
        (0, 9, 3, false, 3),
        (0, 10, 2, true, 6),
        (0, 9, 2, true, 5),
        (10, 0, -3, false, 4),
        (10, 0, -3, true, 4),
        (-5, 0, 2, false, 3),
        (3, 3, 1, false, 0),
    ];
    for &(s, l, d, closed, n) in cases_i {
        let (s_, l_, d_) = (t.scalar_i32(s), t.scalar_i32(l), t.scalar_i32(d));
        assert_eq!(
            t.ok(
                "Range",
                &named(ins, [&[s_], &[l_], &[d_]]),
                &[("is_closed", b(closed))]
            ),
            (INT32, vec![n]),
            "{s} {l} {d} {closed}"
        );
    }
    let (s, l, d) = (t.scalar_f(0.0), t.scalar_f(1.0), t.scalar_f(0.3));
    assert_eq!(
        t.ok("Range", &named(ins, [&[s], &[l], &[d]]), &[]),
        (FLOAT, vec![4])
    );
    // One-element vectors are accepted as scalars.
    let one = |t: &mut T, v: i64| t.konst(Tensor::from_values(&[v], vec![1]).unwrap());
    let (s, l, d) = (one(&mut t, 1), one(&mut t, 7), one(&mut t, 2));
    assert_eq!(
        t.ok("Range", &named(ins, [&[s], &[l], &[d]]), &[]),
        (INT64, vec![3])
    );
}

#[test]
fn range_unknown_and_errors() {
    let mut t = T::new();
    let ins = ["start", "limit", "delta"];
    let s = t.scalar_i32(0);
    let d = t.scalar_i32(1);
    let l = t.input(INT32, &[]);
    assert_eq!(
        t.ok("Range", &named(ins, [&[s], &[l], &[d]]), &[]),
        (INT32, vec![U])
    );
    let lu = t.input(INT32, &[-2]);
    assert_eq!(
        t.dims("Range", &named(ins, [&[s], &[lu], &[d]]), &[]),
        vec![U]
    );
    // A length that does not fit in i64 is reported unknown.
    let (lo, hi, one) = (
        t.scalar_i64(i64::MIN),
        t.scalar_i64(i64::MAX),
        t.scalar_i64(1),
    );
    assert_eq!(
        t.ok("Range", &named(ins, [&[lo], &[hi], &[one]]), &[]),
        (INT64, vec![U])
    );
    let l5 = t.scalar_i32(5);
    let z = t.scalar_i32(0);
    t.rejects(
        "Range",
        &named(ins, [&[s], &[l5], &[z]]),
        &[],
        &["input 'delta' must be a finite non-zero value"],
    );
    let neg = t.scalar_i32(-1);
    t.rejects(
        "Range",
        &named(ins, [&[s], &[l5], &[neg]]),
        &[],
        &["negative length"],
    );
    let v = t.input(INT32, &[2]);
    t.rejects(
        "Range",
        &named(ins, [&[v], &[l5], &[d]]),
        &[],
        &["input 'start' must be a scalar (one element), got shape [2]"],
    );
    let fl = t.scalar_f(5.0);
    t.fails(
        "Range",
        &named(ins, [&[s], &[fl], &[d]]),
        &[],
        &["both must have the same dtype"],
    );
}

#[test]
fn random_uniform_shape_and_dtype() {
    use es_core::{AttrValue, DataType, GraphBuilder, OutPort, Shape, Tensor};
    let mut b = GraphBuilder::new("g");
    let args = |shape: OutPort, dtype: DataType| es_core::builder::OpArgs {
        inputs: vec![vec![Some(shape)]],
        attrs: [("dtype".to_string(), AttrValue::Type(dtype))]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    // Constant shape: resolved.
    let s = b
        .create_const(Tensor::from_values(&[2i64, 3], vec![2]).unwrap(), None)
        .unwrap();
    let y = b
        .add_op("RandomUniform", args(s, DataType::FLOAT16))
        .unwrap();
    let d = b.graph().out_desc(OutPort { node: y, index: 0 }).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (DataType::FLOAT16, vec![2, 3]));
    // Unknown values, known length: rank known, dims unknown.
    let s = b
        .create_input(
            0,
            None,
            "Data",
            DataType::INT32,
            es_core::Format::ND,
            Shape::new(vec![4]),
        )
        .unwrap();
    let y = b.add_op("RandomUniform", args(s, DataType::FLOAT)).unwrap();
    assert_eq!(
        b.graph()
            .out_desc(OutPort { node: y, index: 0 })
            .unwrap()
            .shape
            .to_vec(),
        vec![-1; 4]
    );
    // Wrong: a dtype the output does not allow, a negative dim, a 2-D shape input.
    assert!(b.add_op("RandomUniform", args(s, DataType::INT32)).is_err());
    let neg = b
        .create_const(Tensor::from_values(&[2i64, -3], vec![2]).unwrap(), None)
        .unwrap();
    assert!(b
        .add_op("RandomUniform", args(neg, DataType::FLOAT))
        .is_err());
    let m = b
        .create_input(
            1,
            None,
            "Data",
            DataType::INT32,
            es_core::Format::ND,
            Shape::new(vec![2, 2]),
        )
        .unwrap();
    assert!(b.add_op("RandomUniform", args(m, DataType::FLOAT)).is_err());
}
