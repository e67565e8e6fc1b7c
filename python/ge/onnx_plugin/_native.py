"""``OnnxNode``: the read-only view of one ONNX node a ``parse_node`` callback receives.

Only the importer creates one (GE's native bridge does in GE); ``OnnxNode()`` raises TypeError.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Tuple

from ge._internal.accessors import read_only

__all__ = ["OnnxNode"]


class OnnxNode:
    """One ONNX node: ``name``, ``origin_type`` (the ONNX op type), ``inputs`` and ``outputs``
    (the value names, ``""`` for an absent optional position) and ``attrs`` (a read-only mapping
    of int, float, str and homogeneous lists of them)."""

    __slots__ = ("_name", "_origin_type", "_inputs", "_outputs", "_attrs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("OnnxNode objects are created by the ONNX importer only")

    name: str = read_only("_name")
    origin_type: str = read_only("_origin_type")
    inputs: Tuple[str, ...] = read_only("_inputs")
    outputs: Tuple[str, ...] = read_only("_outputs")
    attrs: Mapping[str, Any] = read_only("_attrs")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"OnnxNode is read-only: cannot set '{name}'")

    def __repr__(self) -> str:
        return f"OnnxNode({self._name!r}, {self._origin_type!r}, {len(self._inputs)} inputs)"


def _attr_value(name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str, list, tuple)):
        raise TypeError("OnnxNode attrs only supports int, float, string and homogeneous lists")
    if isinstance(value, (list, tuple)):
        kinds = {type(v) for v in value}
        if len(kinds) > 1 or not kinds <= {int, float, str}:
            raise TypeError("OnnxNode attrs only supports int, float, string and homogeneous lists")
        return list(value)
    return value


def _make_onnx_node(name: str, origin_type: str, inputs: Tuple[str, ...], outputs: Tuple[str, ...],
                    attrs: Mapping[str, Any]) -> OnnxNode:
    """The importer's factory (not part of GE's API)."""
    values = {}
    for key, value in attrs.items():
        if not isinstance(key, str) or not key:
            raise ValueError("OnnxNode attribute name must be a non-empty string")
        values[key] = _attr_value(key, value)
    node = object.__new__(OnnxNode)
    for slot, value in (("_name", name), ("_origin_type", origin_type), ("_inputs", tuple(inputs)),
                        ("_outputs", tuple(outputs)), ("_attrs", MappingProxyType(values))):
        object.__setattr__(node, slot, value)
    return node
