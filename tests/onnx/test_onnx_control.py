"""ONNX control flow and recurrent layers through ge.onnx.load: If, Loop, Scan, RNN, GRU, LSTM.

Each model is built with onnx.helper, run on the CPU backend in both graph modes and compared
with onnx.reference.ReferenceEvaluator (or numpy where the reference lacks a feature).
"""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, graph_model, run_ge, vi  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def model(nodes, inputs, outputs, inits=(), opset=17):
    return graph_model(nodes, inputs, outputs, inits, opset)


def check(m, feeds, rtol=1e-5, atol=1e-6, expected=None):
    """ge in graph and eager mode against ``expected`` (default: the ReferenceEvaluator's): same
    shapes, values within the tolerance."""
    return check_model(m, feeds, rtol, atol, modes=("on", "off"), expected=expected, check_dtype=False,
                       exact_ints=False)


# ---------------------------------------------------------------------------------------------
# If
# ---------------------------------------------------------------------------------------------


def if_model(cond_shape):
    # Each branch reads a different outer value (captures) and a common one.
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "a"], ["t"])], "then", [], [vi("t", F, [2, 3])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "b"], ["e"]), helper.make_node("Neg", ["e"], ["e2"])],
        "else",
        [],
        [vi("e2", F, [2, 3])],
    )
    return model(
        [
            helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
            helper.make_node("Relu", ["y"], ["z"]),
        ],
        [vi("c", B, cond_shape), vi("x", F, [2, 3]), vi("a", F, [2, 3]), vi("b", F, [2, 3])],
        [vi("z", F, [2, 3])],
    )


@pytest.mark.parametrize("cond_shape", [[], [1]])
@pytest.mark.parametrize("c", [True, False])
def test_if_branches_with_captures(cond_shape, c):
    rng = np.random.default_rng(0)
    feeds = {
        "c": np.array(c).reshape(cond_shape),
        "x": rng.standard_normal((2, 3)).astype(np.float32),
        "a": rng.standard_normal((2, 3)).astype(np.float32),
        "b": rng.standard_normal((2, 3)).astype(np.float32),
    }
    check(if_model(cond_shape), feeds)


def test_if_constant_branches():
    t = helper.make_graph(
        [helper.make_node("Constant", [], ["o"], value=helper.make_tensor("v", F, [2], [1, 2]))],
        "t", [], [vi("o", F, [2])],
    )
    e = helper.make_graph(
        [helper.make_node("Constant", [], ["o2"], value=helper.make_tensor("w", F, [3], [3, 4, 5]))],
        "e", [], [vi("o2", F, [3])],
    )
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=t, else_branch=e)],
              [vi("c", B, [])], [vi("y", F, None)])
    for c in (True, False):
        check(m, {"c": np.array(c)})


def test_if_branch_output_count_mismatch():
    t = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "t", [], [vi("o", F, [2])])
    e = helper.make_graph([], "e", [], [vi("x", F, [2]), vi("x", F, [2])])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=t, else_branch=e)],
              [vi("c", B, []), vi("x", F, [2])], [vi("y", F, [2])])
    with pytest.raises(ge.TranslationError, match="outputs"):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------------------
# Loop
# ---------------------------------------------------------------------------------------------


def loop_body(with_scan=True, use_cond=False):
    # v = v + x * i (x captured from outside); scan output: v; cond_out = i < 3.
    nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Add", ["v_in", "xi"], ["v_out"]),
    ]
    if use_cond:
        nodes += [
            helper.make_node("Constant", [], ["lim"], value=helper.make_tensor("l", F, [], [3.0])),
            helper.make_node("Less", ["fi", "lim"], ["c_out"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    outs = [vi("c_out", B, []), vi("v_out", F, [3])]
    if with_scan:
        nodes.append(helper.make_node("Identity", ["v_out"], ["scan"]))
        outs.append(vi("scan", F, [3]))
    return helper.make_graph(
        nodes, "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])], outs
    )


def loop_expected(v0, x, trip, use_cond):
    v, scan, i = v0.copy(), [], 0
    while i < trip:
        v = v + x * i
        scan.append(v)
        i += 1
        if use_cond and not i - 1 < 3:
            break
    return [v, np.array(scan, np.float32).reshape(len(scan), 3)]


@pytest.mark.parametrize("trip,use_cond", [(5, False), (10, True), (0, False)])
def test_loop_for_and_while(trip, use_cond):
    body = loop_body(use_cond=use_cond)
    m = model(
        [helper.make_node("Loop", ["M", "c", "v0"], ["v", "scan"], body=body)],
        [vi("M", I64, []), vi("c", B, []), vi("v0", F, [3]), vi("x", F, [3])],
        [vi("v", F, [3]), vi("scan", F, None)],
    )
    feeds = {
        "M": np.array(trip, np.int64),
        "c": np.array(True),
        "v0": np.array([1, 2, 3], np.float32),
        "x": np.array([0.5, 1, 2], np.float32),
    }
    check(m, feeds, expected=loop_expected(feeds["v0"], feeds["x"], trip, use_cond))
    if trip:
        check(m, feeds)


def test_loop_without_trip_count():
    body = loop_body(use_cond=True)
    m = model(
        [helper.make_node("Loop", ["", "c", "v0"], ["v", "scan"], body=body)],
        [vi("c", B, []), vi("v0", F, [3]), vi("x", F, [3])],
        [vi("v", F, [3]), vi("scan", F, None)],
    )
    feeds = {"c": np.array(True), "v0": np.array([1, 2, 3], np.float32), "x": np.array([0.5, 1, 2], np.float32)}
    check(m, feeds)
    feeds["c"] = np.array(False)
    got = run_ge(m, feeds)
    np.testing.assert_allclose(got[0], feeds["v0"])
    assert got[1].shape == (0, 3)


def test_loop_without_condition_ignores_cond_out():
    # cond_out is false from the start, but without a cond input the spec says it is ignored
    # (onnx's ReferenceEvaluator runs no iteration here, hence numpy).
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["f"], value=helper.make_tensor("f", B, [], [False])),
            helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [2])],
        [vi("f", B, []), vi("v_out", F, [2])],
    )
    m = model(
        [helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
        [vi("M", I64, []), vi("v0", F, [2])],
        [vi("v", F, [2])],
    )
    feeds = {"M": np.array(4, np.int64), "v0": np.array([1, 3], np.float32)}
    check(m, feeds, expected=[np.array([16, 48], np.float32)])


def test_loop_value_that_grows():
    # v = tile(v, 2): the loop-carried value changes shape every iteration.
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["rep"], value=helper.make_tensor("rep", I64, [1], [2])),
            helper.make_node("Tile", ["v_in", "rep"], ["v_out"]),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [None])],
        [vi("c_out", B, []), vi("v_out", F, [None])],
    )
    m = model(
        [helper.make_node("Loop", ["M", "c", "v0"], ["v"], body=body),
         helper.make_node("Add", ["v", "v"], ["w"])],
        [vi("M", I64, []), vi("c", B, []), vi("v0", F, [2])],
        [vi("w", F, [None])],
    )
    feeds = {"M": np.array(3, np.int64), "c": np.array(True), "v0": np.array([7, 8], np.float32)}
    check(m, feeds)


def test_if_inside_loop():
    then_g = helper.make_graph([helper.make_node("Add", ["v_in", "x"], ["t"])], "t", [], [vi("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["v_in", "x"], ["e"])], "e", [], [vi("e", F, [3])])
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["two"], value=helper.make_tensor("two", I64, [], [2])),
            helper.make_node("Less", ["i", "two"], ["early"]),
            helper.make_node("If", ["early"], ["v_out"], then_branch=then_g, else_branch=else_g),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
        [vi("c_out", B, []), vi("v_out", F, [3])],
    )
    m = model(
        [helper.make_node("Loop", ["M", "c", "v0"], ["v"], body=body)],
        [vi("M", I64, []), vi("c", B, []), vi("v0", F, [3]), vi("x", F, [3])],
        [vi("v", F, [3])],
    )
    feeds = {"M": np.array(5, np.int64), "c": np.array(True), "v0": np.zeros(3, np.float32),
             "x": np.array([1, 2, 3], np.float32)}
    check(m, feeds)


def test_loop_infinite_is_refused():
    body = loop_body(with_scan=False)
    m = model(
        [helper.make_node("Loop", ["", "", "v0"], ["v"], body=body)],
        [vi("v0", F, [3]), vi("x", F, [3])],
        [vi("v", F, [3])],
    )
    with pytest.raises(ge.TranslationError, match="infinite loop"):
        ge.onnx.load(m.SerializeToString())


def test_loop_unknown_attribute_is_refused():
    body = loop_body(with_scan=False)
    m = model(
        [helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body, foo=1)],
        [vi("M", I64, []), vi("v0", F, [3]), vi("x", F, [3])],
        [vi("v", F, [3])],
    )
    with pytest.raises(ge.TranslationError, match="foo"):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------------------
# Scan
# ---------------------------------------------------------------------------------------------


def scan_model(in_axis, in_dir, out_axis, out_dir, opset=16):
    # state += x_t; outputs: state and state * w (w captured).
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
            helper.make_node("Mul", ["s_out", "w"], ["y_t"]),
        ],
        "body",
        [vi("s_in", F, [2]), vi("x_t", F, [2])],
        [vi("s_out", F, [2]), vi("y_t", F, [2])],
    )
    x_shape = [4, 2] if in_axis in (0, -2) else [2, 4]
    return model(
        [
            helper.make_node(
                "Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1,
                scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                scan_output_axes=[out_axis], scan_output_directions=[out_dir],
            )
        ],
        [vi("s0", F, [2]), vi("x", F, x_shape), vi("w", F, [2])],
        [vi("s", F, [2]), vi("y", F, None)],
        opset=opset,
    ), x_shape


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [
    (0, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 1), (0, 0, 1, 0), (-1, 1, -1, 1),
])
def test_scan(in_axis, in_dir, out_axis, out_dir):
    m, xs = scan_model(in_axis, in_dir, out_axis, out_dir)
    rng = np.random.default_rng(1)
    feeds = {
        "s0": rng.standard_normal(2).astype(np.float32),
        "x": rng.standard_normal(xs).astype(np.float32),
        "w": rng.standard_normal(2).astype(np.float32),
    }
    x = np.moveaxis(feeds["x"], in_axis, 0)
    if in_dir:
        x = x[::-1]
    st_, ys = feeds["s0"], []
    for xt in x:
        st_ = st_ + xt
        ys.append(st_ * feeds["w"])
    y = np.stack(ys)
    if out_dir:
        y = y[::-1]
    y = np.moveaxis(y, 0, out_axis)
    check(m, feeds, expected=[st_, y])
    if (in_axis, in_dir, out_axis, out_dir) == (0, 0, 0, 0):
        check(m, feeds)


def test_scan_opset8_is_refused():
    m, _ = scan_model(0, 0, 0, 0, opset=8)
    with pytest.raises(ge.TranslationError, match="opset 9"):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------------------
# RNN, GRU, LSTM
# ---------------------------------------------------------------------------------------------

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def rnn_model(op, T, Bt, I, H, direction="forward", layout=0, bias=True, init=True,
              seq_lens=False, peep=False, extra=None):
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    rng = np.random.default_rng(7)
    inits = [
        helper.make_tensor("W", F, [D, G * H, I], rng.uniform(-0.5, 0.5, D * G * H * I).astype(np.float32)),
        helper.make_tensor("R", F, [D, G * H, H], rng.uniform(-0.5, 0.5, D * G * H * H).astype(np.float32)),
    ]
    names = ["X", "W", "R"]
    if bias:
        inits.append(helper.make_tensor("B", F, [D, 2 * G * H], rng.uniform(-0.5, 0.5, D * 2 * G * H).astype(np.float32)))
        names.append("B")
    else:
        names.append("")
    inputs = [vi("X", F, [T, Bt, I] if layout == 0 else [Bt, T, I])]
    feeds = {"X": rng.standard_normal((T, Bt, I) if layout == 0 else (Bt, T, I)).astype(np.float32)}
    if seq_lens:
        inputs.append(vi("L", TensorProto.INT32, [Bt]))
        feeds["L"] = rng.integers(1, T + 1, Bt).astype(np.int32)
        names.append("L")
    else:
        names.append("")
    hshape = [D, Bt, H] if layout == 0 else [Bt, D, H]
    if init:
        inputs.append(vi("H0", F, hshape))
        feeds["H0"] = rng.standard_normal(hshape).astype(np.float32)
        names.append("H0")
        if op == "LSTM":
            inputs.append(vi("C0", F, hshape))
            feeds["C0"] = rng.standard_normal(hshape).astype(np.float32)
            names.append("C0")
    if peep:
        if not init:
            names += ["", ""] if op == "LSTM" else [""]
        inits.append(helper.make_tensor("P", F, [D, 3 * H], rng.uniform(-0.5, 0.5, D * 3 * H).astype(np.float32)))
        names.append("P")
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    attrs = dict(hidden_size=H, direction=direction)
    if layout:
        attrs["layout"] = layout
    attrs.update(extra or {})
    m = model(
        [helper.make_node(op, names, outs, **attrs)],
        inputs,
        [vi(o, F, None) for o in outs],
        inits,
        opset=14,
    )
    return m, feeds


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_directions(op, direction):
    m, feeds = rnn_model(op, 4, 2, 3, 5, direction=direction)
    check(m, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_recurrent_layout1_no_bias_no_init(op):
    m, feeds = rnn_model(op, 3, 2, 4, 3, layout=1, bias=False, init=False)
    check(m, feeds, rtol=1e-4, atol=1e-5)


def test_gru_linear_before_reset():
    m, feeds = rnn_model("GRU", 3, 2, 3, 4, extra={"linear_before_reset": 1})
    check(m, feeds, rtol=1e-4, atol=1e-5)


def test_lstm_peepholes():
    m, feeds = rnn_model("LSTM", 3, 2, 3, 4, peep=True)
    check(m, feeds, rtol=1e-4, atol=1e-5)


def test_rnn_clip():
    # onnx's reference ignores clip: numpy.
    m, feeds = rnn_model("RNN", 3, 2, 3, 4, extra={"clip": 0.3})
    w, r, b = (onnx.numpy_helper.to_array(t)[0] for t in m.graph.initializer)
    h, ys = feeds["H0"][0], []
    for x in feeds["X"]:
        h = np.tanh(np.clip(x @ w.T + h @ r.T + b[:4] + b[4:], -0.3, 0.3))
        ys.append(h)
    check(m, feeds, rtol=1e-4, atol=1e-5, expected=[np.stack(ys)[:, None], h[None]])


@pytest.mark.parametrize("acts,alpha,beta", [
    (["Relu"], None, None), (["HardSigmoid"], [0.3], [0.4]), (["LeakyRelu"], [0.2], None),
    (["Sigmoid"], None, None), (["Affine"], [0.5], [0.1]),
])
def test_rnn_activations(acts, alpha, beta):
    extra = {"activations": acts}
    if alpha:
        extra["activation_alpha"] = alpha
    if beta:
        extra["activation_beta"] = beta
    m, feeds = rnn_model("RNN", 3, 2, 3, 4, extra=extra)
    # onnx's reference knows Tanh and Affine only: numpy.
    a = (alpha or [None])[0]
    f = {
        "Relu": lambda v: np.maximum(v, 0),
        "HardSigmoid": lambda v: np.clip(a * v + beta[0], 0, 1),
        "LeakyRelu": lambda v: np.where(v >= 0, v, a * v),
        "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "Affine": lambda v: a * v + beta[0],
    }[acts[0]]
    w, r, b = (onnx.numpy_helper.to_array(t)[0] for t in m.graph.initializer)
    h, ys = feeds["H0"][0], []
    for x in feeds["X"]:
        h = f(x @ w.T + h @ r.T + b[:4] + b[4:])
        ys.append(h)
    check(m, feeds, rtol=1e-4, atol=1e-5, expected=[np.stack(ys)[:, None], h[None]])


def _masked_reference(op, m, feeds, direction):
    """Per batch item: run the reference on the item's valid prefix, pad Y with zeros."""
    T = feeds["X"].shape[0]
    D = 2 if direction == "bidirectional" else 1
    node = m.graph.node[0]
    names = [n for n in node.input]
    ys, hs, cs = [], [], []
    for b, L in enumerate(feeds["L"]):
        sub = {"X": feeds["X"][:L, b:b + 1]}
        for k in ("H0", "C0"):
            if k in feeds:
                sub[k] = feeds[k][:, b:b + 1]
        inputs = [n if n != "L" else "" for n in names]
        m2 = model([helper.make_node(op, inputs, list(node.output), **{a.name: helper.get_attribute_value(a) for a in node.attribute})],
                   [vi(k, F, list(v.shape)) for k, v in sub.items()], [vi(o, F, None) for o in node.output],
                   list(m.graph.initializer), opset=14)
        r = ReferenceEvaluator(m2).run(None, sub)
        y = np.zeros((T, D, 1, r[0].shape[-1]), np.float32)
        y[:L] = r[0]
        ys.append(y)
        hs.append(r[1])
        if op == "LSTM":
            cs.append(r[2])
    out = [np.concatenate(ys, 2), np.concatenate(hs, 1)]
    if op == "LSTM":
        out.append(np.concatenate(cs, 1))
    return out


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_recurrent_sequence_lens(op, direction):
    m, feeds = rnn_model(op, 4, 3, 2, 3, direction=direction, seq_lens=True)
    feeds["L"] = np.array([4, 1, 3], np.int32)
    check(m, feeds, rtol=1e-4, atol=1e-5, expected=_masked_reference(op, m, feeds, direction))


@settings(max_examples=8, deadline=None)
@given(op=st.sampled_from(["RNN", "GRU", "LSTM"]), T=st.integers(1, 4), Bt=st.integers(1, 3),
       I=st.integers(1, 4), H=st.integers(1, 4), layout=st.integers(0, 1))
def test_recurrent_shapes(op, T, Bt, I, H, layout):
    m, feeds = rnn_model(op, T, Bt, I, H, layout=layout)
    check(m, feeds, rtol=1e-4, atol=1e-5)


def test_recurrent_errors():
    m, _ = rnn_model("RNN", 3, 2, 3, 4, extra={"activations": ["Gelu"]})
    with pytest.raises(ge.TranslationError, match="activation 'Gelu'"):
        ge.onnx.load(m.SerializeToString())
    m, _ = rnn_model("GRU", 3, 2, 3, 4, extra={"foo": 2})
    with pytest.raises(ge.TranslationError, match="foo"):
        ge.onnx.load(m.SerializeToString())
    m, _ = rnn_model("LSTM", 3, 2, 3, 4, direction="sideways")
    with pytest.raises(ge.TranslationError, match="direction"):
        ge.onnx.load(m.SerializeToString())
    # Dynamic sequence length: cannot be unrolled.
    m, _ = rnn_model("RNN", 3, 2, 3, 4)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "T"
    with pytest.raises(ge.TranslationError, match="sequence length"):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------------------
# Attention (opset 23)
# ---------------------------------------------------------------------------------------------


def attention_model(q, k, v, mask=None, past=None, opset=23, **attrs):
    names = ["Q", "K", "V"]
    feeds = {"Q": q, "K": k, "V": v}
    if mask is not None:
        names.append("M")
        feeds["M"] = mask
    if past is not None:
        names += [""] * (4 - len(names)) + ["PK", "PV"]
        feeds["PK"], feeds["PV"] = past
    inputs = [vi(n, TensorProto.BOOL if feeds[n].dtype == bool else F, list(feeds[n].shape)) for n in names if n]
    outs = ["Y", "PKo", "PVo", "QK"]
    m = model([helper.make_node("Attention", names, outs, **attrs)], inputs,
              [vi(o, F, None) for o in outs], opset=opset)
    return m, feeds


@pytest.mark.parametrize("case", ["4d", "3d_gqa", "causal_past", "bool_mask", "float_mask_short", "softcap_mode3"])
def test_attention(case):
    rng = np.random.default_rng(3)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    if case == "4d":
        m, f = attention_model(r(2, 3, 4, 8), r(2, 3, 5, 8), r(2, 3, 5, 6), scale=0.2)
    elif case == "3d_gqa":
        m, f = attention_model(r(2, 4, 16), r(2, 5, 8), r(2, 5, 6), q_num_heads=4, kv_num_heads=2)
    elif case == "causal_past":
        m, f = attention_model(r(1, 2, 3, 4), r(1, 2, 3, 4), r(1, 2, 3, 4),
                               past=(r(1, 2, 2, 4), r(1, 2, 2, 4)), is_causal=1)
    elif case == "bool_mask":
        mask = rng.random((4, 5)) > 0.3
        mask[1] = False  # a fully masked row gives 0
        m, f = attention_model(r(2, 3, 4, 8), r(2, 3, 5, 8), r(2, 3, 5, 8), mask=mask)
    elif case == "float_mask_short":
        m, f = attention_model(r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 4), mask=r(3, 4),
                               qk_matmul_output_mode=2)
    else:
        m, f = attention_model(r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 4), softcap=2.0,
                               qk_matmul_output_mode=3, is_causal=1)
    check(m, f, rtol=1e-4, atol=1e-5)


def test_attention_errors():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 16)).astype(np.float32)
    m, _ = attention_model(q, q, q)  # 3-D without head counts
    with pytest.raises(ge.TranslationError, match="q_num_heads"):
        ge.onnx.load(m.SerializeToString())
    m, _ = attention_model(q, q, q, q_num_heads=2, kv_num_heads=2, foo=1)
    with pytest.raises(ge.TranslationError, match="foo"):
        ge.onnx.load(m.SerializeToString())


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding (opset 23)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rank,interleaved,rd,pos", [
    (4, 0, 0, True), (4, 1, 0, True), (3, 0, 4, True), (3, 1, 4, False), (4, 0, 2, False),
])
def test_rotary_embedding(rank, interleaved, rd, pos):
    rng = np.random.default_rng(5)
    Bt, S, H, D = 2, 3, 2, 8
    half = (rd or D) // 2
    x = rng.standard_normal((Bt, H, S, D) if rank == 4 else (Bt, S, H * D)).astype(np.float32)
    feeds = {"x": x}
    names = ["x", "cos", "sin"]
    if pos:
        feeds["cos"] = rng.standard_normal((10, half)).astype(np.float32)
        feeds["sin"] = rng.standard_normal((10, half)).astype(np.float32)
        feeds["pos"] = rng.integers(0, 10, (Bt, S)).astype(np.int64)
        names.append("pos")
    else:
        feeds["cos"] = rng.standard_normal((Bt, S, half)).astype(np.float32)
        feeds["sin"] = rng.standard_normal((Bt, S, half)).astype(np.float32)
    attrs = {"interleaved": interleaved}
    if rd:
        attrs["rotary_embedding_dim"] = rd
    if rank == 3:
        attrs["num_heads"] = H
    m = model([helper.make_node("RotaryEmbedding", names, ["y"], **attrs)],
              [vi(n, I64 if n == "pos" else F, list(feeds[n].shape)) for n in names],
              [vi("y", F, None)], opset=23)
    check(m, feeds, rtol=1e-5, atol=1e-5)


def test_rotary_embedding_errors():
    x = np.zeros((1, 2, 8), np.float32)
    c = np.zeros((1, 2, 4), np.float32)
    m = model([helper.make_node("RotaryEmbedding", ["x", "c", "c"], ["y"])],
              [vi("x", F, [1, 2, 8]), vi("c", F, [1, 2, 4])], [vi("y", F, None)], opset=23)
    with pytest.raises(ge.TranslationError, match="num_heads"):
        ge.onnx.load(m.SerializeToString())
    m = model([helper.make_node("RotaryEmbedding", ["x", "c", "c"], ["y"], num_heads=1, rotary_embedding_dim=3)],
              [vi("x", F, [1, 2, 8]), vi("c", F, [1, 2, 4])], [vi("y", F, None)], opset=23)
    with pytest.raises(ge.TranslationError, match="rotary_embedding_dim"):
        ge.onnx.load(m.SerializeToString())
    del x, c
