//! Convolutions and BiasAdd (`src/infer/conv.rs`).

use super::*;

fn conv_attrs<'a>(fmt: &'a str, strides: &[i64], pads: &[i64]) -> Vec<(&'a str, AttrValue)> {
    attrs(
        ["data_format", "strides", "pads"],
        [s(fmt), li(strides), li(pads)],
    )
}

#[test]
fn conv2d_known() {
    let mut t = T::new();
    // NCHW x, NCHW filter [out, in, kh, kw].
    let x = t.f(&[1, 3, 32, 32]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 3, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[1, 1, 1, 1]);
    assert_eq!(
        t.ok("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        (FLOAT, vec![1, 16, 32, 32])
    );
    // Stride 2, no padding: (32 - 3) / 2 + 1 = 15.
    let a = conv_attrs("NCHW", &[1, 1, 2, 2], &[0, 0, 0, 0]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![1, 16, 15, 15]
    );
    // Dilation 2: effective kernel 5, (32 + 2 - 5) / 1 + 1 = 30; asymmetric pads on W.
    let mut a = conv_attrs("NCHW", &[1, 1, 1, 1], &[1, 1, 0, 2]);
    a.push(("dilations", li(&[1, 1, 2, 2])));
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![1, 16, 30, 30]
    );
    // NHWC x with an HWCN filter [kh, kw, in, out], and a bias.
    let xh = t.input(FLOAT16, &[2, 28, 28, 8]);
    let wh = t.input_fmt(FLOAT16, Format::HWCN, &[5, 5, 8, 4]);
    let bias = t.input(FLOAT16, &[4]);
    let a = conv_attrs("NHWC", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.ok(
            "Conv2D",
            &[("x", &[xh]), ("filter", &[wh]), ("bias", &[bias])],
            &a
        ),
        (FLOAT16, vec![2, 24, 24, 4])
    );
    // NHWC filter [out, kh, kw, in], NHWC strides.
    let wn = t.input_fmt(FLOAT16, Format::NHWC, &[6, 3, 3, 8]);
    let a = conv_attrs("NHWC", &[1, 2, 2, 1], &[1, 1, 1, 1]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[xh]), ("filter", &[wn])], &a),
        vec![2, 14, 14, 6]
    );
    // Groups: 8 input channels, 4 groups, 2 per group; an ND (constant-like) filter is NCHW.
    let xg = t.f(&[1, 8, 10, 10]);
    let wg = t.f(&[12, 2, 3, 3]);
    let mut a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    a.push(("groups", i(4)));
    assert_eq!(
        t.dims("Conv2D", &[("x", &[xg]), ("filter", &[wg])], &a),
        vec![1, 12, 8, 8]
    );
    // int8 convolution accumulates in int32.
    let x8 = t.input(INT8, &[1, 3, 8, 8]);
    let w8 = t.input(INT8, &[4, 3, 1, 1]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.ok("Conv2D", &[("x", &[x8]), ("filter", &[w8])], &a),
        (INT32, vec![1, 4, 8, 8])
    );
}

#[test]
fn conv2d_unknown() {
    let mut t = T::new();
    let x = t.f(&[U, 3, U, 32]);
    let w = t.f(&[16, 3, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![U, 16, U, 30]
    );
    t.dims_each_in(
        "Conv2D",
        rows![
            &[("x", F(&[-2])), ("filter", Port(w))], &a => &[U, 16, U, U];
            &[("x", F(&[1, 3, 32, 32])), ("filter", F(&[U, U, 3, U]))], &a => &[1, U, 30, U];
        ],
    );
}

#[test]
fn conv2d_errors() {
    let mut t = T::new();
    let x = t.f(&[1, 3, 32, 32]);
    let w = t.f(&[16, 4, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    t.rejects(
        "Conv2D",
        &[("x", &[x]), ("filter", &[w])],
        &a,
        &[
            "Conv2D 'Conv2D_0'",
            "channel mismatch",
            "3 input channels",
            "4 per group",
        ],
    );
    // Output channels not divisible by groups.
    let xg = t.f(&[1, 4, 8, 8]);
    let wg = t.f(&[6, 1, 3, 3]);
    let mut ag = a.clone();
    ag.push(("groups", i(4)));
    t.rejects(
        "Conv2D",
        &[("x", &[xg]), ("filter", &[wg])],
        &ag,
        &["6 output channels", "groups 4"],
    );
    let w_ok = t.f(&[16, 3, 3, 3]);
    t.rejects_each(
        "Conv2D",
        rows![
            &[("x", &[x]), ("filter", &[w_ok])], &conv_attrs("NCHW", &[1, 1, 1], &[0, 0, 0, 0]) => &["'strides' must have 4 values"];
            &[("x", &[x]), ("filter", &[w_ok])], &conv_attrs("NCHW", &[1, 1, 0, 1], &[0, 0, 0, 0]) => &["'strides'", ">= 1"];
            &[("x", &[x]), ("filter", &[w_ok])], &conv_attrs("NCWH", &[1, 1, 1, 1], &[0, 0, 0, 0]) => &["'data_format'", "NCWH"];
        ],
    );
    t.rejects_each_in(
        "Conv2D",
        rows![
            &[("x", F(&[1, 3, 2, 2])), ("filter", Port(w_ok))], &a => &["output height would be empty"];
            &[("x", Port(x)), ("filter", Port(w_ok)), ("bias", F(&[8]))], &a => &["'bias' [8]", "16 output channels"];
            &[("x", F(&[3, 32, 32])), ("filter", Port(w_ok))], &a => &["'x' must be 4-D"];
        ],
    );
    let w_fz = t.input_fmt(FLOAT, Format::FRACTAL_Z, &[16, 3, 3, 3]);
    t.rejects(
        "Conv2D",
        &[("x", &[x]), ("filter", &[w_fz])],
        &a,
        &["input filter format should be NCHW, NHWC or HWCN. actual is: FRACTAL_Z"],
    );
    t.rejects_in(
        "Conv2D",
        &[("x", Port(x)), ("filter", F(&[16, 3, 0, 3]))],
        &a,
        &["kernel height 0"],
    );
    // Huge attribute values give an error, not an arithmetic overflow.
    let mut big = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    big.push(("dilations", li(&[1, 1, i64::MAX, 1])));
    t.rejects(
        "Conv2D",
        &[("x", &[x]), ("filter", &[w_ok])],
        &big,
        &["output height would be empty"],
    );
    let huge_pads = conv_attrs("NCHW", &[1, 1, 1, 1], &[i64::MAX, i64::MAX, 0, 0]);
    t.rejects(
        "Conv2D",
        &[("x", &[x]), ("filter", &[w_ok])],
        &huge_pads,
        &["output height", "too large"],
    );
}

#[test]
fn conv2d_transpose_from_input_size_or_attrs() {
    let mut t = T::new();
    let attrs = [
        ("strides", li(&[1, 1, 2, 2])),
        ("pads", li(&[1, 1, 1, 1])),
        ("output_padding", li(&[0, 0, 1, 1])),
        ("data_format", s("NCHW")),
    ];
    let isz = t.ints(&[1, 8, 16, 16]);
    let x = t.nchw(&[1, 16, 8, 8]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 8, 3, 3]);
    assert_eq!(
        t.ok(
            "Conv2DTranspose",
            &[("input_size", &[isz]), ("x", &[x]), ("filter", &[w])],
            &attrs
        ),
        (FLOAT, vec![1, 8, 16, 16])
    );
    // input_size not constant: computed from the attributes
    let isz = t.input(INT32, &[4]);
    let x = t.nchw(&[2, 16, 8, 8]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 8, 3, 3]);
    assert_eq!(
        t.dims(
            "Conv2DTranspose",
            &[("input_size", &[isz]), ("x", &[x]), ("filter", &[w])],
            &attrs
        ),
        vec![2, 8, 16, 16]
    );
    let isz = t.input(INT32, &[4]);
    let x = t.input(INT8, &[U, 7, U, 16]);
    let w = t.input(INT8, &[16, 4, 3, 3]);
    let nhwc = [
        ("strides", li(&[1, 2, 2, 1])),
        ("pads", li(&[0, 0, 0, 0])),
        ("groups", i(2)),
    ];
    assert_eq!(
        t.ok(
            "Conv2DTranspose",
            &[("input_size", &[isz]), ("x", &[x]), ("filter", &[w])],
            &nhwc
        ),
        (INT32, vec![U, 15, U, 8])
    );
    let isz = t.ints(&[1, 8, 16, 16]);
    let x = t.nchw(&[1, 12, 8, 8]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 8, 3, 3]);
    t.rejects(
        "Conv2DTranspose",
        &[("input_size", &[isz]), ("x", &[x]), ("filter", &[w])],
        &attrs,
        &["channel mismatch", "12 channels", "16"],
    );
    let isz = t.ints(&[1, 8, 16]);
    let x = t.nchw(&[1, 16, 8, 8]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 8, 3, 3]);
    t.rejects(
        "Conv2DTranspose",
        &[("input_size", &[isz]), ("x", &[x]), ("filter", &[w])],
        &attrs,
        &["input 'input_size' must hold 4 values"],
    );
}

#[test]
fn depthwise_conv2d_multiplies_channels() {
    let mut t = T::new();
    let attrs = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[1, 1, 1, 1]))];
    let x = t.f(&[1, 8, 8, 3]);
    let w = t.input_fmt(FLOAT, Format::HWCN, &[3, 3, 3, 2]);
    assert_eq!(
        t.ok("DepthwiseConv2D", &[("x", &[x]), ("filter", &[w])], &attrs),
        (FLOAT, vec![1, 8, 8, 6])
    );
    let x = t.nchw(&[1, 3, 9, 9]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[1, 3, 3, 3]);
    let nchw = [
        ("strides", li(&[1, 1, 2, 2])),
        ("pads", li(&[0, 0, 0, 0])),
        ("data_format", s("NCHW")),
    ];
    assert_eq!(
        t.dims("DepthwiseConv2D", &[("x", &[x]), ("filter", &[w])], &nchw),
        vec![1, 3, 4, 4]
    );
    let x = t.f(&[U, U, 8, 3]);
    let w = t.input_fmt(FLOAT, Format::HWCN, &[3, 3, 3, 1]);
    assert_eq!(
        t.dims("DepthwiseConv2D", &[("x", &[x]), ("filter", &[w])], &attrs),
        vec![U, U, 8, 3]
    );
    let x = t.f(&[1, 8, 8, 3]);
    let w = t.input_fmt(FLOAT, Format::HWCN, &[3, 3, 4, 1]);
    t.rejects(
        "DepthwiseConv2D",
        &[("x", &[x]), ("filter", &[w])],
        &attrs,
        &["channel mismatch", "3 channels", "has 4"],
    );
}

#[test]
fn conv3d_shapes() {
    let mut t = T::new();
    let attrs = [
        ("strides", li(&[1, 1, 1, 1, 1])),
        ("pads", li(&[1, 1, 1, 1, 1, 1])),
    ];
    assert_eq!(
        t.ok_in(
            "Conv3D",
            &[("x", F(&[1, 8, 8, 8, 3])), ("filter", F(&[16, 3, 3, 3, 3]))],
            &attrs
        ),
        (FLOAT, vec![1, 8, 8, 8, 16])
    );
    let x = t.f(&[2, 4, 9, 9, 9]);
    let w = t.input_fmt(FLOAT, Format::DHWCN, &[3, 3, 3, 2, 8]);
    let ncdhw = [
        ("strides", li(&[1, 1, 2, 2, 2])),
        ("pads", li(&[0, 0, 0, 0, 0, 0])),
        ("groups", i(2)),
        ("data_format", s("NCDHW")),
    ];
    assert_eq!(
        t.dims("Conv3D", &[("x", &[x]), ("filter", &[w])], &ncdhw),
        vec![2, 8, 4, 4, 4]
    );
    assert_eq!(
        t.dims_in(
            "Conv3D",
            &[("x", F(&[-2])), ("filter", F(&[16, 3, 3, 3, 3]))],
            &attrs
        ),
        vec![U, U, U, U, 16]
    );
    t.rejects_each_in(
        "Conv3D",
        rows![
            &[("x", F(&[1, 8, 8, 8, 4])), ("filter", F(&[16, 3, 3, 3, 3]))], &attrs => &["channel mismatch", "4 input channels"];
            &[("x", F(&[1, 8, 8, 8, 3])), ("filter", F(&[16, 3, 3, 3, 3]))], &[("strides", li(&[1, 1, 1, 1, 1])), ("pads", li(&[1, 1, 1, 1]))] => &["attribute 'pads' must have 6 values"];
        ],
    );
}

#[test]
fn bias_add_checks_channels() {
    let mut t = T::new();
    t.dims_each_in(
        "BiasAdd",
        rows![
            &[("x", F(&[2, 4, 4, 3])), ("bias", F(&[3]))], &[] => &[2, 4, 4, 3];
            &[("x", F(&[2, 3, 4, 4])), ("bias", F(&[3]))], &[("data_format", s("NCHW"))] => &[2, 3, 4, 4];
            &[("x", F(&[-2])), ("bias", F(&[3]))], &[] => &[-2];
        ],
    );
    t.rejects_in(
        "BiasAdd",
        &[("x", F(&[2, 4, 4, 3])), ("bias", F(&[4]))],
        &[],
        &["input 'bias' [4] has 4 values", "3 channels"],
    );
}

/// A DeformableConv2D case: (x dims, offsets dims), attributes, expected.
type DcnCase<'a> = ((&'a [i64], &'a [i64]), Attrs<'a>, &'a [&'a str]);

fn dcn_attrs(fmt: &str) -> Vec<(&'static str, AttrValue)> {
    let ones = li(&[1, 1, 1, 1]);
    attrs(
        ["strides", "pads", "data_format"],
        [ones.clone(), ones, s(fmt)],
    )
}

#[test]
fn deformable_conv2d() {
    let mut t = T::new();
    // NCHW: x [1, 4, 8, 8], filter [6, 4, 3, 3], offsets [1, 27, 8, 8] (modulated).
    let x = t.nchw(&[1, 4, 8, 8]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[1, 27, 8, 8]);
    assert_eq!(
        t.ok_in(
            "DeformableConv2D",
            &[
                ("x", Port(x)),
                ("filter", Port(w)),
                ("offsets", Port(o)),
                ("bias", F(&[6]))
            ],
            &dcn_attrs("NCHW")
        ),
        (FLOAT, vec![1, 6, 8, 8])
    );
    // NHWC, stride 2, not modulated, 2 deformable groups: offsets [1, 4, 4, 2*9*2].
    let x = t.input_fmt(FLOAT, Format::NHWC, &[1, 8, 8, 4]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.input_fmt(FLOAT, Format::NHWC, &[1, 4, 4, 36]);
    assert_eq!(
        t.dims(
            "DeformableConv2D",
            &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
            &[
                ("strides", li(&[1, 2, 2, 1])),
                ("pads", li(&[1, 1, 1, 1])),
                ("deformable_groups", i(2)),
                ("modulated", b(false))
            ]
        ),
        vec![1, 4, 4, 6]
    );
    // Unknown dims: spatial sizes come from offsets when x's are unknown.
    let x = t.nchw(&[U, 4, U, U]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[U, 27, 5, U]);
    assert_eq!(
        t.dims(
            "DeformableConv2D",
            &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
            &dcn_attrs("NCHW")
        ),
        vec![U, 6, 5, U]
    );
    // Errors: channels, offsets channels, offsets spatial size, attribute lengths: (x dims,
    // offsets dims), attributes, parts of the message; the filter is [6, 4, 3, 3].
    let nchw = dcn_attrs("NCHW");
    let mut short = nchw.clone();
    short[0] = ("strides", li(&[1, 1]));
    let cases: &[DcnCase] = rows![
        (&[1, 5, 8, 8], &[1, 27, 8, 8]), &nchw => &["channel mismatch", "5 input channels"];
        (&[1, 4, 8, 8], &[1, 18, 8, 8]), &nchw => &["offsets", "must be 27", "got 18"];
        (&[1, 4, 8, 8], &[1, 27, 7, 8]), &nchw => &["offsets", "spatial size 8 x 8"];
        (&[1, 4, 8, 8], &[1, 27, 8, 8]), &short => &["strides", "4 values"];
    ];
    for &((xd, od), attrs, parts) in cases {
        let (x, w, o) = (t.nchw(xd), t.nchw(&[6, 4, 3, 3]), t.nchw(od));
        let ins = [("x", &[x][..]), ("filter", &[w]), ("offsets", &[o])];
        t.rejects("DeformableConv2D", &ins, attrs, parts);
    }
}
