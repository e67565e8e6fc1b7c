"""``ge.session``: run graphs (GE's ``Session``), on the CPU backend or through ACL.

``Session(options)`` holds graphs by id; ``run_graph(graph_id, inputs)`` runs one and returns its
outputs as ``ge.graph.Tensor`` (``.numpy()`` gives arrays). Inputs are ``ge.graph.Tensor`` objects
or anything numpy can make an array of, in the order of the graphs' Data indexes.

Options (session-wide, or per graph in ``add_graph``), as strings:

- ``ge.device``: ``cpu`` (default), ``acl`` (an Ascend NPU through ACL, see docs/acl.md; a
  ``ge.DeviceError`` when ACL cannot be loaded; tested against a test double of ACL only, never
  on an NPU), ``auto`` (ACL when it loads, otherwise the CPU with a warning in the log);
- ``ge.exec.deviceId``: the ACL device number (default 0);
- ``ge.graphMode``: ``on`` (default; ``GE_GRAPH_MODE`` sets the default) captures an execution plan
  per input signature (dtypes and shapes) and replays it from an LRU cache; ``off`` runs eagerly,
  compiling and running node by node on every run;
- ``ge.graphCacheCapacity``: plans kept per graph (default 12, or ``GE_GRAPH_CACHE_CAPACITY``);
- ``ge.threads``: threads a run's kernels may use for large work (matrix products, convolutions,
  large element-wise ops, row-wise normalisations; default: the machine's available parallelism,
  or ``GE_THREADS``). A run executes on the calling thread; large kernels hand their work to a
  pool of that many threads.

An unknown option is a ``ValueError`` that lists the known ones. Compiling a graph runs the
registered passes at their stages (see ``ge.passes``).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ge._native import SessionCore, _session_option_keys
from ge.graph import Graph, Tensor

__all__ = ["Session", "OPTION_KEYS"]

OPTION_KEYS = tuple(_session_option_keys())

_log = logging.getLogger("ge.session")

_global_options: Dict[str, str] = {}
_global_lock = threading.Lock()


def _set_global_options(options: Mapping[str, str]) -> None:
    with _global_lock:
        _global_options.clear()
        _global_options.update(options)


def _options(options: Optional[Mapping[str, Any]], what: str) -> Dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{what} options must be a dict of strings")
    out = {}
    for k, v in options.items():
        if not isinstance(k, str):
            raise TypeError(f"{what} option names must be strings, got {k!r}")
        out[k] = v if isinstance(v, str) else str(v)
    return out


class Session:
    """A session: graphs by id, run on the CPU or ACL backend (GE's ``ge.session.Session``)."""

    def __init__(self, options: Optional[Mapping[str, Any]] = None) -> None:
        with _global_lock:
            merged = dict(_global_options)
        merged.update(_options(options, "session"))
        self._core = SessionCore(merged)
        self._log_device_notes()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._executor_lock = threading.Lock()

    def add_graph(self, graph_id: int, graph: Graph, options: Optional[Mapping[str, Any]] = None) -> None:
        """Adds a copy of ``graph`` under ``graph_id`` (graph ``options`` over the session's)."""
        if not isinstance(graph, Graph):
            raise TypeError(f"add_graph needs a ge.graph.Graph, got {type(graph).__name__}")
        self._core.add_graph(_graph_id(graph_id), graph, _options(options, "graph"))
        self._log_device_notes()

    def _log_device_notes(self) -> None:
        # Why ge.device=auto fell back to the CPU (ACL not found, not initialisable, ...).
        for note in self._core._take_device_notes():
            _log.warning("%s", note)

    def remove_graph(self, graph_id: int) -> None:
        self._core.remove_graph(_graph_id(graph_id))

    def run_graph(self, graph_id: int, inputs: Sequence[Any]) -> List[Tensor]:
        """Runs graph ``graph_id``; ``inputs`` in Data-index order. Returns the outputs."""
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise TypeError("run_graph inputs must be a list of tensors or arrays")
        return list(self._core.run_graph(_graph_id(graph_id), list(inputs)))

    def run_graph_async(self, graph_id: int, inputs: Sequence[Any]) -> "Future[List[Tensor]]":
        """Like ``run_graph``, in a worker thread; returns a ``concurrent.futures.Future``."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(thread_name_prefix="ge-session")
            ex = self._executor
        return ex.submit(self.run_graph, graph_id, list(inputs))

    def graph_cache_stats(self, graph_id: int) -> Dict[str, int]:
        """The plan cache's counters: hits, misses, captures, evictions, size, capacity."""
        return dict(self._core.graph_cache_stats(_graph_id(graph_id)))

    def compile_report(self, graph_id: int) -> Optional[str]:
        """The latest compile of the graph (nodes per stage, passes, time), or None."""
        return self._core.compile_report(_graph_id(graph_id))

    def graph_device(self, graph_id: int) -> str:
        """Where the graph runs: ``"cpu"`` or ``"acl"`` (``auto`` is resolved when it is added)."""
        return self._core.graph_device(_graph_id(graph_id))

    def get_graph_ids(self) -> List[int]:
        return list(self._core.graph_ids())

    @property
    def options(self) -> Dict[str, Any]:
        device, mode, capacity, threads, device_id = self._core._options()
        return {
            "ge.device": device,
            "ge.exec.deviceId": device_id,
            "ge.graphMode": "on" if mode else "off",
            "ge.graphCacheCapacity": capacity,
            "ge.threads": threads,
        }

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:
            ex.shutdown(wait=False)


def _graph_id(graph_id: Any) -> int:
    if isinstance(graph_id, bool) or not isinstance(graph_id, int):
        raise TypeError(f"graph_id must be an int, got {type(graph_id).__name__}")
    if not 0 <= graph_id < 2**32:
        raise ValueError(f"graph_id must be in [0, 2**32), got {graph_id}")
    return graph_id
