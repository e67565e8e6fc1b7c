"""MaxPool over NCHW planes (issue 18, docs/perf-runtime.md "One core, session 26"): the
separable passes compiled for AVX-512/AVX2 (flat over a group of planes where the window is a
stride-1 "same" one) and written into the plan's buffers (into a Concat's slice where the
Concat takes it). Each case runs at 1, 2 and 3 threads, must give the same bits at each, and
must equal onnxruntime's MaxPool exactly (a max compares, it does not round)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

THREADS = (1, 2, 3)


def model(nodes, shape, dtype=TensorProto.FLOAT):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
                          [helper.make_tensor_value_info("y", dtype, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


def run_ge(m, x, threads):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(m))
    return s.run_graph(1, [x])[0].numpy()


def check(m, x):
    got = [run_ge(m, x, t) for t in THREADS]
    for t, g in zip(THREADS[1:], got[1:]):
        assert np.array_equal(g, got[0]), f"{t} threads differ from 1 thread"
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got[0].shape == want.shape
    assert got[0].dtype == want.dtype
    np.testing.assert_array_equal(got[0], want)


# (x shape, kernel, strides, pads, ceil_mode, dilations)
POOLS = {
    # GoogLeNet's and SqueezeNet's: 3x3 stride 1 "same" (the flat passes), 3x3/2 ceil mode.
    "googlenet_3x3_s1_28": ((1, 192, 28, 28), 3, 1, 1, 0, 1),
    "googlenet_3x3_s1_7": ((1, 832, 7, 7), 3, 1, 1, 0, 1),
    "googlenet_3x3_s2_ceil": ((1, 64, 112, 112), 3, 2, 0, 1, 1),
    "squeezenet_3x3_s2_ceil_odd": ((1, 64, 111, 111), 3, 2, 0, 1, 1),
    # Planes larger than a 4096-element group, channels that are no vector width's multiple.
    "big_planes": ((1, 3, 70, 67), 3, 1, 1, 0, 1),
    # 1-pixel images (every column and row an edge), batch 2, odd channels.
    "one_pixel": ((2, 37, 1, 1), 3, 1, 1, 0, 1),
    "one_row": ((1, 5, 1, 19), 3, 1, 1, 0, 1),
    # 5x5 "same" (two edge columns each side), stride 3, a 2x2 window with no pads, ceil
    # mode with pads, a window as large as the image.
    "k5_same": ((1, 19, 9, 13), 5, 1, 2, 0, 1),
    "k3_s3": ((1, 7, 17, 16), 3, 3, 1, 0, 1),
    "k2_s2": ((2, 9, 15, 15), 2, 2, 0, 0, 1),
    "k3_s2_ceil_pads": ((1, 11, 14, 13), 3, 2, 1, 1, 1),
    "whole_plane": ((1, 6, 5, 5), 5, 1, 0, 0, 1),
    # A dilated window (built from strided slices, not this kernel): still onnxruntime's.
    "dilated": ((1, 4, 12, 12), 3, 1, 2, 0, 2),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_planes_match_onnxruntime_at_every_thread_count(name):
    shape, k, s, p, ceil, d = POOLS[name]
    x = np.random.default_rng(sum(name.encode())).standard_normal(shape).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[k, k], strides=[s, s],
                            pads=[p] * 4, ceil_mode=ceil, dilations=[d, d])
    check(model([node], shape), x)


def test_max_pool_f64():
    shape = (1, 13, 10, 9)
    x = np.random.default_rng(3).standard_normal(shape)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    check(model([node], shape, TensorProto.DOUBLE), x)


def test_max_pools_written_into_a_concat():
    # An inception block's shape: a pooled branch and a strided one concatenated; the pools'
    # input is a plan buffer (the Relu's), their outputs the Concat's slices.
    shape = (1, 24, 14, 14)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["b"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        helper.make_node("Concat", ["a", "b", "r"], ["y"], axis=1),
    ]
    check(model(nodes, shape), x)


def test_max_pool_repeated_runs_reuse_buffers():
    # The plan replays into the same buffers: a second run with other values must not see the
    # first run's (a window's maximum from stale data).
    shape = (1, 17, 9, 9)
    m = model([helper.make_node("Neg", ["x"], ["n"]),
               helper.make_node("MaxPool", ["n"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                pads=[1, 1, 1, 1], ceil_mode=1)], shape)
    s = Session({"ge.threads": "1"})
    s.add_graph(1, ge.onnx.load(m))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"])
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * (seed + 1)
        np.testing.assert_array_equal(s.run_graph(1, [x])[0].numpy(),
                                      sess.run(None, {"x": x})[0])
