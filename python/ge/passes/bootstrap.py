"""Discovery of pass plugins: ``ASCEND_GE_PY_PASS_PATH`` and the entry-point group
``ge.passes.plugins``.

``ASCEND_GE_PY_PASS_PATH`` lists files (``*.py``) and directories, separated by ``os.pathsep``;
in a directory, every ``*.py`` file and every package (a folder with ``__init__.py``) not starting
with ``_`` is imported, in name order. Importing a plugin registers its passes (through the
decorators). A plugin that fails to import is reported (a ``PluginLoadWarning`` and a log record)
and skipped, and the passes it registered before failing are removed; the others load. Loading
twice imports nothing twice; ``unload_pass_plugins()`` forgets the plugins and their passes, so
the next load reads the environment again.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Dict, List

from .._internal.plugin_loader import forget_loaded_module, load_module_from_file, load_package
from .registry import get_registered_pass_dicts, unregister_pass
from .registry import get_registered_passes as _descriptors

__all__ = [
    "ENV_PY_PASS_PATH",
    "ENTRY_POINT_GROUP",
    "PluginLoadWarning",
    "PluginLoadError",
    "load_pass_plugins",
    "unload_pass_plugins",
    "get_plugin_load_errors",
    "get_registered_passes",
]

ENV_PY_PASS_PATH = "ASCEND_GE_PY_PASS_PATH"
ENTRY_POINT_GROUP = "ge.passes.plugins"
_log = logging.getLogger("ge.passes")


class PluginLoadWarning(UserWarning):
    """A pass plugin failed to import and was skipped."""


@dataclass(frozen=True)
class PluginLoadError:
    """One plugin that failed: where it came from and the error text."""

    source: str
    error: str


# Loaded plugins: source ("path:<abs path>" or "entry_point:<name>") -> module.
_loaded: Dict[str, ModuleType] = {}
_errors: List[PluginLoadError] = []


_KIND = "pass plugin"


def _import_file(path: Path) -> ModuleType:
    """A plugin file, through the shared plugin loader (``ge._internal.plugin_loader``)."""
    return load_module_from_file(path, module_prefix="_ge_py_pass_", plugin_kind=_KIND)


def _import_package(path: Path) -> ModuleType:
    return load_package(path, plugin_kind=_KIND)


def _candidates(entry: str) -> List[Path]:
    p = Path(entry).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{ENV_PY_PASS_PATH}: {p} does not exist")
    if p.is_file():
        if p.suffix != ".py":
            raise ValueError(f"{ENV_PY_PASS_PATH}: a plugin file must end with .py: {p}")
        return [p.resolve()]
    out = []
    for child in sorted(p.iterdir(), key=lambda c: c.name):
        if child.name.startswith("_") or child.name.startswith("."):
            continue
        if (child.is_file() and child.suffix == ".py") or (child.is_dir() and (child / "__init__.py").is_file()):
            out.append(child.resolve())
    return out


def _load_one(source: str, load) -> None:  # type: ignore[no-untyped-def]
    if source in _loaded:
        return
    before = {d.descriptor_key for d in _descriptors()}
    try:
        module = load()
    except Exception as e:  # noqa: BLE001 - a plugin's failure must not stop the others
        for d in _descriptors():
            if d.descriptor_key not in before:
                unregister_pass(d.descriptor_key)
        err = PluginLoadError(source=source, error=f"{type(e).__name__}: {e}")
        _errors.append(err)
        _log.warning("pass plugin %s failed to load and was skipped: %s", source, err.error)
        warnings.warn(f"pass plugin {source} failed to load and was skipped: {err.error}", PluginLoadWarning, stacklevel=3)
        return
    _loaded[source] = module
    _log.info("loaded pass plugin %s", source)


def _entry_point_module(ep: "metadata.EntryPoint") -> ModuleType:
    obj = ep.load()
    if isinstance(obj, ModuleType):
        return obj
    if callable(obj):
        result = obj()
        if isinstance(result, ModuleType):
            return result
        return sys.modules.get(getattr(obj, "__module__", ""), ModuleType(ep.name))
    raise TypeError(f"entry point {ep.name} must name a module or a callable")


def load_pass_plugins() -> List[ModuleType]:
    """Imports the plugins of ``ASCEND_GE_PY_PASS_PATH`` and of the ``ge.passes.plugins`` entry
    points (in that order); returns every loaded plugin module. Failures are reported and
    skipped (see ``get_plugin_load_errors``)."""
    del _errors[:]
    for entry in [e for e in os.environ.get(ENV_PY_PASS_PATH, "").split(os.pathsep) if e.strip()]:
        try:
            paths = _candidates(entry.strip())
        except (OSError, ValueError) as e:
            _errors.append(PluginLoadError(source=f"path:{entry}", error=str(e)))
            _log.warning("%s", e)
            warnings.warn(str(e), PluginLoadWarning, stacklevel=2)
            continue
        for p in paths:
            loader = (lambda p=p: _import_file(p)) if p.is_file() else (lambda p=p: _import_package(p))
            _load_one(f"path:{p}", loader)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        _load_one(f"entry_point:{ep.name}={ep.value}", lambda ep=ep: _entry_point_module(ep))
    return list(_loaded.values())


def unload_pass_plugins() -> None:
    """Forgets the loaded plugins and unregisters their passes; the next
    ``load_pass_plugins()`` reads the environment again."""
    names = {m.__name__ for m in _loaded.values()}
    for d in _descriptors():
        if d.module_name in names or any(d.module_name.startswith(n + ".") for n in names):
            unregister_pass(d.descriptor_key)
    for source, m in list(_loaded.items()):
        if source.startswith("path:"):
            forget_loaded_module(m)
    _loaded.clear()
    del _errors[:]


def get_plugin_load_errors() -> List[PluginLoadError]:
    """The plugins that failed in the last ``load_pass_plugins()``."""
    return list(_errors)


def get_registered_passes() -> List[dict]:
    """GE's ``bootstrap.get_registered_passes``: the registered passes as dicts."""
    return get_registered_pass_dicts()
