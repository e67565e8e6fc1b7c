"""CPU kernels of crates/ge-runtime/src/kernels/conv/nd.rs and pool.rs against naive numpy references:
Conv2DTranspose, Conv3D, DeformableConv2D and Caffe's Pooling.

Every case builds a one-op graph with ``ge.es`` and runs it through ``ge.session.Session`` in
graph mode and in eager mode (``{"ge.graphMode": "off"}``); the two must give byte-identical
outputs, and both must match a reference written here from the operator's definition with
explicit loops (a scatter-add for the transposed convolution, explicit bilinear sampling for the
deformable one, Caffe's window arithmetic for pooling), computed in float64 from the exact input
values. Every dtype the prototype allows that the CPU backend has is run: Conv2DTranspose and
Conv3D f32, f16, bf16, int8 (int8 gives int32); DeformableConv2D f32, f16; Pooling f32, f16, int8
(max; int8 gives int32). bf16 values are float32 values rounded to bf16, fed as their uint16 bits
(how ``ge.graph.Tensor`` takes bf16).

Tolerance policy. Integer results are exact. A float result is a sum of products; the kernel
computes f32 in f32 (and f16/bf16 in f32, rounded once), in another order than the reference, so
the bound is |got - want| <= rtol * S + ulp(dtype) * |want| + tiny(dtype), where S is the same
sum of absolute values (the reference run on |x|, |filter|, |mask|): rtol = 1e-5 (f32
accumulation over at most a few hundred terms), plus one ulp of the output dtype for the final
rounding of f16 (2**-10) and bf16 (2**-7), plus the spacing of the dtype's subnormals (f16
2**-24), where a result rounded to a subnormal has only that absolute precision. Average pooling
sums in f64: rtol 1e-6 on S, plus the output's ulp.
"""

import ge
import numpy as np
import pytest
from ge.es import all as ops
from ge.graph import Format
from hypothesis import assume, given
from hypothesis import strategies as st
from kernel_harness import HYP, NP, bf16_round, conv_args, conv_build, run1, ulp, window_args
from kernel_harness import fails as harness_fails

# The spacing of the dtype's subnormals (f16: 2**-24), where ulp(d) * |want| no longer holds.
TINY = {"float32": 2.0**-149, "float16": 2.0**-24, "bfloat16": 2.0**-133}


# ---------------------------------------------------------------------------------------------
# Running a one-op graph (the shared harness: graph and eager mode must agree byte for byte)
# ---------------------------------------------------------------------------------------------


def values(rng, shape, d, lo=-1.0, hi=1.0):
    """Random values of dtype ``d`` (bf16 as float32 values exactly representable in bf16)."""
    if d == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    a = rng.uniform(lo, hi, size=shape).astype(np.float32)
    return bf16_round(a) if d == "bfloat16" else a.astype(NP[d])


def run(fn, inputs, formats=None):
    """``fn(builder, *graph inputs)`` on ``inputs`` ([(array, dtype name)]): (dtype name, values)."""
    return run1(fn, *inputs, formats=formats)


def fails(fn, inputs, exc, match, formats=None):
    harness_fails(fn, *inputs, exc=exc, match=match, formats=formats)


def check(got, want, scale, d, rtol=1e-5):
    """``got`` (dtype ``d``) against float64 ``want``; ``scale`` the sum of absolute terms."""
    gd, g = got
    if d == "int8":
        assert gd == "int32"
        np.testing.assert_array_equal(g, want.astype(np.int64))
        return
    assert gd == d, (gd, d)
    assert g.shape == want.shape, (g.shape, want.shape)
    err = np.abs(g.astype(np.float64) - want)
    bound = rtol * scale + ulp(d) * np.abs(want) + TINY[d]
    bad = ~(err <= bound)
    assert not bad.any(), (g[bad][:5], want[bad][:5], bound[bad][:5])


def const(b, v):
    return b.create_const(np.asarray(v, np.int32))


# ---------------------------------------------------------------------------------------------
# References (NC... layouts, float64)
# ---------------------------------------------------------------------------------------------


def conv3d_ref(x, w, s, p, d, groups):
    """Direct 3-D convolution: x [n, c, D, H, W], w [o, c / groups, kd, kh, kw]; p 6 pads."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, *size = x.shape
    o, cg, *k = w.shape
    og = o // groups
    out = [(size[i] + p[2 * i] + p[2 * i + 1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    y = np.zeros((n, o, *out))
    for oz in range(out[0]):
        for oy in range(out[1]):
            for ox in range(out[2]):
                for kz in range(k[0]):
                    for ky in range(k[1]):
                        for kx in range(k[2]):
                            iz = oz * s[0] - p[0] + kz * d[0]
                            iy = oy * s[1] - p[2] + ky * d[1]
                            ix = ox * s[2] - p[4] + kx * d[2]
                            if not (0 <= iz < size[0] and 0 <= iy < size[1] and 0 <= ix < size[2]):
                                continue
                            for g in range(groups):
                                xs = x[:, g * cg : (g + 1) * cg, iz, iy, ix]
                                ws = w[g * og : (g + 1) * og, :, kz, ky, kx]
                                y[:, g * og : (g + 1) * og, oz, oy, ox] += xs @ ws.T
    return y


def conv_transpose_ref(x, w, out_hw, s, p, d, groups):
    """Scatter-add: x [n, cx, h, w], w [cx, cy / groups, kh, kw] (Conv2D's filter of the
    forward convolution y -> x): every x element adds x * w into y at
    (iy * sh - pad_top + ki * dh, ix * sw - pad_left + kj * dw)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, cx, h, wd = x.shape
    _, cyg, kh, kw = w.shape
    cxg = cx // groups
    y = np.zeros((n, cyg * groups, *out_hw))
    for iy in range(h):
        for ix in range(wd):
            for ki in range(kh):
                for kj in range(kw):
                    oy = iy * s[0] - p[0] + ki * d[0]
                    ox = ix * s[1] - p[2] + kj * d[1]
                    if not (0 <= oy < out_hw[0] and 0 <= ox < out_hw[1]):
                        continue
                    for g in range(groups):
                        xs = x[:, g * cxg : (g + 1) * cxg, iy, ix]
                        ws = w[g * cxg : (g + 1) * cxg, :, ki, kj]
                        y[:, g * cyg : (g + 1) * cyg, oy, ox] += xs @ ws
    return y


def bilinear(plane, y, x):
    """plane sampled at (y, x): the four neighbours of (floor(y), floor(x)), 0 outside."""
    h, w = plane.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    v = 0.0
    for yy, xx, wt in (
        (y0, x0, (1 - ly) * (1 - lx)),
        (y0, x0 + 1, (1 - ly) * lx),
        (y0 + 1, x0, ly * (1 - lx)),
        (y0 + 1, x0 + 1, ly * lx),
    ):
        if 0 <= yy < h and 0 <= xx < w:
            v += wt * plane[yy, xx]
    return v


def deformable_ref(x, w, off, s, p, d, groups, dg, modulated):
    """x [n, c, h, w], w [o, c / groups, kh, kw], off [n, P * dg * kh * kw, oh, ow] with parts
    (x offset, y offset, mask): explicit bilinear sampling, then the weighted sum."""
    x, w, off = x.astype(np.float64), w.astype(np.float64), off.astype(np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    kk, og, cpd = kh * kw, o // groups, c // dg
    oh = (h + p[0] + p[1] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + p[2] + p[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    y = np.zeros((n, o, oh, ow))
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                col = np.zeros((c, kh, kw))
                for ci in range(c):
                    g = ci // cpd
                    for ki in range(kh):
                        for kj in range(kw):
                            k = g * kk + ki * kw + kj
                            dx, dy = off[b, k, oy, ox], off[b, dg * kk + k, oy, ox]
                            m = off[b, 2 * dg * kk + k, oy, ox] if modulated else 1.0
                            py = oy * s[0] - p[0] + ki * d[0] + dy
                            px = ox * s[1] - p[2] + kj * d[1] + dx
                            col[ci, ki, kj] = m * bilinear(x[b, ci], py, px)
                for oc in range(o):
                    g = oc // og
                    y[b, oc, oy, ox] = np.sum(w[oc] * col[g * cg : (g + 1) * cg])
    return y


def caffe_pool_ref(x, k, s, p, ceil, avg, global_pooling=False):
    """Caffe's PoolingLayer on NCHW x, pads [top, bottom, left, right]; the output size as the
    REG_OP (ceil or floor), a last window starting in the trailing pad dropped."""
    x = x.astype(np.float64)
    n, c, h, w = x.shape
    if global_pooling:
        k, s, p = (h, w), (1, 1), (0, 0, 0, 0)

    def size(i, n_in):
        padded = n_in + p[2 * i] + p[2 * i + 1]
        if ceil:
            o = -(-(padded - k[i]) // s[i]) + 1
            if (o - 1) * s[i] >= n_in + p[2 * i]:
                o -= 1
            return o
        return (padded - k[i]) // s[i] + 1

    oh, ow = size(0, h), size(1, w)
    y = np.zeros((n, c, oh, ow))
    for oy in range(oh):
        for ox in range(ow):
            hs, ws = oy * s[0] - p[0], ox * s[1] - p[2]
            he, we = min(hs + k[0], h + p[1]), min(ws + k[1], w + p[3])
            pool_size = (he - hs) * (we - ws)
            win = x[:, :, max(hs, 0) : min(he, h), max(ws, 0) : min(we, w)]
            if avg:
                y[:, :, oy, ox] = win.sum(axis=(2, 3)) / pool_size
            else:
                y[:, :, oy, ox] = win.max(axis=(2, 3))
    return y


def to_last(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def to_first(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


# ---------------------------------------------------------------------------------------------
# Conv2DTranspose
# ---------------------------------------------------------------------------------------------

def filter_args(layouts):
    """``@given`` strategies of the filter's layout (one of ``layouts``), a bias or none, a seed."""
    return {"ffmt": st.sampled_from(sorted(layouts)), "bias": st.booleans(), "seed": st.integers(0, 2**16)}


FILTER_2D = {
    "NCHW": (Format.FORMAT_NCHW, (0, 1, 2, 3)),
    "HWCN": (Format.FORMAT_HWCN, (2, 3, 1, 0)),
    "NHWC": (Format.FORMAT_NHWC, (0, 2, 3, 1)),
}


@HYP(100)
@given(
    n=st.integers(1, 2),
    cxg=st.integers(1, 3),
    cyg=st.integers(1, 3),
    groups=st.integers(1, 2),
    **window_args("hw", (1, 4)),
    extra=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    out_pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    nchw=st.booleans(),
    **filter_args(FILTER_2D),
)
def test_conv2d_transpose_matches_scatter_add(
    n, cxg, cyg, groups, hw, k, stride, dil, pads, extra, out_pad, nchw, ffmt, bias, seed
):
    # y's size: the shape rule's (x - 1) * s - pads + dilated kernel + output_padding, plus up to
    # stride - 1 rows the floor in GE's relation allows.
    out_hw = []
    for i in range(2):
        base = (hw[i] - 1) * stride[i] - pads[2 * i] - pads[2 * i + 1] + dil[i] * (k[i] - 1) + 1 + out_pad[i]
        e = extra[i] % stride[i]
        assume(base + e >= 1)
        out_hw.append(base + e)
    rng = np.random.default_rng(seed)
    cx, cy = cxg * groups, cyg * groups
    fmt = "NCHW" if nchw else "NHWC"
    full = (lambda v: [1, 1, *v]) if nchw else (lambda v: [1, *v, 1])
    size = [n, cy, *out_hw] if nchw else [n, *out_hw, cy]
    fformat, perm = FILTER_2D[ffmt]
    for d in ("float32", "float16", "bfloat16", "int8"):
        x = values(rng, (n, cx, *hw), d)
        w = values(rng, (cx, cyg, *k), d)
        bd = {"int8": "int32", "bfloat16": "float32"}.get(d, d)
        b = values(rng, (cy,), bd) if bd != "int32" else rng.integers(-999, 999, size=cy).astype(np.int32)
        inputs = [(x if nchw else to_last(x), d), (np.ascontiguousarray(w.transpose(perm)), d)]
        if bias:
            inputs.append((b, bd))
        got = run(
            conv_build("Conv2DTranspose", size, strides=full(stride), pads=list(pads), dilations=full(dil),
                       groups=groups, data_format=fmt,
                       output_padding=[0, 0, *out_pad] if nchw else [0, *out_pad, 0]),
            inputs,
            formats={1: fformat},
        )
        got = (got[0], got[1] if nchw else to_first(got[1]))
        want = conv_transpose_ref(x, w, out_hw, stride, pads, dil, groups)
        ax, aw = np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))
        scale = conv_transpose_ref(ax, aw, out_hw, stride, pads, dil, groups)
        if bias:
            want = want + b.astype(np.float64)[None, :, None, None]
            scale = scale + np.abs(b.astype(np.float64))[None, :, None, None]
        check(got, want, scale, d)


def test_conv2d_transpose_a_common_upsampling():
    # A 2x upsampling (kernel 4, stride 2, pads 1) of 8 channels to 4, NCHW.
    rng = np.random.default_rng(1)
    x = values(rng, (2, 8, 5, 6), "float32")
    w = values(rng, (8, 4, 4, 4), "float32")
    got = run(
        lambda b, xh, wh: ops.Conv2DTranspose(
            const(b, [2, 4, 10, 12]), xh, wh, strides=[1, 1, 2, 2], pads=[1, 1, 1, 1], data_format="NCHW"
        ),
        [(x, "float32"), (w, "float32")],
    )
    want = conv_transpose_ref(x, w, (10, 12), (2, 2), (1, 1, 1, 1), (1, 1), 1)
    scale = conv_transpose_ref(np.abs(x), np.abs(w), (10, 12), (2, 2), (1, 1, 1, 1), (1, 1), 1)
    check(got, want, scale, "float32")


# ---------------------------------------------------------------------------------------------
# Conv3D
# ---------------------------------------------------------------------------------------------

FILTER_3D = {
    "NCDHW": (Format.FORMAT_NCDHW, (0, 1, 2, 3, 4)),
    "NDHWC": (Format.FORMAT_NDHWC, (0, 2, 3, 4, 1)),
    "DHWCN": (Format.FORMAT_DHWCN, (2, 3, 4, 1, 0)),
}


@HYP(80)
@given(
    **conv_args("dhw", (1, 4), 3, channels=(1, 2), groups=(1, 2), k=(1, 2), stride=(1, 2), pad=(0, 1)),
    ncdhw=st.booleans(),
    **filter_args(FILTER_3D),
)
def test_conv3d_matches_numpy(n, cg, og, groups, dhw, k, stride, dil, pads, ncdhw, ffmt, bias, seed):
    for i in range(3):
        assume(dhw[i] + pads[2 * i] + pads[2 * i + 1] >= dil[i] * (k[i] - 1) + 1)
    rng = np.random.default_rng(seed)
    c, o = cg * groups, og * groups
    fmt = "NCDHW" if ncdhw else "NDHWC"
    full = (lambda v: [1, 1, *v]) if ncdhw else (lambda v: [1, *v, 1])
    fformat, perm = FILTER_3D[ffmt]
    for d in ("float32", "float16", "bfloat16", "int8"):
        x = values(rng, (n, c, *dhw), d)
        w = values(rng, (o, cg, *k), d)
        bd = "int32" if d == "int8" else d
        b = values(rng, (o,), bd) if bd != "int32" else rng.integers(-999, 999, size=o).astype(np.int32)
        inputs = [(x if ncdhw else to_last(x), d), (np.ascontiguousarray(w.transpose(perm)), d)]
        if bias:
            inputs.append((b, bd))
        got = run(
            conv_build("Conv3D", strides=full(stride), pads=list(pads), dilations=full(dil), groups=groups,
                   data_format=fmt),
            inputs,
            formats={1: fformat},
        )
        got = (got[0], got[1] if ncdhw else to_first(got[1]))
        want = conv3d_ref(x, w, stride, pads, dil, groups)
        ax, aw = np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))
        scale = conv3d_ref(ax, aw, stride, pads, dil, groups)
        if bias:
            want = want + b.astype(np.float64).reshape(1, -1, 1, 1, 1)
            scale = scale + np.abs(b.astype(np.float64)).reshape(1, -1, 1, 1, 1)
        check(got, want, scale, d)


def test_conv3d_a_video_block():
    # 3x3x3 kernel, pads 1, 8 -> 16 channels, NDHWC (the default).
    rng = np.random.default_rng(2)
    x = values(rng, (1, 8, 4, 6, 6), "float32")
    w = values(rng, (16, 8, 3, 3, 3), "float32")
    got = run(
        lambda _, xh, wh: ops.Conv3D(xh, wh, strides=[1, 1, 1, 1, 1], pads=[1] * 6),
        [(to_last(x), "float32"), (w, "float32")],
    )
    want = conv3d_ref(x, w, (1, 1, 1), (1,) * 6, (1, 1, 1), 1)
    scale = conv3d_ref(np.abs(x), np.abs(w), (1, 1, 1), (1,) * 6, (1, 1, 1), 1)
    check((got[0], to_first(got[1])), want, scale, "float32")


# ---------------------------------------------------------------------------------------------
# DeformableConv2D
# ---------------------------------------------------------------------------------------------


@HYP(80)
@given(
    **conv_args("hw", (2, 5), channels=(1, 2), groups=(1, 2), stride=(1, 2), pad=(0, 1)),
    dg=st.integers(1, 2),
    nchw=st.booleans(),
    modulated=st.booleans(),
    **filter_args(FILTER_2D),
)
def test_deformable_conv2d_matches_bilinear_sampling(
    n, cg, og, groups, dg, hw, k, stride, dil, pads, nchw, modulated, ffmt, bias, seed
):
    c, o = cg * groups, og * groups
    assume(c % dg == 0)
    for i in range(2):
        assume(hw[i] + pads[2 * i] + pads[2 * i + 1] >= dil[i] * (k[i] - 1) + 1)
    oh = (hw[0] + pads[0] + pads[1] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (hw[1] + pads[2] + pads[3] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    rng = np.random.default_rng(seed)
    parts = 3 if modulated else 2
    fmt = "NCHW" if nchw else "NHWC"
    full = (lambda v: [1, 1, *v]) if nchw else (lambda v: [1, *v, 1])
    fformat, perm = FILTER_2D[ffmt]
    for d in ("float32", "float16"):
        x = values(rng, (n, c, *hw), d)
        w = values(rng, (o, cg, *k), d)
        # Offsets within +-1.5 pixels (some samples fall outside), masks in [0, 1].
        off = values(rng, (n, parts * dg * k[0] * k[1], oh, ow), d, -1.5, 1.5)
        if modulated:
            off[:, 2 * dg * k[0] * k[1] :] = values(rng, (n, dg * k[0] * k[1], oh, ow), d, 0, 1)
        b = values(rng, (o,), d)
        inputs = [
            (x if nchw else to_last(x), d),
            (np.ascontiguousarray(w.transpose(perm)), d),
            (off if nchw else to_last(off), d),
        ]
        if bias:
            inputs.append((b, d))
        got = run(
            conv_build("DeformableConv2D", extra=1, strides=full(stride), pads=list(pads),
                       dilations=full(dil), groups=groups, data_format=fmt, deformable_groups=dg,
                       modulated=modulated),
            inputs,
            formats={1: fformat},
        )
        got = (got[0], got[1] if nchw else to_first(got[1]))
        want = deformable_ref(x, w, off, stride, pads, dil, groups, dg, modulated)
        aoff = off.astype(np.float64).copy()
        aoff[:, 2 * dg * k[0] * k[1] :] = np.abs(aoff[:, 2 * dg * k[0] * k[1] :])
        ax, aw = np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))
        scale = deformable_ref(ax, aw, aoff, stride, pads, dil, groups, dg, modulated)
        if bias:
            want = want + b.astype(np.float64)[None, :, None, None]
            scale = scale + np.abs(b.astype(np.float64))[None, :, None, None]
        check(got, want, scale, d)


def test_deformable_conv2d_offsets_order_and_integer_shifts():
    # With integer offsets, bilinear sampling reads single pixels: a 1x1 kernel whose x offset
    # is +1 reads the right neighbour (0 past the edge), and the mask scales it. Channel order of
    # the offsets: [x offsets, y offsets, masks].
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    w = np.ones((1, 1, 1, 1), np.float32)
    off = np.zeros((1, 3, 3, 4), np.float32)
    off[0, 0] = 1.0  # x + 1
    off[0, 2] = 0.5  # mask
    got = run(
        lambda _, xh, wh, oh_: ops.DeformableConv2D(
            xh, wh, oh_, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW"
        ),
        [(x, "float32"), (w, "float32"), (off, "float32")],
    )
    shifted = np.zeros_like(x)
    shifted[..., :3] = x[..., 1:]
    np.testing.assert_array_equal(got[1], shifted * 0.5)
    off[0, 0], off[0, 1] = 0.0, -1.0  # y - 1: the row above, 0 for the first row
    got = run(
        lambda _, xh, wh, oh_: ops.DeformableConv2D(
            xh, wh, oh_, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW"
        ),
        [(x, "float32"), (w, "float32"), (off, "float32")],
    )
    shifted = np.zeros_like(x)
    shifted[:, :, 1:] = x[:, :, :2]
    np.testing.assert_array_equal(got[1], shifted * 0.5)


# ---------------------------------------------------------------------------------------------
# Pooling (Caffe)
# ---------------------------------------------------------------------------------------------


@HYP(150)
@given(
    **window_args("hw", (1, 7), dil=None, stride_name="s"),
    ceil=st.booleans(),
    nchw=st.booleans(),
    global_pooling=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pooling_matches_caffe(hw, k, s, pads, ceil, nchw, global_pooling, seed):
    # Caffe's constraint: pads smaller than the window (every window reads some input).
    pads = tuple(min(p, k[i // 2] - 1) for i, p in enumerate(pads))
    assume(all(hw[i] + pads[2 * i] + pads[2 * i + 1] >= k[i] for i in range(2)))
    if global_pooling:
        pads = (0, 0, 0, 0)
    rng = np.random.default_rng(seed)
    fmt = "NCHW" if nchw else "NHWC"
    for d in ("float32", "float16", "int8"):
        for mode in (0, 1) if d != "int8" else (0,):
            x = values(rng, (2, 3, *hw), d)
            got = run(
                lambda _, xh: ops.Pooling(
                    xh,
                    mode=mode,
                    global_pooling=global_pooling,
                    window=list(k),
                    stride=list(s),
                    pad=list(pads),
                    ceil_mode=0 if ceil else 1,
                    data_format=fmt,
                ),
                [(x if nchw else to_last(x), d)],
            )
            got = (got[0], got[1] if nchw else to_first(got[1]))
            want = caffe_pool_ref(x, k, s, pads, ceil, mode == 1, global_pooling)
            if mode == 0:
                assert got[0] == ("int32" if d == "int8" else d)
                np.testing.assert_array_equal(got[1], want.astype(got[1].dtype))
            else:
                scale = caffe_pool_ref(np.abs(x.astype(np.float64)), k, s, pads, ceil, True, global_pooling)
                check(got, want, scale, d, rtol=1e-6)


def test_pooling_caffe_defaults_ceil_and_pad_counting():
    # Defaults: max, window 1: a copy. Then the classic 3x3/2 with pad 1 average of a 4x4:
    # ceil gives 3x3 outputs; the first window divides by 9 (the pads count), the last one
    # (rows and columns 3..5) by 2 x 2: the part inside the input and the trailing pad.
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = run(lambda _, xh: ops.Pooling(xh), [(x, "float32")])
    np.testing.assert_array_equal(got[1], x)
    got = run(
        lambda _, xh: ops.Pooling(xh, mode=1, window=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1]),
        [(x, "float32")],
    )
    assert got[1].shape == (1, 1, 3, 3)
    np.testing.assert_allclose(got[1][0, 0, 0, 0], (0 + 1 + 4 + 5) / 9, rtol=1e-6)
    np.testing.assert_allclose(got[1][0, 0, 2, 2], 15 / 4, rtol=1e-6)
    np.testing.assert_allclose(
        got[1], caffe_pool_ref(x, (3, 3), (2, 2), (1, 1, 1, 1), True, True), rtol=1e-6
    )


# ---------------------------------------------------------------------------------------------
# Errors (one test per error the kernels raise that reaches a session; the others, which the
# shape rules catch first, are covered by the Rust unit tests)
# ---------------------------------------------------------------------------------------------

F32 = "float32"


@pytest.mark.parametrize(
    "size_input,size,extra,exc,match",
    [
        pytest.param(True, [1, 1, 2, 2], {}, ge.GeError,
                     "; not supported: Conv2DTranspose with a non-constant input_size",
                     id="needs_a_constant_input_size"),
        pytest.param(False, [1, 1, 5, 2], {}, ge.ExecutionError, "input_size",
                     id="input_size_must_match_the_geometry"),
        pytest.param(False, [1, 1, 2, 2], {"output_padding": [0, 1, 0, 0]}, ge.GeError, "output_padding",
                     id="output_padding_on_n_or_c_is_an_error"),
    ],
)
def test_conv2d_transpose_errors(size_input, size, extra, exc, match):
    x, w = np.zeros((1, 2, 2, 2), np.float32), np.zeros((2, 1, 1, 1), np.float32)
    attrs = dict(strides=[1, 1, 1, 1], pads=[0] * 4, data_format="NCHW", **extra)
    if size_input:
        fails(lambda _, sh, xh, wh: ops.Conv2DTranspose(sh, xh, wh, **attrs),
              [(np.array(size, np.int32), "int32"), (x, F32), (w, F32)], exc, match)
    else:
        fails(lambda b, xh, wh: ops.Conv2DTranspose(const(b, size), xh, wh, **attrs), [(x, F32), (w, F32)], exc,
              match)


@pytest.mark.parametrize("op", ["Conv2DTranspose", "Conv3D"])
def test_quantized_convolutions_are_not_supported(op):
    if op == "Conv3D":
        x, w = np.zeros((1, 2, 2, 2, 1), np.float32), np.zeros((1, 1, 1, 1, 1), np.float32)
        fn = lambda _, xh, wh: ops.Conv3D(xh, wh, strides=[1] * 5, pads=[0] * 6, offset_x=1)
    else:
        x, w = np.zeros((1, 2, 2, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32)
        fn = lambda b, xh, wh: ops.Conv2DTranspose(
            const(b, [1, 2, 2, 1]), xh, wh, strides=[1] * 4, pads=[0] * 4, offset_x=1
        )
    fails(fn, [(x, F32), (w, F32)], ge.GeError, f"; not supported: {op} with offset_x")


def test_conv3d_offset_w_is_not_supported():
    x, w = np.zeros((1, 2, 2, 2, 1), np.int8), np.zeros((1, 1, 1, 1, 1), np.int8)
    ow = np.zeros((1,), np.int8)
    fails(
        lambda _, xh, wh, oh_: ops.Conv3D(xh, wh, None, oh_, strides=[1] * 5, pads=[0] * 6),
        [(x, "int8"), (w, "int8"), (ow, "int8")],
        ge.GeError,
        "; not supported: Conv3D with offset_w",
    )


def test_deformable_groups_must_divide_the_channels():
    x = np.zeros((1, 3, 3, 3), np.float32)
    w = np.zeros((1, 3, 1, 1), np.float32)
    off = np.zeros((1, 2 * 3, 3, 3), np.float32)
    fails(
        lambda _, xh, wh, oh_: ops.DeformableConv2D(
            xh, wh, oh_, strides=[1] * 4, pads=[0] * 4, data_format="NCHW", deformable_groups=2
        ),
        [(x, F32), (w, F32), (off, F32)],
        ge.ExecutionError,
        "deformable_groups 2 does not divide",
    )


@pytest.mark.parametrize(
    "kw,dtype,match",
    [
        ({"mode": 2}, F32, "; not supported: Pooling with mode 2 \\(stochastic"),
        ({"mode": 5}, F32, "attribute 'mode'"),
        ({"dilation": [1, 1, 2, 2]}, F32, "; not supported: Pooling with dilation"),
        ({"mode": 1}, "int8", "; not supported: Pooling with mode 1 \\(average\\) of an int8"),
    ],
)
def test_pooling_errors(kw, dtype, match):
    x = np.zeros((1, 1, 2, 2), NP[dtype])
    fails(lambda _, xh: ops.Pooling(xh, **kw), [(x, dtype)], ge.GeError, match)
