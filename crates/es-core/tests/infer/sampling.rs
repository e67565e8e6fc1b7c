//! Resizing (`src/infer/sampling.rs`).

use super::*;

#[test]
fn resize_nearest_and_bilinear_v2() {
    let mut t = T::new();
    let x = t.f(&[1, 8, 8, 3]);
    let sz = t.ints(&[16, 12]);
    assert_eq!(
        t.ok(
            "ResizeNearestNeighborV2",
            &[("x", &[x]), ("size", &[sz])],
            &[]
        ),
        (FLOAT, vec![1, 16, 12, 3])
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    let sz = t.ints(&[4, 4]);
    assert_eq!(
        t.dims(
            "ResizeNearestNeighborV2",
            &[("x", &[x]), ("size", &[sz])],
            &[]
        ),
        vec![1, 3, 4, 4]
    );
    let x = t.input(UINT8, &[1, 8, 8, 3]);
    let sz = t.ints(&[16, 16]);
    assert_eq!(
        t.ok("ResizeBilinearV2", &[("x", &[x]), ("size", &[sz])], &[]),
        (FLOAT, vec![1, 16, 16, 3])
    );
    let x = t.input(FLOAT16, &[1, 8, 8, 3]);
    let sz = t.ints(&[16, 16]);
    assert_eq!(
        t.ok(
            "ResizeBilinearV2",
            &[("x", &[x]), ("size", &[sz])],
            &[("dtype", ty(FLOAT16))]
        ),
        (FLOAT16, vec![1, 16, 16, 3])
    );
    let x = t.f(&[U, 8, 8, 3]);
    let sz = t.input(INT32, &[2]);
    assert_eq!(
        t.dims("ResizeBilinearV2", &[("x", &[x]), ("size", &[sz])], &[]),
        vec![U, U, U, 3]
    );
    let x = t.f(&[1, 8, 8, 3]);
    let sz = t.ints(&[16, 16, 1]);
    t.rejects(
        "ResizeNearestNeighborV2",
        &[("x", &[x]), ("size", &[sz])],
        &[],
        &["input 'size' must hold 2 values"],
    );
    let x = t.f(&[1, 8, 8, 3]);
    let sz = t.ints(&[16, 16]);
    t.rejects(
        "ResizeBilinearV2",
        &[("x", &[x]), ("size", &[sz])],
        &[("align_corners", b(true)), ("half_pixel_centers", b(true))],
        &["'align_corners' and 'half_pixel_centers'"],
    );
    let x = t.f(&[1, 8, 8, 3]);
    let sz = t.ints(&[16, 16]);
    t.rejects(
        "ResizeBilinearV2",
        &[("x", &[x]), ("size", &[sz])],
        &[("dtype", ty(INT32))],
        &["attribute 'dtype' is DT_INT32"],
    );
}

#[test]
fn resize_by_sizes_or_scales() {
    let mut t = T::new();
    let x = t.nchw(&[1, 3, 8, 8]);
    let sz = t.ints64(&[1, 3, 16, 12]);
    assert_eq!(
        t.dims("Resize", &[("x", &[x]), ("sizes", &[sz])], &[]),
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
    let sz = t.input(INT64, &[4]);
    assert_eq!(
        t.dims(
            "Resize",
            &[("x", &[x]), ("scales", &[sc]), ("sizes", &[sz])],
            &[]
        ),
        vec![U, U, U, U]
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    let sc = t.floats(&[1.0, 1.0, 2.0, 2.0]);
    let sz = t.ints64(&[1, 3, 16, 16]);
    t.rejects(
        "Resize",
        &[("x", &[x]), ("scales", &[sc]), ("sizes", &[sz])],
        &[],
        &["'sizes' and 'scales' are both given"],
    );
    let x = t.nchw(&[1, 3, 8, 8]);
    let sz = t.ints64(&[1, 3, 16]);
    t.rejects(
        "Resize",
        &[("x", &[x]), ("sizes", &[sz])],
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
