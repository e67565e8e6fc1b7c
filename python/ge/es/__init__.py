"""Eager-style (ES) graph construction, following GE's ``ge.es``.

Every operator is a function (``from ge.es.all import Add, Relu``, or by category as GE's ES
packages group them: ``from ge.es.math import Add``, ``ge.es.nn``, ``ge.es.cv``); calling it
adds a node and returns a ``TensorHolder``; mistakes raise where they are made.

Plugins (entry points of the group ``ge.es.plugins``, as GE's ``es_math``/``es_nn`` packages
register) are loaded when ``ge.es`` is imported and mounted as ``ge.es.<name>``;
``list_plugins()`` names them and ``get_plugin(name)`` returns one. The built-in categories
count as plugins there too (``list_plugins()`` includes ``"math"``, ``"nn"``, ``"cv"``, as it
does in GE with those packages installed); their modules load on first use. So do the modules of
operators registered at run time (``ge.es._plugin_loader.mount_runtime_ops``).
"""

import importlib
from types import ModuleType
from typing import Any, List, Optional

from ge._native import TensorHolder
from ge.es._categories import CATEGORIES as _CATEGORIES
from ge.es._plugin_loader import load_plugins as _load_plugins
from ge.es._plugin_loader import runtime_modules as _runtime_modules
from ge.es.graph_builder import GraphBuilder, InputType, attr_scope, control_dependency_scope
from ge.es.tensor_like import TensorLike

__all__ = [
    "GraphBuilder",
    "TensorHolder",
    "InputType",
    "TensorLike",
    "attr_scope",
    "control_dependency_scope",
    "list_plugins",
    "get_plugin",
]


def list_plugins() -> List[str]:
    """The names of the loaded plugins (entry points first, then the modules of operators
    registered at run time, then the built-in categories)."""
    names = list(_load_plugins()) + list(_runtime_modules())
    return names + [c for c in _CATEGORIES if c not in names]


def get_plugin(plugin_name: Any) -> Optional[ModuleType]:
    """The plugin module called ``plugin_name`` (``"math"``, ``"nn"``, ...), or None."""
    if not isinstance(plugin_name, str):
        return None
    plugins = {**_load_plugins(), **_runtime_modules()}
    if plugin_name in plugins:
        return plugins[plugin_name]
    if plugin_name in _CATEGORIES:
        return importlib.import_module(f"ge.es.{plugin_name}")
    return None


def __getattr__(name: str) -> Any:
    """``ge.es.all`` and the category modules load on first use."""
    if name == "all" or name in _CATEGORIES:
        return importlib.import_module(f"ge.es.{name}")
    raise AttributeError(f"module 'ge.es' has no attribute '{name}'")


def __dir__() -> List[str]:
    return sorted(set(globals()) | {"all", *_CATEGORIES})


# GE mounts every plugin when ge.es is imported, so `from ge.es.<name> import X` works at once.
__all__ += [_name for _name in _load_plugins() if _name not in __all__]
