"""The kernels of nn.rs, index.rs and control.rs across every dtype of their prototypes.

tests/kernels/test_kernels_nn.py and test_kernels_control_flow.py check the semantics of these kernels
(layouts, pads, masks, modes, errors), mostly in float32. Here every op registered in
crates/ge-runtime/src/kernels/{nn,index,control}.rs runs in every dtype its prototype allows that
the CPU backend has (f64, f32, f16, bf16, int8..int64, uint8..uint64, bool), for every typed input
(indices and axes int32 and int64, a bias, gamma/beta, on/off and pad values, a branch index,
...) and every output whose dtype is not an input's (Conv2D's int32 from int8, ArgMax/ArgMin and
NonZero ``dtype``, TopKV2 ``indices_dtype``, If/Case/While outputs).
``test_every_op_and_dtype_of_the_three_files_is_tested_or_excluded`` reads the registries from
the kernel sources and the dtypes from the prototypes (``ge.ops.get_op``) and fails when an (op,
input or output, dtype) is neither tested here nor listed, with its reason, in ``EXCLUDED``. The
only exclusion is the quantization input ``offset_w`` of Conv2D and DepthwiseConv2D, which the
kernels refuse ("not supported", checked by ``test_offset_w_is_not_supported``).

Each case builds a one-op graph with ``ge.es`` and runs it through a ``ge.session.Session`` in
graph mode and in eager mode (``run`` of kernel_harness.py: the two must agree byte for byte);
the result must match a numpy reference written here. Hypothesis draws shapes, attributes and a
seed for the values (``derandomize=True``, a few examples: every example runs every dtype).
bf16 is fed and read as its uint16 bits and compared as float32 values (kernel_harness.py).

Values: data movement, comparisons and sign tests get 0, -0, +-inf, NaN and the dtype's
extremes besides 10**U(-3, 3) of both signs and small integers; integers the whole range (sums
and products wrap and are compared exactly). Float math gets finite values of both signs and small
integers (10**U(-1.5, 1.5); 10**U(-3, 3) for the average poolings; 10**U(-1, 1) for convolutions).

Exact (bit for bit; ``==`` where -0.0 and 0.0 are equal elements whose order decides):
data movement and indexing (Gather*, ScatterNdUpdate, ScatterElements without reduction, Slice*,
StridedSlice*, ReverseV2, Split*, Unpack, Pad*, OneHot*, Tril/Triu/Trilu, Where, NonZero, If,
Case, While), MaxPool* (NaN propagates), ArgMax*/ArgMin (the first extreme, NaN wins), TopKV2
(NaN ranks above everything, ties by lower index), PRelu (x * weight is exact in f64, rounded
once), integer results (Cumsum, ScatterNd, ScatterElements add/mul wrap; int8 convolutions give
int32). Arithmetic that the kernels do step by step in the dtype is reproduced step by step:
Cumsum and the ScatterNd/ScatterElements reductions add (multiply) in order, each step rounded to
the dtype (f16 and bf16: computed in f32 and rounded, as numpy's float16 does);
``test_cumsum_rounds_every_step`` pins that rounding with ties. Range computes start + i * delta
in f64 and rounds once (the values drawn are exact in f32, so rounding to bf16 directly or through
f32, as the reference does, agrees).

Float math: |got - expected| <= atol + rtol * |expected| + extra, NaN where NaN, the same
infinities; (rtol, atol) is kernel_harness.py's TOL (3 ulp for f32/f64, 1 ulp for f16/bf16;
the smallest normal number); the reference is computed in float64 and rounded once to the dtype.

- Conv2D, DepthwiseConv2D: f32, f16 and bf16 accumulate in f32 (f16/bf16 rounded once at the
  end), in the GEMM's order: extra = (K + 1) * 2**-24 * sum(|terms|) for K products per output
  (the recursive summation bound; the bias is one more term).
- AvgPool*, GlobalAveragePool, BatchNorm, LayerNorm, InstanceNorm, GroupNorm, LRN: computed in
  f64 and rounded once, so the kernel and the reference differ only by f64 summation order:
  extra = 2**-45 * (the sum of the magnitudes of the terms), far below an f32 ulp, which keeps a
  result that cancels to about 0 (x close to the mean) checkable.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import ge
import ge.ops
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType
from hypothesis import assume, given
from hypothesis import strategies as st

from kernel_harness import (
    F64_EPS,
    FLOATS,
    GE_DT,
    HYP,
    INTS,
    KERNEL_DIR,
    NP,
    SEEDS,
    _registered_in,
    case,
    const,
    conv_ref,
    exact,
    f32,
    finite,
    ix,
    nchw_to_nhwc,
    near,
    pool_ref,
    proto_dtypes,
    rng_of,
    rounded_step,
    run,
    same,
    small_ints,
    to_dtype,
    values,
)

# ---------------------------------------------------------------------------------------------
# Coverage: (op, input or output, dtype) tested here, or excluded with a reason
# ---------------------------------------------------------------------------------------------

# The files of the ops covered here (nn.rs's kernels now sit in the families conv, pool, norm and,
# PRelu, elementwise); ops those family files hold that other test files cover are left out.
FILES = ("conv/mod.rs", "pool.rs", "norm.rs", "index.rs", "control.rs")
# index.rs's shape ops, Cumsum, ArgMax/ArgMin and Range now sit in the families shape, reduce and
# source.
OPS_MOVED_IN = {
    "elementwise.rs": {"PRelu"},
    "shape.rs": {"Slice", "SliceD", "StridedSlice", "StridedSliceD", "ReverseV2", "Split", "SplitD",
                 "SplitV", "Unpack", "Pad", "PadD", "PadV3", "Tril", "Triu", "Trilu"},
    "reduce.rs": {"Cumsum", "CumsumD", "ArgMaxV2", "ArgMaxD", "ArgMin"},
    "source.rs": {"Range"},
}
OPS_COVERED_ELSEWHERE = {
    "Conv3D", "Conv2DTranspose", "DeformableConv2D", "Pooling",  # test_kernels_convnd.py
    "RmsNorm", "AddRmsNorm",  # test_kernels_ge_ops.py
    "SoftmaxV2", "LogSoftmaxV2",  # test_kernels.py
    "MaskedFill", "EmbeddingBag", "UniqueWithCountsAndSorting",  # test_kernels_misc.py
}
COVER: Dict[str, Dict[str, Set[str]]] = defaultdict(lambda: defaultdict(set))

_QUANT = ("the quantization offset of the filter (GE: for quantized convolution); the kernel "
          "refuses it, 'not supported: {op} with offset_w (quantized)', as Conv3D, MatMulV2 and "
          "BatchMatMulV2 do (test_offset_w_is_not_supported)")
EXCLUDED: Dict[Tuple[str, str, str], str] = {
    ("Conv2D", "offset_w", "int8"): _QUANT.format(op="Conv2D"),
    **{("DepthwiseConv2D", "offset_w", d): _QUANT.format(op="DepthwiseConv2D")
       for d in ("float32", "float16", "bfloat16", "int8")},
}


def drawn(*ops: str) -> Callable[[Any], Any]:
    """A hypothesis test (15 examples) drawing from ``data``; with ``ops``, run once per op (the
    parameter ``op``)."""
    def wrap(test: Callable[..., Any]) -> Callable[..., Any]:
        test = HYP(15)(given(data=st.data())(test))
        return pytest.mark.parametrize("op", list(ops))(test) if ops else test
    return wrap


def draw_axis(data: Any, rank: int) -> Tuple[int, int]:
    """An axis of a rank-``rank`` tensor: (in range, as passed: negative or not, drawn)."""
    ax = data.draw(st.integers(0, rank - 1), label="axis")
    return ax, (ax - rank if data.draw(st.booleans(), label="negative axis") else ax)


def D(op: str, io: str) -> List[str]:
    """The dtypes to test ``io`` of ``op`` in (the prototype's, less EXCLUDED); recorded."""
    ds = [d for d in proto_dtypes(op, io) if (op, io, d) not in EXCLUDED]
    COVER[op][io].update(ds)
    return ds


def norm_dtypes(op: str) -> Tuple[List[str], List[str]]:
    """The dtypes of a normalisation's x and gamma (beta: gamma's); recorded."""
    x, gamma = D(op, "x"), D(op, "gamma")
    mark(op, "beta", gamma)
    return x, gamma


def mark(op: str, io: str, ds: Sequence[str]) -> List[str]:
    """Records that ``io`` of ``op`` is tested in ``ds`` (paired with another input's dtype)."""
    COVER[op][io].update(ds)
    return list(ds)


def test_every_op_and_dtype_of_the_three_files_is_tested_or_excluded():
    assert KERNEL_DIR.is_dir(), f"kernel sources not found at {KERNEL_DIR}"
    problems = []
    for f in FILES + tuple(OPS_MOVED_IN):
        ops = _registered_in(KERNEL_DIR / f)
        assert ops, f
        ops = OPS_MOVED_IN[f] & ops if f in OPS_MOVED_IN else ops - OPS_COVERED_ELSEWHERE
        for op in sorted(ops):
            if op not in COVER:
                problems.append(f"{f}: {op} has no test")
                continue
            p = ge.ops.get_op(op)
            in_vars = {i["type"] for i in p["inputs"] if isinstance(i["type"], str)}
            # Inputs, and outputs whose dtype no input's type variable fixes.
            ios = [i["name"] for i in p["inputs"]]
            ios += [o["name"] for o in p["outputs"]
                    if not (isinstance(o["type"], str) and o["type"] in in_vars)]
            for io in ios:
                want = set(proto_dtypes(op, io))
                got = COVER[op].get(io, set())
                excl = {d for (o, n, d) in EXCLUDED if (o, n) == (op, io)}
                if want - got - excl:
                    problems.append(f"{op}.{io}: untested {sorted(want - got - excl)}")
                if got - want:
                    problems.append(f"{op}.{io}: tested in {sorted(got - want)}, not in the prototype")
                if got & excl:
                    problems.append(f"{op}.{io}: {sorted(got & excl)} both tested and excluded")
    for (op, io, d) in EXCLUDED:
        if d not in proto_dtypes(op, io):
            problems.append(f"stale exclusion {(op, io, d)}: not in the prototype")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op", ["Conv2D", "DepthwiseConv2D"])
def test_offset_w_is_not_supported(op):
    for d in proto_dtypes(op, "offset_w"):
        x = np.ones((1, 1, 3, 3), NP["float32"])
        w = np.ones((1, 1, 2, 2), NP["float32"])
        with pytest.raises(ge.GeError, match=f"not supported: {op} with offset_w"):
            run(lambda b, xh, wh, bh, oh: getattr(es, op)(xh, wh, bh, oh, strides=[1, 1, 1, 1], pads=[0] * 4,
                                                          data_format="NCHW"),
                (x, "float32"), (w, "float32"), (np.zeros(1, np.float32), "float32"),
                (np.zeros(1, NP[d]), d))


# ---------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------

CONV_T = D("Conv2D", "x")
mark("Conv2D", "filter", CONV_T)
DW_T = D("DepthwiseConv2D", "x")
mark("DepthwiseConv2D", "filter", DW_T)
CONV_OUT = {"int8": "int32"}  # else the input's dtype
FLOAT_BIAS = [d for d in proto_dtypes("Conv2D", "bias") if d in FLOATS]
for _op in ("Conv2D", "DepthwiseConv2D"):
    mark(_op, "bias", FLOAT_BIAS + ["int32"])
    mark(_op, "y", [CONV_OUT.get(d, d) for d in CONV_T])


@st.composite
def conv_geometry(draw: Any) -> Dict[str, Any]:
    k = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="kernel")
    dil = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="dilations")
    pads = draw(st.tuples(*[st.integers(0, 1)] * 4), label="pads")
    hw = []
    for i in range(2):
        eff = dil[i] * (k[i] - 1) + 1
        lo = max(1, eff - pads[2 * i] - pads[2 * i + 1])
        hw.append(draw(st.integers(lo, lo + 3), label="size"))
    return dict(n=draw(st.integers(1, 2), label="n"), hw=tuple(hw), k=k, dil=dil, pads=pads,
                stride=draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="strides"),
                nchw=draw(st.booleans(), label="NCHW"))


def conv_case(op: str, d: str, g: Dict[str, Any], x: np.ndarray, w: np.ndarray, w_ref: np.ndarray,
              ngroups: int, bias: Optional[Tuple[np.ndarray, str]], **attrs: Any) -> None:
    """Runs ``op`` (x NCHW, filter ``w`` as fed) and checks it against conv_ref with ``w_ref``."""
    nchw = g["nchw"]
    full = (lambda v: [1, 1, *v]) if nchw else (lambda v: [1, *v, 1])
    xin = x if nchw else nchw_to_nhwc(x)
    kw = dict(strides=full(g["stride"]), pads=list(g["pads"]), dilations=full(g["dil"]),
              data_format="NCHW" if nchw else "NHWC", **attrs)
    ins = [(xin, d), (w, d)] + ([bias] if bias else [])
    got = run(lambda b, *h: getattr(es, op)(*h, **kw), *ins)[0]
    out_d = CONV_OUT.get(d, d)
    acc = np.int64 if d in INTS else np.float64
    want = conv_ref(x, w_ref, g["stride"], g["pads"], g["dil"], ngroups, acc)
    if bias:
        want = want + bias[0].astype(acc)[None, :, None, None]
    if not nchw:
        want = nchw_to_nhwc(want)
    what = f"{op} {d} {g} groups {ngroups} bias {bias is not None}"
    if d in INTS:
        exact(got, want.astype(NP[out_d]), out_d, what)
        return
    terms = conv_ref(np.abs(x), np.abs(w_ref), g["stride"], g["pads"], g["dil"], ngroups, np.float64)
    if bias:
        terms = terms + np.abs(bias[0].astype(np.float64))[None, :, None, None]
    if not nchw:
        terms = nchw_to_nhwc(terms)
    k_terms = w_ref.shape[1] * w_ref.shape[2] * w_ref.shape[3] + 1
    u = 2.0 ** -53 if d == "float64" else 2.0 ** -24
    near(got, want, out_d, extra=k_terms * u * terms, what=what)


def conv_values(rng: np.random.Generator, d: str, shape: Sequence[int]) -> np.ndarray:
    return values(rng, d, shape) if d in INTS else finite(rng, d, shape, mag=1.0)


@HYP(15)
@given(data=st.data(), g=conv_geometry())
def test_conv2d(data, g):
    cg, og, groups = (data.draw(st.integers(1, 3), label=s) for s in ("cg", "og", "groups"))
    with_bias = data.draw(st.booleans(), label="bias")
    rng = rng_of(data)
    for d in CONV_T:
        with case("Conv2D", d):
            x = conv_values(rng, d, (g["n"], cg * groups) + g["hw"])
            w = conv_values(rng, d, (og * groups, cg) + g["k"])
            bd = "int32" if d in INTS else FLOAT_BIAS[data.draw(st.integers(0, len(FLOAT_BIAS) - 1))]
            bias = ((small_ints(rng, bd, (og * groups,), -1000, 1000) if bd == "int32"
                     else finite(rng, bd, (og * groups,))), bd) if with_bias else None
            conv_case("Conv2D", d, g, x, w, w, groups, bias, groups=groups)


@HYP(15)
@given(data=st.data(), g=conv_geometry())
def test_depthwise_conv2d(data, g):
    c, k = (data.draw(st.integers(1, 3), label=s) for s in ("channels", "multiplier"))
    one_in = data.draw(st.booleans(), label="filter [C*K, 1, kh, kw]")
    with_bias = data.draw(st.booleans(), label="bias")
    rng = rng_of(data)
    for d in DW_T:
        with case("DepthwiseConv2D", d):
            x = conv_values(rng, d, (g["n"], c) + g["hw"])
            if one_in:  # output channel o reads input channel o // K
                w = conv_values(rng, d, (c * k, 1) + g["k"])
                w_ref = w
            else:  # [K, C, kh, kw]: output channel c * K + k is filter [k, c]
                w = conv_values(rng, d, (k, c) + g["k"])
                w_ref = np.ascontiguousarray(w.transpose(1, 0, 2, 3)).reshape((c * k, 1) + g["k"])
            bd = "int32" if d in INTS else FLOAT_BIAS[data.draw(st.integers(0, len(FLOAT_BIAS) - 1))]
            bias = ((small_ints(rng, bd, (c * k,), -1000, 1000) if bd == "int32"
                     else finite(rng, bd, (c * k,))), bd) if with_bias else None
            conv_case("DepthwiseConv2D", d, g, x, w, w_ref, c, bias)


@pytest.mark.parametrize("op", ["Conv2D", "DepthwiseConv2D"])
def test_conv_bias_dtypes(op):
    # Every (x, bias) dtype pair once (the tests above draw the bias): a float bias with each float
    # x (cast to x's compute type), int32 with int8.
    g = dict(n=1, hw=(3, 4), k=(2, 2), dil=(1, 1), pads=(0, 1, 1, 0), stride=(1, 1), nchw=True)
    rng = np.random.default_rng(7)
    for d in CONV_T if op == "Conv2D" else DW_T:
        for bd in (["int32"] if d in INTS else FLOAT_BIAS):
            with case(op, f"{d}, bias {bd}"):
                x = conv_values(rng, d, (1, 2, 3, 4))
                b = small_ints(rng, bd, (4,), -1000, 1000) if bd == "int32" else finite(rng, bd, (4,))
                if op == "Conv2D":  # 2 input channels, 4 output channels
                    w = conv_values(rng, d, (4, 2, 2, 2))
                    conv_case(op, d, g, x, w, w, 1, (b, bd))
                else:  # filter [K=2, C=2, kh, kw]: 4 output channels
                    w = conv_values(rng, d, (2, 2, 2, 2))
                    w_ref = np.ascontiguousarray(w.transpose(1, 0, 2, 3)).reshape(4, 1, 2, 2)
                    conv_case(op, d, g, x, w, w_ref, 2, (b, bd))


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------

POOL_T = {op: D(op, "x") for op in ("MaxPool", "MaxPoolV3", "AvgPool", "AvgPoolV2")}
GAP_T = D("GlobalAveragePool", "x")


@drawn(*POOL_T)
def test_pooling(op, data):
    v1 = op in ("MaxPool", "AvgPool")
    k = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="ksize")
    s = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="strides")
    n, c = data.draw(st.integers(1, 2), label="n"), data.draw(st.integers(1, 3), label="c")
    hw = data.draw(st.tuples(st.integers(1, 5), st.integers(1, 5)), label="hw")
    nchw = data.draw(st.booleans(), label="NCHW")
    modes = ["SAME", "VALID"] + ([] if v1 else ["CALCULATED"])
    mode = data.draw(st.sampled_from(modes), label="padding")
    if mode == "VALID":
        assume(hw[0] >= k[0] and hw[1] >= k[1])
    pads = [0, 0, 0, 0]
    if mode == "CALCULATED":
        pads = [data.draw(st.integers(0, k[i // 2] // 2), label="pad") for i in range(4)]
        assume(hw[0] + pads[0] + pads[1] >= k[0] and hw[1] + pads[2] + pads[3] >= k[1])
    ceil = mode == "CALCULATED" and data.draw(st.booleans(), label="ceil")
    glob = not v1 and data.draw(st.booleans(), label="global")
    exclusive = v1 or data.draw(st.booleans(), label="exclusive")
    divisor = 0 if v1 or glob else data.draw(st.sampled_from([0, 0, 1, 3]), label="divisor")
    full = (lambda v: [1, 1, *v]) if nchw else (lambda v: [1, *v, 1])
    attrs: Dict[str, Any] = dict(ksize=full(k), strides=full(s), data_format="NCHW" if nchw else "NHWC")
    if v1:
        attrs["padding"] = mode
    else:
        attrs.update(padding_mode=mode, pads=pads, ceil_mode=ceil, global_pooling=glob)
        if op == "AvgPoolV2":
            attrs.update(exclusive=exclusive, divisor_override=divisor)
    rk, rs, rmode = ((hw, (1, 1), "VALID") if glob else (k, s, mode))
    rng = rng_of(data)
    for d in POOL_T[op]:
        with case(op, d):
            kind = "max" if op.startswith("Max") else "avg"
            x = values(rng, d, (n, c) + hw) if kind == "max" else finite(rng, d, (n, c) + hw, mag=3)
            got = run(lambda b, h: getattr(es, op)(h, **attrs), (x if nchw else nchw_to_nhwc(x), d))[0]
            want, scale = pool_ref(x, rk, rs, rmode, pads, ceil, kind, exclusive, divisor)
            if not nchw:
                want, scale = nchw_to_nhwc(want), nchw_to_nhwc(scale)
            what = f"{op} {attrs} on {hw}"
            if kind == "max":
                exact(got, want, d, what)
            else:
                near(got, want, d, extra=F64_EPS * scale, what=what)


@drawn()
def test_global_average_pool(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=3, max_size=5), label="shape")
    rng = rng_of(data)
    for d in GAP_T:
        with case("GlobalAveragePool", d):
            x = finite(rng, d, shape, mag=3)
            got = run(lambda b, h: es.GlobalAveragePool(h), (x, d))[0]
            axes = tuple(range(2, len(shape)))
            x64 = x.astype(np.float64)
            near(got, x64.mean(axis=axes, keepdims=True), d,
                 extra=F64_EPS * np.abs(x64).mean(axis=axes, keepdims=True), what=f"GAP {shape}")


# ---------------------------------------------------------------------------------------------
# Normalisation, LRN, PRelu
# ---------------------------------------------------------------------------------------------

BN_T = D("BatchNorm", "x")
BN_T2 = D("BatchNorm", "scale")
for _io in ("offset", "mean", "variance"):
    D("BatchNorm", _io)


def normalized(x: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float, gamma: np.ndarray,
               beta: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(x - mean) / sqrt(var + eps) * gamma + beta in float64 (all broadcasting), and the sum
    of the magnitudes of its terms."""
    sd = np.sqrt(var + eps)
    y = (x - mean) / sd * gamma + beta
    return y, (np.abs(x) + np.abs(mean)) / sd * np.abs(gamma) + np.abs(beta)


@drawn()
def test_batch_norm(data):
    shape = data.draw(st.tuples(*[st.integers(1, 3)] * 4), label="shape")
    nchw = data.draw(st.booleans(), label="NCHW")
    training = data.draw(st.booleans(), label="is_training")
    with_stats = not training or data.draw(st.booleans(), label="mean and variance")
    factor = data.draw(st.sampled_from([1.0, 0.25]), label="exponential_avg_factor")
    eps = f32(data.draw(st.sampled_from([1e-4, 1e-2]), label="epsilon"))
    ca = 1 if nchw else 3
    c = shape[ca]
    axes = tuple(i for i in range(4) if i != ca)
    bc = [1, 1, 1, 1]
    bc[ca] = c
    rng = rng_of(data)
    for d in BN_T:
        for td in BN_T2:
            with case("BatchNorm", f"{d}, {td}"):
                x = finite(rng, d, shape)
                scale, offset, mean = (finite(rng, td, (c,)) for _ in range(3))
                var = np.abs(finite(rng, td, (c,)))
                ins = [(x, d), (scale, td), (offset, td)] + ([(mean, td), (var, td)] if with_stats else [])
                attrs = dict(epsilon=eps, data_format="NCHW" if nchw else "NHWC", is_training=training,
                             exponential_avg_factor=factor)
                got = run(lambda b, *h: list(es.BatchNorm(*h, **attrs)), *ins)
                x64 = x.astype(np.float64)
                m_in, v_in = mean.astype(np.float64), var.astype(np.float64)
                if training:
                    bm, bv = x64.mean(axis=axes), x64.var(axis=axes)
                    count = x.size // c
                    adj = count / (count - 1) if count > 1 else 1.0
                    f = f32(factor)
                    blend = (lambda old, new: (1 - f) * old + f * new) if with_stats and f != 1.0 else \
                        (lambda old, new: new)
                    m, v = bm, bv
                    stats = [blend(m_in, bm), blend(v_in, bv * adj), bm, bv]
                else:
                    m, v = m_in, v_in
                    stats = [m_in, v_in, m_in, v_in]
                s64, o64 = scale.astype(np.float64).reshape(bc), offset.astype(np.float64).reshape(bc)
                y, mag = normalized(x64, m.reshape(bc), v.reshape(bc), eps, s64, o64)
                what = f"BatchNorm {shape} NCHW {nchw} training {training} stats {with_stats}"
                near(got[0], y, d, extra=F64_EPS * mag, what=what)
                smag = np.abs(x64).mean(axis=axes) ** 2 + np.abs(m_in) + np.abs(v_in)
                for i, st_ in enumerate(stats):
                    near(got[1 + i], st_, td, extra=F64_EPS * smag, what=f"{what} output {1 + i}")
                near(got[5], np.zeros(1), td, what=f"{what} reserve_space_3")


LN_T, LN_G = norm_dtypes("LayerNorm")


def stats_ref(x64: np.ndarray, axes: Tuple[int, ...]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = x64.mean(axis=axes, keepdims=True)
    return m, x64.var(axis=axes, keepdims=True), np.abs(x64).mean(axis=axes, keepdims=True)


def check_normalized(got: List[Tuple[str, np.ndarray]], x: np.ndarray, axes: Tuple[int, ...], eps: float,
                     gamma: Any, beta: Any, d: str, stat_d: str, what: str) -> None:
    """y, mean and variance (dtype ``stat_d``) of a normalisation of ``x`` over ``axes`` against
    the float64 reference, with the summation slack of each."""
    x64 = x.astype(np.float64)
    m, v, am = stats_ref(x64, axes)
    y, mag = normalized(x64, m, v, eps, gamma, beta)
    near(got[0], y, d, extra=F64_EPS * mag, what=what)
    near(got[1], m, stat_d, extra=F64_EPS * am, what=what + " mean")
    near(got[2], v, stat_d, extra=F64_EPS * am ** 2, what=what + " variance")


def each_norm_case(op: str, dtypes: Tuple[List[str], List[str]], rng: np.random.Generator,
                   shape: Sequence[int], param_shape: Sequence[int], build: Callable[..., Any],
                   check: Callable[..., None]) -> None:
    """Per (x dtype, gamma dtype) of normalisation ``op`` (``dtypes``): x of ``shape``, gamma and
    beta of ``param_shape`` drawn from ``rng``, ``build(x, gamma, beta)`` run, then
    ``check(d, gd, x, gamma, beta, got)``, in a named case."""
    for d in dtypes[0]:
        for gd in dtypes[1]:
            with case(op, f"{d}, gamma {gd}"):
                x = finite(rng, d, shape)
                gamma, beta = finite(rng, gd, param_shape), finite(rng, gd, param_shape)
                got = run(lambda b, *h: list(build(*h)), (x, d), (gamma, gd), (beta, gd))
                check(d, gd, x, gamma, beta, got)


@drawn()
def test_layer_norm(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
    r = len(shape)
    bna, bpa = (data.draw(st.integers(0, r - 1), label=s) for s in ("begin_norm_axis", "begin_params_axis"))
    neg = data.draw(st.booleans(), label="negative axes")
    eps = f32(data.draw(st.sampled_from([1e-5, 1e-2]), label="epsilon"))
    attrs = dict(begin_norm_axis=bna - r if neg else bna, begin_params_axis=bpa - r if neg else bpa,
                 epsilon=eps)

    def check(d, gd, x, gamma, beta, got):
        check_normalized(got, x, tuple(range(bna, r)), eps, gamma.astype(np.float64),
                         beta.astype(np.float64), d, d, f"LayerNorm {shape} axes {bna} {bpa}")

    each_norm_case("LayerNorm", (LN_T, LN_G), rng_of(data), shape, shape[bpa:],
                   lambda *h: es.LayerNorm(*h, **attrs), check)


IN_T, IN_T2 = norm_dtypes("InstanceNorm")


@drawn()
def test_instance_norm(data):
    rank = data.draw(st.integers(4, 5), label="rank")
    shape = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank), label="shape")
    last = data.draw(st.booleans(), label="channel last")
    fmt = ("NHWC" if rank == 4 else "NDHWC") if last else ("NCHW" if rank == 4 else "NCDHW")
    ca = rank - 1 if last else 1
    axes = tuple(i for i in range(1, rank) if i != ca)
    bc = [1] * rank
    bc[ca] = shape[ca]
    eps = f32(1e-5)

    def check(d, gd, x, gamma, beta, got):
        check_normalized(got, x, axes, eps, gamma.astype(np.float64).reshape(bc),
                         beta.astype(np.float64).reshape(bc), d, gd, f"InstanceNorm {shape} {fmt}")

    each_norm_case("InstanceNorm", (IN_T, IN_T2), rng_of(data), shape, (shape[ca],),
                   lambda *h: es.InstanceNorm(*h, data_format=fmt, epsilon=eps), check)


GN_T, GN_G = norm_dtypes("GroupNorm")


@drawn()
def test_group_norm(data):
    rank = data.draw(st.integers(2, 4), label="rank")
    groups = data.draw(st.integers(1, 3), label="groups")
    cpg = data.draw(st.integers(1, 2), label="per group")
    rest = data.draw(st.lists(st.integers(1, 3), min_size=rank - 2, max_size=rank - 2), label="spatial")
    n = data.draw(st.integers(1, 2), label="n")
    fmt = data.draw(st.sampled_from(["NCHW", "NHWC", "ND"]), label="data_format")
    c = groups * cpg
    last = fmt == "NHWC"
    shape = [n] + rest + [c] if last else [n, c] + rest
    eps = f32(1e-4)

    def check(d, gd, x, gamma, beta, got):
        x64 = x.astype(np.float64)
        xc = np.moveaxis(x64, -1, 1) if last else x64  # channels at axis 1
        xg = xc.reshape(n, groups, -1)
        m, v, am = stats_ref(xg, (2,))
        y, mag = normalized(xg, m, v, eps, 1.0, 0.0)
        bc = [1, c] + [1] * (rank - 2)
        g64, b64 = gamma.astype(np.float64).reshape(bc), beta.astype(np.float64).reshape(bc)
        y = y.reshape(xc.shape) * g64 + b64
        mag = mag.reshape(xc.shape) * np.abs(g64) + np.abs(b64)
        if last:
            y, mag = np.moveaxis(y, 1, -1), np.moveaxis(mag, 1, -1)
        what = f"GroupNorm {shape} {fmt} groups {groups}"
        near(got[0], y, d, extra=F64_EPS * mag, what=what)
        am = am.reshape(n, groups)
        near(got[1], m.reshape(n, groups), d, extra=F64_EPS * am, what=what + " mean")
        near(got[2], v.reshape(n, groups), d, extra=F64_EPS * am ** 2, what=what + " variance")

    each_norm_case("GroupNorm", (GN_T, GN_G), rng_of(data), shape, (c,),
                   lambda *h: es.GroupNorm(*h, num_groups=groups, data_format=fmt, eps=eps), check)


LRN_T = D("LRN", "x")


@drawn()
def test_lrn(data):
    shape = data.draw(st.tuples(*[st.integers(1, 4)] * 4), label="shape")
    r = data.draw(st.integers(0, 3), label="depth_radius")
    choices = (("bias", [1.0, 0.5, 2.0]), ("alpha", [1.0, 0.1, 1e-4]), ("beta", [0.5, 0.75, 0.25]))
    bias, alpha, beta = (f32(data.draw(st.sampled_from(v), label=nm)) for nm, v in choices)
    rng = rng_of(data)
    for d in LRN_T:
        with case("LRN", d):
            x = finite(rng, d, shape)
            got = run(lambda b, h: es.LRN(h, depth_radius=r, bias=bias, alpha=alpha, beta=beta), (x, d))[0]
            x64 = x.astype(np.float64)
            sq = x64 ** 2
            c = shape[1]
            s = np.stack([sq[:, max(0, i - r):i + r + 1].sum(axis=1) for i in range(c)], axis=1)
            near(got, x64 / (bias + alpha * s) ** beta, d, extra=F64_EPS * np.abs(x64),
                 what=f"LRN {shape} r {r} {bias} {alpha} {beta}")


PRELU_T = D("PRelu", "x")
mark("PRelu", "weight", PRELU_T)


@drawn()
def test_prelu(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
    per_channel = len(shape) >= 2 and data.draw(st.booleans(), label="per channel")
    rng = rng_of(data)
    for d in PRELU_T:
        with case("PRelu", d):
            x = values(rng, d, shape)
            w = finite(rng, d, (shape[1],) if per_channel else (1,))
            got = run(lambda b, h, wh: es.PRelu(h, wh), (x, d), (w, d))[0]
            wb = w.astype(np.float64).reshape((1, -1) + (1,) * (len(shape) - 2)) if per_channel \
                else w.astype(np.float64)
            x64 = x.astype(np.float64)
            with np.errstate(all="ignore"):
                exact(got, to_dtype(np.where(x64 >= 0, x64, wb * x64), d), d, f"PRelu {shape}")


# ---------------------------------------------------------------------------------------------
# Gather
# ---------------------------------------------------------------------------------------------

GV2 = {io: D("GatherV2", io) for io in ("x", "indices", "axis")}
GV2D = {io: D("GatherV2D", io) for io in ("x", "indices")}


def dims(min_size: int = 1, max_size: int = 3, lo: int = 1, hi: int = 4) -> Any:
    return st.lists(st.integers(lo, hi), min_size=min_size, max_size=max_size)


def index_shape(shape: Sequence[int], ax: int) -> Any:
    """An index shape for ``shape``: any size (0..3) at ``ax``, at most ``shape``'s elsewhere."""
    sizes = [st.integers(0, 3) if i == ax else st.integers(1, s) for i, s in enumerate(shape)]
    return st.tuples(*sizes).map(list)


def draw_axis_and_index(data: Any, axis_label: str) -> Tuple[List[int], int, int, List[int]]:
    """Draws a shape, an axis of it (negative or not; labelled ``axis_label``) and an index
    shape along it: (shape, axis, the axis made non-negative, index shape)."""
    shape = data.draw(dims(), label="shape")
    r = len(shape)
    axis = data.draw(st.integers(-r, r - 1), label=axis_label)
    ax = axis % r
    return shape, axis, ax, data.draw(index_shape(shape, ax), label="index shape")


def cycle(ds: Sequence[str], k: int) -> str:
    """The ``k``-th of ``ds``, cyclically (an index dtype paired with the k-th data dtype, so that
    every index dtype is used whenever there are as many data dtypes)."""
    return ds[k % len(ds)]


@drawn("GatherV2", "GatherV2D")
def test_gather_v2(op, data):
    dts = GV2 if op == "GatherV2" else GV2D
    shape = data.draw(dims(), label="shape")
    r = len(shape)
    axis = data.draw(st.integers(0, r - 1), label="axis")
    bd = data.draw(st.integers(0, min(axis, 1)), label="batch_dims") if op == "GatherV2" else 0
    ishape = shape[:bd] + data.draw(dims(0, 2, 0, 3), label="index shape")
    neg = op == "GatherV2" and data.draw(st.booleans(), label="negative indices")
    axis_v = axis - r if data.draw(st.booleans(), label="negative axis") else axis
    rng = rng_of(data)
    a = shape[axis]
    idx = rng.integers(-a if neg else 0, a, size=ishape)
    if bd:
        want_of = lambda x: np.stack([np.take(x[i], idx[i], axis - 1) for i in range(shape[0])])  # noqa: E731
    else:
        want_of = lambda x: np.take(x, idx, axis)  # noqa: E731
    for k, d in enumerate(dts["x"]):
        for di in dts["indices"]:
            with case(op, f"{d}, indices {di}"):
                x = values(rng, d, shape)
                if op == "GatherV2":
                    got = run(lambda b, h, ih: es.GatherV2(h, ih, const(b, axis_v, cycle(dts["axis"], k)),
                                                           batch_dims=bd, negative_index_support=neg),
                              (x, d), ix(idx, di))
                else:
                    got = run(lambda b, h, ih: es.GatherV2D(h, ih, axis=axis_v), (x, d), ix(idx, di))
                same(got[0], want_of(x), d, f"{op} {shape} axis {axis_v} batch_dims {bd} {idx.tolist()}")


GE_ = {io: D("GatherElements", io) for io in ("x", "index")}


@drawn()
def test_gather_elements(data):
    shape, axis, ax, ishape = draw_axis_and_index(data, "dim")
    rng = rng_of(data)
    idx = rng.integers(0, shape[ax], size=ishape)
    for d in GE_["x"]:
        for di in GE_["index"]:
            with case("GatherElements", f"{d}, index {di}"):
                x = values(rng, d, shape)
                got = run(lambda b, h, ih: es.GatherElements(h, ih, dim=axis), (x, d), ix(idx, di))
                xs = x[tuple(slice(None) if i == ax else slice(0, s) for i, s in enumerate(ishape))]
                same(got[0], np.take_along_axis(xs, idx, ax), d, f"GatherElements {shape} {axis} {idx}")


GND = {io: D("GatherNd", io) for io in ("x", "indices")}


@drawn()
def test_gather_nd(data):
    shape = data.draw(dims(), label="shape")
    k = data.draw(st.integers(1, len(shape)), label="K")
    lead = data.draw(dims(0, 2, 0, 3), label="index rows")
    neg = data.draw(st.booleans(), label="negative_index_support")
    rng = rng_of(data)
    idx = np.stack([rng.integers(-s if neg else 0, s, size=lead) for s in shape[:k]], axis=-1) if lead or k \
        else np.zeros(lead + [k], np.int64)
    idx = idx.reshape(lead + [k])
    for di, d in [(di, d) for d in GND["x"] for di in GND["indices"]]:
        with case("GatherNd", f"{d}, indices {di}"):
            x = values(rng, d, shape)
            got = run(lambda b, h, ih: es.GatherNd(h, ih, negative_index_support=neg), (x, d), ix(idx, di))
            same(got[0], x[tuple(idx[..., j] for j in range(k))], d, f"GatherNd {shape} {idx.tolist()}")


# ---------------------------------------------------------------------------------------------
# Scatter
# ---------------------------------------------------------------------------------------------

SE = {io: D("ScatterElements", io) for io in ("data", "indices")}
mark("ScatterElements", "updates", SE["data"])


def _max_step(old: Any, new: Any) -> Any:
    """ScatterElements' max: NaN wins (above everything), else the larger; ties keep the old."""
    if old != old:
        return old
    return new if new != new or new > old else old


def _min_step(old: Any, new: Any) -> Any:
    if old != old:
        return old
    return new if new != new or new < old else old


@drawn()
def test_scatter_elements(data):
    shape, axis, ax, ishape = draw_axis_and_index(data, "axis")
    rng = rng_of(data)
    idx = rng.integers(-shape[ax], shape[ax], size=ishape)
    for d in SE["data"]:
        for k, red in enumerate(["none", "add", "mul", "max", "min"]):
            di = cycle(SE["indices"], k)
            with case("ScatterElements", f"{d}, indices {di}, {red}"):
                x, u = values(rng, d, shape), values(rng, d, ishape)
                if d in FLOATS:  # more NaN: max and min let it win
                    u[rng.random(u.shape) < 0.15] = np.nan
                got = run(lambda b, h, ih, uh: es.ScatterElements(h, ih, uh, axis=axis, reduction=red),
                          (x, d), ix(idx, di), (u, d))
                step = rounded_step(d)
                f = {"none": lambda o, n: n, "add": lambda o, n: step(o, n, np.add),
                     "mul": lambda o, n: step(o, n, np.multiply), "max": _max_step, "min": _min_step}[red]
                want = x.copy()
                for pos in np.ndindex(*ishape):
                    t = list(pos)
                    t[ax] = int(idx[pos]) % shape[ax]
                    want[tuple(t)] = f(want[tuple(t)], u[pos])
                exact(got[0], want, d, f"ScatterElements {shape} axis {axis} {red} {idx.tolist()}")


SND = {io: D("ScatterNd", io) for io in ("indices", "x", "shape")}
SNU = {io: D("ScatterNdUpdate", io) for io in ("var", "indices")}
mark("ScatterNdUpdate", "updates", SNU["var"])


@st.composite
def nd_case(draw: Any) -> Tuple[List[int], int, List[int], np.ndarray, np.random.Generator]:
    """A ScatterNd case: the data shape, K (index depth), the index rows' shape, the indices
    (in range) and the generator of the values."""
    shape = draw(dims(), label="shape")
    k, lead = draw(st.integers(1, len(shape)), label="K"), draw(dims(0, 2, 0, 3), label="index rows")
    rng = np.random.default_rng(draw(SEEDS, label="seed"))
    idx = np.stack([rng.integers(0, s, size=lead) for s in shape[:k]], axis=-1).reshape(lead + [k])
    return shape, k, lead, idx, rng


@HYP(15)
@given(c=nd_case())
def test_scatter_nd(c):
    shape, k, lead, idx, rng = c
    ushape = lead + shape[k:]
    for kk, d in enumerate(SND["x"]):
        for di in SND["indices"]:
            with case("ScatterNd", f"{d}, indices {di}"):
                u = values(rng, d, ushape)
                sd = cycle(SND["shape"], kk)
                got = run(lambda b, ih, uh: es.ScatterNd(ih, uh, const(b, shape, sd)),
                          ix(idx, di), (u, d))
                step = rounded_step(d)
                want = np.zeros(shape, NP[d])
                for row in np.ndindex(*lead):
                    t = tuple(int(v) for v in idx[row])
                    for p in np.ndindex(*shape[k:]):
                        want[t + p] = step(want[t + p], u[row + p], np.add)
                exact(got[0], want, d, f"ScatterNd {shape} {idx.tolist()}")


@HYP(15)
@given(c=nd_case())
def test_scatter_nd_update(c):
    shape, k, lead, idx, rng = c
    for d in SNU["var"]:
        for di in SNU["indices"]:
            with case("ScatterNdUpdate", f"{d}, indices {di}"):
                x, u = values(rng, d, shape), values(rng, d, lead + shape[k:])
                got = run(lambda b, h, ih, uh: es.ScatterNdUpdate(h, ih, uh), (x, d), ix(idx, di), (u, d))
                want = x.copy()
                for row in np.ndindex(*lead):  # in order: the last of duplicates wins
                    want[tuple(int(v) for v in idx[row])] = u[row]
                same(got[0], want, d, f"ScatterNdUpdate {shape} {idx.tolist()}")


# ---------------------------------------------------------------------------------------------
# Slicing, reversing, splitting, unpacking
# ---------------------------------------------------------------------------------------------

SL = {io: D("Slice", io) for io in ("x", "offsets", "size")}
SLD = D("SliceD", "x")


@drawn("Slice", "SliceD")
def test_slice(op, data):
    shape = data.draw(dims(1, 3, 0, 4), label="shape")
    offs, sizes, slices = [], [], []
    for s in shape:
        b = data.draw(st.integers(0, s), label="begin")
        n = data.draw(st.integers(0, s - b), label="size")
        offs.append(b - s if b < s and data.draw(st.booleans(), label="negative offset") else b)
        sizes.append(-1 if n == s - b and data.draw(st.booleans(), label="size -1") else n)
        slices.append(slice(b, b + n))
    rng = rng_of(data)
    for k, d in enumerate(SL["x"] if op == "Slice" else SLD):
        with case(op, d):
            x = values(rng, d, shape)
            if op == "Slice":
                od, sd = cycle(SL["offsets"], k), cycle(SL["size"], k // 2)
                got = run(lambda b, h: es.Slice(h, const(b, offs, od), const(b, sizes, sd)), (x, d))
            else:
                got = run(lambda b, h: es.SliceD(h, offsets=offs, size=sizes), (x, d))
            same(got[0], x[tuple(slices)], d, f"{op} {shape} offsets {offs} size {sizes}")


SS = {io: D("StridedSlice", io) for io in ("x", "begin", "end", "strides")}
SSD = D("StridedSliceD", "x")


@st.composite
def strided_spec(draw: Any) -> Tuple[List[int], Dict[str, Any], Tuple[Any, ...]]:
    """A shape, StridedSlice's begin/end/strides/masks, and the same as a numpy index."""
    shape = draw(dims(1, 3, 0, 5), label="shape")
    r = len(shape)
    real = draw(st.integers(0, r), label="indexed dims")  # the rest: full (or the ellipsis')
    has_ell, has_new = draw(st.booleans(), label="ellipsis"), draw(st.booleans(), label="new axis")
    n = max(1, real + has_ell + has_new)
    if n > real + has_ell + has_new:  # an empty spec: one full slice instead
        real += 1
    slots = draw(st.permutations(range(n)), label="order")
    ell = slots[0] if has_ell else -1
    new = slots[int(has_ell)] if has_new else -1
    begin, end, strides, idx = [], [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    dim = 0
    for i in range(n):
        if i == ell:
            masks["ellipsis_mask"] |= 1 << i
            begin.append(0), end.append(0), strides.append(1), idx.append(Ellipsis)
            dim += r - real
            continue
        if i == new:
            masks["new_axis_mask"] |= 1 << i
            begin.append(0), end.append(0), strides.append(1), idx.append(np.newaxis)
            continue
        s = shape[dim]
        dim += 1
        if s > 0 and draw(st.integers(0, 3), label="shrink") == 0:
            b = draw(st.integers(-s, s - 1), label="index")
            masks["shrink_axis_mask"] |= 1 << i
            begin.append(b), end.append(b + 1), strides.append(1), idx.append(b)
            continue
        b, e = (draw(st.integers(-s - 2, s + 2), label=nm) for nm in ("begin", "end"))
        stride = draw(st.sampled_from([1, 2, 3, -1, -2]), label="stride")
        bm, em = draw(st.booleans(), label="begin masked"), draw(st.booleans(), label="end masked")
        masks["begin_mask"] |= bm << i
        masks["end_mask"] |= em << i
        begin.append(b), end.append(e), strides.append(stride)
        idx.append(slice(None if bm else b, None if em else e, stride))
    return shape, dict(begin=begin, end=end, strides=strides, **masks), tuple(idx)


@pytest.mark.parametrize("op", ["StridedSlice", "StridedSliceD"])
@HYP(15)
@given(spec=strided_spec(), data=st.data())
def test_strided_slice(op, spec, data):
    shape, attrs, idx = spec
    rng = rng_of(data)
    masks = {k: v for k, v in attrs.items() if k.endswith("_mask")}
    for k, d in enumerate(SS["x"] if op == "StridedSlice" else SSD):
        with case(op, d):
            x = values(rng, d, shape)
            if op == "StridedSlice":
                spec_dts = [cycle(SS[nm], k + j) for j, nm in enumerate(("begin", "end", "strides"))]
                got = run(lambda b, h: es.StridedSlice(
                    h, *(const(b, attrs[nm], sd) for nm, sd in zip(("begin", "end", "strides"), spec_dts)),
                    **masks), (x, d))
            else:
                got = run(lambda b, h: es.StridedSliceD(h, **attrs), (x, d))
            same(got[0], x[idx], d, f"{op} {shape} {attrs}")


REV = {io: D("ReverseV2", io) for io in ("x", "axis")}


@drawn()
def test_reverse_v2(data):
    shape = data.draw(dims(1, 4, 0, 3), label="shape")
    r = len(shape)
    axes = data.draw(st.lists(st.integers(0, r - 1), unique=True, max_size=r), label="axes")
    spec = [a - r if data.draw(st.booleans(), label="negative") else a for a in axes]
    rng = rng_of(data)
    for k, d in enumerate(REV["x"]):
        with case("ReverseV2", d):
            x = values(rng, d, shape)
            ad = cycle(REV["axis"], k)
            axes_v = np.array(spec, NP[ad]).reshape(len(spec))
            got = run(lambda b, h: es.ReverseV2(h, const(b, axes_v, ad)), (x, d))
            same(got[0], np.flip(x, tuple(axes)), d, f"ReverseV2 {shape} {spec}")


SPLIT = {"Split": D("Split", "x"), "SplitD": D("SplitD", "x"), "SplitV": D("SplitV", "x")}
D("Split", "split_dim")
SPLITV = {io: D("SplitV", io) for io in ("size_splits", "split_dim")}


@drawn(*SPLIT)
def test_split(op, data):
    shape = data.draw(dims(1, 3, 1, 4), label="shape")
    r = len(shape)
    ax, axis = draw_axis(data, r)
    if op == "SplitV":
        num = data.draw(st.integers(1, 3), label="num_split")
        cuts = sorted(data.draw(st.lists(st.integers(0, shape[ax]), min_size=num - 1, max_size=num - 1),
                                label="cuts"))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [shape[ax]])]
        spec = list(sizes)
        if data.draw(st.booleans(), label="one size -1"):
            spec[data.draw(st.integers(0, num - 1), label="which")] = -1
    else:
        num = data.draw(st.sampled_from([n for n in range(1, 5) if shape[ax] % n == 0]), label="num_split")
        sizes = [shape[ax] // num] * num
    bounds = np.cumsum(sizes)[:-1]
    rng = rng_of(data)
    for k, d in enumerate(SPLIT[op]):
        with case(op, d):
            x = values(rng, d, shape)
            if op == "Split":
                got = run(lambda b, h: es.Split(const(b, axis, "int32"), h, num, num_split=num), (x, d))
            elif op == "SplitD":
                got = run(lambda b, h: es.SplitD(h, num, split_dim=axis, num_split=num), (x, d))
            else:
                sd, ad = cycle(SPLITV["size_splits"], k), cycle(SPLITV["split_dim"], k // 2)
                got = run(lambda b, h: es.SplitV(h, const(b, np.array(spec).reshape(num), sd),
                                                 const(b, axis, ad), num, num_split=num), (x, d))
            want = np.split(x, bounds, axis=ax)
            assert len(got) == num
            for g, w in zip(got, want):
                same(g, w, d, f"{op} {shape} axis {axis} into {sizes}")


UNPACK = D("Unpack", "x")


@drawn()
def test_unpack(data):
    shape = data.draw(dims(1, 3, 1, 4), label="shape")
    r = len(shape)
    ax, axis = draw_axis(data, r)
    rng = rng_of(data)
    for d in UNPACK:
        with case("Unpack", d):
            x = values(rng, d, shape)
            got = run(lambda b, h: es.Unpack(h, shape[ax], num=shape[ax], axis=axis), (x, d))
            assert len(got) == shape[ax]
            for i, g in enumerate(got):
                same(g, np.take(x, i, axis=ax), d, f"Unpack {shape} axis {axis} part {i}")


# ---------------------------------------------------------------------------------------------
# Pad
# ---------------------------------------------------------------------------------------------

PAD = {io: D("Pad", io) for io in ("x", "paddings")}
PADD = D("PadD", "x")
PADV3 = {io: D("PadV3", io) for io in ("x", "paddings", "constant_values")}
NP_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge", "symmetric": "symmetric",
           "circular": "wrap"}


@drawn("Pad", "PadD", "PadV3")
def test_pad(op, data):
    mode = data.draw(st.sampled_from(list(NP_MODE)), label="mode") if op == "PadV3" else "constant"
    shape = data.draw(dims(1, 3, 0 if mode == "constant" else 1, 3), label="shape")
    r = len(shape)
    pairs = [tuple(data.draw(st.integers(0, (s - 1 if mode == "reflect" else s) if mode != "constant" else 2),
                             label="pad") for _ in range(2)) for s in shape]
    contiguous = op != "PadV3" or data.draw(st.booleans(), label="paddings_contiguous")
    if contiguous:  # [b0, e0, b1, e1, ...], else [b0, b1, ..., e0, e1, ...]
        flat = [p for pr in pairs for p in pr]
    else:
        flat = [pr[0] for pr in pairs] + [pr[1] for pr in pairs]
    rng = rng_of(data)
    xs = {"Pad": PAD["x"], "PadD": PADD, "PadV3": PADV3["x"]}[op]
    for k, d in enumerate(xs):
        with case(op, f"{d} {mode}"):
            x = values(rng, d, shape)
            cv = None
            if op == "Pad":
                pd = cycle(PAD["paddings"], k)
                got = run(lambda b, h: es.Pad(h, const(b, np.array(pairs).reshape(r, 2), pd)), (x, d))
            elif op == "PadD":
                got = run(lambda b, h: es.PadD(h, paddings=[list(p) for p in pairs]), (x, d))
            else:
                pd = cycle(PADV3["paddings"], k)
                cd = d if d in PADV3["constant_values"] else "uint8"  # bool x: a uint8 0/1, cast
                cv = values(rng, cd, ()) if cd != "uint8" or d != "bool" else np.uint8(rng.integers(2))
                # Always given but for bool x (so that every constant_values dtype is fed).
                with_cv = d != "bool" or data.draw(st.booleans(), label="constant_values")
                ins = [(x, d)] + ([(np.asarray(cv, NP[cd]), cd)] if with_cv else [])
                got = run(lambda b, h, *c: es.PadV3(h, const(b, np.array(flat).reshape(2 * r), pd), *c,
                                                    mode=mode, paddings_contiguous=contiguous), *ins)
                cv = cv if with_cv else None
            kw = {}
            if mode == "constant":
                kw["constant_values"] = np.asarray(cv).astype(NP[d]) if cv is not None else NP[d](0)
            want = np.pad(x, pairs, mode=NP_MODE[mode], **kw)
            same(got[0], want, d, f"{op} {shape} {pairs} {mode} {cv!r}")


# ---------------------------------------------------------------------------------------------
# OneHot, Range, Cumsum
# ---------------------------------------------------------------------------------------------

OH = {io: D("OneHot", io) for io in ("x", "depth", "on_value")}
mark("OneHot", "off_value", OH["on_value"])
OHD = {io: D("OneHotD", io) for io in ("x", "on_value")}
mark("OneHotD", "off_value", OHD["on_value"])


@drawn("OneHot", "OneHotD")
def test_one_hot(op, data):
    shape = data.draw(dims(0, 3, 0, 3), label="shape")
    r = len(shape)
    depth = data.draw(st.integers(0, 4), label="depth")
    axis = data.draw(st.integers(-1, r), label="axis")
    pos = r if axis == -1 else axis
    rng = rng_of(data)
    dts = OH if op == "OneHot" else OHD
    for k, d in enumerate(dts["on_value"]):
        xd = cycle(dts["x"], k)
        with case(op, f"{d}, x {xd}"):
            lo = 0 if xd == "uint8" else -1
            x = rng.integers(lo, depth + 1, size=shape).astype(NP[xd])
            on, off = values(rng, d, ()), values(rng, d, ())
            if op == "OneHot":
                dd = cycle(OH["depth"], k // 3)
                got = run(lambda b, h, o, f: es.OneHot(h, const(b, depth, dd), o, f, axis=axis),
                          (x, xd), (on, d), (off, d))
            else:
                got = run(lambda b, h, o, f: es.OneHotD(h, o, f, depth=depth, axis=axis),
                          (x, xd), (on, d), (off, d))
            hot = np.moveaxis(x.astype(np.int64)[..., None] == np.arange(depth), -1, pos)
            same(got[0], np.where(hot, on, off).astype(NP[d]), d, f"{op} {x.tolist()} {depth} axis {axis}")


RANGE = D("Range", "start")
mark("Range", "limit", RANGE)
mark("Range", "delta", RANGE)


@drawn()
def test_range(data):
    closed = data.draw(st.booleans(), label="is_closed")
    n = data.draw(st.integers(0, 6), label="steps")
    rng = rng_of(data)
    for d in RANGE:
        with case("Range", d):
            if d in INTS:
                s, dl = int(rng.integers(-50, 50)), int(rng.choice([-1, 1])) * int(rng.integers(1, 6))
                l_ = s + n * dl + int(rng.integers(0, abs(dl))) * (1 if dl > 0 else -1)
                start, limit, delta = (np.asarray(v, NP[d]) for v in (s, l_, dl))
                q = (l_ - s) // dl  # floor((l - s) / dl)
                inexact = (l_ - s) % dl != 0
                cnt = q + 1 if closed or inexact else q
                want = np.array([s + i * dl for i in range(max(cnt, 0))], NP[d])
            else:
                start = to_dtype(rng.uniform(-10, 10), d)
                delta = to_dtype(rng.choice([-1, 1]) * rng.uniform(0.1, 3), d)
                frac = rng.uniform(0, 1) if rng.random() < 0.5 else 0.0  # 0: the limit on the grid
                limit = to_dtype(np.float64(start) + (n + frac) * np.float64(delta), d)
                s, l_, dl = float(start), float(limit), float(delta)
                q = (l_ - s) / dl
                cnt = int(np.floor(q) + 1 if closed else np.ceil(q))
                assume(cnt >= 0)
                want = to_dtype(s + np.arange(cnt, dtype=np.float64) * dl, d)
            got = run(lambda b, *h: es.Range(*h, is_closed=closed), *((np.asarray(v, NP[d]), d)
                                                                       for v in (start, limit, delta)))
            same(got[0], want, d, f"Range {start!r} {limit!r} {delta!r} closed {closed}")


CS = {io: D("Cumsum", io) for io in ("x", "axis")}
CSD = D("CumsumD", "x")


@drawn("Cumsum", "CumsumD")
def test_cumsum(op, data):
    shape = data.draw(dims(1, 3, 0, 4), label="shape")
    r = len(shape)
    ax, axis = draw_axis(data, r)
    exclusive, reverse = (data.draw(st.booleans(), label=nm) for nm in ("exclusive", "reverse"))
    rng = rng_of(data)
    for k, d in enumerate(CS["x"] if op == "Cumsum" else CSD):
        with case(op, d):
            x = values(rng, d, shape)
            if op == "Cumsum":
                got = run(lambda b, h: es.Cumsum(h, const(b, axis, cycle(CS["axis"], k)), exclusive=exclusive,
                                                 reverse=reverse), (x, d))
            else:
                got = run(lambda b, h: es.CumsumD(h, axis=axis, exclusive=exclusive, reverse=reverse), (x, d))
            step = rounded_step(d)
            xm = np.moveaxis(x, ax, 0)
            order = range(xm.shape[0] - 1, -1, -1) if reverse else range(xm.shape[0])
            acc = np.zeros(xm.shape[1:], NP[d])
            want = np.zeros_like(xm)
            for i in order:
                if exclusive:
                    want[i] = acc
                acc = np.vectorize(lambda a, v: step(a, v, np.add), otypes=[NP[d]])(acc, xm[i]) \
                    if acc.size else acc
                if not exclusive:
                    want[i] = acc
            exact(got[0], np.moveaxis(want, 0, ax), d, f"{op} {shape} {axis} excl {exclusive} rev {reverse}")


def test_cumsum_rounds_every_step():
    # [1, u/2, u/2] (u: the ulp of 1): each step 1 + u/2 is a tie that rounds (to even) to 1, so
    # the sums stay 1; summing in a wider type and rounding once would give 1 + u at the end.
    for d in CS["x"]:
        if d not in FLOATS:
            continue
        with case("Cumsum", d):
            u = 2.0 ** -{"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}[d]
            x = to_dtype(np.array([1.0, u / 2, u / 2]), d)
            got = run(lambda b, h: es.Cumsum(h, const(b, 0)), (x, d))
            same(got[0], to_dtype(np.ones(3), d), d, "Cumsum step by step")


# ---------------------------------------------------------------------------------------------
# ArgMax/ArgMin, TopKV2
# ---------------------------------------------------------------------------------------------

ARG = {op: {io: D(op, io) for io in ("x", "dimension", "y")} for op in ("ArgMaxV2", "ArgMin")}
ARG["ArgMaxD"] = {"x": D("ArgMaxD", "x"), "y": D("ArgMaxD", "y")}


@drawn(*ARG)
def test_arg_max_min(op, data):
    shape = data.draw(dims(1, 3, 1, 4), label="shape")
    r = len(shape)
    ax, axis = draw_axis(data, r)
    rng = rng_of(data)
    dts = ARG[op]
    for k, d in enumerate(dts["x"]):
        yd = cycle(dts["y"], k)
        with case(op, f"{d} -> {yd}"):
            x = values(rng, d, shape)
            if rng.random() < 0.5 and d not in ("bool",):  # ties
                x = np.take(x, rng.integers(0, min(2, shape[ax]), size=shape[ax]), axis=ax).copy()
            if op == "ArgMaxD":
                got = run(lambda b, h: es.ArgMaxD(h, dimension=axis, dtype=GE_DT[yd]), (x, d))
            else:
                dd = cycle(dts["dimension"], k // 2)
                got = run(lambda b, h: getattr(es, op)(h, const(b, axis, dd), dtype=GE_DT[yd]), (x, d))
            f = np.argmin if op == "ArgMin" else np.argmax  # the first extreme; NaN wins
            same(got[0], f(x, axis=ax).astype(NP[yd]), yd, f"{op} {shape} axis {axis}")


TOPK = {io: D("TopKV2", io) for io in ("x", "k", "indices")}
INDICES_DTYPE = {"int32": int(DataType.DT_INT32.value), "int64": int(DataType.DT_INT64.value)}


def topk_ref(x: np.ndarray, k: int, ax: int, largest: bool) -> Tuple[np.ndarray, np.ndarray]:
    """Sorted, NaN above everything, ties by lower index (a stable sort on exact keys)."""
    xm = np.moveaxis(x, ax, -1)
    lines = xm.reshape(-1, xm.shape[-1])
    idx = np.zeros((lines.shape[0], k), np.int64)
    for i, line in enumerate(lines):
        if x.dtype.kind == "f":
            key = [(1, 0.0) if v != v else (0, float(v)) for v in line]
        else:
            key = [(0, int(v)) for v in line]
        order = sorted(range(len(line)), key=lambda j: key[j], reverse=False)
        if largest:  # descending, ties still by lower index
            order = sorted(range(len(line)), key=lambda j: (-key[j][0], -key[j][1]))
        idx[i] = order[:k]
    idx = idx.reshape(xm.shape[:-1] + (k,))
    return np.moveaxis(np.take_along_axis(xm, idx, -1), -1, ax), np.moveaxis(idx, -1, ax)


@drawn()
def test_top_k_v2(data):
    shape = data.draw(dims(1, 3, 1, 5), label="shape")
    r = len(shape)
    ax = data.draw(st.integers(0, r - 1), label="dim")
    dim = ax - r if data.draw(st.booleans(), label="negative dim") else ax
    kk = data.draw(st.integers(0, shape[ax]), label="k")
    largest = data.draw(st.booleans(), label="largest")
    rng = rng_of(data)
    for i, d in enumerate(TOPK["x"]):
        idt = cycle(TOPK["indices"], i)
        with case("TopKV2", f"{d}, indices {idt}"):
            x = values(rng, d, shape)
            if rng.random() < 0.5:  # ties
                x = np.take(x, rng.integers(0, min(2, shape[ax]), size=shape[ax]), axis=ax).copy()
            kd = cycle(TOPK["k"], i // 2)
            got = run(lambda b, h: list(es.TopKV2(h, const(b, kk, kd), dim=dim, largest=largest,
                                                  indices_dtype=INDICES_DTYPE[idt])), (x, d))
            v, ix = topk_ref(x, kk, ax, largest)
            what = f"TopKV2 {shape} k {kk} dim {dim} largest {largest}"
            same(got[1], ix.astype(NP[idt]), idt, what)
            same(got[0], v, d, what)


# ---------------------------------------------------------------------------------------------
# Triangles, Where, NonZero
# ---------------------------------------------------------------------------------------------

TRI = {op: D(op, "x") for op in ("Tril", "Triu", "Trilu")}
TRILU_K = D("Trilu", "k")


@drawn(*TRI)
def test_triangles(op, data):
    shape = data.draw(dims(2, 4, 0, 4), label="shape")
    diag = data.draw(st.integers(-5, 5), label="diagonal")
    upper = op == "Triu" or (op == "Trilu" and data.draw(st.booleans(), label="upper"))
    k_drawn = data.draw(st.booleans(), label="k given")
    rng = rng_of(data)
    for i, d in enumerate(TRI[op]):
        with case(op, d):
            x = values(rng, d, shape)
            if op == "Trilu":
                kd, with_k = cycle(TRILU_K, i // 2), i % 2 == 0 or k_drawn  # every k dtype given
                got = run(lambda b, h: es.Trilu(h, *([const(b, diag, kd)] if with_k else []),
                                                upper=int(upper)), (x, d))
                k = diag if with_k else 0
            else:
                got = run(lambda b, h: getattr(es, op)(h, diagonal=diag), (x, d))
                k = diag
            same(got[0], (np.triu if upper else np.tril)(x, k), d, f"{op} {shape} k {k} upper {upper}")


WHERE = D("Where", "x")
D("Where", "y")
NZ = {io: D("NonZero", io) for io in ("x", "y")}


@drawn("Where", "NonZero")
def test_where_and_nonzero(op, data):
    shape = data.draw(dims(0, 3, 0, 4), label="shape")
    transpose = op == "NonZero" and data.draw(st.booleans(), label="transpose")
    rng = rng_of(data)
    for i, d in enumerate(WHERE if op == "Where" else NZ["x"]):
        yd = "int64" if op == "Where" else cycle(NZ["y"], i)
        with case(op, f"{d} -> {yd}"):
            x = np.array(values(rng, d, shape))
            if d != "bool":
                x[rng.random(shape) < 0.4] = 0  # zeros (and -0.0 below) are not selected
                if d in FLOATS:
                    x[rng.random(shape) < 0.1] = -0.0
            if op == "Where":
                got = run(lambda b, h: es.Where(h), (x, d))
            else:
                got = run(lambda b, h: es.NonZero(h, transpose=transpose, dtype=GE_DT[yd]), (x, d))
            want = np.argwhere(x)
            same(got[0], (want.T if transpose else want).astype(NP[yd]), yd, f"{op} {x!r}")


# ---------------------------------------------------------------------------------------------
# Control flow: If, Case, While
# ---------------------------------------------------------------------------------------------

IF_COND = D("If", "cond")
IF_IN = D("If", "input")
CASE_IDX = D("Case", "branch_index")
CASE_IN = D("Case", "input")
WHILE_IN = D("While", "input")
# The outputs are the branch's (body's) outputs, here of the inputs' dtypes.
for _op, _ds in (("If", IF_IN), ("Case", CASE_IN), ("While", WHILE_IN)):
    mark(_op, "output", _ds)


def subgraph(name: str, dts: Sequence[str], fn: Callable[..., Any]) -> Any:
    """A subgraph whose inputs have dtypes ``dts`` (shape unknown) and outputs ``fn(b, *inputs)``."""
    b = GraphBuilder(name)
    xs = [b.create_input(i, data_type=GE_DT[d], shape=[-2]) for i, d in enumerate(dts)]
    out = fn(b, *xs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def gather0(b: Any, h: Any, perm: Sequence[int]) -> Any:
    """h[perm] (GatherV2 along axis 0: every dtype)."""
    return es.GatherV2(h, const(b, np.array(perm, np.int64).reshape(len(perm))), const(b, 0))


def truthy(rng: np.random.Generator, d: str) -> List[np.ndarray]:
    """Scalar conditions of dtype ``d``: zero (and -0.0), non-zero (NaN and infinities too)."""
    if d == "bool":
        return [np.array(False), np.array(True)]
    if d in INTS:
        return [np.zeros((), NP[d]), values(rng, d, (), ilo=1), np.array(np.iinfo(NP[d]).max, NP[d])]
    return [to_dtype(np.array(v), d) for v in (0.0, -0.0, float(rng.uniform(-3, 3)) or 1.0, np.nan, -np.inf)]


@HYP(8)
@given(data=st.data())
def test_if(data):
    n = data.draw(st.integers(1, 4), label="length")
    rng = rng_of(data)
    rev = list(range(n))[::-1]
    # (cond dtype, first input dtype): every cond dtype and every input dtype, both branches.
    pairs = [(c, IF_IN[(i + 3) % len(IF_IN)]) for i, c in enumerate(IF_COND)] + \
        [(IF_COND[(i + 5) % len(IF_COND)], d) for i, d in enumerate(IF_IN)]
    for cd, d in pairs:
        d2 = cycle(IF_IN, IF_IN.index(d) + 1)
        with case("If", f"cond {cd}, inputs {d}, {d2}"):
            x, y = values(rng, d, (n,)), values(rng, d2, (n, 2))
            then_g = lambda: subgraph("then", [d, d2], lambda b, p, q: [gather0(b, p, rev), q])  # noqa: E731
            else_g = lambda: subgraph("else", [d, d2], lambda b, p, q: [p, gather0(b, q, rev)])  # noqa: E731
            for c in truthy(rng, cd):
                got = run(lambda b, ch, p, q: list(es.If(ch, [p, q], output_num=2, then_branch=then_g(),
                                                          else_branch=else_g())), (c, cd), (x, d), (y, d2))
                t = bool(np.asarray(c, np.float64)) if cd not in INTS + ("bool",) else bool(c)
                what = f"If cond {c!r}"
                same(got[0], x[rev] if t else x, d, what)
                same(got[1], y if t else y[rev], d2, what)


@HYP(8)
@given(data=st.data())
def test_case(data):
    n = data.draw(st.integers(1, 4), label="length")
    rng = rng_of(data)
    perms = [list(range(n)), list(range(n))[::-1], [(i + 1) % n for i in range(n)]]
    for cd in CASE_IDX:
        for d in CASE_IN:
            with case("Case", f"index {cd}, input {d}"):
                x = values(rng, d, (n,))
                branches = lambda: [  # noqa: E731
                    subgraph(f"b{k}", [d], lambda b, p, k=k: gather0(b, p, perms[k])) for k in range(3)]
                for idx in (0, 1, 2, 7, -1):  # out of range: the last branch
                    got = run(lambda b, ih, p: list(es.Case(ih, [p], output_num=1, branches=branches())),
                              (np.array(idx, NP[cd]), cd), (x, d))
                    same(got[0], x[perms[idx if 0 <= idx < 3 else 2]], d, f"Case {idx}")


@HYP(8)
@given(data=st.data())
def test_while(data):
    n = data.draw(st.integers(1, 4), label="length")
    steps = data.draw(st.integers(0, 5), label="iterations")
    rng = rng_of(data)
    roll = [(i + 1) % n for i in range(n)]
    for d in WHILE_IN:
        with case("While", d):
            x = values(rng, d, (n, 2))
            cond = lambda: subgraph("cond", ["int32", d],  # noqa: E731
                                    lambda b, i, p: es.Less(i, const(b, steps, "int32")))
            body = lambda: subgraph("body", ["int32", d],  # noqa: E731
                                    lambda b, i, p: [es.Add(i, const(b, 1, "int32")), gather0(b, p, roll)])
            got = run(lambda b, i, p: list(es.While([i, p], output_num=2, cond=cond(), body=body())),
                      (np.array(0, np.int32), "int32"), (x, d))
            same(got[0], np.array(steps, np.int32), "int32", "While counter")
            same(got[1], np.roll(x, -steps, axis=0), d, f"While {steps} rolls")
