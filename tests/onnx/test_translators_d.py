"""ONNX translators of issue 22, part D: Cast of the low-precision types GE's Cast prototype
lacks (the ge-rs extension of its dtype lists), Quantize/DequantizeLinear on 4- and 2-bit
integers, Reshape allowzero=1 with a run-time shape, SpaceToDepth's mode (opset 28), Attention's
sliding window (opset 25), TfIdfVectorizer and Resize antialias. Each model is built with
onnx.helper, loaded with ge.onnx.load, run in a Session (both graph modes) and compared with
onnx's ReferenceEvaluator."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from ge.graph.types import DataType  # noqa: E402
from onnx_harness import check_model, graph_model, node_model, reference, run_graph, vi  # noqa: E402

rng = np.random.default_rng(2205)
MODES = ("on", "off")


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def refuse(m, match, error=ge.TranslationError):
    with pytest.raises(error, match=match):
        ge.onnx.load(m.SerializeToString())


# ------------------------------------------------------------------ Cast: the ge-rs extension

# (ONNX type, ml_dtypes type): the 4- and 2-bit integers, whose zero points the quantization
# translators move only after casting them.
EXT = [
    (TensorProto.UINT4, ml_dtypes.uint4),
    (TensorProto.INT4, ml_dtypes.int4),
    (TensorProto.INT2, ml_dtypes.int2),
    (TensorProto.UINT2, ml_dtypes.uint2),
]
EXT_IDS = [TensorProto.DataType.Name(t) for t, _ in EXT]


def test_cast_prototype_lists_the_extension_after_ges_types():
    from ge.ops import get_op  # the operator library, as the builder checks it

    proto = get_op("Cast")
    x_types = proto["inputs"][0]["type"]
    y_types = proto["outputs"][0]["type"]
    ext_in = ["DT_INT4", "DT_UINT4", "DT_INT2", "DT_UINT2", "DT_FLOAT8_E8M0", "DT_FLOAT8_E4M3FNUZ",
              "DT_FLOAT8_E5M2FNUZ"]
    # GE's list first (it ends with float4_e2m1 in, int4 out), the extension after it.
    assert x_types[-len(ext_in) - 1:] == ["DT_FLOAT4_E2M1"] + ext_in
    assert y_types[-len(ext_in):] == ["DT_INT4"] + ext_in[1:]
    assert "DT_BOOL" in x_types and "DT_HIFLOAT8" in y_types


@pytest.mark.parametrize("onnx_t,ml", EXT, ids=EXT_IDS)
@pytest.mark.parametrize("block", [0, 2])
def test_dequantize_sub_byte_ints_per_axis_and_blocked(onnx_t, ml, block):
    lo, hi = (-2, 1) if onnx_t == TensorProto.INT2 else (0, 3) if onnx_t == TensorProto.UINT2 else \
        (-8, 7) if onnx_t == TensorProto.INT4 else (0, 15)
    q = rng.integers(lo, hi + 1, size=(3, 4)).astype(ml)
    nblocks = 4 // block if block else 4
    shape = (3, nblocks) if block else (4,)
    scale = (rng.random(shape) + 0.5).astype(np.float32)
    zp = rng.integers(lo, hi + 1, size=shape).astype(ml)
    attrs = {"axis": 1, **({"block_size": block} if block else {})}
    m = graph_model([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)], [],
                    [vi("y", TensorProto.FLOAT, (3, 4))],
                    [numpy_helper.from_array(q, "q"), numpy_helper.from_array(scale, "s"),
                     numpy_helper.from_array(zp, "z")], opset=25, ir_version=11)
    check_model(m, {}, 0, 0, modes=MODES)


@pytest.mark.parametrize("onnx_t,ml", EXT, ids=EXT_IDS)
def test_quantize_to_sub_byte_ints_per_axis_with_zero_point(onnx_t, ml):
    from onnx.reference import ReferenceEvaluator

    x = (randn(3, 4) * 4).astype(np.float32)
    scale = np.array([0.5, 1.0, 2.0], np.float32)
    lo = -1 if onnx_t in (TensorProto.INT2, TensorProto.INT4) else 1
    zp = np.array([lo, 0, 1], np.int8).astype(ml)
    m = graph_model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=0)],
                    [vi("x", TensorProto.FLOAT, (3, 4))], [vi("q", onnx_t, (3, 4))],
                    [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")],
                    opset=25, ir_version=11)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    g = ge.onnx.load(m.SerializeToString())
    for mode in MODES:
        (q,) = run_graph(g, [x], mode)
        np.testing.assert_array_equal(q, np.asarray(want).view(np.uint8), err_msg=mode)


# --------------------------------------------------------- Reshape allowzero, run-time shape


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reshape_allowzero_runtime_shape_matches_reference(data):
    rank = data.draw(st.integers(1, 4))
    target = [data.draw(st.integers(0, 3)) for _ in range(rank)]
    n = int(np.prod(target))
    if n:
        # a shape without 0: one entry may be -1
        if data.draw(st.booleans()):
            target[data.draw(st.integers(0, rank - 1))] = -1
        x = randn(n)
    else:
        # empty: the input is any empty tensor, possibly of other dims
        x = randn(*data.draw(st.sampled_from([(0,), (0, 3), (2, 0, 1)])))
    s = np.array(target, np.int64)
    m = node_model("Reshape", [("x", x), ("s", s)], allowzero=1, opset=21)
    check_model(m, {"x": x, "s": s}, 0, 0, modes=MODES)


def test_reshape_allowzero_keeps_zero_where_input_dim_is_not():
    # The conformance case: GE's copy rule would give [3, 4, 4].
    x = np.zeros((0, 3, 4), np.float32)
    s = np.array([3, 4, 0], np.int64)
    m = node_model("Reshape", [("x", x), ("s", s)], allowzero=1, opset=21)
    (y,) = check_model(m, {"x": x, "s": s}, 0, 0, modes=MODES)
    assert y.shape == (3, 4, 0)


def test_reshape_allowzero_zero_and_minus_one_is_an_error():
    x = np.zeros((0, 3), np.float32)
    m = node_model("Reshape", [("x", x)], [("s", np.array([0, -1], np.int64))], allowzero=1, opset=21)
    refuse(m, "allowzero=1 forbids -1")


# ------------------------------------------------------------------------ SpaceToDepth mode


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("bs,shape", [(2, (1, 3, 4, 6)), (3, (2, 2, 6, 3)), (1, (1, 2, 2, 2))])
def test_space_to_depth_mode_matches_reference(mode, bs, shape):
    x = randn(*shape)
    m = node_model("SpaceToDepth", [("x", x)], blocksize=bs, mode=mode, opset=28)
    check_model(m, {"x": x}, 0, 0, modes=MODES)


def test_space_to_depth_bad_mode_and_unknown_channels_are_errors():
    x = randn(1, 2, 4, 4)
    refuse(node_model("SpaceToDepth", [("x", x)], blocksize=2, mode="XYZ", opset=28), "not DCR or CRD")
    m = graph_model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode="CRD")],
                    [vi("x", TensorProto.FLOAT, (1, "c", 4, 4))], [vi("y", TensorProto.FLOAT, None)],
                    opset=28, ir_version=None)
    refuse(m, "not supported: .*channel count unknown")


# --------------------------------------------------------------- Attention's sliding window


@pytest.mark.parametrize("left,right", [(1, -1), (0, 0), (-1, 1), (2, 3)])
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("past", [False, True])
def test_attention_window_matches_reference(left, right, causal, past):
    b, h, sq, skv, d = 2, 2, 4, 5, 8
    feeds = {"q": randn(b, h, sq, d), "k": randn(b, h, skv, d), "v": randn(b, h, skv, d)}
    names = ["q", "k", "v"]
    if past:
        feeds.update(pk=randn(b, h, 3, d), pv=randn(b, h, 3, d))
        names += ["", "pk", "pv"]
    attrs = {"is_causal": causal, "left_window_size": left, "right_window_size": right}
    n_out = 3 if past else 1
    m = node_model("Attention", list(feeds.items()), node_inputs=names, n_out=n_out, opset=25, **attrs)
    check_model(m, feeds, 1e-5, 1e-6, modes=MODES)


def test_attention_window_with_nonpad_kv_seqlen_matches_reference():
    b, h, sq, skv, d = 2, 2, 3, 6, 4
    feeds = {"q": randn(b, h, sq, d), "k": randn(b, h, skv, d), "v": randn(b, h, skv, d),
             "n": np.array([4, 6], np.int64)}
    m = node_model("Attention", list(feeds.items()), node_inputs=["q", "k", "v", "", "", "", "n"],
                   opset=25, is_causal=1, left_window_size=1)
    check_model(m, feeds, 1e-5, 1e-6, modes=MODES)


def test_attention_window_below_minus_one_is_an_error():
    x = randn(1, 1, 2, 4)
    m = node_model("Attention", [("q", x), ("k", x), ("v", x)], opset=25, left_window_size=-2)
    refuse(m, "left_window_size -2")


# -------------------------------------------------------------------------- TfIdfVectorizer


POOL = dict(ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6],
            pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("min_n,max_n,skip", [(1, 1, 0), (2, 2, 0), (1, 2, 2), (2, 2, 5)])
@pytest.mark.parametrize("shape", [(12,), (2, 6)])
@pytest.mark.parametrize("weights", [False, True])
def test_tfidf_vectorizer_matches_reference(mode, min_n, max_n, skip, shape, weights):
    x = rng.integers(2, 9, size=shape).astype(np.int32)
    attrs = dict(POOL, mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skip)
    expected = None
    if weights:
        attrs["weights"] = [float(v) for v in rng.random(7) + 0.5]
    elif mode != "TF":
        # onnx's reference needs weights outside TF: without them IDF is count > 0, TFIDF the count.
        (tf,) = reference(node_model("TfIdfVectorizer", [("x", x)], opset=9, **dict(attrs, mode="TF")),
                          {"x": x})
        expected = [(tf > 0).astype(np.float32) if mode == "IDF" else tf]
    m = node_model("TfIdfVectorizer", [("x", x)], opset=9, **attrs)
    check_model(m, {"x": x}, 1e-6, 1e-6, modes=MODES, expected=expected)


def test_tfidf_vectorizer_permuted_indexes_and_int64_input():
    x = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int64)
    attrs = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=1,
                 ngram_counts=[0, 3], ngram_indexes=[5, 2, 0, 1, 4], pool_int64s=[1, 3, 7, 1, 3, 6, 7])
    m = node_model("TfIdfVectorizer", [("x", x)], opset=9, **attrs)
    check_model(m, {"x": x}, 0, 0, modes=MODES)


def test_tfidf_vectorizer_refusals_name_the_cause():
    x = np.array([1, 2], np.int64)
    base = dict(min_gram_length=1, max_gram_length=1, max_skip_count=0, ngram_counts=[0],
                ngram_indexes=[0])
    refuse(node_model("TfIdfVectorizer", [("x", x)], opset=9, mode="TF", pool_strings=["a"], **base),
           "not supported: .*pool_strings")
    refuse(node_model("TfIdfVectorizer", [("x", x)], opset=9, mode="BM25", pool_int64s=[1], **base),
           "mode 'BM25'")
    refuse(node_model("TfIdfVectorizer", [("x", x.astype(np.float32))], opset=9, mode="TF",
                      pool_int64s=[1], **base), "not supported: .*TfIdfVectorizer on DT_FLOAT")


# ---------------------------------------------------------------------------- Resize antialias


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("coord", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                   "half_pixel_symmetric"])
@pytest.mark.parametrize("exclude", [0, 1])
def test_resize_antialias_scales_matches_reference(mode, coord, exclude):
    x = randn(1, 2, 9, 7)
    scales = np.array([1, 1, 0.6, 0.45], np.float32)
    m = node_model("Resize", [("x", x)], [("roi", np.zeros(0, np.float32)), ("scales", scales)],
                   opset=18, mode=mode, antialias=1, coordinate_transformation_mode=coord,
                   exclude_outside=exclude)
    check_model(m, {"x": x}, 1e-4, 1e-5, modes=MODES)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_resize_antialias_sizes_axes_and_policy_match_reference(policy):
    x = randn(2, 10, 8)
    sizes = np.array([4, 7], np.int64)
    m = node_model("Resize", [("x", x)], [("roi", np.zeros(0, np.float32)), ("scales", np.zeros(0, np.float32)),
                                          ("sizes", sizes)],
                   opset=18, mode="linear", antialias=1, axes=[2, 1], keep_aspect_ratio_policy=policy)
    check_model(m, {"x": x}, 1e-4, 1e-5, modes=MODES)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("what", ["scales", "sizes"])
def test_resize_antialias_runtime_scales_and_sizes_match_reference(mode, what):
    # The conformance cases feed scales/sizes as graph inputs: the weights are built at run time.
    x = randn(1, 3, 11, 8)
    v = np.array([1, 1, 0.55, 0.8], np.float32) if what == "scales" else np.array([1, 3, 5, 3], np.int64)
    names = ["x", "roi", "scales"] + (["sizes"] if what == "sizes" else [])
    inits = [("roi", np.zeros(0, np.float32))] + ([("scales", np.zeros(0, np.float32))] if what == "sizes" else [])
    m = node_model("Resize", [("x", x), (what, v)], inits, node_inputs=names, opset=18, mode=mode, antialias=1)
    check_model(m, {"x": x, what: v}, 1e-4, 1e-5, modes=MODES)


def test_resize_antialias_upsampling_equals_plain_linear():
    x = randn(1, 1, 3, 4)
    scales = np.array([1, 1, 2.0, 1.5], np.float32)
    inits = [("roi", np.zeros(0, np.float32)), ("scales", scales)]
    aa = node_model("Resize", [("x", x)], inits, opset=18, mode="linear", antialias=1)
    plain = node_model("Resize", [("x", x)], inits, opset=18, mode="linear")
    (a,) = check_model(aa, {"x": x}, 1e-5, 1e-6, modes=MODES)
    (p,) = check_model(plain, {"x": x}, 1e-5, 1e-6)
    np.testing.assert_allclose(a, p, rtol=1e-5, atol=1e-6)


def test_resize_antialias_refusals_name_the_cause():
    x = randn(1, 1, 4, 4)
    inits = [("roi", np.zeros(0, np.float32)), ("scales", np.array([1, 1, 0.5, 0.5], np.float32))]
    refuse(node_model("Resize", [("x", x)], inits, opset=18, mode="nearest", antialias=1),
           "antialias applies to the linear and cubic modes")
    refuse(node_model("Resize", [("x", x.astype(np.float64))], inits, opset=18, mode="linear", antialias=1),
           "not supported: .*Resize antialias on DT_DOUBLE")
    crop = node_model("Resize", [("x", x)], [("roi", np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32)),
                                             ("scales", np.array([1, 1, 0.5, 0.5], np.float32))],
                      opset=18, mode="linear", antialias=1, coordinate_transformation_mode="tf_crop_and_resize")
    refuse(crop, "not supported: .*Resize antialias with coordinate_transformation_mode")
