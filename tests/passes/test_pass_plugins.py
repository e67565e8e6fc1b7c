"""Pass plugin discovery: ASCEND_GE_PY_PASS_PATH (files, directories, packages) and installed
distributions declaring a ``ge.passes.plugins`` entry point."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

import ge.passes
from ge.passes import bootstrap, clear_registered_passes, get_registered_passes, load_pass_plugins

PLUGIN = textwrap.dedent(
    """
    from ge.passes import FusionBasePass, PassStage, register_fusion_pass

    @register_fusion_pass(name="{name}", stage=PassStage.BEFORE_INFER_SHAPE)
    class {name}(FusionBasePass):
        def run(self, graph, context):
            return True
    """
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(bootstrap.ENV_PY_PASS_PATH, raising=False)
    bootstrap.unload_pass_plugins()
    clear_registered_passes()
    yield
    bootstrap.unload_pass_plugins()
    clear_registered_passes()


def names() -> list:
    return [d.pass_name for d in get_registered_passes()]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_files_directories_and_packages(tmp_path, monkeypatch):
    d = tmp_path / "plugins"
    write(d / "b_pass.py", PLUGIN.format(name="FromFileB"))
    write(d / "a_pass.py", PLUGIN.format(name="FromFileA"))
    write(d / "_private.py", "raise RuntimeError('must not be imported')")
    write(d / "notes.txt", "ignored")
    write(d / "pkgpass" / "__init__.py", PLUGIN.format(name="FromPackage"))
    single = write(tmp_path / "single.py", PLUGIN.format(name="FromSingle"))
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, f"{d}{__import__('os').pathsep}{single}")
    modules = load_pass_plugins()
    # Directory entries in name order, then the file.
    assert names() == ["FromFileA", "FromFileB", "FromPackage", "FromSingle"]
    assert len(modules) == 4
    assert bootstrap.get_plugin_load_errors() == []
    # GE's bootstrap.get_registered_passes returns dicts.
    assert [p["pass_name"] for p in bootstrap.get_registered_passes()] == names()
    # The exported function is the same one.
    assert ge.passes.load_pass_plugins is load_pass_plugins


def test_loading_twice_registers_nothing_twice(tmp_path, monkeypatch):
    write(tmp_path / "p.py", PLUGIN.format(name="Once"))
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(tmp_path))
    load_pass_plugins()
    load_pass_plugins()
    assert names() == ["Once"]


def test_a_failing_plugin_is_reported_and_skipped(tmp_path, monkeypatch):
    write(tmp_path / "a_good.py", PLUGIN.format(name="Good"))
    # Registers one pass, then fails: the pass it registered is removed again.
    write(tmp_path / "b_bad.py", PLUGIN.format(name="HalfDone") + "\nraise ImportError('missing dependency xyz')\n")
    write(tmp_path / "c_good.py", PLUGIN.format(name="AlsoGood"))
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(tmp_path))
    with pytest.warns(bootstrap.PluginLoadWarning, match="b_bad.py.*missing dependency xyz"):
        load_pass_plugins()
    assert names() == ["Good", "AlsoGood"]
    (err,) = bootstrap.get_plugin_load_errors()
    assert "b_bad.py" in err.source and "ImportError" in err.error


def test_a_missing_path_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(tmp_path / "nope"))
    with pytest.warns(bootstrap.PluginLoadWarning, match="does not exist"):
        load_pass_plugins()
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(write(tmp_path / "x.txt", "")))
    with pytest.warns(bootstrap.PluginLoadWarning, match="must end with .py"):
        load_pass_plugins()
    assert names() == []


def test_unload_then_reload_reads_the_environment_again(tmp_path, monkeypatch):
    one, two = tmp_path / "one", tmp_path / "two"
    write(one / "p.py", PLUGIN.format(name="First"))
    write(two / "p.py", PLUGIN.format(name="Second"))
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(one))
    load_pass_plugins()
    assert names() == ["First"]
    monkeypatch.setenv(bootstrap.ENV_PY_PASS_PATH, str(two))
    bootstrap.unload_pass_plugins()
    assert names() == []
    load_pass_plugins()
    assert names() == ["Second"]


def test_installed_distribution_with_an_entry_point(tmp_path, monkeypatch):
    """A real installed distribution: a dist-info with entry_points.txt in a site directory."""
    site = tmp_path / "site"
    write(site / "myco_passes" / "__init__.py", PLUGIN.format(name="FromEntryPoint"))
    write(
        site / "myco_passes" / "hook.py",
        "def register():\n    from . import extra\n",
    )
    write(site / "myco_passes" / "extra.py", PLUGIN.format(name="FromCallable"))
    dist = site / "myco_passes-1.0.dist-info"
    write(dist / "METADATA", "Metadata-Version: 2.1\nName: myco-passes\nVersion: 1.0\n")
    write(
        dist / "entry_points.txt",
        "[ge.passes.plugins]\nmyco = myco_passes\nmyco_extra = myco_passes.hook:register\n",
    )
    write(dist / "RECORD", "")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    try:
        load_pass_plugins()
        assert names() == ["FromEntryPoint", "FromCallable"]
        load_pass_plugins()
        assert names() == ["FromEntryPoint", "FromCallable"]
    finally:
        for m in [m for m in sys.modules if m.startswith("myco_passes")]:
            del sys.modules[m]


def test_a_failing_entry_point_is_skipped(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write(site / "broken_passes.py", "raise RuntimeError('broken at import')\n")
    dist = site / "broken_passes-0.1.dist-info"
    write(dist / "METADATA", "Metadata-Version: 2.1\nName: broken-passes\nVersion: 0.1\n")
    write(dist / "entry_points.txt", "[ge.passes.plugins]\nbroken = broken_passes\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    with pytest.warns(bootstrap.PluginLoadWarning, match="broken at import"):
        load_pass_plugins()
    assert names() == []
    assert "entry_point:broken" in bootstrap.get_plugin_load_errors()[0].source
