"""The workers of a calling thread's pool keep looking for work for a short while after each
parallel section (crates/ge-runtime/src/par.rs, the spinner): runs made of many parallel sections
back to back, with pauses that let the workers go back to sleep, from several Python threads at
once, threads that end right after a run (their pool goes while its spinner may still run), and
the same results as one thread, byte for byte."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

N = 512  # 512 x 512: the element-wise ops and the products all split at 2 threads
LAYERS = 6


def chain():
    rng = np.random.default_rng(3)
    nodes, inits, cur = [], [], "x"
    for i in range(LAYERS):
        w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
        b = rng.standard_normal((N,)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Tanh", [f"a{i}"], [f"t{i}"])]
        cur = f"t{i}"
    g = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [N, N])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


MODEL = chain()
X = np.random.default_rng(5).standard_normal((N, N)).astype(np.float32)


def run(threads, x=X):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(MODEL))
    return s, s.run_graph(1, [x])[0].numpy()


@pytest.fixture(scope="module")
def expect():
    return run(1)[1]


def test_back_to_back_and_after_pauses_same_bytes_as_one_thread(expect):
    s, first = run(2)
    np.testing.assert_array_equal(first, expect)
    for i in range(12):
        np.testing.assert_array_equal(s.run_graph(1, [X])[0].numpy(), expect)
        if i % 3 == 2:
            time.sleep(0.01)  # the spinner has stopped: the workers sleep, the next run wakes them


def test_several_python_threads_and_threads_that_end_after_a_run(expect):
    errors: list = []

    def worker(threads, runs):
        try:
            s, got = run(threads)
            np.testing.assert_array_equal(got, expect)
            for _ in range(runs):
                np.testing.assert_array_equal(s.run_graph(1, [X])[0].numpy(), expect)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    # Long runners beside short-lived threads, which end (and drop their pools) right after a
    # run, while their spinners may still be looking for work.
    ts = [threading.Thread(target=worker, args=(t, r))
          for t, r in [(2, 8), (3, 8), (2, 0), (2, 0), (1, 4), (2, 0), (3, 0)]]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in ts), "a run never finished"
    assert not errors, errors
