"""Random well-typed ge graphs, and their differential check against onnxruntime.

The generator builds a graph through the ``ge.es`` builder, one operator at a time, from the
operators ``ge.onnx.save`` exports: element-wise ops with numpy broadcasting (unary, binary,
comparisons, logical, select, casts), reductions (both the axes-input and the ``D`` forms),
shape ops (Reshape, Transpose, (Un)Squeeze, Flatten, Tile, BroadcastTo/Expand, ConcatV2/ConcatD/
Pack, Split/SplitV/SplitD, Slice/SliceD, GatherV2), MatMulV2/BatchMatMulV2/GEMM, Conv2D (NCHW and
NHWC, groups, depthwise, padding, strides, dilations, bias), pooling (MaxPoolV3/AvgPoolV2 with
pads, ceil_mode, exclusive, global; MaxPool/AvgPool with SAME/VALID), softmax/log-softmax,
ClipByValue, and normalisation written the way exporters write it (a LayerNorm of
ReduceMean/Sub/Mul/Rsqrt; BatchNorm and LayerNorm themselves have no ONNX exporter). Shapes come
from ge's own inference (``TensorHolder._desc``): a wrong inferred shape shows as a shape
mismatch against onnxruntime.

Every choice goes through a ``Chooser``: ``DrawChooser`` (hypothesis ``draw``, so pytest shrinks
failures) or ``RandomChooser`` (a seeded ``random.Random``, for ``tools/difftest.py``'s long runs).
A ``Case`` prints as the Python that builds it, ready to paste into a regression test.

Comparison (``check_case``): ge runs the graph in graph mode and eager mode, each with
``ge.threads`` 1 and 2; those four runs must agree bit for bit (same dtype, shape, values, NaN
positions). onnxruntime (CPU, one thread) runs the exported model on the same inputs; its
outputs must have the same dtype and shape, bools equal, floats within
``|ge - ort| <= ATOL * max(1, max|ort|) + RTOL * |ort|`` with NaN in the same places and
infinities equal. Operators whose result jumps (Floor, Ceil, Sign, comparisons, float casts)
only take "exact" tensors (inputs and results of correctly rounded ops on exact tensors), so
rounding differences between the engines cannot flip them.
"""

from __future__ import annotations

import abc
import math
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ge.es.all as es
import ge.onnx
import numpy as np
from ge.es import GraphBuilder
from ge.session import Session

RTOL = 1e-3
ATOL = 1e-4
MAX_ELEMS = 1 << 13  # per tensor in an ordinary case
BIG_ELEMS = 1 << 19  # in a "big" case (past the 256k-element threshold of the 2-thread split)
MAX_MACS = 1 << 21
MODES = (("on", "1"), ("on", "2"), ("off", "1"), ("off", "2"))  # (ge.graphMode, ge.threads)


def W(seed: int, shape: Sequence[int]) -> np.ndarray:
    """The random float32 array a case uses for a constant or an input (standard normal)."""
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)


class Skip(Exception):
    """The chosen operator does not fit the chosen operands: choose again."""


# ---------------------------------------------------------------------------------------------
# Choosers
# ---------------------------------------------------------------------------------------------


class Chooser(abc.ABC):
    """The source of every random choice (an empty choice is a ``Skip``: choose another step);
    ``RandomChooser`` (seeded, for the long runs) and ``DrawChooser`` (hypothesis) give the ints."""

    @abc.abstractmethod
    def _int(self, lo: int, hi: int) -> int:  # inclusive bounds, lo <= hi
        """One int in [lo, hi]."""

    def int(self, lo: int, hi: int) -> int:
        if hi < lo:
            raise Skip
        return self._int(lo, hi)

    def coin(self, p: float = 0.5) -> bool:
        return self.int(0, 999) < int(p * 1000)

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[self.int(0, len(seq) - 1)]

    def perm(self, n: int) -> list[int]:
        rest, out = list(range(n)), []
        while rest:
            out.append(rest.pop(self.int(0, len(rest) - 1)))
        return out


class RandomChooser(Chooser):
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def _int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)


class DrawChooser(Chooser):
    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def _int(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


@dataclass
class T:
    """A tensor of the graph being built: its holder, name in the printed program, shape, kind
    ('f' float32, 'b' bool) and whether both engines must compute it bit for bit ("exact")."""

    name: str
    h: Any
    shape: tuple[int, ...]
    kind: str
    exact: bool
    is_input: bool = False
    fmt: int = 2  # the format ge's inference gave: 0 NCHW, 1 NHWC, 2 ND (layouts follow it)
    err: float = 1.0  # how far rounding may have drifted, in units of ATOL (see Program.op)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Lit:
    """A constant operand: its holder and the code that makes it."""

    h: Any
    code: str
    shape: tuple[int, ...] = ()


@dataclass
class Case:
    graph: Any
    program: str
    input_shapes: list[tuple[int, ...]]
    feed_seed: int
    ops: list[str] = field(default_factory=list)
    specials: bool = False
    errs: list[float] = field(default_factory=list)  # per output: the drift factor (T.err)

    def feeds(self) -> list[np.ndarray]:
        """Standard normal inputs; with ``specials``, about one element in eight replaced by NaN,
        +inf, -inf or 0 (``feeds_with_specials``)."""
        out = [W(self.feed_seed + i, s) for i, s in enumerate(self.input_shapes)]
        return (
            [feeds_with_specials(a, self.feed_seed + i) for i, a in enumerate(out)] if self.specials else out
        )

    def __repr__(self) -> str:
        extra = ", specials=True" if self.specials else ""
        return f"Case(feed_seed={self.feed_seed}{extra}):\n{self.program}"


def feeds_with_specials(a: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 7)
    a = a.copy()
    mask = rng.random(a.shape) < 0.125
    a[mask] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0], np.float32), size=int(mask.sum()))
    return a


class Program:
    def __init__(self, ch: Chooser, big: bool) -> None:
        self.ch = ch
        self.b = GraphBuilder("diff")
        self.lines: list[str] = ["b = GraphBuilder('diff')"]
        self.pool: list[T] = []
        self.input_shapes: list[tuple[int, ...]] = []
        self.max_elems = BIG_ELEMS if big else MAX_ELEMS
        self.ops: list[str] = []
        self.count = 0

    def fresh(self, prefix: str = "t") -> str:
        self.count += 1
        return f"{prefix}{self.count - 1}"

    # --- operands -------------------------------------------------------------------------

    def _arg(self, a: Any) -> Any:
        if isinstance(a, (T, Lit)):
            return a.h
        if isinstance(a, list):
            return [self._arg(x) for x in a]
        return a

    def _code(self, a: Any) -> str:
        if isinstance(a, T):
            return a.name
        if isinstance(a, Lit):
            return a.code
        if isinstance(a, list):
            return "[" + ", ".join(self._code(x) for x in a) + "]"
        return repr(a)

    def i64(self, values: Sequence[int]) -> Lit:
        v = [int(x) for x in values]
        return Lit(self.b.create_const_int64(v), f"b.create_const_int64({v})")

    def i32(self, values: Sequence[int]) -> Lit:
        v = [int(x) for x in values]
        return Lit(self.b.create_const_int32(v), f"b.create_const_int32({v})")

    def s32(self, value: int) -> Lit:
        return Lit(self.b.create_scalar_int32(int(value)), f"b.create_scalar_int32({int(value)})")

    def fscalar(self, value: float) -> Lit:
        return Lit(self.b.create_scalar_float(float(value)), f"b.create_scalar_float({float(value)!r})")

    def fconst(self, shape: Sequence[int]) -> Lit:
        seed = self.ch.int(0, 1 << 16)
        shape = [int(s) for s in shape]
        return Lit(self.b.create_const(W(seed, shape)), f"b.create_const(W({seed}, {shape}))", tuple(shape))

    def new_input(self, shape: Sequence[int]) -> T:
        i = len(self.input_shapes)
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape, dtype=np.int64)) > self.max_elems:
            raise Skip
        self.input_shapes.append(shape)
        h = self.b.create_input(i, shape=list(shape))
        return self._add(h, f"b.create_input({i}, shape={list(shape)})", exact=True, is_input=True)

    def _add(self, h: Any, code: str, exact: bool, is_input: bool = False, err: float = 1.0) -> T:
        dt, shape, fmt = h._desc
        if any(d < 0 for d in shape):
            raise AssertionError(f"ge inferred an unknown shape {shape} for {code}")
        kind = {0: "f", 12: "b"}.get(dt)
        if kind is None:
            raise AssertionError(f"unexpected dtype {dt} of {code}")
        t = T(self.fresh(), h, tuple(shape), kind, exact, is_input, fmt, err)
        if t.size > self.max_elems:
            raise Skip
        self.lines.append(f"{t.name} = {code}  # {list(shape)} {kind}")
        self.pool.append(t)
        return t

    @staticmethod
    def _err(args: Sequence[Any], terms: int) -> float:
        """The drift of a result: its operands' largest, times sqrt(terms) for an op summing
        ``terms`` products (reductions, matrix products, convolutions, average pools): the two
        engines sum in different orders and precisions (ge in f64, onnxruntime in f32)."""
        flat = [x for a in args for x in (a if isinstance(a, list) else [a])]
        return max([x.err for x in flat if isinstance(x, T)] + [1.0]) * math.sqrt(max(1, terms))

    def op(self, fn: str, *args: Any, exact: bool = False, terms: int = 1, **kw: Any) -> T:
        code = (
            f"{fn}(" + ", ".join([self._code(a) for a in args] + [f"{k}={v!r}" for k, v in kw.items()]) + ")"
        )
        h = getattr(es, fn)(*[self._arg(a) for a in args], **kw)
        self.ops.append(fn)
        return self._add(h, code, exact, err=self._err(args, terms))

    def op_multi(self, fn: str, *args: Any, exact: bool = False, **kw: Any) -> list[T]:
        code = (
            f"{fn}(" + ", ".join([self._code(a) for a in args] + [f"{k}={v!r}" for k, v in kw.items()]) + ")"
        )
        hs = getattr(es, fn)(*[self._arg(a) for a in args], **kw)
        self.ops.append(fn)
        names = [self.fresh() for _ in hs]
        self.lines.append(f"{', '.join(names)} = {code}")
        out = []
        for name, h in zip(names, hs):
            _dt, shape, fmt = h._desc
            t = T(name, h, tuple(shape), "f", exact, fmt=fmt, err=self._err(args, 1))
            self.pool.append(t)
            out.append(t)
        return out

    def op_cast_int(self, x: T) -> Lit:
        """Cast to int32 (truncation), kept out of the pool (the pool is float and bool)."""
        h = es.Cast(x.h, dst_type=3)
        self.ops.append("Cast")
        name = self.fresh("i")
        self.lines.append(f"{name} = Cast({x.name}, dst_type=3)")
        return Lit(h, name, x.shape)

    # --- choosing operands ------------------------------------------------------------------

    def pick(self, kind: str = "f", exact: bool = False, min_rank: int = 0, max_rank: int = 8) -> T:
        cands = [
            t
            for t in self.pool
            if t.kind == kind and (t.exact or not exact) and min_rank <= len(t.shape) <= max_rank
        ]
        if not cands:
            raise Skip
        if self.ch.coin(0.5):
            return cands[-1]
        return self.ch.pick(cands)

    def broadcast_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape`` (fewer leading dims, some 1s, or more dims)."""
        s = list(shape)
        r = self.ch.int(0, 3)
        if r == 0 and s:
            s = s[self.ch.int(0, len(s)) :]
        elif r == 1 and len(s) < 5:
            s = [self.ch.int(1, 3) for _ in range(self.ch.int(1, 2))] + s
        s = [1 if self.ch.coin(0.3) else d for d in s]
        return tuple(s)

    def operand_like(self, x: T, exact: bool = False) -> Any:
        """A second float operand broadcasting with ``x``: a pool tensor, a new input, a constant
        or a scalar."""
        r = self.ch.int(0, 3)
        if r == 0:
            cands = [
                t
                for t in self.pool
                if t.kind == "f" and (t.exact or not exact) and _broadcasts(t.shape, x.shape)
            ]
            if cands:
                return self.ch.pick(cands)
        if r == 1 and len(self.input_shapes) < 4:
            return self.new_input(self.broadcast_shape(x.shape))
        if r == 2:
            return self.fscalar(self.ch.pick([0.5, -1.0, 2.0, 0.0, 3.25]))
        return self.fconst(self.broadcast_shape(x.shape))

    def to_rank4(self, x: T) -> T:
        if len(x.shape) == 4:
            return x
        if len(x.shape) > 4:
            raise Skip
        return self.op("Reshape", x, self.i64([1] * (4 - len(x.shape)) + list(x.shape)), exact=x.exact)


def _broadcasts(a: Sequence[int], b: Sequence[int]) -> bool:
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
        return True
    except ValueError:
        return False


def _exactness(*xs: Any) -> bool:
    return all(x.exact if isinstance(x, T) else True for x in xs)


# ---------------------------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------------------------

# (op, exact result from an exact input, needs an exact input, attributes chooser)
UNARY: list[tuple[str, bool, bool]] = [
    ("Relu", True, False),
    ("Neg", True, False),
    ("Abs", True, False),
    ("Relu6", True, False),
    ("Floor", True, True),
    ("Ceil", True, True),
    ("Sign", True, True),
    ("Tanh", False, False),
    ("Sigmoid", False, False),
    ("Sin", False, False),
    ("Cos", False, False),
    ("Atan", False, False),
    ("Erf", False, False),
    ("Softplus", False, False),
    ("Mish", False, False),
    ("Square", False, False),
    ("Softsign", False, False),
]
ATTR_UNARY = {
    "Elu": lambda ch: {"alpha": ch.pick([1.0, 0.5, 2.0])},
    "LeakyRelu": lambda ch: {"negative_slope": ch.pick([0.01, 0.2, 1.5])},
    "HardSigmoid": lambda ch: {"alpha": ch.pick([0.2, 1.0 / 6.0]), "beta": ch.pick([0.5, 0.25])},
    "Swish": lambda ch: {"scale": ch.pick([1.0, 0.5, 2.0])},
}


def positive(p: Program, x: T) -> T:
    """|x| + 0.5: the domain of Log, Sqrt, Rsqrt, Reciprocal, a divisor, Pow's base."""
    return p.op("Add", p.op("Abs", x, exact=x.exact), p.fscalar(0.5), exact=x.exact)


def g_unary(p: Program) -> None:
    ch = p.ch
    r = ch.int(0, 9)
    if r < 6:
        fn, keeps, needs = ch.pick(UNARY)
        x = p.pick(exact=needs)
        if fn in ("Sin", "Cos") and not x.exact:  # periodic: an absolute drift of a large x shows
            x = p.op("Tanh", x)
        p.op(fn, x, exact=keeps and x.exact)
    elif r < 8:
        fn = ch.pick(sorted(ATTR_UNARY))
        p.op(fn, p.pick(), **ATTR_UNARY[fn](ch))
    elif r == 8:
        fn = ch.pick(["Log", "Sqrt", "Rsqrt", "Reciprocal"])
        p.op(fn, positive(p, p.pick()))
    else:
        p.op("Exp", p.op("Tanh", p.pick()))


BINARY = ["Add", "Sub", "Mul", "Maximum", "Minimum", "RealDiv", "Div", "SquaredDifference", "Pow"]


def g_binary(p: Program) -> None:
    ch = p.ch
    fn = ch.pick(BINARY)
    x = p.pick()
    y = p.operand_like(x)
    if fn in ("RealDiv", "Div"):
        if isinstance(y, Lit):
            y = p.fscalar(ch.pick([0.5, -2.0, 4.0]))
        else:
            y = positive(p, y)
    if fn == "Pow":
        x = positive(p, x)
        if isinstance(y, Lit):
            y = p.fscalar(ch.pick([0.5, 2.0, -1.0, 3.0]))
        else:
            y = p.op("Tanh", y)
    if ch.coin(0.5) and isinstance(y, T) and fn not in ("RealDiv", "Div", "Pow"):
        x, y = y, x
    exact = fn not in ("SquaredDifference", "Pow") and _exactness(x, y)
    if isinstance(x, Lit):
        x, y = y, x
    p.op(fn, x, y, exact=exact)


def g_compare(p: Program) -> None:
    ch = p.ch
    fn = ch.pick(["Greater", "Less", "Equal", "GreaterEqual", "LessEqual"])
    x = p.pick(exact=True)
    y = x if ch.coin(0.15) else p.operand_like(x, exact=True)
    if fn == "Equal" and ch.coin(0.5):
        y = p.op("Floor", x, exact=True)
    p.op(fn, x, y, exact=True)


def g_logic(p: Program) -> None:
    ch = p.ch
    r = ch.int(0, 4)
    c = p.pick("b")
    if r == 0:
        p.op("LogicalNot", c, exact=True)
    elif r == 1:
        cands = [t for t in p.pool if t.kind == "b" and _broadcasts(t.shape, c.shape)]
        p.op(ch.pick(["LogicalAnd", "LogicalOr"]), c, ch.pick(cands), exact=True)
    elif r == 2:
        p.op("Cast", c, dst_type=0, exact=True)
    else:
        a = p.pick()
        if not _broadcasts(a.shape, c.shape):
            raise Skip
        b = p.operand_like(a)
        if not _broadcasts(np.broadcast_shapes(a.shape, b.shape), c.shape):
            raise Skip
        p.op("SelectV2", c, a, b, exact=_exactness(a, b))


def g_cast(p: Program) -> None:
    x = p.pick(exact=True)
    if p.ch.coin(0.5):
        p.op("Cast", x, dst_type=12, exact=True)  # float -> bool: nonzero
    else:
        i = p.op_cast_int(x)
        p.op("Cast", i, dst_type=0, exact=True)


def g_clip(p: Program) -> None:
    x = p.pick()
    lo, hi = sorted([p.ch.pick([-1.0, -0.5, 0.0, 0.25]), p.ch.pick([0.5, 1.0, 2.0])])
    p.op("ClipByValue", x, p.fscalar(lo), p.fscalar(hi), exact=x.exact)


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]


def g_reduce(p: Program) -> None:
    ch = p.ch
    fn = ch.pick(REDUCE)
    x = p.pick(min_rank=1)
    r = len(x.shape)
    axes = [a for a in ch.perm(r) if ch.coin(0.5)] or [ch.int(0, r - 1)]
    axes = [a - r if ch.coin(0.3) else a for a in axes]
    if fn == "ReduceProd" and np.prod([x.shape[a] for a in axes]) > 16:
        raise Skip
    keep = ch.coin(0.5)
    exact = fn in ("ReduceMax", "ReduceMin") and x.exact
    n = int(np.prod([x.shape[a] for a in axes]))
    if ch.coin(0.5):
        p.op(fn + "D", x, axes=axes, keep_dims=keep, exact=exact, terms=n)
    else:
        p.op(fn, x, p.i64(axes), keep_dims=keep, exact=exact, terms=n)


def _factor(ch: Chooser, n: int, rank: int) -> list[int]:
    dims = []
    for _ in range(rank - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0 and d <= 8]
        d = ch.pick(divs)
        dims.append(d)
        n //= d
    return dims + [n]


def g_shape(p: Program) -> None:
    ch = p.ch
    r = ch.int(0, 7)
    x = p.pick()
    rank = len(x.shape)
    if r == 0:
        new = _factor(ch, x.size, ch.int(1, 4))
        if ch.coin(0.3):
            new[ch.int(0, len(new) - 1)] = -1
        p.op("Reshape", x, p.i64(new), exact=x.exact)
    elif r == 1 and rank >= 2:
        p.op("Transpose", x, p.i64(ch.perm(rank)), exact=x.exact)
    elif r == 2 and rank < 5:
        a = ch.int(-(rank + 1), rank)
        p.op("Unsqueeze", x, axes=[a], exact=x.exact)
    elif r == 3 and 1 in x.shape:
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        axes = [a - rank if ch.coin(0.3) else a for a in ones if ch.coin(0.7)] or [ones[0]]
        p.op("Squeeze", x, axis=axes, exact=x.exact)
    elif r == 4 and rank >= 1:
        p.op("Flatten", x, axis=ch.int(0, rank), exact=x.exact)
    elif r == 5 and rank >= 1:
        p.op("Tile", x, p.i64([ch.int(1, 3) if ch.coin(0.4) else 1 for _ in x.shape]), exact=x.exact)
    elif r == 6:
        target = [ch.int(2, 3) if d == 1 and ch.coin(0.6) else d for d in x.shape]
        if ch.coin(0.3):
            target = [ch.int(1, 3)] + target
        p.op(ch.pick(["BroadcastTo", "Expand"]), x, p.i64(target), exact=x.exact)
    elif r == 7 and rank >= 1:
        axis = ch.int(0, rank - 1)
        n = ch.int(1, 3)
        idx = [ch.int(-x.shape[axis] if ch.coin(0.2) else 0, x.shape[axis] - 1) for _ in range(n)]
        ind = p.i64(idx) if ch.coin(0.5) else p.i32(idx)
        p.op("GatherV2", x, ind, p.s32(axis), negative_index_support=any(i < 0 for i in idx), exact=x.exact)
    else:
        raise Skip


def g_concat(p: Program) -> None:
    ch = p.ch
    x = p.pick(min_rank=1)
    rank = len(x.shape)
    if ch.coin(0.25):  # Pack: the same shapes, a new axis
        others = [t for t in p.pool if t.kind == "f" and t.shape == x.shape] + [x]
        parts = [x] + [ch.pick(others) for _ in range(ch.int(0, 2))]
        p.op("Pack", parts, axis=ch.int(-(rank + 1), rank), N=len(parts), exact=_exactness(*parts))
        return
    axis = ch.int(0, rank - 1)
    parts: list[Any] = [x]
    for _ in range(ch.int(1, 2)):
        k = ch.int(0, 2)
        same = [
            t
            for t in p.pool
            if t.kind == "f"
            and len(t.shape) == rank
            and all(a == b for i, (a, b) in enumerate(zip(t.shape, x.shape)) if i != axis)
        ]
        if k == 0 and same:
            parts.append(ch.pick(same))
        else:
            s = list(x.shape)
            s[axis] = ch.int(1, 3)
            parts.append(p.new_input(s) if k == 1 and len(p.input_shapes) < 4 else p.fconst(s))
    if ch.coin(0.5):
        parts = [parts[i] for i in ch.perm(len(parts))]
    a = axis - rank if ch.coin(0.3) else axis
    exact = _exactness(*parts)
    if ch.coin(0.5):
        p.op("ConcatV2", parts, p.s32(a), N=len(parts), exact=exact)
    else:
        p.op("ConcatD", parts, concat_dim=a, N=len(parts), exact=exact)


def g_split(p: Program) -> None:
    ch = p.ch
    x = p.pick(min_rank=1)
    rank = len(x.shape)
    axis = ch.int(0, rank - 1)
    d = x.shape[axis]
    a = axis - rank if ch.coin(0.3) else axis
    r = ch.int(0, 2)
    if r < 2:
        nums = [k for k in range(1, 4) if d % k == 0]
        n = ch.pick(nums)
        if r == 0:
            parts = p.op_multi("Split", p.s32(a), x, n, num_split=n, exact=x.exact)
        else:
            parts = p.op_multi("SplitD", x, n, split_dim=a, num_split=n, exact=x.exact)
    else:
        if d < 2:
            raise Skip
        cut = ch.int(1, d - 1)
        sizes = [cut, d - cut]
        if ch.coin(0.3):
            sizes[ch.int(0, 1)] = -1
        parts = p.op_multi("SplitV", x, p.i64(sizes), p.s32(a), 2, num_split=2, exact=x.exact)
    if len(parts) >= 2 and ch.coin(0.5):
        order = ch.perm(len(parts))
        p.op("ConcatD", [parts[i] for i in order], concat_dim=a, N=len(parts), exact=x.exact)


def g_slice(p: Program) -> None:
    ch = p.ch
    x = p.pick(min_rank=1)
    offs, sizes = [], []
    for d in x.shape:
        o = ch.int(0, d - 1)
        offs.append(o)
        sizes.append(-1 if ch.coin(0.2) else ch.int(1, d - o))
    if ch.coin(0.5):
        p.op("SliceD", x, offsets=offs, size=sizes, exact=x.exact)
    else:
        p.op("Slice", x, p.i64(offs), p.i64(sizes), exact=x.exact)


def g_matmul(p: Program) -> None:
    ch = p.ch
    x = p.pick(min_rank=2)
    rank = len(x.shape)
    n = ch.int(1, 6)
    if rank == 2:
        ta, tb = ch.coin(0.3), ch.coin(0.3)
        m, k = (x.shape[1], x.shape[0]) if ta else x.shape
        if m * k * n > MAX_MACS:
            raise Skip
        wshape = [n, k] if tb else [k, n]
        w = p.new_input(wshape) if ch.coin(0.2) and len(p.input_shapes) < 4 else p.fconst(wshape)
        if ch.coin(0.3):
            c = p.fconst(ch.pick([[n], [m, n], [1, n]]))
            p.op(
                "GEMM",
                x,
                w,
                c,
                p.fscalar(ch.pick([1.0, 0.5])),
                p.fscalar(ch.pick([1.0, 2.0])),
                transpose_a=ta,
                transpose_b=tb,
            )
        else:
            bias = [p.fconst([n])] if ch.coin(0.4) else []
            p.op("MatMulV2", x, w, *bias, transpose_x1=ta, transpose_x2=tb, terms=k)
    else:
        adj1, adj2 = ch.coin(0.3), ch.coin(0.3)
        k = x.shape[-2] if adj1 else x.shape[-1]
        batch = list(x.shape[:-2])
        if ch.coin(0.3):
            batch = batch[ch.int(0, len(batch)) :]
        batch = [1 if ch.coin(0.2) else b for b in batch]
        wshape = batch + ([n, k] if adj2 else [k, n])
        if x.size * n > MAX_MACS:
            raise Skip
        w = p.new_input(wshape) if ch.coin(0.3) and len(p.input_shapes) < 4 else p.fconst(wshape)
        p.op("BatchMatMulV2", x, w, adj_x1=adj1, adj_x2=adj2, terms=k)


def layout_nchw(ch: Chooser, x: T) -> bool:
    """The layout an NCHW/NHWC operator reads x in (GE's rule: x's format wins over
    ``data_format``; an ND x takes ``data_format``): True for NCHW."""
    return x.fmt == 0 or (x.fmt != 1 and ch.coin(0.7))


def ceil_keeps_last_window(size: int, k: int, s: int, pad0: int, pad1: int) -> bool:
    """Whether ceil_mode's extra window (if any) starts inside the input or the left padding.
    When it would start in the right padding, PyTorch/onnxruntime/the ONNX reference drop it but
    ONNX's opset-18 shape inference keeps it: a known export bug (test_regressions.py
    ``test_export_ceil_mode_pool_shape_inference``), avoided here."""
    span = size + pad0 + pad1 - k
    out = -(-span // s) + 1
    return (out - 1) * s < size + pad0


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def g_conv(p: Program) -> None:
    ch = p.ch
    x = p.to_rank4(p.pick(max_rank=4))
    nchw = layout_nchw(ch, x)
    n, c, h, w = x.shape if nchw else (x.shape[0], x.shape[3], x.shape[1], x.shape[2])
    groups = ch.pick(_divisors(c))
    out = groups * ch.int(1, 2)
    pads = [ch.int(0, 2) if ch.coin(0.5) else 0 for _ in range(4)]
    sh, sw = ch.int(1, 2), ch.int(1, 2)
    dh, dw = ch.int(1, 2), ch.int(1, 2)
    kh_max = (h + pads[0] + pads[1] - 1) // dh + 1
    kw_max = (w + pads[2] + pads[3] - 1) // dw + 1
    if kh_max < 1 or kw_max < 1:
        raise Skip
    kh, kw = ch.int(1, min(3, kh_max)), ch.int(1, min(3, kw_max))
    if n * out * h * w * (c // groups) * kh * kw > MAX_MACS:
        raise Skip
    # GE's rule: a filter without a format is read in the layout x states (OIHW for an ND x).
    filt = p.fconst([out, kh, kw, c // groups] if x.fmt == 1 else [out, c // groups, kh, kw])
    bias = [p.fconst([out])] if ch.coin(0.5) else []
    strides = [1, 1, sh, sw] if nchw else [1, sh, sw, 1]
    dil = [1, 1, dh, dw] if nchw else [1, dh, dw, 1]
    p.op(
        "Conv2D",
        x,
        filt,
        *bias,
        strides=strides,
        pads=pads,
        dilations=dil,
        groups=groups,
        data_format="NCHW" if nchw else "NHWC",
    )


def g_pool(p: Program) -> None:
    ch = p.ch
    x = p.to_rank4(p.pick(max_rank=4))
    r = ch.int(0, 4)
    exact = x.exact
    nchw = layout_nchw(ch, x)
    h, w = (x.shape[2], x.shape[3]) if nchw else (x.shape[1], x.shape[2])
    fmt = "NCHW" if nchw else "NHWC"

    def hw(a: int, b: int) -> list[int]:
        return [1, 1, a, b] if nchw else [1, a, b, 1]

    kh, kw = ch.int(1, min(3, h)), ch.int(1, min(3, w))
    sh, sw = ch.int(1, 2), ch.int(1, 2)
    if r <= 1:  # MaxPoolV3 / AvgPoolV2, explicit pads [top, bottom, left, right]
        pads = [ch.int(0, kh - 1), ch.int(0, kh - 1), ch.int(0, kw - 1), ch.int(0, kw - 1)]
        ceil = (
            ch.coin(0.3)
            and ceil_keeps_last_window(h, kh, sh, pads[0], pads[1])
            and ceil_keeps_last_window(w, kw, sw, pads[2], pads[3])
        )
        if r == 0:
            p.op(
                "MaxPoolV3",
                x,
                ksize=hw(kh, kw),
                strides=hw(sh, sw),
                pads=pads,
                ceil_mode=ceil,
                data_format=fmt,
                exact=exact,
            )
        else:
            p.op(
                "AvgPoolV2",
                x,
                ksize=hw(kh, kw),
                strides=hw(sh, sw),
                pads=pads,
                ceil_mode=ceil,
                exclusive=ch.coin(0.5),
                data_format=fmt,
                terms=kh * kw,
            )
    elif r == 2:
        fn = ch.pick(["AvgPoolV2", "MaxPoolV3"])
        p.op(
            fn,
            x,
            ksize=hw(1, 1),
            strides=hw(1, 1),
            global_pooling=True,
            data_format=fmt,
            exact=exact and fn == "MaxPoolV3",
            terms=h * w,
        )
    else:  # MaxPool / AvgPool, SAME or VALID
        fn = "MaxPool" if r == 3 else "AvgPool"
        padding = ch.pick(["SAME", "VALID"])
        if padding == "SAME":  # onnxruntime refuses SAME_UPPER with a stride above the kernel
            sh, sw = min(sh, kh), min(sw, kw)
        p.op(
            fn,
            x,
            ksize=hw(kh, kw),
            strides=hw(sh, sw),
            padding=padding,
            data_format=fmt,
            exact=exact and fn == "MaxPool",
            terms=kh * kw,
        )


def g_softmax(p: Program) -> None:
    x = p.pick(min_rank=1)
    a = p.ch.int(-len(x.shape), len(x.shape) - 1)
    p.op(p.ch.pick(["SoftmaxV2", "LogSoftmaxV2"]), x, axes=[a], terms=x.shape[a])


def g_layernorm(p: Program) -> None:
    """LayerNorm over the last axis as exporters write it."""
    x = p.pick(min_rank=1)
    ax = p.i64([-1])
    mean = p.op("ReduceMean", x, ax, keep_dims=True, terms=x.shape[-1])
    d = p.op("Sub", x, mean)
    var = p.op("ReduceMean", p.op("Mul", d, d), ax, keep_dims=True, terms=x.shape[-1])
    y = p.op("Mul", d, p.op("Rsqrt", p.op("Add", var, p.fscalar(1e-5))))
    if p.ch.coin(0.5):
        y = p.op("Add", p.op("Mul", y, p.fconst([x.shape[-1]])), p.fconst([x.shape[-1]]))


GENERATORS: list[tuple[Callable[[Program], None], int]] = [
    (g_unary, 6),
    (g_binary, 6),
    (g_compare, 2),
    (g_logic, 2),
    (g_cast, 1),
    (g_clip, 1),
    (g_reduce, 3),
    (g_shape, 5),
    (g_concat, 2),
    (g_split, 2),
    (g_slice, 2),
    (g_matmul, 2),
    (g_conv, 2),
    (g_pool, 2),
    (g_softmax, 1),
    (g_layernorm, 1),
]
_WEIGHTED = [g for g, w in GENERATORS for _ in range(w)]


def prune(graph: Any) -> None:
    """Removes the nodes no output depends on (steps that were abandoned half-built), except
    Data nodes (the graph's inputs stay as they are)."""
    live = set()
    stack = [n for n, _ in graph.get_outputs()]
    while stack:
        n = stack.pop()
        if n.name in live:
            continue
        live.add(n.name)
        for i in range(n.get_inputs_size()):
            try:
                stack.append(n.get_in_data_nodes_and_port_indexes(i)[0])
            except RuntimeError:  # an optional input left unconnected
                pass
    for n in list(graph.get_direct_nodes()):
        if n.name not in live and n.type != "Data":
            graph.remove_node(n)


def generate(ch: Chooser, max_ops: int = 8, specials: bool = False) -> Case:
    """A random graph of 1..max_ops steps (each one operator or a few) and its inputs
    (``specials``: with NaN and infinities, see ``Case.feeds``)."""
    big = ch.coin(0.03)
    p = Program(ch, big)
    rank = ch.int(1, 4)
    shape = [ch.int(1, 5) for _ in range(rank)]
    if big:
        rest = int(np.prod(shape[1:], dtype=np.int64))
        shape[0] = max(shape[0], -(-(1 << 18) // rest))
    p.new_input(shape)
    if ch.coin(0.4):
        try:
            p.new_input(p.broadcast_shape(tuple(shape)))
        except Skip:
            pass
    for _ in range(ch.int(1, max_ops)):
        for _attempt in range(8):
            lines, pool = len(p.lines), len(p.pool)
            try:
                ch.pick(_WEIGHTED)(p)
                break
            except Skip:
                # Nodes already built stay in the builder unused (dead); forget their tensors so
                # later steps do not see them. Inputs stay (they are the graph's inputs).
                p.pool[pool:] = [t for t in p.pool[pool:] if t.is_input]
                p.lines[lines:] = [
                    ln
                    for ln in p.lines[lines:]
                    if "b.create_input(" in ln.split("#")[0]
                    and ln.split(" = ")[1].startswith("b.create_input(")
                ]
    made = [t for t in p.pool if not t.is_input]
    if not made:
        made = [p.op("Relu", p.pool[0], exact=True)]
    outs = [made[-1]]
    if len(made) > 1 and ch.coin(0.4):
        other = ch.pick(made[:-1])
        outs.append(other)
    graph = p.b.build_and_reset([t.h for t in outs])
    prune(graph)
    p.lines.append(f"graph = b.build_and_reset([{', '.join(t.name for t in outs)}])")
    return Case(
        graph,
        "\n".join(p.lines),
        list(p.input_shapes),
        ch.int(0, 1 << 20),
        list(p.ops),
        specials,
        [t.err for t in outs],
    )


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


class Mismatch(AssertionError):
    """ge and onnxruntime (or two of ge's modes) disagree on a case."""


def run_ge(graph: Any, feeds: Sequence[np.ndarray], mode: str, threads: str) -> list[np.ndarray]:
    s = Session({"ge.graphMode": mode, "ge.threads": threads})
    s.add_graph(0, graph)
    return [np.asarray(t.numpy()) for t in s.run_graph(0, list(feeds))]


def run_onnxruntime(model: bytes, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    # The reference is onnxruntime's kernels as the model states them: its graph optimizer
    # wrongly drops a no-op Expand or one-output Split whose output is also a graph output
    # ("Node input ... is not a graph input"), found by this harness (an onnxruntime bug).
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return [np.asarray(o) for o in sess.run(None, dict(zip(names, feeds)))]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def compare(
    got: np.ndarray, want: np.ndarray, rtol: float | None = None, atol: float | None = None
) -> str | None:
    """None when ``got`` (ge) matches ``want`` (onnxruntime) by the module's rule, else why not."""
    rtol = RTOL if rtol is None else rtol
    atol = ATOL if atol is None else atol
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if want.dtype.kind != "f":
        bad = np.flatnonzero(got != want)
        return None if bad.size == 0 else f"{bad.size} elements differ, first at flat {bad[0]}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    if (gn != wn).any():
        i = int(np.flatnonzero(gn != wn)[0])
        return f"NaN in one engine only, first at flat {i}: ge {g.flat[i]} ort {w.flat[i]}"
    fin = np.isfinite(w)
    if (g[~fin & ~wn] != w[~fin & ~wn]).any():
        return "infinities differ"
    finite = w[fin]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
    tol = atol * scale + rtol * np.abs(w)
    bad = fin & ~(err <= tol)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (
            f"{int(bad.sum())} elements differ, first at flat {i}: ge {g.flat[i]!r} ort {w.flat[i]!r} "
            f"(max abs err {float(err[fin].max()):.3g}, scale {scale:.3g})"
        )
    return None


def run_modes(
    graph: Any,
    feeds: Sequence[np.ndarray],
    modes: Sequence[tuple[str, str]] = MODES,
    fail: Callable[[str], Exception] = Mismatch,
) -> list[np.ndarray]:
    """Runs ``graph`` in each (graphMode, threads) of ``modes``; the runs must agree bit for bit.
    Returns the first mode's outputs; a run that raises or disagrees raises ``fail(why)``."""
    results: list[tuple[tuple[str, str], list[np.ndarray]]] = []
    for mode in modes:
        try:
            results.append((mode, run_ge(graph, feeds, *mode)))
        except Exception as e:  # a well-typed graph must run
            raise fail(f"ge (graphMode={mode[0]}, threads={mode[1]}) raised {type(e).__name__}: {e}") from e
    first, ref = results[0]
    for mode, outs in results[1:]:
        for i, (a, b) in enumerate(zip(ref, outs)):
            if not _same_bits(a, b):
                raise fail(f"ge modes disagree on output {i}: {first} vs {mode}")
    return ref


def check_against(
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    model: bytes,
    feeds: Sequence[np.ndarray],
    errs: Sequence[float],
    fail: Callable[[str], Exception],
) -> None:
    """ge's outputs ``got`` against onnxruntime's ``want`` (``judge``); raises ``fail(why)``."""
    if len(want) != len(got):
        raise fail(f"{len(got)} outputs from ge, {len(want)} from onnxruntime")
    why = judge(got, want, model, feeds, errs)
    if why:
        raise fail(why)


def check_case(case: Case, modes: Sequence[tuple[str, str]] = MODES) -> None:
    """Raises Mismatch (with the program) unless every ge mode agrees bit for bit and with
    onnxruntime within the tolerance."""
    feeds = case.feeds()

    def fail(msg: str) -> Mismatch:
        return Mismatch(f"{msg}\n{case!r}")

    model = ge.onnx.to_bytes(case.graph)
    got = run_modes(case.graph, feeds, modes, fail)
    try:
        want = run_onnxruntime(model, feeds)
    except Exception as e:
        raise fail(f"onnxruntime refused the exported model: {type(e).__name__}: {e}") from e
    check_against(got, want, model, feeds, case.errs, fail)


def judge(
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    model: bytes,
    feeds: Sequence[np.ndarray],
    errs: Sequence[float] = (),
) -> str | None:
    """None when ge's outputs match onnxruntime's, or, where they do not, the ONNX reference
    implementation's (onnxruntime has bugs of its own: MeanVarianceNormalization of a constant
    gives NaN, ReduceMean of an empty set 0); else what differs."""
    errs = list(errs) + [1.0] * (len(got) - len(errs))
    whys = [(i, compare(g, w, atol=ATOL * errs[i])) for i, (g, w) in enumerate(zip(got, want))]
    bad = [(i, why) for i, why in whys if why]
    if not bad:
        return None
    try:
        import onnx
        from onnx.reference import ReferenceEvaluator

        m = onnx.load_from_string(model)
        names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # NaN/inf inputs are expected
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = [np.asarray(r) for r in ReferenceEvaluator(m).run(None, dict(zip(names, feeds)))]
    except Exception as e:  # noqa: BLE001  (the reference cannot run it: onnxruntime's word stands)
        return f"output {bad[0][0]}: {bad[0][1]} (the ONNX reference failed: {type(e).__name__})"
    for i, why in bad:
        if compare(
            got[i],
            ref[i].astype(got[i].dtype) if ref[i].dtype != got[i].dtype else ref[i],
            atol=ATOL * errs[i],
        ):
            return f"output {i}: {why} (the ONNX reference agrees with onnxruntime)"
    return None
