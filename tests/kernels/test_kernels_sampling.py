"""CPU kernels of ge-runtime for resampling and detection ops (crates/ge-runtime/src/kernels/
sampling.rs): ResizeNearestNeighborV2, ResizeBilinearV2, Resize, GridSampler2D/3D, ROIAlign and
NonMaxSuppressionV6, against numpy references written here from each framework's formulas (naive
loops over output positions).

Every case runs through ``ge.session.Session`` in graph mode and in eager mode (``ge.graphMode``
off); the two must agree byte for byte, and both must match the reference, over every dtype the
prototype allows (bf16 fed and fetched as its uint16 bits, compared as float32 values).

Frameworks followed: TensorFlow's CPU kernels (ResizeNearestNeighborV2, ResizeBilinearV2: f32
scale and lerps), ONNX Resize (opsets 11-13, the reference implementation's separable passes,
innermost axis first; source coordinates in f32 and dims of scale 1 left unchanged except with
tf_crop_and_resize, as onnxruntime does), PyTorch's grid_sample, CANN's ROIAlign (its golden:
roi_end_mode 0/1/2/3, Caffe2/mmcv bilinear sampling), ONNX NonMaxSuppression as onnxruntime
computes it (f32).

Tolerance policy:

- Exact (bit for bit) where the reference replays the kernel's arithmetic: nearest resizing
  (element copies), ResizeBilinearV2 (TensorFlow's f32 arithmetic in np.float32, then rounded
  once to the output dtype), Resize linear/cubic on f64 and integer inputs (the same f64
  separable passes in the same order; integers rounded half away from zero), NMS indices.
- Resize linear/cubic on f32: rtol = atol = 1e-5 (f32 passes against the f64 reference); f16:
  2e-3 (f32 passes, one f16 rounding of the output).
- GridSampler2D/3D: f64 1e-10, f32 2e-5, f16 2e-3 (coordinates and weights in the kernel's
  precision against a f64 reference).
- ROIAlign: f32 2e-5, f16 4e-3 (f32 arithmetic; f16 output rounded once).
"""

from __future__ import annotations

import itertools
import math

import ge
import numpy as np
import pytest
from ge.es import all as ops
from ge.graph import Format
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_harness import GE_DT, NP, bf16_round, ints, run1
from kernel_harness import fails as harness_fails

SETTINGS = {"deadline": None, "derandomize": True, "database": None}

# The integer dtypes the resampling prototypes allow.
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16")

# ---------------------------------------------------------------------------------------------
# Running one-op graphs (the shared harness: graph and eager mode agree byte for byte)
# ---------------------------------------------------------------------------------------------


def run(fn, *inputs, formats=None):
    """Builds ``fn(builder, *inputs)`` (each input an array or an ``(array, dtype name)`` pair),
    runs it in graph and eager mode; returns ``(dtype, array)`` of the one output."""
    return run1(fn, *inputs, formats=formats)


def fails(fn, *inputs, match, formats=None, shapes=None):
    """Both modes raise a ge.GeError matching ``match`` (``shapes``: declared input shapes, e.g.
    with -1, where they differ from the fed arrays')."""
    dims = [shapes.get(i) for i in range(len(inputs))] if shapes else None
    harness_fails(fn, *inputs, exc=ge.GeError, match=match, formats=formats, dims=dims)


def close(got, want, rtol, atol=None):
    np.testing.assert_allclose(
        got.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=rtol if atol is None else atol
    )


def values(rng, shape, d, lo=-1.0, hi=1.0):
    """Random values of dtype ``d`` (bf16: float32 values exactly representable in bf16)."""
    if d in INTS:
        info = np.iinfo(d)
        return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(d)
    a = rng.uniform(lo, hi, size=shape)
    return bf16_round(a) if d == "bfloat16" else a.astype(NP[d])


def to_nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def to_nchw(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


# ---------------------------------------------------------------------------------------------
# ResizeNearestNeighborV2 / ResizeBilinearV2 (TensorFlow)
# ---------------------------------------------------------------------------------------------


def tf_scale(i, o, align):
    if align and o > 1:
        return np.float32(i - 1) / np.float32(o - 1)
    return np.float32(i) / np.float32(o)


def tf_nearest_index(i, o, align, half):
    s = tf_scale(i, o, align)
    out = []
    for k in range(o):
        v = float((np.float32(k) + np.float32(0.5)) * s if half else np.float32(k) * s)
        j = math.floor(v + 0.5) if align else math.floor(v)  # roundf: half away from zero (v >= 0)
        j = min(j, i - 1)
        out.append(max(j, 0) if half else j)
    return out


def tf_linear_index(i, o, align, half):
    s = tf_scale(i, o, align)
    out = []
    for k in range(o):
        v = (np.float32(k) + np.float32(0.5)) * s - np.float32(0.5) if half else np.float32(k) * s
        f = np.floor(v)
        out.append((max(int(f), 0), min(int(np.ceil(v)), i - 1), np.float32(v - f)))
    return out


def tf_nearest_ref(x, oh, ow, align, half):
    """NHWC x."""
    n, h, w, c = x.shape
    out = np.empty((n, oh, ow, c), x.dtype)
    for a, y in enumerate(tf_nearest_index(h, oh, align, half)):
        for b, xx in enumerate(tf_nearest_index(w, ow, align, half)):
            out[:, a, b, :] = x[:, y, xx, :]
    return out


def tf_bilinear_ref(x, oh, ow, align, half):
    """NHWC x, TensorFlow's f32 arithmetic."""
    x = x.astype(np.float32)
    n, h, w, c = x.shape
    out = np.empty((n, oh, ow, c), np.float32)
    for a, (y0, y1, yl) in enumerate(tf_linear_index(h, oh, align, half)):
        for b, (x0, x1, xl) in enumerate(tf_linear_index(w, ow, align, half)):
            tl, tr, bl, br = x[:, y0, x0], x[:, y0, x1], x[:, y1, x0], x[:, y1, x1]
            top = tl + (tr - tl) * xl
            bottom = bl + (br - bl) * xl
            out[:, a, b, :] = top + (bottom - top) * yl
    return out


def to_out(v, d):
    """float32 results rounded once to the output dtype (uint8: truncated, saturated)."""
    if d == "bfloat16":
        return bf16_round(v)
    if d == "uint8":
        return np.clip(np.trunc(np.nan_to_num(v)), 0, 255).astype(np.uint8)
    return v.astype(NP[d])


def image_args(side, out_side):
    """``@given`` strategies of an image batch: n, c, its (h, w) sides up to ``side`` and an output
    size up to ``out_side``."""
    return {"n": st.integers(1, 2), "c": st.integers(1, 3), "hw": ints(1, side, 2), "out": ints(1, out_side, 2)}


ALL_RESIZE = ("float64", "float32", "float16", "bfloat16") + INTS


@settings(max_examples=100, **SETTINGS)
@given(
    **image_args(6, 8),
    corners=st.sampled_from([(False, False), (True, False), (False, True)]),
    nchw=st.booleans(),
    d=st.sampled_from(ALL_RESIZE),
    od=st.sampled_from(["float32", "float16", "bfloat16", "uint8"]),
    seed=st.integers(0, 2**16),
)
def test_tensorflow_resize_matches_reference(n, c, hw, out, corners, nchw, d, od, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, (n, *hw, c), d, 0.0, 50.0)
    align, half = corners
    xin = to_nchw(x) if nchw else x
    fmt = {0: Format.FORMAT_NCHW} if nchw else None
    back = to_nhwc if nchw else (lambda a: a)
    kw = {"align_corners": align, "half_pixel_centers": half}
    size = np.array(out, np.int32)
    dt, y = run(
        lambda b, xh: ops.ResizeNearestNeighborV2(xh, b.create_const(size), **kw), (xin, d), formats=fmt
    )
    assert dt == d
    assert back(y).tobytes() == tf_nearest_ref(x, *out, align, half).astype(NP[d]).tobytes()
    # size as a run-time input: the same, the output shape from its value.
    dt, y = run(
        lambda b, xh, sh: ops.ResizeBilinearV2(xh, sh, dtype=GE_DT[od], **kw),
        (xin, d),
        (size, "int32"),
        formats=fmt,
    )
    assert dt == od
    want = to_out(tf_bilinear_ref(x, *out, align, half), od)
    np.testing.assert_array_equal(back(y), want)


def test_tensorflow_resize_common_upscale_and_dtype_default():
    rng = np.random.default_rng(1)
    x = values(rng, (1, 5, 7, 3), "float32")
    size = np.array([10, 14], np.int32)
    dt, y = run(lambda b, xh: ops.ResizeBilinearV2(xh, b.create_const(size)), x)
    assert dt == "float32" and y.shape == (1, 10, 14, 3)
    np.testing.assert_array_equal(y, tf_bilinear_ref(x, 10, 14, False, False))


def test_tensorflow_resize_errors():
    x = np.zeros((1, 2, 2, 1), np.float32)
    fails(
        lambda b, xh: ops.ResizeNearestNeighborV2(
            xh, b.create_const(np.array([2, 2], np.int32)), scales=[2.0, 2.0]
        ),
        x,
        match="; not supported: ResizeNearestNeighborV2 with non-zero scales",
    )
    fails(
        lambda b, xh, sh: ops.ResizeBilinearV2(xh, sh),
        x,
        np.array([0, 3], np.int32),
        match="size must hold 2 positive",
    )
    fails(
        lambda b, xh, sh: ops.ResizeNearestNeighborV2(xh, sh),
        np.zeros((1, 0, 2, 1), np.float32),
        np.array([2, 3], np.int32),
        match="non-empty height and width",
    )


# ---------------------------------------------------------------------------------------------
# Resize (ONNX)
# ---------------------------------------------------------------------------------------------


def onnx_coord(mode, o, scale, inp, out, roi):
    """The source coordinate, in float32 as onnxruntime computes it."""
    f = np.float32
    x, s, i1, o1 = f(o), f(scale), f(inp) - f(1), f(out) - f(1)
    if mode == "half_pixel":
        v = (x + f(0.5)) / s - f(0.5)
    elif mode == "pytorch_half_pixel":
        v = (x + f(0.5)) / s - f(0.5) if out > 1 else f(0)
    elif mode == "align_corners":
        v = f(0) if out == 1 else x * i1 / o1
    elif mode == "asymmetric":
        v = x / s
    elif mode == "tf_half_pixel_for_nn":
        v = (x + f(0.5)) / s
    else:  # tf_crop_and_resize
        start, end = f(roi[0]), f(roi[1])
        v = start * i1 + (x * (end - start) * i1) / o1 if out > 1 else f(0.5 * float(start + end) * float(i1))
    return float(v)


def onnx_nearest(x, mode):
    f = math.floor(x)
    r = x - f
    if mode == "round_prefer_floor":
        return f if r <= 0.5 else f + 1
    if mode == "round_prefer_ceil":
        return f if r < 0.5 else f + 1
    return f if mode == "floor" else math.ceil(x)


def onnx_cubic(t, a):
    far = lambda r: ((a * r - 5 * a) * r + 8 * a) * r - 4 * a
    near = lambda r: ((a + 2) * r - (a + 3)) * r * r + 1
    return [far(t + 1), near(t), near(1 - t), far((1 - t) + 1)]


def onnx_taps(inp, out, scale, roi, kind, coord, nmode, a, exclude):
    """Per output position: [(source index, weight)] and whether it lies outside."""
    clamp = lambda i: min(max(i, 0), inp - 1)
    res = []
    for o in range(out):
        x = onnx_coord(coord, o, scale, inp, out, roi)
        outside = coord == "tf_crop_and_resize" and not (0 <= x <= inp - 1)
        f = math.floor(x)
        if kind == "nearest":
            taps = [(clamp(onnx_nearest(x, nmode)), 1.0)]
        elif kind == "linear":
            taps = [(clamp(f), 1 - (x - f)), (clamp(f + 1), x - f)]
        else:
            cs = onnx_cubic(x - f, a)
            if exclude:
                cs = [cv if 0 <= f - 1 + i < inp else 0.0 for i, cv in enumerate(cs)]
                s = sum(cs)
                cs = [cv / s for cv in cs]
            taps = [(clamp(f - 1 + i), cv) for i, cv in enumerate(cs)]
        res.append((taps, outside))
    return res


def onnx_resize_ref(x, plan, kind, coord, nmode="round_prefer_floor", a=-0.75, exclude=False, extrap=0.0):
    """``plan``: {axis: (out, scale, roi)}; separable passes, innermost axis first (the ONNX
    reference's recursion), coordinates in float32 (onnxruntime's), weights and values in
    float64 (nearest: element copies)."""
    y = x if kind == "nearest" else x.astype(np.float64)
    masks = []
    for axis in sorted(plan, reverse=True):
        out, scale, roi = plan[axis]
        if out == y.shape[axis] and np.float32(scale) == 1 and coord != "tf_crop_and_resize":
            continue  # a dim of scale 1 stays as it is (onnxruntime's rule)
        taps = onnx_taps(y.shape[axis], out, scale, roi, kind, coord, nmode, a, exclude)
        shape = list(y.shape)
        shape[axis] = out
        res = np.zeros(shape, y.dtype)
        for o, (tp, _) in enumerate(taps):
            if kind == "nearest":
                acc = np.take(y, tp[0][0], axis=axis)
            else:
                acc = np.zeros(np.take(y, 0, axis=axis).shape) if y.shape[axis] else 0.0
                for i, w in tp:
                    if w != 0.0:
                        acc = acc + w * np.take(y, i, axis=axis)
            idx = [slice(None)] * y.ndim
            idx[axis] = o
            res[tuple(idx)] = acc
        y = res
        m = np.array([t[1] for t in taps], bool).reshape([-1 if d == axis else 1 for d in range(y.ndim)])
        masks.append(m)
    if coord == "tf_crop_and_resize":
        bad = np.zeros(y.shape, bool)
        for m in masks:
            bad = bad | m
        fill = extrap
        if x.dtype.kind in "iu":
            fill = math.floor(extrap + 0.5) if extrap >= 0 else math.ceil(extrap - 0.5)
        y = np.where(bad, np.asarray(fill).astype(y.dtype) if kind == "nearest" else fill, y)
    if kind != "nearest" and x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        r = np.where(y >= 0, np.floor(y + 0.5), np.ceil(y - 0.5))
        return np.clip(r, info.min, info.max).astype(x.dtype)
    return y


RESIZE_DTYPES = ("float64", "float32", "float16") + INTS
COORDS = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
NMODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def check_resize(y, want, d, kind):
    assert y.dtype == np.dtype(NP[d]) and y.shape == want.shape, (y.dtype, y.shape, want.shape)
    if kind == "nearest" or d in INTS or d == "float64":
        tol = {"float64": 1e-12}.get(d, 0)
        if tol:
            close(y, want, tol)
        else:
            assert y.tobytes() == np.asarray(want, y.dtype).tobytes()
    else:
        close(y, want, {"float32": 1e-5, "float16": 2e-3}[d])


@settings(max_examples=200, **SETTINGS)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    kind=st.sampled_from(["nearest", "linear", "cubic"]),
    coord=st.sampled_from(COORDS),
    nmode=st.sampled_from(NMODES),
    a=st.sampled_from([-0.75, -0.5]),
    exclude=st.booleans(),
    use_sizes=st.booleans(),
    data=st.data(),
    d=st.sampled_from(RESIZE_DTYPES),
    seed=st.integers(0, 2**16),
)
def test_onnx_resize_matches_reference(shape, kind, coord, nmode, a, exclude, use_sizes, data, d, seed):
    rng = np.random.default_rng(seed)
    r = len(shape)
    x = values(rng, shape, d, -5.0, 5.0)
    if use_sizes:
        sizes = [data.draw(st.integers(1, 7)) for _ in range(r)]
        scales = [np.float32(o) / np.float32(i) for o, i in zip(sizes, shape)]
        outs = sizes
    else:
        scales = [data.draw(st.sampled_from([0.5, 0.75, 1.0, 1.5, 2.0, 3.0])) for _ in range(r)]
        outs = [math.floor(i * s) for i, s in zip(shape, scales)]
    roi = [data.draw(st.sampled_from([0.0, 0.1, 0.25])) for _ in range(r)]
    roi += [data.draw(st.sampled_from([0.75, 0.9, 1.0, 1.2])) for _ in range(r)]
    roi32 = np.array(roi, np.float32)
    plan = {ax: (outs[ax], scales[ax], (float(roi32[ax]), float(roi32[r + ax]))) for ax in range(r)}
    attrs = {
        "mode": kind,
        "coordinate_transformation_mode": coord,
        "nearest_mode": nmode,
        "cubic_coeff_a": a,
        "exclude_outside": int(exclude),
        "extrapolation_value": -2.0,
    }

    def build(b, xh):
        roi_h = b.create_const(roi32) if coord == "tf_crop_and_resize" else None
        if use_sizes:
            return ops.Resize(xh, roi_h, None, b.create_const(np.array(sizes, np.int64)), **attrs)
        return ops.Resize(xh, roi_h, b.create_const(np.array(scales, np.float32)), None, **attrs)

    _, y = run(build, (x, d))
    want = onnx_resize_ref(x, plan, kind, coord, nmode, a, exclude, -2.0)
    check_resize(y, want, d, kind)


@pytest.mark.parametrize("kind", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("nchw", [True, False])
def test_onnx_resize_two_values_address_h_and_w_by_format(kind, nchw):
    rng = np.random.default_rng(2)
    x = values(rng, (2, 3, 4, 5), "float32")
    hw = (2, 3) if nchw else (1, 2)
    scales = np.array([1.5, 2.0], np.float32)
    plan = {hw[0]: (math.floor(x.shape[hw[0]] * 1.5), 1.5, (0, 1)), hw[1]: (x.shape[hw[1]] * 2, 2.0, (0, 1))}
    _, y = run(
        lambda b, xh: ops.Resize(xh, None, b.create_const(scales), None, mode=kind),
        x,
        formats={0: Format.FORMAT_NCHW} if nchw else None,
    )
    check_resize(y, onnx_resize_ref(x, plan, kind, "half_pixel"), "float32", kind)


def test_onnx_resize_runtime_scales_and_empty_sizes():
    rng = np.random.default_rng(3)
    x = values(rng, (1, 2, 3, 3), "float64")
    scales = np.array([1.0, 1.0, 2.0, 0.75], np.float32)
    plan = {2: (6, 2.0, (0, 1)), 3: (2, 0.75, (0, 1))}
    # scales fed at run time, sizes an empty constant (counts as absent).
    _, y = run(
        lambda b, xh, sh: ops.Resize(xh, None, sh, b.create_const(np.zeros((0,), np.int64)), mode="linear"),
        x,
        scales,
    )
    check_resize(y, onnx_resize_ref(x, plan, "linear", "half_pixel"), "float64", "linear")


def test_onnx_resize_errors():
    x = np.zeros((1, 1, 2, 2), np.float32)
    fails(
        lambda b, xh: ops.Resize(
            xh,
            None,
            b.create_const(np.array([1, 1, 2, 2], np.float32)),
            coordinate_transformation_mode="half_pixel_asymmetric",
        ),
        x,
        match="; not supported: Resize with coordinate_transformation_mode",
    )
    fails(
        lambda b, xh: ops.Resize(
            xh, None, b.create_const(np.array([1, 1, 2, 2], np.float32)), nearest_mode="nearest"
        ),
        x,
        match="; not supported: Resize with nearest_mode",
    )
    both = lambda b, xh, sc, sz: ops.Resize(xh, None, sc, sz)
    fails(both, x, np.array([1, 1, 2, 2], np.float32), np.array([1, 1, 4, 4], np.int64), match="both given")
    by_scales = lambda b, xh, sc: ops.Resize(xh, None, sc, None)
    by_sizes = lambda b, xh, sz: ops.Resize(xh, None, None, sz)
    for build, inputs, match in [
        (by_scales, (x, np.array([1, 2, 2], np.float32)), "needs one per dim"),
        (by_scales, (x, np.array([1, 1, 0, 2], np.float32)), "non-positive"),
        (by_sizes, (x, np.array([1, 1, -1, 2], np.int64)), "negative size"),
        (lambda b, xh: ops.Resize(xh), (x,), "needs a non-empty 'scales' or 'sizes'"),
        (by_scales, (x, np.array([1, 1, 1e30, 1], np.float32)), "too large"),
        (by_sizes, (np.zeros((1, 0), np.float32), np.array([1, 3], np.int64)), "cannot resize an empty dim"),
    ]:
        fails(build, *inputs, match=match)
    fails(
        lambda b, xh, roi: ops.Resize(
            xh,
            roi,
            b.create_const(np.array([1, 1, 2, 2], np.float32)),
            coordinate_transformation_mode="tf_crop_and_resize",
        ),
        x,
        np.zeros(3, np.float32),
        match="roi has 3 values",
    )


# ---------------------------------------------------------------------------------------------
# GridSampler2D / GridSampler3D (PyTorch's grid_sample)
# ---------------------------------------------------------------------------------------------


def gs_unnormalize(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def gs_clip(c, size):
    return min(size - 1, max(c, 0))


def gs_reflect(c, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    mn, span = lo2 / 2, (hi2 - lo2) / 2
    c = abs(c - mn)
    extra = math.fmod(c, span)
    flips = math.floor(c / span)
    return extra + mn if flips % 2 == 0 else span - extra + mn


def gs_pad(c, size, padding, align):
    if padding == "border":
        return gs_clip(c, size)
    if padding == "reflection":
        r = gs_reflect(c, 0, 2 * (size - 1)) if align else gs_reflect(c, -1, 2 * size - 1)
        return gs_clip(r, size)
    return c


def gs_cubic1d(v, t):
    a = -0.75
    conv1 = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1
    conv2 = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    cs = [conv2(t + 1), conv1(t), conv1(1 - t), conv2((1 - t) + 1)]
    return sum(ci * vi for ci, vi in zip(cs, v))


def grid_sample_ref(x, grid, interp, padding, align):
    """NCHW / NCDHW x and [N, *out, k] grid in float64; PyTorch's formulas, point by point."""
    x, grid = x.astype(np.float64), grid.astype(np.float64)
    sd = grid.shape[-1]
    n, c = x.shape[:2]
    sp = x.shape[2:]
    outs = grid.shape[1:-1]
    y = np.zeros((n, c, *outs))

    def val(b, pos):  # pos (z, y, x) or (y, x), integers
        if all(0 <= p < s for p, s in zip(pos, sp)):
            return x[(b, slice(None), *pos)]
        return np.zeros(c)

    for b in range(n):
        for o in itertools.product(*[range(s) for s in outs]):
            g = grid[(b, *o)]
            coords = list(g[::-1])  # (z,) y, x: the last grid value addresses the first spatial dim
            if interp == "bicubic":
                iy, ix = (gs_unnormalize(cv, s, align) for cv, s in zip(coords, sp))
                y0, x0 = math.floor(iy), math.floor(ix)
                bounded = lambda yy, xx, b=b: val(
                    b,
                    (
                        int(gs_pad(float(yy), sp[0], padding, align)),
                        int(gs_pad(float(xx), sp[1], padding, align)),
                    ),
                )
                rows = [
                    gs_cubic1d([bounded(y0 - 1 + r, x0 - 1 + k) for k in range(4)], ix - x0) for r in range(4)
                ]
                y[(b, slice(None), *o)] = gs_cubic1d(rows, iy - y0)
                continue
            src = [gs_pad(gs_unnormalize(cv, s, align), s, padding, align) for cv, s in zip(coords, sp)]
            if interp == "nearest":
                y[(b, slice(None), *o)] = val(b, tuple(round(v) for v in src))  # round: half to even
                continue
            lo = [math.floor(v) for v in src]
            acc = np.zeros(c)
            # Corners in PyTorch's order (x fastest), weights wx * wy (* wz).
            for corner in itertools.product(*[range(2)] * sd):
                pos = tuple(l + dc for l, dc in zip(lo, corner))
                ws = [(v - l) if dc else (l + 1 - v) for v, l, dc in zip(src, lo, corner)]
                w = ws[-1]
                for wv in reversed(ws[:-1]):
                    w = w * wv
                acc = acc + w * val(b, pos)
            y[(b, slice(None), *o)] = acc
    return y


GS_TOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3}


@settings(max_examples=80, **SETTINGS)
@given(
    **image_args(5, 4),
    interp=st.sampled_from(["bilinear", "nearest", "bicubic"]),
    padding=st.sampled_from(["zeros", "border", "reflection"]),
    align=st.booleans(),
    d=st.sampled_from(["float64", "float32", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_grid_sampler_2d_matches_pytorch_formulas(n, c, hw, out, interp, padding, align, d, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, (n, c, *hw), d)
    grid = values(rng, (n, *out, 2), d, -1.3, 1.3)
    dt, y = run(
        lambda b, xh, gh: ops.GridSampler2D(
            xh, gh, interpolation_mode=interp, padding_mode=padding, align_corners=align
        ),
        (x, d),
        (grid, d),
    )
    assert dt == d and y.shape == (n, c, *out)
    close(y, grid_sample_ref(x, grid, interp, padding, align), GS_TOL[d])


@settings(max_examples=50, **SETTINGS)
@given(
    c=st.integers(1, 2),
    dhw=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    out=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    interp=st.sampled_from(["bilinear", "nearest"]),
    padding=st.sampled_from(["zeros", "border", "reflection"]),
    align=st.booleans(),
    ndhwc=st.booleans(),
    d=st.sampled_from(["float64", "float32", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_grid_sampler_3d_matches_pytorch_formulas(c, dhw, out, interp, padding, align, ndhwc, d, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, (2, c, *dhw), d)
    grid = values(rng, (2, *out, 3), d, -1.3, 1.3)
    fmt = "NDHWC" if ndhwc else "NCDHW"
    dt, y = run(
        lambda b, xh, gh: ops.GridSampler3D(
            xh, gh, interpolation_mode=interp, padding_mode=padding, align_corners=align, data_format=fmt
        ),
        (to_nhwc(x) if ndhwc else x, d),
        (grid, d),
    )
    assert dt == d
    close(to_nchw(y) if ndhwc else y, grid_sample_ref(x, grid, interp, padding, align), GS_TOL[d])


def test_grid_sampler_unsupported_and_bad_shapes():
    x5 = np.zeros((1, 1, 2, 2, 2), np.float32)
    g5 = np.zeros((1, 1, 1, 1, 3), np.float32)
    fails(
        lambda b, xh, gh: ops.GridSampler3D(xh, gh, interpolation_mode="bicubic"),
        x5,
        g5,
        match="; not supported: GridSampler3D with interpolation_mode",
    )
    fails(
        lambda b, xh, gh: ops.GridSampler2D(xh, gh, padding_mode="circular"),
        np.zeros((1, 1, 2, 2), np.float32),
        np.zeros((1, 1, 1, 2), np.float32),
        match="; not supported: GridSampler2D with padding_mode",
    )
    fails(
        lambda b, xh, gh: ops.GridSampler2D(xh, gh),
        np.zeros((1, 1, 0, 2), np.float32),
        np.zeros((1, 1, 1, 2), np.float32),
        match="empty spatial dim",
    )


# ---------------------------------------------------------------------------------------------
# ROIAlign
# ---------------------------------------------------------------------------------------------


def roi_bilinear_ref(img, y, x):
    _, h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return (
        hy * hx * img[:, y0, x0]
        + hy * lx * img[:, y0, x1]
        + ly * hx * img[:, y1, x0]
        + ly * lx * img[:, y1, x1]
    )


def roi_align_ref(f, rois, ph, pw, scale, sample, mode, pool):
    """NCHW features; CANN's golden formulas in float64."""
    f = f.astype(np.float64)
    c = f.shape[1]
    out = np.zeros((len(rois), c, ph, pw))
    for r, roi in enumerate(rois.astype(np.float64)):
        img = f[int(roi[0])]
        x1, y1, x2, y2 = (v * scale for v in roi[1:])
        if mode == 1:
            x2, y2 = x2 + scale, y2 + scale
        elif mode >= 2:
            x1, y1, x2, y2 = x1 - 0.5, y1 - 0.5, x2 - 0.5, y2 - 0.5
        rw, rh = x2 - x1, y2 - y1
        if mode < 2:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bw, bh = rw / pw, rh / ph
        gh = sample if sample > 0 else max(math.ceil(bh), 0)
        gw = sample if sample > 0 else max(math.ceil(bw), 0)
        for i in range(ph):
            for j in range(pw):
                pts = [
                    roi_bilinear_ref(
                        img, y1 + i * bh + (iy + 0.5) * bh / gh, x1 + j * bw + (ix + 0.5) * bw / gw
                    )
                    for iy in range(gh)
                    for ix in range(gw)
                ]
                if not pts:
                    continue
                out[r, :, i, j] = np.max(pts, axis=0) if pool == "max" else sum(p / (gh * gw) for p in pts)
    return out


@settings(max_examples=80, **SETTINGS)
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    hw=st.tuples(st.integers(2, 7), st.integers(2, 7)),
    r=st.integers(1, 4),
    pooled=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    scale=st.sampled_from([1.0, 0.5, 0.25]),
    sample=st.integers(0, 3),
    mode=st.integers(0, 3),
    pool=st.sampled_from(["avg", "max"]),
    nhwc=st.booleans(),
    d=st.sampled_from(["float32", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_roi_align_matches_cann_formulas(n, c, hw, r, pooled, scale, sample, mode, pool, nhwc, d, seed):
    rng = np.random.default_rng(seed)
    h, w = hw
    f = values(rng, (n, c, h, w), d)
    # Regions inside the image (the ends + 1 of mode 1 included).
    lo = rng.uniform(0, [(w - 1) / scale * 0.6, (h - 1) / scale * 0.6], size=(r, 2))
    hi = lo + rng.uniform(0, 1, size=(r, 2)) * ([(w - 1) / scale, (h - 1) / scale] - lo)
    rois = np.concatenate([rng.integers(0, n, size=(r, 1)), lo, hi], axis=1).astype(NP[d])
    dt, y = run(
        lambda b, fh, rh: ops.ROIAlign(
            fh,
            rh,
            spatial_scale=scale,
            pooled_height=pooled[0],
            pooled_width=pooled[1],
            sample_num=sample,
            roi_end_mode=mode,
            pool_mode=pool,
        ),
        (to_nhwc(f) if nhwc else f, d),
        (rois, d),
        formats={0: Format.FORMAT_NHWC} if nhwc else None,
    )
    assert dt == d
    want = roi_align_ref(f, rois, *pooled, scale, sample, mode, pool)
    close(to_nchw(y) if nhwc else y, want, {"float32": 2e-5, "float16": 4e-3}[d])


def test_roi_align_errors():
    f = np.zeros((1, 1, 4, 4), np.float32)
    kw = {"spatial_scale": 1.0, "pooled_height": 2, "pooled_width": 2}
    fails(
        lambda b, fh, rh: ops.ROIAlign(fh, rh, **kw),
        f,
        np.array([[1, 0, 0, 2, 2]], np.float32),
        match="roi 0 has batch index 1",
    )
    fails(
        lambda b, fh, rh: ops.ROIAlign(fh, rh, roi_end_mode=4, **kw),
        f,
        np.zeros((1, 5), np.float32),
        match="roi_end_mode",
    )
    fails(
        lambda b, fh, rh: ops.ROIAlign(fh, rh, **kw),
        np.zeros((1, 1, 0, 4), np.float32),
        np.zeros((1, 5), np.float32),
        match="empty height or width",
    )
    fails(
        lambda b, fh, rh: ops.ROIAlign(fh, rh, sample_num=0, **kw),
        f,
        np.array([[0, 0, 0, 1e8, 1e8]], np.float32),
        match="needs too many samples",
    )


# ---------------------------------------------------------------------------------------------
# NonMaxSuppressionV6 (ONNX)
# ---------------------------------------------------------------------------------------------


def nms_ref(boxes, scores, max_out, iou_t, score_t, center, max_rows=0):
    """onnxruntime's algorithm in float32."""
    f = np.float32
    boxes, scores = boxes.astype(f), scores.astype(f)
    iou_t = f(iou_t)

    def corners(b):
        if center:
            hw, hh = b[2] / f(2), b[3] / f(2)
            return b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh
        x0, x1 = (b[3], b[1]) if b[1] >= b[3] else (b[1], b[3])
        y0, y1 = (b[2], b[0]) if b[0] >= b[2] else (b[0], b[2])
        return x0, y0, x1, y1

    def suppress(a, b):
        ix0, ix1 = max(a[0], b[0]), min(a[2], b[2])
        if ix1 <= ix0:
            return False
        iy0, iy1 = max(a[1], b[1]), min(a[3], b[3])
        if iy1 <= iy0:
            return False
        inter = (ix1 - ix0) * (iy1 - iy0)
        area_a = (a[2] - a[0]) * (a[3] - a[1])
        area_b = (b[2] - b[0]) * (b[3] - b[1])
        union = area_a + area_b - inter
        if inter <= 0 or area_a <= 0 or area_b <= 0 or union <= 0:
            return False
        return inter / union > iou_t

    rows = []
    for bi in range(boxes.shape[0]):
        cs = [corners(b) for b in boxes[bi]]
        for k in range(scores.shape[1]):
            cand = [(s, i) for i, s in enumerate(scores[bi, k]) if score_t is None or s > f(score_t)]
            cand.sort(key=lambda t: (-t[0], t[1]))
            kept = []
            for _, i in cand:
                if len(kept) >= max_out:
                    break
                if all(not suppress(cs[i], cs[j]) for j in kept):
                    kept.append(i)
                    rows.append([bi, k, i])
    if max_rows:
        rows = rows[:max_rows]
    return np.array(rows, np.int32).reshape(-1, 3)


@settings(max_examples=100, **SETTINGS)
@given(
    b=st.integers(1, 2),
    k=st.integers(1, 3),
    s=st.integers(1, 12),
    max_out=st.integers(0, 6),
    iou_t=st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]),
    score_t=st.sampled_from([None, 0.2, 0.5]),
    center=st.booleans(),
    max_rows=st.sampled_from([0, 0, 3]),
    d=st.sampled_from(["float32", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_nms_v6_matches_onnx(b, k, s, max_out, iou_t, score_t, center, max_rows, d, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 6, size=(b, s, 2))
    wh = rng.uniform(0.5, 3, size=(b, s, 2))
    if center:
        boxes = np.concatenate([xy, wh], axis=2)
    else:  # [y1, x1, y2, x2], corners in either order
        p, q = xy, xy + wh
        swap = rng.random((b, s, 1)) < 0.3
        p, q = np.where(swap, q, p), np.where(swap, p, q)
        boxes = np.stack([p[..., 1], p[..., 0], q[..., 1], q[..., 0]], axis=2)
    scores = rng.choice([0.1, 0.3, 0.5, 0.6, 0.8, 0.9], size=(b, k, s))  # ties included
    boxes, scores = boxes.astype(d), scores.astype(d)
    extra = [(np.array([max_out], np.int32), "int32"), (np.array(iou_t, np.float32), "float32")]
    if score_t is not None:
        extra.append((np.array([score_t], np.float32), "float32"))

    def build(bld, bh, sh, mh, ih, *th):
        return ops.NonMaxSuppressionV6(
            bh, sh, mh, ih, th[0] if th else None, center_point_box=int(center), max_boxes_size=max_rows
        )

    dt, y = run(build, (boxes, d), (scores, d), *extra)
    assert dt == "int32"
    want = nms_ref(boxes, scores, max_out, iou_t, score_t, center, max_rows)
    np.testing.assert_array_equal(y, want)


def test_nms_v6_onnx_example_and_absent_limits():
    boxes = np.array(
        [
            [
                [0.5, 0.5, 1.0, 1.0],
                [0.5, 0.6, 1.0, 1.0],
                [0.5, 0.4, 1.0, 1.0],
                [0.5, 10.5, 1.0, 1.0],
                [0.5, 10.6, 1.0, 1.0],
                [0.5, 100.5, 1.0, 1.0],
            ]
        ],
        np.float32,
    )
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)
    _, y = run(
        lambda b, bh, sh: ops.NonMaxSuppressionV6(
            bh,
            sh,
            b.create_const(np.array([3], np.int32)),
            b.create_const(np.array([0.5], np.float32)),
            b.create_const(np.array([0.0], np.float32)),
            center_point_box=1,
        ),
        boxes,
        scores,
    )
    np.testing.assert_array_equal(y, [[0, 0, 3], [0, 0, 0], [0, 0, 5]])
    # No max_output_size: nothing is selected (ONNX's default 0).
    _, y = run(lambda b, bh, sh: ops.NonMaxSuppressionV6(bh, sh), boxes, scores)
    assert y.shape == (0, 3)


def test_nms_v6_errors():
    boxes = np.zeros((1, 2, 4), np.float32)
    scores = np.zeros((1, 1, 2), np.float32)
    fails(
        lambda b, bh, sh, ih: ops.NonMaxSuppressionV6(bh, sh, b.create_const(np.array([1], np.int32)), ih),
        boxes,
        scores,
        np.array([1.5], np.float32),
        match=r"iou_threshold must lie in \[0, 1\]",
    )
    fails(
        lambda b, bh, sh: ops.NonMaxSuppressionV6(bh, sh, max_boxes_size=-1),
        boxes,
        scores,
        match="'max_boxes_size' must be >= 0",
    )
