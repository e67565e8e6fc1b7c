"""``onnx_plugin(*, source, domain, opsets, target)`` and ``OnnxPlugin.parse_node`` (GE's form)."""

from __future__ import annotations

import inspect
from collections.abc import Collection
from typing import Any, Callable, Optional, Tuple

from .registry import OnnxPluginDescriptor, register_onnx_plugin

__all__ = ["OnnxPlugin", "onnx_plugin"]


def _normalize_name(value: Any, field_name: str, *, reject_origin_separator: bool = False) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"onnx_plugin {field_name} must be a non-empty string")
    if reject_origin_separator and "::" in value:
        raise TypeError(f"onnx_plugin {field_name} must not contain '::'")
    return value


def _normalize_opsets(opsets: Any) -> Tuple[int, ...]:
    if isinstance(opsets, (str, bytes)) or not isinstance(opsets, Collection):
        raise TypeError("onnx_plugin opsets must be a collection of positive integers")
    if not opsets:
        raise ValueError("onnx_plugin opsets must not be empty")
    normalized = set()
    for opset in opsets:
        if type(opset) is not int:
            raise TypeError("onnx_plugin opsets must contain only integers")
        if opset <= 0:
            raise ValueError("onnx_plugin opsets must contain only positive integers")
        normalized.add(opset)
    return tuple(sorted(normalized))


class OnnxPlugin:
    """An ONNX source-to-target mapping awaiting its ``parse_node`` callback."""

    __slots__ = ("_descriptor", "_domain", "_opsets", "_source", "_target")

    def __init__(self, *, source: str, domain: str, opsets: Tuple[int, ...], target: str) -> None:
        self._source = source
        self._domain = domain
        self._opsets = opsets
        self._target = target
        self._descriptor: Optional[OnnxPluginDescriptor] = None

    def parse_node(self, fn: Callable[..., None]) -> Callable[..., None]:
        """Decorator: binds ``fn(node, target)`` and registers the plugin for one origin type
        ``domain::opset::source`` per opset. Returns ``fn``, with the descriptor as
        ``fn.__ge_onnx_plugin_descriptor__``. A plugin binds one callback; a Python function
        only; an origin type another plugin registered is refused (nothing is registered)."""
        if self._descriptor is not None:
            raise ValueError("OnnxPlugin parse_node is already bound")
        if not inspect.isfunction(fn):
            raise TypeError("OnnxPlugin parse_node expects a Python function")
        module_name = fn.__module__
        opsets = ",".join(map(str, self._opsets))
        descriptor = register_onnx_plugin(
            OnnxPluginDescriptor(
                descriptor_key=f"{module_name}:{fn.__qualname__}:{self._domain}:{self._source}:{opsets}",
                source=self._source,
                domain=self._domain,
                opsets=self._opsets,
                target=self._target,
                origin_types=tuple(f"{self._domain}::{opset}::{self._source}" for opset in self._opsets),
                module_name=module_name,
                parser_node=fn,
            )
        )
        self._descriptor = descriptor
        setattr(fn, "__ge_onnx_plugin_descriptor__", descriptor)
        return fn

    def __repr__(self) -> str:
        return (f"OnnxPlugin(source={self._source!r}, domain={self._domain!r}, opsets={self._opsets}, "
                f"target={self._target!r})")


def onnx_plugin(*, source: str, domain: str, opsets: Collection[int], target: str) -> OnnxPlugin:
    """An ONNX Plugin for ONNX op ``source`` of ``domain`` (``"ai.onnx"`` for the default domain)
    at the given ``opsets``, parsed into GE op type ``target``. TypeError for a missing or empty
    name, a ``source``/``domain`` containing ``'::'`` or opsets that are not a collection of
    integers; ValueError for empty or non-positive opsets."""
    return OnnxPlugin(
        source=_normalize_name(source, "source", reject_origin_separator=True),
        domain=_normalize_name(domain, "domain", reject_origin_separator=True),
        opsets=_normalize_opsets(opsets),
        target=_normalize_name(target, "target"),
    )
