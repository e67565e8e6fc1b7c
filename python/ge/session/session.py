"""GE's ``Session`` (module ``ge.session.session``), on ge-rs's CPU backend or through ACL.

The GE API (argument checks and messages, return values, ``ge.error.GeError`` failures carrying
``api_name`` and ``context``) is GE's; ge-rs's extras sit beside it: numpy arrays as inputs,
``run_graph_async``, ``add_model`` (an offline model, run without compiling again),
``graph_cache_stats``, ``compile_report``, ``plan_memory``, ``graph_device``, ``get_graph_ids`` and
``options``.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Optional

import numpy as np

from ge._native import SessionCore
from ge.allocator import Allocator
from ge.error import _api_call, _set_error_msg, raise_ge_error
from ge.graph import Graph, Tensor
from ge.session._options import Options, global_options, sort_options

__all__ = ["Session"]

_log = logging.getLogger("ge.session")

# stream -> the allocator registered for it. Process-wide, as GE's registry of external
# allocators is; ge-rs records them and never calls them (it keeps its own host memory).
_external_allocators: Dict[int, Allocator] = {}
_allocators_lock = threading.Lock()


def _require(value: Any, kind: type, message: str) -> None:
    """GE's ``TypeError(message)`` for an argument that is not a ``kind``."""
    if not isinstance(value, kind):
        raise TypeError(message)


def _check_graph_id(graph_id: Any) -> int:
    _require(graph_id, int, "Graph_id must be an integer")
    if not 0 <= graph_id < 2**32:  # GE would wrap it to 32 bits
        raise ValueError(f"graph_id must be in [0, 2**32), got {graph_id}")
    return int(graph_id)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray, np.generic))


def _check_inputs(inputs: Any, optional_at: Any = ()) -> List[Any]:
    _require(inputs, list, "inputs must be a list of Tensor")
    # ge.graph.Tensor as in GE; numpy arrays (and numpy scalars) are ge-rs's extra, and so are a
    # list of them (a sequence, DT_VARIANT) and, at an input of a list or optional (the indexes
    # `optional_at`), None (an empty optional).
    if not all((x is None and i in optional_at) or _is_tensor(x)
               or (isinstance(x, list) and all(_is_tensor(e) for e in x))
               for i, x in enumerate(inputs)):
        raise TypeError("All elements in inputs must be the type of Tensor")
    return list(inputs)


def _graph_options(options: Any) -> Options:
    """A graph's options (add_graph, add_model) checked and sorted; warnings point at the
    caller of the session method."""
    if options is None:
        options = {}
    elif not isinstance(options, dict):
        raise TypeError("options must be a dictionary")
    return sort_options(options, "R", stacklevel=3)


def _stream_text(stream: int) -> str:
    return f"0x{stream:x}"


def _reject_null_stream(api_name: str, stream: int, **context: Any) -> None:
    # GE's C API asserts the stream is not null before it does anything.
    if stream == 0:
        _set_error_msg("the stream is null (0)")
        raise_ge_error(api_name, **context, stream=_stream_text(stream))


def _external_allocator(stream: int) -> Optional[Allocator]:
    """The allocator registered for ``stream`` (recorded, never called), or None."""
    with _allocators_lock:
        return _external_allocators.get(stream)


class Session:
    """A session: graphs by id, run on the CPU (or ACL) backend (GE's ``ge.session.Session``).

    ``Session(options=None)``: ``options`` a dict of str to str (see ``ge.session``), over the
    ones ``GeApi.ge_initialize`` set. A ``Session`` cannot be copied (``RuntimeError``, as in GE).
    """

    def __init__(self, options: Optional[Dict[str, str]] = None) -> None:
        if options is None:
            options = {}
        elif not isinstance(options, dict):
            raise TypeError("option must be a dictionary")
        self._options = sort_options(options, "S", stacklevel=2).over(global_options())
        with _api_call("CreateSession"):
            self._core = SessionCore(self._options.ours)
        from ge.custom_op.bootstrap import load_custom_op_plugins_at_init

        load_custom_op_plugins_at_init()
        self._graph_options: Dict[int, Options] = {}
        # graph id -> the Data indexes taking a list or optional (None feeds an empty optional).
        self._variant_at: Dict[int, frozenset] = {}
        self._log_device_notes()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._executor_lock = threading.Lock()

    def __copy__(self) -> None:
        raise RuntimeError("Session does not support copy")

    def __deepcopy__(self, memo: Any) -> None:
        raise RuntimeError("Session does not support deepcopy")

    # -- GE's API ------------------------------------------------------------------------------

    def add_graph(self, graph_id: int, add_graph: Graph, options: Optional[Dict[str, str]] = None) -> int:
        """Adds a copy of graph ``add_graph`` under ``graph_id``; ``options`` (a dict of str to
        str) over the session's. Returns 0, as GE."""
        _require(graph_id, int, "Graph_id must be an integer")
        _require(add_graph, Graph, "Add_graph must be a Graph")
        graph_options = _graph_options(options)
        graph_id = _check_graph_id(graph_id)
        with _api_call("AddGraph", graph_id=graph_id):
            variant_at = self._core.add_graph(graph_id, add_graph, graph_options.ours)
        self._added(graph_id, graph_options)
        self._variant_at[graph_id] = frozenset(variant_at)
        return 0

    def remove_graph(self, graph_id: int) -> None:
        """Removes graph ``graph_id`` (a ``GeError`` when the session has none of that id)."""
        graph_id = _check_graph_id(graph_id)
        with _api_call("RemoveGraph", graph_id=graph_id):
            self._core.remove_graph(graph_id)
        self._graph_options.pop(graph_id, None)
        self._variant_at.pop(graph_id, None)

    def run_graph(self, graph_id: int, inputs: List[Any]) -> List[Tensor]:
        """Runs graph ``graph_id`` on ``inputs`` (a list, in Data-index order, of
        ``ge.graph.Tensor`` or, as ge-rs's extra, numpy arrays; for a sequence input a list of
        them, for an empty optional None). Returns the outputs as ``ge.graph.Tensor`` (a
        sequence output as a list of them, an empty optional as None)."""
        graph_id = _check_graph_id(graph_id)
        optional_at = self._variant_at.get(graph_id, frozenset())
        return self._run("RunGraph", graph_id, _check_inputs(inputs, optional_at))

    def run_graph_with_stream_async(self, graph_id: int, stream: int, inputs: List[Any]) -> List[Tensor]:
        """GE's asynchronous run on ``stream`` (an integer handle, not 0). ge-rs runs it at once
        on the calling thread: the run is finished when this returns (synchronising the stream
        has nothing left to wait for). The outputs are placed on the device, as GE's are
        (``PLACEMENT_DEVICE``; ``to_host()`` moves them), but their bytes are in host memory,
        ge-rs's own, whatever allocator is registered for the stream (it is never called).
        Checks and failures are GE's (``api_name`` ``RunGraphWithStreamAsync``, ``context``
        graph_id and stream)."""
        _require(graph_id, int, "Graph_id must be an integer")
        _require(stream, int, "Stream must be an integer")
        graph_id = _check_graph_id(graph_id)
        inputs = _check_inputs(inputs)
        _reject_null_stream("RunGraphWithStreamAsync", stream, graph_id=graph_id)
        outputs = self._run("RunGraphWithStreamAsync", graph_id, inputs, stream=_stream_text(stream))
        return [t.to_device() for t in outputs]

    def register_external_allocator(self, stream: int, allocator: Allocator) -> None:
        """Registers ``allocator`` (a ``ge.allocator.Allocator``) for ``stream`` (an integer
        handle, not 0), replacing one registered before; process-wide, as in GE. ge-rs records
        it and never calls it: runs keep ge-rs's own host memory."""
        _require(stream, int, "stream must be an integer")
        _require(allocator, Allocator, "allocator must be an Allocator instance")
        _reject_null_stream("RegisterExternalAllocator", stream)
        with _allocators_lock:
            _external_allocators[stream] = allocator
        _log.debug("allocator %r recorded for stream %s; ge-rs keeps its own host memory and does not call it",
                   allocator, _stream_text(stream))

    def unregister_external_allocator(self, stream: int) -> None:
        """Forgets the allocator registered for ``stream`` (none registered is not an error, as
        in GE)."""
        _require(stream, int, "stream must be an integer")
        _reject_null_stream("UnregisterExternalAllocator", stream)
        with _allocators_lock:
            _external_allocators.pop(stream, None)

    # -- ge-rs's extras ------------------------------------------------------------------------

    def run_graph_async(self, graph_id: int, inputs: List[Any]) -> "Future[List[Tensor]]":
        """Like ``run_graph``, in a worker thread; returns a ``concurrent.futures.Future``."""
        graph_id = _check_graph_id(graph_id)
        inputs = _check_inputs(inputs)
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(thread_name_prefix="ge-session")
            ex = self._executor
        return ex.submit(self._run, "RunGraph", graph_id, inputs)

    def add_model(self, graph_id: int, model: Any, options: Optional[Dict[str, str]] = None, *,
                  index: int = 0) -> int:
        """Adds graph ``index`` of an offline model (a ``ge.offline_compile.ModelBuffer``, or the
        path of an ``.om`` file) under ``graph_id``, already compiled: its runs only build the
        execution plan (no pass, inference or optimisation). It runs inputs of the dtypes and
        shapes it was compiled for; others are a ``ValueError`` (and ``GeError``). A file that
        cannot be read raises ``ge.offline_compile.ModelFileError``. Returns 0."""
        import os

        from ge.offline_compile import ModelBuffer, load_model

        _require(graph_id, int, "Graph_id must be an integer")
        if isinstance(model, (str, os.PathLike)):
            model = load_model(model)
        _require(model, ModelBuffer, "model must be a ModelBuffer or the path of an .om file")
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError("index must be an integer")
        graph_options = _graph_options(options)
        graph_id = _check_graph_id(graph_id)
        with _api_call("AddModel", graph_id=graph_id):
            if not 0 <= index < model.graph_count:
                raise ValueError(f"the model has {model.graph_count} graph(s), no graph {index}")
            self._core.add_compiled_graph(graph_id, model._core(), index, graph_options.ours)
        self._added(graph_id, graph_options)
        return 0

    def graph_cache_stats(self, graph_id: int) -> Dict[str, int]:
        """The plan cache's counters: hits, misses, captures, evictions, size, capacity."""
        return dict(self._core.graph_cache_stats(_check_graph_id(graph_id)))

    def compile_report(self, graph_id: int) -> Optional[str]:
        """The latest compile of the graph (nodes per stage, passes, time), or None before its
        first run; it ends with the GE options recorded for the graph and the unknown ones
        ignored, when there are any."""
        graph_id = _check_graph_id(graph_id)
        report = self._core.compile_report(graph_id)
        if report is None:
            return None
        lines = self._graph_options.get(graph_id, Options()).report_lines()
        return "\n".join([report.rstrip("\n"), *lines]) if lines else report

    def plan_memory(self, graph_id: int) -> Optional[Dict[str, Any]]:
        """The memory plan of the graph's latest compile (refused for its memory limit or not),
        or None before its first run: a dict of ``peak_bytes`` (arena + constants + inputs, what
        ``ge.memoryLimit`` bounds), ``limit_bytes``, ``arena_bytes``, ``const_bytes``,
        ``input_bytes``, ``naive_bytes`` (one buffer per tensor), ``live_peak_bytes`` (most bytes
        alive at one step), ``tensors`` and ``unknown_tensors`` (counts), and ``largest``: up to
        10 dicts of ``name``, ``op``, ``dtype``, ``shape``, ``bytes``, ``offset``, ``first_step``
        and ``last_step``, largest first. See docs/running.md."""
        graph_id = _check_graph_id(graph_id)
        plan = self._core.plan_memory(graph_id)
        return None if plan is None else dict(plan)

    def graph_device(self, graph_id: int) -> str:
        """Where the graph runs: ``"cpu"`` or ``"acl"`` (``auto`` is resolved when it is added)."""
        return self._core.graph_device(_check_graph_id(graph_id))

    def get_graph_ids(self) -> List[int]:
        return list(self._core.graph_ids())

    @property
    def options(self) -> Dict[str, Any]:
        """The options ge-rs interprets, resolved (defaults and environment included)."""
        device, mode, capacity, threads, device_id, memory_limit = self._core._options()
        return {
            "ge.device": device,
            "ge.exec.deviceId": device_id,
            "ge.graphMode": "on" if mode else "off",
            "ge.graphCacheCapacity": capacity,
            "ge.threads": threads,
            "ge.memoryLimit": memory_limit,
        }

    # -- internals -----------------------------------------------------------------------------

    def _run(self, api_name: str, graph_id: int, inputs: List[Any], **context: Any) -> List[Tensor]:
        with _api_call(api_name, graph_id=graph_id, **context):
            return list(self._core.run_graph(graph_id, inputs))

    def _added(self, graph_id: int, graph_options: Options) -> None:
        self._graph_options[graph_id] = graph_options.over(self._options)
        self._log_device_notes()

    def _log_device_notes(self) -> None:
        # Why ge.device=auto fell back to the CPU (ACL not found, not initialisable, ...).
        for note in self._core._take_device_notes():
            _log.warning("%s", note)

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:
            ex.shutdown(wait=False)
