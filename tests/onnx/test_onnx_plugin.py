"""ge.onnx_plugin: GE's ONNX Plugin API (onnx_plugin, OnnxPlugin.parse_node, OnnxNode, the
registry, bootstrap and bridge) and its use by ge.onnx.load."""

from __future__ import annotations

import os
import textwrap
import uuid
import warnings
from dataclasses import FrozenInstanceError
from pathlib import Path

import ge
import ge.onnx
import ge.onnx_plugin as onnx_plugin_api
import numpy as np
import pytest
from ge._internal.plugin_loader import PluginLoadWarning, forget_loaded_module
from ge.es import GraphBuilder
from ge.es.all import LeakyRelu
from ge.graph import Operator
from ge.onnx_plugin import OnnxNode, OnnxPlugin, bootstrap, onnx_plugin
from ge.onnx_plugin._bridge import call_parse_node, load_and_get_onnx_plugin_descriptors, sync_translators
from ge.onnx_plugin._native import _make_onnx_node
from ge.onnx_plugin.registry import (
    clear_registered_onnx_plugins,
    get_registered_onnx_plugin_by_origin_type,
    get_registered_onnx_plugin_dicts,
    get_registered_onnx_plugins,
)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_harness import graph_model, run_graph, vi  # noqa: E402

ENV = bootstrap.ENV_PY_ONNX_PLUGIN_PATH


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    clear_registered_onnx_plugins()
    sync_translators()
    yield
    clear_registered_onnx_plugins()
    sync_translators()


def _plugin(source="Source", domain="test.domain", opsets=(1,), target="Target"):
    return onnx_plugin(source=source, domain=domain, opsets=opsets, target=target)


def _model(nodes, inputs, outputs, initializers=(), opsets=(("", 17), ("my.domain", 1))):
    return graph_model(nodes, inputs, outputs, initializers, opsets=opsets).SerializeToString()


def _vi(name, shape=(2, 3), dtype=TensorProto.FLOAT):
    return vi(name, dtype, shape)


def _run(graph, *inputs):
    return run_graph(graph, inputs)


X = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]], np.float32)


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1)).astype(np.float32)


# ---- onnx_plugin, OnnxPlugin.parse_node and the registry ----


def test_public_names_follow_ge():
    assert onnx_plugin_api.__all__ == ["OnnxNode", "OnnxPlugin", "onnx_plugin"]
    for name in ("decompose", "reset", "reload"):
        assert not hasattr(OnnxPlugin, name)


def test_parse_node_registers_one_origin_type_per_normalized_opset():
    plugin = _plugin(source="Elu", domain="ai.onnx", opsets=[13, 11, 13], target="EluTarget")
    assert isinstance(plugin, OnnxPlugin) and get_registered_onnx_plugins() == []

    def parse_elu(node, target):
        del node, target

    assert plugin.parse_node(parse_elu) is parse_elu
    d = parse_elu.__ge_onnx_plugin_descriptor__
    assert (d.source, d.domain, d.opsets, d.target) == ("Elu", "ai.onnx", (11, 13), "EluTarget")
    assert d.origin_types == ("ai.onnx::11::Elu", "ai.onnx::13::Elu")
    assert d.parser_node is parse_elu and d.module_name == __name__
    assert get_registered_onnx_plugins() == [d]
    assert get_registered_onnx_plugin_dicts() == [{
        "descriptor_key": d.descriptor_key, "source": "Elu", "domain": "ai.onnx", "opsets": [11, 13],
        "target": "EluTarget", "origin_types": ["ai.onnx::11::Elu", "ai.onnx::13::Elu"],
        "module_name": __name__,
    }]
    assert get_registered_onnx_plugin_by_origin_type("ai.onnx::13::Elu") is d
    assert get_registered_onnx_plugin_by_origin_type("ai.onnx::12::Elu") is None
    with pytest.raises(FrozenInstanceError):
        d.target = "Changed"


def test_disjoint_opsets_share_a_source_and_overlap_is_refused_atomically():
    first, second = _plugin(opsets=(1, 2)), _plugin(opsets=(3,))

    @first.parse_node
    def parse_legacy(node, target):
        del node, target

    @second.parse_node
    def parse_modern(node, target):
        del node, target

    assert get_registered_onnx_plugin_by_origin_type("test.domain::3::Source").parser_node is parse_modern
    overlapping = _plugin(opsets=(4, 2), target="Other")
    with pytest.raises(ValueError, match="origin type already exists: test.domain::2::Source"):
        @overlapping.parse_node
        def parse_overlapping(node, target):
            del node, target
    assert len(get_registered_onnx_plugins()) == 2
    assert get_registered_onnx_plugin_by_origin_type("test.domain::4::Source") is None
    # The refused plugin can still bind (nothing of it was registered).
    with pytest.raises(ValueError, match="descriptor_key already exists"):
        _plugin(opsets=(1, 2)).parse_node(parse_legacy)


def test_parse_node_binds_once_and_only_python_functions():
    plugin = _plugin()
    with pytest.raises(TypeError, match="expects a Python function"):
        plugin.parse_node(object())
    with pytest.raises(TypeError, match="expects a Python function"):
        plugin.parse_node(len)
    assert get_registered_onnx_plugins() == []

    @plugin.parse_node
    def parse_first(node, target):
        del node, target

    with pytest.raises(ValueError, match="parse_node is already bound"):
        @plugin.parse_node
        def parse_second(node, target):
            del node, target
    assert len(get_registered_onnx_plugins()) == 1


@pytest.mark.parametrize(("field", "value", "message"), [
    ("source", None, "must be a non-empty string"), ("source", "", "must be a non-empty string"),
    ("source", "ai.onnx::Elu", "must not contain '::'"), ("domain", None, "must be a non-empty string"),
    ("domain", "", "must be a non-empty string"), ("domain", "bad::domain", "must not contain '::'"),
    ("target", None, "must be a non-empty string"), ("target", "", "must be a non-empty string"),
    ("target", 3, "must be a non-empty string"),
])
def test_onnx_plugin_rejects_bad_names(field, value, message):
    args = {"source": "Source", "domain": "test.domain", "opsets": (1,), "target": "Target"}
    args[field] = value
    with pytest.raises(TypeError, match=f"onnx_plugin {field} {message}"):
        onnx_plugin(**args)


def test_target_may_contain_the_separator():
    assert isinstance(_plugin(target="ns::Target"), OnnxPlugin)


@pytest.mark.parametrize(("opsets", "exception", "message"), [
    ((), ValueError, "must not be empty"), ((True,), TypeError, "must contain only integers"),
    ((0,), ValueError, "must contain only positive integers"),
    ((-1,), ValueError, "must contain only positive integers"),
    ((1.0,), TypeError, "must contain only integers"),
    ("1", TypeError, "must be a collection of positive integers"),
    ((i for i in (1, 2)), TypeError, "must be a collection of positive integers"),
    (7, TypeError, "must be a collection"),
])
def test_onnx_plugin_rejects_bad_opsets(opsets, exception, message):
    with pytest.raises(exception, match=f"onnx_plugin opsets {message}"):
        _plugin(opsets=opsets)


def test_onnx_plugin_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        onnx_plugin("Source", "test.domain", (1,), "Target")  # type: ignore[misc]


# ---- OnnxNode ----


def test_onnx_node_is_a_read_only_view_made_by_the_importer_only():
    with pytest.raises(TypeError, match="created by the ONNX importer only"):
        OnnxNode()
    node = _make_onnx_node("n", "MyOp", ("a", ""), ("y",), {"alpha": 0.5, "axes": [1, 2], "mode": "m"})
    assert (node.name, node.origin_type, node.inputs, node.outputs) == ("n", "MyOp", ("a", ""), ("y",))
    assert dict(node.attrs) == {"alpha": 0.5, "axes": [1, 2], "mode": "m"}
    with pytest.raises(TypeError):
        node.attrs["alpha"] = 1.0  # type: ignore[index]
    with pytest.raises(AttributeError, match="read-only"):
        node.name = "other"  # type: ignore[misc]
    assert not hasattr(onnx_plugin_api._native, "create_onnx_node")


@pytest.mark.parametrize("value", [np.zeros(2, np.float32), [1, 2.0], [[1]], True])
def test_onnx_node_attrs_take_only_scalars_and_homogeneous_lists(value):
    with pytest.raises(TypeError, match="only supports int, float, string and homogeneous lists"):
        _make_onnx_node("n", "MyOp", (), (), {"bad": value})


def test_onnx_node_attribute_names_must_be_non_empty():
    with pytest.raises(ValueError, match="attribute name must be a non-empty string"):
        _make_onnx_node("n", "MyOp", (), (), {"": 1})


# ---- the bridge: call_parse_node ----


def _leaky_node():
    b = GraphBuilder("g")
    y = LeakyRelu(b.create_input(0, shape=[2]))
    return b, y.get_producer()


def test_call_parse_node_dispatches_to_the_callback_with_an_operator():
    plugin = _plugin(target="LeakyRelu")
    seen = {}

    @plugin.parse_node
    def parse_source(node, target):
        seen["node"], seen["target"] = node, target
        assert target.type == "LeakyRelu"
        target.set_attr("negative_slope", node.attrs["alpha"])

    node = _make_onnx_node("src", "Source", ("x",), ("y",), {"alpha": 0.25})
    _b, handle = _leaky_node()
    assert call_parse_node("test.domain::1::Source", node, handle) is None
    assert seen["node"] is node and isinstance(seen["target"], Operator)
    assert handle.get_attr("negative_slope") == pytest.approx(0.25)
    with pytest.raises(RuntimeError, match="only valid inside parse_node"):
        _ = seen["target"].name


def test_call_parse_node_errors():
    node = _make_onnx_node("src", "Source", (), (), {})
    _b, handle = _leaky_node()
    with pytest.raises(KeyError, match="not registered: test.domain::1::Missing"):
        call_parse_node("test.domain::1::Missing", node, handle)
    seen = {}

    @_plugin(source="Raises").parse_node
    def parse_raises(node, target):
        seen["target"] = target
        raise LookupError("callback failed")

    @_plugin(source="Returns").parse_node
    def parse_returns(node, target):
        return 0

    with pytest.raises(LookupError, match="callback failed"):
        call_parse_node("test.domain::1::Raises", node, handle)
    with pytest.raises(RuntimeError, match="only valid inside parse_node"):
        seen["target"].set_attr("N", 1)
    with pytest.raises(TypeError, match="must return None"):
        call_parse_node("test.domain::1::Returns", node, handle)


# ---- bootstrap: ASCEND_CUSTOM_OPP_PATH ----


def _write_plugin(path: Path, source: str, extra: str = "") -> Path:
    path.write_text(textwrap.dedent(f"""
        from ge.onnx_plugin import onnx_plugin

        plugin = onnx_plugin(source="{source}", domain="my.domain", opsets=(1,), target="Elu")

        @plugin.parse_node
        def parse(node, target):
            target.set_attr("alpha", node.attrs.get("alpha", 1.0))
        """).lstrip() + textwrap.dedent(extra), encoding="utf-8")
    return path


@pytest.fixture
def plugin_dir(tmp_path):
    yield tmp_path
    import sys
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", "") or "").startswith(str(tmp_path)):
            forget_loaded_module(module)


def test_load_onnx_plugins_from_files_directories_and_packages(plugin_dir, monkeypatch):
    tag = uuid.uuid4().hex[:6]
    f = _write_plugin(plugin_dir / "file_plugin.py", f"File{tag}")
    d = plugin_dir / "dir"
    d.mkdir()
    _write_plugin(d / "a.py", f"A{tag}")
    pkg = d / f"pkg_{tag}"
    pkg.mkdir()
    _write_plugin(pkg / "__init__.py", f"Pkg{tag}")
    (d / "alias.py").symlink_to(f)
    monkeypatch.setenv(ENV, os.pathsep.join([str(f), str(d)]))
    modules = bootstrap.load_onnx_plugins()
    assert len(modules) == 3
    expected = sorted([f"File{tag}", f"A{tag}", f"Pkg{tag}"])
    assert sorted(p.source for p in get_registered_onnx_plugins()) == expected
    assert bootstrap.load_onnx_plugins() == modules  # each file once
    assert sorted(x["source"] for x in load_and_get_onnx_plugin_descriptors()) == sorted(
        [f"File{tag}", f"A{tag}", f"Pkg{tag}"])


def test_load_onnx_plugins_rejects_a_missing_path(monkeypatch):
    monkeypatch.setenv(ENV, "/path/not/exist/onnx_plugin.py")
    with pytest.raises(FileNotFoundError, match="python ONNX Plugin path does not exist"):
        bootstrap.load_onnx_plugins()


def test_isolated_load_rolls_back_a_broken_file(plugin_dir, monkeypatch):
    _write_plugin(plugin_dir / "a_broken.py", "Broken", "raise RuntimeError('broken after registering')\n")
    _write_plugin(plugin_dir / "b_good.py", "Good")
    monkeypatch.setenv(ENV, str(plugin_dir))
    with pytest.warns(PluginLoadWarning, match=r"a_broken\.py.*broken after registering"):
        modules, failures = bootstrap.load_onnx_plugins_isolated()
    assert len(modules) == 1 and [f.path.name for f in failures] == ["a_broken.py"]
    assert [p.source for p in get_registered_onnx_plugins()] == ["Good"]


# ---- ge.onnx.load through plugins ----


def test_custom_domain_node_imports_through_a_registered_plugin_and_runs():
    plugin = _plugin(source="ScaledElu", domain="my.domain", opsets=(1,), target="Elu")
    seen = {}

    @plugin.parse_node
    def parse_scaled_elu(node, target):
        seen["view"] = (node.name, node.origin_type, node.inputs, node.outputs, dict(node.attrs))
        target.set_attr("alpha", node.attrs["alpha"])

    m = _model([helper.make_node("ScaledElu", ["x"], ["y"], domain="my.domain", name="se", alpha=0.5)],
               [_vi("x")], [_vi("y")])
    g = ge.onnx.load(m)
    assert "Elu" in [n.type for n in g.get_direct_nodes()]
    assert seen["view"] == ("se", "ScaledElu", ("x",), ("y",), {"alpha": 0.5})
    np.testing.assert_allclose(_run(g, X)[0], _elu(X, 0.5), rtol=1e-6)
    assert "my.domain::ScaledElu" in ge.onnx.translator_keys()


def test_plugins_on_ascend_custom_opp_path_feed_onnx_load(plugin_dir, monkeypatch):
    counter = plugin_dir / "imports.txt"
    _write_plugin(plugin_dir / "elu_plugin.py", "ScaledElu",
                  f"open({str(counter)!r}, 'a').write('x')\n")
    monkeypatch.setenv(ENV, str(plugin_dir))
    node = helper.make_node("ScaledElu", ["x"], ["y"], domain="my.domain", alpha=2.0)
    m = _model([node], [_vi("x")], [_vi("y")])
    np.testing.assert_allclose(_run(ge.onnx.load(m), X)[0], _elu(X, 2.0), rtol=1e-6)
    ge.onnx.load(m)
    assert counter.read_text() == "x"  # imported once
    # Once the plugins are gone, the node has no translator again.
    monkeypatch.delenv(ENV)
    clear_registered_onnx_plugins()
    with pytest.raises(ge.TranslationError, match="ScaledElu"):
        ge.onnx.load(m)


def test_a_broken_plugin_file_does_not_stop_onnx_load(plugin_dir, monkeypatch):
    (plugin_dir / "a_broken.py").write_text("raise ImportError('missing dependency')\n")
    _write_plugin(plugin_dir / "b_elu.py", "ScaledElu")
    monkeypatch.setenv(ENV, str(plugin_dir))
    m = _model([helper.make_node("ScaledElu", ["x"], ["y"], domain="my.domain")], [_vi("x")], [_vi("y")])
    with pytest.warns(PluginLoadWarning, match="missing dependency"):
        g = ge.onnx.load(m)
    # A session loads the same path for ge.custom_op, which may warn about the file too.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginLoadWarning)
        np.testing.assert_allclose(_run(g, X)[0], _elu(X, 1.0), rtol=1e-6)


def test_dynamic_inputs_map_in_order_and_counts_follow_the_node():
    @_plugin(source="JoinRows", domain="my.domain", target="ConcatV2").parse_node
    def parse_join(node, target):
        target.register_dynamic_input("x", len(node.inputs) - 1)
        target.set_attr("N", len(node.inputs) - 1)

    axis = numpy_helper.from_array(np.array(0, np.int32), "axis")
    m = _model([helper.make_node("JoinRows", ["a", "b", "c", "axis"], ["y"], domain="my.domain")],
               [_vi("a"), _vi("b"), _vi("c")], [_vi("y", shape=(6, 3))], [axis])
    a, b, c = X, X + 1, X * 2
    np.testing.assert_array_equal(_run(ge.onnx.load(m), a, b, c)[0], np.concatenate([a, b, c]))


def test_dynamic_outputs_take_the_node_output_count():
    @_plugin(source="Halves", domain="my.domain", target="Split").parse_node
    def parse_halves(node, target):
        target.set_attr("num_split", len(node.outputs))

    dim = numpy_helper.from_array(np.array(1, np.int32), "dim")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    m = _model([helper.make_node("Halves", ["dim", "x"], ["y0", "y1"], domain="my.domain")],
               [_vi("x", shape=(2, 4))], [_vi("y0", shape=(2, 2)), _vi("y1", shape=(2, 2))], [dim])
    y0, y1 = _run(ge.onnx.load(m), x)
    np.testing.assert_array_equal(y0, x[:, :2])
    np.testing.assert_array_equal(y1, x[:, 2:])


def test_a_default_domain_plugin_overrides_the_builtin_and_other_opsets_fall_back():
    @_plugin(source="Relu", domain="ai.onnx", opsets=(14,), target="LeakyRelu").parse_node
    def parse_relu(node, target):
        target.set_attr("negative_slope", 0.1)

    def model(opset):
        return _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], opsets=(("", opset),))

    np.testing.assert_allclose(_run(ge.onnx.load(model(14)), X)[0], np.where(X > 0, X, 0.1 * X), rtol=1e-6)
    # Opset 17 has no plugin: the built-in Relu translator runs.
    np.testing.assert_array_equal(_run(ge.onnx.load(model(17)), X)[0], np.maximum(X, 0))


@pytest.mark.parametrize(("target", "parse", "message"), [
    ("Cast", "pass", "did not set the required attribute 'dst_type'"),
    ("NoSuchOpType", "pass", "target op type 'NoSuchOpType' has no operator prototype"),
    ("Elu", "target.register_dynamic_input('x', 1)", "declares inputs by its prototype"),
    ("Elu", "return 1", "must return None"),
    ("Elu", "raise LookupError('bad node')", "LookupError: bad node"),
])
def test_import_errors_name_the_plugin_and_reason(target, parse, message):
    ns: dict = {}
    exec(textwrap.dedent(f"""
        def parse(node, target):
            {parse}
        """), ns)
    _plugin(source="Op", domain="my.domain", target=target).parse_node(ns["parse"])
    m = _model([helper.make_node("Op", ["x"], ["y"], domain="my.domain")], [_vi("x")], [_vi("y")])
    with pytest.raises(ge.TranslationError, match=message):
        ge.onnx.load(m)


def test_unregistered_opset_of_a_custom_op_is_refused():
    @_plugin(source="ScaledElu", domain="my.domain", opsets=(2, 3), target="Elu").parse_node
    def parse(node, target):
        del node, target

    m = _model([helper.make_node("ScaledElu", ["x"], ["y"], domain="my.domain")], [_vi("x")], [_vi("y")])
    with pytest.raises(ge.TranslationError,
                       match=r"not registered: my.domain::1::ScaledElu.*opsets \[2, 3\]"):
        ge.onnx.load(m)


def test_too_many_inputs_and_outputs_are_refused():
    @_plugin(source="Op", domain="my.domain", target="Elu").parse_node
    def parse(node, target):
        del node, target

    m = _model([helper.make_node("Op", ["x", "x"], ["y"], domain="my.domain")], [_vi("x")], [_vi("y")])
    with pytest.raises(ge.TranslationError, match="has 2 inputs, the target takes 1"):
        ge.onnx.load(m)
    node = helper.make_node("Op", ["x"], ["y", "z"], domain="my.domain")
    m = _model([node], [_vi("x")], [_vi("y"), _vi("z")])
    with pytest.raises(ge.TranslationError, match="declares 2 outputs, the target produces 1"):
        ge.onnx.load(m)


def test_a_tensor_attribute_is_refused_as_ge_does():
    @_plugin(source="Op", domain="my.domain", target="Elu").parse_node
    def parse(node, target):
        del node, target

    t = numpy_helper.from_array(np.zeros(2, np.float32), "t")
    m = _model([helper.make_node("Op", ["x"], ["y"], domain="my.domain", value=t)], [_vi("x")], [_vi("y")])
    with pytest.raises(ge.TranslationError, match="only supports int, float, string and homogeneous lists"):
        ge.onnx.load(m)


def test_attributes_outside_the_prototype_are_set_on_the_node():
    @_plugin(source="Op", domain="my.domain", target="Elu").parse_node
    def parse(node, target):
        target.set_attr("_origin", node.name)

    m = _model([helper.make_node("Op", ["x"], ["y"], domain="my.domain", name="op1")], [_vi("x")], [_vi("y")])
    (elu,) = [n for n in ge.onnx.load(m).get_direct_nodes() if n.type == "Elu"]
    assert elu.get_attr("_origin") == "op1"


def test_example_runs():
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "onnx_plugin" / "run.py"
    env = {k: v for k, v in os.environ.items() if k != ENV}
    r = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "'Elu'" in r.stdout and "matches numpy: ok" in r.stdout


def test_a_file_failing_under_another_loader_leaves_no_plugins(plugin_dir, monkeypatch):
    from ge._internal.plugin_loader import load_plugins_from_env

    p = _write_plugin(plugin_dir / "mixed.py", "Mixed", "raise RuntimeError('custom op part failed')\n")
    monkeypatch.setenv(ENV, str(p))
    with pytest.raises(RuntimeError, match="custom op part failed"):
        load_plugins_from_env(ENV, module_prefix="_ge_test_other_kind_", plugin_kind="python custom op")
    assert get_registered_onnx_plugins() == []
    _write_plugin(p, "Mixed")  # fixed: the ONNX loader imports it afresh
    assert len(bootstrap.load_onnx_plugins()) == 1
    assert [d.source for d in get_registered_onnx_plugins()] == ["Mixed"]


def test_translator_context_names_and_declining_a_node():
    seen = []

    @ge.onnx.register_translator("Relu")
    def decline(ctx):
        seen.append((ctx.input_names, ctx.output_names))
        return NotImplemented

    @ge.onnx.register_translator("my.domain::Nothing")
    def decline_custom(ctx):
        return NotImplemented

    try:
        m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")])
        np.testing.assert_array_equal(_run(ge.onnx.load(m), X)[0], np.maximum(X, 0))
        assert seen == [(("x",), ("y",))]
        m = _model([helper.make_node("Nothing", ["x"], ["y"], domain="my.domain", name="n")],
                   [_vi("x")], [_vi("y")])
        with pytest.raises(ge.TranslationError, match="declined node 'n'.*no built-in translator"):
            ge.onnx.load(m)
    finally:
        ge.onnx.unregister_translator("Relu")
        ge.onnx.unregister_translator("my.domain::Nothing")


def test_a_plugin_can_target_a_python_custom_op_from_the_same_path(plugin_dir, monkeypatch):
    op_type = f"PyAxpyF{uuid.uuid4().hex[:6]}"
    (plugin_dir / "axpy.py").write_text(textwrap.dedent(f"""
        import ctypes

        from ge.custom_op import EagerExecuteOp, get_execute_ctx, register_op, register_op_impl
        from ge.onnx_plugin import onnx_plugin
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="{op_type}")
        def axpy(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
            return TensorDesc(x.shape, x.data_type)

        @register_op_impl(op_type="{op_type}")
        class Axpy(EagerExecuteOp):
            def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
                z = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                n = x.shape_size
                xs, ys, zs = ((ctypes.c_float * n).from_address(t.addr) for t in (x, y, z))
                for i in range(n):
                    zs[i] = alpha * xs[i] + ys[i]

        plugin = onnx_plugin(source="Axpy", domain="my.domain", opsets=(1,), target="{op_type}")

        @plugin.parse_node
        def parse_axpy(node, target):
            target.set_attr("alpha", node.attrs["a"])
        """), encoding="utf-8")
    monkeypatch.setenv(ENV, str(plugin_dir))
    m = _model([helper.make_node("Axpy", ["x", "y"], ["z"], domain="my.domain", a=3.0)],
               [_vi("x"), _vi("y")], [_vi("z")])
    g = ge.onnx.load(m)
    assert op_type in [n.type for n in g.get_direct_nodes()]
    np.testing.assert_allclose(_run(g, X, X + 1)[0], 3.0 * X + X + 1, rtol=1e-6)
