"""ES plugin packages: GE's plugin loader behaviour (``ge.es._plugin_loader``), the installable
package ``ge codegen --module_name NAME`` writes (GE's ``es_<NAME>`` layout, entry point
``NAME = es_NAME:get_module`` of ``ge.es.plugins``), operators registered at run time mounted as
``ge.es.<name>``, and the round trip REG_OP header -> package -> pip install -> ``from
ge.es.custom import Op`` -> build -> run, in a fresh interpreter (also examples/es_plugin_package)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import logging
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, List
from unittest import mock

import pytest

import ge
import ge.es
import ge.ops
from ge.codegen import generate_package, runtime_namespace
from ge.es import GraphBuilder, get_plugin, list_plugins
from ge.es import _plugin_loader
from ge.es._plugin_loader import (
    _coerce_to_module,
    _iter_plugin_entry_points,
    load_all_plugins,
    mount_runtime_ops,
    register_missing_operators,
    unmount_runtime_ops,
)
from common import float_regop

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "es_plugin_package"


def python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def shape(fn: Any) -> tuple:
    """A function's parameters and the name of its return type."""
    sig = inspect.signature(fn)
    ret = sig.return_annotation
    return str(sig.replace(return_annotation=inspect.Signature.empty)), getattr(ret, "__name__", str(ret))


def run_ge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([python(), "-m", "ge.cli", *args], capture_output=True, text=True, timeout=120)


# ---- GE's plugin loader (its es_plugin_test.py's cases) ---------------------------------------


def test_list_and_get_plugin():
    assert isinstance(list_plugins(), list)
    for name in list_plugins():
        assert isinstance(get_plugin(name), types.ModuleType)
    assert get_plugin("nonexistent_plugin_xyz") is None
    assert get_plugin(None) is None


def test_coerce_to_module():
    mod = types.ModuleType("m")
    assert _coerce_to_module(mod, "p") is mod
    assert _coerce_to_module(lambda: mod, "p") is mod
    with mock.patch("importlib.import_module", return_value=mod) as imp:
        assert _coerce_to_module("pkg.mod", "p") is mod
        assert _coerce_to_module(lambda: "pkg.other", "p") is mod
    assert [c.args for c in imp.call_args_list] == [("pkg.mod",), ("pkg.other",)]
    message = (r"^Plugin 'p' returned unexpected type: int\. "
               r"Expected ModuleType, str, or callable returning module\.$")
    with pytest.raises(TypeError, match=message):
        _coerce_to_module(123, "p")


def _selectable(found: List[Any]) -> Any:
    obj = mock.Mock(spec=["select"])
    obj.select.return_value = found
    return obj


@pytest.mark.parametrize("returned", [
    lambda ep: [ep],  # Python 3.10+: entry_points(group=...)
    lambda ep: {"ge.es.plugins": [ep], "other": [object()]},  # a mapping by group
    lambda ep: [TypeError("no group keyword"), _selectable([ep])],  # 3.8/3.9 with select
    lambda ep: [TypeError("no group keyword"), {"ge.es.plugins": [ep]}],  # 3.8/3.9 mapping
], ids=["group", "mapping", "select", "get"])
def test_iter_plugin_entry_points(returned):
    ep = mock.Mock()
    value = returned(ep)
    with mock.patch.object(_plugin_loader, "entry_points") as eps:
        if isinstance(value, list) and value and isinstance(value[0], TypeError):
            eps.side_effect = value
        else:
            eps.return_value = value
        assert _iter_plugin_entry_points() == [ep]


def _entry_point(name: Any, load: Any) -> Any:
    ep = mock.Mock()
    ep.name = name
    ep.value = f"{name}_pkg:get_module"
    if isinstance(load, BaseException):
        ep.load.side_effect = load
    else:
        ep.load.return_value = load
    return ep


@pytest.mark.parametrize("failure", [AttributeError("no get_module"), ImportError("no module"),
                                     ValueError("broken")], ids=lambda e: type(e).__name__)
def test_a_failing_plugin_is_logged_and_the_others_load(failure, caplog, monkeypatch):
    good = types.ModuleType("good_pkg")
    eps = [_entry_point(None, good), _entry_point("broken", failure), _entry_point("goodplug", good)]
    monkeypatch.delitem(sys.modules, "ge.es.goodplug", raising=False)
    with mock.patch.object(_plugin_loader, "_iter_plugin_entry_points", return_value=eps), \
            caplog.at_level(logging.INFO, logger="ge.es"):
        found = load_all_plugins()
        assert found == {"goodplug": good} and sys.modules["ge.es.goodplug"] is good
    monkeypatch.delitem(sys.modules, "ge.es.goodplug")
    levels = {r.levelno for r in caplog.records}
    assert {logging.WARNING, logging.ERROR, logging.INFO} <= levels  # nameless, broken, loaded
    assert any("broken" in r.getMessage() and str(failure) in r.getMessage()
               for r in caplog.records if r.levelno == logging.ERROR)


# ---- the installable package ------------------------------------------------------------------

def example_regop(name: str) -> str:
    """The REG_OP declaration of operator ``name`` in the example's ``custom_ops.h``."""
    header = (EXAMPLE / "custom_ops.h").read_text()
    start = header.index(f"REG_OP({name})")
    end_mark = f".OP_END_FACTORY_REG({name})"
    return header[start:header.index(end_mark, start) + len(end_mark)]


# PkgScaledAdd: the example's ScaledAddCustom (y = x1 + alpha * x2) under another name.
REGOP = "\n" + example_regop("ScaledAddCustom").replace("ScaledAddCustom", "PkgScaledAdd") + """

REG_OP(PkgSplitSign)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT}))
    .OUTPUT(pos, TensorType({DT_FLOAT}))
    .OUTPUT(neg, TensorType({DT_FLOAT}))
    .REQUIRED_ATTR(mode, String)
    .OP_END_FACTORY_REG(PkgSplitSign)

REG_OP(PkgConcat)
    .DYNAMIC_INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .REQUIRED_ATTR(N, Int)
    .OP_END_FACTORY_REG(PkgConcat)
"""

OPS = ["PkgScaledAdd", "PkgSplitSign", "PkgConcat"]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """``ge codegen --regop`` into tmp_path/src, importable from there (not installed)."""
    header = tmp_path / "pkg_ops.h"
    header.write_text(REGOP)
    src = tmp_path / "src"
    r = run_ge("codegen", "--regop", str(header), "--module_name", "pkgtest", "--out", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"generated 9 files in {src}",
                                     f"install it with 'pip install {src}'; it mounts as ge.es.pkgtest"]
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield tmp_path / "src"
    for m in [m for m in sys.modules if m.split(".")[0] == "es_pkgtest"]:
        del sys.modules[m]


def test_the_package_has_ges_layout(package):
    pkg = package / "es_pkgtest"
    assert sorted(p.name for p in pkg.iterdir()) == sorted(
        ["__init__.py", "__init__.pyi", "py.typed", "operators.json", "es_pkgtest_ops.py"]
        + [f"es_{op}.py" for op in OPS])
    toml = (package / "pyproject.toml").read_text().splitlines()
    assert 'name = "es_pkgtest"' in toml and 'version = "1.0.0"' in toml
    section = toml.index('[project.entry-points."ge.es.plugins"]')
    assert toml[section + 1] == 'pkgtest = "es_pkgtest:get_module"'
    assert 'build-backend = "setuptools.build_meta"' in toml
    assert (pkg / "es_pkgtest_ops.py").read_text().count("from .es_Pkg") == 3
    assert [o["name"] for o in json.loads((pkg / "operators.json").read_text())["operators"]] == OPS
    stub = ast.parse((pkg / "__init__.pyi").read_text())
    assert [n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))] == [
        "PkgScaledAdd", "PkgSplitSignOutput", "PkgSplitSign", "PkgConcat", "get_module"]


def test_importing_the_package_registers_its_operators_with_ges_signatures(package):
    es_pkgtest = importlib.import_module("es_pkgtest")
    assert set(OPS) <= set(ge.ops.list_ops())
    assert es_pkgtest.get_module() is es_pkgtest
    assert es_pkgtest.__all__ == ["PkgScaledAdd", "PkgSplitSign", "PkgSplitSignOutput", "PkgConcat"]
    for op in OPS:  # the same signature ge.es.all gives the registered prototype
        assert shape(getattr(es_pkgtest, op)) == shape(runtime_namespace(op)[op])
    assert list(inspect.signature(es_pkgtest.PkgSplitSign).parameters) == ["x", "bias", "mode"]
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    out = es_pkgtest.PkgSplitSign(x, mode="m")
    assert isinstance(out, es_pkgtest.PkgSplitSignOutput) and out.pos.get_producer().type == "PkgSplitSign"
    assert es_pkgtest.PkgConcat([x, x], N=2).get_producer().type == "PkgConcat"
    with pytest.raises(TypeError):
        es_pkgtest.PkgScaledAdd(x, x, 2.0)  # attributes are keyword-only


def test_an_operator_already_registered_keeps_its_prototype(tmp_path):
    name = "PkgKeepProto"
    io = ".INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT}))"
    ge.ops.register_regop(f"REG_OP({name}){io}.ATTR(k, Int, 1).OP_END_FACTORY_REG({name})")
    before = ge.ops.get_op(name)
    library = json.loads(ge.ops.regop_to_json(
        f"REG_OP({name}).INPUT(x, TensorType({{DT_FLOAT}})).OUTPUT(y, TensorType({{DT_FLOAT}}))"
        f".ATTR(other, Int, 1).OP_END_FACTORY_REG({name})\n"
        "REG_OP(PkgNewProto).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT}))"
        ".OP_END_FACTORY_REG(PkgNewProto)"))
    path = tmp_path / "operators.json"
    path.write_text(json.dumps(library))
    assert register_missing_operators(path) in (["PkgNewProto"], [])  # [] when an earlier run registered it
    assert ge.ops.get_op(name) == before and "PkgNewProto" in ge.ops.list_ops()
    assert register_missing_operators(library) == []


@pytest.mark.parametrize("name, message", [
    ("1x", "must be a Python identifier"), ("class", "must be a Python identifier"), ("a-b", "identifier"),
    ("all", "ge.es.all is part of ge.es itself"), ("_x", "is taken"),
])
def test_codegen_refuses_a_bad_module_name(tmp_path, name, message):
    header = tmp_path / "ops.h"
    header.write_text(REGOP)
    r = run_ge("codegen", "--regop", str(header), "--module_name", name, "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and message in r.stderr and r.stderr.startswith("ge codegen: ")
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match=message):
        generate_package({"operators": [{"name": "X"}]}, tmp_path / "o", name)


def test_codegen_input_errors(tmp_path):
    bad = tmp_path / "bad.h"
    bad.write_text("REG_OP(Bad)\n    .INPUT(x TensorType({DT_FLOAT}))\n    .OP_END_FACTORY_REG(Bad)\n")
    r = run_ge("codegen", "--regop", str(bad), "--module_name", "bad", "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and "line 2" in r.stderr
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"operators": []}))
    r = run_ge("codegen", "--ops", str(empty), "--module_name", "empty", "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and "no operators" in r.stderr
    notlib = tmp_path / "notlib.json"
    notlib.write_text("[1, 2]")
    r = run_ge("codegen", "--ops", str(notlib), "--module_name", "x", "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and "not an operator library" in r.stderr
    out = str(tmp_path / "o")
    r = run_ge("codegen", "--regop", str(tmp_path / "missing.h"), "--module_name", "x", "--out", out)
    assert r.returncode == 1 and "missing.h" in r.stderr
    for args in (["--ops", str(empty), "--regop", str(bad)], []):  # exactly one source
        r = run_ge("codegen", *args, "--module_name", "x", "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and "--ops" in r.stderr
    r = run_ge("codegen", "--ops", str(empty), "--module_name", "x", "--package", "y", "--out", out)
    assert r.returncode == 2 and "not allowed with" in r.stderr
    assert not (tmp_path / "o").exists()


# ---- operators registered at run time, as ge.es.<name> ----------------------------------------

RUNTIME_REGOP = float_regop("RtScaleShift", ("y", "z"), ("scale, Float, 2.0",))


@pytest.fixture
def unmount():
    names: List[str] = []
    yield names
    for name in names:
        unmount_runtime_ops(name)


def test_runtime_operators_mount_as_a_module(unmount):
    unmount.append("rtops")
    names = ge.ops.register_regop(RUNTIME_REGOP)
    module = mount_runtime_ops("rtops", names)
    from ge.es.rtops import RtScaleShift, RtScaleShiftOutput  # type: ignore[import-not-found]

    assert module is ge.es.rtops is sys.modules["ge.es.rtops"] is get_plugin("rtops")
    assert "rtops" in list_plugins() and module.__all__ == ["RtScaleShift", "RtScaleShiftOutput"]
    assert shape(RtScaleShift) == shape(runtime_namespace("RtScaleShift")["RtScaleShift"])
    assert RtScaleShift.__module__ == "ge.es.rtops" and "RtScaleShift" in dir(module)
    b = GraphBuilder("g")
    out = RtScaleShift(b.create_input(0, shape=[3]), scale=3.0)
    assert isinstance(out, RtScaleShiftOutput) and out.z.get_producer().get_attr("scale") == 3.0
    # Mounting again adds; a prototype registered again takes effect at once.
    more = ge.ops.register_regop("REG_OP(RtSink).INPUT(x, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(RtSink)")
    assert mount_runtime_ops("rtops", more) is module and module.__all__[-1] == "RtSink"
    ge.ops.register_regop(RUNTIME_REGOP.replace(".ATTR(scale, Float, 2.0)", ".REQUIRED_ATTR(k, Int)"))
    assert list(inspect.signature(ge.es.rtops.RtScaleShift).parameters) == ["x", "k"]
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        ge.es.rtops.Nope  # noqa: B018
    assert unmount_runtime_ops("rtops") and not unmount_runtime_ops("rtops")
    assert "ge.es.rtops" not in sys.modules and not hasattr(ge.es, "rtops") and "rtops" not in list_plugins()


def test_mount_runtime_ops_errors(unmount):
    unmount.append("rterr")
    ge.ops.register_regop(RUNTIME_REGOP)
    with pytest.raises(KeyError, match="unknown operator 'NoSuchOp'"):
        mount_runtime_ops("rterr", ["RtScaleShift", "NoSuchOp"])
    assert "rterr" not in list_plugins() and "ge.es.rterr" not in sys.modules  # nothing mounted
    for name in ("all", "graph_builder", "not valid", "", 3):
        with pytest.raises(ValueError):
            mount_runtime_ops(name, "RtScaleShift")
    for taken in ("GraphBuilder", "math"):  # a name of ge.es, a built-in category
        with pytest.raises(ValueError, match=f"'{taken}' is taken"):
            mount_runtime_ops(taken, "RtScaleShift")



def test_ge_ops_mounts_runtime_operators_as_a_ge_es_module():
    """ge.ops.mount_es_module is the public name of the same mounting (ge-rs's runtime library)."""
    names = ge.ops.register_regop(RUNTIME_REGOP)
    try:
        module = ge.ops.mount_es_module("rtpublic", names)
        from ge.es.rtpublic import RtScaleShift  # type: ignore[import-not-found]

        assert module is ge.es.rtpublic and RtScaleShift.__module__ == "ge.es.rtpublic"
        with pytest.raises(KeyError, match="unknown operator 'NoSuchOp'"):
            ge.ops.mount_es_module("rtpublic", "NoSuchOp")
    finally:
        assert ge.ops.unmount_es_module("rtpublic")
    assert not ge.ops.unmount_es_module("rtpublic") and not hasattr(ge.es, "rtpublic")

# ---- the round trip: header -> package -> pip install -> import -> build -> run ----------------


def _build_and_install(header: Path, module: str, build_dir: Path) -> Path:
    spec = importlib.util.spec_from_file_location("es_plugin_package_build", EXAMPLE / "build_package.py")
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    return builder.build_and_install(header, module, build_dir)


def _run_installed(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([python(), "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, env=env, cwd=str(cwd))


def test_regop_header_to_installed_package_to_a_run(tmp_path):
    import setuptools

    assert tuple(int(p) for p in setuptools.__version__.split(".")[:2]) >= (70, 1), \
        "building the package without network needs setuptools>=70.1 (pip install -e .[test])"
    header = tmp_path / "custom_ops.h"
    header.write_text(REGOP)
    site = _build_and_install(header, "custom", tmp_path / "build")
    installed = sorted(p.name for p in (site / "es_custom").iterdir() if p.name != "__pycache__")
    assert {"__init__.pyi", "py.typed", "operators.json", "es_PkgSplitSign.py"} <= set(installed)
    entry = (site / "es_custom-1.0.0.dist-info" / "entry_points.txt").read_text()
    assert "[ge.es.plugins]" in entry and "custom = es_custom:get_module" in entry
    r = _run_installed(site, """
        import numpy as np
        import ge.es, ge.ops
        from ge.es.custom import PkgScaledAdd, PkgSplitSign
        from ge.es import GraphBuilder
        from ge.session import Session
        import es_custom

        assert ge.es.custom is es_custom is ge.es.get_plugin("custom") and "custom" in ge.es.list_plugins()
        ge.ops.register_kernel("PkgScaledAdd", lambda x1, x2, alpha: x1 + np.float32(alpha) * x2)
        ge.ops.register_kernel("PkgSplitSign", lambda x, bias, mode: (np.maximum(x, 0), np.minimum(x, 0)))
        b = GraphBuilder("g")
        x1, x2 = b.create_input(0, shape=[3]), b.create_input(1, shape=[3])
        parts = PkgSplitSign(PkgScaledAdd(x1, x2, alpha=0.5), mode="m")
        s = Session()
        s.add_graph(1, b.build_and_reset([parts.pos, parts.neg]))
        pos, neg = s.run_graph(1, [np.array([1, -4, 2], np.float32), np.array([2, 2, -6], np.float32)])
        print(pos.numpy().tolist(), neg.numpy().tolist())
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "[2.0, 0.0, 0.0] [0.0, -3.0, -1.0]"


def test_the_example_builds_installs_and_runs(tmp_path):
    site = _build_and_install(EXAMPLE / "custom_ops.h", "custom", tmp_path / "build")
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([python(), str(EXAMPLE / "run.py")], capture_output=True, text=True, timeout=180,
                       env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "pos [3.0, 0.0, 0.0, 0.0] neg [0.0, 0.0, -1.0, -2.0]"
