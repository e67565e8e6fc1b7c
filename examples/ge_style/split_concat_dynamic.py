"""Dynamic outputs and dynamic inputs: ``Split`` with ``y_num``, ``SplitV`` with size_splits, and
``ConcatV2`` with ``N``.

GE's ES functions take one positional count per dynamic output (``Split(split_dim, x, y_num,
num_split=...)`` returns a list of ``y_num`` tensors) and a list plus the attribute ``N`` for a
dynamic input (``ConcatV2(x_list, concat_dim, N=len(x_list))``). Here a [4, 6] input is split
into three [4, 2] column blocks, the middle one goes through ``Neg``, and the blocks are
concatenated back in reverse order; a second branch splits the rows 1 + 3 with ``SplitV``.

    python examples/ge_style/split_concat_dynamic.py
"""

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import ConcatV2, Neg, Split, SplitV
from ge.es.graph_builder import GraphBuilder
from ge.graph.types import DataType

PIECES = 3
ROW_SIZES = [1, 3]


def build_split_concat_graph():
    builder = GraphBuilder("SplitConcatDynamic")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[4, 6])
    blocks = Split(1, x, PIECES, num_split=PIECES)  # a list of PIECES TensorHolders
    blocks[1] = Neg(blocks[1])
    swapped = ConcatV2(blocks[::-1], 1, N=PIECES)
    sizes = builder.create_vector_int64(ROW_SIZES)
    head, tail = SplitV(x, sizes, 0, len(ROW_SIZES), num_split=len(ROW_SIZES))
    builder.set_graph_output(swapped, 0)
    builder.set_graph_output(head, 1)
    builder.set_graph_output(tail, 2)
    return builder.build_and_reset()


def main() -> None:
    graph = build_split_concat_graph()
    x = (np.arange(24, dtype=np.float32).reshape(4, 6) - 10) / 4
    check = Checker()
    outputs = run_graph(graph, [float_tensor(x)])
    if outputs is None:
        check.true("run", False)
    else:
        blocks = np.split(x, PIECES, axis=1)
        blocks[1] = -blocks[1]
        check.close("ConcatV2(reversed Split)", outputs[0], np.concatenate(blocks[::-1], axis=1))
        head, tail = np.split(x, [ROW_SIZES[0]], axis=0)
        check.close("SplitV head", outputs[1], head)
        check.close("SplitV tail", outputs[2], tail)
    check.finish()


if __name__ == "__main__":
    main()
