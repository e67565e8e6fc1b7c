"""The compile pipeline's built-in fusions (crates/ge-runtime/src/fuse.rs).

- A matrix product or convolution followed by an Add of a constant and an activation runs as one
  step; its results are byte-identical to the unfused plan's (the same graph with a control edge
  on the Add, which keeps the fusion from applying), in graph and eager mode, at 1 and 2 threads.
- An inference BatchNorm after a Conv2D is folded into the convolution's filter and bias; the
  result matches the unfolded computation to float32 rounding.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from ge.es import GraphBuilder, control_dependency_scope
from ge.es import all as es
from ge.graph import DataType
from ge.session import Session

F32 = DataType.DT_FLOAT
NP = {F32: np.float32}


def _note(report: str, what: str) -> int:
    m = re.search(rf"{what}[^0-9]*(\d+)", report)
    assert m, report
    return int(m.group(1))


def dense_graph(dt, act: str, bias_first: bool, keep: bool, rows: int):
    """act(x @ w + b) (or b + x @ w); `keep` puts a control edge on the Add (no fusion)."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("dense")
    x = b.create_input(0, data_type=dt, shape=[rows, 64])
    w = b.create_const(rng.standard_normal((64, 48)).astype(NP[dt]))
    bias = b.create_const(rng.standard_normal((48,)).astype(NP[dt]))
    p = es.MatMulV2(x, w)
    if keep:
        with control_dependency_scope([x]):
            s = es.Add(bias, p) if bias_first else es.Add(p, bias)
    else:
        s = es.Add(bias, p) if bias_first else es.Add(p, bias)
    y = getattr(es, act)(s) if act else s
    return b.build_and_reset([y])


# float32 only: no matrix product or convolution prototype allows float64.
@pytest.mark.parametrize("dt", [F32])
@pytest.mark.parametrize("act", ["Relu", "Gelu", "Sigmoid", "Tanh", None])
@pytest.mark.parametrize("bias_first", [False, True])
def test_product_bias_activation_is_fused_and_identical(dt, act, bias_first):
    rng = np.random.default_rng(2)
    for rows in (3, 700):  # thin (gemm crate) and threaded products
        x = rng.standard_normal((rows, 64)).astype(NP[dt])
        outs = {}
        for keep in (False, True):
            for opts in ({"ge.threads": "1"}, {"ge.threads": "2"}, {"ge.graphMode": "off"}):
                s = Session(opts)
                s.add_graph(1, dense_graph(dt, act, bias_first, keep, rows))
                outs[(keep, str(opts))] = s.run_graph(1, [x])[0].numpy()
                fused = _note(s.compile_report(1), "products fused with their bias and activation")
                assert fused == (0 if keep else 1)
        first = next(iter(outs.values()))
        for v in outs.values():
            assert v.tobytes() == first.tobytes()


def test_an_activation_right_after_a_convolution_is_fused():
    rng = np.random.default_rng(9)
    f = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    outs = []
    for keep in (False, True):
        b = GraphBuilder("conv_relu")
        h = b.create_input(0, data_type=F32, shape=[2, 3, 8, 8])
        c = es.Conv2D(h, b.create_const(f), strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], data_format="NCHW")
        if keep:
            with control_dependency_scope([h]):
                y = es.Relu6(c)
        else:
            y = es.Relu6(c)
        s = Session()
        s.add_graph(1, b.build_and_reset([y]))
        outs.append(s.run_graph(1, [x])[0].numpy())
        assert _note(s.compile_report(1), "products fused with their bias and activation") == (0 if keep else 1)
    assert outs[0].tobytes() == outs[1].tobytes()
    assert outs[0].min() >= 0 and outs[0].max() <= 6


def test_no_fusion_when_the_product_has_another_consumer():
    b = GraphBuilder("two_uses")
    x = b.create_input(0, data_type=F32, shape=[2, 4])
    w = b.create_const(np.ones((4, 3), np.float32))
    p = es.MatMulV2(x, w)
    y1 = es.Relu(es.Add(p, b.create_const(np.ones((3,), np.float32))))
    s = Session()
    s.add_graph(1, b.build_and_reset([y1, p]))
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 4
    y, pp = (t.numpy() for t in s.run_graph(1, [x]))
    np.testing.assert_array_equal(pp, x @ np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(y, np.maximum(pp + 1, 0))
    assert _note(s.compile_report(1), "products fused with their bias and activation") == 0


def test_an_add_that_broadcasts_the_product_up_is_not_fused():
    b = GraphBuilder("grow")
    x = b.create_input(0, data_type=F32, shape=[1, 4])
    w = b.create_const(np.ones((4, 3), np.float32))
    big = b.create_const(np.arange(15, dtype=np.float32).reshape(5, 3))
    s = Session()
    s.add_graph(1, b.build_and_reset([es.Relu(es.Add(es.MatMulV2(x, w), big))]))
    x = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(s.run_graph(1, [x])[0].numpy(), np.arange(15).reshape(5, 3) + 4.0)
    # Nor is the Relu: it does not consume the product.
    assert _note(s.compile_report(1), "products fused with their bias and activation") == 0


def conv_bn_graph(fmt: str, with_bias: bool, training: bool = False, extra_use: bool = False):
    rng = np.random.default_rng(4)
    c_in, c_out = 3, 5
    b = GraphBuilder("conv_bn")
    shape = [2, c_in, 9, 8] if fmt == "NCHW" else [2, 9, 8, c_in]
    x = b.create_input(0, data_type=F32, shape=shape)
    f = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32)
    params = {
        "filter": f,
        "bias": rng.standard_normal(c_out).astype(np.float32),
        "scale": rng.uniform(0.5, 2, c_out).astype(np.float32),
        "offset": rng.standard_normal(c_out).astype(np.float32),
        "mean": rng.standard_normal(c_out).astype(np.float32),
        "var": rng.uniform(0.5, 2, c_out).astype(np.float32),
    }
    conv = es.Conv2D(x, b.create_const(f), b.create_const(params["bias"]) if with_bias else None,
                     strides=[1, 1, 1, 1], pads=[1, 1, 0, 2], data_format=fmt)
    bn = es.BatchNorm(conv, *(b.create_const(params[k]) for k in ("scale", "offset", "mean", "var")),
                      epsilon=1e-3, data_format=fmt, is_training=training)
    outs = [bn.y] + ([conv] if extra_use else [])
    return b.build_and_reset(outs), params


def conv_bn_reference(x: np.ndarray, fmt: str, p: dict, with_bias: bool) -> np.ndarray:
    xs = x.astype(np.float64)
    if fmt == "NHWC":
        xs = xs.transpose(0, 3, 1, 2)
    xs = np.pad(xs, ((0, 0), (0, 0), (1, 1), (0, 2)))
    f = p["filter"].astype(np.float64)
    n, c, h, w = xs.shape
    o, _, kh, kw = f.shape
    y = np.zeros((n, o, h - kh + 1, w - kw + 1))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xs[:, :, i:i + y.shape[2], j:j + y.shape[3]], f[:, :, i, j])
    r = lambda k: p[k].astype(np.float64).reshape(1, -1, 1, 1)
    if with_bias:
        y += r("bias")
    y = (y - r("mean")) / np.sqrt(r("var") + 1e-3) * r("scale") + r("offset")
    return y if fmt == "NCHW" else y.transpose(0, 2, 3, 1)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_batch_norm_is_folded(fmt, with_bias):
    g, p = conv_bn_graph(fmt, with_bias)
    x = np.random.default_rng(5).standard_normal(
        (2, 3, 9, 8) if fmt == "NCHW" else (2, 9, 8, 3)).astype(np.float32)
    want = conv_bn_reference(x, fmt, p, with_bias)
    for mode in ("on", "off"):
        s = Session({"ge.graphMode": mode})
        s.add_graph(1, g)
        got = s.run_graph(1, [x])[0].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        report = s.compile_report(1)
        assert _note(report, "BatchNorms folded into convolutions") == 1
        assert "planned nodes: 1" in report


@pytest.mark.parametrize("kw", [{"training": True}, {"extra_use": True}])
def test_batch_norm_is_not_folded_when_it_must_not_be(kw):
    g, p = conv_bn_graph("NCHW", True, **kw)
    x = np.random.default_rng(6).standard_normal((2, 3, 9, 8)).astype(np.float32)
    s = Session()
    s.add_graph(1, g)
    outs = s.run_graph(1, [x])
    assert _note(s.compile_report(1), "BatchNorms folded into convolutions") == 0
    if "extra_use" in kw:
        np.testing.assert_allclose(outs[0].numpy(), conv_bn_reference(x, "NCHW", p, True),
                                   rtol=1e-5, atol=1e-5)
