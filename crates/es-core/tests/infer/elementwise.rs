//! Element-wise operators: broadcasting binaries, unaries, Cast, FusedMulAdd, IdentityN
//! (`src/infer/elementwise.rs`).

use super::*;

pub(crate) const BINARY: &[&str] = &["Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum"];

#[test]
fn binary_broadcast_known() {
    for ty in BINARY {
        let mut t = T::new();
        t.ok_each_in(
            ty,
            &[
                (&x12(F(&[2, 1, 3]), F(&[4, 1])), &[], (FLOAT, &[2, 4, 3])),
                (
                    &x12(Typed(INT32, &[]), Typed(INT32, &[5])),
                    &[],
                    (INT32, &[5]),
                ),
            ],
        );
    }
}

#[test]
fn binary_broadcast_unknown() {
    for ty in BINARY {
        let mut t = T::new();
        assert_eq!(
            t.dims_in(ty, &x12(F(&[U, 3]), F(&[1, 3])), &[]),
            vec![U, 3],
            "{ty}"
        );
        let c = t.f(&[5, 4]);
        t.dims_each_in(
            ty,
            &[
                (&x12(F(&[U, 1]), Port(c)), &[], &[5, 4]),
                (&x12(F(&[-2]), Port(c)), &[], &[-2]),
            ],
        );
    }
}

#[test]
fn binary_broadcast_mismatch() {
    for ty in BINARY {
        let mut t = T::new();
        t.rejects_in(
            ty,
            &x12(F(&[2, 3]), F(&[4, 3])),
            &[],
            &[
                &format!("{ty} '{ty}_0'"),
                "'x1' [2, 3]",
                "'x2' [4, 3]",
                "cannot be broadcast",
            ],
        );
    }
}

pub(crate) const UNARY: &[&str] = &[
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
        t.ok_each_in(
            ty,
            &[
                (&[("x", F(&[U, 3, U]))], &[], (FLOAT, &[U, 3, U])),
                (&[("x", F(&[-2]))], &[], (FLOAT, &[-2])),
            ],
        );
    }
}

#[test]
fn logical_not() {
    let mut t = T::new();
    t.ok_each_in(
        "LogicalNot",
        rows![
            &[("x", Typed(BOOL, &[4]))], &[] => (BOOL, &[4]);
            &[("x", Typed(BOOL, &[U, 2]))], &[] => (BOOL, &[U, 2]);
        ],
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
    t.ok_each(
        "Cast",
        rows![
            &[("x", &[x])], &[("dst_type", i(FLOAT16 as i64))] => (FLOAT16, &[2, U]);
            &[("x", &[x])], &[("dst_type", i(INT64 as i64))] => (INT64, &[2, U]);
        ],
    );
    let x = t.input(INT32, &[-2]);
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(BOOL as i64))]),
        (BOOL, vec![-2])
    );
    t.rejects_each(
        "Cast",
        rows![
            &[("x", &[x])], &[("dst_type", i(999))] => &["'dst_type'", "999"];
            &[("x", &[x])], &[("dst_type", i(UNDEFINED as i64))] => &["'dst_type'", "DT_UNDEFINED"];
        ],
    );
    // DT_UINT1 is an allowed input dtype of Cast but not an output dtype.
    t.rejects(
        "Cast",
        &[("x", &[x])],
        &[("dst_type", i(DataType::UINT1 as i64))],
        &["'dst_type'", "DT_UINT1"],
    );
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
    t.rejects(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
        &["'x3' [4]", "cannot be broadcast"],
    );
    let (a, c) = (t.f(&[2, 3]), t.f(&[2]));
    t.rejects(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
        &["'x1' [2, 3]", "'x2' [2]"],
    );
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

// ------------------------------------------------------------------------------ the fragment

pub(crate) const MATH_UNARY: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Cos",
    "Cosh",
    "Sin",
    "Sinh",
    "Tan",
    "Tanh",
    "Ceil",
    "Floor",
    "Round",
    "Sign",
    "Reciprocal",
    "Log",
    "Log1p",
    "Erf",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "LeakyRelu",
    "HardSigmoid",
    "Gelu",
    "GeluV2",
    "Mish",
    "Swish",
    "IsNan",
    "IsInf",
    "Square",
    "Rsqrt",
    "Invert",
    "Expm1",
    "Fills",
];

pub(crate) const MATH_BINARY: &[&str] = &[
    "Pow",
    "FloorDiv",
    "FloorMod",
    "Mod",
    "Equal",
    "NotEqual",
    "Greater",
    "GreaterEqual",
    "Less",
    "LessEqual",
    "LogicalAnd",
    "LogicalOr",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "SquaredDifference",
    "Atan2",
    "DivNoNan",
];

// ------------------------------------------------------------------------------ element-wise

/// Attributes an op needs that have no default.
fn required_attrs(ty: &str) -> Vec<(&'static str, AttrValue)> {
    match ty {
        "Fills" => vec![("value", f(1.5))],
        _ => vec![],
    }
}

#[test]
fn unary_known_unknown_and_bad_dtype() {
    for &ty in MATH_UNARY {
        let mut t = T::new();
        let p = t.proto(ty);
        let xn = p.inputs[0].name.clone();
        let attrs = required_attrs(ty);
        let dt = pick(&p, &xn);
        let want = fixed_out(&p).unwrap_or(dt);
        for dims in [&[2i64, 3, 4][..], &[], &[U, 3], &[-2]] {
            let x = t.input(dt, dims);
            assert_eq!(
                t.ok(ty, &[(&xn, &[x])], &attrs),
                (want, dims.to_vec()),
                "{ty} {dims:?}"
            );
        }
        let bad = reject(&p, &xn);
        let x = t.input(bad, &[2]);
        let e = t.fail(ty, &[(&xn, &[x])], &attrs).to_string();
        has(&e, &[ty, &format!("input '{xn}'"), "expected one of"]);
    }
}

#[test]
fn unary_attributes_are_checked() {
    let mut t = T::new();
    let x = t.f(&[4]);
    assert_eq!(
        t.dims("Round", &[("x", &[x])], &[("decimals", i(2))]),
        vec![4]
    );
    assert_eq!(
        t.dims(
            "Elu",
            &[("x", &[x])],
            &[("alpha", f(0.5)), ("input_scale", f(2.0))]
        ),
        vec![4]
    );
    assert_eq!(
        t.dims("LeakyRelu", &[("x", &[x])], &[("negative_slope", f(0.1))]),
        vec![4]
    );
    assert_eq!(
        t.dims("Swish", &[("x", &[x])], &[("scale", f(2.0))]),
        vec![4]
    );
    // Fills needs its value; a wrong attribute type is rejected.
    let e = t.fail("Fills", &[("x", &[x])], &[]).to_string();
    has(&e, &["required attribute 'value'"]);
    let e = t
        .fail("Round", &[("x", &[x])], &[("decimals", f(1.0))])
        .to_string();
    has(&e, &["attribute 'decimals' must be Int"]);
}

#[test]
fn log_promotes_integers_to_float() {
    let mut t = T::new();
    for (dt, want) in [
        (INT32, FLOAT),
        (UINT8, FLOAT),
        (BOOL, FLOAT),
        (FLOAT16, FLOAT16),
        (BF16, BF16),
        (DataType::DOUBLE, DataType::DOUBLE),
    ] {
        assert_eq!(
            t.ok_in("Log", &[("x", Typed(dt, &[2, U]))], &[("base", f(2.0))]),
            (want, vec![2, U]),
            "{dt}"
        );
    }
}

#[test]
fn is_nan_and_is_inf_give_bool() {
    let mut t = T::new();
    for ty in ["IsNan", "IsInf"] {
        assert_eq!(
            t.ok_in(ty, &[("x", Typed(FLOAT16, &[3, U]))], &[]),
            (BOOL, vec![3, U])
        );
        t.fails_in(
            ty,
            &[("x", Typed(INT32, &[3]))],
            &[],
            &["input 'x' has dtype DT_INT32"],
        );
    }
}

#[test]
fn binary_broadcast_known_unknown_and_errors() {
    for &ty in MATH_BINARY {
        let mut t = T::new();
        let p = t.proto(ty);
        let dt = pick(&p, "x1");
        let want = fixed_out(&p).unwrap_or(dt);
        let cases: &[(&[i64], &[i64], &[i64])] = &[
            (&[2, 1, 4], &[3, 1], &[2, 3, 4]),
            (&[], &[5], &[5]),
            (&[U, 3], &[3], &[U, 3]),
            (&[1, U], &[4, 1], &[4, U]),
            (&[U, 3], &[2, 1], &[2, 3]),
            (&[-2], &[3], &[-2]),
        ];
        for (a, c, out) in cases {
            assert_eq!(
                t.ok_in(ty, &x12(Typed(dt, a), Typed(dt, c)), &[]),
                (want, out.to_vec()),
                "{ty} {a:?} {c:?}"
            );
        }
        let x1 = t.input(dt, &[2, 3]);
        t.rejects_in(
            ty,
            &x12(Port(x1), Typed(dt, &[4])),
            &[],
            &[ty, "'x1' [2, 3]", "'x2' [4]", "cannot be broadcast"],
        );
        // The inputs share a type variable (the element-wise family promotes instead: see
        // promote.rs).
        let other = allowed(&p, "x1").into_iter().find(|&d| d != dt);
        if let (Some(other), false) = (other, es_core::infer::promotes(ty)) {
            t.fails_in(
                ty,
                &x12(Typed(dt, &[2]), Typed(other, &[2])),
                &[],
                &["both must have the same dtype"],
            );
        }
    }
}

#[test]
fn comparisons_and_logical_ops_give_bool() {
    let mut t = T::new();
    for ty in [
        "Equal",
        "NotEqual",
        "Greater",
        "GreaterEqual",
        "Less",
        "LessEqual",
    ] {
        assert_eq!(
            t.ok_in(ty, &x12(Typed(INT32, &[2, 3]), Typed(INT32, &[3])), &[]),
            (BOOL, vec![2, 3])
        );
    }
    assert_eq!(
        t.ok_in(
            "LogicalAnd",
            &x12(Typed(BOOL, &[2, 3]), Typed(BOOL, &[1])),
            &[]
        ),
        (BOOL, vec![2, 3])
    );
    // Float operands: refused by the logical and the bitwise ops.
    for (ty, part) in [
        ("LogicalOr", "input 'x1' has dtype DT_FLOAT"),
        ("BitwiseAnd", "expected one of"),
    ] {
        let floats = x12(Typed(FLOAT, &[2]), Typed(FLOAT, &[2]));
        t.fails_in(ty, &floats, &[], &[part]);
    }
}

#[test]
fn prelu() {
    let mut t = T::new();
    let x = Port(t.f(&[2, 3, 4, 4]));
    let x1 = Port(t.f(&[4]));
    t.fails_in(
        "PRelu",
        &[("x", x), ("weight", Typed(FLOAT16, &[3]))],
        &[],
        &["both must have the same dtype"],
    );
    t.ok_each_in(
        "PRelu",
        rows![
            &[("x", x), ("weight", F(&[3]))], &[] => (FLOAT, &[2, 3, 4, 4]);
            &[("x", x), ("weight", F(&[1]))], &[] => (FLOAT, &[2, 3, 4, 4]);
            &[("x", x), ("weight", F(&[3, 1, 1]))], &[] => (FLOAT, &[2, 3, 4, 4]);
            // Unknown channel count or weight size: accepted.
            &[("x", F(&[2, U, 4])), ("weight", F(&[5]))], &[] => (FLOAT, &[2, U, 4]);
            &[("x", x), ("weight", F(&[U]))], &[] => (FLOAT, &[2, 3, 4, 4]);
            &[("x", F(&[-2])), ("weight", F(&[5]))], &[] => (FLOAT, &[-2]);
            // Rank < 2: one channel, so weight holds one element.
            &[("x", x1), ("weight", F(&[1]))], &[] => (FLOAT, &[4]);
        ],
    );
    t.rejects_each_in(
        "PRelu",
        rows![
            &[("x", x), ("weight", F(&[5]))], &[] => &["input 'weight' [5] has 5 elements", "expected 1 or the 3 channels"];
            &[("x", x1), ("weight", F(&[4]))], &[] => &["x [4] has no channel dim (rank < 2)"];
        ],
    );
}

// ------------------------------------------------------------------------------ selection

/// The inputs of ClipByValue, for the `*_in` calls.
fn clip<'a>(x: In<'a>, lo: In<'a>, hi: In<'a>) -> [(&'static str, In<'a>); 3] {
    [("x", x), ("clip_value_min", lo), ("clip_value_max", hi)]
}

#[test]
fn clip_by_value() {
    let mut t = T::new();
    let (x, lo, hi) = (F(&[2, 3]), F(&[]), F(&[3]));
    t.fails_in(
        "ClipByValue",
        &clip(x, Typed(INT32, &[]), hi),
        &[],
        &["both must have the same dtype"],
    );
    t.ok_each_in(
        "ClipByValue",
        rows![
            &clip(x, lo, hi), &[] => (FLOAT, &[2, 3]);
            &clip(F(&[U, 3]), lo, F(&[4, 1, 1])), &[] => (FLOAT, &[4, U, 3]);
            &clip(F(&[-2]), lo, hi), &[] => (FLOAT, &[-2]);
        ],
    );
    t.rejects_in(
        "ClipByValue",
        &clip(x, lo, F(&[4])),
        &[],
        &[
            "input 'clip_value_max' [4] cannot be broadcast",
            "'x' [2, 3]",
        ],
    );
}

#[test]
fn select() {
    let mut t = T::new();
    let x1 = t.f(&[2, 3]);
    let x2 = t.f(&[2, 3]);
    let ins = ["condition", "x1", "x2"];
    for (cdims, out) in [
        (&[2i64, 3][..], vec![2i64, 3]),
        (&[2][..], vec![2, 3]),
        (&[][..], vec![2, 3]),
        (&[1, 3][..], vec![2, 3]),
        (&[U][..], vec![2, 3]),
        (&[-2][..], vec![-2]),
    ] {
        let c = t.input(BOOL, cdims);
        assert_eq!(
            t.ok("Select", &named(ins, [&[c], &[x1], &[x2]]), &[]),
            (FLOAT, out),
            "{cdims:?}"
        );
    }
    // A vector condition fixes an unknown first dim.
    let xu = t.f(&[U, 3]);
    let c5 = t.input(BOOL, &[5]);
    assert_eq!(
        t.dims("Select", &named(ins, [&[c5], &[xu], &[xu]]), &[]),
        vec![5, 3]
    );
    // 1-D x: the condition broadcasts.
    let v = t.f(&[4]);
    let c1 = t.input(BOOL, &[1]);
    assert_eq!(
        t.dims("Select", &named(ins, [&[c1], &[v], &[v]]), &[]),
        vec![4]
    );
    // Errors.
    let c23 = t.input(BOOL, &[3, 2]);
    let (cx1, cx2) = (("x1", Port(x1)), ("x2", Port(x2)));
    t.rejects_each_in(
        "Select",
        rows![
            &[("condition", Typed(BOOL, &[3])), cx1, cx2], &[] => &["'condition' [3] is a vector", "first dim of x1/x2 [2, 3] (2), got 3"];
            &[("condition", Port(c23)), cx1, cx2], &[] => &["input 'condition' [3, 2] cannot be broadcast with x1/x2 [2, 3]"];
            &[("condition", Port(c23)), cx1, ("x2", F(&[4, 3]))], &[] => &["input 'x2' [4, 3] cannot be broadcast with 'x1' [2, 3]"];
        ],
    );
    t.fails_in(
        "Select",
        &[("condition", F(&[2, 3])), cx1, cx2],
        &[],
        &["input 'condition' has dtype DT_FLOAT"],
    );
}

#[test]
fn select_v2() {
    let mut t = T::new();
    let ins = ["condition", "then", "else"];
    let c = t.input(BOOL, &[2, 1]);
    let a = t.input(INT32, &[1, 3]);
    let e = t.input(INT32, &[3]);
    assert_eq!(
        t.ok("SelectV2", &named(ins, [&[c], &[a], &[e]]), &[]),
        (INT32, vec![2, 3])
    );
    let cu = t.input(BOOL, &[U, 1]);
    assert_eq!(
        t.dims("SelectV2", &named(ins, [&[cu], &[a], &[e]]), &[]),
        vec![U, 3]
    );
    let cr = t.input(BOOL, &[-2]);
    assert_eq!(
        t.dims("SelectV2", &named(ins, [&[cr], &[a], &[e]]), &[]),
        vec![-2]
    );
    let e4 = t.input(INT32, &[4]);
    t.rejects(
        "SelectV2",
        &named(ins, [&[c], &[a], &[e4]]),
        &[],
        &[
            "input 'else' [4] cannot be broadcast",
            "'condition' [2, 1]",
            "'then' [1, 3]",
        ],
    );
}

#[test]
fn addcmul() {
    let mut t = T::new();
    let ins = ["input_data", "x1", "x2", "value"];
    let a = t.f(&[2, 1]);
    let x1 = t.f(&[3]);
    let x2 = t.f(&[1, 3]);
    let v = t.scalar_f(0.5);
    assert_eq!(
        t.ok("Addcmul", &named(ins, [&[a], &[x1], &[x2], &[v]]), &[]),
        (FLOAT, vec![2, 3])
    );
    let au = t.f(&[U, 1]);
    let vu = t.f(&[U]);
    assert_eq!(
        t.dims("Addcmul", &named(ins, [&[au], &[x1], &[x2], &[vu]]), &[]),
        vec![U, 3]
    );
    let v2 = t.f(&[2]);
    t.rejects(
        "Addcmul",
        &named(ins, [&[a], &[x1], &[x2], &[v2]]),
        &[],
        &["input 'value' must be a scalar (one element), got shape [2]"],
    );
    let x4 = t.f(&[4]);
    t.rejects(
        "Addcmul",
        &named(ins, [&[a], &[x1], &[x4], &[v]]),
        &[],
        &["input 'x2' [4] cannot be broadcast"],
    );
}

#[test]
fn bitcast() {
    let mut t = T::new();
    // keep_dim: the last dim is rescaled (ONNX BitCast).
    assert_eq!(
        t.ok_in(
            "Bitcast",
            &[("x", F(&[2, 3]))],
            &[("type", ty(UINT8)), ("keep_dim", b(true))]
        ),
        (UINT8, vec![2, 12])
    );
    let x = t.input(INT8, &[2, 8]);
    assert_eq!(
        t.ok(
            "Bitcast",
            &[("x", &[x])],
            &[("type", ty(INT64)), ("keep_dim", b(true))]
        ),
        (INT64, vec![2, 1])
    );
    // TensorFlow semantics: append or remove a dim.
    assert_eq!(
        t.ok_in("Bitcast", &[("x", F(&[2, 3]))], &[("type", ty(FLOAT16))]),
        (FLOAT16, vec![2, 3, 2])
    );
    let x = t.input(INT8, &[5, 4]);
    assert_eq!(
        t.ok("Bitcast", &[("x", &[x])], &[("type", ty(INT32))]),
        (INT32, vec![5])
    );
    assert_eq!(
        t.ok_in("Bitcast", &[("x", F(&[2, 3]))], &[("type", ty(INT32))]),
        (INT32, vec![2, 3])
    );
    // Unknown dims and ranks.
    assert_eq!(
        t.dims_in(
            "Bitcast",
            &[("x", F(&[2, U]))],
            &[("type", ty(UINT8)), ("keep_dim", b(true))]
        ),
        vec![2, U]
    );
    let x = t.input(INT8, &[3, U]);
    assert_eq!(
        t.dims("Bitcast", &[("x", &[x])], &[("type", ty(INT32))]),
        vec![3]
    );
    assert_eq!(
        t.dims_in("Bitcast", &[("x", F(&[-2]))], &[("type", ty(UINT8))]),
        vec![-2]
    );
    // Errors.
    t.rejects_in(
        "Bitcast",
        &[("x", Typed(INT8, &[5, 3]))],
        &[("type", ty(INT32))],
        &["last dim must be 4", "got 3"],
    );
    let x = t.input(INT8, &[5, 3]);
    t.rejects(
        "Bitcast",
        &[("x", &[x])],
        &[("type", ty(INT32)), ("keep_dim", b(true))],
        &["not a multiple"],
    );
    t.rejects_in(
        "Bitcast",
        &[("x", F(&[2]))],
        &[("type", ty(DataType::BF16))],
        &["'type'", "does not allow"],
    );
}

#[test]
fn shifts() {
    for op in ["LeftShift", "RightShift"] {
        let mut t = T::new();
        t.ok_each_in(
            op,
            &[
                (
                    &[
                        ("x", Typed(INT32, &[2, 1, 4])),
                        ("y", Typed(INT32, &[3, 1])),
                    ],
                    &[],
                    (INT32, &[2, 3, 4]),
                ),
                (
                    &[("x", Typed(UINT8, &[U, 4])), ("y", Typed(UINT8, &[]))],
                    &[],
                    (UINT8, &[U, 4]),
                ),
            ],
        );
        assert_eq!(
            t.dims_in(
                op,
                &[("x", Typed(INT64, &[-2])), ("y", Typed(INT64, &[3]))],
                &[]
            ),
            vec![-2]
        );
        t.rejects_in(
            op,
            &[("x", Typed(INT32, &[2, 4])), ("y", Typed(INT32, &[3]))],
            &[],
            &["cannot be broadcast"],
        );
    }
    // Float inputs are rejected by the prototype.
    let mut t = T::new();
    let x = t.f(&[2]);
    let y = t.f(&[2]);
    t.fail("LeftShift", &[("x", &[x]), ("y", &[y])], &[]);
}

#[test]
fn threshold_keeps_x() {
    let mut t = T::new();
    let x = t.input(BF16, &[3, U]);
    assert_eq!(
        t.ok("Threshold", &[("x", &[x])], &[("threshold", f(0.5))]),
        (BF16, vec![3, U])
    );
    let i = t.input(INT32, &[3]);
    assert!(t.call("Threshold", &[("x", &[i])], &[]).is_err());
}

#[test]
fn gelu_v2_keeps_x_and_checks_approximate() {
    let mut t = T::new();
    let x = t.input(BF16, &[3, U]);
    for a in ["none", "tanh"] {
        assert_eq!(
            t.ok(
                "GeluV2",
                &[("x", &[x])],
                &[("approximate", AttrValue::String(a.into()))]
            ),
            (BF16, vec![3, U]),
            "{a}"
        );
    }
    // The default is "none"; an unshaped x still has its attribute checked.
    assert_eq!(t.ok("GeluV2", &[("x", &[x])], &[]), (BF16, vec![3, U]));
    let any = t.input(FLOAT, &[-2]);
    let e = t
        .fail(
            "GeluV2",
            &[("x", &[any])],
            &[("approximate", AttrValue::String("erf".into()))],
        )
        .to_string();
    has(&e, &["GeluV2", "attribute 'approximate'", "\"erf\"", "\"tanh\""]);
    let d = t.input(DOUBLE, &[2]);
    assert!(t.call("GeluV2", &[("x", &[d])], &[]).is_err());
}
