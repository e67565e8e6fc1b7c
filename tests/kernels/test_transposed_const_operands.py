"""Rank-2 constants read transposed by a matrix product (ONNX Gemm with transB, a tied LM head
``MatMul(h, Transpose(embedding))``) are laid out transposed once at compile time (issue 18,
docs/perf-runtime.md "Transformers, session 26"); a one-row product keeps the transposed view.
Each case runs at 1, 2 and 3 threads, must give the same bits at every thread count and match
onnxruntime; sizes are not multiples of any vector width or block, and 1-row products are
included. The compile report says how many operands were laid out, so a pass that stopped
firing (or fired on a one-row product) fails here."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from test_split_threads import make  # noqa: E402  (inputs x0, x1, ... of float32)

THREADS = (1, 2, 3)


def run_ge(model, xs, threads):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(model))
    y = s.run_graph(1, list(xs))[0].numpy()
    laid = re.search(r"transposed constant operands laid out (\d+)", s.compile_report(1))
    assert laid, s.compile_report(1)
    return y, int(laid.group(1))


def check(model, xs, laid_out):
    got = [run_ge(model, xs, t) for t in THREADS]
    for t, (g, n) in zip(THREADS, got):
        assert n == laid_out, f"{t} threads: {n} operands laid out, want {laid_out}"
        assert g.shape == got[0][0].shape
        assert np.array_equal(g, got[0][0]), f"{t} threads differ from 1 thread"
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    want = sess.run(None, {f"x{i}": x for i, x in enumerate(xs)})[0]
    assert got[0][0].shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got[0][0], want, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("m,k,n", [(1, 17, 31), (2, 7, 3), (5, 17, 130), (33, 64, 31),
                                   (70, 129, 257)])
def test_gemm_trans_b(m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    w = rng.standard_normal((n, k)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    model = make([helper.make_node("Gemm", ["x0", "w", "c"], ["y"], transB=1)], [(m, k)],
                 [("w", w), ("c", c)])
    x = rng.standard_normal((m, k)).astype(np.float32)
    check(model, [x], 0 if m == 1 else 1)


@pytest.mark.parametrize("tokens", [1, 5, 128])
def test_tied_embedding_head(tokens):
    """Gather(table, ids) -> Tanh -> MatMul(h, Transpose(table)): the table
    stays for the Gather, its transpose is laid out for the product (not for one token)."""
    vocab, d = 300, 40
    rng = np.random.default_rng(tokens)
    table = rng.standard_normal((vocab, d)).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["x0"], ["ids"], to=TensorProto.INT64),
        helper.make_node("Gather", ["table", "ids"], ["h"], axis=0),
        helper.make_node("Tanh", ["h"], ["t"]),
        helper.make_node("Transpose", ["table"], ["tt"], perm=[1, 0]),
        helper.make_node("MatMul", ["t", "tt"], ["y"]),
    ]
    model = make(nodes, [(1, tokens)], [("table", table)])
    ids = rng.integers(0, vocab, (1, tokens)).astype(np.float32)
    check(model, [ids], 0 if tokens == 1 else 1)


def test_batched_product_of_a_transposed_constant():
    """A [2, 3, 9] @ Transpose(w [11, 9]) (BatchMatMulV2 with adj_x2) and the same w read by a
    second product: one transposed copy serves both."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((11, 9)).astype(np.float32)
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("MatMul", ["x0", "wt"], ["a"]),
        helper.make_node("MatMul", ["a", "w"], ["y"]),
    ]
    model = make(nodes, [(2, 3, 9)], [("w", w)])
    x = rng.standard_normal((2, 3, 9)).astype(np.float32)
    check(model, [x], 1)
