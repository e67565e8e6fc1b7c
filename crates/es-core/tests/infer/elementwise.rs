//! Element-wise operators: broadcasting binaries, unaries, Cast, FusedMulAdd, IdentityN
//! (`src/infer/elementwise.rs`).

use super::*;

const BINARY: &[&str] = &["Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum"];

#[test]
fn binary_broadcast_known() {
    for ty in BINARY {
        let mut t = T::new();
        assert_eq!(
            t.ok_in(ty, &[("x1", F(&[2, 1, 3])), ("x2", F(&[4, 1]))], &[]),
            (FLOAT, vec![2, 4, 3]),
            "{ty}"
        );
        assert_eq!(
            t.ok_in(
                ty,
                &[("x1", Typed(INT32, &[])), ("x2", Typed(INT32, &[5]))],
                &[]
            ),
            (INT32, vec![5]),
            "{ty}"
        );
    }
}

#[test]
fn binary_broadcast_unknown() {
    for ty in BINARY {
        let mut t = T::new();
        assert_eq!(
            t.dims_in(ty, &[("x1", F(&[U, 3])), ("x2", F(&[1, 3]))], &[]),
            vec![U, 3],
            "{ty}"
        );
        let c = t.f(&[5, 4]);
        assert_eq!(
            t.dims_in(ty, &[("x1", F(&[U, 1])), ("x2", Port(c))], &[]),
            vec![5, 4],
            "{ty}"
        );
        assert_eq!(
            t.dims_in(ty, &[("x1", F(&[-2])), ("x2", Port(c))], &[]),
            vec![-2],
            "{ty}"
        );
    }
}

#[test]
fn binary_broadcast_mismatch() {
    for ty in BINARY {
        let mut t = T::new();
        let m = t.err_in(ty, &[("x1", F(&[2, 3])), ("x2", F(&[4, 3]))], &[]);
        has(
            &m,
            &[
                &format!("{ty} '{ty}_0'"),
                "'x1' [2, 3]",
                "'x2' [4, 3]",
                "cannot be broadcast",
            ],
        );
    }
}

const UNARY: &[&str] = &[
    "Neg",
    "Relu",
    "Relu6",
    "Sigmoid",
    "Exp",
    "Sqrt",
    "Identity",
    "TensorMove",
    "ZerosLike",
];

#[test]
fn unary_keeps_shape_and_dtype() {
    for ty in UNARY {
        let mut t = T::new();
        let x = t.input(FLOAT16, &[2, 3]);
        assert_eq!(t.ok(ty, &[("x", &[x])], &[]), (FLOAT16, vec![2, 3]), "{ty}");
        assert_eq!(
            t.ok_in(ty, &[("x", F(&[U, 3, U]))], &[]),
            (FLOAT, vec![U, 3, U]),
            "{ty}"
        );
        assert_eq!(
            t.ok_in(ty, &[("x", F(&[-2]))], &[]),
            (FLOAT, vec![-2]),
            "{ty}"
        );
    }
}

#[test]
fn logical_not() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in("LogicalNot", &[("x", Typed(BOOL, &[4]))], &[]),
        (BOOL, vec![4])
    );
    assert_eq!(
        t.ok_in("LogicalNot", &[("x", Typed(BOOL, &[U, 2]))], &[]),
        (BOOL, vec![U, 2])
    );
    // A float input is rejected by the prototype's dtype check.
    let x = t.f(&[4]);
    let e = t.call("LogicalNot", &[("x", &[x])], &[]).unwrap_err();
    has(&e.to_string(), &["'x'", "DT_FLOAT", "DT_BOOL"]);
}

#[test]
fn cast() {
    let mut t = T::new();
    let x = t.f(&[2, U]);
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(FLOAT16 as i64))]),
        (FLOAT16, vec![2, U])
    );
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(INT64 as i64))]),
        (INT64, vec![2, U])
    );
    let x = t.input(INT32, &[-2]);
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(BOOL as i64))]),
        (BOOL, vec![-2])
    );
    let m = t.err("Cast", &[("x", &[x])], &[("dst_type", i(999))]);
    has(&m, &["'dst_type'", "999"]);
    let m = t.err("Cast", &[("x", &[x])], &[("dst_type", i(UNDEFINED as i64))]);
    has(&m, &["'dst_type'", "DT_UNDEFINED"]);
    // DT_UINT1 is an allowed input dtype of Cast but not an output dtype.
    let m = t.err(
        "Cast",
        &[("x", &[x])],
        &[("dst_type", i(DataType::UINT1 as i64))],
    );
    has(&m, &["'dst_type'", "DT_UINT1"]);
}

#[test]
fn fused_mul_add() {
    let mut t = T::new();
    let (a, c, d) = (t.f(&[2, 3]), t.f(&[3]), t.f(&[4, 1, 1]));
    assert_eq!(
        t.ok(
            "FusedMulAdd",
            &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
            &[]
        ),
        (FLOAT, vec![4, 2, 3])
    );
    let (a, c, d) = (t.f(&[U, 3]), t.f(&[2, U]), t.f(&[1]));
    assert_eq!(
        t.dims(
            "FusedMulAdd",
            &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
            &[]
        ),
        vec![2, 3]
    );
    let (a, c, d) = (t.f(&[2, 3]), t.f(&[3]), t.f(&[4]));
    let m = t.err(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
    );
    has(&m, &["'x3' [4]", "cannot be broadcast"]);
    let (a, c) = (t.f(&[2, 3]), t.f(&[2]));
    let m = t.err(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
    );
    has(&m, &["'x1' [2, 3]", "'x2' [2]"]);
}

#[test]
fn identity_n() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.input(INT64, &[U]));
    let id = t.call("IdentityN", &[("x", &[a, c])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 3]), (INT64, vec![U])]);
    let r = t.input(BOOL, &[-2]);
    let id = t.call("IdentityN", &[("x", &[r])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(BOOL, vec![-2])]);
    // A node whose output count differs from its input count.
    let d = TensorDesc::new(FLOAT, Shape::new(vec![2]));
    let e = infer_raw(
        "IdentityN",
        vec![Some(&d)],
        vec![0],
        vec![0, 0],
        &Default::default(),
    )
    .unwrap_err();
    has(&e.to_string(), &["1 inputs 'x' but 2 outputs 'y'"]);
}
