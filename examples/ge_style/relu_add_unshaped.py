"""Relu, Add and Mul on inputs created without a shape (``builder.create_inputs(2)``).

As in GE, an input made without a shape takes the description of the tensor fed to it when the
graph runs: the same graph runs here on a [2, 3] pair and on a [5] pair. The graph is
``y = Relu(a) + b * 0.5 - 1`` and ``z = Relu(y)``; both outputs are checked against numpy.

    python examples/ge_style/relu_add_unshaped.py
"""

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import Add, Relu
from ge.es.graph_builder import GraphBuilder


def build_relu_add_graph():
    # 1. A builder, two graph inputs without shape or dtype.
    builder = GraphBuilder("ReluAddUnshaped")
    a, b = builder.create_inputs(2)
    # 2. Operators: ES functions and the TensorHolder operators, with Python numbers as operands.
    y = Add(Relu(a), b * 0.5) - 1
    z = Relu(y)
    # 3. Outputs, in index order.
    builder.set_graph_output(y, 0)
    builder.set_graph_output(z, 1)
    return builder.build_and_reset()


def expected(a: np.ndarray, b: np.ndarray):
    y = np.maximum(a, 0) + b * np.float32(0.5) - np.float32(1)
    return y, np.maximum(y, 0)


def main() -> None:
    graph = build_relu_add_graph()
    check = Checker()
    feeds = [
        (np.array([[1.5, -2.0, 3.0], [-0.5, 0.25, 4.0]], np.float32),
         np.arange(6, dtype=np.float32).reshape(2, 3)),
        (np.linspace(-2, 2, 5, dtype=np.float32), np.array([4, -4, 2, 0, 1], np.float32)),
    ]
    for run, (a, b) in enumerate(feeds, start=1):
        outputs = run_graph(graph, [float_tensor(a), float_tensor(b)], graph_id=run)
        if outputs is None:
            check.true(f"run {run}", False)
            continue
        want_y, want_z = expected(a, b)
        check.close(f"run {run} y", outputs[0], want_y)
        check.close(f"run {run} z", outputs[1], want_z)
    check.finish()


if __name__ == "__main__":
    main()
