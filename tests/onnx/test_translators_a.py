"""ONNX translators of issue 22 point 4, part A: LinearAttention, CausalConvWithState and
ai.onnx.preview FlexAttention (crates/ge-onnx/src/ops/transformer.rs), TensorScatter
(ops/index.rs), uint64 Div/Mod and training-mode Dropout (ops/elementwise.rs), Split with
num_outputs over a run-time dim (ops/shape.rs). Each model is built with onnx.helper, loaded
with ge.onnx.load, run in a Session and compared with onnx's ReferenceEvaluator; Dropout's
random masks are checked by their distribution and their consistency with the output."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, graph_model, node_model, run_ge, vi  # noqa: E402

rng = np.random.default_rng(22)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def check(op, inputs, inits=(), rtol=1e-4, atol=1e-5, opset=27, n_out=1, **attrs):
    m = node_model(op, inputs, inits, opset=opset, n_out=n_out, **attrs)
    return check_model(m, dict(inputs), rtol, atol, modes=("on", "off"))


def refuse(op, inputs, match, opset=27, n_out=1, **attrs):
    m = node_model(op, inputs, opset=opset, n_out=n_out, **attrs)
    with pytest.raises(ge.TranslationError, match=match):
        ge.onnx.load(m.SerializeToString())


# ------------------------------------------------------------------------- LinearAttention


@settings(max_examples=16, deadline=None)
@given(
    rule=st.sampled_from(["linear", "gated", "delta", "gated_delta"]),
    b=st.integers(1, 2),
    t=st.integers(1, 4),
    heads=st.sampled_from([(2, 2), (4, 2), (3, 1)]),
    dk=st.integers(1, 3),
    dv=st.integers(1, 3),
    past=st.booleans(),
    per_dim_decay=st.booleans(),
    beta_one=st.booleans(),
    scale=st.sampled_from([0.0, 0.7]),
)
def test_linear_attention(rule, b, t, heads, dk, dv, past, per_dim_decay, beta_one, scale):
    qh, kvh = heads
    inputs = [("q", randn(b, t, qh * dk)), ("k", randn(b, t, kvh * dk)), ("v", randn(b, t, kvh * dv)),
              ("past", randn(b, kvh, dk, dv)) if past else ("", None)]
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    dec = -np.abs(randn(b, t, kvh * dk if per_dim_decay else kvh)) if gated else None
    beta = (1 / (1 + np.exp(-randn(b, t, 1 if beta_one else kvh)))).astype(np.float32) if delta else None
    inputs += [("decay", dec) if gated else ("", None), ("beta", beta) if delta else ("", None)]
    while inputs[-1][1] is None:
        inputs.pop()
    check("LinearAttention", inputs, n_out=2, q_num_heads=qh, kv_num_heads=kvh, update_rule=rule,
          scale=scale)


def test_linear_attention_fp16_state_keeps_its_dtype():
    q, k, v = (randn(1, 3, 4, dtype=np.float16) for _ in range(3))
    past = randn(1, 2, 2, 2)  # a float32 state with float16 activations
    y, s = check("LinearAttention", [("q", q), ("k", k), ("v", v), ("past", past)], n_out=2,
                 rtol=2e-3, atol=2e-3, q_num_heads=2, kv_num_heads=2, update_rule="linear")
    assert y.dtype == np.float16 and s.dtype == np.float32


def test_linear_attention_refusals():
    q = randn(1, 2, 4)
    refuse("LinearAttention", [("q", q), ("k", q), ("v", q)], "needs the decay input", n_out=2,
           q_num_heads=2, kv_num_heads=2, update_rule="gated")
    refuse("LinearAttention", [("q", q), ("k", q), ("v", q), ("", None), ("d", q)], "takes no decay",
           n_out=2, q_num_heads=2, kv_num_heads=2, update_rule="linear")
    refuse("LinearAttention", [("q", q), ("k", q), ("v", q)], "positive multiple", n_out=2,
           q_num_heads=3, kv_num_heads=2, update_rule="linear")
    refuse("LinearAttention", [("q", q), ("k", q), ("v", q)], "update_rule 'fast'", n_out=2,
           q_num_heads=2, kv_num_heads=2, update_rule="fast")
    # A sequence length unknown at import cannot be unrolled.
    node = helper.make_node("LinearAttention", ["q", "q", "q"], ["y", "s"], q_num_heads=2, kv_num_heads=2,
                            update_rule="linear")
    m = graph_model([node], [vi("q", shape=(1, "T", 4))], [vi("y", shape=None), vi("s", shape=None)],
                    opset=27)
    with pytest.raises(ge.TranslationError, match="not supported: .*sequence length"):
        ge.onnx.load(m.SerializeToString())


# --------------------------------------------------------------------- CausalConvWithState


@settings(max_examples=16, deadline=None)
@given(
    b=st.integers(1, 2),
    c=st.integers(1, 3),
    length=st.integers(1, 5),
    k=st.integers(1, 4),
    bias=st.booleans(),
    past=st.booleans(),
    act=st.sampled_from(["none", "silu", "swish"]),
)
def test_causal_conv_with_state(b, c, length, k, bias, past, act):
    inputs = [("x", randn(b, c, length)), ("w", randn(c, 1, k)), ("b", randn(c)) if bias else ("", None),
              ("p", randn(b, c, k - 1)) if past else ("", None)]
    while inputs[-1][1] is None:
        inputs.pop()
    y, present = check("CausalConvWithState", inputs, n_out=2, activation=act)
    assert present.shape == (b, c, k - 1)


def test_causal_conv_with_state_refusals():
    x = randn(1, 2, 3)
    refuse("CausalConvWithState", [("x", x), ("w", randn(2, 1, 2))], "activation 'gelu'", n_out=2,
           activation="gelu")
    refuse("CausalConvWithState", [("x", x), ("w", randn(3, 1, 2))], r"weight must be \(2, 1, 2\)", n_out=2)
    refuse("CausalConvWithState", [("x", x), ("w", randn(2, 1, 3)), ("", None), ("p", randn(1, 2, 1))],
           "k-1 = 2 steps", n_out=2)


# ---------------------------------------------------------------------------- FlexAttention


def flex_model(q, k, v, **attrs):
    return node_model("FlexAttention", [("Q", q), ("K", k), ("V", v)], opset=23, domain="ai.onnx.preview",
                      **attrs)


@settings(max_examples=10, deadline=None)
@given(heads=st.sampled_from([(2, 2), (4, 2), (4, 1)]), lq=st.integers(1, 4), lk=st.integers(1, 4),
       e=st.integers(1, 4), ev=st.integers(1, 4), scale=st.sampled_from([None, 0.3]))
def test_flex_attention(heads, lq, lk, e, ev, scale):
    qh, kvh = heads
    q, k, v = randn(2, qh, lq, e), randn(2, kvh, lk, e), randn(2, kvh, lk, ev)
    attrs = {} if scale is None else {"scale": scale}
    check_model(flex_model(q, k, v, **attrs), {"Q": q, "K": k, "V": v}, 1e-4, 1e-5, modes=("on", "off"))


def test_flex_attention_modifiers_read_outer_values():
    """score_mod adds a bias that is a graph input of the outer graph (a capture of the
    subgraph, which onnx's ReferenceEvaluator cannot run: the expected values are numpy's);
    prob_mod scales by a constant of its own."""
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4)
    bias = randn(3, 5)
    score = helper.make_graph([helper.make_node("Add", ["s", "bias"], ["s2"])], "score_mod",
                              [vi("s", shape=None)], [vi("s2", shape=None)])
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    prob = helper.make_graph([helper.make_node("Mul", ["p", "half"], ["p2"])], "prob_mod",
                             [vi("p", shape=None)], [vi("p2", shape=None)], initializer=[half])
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview",
                            score_mod=score, prob_mod=prob)
    ins = [vi(n, shape=a.shape) for n, a in [("Q", q), ("K", k), ("V", v), ("bias", bias)]]
    m = graph_model([node], ins, [vi("Y", shape=None)], opsets=[("", 23), ("ai.onnx.preview", 1)])
    s = q @ k.transpose(0, 1, 3, 2) / 2 + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True) * 0.5) @ v
    check_model(m, {"Q": q, "K": k, "V": v, "bias": bias}, 1e-4, 1e-5, modes=("on", "off"), expected=[want])


def test_flex_attention_double_matches_reference():
    # GE's BatchMatMulV2 has no double: the products are Mul and ReduceSum, the softmax in double.
    q, k, v = randn(2, 4, 3, 5, dtype=np.float64), randn(2, 2, 4, 5, dtype=np.float64), \
        randn(2, 2, 4, 3, dtype=np.float64)
    check_model(flex_model(q, k, v), {"Q": q, "K": k, "V": v}, 1e-12, 1e-12, modes=("on", "off"))


def test_flex_attention_integers_are_refused():
    q = np.ones((1, 1, 2, 2), np.int32)
    with pytest.raises(ge.TranslationError, match="not supported: .*FlexAttention on DT_INT32"):
        ge.onnx.load(flex_model(q, q, q).SerializeToString())


# ---------------------------------------------------------------------------- TensorScatter


@settings(max_examples=12, deadline=None)
@given(mode=st.sampled_from(["linear", "circular"]), axis=st.sampled_from([-2, 2, 1]),
       indices=st.booleans(), s=st.integers(1, 3))
def test_tensor_scatter(mode, axis, indices, s):
    cache_len = 5
    shape = [2, 3, 4, 2]
    ax = axis % 4
    shape[ax] = cache_len
    upd_shape = list(shape)
    upd_shape[ax] = s
    cache, upd = randn(*shape), randn(*upd_shape)
    hi = cache_len if mode == "circular" else cache_len - s + 1
    w = rng.integers(0, hi, size=2).astype(np.int64)
    inputs = [("cache", cache), ("upd", upd)] + ([("w", w)] if indices else [])
    check("TensorScatter", inputs, opset=24, mode=mode, axis=axis)


def test_tensor_scatter_refuses_batch_axis():
    refuse("TensorScatter", [("c", randn(3, 2)), ("u", randn(1, 2))], "batch axis", opset=24, axis=0)


# ----------------------------------------------------------------------------- uint64 Div/Mod

U64 = st.integers(0, 2**64 - 1)


@settings(max_examples=20, deadline=None)
@given(a=st.lists(U64, min_size=6, max_size=6), b=st.lists(st.integers(1, 2**64 - 1), min_size=6, max_size=6),
       op=st.sampled_from(["Div", "Mod"]), fmod=st.sampled_from([0, 1]))
def test_uint64_div_mod_exact(a, b, op, fmod):
    # Edge values: around 2^63 and the largest, mixed in.
    a = np.array(a[:3] + [2**64 - 1, 2**63, 2**63 - 1], dtype=np.uint64)
    b = np.array(b[:3] + [2**63 + 1, 2**63, 1], dtype=np.uint64)
    attrs = {"fmod": fmod} if op == "Mod" else {}
    (y,) = check(op, [("a", a), ("b", b)], opset=13, **attrs)
    want = a // b if op == "Div" else a % b
    np.testing.assert_array_equal(y, want)


# ------------------------------------------------------------------ training-mode Dropout


def dropout_model(x_shape, seed=None, mask=True):
    attrs = {} if seed is None else {"seed": seed}
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "z"] if mask else ["y"], **attrs)
    ins = [vi("x", shape=x_shape), vi("r", shape=()), vi("t", TensorProto.BOOL, shape=())]
    outs = [vi("y", shape=None)] + ([vi("z", TensorProto.BOOL, shape=None)] if mask else [])
    return graph_model([node], ins, outs, opset=13)


def test_training_dropout_distribution_and_mask():
    x = (np.abs(randn(200, 100)) + 0.5).astype(np.float32)
    ratio = 0.3
    y, z = run_ge(dropout_model(x.shape, seed=3), [x, np.array(ratio, np.float32), np.array(True)])
    assert z.dtype == np.bool_ and z.shape == x.shape
    # The mask is the kept elements; they are scaled by 1 / (1 - ratio), the rest are 0.
    np.testing.assert_array_equal(y != 0, z)
    np.testing.assert_allclose(y[z], x[z] / (1 - ratio), rtol=1e-6)
    # 20000 Bernoulli(0.7) draws: the kept fraction within 5 standard deviations (0.016).
    assert abs(z.mean() - (1 - ratio)) < 0.016
    # The mean is preserved in expectation.
    assert abs(y.mean() / x.mean() - 1) < 0.05


def test_training_dropout_seed_fixes_the_draws():
    x = np.ones((50, 40), np.float32)
    feeds = [x, np.array(0.5, np.float32), np.array(True)]
    a = run_ge(dropout_model(x.shape, seed=7), feeds)[1]
    b = run_ge(dropout_model(x.shape, seed=7), feeds)[1]
    c = run_ge(dropout_model(x.shape, seed=8), feeds)[1]
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_training_dropout_off_and_zero_ratio_are_identity():
    x = randn(4, 5)
    for ratio, training in [(0.5, False), (0.0, True)]:
        y, z = run_ge(dropout_model(x.shape, seed=1), [x, np.array(ratio, np.float32), np.array(training)])
        np.testing.assert_array_equal(y, x)
        assert z.all()


# ---------------------------------------------------------- Split num_outputs, run-time dim


def split_model(n):
    node = helper.make_node("Split", ["x"], [f"y{i}" for i in range(n)], axis=1, num_outputs=n)
    return graph_model([node], [vi("x", shape=(2, "L"))], [vi(f"y{i}", shape=None) for i in range(n)], opset=18)


@pytest.mark.parametrize("n,length", [(3, 7), (2, 6), (4, 10), (1, 3)])
def test_split_num_outputs_runtime_dim(n, length):
    check_model(split_model(n), {"x": randn(2, length)}, 0, 0, modes=("on", "off"))


def test_split_num_outputs_runtime_dim_too_short_is_an_error():
    # 5 into 4 chunks of ceil(5/4) = 2 leaves nothing for the last: an error naming the split.
    with pytest.raises(ge.GeError, match="SplitV"):
        run_ge(split_model(4), [randn(2, 5)])


# ----------------------------------------------------------------------------- Unique axis


@settings(max_examples=12, deadline=None)
@given(shape=st.sampled_from([(4, 3), (5, 2, 3), (3, 4, 2)]), axis=st.integers(-3, 2), hi=st.integers(1, 3))
def test_unique_with_axis(shape, axis, hi):
    if not -len(shape) <= axis < len(shape):
        axis = axis % len(shape)
    # Few distinct values, so that slices repeat.
    x = rng.integers(0, hi, size=shape).astype(np.float32)
    check("Unique", [("x", x)], opset=11, n_out=4, axis=axis, sorted=1)


def test_unique_with_axis_unsorted_is_refused():
    refuse("Unique", [("x", randn(3, 2))], "not supported: .*Unique with axis and sorted=0", opset=11, n_out=4,
           axis=0, sorted=0)
