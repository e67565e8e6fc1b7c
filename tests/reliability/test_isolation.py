"""Failure isolation (issue 21, point 5).

- A pass that raises, returns garbage, or leaves the graph invalid leaves the user's graph
  byte-identical (``Graph.to_bytes``), both through ``run_passes`` and through a Session's
  compile; the session stays usable.
- A run that fails midway (a kernel error after other nodes ran) leaves the session usable and
  the other graphs' cached plans intact (no recapture: ``graph_cache_stats``).
- ``remove_graph`` while a run of that graph is in progress on another thread is safe: the run
  completes or raises a ``ge.GeError``, the graph is gone afterwards, nothing crashes.
"""

from __future__ import annotations

import threading
import time

import ge
import ge.ops
import numpy as np
import pytest
from common import float_regop, register_add_rewrite, run_in_threads
from ge.es import GraphBuilder
from ge.es.all import Add, Div, Mul, Relu, Sub, Tanh
from ge.graph import DataType, Graph
from ge.passes import (
    FusionBasePass,
    PassStage,
    PatternFusionPass,
    clear_registered_passes,
    pattern,
    register_fusion_pass,
    run_passes,
)
from ge.session import Session

STAGES = [PassStage.BEFORE_INFER_SHAPE, PassStage.AFTER_INFER_SHAPE, PassStage.AFTER_BUILTIN_FUSION_PASS]


@pytest.fixture(autouse=True)
def _clean_passes():
    clear_registered_passes()
    yield
    clear_registered_passes()


def user_graph() -> Graph:
    b = GraphBuilder("user")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[3])
    return b.build_and_reset([Relu(Add(x, y)), Tanh(Mul(x, y))])


X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
Y = np.array([0.5, -1.0, 2.0], np.float32)


def expected():
    return [np.maximum(X + Y, 0), np.tanh(X * Y)]


def check_outputs(outs):
    for got, want in zip(outs, expected()):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


# --- bad passes: each registers itself at ``stage`` -------------------------------------------


def raising(stage):
    @register_fusion_pass(name="Raises", stage=stage)
    class Raises(PatternFusionPass):
        @pattern
        def add(self, inputs):
            return Add(inputs[0], inputs[1])

        def replacement(self, inputs):
            # Rewrite something first, then fail: the half-done rewrite must not stay.
            raise RuntimeError("boom in replacement")


def garbage(stage):
    @register_fusion_pass(name="Garbage", stage=stage)
    class Garbage(PatternFusionPass):
        @pattern
        def add(self, inputs):
            return Add(inputs[0], inputs[1])

        def replacement(self, inputs):
            return "not a graph"


def wrong_arity(stage):
    @register_fusion_pass(name="WrongArity", stage=stage)
    class WrongArity(PatternFusionPass):
        @pattern
        def add(self, inputs):
            return Add(inputs[0], inputs[1])

        def replacement(self, inputs):
            return [Sub(inputs[0], inputs[1]), inputs[0]]  # two outputs for a one-output match


def breaks_graph(stage):
    """A whole-graph pass that edits the graph (removes Mul, whose output Tanh reads, and
    disconnects an edge), leaving it invalid, then reports success."""

    @register_fusion_pass(name="BreaksGraph", stage=stage)
    class BreaksGraph(FusionBasePass):
        def run(self, graph, context):
            for n in list(graph.get_all_nodes()):
                if n.type == "Mul":
                    graph.remove_node(n)
            return True


def fails_after_edit(stage):
    """A whole-graph pass that removes a node and then raises."""

    @register_fusion_pass(name="FailsAfterEdit", stage=stage)
    class FailsAfterEdit(FusionBasePass):
        def run(self, graph, context):
            for n in list(graph.get_all_nodes()):
                if n.type == "Relu":
                    graph.remove_node(n)
            raise ValueError("failed after editing")


def returns_false(stage):
    @register_fusion_pass(name="ReturnsFalse", stage=stage)
    class ReturnsFalse(FusionBasePass):
        def run(self, graph, context):
            for n in list(graph.get_all_nodes()):
                if n.type == "Tanh":
                    graph.remove_node(n)
            return False


BAD_PASSES = [
    raising,
    garbage,
    wrong_arity,
    breaks_graph,
    fails_after_edit,
    returns_false,
]


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("bad", BAD_PASSES, ids=lambda f: getattr(f, "__name__", None))
def test_bad_pass_leaves_graph_byte_identical_through_run_passes(bad, stage):
    g = user_graph()
    before = g.to_bytes()
    bad(stage)
    with pytest.raises(ge.GeError):
        run_passes(g)
    assert g.to_bytes() == before
    clear_registered_passes()
    s = Session()
    s.add_graph(0, g)
    check_outputs(s.run_graph(0, [X, Y]))


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("bad", BAD_PASSES, ids=lambda f: getattr(f, "__name__", None))
def test_bad_pass_in_a_session_leaves_user_graph_and_session_intact(bad, stage):
    g = user_graph()
    before = g.to_bytes()
    s = Session()
    s.add_graph(1, user_graph())
    check_outputs(s.run_graph(1, [X, Y]))  # graph 1's plan is cached before the bad pass exists
    bad(stage)
    s.add_graph(0, g)
    with pytest.raises(ge.GeError):
        s.run_graph(0, [X, Y])
    assert g.to_bytes() == before
    stats = s.graph_cache_stats(1)
    check_outputs(s.run_graph(1, [X, Y]))  # replayed: the bad pass never runs on it
    after = s.graph_cache_stats(1)
    assert after["hits"] == stats["hits"] + 1 and after["captures"] == stats["captures"]
    clear_registered_passes()
    check_outputs(s.run_graph(0, [X, Y]))  # the same session compiles graph 0 once the pass is gone
    assert g.to_bytes() == before


def test_run_passes_keeps_earlier_passes_effect_and_rolls_back_the_failing_one():
    """Passes before the failing one keep their effect (docs/passes.md); the failing one leaves
    nothing behind: the graph equals what the good pass alone makes."""
    register_add_rewrite("AddToSub", PassStage.BEFORE_INFER_SHAPE, lambda x, y: Sub(x, y))
    expected_graph = user_graph()
    run_passes(expected_graph)
    assert expected_graph.to_bytes() != user_graph().to_bytes()
    fails_after_edit(PassStage.AFTER_INFER_SHAPE)
    g = user_graph()
    with pytest.raises(ge.PassError, match="FailsAfterEdit"):
        run_passes(g)
    assert g.to_bytes() == expected_graph.to_bytes()


# --- runs that fail midway ----------------------------------------------------------------


def int_div_graph() -> Graph:
    """Add runs before the Div that fails; Relu after it never runs."""
    b = GraphBuilder("div")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[3])
    y = b.create_input(1, data_type=DataType.DT_INT32, shape=[3])
    return b.build_and_reset([Relu(Div(Add(x, y), y))])


@pytest.mark.parametrize("mode", ["on", "off"])
def test_failing_run_keeps_session_and_other_plans(mode):
    s = Session({"ge.graphMode": mode, "ge.graphCacheCapacity": "2"})
    s.add_graph(1, user_graph())
    s.add_graph(2, int_div_graph())
    check_outputs(s.run_graph(1, [X, Y]))
    good = [np.array([4, 6, 8], np.int32), np.array([2, 2, 2], np.int32)]
    assert s.run_graph(2, good)[0].numpy().tolist() == [3, 4, 5]
    before = {k: s.graph_cache_stats(k) for k in (1, 2)}
    for _ in range(3):
        with pytest.raises(ge.ExecutionError, match="division by zero"):
            s.run_graph(2, [np.array([1, 2, 3], np.int32), np.array([1, 0, 1], np.int32)])
        with pytest.raises(ge.GeError):  # a bad run: one input for a graph of two
            s.run_graph(1, [X])
    check_outputs(s.run_graph(1, [X, Y]))
    assert s.run_graph(2, good)[0].numpy().tolist() == [3, 4, 5]
    if mode == "on":
        after = {k: s.graph_cache_stats(k) for k in (1, 2)}
        assert after[1]["captures"] == before[1]["captures"]  # graph 1's plan survived
        assert after[2]["captures"] == before[2]["captures"]  # and graph 2's (same signature)
        assert after[1]["hits"] > before[1]["hits"] and after[2]["hits"] > before[2]["hits"]


def test_failing_runs_in_threads_do_not_disturb_good_ones():
    s = Session({"ge.graphCacheCapacity": "1"})
    s.add_graph(1, user_graph())
    s.add_graph(2, int_div_graph())

    def work(k):
        for i in range(30):
            if (i + k) % 2:
                with pytest.raises(ge.ExecutionError):
                    s.run_graph(2, [np.array([1, 2, 3], np.int32), np.array([0, 1, 1], np.int32)])
            else:
                check_outputs(s.run_graph(1, [X, Y]))

    assert run_in_threads(work, 4) == []


# --- remove_graph during a run --------------------------------------------------------------

_BLOCK_OP = "RelBlockingIdentity"
_GATE = {"entered": threading.Event(), "release": threading.Event()}


def _blocking_kernel(x):
    _GATE["entered"].set()
    _GATE["release"].wait(10)
    return x


@pytest.fixture(scope="module")
def blocking_op():
    if _BLOCK_OP not in ge.ops.kernel_op_types():
        ge.ops.register_regop(float_regop(_BLOCK_OP))
    ge.ops.register_kernel(_BLOCK_OP, _blocking_kernel)
    yield
    ge.ops.unregister_kernel(_BLOCK_OP)


def blocking_graph() -> Graph:
    from ge.es import all as ops

    b = GraphBuilder("blocking")
    x = b.create_input(0, shape=[4])
    return b.build_and_reset([Relu(getattr(ops, _BLOCK_OP)(Tanh(x)))])


@pytest.mark.parametrize("mode", ["on", "off"])
def test_remove_graph_while_it_runs(blocking_op, mode):
    s = Session({"ge.graphMode": mode})
    s.add_graph(3, blocking_graph())
    s.add_graph(4, user_graph())
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    result = {}

    def runner():
        try:
            result["out"] = s.run_graph(3, [x])[0].numpy()
        except ge.GeError as e:  # allowed: an error, never a crash
            result["error"] = e

    _GATE["entered"].clear()
    _GATE["release"].clear()
    t = threading.Thread(target=runner)
    t.start()
    assert _GATE["entered"].wait(10), "the run never reached the blocking kernel"
    s.remove_graph(3)  # while the run is inside the graph
    assert 3 not in s.get_graph_ids()
    _GATE["release"].set()
    t.join(10)
    assert not t.is_alive()
    if "out" in result:
        np.testing.assert_allclose(result["out"], np.maximum(np.tanh(x), 0), rtol=1e-6)
    else:
        assert isinstance(result["error"], ge.GeError)
    with pytest.raises(ge.GeError):
        s.run_graph(3, [x])
    check_outputs(s.run_graph(4, [X, Y]))  # the other graph is untouched
    s.add_graph(3, blocking_graph())  # the id is free again
    _GATE["release"].set()
    np.testing.assert_allclose(s.run_graph(3, [x])[0].numpy(), np.maximum(np.tanh(x), 0), rtol=1e-6)


def test_remove_graph_races_with_runs():
    """Threads run graph 5 in a loop while another removes and re-adds it: every run either
    returns the right result or raises a GeError (graph not found)."""
    s = Session({"ge.graphCacheCapacity": "1"})
    s.add_graph(5, user_graph())
    stop = threading.Event()
    counts = {"ok": 0, "err": 0}
    lock = threading.Lock()

    def runner(k):
        while not stop.is_set():
            try:
                outs = s.run_graph(5, [X, Y])
            except ge.GeError:
                with lock:
                    counts["err"] += 1
                continue
            check_outputs(outs)
            with lock:
                counts["ok"] += 1

    threads = [threading.Thread(target=runner, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(200):
            s.remove_graph(5)
            s.add_graph(5, user_graph())
        # The graph is in the session now: let the runners get through at least once (bounded).
        for _ in range(3000):
            with lock:
                if counts["ok"] > 0 or any(not t.is_alive() for t in threads):
                    break
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert counts["ok"] > 0
    check_outputs(s.run_graph(5, [X, Y]))
