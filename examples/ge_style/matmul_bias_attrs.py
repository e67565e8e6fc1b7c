"""A dense layer with operator attributes: ``MatMulV2(x, w, bias, transpose_x2=True)``, then
``LeakyRelu(negative_slope=0.2)`` and ``ReduceSum(..., keep_dims=True)``.

Inputs are positional in the operator's IR order (``bias`` is MatMulV2's optional third input),
attributes are keyword-only, as in GE's generated ES functions. The weight is stored as [out, in]
and transposed by the product's ``transpose_x2`` attribute. The graph input declares a shape with
an unknown batch dimension (-1); the program feeds a batch of 3.

    python examples/ge_style/matmul_bias_attrs.py
"""

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import LeakyRelu, MatMulV2, ReduceSum
from ge.es.graph_builder import GraphBuilder
from ge.graph.types import DataType

IN_FEATURES, OUT_FEATURES = 4, 3
WEIGHT = np.array([[0.5, -1.0, 0.25, 2.0], [1.5, 0.0, -0.5, 1.0], [-2.0, 0.75, 1.0, 0.5]], np.float32)
BIAS = np.array([0.1, -0.2, 0.3], np.float32)
SLOPE = 0.2


def build_dense_graph():
    builder = GraphBuilder("DenseWithAttributes")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[-1, IN_FEATURES])
    w = builder.create_const_float(WEIGHT.flatten().tolist(), [OUT_FEATURES, IN_FEATURES])
    bias = builder.create_const_float(BIAS.tolist(), [OUT_FEATURES])
    dense = MatMulV2(x, w, bias, transpose_x2=True)
    act = LeakyRelu(dense, negative_slope=SLOPE)
    total = ReduceSum(act, builder.create_vector_int64([1]), keep_dims=True)
    builder.set_graph_output(act, 0)
    builder.set_graph_output(total, 1)
    return builder.build_and_reset()


def main() -> None:
    graph = build_dense_graph()
    x = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, -3.0, 2.0, 1.0], [4.0, 1.0, 1.0, -2.0]], np.float32)
    check = Checker()
    outputs = run_graph(graph, [float_tensor(x)], show_report=True)
    if outputs is None:
        check.true("run", False)
    else:
        dense = x @ WEIGHT.T + BIAS
        act = np.where(dense > 0, dense, np.float32(SLOPE) * dense)
        check.close("LeakyRelu(MatMulV2)", outputs[0], act)
        check.close("ReduceSum keep_dims", outputs[1], act.sum(axis=1, keepdims=True))
    check.finish()


if __name__ == "__main__":
    main()
