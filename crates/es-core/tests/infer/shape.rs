//! Shape manipulation: reshapes, transposes, concatenation and splitting, tiling, padding,
//! slicing, Expand, Flatten, SpaceToDepth, ReverseV2, Unpack, triangles (`src/infer/shape.rs`).

use super::*;

#[test]
fn reshape_const_shape() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    assert_eq!(
        t.ok_in("Reshape", &[("x", Port(x)), ("shape", I32(&[3, -1]))], &[]),
        (FLOAT, vec![3, 8])
    );
    t.dims_each_in(
        "Reshape",
        rows![
            &[("x", Port(x)), ("shape", I64(&[0, -1]))], &[] => &[2, 12];
            &[("x", Port(x)), ("shape", I32(&[24]))], &[] => &[24];
        ],
    );
    // Caffe-style partial reshape of dims [1, 2).
    assert_eq!(
        t.dims_in(
            "Reshape",
            &[("x", Port(x)), ("shape", I32(&[3, 1]))],
            &[("axis", i(1)), ("num_axes", i(1))]
        ),
        vec![2, 3, 1, 4]
    );
    let one = t.f(&[1]);
    let s =
        t.b.create_const(Tensor::from_values::<i32>(&[], vec![0]).unwrap(), None)
            .unwrap();
    assert_eq!(
        t.dims("Reshape", &[("x", &[one]), ("shape", &[s])], &[]),
        Vec::<i64>::new()
    );
}

#[test]
fn reshape_unknown() {
    let mut t = T::new();
    let x = t.f(&[U, 3, 4]);
    t.dims_each_in(
        "Reshape",
        rows![
            &[("x", Port(x)), ("shape", I32(&[-1, 12]))], &[] => &[U, 12];
            &[("x", Port(x)), ("shape", I32(&[0, 0, 2, 2]))], &[] => &[U, 3, 2, 2];
            &[("x", F(&[-2])), ("shape", I32(&[0, 6]))], &[] => &[U, 6];
            &[("x", Port(x)), ("shape", Typed(INT32, &[3]))], &[] => &[U, U, U];
        ],
    );
    // An absurd shape length is reported as unknown rank, not allocated.
    t.dims_each_in(
        "Reshape",
        rows![
            &[("x", Port(x)), ("shape", Typed(INT64, &[1 << 40]))], &[] => &[-2];
            &[("x", Port(x)), ("shape", Typed(INT64, &[U]))], &[] => &[-2];
        ],
    );
}

#[test]
fn reshape_errors() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    t.rejects_in(
        "Reshape",
        &[("x", Port(x)), ("shape", I32(&[5, 5]))],
        &[],
        &["Reshape 'Reshape_0'", "element count mismatch", "24", "25"],
    );
    t.rejects_each_in(
        "Reshape",
        rows![
            &[("x", Port(x)), ("shape", I32(&[-1, -1]))], &[] => &["more than one -1"];
            &[("x", Port(x)), ("shape", I32(&[-3, 8]))], &[] => &["invalid value -3"];
            &[("x", Port(x)), ("shape", I32(&[-1, 5]))], &[] => &["not a multiple of 5"];
            &[("x", Port(x)), ("shape", I32(&[0, 0, 0, 0]))], &[] => &["0 (copy) at index 3"];
            &[("x", Port(x)), ("shape", Typed(INT32, &[2, 2]))], &[] => &["'shape' must be 1-D"];
            &[("x", Port(x)), ("shape", I32(&[4]))], &[("axis", i(4))] => &["'axis' 4"];
        ],
    );
}

#[test]
fn transpose() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let p = t.ints(&[1, 0, 2]);
    assert_eq!(
        t.ok("Transpose", &[("x", &[x]), ("perm", &[p])], &[]),
        (FLOAT, vec![3, 2, 4])
    );
    t.dims_each_in(
        "Transpose",
        rows![
            &[("x", Port(x)), ("perm", I64(&[2, 0, 1]))], &[] => &[4, 2, 3];
            &[("x", F(&[U, 3, 4])), ("perm", Port(p))], &[] => &[3, U, 4];
        ],
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("Transpose", &[("x", &[xr]), ("perm", &[p])], &[]),
        vec![U, U, U]
    );
    let dp = t.input(INT32, &[3]);
    t.dims_each(
        "Transpose",
        rows![
            &[("x", &[x]), ("perm", &[dp])], &[] => &[U, U, U];
            &[("x", &[xr]), ("perm", &[dp])], &[] => &[U, U, U];
        ],
    );
    t.rejects_each_in(
        "Transpose",
        rows![
            &[("x", Port(x)), ("perm", I32(&[1, 0]))], &[] => &["'perm'", "2 values", "rank 3"];
            &[("x", Port(x)), ("perm", I32(&[0, 0, 1]))], &[] => &["not a permutation"];
            &[("x", Port(x)), ("perm", I32(&[0, 1, 3]))], &[] => &["perm value 3 is out of range for rank 3"];
        ],
    );
}

#[test]
fn unsqueeze() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    assert_eq!(
        t.ok("Unsqueeze", &[("x", &[x])], &[("axes", li(&[0, 3]))]),
        (FLOAT, vec![1, 2, 3, 1])
    );
    t.dims_each(
        "Unsqueeze",
        rows![
            &[("x", &[x])], &[("axes", li(&[-1]))] => &[2, 3, 1];
            &[("x", &[x])], &[("axes", li(&[1]))] => &[2, 1, 3];
        ],
    );
    t.dims_each_in(
        "Unsqueeze",
        rows![
            &[("x", F(&[U, 3]))], &[("axes", li(&[0]))] => &[1, U, 3];
            &[("x", F(&[-2]))], &[("axes", li(&[0]))] => &[-2];
        ],
    );
    t.rejects_each(
        "Unsqueeze",
        rows![
            &[("x", &[x])], &[("axes", li(&[5]))] => &["'axes' value 5 is out of range for rank 3"];
            &[("x", &[x])], &[("axes", li(&[0, -4]))] => &["repeated"];
        ],
    );
}

#[test]
fn squeeze() {
    let mut t = T::new();
    let x = t.f(&[1, 2, 1, 3]);
    assert_eq!(t.ok("Squeeze", &[("x", &[x])], &[]), (FLOAT, vec![2, 3]));
    t.dims_each(
        "Squeeze",
        rows![
            &[("x", &[x])], &[("axis", li(&[0]))] => &[2, 1, 3];
            &[("x", &[x])], &[("axis", li(&[-2, 0]))] => &[2, 3];
        ],
    );
    let xu = t.f(&[U, 1]);
    t.dims_each(
        "Squeeze",
        rows![
            &[("x", &[xu])], &[("axis", li(&[1]))] => &[U];
            &[("x", &[xu])], &[("axis", li(&[0]))] => &[1];
            &[("x", &[xu])], &[] => &[-2];
        ],
    );
    t.rejects_each(
        "Squeeze",
        rows![
            &[("x", &[x])], &[("axis", li(&[1]))] => &["cannot squeeze axis 1 of x [1, 2, 1, 3]", "dim is 2"];
            &[("x", &[x])], &[("axis", li(&[4]))] => &["out of range for rank 4"];
        ],
    );
    let sc = t.f(&[]);
    assert_eq!(t.dims("Squeeze", &[("x", &[sc])], &[]), Vec::<i64>::new());
    t.rejects(
        "Squeeze",
        &[("x", &[sc])],
        &[("axis", li(&[0]))],
        &["cannot squeeze a scalar"],
    );
}

#[test]
fn concat_v2() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[2, 5]));
    let ax = t.scalar_i32(1);
    assert_eq!(
        t.ok("ConcatV2", &[("x", &[a, c]), ("concat_dim", &[ax])], &[]),
        (FLOAT, vec![2, 8])
    );
    let axn = t.scalar_i32(-2);
    let d = t.f(&[4, 3]);
    assert_eq!(
        t.dims(
            "ConcatV2",
            &[("x", &[a, d, a]), ("concat_dim", &[axn])],
            &[]
        ),
        vec![8, 3]
    );
    let (u1, u2) = (t.f(&[U, 3]), t.f(&[2, U]));
    assert_eq!(
        t.dims("ConcatV2", &[("x", &[u1, u2]), ("concat_dim", &[ax])], &[]),
        vec![2, U]
    );
    let r = t.f(&[-2]);
    t.dims_each(
        "ConcatV2",
        rows![
            &[("x", &[a, r]), ("concat_dim", &[ax])], &[] => &[2, U];
            &[("x", &[r, r]), ("concat_dim", &[ax])], &[] => &[-2];
        ],
    );
    let dyn_ax = t.input(INT32, &[]);
    assert_eq!(
        t.dims(
            "ConcatV2",
            &[("x", &[a, c]), ("concat_dim", &[dyn_ax])],
            &[]
        ),
        vec![U, U]
    );
    // Errors.
    let e3 = t.f(&[2, 3, 1]);
    t.rejects(
        "ConcatV2",
        &[("x", &[a, e3]), ("concat_dim", &[ax])],
        &[],
        &["same rank", "x0 [2, 3]", "x1 [2, 3, 1]"],
    );
    let ax0 = t.scalar_i32(0);
    t.rejects(
        "ConcatV2",
        &[("x", &[a, c]), ("concat_dim", &[ax0])],
        &[],
        &[
            "x0 [2, 3] and x1 [2, 5] differ at dim 1 (3 vs 5)",
            "concat dim 0",
        ],
    );
    let ax2 = t.scalar_i32(2);
    t.rejects(
        "ConcatV2",
        &[("x", &[a, c]), ("concat_dim", &[ax2])],
        &[],
        &["concat_dim 2 is out of range for rank 2"],
    );
    let two = t.ints(&[0, 1]);
    t.rejects(
        "ConcatV2",
        &[("x", &[a, c]), ("concat_dim", &[two])],
        &[],
        &["'concat_dim'", "scalar"],
    );
}

#[test]
fn concat_d() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[4, 3]));
    let id = t
        .call("ConcatD", &[("x", &[a, c])], &[("concat_dim", i(0))])
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![6, 3])]);
    assert_eq!(t.b.graph().node(id).unwrap().attrs.get("N"), Some(&i(2)));
    let u = t.f(&[U, 3]);
    t.dims_each(
        "ConcatD",
        rows![
            &[("x", &[a, u])], &[("concat_dim", i(0))] => &[U, 3];
            &[("x", &[c, u])], &[("concat_dim", i(-1))] => &[4, 6];
        ],
    );
    t.rejects_each(
        "ConcatD",
        rows![
            &[("x", &[a, c])], &[("concat_dim", i(1))] => &["differ at dim 0 (2 vs 4)"];
            &[("x", &[a, c])], &[("concat_dim", i(-3))] => &["out of range"];
        ],
    );
    let s0 = t.f(&[]);
    t.rejects(
        "ConcatD",
        &[("x", &[s0, s0])],
        &[("concat_dim", i(0))],
        &["scalars"],
    );
}

#[test]
fn pack() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    assert_eq!(
        t.ok("Pack", &[("x", &[x, x, x])], &[]),
        (FLOAT, vec![3, 2, 3])
    );
    t.dims_each(
        "Pack",
        rows![
            &[("x", &[x, x, x])], &[("axis", i(-1))] => &[2, 3, 3];
            &[("x", &[x, x])], &[("axis", i(1))] => &[2, 2, 3];
        ],
    );
    let (u1, u2) = (t.f(&[U, 3]), t.f(&[2, U]));
    assert_eq!(t.dims("Pack", &[("x", &[u1, u2])], &[]), vec![2, 2, 3]);
    let r = t.f(&[-2]);
    assert_eq!(t.dims("Pack", &[("x", &[r, r])], &[]), vec![-2]);
    let y = t.f(&[2, 4]);
    t.rejects_each(
        "Pack",
        rows![
            &[("x", &[x, y])], &[] => &["same shape", "x0 [2, 3] vs x1 [2, 4]"];
            &[("x", &[x, x])], &[("axis", i(3))] => &["'axis' 3 is out of range for rank 3"];
        ],
    );
}

#[test]
fn split_and_split_d() {
    let mut t = T::new();
    let x = t.f(&[2, 6]);
    let one = t.scalar_i32(1);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[one]), ("x", &[x])],
            &[("num_split", i(3))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 2]); 3]);
    let id = t
        .call(
            "SplitD",
            &[("x", &[x])],
            &[("split_dim", i(-1)), ("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 3]); 2]);
    // Unknown dims and unknown split_dim.
    let xu = t.f(&[U, 6]);
    let id = t
        .call(
            "SplitD",
            &[("x", &[xu])],
            &[("split_dim", i(0)), ("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 6]); 2]);
    let dyn_dim = t.input(INT32, &[]);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[dyn_dim]), ("x", &[x])],
            &[("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, U]); 2]);
    let xr = t.f(&[-2]);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[one]), ("x", &[xr])],
            &[("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![-2]); 2]);
    // Errors.
    t.rejects(
        "SplitD",
        &[("x", &[x])],
        &[("split_dim", i(1)), ("num_split", i(4))],
        &["dim 1 of x [2, 6] is 6", "num_split 4"],
    );
    t.rejects(
        "Split",
        &[("split_dim", &[one]), ("x", &[x])],
        &[("num_split", i(5))],
        &["num_split 5"],
    );
    t.rejects_each(
        "SplitD",
        rows![
            &[("x", &[x])], &[("split_dim", i(2)), ("num_split", i(2))] => &["split_dim 2 is out of range for rank 2"];
            &[("x", &[x])], &[("split_dim", i(0)), ("num_split", i(0))] => &["'num_split' must be >= 1"];
        ],
    );
}

#[test]
fn split_v() {
    let mut t = T::new();
    let x = t.f(&[2, 10]);
    let sizes = t.ints(&[3, -1, 2]);
    let one = t.scalar_i32(1);
    let ins = |x, s| [("x", [x]), ("size_splits", [s]), ("split_dim", [one])];
    let run = |t: &mut T, x, s, n: i64| {
        let v = ins(x, s);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("SplitV", &r, &[("num_split", i(n))])
    };
    let id = run(&mut t, x, sizes, 3).unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 3]),
            (FLOAT, vec![2, 5]),
            (FLOAT, vec![2, 2])
        ]
    );
    let xu = t.f(&[2, U]);
    let id = run(&mut t, xu, sizes, 3).unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 3]),
            (FLOAT, vec![2, U]),
            (FLOAT, vec![2, 2])
        ]
    );
    let dyn_sizes = t.input(INT32, &[3]);
    let id = run(&mut t, x, dyn_sizes, 3).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, U]); 3]);
    let bad = t.ints(&[3, 3, 3]);
    has(
        &run(&mut t, x, bad, 3).unwrap_err().to_string(),
        &["sums to 9", "is 10"],
    );
    let two = t.ints(&[-1, -1, 2]);
    has(
        &run(&mut t, x, two, 3).unwrap_err().to_string(),
        &["more than one -1"],
    );
    has(
        &run(&mut t, x, sizes, 2).unwrap_err().to_string(),
        &["'size_splits' has 3 values, num_split is 2"],
    );
    let big = t.ints(&[8, -1, 4]);
    has(
        &run(&mut t, x, big, 3).unwrap_err().to_string(),
        &["sums to 12, more than dim 1"],
    );
}

#[test]
fn broadcast_to() {
    let mut t = T::new();
    let x = t.f(&[3, 1]);
    let s = t.ints(&[2, 3, 4]);
    assert_eq!(
        t.ok("BroadcastTo", &[("x", &[x]), ("shape", &[s])], &[]),
        (FLOAT, vec![2, 3, 4])
    );
    t.dims_each_in(
        "BroadcastTo",
        rows![
            &[("x", F(&[U, 1])), ("shape", Port(s))], &[] => &[2, 3, 4];
            &[("x", Port(x)), ("shape", Typed(INT64, &[3]))], &[] => &[U, 3, U];
            &[("x", Port(x)), ("shape", Typed(INT64, &[U]))], &[] => &[-2];
        ],
    );
    t.rejects_each_in(
        "BroadcastTo",
        rows![
            &[("x", F(&[3, 2])), ("shape", Port(s))], &[] => &["x [3, 2] cannot be broadcast to [2, 3, 4]"];
            &[("x", F(&[1, 1, 1, 1])), ("shape", Port(s))], &[] => &["rank 4"];
        ],
    );
}

#[test]
fn tile() {
    let mut t = T::new();
    let x = Port(t.f(&[2, 3]));
    let m = Port(t.ints(&[2, 1]));
    let xu = Port(t.f(&[U, 3]));
    t.ok_each_in(
        "Tile",
        rows![
            &[("x", x), ("multiples", m)], &[] => (FLOAT, &[4, 3]);
            &[("x", x), ("multiples", I64(&[2, 1, 3]))], &[] => (FLOAT, &[2, 2, 9]);
            &[("x", xu), ("multiples", m)], &[] => (FLOAT, &[U, 3]);
            &[("x", xu), ("multiples", I32(&[0, 2]))], &[] => (FLOAT, &[0, 6]);
            &[("x", x), ("multiples", Typed(INT32, &[2]))], &[] => (FLOAT, &[U, U]);
        ],
    );
    t.rejects_each_in(
        "Tile",
        rows![
            &[("x", F(&[1, 2, 3])), ("multiples", m)], &[] => &["2 values, fewer than the rank 3"];
            &[("x", x), ("multiples", I32(&[1, -2]))], &[] => &["negative value -2"];
        ],
    );
}

#[test]
fn pad_v3_from_constant_paddings() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in(
            "PadV3",
            &[("x", F(&[2, 3])), ("paddings", I32(&[1, 1, 2, 0]))],
            &[]
        ),
        (FLOAT, vec![4, 5])
    );
    t.dims_each_in(
        "PadV3",
        rows![
            &[("x", F(&[2, 3])), ("paddings", I64(&[1, 2, 1, 0]))], &[("paddings_contiguous", b(false)), ("mode", s("reflect"))] => &[4, 5];
            &[("x", F(&[U, 3])), ("paddings", I32(&[1, 1, -1, 0]))], &[] => &[U, 2];
            &[("x", F(&[2, 3])), ("paddings", Typed(INT32, &[4]))], &[] => &[U, U];
            &[("x", F(&[-2])), ("paddings", Typed(INT32, &[6]))], &[] => &[U, U, U];
        ],
    );
    t.rejects_each_in(
        "PadV3",
        rows![
            &[("x", F(&[2, 3])), ("paddings", I32(&[1, 1, 2]))], &[] => &["input 'paddings'", "3 values", "2 * rank = 4"];
            &[("x", F(&[2, 3])), ("paddings", I32(&[0, 0, -2, -2]))], &[] => &["negative size -1"];
            &[("x", F(&[2, 3])), ("paddings", I32(&[0, 0, 0, 0]))], &[("mode", s("wrap"))] => &["attribute 'mode'", "\"wrap\""];
        ],
    );
}

#[test]
fn pad_and_pad_d() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    let p = t.ints_shaped(&[1, 1, 0, 2], &[2, 2]);
    assert_eq!(
        t.dims("Pad", &[("x", &[x]), ("paddings", &[p])], &[]),
        vec![4, 5]
    );
    assert_eq!(
        t.dims_in(
            "Pad",
            &[("x", F(&[-2])), ("paddings", Typed(INT32, &[3, 2]))],
            &[]
        ),
        vec![U, U, U]
    );
    let x = t.f(&[2, 3]);
    let p = t.ints_shaped(&[1, 1, 0, 2, 0, 0], &[3, 2]);
    t.rejects(
        "Pad",
        &[("x", &[x]), ("paddings", &[p])],
        &[],
        &["input 'paddings' has 3 rows", "rank 2"],
    );
    let x = t.f(&[2, 3]);
    t.rejects_in(
        "Pad",
        &[("x", Port(x)), ("paddings", Typed(INT32, &[2, 3]))],
        &[],
        &["shape [rank, 2]", "[2, 3]"],
    );

    let pd = |v: Vec<Vec<i64>>| AttrValue::ListListInt(v);
    assert_eq!(
        t.dims_in(
            "PadD",
            &[("x", F(&[2, U]))],
            &[("paddings", pd(vec![vec![1, 2], vec![3, 4]]))]
        ),
        vec![5, U]
    );
    t.rejects_each_in(
        "PadD",
        rows![
            &[("x", F(&[2, 3]))], &[("paddings", pd(vec![vec![1, -2], vec![0, 0]]))] => &["attribute 'paddings'", "negative pad"];
            &[("x", F(&[2, 3]))], &[("paddings", pd(vec![vec![1], vec![0, 0]]))] => &["[begin, end] pairs"];
        ],
    );
}

#[test]
fn slice_from_constants() {
    let mut t = T::new();
    let x = t.f(&[4, 5, 6]);
    assert_eq!(
        t.dims_in(
            "Slice",
            &[
                ("x", Port(x)),
                ("offsets", I32(&[1, 0, -4])),
                ("size", I32(&[2, -1, 3]))
            ],
            &[]
        ),
        vec![2, 5, 3]
    );
    assert_eq!(
        t.dims_in(
            "SliceD",
            &[("x", F(&[4, 5, 6]))],
            &[("offsets", li(&[1, 2, 0])), ("size", li(&[-1, 2, 6]))]
        ),
        vec![3, 2, 6]
    );
    t.dims_each_in(
        "Slice",
        rows![
            &[("x", F(&[U, 5, 6])), ("offsets", Typed(INT32, &[3])), ("size", I32(&[2, -1, 3]))], &[] => &[2, U, 3];
            &[("x", F(&[-2])), ("offsets", Typed(INT32, &[2])), ("size", Typed(INT32, &[2]))], &[] => &[U, U];
        ],
    );
    t.rejects_in(
        "Slice",
        &[
            ("x", F(&[4, 5])),
            ("offsets", I32(&[3, 0])),
            ("size", I32(&[2, 5])),
        ],
        &[],
        &["slice [3, 3 + 2) exceeds dim 0", "(4)"],
    );
    let x = t.f(&[4, 5]);
    t.rejects_in(
        "Slice",
        &[
            ("x", Port(x)),
            ("offsets", I32(&[0, 0, 0])),
            ("size", I32(&[1, 1, 1])),
        ],
        &[],
        &["input 'offsets' has 3 values", "rank 2"],
    );
    t.rejects_in(
        "SliceD",
        &[("x", F(&[4, 5]))],
        &[("offsets", li(&[0, 0])), ("size", li(&[1, -3]))],
        &["attribute 'size'", "invalid size -3"],
    );
}

fn ss(t: &mut T, x: OutPort, b: &[i32], e: &[i32], st: &[i32]) -> [OutPort; 4] {
    let bb = t.ints(b);
    let ee = t.ints(e);
    let ss = t.ints(st);
    [x, bb, ee, ss]
}

fn ss_ins(p: &[OutPort; 4]) -> [(&'static str, [OutPort; 1]); 4] {
    [
        ("x", [p[0]]),
        ("begin", [p[1]]),
        ("end", [p[2]]),
        ("strides", [p[3]]),
    ]
}

fn ss_call(t: &mut T, p: [OutPort; 4], attrs: Attrs) -> es_core::Result<NodeId> {
    let a = ss_ins(&p);
    let ins: Vec<(&str, &[OutPort])> = a.iter().map(|(n, v)| (*n, &v[..])).collect();
    t.call("StridedSlice", &ins, attrs)
}

/// StridedSliceV2 of x (`dims`, dtype `dt`) by begin/end and optional axes/strides.
fn ssv2(
    t: &mut T,
    (dt, dims): (DataType, &[i64]),
    b: &[i64],
    e: &[i64],
    axes: Option<&[i64]>,
    strides: Option<&[i64]>,
) -> es_core::Result<NodeId> {
    let x = t.input(dt, dims);
    let (bb, ee) = (t.ints64(b), t.ints64(e));
    let mut ins = vec![("x", vec![x]), ("begin", vec![bb]), ("end", vec![ee])];
    if let Some(a) = axes {
        ins.push(("axes", vec![t.ints64(a)]));
    }
    if let Some(s) = strides {
        ins.push(("strides", vec![t.ints64(s)]));
    }
    let ins: Vec<(&str, &[OutPort])> = ins.iter().map(|(n, v)| (*n, &v[..])).collect();
    t.call("StridedSliceV2", &ins, &[])
}

#[test]
fn strided_slice_v2_is_onnx_slice_and_takes_bool() {
    let mut t = T::new();
    let mut dims = |x, b: &[i64], e: &[i64], a: Option<&[i64]>, s: Option<&[i64]>| {
        let id = ssv2(&mut t, x, b, e, a, s).unwrap_or_else(|e| panic!("{e}"));
        t.out(id, 0)
    };
    // The Slice of a bool tensor: axes [0, 1] of a [2, 3] bool.
    let d = dims((BOOL, &[2, 3]), &[0, 1], &[2, 3], Some(&[0, 1]), None);
    assert_eq!((d.dtype, d.shape.to_vec()), (BOOL, vec![2, 2]));
    // One axis (negative), the others whole; a step; clamping.
    let d = dims((FLOAT, &[4, 10, 6]), &[1], &[100], Some(&[-2]), Some(&[3]));
    assert_eq!(d.shape.to_vec(), vec![4, 3, 6]);
    // Without axes: the leading dims; a negative step from the end.
    let d = dims((INT64, &[5, 7]), &[-1], &[-6], None, Some(&[-2]));
    assert_eq!((d.dtype, d.shape.to_vec()), (INT64, vec![3, 7]));
    // Unknown dims stay unknown; a dim not sliced keeps its size.
    let d = dims((FLOAT, &[U, 8]), &[0], &[2], Some(&[1]), None);
    assert_eq!(d.shape.to_vec(), vec![U, 2]);
    // Values that are not constants: the rank only.
    let x = t.input(FLOAT, &[3, 4]);
    let b = t.input(INT64, &[1]);
    let e = t.ints64(&[2]);
    let id = t
        .call(
            "StridedSliceV2",
            &[("x", &[x]), ("begin", &[b]), ("end", &[e])],
            &[],
        )
        .unwrap();
    assert_eq!(t.out(id, 0).shape.to_vec(), vec![U, U]);
    // Refused: a zero step, a repeated axis, lengths that differ, an axis out of range.
    for (b, e, a, s, want) in [
        (
            &[0][..],
            &[1][..],
            Some(&[0][..]),
            Some(&[0][..]),
            "zero stride",
        ),
        (&[0, 0], &[1, 1], Some(&[1, -1]), None, "repeated"),
        (&[0, 0], &[1], Some(&[0, 1]), None, "same length"),
        (&[0], &[1], Some(&[2]), None, "out of range"),
    ] {
        let e = ssv2(&mut t, (FLOAT, &[3, 4]), b, e, a, s).unwrap_err();
        has(&e.to_string(), &["StridedSliceV2", want]);
    }
    // GE's StridedSlice itself keeps GE's list, without bool.
    let p = es_core::ops::global_registry();
    let allowed = |op: &str| {
        let p = p.get(op).unwrap();
        p.allowed(&p.input("x").unwrap().1.ty).unwrap().to_vec()
    };
    assert!(!allowed("StridedSlice").contains(&BOOL));
    assert!(allowed("StridedSliceV2").contains(&BOOL));
}

#[test]
fn strided_slice_masks_and_clamping() {
    let mut t = T::new();
    let dims = |t: &mut T, p: [OutPort; 4], attrs: Attrs| -> Vec<i64> {
        let id = ss_call(t, p, attrs).unwrap_or_else(|e| panic!("{e}"));
        t.out(id, 0).shape.to_vec()
    };
    let x = t.f(&[10, 20, 30]);
    let p = ss(&mut t, x, &[1, -5, 0], &[8, 100, 0], &[2, 1, 1]);
    assert_eq!(dims(&mut t, p, &[("end_mask", i(4))]), vec![4, 5, 30]);
    // shrink, new axis, ellipsis
    let x = t.f(&[10, 20]);
    let p = ss(&mut t, x, &[3], &[4], &[1]);
    assert_eq!(dims(&mut t, p, &[("shrink_axis_mask", i(1))]), vec![20]);
    let x = t.f(&[10, 20, 30]);
    let p = ss(&mut t, x, &[0, 0], &[0, 0], &[1, 1]);
    assert_eq!(
        dims(
            &mut t,
            p,
            &[("ellipsis_mask", i(1)), ("new_axis_mask", i(2))]
        ),
        vec![10, 20, 30, 1]
    );
    let x = t.f(&[10, 20, 30]);
    let p = ss(&mut t, x, &[0, 1, 0], &[0, 5, 0], &[1, 2, 1]);
    assert_eq!(
        dims(
            &mut t,
            p,
            &[("new_axis_mask", i(1)), ("ellipsis_mask", i(4))]
        ),
        vec![1, 2, 20, 30]
    );
    // negative stride reverses; begin_mask with a negative stride starts at the end
    let x = t.f(&[10]);
    let p = ss(&mut t, x, &[-1], &[0], &[-1]);
    assert_eq!(dims(&mut t, p, &[("end_mask", i(1))]), vec![10]);
    let x = t.f(&[10]);
    let p = ss(&mut t, x, &[0], &[2], &[-3]);
    assert_eq!(dims(&mut t, p, &[("begin_mask", i(1))]), vec![3]);
    let x = t.f(&[10]);
    let p = ss(&mut t, x, &[5], &[2], &[1]);
    assert_eq!(dims(&mut t, p, &[]), vec![0]);
    // unknown dims and values
    let x = t.f(&[U, 20]);
    let p = ss(&mut t, x, &[0, 0], &[5, 10], &[1, 1]);
    assert_eq!(dims(&mut t, p, &[]), vec![U, 10]);
    let x = t.f(&[10, 20]);
    let bb = t.input(INT32, &[2]);
    let ee = t.ints(&[1, 1]);
    let st = t.ints(&[1, 1]);
    assert_eq!(
        dims(&mut t, [x, bb, ee, st], &[("shrink_axis_mask", i(1))]),
        vec![U]
    );
    let x = t.f(&[-2]);
    let p = ss(&mut t, x, &[0], &[1], &[1]);
    assert_eq!(dims(&mut t, p, &[]), vec![-2]);
    // errors
    let x = t.f(&[10, 20]);
    let p = ss(&mut t, x, &[0, 0], &[5, 5], &[1, 0]);
    let m = match ss_call(&mut t, p, &[]) {
        Err(Error::ShapeInference(m)) => m,
        other => panic!("{other:?}"),
    };
    has(&m, &["input 'strides'", "zero stride at index 1"]);
    let x = t.f(&[10, 20]);
    let p = ss(&mut t, x, &[12], &[13], &[1]);
    let m = match ss_call(&mut t, p, &[("shrink_axis_mask", i(1))]) {
        Err(Error::ShapeInference(m)) => m,
        other => panic!("{other:?}"),
    };
    has(&m, &["shrink_axis_mask index 12", "out of range for dim 0"]);
    let x = t.f(&[10, 20]);
    let p = ss(&mut t, x, &[0, 0], &[1, 1], &[1, 1]);
    let m = match ss_call(&mut t, p, &[("ellipsis_mask", i(3))]) {
        Err(Error::ShapeInference(m)) => m,
        other => panic!("{other:?}"),
    };
    has(&m, &["'ellipsis_mask' 3", "more than one bit"]);
    let x = t.f(&[10, 20]);
    let bb = t.ints(&[0, 0]);
    let ee = t.ints(&[1]);
    let st = t.ints(&[1, 1]);
    let m = match ss_call(&mut t, [x, bb, ee, st], &[]) {
        Err(Error::ShapeInference(m)) => m,
        other => panic!("{other:?}"),
    };
    has(&m, &["input 'begin' has 2 values but input 'end' has 1"]);
}

#[test]
fn strided_slice_d_uses_attributes() {
    let mut t = T::new();
    let x = t.f(&[8, 9]);
    let attrs = [
        ("begin", li(&[1, 0])),
        ("end", li(&[-1, 9])),
        ("strides", li(&[3, 2])),
    ];
    assert_eq!(t.dims("StridedSliceD", &[("x", &[x])], &attrs), vec![2, 5]);
    assert_eq!(
        t.dims_in("StridedSliceD", &[("x", F(&[U, 9]))], &attrs),
        vec![U, 5]
    );
    let x = t.f(&[8, 9]);
    let bad = [
        ("begin", li(&[1, 0])),
        ("end", li(&[-1, 9])),
        ("strides", li(&[0, 2])),
    ];
    t.rejects(
        "StridedSliceD",
        &[("x", &[x])],
        &bad,
        &["attribute 'strides'", "zero stride"],
    );
}

#[test]
fn expand_two_way_broadcast() {
    let mut t = T::new();
    t.dims_each_in(
        "Expand",
        rows![
            &[("x", F(&[3, 1])), ("shape", I64(&[2, 1, 4]))], &[] => &[2, 3, 4];
            &[("x", F(&[3, 1])), ("shape", Typed(INT64, &[3]))], &[] => &[U, 3, U];
            &[("x", F(&[-2])), ("shape", I32(&[2, 3]))], &[] => &[-2];
        ],
    );
    t.rejects_in(
        "Expand",
        &[("x", F(&[3])), ("shape", I32(&[4]))],
        &[],
        &["x [3] cannot be expanded to input 'shape' [4]"],
    );
    let x = t.input(BOOL, &[1, 5]);
    assert_eq!(
        t.ok("ExpandD", &[("x", &[x])], &[("shape", li(&[4, 1]))]),
        (BOOL, vec![4, 5])
    );
    t.rejects_in(
        "ExpandD",
        &[("x", F(&[2, 5]))],
        &[("shape", li(&[3, 5]))],
        &["attribute 'shape' [3, 5]"],
    );
}

#[test]
fn flatten_and_flatten_v2() {
    let mut t = T::new();
    for (axis, want) in [
        (1, vec![2, 12]),
        (0, vec![1, 24]),
        (-1, vec![6, 4]),
        (3, vec![24, 1]),
    ] {
        assert_eq!(
            t.dims_in("Flatten", &[("x", F(&[2, 3, 4]))], &[("axis", i(axis))]),
            want,
            "axis {axis}"
        );
    }
    t.dims_each_in(
        "Flatten",
        rows![
            &[("x", F(&[U, 3, 4]))], &[] => &[U, 12];
            &[("x", F(&[-2]))], &[] => &[U, U];
        ],
    );
    t.rejects_in(
        "Flatten",
        &[("x", F(&[2, 3, 4]))],
        &[("axis", i(4))],
        &["attribute 'axis' 4 is out of range [-3, 3]"],
    );

    let x = t.f(&[2, 3, 4, 5]);
    assert_eq!(t.dims("FlattenV2", &[("x", &[x])], &[]), vec![2, 60]);
    assert_eq!(
        t.dims_in(
            "FlattenV2",
            &[("x", F(&[2, 3, U, 5]))],
            &[("axis", i(0)), ("end_axis", i(1))]
        ),
        vec![6, U, 5]
    );
    t.rejects_in(
        "FlattenV2",
        &[("x", F(&[2, 3, 4, 5]))],
        &[("axis", i(2)), ("end_axis", i(1))],
        &["comes after 'end_axis'"],
    );
}

#[test]
fn space_to_depth_and_back() {
    let mut t = T::new();
    t.dims_each_in(
        "SpaceToDepth",
        rows![
            &[("x", F(&[1, 4, 6, 3]))], &[("block_size", i(2))] => &[1, 2, 3, 12];
            &[("x", F(&[1, 3, 4, 6]))], &[("block_size", i(2)), ("data_format", s("NCHW"))] => &[1, 12, 2, 3];
            &[("x", F(&[U, U, 6, 3]))], &[("block_size", i(3))] => &[U, U, 2, 27];
        ],
    );
    let x = t.f(&[1, 5, 6, 3]);
    t.rejects(
        "SpaceToDepth",
        &[("x", &[x])],
        &[("block_size", i(2))],
        &["height of x [1, 5, 6, 3] is 5", "block_size 2"],
    );
    t.rejects_in(
        "SpaceToDepth",
        &[("x", F(&[1, 4, 6, 3]))],
        &[("block_size", i(1))],
        &["'block_size' must be >= 2"],
    );

    let x = t.f(&[1, 2, 3, 12]);
    assert_eq!(
        t.dims("DepthToSpace", &[("x", &[x])], &[("block_size", i(2))]),
        vec![1, 4, 6, 3]
    );
    assert_eq!(
        t.dims_in(
            "DepthToSpace",
            &[("x", F(&[-2]))],
            &[("block_size", i(2)), ("mode", s("CRD"))]
        ),
        vec![U, U, U, U]
    );
    let x = t.f(&[1, 2, 3, 10]);
    t.rejects(
        "DepthToSpace",
        &[("x", &[x])],
        &[("block_size", i(2))],
        &["channels of x [1, 2, 3, 10] are 10", "block_size^2 = 4"],
    );
    t.rejects_in(
        "DepthToSpace",
        &[("x", F(&[1, 2, 3, 12]))],
        &[("block_size", i(2)), ("mode", s("RDC"))],
        &["attribute 'mode'", "\"RDC\""],
    );
}

#[test]
fn reverse_v2_checks_axes() {
    let mut t = T::new();
    t.dims_each_in(
        "ReverseV2",
        rows![
            &[("x", F(&[2, 3])), ("axis", I32(&[1, -2]))], &[] => &[2, 3];
            &[("x", F(&[U, 3])), ("axis", Typed(INT32, &[1]))], &[] => &[U, 3];
        ],
    );
    t.rejects_each_in(
        "ReverseV2",
        rows![
            &[("x", F(&[2, 3])), ("axis", I32(&[2]))], &[] => &["input 'axis' value 2 is out of range for rank 2"];
            &[("x", F(&[2, 3])), ("axis", I32(&[1, -1]))], &[] => &["repeats dim 1"];
        ],
    );
}

#[test]
fn unpack_outputs_count_from_num() {
    let mut t = T::new();
    let x = t.f(&[3, 4]);
    let id = t.call("Unpack", &[("x", &[x])], &[("num", i(3))]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4]); 3]);
    let x = t.input(INT32, &[3, 4]);
    let id = t
        .call("Unpack", &[("x", &[x])], &[("num", i(4)), ("axis", i(-1))])
        .unwrap();
    assert_eq!(t.outs(id), vec![(INT32, vec![3]); 4]);
    let x = t.f(&[U, 4]);
    let id = t.call("Unpack", &[("x", &[x])], &[("num", i(2))]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4]); 2]);
    let x = t.f(&[-2]);
    let id = t.call("Unpack", &[("x", &[x])], &[("num", i(2))]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![-2]); 2]);
    let x = t.f(&[3, 4]);
    t.rejects(
        "Unpack",
        &[("x", &[x])],
        &[("num", i(2))],
        &["dim 0 of x [3, 4] is 3", "'num' is 2"],
    );
    t.rejects_in(
        "Unpack",
        &[("x", F(&[3, 4]))],
        &[("num", i(3)), ("axis", i(2))],
        &["attribute 'axis' 2 is out of range"],
    );
}

#[test]
fn triangles_keep_shape() {
    let mut t = T::new();
    for ty in ["Tril", "Triu", "Trilu"] {
        let x = t.input(INT32, &[2, 3, 4]);
        assert_eq!(
            t.ok(ty, &[("x", &[x])], &[]),
            (INT32, vec![2, 3, 4]),
            "{ty}"
        );
        assert_eq!(t.dims_in(ty, &[("x", F(&[U, U]))], &[]), vec![U, U], "{ty}");
        t.rejects_in(ty, &[("x", F(&[4]))], &[], &["rank >= 2", "rank 1"]);
    }
    assert_eq!(
        t.dims_in(
            "Trilu",
            &[("x", F(&[3, 3])), ("k", I64(&[1]))],
            &[("upper", i(1))]
        ),
        vec![3, 3]
    );
    let x = t.f(&[3, 3]);
    t.rejects_each_in(
        "Trilu",
        rows![
            &[("x", Port(x)), ("k", I64(&[1, 2]))], &[] => &["input 'k' must be a scalar (one element)"];
            &[("x", F(&[3, 3]))], &[("upper", i(2))] => &["'upper' must be 0 or 1"];
        ],
    );
}

#[test]
fn concat_takes_concat_dim_as_its_first_input() {
    let mut t = T::new();
    let a = t.f(&[2, 3]);
    let c = t.f(&[2, 5]);
    let ax = t.scalar_i32(1);
    assert_eq!(
        t.ok("Concat", &[("concat_dim", &[ax]), ("x", &[a, c])], &[]),
        (FLOAT, vec![2, 8])
    );
    let d = t.f(&[3, 3]);
    t.rejects(
        "Concat",
        &[("concat_dim", &[ax]), ("x", &[a, d])],
        &[],
        &["Concat"],
    );
}
