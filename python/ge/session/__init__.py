"""``ge.session``: run graphs (GE's ``Session``), on the CPU backend or through ACL.

``Session(options)`` holds graphs by id: ``add_graph(graph_id, graph, options)`` (returns 0, as
GE), ``run_graph(graph_id, inputs)`` runs one and returns its outputs as ``ge.graph.Tensor``
(``.numpy()`` gives arrays), ``remove_graph(graph_id)``. Inputs are a list of ``ge.graph.Tensor``
or, ge-rs's extra, numpy arrays, in the order of the graph's Data indexes. Arguments are checked
as GE checks them, with GE's messages (``TypeError("Graph_id must be an integer")``,
``TypeError("inputs must be a list of Tensor")``, ...); a failed call raises GE's
``ge.error.GeError`` (also exported here), whose message reads ``"RunGraph failed; graph_id=1;
<what went wrong>"`` and which carries ``api_name``, ``context`` and ``error_message``. ge-rs's
own classes stay: a run that fails in a kernel is a ``ge.ExecutionError``, a bad value (an
unknown graph id, inputs that do not fit) a ``ValueError``; both are ``ge.error.GeError`` too.
Sessions work without ``GeApi.ge_initialize`` (GE requires it).

GE's stream and allocator calls run on the host: ``run_graph_with_stream_async(graph_id, stream,
inputs)`` runs at once (the run is finished when it returns) and returns the outputs placed on
the device as GE's are (``PLACEMENT_DEVICE``, ``to_host()`` moves them), their bytes in host
memory; ``register_external_allocator(stream, allocator)`` (a ``ge.allocator.Allocator``)
records the allocator and ge-rs never calls it, keeping its own memory;
``unregister_external_allocator(stream)`` forgets it.

Options (``ge_initialize``, ``Session`` and ``add_graph``: graph options over session options
over global ones) are a dict of ``str`` to ``str``, as in GE (GE encodes both; another type is a
``TypeError`` here). Every key GE knows is accepted (the table is ``ge.session._option_keys``,
from GE's option checker). ge-rs interprets its own:

- ``ge.device``: ``cpu`` (default), ``acl`` (an Ascend NPU through ACL, see docs/acl.md; a
  ``ge.DeviceError`` when ACL cannot be loaded; tested against a test double of ACL only, never
  on an NPU), ``auto`` (ACL when it loads, otherwise the CPU with a warning in the log);
- ``ge.exec.deviceId`` (also GE's): the ACL device number (default 0);
- ``ge.graphMode``: ``on`` (default; ``GE_GRAPH_MODE`` sets the default) captures an execution plan
  per input signature (dtypes and shapes) and replays it from an LRU cache; ``off`` runs eagerly,
  node by node, each node's compile kept per input signature (docs/running.md);
- ``ge.graphCacheCapacity``: plans kept per graph (default 12, or ``GE_GRAPH_CACHE_CAPACITY``);
- ``ge.threads``: threads a run's kernels may use for large work (matrix products, convolutions,
  large element-wise ops, row-wise normalisations; default: the machine's available parallelism,
  or ``GE_THREADS``). A run executes on the calling thread, which then works as the first thread of
  its own pool of that many threads; large kernels split their work across the pool;
- ``ge.memoryLimit``: bytes (a positive integer) or a percentage of the physical memory
  (``"50%"``); default 80% of the memory available when the session is created (``MemAvailable``
  of ``/proc/meminfo``; no limit where that cannot be read), or ``GE_MEMORY_LIMIT``. A compiled
  plan whose peak (``Session.plan_memory``) is over it, or a buffer over it at run time, is a
  ``ge.ResourceError`` naming the limit, the peak and the largest tensors.

A bad value of one of these is a ``ValueError`` (and ``ge.error.GeError``: ``CreateSession``,
``AddGraph`` or ``GEInitialize`` failed). GE's other keys (``ge.graphRunMode``, ``ge.socVersion``,
``ge.exec.precision_mode``, ``ge.exec.enableDump``, ``ge.exec.rankTableFile``, ...) concern the
device and its compiler: they are accepted, logged at debug level on logger ``ge.session`` and
listed in ``Session.compile_report(graph_id)`` ("GE options recorded, not interpreted by ge-rs:
..."). A key neither knows is accepted with a ``UserWarning`` naming the closest known key (a
typo is caught, the program still runs) and listed in the report as ignored.

Compiling a graph runs the registered passes at their stages (see ``ge.passes``).
"""

from __future__ import annotations

from ge.error import GeError
from ge.session._options import OPTION_KEYS
from ge.session.session import Session

__all__ = ["GeError", "Session", "OPTION_KEYS"]
