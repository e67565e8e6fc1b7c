"""ONNX import of element-wise math, reductions and activations (crates/ge-onnx/src/ops/
elementwise.rs, reduce.rs, norm.rs).

Each case builds a one-node model with onnx.helper, imports it with ge.onnx.load, runs it with a
Session and compares with onnx's ReferenceEvaluator (or numpy)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, node_model, run_ge  # noqa: E402



def model(op, inputs, n_out=1, opset=21, domain="", inits=(), out_types=None, **attrs):
    """A one-node model; `inputs` are (name, array) pairs (array None: an absent input ''),
    `inits` (name, array) initializers used as constant inputs (the node's inputs are `inputs`)."""
    return node_model(op, inputs, inits, node_inputs=[n for n, _ in inputs], n_out=n_out, opset=opset,
                      domain=domain, out_types=out_types, ir_version=9, **attrs)


def check(op, inputs, inits=(), opset=21, domain="", rtol=1e-5, atol=1e-6, **attrs):
    """ge against the ReferenceEvaluator: same dtypes and shapes, floats within the tolerance
    (NaN where NaN), integers equal."""
    m = model(op, inputs, opset=opset, domain=domain, inits=inits, **attrs)
    feeds = {n: a for n, a in inputs if n and a is not None and n not in dict(inits)}
    return check_model(m, feeds, rtol, atol, equal_nan=True)


RNG = np.random.default_rng(0)


def rand(shape, dtype=np.float32, lo=-5, hi=5):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(lo, info.min), min(hi, info.max), size=shape, endpoint=True).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# Binary ops with the unsigned bridges.


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("dt", [np.uint16, np.uint32, np.uint64, np.int8, np.float32])
def test_arith_wraps_like_numpy(op, dt):
    info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
    if info is not None:
        a = np.array([0, 1, info.max, info.max - 3, 7], dtype=dt)
        b = np.array([info.max, 2, 5, info.max, 0], dtype=dt)
    else:
        a, b = rand([5]), rand([5])
    with np.errstate(over="ignore"):
        check(op, [("a", a), ("b", b)])


@pytest.mark.parametrize("op", ["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"])
@pytest.mark.parametrize("dt", [np.uint16, np.uint32, np.uint64])
def test_unsigned_comparisons_are_exact(op, dt):
    big = np.iinfo(dt).max
    a = np.array([0, big, big - 1, 1 << (np.iinfo(dt).bits - 1), 3], dtype=dt)
    b = np.array([big, big, big, 3, 3], dtype=dt)
    check(op, [("a", a), ("b", b)])
    check(op, [("a", b), ("b", a)])


@pytest.mark.parametrize("dt", [np.uint16, np.uint32, np.int32, np.float64])
def test_div(dt):
    a = rand([2, 3], dt, 0 if np.dtype(dt).kind == "u" else -50, 50)
    b = rand([3], dt, 1, 7)
    check("Div", [("a", a), ("b", b)])


def test_uint64_div_is_exact():
    # Beyond int64's range too (property test: tests/onnx/test_translators_a.py).
    a = np.array([1, 2, 2**64 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    b = np.array([1, 3, 2**63 + 5, 7, 1], dtype=np.uint64)
    (y,) = run_ge(model("Div", [("a", a), ("b", b)]), [a, b])
    np.testing.assert_array_equal(y, a // b)


def test_legacy_broadcast_axis():
    a, b = rand([2, 3, 4]), rand([3])
    m = model("Add", [("a", a), ("b", b)], opset=6, broadcast=1, axis=1)
    with pytest.raises(ge.TranslationError, match="legacy broadcast"):
        ge.onnx.load(m.SerializeToString())
    b = rand([4])
    m = model("Add", [("a", a), ("b", b)], opset=6, broadcast=1, axis=2)
    np.testing.assert_allclose(run_ge(m, [a, b])[0], a + b, rtol=1e-6)


# Mod and Pow.


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32])
def test_mod_integers(fmod, dt):
    signed = np.dtype(dt).kind == "i"
    a = rand([12], dt, -30 if signed else 0, 30)
    b = rand([12], dt, 1, 7)
    if signed:
        b = b * np.where(np.arange(12) % 2 == 0, 1, -1).astype(dt)
    check("Mod", [("a", a), ("b", b)], fmod=fmod)


def test_mod_float_fmod():
    a, b = rand([6], np.float32), rand([6], np.float32, 1, 3)
    check("Mod", [("a", a), ("b", b)], fmod=1)


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_uint64_is_exact(fmod):
    a = np.array([1, 2, 2**64 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    b = np.array([1, 3, 2**63 + 5, 7, 2**64 - 2], dtype=np.uint64)
    (y,) = run_ge(model("Mod", [("a", a), ("b", b)], fmod=fmod), [a, b])
    np.testing.assert_array_equal(y, a % b)


@pytest.mark.parametrize(
    "base,exp",
    [
        (np.float32, np.float32),
        (np.float32, np.int64),
        (np.float32, np.uint64),
        (np.float64, np.int32),
        (np.int32, np.float32),
        (np.int64, np.int64),
        (np.int32, np.int64),
        (np.float16, np.float32),
    ],
)
def test_pow_mixed_dtypes(base, exp):
    a = rand([6], base, 1, 4)
    b = rand([6], exp, 0, 3)
    check("Pow", [("a", a), ("b", b)], rtol=1e-3)


# Variadic ops.


@pytest.mark.parametrize("op", ["Max", "Min", "Sum"])
@pytest.mark.parametrize("dt", [np.float32, np.int16, np.uint16, np.uint32, np.uint64, np.int64])
def test_variadic_broadcasting(op, dt):
    lo = 0 if np.dtype(dt).kind == "u" else -9
    xs = [("a", rand([2, 3], dt, lo, 9)), ("b", rand([3], dt, lo, 9)), ("c", rand([2, 1], dt, lo, 9))]
    check(op, xs)
    check(op, xs[:1])


def test_mean():
    check("Mean", [("a", rand([2, 3])), ("b", rand([3])), ("c", rand([1]))])
    with pytest.raises(ge.TranslationError, match="Mean"):
        ge.onnx.load(model("Mean", [("a", rand([2], np.int32)), ("b", rand([2], np.int32))]).SerializeToString())


def test_max_nan_propagates():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    b = np.array([np.nan, 2.0, 1.0], np.float32)
    check("Max", [("a", a), ("b", b)])


# Reductions.

REDUCE = ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(REDUCE),
    axes=st.sampled_from([None, [0], [-1], [0, 2], [1, 0], []]),
    keep=st.sampled_from([0, 1]),
    noop=st.sampled_from([0, 1]),
    dt=st.sampled_from([np.float32, np.float64]),
)
def test_reductions(op, axes, keep, noop, dt):
    x = rand([2, 3, 4], dt, 0.5, 2)
    inits = [] if axes is None else [("axes", np.array(axes, np.int64))]
    inputs = [("x", x)] + ([] if axes is None else [("axes", inits[0][1])])
    check(op, inputs, inits=inits, keepdims=keep, noop_with_empty_axes=noop, rtol=1e-4)


@pytest.mark.parametrize("op", REDUCE)
def test_reductions_old_opset_axes_attribute(op):
    x = rand([2, 3, 4], np.float32, 0.5, 2)
    check(op, [("x", x)], opset=11, axes=[1, -1], keepdims=0, rtol=1e-4)


def test_reduce_axes_at_run_time():
    x = rand([2, 3, 4], np.float32)
    m = model("ReduceSum", [("x", x), ("axes", np.array([1], np.int64))], keepdims=0)
    m.graph.input[1].type.tensor_type.shape.dim[0].dim_param = "n"
    np.testing.assert_allclose(run_ge(m, [x, np.array([1], np.int64)])[0], x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(run_ge(m, [x, np.array([], np.int64)])[0], x.sum(), rtol=1e-5)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_bool_reductions(op):
    x = np.array([[True, False], [True, True], [False, False]])
    check(op, [("x", x), ("axes", np.array([1], np.int64))], inits=[("axes", np.array([1], np.int64))], keepdims=0)
    m = model(op, [("x", x), ("axes", np.array([1], np.int64))], keepdims=1)
    ref = ReferenceEvaluator(m).run(None, {"x": x, "axes": np.array([1], np.int64)})[0]
    np.testing.assert_array_equal(run_ge(m, [x, np.array([1], np.int64)])[0], ref)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceSum", "ReduceProd"])
def test_empty_reductions(op):
    x = np.zeros([2, 0, 4], np.float32)
    check(op, [("x", x), ("axes", np.array([1], np.int64))], inits=[("axes", np.array([1], np.int64))], keepdims=1)


def test_log_sum_exp_double_is_stable():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 1.0]], np.float64)
    m = model("ReduceLogSumExp", [("x", x)], inits=[("axes", np.array([1], np.int64))], keepdims=0)
    m.graph.node[0].input.append("axes")
    got = run_ge(m, [x])[0]
    np.testing.assert_allclose(got, [1000.0 + np.log(2.0), -np.inf, np.inf])


def test_reduce_axes_attribute_in_new_opset_is_an_error():
    x = rand([2, 3])
    with pytest.raises(ge.TranslationError, match="axes as an input"):
        ge.onnx.load(model("ReduceMean", [("x", x)], opset=18, axes=[0]).SerializeToString())


# ArgMax/ArgMin.


@settings(max_examples=20, deadline=None)
@given(
    op=st.sampled_from(["ArgMax", "ArgMin"]),
    axis=st.integers(-3, 2),
    keep=st.sampled_from([0, 1]),
    last=st.sampled_from([0, 1]),
)
def test_arg(op, axis, keep, last):
    x = RNG.integers(0, 3, size=[2, 3, 4]).astype(np.float32)  # many ties
    check(op, [("x", x)], axis=axis, keepdims=keep, select_last_index=last)


# Softmax family.


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_family(op, opset, axis):
    x = rand([2, 3, 4], np.float32)
    if op == "Hardmax":
        x = RNG.integers(0, 3, size=[2, 3, 4]).astype(np.float32)
    if opset >= 13:
        check(op, [("x", x)], opset=opset, axis=axis)
        return
    # Opsets < 13 coerce the input to 2-D at axis (the reference evaluator does not).
    a = axis % 3
    x2 = x.reshape(int(np.prod(x.shape[:a])), -1)
    e = np.exp(x2 - x2.max(1, keepdims=True))
    want = {
        "Softmax": e / e.sum(1, keepdims=True),
        "LogSoftmax": np.log(e / e.sum(1, keepdims=True)),
        "Hardmax": np.eye(x2.shape[1], dtype=np.float32)[x2.argmax(1)],
    }[op].reshape(x.shape)
    got = run_ge(model(op, [("x", x)], opset=opset, axis=axis), [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# Clip.


@pytest.mark.parametrize("dt", [np.float32, np.int8, np.uint32, np.float64])
@pytest.mark.parametrize("which", ["both", "min", "max", "none", "swapped"])
def test_clip(dt, which):
    x = rand([8], dt, 0 if np.dtype(dt).kind == "u" else -9, 9)
    lo, hi = np.array(2, dt), np.array(5, dt)
    if which == "swapped":
        lo, hi = hi, lo
    ins = [("x", x), ("lo", lo if which != "max" else None), ("hi", hi if which != "min" else None)]
    if which == "none":
        ins = [("x", x)]
    ins = [(n if a is not None else "", a) for n, a in ins]
    inits = [(n, a) for n, a in ins[1:] if n]
    check("Clip", ins, inits=inits)


def test_clip_keeps_infinities():
    x = np.array([-np.inf, 1.0, np.inf], np.float32)
    check("Clip", [("x", x)])
    check("Clip", [("x", x)], opset=6, min=-1.0)


# Element-wise logic and activations.


def test_xor_isinf():
    a, b = RNG.integers(0, 2, [3, 4]).astype(bool), RNG.integers(0, 2, [4]).astype(bool)
    check("Xor", [("a", a), ("b", b)])
    x = np.array([-np.inf, np.inf, 0.0, np.nan, 1.0], np.float32)
    for pos in (0, 1):
        for neg in (0, 1):
            check("IsInf", [("x", x)], detect_positive=pos, detect_negative=neg)


@pytest.mark.parametrize(
    "op,attrs",
    [
        ("Selu", {}),
        ("Selu", {"alpha": 2.0, "gamma": 3.0}),
        ("Celu", {"alpha": 2.0}),
        ("Gelu", {}),
        ("Gelu", {"approximate": "tanh"}),
        ("Shrink", {"bias": 1.5, "lambd": 1.0}),
        ("ThresholdedRelu", {"alpha": 0.5}),
        ("HardSwish", {}),
        ("Round", {}),
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_activations(op, attrs, dt):
    x = rand([3, 4], dt, -4, 4)
    if op == "Round":
        x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, 0.6], dt)
    if op == "Celu" and dt == np.float64:
        pytest.skip("Celu is float32 only in ONNX")
    check(op, [("x", x)], rtol=1e-4, atol=1e-5, **attrs)


def test_shrink_int():
    x = np.arange(-5, 6, dtype=np.int32)
    check("Shrink", [("x", x)], bias=1.0, lambd=1.5)
    with pytest.raises(ge.TranslationError, match="Shrink"):
        ge.onnx.load(model("Shrink", [("x", x)], bias=0.5).SerializeToString())


def test_gelu_bad_approximate():
    with pytest.raises(ge.TranslationError, match="approximate"):
        ge.onnx.load(model("Gelu", [("x", rand([2]))], approximate="fast").SerializeToString())


@pytest.mark.parametrize("slope_shape", [[1], [3, 1], [4], [2, 3, 4]])
def test_prelu(slope_shape):
    check("PRelu", [("x", rand([2, 3, 4])), ("s", rand(slope_shape))])


def test_prelu_opset6_slope_is_per_channel():
    x, s = rand([2, 3, 4, 5]), rand([3])
    got = run_ge(model("PRelu", [("x", x), ("s", s)], opset=6), [x, s])[0]
    np.testing.assert_allclose(got, np.where(x < 0, x * s[:, None, None], x), rtol=1e-6)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dt", [np.uint8, np.uint32, np.uint64])
def test_bit_shift(direction, dt):
    x = rand([5], dt, 0, 200)
    s = np.array([0, 1, 2, 3, 7], dt)
    check("BitShift", [("x", x), ("s", s)], direction=direction)


def test_bit_cast():
    x = rand([2, 3], np.float32)
    m = model("BitCast", [("x", x)], opset=26, to=TensorProto.INT32)
    np.testing.assert_array_equal(run_ge(m, [x])[0], x.view(np.int32))
    m = model("BitCast", [("x", x)], opset=26, to=TensorProto.INT16)
    with pytest.raises(ge.TranslationError, match="bit widths"):
        ge.onnx.load(m.SerializeToString())


@pytest.mark.parametrize(
    "eq,shapes",
    [
        ("ij,jk->ik", [[2, 3], [3, 4]]),
        ("bij,bjk->bik", [[2, 2, 3], [2, 3, 4]]),
        ("i,i", [[5], [5]]),
        ("ij->ji", [[2, 3]]),
        ("ij->", [[2, 3]]),
        ("...ii->...i", [[2, 3, 3]]),
        ("ii", [[3, 3]]),
        ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
        ("...j,j", [[2, 3], [3]]),
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_einsum(eq, shapes, dt):
    ins = [(f"x{i}", rand(s, dt)) for i, s in enumerate(shapes)]
    check("Einsum", ins, equation=eq, rtol=1e-4, atol=1e-5)


def test_einsum_int64_and_refused_dtypes():
    check("Einsum", [("x", rand([2, 3], np.int64)), ("y", rand([3], np.int64))], equation="ij,j->i")
    x = rand([2, 2], np.uint32, 0, 9)
    with pytest.raises(ge.TranslationError, match="Einsum"):
        ge.onnx.load(model("Einsum", [("x", x)], equation="ij->ji").SerializeToString())


def test_swiglu_mvn_lpnorm():
    a, b = rand([2, 3]), rand([2, 3])
    m = model("SwiGLU", [("a", a), ("b", b)], opset=28, alpha=1.5)
    want = a / (1 + np.exp(-1.5 * a)) * b
    np.testing.assert_allclose(run_ge(m, [a, b])[0], want, rtol=1e-5)
    check("MeanVarianceNormalization", [("x", rand([2, 3, 4, 5]))], rtol=1e-4, atol=1e-5)
    check("MeanVarianceNormalization", [("x", rand([2, 3, 4]))], axes=[1], rtol=1e-4, atol=1e-5)
    # Positive x: the reference evaluator's p=1 leaves out the absolute value.
    for p in (1, 2):
        check("LpNormalization", [("x", rand([3, 4], lo=0.1))], p=p, axis=0)
    x = np.array([[0.0, 1.0], [0.0, -2.0]], np.float32)
    check("LpNormalization", [("x", x)], p=2, axis=0)
    with pytest.raises(ge.TranslationError, match="p must be"):
        ge.onnx.load(model("LpNormalization", [("x", rand([3]))], p=3).SerializeToString())


@pytest.mark.parametrize("op", ["BlackmanWindow", "HammingWindow", "HannWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("out", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_windows(op, periodic, out):
    size = np.array(10, np.int32)
    check(op, [("n", size)], opset=17, periodic=periodic, output_datatype=out, atol=1e-6)


def test_unknown_attribute_is_an_error():
    with pytest.raises(ge.TranslationError, match="attribute 'bogus'"):
        ge.onnx.load(model("Softmax", [("x", rand([2]))], bogus=1).SerializeToString())


# Random ops: by distribution.


def test_bernoulli_distribution():
    p = np.full([20000], 0.3, np.float32)
    m = model("Bernoulli", [("p", p)], opset=15, seed=1.0)
    y = run_ge(m, [p])[0]
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 1.0}
    assert abs(y.mean() - 0.3) < 0.02
    m = model("Bernoulli", [("p", p)], opset=15, dtype=TensorProto.INT32)
    assert run_ge(m, [p])[0].dtype == np.int32


def test_random_uniform_like_distribution():
    x = np.zeros([20000], np.float32)
    m = model("RandomUniformLike", [("x", x)], opset=15, low=2.0, high=5.0, dtype=TensorProto.DOUBLE)
    y = run_ge(m, [x])[0]
    assert y.dtype == np.float64 and y.shape == x.shape
    assert y.min() >= 2.0 and y.max() < 5.0
    assert abs(y.mean() - 3.5) < 0.05 and abs(y.std() - 3 / np.sqrt(12)) < 0.05


# ai.onnx.ml.


def test_binarizer_and_array_feature_extractor():
    x = rand([3, 4], np.float32)
    check("Binarizer", [("x", x)], domain="ai.onnx.ml", threshold=0.5)
    idx = np.array([3, 0, 3], np.int64)
    check("ArrayFeatureExtractor", [("x", x), ("i", idx)], domain="ai.onnx.ml")
    check("ArrayFeatureExtractor", [("x", rand([5], np.int64)), ("i", idx[None])], domain="ai.onnx.ml")


# DFT and MelWeightMatrix.


def _np_dft(x, length, axis, inverse, onesided):
    c = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    if inverse and onesided:
        return np.fft.irfft(c, n=length, axis=axis)[..., None]
    y = (np.fft.ifft if inverse else np.fft.fft)(c, n=length, axis=axis)
    if onesided:
        y = np.take(y, np.arange(length // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], -1)


@pytest.mark.parametrize(
    "shape,axis,length,inverse,onesided",
    [
        ([2, 8, 1], 1, None, 0, 0),
        ([2, 8, 2], 1, None, 0, 0),
        ([2, 8, 3, 1], 1, 6, 0, 1),
        ([2, 5, 3, 2], -3, 9, 0, 0),
        ([2, 8, 2], 1, None, 1, 0),
        ([2, 5, 2], 1, 8, 1, 1),
        ([2, 5, 2], 1, 7, 1, 1),
        ([3, 4, 2], 0, None, 0, 0),
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_dft(shape, axis, length, inverse, onesided, dt):
    x = rand(shape, dt)
    ins = [("x", x)]
    inits = [("axis", np.array(axis, np.int64))]
    if length is not None:
        inits.append(("len", np.array(length, np.int64)))
    ins += [("len" if length is not None else "", None if length is None else inits[-1][1]), ("axis", inits[0][1])]
    m = model("DFT", ins, opset=20, inits=inits, inverse=inverse, onesided=onesided)
    got = run_ge(m, [x])[0]
    n = length if length is not None else (2 * (shape[axis] - 1) if inverse and onesided else shape[axis])
    want = _np_dft(x.astype(np.float64), n, axis % len(shape), inverse, onesided)
    assert got.dtype == dt and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # Opset 19: axis is an attribute.
    m = model("DFT", ins[:2], opset=19, inits=inits[1:], axis=axis, inverse=inverse, onesided=onesided)
    np.testing.assert_allclose(run_ge(m, [x])[0], want, rtol=1e-4, atol=1e-4)


def test_dft_errors():
    x = rand([2, 8, 1])
    m = model("DFT", [("x", x), ("", None), ("axis", np.array(2, np.int64))], opset=20,
              inits=[("axis", np.array(2, np.int64))])
    with pytest.raises(ge.TranslationError, match="last"):
        ge.onnx.load(m.SerializeToString())
    # A run-time axis is translated (moved into place at run time).
    m = model("DFT", [("x", x), ("", None), ("axis", np.array(1, np.int64))], opset=20)
    got = run_ge(m, [x, np.array(1, np.int64)])[0]
    np.testing.assert_allclose(got, _np_dft(x.astype(np.float64), 8, 1, 0, 0), rtol=1e-4, atol=1e-4)


def test_mel_weight_matrix():
    vals = [("bins", np.array(8, np.int64)), ("dft", np.array(16, np.int64)), ("rate", np.array(8192, np.int64)),
            ("lo", np.array(0.0, np.float32)), ("hi", np.array(2048.0, np.float32))]
    m = model("MelWeightMatrix", vals, opset=17, inits=vals)
    got = run_ge(m, [])[0]
    want = ReferenceEvaluator(m).run(None, {})[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # Run-time inputs are translated (composed at run time).
    m = model("MelWeightMatrix", vals, opset=17, inits=vals[1:])
    got = run_ge(m, [vals[0][1]])[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
