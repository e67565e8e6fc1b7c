//! Normalisations and softmax (`src/infer/norm.rs`).

use super::*;

#[test]
fn batch_norm() {
    let mut t = T::new();
    let x = t.f(&[2, 4, 4, 8]);
    let (sc, of) = (t.f(&[8]), t.f(&[8]));
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[x]), ("scale", &[sc]), ("offset", &[of])],
            &[],
        )
        .unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 4, 4, 8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![1])
        ]
    );
    // NCHW, fp16 x, inference with mean/variance.
    let xh = t.input(FLOAT16, &[2, 3, 5, 5]);
    let (s3, o3, m3, v3) = (t.f(&[3]), t.f(&[3]), t.f(&[3]), t.f(&[3]));
    let id = t
        .call(
            "BatchNorm",
            &[
                ("x", &[xh]),
                ("scale", &[s3]),
                ("offset", &[o3]),
                ("mean", &[m3]),
                ("variance", &[v3]),
            ],
            &[("data_format", s("NCHW")), ("is_training", b(false))],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT16, vec![2, 3, 5, 5]));
    assert_eq!(t.outs(id)[1], (FLOAT, vec![3]));
    // Unknown channel dim, known from scale.
    let xu = t.f(&[U, U, U, U]);
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[xu]), ("scale", &[sc]), ("offset", &[of])],
            &[],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT, vec![U, U, U, U]));
    assert_eq!(t.outs(id)[1], (FLOAT, vec![8]));
    let xr = t.f(&[-2]);
    let su = t.f(&[U]);
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[xr]), ("scale", &[su]), ("offset", &[su])],
            &[],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT, vec![-2]));
    assert_eq!(t.outs(id)[2], (FLOAT, vec![U]));
    // Errors.
    let (x, sc, of, s7) = (Port(x), Port(sc), Port(of), F(&[7]));
    t.rejects_each_in(
        "BatchNorm",
        rows![
            &[("x", x), ("scale", s7), ("offset", of)], &[] => &["'scale' has 7 values", "8 channels"];
            &[("x", x), ("scale", sc), ("offset", s7)], &[] => &["'offset' has 7 values"];
            &[("x", F(&[2, 4, 8])), ("scale", sc), ("offset", of)], &[] => &["4-D or 5-D"];
            &[("x", x), ("scale", sc), ("offset", of)], &[("data_format", s("HWCN"))] => &["'data_format'", "HWCN"];
        ],
    );
}

#[test]
fn softmax_keeps_shape() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in("SoftmaxV2", &[("x", Typed(FLOAT16, &[2, 3]))], &[]),
        (FLOAT16, vec![2, 3])
    );
    let x = t.input(FLOAT16, &[2, 3]);
    assert_eq!(
        t.ok("SoftmaxV2", &[("x", &[x])], &[("half_to_float", b(true))]),
        (FLOAT, vec![2, 3])
    );
    assert_eq!(
        t.ok_in(
            "LogSoftmaxV2",
            &[("logits", F(&[U, 3]))],
            &[("axes", li(&[0, 1]))]
        ),
        (FLOAT, vec![U, 3])
    );
    assert_eq!(
        t.dims_in("SoftmaxV2", &[("x", F(&[-2]))], &[("axes", li(&[5]))]),
        vec![-2]
    );
    t.rejects_in(
        "SoftmaxV2",
        &[("x", F(&[2, 3]))],
        &[("axes", li(&[2]))],
        &["SoftmaxV2", "attribute 'axes' value 2", "rank 2"],
    );
    t.rejects_in(
        "LogSoftmaxV2",
        &[("logits", F(&[2, 3]))],
        &[("axes", li(&[0, -2]))],
        &["'axes'", "repeats"],
    );
    // dtype check comes from the prototype
    let x = t.input(INT32, &[2]);
    assert!(t.call("SoftmaxV2", &[("x", &[x])], &[]).is_err());
}

#[test]
fn layer_norm_stats_keep_leading_dims() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let g = t.f(&[4]);
    let be = t.f(&[4]);
    let ins: Ins = &[("x", &[x]), ("gamma", &[g]), ("beta", &[be])];
    let attrs = &[("begin_norm_axis", i(2)), ("begin_params_axis", i(-1))];
    assert_eq!(
        t.all("LayerNorm", ins, attrs),
        vec![
            (FLOAT, vec![2, 3, 4]),
            (FLOAT, vec![2, 3, 1]),
            (FLOAT, vec![2, 3, 1])
        ]
    );
    // defaults: normalize everything, gamma has x's shape
    let x = t.input(FLOAT16, &[U, 3, 4]);
    let outs = t.all_in(
        "LayerNorm",
        &[
            ("x", Port(x)),
            ("gamma", Typed(FLOAT16, &[U, 3, 4])),
            ("beta", Typed(FLOAT16, &[2, 3, 4])),
        ],
        &[],
    );
    assert_eq!(outs[0], (FLOAT16, vec![U, 3, 4]));
    assert_eq!(outs[1], (FLOAT16, vec![1, 1, 1]));
    let outs = t.all_in(
        "LayerNorm",
        &[("x", F(&[-2])), ("gamma", F(&[4])), ("beta", F(&[4]))],
        &[],
    );
    assert!(outs.iter().all(|o| o.1 == vec![-2]));
    t.rejects_each_in(
        "LayerNorm",
        rows![
            &[("x", F(&[2, 3, 4])), ("gamma", F(&[5])), ("beta", F(&[4]))], &[("begin_norm_axis", i(-1)), ("begin_params_axis", i(-1))] => &["input 'gamma' [5]", "[4]"];
            &[("x", F(&[2, 3])), ("gamma", F(&[3])), ("beta", F(&[3]))], &[("begin_norm_axis", i(2))] => &["begin_norm_axis", "out of range"];
        ],
    );
}

#[test]
fn instance_norm_reduces_spatial_dims() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4, 5]);
    let g = t.f(&[3]);
    let be = t.f(&[3]);
    let ins: Ins = &[("x", &[x]), ("gamma", &[g]), ("beta", &[be])];
    let outs = t.all("InstanceNorm", ins, &[("data_format", s("NCHW"))]);
    assert_eq!(
        outs,
        vec![
            (FLOAT, vec![2, 3, 4, 5]),
            (FLOAT, vec![2, 3, 1, 1]),
            (FLOAT, vec![2, 3, 1, 1])
        ]
    );
    let outs = t.all_in(
        "InstanceNorm",
        &[
            ("x", F(&[2, U, 4, 4, 3])),
            ("gamma", F(&[3])),
            ("beta", F(&[3])),
        ],
        &[],
    );
    assert_eq!(outs[1], (FLOAT, vec![2, 1, 1, 1, 3]));
    let outs = t.all_in(
        "InstanceNorm",
        &[("x", F(&[-2])), ("gamma", F(&[3])), ("beta", F(&[3]))],
        &[],
    );
    assert!(outs.iter().all(|o| o.1 == vec![-2]));
    let x = t.f(&[2, 3, 4]);
    let be = t.f(&[3]);
    t.rejects_each_in(
        "InstanceNorm",
        rows![
            &[("x", Port(x)), ("gamma", F(&[3])), ("beta", Port(be))], &[] => &["input 'x' must be 4-D or 5-D", "rank 3"];
            &[("x", F(&[2, 3, 4, 5])), ("gamma", F(&[4])), ("beta", F(&[3]))], &[("data_format", s("NCHW"))] => &["input 'gamma' [4]", "3 channels"];
        ],
    );
}

#[test]
fn group_norm_stats_are_per_group() {
    let mut t = T::new();
    let x = t.f(&[2, 6, 4, 4]);
    let g = t.f(&[6]);
    let be = t.f(&[6]);
    let ins: Ins = &[("x", &[x]), ("gamma", &[g]), ("beta", &[be])];
    let outs = t.all(
        "GroupNorm",
        ins,
        &[("num_groups", i(3)), ("data_format", s("NCHW"))],
    );
    assert_eq!(
        outs,
        vec![
            (FLOAT, vec![2, 6, 4, 4]),
            (FLOAT, vec![2, 3]),
            (FLOAT, vec![2, 3])
        ]
    );
    let outs = t.all_in(
        "GroupNorm",
        &[
            ("x", F(&[U, U, U, 6])),
            ("gamma", F(&[6])),
            ("beta", F(&[6])),
        ],
        &[("num_groups", i(2))],
    );
    assert_eq!(outs[0].1, vec![U, U, U, 6]);
    assert_eq!(outs[2].1, vec![U, 2]);
    t.rejects_in(
        "GroupNorm",
        &[
            ("x", F(&[2, 6, 4, 4])),
            ("gamma", F(&[6])),
            ("beta", F(&[6])),
        ],
        &[("num_groups", i(4)), ("data_format", s("NCHW"))],
        &["6 channels", "num_groups 4"],
    );
    let be = t.f(&[6]);
    t.rejects_in(
        "GroupNorm",
        &[("x", F(&[2, 6])), ("gamma", F(&[6])), ("beta", Port(be))],
        &[("num_groups", i(0))],
        &["'num_groups' must be >= 1"],
    );
}

#[test]
fn lrn_is_4d_elementwise() {
    let mut t = T::new();
    let x = t.input(FLOAT16, &[1, 8, 5, 5]);
    assert_eq!(
        t.ok("LRN", &[("x", &[x])], &[]),
        (FLOAT16, vec![1, 8, 5, 5])
    );
    assert_eq!(
        t.dims_in("LRN", &[("x", F(&[U, 8, U, U]))], &[]),
        vec![U, 8, U, U]
    );
    let x = t.f(&[8, 5, 5]);
    t.rejects("LRN", &[("x", &[x])], &[], &["input 'x' must be 4-D"]);
    t.rejects_in(
        "LRN",
        &[("x", F(&[1, 8, 5, 5]))],
        &[("norm_region", s("ACROSS"))],
        &["'norm_region'", "\"ACROSS\""],
    );
}

#[test]
fn rms_norm_rstd_keeps_leading_dims_as_float() {
    let mut t = T::new();
    let x = t.input(FLOAT16, &[2, 3, 4]);
    assert_eq!(
        t.all_in(
            "RmsNorm",
            &[("x", Port(x)), ("gamma", Typed(FLOAT16, &[4]))],
            &[]
        ),
        vec![(FLOAT16, vec![2, 3, 4]), (FLOAT, vec![2, 3, 1])]
    );
    assert_eq!(
        t.all_in(
            "RmsNorm",
            &[("x", Port(x)), ("gamma", Typed(FLOAT16, &[3, 4]))],
            &[]
        )[1],
        (FLOAT, vec![2, 1, 1])
    );
    assert_eq!(
        t.all_in(
            "RmsNorm",
            &[("x", Typed(BF16, &[U, 3, 4])), ("gamma", Typed(BF16, &[U]))],
            &[]
        ),
        vec![(BF16, vec![U, 3, 4]), (FLOAT, vec![U, 3, 1])]
    );
    assert_eq!(
        t.all_in("RmsNorm", &[("x", F(&[-2])), ("gamma", F(&[4]))], &[])[1],
        (FLOAT, vec![-2])
    );
}

#[test]
fn rms_norm_rejects_a_gamma_that_does_not_fit() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    t.rejects_each_in(
        "RmsNorm",
        rows![
            &[("x", Port(x)), ("gamma", F(&[4]))], &[] => &["RmsNorm", "input 'gamma' [4]", "trailing dims", "[2, 3]"];
            &[("x", Port(x)), ("gamma", F(&[1, 2, 3]))], &[] => &["more dims than x [2, 3]"];
        ],
    );
    let h = t.input(FLOAT16, &[3]);
    t.fail("RmsNorm", &[("x", &[x]), ("gamma", &[h])], &[]);
}

#[test]
fn add_rms_norm_returns_y_rstd_and_the_sum() {
    let mut t = T::new();
    let a = t.input(FLOAT16, &[2, U, 8]);
    let b = t.input(FLOAT16, &[U, 5, 8]);
    let g = t.input(FLOAT16, &[8]);
    let ins: Ins = &[("x1", &[a]), ("x2", &[b]), ("gamma", &[g])];
    assert_eq!(
        t.all("AddRmsNorm", ins, &[("epsilon", f(1e-5))]),
        vec![
            (FLOAT16, vec![2, 5, 8]),
            (FLOAT, vec![2, 5, 1]),
            (FLOAT16, vec![2, 5, 8])
        ]
    );
    t.rejects_in(
        "AddRmsNorm",
        &[
            ("x1", Port(a)),
            ("x2", Typed(FLOAT16, &[2, 8])),
            ("gamma", Port(g)),
        ],
        &[],
        &["inputs 'x1' [2, -1, 8] and 'x2' [2, 8] must have the same shape"],
    );
}
