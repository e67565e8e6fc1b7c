"""The pass registry: ``register_fusion_pass``, ``register_decompose_pass`` and the queries.

Registrations go to the registry in Rust (pass-bridge), which the executor reads; this module keeps
the ``PassDescriptor`` objects (with their classes) that GE's Python API returns.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterable as IterableABC
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Type, TypeVar

from ge import _native

from .base import DecomposePass, FusionBasePass, PassStage, PatternFusionPass

__all__ = [
    "PASS_KIND_FUSION_BASE",
    "PASS_KIND_PATTERN_FUSION",
    "PASS_KIND_DECOMPOSE",
    "PassDescriptor",
    "register_fusion_pass",
    "register_decompose_pass",
    "get_registered_passes",
    "get_registered_pass_dicts",
    "get_registered_pass_by_descriptor_key",
    "clear_registered_passes",
    "unregister_pass",
]

PASS_KIND_FUSION_BASE = "fusion_base"
PASS_KIND_PATTERN_FUSION = "pattern_fusion"
PASS_KIND_DECOMPOSE = "decompose"
_KIND_BASE = {
    PASS_KIND_FUSION_BASE: FusionBasePass,
    PASS_KIND_PATTERN_FUSION: PatternFusionPass,
    PASS_KIND_DECOMPOSE: DecomposePass,
}

C = TypeVar("C", bound=type)


@dataclass(frozen=True)
class PassDescriptor:
    """A registered pass: ``descriptor_key`` = "module:class:name"."""

    descriptor_key: str
    pass_name: str
    module_name: str
    class_name: str
    stage: PassStage
    kind: str
    cls: Type[FusionBasePass]
    op_types: List[str] = field(default_factory=list)

    def to_bridge_dict(self) -> dict:
        return {
            "descriptor_key": self.descriptor_key,
            "pass_name": self.pass_name,
            "module_name": self.module_name,
            "class_name": self.class_name,
            "stage": self.stage.value,
            "kind": self.kind,
            "op_types": list(self.op_types),
        }


_lock = threading.RLock()
_descriptors: Dict[str, PassDescriptor] = {}


def _stage(stage: object) -> PassStage:
    if isinstance(stage, PassStage):
        return stage
    try:
        return PassStage(stage)
    except ValueError:
        known = ", ".join(s.name for s in PassStage)
        raise ValueError(f"unknown pass stage {stage!r} (known: {known})") from None


def _register(cls: Type[FusionBasePass], *, kind: str, name: str, stage: object, op_types: List[str]) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError("a pass name must be a non-empty string")
    st = _stage(stage)
    with _lock:
        key = _native._register_pass(name, cls.__module__, cls.__qualname__, kind, st.value, op_types, cls)
        d = PassDescriptor(
            descriptor_key=key,
            pass_name=name,
            module_name=cls.__module__,
            class_name=cls.__qualname__,
            stage=st,
            kind=kind,
            cls=cls,
            op_types=list(op_types),
        )
        _descriptors[key] = d
    setattr(cls, "__ge_pass_descriptor__", d)


def register_fusion_pass(*, name: str, stage: PassStage, kind: Optional[str] = None) -> Callable[[C], C]:
    """Class decorator: registers a ``FusionBasePass`` or ``PatternFusionPass`` subclass.

    ``kind`` defaults to "pattern_fusion" for PatternFusionPass subclasses, else "fusion_base".
    A name or descriptor key registered before is a ValueError.
    """

    def decorator(cls: C) -> C:
        if not inspect.isclass(cls) or not issubclass(cls, FusionBasePass):
            raise TypeError("register_fusion_pass expects a FusionBasePass subclass")
        k = kind or (PASS_KIND_PATTERN_FUSION if issubclass(cls, PatternFusionPass) else PASS_KIND_FUSION_BASE)
        if k not in (PASS_KIND_FUSION_BASE, PASS_KIND_PATTERN_FUSION):
            raise ValueError(f"register_fusion_pass: kind must be fusion_base or pattern_fusion, got {k!r}")
        if not issubclass(cls, _KIND_BASE[k]):
            raise TypeError(f"a {k} pass must subclass {_KIND_BASE[k].__name__}")
        _register(cls, kind=k, name=name, stage=stage, op_types=[])
        return cls

    return decorator


def _op_types(op_types: Iterable[str]) -> List[str]:
    if isinstance(op_types, (str, bytes)) or not isinstance(op_types, IterableABC):
        raise TypeError("register_decompose_pass op_types must be an iterable of strings")
    out = list(op_types)
    if not out:
        raise ValueError("register_decompose_pass needs at least one op type")
    if not all(isinstance(t, str) and t for t in out):
        raise TypeError("register_decompose_pass op_types must be non-empty strings")
    return out


def register_decompose_pass(*, name: str, stage: PassStage, op_types: Iterable[str]) -> Callable[[C], C]:
    """Class decorator: registers a ``DecomposePass`` subclass for ``op_types`` (also set as the
    class attribute ``op_types``)."""
    types = _op_types(op_types)

    def decorator(cls: C) -> C:
        if not inspect.isclass(cls) or not issubclass(cls, DecomposePass):
            raise TypeError("register_decompose_pass expects a DecomposePass subclass")
        cls.op_types = list(types)  # type: ignore[attr-defined]
        _register(cls, kind=PASS_KIND_DECOMPOSE, name=name, stage=stage, op_types=types)
        return cls

    return decorator


def get_registered_passes() -> List[PassDescriptor]:
    """The registered passes, in registration order."""
    with _lock:
        return [_descriptors[k] for k in _native._registered_pass_keys() if k in _descriptors]


def get_registered_pass_dicts() -> List[dict]:
    return [d.to_bridge_dict() for d in get_registered_passes()]


def get_registered_pass_by_descriptor_key(descriptor_key: str) -> Optional[PassDescriptor]:
    with _lock:
        return _descriptors.get(descriptor_key)


def unregister_pass(descriptor_key: str) -> bool:
    """Removes one pass; returns whether it was registered."""
    with _lock:
        _descriptors.pop(descriptor_key, None)
        return bool(_native._unregister_pass(descriptor_key))


def clear_registered_passes() -> None:
    """Removes every registered pass."""
    with _lock:
        _descriptors.clear()
        _native._clear_passes()
