"""Every operator of the built-in library: ``from ge.es.all import *``.

Each function (and ``<Op>Output`` type) is the one of its module ``ge.es.ops.<op>``, which is
generated on first use (see ``ge.es.ops``); ``all.pyi`` beside this file is their typed stub.
Operators registered at run time (``ge.ops.register``) are here too, by name.
"""

from importlib import import_module as _import_module
from typing import Any, Dict, List

from ge.es import ops as _ops

__all__: List[str] = _ops.exports()

_runtime_functions: Dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    module = _ops.module_of(name)
    if module is not None:  # a built-in operator: kept here once its module is made
        value = getattr(_import_module(f"{_ops.__name__}.{module}"), name)
        globals()[name] = value
        return value
    fn = _runtime_functions.get(name)  # operators registered at run time (ge.ops.register)
    if fn is None:
        from ge.codegen import runtime_function

        fn = runtime_function(name)
        _runtime_functions[name] = fn
    return fn


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
