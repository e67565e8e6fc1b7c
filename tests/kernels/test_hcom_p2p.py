"""HcomAllToAllV, HcomSend/HcomReceive and collective groups in one process (a world of one
rank; tests/distributed/ runs them on 2 and 4 MPI ranks).

In one process: an all-to-all-v is an exact copy of rank 0's block (its counts may be fed at run
time: the output's length is then unknown until it runs, GE's rule); a send or receive has no
peer and is refused when the graph compiles; a group of rank [0] runs the collectives, any other
rank list is refused.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, List

import ge
import ge.distributed as dist
import numpy as np
import pytest
from ge.es import GraphBuilder, control_dependency_scope
from ge.es import all as es
from ge.graph import DataType
from ge.session import Session
from hypothesis import given
from hypothesis import strategies as st

from kernel_harness import GE_DT, HYP, proto_dtypes

WORLD = "hccl_world_group"


def run_graph(b: GraphBuilder, outs: List[Any], feeds: List[Any]) -> List[np.ndarray]:
    s = Session()
    s.add_graph(1, b.build_and_reset(outs))
    return [t.numpy() for t in s.run_graph(1, feeds)]


def shape_of(h) -> List[int]:
    return h.get_producer().get_output_desc(h.output_index).get_shape()


def a2a_graph(n_x: int = 5):
    """send_data [n_x] float32 and the four counts fed at run time."""
    b = GraphBuilder("a2a")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[n_x])
    cs = [b.create_input(i + 1, data_type=DataType.DT_INT64, shape=[1]) for i in range(4)]
    y = es.HcomAllToAllV(x, *cs, group=WORLD)
    return b, y


def i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


def test_all_to_all_v_with_counts_fed_at_run_time():
    b, y = a2a_graph()
    assert shape_of(y) == [-1]  # unknown until the counts are known (GE's rule)
    x = np.arange(5, dtype=np.float32) + 1
    (got,) = run_graph(b, [y], [x, i64(3), i64(2), i64(3), i64(1)])
    np.testing.assert_array_equal(got, np.array([0, 3, 4, 5], np.float32))


@pytest.mark.parametrize("counts, message", [
    ((3, 0, 2, 0), "rank 0 sends 3 elements to rank 0 (send_counts[0]), which expects 2 from it (recv_counts[0])"),
    ((3, 4, 3, 0), "the block for rank 0 (3 elements from element 4) is outside send_data's 5 elements"),
    ((-1, 0, 0, 0), "send_counts[0] is -1; it must be >= 0"),
])
def test_all_to_all_v_errors_name_the_counts(counts, message):
    b, y = a2a_graph()
    with pytest.raises(ge.GeError, match=re.escape(message)):
        run_graph(b, [y], [np.zeros(5, np.float32)] + [i64(c) for c in counts])


def test_all_to_all_v_shape_from_constant_receive_counts():
    b = GraphBuilder("a2a")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2, 4])
    c = lambda *v: b.create_const(np.array(v, np.int64), DataType.DT_INT64)  # noqa: E731
    y = es.HcomAllToAllV(x, c(8), c(0), c(8), c(3), group=WORLD)
    assert shape_of(y) == [11]
    with pytest.raises(ge.GeError, match=r"one entry per rank each, got lengths 1, 1, 2, 1"):
        es.HcomAllToAllV(x, c(8), c(0), c(8, 0), c(3), group=WORLD)


def test_receive_has_its_attributes_shape_and_dtype_and_needs_a_peer():
    dts = proto_dtypes("HcomReceive", "y")
    assert "float32" in dts and "float64" in dts and "bool" not in dts
    for d in dts:
        b = GraphBuilder("recv")
        y = es.HcomReceive(b, group=WORLD, sr_tag=1, src_rank=1, shape=[2, 3], dtype=GE_DT[d])
        assert shape_of(y) == [2, 3]
        assert y.get_producer().get_output_desc(0).get_data_type() == GE_DT[d]
        with pytest.raises(ge.GeError, match=r"not supported: HcomReceive needs at least 2 ranks \(src_rank=1\): "
                                             r"ge-rs runs collectives in one process only"):
            run_graph(b, [y], [])
    b = GraphBuilder("recv")
    with pytest.raises(ge.GeError, match=r"attribute 'dtype' is DT_BOOL, which output 'y' does not allow"):
        es.HcomReceive(b, group=WORLD, sr_tag=1, src_rank=1, shape=[2], dtype=DataType.DT_BOOL)
    with pytest.raises(ge.GeError, match=r"attribute 'shape' \[-1\] has dim -1"):
        es.HcomReceive(b, group=WORLD, sr_tag=1, src_rank=1, shape=[-1], dtype=DataType.DT_FLOAT)


def send_graph(**attrs: Any):
    b = GraphBuilder("send")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    es.HcomSend(x, group=WORLD, **attrs)
    # The send has no output and nothing depends on it: it still runs (it runs for its effect).
    return b, es.Identity(x)


@pytest.mark.parametrize("attrs, message", [
    (dict(sr_tag=0, dest_rank=0), "not supported: HcomSend with dest_rank=0, this rank itself"),
    (dict(sr_tag=0, dest_rank=3), "not supported: HcomSend needs at least 4 ranks (dest_rank=3)"),
    (dict(sr_tag=40000, dest_rank=1), "not supported: HcomSend with sr_tag 40000 (ge-rs takes 0..=32767)"),
])
def test_a_send_is_kept_and_refused_without_a_peer(attrs, message):
    b, y = send_graph(**attrs)
    with pytest.raises(ge.GeError, match=re.escape(message)):
        run_graph(b, [y], [np.zeros(2, np.float32)])


def test_a_send_returns_a_handle_for_control_dependencies():
    b = GraphBuilder("send")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    send = es.HcomSend(x, group=WORLD, sr_tag=2, dest_rank=1)
    assert send.get_producer().type == "HcomSend" and send.get_producer().get_outputs_size() == 0
    with control_dependency_scope([send]):
        y = es.HcomReceive(b, group=WORLD, sr_tag=2, src_rank=1, shape=[2], dtype=DataType.DT_FLOAT)
    assert [n.type for n in y.get_producer().get_in_control_nodes()] == ["HcomSend"]


def test_hcom_p2p_signatures_are_ges():
    assert list(inspect.signature(es.HcomAllToAllV).parameters) == [
        "send_data", "send_counts", "send_displacements", "recv_counts", "recv_displacements", "group"]
    assert list(inspect.signature(es.HcomSend).parameters) == ["x", "group", "sr_tag", "dest_rank"]
    assert list(inspect.signature(es.HcomReceive).parameters) == [
        "owner_graph_builder", "group", "sr_tag", "src_rank", "shape", "dtype"]


# ---------------------------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def group0():
    dist.create_group("p2p_g0", [0])
    yield "p2p_g0"
    dist.destroy_group("p2p_g0")


def test_a_group_of_rank_0_runs_the_collectives(group0):
    assert dist.group_ranks(group0) == [0]
    assert dist.get_rank(group0) == 0 and dist.get_world_size(group0) == 1
    assert dist.group_ranks(WORLD) == [0]
    b = GraphBuilder("grp")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 2])
    y = es.HcomAllReduce(x, reduction="sum", group=group0)
    z = es.HcomAllGather(y, rank_size=1, group=group0)
    v = np.arange(4, dtype=np.float32).reshape(2, 2)
    (got,) = run_graph(b, [z], [v])
    np.testing.assert_array_equal(got, v)


def test_rank_size_is_the_groups(group0):
    b = GraphBuilder("grp")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 2])
    y = es.HcomAllGather(x, rank_size=2, group=group0)
    with pytest.raises(ge.GeError, match=r"HcomAllGather needs 2 ranks \(rank_size=2\), but group 'p2p_g0' has "
                                         r"1 ranks"):
        run_graph(b, [y], [np.zeros((2, 2), np.float32)])


@pytest.mark.parametrize("name, ranks, message", [
    ("p2p_bad", [0, 1], "rank 1 is outside the world of 1 ranks"),
    ("p2p_bad", [], "a group has at least one rank"),
    ("p2p_bad", [0, 0], "the ranks must ascend, without repeats"),
    (WORLD, [0], "hccl_world_group is every rank; it is not created"),
])
def test_bad_groups_are_refused(name, ranks, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        dist.create_group(name, ranks)
    with pytest.raises(ValueError, match="there is no group 'p2p_bad'"):
        dist.group_ranks("p2p_bad")


def test_a_group_name_is_created_once(group0):
    with pytest.raises(ValueError, match="a group named 'p2p_g0' exists"):
        dist.create_group(group0, [0])
    with pytest.raises(TypeError, match="a list of rank numbers"):
        dist.create_group("p2p_x", "01")
    with pytest.raises(ValueError, match="there is no group 'p2p_none'"):
        dist.destroy_group("p2p_none")


def test_a_collective_on_an_unknown_group_is_refused_when_it_compiles():
    b = GraphBuilder("grp")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    y = es.HcomAllReduce(x, reduction="sum", group="p2p_nowhere")
    with pytest.raises(ge.GeError, match=r"group 'p2p_nowhere' does not exist on rank 0: create it with "
                                         r"ge.distributed.create_group"):
        run_graph(b, [y], [np.zeros(2, np.float32)])


@HYP(25)
@given(st.integers(1, 12), st.data())
def test_all_to_all_v_of_one_rank_moves_its_block(n_x, data):
    """Any block of send_data lands at its receive displacement; the rest of recv_data is 0."""
    c = data.draw(st.integers(0, n_x), label="count")
    sd = data.draw(st.integers(0, n_x - c), label="send displacement")
    rd = data.draw(st.integers(0, 6), label="receive displacement")
    b, y = a2a_graph(n_x)
    x = np.arange(n_x, dtype=np.float32) + 1
    (got,) = run_graph(b, [y], [x, i64(c), i64(sd), i64(c), i64(rd)])
    want = np.zeros(rd + c, np.float32)
    want[rd:] = x[sd:sd + c]
    np.testing.assert_array_equal(got, want)


def test_ges_group_list_option_creates_groups():
    """GE's ge.exec.hcomGrouplist: a JSON list of group_name/group_rank_list, at any level."""
    opts = {"ge.exec.hcomGrouplist": '[{"group_name": "p2p_opt", "group_rank_list": [0]}, '
                                     '{"group_name": "hccl_world_group", "group_rank_list": [0]}]'}
    s = Session(opts)
    try:
        assert dist.group_ranks("p2p_opt") == [0]
        Session(opts)  # again, the same group: kept
        b = GraphBuilder("grp")
        x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
        s.add_graph(1, b.build_and_reset([es.HcomAllReduce(x, reduction="max", group="p2p_opt")]))
        np.testing.assert_array_equal(s.run_graph(1, [np.ones(2, np.float32)])[0].numpy(), np.ones(2))
        with pytest.raises(ge.GeError, match=r"ge.exec.hcomGrouplist gives group 'p2p_opt' ranks \[0, 1\], but it "
                                             r"exists with ranks \[0\]"):
            Session({"ge.exec.hcomGrouplist": '[{"group_name": "p2p_opt", "group_rank_list": [0, 1]}]'})
    finally:
        dist.destroy_group("p2p_opt")
    with pytest.raises(ge.GeError, match="ge.exec.hcomGrouplist must be a JSON list"):
        Session({"ge.exec.hcomGrouplist": "{}"})
