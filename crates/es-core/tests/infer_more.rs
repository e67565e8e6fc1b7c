//! Tests of the inference rules of the operators added for the ONNX importer's `missing`
//! family (`infer/rules_more.rs`), through the builder over the built-in library: for each
//! operator a known-shape case, an unknown-dim/rank case and a wrong-input case.

mod common;

use common::*;
use es_core::attr::AttrValue;
use es_core::{DataType, Format};

use DataType::{DOUBLE, FLOAT, FLOAT16, INT32, INT64, INT8, UINT8};

const MORE_OPS: &[&str] = &[
    "GridSampler2D",
    "GridSampler3D",
    "NonMaxSuppressionV6",
    "Bitcast",
    "LeftShift",
    "RightShift",
    "ROIAlign",
    "UniqueWithCountsAndSorting",
    "DeformableConv2D",
    "MatrixDeterminant",
];

#[test]
fn every_added_operator_is_built_in_and_round_trips() {
    assert_built_in_and_round_trip(MORE_OPS, true);
}

#[test]
fn grid_sampler_2d() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in(
            "GridSampler2D",
            &[("x", F(&[2, 3, 8, 9])), ("grid", F(&[2, 4, 5, 2]))],
            &[]
        ),
        (FLOAT, vec![2, 3, 4, 5])
    );
    assert_eq!(
        t.dims_in(
            "GridSampler2D",
            &[("x", F(&[U, 3, U, U])), ("grid", F(&[2, U, 5, 2]))],
            &[]
        ),
        vec![2, 3, U, 5]
    );
    assert_eq!(
        t.dims_in("GridSampler2D", &[("x", F(&[-2])), ("grid", F(&[-2]))], &[]),
        vec![U, U, U, U]
    );
    let m = t.err_in(
        "GridSampler2D",
        &[("x", F(&[2, 3, 8, 9])), ("grid", F(&[2, 4, 5, 3]))],
        &[],
    );
    has(&m, &["grid", "must be 2", "got 3"]);
    let x = t.f(&[2, 3, 8, 9]);
    let m = t.err_in(
        "GridSampler2D",
        &[("x", Port(x)), ("grid", F(&[3, 4, 5, 2]))],
        &[],
    );
    has(&m, &["'x'", "'grid'"]);
    let x = t.f(&[2, 3, 8]);
    let m = t.err_in(
        "GridSampler2D",
        &[("x", Port(x)), ("grid", F(&[2, 4, 5, 2]))],
        &[],
    );
    has(&m, &["'x' must be 4-D"]);
}

#[test]
fn grid_sampler_3d() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in(
            "GridSampler3D",
            &[("x", F(&[2, 3, 6, 7, 8])), ("grid", F(&[2, 4, 5, 6, 3]))],
            &[]
        ),
        (FLOAT, vec![2, 3, 4, 5, 6])
    );
    assert_eq!(
        t.dims_in(
            "GridSampler3D",
            &[("x", F(&[2, 6, 7, 8, 3])), ("grid", F(&[2, 4, 5, 6, 3]))],
            &[("data_format", s("NDHWC"))]
        ),
        vec![2, 4, 5, 6, 3]
    );
    assert_eq!(
        t.dims_in(
            "GridSampler3D",
            &[("x", F(&[U, 3, U, U, U])), ("grid", F(&[U, 4, U, 6, 3]))],
            &[]
        ),
        vec![U, 3, 4, U, 6]
    );
    let m = t.err_in(
        "GridSampler3D",
        &[("x", F(&[2, 3, 6, 7, 8])), ("grid", F(&[2, 4, 5, 6, 2]))],
        &[],
    );
    has(&m, &["grid", "must be 3", "got 2"]);
    let m = t.err_in(
        "GridSampler3D",
        &[("x", F(&[2, 3, 6, 7, 8])), ("grid", F(&[2, 4, 5, 6, 3]))],
        &[("data_format", s("NCHW"))],
    );
    has(&m, &["data_format", "NCHW"]);
}

#[test]
fn non_max_suppression_v6() {
    let mut t = T::new();
    let boxes = t.f(&[1, 6, 4]);
    let scores = t.f(&[1, 2, 6]);
    let mx = t.scalar_i32(3);
    assert_eq!(
        t.ok(
            "NonMaxSuppressionV6",
            &[
                ("boxes", &[boxes]),
                ("scores", &[scores]),
                ("max_output_size", &[mx])
            ],
            &[]
        ),
        (INT32, vec![U, 3])
    );
    assert_eq!(
        t.ok_in(
            "NonMaxSuppressionV6",
            &[("boxes", F(&[U, U, 4])), ("scores", F(&[-2]))],
            &[]
        ),
        (INT32, vec![U, 3])
    );
    let boxes = t.f(&[1, 6, 4]);
    let scores = t.f(&[1, 2, 5]);
    let m = t.err(
        "NonMaxSuppressionV6",
        &[("boxes", &[boxes]), ("scores", &[scores])],
        &[],
    );
    has(&m, &["'boxes'", "'scores'", "(6)", "(5)"]);
    let boxes = t.f(&[1, 6, 5]);
    let scores = t.f(&[1, 2, 6]);
    let m = t.err(
        "NonMaxSuppressionV6",
        &[("boxes", &[boxes]), ("scores", &[scores])],
        &[],
    );
    has(&m, &["boxes", "must be 4", "got 5"]);
    let m = t.err_in(
        "NonMaxSuppressionV6",
        &[("boxes", F(&[1, 6, 4])), ("scores", F(&[1, 2, 6]))],
        &[("center_point_box", i(2))],
    );
    has(&m, &["center_point_box", "0 or 1", "got 2"]);
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
    let m = t.err_in(
        "Bitcast",
        &[("x", Typed(INT8, &[5, 3]))],
        &[("type", ty(INT32))],
    );
    has(&m, &["last dim must be 4", "got 3"]);
    let x = t.input(INT8, &[5, 3]);
    let m = t.err(
        "Bitcast",
        &[("x", &[x])],
        &[("type", ty(INT32)), ("keep_dim", b(true))],
    );
    has(&m, &["not a multiple"]);
    let m = t.err_in(
        "Bitcast",
        &[("x", F(&[2]))],
        &[("type", ty(DataType::BF16))],
    );
    has(&m, &["'type'", "does not allow"]);
}

#[test]
fn shifts() {
    for op in ["LeftShift", "RightShift"] {
        let mut t = T::new();
        assert_eq!(
            t.ok_in(
                op,
                &[
                    ("x", Typed(INT32, &[2, 1, 4])),
                    ("y", Typed(INT32, &[3, 1]))
                ],
                &[]
            ),
            (INT32, vec![2, 3, 4])
        );
        assert_eq!(
            t.ok_in(
                op,
                &[("x", Typed(UINT8, &[U, 4])), ("y", Typed(UINT8, &[]))],
                &[]
            ),
            (UINT8, vec![U, 4])
        );
        assert_eq!(
            t.dims_in(
                op,
                &[("x", Typed(INT64, &[-2])), ("y", Typed(INT64, &[3]))],
                &[]
            ),
            vec![-2]
        );
        let m = t.err_in(
            op,
            &[("x", Typed(INT32, &[2, 4])), ("y", Typed(INT32, &[3]))],
            &[],
        );
        has(&m, &["cannot be broadcast"]);
    }
    // Float inputs are rejected by the prototype.
    let mut t = T::new();
    let x = t.f(&[2]);
    let y = t.f(&[2]);
    assert!(t
        .call("LeftShift", &[("x", &[x]), ("y", &[y])], &[])
        .is_err());
}

fn roi_attrs(ph: i64, pw: i64) -> Vec<(&'static str, AttrValue)> {
    vec![
        ("spatial_scale", AttrValue::Float(0.25)),
        ("pooled_height", i(ph)),
        ("pooled_width", i(pw)),
    ]
}

#[test]
fn roi_align() {
    let mut t = T::new();
    let f = t.nchw(&[2, 16, 32, 32]);
    assert_eq!(
        t.ok_in(
            "ROIAlign",
            &[("features", Port(f)), ("rois", F(&[10, 5]))],
            &roi_attrs(7, 6)
        ),
        (FLOAT, vec![10, 16, 7, 6])
    );
    let f = t.input_fmt(FLOAT16, Format::NHWC, &[2, 32, 32, 16]);
    assert_eq!(
        t.ok_in(
            "ROIAlign",
            &[("features", Port(f)), ("rois", Typed(FLOAT16, &[10, 5]))],
            &roi_attrs(7, 7)
        ),
        (FLOAT16, vec![10, 7, 7, 16])
    );
    let f = t.nchw(&[U, U, U, U]);
    assert_eq!(
        t.dims_in(
            "ROIAlign",
            &[("features", Port(f)), ("rois", F(&[U, 5]))],
            &roi_attrs(2, 3)
        ),
        vec![U, U, 2, 3]
    );
    let f = t.nchw(&[2, 16, 32, 32]);
    let m = t.err_in(
        "ROIAlign",
        &[("features", Port(f)), ("rois", F(&[10, 4]))],
        &roi_attrs(7, 7),
    );
    has(&m, &["rois", "must be 5", "got 4"]);
    let f = t.nchw(&[2, 16, 32, 32]);
    let m = t.err_in(
        "ROIAlign",
        &[("features", Port(f)), ("rois", F(&[10, 5]))],
        &roi_attrs(0, 7),
    );
    has(&m, &["pooled_height", ">= 1", "got 0"]);
    let f = t.nchw(&[2, 16, 32, 32]);
    let r = t.f(&[10, 5]);
    // A required attribute left out is rejected by the builder.
    assert!(t
        .call(
            "ROIAlign",
            &[("features", &[f]), ("rois", &[r])],
            &[
                ("spatial_scale", AttrValue::Float(1.0)),
                ("pooled_height", i(2))
            ],
        )
        .is_err());
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
    let m = t.err_in(
        "UniqueWithCountsAndSorting",
        &[("x", F(&[3]))],
        &[("out_idx", ty(FLOAT))],
    );
    has(&m, &["out_idx", "DT_INT32 or DT_INT64"]);
}

fn dcn_attrs(fmt: &str) -> Vec<(&'static str, AttrValue)> {
    vec![
        ("strides", li(&[1, 1, 1, 1])),
        ("pads", li(&[1, 1, 1, 1])),
        ("data_format", s(fmt)),
    ]
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
    // Errors: channels, offsets channels, offsets spatial size, attribute lengths.
    let x = t.nchw(&[1, 5, 8, 8]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[1, 27, 8, 8]);
    let m = t.err(
        "DeformableConv2D",
        &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
        &dcn_attrs("NCHW"),
    );
    has(&m, &["channel mismatch", "5 input channels"]);
    let x = t.nchw(&[1, 4, 8, 8]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[1, 18, 8, 8]);
    let m = t.err(
        "DeformableConv2D",
        &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
        &dcn_attrs("NCHW"),
    );
    has(&m, &["offsets", "must be 27", "got 18"]);
    let x = t.nchw(&[1, 4, 8, 8]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[1, 27, 7, 8]);
    let m = t.err(
        "DeformableConv2D",
        &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
        &dcn_attrs("NCHW"),
    );
    has(&m, &["offsets", "spatial size 8 x 8"]);
    let x = t.nchw(&[1, 4, 8, 8]);
    let w = t.nchw(&[6, 4, 3, 3]);
    let o = t.nchw(&[1, 27, 8, 8]);
    let m = t.err(
        "DeformableConv2D",
        &[("x", &[x]), ("filter", &[w]), ("offsets", &[o])],
        &[
            ("strides", li(&[1, 1])),
            ("pads", li(&[1, 1, 1, 1])),
            ("data_format", s("NCHW")),
        ],
    );
    has(&m, &["strides", "4 values"]);
}

#[test]
fn matrix_determinant() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in("MatrixDeterminant", &[("x", F(&[2, 5, 3, 3]))], &[]),
        (FLOAT, vec![2, 5])
    );
    let x = t.input(DOUBLE, &[4, 4]);
    assert_eq!(
        t.ok("MatrixDeterminant", &[("x", &[x])], &[]),
        (DOUBLE, vec![])
    );
    assert_eq!(
        t.dims_in("MatrixDeterminant", &[("x", F(&[U, 3, U]))], &[]),
        vec![U]
    );
    assert_eq!(
        t.dims_in("MatrixDeterminant", &[("x", F(&[-2]))], &[]),
        vec![-2]
    );
    let x = t.f(&[2, 3, 4]);
    let m = t.err("MatrixDeterminant", &[("x", &[x])], &[]);
    has(&m, &["square", "3 x 4"]);
    let m = t.err_in("MatrixDeterminant", &[("x", F(&[3]))], &[]);
    has(&m, &["rank >= 2"]);
    let x = t.input(INT32, &[3, 3]);
    assert!(t.call("MatrixDeterminant", &[("x", &[x])], &[]).is_err());
}

#[test]
fn random_uniform_shape_and_dtype() {
    use es_core::{AttrValue, DataType, GraphBuilder, OutPort, Shape, Tensor};
    let mut b = GraphBuilder::new("g");
    let args = |shape: OutPort, dtype: DataType| es_core::builder::OpArgs {
        inputs: vec![vec![Some(shape)]],
        attrs: [("dtype".to_string(), AttrValue::Type(dtype))]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    // Constant shape: resolved.
    let s = b
        .create_const(Tensor::from_values(&[2i64, 3], vec![2]).unwrap(), None)
        .unwrap();
    let y = b
        .add_op("RandomUniform", args(s, DataType::FLOAT16))
        .unwrap();
    let d = b.graph().out_desc(OutPort { node: y, index: 0 }).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (DataType::FLOAT16, vec![2, 3]));
    // Unknown values, known length: rank known, dims unknown.
    let s = b
        .create_input(
            0,
            None,
            "Data",
            DataType::INT32,
            es_core::Format::ND,
            Shape::new(vec![4]),
        )
        .unwrap();
    let y = b.add_op("RandomUniform", args(s, DataType::FLOAT)).unwrap();
    assert_eq!(
        b.graph()
            .out_desc(OutPort { node: y, index: 0 })
            .unwrap()
            .shape
            .to_vec(),
        vec![-1; 4]
    );
    // Wrong: a dtype the output does not allow, a negative dim, a 2-D shape input.
    assert!(b.add_op("RandomUniform", args(s, DataType::INT32)).is_err());
    let neg = b
        .create_const(Tensor::from_values(&[2i64, -3], vec![2]).unwrap(), None)
        .unwrap();
    assert!(b
        .add_op("RandomUniform", args(neg, DataType::FLOAT))
        .is_err());
    let m = b
        .create_input(
            1,
            None,
            "Data",
            DataType::INT32,
            es_core::Format::ND,
            Shape::new(vec![2, 2]),
        )
        .unwrap();
    assert!(b.add_op("RandomUniform", args(m, DataType::FLOAT)).is_err());
}
