//! Reductions (`src/infer/reduce.rs`).

use super::*;

#[test]
fn reduce_sum() {
    let mut t = T::new();
    let x = Port(t.f(&[2, 3, 4]));
    let ax = Port(t.ints(&[1]));
    let sc = Port(t.scalar_i32(0));
    let xu = Port(t.f(&[U, 1, 4]));
    let dyn_ax = Typed(INT32, &[1]);
    let keep = [("keep_dims", b(true))];
    t.ok_each_in(
        "ReduceSum",
        rows![
            &[("x", x), ("axes", ax)], &[] => (FLOAT, &[2, 4]);
            &[("x", x), ("axes", ax)], &keep => (FLOAT, &[2, 1, 4]);
            &[("x", x), ("axes", I64(&[-1, 0, 2]))], &[] => (FLOAT, &[3]);
            &[("x", x), ("axes", sc)], &[] => (FLOAT, &[3, 4]);
            // Empty axes: all kept, or all reduced without noop_with_empty_axes.
            &[("x", x), ("axes", I32(&[]))], &[] => (FLOAT, &[2, 3, 4]);
            &[("x", x), ("axes", I32(&[]))], &[("noop_with_empty_axes", b(false))] => (FLOAT, &[]);
            // Unknown dims / unknown axes.
            &[("x", xu), ("axes", ax)], &[] => (FLOAT, &[U, 4]);
            &[("x", xu), ("axes", dyn_ax)], &keep => (FLOAT, &[U, 1, U]);
            &[("x", xu), ("axes", dyn_ax)], &[] => (FLOAT, &[-2]);
            &[("x", F(&[-2])), ("axes", ax)], &[] => (FLOAT, &[-2]);
        ],
    );
    // Errors.
    t.rejects_each_in(
        "ReduceSum",
        rows![
            &[("x", x), ("axes", I32(&[3]))], &[] => &["'axes' value 3 is out of range for rank 3"];
            &[("x", x), ("axes", Typed(INT32, &[1, 1]))], &[] => &["'axes' must be 1-D"];
        ],
    );
}

#[test]
fn reduce_sum_d() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    assert_eq!(
        t.ok("ReduceSumD", &[("x", &[x])], &[("axes", li(&[0, 2]))]),
        (FLOAT, vec![3])
    );
    assert_eq!(
        t.dims(
            "ReduceSumD",
            &[("x", &[x])],
            &[("axes", li(&[0, 2])), ("keep_dims", b(true))]
        ),
        vec![1, 3, 1]
    );
    assert_eq!(
        t.dims("ReduceSumD", &[("x", &[x])], &[("axes", li(&[]))]),
        Vec::<i64>::new()
    );
    assert_eq!(
        t.dims_in("ReduceSumD", &[("x", F(&[U, U]))], &[("axes", li(&[-1]))]),
        vec![U]
    );
    t.rejects(
        "ReduceSumD",
        &[("x", &[x])],
        &[("axes", li(&[-4]))],
        &["'axes' value -4 is out of range"],
    );
}

pub(crate) const REDUCE_AXES_INPUT: &[&str] = &[
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceLogSumExp",
    "ReduceAll",
    "ReduceAny",
];

pub(crate) const REDUCE_AXES_ATTR: &[&str] =
    &["ReduceMeanD", "ReduceMaxD", "ReduceMinD", "ReduceProdD"];

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
        t.dims_each(
            ty,
            &[
                (
                    &[("x", &[xu]), ("axes", &[dyn_ax])],
                    &[("keep_dims", b(true))],
                    &[U, U, U],
                ),
                (&[("x", &[xu]), ("axes", &[dyn_ax])], &[], &[-2]),
            ],
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
        t.fails(
            ty,
            &[("x", &[x]), ("axes", &[ax])],
            &[],
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
        t.dims_each_in(
            ty,
            &[
                (&[("x", F(&[U, U]))], &[("axes", li(&[-1]))], &[U]),
                (&[("x", F(&[-2]))], &[("axes", li(&[0]))], &[-2]),
            ],
        );
        t.rejects(
            ty,
            &[("x", &[x])],
            &[("axes", li(&[-4]))],
            &["attribute 'axes' value -4 is out of range for rank 3"],
        );
        t.fails(ty, &[("x", &[x])], &[], &["required attribute 'axes'"]);
    }
    // ReduceMeanD: noop_with_empty_axes keeps x when axes is empty.
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    t.dims_each(
        "ReduceMeanD",
        rows![
            &[("x", &[x])], &[("axes", li(&[])), ("noop_with_empty_axes", b(true))] => &[2, 3];
            &[("x", &[x])], &[("axes", li(&[1])), ("noop_with_empty_axes", b(true))] => &[2];
        ],
    );
}

#[test]
fn arg_max_v2_and_arg_min() {
    for ty in ["ArgMaxV2", "ArgMin"] {
        let mut t = T::new();
        let x = t.f(&[2, 3, 4]);
        let d = t.scalar_i32(1);
        t.ok_each(
            ty,
            &[
                (&[("x", &[x]), ("dimension", &[d])], &[], (INT64, &[2, 4])),
                (
                    &[("x", &[x]), ("dimension", &[d])],
                    &[("dtype", common::ty(INT32))],
                    (INT32, &[2, 4]),
                ),
            ],
        );
        // The prototype declares dtype as Type: an Int is refused by the builder.
        t.fails(
            ty,
            &[("x", &[x]), ("dimension", &[d])],
            &[("dtype", i(3))],
            &["attribute 'dtype' must be Type"],
        );
        assert_eq!(
            t.dims_in(ty, &[("x", Port(x)), ("dimension", I32(&[-1]))], &[]),
            vec![2, 3]
        );
        // Unknown axis: rank - 1 unknown dims; unknown dims and rank propagate.
        t.dims_each_in(
            ty,
            &[
                (
                    &[("x", Port(x)), ("dimension", Typed(INT32, &[]))],
                    &[],
                    &[U, U],
                ),
                (
                    &[("x", F(&[U, 3, U])), ("dimension", Port(d))],
                    &[],
                    &[U, U],
                ),
            ],
        );
        assert_eq!(
            t.ok_in(ty, &[("x", F(&[-2])), ("dimension", Port(d))], &[]),
            (INT64, vec![-2])
        );
        // Errors.
        let (x, d, d3) = (Port(x), Port(d), Port(t.scalar_i64(3)));
        t.rejects_each_in(
            ty,
            rows![
                &[("x", x), ("dimension", d3)], &[] => &["input 'dimension' 3 is out of range for rank 3"];
                &[("x", x), ("dimension", I32(&[0, 1]))], &[] => &["input 'dimension' must be a scalar (one element)", "[2]"];
                &[("x", x), ("dimension", d)], &[("dtype", common::ty(FLOAT))] => &["attribute 'dtype' must be DT_INT32 or DT_INT64, got DT_FLOAT"];
                &[("x", F(&[])), ("dimension", d)], &[] => &["x must have rank >= 1"];
            ],
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
    t.fails(
        "ArgMaxD",
        &[("x", &[x])],
        &[],
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
