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
    assert_eq!(
        t.ok_in(
            "ResizeBilinearV2",
            &[("x", Typed(UINT8, &[1, 8, 8, 3])), ("size", I32(&[16, 16]))],
            &[]
        ),
        (FLOAT, vec![1, 16, 16, 3])
    );
    assert_eq!(
        t.ok_in(
            "ResizeBilinearV2",
            &[
                ("x", Typed(FLOAT16, &[1, 8, 8, 3])),
                ("size", I32(&[16, 16]))
            ],
            &[("dtype", ty(FLOAT16))]
        ),
        (FLOAT16, vec![1, 16, 16, 3])
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
        &[
            (
                &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 16]))],
                &[("align_corners", b(true)), ("half_pixel_centers", b(true))],
                &["'align_corners' and 'half_pixel_centers'"],
            ),
            (
                &[("x", F(&[1, 8, 8, 3])), ("size", I32(&[16, 16]))],
                &[("dtype", ty(INT32))],
                &["attribute 'dtype' is DT_INT32"],
            ),
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
    let x = t.nchw(&[1, 3, 8, 8]);
    let sc = t.floats(&[1.0, 1.0, 2.0, 2.0]);
    t.rejects_in(
        "Resize",
        &[
            ("x", Port(x)),
            ("scales", Port(sc)),
            ("sizes", I64(&[1, 3, 16, 16])),
        ],
        &[],
        &["'sizes' and 'scales' are both given"],
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    t.rejects_in(
        "Resize",
        &[("x", Port(x)), ("sizes", I64(&[1, 3, 16]))],
        &[],
        &["input 'sizes' has 3 values", "one per dim (4)"],
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    t.rejects(
        "Resize",
        &[("x", &[x])],
        &[("mode", s("area"))],
        &["attribute 'mode'", "\"area\""],
    );
}
