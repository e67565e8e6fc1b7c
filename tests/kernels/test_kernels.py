"""The CPU kernels against numpy.

Every kernel registered in crates/ge-runtime/src/kernels/{elementwise,shape,matmul,reduce}.rs is
run here (``test_every_kernel_of_the_four_files_is_tested`` reads the registries from the sources
and fails when one is missing), over every dtype its operator's prototype allows that the CPU
backend has (read from ``ge.ops.get_op``: f64, f32, f16, bf16, int8..int64, uint8..uint64, bool).
Each case builds a one-op graph with ``ge.es`` and runs it through a ``ge.session.Session`` in
graph mode and in eager mode (``{"ge.graphMode": "off"}``); the two must give byte-identical
outputs (or the same error), and the outputs must match a numpy reference. Hypothesis draws the
shapes (broadcasting pairs for binary ops, random shapes, axes and keep_dims for reductions, random
perms for Transpose, ...) and a seed for the values; runs are deterministic (a fixed hypothesis
seed, no example database).

bf16: inputs are float32 values rounded to bf16 (round to nearest even), fed as their uint16 bits
(how ``ge.graph.Tensor`` takes bf16); outputs come back as bits and are compared as float32.

Semantics checked (numpy's unless said):

- Integers wrap around on overflow (Add, Sub, Mul, Neg, Abs, Square, Pow, SquaredDifference,
  sums and products, matmul, Cast between integer types).
- Div and RealDiv on integers truncate toward zero (C's ``/``, TensorFlow's integer ``Div``: the
  prototypes give an integer ``y``, so true division is not possible; FloorDiv is the flooring
  one). Mod is ``np.fmod`` (sign of x1), FloorMod is ``np.remainder`` (sign of x2), FloorDiv is
  ``np.floor_divide`` (floats: numpy's divmod algorithm, so ``1.0 // 0.1 == 9.0``). Integer
  division or remainder by zero is a ``ge.ExecutionError`` naming the node; DivNoNan gives 0.
- Pow on integers is tested with exponents >= 0 (numpy refuses negative integer powers).
- Float functions on integer inputs (Acos, Asin, Tan, Selu, HardSigmoid where the prototype
  allows ints) compute in f64 and truncate to the integer dtype (numpy's ``astype``); tested where
  the result is in range (an out-of-range float -> int conversion is undefined in numpy). Log of
  an integer or bool gives float32 (the prototype's rule).
- Integer ReduceMean is the exact mean truncated toward zero; integer sums/products wrap.
- Cast is numpy's ``astype``; float -> integer only for values whose truncation is in range.
- Sub on bool is an error (numpy refuses it too); Add/Mul on bool are or/and (numpy's).

Float tolerances: |actual - expected| <= atol + rtol * |expected|, NaN exactly where NaN, the
same infinities. The reference is computed in float64 from the exact input values and rounded
once to the output dtype (the kernels compute f64 in f64, f32 in f32, f16 and bf16 in f32 rounded
once), so a tolerance is the kernel's own error plus that rounding. The tightest that hold:

    dtype     rtol               atol                          worst seen
    float64   3 ulp (6.7e-16)    smallest normal (2.2e-308)    2 ulp (Sigmoid, SoftmaxV2)
    float32   3 ulp (3.6e-7)     smallest normal (1.2e-38)     2 ulp (Mish, Gelu, BatchMatMulV2)
    float16   1 ulp (9.8e-4)     1 subnormal (6.0e-8)          1 ulp
    bfloat16  1 ulp (7.8e-3)     f32's smallest normal         1 ulp

- f64, f32: the kernels' libm (glibc's through Rust's std; musl's port, the ``libm`` crate, for
  erf and the inverse hyperbolics) and numpy's float64 functions are each within about 1 ulp, and
  rounding the reference adds half an ulp: 2 ulp is the worst seen, 1 fails (Sigmoid, Mish,
  matmul). 3 leaves one ulp of headroom for other libm and numpy versions.
- f16, bf16: computed in f32 and rounded once, so the result is the correctly rounded value
  except where rounding f64 -> f32 -> dtype (the reference) and f32 -> dtype differ: 1 ulp.
- atol: below the smallest normal number precision is gradual: an f32 formula whose
  intermediate is subnormal (exp(x) for x < -87 in Sigmoid, Swish, Mish) keeps fewer bits, so
  such tiny results are only checked to within it (what flush-to-zero hardware gives anyway).
  f16 computes in f32, where its subnormals are normal: 1 f16 subnormal.

Scaled bounds, where a relative error of the result is not what the kernel controls:

- Sums, means, products of matrices, GEMM, LogSoftmaxV2: rtol * sum(|terms|) (summation order
  differs from numpy's; with cancellation a small result has no relative precision to check).
- Gelu: rtol * |expected| * (1 + |2u|), u = sqrt(2/pi) (x + 0.044715 x^3): u is rounded in the
  dtype and exp(-2u) multiplies its relative error by |2u|.
- Exp, Log, Elu, HardSigmoid, Swish: the affine argument of their attributes (scale * x + shift,
  ...) is computed in the kernel's precision in the reference too, as numpy would in that dtype
  (exp and log amplify its rounding, HardSigmoid cancels it near its zero crossing).

Exact (bit for bit): integer and bool results, shape and data-movement ops (compared byte for
byte, NaN payloads and signed zeros included), Cast (except to bf16 from f64 or from integers
wider than 16 bits: the reference rounds through f32 first, 1 bf16 ulp).

Left out: Pow on integers with negative exponents and float -> int Cast out of range (undefined in
numpy); Sub on bool is checked to be an error. AddV2 and IsFinite have no ES function in the
library: they are registered here with GE's prototypes (REG_OP text) so graphs can name them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import ge
import ge.ops
import numpy as np
import pytest
from ge.es import GraphBuilder, control_dependency_scope
from ge.es import all as es
from ge.graph import DataType
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

# The shared harness: dtype tables, the graph/eager runner, bf16, checks, value generators.
from common import float_regop
from kernel_harness import (
    ALL,
    FLOATS,
    GE_DT,
    INTS,
    KERNEL_DIR,
    NP,
    SEEDS,
    _registered_in,
    as_int_objects,
    bf16_round,
    broadcastable,
    case,
    check,
    const,
    dtypes_of,
    proto_dtypes,
    run,
    same,
    shapes,
    to_dtype,
    trunc_div_exact,
    values,
    vector,
    wrap,
)


# 25 examples per test (a test is an op; each example runs every dtype of it), deterministic: a
# fixed seed (``derandomize=True`` would hash the test's source on every run) and no database.
_SETTINGS = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def HYP(f: Callable[..., Any]) -> Callable[..., Any]:
    return seed(20260101)(_SETTINGS(f))



def dtype_test(ops: Union[str, Dict[str, List[str]]]) -> Callable[..., Any]:
    """A test of one op, ``body(data, d)``, or parametrised over the ops of a table (op -> its
    dtypes), ``body(op, data, d)``: it runs for every dtype ``d`` (of the prototype, or of the
    table) in each hypothesis example (``HYP``), the failing case named."""
    table = {ops: proto_dtypes(ops)} if isinstance(ops, str) else ops

    def deco(body: Callable[..., Any]) -> Callable[..., Any]:
        def each(op: str, data: Any) -> None:
            for d in table[op]:
                with case(op, d):
                    body(data, d) if isinstance(ops, str) else body(op, data, d)

        if isinstance(ops, str):
            test = HYP(given(data=st.data())(lambda data: each(ops, data)))
        else:
            test = pytest.mark.parametrize("op", list(table))(HYP(given(data=st.data())(each)))
        test.__name__, test.__qualname__, test.__doc__ = body.__name__, body.__qualname__, body.__doc__
        return test

    return deco


# ---------------------------------------------------------------------------------------------
# Coverage: every kernel of the four files is tested here
# ---------------------------------------------------------------------------------------------

from test_kernels_misc import MISC_OPS  # noqa: E402  (the kernels misc.rs held)
from test_kernels_dtypes import OPS_MOVED_IN  # noqa: E402  (index.rs's, tested there)

KERNEL_FILES = ("elementwise.rs", "shape.rs", "matmul.rs", "reduce.rs")
# The ops of the four files that moved to other families, tested here: softmax among the
# normalisations, the values made from shapes and attributes among the sources.
OPS_MOVED_OUT = {
    "norm.rs": {"SoftmaxV2", "LogSoftmaxV2"},
    "source.rs": {"Variable", "Shape", "ZerosLike", "Fill"},
}
TESTED: set = set()  # filled by the tables below
# Kernels of the four files tested in a file of their own (the check confirms it tests them).
OWN_TEST_FILE = {
    "StridedSliceV2": Path(__file__).resolve().parents[1] / "reliability" / "test_strided_slice_v2.py",
    "GeluV2": Path(__file__).resolve().parent / "test_gelu_erf.py",
}


def test_every_kernel_of_the_four_files_is_tested():
    # The tests run from the repository, so the kernel sources are always beside them.
    assert KERNEL_DIR.is_dir(), f"kernel sources not found at {KERNEL_DIR}"
    missing = {}
    for f in KERNEL_FILES + tuple(OPS_MOVED_OUT):
        ops = _registered_in(KERNEL_DIR / f)
        assert ops, f
        if f in OPS_MOVED_OUT:
            assert OPS_MOVED_OUT[f] <= ops, f"{f} no longer registers {OPS_MOVED_OUT[f] - ops}"
            ops = OPS_MOVED_OUT[f]
        # Moved in from nn.rs, ge_ops.rs, index.rs and misc.rs; test_kernels_dtypes.py,
        # test_kernels_ge_ops.py and test_kernels_misc.py test them and check that they do.
        ops -= {"PRelu", "Threshold", "Concat"} | MISC_OPS | OPS_MOVED_IN.get(f, set())
        for op in ops & set(OWN_TEST_FILE):
            assert f"es.{op}(" in OWN_TEST_FILE[op].read_text(), f"{OWN_TEST_FILE[op]} does not test {op}"
        ops -= set(OWN_TEST_FILE)
        if ops - TESTED:
            missing[f] = sorted(ops - TESTED)
    assert not missing, f"kernels without a test here: {missing}"


# ---------------------------------------------------------------------------------------------
# Ops without an ES function in the library: AddV2 and IsFinite (TensorFlow's), registered here
# with their GE prototypes so that graphs can name them.
# ---------------------------------------------------------------------------------------------

_EXTRA_OPS = """
REG_OP(AddV2)
    .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                           DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_BF16}))
    .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                           DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_BF16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                           DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_BF16}))
    .OP_END_FACTORY_REG(AddV2)
REG_OP(IsFinite)
    .INPUT(x, TensorType({DT_FLOAT16, DT_FLOAT, DT_DOUBLE, DT_BF16}))
    .OUTPUT(y, TensorType({DT_BOOL}))
    .OP_END_FACTORY_REG(IsFinite)
"""


def _ensure_extra_ops() -> None:
    """Registers those of _EXTRA_OPS the library does not have (once it has them, its own)."""
    known = set(ge.ops.list_ops())
    blocks = re.finditer(r"REG_OP\((\w+)\).*?OP_END_FACTORY_REG\(\1\)", _EXTRA_OPS, re.DOTALL)
    missing = [m.group(0) for m in blocks if m.group(1) not in known]
    if missing:
        ge.ops.register_regop("\n".join(missing))


_ensure_extra_ops()


def op_fn(op: str) -> Callable[..., Any]:
    return getattr(es, op)


# ---------------------------------------------------------------------------------------------
# Unary element-wise ops
# ---------------------------------------------------------------------------------------------

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
GELU_C = math.sqrt(2.0 / math.pi)
_erf = np.frompyfunc(math.erf, 1, 1)


def f32(v: float) -> float:
    """A Float attribute's value as the node holds it (float32)."""
    return float(np.float32(v))


# The parameterised functions first compute an affine argument from their attributes, in the
# precision the kernel computes in (``cd``: float32 for float32/float16/bf16, float64 for float64
# and integers), as numpy would in that dtype; the function of it is then exact (float64).


def _affine(x: np.ndarray, scale: float, shift: float, cd: Any) -> np.ndarray:
    return (np.asarray(x, cd) * cd(scale) + cd(shift)).astype(np.float64)


def _exp_ref(x: np.ndarray, base: float = -1.0, scale: float = 1.0, shift: float = 0.0,
             cd: Any = np.float64) -> np.ndarray:
    base = f32(base)
    t = _affine(x, f32(scale), f32(shift), cd)
    return np.exp(t) if base == -1.0 else np.power(base, t)


def _log_ref(x: np.ndarray, base: float = -1.0, scale: float = 1.0, shift: float = 0.0,
             cd: Any = np.float64) -> np.ndarray:
    base = f32(base)
    y = np.log(_affine(x, f32(scale), f32(shift), cd))
    return y if base == -1.0 else y / np.log(base)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


# op -> (f64 reference taking (x, **attrs), domain keywords for float_values)
UNARY: Dict[str, Tuple[Callable[..., np.ndarray], Dict[str, Any]]] = {
    "Abs": (lambda x: np.abs(x), {}),
    "Neg": (lambda x: np.negative(x), {}),
    "Exp": (_exp_ref, {"mag": 2}),
    "Expm1": (lambda x: np.expm1(x), {"mag": 2}),
    "Log": (_log_ref, {}),
    "Log1p": (lambda x: np.log1p(x), {"lo": -1.0}),
    "Sqrt": (lambda x: np.sqrt(x), {"lo": 0.0}),
    "Rsqrt": (lambda x: 1.0 / np.sqrt(x), {"lo": 0.0}),
    "Reciprocal": (lambda x: 1.0 / x, {}),
    "Square": (lambda x: x * x, {}),
    "Sin": (lambda x: np.sin(x), {"mag": 2}),
    "Cos": (lambda x: np.cos(x), {"mag": 2}),
    "Tan": (lambda x: np.tan(x), {"mag": 2}),
    "Asin": (lambda x: np.arcsin(x), {"lo": -1.0, "hi": 1.0}),
    "Acos": (lambda x: np.arccos(x), {"lo": -1.0, "hi": 1.0}),
    "Atan": (lambda x: np.arctan(x), {}),
    "Sinh": (lambda x: np.sinh(x), {"mag": 2}),
    "Cosh": (lambda x: np.cosh(x), {"mag": 2}),
    "Tanh": (lambda x: np.tanh(x), {"mag": 2}),
    "Asinh": (lambda x: np.arcsinh(x), {}),
    "Acosh": (lambda x: np.arccosh(x), {"lo": 1.0}),
    "Atanh": (lambda x: np.arctanh(x), {"lo": -1.0, "hi": 1.0}),
    "Floor": (lambda x: np.floor(x), {}),
    "Ceil": (lambda x: np.ceil(x), {}),
    "Sign": (lambda x: np.sign(x), {}),
    "Relu": (lambda x: np.maximum(x, 0.0), {}),
    "Relu6": (lambda x: np.minimum(np.maximum(x, 0.0), 6.0), {"mag": 1.5}),
    "Sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), {"mag": 2.2}),
    "Softplus": (_softplus, {"mag": 2}),
    "Softsign": (lambda x: x / (1.0 + np.abs(x)), {}),
    "Mish": (lambda x: x * np.tanh(_softplus(x)), {"mag": 2}),
    "Selu": (lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), {"mag": 2}),
    "Erf": (lambda x: np.asarray(_erf(x), dtype=np.float64), {"mag": 1.5}),
    # GE's Gelu (the tanh approximation), 0.5 x (1 + tanh(u)) written as x / (1 + exp(-2u)).
    "Gelu": (lambda x: x / (1.0 + np.exp(-2.0 * GELU_C * (x + 0.044715 * x ** 3))), {"mag": 1.5}),
    "Elu": (lambda x, alpha=1.0, scale=1.0, input_scale=1.0, cd=np.float64: np.where(
        x > 0, f32(scale) * x, f32(scale) * f32(alpha) * np.expm1(_affine(x, f32(input_scale), 0.0, cd))),
        {"mag": 2}),
    "LeakyRelu": (lambda x, negative_slope=0.0: np.where(x >= 0, x, f32(negative_slope) * x), {}),
    "HardSigmoid": (lambda x, alpha=0.16666666, beta=0.5, cd=np.float64: np.clip(
        _affine(x, f32(alpha), f32(beta), cd), 0.0, 1.0), {"mag": 1.5}),
    "Swish": (lambda x, scale=1.0, cd=np.float64: x / (1.0 + np.exp(-_affine(x, f32(scale), 0.0, cd))),
              {"mag": 2}),
}
AFFINE = {"Exp", "Log", "Elu", "HardSigmoid", "Swish"}

# Condition numbers: how much the rounding of an intermediate the kernel computes in its dtype is
# amplified in the result; the tolerance grows by this factor (rtol * cond * |expected|).
# Gelu: sigmoid(2u) of u = c (x + 0.044715 x^3), itself rounded: exp(-2u) has the relative
# error of u times |2u|.
UNARY_COND: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Gelu": lambda x: 1.0 + np.abs(2.0 * GELU_C * (x + 0.044715 * x ** 3)),
}
TESTED.update(UNARY)

# Attribute values drawn for the parameterised ones (None: the default).
UNARY_ATTRS: Dict[str, Dict[str, Any]] = {
    "Exp": {"base": st.sampled_from([-1.0, 2.0, 10.0, 0.5]), "scale": st.sampled_from([1.0, 0.5, -2.0]),
            "shift": st.sampled_from([0.0, 1.5, -0.25])},
    "Log": {"base": st.sampled_from([-1.0, 2.0, 10.0, 0.5]), "scale": st.sampled_from([1.0, 0.5, 3.0]),
            "shift": st.sampled_from([0.0, 1.5, -0.25])},
    "Elu": {"alpha": st.sampled_from([1.0, 0.5, 2.0]), "scale": st.sampled_from([1.0, 1.5]),
            "input_scale": st.sampled_from([1.0, 0.5])},
    "LeakyRelu": {"negative_slope": st.sampled_from([0.0, 0.01, 0.2, -1.5])},
    "HardSigmoid": {"alpha": st.sampled_from([0.16666666, 0.2, 1.0]),
                    "beta": st.sampled_from([0.5, 0.0, 0.25])},
    "Swish": {"scale": st.sampled_from([1.0, 1.702, 0.5])},
}

# Integer/bool results of the integer-exact ops (numpy's, wrapping).
INT_UNARY: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Abs": np.abs,
    "Neg": np.negative,
    "Relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "Relu6": lambda x: np.clip(x, 0, 6).astype(x.dtype),
    "Square": np.square,
    "Sign": np.sign,
}
# Float functions the prototype allows on integers: computed in f64, truncated into the dtype;
# inputs are kept where the result is defined and in range.
INT_DOMAIN: Dict[Tuple[str, str], Tuple[int, int]] = {
    ("Acos", "int32"): (-1, 1), ("Acos", "int64"): (-1, 1),
    ("Asin", "int32"): (-1, 1), ("Asin", "int64"): (-1, 1),
    ("Tan", "int32"): (-1000, 1000), ("Tan", "int64"): (-1000, 1000),
    ("Selu", "int8"): (-128, 120), ("Selu", "int32"): (-(2**30), 2**30),
}

UNARY_DTYPES = dtypes_of(*UNARY)


def unary_expected(op: str, x: np.ndarray, d: str, attrs: Dict[str, Any]) -> Tuple[np.ndarray, str]:
    """The expected output and its dtype."""
    if op in AFFINE:
        attrs = dict(attrs, cd=np.float32 if d in ("float32", "float16", "bfloat16") else np.float64)
    if d == "bool":
        if op == "Abs":
            return x, "bool"
        assert op == "Log", op
        with np.errstate(all="ignore"):
            return _log_ref(x.astype(np.float64), **attrs).astype(np.float32), "float32"
    if d in INTS:
        if op in INT_UNARY:
            with np.errstate(all="ignore"):
                return INT_UNARY[op](x), d
        with np.errstate(all="ignore"):
            y = UNARY[op][0](x.astype(np.float64), **attrs)
        if op == "Log":
            return y.astype(np.float32), "float32"
        return np.trunc(y).astype(NP[d]), d
    with np.errstate(all="ignore"):
        return UNARY[op][0](x.astype(np.float64), **attrs), d


@dtype_test(UNARY_DTYPES)
def test_unary(op, data, d):
    shape = data.draw(shapes(min_side=0), label="shape")
    attrs = {k: data.draw(s, label=k) for k, s in UNARY_ATTRS.get(op, {}).items()}
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    lo, hi = INT_DOMAIN.get((op, d), (None, None))
    x = values(rng, d, shape, ilo=lo, ihi=hi, **UNARY[op][1])
    if op == "HardSigmoid" and d in INTS:
        x = values(rng, d, shape, ilo=-(2**20), ihi=2**20)
    got = run(lambda b, h: op_fn(op)(h, **attrs), (x, d))
    expected, out_d = unary_expected(op, x, d, attrs)
    scale = None
    if op in UNARY_COND and d in FLOATS:
        with np.errstate(all="ignore"):
            scale = np.abs(expected) * UNARY_COND[op](x.astype(np.float64))
    check(got[0], expected, out_d, scale=scale, what=lambda: f"{op}{attrs} of {x!r}")


# ---------------------------------------------------------------------------------------------
# Predicates, LogicalNot, identities
# ---------------------------------------------------------------------------------------------

PREDICATES = {"IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite}
TESTED.update(PREDICATES)
PREDICATE_DTYPES = dtypes_of(*PREDICATES)
IDENTITY_DTYPES = dtypes_of("Identity", "TensorMove", "Variable")


@pytest.mark.parametrize("op", list(PREDICATE_DTYPES))
@HYP
@given(shape=shapes(min_side=0), seed=SEEDS)
def test_predicates(op, shape, seed):
    for d in PREDICATE_DTYPES[op]:
        with case(op, d):
            x = values(np.random.default_rng(seed), d, shape)
            got = run(lambda b, h: op_fn(op)(h), (x, d))
            check(got[0], PREDICATES[op](x), "bool", what=op)


TESTED.update({"LogicalNot", "Identity", "TensorMove", "IdentityN", "Variable"})


@HYP
@given(shape=shapes(min_side=0), seed=SEEDS)
def test_logical_not(shape, seed):
    x = values(np.random.default_rng(seed), "bool", shape)
    check(run(lambda b, h: es.LogicalNot(h), (x, "bool"))[0], ~x, "bool")


def _kept(op: str) -> Callable[..., Any]:
    """``op(x)`` with a control edge from x: the compile's identity elimination (a plain
    Identity is bypassed) leaves it, so its kernel runs."""
    def build(b: GraphBuilder, h: Any) -> Any:
        with control_dependency_scope([h]):
            return op_fn(op)(h)
    return build


@pytest.mark.parametrize("op", list(IDENTITY_DTYPES))
@HYP
@given(shape=shapes(min_side=0), seed=SEEDS)
def test_identity_tensor_move_and_variable(op, shape, seed):
    """A Variable with its input connected passes it on (one without is tested in Rust:
    crates/ge-runtime/tests/variable.rs)."""
    for d in IDENTITY_DTYPES[op]:
        with case(op, d):
            x = values(np.random.default_rng(seed), d, shape)
            got = run(_kept(op), (x, d))
            check(got[0], x, d, exact=True, what=op)
            assert got[0][1].tobytes() == x.tobytes()


@HYP
@given(data=st.data())
def test_identity_n_keeps_each_dtype(data):
    ds = data.draw(st.lists(st.sampled_from(proto_dtypes("IdentityN")), min_size=1, max_size=4),
                   label="dtypes")
    rng = np.random.default_rng(data.draw(SEEDS))
    xs = [values(rng, d, data.draw(shapes(min_side=0))) for d in ds]
    got = run(lambda b, *hs: es.IdentityN(list(hs), len(hs)), *zip(xs, ds))
    assert len(got) == len(xs)
    for g, x, d in zip(got, xs, ds):
        check(g, x, d, exact=True, what="IdentityN")


# ---------------------------------------------------------------------------------------------
# Binary element-wise ops
# ---------------------------------------------------------------------------------------------

ARITH = ("Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "FloorDiv", "FloorMod", "Mod", "Pow",
         "Maximum", "Minimum", "SquaredDifference")
COMPARE = {"Equal": np.equal, "NotEqual": np.not_equal, "Greater": np.greater,
           "GreaterEqual": np.greater_equal, "Less": np.less, "LessEqual": np.less_equal}
LOGIC = {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or}
BITWISE = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
TESTED.update(ARITH, COMPARE, LOGIC, BITWISE)

# Float dtypes numpy computes the divmod family in (bf16: float32, then rounded).
_NATIVE = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": np.float32}


def _f64(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` of the operands in float64."""
    return lambda a, b, d: f(a.astype(np.float64), b.astype(np.float64))


def _native(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` of the operands in the float dtype numpy computes it in, as float64."""
    return lambda a, b, d: f(a.astype(_NATIVE[d]), b.astype(_NATIVE[d])).astype(np.float64)


def _as_is(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` of the integer operands (numpy's wrapping arithmetic)."""
    return lambda a, b, d: f(a, b)


def _int_div_no_nan(a: np.ndarray, b: np.ndarray, d: str) -> np.ndarray:
    nz = b != 0
    return np.where(nz, wrap(trunc_div_exact(a, np.where(nz, b, 1)), d), 0).astype(NP[d])


# op -> its reference f(a, b, dtype): floats exact in float64 (SquaredDifference as numpy in the
# dtype: the difference rounded, then squared), integers as the kernels define them.
FLOAT_BINARY_REF = {
    "Add": _f64(np.add), "AddV2": _f64(np.add), "Sub": _f64(np.subtract), "Mul": _f64(np.multiply),
    "Div": _f64(np.divide), "RealDiv": _f64(np.divide),
    "DivNoNan": _f64(lambda x, y: np.where(y == 0, 0.0, x / y)),
    "FloorDiv": _native(np.floor_divide), "FloorMod": _native(np.remainder), "Mod": _native(np.fmod),
    "Pow": _f64(np.power), "Maximum": _f64(np.maximum), "Minimum": _f64(np.minimum),
    "SquaredDifference": lambda a, b, d: np.square(to_dtype(a.astype(np.float64) - b.astype(np.float64), d)
                                                   .astype(np.float64)),
}
INT_BINARY_REF = {
    "Add": _as_is(np.add), "AddV2": _as_is(np.add), "Sub": _as_is(np.subtract), "Mul": _as_is(np.multiply),
    "Div": lambda a, b, d: wrap(trunc_div_exact(a, b), d),
    "RealDiv": lambda a, b, d: wrap(trunc_div_exact(a, b), d),
    "DivNoNan": _int_div_no_nan, "FloorDiv": _as_is(np.floor_divide), "FloorMod": _as_is(np.remainder),
    "Mod": _as_is(np.fmod), "Pow": _as_is(np.power), "Maximum": _as_is(np.maximum),
    "Minimum": _as_is(np.minimum),
    "SquaredDifference": _as_is(lambda x, y: np.square(x - y)),
}


def float_binary_ref(op: str, a: np.ndarray, b: np.ndarray, d: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return FLOAT_BINARY_REF[op](a, b, d)


def int_binary_ref(op: str, a: np.ndarray, b: np.ndarray, d: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return INT_BINARY_REF[op](a, b, d)


BINARY_DTYPES = dtypes_of(*ARITH, *COMPARE, *LOGIC, *BITWISE)


@dtype_test(BINARY_DTYPES)
def test_binary(op, data, d):
    sa, sb = data.draw(broadcastable(), label="shapes")
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    kw: Dict[str, Any] = {}
    if op == "Pow" and d in FLOATS:
        kw = {"mag": 1.0}
    a = values(rng, d, sa, **kw)
    b = values(rng, d, sb, **kw)
    if d in INTS and op in ("Div", "RealDiv", "FloorDiv", "FloorMod", "Mod"):
        b = np.where(b == 0, np.ones((), b.dtype), b)  # zero divisors: test_integer_division_by_zero
    if d in INTS and op == "Pow":
        b = values(rng, d, sb, ilo=0, ihi=70) if rng.random() < 0.7 else values(rng, d, sb, ilo=0)
    if d == "bool" and op == "Sub":
        with pytest.raises(ge.GeError, match="not supported: Sub on bool tensors"):
            run(lambda bb, x, y: op_fn(op)(x, y), (a, d), (b, d))
        return
    got = run(lambda bb, x, y: op_fn(op)(x, y), (a, d), (b, d))
    what = lambda: f"{op}({a!r}, {b!r})"  # noqa: E731
    if op in COMPARE:
        check(got[0], COMPARE[op](a, b), "bool", what=what)
    elif op in LOGIC:
        check(got[0], LOGIC[op](a, b), "bool", what=what)
    elif op in BITWISE:
        check(got[0], BITWISE[op](a, b), d, what=what)
    elif d == "bool":
        ref = {"Add": np.logical_or, "AddV2": np.logical_or, "Mul": np.logical_and,
               "Maximum": np.logical_or, "Minimum": np.logical_and}[op](a, b)
        check(got[0], ref, d, what=what)
    elif d in INTS:
        check(got[0], int_binary_ref(op, a, b, d), d, what=what)
    else:
        check(got[0], float_binary_ref(op, a, b, d), d, what=what)


def test_float_floor_div_and_mod_follow_numpy():
    """numpy's divmod: 1.0 // 0.1 is 9.0 (not floor(1.0 / 0.1) = 10), and x == q * y + r."""
    a = np.array([1.0, -1.0, 7.5, -7.5, 0.0, -0.0, 1.0, 5.0, np.inf], np.float64)
    b = np.array([0.1, 0.1, -2.0, 2.0, 3.0, -3.0, 0.0, np.inf, 2.0], np.float64)
    for d in ("float64", "float32", "float16"):
        x, y = a.astype(NP[d]), b.astype(NP[d])
        with np.errstate(all="ignore"):
            q, r = np.floor_divide(x, y), np.remainder(x, y)
        for op, expected in (("FloorDiv", q), ("FloorMod", r)):
            got = run(lambda bb, p, s: op_fn(op)(p, s), (x, d), (y, d))
            check(got[0], expected, d, exact=True, what=f"{op} {d}")


def test_integer_pow_with_huge_exponents_wraps_like_numpy():
    a = np.array([3, -3, 2, 1, -1, 0, 7], np.int64)
    b = np.array([2**33 + 1, 2**32, 64, 2**62, 2**40 + 1, 2**35, 2**32 + 3], np.int64)
    got = run(lambda bb, x, y: es.Pow(x, y), (a, "int64"), (b, "int64"))
    check(got[0], np.power(a, b), "int64")


# ---------------------------------------------------------------------------------------------
# Cast
# ---------------------------------------------------------------------------------------------

TESTED.add("Cast")
CAST_DTYPES = [d for d in proto_dtypes("Cast") if d in ALL]


def cast_ref(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst == "bfloat16":
        return bf16_round(x.astype(np.float32) if src != "float64" else x)
    with np.errstate(all="ignore"):
        return x.astype(NP[dst])


def _castable(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """x with the values numpy leaves undefined for src -> dst (a float whose truncation is
    out of the integer dtype's range, or not finite) replaced by 0."""
    if src not in FLOATS or dst not in INTS:
        return x
    info = np.iinfo(NP[dst])
    t = np.trunc(x.astype(np.float64))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(t) & (t >= float(info.min)) & (t < 2.0 ** (info.bits - (1 if info.min < 0 else 0)))
    return np.where(ok, x, np.zeros((), x.dtype)).astype(x.dtype)


@pytest.mark.parametrize("src", CAST_DTYPES)
@HYP
@given(shape=shapes(min_side=0), seed=SEEDS)
def test_cast(src, shape, seed):
    """One graph: a Cast from src to every dtype, each from its own input."""
    rng = np.random.default_rng(seed)
    x = values(rng, src, shape, mag=4)
    xs = [_castable(x, src, dst) for dst in CAST_DTYPES]
    got = run(lambda b, *hs: [es.Cast(h, dst_type=int(GE_DT[dst])) for h, dst in zip(hs, CAST_DTYPES)],
              *[(xi, src) for xi in xs])
    for g, xi, dst in zip(got, xs, CAST_DTYPES):
        what = lambda: f"Cast {src} -> {dst} of {xi!r}"  # noqa: E731
        if dst == "bfloat16" and src in ("float64", "int64", "uint64", "int32", "uint32"):
            # f64 (or a wide integer) to bf16 rounds once; the reference goes through float32
            # first, which can differ by a double rounding: 1 bf16 ulp.
            check(g, cast_ref(xi, src, dst), dst, what=what)
        else:
            check(g, cast_ref(xi, src, dst), dst, exact=True, what=what)


def test_cast_wraps_integers_and_rounds_int64_to_float32_once():
    x = np.array([-1, 300, 2**40 + 5, -(2**31) - 1, 255, -129], np.int64)
    for dst in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "uint64"):
        check(run(lambda b, h: es.Cast(h, dst_type=int(GE_DT[dst])), (x, "int64"))[0], x.astype(NP[dst]), dst)
    big = np.array([2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**63 - 1], np.int64)
    check(run(lambda b, h: es.Cast(h, dst_type=int(DataType.DT_FLOAT)), (big, "int64"))[0],
          big.astype(np.float32), "float32", exact=True)
    u = np.array([2**64 - 1, 2**63 + 2**39 + 1], np.uint64)
    check(run(lambda b, h: es.Cast(h, dst_type=int(DataType.DT_FLOAT)), (u, "uint64"))[0],
          u.astype(np.float32), "float32", exact=True)


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

RED_BY_INPUT = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAll", "ReduceAny")
RED_BY_ATTR = ("ReduceSumD", "ReduceMeanD", "ReduceMaxD", "ReduceMinD", "ReduceProdD")
TESTED.update(RED_BY_INPUT, RED_BY_ATTR)


def reduce_ref(kind: str, x: np.ndarray, d: str, axes: Tuple[int, ...], keep: bool) -> Tuple[np.ndarray, Any]:
    """The expected result and (for float sums) the scale of its error bound."""
    if kind in ("All", "Any"):
        f = np.all if kind == "All" else np.any
        return f(x, axis=axes, keepdims=keep), None
    if d in INTS:
        o = as_int_objects(x)
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        if kind == "Sum":
            return wrap(np.sum(o, axis=axes, keepdims=keep, initial=0), d), None
        if kind == "Prod":
            return wrap(np.prod(o, axis=axes, keepdims=keep, initial=1), d), None
        if kind == "Max":
            return np.max(x, axis=axes, keepdims=keep), None
        if kind == "Min":
            return np.min(x, axis=axes, keepdims=keep), None
        s = np.sum(o, axis=axes, keepdims=keep, initial=0)
        return wrap(trunc_div_exact(s, np.full(np.shape(s), count, dtype=object)), d), None
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if kind == "Sum":
            return np.sum(x64, axis=axes, keepdims=keep), np.sum(np.abs(x64), axis=axes, keepdims=keep)
        if kind == "Mean":
            return (np.mean(x64, axis=axes, keepdims=keep),
                    np.mean(np.abs(x64), axis=axes, keepdims=keep))
        if kind == "Prod":
            return np.prod(x64, axis=axes, keepdims=keep), None
        if kind == "Max":
            return np.max(x64, axis=axes, keepdims=keep), None
        return np.min(x64, axis=axes, keepdims=keep), None


REDUCE_DTYPES = dtypes_of(*RED_BY_INPUT, *RED_BY_ATTR)


@dtype_test(REDUCE_DTYPES)
def test_reduce(op, data, d):
    kind = op[len("Reduce"):].rstrip("D") if op.endswith("D") else op[len("Reduce"):]
    shape = data.draw(shapes(min_dims=0, max_dims=4, min_side=1), label="shape")
    r = len(shape)
    keep = data.draw(st.booleans(), label="keep_dims")
    picked = data.draw(st.lists(st.integers(0, max(r - 1, 0)), unique=True, max_size=r),
                       label="axes") if r else []
    axes_in = [a - r if data.draw(st.booleans(), label="negative") else a for a in picked]
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    kw: Dict[str, Any] = {"mag": 1.0} if kind == "Prod" else {}
    x = values(rng, d, shape, **kw)
    attrs: Dict[str, Any] = {"keep_dims": keep}
    noop = False
    if op in RED_BY_INPUT:
        index_dt = data.draw(st.sampled_from(["int32", "int64"]), label="axes dtype")
        scalar = len(axes_in) == 1 and data.draw(st.booleans(), label="scalar axes")
        if op not in ("ReduceAll", "ReduceAny"):
            noop = data.draw(st.booleans(), label="noop_with_empty_axes")
            attrs["noop_with_empty_axes"] = noop
        else:
            noop = True  # no attribute: empty axes reduce nothing (TensorFlow's rule)
        axes_value = np.asarray(axes_in[0] if scalar else axes_in, dtype=NP[index_dt])

        def build(b, h):
            return op_fn(op)(h, const(b, axes_value, index_dt), **attrs)
    else:
        if op == "ReduceMeanD":
            noop = data.draw(st.booleans(), label="noop_with_empty_axes")
            attrs["noop_with_empty_axes"] = noop

        def build(b, h):
            return op_fn(op)(h, axes=list(axes_in), **attrs)
    got = run(build, (x, d))
    what = lambda: f"{op}(axes={axes_in}, {attrs}) of {x!r}"  # noqa: E731
    if not axes_in and noop:
        check(got[0], x, d, exact=True, what=what)
        return
    axes = tuple(sorted(a % r for a in axes_in)) if axes_in else tuple(range(r))
    expected, scale = reduce_ref(kind, x, d, axes, keep)
    if d in FLOATS and scale is not None:
        check(got[0], expected, d, scale=scale, what=what)
    else:
        check(got[0], expected, d, what=what)


def test_reduce_max_min_propagate_nan_and_handle_uint64():
    x = np.array([[np.nan, 1.0, 2.0], [3.0, np.nan, -1.0], [1.0, 2.0, 3.0]], np.float32)
    for op, f in (("ReduceMax", np.max), ("ReduceMin", np.min)):
        got = run(lambda b, h: op_fn(op)(h, const(b, [1])), (x, "float32"))
        check(got[0], f(x, axis=1), "float32", exact=True, what=op)
    u = np.array([[2**63 + 5, 1, 2**64 - 1], [0, 2**63, 7]], np.uint64)
    for op, f in (("ReduceMax", np.max), ("ReduceMin", np.min)):
        got = run(lambda b, h: op_fn(op)(h, const(b, [1])), (u, "uint64"))
        check(got[0], f(u, axis=1), "uint64", what=op)
    mean = run(lambda b, h: es.ReduceMean(h, const(b, [1])), (u, "uint64"))[0]
    exact_means = np.array([(2**63 + 5 + 1 + 2**64 - 1) // 3, (2**63 + 7) // 3], np.uint64)
    check(mean, exact_means, "uint64", what="mean")


def test_reductions_of_empty_sets():
    x = np.zeros((2, 0, 3), np.float32)
    check(run(lambda b, h: es.ReduceSum(h, const(b, [1])), (x, "float32"))[0], np.zeros((2, 3)), "float32")
    check(run(lambda b, h: es.ReduceProd(h, const(b, [1])), (x, "float32"))[0], np.ones((2, 3)), "float32")
    # Max/min of an empty set: -inf/+inf for floats, the dtype's lowest/highest for integers
    # (ONNX's and TensorFlow's identities; numpy raises instead).
    check(run(lambda b, h: es.ReduceMax(h, const(b, [1])), (x, "float32"))[0], np.full((2, 3), -np.inf), "float32")
    check(run(lambda b, h: es.ReduceMin(h, const(b, [1])), (x, "float32"))[0], np.full((2, 3), np.inf), "float32")
    for dt, info in (("int8", np.iinfo(np.int8)), ("uint16", np.iinfo(np.uint16)), ("int64", np.iinfo(np.int64))):
        xi = np.zeros((2, 0, 3), dt)
        check(run(lambda b, h: es.ReduceMax(h, const(b, [1])), (xi, dt))[0], np.full((2, 3), info.min, dt), dt)
        check(run(lambda b, h: es.ReduceMin(h, const(b, [1])), (xi, dt))[0], np.full((2, 3), info.max, dt), dt)


# ---------------------------------------------------------------------------------------------
# Softmax, LogSoftmax, BiasAdd
# ---------------------------------------------------------------------------------------------

TESTED.update({"SoftmaxV2", "LogSoftmaxV2", "BiasAdd"})
SOFTMAX_DTYPES = dtypes_of("SoftmaxV2", "LogSoftmaxV2")


@dtype_test(SOFTMAX_DTYPES)
def test_softmax(op, data, d):
    shape = data.draw(shapes(min_dims=1, max_dims=4, min_side=1), label="shape")
    r = len(shape)
    axes = data.draw(st.lists(st.integers(-r, r - 1), min_size=1, max_size=r,
                              unique_by=lambda a: a % r), label="axes")
    half_to_float = (op == "SoftmaxV2" and d == "float16"
                     and data.draw(st.booleans(), label="half_to_float"))
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape, mag=1.5, special=False)
    kw: Dict[str, Any] = {"axes": axes}
    if data.draw(st.booleans(), label="default axes"):
        kw, axes = {}, [-1]  # GE's default: the last dim
    if half_to_float:
        kw["half_to_float"] = True
    got = run(lambda b, h: op_fn(op)(h, **kw), (x, d))
    x64 = x.astype(np.float64)
    ax = tuple(sorted({a % r for a in axes}))
    s = x64 - np.max(x64, axis=ax, keepdims=True)
    total = np.sum(np.exp(s), axis=ax, keepdims=True)  # >= 1: its log is exact to 1 ulp of 1
    lse = np.log(total)
    expected = s - lse if op == "LogSoftmaxV2" else np.exp(s) / total
    scale = (np.abs(s) + np.abs(lse) + 1.0) if op == "LogSoftmaxV2" else None
    check(got[0], expected, "float32" if half_to_float else d, scale=scale,
          what=lambda: f"{op} {kw} of {x!r}")


@HYP
@given(data=st.data())
def test_bias_add(data):
    for d in proto_dtypes("BiasAdd"):
        with case("BiasAdd", d):
            shape = data.draw(shapes(min_dims=2, max_dims=4, min_side=1), label="shape")
            fmt = data.draw(st.sampled_from(["NHWC", "NCHW", None]), label="data_format")
            ch = 1 if fmt == "NCHW" else len(shape) - 1
            rng = np.random.default_rng(data.draw(SEEDS))
            x, bias = values(rng, d, shape), values(rng, d, [shape[ch]])
            kw = {} if fmt is None else {"data_format": fmt}
            got = run(lambda b, h, c: es.BiasAdd(h, c, **kw), (x, d), (bias, d))
            bshape = [1] * len(shape)
            bshape[ch] = shape[ch]
            bb = bias.reshape(bshape)
            with np.errstate(all="ignore"):  # integers wrap; inf + -inf is NaN
                expected = x + bb if d in INTS else x.astype(np.float64) + bb.astype(np.float64)
            check(got[0], expected, d, what=f"BiasAdd {fmt}")


# ---------------------------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------------------------

TESTED.update({"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "GEMM"})


def matmul_ref(a: np.ndarray, b: np.ndarray, d: str, out_d: str) -> Tuple[np.ndarray, Any]:
    if d in INTS:
        p = np.matmul(a.astype(np.int64).astype(np.uint64), b.astype(np.int64).astype(np.uint64))
        return p.astype(NP[out_d]), None  # uint64 arithmetic wraps; the cast keeps the low bits
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return np.matmul(a64, b64), np.matmul(np.abs(a64), np.abs(b64))


@pytest.mark.parametrize("op,d", [(op, d) for op in ("MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2")
                                  for d in proto_dtypes(op)])
@HYP
@given(data=st.data())
def test_matmul(op, d, data):
    batch = op.startswith("Batch")
    m, k, n = (data.draw(st.integers(1, 5), label=s) for s in "mkn")
    ta, tb = data.draw(st.booleans(), label="transpose a"), data.draw(st.booleans(), label="transpose b")
    if batch:
        ba, bb = data.draw(broadcastable(max_dims=2, min_side=1, max_side=3), label="batch dims")
    else:
        ba, bb = (), ()
    sa = tuple(ba) + ((k, m) if ta else (m, k))
    sb = tuple(bb) + ((n, k) if tb else (k, n))
    rng = np.random.default_rng(data.draw(SEEDS))
    kw = {"mag": 1.0, "special": False}
    a, b = values(rng, d, sa, **kw), values(rng, d, sb, **kw)
    out_d = "int32" if d == "int8" else d
    with_bias = op in ("MatMul", "MatMulV2", "BatchMatMulV2") and data.draw(st.booleans(), label="bias")
    bias = values(rng, out_d, [n], **kw) if with_bias else None
    names = ("adj_x1", "adj_x2") if batch else ("transpose_x1", "transpose_x2")
    attrs = {names[0]: ta, names[1]: tb}
    inputs = [(a, d), (b, d)] + ([(bias, out_d)] if with_bias else [])

    def build(bl, x, y, *c):
        return op_fn(op)(x, y, *c, **attrs)

    got = run(build, *inputs)
    a2 = np.swapaxes(a, -1, -2) if ta else a
    b2 = np.swapaxes(b, -1, -2) if tb else b
    expected, scale = matmul_ref(a2, b2, d, out_d)
    if with_bias:
        if out_d in INTS:
            with np.errstate(all="ignore"):
                expected = expected + bias
        else:
            expected, scale = expected + bias.astype(np.float64), scale + np.abs(bias.astype(np.float64))
    check(got[0], expected, out_d, scale=scale, what=f"{op} {attrs} bias={with_bias}")


GEMM_T = proto_dtypes("GEMM", "a")
GEMM_T2 = proto_dtypes("GEMM", "c")


@pytest.mark.parametrize("t1,t2", [(t1, t2) for t1 in GEMM_T for t2 in GEMM_T2])
@HYP
@given(data=st.data())
def test_gemm(t1, t2, data):
    m, k, n = (data.draw(st.integers(1, 4), label=s) for s in "mkn")
    ta, tb = data.draw(st.booleans(), label="transpose_a"), data.draw(st.booleans(), label="transpose_b")
    rng = np.random.default_rng(data.draw(SEEDS))
    # Integers small enough that nothing overflows (an f64 -> int8 overflow is undefined).
    small = {"ilo": -3, "ihi": 3, "mag": 1.0, "special": False}
    if t2 in INTS:  # an integer result truncates: keep the product exact (integral floats)
        a = to_dtype(rng.integers(-3, 4, (k, m) if ta else (m, k)), t1)
        b = to_dtype(rng.integers(-3, 4, (n, k) if tb else (k, n)), t1)
    else:
        a = values(rng, t1, (k, m) if ta else (m, k), **small)
        b = values(rng, t1, (n, k) if tb else (k, n), **small)
    c = values(rng, t2, data.draw(st.sampled_from([(m, n), (n,), (1, n), ()]), label="c shape"),
               **dict(small, ilo=-20, ihi=20))
    alpha = values(rng, t2, (), **dict(small, ilo=-2, ihi=2))
    beta = values(rng, t2, (), **dict(small, ilo=-2, ihi=2))
    got = run(lambda bl, *hs: es.GEMM(*hs, transpose_a=ta, transpose_b=tb),
              (a, t1), (b, t1), (c, t2), (alpha, t2), (beta, t2))
    a64 = (a.T if ta else a).astype(np.float64)
    b64 = (b.T if tb else b).astype(np.float64)
    al, be, c64 = float(alpha), float(beta), c.astype(np.float64)
    expected = al * (a64 @ b64) + be * c64
    scale = abs(al) * (np.abs(a64) @ np.abs(b64)) + abs(be) * np.abs(c64)
    check(got[0], np.broadcast_to(expected, (m, n)), t2, scale=scale, what=f"GEMM {t1}->{t2}")


# ---------------------------------------------------------------------------------------------
# Shape and data-movement ops (compared bit for bit)
# ---------------------------------------------------------------------------------------------

SHAPE_OPS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "ConcatV2", "ConcatD", "Pack", "Tile",
             "BroadcastTo", "Expand", "Shape", "Select", "SelectV2", "ZerosLike", "Fill")
TESTED.update(SHAPE_OPS)


def _factor(rng: np.random.Generator, n: int, rank: int) -> List[int]:
    """A random shape of ``rank`` dims whose product is ``n`` (n > 0)."""
    dims = [1] * rank
    if rank == 0:
        return dims
    rest = n
    for p in (2, 3, 5, 7):
        while rest % p == 0:
            rest //= p
            dims[rng.integers(rank)] *= p
    dims[rng.integers(rank)] *= rest
    return dims


@dtype_test("Reshape")
def test_reshape(data, d):
    shape = data.draw(shapes(min_side=1), label="shape")
    rng = np.random.default_rng(data.draw(SEEDS))
    x = values(rng, d, shape)
    n = int(np.prod(shape))
    target = _factor(rng, n, data.draw(st.integers(0 if n == 1 else 1, 4), label="rank"))
    spec = list(target)
    if spec and data.draw(st.booleans(), label="infer one dim"):
        spec[data.draw(st.integers(0, len(spec) - 1))] = -1
    for i in range(min(len(spec), len(shape))):  # 0 copies the input's dim (GE, ONNX)
        if spec[i] == shape[i] and data.draw(st.booleans(), label=f"zero {i}"):
            spec[i] = 0
    index_dt = data.draw(st.sampled_from(["int32", "int64"]))
    got = run(lambda b, h: es.Reshape(h, const(b, spec, index_dt)), (x, d))
    same(got[0], x.reshape(target), d, f"Reshape {shape} by {spec}")


@dtype_test("Squeeze")
def test_squeeze(data, d):
    shape = data.draw(shapes(min_side=1, max_side=3), label="shape")
    r = len(shape)
    ones = [i for i in range(r) if shape[i] == 1]
    axes = data.draw(st.lists(st.sampled_from(ones), unique=True), label="axes") if ones else []
    axes = [a - r if data.draw(st.booleans()) else a for a in axes]
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
    got = run(lambda b, h: es.Squeeze(h, axis=axes), (x, d))
    expected = np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x)
    same(got[0], expected, d, f"Squeeze {shape} {axes}")


@dtype_test("Unsqueeze")
def test_unsqueeze(data, d):
    shape = data.draw(shapes(min_side=0), label="shape")
    k = data.draw(st.integers(1, 3), label="count")
    out_r = len(shape) + k
    pos = data.draw(st.lists(st.integers(0, out_r - 1), min_size=k, max_size=k, unique=True),
                    label="axes")
    axes = [p - out_r if data.draw(st.booleans()) else p for p in pos]
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
    got = run(lambda b, h: es.Unsqueeze(h, axes=axes), (x, d))
    same(got[0], np.expand_dims(x, tuple(axes)), d, f"Unsqueeze {shape} {axes}")


@dtype_test("Flatten")
def test_flatten(data, d):
    shape = data.draw(shapes(min_dims=1, min_side=0), label="shape")
    r = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-r, r)), label="axis")
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
    got = run(lambda b, h: es.Flatten(h) if axis is None else es.Flatten(h, axis=axis), (x, d))
    a = 1 if axis is None else (axis + r if axis < 0 else axis)
    rows = int(np.prod(shape[:a]))
    same(got[0], x.reshape(rows, int(np.prod(shape[a:]))), d, f"Flatten {shape} axis={axis}")


@dtype_test("Transpose")
def test_transpose(data, d):
    shape = data.draw(shapes(min_dims=0, max_dims=5, min_side=0), label="shape")
    r = len(shape)
    perm = data.draw(st.permutations(range(r)), label="perm")
    perm = [p - r if data.draw(st.booleans()) else p for p in perm]
    index_dt = data.draw(st.sampled_from(["int32", "int64"]))
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
    got = run(lambda b, h: es.Transpose(h, vector(b, perm, index_dt)), (x, d))
    same(got[0], np.transpose(x, [p % r for p in perm]) if r else x, d, f"Transpose {shape} {perm}")


@pytest.mark.parametrize("op", list(dtypes_of("ConcatV2", "ConcatD", "Pack")))
@HYP
@given(data=st.data())
def test_concat_and_pack(op, data):
    for d in dtypes_of("ConcatV2", "ConcatD", "Pack")[op]:
        with case(op, d):
            shape = data.draw(shapes(min_dims=0 if op == "Pack" else 1, max_dims=4, min_side=0),
                              label="shape")
            r = len(shape)
            nx = data.draw(st.integers(1, 4), label="N")
            rng = np.random.default_rng(data.draw(SEEDS))
            if op == "Pack":
                axis = data.draw(st.integers(-(r + 1), r), label="axis")
                xs = [values(rng, d, shape) for _ in range(nx)]
                got = run(lambda b, *hs: es.Pack(list(hs), axis=axis), *[(x, d) for x in xs])
                same(got[0], np.stack(xs, axis=axis), d, f"Pack {shape} x{nx} axis={axis}")
                continue
            axis = data.draw(st.integers(-r, r - 1), label="axis")
            xs = []
            for _ in range(nx):
                s = list(shape)
                s[axis] = data.draw(st.integers(0, 3))
                xs.append(values(rng, d, s))
            if op == "ConcatV2":
                index_dt = data.draw(st.sampled_from(["int32", "int64"]))
                got = run(lambda b, *hs: es.ConcatV2(list(hs), const(b, axis, index_dt)),
                          *[(x, d) for x in xs])
            else:
                got = run(lambda b, *hs: es.ConcatD(list(hs), concat_dim=axis), *[(x, d) for x in xs])
            same(got[0], np.concatenate(xs, axis=axis), d, f"{op} axis={axis}")


@dtype_test("Tile")
def test_tile(data, d):
    shape = data.draw(shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), label="shape")
    extra = data.draw(st.integers(0, 2), label="extra multiples")  # x is right-aligned (numpy)
    n = len(shape) + extra
    reps = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="multiples")
    index_dt = data.draw(st.sampled_from(["int32", "int64"]))
    x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
    got = run(lambda b, h: es.Tile(h, vector(b, reps, index_dt)), (x, d))
    same(got[0], np.tile(x, reps) if reps else x, d, f"Tile {shape} by {reps}")


@pytest.mark.parametrize("op", list(dtypes_of("BroadcastTo", "Expand")))
@HYP
@given(data=st.data())
def test_broadcast_to_and_expand(op, data):
    for d in dtypes_of("BroadcastTo", "Expand")[op]:
        with case(op, d):
            if op == "BroadcastTo":
                target = list(data.draw(shapes(min_dims=0, max_dims=4, min_side=0), label="target"))
                r = data.draw(st.integers(0, len(target)), label="x rank")
                shape = [1 if data.draw(st.booleans()) else t for t in target[len(target) - r:]]
            else:
                shape, target = data.draw(broadcastable(), label="x and target")
                target = list(target)
            index_dt = data.draw(st.sampled_from(["int32", "int64"]))
            x = values(np.random.default_rng(data.draw(SEEDS)), d, shape)
            got = run(lambda b, h: op_fn(op)(h, vector(b, target, index_dt)), (x, d))
            out = np.broadcast_shapes(tuple(shape), tuple(target))
            same(got[0], np.broadcast_to(x, out), d, f"{op} {shape} to {target}")


@HYP
@given(shape=shapes(min_dims=0, max_dims=5, min_side=0), dtype=st.sampled_from([None, "int32", "int64"]))
def test_shape(shape, dtype):
    op = "Shape"
    for d in proto_dtypes(op):
        with case(op, d):
            x = values(np.random.default_rng(0), d, shape)
            kw = {} if dtype is None else {"dtype": int(GE_DT[dtype])}
            got = run(lambda b, h: es.Shape(h, **kw), (x, d))
            out_d = dtype or "int32"  # GE's default: DT_INT32
            same(got[0], np.array(shape, dtype=NP[out_d]).reshape(len(shape)), out_d, "Shape")


@pytest.mark.parametrize("op", list(dtypes_of(("Select", "x1"), ("SelectV2", "then"))))
@HYP
@given(data=st.data())
def test_select(op, data):
    for d in dtypes_of(("Select", "x1"), ("SelectV2", "then"))[op]:
        with case(op, d):
            rng = np.random.default_rng(data.draw(SEEDS))
            if op == "SelectV2":
                sc, sa, sb = data.draw(broadcastable(3, max_side=3), label="shapes")
            else:
                sa = data.draw(shapes(min_dims=0, max_dims=3, min_side=1, max_side=3), label="x shape")
                sb = sa
                vector = len(sa) > 1 and data.draw(st.booleans(), label="vector condition")
                sc = (sa[0],) if vector else sa
            c = values(rng, "bool", sc)
            a, b = values(rng, d, sa), values(rng, d, sb)
            got = run(lambda bl, hc, ha, hb: op_fn(op)(hc, ha, hb), (c, "bool"), (a, d), (b, d))
            cc = c.reshape(c.shape + (1,) * (len(sa) - 1)) if op == "Select" and c.shape != tuple(sa) else c
            same(got[0], np.where(cc, a, b), d, f"{op} {sc} {sa} {sb}")


@HYP
@given(shape=shapes(min_side=0), seed=SEEDS)
def test_zeros_like(shape, seed):
    op = "ZerosLike"
    for d in proto_dtypes(op):
        with case(op, d):
            x = values(np.random.default_rng(seed), d, shape)  # with inf and NaN: zeros all the same
            got = run(lambda b, h: es.ZerosLike(h), (x, d))
            same(got[0], np.zeros_like(x), d, "ZerosLike")


@HYP
@given(shape=shapes(min_dims=0, min_side=0), seed=SEEDS, index_dt=st.sampled_from(["int32", "int64"]))
def test_fill(shape, seed, index_dt):
    for d in proto_dtypes("Fill", "value"):
        with case("Fill", d):
            v = values(np.random.default_rng(seed), d, ())
            got = run(lambda b, h: es.Fill(vector(b, shape, index_dt), h), (v, d))
            same(got[0], np.full(shape, v, dtype=v.dtype), d, f"Fill {shape} with {v!r}")


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,d", [(op, d) for op in ("Div", "RealDiv", "FloorDiv", "FloorMod", "Mod")
                                  for d in proto_dtypes(op) if d in INTS])
def test_integer_division_by_zero_names_the_node(op, d):
    a = np.array([[1, 2, 3], [4, 5, 6]], NP[d])
    b = np.array([1, 0, 2], NP[d])
    with pytest.raises(ge.ExecutionError, match=rf"; node '{op}_0' \({op}\): integer division by zero$"):
        run(lambda bl, x, y: op_fn(op)(x, y), (a, d), (b, d))
    # DivNoNan gives 0 instead.
    if op == "Div" and d in proto_dtypes("DivNoNan"):
        got = run(lambda bl, x, y: es.DivNoNan(x, y), (a, d), (b, d))
        check(got[0], np.array([[1, 0, 1], [4, 0, 3]], NP[d]), d)


# Shapes that do not fit: with known shapes the builder refuses the op; with unknown dims the
# compile (shape inference on the run's actual shapes, before any kernel runs) refuses the graph,
# naming the node, in both modes alike. (The kernels' own checks, for graphs that reach them
# another way, are unit-tested in Rust.)


@pytest.mark.parametrize("op", ["Add", "Mul", "Maximum", "Equal", "FloorMod", "SquaredDifference",
                                "BitwiseAnd"])
def test_mismatched_broadcast_shapes(op):
    d = "int32" if op.startswith("Bitwise") else "float32"
    a, b = np.ones((2, 3), NP[d]), np.ones((4,), NP[d])
    with pytest.raises(ge.GeError, match=r"\[2, 3\] and \[4\] cannot be broadcast"):
        run(lambda bl, x, y: op_fn(op)(x, y), (a, d), (b, d))
    with pytest.raises(ge.GeError, match=rf"{op} '{op}_0': .*\[2, 3\] and \[4\] cannot be broadcast"):
        run(lambda bl, x, y: op_fn(op)(x, y), (a, d), (b, d), dims=[[-1, -1], [-1]])


def test_mismatched_select_and_matmul_shapes():
    c, a = np.ones((2, 3), bool), np.ones((2, 3), np.float32)
    with pytest.raises(ge.GeError, match=r"SelectV2 'SelectV2_0': .* cannot be broadcast"):
        run(lambda bl, x, y, z: es.SelectV2(x, y, z), (c, "bool"), (a, "float32"),
            (np.ones(4, np.float32), "float32"), dims=[[-1, -1], [-1, -1], [-1]])
    with pytest.raises(ge.GeError, match=r"MatMulV2 'MatMulV2_0'"):
        run(lambda bl, x, y: es.MatMulV2(x, y), (a, "float32"), (np.ones((2, 2), np.float32), "float32"),
            dims=[[-1, -1], [-1, -1]])


def test_an_op_without_a_kernel_is_not_supported():
    if "KernelTestNoKernelOp" not in ge.ops.list_ops():
        ge.ops.register_regop(float_regop("KernelTestNoKernelOp"))
    fn = op_fn("KernelTestNoKernelOp")
    with pytest.raises(ge.GeError, match=r"; not supported: no CPU kernel for: KernelTestNoKernelOp \(node "):
        run(lambda b, h: es.Exp(fn(h)), (np.ones(2, np.float32), "float32"))
