"""MMoE first layer: several MatMulV2 reading one input become one wide MatMulV2 and a SplitV.

Python version of GE's ``graph_base_pass/5_mmoe_matmul_pass`` (``MmoeMatmulPass``, registered at
``AfterInferShape``). In a Multi-gate Mixture-of-Experts model every expert (and gate) starts with
a MatMul of the same input by its own constant weight. N small products become one::

                 x[m,k]                                   w1[k,n] ... wN[k,n]
           /       |        \\                                 \\        /
      MatMulV2  MatMulV2 ... MatMulV2          x[m,k]        ConcatV2 (axis 1) -> W[k, N*n]
       (w1)      (w2)         (wN)      ==>        \\           /
         |         |            |                   MatMulV2 [m, N*n]
        y1        y2    ...    yN                         |
                                                 SplitV(size_splits=[n]*N, split_dim=1)
                                                   |      |        |
                                                  y1     y2  ...  yN

Matrix products distribute over column blocks: ``x @ [w1 | w2 | ... | wN] = [x@w1 | ... | x@wN]``.
When the weight is the left operand (``y = w @ x``) the blocks are rows instead: the weights are
concatenated and the output split along axis 0. A transposed weight is concatenated along its
other axis.

Grouping (``find_groups``): MatMulV2 nodes whose data input is the same tensor, whose other input
is a Const weight on the same side, with equal ``transpose_x1``/``transpose_x2``, equal input
shapes and dtypes, and no ``bias``/``offset_w``. A group of two or more is merged through one
``SubgraphBoundary`` -- input 0 is the shared tensor, feeding all N products, inputs 1..N the
weights, outputs 0..N-1 the products -- and ``SubgraphRewriter.replace``, which checks that the
merge creates no cycle and reports the fusion in the pass statistics.

Difference from GE's sample: GE also follows the data input up through Reshape/Squeeze to a common
root; here the products must read the very same tensor. GE concatenates with ConcatV2D (a
constant-axis op this library lacks); ConcatV2 with a constant axis is the same operation.

Run ``python examples/fusion_pass/mmoe_matmul_merge_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple, Union

import numpy as np

from ge.es.all import ConcatV2, MatMulV2, Relu, SplitV
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import TensorLike
from ge.graph import Graph, Node
from ge.passes import FusionBasePass, PassContext, PassStage, SubgraphRewriter, can_fuse, register_fusion_pass
from sample_common import CONST_TYPES, group_nodes, input_like, is_connected, show_rewrite, subgraph_boundary

PASS_NAME = "MmoeMatmulPass"


class GroupKey(NamedTuple):
    """What must be equal for MatMulV2 nodes to merge."""

    source: Tuple[str, int]  # producer (node name, output) of the shared data input
    const_idx: int  # which input is the constant weight (1: y = x @ w, 0: y = w @ x)
    transpose_x1: bool
    transpose_x2: bool
    shapes: Tuple[Tuple[int, ...], Tuple[int, ...]]
    dtypes: Tuple[int, int]


def group_key(mm: Node) -> Optional[GroupKey]:
    """The merge key of a MatMulV2, or None when it cannot merge."""
    if mm.type != "MatMulV2" or any(is_connected(mm, i) for i in range(2, mm.get_inputs_size())):
        return None
    producers = [mm.get_in_data_nodes_and_port_indexes(i) for i in (0, 1)]
    consts = [p.type in CONST_TYPES for p, _ in producers]
    if consts.count(True) != 1:
        return None
    const_idx = consts.index(True)
    data, port = producers[1 - const_idx]
    x1, x2 = mm.get_input_desc(0), mm.get_input_desc(1)
    s1, s2 = tuple(x1.get_shape()), tuple(x2.get_shape())
    if len(s1) != 2 or len(s2) != 2 or any(d < 0 for d in s1 + s2):
        return None
    return GroupKey(source=(data.name, port), const_idx=const_idx,
                    transpose_x1=bool(mm.get_attr("transpose_x1")),
                    transpose_x2=bool(mm.get_attr("transpose_x2")),
                    shapes=(s1, s2), dtypes=(int(x1.get_data_type()), int(x2.get_data_type())))


def find_groups(graph: Graph) -> List[Tuple[GroupKey, List[Node]]]:
    """Groups of two or more mergeable MatMulV2, in graph order."""
    return [(k, nodes) for k, nodes in group_nodes(graph, group_key).items() if len(nodes) >= 2]


def concat_axis(key: GroupKey) -> int:
    """The weight axis that holds the output columns (const_idx 1) or rows (const_idx 0)."""
    if key.const_idx == 1:
        return 0 if key.transpose_x2 else 1
    return 1 if key.transpose_x1 else 0


def build_replacement(key: GroupKey, mms: List[Node]) -> Graph:
    """``SplitV(MatMulV2(x, ConcatV2(w1..wN)))`` (or with the weight on the left)."""
    b = GraphBuilder("mmoe_matmul_replacement")
    x = input_like(b, 0, mms[0], 1 - key.const_idx)
    weights: List[Union[TensorHolder, TensorLike]] = [
        input_like(b, i + 1, mm, key.const_idx) for i, mm in enumerate(mms)]
    merged = ConcatV2(weights, b.create_scalar_int32(concat_axis(key)))
    x1, x2 = (x, merged) if key.const_idx == 1 else (merged, x)
    y = MatMulV2(x1, x2, transpose_x1=key.transpose_x1, transpose_x2=key.transpose_x2)
    split_dim = key.const_idx  # output columns for x @ W, rows for W @ x
    size = mms[0].get_output_desc(0).get_shape()[split_dim]
    parts = SplitV(y, b.create_const_int64([size] * len(mms)), b.create_scalar_int32(split_dim), len(mms),
                   num_split=len(mms))
    return b.build_and_reset(list(parts))


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class MmoeMatmulPass(FusionBasePass):
    """N MatMulV2 sharing their data input -> ConcatV2 of the weights, one MatMulV2, SplitV."""

    def run(self, graph: Graph, context: PassContext) -> bool:
        for key, mms in find_groups(graph):
            if not can_fuse(mms).ok:  # merging must not create a cycle
                continue
            # Boundary input 0: the shared data tensor (all N products); inputs 1..N: the weights;
            # outputs: the products.
            data, weights = [(mm, 1 - key.const_idx) for mm in mms], [[(mm, key.const_idx)] for mm in mms]
            boundary = subgraph_boundary([data] + weights, [(mm, 0) for mm in mms])
            SubgraphRewriter.replace(boundary, build_replacement(key, mms), context)
        return True


def build_example_graph(experts: int = 4) -> Graph:
    """An MMoE first layer: x[64, 128] times ``experts`` weights [128, 256], each then Relu."""
    rng = np.random.default_rng(0)
    builder = GraphBuilder("mmoe_matmul_example")
    x = builder.create_input(0, name="x", shape=[64, 128])
    outs = [Relu(MatMulV2(x, builder.create_const(rng.standard_normal((128, 256), dtype=np.float32))))
            for _ in range(experts)]
    return builder.build_and_reset(outs)


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[MmoeMatmulPass])
