"""The compile report lists each HCCL collective of the graph (crates/ge-runtime/src/plan.rs,
CollectiveReport): operator, node, group, ranks, reduction or root, each input's dtype and shape,
and the bytes per rank in, out and moved (NCCL's bus bytes; nothing moves on one rank). This
process is a world of one rank; tests/distributed/test_launch.py checks the line at 2 ranks."""

from __future__ import annotations

import numpy as np

from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType, Tensor
from ge.session import Session

WORLD = "hccl_world_group"


def collective_lines(report: str):
    lines = report.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("  collectives: ")]
    if not head:
        return None, []
    i = head[0]
    n = int(lines[i].split(": ")[1])
    return n, [line.strip() for line in lines[i + 1:i + 1 + n]]


def test_all_reduce_and_all_gather_are_listed_in_plan_order():
    b = GraphBuilder("tp")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[4, 8])
    h = b.create_input(1, data_type=DataType.DT_FLOAT16, shape=[2, 3])
    ar = es.HcomAllReduce(es.Relu(x), reduction="max", group=WORLD)
    ag = es.HcomAllGather(h, rank_size=1, group=WORLD)
    s = Session()
    s.add_graph(1, b.build_and_reset([ar, ag]))
    assert s.compile_report(1) is None
    xv = np.arange(32, dtype=np.float32).reshape(4, 8) - 7
    hv = np.ones((2, 3), np.float16)
    y, z = (t.numpy() for t in s.run_graph(1, [Tensor(xv), Tensor(hv)]))
    np.testing.assert_array_equal(y, np.maximum(xv, 0))
    np.testing.assert_array_equal(z, hv)
    n, entries = collective_lines(s.compile_report(1))
    assert n == 2
    assert entries[0].startswith("HcomAllReduce '")
    assert entries[0].split("'", 2)[2] == (
        ": group hccl_world_group (1 ranks), reduction max, DT_FLOAT [4, 8]; "
        "per rank: 128 bytes in, 128 bytes out, 0 bytes moved")
    assert entries[1].split("'", 2)[2] == (
        ": group hccl_world_group (1 ranks), DT_FLOAT16 [2, 3]; "
        "per rank: 12 bytes in, 12 bytes out, 0 bytes moved")


def test_a_broadcast_shows_its_root_and_each_input():
    b = GraphBuilder("bc")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[5])
    y = b.create_input(1, data_type=DataType.DT_INT64, shape=[2, 2])
    outs = es.HcomBroadcast([x, y], 2, root_rank=0, group=WORLD)
    s = Session()
    s.add_graph(1, b.build_and_reset(list(outs)))
    s.run_graph(1, [Tensor(np.arange(5, dtype=np.int32)), Tensor(np.zeros((2, 2), np.int64))])
    n, entries = collective_lines(s.compile_report(1))
    assert n == 1
    assert entries[0].startswith("HcomBroadcast '")
    assert entries[0].endswith(": group hccl_world_group (1 ranks), root 0, DT_INT32 [5], DT_INT64 [2, 2]; "
                               "per rank: 52 bytes in, 52 bytes out, 0 bytes moved")


def test_a_graph_without_collectives_has_no_such_section():
    b = GraphBuilder("plain")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    s = Session()
    s.add_graph(1, b.build_and_reset([es.Relu(x)]))
    s.run_graph(1, [Tensor(np.zeros(2, np.float32))])
    assert collective_lines(s.compile_report(1)) == (None, [])


def test_a_group_from_a_rank_list_shows_its_own_size():
    import ge.distributed

    ge.distributed.create_group("report_group", [0])
    try:
        b = GraphBuilder("grp")
        x = b.create_input(0, data_type=DataType.DT_INT32, shape=[6])
        s = Session()
        s.add_graph(1, b.build_and_reset([es.HcomAllReduce(x, reduction="sum", group="report_group")]))
        s.run_graph(1, [Tensor(np.arange(6, dtype=np.int32))])
        n, entries = collective_lines(s.compile_report(1))
        assert n == 1
        assert entries[0].split("'", 2)[2] == (
            ": group report_group (1 ranks), reduction sum, DT_INT32 [6]; "
            "per rank: 24 bytes in, 24 bytes out, 0 bytes moved")
    finally:
        ge.distributed.destroy_group("report_group")
