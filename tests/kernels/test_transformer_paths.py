"""Transformer paths of the CPU runtime (issue 18, point 4), through the Python API:

- Tanh on float32 is the vectorised tanh of kernels/vmath.rs: within 2 ulp of numpy's float64
  tanh on a dense sweep, on lengths that are not multiples of the vector width, with the special
  values (signed zeros, infinities, NaN, saturation) exact;
- a Transpose of the last two dims feeding a MatMul (the tied LM head: ``x @ Transpose(table)``)
  is absorbed into the product (no copy of the table per run): the compile report counts it and
  the results equal numpy's; a Transpose that moves a batch dim is left alone;
- GPT-2's tanh-Gelu written out in ONNX ops (Pow or products for the cube, the usual groupings)
  becomes one Gelu (the compile report counts it) and matches onnxruntime and the float64 formula;
- a division by a power-of-two constant (attention's ``scores / sqrt(64)``) runs as a product with
  the same bits as numpy's float32 division; by another constant it stays a division;
- tiny GPT-structured decoders (sequence 1, one head, widths that are not multiples of 8) match
  onnxruntime with both rewrites applied.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ge.onnx  # noqa: E402
import ge.session  # noqa: E402

BENCHES = str(Path(__file__).resolve().parents[2] / "benches" / "python")
if BENCHES not in sys.path:
    sys.path.insert(0, BENCHES)

import models_transformer as mt  # noqa: E402

C = math.sqrt(2.0 / math.pi)


def _model(nodes: List[Any], inputs: List[Any], outputs: List[Any], inits: List[Any]) -> Any:
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _run(m: Any, feeds: List[np.ndarray], threads: int = 1):
    s = ge.session.Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(m.SerializeToString()))
    out = [o.numpy() for o in s.run_graph(1, feeds)]
    return out, s.compile_report(1) or ""


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    w32 = np.abs(want).astype(np.float32)
    spacing = np.spacing(w32).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


# -- Tanh ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 17, 33, 100_003])
def test_tanh_f32_is_within_two_ulp(n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4.0).astype(np.float32)
    if n > 1000:  # a dense sweep through the polynomial, the switch at 0.625 and saturation
        x = np.concatenate([np.linspace(-12, 12, n, dtype=np.float32),
                            np.geomspace(1e-30, 10, 5000, dtype=np.float32)])
    m = _model([helper.make_node("Tanh", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])], [])
    (y,), _ = _run(m, [x])
    assert y.dtype == np.float32
    e = _ulps(y, np.tanh(x.astype(np.float64)))
    assert e.max() <= 2.0, (x[e.argmax()], y[e.argmax()], e.max())


def test_tanh_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 9.5, -9.5, 1e-45, -1e-45, 0.625,
                  -0.625], np.float32)
    m = _model([helper.make_node("Tanh", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])], [])
    (y,), _ = _run(m, [x])
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.signbit(y[:2]), [False, True]) and (y[:2] == 0).all()
    assert np.isnan(y[4])
    finite = ~np.isnan(want)
    assert (np.abs(y[finite].astype(np.float64) - want[finite]) <= 2 * np.spacing(np.abs(want[finite]))).all()
    assert (y[[2, 5, 7]] == 1.0).all() and (y[[3, 6, 8]] == -1.0).all()


# -- Transposes absorbed into products -----------------------------------------------------------


@pytest.mark.parametrize("rows,k,vocab", [(1, 1, 1), (3, 5, 7), (1, 17, 33), (20, 9, 130)])
@pytest.mark.parametrize("threads", [1, 2])
def test_tied_head_transpose_is_absorbed(rows: int, k: int, vocab: int, threads: int) -> None:
    rng = np.random.default_rng(rows * 100 + k)
    table = rng.standard_normal((vocab, k)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["table"], ["head"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "head"], ["logits"]),
             helper.make_node("MatMul", ["x3", "head"], ["logits3"]),
             # A batch-moving perm: not a swap of the last two dims, so not absorbed.
             helper.make_node("Transpose", ["x3"], ["x3b"], perm=[1, 0, 2]),
             helper.make_node("MatMul", ["x3b", "head"], ["logits3b"])]
    m = _model(nodes,
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k]),
                helper.make_tensor_value_info("x3", TensorProto.FLOAT, [2, rows, k])],
               [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [rows, vocab]),
                helper.make_tensor_value_info("logits3", TensorProto.FLOAT, [2, rows, vocab]),
                helper.make_tensor_value_info("logits3b", TensorProto.FLOAT, [rows, 2, vocab])],
               [numpy_helper.from_array(table, "table")])
    x = rng.standard_normal((rows, k)).astype(np.float32)
    x3 = rng.standard_normal((2, rows, k)).astype(np.float32)
    (y, y3, y3b), report = _run(m, [x, x3], threads)
    # The table's Transpose into each of the three products; x3's batch move stays a Transpose.
    assert "transposes absorbed into products 3" in report, report
    t64 = table.astype(np.float64)
    np.testing.assert_allclose(y, x.astype(np.float64) @ t64.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y3, x3.astype(np.float64) @ t64.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y3b, x3.transpose(1, 0, 2).astype(np.float64) @ t64.T, rtol=1e-5,
                               atol=1e-5)


# -- tanh-Gelu -----------------------------------------------------------------------------------


def _gelu_nodes(variant: int) -> tuple:
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    inits = [c("three", 3.0), c("k", 0.044715), c("c", C), c("one", 1.0), c("half", 0.5)]
    n = helper.make_node
    if variant == 0:  # GPT-2's export: Pow, x * 0.5 first
        cube = [n("Pow", ["x", "three"], ["cube"])]
    else:  # x * x * x
        cube = [n("Mul", ["x", "x"], ["sq"]), n("Mul", ["sq", "x"], ["cube"])]
    body = [n("Mul", ["k", "cube"], ["t"]), n("Add", ["x", "t"], ["s"]), n("Mul", ["c", "s"], ["u"]),
            n("Tanh", ["u"], ["th"]), n("Add", ["th", "one"], ["a"])]
    if variant == 0:
        tail = [n("Mul", ["x", "half"], ["h"]), n("Mul", ["h", "a"], ["y"])]
    elif variant == 1:
        tail = [n("Mul", ["half", "x"], ["h"]), n("Mul", ["a", "h"], ["y"])]
    else:
        tail = [n("Mul", ["x", "a"], ["h"]), n("Mul", ["h", "half"], ["y"])]
    return cube + body + tail, inits


@pytest.mark.parametrize("variant", [0, 1, 2])
@pytest.mark.parametrize("shape", [[1], [3, 7], [2, 5, 33]])
def test_tanh_gelu_chain_is_fused(variant: int, shape: List[int]) -> None:
    nodes, inits = _gelu_nodes(variant)
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    x = (np.random.default_rng(variant).standard_normal(shape) * 3).astype(np.float32)
    x.flat[0] = -0.0
    (y,), report = _run(m, [x])
    assert "tanh-Gelus fused 1" in report, report
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(C * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)
    ort = pytest.importorskip("onnxruntime")
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_gelu_chain_with_a_shared_intermediate_is_not_fused() -> None:
    nodes, inits = _gelu_nodes(0)
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
                helper.make_tensor_value_info("th", TensorProto.FLOAT, [4])], inits)
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    (y, th), report = _run(m, [x])
    assert "tanh-Gelus fused 0" in report, report
    x64 = x.astype(np.float64)
    u = C * (x64 + 0.044715 * x64 ** 3)
    np.testing.assert_allclose(th, np.tanh(u), rtol=1e-6)
    np.testing.assert_allclose(y, 0.5 * x64 * (1 + np.tanh(u)), rtol=1e-6)


# -- divisions by powers of two -------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[1], [3, 7], [2, 3, 17]])
def test_power_of_two_division_is_an_exact_product(shape: List[int]) -> None:
    divisors = [8.0, 0.125, -2.0, 3.0]
    nodes = [helper.make_node("Div", ["x", f"d{i}"], [f"y{i}"]) for i in range(len(divisors))]
    inits = [numpy_helper.from_array(np.array(d, np.float32), f"d{i}") for i, d in enumerate(divisors)]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, shape) for i in range(len(divisors))],
               inits)
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 1e3).astype(np.float32)
    x.flat[0] = np.float32(1e-44)  # a subnormal
    ys, report = _run(m, [x])
    assert "divisions by powers of two made products 3" in report, report
    for y, d in zip(ys, divisors):
        assert np.array_equal(y.view(np.uint32), (x / np.float32(d)).view(np.uint32)), d


# -- tiny decoders end to end --------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [
    dict(vocab=11, seq=1, d=4, heads=1, ffn=9, layers=1, batch=1),
    dict(vocab=37, seq=5, d=12, heads=3, ffn=20, layers=2, batch=2),
    dict(vocab=50, seq=9, d=10, heads=1, ffn=13, layers=1, batch=1),
])
@pytest.mark.parametrize("threads", [1, 2])
def test_tiny_gpt_matches_onnxruntime(sizes: Dict[str, int], threads: int) -> None:
    ort = pytest.importorskip("onnxruntime")
    m, feeds = mt.build("gpt", sizes, seed=sizes["vocab"])
    (logits,), report = _run(m, list(feeds.values()), threads)
    assert f"tanh-Gelus fused {sizes['layers']}" in report, report
    assert "transposes absorbed into products" in report and "products 0," not in report, report
    # The attention scale sqrt(d / heads) is a power of two for head widths 4, 16, 64, ...
    scale = math.sqrt(sizes["d"] // sizes["heads"])
    pow2 = scale == 2.0 ** round(math.log2(scale))
    assert f"divisions by powers of two made products {sizes['layers'] if pow2 else 0}" in report, report
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-5)
