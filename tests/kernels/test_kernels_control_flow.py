"""If, Case and While run their subgraphs on the CPU backend, in graph and eager mode."""

from __future__ import annotations

import numpy as np
import pytest

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, Case, If, Less, Mul, Relu, While
from ge.graph import DataType
from ge.session import Session

F32, I32, BOOL = DataType.DT_FLOAT, DataType.DT_INT32, DataType.DT_BOOL
MODES = ["on", "off"]


def sub(name, fn, n_in=1, dtypes=None):
    b = GraphBuilder(name)
    xs = [b.create_input(i, data_type=(dtypes or [F32] * n_in)[i], shape=[-2]) for i in range(n_in)]
    out = fn(*xs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def session(mode, graph):
    s = Session({"ge.graphMode": mode})
    s.add_graph(1, graph)
    return s


@pytest.mark.parametrize("mode", MODES)
def test_if_picks_a_branch(mode):
    b = GraphBuilder("main")
    c = b.create_input(0, data_type=BOOL, shape=[])
    x = b.create_input(1, data_type=F32, shape=[3])
    (out,) = If(c, [x], output_num=1, then_branch=sub("then", Relu), else_branch=sub("else", lambda t: t + 1.0))
    s = session(mode, b.build_and_reset([Mul(out, 2.0)]))
    x_ = np.array([-1, 0, 2], np.float32)
    assert s.run_graph(1, [np.array(True), x_])[0].numpy().tolist() == [0, 0, 4]
    assert s.run_graph(1, [np.array(False), x_])[0].numpy().tolist() == [0, 2, 6]


@pytest.mark.parametrize("mode", MODES)
def test_if_condition_truth_follows_ge(mode):
    b = GraphBuilder("main")
    c = b.create_input(0, data_type=I32, shape=[-1])
    x = b.create_input(1, data_type=F32, shape=[1])
    (out,) = If(c, [x], output_num=1, then_branch=sub("then", lambda t: t + 1.0),
                else_branch=sub("else", lambda t: t - 1.0))
    s = session(mode, b.build_and_reset([out]))
    one = np.ones(1, np.float32)
    # A non-scalar condition is true when it has elements, whatever they are.
    assert s.run_graph(1, [np.array([0, 0], np.int32), one])[0].numpy().tolist() == [2]
    assert s.run_graph(1, [np.zeros(0, np.int32), one])[0].numpy().tolist() == [0]


@pytest.mark.parametrize("mode", MODES)
def test_case_runs_the_indexed_branch_and_the_last_when_out_of_range(mode):
    b = GraphBuilder("main")
    i = b.create_input(0, data_type=I32, shape=[])
    x = b.create_input(1, data_type=F32, shape=[2])
    branches = [sub(f"b{k}", (lambda k: lambda t: t * float(k + 1))(k)) for k in range(3)]
    (out,) = Case(i, [x], output_num=1, branches=branches)
    s = session(mode, b.build_and_reset([out]))
    x_ = np.array([1, 2], np.float32)
    for idx, want in [(0, [1, 2]), (1, [2, 4]), (2, [3, 6]), (7, [3, 6]), (-1, [3, 6])]:
        assert s.run_graph(1, [np.array(idx, np.int32), x_])[0].numpy().tolist() == want


@pytest.mark.parametrize("mode", MODES)
def test_while_loops_until_cond_is_false(mode):
    # (i, acc): while i < 5: i += 1; acc *= 2
    cond = sub("cond", lambda i, acc: Less(i, 5), 2, [I32, F32])
    body = sub("body", lambda i, acc: [Add(i, 1), Mul(acc, 2.0)], 2, [I32, F32])
    b = GraphBuilder("main")
    i = b.create_input(0, data_type=I32, shape=[])
    acc = b.create_input(1, data_type=F32, shape=[2])
    outs = While([i, acc], output_num=2, cond=cond, body=body)
    s = session(mode, b.build_and_reset(list(outs)))
    i_out, acc_out = s.run_graph(1, [np.array(0, np.int32), np.array([1, 3], np.float32)])
    assert i_out.numpy().tolist() == 5 and acc_out.numpy().tolist() == [32, 96]
    i_out, acc_out = s.run_graph(1, [np.array(9, np.int32), np.array([1, 3], np.float32)])
    assert i_out.numpy().tolist() == 9 and acc_out.numpy().tolist() == [1, 3]


def test_an_error_inside_a_branch_names_the_subgraph():
    b = GraphBuilder("main")
    c = b.create_input(0, data_type=BOOL, shape=[])
    x = b.create_input(1, data_type=I32, shape=[2])
    y = b.create_input(2, data_type=I32, shape=[2])
    from ge.es.all import Div

    (out,) = If(c, [x, y], output_num=1, then_branch=sub("then", Div, 2, [I32, I32]),
                else_branch=sub("else", lambda p, q: p, 2, [I32, I32]))
    s = session("on", b.build_and_reset([out]))
    xs = [np.array([1, 2], np.int32), np.array([0, 1], np.int32)]
    assert s.run_graph(1, [np.array(False)] + xs)[0].numpy().tolist() == [1, 2]
    with pytest.raises(ge.ExecutionError, match="in subgraph 'then_branch'.*integer division by zero"):
        s.run_graph(1, [np.array(True)] + xs)
