"""The shared harness of the kernel tests (tests/kernels/test_kernels*.py).

- dtype tables: the CPU backend's dtypes by name (FLOATS, INTS, ALL), their numpy (NP) and GE
  (GE_DT, NAME_OF) types, mantissa bits and the float tolerances (TOL; see test_kernels.py's
  docstring for how they were found), and the dtypes an operator's prototype allows
  (``proto_dtypes``).
- bf16: values rounded to bf16 are held in float32 arrays and fed as their uint16 bits.
- ``run``: a one-op graph built with ``ge.es`` run through ``ge.session.Session`` in graph mode
  (a captured plan) and in eager mode (``ge.graphMode`` off); the two must give byte-identical
  outputs or the same error. ``fails``: both modes raise the same error.
- checks against numpy references (``check``, ``near``, ``exact``, ``same``) and value
  generators (``values``, ``finite``, ``small_ints``).
- the kernel sources (KERNEL_DIR, ``_registered_in``) for the coverage tests.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import ge
import ge.ops
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.graph import DataType, Format, Tensor
from ge.session import Session
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------

FLOATS = ("float64", "float32", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
ALL = FLOATS + INTS + ("bool",)

# numpy dtype of a test array (bf16 values are held in float32 arrays).
NP = {
    "float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": np.float32,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_,
}
GE_DT = {
    "float64": DataType.DT_DOUBLE, "float32": DataType.DT_FLOAT, "float16": DataType.DT_FLOAT16,
    "bfloat16": DataType.DT_BF16, "int8": DataType.DT_INT8, "int16": DataType.DT_INT16,
    "int32": DataType.DT_INT32, "int64": DataType.DT_INT64, "uint8": DataType.DT_UINT8,
    "uint16": DataType.DT_UINT16, "uint32": DataType.DT_UINT32, "uint64": DataType.DT_UINT64,
    "bool": DataType.DT_BOOL,
}
NAME_OF = {v: k for k, v in GE_DT.items()}

# Mantissa bits (ulp = 2**-bits relative); ULPS: the relative tolerance in ulps; FLOOR: the
# absolute tolerance (see the module's docstring).
MANT = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}
ULPS = {"float64": 3, "float32": 3, "float16": 1, "bfloat16": 1}
FLOOR = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38,
         "float16": 5.960464477539063e-08, "bfloat16": 1.1754943508222875e-38}
TOL = {d: (ULPS[d] * 2.0 ** -MANT[d], FLOOR[d]) for d in FLOATS}


@functools.cache
def _proto_dtypes(op: str, io: Any) -> Tuple[str, ...]:
    p = ge.ops.get_op(op)
    spec = p["inputs"][io] if isinstance(io, int) else next(
        i for i in p["inputs"] + p["outputs"] if i["name"] == io)
    t = spec["type"]
    names = p["type_vars"][t] if isinstance(t, str) else t
    expanded: List[str] = []
    for n in names:
        expanded += [x.name for x in _named_set(n[1:])] if n.startswith("@") else [n]
    have = {NAME_OF[DataType[n]] for n in expanded if n in DataType.__members__ and DataType[n] in NAME_OF}
    return tuple(d for d in ALL if d in have)


def proto_dtypes(op: str, io: Any = 0) -> List[str]:
    """The dtypes the prototype of ``op`` allows for input ``io`` (an index, or the name of an
    input or output) that the CPU backend has, in ALL's order."""
    return list(_proto_dtypes(op, io))


def _named_set(name: str) -> List[DataType]:
    """GE's named type sets (``ge.ops`` returns prototypes with the names unexpanded)."""
    every = [DataType[n] for n in ("DT_FLOAT", "DT_DOUBLE", "DT_FLOAT16", "DT_BF16", "DT_INT8", "DT_INT16",
                                   "DT_INT32", "DT_INT64", "DT_UINT8", "DT_UINT16", "DT_UINT32", "DT_UINT64")]
    sets = {
        "ALL": every + [DataType.DT_BOOL],
        "NumberType": every,
        "BasicType": every,
        "RealNumberType": every,
        "IndexNumberType": [DataType.DT_INT32, DataType.DT_INT64],
        "FloatingDataType": [DataType.DT_DOUBLE, DataType.DT_FLOAT, DataType.DT_FLOAT16],
        "IntegerDataType": [DataType[f"DT_{n.upper()}"] for n in INTS],
    }
    return sets[name]


def ulp(d: str) -> float:
    return 2.0 ** -MANT[d]


def up(a: np.ndarray, d: str) -> np.ndarray:
    """The values in the type the kernels compute ``d`` in (f16 and bf16: f32)."""
    return np.asarray(a).astype(np.float32) if d in ("float16", "bfloat16") else np.asarray(a)


def dtypes_of(*ops: Any) -> Dict[str, List[str]]:
    """op -> the dtypes to test it in (of input 0, or ``(op, input)`` for another input)."""
    return {o[0] if isinstance(o, tuple) else o: proto_dtypes(*(o if isinstance(o, tuple) else (o,)))
            for o in ops}


@contextlib.contextmanager
def case(*what: str) -> Iterator[None]:
    """Names the case (e.g. the op and the dtype) in a failure (each example of a test runs every
    dtype)."""
    try:
        yield
    except BaseException as e:
        if hasattr(e, "add_note"):
            e.add_note(f"case: {' on '.join(what)}")
        else:  # Python < 3.11
            e.args = (f"[{' on '.join(what)}] " + (str(e.args[0]) if e.args else ""),) + tuple(e.args[1:])
        raise


# ---------------------------------------------------------------------------------------------
# bf16
# ---------------------------------------------------------------------------------------------


def bf16_bits(values: Any) -> np.ndarray:
    """bf16 bit patterns of values (round to nearest even; NaN stays NaN), as ge.graph.Tensor."""
    with np.errstate(over="ignore"):
        f = np.array(values, dtype=np.float32, order="C")
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(np.isnan(f), (u >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def bf16_round(values: Any) -> np.ndarray:
    return bf16_values(bf16_bits(values))


def to_dtype(x: Any, d: str) -> np.ndarray:
    """float64 (or exact) values rounded once into dtype ``d`` (bf16 as float32 values)."""
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the dtype's range: inf (numpy's)
        if d == "bfloat16":
            return bf16_round(x.astype(np.float32))
        return x.astype(NP[d])


def wrap(values: Any, d: str) -> np.ndarray:
    """Python ints (an object array) wrapped into integer dtype ``d`` (two's complement)."""
    info = np.iinfo(NP[d])
    mod = 1 << info.bits
    arr = np.asarray(values, dtype=object)
    flat = [((int(v) - int(info.min)) % mod) + int(info.min) for v in arr.ravel()]
    return np.array(flat, dtype=NP[d]).reshape(arr.shape)


def as_int_objects(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(object)


def trunc_div_exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b truncated toward zero, exactly (Python ints), b != 0."""
    f = np.frompyfunc(lambda x, y: (abs(int(x)) // abs(int(y))) * (1 if (x >= 0) == (y > 0) else -1), 2, 1)
    return f(as_int_objects(a), as_int_objects(b))


# ---------------------------------------------------------------------------------------------
# Running a one-op graph in both modes
# ---------------------------------------------------------------------------------------------

# Graph mode (a captured plan) and eager mode.
MODES = ({}, {"ge.graphMode": "off"})
_SESSIONS = tuple(Session(opts) for opts in MODES)
_IDS = itertools.count(1)


def feed(a: np.ndarray, d: str) -> Any:
    if d == "bfloat16":
        return Tensor(bf16_bits(a), data_type=DataType.DT_BF16)
    return np.array(a, dtype=NP[d], order="C")


def fetch(t: Tensor) -> Tuple[str, np.ndarray]:
    d = NAME_OF[DataType(t.get_data_type())]
    a = t.numpy()
    return d, (bf16_values(a) if d == "bfloat16" else a)


def _run_in(s: Session, graph: Any, feeds: List[Any]) -> List[Tuple[str, np.ndarray]]:
    gid = next(_IDS)
    s.add_graph(gid, graph)
    try:
        return [fetch(t) for t in s.run_graph(gid, feeds)]
    finally:
        s.remove_graph(gid)


Input = Union[np.ndarray, Tuple[np.ndarray, str]]


def _pairs(inputs: Sequence[Input]) -> List[Tuple[np.ndarray, str]]:
    """``(array, dtype name)`` pairs: a plain array stands for itself in its own dtype."""
    return [a if isinstance(a, tuple) else (np.asarray(a), np.asarray(a).dtype.name) for a in inputs]


def graph_of(build: Callable[..., Any], inputs: Sequence[Tuple[np.ndarray, str]],
             dims: Optional[Sequence[Optional[List[int]]]] = None,
             formats: Optional[Dict[int, Format]] = None) -> Any:
    """The graph ``build(builder, *data inputs)``: one Data input per ``(array, dtype)``, its shape
    the array's unless ``dims`` gives one (e.g. with -1), its format ND unless ``formats`` (input
    index -> Format) gives one."""
    b = GraphBuilder("k")
    hs = []
    for i, (a, d) in enumerate(inputs):
        shape = list(np.shape(a)) if dims is None or dims[i] is None else dims[i]
        hs.append(b.create_input(i, data_type=GE_DT[d], shape=shape,
                                 format=(formats or {}).get(i, Format.FORMAT_ND)))
    out = build(b, *hs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def run(build: Callable[..., Any], *inputs: Input, dims: Optional[Sequence[Optional[List[int]]]] = None,
        formats: Optional[Dict[int, Format]] = None, same: bool = True) -> List[Tuple[str, np.ndarray]]:
    """Builds ``graph_of(build, inputs, dims, formats)`` (each input an ``(array, dtype name)``
    pair or an array), runs it in graph mode and in eager mode, checks the two agree byte for
    byte (unless not ``same``) or raise the same error, and returns ``[(dtype, array)]`` of graph
    mode."""
    pairs = _pairs(inputs)
    graph = graph_of(build, pairs, dims, formats)
    feeds = [feed(a, d) for a, d in pairs]
    results: List[Any] = []
    errors: List[Optional[BaseException]] = []
    for s in _SESSIONS:
        try:
            results.append(_run_in(s, graph, feeds))
            errors.append(None)
        except ge.GeError as e:
            results.append(None)
            errors.append(e)
    if errors[0] is not None or errors[1] is not None:
        assert type(errors[0]) is type(errors[1]) and errors[0].error_message == errors[1].error_message, (
            f"graph mode and eager mode disagree: {errors[0]!r} vs {errors[1]!r}")
        raise errors[0]  # type: ignore[misc]
    g, e = results
    assert len(g) == len(e)
    if same:
        for (dg, ag), (de, ae) in zip(g, e):
            assert dg == de and ag.shape == ae.shape and ag.tobytes() == ae.tobytes(), (
                f"graph mode and eager mode differ:\n{ag!r}\n{ae!r}")
    return g


def run1(build: Callable[..., Any], *inputs: Input, **kw: Any) -> Tuple[str, np.ndarray]:
    """``run`` of a graph with one output: its ``(dtype, array)``."""
    (y,) = run(build, *inputs, **kw)
    return y


def fails(build: Callable[..., Any], *inputs: Input, exc: type = ge.GeError, match: Optional[str] = None,
          **kw: Any) -> None:
    """Both modes raise the same error, an ``exc`` matching ``match``."""
    with pytest.raises(exc, match=match):
        run(build, *inputs, **kw)


def conv_build(op: str, size: Optional[Sequence[int]] = None, extra: int = 0,
               **attrs: Any) -> Callable[..., Any]:
    """The ``build`` of a convolution ``op`` with ``attrs`` on inputs (x, filter, ``extra`` more
    [, bias]); ``size``: a constant int32 first input (the output size of a transposed one)."""
    from ge.es import all as es

    def build(b: GraphBuilder, xh: Any, wh: Any, *rest: Any) -> Any:
        lead = [] if size is None else [const(b, size, "int32")]
        more, bias = rest[:extra], rest[extra:]
        return getattr(es, op)(*lead, xh, wh, *more, bias[0] if bias else None, **attrs)

    return build


def const(b: GraphBuilder, values: Any, d: str = "int64") -> Any:
    return b.create_const(np.asarray(values, dtype=NP[d]), GE_DT[d])


def vector(b: GraphBuilder, values: Sequence[int], d: str = "int64") -> Any:
    """A 1-D integer constant (also when empty)."""
    return const(b, np.asarray(list(values), dtype=NP[d]).reshape(len(values)), d)


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


Why = Union[str, Callable[[], str]]


def _short(what: Why, n: int = 600) -> str:
    """The description of a case (made only when it fails: array reprs are slow), shortened."""
    text = what() if callable(what) else what
    return text if len(text) <= n else text[:n] + " ..."


def check(got: Tuple[str, np.ndarray], expected: np.ndarray, d: str, *,
          tol: Optional[Tuple[float, float]] = None, scale: Any = None, exact: bool = False,
          what: Why = "") -> None:
    """``got`` must have dtype ``d``, ``expected``'s shape and match it: bit for bit for
    integers and bools (or ``exact``), else within ``tol`` (default TOL[d]); ``scale`` (an array
    broadcasting to the result) turns rtol into an absolute bound rtol * scale as well. ``what``
    describes the case (a string or a function making one)."""
    gd, a = got
    expected = np.asarray(expected)
    assert gd == d, f"{_short(what)}: dtype {gd}, expected {d}"
    assert a.shape == expected.shape, f"{_short(what)}: shape {a.shape}, expected {expected.shape}"
    if d not in FLOATS:
        if not np.array_equal(a, expected.astype(NP[d])):
            np.testing.assert_array_equal(a, expected.astype(NP[d]), err_msg=_short(what))
        return
    a64 = a.astype(np.float64)
    e64 = to_dtype(expected, d).astype(np.float64)
    if exact:
        if not np.array_equal(a64, e64, equal_nan=True):
            np.testing.assert_array_equal(a64, e64, err_msg=_short(what))
        return
    rtol, atol = tol if tol is not None else TOL[d]
    nan_e, nan_a = np.isnan(e64), np.isnan(a64)
    assert np.array_equal(nan_e, nan_a), (
        f"{_short(what)}: NaN where expected {e64[nan_a & ~nan_e]}, or not NaN {a64[nan_e & ~nan_a]}")
    inf = np.isinf(e64)
    assert np.array_equal(a64[inf], e64[inf]), f"{_short(what)}: infinities {a64[inf]} vs {e64[inf]}"
    fin = np.isfinite(e64)
    with np.errstate(all="ignore"):
        bound = atol + rtol * np.abs(e64)
        if scale is not None:
            bound = np.maximum(bound, atol + rtol * np.broadcast_to(np.asarray(scale, np.float64), e64.shape))
        err = np.abs(a64 - e64)
    bad = fin & ~(err <= bound)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        pytest.fail(f"{d} (rtol {rtol:g}, atol {atol:g}): {int(bad.sum())} of {bad.size} differ; got "
                    f"{a64.ravel()[i]!r}, expected {e64.ravel()[i]!r} (error {err.ravel()[i]!r}) "
                    f"at flat {i}; "
                    f"{_short(what)}")



# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

# 25 examples per test (a test is an op; each example runs every dtype of it), deterministic: a
SEEDS = st.integers(0, 2**32 - 1)


def shapes(min_dims: int = 0, max_dims: int = 4, min_side: int = 1, max_side: int = 4) -> Any:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


@st.composite
def broadcastable(draw: Any, n: int = 2, max_dims: int = 4, min_side: int = 0,
                  max_side: int = 4, base: Any = None) -> Tuple[Tuple[int, ...], ...]:
    """``n`` shapes that broadcast together (numpy's rules): trailing parts of one shape (drawn
    from ``base``, default ``shapes`` in the given bounds), each dim kept or made 1. (Cheaper to
    draw than ``hnp.mutually_broadcastable_shapes``.)"""
    if base is None:
        base = shapes(min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side)
    base = draw(base)
    out = []
    for _ in range(n):
        r = draw(st.integers(0, len(base)))
        ones = draw(st.integers(0, 2**r - 1))
        out.append(tuple(1 if ones >> i & 1 else dim for i, dim in enumerate(base[len(base) - r:])))
    return tuple(out)


def ints(lo: int, hi: int, n: int) -> Any:
    """A tuple of ``n`` integers in [lo, hi]."""
    return st.tuples(*[st.integers(lo, hi)] * n)


def window_args(size: str, sides: Tuple[int, int], rank: int = 2, *, k: Tuple[int, int] = (1, 3),
                stride: Tuple[int, int] = (1, 3), dil: Optional[Tuple[int, int]] = (1, 2),
                pad: Tuple[int, int] = (0, 2), stride_name: str = "stride") -> Dict[str, Any]:
    """``@given`` strategies of a sliding window's geometry (convolution, pooling): the input's
    spatial dims (named ``size``, each in ``sides``), the kernel ``k``, the stride (named
    ``stride_name``) and the dilation ``dil`` (none: left out) per spatial dim, and ``pads`` (two
    per dim), each drawn in its [lo, hi] range."""
    args = {size: ints(*sides, rank), "k": ints(*k, rank), stride_name: ints(*stride, rank)}
    if dil is not None:
        args["dil"] = ints(*dil, rank)
    args["pads"] = ints(*pad, 2 * rank)
    return args


def conv_args(size: str, sides: Tuple[int, int], rank: int = 2, *, channels: Tuple[int, int] = (1, 3),
              groups: Tuple[int, int] = (1, 3), **window: Any) -> Dict[str, Any]:
    """``@given`` strategies of a grouped convolution: batch ``n``, channels per group in (``cg``)
    and out (``og``), ``groups`` and the window (``window_args``)."""
    return {"n": st.integers(1, 2), "cg": st.integers(*channels), "og": st.integers(*channels),
            "groups": st.integers(*groups), **window_args(size, sides, rank, **window)}


def int_values(rng: np.random.Generator, d: str, shape: Sequence[int], lo: Optional[int] = None,
               hi: Optional[int] = None) -> np.ndarray:
    """Integers of dtype ``d`` in [lo, hi] (default: the whole range): small ones, the whole
    range, or a mix with the extremes."""
    info = np.iinfo(NP[d])
    lo = int(info.min) if lo is None else max(int(info.min), lo)
    hi = int(info.max) if hi is None else min(int(info.max), hi)
    n = int(np.prod(shape))
    kind = rng.integers(3)
    if kind == 0:
        v = rng.integers(max(lo, -8), min(hi, 8), size=n, endpoint=True).astype(NP[d])
    else:
        v = rng.integers(lo, hi, size=n, endpoint=True, dtype=NP[d])
        if kind == 2 and n:
            edges = np.array([e for e in (lo, hi, 0, 1, -1, lo + 1, hi - 1) if lo <= e <= hi], dtype=NP[d])
            m = rng.random(n) < 0.3
            v[m] = edges[rng.integers(len(edges), size=int(m.sum()))]
    return v.reshape(shape)


SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan)


def float_values(rng: np.random.Generator, d: str, shape: Sequence[int], lo: float = -np.inf,
                 hi: float = np.inf, mag: float = 3.0, special: bool = True,
                 integral: bool = True) -> np.ndarray:
    """Floats of dtype ``d`` (exactly representable) in [lo, hi]: magnitudes 10**U(-mag, mag)
    with both signs, uniform in [lo, hi] for a bounded domain, sometimes small integers (exact
    ties, equal values), and (``special``) zeros, infinities, NaN and the dtype's extremes."""
    n = int(np.prod(shape))
    x = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-mag, mag, n)
    if np.isfinite(lo) and np.isfinite(hi):
        u = rng.uniform(lo, hi, n)
        x = np.where(rng.random(n) < 0.7, u, x)
    if integral:
        x = np.where(rng.random(n) < 0.15, rng.integers(-4, 5, n).astype(np.float64), x)
    x = np.clip(x, lo, hi)
    if special and n:
        fi = np.finfo(np.float32 if d == "bfloat16" else NP[d])
        extremes = (float(fi.max), -float(fi.max), float(fi.tiny), float(fi.smallest_subnormal))
        extra = np.array(SPECIALS + extremes)
        if d == "bfloat16":
            extra[5:7] = [3.3895313892515355e38, -3.3895313892515355e38]
        m = rng.random(n) < 0.12
        x[m] = extra[rng.integers(len(extra), size=int(m.sum()))]
    return to_dtype(x.reshape(shape), d)


def values(rng: np.random.Generator, d: str, shape: Sequence[int], **kw: Any) -> np.ndarray:
    if d == "bool":
        return rng.random(shape) < 0.5
    if d in INTS:
        return int_values(rng, d, shape, kw.get("ilo"), kw.get("ihi"))
    kw = {k: v for k, v in kw.items() if k not in ("ilo", "ihi")}
    return float_values(rng, d, shape, **kw)


# ---------------------------------------------------------------------------------------------
# The kernel sources (for the coverage tests)
# ---------------------------------------------------------------------------------------------

KERNEL_DIR = Path(__file__).resolve().parents[2] / "crates" / "ge-runtime" / "src" / "kernels"


def _registered_in(path: Path) -> set:
    """Op types the file registers: its string literals that name a CPU kernel."""
    names = set(re.findall(r'"([A-Z][A-Za-z0-9]*)"', path.read_text()))
    return names & set(ge._native._cpu_kernel_op_types())


def same(got: Tuple[str, np.ndarray], expected: np.ndarray, d: str, what: str = "") -> None:
    """Bit-for-bit equality (NaN payloads and signed zeros too)."""
    gd, a = got
    assert gd == d, what
    e = np.asarray(expected)
    assert a.shape == e.shape, f"{what}: {a.shape} vs {e.shape}"
    assert a.tobytes() == np.array(e.astype(a.dtype), order="C").tobytes(), f"{what}:\n{a!r}\n{e!r}"


# ---------------------------------------------------------------------------------------------
# Hypothesis settings, values and tolerances of the per-dtype tests
# ---------------------------------------------------------------------------------------------


def HYP(n: int) -> Callable[[Any], Any]:
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def rng_of(data: Any) -> np.random.Generator:
    return np.random.default_rng(data.draw(SEEDS, label="seed"))


def finite(rng: np.random.Generator, d: str, shape: Sequence[int], mag: float = 1.5) -> np.ndarray:
    """Values for float math: finite, both signs, 10**U(-mag, mag) and small integers."""
    return values(rng, d, shape, special=False, mag=mag)


def small_ints(rng: np.random.Generator, d: str, shape: Sequence[int], lo: int, hi: int) -> np.ndarray:
    info = np.iinfo(NP[d])
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(NP[d])


def ix(idx: np.ndarray, d: str) -> Tuple[np.ndarray, str]:
    """An index input of dtype ``d``."""
    return idx.astype(NP[d]), d


def near(got: Tuple[str, np.ndarray], expected: Any, d: str, extra: Any = 0.0, what: str = "") -> None:
    """Float results: |got - expected| <= atol + rtol * |expected| + extra (TOL[d]), with
    ``expected`` exact (float64) and rounded once to ``d`` here; NaN where NaN, same infinities."""
    gd, a = got
    assert gd == d, f"{what}: dtype {gd}, expected {d}"
    e64 = to_dtype(np.asarray(expected, np.float64), d).astype(np.float64)
    assert a.shape == e64.shape, f"{what}: shape {a.shape}, expected {e64.shape}"
    a64 = a.astype(np.float64)
    assert np.array_equal(np.isnan(a64), np.isnan(e64)), f"{what}: NaN\n{a64}\n{e64}"
    inf = np.isinf(e64)
    assert np.array_equal(a64[inf], e64[inf]), f"{what}: infinities\n{a64}\n{e64}"
    rtol, atol = TOL[d]
    with np.errstate(all="ignore"):
        bound = atol + rtol * np.abs(e64) + np.broadcast_to(np.asarray(extra, np.float64), e64.shape)
        err = np.abs(a64 - e64)
    bad = np.isfinite(e64) & ~(err <= bound)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        pytest.fail(f"{what} {d}: {int(bad.sum())} of {bad.size} differ: got {a64.ravel()[i]}, expected "
                    f"{e64.ravel()[i]}, error {err.ravel()[i]}, bound {bound.ravel()[i]}")


def exact(got: Tuple[str, np.ndarray], expected: Any, d: str, what: str = "") -> None:
    """Equal values (``==``, NaN equal to NaN) of dtype ``d``."""
    check(got, np.asarray(expected), d, exact=True, what=what)


F64_EPS = 2.0 ** -45  # the extra relative error allowed for an f64 computation (see the docstring)


def rounded_step(d: str) -> Callable[[Any, Any, Callable[[Any, Any], Any]], Any]:
    """One arithmetic step in dtype ``d`` as the kernels do it (Arith): f64 and f32 in their own
    precision, f16 and bf16 in f32 rounded to the dtype, integers wrapping."""
    def step(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Any:
        with np.errstate(all="ignore"):
            if d == "bfloat16":
                return bf16_round(f(np.float32(a), np.float32(b)))[()]
            if d == "float16":
                return np.float16(f(np.float32(a), np.float32(b)))
            if d in INTS:
                return np.asarray(f(np.asarray(a, NP[d]), np.asarray(b, NP[d]))).astype(NP[d])[()]
            return NP[d](f(NP[d](a), NP[d](b)))
    return step



def f32(v: float) -> float:
    """A Float attribute as the node holds it."""
    return float(np.float32(v))


# ---------------------------------------------------------------------------------------------
# numpy references shared by the convolution and pooling tests
# ---------------------------------------------------------------------------------------------


def conv_ref(x: np.ndarray, w: np.ndarray, stride: Sequence[int], pads: Sequence[int], dil: Sequence[int],
             groups: int, dt: Any = np.float64) -> np.ndarray:
    """NCHW x, OIHW w, in ``dt`` (float64: exact products; int64 for int8)."""
    x, w = x.astype(dt), w.astype(dt)
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = stride, dil, pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dt)
    og = o // groups
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og, :, i, j])
    return out


def pool_dim(size: int, k: int, s: int, mode: str, p0: int, p1: int, ceil: bool) -> Tuple[int, int, int]:
    if mode == "SAME":
        out = -(-size // s)
        total = max((out - 1) * s + k - size, 0)
        return out, total // 2, total - total // 2
    if mode == "VALID":
        return (size - k) // s + 1, 0, 0
    padded = size + p0 + p1
    out = (-(-(padded - k) // s) + 1) if ceil else (padded - k) // s + 1
    if ceil and (out - 1) * s >= size + p0:
        out -= 1
    return out, p0, p1


def pool_ref(x: np.ndarray, k: Sequence[int], s: Sequence[int], mode: str, pads: Sequence[int], ceil: bool,
             kind: str, exclusive: bool = True, divisor: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """NCHW x: the pooled values (max: in x's dtype; avg: float64) and, for avg, the sums of
    |x| over each divisor (the scale of the summation error)."""
    n, c, h, w = x.shape
    oh, pt, pb = pool_dim(h, k[0], s[0], mode, pads[0], pads[1], ceil)
    ow, pl, pr = pool_dim(w, k[1], s[1], mode, pads[2], pads[3], ceil)
    out = np.zeros((n, c, oh, ow), x.dtype if kind == "max" else np.float64)
    scale = np.zeros((n, c, oh, ow))
    for oy in range(oh):
        for ox in range(ow):
            ys, xs = oy * s[0] - pt, ox * s[1] - pl
            ye, xe = ys + k[0], xs + k[1]
            win = x[:, :, max(ys, 0):min(ye, h), max(xs, 0):min(xe, w)]
            if kind == "max":
                # NaN skipped (numpy's fmax; the ONNX reference's MaxPool, docs/reliability.md)
                out[:, :, oy, ox] = np.fmax.reduce(win.reshape(n, c, -1), axis=2)
                continue
            if divisor:
                dv = divisor
            elif exclusive:
                dv = win.shape[2] * win.shape[3]
            else:
                dv = (min(ye, h + pb) - ys) * (min(xe, w + pr) - xs)
            out[:, :, oy, ox] = win.astype(np.float64).sum(axis=(2, 3)) / dv
            scale[:, :, oy, ox] = np.abs(win.astype(np.float64)).sum(axis=(2, 3)) / dv
    return out, scale


def nchw_to_nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))
