"""The convolution engine's paths (issue 18, point 2) against onnxruntime, through ge.onnx:
1x1 convolutions read in place, strided 1x1, tiled 3x3 unfolding, the direct vectorised
depthwise kernel (stride 2, dilation, multipliers, channels not a multiple of the vector width),
grouped convolutions, padding larger than the kernel, 1-pixel images, the bias and a fused Relu,
each at 1 and 2 threads (the large cases split across threads)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def conv_model(x_shape, w, b, relu, **attrs):
    """Conv(x, w[, b]) [-> Relu] as serialized ONNX (opset 17)."""
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def run_ge(model, x, threads):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(model))
    return s.run_graph(1, [x])[0].numpy()


def run_ort(model, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


# (x shape, out channels, kernel, strides, dilations, pads, group, bias, relu)
CASES = {
    "1x1": ((1, 64, 28, 28), 96, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, True, True),
    "1x1_batch2": ((2, 32, 9, 11), 48, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, True, False),
    "1x1_stride2": ((1, 40, 29, 30), 24, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, False, False),
    "3x3_tiled": ((1, 32, 57, 45), 40, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, True, True),
    "3x3_few_pixels": ((1, 256, 7, 7), 256, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, True, True),
    "7x7_stride2": ((1, 3, 64, 61), 16, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), 1, True, False),
    "grouped_dilated": ((2, 12, 20, 23), 18, (3, 2), (1, 1), (2, 2), (4, 3, 2, 5), 3, True, False),
    "stride_over_kernel": ((1, 8, 13, 14), 8, (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), 1, False, False),
    "one_pixel": ((1, 8, 1, 1), 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, True, False),
    "dw_3x3": ((1, 96, 56, 56), 96, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 96, True, True),
    "dw_3x3_stride2": ((1, 19, 17, 33), 19, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 19, True, False),
    "dw_dilated_5x5": ((2, 5, 12, 31), 5, (5, 5), (2, 2), (3, 3), (1, 0, 6, 2), 5, False, False),
    "dw_multiplier": ((1, 3, 6, 18), 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 3, True, False),
    "dw_one_pixel_big_pads": ((1, 4, 1, 1), 4, (2, 2), (1, 1), (1, 1), (3, 2, 2, 3), 4, True, True),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_matches_onnxruntime(name, threads):
    shape, o, k, s, d, p, group, bias, relu = CASES[name]
    rng = np.random.default_rng(sum(name.encode()))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((o, shape[1] // group, *k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if bias else None
    model = conv_model(shape, w, b, relu, kernel_shape=list(k), strides=list(s), dilations=list(d),
                       pads=list(p), group=group)
    want = run_ort(model, x)
    got = run_ge(model, x, threads)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


def test_depthwise_nan_weight_meets_padding_as_onnxruntime():
    # A NaN weight: every output of its channel is NaN, padded positions included (0 * NaN);
    # the other channel is finite.
    x = np.ones((1, 2, 3, 3), np.float32)
    w = np.ones((2, 1, 3, 3), np.float32)
    w[1, 0, 0, 0] = np.nan
    model = conv_model(x.shape, w, None, False, kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2)
    got = run_ge(model, x, 1)
    want = run_ort(model, x)
    assert np.isnan(want[0, 1]).all() and np.isnan(got[0, 1]).all()
    np.testing.assert_allclose(got[0, 0], want[0, 0], rtol=1e-6)
