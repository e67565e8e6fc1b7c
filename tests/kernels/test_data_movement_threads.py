"""Data movement through strided copies (issue 18, point 3): Transpose (the channel shuffle,
attention's head split, NCHW <-> NHWC), Slice with positive and negative steps, and Split, through
ge.onnx against numpy, at 1, 2 and 3 threads (the large cases split across threads), with odd and
1-element dims; and runs from several Python threads at once, each calling thread the first
worker of its own pool."""

from __future__ import annotations

import threading

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def model(nodes, x_shape, outs, inits=()):
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def shuffle(shape, groups):
    n, c, h, w = shape
    nodes = [
        helper.make_node("Reshape", ["x", "s1"], ["a"]),
        helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["b", "s2"], ["y"]),
    ]
    inits = [("s1", np.array([n, groups, c // groups, h, w], np.int64)),
             ("s2", np.array([n, c, h, w], np.int64))]

    def want(x):
        return x.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(shape)

    return model(nodes, shape, ["y"], inits), want


def transpose(shape, perm):
    return (model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], shape, ["y"]),
            lambda x: x.transpose(perm))


def slice_(shape, starts, ends, axes, steps):
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])]
    inits = [(k, np.array(v, np.int64)) for k, v in
             [("st", starts), ("en", ends), ("ax", axes), ("sp", steps)]]

    def want(x):
        idx = [slice(None)] * x.ndim
        for s, e, a, p in zip(starts, ends, axes, steps):
            idx[a] = slice(s, e, p)
        return x[tuple(idx)]

    return model(nodes, shape, ["y"], inits), want


def split(shape, axis, sizes):
    outs = [f"y{i}" for i in range(len(sizes))]
    nodes = [helper.make_node("Split", ["x", "sz"], outs, axis=axis)]
    return (model(nodes, shape, outs, [("sz", np.array(sizes, np.int64))]),
            lambda x: np.split(x, np.cumsum(sizes)[:-1], axis=axis))


CASES = {
    "shuffle_small": lambda: shuffle((1, 116, 28, 28), 2),
    "shuffle_large": lambda: shuffle((2, 232, 29, 27), 2),
    "shuffle_1px": lambda: shuffle((1, 6, 1, 1), 3),
    "heads": lambda: transpose((1, 129, 12, 67), (0, 2, 1, 3)),
    "heads_large": lambda: transpose((2, 385, 12, 33), (0, 2, 1, 3)),
    "nchw_nhwc": lambda: transpose((1, 19, 131, 127), (0, 2, 3, 1)),
    "nhwc_nchw": lambda: transpose((1, 131, 127, 19), (0, 3, 1, 2)),
    "reverse_all": lambda: transpose((5, 1, 7), (2, 1, 0)),
    "slice_channels": lambda: slice_((1, 232, 61, 47), [116], [232], [1], [1]),
    "slice_steps": lambda: slice_((3, 297, 101, 31), [1, 100, 0], [3, 0, 31], [0, 2, 3], [1, -3, 2]),
    "slice_reverse": lambda: slice_((2, 67, 1, 2053), [-1, 0], [-1000000, 2053], [1, 3], [-1, 1]),
    "split_channels": lambda: split((1, 232, 67, 41), 1, [116, 116]),
    "split_uneven": lambda: split((3, 25, 7001), 2, [1, 4000, 3000]),
}


def run(m, x, threads):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(m))
    return [t.numpy() for t in s.run_graph(1, [x])]


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_copies_match_numpy_at_1_2_and_3_threads(name):
    m, want = CASES[name]()
    shape = onnx.load_from_string(m).graph.input[0].type.tensor_type.shape
    dims = [d.dim_value for d in shape.dim]
    x = np.random.default_rng(len(name)).standard_normal(dims).astype(np.float32)
    w = want(x)
    w = w if isinstance(w, list) else [w]
    for threads in (1, 2, 3):
        got = run(m, x, threads)
        assert len(got) == len(w)
        for g, e in zip(got, w):
            assert g.shape == e.shape
            np.testing.assert_array_equal(g, e)


def test_runs_from_several_python_threads_at_once():
    m, want = CASES["heads_large"]()
    x = np.random.default_rng(7).standard_normal((2, 385, 12, 33)).astype(np.float32)
    expect = want(x)
    errors: list = []

    def worker(threads):
        try:
            s = Session({"ge.threads": str(threads)})
            s.add_graph(1, ge.onnx.load(m))
            for _ in range(5):
                np.testing.assert_array_equal(s.run_graph(1, [x])[0].numpy(), expect)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in (2, 2, 3, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
