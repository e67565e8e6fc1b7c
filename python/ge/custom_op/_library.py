"""How Python custom operators join the operator library and the CPU backend.

- ``@register_op`` → the prototype goes to ``ge.ops.register`` (inputs and outputs take every
  data type; the infer-meta function decides the outputs) and the infer-meta function becomes
  the operator's inference rule (``ge.ops.register_infer``), so ``ge.es.all.<op_type>`` builds
  it with inferred outputs.
- ``@register_op_impl`` → a HOST kernel of the CPU backend (``ge.ops.register_kernel``): it
  hands ``execute`` ``ge.runtime.Tensor`` views of the node's host buffers, and returns the
  buffers ``execute`` allocated. The compile pipeline runs the same kernel to fold a node whose
  inputs are all constant. An implementation with only ``declare_launch_args`` declares device
  kernel launches: the kernel runs it, records the launches, and fails the run with
  "not supported: ... needs an NPU".
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import ge.ops
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc

from . import _bridge, proto, registry
from ._ir_types import LIBRARY_TO_VT, VT_TO_LIBRARY, AttrType, InputType, OutputType
from ._native import AnnotatedArgsContext, EagerOpExecutionContext

_LOCK = threading.RLock()
_JOINED: set = set()  # op types this module put into the operator library
_KERNELS: set = set()  # op types whose kernel this module registered
_VALIDATED: set = set()  # (descriptor_key, op_type) pairs whose signatures were checked

_INPUT_KINDS = {InputType.REQUIRED: "required", InputType.OPTIONAL: "optional",
                InputType.DYNAMIC: "dynamic"}
_OUTPUT_KINDS = {OutputType.REQUIRED: "required", OutputType.DYNAMIC: "dynamic"}
_COUNT_PREFIX = "_ge_dynamic_num_"  # derived attrs: instance counts of dynamic inputs


def _count_attr(input_name: str) -> str:
    return _COUNT_PREFIX + input_name


def _json_default(name: str, value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"not supported: the default {value} of attr '{name}' (the operator "
                         f"library keeps defaults as JSON numbers)")
    if isinstance(value, DataType):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_json_default(name, v) for v in value]
    return value


def _library_json(d: proto.OpProtoDescriptor) -> Dict[str, Any]:
    attrs = []
    for a in d.attrs:
        entry: Dict[str, Any] = {"name": a.name, "type": VT_TO_LIBRARY[a.type]}
        if a.is_required:
            entry["required"] = True
        else:
            entry["default"] = _json_default(a.name, proto._thaw_default(a.default))
        attrs.append(entry)
    dynamic = [i.name for i in d.inputs if i.kind == InputType.DYNAMIC]
    derived = {}
    if len(dynamic) > 1:  # the instance counts cannot be told apart otherwise
        for name in dynamic:
            attrs.append({"name": _count_attr(name), "type": "Int", "default": 0})
            derived[_count_attr(name)] = f"len({name})"
    return {
        "name": d.op_type,
        "doc": (d.infer_func.__doc__ or f"Python custom operator {d.op_type}").strip(),
        "inputs": [{"name": i.name, "kind": _INPUT_KINDS[i.kind], "type": ["@ALL"]}
                   for i in d.inputs],
        "outputs": [{"name": o.name, "kind": _OUTPUT_KINDS[o.kind], "type": ["@ALL"]}
                    for o in d.outputs],
        "attrs": attrs,
        "derived_attrs": derived,
    }


def _ir_meta(op_type: str) -> Optional[dict]:
    """The operator's IR in the bridge's form, from its ``register_op`` prototype or else from
    the operator library (None if the library does not know it)."""
    d = proto._proto_of_type(op_type)
    if d is not None:
        return d.to_bridge_dict()
    try:
        op = ge.ops.get_op(op_type)
    except KeyError:
        return None
    in_kinds = {v: k for k, v in _INPUT_KINDS.items()}
    out_kinds = {v: k for k, v in _OUTPUT_KINDS.items()}
    return {
        "op_type": op_type,
        "inputs": [{"name": i["name"], "kind": int(in_kinds[i["kind"]])} for i in op["inputs"]],
        "attrs": [{"name": a["name"], "type": LIBRARY_TO_VT.get(a["type"], a["type"])}
                  for a in op["attrs"] if not a["name"].startswith(_COUNT_PREFIX)],
        "outputs": [{"name": o["name"], "kind": int(out_kinds[o["kind"]])}
                    for o in op["outputs"]],
    }


def _groups(op_type: str, ir_inputs: List[dict], n: int,
            attrs: Dict[str, Any]) -> List[Tuple[int, List[int]]]:
    """Per IR input: its kind and the indices of its instances among the ``n`` flat ones."""
    dynamic = [item["name"] for item in ir_inputs if item["kind"] == InputType.DYNAMIC]
    counts: Dict[str, int] = {}
    if len(dynamic) == 1:
        counts[dynamic[0]] = n - (len(ir_inputs) - 1)
    for name in dynamic if len(dynamic) > 1 else []:
        key = _count_attr(name)
        if key not in attrs:
            raise RuntimeError(f"not supported: {op_type} has several dynamic inputs and its "
                               f"prototype does not record their instance counts")
        counts[name] = int(attrs[key])
    groups, pos = [], 0
    for item in ir_inputs:
        k = counts.get(item["name"], 1) if item["kind"] == InputType.DYNAMIC else 1
        groups.append((int(item["kind"]), list(range(pos, pos + k))))
        pos += k
    if pos != n or any(c < 0 for c in counts.values()):
        raise RuntimeError(f"{op_type}: {n} input instances do not fit the IR inputs "
                           f"{[item['name'] for item in ir_inputs]}")
    return groups


def _to_numpy(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _attr_value(vt: str, value: Any) -> Any:
    if vt == AttrType.TENSOR and value is not None:
        return _to_numpy(value)
    return value


# --- inference -------------------------------------------------------------------------------

def _user_attrs(ir_attrs: List[dict], attrs: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for item in ir_attrs:
        value = attrs.get(item["name"])
        if item["type"] == AttrType.TENSOR and value is not None:
            array = np.ascontiguousarray(_to_numpy(value))
            from ge.graph.tensor import _NP_TO_DT

            value = Tensor._wrap(array, _NP_TO_DT.get(array.dtype, DataType.DT_UNDEFINED))
        out[item["name"]] = value
    return out


def _flatten_outputs(op_type: str, outputs: Sequence[proto.OpOutput],
                     result: Any) -> List[TensorDesc]:
    if not outputs:
        if result is not None:
            raise TypeError(f"the infer-meta function of {op_type} has no outputs and must "
                            f"return None, got {type(result).__name__}")
        return []
    items = [result] if len(outputs) == 1 else result
    if len(outputs) > 1 and (not isinstance(items, (tuple, list)) or len(items) != len(outputs)):
        raise TypeError(f"the infer-meta function of {op_type} must return a tuple of "
                        f"{len(outputs)} outputs")
    descs: List[TensorDesc] = []
    for o, item in zip(outputs, items):
        group = item if o.kind == OutputType.DYNAMIC else [item]
        if not isinstance(group, (list, tuple)) or not all(isinstance(g, TensorDesc)
                                                           for g in group):
            want = "a list of TensorDesc" if o.kind == OutputType.DYNAMIC else "a TensorDesc"
            raise TypeError(f"the infer-meta function of {op_type} must return {want} for "
                            f"output '{o.name}', got {item!r}")
        descs.extend(group)
    return descs


def _infer(d: proto.OpProtoDescriptor, flat: Sequence[Optional[TensorDesc]],
           attrs: Dict[str, Any]) -> List[TensorDesc]:
    ir = d.to_bridge_dict()
    groups = _groups(d.op_type, ir["inputs"], len(flat), attrs)
    args: List[Any] = []
    for kind, idx in groups:
        if kind == InputType.DYNAMIC:
            args.append([flat[i] for i in idx])
        else:
            args.append(flat[idx[0]])
    result = d.infer_func(*args, **_user_attrs(ir["attrs"], attrs))
    return _flatten_outputs(d.op_type, d.outputs, result)


def _infer_rule(op_type: str) -> Any:
    def rule(inputs: List[Optional[Tuple[Any, List[int]]]],
             attrs: Dict[str, Any]) -> List[Tuple[DataType, List[int]]]:
        d = proto._proto_of_type(op_type)
        if d is None:
            raise RuntimeError(f"the register_op prototype of {op_type} was cleared")
        flat = [None if i is None else TensorDesc(list(i[1]), DataType(i[0])) for i in inputs]
        return [(o.data_type, o.shape.origin_shape.dims) for o in _infer(d, flat, attrs)]

    return rule


def _on_proto(d: proto.OpProtoDescriptor) -> None:
    with _LOCK:
        if d.op_type not in _JOINED and d.op_type in set(ge.ops.list_ops()):
            raise ValueError(f"'{d.op_type}' is already an operator of the operator library; "
                             f"register_op defines new operators")
        ge.ops.register(json.dumps(_library_json(d)))
        ge.ops.register_infer(d.op_type, _infer_rule(d.op_type))
        _JOINED.add(d.op_type)


# --- the HOST kernel -------------------------------------------------------------------------

def _holder(d: registry.OpImplDescriptor, ir: dict) -> str:
    key = (d.descriptor_key, json.dumps(ir, sort_keys=True))
    if key not in _VALIDATED:
        _bridge.validate_op_impl_descriptor(d.descriptor_key, ir)
        _VALIDATED.add(key)
    instance_id = f"{d.descriptor_key}#host"
    _bridge.create_op_impl_holder(instance_id, d.descriptor_key)
    return instance_id


def _declared_outputs(op_type: str, arrays: Sequence[Optional[np.ndarray]],
                      attrs: Dict[str, Any]) -> List[Tuple[int, List[np.ndarray]]]:
    from ge.graph.tensor import _DT_TO_NP, _NP_TO_DT

    d = proto._proto_of_type(op_type)
    if d is None:
        raise RuntimeError(f"not supported: declare_launch_args of {op_type} on the CPU backend "
                           f"without a register_op prototype (its output shapes are unknown)")
    flat = [None if a is None else TensorDesc(list(a.shape), _NP_TO_DT[a.dtype]) for a in arrays]
    descs = iter(_infer(d, flat, attrs))
    groups = []
    for o in d.outputs:
        take = [next(descs)] if o.kind == OutputType.REQUIRED else list(descs)
        groups.append((int(o.kind), [np.zeros(t.shape.storage_shape.dims,
                                              _DT_TO_NP[t.data_type]) for t in take]))
    return groups


def _host_kernel(op_type: str) -> Any:
    def kernel(*arrays: Optional[np.ndarray], **attrs: Any) -> Tuple[np.ndarray, ...]:
        d = registry._impl_of_type(op_type)
        ir = _ir_meta(op_type)
        if d is None or ir is None:
            raise RuntimeError(f"{op_type} has no registered Python implementation or prototype")
        groups = _groups(op_type, ir["inputs"], len(arrays), attrs)
        values = [(a["name"], a["type"], _attr_value(a["type"], attrs.get(a["name"])))
                  for a in ir["attrs"]]
        instance_id = _holder(d, ir)
        if registry.INTERFACE_EAGER_EXECUTE in d.interfaces:
            ctx = EagerOpExecutionContext._make(op_type, arrays, groups, values)
            _bridge.call_execute(instance_id, ir, ctx)
            fixed = all(o["kind"] == OutputType.REQUIRED for o in ir["outputs"])
            return tuple(ctx._results(len(ir["outputs"]) if fixed else None))
        actx = AnnotatedArgsContext._make(op_type, arrays, groups, values,
                                          _declared_outputs(op_type, arrays, attrs))
        _bridge.call_declare_launch_args(instance_id, ir, actx)
        launches = "; ".join(f"kernel '{info.kernel_name}' block_dim {info.block_dim} with "
                             f"{len(args.entries)} args" for info, args in actx.launches)
        raise RuntimeError(f"not supported: {op_type} declares {len(actx.launches)} device "
                           f"kernel launch(es) ({launches or 'none'}); running them needs an "
                           f"NPU, and the CPU backend runs only execute (HOST) implementations")

    return kernel


def _on_impl(d: registry.OpImplDescriptor) -> None:
    with _LOCK:
        ge.ops.register_kernel(d.op_type, _host_kernel(d.op_type))
        _KERNELS.add(d.op_type)


def _on_clear_impls(gone: List[registry.OpImplDescriptor]) -> None:
    with _LOCK:
        for d in gone:
            if d.op_type in _KERNELS:
                ge.ops.unregister_kernel(d.op_type)
                _KERNELS.discard(d.op_type)
            _bridge.destroy_op_impl_holder(f"{d.descriptor_key}#host")
        _VALIDATED.clear()


proto._LISTENERS.append(_on_proto)
registry._LISTENERS.append(_on_impl)
registry._CLEAR_LISTENERS.append(_on_clear_impls)
