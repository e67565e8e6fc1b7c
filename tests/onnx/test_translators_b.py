"""ONNX translators of issue 22 point 4, part B: Col2Im (ops/image.rs), AffineGrid, Resize's
half_pixel_symmetric and align_corners downsampling (ops/sampling.rs, the Resize kernel),
DeformConv and 3-D ConvTranspose (ops/conv.rs), MaxUnpool with output_shape (ops/pool.rs).
Each model is built with onnx.helper, loaded with ge.onnx.load, run in a Session and compared
with onnx's ReferenceEvaluator; shape-giving inputs are fed both as graph inputs (read at run
time) and as initializers."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, node_model  # noqa: E402

rng = np.random.default_rng(22)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def check(op, inputs, inits=(), rtol=1e-4, atol=1e-5, opset=21, **attrs):
    m = node_model(op, inputs, inits, opset=opset, **attrs)
    return check_model(m, dict(inputs), rtol, atol, modes=("on", "off"))


def refuse(op, inputs, match, inits=(), opset=21, **attrs):
    m = node_model(op, inputs, inits, opset=opset, **attrs)
    with pytest.raises(ge.TranslationError, match=match):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------- Col2Im


@settings(max_examples=10, deadline=None)
@given(
    nd=st.sampled_from([1, 2, 3]),
    b=st.integers(1, 3),
    s=st.integers(1, 2),
    d=st.integers(1, 2),
    p=st.integers(0, 1),
    runtime=st.booleans(),
)
def test_col2im(nd, b, s, d, p, runtime):
    img = np.array([5, 4, 3][:nd], np.int64)
    blk = np.array([b, 2, 1][:nd], np.int64)
    counts = [(img[j] + 2 * p - (d * (blk[j] - 1) + 1)) // s + 1 for j in range(nd)]
    if min(counts) < 1:
        return
    c = 2
    x = randn(2, c * int(np.prod(blk)), int(np.prod(counts)))
    attrs = dict(strides=[s] * nd, dilations=[d] * nd, pads=[p] * (2 * nd))
    if runtime:
        check("Col2Im", [("x", x), ("img", img), ("blk", blk)], **attrs)
    else:
        check("Col2Im", [("x", x)], inits=[("img", img), ("blk", blk)], **attrs)


def test_col2im_errors():
    x = randn(1, 4, 4)
    refuse("Col2Im", [("x", x)], "same length", inits=[("img", np.array([3, 3], np.int64)),
                                                       ("blk", np.array([2], np.int64))])


# ------------------------------------------------------------------------------- AffineGrid


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 3, 4, 5, 6), (1, 2, 1, 2, 1)])
def test_affine_grid(align, size):
    nd = len(size) - 2
    theta = randn(size[0], nd, nd + 1)
    sz = np.array(size, np.int64)
    check("AffineGrid", [("theta", theta), ("size", sz)], align_corners=align, opset=20)
    check("AffineGrid", [("theta", theta)], inits=[("size", sz)], align_corners=align, opset=20)


def test_affine_grid_errors():
    refuse("AffineGrid", [("theta", randn(1, 2, 3))], "4 \\(2-D\\) or 5",
           inits=[("size", np.array([1, 1, 2], np.int64))], opset=20)


# ------------------------------------------------------------------------------- DeformConv


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("geom", [
    dict(group=1, offset_group=1, strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1]),
    dict(group=2, offset_group=2, strides=[2, 1], pads=[1, 0, 1, 2], dilations=[1, 2]),
])
def test_deform_conv(mask, bias, geom):
    n, c, h, w, oc, k = 2, 4, 6, 7, 4, (3, 2)
    g, og = geom["group"], geom["offset_group"]
    (sh, sw), (dh, dw) = geom["strides"], geom["dilations"]
    p = geom["pads"]
    ho = (h + p[0] + p[2] - (dh * (k[0] - 1) + 1)) // sh + 1
    wo = (w + p[1] + p[3] - (dw * (k[1] - 1) + 1)) // sw + 1
    x = randn(n, c, h, w)
    wt = randn(oc, c // g, *k)
    off = (2 * randn(n, og * 2 * k[0] * k[1], ho, wo)).astype(np.float32)
    ins = [("x", x), ("w", wt), ("off", off)]
    ins.append(("b", randn(oc)) if bias else ("", None))
    if mask:
        ins.append(("m", rng.uniform(0, 1, (n, og * k[0] * k[1], ho, wo)).astype(np.float32)))
    check("DeformConv", ins, kernel_shape=list(k), opset=19, **geom)


def test_deform_conv_refuses_1d():
    refuse("DeformConv", [("x", randn(1, 1, 5)), ("w", randn(1, 1, 2)), ("off", randn(1, 2, 4))],
           "not supported: .*DeformConv over 1 spatial dims", opset=19)


# ----------------------------------------------------------------------- ConvTranspose 3-D


@settings(max_examples=10, deadline=None)
@given(
    s=st.integers(1, 3),
    d=st.integers(1, 2),
    p=st.integers(0, 2),
    op=st.integers(0, 1),
    group=st.sampled_from([1, 2]),
    bias=st.booleans(),
)
def test_conv_transpose_3d(s, d, p, op, group, bias):
    if op >= s:  # onnxruntime wants output_padding below the stride
        op = 0
    x = randn(1, 2, 3, 2, 4)
    w = randn(2, 3 if group == 1 else 2, 2, 3, 2)
    inits = [("w", w)] + ([("b", randn(w.shape[1] * group))] if bias else [])
    m = node_model("ConvTranspose", [("x", x)], inits, opset=21, strides=[s, 1, s],
                   dilations=[d, 1, d], pads=[p, 0, 1, 0, p, 0], output_padding=[op, 0, op],
                   group=group, out_types={0: onnx.TensorProto.FLOAT})
    # onnx's ReferenceEvaluator mishandles grouped ConvTranspose (it reshapes W as if the
    # group count were 1): onnxruntime is the reference here.
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    check_model(m, {"x": x}, 1e-4, 1e-5, modes=("on", "off"), expected=want)


# -------------------------------------------------------------------------------- MaxUnpool


def test_max_unpool_output_shape_runtime():
    x = randn(1, 2, 4, 6)
    pool = node_model("MaxPool", [("x", x)], n_out=2, kernel_shape=[2, 2], strides=[2, 2])
    from onnx.reference import ReferenceEvaluator

    v, i = ReferenceEvaluator(pool).run(None, {"x": x})
    ins = [("v", v), ("i", i), ("s", np.array([1, 2, 5, 8], np.int64))]
    check("MaxUnpool", ins, kernel_shape=[2, 2], strides=[2, 2])


# ----------------------------------------------------------------------------------- Resize


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.8), (1, 1, 1.7, 2.5), (1, 1, 0.34, 1.0)])
def test_resize_half_pixel_symmetric(mode, scales):
    x = randn(1, 2, 5, 4)
    sc = np.array(scales, np.float32)
    check("Resize", [("x", x)], inits=[("roi", np.zeros(0, np.float32)), ("sc", sc)], opset=19,
          mode=mode, coordinate_transformation_mode="half_pixel_symmetric")


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.6), (1, 1, 0.3, 0.75), (1, 1, 1.5, 0.5)])
def test_resize_align_corners_scales(mode, scales):
    x = randn(1, 1, 4, 6)
    sc = np.array(scales, np.float32)
    check("Resize", [("x", x)], inits=[("roi", np.zeros(0, np.float32)), ("sc", sc)], opset=19,
          mode=mode, coordinate_transformation_mode="align_corners")
