"""The rest of GE's surface: ge.es categories and plugins, Graph.save_to_air / dump_to_file,
capture_tensor and TensorHolder._get_node_snapshot, ge.utils.GeUtils, and `import ge`."""

import ast
import importlib
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ge
import ge.es
import ge.es.all as es_all
from ge.es import GraphBuilder
from ge.es._categories import CATEGORIES, CATEGORY_OPS, HCCL_OPS, OTHER_OPS, SOURCE_OPS
from ge.es.all import Add, If, LeakyRelu, Relu, TopKV2
from ge.graph import DataType, DumpFormat, Graph, Node
from ge.passes import NodeIo, Pattern, capture_tensor, create_pattern
from ge.utils import GeUtils
from test_es_plugins import install


def run_python(code, extra_path=None):
    """Runs `code` in a fresh interpreter (with `extra_path` first on sys.path); returns stdout."""
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout + r.stderr


def es_functions():
    """The op functions of ge.es.all (not the <Op>Output types)."""
    return {n for n in es_all.__all__ if not isinstance(getattr(es_all, n), type)}


# ---- 1. ge.es.<category> ----


def test_every_operator_has_one_category_or_is_a_source_op():
    placed = [op for cat in CATEGORIES for op in CATEGORY_OPS[cat]]
    assert len(placed) == len(set(placed)), "an operator in two categories"
    assert set(placed) | set(SOURCE_OPS) | set(HCCL_OPS) | set(OTHER_OPS) == es_functions()
    assert not set(placed) & set(SOURCE_OPS) and not set(placed) & set(HCCL_OPS)
    assert not set(placed) & set(OTHER_OPS)
    assert set(CATEGORIES) == {"math", "nn", "cv", "transformer"}


def test_category_table_names_the_modules_of_ge_es_all():
    for cat in CATEGORIES:
        for op, module in CATEGORY_OPS[cat].items():
            assert getattr(importlib.import_module(f"ge.es.ops.{module}"), op) is getattr(es_all, op)


def test_category_modules_expose_exactly_their_operators():
    import ge.es.cv
    import ge.es.math
    import ge.es.nn
    import ge.es.transformer

    for cat, mod in (("math", ge.es.math), ("nn", ge.es.nn), ("cv", ge.es.cv), ("transformer", ge.es.transformer)):
        ops = set(CATEGORY_OPS[cat])
        outputs = {f"{op}Output" for op in ops if hasattr(es_all, f"{op}Output")}
        assert set(mod.__all__) == ops | outputs
        for name in mod.__all__:
            assert getattr(mod, name) is getattr(es_all, name)
        assert ops <= set(dir(mod))
    from ge.es.math import Add as MathAdd, TopKV2Output
    from ge.es.nn import Conv2D, If as NnIf
    from ge.es.cv import Resize

    assert MathAdd is Add and NnIf is If and TopKV2Output is es_all.TopKV2Output
    assert Conv2D is es_all.Conv2D and Resize is es_all.Resize


def test_category_modules_refuse_other_names():
    with pytest.raises(ImportError):
        from ge.es.math import Conv2D  # noqa: F401
    with pytest.raises(ImportError):
        from ge.es.math import AddOutput  # noqa: F401  (Add has one output)
    with pytest.raises(ImportError):
        from ge.es.nn import Data  # noqa: F401  (a source op: ge.es.all only)
    with pytest.raises(AttributeError, match="ge.es.cv' has no attribute 'Relu'"):
        ge.es.cv.Relu  # noqa: B018
    with pytest.raises(ImportError):
        from ge.es.transformer import Relu  # noqa: F401  (ops-nn)
    from ge.es.transformer import MoeGatingTopKSoftmax, MoeGatingTopKSoftmaxOutput

    assert MoeGatingTopKSoftmax is es_all.MoeGatingTopKSoftmax
    assert MoeGatingTopKSoftmaxOutput is es_all.MoeGatingTopKSoftmaxOutput


def test_star_import_of_a_category():
    ns = {}
    exec("from ge.es.cv import *", ns)
    names = {k for k in ns if not k.startswith("__")}
    assert names == set(CATEGORY_OPS["cv"])


def test_a_category_function_builds_the_same_node():
    from ge.es.math import Add as MathAdd
    from ge.es.nn import Relu as NnRelu

    b = GraphBuilder("cat")
    x = b.create_input(0, shape=[2])
    y = NnRelu(MathAdd(x, x))
    assert y.get_producer().type == "Relu"
    assert y.get_producer().get_in_data_nodes_and_port_indexes(0)[0].type == "Add"


def test_import_ge_es_loads_no_operator_module():
    out = run_python("""
        import sys
        import ge.es
        print(sorted(m for m in sys.modules if m.startswith(("ge.es.ops.", "ge.es.all", "ge.es.math",
                                                             "ge.es.nn", "ge.es.cv"))))
        from ge.es.math import Add
        print(sorted(m for m in sys.modules if m.startswith("ge.es.ops.")))
    """)
    first, second = out.splitlines()[:2]
    assert first == "[]"
    assert second == "['ge.es.ops.add']"


# ---- 2. plugins ----


@pytest.fixture
def plugin_site(tmp_path):
    install(tmp_path, "es_custom", {"custom": "custom_ops"}, {"custom_ops": """
        from ge.es.all import Relu

        def DoubleRelu(x):
            return Relu(Relu(x))
    """})
    install(tmp_path, "es_lazy", {"lazy": "lazy_ops:get_module"}, {"lazy_ops": """
        import types

        def get_module():
            m = types.ModuleType("lazy_generated")
            m.VALUE = 42
            return m
    """})
    install(tmp_path, "es_named", {"named": "named_ops:NAME"}, {"named_ops": "NAME = 'custom_ops'\n"})
    install(tmp_path, "es_broken", {"broken": "broken_ops"}, {"broken_ops": "raise ImportError('nope')\n"})
    install(tmp_path, "es_odd", {"odd": "odd_ops:VALUE"}, {"odd_ops": "VALUE = 3\n"})
    install(tmp_path, "es_shadow", {"all": "custom_ops", "GraphBuilder": "custom_ops"}, {})
    return tmp_path


def test_plugins_are_mounted_when_ge_es_is_imported(plugin_site):
    out = run_python("""
        import logging
        logging.basicConfig(level=logging.WARNING, format="LOG %(levelname)s %(message)s")
        import ge.es
        from ge.es.custom import DoubleRelu
        from ge.es import GraphBuilder

        b = GraphBuilder("g")
        y = DoubleRelu(b.create_input(0, shape=[2]))
        print("type", y.get_producer().type)
        print("plugins", ge.es.list_plugins())
        print("lazy", ge.es.lazy.VALUE, ge.es.get_plugin("lazy").VALUE)
        print("named", ge.es.named is ge.es.custom)
        import ge.es.custom as c
        print("same", c is ge.es.custom is ge.es.get_plugin("custom"))
        print("all", ge.es.all.__name__, ge.es.GraphBuilder.__name__)
        print("broken", hasattr(ge.es, "broken"), ge.es.get_plugin("broken"))
        print("exported", "custom" in ge.es.__all__)
    """, plugin_site)
    lines = out.splitlines()
    assert "type Relu" in lines
    plugins = ast.literal_eval(next(line for line in lines if line.startswith("plugins"))[len("plugins "):])
    # Entry points in the order the environment lists them, then the built-in categories.
    assert set(plugins[:-4]) == {"custom", "lazy", "named"} and plugins[-4:] == ["math", "nn", "cv", "transformer"]
    assert "lazy 42 42" in lines and "named True" in lines and "same True" in lines
    assert "all ge.es.all GraphBuilder" in lines
    assert "broken False None" in lines and "exported True" in lines
    logs = [line for line in lines if line.startswith("LOG")]
    assert any("ERROR" in line and "broken" in line and "nope" in line for line in logs)
    assert any("ERROR" in line and "'odd'" in line and "unexpected type: int" in line for line in logs)
    assert any("ERROR" in line and "'all'" in line for line in logs)
    assert any("ERROR" in line and "'GraphBuilder'" in line for line in logs)


def test_coerce_to_module():
    import types

    from ge.es._plugin_loader import _coerce_to_module

    m = types.ModuleType("m")
    assert _coerce_to_module(m, "p") is m
    assert _coerce_to_module("ge.es.tensor_like", "p") is sys.modules["ge.es.tensor_like"]
    assert _coerce_to_module(lambda: lambda: m, "p") is m
    with pytest.raises(TypeError, match="Plugin 'p' returned unexpected type: int"):
        _coerce_to_module(1, "p")


def test_get_plugin_of_no_plugin():
    assert ge.es.get_plugin("no_such_plugin") is None
    assert ge.es.get_plugin(None) is None
    assert ge.es.get_plugin("math") is sys.modules["ge.es.math"]
    assert {"math", "nn", "cv"} <= set(ge.es.list_plugins())


# ---- 3. save_to_air and dump_to_file ----


def small_graph(name="g"):
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[2, 3])
    return b.build_and_reset([Relu(x + 1.5)])


def test_save_to_air_takes_gee_s_file_path(tmp_path):
    g = small_graph()
    assert g.save_to_air(file_path=str(tmp_path / "a.air")) is None
    assert g.save_to_air(tmp_path / "b.air") is None  # an os.PathLike, beyond GE
    back = Graph.load_from_air(file_path=str(tmp_path / "a.air"))
    assert back.dump_to_stream(DumpFormat.kTxt) == Graph.load_from_air(tmp_path / "b.air").dump_to_stream(
        DumpFormat.kTxt)
    for bad in (3, None, b"x.air"):
        with pytest.raises(TypeError, match="^file_path must be a string$"):
            g.save_to_air(bad)
        with pytest.raises(TypeError, match="^file_path must be a string$"):
            Graph.load_from_air(bad)
    with pytest.raises(RuntimeError, match="^Failed to save graph to AIR format: .*missing"):
        g.save_to_air(str(tmp_path / "missing" / "x.air"))
    with pytest.raises(RuntimeError, match="^Failed to load graph from AIR format: "):
        Graph.load_from_air(str(tmp_path / "missing.air"))


def dump_dir(base):
    return base / f"pid_{os.getpid()}_deviceid_0"


def index_of(path):
    return int(Path(path).name.split("_")[2])


def test_dump_to_file_writes_gee_s_file_names(monkeypatch, tmp_path):
    for var in ("NPU_COLLECT_PATH", "ASCEND_WORK_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    g = small_graph()
    p1 = g.dump_to_file()
    p2 = g.dump_to_file(DumpFormat.kTxt, "after")
    p3 = g.dump_to_file(DumpFormat.kOnnx, 'a/b\\c:d*e?f"g<h>i|j')
    p4 = g.dump_to_file(DumpFormat.kReadable, "again")
    d = dump_dir(tmp_path)
    n1, n2, n3 = index_of(p1), index_of(p2), index_of(p3)
    assert p1 == f"{d}/ge_readable_{n1:08}_graph_0_.txt"
    assert p2 == f"{d}/ge_proto_{n2:08}_graph_0_after.txt"
    assert p3 == f"{d}/ge_onnx_{n3:08}_graph_0_a_b_c_d_e_f_g_h_i_j.pbtxt"
    assert p4 == f"{d}/ge_readable_{n1 + 1:08}_graph_0_again.txt"  # each format counts on its own
    assert open(p1).read() == g.dump_to_stream(DumpFormat.kReadable)
    assert open(p2).read() == g.dump_to_stream(DumpFormat.kTxt)
    assert open(p3).read() == g.dump_to_stream(DumpFormat.kOnnx)
    assert sorted(os.listdir(d)) == sorted(os.path.basename(p) for p in (p1, p2, p3, p4))


def test_dump_to_file_directories(monkeypatch, tmp_path):
    g = small_graph()
    monkeypatch.setenv("NPU_COLLECT_PATH", str(tmp_path / "collect"))
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path / "ignored"))
    p = g.dump_to_file()
    assert os.path.dirname(p) == f"{tmp_path}/collect/extra-info/graph/{os.getpid()}_0"
    monkeypatch.delenv("NPU_COLLECT_PATH")
    monkeypatch.delenv("DUMP_GRAPH_PATH")
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    p = g.dump_to_file()
    assert os.path.dirname(p) == str((tmp_path / "work").resolve()) and os.path.exists(p)
    monkeypatch.delenv("ASCEND_WORK_PATH")
    monkeypatch.chdir(tmp_path)
    p = g.dump_to_file(DumpFormat.kTxt)
    assert p.startswith("./ge_proto_") and (tmp_path / p[2:]).exists()
    assert not (tmp_path / "ignored").exists()


def test_dump_to_file_falls_back_to_the_current_directory(monkeypatch, tmp_path, caplog):
    for var in ("NPU_COLLECT_PATH", "ASCEND_WORK_PATH"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path / "file"))
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="ge"):
        p = small_graph().dump_to_file()
    assert p.startswith("./ge_readable_") and (tmp_path / p[2:]).exists()
    assert any("cannot create the dump directory" in r.getMessage() for r in caplog.records)


def test_dump_to_file_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    g = small_graph()
    with pytest.raises(TypeError, match="^Suffix must be a string$"):
        g.dump_to_file(DumpFormat.kTxt, 3)
    with pytest.raises(TypeError, match=r"^Format must be in \[DumpFormat.kOnnx"):
        g.dump_to_file("kTxt")
    with pytest.raises(RuntimeError, match="Failed to dump graph g to"):
        g.dump_to_file(DumpFormat.kTxt, "x" * 300)  # too long a file name for the file system


def test_a_long_onnx_dump_name_is_cut_as_gee_cuts_it(monkeypatch, tmp_path):
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    p = small_graph().dump_to_file(DumpFormat.kOnnx, "y" * 300)
    name = os.path.basename(p)
    assert len(name) == 248 + len(".pbtxt") and name.endswith("yyy.pbtxt") and os.path.exists(p)


def onnx_graph():
    """Attributes of every kind the dump writes, strings needing escapes, a subgraph."""
    b = GraphBuilder('q"uote\\d\n\'')
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[2])
    t = GraphBuilder("then")
    t.set_graph_output(Relu(t.create_input(0, shape=[2])), 0)
    e = GraphBuilder("else")
    e.set_graph_output(e.create_input(0, shape=[2]) * 1e-07, 0)
    (out,) = If(c, [x], output_num=1, then_branch=t.build_and_reset(), else_branch=e.build_and_reset())
    y = TopKV2(out + b.create_const(np.array([0.5, -2.5e20], dtype=np.float32)), 1, sorted=False)
    return b.build_and_reset([y.values, y.indices])


def test_onnx_dump_is_protobuf_text_as_protobuf_prints_it():
    onnx = pytest.importorskip("onnx")
    from google.protobuf import text_format

    text = onnx_graph().dump_to_stream(DumpFormat.kOnnx)
    model = text_format.Parse(text, onnx.ModelProto())
    assert text_format.MessageToString(model) == text
    assert model.graph.name == 'q"uote\\d\n\''
    types = [n.op_type for n in model.graph.node]
    assert "If" in types and "TopKV2" in types
    node = next(n for n in model.graph.node if n.op_type == "If")
    assert {a.name for a in node.attribute} >= {"then_branch", "else_branch"}


def test_onnx_dump_escapes_non_ascii_as_protobuf_cpp_does():
    """C++'s printer writes the UTF-8 bytes of a string as octal escapes."""
    onnx = pytest.importorskip("onnx")
    from google.protobuf import text_format

    b = GraphBuilder("é")
    text = b.build_and_reset([Relu(b.create_input(0, shape=[1]))]).dump_to_stream(DumpFormat.kOnnx)
    assert '  name: "\\303\\251"\n' in text
    assert text_format.Parse(text, onnx.ModelProto()).graph.name == "é"


def test_float_fields_are_printed_as_protobuf_does():
    """C++'s SimpleFtoa: %.6g, or %.9g where six digits do not read back as the same float."""
    onnx = pytest.importorskip("onnx")
    from google.protobuf import text_format

    b = GraphBuilder("floats")
    x = b.create_input(0, shape=[2])
    slopes = [0.1, 1e-07, 2.5e20, float(np.finfo(np.float32).max), 0.3333333432674408, 100000.0, -1.5]
    g = b.build_and_reset([LeakyRelu(x, negative_slope=s) for s in slopes])
    text = g.dump_to_stream(DumpFormat.kOnnx)
    printed = [line.split(": ")[1] for line in text.splitlines() if line.strip().startswith("f: ")]
    assert printed == ["0.1", "1e-07", "2.5e+20", "3.40282347e+38", "0.333333343", "100000", "-1.5"]
    model = text_format.Parse(text, onnx.ModelProto())
    read = [a.f for n in model.graph.node for a in n.attribute if a.name == "negative_slope"]
    assert read == [np.float32(s) for s in slopes]


# ---- 4. capture_tensor and _get_node_snapshot ----


def test_get_node_snapshot_is_the_producer():
    b = GraphBuilder("snap")
    x = b.create_input(0, shape=[4])
    top = TopKV2(x, 2)
    node = top.indices._get_node_snapshot()
    assert isinstance(node, Node) and node.type == "TopKV2" and node.name == top.values.name
    assert top.values._get_node_snapshot().name == top.indices.get_producer().name


def test_capture_tensor():
    b = GraphBuilder("pat")
    x = b.create_input(0, shape=[4])
    top = TopKV2(x, 2)
    r = Relu(top.values)
    pat = create_pattern(b.build_and_reset([r, top.indices]))
    assert capture_tensor(pat, top.indices) is pat  # a TensorHolder: the output it stands for
    producer = top.indices.get_producer()
    capture_tensor(pat, producer)  # a Node: output 0
    capture_tensor(pat, producer, 1)
    capture_tensor(pat, top.values, 1)  # a TensorHolder and an index: that output of its producer
    capture_tensor(pat, NodeIo(r.get_producer(), 0))
    got = [(io.node.type, io.index) for io in pat.get_captured_tensors()]
    assert got == [("TopKV2", 1), ("TopKV2", 0), ("TopKV2", 1), ("TopKV2", 1), ("Relu", 0)]
    with pytest.raises(TypeError, match="capture_tensor needs a Pattern, got Graph"):
        capture_tensor(Graph("g"), top.values)
    with pytest.raises(ValueError, match="node 'Relu_0' has 1 outputs, no output 3"):
        capture_tensor(pat, r, 3)
    with pytest.raises(TypeError):
        capture_tensor(pat, 5)
    pat.release()
    with pytest.raises(RuntimeError):
        capture_tensor(pat, top.values)
    assert isinstance(pat, Pattern)


# ---- 5. ge.utils ----


def test_infer_shape_sets_the_inputs_and_infers():
    b = GraphBuilder("inf")
    x = b.create_input(0, shape=[-1, 3])
    y = b.create_input(1, shape=[-1, 3])
    g = b.build_and_reset([Relu(Add(x, y))])
    assert GeUtils.infer_shape(g, [[5, 3], [1, 3]]) is None
    relu = next(n for n in g.get_direct_nodes() if n.type == "Relu")
    assert relu.get_output_desc(0).get_shape() == [5, 3]
    data = sorted((n for n in g.get_direct_nodes() if n.type == "Data"), key=lambda n: n.get_attr("index"))
    assert [d.get_output_desc(0).get_shape() for d in data] == [[5, 3], [1, 3]]
    assert data[0].get_output_desc(0).get_origin_shape() == [5, 3]


def test_infer_shape_errors():
    assert GeUtils.infer_shape(Graph("empty"), []) is None
    with pytest.raises(RuntimeError, match="^Failed to infer shape"):
        GeUtils.infer_shape(Graph("empty"), [[1]])
    g = small_graph()
    with pytest.raises(RuntimeError, match="^Failed to infer shape"):
        GeUtils.infer_shape(g, [])  # fewer shapes than inputs
    with pytest.raises(RuntimeError, match="^Failed to infer shape"):
        GeUtils.infer_shape(g, [[2, 3], [2, 3]])  # more
    b = GraphBuilder("bad")
    x = b.create_input(0, shape=[-1, 3])
    bad = b.build_and_reset([Add(x, b.create_const(np.ones((4, 3), dtype=np.float32)))])
    with pytest.raises(RuntimeError, match="^Failed to infer shape: "):
        GeUtils.infer_shape(bad, [[5, 3]])  # 5 and 4 do not broadcast
    for shapes in ("bad", [1, 2], [[1, "bad"]], ([1],)):
        with pytest.raises(TypeError):
            GeUtils.infer_shape(Graph("g"), shapes)
    with pytest.raises(TypeError, match="graph must be a Graph"):
        GeUtils.infer_shape("g", [])


def test_check_node_support_on_aicore_is_not_supported():
    node = small_graph().get_direct_nodes()[0]
    with pytest.raises(RuntimeError, match="^Failed to check node support on AICore: not supported: "):
        GeUtils.check_node_support_on_aicore(node)
    with pytest.raises(TypeError, match="node must be a Node"):
        GeUtils.check_node_support_on_aicore("Relu")


# ---- 6. import ge ----


def test_import_ge_reaches_every_subpackage():
    out = run_python("""
        import sys
        import ge
        print(sorted(m for m in sys.modules if m.startswith("ge.") and m.split(".")[1] in
              {"es", "graph", "session", "passes", "onnx", "ge_global", "utils"}))
        print(ge.es.GraphBuilder.__name__, ge.graph.Graph.__name__, ge.session.Session.__name__,
              ge.passes.FusionBasePass.__name__, ge.onnx.load.__name__, ge.ge_global.GeApi.__name__,
              ge.utils.GeUtils.__name__)
        print(sorted({"es", "graph", "session", "passes", "onnx", "ge_global", "utils"} - set(dir(ge))))
        try:
            ge.nope
        except AttributeError as e:
            print(e)
    """)
    lines = out.splitlines()
    assert lines[0] == "[]"  # `import ge` imports none of them
    assert lines[1] == "GraphBuilder Graph Session FusionBasePass load GeApi GeUtils"
    assert lines[2] == "[]"
    assert lines[3] == "module 'ge' has no attribute 'nope'"


def test_load_from_air_on_an_instance_loads_into_it_as_ge(tmp_path):
    from ge.es.all import Relu

    b = GraphBuilder("saved_graph")
    x = b.create_input(0, shape=[2])
    g = b.build_and_reset([Relu(x)])
    path = str(tmp_path / "g.air")
    assert g.save_to_air(path) is None
    target = Graph("empty_graph")
    assert target.load_from_air(path) is None  # GE's form: into the instance
    assert target.name == "saved_graph"
    assert sorted(n.type for n in target.get_all_nodes()) == ["Data", "Relu"]
    # ge-rs's class form returns a new graph.
    assert Graph.load_from_air(path).name == "saved_graph"
    with pytest.raises(RuntimeError, match="Failed to load graph from AIR format"):
        target.load_from_air(str(tmp_path / "missing.air"))
    assert target.name == "saved_graph"  # a failed load leaves the graph as it was
