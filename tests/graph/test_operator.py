"""``ge.graph.Operator``: GE's borrowed operator handle, over a graph node."""


import pytest

import ge.graph
from ge.es import GraphBuilder
from ge.es.all import IdentityN, LeakyRelu, MatMulV2, Relu
from ge.graph import Operator
from ge.graph.operator import create_operator
from common import assert_refuses_copy


def nodes():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[2, 3])
    w = b.create_input(2, shape=[3, 2])
    ident = IdentityN([x, y], 2)
    outs = [Relu(x), LeakyRelu(y), MatMulV2(x, w)] + list(ident)
    g = b.build_and_reset(outs)
    by_type = {n.type: n for n in g.get_all_nodes()}
    return g, by_type


def test_exported_from_ge_graph():
    assert "Operator" in ge.graph.__all__ and ge.graph.Operator is Operator


def test_plugins_cannot_create_or_copy_one():
    with pytest.raises(RuntimeError, match="Operator objects should not be created directly."):
        Operator()
    _, n = nodes()
    with pytest.raises(RuntimeError, match="should not be created directly"):
        Operator(n["Relu"])
    op = create_operator(n["Relu"])
    assert_refuses_copy(op, "Operator")


def test_handle_must_be_a_node():
    with pytest.raises(ValueError, match="Operator handle cannot be None"):
        create_operator(None)
    with pytest.raises(TypeError, match="Operator handle must be a ge.graph.Node, got int"):
        create_operator(0x123)


def test_name_type_and_attributes():
    _, n = nodes()
    op = create_operator(n["LeakyRelu"])
    assert (op.name, op.type) == (n["LeakyRelu"].name, "LeakyRelu")
    assert repr(op) == f"Operator({op.name!r}, 'LeakyRelu')"
    op.set_attr("negative_slope", 0.25)
    op.set_attr("_mode", "nearest")
    op.set_attr("_axes", [1, 2])
    assert n["LeakyRelu"].get_attr("negative_slope") == 0.25
    assert n["LeakyRelu"].get_attr("_mode") == "nearest" and n["LeakyRelu"].get_attr("_axes") == [1, 2]
    with pytest.raises(TypeError, match="negative_slope"):
        op.set_attr("negative_slope", "steep")
    for bad in ("", 3):
        with pytest.raises(TypeError, match="Operator attribute name must be a non-empty string"):
            op.set_attr(bad, 1)


def test_declared_ports_register():
    _, n = nodes()
    mm = create_operator(n["MatMulV2"])
    mm.register_input("x1")
    mm.register_input("x2")
    mm.register_optional_input("bias")
    mm.register_output("y")
    ident = create_operator(n["IdentityN"])
    ident.register_dynamic_input("x", 2)
    ident.register_dynamic_output("y", 2)
    # Nothing changed on the node.
    assert (n["MatMulV2"].get_inputs_size(), n["IdentityN"].get_outputs_size()) == (4, 2)


@pytest.mark.parametrize("call, message", [
    (lambda op: op.register_input("nope"), "Failed to register_input 'nope' on Operator .*no such port"),
    (lambda op: op.register_input("bias"), "Failed to register_input 'bias' .*the port is optional, not required"),
    (lambda op: op.register_optional_input("x1"),
     "Failed to register_optional_input 'x1' .*the port is required, not optional"),
    (lambda op: op.register_output("x1"), "Failed to register_output 'x1' .*declares outputs .*no such port"),
    (lambda op: op.register_dynamic_input("x1", 1),
     "Failed to register dynamic input 'x1' .*the port is required, not dynamic"),
])
def test_undeclared_ports_are_not_supported(call, message):
    _, n = nodes()
    with pytest.raises(RuntimeError, match=f"{message}.*a built node cannot gain ports"):
        call(create_operator(n["MatMulV2"]))


def test_dynamic_instance_count_cannot_change():
    _, n = nodes()
    op = create_operator(n["IdentityN"])
    with pytest.raises(RuntimeError, match="Failed to register dynamic input 'x' .*not supported: the node has 2 "
                                           "instances of 'x' .*cannot change to 3"):
        op.register_dynamic_input("x", 3)
    with pytest.raises(RuntimeError, match="Failed to register dynamic output 'y' .*cannot change to 0"):
        op.register_dynamic_output("y", 0)


@pytest.mark.parametrize("count, error", [(True, TypeError), (1.0, TypeError), (-1, ValueError), (1 << 32, ValueError)])
def test_dynamic_count_is_checked(count, error):
    _, n = nodes()
    with pytest.raises(error, match="Operator dynamic port count must be"):
        create_operator(n["IdentityN"]).register_dynamic_input("x", count)


@pytest.mark.parametrize("method", ["register_input", "register_optional_input", "register_output"])
def test_port_names_are_checked(method):
    _, n = nodes()
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        getattr(create_operator(n["Relu"]), method)("")
    with pytest.raises(TypeError, match="Operator dynamic port name must be a non-empty string"):
        create_operator(n["Relu"]).register_dynamic_output(None, 1)


def test_valid_only_inside_the_callback():
    _, n = nodes()
    with create_operator(n["Relu"]) as op:
        assert op.name == n["Relu"].name
        op.register_input("x")
    assert repr(op) == "Operator(<expired>)"
    for use in (lambda: op.name, lambda: op.type, lambda: op.set_attr("_a", 1),
                lambda: op.register_input("x"), lambda: op.register_dynamic_input("x", 1)):
        with pytest.raises(RuntimeError, match="Operator is only valid inside parse_node"):
            use()
    assert not n["Relu"].has_attr("_a")


def test_a_node_without_a_prototype_declares_nothing():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import ge.onnx

    node = helper.make_node("Mystery", ["x"], ["y"], domain="my.dom")
    io = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [2]) for v in ("x", "y")]
    model = helper.make_model(helper.make_graph([node], "g", io[:1], io[1:]),
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("my.dom", 1)])
    g = ge.onnx.load(model.SerializeToString(), unsupported="opaque")
    mystery = [n for n in g.get_all_nodes() if n.type == "my.dom::Mystery"][0]
    op = create_operator(mystery)
    assert op.type == "my.dom::Mystery"
    with pytest.raises(RuntimeError, match="Failed to register_input 'x' on Operator Mystery: not supported: "
                                           "op type 'my.dom::Mystery' has no prototype"):
        op.register_input("x")
    op.set_attr("_seen", True)
    assert mystery.get_attr("_seen") is True
    assert onnx is not None


def test_two_dynamic_inputs_cannot_be_counted():
    import ge.ops

    ge.ops.register({"name": "TestOperatorTwoLists", "doc": "Two dynamic inputs.",
                     "inputs": [{"name": "a", "kind": "dynamic", "type": "T"},
                                {"name": "b", "kind": "dynamic", "type": "T"}],
                     "outputs": [{"name": "y", "type": "T"}], "attrs": [], "type_vars": {"T": ["DT_FLOAT"]}})
    from ge.es.all import TestOperatorTwoLists

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    op = create_operator(TestOperatorTwoLists([x, x], [x]).get_producer())
    op.register_output("y")
    with pytest.raises(RuntimeError, match="Failed to register dynamic input 'a' .*not supported: the prototype "
                                           "has 2 dynamic inputs, whose instances cannot be told apart"):
        op.register_dynamic_input("a", 2)
