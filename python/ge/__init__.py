"""ge-rs: a graph engine with a Rust core, following CANN GE's Python API.

Modules: ``ge.es`` (eager-style graph construction), ``ge.graph`` (Graph, Node, Tensor, types),
``ge.session`` (running graphs), ``ge.ge_global`` (``GeApi``), ``ge.passes`` (graph passes),
``ge.onnx`` (ONNX import and export), ``ge.utils`` (``GeUtils``), ``ge.errors`` (the ``GeError``
tree). After ``import ge`` each is reachable as an attribute (``ge.es.GraphBuilder``); a
subpackage is imported on first use, so ``import ge`` stays cheap.
"""

from ge import _native
from ge._internal.mpi_locate import prepare as _prepare_mpi
from ge.errors import *  # noqa: F403  (the GeError tree: ge.errors.__all__)
from ge.errors import __all__ as _error_names

__version__: str = _native.__version__

__all__ = [*_error_names, "__version__"]

# Under mpiexec: points the native core at the mpich wheel's libmpi (GE_MPI_LIBRARY) before a
# graph's collectives first need it.
_prepare_mpi()

# Subpackages that `ge.<name>` imports on first use. (No typing annotations and importlib
# imported late: this module adds nothing to the cost of `import ge`.)
_SUBMODULES = frozenset({"es", "graph", "session", "ge_global", "passes", "onnx", "utils", "distributed"})


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"ge.{name}")
    raise AttributeError(f"module 'ge' has no attribute '{name}'")


def __dir__() -> "list[str]":
    return sorted(set(globals()) | _SUBMODULES)
