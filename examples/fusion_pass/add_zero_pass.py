"""Fusion-pass sample 4: remove ``Add(x, 0)``, in two ways.

Adding zero changes nothing, so ``Add(x, 0)`` can be replaced by ``x`` itself; the Add's consumers
(and graph outputs) then read ``x`` directly::

        x    0
         \\  /                 x
          Add        ==>      |
           |                consumer
        consumer

GE's "add_zero_pass" sample comes in two variants, and so does this file:

``AddZeroPass`` (GE's ``python_add_zero_pass.py``)
    The pattern ``inputs[0] + 0.0`` has a Const, which by default matches any Const, so
    ``meet_requirements`` reads the matched Const's value (``node.get_attr("value")``, a
    ``ge.graph.Tensor``) and accepts the match when every element is zero, whatever the dtype and
    shape (-0.0 included). It also refuses a zero that broadcasts ``x`` to a larger shape
    (``Add(x[4], zeros[2, 4])`` is not ``x``): the Add's output shape must be x's, or, when a shape
    is unknown, the Const must be a scalar.

``AddZeroConstValueMatchPass`` (GE's ``python_add_zero_pass_const_value_match.py``)
    ``PatternMatcherConfigBuilder().enable_const_value_match()`` moves the check into the matcher:
    only a Const equal to the pattern's (a float32 scalar whose bytes are +0.0) matches. Simpler,
    and strict: a zero tensor of another shape or dtype, or -0.0, is left alone.

Both use the ``@pattern`` expression style; the replacement ``return inputs[0]`` passes the input
through. Both are registered at ``PassStage.BEFORE_INFER_SHAPE``; ``run_passes(graph,
passes=[...])`` picks one.

    python examples/fusion_pass/add_zero_pass.py
"""

from __future__ import annotations

from typing import List

import numpy as np
from ge.es.all import Relu
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import Graph, Tensor
from ge.passes import (
    MatchResult,
    PassStage,
    PatternFusionPass,
    PatternInputs,
    PatternMatcherConfigBuilder,
    pattern,
    register_fusion_pass,
)
from sample_common import show_rewrite

PASS_NAME = "AddZeroPass"
CONST_VALUE_MATCH_PASS_NAME = "AddZeroConstValueMatchPass"
# Captures of the expression pattern: the accessed input, then the output.
X_CAPTURE = 0
ADD_CAPTURE = 1


def is_all_zero(tensor: Tensor) -> bool:
    """Whether every element of ``tensor`` is zero (an empty tensor is not a zero)."""
    values = tensor.numpy()
    return values.size > 0 and not np.any(values)


def _is_known(shape: List[int]) -> bool:
    return all(d >= 0 for d in shape)


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class AddZeroPass(PatternFusionPass):
    """Add(x, Const) -> x when the Const is all zeros and does not broadcast x."""

    @pattern
    def add_zero(self, inputs: PatternInputs) -> TensorHolder:
        return inputs[0] + 0.0

    def meet_requirements(self, match_result: MatchResult) -> bool:
        const = next(n for n in match_result.get_matched_nodes() if n.type == "Const")
        value: Tensor = const.get_attr("value")
        if not is_all_zero(value):
            return False
        x = match_result.get_captured_tensor(X_CAPTURE)
        add = match_result.get_captured_tensor(ADD_CAPTURE)
        x_shape = x.node.get_output_desc(x.index).get_shape()
        out_shape = add.node.get_output_desc(add.index).get_shape()
        if _is_known(x_shape) and _is_known(out_shape):
            return x_shape == out_shape
        return value.get_shape() == []  # shapes unknown: only a scalar surely keeps x's shape

    # The expression style (inputs in, tensors out); the base class types only
    # replacement(match_result) -> Graph, hence the ignore.
    def replacement(self, inputs: PatternInputs) -> TensorHolder:  # type: ignore[override]
        return inputs[0]


@register_fusion_pass(name=CONST_VALUE_MATCH_PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class AddZeroConstValueMatchPass(PatternFusionPass):
    """Add(x, 0.0f) -> x, with the matcher comparing the Const's value."""

    def __init__(self) -> None:
        super().__init__(PatternMatcherConfigBuilder().enable_const_value_match().build())

    @pattern
    def add_zero(self, inputs: PatternInputs) -> TensorHolder:
        return inputs[0] + 0.0

    def replacement(self, inputs: PatternInputs) -> TensorHolder:  # type: ignore[override]
        return inputs[0]


def _demo_graph() -> Graph:
    """Relu(x + 0.0) and x + [0, 0, 0, 0]: the first variant removes both Adds, the second only
    the scalar one."""
    builder = GraphBuilder("add_zero_demo")
    x = builder.create_input(0, shape=[4])
    zeros = builder.create_const_float([0.0] * 4, [4])
    return builder.build_and_reset([Relu(x + 0.0), x + zeros])


if __name__ == "__main__":
    for name in (PASS_NAME, CONST_VALUE_MATCH_PASS_NAME):
        show_rewrite(_demo_graph(), passes=[name], title=name)
