"""BatchMatMulV2 with one output column and a short inner dim becomes Mul + ReduceSumD.

Python version of GE's ``pattern_base_pass/9_bmm_to_mul_reduce_pass`` (``BmmToMulReducePass``, a
``PatternFusionPass`` registered at ``AfterInferShape``). A product whose output has a single
column (``n == 1``) and a short inner dim (``k <= 16``) keeps the cube unit mostly idle; the vector
unit does it faster as an elementwise product and a sum over ``k``::

    Pattern 1: w already laid out as [b, n, k]        Pattern 2: w laid out [b, n, k], transposed

      x[b,m,k]   w[b,1,k]                              x[b,m,k]   w[b,1,k] -> Transpose(perm swaps
           \\     /                                          \\      /          the last two dims)
      BatchMatMulV2(adj_x2=true)                       BatchMatMulV2(adj_x2=false)
            |                                                |
         y[b,m,1]                                         y[b,m,1]

                                      ==>

                              x[b,m,k]   w[b,1,k]
                                   \\     /
                                 Mul [b,m,k]          (w broadcasts along m)
                                     |
                        ReduceSumD(axes=[-1], keep_dims=true)
                                     |
                                  y[b,m,1]

Equivalence: with ``n == 1``, ``y[b, i, 0] = sum_k x[b, i, k] * w[b, 0, k]``, which is the sum over
the last axis of ``x * w`` (w broadcast along m), kept as a dim of size 1. Batch dims broadcast
the same way in both forms (aligned from the right).

Requirements (``meet_requirements``): ``adj_x1`` false; float or float16 inputs of one dtype;
pattern 1 has ``adj_x2`` true, pattern 2 has ``adj_x2`` false and a constant ``perm`` that swaps only
the last two dims of w; ``n == 1`` and ``k <= 16`` read off w ``[..., n, k]``; x's last dim is ``k``;
and the replacement's output shape equals the product's.

Run ``python examples/fusion_pass/batch_matmul_to_mul_reduce_pass.py`` to see a graph before and
after.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ge.es.all import BatchMatMulV2, Mul, ReduceSumD, Transpose
from ge.es.graph_builder import GraphBuilder
from ge.graph import DataType, Graph
from ge.passes import MatchResult, PassStage, Pattern, PatternFusionPass, register_fusion_pass
from sample_common import broadcast_shape, captured_pattern, const_ints, input_like, show_rewrite

PASS_NAME = "BmmToMulReducePass"
MAX_K = 16
FLOAT_TYPES = (DataType.DT_FLOAT, DataType.DT_FLOAT16)
DIRECT, TRANSPOSED = "bmm_adj_x2", "bmm_transpose_x2"


def _pattern(name: str) -> Pattern:
    """DIRECT: ``BMM(x, w)``, inputs (x, w), captures (bmm,). TRANSPOSED: ``BMM(x, Transpose(w,
    perm))``, inputs (x, w, perm), captures (transpose, bmm)."""
    b = GraphBuilder(name)
    x, w = b.create_input(0, shape=[-2]), b.create_input(1, shape=[-2])
    captured = []
    if name == TRANSPOSED:
        w = Transpose(w, b.create_input(2, shape=[-2], data_type=DataType.DT_INT64))
        captured.append(w)
    y = BatchMatMulV2(x, w)
    return captured_pattern(b, [y], captured + [y])


def swaps_last_two(perm: Sequence[int]) -> bool:
    r = len(perm)
    return r >= 2 and list(perm) == list(range(r - 2)) + [r - 1, r - 2]


def mul_reduce_shape(x: Sequence[int], w: Sequence[int]) -> Optional[List[int]]:
    """Shape of ``ReduceSumD(x * w, axes=[-1], keep_dims=True)``; None if x and w do not broadcast."""
    out = broadcast_shape(x, w)
    return None if out is None else out[:-1] + [1]


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class BmmToMulReducePass(PatternFusionPass):
    """BatchMatMulV2 with n == 1 and k <= 16 -> Mul + ReduceSumD(axes=[-1], keep_dims=true)."""

    def patterns(self) -> List[Pattern]:
        return [_pattern(DIRECT), _pattern(TRANSPOSED)]

    def meet_requirements(self, match_result: MatchResult) -> bool:
        name = match_result.get_pattern_graph_name()
        captured = [io.node for io in match_result.get_captured_tensors()]
        bmm = captured[-1]
        if bmm.get_attr("adj_x1") or bmm.get_attr("adj_x2") != (name == DIRECT):
            return False
        x = bmm.get_input_desc(0)
        if name == DIRECT:
            w = bmm.get_input_desc(1)
        else:
            transpose = captured[0]
            perm = const_ints(transpose, 1)
            if perm is None or not swaps_last_two(perm):
                return False
            w = transpose.get_input_desc(0)
        if x.get_data_type() != w.get_data_type() or x.get_data_type() not in FLOAT_TYPES:
            return False
        xs, ws = x.get_shape(), w.get_shape()
        if len(xs) < 2 or len(ws) < 2 or any(d < 0 for d in xs + ws):
            return False
        n, k = ws[-2], ws[-1]
        if n != 1 or k > MAX_K or xs[-1] != k:
            return False
        return mul_reduce_shape(xs, ws) == bmm.get_output_desc(0).get_shape()

    def replacement(self, match_result: MatchResult) -> Graph:
        name = match_result.get_pattern_graph_name()
        captured = [io.node for io in match_result.get_captured_tensors()]
        bmm = captured[-1]
        w_owner, w_port = (bmm, 1) if name == DIRECT else (captured[0], 0)
        b = GraphBuilder(f"{name}_replacement")
        x = input_like(b, 0, bmm, 0)
        w = input_like(b, 1, w_owner, w_port)
        if name == TRANSPOSED:
            input_like(b, 2, captured[0], 1)  # perm: an input of the match, no longer used
        y = ReduceSumD(Mul(x, w), axes=[-1], keep_dims=True)
        return b.build_and_reset([y])


def build_example_graph() -> Graph:
    """GE's sample model, smaller: x[4, 64, 8] times a constant w[4, 1, 8] with transpose_b."""
    builder = GraphBuilder("bmm_to_mul_reduce_example")
    x = builder.create_input(0, name="x", shape=[4, 64, 8])
    w = builder.create_const(np.random.default_rng(0).standard_normal((4, 1, 8), dtype=np.float32))
    return builder.build_and_reset([BatchMatMulV2(x, w, adj_x2=True)])


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[BmmToMulReducePass])
