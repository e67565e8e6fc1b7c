"""Dumping a graph (``dump_to_file``), saving it as GE's ``.air`` model and loading it back.

``dump_to_file(format=..., suffix=...)`` with ``DumpFormat.kOnnx``, ``kTxt`` and ``kReadable``
writes files named as GE names them (``ge_onnx_<n>_graph_0_<suffix>.pbtxt``, ``ge_proto_...``,
``ge_readable_...``) under
``DUMP_GRAPH_PATH`` (set here to a temporary directory, as a GE user sets it in the shell);
``save_to_air`` / ``Graph.load_from_air`` write and read GE's ModelDef. The reloaded graph runs
and must give exactly the original graph's results.

    python examples/ge_style/dump_and_reload.py
"""

import os
import tempfile
from pathlib import Path

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import SoftmaxV2, Tanh, Transpose
from ge.es.graph_builder import GraphBuilder
from ge.graph import DumpFormat, Graph
from ge.graph.types import DataType

SUFFIX = "ge_style_dump"


def build_graph():
    builder = GraphBuilder("DumpAndReload")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[2, 4])
    t = Transpose(Tanh(x) * 2.0, builder.create_vector_int64([1, 0]))
    builder.set_graph_output(SoftmaxV2(t, axes=[0]), 0)
    return builder.build_and_reset()


def expected(x: np.ndarray) -> np.ndarray:
    t = (np.tanh(x) * 2).T
    e = np.exp(t - t.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def main() -> None:
    check = Checker()
    x = np.array([[0.1, -1.2, 2.0, 0.0], [3.5, -0.25, 0.75, -2.0]], np.float32)
    with tempfile.TemporaryDirectory() as work:
        os.environ["DUMP_GRAPH_PATH"] = work
        graph = build_graph()
        for dump_format in (DumpFormat.kOnnx, DumpFormat.kTxt, DumpFormat.kReadable):
            graph.dump_to_file(format=dump_format, suffix=SUFFIX)
        dumped = sorted(p.name for p in Path(work).rglob(f"*{SUFFIX}*"))
        print(f"[Info] dumped: {dumped}")
        for prefix in ("ge_onnx_", "ge_proto_", "ge_readable_"):
            check.true(f"{prefix}... written", any(n.startswith(prefix) for n in dumped))

        air = str(Path(work) / "dump_and_reload.air")
        graph.save_to_air(air)
        reloaded = Graph.load_from_air(air)
        print(f"[Info] saved and reloaded {air} ({os.path.getsize(air)} bytes)")

        original = run_graph(graph, [float_tensor(x)], graph_id=1)
        again = run_graph(reloaded, [float_tensor(x)], graph_id=2)
    if original is None or again is None:
        check.true("runs", False)
    else:
        check.close("original graph", original[0], expected(x))
        check.close("reloaded graph", again[0], expected(x))
        check.true("identical results", original[0].get_data() == again[0].get_data())
    check.finish()


if __name__ == "__main__":
    main()
