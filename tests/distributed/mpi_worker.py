"""One rank of the multi-process tests (tests/distributed/test_mpi.py starts it with
``mpiexec -n N python mpi_worker.py <scenario>``).

Each scenario builds a graph with HCCL collectives, runs it on this rank and checks the result
against the single-process graph (or numpy) computing the same thing; it prints ``OK <scenario>``
on success and exits non-zero (the traceback on stderr) otherwise. ``mismatch`` prints the error
each rank got (``ERROR <message>``) for the test to compare across ranks.
"""

from __future__ import annotations

import os
import re
import sys

if "--mpi4py" in sys.argv:  # mpi4py first: ge-rs shares its MPI
    from mpi4py import MPI

import ge.distributed
import numpy as np
from ge.es import GraphBuilder, control_dependency_scope
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
    world_still_works()


def world_still_works():
    """After an error every rank saw, the world runs an all-reduce as before."""
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


def i64(v) -> np.ndarray:
    return np.asarray(v, np.int64)


def exclusive_cumsum(v: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(v)[:-1]]).astype(np.int64)


def moe_ep():
    """Expert parallel: one expert per rank. Every rank routes its tokens to the experts' ranks
    with HcomAllToAllV (the receive counts themselves exchanged in the graph by an all-to-all-v
    of the send counts), multiplies what it got by its expert's weight, and routes the rows back
    with a second HcomAllToAllV. Equal to the single-process computation in numpy, token by
    token; run twice with other routings in one compiled graph (the shapes change per run)."""
    tokens, h = 5, 4
    rng = np.random.default_rng(21)
    w = rng.standard_normal((SIZE, h, h)).astype(np.float32)  # expert e's weight, on rank e
    b = GraphBuilder("moe")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[-1])
    sc = b.create_input(1, data_type=DataType.DT_INT64, shape=[SIZE])
    sd = b.create_input(2, data_type=DataType.DT_INT64, shape=[SIZE])
    wr = b.create_input(3, data_type=DataType.DT_FLOAT, shape=[h, h])
    ones = b.create_const(np.ones(SIZE, np.int64), DataType.DT_INT64)
    each = b.create_const(np.arange(SIZE, dtype=np.int64), DataType.DT_INT64)
    rc = es.HcomAllToAllV(sc, ones, each, ones, each, group=WORLD)  # what each rank sends here
    rd = es.Cumsum(rc, b.create_const(np.array(0, np.int32), DataType.DT_INT32), exclusive=True)
    got = es.HcomAllToAllV(x, sc, sd, rc, rd, group=WORLD)
    rows = es.Reshape(got, b.create_const(np.array([-1, h], np.int64), DataType.DT_INT64))
    y = es.Reshape(es.MatMulV2(rows, wr), b.create_const(np.array([-1], np.int64), DataType.DT_INT64))
    back = es.HcomAllToAllV(y, rc, rd, sc, sd, group=WORLD)
    s = Session({})
    s.add_graph(1, b.build_and_reset([back, rc]))
    for step in range(2):
        r = np.random.default_rng(100 + step)
        toks = r.standard_normal((SIZE, tokens, h)).astype(np.float32)
        expert = r.integers(0, SIZE, size=(SIZE, tokens))
        order = np.argsort(expert[RANK], kind="stable")
        counts = np.bincount(expert[RANK], minlength=SIZE) * h
        feeds = [toks[RANK][order].reshape(-1), i64(counts), exclusive_cumsum(counts), w[RANK]]
        out, recv_counts = [t.numpy() for t in s.run_graph(1, [Tensor(np.ascontiguousarray(f)) for f in feeds])]
        want_rc = [np.count_nonzero(expert[q] == RANK) * h for q in range(SIZE)]
        np.testing.assert_array_equal(recv_counts, want_rc)
        mine = np.empty((tokens, h), np.float32)
        mine[order] = out.reshape(tokens, h)
        want = np.stack([toks[RANK][t] @ w[expert[RANK][t]] for t in range(tokens)])
        np.testing.assert_allclose(mine, want, rtol=1e-5, atol=1e-5)


def a2a_mismatch():
    """Rank 0 expects one element more from the last rank than it sends: every rank raises the
    same error naming the pair; the world still works afterwards."""
    n = SIZE
    x = np.arange(n, dtype=np.float32) + 10 * RANK
    sc = np.ones(n, np.int64)
    rc = sc.copy()
    if RANK == 0:
        rc[n - 1] = 2
    feeds = [x, sc, np.arange(n, dtype=np.int64), rc, exclusive_cumsum(rc)]
    g = graph_of("a2a", feeds, lambda b, *hs: es.HcomAllToAllV(*hs, group=WORLD))
    try:
        run(g, feeds)
    except ge.GeError as e:
        say("ERROR", e)
    else:
        raise AssertionError("the count mismatch was not detected")
    rc[:] = 1
    feeds[3], feeds[4] = rc, exclusive_cumsum(rc)
    got = run(g, feeds)[0]
    np.testing.assert_array_equal(got, np.array([RANK + 10 * q for q in range(n)], np.float32))


def p2p_graph(name, x, build):
    b = GraphBuilder(name)
    h = b.create_input(0, data_type=dt_of(x), shape=list(x.shape))
    return b.build_and_reset(build(b, h))


def send_then_receive(b, h, dest, src, tag_out, tag_in, like, group=WORLD):
    """HcomSend of h, then (a control dependency) the HcomReceive of a tensor like `like`."""
    send = es.HcomSend(h, group=group, sr_tag=tag_out, dest_rank=dest)
    with control_dependency_scope([send]):
        return es.HcomReceive(b, group=group, sr_tag=tag_in, src_rank=src, shape=list(like.shape),
                              dtype=dt_of(like))


def p2p():
    """Ping-pong between pairs of ranks (0 and 1, 2 and 3): the even rank sends x, the odd one
    returns x + 1; then a ring, every rank sending 1 MiB to the next before it receives from
    the previous one (the sends finish in the background: no deadlock)."""
    partner = RANK ^ 1
    for dtype in (np.float32, np.float16, np.int64):
        x = rank_value(RANK, (2, 3), dtype)
        if RANK % 2 == 0:
            g = p2p_graph("ping", x, lambda b, h: [send_then_receive(b, h, partner, partner, 1, 2, x)])
            got = run(g, [x])[0]
            assert got.dtype == dtype and got.shape == x.shape
            np.testing.assert_array_equal(got, x + 1)
        else:
            def pong(b, h):
                r = es.HcomReceive(b, group=WORLD, sr_tag=1, src_rank=partner, shape=list(x.shape),
                                   dtype=dt_of(x))
                y = es.Add(r, b.create_const(np.ones(x.shape, dtype), dt_of(x)))
                es.HcomSend(y, group=WORLD, sr_tag=2, dest_rank=partner)  # no output: still runs
                return [y]
            got = run(p2p_graph("pong", x, pong), [x])[0]
            np.testing.assert_array_equal(got, rank_value(partner, (2, 3), dtype) + 1)
    x = rank_value(RANK, (512, 512), np.float32)
    nxt, prev = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    g = p2p_graph("ring", x, lambda b, h: [send_then_receive(b, h, nxt, prev, 3, 3, x)])
    np.testing.assert_array_equal(run(g, [x])[0], rank_value(prev, (512, 512), np.float32))


def p2p_mismatch():
    """The even rank sends [2, 3], the odd one expects [3, 2]: the receive fails with both shapes
    named (the data is still taken); both ranks run an all-reduce afterwards."""
    partner = RANK ^ 1
    x = np.ones((2, 3), np.float32)
    if RANK % 2 == 0:
        def send(b, h):
            es.HcomSend(h, group=WORLD, sr_tag=5, dest_rank=partner)
            return [es.Identity(h)]
        run(p2p_graph("send", x, send), [x])
    else:
        b = GraphBuilder("recv")
        y = es.HcomReceive(b, group=WORLD, sr_tag=5, src_rank=partner, shape=[3, 2], dtype=DataType.DT_FLOAT)
        s = Session({})
        s.add_graph(1, b.build_and_reset([y]))
        try:
            s.run_graph(1, [])
        except ge.GeError as e:
            say("ERROR", e)
        else:
            raise AssertionError("the shape mismatch was not detected")
    world_still_works()


def groups():
    """Two groups, the lower and the upper half of the ranks, made from rank lists: each runs
    all-reduce, all-gather, a broadcast and (two ranks or more) a send/receive on its own; a rank
    running the other group's collective gets a clear error, as does a rank_size of the world."""
    half = SIZE // 2
    lists = {"lower": list(range(half)), "upper": list(range(half, SIZE))}
    mine = "lower" if RANK < half else "upper"
    other = "upper" if mine == "lower" else "lower"
    for name in sorted(lists):  # every rank learns both; only members make a communicator
        ge.distributed.create_group(name, lists[name])
    members = lists[mine]
    assert ge.distributed.get_rank(mine) == members.index(RANK)
    assert ge.distributed.get_world_size(mine) == len(members)
    x = rank_value(RANK, (2, 3), np.float32)
    want = sum(rank_value(r, (2, 3), np.float32) for r in members)
    g = graph_of("ar", [x], lambda b, h: es.HcomAllReduce(h, reduction="sum", group=mine))
    np.testing.assert_array_equal(run(g, [x])[0], want)
    g = graph_of("ag", [x], lambda b, h: es.HcomAllGather(h, rank_size=len(members), group=mine))
    np.testing.assert_array_equal(run(g, [x])[0], np.concatenate([rank_value(r, (2, 3), np.float32) for r in members]))
    root = len(members) - 1
    g = graph_of("bc", [x], lambda b, h: es.HcomBroadcast([h], 1, root_rank=root, group=mine))
    np.testing.assert_array_equal(run(g, [x])[0], rank_value(members[root], (2, 3), np.float32))
    if len(members) >= 2:
        me = members.index(RANK)
        peer = me ^ 1
        g = p2p_graph("gp", x, lambda b, h: [send_then_receive(b, h, peer, peer, 7, 7, x, mine)])
        np.testing.assert_array_equal(run(g, [x])[0], rank_value(members[peer], (2, 3), np.float32))
    for build, words in (
        (lambda b, h: es.HcomAllReduce(h, reduction="sum", group=other),
         f"rank {RANK} is not in group '{other}' (ranks {lists[other]})"),
        (lambda b, h: es.HcomAllGather(h, rank_size=SIZE, group=mine),
         f"needs {SIZE} ranks (rank_size={SIZE}), but group '{mine}' has {len(members)} ranks"),
    ):
        try:
            run(graph_of("bad", [x], build), [x])
        except ge.GeError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(words)
    for name in lists:
        ge.distributed.destroy_group(name)


def overlap():
    """Two collectives with compute beside them that does not need them: each started where its
    input is ready and waited for before its first reader, the compute run meanwhile (the compile
    report says how many steps each overlaps). The same bits as when each collective runs where it
    stands (GE_COLLECTIVE_OVERLAP=0), and equal to numpy. Then a receive started early beside
    the send its peer waits for."""
    rng = np.random.default_rng(11)
    m, k, n = 16, 32, 24
    base = rng.standard_normal((m, k)).astype(np.float32)
    w1, w2 = (rng.standard_normal((k, n)).astype(np.float32) for _ in range(2))
    w3 = rng.standard_normal((n, n)).astype(np.float32)
    x = base + RANK

    def build(b, x, w1, w2, w3):
        h = es.MatMulV2(x, w1)
        y = es.HcomAllReduce(h, reduction="sum", group=WORLD)
        # The same input as the all-reduce's (copied to one, moved to the other); its output is
        # a graph output nothing reads: waited for at the end.
        g = es.HcomAllGather(h, rank_size=SIZE, group=WORLD)
        z = es.MatMulV2(es.Relu(es.MatMulV2(x, w2)), w3)
        return [es.Add(y, z), g]

    feeds = [x, w1, w2, w3]
    results, reports = [], []
    for setting in ("0", None):
        if setting is None:
            os.environ.pop("GE_COLLECTIVE_OVERLAP", None)
        else:
            os.environ["GE_COLLECTIVE_OVERLAP"] = setting
        s = Session({})
        s.add_graph(1, graph_of("overlap", feeds, build))
        results.append([t.numpy() for t in s.run_graph(1, [Tensor(f) for f in feeds])])
        reports.append(s.compile_report(1))
    blocking, overlapped = results
    for a, b in zip(blocking, overlapped):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)
    xs = [(base + r).astype(np.float64) for r in range(SIZE)]
    want_y = sum(xr @ w1 for xr in xs) + np.maximum(x.astype(np.float64) @ w2, 0) @ w3
    np.testing.assert_allclose(overlapped[0], want_y, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(overlapped[1], np.concatenate([xr @ w1 for xr in xs]), rtol=1e-4, atol=1e-3)
    steps = [int(v) for v in re.findall(r"overlaps (\d+) steps", reports[1])]
    assert len(steps) == 2 and min(steps) >= 2, reports[1]
    assert "overlaps" not in reports[0], reports[0]
    # A receive started first, on the communication thread, while this rank's send to the peer
    # that waits for it goes out from the plan (pairs 0-1, 2-3): no deadlock.
    partner = RANK ^ 1
    v = rank_value(RANK, (4, 5), np.float32)

    def exchange(b, h):
        r = es.HcomReceive(b, group=WORLD, sr_tag=7, src_rank=partner, shape=[4, 5], dtype=DataType.DT_FLOAT)
        es.HcomSend(h, group=WORLD, sr_tag=7, dest_rank=partner)
        return [es.Add(r, es.Relu(es.Mul(h, h)))]

    s = Session({})
    s.add_graph(1, graph_of("exchange", [v], exchange))
    got = s.run_graph(1, [Tensor(v)])[0].numpy()
    np.testing.assert_array_equal(got, rank_value(partner, (4, 5), np.float32) + np.maximum(v * v, 0))
    assert re.search(r"HcomReceive .*overlaps \d+ steps", s.compile_report(1)), s.compile_report(1)


def send_first():
    """A send made before a collective it does not feed stays before it: the even rank sends h
    to its partner, then all-reduces 2h; the odd rank all-reduces what it received. Were the
    even rank's all-reduce (or its start) moved ahead of the send, it would wait for a partner
    that waits for the send: the collective timeout instead of a result. With the overlap on
    and off."""
    partner = RANK ^ 1
    h = rank_value(RANK, (4, 5), np.float32)

    def even(b, x):
        es.HcomSend(x, group=WORLD, sr_tag=9, dest_rank=partner)
        return [es.HcomAllReduce(es.Mul(x, b.create_const(np.full((4, 5), 2, np.float32), DataType.DT_FLOAT)),
                                 reduction="sum", group=WORLD)]

    def odd(b, x):
        r = es.HcomReceive(b, group=WORLD, sr_tag=9, src_rank=partner, shape=[4, 5], dtype=DataType.DT_FLOAT)
        return [es.HcomAllReduce(r, reduction="sum", group=WORLD)]

    want = sum(3 * rank_value(e, (4, 5), np.float32) for e in range(0, SIZE, 2))
    for setting in ("0", None):
        if setting is None:
            os.environ.pop("GE_COLLECTIVE_OVERLAP", None)
        else:
            os.environ["GE_COLLECTIVE_OVERLAP"] = setting
        got = run(p2p_graph("send_first", h, even if RANK % 2 == 0 else odd), [h])[0]
        np.testing.assert_array_equal(got, want)


SCENARIOS = {f.__name__: f for f in (tp_mlp, gather_scatter, broadcast, mismatch, rank_options, diverge,
                                     with_mpi4py, moe_ep, a2a_mismatch, p2p, p2p_mismatch, groups, overlap,
                                     send_first)}

if __name__ == "__main__":
    for name in (a for a in sys.argv[1:] if not a.startswith("--")):
        SCENARIOS[name]()
        say("OK", name, RANK, SIZE)
