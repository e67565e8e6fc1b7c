"""ge.onnx.load: the ProgramTranslator's graph-level work, errors, opaque nodes and Python translators."""

from __future__ import annotations

import numpy as np
import pytest

import ge
import ge.onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_harness import graph_model, run_graph, vi  # noqa: E402


def _model(nodes, inputs, outputs, initializers=(), opset=17, functions=(), ir_version=8):
    return graph_model(nodes, inputs, outputs, initializers, opset, functions=functions,
                       ir_version=ir_version).SerializeToString()


def _run(graph, *inputs):
    return run_graph(graph, inputs)


def test_inputs_initializers_and_outputs():
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    m = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add"),
                helper.make_node("Relu", ["y"], ["z"])],
               [vi("x")], [vi("z"), vi("y")], [w])
    g = ge.onnx.load(m)
    types = sorted(n.type for n in g.get_direct_nodes())
    assert types == ["Add", "Const", "Data", "Relu"]
    assert g.find_node_by_name("add").type == "Add"
    x = np.array([[-10, 1, 2], [3, -40, 5]], np.float32)
    z, y = _run(g, x)
    np.testing.assert_array_equal(y, x + np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(z, np.maximum(y, 0))


def test_initializer_listed_as_input_is_a_mutable_parameter():
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    m = _model([helper.make_node("Mul", ["x", "w"], ["y"])], [vi("x"), vi("w")], [vi("y")], [w])
    g = ge.onnx.load(m)
    const = [n for n in g.get_direct_nodes() if n.type == "Const"]
    assert len(const) == 1 and const[0].get_attr("_is_mutable") is True
    assert len([n for n in g.get_direct_nodes() if n.type == "Data"]) == 1


def test_every_unsupported_op_type_is_listed_once_with_a_node():
    m = _model([helper.make_node("FooOp", ["x"], ["a"], name="foo1"),
                helper.make_node("FooOp", ["a"], ["b"], name="foo2"),
                helper.make_node("BarOp", ["b"], ["y"], name="bar", domain="my.dom")],
               [vi("x")], [vi("y")])
    with pytest.raises(ge.TranslationError) as e:
        ge.onnx.load(m)
    msg = str(e.value)
    assert "2 ONNX operator types" in msg
    assert "FooOp (node 'foo1')" in msg and "my.dom::BarOp (node 'bar')" in msg
    assert "foo2" not in msg


def test_opaque_mode_keeps_unsupported_nodes_for_a_pass():
    m = _model([helper.make_node("Relu", ["x"], ["a"]),
                helper.make_node("FooOp", ["a"], ["y"], name="foo", alpha=0.5, mode="fast", sizes=[1, 2])],
               [vi("x")], [vi("y")])
    g = ge.onnx.load(m, unsupported="opaque")
    foo = g.find_node_by_name("foo")
    assert foo.type == "FooOp"
    assert foo.get_attr("alpha") == pytest.approx(0.5)
    assert foo.get_attr("mode") == "fast" and foo.get_attr("sizes") == [1, 2]
    src, _ = foo.get_in_data_nodes_and_port_indexes(0)
    assert src.type == "Relu"
    with pytest.raises(ge.GeError, match="no CPU kernel for: FooOp"):
        _run(g, np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="unsupported must be"):
        ge.onnx.load(m, unsupported="ignore")


def test_malformed_models_are_translation_errors():
    for bad in (b"\x08\x96\x01garbage\xff\xff", b"\x0a\x05hello"):
        with pytest.raises(ge.TranslationError):
            ge.onnx.load(bad)
    with pytest.raises(ge.TranslationError, match="buffer underflow"):
        ge.onnx.load(helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString()[:4])
    with pytest.raises(ge.TranslationError, match="has no graph"):
        ge.onnx.load(helper.make_opsetid("", 17).SerializeToString()[:0] + b"\x08\x08")
    with pytest.raises(TypeError):
        ge.onnx.load(12)  # type: ignore[arg-type]
    # A value used before it is produced.
    m = _model([helper.make_node("Relu", ["nowhere"], ["y"])], [vi("x")], [vi("y")])
    with pytest.raises(ge.TranslationError, match="'nowhere' is used before it is produced"):
        ge.onnx.load(m)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(ge.TranslationError, match="No such file"):
        ge.onnx.load(tmp_path / "none.onnx")


def test_external_data_is_read_from_the_model_directory_only(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = numpy_helper.from_array(w, "w")
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                                            [vi("x")], [vi("y")], initializer=[t]),
                          opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    g = ge.onnx.load(tmp_path / "m.onnx")
    (y,) = _run(g, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(y, w + 1)
    # From bytes the external file cannot be found.
    with pytest.raises(ge.TranslationError, match="given as bytes"):
        ge.onnx.load((tmp_path / "m.onnx").read_bytes())
    # A location outside the model's directory is refused.
    m2 = onnx.load(tmp_path / "m.onnx", load_external_data=False)
    for e in m2.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = "../secret.bin"
    (tmp_path / "sub").mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\0" * 24)
    onnx.save_model(m2, tmp_path / "sub" / "m.onnx")
    with pytest.raises(ge.TranslationError, match="inside the model's directory"):
        ge.onnx.load(tmp_path / "sub" / "m.onnx")


def test_model_local_functions_are_inlined():
    f = helper.make_function(
        "my.fn", "AddRelu", ["a", "b"], ["c"],
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["c"])],
        opset_imports=[helper.make_opsetid("", 17)])
    m = _model([helper.make_node("AddRelu", ["x", "x"], ["y"], domain="my.fn", name="call")],
               [vi("x")], [vi("y")], functions=[f])
    m = helper.make_model(onnx.load_from_string(m).graph, functions=[f],
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.fn", 1)])
    g = ge.onnx.load(m.SerializeToString())
    x = np.array([[-1, 2, 3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(_run(g, x)[0], np.maximum(2 * x, 0))


def test_old_opset_attributes_become_inputs():
    # Squeeze-11 takes axes as an attribute; 13 as an input.
    m = _model([helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [vi("x", shape=(1, 3))],
               [vi("y", shape=(3,))], opset=11)
    g = ge.onnx.load(m)
    np.testing.assert_array_equal(_run(g, np.ones((1, 3), np.float32))[0], np.ones(3, np.float32))


def test_python_translator_builds_with_es_ops():
    from ge.es.all import Mul, Tanh

    calls = []

    @ge.onnx.register_translator("my.dom::ScaledTanh")
    def scaled_tanh(ctx):
        calls.append(repr(ctx))
        assert ctx.op_type == "ScaledTanh" and ctx.domain == "my.dom" and ctx.num_outputs == 1
        return Mul(Tanh(ctx.inputs[0]), ctx.builder.create_scalar_float(ctx.attrs["scale"]))

    try:
        assert "my.dom::ScaledTanh" in ge.onnx.translator_keys()
        m = _model([helper.make_node("ScaledTanh", ["x"], ["y"], domain="my.dom", scale=3.0, name="st")],
                   [vi("x")], [vi("y")])
        g = ge.onnx.load(m)
        x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_allclose(_run(g, x)[0], 3 * np.tanh(x), rtol=1e-6)
        assert calls == ["TranslatorContext(my.dom::ScaledTanh 'st', 1 inputs, opset 1)"]
    finally:
        assert ge.onnx.unregister_translator("my.dom::ScaledTanh")
    assert not ge.onnx.unregister_translator("my.dom::ScaledTanh")
    with pytest.raises(ge.TranslationError, match="ScaledTanh"):
        ge.onnx.load(m)


def test_python_translator_errors_name_the_translator_and_node():
    @ge.onnx.register_translator("Relu")
    def broken(ctx):
        raise KeyError("boom")

    @ge.onnx.register_translator("my::Wrong")
    def wrong(ctx):
        return 42

    try:
        m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x")], [vi("y")])
        with pytest.raises(ge.TranslationError, match=r"node 'r' \(Relu\).*registered for 'Relu' raised KeyError"):
            ge.onnx.load(m)
        m = _model([helper.make_node("Wrong", ["x"], ["y"], domain="my")], [vi("x")], [vi("y")])
        with pytest.raises(ge.TranslationError, match="must be a TensorHolder"):
            ge.onnx.load(m)
    finally:
        ge.onnx.unregister_translator("Relu")
        ge.onnx.unregister_translator("my::Wrong")
    # The built-in Relu translator is back.
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y")])
    assert _run(ge.onnx.load(m), -np.ones((2, 3), np.float32))[0].max() == 0
    with pytest.raises(ValueError, match="translator key"):
        ge.onnx.register_translator("::")(lambda ctx: None)


def test_ml_dtypes_arrays_become_tensors_of_their_type():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from ge.graph import Tensor
    from ge.graph.types import DataType

    for np_type, dt, bits in ((ml_dtypes.bfloat16, DataType.DT_BF16, np.uint16),
                              (ml_dtypes.float8_e4m3fn, DataType.DT_FLOAT8_E4M3FN, np.uint8),
                              (ml_dtypes.float8_e5m2, DataType.DT_FLOAT8_E5M2, np.uint8)):
        a = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np_type)
        t = Tensor(a)
        assert t.get_data_type() == dt and t.get_shape() == [2, 2]
        np.testing.assert_array_equal(t.numpy(), a.view(bits))
        if dt != DataType.DT_BF16:
            continue  # the CPU backend computes in bf16, not in the float8 types
        # Through a graph: Cast to float32 gives the values back.
        m = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                   [vi("x", helper.np_dtype_to_tensor_dtype(np.dtype(np_type)), (2, 2))],
                   [vi("y", TensorProto.FLOAT, (2, 2))], opset=19)
        (y,) = _run(ge.onnx.load(m), a)
        np.testing.assert_array_equal(y, a.astype(np.float32))
