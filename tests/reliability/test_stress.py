"""Concurrency stress (issue 21, point 6): threads x sessions x add/run/remove, with plan-cache
eviction, for a fixed short time, every result checked against numpy.

Each of ``THREADS`` threads loops for ``SECONDS`` over three sessions (graph mode with cache
capacity 1 and 2, and eager mode) doing, at random:

- runs of the stable graphs (added once, never removed) with a batch size drawn from five, so
  that the one- and two-plan caches keep evicting and recapturing: these must always succeed;
- add/run/remove of a graph id the thread owns: must always succeed;
- add, run or remove of one graph id all threads share: may fail with a ``ge.GeError`` that says
  the id is (not) in the session, and must give the right result when it runs;
- ``run_graph_async`` of a stable graph.

A failure names the operation. The Rust side has no lock-free structure of its own (sessions use
``RwLock``/``Mutex``; see docs/reliability.md), so no ``loom`` model goes with this test.
"""

from __future__ import annotations

import random
import threading
import time

import ge
import numpy as np
from common import run_in_threads
from ge.es import GraphBuilder
from ge.es.all import Add, MatMulV2, Mul, Relu, Tanh
from ge.graph import Graph
from ge.session import Session

SECONDS = 3.0
THREADS = 4
MIN_STEPS = 40  # per thread: every kind of step comes up (the choices are seeded)
BATCHES = (1, 2, 3, 5, 8)
W = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def mlp() -> Graph:
    b = GraphBuilder("mlp")
    x = b.create_input(0, shape=[-1, 4])
    return b.build_and_reset([Relu(Add(MatMulV2(x, b.create_const(W)), 0.5))])


def mlp_ref(x):
    return np.maximum(x.astype(np.float64) @ W.astype(np.float64) + 0.5, 0)


def ew() -> Graph:
    b = GraphBuilder("ew")
    x = b.create_input(0, shape=[-1, 4])
    y = b.create_input(1, shape=[4])
    return b.build_and_reset([Tanh(Mul(x, y)), Add(x, y)])


def ew_ref(x, y):
    return [np.tanh(x * y), x + y]


GRAPHS = {"mlp": (mlp, mlp_ref), "ew": (ew, ew_ref)}


def inputs(kind, rng):
    x = rng.standard_normal((rng.choice(BATCHES), 4)).astype(np.float32)
    return [x] if kind == "mlp" else [x, rng.standard_normal(4).astype(np.float32)]


def check(kind, feeds, outs, what):
    want = GRAPHS[kind][1](*feeds)
    want = want if isinstance(want, list) else [want]
    assert len(outs) == len(want), what
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-5, err_msg=what)


STABLE = {1: "mlp", 2: "ew"}
SHARED_ID, SHARED_KIND = 50, "ew"


def absent_or_present(e: Exception) -> bool:
    return isinstance(e, ge.GeError) and (
        "is not in the session" in str(e) or "already in the session" in str(e)
    )


def test_threads_sessions_add_run_remove_with_eviction():
    sessions = [
        Session({"ge.graphCacheCapacity": "1", "ge.threads": "1"}),
        Session({"ge.graphCacheCapacity": "2", "ge.threads": "2"}),
        Session({"ge.graphMode": "off", "ge.threads": "2"}),
    ]
    for s in sessions:
        for gid, kind in STABLE.items():
            s.add_graph(gid, GRAPHS[kind][0]())
    deadline = time.monotonic() + SECONDS
    counts = [
        dict.fromkeys(["stable", "owned", "shared_ok", "shared_err", "async"], 0) for _ in range(THREADS)
    ]

    def work(k: int) -> None:
        rng = np.random.default_rng(100 + k)
        pick = random.Random(k)
        own = 100 + k
        c = counts[k]
        i = 0
        while time.monotonic() < deadline or i < MIN_STEPS:  # at least MIN_STEPS, however slow
            i += 1
            si = pick.randrange(len(sessions))
            s = sessions[si]
            r = pick.random()
            if r < 0.45:
                gid = pick.choice(list(STABLE))
                feeds = inputs(STABLE[gid], rng)
                check(STABLE[gid], feeds, s.run_graph(gid, feeds), f"stable graph {gid} of session {si}")
                c["stable"] += 1
            elif r < 0.65:
                kind = pick.choice(list(GRAPHS))
                s.add_graph(own, GRAPHS[kind][0]())
                for _ in range(pick.randint(1, 3)):
                    feeds = inputs(kind, rng)
                    check(kind, feeds, s.run_graph(own, feeds), f"owned graph {own} of session {si}")
                s.remove_graph(own)
                c["owned"] += 1
            elif r < 0.9:
                op = pick.choice(["add", "run", "run", "remove"])
                try:
                    if op == "add":
                        s.add_graph(SHARED_ID, GRAPHS[SHARED_KIND][0]())
                    elif op == "remove":
                        s.remove_graph(SHARED_ID)
                    else:
                        feeds = inputs(SHARED_KIND, rng)
                        check(
                            SHARED_KIND, feeds, s.run_graph(SHARED_ID, feeds), f"shared graph of session {si}"
                        )
                    c["shared_ok"] += 1
                except ge.GeError as e:
                    assert absent_or_present(e), f"{op} of the shared graph in session {si}: {e}"
                    c["shared_err"] += 1
            else:
                gid = pick.choice(list(STABLE))
                feeds = inputs(STABLE[gid], rng)
                fut = s.run_graph_async(gid, feeds)
                check(STABLE[gid], feeds, fut.result(timeout=30), f"async run of graph {gid} of session {si}")
                c["async"] += 1

    errors = run_in_threads(work, THREADS)
    assert errors == [], errors[:3]
    total = {key: sum(c[key] for c in counts) for key in counts[0]}
    assert all(v > 0 for v in total.values()), total
    # The small caches evicted and recaptured, and the stable graphs still run right.
    assert sessions[0].graph_cache_stats(1)["evictions"] > 0
    assert sessions[0].graph_cache_stats(1)["size"] <= 1 and sessions[1].graph_cache_stats(1)["size"] <= 2
    for s in sessions:
        assert sorted(g for g in s.get_graph_ids() if g >= 100) == []  # every owned id was removed
        for gid, kind in STABLE.items():
            feeds = inputs(kind, np.random.default_rng(gid))
            check(kind, feeds, s.run_graph(gid, feeds), f"graph {gid} after the stress")


def test_one_graph_many_threads_one_plan():
    """Many threads replaying one cached plan at once (each run its own buffers) all get their
    own inputs' results."""
    s = Session({"ge.graphCacheCapacity": "1", "ge.threads": "2"})
    s.add_graph(1, mlp())
    s.run_graph(1, [np.zeros((3, 4), np.float32)])  # captured once
    barrier = threading.Barrier(THREADS)

    def work(k):
        barrier.wait()
        rng = np.random.default_rng(k)
        for _ in range(200):
            x = rng.standard_normal((3, 4)).astype(np.float32)
            check("mlp", [x], s.run_graph(1, [x]), f"thread {k}")

    assert run_in_threads(work, THREADS) == []
    st = s.graph_cache_stats(1)
    assert st["captures"] == 1 and st["hits"] == THREADS * 200
