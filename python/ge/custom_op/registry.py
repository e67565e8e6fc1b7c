"""``@register_op_impl``: the registry of Python custom operator implementations."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Type

from ge._internal.descriptor_table import DescriptorTable


INTERFACE_EAGER_EXECUTE = "eager_execute"
INTERFACE_ANNOTATED_ARGS = "annotated_args"
# (interface, the method that provides it), in GE's order.
_INTERFACES = ((INTERFACE_EAGER_EXECUTE, "execute"),
               (INTERFACE_ANNOTATED_ARGS, "declare_launch_args"))


@dataclass(frozen=True)
class OpImplDescriptor:
    """One registered implementation class."""

    descriptor_key: str
    op_type: str
    module_name: str
    class_name: str
    interfaces: List[str] = field(default_factory=list)
    cls: Type[Any] = field(compare=False, repr=False, default=object)

    def to_bridge_dict(self) -> dict:
        return {"descriptor_key": self.descriptor_key, "op_type": self.op_type,
                "module_name": self.module_name, "class_name": self.class_name,
                "interfaces": list(self.interfaces)}


_TABLE: DescriptorTable[OpImplDescriptor] = DescriptorTable(lambda d: (d.op_type,))
# Called with each new descriptor (the operator library hooks in here).
_LISTENERS: List[Callable[[OpImplDescriptor], None]] = []
_CLEAR_LISTENERS: List[Callable[[List[OpImplDescriptor]], None]] = []


def _register(descriptor: OpImplDescriptor) -> OpImplDescriptor:
    with _TABLE.lock:
        if descriptor.descriptor_key in _TABLE.by_key:
            raise ValueError(
                f"python op impl descriptor_key already exists: {descriptor.descriptor_key}")
        if descriptor.op_type in _TABLE.by_type:
            raise ValueError(f"python op impl type already exists: {descriptor.op_type}")
        _TABLE.add(descriptor)
    for listener in list(_LISTENERS):
        listener(descriptor)
    return descriptor


def _interfaces_of(cls: Type[Any]) -> List[str]:
    found = [name for name, method in _INTERFACES if callable(getattr(cls, method, None))]
    if not found:
        methods = ", ".join(method for _, method in _INTERFACES)
        raise TypeError(f"register_op_impl class '{cls.__module__}.{cls.__qualname__}' must "
                        f"implement at least one supported method: {methods}")
    return found


def register_op_impl(*, op_type: str) -> Callable[[Type[Any]], Type[Any]]:
    """Registers the decorated class as the implementation of ``op_type``: ``execute`` (the
    eager kernel; on this CPU backend a HOST kernel) and/or ``declare_launch_args`` (annotated
    kernel arguments for an NPU launch)."""
    if not isinstance(op_type, str) or not op_type:
        raise TypeError("register_op_impl op_type must be a non-empty string")

    def decorator(cls: Type[Any]) -> Type[Any]:
        if not inspect.isclass(cls):
            raise TypeError("register_op_impl expects a class")
        if inspect.isabstract(cls):
            raise TypeError("register_op_impl expects a concrete class")
        descriptor = OpImplDescriptor(
            descriptor_key=f"{cls.__module__}:{cls.__name__}:{op_type}", op_type=op_type,
            module_name=cls.__module__, class_name=cls.__name__,
            interfaces=_interfaces_of(cls), cls=cls)
        _register(descriptor)
        cls.__ge_op_impl_descriptor__ = descriptor
        return cls

    return decorator


def clear_registered_op_impls() -> None:
    """Forgets every registered implementation (their CPU kernels are removed too)."""
    gone = _TABLE.clear()
    for listener in list(_CLEAR_LISTENERS):
        listener(gone)


def get_registered_op_impls() -> List[OpImplDescriptor]:
    return _TABLE.all()


def get_registered_op_impl_dicts() -> List[dict]:
    return [d.to_bridge_dict() for d in get_registered_op_impls()]


def get_registered_op_impl_by_descriptor_key(descriptor_key: str) -> Optional[OpImplDescriptor]:
    return _TABLE.of_key(descriptor_key)


def _impl_of_type(op_type: str) -> Optional[OpImplDescriptor]:
    return _TABLE.of_type(op_type)
