"""``ge.allocator``: GE's external allocator API, ``Allocator`` and ``MemBlock``.

ge-rs keeps its own host memory: an allocator registered with
``Session.register_external_allocator`` is recorded and never called (see ``ge.session``).
"""

from ge.allocator.allocator import Allocator, MemBlock

__all__ = ["Allocator", "MemBlock"]
