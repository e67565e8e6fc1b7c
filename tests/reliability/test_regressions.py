"""Regression tests of wrong results (issue 21): the ones the issue lists and the ones the
differential testing (test_differential.py, tools/difftest.py) found, each as a minimal graph
compared with onnxruntime and/or the ONNX reference implementation.

A bug not fixed yet is ``xfail(strict=True)``: the test turns into a failure (XPASS) the day the
Rust side is fixed, and then the mark comes off. The reason names the bug and the file at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import diffgen
import ge
import ge.onnx
from ge.es import GraphBuilder
from ge.es.all import AvgPool, AvgPoolV2, Minimum
from ge.graph import Format
from ge.session import Session
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def model(
    op: str,
    feeds: dict[str, np.ndarray],
    inits: Sequence[tuple] = (),
    n_out: int = 1,
    opset: int = 18,
    inputs: list[str] | None = None,
    **attrs: Any,
) -> Any:
    """A one-node model: graph inputs ``feeds`` (name -> array), initializers ``inits`` ((name,
    array)), node inputs ``inputs`` (default: the feeds then the initializers)."""
    names = inputs if inputs is not None else list(feeds) + [n for n, _ in inits]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TYPES[a.dtype], list(a.shape)) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ge(m: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """``ge.onnx.load`` and a Session in every mode of the differential test; the modes must
    agree bit for bit. Returns one mode's outputs."""
    return diffgen.run_modes(ge.onnx.load(m.SerializeToString()), list(feeds.values()), fail=AssertionError)


def run_ort(m: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return diffgen.run_onnxruntime(m.SerializeToString(), list(feeds.values()))


def run_reference(m: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(r) for r in ReferenceEvaluator(m).run(None, feeds)]


def assert_same(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    """Same dtype and shape, values equal (NaN where NaN), floats within diffgen's tolerance."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        why = diffgen.compare(np.asarray(g), w.astype(g.dtype) if w.dtype.kind == g.dtype.kind == "i" else w)
        assert why is None, f"output {i}: {why}\nge:   {g!r}\nwant: {w!r}"


# ---------------------------------------------------------------------------------------------
# The wrong results the issue lists
# ---------------------------------------------------------------------------------------------

SLICE_RULE = (
    "ONNX clamps a negative-step Slice's start to [0, dim-1] (start -4 of dim 3 is 0, "
    "giving [1]); ge follows numpy's rule and gives []: the ONNX Slice translator "
    "(crates/ge-onnx/src/ops/shape.rs) or StridedSlice's kernel"
)


def test_slice_negative_step_start_below_minus_dim():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    inits = [
        ("starts", np.array([-4])),
        ("ends", np.array([-5])),
        ("axes", np.array([0])),
        ("steps", np.array([-1])),
    ]
    m = model("Slice", {"x": x}, inits)
    assert_same(run_ort(m, {"x": x}), [np.array([1.0], np.float32)])  # the reference is right
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def test_slice_negative_step_in_range():
    """The same Slice with in-range starts (what works today, kept working)."""
    x = np.arange(5, dtype=np.float32)
    inits = [
        ("starts", np.array([-1])),
        ("ends", np.array([-6])),
        ("axes", np.array([0])),
        ("steps", np.array([-2])),
    ]
    m = model("Slice", {"x": x}, inits)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def test_slice_of_bool():
    """Fixed: the Slice translator emits GE's StridedSliceV2 (bool in its dtype list), which has
    a CPU kernel (crates/ge-runtime/src/kernels/shape/slice.rs)."""
    x = np.array([[True, False, True], [False, False, True]])
    inits = [("starts", np.array([0, 1])), ("ends", np.array([2, 3])), ("axes", np.array([0, 1]))]
    m = model("Slice", {"x": x}, inits)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))
    # A negative step over a bool tensor, the start below -dim (clamped as ONNX does).
    inits = [("starts", np.array([-9])), ("ends", np.array([-9])), ("axes", np.array([1])),
             ("steps", np.array([-1]))]
    m = model("Slice", {"x": x}, inits)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def _maxpool_indices(x: np.ndarray) -> Any:
    return model("MaxPool", {"x": x}, n_out=2, kernel_shape=[2, 1], pads=[1, 0, 0, 0], strides=[2, 1])


def test_maxpool_indices_over_minus_inf():
    x = np.full((2, 1, 1, 1), -np.inf, np.float32)
    m = _maxpool_indices(x)
    got, want = run_ge(m, {"x": x}), run_ort(m, {"x": x})
    np.testing.assert_array_equal(want[1].ravel(), [0, 1])
    assert_same(got, want)


def test_maxpool_indices_agree_with_values_over_nan():
    x = np.array([1.0, np.nan, -np.inf, 2.0], np.float32).reshape(4, 1, 1, 1)
    m = model("MaxPool", {"x": x}, n_out=2, kernel_shape=[2, 1], pads=[1, 0, 0, 0], strides=[1, 1])
    y, idx = run_ge(m, {"x": x})
    flat = x.ravel()
    assert ((idx >= 0) & (idx < flat.size)).all(), idx
    np.testing.assert_array_equal(flat[idx.ravel()], y.ravel())  # NaN where NaN


def test_maxpool_indices_finite():
    """Indices of ordinary windows (what works today)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 5, 4)).astype(np.float32)
    m = model("MaxPool", {"x": x}, n_out=2, kernel_shape=[2, 3], pads=[1, 1, 0, 1], strides=[2, 1])
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def _batchnorm(rank: int) -> tuple:
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((2, 3) + (2,) * (rank - 2)).astype(np.float32)
    c = 3
    inits = [
        ("scale", rng.standard_normal(c).astype(np.float32)),
        ("b", rng.standard_normal(c).astype(np.float32)),
        ("mean", rng.standard_normal(c).astype(np.float32)),
        ("var", rng.random(c).astype(np.float32) + 0.5),
    ]
    return model("BatchNormalization", {"x": x}, inits, epsilon=1e-5), {"x": x}


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_batchnorm_ranks_that_work(rank):
    m, feeds = _batchnorm(rank)
    assert_same(run_ge(m, feeds), run_ort(m, feeds))


@pytest.mark.parametrize("rank", [6, 7])
def test_batchnorm_rank_6_and_more(rank):
    m, feeds = _batchnorm(rank)
    assert_same(run_ge(m, feeds), run_ort(m, feeds))


def test_depthwise_conv_padding_nan_weight():
    x = np.array([[[1.0, 2.0], [3.0, 4.0]]], np.float32)
    w = np.array([0.5, np.nan], np.float32).reshape(2, 1, 1)
    m = model("Conv", {"x": x}, [("w", w)], group=2, pads=[0, 2], kernel_shape=[1])
    want = run_reference(m, {"x": x})
    assert np.isnan(want[0][0, 1]).all()
    assert_same(run_ge(m, {"x": x}), want)


# ---------------------------------------------------------------------------------------------
# NaN and infinity conventions: the ONNX reference implementation's rule, per op
# ---------------------------------------------------------------------------------------------

SPECIAL = np.array([[1.0, np.nan, -2.0], [-np.inf, -np.inf, 3.0], [np.inf, 0.0, np.nan]], np.float32)


def test_convention_reducemax_propagates_nan():
    """ReduceMax/ReduceMin: a NaN in the reduced set gives NaN (numpy's maximum.reduce, the
    reference; onnxruntime skips NaN); -inf is an ordinary value."""
    for op in ("ReduceMax", "ReduceMin"):
        m = model(op, {"x": SPECIAL}, [("axes", np.array([1]))], keepdims=0)
        want = run_reference(m, {"x": SPECIAL})
        np.testing.assert_array_equal(np.isnan(want[0]), [True, False, True])
        assert_same(run_ge(m, {"x": SPECIAL}), want)


def test_convention_maxpool_follows_reference_on_nan():
    x = SPECIAL.reshape(1, 1, 3, 3)
    m = model("MaxPool", {"x": x}, kernel_shape=[2, 2], strides=[1, 1])
    want = run_reference(m, {"x": x})
    np.testing.assert_array_equal(want[0].ravel(), [1.0, 3.0, np.inf, 3.0])
    assert_same(run_ge(m, {"x": x}), want)


def test_convention_maxpool_minus_inf():
    """MaxPool: -inf is an ordinary value (an all -inf window gives -inf) and +inf wins."""
    x = np.array([[-np.inf, -np.inf, 1.0], [np.inf, -np.inf, -np.inf]], np.float32).reshape(1, 1, 2, 3)
    m = model("MaxPool", {"x": x}, kernel_shape=[1, 2], strides=[1, 1])
    want = run_reference(m, {"x": x})
    np.testing.assert_array_equal(want[0].ravel(), [-np.inf, 1.0, np.inf, -np.inf])
    assert_same(run_ge(m, {"x": x}), want)


def test_convention_clip_keeps_nan():
    """Clip: NaN stays NaN, infinities are clipped."""
    m = model("Clip", {"x": SPECIAL}, [("lo", np.array(-1.0, np.float32)), ("hi", np.array(2.0, np.float32))])
    want = run_reference(m, {"x": SPECIAL})
    assert np.isnan(want[0][0, 1]) and want[0][1, 0] == -1.0 and want[0][2, 0] == 2.0
    assert_same(run_ge(m, {"x": SPECIAL}), want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_convention_reducemean_of_empty_set_is_nan():
    """ReduceMean over an empty axis: 0/0 = NaN (the reference; onnxruntime gives 0)."""
    x = np.zeros((2, 0, 3), np.float32)
    m = model("ReduceMean", {"x": x}, [("axes", np.array([1]))], keepdims=0)
    want = run_reference(m, {"x": x})
    assert want[0].shape == (2, 3) and np.isnan(want[0]).all()
    assert_same(run_ge(m, {"x": x}), want)


@pytest.mark.parametrize(
    "op,identity", [("ReduceMax", -np.inf), ("ReduceMin", np.inf), ("ReduceSum", 0.0), ("ReduceProd", 1.0)]
)
def test_convention_reductions_of_empty_set(op, identity):
    """The other reductions over an empty axis give their identity (the reference)."""
    x = np.zeros((2, 0), np.float32)
    m = model(op, {"x": x}, [("axes", np.array([1]))], keepdims=0)
    want = run_reference(m, {"x": x})
    np.testing.assert_array_equal(want[0], [identity, identity])
    assert_same(run_ge(m, {"x": x}), want)


# ---------------------------------------------------------------------------------------------
# Found by the differential testing
# ---------------------------------------------------------------------------------------------


def _avgpool_ceil_graph():
    # diffgen seed 72: the ceil_mode window that would start in the right padding is dropped
    # (PyTorch's rule; onnxruntime's kernel and the ONNX reference agree: width 2), but ONNX's
    # opset-18 shape inference counts it (width 3), so onnxruntime refuses the Minimum after it.
    b = GraphBuilder("avgpool_ceil")
    x = b.create_input(0, shape=[1, 1, 2, 4])
    y = AvgPoolV2(
        x, ksize=[1, 1, 2, 1], strides=[1, 1, 1, 2], pads=[0, 0, 0, 0], ceil_mode=True, exclusive=False
    )
    return b.build_and_reset([Minimum(y, b.create_const(diffgen.W(1, [1, 1, 1, 2])))])


def test_export_ceil_mode_pool_shape_inference():
    g = _avgpool_ceil_graph()
    x = diffgen.W(5, [1, 1, 2, 4])
    got = diffgen.run_ge(g, [x], "on", "1")
    assert got[0].shape == (1, 1, 1, 2)
    want = diffgen.run_onnxruntime(ge.onnx.to_bytes(g), [x])
    assert_same(got, want)


def test_pool_ceil_mode_value_matches_reference():
    """The same pool's values: ge agrees with the ONNX reference (the bug above is the export's)."""
    x = diffgen.W(5, [1, 1, 2, 4])
    m = model("AveragePool", {"x": x}, kernel_shape=[2, 1], strides=[1, 2], ceil_mode=1, opset=19)
    got = diffgen.run_ge(_avgpool_ceil_graph(), [x], "on", "1")
    assert_same(run_ge(m, {"x": x}), run_reference(m, {"x": x}))
    want = np.minimum(run_reference(m, {"x": x})[0], diffgen.W(1, [1, 1, 1, 2]))
    assert_same(got, [want])


def test_avgpool_window_over_channels_refused_when_built():
    b = GraphBuilder("avgpool_c")
    x = b.create_input(0, shape=[1, 2, 3, 3], format=Format.FORMAT_NCHW)
    with pytest.raises(ge.GeError):
        AvgPool(x, ksize=[1, 2, 3, 1], strides=[1, 1, 2, 1], padding="VALID", data_format="NHWC")


def test_avgpool_window_over_channels_refused_when_run():
    """An unshaped input defers the check to the compile, which gives the build's words."""
    b = GraphBuilder("avgpool_c")
    x = b.create_input(0, format=Format.FORMAT_NCHW)
    g = b.build_and_reset(
        [AvgPool(x, ksize=[1, 2, 3, 1], strides=[1, 1, 2, 1], padding="VALID", data_format="NHWC")]
    )
    s = Session()
    s.add_graph(0, g)
    with pytest.raises(ge.GeError, match="ksize over N or C"):
        s.run_graph(0, [np.zeros((1, 2, 3, 3), np.float32)])


# --- found by the import-side differential testing (onnxgen.py) -------------------------------


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_depth_space_blocksize_1(op):
    x = diffgen.W(3, [1, 4, 2, 3])
    m = model(op, {"x": x}, blocksize=1, opset=21)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def test_instance_norm_rank_3():
    x = diffgen.W(4, [2, 3, 5])
    inits = [("s", diffgen.W(5, [3])), ("b", diffgen.W(6, [3]))]
    m = model("InstanceNormalization", {"x": x}, inits, epsilon=1e-5, opset=21)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def test_instance_norm_rank_4():
    """Rank 4 (what works today, kept working)."""
    x = diffgen.W(4, [2, 3, 5, 2])
    inits = [("s", diffgen.W(5, [3])), ("b", diffgen.W(6, [3]))]
    m = model("InstanceNormalization", {"x": x}, inits, epsilon=1e-5, opset=21)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def _topk_then(op: str, **attrs: Any) -> Any:
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1),
        helper.make_node(op, ["v"], ["y"], **attrs),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(np.array([2], np.int64), "k")],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_topk_output_dims_at_import():
    x = diffgen.W(7, [3, 5])
    m = _topk_then("Hardmax", axis=-1)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))


def test_topk_values_and_indices():
    """TopK itself (what works today)."""
    x = diffgen.W(7, [3, 5])
    m = model("TopK", {"x": x}, [("k", np.array([2], np.int64))], n_out=2, axis=-1, opset=21)
    assert_same(run_ge(m, {"x": x}), run_ort(m, {"x": x}))
