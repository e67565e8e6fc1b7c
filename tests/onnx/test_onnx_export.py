"""ONNX export (``ge.onnx.save``), the ``DumpFormat.kOnnx`` dump and GE's ``.air`` format.

Every example graph (examples/quickstart.py and the graphs the examples/fusion_pass scripts
build, before and after their passes) and a few graphs of our own are exported, run in
onnxruntime and compared with ge's own Session; the exported model is also imported back with
``ge.onnx.load`` where the importer has translators for its ops.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ge
import ge.onnx
from ge.es import GraphBuilder
from ge.es.all import (
    AvgPoolV2,
    BatchMatMulV2,
    Cast,
    ConcatV2,
    Conv2D,
    Div,
    GatherV2,
    MatMulV2,
    MaxPoolV3,
    Pack,
    ReduceMeanD,
    Relu,
    Reshape,
    Sigmoid,
    SoftmaxV2,
    SplitV,
    Tanh,
    Transpose,
)
from ge.graph import DataType, DumpFormat, Graph

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx_harness import assert_outputs, run_graph, run_ort  # noqa: E402
from sample_loader import load_sample, sample_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NP = {DataType.DT_FLOAT: np.float32, DataType.DT_INT32: np.int32, DataType.DT_INT64: np.int64}


def _inputs(graph: Graph, seed: int = 0):
    """Random feeds for the graph's Data nodes (unknown dims become 3)."""
    rng = np.random.default_rng(seed)
    datas = sorted((n for n in graph.get_direct_nodes() if n.type == "Data"), key=lambda n: n.get_attr("index"))
    feeds = []
    for n in datas:
        d = n.get_output_desc(0)
        shape = [3 if s < 0 else s for s in d.get_shape()]
        dt = NP.get(d.get_data_type(), np.float32)
        if np.issubdtype(dt, np.integer):
            feeds.append(rng.integers(0, 3, size=shape).astype(dt))
        else:
            feeds.append(rng.standard_normal(shape).astype(dt))
    return feeds


def check_round_trip(graph: Graph, tmp_path: Path, tol: float = 1e-4) -> str:
    """Exports, runs in onnxruntime, compares with ge; imports back where it can. Returns
    "reloaded" or the reason the reload was skipped."""
    feeds = _inputs(graph)
    ref = run_graph(graph, feeds)
    path = tmp_path / f"{graph.name}.onnx"
    ge.onnx.save(graph, path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert_outputs(run_ort(path, feeds), ref, tol, tol, exact_ints=False)
    assert ge.onnx.to_bytes(graph) == path.read_bytes()
    try:
        back = ge.onnx.load(str(path))
    except ge.TranslationError as e:
        if "without a translator" in str(e):
            return f"skipped: {e}"
        raise
    assert_outputs(run_graph(back, feeds), ref, tol, tol, check_dtype=False, exact_ints=False)
    return "reloaded"


def _quickstart():
    spec = importlib.util.spec_from_file_location("_quickstart_for_export", ROOT / "examples" / "quickstart.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_mlp()


def _sample_graph(filename: str):
    mod = load_sample(filename)
    if filename.startswith("fuse_matmul_add_pass_with_pattern_matcher_config"):
        return mod, mod._demo_graph(0.1, False)
    make = getattr(mod, "_demo_graph", None) or getattr(mod, "build_example_graph")
    return mod, make()


SAMPLE_FILES = sample_files()


def test_quickstart_exports(tmp_path):
    check_round_trip(_quickstart(), tmp_path)


@pytest.mark.parametrize("filename", SAMPLE_FILES)
def test_fusion_sample_graphs_export(filename, tmp_path):
    from ge.passes import clear_registered_passes, infer_shape, run_passes

    mod, graph = _sample_graph(filename)
    try:
        for stage, g in (("before", graph), ("after", None)):
            if g is None:
                list(run_passes(graph))
                infer_shape(graph)  # as the sample scripts do after their passes
                g = graph
            if any(n.type == "AddCustom" for n in g.get_all_nodes()):
                # A custom op has no ONNX form: one clear error naming it.
                with pytest.raises(ge.TranslationError, match="AddCustom"):
                    ge.onnx.save(g, tmp_path / "x.onnx")
                continue
            d = tmp_path / stage
            d.mkdir()
            check_round_trip(g, d)
    finally:
        clear_registered_passes()


def _conv_graph(nhwc: bool):
    b = GraphBuilder("conv_nhwc" if nhwc else "conv_nchw")
    shape = [1, 7, 7, 3] if nhwc else [1, 3, 7, 7]
    x = b.create_input(0, shape=shape)
    w = b.create_const(np.random.default_rng(1).standard_normal((4, 3, 3, 3), dtype=np.float32))
    bias = b.create_const(np.linspace(-1, 1, 4, dtype=np.float32))
    if nhwc:
        y = Conv2D(x, w, bias, strides=[1, 2, 2, 1], pads=[1, 0, 1, 2], dilations=[1, 1, 1, 1],
                   data_format="NHWC")
    else:
        y = Conv2D(x, w, bias, strides=[1, 1, 1, 1], pads=[1, 1, 0, 2], dilations=[1, 1, 2, 1],
                   data_format="NCHW")
    return b.build_and_reset([Relu(y)])


def _pool_graph():
    b = GraphBuilder("pools")
    x = b.create_input(0, shape=[2, 3, 9, 8])
    m = MaxPoolV3(x, ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], pads=[1, 1, 0, 1], ceil_mode=True)
    a = AvgPoolV2(x, ksize=[1, 1, 2, 3], strides=[1, 1, 2, 2], pads=[0, 1, 1, 1], exclusive=False)
    g = AvgPoolV2(x, ksize=[1, 1, 2, 2], strides=[1, 1, 1, 1], global_pooling=True)
    return b.build_and_reset([m, a, g])


def _matmul_graph():
    b = GraphBuilder("matmuls")
    x = b.create_input(0, shape=[4, 3])
    y = b.create_input(1, shape=[2, 5, 4])
    w = b.create_const(np.random.default_rng(2).standard_normal((5, 3), dtype=np.float32))
    bias = b.create_const(np.ones(5, dtype=np.float32))
    m = MatMulV2(x, w, bias, transpose_x2=True)
    bm = BatchMatMulV2(y, b.create_const(np.ones((2, 3, 5), dtype=np.float32)), adj_x1=True, adj_x2=True)
    return b.build_and_reset([m, bm])


def _shape_graph():
    b = GraphBuilder("shapes")
    x = b.create_input(0, shape=[2, 3, 4])
    i = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    r = Reshape(x, b.create_const_int32([6, -1]))
    t = Transpose(x, b.create_const_int64([2, 0, 1]))
    s = SoftmaxV2(t, axes=[1])
    p = Pack([x, x], axis=-1)
    parts = SplitV(x, b.create_const_int32([1, -1]), b.create_scalar_int32(2), 2, num_split=2)
    c = ConcatV2([parts[1], parts[0]], b.create_scalar_int32(-1))
    gth = GatherV2(x, i, b.create_scalar_int32(1))
    mean = ReduceMeanD(Tanh(x), axes=[0, 2], keep_dims=True)
    cast = Cast(Sigmoid(x), dst_type=DataType.DT_INT32.value if hasattr(DataType.DT_INT32, "value") else 3)
    q = Div(x, x + 2.0)
    return b.build_and_reset([r, s, p, c, gth, mean, cast, q])


@pytest.mark.parametrize("make", [lambda: _conv_graph(False), lambda: _conv_graph(True), _pool_graph,
                                  _matmul_graph, _shape_graph], ids=["conv_nchw", "conv_nhwc", "pool",
                                                                     "matmul", "shape"])
def test_own_graphs_export(make, tmp_path):
    check_round_trip(make(), tmp_path)


def test_exporter_keys():
    keys = set(ge.onnx.exporter_keys())
    for op in ["Add", "Sub", "Mul", "RealDiv", "MatMulV2", "BatchMatMulV2", "Relu", "Conv2D", "MaxPoolV3",
               "AvgPoolV2", "SoftmaxV2", "Reshape", "Transpose", "ConcatV2", "Cast", "GEMM"]:
        assert op in keys


# --- errors -------------------------------------------------------------------------------


def test_ops_without_exporter_are_one_error(tmp_path):
    mod, graph = _sample_graph("add_zero_pass_in_custom_op.py")
    from ge.passes import clear_registered_passes

    clear_registered_passes()
    with pytest.raises(ge.TranslationError, match=r"1 GE op type without an ONNX exporter: AddCustom \(node"):
        ge.onnx.save(graph, tmp_path / "x.onnx")


def test_control_flow_is_an_error_for_save_but_dumps(tmp_path, monkeypatch):
    from ge.es.all import If

    def branch(name, op):
        b = GraphBuilder(name)
        x = b.create_input(0, shape=[2])
        return b.build_and_reset([op(x)])

    b = GraphBuilder("cf")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[2])
    y = If(c, [x], then_branch=branch("t", Relu), else_branch=branch("e", Tanh), output_num=1)
    g = b.build_and_reset([y[0] if isinstance(y, (list, tuple)) else y])
    with pytest.raises(ge.TranslationError, match="If"):
        ge.onnx.save(g, tmp_path / "x.onnx")
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    path = g.dump_to_file(DumpFormat.kOnnx, "v")
    assert path.endswith("_graph_0_v.pbtxt")  # GE's name: protobuf text
    from google.protobuf import text_format

    m = text_format.Parse(open(path).read(), onnx.ModelProto())
    node = next(n for n in m.graph.node if n.op_type == "If")
    assert node.domain == "ge"
    assert {a.name for a in node.attribute} >= {"then_branch", "else_branch"}
    # The .air format keeps control flow exactly.
    g.save_to_air(tmp_path / "cf.air")
    assert Graph.load_from_air(tmp_path / "cf.air").dump_to_stream(DumpFormat.kTxt) == g.dump_to_stream(DumpFormat.kTxt)


def test_export_errors(tmp_path):
    b = GraphBuilder("nonconst_perm")
    x = b.create_input(0, shape=[2, 3])
    p = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    g = b.build_and_reset([Transpose(x, p)])
    with pytest.raises(ge.TranslationError, match="perm .*must be a constant"):
        ge.onnx.save(g, tmp_path / "x.onnx")

    b = GraphBuilder("int_div")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2])
    g = b.build_and_reset([Div(x, x)])
    with pytest.raises(ge.TranslationError, match="integer Div"):
        ge.onnx.save(g, tmp_path / "x.onnx")

    b = GraphBuilder("softmax_axes")
    x = b.create_input(0, shape=[2, 3])
    g = b.build_and_reset([SoftmaxV2(x, axes=[0, 1])])
    with pytest.raises(ge.TranslationError, match="one axis"):
        ge.onnx.save(g, tmp_path / "x.onnx")

    b = GraphBuilder("bad_attr")
    x = b.create_input(0, shape=[2, 3])
    w = b.create_const(np.ones((3, 3), dtype=np.float32))
    g = b.build_and_reset([MatMulV2(x, w, offset_x=3)])
    with pytest.raises(ge.TranslationError, match="offset_x=3 has no ONNX equivalent"):
        ge.onnx.save(g, tmp_path / "x.onnx")

    with pytest.raises(ge.TranslationError, match="No such file|nope"):
        ge.onnx.save(_quickstart(), tmp_path / "nope" / "x.onnx")

    # A dtype attribute edited to a value that is no DataType (found by whole-pipeline fuzzing:
    # it was es-core's ValueError).
    b = GraphBuilder("bad_dtype")
    x = b.create_input(0, shape=[2])
    g = b.build_and_reset([Cast(x, dst_type=DataType.DT_INT32)])
    node = next(n for n in g.get_all_nodes() if n.type == "Cast")
    node.set_attr("dst_type", 77)
    with pytest.raises(ge.TranslationError, match="'dst_type' = 77 is not a DataType"):
        ge.onnx.to_bytes(g)


def test_dump_any_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    g = _quickstart()
    path = g.dump_to_file(DumpFormat.kOnnx)
    assert os.path.basename(path).startswith("ge_onnx_") and path.endswith(".pbtxt")
    from google.protobuf import text_format

    m = text_format.Parse(open(path).read(), onnx.ModelProto())
    types = [n.op_type for n in m.graph.node]
    assert "MatMulV2" in types and "Const" in types and "Data" in types
    assert all(n.domain == "ge" for n in m.graph.node)
    relu = next(n for n in m.graph.node if n.op_type == "Relu")
    assert any(a.name == "_layer" and a.s == b"hidden" for a in relu.attribute)


# --- .air ---------------------------------------------------------------------------------


def _air_round_trip(g: Graph, tmp_path: Path) -> Graph:
    p = tmp_path / f"{g.name}.air"
    g.save_to_air(p)
    back = Graph.load_from_air(p)
    assert back.dump_to_stream(DumpFormat.kTxt) == g.dump_to_stream(DumpFormat.kTxt)
    return back


def test_air_round_trips_examples(tmp_path):
    from ge.passes import clear_registered_passes, run_passes

    graphs = [_quickstart(), _conv_graph(True), _pool_graph(), _shape_graph()]
    for f in SAMPLE_FILES:
        _, g = _sample_graph(f)
        graphs.append(g)
        list(run_passes(g))
        graphs.append(g)
        clear_registered_passes()
    for g in graphs:
        back = _air_round_trip(g, tmp_path)
        if not any(n.type == "AddCustom" for n in g.get_all_nodes()):
            feeds = _inputs(g)
            for a, b in zip(run_graph(back, feeds), run_graph(g, feeds)):
                np.testing.assert_array_equal(a, b)


UNARY = [Relu, Tanh, Sigmoid]


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(range(len(UNARY))), min_size=1, max_size=6),
       shape=st.lists(st.integers(-1, 4), max_size=3),
       attr=st.one_of(st.integers(-2**63, 2**63 - 1), st.text(max_size=5),
                          st.lists(st.integers(-2**63, 2**63 - 1), max_size=3)))
def test_air_round_trip_random_chains(tmp_path_factory, ops, shape, attr):
    b = GraphBuilder("chain")
    x = b.create_input(0, shape=shape)
    for k in ops:
        x = UNARY[k](x)
    g = b.build_and_reset([x])
    g.set_attr("_attr", attr)
    _air_round_trip(g, tmp_path_factory.mktemp("air"))


def test_air_errors(tmp_path):
    bad = tmp_path / "bad.air"
    bad.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(ge.TranslationError, match="not a valid .air file"):
        Graph.load_from_air(bad)
    with pytest.raises(ge.TranslationError, match="missing.air"):
        Graph.load_from_air(tmp_path / "missing.air")
    empty = tmp_path / "empty.air"
    empty.write_bytes(b"")
    with pytest.raises(ge.TranslationError, match="no graph"):
        Graph.load_from_air(empty)
    b = GraphBuilder("reserved")
    x = b.create_input(0, shape=[2])
    g = b.build_and_reset([Relu(x)])
    g.find_node_by_name(g.get_direct_nodes()[-1].name).set_attr("_input_name_key", 1)
    with pytest.raises(ge.TranslationError, match="reserves"):
        g.save_to_air(tmp_path / "r.air")
