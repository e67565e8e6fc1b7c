"""``GeUtils``: GE's utility APIs, on the host.

``infer_shape(graph, input_shapes)`` is GE's ``GeUtils::InferShape``: the graph's inputs (Data
and RefData nodes, by their ``index`` attribute) take the given shapes, then shape inference
runs over the graph (and nothing else: no constant folding, no pass). ``check_node_support_on_aicore``
asks CANN's AI Core operator information library, which ge-rs does not have: it raises
``RuntimeError("... not supported: ...")``.
"""

from __future__ import annotations

from typing import List, Tuple

from ge import _native
from ge.graph import Graph, Node

__all__ = ["GeUtils"]

# The op types GE's IsDataNode counts as graph inputs.
_INPUT_TYPES = frozenset({"Data", "RefData", "AippData", "AnyData"})


class GeUtils:
    """Public GE utility APIs."""

    @staticmethod
    def infer_shape(graph: Graph, input_shapes: List[List[int]]) -> None:
        """Infers the shapes of ``graph`` with ``input_shapes[i]`` as the shape of input ``i``.

        Raises:
            TypeError: ``input_shapes`` is not a list of lists of ints, or ``graph`` not a Graph.
            RuntimeError: ``Failed to infer shape``: the shapes do not fit the graph's inputs
                (one per input index, indexes 0 to n-1), or inference fails.
        """
        shapes = GeUtils._normalize_input_shapes(input_shapes)
        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be a Graph, got {type(graph).__name__}")
        inputs = {}
        for node in graph.get_direct_nodes():
            if node.type not in _INPUT_TYPES or not node.has_attr("index"):
                continue
            index = node.get_attr("index")
            if not 0 <= index < len(shapes):
                raise RuntimeError(
                    f"Failed to infer shape: input {node.name} has index {index}, out of range of "
                    f"the {len(shapes)} given shapes"
                )
            inputs[index] = node
        if len(inputs) != len(shapes):
            raise RuntimeError(
                f"Failed to infer shape: {len(shapes)} shapes given, the graph has {len(inputs)} inputs"
            )
        for index, node in inputs.items():
            for get, update, count in (
                (node.get_input_desc, node.update_input_desc, node.get_inputs_size()),
                (node.get_output_desc, node.update_output_desc, node.get_outputs_size()),
            ):
                if count == 0:
                    continue
                desc = get(0)
                desc.set_shape(shapes[index])
                desc.set_origin_shape(shapes[index])
                update(0, desc)
        try:
            _native._infer_shape(graph)
        except Exception as e:
            raise RuntimeError(f"Failed to infer shape: {e}") from e

    @staticmethod
    def check_node_support_on_aicore(node: Node) -> Tuple[bool, str]:
        """Whether the AI Core engine supports ``node`` (GE asks the AI Core operator
        information library of its CANN installation). Not available in ge-rs.

        Raises:
            TypeError: ``node`` is not a Node.
            RuntimeError: always (``Failed to check node support on AICore: not supported: ...``).
        """
        if not isinstance(node, Node):
            raise TypeError(f"node must be a Node, got {type(node).__name__}")
        raise RuntimeError(
            "Failed to check node support on AICore: not supported: ge-rs has no AI Core "
            "operator information library (CANN's ops kernel info store) to ask"
        )

    @staticmethod
    def _normalize_input_shapes(input_shapes: List[List[int]]) -> List[List[int]]:
        if not isinstance(input_shapes, list):
            raise TypeError("input_shapes must be a list of shape lists")
        shapes = []
        for shape in input_shapes:
            if not isinstance(shape, list):
                raise TypeError("input_shapes must be a list of shape lists")
            for dim in shape:
                if not isinstance(dim, int):
                    raise TypeError("each shape dim must be an integer")
            shapes.append(list(shape))
        return shapes
