"""Checks of schema-bound callbacks (``execute(*inputs, **attrs)``,
``declare_launch_args(*inputs, *outputs, **attrs)``) against an operator's IR, and the runtime
attribute readers by IR type."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Callable, Dict, Tuple

from ge.graph import DataType
from ge.runtime import Tensor

from ._ir_types import AttrType, InputType, OutputType

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_UNIONS = {typing.Union} | ({types.UnionType} if hasattr(types, "UnionType") else set())

# IR type -> (the RuntimeAttrs getter, the annotation a callback may give the attribute).
_ATTR_SPECS: Dict[str, Tuple[str, Any]] = {
    AttrType.INT: ("get_int", int),
    AttrType.FLOAT: ("get_float", float),
    AttrType.BOOL: ("get_bool", bool),
    AttrType.STRING: ("get_str", str),
    AttrType.DATA_TYPE: ("get_data_type", DataType),
    AttrType.TENSOR: ("get_tensor", Tensor),
    AttrType.LIST_INT: ("get_list_int", typing.List[int]),
    AttrType.LIST_FLOAT: ("get_list_float", typing.List[float]),
    AttrType.LIST_BOOL: ("get_list_bool", typing.List[bool]),
    AttrType.LIST_STRING: ("get_list_str", typing.List[str]),
    AttrType.LIST_DATA_TYPE: ("get_list_data_type", typing.List[DataType]),
    AttrType.LIST_LIST_INT: ("get_list_list_int", typing.List[typing.List[int]]),
}


def _get_runtime_attr_spec(ir_type: str, index: int) -> Tuple[str, Any]:
    spec = _ATTR_SPECS.get(ir_type)
    if spec is None:
        raise ValueError(f"unsupported custom op runtime attr type: {ir_type}, attr index: {index}")
    return spec


def _input_annotation(kind: int) -> Any:
    if kind == InputType.REQUIRED:
        return Tensor
    if kind == InputType.OPTIONAL:
        return typing.Optional[Tensor]
    if kind == InputType.DYNAMIC:
        return typing.List[Tensor]
    raise ValueError(f"unsupported custom op IR input kind: {kind}")


def _output_annotation(kind: int) -> Any:
    if kind == OutputType.REQUIRED:
        return Tensor
    if kind == OutputType.DYNAMIC:
        return typing.List[Tensor]
    raise ValueError(f"unsupported custom op IR output kind: {kind}")


def _canonical(a: Any) -> Any:
    """An annotation in a comparable form: list[T] and List[T] alike, unions as sets."""
    if a is None:
        return type(None)
    origin, args = typing.get_origin(a), typing.get_args(a)
    if origin is list:
        return ("list", tuple(_canonical(x) for x in args))
    if origin in _UNIONS:
        return ("union", frozenset(_canonical(x) for x in args))
    return a


class _SignatureChecker:
    def __init__(self, descriptor: Any, method_name: str) -> None:
        self.descriptor, self.method_name = descriptor, method_name

    def error(self, expected: str, actual: str) -> TypeError:
        d = self.descriptor
        return TypeError(f"invalid {self.method_name} signature for op type {d.op_type}, "
                         f"descriptor key {d.descriptor_key}, method {self.method_name}: "
                         f"expected {expected}, actual {actual}")

    def hints(self, method: Callable[..., Any]) -> Dict[str, Any]:
        try:
            if getattr(method, "__no_type_check__", False):
                return {}
            if self.method_name == "execute":
                # execute's return annotation is free (GE ignores it): resolve the others only.
                target = getattr(method, "__func__", method)
                annotations = {k: v for k, v in getattr(target, "__annotations__", {}).items()
                               if k != "return"}
                if not annotations:
                    return {}
                holder = types.SimpleNamespace(__annotations__=annotations)
                return typing.get_type_hints(holder,
                                             globalns=getattr(target, "__globals__", None))
            return typing.get_type_hints(method)
        except (NameError, TypeError, AttributeError) as exc:
            raise self.error("resolvable type annotations",
                             f"type hint resolution failed: {exc}") from exc

    def annotation(self, p: inspect.Parameter, expected: Any, hints: Dict[str, Any],
                   where: str) -> None:
        if p.annotation is inspect.Parameter.empty:
            return
        actual = _canonical(hints.get(p.name, p.annotation))
        if actual != _canonical(expected):
            raise self.error(f"{where} annotation {_canonical(expected)!r}", repr(actual))


def _validate_args_signature(method: Callable[..., Any], ir_meta: dict, descriptor: Any, *,
                             method_name: str = "declare_launch_args") -> None:
    if method_name not in ("execute", "declare_launch_args"):
        raise ValueError(f"unsupported schema callback: {method_name}")
    check = _SignatureChecker(descriptor, method_name)
    sig = inspect.signature(method)
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise check.error("no variadic parameters", f"variadic parameter {p.name}")
    ins, attrs = ir_meta["inputs"], ir_meta["attrs"]
    outs = ir_meta["outputs"] if method_name == "declare_launch_args" else []
    n_pos = len(ins) + len(outs)
    if len(params) != n_pos + len(attrs):
        what = "input/output" if method_name == "declare_launch_args" else "input"
        raise check.error(f"{n_pos} positional {what} parameters followed by {len(attrs)} "
                          f"keyword-only attrs", f"{len(params)} parameters")
    hints = check.hints(method)
    positional = [(f"input parameter at index {i}", f"positional input parameter at index {i}",
                   _input_annotation(item["kind"])) for i, item in enumerate(ins)]
    positional += [(f"output parameter at index {i}", f"positional output parameter at index {i}",
                    _output_annotation(item["kind"])) for i, item in enumerate(outs)]
    for p, (where, kind_text, expected) in zip(params, positional):
        if p.kind not in _POSITIONAL:
            raise check.error(kind_text, f"parameter {p.name} kind {p.kind.name}")
        check.annotation(p, expected, hints, where)
    for i, (p, item) in enumerate(zip(params[n_pos:], attrs)):
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise check.error(f"keyword-only attr parameter {item['name']}",
                              f"parameter {p.name} kind {p.kind.name}")
        if p.name != item["name"]:
            raise check.error(f"attr name {item['name']} at index {i}", f"attr name {p.name}")
        check.annotation(p, _get_runtime_attr_spec(item["type"], i)[1], hints,
                         f"attr parameter {item['name']}")
    if method_name == "execute":
        return
    if sig.return_annotation is inspect.Signature.empty:
        raise check.error("None return annotation", "missing return annotation")
    ret = _canonical(hints.get("return", sig.return_annotation))
    if ret is not type(None):
        raise check.error("None return annotation", repr(ret))
