//! Resizing (`src/infer/sampling.rs`).

use super::*;

#[test]
fn resize_nearest_and_bilinear_v2() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in(
            "ResizeNearestNeighborV2",
            &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 12]))],
            &[]
        ),
        (FLOAT, vec![1, 16, 12, 3])
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    assert_eq!(
        t.dims_in(
            "ResizeNearestNeighborV2",
            &[("x", Port(x)), ("size", I32(&[4, 4]))],
            &[]
        ),
        vec![1, 3, 4, 4]
    );
    t.ok_each_in(
        "ResizeBilinearV2",
        rows![
            &[("x", Typed(UINT8, &[1, 8, 8, 3])), ("size", I32(&[16, 16]))], &[] => (FLOAT, &[1, 16, 16, 3]);
            &[("x", Typed(FLOAT16, &[1, 8, 8, 3])), ("size", I32(&[16, 16]))], &[("dtype", ty(FLOAT16))] => (FLOAT16, &[1, 16, 16, 3]);
        ],
    );
    assert_eq!(
        t.dims_in(
            "ResizeBilinearV2",
            &[("x", F(&[U, 8, 8, 3])), ("size", Typed(INT32, &[2]))],
            &[]
        ),
        vec![U, U, U, 3]
    );
    t.rejects_in(
        "ResizeNearestNeighborV2",
        &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 16, 1]))],
        &[],
        &["input 'size' must hold 2 values"],
    );
    t.rejects_each_in(
        "ResizeBilinearV2",
        rows![
            &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 16]))], &[("align_corners", b(true)), ("half_pixel_centers", b(true))] => &["'align_corners' and 'half_pixel_centers'"];
            &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 16]))], &[("dtype", ty(INT32))] => &["attribute 'dtype' is DT_INT32"];
        ],
    );
}

#[test]
fn resize_by_sizes_or_scales() {
    let mut t = T::new();
    let x = t.nchw(&[1, 3, 8, 8]);
    assert_eq!(
        t.dims_in(
            "Resize",
            &[("x", Port(x)), ("sizes", I64(&[1, 3, 16, 12]))],
            &[]
        ),
        vec![1, 3, 16, 12]
    );
    let x = t.nchw(&[1, 3, 8, U]);
    let sc = t.floats(&[1.0, 1.0, 2.0, 0.5]);
    assert_eq!(
        t.dims(
            "Resize",
            &[("x", &[x]), ("scales", &[sc])],
            &[("mode", s("linear"))]
        ),
        vec![1, 3, 16, U]
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    let sc = t.floats(&[2.0, 3.0]);
    assert_eq!(
        t.dims("Resize", &[("x", &[x]), ("scales", &[sc])], &[]),
        vec![1, 3, 16, 24]
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    let sc = t.floats(&[]);
    assert_eq!(
        t.dims_in(
            "Resize",
            &[
                ("x", Port(x)),
                ("scales", Port(sc)),
                ("sizes", Typed(INT64, &[4]))
            ],
            &[]
        ),
        vec![U, U, U, U]
    );
    let sc = Port(t.floats(&[1.0, 1.0, 2.0, 2.0]));
    let x = Nchw(&[1, 3, 8, 8]);
    t.rejects_each_in(
        "Resize",
        rows![
            &[("x", x), ("scales", sc), ("sizes", I64(&[1, 3, 16, 16]))], &[] => &["'sizes' and 'scales' are both given"];
            &[("x", x), ("sizes", I64(&[1, 3, 16]))], &[] => &["input 'sizes' has 3 values", "one per dim (4)"];
            &[("x", x)], &[("mode", s("area"))] => &["attribute 'mode'", "\"area\""];
        ],
    );
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
    t.dims_each_in(
        "GridSampler2D",
        rows![
            &[("x", F(&[U, 3, U, U])), ("grid", F(&[2, U, 5, 2]))], &[] => &[2, 3, U, 5];
            &[("x", F(&[-2])), ("grid", F(&[-2]))], &[] => &[U, U, U, U];
        ],
    );
    t.rejects_in(
        "GridSampler2D",
        &[("x", F(&[2, 3, 8, 9])), ("grid", F(&[2, 4, 5, 3]))],
        &[],
        &["grid", "must be 2", "got 3"],
    );
    let x = t.f(&[2, 3, 8, 9]);
    t.rejects_in(
        "GridSampler2D",
        &[("x", Port(x)), ("grid", F(&[3, 4, 5, 2]))],
        &[],
        &["'x'", "'grid'"],
    );
    let x = t.f(&[2, 3, 8]);
    t.rejects_in(
        "GridSampler2D",
        &[("x", Port(x)), ("grid", F(&[2, 4, 5, 2]))],
        &[],
        &["'x' must be 4-D"],
    );
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
    t.dims_each_in(
        "GridSampler3D",
        rows![
            &[("x", F(&[2, 6, 7, 8, 3])), ("grid", F(&[2, 4, 5, 6, 3]))], &[("data_format", s("NDHWC"))] => &[2, 4, 5, 6, 3];
            &[("x", F(&[U, 3, U, U, U])), ("grid", F(&[U, 4, U, 6, 3]))], &[] => &[U, 3, 4, U, 6];
        ],
    );
    t.rejects_each_in(
        "GridSampler3D",
        rows![
            &[("x", F(&[2, 3, 6, 7, 8])), ("grid", F(&[2, 4, 5, 6, 2]))], &[] => &["grid", "must be 3", "got 2"];
            &[("x", F(&[2, 3, 6, 7, 8])), ("grid", F(&[2, 4, 5, 6, 3]))], &[("data_format", s("NCHW"))] => &["data_format", "NCHW"];
        ],
    );
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
    t.rejects_in(
        "NonMaxSuppressionV6",
        &[("boxes", F(&[1, 6, 4])), ("scores", F(&[1, 2, 5]))],
        &[],
        &["'boxes'", "'scores'", "(6)", "(5)"],
    );
    let boxes = t.f(&[1, 6, 5]);
    let scores = t.f(&[1, 2, 6]);
    t.rejects(
        "NonMaxSuppressionV6",
        &[("boxes", &[boxes]), ("scores", &[scores])],
        &[],
        &["boxes", "must be 4", "got 5"],
    );
    t.rejects_in(
        "NonMaxSuppressionV6",
        &[("boxes", F(&[1, 6, 4])), ("scores", F(&[1, 2, 6]))],
        &[("center_point_box", i(2))],
        &["center_point_box", "0 or 1", "got 2"],
    );
}

fn roi_attrs(ph: i64, pw: i64) -> Vec<(&'static str, AttrValue)> {
    attrs(
        ["spatial_scale", "pooled_height", "pooled_width"],
        [f(0.25), i(ph), i(pw)],
    )
}

#[test]
fn roi_align() {
    let mut t = T::new();
    let (a76, a77, a23, a07) = (
        roi_attrs(7, 6),
        roi_attrs(7, 7),
        roi_attrs(2, 3),
        roi_attrs(0, 7),
    );
    let x = Nchw(&[2, 16, 32, 32]);
    t.ok_each_in("ROIAlign", rows![
        &[("features", x), ("rois", F(&[10, 5]))], &a76 => (FLOAT, &[10, 16, 7, 6]);
        &[("features", Fmt(FLOAT16, Format::NHWC, &[2, 32, 32, 16])), ("rois", Typed(FLOAT16, &[10, 5]))], &a77 => (FLOAT16, &[10, 7, 7, 16]);
        &[("features", Nchw(&[U, U, U, U])), ("rois", F(&[U, 5]))], &a23 => (FLOAT, &[U, U, 2, 3]);
    ]);
    t.rejects_each_in(
        "ROIAlign",
        rows![
            &[("features", x), ("rois", F(&[10, 4]))], &a77 => &["rois", "must be 5", "got 4"];
            &[("features", x), ("rois", F(&[10, 5]))], &a07 => &["pooled_height", ">= 1", "got 0"];
        ],
    );
    let x = t.nchw(&[2, 16, 32, 32]);
    let r = t.f(&[10, 5]);
    // A required attribute left out is rejected by the builder.
    let partial = attrs(["spatial_scale", "pooled_height"], [f(1.0), i(2)]);
    t.fail("ROIAlign", &[("features", &[x]), ("rois", &[r])], &partial);
}
