//! Indexing: gathers, scatters, TopK, MaskedFill, NonZero/Where, EmbeddingBag
//! (`src/infer/index.rs`).

use super::*;

#[test]
fn masked_fill() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    let mask = t.input(BOOL, &[1, 3]);
    let v = t.scalar_f(0.0);
    assert_eq!(
        t.ok(
            "MaskedFill",
            &[("x", &[x]), ("mask", &[mask]), ("value", &[v])],
            &[]
        ),
        (FLOAT, vec![2, 3])
    );
    assert_eq!(
        t.dims_in(
            "MaskedFill",
            &[("x", F(&[U, 3])), ("mask", Port(mask)), ("value", Port(v))],
            &[]
        ),
        vec![U, 3]
    );
    t.rejects_each_in(
        "MaskedFill",
        rows![
            &[("x", Port(x)), ("mask", Typed(BOOL, &[4])), ("value", Port(v))], &[] => &["'x' [2, 3]", "'mask' [4]"];
            &[("x", Port(x)), ("mask", Port(mask)), ("value", F(&[2]))], &[] => &["'value'", "scalar", "[2]"];
        ],
    );
}

#[test]
fn top_k_v2() {
    let mut t = T::new();
    let x = t.f(&[4, 10]);
    let k = t.scalar_i32(3);
    let id = t.call("TopKV2", &[("x", &[x]), ("k", &[k])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, 3]), (INT32, vec![4, 3])]);
    let id = t
        .call("TopKV2", &[("x", &[x]), ("k", &[k])], &[("dim", i(0))])
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![3, 10]), (INT32, vec![3, 10])]);
    let id = t
        .call(
            "TopKV2",
            &[("x", &[x]), ("k", &[k])],
            &[("indices_dtype", i(INT64 as i64))],
        )
        .unwrap();
    assert_eq!(t.outs(id)[1], (INT64, vec![4, 3]));
    let dk = t.input(INT32, &[]);
    let id = t.call("TopKV2", &[("x", &[x]), ("k", &[dk])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, U]), (INT32, vec![4, U])]);
    let xu = t.f(&[U, U]);
    let id = t.call("TopKV2", &[("x", &[xu]), ("k", &[k])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 3]), (INT32, vec![U, 3])]);
    let (k20, kn) = (Port(t.scalar_i32(20)), Port(t.scalar_i32(-1)));
    let (x, k) = (Port(x), Port(k));
    t.rejects_each_in(
        "TopKV2",
        rows![
            &[("x", x), ("k", k20)], &[] => &["'k' is 20, more than dim 1 of x [4, 10] (10)"];
            &[("x", x), ("k", kn)], &[] => &["'k' must be >= 0"];
            &[("x", x), ("k", k)], &[("dim", i(2))] => &["'dim' 2 is out of range"];
            &[("x", F(&[])), ("k", k)], &[] => &["rank >= 1"];
        ],
    );
}

#[test]
fn scatter_elements() {
    let mut t = T::new();
    let data = t.f(&[4, 5]);
    let idx = t.input(INT32, &[2, 5]);
    let upd = t.f(&[2, 5]);
    let ins = |d, i, u| [("data", [d]), ("indices", [i]), ("updates", [u])];
    let run = |t: &mut T, d, ii, u, attrs: Attrs| {
        let v = ins(d, ii, u);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("ScatterElements", &r, attrs)
    };
    let id = run(
        &mut t,
        data,
        idx,
        upd,
        &[("axis", i(0)), ("reduction", s("add"))],
    )
    .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, 5])]);
    let du = t.f(&[U, 5]);
    let iu = t.input(INT64, &[U, 5]);
    let id = run(&mut t, du, iu, upd, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 5])]);
    let i3 = t.input(INT32, &[2, 5, 1]);
    has(
        &run(&mut t, data, i3, upd, &[]).unwrap_err().to_string(),
        &["'indices' [2, 5, 1] must have the rank of data [4, 5]"],
    );
    let u_bad = t.f(&[3, 5]);
    has(
        &run(&mut t, data, idx, u_bad, &[]).unwrap_err().to_string(),
        &["indices [2, 5] and updates [3, 5]"],
    );
    has(
        &run(&mut t, data, idx, upd, &[("reduction", s("foo"))])
            .unwrap_err()
            .to_string(),
        &["'reduction'", "\"foo\""],
    );
    has(
        &run(&mut t, data, idx, upd, &[("axis", i(2))])
            .unwrap_err()
            .to_string(),
        &["'axis' 2 is out of range"],
    );
}

#[test]
fn gather_elements() {
    let mut t = T::new();
    let x = t.f(&[4, 5]);
    let idx = t.input(INT32, &[4, 2]);
    assert_eq!(
        t.ok(
            "GatherElements",
            &[("x", &[x]), ("index", &[idx])],
            &[("dim", i(1))]
        ),
        (FLOAT, vec![4, 2])
    );
    t.dims_each_in(
        "GatherElements",
        rows![
            &[("x", Port(x)), ("index", Typed(INT64, &[U, 7]))], &[("dim", i(-1))] => &[U, 7];
            &[("x", Port(x)), ("index", Typed(INT64, &[-2]))], &[] => &[U, U];
        ],
    );
    t.rejects_each_in(
        "GatherElements",
        rows![
            &[("x", Port(x)), ("index", Typed(INT32, &[4, 2, 1]))], &[] => &["same rank (2 vs 3)"];
            &[("x", Port(x)), ("index", Typed(INT32, &[6, 5]))], &[("dim", i(1))] => &["larger than x [4, 5] at dim 0"];
        ],
    );
    t.rejects(
        "GatherElements",
        &[("x", &[x]), ("index", &[idx])],
        &[("dim", i(2))],
        &["'dim' 2 is out of range"],
    );
}

#[test]
fn gather_v2_axis_and_batch_dims() {
    let mut t = T::new();
    let x = t.f(&[5, 6, 7]);
    let idx = t.input(INT32, &[2, 3]);
    let a = t.scalar_i32(1);
    assert_eq!(
        t.dims(
            "GatherV2",
            &[("x", &[x]), ("indices", &[idx]), ("axis", &[a])],
            &[]
        ),
        vec![5, 2, 3, 7]
    );
    t.dims_each_in(
        "GatherV2",
        rows![
            &[("x", F(&[4, 5, 6])), ("indices", Typed(INT64, &[4, 2])), ("axis", I32(&[-2]))], &[("batch_dims", i(1))] => &[4, 2, 6];
            &[("x", F(&[5, 6, 7])), ("indices", Typed(INT32, &[2, 3])), ("axis", Typed(INT32, &[]))], &[] => &[U, U, U, U];
        ],
    );
    let x = t.f(&[5, U, 7]);
    let idx = t.input(INT32, &[-2]);
    let a = t.scalar_i32(0);
    assert_eq!(
        t.dims(
            "GatherV2",
            &[("x", &[x]), ("indices", &[idx]), ("axis", &[a])],
            &[]
        ),
        vec![-2]
    );
    let x = t.f(&[5, 6, 7]);
    let idx = t.input(INT32, &[2]);
    let a = t.scalar_i32(3);
    t.rejects(
        "GatherV2",
        &[("x", &[x]), ("indices", &[idx]), ("axis", &[a])],
        &[],
        &["axis 3 is out of range for rank 3"],
    );
    let x = t.f(&[4, 5, 6]);
    let idx = t.input(INT32, &[3, 2]);
    let a = t.scalar_i32(1);
    t.rejects(
        "GatherV2",
        &[("x", &[x]), ("indices", &[idx]), ("axis", &[a])],
        &[("batch_dims", i(1))],
        &["batch dim 0 differs"],
    );

    let x = t.f(&[5, 6, 7]);
    assert_eq!(
        t.dims_in(
            "GatherV2D",
            &[("x", Port(x)), ("indices", Typed(INT32, &[4]))],
            &[("axis", i(-1))]
        ),
        vec![5, 6, 4]
    );
    t.rejects_in(
        "GatherV2D",
        &[("x", F(&[5, 6, 7])), ("indices", Typed(INT32, &[4]))],
        &[("axis", i(-4))],
        &["axis -4 is out of range"],
    );
}

#[test]
fn gather_nd_shapes() {
    let mut t = T::new();
    t.dims_each_in(
        "GatherNd",
        rows![
            &[("x", F(&[4, 5, 6])), ("indices", Typed(INT32, &[2, 2]))], &[] => &[2, 6];
            &[("x", F(&[4, 5, 6])), ("indices", Typed(INT64, &[3, 7, 3]))], &[] => &[3, 7];
            &[("x", F(&[4, 5, 6])), ("indices", Typed(INT32, &[2, U]))], &[] => &[-2];
        ],
    );
    t.rejects_in(
        "GatherNd",
        &[("x", F(&[4, 5, 6])), ("indices", Typed(INT32, &[2, 4]))],
        &[],
        &["last dim of indices [2, 4] is 4", "rank 3"],
    );
}

#[test]
fn scatter_nd_and_update() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in(
            "ScatterNd",
            &[
                ("indices", Typed(INT32, &[2, 1])),
                ("x", F(&[2, 5])),
                ("shape", I32(&[4, 5]))
            ],
            &[]
        ),
        (FLOAT, vec![4, 5])
    );
    assert_eq!(
        t.dims_in(
            "ScatterNd",
            &[
                ("indices", Typed(INT32, &[2, 1])),
                ("x", F(&[2, 5])),
                ("shape", Typed(INT32, &[2]))
            ],
            &[]
        ),
        vec![U, U]
    );
    t.rejects_in(
        "ScatterNd",
        &[
            ("indices", Typed(INT32, &[2, 1])),
            ("x", F(&[2, 6])),
            ("shape", I32(&[4, 5])),
        ],
        &[],
        &["input 'x' [2, 6] must have shape [2, 5]"],
    );

    let v = t.f(&[4, 5]);
    assert_eq!(
        t.ok_in(
            "ScatterNdUpdate",
            &[
                ("var", Port(v)),
                ("indices", Typed(INT64, &[3, 1])),
                ("updates", F(&[3, 5]))
            ],
            &[]
        ),
        (FLOAT, vec![4, 5])
    );
    assert_eq!(
        t.dims_in(
            "ScatterNdUpdate",
            &[
                ("var", F(&[U, 5])),
                ("indices", Typed(INT64, &[-2])),
                ("updates", F(&[3, 5]))
            ],
            &[]
        ),
        vec![U, 5]
    );
    t.rejects_in(
        "ScatterNdUpdate",
        &[
            ("var", F(&[4, 5])),
            ("indices", Typed(INT64, &[3, 2])),
            ("updates", F(&[3, 5])),
        ],
        &[],
        &["input 'updates' [3, 5] must have shape [3]"],
    );
}

#[test]
fn nonzero_and_where() {
    let mut t = T::new();
    t.ok_each_in(
        "NonZero",
        rows![
            &[("x", F(&[2, 3]))], &[] => (INT64, &[U, 2]);
            &[("x", F(&[2, 3, 4]))], &[("transpose", b(true)), ("dtype", ty(INT32))] => (INT32, &[3, U]);
        ],
    );
    let x = t.ints(&[1, 0, 2, 0]);
    assert_eq!(t.dims("NonZero", &[("x", &[x])], &[]), vec![2, 1]);
    assert_eq!(t.dims_in("NonZero", &[("x", F(&[-2]))], &[]), vec![U, U]);
    t.rejects_in(
        "NonZero",
        &[("x", F(&[2, 3]))],
        &[("dtype", ty(FLOAT))],
        &["attribute 'dtype' must be DT_INT32 or DT_INT64", "DT_FLOAT"],
    );

    let x = t.input(BOOL, &[4, 5, 6, 7]);
    assert_eq!(t.ok("Where", &[("x", &[x])], &[]), (INT64, vec![U, 4]));
    let x = t.ints(&[0, 0, 3]);
    assert_eq!(t.dims("Where", &[("x", &[x])], &[]), vec![1, 1]);
    assert_eq!(t.dims_in("Where", &[("x", F(&[-2]))], &[]), vec![U, U]);
}

#[test]
fn embedding_bag_outputs() {
    let mut t = T::new();
    let w = t.f(&[10, 4]);
    let idx = t.input(INT64, &[6]);
    let off = t.input(INT64, &[3]);
    let ins: Ins = &[("weight", &[w]), ("indices", &[idx]), ("offsets", &[off])];
    assert_eq!(
        t.all("EmbeddingBag", ins, &[("mode", s("max"))]),
        vec![
            (FLOAT, vec![3, 4]),
            (INT64, vec![6]),
            (INT64, vec![3]),
            (INT64, vec![3, 4])
        ]
    );
    let outs = t.all_in(
        "EmbeddingBag",
        &[
            ("weight", F(&[10, 4])),
            ("indices", Typed(INT32, &[6])),
            ("offsets", Typed(INT32, &[3])),
        ],
        &[("include_last_offset", b(true))],
    );
    assert_eq!(outs[0], (FLOAT, vec![2, 4]));
    assert_eq!(outs[3], (INT32, vec![2]));
    let outs = t.all_in(
        "EmbeddingBag",
        &[("weight", F(&[10, 4])), ("indices", Typed(INT32, &[5, 3]))],
        &[],
    );
    assert_eq!(outs[0].1, vec![5, 4]);
    assert_eq!(outs[1].1, vec![15]);
    let outs = t.all_in(
        "EmbeddingBag",
        &[
            ("weight", F(&[U, U])),
            ("indices", Typed(INT32, &[U])),
            ("offsets", Typed(INT32, &[U])),
        ],
        &[],
    );
    assert_eq!(outs[0].1, vec![U, U]);
    assert_eq!(outs[1].1, vec![U]);
    t.rejects_each_in(
        "EmbeddingBag",
        rows![
            &[("weight", F(&[10, 4])), ("indices", Typed(INT32, &[6])), ("offsets", Typed(INT32, &[3]))], &[("mode", s("prod"))] => &["attribute 'mode'", "\"prod\""];
            &[("weight", F(&[10])), ("indices", Typed(INT32, &[6])), ("offsets", Typed(INT32, &[3]))], &[] => &["input 'weight' must be 2-D"];
        ],
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
    t.fails(
        "OneHot",
        &named(ins, [&[x], &[depth], &[on], &[offi]]),
        &[],
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
    t.fails(
        "OneHotD",
        &named(ins, [&[x], &[on], &[off]]),
        &[],
        &["required attribute 'depth'"],
    );
}

#[test]
fn unique_with_counts_and_sorting() {
    let mut t = T::new();
    assert_eq!(
        t.all_in("UniqueWithCountsAndSorting", &[("x", F(&[3, 4]))], &[]),
        vec![(FLOAT, vec![U]), (INT64, vec![0]), (INT64, vec![0])]
    );
    assert_eq!(
        t.all_in(
            "UniqueWithCountsAndSorting",
            &[("x", Typed(INT32, &[3, 4]))],
            &[
                ("return_inverse", b(true)),
                ("return_counts", b(true)),
                ("out_idx", ty(INT32))
            ]
        ),
        vec![(INT32, vec![U]), (INT32, vec![3, 4]), (INT32, vec![U])]
    );
    let x = t.input(DOUBLE, &[U, 2]);
    assert_eq!(
        t.all(
            "UniqueWithCountsAndSorting",
            &[("x", &[x])],
            &[("return_inverse", b(true))]
        ),
        vec![(DOUBLE, vec![U]), (INT64, vec![U, 2]), (INT64, vec![0])]
    );
    assert_eq!(
        t.all_in(
            "UniqueWithCountsAndSorting",
            &[("x", F(&[-2]))],
            &[("return_inverse", b(true)), ("return_counts", b(true))]
        ),
        vec![(FLOAT, vec![U]), (INT64, vec![-2]), (INT64, vec![U])]
    );
    // A scalar has one unique element; an empty tensor none.
    assert_eq!(
        t.all_in(
            "UniqueWithCountsAndSorting",
            &[("x", F(&[]))],
            &[("return_counts", b(true))]
        ),
        vec![(FLOAT, vec![1]), (INT64, vec![0]), (INT64, vec![1])]
    );
    assert_eq!(
        t.dims_in("UniqueWithCountsAndSorting", &[("x", F(&[2, 0]))], &[]),
        vec![0]
    );
    t.rejects_in(
        "UniqueWithCountsAndSorting",
        &[("x", F(&[3]))],
        &[("out_idx", ty(FLOAT))],
        &["out_idx", "DT_INT32 or DT_INT64"],
    );
}
