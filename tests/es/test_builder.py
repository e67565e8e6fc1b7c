"""The eager-style builder: op calls, eager validation, TensorLike inputs, operators, scopes."""

import inspect

import pytest

import ge
from ge.es import GraphBuilder, TensorHolder, attr_scope, control_dependency_scope
from ge.es.all import Add, BatchMatMulV2, Cast, ConcatD, ConcatV2, IdentityN, MatMulV2, Pow, Relu, SplitD, TopKV2
from ge.graph import DataType, DumpFormat, Format


def nodes_by_type(graph, op_type):
    return [n for n in graph.get_direct_nodes() if n.type == op_type]


def test_two_input_sum_as_in_ge_docs():
    builder = GraphBuilder("graph_name")
    data0, data1 = builder.create_inputs(2)
    add = data0 + data1
    builder.set_graph_output(add, 0)
    graph = builder.build_and_reset()
    assert graph.name == "graph_name"
    assert [n.type for n in graph.get_direct_nodes()] == ["Data", "Data", "Add"]
    (out, port), = graph.get_outputs()
    assert out.name == add_name(graph) and port == 0


def add_name(graph):
    return nodes_by_type(graph, "Add")[0].name


def test_inference_and_names():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    w = b.create_input(1, shape=[3, 4])
    y = MatMulV2(x, w)
    assert y.name == "MatMulV2_0"
    assert y._desc[:2] == (int(DataType.DT_FLOAT), [2, 4])
    z = Relu(y)
    assert z.name == "Relu_0"
    g = b.build_and_reset([z])
    assert nodes_by_type(g, "Relu")[0].get_output_desc(0).get_shape() == [2, 4]


def test_dtype_mismatch_names_op_input_and_types():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    i = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    # Pow keeps one dtype for its two inputs (Add and the element-wise family promote, see
    # test_dtype_promotion.py).
    with pytest.raises(ge.GraphBuildError, match=r"Pow: input 'x2' has dtype DT_INT32, but input 'x1' has DT_FLOAT"):
        Pow(x, i)
    # A failed call adds nothing.
    g = b.build_and_reset([x])
    assert len(g.get_direct_nodes()) == 2


def test_disallowed_dtype_lists_the_allowed_ones():
    b = GraphBuilder("g")
    s = b.create_input(0, data_type=DataType.DT_STRING, shape=[2])
    with pytest.raises(ge.GraphBuildError, match=r"Relu: input 'x' has dtype DT_STRING, expected one of \[.*DT_FLOAT"):
        Relu(s)


def test_shape_error_is_shape_inference_error():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[4, 5])
    with pytest.raises(ge.ShapeInferenceError, match="Add"):
        Add(x, y)


def test_attribute_type_errors():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    with pytest.raises(TypeError, match="transpose_x1"):
        MatMulV2(x, x, transpose_x1="yes")
    with pytest.raises(TypeError, match="dst_type"):
        Cast(x, dst_type=3.5)
    with pytest.raises(TypeError):
        Cast(x)  # dst_type is a required keyword


def test_tensor_like_follows_the_other_input():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    # Ops that keep one dtype make the literal follow the other input.
    y = Pow(x, 2)
    assert y._desc[0] == int(DataType.DT_FLOAT)
    i = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    assert Pow(i, 2)._desc[0] == int(DataType.DT_INT32)
    with pytest.raises(TypeError, match="float values given where DT_INT32"):
        Pow(i, 0.5)
    # Ops that promote take the literal as GE's tensor_like makes it (int: DT_INT64, float:
    # DT_FLOAT) and GE's promotion decides: float + int64 -> float, int32 * int64 -> int64.
    assert (x + 1)._desc[0] == int(DataType.DT_FLOAT)
    assert Add(x, [1, 2, 3])._desc[:2] == (int(DataType.DT_FLOAT), [3])
    assert (i * 2)._desc[0] == int(DataType.DT_INT64)
    assert (i + 0.5)._desc[0] == int(DataType.DT_FLOAT)
    h = b.create_input(2, data_type=DataType.DT_FLOAT16, shape=[2])
    assert (h * 2.0)._desc[0] == int(DataType.DT_FLOAT)


def test_tensor_like_without_a_tensor_uses_ge_default_dtypes():
    b = GraphBuilder("g")
    t = ConcatV2([[1, 2], [3, 4]], b.create_scalar_int32(0))  # x has no tensor of its type to follow
    assert t._desc[0] == int(DataType.DT_INT64)
    with pytest.raises(ValueError, match="owner_builder"):
        ConcatD([[1.0], [2.0]], concat_dim=0)


def test_irregular_nested_list_is_an_error():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    with pytest.raises(ValueError, match="irregular"):
        Add(x, [[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="must be a TensorHolder"):
        Add(x, "a string")


def test_operators_and_reflected_forms():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    exprs = [x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, -x, x @ x]
    types = [e.get_producer().type for e in exprs]
    assert types == ["Add", "Add", "Sub", "Sub", "Mul", "Mul", "Div", "Div", "Neg", "MatMulV2"]
    b3 = b.create_input(1, shape=[4, 2, 2])
    assert (b3 @ b3).get_producer().type == "BatchMatMulV2"
    # The reflected form puts the constant first.
    r = (1 - x).get_producer()
    assert r.get_in_data_nodes_and_port_indexes(1)[0].type == "Data"
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_method_forms_match_ge():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    assert [t.get_producer().type for t in (x.add(x), x.sub(x), x.mul(x), x.div(x))] == ["Add", "Sub", "Mul", "Div"]


def test_multi_and_dynamic_outputs():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 6])
    parts = SplitD(x, 3, split_dim=1, num_split=3)
    assert isinstance(parts, list) and len(parts) == 3
    assert [p._desc[1] for p in parts] == [[4, 2]] * 3
    ids = IdentityN([x, parts[0]], 2)
    assert len(ids) == 2
    top = TopKV2(x, 2)
    assert isinstance(top.values, TensorHolder) and isinstance(top.indices, TensorHolder)
    assert top.indices._desc[0] == int(DataType.DT_INT32)


def test_derived_attribute_is_filled():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = ConcatD([x, x, x], concat_dim=0)
    node = y.get_producer()
    assert node.get_attr("N") == 3
    assert y._desc[1] == [6, 3]
    assert inspect.signature(ConcatD).parameters["N"].default == 1  # GE's keyword; its default means len(x)


def test_setters_change_description():
    b = GraphBuilder("g")
    x = b.create_input(0)
    assert x.set_data_type(DataType.DT_FLOAT16) is x
    x.set_format(Format.FORMAT_NCHW).set_shape([1, 3, 8, 8])
    d = x.get_producer().get_output_desc(0)
    assert (d.get_data_type(), d.get_format(), d.get_shape()) == (DataType.DT_FLOAT16, Format.FORMAT_NCHW, [1, 3, 8, 8])
    with pytest.raises(TypeError):
        x.set_data_type("float")
    with pytest.raises(TypeError):
        x.set_shape((1, 2))
    with pytest.raises(ValueError):
        x.set_shape([1, -3])


def test_create_input_rules():
    b = GraphBuilder("g")
    b.create_input(0, name="a", shape=[-1, 3])
    with pytest.raises(ValueError, match="already has input 0"):
        b.create_input(0)
    with pytest.raises(TypeError):
        b.create_input("0")
    with pytest.raises(TypeError):
        b.create_inputs(0)
    with pytest.raises(ge.GraphBuildError, match="already has a node named 'a'"):
        b.create_input(1, name="a")
    b.create_input(2)
    with pytest.raises(ge.GraphBuildError, match="without gaps"):
        b.build_and_reset()


def test_constants():
    b = GraphBuilder("g")
    assert b.create_const_int64([1, 2, 3, 4], [2, 2])._desc[:2] == (int(DataType.DT_INT64), [2, 2])
    assert b.create_const_int32(5)._desc[:2] == (int(DataType.DT_INT32), [])
    assert b.create_const_uint32([1])._desc[0] == int(DataType.DT_UINT32)
    assert b.create_const_uint64([1, 2])._desc[0] == int(DataType.DT_UINT64)
    assert b.create_const_float([1.5, 2])._desc[:2] == (int(DataType.DT_FLOAT), [2])
    assert b.create_scalar_float(1.0)._desc[1] == []
    assert b.create_vector_int64([7, 8])._desc[1] == [2]
    with pytest.raises(ValueError, match="doesn't match shape"):
        b.create_const_int64([1, 2, 3], [2, 2])
    with pytest.raises(TypeError):
        b.create_const_int64([1.5])
    with pytest.raises(ValueError, match=r"Value must be in range \[0, 2\^32-1\] for uint32"):
        b.create_scalar_uint32(-1)
    with pytest.raises(ValueError, match="Value must be non-negative for uint64"):
        b.create_scalar_uint64(-1)
    with pytest.raises(TypeError, match="^Value must be an integer or list of integers$"):
        b.create_const_int32("1")
    with pytest.raises(TypeError, match="^Value must be a float or list of floats$"):
        b.create_const_float(["x"])
    v = b.create_variable(0, "weights")
    assert v.name == "weights"
    c = b.create_scalar_int64(3)
    node = c.get_producer()
    assert node.type == "Const" and node.get_attr("value").numpy().tolist() == 3


def test_graph_outputs_any_order_but_complete():
    b = GraphBuilder("g")
    x, y = b.create_inputs(2)
    b.set_graph_output(y, 1)
    with pytest.raises(ge.GraphBuildError, match="output 0 is not set"):
        b.build_and_reset()
    b.set_graph_output(x, 0)
    g = b.build_and_reset()
    assert [n.name for n, _ in g.get_outputs()] == ["input_0", "input_1"]


def test_graph_node_and_tensor_attributes():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = Relu(x)
    b.set_graph_attr_int64("seed", 7)
    b.set_graph_attr_string("owner", "me")
    b.set_graph_attr_bool("training", False)
    b.set_node_attr_string(y, "_tag", "hot")
    b.set_node_attr_int64(y, "_level", 2)
    b.set_node_attr_bool(y, "_keep", True)
    b.set_tensor_attr_int64(y, "_mem", 64)
    b.set_tensor_attr_string(y, "_name", "out")
    b.set_tensor_attr_bool(y, "_pinned", True)
    b.set_attr("ratio", 0.5)
    b.set_attr("_dims", [1, 2], tensor=y)
    with pytest.raises(TypeError):
        b.set_graph_attr_int64("seed", "7")
    with pytest.raises(TypeError):
        b.set_node_attr_bool(y, "_keep", 1)
    g = b.build_and_reset([y])
    assert (g.get_attr("seed"), g.get_attr("owner"), g.get_attr("training"), g.get_attr("ratio")) == (7, "me", False, 0.5)
    n = g.find_node_by_name(y_name := "Relu_0")
    assert n is not None and n.name == y_name
    assert n.get_private_attrs() == {"_tag": "hot", "_level": 2, "_keep": True, "_dims": [1, 2]}
    assert n.get_output_attr("_mem", 0) == 64 and n.get_output_attr("_pinned", 0) is True


def test_attr_scope_nests_and_restores():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with attr_scope({"_stage": "a"}):
        y = Relu(x)
        with attr_scope({"_inner": 1, "_stage": "b"}):
            z = Relu(y)
        w = Relu(z)
    v = Relu(w)
    assert y.get_producer().get_private_attrs() == {"_stage": "a"}
    assert z.get_producer().get_private_attrs() == {"_stage": "b", "_inner": 1}
    assert w.get_producer().get_private_attrs() == {"_stage": "a"}
    assert v.get_producer().get_private_attrs() == {}


def test_scope_restored_after_exception():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(KeyError):
        with attr_scope({"_a": 1}):
            raise KeyError("boom")
    assert Relu(x).get_producer().get_private_attrs() == {}


def test_control_dependencies():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a = Relu(x)
    c = Relu(x)
    with control_dependency_scope([a]):
        d = Relu(x)
        with control_dependency_scope([c]):
            e = Relu(x)
    assert [n.name for n in d.get_producer().get_in_control_nodes()] == [a.name]
    assert sorted(n.name for n in e.get_producer().get_in_control_nodes()) == sorted([a.name, c.name])
    f = Relu(x)
    a_name = a.name
    b.add_control_dependency(f, [d, e])
    assert len(f.get_producer().get_in_control_nodes()) == 2
    with pytest.raises(TypeError):
        b.add_control_dependency(f, d)
    g = b.build_and_reset([f])
    txt = g.dump_to_stream(DumpFormat.kReadable)
    assert f"^{a_name}" in txt


def test_builder_repr_and_name_type():
    assert GraphBuilder().name == "graph"
    with pytest.raises(TypeError, match="name must be a string"):
        GraphBuilder(3)
    with pytest.raises(RuntimeError, match="created directly"):
        TensorHolder()


def test_control_scope_of_another_builder_fails_cleanly():
    other = GraphBuilder("other")
    foreign = other.create_input(0, shape=[2])
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with control_dependency_scope([foreign]):
        with pytest.raises(ValueError, match="builder 'other'"):
            Add(x, 1.0)
    g = b.build_and_reset([x])
    assert [n.name for n in g.get_direct_nodes()] == ["input_0"]  # neither the Add nor its constant stayed
