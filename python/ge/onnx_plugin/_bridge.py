"""How ONNX Plugins reach ``ge.onnx.load`` (GE's ``ge.onnx_plugin._bridge``).

GE's parser creates the target operator and calls ``call_parse_node`` with a borrowed handle. Here
the importer calls a Python translator per ``domain::source`` a plugin registers
(``sync_translators``); for a node whose ``domain::opset::source`` has a plugin it

1. hands ``parse_node`` an ``OnnxNode`` view and a ``ge.graph.Operator`` for the target op type
   that records what the callback sets (attributes, dynamic port counts; ports are checked against
   the target's prototype), then
2. builds the target node from the record: the node's inputs go to the target's input ports in
   order (a dynamic port takes its registered count, or all remaining inputs when it is the only
   dynamic one), required attributes must have been set, others default, attributes the prototype
   does not declare are set on the node as given; the target's outputs, flattened in order, become
   the node's outputs.

A node whose op type a plugin registers for other opsets only falls back to the built-in
translator of that op type if there is one, and is otherwise refused.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Set

from ge._native import (
    _call_op,
    _onnx_register_translator,
    _onnx_translator_keys,
    _onnx_unregister_translator,
    _op_json,
)
from ge.graph.operator import Operator, create_operator

from ._native import OnnxNode, _make_onnx_node
from .bootstrap import load_onnx_plugins, load_onnx_plugins_isolated
from .registry import (
    OnnxPluginDescriptor,
    get_registered_onnx_plugin_by_origin_type,
    get_registered_onnx_plugin_dicts,
    get_registered_onnx_plugins,
)

DEFAULT_DOMAIN = "ai.onnx"


def load_and_get_onnx_plugin_descriptors() -> list:
    """GE's bridge entry: loads the plugins of ``ASCEND_CUSTOM_OPP_PATH`` and returns the
    registered descriptors as dicts."""
    load_onnx_plugins()
    return get_registered_onnx_plugin_dicts()


def call_parse_node(origin_type: str, node: OnnxNode, operator_handle: Any) -> None:
    """Runs the ``parse_node`` callback registered for ``origin_type`` on ``node`` and the
    target operator (a ``ge.graph.Node`` handle, or an ``Operator``); the operator is valid only
    during the call. KeyError if no plugin registers ``origin_type``; TypeError if the callback
    returns something other than None."""
    descriptor = get_registered_onnx_plugin_by_origin_type(origin_type)
    if descriptor is None:
        raise KeyError(f"python ONNX Plugin is not registered: {origin_type}")
    target = operator_handle if isinstance(operator_handle, Operator) else create_operator(operator_handle)
    with target:
        result = descriptor.parser_node(node, target)
        if result is not None:
            raise TypeError("ONNX Plugin parse_node callback must return None")


# ---- the target operator a callback fills in before the node exists ----


class _PendingNode:
    """What ``Operator`` reads of its node (name and type) before the node is built."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, op_type: str) -> None:
        self.name = name
        self.type = op_type


class _PendingOperator(Operator):
    """An ``Operator`` for a node still to be built: ``set_attr`` and the dynamic port counts
    are recorded; port declarations are checked against the target's prototype."""

    __slots__ = ("_attrs", "_counts")

    def __init__(self, name: str, op_type: str) -> None:  # noqa: D107 - not Operator's factory
        self._node = _PendingNode(name, op_type)  # type: ignore[assignment]
        self._valid = True
        self._attrs: Dict[str, Any] = {}
        self._counts: Dict[str, Dict[str, int]] = {"inputs": {}, "outputs": {}}

    def set_attr(self, name: str, value: Any) -> None:
        self._ensure_valid()
        if not isinstance(name, str) or not name:
            raise TypeError("Operator attribute name must be a non-empty string")
        self._attrs[name] = value

    def _register_dynamic(self, name: str, count: int, direction: str) -> None:
        self._ensure_valid()
        if not isinstance(name, str) or not name:
            raise TypeError("Operator dynamic port name must be a non-empty string")
        if type(count) is not int:
            raise TypeError("Operator dynamic port count must be an integer")
        if count < 0 or count >= 1 << 32:
            raise ValueError("Operator dynamic port count must be in uint32 range")
        method_name = f"register dynamic {'input' if direction == 'inputs' else 'output'}"
        declared = next((p for p in self._ports(method_name, name, direction) if p["name"] == name), None)
        if declared is None or declared["kind"] != "dynamic":
            raise RuntimeError(self._undeclared(method_name, name, direction, "dynamic", declared))
        self._counts[direction][name] = count


def _dynamic_counts(ports: List[Dict[str, Any]], given: Dict[str, int], available: int, what: str,
                    label: str) -> Dict[str, int]:
    dynamic = [p["name"] for p in ports if p["kind"] == "dynamic"]
    counts = {n: given[n] for n in dynamic if n in given}
    missing = [n for n in dynamic if n not in counts]
    if len(missing) == 1:
        counts[missing[0]] = max(available - (len(ports) - 1) - sum(counts.values()), 0)
    elif missing:
        raise ValueError(f"{label}: the target has several dynamic {what} ({', '.join(missing)}); "
                         f"parse_node must register_dynamic_{what[:-1]} each")
    return counts


def _flatten(value: Any) -> List[Any]:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flatten(item)]
    return [value]


def _build_target(ctx: Any, origin_type: str, descriptor: OnnxPluginDescriptor,
                  op: _PendingOperator) -> List[Any]:
    label = f"ONNX Plugin {origin_type} -> {descriptor.target}"
    proto = json.loads(_op_json(descriptor.target))
    if proto.get("subgraphs"):
        raise ValueError(f"{label}: not supported: a target op type with subgraphs")
    inputs: List[Any] = list(ctx.inputs)
    in_ports = proto["inputs"]
    in_counts = _dynamic_counts(in_ports, op._counts["inputs"], len(inputs), "inputs", label)
    slots = sum(in_counts.get(p["name"], 1) for p in in_ports)
    if len(inputs) > slots:
        raise ValueError(f"{label}: node '{ctx.name}' has {len(inputs)} inputs, the target takes {slots}")
    inputs += [None] * (slots - len(inputs))
    args: List[Any] = []
    pos = 0
    for port in in_ports:
        if port["kind"] == "dynamic":
            count = in_counts[port["name"]]
            args.append(inputs[pos:pos + count])
            pos += count
        else:
            args.append(inputs[pos])
            pos += 1
    attrs = dict(op._attrs)
    values: List[Any] = []
    for attr in proto["attrs"]:
        if attr["name"] in attrs:
            values.append(attrs.pop(attr["name"]))
        elif "default" in attr:
            values.append(attr["default"])
        elif attr.get("required"):
            raise ValueError(f"{label}: parse_node did not set the required attribute '{attr['name']}'")
        else:
            values.append(None)
    out_ports = proto["outputs"]
    out_counts = _dynamic_counts(out_ports, op._counts["outputs"], ctx.num_outputs, "outputs", label)
    counts = tuple(out_counts[p["name"]] for p in out_ports if p["kind"] == "dynamic")
    result = _call_op(descriptor.target, tuple(args), tuple(values), None, counts or None, ctx.builder)
    outputs = _flatten(result)
    if outputs and attrs:
        node = outputs[0].get_producer()
        for name, value in attrs.items():
            node.set_attr(name, value)
    if len(outputs) < ctx.num_outputs:
        raise ValueError(f"{label}: node '{ctx.name}' declares {ctx.num_outputs} outputs, the target "
                         f"produces {len(outputs)}")
    return outputs[:ctx.num_outputs]


# ---- translators for ge.onnx.load ----

_installed: Dict[str, bool] = {}  # translator key -> whether another translator had it before


def _translator_key(domain: str, source: str) -> str:
    return source if domain == DEFAULT_DOMAIN else f"{domain}::{source}"


def _translate(ctx: Any) -> Any:
    domain = ctx.domain or DEFAULT_DOMAIN
    origin_type = f"{domain}::{ctx.opset}::{ctx.op_type}"
    descriptor = get_registered_onnx_plugin_by_origin_type(origin_type)
    if descriptor is None:
        if _installed.get(_translator_key(domain, ctx.op_type)):
            return NotImplemented
        opsets = sorted({o for d in get_registered_onnx_plugins()
                         if d.domain == domain and d.source == ctx.op_type for o in d.opsets})
        raise KeyError(f"python ONNX Plugin is not registered: {origin_type} (plugins of "
                       f"{domain}::{ctx.op_type} cover opsets {opsets})")
    if _op_json(descriptor.target) is None:
        raise ValueError(f"ONNX Plugin {origin_type} -> {descriptor.target}: not supported: the target op "
                         f"type '{descriptor.target}' has no operator prototype here")
    node = _make_onnx_node(ctx.name, ctx.op_type, ctx.input_names, ctx.output_names, ctx.attrs)
    op = _PendingOperator(ctx.name, descriptor.target)
    call_parse_node(origin_type, node, op)
    return _build_target(ctx, origin_type, descriptor, op)


def sync_translators() -> List[str]:
    """Installs one ``ge.onnx`` translator per ``domain::source`` the registered plugins name
    (replacing a built-in or user translator of that key) and removes those of plugins no longer
    registered; returns the installed keys."""
    wanted: Set[str] = {_translator_key(d.domain, d.source) for d in get_registered_onnx_plugins()}
    for key in [k for k in _installed if k not in wanted]:
        _onnx_unregister_translator(key)
        del _installed[key]
    existing: Optional[Set[str]] = None
    for key in sorted(wanted - set(_installed)):
        if existing is None:
            existing = set(_onnx_translator_keys())
        _installed[key] = key in existing
        _onnx_register_translator(key, _translate)
    return sorted(_installed)


def prepare_onnx_import() -> Sequence[Any]:
    """What ``ge.onnx.load`` runs first: loads the plugins of ``ASCEND_CUSTOM_OPP_PATH``
    (isolated: a failing file warns and is skipped) and syncs the translators; returns the load
    failures."""
    _, failures = load_onnx_plugins_isolated()
    sync_translators()
    return failures
