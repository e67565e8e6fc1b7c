"""The fusion-pass samples of examples/fusion_pass (part b): BatchMatMul flattening, redundant Tile
removal, BatchMatMul -> Mul + ReduceSumD, Relu moved before ConcatV2, the Conv2D data-format
change, and the two MMoE merges (one wide MatMulV2 + SplitV; Pack + BatchMatMulV2 + Split +
Squeeze).

Each sample is imported through ``sample_loader.load_sample`` (which clears the registry first)
and run with ``run_passes`` on graphs built with ge.es. No backend runs graphs yet, so the tests
check structure: op types, wiring (which tensor feeds which input, graph outputs), attributes and
constant values, pass statistics, inferred output shapes and dtypes (as left by the pass and
after ``infer_shape``), that graphs the passes must not touch stay exactly as they were, and
``Graph.validate``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import List, Sequence, Set, Tuple

import numpy as np
import pytest

from ge.es.all import (
    Add,
    BatchMatMul,
    BatchMatMulV2,
    ConcatV2,
    Conv2D,
    MatMulV2,
    Relu,
    Reshape,
    Sigmoid,
    Tile,
    Transpose,
)
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import DataType, Graph, Node
from ge.passes import (
    PassStage,
    PassStats,
    get_registered_passes,
    infer_shape,
    register_fusion_pass,
    run_passes,
)
from sample_loader import SAMPLE_FILES, SAMPLES, load_sample

F32, F16, I32, I64 = DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_INT32, DataType.DT_INT64
AFTER = PassStage.AFTER_INFER_SHAPE
BEFORE = PassStage.BEFORE_INFER_SHAPE

Desc = Tuple[List[int], DataType]


pytestmark = pytest.mark.usefixtures("clean_passes")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def types(graph: Graph) -> List[str]:
    return [n.type for n in graph.get_all_nodes()]


def of_type(graph: Graph, op_type: str) -> List[Node]:
    return [n for n in graph.get_all_nodes() if n.type == op_type]


def only(graph: Graph, op_type: str) -> Node:
    nodes = of_type(graph, op_type)
    assert len(nodes) == 1, f"expected one {op_type}, got {[n.name for n in nodes]}"
    return nodes[0]


def node(graph: Graph, name: str) -> Node:
    found = graph.find_node_by_name(name)
    assert found is not None, f"no node named {name}"
    return found


def src(node: Node, index: int) -> Node:
    """The producer of input ``index``."""
    producer, _ = node.get_in_data_nodes_and_port_indexes(index)
    return producer


def src_port(node: Node, index: int) -> Tuple[str, int]:
    producer, port = node.get_in_data_nodes_and_port_indexes(index)
    return producer.name, port


def consumers(node: Node, port: int = 0) -> Set[Tuple[str, int]]:
    return {(n.name, i) for n, i in node.get_out_data_nodes_and_port_indexes(port)}


def const_value(node: Node) -> List:
    assert node.type == "Const", f"{node.name} is a {node.type}, not a Const"
    return node.get_attr("value").numpy().tolist()


def output_descs(graph: Graph) -> List[Desc]:
    out = []
    for n, port in graph.get_outputs():
        d = n.get_output_desc(port)
        out.append((d.get_shape(), d.get_data_type()))
    return out


def outputs(graph: Graph) -> List[Tuple[str, int]]:
    return [(n.name, port) for n, port in graph.get_outputs()]


def check_descs(graph: Graph, before: List[Desc], *, as_left: bool = True) -> None:
    """Graph outputs keep their descriptions: as the pass left them (when ``as_left``) and after
    re-running inference over the whole graph; the graph validates."""
    if as_left:
        assert output_descs(graph) == before
    infer_shape(graph)
    assert output_descs(graph) == before
    graph.validate()


def run_one(graph: Graph, name: str) -> PassStats:
    stats = run_passes(graph)
    assert [s.pass_name for s in stats] == [name]
    return stats[0]


def assert_untouched(graph: Graph, name: str) -> PassStats:
    """Runs the registered pass and checks the graph did not change at all."""
    text = str(graph)
    stats = run_one(graph, name)
    assert str(graph) == text
    assert stats.rewritten == 0 and stats.fusions == [] and stats.nodes_before == stats.nodes_after
    graph.validate()
    return stats


def registered(cls: type) -> List[Tuple[str, str, PassStage]]:
    """The registered passes (the sample's one pass, registered on import as ``cls``)."""
    descs = get_registered_passes()
    assert [d.cls for d in descs] == [cls]
    return [(d.pass_name, d.kind, d.stage) for d in descs]


def rng_const(b: GraphBuilder, *shape: int, dtype: type = np.float32) -> TensorHolder:
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    return b.create_const(rng.standard_normal(shape).astype(dtype))


# The samples of this file: the ones after the grouped-Conv2D decomposition.
ALL_SAMPLES = SAMPLE_FILES[SAMPLE_FILES.index("batch_matmul_flatten_pass.py"):]


@pytest.mark.parametrize("filename,cls,kind,stage", [
    pytest.param("batch_matmul_to_mul_reduce_pass.py", "BmmToMulReducePass", "pattern_fusion", AFTER, id="mul_reduce"),
    pytest.param("move_relu_before_concat_pass.py", "MoveReluBeforeConcatPass", "fusion_base", BEFORE, id="move_relu"),
    pytest.param("mmoe_matmul_merge_pass.py", "MmoeMatmulPass", "fusion_base", AFTER, id="mmoe_matmul"),
    pytest.param("mmoe_bmm_split_pass.py", "MmoeBmmSplitPass", "fusion_base", AFTER, id="mmoe_bmm"),
])
def test_registration(filename: str, cls: str, kind: str, stage: PassStage) -> None:
    mod = load_sample(filename)
    assert registered(getattr(mod, cls)) == [(cls, kind, stage)]


@pytest.mark.parametrize("filename", ALL_SAMPLES)
def test_sample_runs_as_a_script(filename: str) -> None:
    result = subprocess.run([sys.executable, str(SAMPLES / filename)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    before, rest = result.stdout.split("before:\n", 1)[1].split("\n}\n", 1)
    stats, after = rest.split("after:\n", 1)
    assert "[fusion_base" in stats or "rewritten 1" in stats  # the PassStats line
    assert after.strip().startswith("graph ") and after.strip() != before.strip() + "\n}"


# ---------------------------------------------------------------------------------------------
# 1. batch_matmul_flatten_pass
# ---------------------------------------------------------------------------------------------


def test_flatten_registration() -> None:
    mod = load_sample("batch_matmul_flatten_pass.py")
    assert registered(mod.BatchMatmulFlattenPass) == [("BatchMatmulFlattenPass", "pattern_fusion", AFTER)]
    names = [p.name for p in mod.BatchMatmulFlattenPass().patterns()]  # the two @pattern methods
    assert names == ["BatchMatmulFlattenPass_batch_matmul_v2_pattern",
                     "BatchMatmulFlattenPass_batch_matmul_pattern"]


def test_flatten_static_shapes() -> None:
    mod = load_sample("batch_matmul_flatten_pass.py")
    g = mod.build_example_graph()
    before = output_descs(g)
    (s,) = run_passes(g)
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (2, 1, 1)  # C @ D[2,16,32] refused
    assert sorted(types(g)) == sorted(["Data"] * 4 + ["Const"] * 2 + ["Reshape"] * 2
                                      + ["MatMulV2", "BatchMatMulV2"])
    mm = only(g, "MatMulV2")
    rows, b = src(mm, 0), src(mm, 1)
    assert rows.type == "Reshape" and src(rows, 0).name == "a" and const_value(src(rows, 1)) == [16, 16]
    assert b.name == "b"
    for optional in (2, 3):  # bias and offset_w: no producer
        with pytest.raises(RuntimeError):
            mm.get_in_data_nodes_and_port_indexes(optional)
    assert mm.get_ir_attrs() == {"transpose_x1": False, "transpose_x2": False, "offset_x": 0}
    (back_name, _), (kept_name, _) = outputs(g)
    back = node(g, back_name)
    assert back.type == "Reshape" and src(back, 0).name == mm.name and const_value(src(back, 1)) == [2, 8, 32]
    kept = node(g, kept_name)
    assert kept.type == "BatchMatMulV2" and [src(kept, 0).name, src(kept, 1).name] == ["c", "d"]
    assert rows.get_output_desc(0).get_shape() == [16, 16] and mm.get_output_desc(0).get_shape() == [16, 32]
    check_descs(g, before)


def test_flatten_batch_matmul_v1_float16() -> None:
    load_sample("batch_matmul_flatten_pass.py")
    b = GraphBuilder("v1")
    a = b.create_input(0, shape=[3, 5, 4], data_type=F16)
    w = b.create_input(1, shape=[4, 6], data_type=F16)
    g = b.build_and_reset([Relu(BatchMatMul(a, w))])
    before = output_descs(g)
    assert before == [([3, 5, 6], F16)]
    s = run_one(g, "BatchMatmulFlattenPass")
    assert s.rewritten == 1 and "BatchMatMul" not in types(g)
    relu = only(g, "Relu")
    back = src(relu, 0)
    assert back.type == "Reshape" and src(src(back, 0), 0).type == "Reshape"
    assert only(g, "MatMulV2").get_output_desc(0).get_data_type() == F16
    check_descs(g, before)


def test_flatten_dynamic_dims_read_the_shape_at_run_time() -> None:
    load_sample("batch_matmul_flatten_pass.py")
    b = GraphBuilder("dyn")
    a = b.create_input(0, name="a", shape=[-1, 8, 16])
    w = b.create_input(1, name="w", shape=[16, -1])
    g = b.build_and_reset([BatchMatMulV2(a, w)])
    before = output_descs(g)
    run_one(g, "BatchMatmulFlattenPass")
    assert "BatchMatMulV2" not in types(g)
    shapes = {src(n, 0).name: n for n in of_type(g, "Shape")}
    assert sorted(shapes) == ["a", "w"]  # one Shape per input, not one per dim
    assert all(n.get_attr("dtype") == int(I64) for n in shapes.values())
    (out_name, _), = outputs(g)
    back = node(g, out_name)
    target = src(back, 1)
    assert back.type == "Reshape" and target.type == "ConcatV2" and target.get_inputs_size() == 4
    # [b, m, n]: b sliced from Shape(a), m the constant 8, n sliced from Shape(w); axis 0.
    b_dim, m_dim, n_dim, axis = (src(target, i) for i in range(4))
    assert b_dim.type == "Slice" and src(b_dim, 0).name == shapes["a"].name
    assert const_value(src(b_dim, 1)) == [0] and const_value(m_dim) == [8] and const_value(axis) == 0
    assert n_dim.type == "Slice" and src(n_dim, 0).name == shapes["w"].name
    assert const_value(src(n_dim, 1)) == [1]
    rows = src(only(g, "MatMulV2"), 0)
    assert rows.type == "Reshape" and src(rows, 0).name == "a"
    # The first Reshape needs [b*m, k] = [Mul(b, 8), 16]; b's Slice is shared with the second.
    rows_target = src(rows, 1)
    assert rows_target.type == "ConcatV2" and src(rows_target, 0).type == "Mul"
    assert src(src(rows_target, 0), 0).name == b_dim.name and const_value(src(rows_target, 1)) == [16]
    # Values are read at run time, so inference keeps rank and dtype (the dims are not known).
    infer_shape(g)
    (shape, dtype), = output_descs(g)
    assert len(shape) == 3 and dtype == before[0][1]
    g.validate()


def _flatten_refused(kind: str) -> Graph:
    b = GraphBuilder(kind)
    a_shape, w_shape, dt = [2, 8, 16], [16, 32], F32
    kwargs: dict = {}
    if kind == "a_4d":
        a_shape = [2, 2, 8, 16]
    elif kind == "w_3d":
        w_shape = [2, 16, 32]
    elif kind == "adj_x1":
        a_shape, kwargs = [2, 16, 8], {"adj_x1": True}
    elif kind == "adj_x2":
        w_shape, kwargs = [32, 16], {"adj_x2": True}
    elif kind == "int32":
        dt = I32
    elif kind == "offset_x":
        kwargs = {"offset_x": 1}
    a = b.create_input(0, shape=a_shape, data_type=dt)
    w = b.create_input(1, shape=w_shape, data_type=dt)
    if kind == "bias":
        return b.build_and_reset([BatchMatMulV2(a, w, b.create_input(2, shape=[32]))])
    return b.build_and_reset([BatchMatMulV2(a, w, **kwargs)])


@pytest.mark.parametrize("kind", ["a_4d", "w_3d", "adj_x1", "adj_x2", "int32", "offset_x", "bias"])
def test_flatten_refuses(kind: str) -> None:
    load_sample("batch_matmul_flatten_pass.py")
    g = _flatten_refused(kind)
    s = assert_untouched(g, "BatchMatmulFlattenPass")
    # A connected bias is not even matched (the pattern has none); the others are matched, refused.
    assert s.matches_tried == (0 if kind == "bias" else 1) and s.matches_accepted == 0


# ---------------------------------------------------------------------------------------------
# 2. remove_redundant_tile_pass
# ---------------------------------------------------------------------------------------------


def test_tile_registration_and_patterns() -> None:
    mod = load_sample("remove_redundant_tile_pass.py")
    assert registered(mod.BmmTilePass) == [("BmmTilePass", "pattern_fusion", AFTER)]
    names = [p.name for p in mod.BmmTilePass().patterns()]
    assert names == ["bmm_tile_x1", "bmm_tile_x2",
                     "bmm_tile_reshape_transpose_x1", "bmm_tile_reshape_transpose_x2"]


def _bmm_operands(name: str, x_shape: List[int], w_name: str,
                  w_shape: List[int]) -> Tuple[GraphBuilder, TensorHolder, TensorHolder]:
    """The tile sample loaded, and a builder with the product's operands: input 0 "x" and input 1
    ``w_name``."""
    load_sample("remove_redundant_tile_pass.py")
    b = GraphBuilder(name)
    return b, b.create_input(0, name="x", shape=x_shape), b.create_input(1, name=w_name, shape=w_shape)


def test_tile_on_x1_is_removed_and_attrs_kept() -> None:
    b, x, y = _bmm_operands("x1", [1, 8, 16, 32], "y", [4, 8, 64, 32])
    tiled = Tile(x, b.create_const_int32([4, 1, 1, 1]))
    g = b.build_and_reset([Relu(BatchMatMulV2(tiled, y, adj_x2=True))])
    before = output_descs(g)
    s = run_one(g, "BmmTilePass")
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (1, 1, 1)
    assert "Tile" not in types(g)
    bmm = only(g, "BatchMatMulV2")
    assert [src(bmm, 0).name, src(bmm, 1).name] == ["x", "y"]
    assert bmm.get_ir_attrs() == {"adj_x1": False, "adj_x2": True, "offset_x": 0}
    assert src(only(g, "Relu"), 0).name == bmm.name
    assert bmm.get_output_desc(0).get_shape() == [4, 8, 16, 64]
    # The multiples constant is left without consumers (the rewriter does not prune it).
    assert all(not consumers(c) for c in of_type(g, "Const"))
    check_descs(g, before)


def test_tile_on_x2_over_two_batch_dims_is_removed() -> None:
    b, x, w = _bmm_operands("x2", [4, 8, 16, 32], "w", [1, 1, 32, 64])
    tiled = Tile(w, b.create_const_int64([4, 8, 1, 1]))
    g = b.build_and_reset([BatchMatMulV2(x, tiled)])
    before = output_descs(g)
    s = run_one(g, "BmmTilePass")
    assert s.rewritten == 1 and "Tile" not in types(g)
    bmm = only(g, "BatchMatMulV2")
    assert [src(bmm, 0).name, src(bmm, 1).name] == ["x", "w"]
    assert outputs(g) == [(bmm.name, 0)]
    check_descs(g, before)


def test_tile_on_both_inputs_loses_only_one() -> None:
    b, x, w = _bmm_operands("both", [1, 8, 16, 32], "w", [1, 8, 32, 64])
    g = b.build_and_reset([BatchMatMulV2(Tile(x, b.create_const_int64([4, 1, 1, 1])),
                                         Tile(w, b.create_const_int64([4, 1, 1, 1])))])
    before = output_descs(g)
    s = run_one(g, "BmmTilePass")
    # Pattern "Tile on x1" is accepted; "Tile on x2" is then refused: without that Tile too, the
    # product's batch would shrink from 4 to 1.
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (2, 1, 1)
    tile, bmm = only(g, "Tile"), only(g, "BatchMatMulV2")
    assert src(bmm, 0).name == "x" and src(bmm, 1).name == tile.name and src(tile, 0).name == "w"
    check_descs(g, before)


def _tile_reshape_transpose(side: int) -> Graph:
    """w[1, 16, 64] tiled to [4, 16, 64], reshaped [4, 16, 2, 32], transposed [4, 2, 16, 32]."""
    b = GraphBuilder(f"rt{side}")
    w = b.create_input(0, name="w", shape=[1, 16, 64])
    tiled = Tile(w, b.create_const_int64([4, 1, 1]))
    heads = Reshape(tiled, b.create_const_int64([4, 16, 2, 32]))
    operand = Transpose(heads, b.create_const_int64([0, 2, 1, 3]))
    if side == 1:
        x = b.create_input(1, name="x", shape=[4, 2, 8, 16])
        return b.build_and_reset([BatchMatMulV2(x, operand)])
    x = b.create_input(1, name="x", shape=[4, 2, 32, 8])
    return b.build_and_reset([BatchMatMulV2(operand, x)])


@pytest.mark.parametrize("side", [0, 1])
def test_tile_reshape_transpose_is_removed(side: int) -> None:
    load_sample("remove_redundant_tile_pass.py")
    g = _tile_reshape_transpose(side)
    before = output_descs(g)
    perm = src(only(g, "Transpose"), 1)
    s = run_one(g, "BmmTilePass")
    assert (s.matches_accepted, s.rewritten) == (1, 1)
    assert "Tile" not in types(g)
    reshape, transpose, bmm = only(g, "Reshape"), only(g, "Transpose"), only(g, "BatchMatMulV2")
    assert src(reshape, 0).name == "w" and const_value(src(reshape, 1)) == [1, 16, 2, 32]
    assert src(reshape, 1).get_output_desc(0).get_data_type() == I64
    assert reshape.get_output_desc(0).get_shape() == [1, 16, 2, 32]
    assert src(transpose, 0).name == reshape.name and src(transpose, 1).name == perm.name  # perm reused
    assert src(bmm, side).name == transpose.name and src(bmm, 1 - side).name == "x"
    # The Transpose's perm is a replacement input, so its output shape is only known after
    # inference runs again (see the report on the rewriter keeping the replacement's descriptions).
    check_descs(g, before, as_left=False)
    assert transpose.get_output_desc(0).get_shape() == [1, 2, 16, 32]


def _tile_refused(kind: str) -> Graph:
    b = GraphBuilder(kind)
    if kind in ("matrix_dim", "batch_dim_not_1", "other_side_batch_1", "not_const", "shared", "graph_output"):
        x_shape, mult = [1, 8, 16, 32], [4, 1, 1, 1]
        y_shape = [4, 8, 32, 64]
        if kind == "matrix_dim":
            x_shape, mult = [4, 8, 8, 32], [1, 1, 2, 1]
        elif kind == "batch_dim_not_1":
            x_shape, mult, y_shape = [2, 8, 16, 32], [2, 1, 1, 1], [4, 8, 32, 64]
        elif kind == "other_side_batch_1":
            y_shape = [1, 8, 32, 64]
        x = b.create_input(0, shape=x_shape)
        y = b.create_input(1, shape=y_shape)
        m = b.create_input(2, shape=[4], data_type=I64) if kind == "not_const" else b.create_const_int64(mult)
        tiled = Tile(x, m)
        out = BatchMatMulV2(tiled, y)
        if kind == "shared":
            return b.build_and_reset([out, Relu(tiled)])
        if kind == "graph_output":
            return b.build_and_reset([out, tiled])
        return b.build_and_reset([out])
    # Pattern 2 variants.
    w = b.create_input(0, shape=[1, 16, 64])
    tiled = Tile(w, b.create_const_int64([4, 1, 1]))
    if kind == "perm_moves_batch":
        heads = Reshape(tiled, b.create_const_int64([4, 16, 2, 32]))
        operand = Transpose(heads, b.create_const_int64([1, 0, 2, 3]))  # [16, 4, 2, 32]
        x = b.create_input(1, shape=[16, 4, 8, 2])
        return b.build_and_reset([BatchMatMulV2(x, operand)])
    assert kind == "reshape_moves_batch"
    heads = Reshape(tiled, b.create_const_int64([2, 32, 2, 32]))  # the tiled dim is split
    operand = Transpose(heads, b.create_const_int64([0, 2, 1, 3]))  # [2, 2, 32, 32]
    x = b.create_input(1, shape=[2, 2, 8, 32])
    return b.build_and_reset([BatchMatMulV2(x, operand)])


@pytest.mark.parametrize("kind", ["matrix_dim", "batch_dim_not_1", "other_side_batch_1", "not_const",
                                  "shared", "graph_output", "perm_moves_batch", "reshape_moves_batch"])
def test_tile_that_is_needed_stays(kind: str) -> None:
    load_sample("remove_redundant_tile_pass.py")
    g = _tile_refused(kind)
    s = assert_untouched(g, "BmmTilePass")
    assert "Tile" in types(g)
    # A Tile whose output is used elsewhere is no valid match at all (the matcher's boundary rule);
    # the others are matched and refused by meet_requirements.
    assert s.matches_tried == (0 if kind in ("shared", "graph_output") else 1) and s.matches_accepted == 0


# ---------------------------------------------------------------------------------------------
# 3. batch_matmul_to_mul_reduce_pass
# ---------------------------------------------------------------------------------------------


def test_mul_reduce_adj_x2() -> None:
    mod = load_sample("batch_matmul_to_mul_reduce_pass.py")
    g = mod.build_example_graph()
    w = only(g, "Const")
    before = output_descs(g)
    assert before == [([4, 64, 1], F32)]
    s = run_one(g, "BmmToMulReducePass")
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (1, 1, 1)
    assert sorted(types(g)) == ["Const", "Data", "Mul", "ReduceSumD"]
    mul, red = only(g, "Mul"), only(g, "ReduceSumD")
    assert [src(mul, 0).name, src(mul, 1).name] == ["x", w.name]
    assert src(red, 0).name == mul.name and red.get_ir_attrs() == {"axes": [-1], "keep_dims": True}
    assert outputs(g) == [(red.name, 0)]
    assert mul.get_output_desc(0).get_shape() == [4, 64, 8]
    check_descs(g, before)


def test_mul_reduce_through_transpose_float16_and_broadcast() -> None:
    load_sample("batch_matmul_to_mul_reduce_pass.py")
    b = GraphBuilder("t")
    x = b.create_input(0, name="x", shape=[3, 2, 64, 8], data_type=F16)
    w = b.create_input(1, name="w", shape=[2, 1, 8], data_type=F16)  # broadcast over the first batch dim
    perm = b.create_const_int32([0, 2, 1])
    perm_name = perm.name
    g = b.build_and_reset([Sigmoid(BatchMatMulV2(x, Transpose(w, perm)))])
    before = output_descs(g)
    assert before == [([3, 2, 64, 1], F16)]
    s = run_one(g, "BmmToMulReducePass")
    # The direct pattern matches too, but it needs adj_x2=true: refused.
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (2, 1, 1)
    assert "Transpose" not in types(g) and "BatchMatMulV2" not in types(g)
    mul, red = only(g, "Mul"), only(g, "ReduceSumD")
    assert [src(mul, 0).name, src(mul, 1).name] == ["x", "w"]  # the Transpose's input, not its output
    assert src(only(g, "Sigmoid"), 0).name == red.name
    assert not consumers(node(g, perm_name))  # perm is left unused
    assert red.get_output_desc(0).get_data_type() == F16
    check_descs(g, before)


def _mul_reduce_refused(kind: str) -> Graph:
    b = GraphBuilder(kind)
    if kind == "k_too_big":
        x, w = b.create_input(0, shape=[4, 64, 32]), b.create_input(1, shape=[4, 1, 32])
        return b.build_and_reset([BatchMatMulV2(x, w, adj_x2=True)])
    if kind == "n_is_2":
        x, w = b.create_input(0, shape=[4, 64, 8]), b.create_input(1, shape=[4, 2, 8])
        return b.build_and_reset([BatchMatMulV2(x, w, adj_x2=True)])
    if kind == "adj_x1":
        x, w = b.create_input(0, shape=[4, 8, 64]), b.create_input(1, shape=[4, 1, 8])
        return b.build_and_reset([BatchMatMulV2(x, w, adj_x1=True, adj_x2=True)])
    if kind == "no_adj_x2":
        x, w = b.create_input(0, shape=[4, 64, 1]), b.create_input(1, shape=[4, 1, 8])
        return b.build_and_reset([BatchMatMulV2(x, w)])  # [64, 1] @ [1, 8]: n = 8, not a dot product
    if kind == "int32":
        x = b.create_input(0, shape=[4, 64, 8], data_type=I32)
        w = b.create_input(1, shape=[4, 1, 8], data_type=I32)
        return b.build_and_reset([BatchMatMulV2(x, w, adj_x2=True)])
    w = b.create_input(1, shape=[2, 2, 1, 8])
    if kind == "perm_swaps_batch":  # shapes fit, but batch entry (i, j) would meet (j, i)
        x = b.create_input(0, shape=[2, 2, 64, 8])
        return b.build_and_reset([BatchMatMulV2(x, Transpose(w, b.create_const_int64([1, 0, 3, 2])))])
    assert kind == "perm_not_const"
    x = b.create_input(0, shape=[2, 2, 64, 8])
    perm = b.create_input(2, shape=[4], data_type=I64)
    return b.build_and_reset([BatchMatMulV2(x, Transpose(w, perm))])


@pytest.mark.parametrize("kind", ["k_too_big", "n_is_2", "adj_x1", "no_adj_x2", "int32", "perm_swaps_batch",
                                  "perm_not_const"])
def test_mul_reduce_refuses(kind: str) -> None:
    load_sample("batch_matmul_to_mul_reduce_pass.py")
    g = _mul_reduce_refused(kind)
    s = assert_untouched(g, "BmmToMulReducePass")
    assert s.matches_tried >= 1 and s.matches_accepted == 0


# ---------------------------------------------------------------------------------------------
# 4. move_relu_before_concat_pass
# ---------------------------------------------------------------------------------------------


def test_move_relu_before_concat() -> None:
    mod = load_sample("move_relu_before_concat_pass.py")
    g = mod.build_example_graph()
    before = output_descs(g)
    assert before == [([2, 9], F32), ([2, 8], F32)]
    old_relu = only(g, "Relu")
    axis = src(src(old_relu, 0), 3)
    s = run_one(g, "MoveReluBeforeConcatPass")
    assert s.kind == "fusion_base" and not s.skipped_run
    assert len(s.fusions) == 1 and s.fusions[0][0] == ["ConcatV2_0", "Relu_0"]
    assert sorted(s.fusions[0][1]) == sorted(n.name for n in g.get_all_nodes() if "/" in n.name)
    relus = of_type(g, "Relu")
    assert sorted(src(r, 0).name for r in relus) == ["a", "b", "c"]
    (new_name, _), kept = outputs(g)
    concat = node(g, new_name)
    assert concat.type == "ConcatV2" and concat.get_attr("N") == 3
    fed = [src(concat, i) for i in range(3)]
    assert [n.type for n in fed] == ["Relu"] * 3 and [src(n, 0).name for n in fed] == ["a", "b", "c"]
    assert src(concat, 3).name == axis.name and const_value(axis) == 1  # concat_dim kept, same Const
    assert [r.get_output_desc(0).get_shape() for r in fed] == [[2, 3], [2, 5], [2, 1]]
    sigmoid = node(g, kept[0])
    assert sigmoid.type == "Sigmoid" and src(sigmoid, 0).type == "ConcatV2"  # the other concat: untouched
    assert [src(src(sigmoid, 0), i).type for i in range(2)] == ["Data", "Data"]
    check_descs(g, before)


def test_move_relu_every_chain_and_every_relu_consumer() -> None:
    load_sample("move_relu_before_concat_pass.py")
    b = GraphBuilder("two")
    x0, x1, x2, x3 = (b.create_input(i, shape=[4, i + 1], data_type=F16) for i in range(4))
    r1 = Relu(ConcatV2([x0, x1], b.create_scalar_int32(-1)))
    r2 = Relu(ConcatV2([x2, x3], b.create_scalar_int32(1)))
    g = b.build_and_reset([Add(r1, 1.0), Sigmoid(r1), r2])
    before = output_descs(g)
    s = run_one(g, "MoveReluBeforeConcatPass")
    assert len(s.fusions) == 2
    assert len(of_type(g, "Relu")) == 4 and all(src(r, 0).type == "Data" for r in of_type(g, "Relu"))
    add, sig = only(g, "Add"), only(g, "Sigmoid")
    assert src(add, 0).name == src(sig, 0).name  # both consumers of the old Relu moved to the new concat
    assert src(add, 0).type == "ConcatV2"
    assert node(g, outputs(g)[2][0]).type == "ConcatV2"
    check_descs(g, before)


def test_move_relu_chained_concats() -> None:
    """Relu(Concat(Relu(Concat(a, c)), d)): the second rewrite runs on the result of the first."""
    load_sample("move_relu_before_concat_pass.py")
    b = GraphBuilder("chain")
    a, c, d = (b.create_input(i, name=n, shape=[2, 2]) for i, n in enumerate("acd"))
    inner = Relu(ConcatV2([a, c], b.create_scalar_int32(1)))
    g = b.build_and_reset([Relu(ConcatV2([inner, d], b.create_scalar_int32(1)))])
    before = output_descs(g)
    s = run_one(g, "MoveReluBeforeConcatPass")
    assert [f[0] for f in s.fusions] == [["ConcatV2_0", "Relu_0"], ["ConcatV2_1", "Relu_1"]]
    outer = node(g, outputs(g)[0][0])
    assert outer.type == "ConcatV2" and [src(outer, i).type for i in range(2)] == ["Relu", "Relu"]
    first = src(src(outer, 0), 0)
    assert first.type == "ConcatV2" and [src(src(first, i), 0).name for i in range(2)] == ["a", "c"]
    assert src(src(outer, 1), 0).name == "d"
    check_descs(g, before)


@pytest.mark.parametrize("kind", ["second_consumer", "graph_output", "sigmoid"])
def test_move_relu_leaves_other_concats(kind: str) -> None:
    load_sample("move_relu_before_concat_pass.py")
    b = GraphBuilder(kind)
    a, c = b.create_input(0, shape=[2, 3]), b.create_input(1, shape=[2, 3])
    cat = ConcatV2([a, c], b.create_scalar_int32(0))
    if kind == "second_consumer":
        g = b.build_and_reset([Relu(cat), Add(cat, 1.0)])
    elif kind == "graph_output":
        g = b.build_and_reset([Relu(cat), cat])
    else:
        g = b.build_and_reset([Sigmoid(cat)])
    assert_untouched(g, "MoveReluBeforeConcatPass")


# ---------------------------------------------------------------------------------------------
# 5. modify_conv_data_format_pass
# ---------------------------------------------------------------------------------------------


def test_conv_format_registration() -> None:
    mod = load_sample("modify_conv_data_format_pass.py")
    assert registered(mod.ConvTransFormatPass) == [("ConvTransFormatPass", "fusion_base", BEFORE)]
    assert mod.nhwc_to_nchw([1, 2, 3, 4]) == [1, 4, 2, 3]


def test_conv_nhwc_between_transposes_becomes_nchw() -> None:
    mod = load_sample("modify_conv_data_format_pass.py")
    g = mod.build_example_graph()
    before = output_descs(g)
    assert before == [([1, 6, 3, 3], F32)]
    conv = only(g, "Conv2D")
    filt = src(conv, 1)
    s = run_one(g, "ConvTransFormatPass")
    assert s.fusions == [(["Transpose_0", "Conv2D_0", "Transpose_1"], ["Conv2D_0"])]
    assert "Transpose" not in types(g)
    assert sorted(types(g)) == ["Add", "Const", "Const", "Conv2D", "Data"]  # perm constants removed
    conv = only(g, "Conv2D")
    assert src(conv, 0).name == "x" and src(conv, 1).name == filt.name
    attrs = conv.get_ir_attrs()
    assert attrs["data_format"] == "NCHW" and attrs["strides"] == [1, 1, 3, 3]
    assert attrs["dilations"] == [1, 1, 1, 1] and attrs["pads"] == [0, 0, 0, 0] and attrs["groups"] == 1
    assert src(only(g, "Add"), 0).name == conv.name
    assert conv.get_output_desc(0).get_shape() == [1, 6, 3, 3]
    check_descs(g, before)


def _wrapped_conv(*, out_perm: Sequence[int] = (0, 3, 1, 2), share_in: bool = False,
                  conv_output_too: bool = False, as_output: bool = False) -> Graph:
    """x[2, 4, 12, 10] (NCHW) -> NHWC -> Conv2D(NHWC, 8 filters 3x3, stride h 2, dilation w 2,
    pads [1, 1, 0, 2]) -> back to NCHW (``out_perm``)."""
    b = GraphBuilder("conv")
    x = b.create_input(0, name="x", shape=[2, 4, 12, 10])
    filt = rng_const(b, 8, 4, 3, 3)
    nhwc = Transpose(x, b.create_const_int64([0, 2, 3, 1]))
    y = Conv2D(nhwc, filt, strides=[1, 2, 1, 1], pads=[1, 1, 0, 2], dilations=[1, 1, 2, 1],
               data_format="NHWC")
    back = Transpose(y, b.create_const_int64(list(out_perm)))
    outs = [back if as_output else Relu(back)]
    if share_in:
        outs.append(Sigmoid(nhwc))
    if conv_output_too:
        outs.append(y)
    return b.build_and_reset(outs)


def test_conv_attrs_permuted_and_graph_output_rewired() -> None:
    load_sample("modify_conv_data_format_pass.py")
    g = _wrapped_conv(as_output=True)
    before = output_descs(g)
    assert before == [([2, 8, 6, 8], F32)]  # H (12 + 2 - 3) // 2 + 1, W (10 + 2 - 5) + 1
    run_one(g, "ConvTransFormatPass")
    conv = only(g, "Conv2D")
    attrs = conv.get_ir_attrs()
    assert (attrs["strides"], attrs["dilations"], attrs["pads"]) == ([1, 1, 2, 1], [1, 1, 1, 2], [1, 1, 0, 2])
    assert outputs(g) == [(conv.name, 0)] and src(conv, 0).name == "x"
    assert "Transpose" not in types(g)
    check_descs(g, before)


def test_conv_shared_input_transpose_is_kept() -> None:
    load_sample("modify_conv_data_format_pass.py")
    g = _wrapped_conv(share_in=True)
    before = output_descs(g)
    s = run_one(g, "ConvTransFormatPass")
    assert len(s.fusions) == 1
    transpose = only(g, "Transpose")  # still feeds the Sigmoid, with its perm
    assert consumers(transpose) == {(only(g, "Sigmoid").name, 0)}
    assert const_value(src(transpose, 1)) == [0, 2, 3, 1]
    conv = only(g, "Conv2D")
    assert src(conv, 0).name == "x" and src(only(g, "Relu"), 0).name == conv.name
    check_descs(g, before)


@pytest.mark.parametrize("kind", ["wrong_out_perm", "conv_output_used_twice", "nchw_conv"])
def test_conv_format_leaves_other_graphs(kind: str) -> None:
    load_sample("modify_conv_data_format_pass.py")
    if kind == "wrong_out_perm":
        g = _wrapped_conv(out_perm=(0, 3, 2, 1))
    elif kind == "conv_output_used_twice":
        g = _wrapped_conv(conv_output_too=True)
    else:
        b = GraphBuilder("nchw")
        x = b.create_input(0, shape=[1, 4, 8, 8])
        y = Conv2D(x, rng_const(b, 4, 4, 3, 3), strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW")
        g = b.build_and_reset([Transpose(Transpose(y, b.create_const_int64([0, 2, 3, 1])),
                                         b.create_const_int64([0, 3, 1, 2]))])
    assert_untouched(g, "ConvTransFormatPass")


# ---------------------------------------------------------------------------------------------
# 6. mmoe_matmul_merge_pass
# ---------------------------------------------------------------------------------------------


def test_mmoe_matmul_merges_the_experts() -> None:
    mod = load_sample("mmoe_matmul_merge_pass.py")
    g = mod.build_example_graph(experts=4)
    before = output_descs(g)
    weights = [src(mm, 1).name for mm in of_type(g, "MatMulV2")]
    relus = [n for n, _ in outputs(g)]
    s = run_one(g, "MmoeMatmulPass")
    assert len(s.fusions) == 1 and s.fusions[0][0] == ["MatMulV2_0", "MatMulV2_1", "MatMulV2_2", "MatMulV2_3"]
    mm, concat, split = only(g, "MatMulV2"), only(g, "ConcatV2"), only(g, "SplitV")
    assert [src(concat, i).name for i in range(4)] == weights and const_value(src(concat, 4)) == 1
    assert concat.get_output_desc(0).get_shape() == [128, 1024]
    assert src(mm, 0).name == "x" and src(mm, 1).name == concat.name
    assert mm.get_ir_attrs() == {"transpose_x1": False, "transpose_x2": False, "offset_x": 0}
    assert src(split, 0).name == mm.name and split.get_attr("num_split") == 4
    assert const_value(src(split, 1)) == [256] * 4 and const_value(src(split, 2)) == 1
    for i, relu in enumerate(relus):
        assert src_port(node(g, relu), 0) == (split.name, i)
        assert split.get_output_desc(i).get_shape() == [64, 256]
    check_descs(g, before)


def _experts(b: GraphBuilder, x: TensorHolder, shapes: Sequence[Sequence[int]], *, left: bool = False,
             **attrs: bool) -> List[TensorHolder]:
    outs = []
    for shape in shapes:
        w = rng_const(b, *shape)
        outs.append(MatMulV2(w, x, **attrs) if left else MatMulV2(x, w, **attrs))
    return outs


def test_mmoe_matmul_transposed_and_left_weights_and_two_groups() -> None:
    load_sample("mmoe_matmul_merge_pass.py")
    b = GraphBuilder("variants")
    x = b.create_input(0, name="x", shape=[8, 16])
    z = b.create_input(1, name="z", shape=[16, 5])
    right_t = _experts(b, x, [[12, 16]] * 3, transpose_x2=True)  # x @ w^T, w [12, 16]: concat axis 0
    left = _experts(b, z, [[7, 16]] * 2, left=True)  # w @ z, w [7, 16]: concat rows, split rows
    g = b.build_and_reset(right_t + left)
    before = output_descs(g)
    assert before == [([8, 12], F32)] * 3 + [([7, 5], F32)] * 2
    s = run_one(g, "MmoeMatmulPass")
    assert len(s.fusions) == 2
    by_input = {src(mm, 0).name if src(mm, 0).type == "Data" else src(mm, 1).name: mm
                for mm in of_type(g, "MatMulV2")}
    assert sorted(by_input) == ["x", "z"]
    mx, mz = by_input["x"], by_input["z"]
    assert mx.get_attr("transpose_x2") is True and src(mx, 1).type == "ConcatV2"
    assert const_value(src(src(mx, 1), 3)) == 0  # transposed weights [n, k] stack along axis 0
    assert src(mz, 1).name == "z" and src(mz, 0).type == "ConcatV2" and const_value(src(src(mz, 0), 2)) == 0
    splits = {src(sp, 0).name: sp for sp in of_type(g, "SplitV")}
    assert const_value(src(splits[mx.name], 2)) == 1 and const_value(src(splits[mx.name], 1)) == [12] * 3
    assert const_value(src(splits[mz.name], 2)) == 0 and const_value(src(splits[mz.name], 1)) == [7] * 2
    sx, sz = splits[mx.name].name, splits[mz.name].name
    assert outputs(g) == [(sx, 0), (sx, 1), (sx, 2), (sz, 0), (sz, 1)]
    check_descs(g, before)


@pytest.mark.parametrize("kind", ["weights_not_const", "different_transpose", "different_shapes", "bias",
                                  "single"])
def test_mmoe_matmul_leaves_unmergeable(kind: str) -> None:
    load_sample("mmoe_matmul_merge_pass.py")
    b = GraphBuilder(kind)
    x = b.create_input(0, shape=[8, 16])
    if kind == "weights_not_const":
        outs = [MatMulV2(x, b.create_input(i + 1, shape=[16, 4])) for i in range(3)]
    elif kind == "different_transpose":
        outs = _experts(b, x, [[16, 16]]) + _experts(b, x, [[16, 16]], transpose_x2=True)
    elif kind == "different_shapes":
        outs = _experts(b, x, [[16, 4], [16, 5]])
    elif kind == "bias":
        outs = [MatMulV2(x, rng_const(b, 16, 4), rng_const(b, 4)) for _ in range(2)]
    else:
        outs = _experts(b, x, [[16, 4]])
    g = b.build_and_reset(outs)
    assert_untouched(g, "MmoeMatmulPass")


# ---------------------------------------------------------------------------------------------
# 7. mmoe_bmm_split_pass
# ---------------------------------------------------------------------------------------------


def test_mmoe_bmm_stacks_the_second_layer() -> None:
    mod = load_sample("mmoe_bmm_split_pass.py")
    g = mod.build_example_graph(experts=4)
    before = output_descs(g)
    assert before == [([8, 16], F32)] * 4
    second = [node(g, n) for n, _ in outputs(g)]
    hidden = [src(mm, 0).name for mm in second]
    weights = [src(mm, 1).name for mm in second]
    names = [mm.name for mm in second]
    assert mod.find_root(second[0]) == ("x", 2)
    s = run_one(g, "MmoeBmmSplitPass")
    assert len(s.fusions) == 1 and s.fusions[0][0] == names
    first = of_type(g, "MatMulV2")  # the first layer (all read x) is left alone
    assert len(first) == 4 and all(src(mm, 0).name == "x" for mm in first)
    bmm, split = only(g, "BatchMatMulV2"), only(g, "Split")
    px, pw = src(bmm, 0), src(bmm, 1)
    assert px.type == pw.type == "Pack" and px.get_attr("axis") == 0 and pw.get_attr("N") == 4
    assert [src(px, i).name for i in range(4)] == hidden and [src(pw, i).name for i in range(4)] == weights
    assert bmm.get_ir_attrs() == {"adj_x1": False, "adj_x2": False, "offset_x": 0}
    assert bmm.get_output_desc(0).get_shape() == [4, 8, 16]
    assert const_value(src(split, 0)) == 0 and src(split, 1).name == bmm.name
    assert split.get_attr("num_split") == 4
    outs = [node(g, n) for n, _ in outputs(g)]
    assert [o.type for o in outs] == ["Squeeze"] * 4 and all(o.get_attr("axis") == [0] for o in outs)
    assert [src_port(o, 0) for o in outs] == [(split.name, i) for i in range(4)]
    check_descs(g, before)


def test_mmoe_bmm_transposes_become_adj_and_odd_expert_is_left() -> None:
    load_sample("mmoe_bmm_split_pass.py")
    b = GraphBuilder("odd")
    x = b.create_input(0, name="x", shape=[6, 4])
    outs = []
    for n in (5, 5, 5, 3):  # the last expert's hidden width differs: it cannot be stacked
        h = Relu(MatMulV2(x, rng_const(b, 4, n)))
        outs.append(MatMulV2(h, rng_const(b, 2, n), transpose_x2=True))  # [6, n] @ [2, n]^T
    odd = outs[3].name
    g = b.build_and_reset(outs)
    before = output_descs(g)
    run_one(g, "MmoeBmmSplitPass")
    bmm = only(g, "BatchMatMulV2")
    assert bmm.get_ir_attrs() == {"adj_x1": False, "adj_x2": True, "offset_x": 0}
    assert src(bmm, 0).get_attr("N") == 3 and only(g, "Split").get_attr("num_split") == 3
    assert [t for t, _ in outputs(g)][3] == odd and node(g, odd).type == "MatMulV2"
    assert [node(g, n).type for n, _ in outputs(g)[:3]] == ["Squeeze"] * 3
    check_descs(g, before)


@pytest.mark.parametrize("kind", ["shared_input", "bias", "single", "different_levels"])
def test_mmoe_bmm_leaves_other_graphs(kind: str) -> None:
    load_sample("mmoe_bmm_split_pass.py")
    b = GraphBuilder(kind)
    x = b.create_input(0, shape=[6, 4])
    if kind == "shared_input":  # a first layer: that is the other pass's job
        outs = _experts(b, x, [[4, 5]] * 3)
    elif kind == "bias":
        outs = [MatMulV2(Relu(MatMulV2(x, rng_const(b, 4, 5))), rng_const(b, 5, 2), rng_const(b, 2))
                for _ in range(2)]
    elif kind == "single":
        outs = [MatMulV2(Relu(MatMulV2(x, rng_const(b, 4, 5))), rng_const(b, 5, 2))]
    else:  # a: x -> [6, 5] -> [6, 2] (level 2); b: x -> [6, 3] -> [6, 5] -> [6, 2] (level 3)
        a = MatMulV2(Relu(MatMulV2(x, rng_const(b, 4, 5))), rng_const(b, 5, 2))
        deep = Relu(MatMulV2(Relu(MatMulV2(x, rng_const(b, 4, 3))), rng_const(b, 3, 5)))
        outs = [a, MatMulV2(deep, rng_const(b, 5, 2))]  # same shapes as a, one level deeper
    g = b.build_and_reset(outs)
    assert_untouched(g, "MmoeBmmSplitPass")


def test_both_mmoe_passes_together() -> None:
    merge = load_sample("mmoe_matmul_merge_pass.py")
    stack = load_sample("mmoe_bmm_split_pass.py")  # clears the registry: register the first one again
    register_fusion_pass(name=merge.PASS_NAME, stage=AFTER)(merge.MmoeMatmulPass)
    g = stack.build_example_graph(experts=3)
    before = output_descs(g)
    stats = run_passes(g)
    assert [st.pass_name for st in stats] == ["MmoeBmmSplitPass", "MmoeMatmulPass"]
    assert [len(st.fusions) for st in stats] == [1, 1]
    # First layer: one wide MatMulV2 + SplitV; second layer: Pack + BatchMatMulV2 + Split + Squeeze.
    mm, split_v, pack_x = only(g, "MatMulV2"), only(g, "SplitV"), src(only(g, "BatchMatMulV2"), 0)
    assert src(mm, 0).name == "x" and mm.get_output_desc(0).get_shape() == [8, 96]
    for i in range(3):
        relu = src(pack_x, i)
        assert relu.type == "Relu" and src_port(relu, 0) == (split_v.name, i)
    assert [node(g, n).type for n, _ in outputs(g)] == ["Squeeze"] * 3
    check_descs(g, before)
