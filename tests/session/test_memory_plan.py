"""The memory plan (``Session.plan_memory``, the compile report's memory line) and the memory limit
(``ge.memoryLimit``, ``ge.ResourceError``): issue 18 point 1 (the plan's peak, reported) and issue
21 point 2 (a plan over the limit refused at compile, a buffer over it refused at run time, never
an out-of-memory kill)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, Fill, Mul, Relu, Sigmoid
from ge.graph import DataType, Graph
from ge.session import Session

F32 = DataType.DT_FLOAT
MIB = 1 << 20

KEYS = {"peak_bytes", "limit_bytes", "arena_bytes", "const_bytes", "input_bytes", "naive_bytes",
        "live_peak_bytes", "tensors", "unknown_tensors", "largest"}
TENSOR_KEYS = {"name", "op", "dtype", "shape", "bytes", "offset", "first_step", "last_step"}


def chain(n: int = 4, shape=(256, 1024)) -> Graph:
    """x -> Relu -> Sigmoid -> Relu ... (n steps): each intermediate read only by the next."""
    b = GraphBuilder("chain")
    y = b.create_input(0, data_type=F32, shape=list(shape))
    for i in range(n):
        y = Relu(y) if i % 2 == 0 else Sigmoid(y)
    return b.build_and_reset([y])


def mem_total() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def run_chain(options=None, n=4, shape=(256, 1024)):
    s = Session(options or {})
    s.add_graph(1, chain(n, shape))
    x = np.ones(shape, np.float32)
    return s, x


# ---- the plan, reported ----


def test_plan_memory_before_and_after_the_first_run():
    s, x = run_chain()
    assert s.plan_memory(1) is None
    s.run_graph(1, [x])
    m = s.plan_memory(1)
    assert set(m) == KEYS
    one = 256 * 1024 * 4
    assert m["input_bytes"] == one
    assert m["const_bytes"] == 0
    assert m["tensors"] == 4 and m["unknown_tensors"] == 0
    # Four intermediates of 1 MiB, each written over the one before it (in place, as the
    # replay runs them): one buffer, not four.
    assert m["naive_bytes"] == 4 * one
    assert m["live_peak_bytes"] == one
    assert m["arena_bytes"] == one
    assert m["peak_bytes"] == m["arena_bytes"] + m["const_bytes"] + m["input_bytes"]
    assert m["limit_bytes"] == s.options["ge.memoryLimit"]
    largest = m["largest"]
    assert len(largest) == 4
    for t in largest:
        assert set(t) == TENSOR_KEYS
        assert t["bytes"] == one and t["shape"] == [256, 1024] and t["dtype"] == "DT_FLOAT"
        assert t["offset"] in (0, one)
        assert t["first_step"] <= t["last_step"]
    # The graph output lives to the last step.
    assert max(t["last_step"] for t in largest) == 3


def test_the_compile_report_has_the_memory_line():
    s, x = run_chain()
    s.run_graph(1, [x])
    report = s.compile_report(1)
    m = s.plan_memory(1)
    line = next(ln for ln in report.splitlines() if "memory:" in ln)
    assert f"peak {m['peak_bytes']} bytes" in line
    assert f"arena {m['arena_bytes']}" in line and f"naive sum {m['naive_bytes']}" in line


def test_unknown_sizes_are_counted_not_placed():
    # Fill with dims fed at run time: its output's shape is unknown at compile.
    b = GraphBuilder("g")
    dims = b.create_input(0, data_type=DataType.DT_INT64, shape=[2])
    g = b.build_and_reset([Relu(Fill(dims, 1.0))])
    s = Session()
    s.add_graph(1, g)
    (out,) = s.run_graph(1, [np.array([3, 4], np.int64)])
    assert out.numpy().shape == (3, 4)
    m = s.plan_memory(1)
    assert m["unknown_tensors"] >= 1
    assert all(t["bytes"] is not None for t in m["largest"])


@given(st.lists(st.sampled_from(["relu", "sigmoid", "add_x", "mul_prev"]), min_size=1, max_size=12),
       st.integers(1, 64), st.integers(1, 64))
def test_plan_invariants_on_random_graphs(ops, rows, cols):
    """The arena holds at least the bytes alive at the busiest step and at most one buffer per
    tensor; offsets leave room for every tensor inside the arena."""
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[rows, cols])
    prev, y = x, x
    for op in ops:
        nxt = {"relu": lambda: Relu(y), "sigmoid": lambda: Sigmoid(y), "add_x": lambda: Add(y, x),
               "mul_prev": lambda: Mul(y, prev)}[op]()
        prev, y = y, nxt
    s = Session({"ge.graphMode": "on"})
    s.add_graph(1, b.build_and_reset([y]))
    s.run_graph(1, [np.ones((rows, cols), np.float32)])
    m = s.plan_memory(1)
    assert m["live_peak_bytes"] <= m["arena_bytes"] <= m["naive_bytes"]
    for t in m["largest"]:
        assert t["offset"] % 64 == 0
        assert t["offset"] + t["bytes"] <= m["arena_bytes"]


# ---- the option ----


def test_the_option_in_bytes_and_percent():
    assert Session({"ge.memoryLimit": "123456789"}).options["ge.memoryLimit"] == 123456789
    total = mem_total()
    if total is None:  # not Linux: no limit by default, and a percentage is refused (documented)
        with pytest.raises(ValueError, match="ge.memoryLimit"):
            Session({"ge.memoryLimit": "50%"})
        return
    assert abs(Session({"ge.memoryLimit": "50%"}).options["ge.memoryLimit"] - total // 2) <= 1
    assert abs(Session({"ge.memoryLimit": "12.5%"}).options["ge.memoryLimit"] - total // 8) <= 1
    # The default: 80% of the memory available (less than the machine's total).
    assert 0 < Session().options["ge.memoryLimit"] <= total


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "lots", "", "0%", "101%", "%", "4GB"])
@pytest.mark.parametrize("level", ["session", "graph"])
def test_a_bad_limit_is_the_usual_option_error(value, level):
    with pytest.raises(ValueError, match="ge.memoryLimit") as info:
        if level == "session":
            Session({"ge.memoryLimit": value})
        else:
            Session().add_graph(1, chain(), {"ge.memoryLimit": value})
    assert isinstance(info.value, ge.GeError)


# ---- refusal at compile ----


def test_a_plan_over_the_limit_is_a_resource_error_naming_its_tensors():
    assert issubclass(ge.ResourceError, ge.GeError)
    assert ge.errors.ResourceError is ge.ResourceError
    # Peak: 1 MiB of input and one 1 MiB buffer the chain's intermediates are written over
    # in turn (in place); the limit 1.5 MiB.
    s, x = run_chain({"ge.memoryLimit": str(3 * MIB // 2)})
    with pytest.raises(ge.ResourceError) as info:
        s.run_graph(1, [x])
    text = str(info.value)
    m = s.plan_memory(1)  # the refused plan stays readable
    assert m["peak_bytes"] == 2 * MIB
    assert f"needs {2 * MIB} bytes" in text
    assert f"memory limit of {3 * MIB // 2} bytes (ge.memoryLimit)" in text
    assert "graph 'chain'" in text
    for t in m["largest"][:5]:
        assert f"'{t['name']}' ({t['op']}) DT_FLOAT [256, 1024]: {MIB} bytes" in text
    assert info.value.api_name == "RunGraph"
    # Nothing was cached; the session stays usable for a graph that fits.
    assert s.graph_cache_stats(1)["captures"] == 0
    s.add_graph(2, chain(shape=(4, 4)))
    (out,) = s.run_graph(2, [np.ones((4, 4), np.float32)])
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    np.testing.assert_allclose(out.numpy(), sig(sig(np.ones((4, 4)))), rtol=1e-6)  # relu, sigmoid x2


def test_the_graph_option_overrides_the_session_limit():
    s = Session({"ge.memoryLimit": str(1 << 40)})
    s.add_graph(1, chain(), {"ge.memoryLimit": str(MIB)})
    s.add_graph(2, chain())
    x = np.ones((256, 1024), np.float32)
    with pytest.raises(ge.ResourceError):
        s.run_graph(1, [x])
    s.run_graph(2, [x])
    assert s.plan_memory(1)["limit_bytes"] == MIB
    assert s.plan_memory(2)["limit_bytes"] == 1 << 40


def fill_of(dims) -> Graph:
    b = GraphBuilder("fill")
    return b.build_and_reset([Fill(b.create_const(np.array(dims, np.int64)), 1.0)])


@pytest.mark.parametrize("mode", ["on", "off"])
def test_the_issues_fill_is_refused_not_killed(mode):
    """Issue 21's example: Fill of [2**17, 2**17] float32 (64 GiB), refused at compile with the
    default limit (80% of the memory available). On a machine whose default limit holds 64 GiB
    a leading dim makes the Fill larger than the limit, so the default is tested everywhere."""
    s = Session({"ge.graphMode": mode})
    k = s.options["ge.memoryLimit"] // (1 << 36) + 1
    dims = [2**17, 2**17] if k == 1 else [k, 2**17, 2**17]
    shown = ", ".join(map(str, dims))
    s.add_graph(1, fill_of(dims))
    with pytest.raises(ge.ResourceError, match=rf"\(Fill\) DT_FLOAT \[{shown}\]: {k * 68719476736} bytes"):
        s.run_graph(1, [])


@pytest.mark.parametrize("mode", ["on", "off"])
def test_fill_over_an_explicit_limit(mode):
    s = Session({"ge.graphMode": mode, "ge.memoryLimit": str(1 << 30)})
    s.add_graph(1, fill_of([2**17, 2**17]))
    with pytest.raises(ge.ResourceError, match="memory limit of 1073741824 bytes"):
        s.run_graph(1, [])
    s.add_graph(2, fill_of([2, 3]))
    np.testing.assert_array_equal(s.run_graph(2, [])[0].numpy(), np.ones((2, 3), np.float32))


# ---- the bound at run time (sizes known only then) ----


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_buffer_over_the_limit_at_run_time_is_a_resource_error(mode):
    """Fill with dims fed at run time (eager or replayed): its size is unknown at compile, so the
    kernel's allocation is checked against the limit instead (4 GiB asked, 1 GiB allowed)."""
    b = GraphBuilder("g")
    dims = b.create_input(0, data_type=DataType.DT_INT64, shape=[2])
    s = Session({"ge.graphMode": mode, "ge.memoryLimit": str(1 << 30)})
    s.add_graph(1, b.build_and_reset([Fill(dims, 1.0)]))
    with pytest.raises(ge.ResourceError) as info:
        s.run_graph(1, [np.array([2**15, 2**15], np.int64)])
    text = str(info.value)
    assert "(Fill)" in text and "over the memory limit of 1073741824 bytes" in text, text
    assert f"{2**32} bytes" in text
    # A size within the limit runs.
    (out,) = s.run_graph(1, [np.array([2, 2], np.int64)])
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 2), np.float32))
