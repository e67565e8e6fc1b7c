"""ONNX shape and index operators through ge.onnx.load, checked against onnx's
ReferenceEvaluator: Shape, Reshape, Concat, Slice, Transpose, Size, Gather, Unsqueeze, Squeeze,
Split, Pad, ConstantOfShape, GatherElements, GatherND, ScatterND, OneHot, Compress, NonZero,
TopK, Unique, EyeLike, Dropout, CenterCropPad, ReverseSequence, Resize, Upsample (and the direct
entries Expand, Tile, ScatterElements, Trilu, Where, DepthToSpace)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import ge
import ge.onnx
from onnx_harness import check_model, graph_inputs, node_model, run_ge
from onnx import TensorProto, helper, numpy_helper

hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st



def model(op, inputs, attrs=None, consts=None, n_out=1, opset=18, out_names=None):
    """One-node model: `inputs` are (name, array) fed at run time, `consts` (name, array)
    initializers; input names in node order are given by the concatenation order of `names`."""
    return _model(op, None, inputs, consts or [], attrs or {}, n_out, opset, out_names)


def _model(op, node_inputs, inputs, consts, attrs, n_out, opset, out_names=None):
    return node_model(op, inputs, consts, node_inputs=node_inputs, n_out=n_out, outputs=out_names, opset=opset,
                      **attrs)


def check(m, feeds, rtol=1e-5, atol=1e-6):
    """ge against the ReferenceEvaluator (``feeds`` in input order): same dtypes and shapes, every
    value within the tolerance."""
    return check_model(m, dict(zip(graph_inputs(m), feeds)), rtol, atol, exact_ints=False)


def rnd(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


I = lambda *v: np.array(v, dtype=np.int64)


# --- Shape, Size, Reshape, Concat, Transpose -------------------------------------------------


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": -1}, {"start": -2, "end": 10}, {"start": 3, "end": 1}])
def test_shape(attrs):
    x = rnd(2, 3, 4)
    check(model("Shape", [("x", x)], attrs), [x])


def test_size():
    x = rnd(2, 3, 4)
    check(model("Size", [("x", x)]), [x])


@pytest.mark.parametrize("shape", [I(4, 0, -1), I(0, 12), I(-1), I(2, 3, 4), I(1, 1, -1)])
def test_reshape_constant_and_runtime(shape):
    x = rnd(2, 3, 4)
    check(model("Reshape", [("x", x)], consts=[("s", shape)]), [x])
    check(model("Reshape", [("x", x), ("s", shape)]), [x, shape])


def test_reshape_allowzero():
    x = np.zeros((0, 3), np.float32)
    check(model("Reshape", [("x", x)], {"allowzero": 1}, consts=[("s", I(3, 0))]), [x])
    # A run-time shape: the 0 stays a 0 (GE's Reshape would copy the input dim).
    m = model("Reshape", [("x", x), ("s", I(3, 0))], {"allowzero": 1})
    (y,) = check(m, [x, I(3, 0)])
    assert y.shape == (3, 0)
    m = model("Reshape", [("x", x)], {"allowzero": 1}, consts=[("s", I(0, -1))])
    with pytest.raises(ge.TranslationError, match="allowzero=1 forbids -1 beside a 0"):
        ge.onnx.load(m.SerializeToString())


def test_reshape_opset1_attribute():
    x = rnd(2, 6)
    node = helper.make_node("Reshape", ["x"], ["y"], shape=[3, 4])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 4)])
    (y,) = run_ge(m, [x])
    np.testing.assert_array_equal(y, x.reshape(3, 4))


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat(axis):
    a, b = rnd(2, 3), rnd(2, 3, seed=1)
    check(model("Concat", [("a", a), ("b", b)], {"axis": axis}), [a, b])


def test_concat_needs_axis():
    a = rnd(2, 3)
    with pytest.raises(ge.TranslationError, match="needs the attribute 'axis'"):
        ge.onnx.load(model("Concat", [("a", a)]).SerializeToString())


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(perm):
    x = rnd(2, 3, 4)
    check(model("Transpose", [("x", x)], {} if perm is None else {"perm": perm}), [x])


# --- Slice ---------------------------------------------------------------------------------


SLICES = [
    (I(0, 1), I(2, 3), None, None),
    (I(1), I(1000), I(1), None),
    (I(-1), I(-1000), I(0), I(-1)),
    (I(20, 10, 4), I(0, 0, 1), I(0, 1, 2), I(-1, -3, -2)),
    (I(0), I(-1), I(-2), None),
    (I(1000), I(1000), I(1), I(1)),
    (I(0, 0), I(3, 10), I(0, 2), I(1, 3)),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice(starts, ends, axes, steps):
    x = rnd(20, 10, 5)
    extra = [("axes", axes)] if axes is not None else []
    if steps is not None:
        if axes is None:
            extra = [("axes", np.arange(len(starts), dtype=np.int64))]
        extra.append(("steps", steps))
    consts = [("starts", starts), ("ends", ends)] + extra
    check(model("Slice", [("x", x)], consts=consts), [x])
    # Every shape-like input at run time.
    check(model("Slice", [("x", x)] + consts), [x] + [a for _, a in consts])


def test_slice_opset1_attributes():
    x = rnd(4, 5)
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[3, 1000], axes=[0, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    (y,) = run_ge(m, [x])
    np.testing.assert_array_equal(y, x[1:3, -3:])


def test_slice_zero_step_is_an_error():
    x = rnd(4)
    m = model("Slice", [("x", x)], consts=[("s", I(0)), ("e", I(2)), ("a", I(0)), ("st", I(0))])
    with pytest.raises(ge.TranslationError, match="steps must not be 0"):
        ge.onnx.load(m.SerializeToString())


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.data(),
)
def test_slice_property(dims, data):
    x = rnd(*dims)
    r = len(dims)
    axes = data.draw(st.lists(st.integers(-r, r - 1), min_size=1, max_size=r, unique_by=lambda a: a % r))
    n = len(axes)
    starts = I(*data.draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n)))
    ends = I(*data.draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n)))
    steps = I(*data.draw(st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=n, max_size=n)))
    # ONNX's spec clamps a negative-step start below -dim to 0; numpy (the reference) and GE's
    # StridedSlice to -1: keep to the range where they agree.
    for k, a in enumerate(axes):
        if steps[k] < 0 and starts[k] < -dims[a]:
            starts[k] = -dims[a]
    consts = [("starts", starts), ("ends", ends), ("axes", I(*axes)), ("steps", steps)]
    check(model("Slice", [("x", x)], consts=consts), [x])


# --- Gather, Unsqueeze, Squeeze, Split --------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_negative_indices(axis):
    x = rnd(3, 4, 5)
    idx = np.array([[0, -1], [1, -2]], np.int64)
    check(model("Gather", [("x", x), ("i", idx)], {"axis": axis}), [x, idx])


@pytest.mark.parametrize("axes", [I(0), I(-1), I(3, 1), I(0, 4, 2)])
def test_unsqueeze(axes):
    x = rnd(2, 3)
    check(model("Unsqueeze", [("x", x)], consts=[("a", axes)]), [x])
    check(model("Unsqueeze", [("x", x), ("a", axes)]), [x, axes])


def test_unsqueeze_opset11_attribute():
    x = rnd(2, 3)
    check(model("Unsqueeze", [("x", x)], {"axes": [0, -1]}, opset=11), [x])


@pytest.mark.parametrize("axes", [None, I(0), I(-1), I(2, 0)])
def test_squeeze(axes):
    x = rnd(1, 3, 1)
    consts = [] if axes is None else [("a", axes)]
    check(model("Squeeze", [("x", x)], consts=consts), [x])
    if axes is not None:
        check(model("Squeeze", [("x", x), ("a", axes)]), [x, axes])


def test_squeeze_non_unit_dim_is_an_error():
    x = rnd(2, 3)
    with pytest.raises(ge.TranslationError, match="is not 1"):
        ge.onnx.load(model("Squeeze", [("x", x)], consts=[("a", I(0))]).SerializeToString())


def test_unsqueeze_needs_constant_or_known_length_axes():
    node = helper.make_node("Unsqueeze", ["x", "a"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                        helper.make_tensor_value_info("a", TensorProto.INT64, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ge.TranslationError, match="number of run-time axes"):
        ge.onnx.load(m.SerializeToString())


@pytest.mark.parametrize("split", [None, I(2, 4), I(1, 0, 5)])
def test_split(split):
    x = rnd(3, 6)
    n = 2 if split is None else len(split)
    consts = [] if split is None else [("s", split)]
    check(model("Split", [("x", x)], {"axis": -1}, consts=consts, n_out=n), [x])
    if split is not None:
        check(model("Split", [("x", x), ("s", split)], {"axis": 1}, n_out=n), [x, split])


def test_split_num_outputs_uneven():
    x = rnd(7, 2)
    check(model("Split", [("x", x)], {"num_outputs": 3}, n_out=3), [x])


def test_split_old_opsets():
    x = rnd(6)
    check(model("Split", [("x", x)], {"split": [2, 4]}, n_out=2, opset=11), [x])
    check(model("Split", [("x", x)], n_out=3, opset=13), [x])
    with pytest.raises(ge.TranslationError, match="does not divide"):
        ge.onnx.load(model("Split", [("x", x)], n_out=4, opset=13).SerializeToString())


# --- Pad, ConstantOfShape, CenterCropPad ------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(mode):
    x = rnd(3, 4)
    pads = I(1, 2, 2, 1)
    check(model("Pad", [("x", x)], {"mode": mode}, consts=[("p", pads)]), [x])
    check(model("Pad", [("x", x), ("p", pads)], {"mode": mode}), [x, pads])


def test_pad_value_axes_and_negative():
    x = rnd(3, 4, 5)
    v = np.array(1.5, np.float32)
    # Negative pads crop (the reference evaluator refuses them: numpy).
    (y,) = run_ge(model("Pad", [("x", x)], consts=[("p", I(1, -1, 2, 0)), ("v", v), ("a", I(0, -1))]), [x])
    want = np.pad(x, [(1, 2), (0, 0), (0, 0)], constant_values=1.5)[:, :, 1:]
    np.testing.assert_array_equal(y, want)
    check(model("Pad", [("x", x), ("p", I(1, 2, 0, 3)), ("v", v), ("a", I(2, 1))]),
          [x, I(1, 2, 0, 3), v, I(2, 1)])


def test_pad_opset2_attributes():
    x = rnd(2, 3)
    check(model("Pad", [("x", x)], {"pads": [0, 1, 1, 0], "value": 2.0}, opset=2), [x])


def test_pad_unknown_mode():
    x = rnd(2)
    with pytest.raises(ge.TranslationError, match="Pad mode"):
        ge.onnx.load(model("Pad", [("x", x)], {"mode": "nope"}, consts=[("p", I(1, 1))]).SerializeToString())


@pytest.mark.parametrize("value", [None, np.array([7], np.int32), np.array([2.5], np.float64)])
def test_constant_of_shape(value):
    s = I(2, 3)
    attrs = {} if value is None else {"value": numpy_helper.from_array(value, "v")}
    check(model("ConstantOfShape", [("s", s)], attrs), [s])


@pytest.mark.parametrize("shape,axes", [(I(3, 6), None), (I(5, 2), None), (I(2, 7), [-1, 0])])
def test_center_crop_pad(shape, axes):
    x = rnd(4, 4)
    attrs = {} if axes is None else {"axes": axes}
    check(model("CenterCropPad", [("x", x)], attrs, consts=[("s", shape)]), [x])
    check(model("CenterCropPad", [("x", x), ("s", shape)], attrs), [x, shape])


# --- Gather/Scatter family ------------------------------------------------------------------


def test_gather_elements_negative():
    x = rnd(3, 4)
    i = np.array([[0, -1, 2, 0], [-3, 1, 0, -4], [3, 3, -1, 1]], np.int64)
    check(model("GatherElements", [("x", x), ("i", i)], {"axis": 1}), [x, i])
    i0 = np.array([[0, -1, 2, 1], [-3, 1, 0, 0], [1, 1, 1, -2]], np.int64)
    check(model("GatherElements", [("x", x), ("i", i0)], {"axis": 0}), [x, i0])


@pytest.mark.parametrize("b", [0, 1])
def test_gather_nd(b):
    x = rnd(2, 3, 4)
    i = np.array([[[1, 2]], [[0, -1]]], np.int64) if b == 1 else np.array([[1, 2], [0, -1]], np.int64)
    check(model("GatherND", [("x", x), ("i", i)], {"batch_dims": b}), [x, i])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    x = rnd(4, 3)
    i = np.array([[1], [-1]], np.int64) if reduction == "none" else np.array([[1], [1], [-1]], np.int64)
    u = rnd(len(i), 3, seed=2)
    attrs = {} if reduction == "none" else {"reduction": reduction}
    check(model("ScatterND", [("x", x), ("i", i), ("u", u)], attrs, opset=18), [x, i, u])


def test_scatter_elements_direct():
    x = rnd(3, 3)
    i = np.array([[1, 0, 2]], np.int64)
    u = rnd(1, 3, seed=3)
    check(model("ScatterElements", [("x", x), ("i", i), ("u", u)], {"axis": 0, "reduction": "add"}), [x, i, u])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    idx = np.array([[0, -1], [5, 2]], np.int64)
    depth = np.array(4, np.int64)
    vals = np.array([0.5, 3.0], np.float32)
    check(model("OneHot", [("i", idx), ("d", depth), ("v", vals)], {"axis": axis}), [idx, depth, vals])


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress(axis):
    x = rnd(3, 2)
    c = np.array([True, False, True], bool) if axis != -1 else np.array([False, True], bool)
    attrs = {} if axis is None else {"axis": axis}
    check(model("Compress", [("x", x), ("c", c)], attrs), [x, c])


def test_non_zero():
    x = np.array([[1, 0, 3], [0, 0, 2]], np.float32)
    check(model("NonZero", [("x", x)]), [x])


@pytest.mark.parametrize("largest,axis", [(1, -1), (0, 0)])
def test_top_k(largest, axis):
    x = rnd(4, 5)
    k = I(3)
    check(model("TopK", [("x", x), ("k", k)], {"largest": largest, "axis": axis}, n_out=2), [x, k])
    check(model("TopK", [("x", x)], {"k": 2, "axis": axis}, n_out=2, opset=9), [x])


@pytest.mark.parametrize("sorted_", [1, 0])
def test_unique(sorted_):
    x = np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32)
    check(model("Unique", [("x", x)], {"sorted": sorted_}, n_out=4), [x])


def test_unique_with_axis():
    # Sorted slices (more cases: tests/onnx/test_translators_a.py); sorted=0 is refused.
    x = np.array([[1, 0], [0, 1], [1, 0]], np.float32)
    check(model("Unique", [("x", x)], {"axis": 0}, n_out=4), [x])
    with pytest.raises(ge.TranslationError, match="Unique with axis and sorted=0"):
        ge.onnx.load(model("Unique", [("x", x)], {"axis": 0, "sorted": 0}, n_out=4).SerializeToString())


# --- EyeLike, Dropout, ReverseSequence, direct entries ------------------------------------------


@pytest.mark.parametrize("attrs", [{}, {"k": 1}, {"k": -2, "dtype": TensorProto.INT32}])
def test_eye_like(attrs):
    x = rnd(3, 4)
    check(model("EyeLike", [("x", x)], attrs), [x])


def test_dropout_inference_and_zero_ratio():
    x = rnd(2, 3)
    check(model("Dropout", [("x", x)], n_out=2), [x])
    check(model("Dropout", [("x", x)], consts=[("r", np.array(0.0, np.float32)), ("t", np.array(True))], n_out=2), [x])
    check(model("Dropout", [("x", x)], {"ratio": 0.3}, opset=10, n_out=2), [x])


def test_dropout_training_draws_a_mask():
    # Training mode draws a random mask (distribution tests: tests/onnx/test_translators_a.py):
    # kept elements scaled by 1 / (1 - ratio), the others 0; constant or run-time inputs.
    x = np.abs(rnd(20, 30)) + 1
    r, t = np.array(0.5, np.float32), np.array(True)
    for m, feeds in [(model("Dropout", [("x", x)], consts=[("r", r), ("t", t)], n_out=2), [x]),
                     (model("Dropout", [("x", x), ("r", r), ("t", t)], n_out=2), [x, r, t])]:
        y, z = run_ge(m, feeds)
        np.testing.assert_array_equal(y != 0, z)
        np.testing.assert_allclose(y[z], x[z] * 2, rtol=1e-6)
        assert 0 < z.sum() < z.size


@pytest.mark.parametrize("time_axis", [0, 1])
def test_reverse_sequence(time_axis):
    x = rnd(4, 4, 2)
    lens = I(1, 2, 3, 4)
    attrs = {"time_axis": time_axis, "batch_axis": 1 - time_axis}
    check(model("ReverseSequence", [("x", x), ("l", lens)], attrs), [x, lens])


def test_direct_entries():
    x = rnd(3, 1)
    check(model("Expand", [("x", x)], consts=[("s", I(2, 3, 4))]), [x])
    check(model("Tile", [("x", x), ("r", I(2, 3))]), [x, I(2, 3)])
    y = rnd(4, 5)
    check(model("Trilu", [("x", y)], {"upper": 0}, consts=[("k", I(1))]), [y])
    c = np.array([[True, False]])
    check(model("Where", [("c", c), ("a", rnd(2, 2)), ("b", rnd(2, 2, seed=1))]), [c, rnd(2, 2), rnd(2, 2, seed=1)])
    z = rnd(1, 8, 2, 3)
    check(model("DepthToSpace", [("x", z)], {"blocksize": 2, "mode": "CRD"}), [z])
    check(model("SpaceToDepth", [("x", rnd(1, 2, 4, 6))], {"blocksize": 2}), [rnd(1, 2, 4, 6)])


# --- Resize, Upsample -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode,coord",
    [("nearest", "asymmetric"), ("nearest", "half_pixel"), ("linear", "half_pixel"),
     ("linear", "pytorch_half_pixel"), ("cubic", "align_corners"), ("linear", "asymmetric")],
)
def test_resize_scales(mode, coord):
    x = rnd(1, 1, 3, 4)
    sc = np.array([1, 1, 2.0, 1.5], np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    check(model("Resize", [("x", x)], attrs, consts=[("roi", np.zeros(0, np.float32)), ("sc", sc)]), [x], rtol=1e-4)


def test_resize_sizes_axes_and_crop():
    x = rnd(1, 2, 4, 4)
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear", axes=[3, 2])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]),
                                        helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    check(m, [x, I(6, 3)], rtol=1e-4)
    roi = np.array([0.1, 0.2, 0.9, 0.7], np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "axes": [2, 3],
             "extrapolation_value": 3.0}
    check(model("Resize", [("x", x)], attrs, consts=[("roi", roi), ("sc", np.array([1.5, 0.75], np.float32))]), [x],
          rtol=1e-4)


def test_resize_keep_aspect_ratio():
    x = rnd(1, 1, 4, 4)
    attrs = {"mode": "nearest", "keep_aspect_ratio_policy": "not_larger", "axes": [2, 3]}
    m = _model("Resize", ["x", "", "", "s"], [("x", x)], [("s", I(8, 10))], attrs, 1, 18)
    check(m, [x])


def test_resize_unsupported():
    x = rnd(1, 1, 4, 4)
    sc = np.array([1, 1, 0.5, 0.5], np.float32)
    # (antialias is translated for linear and cubic: tests/onnx/test_translators_d.py)
    for attrs, msg in [({"antialias": 1, "mode": "nearest"}, "antialias applies to the linear and cubic"),
                       ({"mode": "spline"}, "Resize mode")]:
        m = _model("Resize", ["x", "", "sc"], [("x", x)], [("sc", sc)], attrs, 1, 19)
        with pytest.raises(ge.TranslationError, match=msg):
            ge.onnx.load(m.SerializeToString())
    # half_pixel_symmetric is translated (the Resize kernel has the mode).
    m = _model("Resize", ["x", "", "sc"], [("x", x)], [("sc", sc)],
               {"coordinate_transformation_mode": "half_pixel_symmetric", "mode": "linear"}, 1, 19)
    check(m, [x])


def test_upsample_and_resize10():
    x = rnd(1, 1, 2, 3)
    sc = np.array([1, 1, 2, 3], np.float32)
    (y,) = run_ge(model("Upsample", [("x", x), ("sc", sc)], {"mode": "nearest"}, opset=9), [x, sc])
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(3, axis=3))
    (y7,) = run_ge(model("Upsample", [("x", x)], {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 3.0]}, opset=7), [x])
    np.testing.assert_array_equal(y7, y)
    (y10,) = run_ge(model("Resize", [("x", x)], {"mode": "nearest"}, consts=[("sc", sc)], opset=10), [x])
    np.testing.assert_array_equal(y10, y)


# --- attribute checks -------------------------------------------------------------------------


def test_unknown_attribute_is_an_error():
    x = rnd(2, 3)
    with pytest.raises(ge.TranslationError, match="attribute 'bogus'"):
        ge.onnx.load(model("Transpose", [("x", x)], {"bogus": 1}).SerializeToString())
    # An attribute that later opsets turned into an input is not accepted there.
    with pytest.raises(ge.TranslationError, match="attribute 'axes'"):
        ge.onnx.load(model("Squeeze", [("x", x)], {"axes": [0]}, opset=13).SerializeToString())


def test_scatter_nd_dynamic_data_shape_and_transpose_perm_check():
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3]),
                                        helper.make_tensor_value_info("i", TensorProto.INT64, [2, 1]),
                                        helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    x, i, u = rnd(5, 3), np.array([[-1], [2]], np.int64), rnd(2, 3, seed=4)
    check(m, [x, i, u])
    with pytest.raises(ge.TranslationError, match="negative entry"):
        ge.onnx.load(model("Transpose", [("x", rnd(2, 3))], {"perm": [-1, 0]}).SerializeToString())
