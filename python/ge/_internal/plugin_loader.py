"""Loading Python plugins from a path-list environment variable (GE's ``ge._internal.plugin_loader``).

An environment variable such as ``ASCEND_CUSTOM_OPP_PATH`` lists files (``*.py``) and directories,
separated by ``os.pathsep``. In a directory, every ``*.py`` file and every package (a folder with
``__init__.py``) whose name does not start with ``_`` is imported, in name order. A file or package
is imported once per process, keyed by its canonical (symlink-resolved) path, whichever plugin kind
asks first: the custom-op loader and the ONNX-plugin loader reading the same path get the same
module objects.

``load_plugins_from_env`` is GE's form: the first failure (a missing path, a non-``.py`` file, an
exception raised by a plugin) propagates. ``load_plugins_from_env_isolated`` loads the same set but
isolates each file: a failing file is recorded as a ``PluginLoadFailure``, reported with a
``PluginLoadWarning`` naming it, and skipped, so one broken plugin does not stop the others.

A file that fails part-way may already have registered things (custom ops, ONNX Plugins) through
decorators. Each registry adds a rollback with ``add_rollback_hook(hook)``; when a plugin file or
package fails to import, in either form and whichever plugin kind loads it, every hook is called
with the failed module's name so that what it registered is removed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, Iterable, List, Optional, Tuple

__all__ = [
    "add_rollback_hook",
    "PluginLoadFailure",
    "PluginLoadWarning",
    "forget_loaded_module",
    "load_module_from_file",
    "load_package",
    "load_plugins_from_env",
    "load_plugins_from_env_isolated",
    "normalize_path_list",
    "scan_modules_from_path",
]

# canonical path of a plugin file (or a package's __init__.py) -> the module name it was imported as
_MODULE_NAME_BY_CANONICAL_PATH: Dict[Path, str] = {}


_ROLLBACK_HOOKS: List[Callable[[str], object]] = []


def add_rollback_hook(hook: Callable[[str], object]) -> None:
    """Adds ``hook(module_name)``, called when a plugin module fails to import, to remove what
    that module (or its submodules) registered. Adding the same hook twice has no effect."""
    if not callable(hook):
        raise TypeError("a rollback hook must be callable")
    if hook not in _ROLLBACK_HOOKS:
        _ROLLBACK_HOOKS.append(hook)


def _roll_back(module_name: str) -> None:
    for hook in list(_ROLLBACK_HOOKS):
        try:
            hook(module_name)
        except Exception as e:  # noqa: BLE001 - the import error is the one to report
            warnings.warn(f"rollback of plugin module {module_name} failed: {type(e).__name__}: {e}",
                          PluginLoadWarning, stacklevel=2)


class PluginLoadWarning(UserWarning):
    """A plugin file failed to load and was skipped (``load_plugins_from_env_isolated``)."""


@dataclass(frozen=True)
class PluginLoadFailure:
    """One path that failed to load: the path, the module name it was (or would be) imported
    as (``None`` when no import was attempted: a missing path or a non-``.py`` file), and the
    exception."""

    path: Path
    module_name: Optional[str]
    error: Exception

    def __str__(self) -> str:
        return f"{self.path}: {type(self.error).__name__}: {self.error}"


_OnError = Optional[Callable[[PluginLoadFailure], None]]


def normalize_path_list(path_value: str) -> List[str]:
    """Splits a path list on ``os.pathsep``, stripping blanks and dropping empty items."""
    if not path_value:
        return []
    return [item.strip() for item in path_value.split(os.pathsep) if item.strip()]


def _get_loaded_module(canonical_path: Path) -> Optional[ModuleType]:
    module_name = _MODULE_NAME_BY_CANONICAL_PATH.get(canonical_path)
    if module_name is None:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        del _MODULE_NAME_BY_CANONICAL_PATH[canonical_path]
    return module


def _file_module_name(file_path: Path, module_prefix: str) -> str:
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in file_path.stem)
    return f"{module_prefix}{stem}_{abs(hash(str(file_path)))}"


def load_module_from_file(file_path: Path, *, module_prefix: str, plugin_kind: str) -> ModuleType:
    """Imports one plugin file (once per canonical path) as ``<module_prefix><stem>_<hash>``; an
    exception raised while executing it propagates and leaves nothing in ``sys.modules``."""
    file_path = Path(file_path).resolve()
    loaded_module = _get_loaded_module(file_path)
    if loaded_module is not None:
        return loaded_module
    module_name = _file_module_name(file_path, module_prefix)
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, file_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {plugin_kind} file: {file_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        _roll_back(module_name)
        raise
    _MODULE_NAME_BY_CANONICAL_PATH[file_path] = module_name
    return module


def _load_package(package_dir: Path, plugin_kind: str) -> ModuleType:
    """Imports a package directory by its folder name (its parent is on ``sys.path`` while the
    caller scans), once per canonical ``__init__.py``."""
    package_init = (package_dir / "__init__.py").resolve()
    module = _get_loaded_module(package_init)
    if module is not None:
        return module
    try:
        module = importlib.import_module(package_dir.name)
    except BaseException:
        _roll_back(package_dir.name)
        raise
    module_file = getattr(module, "__file__", None)
    if module_file is None or Path(module_file).resolve() != package_init:
        raise ImportError(
            f"cannot load {plugin_kind} package {package_dir}: the name {package_dir.name!r} is already "
            f"taken by {module_file or 'a built-in module'}"
        )
    _MODULE_NAME_BY_CANONICAL_PATH[package_init] = module.__name__
    return module


def load_package(package_dir: Path, *, plugin_kind: str) -> ModuleType:
    """Imports a plugin package (a folder with ``__init__.py``) by its folder name, once per
    canonical ``__init__.py``, its parent folder on ``sys.path`` while it is imported."""
    package_dir = Path(package_dir).resolve()
    parent = str(package_dir.parent)
    inserted = parent not in sys.path
    if inserted:
        sys.path.insert(0, parent)
    try:
        return _load_package(package_dir, plugin_kind)
    finally:
        if inserted and parent in sys.path:
            sys.path.remove(parent)


def _attempt(
    path: Path, module_name: Optional[str], load: Callable[[], ModuleType], on_error: _OnError
) -> Optional[ModuleType]:
    if on_error is None:
        return load()
    try:
        return load()
    except Exception as e:  # noqa: BLE001 - isolation: one plugin's failure must not stop the others
        on_error(PluginLoadFailure(path=path, module_name=module_name, error=e))
        return None


def _scan(path_item: str, module_prefix: str, plugin_kind: str, on_error: _OnError) -> List[ModuleType]:
    path = Path(path_item).resolve()
    if not path.exists():
        err: Exception = FileNotFoundError(f"{plugin_kind} path does not exist: {path}")
        if on_error is None:
            raise err
        on_error(PluginLoadFailure(path=path, module_name=None, error=err))
        return []
    if path.is_file():
        if path.suffix != ".py":
            err = ValueError(f"{plugin_kind} file must end with .py: {path}")
            if on_error is None:
                raise err
            on_error(PluginLoadFailure(path=path, module_name=None, error=err))
            return []
        module = _attempt(
            path,
            _MODULE_NAME_BY_CANONICAL_PATH.get(path, _file_module_name(path, module_prefix)),
            lambda: load_module_from_file(path, module_prefix=module_prefix, plugin_kind=plugin_kind),
            on_error,
        )
        return [] if module is None else [module]

    modules: List[ModuleType] = []
    path_str = str(path)
    path_inserted = path_str not in sys.path
    if path_inserted:
        sys.path.insert(0, path_str)
    try:
        for child in sorted(path.iterdir(), key=lambda item: item.name):
            if child.name.startswith("_"):
                continue
            module: Optional[ModuleType] = None
            if child.is_file() and child.suffix == ".py":
                canonical = child.resolve()
                module = _attempt(
                    child,
                    _MODULE_NAME_BY_CANONICAL_PATH.get(
                        canonical, _file_module_name(canonical, module_prefix)
                    ),
                    lambda c=child: load_module_from_file(  # type: ignore[misc]
                        c, module_prefix=module_prefix, plugin_kind=plugin_kind
                    ),
                    on_error,
                )
            elif child.is_dir() and (child / "__init__.py").exists():
                module = _attempt(
                    child,
                    child.name,
                    lambda c=child: _load_package(c, plugin_kind),  # type: ignore[misc]
                    on_error,
                )
            if module is not None:
                modules.append(module)
    finally:
        if path_inserted and path_str in sys.path:
            sys.path.remove(path_str)
    return modules


def scan_modules_from_path(path_item: str, *, module_prefix: str, plugin_kind: str) -> List[ModuleType]:
    """The modules of one path-list item: the file itself, or a directory's ``*.py`` files and
    packages not starting with ``_``, in name order. Raises ``FileNotFoundError`` for a missing
    path and ``ValueError`` for a file not ending with ``.py`` (GE's messages)."""
    return _scan(path_item, module_prefix, plugin_kind, None)


def _collect(env_name: str, module_prefix: str, plugin_kind: str, on_error: _OnError) -> List[ModuleType]:
    loaded_modules: List[ModuleType] = []
    seen_module_names = set()

    def append_modules(modules: Iterable[ModuleType]) -> None:
        for module in modules:
            module_name = getattr(module, "__name__", "")
            if module_name in seen_module_names:
                continue
            seen_module_names.add(module_name)
            loaded_modules.append(module)

    for path_item in normalize_path_list(os.getenv(env_name, "")):
        append_modules(_scan(path_item, module_prefix, plugin_kind, on_error))
    return loaded_modules


def load_plugins_from_env(env_name: str, *, module_prefix: str, plugin_kind: str) -> List[ModuleType]:
    """GE's loader: imports every plugin the path list in ``env_name`` names (each canonical
    file or package once) and returns the modules without duplicates, in path-list order. The
    first failure propagates."""
    return _collect(env_name, module_prefix, plugin_kind, None)


def load_plugins_from_env_isolated(
    env_name: str, *, module_prefix: str, plugin_kind: str, warn: bool = True
) -> Tuple[List[ModuleType], List[PluginLoadFailure]]:
    """Like ``load_plugins_from_env``, but each path is isolated: a missing path, a non-``.py``
    file or a plugin raising an ``Exception`` while it is imported is recorded, reported with a
    ``PluginLoadWarning`` naming the file (unless ``warn=False``) and skipped; the other plugins
    load. Returns ``(modules, failures)``. A failing file is not remembered as loaded, so a later
    call retries it."""
    failures: List[PluginLoadFailure] = []

    def on_error(failure: PluginLoadFailure) -> None:
        failures.append(failure)
        if warn:
            warnings.warn(f"{plugin_kind} {failure} (skipped)", PluginLoadWarning, stacklevel=4)

    modules = _collect(env_name, module_prefix, plugin_kind, on_error)
    return modules, failures


def forget_loaded_module(module: ModuleType) -> None:
    """Forgets a loaded plugin module (and its submodules) so that its path is imported again on
    the next load; for tests and reloading."""
    name = module.__name__
    for path, module_name in list(_MODULE_NAME_BY_CANONICAL_PATH.items()):
        if module_name == name:
            del _MODULE_NAME_BY_CANONICAL_PATH[path]
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        sys.modules.pop(key, None)
