"""MMoE deeper layers: N parallel MatMulV2 of equal shapes become one BatchMatMulV2.

Python version of GE's ``graph_base_pass/4_mmoe_bmm_split_pass`` (``MmoeBmmSplitPass``, registered
at ``AfterInferShape``). After the first layer of a Multi-gate Mixture-of-Experts model each
expert multiplies its *own* hidden tensor by its own weight; those N products have equal shapes,
so they can run as one batched product::

      h1[m,k] w1[k,n]   ...   hN[m,k] wN[k,n]         h1 ... hN           w1 ... wN
          \\   /                   \\   /                  \\    /              \\    /
        MatMulV2        ...      MatMulV2       ==>   Pack(axis 0)        Pack(axis 0)
            |                        |                  [N,m,k]              [N,k,n]
           y1                       yN                        \\            /
                                                            BatchMatMulV2 [N,m,n]
                                                                   |
                                                       Split(split_dim 0, num_split N)
                                                            |  ...  |        [1,m,n] each
                                                        Squeeze(axis [0]) ... Squeeze
                                                            |               |
                                                           y1     ...      yN

Pack stacks the operands along a new axis 0, the batched product multiplies entry i by entry i,
and Split + Squeeze take entry i back out: ``yi`` is unchanged. ``transpose_x1``/``transpose_x2``
become ``adj_x1``/``adj_x2``.

Grouping (``find_groups``), as in GE's sample: from each MatMulV2, follow its ``x1`` input upwards
through nodes with exactly one non-constant input until a graph input or a node with several
non-constant inputs: that is the root. The *level* counts the MatMuls met on the way (the node's
own included). MatMulV2 nodes with the same root and level, equal transpose attributes, equal
static input shapes and dtypes and no ``bias``/``offset_w`` form a group; a group of two or more is
merged when the nodes read pairwise different ``x1`` tensors (the first layer, where all read the
same input, is left to ``mmoe_matmul_merge_pass``, which makes one wide MatMul instead of stacking
copies) and merging them creates no cycle (``can_fuse``). Each group is replaced through one
``SubgraphBoundary`` (inputs: the N ``x1`` then the N ``x2``; outputs: the N products) with
``SubgraphRewriter.replace``, which reports the fusion.

Run ``python examples/fusion_pass/mmoe_bmm_split_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple, Union

import numpy as np

from ge.es.all import BatchMatMulV2, MatMulV2, Pack, Relu, Split, Squeeze
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import TensorLike
from ge.graph import DataType, Graph, Node
from ge.passes import FusionBasePass, PassContext, PassStage, SubgraphRewriter, can_fuse, register_fusion_pass
from sample_common import CONST_TYPES, group_nodes, is_connected, show_rewrite, subgraph_boundary

PASS_NAME = "MmoeBmmSplitPass"
INPUT_TYPES = ("Data", "RefData")
MATMUL_TYPES = ("MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2")


class GroupKey(NamedTuple):
    """What must be equal for MatMulV2 nodes to be stacked."""

    root: str
    level: int
    transpose_x1: bool
    transpose_x2: bool
    x1_shape: Tuple[int, ...]
    x2_shape: Tuple[int, ...]
    dtype: DataType


def _producers(node: Node) -> List[Tuple[Node, int]]:
    """The producers of the connected inputs of ``node``."""
    return [node.get_in_data_nodes_and_port_indexes(i) for i in range(node.get_inputs_size())
            if is_connected(node, i)]


def find_root(mm: Node) -> Tuple[str, int]:
    """(root node name, level) of a MatMulV2, following its x1 input upwards."""
    level = 1
    node, _ = mm.get_in_data_nodes_and_port_indexes(0)
    while node.type not in INPUT_TYPES:
        non_const = [p for p in _producers(node) if p[0].type not in CONST_TYPES]
        if len(non_const) != 1:
            break
        if node.type in MATMUL_TYPES:
            level += 1
        node = non_const[0][0]
    return node.name, level


def group_key(mm: Node) -> Optional[GroupKey]:
    """The stacking key of a MatMulV2, or None when it cannot be stacked."""
    if mm.type != "MatMulV2" or len(_producers(mm)) != 2 or mm.get_attr("offset_x") != 0:
        return None
    x1, x2 = mm.get_input_desc(0), mm.get_input_desc(1)
    s1, s2 = tuple(x1.get_shape()), tuple(x2.get_shape())
    if len(s1) != 2 or len(s2) != 2 or any(d < 0 for d in s1 + s2):
        return None
    if x1.get_data_type() != x2.get_data_type():
        return None
    root, level = find_root(mm)
    return GroupKey(root, level, bool(mm.get_attr("transpose_x1")), bool(mm.get_attr("transpose_x2")),
                    s1, s2, x1.get_data_type())


def _reads_distinct_inputs(mms: List[Node]) -> bool:
    sources = set()
    for mm in mms:
        producer, port = mm.get_in_data_nodes_and_port_indexes(0)
        sources.add((producer.name, port))
    return len(sources) == len(mms)


def find_groups(graph: Graph) -> List[Tuple[GroupKey, List[Node]]]:
    """Groups of MatMulV2 to stack, in graph order."""
    groups = group_nodes(graph, group_key)
    return [(k, mms) for k, mms in groups.items() if len(mms) >= 2 and _reads_distinct_inputs(mms)]


def build_replacement(key: GroupKey, n: int) -> Graph:
    """Pack + Pack -> BatchMatMulV2 -> Split -> Squeeze, for N products of the key's shapes."""
    b = GraphBuilder("mmoe_bmm_split_replacement")
    dtype = key.dtype
    x1: List[Union[TensorHolder, TensorLike]] = [
        b.create_input(i, shape=list(key.x1_shape), data_type=dtype) for i in range(n)]
    x2: List[Union[TensorHolder, TensorLike]] = [
        b.create_input(n + i, shape=list(key.x2_shape), data_type=dtype) for i in range(n)]
    y = BatchMatMulV2(Pack(x1, axis=0), Pack(x2, axis=0), adj_x1=key.transpose_x1, adj_x2=key.transpose_x2)
    parts = Split(b.create_scalar_int32(0), y, n, num_split=n)
    return b.build_and_reset([Squeeze(p, axis=[0]) for p in parts])


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class MmoeBmmSplitPass(FusionBasePass):
    """N same-shape MatMulV2 of one root and level -> Pack, BatchMatMulV2, Split, Squeeze."""

    def run(self, graph: Graph, context: PassContext) -> bool:
        for key, mms in find_groups(graph):
            if not can_fuse(mms).ok:  # stacking must not create a cycle (checked after earlier merges)
                continue
            # Boundary inputs 0..N-1: the x1 of each product; N..2N-1: the x2; outputs: the products.
            x1s, x2s = [[(mm, 0)] for mm in mms], [[(mm, 1)] for mm in mms]
            boundary = subgraph_boundary(x1s + x2s, [(mm, 0) for mm in mms])
            SubgraphRewriter.replace(boundary, build_replacement(key, len(mms)), context)
        return True


def build_example_graph(experts: int = 4, m: int = 8, k1: int = 16, n1: int = 32, n2: int = 16) -> Graph:
    """GE's sample model, smaller: per expert ``Relu(x @ w1_i) @ w2_i``."""
    rng = np.random.default_rng(0)
    builder = GraphBuilder("mmoe_bmm_split_example")
    x = builder.create_input(0, name="x", shape=[m, k1])
    outs = []
    for _ in range(experts):
        w1 = builder.create_const(rng.standard_normal((k1, n1), dtype=np.float32))
        w2 = builder.create_const(rng.standard_normal((n1, n2), dtype=np.float32))
        outs.append(MatMulV2(Relu(MatMulV2(x, w1)), w2))
    return builder.build_and_reset(outs)


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[MmoeBmmSplitPass])
