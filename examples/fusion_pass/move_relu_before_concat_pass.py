"""Move Relu before ConcatV2: one Relu per concatenated input instead of one on the result.

Python version of GE's ``graph_base_pass/2_move_relu_before_concat_pass`` (a ``FusionBasePass``
registered at ``BeforeInferShape``). It shows the whole-graph style: the pass walks the graph
itself, describes the part to replace with a ``SubgraphBoundary`` and swaps it with
``SubgraphRewriter.replace``::

      x0   x1  ...  x(N-1)  concat_dim             x0     x1   ...  x(N-1)
        \\   |        /       /                      |      |          |
           ConcatV2 ---------                       Relu   Relu  ...  Relu    concat_dim
              |                        ==>            \\     |          /       /
             Relu                                          ConcatV2 ---------
              |                                               |
              y                                               y

Relu is elementwise, so ``Relu(Concat(x0, ..., xN-1)) == Concat(Relu(x0), ..., Relu(xN-1))``.

The boundary has one input per input port of ConcatV2 (the N data inputs, then ``concat_dim``) and
one output, the Relu's. The pass rewrites a ConcatV2 whose result feeds exactly one consumer, a
Relu, and nothing else (not a graph output either): a second user of the concatenation would still
need the value before Relu. ``SubgraphRewriter.replace`` gets the pass context, so it checks that the
rewrite creates no cycle and reports the fusion (it shows in ``PassStats.fusions``). Since the
replacement only knows ``concat_dim`` as an input, the pass re-runs shape inference at the end.

Run ``python examples/fusion_pass/move_relu_before_concat_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import List

from ge.es.all import ConcatV2, Relu, Sigmoid
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph, Node
from ge.passes import FusionBasePass, PassContext, PassStage, SubgraphBoundary, SubgraphRewriter, infer_shape
from ge.passes import register_fusion_pass
from sample_common import input_like, show_rewrite, subgraph_boundary

PASS_NAME = "MoveReluBeforeConcatPass"


def _single_relu_consumer(concat: Node) -> bool:
    """Whether the ConcatV2's result goes to one Relu and nowhere else."""
    consumers = concat.get_out_data_nodes_and_port_indexes(0)
    if len(consumers) != 1 or consumers[0][0].type != "Relu":
        return False
    graph_outputs = concat.get_owner_graph().get_outputs()
    return not any(n.name == concat.name for n, _ in graph_outputs)


def find_concat_relu(graph: Graph) -> List[Node]:
    """The ConcatV2 nodes (at least two data inputs) whose only consumer is a Relu."""
    return [n for n in graph.get_direct_nodes()
            if n.type == "ConcatV2" and n.get_inputs_size() >= 3 and _single_relu_consumer(n)]


def build_boundary(concat: Node) -> SubgraphBoundary:
    """Inputs: the ConcatV2's input ports in order; output: the Relu's output."""
    relu, _ = concat.get_out_data_nodes_and_port_indexes(0)[0]
    return subgraph_boundary([[(concat, port)] for port in range(concat.get_inputs_size())], [(relu, 0)])


def build_replacement(concat: Node) -> Graph:
    """``ConcatV2([Relu(x0), ..., Relu(xN-1)], concat_dim)`` with inputs described like the
    ConcatV2's."""
    builder = GraphBuilder("move_relu_before_concat_replacement")
    *xs, concat_dim = [input_like(builder, port, concat, port) for port in range(concat.get_inputs_size())]
    return builder.build_and_reset([ConcatV2([Relu(x) for x in xs], concat_dim)])


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class MoveReluBeforeConcatPass(FusionBasePass):
    """ConcatV2 -> Relu becomes Relu on each input -> ConcatV2."""

    def run(self, graph: Graph, context: PassContext) -> bool:
        concats = find_concat_relu(graph)
        for concat in concats:
            # Build both before replacing: the replacement removes `concat` from the graph.
            replacement, boundary = build_replacement(concat), build_boundary(concat)
            SubgraphRewriter.replace(boundary, replacement, context)
        if concats:
            infer_shape(graph)
        return True


def build_example_graph() -> Graph:
    """Relu(Concat(a, b, c)) (rewritten) and Sigmoid(Concat(a, b)) (left alone)."""
    builder = GraphBuilder("move_relu_before_concat_example")
    a = builder.create_input(0, name="a", shape=[2, 3])
    b = builder.create_input(1, name="b", shape=[2, 5])
    c = builder.create_input(2, name="c", shape=[2, 1])
    y = Relu(ConcatV2([a, b, c], builder.create_scalar_int32(1)))
    z = Sigmoid(ConcatV2([a, b], builder.create_scalar_int32(-1)))
    return builder.build_and_reset([y, z])


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[MoveReluBeforeConcatPass])
