//! Layout-sensitive operators read N/C/H/W from each input's stated format, as GE's infer
//! functions do (`infer/layout.rs`): x's format wins over `data_format`, an ND x takes
//! `data_format`'s layout, an ND filter takes the layout x states (NCHW when x states none), and
//! y carries x's layout.

use super::*;

type A = [(&'static str, AttrValue)];

/// A float Data input stating `fmt` (FORMAT_ND states none, as a plain Const does).
fn data(t: &mut T, fmt: Format, dims: &[i64]) -> OutPort {
    t.input_fmt(FLOAT, fmt, dims)
}

/// Output 0's dims and format of an op that must succeed.
fn ok(t: &mut T, ty: &str, ins: &[(&str, OutPort)], attrs: &A) -> (Vec<i64>, Format) {
    let id = call(t, ty, ins, attrs).unwrap_or_else(|e| panic!("{ty}: {e}"));
    let d = t.out(id, 0);
    (d.shape.to_vec(), d.format)
}

fn call(
    t: &mut T,
    ty: &str,
    ins: &[(&str, OutPort)],
    attrs: &A,
) -> Result<es_core::NodeId, String> {
    t.call(ty, &ports(ins), attrs).map_err(|e| e.to_string())
}

/// An op that must fail in inference with a message containing each of `parts`.
fn rejects(t: &mut T, ty: &str, ins: &[(&str, OutPort)], attrs: &A, parts: &[&str]) {
    t.rejects(ty, &ports(ins), attrs, parts)
}

/// Each input's port as the one-port list [`T`]'s calls take.
fn ports<'a>(ins: &'a [(&'a str, OutPort)]) -> Vec<(&'a str, &'a [OutPort])> {
    ins.iter()
        .map(|(n, o)| (*n, std::slice::from_ref(o)))
        .collect()
}

fn conv(strides: &[i64]) -> Vec<(&'static str, AttrValue)> {
    vec![("strides", li(strides)), ("pads", li(&[0, 0, 0, 0]))]
}

/// One Conv2D case: x and filter (format, dims), strides, data_format (None: the default).
type Case<'a> = (
    (Format, &'a [i64]),
    (Format, &'a [i64]),
    [i64; 4],
    Option<&'a str>,
);

/// Builds a Conv2D case on fresh inputs: y's dims and format, or the error message.
fn conv2d(
    t: &mut T,
    ((xf, xd), (wf, wd), strides, df): Case,
) -> Result<(Vec<i64>, Format), String> {
    let x = data(t, xf, xd);
    let w = data(t, wf, wd);
    let mut a = conv(&strides);
    if let Some(df) = df {
        a.push(("data_format", s(df)));
    }
    let ins = [("x", x), ("filter", w)];
    match call(t, "Conv2D", &ins, &a) {
        Ok(id) => {
            let d = t.out(id, 0);
            Ok((d.shape.to_vec(), d.format))
        }
        Err(_) => Err(t.err("Conv2D", &ports(&ins), &a)),
    }
}

#[test]
fn conv2d_layouts() {
    use Format::{HWCN, NCHW, ND, NHWC};
    let cases: [(Case, (Vec<i64>, Format)); 7] = [
        // x NHWC by its format; data_format says NCHW: GE takes x's format.
        (
            (
                (NHWC, &[2, 9, 7, 3]),
                (NHWC, &[8, 3, 3, 3]),
                [1, 2, 1, 1],
                Some("NCHW"),
            ),
            (vec![2, 4, 5, 8], NHWC),
        ),
        // x NCHW by its format, data_format left at its default (NHWC); strides in NCHW order.
        (
            (
                (NCHW, &[2, 3, 9, 7]),
                (NCHW, &[8, 3, 3, 3]),
                [1, 1, 2, 1],
                None,
            ),
            (vec![2, 8, 4, 5], NCHW),
        ),
        // An ND x takes data_format's layout.
        (
            (
                (ND, &[1, 3, 9, 9]),
                (NCHW, &[4, 3, 3, 3]),
                [1; 4],
                Some("NCHW"),
            ),
            (vec![1, 4, 7, 7], NCHW),
        ),
        (
            ((ND, &[1, 9, 9, 3]), (HWCN, &[3, 3, 3, 4]), [1; 4], None),
            (vec![1, 7, 7, 4], NHWC),
        ),
        // An ND filter follows the layout x states: [out, kh, kw, in] under NHWC ...
        (
            ((NHWC, &[1, 8, 8, 3]), (ND, &[5, 2, 4, 3]), [1; 4], None),
            (vec![1, 7, 5, 5], NHWC),
        ),
        // ... [out, in, kh, kw] under NCHW, and when x states none.
        (
            ((NCHW, &[1, 3, 8, 8]), (ND, &[5, 3, 2, 4]), [1; 4], None),
            (vec![1, 5, 7, 5], NCHW),
        ),
        (
            ((ND, &[1, 8, 8, 3]), (ND, &[5, 3, 2, 4]), [1; 4], None),
            (vec![1, 7, 5, 5], NHWC),
        ),
    ];
    let mut t = T::new();
    for (case, want) in cases {
        assert_eq!(conv2d(&mut t, case), Ok(want), "{case:?}");
    }
}

#[test]
fn conv2d_layout_errors() {
    use Format::{HWCN, NC1HWC0, NCHW, ND, NHWC};
    let cases: [(Case, &[&str]); 4] = [
        // The same ND filter read under an NHWC x does not fit: 2 channels against 3.
        (
            ((NHWC, &[1, 8, 8, 3]), (ND, &[5, 3, 2, 4]), [1; 4], None),
            &["channel mismatch", "FORMAT_NHWC"],
        ),
        (
            ((HWCN, &[1, 8, 8, 3]), (ND, &[5, 3, 2, 2]), [1; 4], None),
            &[
                "Conv2D",
                "input x format should be NCHW or NHWC. actual is: HWCN",
            ],
        ),
        (
            (
                (NCHW, &[1, 3, 8, 8]),
                (NC1HWC0, &[5, 3, 2, 2]),
                [1; 4],
                None,
            ),
            &["input filter format should be NCHW, NHWC or HWCN. actual is: NC1HWC0"],
        ),
        // An ND x with a data_format that is no layout.
        (
            (
                (ND, &[1, 3, 8, 8]),
                (ND, &[5, 3, 2, 2]),
                [1; 4],
                Some("NCWH"),
            ),
            &["attribute 'data_format'", "NCWH"],
        ),
    ];
    let mut t = T::new();
    for (case, parts) in cases {
        has(&conv2d(&mut t, case).unwrap_err(), parts);
    }
    // A formatted x makes data_format unused, as GE's Conv2D overwrites it.
    let case = (
        (NCHW, &[1, 3, 8, 8][..]),
        (ND, &[5, 3, 2, 2][..]),
        [1; 4],
        Some("NCWH"),
    );
    assert_eq!(conv2d(&mut t, case), Ok((vec![1, 5, 7, 7], NCHW)));
}

#[test]
fn hwcn_filter_and_y_feeding_the_next_conv() {
    let mut t = T::new();
    let x = data(&mut t, Format::NCHW, &[1, 2, 6, 6]);
    let w = data(&mut t, Format::HWCN, &[3, 3, 2, 4]);
    let pads1 = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[1, 1, 1, 1]))];
    let id = call(&mut t, "Conv2D", &[("x", x), ("filter", w)], &pads1).unwrap();
    let y = OutPort { node: id, index: 0 };
    // y is NCHW by its format, so the next Conv2D (data_format at its NHWC default) reads it so.
    let w2 = data(&mut t, Format::ND, &[7, 4, 1, 1]);
    assert_eq!(
        ok(
            &mut t,
            "Conv2D",
            &[("x", y), ("filter", w2)],
            &conv(&[1, 1, 1, 1])
        ),
        (vec![1, 7, 6, 6], Format::NCHW)
    );
}

#[test]
fn poolings_read_x_format() {
    let mut t = T::new();
    // MaxPool's data_format defaults to NHWC; x NCHW by format pools dims 2 and 3.
    let x = data(&mut t, Format::NCHW, &[1, 3, 8, 6]);
    let a = [
        ("ksize", li(&[1, 1, 2, 2])),
        ("strides", li(&[1, 1, 2, 2])),
        ("padding", s("VALID")),
    ];
    assert_eq!(
        ok(&mut t, "MaxPool", &[("x", x)], &a),
        (vec![1, 3, 4, 3], Format::NCHW)
    );
    let x = data(&mut t, Format::NCHW, &[1, 3, 8, 6]);
    assert_eq!(
        ok(&mut t, "AvgPool", &[("x", x)], &a),
        (vec![1, 3, 4, 3], Format::NCHW)
    );
    // AvgPoolV2's defaults to NCHW; x NHWC by format.
    let x = data(&mut t, Format::NHWC, &[1, 8, 6, 3]);
    let a = [("ksize", li(&[1, 2, 2, 1])), ("strides", li(&[1, 2, 2, 1]))];
    assert_eq!(
        ok(&mut t, "AvgPoolV2", &[("x", x)], &a),
        (vec![1, 4, 3, 3], Format::NHWC)
    );
    let x = data(&mut t, Format::NCDHW, &[1, 3, 8, 6]);
    let want = "input x format should be NCHW or NHWC. actual is: NCDHW";
    rejects(&mut t, "MaxPoolV3", &[("x", x)], &a, &[want]);
}

#[test]
fn poolings_refuse_a_window_over_n_or_c_of_x_format() {
    let mut t = T::new();
    // data_format NHWC, x NCHW by format: ksize [1, 2, 3, 1] pools over C (x's dim 1); the
    // build refuses it with the compile's words, not only the kernel.
    for ty in ["AvgPool", "MaxPool"] {
        let x = data(&mut t, Format::NCHW, &[1, 2, 3, 3]);
        let a = [
            ("ksize", li(&[1, 2, 3, 1])),
            ("strides", li(&[1, 1, 2, 1])),
            ("padding", s("VALID")),
            ("data_format", s("NHWC")),
        ];
        let want = format!("{ty} with ksize over N or C (N, C entries [1, 2])");
        rejects(&mut t, ty, &[("x", x)], &a, &["not supported", &want]);
    }
    // strides over N of AvgPoolV2 (NCHW).
    let x = data(&mut t, Format::NCHW, &[2, 2, 3, 3]);
    let a = [("ksize", li(&[1, 1, 2, 2])), ("strides", li(&[2, 1, 1, 1]))];
    let want = "AvgPoolV2 with strides over N or C (N, C entries [2, 1])";
    rejects(&mut t, "AvgPoolV2", &[("x", x)], &a, &[want]);
}

#[test]
fn other_convolutions_read_x_format() {
    let mut t = T::new();
    // DepthwiseConv2D (data_format default NHWC), x NCHW, ND filter [K, C, kh, kw].
    let x = data(&mut t, Format::NCHW, &[1, 3, 8, 8]);
    let w = data(&mut t, Format::ND, &[2, 3, 3, 3]);
    let a = conv(&[1, 1, 1, 1]);
    assert_eq!(
        ok(&mut t, "DepthwiseConv2D", &[("x", x), ("filter", w)], &a),
        (vec![1, 6, 6, 6], Format::NCHW)
    );
    // Conv2DTranspose, x NCHW, input_size computed from the attributes.
    let isz = t.input(DataType::INT32, &[4]);
    let x = data(&mut t, Format::NCHW, &[1, 4, 5, 5]);
    let w = data(&mut t, Format::ND, &[4, 2, 3, 3]);
    assert_eq!(
        ok(
            &mut t,
            "Conv2DTranspose",
            &[("input_size", isz), ("x", x), ("filter", w)],
            &a
        ),
        (vec![1, 2, 7, 7], Format::NCHW)
    );
    // Conv3D (data_format default NDHWC), x NCDHW, DHWCN filter, then an ND filter.
    let x = data(&mut t, Format::NCDHW, &[1, 2, 5, 6, 7]);
    let w = data(&mut t, Format::DHWCN, &[2, 3, 3, 2, 4]);
    let a3 = [
        ("strides", li(&[1, 1, 1, 1, 1])),
        ("pads", li(&[0, 0, 0, 0, 0, 0])),
    ];
    assert_eq!(
        ok(&mut t, "Conv3D", &[("x", x), ("filter", w)], &a3),
        (vec![1, 4, 4, 4, 5], Format::NCDHW)
    );
    let x = data(&mut t, Format::NDHWC, &[1, 5, 6, 7, 2]);
    let w = data(&mut t, Format::ND, &[4, 2, 3, 3, 2]);
    assert_eq!(
        ok(&mut t, "Conv3D", &[("x", x), ("filter", w)], &a3),
        (vec![1, 4, 4, 5, 4], Format::NDHWC)
    );
    let x = data(&mut t, Format::NCHW, &[1, 2, 5, 6, 7]);
    let w = data(&mut t, Format::ND, &[4, 2, 3, 3, 2]);
    let want = "input x format should be NCDHW or NDHWC. actual is: NCHW";
    rejects(&mut t, "Conv3D", &[("x", x), ("filter", w)], &a3, &[want]);
}

// ---------------------------------------------------------------------------------------------
// Format propagation through layout-agnostic operators (GE's forward format inference)
// ---------------------------------------------------------------------------------------------

#[test]
fn relu_carries_nchw_to_a_conv_with_the_default_data_format() {
    let mut t = T::new();
    let x = data(&mut t, Format::NCHW, &[1, 3, 8, 8]);
    let r = ok(&mut t, "Relu", &[("x", x)], &[]);
    assert_eq!(r, (vec![1, 3, 8, 8], Format::NCHW));
    let relu = call(&mut t, "Relu", &[("x", x)], &[]).unwrap();
    let w = data(&mut t, Format::ND, &[4, 3, 3, 3]);
    // data_format left at NHWC: the carried NCHW wins, as GE's inference gives it.
    let y = ok(
        &mut t,
        "Conv2D",
        &[
            (
                "x",
                OutPort {
                    node: relu,
                    index: 0,
                },
            ),
            ("filter", w),
        ],
        &conv(&[1, 1, 1, 1]),
    );
    assert_eq!(y, (vec![1, 4, 6, 6], Format::NCHW));
}

#[test]
fn binary_ops_carry_the_format_their_inputs_agree_on() {
    use Format::{NCHW, ND, NHWC};
    let mut t = T::new();
    let a = data(&mut t, NCHW, &[1, 3, 4, 4]);
    let b = data(&mut t, ND, &[1, 3, 1, 1]);
    let c = data(&mut t, NHWC, &[1, 3, 4, 4]);
    let row = data(&mut t, ND, &[4]);
    let scalar = data(&mut t, ND, &[]);
    let f =
        |t: &mut T, ty: &str, x1: OutPort, x2: OutPort| ok(t, ty, &[("x1", x1), ("x2", x2)], &[]).1;
    // An ND operand of the same rank and a scalar state nothing.
    assert_eq!(f(&mut t, "Add", a, b), NCHW);
    assert_eq!(f(&mut t, "Mul", scalar, a), NCHW);
    assert_eq!(f(&mut t, "Maximum", b, b), ND);
    // Disagreeing formats and a broadcast operand of another rank stop the propagation.
    assert_eq!(f(&mut t, "Sub", a, c), ND);
    assert_eq!(f(&mut t, "Add", a, row), ND);
    // Cast carries it; a dim-moving op does not.
    let cast = ok(&mut t, "Cast", &[("x", c)], &[("dst_type", i(1))]);
    assert_eq!(cast.1, NHWC);
    let perm = t.ints(&[0, 2, 3, 1]);
    let tr = ok(&mut t, "Transpose", &[("x", a), ("perm", perm)], &[]);
    assert_eq!(tr.1, ND);
}

#[test]
fn internal_formats_are_not_carried() {
    let mut t = T::new();
    let x = data(&mut t, Format::NC1HWC0, &[1, 1, 4, 4, 16]);
    assert_eq!(ok(&mut t, "Relu", &[("x", x)], &[]).1, Format::ND);
    let x = data(&mut t, Format::HWCN, &[3, 3, 2, 4]);
    let y = ok(&mut t, "Neg", &[("x", x)], &[]);
    assert_eq!(y, (vec![3, 3, 2, 4], Format::HWCN));
}
