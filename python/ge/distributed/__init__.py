"""Graphs across processes: the world the HCCL collectives (``HcomAllReduce``, ``HcomAllGather``,
``HcomReduceScatter``, ``HcomBroadcast``, ``HcomAllToAllV``, ``HcomSend``/``HcomReceive``) run on,
and its groups.

A program launched by ``mpiexec -n N python prog.py`` (with ``pip install ge-rs[mpi]``, which
brings MPICH) runs its collectives over MPI: ``hccl_world_group`` is the N ranks. Without a
launcher the world is this process alone (one rank). See docs/distributed.md.

- :func:`get_rank`, :func:`get_world_size`: this process's rank and the world size (the world
  is made on first use: MPI is initialised then, unless the process already did, e.g. mpi4py);
- :func:`backend`: what runs the collectives ("single process", or MPI with its version);
- :func:`create_group`, :func:`destroy_group`, :func:`group_ranks`: groups of ranks for the
  collectives' ``group`` attribute (HCCL's ``HcomCreateGroup``; GE has no Python form of it,
  these are ge-rs's).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ge import _native
from ge._internal.mpi_locate import find_library, launched, prepare

__all__ = [
    "get_rank", "get_world_size", "backend", "world", "launched", "find_library",
    "create_group", "destroy_group", "group_ranks", "WORLD_GROUP",
]

WORLD_GROUP = "hccl_world_group"
"""GE's group of every rank."""


def world() -> Tuple[int, int, str]:
    """(rank, world size, backend) of this process."""
    prepare()
    rank, size, name = _native._collective_world()
    return int(rank), int(size), str(name)


def get_rank(group: str = WORLD_GROUP) -> int:
    """This process's rank (0 without a launcher); in ``group``, its place among the group's
    ranks (a ValueError when it is not one of them)."""
    rank = world()[0]
    if group == WORLD_GROUP:
        return rank
    ranks = group_ranks(group)
    if rank not in ranks:
        raise ValueError(f"rank {rank} is not in group {group!r} (ranks {ranks})")
    return ranks.index(rank)


def get_world_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks (1 without a launcher), or of ``group``."""
    if group == WORLD_GROUP:
        return world()[1]
    return len(group_ranks(group))


def create_group(name: str, ranks: Sequence[int]) -> None:
    """Creates the group ``name`` of the world ranks ``ranks`` (ascending, no repeats), for the
    ``group`` attribute of the Hcom operators: in it, rank ``ranks[i]`` is rank ``i``
    (``root_rank``, ``dest_rank``, ``src_rank``) and ``rank_size`` is ``len(ranks)``.

    Every rank of the group calls it with the same ranks (it waits for them, at most the
    collective timeout); a rank outside may call it too, and then only learns the group's ranks.
    Errors (ge.GeError): ``hccl_world_group`` or a name in use, ranks outside the world, not
    ascending, or empty.
    """
    prepare()
    if isinstance(ranks, (str, bytes)) or not all(isinstance(r, int) and r >= 0 for r in ranks):
        raise TypeError("create_group takes a list of rank numbers (ints >= 0)")
    _native._collective_create_group(str(name), [int(r) for r in ranks])


def destroy_group(name: str) -> None:
    """Forgets the group ``name`` (graphs compiled with it keep using it); a ValueError when
    there is no such group."""
    if not _native._collective_destroy_group(str(name)):
        raise ValueError(f"there is no group {name!r}")


def group_ranks(name: str) -> List[int]:
    """The world ranks of group ``name`` (every rank for ``hccl_world_group``); a ValueError
    when there is no such group."""
    prepare()
    ranks: Optional[List[int]] = _native._collective_group_ranks(str(name))
    if ranks is None:
        raise ValueError(f"there is no group {name!r} (create_group creates one)")
    return list(ranks)


def backend() -> str:
    """What runs the collectives: "single process", or "MPI: <library version>"."""
    return world()[2]
