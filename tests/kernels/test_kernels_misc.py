"""CPU kernels that crates/ge-runtime/src/kernels/misc.rs held (now in their families' files)
against numpy references.

Every case builds a one-op graph with ``ge.es`` and runs it through ``ge.session.Session`` in
graph mode (a captured plan) and in eager mode (``ge.graphMode`` off); the two must give
byte-identical outputs (or the same error), and the outputs must match a numpy reference written
here: numpy's own function where there is one (``np.einsum``, ``np.linalg.det``, ``np.unique``,
``np.cumprod``-style loops, ``np.round``, ``np.arctan2``, ``np.left_shift``, ``np.clip``-style
``minimum(maximum())``, ``ndarray.view``), naive loops otherwise (EmbeddingBag, the
SpaceToDepth/DepthToSpace reshapes). Each test runs every dtype the operator's prototype allows
that the CPU backend has (read from ``ge.ops.get_op``). Hypothesis draws shapes, attributes and
a seed for the values, deterministically (a fixed seed, no example database).

bf16: inputs are float32 values rounded to bf16 (round to nearest even), fed as their uint16 bits
(how ``ge.graph.Tensor`` takes bf16); outputs come back as bits and are compared as float32.

Tolerances. Integer and bool results are exact; so are floats (equal, NaN equal to NaN) where
the reference repeats the kernel's arithmetic: data movement (ExpandD, FlattenV2, SpaceToDepth,
DepthToSpace, Bitcast byte for byte, MaskedFill, Fills, Unique), ClipByValue, Round, FusedMulAdd
and Addcmul (f32/f64 in their own precision, f16 and bf16 computed in f32 and rounded once),
Cumprod (numpy's step-by-step rounding in the dtype), EmbeddingBag's max mode and RandomUniform
(TensorFlow's Philox stream, computed here in Python). The others are checked as
``|got - want| <= rtol * (|want| + scale)``, NaN exactly where NaN and the same infinities:

- Atan2: rtol 3 ulp (f64), 2 ulp (f32) against the float64 reference; 1 ulp for f16/bf16
  (computed in f32 and rounded once, where rounding the reference may go the other way);
  scale 0.
- ReduceLogSumExp (computed in f64, rounded once): rtol 1 ulp of the dtype, scale
  ``|max| + |log(sum(exp(x - max)))|`` (the result's two terms, which may cancel).
- Einsum and EmbeddingBag sum/mean (sums in another order than the float64 reference): rtol
  ``2^-20`` (plus 1 ulp of f16/bf16), scale ``sum(|terms|)``.
- MatrixDeterminant (LU in f64 against numpy's LAPACK in f64): rtol ``1e-12`` (plus 1 ulp for
  f32 results), scale ``prod(row norms)`` (Hadamard's bound on |det|).

Errors: each run-time error of the kernels that a graph can reach (the shape rules catch the
others at compile time; the Rust unit tests cover those paths) has a test: ``ge.ExecutionError``
for bad values, ``ge.GeError`` ("not supported: ...") for what the backend does not do.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

import ge
import ge.ops
import numpy as np
import pytest
from ge.es import all as ops
from ge.graph import DataType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# The shared harness: dtype tables, bf16, the graph/eager runner (graph and eager mode must give
# the same bytes or the same error).
from kernel_harness import (  # noqa: E402
    FLOATS, GE_DT, INTS, NAME_OF, NP, case, const, proto_dtypes, run, run1, to_dtype, ulp, up,
)
from kernel_harness import broadcastable as harness_broadcastable  # noqa: E402
from kernel_harness import fails as harness_fails  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


def check(got: Tuple[str, np.ndarray], want: Any, d: str, rtol: float = 0.0, atol: float = 0.0,
          scale: Any = None) -> None:
    """``got`` has dtype ``d`` and ``want``'s shape; equal (NaN equal to NaN) when no tolerance
    is given, else within ``atol + rtol * |want|`` (``+ rtol * scale``)."""
    gd, a = got
    want = np.asarray(want)
    assert gd == d, (gd, d)
    assert a.shape == want.shape, (a.shape, want.shape)
    if d not in FLOATS:
        np.testing.assert_array_equal(a, want.astype(NP[d]))
        return
    a64, e64 = a.astype(np.float64), to_dtype(want, d).astype(np.float64)
    if rtol == 0.0 and atol == 0.0 and scale is None:
        assert np.array_equal(a64, e64, equal_nan=True), (a64, e64)
        return
    assert np.array_equal(np.isnan(a64), np.isnan(e64)), (a64, e64)
    inf = np.isinf(e64)
    assert np.array_equal(a64[inf], e64[inf]), (a64, e64)
    fin = np.isfinite(e64)
    bound = atol + rtol * np.abs(e64)
    if scale is not None:
        bound = bound + rtol * np.broadcast_to(np.asarray(scale, np.float64), e64.shape)
    with np.errstate(invalid="ignore"):
        err = np.abs(a64 - e64)
    bad = fin & ~(err <= bound)
    assert not bad.any(), f"{d}: got {a64[bad][:5]}, want {e64[bad][:5]} (bound {bound[bad][:5]})"


def fails(build: Callable[..., Any], *inputs: Tuple[np.ndarray, str], exc: Any = ge.ExecutionError,
          match: Optional[str] = None) -> None:
    harness_fails(build, *inputs, exc=exc, match=match)


# ---------------------------------------------------------------------------------------------
# Values and strategies
# ---------------------------------------------------------------------------------------------

HYP = settings(max_examples=80, deadline=None, database=None, derandomize=True,
               suppress_health_check=list(HealthCheck))
SEEDS = st.integers(0, 2**32 - 1)


def values(rng: np.random.Generator, d: str, shape: Sequence[int], lo: float = -4.0, hi: float = 4.0,
           special: bool = True) -> np.ndarray:
    """Values of dtype ``d``: floats uniform in [lo, hi] (some small integers, and with
    ``special`` zeros, infinities and NaN), integers over the whole range or small ones, bools."""
    shape = tuple(shape)
    n = int(np.prod(shape))
    if d == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if d in INTS:
        info = np.iinfo(NP[d])
        if rng.random() < 0.5:
            v = rng.integers(max(int(info.min), -8), 9, size=n)
        else:
            v = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=NP[d])
        return np.asarray(v).astype(NP[d]).reshape(shape)
    x = rng.uniform(lo, hi, n)
    x = np.where(rng.random(n) < 0.2, rng.integers(-3, 4, n).astype(np.float64), x)
    if special and n:
        extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
        m = rng.random(n) < 0.1
        x[m] = extra[rng.integers(len(extra), size=int(m.sum()))]
    return to_dtype(x.reshape(shape), d)


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> Any:
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def broadcastable(n: int = 2, max_dims: int = 3, max_side: int = 3) -> Any:
    """``n`` shapes that broadcast together, of at most ``max_dims`` dims of 0..``max_side``."""
    return harness_broadcastable(n, base=shapes(0, max_dims, 0, max_side))


# ---------------------------------------------------------------------------------------------
# Element-wise
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,build,ref", [
    pytest.param("FusedMulAdd", lambda b, p, q, r: ops.FusedMulAdd(p, q, r),
                 lambda d, x, y, z: up(x, d) * up(y, d) + up(z, d), id="fused_mul_add"),
    # numpy's NaN-propagating clip
    pytest.param("ClipByValue", lambda b, p, q, r: ops.ClipByValue(p, q, r),
                 lambda d, x, lo, hi: np.minimum(np.maximum(x, lo), hi), id="clip_by_value"),
])
@HYP
@given(shp=broadcastable(3), seed=SEEDS)
def test_ternary_elementwise(op, build, ref, shp, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes(op):
        with case(d):
            xs = [values(rng, d, s) for s in shp]
            got = run1(build, *[(x, d) for x in xs])
            with np.errstate(all="ignore"):
                want = ref(d, *xs)
            check(got, want, d)


@HYP
@given(shp=broadcastable(3), vshape=st.sampled_from([(), (1,), (1, 1)]), seed=SEEDS)
def test_addcmul(shp, vshape, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("Addcmul"):
        with case(d):
            xs = [values(rng, d, s) for s in shp]
            v = values(rng, d, vshape, special=False)
            got = run1(lambda b, p, q, r, w: ops.Addcmul(p, q, r, w), *[(x, d) for x in xs], (v, d))
            with np.errstate(all="ignore"):
                # PyTorch's order: input + (value * x1) * x2.
                want = up(xs[0], d) + (up(v, d).reshape(()) * up(xs[1], d)) * up(xs[2], d)
            check(got, want, d)


@HYP
@given(shp=broadcastable(2), seed=SEEDS)
def test_masked_fill(shp, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("MaskedFill"):
        with case(d):
            x = values(rng, d, shp[0])
            mask = rng.random(shp[1]) < 0.5
            v = values(rng, d, (), special=False)
            got = run1(lambda b, p, m, w: ops.MaskedFill(p, m, w), (x, d), (mask, "bool"), (v, d))
            check(got, np.where(mask, v, x), d)


@HYP
@given(shp=shapes(), decimals=st.integers(-3, 3), seed=SEEDS)
def test_round(shp, decimals, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("Round"):
        with case(d):
            if d in INTS:
                x = rng.integers(-5000, 5000, size=shp).astype(NP[d])
                x.flat[: min(3, x.size)] = [15, -25, 35][: min(3, x.size)]  # ties go to even
            else:
                x = values(rng, d, shp, -100.0, 100.0)
                x = np.where(rng.random(shp) < 0.3, to_dtype(rng.integers(-40, 40, shp) / 4.0, d), x)
            got = run1(lambda b, p: ops.Round(p, decimals=decimals), (x, d))
            with np.errstate(all="ignore"):
                # numpy's round in the type the kernel computes in (f16/bf16: f32).
                want = np.round(up(x, d), decimals)
            check(got, want, d)


def test_round_integers_exactly():
    x = np.array([5, 15, 25, -5, -15, 149, 150, 250, -250, 2**62 + 5], np.int64)
    got = run1(lambda b, p: ops.Round(p, decimals=-1), (x, "int64"))
    check(got, [0, 20, 20, 0, -20, 150, 150, 250, -250, 2**62 + 6], "int64")
    got = run1(lambda b, p: ops.Round(p, decimals=-2), (x, "int64"))
    check(got, [0, 0, 0, 0, 0, 100, 200, 200, -200, 2**62 - 4], "int64")


@HYP
@given(shp=shapes(), seed=SEEDS)
def test_invert(shp, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("Invert"):
        with case(d):
            x = values(rng, d, shp)
            check(run1(lambda b, p: ops.Invert(p), (x, d)), np.invert(x), d)


@HYP
@given(shp=broadcastable(2), seed=SEEDS)
def test_atan2(shp, seed):
    rng = np.random.default_rng(seed)
    rtol = {"float64": 3 * ulp("float64"), "float32": 2 * ulp("float32"), "float16": ulp("float16"),
            "bfloat16": ulp("bfloat16")}
    for d in proto_dtypes("Atan2"):
        with case(d):
            y, x = values(rng, d, shp[0]), values(rng, d, shp[1])
            got = run1(lambda b, p, q: ops.Atan2(p, q), (y, d), (x, d))
            want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
            check(got, want, d, rtol=rtol[d], atol=1e-300)


@HYP
@given(shp=broadcastable(2), left=st.booleans(), seed=SEEDS)
def test_shifts_follow_numpy(shp, left, seed):
    rng = np.random.default_rng(seed)
    op = ops.LeftShift if left else ops.RightShift
    ref = np.left_shift if left else np.right_shift
    for d in proto_dtypes("LeftShift" if left else "RightShift"):
        with case(d):
            x = values(rng, d, shp[0])
            bits = np.iinfo(NP[d]).bits
            lo = -3 if np.iinfo(NP[d]).min < 0 else 0
            # Counts past the width and negative ones: 0 (or -1 shifting a negative value right).
            n = rng.integers(lo, bits + 3, size=shp[1]).astype(NP[d])
            check(run1(lambda b, p, q: op(p, q), (x, d), (n, d)), ref(x, n), d)


@pytest.mark.parametrize("value", [2.75, 0.0, -1.5, 300.0])
def test_fills(value):
    rng = np.random.default_rng(1)
    for d in proto_dtypes("Fills"):
        if d in INTS and not (np.iinfo(NP[d]).min <= int(value) <= np.iinfo(NP[d]).max):
            continue  # out of range: numpy's float -> int conversion is undefined
        with case(d):
            x = values(rng, d, (2, 3))
            got = run1(lambda b, p: ops.Fills(p, value=value), (x, d))
            v = np.float32(value)
            want = np.full(x.shape, v != 0 if d == "bool" else (np.trunc(v) if d in INTS else v))
            check(got, want, d)


BITCASTS = [
    ("int32", "uint8", False), ("uint8", "int32", False), ("float32", "int16", True),
    ("float64", "uint32", False), ("int64", "float64", False), ("uint16", "int64", True),
    ("float16", "int8", False), ("int8", "float16", True), ("bool", "uint8", False),
    ("uint8", "bool", False), ("uint64", "int16", True), ("int16", "uint16", False),
]


@pytest.mark.parametrize("src,dst,keep", BITCASTS)
def test_bitcast_reinterprets_bytes(src, dst, keep):
    assert src in [*proto_dtypes("Bitcast"), "bfloat16"]
    rng = np.random.default_rng(2)
    si, so = np.dtype(NP[src]).itemsize, np.dtype(NP[dst]).itemsize
    last = max(so // si, 1) * 2 if keep else (so // si if so > si else 3)
    shape = (2, last)
    if src == "uint8" and dst == "bool":
        x = rng.integers(0, 2, size=shape).astype(np.uint8)  # a bool byte is 0 or 1
    else:
        x = values(rng, src, shape)
    got = run1(lambda b, p: ops.Bitcast(p, type=GE_DT[dst], keep_dim=keep), (x, src))
    if keep or si == so:
        want = x.view(NP[dst])  # numpy's view rescales the last dim
    elif si > so:
        want = x.view(NP[dst]).reshape(shape + (si // so,))
    else:
        want = x.view(NP[dst]).reshape(shape[:-1])
    assert got[0] == dst and got[1].shape == want.shape and got[1].tobytes() == want.tobytes()


# ---------------------------------------------------------------------------------------------
# Cumprod, ReduceLogSumExp
# ---------------------------------------------------------------------------------------------


def cumprod_ref(x: np.ndarray, axis: int, exclusive: bool, reverse: bool, d: str) -> np.ndarray:
    """numpy's cumprod loop: one product per step, rounded to the dtype (bf16 through f32)."""
    a = np.moveaxis(np.asarray(x), axis, -1)
    if reverse:
        a = a[..., ::-1]
    out = np.empty_like(a)
    acc = np.ones(a.shape[:-1], a.dtype)
    for k in range(a.shape[-1]):
        with np.errstate(all="ignore"):
            nxt = to_dtype(acc * a[..., k], d)
        out[..., k] = acc if exclusive else nxt
        acc = nxt
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


@HYP
@given(shp=shapes(min_dims=1, max_side=5), data=st.data(), exclusive=st.booleans(), reverse=st.booleans(),
       seed=SEEDS)
def test_cumprod(shp, data, exclusive, reverse, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shp), len(shp) - 1))
    for d in proto_dtypes("Cumprod"):
        for ad in proto_dtypes("Cumprod", "axis"):
            with case(f"{d}, axis {ad}"):
                x = values(rng, d, shp, -2.0, 2.0)
                got = run1(lambda b, p: ops.Cumprod(p, const(b, axis, ad), exclusive=exclusive,
                                                    reverse=reverse), (x, d))
                check(got, cumprod_ref(x, axis, exclusive, reverse, d), d)


def lse_ref(x: np.ndarray, axes: Tuple[int, ...], keep: bool) -> Tuple[np.ndarray, np.ndarray]:
    """log(sum(exp(x))) over ``axes`` in f64, and the scale of its terms (|max| + |log(sum)|)."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axes, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        s = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True))
        r, scale = s + m, np.abs(s) + np.abs(m)
    if not keep:
        r, scale = np.squeeze(r, axis=axes), np.squeeze(scale, axis=axes)
    return r, scale


@HYP
@given(shp=shapes(max_side=4), data=st.data(), keep=st.booleans(), seed=SEEDS)
def test_reduce_log_sum_exp(shp, data, keep, seed):
    rng = np.random.default_rng(seed)
    r = len(shp)
    axes = data.draw(st.lists(st.integers(0, max(r - 1, 0)), unique=True, max_size=r)) if r else []
    neg = data.draw(st.booleans())
    given_axes = [a - r if neg else a for a in axes]
    noop = data.draw(st.booleans())
    for d in proto_dtypes("ReduceLogSumExp"):
        with case(d):
            x = values(rng, d, shp, -60.0, 60.0, special=rng.random() < 0.3)
            axes_v = np.array(given_axes, np.int64).reshape(-1)
            got = run1(lambda b, p: ops.ReduceLogSumExp(p, const(b, axes_v), keep_dims=keep,
                                                        noop_with_empty_axes=noop), (x, d))
            if not axes and noop:
                check(got, x, d)
                continue
            want, scale = lse_ref(x, tuple(axes) if axes else tuple(range(r)), keep)
            check(got, want, d, rtol=ulp(d), scale=scale)


def test_reduce_log_sum_exp_of_nothing_is_minus_infinity():
    x = np.zeros((2, 0), np.float32)
    got = run1(lambda b, p: ops.ReduceLogSumExp(p, const(b, [1])), (x, "float32"))
    check(got, np.full(2, -np.inf), "float32")


# ---------------------------------------------------------------------------------------------
# Shape queries and rearrangements
# ---------------------------------------------------------------------------------------------


@HYP
@given(shp=shapes(max_dims=4, min_side=0), seed=SEEDS)
def test_size_and_rank(shp, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("Size"):
        with case(d):
            x = values(rng, d, shp)
            i64 = int(DataType.DT_INT64)
            s32, s64, rk = run(lambda b, p: [ops.Size(p), ops.Size(p, dtype=i64), ops.Rank(p)], (x, d))
            check(s32, np.int32(x.size), "int32")
            check(s64, np.int64(x.size), "int64")
            check(rk, np.int32(x.ndim), "int32")


@HYP
@given(shp=broadcastable(2, max_dims=4), seed=SEEDS)
def test_expand_d_is_a_two_way_broadcast(shp, seed):
    rng = np.random.default_rng(seed)
    xs, target = shp
    for d in proto_dtypes("ExpandD"):
        with case(d):
            x = values(rng, d, xs)
            got = run1(lambda b, p: ops.ExpandD(p, shape=list(target)), (x, d))
            check(got, np.broadcast_to(x, np.broadcast_shapes(xs, target)), d)


@HYP
@given(shp=shapes(min_dims=1, max_dims=4, min_side=0), data=st.data(), seed=SEEDS)
def test_flatten_v2(shp, data, seed):
    rng = np.random.default_rng(seed)
    r = len(shp)
    a = data.draw(st.integers(0, r - 1))
    e = data.draw(st.integers(a, r - 1))
    axis = a - r if data.draw(st.booleans()) else a
    end = e - r if data.draw(st.booleans()) else e
    for d in proto_dtypes("FlattenV2"):
        with case(d):
            x = values(rng, d, shp)
            got = run1(lambda b, p: ops.FlattenV2(p, axis=axis, end_axis=end), (x, d))
            check(got, x.reshape(shp[:a] + (int(np.prod(shp[a:e + 1])),) + shp[e + 1:]), d)


def s2d_ref(x: np.ndarray, bs: int) -> np.ndarray:
    """TensorFlow's SpaceToDepth on NHWC: out[n, y, x, (bh * bs + bw) * C + c]."""
    n, h, w, c = x.shape
    y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h // bs, w // bs, -1)


def d2s_ref(x: np.ndarray, bs: int, mode: str) -> np.ndarray:
    """DepthToSpace on NHWC: DCR reads channel (bh * bs + bw) * C + c, CRD c * bs * bs + bh * bs + bw."""
    n, h, w, c = x.shape
    oc = c // (bs * bs)
    if mode == "DCR":
        y = x.reshape(n, h, w, bs, bs, oc).transpose(0, 1, 3, 2, 4, 5)
    else:
        y = x.reshape(n, h, w, oc, bs, bs).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, h * bs, w * bs, oc)


@HYP
@given(n=st.integers(1, 2), hw=st.tuples(st.integers(1, 3), st.integers(1, 3)), c=st.integers(1, 3),
       bs=st.integers(2, 3), nchw=st.booleans(), crd=st.booleans(), seed=SEEDS)
def test_space_to_depth_and_back(n, hw, c, bs, nchw, crd, seed):
    rng = np.random.default_rng(seed)
    fmt = "NCHW" if nchw else "NHWC"
    mode = "CRD" if crd else "DCR"
    to_layout = (lambda a: np.ascontiguousarray(a.transpose(0, 3, 1, 2))) if nchw else (lambda a: a)
    for d in proto_dtypes("SpaceToDepth"):
        with case(d):
            x = values(rng, d, (n, hw[0] * bs, hw[1] * bs, c))
            got = run1(lambda b, p: ops.SpaceToDepth(p, block_size=bs, data_format=fmt), (to_layout(x), d))
            check(got, to_layout(s2d_ref(x, bs)), d)
            deep = values(rng, d, (n, hw[0], hw[1], c * bs * bs))
            got = run1(lambda b, p: ops.DepthToSpace(p, block_size=bs, mode=mode, data_format=fmt),
                       (to_layout(deep), d))
            check(got, to_layout(d2s_ref(deep, bs, mode)), d)


# ---------------------------------------------------------------------------------------------
# Einsum
# ---------------------------------------------------------------------------------------------

EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ij,jk", [(2, 3), (3, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i->...", [(3, 1, 4), (2, 4)]),
    ("i...->...i", [(3, 2, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),
    ("i,ij,ijk->k", [(2,), (2, 3), (2, 3, 2)]),
    ("ijk,ikj->i", [(2, 3, 3), (2, 3, 3)]),
    ("Ab,bA->A", [(2, 3), (3, 2)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
    (",i->i", [(), (3,)]),
    ("ij,kj->ikj", [(2, 0), (3, 0)]),
]


@pytest.mark.parametrize("eq,shps", EINSUMS)
def test_einsum_matches_numpy(eq, shps):
    rng = np.random.default_rng(zlib.crc32(eq.encode()))
    for d in proto_dtypes("Einsum"):
        with case(d):
            xs = [values(rng, d, s, -2.0, 2.0, special=False) for s in shps]
            got = run1(lambda b, *hs: ops.Einsum(list(hs), equation=eq, N=len(hs)), *[(x, d) for x in xs])
            np_eq = eq.replace(" ", "")
            if d in INTS:
                want = np.einsum(np_eq, *[x.astype(np.int64) for x in xs])
                check(got, np.asarray(want).astype(NP[d]), d)  # wraps like the kernel
            else:
                want = np.einsum(np_eq, *[x.astype(np.float64) for x in xs])
                scale = np.einsum(np_eq, *[np.abs(x.astype(np.float64)) for x in xs])
                check(got, want, d, rtol=2.0**-20 + (ulp(d) if d != "float32" else 0.0), scale=scale)


def test_einsum_sums_ellipsis_dims_missing_from_the_output():
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    got = run1(lambda b, p: ops.Einsum([p], equation="...i->i", N=1), (x, "float32"))
    check(got, x.sum(axis=(0, 1)), "float32")


# ---------------------------------------------------------------------------------------------
# EmbeddingBag
# ---------------------------------------------------------------------------------------------


def bag_ref(w, idx, offsets, psw, mode, padding, last):
    """PyTorch's embedding_bag forward, with naive loops in f64."""
    flat = np.asarray(idx).reshape(-1)
    n = flat.size
    if offsets is None:
        rows, length = idx.shape
        bounds = [(r * length, r * length + length) for r in range(rows)]
    else:
        off = [int(o) for o in offsets]
        bags = len(off) - 1 if last else len(off)
        bounds = [(off[k], off[k + 1] if k + 1 < bags else n) for k in range(bags)]
    dim = w.shape[1]
    w64 = w.astype(np.float64)
    y = np.zeros((len(bounds), dim))
    scale = np.zeros((len(bounds), dim))
    o2b = np.zeros(n, np.int64)
    size = np.zeros(len(bounds), np.int64)
    mi = np.zeros((len(bounds), dim) if mode == "max" else len(bounds), np.int64)
    for k, (s, e) in enumerate(bounds):
        o2b[s:e] = k
        used = [i for i in range(s, e) if not (padding >= 0 and flat[i] == padding)]
        size[k] = len(used)
        if not used:
            continue
        rows = w64[flat[used]]
        if mode == "max":
            y[k] = rows.max(axis=0)
            mi[k] = flat[used][rows.argmax(axis=0)]  # the first of equal maxima
        else:
            wts = np.ones(len(used)) if psw is None else np.asarray(psw, np.float64).reshape(-1)[used]
            y[k] = (rows * wts[:, None]).sum(axis=0)
            scale[k] = np.abs(rows * wts[:, None]).sum(axis=0)
            if mode == "mean":
                y[k] /= len(used)
                scale[k] /= len(used)
    return y, scale, o2b, size, mi


@HYP
@given(num=st.integers(1, 6), dim=st.integers(1, 4), lens=st.lists(st.integers(0, 4), min_size=1, max_size=4),
       mode=st.sampled_from(["sum", "mean", "max"]), padding=st.integers(-1, 3), last=st.booleans(),
       weighted=st.booleans(), two_d=st.booleans(), seed=SEEDS)
def test_embedding_bag(num, dim, lens, mode, padding, last, weighted, two_d, seed):
    rng = np.random.default_rng(seed)
    weighted = weighted and mode == "sum"
    if two_d:
        lens = [lens[0]] * len(lens)
    n = sum(lens)
    off = np.cumsum([0] + lens)
    offsets = None if two_d else (off if last else off[:-1])
    for d in proto_dtypes("EmbeddingBag"):
        for idt in proto_dtypes("EmbeddingBag", "indices"):
            with case(f"{d}, indices {idt}"):
                w = values(rng, d, (num, dim), special=False)
                idx = rng.integers(0, num, size=n).astype(NP[idt])
                if two_d:
                    idx = idx.reshape(len(lens), lens[0])
                psw = values(rng, d, idx.shape, special=False) if weighted else None
                inputs = [(w, d), (idx, idt)]
                if offsets is not None:
                    inputs.append((offsets.astype(NP[idt]), idt))
                if psw is not None:
                    inputs.append((psw, d))

                def build(b, wh, ih, *rest):
                    oh = rest[0] if offsets is not None else None
                    ph = rest[-1] if psw is not None else None
                    return ops.EmbeddingBag(wh, ih, oh, ph, mode=mode, padding_idx=padding,
                                            include_last_offset=last)

                y, o2b, size, mi = run(build, *inputs)
                want, scale, w_o2b, w_size, w_mi = bag_ref(w, idx, offsets, psw, mode, padding, last)
                if mode == "max":
                    check(y, want, d)
                else:
                    check(y, want, d, rtol=2.0**-20 + (ulp(d) if d != "float32" else 0.0), scale=scale)
                # The index outputs have the dtype of indices (the shape rule's).
                check(o2b, w_o2b, idt)
                check(size, w_size, idt)
                check(mi, w_mi, idt)


# ---------------------------------------------------------------------------------------------
# UniqueWithCountsAndSorting, MatrixDeterminant
# ---------------------------------------------------------------------------------------------


@HYP
@given(shp=shapes(max_side=5), inverse=st.booleans(), counts=st.booleans(), sort=st.booleans(),
       idx32=st.booleans(), seed=SEEDS)
def test_unique(shp, inverse, counts, sort, idx32, seed):
    rng = np.random.default_rng(seed)
    idt = "int32" if idx32 else "int64"
    for d in proto_dtypes("UniqueWithCountsAndSorting"):
        with case(d):
            x = values(rng, d, shp)
            if d in FLOATS:  # repeats, NaNs (each its own value) and both zeros
                pool = to_dtype(np.array([1.5, -2.0, 0.0, -0.0, np.nan, np.inf, 3.0]), d)
                picks = pool[rng.integers(len(pool), size=shp)]
                x = np.where(rng.random(shp) < 0.6, picks, x).astype(x.dtype)
            elif d in INTS:
                x = np.where(rng.random(shp) < 0.6, x.flat[0] if x.size else 0, x).astype(x.dtype)
            y, inv, cnt = run(lambda b, p: list(ops.UniqueWithCountsAndSorting(
                p, return_inverse=inverse, return_counts=counts, sorted=sort, out_idx=GE_DT[idt])), (x, d))
            u, first, w_inv, w_cnt = np.unique(x.reshape(-1), return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
            w_inv = np.asarray(w_inv).reshape(-1)
            if not sort:  # order of first occurrence
                order = np.argsort(first, kind="stable")
                rank = np.empty_like(order)
                rank[order] = np.arange(len(order))
                u, w_cnt, w_inv = u[order], w_cnt[order], rank[w_inv]
            check(y, u, d)
            check(inv, w_inv.reshape(x.shape) if inverse else np.zeros(0), idt)
            check(cnt, w_cnt if counts else np.zeros(0), idt)


@HYP
@given(batch=shapes(max_dims=2, max_side=3), m=st.integers(0, 5), seed=SEEDS)
def test_matrix_determinant(batch, m, seed):
    rng = np.random.default_rng(seed)
    for d in proto_dtypes("MatrixDeterminant"):
        with case(d):
            x = to_dtype(rng.uniform(-2, 2, batch + (m, m)), d)
            if m >= 2 and rng.random() < 0.3:
                x[..., 1, :] = 2 * x[..., 0, :]  # singular
            got = run1(lambda b, p: ops.MatrixDeterminant(p), (x, d))
            x64 = x.astype(np.float64)
            want = np.linalg.det(x64) if m else np.ones(batch)
            had = np.prod(np.linalg.norm(x64, axis=-1), axis=-1) if m else np.ones(batch)
            check(got, want, d, rtol=1e-12 + (ulp(d) if d == "float32" else 0.0), scale=had)


# ---------------------------------------------------------------------------------------------
# RandomUniform
# ---------------------------------------------------------------------------------------------


def _uniform(dt: str, shape: Sequence[int], seed: int, seed2: int, sdt: str = "int64", same: bool = True):
    (y,) = run(lambda b: ops.RandomUniform(const(b, list(shape), sdt), dtype=GE_DT[dt], seed=seed,
                                           seed2=seed2), same=same)
    return y


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_random_uniform_range_shape_and_seeds(dt):
    assert dt in {NAME_OF[DataType[n]] for n in ge.ops.get_op("RandomUniform")["outputs"][0]["type"]}
    for sdt in proto_dtypes("RandomUniform"):
        d, a = _uniform(dt, (40, 50), 7, 3, sdt)
        assert d == dt and a.shape == (40, 50)
        v = a.astype(np.float64).ravel()
        assert ((v >= 0) & (v < 1)).all()
        # Rough uniformity: mean, variance and 10 equal bins (each about 200 of 2000).
        assert abs(v.mean() - 0.5) < 0.03 and abs(v.var() - 1 / 12) < 0.01
        hist = np.histogram(v, bins=10, range=(0, 1))[0]
        assert hist.min() > 130 and hist.max() < 270, hist
        # Seeded: the same values in every run, mode and session; other seeds, other values.
        assert np.array_equal(_uniform(dt, (40, 50), 7, 3, sdt)[1], a)
        assert not np.array_equal(_uniform(dt, (40, 50), 8, 3, sdt)[1], a)
        assert not np.array_equal(_uniform(dt, (40, 50), 7, 4, sdt)[1], a)
    # Unseeded: fresh values on every run (graph and eager mode then differ too).
    x = _uniform(dt, (64,), 0, 0, same=False)[1]
    y = _uniform(dt, (64,), 0, 0, same=False)[1]
    assert not np.array_equal(x, y) and ((y >= 0) & (y < 1)).all()
    assert _uniform(dt, (0, 3), 1, 0)[1].shape == (0, 3)


_MASK = 0xFFFFFFFF


def philox4x32_10(ctr: Sequence[int], key: Sequence[int]) -> List[int]:
    """Philox4x32-10 (Salmon et al., SC'11; Random123's reference), in Python integers."""
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & _MASK, (k[1] + 0xBB67AE85) & _MASK]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & _MASK, p1 & _MASK, ((p0 >> 32) ^ c[3] ^ k[1]) & _MASK, p0 & _MASK]
    return c


def tf_uniform_ref(dt: str, n: int, seed: int, seed2: int) -> np.ndarray:
    """TensorFlow's RandomUniform on its first run: a Philox stream keyed by seed with counter
    (0, seed2), each float from the low mantissa bits of 32-bit outputs over 1.0, minus 1."""
    key, ctr = [seed & _MASK, seed >> 32], [0, 0, seed2 & _MASK, seed2 >> 32]
    words: List[int] = []
    while len(words) < (2 * n if dt == "float64" else n):
        words += philox4x32_10(ctr, key)
        ctr[0] = (ctr[0] + 1) & _MASK  # (the tests never carry into the next word)
    if dt == "float64":
        mant = [((words[2 * i] & 0xFFFFF) << 32) | words[2 * i + 1] for i in range(n)]
        return np.array([(0x3FF << 52) | m for m in mant], np.uint64).view(np.float64) - 1.0
    if dt == "float32":
        return np.array([0x3F800000 | (u & 0x7FFFFF) for u in words[:n]], np.uint32).view(np.float32) - 1
    bits = 10 if dt == "float16" else 7
    return np.array([(u & ((1 << bits) - 1)) / 2.0**bits for u in words[:n]])


def test_philox_reference_matches_random123_known_answers():
    assert philox4x32_10([0] * 4, [0] * 2) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox4x32_10([_MASK] * 4, [_MASK] * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("seeds", [(1, 0), (87654321, 5), (2**40 + 3, 2**33 + 1), (0, 9)])
def test_random_uniform_values_are_tensorflows_philox_stream(dt, seeds):
    got = _uniform(dt, (3, 7), *seeds)
    check(got, tf_uniform_ref(dt, 21, *seeds).reshape(3, 7), dt)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

W = np.arange(8, dtype=np.float32).reshape(4, 2)


def test_embedding_bag_index_out_of_range_is_an_error():
    fails(lambda b, w, i, o: ops.EmbeddingBag(w, i, o, mode="sum"), (W, "float32"),
          (np.array([0, 4], np.int64), "int64"), (np.array([0], np.int64), "int64"), match="out of range")


def test_embedding_bag_first_offset_must_be_zero():
    fails(lambda b, w, i, o: ops.EmbeddingBag(w, i, o, mode="sum"), (W, "float32"),
          (np.array([0, 1], np.int64), "int64"), (np.array([1], np.int64), "int64"), match=r"offsets\[0\]")


def test_embedding_bag_offsets_must_not_decrease():
    fails(lambda b, w, i, o: ops.EmbeddingBag(w, i, o, mode="sum"), (W, "float32"),
          (np.array([0, 1], np.int64), "int64"), (np.array([0, 2, 1], np.int64), "int64"),
          match="non-decreasing")


def test_embedding_bag_needs_offsets_or_2d_indices():
    fails(lambda b, w, i: ops.EmbeddingBag(w, i, mode="sum"), (W, "float32"),
          (np.array([0, 1], np.int64), "int64"), match="2-D indices")


def test_embedding_bag_per_sample_weights_need_mode_sum():
    fails(lambda b, w, i, o, p: ops.EmbeddingBag(w, i, o, p, mode="mean"), (W, "float32"),
          (np.array([0, 1], np.int64), "int64"), (np.array([0], np.int64), "int64"),
          (np.ones(2, np.float32), "float32"), exc=ge.GeError, match="not supported")


def test_bitcast_to_a_dtype_the_backend_lacks_is_unsupported():
    fails(lambda b, p: ops.Bitcast(p, type=DataType.DT_COMPLEX64), (np.zeros((4, 2), np.int32), "int32"),
          exc=ge.GeError, match="not supported")


def test_cumprod_axis_out_of_range_is_an_error():
    fails(lambda b, p, a: ops.Cumprod(p, a), (np.ones((2, 3), np.float32), "float32"),
          (np.array(2, np.int32), "int32"), match="out of range")


def test_reduce_log_sum_exp_axis_out_of_range_is_an_error():
    fails(lambda b, p, a: ops.ReduceLogSumExp(p, a), (np.ones((2, 3), np.float32), "float32"),
          (np.array([3], np.int64), "int64"), match="out of range")


def test_random_uniform_negative_dim_is_an_error():
    fails(lambda b, s: ops.RandomUniform(s, dtype=DataType.DT_FLOAT, seed=1),
          (np.array([2, -1], np.int64), "int64"), match="negative")


# ---------------------------------------------------------------------------------------------
# Coverage
# ---------------------------------------------------------------------------------------------


# The kernels misc.rs held, now in their families' files (kernels/elementwise/, reduce/, shape/,
# matmul/, index/ and source.rs).
MISC_OPS = {
    "FusedMulAdd", "Addcmul", "ClipByValue", "MaskedFill", "Atan2", "Round", "Invert", "LeftShift",
    "RightShift", "Fills", "Bitcast", "Cumprod", "ReduceLogSumExp", "Size", "Rank", "ExpandD",
    "FlattenV2", "SpaceToDepth", "DepthToSpace", "Einsum", "EmbeddingBag",
    "UniqueWithCountsAndSorting", "MatrixDeterminant", "RandomUniform",
}


def test_every_kernel_of_misc_rs_is_tested_here():
    root = Path(__file__).resolve().parents[1]
    kernels = root.parent / "crates" / "ge-runtime" / "src" / "kernels"
    src = "\n".join(f.read_text() for f in sorted(kernels.rglob("*.rs")))
    # The op types of the families' kernel tables (`const KERNELS: Kernels = &[...]`).
    tables = "\n".join(re.findall(r"const KERNELS: Kernels = &\[(.*?)\n\];", src, re.S))
    registered = set(re.findall(r'"([A-Za-z0-9]+)"', tables)) & MISC_OPS
    assert len(registered) == 24
    here = Path(__file__).read_text()
    assert not {op for op in registered if not re.search(rf"ops\.{op}\b", here)}
    assert registered <= set(ge.ops.kernel_op_types())
