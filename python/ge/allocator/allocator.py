"""GE's ``Allocator`` (an abstract base: ``malloc(size) -> MemBlock`` and ``free(block)``) and
``MemBlock`` (an address and a size in bytes).

On an NPU, GE calls a registered allocator (``Session.register_external_allocator(stream,
allocator)``) for the device memory of the outputs of ``run_graph_with_stream_async`` on that
stream. ge-rs keeps its own memory (on the CPU backend, device memory is host memory): a
registered allocator is recorded and never called.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ge._internal.accessors import read_only

__all__ = ["Allocator", "MemBlock"]


class MemBlock:
    """A block of memory an ``Allocator`` handed out: ``addr`` (an integer address) and ``size``
    (bytes), both read-only."""

    def __init__(self, addr: int, size: int) -> None:
        self._addr = addr
        self._size = size

    addr: int = read_only("_addr")
    size: int = read_only("_size")

    def __repr__(self) -> str:
        return f"MemBlock(addr=0x{self._addr:x}, size={self._size})"


class Allocator(ABC):
    """Base class of external allocators: subclass it and implement ``malloc`` and ``free``.

    Register an instance for a stream with ``Session.register_external_allocator(stream,
    allocator)``. In ge-rs (host memory only) a registered allocator is recorded and never called.
    """

    @abstractmethod
    def malloc(self, size: int) -> MemBlock:
        """Allocates ``size`` bytes; returns their ``MemBlock``. Raises ``MemoryError`` when it
        cannot."""
        raise NotImplementedError

    @abstractmethod
    def free(self, block: MemBlock) -> None:
        """Frees a block ``malloc`` returned."""
        raise NotImplementedError
