"""CPU kernels of ge-runtime for neural-network and indexing ops, against numpy references.

Every case runs through ``ge.session.Session`` twice, in graph mode (a captured plan) and in eager
mode (``ge.graphMode`` off); both must agree with each other exactly and with numpy.
"""

import ge
import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es import all as ops
from ge.graph import DataType, Format
from ge.session import Session
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_harness import MODES, conv_args, conv_build, conv_ref, nchw_to_nhwc, window_args
from kernel_harness import pool_ref as harness_pool_ref
from kernel_harness import fails as harness_fails
from kernel_harness import run as harness_run


def run(fn, *inputs, formats=None):
    """Builds ``fn(builder, *inputs as graph inputs)``, runs it in graph and eager mode (the shared
    harness: both must agree byte for byte); returns the graph-mode outputs as numpy arrays."""
    return [a for _, a in harness_run(fn, *inputs, formats=formats)]


def run1(fn, *inputs, **kw):
    (y,) = run(fn, *inputs, **kw)
    return y


def fails(fn, *inputs, match=None, formats=None):
    """Both modes raise ge.ExecutionError (a kernel error, not a crash)."""
    harness_fails(fn, *inputs, exc=ge.ExecutionError, match=match, formats=formats)


def close(got, want, dtype):
    tol = {np.float16: (5e-3, 5e-3), np.float32: (2e-5, 2e-5), np.float64: (1e-12, 1e-12)}
    rtol, atol = tol[np.dtype(dtype).type]
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def rand(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def const(b, v, dtype=np.int32):
    return b.create_const(np.asarray(v, dtype))


# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------


def pool_ref(x, k, s, mode, pads=(0, 0, 0, 0), ceil=False, kind="max", exclusive=True, divisor=0):
    """NCHW x, in float64; PyTorch's rules for explicit pads and ceil mode, TensorFlow's for SAME."""
    return harness_pool_ref(x.astype(np.float64), k, s, mode, pads, ceil, kind, exclusive, divisor)[0]


def nhwc_to_nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# ---------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    **conv_args("hw", (1, 7)),
    nchw=st.booleans(),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv2d_matches_numpy(n, cg, og, groups, hw, k, stride, dil, pads, nchw, bias, seed):
    for i in range(2):
        assume(hw[i] + pads[2 * i] + pads[2 * i + 1] >= dil[i] * (k[i] - 1) + 1)
    rng = np.random.default_rng(seed)
    c, o = cg * groups, og * groups
    x = rand(rng, (n, c) + hw)
    w = rand(rng, (o, cg) + k)
    b = rand(rng, (o,))
    want = conv_ref(x, w, stride, pads, dil, groups) + (b[None, :, None, None] if bias else 0)
    fmt = "NCHW" if nchw else "NHWC"
    full = lambda v: [1, 1, *v] if nchw else [1, *v, 1]
    xin = x if nchw else nchw_to_nhwc(x)
    args = [xin, w] + ([b] if bias else [])
    y = run1(
        conv_build("Conv2D", strides=full(stride), pads=list(pads), dilations=full(dil), groups=groups,
                   data_format=fmt),
        *args,
    )
    close(y if nchw else nhwc_to_nchw(y), want, np.float32)


@pytest.mark.parametrize(
    "fmt,perm",
    [
        (Format.FORMAT_NHWC, (0, 2, 3, 1)),
        (Format.FORMAT_HWCN, (2, 3, 1, 0)),
        (Format.FORMAT_NCHW, (0, 1, 2, 3)),
    ],
)
def test_conv2d_reads_the_filter_in_its_format(fmt, perm):
    rng = np.random.default_rng(1)
    x = rand(rng, (2, 4, 6, 5))
    w = rand(rng, (6, 2, 3, 2))  # OIHW, groups 2
    want = conv_ref(x, w, (2, 1), (1, 0, 1, 1), (1, 2), 2)
    wf = np.ascontiguousarray(w.transpose(perm))
    y = run1(
        lambda _, xh, wh: ops.Conv2D(
            xh,
            wh,
            strides=[1, 1, 2, 1],
            pads=[1, 0, 1, 1],
            dilations=[1, 1, 1, 2],
            groups=2,
            data_format="NCHW",
        ),
        x,
        wf,
        formats={1: fmt},
    )
    close(y, want, np.float32)


def test_conv2d_float16_and_int8():
    rng = np.random.default_rng(2)
    x = rand(rng, (1, 3, 5, 5), np.float16)
    w = rand(rng, (4, 3, 3, 3), np.float16)
    b = rand(rng, (4,), np.float16)
    y = run1(
        lambda _, xh, wh, bh: ops.Conv2D(
            xh, wh, bh, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], data_format="NCHW"
        ),
        x,
        w,
        b,
    )
    want = conv_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b.astype(np.float64)[None, :, None, None]
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=1e-2, atol=1e-2)

    xi = rng.integers(-128, 128, size=(2, 4, 5, 5), dtype=np.int8)
    wi = rng.integers(-128, 128, size=(3, 4, 2, 2), dtype=np.int8)
    bi = rng.integers(-1000, 1000, size=(3,), dtype=np.int32)
    y = run1(
        lambda _, xh, wh, bh: ops.Conv2D(
            xh, wh, bh, strides=[1, 1, 2, 2], pads=[0, 1, 0, 1], data_format="NCHW"
        ),
        xi,
        wi,
        bi,
    )
    want = conv_ref(xi, wi, (2, 2), (0, 1, 0, 1), (1, 1), 1) + bi[None, :, None, None]
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want.astype(np.int32))


def test_conv2d_common_cnn_shape():
    rng = np.random.default_rng(3)
    x = rand(rng, (2, 16, 14, 14))
    w = rand(rng, (32, 16, 3, 3))
    y = run1(
        lambda _, xh, wh: ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], data_format="NCHW"),
        x,
        w,
    )
    close(y, conv_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1), np.float32)
    # 1x1 convolution: the input is used as it is, no im2col.
    w1 = rand(rng, (8, 16, 1, 1))
    y = run1(
        lambda _, xh, wh: ops.Conv2D(xh, wh, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW"),
        x,
        w1,
    )
    close(y, conv_ref(x, w1, (1, 1), (0, 0, 0, 0), (1, 1), 1), np.float32)


@pytest.mark.parametrize("nchw", [True, False])
def test_depthwise_conv2d(nchw):
    rng = np.random.default_rng(4)
    c, mult = 3, 2
    x = rand(rng, (2, c, 6, 7))
    if nchw:
        f = rand(rng, (c * mult, 1, 3, 2))  # [C * K, 1, kh, kw]
        w = f
        fmt = Format.FORMAT_NCHW
    else:
        f = rand(rng, (3, 2, c, mult))  # HWCN: [kh, kw, C, K]
        w = np.ascontiguousarray(f.transpose(2, 3, 0, 1)).reshape(c * mult, 1, 3, 2)
        fmt = Format.FORMAT_HWCN
    b = rand(rng, (c * mult,))
    want = conv_ref(x, w, (2, 1), (1, 1, 0, 1), (1, 1), c) + b[None, :, None, None]
    df = "NCHW" if nchw else "NHWC"
    strides = [1, 1, 2, 1] if nchw else [1, 2, 1, 1]
    y = run1(
        lambda _, xh, fh, bh: ops.DepthwiseConv2D(
            xh, fh, bh, strides=strides, pads=[1, 1, 0, 1], data_format=df
        ),
        x if nchw else nchw_to_nhwc(x),
        f,
        b,
        formats={1: fmt},
    )
    close(y if nchw else nhwc_to_nchw(y), want, np.float32)


def test_conv2d_bad_channels_is_an_error():
    # Compiling for the actual input shapes catches the mismatch (an error, not a crash).
    b = GraphBuilder("bad")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[1, -1, 4, 4])
    w = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[2, 3, 1, 1])
    g = b.build_and_reset([ops.Conv2D(x, w, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW")])
    for opts in MODES:
        s = Session(opts)
        s.add_graph(0, g)
        with pytest.raises(ge.GeError, match="channel"):
            s.run_graph(0, [np.zeros((1, 2, 4, 4), np.float32), np.zeros((2, 3, 1, 1), np.float32)])


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    **window_args("hw", (1, 7), dil=None, pad=(0, 1), stride_name="s"),
    mode=st.sampled_from(["CALCULATED", "SAME", "VALID"]),
    ceil=st.booleans(),
    exclusive=st.booleans(),
    nchw=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pool_v2_v3_match_numpy(hw, k, s, pads, mode, ceil, exclusive, nchw, seed):
    if mode == "VALID":
        assume(hw[0] >= k[0] and hw[1] >= k[1])
    if mode == "CALCULATED":
        # Pads at most half the window (PyTorch's rule), so every window reads some input.
        assume(all(pads[2 * i] <= k[i] // 2 and pads[2 * i + 1] <= k[i] // 2 for i in range(2)))
        assume(all(hw[i] + pads[2 * i] + pads[2 * i + 1] >= k[i] for i in range(2)))
    rng = np.random.default_rng(seed)
    x = rand(rng, (2, 3) + hw)
    fmt = "NCHW" if nchw else "NHWC"
    full = lambda v: [1, 1, *v] if nchw else [1, *v, 1]
    xin = x if nchw else nchw_to_nhwc(x)
    kw = {
        "ksize": full(k),
        "strides": full(s),
        "padding_mode": mode,
        "pads": list(pads),
        "ceil_mode": ceil,
        "data_format": fmt,
    }
    mx, av = run(lambda _, xh: [ops.MaxPoolV3(xh, **kw), ops.AvgPoolV2(xh, exclusive=exclusive, **kw)], xin)
    back = (lambda a: a) if nchw else nhwc_to_nchw
    rmode = "CALC" if mode == "CALCULATED" else mode
    close(back(mx), pool_ref(x, k, s, rmode, pads, ceil, "max"), np.float32)
    close(back(av), pool_ref(x, k, s, rmode, pads, ceil, "avg", exclusive), np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_avg_pool_tensorflow_style(padding):
    rng = np.random.default_rng(5)
    x = rand(rng, (2, 7, 6, 3))  # NHWC
    kw = {"ksize": [1, 3, 2, 1], "strides": [1, 2, 2, 1], "padding": padding}
    mx, av = run(lambda _, xh: [ops.MaxPool(xh, **kw), ops.AvgPool(xh, **kw)], x)
    xc = nhwc_to_nchw(x)
    close(nhwc_to_nchw(mx), pool_ref(xc, (3, 2), (2, 2), padding, kind="max"), np.float32)
    close(nhwc_to_nchw(av), pool_ref(xc, (3, 2), (2, 2), padding, kind="avg"), np.float32)


def test_pool_global_divisor_and_dtypes():
    rng = np.random.default_rng(6)
    x = rand(rng, (2, 3, 5, 4))
    g = run1(
        lambda _, xh: ops.AvgPoolV2(xh, ksize=[1, 1, 2, 2], strides=[1, 1, 1, 1], global_pooling=True), x
    )
    close(g, x.astype(np.float64).mean(axis=(2, 3), keepdims=True), np.float32)
    d = run1(
        lambda _, xh: ops.AvgPoolV2(
            xh, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], pads=[1, 1, 1, 1], divisor_override=3
        ),
        x,
    )
    close(d, pool_ref(x, (2, 2), (2, 2), "CALC", (1, 1, 1, 1), kind="avg", divisor=3), np.float32)
    for dt in (np.float16, np.float64, np.int32, np.uint8):
        xi = (rng.uniform(0, 100, size=(1, 2, 5, 5))).astype(dt)
        y = run1(
            lambda _, xh: ops.MaxPoolV3(xh, ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], pads=[1, 1, 1, 1]), xi
        )
        assert y.dtype == dt
        np.testing.assert_array_equal(y, pool_ref(xi, (3, 3), (2, 2), "CALC", (1, 1, 1, 1)).astype(dt))
    x16 = rand(rng, (1, 2, 4, 4), np.float16)
    y = run1(lambda _, xh: ops.AvgPoolV2(xh, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2]), x16)
    close(y, pool_ref(x16, (2, 2), (2, 2), "CALC", kind="avg"), np.float16)


def test_global_average_pool():
    rng = np.random.default_rng(7)
    for shape, dt in [((2, 3, 4, 5), np.float32), ((1, 2, 3, 2, 2), np.float64), ((2, 4, 3), np.float16)]:
        x = rand(rng, shape, dt)
        y = run1(lambda _, xh: ops.GlobalAveragePool(xh), x)
        close(y, x.astype(np.float64).mean(axis=tuple(range(2, len(shape))), keepdims=True), dt)


# ---------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_batch_norm_inference(fmt):
    rng = np.random.default_rng(8)
    c = 3
    x = rand(rng, (2, c, 4, 5)) if fmt == "NCHW" else rand(rng, (2, 4, 5, c))
    scale, offset, mean = rand(rng, (c,)), rand(rng, (c,)), rand(rng, (c,))
    var = rng.uniform(0.5, 2, size=(c,)).astype(np.float32)
    outs = run(
        lambda _, *h: ops.BatchNorm(*h, epsilon=1e-3, data_format=fmt, is_training=False),
        x,
        scale,
        offset,
        mean,
        var,
    )
    assert len(outs) == 6
    sh = (1, c, 1, 1) if fmt == "NCHW" else (1, 1, 1, c)
    r = lambda v: v.astype(np.float64).reshape(sh)
    close(outs[0], (x - r(mean)) / np.sqrt(r(var) + 1e-3) * r(scale) + r(offset), np.float32)
    for got, want in zip(outs[1:5], [mean, var, mean, var]):
        close(got, want, np.float32)
    assert outs[5].shape == (1,)


def test_batch_norm_training_and_float16():
    rng = np.random.default_rng(9)
    c = 2
    x = rand(rng, (3, c, 2, 2), np.float16)
    scale, offset = rand(rng, (c,)), rand(rng, (c,))
    mean, var = rand(rng, (c,)), rng.uniform(0.5, 2, size=(c,)).astype(np.float32)
    outs = run(
        lambda _, *h: ops.BatchNorm(
            *h, epsilon=1e-4, data_format="NCHW", is_training=True, exponential_avg_factor=0.25
        ),
        x,
        scale,
        offset,
        mean,
        var,
    )
    xd = x.astype(np.float64)
    bm, bv = xd.mean(axis=(0, 2, 3)), xd.var(axis=(0, 2, 3))
    r = lambda v: v.reshape(1, c, 1, 1)
    close(outs[0], (xd - r(bm)) / np.sqrt(r(bv) + 1e-4) * r(scale) + r(offset), np.float16)
    n = xd.size // c
    close(outs[1], 0.75 * mean + 0.25 * bm, np.float32)
    close(outs[2], 0.75 * var + 0.25 * bv * n / (n - 1), np.float32)
    close(outs[3], bm, np.float32)
    close(outs[4], bv, np.float32)


@pytest.mark.parametrize("bna,bpa", [(1, 1), (2, 2), (-1, -1), (1, 2), (0, 0)])
def test_layer_norm(bna, bpa):
    rng = np.random.default_rng(10)
    x = rand(rng, (2, 3, 4))
    p = x.shape[bpa:]
    gamma, beta = rand(rng, p), rand(rng, p)
    y, m, v = run(
        lambda _, *h: ops.LayerNorm(*h, begin_norm_axis=bna, begin_params_axis=bpa, epsilon=1e-5),
        x,
        gamma,
        beta,
    )
    axes = tuple(range(bna % 3, 3))
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=axes, keepdims=True), xd.var(axis=axes, keepdims=True)
    close(y, (xd - mean) / np.sqrt(var + 1e-5) * gamma + beta, np.float32)
    close(m, mean, np.float32)
    close(v, var, np.float32)


@pytest.mark.parametrize(
    "fmt,shape", [("NCHW", (2, 3, 4, 5)), ("NHWC", (2, 4, 5, 3)), ("NDHWC", (2, 2, 3, 2, 3))]
)
def test_instance_norm(fmt, shape):
    rng = np.random.default_rng(11)
    x = rand(rng, shape)
    ca = 1 if fmt.startswith("NC") else len(shape) - 1
    c = shape[ca]
    gamma, beta = rand(rng, (c,)), rand(rng, (c,))
    y, m, v = run(lambda _, *h: ops.InstanceNorm(*h, data_format=fmt, epsilon=1e-5), x, gamma, beta)
    axes = tuple(i for i in range(1, len(shape)) if i != ca)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=axes, keepdims=True), xd.var(axis=axes, keepdims=True)
    sh = [1] * len(shape)
    sh[ca] = c
    close(y, (xd - mean) / np.sqrt(var + 1e-5) * gamma.reshape(sh) + beta.reshape(sh), np.float32)
    close(m, mean, np.float32)
    close(v, var, np.float32)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_group_norm(fmt):
    rng = np.random.default_rng(12)
    n, c, g = 2, 6, 3
    xc = rand(rng, (n, c, 3, 4))
    x = xc if fmt == "NCHW" else nchw_to_nhwc(xc)
    gamma, beta = rand(rng, (c,)), rand(rng, (c,))
    y, m, v = run(lambda _, *h: ops.GroupNorm(*h, num_groups=g, data_format=fmt, eps=1e-5), x, gamma, beta)
    xg = xc.astype(np.float64).reshape(n, g, -1)
    mean, var = xg.mean(axis=2), xg.var(axis=2)
    want = ((xg - mean[..., None]) / np.sqrt(var[..., None] + 1e-5)).reshape(xc.shape)
    want = want * gamma.reshape(1, c, 1, 1) + beta.reshape(1, c, 1, 1)
    close(y if fmt == "NCHW" else nhwc_to_nchw(y), want, np.float32)
    close(m, mean, np.float32)
    close(v, var, np.float32)


@pytest.mark.parametrize("nhwc", [False, True])
def test_lrn(nhwc):
    rng = np.random.default_rng(13)
    xc = rand(rng, (2, 7, 3, 4))
    r, bias, alpha, beta = 2, 1.5, 0.3, 0.75
    sq = xc.astype(np.float64) ** 2
    s = np.zeros_like(sq)
    for ch in range(7):
        s[:, ch] = sq[:, max(0, ch - r) : ch + r + 1].sum(axis=1)
    want = xc / (bias + alpha * s) ** beta
    x = nchw_to_nhwc(xc) if nhwc else xc
    y = run1(
        lambda _, h: ops.LRN(h, depth_radius=r, bias=bias, alpha=alpha, beta=beta),
        x,
        formats={0: Format.FORMAT_NHWC} if nhwc else None,
    )
    close(nhwc_to_nchw(y) if nhwc else y, want, np.float32)


def test_prelu():
    rng = np.random.default_rng(14)
    x = rand(rng, (2, 3, 4))
    w = rand(rng, (3,))
    y = run1(lambda _, a, b: ops.PRelu(a, b), x, w)
    close(y, np.where(x >= 0, x, x * w[None, :, None]), np.float32)
    w1 = np.array([0.25], np.float32)
    x16 = x.astype(np.float16)
    y = run1(lambda _, a, b: ops.PRelu(a, b), x16, w1.astype(np.float16))
    close(y, np.where(x16 >= 0, x16, x16 * np.float16(0.25)), np.float16)


# ---------------------------------------------------------------------------------------------
# Gather and scatter
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.float32, np.int64, np.bool_, np.float16])
def test_gather_v2(dt):
    rng = np.random.default_rng(15)
    x = (rand(rng, (3, 4, 5)) * 10).astype(dt)
    idx = np.array([[3, 0], [1, 1], [2, 3]], np.int32)
    y = run1(lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 1)), x, idx)
    np.testing.assert_array_equal(y, np.take(x, idx, axis=1))
    y = run1(lambda b, xh, ih: ops.GatherV2D(xh, ih, axis=-1), x.astype(np.float32), idx.astype(np.int64))
    np.testing.assert_array_equal(y, np.take(x.astype(np.float32), idx, axis=-1))
    # batch_dims 1: row b of indices gathers from x[b].
    y = run1(lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 1), batch_dims=1), x, idx)
    np.testing.assert_array_equal(y, np.stack([np.take(x[i], idx[i], axis=0) for i in range(3)]))
    # Negative indices: only with negative_index_support.
    neg = np.array([-1, 0], np.int32)
    y = run1(lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 0), negative_index_support=True), x, neg)
    np.testing.assert_array_equal(y, x[[-1, 0]])
    fails(lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 0)), x, neg, match="out of range")
    fails(
        lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 1)), x, np.array([4], np.int32), match="out of range"
    )


def test_gather_elements_and_nd():
    rng = np.random.default_rng(16)
    x = rand(rng, (3, 4))
    idx = rng.integers(0, 3, size=(2, 4)).astype(np.int64)
    y = run1(lambda _, xh, ih: ops.GatherElements(xh, ih, dim=0), x, idx)
    np.testing.assert_array_equal(y, np.take_along_axis(x, idx, axis=0))
    idx1 = rng.integers(0, 4, size=(3, 6)).astype(np.int32)
    y = run1(lambda _, xh, ih: ops.GatherElements(xh, ih, dim=-1), x, idx1)
    np.testing.assert_array_equal(y, np.take_along_axis(x, idx1, axis=1))
    fails(
        lambda _, xh, ih: ops.GatherElements(xh, ih, dim=0),
        x,
        np.full((1, 4), 3, np.int32),
        match="out of range",
    )

    x3 = rand(rng, (3, 4, 5))
    nd = np.array([[[0, 1], [2, 3]], [[1, 0], [2, 2]]], np.int32)  # [2, 2, K=2]
    y = run1(lambda _, xh, ih: ops.GatherNd(xh, ih), x3, nd)
    np.testing.assert_array_equal(y, x3[nd[..., 0], nd[..., 1]])
    fails(lambda _, xh, ih: ops.GatherNd(xh, ih), x3, np.array([[3, 0]], np.int32), match="out of range")


def test_scatter():
    rng = np.random.default_rng(17)
    data = rand(rng, (3, 4))
    idx = np.array([[1, 0, 2, 1], [0, 0, 2, 1]], np.int64)
    upd = rand(rng, (2, 4))
    for red in ["none", "add", "mul", "max", "min"]:
        want = data.copy()
        for i in range(2):
            for j in range(4):
                t = (idx[i, j], j)
                if red == "none":
                    want[t] = upd[i, j]
                elif red == "add":
                    want[t] += upd[i, j]
                elif red == "mul":
                    want[t] *= upd[i, j]
                elif red == "max":
                    want[t] = max(want[t], upd[i, j])
                else:
                    want[t] = min(want[t], upd[i, j])
        if red == "none":
            idx_u = np.array([[1, 0, 2, 1]], np.int64)  # no duplicates: order-independent
            want = data.copy()
            want[idx_u[0], np.arange(4)] = upd[0]
            y = run1(lambda _, d, i, u: ops.ScatterElements(d, i, u, axis=0), data, idx_u, upd[:1])
        else:
            y = run1(
                lambda _, d, i, u, red=red: ops.ScatterElements(d, i, u, axis=0, reduction=red),
                data,
                idx,
                upd,
            )
        close(y, want, np.float32)
    fails(
        lambda _, d, i, u: ops.ScatterElements(d, i, u, axis=1),
        data,
        np.full((1, 1), 4, np.int64),
        upd[:1, :1],
    )

    # ScatterNd sums duplicates into zeros; ScatterNdUpdate overwrites a copy.
    ind = np.array([[0], [2], [0]], np.int32)
    u = rand(rng, (3, 4))
    y = run1(lambda b, i, x: ops.ScatterNd(i, x, const(b, [3, 4])), ind, u)
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, ind[:, 0], u)
    close(y, want, np.float32)
    ind2 = np.array([[1, 3], [2, 0]], np.int64)
    y = run1(lambda _, v, i, x: ops.ScatterNdUpdate(v, i, x), data, ind2, np.array([5.0, 6.0], np.float32))
    want = data.copy()
    want[1, 3], want[2, 0] = 5.0, 6.0
    np.testing.assert_array_equal(y, want)
    fails(
        lambda b, i, x: ops.ScatterNd(i, x, const(b, [3, 4])),
        np.array([[3]], np.int32),
        u[:1],
        match="out of range",
    )


# ---------------------------------------------------------------------------------------------
# Slicing
# ---------------------------------------------------------------------------------------------


def test_slice():
    rng = np.random.default_rng(18)
    x = rand(rng, (4, 5, 6))
    y = run1(lambda b, xh: ops.Slice(xh, const(b, [1, 0, 2]), const(b, [2, -1, 3])), x)
    np.testing.assert_array_equal(y, x[1:3, 0:, 2:5])
    y = run1(lambda b, xh: ops.SliceD(xh, offsets=[-2, 1, 0], size=[-1, 3, 6]), x)
    np.testing.assert_array_equal(y, x[2:, 1:4, :])
    # Offsets that do not fit are a kernel error when they are graph inputs.
    fails(
        lambda _, xh, o, s: ops.Slice(xh, o, s),
        x,
        np.array([3, 0, 0], np.int32),
        np.array([2, 1, 1], np.int32),
    )


def _np_index(begin, end, strides, bm, em, ellipsis, new_axis, shrink):
    idx = []
    for i in range(len(begin)):
        if ellipsis >> i & 1:
            idx.append(Ellipsis)
        elif new_axis >> i & 1:
            idx.append(None)
        elif shrink >> i & 1:
            idx.append(begin[i])
        else:
            idx.append(slice(None if bm >> i & 1 else begin[i], None if em >> i & 1 else end[i], strides[i]))
    return tuple(idx)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_strided_slice_matches_numpy(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    n = data.draw(st.integers(1, len(shape)))
    begin = data.draw(st.lists(st.integers(-7, 7), min_size=n, max_size=n))
    end = data.draw(st.lists(st.integers(-7, 7), min_size=n, max_size=n))
    strides = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=n, max_size=n))
    bm, em = data.draw(st.integers(0, 2**n - 1)), data.draw(st.integers(0, 2**n - 1))
    shrink = data.draw(st.integers(0, 2**n - 1))
    ellipsis = data.draw(st.sampled_from([0] + [1 << i for i in range(n)]))
    new_axis = data.draw(st.integers(0, 2**n - 1)) & ~ellipsis & ~shrink
    # Shrunk dims must index inside x (else numpy raises; we test the error separately).
    real = [i for i in range(n) if not (ellipsis >> i & 1) and not (new_axis >> i & 1)]
    assume(len(real) <= len(shape))
    ell = len(shape) - len(real)
    j = 0
    for i in range(n):
        if ellipsis >> i & 1:
            j += ell
        elif new_axis >> i & 1:
            continue
        else:
            if shrink >> i & 1:
                assume(-shape[j] <= begin[i] < shape[j])
            j += 1
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    masks = {
        "begin_mask": bm,
        "end_mask": em,
        "ellipsis_mask": ellipsis,
        "new_axis_mask": new_axis,
        "shrink_axis_mask": shrink,
    }
    want = x[_np_index(begin, end, strides, bm, em, ellipsis, new_axis, shrink)]
    y = run1(
        lambda b, xh: ops.StridedSlice(xh, const(b, begin), const(b, end), const(b, strides), **masks), x
    )
    np.testing.assert_array_equal(y, want)
    y = run1(lambda b, xh: ops.StridedSliceD(xh, begin=begin, end=end, strides=strides, **masks), x)
    np.testing.assert_array_equal(y, want)


def test_strided_slice_errors():
    x = np.zeros((2, 3), np.float32)
    spec = [np.array(v, np.int64) for v in ([0, 5], [1, 6], [1, 1])]
    fails(
        lambda _, xh, b, e, s: ops.StridedSlice(xh, b, e, s, shrink_axis_mask=2),
        x,
        *spec,
        match="out of range",
    )
    fails(
        lambda _, xh, b, e, s: ops.StridedSlice(xh, b, e, s), x, spec[0], spec[1], np.array([1, 0], np.int64)
    )


def test_reverse_split_unpack():
    rng = np.random.default_rng(19)
    x = rand(rng, (4, 6, 3))
    y = run1(lambda b, xh: ops.ReverseV2(xh, const(b, [0, -1])), x)
    np.testing.assert_array_equal(y, x[::-1, :, ::-1])
    outs = run(lambda _, xh: ops.SplitD(xh, 3, split_dim=1, num_split=3), x)
    for got, want in zip(outs, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(got, want)
    outs = run(lambda b, xh: ops.Split(const(b, 0), xh, 2, num_split=2), x)
    for got, want in zip(outs, np.split(x, 2, axis=0)):
        np.testing.assert_array_equal(got, want)
    outs = run(lambda b, xh: ops.SplitV(xh, const(b, [1, -1, 2]), const(b, -2), 3, num_split=3), x)
    for got, want in zip(outs, np.split(x, [1, 4], axis=1)):
        np.testing.assert_array_equal(got, want)
    outs = run(lambda _, xh: ops.Unpack(xh, 3, num=3, axis=2), x)
    for k, got in enumerate(outs):
        np.testing.assert_array_equal(got, x[:, :, k])


@pytest.mark.parametrize(
    "mode,np_mode",
    [
        ("constant", "constant"),
        ("reflect", "reflect"),
        ("edge", "edge"),
        ("symmetric", "symmetric"),
        ("circular", "wrap"),
    ],
)
def test_pad_v3(mode, np_mode):
    rng = np.random.default_rng(20)
    x = rand(rng, (3, 4))
    pads = [[1, 0], [2, 1]]
    kw = {"constant_values": 2.5} if mode == "constant" else {}
    want = np.pad(x, pads, mode=np_mode, **kw)
    cv = (lambda b: b.create_const(np.array(2.5, np.float32))) if mode == "constant" else (lambda b: None)
    y = run1(lambda b, xh: ops.PadV3(xh, const(b, [1, 0, 2, 1]), cv(b), mode=mode), x)
    np.testing.assert_array_equal(y, want)
    # Not contiguous: all begins, then all ends.
    y = run1(
        lambda b, xh: ops.PadV3(xh, const(b, [1, 2, 0, 1]), cv(b), mode=mode, paddings_contiguous=False), x
    )
    np.testing.assert_array_equal(y, want)


def test_pad_and_pad_d():
    rng = np.random.default_rng(21)
    x = (rand(rng, (2, 3)) * 10).astype(np.int32)
    y = run1(lambda b, xh: ops.Pad(xh, const(b, [[1, 0], [2, 3]])), x)
    np.testing.assert_array_equal(y, np.pad(x, [[1, 0], [2, 3]]))
    y = run1(lambda _, xh: ops.PadD(xh, paddings=[[0, 2], [1, 1]]), x)
    np.testing.assert_array_equal(y, np.pad(x, [[0, 2], [1, 1]]))


# ---------------------------------------------------------------------------------------------
# OneHot, Range, Cumsum, ArgMax, TopK, triangles, Where/NonZero
# ---------------------------------------------------------------------------------------------


def test_one_hot():
    idx = np.array([[0, 3], [-1, 2]], np.int32)  # -1 and 3 (== depth) are all-off rows
    on, off = np.float32(5), np.float32(-1)
    for axis in (-1, 0, 1):
        y = run1(
            lambda b, ih, axis=axis: ops.OneHot(
                ih, const(b, 3), b.create_const(np.array(on)), b.create_const(np.array(off)), axis=axis
            ),
            idx,
        )
        want = np.where(idx[..., None] == np.arange(3), on, off)
        want = np.moveaxis(want, -1, axis if axis >= 0 else 2)
        np.testing.assert_array_equal(y, want)
    y = run1(lambda b, ih: ops.OneHotD(ih, const(b, 1), const(b, 0), depth=4), idx)
    np.testing.assert_array_equal(y, (idx[..., None] == np.arange(4)).astype(np.int32))


def test_range():
    cases = [
        (0, 10, 3, np.int32),
        (5, -4, -2, np.int64),
        (0.5, 2.0, 0.25, np.float32),
        (1.0, 0.0, -0.3, np.float64),
    ]
    for s, l, d, dt in cases:
        y = run1(lambda b, s=s, l=l, d=d, dt=dt: ops.Range(const(b, s, dt), const(b, l, dt), const(b, d, dt)))
        want = np.arange(s, l, d, dtype=dt)
        assert y.dtype == dt
        np.testing.assert_allclose(y, want, rtol=1e-6)
    y = run1(lambda b: ops.Range(const(b, 0), const(b, 9), const(b, 3), is_closed=True))
    np.testing.assert_array_equal(y, [0, 3, 6, 9])
    fails(
        lambda _, s, l, d: ops.Range(s, l, d),
        np.array(0, np.int32),
        np.array(5, np.int32),
        np.array(0, np.int32),
    )


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16, np.uint8])
def test_cumsum(dt):
    rng = np.random.default_rng(22)
    x = (rng.uniform(0, 8, size=(3, 4, 2))).astype(dt)
    for axis in (0, 1, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                xr = np.flip(x, axis) if reverse else x
                c = np.cumsum(xr, axis=axis, dtype=dt)
                if exclusive:
                    c = np.concatenate(
                        [np.zeros_like(np.take(c, [0], axis=axis)), np.delete(c, -1, axis=axis)], axis=axis
                    )
                want = np.flip(c, axis) if reverse else c
                y = run1(
                    lambda b, xh, a=axis, e=exclusive, r=reverse: ops.Cumsum(
                        xh, const(b, a), exclusive=e, reverse=r
                    ),
                    x,
                )
                assert y.dtype == dt
                np.testing.assert_allclose(
                    y.astype(np.float64), want.astype(np.float64), rtol=2e-3 if dt == np.float16 else 1e-6
                )
    y = run1(lambda _, xh: ops.CumsumD(xh, axis=1), x)
    np.testing.assert_allclose(
        y.astype(np.float64), np.cumsum(x, axis=1, dtype=dt).astype(np.float64), rtol=2e-3
    )


def test_arg_max_min():
    rng = np.random.default_rng(23)
    x = rng.integers(0, 4, size=(3, 5, 4)).astype(np.float32)  # ties: first index wins
    x[1, 2, 3] = np.nan
    for axis in (0, 1, -1):
        y = run1(lambda b, xh, a=axis: ops.ArgMaxV2(xh, const(b, a)), x)
        assert y.dtype == np.int64
        np.testing.assert_array_equal(y, np.argmax(x, axis=axis))
        y = run1(lambda b, xh, a=axis: ops.ArgMin(xh, const(b, a), dtype=DataType.DT_INT32), x)
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, np.argmin(x, axis=axis))
    y = run1(lambda _, xh: ops.ArgMaxD(xh, dimension=1), x)
    np.testing.assert_array_equal(y, np.argmax(x, axis=1))


@pytest.mark.parametrize("largest", [True, False])
def test_top_k(largest):
    rng = np.random.default_rng(24)
    x = rng.integers(0, 6, size=(3, 7, 2)).astype(np.float32)
    for dim in (1, -1, 0):
        k = min(3, x.shape[dim])
        vals, idx = run(lambda b, xh, k=k, dim=dim: ops.TopKV2(xh, const(b, k), dim=dim, largest=largest), x)
        order = np.argsort(-x if largest else x, axis=dim, kind="stable")
        want_i = np.take(order, np.arange(k), axis=dim)
        np.testing.assert_array_equal(idx, want_i)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want_i, axis=dim))
        assert idx.dtype == np.int32
    fails(lambda _, xh, kh: ops.TopKV2(xh, kh), x, np.array(3, np.int32), match="more than")


def test_triangles():
    rng = np.random.default_rng(25)
    x = rand(rng, (2, 4, 5))
    for k in (-2, 0, 1, 7):
        np.testing.assert_array_equal(run1(lambda _, h, k=k: ops.Tril(h, diagonal=k), x), np.tril(x, k))
        np.testing.assert_array_equal(run1(lambda _, h, k=k: ops.Triu(h, diagonal=k), x), np.triu(x, k))
        np.testing.assert_array_equal(
            run1(lambda b, h, k=k: ops.Trilu(h, const(b, k, np.int64), upper=1), x), np.triu(x, k)
        )
    np.testing.assert_array_equal(run1(lambda _, h: ops.Trilu(h), x), np.tril(x))
    xb = x > 0
    np.testing.assert_array_equal(run1(lambda _, h: ops.Triu(h), xb), np.triu(xb))


def test_where_nonzero():
    rng = np.random.default_rng(26)
    x = rng.integers(-1, 2, size=(3, 4)).astype(np.float32)
    y = run1(lambda _, h: ops.Where(h), x)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.argwhere(x))
    y = run1(lambda _, h: ops.NonZero(h, transpose=True), x)
    np.testing.assert_array_equal(y, np.array(np.nonzero(x)))
    y = run1(lambda _, h: ops.NonZero(h, dtype=DataType.DT_INT32), x > 0)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.argwhere(x > 0))
    y = run1(lambda _, h: ops.Where(h), np.zeros((2, 2), np.int32))
    assert y.shape == (0, 2)


def test_extreme_values_are_errors_not_panics():
    big = np.iinfo(np.int64)
    x = np.zeros((2, 3), np.float32)
    i64 = lambda *v: np.array(v, np.int64)
    i32 = lambda *v: np.array(v, np.int32)
    cases = [
        (
            lambda b, xh, ih: ops.GatherV2(xh, ih, const(b, 0), negative_index_support=True),
            x,
            i64(big.min, big.max),
        ),
        (lambda _, xh, ih: ops.GatherElements(xh, ih), x, np.full((1, 3), big.max, np.int64)),
        (lambda _, xh, ih: ops.GatherNd(xh, ih), x, i64(big.min, 0).reshape(1, 2)),
        (lambda _, xh, o, s: ops.Slice(xh, o, s), x, i64(big.min, 0), i64(1, 1)),
        (lambda _, xh, o, s: ops.Slice(xh, o, s), x, i64(1, 0), i64(big.max, 1)),
        (lambda _, xh, k: ops.TopKV2(xh, k), x, i32(-1)),
        (lambda _, xh, a: ops.Cumsum(xh, a), x, i32(5)),
        (lambda b, xh, s: ops.SplitV(xh, s, const(b, 1), 2, num_split=2), x, i32(-1, -1)),
        (lambda b, xh, s: ops.SplitV(xh, s, const(b, 1), 2, num_split=2), x, i32(-5, 8)),
        (lambda _, xh, p: ops.PadV3(xh, p), x, i64(big.max, big.max, 0, 0)),
        (lambda _, xh, p: ops.PadV3(xh, p), x, i64(-3, 0, 0, 0)),
        (lambda _, xh, p: ops.PadV3(xh, p, mode="edge"), np.zeros((0, 2), np.float32), i64(1, 0, 0, 0)),
        (lambda _, s, l, d: ops.Range(s, l, d), i64(big.min), i64(big.max), i64(1)),
        (lambda _, s, l, d: ops.Range(s, l, d), np.float32(0), np.float32(1e30), np.float32(1e-30)),
        (
            lambda b, i, u: ops.ScatterNd(i, u, const(b, [3, 4])),
            i64(big.min).reshape(1, 1),
            np.zeros((1, 4), np.float32),
        ),
        (
            lambda _, d, i, u: ops.ScatterElements(d, i, u),
            x,
            np.full((1, 1), big.min, np.int64),
            np.zeros((1, 1), np.float32),
        ),
        (
            lambda b, xh, d: ops.OneHot(xh, d, const(b, 1.0, np.float32), const(b, 0.0, np.float32)),
            i32(0, 1),
            i32(-1),
        ),
    ]
    for fn, *inputs in cases:
        fails(fn, *inputs)
    # Extreme strided-slice specs clamp (TensorFlow) and extreme diagonals keep or zero all.
    spec = (i64(big.min, big.max), i64(big.max, big.min), i64(big.max, big.min))
    y = run1(lambda _, xh, b, e, s: ops.StridedSlice(xh, b, e, s), x, *spec)
    np.testing.assert_array_equal(y, x[big.min : big.max : big.max, big.max : big.min : big.min])
    np.testing.assert_array_equal(run1(lambda _, h: ops.Tril(h, diagonal=int(big.min)), x), np.zeros_like(x))
    np.testing.assert_array_equal(run1(lambda _, h: ops.Triu(h, diagonal=int(big.min)), x), x)
