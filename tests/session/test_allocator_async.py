"""GE's stream and allocator API on the host: ``ge.allocator`` (``Allocator``, ``MemBlock``),
``Session.register_external_allocator`` / ``unregister_external_allocator`` (recorded, never
called) and ``Session.run_graph_with_stream_async`` (runs at once, host outputs), with GE's
argument checks and failures."""

from __future__ import annotations

import logging
from typing import List

import numpy as np
import pytest

import ge
from ge.allocator import Allocator, MemBlock
from ge.error import GeError
from ge.es import GraphBuilder
from ge.es.all import Add, Div
from ge.graph import DataType, Graph, Placement, Tensor
from ge.session import Session
from ge.session.session import _external_allocator

F32 = DataType.DT_FLOAT
STREAM = 0x7F00_1234


class CountingAllocator(Allocator):
    """An allocator that counts its calls (ge-rs must make none)."""

    def __init__(self) -> None:
        self.calls: List[str] = []

    def malloc(self, size: int) -> MemBlock:
        self.calls.append("malloc")
        return MemBlock(0x1000, size)

    def free(self, block: MemBlock) -> None:
        self.calls.append("free")


def add_graph() -> Graph:
    b = GraphBuilder("add")
    x = b.create_input(0, data_type=F32, shape=[2, 3])
    y = b.create_input(1, data_type=F32, shape=[2, 3])
    return b.build_and_reset([Add(x, y)])


@pytest.fixture
def session():
    s = Session()
    yield s
    for stream in (STREAM, 1, 2):
        s.unregister_external_allocator(stream)


# ---------------------------------------------------------------------------------------------
# ge.allocator
# ---------------------------------------------------------------------------------------------


def test_allocator_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Allocator()  # type: ignore[abstract]

    class OnlyMalloc(Allocator):
        def malloc(self, size: int) -> MemBlock:
            return MemBlock(0, size)

    with pytest.raises(TypeError, match="free"):
        OnlyMalloc()  # type: ignore[abstract]
    a = CountingAllocator()
    block = a.malloc(64)
    a.free(block)
    assert a.calls == ["malloc", "free"]


def test_mem_block_is_an_address_and_a_size():
    block = MemBlock(addr=0xDEAD0000, size=256)
    assert (block.addr, block.size) == (0xDEAD0000, 256)
    with pytest.raises(AttributeError):
        block.addr = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        block.size = 1  # type: ignore[misc]
    assert repr(block) == "MemBlock(addr=0xdead0000, size=256)"


# ---------------------------------------------------------------------------------------------
# register / unregister
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", ["not_int", None, 1.0])
def test_register_checks_the_stream(session, stream):
    with pytest.raises(TypeError, match="^stream must be an integer$"):
        session.register_external_allocator(stream, CountingAllocator())
    with pytest.raises(TypeError, match="^stream must be an integer$"):
        session.unregister_external_allocator(stream)


@pytest.mark.parametrize("allocator", ["not_an_allocator", None, CountingAllocator])
def test_register_checks_the_allocator(session, allocator):
    with pytest.raises(TypeError, match="^allocator must be an Allocator instance$"):
        session.register_external_allocator(1, allocator)
    assert _external_allocator(1) is None


def test_a_null_stream_is_a_ge_error(session):
    with pytest.raises(GeError, match=r"^RegisterExternalAllocator failed; stream=0x0; the stream is null \(0\)$") as e:
        session.register_external_allocator(0, CountingAllocator())
    assert e.value.api_name == "RegisterExternalAllocator" and e.value.context == {"stream": "0x0"}
    with pytest.raises(GeError, match="^UnregisterExternalAllocator failed; stream=0x0; "):
        session.unregister_external_allocator(0)


def test_register_records_and_unregister_forgets(session, caplog):
    first, second = CountingAllocator(), CountingAllocator()
    with caplog.at_level(logging.DEBUG, logger="ge.session"):
        assert session.register_external_allocator(STREAM, first) is None
    assert _external_allocator(STREAM) is first
    assert any("recorded for stream 0x7f001234" in r.getMessage() and "does not call it" in r.getMessage()
               for r in caplog.records)
    session.register_external_allocator(STREAM, second)  # replaces, as GE's registry does
    assert _external_allocator(STREAM) is second
    # Process-wide, as GE's: another session sees the same registration.
    other = Session()
    assert other.unregister_external_allocator(STREAM) is None
    assert _external_allocator(STREAM) is None
    other.unregister_external_allocator(STREAM)  # nothing registered: not an error, as GE
    assert first.calls == [] and second.calls == []


# ---------------------------------------------------------------------------------------------
# run_graph_with_stream_async
# ---------------------------------------------------------------------------------------------


def inputs() -> List[Tensor]:
    return [Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), Tensor(np.ones((2, 3), np.float32))]


def test_runs_at_once_on_the_host_without_calling_the_allocator(session):
    allocator = CountingAllocator()
    session.register_external_allocator(STREAM, allocator)
    session.add_graph(1, add_graph())
    outs = session.run_graph_with_stream_async(1, STREAM, inputs())
    assert len(outs) == 1 and isinstance(outs[0], Tensor)
    want = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    np.testing.assert_array_equal(outs[0].numpy(), want)  # finished when the call returns
    # Placed on the device, as GE's outputs are; to_host() moves them (GE's examples call it).
    assert outs[0].get_placement() == Placement.PLACEMENT_DEVICE
    host = outs[0].to_host()
    assert host.get_placement() == Placement.PLACEMENT_HOST
    np.testing.assert_array_equal(host.numpy(), want)
    assert session.run_graph(1, inputs())[0].get_placement() == Placement.PLACEMENT_HOST
    np.testing.assert_array_equal(session.run_graph(1, inputs())[0].numpy(), want)
    assert allocator.calls == []
    session.unregister_external_allocator(STREAM)
    # Without an allocator (GE would use its default one) it runs the same.
    np.testing.assert_array_equal(session.run_graph_with_stream_async(1, 2, inputs())[0].numpy(), want)
    # numpy arrays, ge-rs's extra, here as in run_graph.
    x = np.zeros((2, 3), np.float32)
    assert session.run_graph_with_stream_async(1, 2, [x, x])[0].numpy().tolist() == [[0.0] * 3] * 2


def test_argument_checks(session):
    t = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="^Graph_id must be an integer$"):
        session.run_graph_with_stream_async("test", 1, [t])
    with pytest.raises(TypeError, match="^Stream must be an integer$"):
        session.run_graph_with_stream_async(0, None, [t])
    with pytest.raises(TypeError, match="^Stream must be an integer$"):
        session.run_graph_with_stream_async(0, "0x10", [t])
    with pytest.raises(TypeError, match="^inputs must be a list of Tensor$"):
        session.run_graph_with_stream_async(0, 1, t)
    with pytest.raises(TypeError, match="^inputs must be a list of Tensor$"):
        session.run_graph_with_stream_async(0, 1, (t, t))
    with pytest.raises(TypeError, match="^All elements in inputs must be the type of Tensor$"):
        session.run_graph_with_stream_async(0, 1, [0])


def test_failures_are_ge_errors_with_graph_id_and_stream(session):
    with pytest.raises(GeError, match=r"^RunGraphWithStreamAsync failed; graph_id=3, stream=0x1111; "
                                      r"graph id 3 is not in the session$") as e:
        session.run_graph_with_stream_async(3, 0x1111, [])
    assert e.value.api_name == "RunGraphWithStreamAsync"
    assert e.value.context == {"graph_id": 3, "stream": "0x1111"}
    with pytest.raises(GeError, match=r"^RunGraphWithStreamAsync failed; graph_id=3, stream=0x0; "
                                      r"the stream is null \(0\)$"):
        session.run_graph_with_stream_async(3, 0, [])


def test_a_kernel_failure_is_an_execution_error(session):
    b = GraphBuilder("div")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2])
    session.add_graph(5, b.build_and_reset([Div(x, x)]))
    with pytest.raises(ge.ExecutionError, match=r"^RunGraphWithStreamAsync failed; graph_id=5, stream=0x1; "
                                                r"node 'Div_0' \(Div\): integer division by zero"):
        session.run_graph_with_stream_async(5, 1, [np.array([1, 0], np.int32)])
