"""GE's GeluV2 and the erf-Gelu (issue 18, session 27), through the Python API:

- ``es.GeluV2(x)`` (``approximate`` "none", the default): x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)),
  on float32 within the kernel's documented bound (kernels/vmath.rs ``gelu_erf``: 3 ulp of the
  result plus |x| 2^-22) of a float64 reference built with ``math.erf``/``math.erfc`` (no scipy),
  on sizes that are not multiples of the vector widths (1, 15, 17, 1027), in graph and eager
  mode; float16 and bfloat16 within one ulp of their dtype of the same reference;
- ``approximate="tanh"`` gives GE's Gelu bit for bit;
- 1, 2 and 3 threads give the same bits;
- a bad ``approximate`` is a GeError naming the attribute, while building;
- the erf chain exporters write (``x / sqrt 2`` or ``x * (1 / sqrt 2)``, the 0.5 on either
  side) is fused into one GeluV2 (the compile report counts it) and matches onnxruntime (which
  fuses it into its own Gelu) within the documented bound; with the Erf's result also read
  elsewhere it is left alone;
- ONNX's ``Gelu`` (opset 20, approximate "none") imports to GeluV2, and GeluV2 exports back (as
  the formula: the exported opset is 18) to a model onnxruntime runs.
"""

from __future__ import annotations

import math
from typing import Any, List

import ge
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType
from ge.session import Session
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kernel_harness import bf16_round, run, run1

ONE_OVER_SQRT2 = 1.0 / math.sqrt(2.0)
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def gelu64(x: np.ndarray) -> np.ndarray:
    """x Phi(x) in float64, as 0.5 x erfc(-x / sqrt 2) (no cancellation for negative x)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * _erfc(-x * ONE_OVER_SQRT2)


def bound32(x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The documented bound of the float32 kernel: 3 ulp of the result + |x| 2^-22."""
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return 3.0 * ulp + np.abs(np.asarray(x, np.float64)) * 2.0 ** -22


def sample(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3.0).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-30, -1e-30, 6.0, -6.0, 3.2, -3.2, 40.0, -40.0], np.float32)
    x[: min(n, len(special))] = special[: min(n, len(special))]
    return x


def gelu_v2(approximate: str = "none"):
    def build(b: GraphBuilder, x: Any) -> Any:
        return es.GeluV2(x, approximate=approximate)

    return build


@pytest.mark.parametrize("n", [1, 15, 17, 1027])
def test_gelu_v2_float32_is_within_its_bound(n: int) -> None:
    x = sample(n, n)
    d, y = run1(lambda b, h: es.GeluV2(h), x)  # the default approximate is "none"
    assert d == "float32" and y.shape == x.shape
    want = gelu64(x)
    err = np.abs(y.astype(np.float64) - want)
    assert np.all(err <= bound32(x, want)), (x[err > bound32(x, want)], y[err > bound32(x, want)])
    zeros = x == 0  # gelu(-0) = -0
    assert np.array_equal(np.signbit(y[zeros]), np.signbit(x[zeros]))


def test_gelu_v2_dense_sweep() -> None:
    x = np.linspace(-12.0, 12.0, 200_001).astype(np.float32)
    _, y = run1(gelu_v2("none"), x)
    want = gelu64(x)
    assert np.all(np.abs(y.astype(np.float64) - want) <= bound32(x, want))
    # Where the result is not small, the bound is a few ulp: x >= 0 within 4 ulp.
    pos = x >= 0
    ulp = np.spacing(np.abs(want[pos]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(y[pos] - want[pos]) / ulp) <= 4.0


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, st.integers(1, 70),
              elements=st.floats(allow_nan=False, allow_infinity=False, width=32)))
def test_gelu_v2_any_finite_input_is_within_its_bound(x: np.ndarray) -> None:
    # Graph and eager mode agree bit for bit (run1), and both are within the bound.
    _, y = run1(gelu_v2("none"), x)
    want = gelu64(x)
    assert np.all(np.abs(y.astype(np.float64) - want) <= bound32(x, want))


@pytest.mark.parametrize("d", ["float16", "bfloat16"])
def test_gelu_v2_low_precision(d: str) -> None:
    x = sample(1027, 7)
    x = bf16_round(x) if d == "bfloat16" else x.astype(np.float16).astype(np.float32)
    got_d, y = run1(gelu_v2("none"), (x, d))
    assert got_d == d
    want = gelu64(x)
    # Computed in float32 and rounded once: one ulp of the dtype, or the float32 kernel's
    # absolute part where the result is small.
    eps = 2.0 ** -10 if d == "float16" else 2.0 ** -7
    tol = eps * np.abs(want) + np.abs(x) * 2.0 ** -22 + (6e-8 if d == "float16" else 1e-38)
    assert np.all(np.abs(np.asarray(y, np.float64) - want) <= tol)


def test_gelu_v2_tanh_is_ge_gelu_bit_for_bit() -> None:
    x = sample(1027, 3)

    def both(b: GraphBuilder, h: Any) -> Any:
        return [es.GeluV2(h, approximate="tanh"), es.Gelu(h)]

    (_, a), (_, g) = run(both, x)
    assert a.tobytes() == g.tobytes()
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(a, want, rtol=1e-6, atol=1e-7)


def test_threads_give_the_same_bits() -> None:
    x = np.random.default_rng(1).standard_normal((600, 1027)).astype(np.float32) * 4
    b = GraphBuilder("g")
    h = b.create_input(0, data_type=DataType.DT_FLOAT, shape=list(x.shape))
    graph = b.build_and_reset([es.GeluV2(h)])
    outs = []
    for threads in (1, 2, 3):
        s = Session({"ge.threads": str(threads)})
        s.add_graph(1, graph)
        outs.append(s.run_graph(1, [x])[0].numpy())
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()
    want = gelu64(x)
    assert np.all(np.abs(outs[0].astype(np.float64) - want) <= bound32(x, want))


def test_bad_approximate_is_an_error_naming_the_attribute() -> None:
    b = GraphBuilder("g")
    h = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4])
    with pytest.raises(ge.GeError, match=r"GeluV2.*attribute 'approximate' is \"erf\""):
        es.GeluV2(h, approximate="erf")
    # An input without a shape: the attribute is still checked while building.
    u = b.create_input(1, data_type=DataType.DT_FLOAT)
    with pytest.raises(ge.GeError, match="attribute 'approximate'"):
        es.GeluV2(u, approximate="TANH")
    # A double input is not in GeluV2's dtype list.
    d = b.create_input(2, data_type=DataType.DT_DOUBLE, shape=[4])
    with pytest.raises(ge.GeError, match="GeluV2"):
        es.GeluV2(d)


# -- ONNX: the erf chain, Gelu, export --------------------------------------------------------------

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ge.onnx  # noqa: E402


def _chain(form: int, group: int, share: bool = False) -> Any:
    """0.5 x (1 + erf(x / sqrt 2)) as exporters write it: ``form`` 0 Div(x, sqrt 2) (torch),
    1 Mul(x, 1 / sqrt 2); ``group`` 0 (x * 0.5) * (1 + erf) (BERT), 1 (x * (1 + erf)) * 0.5
    (torch's F.gelu, ViT), 2 0.5 * ((1 + erf) * x)."""
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    n = helper.make_node
    if form == 0:
        inits, scale = [c("sqrt2", math.sqrt(2.0))], [n("Div", ["x", "sqrt2"], ["t"])]
    else:
        inits, scale = [c("r", ONE_OVER_SQRT2)], [n("Mul", ["r", "x"], ["t"])]
    inits += [c("one", 1.0), c("half", 0.5)]
    body = [n("Erf", ["t"], ["e"]), n("Add", ["e", "one"], ["a"])]
    if group == 0:
        tail = [n("Mul", ["x", "half"], ["h"]), n("Mul", ["h", "a"], ["y"])]
    elif group == 1:
        tail = [n("Mul", ["x", "a"], ["h"]), n("Mul", ["h", "half"], ["y"])]
    else:
        tail = [n("Mul", ["a", "x"], ["h"]), n("Mul", ["half", "h"], ["y"])]
    shape = [3, 343]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
    if share:
        outs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, shape))
    g = helper.make_graph(scale + body + tail, "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _run(m: Any, feeds: List[np.ndarray], threads: int = 1):
    s = Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(m.SerializeToString()))
    out = [o.numpy() for o in s.run_graph(1, feeds)]
    return out, s.compile_report(1) or ""


def _ort(m: Any, x: np.ndarray) -> List[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})


@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("group", [0, 1, 2])
def test_erf_chain_is_fused_and_matches_onnxruntime(form: int, group: int) -> None:
    m = _chain(form, group)
    x = (np.random.default_rng(form * 3 + group).standard_normal((3, 343)) * 3).astype(np.float32)
    x.flat[0] = -0.0
    (y,), report = _run(m, [x])
    assert "erf-Gelus fused 1" in report, report
    want = gelu64(x)
    assert np.all(np.abs(y.astype(np.float64) - want) <= bound32(x, want))
    (ref,) = _ort(m, x)
    # onnxruntime's float32 kernel has an error of the same kind: each within the bound.
    assert np.all(np.abs(y.astype(np.float64) - ref) <= 2 * bound32(x, want))


def test_erf_chain_with_a_shared_intermediate_is_not_fused() -> None:
    m = _chain(0, 0, share=True)
    x = np.array([[-4.0, -0.5, 0.0, 0.5, 3.0] * 68 + [1.0, 2.0, 3.0]] * 3, np.float32)
    (y, e), report = _run(m, [x])
    assert "erf-Gelus fused 0" in report, report
    np.testing.assert_allclose(e, np.vectorize(math.erf)(x.astype(np.float64) * ONE_OVER_SQRT2),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(y, gelu64(x), rtol=1e-6, atol=1e-6)


def _gelu20(approximate: str) -> Any:
    g = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [17])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [17])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    return m


def test_onnx_gelu_imports_to_gelu_v2_and_exports_back(tmp_path: Any) -> None:
    graph = ge.onnx.load(_gelu20("none").SerializeToString())
    types = [n.type for n in graph.get_direct_nodes()]
    assert "GeluV2" in types and "Erf" not in types, types
    x = sample(17, 5)
    s = Session()
    s.add_graph(1, graph)
    y = s.run_graph(1, [x])[0].numpy()
    want = gelu64(x)
    assert np.all(np.abs(y.astype(np.float64) - want) <= bound32(x, want))
    # Back to ONNX: the formula in opset 18, which onnxruntime runs.
    path = tmp_path / "gelu.onnx"
    ge.onnx.save(graph, str(path))
    exported = onnx.load(str(path))
    assert [n.op_type for n in exported.graph.node].count("Erf") == 1
    (ref,) = _ort(exported, x)
    assert np.all(np.abs(ref.astype(np.float64) - want) <= 2 * bound32(x, want))


def test_tanh_gelu_v2_exports_as_the_tanh_formula(tmp_path: Any) -> None:
    b = GraphBuilder("g")
    h = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[17])
    graph = b.build_and_reset([es.GeluV2(h, approximate="tanh")])
    path = tmp_path / "gelu_tanh.onnx"
    ge.onnx.save(graph, str(path))
    exported = onnx.load(str(path))
    assert "Tanh" in [n.op_type for n in exported.graph.node]
    x = sample(17, 9)
    (ref,) = _ort(exported, x)
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-6)
