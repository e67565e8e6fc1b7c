"""``ge.passes.testing``: check that passes keep what a graph computes.

``check_equivalence(passes, graph)`` runs ``graph`` on the CPU backend as it is, then applies
``passes`` to a copy (``run_passes``) and runs that, on the same inputs (given, or random from the
graph's input descriptions), and reports the largest difference per output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from ge._native import SessionCore
from ge.graph import DataType, Graph
from ge.graph.tensor import numpy_dtype

from . import PassStats, run_passes

__all__ = ["EquivalenceReport", "OutputDifference", "check_equivalence", "random_inputs"]


@dataclass(frozen=True)
class OutputDifference:
    """How output ``index`` differs after the passes."""

    index: int
    shape_before: List[int]
    shape_after: List[int]
    dtype_before: str
    dtype_after: str
    max_abs_diff: float
    max_rel_diff: float
    ok: bool

    def __str__(self) -> str:
        if self.shape_before != self.shape_after or self.dtype_before != self.dtype_after:
            return (f"output {self.index}: {self.dtype_before}{self.shape_before} became "
                    f"{self.dtype_after}{self.shape_after}")
        status = "ok" if self.ok else "DIFFERS"
        return f"output {self.index}: max |diff| {self.max_abs_diff:.3g}, max rel {self.max_rel_diff:.3g} ({status})"


@dataclass(frozen=True)
class EquivalenceReport:
    """The outcome: ``ok`` when every output agrees within ``rtol``/``atol``."""

    outputs: List[OutputDifference]
    rtol: float
    atol: float
    stats: List[PassStats] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    @property
    def rewritten(self) -> int:
        """Rewrites the passes made (pattern and decompose passes)."""
        return sum(s.rewritten for s in self.stats)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = f"equivalent (rtol={self.rtol}, atol={self.atol})" if self.ok else "NOT equivalent"
        return "\n".join([head] + [f"  {o}" for o in self.outputs])


_INT_RANGES = {
    DataType.DT_INT8: (-8, 8), DataType.DT_INT16: (-8, 8), DataType.DT_INT32: (-8, 8),
    DataType.DT_INT64: (-8, 8), DataType.DT_UINT8: (0, 8), DataType.DT_UINT16: (0, 8),
    DataType.DT_UINT32: (0, 8), DataType.DT_UINT64: (0, 8),
}
_FLOATS = {DataType.DT_FLOAT: np.float32, DataType.DT_DOUBLE: np.float64, DataType.DT_FLOAT16: np.float16}


def random_inputs(graph: Graph, seed: int = 0, unknown_dim: int = 2) -> List[np.ndarray]:
    """Random arrays for ``graph``'s inputs (in Data-index order) from their descriptions:
    floats from a standard normal, integers from a small range, bools at random; an unknown dim
    becomes ``unknown_dim``. An input of unknown rank or dtype needs given inputs."""
    rng = np.random.default_rng(seed)
    data = [n for n in graph.get_all_nodes() if n.type in ("Data", "RefData")]
    data.sort(key=lambda n: n.get_attr("index"))
    out = []
    for n in data:
        desc = n.get_output_desc(0)
        dims = desc.get_shape()
        dt = DataType(desc.get_data_type())
        if dims == [-2]:
            raise ValueError(f"input '{n.name}' has unknown rank: give the inputs")
        shape = [unknown_dim if d < 0 else d for d in dims]
        if dt in _FLOATS:
            out.append(rng.standard_normal(shape).astype(_FLOATS[dt]))
        elif dt in _INT_RANGES:
            lo, hi = _INT_RANGES[dt]
            out.append(rng.integers(lo, hi, size=shape).astype(numpy_dtype(dt)))
        elif dt == DataType.DT_BOOL:
            out.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            raise ValueError(f"input '{n.name}' has dtype {dt.name}: give the inputs")
    return out


def _run(graph: Graph, inputs: Sequence[Any]) -> List[np.ndarray]:
    core = SessionCore({"ge.graphMode": "off"}, False)
    core.add_graph(0, graph)
    return [t.numpy() for t in core.run_graph(0, list(inputs))]


def check_equivalence(
    passes: Optional[Sequence[Union[str, type]]],
    graph: Graph,
    inputs: Optional[Sequence[Any]] = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    stage: Optional[Any] = None,
    options: Optional[Dict[str, str]] = None,
) -> EquivalenceReport:
    """Runs ``graph`` before and after ``passes`` (registered pass names, descriptor keys or
    classes; ``None``: every registered pass) on the CPU and compares the outputs. ``graph``
    itself is not changed. Returns an ``EquivalenceReport`` (truthy when equivalent)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"check_equivalence needs a ge.graph.Graph, got {type(graph).__name__}")
    xs = list(inputs) if inputs is not None else random_inputs(graph)
    before = _run(graph, xs)
    after_graph = Graph.from_bytes(graph.to_bytes())
    stats = run_passes(after_graph, stage=stage, passes=passes, options=options)
    after = _run(after_graph, xs)
    if len(before) != len(after):
        raise AssertionError(f"the graph had {len(before)} outputs, after the passes {len(after)}")
    diffs = []
    for i, (b, a) in enumerate(zip(before, after)):
        same_kind = b.shape == a.shape and b.dtype == a.dtype
        if same_kind and b.size:
            bf, af = b.astype(np.float64), a.astype(np.float64)
            both_nan = np.isnan(bf) & np.isnan(af)
            d = np.where(both_nan, 0.0, np.abs(bf - af))
            max_abs = float(np.nanmax(d)) if d.size else 0.0
            rel = d / np.maximum(np.abs(bf), np.finfo(np.float64).tiny)
            max_rel = float(np.nanmax(np.where(d == 0, 0.0, rel)))
            ok = bool(np.all(d <= atol + rtol * np.abs(bf)))
        else:
            max_abs = max_rel = 0.0 if same_kind else float("inf")
            ok = same_kind
        diffs.append(OutputDifference(i, list(b.shape), list(a.shape), str(b.dtype), str(a.dtype),
                                      max_abs, max_rel, ok))
    return EquivalenceReport(diffs, rtol, atol, stats)
