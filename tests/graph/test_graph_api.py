"""GE's Graph / Node API on graphs built with ``ge.es``: nodes, attributes, edges, descriptions,
subgraphs, dumps, validation, and the Tensor / TensorDesc / Shape classes."""

import math
import os

import numpy as np
import pytest

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, BatchNorm, Cast, ConcatD, Exp, MatMulV2, Pow, Relu, SplitD, TopKV2
from ge.graph import DataType, DumpFormat, Format, Node, Placement, Shape, Tensor, TensorDesc
from ge.graph.tensor import _NP_TO_DT
from graph_samples import branch, if_graph

# Helpers -------------------------------------------------------------------------------------


def diamond():
    """x, y -> Add -> (Relu_0, Relu_1); outputs Relu_0, Relu_1."""
    b = GraphBuilder("diamond")
    x = b.create_input(0, shape=[2])
    y = b.create_input(1, shape=[2])
    a = Add(x, y)
    g = b.build_and_reset([Relu(a), Relu(a)])
    return g, {n.name: n for n in g.get_direct_nodes()}


def names(nodes):
    return [n.name for n in nodes]


# Nodes ---------------------------------------------------------------------------------------


def test_direct_nodes_are_this_graph_only_in_creation_order():
    g = if_graph()
    assert names(g.get_direct_nodes()) == ["input_0", "input_1", "If_0", "Relu_0"]
    assert [n.type for n in g.get_direct_nodes()] == ["Data", "Data", "If", "Relu"]


def test_all_nodes_include_subgraph_nodes_depth_first():
    g = if_graph()
    everything = g.get_all_nodes()
    # Each subgraph's nodes follow their parent node.
    assert names(everything) == ["input_0", "input_1", "If_0", "input_0", "Relu_0",
                                 "input_0", "Const_0", "Add_0", "Relu_0"]
    owners = [n.get_owner_graph().name for n in everything]
    assert owners == ["main", "main", "main", "then", "then", "else", "else", "else", "main"]
    # A subgraph's own views agree.
    then = g.get_subgraph("then")
    assert names(then.get_all_nodes()) == names(then.get_direct_nodes()) == ["input_0", "Relu_0"]


def test_find_node_by_name_does_not_search_subgraphs():
    g = if_graph()
    assert g.find_node_by_name("If_0").type == "If"
    for missing in ("nope", "Add_0"):  # Add_0 is only in the else branch
        with pytest.raises(RuntimeError, match=f"Failed to find Node name {missing}"):
            g.find_node_by_name(missing)
    add = g.get_subgraph("else").find_node_by_name("Add_0")
    assert add is not None and add.type == "Add" and add.get_owner_graph().name == "else"


def test_node_views_compare_and_hash_by_identity():
    g, n = diamond()
    again = g.find_node_by_name("Add_0")
    assert again == n["Add_0"] and hash(again) == hash(n["Add_0"])
    assert n["Add_0"] != n["Relu_0"] and n["Add_0"] != "Add_0"
    assert len({*g.get_direct_nodes(), *g.get_direct_nodes()}) == 5
    assert repr(n["Add_0"]) == "Node('Add_0', Add)"
    with pytest.raises(TypeError):
        Node()


def test_inputs_and_outputs_size():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 6])
    w = b.create_input(1, shape=[6, 2])
    mm = MatMulV2(x, w).get_producer()
    assert (mm.get_inputs_size(), mm.get_outputs_size()) == (4, 1)  # optional inputs count
    parts = SplitD(x, 3, split_dim=1, num_split=3)
    assert (parts[0].get_producer().get_inputs_size(), parts[0].get_producer().get_outputs_size()) == (1, 3)
    cat = ConcatD([parts[2], parts[0], parts[1]], concat_dim=1).get_producer()
    assert (cat.get_inputs_size(), cat.get_outputs_size()) == (3, 1)
    top = TopKV2(x, 2)
    assert top.values.get_producer().get_outputs_size() == 2
    bn = BatchNorm(b.create_input(2, shape=[1, 2, 2, 3]), b.create_input(3, shape=[3]),
                   b.create_input(4, shape=[3])).y.get_producer()
    assert (bn.get_inputs_size(), bn.get_outputs_size()) == (5, 6)
    g = if_graph()
    assert (g.find_node_by_name("If_0").get_inputs_size(), g.find_node_by_name("If_0").get_outputs_size()) == (2, 1)


def test_in_and_out_data_nodes_and_port_indexes():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 6])
    parts = SplitD(x, 3, split_dim=1, num_split=3)
    ConcatD([parts[2], parts[0], parts[1]], concat_dim=1)
    top = TopKV2(x, 2)
    r = Relu(top.values)
    c = Cast(top.indices, dst_type=int(DataType.DT_FLOAT))
    g = b.build_and_reset([r, c])
    split, cat = g.find_node_by_name("SplitD_0"), g.find_node_by_name("ConcatD_0")
    outs = [split.get_out_data_nodes_and_port_indexes(i) for i in range(3)]
    assert [[(n.name, p) for n, p in o] for o in outs] == [[("ConcatD_0", 1)], [("ConcatD_0", 2)], [("ConcatD_0", 0)]]
    ins = [cat.get_in_data_nodes_and_port_indexes(i) for i in range(3)]
    assert [(n.name, p) for n, p in ins] == [("SplitD_0", 2), ("SplitD_0", 0), ("SplitD_0", 1)]
    topk = g.find_node_by_name("TopKV2_0")
    assert [(n.name, p) for n, p in topk.get_out_data_nodes_and_port_indexes(0)] == [("Relu_0", 0)]
    assert [(n.name, p) for n, p in topk.get_out_data_nodes_and_port_indexes(1)] == [("Cast_0", 0)]
    k_node, k_port = topk.get_in_data_nodes_and_port_indexes(1)
    assert (k_node.type, k_port) == ("Const", 0)
    # A node with several consumers of one output lists them in edge order.
    _, n = diamond()
    assert [(m.name, p) for m, p in n["Add_0"].get_out_data_nodes_and_port_indexes(0)] == [("Relu_0", 0), ("Relu_1", 0)]
    assert cat.get_out_data_nodes_and_port_indexes(0) == []


def test_data_node_query_errors():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    mm = MatMulV2(x, x)
    g = b.build_and_reset([mm])
    node = g.find_node_by_name("MatMulV2_0")
    with pytest.raises(RuntimeError, match="input 'bias' is not connected"):
        node.get_in_data_nodes_and_port_indexes(2)
    with pytest.raises(RuntimeError, match="has 4 inputs"):
        node.get_in_data_nodes_and_port_indexes(4)
    with pytest.raises(RuntimeError, match="has 4 inputs"):
        node.get_in_data_nodes_and_port_indexes(-1)
    with pytest.raises(RuntimeError, match="has 1 outputs"):
        node.get_out_data_nodes_and_port_indexes(1)
    for bad in ("0", 0.0, True, None):
        with pytest.raises(TypeError, match="Input index must be an integer"):
            node.get_in_data_nodes_and_port_indexes(bad)
        with pytest.raises(TypeError, match="Output index must be an integer"):
            node.get_out_data_nodes_and_port_indexes(bad)


# Attributes ----------------------------------------------------------------------------------

ATTR_VALUES = [
    ("int", 7, int),
    ("negative_int", -(2**63), int),
    ("max_int", 2**63 - 1, int),
    ("float", 1.5, float),
    ("str", "hello \u00e9\n\"quoted\"", str),
    ("empty_str", "", str),
    ("bool_true", True, bool),
    ("bool_false", False, bool),
    ("dtype", DataType.DT_INT8, DataType),
    ("list_int", [1, -2, 3], list),
    ("list_float", [1.5, -2.25], list),
    ("list_bool", [True, False, True], list),
    ("list_str", ["a", "", "b"], list),
    ("list_dtype", [DataType.DT_FLOAT, DataType.DT_BF16], list),
    ("list_list_int", [[1, 2], [], [3]], list),
    ("empty_list", [], list),
    ("tensor", Tensor(np.arange(6, dtype=np.int32).reshape(2, 3)), Tensor),
]


@pytest.mark.parametrize("key,value,kind", ATTR_VALUES, ids=[a[0] for a in ATTR_VALUES])
def test_graph_and_node_attrs_round_trip_every_type(key, value, kind):
    g, n = diamond()
    node = n["Relu_0"]
    assert not g.has_attr(key) and not node.has_attr(key)
    g.set_attr(key, value)
    node.set_attr(key, value)
    for got in (g.get_attr(key), node.get_attr(key)):
        assert type(got) is kind
        assert got == value
    assert g.has_attr(key) and node.has_attr(key)
    assert node.get_private_attrs() == {key: value}
    assert node.get_ir_attrs() == {}
    # The element types of lists survive too.
    if key == "list_dtype":
        assert all(isinstance(d, DataType) for d in g.get_attr(key))
    if key == "list_bool":
        assert all(type(v) is bool for v in node.get_attr(key))
    if key == "tensor":
        assert np.array_equal(node.get_attr(key).numpy(), value.numpy())


def test_attr_containers_are_copied_not_shared():
    g, _ = diamond()
    lst = [1, 2]
    g.set_attr("l", lst)
    lst.append(3)
    got = g.get_attr("l")
    got.append(4)
    assert g.get_attr("l") == [1, 2]


def test_float_attrs_are_float32_and_keep_nan_and_inf():
    g, n = diamond()
    g.set_attr("f", 0.1)
    assert g.get_attr("f") == float(np.float32(0.1)) != 0.1
    g.set_attr("nan", float("nan"))
    g.set_attr("inf", float("-inf"))
    n["Relu_0"].set_attr("lf", [float("inf"), float("nan"), 1])
    assert math.isnan(g.get_attr("nan")) and g.get_attr("inf") == float("-inf")
    lf = n["Relu_0"].get_attr("lf")
    assert lf[0] == float("inf") and math.isnan(lf[1]) and lf[2] == 1.0 and type(lf[2]) is float


def test_tuples_and_mixed_numbers_infer_list_types():
    g, _ = diamond()
    g.set_attr("t", (1, 2))
    assert g.get_attr("t") == [1, 2]
    g.set_attr("m", [1, 2.5])  # an int list with a float is a float list
    assert g.get_attr("m") == [1.0, 2.5] and type(g.get_attr("m")[0]) is float
    g.set_attr("ll", ((1,), (2, 3)))
    assert g.get_attr("ll") == [[1], [2, 3]]


def test_numpy_scalars_keep_their_kind():
    g, n = diamond()
    g.set_attr("i", np.int64(3))
    g.set_attr("f", np.float32(1.5))
    g.set_attr("b", np.bool_(True))
    g.set_attr("li", [np.int32(1), np.int64(2)])
    g.set_attr("lf", [1, np.float16(2.5)])
    assert (type(g.get_attr("i")), g.get_attr("i")) == (int, 3)
    assert (type(g.get_attr("f")), g.get_attr("f")) == (float, 1.5)
    assert g.get_attr("b") is True
    assert g.get_attr("li") == [1, 2] and g.get_attr("lf") == [1.0, 2.5]
    with pytest.raises(ValueError, match="does not fit in int64"):
        g.set_attr("u", np.uint64(2**64 - 1))
    # A numpy array is still a tensor attribute.
    g.set_attr("arr", np.array([1.0, 2.0], np.float32))
    assert isinstance(g.get_attr("arr"), Tensor) and g.get_attr("arr").get_shape() == [2]


def test_attr_with_explicit_type():
    g, n = diamond()
    g.set_attr("x", 3, "Float")
    assert g.get_attr("x") == 3.0 and type(g.get_attr("x")) is float
    n["Relu_0"].set_attr("_l", [1, 2], "LIST_INT")
    assert n["Relu_0"].get_attr("_l") == [1, 2]
    g.set_attr("d", 3, "Type")
    assert g.get_attr("d") is DataType.DT_INT32
    with pytest.raises(TypeError, match="must be an int, got float"):
        g.set_attr("x", 1.5, "Int")
    with pytest.raises(ValueError, match="unknown attribute type 'Nope'"):
        g.set_attr("x", 1, "Nope")
    assert g.get_attr("x") == 3.0  # unchanged by the failed calls


def test_attr_errors():
    g, n = diamond()
    node = n["Relu_0"]
    for target, what in ((g, "Graph"), (node, "Node")):
        with pytest.raises(RuntimeError, match=f"Failed to get attribute 'missing' from {what}: not set"):
            target.get_attr("missing")
        with pytest.raises(TypeError, match="Attribute key must be a string"):
            target.get_attr(3)
        with pytest.raises(TypeError, match="Attribute key must be a string"):
            target.set_attr(3, 1)
        # GE's ValueError and wording for values that make no attribute.
        for bad in (None, object(), {"a": 1}, [None], b"bytes"):
            with pytest.raises(ValueError, match="Unsupported attribute type: <class '"):
                target.set_attr("bad", bad)
        with pytest.raises((TypeError, ValueError)):
            target.set_attr("bad", [[1.5]])
        with pytest.raises(ValueError, match="does not fit in int64"):
            target.set_attr("bad", 2**63)
        assert not target.has_attr("bad")
    with pytest.raises(TypeError, match="attr_name must be a string"):
        node.has_attr(1)


def test_ir_attrs_versus_private_attrs():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    e = Exp(x, scale=2.0)
    g = b.build_and_reset([e])
    node = g.find_node_by_name("Exp_0")
    assert node.get_ir_attrs() == {"base": -1.0, "scale": 2.0, "shift": 0.0}
    assert node.get_private_attrs() == {}
    node.set_attr("base", 2)  # an IR attribute: converted to its declared type
    node.set_attr("_hint", "fast")  # not in the IR: private
    assert node.get_ir_attrs() == {"base": 2.0, "scale": 2.0, "shift": 0.0}
    assert type(node.get_attr("base")) is float
    assert node.get_private_attrs() == {"_hint": "fast"}
    assert node.get_attr("_hint") == "fast" and node.has_attr("base") and node.has_attr("_hint")
    # IR attributes keep their type.
    with pytest.raises(TypeError, match="Exp: attribute 'base' must be a float, got str"):
        node.set_attr("base", "two")
    with pytest.raises(TypeError, match="Exp: attribute 'shift' must be a float, got bool"):
        node.set_attr("shift", True)
    with pytest.raises(TypeError, match="must be a float, got list"):
        node.set_attr("scale", [1.0])
    # An explicit type does not override the IR type.
    with pytest.raises(TypeError, match="must be a float"):
        node.set_attr("scale", "1", "String")
    assert node.get_ir_attrs() == {"base": 2.0, "scale": 2.0, "shift": 0.0}
    # numpy scalars are accepted where their kind fits.
    node.set_attr("shift", np.float32(0.5))
    assert node.get_attr("shift") == 0.5


def test_ir_attr_type_errors_on_other_ops():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    mm = MatMulV2(x, x).get_producer()
    with pytest.raises(TypeError, match="MatMulV2: attribute 'transpose_x1' must be a bool, got int"):
        mm.set_attr("transpose_x1", 1)
    with pytest.raises(TypeError, match="MatMulV2: attribute 'offset_x' must be an int, got float"):
        mm.set_attr("offset_x", 1.0)
    with pytest.raises(TypeError, match="must be an int, got bool"):
        mm.set_attr("offset_x", np.bool_(True))
    mm.set_attr("offset_x", np.int64(3))
    mm.set_attr("transpose_x1", np.bool_(True))
    assert mm.get_ir_attrs() == {"offset_x": 3, "transpose_x1": True, "transpose_x2": False}


def test_input_and_output_attrs():
    g, n = diamond()
    add = n["Add_0"]
    add.set_input_attr("_in", 1, [1.5, 2.5])
    add.set_output_attr("_out", 0, DataType.DT_INT8)
    add.set_output_attr("_name", 0, "sum")
    assert add.get_input_attr("_in", 1) == [1.5, 2.5]
    assert add.get_output_attr("_out", 0) is DataType.DT_INT8
    assert add.get_output_desc(0).get_attr("_name") == "sum"
    assert add.get_input_desc(1).get_attr("_in") == [1.5, 2.5]
    # Input and output attributes are per port and not node attributes.
    assert not add.has_attr("_in") and not add.has_attr("_out")
    with pytest.raises(RuntimeError, match="Failed to get Node Add_0 input attribute '_in' for index 0"):
        add.get_input_attr("_in", 0)
    with pytest.raises(RuntimeError, match="Failed to get Node Add_0 output attribute '_nope' for index 0"):
        add.get_output_attr("_nope", 0)
    with pytest.raises(RuntimeError, match="'Add_0' has no input 2"):
        add.set_input_attr("_in", 2, 1)
    with pytest.raises(RuntimeError, match="'Add_0' has no output 1"):
        add.get_output_attr("_out", 1)
    with pytest.raises(TypeError, match="Output index must be an integer"):
        add.set_output_attr("_out", "0", 1)
    with pytest.raises(TypeError, match="Input index must be an integer"):
        add.get_input_attr("_in", True)
    with pytest.raises(ValueError, match="Unsupported attribute type"):
        add.set_output_attr("_out", 0, object())
    assert "_out" in g.dump_to_stream(DumpFormat.kTxt)


# Tensor descriptions -------------------------------------------------------------------------


def full_desc():
    d = TensorDesc([4, -1], Format.FORMAT_NCHW, DataType.DT_FLOAT16)
    d.set_origin_shape([1, 4, 2, 2])
    d.set_origin_format(Format.FORMAT_NHWC)
    d.set_placement(Placement.PLACEMENT_DEVICE)
    d.set_attr("_k", 3)
    d.set_attr("_s", "v")
    d.set_attr("_l", [DataType.DT_INT8])
    return d


def test_output_and_input_desc_round_trip():
    g, n = diamond()
    relu = n["Relu_0"]
    d = relu.get_output_desc(0)
    assert (d.get_data_type(), d.get_shape(), d.get_format()) == (DataType.DT_FLOAT, [2], Format.FORMAT_ND)
    want = full_desc()
    relu.update_output_desc(0, want)
    relu.update_input_desc(0, want)
    for got in (relu.get_output_desc(0), relu.get_input_desc(0)):
        assert got == want
        assert got.get_origin_shape() == [1, 4, 2, 2]
        assert got.get_origin_format() == Format.FORMAT_NHWC
        assert got.get_placement() == Placement.PLACEMENT_DEVICE
        assert got.get_attr("_l") == [DataType.DT_INT8]
    # The returned description is a copy.
    got = relu.get_output_desc(0)
    got.set_shape([9])
    assert relu.get_output_desc(0).get_shape() == [4, -1]
    # Other ports are untouched.
    assert n["Relu_1"].get_output_desc(0).get_shape() == [2]
    assert "dtype: DT_FLOAT16 shape: [4, -1] format: FORMAT_NCHW" in g.dump_to_stream(DumpFormat.kTxt)


def test_desc_errors():
    _, n = diamond()
    relu = n["Relu_0"]
    with pytest.raises(RuntimeError, match="Failed to get input desc for index 1"):
        relu.get_input_desc(1)
    with pytest.raises(RuntimeError, match="Failed to get output desc for index -1"):
        relu.get_output_desc(-1)
    with pytest.raises(RuntimeError, match="Failed to update input desc for index 1"):
        relu.update_input_desc(1, TensorDesc([2]))
    with pytest.raises(RuntimeError, match="Failed to update output desc for index 3"):
        relu.update_output_desc(3, TensorDesc([2]))
    with pytest.raises(TypeError, match="tensor_desc must be a TensorDesc"):
        relu.update_output_desc(0, "desc")
    with pytest.raises(TypeError, match="Output index must be an integer"):
        relu.update_output_desc(0.0, TensorDesc([2]))
    bad = TensorDesc([2])
    bad.set_attr("_bad", object())
    with pytest.raises(ValueError, match="Unsupported attribute type"):
        relu.update_output_desc(0, bad)
    assert relu.get_output_desc(0).get_shape() == [2]


# Edges ---------------------------------------------------------------------------------------


def test_remove_edge_and_add_data_edge():
    g, n = diamond()
    x, y, add, r0 = n["input_0"], n["input_1"], n["Add_0"], n["Relu_0"]
    g.remove_edge(add, 0, r0, 0)
    assert names(m for m, _ in add.get_out_data_nodes_and_port_indexes(0)) == ["Relu_1"]
    with pytest.raises(RuntimeError, match="input 'x' is not connected"):
        r0.get_in_data_nodes_and_port_indexes(0)
    with pytest.raises(ge.GraphBuildError, match=r"input 0 \('x'\) of node 'Relu_0' \(Relu\) is not connected"):
        g.validate()
    g.add_data_edge(y, 0, r0, 0)
    src, port = r0.get_in_data_nodes_and_port_indexes(0)
    assert (src, port) == (y, 0)
    assert [(m.name, p) for m, p in y.get_out_data_nodes_and_port_indexes(0)] == [("Add_0", 1), ("Relu_0", 0)]
    g.validate()
    assert "%Relu_0 = Relu(%input_1)" in g.dump_to_stream()
    assert x.get_out_data_nodes_and_port_indexes(0) == [(add, 0)]


def test_edge_errors():
    g, n = diamond()
    x, add, r0, r1 = n["input_0"], n["Add_0"], n["Relu_0"], n["Relu_1"]
    with pytest.raises(RuntimeError, match="input 0 of node 'Add_0' is already connected"):
        g.add_data_edge(x, 0, add, 0)
    with pytest.raises(RuntimeError, match="there is no data edge from output 0 of 'input_0' to input 0 of 'Relu_0'"):
        g.remove_edge(x, 0, r0, 0)
    with pytest.raises(RuntimeError, match="has 1 outputs, no output 5"):
        g.add_data_edge(x, 5, r1, 0)
    with pytest.raises(RuntimeError, match="has 1 inputs, no input 1"):
        g.remove_edge(add, 0, r0, 1)
    with pytest.raises(RuntimeError, match="port indexes must be >= 0"):
        g.add_data_edge(x, -1, r1, 0)
    with pytest.raises(RuntimeError, match="use -1 for both ports"):
        g.remove_edge(add, -1, r0, 0)
    for bad in ("0", 0.0, True, None):
        with pytest.raises(TypeError, match="src_port_index must be an integer"):
            g.add_data_edge(x, bad, r1, 0)
        with pytest.raises(TypeError, match="dst_port_index must be an integer"):
            g.remove_edge(add, 0, r0, bad)
    with pytest.raises(TypeError, match="src_node must be a Node"):
        g.add_data_edge("input_0", 0, r1, 0)
    with pytest.raises(TypeError, match="dst_node must be a Node"):
        g.add_control_edge(x, None)
    other, m = diamond()
    with pytest.raises(ValueError, match="src_node belongs to another graph"):
        g.add_data_edge(m["input_0"], 0, r1, 0)
    with pytest.raises(ValueError, match="dst_node belongs to another graph"):
        g.remove_edge(add, 0, m["Relu_0"], 0)
    with pytest.raises(ValueError, match="node belongs to another graph"):
        other.remove_node(add)
    # A node of a builder, or of a subgraph, is not a node of the graph either.
    b = GraphBuilder("b")
    producer = Relu(b.create_input(0)).get_producer()
    with pytest.raises(ValueError, match="belongs to another graph"):
        g.add_control_edge(producer, r0)
    main = if_graph()
    sub_relu = main.get_subgraph("then").find_node_by_name("Relu_0")
    with pytest.raises(ValueError, match="belongs to another graph"):
        main.add_control_edge(sub_relu, main.find_node_by_name("Relu_0"))
    # None of the failed calls changed the graph.
    g.validate()
    assert [(m.name, p) for m, p in add.get_out_data_nodes_and_port_indexes(0)] == [("Relu_0", 0), ("Relu_1", 0)]


def test_control_edges():
    g, n = diamond()
    r0, r1, x = n["Relu_0"], n["Relu_1"], n["input_0"]
    g.add_control_edge(r0, r1)
    g.add_control_edge(r0, r1)  # adding it again changes nothing
    g.add_control_edge(x, r1)
    assert r1.get_in_control_nodes() == [r0, x]
    assert r0.get_out_control_nodes() == [r1]
    assert r0.get_in_control_nodes() == [] and r1.get_out_control_nodes() == []
    assert "after[^Relu_0, ^input_0]" in g.dump_to_stream(DumpFormat.kReadable)
    assert 'control_input: "Relu_0"' in g.dump_to_stream(DumpFormat.kTxt)
    g.validate()
    with pytest.raises(RuntimeError, match="a control edge from node 'Relu_0' to itself would be a cycle"):
        g.add_control_edge(r0, r0)
    g.remove_edge(r0, -1, r1, -1)
    assert r1.get_in_control_nodes() == [x] and r0.get_out_control_nodes() == []
    with pytest.raises(RuntimeError, match="there is no control edge from 'Relu_0' to 'Relu_1'"):
        g.remove_edge(r0, -1, r1, -1)


def test_control_dependencies_from_the_builder_are_control_edges():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a = Relu(x)
    c = Relu(x)
    b.add_control_dependency(c, [a])
    g = b.build_and_reset([c])
    r0, r1 = g.find_node_by_name("Relu_0"), g.find_node_by_name("Relu_1")
    assert r1.get_in_control_nodes() == [r0] and r0.get_out_control_nodes() == [r1]


def test_cycle_through_a_control_edge_fails_validation():
    g, n = diamond()
    g.add_control_edge(n["Relu_0"], n["Add_0"])
    with pytest.raises(ge.GraphBuildError, match="graph 'diamond' has a cycle through nodes .*Add_0"):
        g.validate()
    # The readable dump still lists every node.
    assert "Relu_1" in g.dump_to_stream()
    g.remove_edge(n["Relu_0"], -1, n["Add_0"], -1)
    g.validate()


def test_cycle_through_data_edges_fails_validation():
    g, n = diamond()
    g.remove_edge(n["input_1"], 0, n["Add_0"], 1)
    g.add_data_edge(n["Relu_1"], 0, n["Add_0"], 1)
    with pytest.raises(ge.GraphBuildError, match="cycle"):
        g.validate()


def test_validate_names_the_broken_subgraph():
    g = if_graph()
    then = g.get_subgraph("then")
    then.remove_edge(then.find_node_by_name("input_0"), 0, then.find_node_by_name("Relu_0"), 0)
    with pytest.raises(ge.GraphBuildError, match="subgraph 'then_branch' of node 'If_0': input 0 .* is not connected"):
        g.validate()
    with pytest.raises(ge.GraphBuildError, match="is not connected"):
        then.validate()
    g.get_subgraph("else").validate()


def test_validate_data_indexes():
    g, n = diamond()
    n["input_1"].set_attr("index", 0)
    with pytest.raises(ge.GraphBuildError, match="inputs 'input_0' and 'input_1' both have index 0"):
        g.validate()
    n["input_1"].set_attr("index", 5)
    with pytest.raises(ge.GraphBuildError, match="without gaps"):
        g.validate()


# Removing nodes ------------------------------------------------------------------------------


def test_remove_node_removes_its_edges_and_outputs():
    g, n = diamond()
    x, add, r0, r1 = n["input_0"], n["Add_0"], n["Relu_0"], n["Relu_1"]
    g.add_control_edge(add, r1)
    g.remove_node(r0)
    assert names(g.get_direct_nodes()) == ["input_0", "input_1", "Add_0", "Relu_1"]
    assert [(m.name, p) for m, p in add.get_out_data_nodes_and_port_indexes(0)] == [("Relu_1", 0)]
    assert [(m.name, p) for m, p in g.get_outputs()] == [("Relu_1", 0)]
    g.remove_node(add)
    assert x.get_out_data_nodes_and_port_indexes(0) == []
    assert r1.get_in_control_nodes() == []
    with pytest.raises(RuntimeError, match="input 'x' is not connected"):
        r1.get_in_data_nodes_and_port_indexes(0)
    with pytest.raises(RuntimeError, match="Failed to find Node name Add_0"):
        g.find_node_by_name("Add_0")


def test_node_view_after_removal_is_an_error():
    g, n = diamond()
    add = n["Add_0"]
    g.remove_node(add)
    for use in (lambda: add.name, lambda: add.type, lambda: add.get_attr("x"), lambda: add.set_attr("x", 1),
                lambda: add.get_inputs_size(), lambda: add.get_output_desc(0), lambda: add.get_in_control_nodes(),
                lambda: add.set_output_attr("_a", 0, 1), lambda: add.get_ir_attrs()):
        with pytest.raises(RuntimeError, match="the node has been removed from its graph"):
            use()
    assert repr(add) == "Node(<removed>)"
    with pytest.raises(RuntimeError, match="Failed to remove Node <removed> from Graph diamond"):
        g.remove_node(add)
    with pytest.raises(RuntimeError, match="Failed to add Control from Node <removed> to Node Relu_0"):
        g.add_control_edge(add, n["Relu_0"])
    # Names can be reused without confusion: other views are unaffected.
    assert n["Relu_0"].name == "Relu_0"


# Subgraphs -----------------------------------------------------------------------------------


def test_subgraph_navigation():
    g = if_graph()
    assert names(g.get_all_subgraphs()) == ["then", "else"]
    then = g.get_subgraph("then")
    assert then.name == "then" and g.get_subgraph("then_branch") is None  # by graph name
    if_node = g.find_node_by_name("If_0")
    assert then.get_parent_node() == if_node
    assert then.get_parent_graph().name == "main"
    assert g.get_parent_graph() is None and g.get_parent_node() is None
    assert if_node.get_subgraph_names() == ["then_branch", "else_branch"]
    assert if_node.get_subgraph("else_branch").name == "else"  # by slot name
    with pytest.raises(RuntimeError, match="node 'If_0' has no subgraph 'else'"):
        if_node.get_subgraph("else")
    assert g.find_node_by_name("Relu_0").get_subgraph_names() == []
    assert then.get_all_subgraphs() == []
    assert "parent_node: \"If_0\"" in then.dump_to_stream(DumpFormat.kTxt)


def test_subgraph_views_change_the_parent():
    g = if_graph()
    then = g.get_subgraph("then")
    then.set_attr("tag", 1)
    then.find_node_by_name("Relu_0").set_attr("_p", "x")
    assert g.get_subgraph("then").get_attr("tag") == 1
    txt = g.dump_to_stream(DumpFormat.kTxt)
    assert 'private_attr { key: "_p" value: "x" }' in txt


def test_nested_subgraphs_via_add_subgraph():
    g = if_graph()
    then = g.get_subgraph("then")
    inner = branch("inner", Relu)
    then.add_subgraph(inner, then.find_node_by_name("Relu_0"))
    assert inner.is_moved
    assert names(g.get_all_subgraphs()) == ["then", "inner", "else"]
    deep = g.get_subgraph("inner")
    assert deep.get_parent_graph().name == "then"
    assert deep.get_parent_graph().get_parent_graph().name == "main"
    assert deep.get_parent_node().get_owner_graph().name == "then"
    assert len(g.get_all_nodes()) == 9 + 2
    assert names(then.get_all_subgraphs()) == ["inner"]
    g.validate()


def test_add_subgraph_names_and_errors():
    g, n = diamond()
    relu = n["Relu_0"]
    s1 = branch("s1", Relu)
    g.add_subgraph(s1, relu)
    g.add_subgraph(branch("s2", Relu), relu, name="body")
    g.add_subgraph(branch("s3", Relu), parent_node=relu, name=None)
    assert relu.get_subgraph_names() == ["s1", "body", "s3"]
    assert relu.get_subgraph("body").name == "s2"
    assert g.get_subgraph("s2").get_parent_node() == relu
    # The graph object moved: readable, not changeable, not movable again.
    assert s1.is_moved and s1.name == "s1" and names(s1.get_direct_nodes()) == ["input_0", "Relu_0"]
    with pytest.raises(RuntimeError, match="belongs to node 'Relu_0'; it can be read but not changed"):
        s1.set_attr("a", 1)
    with pytest.raises(RuntimeError, match="a graph can be passed as a subgraph only once"):
        g.add_subgraph(s1, n["Relu_1"])
    with pytest.raises(ValueError, match="node 'Relu_0' already has a subgraph 'body'"):
        g.add_subgraph(branch("s4", Relu), relu, name="body")
    with pytest.raises(TypeError, match="parent_node must be a Node"):
        g.add_subgraph(branch("s5", Relu), "Relu_0")
    with pytest.raises(TypeError):
        g.add_subgraph("not a graph", relu)
    other, m = diamond()
    with pytest.raises(ValueError, match="parent_node belongs to another graph"):
        g.add_subgraph(branch("s6", Relu), m["Relu_0"])
    with pytest.raises(ValueError, match="subgraph"):
        other.add_subgraph(g.get_subgraph("s1"), m["Relu_0"])
    # A failed call moves nothing.
    s7 = branch("s7", Relu)
    with pytest.raises(ValueError):
        g.add_subgraph(s7, relu, name="body")
    assert not s7.is_moved
    assert relu.get_subgraph_names() == ["s1", "body", "s3"]


def test_a_graph_cannot_be_its_own_subgraph():
    g, n = diamond()
    with pytest.raises(ValueError, match="cannot be added as a subgraph of itself"):
        g.add_subgraph(g, n["Relu_0"])
    assert not g.is_moved
    g.set_attr("still", "writable")
    main = if_graph()
    then = main.get_subgraph("then")
    with pytest.raises(ValueError, match="cannot be added as a subgraph of itself"):
        then.add_subgraph(main, then.find_node_by_name("Relu_0"))
    assert names(main.get_all_subgraphs()) == ["then", "else"]


def test_remove_subgraph():
    g = if_graph()
    if_node = g.find_node_by_name("If_0")
    then = g.get_subgraph("then")
    then_relu = then.find_node_by_name("Relu_0")
    g.remove_subgraph("then")
    assert if_node.get_subgraph_names() == ["else_branch"]
    assert names(g.get_all_subgraphs()) == ["else"]
    assert g.get_subgraph("then") is None
    with pytest.raises(RuntimeError, match="subgraph 'then_branch' has been removed"):
        then.name
    with pytest.raises(RuntimeError, match="subgraph 'then_branch' has been removed"):
        then_relu.name
    with pytest.raises(RuntimeError, match="Failed to remove subgraph 'then' from graph 'main': no such subgraph"):
        g.remove_subgraph("then")
    assert "then" not in g.dump_to_stream(DumpFormat.kTxt)


def test_remove_nested_subgraph_from_the_root():
    g = if_graph()
    then = g.get_subgraph("then")
    then.add_subgraph(branch("inner", Relu), then.find_node_by_name("Relu_0"))
    g.remove_subgraph("inner")
    assert names(g.get_all_subgraphs()) == ["then", "else"]


def test_removing_the_parent_node_invalidates_subgraph_views():
    g = if_graph()
    then = g.get_subgraph("then")
    g.remove_node(g.find_node_by_name("If_0"))
    with pytest.raises(RuntimeError, match="the parent node of this subgraph has been removed"):
        then.get_direct_nodes()
    assert g.get_all_subgraphs() == []


# Dumps ---------------------------------------------------------------------------------------


def test_dump_to_stream_formats():
    g = if_graph()
    g.find_node_by_name("Relu_0").set_attr("_mark", 1)
    readable = g.dump_to_stream(DumpFormat.kReadable)
    assert readable == g.dump_to_stream() == str(g)
    assert readable.startswith("graph main(%input_0: DT_BOOL[] FORMAT_ND, %input_1: DT_FLOAT[2] FORMAT_ND) {")
    assert "%Relu_0 = Relu(%If_0) private{_mark=1}" in readable
    assert "subgraph then_branch:" in readable and "graph else(" in readable
    txt = g.dump_to_stream(DumpFormat.kTxt)
    for name in ("main", "then", "else", "input_0", "input_1", "If_0", "Relu_0", "Const_0", "Add_0"):
        assert f'name: "{name}"' in txt
        assert name in readable
    assert txt.count("node {") == len(g.get_all_nodes())
    assert g.dump_to_stream(DumpFormat.kOnnx).startswith("ir_version: ")  # protobuf text, as GE
    for bad in ("kTxt", 5, -1, None.__class__):
        with pytest.raises(TypeError, match=r"Format must be in \[DumpFormat.kOnnx"):
            g.dump_to_stream(bad)


def test_dump_to_file_uses_dump_graph_path(monkeypatch, tmp_path):
    # GE's directory and file names (tests/es/test_ge_surface.py checks them in full).
    g = if_graph()
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    d = str(tmp_path / f"pid_{os.getpid()}_deviceid_0")
    p1 = g.dump_to_file()
    p2 = g.dump_to_file(DumpFormat.kTxt, "after")
    assert os.path.dirname(p1) == os.path.dirname(p2) == d
    assert os.path.basename(p1).startswith("ge_readable_") and p1.endswith("_graph_0_.txt")
    assert os.path.basename(p2).startswith("ge_proto_") and p2.endswith("_graph_0_after.txt")
    assert open(p1).read() == g.dump_to_stream(DumpFormat.kReadable)
    assert open(p2).read() == g.dump_to_stream(DumpFormat.kTxt)
    p3 = g.dump_to_file(DumpFormat.kOnnx)  # the ONNX dump (GE op types kept), for Netron
    assert os.path.basename(p3).startswith("ge_onnx_") and p3.endswith("_graph_0_.pbtxt")
    with pytest.raises(TypeError, match="Suffix must be a string"):
        g.dump_to_file(DumpFormat.kTxt, 3)
    assert sorted(os.listdir(d)) == sorted(os.path.basename(p) for p in (p1, p2, p3))


def test_dump_to_file_names_stay_in_the_dump_dir(monkeypatch, tmp_path):
    b = GraphBuilder("a/b c")
    g = b.build_and_reset([b.create_input(0)])
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    p = g.dump_to_file(suffix="x/../../escaped")
    assert os.path.dirname(p) == str(tmp_path / f"pid_{os.getpid()}_deviceid_0")
    assert os.path.basename(p).startswith("ge_readable_") and p.endswith("_x_.._.._escaped.txt")
    assert not (tmp_path.parent / "escaped.txt").exists()
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path / "missing"))  # created, as GE does
    assert os.path.exists(g.dump_to_file()) and (tmp_path / "missing").is_dir()


def test_subgraph_view_dumps_only_the_subgraph():
    g = if_graph()
    then = g.get_subgraph("then")
    assert then.dump_to_stream().startswith("graph then(")
    assert "If_0" not in then.dump_to_stream()


# Tensor ---------------------------------------------------------------------------------------


def sample(dtype, shape=(2, 3)):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        vals = np.arange(n) % 3 == 0
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        vals = np.array([int(info.min) + (int(info.max) - int(info.min)) * k // max(n - 1, 1) for k in range(n)], dtype=dt)
    elif dt.kind == "c":
        vals = (np.arange(n) - 2.5 + 1j * np.arange(n)).astype(dt)
    else:
        vals = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, np.finfo(dt).max] * n, dtype=dt)[:n]
    return vals.reshape(shape)


@pytest.mark.parametrize("dtype", list(_NP_TO_DT), ids=str)
def test_tensor_numpy_round_trip_every_dtype(dtype):
    a = sample(dtype)
    t = Tensor(a)
    assert t.get_data_type() == _NP_TO_DT[dtype]
    assert t.get_shape() == [2, 3] and t.get_format() == Format.FORMAT_ND
    assert np.array_equal(np.array(t.get_data(), a.dtype), a, equal_nan=a.dtype.kind in "fc")
    back = t.numpy()
    assert back.dtype == a.dtype and back.shape == a.shape
    assert np.array_equal(back, a, equal_nan=a.dtype.kind in "fc")
    # The copy is independent and writable.
    back.flat[0] = back.flat[1]
    assert np.array_equal(t.numpy(), a, equal_nan=a.dtype.kind in "fc")
    # Through a node attribute and back.
    g, n = diamond()
    n["Relu_0"].set_attr("_t", t)
    got = n["Relu_0"].get_attr("_t")
    assert got == t and got.numpy().dtype == a.dtype
    # Byte-swapped and non-contiguous arrays give the same tensor.
    assert Tensor(a.astype(a.dtype.newbyteorder(">"))) == t
    assert Tensor(np.asfortranarray(a)) == t
    assert Tensor(a.T).numpy().shape == (3, 2)


@pytest.mark.parametrize("dtype", list(_NP_TO_DT), ids=str)
def test_tensor_scalar_and_empty(dtype):
    s = Tensor(sample(dtype, (1,)).reshape(()))
    assert s.get_shape() == [] and s.numpy().shape == ()
    e = Tensor(np.zeros((0, 4), dtype))
    assert e.get_shape() == [0, 4] and e.get_data() == [] and e.numpy().shape == (0, 4)


def test_tensor_construction_rules():
    assert Tensor([1, 2, 3], shape=[3]).get_data_type() == DataType.DT_FLOAT  # GE's default
    assert Tensor(np.array([1.0])).get_data_type() == DataType.DT_DOUBLE  # an array keeps its dtype
    assert Tensor([2.5]).get_shape() == []  # shape None: a scalar
    t = Tensor([1.7, -2.2], data_type=DataType.DT_INT32, shape=[2])
    assert t.get_data_type() == DataType.DT_INT32 and t.numpy().tolist() == [1, -2]
    r = Tensor(np.arange(6), shape=[3, 2])
    assert r.get_shape() == [3, 2] and r.numpy().tolist() == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match=r"data of shape \[6\] cannot take shape \[4, 2\]"):
        Tensor(np.arange(6), shape=[4, 2])
    z = Tensor(shape=[2, 2], data_type=DataType.DT_INT16)
    assert z.numpy().tolist() == [[0, 0], [0, 0]] and z.numpy().dtype == np.int16
    for bad in ([-1], [2, -1], [-2]):
        with pytest.raises(ValueError, match="a tensor needs a known shape"):
            Tensor(shape=bad)
    with pytest.raises(TypeError, match="Shape must be a list of integers"):
        Tensor(shape=[2, "3"])
    empty = Tensor()
    assert empty.get_data_type() == DataType.DT_FLOAT and empty.get_shape() == [] and empty.numpy().size == 0
    assert Tensor(np.arange(4), format=Format.FORMAT_NCHW).get_format() == Format.FORMAT_NCHW
    assert Tensor(np.arange(4)).get_tensor_desc() == TensorDesc([4], Format.FORMAT_ND, DataType.DT_INT64)
    assert repr(Tensor(np.zeros((2, 3), np.float16))) == "Tensor(DT_FLOAT16[2, 3])"
    i64 = dict(data_type=DataType.DT_INT64, shape=[2])
    assert Tensor([1, 2], **i64) == Tensor(np.array([1, 2], np.int64)) and Tensor([1, 2], **i64) != Tensor([1, 3], **i64)
    assert Tensor([1, 2], **i64) != Tensor([1, 2], data_type=DataType.DT_INT32, shape=[2])
    assert Tensor([1, 2], **i64).__eq__("x") is NotImplemented
    # Strings are DT_STRING tensors (tests/onnx/test_strings.py); other dtypes without a GE type
    # are refused.
    assert Tensor(np.array(["a"])).get_data_type() == DataType.DT_STRING
    with pytest.raises(TypeError, match="has no GE data type"):
        Tensor(np.zeros(2, "timedelta64[s]"))
    with pytest.raises(TypeError, match="has no GE data type"):
        Tensor(np.zeros(2, np.float128) if hasattr(np, "float128") else np.zeros(2, "datetime64[s]"))
    with pytest.raises(TypeError, match="DT_STRING has no numpy equivalent"):
        Tensor(np.array([1, 2]), data_type=DataType.DT_STRING)


def test_bf16_tensors_hold_bf16_bits():
    vals = np.array([1.5, 2.0, -3.0, 0.0, -0.0, np.inf, -np.inf, 1.00390625, 1.01171875, 3.0e38], np.float32)
    want = [0x3FC0, 0x4000, 0xC040, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x3F80, 0x3F82, 0x7F62]
    t = Tensor(vals, data_type=DataType.DT_BF16)
    assert t.get_data_type() == DataType.DT_BF16 and t.get_shape() == [10]
    assert t.numpy().dtype == np.uint16 and t.numpy().tolist() == want
    nan = Tensor(np.array([np.nan]), data_type=DataType.DT_BF16).numpy()[0]
    assert (nan & 0x7F80) == 0x7F80 and (nan & 0x7F) != 0
    assert Tensor(np.array(1.5), data_type=DataType.DT_BF16).get_shape() == []
    # uint16 data is taken as raw bits; ints are values.
    assert Tensor(np.array([0x3FC0], np.uint16), data_type=DataType.DT_BF16).numpy().tolist() == [0x3FC0]
    assert Tensor(np.array([1, 2]), data_type=DataType.DT_BF16).numpy().tolist() == [0x3F80, 0x4000]
    # The same bits as the builder's own conversion of a literal (for an op that keeps one
    # dtype: Add would make a DT_FLOAT constant and promote, as GE does).
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_BF16, shape=[1])
    lit = Pow(x, 1.5).get_producer().get_in_data_nodes_and_port_indexes(1)[0].get_attr("value")
    assert lit.numpy().tolist() == Tensor(np.array(1.5), data_type=DataType.DT_BF16).numpy().tolist()
    c = b.create_const(np.array([1.5, -3.0]), DataType.DT_BF16)
    assert c.get_producer().get_attr("value").numpy().tolist() == [0x3FC0, 0xC040]


# TensorDesc and Shape ------------------------------------------------------------------------


def test_tensor_desc_fields():
    d = TensorDesc()
    assert (d.get_shape(), d.get_data_type(), d.get_format()) == ([], DataType.DT_FLOAT, Format.FORMAT_ND)
    assert d.get_placement() == Placement.PLACEMENT_HOST
    d = TensorDesc([2, 3], Format.FORMAT_NHWC, DataType.DT_INT8)
    assert d.get_origin_shape() == [2, 3] and d.get_origin_format() == Format.FORMAT_NHWC
    d.set_shape([4, -1])
    assert d.get_shape() == [4, -1] and d.get_origin_shape() == [2, 3]
    d.set_data_type(DataType.DT_BF16)
    d.set_format(Format.FORMAT_NCHW)
    d.set_origin_format(Format.FORMAT_ND)
    d.set_origin_shape([-2])
    assert (d.get_data_type(), d.get_format(), d.get_origin_format(), d.get_origin_shape()) == (
        DataType.DT_BF16, Format.FORMAT_NCHW, Format.FORMAT_ND, [-2])
    d.set_attr("_a", 1)
    assert d.get_attr("_a") == 1
    with pytest.raises(RuntimeError, match="TensorDesc has no attribute '_b'"):
        d.get_attr("_b")
    assert repr(d) == "TensorDesc(shape=[4, -1], format=0, data_type=27)"
    assert TensorDesc([1]) == TensorDesc([1]) and TensorDesc([1]) != TensorDesc([2])
    assert TensorDesc([1]) != TensorDesc([1], Format.FORMAT_ND, DataType.DT_INT32) and TensorDesc([1]) != [1]
    e = TensorDesc([1])
    e.set_attr("_x", 1)
    assert e != TensorDesc([1])


def test_tensor_desc_errors():
    d = TensorDesc([2])
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        d.set_data_type(3)
    with pytest.raises(TypeError, match="Format must be a Format"):
        d.set_format(1)
    with pytest.raises(TypeError, match="Format must be a Format"):
        d.set_origin_format("ND")
    with pytest.raises(TypeError, match="shape must be a list of integers"):
        d.set_shape("23")
    with pytest.raises(TypeError, match="shape must be a list of integers"):
        TensorDesc([2, True])
    with pytest.raises(ValueError, match=r"invalid shape \[2, -3\]"):
        TensorDesc([2, -3])
    with pytest.raises(ValueError, match=r"invalid shape \[-2, 3\]"):
        d.set_origin_shape([-2, 3])
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        TensorDesc([2], data_type=99)
    assert d.get_shape() == [2]


def test_shape():
    s = Shape([2, -1, 3])
    assert s.get_dims() == [2, -1, 3] and s.get_dim_num() == 3 and s.get_dim(2) == 3
    assert s.get_shape_size() == -1 and s.is_unknown_shape() and not s.is_unknown_rank()
    assert list(s) == [2, -1, 3] and len(s) == 3 and s == [2, -1, 3] and s == Shape([2, -1, 3])
    assert s != Shape([2, 3]) and repr(s) == "[2, -1, 3]"
    u = Shape([-2])
    assert u.get_dim_num() == -1 and u.get_shape_size() == -1 and u.is_unknown_rank() and u.is_unknown_shape()
    scalar = Shape()
    assert scalar.get_dims() == [] and scalar.get_dim_num() == 0 and scalar.get_shape_size() == 0
    assert Shape([2, 3, 4]).get_shape_size() == 24 and Shape([2, 0]).get_shape_size() == 0
    assert not Shape([2, 3]).is_unknown_shape()
    with pytest.raises(ValueError, match="invalid shape"):
        Shape([-3])
    with pytest.raises(ValueError, match="invalid shape"):
        Shape([1, -2])
    with pytest.raises(TypeError, match="dims must be a list of integers"):
        Shape([1.0])
    with pytest.raises(IndexError):
        Shape([1]).get_dim(1)
    # The dims are copied in and out.
    dims = [1, 2]
    s2 = Shape(dims)
    dims.append(3)
    s2.get_dims().append(4)
    assert s2.get_dims() == [1, 2]
