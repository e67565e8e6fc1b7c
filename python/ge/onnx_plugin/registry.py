"""The registry of ONNX Plugin descriptors (GE's ``ge.onnx_plugin.registry``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from ge._internal.descriptor_table import DescriptorTable
from ge._internal.plugin_loader import add_rollback_hook

__all__ = [
    "OnnxPluginDescriptor",
    "clear_registered_onnx_plugins",
    "get_registered_onnx_plugin_by_origin_type",
    "get_registered_onnx_plugin_dicts",
    "get_registered_onnx_plugins",
    "register_onnx_plugin",
    "unregister_onnx_plugins_of_module",
]


@dataclass(frozen=True)
class OnnxPluginDescriptor:
    """One bound ``parse_node`` callback: its key, the ONNX op it parses (``source`` in
    ``domain`` at ``opsets``, one origin type ``domain::opset::source`` per opset), the GE
    ``target`` op type, and the module that defined the callback."""

    descriptor_key: str
    source: str
    domain: str
    opsets: Tuple[int, ...]
    target: str
    origin_types: Tuple[str, ...]
    module_name: str
    parser_node: Callable[..., None] = field(compare=False, repr=False)

    def to_bridge_dict(self) -> dict:
        return {
            "descriptor_key": self.descriptor_key,
            "source": self.source,
            "domain": self.domain,
            "opsets": list(self.opsets),
            "target": self.target,
            "origin_types": list(self.origin_types),
            "module_name": self.module_name,
        }


class _Registry:
    """ONNX plugins by descriptor key and by origin type."""

    def __init__(self) -> None:
        self._table: DescriptorTable[OnnxPluginDescriptor] = DescriptorTable(
            lambda d: d.origin_types)

    def clear(self) -> None:
        self._table.clear()

    def register(self, descriptor: OnnxPluginDescriptor) -> OnnxPluginDescriptor:
        # All checks come before any change: an overlapping registration leaves nothing behind.
        with self._table.lock:
            if descriptor.descriptor_key in self._table.by_key:
                raise ValueError(
                    f"python ONNX Plugin descriptor_key already exists: {descriptor.descriptor_key}"
                )
            for origin_type in descriptor.origin_types:
                if origin_type in self._table.by_type:
                    raise ValueError(f"python ONNX Plugin origin type already exists: {origin_type}")
            self._table.add(descriptor)
        return descriptor

    def unregister_module(self, module_name: str) -> List[OnnxPluginDescriptor]:
        with self._table.lock:
            gone = [d for d in self._table.by_key.values()
                    if d.module_name == module_name or d.module_name.startswith(module_name + ".")]
            for d in gone:
                self._table.remove(d)
            return gone

    def get_all(self) -> List[OnnxPluginDescriptor]:
        return self._table.all()

    def get_by_origin_type(self, origin_type: str) -> Optional[OnnxPluginDescriptor]:
        return self._table.of_type(origin_type)


_REGISTRY = _Registry()
# A plugin file that fails part-way loses the plugins it registered, whichever loader imported it.
add_rollback_hook(_REGISTRY.unregister_module)


def register_onnx_plugin(descriptor: OnnxPluginDescriptor) -> OnnxPluginDescriptor:
    """Registers ``descriptor``; ValueError if its key or any of its origin types is taken
    (and then nothing is registered)."""
    return _REGISTRY.register(descriptor)


def clear_registered_onnx_plugins() -> None:
    _REGISTRY.clear()


def unregister_onnx_plugins_of_module(module_name: str) -> List[OnnxPluginDescriptor]:
    """Removes the descriptors whose callbacks a module (or its submodules) defined; returns
    them. Used when a plugin file fails part-way through its import."""
    return _REGISTRY.unregister_module(module_name)


def get_registered_onnx_plugins() -> List[OnnxPluginDescriptor]:
    return _REGISTRY.get_all()


def get_registered_onnx_plugin_dicts() -> List[dict]:
    return [item.to_bridge_dict() for item in get_registered_onnx_plugins()]


def get_registered_onnx_plugin_by_origin_type(origin_type: str) -> Optional[OnnxPluginDescriptor]:
    return _REGISTRY.get_by_origin_type(origin_type)
