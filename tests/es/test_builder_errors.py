"""The GeError tree and one test per documented error of the builder layer."""

import pytest

import ge
from ge import errors
from ge.es import GraphBuilder
from ge.es.all import Add, ConcatD, If, MatMulV2, Relu, SplitD
from ge.graph import DataType, DumpFormat, Graph


def test_tree():
    for cls in (errors.GraphBuildError, errors.ShapeInferenceError, errors.CompatibilityError, errors.PassError,
                errors.TranslationError, errors.ExecutionError, errors.DeviceError):
        assert issubclass(cls, ge.GeError) and cls is getattr(ge, cls.__name__)
    assert issubclass(ge.GeError, Exception)
    assert not issubclass(ge.GraphBuildError, ge.ShapeInferenceError)


def test_unknown_operator_is_a_graph_build_error():
    from ge._native import _call_op

    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(ge.GraphBuildError, match="unknown operator 'NoSuchOp'"):
        _call_op("NoSuchOp", (x,))


def test_wrong_input_count_is_a_type_error():
    from ge._native import _call_op

    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError, match=r"Add\(\) takes 2 inputs \(x1, x2\), got 3"):
        _call_op("Add", (x, x, x))


def test_required_input_none():
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError, match="input 'x2' is required, got None"):
        Add(x, None)


def test_dynamic_input_needs_a_list():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError, match="dynamic and takes a list"):
        ConcatD(x, concat_dim=0)


def test_dynamic_output_count_must_be_valid():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    with pytest.raises(ValueError, match="num_split"):
        SplitD(x, 1, split_dim=0, num_split=-1)


def test_subgraph_must_be_a_graph():
    b = GraphBuilder("g")
    c = b.create_input(0, data_type=DataType.DT_BOOL)
    with pytest.raises(TypeError, match="then_branch' must be a Graph"):
        If(c, [c], output_num=1, then_branch=1, else_branch=Graph("e"))


def test_a_view_of_a_whole_graph_moves_that_graph():
    sb = GraphBuilder("sub")
    y = Relu(sb.create_input(0, shape=[2]))
    sub = sb.build_and_reset([y])
    node = sub.get_direct_nodes()[1]
    view = node.get_owner_graph()
    b = GraphBuilder("g")
    c = b.create_input(0, data_type=DataType.DT_BOOL)
    If(c, [c], output_num=1, then_branch=view, else_branch=Graph("e"))  # a whole graph view is fine
    with pytest.raises(RuntimeError, match="only once"):
        If(c, [c], output_num=1, then_branch=sub, else_branch=Graph("e2"))


def test_error_messages_name_expected_and_actual():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    w = b.create_input(1, shape=[4, 5])
    with pytest.raises(ge.ShapeInferenceError) as e:
        MatMulV2(x, w)
    msg = str(e.value)
    assert "MatMulV2" in msg and "[2, 3]" in msg and "[4, 5]" in msg


def test_load_errors():
    with pytest.raises(ge.GeError, match="cannot read"):
        Graph.load("/nonexistent/graph.ge")
    with pytest.raises(ge.GeError, match="bad magic"):
        Graph.from_bytes(b"not a graph at all")


def test_dump_onnx_is_protobuf_text_and_a_bad_format_an_error():
    g = Graph("g")
    assert g.dump_to_stream(DumpFormat.kOnnx).startswith("ir_version: ")
    with pytest.raises(TypeError):
        g.dump_to_stream("readable")


def test_no_panic_reaches_python():
    # Bad values at every entry point are exceptions of the tree or built-ins, never PanicException.
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    bad_calls = [
        lambda: b.create_input(-1),
        lambda: b.create_input(1, shape=[-5]),
        lambda: b.create_input(1, data_type=9999),
        lambda: b.set_graph_output(x, -1),
        lambda: b.set_graph_output(x, 10**12),
        lambda: SplitD(x, 10**9, split_dim=0, num_split=10**9),
        lambda: Add(x, [[1.0], [2.0, 3.0]]),
        lambda: Add(x, 2**70),
        lambda: Graph.from_bytes(b"GERSGRPH\x01\x00\x00\x00\xff\xff"),
    ]
    for call in bad_calls:
        with pytest.raises((ge.GeError, ValueError, TypeError, RuntimeError)) as e:
            call()
        assert "Panic" not in type(e.value).__name__
