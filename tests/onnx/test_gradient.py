"""ONNX Gradient (ai.onnx.preview.training): reverse-mode differentiation at import.

Each model is a forward graph plus one Gradient node; ge's gradients (of sum(y)) are compared with
central finite differences of the same forward graph in float64 (onnx's ReferenceEvaluator) and,
for every supported op, with the analytic derivative written in numpy. Also: broadcasting
(gradients summed over the broadcast axes), a small MLP, gradients at fed values (Gradient inputs
that are not the named tensors), symbolic batch dims, an xs value y does not depend on (zeros),
and the op without a rule (a clear "not supported" at import)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import pytest

onnx = pytest.importorskip("onnx")

import ge  # noqa: E402
import ge.errors  # noqa: E402
import ge.onnx  # noqa: E402
import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from onnx_harness import run_graph  # noqa: E402

TRAINING = "ai.onnx.preview.training"
NP2ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE}


def _vi(name: str, a: np.ndarray, shape: Optional[Sequence[Any]] = None) -> Any:
    return helper.make_tensor_value_info(name, NP2ONNX[a.dtype], list(a.shape if shape is None else shape))


def _model(nodes: Sequence[Any], feeds: Mapping[str, np.ndarray], outputs: Sequence[str],
           inits: Mapping[str, np.ndarray] = {}, shapes: Mapping[str, Sequence[Any]] = {}) -> Any:
    g = helper.make_graph(
        list(nodes), "g", [_vi(n, a, shapes.get(n)) for n, a in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(g, ir_version=8, opset_imports=[helper.make_opsetid("", 17),
                                                             helper.make_opsetid(TRAINING, 1)])


def gradient_node(xs: Sequence[str], y: str, zs: Sequence[str] = (), inputs: Optional[Sequence[str]] = None,
                  outputs: Optional[Sequence[str]] = None) -> Any:
    kw: Dict[str, Any] = {"xs": list(xs), "y": y}
    if zs:
        kw["zs"] = list(zs)
    return helper.make_node("Gradient", list(inputs or [*xs, *zs]), list(outputs or [f"d_{x}" for x in xs]),
                            name="grad", domain=TRAINING, **kw)


def ge_gradients(nodes: Sequence[Any], feeds: Mapping[str, np.ndarray], xs: Sequence[str], y: str,
                 inits: Mapping[str, np.ndarray] = {}, shapes: Mapping[str, Sequence[Any]] = {}) -> List[np.ndarray]:
    """ge's [y, dy/dx for x in xs] of the forward ``nodes`` with one Gradient node after them."""
    m = _model([*nodes, gradient_node(xs, y)], feeds, [y, *[f"d_{x}" for x in xs]], inits, shapes)
    return run_graph(ge.onnx.load(m.SerializeToString()), list(feeds.values()))


def numeric_gradients(nodes: Sequence[Any], feeds: Mapping[str, np.ndarray], xs: Sequence[str], y: str,
                      inits: Mapping[str, np.ndarray] = {}, eps: float = 1e-6) -> List[np.ndarray]:
    """Central differences of sum(y) in float64 (onnx's ReferenceEvaluator on the forward graph,
    every value, initializers included, fed as an input)."""
    vals = {n: np.array(a, dtype=np.float64 if a.dtype.kind == "f" else a.dtype)
            for n, a in {**feeds, **inits}.items()}
    g = helper.make_graph(list(nodes), "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                                          list(a.shape)) for n, a in vals.items()],
                          [helper.make_tensor_value_info(y, TensorProto.UNDEFINED, None)])
    ev = ReferenceEvaluator(helper.make_model(g, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]))

    def f(v: Dict[str, np.ndarray]) -> float:
        return float(np.sum(ev.run(None, v)[0]))

    out = []
    for x in xs:
        d = np.zeros_like(vals[x])
        for i in np.ndindex(*vals[x].shape):
            v = {k: np.array(a) for k, a in vals.items()}
            v[x][i] += eps
            hi = f(v)
            v[x][i] -= 2 * eps
            d[i] = (hi - f(v)) / (2 * eps)
        out.append(d)
    return out


def check(nodes: Sequence[Any], feeds: Mapping[str, np.ndarray], xs: Sequence[str], y: str = "y",
          inits: Mapping[str, np.ndarray] = {}, analytic: Optional[Sequence[np.ndarray]] = None,
          rtol: float = 2e-3, atol: float = 2e-4, eps: float = 1e-6) -> List[np.ndarray]:
    """ge's gradients against finite differences (step ``eps``) and (when given) the analytic
    ones; each has its x's shape and dtype."""
    got = ge_gradients(nodes, feeds, xs, y, inits)
    grads = got[1:]
    vals = {**feeds, **inits}
    for x, g in zip(xs, grads):
        assert g.shape == vals[x].shape, (x, g.shape, vals[x].shape)
        assert g.dtype == vals[x].dtype, (x, g.dtype)
    for x, g, n in zip(xs, grads, numeric_gradients(nodes, feeds, xs, y, inits, eps)):
        np.testing.assert_allclose(g, n, rtol=rtol, atol=atol, err_msg=f"d{y}/d{x} against finite differences")
    if analytic is not None:
        for x, g, a in zip(xs, grads, analytic):
            np.testing.assert_allclose(g, a, rtol=1e-5, atol=1e-6, err_msg=f"d{y}/d{x} against the analytic one")
    return got


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def f32(*shape: int, seed: int = 0, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return np.asarray(rng(seed).uniform(low, high, shape), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# The conformance cases
# ---------------------------------------------------------------------------------------------


def test_gradient_of_add_and_mul_as_onnx_tests_it() -> None:
    a, b = np.array(1.0, np.float32), np.array(2.0, np.float32)
    nodes = [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Mul", ["c", "a"], ["y"])]
    got = check(nodes, {"a": a, "b": b}, ["a", "b"],
                analytic=[np.float32(2 * a + b), a])
    np.testing.assert_allclose(got[0], a * (a + b))


# ---------------------------------------------------------------------------------------------
# Unary ops
# ---------------------------------------------------------------------------------------------

def _sig(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


UNARY: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Identity": lambda x: np.ones_like(x),
    "Neg": lambda x: -np.ones_like(x),
    "Exp": np.exp,
    "Log": lambda x: 1 / x,
    "Sqrt": lambda x: 0.5 / np.sqrt(x),
    "Reciprocal": lambda x: -1 / (x * x),
    "Abs": np.sign,
    "Relu": lambda x: (x > 0).astype(x.dtype),
    "Sigmoid": lambda x: _sig(x) * (1 - _sig(x)),
    "Tanh": lambda x: 1 - np.tanh(x) ** 2,
    "Softplus": _sig,
    "Erf": lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x),
    "Sin": np.cos,
    "Cos": lambda x: -np.sin(x),
    "Floor": np.zeros_like,
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_op_gradient(op: str) -> None:
    # Away from 0 (Relu, Abs) and from integers (Floor), positive where the op needs it.
    x = rng(1).uniform(0.3, 1.7, (2, 3)).astype(np.float32) * np.array([1, -1, 1], np.float32)
    x = x + np.float32(0.05)
    if op in ("Log", "Sqrt"):
        x = np.abs(x)
    # onnx's reference computes Erf in float32: a wider step for its differences.
    check([helper.make_node(op, ["x"], ["y"])], {"x": x}, ["x"], analytic=[UNARY[op](x).astype(np.float32)],
          eps=1e-2 if op == "Erf" else 1e-6)


def test_leaky_relu_and_cast_and_double() -> None:
    x = np.array([[-1.5, 0.5], [2.0, -0.25]], np.float32)
    check([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], {"x": x}, ["x"],
          analytic=[np.where(x > 0, 1, 0.1).astype(np.float32)])
    # Cast to double and back: the gradient comes back in x's dtype.
    nodes = [helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
             helper.make_node("Mul", ["d", "d"], ["y"])]
    check(nodes, {"x": x}, ["x"], analytic=[2 * x])
    # A float64 graph.
    xd = x.astype(np.float64)
    got = check([helper.make_node("Tanh", ["x"], ["y"])], {"x": xd}, ["x"])
    np.testing.assert_allclose(got[1], 1 - np.tanh(xd) ** 2, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Binary ops and broadcasting
# ---------------------------------------------------------------------------------------------

def _unb(g: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The analytic rule for a broadcast operand: the sum over the broadcast axes."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


BINARY: Dict[str, Callable[[np.ndarray, np.ndarray], Sequence[np.ndarray]]] = {
    "Add": lambda a, b: (np.ones_like(a + b), np.ones_like(a + b)),
    "Sub": lambda a, b: (np.ones_like(a - b), -np.ones_like(a - b)),
    "Mul": lambda a, b: (b + 0 * a, a + 0 * b),
    "Div": lambda a, b: (1 / b + 0 * a, -a / (b * b)),
    "Pow": lambda a, b: (b * a ** (b - 1), a ** b * np.log(a)),
    "Max": lambda a, b: ((a >= b).astype(a.dtype), (a < b).astype(a.dtype)),
    "Min": lambda a, b: ((a <= b).astype(a.dtype), (a > b).astype(a.dtype)),
}
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((3, 1), (1, 4))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_gradient_with_broadcasting(op: str, shapes: Any) -> None:
    sa, sb = shapes
    a = f32(*sa, seed=2, low=0.5, high=1.5)
    b = f32(*sb, seed=3, low=0.5, high=1.5)
    if op != "Pow":
        a = a * np.float32(1.7)  # no ties for Max/Min
    ga, gb = BINARY[op](a.astype(np.float64), b.astype(np.float64))
    want = [_unb(np.broadcast_to(ga, np.broadcast_shapes(sa, sb)), sa).astype(np.float32),
            _unb(np.broadcast_to(gb, np.broadcast_shapes(sa, sb)), sb).astype(np.float32)]
    got = check([helper.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b}, ["a", "b"])
    for g, w in zip(got[1:], want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_pow_by_a_constant_exponent() -> None:
    x = f32(2, 3, low=0.5, high=2.0)
    for e in (3.0, 0.5, -1.0):
        check([helper.make_node("Pow", ["x", "e"], ["y"])], {"x": x}, ["x"],
              inits={"e": np.array(e, np.float32)}, analytic=[(e * x ** (e - 1)).astype(np.float32)])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=3),
       st.lists(st.booleans(), min_size=3, max_size=3), st.integers(0, 2))
def test_broadcast_gradient_has_the_operand_shape_and_sums(dims: List[int], ones: List[bool], drop: int) -> None:
    # b is a broadcastable version of a's shape: some dims set to 1, some leading ones dropped.
    sa = tuple(dims)
    sb = tuple(1 if o else d for d, o in zip(sa, ones))[min(drop, len(sa)):]
    a, b = f32(*sa, seed=4), f32(*sb, seed=5)
    got = ge_gradients([helper.make_node("Mul", ["a", "b"], ["y"])], {"a": a, "b": b}, ["a", "b"], "y")
    assert got[1].shape == sa and got[2].shape == sb
    np.testing.assert_allclose(got[1], np.broadcast_to(b, np.broadcast_shapes(sa, sb)), rtol=1e-6)
    np.testing.assert_allclose(got[2], _unb(np.broadcast_to(a, np.broadcast_shapes(sa, sb)), sb), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 2, 3, 4), (4, 5)),
                                   ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 5)),
                                   ((3, 4), (4,))], ids=str)
def test_matmul_gradient(sa: Any, sb: Any) -> None:
    a, b = f32(*sa, seed=6), f32(*sb, seed=7)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # d sum(a @ b)/da = ones @ b^T, reduced to a's shape (numpy's rules for 1-D operands).
    A = a64 if a.ndim > 1 else a64[None, :]
    B = b64 if b.ndim > 1 else b64[:, None]
    ones = np.ones(np.matmul(A, B).shape)
    ga = _unb(ones @ np.swapaxes(B, -1, -2), A.shape).reshape(sa)
    gb = _unb(np.swapaxes(A, -1, -2) @ ones, B.shape).reshape(sb)
    check([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, ["a", "b"],
          analytic=[ga.astype(np.float32), gb.astype(np.float32)])


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm_gradient(ta: int, tb: int) -> None:
    a = f32(*((4, 3) if ta else (3, 4)), seed=8)
    b = f32(*((5, 4) if tb else (4, 5)), seed=9)
    c = f32(5, seed=10)
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"], alpha=0.5, beta=2.0, transA=ta, transB=tb),
             helper.make_node("Mul", ["g", "g"], ["y"])]
    A, B = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    gout = 2 * (0.5 * A @ B + 2.0 * c)
    ga, gb = 0.5 * gout @ B.T, 0.5 * A.T @ gout
    check(nodes, {"a": a, "b": b, "c": c}, ["a", "b", "c"],
          analytic=[(ga.T if ta else ga).astype(np.float32), (gb.T if tb else gb).astype(np.float32),
                    (2.0 * gout.sum(0)).astype(np.float32)])


def test_mlp_gradients_of_every_parameter() -> None:
    """MatMul + Add + Relu, twice, then ReduceSum of the squares: the gradients of the weights and
    biases (initializers named in xs) against numpy backpropagation."""
    x = f32(4, 3, seed=11)
    w1, b1 = f32(3, 5, seed=12), f32(5, seed=13, low=-0.2, high=0.2)
    w2, b2 = f32(5, 2, seed=14), f32(2, seed=15)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h"]), helper.make_node("MatMul", ["h", "w2"], ["o0"]),
             helper.make_node("Add", ["o0", "b2"], ["o"]), helper.make_node("Mul", ["o", "o"], ["sq"]),
             helper.make_node("ReduceSum", ["sq"], ["y"], keepdims=0)]
    X, W1, B1, W2, B2 = (v.astype(np.float64) for v in (x, w1, b1, w2, b2))
    h1 = X @ W1 + B1
    h = np.maximum(h1, 0)
    o = h @ W2 + B2
    go = 2 * o
    gw2, gb2 = h.T @ go, go.sum(0)
    gh1 = (go @ W2.T) * (h1 > 0)
    gw1, gb1 = X.T @ gh1, gh1.sum(0)
    inits = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    got = check(nodes, {"x": x}, ["w1", "b1", "w2", "b2"], inits=inits,
                analytic=[g.astype(np.float32) for g in (gw1, gb1, gw2, gb2)])
    np.testing.assert_allclose(got[0], np.sum(o * o), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Shape ops, reductions, softmax
# ---------------------------------------------------------------------------------------------

def test_shape_ops_gradients() -> None:
    x = f32(2, 3, 4, seed=16)
    s = np.array([4, 3, 2], np.int64)
    ax = np.array([1], np.int64)
    # Each shape op is followed by a Mul by a weight w so that the gradient is not all ones.
    cases = [
        ([helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1])], (4, 2, 3), {}),
        ([helper.make_node("Reshape", ["x", "s"], ["t"])], (4, 3, 2), {"s": s}),
        ([helper.make_node("Flatten", ["x"], ["t"], axis=2)], (6, 4), {}),
        ([helper.make_node("Unsqueeze", ["x", "ax"], ["u"]), helper.make_node("Squeeze", ["u", "ax"], ["q"]),
          helper.make_node("Transpose", ["q"], ["t"], perm=[2, 1, 0])], (4, 3, 2), {"ax": ax}),
        ([helper.make_node("Identity", ["x"], ["t"])], (2, 3, 4), {}),
    ]
    for k, (nodes, wshape, inits) in enumerate(cases):
        check([*nodes, helper.make_node("Mul", ["t", "w"], ["y"])], {"x": x}, ["x"],
              inits={**inits, "w": f32(*wshape, seed=17 + k)})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("axes,keep", [([1], 0), ([0, 2], 1), ([-1], 0), (None, 0)])
def test_reduction_gradients(op: str, axes: Any, keep: int) -> None:
    x = f32(2, 3, 4, seed=19)
    ax = tuple(axes) if axes is not None else None
    w = f32(*np.sum(x, axis=ax, keepdims=bool(keep)).shape, seed=20)
    inits: Dict[str, np.ndarray] = {"w": w}
    if axes is None:
        red = helper.make_node(op, ["x"], ["r"], keepdims=keep)
    elif op == "ReduceSum":  # axes an input since opset 13, an attribute of ReduceMean until 18
        red = helper.make_node(op, ["x", "axes"], ["r"], keepdims=keep)
        inits["axes"] = np.array(axes, np.int64)
    else:
        red = helper.make_node(op, ["x"], ["r"], keepdims=keep, axes=axes)
    kept = np.sum(x, axis=ax, keepdims=True).shape
    n = x.size // int(np.prod(kept))
    want = np.broadcast_to(w.reshape(kept), x.shape) / (n if op == "ReduceMean" else 1)
    check([red, helper.make_node("Mul", ["r", "w"], ["y"])], {"x": x}, ["x"], inits=inits,
          analytic=[want.astype(np.float32)])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_gradients(op: str, axis: int) -> None:
    x, w = f32(3, 4, seed=21), f32(3, 4, seed=22)
    nodes = [helper.make_node(op, ["x"], ["s"], axis=axis), helper.make_node("Mul", ["s", "w"], ["y"])]
    X = x.astype(np.float64)
    e = np.exp(X - X.max(axis, keepdims=True))
    p = e / e.sum(axis, keepdims=True)
    if op == "Softmax":
        want = p * (w - np.sum(w * p, axis, keepdims=True))
    else:
        want = w - p * np.sum(w, axis, keepdims=True)
    check(nodes, {"x": x}, ["x"], inits={"w": w}, analytic=[want.astype(np.float32)])


def test_concat_expand_where_clip_gradients() -> None:
    a, b = f32(2, 3, seed=23), f32(2, 2, seed=24)
    w = f32(2, 5, seed=25)
    check([helper.make_node("Concat", ["a", "b"], ["c"], axis=1), helper.make_node("Mul", ["c", "w"], ["y"])],
          {"a": a, "b": b}, ["a", "b"], inits={"w": w}, analytic=[w[:, :3], w[:, 3:]])
    v = f32(3, 1, seed=26)
    check([helper.make_node("Expand", ["v", "s"], ["e"]), helper.make_node("Mul", ["e", "e"], ["y"])],
          {"v": v}, ["v"], inits={"s": np.array([2, 3, 4], np.int64)}, analytic=[(2 * v * 8).astype(np.float32)])
    c = np.array([[True, False, True], [False, True, False]])
    p, q = f32(2, 3, seed=27), f32(3, seed=28)
    check([helper.make_node("Where", ["c", "p", "q"], ["y"])], {"p": p, "q": q}, ["p", "q"],
          inits={"c": c}, analytic=[c.astype(np.float32), (~c).sum(0).astype(np.float32)])
    x = np.array([[-2.0, -0.5, 0.3], [0.7, 1.5, -0.9]], np.float32)
    check([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": x}, ["x"],
          inits={"lo": np.array(-1.0, np.float32), "hi": np.array(1.0, np.float32)},
          analytic=[((x >= -1) & (x <= 1)).astype(np.float32)])


# ---------------------------------------------------------------------------------------------
# The Gradient node itself: fed values, zs, unrelated xs, tensor y, symbolic dims, errors
# ---------------------------------------------------------------------------------------------

def _run(m: Any, feeds: Sequence[np.ndarray]) -> List[np.ndarray]:
    return run_graph(ge.onnx.load(m.SerializeToString()), list(feeds))


def test_gradient_at_fed_values_of_an_intermediate_and_with_zs() -> None:
    """Gradient(xs=["h"], zs=["b"], y="y") fed h1 and b1: y = h * h * b is rebuilt at (h1, b1)."""
    a, b, h1, b1 = f32(3, seed=29), f32(3, seed=30), f32(3, seed=31), f32(3, seed=32)
    nodes = [helper.make_node("Mul", ["a", "b"], ["h"]), helper.make_node("Mul", ["h", "h"], ["hh"]),
             helper.make_node("Mul", ["hh", "b"], ["y"]),
             gradient_node(["h"], "y", zs=["b"], inputs=["h1", "b1"], outputs=["dh"]),
             gradient_node(["h"], "y", zs=["b"], outputs=["dh_here"])]
    nodes[-1].name = "grad2"
    feeds = {"a": a, "b": b, "h1": h1, "b1": b1}
    m = _model(nodes, feeds, ["y", "dh", "dh_here"])
    y, dh, dh_here = _run(m, feeds.values())
    np.testing.assert_allclose(y, (a * b) ** 2 * b, rtol=1e-5)
    np.testing.assert_allclose(dh, 2 * h1 * b1, rtol=1e-5)
    np.testing.assert_allclose(dh_here, 2 * (a * b) * b, rtol=1e-5)


def test_unrelated_x_gets_zeros_and_tensor_y_gives_gradient_of_its_sum() -> None:
    a, b = f32(2, 3, seed=33), f32(4, seed=34)
    m = _model([helper.make_node("Exp", ["a"], ["y"]), gradient_node(["a", "b", "y"], "y")],
               {"a": a, "b": b}, ["d_a", "d_b", "d_y"])
    da, db, dy = _run(m, [a, b])
    np.testing.assert_allclose(da, np.exp(a), rtol=1e-6)
    np.testing.assert_array_equal(db, np.zeros((4,), np.float32))
    np.testing.assert_array_equal(dy, np.ones((2, 3), np.float32))


def test_symbolic_batch_dim() -> None:
    """x [N, 3] + b [3], then Mul by x: db sums over the batch, at two batch sizes."""
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"]),
             gradient_node(["x", "b"], "y")]
    x0, b = f32(2, 3, seed=35), f32(3, seed=36)
    m = _model(nodes, {"x": x0, "b": b}, ["d_x", "d_b"], shapes={"x": ["N", 3], "b": [3]})
    g = ge.onnx.load(m.SerializeToString())
    for n in (1, 5):
        x = f32(n, 3, seed=n)
        dx, db = run_graph(g, [x, b])
        np.testing.assert_allclose(dx, 2 * x + b, rtol=1e-5)
        np.testing.assert_allclose(db, x.sum(0), rtol=1e-5)
    # Symbolic on both sides: which dims broadcast is decided when it runs.
    m = _model(nodes, {"x": x0, "b": b}, ["d_x", "d_b"], shapes={"x": ["N", "C"], "b": ["C"]})
    g = ge.onnx.load(m.SerializeToString())
    x = f32(4, 3, seed=37)
    dx, db = run_graph(g, [x, b])
    np.testing.assert_allclose(db, x.sum(0), rtol=1e-5)
    bb = f32(1, seed=38)
    dx, db = run_graph(g, [x, bb])
    np.testing.assert_allclose(db, [x.sum()], rtol=1e-5)


def test_op_without_a_rule_is_refused_at_import() -> None:
    x = f32(3, seed=39)
    m = _model([helper.make_node("Atan", ["x"], ["t"], name="my_atan"), helper.make_node("Relu", ["t"], ["y"]),
                gradient_node(["x"], "y")], {"x": x}, ["d_x"])
    with pytest.raises(ge.errors.TranslationError, match=r"not supported: .*Gradient through Atan \(node 'my_atan'\)"):
        ge.onnx.load(m.SerializeToString())
    # Not on the path from x to y: no rule needed.
    m = _model([helper.make_node("Atan", ["c"], ["t"]), helper.make_node("Mul", ["t", "x"], ["y"]),
                gradient_node(["x"], "y")], {"x": x}, ["d_x"], inits={"c": np.float32(0.5) + x * 0})
    (dx,) = _run(m, [x])
    np.testing.assert_allclose(dx, np.arctan(0.5) + 0 * x, rtol=1e-6)


def test_malformed_gradient_nodes() -> None:
    x = f32(3, seed=40)
    bad = helper.make_node("Gradient", ["x"], ["d"], domain=TRAINING, y="x")
    with pytest.raises(ge.errors.TranslationError, match="'xs'"):
        ge.onnx.load(_model([bad], {"x": x}, ["d"]).SerializeToString())
    bad = helper.make_node("Gradient", ["x", "x"], ["d"], domain=TRAINING, xs=["x"], y="x")
    with pytest.raises(ge.errors.TranslationError, match="expected 1 inputs"):
        ge.onnx.load(_model([bad], {"x": x}, ["d"]).SerializeToString())
    bad = helper.make_node("Gradient", ["x"], ["d"], domain=TRAINING, xs=["x"], y="nowhere")
    with pytest.raises(ge.errors.TranslationError, match="nowhere"):
        ge.onnx.load(_model([bad], {"x": x}, ["d"]).SerializeToString())
