"""The fusion-pass samples of examples/fusion_pass (part a): MatMul + Add -> GEMM in three styles
(expression patterns, captured tensors, matcher config), Add(x, 0) removal in two variants and on
a custom operator, and the grouped-Conv2D decomposition.

Each sample is imported through ``sample_loader.load_sample`` (which clears the registry first)
and run with ``run_passes`` on graphs built with ge.es. No backend runs the graphs yet, so the
tests check structure: op types, wiring, graph outputs, attributes, pass statistics, inferred
shapes, and that graphs the passes must not touch stay exactly as they were.
"""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType
from typing import Callable, Dict, List, Optional, Tuple

import ge
import ge.ops
import numpy as np
import pytest
from ge.es.all import Add, BatchMatMulV2, Conv2D, Identity, MatMul, Relu
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import DataType, Graph, Node
from ge.passes import (
    PassStage,
    PassStats,
    PatternFusionPass,
    clear_registered_passes,
    get_registered_passes,
    infer_shape,
    register_fusion_pass,
    run_passes,
)
from sample_loader import SAMPLES, load_sample

F32, F16, I32 = DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_INT32
Product = Callable[..., TensorHolder]


pytestmark = pytest.mark.usefixtures("clean_passes")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def types(graph: Graph) -> List[str]:
    return [n.type for n in graph.get_all_nodes()]


def only(graph: Graph, op_type: str) -> Node:
    nodes = [n for n in graph.get_all_nodes() if n.type == op_type]
    assert len(nodes) == 1, f"expected one {op_type}, got {len(nodes)}"
    return nodes[0]


def all_of(graph: Graph, op_type: str) -> List[Node]:
    return [n for n in graph.get_all_nodes() if n.type == op_type]


def source(node: Node, index: int) -> Tuple[str, int]:
    """(producer name, output index) of input ``index`` of ``node``."""
    producer, port = node.get_in_data_nodes_and_port_indexes(index)
    return producer.name, port


def consumers(node: Node, index: int = 0) -> List[Tuple[str, int]]:
    return [(n.name, i) for n, i in node.get_out_data_nodes_and_port_indexes(index)]


def outputs(graph: Graph) -> List[Tuple[str, int]]:
    return [(n.name, i) for n, i in graph.get_outputs()]


def const_value(node: Node, index: int) -> np.ndarray:
    producer, _ = node.get_in_data_nodes_and_port_indexes(index)
    assert producer.type == "Const"
    return producer.get_attr("value").numpy()


def out_desc(graph: Graph, k: int = 0) -> Tuple[DataType, List[int]]:
    node, port = graph.get_outputs()[k]
    desc = node.get_output_desc(port)
    return desc.get_data_type(), desc.get_shape()


def run_one(graph: Graph, name: Optional[str] = None) -> PassStats:
    stats = run_passes(graph, passes=None if name is None else [name])
    assert len(stats) == 1
    return stats[0]


def counts(stats: PassStats) -> Tuple[int, int, int]:
    return stats.matches_tried, stats.matches_accepted, stats.rewritten


def assert_registered(name: str, stage: PassStage, kind: str, op_types: Optional[List[str]] = None) -> None:
    descriptor = next(d for d in get_registered_passes() if d.pass_name == name)
    assert (descriptor.stage, descriptor.kind) == (stage, kind)
    if op_types is not None:
        assert descriptor.op_types == op_types


def assert_untouched(build: Callable[[], Graph], name: Optional[str] = None) -> PassStats:
    """Runs the pass on a fresh graph and checks that nothing changed; returns the statistics."""
    graph = build()
    before = str(graph)
    stats = run_one(graph, name)
    assert stats.rewritten == 0 and stats.nodes_before == stats.nodes_after
    assert str(graph) == before
    graph.validate()
    return stats


def matmul_add_graph(
    *,
    product: Product = MatMul,
    a_shape: Optional[List[int]] = None,
    b_shape: Optional[List[int]] = None,
    c_shape: Optional[List[int]] = None,
    dtype: DataType = F32,
    c_first: bool = False,
    with_bias: bool = False,
    attrs: Optional[Dict[str, bool]] = None,
) -> Graph:
    """outputs: [product(a, b) + c, Relu(product(a, b) + c)]."""
    builder = GraphBuilder("matmul_add")
    a = builder.create_input(0, shape=a_shape or [2, 3], data_type=dtype)
    b = builder.create_input(1, shape=b_shape or [3, 4], data_type=dtype)
    c = builder.create_input(2, shape=c_shape or [4], data_type=dtype)
    mm = product(a, b, c, **(attrs or {})) if with_bias else product(a, b, **(attrs or {}))
    add = Add(c, mm) if c_first else Add(mm, c)
    return builder.build_and_reset([add, Relu(add)])


def assert_gemm_replaced(graph: Graph, *, dtype: DataType = F32) -> Node:
    """The product and Add are gone; one GEMM reads a, b, c and alpha = beta = 1 Consts, and feeds
    graph output 0 and the Relu."""
    assert sorted(types(graph)) == sorted(["Data", "Data", "Data", "Const", "Const", "GEMM", "Relu"])
    gemm = only(graph, "GEMM")
    assert [source(gemm, i) for i in range(3)] == [("input_0", 0), ("input_1", 0), ("input_2", 0)]
    for i in (3, 4):
        value = const_value(gemm, i)
        assert value.shape == () and value == 1 and value.dtype == ge.graph.tensor.numpy_dtype(dtype)
    assert outputs(graph)[0] == (gemm.name, 0)
    assert source(only(graph, "Relu"), 0) == (gemm.name, 0)
    graph.validate()
    return gemm


# ---------------------------------------------------------------------------------------------
# Sample 1: fuse_matmul_add_pass.py (expression style)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample1() -> ModuleType:
    return load_sample("fuse_matmul_add_pass.py")


def test_sample1_registration(sample1: ModuleType) -> None:
    assert [d.pass_name for d in get_registered_passes()] == ["FuseMatMulAndAddPass"]
    assert_registered("FuseMatMulAndAddPass", PassStage.BEFORE_INFER_SHAPE, "pattern_fusion")
    patterns = sample1.FuseMatMulAndAddPass().patterns()
    assert [p.name for p in patterns] == [
        "FuseMatMulAndAddPass_matmul_add_pattern",
        "FuseMatMulAndAddPass_batch_matmul_add_pattern",
    ]
    # Captures of the expression style: a, b, c, then the Add output.
    captured = [[(io.node.type, io.index) for io in p.get_captured_tensors()] for p in patterns]
    assert captured == [[("Data", 0), ("Data", 0), ("Data", 0), ("Add", 0)]] * 2


@pytest.mark.parametrize("product", [MatMul, BatchMatMulV2])
def test_sample1_fuses_product_and_add_into_gemm(sample1: ModuleType, product: Product) -> None:
    graph = matmul_add_graph(product=product)
    stats = run_one(graph)
    assert (stats.pass_name, stats.stage) == ("FuseMatMulAndAddPass", PassStage.BEFORE_INFER_SHAPE)
    assert counts(stats) == (1, 1, 1)
    assert (stats.nodes_before, stats.nodes_after) == (6, 7)
    gemm = assert_gemm_replaced(graph)
    assert gemm.get_ir_attrs() == {"transpose_a": False, "transpose_b": False}
    # The replacement inputs took the matched tensors' descriptions, so GEMM has its real shape.
    assert out_desc(graph) == (F32, [2, 4])


def test_sample1_fuses_every_match(sample1: ModuleType) -> None:
    builder = GraphBuilder("two")
    a, b = builder.create_input(0, shape=[2, 3]), builder.create_input(1, shape=[3, 4])
    c = builder.create_input(2, shape=[2, 4])
    graph = builder.build_and_reset([MatMul(a, b) + c, BatchMatMulV2(a, b) + c])
    stats = run_one(graph)
    assert counts(stats) == (2, 2, 2)
    gemms = all_of(graph, "GEMM")
    assert len(gemms) == 2 and not {"MatMul", "BatchMatMulV2", "Add"} & set(types(graph))
    assert outputs(graph) == [(g.name, 0) for g in gemms]
    graph.validate()


def test_sample1_alpha_and_beta_follow_the_dtype(sample1: ModuleType) -> None:
    graph = matmul_add_graph(dtype=F16)
    assert counts(run_one(graph)) == (1, 1, 1)
    assert_gemm_replaced(graph, dtype=F16)
    infer_shape(graph)  # the rewritten graph is consistent: GEMM's T2 inputs are all fp16
    assert out_desc(graph) == (F16, [2, 4])


@pytest.mark.parametrize(
    "build, tried",
    [
        (lambda: matmul_add_graph(a_shape=[3, 2], attrs={"transpose_x1": True}), 1),
        (lambda: matmul_add_graph(product=BatchMatMulV2, b_shape=[4, 3], attrs={"adj_x2": True}), 1),
        (lambda: matmul_add_graph(product=BatchMatMulV2, a_shape=[5, 2, 3], b_shape=[5, 3, 4]), 1),
        (lambda: matmul_add_graph(c_shape=[3, 2, 4]), 1),  # c would broadcast the product
        (lambda: matmul_add_graph(with_bias=True), 0),  # MatMul's bias input is connected
        (lambda: matmul_add_graph(c_first=True), 0),  # Add(c, product): Add is not commutative here
    ],
    ids=["transposed", "adjoint", "batched", "widening-c", "bias", "operands-swapped"],
)
def test_sample1_leaves_other_graphs_alone(
    sample1: ModuleType, build: Callable[[], Graph], tried: int
) -> None:
    stats = assert_untouched(build)
    assert counts(stats) == (tried, 0, 0)


# ---------------------------------------------------------------------------------------------
# Sample 2: fuse_matmul_add_pass_with_capture_tensor.py
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample2() -> ModuleType:
    return load_sample("fuse_matmul_add_pass_with_capture_tensor.py")


def test_sample2_patterns_capture_the_product_then_the_add(sample2: ModuleType) -> None:
    assert_registered("FuseMatMulAndAddCaptureTensorPass", PassStage.BEFORE_INFER_SHAPE, "pattern_fusion")
    patterns = sample2.FuseMatMulAndAddCaptureTensorPass().patterns()
    assert [p.name for p in patterns] == ["matmul_add", "batch_matmul_add"]
    assert [[(io.node.type, io.index) for io in p.get_captured_tensors()] for p in patterns] == [
        [("MatMul", 0), ("Add", 0)],
        [("BatchMatMulV2", 0), ("Add", 0)],
    ]


TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize(
    "product, attrs",
    [
        (MatMul, ("transpose_x1", "transpose_x2")),
        (BatchMatMulV2, ("adj_x1", "adj_x2")),
    ],
)
@pytest.mark.parametrize("transpose_a, transpose_b", TRANSPOSES)
def test_sample2_copies_the_transposes_onto_gemm(
    sample2: ModuleType,
    product: Product,
    attrs: Tuple[str, str],
    transpose_a: bool,
    transpose_b: bool,
) -> None:
    graph = matmul_add_graph(
        product=product,
        a_shape=[3, 2] if transpose_a else [2, 3],
        b_shape=[4, 3] if transpose_b else [3, 4],
        attrs={attrs[0]: transpose_a, attrs[1]: transpose_b},
    )
    stats = run_one(graph)
    assert counts(stats) == (1, 1, 1)
    gemm = assert_gemm_replaced(graph)
    assert gemm.get_ir_attrs() == {"transpose_a": transpose_a, "transpose_b": transpose_b}
    infer_shape(graph)  # BEFORE_INFER_SHAPE: the GEMM's shape comes from inference
    assert out_desc(graph) == (F32, [2, 4]) and out_desc(graph, 1) == (F32, [2, 4])


@pytest.mark.parametrize("dtype", [F16, I32])
def test_sample2_refuses_adds_that_are_not_float32(sample2: ModuleType, dtype: DataType) -> None:
    stats = assert_untouched(lambda: matmul_add_graph(dtype=dtype))
    assert counts(stats) == (1, 0, 0)  # matched, then refused by meet_requirements


def test_sample2_refuses_batched_products(sample2: ModuleType) -> None:
    stats = assert_untouched(
        lambda: matmul_add_graph(product=BatchMatMulV2, a_shape=[5, 2, 3], b_shape=[5, 3, 4]))
    assert counts(stats) == (1, 0, 0)


# ---------------------------------------------------------------------------------------------
# Sample 3: fuse_matmul_add_pass_with_pattern_matcher_config.py
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample3() -> ModuleType:
    return load_sample("fuse_matmul_add_pass_with_pattern_matcher_config.py")


def matmul_const_graph(
    value: float = 0.1,
    shape: Optional[List[int]] = None,
    transpose_x1: bool = False,
    transpose_x2: bool = False,
) -> Graph:
    shape = shape or [2, 2]
    builder = GraphBuilder("matmul_const")
    x = builder.create_input(0, shape=[3, 2] if transpose_x1 else [2, 3])
    y = builder.create_input(1, shape=[2, 3] if transpose_x2 else [3, 2])
    bias = builder.create_const_float([value] * int(np.prod(shape)), shape)
    add = Add(MatMul(x, y, transpose_x1=transpose_x1, transpose_x2=transpose_x2), bias)
    return builder.build_and_reset([Relu(add)])


def test_sample3_config(sample3: ModuleType) -> None:
    assert_registered("MatMulAddFusionPass", PassStage.BEFORE_INFER_SHAPE, "pattern_fusion")
    config = sample3.MatMulAddFusionPass().matcher_config
    assert config.is_enable_const_value_match() and config.is_enable_ir_attr_match()
    assert not config.is_enable_commutative_match()


def test_sample3_matches_the_equal_const_and_attrs(sample3: ModuleType) -> None:
    graph = matmul_const_graph()
    stats = run_one(graph)
    assert counts(stats) == (1, 1, 1)
    assert sorted(types(graph)) == sorted(["Data", "Data", "Const", "Const", "Const", "GEMM", "Relu"])
    gemm = only(graph, "GEMM")
    assert [source(gemm, i) for i in range(2)] == [("input_0", 0), ("input_1", 0)]
    np.testing.assert_array_equal(const_value(gemm, 2), np.full((2, 2), 0.1, np.float32))
    assert const_value(gemm, 3) == 1 and const_value(gemm, 4) == 1
    assert source(only(graph, "Relu"), 0) == (gemm.name, 0)
    infer_shape(graph)
    assert out_desc(graph) == (F32, [2, 2])
    graph.validate()


NOT_EQUAL = [
    ({"value": 0.2}, "const value differs"),
    ({"value": 0.1, "shape": [1, 2]}, "Const_0"),
    ({"transpose_x1": True}, "IR attribute 'transpose_x1' differs"),
    ({"transpose_x2": True}, "IR attribute 'transpose_x2' differs"),
]
NOT_EQUAL_IDS = ["value", "shape", "transpose_x1", "transpose_x2"]


@pytest.mark.parametrize("kwargs, reason", NOT_EQUAL, ids=NOT_EQUAL_IDS)
def test_sample3_does_not_match_a_different_const_or_attr(
    sample3: ModuleType, kwargs: dict, reason: str
) -> None:
    stats = assert_untouched(lambda: matmul_const_graph(**kwargs))
    assert counts(stats) == (0, 0, 0)  # refused by the matcher: meet_requirements never sees it
    graph = matmul_const_graph(**kwargs)
    why = sample3.matmul_add_const_pattern().explain(only(graph, "Add"), sample3.matcher_config())
    assert why.startswith("no match") and reason in why


@pytest.mark.parametrize("kwargs", [k for k, _ in NOT_EQUAL], ids=NOT_EQUAL_IDS)
def test_sample3_without_the_config_the_same_pattern_matches(sample3: ModuleType, kwargs: dict) -> None:
    clear_registered_passes()

    @register_fusion_pass(name="Loose", stage=PassStage.BEFORE_INFER_SHAPE)
    class Loose(sample3.MatMulAddFusionPass):  # type: ignore[name-defined]
        def __init__(self) -> None:
            PatternFusionPass.__init__(self, None)

    graph = matmul_const_graph(**kwargs)
    assert counts(run_one(graph)) == (1, 1, 1)
    assert "GEMM" in types(graph)


# ---------------------------------------------------------------------------------------------
# Sample 4: add_zero_pass.py (meet_requirements and const-value matching)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample4() -> ModuleType:
    return load_sample("add_zero_pass.py")


def add_const_graph(
    make_const: Callable[[GraphBuilder], object],
    *,
    x_shape: Optional[List[int]] = None,
    dtype: DataType = F32,
) -> Graph:
    """outputs: [Relu(x + const), x + const] (one Add, two consumers: the Relu and output 1)."""
    builder = GraphBuilder("add_const")
    x = builder.create_input(0, shape=x_shape or [4], data_type=dtype)
    add = Add(x, make_const(builder))  # type: ignore[arg-type]
    return builder.build_and_reset([Relu(add), add])


ZEROS = {
    "scalar": lambda b: b.create_const_float(0.0),
    "vector": lambda b: b.create_const_float([0.0] * 4, [4]),
    "negative-zero": lambda b: b.create_const_float(-0.0),
    "broadcast-row": lambda b: b.create_const_float([0.0], [1]),
}


def assert_add_removed(graph: Graph) -> None:
    assert sorted(types(graph)) == ["Data", "Relu"]
    relu = only(graph, "Relu")
    assert source(relu, 0) == ("input_0", 0)
    assert outputs(graph) == [(relu.name, 0), ("input_0", 0)]
    assert sorted(consumers(only(graph, "Data"))) == [(relu.name, 0)]
    graph.validate()


def test_sample4_registers_both_variants(sample4: ModuleType) -> None:
    assert [d.pass_name for d in get_registered_passes()] == ["AddZeroPass", "AddZeroConstValueMatchPass"]
    for name in ("AddZeroPass", "AddZeroConstValueMatchPass"):
        assert_registered(name, PassStage.BEFORE_INFER_SHAPE, "pattern_fusion")
    assert sample4.AddZeroPass().matcher_config is None
    assert sample4.AddZeroConstValueMatchPass().matcher_config.is_enable_const_value_match()


@pytest.mark.parametrize("zero", list(ZEROS), ids=list(ZEROS))
def test_sample4_meet_requirements_variant_removes_any_zero(sample4: ModuleType, zero: str) -> None:
    graph = add_const_graph(ZEROS[zero])
    stats = run_one(graph, "AddZeroPass")
    assert counts(stats) == (1, 1, 1) and (stats.nodes_before, stats.nodes_after) == (4, 2)
    assert_add_removed(graph)


@pytest.mark.parametrize("dtype, value", [(F16, np.zeros((4,), np.float16)), (I32, np.zeros((), np.int32))])
def test_sample4_meet_requirements_variant_reads_any_dtype(
    sample4: ModuleType, dtype: DataType, value: np.ndarray
) -> None:
    graph = add_const_graph(lambda b: b.create_const(value), dtype=dtype)
    assert counts(run_one(graph, "AddZeroPass")) == (1, 1, 1)
    assert_add_removed(graph)


@pytest.mark.parametrize(
    "make_const, x_shape",
    [
        (lambda b: b.create_const_float(1.0), [4]),
        (lambda b: b.create_const_float([0.0, 0.0, 0.5, 0.0], [4]), [4]),
        (lambda b: b.create_const_float([0.0] * 8, [2, 4]), [4]),  # broadcasts x to [2, 4]
        (lambda b: b.create_const_float([0.0] * 4, [4]), [-2]),  # x's rank unknown: may broadcast
    ],
    ids=["one", "not-all-zero", "widening", "unknown-rank"],
)
def test_sample4_meet_requirements_variant_refuses(
    sample4: ModuleType, make_const: Callable[[GraphBuilder], object], x_shape: List[int]
) -> None:
    stats = assert_untouched(lambda: add_const_graph(make_const, x_shape=x_shape), "AddZeroPass")
    assert counts(stats) == (1, 0, 0)


def test_sample4_scalar_zero_keeps_an_unknown_shape(sample4: ModuleType) -> None:
    graph = add_const_graph(ZEROS["scalar"], x_shape=[-2])
    assert counts(run_one(graph, "AddZeroPass")) == (1, 1, 1)
    assert_add_removed(graph)


def test_sample4_const_value_variant_removes_an_exact_zero(sample4: ModuleType) -> None:
    graph = add_const_graph(ZEROS["scalar"])
    stats = run_one(graph, "AddZeroConstValueMatchPass")
    assert stats.pass_name == "AddZeroConstValueMatchPass" and counts(stats) == (1, 1, 1)
    assert_add_removed(graph)


@pytest.mark.parametrize("zero", ["vector", "negative-zero", "broadcast-row"])
def test_sample4_const_value_variant_is_strict(sample4: ModuleType, zero: str) -> None:
    stats = assert_untouched(lambda: add_const_graph(ZEROS[zero]), "AddZeroConstValueMatchPass")
    assert counts(stats) == (0, 0, 0)
    stats = assert_untouched(lambda: add_const_graph(lambda b: b.create_const_float(1.0)),
                             "AddZeroConstValueMatchPass")
    assert counts(stats) == (0, 0, 0)


def test_sample4_a_zero_used_elsewhere_is_not_matched(sample4: ModuleType) -> None:
    def build() -> Graph:
        builder = GraphBuilder("shared")
        x = builder.create_input(0, shape=[4])
        zero = builder.create_const_float(0.0)
        return builder.build_and_reset([Relu(Add(x, zero)), Relu(zero)])

    # The Const has a consumer outside the pattern, so the match would not be self-contained.
    stats = assert_untouched(build, "AddZeroPass")
    assert counts(stats) == (0, 0, 0)


# ---------------------------------------------------------------------------------------------
# Sample 5: add_zero_pass_in_custom_op.py
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample5() -> ModuleType:
    return load_sample("add_zero_pass_in_custom_op.py")


def test_sample5_registers_the_custom_op_and_the_pass(sample5: ModuleType) -> None:
    assert "AddCustom" in ge.ops.list_ops()
    proto = ge.ops.get_op("AddCustom")
    assert [i["name"] for i in proto["inputs"]] == ["x", "y"]
    assert [o["name"] for o in proto["outputs"]] == ["z"]
    assert_registered("AddCustomZeroPass", PassStage.BEFORE_INFER_SHAPE, "pattern_fusion")
    patterns = sample5.AddCustomZeroPass().patterns()
    assert [p.name for p in patterns] == ["addcustom_zero", "addcustom_identity_zero"]
    # The shape rule broadcasts.
    builder = GraphBuilder("infer")
    x = builder.create_input(0, shape=[2, 3], data_type=F16)
    z = sample5.AddCustom(x, builder.create_input(1, shape=[3]))
    assert z.get_producer().get_output_desc(0).get_shape() == [2, 3]
    assert z.get_producer().get_output_desc(0).get_data_type() == F16
    with pytest.raises(ge.ShapeInferenceError, match="do not broadcast"):
        sample5.AddCustom(builder.create_input(2, shape=[2]), builder.create_input(3, shape=[3]))


def test_sample5_removes_addcustom_zero(sample5: ModuleType) -> None:
    AddCustom = sample5.AddCustom
    builder = GraphBuilder("custom")
    x = builder.create_input(0, shape=[2, 3])
    y = Relu(AddCustom(x, builder.create_const_float(0.0)))  # plain zero
    y = AddCustom(y, Identity(builder.create_const_float([0.0] * 3, [3])))  # zero through an Identity
    one = builder.create_const_float(1.0)
    one_name = one.get_producer().name
    graph = builder.build_and_reset([AddCustom(y, one), y])
    assert types(graph).count("AddCustom") == 3
    stats = run_one(graph)
    assert (stats.pass_name, counts(stats)) == ("AddCustomZeroPass", (3, 2, 2))
    assert (stats.nodes_before, stats.nodes_after) == (9, 4)
    assert sorted(types(graph)) == sorted(["Data", "Relu", "Const", "AddCustom"])
    relu, kept = only(graph, "Relu"), only(graph, "AddCustom")
    assert source(relu, 0) == ("input_0", 0)
    assert [source(kept, i) for i in range(2)] == [(relu.name, 0), (one_name, 0)]
    assert outputs(graph) == [(kept.name, 0), (relu.name, 0)]
    graph.validate()


@pytest.mark.parametrize(
    "make_const, x_shape",
    [
        (lambda b: b.create_const_float(2.0), [3]),
        (lambda b: b.create_const_float([0.0] * 6, [2, 3]), [3]),  # broadcasts x to [2, 3]
    ],
    ids=["nonzero", "widening"],
)
def test_sample5_keeps_addcustom_that_changes_x(
    sample5: ModuleType, make_const: Callable[[GraphBuilder], object], x_shape: List[int]
) -> None:
    def build() -> Graph:
        builder = GraphBuilder("custom_kept")
        x = builder.create_input(0, shape=x_shape)
        return builder.build_and_reset([sample5.AddCustom(x, make_const(builder))])

    stats = assert_untouched(build)
    assert counts(stats) == (1, 0, 0)


def test_sample5_loads_twice(sample5: ModuleType) -> None:
    again = load_sample("add_zero_pass_in_custom_op.py")  # re-registers the op and the pass
    assert [d.pass_name for d in get_registered_passes()] == ["AddCustomZeroPass"]
    builder = GraphBuilder("again")
    x = builder.create_input(0, shape=[4])
    graph = builder.build_and_reset([Relu(again.AddCustom(x, 0.0))])
    assert counts(run_one(graph)) == (1, 1, 1)
    assert sorted(types(graph)) == ["Data", "Relu"]


# ---------------------------------------------------------------------------------------------
# Sample 6: decompose_grouped_conv_pass.py
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample6() -> ModuleType:
    return load_sample("decompose_grouped_conv_pass.py")


def conv_graph(
    *,
    groups: int,
    x_shape: Optional[List[int]] = None,
    filter_shape: Optional[List[int]] = None,
    with_bias: bool = False,
    data_format: str = "NCHW",
    dtype: DataType = F32,
    strides: Optional[List[int]] = None,
) -> Graph:
    """outputs: [Relu(Conv2D(x, filter[, bias]))]."""
    builder = GraphBuilder("conv")
    x = builder.create_input(0, shape=x_shape or [1, 4, 8, 8], data_type=dtype)
    weights = builder.create_input(1, shape=filter_shape or [6, 4 // groups, 3, 3], data_type=dtype)
    bias = builder.create_input(2, shape=[(filter_shape or [6])[0]], data_type=dtype) if with_bias else None
    y = Conv2D(x, weights, bias, strides=strides or [1, 1, 1, 1], pads=[1, 1, 1, 1], dilations=[1, 1, 1, 1],
               groups=groups, data_format=data_format)
    return builder.build_and_reset([Relu(y)])


def test_sample6_registration(sample6: ModuleType) -> None:
    name = "DecomposeGroupedConvToSplitedPass"
    assert_registered(name, PassStage.AFTER_INFER_SHAPE, "decompose", ["Conv2D"])
    assert sample6.DecomposeGroupedConvToSplitedPass.op_types == ["Conv2D"]


def test_sample6_splits_a_grouped_conv(sample6: ModuleType) -> None:
    graph = conv_graph(groups=2)
    before = out_desc(graph)
    stats = run_one(graph)
    assert (stats.kind, stats.stage) == ("decompose", PassStage.AFTER_INFER_SHAPE)
    assert counts(stats) == (1, 1, 1) and (stats.nodes_before, stats.nodes_after) == (4, 11)
    assert sorted(types(graph)) == sorted(
        ["Data", "Data", "Const", "Split", "Const", "Split", "Conv2D", "Conv2D", "Const", "ConcatV2", "Relu"])
    splits = all_of(graph, "Split")
    # Split(split_dim, x): the input along C (dim 1), the filter along N (dim 0).
    assert [(int(const_value(s, 0)), source(s, 1)) for s in splits] == [
        (1, ("input_0", 0)),
        (0, ("input_1", 0)),
    ]
    split_x, split_w = splits
    convs = all_of(graph, "Conv2D")
    for i, conv in enumerate(convs):
        assert [source(conv, 0), source(conv, 1)] == [(split_x.name, i), (split_w.name, i)]
        attrs = conv.get_ir_attrs()
        assert attrs["groups"] == 1 and attrs["data_format"] == "NCHW"
        assert attrs["strides"] == attrs["pads"] == attrs["dilations"] == [1, 1, 1, 1]
        # Shapes come from the replacement's own inference (no infer_shape on the graph here).
        assert conv.get_output_desc(0).get_shape() == [1, 3, 8, 8]
    concat = only(graph, "ConcatV2")
    assert [source(concat, i) for i in range(2)] == [(convs[0].name, 0), (convs[1].name, 0)]
    assert int(const_value(concat, 2)) == 1
    assert source(only(graph, "Relu"), 0) == (concat.name, 0)
    assert out_desc(graph) == before == (F32, [1, 6, 8, 8])
    infer_shape(graph)
    assert out_desc(graph) == before
    graph.validate()


def test_sample6_splits_the_bias_too(sample6: ModuleType) -> None:
    graph = conv_graph(groups=3, x_shape=[2, 6, 9, 9], filter_shape=[9, 2, 3, 3], with_bias=True, dtype=F16,
                       strides=[1, 1, 2, 2])
    before = out_desc(graph)
    assert counts(run_one(graph)) == (1, 1, 1)
    convs = all_of(graph, "Conv2D")
    split_b = [s for s in all_of(graph, "Split") if source(s, 1) == ("input_2", 0)]
    assert len(convs) == 3 and len(split_b) == 1
    for i, conv in enumerate(convs):
        assert source(conv, 2) == (split_b[0].name, i)
        assert conv.get_attr("strides") == [1, 1, 2, 2]
        assert conv.get_output_desc(0).get_shape() == [2, 3, 5, 5]
        assert conv.get_output_desc(0).get_data_type() == F16
    assert out_desc(graph) == before == (F16, [2, 9, 5, 5])
    graph.validate()


@pytest.mark.parametrize(
    "kwargs",
    [{"groups": 1}, {"groups": 2, "x_shape": [1, 8, 8, 4], "data_format": "NHWC"}],
    ids=["groups=1", "NHWC"],
)
def test_sample6_leaves_other_convs_alone(sample6: ModuleType, kwargs: dict) -> None:
    stats = assert_untouched(lambda: conv_graph(**kwargs))
    assert counts(stats) == (1, 0, 0)


def test_sample6_only_grouped_convs_in_a_mixed_graph(sample6: ModuleType) -> None:
    builder = GraphBuilder("mixed")
    x = builder.create_input(0, shape=[1, 4, 8, 8])
    w_grouped = builder.create_input(1, shape=[4, 2, 3, 3])
    w_plain = builder.create_input(2, shape=[4, 4, 1, 1])
    y = Conv2D(x, w_grouped, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], groups=2, data_format="NCHW")
    z = Conv2D(y, w_plain, strides=[1, 1, 1, 1], pads=[0, 0, 0, 0], data_format="NCHW")
    plain_name = z.get_producer().name
    graph = builder.build_and_reset([z])
    assert counts(run_one(graph)) == (2, 1, 1)
    convs = all_of(graph, "Conv2D")
    assert len(convs) == 3 and all(c.get_attr("groups") == 1 for c in convs)
    plain = graph.find_node_by_name(plain_name)
    assert plain is not None and source(plain, 0) == (only(graph, "ConcatV2").name, 0)
    assert out_desc(graph) == (F32, [1, 4, 8, 8])
    graph.validate()


# ---------------------------------------------------------------------------------------------
# Every sample runs as a script
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "filename, expected",
    [
        ("fuse_matmul_add_pass.py", "GEMM("),
        ("fuse_matmul_add_pass_with_capture_tensor.py", "transpose_a=true, transpose_b=true"),
        ("fuse_matmul_add_pass_with_pattern_matcher_config.py", "IR attribute 'transpose_x1' differs"),
        ("add_zero_pass.py", "AddZeroConstValueMatchPass [pattern_fusion"),
        ("add_zero_pass_in_custom_op.py", "AddCustomZeroPass [pattern_fusion"),
        ("decompose_grouped_conv_pass.py", "ConcatV2("),
    ],
)
def test_samples_run_as_scripts(filename: str, expected: str) -> None:
    done = subprocess.run([sys.executable, str(SAMPLES / filename)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "before:" in done.stdout and "after" in done.stdout and expected in done.stdout
