"""Seed 004's five ownership problems, each a test, plus drop orders and threads."""

import gc
import threading
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ge.es import GraphBuilder
from ge.es.all import Add, If, Relu
from ge.graph import DataType, DumpFormat, Graph
from common import run_in_threads


def make_tensor():
    builder = GraphBuilder("inner")
    tensor = builder.create_const_float(1.0)
    return tensor, weakref.ref(builder)


def test_problem1_no_reference_cycle_between_builder_and_tensors():
    gc.disable()
    try:
        b = GraphBuilder("g")
        x = b.create_input(0, shape=[2])
        y = Relu(x)
        wb, wx, wy = weakref.ref(b), weakref.ref(x), weakref.ref(y)
        del b, x, y
        # Freed by reference counting alone: nothing holds a cycle.
        assert wb() is None and wx() is None and wy() is None
    finally:
        gc.enable()


def test_problem2_tensor_keeps_its_builder_alive():
    t, wb = make_tensor()
    gc.collect()
    assert wb() is not None, "the builder must live while one of its tensors does"
    t2 = t + 1.0  # still fully usable
    assert t2.get_owner_builder() is t.get_owner_builder()
    del t, t2
    gc.collect()
    assert wb() is None


def test_problem3_tensors_of_two_builders_cannot_mix():
    b1, b2 = GraphBuilder("graph1"), GraphBuilder("graph2")
    t1 = b1.create_const_float(1.0)
    t2 = b2.create_const_float(2.0)
    with pytest.raises(ValueError, match="'graph2'.*'graph1'|'graph1'.*'graph2'"):
        t1 + t2
    with pytest.raises(ValueError):
        Add(t2, t1)
    with pytest.raises(ValueError):
        b2.set_graph_output(t1, 0)
    with pytest.raises(ValueError):
        b1.add_control_dependency(t1, [t2])
    # Neither builder was changed by the failed calls.
    assert len(b1.build_and_reset([t1]).get_direct_nodes()) == 1
    assert len(b2.build_and_reset([t2]).get_direct_nodes()) == 1


def test_problem4_builder_and_tensors_unusable_after_build():
    b = GraphBuilder("my_graph")
    t1 = b.create_const_float(1.0)
    b.set_graph_output(t1, 0)
    graph = b.build_and_reset()
    with pytest.raises(RuntimeError, match="already been built"):
        b.create_const_float(2.0)
    with pytest.raises(RuntimeError, match="already been built"):
        b.build_and_reset()
    with pytest.raises(RuntimeError, match="already been built"):
        t1 + 1.0
    with pytest.raises(RuntimeError, match="already been built"):
        Relu(t1)
    with pytest.raises(RuntimeError, match="already been built"):
        t1.set_shape([1])
    assert t1.name == "Const_0"  # GE reads the producer's name after the build too
    with pytest.raises(RuntimeError, match="already been built"):
        b.set_graph_attr_int64("a", 1)
    # The built graph is independent of the builder.
    assert [n.type for n in graph.get_direct_nodes()] == ["Const"]


def branch(name, fn):
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[2])
    return b.build_and_reset([fn(x)])


def build_if(then_g, else_g):
    b = GraphBuilder("main")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[2])
    (out,) = If(c, [x], output_num=1, then_branch=then_g, else_branch=else_g)
    return b, out


def test_problem5_subgraph_moves_into_parent_exactly_once():
    then_g = branch("then", Relu)
    else_g = branch("else", lambda x: x + 1.0)
    b, out = build_if(then_g, else_g)
    main = b.build_and_reset([out])
    # The moved graphs are still readable...
    assert then_g.is_moved and else_g.is_moved
    assert then_g.name == "then"
    assert "Relu" in then_g.dump_to_stream(DumpFormat.kReadable)
    assert [n.type for n in then_g.get_direct_nodes()] == ["Data", "Relu"]
    # ...but not changeable through the old object...
    with pytest.raises(RuntimeError, match="belongs to node 'If_0'"):
        then_g.set_attr("x", 1)
    with pytest.raises(RuntimeError, match="can be read but not changed"):
        then_g.remove_node(then_g.get_direct_nodes()[1])
    # ...and cannot move a second time.
    with pytest.raises(RuntimeError, match="only once"):
        build_if(then_g, branch("else2", Relu))
    # The parent owns its copy: changes go through the parent's views.
    sub = main.get_subgraph("then")
    assert sub is not None and sub.get_parent_node().type == "If"
    sub.set_attr("tag", "changed")
    assert sub.get_attr("tag") == "changed"
    assert not then_g.has_attr("tag")


def test_failed_if_does_not_move_the_subgraphs():
    then_g = branch("then", Relu)
    else_g = branch("else", Relu)
    b = GraphBuilder("main")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        If(x, [x], output_num=1, then_branch=then_g, else_branch="not a graph")
    assert not then_g.is_moved
    then_g.set_attr("still", "mine")


def test_moved_subgraph_outlives_everything():
    then_g = branch("then", Relu)
    b, out = build_if(then_g, branch("else", Relu))
    main = b.build_and_reset([out])
    del b, out, main
    gc.collect()
    assert then_g.name == "then" and len(then_g.get_direct_nodes()) == 2


@given(order=st.permutations(list(range(5))))
def test_any_drop_order_frees_everything_once(order):
    gc.disable()
    try:
        then_g = branch("then", Relu)
        b = GraphBuilder("main")
        c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
        x = b.create_input(1, shape=[2])
        (out,) = If(c, [x], output_num=1, then_branch=then_g, else_branch=branch("else", Relu))
        graph = b.build_and_reset([out])
        objs = [b, x, out, graph, then_g]
        refs = [weakref.ref(o) for o in objs]
        del b, c, x, out, graph, then_g
        for i in order:
            objs[i] = None
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_graph_views_survive_the_graph_object():
    g = branch("g", Relu)
    nodes = g.get_direct_nodes()
    del g
    gc.collect()
    assert [n.type for n in nodes] == ["Data", "Relu"]


def test_builders_in_threads_work_concurrently():
    results = {}

    def work(i):
        b = GraphBuilder(f"g{i}")
        x = b.create_input(0, shape=[4])
        for _ in range(300):
            x = Relu(x + 1.0)
        g = b.build_and_reset([x])
        results[i] = len(g.get_direct_nodes())

    assert not run_in_threads(work, 8)
    assert results == {i: 1 + 300 * 3 for i in range(8)}


def test_one_builder_shared_by_threads_stays_consistent():
    b = GraphBuilder("shared")
    x = b.create_input(0, shape=[4])

    def work():
        for _ in range(200):
            Relu(x)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    g = b.build_and_reset([x])
    names = [n.name for n in g.get_direct_nodes()]
    assert len(names) == 801 and len(set(names)) == 801


def test_graph_copy_is_refused():
    import copy

    g = Graph("g")
    with pytest.raises(RuntimeError):
        copy.copy(g)
    with pytest.raises(RuntimeError):
        copy.deepcopy(GraphBuilder("b"))


def test_case_and_while_move_their_subgraphs_once():
    from ge.es.all import Case, While

    b = GraphBuilder("main")
    idx = b.create_input(0, data_type=DataType.DT_INT32, shape=[])
    x = b.create_input(1, shape=[2])
    branches = [branch(f"br{i}", Relu) for i in range(3)]
    outs = Case(idx, [x], output_num=1, branches=branches)
    assert all(g.is_moved for g in branches)
    node = outs[0].get_producer()
    assert node.get_subgraph_names() == ["branches0", "branches1", "branches2"]
    cond, body = branch("cond", Relu), branch("body", Relu)
    w = While([x], output_num=1, cond=cond, body=body)
    assert cond.is_moved and body.is_moved
    with pytest.raises(RuntimeError, match="only once"):
        Case(idx, [x], output_num=1, branches=[branches[0]])
    g = b.build_and_reset([outs[0], w[0]])
    assert {s.name for s in g.get_all_subgraphs()} == {"br0", "br1", "br2", "cond", "body"}
