"""``@register_op``: a custom operator's prototype from the annotations of its infer-meta
function.

Positional parameters are inputs (``TensorDesc`` required, ``Optional[TensorDesc]`` optional,
``List[TensorDesc]`` dynamic), keyword-only parameters are attributes (a default makes them
optional), the return annotation gives the outputs (``TensorDesc``, ``List[TensorDesc]``, a tuple
of those, or ``None``). The function itself is the infer-meta callback: it receives a
``TensorDesc`` per input and the attributes, and returns the output descs.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar, Union, get_type_hints

from ge._internal.descriptor_table import DescriptorTable

from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

from ._ir_types import AttrType, InputType, OutputType


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if type(value) is list else value


def _thaw_default(value: Any) -> Any:
    return [_thaw_default(v) for v in value] if type(value) is tuple else value


_Kind = TypeVar("_Kind", InputType, OutputType)


@dataclass(frozen=True)
class _OpPort(Generic[_Kind]):
    """One input or output of a prototype: its name, its index, and its kind."""

    name: str
    index: int
    kind: _Kind


@dataclass(frozen=True)
class OpInput(_OpPort[InputType]):
    pass


@dataclass(frozen=True)
class OpOutput(_OpPort[OutputType]):
    pass


@dataclass(frozen=True)
class OpAttr:
    name: str
    index: int
    type: str
    is_required: bool
    default: object = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "default", _freeze(self.default))


@dataclass(frozen=True)
class OpProtoDescriptor:
    """One registered prototype."""

    descriptor_key: str
    op_type: str
    module_name: str
    func_name: str
    inputs: Tuple[OpInput, ...]
    attrs: Tuple[OpAttr, ...]
    outputs: Tuple[OpOutput, ...]
    infer_func: Callable[..., object] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("inputs", "attrs", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_bridge_dict(self) -> dict:
        return {
            "descriptor_key": self.descriptor_key, "op_type": self.op_type,
            "module_name": self.module_name, "func_name": self.func_name,
            "inputs": [{"name": i.name, "kind": int(i.kind)} for i in self.inputs],
            "attrs": [{"name": a.name, "type": a.type, "is_required": a.is_required,
                       "default": _thaw_default(a.default)} for a in self.attrs],
            "outputs": [{"name": o.name, "kind": int(o.kind)} for o in self.outputs],
        }

    def _definition(self) -> tuple:
        return (self.op_type,
                tuple((i.name, i.index, i.kind) for i in self.inputs),
                tuple((a.name, a.index, a.type, a.is_required, a.default) for a in self.attrs),
                tuple((o.name, o.index, o.kind) for o in self.outputs))


def _same(a: Any, b: Any) -> bool:
    """Equality of definitions, type-exact, with NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _source(label: str, d: OpProtoDescriptor) -> str:
    return (f"{label} source: module_name.func_name '{d.module_name}.{d.func_name}', "
            f"descriptor_key '{d.descriptor_key}'")


_TABLE: DescriptorTable[OpProtoDescriptor] = DescriptorTable(lambda d: (d.op_type,))
# Called with each newly registered descriptor (the operator library hooks in here).
_LISTENERS: List[Callable[[OpProtoDescriptor], None]] = []


def _register(d: OpProtoDescriptor) -> OpProtoDescriptor:
    with _TABLE.lock:
        old = _TABLE.by_key.get(d.descriptor_key)
        if old is not None:
            if not _same(old._definition(), d._definition()):
                raise ValueError(
                    f"python op proto descriptor content changed for descriptor_key "
                    f"'{d.descriptor_key}'; {_source('existing', old)}; {_source('current', d)}")
            return old
        old = _TABLE.by_type.get(d.op_type)
        if old is not None:
            raise ValueError(
                f"python op proto op type '{d.op_type}' already registered by "
                f"'{old.descriptor_key}'; {_source('existing', old)}; {_source('current', d)}")
        for listener in list(_LISTENERS):  # a listener that refuses leaves nothing registered
            listener(d)
        _TABLE.add(d)
    return d


_EMPTY = inspect.Parameter.empty
_NONE = type(None)
_SCALAR_ATTRS = {int: AttrType.INT, float: AttrType.FLOAT, bool: AttrType.BOOL,
                 str: AttrType.STRING, DataType: AttrType.DATA_TYPE, Tensor: AttrType.TENSOR}
_LIST_ATTRS = {int: AttrType.LIST_INT, float: AttrType.LIST_FLOAT, bool: AttrType.LIST_BOOL,
               str: AttrType.LIST_STRING, DataType: AttrType.LIST_DATA_TYPE}


def _origin(a: Any) -> Any:
    return getattr(a, "__origin__", None)


def _args(a: Any) -> tuple:
    return getattr(a, "__args__", ())


def _is_list(a: Any) -> bool:
    return _origin(a) is list


def _is_desc_list(a: Any) -> bool:
    return _is_list(a) and _args(a) == (TensorDesc,)


def _optional_of(a: Any) -> Any:
    """T of Optional[T], or _EMPTY."""
    args = _args(a)
    if _origin(a) is Union and len(args) == 2 and _NONE in args:
        return args[0] if args[1] is _NONE else args[1]
    return _EMPTY


def _input_kind(name: str, a: Any) -> InputType:
    if a is TensorDesc:
        return InputType.REQUIRED
    if _optional_of(a) is TensorDesc:
        return InputType.OPTIONAL
    if _is_desc_list(a):
        return InputType.DYNAMIC
    raise TypeError(f"unsupported input annotation for '{name}': {a!r}")


def _attr_type(name: str, a: Any) -> str:
    if a in _SCALAR_ATTRS:
        return _SCALAR_ATTRS[a]
    if _is_list(a) and len(_args(a)) == 1:
        item = _args(a)[0]
        if item in _LIST_ATTRS:
            return _LIST_ATTRS[item]
        if _is_list(item) and _args(item) == (int,):
            return AttrType.LIST_LIST_INT
    raise TypeError(f"unsupported attr annotation for '{name}': {a!r}")


def _output_kinds(a: Any) -> Tuple[OutputType, ...]:
    if a is _NONE:
        return ()
    if a is TensorDesc:
        return (OutputType.REQUIRED,)
    if _is_desc_list(a):
        return (OutputType.DYNAMIC,)
    if _origin(a) is tuple:
        items = _args(a)
        if not items or Ellipsis in items:
            raise TypeError(f"unsupported return annotation: {a!r}")
        kinds = []
        for i, item in enumerate(items):
            if item is TensorDesc:
                kinds.append(OutputType.REQUIRED)
            elif _is_desc_list(item):
                kinds.append(OutputType.DYNAMIC)
            else:
                raise TypeError(f"unsupported return annotation at output index {i}: {item!r}")
        return tuple(kinds)
    raise TypeError(f"unsupported return annotation: {a!r}")


def _check_default(name: str, a: Any, value: Any) -> None:
    if a is Tensor:
        raise TypeError(f"Tensor attr '{name}' does not support a default value")
    if _is_list(a):
        _check_list_default(name, value, _args(a)[0])
        return
    if type(value) is not a:
        raise TypeError(f"default value for attr '{name}' must be {a.__name__}, "
                        f"got {type(value).__name__}")
    if a is DataType and value is DataType.DT_MAX:
        raise TypeError(f"default value for attr '{name}' must be a valid DataType")


def _check_list_default(name: str, value: Any, item: Any) -> None:
    if type(value) is not list:
        raise TypeError(f"default value for attr '{name}' must be list, "
                        f"got {type(value).__name__}")
    for v in value:
        if _is_list(item):
            _check_list_default(name, v, _args(item)[0])
        elif type(v) is not item:
            raise TypeError(f"default value for attr '{name}' contains {type(v).__name__}, "
                            f"expected {item.__name__}")
        elif item is DataType and v is DataType.DT_MAX:
            raise TypeError(f"default value for attr '{name}' must contain valid DataType "
                            f"values")


def _mutations(mutates_args: Any, inputs: Tuple[OpInput, ...], n_out: int) -> Dict[int, str]:
    """Output index -> the input it writes in place."""
    if isinstance(mutates_args, str) or not isinstance(mutates_args, (list, tuple)):
        raise TypeError("mutates_args must be a list or tuple")
    if not mutates_args:
        return {}
    named = [isinstance(m, str) for m in mutates_args]
    if any(named) and not all(named):
        raise TypeError("mutates_args sequential and explicit forms cannot be mixed")
    if all(named):
        if len(mutates_args) > n_out:
            raise ValueError("mutates_args has more entries than outputs")
        bound = dict(enumerate(mutates_args))
    else:
        bound = {}
        for m in mutates_args:
            if not isinstance(m, (list, tuple)) or len(m) != 2:
                raise TypeError("mutates_args explicit entries must be (input_name, output_index)")
            name, index = m
            if not isinstance(name, str) or type(index) is not int:
                raise TypeError("mutates_args explicit entries must be (str, int)")
            if not 0 <= index < n_out:
                raise ValueError(f"mutates_args output index out of range: {index}")
            if index in bound:
                raise ValueError(f"mutates_args output index is duplicated: {index}")
            bound[index] = name
    names = {i.name for i in inputs}
    seen = set()
    for name in bound.values():
        if name not in names:
            raise ValueError(f"mutates_args input does not exist: '{name}'")
        if name in seen:
            raise ValueError(f"mutates_args input is duplicated: '{name}'")
        seen.add(name)
    return bound


def _outputs(kinds: Tuple[OutputType, ...], inputs: Tuple[OpInput, ...],
             mutates_args: Any) -> Tuple[OpOutput, ...]:
    bound = _mutations(mutates_args, inputs, len(kinds))
    taken = {i.name for i in inputs}
    outs = []
    for index, kind in enumerate(kinds):
        name = bound.get(index)
        if name is None:
            name, suffix = f"output{index}", 1
            while name in taken:
                name, suffix = f"output{index}_{suffix}", suffix + 1
        taken.add(name)
        outs.append(OpOutput(name=name, index=index, kind=kind))
    return tuple(outs)


def _describe(fn: Callable[..., object], op_type: str, mutates_args: Any) -> OpProtoDescriptor:
    try:
        hints = get_type_hints(fn)
    except (NameError, TypeError) as exc:
        raise TypeError(f"failed to resolve annotations for '{fn.__qualname__}': {exc}") from exc
    inputs: List[OpInput] = []
    attrs: List[OpAttr] = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"register_op does not support variadic parameter '{p.name}'")
        a = hints.get(p.name, _EMPTY)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if a is _EMPTY:
                raise TypeError(f"input '{p.name}' must have a type annotation")
            if p.default is not _EMPTY:
                raise TypeError(f"input '{p.name}' must not have a default value")
            inputs.append(OpInput(p.name, len(inputs), _input_kind(p.name, a)))
            continue
        if a is _EMPTY:
            raise TypeError(f"attr '{p.name}' must have a type annotation")
        if p.default is None and _optional_of(a) is not _EMPTY:
            a = _optional_of(a)  # a None default makes get_type_hints wrap T in Optional
        vt = _attr_type(p.name, a)
        required = p.default is _EMPTY
        if not required:
            _check_default(p.name, a, p.default)
        attrs.append(OpAttr(p.name, len(attrs), vt, required,
                            None if required else p.default))
    if "return" not in hints:
        raise TypeError("register_op return type annotation is required")
    ins = tuple(inputs)
    return OpProtoDescriptor(
        descriptor_key=f"{fn.__module__}:{fn.__qualname__}:{op_type}", op_type=op_type,
        module_name=fn.__module__, func_name=fn.__qualname__, inputs=ins, attrs=tuple(attrs),
        outputs=_outputs(_output_kinds(hints["return"]), ins, mutates_args), infer_func=fn)


def register_op(*, op_type: str, mutates_args: Any = ()) -> Callable[[Callable[..., object]],
                                                                    Callable[..., object]]:
    """Defines operator ``op_type`` from the decorated infer-meta function's annotations (see
    the module docstring). ``mutates_args`` names the inputs the outputs write in place: input
    names in output order, or ``(input_name, output_index)`` pairs. The operator joins the
    operator library: ``ge.es.all.<op_type>`` builds it, the function infers its outputs."""
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"register_op op_type must be a non-empty string, got {op_type!r}")

    def decorator(fn: Callable[..., object]) -> Callable[..., object]:
        try:
            if not inspect.isfunction(fn):
                raise TypeError("register_op expects a Python function")
            d = _register(_describe(fn, op_type, mutates_args))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"register_op op_type '{op_type}' failed: {exc}") from exc
        fn.__ge_op_proto_descriptor__ = d
        return fn

    return decorator


def clear_registered_op_protos() -> None:
    """Forgets every registered prototype (operators already in the library stay there)."""
    _TABLE.clear()


def get_registered_op_protos() -> List[OpProtoDescriptor]:
    return sorted(_TABLE.all(), key=lambda d: d.op_type)


def get_registered_op_proto_dicts() -> List[dict]:
    return [d.to_bridge_dict() for d in get_registered_op_protos()]


def get_registered_op_proto_by_descriptor_key(descriptor_key: str) -> Optional[OpProtoDescriptor]:
    return _TABLE.of_key(descriptor_key)


def _proto_of_type(op_type: str) -> Optional[OpProtoDescriptor]:
    return _TABLE.of_type(op_type)
