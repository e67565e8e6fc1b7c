//! Reductions (`src/infer/reduce.rs`).

use super::*;

#[test]
fn reduce_sum() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let ax = t.ints(&[1]);
    assert_eq!(
        t.ok("ReduceSum", &[("x", &[x]), ("axes", &[ax])], &[]),
        (FLOAT, vec![2, 4])
    );
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[x]), ("axes", &[ax])],
            &[("keep_dims", b(true))]
        ),
        vec![2, 1, 4]
    );
    assert_eq!(
        t.dims_in(
            "ReduceSum",
            &[("x", Port(x)), ("axes", I64(&[-1, 0, 2]))],
            &[]
        ),
        vec![3]
    );
    let sc = t.scalar_i32(0);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[x]), ("axes", &[sc])], &[]),
        vec![3, 4]
    );
    let empty =
        t.b.create_const(Tensor::from_values::<i32>(&[], vec![0]).unwrap(), None)
            .unwrap();
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[x]), ("axes", &[empty])], &[]),
        vec![2, 3, 4]
    );
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[x]), ("axes", &[empty])],
            &[("noop_with_empty_axes", b(false))]
        ),
        Vec::<i64>::new()
    );
    // Unknown dims / unknown axes.
    let xu = t.f(&[U, 1, 4]);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[xu]), ("axes", &[ax])], &[]),
        vec![U, 4]
    );
    let dyn_ax = t.input(INT32, &[1]);
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[xu]), ("axes", &[dyn_ax])],
            &[("keep_dims", b(true))]
        ),
        vec![U, 1, U]
    );
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[xu]), ("axes", &[dyn_ax])], &[]),
        vec![-2]
    );
    assert_eq!(
        t.dims_in("ReduceSum", &[("x", F(&[-2])), ("axes", Port(ax))], &[]),
        vec![-2]
    );
    // Errors.
    t.rejects_each_in(
        "ReduceSum",
        &[
            (
                &[("x", Port(x)), ("axes", I32(&[3]))],
                &[],
                &["'axes' value 3 is out of range for rank 3"],
            ),
            (
                &[("x", Port(x)), ("axes", Typed(INT32, &[1, 1]))],
                &[],
                &["'axes' must be 1-D"],
            ),
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
