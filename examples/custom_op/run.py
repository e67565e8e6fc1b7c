"""Builds and runs a graph with the Python custom operator of ops/add_custom.py.

    PyAddCustom(c1, c2)  -- both inputs constant: folded to a Const when the graph compiles
    PyAddCustom(x, that, alpha=0.5)  -- runs as a HOST kernel on each run_graph
"""

import os
import sys
from pathlib import Path

import numpy as np

# GE loads Python custom operators from the paths in ASCEND_CUSTOM_OPP_PATH.
os.environ.setdefault("ASCEND_CUSTOM_OPP_PATH", str(Path(__file__).resolve().parent / "ops"))

from ge.es.graph_builder import GraphBuilder  # noqa: E402
from ge.ge_global import GeApi  # noqa: E402
from ge.graph import Tensor  # noqa: E402
from ge.graph.types import DataType, Format  # noqa: E402
from ge.session import Session  # noqa: E402


def build_graph():
    from ge.es.all import PyAddCustom  # registered when ge_initialize loaded the plugin

    builder = GraphBuilder("py_add_custom_graph")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT,
                             format=Format.FORMAT_ND, shape=[4])
    c1 = builder.create_const_float([1.0, 2.0, 3.0, 4.0])
    c2 = builder.create_const_float([10.0, 20.0, 30.0, 40.0])
    folded = PyAddCustom(c1, c2)  # all inputs constant
    builder.set_graph_output(PyAddCustom(x, folded, alpha=0.5), 0)
    return builder.build_and_reset()


def main() -> int:
    api = GeApi()
    if api.ge_initialize({"ge.exec.deviceId": "0"}) != 0:
        return 1
    try:
        session = Session({})
        session.add_graph(0, build_graph())
        x = Tensor(np.full(4, 100.0, dtype=np.float32))
        out = session.run_graph(0, [x])[0].numpy()
        print("[Sample] output:", out.tolist())
        expected = 100.0 + 0.5 * np.array([11.0, 22.0, 33.0, 44.0], dtype=np.float32)
        if not np.allclose(out, expected):
            print("[Sample] wrong result, expected", expected.tolist())
            return 1
        report = session.compile_report(0)
        print("[Sample]", next(line.strip() for line in report.splitlines()
                               if "constants folded" in line))
        return 0
    finally:
        api.ge_finalize()


if __name__ == "__main__":
    sys.exit(main())
