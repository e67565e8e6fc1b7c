"""The splits that the cost-weighted bound opened (issue 18, "Both cores, session 25"): kernels
whose elements cost several plain element-wise ones (BatchNorm, depthwise convolutions, the
channel shuffle's Transpose, copies through strided views) now split at fewer elements, and a
Slice or Split that is one contiguous run splits by pieces of it. Each case is sized to split
at 2 threads under the new weights (and not under the old element count), runs at 1, 2 and 3
threads, must give the same bits at every thread count, and must match onnxruntime (or numpy);
shapes include 1-pixel images, a single plane, and channel counts that are not multiples of
any block or vector width."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from test_split_threads import THREADS, check, make  # noqa: E402


def split_model(shape, axis, sizes):
    outs = [f"y{i}" for i in range(len(sizes))]
    g = helper.make_graph(
        [helper.make_node("Split", ["x0", "sp"], outs, axis=axis)], "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=[numpy_helper.from_array(np.array(sizes, np.int64), "sp")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# BatchNorm: 3 units an element, so 87k elements and more split (was 262k). Odd channel
# counts, a 1-pixel image of many channels, a single plane (one unit: stays whole), batch 2.
@pytest.mark.parametrize("shape", [(1, 117, 27, 29), (1, 90001, 1, 1), (1, 1, 300, 301),
                                   (2, 45, 33, 31)])
def test_batchnorm_splits_by_planes_with_the_same_bits(shape):
    rng = np.random.default_rng(shape[1])
    c = shape[1]
    params = [("s", rng.standard_normal(c)), ("o", rng.standard_normal(c)),
              ("m", rng.standard_normal(c)), ("v", rng.random(c) + 0.1)]
    params = [(k, v.astype(np.float32)) for k, v in params]
    nodes = [helper.make_node("BatchNormalization", ["x0", "s", "o", "m", "v"], ["y"])]
    check(make(nodes, [shape], params), [rand(shape, 1)])


# Depthwise convolutions: 2 units a filter tap, so a 3x3 one splits from 15k outputs (was
# 233k). ShuffleNet's 28x28 and stride-2 shapes, channels that are not a multiple of 16, a
# 1-pixel image with pads, a channel multiplier of 2.
DEPTHWISE = {
    "dw3x3_28x28": ((1, 117, 28, 28), 117, (3, 3), (1, 1), (1, 1, 1, 1)),
    "dw3x3_14x14_stride2": ((1, 233, 28, 28), 233, (3, 3), (2, 2), (1, 1, 1, 1)),
    "dw3x3_7x7": ((1, 641, 7, 7), 641, (3, 3), (1, 1), (1, 1, 1, 1)),
    "dw3x3_one_pixel": ((1, 30001, 1, 1), 30001, (3, 3), (1, 1), (1, 1, 1, 1)),
    "dw5x5_multiplier2": ((2, 37, 19, 23), 74, (5, 5), (1, 1), (2, 2, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(DEPTHWISE))
def test_depthwise_splits_by_channel_blocks_with_the_same_bits(name):
    shape, o, k, strides, pads = DEPTHWISE[name]
    c = shape[1]
    w = (rand((o, 1) + k, 2) * 0.3).astype(np.float32)
    b = rand((o,), 3)
    node = helper.make_node("Conv", ["x0", "w", "b"], ["y"], group=c, kernel_shape=list(k),
                            strides=list(strides), pads=list(pads))
    check(make([node], [shape], [("w", w), ("b", b)]), [rand(shape, 4)])


# The channel shuffle (Reshape, Transpose, Reshape): 2 units an element, so 131k elements
# split (was 262k). Odd channel and pixel counts, 1-pixel images.
@pytest.mark.parametrize("c,h,w", [(134, 31, 33), (232, 28, 28), (70002, 1, 1)])
def test_channel_shuffle_splits_with_the_same_bits(c, h, w):
    inits = [("r0", np.array([1, 2, c // 2, h, w], np.int64)),
             ("r1", np.array([1, c, h, w], np.int64))]
    nodes = [helper.make_node("Reshape", ["x0", "r0"], ["u"]),
             helper.make_node("Transpose", ["u"], ["v"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["v", "r1"], ["y"])]
    check(make(nodes, [(1, c, h, w)], inits), [rand((1, c, h, w), 5)], rtol=0)


# A Slice of channels at batch 1 is one contiguous run: it splits by pieces (before, a single
# run never split). Starts and lengths that are not multiples of any vector width.
@pytest.mark.parametrize("shape,start,end", [((1, 1101, 23, 23), 1, 1101),
                                             ((1, 600, 29, 31), 299, 599),
                                             ((1, 300001, 1, 1), 3, 299998)])
def test_slice_of_one_run_splits_with_the_same_bits(shape, start, end):
    inits = [("st", np.array([start], np.int64)), ("en", np.array([end], np.int64)),
             ("ax", np.array([1], np.int64))]
    node = helper.make_node("Slice", ["x0", "st", "en", "ax"], ["y"])
    check(make([node], [shape], inits), [rand(shape, 6)], rtol=0)


# Split into halves (ShuffleNet's channel split), one odd part, and a strided split of a
# middle axis (rows gathered from apart: 2 units an element).
@pytest.mark.parametrize("shape,axis,sizes", [((1, 1000, 23, 23), 1, (500, 500)),
                                              ((1, 1001, 23, 23), 1, (1, 1000)),
                                              ((3, 7, 301, 67), 2, (150, 151))])
def test_split_splits_with_the_same_bits(shape, axis, sizes):
    x = rand(shape, 7)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    model = split_model(shape, axis, sizes)
    for t in THREADS:
        s = Session({"ge.threads": str(t)})
        s.add_graph(1, ge.onnx.load(model))
        got = [y.numpy() for y in s.run_graph(1, [x])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.array_equal(g, w), f"{t} threads"


# Element-wise ops over broadcast operands: 2 units an element, so 131k elements split.
@pytest.mark.parametrize("shape,bshape", [((1, 117, 37, 31), (1, 117, 1, 1)),
                                          ((1, 1, 401, 339), (1, 1, 1, 339)),
                                          ((3, 5, 101, 97), (5, 1, 97))])
def test_broadcast_add_splits_with_the_same_bits(shape, bshape):
    nodes = [helper.make_node("Add", ["x0", "x1"], ["t"]),
             helper.make_node("Mul", ["t", "x1"], ["y"])]
    check(make(nodes, [shape, bshape]), [rand(shape, 8), rand(bshape, 9)], rtol=0)
