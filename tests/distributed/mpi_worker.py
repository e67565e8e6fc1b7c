"""One rank of the multi-process tests (tests/distributed/test_mpi.py starts it with
``mpiexec -n N python mpi_worker.py <scenario>``).

Each scenario builds a graph with HCCL collectives, runs it on this rank and checks the result
against the single-process graph (or numpy) computing the same thing; it prints ``OK <scenario>``
on success and exits non-zero (the traceback on stderr) otherwise. ``mismatch`` prints the error
each rank got (``ERROR <message>``) for the test to compare across ranks.
"""

from __future__ import annotations

import os
import sys

if "--mpi4py" in sys.argv:  # mpi4py first: ge-rs shares its MPI
    from mpi4py import MPI

import ge.distributed
import numpy as np
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType, Tensor
from ge.session import Session

WORLD = "hccl_world_group"
RANK = ge.distributed.get_rank()
SIZE = ge.distributed.get_world_size()


def say(*words) -> None:
    """One line on stdout in one write (mpiexec interleaves what the ranks print)."""
    os.write(1, (" ".join(str(w) for w in words).replace("\n", " ") + "\n").encode())


def run(graph, feeds, options=None):
    """Runs `graph` on `feeds` (numpy arrays) in a fresh session; numpy outputs."""
    s = Session(options or {})
    s.add_graph(1, graph)
    return [t.numpy() for t in s.run_graph(1, [Tensor(np.ascontiguousarray(f)) for f in feeds])]


def dt_of(a: np.ndarray) -> DataType:
    return {np.float32: DataType.DT_FLOAT, np.float16: DataType.DT_FLOAT16,
            np.int32: DataType.DT_INT32, np.int64: DataType.DT_INT64,
            np.int8: DataType.DT_INT8}[a.dtype.type]


def graph_of(name, feeds, build):
    b = GraphBuilder(name)
    xs = [b.create_input(i, data_type=dt_of(f), shape=list(f.shape)) for i, f in enumerate(feeds)]
    out = build(b, *xs)
    return b.build_and_reset(out if isinstance(out, list) else [out])


def tp_mlp():
    """Tensor parallel: x @ W1 split by columns, Relu, @ W2 split by rows, AllReduce(sum);
    equal to the single-process x @ W1 -> Relu -> @ W2."""
    rng = np.random.default_rng(7)
    batch, d, h = 3, 8, 4 * SIZE
    x = rng.standard_normal((batch, d)).astype(np.float32)
    w1 = rng.standard_normal((d, h)).astype(np.float32)
    w2 = rng.standard_normal((h, d)).astype(np.float32)
    k = h // SIZE
    w1_r, w2_r = w1[:, RANK * k:(RANK + 1) * k], w2[RANK * k:(RANK + 1) * k, :]

    def mlp(b, x, w1, w2, *, reduce):
        y = es.MatMulV2(es.Relu(es.MatMulV2(x, w1)), w2)
        return es.HcomAllReduce(y, reduction="sum", group=WORLD) if reduce else y

    got = run(graph_of("tp", [x, w1_r, w2_r], lambda b, *a: mlp(b, *a, reduce=True)), [x, w1_r, w2_r])[0]
    want = run(graph_of("full", [x, w1, w2], lambda b, *a: mlp(b, *a, reduce=False)), [x, w1, w2])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert got.shape == (batch, d)


def rank_value(r: int, shape, dtype) -> np.ndarray:
    return (np.arange(np.prod(shape)).reshape(shape) % 7 + r + 1).astype(dtype)


def gather_scatter():
    """AllGather stacks every rank's x along dim 0; ReduceScatter of that keeps this rank's block
    reduced over the ranks; round trips in several dtypes and reductions."""
    for dtype in (np.float32, np.float16, np.int32, np.int8):
        x = rank_value(RANK, (2, 3), dtype)
        stacked = np.concatenate([rank_value(r, (2, 3), dtype) for r in range(SIZE)])
        g = graph_of("ag", [x], lambda b, h: es.HcomAllGather(h, rank_size=SIZE, group=WORLD))
        got = run(g, [x])[0]
        assert got.dtype == dtype and got.shape == (2 * SIZE, 3), (got.dtype, got.shape)
        np.testing.assert_array_equal(got, stacked)
        for reduction, want in (("sum", x * SIZE), ("max", x), ("min", x)):
            g = graph_of("rt", [x], lambda b, h: es.HcomReduceScatter(
                es.HcomAllGather(h, rank_size=SIZE, group=WORLD), reduction=reduction, group=WORLD,
                rank_size=SIZE))
            got = run(g, [x])[0]
            assert got.shape == x.shape and got.dtype == dtype
            np.testing.assert_array_equal(got, want.astype(dtype))
    # Reduce-scatter of distinct inputs: block r of the sum of every rank's x.
    x = rank_value(RANK, (2 * SIZE, 2), np.float32)
    total = sum(rank_value(r, (2 * SIZE, 2), np.float32) for r in range(SIZE))
    for reduction, want in (("sum", total), ("prod", np.prod([rank_value(r, x.shape, np.float32) for r in range(SIZE)], axis=0))):
        g = graph_of("rs", [x], lambda b, h: es.HcomReduceScatter(h, reduction=reduction, group=WORLD, rank_size=SIZE))
        got = run(g, [x])[0]
        np.testing.assert_allclose(got, want[2 * RANK:2 * RANK + 2], rtol=1e-6)
    # All-reduce in every reduction, against numpy over every rank's value.
    x = rank_value(RANK, (3, 2), np.int64)
    all_x = np.stack([rank_value(r, (3, 2), np.int64) for r in range(SIZE)])
    for reduction, want in (("sum", all_x.sum(0)), ("prod", all_x.prod(0)), ("max", all_x.max(0)),
                            ("min", all_x.min(0))):
        g = graph_of("ar", [x], lambda b, h: es.HcomAllReduce(h, reduction=reduction, group=WORLD))
        np.testing.assert_array_equal(run(g, [x])[0], want)


def broadcast():
    """HcomBroadcast of weights from a root: every rank computes with the root's weights, equal to
    the single-process graph on them."""
    x = np.ones((2, 4), np.float32)
    for root in sorted({0, SIZE - 1}):
        rng = np.random.default_rng(11 + root)
        w_root = rng.standard_normal((4, 3)).astype(np.float32)
        b_root = np.arange(3, dtype=np.int32) + root
        w = w_root if RANK == root else np.zeros_like(w_root)
        bias = b_root if RANK == root else np.full_like(b_root, -1)

        def build(bld, x, w, bias, root=root):
            w2, bias2 = es.HcomBroadcast([w, bias], 2, root_rank=root, group=WORLD)
            return [es.MatMulV2(x, w2), bias2]

        got, got_bias = run(graph_of("bc", [x, w, bias], build), [x, w, bias])
        want = run(graph_of("one", [x, w_root], lambda bld, x, w: es.MatMulV2(x, w)), [x, w_root])[0]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_bias, b_root)


def mismatch():
    """Rank 0 feeds [4, 8], the others [4, 6]: every rank raises the same error (no hang); the
    world still works afterwards."""
    cols = 8 if RANK == 0 else 6
    x = np.ones((4, cols), np.float32)
    g = graph_of("mm", [x], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=WORLD))
    try:
        run(g, [x])
    except ge.GeError as e:
        say("ERROR", e)
    else:
        raise AssertionError("the mismatch was not detected")
    y = np.ones((2,), np.float32)
    g = graph_of("after", [y], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=WORLD))
    np.testing.assert_array_equal(run(g, [y])[0], np.full((2,), SIZE, np.float32))


def rank_options():
    """GE's rank options: a rank table of the world's size and this rank's id are accepted; a
    table of another size and another rank id are refused with errors that say so."""
    import json
    import tempfile

    def table(n):
        devs = [{"device_id": str(r), "rank_id": str(r)} for r in range(n)]
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": "1.0", "server_count": "1",
                       "server_list": [{"device": devs, "server_id": "node_0"}]}, f)
        return path

    good, bad = table(SIZE), table(SIZE + 1)
    try:
        x = np.ones((2,), np.float32)
        g = graph_of("ro", [x], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=WORLD))
        opts = {"ge.exec.rankTableFile": good, "ge.exec.rankId": str(RANK), "ge.exec.deviceId": str(RANK)}
        np.testing.assert_array_equal(run(g, [x], opts)[0], np.full((2,), SIZE, np.float32))
        for opts, words in (({"ge.exec.rankTableFile": bad}, f"lists {SIZE + 1} ranks, but the world has {SIZE}"),
                            ({"ge.exec.rankId": str((RANK + 1) % SIZE)}, "ge.exec.rankId is")):
            try:
                Session(opts)
            except ge.GeError as e:
                assert words in str(e), str(e)
            else:
                raise AssertionError(f"{opts} accepted")
    finally:
        os.unlink(good)
        os.unlink(bad)


def diverge():
    """Rank 0 runs a collective the others never run: it fails after the collective timeout
    (ge.exec.hcclExecuteTimeOut) instead of hanging; the others return at once."""
    x = np.ones((2,), np.float32)
    g = graph_of("lonely", [x], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=WORLD))
    if RANK == 0:
        try:
            run(g, [x], {"ge.exec.hcclExecuteTimeOut": "1.5"})
        except ge.GeError as e:
            say("ERROR", e)
        else:
            raise AssertionError("a collective no other rank ran finished")


def with_mpi4py():
    """mpi4py initialised MPI before ge-rs: ge-rs shares it; both run collectives in turn."""
    comm = MPI.COMM_WORLD
    assert (comm.Get_rank(), comm.Get_size()) == (RANK, SIZE)
    assert ge.distributed.backend().startswith("MPI: MPICH"), ge.distributed.backend()
    x = rank_value(RANK, (3,), np.float32)
    g = graph_of("ar", [x], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=WORLD))
    for _ in range(3):
        mine = np.empty_like(x)
        comm.Allreduce(x, mine, op=MPI.SUM)
        np.testing.assert_array_equal(run(g, [x])[0], mine)


SCENARIOS = {f.__name__: f for f in (tp_mlp, gather_scatter, broadcast, mismatch, rank_options, diverge,
                                     with_mpi4py)}

if __name__ == "__main__":
    for name in (a for a in sys.argv[1:] if not a.startswith("--")):
        SCENARIOS[name]()
        say("OK", name, RANK, SIZE)
