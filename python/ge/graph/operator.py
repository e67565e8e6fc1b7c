"""``Operator``: GE's borrowed operator handle, as a plugin callback receives it.

A plugin never creates one: the code that calls the plugin does, with ``create_operator(node)``,
and the handle is valid only while the callback runs (``with create_operator(node) as op:``).
GE's members: ``name``, ``type``, ``set_attr``, and the port declarations ``register_input``,
``register_optional_input``, ``register_output``, ``register_dynamic_input``,
``register_dynamic_output``.

Here the handle is a node of a graph. A node's ports come from its operator prototype, so a
declaration is checked against the node: a port the prototype declares with that kind (and, for
a dynamic port, the node's instance count) is accepted, as GE accepts registering a port that
exists; declaring any other port raises "not supported", since a built node cannot grow ports.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NoReturn, Optional, Tuple

from ge._native import Node, _op_json

_OPERATOR_FACTORY_TOKEN = object()


class Operator:
    """A node borrowed for the duration of a callback."""

    __slots__ = ("_node", "_valid")

    def __init__(self, handle: Optional[Node] = None, token: object = None) -> None:
        if token is not _OPERATOR_FACTORY_TOKEN:
            raise RuntimeError("Operator objects should not be created directly.")
        if handle is None:
            raise ValueError("Operator handle cannot be None")
        if not isinstance(handle, Node):
            raise TypeError(f"Operator handle must be a ge.graph.Node, got {type(handle).__name__}")
        self._node = handle
        self._valid = True

    def __copy__(self) -> NoReturn:
        raise RuntimeError("Operator does not support copy")

    def __deepcopy__(self, memodict: Any) -> NoReturn:
        raise RuntimeError("Operator does not support deepcopy")

    def __enter__(self) -> "Operator":
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._valid = False

    @property
    def name(self) -> str:
        self._ensure_valid()
        return self._node.name

    @property
    def type(self) -> str:
        self._ensure_valid()
        return self._node.type

    def set_attr(self, name: str, value: Any) -> None:
        self._ensure_valid()
        _validate_name(name, "attribute")
        try:
            self._node.set_attr(name, value)
        except TypeError:
            raise
        except Exception as e:  # noqa: BLE001 - the graph's reason, under GE's message
            raise RuntimeError(f"Failed to set attribute '{name}' on Operator {self.name}: {e}") from None

    def register_input(self, name: str) -> None:
        self._register(name, "input", "register_input", "inputs", "required")

    def register_optional_input(self, name: str) -> None:
        self._register(name, "optional input", "register_optional_input", "inputs", "optional")

    def register_output(self, name: str) -> None:
        self._register(name, "output", "register_output", "outputs", "required")

    def register_dynamic_input(self, name: str, count: int) -> None:
        self._register_dynamic(name, count, "inputs")

    def register_dynamic_output(self, name: str, count: int) -> None:
        self._register_dynamic(name, count, "outputs")

    def __repr__(self) -> str:
        if not self._valid:
            return "Operator(<expired>)"
        return f"Operator({self._node.name!r}, {self._node.type!r})"

    # Port declarations, checked against the node's prototype.

    def _ports(self, method_name: str, name: str, direction: str) -> List[Dict[str, Any]]:
        text = _op_json(self._node.type)
        if text is None:
            raise RuntimeError(f"Failed to {method_name} '{name}' on Operator {self.name}: not supported: "
                               f"op type '{self._node.type}' has no prototype to declare ports in")
        return list(json.loads(text)[direction])

    def _register(self, name: str, kind_label: str, method_name: str, direction: str, kind: str) -> None:
        self._ensure_valid()
        _validate_name(name, kind_label)
        ports = self._ports(method_name, name, direction)
        declared = next((p for p in ports if p["name"] == name), None)
        if declared is None or declared["kind"] != kind:
            raise RuntimeError(self._undeclared(method_name, name, direction, kind, declared))

    def _register_dynamic(self, name: str, count: int, direction: str) -> None:
        self._ensure_valid()
        _validate_name(name, "dynamic port")
        if type(count) is not int:
            raise TypeError("Operator dynamic port count must be an integer")
        if count < 0 or count >= 1 << 32:
            raise ValueError("Operator dynamic port count must be in uint32 range")
        side = "input" if direction == "inputs" else "output"
        method_name = f"register dynamic {side}"
        ports = self._ports(method_name, name, direction)
        declared = next((p for p in ports if p["name"] == name), None)
        if declared is None or declared["kind"] != "dynamic":
            raise RuntimeError(self._undeclared(method_name, name, direction, "dynamic", declared))
        have, why = _dynamic_count(self._node, ports, direction)
        if have is None:
            raise RuntimeError(f"Failed to {method_name} '{name}' on Operator {self.name}: not supported: {why}")
        if have != count:
            raise RuntimeError(f"Failed to {method_name} '{name}' on Operator {self.name}: not supported: "
                               f"the node has {have} instances of '{name}' and a built node's instance "
                               f"count cannot change to {count}")

    def _undeclared(self, method_name: str, name: str, direction: str, kind: str,
                    declared: Optional[Dict[str, Any]]) -> str:
        what = "no such port" if declared is None else f"the port is {declared['kind']}, not {kind}"
        return (f"Failed to {method_name} '{name}' on Operator {self.name}: not supported: op type "
                f"'{self._node.type}' declares {direction} by its prototype ({what}); a built node "
                f"cannot gain ports")

    def _ensure_valid(self) -> None:
        if not self._valid:
            raise RuntimeError("Operator is only valid inside parse_node")


def _validate_name(name: Any, kind: str) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"Operator {kind} name must be a non-empty string")


def _dynamic_count(node: Node, ports: List[Dict[str, Any]], direction: str) -> Tuple[Optional[int], str]:
    """The instance count of a node's dynamic port: its port count less one per other IR port
    (optional ports are present on a node, connected or not)."""
    dynamic = [p for p in ports if p["kind"] == "dynamic"]
    if len(dynamic) != 1:
        return None, f"the prototype has {len(dynamic)} dynamic {direction}, whose instances cannot be told apart"
    total = node.get_inputs_size() if direction == "inputs" else node.get_outputs_size()
    return total - (len(ports) - 1), ""


def create_operator(handle: Node) -> Operator:
    """The Operator a plugin callback receives for ``handle``; use it as a context manager to
    end its validity with the callback."""
    return Operator(handle, _OPERATOR_FACTORY_TOKEN)
