"""Fusion-pass sample 2: MatMul + Add -> GEMM with explicit patterns and captured tensors.

The same rewrite as sample 1, written the way GE's "fuse_matmul_add_pass_with_capture_tensor"
sample writes it: each pattern is a graph built with a ``GraphBuilder`` and turned into a
``Pattern`` with ``create_pattern``; ``capture_tensor`` then names the tensors that the hooks need::

        a    b                             a    b    c   1.0  1.0
         \\  /                               \\   |   |   /    /
        MatMul   <- capture 0   ==>        GEMM(transpose_a = transpose_x1,
          |   c                                 transpose_b = transpose_x2)
           \\ /
           Add   <- capture 1

- ``meet_requirements`` reads capture 1 (the Add) and accepts the match only when both Add inputs
  are float32 (GE's sample: "Only support Add inputs are fp32"), and when the product multiplies
  matrices (GEMM is 2-D).
- ``replacement`` reads capture 0 (the product) and copies its transpose attributes onto the GEMM:
  MatMul's ``transpose_x1``/``transpose_x2``, or BatchMatMulV2's ``adj_x1``/``adj_x2``, become
  ``transpose_a``/``transpose_b``.

The replacement graph's inputs 0, 1, 2 are the pattern's inputs a, b, c (the boundary, in input
order). The pass runs at ``PassStage.BEFORE_INFER_SHAPE``; the GEMM it creates has an output of
unknown shape until shape inference runs (``ge.passes.infer_shape(graph)`` or a session's compile).

    python examples/fusion_pass/fuse_matmul_add_pass_with_capture_tensor.py
"""

from __future__ import annotations

from typing import Callable, List, Tuple

from ge.es.all import GEMM, Add, BatchMatMulV2, MatMul
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import DataType, Graph, Node
from ge.passes import (
    MatchResult,
    PassStage,
    Pattern,
    PatternFusionPass,
    create_pattern,
    create_replacement,
    register_fusion_pass,
)
from sample_common import show_rewrite

PASS_NAME = "FuseMatMulAndAddCaptureTensorPass"
UNKNOWN_RANK = [-2]
# Capture indexes, in the order the patterns capture them.
MATMUL_CAPTURE = 0
ADD_CAPTURE = 1
# The attributes that transpose the operands, per product operator.
TRANSPOSE_ATTRS = {"MatMul": ("transpose_x1", "transpose_x2"), "BatchMatMulV2": ("adj_x1", "adj_x2")}

Product = Callable[[TensorHolder, TensorHolder], TensorHolder]


def _product_add_pattern(name: str, product: Product) -> Pattern:
    """``product(a, b) + c`` with the product's output captured first, then the Add's."""
    builder = GraphBuilder(name)
    a, b, c = (builder.create_input(i, shape=UNKNOWN_RANK) for i in range(3))
    mm = product(a, b)
    add = Add(mm, c)
    return create_pattern(builder.build_and_reset([add])).capture_tensor(mm).capture_tensor(add)


def transpose_flags(product: Node) -> Tuple[bool, bool]:
    """(transpose_a, transpose_b) of a MatMul or BatchMatMulV2 node."""
    first, second = TRANSPOSE_ATTRS[product.type]
    return bool(product.get_attr(first)), bool(product.get_attr(second))


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class FuseMatMulAndAddCaptureTensorPass(PatternFusionPass):
    """MatMul/BatchMatMulV2(a, b) + c -> GEMM(a, b, c, 1, 1) with the transposes carried over."""

    def patterns(self) -> List[Pattern]:
        return [
            _product_add_pattern("matmul_add", MatMul),
            _product_add_pattern("batch_matmul_add", BatchMatMulV2),
        ]

    def meet_requirements(self, match_result: MatchResult) -> bool:
        add = match_result.get_captured_tensor(ADD_CAPTURE).node
        if any(add.get_input_desc(i).get_data_type() != DataType.DT_FLOAT for i in (0, 1)):
            return False  # only float32 Adds are fused
        product = match_result.get_captured_tensor(MATMUL_CAPTURE).node
        shapes = [product.get_input_desc(i).get_shape() for i in (0, 1)]
        return all(s == UNKNOWN_RANK or len(s) == 2 for s in shapes)

    def replacement(self, match_result: MatchResult) -> Graph:
        transpose_a, transpose_b = transpose_flags(match_result.get_captured_tensor(MATMUL_CAPTURE).node)
        builder = GraphBuilder("replacement")
        a, b, c = (builder.create_input(i, shape=UNKNOWN_RANK) for i in range(3))
        alpha = builder.create_scalar_float(1.0)
        beta = builder.create_scalar_float(1.0)
        gemm = GEMM(a, b, c, alpha, beta, transpose_a=transpose_a, transpose_b=transpose_b)
        return create_replacement(builder.build_and_reset([gemm]))


def _demo_graph() -> Graph:
    builder = GraphBuilder("capture_tensor_demo")
    a = builder.create_input(0, shape=[3, 2])
    b = builder.create_input(1, shape=[4, 3])
    c = builder.create_input(2, shape=[2, 4])
    return builder.build_and_reset([Add(MatMul(a, b, transpose_x1=True, transpose_x2=True), c)])


if __name__ == "__main__":
    show_rewrite(_demo_graph(), infer=True)
