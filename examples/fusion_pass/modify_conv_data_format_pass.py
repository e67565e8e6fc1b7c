"""Conv2D data format: run an NHWC convolution wrapped in a Transpose pair directly in NCHW.

Python version of GE's ``graph_base_pass/3_modify_conv_data_format_pass`` (``ConvTransFormatPass``,
a ``FusionBasePass`` registered at ``BeforeInferShape``). Like GE's sample it edits the graph by
hand -- ``Node.set_attr`` for the new ``data_format``, ``Graph.remove_edge`` / ``add_data_edge`` /
``set_output`` to reconnect, ``Graph.remove_node`` to drop the Transposes -- and so calls
``can_fuse`` before and ``report_fuse`` after the rewrite itself::

      x[N,C,H,W]                                         x[N,C,H,W]
          |                                                  |
      Transpose perm [0,2,3,1]    (NCHW -> NHWC)             |
          |                                                  |
      Conv2D data_format="NHWC"  strides/dilations   ==>  Conv2D data_format="NCHW"  strides/dilations
          |                      in NHWC order               |                     in NCHW order
      Transpose perm [0,3,1,2]    (NHWC -> NCHW)             |
          |                                                  |
      y[N,Co,Ho,Wo]                                      y[N,Co,Ho,Wo]

The two forms compute the same ``y``: the convolution reads the same pixels, only its view of the
layout changes, so ``strides`` and ``dilations`` are permuted from NHWC order ``[n, h, w, c]`` to
NCHW order ``[n, c, h, w]``. ``pads`` ([top, bottom, left, right]) and the filter (its layout comes
from its own format, not from ``data_format``) stay as they are.

Difference from GE's sample: GE's teaching sample flips an NCHW Conv2D to NHWC and deletes a pair
of Transposes found anywhere behind it (``[0,2,3,1]`` then ``[0,3,1,2]``), which changes what the
graph computes unless the convolution's input is re-laid out as well. This version removes the
Transposes around the convolution, where the rewrite is exact.

Conditions: the Conv2D's ``x`` comes from a Transpose with constant ``perm == [0, 2, 3, 1]``; its
output goes only to a Transpose with constant ``perm == [0, 3, 1, 2]``. The first Transpose (and a
perm constant) is removed only when nothing else uses it.

Run ``python examples/fusion_pass/modify_conv_data_format_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ge.es.all import Add, Conv2D, Transpose
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph, Node
from ge.passes import (
    FusionBasePass,
    PassContext,
    PassStage,
    can_fuse,
    infer_shape,
    register_fusion_pass,
    report_fuse,
)
from sample_common import const_ints, show_rewrite

PASS_NAME = "ConvTransFormatPass"
NCHW_TO_NHWC = [0, 2, 3, 1]
NHWC_TO_NCHW = [0, 3, 1, 2]


def nhwc_to_nchw(values: List[int]) -> List[int]:
    """A 4-value attribute in NHWC order ``[n, h, w, c]`` as NCHW order ``[n, c, h, w]``."""
    return [values[i] for i in NHWC_TO_NCHW]


def _graph_output_slots(graph: Graph, node: Node) -> List[int]:
    return [i for i, (n, port) in enumerate(graph.get_outputs()) if n.name == node.name and port == 0]


def _unused(graph: Graph, node: Node) -> bool:
    return not node.get_out_data_nodes_and_port_indexes(0) and not _graph_output_slots(graph, node)


def find_wrapped_conv(graph: Graph, conv: Node) -> Optional[Tuple[Node, Node]]:
    """(Transpose before, Transpose after) when ``conv`` is an NHWC Conv2D between
    NCHW->NHWC and NHWC->NCHW Transposes, else None."""
    if conv.type != "Conv2D" or conv.get_attr("data_format") != "NHWC":
        return None
    before, _ = conv.get_in_data_nodes_and_port_indexes(0)
    if before.type != "Transpose" or const_ints(before, 1) != NCHW_TO_NHWC:
        return None
    consumers = conv.get_out_data_nodes_and_port_indexes(0)
    if len(consumers) != 1 or _graph_output_slots(graph, conv):
        return None
    after, _ = consumers[0]
    if after.type != "Transpose" or const_ints(after, 1) != NHWC_TO_NCHW:
        return None
    return before, after


def _remove_with_perm(graph: Graph, transpose: Node) -> None:
    """Removes a Transpose nobody uses, and its perm constant when that is left unused."""
    perm, _ = transpose.get_in_data_nodes_and_port_indexes(1)
    graph.remove_node(transpose)
    if perm.type in ("Const", "Constant") and _unused(graph, perm):
        graph.remove_node(perm)


def rewrite(graph: Graph, conv: Node, before: Node, after: Node, context: PassContext) -> None:
    """Reconnects ``x -> conv -> consumers of after``, switches the convolution to NCHW, reports
    the fusion, then removes what is no longer used."""
    x, x_port = before.get_in_data_nodes_and_port_indexes(0)
    graph.remove_edge(before, 0, conv, 0)
    graph.add_data_edge(x, x_port, conv, 0)
    for consumer, port in after.get_out_data_nodes_and_port_indexes(0):
        graph.remove_edge(after, 0, consumer, port)
        graph.add_data_edge(conv, 0, consumer, port)
    for slot in _graph_output_slots(graph, after):
        graph.set_output(slot, conv, 0)
    conv.set_attr("data_format", "NCHW")
    conv.set_attr("strides", nhwc_to_nchw(list(conv.get_attr("strides"))))
    conv.set_attr("dilations", nhwc_to_nchw(list(conv.get_attr("dilations"))))
    report_fuse([before, conv, after], [conv], context)
    _remove_with_perm(graph, after)
    if _unused(graph, before):
        _remove_with_perm(graph, before)


@register_fusion_pass(name=PASS_NAME, stage=PassStage.BEFORE_INFER_SHAPE)
class ConvTransFormatPass(FusionBasePass):
    """Transpose(NCHW->NHWC) -> Conv2D(NHWC) -> Transpose(NHWC->NCHW) becomes Conv2D(NCHW)."""

    def run(self, graph: Graph, context: PassContext) -> bool:
        changed = False
        for conv in [n for n in graph.get_direct_nodes() if n.type == "Conv2D"]:
            found = find_wrapped_conv(graph, conv)
            if found is None:
                continue
            before, after = found
            if not can_fuse([before, conv, after]).ok:
                continue
            rewrite(graph, conv, before, after, context)
            changed = True
        if changed:
            infer_shape(graph)
        return True


def build_example_graph() -> Graph:
    """An NCHW model around an NHWC convolution: x[1, 6, 9, 9], 3x3 filter, stride 3, then + 1."""
    builder = GraphBuilder("modify_conv_data_format_example")
    x = builder.create_input(0, name="x", shape=[1, 6, 9, 9])
    w = builder.create_const(np.random.default_rng(0).standard_normal((6, 6, 3, 3), dtype=np.float32))
    nhwc = Transpose(x, builder.create_const_int64(NCHW_TO_NHWC))
    y = Conv2D(nhwc, w, strides=[1, 3, 3, 1], pads=[0, 0, 0, 0], data_format="NHWC")
    nchw = Transpose(y, builder.create_const_int64(NHWC_TO_NCHW))
    return builder.build_and_reset([Add(nchw, 1.0)])


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[ConvTransFormatPass])
