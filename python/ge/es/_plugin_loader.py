"""ES plugins: every entry point of the group ``ge.es.plugins`` becomes ``ge.es.<name>``.

GE's ES packages (``es_math``, ``es_nn``, ...) and user packages of generated op functions
(``ge codegen --module_name NAME`` writes one: ``es_NAME``) register here; ``import ge.es`` loads
them all. An entry point may name a module, a string (a module name) or a callable returning
either. A plugin that fails to load is logged on the ``ge.es`` logger and skipped; the others load.

Operators registered at run time (``ge.ops.register_regop``, ``ge.ops.register``) mount as a
``ge.es.<name>`` module too: ``mount_runtime_ops(name, op_names)`` (``unmount_runtime_ops(name)``).
"""

from __future__ import annotations

import importlib
import json
import keyword
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from importlib.metadata import entry_points

__all__ = ["load_all_plugins", "load_plugins", "mount_runtime_ops", "unmount_runtime_ops", "runtime_modules",
           "register_missing_operators", "check_module_name"]

_ENTRY_POINT_GROUP = "ge.es.plugins"

# ge.es's own submodules, which a plugin must not shadow.
_RESERVED = frozenset({"all", "ops", "graph_builder", "tensor_holder", "tensor_like"})

_log = logging.getLogger("ge.es")
_loaded: Optional[Dict[str, ModuleType]] = None


def _iter_plugin_entry_points() -> List[Any]:
    """The entry points of the group ``ge.es.plugins`` (through ``entry_points(group=...)``, or, where
    that raises TypeError as before Python 3.10, the mapping or ``select`` of ``entry_points()``)."""
    try:
        found = entry_points(group=_ENTRY_POINT_GROUP)
    except TypeError:
        everything = entry_points()
        if hasattr(everything, "select"):
            return list(everything.select(group=_ENTRY_POINT_GROUP))
        return list(everything.get(_ENTRY_POINT_GROUP, []))
    if isinstance(found, dict):  # an importlib_metadata-style mapping
        return list(found.get(_ENTRY_POINT_GROUP, []))
    return list(found)


def _coerce_to_module(obj: Any, plugin_name: str) -> ModuleType:
    """What an entry point loaded, as a module: a module as is, a string imported, a callable
    called (and its result coerced); anything else is a ``TypeError``."""
    if isinstance(obj, ModuleType):
        return obj
    if isinstance(obj, str):
        return importlib.import_module(obj)
    if callable(obj):
        return _coerce_to_module(obj(), plugin_name)
    raise TypeError(
        f"Plugin '{plugin_name}' returned unexpected type: {type(obj).__name__}. "
        f"Expected ModuleType, str, or callable returning module."
    )


def load_all_plugins() -> Dict[str, ModuleType]:
    """Loads every ``ge.es.plugins`` entry point and registers each module as
    ``sys.modules["ge.es.<name>"]`` (unless that name is taken), so ``import ge.es.<name>``
    works. Returns ``{name: module}``; failures are logged and left out."""
    plugins: Dict[str, ModuleType] = {}
    for ep in _iter_plugin_entry_points():
        name = getattr(ep, "name", None)
        if not name:
            _log.warning("Ignoring ES plugin entry point without name: %s", ep)
            continue
        if name in _RESERVED:
            _log.error("Ignoring ES plugin '%s': ge.es.%s is part of ge.es itself", name, name)
            continue
        value = getattr(ep, "value", "unknown")
        try:
            module = _coerce_to_module(ep.load(), name)
        except ImportError as err:
            _log.error("Failed to import ES plugin '%s' (%s): %s", name, value, err)
            continue
        except Exception as err:  # a broken plugin must not break the others
            _log.error("Failed to load ES plugin '%s' (entry point: %s): %s", name, value, err)
            continue
        sys.modules.setdefault(f"ge.es.{name}", module)
        plugins[name] = module
        _log.info("ES plugin '%s' loaded: %s", name, module.__name__)
    return plugins


def load_plugins(reload: bool = False) -> Dict[str, ModuleType]:
    """``load_all_plugins`` once per process (again with ``reload=True``), each plugin mounted
    as an attribute of ``ge.es``. A plugin whose name ``ge.es`` already uses (``GraphBuilder``,
    a built-in category already imported, ...) is logged and skipped; a reload first unmounts
    the plugins of the previous load."""
    global _loaded
    if _loaded is not None and not reload:
        return _loaded
    es = sys.modules.get("ge.es")
    for name, module in (_loaded or {}).items():
        if sys.modules.get(f"ge.es.{name}") is module:
            del sys.modules[f"ge.es.{name}"]
        if es is not None and es.__dict__.get(name) is module:
            delattr(es, name)
    loaded = load_all_plugins()
    if es is not None:
        for name, module in list(loaded.items()):
            current = es.__dict__.get(name, module)
            if current is not module:
                _log.error("Ignoring ES plugin '%s': ge.es.%s is taken by %r", name, name, current)
                if sys.modules.get(f"ge.es.{name}") is module:
                    del sys.modules[f"ge.es.{name}"]
                del loaded[name]
                continue
            setattr(es, name, module)
    _loaded = loaded
    return loaded


# ---- operators registered at run time, mounted as ge.es.<name> -------------------------------

_runtime: Dict[str, "_RuntimeOpsModule"] = {}


def check_module_name(name: Any) -> None:
    """ValueError unless ``name`` can be ``ge.es.<name>``: a Python identifier, not a keyword,
    not one of ge.es's own modules."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"ES module name must be a Python identifier, got {name!r}")
    if name in _RESERVED or name.startswith("_"):
        raise ValueError(f"ES module name '{name}' is taken: ge.es.{name} is part of ge.es itself")


class _RuntimeOpsModule(ModuleType):
    """``ge.es.<name>`` for operators registered at run time. Each function is generated on
    access from the operator's current prototype (GE's signature rules, as ``ge.es.all``), so a
    prototype registered again takes effect at once."""

    def __init__(self, name: str) -> None:
        super().__init__(f"ge.es.{name}", f"ES functions of operators mounted as ge.es.{name} at run time.")
        self.__all__: List[str] = []
        self._ge_ops: List[str] = []
        self._ge_cache: Dict[str, Tuple[str, Dict[str, Any]]] = {}

    def _ge_namespace(self, op: str) -> Dict[str, Any]:
        from ge import _native
        from ge.codegen import runtime_namespace

        text = _native._op_json(op)
        cached = self._ge_cache.get(op)
        if cached is None or cached[0] != text:
            cached = (text, runtime_namespace(op, self.__name__))
            self._ge_cache[op] = cached
        return cached[1]

    def __getattr__(self, attr: str) -> Any:
        if not attr.startswith("_"):
            base = attr[: -len("Output")] if attr.endswith("Output") else attr
            op = base if base in self._ge_ops else attr
            if op in self._ge_ops:
                found = self._ge_namespace(op).get(attr)
                if found is not None:
                    return found
        raise AttributeError(f"module '{self.__name__}' has no attribute '{attr}'")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self.__all__))


def mount_runtime_ops(module_name: str, op_names: Union[str, Iterable[str]]) -> ModuleType:
    """Mounts operators registered at run time (``ge.ops.register_regop``, ``ge.ops.register``,
    or any registered operator) as the module ``ge.es.<module_name>``, so that
    ``from ge.es.<module_name> import Op`` works, with the signature GE's generator gives ``Op``.
    Mounting into a name again adds the operators to that module. Returns the module.

    ValueError for a module name that is not an identifier or that ge.es or an installed plugin
    already uses; KeyError for an operator that is not registered (nothing is mounted then)."""
    from ge import _native

    check_module_name(module_name)
    names = [op_names] if isinstance(op_names, str) else list(op_names)
    for op in names:
        if not isinstance(op, str) or _native._op_json(op) is None:
            raise KeyError(f"unknown operator {op!r}: register it first (ge.ops.register_regop, "
                           "ge.ops.register)")
    module = _runtime.get(module_name)
    if module is None:
        es = sys.modules.get("ge.es")
        taken = sys.modules.get(f"ge.es.{module_name}")
        if taken is None and es is not None:
            taken = es.__dict__.get(module_name)
        if taken is None and es is not None and module_name in getattr(es, "_CATEGORIES", ()):
            taken = f"the built-in category ge.es.{module_name}"
        if taken is not None:
            raise ValueError(f"ES module name '{module_name}' is taken: ge.es.{module_name} is {taken!r}")
        module = _RuntimeOpsModule(module_name)
        _runtime[module_name] = module
        sys.modules[module.__name__] = module
        if es is not None:
            setattr(es, module_name, module)
    for op in names:
        if op not in module._ge_ops:
            module._ge_ops.append(op)
            module._ge_cache.pop(op, None)
            module.__all__ += [n for n in module._ge_namespace(op) if n not in module.__all__]
    return module


def unmount_runtime_ops(module_name: str) -> bool:
    """Removes a module ``mount_runtime_ops`` made (the operators stay registered); returns
    whether there was one."""
    module = _runtime.pop(module_name, None)
    if module is None:
        return False
    if sys.modules.get(module.__name__) is module:
        del sys.modules[module.__name__]
    es = sys.modules.get("ge.es")
    if es is not None and es.__dict__.get(module_name) is module:
        delattr(es, module_name)
    return True


def runtime_modules() -> Dict[str, ModuleType]:
    """The modules ``mount_runtime_ops`` made, by name."""
    return dict(_runtime)


def register_missing_operators(library: Union[str, Path, Dict[str, Any]]) -> List[str]:
    """Registers the operators of an operator library (a dict, or the path of its
    ``operators.json``) that the running library lacks, and returns their names; an operator
    already registered keeps its prototype. Generated ES packages call it when imported."""
    from ge import _native, ops

    doc = library if isinstance(library, dict) else json.loads(Path(library).read_text())
    missing = [op for op in doc.get("operators", []) if _native._op_json(op["name"]) is None]
    if not missing:
        return []
    return ops.register(dict(doc, operators=missing))
