"""Graphs built the way GE builds them (issue point 5).

GE checks nothing while building: at compile, each Data node's description is replaced by the
description of the tensor fed at its index. So an input created without a shape has unknown rank,
descriptions set by hand on intermediate nodes are hints, ops built on hints never raise at build
time, and the session re-infers every graph from the fed tensors. Where every description
involved is declared or constant, ge-rs still checks at once.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, ConcatV2, MatMul, Mul, Relu, Reshape
from ge.graph import DataType, Tensor
from ge.passes import MatchResult, SubgraphBoundary, SubgraphInput, infer_shape
from ge.session import Session


def _run(graph, *inputs):
    s = Session()
    s.add_graph(1, graph)
    return [t.numpy() for t in s.run_graph(1, [Tensor(np.asarray(x)) if not isinstance(x, Tensor) else x
                                               for x in inputs])]


def test_an_input_without_a_shape_has_unknown_rank_not_scalar():
    b = GraphBuilder("g")
    x = b.create_input(0)
    assert x._desc[1] == [-2]
    x0, x1 = b.create_inputs(2, start_index=1)
    assert x0._desc[1] == [-2] and x1._desc[1] == [-2]
    # A shape given is kept as declared.
    y = b.create_input(3, shape=[2, 3])
    assert y._desc[1] == [2, 3]


def test_ge_style_program_with_unshaped_inputs_runs_with_any_fed_shape():
    b = GraphBuilder("g")
    a, w = b.create_inputs(2)
    y = Relu(MatMul(a, w)) + 1.0
    graph = b.build_and_reset([y])
    s = Session()
    s.add_graph(1, graph)
    rng = np.random.default_rng(0)
    for m, k, n in [(2, 3, 4), (5, 1, 2)]:
        av = rng.standard_normal((m, k)).astype(np.float32)
        wv = rng.standard_normal((k, n)).astype(np.float32)
        out = s.run_graph(1, [Tensor(av), Tensor(wv)])[0].numpy()
        np.testing.assert_allclose(out, np.maximum(av @ wv, 0) + 1.0, rtol=1e-5)


def test_ops_on_unshaped_inputs_never_raise_while_building():
    b = GraphBuilder("g")
    x = b.create_input(0)
    c = b.create_const(np.ones((5, 7), np.float32))
    # Each of these would be checked against a declared shape; here nothing is known yet.
    m = MatMul(x, c)
    r = Reshape(m, b.create_const(np.array([3, -1], np.int64)))
    z = ConcatV2([r, x], 0, N=2)
    graph = b.build_and_reset([z])
    assert graph is not None


def test_a_mismatch_found_at_compile_names_the_line_that_built_the_node():
    b = GraphBuilder("g")
    x = b.create_input(0)
    w = b.create_const(np.ones((5, 7), np.float32))
    line = inspect.currentframe().f_lineno + 1
    y = MatMul(x, w)
    graph = b.build_and_reset([y])
    s = Session()
    s.add_graph(1, graph)
    with pytest.raises(ge.ShapeInferenceError) as info:
        s.run_graph(1, [Tensor(np.ones((2, 3), np.float32))])
    msg = str(info.value)
    assert "inner dimensions differ" in msg
    assert f"test_unshaped_inputs.py:{line}" in msg
    # The same graph runs with a fitting input.
    assert s.run_graph(1, [Tensor(np.ones((2, 5), np.float32))])[0].numpy().shape == (2, 7)


def test_a_declared_input_description_is_replaced_by_the_fed_one():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 3])
    graph = b.build_and_reset([Relu(x) * 2.0])
    fed = np.arange(-4, 4, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(_run(graph, fed)[0], np.maximum(fed, 0) * 2)


def test_declared_descriptions_are_still_checked_where_the_call_is_made():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    w = b.create_const(np.ones((5, 7), np.float32))
    with pytest.raises(ge.GeError, match="inner dimensions differ"):
        MatMul(x, w)
    i = b.create_input(1, data_type=DataType.DT_STRING, shape=[2])
    with pytest.raises(ge.GraphBuildError, match="Relu: input 'x' has dtype DT_STRING"):
        Relu(i)


def test_a_description_set_by_hand_on_an_intermediate_node_is_a_hint():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 5])
    r = Relu(x)
    r.set_shape([9, 9])  # a wrong hint: the compile re-infers from the fed tensor
    y = MatMul(r, b.create_const(np.ones((5, 3), np.float32)))
    graph = b.build_and_reset([y])
    out = _run(graph, np.ones((2, 5), np.float32))[0]
    np.testing.assert_array_equal(out, np.full((2, 3), 5.0, np.float32))


def test_setting_an_unshaped_inputs_shape_declares_it():
    b = GraphBuilder("g")
    x = b.create_input(0)
    x.set_shape([2, 3])
    with pytest.raises(ge.GeError, match="inner dimensions differ"):
        MatMul(x, b.create_const(np.ones((5, 7), np.float32)))


def _replacement_graph():
    b = GraphBuilder("replacement")
    a, c = b.create_inputs(2)
    return b.build_and_reset([Mul(Add(a, c), 2.0)])


def test_infer_shape_seeds_a_replacement_from_a_nodes_inputs():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 3])
    y = b.create_input(1, shape=[4, 3])
    src_graph = b.build_and_reset([Add(x, y)])
    add = next(n for n in src_graph.get_all_nodes() if n.type == "Add")
    rep = _replacement_graph()
    infer_shape(rep, add)
    out = next(n for n in rep.get_all_nodes() if n.type == "Mul")
    assert list(out.get_output_desc(0).shape) == [4, 3]
    assert out.get_output_desc(0).data_type == DataType.DT_FLOAT


def test_infer_shape_seeds_a_replacement_from_a_boundary():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[6])
    y = b.create_input(1, data_type=DataType.DT_INT32, shape=[6])
    src_graph = b.build_and_reset([Add(x, y)])
    add = next(n for n in src_graph.get_all_nodes() if n.type == "Add")
    boundary = SubgraphBoundary()
    boundary.add_input(0, SubgraphInput([(add, 0)]))
    boundary.add_input(1, SubgraphInput([(add, 1)]))
    rep = _replacement_graph()
    infer_shape(rep, boundary)
    out = next(n for n in rep.get_all_nodes() if n.type == "Add")
    assert list(out.get_output_desc(0).shape) == [6]
    assert out.get_output_desc(0).data_type == DataType.DT_INT32


def test_infer_shape_checks_its_arguments_as_ge():
    rep = _replacement_graph()
    with pytest.raises(TypeError, match="replacement must be a ge.graph.Graph"):
        infer_shape("not a graph", rep.get_all_nodes()[0])
    with pytest.raises(TypeError, match="source must be MatchResult, Node, or SubgraphBoundary"):
        infer_shape(rep, 3)
    empty = GraphBuilder("empty").build_and_reset([])
    with pytest.raises(RuntimeError, match="replacement graph is empty"):
        infer_shape(empty, rep.get_all_nodes()[0])
    assert MatchResult is not None  # a MatchResult source is covered by the pass tests
