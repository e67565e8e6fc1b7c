"""Helpers shared by the GE-style example programs of this directory.

``run_graph`` is the session part of every program, written as GE's documentation writes it:
``GeApi().ge_initialize(config)`` with GE's option keys, a ``Session``, ``add_graph`` and
``run_graph`` with return codes checked, ``ge_finalize`` at the end. ``Checker`` compares the
outputs with numpy and makes the program exit non-zero when a number differs.
"""

from __future__ import annotations

import sys
from typing import Dict, List, Optional

import numpy as np
from ge.ge_global import GeApi
from ge.graph import Graph, Tensor
from ge.graph.types import DataType, Format
from ge.session import Session

# GE's option keys, as a GE program passes them (ge-rs records ge.graphRunMode without interpreting it).
GE_CONFIG: Dict[str, str] = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}

ALL_CHECKS_PASSED = "all checks passed"


def float_tensor(values: np.ndarray) -> Tensor:
    """A ``Tensor`` made as GE's samples make one: a flat list, no file, dtype, format, shape."""
    return Tensor(values.flatten().tolist(), None, DataType.DT_FLOAT, Format.FORMAT_ND, list(values.shape))


def run_graph(graph: Graph, inputs: List[Tensor], graph_id: int = 1,
              config: Optional[Dict[str, str]] = None, show_report: bool = False) -> Optional[List[Tensor]]:
    """Initialises GE, runs ``graph`` once in a new session and finalises; ``None`` on a failure.

    With ``show_report`` the session's compile report (stages, passes applied) is printed.
    """
    ge_api = GeApi()
    ret = ge_api.ge_initialize(dict(config or GE_CONFIG))
    if ret != 0:
        print(f"[Error] ge_initialize failed, return code {ret}")
        return None
    try:
        session = Session()
        ret = session.add_graph(graph_id, graph)
        if ret != 0:
            print(f"[Error] add_graph failed, return code {ret}")
            return None
        outputs = session.run_graph(graph_id, inputs)
        print(f"[Info] graph {graph_id} ran, {len(outputs)} output(s)")
        if show_report:
            print(session.compile_report(graph_id))
        return outputs
    finally:
        ge_api.ge_finalize()


class Checker:
    """Collects comparisons against numpy; ``finish()`` prints the verdict and exits with it."""

    def __init__(self) -> None:
        self.failures: List[str] = []

    def close(self, name: str, got: Tensor, want: np.ndarray, dtype: DataType = DataType.DT_FLOAT,
              rtol: float = 1e-5, atol: float = 1e-6) -> None:
        values = np.asarray(got.get_data())
        print(f"{name}: {DataType(got.data_type).name} {list(got.shape)} {got.get_data()}")
        if got.data_type != dtype:
            self.failures.append(f"{name}: dtype {DataType(got.data_type).name}, expected {dtype.name}")
        elif list(got.shape) != list(want.shape):
            self.failures.append(f"{name}: shape {list(got.shape)}, expected {list(want.shape)}")
        elif not np.allclose(values, want, rtol=rtol, atol=atol):
            self.failures.append(f"{name}: {values.tolist()} != expected {want.tolist()}")

    def true(self, name: str, condition: bool) -> None:
        print(f"{name}: {'ok' if condition else 'FAILED'}")
        if not condition:
            self.failures.append(name)

    def finish(self) -> None:
        for failure in self.failures:
            print(f"[Error] check failed: {failure}")
        if self.failures:
            sys.exit(1)
        print(ALL_CHECKS_PASSED)

