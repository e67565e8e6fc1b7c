"""ES plugins: every entry point of the group ``ge.es.plugins`` becomes ``ge.es.<name>``.

GE's ES packages (``es_math``, ``es_nn``, ...) and user packages of generated op functions
register here; ``import ge.es`` loads them all. An entry point may name a module, a string
(a module name) or a callable returning either. A plugin that fails to load is logged on the
``ge.es`` logger and skipped; the others load.
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import ModuleType
from typing import Any, Dict, List, Optional

from importlib.metadata import entry_points

__all__ = ["load_all_plugins", "load_plugins"]

_ENTRY_POINT_GROUP = "ge.es.plugins"

# ge.es's own submodules, which a plugin must not shadow.
_RESERVED = frozenset({"all", "ops", "graph_builder", "tensor_holder", "tensor_like"})

_log = logging.getLogger("ge.es")
_loaded: Optional[Dict[str, ModuleType]] = None


def _iter_plugin_entry_points() -> List[Any]:
    """The entry points of the group ``ge.es.plugins``."""
    found = entry_points(group=_ENTRY_POINT_GROUP)
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
