"""One module per built-in operator: ``ge.es.ops.<op>`` (``add``, ``reduce_max``, ``conv2_d``, ...).

The modules are not files. The first import of one generates its source from the built-in
operator library (``ge._native._builtin_ops_json``, the ``operators.json`` the extension embeds)
with ``ge.codegen`` and runs it, so the module is what the generator would write: same text, same
signatures and docstrings, source for ``inspect`` and tracebacks (its ``__file__`` names
``ge/es/ops/<op>.py`` as if it were one). GE generates these files when it is built; ge-rs makes
them when they are first used. ``ge/es/all.pyi`` is their typed stub, checked in.

``ge.es.ops.<op>`` also works as an attribute: it imports the module.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
import sys as _sys
from importlib.abc import Loader as _Loader
from importlib.abc import MetaPathFinder as _MetaPathFinder
from importlib.machinery import ModuleSpec as _ModuleSpec
from types import ModuleType as _ModuleType
from typing import Any, Dict, List, Optional, Sequence

_library: Optional[Dict[str, Any]] = None
_modules: Dict[str, Dict[str, Any]] = {}  # module name -> operator
_exports: Dict[str, str] = {}  # exported name (Op, OpOutput) -> module name


def library() -> Dict[str, Any]:
    """The built-in operator library (parsed once)."""
    global _library
    if _library is None:
        import json

        from ge import _native
        from ge.codegen import exported_names, snake

        lib = json.loads(_native._builtin_ops_json())
        for op in lib["operators"]:
            module = snake(op["name"])
            _modules[module] = op
            for name in exported_names(op):
                _exports[name] = module
        _library = lib
    return _library


def exports() -> List[str]:
    """Every name the built-in modules export (``Op`` and, for several outputs, ``OpOutput``),
    in library order."""
    library()
    return list(_exports)


def module_of(name: str) -> Optional[str]:
    """The module under ``ge.es.ops`` that exports ``name``, or None."""
    library()
    return _exports.get(name)


class _OpModules(_MetaPathFinder, _Loader):
    """Finds and loads ``ge.es.ops.<op>`` for every operator of the built-in library."""

    def _op(self, fullname: str) -> Optional[Dict[str, Any]]:
        package, _, module = fullname.rpartition(".")
        if package != __name__:
            return None
        library()
        return _modules.get(module)

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[_ModuleType] = None) -> Optional[_ModuleSpec]:
        if self._op(fullname) is None:
            return None
        module = fullname.rpartition(".")[2]
        spec = _ModuleSpec(fullname, self, origin=_os.path.join(_os.path.dirname(__file__), module + ".py"))
        spec.has_location = True  # __file__: tracebacks and the user-line locator see a ge file
        return spec

    def create_module(self, spec: _ModuleSpec) -> Optional[_ModuleType]:
        return None  # the default module

    def exec_module(self, module: _ModuleType) -> None:
        from ge.codegen import exec_source

        exec_source(self.get_source(module.__name__), module.__file__ or module.__name__, module.__dict__)

    def get_source(self, fullname: str) -> str:
        """The generated source (``inspect.getsource`` and tracebacks read it through here)."""
        from ge.codegen import op_module_source

        op = self._op(fullname)
        if op is None:
            raise ImportError(f"no built-in operator module {fullname}", name=fullname)
        return op_module_source(op)


# Ahead of the path finders (which would look for files); once per process.
if not any(type(f).__name__ == "_OpModules" and type(f).__module__ == __name__ for f in _sys.meta_path):
    _sys.meta_path.insert(0, _OpModules())


def __getattr__(name: str) -> Any:
    """``ge.es.ops.<op>`` imports the module."""
    if not name.startswith("_"):
        library()
        if name in _modules:
            return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def __dir__() -> List[str]:
    library()
    return sorted(set(globals()) | set(_modules))
