"""Pattern fusion pass: ``MatMulV2(a, b) + c`` becomes ``GEMM(a, b, c, 1.0, 1.0)``.

A ``PatternFusionPass`` in GE's style: the ``@pattern`` method describes the subgraph with ES
functions, ``meet_requirements`` filters the matches, ``replacement`` builds what replaces them.
GEMM computes ``alpha * (a @ b) + beta * c``, so with both scalars 1 the numbers do not change.
Loaded from ``ASCEND_GE_PY_PASS_PATH`` (this directory) when ``GeApi().ge_initialize`` runs.
"""

from __future__ import annotations

from ge.es.all import GEMM, MatMulV2
from ge.passes import MatchResult, PassStage, PatternFusionPass, pattern, register_fusion_pass

PASS_NAME = "GeStyleMatMulV2AddToGemmPass"
# The MatMulV2 nodes this pass replaced, for the example program to check.
REWRITES: list = []


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class MatMulV2AddToGemmPass(PatternFusionPass):
    @pattern
    def matmul_v2_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMulV2(a, b) + c

    def meet_requirements(self, match_result: MatchResult) -> bool:
        # GEMM takes no bias input and the pattern's operands untransposed.
        product = next(n for n in match_result.get_matched_nodes() if n.type == "MatMulV2")
        return not product.get_attr("transpose_x1") and not product.get_attr("transpose_x2")

    def replacement(self, inputs, match_result: MatchResult):
        product = next(n for n in match_result.get_matched_nodes() if n.type == "MatMulV2")
        REWRITES.append(product.name)
        print(f"[Info] {PASS_NAME}: {product.name} + Add replaced by GEMM")
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
