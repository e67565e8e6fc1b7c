"""Operator-module plugins through the entry-point group ge.es.plugins (a real dist-info), loaded
again in this process with ``load_plugins(reload=True)``; tests/es/test_ge_surface.py checks that a
fresh ``import ge.es`` mounts them."""

import importlib
import logging
import sys
import textwrap

import pytest


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    from ge.es import _plugin_loader

    monkeypatch.undo()
    for name in [m for m in sys.modules if m.startswith(("myops_pkg", "brokenops_pkg", "ge.es.myops"))]:
        del sys.modules[name]
    _plugin_loader.load_plugins(reload=True)
    importlib.invalidate_caches()


def install(site, dist, entries, modules):
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text("[ge.es.plugins]\n" + lines)
    for name, src in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(src))
    importlib.invalidate_caches()


def test_plugin_module_is_mounted_and_broken_one_skipped(site, caplog):
    install(site, "myops", {"myops": "myops_pkg"}, {"myops_pkg": """
        from ge.es.all import Relu

        def DoubleRelu(x):
            return Relu(Relu(x))
    """})
    install(site, "brokenops", {"brokenops": "brokenops_pkg"}, {"brokenops_pkg": "raise ImportError('nope')\n"})
    from ge.es import _plugin_loader

    with caplog.at_level(logging.WARNING, logger="ge.es"):
        found = _plugin_loader.load_plugins(reload=True)
    assert "myops" in found and "brokenops" not in found
    assert any(r.levelno == logging.ERROR and "brokenops" in r.getMessage() for r in caplog.records)

    import ge.es
    from ge.es import GraphBuilder

    b = GraphBuilder("g")
    y = ge.es.myops.DoubleRelu(b.create_input(0, shape=[2]))
    assert y.get_producer().type == "Relu"
    mod = importlib.import_module("ge.es.myops")
    assert mod.DoubleRelu is ge.es.myops.DoubleRelu
    with pytest.raises(AttributeError):
        ge.es.brokenops  # noqa: B018
    assert "myops" in ge.es.list_plugins() and ge.es.get_plugin("myops") is mod
    assert ge.es.get_plugin("brokenops") is None


def test_a_reload_unmounts_plugins_that_are_gone(site):
    install(site, "myops", {"myops": "myops_pkg"}, {"myops_pkg": "COUNT = 1\n"})
    import ge.es
    from ge.es import _plugin_loader

    _plugin_loader.load_plugins(reload=True)
    assert ge.es.myops.COUNT == 1 and "ge.es.myops" in sys.modules
    (site / "myops-0.1.dist-info" / "entry_points.txt").unlink()
    importlib.invalidate_caches()
    _plugin_loader.load_plugins(reload=True)
    assert not hasattr(ge.es, "myops") and "ge.es.myops" not in sys.modules
    assert "myops" not in ge.es.list_plugins()


def test_loading_twice_loads_once(site):
    install(site, "myops", {"myops": "myops_pkg"}, {"myops_pkg": "COUNT = 1\n"})
    from ge.es import _plugin_loader

    first = _plugin_loader.load_plugins(reload=True)
    second = _plugin_loader.load_plugins()
    assert first is second and first["myops"].COUNT == 1
