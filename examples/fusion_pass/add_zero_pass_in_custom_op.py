"""Fusion-pass sample 5: remove ``AddCustom(x, 0)``, where AddCustom is a custom operator.

GE's "add_zero_pass_in_custom_op" sample shows that a pass can match operators that are not in the
built-in library. The operator is declared the way GE users declare it, with REG_OP text (GE's
``add_custom_proto.h``), and registered with ``ge.ops.register_regop``; from then on it is
``ge.es.all.AddCustom`` and can appear in graphs, patterns and replacements like any other
operator. ``ge.ops.register_infer`` gives it a shape rule (numpy-style broadcasting; the output
takes x's dtype), so graphs that use it have shapes.

The pass declares two patterns, the plain one and the one GE's sample matches, where the zero
reaches AddCustom through an Identity (as exporters often emit it)::

        x    0                 x    0
         \\  /                  |    |
       AddCustom              |  Identity           ==>     x
           |                   \\  /                          |
                              AddCustom                   consumer

``meet_requirements`` reads the matched Const (``node.get_attr("value")``) and accepts the match
when it is all zeros (any dtype) and does not broadcast x to a larger shape; the replacement passes
x through. The pass runs at ``PassStage.BEFORE_INFER_SHAPE``, as GE's does.

    python examples/fusion_pass/add_zero_pass_in_custom_op.py
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any, Dict, List, Optional, Sequence, Tuple

import ge.ops
import numpy as np
from ge.es.all import Identity, Relu
from ge.es.graph_builder import GraphBuilder
from ge.graph import DataType, Graph, Tensor
from ge.passes import MatchResult, PassStage, Pattern, PatternFusionPass
from ge.passes import create_replacement, register_fusion_pass
from sample_common import captured_pattern, show_rewrite

PASS_NAME = "AddCustomZeroPass"
UNKNOWN_RANK = [-2]
# GE's add_custom_proto.h.
ADD_CUSTOM_REGOP = """
REG_OP(AddCustom)
    .INPUT(x, ge::TensorType::ALL())
    .INPUT(y, ge::TensorType::ALL())
    .OUTPUT(z, ge::TensorType::ALL())
    .OP_END_FACTORY_REG(AddCustom);
"""

TypeAndShape = Tuple[DataType, List[int]]


def broadcast_shape(a: List[int], b: List[int]) -> List[int]:
    """numpy broadcasting of two shapes; -1 is an unknown dimension and [-2] an unknown rank."""
    if a == UNKNOWN_RANK or b == UNKNOWN_RANK:
        return list(UNKNOWN_RANK)
    out = []
    for da, db in zip_longest(reversed(a), reversed(b), fillvalue=1):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif da == -1 or db == -1:
            out.append(max(da, db))
        else:
            raise ValueError(f"AddCustom: shapes {a} and {b} do not broadcast")
    return out[::-1]


def _infer_add_custom(inputs: Sequence[Optional[TypeAndShape]], attrs: Dict[str, Any]) -> List[TypeAndShape]:
    x, y = inputs
    assert x is not None and y is not None  # both inputs are required
    return [(x[0], broadcast_shape(list(x[1]), list(y[1])))]


def _add_custom_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AddCustom on the CPU backend, so graphs with it run in a Session."""
    return np.add(x, y)


def register_add_custom() -> None:
    """Registers AddCustom, its shape rule and its CPU kernel (registering again replaces them)."""
    ge.ops.register_regop(ADD_CUSTOM_REGOP)
    ge.ops.register_infer("AddCustom", _infer_add_custom)
    ge.ops.register_kernel("AddCustom", _add_custom_kernel)


register_add_custom()
from ge.es.all import AddCustom  # type: ignore[attr-defined]  # noqa: E402  (registered just above)


def is_all_zero(tensor: Tensor) -> bool:
    """Whether every element of ``tensor`` is zero (an empty tensor is not a zero)."""
    values = tensor.numpy()
    return values.size > 0 and not np.any(values)


def _is_known(shape: List[int]) -> bool:
    return all(d >= 0 for d in shape)


def _add_zero_pattern(through_identity: bool) -> Pattern:
    """``AddCustom(x, Const)`` or ``AddCustom(x, Identity(Const))``; captures x, then the output."""
    builder = GraphBuilder("addcustom_identity_zero" if through_identity else "addcustom_zero")
    x = builder.create_input(0, shape=UNKNOWN_RANK)
    zero = builder.create_const_float(0.0)
    out = AddCustom(x, Identity(zero) if through_identity else zero)
    return captured_pattern(builder, [out], [x, out])


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class AddCustomZeroPass(PatternFusionPass):
    """AddCustom(x, 0) and AddCustom(x, Identity(0)) -> x."""

    def patterns(self) -> List[Pattern]:
        return [_add_zero_pattern(through_identity=False), _add_zero_pattern(through_identity=True)]

    def meet_requirements(self, match_result: MatchResult) -> bool:
        const = next(n for n in match_result.get_matched_nodes() if n.type == "Const")
        value: Tensor = const.get_attr("value")
        if not is_all_zero(value):
            return False
        x, out = match_result.get_captured_tensor(0), match_result.get_captured_tensor(1)
        x_desc = x.node.get_output_desc(x.index)
        out_desc = out.node.get_output_desc(out.index)
        if x_desc.get_data_type() != out_desc.get_data_type():
            return False
        x_shape, out_shape = x_desc.get_shape(), out_desc.get_shape()
        if _is_known(x_shape) and _is_known(out_shape):
            return x_shape == out_shape
        return value.get_shape() == []  # shapes unknown: only a scalar surely keeps x's shape

    def replacement(self, match_result: MatchResult) -> Graph:
        builder = GraphBuilder("replacement")
        x = builder.create_input(0, shape=UNKNOWN_RANK)
        return create_replacement(builder.build_and_reset([x]))


def _demo_graph() -> Graph:
    builder = GraphBuilder("addcustom_zero_demo")
    x = builder.create_input(0, shape=[2, 3])
    y = AddCustom(x, builder.create_const_float(0.0))
    y = AddCustom(Relu(y), Identity(builder.create_const_float([0.0, 0.0, 0.0], [3])))
    return builder.build_and_reset([AddCustom(y, builder.create_const_float(1.0))])


if __name__ == "__main__":
    show_rewrite(_demo_graph())
