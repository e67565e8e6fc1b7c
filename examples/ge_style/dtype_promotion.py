"""Mixed dtypes, promoted as GE promotes them (GE's PromoteType table).

Binary arithmetic and comparisons accept operands of different dtypes. A Python int becomes an
int64 constant and a float a float32 constant, as GE makes them, and the operator promotes:
``x + 1`` on a float32 input stays float32, an int32 input times 3 becomes int64, ``Maximum`` of
an int32 input and 2.5 becomes float32; an int32 input plus an int64 constant is int64, a float16
input times a float32 input float32, a comparison of int32 with float32 bool. The compile inserts
the Cast nodes. Each result's dtype and values are checked against numpy's.

    python examples/ge_style/dtype_promotion.py
"""

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import Greater, Maximum, Mul
from ge.es.graph_builder import GraphBuilder
from ge.graph import Tensor
from ge.graph.types import DataType, Format

OFFSETS = [1_000_000_000_000, -7, 42]  # beyond int32


def build_promotion_graph():
    builder = GraphBuilder("DtypePromotion")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[3])
    k = builder.create_input(index=1, name="k", data_type=DataType.DT_INT32, shape=[3])
    h = builder.create_input(index=2, name="h", data_type=DataType.DT_FLOAT16, shape=[3])
    offsets = builder.create_const_int64(OFFSETS, [3])
    builder.set_graph_output(x + 1, 0)  # float32
    builder.set_graph_output(k + offsets, 1)  # int32 + int64 -> int64
    builder.set_graph_output(Mul(h, x), 2)  # float16 * float32 -> float32
    builder.set_graph_output(Greater(k, x), 3)  # int32 > float32 -> bool
    builder.set_graph_output(Maximum(k, 2.5), 4)  # int32, float literal (float32) -> float32
    builder.set_graph_output(k * 3, 5)  # int32, int literal (int64) -> int64
    return builder.build_and_reset()


def main() -> None:
    x = np.array([0.5, -3.0, 7.25], np.float32)
    k = np.array([1, -3, 9], np.int32)
    h = np.array([2.0, 0.5, -1.5], np.float16)
    inputs = [
        float_tensor(x),
        Tensor(k.tolist(), None, DataType.DT_INT32, Format.FORMAT_ND, [3]),
        Tensor(h.tolist(), None, DataType.DT_FLOAT16, Format.FORMAT_ND, [3]),
    ]
    check = Checker()
    outputs = run_graph(build_promotion_graph(), inputs, show_report=True)
    if outputs is None:
        check.true("run", False)
    else:
        check.close("x + 1", outputs[0], x + np.float32(1))
        check.close("k + int64 const", outputs[1], k + np.array(OFFSETS, np.int64), dtype=DataType.DT_INT64)
        check.close("float16 * float32", outputs[2], h.astype(np.float32) * x)
        check.close("int32 > float32", outputs[3], k > x, dtype=DataType.DT_BOOL)
        check.close("Maximum(k, 2.5)", outputs[4], np.maximum(k, np.float32(2.5)))
        check.close("k * 3", outputs[5], k.astype(np.int64) * 3, dtype=DataType.DT_INT64)
    check.finish()


if __name__ == "__main__":
    main()
