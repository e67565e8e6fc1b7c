"""GE's offline compilation (``ge.offline_compile``), on ge-rs's CPU backend.

GE compiles a graph for a device and keeps it in a ``ModelBuffer``; ``save_model`` writes the
``.om`` file that ACL loads and runs. Here the ``.om`` is ge-rs's own versioned file (see
``crates/ge-runtime/src/om.rs``): each graph as it is after the compile pipeline (the
registered passes at their stages, shape inference for the inputs it is built for, dtype
promotion casts, constant folding and the other built-in optimisations), its weights, the input
signature and the options. ``Session.add_model`` (ge-rs's extra) runs it without compiling
again: only the execution plan is built.

A graph is compiled for one input signature: each Data node's dtype and static shape, or the
shape the build option ``input_shape`` gives it (atc's form: ``"x:1,3,224,224;y:2"``). An input
whose shape stays unknown is refused. Every other option (``soc_version``, ``input_format``,
``precision_mode``, ...) is recorded in the model's manifest; the CPU interprets none of them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from ge._native import OmModelCore
from ge.error import GeError, _api_call, _set_error_msg, raise_ge_error
from ge.graph.graph import Graph

__all__ = [
    "GraphWithOptions",
    "ModelBuffer",
    "ModelFileError",
    "build_initialize",
    "build_finalize",
    "build_model",
    "save_model",
    "bundle_build_model",
    "bundle_save_model",
    "load_model",
]

# The options of build_initialize, or None before it (and after build_finalize).
_global_options: Optional[Dict[str, str]] = None
_global_lock = threading.Lock()

# Data node types: the graph's inputs.
_DATA_TYPES = ("Data", "RefData")


class ModelFileError(GeError):
    """An ``.om`` file that cannot be read: missing, truncated, damaged, not ge-rs's, or of a
    format version this build does not read. The message names the file and what is wrong."""


@dataclass
class GraphWithOptions:
    """One graph with its build options, for ``bundle_build_model``."""

    graph: Graph
    build_options: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Graph):
            raise TypeError("graph must be a Graph")
        self.build_options = _normalize_options(self.build_options, "build_options")


class ModelBuffer:
    """A compiled offline model in memory (GE's ``ModelBuffer``): made by ``build_model`` or
    ``bundle_build_model`` (or, ge-rs's extra, ``load_model``), never constructed directly, and
    not copyable. ``length`` is the size in bytes of the ``.om`` file it saves to.

    ge-rs's extras: ``to_bytes()``, ``graph_count``, ``manifest()`` (what the file records:
    graphs, their inputs, options, ``soc_version``) and ``graph(index)`` (a copy of a compiled
    graph, to inspect)."""

    _handle: Optional[OmModelCore]
    _owns_handle: bool

    def __init__(self) -> None:
        self._owns_handle = False
        self._handle = None
        raise RuntimeError("ModelBuffer objects should not be created directly")

    def __copy__(self) -> None:
        raise RuntimeError("ModelBuffer does not support copy")

    def __deepcopy__(self, memodict: Any) -> None:
        raise RuntimeError("ModelBuffer does not support deepcopy")

    @classmethod
    def _create_from(cls, handle: Optional[OmModelCore]) -> "ModelBuffer":
        """A ModelBuffer over a native model (internal: ``build_model`` and ``load_model`` make
        them)."""
        if not isinstance(handle, OmModelCore):
            raise ValueError("Failed to create ModelBuffer")
        instance = cls.__new__(cls)
        instance._handle = handle
        instance._owns_handle = True
        return instance

    @property
    def length(self) -> int:
        """The model's size in bytes."""
        return self.get_length()

    def get_length(self) -> int:
        """The model's size in bytes."""
        return len(self._core())

    # -- ge-rs's extras ------------------------------------------------------------------------

    @property
    def graph_count(self) -> int:
        """How many graphs the model holds (more than one for a bundle)."""
        return int(self._core().graph_count())

    def to_bytes(self) -> bytes:
        """The ``.om`` file's bytes."""
        return bytes(self._core().to_bytes())

    def manifest(self) -> Dict[str, Any]:
        """What the model records: ``format_version``, ``producer``, ``soc_version``, the global
        ``options``, and per graph its ``name``, ``options``, ``inputs`` (name, dtype value,
        dims) and number of ``outputs``."""
        import json

        return dict(json.loads(self._core().manifest()))

    def graph(self, index: int = 0) -> Graph:
        """A copy of compiled graph ``index`` (as it is after the compile pipeline)."""
        return self._core().graph(index)

    def _core(self) -> OmModelCore:
        if self._handle is None:
            raise RuntimeError("the ModelBuffer holds no model")
        return self._handle

    def __repr__(self) -> str:
        if self._handle is None:
            return "ModelBuffer(<empty>)"
        return f"ModelBuffer({self.graph_count} graph(s), {self.length} bytes)"


def _normalize_options(options: Optional[dict], arg_name: str) -> Dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"{arg_name} must be a dictionary")
    normalized = {}
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"{arg_name} keys and values must be strings")
        normalized[key] = value
    return normalized


def build_initialize(global_options: Optional[dict] = None) -> None:
    """Starts offline building with ``global_options`` (str to str; a graph's build options
    override them). Calling it again replaces them."""
    global _global_options
    options = _normalize_options(global_options, "global_options")
    with _global_lock:
        _global_options = options


def build_finalize() -> None:
    """Ends offline building: ``build_model`` needs ``build_initialize`` again."""
    global _global_options
    with _global_lock:
        _global_options = None


def _initialized_options(api_name: str) -> Dict[str, str]:
    with _global_lock:
        options = _global_options
    if options is None:
        _set_error_msg("build_initialize() has not been called (or build_finalize() was called since)")
        raise_ge_error(api_name)
    return dict(options)


def parse_input_shape(text: str) -> Dict[str, List[int]]:
    """atc's ``input_shape`` (``"x:1,3,224,224;y:2"``; an empty list of dims is a scalar) as
    {name: dims}. A name may itself hold ':' (``"in:0:1,2"``: the last ':' separates)."""
    shapes: Dict[str, List[int]] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        name, sep, dims = part.rpartition(":")
        if not sep or not name:
            raise ValueError(f"input_shape: '{part}' is not NAME:DIM,DIM,...")
        try:
            values = [int(d) for d in dims.split(",")] if dims.strip() else []
        except ValueError:
            raise ValueError(f"input_shape: '{part}' has a dim that is not an integer") from None
        if any(d < 0 for d in values):
            raise ValueError(f"not supported: input_shape '{part}' has an unknown dim (-1); "
                             "an offline model is compiled for static shapes")
        shapes[name] = values
    return shapes


def _data_nodes(graph: Graph) -> List[Any]:
    nodes = [n for n in graph.get_direct_nodes() if n.type in _DATA_TYPES]
    return sorted(nodes, key=lambda n: int(n.get_attr("index")) if n.has_attr("index") else 0)


def _signature(graph: Graph, options: Dict[str, str]) -> List[Tuple[int, List[int]]]:
    """Each input's (dtype value, static dims), from its Data node or ``input_shape``."""
    shapes = parse_input_shape(options.get("input_shape", ""))
    data = _data_nodes(graph)
    names = [n.name for n in data]
    for name in shapes:
        if name not in names:
            raise ValueError(f"input_shape names '{name}', which is not an input of graph "
                             f"'{graph.name}' (inputs: {', '.join(names) or 'none'})")
    sig = []
    for n in data:
        desc = n.get_output_desc(0)
        dims = shapes.get(n.name)
        if dims is None:
            dims = list(desc.get_shape())
            if dims == [-2] or any(d < 0 for d in dims):
                shown = "unknown rank" if dims == [-2] else str(dims)
                raise ValueError(f"not supported: input '{n.name}' of graph '{graph.name}' has shape "
                                 f"{shown}; an offline model is compiled for static shapes: give it with "
                                 f"the build option input_shape (e.g. '{n.name}:1,2')")
        sig.append((int(desc.get_data_type()), dims))
    return sig


def _soc_version(options: Dict[str, str]) -> str:
    return options.get("soc_version") or options.get("ge.socVersion") or ""


def _build(api_name: str, items: List[Tuple[Graph, Dict[str, str]]], **context: Any) -> ModelBuffer:
    global_options = _initialized_options(api_name)
    specs = []
    soc = _soc_version(global_options)
    with _api_call(api_name, **context):
        for graph, options in items:
            merged = {**global_options, **options}
            soc = _soc_version(merged) or soc
            specs.append((graph, options, _signature(graph, merged)))
        core = OmModelCore.build(specs, soc, global_options)
    return ModelBuffer._create_from(core)


def build_model(graph: Graph, build_options: Optional[dict] = None) -> ModelBuffer:
    """Compiles ``graph`` into an offline model kept in memory. ``build_options`` (str to str)
    override ``build_initialize``'s. Raises ``TypeError`` for arguments of the wrong type and
    ``GeError`` ("BuildModel failed; ...") when the graph cannot be compiled, when an input has
    no static shape (give ``input_shape``), or before ``build_initialize``."""
    if not isinstance(graph, Graph):
        raise TypeError("graph must be a Graph")
    options = _normalize_options(build_options, "build_options")
    return _build("BuildModel", [(graph, options)])


def bundle_build_model(graph_with_options: List[GraphWithOptions]) -> ModelBuffer:
    """Compiles several graphs (a list of more than one ``GraphWithOptions``) into one bundle
    model; graph ``i`` of the bundle is ``graph_with_options[i]``."""
    if not isinstance(graph_with_options, list):
        raise TypeError("graph_with_options must be a list")
    if len(graph_with_options) <= 1:
        raise ValueError("graph_with_options size must be larger than 1")
    for item in graph_with_options:
        if not isinstance(item, GraphWithOptions):
            raise TypeError("Each item in graph_with_options must be a GraphWithOptions")
    return _build("BundleBuildModel", [(i.graph, i.build_options) for i in graph_with_options],
                  graph_count=len(graph_with_options))


def _om_path(output_file: str) -> str:
    return output_file if output_file.endswith(".om") else output_file + ".om"


def _save(api_name: str, output_file: Any, model: Any, bundle: bool) -> None:
    if not isinstance(output_file, str):
        raise TypeError("output_file must be a string")
    if not isinstance(model, ModelBuffer):
        raise TypeError("model must be a ModelBuffer")
    count = model.graph_count
    if bundle != (count > 1):
        _set_error_msg(f"the model holds {count} graph(s): save it with "
                       f"{'bundle_save_model' if count > 1 else 'save_model'}")
        raise_ge_error(api_name, output_file=output_file)
    path = _om_path(output_file)
    try:
        with open(path, "wb") as f:
            f.write(model.to_bytes())
    except OSError as e:
        _set_error_msg(f"cannot write {path}: {e.strerror or e}")
        raise_ge_error(api_name, output_file=output_file)


def save_model(output_file: str, model: ModelBuffer) -> None:
    """Writes a model of one graph to ``<output_file>.om`` (the suffix is added unless
    ``output_file`` already ends with ``.om``)."""
    _save("SaveModel", output_file, model, bundle=False)


def bundle_save_model(output_file: str, model: ModelBuffer) -> None:
    """Writes a bundle model (from ``bundle_build_model``) to ``<output_file>.om``."""
    _save("BundleSaveModel", output_file, model, bundle=True)


def load_model(path: Union[str, "os.PathLike[str]"]) -> ModelBuffer:
    """ge-rs's extra: reads an ``.om`` file written by ``save_model`` / ``bundle_save_model``
    (or ``ge compile``). A file that cannot be read (missing, truncated, damaged, not ge-rs's,
    another format version) raises ``ModelFileError`` (a ``GeError``: "LoadModel failed;
    path=...; ...")."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError("path must be a string or an os.PathLike")
    path = os.fspath(path)
    with _api_call("LoadModel", path=path):
        try:
            core = OmModelCore.load(path)
        except GeError as e:
            raise ModelFileError(f"{path}: {e}") from None
    return ModelBuffer._create_from(core)
