"""GE import path ``ge.graph.graph``."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Union

from ge._native import Graph
from ge.graph.types import DumpFormat

__all__ = ["Graph", "DumpFormat"]


class _LoadFromAir:
    """``Graph.load_from_air`` in both forms: GE's ``graph.load_from_air(file_path)`` loads the
    file into ``graph`` and returns None; ``Graph.load_from_air(file_path)`` on the class (ge-rs's
    form) returns a new graph."""

    def __init__(self, load: Callable[[Any], Graph]) -> None:
        self._load = load
        self.__doc__ = _LoadFromAir.__doc__

    def __get__(self, obj: Optional[Graph], objtype: Optional[type] = None) -> Callable[..., Any]:
        load = self._load
        if obj is None:
            return load

        def load_into(file_path: Union[str, "os.PathLike[str]"]) -> None:
            obj._assign(load(file_path))

        load_into.__doc__ = "Loads an .air file (GE's ModelDef) into this graph, replacing its contents."
        return load_into


if not isinstance(Graph.__dict__.get("load_from_air"), _LoadFromAir):
    Graph.load_from_air = _LoadFromAir(Graph.load_from_air)  # type: ignore[method-assign]
