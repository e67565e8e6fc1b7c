"""The table behind GE's descriptor registries (custom-op prototypes in ``custom_op/proto.py``,
implementations in ``custom_op/registry.py``, ONNX plugins in ``onnx_plugin/registry.py``):
registered descriptors by descriptor key and by the op types each one claims, under one lock."""

from __future__ import annotations

import threading
from typing import Callable, Dict, Generic, Iterable, List, Optional, Protocol, TypeVar


class _Descriptor(Protocol):
    @property
    def descriptor_key(self) -> str: ...


D = TypeVar("D", bound=_Descriptor)


class DescriptorTable(Generic[D]):
    """Descriptors by key (``by_key``) and by type (``by_type``: each of the types
    ``types_of(descriptor)`` names, e.g. its op type). ``lock`` (re-entrant) guards both maps;
    a registry holds it while it checks a descriptor and then ``add``s it."""

    def __init__(self, types_of: Callable[[D], Iterable[str]]) -> None:
        self.lock = threading.RLock()
        self.by_key: Dict[str, D] = {}
        self.by_type: Dict[str, D] = {}
        self._types_of = types_of

    def add(self, d: D) -> None:
        with self.lock:
            self.by_key[d.descriptor_key] = d
            for t in self._types_of(d):
                self.by_type[t] = d

    def remove(self, d: D) -> None:
        with self.lock:
            del self.by_key[d.descriptor_key]
            for t in self._types_of(d):
                self.by_type.pop(t, None)

    def clear(self) -> List[D]:
        """Forgets every descriptor; returns those it held, in registration order."""
        with self.lock:
            gone = list(self.by_key.values())
            self.by_key.clear()
            self.by_type.clear()
        return gone

    def all(self) -> List[D]:
        """Every descriptor, in registration order."""
        with self.lock:
            return list(self.by_key.values())

    def of_key(self, descriptor_key: str) -> Optional[D]:
        with self.lock:
            return self.by_key.get(descriptor_key)

    def of_type(self, type_name: str) -> Optional[D]:
        with self.lock:
            return self.by_type.get(type_name)
