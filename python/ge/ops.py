"""``ge.ops``: the operator library at run time.

Register your own operator prototypes and they are immediately callable as ``ge.es.all.<Name>``,
with the same dtype checks and argument rules as the built-in ones::

    import ge.ops
    ge.ops.register({"name": "MyScale", "inputs": [{"name": "x", "type": "T"}],
                     "outputs": [{"name": "y", "type": "T"}],
                     "attrs": [{"name": "factor", "type": "Float", "default": 1.0}],
                     "type_vars": {"T": ["DT_FLOAT", "DT_FLOAT16"]}})
    ge.ops.register_infer("MyScale", lambda inputs, attrs: [inputs[0]])
    from ge.es.all import MyScale

GE users can bring prototypes as they are: ``ge.ops.register_regop(open("my_ops.h").read())``.
The prototype format is the one of ``ops/registry/<version>/operators.json`` (see
``docs/guide.md``). Without an inference rule, outputs get their dtype from the type variables
and an unknown-rank shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ge import _native

InferFn = Callable[[List[Optional[Tuple[Any, List[int]]]], Dict[str, Any]], Sequence[Tuple[Any, List[int]]]]

__all__ = ["register", "register_regop", "regop_to_json", "load_library", "register_infer", "register_kernel",
           "unregister_kernel", "kernel_op_types", "list_ops", "get_op", "library_version", "mount_es_module",
           "unmount_es_module"]


def register(prototypes: Union[str, Dict[str, Any], List[Dict[str, Any]]]) -> List[str]:
    """Registers (or replaces) operator prototypes given as a JSON text, one operator dict, a list
    of them, or a library dict ``{"operators": [...]}``. Returns the registered names."""
    text = prototypes if isinstance(prototypes, str) else json.dumps(prototypes)
    names = _native._register_ops_json(text)
    _forget_generated(names)
    return names


def register_regop(text: str) -> List[str]:
    """Registers the operators of GE REG_OP text (``REG_OP(Foo).INPUT(x, TensorType({DT_FLOAT}))
    ... .OP_END_FACTORY_REG(Foo)``; several per text, comments allowed) and returns their names.
    Malformed text raises ValueError naming the line and what was expected."""
    names = _native._register_regop(text)
    _forget_generated(names)
    return names


def regop_to_json(text: str) -> str:
    """The operator-library JSON document of REG_OP text (nothing is registered)."""
    return _native._regop_to_json(text)


def load_library(path: Union[str, Path]) -> List[str]:
    """Registers every operator of an ``operators.json`` file."""
    return register(Path(path).read_text())


def register_infer(op_type: str, fn: InferFn) -> None:
    """Sets the shape/dtype inference rule of ``op_type``: ``fn(inputs, attrs)`` gets one
    ``(dtype, shape)`` per input instance (None for an absent optional input) and the attributes,
    and returns one ``(dtype, shape)`` per output."""
    _native._register_infer(op_type, fn)


def register_kernel(op_type: str, fn: Callable[..., Any]) -> None:
    """Sets the CPU kernel of ``op_type`` (your own operator's, or a replacement for a built-in
    one) to a Python function: ``fn(*inputs, **attrs)`` gets the node's inputs as numpy arrays
    (None for an absent optional input) and its IR attributes as keyword arguments, and returns
    one array per output (an array, or a tuple of arrays), each of its output's dtype. Sessions
    call it with the GIL held; an exception in it fails the run with ``ge.ExecutionError``
    naming the node."""
    if not isinstance(op_type, str) or not op_type:
        raise ValueError("op_type must be a non-empty string")
    if not callable(fn):
        raise TypeError("register_kernel needs a callable")
    _native._register_kernel(op_type, fn)


def unregister_kernel(op_type: str) -> bool:
    """Removes a kernel set with ``register_kernel``; returns whether there was one."""
    return bool(_native._unregister_kernel(op_type))


def kernel_op_types() -> List[str]:
    """The operators the CPU backend can run (built-in kernels and registered ones), sorted."""
    return list(_native._cpu_kernel_op_types())


def list_ops() -> List[str]:
    """Names of every registered operator, built-in ones first."""
    return list(_native._op_names())


def get_op(name: str) -> Dict[str, Any]:
    """The prototype of ``name`` in the JSON form of the library (KeyError if unknown)."""
    text = _native._op_json(name)
    if text is None:
        raise KeyError(f"unknown operator '{name}'")
    return json.loads(text)


def mount_es_module(module_name: str, op_names: Union[str, Sequence[str]]) -> Any:
    """Makes operators registered at run time (``register``, ``register_regop``,
    ``ge.custom_op.register_op``) importable as ``ge.es.<module_name>`` (``from ge.es.custom
    import MyOp``), each with the signature GE's generator gives it; mounting into a name again
    adds operators. Returns the module. ValueError for a name that is not an identifier or that
    ``ge.es`` or an installed ES package already uses; KeyError for an unregistered operator."""
    from ge.es._plugin_loader import mount_runtime_ops

    return mount_runtime_ops(module_name, op_names)


def unmount_es_module(module_name: str) -> bool:
    """Removes a module ``mount_es_module`` made (its operators stay registered); returns whether
    there was one."""
    from ge.es._plugin_loader import unmount_runtime_ops

    return unmount_runtime_ops(module_name)


def library_version() -> str:
    """Version of the built-in operator library."""
    return _native._ops_version()


def _forget_generated(names: List[str]) -> None:
    """Drops cached run-time functions so re-registered prototypes take effect."""
    import sys

    mod = sys.modules.get("ge.es.all")
    if mod is not None:
        cache = getattr(mod, "_runtime_functions", {})
        for n in names:
            cache.pop(n, None)
