"""ONNX import of the neural-network operators (crates/ge-onnx/src/ops/ conv.rs, pool.rs, matmul.rs,
norm.rs, sampling.rs, transformer.rs): convolutions,
pooling, matrix products, normalisations, sampling, quantization. Each model is built with
onnx.helper, loaded with ge.onnx.load, run in a Session and compared with onnx's
ReferenceEvaluator."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, node_model, run_ge  # noqa: E402



def make_model(op, inputs, n_out=1, opset=21, outputs=None, inits=(), order=None, **attrs):
    """One-node model; `inputs`: list of (name, array) graph inputs; `inits`: (name, array)
    initializers (also node inputs, in order after the graph inputs unless named in `order`)."""
    return node_model(op, inputs, inits, node_inputs=order, n_out=n_out, outputs=outputs, opset=opset, **attrs)


def check(model, inputs, rtol=1e-4, atol=1e-5):
    """ge in graph mode against the ReferenceEvaluator: same dtypes and shapes, floats within the
    tolerance, integers equal."""
    return check_model(model, dict(inputs), rtol, atol, modes=("on",))


def refuse(model, match):
    with pytest.raises(ge.TranslationError, match=match):
        ge.onnx.load(model.SerializeToString())


rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------ Conv


@settings(max_examples=12, deadline=None)
@given(
    k=st.integers(1, 3),
    s=st.integers(1, 2),
    d=st.integers(1, 2),
    p=st.integers(0, 2),
    group=st.sampled_from([1, 2]),
    bias=st.booleans(),
)
def test_conv_2d(k, s, d, p, group, bias):
    x = randn(1, 4, 7, 6)
    w = randn(6, 4 // group, k, k)
    inits = [("w", w)] + ([("b", randn(6))] if bias else [])
    m = make_model(
        "Conv", [("x", x)], inits=inits, strides=[s, s], dilations=[d, d],
        pads=[p, 0, p, p], group=group,
    )
    check(m, [("x", x)])


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_auto_pad(auto_pad):
    x = randn(2, 3, 6, 5)
    w = randn(4, 3, 2, 3)
    m = make_model("Conv", [("x", x)], inits=[("w", w)], strides=[2, 1], auto_pad=auto_pad)
    check(m, [("x", x)])


def test_conv_1d_and_3d():
    x = randn(2, 3, 9)
    m = make_model("Conv", [("x", x)], inits=[("w", randn(4, 3, 3)), ("b", randn(4))],
                   strides=[2], pads=[1, 2], dilations=[2])
    check(m, [("x", x)])
    x = randn(1, 2, 5, 4, 6)
    m = make_model("Conv", [("x", x)], inits=[("w", randn(4, 1, 2, 3, 2))], group=2,
                   pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 1], kernel_shape=[2, 3, 2])
    check(m, [("x", x)])


def test_conv_errors():
    x = randn(1, 2, 4, 4)
    refuse(make_model("Conv", [("x", x)], inits=[("w", randn(2, 2, 1, 1))], foo=1),
           "attribute 'foo'")
    refuse(make_model("Conv", [("x", x)], inits=[("w", randn(2, 2, 1, 1))], strides=[1]),
           "strides")
    refuse(make_model("Conv", [("x", x)], inits=[("w", randn(2, 2, 1, 1))], group=0), "group")
    refuse(make_model("Conv", [("x", x)], inits=[("w", randn(2, 2, 1, 1))], auto_pad="X"),
           "auto_pad")


# ----------------------------------------------------------------------------- ConvTranspose


@pytest.mark.parametrize(
    "attrs",
    [
        dict(strides=[2, 2]),
        dict(strides=[3, 2], output_padding=[1, 1], pads=[1, 0, 0, 1]),
        dict(strides=[2, 2], dilations=[2, 1]),
        dict(strides=[3, 2], output_shape=[10, 8]),
        dict(strides=[2, 2], auto_pad="SAME_UPPER"),
        dict(strides=[2, 2], auto_pad="SAME_LOWER"),
    ],
)
def test_conv_transpose_2d(attrs):
    x = randn(1, 2, 3, 3)
    g = attrs.get("group", 1)
    m = make_model("ConvTranspose", [("x", x)], inits=[("w", randn(2, 4 // g, 3, 3)),
                                                       ("b", randn(4))], **attrs)
    check(m, [("x", x)])


def test_conv_transpose_1d_and_errors():
    x = randn(2, 3, 5)
    m = make_model("ConvTranspose", [("x", x)], inits=[("w", randn(3, 2, 3))], strides=[2],
                   output_padding=[1])
    check(m, [("x", x)])
    x3 = randn(1, 1, 2, 2, 2)
    check(make_model("ConvTranspose", [("x", x3)], inits=[("w", randn(1, 1, 2, 2, 2))]), [("x", x3)])
    x4 = randn(1, 1, 2, 2, 2, 2)
    refuse(make_model("ConvTranspose", [("x", x4)], inits=[("w", randn(1, 1, 2, 2, 2, 2))]),
           "4 spatial dims")


# ---------------------------------------------------------------------------- MatMul, Gemm


@pytest.mark.parametrize(
    "sa,sb",
    [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)),
     ((3, 4), (2, 4, 5))],
)
def test_matmul(sa, sb):
    a, b = randn(*sa), randn(*sb)
    m = make_model("MatMul", [("a", a), ("b", b)])
    check(m, [("a", a), ("b", b)])


@pytest.mark.parametrize(
    "attrs,cshape",
    [({}, None), (dict(transA=1, transB=1, alpha=0.5, beta=2.0), (3, 5)), (dict(beta=0.5), (5,)),
     (dict(alpha=2.0), (1,)), (dict(transB=1), ())],
)
def test_gemm(attrs, cshape):
    a = randn(4, 3) if attrs.get("transA") else randn(3, 4)
    b = randn(5, 4) if attrs.get("transB") else randn(4, 5)
    inputs = [("a", a), ("b", b)]
    if cshape is not None:
        inputs.append(("c", randn(*cshape)))
    check(make_model("Gemm", inputs, **attrs), inputs)
    check(make_model("Gemm", inputs, opset=9, **attrs), inputs)


# --------------------------------------------------------------------------------- Pooling


def np_pool2d(x, op, k, s, pads, d, ceil, cip):
    """Numpy pooling (onnx's reference mishandles ceil_mode with dilations)."""
    out = []
    for i in range(2):
        size, p0, p1 = x.shape[2 + i], pads[i], pads[2 + i]
        span = size + p0 + p1 - ((k - 1) * d + 1)
        o = -(-span // s) + 1 if ceil else span // s + 1
        if ceil and (o - 1) * s >= size + p0:
            o -= 1
        out.append((o, size, p0, p1))
    y = np.zeros(x.shape[:2] + (out[0][0], out[1][0]), np.float64)
    for oy in range(out[0][0]):
        for ox in range(out[1][0]):
            vals, cnt = [], 0
            for jy in range(k):
                for jx in range(k):
                    ty, tx = oy * s - pads[0] + jy * d, ox * s - pads[1] + jx * d
                    inside_pad = -pads[0] <= ty < out[0][1] + pads[2] and -pads[1] <= tx < out[1][1] + pads[3]
                    if 0 <= ty < out[0][1] and 0 <= tx < out[1][1]:
                        vals.append(x[:, :, ty, tx])
                        cnt += 1
                    elif inside_pad and cip:
                        cnt += 1
            if op == "MaxPool":
                y[:, :, oy, ox] = np.max(vals, axis=0)
            else:
                y[:, :, oy, ox] = np.sum(vals, axis=0) / cnt
    return y.astype(x.dtype)


@settings(max_examples=20, deadline=None)
@given(
    op=st.sampled_from(["MaxPool", "AveragePool"]),
    k=st.integers(1, 3),
    s=st.integers(1, 3),
    p=st.integers(0, 1),
    d=st.integers(1, 2),
    ceil=st.integers(0, 1),
    cip=st.integers(0, 1),
)
def test_pool_2d(op, k, s, p, d, ceil, cip):
    if p >= k:
        p = 0
    x = randn(1, 2, 7, 8)
    pads = [p, p, p, 0]
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=pads, ceil_mode=ceil)
    if d > 1:
        attrs["dilations"] = [d, d]
    if op == "AveragePool":
        attrs["count_include_pad"] = cip
    got = run_ge(make_model(op, [("x", x)], opset=19, **attrs), [x])[0]
    want = np_pool2d(x, op, k, s, pads, d, ceil, op == "AveragePool" and cip)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_1d_3d_same(op):
    x = randn(2, 3, 9)
    check(make_model(op, [("x", x)], kernel_shape=[3], strides=[2], pads=[1, 1]), [("x", x)])
    x = randn(1, 2, 5, 6, 4)
    check(make_model(op, [("x", x)], kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1]),
          [("x", x)])
    x = randn(1, 2, 5, 6)
    check(make_model(op, [("x", x)], kernel_shape=[3, 2], auto_pad="SAME_LOWER"),
          [("x", x)])


def test_max_pool_uint8_and_global():
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    check(make_model("MaxPool", [("x", x)], kernel_shape=[2, 2], pads=[1, 1, 1, 1]), [("x", x)])
    x = randn(2, 3, 4, 5)
    check(make_model("GlobalMaxPool", [("x", x)]), [("x", x)])
    check(make_model("GlobalAveragePool", [("x", x)]), [("x", x)])


def test_max_pool_refusals():
    x = randn(1, 1, 4, 4)
    refuse(make_model("MaxPool", [("x", x)], kernel_shape=[2, 2], storage_order=2), "storage")


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(p):
    x = randn(1, 2, 6, 5)
    check(make_model("LpPool", [("x", x)], opset=18, p=p, kernel_shape=[2, 3], strides=[2, 1],
                     pads=[1, 0, 0, 1]), [("x", x)], rtol=1e-4)


# -------------------------------------------------------------------------- Normalisation


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 4, 5), (1, 3, 2, 3, 2)])
@pytest.mark.parametrize("opset", [9, 15])
def test_batch_norm_inference(shape, opset):
    # numpy reference: onnx's reference BatchNormalization_9 is wrong
    x = randn(*shape)
    c = shape[1]
    p = dict(s=randn(c), b=randn(c), m=randn(c), v=np.abs(randn(c)) + 0.5)
    m = make_model("BatchNormalization", [("x", x)], inits=list(p.items()), epsilon=1e-3,
                   opset=opset)
    sh = (1, c) + (1,) * (len(shape) - 2)
    want = (x - p["m"].reshape(sh)) / np.sqrt(p["v"].reshape(sh) + 1e-3) * p["s"].reshape(sh) \
        + p["b"].reshape(sh)
    np.testing.assert_allclose(run_ge(m, [x])[0], want, rtol=1e-5, atol=1e-5)


def test_batch_norm_training_and_errors():
    x = randn(3, 2, 4, 4)
    inits = [("s", randn(2)), ("b", randn(2)), ("m", randn(2)), ("v", np.abs(randn(2)) + 0.5)]
    m = make_model("BatchNormalization", [("x", x)], inits=inits, n_out=3, training_mode=1,
                   momentum=0.8)
    check(m, [("x", x)])
    refuse(make_model("BatchNormalization", [("x", x)], inits=inits, n_out=3), "training_mode")
    refuse(make_model("BatchNormalization", [("x", x)], inits=inits, opset=7, spatial=0),
           "spatial")


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm(axis):
    x = randn(2, 3, 4)
    norm = x.shape[axis % 3:]
    inits = [("s", randn(*norm)), ("b", randn(*norm))]
    check(make_model("LayerNormalization", [("x", x)], inits=inits, n_out=3, axis=axis,
                     epsilon=1e-3, opset=17), [("x", x)])
    check(make_model("LayerNormalization", [("x", x)], inits=inits[:1], axis=axis, opset=17),
          [("x", x)])


def test_instance_group_rms_norm_lrn():
    x = randn(2, 4, 3, 5)
    check(make_model("InstanceNormalization", [("x", x)], inits=[("s", randn(4)), ("b", randn(4))],
                     epsilon=1e-3), [("x", x)])
    check(make_model("GroupNormalization", [("x", x)], inits=[("s", randn(2)), ("b", randn(2))],
                     num_groups=2, opset=18), [("x", x)])
    check(make_model("GroupNormalization", [("x", x)], inits=[("s", randn(4)), ("b", randn(4))],
                     num_groups=2, opset=21), [("x", x)])
    check(make_model("RMSNormalization", [("x", x)], inits=[("s", randn(3, 5))], axis=2,
                     opset=23), [("x", x)])
    # onnx's reference LRN loops over the batch instead of the channels: numpy here.
    m = make_model("LRN", [("x", x)], size=3, alpha=0.01, beta=0.6, bias=2.0)
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    ssum = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
    want = x / (2.0 + 0.01 / 3 * ssum) ** 0.6
    np.testing.assert_allclose(run_ge(m, [x])[0], want, rtol=1e-5, atol=1e-6)
    refuse(make_model("LRN", [("x", x)], size=2), "even size")


# ---------------------------------------------------------------- Sampling, NMS, RoiAlign


@pytest.mark.parametrize(
    "mode,pad",
    [(m, p) for m in ["linear", "nearest"] for p in ["zeros", "border", "reflection"]]
    + [("cubic", "zeros")],
)
def test_grid_sample(mode, pad):
    x = randn(1, 2, 4, 5)
    grid = (rng.random((1, 3, 4, 2)) * 2.4 - 1.2).astype(np.float32)
    check(make_model("GridSample", [("x", x), ("g", grid)], mode=mode, padding_mode=pad,
                     align_corners=1, opset=20), [("x", x), ("g", grid)], rtol=1e-3, atol=1e-4)


def test_grid_sample_refusals():
    x, g = randn(1, 1, 2, 2, 2), randn(1, 1, 1, 1, 3)
    refuse(make_model("GridSample", [("x", x), ("g", g)], mode="cubic", opset=20), "cubic")
    x, g = randn(1, 1, 2, 2), randn(1, 1, 1, 2)
    refuse(make_model("GridSample", [("x", x), ("g", g)], mode="cubic", padding_mode="border",
                      opset=20), "padding_mode border")


def test_roi_align():
    x = randn(2, 2, 6, 6)
    rois = np.array([[0, 0, 4, 4], [1, 1, 5, 3.5]], np.float32)
    idx = np.array([0, 1], np.int64)
    ins = [("x", x), ("r", rois), ("i", idx)]
    check(make_model("RoiAlign", ins, output_height=2, output_width=3, sampling_ratio=2,
                     spatial_scale=1.0, opset=16), ins)
    refuse(make_model("RoiAlign", ins, mode="max", opset=16), "mode max")


def test_nms():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)
    inits = [("mx", np.array([3], np.int64)), ("iou", np.array([0.5], np.float32)),
             ("sc", np.array([0.0], np.float32))]
    m = make_model("NonMaxSuppression", [("b", boxes), ("s", scores)], inits=inits)
    check(m, [("b", boxes), ("s", scores)])


# --------------------------------------------------------------------------- Quantization


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_quantize_dequantize(dt):
    x = randn(2, 3, 4) * 4
    scale = np.float32(0.05)
    zp = np.array(3 if dt == np.uint8 else -2, dt)
    inits = [("s", np.array(scale)), ("z", zp)]
    check(make_model("QuantizeLinear", [("x", x)], inits=inits), [("x", x)])
    q = rng.integers(0, 100, (2, 3, 4)).astype(dt)
    check(make_model("DequantizeLinear", [("q", q)], inits=inits), [("q", q)])
    # per axis
    inits = [("s", np.array([0.1, 0.2, 0.05], np.float32)), ("z", np.array([1, 2, 3], dt))]
    check(make_model("QuantizeLinear", [("x", x)], inits=inits, axis=1), [("x", x)])
    check(make_model("DequantizeLinear", [("q", q)], inits=inits, axis=1), [("q", q)])


def test_dynamic_quantize_and_errors():
    x = randn(3, 4) * 3
    check(make_model("DynamicQuantizeLinear", [("x", x)], n_out=3, opset=11), [("x", x)])
    inits = [("s", np.full((3, 2), 0.1, np.float32)), ("z", np.zeros((3, 2), np.uint8))]
    refuse(make_model("QuantizeLinear", [("x", randn(3, 4))], inits=inits, axis=1,
                      block_size=1), "do not cover")
    refuse(make_model("QuantizeLinear", [("x", randn(3, 4))], inits=inits, axis=1,
                      precision=1), "precision")


def test_blocked_quantization():
    x = randn(3, 5) * 3
    inits = [("s", (np.abs(randn(3, 3)) + 0.05).astype(np.float32)),
             ("z", rng.integers(0, 20, (3, 3)).astype(np.uint8))]
    check(make_model("QuantizeLinear", [("x", x)], inits=inits, axis=1, block_size=2), [("x", x)])
    q = rng.integers(0, 255, (3, 5)).astype(np.uint8)
    check(make_model("DequantizeLinear", [("q", q)], inits=inits, axis=1, block_size=2),
          [("q", q)])


def test_integer_and_qlinear_products():
    a = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    b = rng.integers(-128, 127, (4, 5)).astype(np.int8)
    ins = [("a", a), ("b", b)]
    check(make_model("MatMulInteger", ins, inits=[("za", np.array(3, np.uint8)),
                                                  ("zb", np.array(-2, np.int8))]), ins)
    check(make_model("MatMulInteger", ins), ins)
    inits = [("as", np.array(0.02, np.float32)), ("az", np.array(10, np.uint8)),
             ("b", b), ("bs", np.array(0.05, np.float32)), ("bz", np.array(1, np.int8)),
             ("ys", np.array(0.5, np.float32)), ("yz", np.array(128, np.uint8))]
    check(make_model("QLinearMatMul", [("a", a)], inits=inits), [("a", a)])
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)
    check(make_model("ConvInteger", [("x", x)], inits=[("w", w), ("xz", np.array(7, np.uint8))],
                     pads=[1, 1, 1, 1]), [("x", x)])
    inits = [("xs", np.array(0.1, np.float32)), ("xz", np.array(5, np.uint8)), ("w", w),
             ("ws", np.array([0.01, 0.02, 0.03], np.float32)),
             ("wz", np.array([0, 0, 0], np.uint8)), ("ys", np.array(2.0, np.float32)),
             ("yz", np.array(100, np.uint8)), ("bias", np.array([10, -20, 30], np.int32))]
    check(make_model("QLinearConv", [("x", x)], inits=inits, strides=[2, 2]), [("x", x)])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 1])
def test_losses(reduction, weighted, ignore):
    x = randn(3, 4, 2)
    t = np.array([[0, 1], [3, 1], [2, 2]], np.int64)
    ins = [("x", x), ("t", t)]
    inits = [("w", np.array([0.5, 1.0, 2.0, 1.5], np.float32))] if weighted else []
    attrs = dict(reduction=reduction)
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check(make_model("NegativeLogLikelihoodLoss", ins, inits=inits, opset=13, **attrs), ins)
    check(make_model("SoftmaxCrossEntropyLoss", ins, inits=inits, n_out=2, opset=13, **attrs),
          ins)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[2, 2], strides=[2, 2]),
                                   dict(kernel_shape=[3, 2], pads=[1, 0, 1, 1], ceil_mode=1,
                                        strides=[2, 2]),
                                   dict(kernel_shape=[2], dilations=[2])])
def test_max_pool_indices(storage_order, attrs):
    x = randn(2, 3, 5, 6) if len(attrs["kernel_shape"]) == 2 else randn(2, 3, 7)
    check(make_model("MaxPool", [("x", x)], n_out=2, storage_order=storage_order, opset=12,
                     **attrs), [("x", x)])


def test_max_unpool():
    x = randn(2, 3, 6, 4)
    pool = make_model("MaxPool", [("x", x)], n_out=2, kernel_shape=[2, 2], strides=[2, 2])
    v, i = ReferenceEvaluator(pool).run(None, {"x": x})
    ins = [("v", v), ("i", i)]
    check(make_model("MaxUnpool", ins, kernel_shape=[2, 2], strides=[2, 2]), ins)
    shape = np.array([2, 3, 6, 4], np.int64)
    check(make_model("MaxUnpool", ins, inits=[("s", shape)], kernel_shape=[2, 2],
                     strides=[2, 2]), ins)
    # A larger output_shape: the reference's default-shape result, zeros after it.
    check(make_model("MaxUnpool", ins, inits=[("s", shape + 1)], kernel_shape=[2, 2],
                     strides=[2, 2]), ins)
    ins_s = ins + [("s", shape + np.array([0, 0, 2, 1], np.int64))]
    check(make_model("MaxUnpool", ins_s, kernel_shape=[2, 2], strides=[2, 2]), ins_s)
    refuse(make_model("MaxUnpool", ins, inits=[("s", shape - 1)], kernel_shape=[2, 2],
                      strides=[2, 2]), "at least the default")
