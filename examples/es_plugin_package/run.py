"""A GE-style program that uses the generated ES package es_custom, mounted as ge.es.custom.

The operators need CPU kernels to run here: this program registers numpy ones (on an NPU, GE
runs the custom op package's AI Core kernels instead)."""

import numpy as np

import ge.ops
from ge.es import GraphBuilder, list_plugins
from ge.es.custom import ScaledAddCustom, SplitSignCustom
from ge.graph.types import DataType
from ge.session import Session

ge.ops.register_kernel("ScaledAddCustom", lambda x1, x2, alpha: x1 + np.float32(alpha) * x2)
ge.ops.register_kernel("SplitSignCustom", lambda x: (np.maximum(x, 0), np.minimum(x, 0)))

builder = GraphBuilder("custom_ops")
x1 = builder.create_input(0, data_type=DataType.DT_FLOAT, shape=[4])
x2 = builder.create_input(1, data_type=DataType.DT_FLOAT, shape=[4])
parts = SplitSignCustom(ScaledAddCustom(x1, x2, alpha=2.0))
graph = builder.build_and_reset([parts.pos, parts.neg])

session = Session()
session.add_graph(1, graph)
a = np.array([1, -2, 3, -4], np.float32)
b = np.array([1, 1, -2, 1], np.float32)
pos, neg = (t.numpy() for t in session.run_graph(1, [a, b]))
want = a + 2 * b
assert np.array_equal(pos, np.maximum(want, 0)) and np.array_equal(neg, np.minimum(want, 0)), (pos, neg)
assert "custom" in list_plugins()
print("pos", pos.tolist(), "neg", neg.tolist())
