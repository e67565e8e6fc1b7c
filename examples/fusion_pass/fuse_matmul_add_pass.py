"""Fusion-pass sample 1: MatMul + Add -> GEMM, written in the ``@pattern`` expression style.

GE's sample ``FuseMatMulAndAddPass`` (examples/fusion_pass, "1_fuse_matmul_add_pass") finds a
matrix product followed by an Add of a third tensor and replaces both nodes by one GEMM, which
computes ``alpha * (a @ b) + beta * c``; with ``alpha = beta = 1`` that is exactly ``a @ b + c``::

        a    b                        a    b    c   1.0  1.0
         \\  /                          \\   |   |   /    /
        MatMul    c        ==>          +---GEMM--------+
            \\    /                            |
             Add                              y
              |
              y

Two patterns are declared, one per ``@pattern`` method: ``MatMul(a, b) + c`` and
``BatchMatMulV2(a, b) + c``. Each method receives ``inputs`` (``PatternInputs``); the inputs it
touches become the pattern's inputs, and the framework captures them in index order followed by the
returned output, so ``match_result.get_captured_tensor(0..2)`` are a, b, c and ``(3)`` is the Add
output. The expression-style ``replacement(self, inputs, match_result)`` builds the GEMM from the
same three inputs (each with the dtype and shape of the tensor it matched); alpha and beta are Python scalars, which the GEMM call turns into Const nodes of
c's dtype (GE's sample creates them with ``create_scalar_float(1.0)``).

``meet_requirements`` keeps the rewrite exact: the product must not transpose its operands (sample 2
shows how to carry ``transpose_x1``/``transpose_x2`` over), its operands must be matrices (GEMM is a
2-D operator), and ``c`` must not broadcast the product to a larger shape.

The pass runs at ``PassStage.BEFORE_INFER_SHAPE``, as GE's does. Run this file to see it work::

    python examples/fusion_pass/fuse_matmul_add_pass.py
"""

from __future__ import annotations

from typing import List

from ge.es.all import GEMM, BatchMatMulV2, MatMul
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import Graph, Node
from ge.passes import (
    MatchResult,
    PassStage,
    PatternFusionPass,
    PatternInputs,
    pattern,
    register_fusion_pass,
)
from sample_common import show_rewrite

PASS_NAME = "FuseMatMulAndAddPass"
UNKNOWN_RANK = [-2]
# The attributes that transpose the operands, per product operator.
TRANSPOSE_ATTRS = {"MatMul": ("transpose_x1", "transpose_x2"), "BatchMatMulV2": ("adj_x1", "adj_x2")}


def _is_matrix_or_unknown(shape: List[int]) -> bool:
    return shape == UNKNOWN_RANK or len(shape) == 2


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class FuseMatMulAndAddPass(PatternFusionPass):
    """MatMul(a, b) + c and BatchMatMulV2(a, b) + c -> GEMM(a, b, c, 1, 1)."""

    @pattern
    def matmul_add(self, inputs: PatternInputs) -> TensorHolder:
        a, b, c = inputs[:3]  # pattern inputs: any tensor (unknown rank)
        return MatMul(a, b) + c

    @pattern
    def batch_matmul_add(self, inputs: PatternInputs) -> TensorHolder:
        a, b, c = inputs[:3]
        return BatchMatMulV2(a, b) + c

    def meet_requirements(self, match_result: MatchResult) -> bool:
        product: Node = next(n for n in match_result.get_matched_nodes() if n.type in TRANSPOSE_ATTRS)
        if any(product.get_attr(name) for name in TRANSPOSE_ATTRS[product.type]):
            return False
        if not all(_is_matrix_or_unknown(product.get_input_desc(i).get_shape()) for i in (0, 1)):
            return False
        add_out = match_result.get_captured_tensor(3)
        return add_out.node.get_output_desc(0).get_shape() == product.get_output_desc(0).get_shape()

    # The expression style (inputs in, tensors out); the base class types only
    # replacement(match_result) -> Graph, hence the ignore.
    def replacement(  # type: ignore[override]
        self, inputs: PatternInputs, match_result: MatchResult
    ) -> TensorHolder:
        # Replacement inputs carry the matched tensors' dtype and shape, so the GEMM's output gets
        # the real shape and alpha/beta become Consts of c's dtype.
        a, b, c = inputs[:3]
        alpha = beta = 1.0
        return GEMM(a, b, c, alpha, beta)


def _demo_graph() -> Graph:
    builder = GraphBuilder("matmul_add_demo")
    a = builder.create_input(0, shape=[2, 3])
    b = builder.create_input(1, shape=[3, 4])
    c = builder.create_input(2, shape=[4])
    return builder.build_and_reset([MatMul(a, b) + c, BatchMatMulV2(a, b) + c])


if __name__ == "__main__":
    show_rewrite(_demo_graph(), infer=True)
