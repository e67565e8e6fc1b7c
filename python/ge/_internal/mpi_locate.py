"""Finds the MPI library for the native core before it first needs it (imported by ``ge``'s
``__init__``; only ``os``, ``sys`` and the native module, so ``import ge`` stays cheap).

Under a launcher (``mpiexec``/``mpirun``: ``PMI_SIZE``, ``OMPI_COMM_WORLD_SIZE``, ``PMIX_SIZE`` or
``MPI_LOCALNRANKS`` in the environment, as the native core reads them) and without ``GE_MPI_LIBRARY`` set, this sets
``GE_MPI_LIBRARY`` to the ``libmpi`` of the ``mpich`` wheel (``pip install ge-rs[mpi]``), which
installs it into ``<prefix>/lib``. A libmpi already loaded in the process (mpi4py imported before
the first collective) is found by the native core itself and wins over ``GE_MPI_LIBRARY``: one
process has one MPI.
"""

from __future__ import annotations

import os
import sys

from ge import _native

#: The library names tried in each directory, MPICH's ABI first.
LIBRARY_NAMES = ("libmpi.so.12", "libmpi.so")


def launched() -> bool:
    """Whether a launcher started this process (any world size)."""
    return _native._launched_world_size() is not None


def candidate_dirs() -> list:
    """Where the ``mpich`` wheel puts its library: ``lib`` under this Python's prefixes and the
    user base (``pip install --user``)."""
    dirs = []
    for prefix in (sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)):
        d = os.path.join(prefix, "lib")
        if d not in dirs:
            dirs.append(d)
    user = os.environ.get("PYTHONUSERBASE") or os.path.expanduser("~/.local")
    dirs.append(os.path.join(user, "lib"))
    return dirs


def find_library() -> "str | None":
    """The path of the ``mpich`` wheel's libmpi, or None."""
    for d in candidate_dirs():
        for name in LIBRARY_NAMES:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
    return None


def launcher_search_path() -> str:
    """Where :func:`find_launcher` looks, as a ``PATH``-style string: ``bin`` under this Python's
    prefixes and the user base (where the ``mpich`` wheel installs ``mpiexec``), the directory
    of this Python, then ``PATH``."""
    dirs = [os.path.join(os.path.dirname(d), "bin") for d in candidate_dirs()]
    dirs.append(os.path.dirname(sys.executable))
    dirs += [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    unique = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return os.pathsep.join(unique)


def find_launcher(search_path: "str | None" = None) -> "str | None":
    """The path of MPI's launcher (``mpiexec``) on `search_path` (default:
    :func:`launcher_search_path`), or None."""
    import shutil

    return shutil.which("mpiexec", path=launcher_search_path() if search_path is None else search_path)


def prepare() -> None:
    """Sets ``GE_MPI_LIBRARY`` when launched by MPI and it is unset (see the module's text)."""
    if os.environ.get("GE_MPI_LIBRARY") or not launched():
        return
    path = find_library()
    if path is not None:
        os.environ["GE_MPI_LIBRARY"] = path
