"""Fusion-pass sample 3: MatMul + Const -> GEMM, narrowed by a ``PatternMatcherConfig``.

GE's "fuse_matmul_add_pass_with_pattern_matcher_config" sample builds its pass with
``PatternMatcherConfigBuilder().enable_const_value_match().enable_ir_attr_match().build()``. By
default a pattern's Const matches any Const and a pattern node's IR attributes are ignored; with
the two options the matcher also compares

- const values: the pattern's Const (a float32 [2, 2] tensor of 0.1) only matches a Const with the
  same dtype, shape and bytes (exact, no tolerance: -0.0 is not 0.0, fp16 0.1 is not fp32 0.1);
- IR attributes: the pattern's ``MatMul(transpose_x1=False, transpose_x2=False)`` only matches a
  MatMul whose IR attributes all equal the pattern node's::

        x    y                            x    y   [[.1 .1]   1.0  1.0
         \\  /                              \\   |    [.1 .1]]  /    /
        MatMul(transpose_x1=False,   ==>     +---GEMM--------------+
          |    transpose_x2=False)
          |    Const [[.1 .1] [.1 .1]]
           \\  /
            Add

Anything else is rejected by the matcher itself, before ``meet_requirements`` is called (the pass's
``matches_tried`` stays 0); ``Pattern.explain(node, config)`` says which node and why.

The replacement rebuilds the bias as its own Const (the matched Const is part of the match and is
removed with it). The pass runs at ``PassStage.BEFORE_INFER_SHAPE``, as GE's does.

    python examples/fusion_pass/fuse_matmul_add_pass_with_pattern_matcher_config.py
"""

from __future__ import annotations

from typing import List

from ge.es.all import GEMM, Add, MatMul
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph
from ge.passes import (
    MatchResult,
    PassStage,
    Pattern,
    PatternFusionPass,
    PatternMatcherConfig,
    PatternMatcherConfigBuilder,
    create_pattern,
    create_replacement,
    infer_shape,
    register_fusion_pass,
    run_passes,
)

PASS_NAME = "MatMulAddFusionPass"
UNKNOWN_RANK = [-2]
BIAS_VALUES = [0.1, 0.1, 0.1, 0.1]
BIAS_SHAPE = [2, 2]


def matcher_config() -> PatternMatcherConfig:
    """Const values and IR attributes must equal the pattern's."""
    return PatternMatcherConfigBuilder().enable_const_value_match().enable_ir_attr_match().build()


def matmul_add_const_pattern() -> Pattern:
    """``MatMul(x, y, transpose_x1=False, transpose_x2=False) + Const(BIAS_VALUES)``."""
    builder = GraphBuilder("matmul_add_const")
    x = builder.create_input(0, shape=UNKNOWN_RANK)
    y = builder.create_input(1, shape=UNKNOWN_RANK)
    bias = builder.create_const_float(BIAS_VALUES, BIAS_SHAPE)
    add = Add(MatMul(x, y, transpose_x1=False, transpose_x2=False), bias)
    return create_pattern(builder.build_and_reset([add]))


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class MatMulAddFusionPass(PatternFusionPass):
    """MatMul(x, y) + Const(0.1, [2, 2]) -> GEMM(x, y, Const(0.1, [2, 2]), 1, 1), exact matches only."""

    def __init__(self) -> None:
        super().__init__(matcher_config())

    def patterns(self) -> List[Pattern]:
        return [matmul_add_const_pattern()]

    def replacement(self, match_result: MatchResult) -> Graph:
        builder = GraphBuilder("replacement")
        x = builder.create_input(0, shape=UNKNOWN_RANK)
        y = builder.create_input(1, shape=UNKNOWN_RANK)
        bias = builder.create_const_float(BIAS_VALUES, BIAS_SHAPE)
        alpha = builder.create_scalar_float(1.0)
        beta = builder.create_scalar_float(1.0)
        return create_replacement(builder.build_and_reset([GEMM(x, y, bias, alpha, beta)]))


def _demo_graph(bias_value: float, transpose_x1: bool) -> Graph:
    builder = GraphBuilder(f"matcher_config_demo_{bias_value}_{transpose_x1}")
    x = builder.create_input(0, shape=[3, 2] if transpose_x1 else [2, 3])
    y = builder.create_input(1, shape=[3, 2])
    bias = builder.create_const_float([bias_value] * 4, BIAS_SHAPE)
    return builder.build_and_reset([Add(MatMul(x, y, transpose_x1=transpose_x1), bias)])


if __name__ == "__main__":
    for value, transpose in [(0.1, False), (0.2, False), (0.1, True)]:
        graph = _demo_graph(value, transpose)
        print(f"--- bias {value}, transpose_x1={transpose}; before:\n{graph}")
        add = next(n for n in graph.get_all_nodes() if n.type == "Add")
        print(matmul_add_const_pattern().explain(add, matcher_config()))
        for stats in run_passes(graph):
            print(stats)
        infer_shape(graph)
        print(f"after:\n{graph}")
