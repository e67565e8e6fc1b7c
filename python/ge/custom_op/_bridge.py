"""The backend side of Python custom operators: implementation instances ("holders"),
signature validation against the operator's IR, and the calls of ``execute`` /
``declare_launch_args`` with their context bound (GE's bridge protocol; ``ir_meta`` is
``{"op_type", "inputs": [{"name", "kind"}], "attrs": [{"name", "type"}], "outputs": [...]}``)."""

from __future__ import annotations

import inspect
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ._ir_types import InputType, OutputType
from ._signature import _get_runtime_attr_spec, _validate_args_signature
from .bootstrap import get_registered_op_impls, get_registered_op_protos, load_custom_op_plugins
from .context import _declare_launch_args_ctx_scope, _execute_ctx_scope
from .registry import (INTERFACE_ANNOTATED_ARGS, INTERFACE_EAGER_EXECUTE,
                       get_registered_op_impl_by_descriptor_key)

__all__ = ["call_declare_launch_args", "call_execute", "clear_loaded_op_impl_modules",
           "clear_op_impl_holders", "create_op_impl_holder", "destroy_op_impl_holder",
           "load_and_get_op_descriptors", "load_and_get_op_impl_descriptors",
           "validate_op_impl_descriptor"]


@dataclass
class _OpImplHolder:
    descriptor_key: str
    instance_id: str
    instance: object


_LOCK = threading.RLock()
_OP_IMPL_HOLDERS: Dict[str, _OpImplHolder] = {}


def load_and_get_op_impl_descriptors() -> List[dict]:
    load_custom_op_plugins()
    return get_registered_op_impls()


def load_and_get_op_descriptors() -> dict:
    load_custom_op_plugins()
    return {"protos": get_registered_op_protos(), "impls": get_registered_op_impls()}


def _descriptor(descriptor_key: str) -> Any:
    d = get_registered_op_impl_by_descriptor_key(descriptor_key)
    if d is None:
        raise KeyError(f"python op impl descriptor_key not found: {descriptor_key}")
    return d


def _get_holder(instance_id: str) -> _OpImplHolder:
    with _LOCK:
        holder = _OP_IMPL_HOLDERS.get(instance_id)
    if holder is None:
        raise KeyError(f"python op impl holder is not created: {instance_id}")
    return holder


def _get_eager_execute_op(instance_id: str) -> object:
    instance = _get_holder(instance_id).instance
    if not callable(getattr(instance, "execute", None)):
        raise TypeError(f"python op impl does not implement callable execute: {instance_id}")
    return instance


def create_op_impl_holder(instance_id: str, descriptor_key: str) -> bool:
    """Makes the implementation instance ``instance_id`` (once)."""
    d = _descriptor(descriptor_key)
    with _LOCK:
        if instance_id not in _OP_IMPL_HOLDERS:
            _OP_IMPL_HOLDERS[instance_id] = _OpImplHolder(descriptor_key, instance_id, d.cls())
    return True


def destroy_op_impl_holder(instance_id: str) -> bool:
    with _LOCK:
        return _OP_IMPL_HOLDERS.pop(instance_id, None) is not None


def clear_op_impl_holders() -> None:
    with _LOCK:
        _OP_IMPL_HOLDERS.clear()


def clear_loaded_op_impl_modules() -> None:
    """Drops the plugin modules loaded from ``ASCEND_CUSTOM_OPP_PATH`` (tests)."""
    from ge._internal.plugin_loader import forget_loaded_module

    for name in [k for k in sys.modules if k.startswith("_ge_py_custom_op_")]:
        module = sys.modules.get(name)
        if module is not None:
            forget_loaded_module(module)


def _is_legacy_execute(method: Callable[..., Any]) -> bool:
    """``execute(self, ctx)``: the context is passed instead of schema-bound arguments."""
    params = list(inspect.signature(method).parameters.values())
    return (len(params) == 1 and params[0].name == "ctx"
            and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD))


def _unbound(cls: type, name: str) -> Callable[..., Any]:
    """The method as a call would see it (bound, so ``self`` is not a parameter)."""
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        return raw.__func__
    if isinstance(raw, classmethod):
        return raw.__get__(None, cls)
    if inspect.isfunction(raw):
        return raw.__get__(object(), cls)
    return getattr(cls, name)


def validate_op_impl_descriptor(descriptor_key: str, ir_meta: Optional[dict]) -> bool:
    """Checks the implementation's callbacks against the operator's IR (without making an
    instance)."""
    d = _descriptor(descriptor_key)
    if INTERFACE_EAGER_EXECUTE in d.interfaces:
        method = _unbound(d.cls, "execute")
        if not _is_legacy_execute(method):
            if ir_meta is None:
                raise RuntimeError(f"canonical IR not found for schema-bound execute: {d.op_type}")
            _validate_args_signature(method, ir_meta, d, method_name="execute")
    if INTERFACE_ANNOTATED_ARGS in d.interfaces:
        if ir_meta is None:
            raise RuntimeError("canonical IR not found for schema-bound declare_launch_args")
        _validate_args_signature(_unbound(d.cls, "declare_launch_args"), ir_meta, d,
                                 method_name="declare_launch_args")
    return True


def _bind_inputs(ir_inputs: List[dict], required: Callable[[int], Any],
                 optional: Callable[[int], Any], dynamic_num: Callable[[int], int],
                 dynamic: Callable[[int, int], Any]) -> List[Any]:
    args: List[Any] = []
    for i, item in enumerate(ir_inputs):
        kind = item["kind"]
        if kind == InputType.REQUIRED:
            args.append(required(i))
        elif kind == InputType.OPTIONAL:
            args.append(optional(i))
        elif kind == InputType.DYNAMIC:
            args.append([dynamic(i, j) for j in range(dynamic_num(i))])
        else:
            raise ValueError(f"unsupported custom op IR input kind: {kind}, ir index: {i}")
    return args


def _read_runtime_attr(attrs: Any, index: int, ir_type: str) -> Any:
    getter, _ = _get_runtime_attr_spec(ir_type, index)
    return getattr(attrs, getter)(index)


def _bind_attrs(get_attrs: Callable[[], Any], ir_attrs: List[dict]) -> Dict[str, Any]:
    if not ir_attrs:
        return {}
    attrs = get_attrs()
    return {item["name"]: _read_runtime_attr(attrs, i, item["type"])
            for i, item in enumerate(ir_attrs)}


def call_execute(instance_id: str, ir_meta: Optional[dict], ctx: Any) -> None:
    """Runs ``execute``: with the context (``execute(self, ctx)``), or schema-bound with the
    inputs and attributes and the context reachable through ``get_execute_ctx()``. The return
    value is ignored; the context is invalidated afterwards, even on error."""
    try:
        op = _get_eager_execute_op(instance_id)
        method = op.execute
        if _is_legacy_execute(method):
            method(ctx)
            return
        if ir_meta is None:
            raise RuntimeError("canonical IR not found for schema-bound execute: "
                               f"{op.__ge_op_impl_descriptor__.op_type}")
        args = _bind_inputs(ir_meta["inputs"], ctx.get_required_input_tensor,
                            ctx.get_optional_input_tensor, ctx.get_dynamic_input_num,
                            ctx.get_dynamic_input_tensor)
        kwargs = _bind_attrs(ctx.get_attrs, ir_meta["attrs"])
        with _execute_ctx_scope(ctx):
            method(*args, **kwargs)
    finally:
        ctx._invalidate()


def call_declare_launch_args(instance_id: str, ir_meta: Optional[dict], ctx: Any) -> None:
    """Runs ``declare_launch_args(*inputs, *outputs, **attrs)`` with its context bound; it
    must return None."""
    try:
        method = getattr(_get_holder(instance_id).instance, "declare_launch_args", None)
        if not callable(method):
            raise TypeError(f"python op impl does not implement declare_launch_args: {instance_id}")
        if ir_meta is None:
            raise RuntimeError("canonical IR not found for schema-bound declare_launch_args")
        args = _bind_inputs(ir_meta["inputs"], ctx._get_required_input_tensor,
                            ctx._get_optional_input_tensor, ctx._get_dynamic_input_num,
                            ctx._get_dynamic_input_tensor)
        for i, item in enumerate(ir_meta["outputs"]):
            if item["kind"] == OutputType.REQUIRED:
                args.append(ctx._get_required_output_tensor(i))
            elif item["kind"] == OutputType.DYNAMIC:
                args.append([ctx._get_dynamic_output_tensor(i, j)
                             for j in range(ctx._get_dynamic_output_num(i))])
            else:
                raise ValueError(f"unsupported custom op IR output kind: {item['kind']}")
        kwargs = _bind_attrs(ctx._get_attrs, ir_meta["attrs"])
        with _declare_launch_args_ctx_scope(ctx):
            result = method(*args, **kwargs)
        if result is not None:
            raise TypeError("declare_launch_args must return None")
    finally:
        ctx._invalidate()
