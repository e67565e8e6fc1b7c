"""An ONNX model with a custom-domain node, imported through an ONNX Plugin and run.

The plugin lives in ``plugins/`` and is found on ``ASCEND_CUSTOM_OPP_PATH`` (set here when it is
not set already), as GE finds it. Needs the ``onnx`` package to write the model.

    python examples/onnx_plugin/run.py
"""

from __future__ import annotations

import os
from pathlib import Path

import ge.onnx
import numpy as np
from ge.session import Session
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
os.environ.setdefault("ASCEND_CUSTOM_OPP_PATH", str(HERE / "plugins"))


def make_model() -> bytes:
    """y = ScaledElu(x, gain=0.5, scale=2.0) + x, with ScaledElu in the domain example.domain."""
    nodes = [
        helper.make_node("ScaledElu", ["x"], ["e"], domain="example.domain", name="scaled_elu",
                         gain=0.5, scale=2.0),
        helper.make_node("Add", ["e", "x"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "onnx_plugin_example",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("example.domain", 1)], ir_version=8)
    return model.SerializeToString()


def main() -> None:
    graph = ge.onnx.load(make_model())
    print("imported node types:", sorted(n.type for n in graph.get_direct_nodes()))
    x = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]], np.float32)
    session = Session()
    session.add_graph(0, graph)
    (y,) = [t.numpy() for t in session.run_graph(0, [x])]
    expected = 2.0 * np.where(x > 0, x, 0.5 * (np.exp(x) - 1)) + x
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    print("y =", y.tolist())
    print("matches numpy: ok")


if __name__ == "__main__":
    main()
