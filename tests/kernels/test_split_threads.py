"""The 2-thread splits of the CNN kernels (issue 18, "Both cores, session 24"): convolutions split
by tiles of output rows (a multiple of the thread count, near-equal) or by output channels
(7x7 and 14x14 images, 1x1 convolutions, 1-pixel images), depthwise convolutions by planes,
pools, BatchNorm, Concat and element-wise ops. Each case runs at 1, 2 and 3 threads, must give
the same bits at every thread count, and must match onnxruntime; shapes include 1-pixel images,
channel counts that are not multiples of any block, groups, dilations and padding larger than
the kernel."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

THREADS = (1, 2, 3)


def make(nodes, x_shapes, inits=()):
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, list(s))
         for i, s in enumerate(x_shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def run_ge(model, xs, threads):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(model))
    return s.run_graph(1, list(xs))[0].numpy()


def run_ort(model, xs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {f"x{i}": x for i, x in enumerate(xs)})[0]


def check(model, xs, rtol=1e-4):
    got = [run_ge(model, xs, t) for t in THREADS]
    for t, g in zip(THREADS[1:], got[1:]):
        assert g.shape == got[0].shape
        assert np.array_equal(g, got[0]), f"{t} threads differ from 1 thread"
    want = run_ort(model, xs)
    assert got[0].shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got[0], want, rtol=rtol, atol=rtol * scale)


# (x shape, out channels, kernel, strides, dilations, pads, group)
CONVS = {
    # 28 output rows of 3x3 columns: three L2 tiles before, now four near-equal ones.
    "3x3_28x28_tiles": ((1, 192, 28, 28), 64, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    # Late layers: 14x14 and 7x7 images, 1x1 convolutions, channels not a multiple of 16.
    "1x1_14x14": ((1, 480, 14, 14), 112, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    "1x1_7x7_odd_channels": ((1, 832, 7, 7), 200, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    "3x3_7x7": ((1, 160, 7, 7), 325, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    "1x1_one_pixel": ((1, 1024, 1, 1), 1000, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    "3x3_one_pixel_pads": ((1, 512, 1, 1), 67, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    "grouped_dilated_big_pads": ((1, 64, 14, 15), 128, (3, 3), (1, 1), (2, 2), (6, 5, 6, 7), 4),
    "pads_over_kernel": ((1, 48, 9, 9), 96, (2, 2), (1, 1), (1, 1), (3, 3, 3, 3), 1),
    "stride2_odd": ((2, 37, 29, 31), 53, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1),
    "3_rows": ((1, 64, 3, 70), 48, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    # Depthwise: by planes.
    "dw_28x28": ((1, 116, 28, 28), 116, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 116),
    "dw_7x7_stride2": ((1, 232, 14, 14), 232, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 232),
    "dw_one_pixel_big_pads": ((1, 300, 1, 1), 300, (2, 2), (1, 1), (1, 1), (3, 2, 2, 3), 300),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_same_bits_at_every_thread_count(name):
    shape, o, k, s, d, p, group = CONVS[name]
    rng = np.random.default_rng(sum(name.encode()))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((o, shape[1] // group, *k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    node = helper.make_node("Conv", ["x0", "w", "b"], ["c"], kernel_shape=list(k), strides=list(s),
                            dilations=list(d), pads=list(p), group=group)
    model = make([node, helper.make_node("Relu", ["c"], ["y"])], [shape], [("w", w), ("b", b)])
    check(model, [x])


POOLS = {
    "max3_s1_14x14": ("MaxPool", (1, 480, 14, 14), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "max3_s2_ceil": ("MaxPool", (1, 64, 111, 111),
                     dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "max3_s1_7x7": ("MaxPool", (1, 833, 7, 7), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "max_one_pixel": ("MaxPool", (1, 3000, 1, 1), dict(kernel_shape=[1, 1])),
    "avg2_s2": ("AveragePool", (1, 255, 56, 56), dict(kernel_shape=[2, 2], strides=[2, 2])),
    "avg3_pads": ("AveragePool", (1, 129, 28, 28),
                  dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)),
    "global_avg": ("GlobalAveragePool", (1, 1025, 7, 7), {}),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pool_same_bits_at_every_thread_count(name):
    op, shape, attrs = POOLS[name]
    x = np.random.default_rng(sum(name.encode())).standard_normal(shape).astype(np.float32)
    check(make([helper.make_node(op, ["x0"], ["y"], **attrs)], [shape]), [x])


@pytest.mark.parametrize("shape", [(1, 256, 28, 28), (1, 1000, 7, 7), (2, 37, 13, 11),
                                   (1, 2049, 1, 1)])
def test_batchnorm_relu_same_bits_at_every_thread_count(shape):
    rng = np.random.default_rng(shape[1])
    c = shape[1]
    x = rng.standard_normal(shape).astype(np.float32)
    params = [("s", rng.standard_normal(c)), ("o", rng.standard_normal(c)),
              ("m", rng.standard_normal(c)), ("v", rng.random(c) + 0.1)]
    params = [(k, v.astype(np.float32)) for k, v in params]
    nodes = [helper.make_node("BatchNormalization", ["x0", "s", "o", "m", "v"], ["b"]),
             helper.make_node("Relu", ["b"], ["y"])]
    check(make(nodes, [shape], params), [x])


@pytest.mark.parametrize("shapes,axis", [
    ([(1, 64, 28, 28), (1, 96, 28, 28), (1, 31, 28, 28)], 1),
    ([(1, 480, 7, 7), (1, 833, 7, 7)], 1),
    ([(1, 1000, 1, 1), (1, 24, 1, 1), (1, 1, 1, 1)], 1),
    ([(3, 64, 28, 28), (3, 97, 28, 28)], 1),
    ([(2, 8, 300, 57), (2, 8, 1, 57), (2, 8, 211, 57)], 2),
    ([(1, 64, 0, 28), (1, 64, 28, 28)], 2),
])
def test_concat_and_add_same_bits_at_every_thread_count(shapes, axis):
    rng = np.random.default_rng(len(shapes))
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    names = [f"x{i}" for i in range(len(xs))]
    nodes = [helper.make_node("Concat", names, ["c"], axis=axis),
             helper.make_node("Add", ["c", "c"], ["y"])]
    check(make(nodes, shapes), xs, rtol=0)
