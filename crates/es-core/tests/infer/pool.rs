//! Pooling (`src/infer/pool.rs`).

use super::*;

#[test]
fn max_and_avg_pool_same_and_valid() {
    for ty in ["MaxPool", "AvgPool"] {
        let mut t = T::new();
        let k = li(&[1, 3, 3, 1]);
        let st = li(&[1, 2, 2, 1]);
        let x = t.f(&[1, 32, 32, 3]);
        let same = [
            ("ksize", k.clone()),
            ("strides", st.clone()),
            ("padding", s("SAME")),
        ];
        assert_eq!(
            t.ok(ty, &[("x", &[x])], &same),
            (FLOAT, vec![1, 16, 16, 3]),
            "{ty}"
        );
        let x = t.f(&[1, 32, 32, 3]);
        let valid = [
            ("ksize", k.clone()),
            ("strides", st.clone()),
            ("padding", s("VALID")),
        ];
        assert_eq!(
            t.dims(ty, &[("x", &[x])], &valid),
            vec![1, 15, 15, 3],
            "{ty}"
        );
        let x = t.f(&[2, 3, 9, 10]);
        let nchw = [
            ("ksize", li(&[1, 1, 2, 2])),
            ("strides", li(&[1, 1, 2, 2])),
            ("padding", s("VALID")),
            ("data_format", s("NCHW")),
        ];
        assert_eq!(t.dims(ty, &[("x", &[x])], &nchw), vec![2, 3, 4, 5], "{ty}");
        t.dims_each_in(
            ty,
            &[
                (&[("x", F(&[U, U, 32, 3]))], &same, &[U, U, 16, 3]),
                (&[("x", F(&[-2]))], &same, &[U, U, U, U]),
            ],
        );
        let x = t.f(&[1, 32, 32, 3]);
        let bad = [
            ("ksize", k.clone()),
            ("strides", st.clone()),
            ("padding", s("CALCULATED")),
        ];
        t.rejects(
            ty,
            &[("x", &[x])],
            &bad,
            &["attribute 'padding'", "\"CALCULATED\""],
        );
        let x = t.f(&[1, 32, 32, 3]);
        let bad = [
            ("ksize", li(&[3, 3])),
            ("strides", st.clone()),
            ("padding", s("SAME")),
        ];
        t.rejects(
            ty,
            &[("x", &[x])],
            &bad,
            &["attribute 'ksize' must have 4 values"],
        );
        t.rejects_in(
            ty,
            &[("x", F(&[1, 2, 2, 3]))],
            &valid,
            &["output height would be empty", "window 3"],
        );
    }
}

#[test]
fn pool_v2_calculated_ceil_global() {
    for ty in ["MaxPoolV3", "AvgPoolV2"] {
        let mut t = T::new();
        let base = |pads: &[i64], ceil: bool| {
            vec![
                ("ksize", li(&[1, 1, 3, 3])),
                ("strides", li(&[1, 1, 2, 2])),
                ("pads", li(pads)),
                ("ceil_mode", b(ceil)),
            ]
        };
        t.dims_each_in(
            ty,
            &[
                (
                    &[("x", F(&[1, 3, 8, 8]))],
                    &base(&[1, 1, 1, 1], false),
                    &[1, 3, 4, 4],
                ),
                (
                    &[("x", F(&[1, 3, 8, 8]))],
                    &base(&[1, 1, 1, 1], true),
                    &[1, 3, 5, 5],
                ),
            ],
        );
        // ceil mode drops a window that would start in the trailing pad
        let x = t.f(&[1, 3, 5, 5]);
        let attrs = [
            ("ksize", li(&[1, 1, 2, 2])),
            ("strides", li(&[1, 1, 2, 2])),
            ("pads", li(&[1, 1, 1, 1])),
            ("ceil_mode", b(true)),
        ];
        assert_eq!(t.dims(ty, &[("x", &[x])], &attrs), vec![1, 3, 3, 3], "{ty}");
        let x = t.f(&[1, 3, 7, 7]);
        let mut same = base(&[0, 0, 0, 0], false);
        same.push(("padding_mode", s("SAME")));
        assert_eq!(t.dims(ty, &[("x", &[x])], &same), vec![1, 3, 4, 4], "{ty}");
        let x = t.f(&[2, 3, 7, 9]);
        let mut global = base(&[0, 0, 0, 0], false);
        global.push(("global_pooling", b(true)));
        assert_eq!(
            t.dims(ty, &[("x", &[x])], &global),
            vec![2, 3, 1, 1],
            "{ty}"
        );
        let x = t.f(&[1, 7, 7, 3]);
        let nhwc = [
            ("ksize", li(&[1, 3, 3, 1])),
            ("strides", li(&[1, 1, 1, 1])),
            ("data_format", s("NHWC")),
        ];
        assert_eq!(t.dims(ty, &[("x", &[x])], &nhwc), vec![1, 5, 5, 3], "{ty}");
        assert_eq!(
            t.dims_in(ty, &[("x", F(&[U, 3, U, 8]))], &base(&[1, 1, 1, 1], false)),
            vec![U, 3, U, 4],
            "{ty}"
        );
        let x = t.f(&[1, 3, 8, 8]);
        let mut bad = base(&[0, 0, 0, 0], false);
        bad.push(("padding_mode", s("FULL")));
        t.rejects(ty, &[("x", &[x])], &bad, &["'padding_mode'", "\"FULL\""]);
        t.rejects_in(
            ty,
            &[("x", F(&[1, 3, 8, 8]))],
            &base(&[1, -1, 0, 0], false),
            &["attribute 'pads'", "negative value -1"],
        );
    }
    let mut t = T::new();
    t.rejects_in(
        "AvgPoolV2",
        &[("x", F(&[1, 3, 8, 8]))],
        &[
            ("ksize", li(&[1, 1, 3, 3])),
            ("strides", li(&[1, 1, 1, 1])),
            ("divisor_override", i(-1)),
        ],
        &["'divisor_override' must be >= 0"],
    );
}

#[test]
fn global_average_pool_and_caffe_pooling() {
    let mut t = T::new();
    t.dims_each_in(
        "GlobalAveragePool",
        rows![
            &[("x", F(&[2, 3, 5, 7]))], &[] => &[2, 3, 1, 1];
            &[("x", F(&[U, 3, U, U, U]))], &[] => &[U, 3, 1, 1, 1];
        ],
    );
    t.rejects_in(
        "GlobalAveragePool",
        &[("x", F(&[2, 3]))],
        &[],
        &["rank >= 3", "rank 2"],
    );

    let p = |ceil: i64| {
        vec![
            ("window", li(&[3, 3])),
            ("stride", li(&[2, 2])),
            ("ceil_mode", i(ceil)),
        ]
    };
    t.dims_each_in(
        "Pooling",
        rows![
            &[("x", F(&[1, 3, 8, 8]))], &p(0) => &[1, 3, 4, 4];
            &[("x", F(&[1, 3, 8, 8]))], &p(1) => &[1, 3, 3, 3];
        ],
    );
    assert_eq!(
        t.ok_in("Pooling", &[("x", Typed(INT8, &[1, 3, 8, 8]))], &p(1)),
        (INT32, vec![1, 3, 3, 3])
    );
    let x = t.f(&[U, 3, 8, U]);
    let mut g = p(0);
    g.push(("global_pooling", b(true)));
    assert_eq!(t.dims("Pooling", &[("x", &[x])], &g), vec![U, 3, 1, 1]);
    t.rejects_in(
        "Pooling",
        &[("x", F(&[1, 3, 8, 8]))],
        &p(2),
        &["'ceil_mode' must be 0 (ceil) or 1 (floor)"],
    );
}
