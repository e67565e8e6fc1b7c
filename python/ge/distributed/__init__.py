"""Graphs across processes: the world the HCCL collectives (``HcomAllReduce``, ``HcomAllGather``,
``HcomReduceScatter``, ``HcomBroadcast``) run on.

A program launched by ``mpiexec -n N python prog.py`` (with ``pip install ge-rs[mpi]``, which
brings MPICH) runs its collectives over MPI: ``hccl_world_group`` is the N ranks. Without a
launcher the world is this process alone (one rank). See docs/distributed.md.

- :func:`get_rank`, :func:`get_world_size`: this process's rank and the world size (the world
  is made on first use: MPI is initialised then, unless the process already did, e.g. mpi4py);
- :func:`backend`: what runs the collectives ("single process", or MPI with its version).
"""

from __future__ import annotations

from typing import Tuple

from ge import _native
from ge._internal.mpi_locate import find_library, launched, prepare

__all__ = ["get_rank", "get_world_size", "backend", "world", "launched", "find_library"]


def world() -> Tuple[int, int, str]:
    """(rank, world size, backend) of this process."""
    prepare()
    rank, size, name = _native._collective_world()
    return int(rank), int(size), str(name)


def get_rank() -> int:
    """This process's rank (0 without a launcher)."""
    return world()[0]


def get_world_size() -> int:
    """The number of ranks (1 without a launcher)."""
    return world()[1]


def backend() -> str:
    """What runs the collectives: "single process", or "MPI: <library version>"."""
    return world()[2]
