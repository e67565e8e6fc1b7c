"""Graph fusion pass: ``Mul(t, t)`` (both operands the same tensor) becomes ``Square(t)``.

A ``FusionBasePass`` in GE's style: ``run(graph, context)`` walks the graph itself, describes each
part to replace with a ``SubgraphBoundary`` (one boundary input feeding both ports of the Mul, one
output) and swaps it with ``SubgraphRewriter.replace``, which reports the fusion to the context.
Loaded from ``ASCEND_GE_PY_PASS_PATH`` (this directory) when ``GeApi().ge_initialize`` runs.
"""

from __future__ import annotations

from ge.es.all import Square
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph, Node
from ge.passes import (
    FusionBasePass,
    PassContext,
    PassStage,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    SubgraphRewriter,
    register_fusion_pass,
)

PASS_NAME = "GeStyleSelfMulToSquarePass"
# The Mul nodes this pass replaced, for the example program to check.
REWRITES: list = []


def _is_self_mul(node: Node) -> bool:
    if node.type != "Mul":
        return False
    producers = node.get_in_data_nodes_and_port_indexes
    (left, left_port), (right, right_port) = producers(0), producers(1)
    return left.name == right.name and left_port == right_port


def _replacement(mul: Node) -> Graph:
    desc = mul.get_input_desc(0)
    builder = GraphBuilder("self_mul_to_square")
    t = builder.create_input(0, shape=desc.get_shape(), data_type=desc.get_data_type())
    return builder.build_and_reset([Square(t)])


def _boundary(mul: Node) -> SubgraphBoundary:
    boundary = SubgraphBoundary()
    boundary.add_input(0, SubgraphInput([(mul, 0), (mul, 1)]))
    boundary.add_output(0, SubgraphOutput(mul, 0))
    return boundary


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class SelfMulToSquarePass(FusionBasePass):
    def run(self, graph: Graph, context: PassContext) -> bool:
        for mul in [n for n in graph.get_direct_nodes() if _is_self_mul(n)]:
            name = mul.name
            SubgraphRewriter.replace(_boundary(mul), _replacement(mul), context)
            REWRITES.append(name)
            print(f"[Info] {PASS_NAME}: {name} replaced by Square")
        return True
