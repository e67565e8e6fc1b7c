"""Fusion-pass sample 6: decompose a grouped Conv2D into per-group Conv2Ds (a ``DecomposePass``).

A Conv2D with ``groups = g`` convolves each of g channel groups of the input with its own group of
filters. GE's "decompose_grouped_conv_to_splited_pass" sample rewrites it with ops that only know
``groups = 1``: split the input along C and the filter along N into g parts, convolve part i with
filter part i, and concatenate the results along C (with a bias, it is split along N too)::

                                          x                 filter
                                          |                   |
         x   filter                Split(dim 1, g)     Split(dim 0, g)
          \\  /                       |   ...   |         |   ...   |
     Conv2D(groups=g)      ==>     Conv2D(groups=1) ... Conv2D(groups=1)
           |                               \\     ...     /
                                         ConcatV2(dim 1)
                                                |

A ``DecomposePass`` is offered every node whose type is in ``op_types`` (here ["Conv2D"]):
``meet_requirements(node)`` keeps the convolutions this decomposition handles (groups > 1, NCHW,
no quantization offset, channel counts divisible by groups) and ``replacement(node)`` returns a
graph whose inputs are the node's connected inputs in order (x, filter[, bias]) and whose output
replaces the node's output.

As in GE, the pass runs at ``PassStage.AFTER_INFER_SHAPE``, so the replacement must come with its
shapes: it is built on inputs of unknown shape, then its inputs get the matched node's input
descriptions and ``ge.passes.infer_shape(replacement)`` propagates them (GE's
``InferShapeUtil::InferShape(graph, matched_node)``).

    python examples/fusion_pass/decompose_grouped_conv_pass.py
"""

from __future__ import annotations

from typing import List, Union

from ge.es.all import ConcatV2, Conv2D, Relu, Split
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import TensorLike
from ge.graph import Graph, Node
from ge.passes import DecomposePass, PassStage, infer_shape, register_decompose_pass
from sample_common import is_connected, show_rewrite

PASS_NAME = "DecomposeGroupedConvToSplitedPass"
UNKNOWN_RANK = [-2]
X, FILTER, BIAS, OFFSET_W = 0, 1, 2, 3  # Conv2D's input indexes


def _divisible(dim: int, groups: int) -> bool:
    return dim < 0 or dim % groups == 0  # an unknown dimension is checked at run time


def infer_from_node(replacement: Graph, node: Node) -> None:
    """Gives each input of ``replacement`` the description of the node input it stands for (its
    Data nodes' ``index`` attributes are the node's connected inputs, in order), then infers the
    shapes and dtypes of the whole replacement."""
    connected = [i for i in range(node.get_inputs_size()) if is_connected(node, i)]
    for data in (n for n in replacement.get_all_nodes() if n.type == "Data"):
        data.update_output_desc(0, node.get_input_desc(connected[data.get_attr("index")]))
    infer_shape(replacement)


@register_decompose_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE, op_types=["Conv2D"])
class DecomposeGroupedConvToSplitedPass(DecomposePass):
    """Conv2D(groups=g), NCHW -> Split + g x Conv2D(groups=1) + ConcatV2."""

    def meet_requirements(self, node: Node) -> bool:
        groups: int = node.get_attr("groups")
        if groups <= 1 or node.get_attr("data_format") != "NCHW" or is_connected(node, OFFSET_W):
            return False
        x_shape = node.get_input_desc(X).get_shape()
        filter_shape = node.get_input_desc(FILTER).get_shape()
        if len(x_shape) != 4 or len(filter_shape) != 4:
            return False
        return _divisible(x_shape[1], groups) and _divisible(filter_shape[0], groups)

    def replacement(self, node: Node) -> Graph:
        groups: int = node.get_attr("groups")
        has_bias = is_connected(node, BIAS)
        builder = GraphBuilder("replacement")
        x = builder.create_input(0, shape=UNKNOWN_RANK)
        weights = builder.create_input(1, shape=UNKNOWN_RANK)
        xs = Split(builder.create_scalar_int32(1), x, groups, num_split=groups)
        ws = Split(builder.create_scalar_int32(0), weights, groups, num_split=groups)
        bs: List[TensorHolder] = []
        if has_bias:
            bias = builder.create_input(2, shape=UNKNOWN_RANK)
            bs = Split(builder.create_scalar_int32(0), bias, groups, num_split=groups)
        convs: List[Union[TensorHolder, TensorLike]] = [  # (ConcatV2 takes a list of either)
            Conv2D(
                xs[i],
                ws[i],
                bs[i] if has_bias else None,
                strides=node.get_attr("strides"),
                pads=node.get_attr("pads"),
                dilations=node.get_attr("dilations"),
                groups=1,
                data_format="NCHW",
                offset_x=node.get_attr("offset_x"),
            )
            for i in range(groups)
        ]
        replacement = builder.build_and_reset([ConcatV2(convs, builder.create_scalar_int32(1))])
        infer_from_node(replacement, node)
        return replacement


def _demo_graph() -> Graph:
    builder = GraphBuilder("grouped_conv_demo")
    x = builder.create_input(0, shape=[1, 4, 8, 8])
    weights = builder.create_input(1, shape=[6, 2, 3, 3])
    y = Conv2D(x, weights, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], groups=2, data_format="NCHW")
    return builder.build_and_reset([Relu(y)])


if __name__ == "__main__":
    show_rewrite(_demo_graph())
