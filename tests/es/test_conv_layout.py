"""Layout-sensitive operators read N/C/H/W from each input's format, as GE's infer functions do:
x's format wins over ``data_format`` (an ND x takes ``data_format``'s layout), a filter without
a format (a plain Const) takes the layout x states (NCHW when x states none), and y carries x's
layout to the next operator.
Graphs are built with ge.es, run on a Session and compared with numpy."""

from __future__ import annotations

from typing import Sequence

import ge
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es import all as ops
from ge.graph import DataType, Format
from ge.session import Session

F32 = DataType.DT_FLOAT


def conv_nchw(x: np.ndarray, w: np.ndarray, stride: Sequence[int], pads: Sequence[int]) -> np.ndarray:
    """Reference: NCHW x, OIHW w, stride (sh, sw), pads (top, bottom, left, right)."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x64, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    o, _, kh, kw = w.shape
    oh = (xp.shape[2] - kh) // stride[0] + 1
    ow = (xp.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride[0] * (oh - 1) + 1 : stride[0], j : j + stride[1] * (ow - 1) + 1 : stride[1]]
            out += np.einsum("nchw,oc->nohw", patch, w64[:, :, i, j])
    return out


def to_nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def to_nchw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def run(graph, *inputs: np.ndarray) -> list[np.ndarray]:
    s = Session()
    s.add_graph(0, graph)
    return [t.numpy() for t in s.run_graph(0, list(inputs))]


def close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-5, atol=2e-5)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(16)


def test_nhwc_x_by_format_with_default_data_format_and_nd_const_filter(rng):
    x = rng.uniform(-1, 1, (2, 7, 6, 3)).astype(np.float32)  # NHWC
    w = rng.uniform(-1, 1, (4, 3, 2, 3)).astype(np.float32)  # OIHW
    b = GraphBuilder("nhwc")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NHWC)
    # A plain Const filter follows x's layout: [out, kh, kw, in].
    wh = b.create_const(to_nhwc(w))
    g = b.build_and_reset([ops.Conv2D(xh, wh, strides=[1, 2, 1, 1], pads=[1, 0, 0, 1])])
    (y,) = run(g, x)
    assert y.shape == (2, 4, 5, 4)
    close(to_nchw(y), conv_nchw(to_nchw(x), w, (2, 1), (1, 0, 0, 1)))


def test_x_format_wins_over_a_disagreeing_data_format(rng):
    # GE's Conv2D takes x's format and overwrites data_format with it.
    x = rng.uniform(-1, 1, (1, 3, 6, 5)).astype(np.float32)  # NCHW
    w = rng.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32)
    b = GraphBuilder("wins")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NCHW)
    wh = b.create_const(w)
    y = ops.Conv2D(xh, wh, strides=[1, 1, 1, 2], pads=[0, 0, 0, 0], data_format="NHWC")
    (out,) = run(b.build_and_reset([y]), x)
    close(out, conv_nchw(x, w, (1, 2), (0, 0, 0, 0)))


def test_nd_x_takes_data_format(rng):
    x = rng.uniform(-1, 1, (1, 3, 5, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (2, 3, 2, 2)).astype(np.float32)
    b = GraphBuilder("nd")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape))
    wh = b.create_const(w)
    g = b.build_and_reset([ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW")])
    (y,) = run(g, x)
    close(y, conv_nchw(x, w, (1, 1), (0, 0, 0, 0)))


def test_unformatted_x_and_filter_read_the_filter_as_oihw(rng):
    # Neither states a layout (GE's inference refuses such a graph): x follows data_format, the
    # filter is [out, in, kh, kw] whatever data_format says.
    x = rng.uniform(-1, 1, (1, 5, 5, 3)).astype(np.float32)  # NHWC by data_format
    w = rng.uniform(-1, 1, (2, 3, 2, 2)).astype(np.float32)  # OIHW
    b = GraphBuilder("unformatted")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape))
    g = b.build_and_reset([ops.Conv2D(xh, b.create_const(w), strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])])
    (y,) = run(g, x)
    close(to_nchw(y), conv_nchw(to_nchw(x), w, (1, 1), (0, 0, 0, 0)))


def test_hwcn_filter_and_y_layout_feeding_the_next_operators(rng):
    x = rng.uniform(-1, 1, (1, 2, 6, 6)).astype(np.float32)  # NCHW
    w1 = rng.uniform(-1, 1, (4, 2, 3, 3)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (3, 4, 1, 1)).astype(np.float32)
    b = GraphBuilder("chain")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NCHW)
    w1h = b.create_input(1, data_type=F32, shape=[3, 3, 2, 4], format=Format.FORMAT_HWCN)
    y1 = ops.Conv2D(xh, w1h, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1])
    # y1 is NCHW by format: the next Conv2D and MaxPool (data_format left at NHWC) read it so.
    y2 = ops.Conv2D(y1, b.create_const(w2), strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])
    y3 = ops.MaxPool(y2, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], padding="VALID")
    (out,) = run(b.build_and_reset([y3]), x, np.ascontiguousarray(w1.transpose(2, 3, 1, 0)))
    r = conv_nchw(conv_nchw(x, w1, (1, 1), (1, 1, 1, 1)), w2, (1, 1), (0, 0, 0, 0))
    want = r.reshape(1, 3, 3, 2, 3, 2).max(axis=(3, 5))
    assert out.shape == (1, 3, 3, 3)
    close(out, want)


def test_avg_pool_v2_reads_nhwc_x_by_format(rng):
    x = rng.uniform(-1, 1, (1, 4, 6, 2)).astype(np.float32)  # NHWC; AvgPoolV2 defaults to NCHW
    b = GraphBuilder("pool")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NHWC)
    y = ops.AvgPoolV2(xh, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1])
    (out,) = run(b.build_and_reset([y]), x)
    want = x.astype(np.float64).reshape(1, 2, 2, 3, 2, 2).mean(axis=(2, 4))
    close(out, want)


def test_x_of_another_format_is_ges_error():
    b = GraphBuilder("bad_x")
    xh = b.create_input(0, data_type=F32, shape=[1, 6, 6, 3], format=Format.FORMAT_HWCN)
    wh = b.create_const(np.zeros((2, 3, 1, 1), np.float32))
    with pytest.raises(ge.GeError, match=r"input x format should be NCHW or NHWC\. actual is: HWCN"):
        ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])


def test_filter_of_another_format_is_ges_error():
    b = GraphBuilder("bad_filter")
    xh = b.create_input(0, data_type=F32, shape=[1, 3, 6, 6], format=Format.FORMAT_NCHW)
    wh = b.create_input(1, data_type=F32, shape=[2, 3, 1, 1], format=Format.FORMAT_NC1HWC0)
    with pytest.raises(ge.GeError, match=r"input filter format should be NCHW, NHWC or HWCN\. actual is: NC1HWC0"):
        ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])


def test_nd_filter_in_the_other_layout_is_a_channel_mismatch():
    # An OIHW Const under an NHWC x is read as [out, kh, kw, in]: 2 channels, not 3.
    b = GraphBuilder("mismatch")
    xh = b.create_input(0, data_type=F32, shape=[1, 6, 6, 3], format=Format.FORMAT_NHWC)
    wh = b.create_const(np.zeros((4, 3, 1, 2), np.float32))
    with pytest.raises(ge.GeError, match="channel mismatch"):
        ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])


def test_nd_x_with_no_layout_in_data_format_is_an_error():
    b = GraphBuilder("bad_df")
    xh = b.create_input(0, data_type=F32, shape=[1, 3, 6, 6])
    wh = b.create_const(np.zeros((2, 3, 1, 1), np.float32))
    with pytest.raises(ge.GeError, match="attribute 'data_format' must be"):
        ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCWH")


# ---------------------------------------------------------------------------------------------
# GE's format inference carries a layout through layout-agnostic operators
# ---------------------------------------------------------------------------------------------


def test_relu_between_nchw_data_and_conv_runs_nchw(rng):
    # Data(NCHW) -> Relu -> Conv2D with data_format left at NHWC: GE carries NCHW through the
    # Relu, so the convolution reads x as NCHW (as NHWC it would see 8 channels, not 3).
    x = rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    b = GraphBuilder("relu_nchw")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NCHW)
    r = ops.Relu(ops.Mul(xh, b.create_const(np.float32(2.0))))
    y = ops.Conv2D(r, b.create_const(w), strides=[1, 1, 1, 1], pads=[0, 0, 0, 0])
    g = b.build_and_reset([y])
    relu = [n for n in g.get_direct_nodes() if n.type == "Relu"][0]
    assert relu.get_output_desc(0).get_format() == Format.FORMAT_NCHW
    (out,) = run(g, x)
    assert out.shape == (1, 4, 6, 6)
    close(out, conv_nchw(np.maximum(2 * x, 0), w, (1, 1), (0, 0, 0, 0)))


def test_a_broadcast_operand_of_another_rank_stops_the_format():
    b = GraphBuilder("stop")
    xh = b.create_input(0, data_type=F32, shape=[1, 3, 4, 4], format=Format.FORMAT_NCHW)
    s = ops.Add(xh, b.create_const(np.ones(4, np.float32)))
    t = ops.Add(xh, b.create_const(np.ones((1, 3, 1, 1), np.float32)))
    g = b.build_and_reset([s, t])
    fmts = sorted(str(n.get_output_desc(0).get_format()) for n in g.get_direct_nodes() if n.type == "Add")
    assert fmts == sorted([str(Format.FORMAT_ND), str(Format.FORMAT_NCHW)])


# ---------------------------------------------------------------------------------------------
# ONNX export and Conv+BatchNorm folding read the same layout
# ---------------------------------------------------------------------------------------------


def nhwc_by_format_graph(rng):
    """x NHWC by its format under data_format="NCHW", an ND filter ([out, kh, kw, in])."""
    x = rng.uniform(-1, 1, (2, 7, 6, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 2, 3)).astype(np.float32)  # OIHW
    b = GraphBuilder("nhwc_onnx")
    xh = b.create_input(0, data_type=F32, shape=list(x.shape), format=Format.FORMAT_NHWC)
    y = ops.Conv2D(xh, b.create_const(to_nhwc(w)), strides=[1, 2, 1, 1], pads=[1, 0, 0, 1], data_format="NCHW")
    # y, and the Relu's output carrying its format, are NHWC: ksize and strides in NHWC order.
    y = ops.MaxPool(ops.Relu(y), ksize=[1, 2, 1, 1], strides=[1, 2, 1, 1], padding="VALID", data_format="NCHW")
    r = conv_nchw(to_nchw(x), w, (2, 1), (1, 0, 0, 1))  # [2, 4, 4, 5]
    r = np.maximum(r, 0).reshape(2, 4, 2, 2, 5).max(axis=3)
    return b.build_and_reset([y]), x, to_nhwc(r)


def test_onnx_export_of_an_nhwc_by_format_conv(rng, tmp_path):
    import ge.onnx

    g, x, want = nhwc_by_format_graph(rng)
    (got,) = run(g, x)
    close(got, want)
    path = tmp_path / "nhwc.onnx"
    ge.onnx.save(g, str(path))
    (back,) = run(ge.onnx.load(str(path)), x)
    close(back, want)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (o,) = sess.run(None, {sess.get_inputs()[0].name: x})
    close(o, want)


def conv_bn(x_shape, filt: np.ndarray, conv_df: str, bn_df: str, extra_use: bool):
    """Conv2D (x NHWC by format, data_format `conv_df`) -> inference BatchNorm (`bn_df`);
    `extra_use` also outputs the convolution, which keeps the BatchNorm from being folded."""
    rng = np.random.default_rng(7)
    c = filt.shape[0]
    b = GraphBuilder("conv_bn_layout")
    xh = b.create_input(0, data_type=F32, shape=list(x_shape), format=Format.FORMAT_NHWC)
    conv = ops.Conv2D(xh, b.create_const(filt), b.create_const(rng.standard_normal(c).astype(np.float32)),
                      strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format=conv_df)
    params = [rng.uniform(0.5, 2, c), rng.standard_normal(c), rng.standard_normal(c), rng.uniform(0.5, 2, c)]
    bn = ops.BatchNorm(conv, *(b.create_const(p.astype(np.float32)) for p in params),
                       epsilon=1e-3, data_format=bn_df, is_training=False)
    return b.build_and_reset([bn.y] + ([conv] if extra_use else []))


def run_folded(g, x: np.ndarray) -> tuple[np.ndarray, int]:
    """The first output and how many BatchNorms the compile pipeline folded."""
    import re

    s = Session()
    s.add_graph(0, g)
    y = s.run_graph(0, [x])[0].numpy()
    m = re.search(r"BatchNorms folded into convolutions[^0-9]*(\d+)", s.compile_report(0))
    assert m
    return y, int(m.group(1))


@pytest.mark.parametrize(("bn_df", "folds"), [("NHWC", 1), ("NCHW", 0)])
def test_conv_batch_norm_fused_and_unfused_agree_with_x_nhwc_by_format(rng, bn_df, folds):
    # The convolution computes NHWC (x's format) whatever its data_format says; y is
    # [1, 5, 4, 5], so a BatchNorm reading NCHW normalises H (5 values) and must not be folded
    # into the convolution's 5 output channels.
    x = rng.uniform(-1, 1, (1, 7, 6, 3)).astype(np.float32)
    filt = rng.uniform(-1, 1, (5, 3, 3, 3)).astype(np.float32)  # [out, kh, kw, in] under NHWC
    g = conv_bn(x.shape, filt, "NCHW", bn_df, extra_use=False)
    fused, n = run_folded(g, x)
    assert n == folds
    unfused, n = run_folded(conv_bn(x.shape, filt, "NCHW", bn_df, extra_use=True), x)
    assert n == 0
    assert fused.shape == (1, 5, 4, 5)
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5)
