"""BatchMatMul flattening: a batched product with shared 2-D weights becomes one 2-D MatMulV2.

Python version of GE's ``pattern_base_pass/7_batch_matmul_flatten_pass`` (a ``PatternFusionPass``
registered at ``AfterInferShape``)::

      A[b,m,k]   B[k,n]                   A[b,m,k]
          \\      /                           |
      BatchMatMulV2                      Reshape [b*m, k]     B[k,n]
      (or BatchMatMul)        ==>             |             /
            |                              MatMulV2 [b*m, n]
         y[b,m,n]                             |
                                         Reshape [b, m, n]
                                              |
                                           y[b,m,n]

``A[b,m,k] @ B[k,n]`` multiplies every one of the ``b`` slices of A by the same B, which is one
2-D product of the ``b*m`` rows of A with B. The pass fuses only that case: A is 3-D, B is 2-D,
both have the same floating dtype (float, float16, bfloat16), no ``bias``/``offset_w`` input is
connected, ``offset_x`` is 0 and nothing is transposed (``adj_x1``/``adj_x2`` false).

The two Reshape targets are constants when the dims they need are static; an unknown dim is read
at run time (``Shape`` + ``Slice``, joined by ``ConcatV2``), as GE's sample does.

The pass is written in the expression style: one ``@pattern`` method per pattern (BatchMatMulV2
and BatchMatMul), and a ``replacement(inputs, match_result)`` that builds the new subgraph on
``inputs``, which stand for the matched tensors and carry their dtypes and shapes (GE's sample
builds the same graphs explicitly with a builder; see remove_redundant_tile_pass.py for that style).

Run ``python examples/fusion_pass/batch_matmul_flatten_pass.py`` to see a graph before and after.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Union

from ge.es.all import BatchMatMul, BatchMatMulV2, ConcatV2, MatMulV2, Mul, Reshape, Shape, Slice
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import TensorLike
from ge.graph import DataType, Graph, Node
from ge.passes import (
    MatchResult,
    PassStage,
    PatternFusionPass,
    PatternInputs,
    pattern,
    register_fusion_pass,
)
from sample_common import is_connected, show_rewrite

PASS_NAME = "BatchMatmulFlattenPass"
FLOAT_TYPES = (DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_BF16)
# BatchMatMulV2 names its transposes adj_x1/adj_x2; MatMul-style ops say transpose_x1/transpose_x2.
TRANSPOSE_ATTRS = ("adj_x1", "adj_x2", "transpose_x1", "transpose_x2")
PRODUCT = 2  # captures of an expression pattern: the inputs used (a, b), then the output


def _attr(node: Node, name: str, default: object) -> object:
    return node.get_attr(name) if node.has_attr(name) else default


class _Dims:
    """The dims of a tensor as int64 tensors of shape [1]: a constant for a known dim, else a
    ``Slice`` of the tensor's run-time ``Shape`` (built once per tensor and dim)."""

    def __init__(self, source: TensorHolder, dims: List[int]) -> None:
        self._source, self._dims = source, dims
        self._shape: Optional[TensorHolder] = None
        self._cache: Dict[int, TensorHolder] = {}

    def static(self, *indexes: int) -> bool:
        return all(self._dims[i] >= 0 for i in indexes)

    def __getitem__(self, index: int) -> TensorHolder:
        if index not in self._cache:
            builder = self._source.get_owner_builder()
            assert isinstance(builder, GraphBuilder)
            if self._dims[index] >= 0:
                self._cache[index] = builder.create_const_int64([self._dims[index]])
            else:
                if self._shape is None:
                    self._shape = Shape(self._source, dtype=int(DataType.DT_INT64))
                self._cache[index] = Slice(self._shape, [index], [1])
        return self._cache[index]


def flatten(a: TensorHolder, w: TensorHolder, a_shape: List[int], w_shape: List[int]) -> TensorHolder:
    """``Reshape(a, [b*m, k]) @ w`` reshaped to ``[b, m, n]``, for ``a`` of shape ``a_shape`` and
    ``w`` of shape ``w_shape``."""
    batch, m, k = a_shape
    n = w_shape[1]
    a_dims, w_dims = _Dims(a, a_shape), _Dims(w, w_shape)
    if a_dims.static(0, 1, 2):
        rows_shape: Union[TensorHolder, TensorLike] = [batch * m, k]
    else:
        rows_shape = ConcatV2([Mul(a_dims[0], a_dims[1]), a_dims[2]], 0)
    if a_dims.static(0, 1) and w_dims.static(1):
        out_shape: Union[TensorHolder, TensorLike] = [batch, m, n]
    else:
        out_shape = ConcatV2([a_dims[0], a_dims[1], w_dims[1]], 0)
    return Reshape(MatMulV2(Reshape(a, rows_shape), w), out_shape)


@register_fusion_pass(name=PASS_NAME, stage=PassStage.AFTER_INFER_SHAPE)
class BatchMatmulFlattenPass(PatternFusionPass):
    """BatchMatMul(V2) of a 3-D A and a 2-D B -> Reshape + MatMulV2 + Reshape.

    Written in the expression style: each ``@pattern`` method is one pattern, and
    ``replacement(inputs, match_result)`` builds the new subgraph from ``inputs``, which stand for
    the matched inputs and carry their dtype and shape.
    """

    @pattern
    def batch_matmul_v2(self, inputs: PatternInputs) -> TensorHolder:
        return BatchMatMulV2(inputs[0], inputs[1])

    @pattern
    def batch_matmul(self, inputs: PatternInputs) -> TensorHolder:
        return BatchMatMul(inputs[0], inputs[1])

    def meet_requirements(self, match_result: MatchResult) -> bool:
        bmm = match_result.get_captured_tensor(PRODUCT).node
        # Only x1 and x2 (a bias or offset_w would need another replacement). The pattern has neither,
        # so the matcher already skips such a product; the check stays, as in GE's sample.
        if any(is_connected(bmm, i) for i in range(2, bmm.get_inputs_size())):
            return False
        a, b = bmm.get_input_desc(0), bmm.get_input_desc(1)
        if a.get_data_type() != b.get_data_type() or a.get_data_type() not in FLOAT_TYPES:
            return False
        if len(a.get_shape()) != 3 or len(b.get_shape()) != 2:
            return False
        if any(_attr(bmm, name, False) for name in TRANSPOSE_ATTRS):
            return False
        return _attr(bmm, "offset_x", 0) == 0

    # The expression form of the hook; the base class declares the GE form replacement(match_result).
    def replacement(self, inputs: PatternInputs, match_result: MatchResult) -> TensorHolder:  # type: ignore[override]
        bmm = match_result.get_captured_tensor(PRODUCT).node
        a_shape, w_shape = bmm.get_input_desc(0).get_shape(), bmm.get_input_desc(1).get_shape()
        return flatten(inputs[0], inputs[1], a_shape, w_shape)


def build_example_graph() -> Graph:
    """A[2, 8, 16] @ B[16, 32] (fused) and C[2, 8, 16] @ D[2, 16, 32] (batched B: left alone)."""
    builder = GraphBuilder("batch_matmul_flatten_example")
    a = builder.create_input(0, name="a", shape=[2, 8, 16])
    b = builder.create_input(1, name="b", shape=[16, 32])
    c = builder.create_input(2, name="c", shape=[2, 8, 16])
    d = builder.create_input(3, name="d", shape=[2, 16, 32])
    return builder.build_and_reset([BatchMatMulV2(a, b), BatchMatMulV2(c, d)])


if __name__ == "__main__":
    show_rewrite(build_example_graph(), passes=[BatchMatmulFlattenPass])
