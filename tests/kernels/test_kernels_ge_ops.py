"""Kernels of the operators GE programs use beside the common library
(crates/ge-runtime/src/kernels/ ge_ops.rs once; now transformer.rs, collective.rs, norm.rs,
elementwise.rs and shape.rs): RmsNorm, AddRmsNorm, Threshold, Concat and the HCCL
collectives at world size 1, each compared with numpy in every dtype of its prototype, in graph
and eager mode (kernel_harness.py's runner checks the two agree), plus their errors.

Coverage: test_every_op_and_dtype_of_ge_ops_is_tested fails for an op registered in ge_ops.rs
without a test, or an input dtype of its prototype that no test runs.

Tolerances: RmsNorm and AddRmsNorm are computed in f64 and rounded once (as the other norms of
tests/kernels/test_kernels_dtypes.py), so they are checked with `near` and an f64 summation slack.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Dict, List, Sequence, Set

import ge
import ge.ops
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType
from ge.session import Session
from hypothesis import given
from hypothesis import strategies as st

from kernel_harness import (
    F64_EPS,
    HYP,
    KERNEL_DIR,
    _registered_in,
    case,
    const,
    f32,
    finite,
    near,
    proto_dtypes,
    rng_of,
    run,
    same,
    small_ints,
)

COVER: Dict[str, Dict[str, Set[str]]] = defaultdict(lambda: defaultdict(set))


def D(op: str, io: str) -> List[str]:
    """The dtypes of input ``io`` of ``op``'s prototype that the CPU backend has; recorded."""
    ds = proto_dtypes(op, io)
    COVER[op][io].update(ds)
    return ds


def test_every_op_and_dtype_of_ge_ops_is_tested():
    # ge_ops.rs's kernels, now in their families' files.
    ops = _registered_in(KERNEL_DIR / "transformer.rs")
    ops |= _registered_in(KERNEL_DIR / "collective.rs")
    ops |= {"RmsNorm", "AddRmsNorm", "Threshold", "Concat"} & (
        _registered_in(KERNEL_DIR / "norm.rs")
        | _registered_in(KERNEL_DIR / "elementwise.rs")
        | _registered_in(KERNEL_DIR / "shape.rs")
    )
    assert ops
    problems = []
    for op in sorted(ops):
        if op not in COVER:
            problems.append(f"{op} has no test")
            continue
        for i in ge.ops.get_op(op)["inputs"]:
            want = set(proto_dtypes(op, i["name"]))
            if want - COVER[op].get(i["name"], set()):
                problems.append(f"{op}.{i['name']}: untested {sorted(want - COVER[op][i['name']])}")
    assert not problems, "\n".join(problems)


def attention_shape(layout: str, b: int, d: int, seq: int, heads: int) -> List[int]:
    """The shape of a query, key or value of ``seq`` tokens and ``heads`` heads of size ``d``."""
    return {"BSH": [b, seq, heads * d], "BNSD": [b, heads, seq, d], "BSND": [b, seq, heads, d]}[layout]


def tensor_values(rng: np.random.Generator, d: str, shape: Sequence[int]) -> np.ndarray:
    if d == "bool":
        return rng.random(shape) < 0.5
    if d in ("float64", "float32", "float16", "bfloat16"):
        return finite(rng, d, shape)
    return small_ints(rng, d, shape, -100, 100)


# ---------------------------------------------------------------------------------------------
# RmsNorm, AddRmsNorm
# ---------------------------------------------------------------------------------------------

RMS_T = D("RmsNorm", "x")
D("RmsNorm", "gamma")
ADD_T = D("AddRmsNorm", "x1")
D("AddRmsNorm", "x2")
D("AddRmsNorm", "gamma")


def rms_ref(x64: np.ndarray, g64: np.ndarray, eps: float):
    axes = tuple(range(x64.ndim - g64.ndim, x64.ndim))
    ms = (x64 * x64).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(ms + eps)
    y = g64 * (x64 * rstd)
    return y, rstd, np.abs(y) + np.abs(x64 * x64).mean(axis=axes, keepdims=True)


@HYP(12)
@given(data=st.data())
def test_rms_norm(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4), label="shape")
    g = data.draw(st.integers(1, len(shape)), label="gamma dims")
    eps = f32(data.draw(st.sampled_from([1e-6, 1e-2]), label="epsilon"))
    rng = rng_of(data)
    for d in RMS_T:
        with case("RmsNorm", d):
            x = finite(rng, d, shape)
            gamma = finite(rng, d, shape[len(shape) - g:])
            got = run(lambda b, xh, gh: list(es.RmsNorm(xh, gh, epsilon=eps)), (x, d), (gamma, d))
            y, rstd, mag = rms_ref(x.astype(np.float64), gamma.astype(np.float64), eps)
            near(got[0], y, d, extra=F64_EPS * mag * 8, what=f"RmsNorm {shape} y")
            near(got[1], rstd, "float32", extra=F64_EPS * rstd * 8, what=f"RmsNorm {shape} rstd")


@HYP(12)
@given(data=st.data())
def test_add_rms_norm(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4), label="shape")
    g = data.draw(st.integers(1, len(shape)), label="gamma dims")
    rng = rng_of(data)
    for d in ADD_T:
        with case("AddRmsNorm", d):
            x1, x2 = finite(rng, d, shape), finite(rng, d, shape)
            gamma = finite(rng, d, shape[len(shape) - g:])
            got = run(lambda b, *h: list(es.AddRmsNorm(*h)), (x1, d), (x2, d), (gamma, d))
            s = x1.astype(np.float64) + x2.astype(np.float64)
            y, rstd, mag = rms_ref(s, gamma.astype(np.float64), f32(1e-6))
            near(got[0], y, d, extra=F64_EPS * mag * 8, what=f"AddRmsNorm {shape} y")
            near(got[1], rstd, "float32", extra=F64_EPS * rstd * 8, what="rstd")
            near(got[2], s, d, what=f"AddRmsNorm {shape} x")


def test_rms_norm_outputs_and_named_fields():
    b = GraphBuilder("rms")
    x = b.create_input(0, data_type=DataType.DT_FLOAT16, shape=[2, 3, 4])
    g = b.create_input(1, data_type=DataType.DT_FLOAT16, shape=[4])
    out = es.AddRmsNorm(x, x, g, epsilon=1e-5)
    descs = [o.get_producer().get_output_desc(i) for i, o in enumerate(out)]
    assert [d.get_data_type() for d in descs] == [DataType.DT_FLOAT16, DataType.DT_FLOAT, DataType.DT_FLOAT16]
    assert [d.get_shape() for d in descs] == [[2, 3, 4], [2, 3, 1], [2, 3, 4]]
    assert out.y is out[0] or out.y.output_index == 0


def test_rms_norm_gamma_must_fit_x():
    b = GraphBuilder("rms")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 3])
    g = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[4])
    with pytest.raises(ge.GeError, match=r"RmsNorm .*input 'gamma' \[4\] must match the trailing dims of x \[2, 3\]"):
        es.RmsNorm(x, g)


def test_add_rms_norm_inputs_must_have_one_shape():
    b = GraphBuilder("rms")
    x1 = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 3])
    x2 = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[3])
    g = b.create_input(2, data_type=DataType.DT_FLOAT, shape=[3])
    with pytest.raises(ge.GeError, match=r"inputs 'x1' \[2, 3\] and 'x2' \[3\] must have the same shape"):
        es.AddRmsNorm(x1, x2, g)


# ---------------------------------------------------------------------------------------------
# Threshold, Concat
# ---------------------------------------------------------------------------------------------

TH_T = D("Threshold", "x")


@HYP(10)
@given(data=st.data())
def test_threshold(data):
    shape = data.draw(st.lists(st.integers(0, 4), max_size=3), label="shape")
    t = f32(data.draw(st.sampled_from([0.0, 0.5, -1.25, 3.0]), label="threshold"))
    rng = rng_of(data)
    for d in TH_T:
        with case("Threshold", d):
            x = finite(rng, d, shape)
            if x.size:
                x.flat[0] = t  # equal to the threshold: not above it
            got = run(lambda b, h: es.Threshold(h, threshold=t), (x, d))
            same(got[0], (x.astype(np.float64) > t).astype(np.float64), d, what=f"Threshold {t}")


CONCAT_T = D("Concat", "x")
CONCAT_DIM = D("Concat", "concat_dim")


@HYP(8)
@given(data=st.data())
def test_concat(data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3), label="shape")
    n = data.draw(st.integers(1, 3), label="inputs")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    rng = rng_of(data)
    for i, d in enumerate(CONCAT_T):
        ad = CONCAT_DIM[i % len(CONCAT_DIM)]
        with case("Concat", f"{d}, concat_dim {ad}"):
            xs = []
            for _ in range(n):
                s = list(shape)
                s[axis] = int(rng.integers(1, 4))
                xs.append(tensor_values(rng, d, s))
            got = run(lambda b, *h: es.Concat(const(b, axis, ad), list(h)), *[(x, d) for x in xs])
            same(got[0], np.concatenate(xs, axis=axis), d, what=f"Concat axis {axis}")


def test_concat_n_must_match_the_list():
    b = GraphBuilder("c")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    with pytest.raises(ValueError):
        es.Concat(const(b, 0, "int32"), [x, x], N=3)


# ---------------------------------------------------------------------------------------------
# HCCL collectives, world size 1
# ---------------------------------------------------------------------------------------------

AR_T = D("HcomAllReduce", "x")
AG_T = D("HcomAllGather", "x")
RS_T = D("HcomReduceScatter", "x")
BC_T = D("HcomBroadcast", "x")
WORLD = "hccl_world_group"


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_all_reduce_of_one_rank_is_the_identity(reduction):
    rng = np.random.default_rng(1)
    for d in AR_T:
        with case("HcomAllReduce", d):
            x = tensor_values(rng, d, [3, 2])
            got = run(lambda b, h: es.HcomAllReduce(h, reduction=reduction, group=WORLD), (x, d))
            same(got[0], x, d)


def test_all_gather_and_reduce_scatter_of_one_rank_are_the_identity():
    rng = np.random.default_rng(2)
    for d in AG_T:
        with case("HcomAllGather", d):
            x = tensor_values(rng, d, [4, 3])
            same(run(lambda b, h: es.HcomAllGather(h, rank_size=1, group=WORLD), (x, d))[0], x, d)
    for d in RS_T:
        with case("HcomReduceScatter", d):
            x = tensor_values(rng, d, [4, 3])
            got = run(lambda b, h: es.HcomReduceScatter(h, reduction="sum", group=WORLD, rank_size=1), (x, d))
            same(got[0], x, d)


def test_broadcast_from_rank_0_is_the_identity():
    rng = np.random.default_rng(3)
    for i, d in enumerate(BC_T):
        other = BC_T[(i + 1) % len(BC_T)]
        with case("HcomBroadcast", d):
            x, y = tensor_values(rng, d, [2, 3]), tensor_values(rng, other, [5])
            got = run(lambda b, h1, h2: es.HcomBroadcast([h1, h2], 2, root_rank=0, group=WORLD),
                      (x, d), (y, other))
            same(got[0], x, d)
            same(got[1], y, other)


A2A_T = D("HcomAllToAllV", "send_data")
A2A_COUNTS = [D("HcomAllToAllV", n) for n in (
    "send_counts", "send_displacements", "recv_counts", "recv_displacements")]
SEND_T = D("HcomSend", "x")
_ = COVER["HcomReceive"]  # no input; tests/kernels/test_hcom_p2p.py runs it in every dtype


def test_all_to_all_v_of_one_rank_copies_its_block():
    # Rank 0 sends 4 elements from element 1 of the flattened send_data to itself, received at
    # element 2: recv_data is 1-D, of max(2 + 4) = 6 elements, its first two zero.
    assert all(c == ["int64"] for c in A2A_COUNTS)
    rng = np.random.default_rng(4)
    for d in A2A_T:
        with case("HcomAllToAllV", d):
            x = tensor_values(rng, d, [2, 3])
            got = run(lambda b, h: es.HcomAllToAllV(h, const(b, [4]), const(b, [1]), const(b, [4]),
                                                    const(b, [2]), group=WORLD), (x, d))
            want = np.zeros(6, x.dtype)
            want[2:] = x.reshape(-1)[1:5]
            same(got[0], want, d)


def test_send_of_one_rank_has_no_peer():
    rng = np.random.default_rng(5)
    for d in SEND_T:
        with case("HcomSend", d):
            x = tensor_values(rng, d, [2])
            with pytest.raises(ge.GeError, match=r"not supported: HcomSend needs at least 2 ranks \(dest_rank=1\)"):
                run(lambda b, h: send_then(b, h, es.HcomSend(h, group=WORLD, sr_tag=0, dest_rank=1)), (x, d))


def send_then(b, h, send):
    """``h`` through an Identity that runs after ``send`` (the send has no output)."""
    from ge.es import control_dependency_scope

    with control_dependency_scope([send]):
        return es.Identity(h)


def test_collective_output_shapes_follow_ge():
    b = GraphBuilder("hcom")
    x = b.create_input(0, data_type=DataType.DT_INT8, shape=[4, 512])
    assert shape_of(es.HcomAllGather(x, rank_size=2, group=WORLD)) == [8, 512]
    y = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[8, 512])
    assert shape_of(es.HcomReduceScatter(y, reduction="sum", group=WORLD, rank_size=4)) == [2, 512]


def shape_of(h) -> List[int]:
    return h.get_producer().get_output_desc(h.output_index).get_shape()


def run_graph_of(build) -> List[np.ndarray]:
    b = GraphBuilder("hcom")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4, 2])
    out = build(x)
    g = b.build_and_reset(out if isinstance(out, list) else [out])
    s = Session()
    s.add_graph(1, g)
    return [t.numpy() for t in s.run_graph(1, [np.ones((4, 2), np.float32)])]


@pytest.mark.parametrize("op, build, ranks", [
    ("HcomAllGather", lambda x: es.HcomAllGather(x, rank_size=2, group=WORLD), "2 ranks (rank_size=2)"),
    ("HcomReduceScatter", lambda x: es.HcomReduceScatter(x, reduction="sum", group=WORLD, rank_size=4),
     "4 ranks (rank_size=4)"),
    ("HcomBroadcast", lambda x: es.HcomBroadcast([x], 1, root_rank=1, group=WORLD),
     "at least 2 ranks (root_rank=1)"),
])
def test_collectives_needing_more_ranks_are_refused_when_run(op, build, ranks):
    with pytest.raises(ge.GeError, match=rf"not supported: {op} needs {re_escape(ranks)}: ge-rs runs "
                                         r"collectives in one process only \(world size 1\)"):
        run_graph_of(build)


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


def test_reduction_must_be_known():
    b = GraphBuilder("hcom")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4])
    with pytest.raises(ge.GeError, match=r"attribute 'reduction' is \"mean\"; expected one of sum, prod, max, min"):
        es.HcomAllReduce(x, reduction="mean", group=WORLD)
    with pytest.raises(ge.GeError, match=r"attribute 'reduction' is \"avg\""):
        es.HcomReduceScatter(x, reduction="avg", group=WORLD, rank_size=1)


def test_reduce_scatter_needs_a_divisible_dim0():
    b = GraphBuilder("hcom")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[6, 2])
    with pytest.raises(ge.GeError, match=r"dim 0 of input 'x' \[6, 2\] is not divisible by attribute 'rank_size' 4"):
        es.HcomReduceScatter(x, reduction="sum", group=WORLD, rank_size=4)


def test_rank_size_must_be_positive():
    b = GraphBuilder("hcom")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[6, 2])
    with pytest.raises(ge.GeError, match=r"attribute 'rank_size' is 0; it must be at least 1"):
        es.HcomAllGather(x, rank_size=0, group=WORLD)


def test_hcom_signatures_are_ges():
    import inspect

    assert str(inspect.signature(es.HcomAllReduce)) == (
        "(x: ge._native.TensorHolder, *, reduction: str, group: str, fusion: int = 1, fusion_id: int = -1)"
        " -> ge._native.TensorHolder")
    assert list(inspect.signature(es.HcomReduceScatter).parameters) == [
        "x", "reduction", "group", "rank_size", "fusion", "fusion_id"]
    assert list(inspect.signature(es.HcomAllGather).parameters) == ["x", "rank_size", "group", "fusion", "fusion_id"]
    assert list(inspect.signature(es.HcomBroadcast).parameters) == [
        "x", "y_num", "root_rank", "group", "fusion", "fusion_id"]


# ---------------------------------------------------------------------------------------------
# DynamicQuant
# ---------------------------------------------------------------------------------------------

DQ_T = D("DynamicQuant", "x")
D("DynamicQuant", "smooth_scales")
D("DynamicQuant", "group_index")


def dynamic_quant_ref(x: np.ndarray, smooth=None, ends=None):
    """int8 y and float32 scale, in float32 as the kernel (and the NPU) computes them."""
    h = x.shape[-1]
    rows = x.astype(np.float32).reshape(-1, h)
    if smooth is not None:
        s = smooth.astype(np.float32)
        if ends is None:
            rows = rows * s
        else:
            group = np.searchsorted(np.asarray(ends), np.arange(rows.shape[0]), side="right")
            rows = rows * s[group]
    scale = (np.abs(rows).max(axis=1) / np.float32(127)).astype(np.float32)
    with np.errstate(all="ignore"):
        q = np.where(scale[:, None] > 0, np.rint(rows / scale[:, None]), np.float32(0))
    return np.clip(q, -128, 127).astype(np.int8).reshape(x.shape), scale.reshape(x.shape[:-1])


@HYP(12)
@given(data=st.data())
def test_dynamic_quant(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3), label="shape")
    mode = data.draw(st.sampled_from(["plain", "smooth", "groups"]), label="mode")
    rng = rng_of(data)
    h, rows = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
    for d in DQ_T:
        with case("DynamicQuant", f"{d} {mode}"):
            x = finite(rng, d, shape)
            if x.size > 1:
                x.flat[1] = 0.0
            if mode == "plain":
                got = run(lambda b, xh: list(es.DynamicQuant(xh)), (x, d))
                y, scale = dynamic_quant_ref(x)
            elif mode == "smooth":
                s = finite(rng, d, [h])
                got = run(lambda b, xh, sh: list(es.DynamicQuant(xh, sh)), (x, d), (s, d))
                y, scale = dynamic_quant_ref(x, s)
            else:
                e = int(rng.integers(1, 4))
                ends = np.sort(rng.integers(0, rows + 1, size=e)).astype(np.int32)
                ends[-1] = rows
                s = finite(rng, d, [e, h])
                got = run(lambda b, xh, sh, gh: list(es.DynamicQuant(xh, sh, gh)), (x, d), (s, d), (ends, "int32"))
                y, scale = dynamic_quant_ref(x, s, ends)
            same(got[0], y, "int8", what=f"DynamicQuant {shape} {mode} y")
            same(got[1], scale, "float32", what=f"DynamicQuant {shape} {mode} scale")


def test_dynamic_quant_rows_of_zeros_give_zero_scale_and_zeros():
    x = np.zeros((2, 3), np.float16)
    got = run(lambda b, xh: list(es.DynamicQuant(xh, dst_type=DataType.DT_INT8)), (x, "float16"))
    same(got[0], np.zeros((2, 3), np.int8), "int8")
    same(got[1], np.zeros(2, np.float32), "float32")


def dq_input(shape=(2, 4), d=DataType.DT_FLOAT16):
    b = GraphBuilder("dq")
    return b, b.create_input(0, data_type=d, shape=list(shape))


def test_dynamic_quant_shapes_follow_ge():
    b, x = dq_input((4, 2, 8))
    out = es.DynamicQuant(x)
    descs = [o.get_producer().get_output_desc(i) for i, o in enumerate(out)]
    assert [(d.get_data_type(), d.get_shape()) for d in descs] == [
        (DataType.DT_INT8, [4, 2, 8]), (DataType.DT_FLOAT, [4, 2])]


def test_dynamic_quant_errors():
    b, x = dq_input()
    with pytest.raises(ge.GeError, match=r"attribute 'dst_type' is DT_FLOAT; expected one of DT_INT8"):
        es.DynamicQuant(x, dst_type=DataType.DT_FLOAT)
    s32 = b.create_input(1, data_type=DataType.DT_BF16, shape=[4])
    with pytest.raises(ge.GeError, match=r"input 'smooth_scales' is DT_BF16, but x is DT_FLOAT16"):
        es.DynamicQuant(x, s32)
    gi = b.create_input(2, data_type=DataType.DT_INT32, shape=[2])
    with pytest.raises(ge.GeError, match=r"input 'group_index' needs input 'smooth_scales'"):
        es.DynamicQuant(x, None, gi)
    s = b.create_input(3, data_type=DataType.DT_FLOAT16, shape=[3])
    with pytest.raises(ge.GeError, match=r"input 'smooth_scales' \[3\] must have shape \[4\]"):
        es.DynamicQuant(x, s)
    s2 = b.create_input(4, data_type=DataType.DT_FLOAT16, shape=[3, 4])
    with pytest.raises(ge.GeError, match=r"input 'smooth_scales' \[3, 4\] must have shape \[2, 4\]"):
        es.DynamicQuant(x, s2, gi)
    f32x = b.create_input(5, data_type=DataType.DT_FLOAT, shape=[2, 4])
    with pytest.raises(ge.GeError):
        es.DynamicQuant(f32x)


def test_dynamic_quant_to_int4_is_not_supported():
    x = np.ones((2, 4), np.float16)
    with pytest.raises(ge.GeError, match=r"not supported: DynamicQuant with dst_type DT_INT4"):
        run(lambda b, xh: list(es.DynamicQuant(xh, dst_type=DataType.DT_INT4)), (x, "float16"))


def test_dynamic_quant_group_index_must_cover_the_rows():
    x = np.ones((3, 2), np.float16)
    s = np.ones((2, 2), np.float16)
    for ends in ([1, 2], [2, 1], [-1, 3]):
        with pytest.raises(ge.GeError, match=r"group_index .* must be non-decreasing ends of the row groups"):
            run(lambda b, *h: list(es.DynamicQuant(*h)), (x, "float16"), (s, "float16"),
                (np.asarray(ends, np.int32), "int32"))


# ---------------------------------------------------------------------------------------------
# MoeGatingTopKSoftmax
# ---------------------------------------------------------------------------------------------

MOE_T = D("MoeGatingTopKSoftmax", "x")
D("MoeGatingTopKSoftmax", "finished")


@HYP(12)
@given(data=st.data())
def test_moe_gating_top_k_softmax(data):
    shape = data.draw(st.lists(st.integers(1, 6), min_size=2, max_size=3), label="shape")
    k = data.draw(st.integers(1, shape[-1]), label="k")
    with_finished = data.draw(st.booleans(), label="finished")
    rng = rng_of(data)
    e = shape[-1]
    for d in MOE_T:
        with case("MoeGatingTopKSoftmax", d):
            x = finite(rng, d, shape)
            if x.size > 2:
                x.flat[1] = x.flat[0]  # a tie: the lower expert comes first
            fin = rng.random(shape[:-1]) < 0.5
            inputs = [(x, d)] + ([(fin, "bool")] if with_finished else [])
            got = run(lambda b, *h: list(es.MoeGatingTopKSoftmax(*h, k=k)), *inputs)
            x64 = x.astype(np.float64)
            p = np.exp(x64 - x64.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            order = np.argsort(-x64, axis=-1, kind="stable")[..., :k]
            rows = int(np.prod(shape[:-1]))
            near(got[0], np.take_along_axis(p, order, axis=-1), d, extra=F64_EPS * 8, what="y")
            idx = np.where(fin[..., None], e, order) if with_finished else order
            same(got[1], idx.astype(np.int32), "int32", what="expert_idx")
            rid = (np.arange(k)[None, :] * rows + np.arange(rows)[:, None]).reshape(shape[:-1] + [k])
            same(got[2], rid.astype(np.int32), "int32", what="row_idx")


def test_moe_gating_top_k_softmax_shapes_follow_ge():
    b = GraphBuilder("moe")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4, 8])
    out = es.MoeGatingTopKSoftmax(x, None, k=2)
    descs = [o.get_producer().get_output_desc(i) for i, o in enumerate(out)]
    assert [(d.get_data_type(), d.get_shape()) for d in descs] == [
        (DataType.DT_FLOAT, [4, 2]), (DataType.DT_INT32, [4, 2]), (DataType.DT_INT32, [4, 2])]


def test_moe_gating_top_k_softmax_errors():
    b = GraphBuilder("moe")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4, 8])
    with pytest.raises(ge.GeError, match=r"attribute 'k' is 9; it must be in \[1, 8\]"):
        es.MoeGatingTopKSoftmax(x, k=9)
    with pytest.raises(ge.GeError, match=r"attribute 'k' is 0"):
        es.MoeGatingTopKSoftmax(x, k=0)
    x1 = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[8])
    with pytest.raises(ge.GeError, match=r"input 'x' \[8\] must be 2-D or 3-D"):
        es.MoeGatingTopKSoftmax(x1, k=1)
    f = b.create_input(2, data_type=DataType.DT_BOOL, shape=[3])
    with pytest.raises(ge.GeError, match=r"input 'finished' \[3\] must have shape \[4\]"):
        es.MoeGatingTopKSoftmax(x, f, k=1)


# ---------------------------------------------------------------------------------------------
# PromptFlashAttention (the plain path: float query/key/value, BSH/BNSD/BSND, atten_mask)
# ---------------------------------------------------------------------------------------------

PFA_T = D("PromptFlashAttention", "query")
D("PromptFlashAttention", "key")
D("PromptFlashAttention", "value")
PFA_MASK = D("PromptFlashAttention", "atten_mask")
PFA_FLOAT = [d for d in PFA_T if d != "int8"]
PFA_REFUSED = ["pse_shift", "actual_seq_lengths", "actual_seq_lengths_kv", "deq_scale1", "quant_scale1",
               "deq_scale2", "quant_scale2", "quant_offset2"]
for _name in PFA_REFUSED:  # each is refused with "not supported" (test_pfa_refuses_its_other_inputs)
    D("PromptFlashAttention", _name)


def to_bnsd(a: np.ndarray, layout: str, heads: int) -> np.ndarray:
    if layout == "BSH":
        b, s, h = a.shape
        return a.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    if layout == "BSND":
        return a.transpose(0, 2, 1, 3)
    return a


def from_bnsd(a: np.ndarray, layout: str) -> np.ndarray:
    if layout == "BSH":
        b, n, s, d = a.shape
        return a.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    if layout == "BSND":
        return a.transpose(0, 2, 1, 3)
    return a


def pfa_ref(q, k, v, n, kvn, scale, mask, pre, nxt, layout):
    q4, k4, v4 = (to_bnsd(a.astype(np.float64), layout, h) for a, h in ((q, n), (k, kvn), (v, kvn)))
    k4, v4 = np.repeat(k4, n // kvn, axis=1), np.repeat(v4, n // kvn, axis=1)
    sc = scale * np.einsum("bnsd,bntd->bnst", q4, k4)
    s, t = sc.shape[-2:]
    if mask is not None:
        m = mask.astype(np.float64) != 0
        m = m.reshape((-1, 1, s, t)) if m.ndim >= 3 else m
        i, j = np.arange(s)[:, None], np.arange(t)[None, :]
        m = m | (j - i > nxt) | (i - j > pre)
        sc = np.where(m, -np.inf, sc)
    mx = sc.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        p = np.exp(sc - np.where(np.isfinite(mx), mx, 0))
        p = p / p.sum(axis=-1, keepdims=True)
    p = np.nan_to_num(p)
    out = np.einsum("bnst,bntd->bnsd", p, v4)
    return from_bnsd(out, layout), from_bnsd(np.einsum("bnst,bntd->bnsd", p, np.abs(v4)), layout)


@HYP(10)
@given(data=st.data())
def test_prompt_flash_attention(data):
    layout = data.draw(st.sampled_from(["BSH", "BNSD", "BSND"]), label="layout")
    b, s, t = (data.draw(st.integers(1, 4), label=x) for x in ("B", "S", "Skv"))
    kvn = data.draw(st.integers(1, 2), label="kv heads")
    n = kvn * data.draw(st.integers(1, 2), label="group")
    d = data.draw(st.integers(1, 4), label="D")
    mask_kind = data.draw(st.sampled_from(["none", "2d", "3d", "4d"]), label="mask")
    nxt = data.draw(st.sampled_from([0, 1, 214748647]), label="next_tokens")
    pre = data.draw(st.sampled_from([0, 2, 214748647]), label="pre_tokens")
    scale = f32(data.draw(st.sampled_from([1.0, 0.5]), label="scale"))
    rng = rng_of(data)

    shaped = functools.partial(attention_shape, layout, b, d)

    for i, dt in enumerate(PFA_FLOAT):
        md = PFA_MASK[i % len(PFA_MASK)] if mask_kind != "none" else None
        with case("PromptFlashAttention", f"{dt} {layout} mask {mask_kind} {md}"):
            q, k, v = (finite(rng, dt, shaped(x, h), mag=0.5) for x, h in ((s, n), (t, kvn), (t, kvn)))
            inputs = [(q, dt), (k, dt), (v, dt)]
            mask = None
            if md is not None:
                mshape = {"2d": [s, t], "3d": [b, s, t], "4d": [b, 1, s, t]}[mask_kind]
                mask = (rng.random(mshape) < 0.3).astype(NPD[md])
                inputs.append((mask, md))
            attrs = dict(num_heads=n, num_key_value_heads=kvn, scale_value=scale, pre_tokens=pre,
                         next_tokens=nxt, input_layout=layout)

            def build(bld, qh, kh, vh, mh=None):
                return es.PromptFlashAttention(qh, kh, vh, None, mh, **attrs)

            got = run(build, *inputs)
            want, mag = pfa_ref(q, k, v, n, kvn, scale, mask, pre, nxt, layout)
            near(got[0], want, dt, extra=F64_EPS * 16 * mag, what=f"PFA {layout} {mask_kind}")


NPD = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "float16": np.float16}


def pfa_inputs(layout="BSH", shape=(1, 2, 4), dt=DataType.DT_FLOAT16):
    b = GraphBuilder("pfa")
    return b, [b.create_input(i, data_type=dt, shape=list(shape)) for i in range(3)]


def test_pfa_output_shape_and_dtype_follow_ge():
    b, (q, k, v) = pfa_inputs(shape=(2, 5, 8))
    out = es.PromptFlashAttention(q, k, v, num_heads=2)
    desc = out.get_producer().get_output_desc(0)
    assert (desc.get_data_type(), desc.get_shape()) == (DataType.DT_FLOAT16, [2, 5, 8])
    v2 = b.create_input(3, data_type=DataType.DT_FLOAT16, shape=[2, 7, 2])
    qs = b.create_input(4, data_type=DataType.DT_FLOAT, shape=[1])
    out = es.PromptFlashAttention(q, k, v2, None, None, None, None, None, None, None, qs, num_heads=2,
                                  num_key_value_heads=1)
    desc = out.get_producer().get_output_desc(0)
    assert (desc.get_data_type(), desc.get_shape()) == (DataType.DT_INT8, [2, 5, 4])


def test_pfa_build_errors():
    b, (q, k, v) = pfa_inputs(shape=(2, 5, 8))
    with pytest.raises(ge.GeError, match=r"attribute 'num_heads' is 0; it must be at least 1"):
        es.PromptFlashAttention(q, k, v, num_heads=0)
    with pytest.raises(ge.GeError, match=r"attribute 'num_key_value_heads' 3 must be a positive divisor of num_heads 4"):
        es.PromptFlashAttention(q, k, v, num_heads=4, num_key_value_heads=3)
    with pytest.raises(ge.GeError, match=r"attribute 'input_layout' is \"XYZ\"; expected one of BSH, BNSD"):
        es.PromptFlashAttention(q, k, v, num_heads=2, input_layout="XYZ")
    with pytest.raises(ge.GeError, match=r"input 'query' \[2, 5, 8\] must be 4-D for input_layout BNSD"):
        es.PromptFlashAttention(q, k, v, num_heads=2, input_layout="BNSD")


def pfa_run(build, *inputs):
    return run(build, *inputs)


def test_pfa_refuses_its_other_inputs():
    q = np.ones((1, 2, 4), np.float16)
    for i, name in enumerate(PFA_REFUSED):
        spec = next(x for x in ge.ops.get_op("PromptFlashAttention")["inputs"] if x["name"] == name)
        t = spec["type"][0]
        d = {"DT_FLOAT16": "float16", "DT_INT64": "int64", "DT_UINT64": "uint64", "DT_FLOAT": "float32"}[t]
        extra = np.ones((1,), NP_OF[d])
        idx = PFA_INPUT_NAMES.index(name)

        def build(bld, qh, kh, vh, xh, idx=idx):
            args = [qh, kh, vh] + [None] * 9
            args[idx] = xh
            return es.PromptFlashAttention(*args, num_heads=1)

        with pytest.raises(ge.GeError, match=rf"not supported: PromptFlashAttention with {name} \(input {idx}\)"):
            pfa_run(build, (q, "float16"), (q, "float16"), (q, "float16"), (extra, d))


PFA_INPUT_NAMES = [x["name"] for x in ge.ops.get_op("PromptFlashAttention")["inputs"]]
NP_OF = {"float16": np.float16, "int64": np.int64, "uint64": np.uint64, "float32": np.float32}


@pytest.mark.parametrize("attrs, message", [
    (dict(input_layout="SH"), r"input_layout \"SH\" \(the CPU kernel takes BSH, BNSD and BSND\)"),
    (dict(sparse_mode=3), r"sparse_mode 3 \(the CPU kernel takes 0\)"),
    (dict(inner_precise=7), r"inner_precise 7 \(0 to 3\)"),
])
def test_pfa_refuses_other_modes(attrs, message):
    shape = (2, 4) if attrs.get("input_layout") == "SH" else (1, 2, 4)
    q = np.ones(shape, np.float16)
    with pytest.raises(ge.GeError, match=r"not supported: PromptFlashAttention with " + message):
        run(lambda b, *h: es.PromptFlashAttention(*h, num_heads=1, **attrs), *[(q, "float16")] * 3)


def test_pfa_refuses_an_int8_query():
    q = np.ones((1, 2, 4), np.int8)
    with pytest.raises(ge.GeError, match=r"not supported: PromptFlashAttention with a DT_INT8 query"):
        run(lambda b, *h: es.PromptFlashAttention(*h, num_heads=1), *[(q, "int8")] * 3)


def test_pfa_fully_masked_rows_give_zeros():
    q = np.ones((1, 2, 4), np.float16)
    mask = np.array([[True, True], [False, True]])
    got = run(lambda b, qh, kh, vh, mh: es.PromptFlashAttention(qh, kh, vh, None, mh, num_heads=1,
                                                                 next_tokens=5),
              (q, "float16"), (q, "float16"), (q * 3, "float16"), (mask, "bool"))
    same(got[0], np.array([[[0, 0, 0, 0], [3, 3, 3, 3]]], np.float16), "float16")


def test_pfa_mask_of_a_wrong_shape_is_an_error():
    q = np.ones((1, 2, 4), np.float16)
    with pytest.raises(ge.GeError, match=r"atten_mask \[3\] must be \[S, Skv\], \[B, S, Skv\] or \[B, 1, S, Skv\]"):
        run(lambda b, qh, kh, vh, mh: es.PromptFlashAttention(qh, kh, vh, None, mh, num_heads=1),
            (q, "float16"), (q, "float16"), (q, "float16"), (np.zeros(3, np.bool_), "bool"))


# ---------------------------------------------------------------------------------------------
# GroupedMatmulFinalizeRouting (int8 x and w, float32 scale, ND w [e, k, n])
# ---------------------------------------------------------------------------------------------

for _name in ("x", "w", "pertoken_scale", "group_list", "shared_input", "logit", "row_index"):
    D("GroupedMatmulFinalizeRouting", _name)
GM_SCALE = D("GroupedMatmulFinalizeRouting", "scale")
GM_ROW = D("GroupedMatmulFinalizeRouting", "row_index")
GM_REFUSED = {"bias": 3, "offset": 9}
for _name in GM_REFUSED:  # refused with "not supported" (test_gmmfr_refuses_bias_and_offset)
    D("GroupedMatmulFinalizeRouting", _name)


@HYP(10)
@given(data=st.data())
def test_grouped_matmul_finalize_routing(data):
    m, k, n, e = (data.draw(st.integers(1, 5), label=x) for x in ("m", "k", "n", "e"))
    bs = data.draw(st.integers(1, m), label="output_bs")
    cumsum = data.draw(st.booleans(), label="cumsum")
    with_shared = data.draw(st.booleans(), label="shared")
    rng = rng_of(data)
    for rd in GM_ROW:
        with case("GroupedMatmulFinalizeRouting", rd):
            x = rng.integers(-128, 128, size=(m, k)).astype(np.int8)
            w = rng.integers(-128, 128, size=(e, k, n)).astype(np.int8)
            scale = finite(rng, "float32", [e, n])
            pt = finite(rng, "float32", [m])
            logit = finite(rng, "float32", [m])
            counts = rng.multinomial(int(rng.integers(0, m + 1)), [1 / e] * e).astype(np.int64)
            groups = np.cumsum(counts) if cumsum else counts
            rows = rng.integers(0, bs, size=m).astype(NP_OF.get(rd, np.int32))
            inputs = [(x, "int8"), (w, "int8"), (scale, "float32"), (pt, "float32"), (groups, "int64"),
                      (logit, "float32"), (rows, rd)]
            sb = int(rng.integers(1, bs + 1))
            off = int(rng.integers(0, bs - sb + 1))
            shared = finite(rng, "bfloat16", [sb, n])
            weight = f32(0.5)
            if with_shared:
                inputs.append((shared, "bfloat16"))

            def build(b, xh, wh, sh, ph, gh, lh, rh, shh=None):
                return es.GroupedMatmulFinalizeRouting(
                    xh, wh, scale=sh, bias=None, pertoken_scale=ph, group_list=gh, shared_input=shh, logit=lh,
                    row_index=rh, offset=None, shared_input_weight=weight, shared_input_offset=off, output_bs=bs,
                    group_list_type=0 if cumsum else 1)

            got = run(build, *inputs)
            y = np.zeros((bs, n))
            mag = np.zeros((bs, n))
            g_of = np.repeat(np.arange(e), counts)
            for i, g in enumerate(g_of):
                term = (x[i].astype(np.float64) @ w[g].astype(np.float64)) * scale[g] * pt[i] * logit[i]
                y[rows[i]] += term
                mag[rows[i]] += np.abs(term)
            if with_shared:
                y[off:off + sb] += shared.astype(np.float64) * weight
                mag[off:off + sb] += np.abs(shared.astype(np.float64) * weight)
            near(got[0], y, "float32", extra=F64_EPS * 16 * mag, what="GroupedMatmulFinalizeRouting")


NP_OF["int32"] = np.int32
NP_OF["int8"] = np.int8


def gm_inputs(m=4, k=3, n=2, e=2):
    b = GraphBuilder("gm")
    x = b.create_input(0, data_type=DataType.DT_INT8, shape=[m, k])
    w = b.create_input(1, data_type=DataType.DT_INT8, shape=[e, k, n])
    s = b.create_input(2, data_type=DataType.DT_FLOAT, shape=[e, n])
    g = b.create_input(3, data_type=DataType.DT_INT64, shape=[e])
    return b, x, w, s, g


def test_gmmfr_shape_follows_ge():
    b, x, w, s, g = gm_inputs()
    y = es.GroupedMatmulFinalizeRouting(x, w, scale=s, group_list=g, output_bs=3)
    d = y.get_producer().get_output_desc(0)
    assert (d.get_data_type(), d.get_shape()) == (DataType.DT_FLOAT, [3, 2])


def test_gmmfr_build_errors():
    b, x, w, s, g = gm_inputs()
    with pytest.raises(ge.GeError, match=r"input 'scale' is not given"):
        es.GroupedMatmulFinalizeRouting(x, w, group_list=g, output_bs=3)
    with pytest.raises(ge.GeError, match=r"attribute 'output_bs' is 5; it must be in \[0, m\]"):
        es.GroupedMatmulFinalizeRouting(x, w, scale=s, group_list=g, output_bs=5)
    w2 = b.create_input(4, data_type=DataType.DT_INT8, shape=[2, 5, 2])
    with pytest.raises(ge.GeError, match=r"input 'w' \[2, 5, 2\] must be \[e, k, n\] with k 3"):
        es.GroupedMatmulFinalizeRouting(x, w2, scale=s, group_list=g, output_bs=3)
    s2 = b.create_input(5, data_type=DataType.DT_FLOAT, shape=[3, 2])
    with pytest.raises(ge.GeError, match=r"input 'scale' \[3, 2\] must have shape \[2, 2\]"):
        es.GroupedMatmulFinalizeRouting(x, w, scale=s2, group_list=g, output_bs=3)
    sh = b.create_input(6, data_type=DataType.DT_BF16, shape=[2, 2])
    with pytest.raises(ge.GeError, match=r"at shared_input_offset 2 does not fit output_bs 3"):
        es.GroupedMatmulFinalizeRouting(x, w, scale=s, group_list=g, shared_input=sh, shared_input_offset=2,
                                        output_bs=3)


def gm_run(extra=(), **attrs):
    x = np.ones((2, 3), np.int8)
    w = np.ones((1, 3, 2), np.int8)
    s = np.ones((1, 2), np.float32)
    g = np.array([2], np.int64)
    names = [name for name, _ in extra]

    def build(b, xh, wh, sh, gh, *more):
        kw = dict(zip(names, more))
        return es.GroupedMatmulFinalizeRouting(xh, wh, scale=sh, group_list=gh, output_bs=2, **kw, **attrs)

    return run(build, (x, "int8"), (w, "int8"), (s, "float32"), (g, "int64"), *[v for _, v in extra])


def test_gmmfr_without_routing_inputs_sums_rows_in_place():
    got = gm_run()
    same(got[0], np.full((2, 2), 3.0, np.float32), "float32")


@pytest.mark.parametrize("name", list(GM_REFUSED))
def test_gmmfr_refuses_bias_and_offset(name):
    with pytest.raises(ge.GeError, match=rf"not supported: GroupedMatmulFinalizeRouting with {name} \(input "
                                         rf"{GM_REFUSED[name]}\)"):
        gm_run(extra=[(name, (np.ones((1, 2), np.float32), "float32"))])


@pytest.mark.parametrize("attrs, message", [
    (dict(dtype=1), r"dtype 1 \(the CPU kernel writes float32 only, dtype 0\)"),
    (dict(transpose_w=True), r"transpose_w=true"),
    (dict(transpose_x=True), r"transpose_x=true"),
    (dict(group_list_type=2), r"group_list_type 2 \(0: cumulative, 1: counts\)"),
])
def test_gmmfr_refuses_other_modes(attrs, message):
    with pytest.raises(ge.GeError, match=r"not supported: GroupedMatmulFinalizeRouting with " + message):
        gm_run(**attrs)


def test_gmmfr_refuses_an_int64_scale():
    assert "int64" in GM_SCALE
    x = np.ones((2, 3), np.int8)
    with pytest.raises(ge.GeError, match=r"not supported: GroupedMatmulFinalizeRouting with a DT_INT64 scale"):
        run(lambda b, xh, wh, sh, gh: es.GroupedMatmulFinalizeRouting(xh, wh, scale=sh, group_list=gh, output_bs=2),
            (x, "int8"), (np.ones((1, 3, 2), np.int8), "int8"), (np.ones((1, 2), np.int64), "int64"),
            (np.array([2], np.int64), "int64"))


def test_gmmfr_run_errors():
    with pytest.raises(ge.GeError, match=r"row_index 5 of row 0 is outside \[0, 2\) \(output_bs\)"):
        gm_run(extra=[("row_index", (np.array([5, 0], np.int64), "int64"))])
    with pytest.raises(ge.GeError, match=r"group_list \[3\] must cover at most the 2 rows of x"):
        run(lambda b, xh, wh, sh, gh: es.GroupedMatmulFinalizeRouting(xh, wh, scale=sh, group_list=gh, output_bs=2),
            (np.ones((2, 3), np.int8), "int8"), (np.ones((1, 3, 2), np.int8), "int8"),
            (np.ones((1, 2), np.float32), "float32"), (np.array([3], np.int64), "int64"))


# ---------------------------------------------------------------------------------------------
# IncreFlashAttention (the plain path: one float key and value tensor, BSH/BNSD/BSND, atten_mask)
# ---------------------------------------------------------------------------------------------

IFA_Q = D("IncreFlashAttention", "query")
D("IncreFlashAttention", "key")
D("IncreFlashAttention", "value")
IFA_MASK = D("IncreFlashAttention", "atten_mask")
IFA_FLOAT = [d for d in IFA_Q if d != "int8"]
IFA_NAMES = [x["name"] for x in ge.ops.get_op("IncreFlashAttention")["inputs"]]
IFA_REFUSED = [n for n in IFA_NAMES[3:] if n != "atten_mask"]
for _name in IFA_REFUSED:  # each is refused with "not supported" (test_ifa_refuses_its_other_inputs)
    D("IncreFlashAttention", _name)


@HYP(10)
@given(data=st.data())
def test_incre_flash_attention(data):
    layout = data.draw(st.sampled_from(["BSH", "BNSD", "BSND"]), label="layout")
    b, t = (data.draw(st.integers(1, 4), label=x) for x in ("B", "Skv"))
    kvn = data.draw(st.integers(1, 2), label="kv heads")
    n = kvn * data.draw(st.integers(1, 2), label="group")
    d = data.draw(st.integers(1, 4), label="D")
    mask_kind = data.draw(st.sampled_from(["none", "2d", "3d", "4d"]), label="mask")
    rng = rng_of(data)

    shaped = functools.partial(attention_shape, layout, b, d)

    for i, dt in enumerate(IFA_FLOAT):
        md = IFA_MASK[i % len(IFA_MASK)] if mask_kind != "none" else None
        with case("IncreFlashAttention", f"{dt} {layout} mask {mask_kind} {md}"):
            q, k, v = (finite(rng, dt, shaped(x, h), mag=0.5) for x, h in ((1, n), (t, kvn), (t, kvn)))
            inputs = [(q, dt), (k, dt), (v, dt)]
            mask = None
            if md is not None:
                mshape = {"2d": [b, t], "3d": [b, 1, t], "4d": [b, 1, 1, t]}[mask_kind]
                mask = (rng.random(mshape) < 0.3).astype(NPD[md])
                inputs.append((mask, md))

            def build(bld, qh, kh, vh, mh=None):
                return es.IncreFlashAttention(qh, [kh], [vh], None, mh, num_heads=n, num_key_value_heads=kvn,
                                              scale_value=0.5, input_layout=layout)

            got = run(build, *inputs)
            ref_mask = None if mask is None else mask.reshape(b, 1, 1, t)
            big = 2**62
            want, mag = pfa_ref(q, k, v, n, kvn, 0.5, ref_mask, big, big, layout)
            near(got[0], want, dt, extra=F64_EPS * 16 * mag, what=f"IFA {layout} {mask_kind}")


def test_ifa_output_follows_query():
    b = GraphBuilder("ifa")
    q = b.create_input(0, data_type=DataType.DT_BF16, shape=[2, 1, 8])
    kv = b.create_input(1, data_type=DataType.DT_BF16, shape=[2, 9, 8])
    out = es.IncreFlashAttention(q, [kv], [kv], num_heads=2, num_key_value_heads=2)
    d = out.get_producer().get_output_desc(0)
    assert (d.get_data_type(), d.get_shape()) == (DataType.DT_BF16, [2, 1, 8])
    with pytest.raises(ge.GeError, match=r"attribute 'num_key_value_heads' 3 must be a positive divisor of num_heads 2"):
        es.IncreFlashAttention(q, [kv], [kv], num_heads=2, num_key_value_heads=3)
    with pytest.raises(ge.GeError, match=r"input 'query' \[2, 1, 8\] must be 4-D for input_layout BNSD"):
        es.IncreFlashAttention(q, [kv], [kv], num_heads=2, input_layout="BNSD")
    with pytest.raises(ge.GeError, match=r"attribute 'input_layout' is \"TND\"; expected one of BSH, BNSD, BSND"):
        es.IncreFlashAttention(q, [kv], [kv], num_heads=2, input_layout="TND")


def test_ifa_refuses_its_other_inputs():
    q = np.ones((1, 1, 4), np.float16)
    for name in IFA_REFUSED:
        spec = next(x for x in ge.ops.get_op("IncreFlashAttention")["inputs"] if x["name"] == name)
        d = {"DT_FLOAT16": "float16", "DT_INT64": "int64", "DT_UINT64": "uint64", "DT_FLOAT": "float32",
             "DT_INT32": "int32"}[spec["type"][0]]
        idx = IFA_NAMES.index(name)

        def build(bld, qh, kh, vh, xh, idx=idx):
            args = [qh, [kh], [vh]] + [None] * 12
            args[idx] = xh
            return es.IncreFlashAttention(*args, num_heads=1)

        with pytest.raises(ge.GeError, match=rf"not supported: IncreFlashAttention with {name} \(input {idx}\)"):
            run(build, (q, "float16"), (q, "float16"), (q, "float16"), (np.ones((1,), NP_OF[d]), d))


def test_ifa_refuses_key_lists_and_quantized_inputs():
    q = np.ones((1, 1, 4), np.float16)
    with pytest.raises(ge.GeError, match=r"not supported: IncreFlashAttention with 2 key and value tensors"):
        run(lambda b, qh, k1, k2: es.IncreFlashAttention(qh, [k1, k2], [k1, k2], num_heads=1),
            *[(q, "float16")] * 3)
    with pytest.raises(ge.GeError, match=r"not supported: IncreFlashAttention with a DT_INT8 key"):
        run(lambda b, qh, kh, vh: es.IncreFlashAttention(qh, [kh], [vh], num_heads=1),
            (q, "float16"), (q.astype(np.int8), "int8"), (q, "float16"))
    with pytest.raises(ge.GeError, match=r"not supported: IncreFlashAttention with a DT_INT8 query"):
        run(lambda b, qh, kh, vh: es.IncreFlashAttention(qh, [kh], [vh], num_heads=1),
            *[(q.astype(np.int8), "int8")] * 3)


# ---------------------------------------------------------------------------------------------
# FusedInferAttentionScore (the plain path: one float key and value tensor, BSH/BNSD/BSND,
# atten_mask with sparse_mode 0's band, softmax_lse)
# ---------------------------------------------------------------------------------------------

FIA = "FusedInferAttentionScore"
FIA_Q = D(FIA, "query")
D(FIA, "key")
D(FIA, "value")
FIA_MASK = D(FIA, "atten_mask")
FIA_FLOAT = [d for d in FIA_Q if d != "int8"]
FIA_NAMES = [x["name"] for x in ge.ops.get_op(FIA)["inputs"]]
FIA_LENGTHS = ["actual_seq_lengths", "actual_seq_lengths_kv"]
FIA_REFUSED = [n for n in FIA_NAMES[3:] if n not in ["atten_mask"] + FIA_LENGTHS]
for _name in FIA_REFUSED + FIA_LENGTHS:  # refused with "not supported" (tests below)
    D(FIA, _name)
NP_OF.update({"int32": np.int32, "int8": np.int8})


def fia_ref(q, k, v, n, kvn, scale, mask, pre, nxt, layout):
    """softmax(scale * Q K^T + mask) V per head in float64, written out plainly, with each row's
    log-sum-exp: (out, |p| |V| for the tolerance, lse [B, N, S, 1]). A query of one position
    ignores pre/next_tokens; a row with every position masked gives zeros and lse +inf."""
    q4, k4, v4 = (to_bnsd(a.astype(np.float64), layout, h) for a, h in ((q, n), (k, kvn), (v, kvn)))
    b, _, s, _ = q4.shape
    t, dv = v4.shape[2], v4.shape[3]
    out = np.zeros((b, n, s, dv))
    mag = np.zeros((b, n, s, dv))
    lse = np.full((b, n, s, 1), np.inf)
    m = None if mask is None else (mask.astype(np.float64) != 0).reshape((-1, 1, s, t))
    for bi in range(b):
        for h in range(n):
            kh = h // (n // kvn)
            for i in range(s):
                row = scale * (k4[bi, kh] @ q4[bi, h, i])
                hidden = np.zeros(t, bool)
                if m is not None:
                    hidden = m[bi if m.shape[0] > 1 else 0, 0, i].copy()
                    if s > 1:
                        j = np.arange(t)
                        hidden |= (j - i > nxt) | (i - j > pre)
                if hidden.all():
                    continue
                row = np.where(hidden, -np.inf, row)
                top = row.max()
                e = np.exp(row - top)
                p = e / e.sum()
                out[bi, h, i] = p @ v4[bi, kh]
                mag[bi, h, i] = p @ np.abs(v4[bi, kh])
                lse[bi, h, i, 0] = top + np.log(e.sum())
    return from_bnsd(out, layout), from_bnsd(mag, layout), lse


def fia_shape(layout: str, b: int, seq: int, heads: int, d: int) -> List[int]:
    return {"BSH": [b, seq, heads * d], "BNSD": [b, heads, seq, d], "BSND": [b, seq, heads, d]}[layout]


@HYP(10)
@given(data=st.data())
def test_fused_infer_attention_score(data):
    layout = data.draw(st.sampled_from(["BSH", "BNSD", "BSND"]), label="layout")
    b, t = (data.draw(st.integers(1, 3), label=x) for x in ("B", "Skv"))
    s = data.draw(st.sampled_from([1, 1, 2, 4]), label="S")
    kvn = data.draw(st.integers(1, 2), label="kv heads")
    n = kvn * data.draw(st.integers(1, 2), label="group")
    d, dv = (data.draw(st.integers(1, 4), label=x) for x in ("D", "value D"))
    mask_kind = data.draw(st.sampled_from(["none", "2d", "3d", "4d"]), label="mask")
    nxt = data.draw(st.sampled_from([0, 1, 2147483647]), label="next_tokens")
    pre = data.draw(st.sampled_from([0, 2, 2147483647]), label="pre_tokens")
    scale = f32(data.draw(st.sampled_from([1.0, 0.5]), label="scale"))
    lse_flag = data.draw(st.booleans(), label="softmax_lse_flag")
    lengths = data.draw(st.booleans(), label="full actual_seq_lengths")
    rng = rng_of(data)
    for i, dt in enumerate(FIA_FLOAT):
        md = FIA_MASK[i % len(FIA_MASK)] if mask_kind != "none" else None
        with case(FIA, f"{dt} {layout} S {s} mask {mask_kind} {md} lse {lse_flag}"):
            q = finite(rng, dt, fia_shape(layout, b, s, n, d), mag=0.5)
            k = finite(rng, dt, fia_shape(layout, b, t, kvn, d), mag=0.5)
            v = finite(rng, dt, fia_shape(layout, b, t, kvn, dv), mag=0.5)
            inputs = [(q, dt), (k, dt), (v, dt)]
            mask = None
            if md is not None:
                if s > 1:
                    mshape = {"2d": [s, t], "3d": [b, s, t], "4d": [b, 1, s, t]}[mask_kind]
                else:
                    mshape = {"2d": [b, t], "3d": [b, 1, t], "4d": [b, 1, 1, t]}[mask_kind]
                mask = (rng.random(mshape) < 0.3).astype(NPD[md])
                inputs.append((mask, md))
            if lengths:
                inputs += [(np.full(b, s, np.int64), "int64"), (np.full(b, t, np.int64), "int64")]
            attrs = dict(num_heads=n, num_key_value_heads=kvn, scale=scale, pre_tokens=pre, next_tokens=nxt,
                         input_layout=layout, softmax_lse_flag=lse_flag)

            def build(bld, qh, kh, vh, *more):
                mh = more[0] if mask is not None else None
                ls = more[-2:] if lengths else (None, None)
                return es.FusedInferAttentionScore(qh, [kh], [vh], None, mh, *ls, **attrs)

            got = run(build, *inputs)
            want, mag, lse = fia_ref(q, k, v, n, kvn, scale, mask, pre, nxt, layout)
            near(got[0], want, dt, extra=F64_EPS * 16 * mag, what=f"FIA {layout} {mask_kind}")
            if lse_flag:
                near(got[1], lse, "float32", extra=F64_EPS * 64 * np.abs(lse), what="FIA softmax_lse")
            else:
                same(got[1], np.zeros(0, np.float32), "float32")


def test_fia_outputs_follow_ges_shape_rule():
    b = GraphBuilder("fia")
    q = b.create_input(0, data_type=DataType.DT_BF16, shape=[2, 3, 8])
    kv = b.create_input(1, data_type=DataType.DT_BF16, shape=[2, 9, 4])
    out = es.FusedInferAttentionScore(q, [kv], [kv], num_heads=4, num_key_value_heads=2, softmax_lse_flag=True)
    assert isinstance(out, es.FusedInferAttentionScoreOutput)
    descs = [x.get_producer().get_output_desc(i) for i, x in enumerate(out)]
    assert [(d.get_data_type(), d.get_shape()) for d in descs] == [
        (DataType.DT_BF16, [2, 3, 8]), (DataType.DT_FLOAT, [2, 4, 3, 1])]
    out = es.FusedInferAttentionScore(q, [kv], [kv], num_heads=2, input_layout="BSH_NBSD")
    assert out.attention_out.get_producer().get_output_desc(0).get_shape() == [2, 2, 3, 4]
    assert out.softmax_lse.get_producer().get_output_desc(1).get_shape() == [0]
    with pytest.raises(ge.GeError, match=r"input 'query' \[2, 3, 8\] must be 4-D for input_layout BNSD"):
        es.FusedInferAttentionScore(q, [kv], [kv], num_heads=2, input_layout="BNSD")
    with pytest.raises(ge.GeError, match=r"attribute 'num_heads' is 0; it must be at least 1"):
        es.FusedInferAttentionScore(q, [kv], [kv], num_heads=0)


def fia_run(*extra, key=None, query=None, **attrs):
    """Runs a FusedInferAttentionScore of float16 [1, 2, 4] query, key and value (BSH, one head)
    with ``extra`` inputs given by name: ``(name, (array, dtype))``."""
    q = np.ones((1, 2, 4), np.float16)
    names = [name for name, _ in extra]

    def build(bld, qh, kh, vh, *more):
        args = [qh, [kh], [vh]] + [None] * (len(FIA_NAMES) - 3)
        for name, h in zip(names, more):
            args[FIA_NAMES.index(name)] = h
        return es.FusedInferAttentionScore(*args, **{"num_heads": 1, **attrs})

    return run(build, query or (q, "float16"), key or (q, "float16"), (q, "float16"), *[x for _, x in extra])


def test_fia_refuses_its_other_inputs():
    for name in FIA_REFUSED:
        spec = next(x for x in ge.ops.get_op(FIA)["inputs"] if x["name"] == name)
        d = {"DT_FLOAT16": "float16", "DT_INT64": "int64", "DT_UINT64": "uint64", "DT_FLOAT": "float32",
             "DT_INT32": "int32", "DT_INT8": "int8"}[spec["type"][0]]
        idx = FIA_NAMES.index(name)
        with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with {name} \(input {idx}\)"):
            fia_run((name, (np.ones((1,), NP_OF[d]), d)))


@pytest.mark.parametrize("op, shape, attrs, message", [
    pytest.param("IncreFlashAttention", (1, 1, 4), dict(block_size=16), r"block_size 16 \(page attention\)",
                 id="ifa-block_size"),
    pytest.param("IncreFlashAttention", (1, 1, 4), dict(inner_precise=2), r"inner_precise 2 \(0 or 1\)",
                 id="ifa-inner_precise"),
    pytest.param(FIA, (1, 1, 2, 4), dict(input_layout="BNSD_BSND"),
                 r"input_layout \"BNSD_BSND\" \(the CPU kernel takes BSH, BNSD and BSND\)", id="fia-input_layout"),
    pytest.param(FIA, (1, 2, 4), dict(sparse_mode=2), r"sparse_mode 2 \(the CPU kernel takes 0\)",
                 id="fia-sparse_mode"),
    pytest.param(FIA, (1, 2, 4), dict(inner_precise=4), r"inner_precise 4 \(0 to 3\)", id="fia-inner_precise"),
    pytest.param(FIA, (1, 2, 4), dict(block_size=16), r"block_size 16 \(page attention\)", id="fia-block_size"),
])
def test_attention_refuses_other_modes(op, shape, attrs, message):
    """IncreFlashAttention and FusedInferAttentionScore refuse the modes their CPU kernels lack."""
    q = np.ones(shape, np.float16)
    with pytest.raises(ge.GeError, match=rf"not supported: {op} with " + message):
        run(lambda b, qh, kh, vh: getattr(es, op)(qh, [kh], [vh], num_heads=1, **attrs), *[(q, "float16")] * 3)


def test_fia_refuses_key_lists_and_quantized_inputs():
    q = np.ones((1, 2, 4), np.float16)
    with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with 2 key and value tensors"):
        run(lambda b, qh, k1, k2: es.FusedInferAttentionScore(qh, [k1, k2], [k1, k2], num_heads=1),
            *[(q, "float16")] * 3)
    with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with a DT_INT8 key \(antiquant attention\)"):
        fia_run(key=(q.astype(np.int8), "int8"))
    with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with a DT_INT8 query \(quantized attention\)"):
        fia_run(query=(q.astype(np.int8), "int8"))


def test_fia_actual_seq_lengths_shorter_than_the_tensors_are_refused():
    with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with actual_seq_lengths \[1\] shorter than "
                                         r"the 2 positions of query"):
        fia_run(("actual_seq_lengths", (np.array([1], np.int64), "int64")))
    with pytest.raises(ge.GeError, match=rf"not supported: {FIA} with actual_seq_lengths_kv \[1\] shorter than "
                                         r"the 2 positions of key"):
        fia_run(("actual_seq_lengths_kv", (np.array([1], np.int64), "int64")))
    with pytest.raises(ge.GeError, match=r"actual_seq_lengths \[3\] exceed the 2 positions of query"):
        fia_run(("actual_seq_lengths", (np.array([3], np.int64), "int64")))


def test_fia_fully_masked_rows_give_zeros_and_an_infinite_lse():
    mask = np.array([[True, True], [False, True]])
    got = fia_run(("atten_mask", (mask, "bool")), softmax_lse_flag=True)
    same(got[0], np.array([[[0, 0, 0, 0], [1, 1, 1, 1]]], np.float16), "float16")
    same(got[1], np.array([[[[np.inf], [4.0]]]], np.float32), "float32")


def test_fia_single_query_ignores_pre_and_next_tokens():
    # With one query position (the incremental step) next_tokens=0 does not hide later keys.
    q = np.ones((1, 1, 2), np.float16)
    kv = np.array([[[1, 0], [0, 1], [2, 2]]], np.float16)
    mask = np.zeros((1, 3), np.bool_)
    got = run(lambda b, qh, kh, vh, mh: es.FusedInferAttentionScore(qh, [kh], [vh], None, mh, num_heads=1,
                                                                      next_tokens=0, pre_tokens=0),
              (q, "float16"), (kv, "float16"), (kv, "float16"), (mask, "bool"))
    want, mag, _ = fia_ref(q, kv, kv, 1, 1, 1.0, mask, 0, 0, "BSH")
    near(got[0], want, "float16", extra=F64_EPS * 16 * mag)
    assert abs(float(got[0][1][0, 0, 0]) - 1.0) > 0.1  # not the first key's [1, 0] alone
