"""Operators registered at run time (ge.ops) and the `ge` command."""

import inspect
import json
import subprocess
import sys

import pytest

import ge
import ge.ops
from ge.es import GraphBuilder
from ge.graph import DataType

SCALE = {
    "name": "TestScale",
    "doc": "Multiplies by a factor.",
    "inputs": [{"name": "x", "type": "T"}, {"name": "bias", "kind": "optional", "type": "T"}],
    "outputs": [{"name": "y", "type": "T"}],
    "attrs": [{"name": "mode", "type": "String", "required": True},
              {"name": "factor", "type": "Float", "default": 1.0}],
    "type_vars": {"T": ["DT_FLOAT", "DT_FLOAT16"]},
}


def test_registered_op_is_callable_with_ge_rules():
    assert ge.ops.register(SCALE) == ["TestScale"]
    from ge.es.all import TestScale

    sig = inspect.signature(TestScale)
    assert list(sig.parameters) == ["x", "bias", "mode", "factor"]
    assert sig.parameters["mode"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["factor"].default == 1.0
    assert TestScale.__doc__.startswith("Multiplies by a factor.")
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = TestScale(x, mode="fast")
    node = y.get_producer()
    assert node.type == "TestScale" and node.get_attr("factor") == 1.0 and node.get_attr("mode") == "fast"
    assert y._desc[:2] == (int(DataType.DT_FLOAT), [-2])  # no inference rule: unknown rank
    i = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    with pytest.raises(ge.GraphBuildError, match="TestScale: input 'x' has dtype DT_INT32"):
        TestScale(i, mode="fast")
    with pytest.raises(TypeError):
        TestScale(x)  # mode is required


def test_python_inference_rule():
    ge.ops.register(dict(SCALE, name="TestScale2"))
    ge.ops.register_infer("TestScale2", lambda inputs, attrs: [(inputs[0][0], inputs[0][1] + [int(attrs["factor"])])])
    from ge.es.all import TestScale2

    b = GraphBuilder("g")
    y = TestScale2(b.create_input(0, shape=[2, 3]), mode="m", factor=4.0)
    assert y._desc[:2] == (int(DataType.DT_FLOAT), [2, 3, 4])


def test_failing_inference_rule_is_a_shape_inference_error():
    ge.ops.register(dict(SCALE, name="TestScale3"))
    ge.ops.register_infer("TestScale3", lambda inputs, attrs: 1 / 0)
    from ge.es.all import TestScale3

    b = GraphBuilder("g")
    with pytest.raises(ge.ShapeInferenceError, match="TestScale3 .*Python inference rule failed.*division by zero"):
        TestScale3(b.create_input(0, shape=[2]), mode="m")
    with pytest.raises(TypeError):
        ge.ops.register_infer("TestScale3", 42)


def test_reregistering_replaces_the_function():
    ge.ops.register(dict(SCALE, name="TestScale4"))
    from ge.es import all as es_all

    assert "factor" in inspect.signature(es_all.TestScale4).parameters
    changed = dict(SCALE, name="TestScale4", attrs=[{"name": "gain", "type": "Int", "default": 2}])
    ge.ops.register(changed)
    assert list(inspect.signature(es_all.TestScale4).parameters) == ["x", "bias", "gain"]


def test_bad_prototypes_are_errors():
    with pytest.raises(ValueError, match="not valid"):
        ge.ops.register("{not json")
    with pytest.raises(ValueError, match="undeclared type var"):
        ge.ops.register({"name": "Bad", "inputs": [{"name": "x", "type": "U"}], "outputs": []})
    with pytest.raises(AttributeError, match="no such operator"):
        from ge.es import all as es_all

        es_all.NoSuchOperatorAnywhere  # noqa: B018
    with pytest.raises(KeyError):
        ge.ops.get_op("NoSuchOperatorAnywhere")


def test_load_library(tmp_path):
    path = tmp_path / "ops.json"
    path.write_text(json.dumps({"operators": [dict(SCALE, name="TestLibA"), dict(SCALE, name="TestLibB")]}))
    assert ge.ops.load_library(path) == ["TestLibA", "TestLibB"]
    assert {"TestLibA", "TestLibB"} <= set(ge.ops.list_ops())


def run_ge(*args):
    return subprocess.run([sys.executable, "-m", "ge.cli", *args], capture_output=True, text=True, check=False)


def test_cli_ops_list_and_show():
    out = run_ge("ops", "list")
    assert out.returncode == 0 and "MatMulV2" in out.stdout.split()
    out = run_ge("ops", "show", "ConcatD")
    assert out.returncode == 0
    assert "concat_dim" in out.stdout and "required" in out.stdout and "derived: len(x)" in out.stdout
    out = run_ge("ops", "show", "Nope")
    assert out.returncode == 1 and "unknown operator" in out.stderr


def test_cli_codegen(tmp_path):
    lib = tmp_path / "lib.json"
    lib.write_text(json.dumps({"version": "1.0", "operators": [dict(SCALE, name="PkgScale")]}))
    out = run_ge("codegen", "--ops", str(lib), "--out", str(tmp_path / "myops"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "myops" / "ops" / "pkg_scale.py").exists() and (tmp_path / "myops" / "all.pyi").exists()


REGOP = """
// A custom op as GE users write it.
REG_OP(AddZeroLike)
    .INPUT(x, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16}))
    .ATTR(alpha, Float, 1.0)
    .REQUIRED_ATTR(mode, String)
    .OP_END_FACTORY_REG(AddZeroLike)
"""


def test_register_regop_and_build_with_it():
    assert ge.ops.register_regop(REGOP) == ["AddZeroLike"]
    from ge.es.all import AddZeroLike

    assert list(inspect.signature(AddZeroLike).parameters) == ["x", "bias", "mode", "alpha"]
    b = GraphBuilder("g")
    y = AddZeroLike(b.create_input(0, shape=[2]), mode="m")
    assert y.get_producer().type == "AddZeroLike" and y.get_producer().get_attr("alpha") == 1.0
    i = b.create_input(1, data_type=DataType.DT_INT64, shape=[2])
    with pytest.raises(ge.GraphBuildError, match="AddZeroLike: input 'x' has dtype DT_INT64"):
        AddZeroLike(i, mode="m")


def test_malformed_regop_names_the_line():
    with pytest.raises(ValueError, match=r"line 3"):
        ge.ops.register_regop("REG_OP(Bad)\n    .INPUT(x, TensorType({DT_FLOAT}))\n    .OUTPUT(y TensorType({DT_FLOAT}))\n"
                              "    .OP_END_FACTORY_REG(Bad)\n")


def test_cli_import_regop(tmp_path):
    src = tmp_path / "my_ops.h"
    src.write_text(REGOP)
    out = run_ge("ops", "import-regop", str(src), "--out", str(tmp_path / "lib.json"))
    assert out.returncode == 0, out.stderr
    lib = json.loads((tmp_path / "lib.json").read_text())
    assert [o["name"] for o in lib["operators"]] == ["AddZeroLike"]
    bad = tmp_path / "bad.h"
    bad.write_text("REG_OP(X).INPUT(x TensorType({DT_FLOAT})).OP_END_FACTORY_REG(X)")
    out = run_ge("ops", "import-regop", str(bad))
    assert out.returncode == 1 and "line 1" in out.stderr


def test_generated_package_registers_its_library_and_builds(tmp_path, monkeypatch):
    lib = tmp_path / "lib.json"
    lib.write_text(json.dumps({"version": "1.0", "operators": [dict(SCALE, name="PkgOnlyScale")]}))
    out = run_ge("codegen", "--ops", str(lib), "--out", str(tmp_path / "pkgops"))
    assert out.returncode == 0, out.stderr
    assert 'ge.es.plugins"] pkgops = "pkgops"' in out.stdout
    assert "PkgOnlyScale" not in ge.ops.list_ops()
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    pkgops = importlib.import_module("pkgops")  # registers the prototypes on import
    assert "PkgOnlyScale" in ge.ops.list_ops() and "PkgOnlyScale" in pkgops.__all__
    b = GraphBuilder("g")
    y = pkgops.PkgOnlyScale(b.create_input(0, shape=[2]), mode="m")
    assert y.get_producer().type == "PkgOnlyScale"
