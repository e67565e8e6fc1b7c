"""String tensors (DT_STRING) end to end: ge.Tensor with numpy str/object arrays, sessions that
feed and fetch them, the ONNX string operators (StringNormalizer, StringSplit, StringConcat,
RegexFullMatch, ai.onnx.ml LabelEncoder, Equal, Cast to and from strings) against onnx's
ReferenceEvaluator or hand-computed values, round trips through .ge, .air and ONNX export, and
the errors of numeric operators given strings."""

import numpy as np
import pytest

pytest.importorskip("onnx")

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from ge.graph import DataType, Tensor  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from onnx_harness import assert_outputs, graph_model, reference, run_ge, run_graph  # noqa: E402

S = TensorProto.STRING


def strings(*v):
    return np.array(list(v), dtype=object)


def one_node(op, inputs, outputs, domain="", opset=20, **attrs):
    """A one-node model; ``inputs``/``outputs``: (name, elem type, shape) triples."""
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], domain=domain, **attrs)
    opsets = [("", opset)] + ([(domain, 4)] if domain else [])
    return graph_model([node], [helper.make_tensor_value_info(*i) for i in inputs],
                       [helper.make_tensor_value_info(*o) for o in outputs], opsets=opsets)


def check(m, feeds, expected=None, **kw):
    """ge's outputs (graph mode and eager) equal ``expected`` (default: the ReferenceEvaluator's);
    ge's strings come back as object arrays of str."""
    want = reference(m, feeds) if expected is None else expected
    for mode in ("on", "off"):
        got = run_ge(m, feeds, mode)
        for g in got:
            if g.dtype.kind == "O":
                assert all(isinstance(s, str) for s in g.ravel()), g
        assert_outputs(got, want, 0, 0, check_dtype=False, **kw)
        for g, w in zip(got, want):
            assert (g.dtype.kind in "OU") == (np.asarray(w).dtype.kind in "OU"), (g.dtype, w)
    return got


# ---------------------------------------------------------------------------------------------
# ge.Tensor and sessions


def test_tensor_takes_and_gives_string_arrays():
    for data in (np.array([["a", "héllo"], ["", "x y"]]), strings("a", "héllo", "", "x y").reshape(2, 2),
                 np.array([[b"a", "héllo".encode()], [b"", b"x y"]])):
        t = Tensor(data)
        assert t.get_data_type() == DataType.DT_STRING
        assert list(t.get_shape().get_dims()) == [2, 2]
        out = t.numpy()
        assert out.dtype == object and out.shape == (2, 2)
        assert out.tolist() == [["a", "héllo"], ["", "x y"]]
        assert t.get_data() == [["a", "héllo"], ["", "x y"]]
    t = Tensor(["p", "q", "r"], data_type=DataType.DT_STRING, shape=[3, 1])
    assert t.numpy().tolist() == [["p"], ["q"], ["r"]]
    assert Tensor(shape=[2], data_type=DataType.DT_STRING).numpy().tolist() == ["", ""]
    assert Tensor(np.array("solo")).get_data() == "solo"
    with pytest.raises(TypeError, match="must be str or bytes"):
        Tensor(np.array([1, "a"], dtype=object))
    with pytest.raises(ValueError, match="UTF-8"):
        Tensor(np.array([b"\xff"], dtype=object))
    with pytest.raises(TypeError, match="cannot make a tensor of DT_FLOAT"):
        Tensor(np.array(["a"]), data_type=DataType.DT_FLOAT)
    with pytest.raises(ValueError, match="has 2 elements"):
        Tensor(["a", "b"], data_type=DataType.DT_STRING, shape=[3])


def test_a_session_feeds_and_fetches_strings():
    m = graph_model([helper.make_node("Identity", ["x"], ["y"]),
                     helper.make_node("Gather", ["x", "i"], ["t"], axis=1),
                     helper.make_node("Concat", ["x", "x"], ["c"], axis=0)],
                    [helper.make_tensor_value_info("x", S, [2, 3])],
                    [helper.make_tensor_value_info(n, S, None) for n in ("y", "t", "c")],
                    [helper.make_tensor("i", TensorProto.INT64, [3], [2, 0, 2])])
    x = np.array([["a", "b", "c"], ["d", "é", ""]])
    check(m, {"x": x})
    # Fed as ge.Tensor too; the fetched tensor is a DT_STRING ge.Tensor.
    s = ge.session.Session({})
    s.add_graph(0, ge.onnx.load(m.SerializeToString()))
    y = s.run_graph(0, [Tensor(x)])[0]
    assert y.get_data_type() == DataType.DT_STRING
    assert y.get_data() == x.tolist()


# ---------------------------------------------------------------------------------------------
# The string operators against onnx's reference


@pytest.mark.parametrize("attrs", [
    dict(case_change_action="LOWER", stopwords=["monday"]),
    dict(case_change_action="UPPER", is_case_sensitive=1, stopwords=["monday", "Tuesday"]),
    dict(case_change_action="NONE"),
])
@pytest.mark.parametrize("shape", [[4], [1, 4]])
def test_string_normalizer(attrs, shape):
    m = one_node("StringNormalizer", [("x", S, shape)], [("y", S, None)], **attrs)
    check(m, {"x": strings("monday", "Tuesday", "wednesday", "thursday").reshape(shape)})


def test_string_normalizer_compares_stop_words_without_case_and_leaves_one_empty_string():
    # Not case-sensitive: every word is a stop word, one empty string is left (onnxruntime's
    # result; onnx's reference compares these stop words with their case when the case is kept).
    m = one_node("StringNormalizer", [("x", S, [1, 4])], [("y", S, None)],
                 stopwords=["MONDAY", "tuesday", "wednesday", "thursday"])
    check(m, {"x": strings("monday", "Tuesday", "wednesday", "thursday").reshape(1, 4)},
          expected=[strings("").reshape(1, 1)])


@pytest.mark.parametrize("attrs", [{}, dict(delimiter="-"), dict(delimiter="-", maxsplit=1),
                                   dict(maxsplit=1), dict(delimiter="ab")])
def test_string_split(attrs):
    m = one_node("StringSplit", [("x", S, [2, 2])], [("y", S, None), ("z", TensorProto.INT64, None)], **attrs)
    x = strings(" a b  c", "a-b-c", "", "xabyabz-").reshape(2, 2)
    check(m, {"x": x})
    # On whitespace, leading and trailing whitespace is dropped (ONNX's words, onnxruntime's
    # result), also after the last split, where Python's str.split keeps it.
    y, z = run_ge(one_node("StringSplit", [("x", S, [1])], [("y", S, None), ("z", TensorProto.INT64, None)],
                           maxsplit=1), {"x": strings(" a b  c ")})
    assert y.tolist() == [["a", "b  c"]] and z.tolist() == [2]


def test_string_concat_broadcasts_and_regex_full_match():
    m = one_node("StringConcat", [("a", S, [2, 1]), ("b", S, [3])], [("y", S, None)])
    check(m, {"a": strings("x", "ü").reshape(2, 1), "b": strings("1", "", "22")})
    m = one_node("RegexFullMatch", [("x", S, [4])], [("y", TensorProto.BOOL, None)],
                 pattern=r"[\w.]+@(gmail|yahoo)\.com")
    check(m, {"x": strings("a.b@gmail.com", "x@yahoo.com.au", "@gmail.com", "q@yahoo.com")})
    bad = one_node("RegexFullMatch", [("x", S, [1])], [("y", TensorProto.BOOL, None)], pattern="(a")
    with pytest.raises(ge.GeError, match="not a valid regex"):
        run_ge(bad, {"x": strings("a")})


@pytest.mark.parametrize("attrs,x", [
    (dict(keys_strings=["a", "b"], values_int64s=[1, 2], default_int64=-7), strings("b", "c", "a")),
    (dict(keys_int64s=[3, 4], values_strings=["three", "four"]), np.array([4, 5, 3], np.int64)),
    (dict(keys_floats=[0.5, 2.0], values_floats=[1.0, 2.0], default_float=9.0),
     np.array([np.nan, 0.5, 1.0], np.float32)),
])
def test_label_encoder(attrs, x):
    in_type = {np.dtype(np.int64): TensorProto.INT64, np.dtype(np.float32): TensorProto.FLOAT}.get(x.dtype, S)
    m = one_node("LabelEncoder", [("x", in_type, [3])], [("y", TensorProto.UNDEFINED, None)],
                 domain="ai.onnx.ml", **attrs)
    check(m, {"x": x})


def test_label_encoder_finds_nan_keys():
    # Keys compare bit-wise, so a NaN key maps NaN (ONNX's LabelEncoder-4 and onnxruntime; onnx's
    # reference misses it).
    m = one_node("LabelEncoder", [("x", TensorProto.FLOAT, [3])], [("y", TensorProto.FLOAT, None)],
                 domain="ai.onnx.ml", keys_floats=[0.5, float("nan")], values_floats=[1.0, 2.0],
                 default_float=9.0)
    check(m, {"x": np.array([np.nan, 0.5, 1.0], np.float32)}, expected=[np.array([2.0, 1.0, 9.0], np.float32)])


def test_label_encoder_tensor_attributes():
    keys = helper.make_tensor("k", S, [2], [b"a", b"b"])
    values = helper.make_tensor("v", TensorProto.INT16, [2], [10, 20])
    default = helper.make_tensor("d", TensorProto.INT16, [1], [-1])
    m = one_node("LabelEncoder", [("x", S, [3])], [("y", TensorProto.INT16, None)], domain="ai.onnx.ml",
                 keys_tensor=keys, values_tensor=values, default_tensor=default)
    got = run_ge(m, {"x": strings("b", "z", "a")})
    assert got[0].dtype == np.int16 and got[0].tolist() == [20, -1, 10]


def test_equal_on_strings():
    m = one_node("Equal", [("a", S, [2, 2]), ("b", S, [2])], [("y", TensorProto.BOOL, None)], opset=19)
    check(m, {"a": strings("a", "b", "", "b").reshape(2, 2), "b": strings("a", "b")})


@pytest.mark.parametrize("x", [
    np.array([0.1, 1.0, -0.0, 1e20, 1e-5, 123456789.0, np.inf, -np.inf, np.nan, 1e-4, 999999.9], np.float32),
    np.array([0.1, 123456789.0, 1e16, 3.25, 1e-4], np.float64),
    np.array([-3, 0, 2**40], np.int64),
    np.array([True, False]),
])
def test_cast_to_string_follows_onnx(x):
    t = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
         np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL}[x.dtype]
    m = one_node("Cast", [("x", t, list(x.shape))], [("y", S, None)], opset=21, to=S)
    check(m, {"x": x})


@pytest.mark.parametrize("to,x", [
    (TensorProto.FLOAT, strings("0.1", "1e5", "-INF", "nan", " 2.5 ", "3")),
    (TensorProto.DOUBLE, strings("0.1", "1E-3", "inf")),
    (TensorProto.INT32, strings("-12", "300", "0")),
    (TensorProto.INT64, strings("9007199254740993", "-1")),
    (TensorProto.UINT8, strings("255", "7")),
])
def test_cast_from_string_follows_onnx(to, x):
    m = one_node("Cast", [("x", S, [len(x)])], [("y", to, None)], opset=21, to=to)
    want = reference(m, {"x": x})
    got = run_ge(m, {"x": x})
    assert got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])
    bad = one_node("Cast", [("x", S, [1])], [("y", TensorProto.INT32, None)], opset=21, to=TensorProto.INT32)
    with pytest.raises(ge.GeError, match="not an integer"):
        run_ge(bad, {"x": strings("1.5")})


def test_string_constants_and_initializers():
    const = helper.make_node("Constant", [], ["c"], value_strings=["a", "b"])
    one = helper.make_node("Constant", [], ["o"], value_string="!")
    cat = helper.make_node("StringConcat", ["c", "o"], ["y"])
    init = helper.make_tensor("w", S, [2], [b"x", "é".encode()])
    cat2 = helper.make_node("StringConcat", ["y", "w"], ["z"])
    m = graph_model([const, one, cat, cat2], [], [helper.make_tensor_value_info("z", S, None)], [init],
                    opsets=[("", 20)])
    check(m, {})


# ---------------------------------------------------------------------------------------------
# Round trips and errors


def _string_model():
    nodes = [helper.make_node("StringConcat", ["x", "w"], ["c"]),
             helper.make_node("Equal", ["c", "x"], ["e"])]
    init = helper.make_tensor("w", S, [2], [b"-1", b""])
    return graph_model(nodes, [helper.make_tensor_value_info("x", S, [2])],
                       [helper.make_tensor_value_info(n, t, None) for n, t in (("c", S), ("e", TensorProto.BOOL))],
                       [init], opsets=[("", 20)])


def test_ge_and_air_files_keep_strings(tmp_path):
    g = ge.onnx.load(_string_model().SerializeToString())
    x = strings("a", "b")
    want = run_graph(g, [x])
    assert want[0].tolist() == ["a-1", "b"] and want[1].tolist() == [False, True]
    path = tmp_path / "g.ge"
    g.save(str(path))
    for a, b in zip(run_graph(ge.graph.Graph.load(str(path)), [x]), want):
        np.testing.assert_array_equal(a, b)
    air = tmp_path / "g.air"
    g.save_to_air(str(air))
    for a, b in zip(run_graph(ge.graph.Graph.load_from_air(str(air)), [x]), want):
        np.testing.assert_array_equal(a, b)
    # ONNX export where the operators are exported; the strings of constants are kept.
    onnx = pytest.importorskip("onnx")
    try:
        exported = ge.onnx.to_bytes(g)
    except ge.GeError as e:
        assert "not supported" in str(e) and "StringJoin" in str(e), e
    else:
        m = onnx.load_model_from_string(exported)
        for a, b in zip(reference(m, {"x": x}), want):
            np.testing.assert_array_equal(a, b)


def test_split_moves_strings():
    node = helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1)
    m = graph_model([node], [helper.make_tensor_value_info("x", S, [2, 3])],
                    [helper.make_tensor_value_info(n, S, None) for n in ("a", "b")],
                    [helper.make_tensor("s", TensorProto.INT64, [2], [1, 2])], opsets=[("", 18)])
    check(m, {"x": np.array([["a", "b", "c"], ["d", "é", ""]])})


def test_onnx_export_keeps_string_casts_and_the_normalizer():
    nodes = [helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", stopwords=["b"]),
             helper.make_node("Cast", ["f"], ["t"], to=S),
             helper.make_node("Cast", ["t"], ["g"], to=TensorProto.DOUBLE)]
    m = graph_model(nodes, [helper.make_tensor_value_info("x", S, [3]), helper.make_tensor_value_info("f", TensorProto.FLOAT, [2])],
                    [helper.make_tensor_value_info(n, t, None) for n, t in (("y", S), ("t", S), ("g", TensorProto.DOUBLE))],
                    opsets=[("", 18)])
    # (ASCII: onnx's reference StringNormalizer strips accents, which ONNX does not ask for.)
    feeds = {"x": strings("a", "b", "c"), "f": np.array([0.1, 1e20], np.float32)}
    g = ge.onnx.load(m.SerializeToString())
    want = run_graph(g, [feeds["x"], feeds["f"]])
    assert want[0].tolist() == ["A", "C"] and want[1].tolist() == ["0.1", "1e+20"]
    import onnx

    exported = onnx.load_model_from_string(ge.onnx.to_bytes(g))
    assert {n.op_type for n in exported.graph.node} - {"Identity"} == {"StringNormalizer", "Cast"}
    for a, b in zip(reference(exported, feeds), want):
        np.testing.assert_array_equal(a, b)


def test_numeric_operators_refuse_strings():
    # At ONNX import, by the prototype's dtypes.
    m = one_node("Relu", [("x", S, [2])], [("y", S, None)], opset=14)
    with pytest.raises(ge.GeError, match="Relu: input 'x' has dtype DT_STRING"):
        run_ge(m, {"x": strings("a", "b")})
    # At compile, by the kernel lookup, where the prototype allows strings but the kernel is numeric.
    from ge.es import GraphBuilder
    from ge.es.all import Fill

    b = GraphBuilder("fill")
    x = b.create_input(0, data_type=DataType.DT_STRING)
    dims = b.create_const_int64([2], [1])
    g = b.build_and_reset([Fill(dims, x)])
    with pytest.raises(ge.GeError, match="not supported: Fill on DT_STRING"):
        run_graph(g, [np.array("a")])
