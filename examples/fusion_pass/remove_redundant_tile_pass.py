"""Redundant Tile before BatchMatMulV2: let the product's batch broadcast do the copying.

Python version of GE's ``pattern_base_pass/8_bmm_tile_pass`` (``BmmTilePass``, a
``PatternFusionPass`` registered at ``AfterInferShape``). A weight shared by every batch entry is
often expanded with Tile before a BatchMatMulV2, although BatchMatMulV2 broadcasts its batch dims::

    Pattern 1 (Tile on x1 or on x2)

      w[1,k,n]  multiples [B,1,1]                    w[1,k,n]
            \\   /                                        |
            Tile [B,k,n]   x[B,m,k]          ==>         |      x[B,m,k]
                  \\       /                              \\      /
                BatchMatMulV2 [B,m,n]                 BatchMatMulV2 [B,m,n]

    Pattern 2 (Tile -> Reshape -> Transpose on x1 or on x2)

      w[1,...] -> Tile [B,...] -> Reshape [B,...] -> Transpose (perm[0] == 0) -> BatchMatMulV2
        ==>
      w[1,...] -> Reshape [1,...] -> Transpose -> BatchMatMulV2

With Tile on either input and either form there are four patterns. ``meet_requirements`` checks that
the Tile really is redundant:

- its ``multiples`` are a constant, one per dim of its input;
- it tiles only batch dims (not the last two), and only dims of size 1 (copies of one slice);
- removing it leaves the product's output shape as it was: the other input's batch dims still
  broadcast to the tiled sizes (so Tile on *both* inputs loses only one of them);
- Tile (and Reshape, Transpose in pattern 2) feed nothing else;
- pattern 2: the Reshape target and the Transpose ``perm`` are constants, the Reshape keeps the
  tiled batch dim first (``shape[0] == multiples[0]``, every other multiple 1) and the Transpose
  keeps it first (``perm[0] == 0``). The new Reshape target has 1 there (GE's sample writes 0, "copy
  the input dim"; 1 says the same without relying on that convention).

Run ``python examples/fusion_pass/remove_redundant_tile_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ge.es.all import BatchMatMulV2, Reshape, Tile, Transpose
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import DataType, Graph, Node
from ge.passes import MatchResult, PassStage, Pattern, PatternFusionPass, register_fusion_pass
from sample_common import broadcast_shape, captured_pattern, const_ints, input_like, show_rewrite

PASS_NAME = "BmmTilePass"
INDEX = DataType.DT_INT64  # dtype of the index inputs of the pattern graphs (any producer matches)

# Pattern graph names: (Tile on input ``side`` of the product, through Reshape -> Transpose or not).
PATTERNS = {
    "bmm_tile_x1": (0, False),
    "bmm_tile_x2": (1, False),
    "bmm_tile_reshape_transpose_x1": (0, True),
    "bmm_tile_reshape_transpose_x2": (1, True),
}


def _any(builder: GraphBuilder, index: int, dtype: DataType = DataType.DT_FLOAT) -> TensorHolder:
    """A pattern input of unknown rank."""
    return builder.create_input(index, shape=[-2], data_type=dtype)


def _pattern(name: str) -> Pattern:
    """Captures: Tile, (Reshape, Transpose,) BatchMatMulV2 outputs.

    Inputs: pattern 1 on x1 = (w, multiples, other); on x2 = (other, w, multiples); pattern 2 adds
    the Reshape shape and the Transpose perm after ``multiples``.
    """
    side, through = PATTERNS[name]
    b = GraphBuilder(name)
    other = _any(b, 0) if side == 1 else None
    first = 1 if side == 1 else 0
    w, multiples = _any(b, first), _any(b, first + 1, INDEX)
    tile = Tile(w, multiples)
    captured = [tile]
    operand = tile
    if through:
        reshape = Reshape(tile, _any(b, first + 2, INDEX))
        operand = Transpose(reshape, _any(b, first + 3, INDEX))
        captured += [reshape, operand]
    if other is None:
        other = _any(b, first + (4 if through else 2))
        y = BatchMatMulV2(operand, other)
    else:
        y = BatchMatMulV2(other, operand)
    return captured_pattern(b, [y], captured + [y])


# ----------------------------------------------------------------------------------------------
# Helpers on nodes and shapes
# ----------------------------------------------------------------------------------------------


def consumer_count(node: Node) -> int:
    """Consumers of output 0, a graph output counting as one."""
    outputs = node.get_owner_graph().get_outputs()
    as_output = sum(1 for n, port in outputs if n.name == node.name and port == 0)
    return len(node.get_out_data_nodes_and_port_indexes(0)) + as_output


def bmm_output_shape(x1: Sequence[int], x2: Sequence[int], adj_x1: bool, adj_x2: bool) -> Optional[List[int]]:
    """The output shape of BatchMatMulV2 on static shapes (None if unknown or invalid)."""
    if len(x1) < 2 or len(x2) < 2 or any(d < 0 for d in list(x1) + list(x2)):
        return None
    m, k1 = (x1[-1], x1[-2]) if adj_x1 else (x1[-2], x1[-1])
    k2, n = (x2[-1], x2[-2]) if adj_x2 else (x2[-2], x2[-1])
    batch = broadcast_shape(x1[:-2], x2[:-2])
    if k1 != k2 or batch is None:
        return None
    return batch + [m, n]


def _bmm_attrs(bmm: Node) -> Tuple[bool, bool, int]:
    return bool(bmm.get_attr("adj_x1")), bool(bmm.get_attr("adj_x2")), int(bmm.get_attr("offset_x"))


# ----------------------------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------------------------


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class BmmTilePass(PatternFusionPass):
    """Removes a Tile before BatchMatMulV2 that only repeats what the batch broadcast repeats."""

    def patterns(self) -> List[Pattern]:
        return [_pattern(name) for name in PATTERNS]

    def meet_requirements(self, match_result: MatchResult) -> bool:
        side, through = PATTERNS[match_result.get_pattern_graph_name()]
        captured = [io.node for io in match_result.get_captured_tensors()]
        tile, bmm = captured[0], captured[-1]
        if any(consumer_count(n) != 1 for n in captured[:-1]):
            return False
        multiples = const_ints(tile, 1)
        tile_in = tile.get_input_desc(0).get_shape()
        if multiples is None or len(multiples) != len(tile_in) or any(m < 1 for m in multiples):
            return False
        if any(d < 0 for d in tile_in):  # static shapes only
            return False
        tiled = [i for i, m in enumerate(multiples) if m != 1]
        if not tiled or any(tile_in[i] != 1 for i in tiled):
            return False
        operand = bmm.get_input_desc(side).get_shape()
        if not through:
            if any(i >= len(tile_in) - 2 for i in tiled):  # a matrix dim, not a batch dim
                return False
            new_operand = tile_in
        else:
            reshape, transpose = captured[1], captured[2]
            shape, perm = const_ints(reshape, 1), const_ints(transpose, 1)
            if shape is None or perm is None or not perm or perm[0] != 0 or tiled != [0]:
                return False
            if shape[0] != multiples[0]:
                return False
            if reshape.get_attr("axis") != 0 or reshape.get_attr("num_axes") != -1:  # a whole-shape Reshape
                return False
            if len(operand) < 3:  # dim 0 must be a batch dim of the product
                return False
            new_operand = [1] + list(operand[1:])
        adj_x1, adj_x2, _ = _bmm_attrs(bmm)
        other = bmm.get_input_desc(1 - side).get_shape()
        x1, x2 = (new_operand, other) if side == 0 else (other, new_operand)
        return bmm_output_shape(x1, x2, adj_x1, adj_x2) == bmm.get_output_desc(0).get_shape()

    def replacement(self, match_result: MatchResult) -> Graph:
        side, through = PATTERNS[match_result.get_pattern_graph_name()]
        captured = [io.node for io in match_result.get_captured_tensors()]
        tile, bmm = captured[0], captured[-1]
        b = GraphBuilder(f"{match_result.get_pattern_graph_name()}_replacement")
        first = 1 if side == 1 else 0
        other = input_like(b, 0, bmm, 0) if side == 1 else None
        w = input_like(b, first, tile, 0)
        input_like(b, first + 1, tile, 1)  # multiples: an input of the match, no longer used
        operand = w
        if through:
            reshape, transpose = captured[1], captured[2]
            input_like(b, first + 2, reshape, 1)  # the old Reshape target, replaced by a constant
            perm = input_like(b, first + 3, transpose, 1)
            shape = const_ints(reshape, 1)
            assert shape is not None  # checked by meet_requirements
            target = b.create_const([1] + shape[1:], reshape.get_input_desc(1).get_data_type())
            axis, num_axes = int(reshape.get_attr("axis")), int(reshape.get_attr("num_axes"))
            operand = Transpose(Reshape(w, target, axis=axis, num_axes=num_axes), perm)
        if other is None:
            other = input_like(b, first + (4 if through else 2), bmm, 1)
        adj_x1, adj_x2, offset_x = _bmm_attrs(bmm)
        x1, x2 = (operand, other) if side == 0 else (other, operand)
        y = BatchMatMulV2(x1, x2, adj_x1=adj_x1, adj_x2=adj_x2, offset_x=offset_x)
        return b.build_and_reset([y])


def build_example_graph() -> Graph:
    """GE's sample model: x[1, 8, 16, 32] tiled 4 times along dim 0, times y[4, 8, 32, 64]."""
    builder = GraphBuilder("bmm_tile_example")
    x = builder.create_input(0, name="x", shape=[1, 8, 16, 32])
    y = builder.create_input(1, name="y", shape=[4, 8, 32, 64])
    tiled = Tile(x, builder.create_const_int32([4, 1, 1, 1]))
    return builder.build_and_reset([BatchMatMulV2(tiled, y)])


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[BmmTilePass])
