//! Tests of the math operators of the built-in library and their inference rules, through the
//! builder over the built-in registry: for each operator a
//! known-shape case, an unknown-dim/rank case and, where something can be rejected, a wrong-input
//! case.

mod common;

use common::*;
use es_core::attr::AttrValue;
use es_core::ops::{OpProto, TypeSpec};
use es_core::{DataType, Tensor};
use std::collections::BTreeSet;

use DataType::{BF16, BOOL, FLOAT, FLOAT16, INT32, INT64, INT8, UINT8};

/// The math operators (every name of the tests' tables).
fn math_names() -> Vec<String> {
    UNARY
        .iter()
        .chain(BINARY)
        .chain(REDUCE_AXES_INPUT)
        .chain(REDUCE_AXES_ATTR)
        .chain(OTHERS)
        .map(|s| s.to_string())
        .collect()
}

/// The dtypes an input of `ty` accepts.
fn allowed(p: &OpProto, input: &str) -> Vec<DataType> {
    let (_, d) = p.input(input).unwrap();
    p.allowed(&d.ty).unwrap().to_vec()
}

/// FLOAT when the input accepts it, else the first of a few common dtypes it accepts.
fn pick(p: &OpProto, input: &str) -> DataType {
    let a = allowed(p, input);
    [FLOAT, INT32, BOOL, INT64, FLOAT16]
        .into_iter()
        .find(|t| a.contains(t))
        .unwrap_or(a[0])
}

/// A dtype the input rejects.
fn reject(p: &OpProto, input: &str) -> DataType {
    let a = allowed(p, input);
    [
        DataType::STRING,
        DataType::COMPLEX64,
        BOOL,
        INT8,
        DataType::UINT64,
        FLOAT,
    ]
    .into_iter()
    .find(|t| !a.contains(t))
    .unwrap()
}

/// Output 0's single allowed dtype, or None when it follows a type variable / longer list.
fn fixed_out(p: &OpProto) -> Option<DataType> {
    match &p.outputs[0].ty {
        TypeSpec::List(l) if l.len() == 1 => Some(l[0]),
        _ => None,
    }
}

// ------------------------------------------------------------------------------ the fragment

const UNARY: &[&str] = &[
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

const BINARY: &[&str] = &[
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

const REDUCE_AXES_INPUT: &[&str] = &[
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceLogSumExp",
    "ReduceAll",
    "ReduceAny",
];

const REDUCE_AXES_ATTR: &[&str] = &["ReduceMeanD", "ReduceMaxD", "ReduceMinD", "ReduceProdD"];

/// Operators with their own test functions below.
const OTHERS: &[&str] = &[
    "PRelu",
    "ArgMaxV2",
    "ArgMin",
    "ArgMaxD",
    "Cumsum",
    "CumsumD",
    "Cumprod",
    "ClipByValue",
    "Select",
    "SelectV2",
    "Range",
    "OneHot",
    "OneHotD",
    "Addcmul",
];

#[test]
fn every_math_operator_is_built_in_and_round_trips() {
    let names = math_names();
    assert_eq!(names.len(), 80);
    let unique: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(unique.len(), names.len(), "an operator is listed twice");
    assert_built_in_and_round_trip(&names, false);
}

#[test]
fn prototypes_match_ge_names() {
    let t = T::new();
    let names = |ty: &str| -> (Vec<String>, Vec<String>, Vec<String>) {
        let p = t.proto(ty);
        (
            p.inputs.iter().map(|d| d.name.clone()).collect(),
            p.outputs.iter().map(|d| d.name.clone()).collect(),
            p.attrs.iter().map(|a| a.name.clone()).collect(),
        )
    };
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        names("SelectV2"),
        (v(&["condition", "then", "else"]), v(&["result"]), v(&[]))
    );
    assert_eq!(
        names("HardSigmoid"),
        (v(&["input_x"]), v(&["output_y"]), v(&["alpha", "beta"]))
    );
    assert_eq!(
        names("ArgMaxV2"),
        (v(&["x", "dimension"]), v(&["y"]), v(&["dtype"]))
    );
    assert_eq!(
        names("OneHot"),
        (
            v(&["x", "depth", "on_value", "off_value"]),
            v(&["y"]),
            v(&["axis"])
        )
    );
    assert_eq!(
        names("ReduceMeanD"),
        (
            v(&["x"]),
            v(&["y"]),
            v(&["axes", "keep_dims", "noop_with_empty_axes"])
        )
    );
    assert_eq!(
        names("Addcmul"),
        (v(&["input_data", "x1", "x2", "value"]), v(&["y"]), v(&[]))
    );
    let argmax = t.proto("ArgMaxV2");
    assert_eq!(
        argmax.attr("dtype").unwrap().default,
        Some(AttrValue::Type(INT64))
    );
    assert!(t.proto("Equal").commutative && !t.proto("Pow").commutative);
}

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
    for &ty in UNARY {
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
        let x = t.input(INT32, &[3]);
        has(
            &t.fail(ty, &[("x", &[x])], &[]).to_string(),
            &["input 'x' has dtype DT_INT32"],
        );
    }
}

#[test]
fn binary_broadcast_known_unknown_and_errors() {
    for &ty in BINARY {
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
                t.ok_in(ty, &[("x1", Typed(dt, a)), ("x2", Typed(dt, c))], &[]),
                (want, out.to_vec()),
                "{ty} {a:?} {c:?}"
            );
        }
        let x1 = t.input(dt, &[2, 3]);
        t.rejects_in(
            ty,
            &[("x1", Port(x1)), ("x2", Typed(dt, &[4]))],
            &[],
            &[ty, "'x1' [2, 3]", "'x2' [4]", "cannot be broadcast"],
        );
        // The inputs share a type variable (the element-wise family promotes instead: see
        // tests/hints_and_promotion.rs).
        let other = allowed(&p, "x1").into_iter().find(|&d| d != dt);
        if let (Some(other), false) = (other, es_core::infer::promotes(ty)) {
            let x1 = t.input(dt, &[2]);
            let x2 = t.input(other, &[2]);
            has(
                &t.fail(ty, &[("x1", &[x1]), ("x2", &[x2])], &[]).to_string(),
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
            t.ok_in(
                ty,
                &[("x1", Typed(INT32, &[2, 3])), ("x2", Typed(INT32, &[3]))],
                &[]
            ),
            (BOOL, vec![2, 3])
        );
    }
    assert_eq!(
        t.ok_in(
            "LogicalAnd",
            &[("x1", Typed(BOOL, &[2, 3])), ("x2", Typed(BOOL, &[1]))],
            &[]
        ),
        (BOOL, vec![2, 3])
    );
    let x1 = t.input(FLOAT, &[2]);
    let x2 = t.input(FLOAT, &[2]);
    has(
        &t.fail("LogicalOr", &[("x1", &[x1]), ("x2", &[x2])], &[])
            .to_string(),
        &["input 'x1' has dtype DT_FLOAT"],
    );
    let x1 = t.input(FLOAT, &[2]);
    let x2 = t.input(FLOAT, &[2]);
    has(
        &t.fail("BitwiseAnd", &[("x1", &[x1]), ("x2", &[x2])], &[])
            .to_string(),
        &["expected one of"],
    );
}

#[test]
fn prelu() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4, 4]);
    assert_eq!(
        t.ok_in("PRelu", &[("x", Port(x)), ("weight", F(&[3]))], &[]),
        (FLOAT, vec![2, 3, 4, 4])
    );
    let w1 = t.f(&[1]);
    assert_eq!(
        t.dims("PRelu", &[("x", &[x]), ("weight", &[w1])], &[]),
        vec![2, 3, 4, 4]
    );
    assert_eq!(
        t.dims_in("PRelu", &[("x", Port(x)), ("weight", F(&[3, 1, 1]))], &[]),
        vec![2, 3, 4, 4]
    );
    // Unknown channel count or weight size: accepted.
    let w5 = t.f(&[5]);
    assert_eq!(
        t.dims_in("PRelu", &[("x", F(&[2, U, 4])), ("weight", Port(w5))], &[]),
        vec![2, U, 4]
    );
    assert_eq!(
        t.dims_in("PRelu", &[("x", Port(x)), ("weight", F(&[U]))], &[]),
        vec![2, 3, 4, 4]
    );
    assert_eq!(
        t.dims_in("PRelu", &[("x", F(&[-2])), ("weight", Port(w5))], &[]),
        vec![-2]
    );
    t.rejects(
        "PRelu",
        &[("x", &[x]), ("weight", &[w5])],
        &[],
        &[
            "input 'weight' [5] has 5 elements",
            "expected 1 or the 3 channels",
        ],
    );
    // Rank < 2: one channel, so weight holds one element.
    let x1 = t.f(&[4]);
    assert_eq!(
        t.dims("PRelu", &[("x", &[x1]), ("weight", &[w1])], &[]),
        vec![4]
    );
    t.rejects_in(
        "PRelu",
        &[("x", Port(x1)), ("weight", F(&[4]))],
        &[],
        &["x [4] has no channel dim (rank < 2)"],
    );
    let h = t.input(FLOAT16, &[3]);
    has(
        &t.fail("PRelu", &[("x", &[x]), ("weight", &[h])], &[])
            .to_string(),
        &["both must have the same dtype"],
    );
}

// ------------------------------------------------------------------------------ reductions

#[test]
fn reductions_with_axes_input() {
    for &ty in REDUCE_AXES_INPUT {
        let mut t = T::new();
        let p = t.proto(ty);
        let dt = pick(&p, "x");
        let x = t.input(dt, &[2, 3, 4]);
        let ax = t.ints(&[1]);
        assert_eq!(
            t.ok(ty, &[("x", &[x]), ("axes", &[ax])], &[]),
            (dt, vec![2, 4]),
            "{ty}"
        );
        assert_eq!(
            t.dims(
                ty,
                &[("x", &[x]), ("axes", &[ax])],
                &[("keep_dims", b(true))]
            ),
            vec![2, 1, 4]
        );
        assert_eq!(
            t.dims_in(ty, &[("x", Port(x)), ("axes", I32(&[-1, 0]))], &[]),
            vec![3]
        );
        // Empty axes: identity where noop_with_empty_axes defaults to true (and for the
        // ops without the attribute, as TensorFlow); ReduceLogSumExp reduces everything.
        let empty = t.konst(Tensor::from_values::<i32>(&[], vec![0]).unwrap());
        let want_empty = if ty == "ReduceLogSumExp" {
            vec![]
        } else {
            vec![2, 3, 4]
        };
        assert_eq!(
            t.dims(ty, &[("x", &[x]), ("axes", &[empty])], &[]),
            want_empty,
            "{ty} empty axes"
        );
        // Unknown dims, unknown axes, unknown rank.
        let xu = t.input(dt, &[U, 3, 4]);
        assert_eq!(
            t.dims(ty, &[("x", &[xu]), ("axes", &[ax])], &[]),
            vec![U, 4]
        );
        let dyn_ax = t.input(INT32, &[1]);
        assert_eq!(
            t.dims(
                ty,
                &[("x", &[xu]), ("axes", &[dyn_ax])],
                &[("keep_dims", b(true))]
            ),
            vec![U, U, U]
        );
        assert_eq!(
            t.dims(ty, &[("x", &[xu]), ("axes", &[dyn_ax])], &[]),
            vec![-2]
        );
        assert_eq!(
            t.dims_in(ty, &[("x", Typed(dt, &[-2])), ("axes", Port(ax))], &[]),
            vec![-2]
        );
        // Errors.
        t.rejects_each_in(
            ty,
            &[
                (
                    &[("x", Port(x)), ("axes", I32(&[3]))],
                    &[],
                    &[ty, "'axes' value 3 is out of range for rank 3"],
                ),
                (
                    &[("x", Port(x)), ("axes", Typed(INT32, &[1, 1]))],
                    &[],
                    &["'axes' must be 1-D"],
                ),
            ],
        );
    }
}

#[test]
fn reduce_all_any_take_bool_only() {
    let mut t = T::new();
    for ty in ["ReduceAll", "ReduceAny"] {
        let x = t.f(&[2]);
        let ax = t.ints(&[0]);
        has(
            &t.fail(ty, &[("x", &[x]), ("axes", &[ax])], &[]).to_string(),
            &["input 'x' has dtype DT_FLOAT"],
        );
    }
}

#[test]
fn reductions_with_axes_attribute() {
    for &ty in REDUCE_AXES_ATTR {
        let mut t = T::new();
        let x = t.f(&[2, 3, 4]);
        assert_eq!(
            t.ok(ty, &[("x", &[x])], &[("axes", li(&[0, 2]))]),
            (FLOAT, vec![3]),
            "{ty}"
        );
        assert_eq!(
            t.dims(
                ty,
                &[("x", &[x])],
                &[("axes", li(&[0, 2])), ("keep_dims", b(true))]
            ),
            vec![1, 3, 1]
        );
        assert_eq!(
            t.dims(ty, &[("x", &[x])], &[("axes", li(&[]))]),
            Vec::<i64>::new()
        );
        assert_eq!(
            t.dims_in(ty, &[("x", F(&[U, U]))], &[("axes", li(&[-1]))]),
            vec![U]
        );
        assert_eq!(
            t.dims_in(ty, &[("x", F(&[-2]))], &[("axes", li(&[0]))]),
            vec![-2]
        );
        t.rejects(
            ty,
            &[("x", &[x])],
            &[("axes", li(&[-4]))],
            &["attribute 'axes' value -4 is out of range for rank 3"],
        );
        has(
            &t.fail(ty, &[("x", &[x])], &[]).to_string(),
            &["required attribute 'axes'"],
        );
    }
    // ReduceMeanD: noop_with_empty_axes keeps x when axes is empty.
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    assert_eq!(
        t.dims(
            "ReduceMeanD",
            &[("x", &[x])],
            &[("axes", li(&[])), ("noop_with_empty_axes", b(true))]
        ),
        vec![2, 3]
    );
    assert_eq!(
        t.dims(
            "ReduceMeanD",
            &[("x", &[x])],
            &[("axes", li(&[1])), ("noop_with_empty_axes", b(true))]
        ),
        vec![2]
    );
}

#[test]
fn arg_max_v2_and_arg_min() {
    for ty in ["ArgMaxV2", "ArgMin"] {
        let mut t = T::new();
        let x = t.f(&[2, 3, 4]);
        let d = t.scalar_i32(1);
        assert_eq!(
            t.ok(ty, &[("x", &[x]), ("dimension", &[d])], &[]),
            (INT64, vec![2, 4]),
            "{ty}"
        );
        assert_eq!(
            t.ok(
                ty,
                &[("x", &[x]), ("dimension", &[d])],
                &[("dtype", common::ty(INT32))]
            ),
            (INT32, vec![2, 4])
        );
        // The prototype declares dtype as Type: an Int is refused by the builder.
        has(
            &t.fail(ty, &[("x", &[x]), ("dimension", &[d])], &[("dtype", i(3))])
                .to_string(),
            &["attribute 'dtype' must be Type"],
        );
        assert_eq!(
            t.dims_in(ty, &[("x", Port(x)), ("dimension", I32(&[-1]))], &[]),
            vec![2, 3]
        );
        // Unknown axis: rank - 1 unknown dims; unknown dims and rank propagate.
        assert_eq!(
            t.dims_in(ty, &[("x", Port(x)), ("dimension", Typed(INT32, &[]))], &[]),
            vec![U, U]
        );
        assert_eq!(
            t.dims_in(ty, &[("x", F(&[U, 3, U])), ("dimension", Port(d))], &[]),
            vec![U, U]
        );
        assert_eq!(
            t.ok_in(ty, &[("x", F(&[-2])), ("dimension", Port(d))], &[]),
            (INT64, vec![-2])
        );
        // Errors.
        let d3 = t.scalar_i64(3);
        t.rejects(
            ty,
            &[("x", &[x]), ("dimension", &[d3])],
            &[],
            &["input 'dimension' 3 is out of range for rank 3"],
        );
        t.rejects_in(
            ty,
            &[("x", Port(x)), ("dimension", I32(&[0, 1]))],
            &[],
            &["input 'dimension' must be a scalar (one element)", "[2]"],
        );
        t.rejects(
            ty,
            &[("x", &[x]), ("dimension", &[d])],
            &[("dtype", common::ty(FLOAT))],
            &["attribute 'dtype' must be DT_INT32 or DT_INT64, got DT_FLOAT"],
        );
        t.rejects_in(
            ty,
            &[("x", F(&[])), ("dimension", Port(d))],
            &[],
            &["x must have rank >= 1"],
        );
    }
}

#[test]
fn arg_max_d() {
    let mut t = T::new();
    let x = t.input(FLOAT16, &[2, 3, 4]);
    assert_eq!(
        t.ok("ArgMaxD", &[("x", &[x])], &[("dimension", i(-1))]),
        (INT32, vec![2, 3])
    );
    assert_eq!(
        t.ok_in("ArgMaxD", &[("x", F(&[U, 5]))], &[("dimension", i(0))]),
        (INT32, vec![5])
    );
    t.rejects(
        "ArgMaxD",
        &[("x", &[x])],
        &[("dimension", i(3))],
        &["attribute 'dimension' 3 is out of range for rank 3"],
    );
    has(
        &t.fail("ArgMaxD", &[("x", &[x])], &[]).to_string(),
        &["required attribute 'dimension'"],
    );
}

#[test]
fn cumulative_ops() {
    for ty in ["Cumsum", "Cumprod"] {
        let mut t = T::new();
        let x = t.f(&[2, 3]);
        let a = t.scalar_i32(1);
        assert_eq!(
            t.ok(
                ty,
                &[("x", &[x]), ("axis", &[a])],
                &[("exclusive", b(true)), ("reverse", b(true))]
            ),
            (FLOAT, vec![2, 3])
        );
        assert_eq!(
            t.dims_in(ty, &[("x", F(&[U, 3])), ("axis", Typed(INT64, &[1]))], &[]),
            vec![U, 3]
        );
        let xr = t.f(&[-2]);
        let a9 = t.scalar_i32(9);
        assert_eq!(t.dims(ty, &[("x", &[xr]), ("axis", &[a9])], &[]), vec![-2]);
        t.rejects(
            ty,
            &[("x", &[x]), ("axis", &[a9])],
            &[],
            &[ty, "input 'axis' 9 is out of range for rank 2"],
        );
        t.rejects_in(
            ty,
            &[("x", Port(x)), ("axis", I32(&[0, 1]))],
            &[],
            &["input 'axis' must be a scalar (one element)"],
        );
    }
    let mut t = T::new();
    let x = t.input(INT32, &[4, U]);
    assert_eq!(
        t.ok("CumsumD", &[("x", &[x])], &[("axis", i(-1))]),
        (INT32, vec![4, U])
    );
    t.rejects(
        "CumsumD",
        &[("x", &[x])],
        &[("axis", i(2))],
        &["attribute 'axis' 2 is out of range for rank 2"],
    );
}

// ------------------------------------------------------------------------------ selection

#[test]
fn clip_by_value() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    let lo = t.f(&[]);
    let hi = t.f(&[3]);
    let ins = ["x", "clip_value_min", "clip_value_max"];
    assert_eq!(
        t.ok("ClipByValue", &named(ins, [&[x], &[lo], &[hi]]), &[]),
        (FLOAT, vec![2, 3])
    );
    let xu = t.f(&[U, 3]);
    let hi2 = t.f(&[4, 1, 1]);
    assert_eq!(
        t.dims("ClipByValue", &named(ins, [&[xu], &[lo], &[hi2]]), &[]),
        vec![4, U, 3]
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("ClipByValue", &named(ins, [&[xr], &[lo], &[hi]]), &[]),
        vec![-2]
    );
    let bad = t.f(&[4]);
    t.rejects(
        "ClipByValue",
        &named(ins, [&[x], &[lo], &[bad]]),
        &[],
        &[
            "input 'clip_value_max' [4] cannot be broadcast",
            "'x' [2, 3]",
        ],
    );
    let h = t.input(INT32, &[]);
    has(
        &t.fail("ClipByValue", &named(ins, [&[x], &[h], &[hi]]), &[])
            .to_string(),
        &["both must have the same dtype"],
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
    let c3 = t.input(BOOL, &[3]);
    t.rejects(
        "Select",
        &named(ins, [&[c3], &[x1], &[x2]]),
        &[],
        &[
            "'condition' [3] is a vector",
            "first dim of x1/x2 [2, 3] (2), got 3",
        ],
    );
    let c23 = t.input(BOOL, &[3, 2]);
    t.rejects(
        "Select",
        &named(ins, [&[c23], &[x1], &[x2]]),
        &[],
        &["input 'condition' [3, 2] cannot be broadcast with x1/x2 [2, 3]"],
    );
    let x3 = t.f(&[4, 3]);
    t.rejects(
        "Select",
        &named(ins, [&[c23], &[x1], &[x3]]),
        &[],
        &["input 'x2' [4, 3] cannot be broadcast with 'x1' [2, 3]"],
    );
    let cf = t.f(&[2, 3]);
    has(
        &t.fail("Select", &named(ins, [&[cf], &[x1], &[x2]]), &[])
            .to_string(),
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
    has(
        &t.fail("Range", &named(ins, [&[s], &[fl], &[d]]), &[])
            .to_string(),
        &["both must have the same dtype"],
    );
}

#[test]
fn one_hot() {
    let mut t = T::new();
    let x = t.input(INT32, &[2, 3]);
    let depth = t.scalar_i32(5);
    let on = t.scalar_f(1.0);
    let off = t.scalar_f(0.0);
    let ins = ["x", "depth", "on_value", "off_value"];
    assert_eq!(
        t.ok("OneHot", &named(ins, [&[x], &[depth], &[on], &[off]]), &[]),
        (FLOAT, vec![2, 3, 5])
    );
    for (axis, out) in [(0, vec![5, 2, 3]), (1, vec![2, 5, 3]), (2, vec![2, 3, 5])] {
        assert_eq!(
            t.dims(
                "OneHot",
                &named(ins, [&[x], &[depth], &[on], &[off]]),
                &[("axis", i(axis))]
            ),
            out
        );
    }
    // Unknown depth / dims / rank.
    let dyn_depth = t.input(INT32, &[]);
    assert_eq!(
        t.dims(
            "OneHot",
            &named(ins, [&[x], &[dyn_depth], &[on], &[off]]),
            &[]
        ),
        vec![2, 3, U]
    );
    let xu = t.input(INT64, &[U]);
    assert_eq!(
        t.dims(
            "OneHot",
            &named(ins, [&[xu], &[depth], &[on], &[off]]),
            &[("axis", i(0))]
        ),
        vec![5, U]
    );
    let xr = t.input(UINT8, &[-2]);
    assert_eq!(
        t.dims("OneHot", &named(ins, [&[xr], &[depth], &[on], &[off]]), &[]),
        vec![-2]
    );
    // Errors.
    t.rejects(
        "OneHot",
        &named(ins, [&[x], &[depth], &[on], &[off]]),
        &[("axis", i(3))],
        &["attribute 'axis' 3 is out of range [-1, 2]"],
    );
    let neg = t.scalar_i32(-2);
    t.rejects(
        "OneHot",
        &named(ins, [&[x], &[neg], &[on], &[off]]),
        &[],
        &["input 'depth' must be >= 0, got -2"],
    );
    let on2 = t.f(&[2]);
    t.rejects(
        "OneHot",
        &named(ins, [&[x], &[depth], &[on2], &[off]]),
        &[],
        &["input 'on_value' must be a scalar (one element)"],
    );
    let offi = t.scalar_i32(0);
    has(
        &t.fail("OneHot", &named(ins, [&[x], &[depth], &[on], &[offi]]), &[])
            .to_string(),
        &["both must have the same dtype"],
    );
}

#[test]
fn one_hot_d() {
    let mut t = T::new();
    let x = t.input(UINT8, &[4]);
    let on = t.input(INT32, &[]);
    let off = t.input(INT32, &[1]);
    let ins = ["x", "on_value", "off_value"];
    assert_eq!(
        t.ok(
            "OneHotD",
            &named(ins, [&[x], &[on], &[off]]),
            &[("depth", i(7))]
        ),
        (INT32, vec![4, 7])
    );
    let xu = t.input(INT32, &[U, 2]);
    assert_eq!(
        t.dims(
            "OneHotD",
            &named(ins, [&[xu], &[on], &[off]]),
            &[("depth", i(3)), ("axis", i(1))]
        ),
        vec![U, 3, 2]
    );
    t.rejects(
        "OneHotD",
        &named(ins, [&[x], &[on], &[off]]),
        &[("depth", i(-1))],
        &["attribute 'depth' must be >= 0, got -1"],
    );
    has(
        &t.fail("OneHotD", &named(ins, [&[x], &[on], &[off]]), &[])
            .to_string(),
        &["required attribute 'depth'"],
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
