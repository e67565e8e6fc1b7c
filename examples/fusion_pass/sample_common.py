"""Helpers the fusion-pass samples of this directory share; not a sample itself.

GE's C++ samples each carry small utilities of their own (reading a Const input, copying a
tensor description into a replacement, printing the graph before and after); here they are
written once. A sample imports them as ``from sample_common import ...``: running a sample as a
script puts this directory on ``sys.path``.
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, TypeVar

from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import Graph, Node
from ge.passes import (
    Pattern,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    create_pattern,
    infer_shape,
    run_passes,
)

CONST_TYPES = ("Const", "Constant")
K = TypeVar("K", bound=Hashable)
# An input of ``node``: (node, input index); an output: (node, output index).
Port = Tuple[Node, int]


def is_connected(node: Node, index: int) -> bool:
    """Whether input ``index`` of ``node`` has a producer (optional inputs may not)."""
    try:
        node.get_in_data_nodes_and_port_indexes(index)
    except RuntimeError:
        return False
    return True


def const_ints(node: Node, index: int) -> Optional[List[int]]:
    """The values of input ``index`` of ``node`` when a Const produces it, else None."""
    try:
        producer, _ = node.get_in_data_nodes_and_port_indexes(index)
    except RuntimeError:
        return None
    if producer.type not in CONST_TYPES:
        return None
    return [int(v) for v in producer.get_attr("value").numpy().reshape(-1)]


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> Optional[List[int]]:
    """Numpy broadcast of two static shapes; None when they do not broadcast."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out


def group_nodes(graph: Graph, key: Callable[[Node], Optional[K]]) -> Dict[K, List[Node]]:
    """The direct nodes of ``graph`` grouped by ``key`` (None: the node is in no group), each
    group and the groups in graph order."""
    groups: Dict[K, List[Node]] = {}
    for node in graph.get_direct_nodes():
        k = key(node)
        if k is not None:
            groups.setdefault(k, []).append(node)
    return groups


def input_like(builder: GraphBuilder, index: int, node: Node, port: int) -> TensorHolder:
    """A replacement input with the description (shape, dtype) of input ``port`` of ``node``."""
    d = node.get_input_desc(port)
    return builder.create_input(index, shape=d.get_shape(), data_type=d.get_data_type())


def captured_pattern(builder: GraphBuilder, outputs: List[TensorHolder],
                     captures: Iterable[TensorHolder]) -> Pattern:
    """The pattern of ``builder``'s graph with ``outputs``, capturing ``captures`` in order."""
    pattern = create_pattern(builder.build_and_reset(outputs))
    for t in captures:
        pattern.capture_tensor(t)
    return pattern


def subgraph_boundary(inputs: Sequence[Sequence[Port]], outputs: Sequence[Port]) -> SubgraphBoundary:
    """A ``SubgraphBoundary`` whose input ``i`` feeds the node inputs ``inputs[i]`` and whose
    output ``j`` is the node output ``outputs[j]``."""
    b = SubgraphBoundary()
    for i, consumers in enumerate(inputs):
        b.add_input(i, SubgraphInput(list(consumers)))
    for j, (node, port) in enumerate(outputs):
        b.add_output(j, SubgraphOutput(node, port))
    return b


def show_rewrite(graph: Graph, passes: Optional[list] = None, *, title: str = "",
                 infer: bool = False) -> None:
    """What a sample prints when run as a script: the graph, the statistics of each pass that
    ``run_passes`` ran (``passes``, or all registered ones), the fusions a FusionBasePass
    reported, then the graph again (after ``infer_shape`` when ``infer``)."""
    print(f"--- {title}; " if title else "", "before:\n", graph, sep="")
    for stats in run_passes(graph, passes=passes):
        if stats.fusions:
            print(stats, stats.fusions)
        else:
            print(stats)
    if infer:
        infer_shape(graph)
    print("after (shapes inferred):\n" if infer else "after:\n", graph, sep="")
