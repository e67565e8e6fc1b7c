"""Eager reruns of the ONNX conformance cases: each allow-listed case (deterministic ones) run
three times in one eager session; the first run compiles the whole graph, the later ones go
node by node through the per-node cache where that compile allows it
(crates/ge-runtime/src/eager.rs). Every rerun must give the first run's outputs bit for bit, and
most cases must really have gone node by node."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import onnx_conformance as oc  # noqa: E402

pytest.importorskip("onnx")

ALLOW = oc.load_allow_list()
# Outputs drawn at random differ from run to run by design.
RANDOM = re.compile(r"bernoulli|dropout|random|multinomial")


def same(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "OUS":
            return bool(np.all(a == b))
        return a.tobytes() == b.tobytes()
    return repr(a) == repr(b)


def rerun(set_name: str, case: str) -> bool:
    """Runs the case three times eagerly; True where its reruns went node by node."""
    import ge.onnx
    from ge.session import Session

    d = oc.set_dir(set_name) / case
    graph = ge.onnx.load(d / "model.onnx")
    s = Session({"ge.graphMode": "off"})
    s.add_graph(0, graph)
    for k, (ins, _) in enumerate(oc._data_sets(d)):
        runs = [[oc.fetched(v) for v in s.run_graph(0, oc._order_inputs(graph, ins))] for _ in range(3)]
        for r in (1, 2):
            for i, (a, b) in enumerate(zip(runs[r], runs[0])):
                assert same(a, b), f"{case}: data set {k} output {i} differs on eager rerun {r}"
    return dict(s._core.graph_eager_stats(0))["misses"] > 0


@pytest.mark.parametrize("set_name", [s for s in oc.SETS if oc.available(s)])
def test_eager_reruns_equal_the_first_run(set_name):
    cases = [c for c in ALLOW["passing"][set_name] if not RANDOM.search(c)]
    node_by_node = sum(rerun(set_name, c) for c in cases)
    # Most cases' compiles rewrite nothing across nodes (see Eager::keeps_nodes).
    assert node_by_node >= 0.75 * len(cases), f"{node_by_node} of {len(cases)} went node by node"
