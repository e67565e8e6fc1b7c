"""GE's behaviour in the corners its own unit tests reach: the one-argument
``Graph.add_subgraph``, ``find_node_by_name`` and the subgraph lookups' errors, the edge methods'
messages, attribute values no type takes, ``can_fuse``'s reasons, and GE's helper functions
(``unflatten_tensor_data``, ``convert_to_tensor_holder``, ``resolve_builder``,
``ensure_pattern``, ``ge.passes.base.infer_shape``)."""

import pytest
from ge.es import GraphBuilder
from ge.es.all import Relu
from ge.es.graph_builder import attr_scope
from ge.graph import DataType, Graph, Tensor
from graph_samples import branch as _branch
from graph_samples import if_graph


def branch(name):
    return _branch(name, Relu)


def chain(name="chain"):
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[2])
    r = Relu(x)
    g = b.build_and_reset([Relu(r)])
    return g, {n.name: n for n in g.get_direct_nodes()}


def names(graphs):
    return [g.name for g in graphs]


# Graph.add_subgraph(subgraph): GE's form ------------------------------------------------------


def test_add_subgraph_one_argument_lists_finds_and_removes_by_name():
    host = Graph("host")
    assert host.add_subgraph(branch("s1")) is None
    host.add_subgraph(branch("s2"))
    assert names(host.get_all_subgraphs()) == ["s1", "s2"]
    assert host.get_subgraph("s2").name == "s2"
    assert host.get_subgraph("nope") is None
    host.remove_subgraph("s1")
    assert names(host.get_all_subgraphs()) == ["s2"]
    host.remove_subgraph("s2")
    assert host.get_all_subgraphs() == []


def test_add_subgraph_one_argument_takes_a_subgraph_of_another_graph_and_shares_it():
    main = if_graph()
    host = Graph("host")
    host.add_subgraph(main.get_subgraph("then"))
    host.add_subgraph(main.get_subgraph("else"))
    assert names(host.get_all_subgraphs()) == ["then", "else"]
    # Shared, not copied: a change through the owner shows through the host.
    main.get_subgraph("then").set_attr("_mark", 7)
    assert host.get_subgraph("then").get_attr("_mark") == 7
    # A root graph added this way stays the caller's graph.
    s = branch("s")
    host.add_subgraph(s)
    s.set_attr("_k", "v")
    assert host.get_subgraph("s").get_attr("_k") == "v"


def test_add_subgraph_one_argument_keeps_the_node_attached_subgraphs_first():
    main = if_graph()
    main.add_subgraph(branch("free"))
    assert names(main.get_all_subgraphs()) == ["then", "else", "free"]
    # No node refers to it, so it does not change what runs.
    assert main.find_node_by_name("If_0").get_subgraph_names() == ["then_branch", "else_branch"]


def test_add_subgraph_duplicate_name_is_ges_runtime_error():
    host = Graph("host")
    s = branch("dup")
    host.add_subgraph(s)
    with pytest.raises(RuntimeError, match="Failed to add subgraph 'dup' to graph 'host'"):
        host.add_subgraph(s)
    with pytest.raises(RuntimeError, match="Failed to add subgraph 'then' to graph 'main'"):
        main = if_graph()
        main.add_subgraph(branch("then"))
    assert names(host.get_all_subgraphs()) == ["dup"]


def test_add_subgraph_errors():
    host = Graph("host")
    with pytest.raises(TypeError, match="subgraph must be a Graph"):
        host.add_subgraph("not_a_graph")
    with pytest.raises(RuntimeError, match="Failed to add subgraph 'host' to graph 'host'"):
        host.add_subgraph(host)
    other = Graph("other")
    other.add_subgraph(host)
    with pytest.raises(RuntimeError, match="'other' holds 'host' as a subgraph"):
        host.add_subgraph(other)
    with pytest.raises(TypeError, match="name is given with parent_node only"):
        host.add_subgraph(branch("x"), name="y")
    main = if_graph()
    with pytest.raises(RuntimeError, match="not supported: add_subgraph\\(subgraph\\) on subgraph 'then'"):
        main.get_subgraph("then").add_subgraph(branch("x"))


def test_a_removed_shared_subgraph_drops_out_of_the_list():
    main = if_graph()
    host = Graph("host")
    host.add_subgraph(main.get_subgraph("then"))
    main.remove_subgraph("then")
    assert host.get_all_subgraphs() == []
    with pytest.raises(RuntimeError, match="Failed to remove subgraph 'then' from graph 'host'"):
        host.remove_subgraph("then")


# Lookups and edges: GE's errors ----------------------------------------------------------------


def test_find_node_by_name_missing_is_ges_runtime_error():
    g, _ = chain()
    assert g.find_node_by_name("Relu_0").type == "Relu"
    with pytest.raises(RuntimeError, match="Failed to find Node name nope"):
        g.find_node_by_name("nope")


@pytest.mark.parametrize("call", [
    lambda g: g.find_node_by_name(1),
    lambda g: g.get_subgraph(123),
    lambda g: g.remove_subgraph(123),
])
def test_name_arguments_must_be_strings(call):
    g, _ = chain()
    with pytest.raises(TypeError, match="name must be a string"):
        call(g)


def test_edge_and_node_failures_have_ges_messages():
    g, n = chain()
    with pytest.raises(RuntimeError, match="Failed to add DataEdge from Node Relu_0, Port Index 0 to Node Relu_1, "
                                           "Port Index 5"):
        g.add_data_edge(n["Relu_0"], 0, n["Relu_1"], 5)  # Relu has one input
    with pytest.raises(RuntimeError, match="Failed to add DataEdge from Node Relu_0, Port Index -1 to Node Relu_1, "
                                           "Port Index 0"):
        g.add_data_edge(n["Relu_0"], -1, n["Relu_1"], 0)
    with pytest.raises(RuntimeError, match="Failed to remove Edge from Node input_0, Port Index 0 to Node Relu_1, "
                                           "Port Index 0"):
        g.remove_edge(n["input_0"], 0, n["Relu_1"], 0)  # no such edge
    relu = n["Relu_1"]
    g.remove_node(relu)
    with pytest.raises(RuntimeError, match="Failed to remove Node <removed> from Graph chain"):
        g.remove_node(relu)
    with pytest.raises(RuntimeError, match="Failed to add Control from Node <removed> to Node Relu_0"):
        g.add_control_edge(relu, n["Relu_0"])


# Attribute values ---------------------------------------------------------------------------


def test_a_list_of_mixed_items_is_ges_value_error():
    b = GraphBuilder("g")
    with pytest.raises(ValueError, match=r"Unsupported attribute type: <class 'list'> for value: \[1, 'hello', True, 3.14\]"):
        with attr_scope({"mixed_list": [1, "hello", True, 3.14]}):
            b.create_const_float(1.0)
    g, _ = chain()
    with pytest.raises(ValueError, match="Unsupported attribute type: <class 'list'>"):
        g.set_attr("mixed", ["a", 1])


# can_fuse's reasons ---------------------------------------------------------------------------


def test_can_fuse_reasons():
    from ge.passes import FuseCheckResult, can_fuse

    assert can_fuse([]) == FuseCheckResult(ok=False, reason="the node set is empty")
    _, n1 = chain("g1")
    _, n2 = chain("g2")
    assert can_fuse([n1["Relu_0"], n2["Relu_0"]]) == FuseCheckResult(False, "the nodes belong to different graphs")
    assert can_fuse([n1["Relu_0"], n1["Relu_1"]]).ok
    n1["Relu_0"].set_attr("_user_stream_label", "stream_a")
    n1["Relu_1"].set_attr("_user_stream_label", "stream_b")
    result = can_fuse(n for n in (n1["Relu_0"], n1["Relu_1"]))
    assert not result.ok and "'stream_a', 'stream_b'" in result.reason
    n1["Relu_1"].set_attr("_user_stream_label", "stream_a")
    assert can_fuse([n1["Relu_0"], n1["Relu_1"]]).ok


# GE's helper functions ------------------------------------------------------------------------


def test_unflatten_tensor_data():
    from ge.graph.tensor import _parse_str_list, unflatten_tensor_data

    assert unflatten_tensor_data("[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]", [3, 2, 1]) == [[[1.0], [2.0]], [[3.0], [4.0]],
                                                                               [[5.0], [6.0]]]
    assert unflatten_tensor_data("[1, 2, 3, 4]", [2, 2]) == [[1, 2], [3, 4]]
    assert unflatten_tensor_data("[7]", []) == 7
    assert unflatten_tensor_data("[]", [2, 0]) == [[], []]
    with pytest.raises(ValueError, match="Scalar tensor should contain exactly one element, got 2"):
        unflatten_tensor_data("[1, 2]", [])
    with pytest.raises(ValueError, match="Length of list 3 does not match shape 4"):
        unflatten_tensor_data("[1, 2, 3]", [2, 2])
    with pytest.raises(ValueError, match="Input must start with '\\[' and end with '\\]'"):
        unflatten_tensor_data("1, 2", [2])
    with pytest.raises(ValueError, match="Invalid item: '2;23'"):
        _parse_str_list("[1, 2;23 , 3.3]")
    assert _parse_str_list(" [1, -2, 3.5, -4.25] ") == [1, -2, 3.5, -4.25]
    assert [type(v) for v in _parse_str_list("[1, 2.0]")] == [int, float]
    # It reads what Tensor.get_data gives back.
    t = Tensor([1, 2, 3, 4, 5, 6], None, DataType.DT_INT32, shape=[2, 3])
    assert unflatten_tensor_data(str([v for row in t.get_data() for v in row]), [2, 3]) == t.get_data()


def test_convert_to_tensor_holder():
    from ge.es.tensor_like import convert_to_tensor_holder

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    assert convert_to_tensor_holder(None, b) is None
    assert convert_to_tensor_holder(x, b) is x
    i = convert_to_tensor_holder(3, b)
    f = convert_to_tensor_holder(2.5, b)
    ints = convert_to_tensor_holder([[1, 2], [3, 4]], b)
    floats = convert_to_tensor_holder([1, 2.0], b)
    empty = convert_to_tensor_holder([], b)
    descs = [t._desc[:2] for t in (i, f, ints, floats, empty)]
    assert descs == [(DataType.DT_INT64, []), (DataType.DT_FLOAT, []), (DataType.DT_INT64, [2, 2]),
                     (DataType.DT_FLOAT, [2]), (DataType.DT_INT64, [0])]
    assert all(t.get_owner_builder() is b for t in (i, f, ints, floats, empty))
    with pytest.raises(TypeError, match="Value must be TensorHolder or int|float or nested lists"):
        convert_to_tensor_holder("1", b)
    with pytest.raises(TypeError, match="Value must be int|float or nested lists of int|float"):
        convert_to_tensor_holder([1, "2"], b)
    with pytest.raises(ValueError, match="Irregular nested list"):
        convert_to_tensor_holder([[1, 2], [3]], b)


def test_resolve_builder():
    from ge.es.tensor_like import resolve_builder

    b = GraphBuilder("g")
    other = GraphBuilder("other")
    x = b.create_input(0, shape=[2])
    assert resolve_builder(1, x) is b
    assert resolve_builder(2.0, other, x) is other
    with pytest.raises(ValueError, match="At least one argument is required to resolve GraphBuilder"):
        resolve_builder()
    with pytest.raises(ValueError, match="Please ensure at least one input tensor or an explicit owner_builder"):
        resolve_builder(1, [2.0])


def test_ensure_pattern_and_base_infer_shape():
    import ge.passes
    from ge.passes.base import infer_shape
    from ge.passes.pattern import Pattern, create_pattern, ensure_pattern

    assert infer_shape is ge.passes.infer_shape
    p = ensure_pattern(branch("p"))
    assert isinstance(p, Pattern)
    q = create_pattern(branch("q"))
    assert ensure_pattern(q) is q
    with pytest.raises(TypeError, match="PatternFusionPass.patterns must return Pattern or Graph objects"):
        ensure_pattern("p")


def test_base_infer_shape_errors():
    from ge.passes.base import infer_shape

    _, n = chain()
    with pytest.raises(TypeError, match="replacement must be a ge.graph.Graph"):
        infer_shape(object(), n["Relu_0"])
    with pytest.raises(TypeError, match="source must be MatchResult, Node, or SubgraphBoundary"):
        infer_shape(branch("r"), object())
    with pytest.raises(RuntimeError, match="replacement graph is empty"):
        infer_shape(Graph("empty"), n["Relu_0"])


# Node and TensorHolder argument errors ---------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda n: n.get_input_attr(123, 0),
    lambda n: n.set_input_attr(123, 0, "v"),
    lambda n: n.get_output_attr(123, 0),
    lambda n: n.set_output_attr(123, 0, "v"),
])
def test_node_io_attribute_names_must_be_strings(call):
    _, n = chain()
    with pytest.raises(TypeError, match="Attribute name must be a string"):
        call(n["Relu_0"])


def test_tensor_holder_set_shape_dimension_errors():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError, match="Shape must be a list of integers"):
        x.set_shape("invalid")
    with pytest.raises(TypeError, match="All shape dimensions must be integers"):
        x.set_shape([1, "invalid", 3])
    with pytest.raises(TypeError, match="All shape dimensions must be integers"):
        x.set_shape([1, True])
    assert list(x.set_shape([3, 4])._desc[1]) == [3, 4]


@pytest.mark.parametrize("op, word", [
    (lambda a, b: a + b, "add"), (lambda a, b: a - b, "sub"), (lambda a, b: a * b, "mul"),
    (lambda a, b: a / b, "div"), (lambda a, b: a.add(b), "add"),
])
def test_operators_on_tensors_of_two_builders_are_ges_value_error(op, word):
    t1 = GraphBuilder("test_graph1").create_const_float(1.0)
    t2 = GraphBuilder("test_graph2").create_const_float(2.0)
    with pytest.raises(ValueError, match=f"Cannot perform {word}: tensors from different GraphBuilders "
                                         "\\('test_graph1' vs 'test_graph2'\\)"):
        op(t1, t2)


def test_tensor_name_reads_after_the_build():
    b = GraphBuilder("g")
    c = b.create_const_float(1.0)
    r = Relu(c)
    g = b.build_and_reset([r])
    assert (c.name, r.name) == ("Const_0", "Relu_0")
    assert [n.name for n in g.get_direct_nodes()] == ["Const_0", "Relu_0"]
    with pytest.raises(RuntimeError, match="Cannot set data type: GraphBuilder 'g' has already been built"):
        c.set_data_type(DataType.DT_FLOAT)


def test_tensor_without_arguments_is_ges_empty_tensor():
    t = Tensor()
    assert (t.get_shape(), t.get_data_type(), t.get_tensor_desc().get_shape()) == ([], DataType.DT_FLOAT, [])
    with pytest.raises(ValueError, match="Scalar tensor should contain exactly one element, got 0"):
        t.get_data()
    assert t.set_data_type(DataType.DT_INT64).get_data_type() == DataType.DT_INT64 and t.get_shape() == []
    assert Tensor() == Tensor() and Tensor() != Tensor(shape=[0])
    assert Tensor(shape=[0]).get_shape() == [0] and Tensor(shape=[0]).get_data() == []
