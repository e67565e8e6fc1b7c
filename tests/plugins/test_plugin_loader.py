"""ge._internal.plugin_loader: GE's shared loader for path-list plugin variables
(ASCEND_CUSTOM_OPP_PATH), and the per-file isolation beside it."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from ge._internal import plugin_loader as pl

ENV = "GE_TEST_PLUGIN_LOADER_PATH"
KIND = "python test plugin"


def _prefix() -> str:
    return f"_ge_test_loader_{uuid.uuid4().hex[:8]}_"


def _write(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body).strip() + "\n", encoding="utf-8")
    return path


def _counter_plugin(path: Path, tag: str) -> Path:
    # Each import appends to a list kept on the test module, so double imports are visible.
    return _write(
        path,
        f"""
        import sys
        sys.modules["{__name__}"].IMPORTS.append("{tag}")
        TAG = "{tag}"
        """,
    )


IMPORTS: list = []


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    IMPORTS.clear()
    before = set(sys.modules)
    yield
    IMPORTS.clear()
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        if module is not None and str(getattr(module, "__file__", "") or "").startswith("/tmp"):
            pl.forget_loaded_module(module)


def test_normalize_path_list():
    assert pl.normalize_path_list("") == []
    assert pl.normalize_path_list(f" a {os.pathsep}{os.pathsep} b{os.pathsep} ") == ["a", "b"]


def test_file_is_imported_once_per_canonical_path(tmp_path, monkeypatch):
    p = _counter_plugin(tmp_path / "one.py", "one")
    link = tmp_path / "alias.py"
    link.symlink_to(p)
    monkeypatch.setenv(ENV, os.pathsep.join([str(p), str(link), str(p)]))
    prefix = _prefix()
    mods = pl.load_plugins_from_env(ENV, module_prefix=prefix, plugin_kind=KIND)
    assert len(mods) == 1 and mods[0].TAG == "one"
    assert mods[0].__name__.startswith(prefix + "one_")
    # A second load (and another plugin kind with another prefix) gets the same module object.
    again = pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind="other kind")
    assert [id(m) for m in again] == [id(mods[0])]
    assert IMPORTS == ["one"]


def test_directory_scan_order_packages_and_private_names(tmp_path, monkeypatch):
    _counter_plugin(tmp_path / "b_plugin.py", "b")
    _counter_plugin(tmp_path / "a_plugin.py", "a")
    _counter_plugin(tmp_path / "_private.py", "private")
    (tmp_path / "notes.txt").write_text("not a plugin")
    pkg_name = f"pkg_{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / pkg_name
    pkg.mkdir()
    _counter_plugin(pkg / "__init__.py", "pkg")
    (tmp_path / "no_init_dir").mkdir()
    monkeypatch.setenv(ENV, str(tmp_path))
    mods = pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    assert [m.TAG for m in mods] == ["a", "b", "pkg"]
    assert mods[2].__name__ == pkg_name
    assert str(tmp_path) not in sys.path  # the scan's sys.path entry is removed again
    # A symlinked alias of the package directory imports nothing new.
    (tmp_path / (pkg_name + "_alias")).symlink_to(pkg, target_is_directory=True)
    again = pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    assert [m.TAG for m in again] == ["a", "b", "pkg"]
    assert sorted(IMPORTS) == ["a", "b", "pkg"]


def test_missing_path_raises_ge_message(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "nowhere.py"))
    with pytest.raises(FileNotFoundError, match="python test plugin path does not exist"):
        pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)


def test_non_py_file_raises_ge_message(tmp_path, monkeypatch):
    f = tmp_path / "plugin.txt"
    f.write_text("x = 1\n")
    monkeypatch.setenv(ENV, str(f))
    with pytest.raises(ValueError, match=r"python test plugin file must end with \.py"):
        pl.scan_modules_from_path(str(f), module_prefix=_prefix(), plugin_kind=KIND)


def test_plugin_exception_propagates_and_leaves_no_module(tmp_path, monkeypatch):
    bad = _write(tmp_path / "bad.py", "raise RuntimeError('boom in plugin')")
    monkeypatch.setenv(ENV, str(bad))
    prefix = _prefix()
    with pytest.raises(RuntimeError, match="boom in plugin"):
        pl.load_plugins_from_env(ENV, module_prefix=prefix, plugin_kind=KIND)
    assert not [k for k in sys.modules if k.startswith(prefix)]


def test_package_name_taken_by_another_module_is_refused(tmp_path, monkeypatch):
    pkg = tmp_path / "json"  # the standard library's json is already imported
    pkg.mkdir()
    _counter_plugin(pkg / "__init__.py", "fake_json")
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(ImportError, match="already taken"):
        pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    assert IMPORTS == []


def test_isolated_load_skips_failures_and_warns_naming_the_file(tmp_path, monkeypatch):
    _counter_plugin(tmp_path / "a_good.py", "a")
    bad = _write(tmp_path / "b_bad.py", "import sys\nraise ValueError('broken plugin')")
    _counter_plugin(tmp_path / "c_good.py", "c")
    missing = tmp_path / "missing_dir"
    txt = tmp_path / "other.txt"
    txt.write_text("")
    monkeypatch.setenv(ENV, os.pathsep.join([str(tmp_path), str(missing), str(txt)]))
    prefix = _prefix()
    with pytest.warns(pl.PluginLoadWarning) as rec:
        mods, failures = pl.load_plugins_from_env_isolated(ENV, module_prefix=prefix, plugin_kind=KIND)
    assert [m.TAG for m in mods] == ["a", "c"]
    assert [f.path for f in failures] == [bad, missing, txt]
    assert isinstance(failures[0].error, ValueError) and "broken plugin" in str(failures[0].error)
    assert failures[0].module_name is not None and failures[0].module_name.startswith(prefix + "b_bad_")
    assert failures[0].module_name not in sys.modules
    assert isinstance(failures[1].error, FileNotFoundError) and failures[1].module_name is None
    assert isinstance(failures[2].error, ValueError)
    messages = [str(w.message) for w in rec]
    assert any(str(bad) in m and "broken plugin" in m for m in messages)
    assert len(messages) == 3
    # GE's form stops at the same broken file.
    with pytest.raises(ValueError, match="broken plugin"):
        pl.load_plugins_from_env(ENV, module_prefix=prefix, plugin_kind=KIND)


def test_isolated_load_retries_a_fixed_file_and_can_be_silent(tmp_path, monkeypatch, recwarn):
    p = _write(tmp_path / "flaky.py", "raise ImportError('not yet')")
    monkeypatch.setenv(ENV, str(p))
    prefix = _prefix()
    mods, failures = pl.load_plugins_from_env_isolated(
        ENV, module_prefix=prefix, plugin_kind=KIND, warn=False
    )
    assert mods == [] and len(failures) == 1
    assert not [w for w in recwarn if issubclass(w.category, pl.PluginLoadWarning)]
    _counter_plugin(p, "fixed")
    mods, failures = pl.load_plugins_from_env_isolated(ENV, module_prefix=prefix, plugin_kind=KIND)
    assert [m.TAG for m in mods] == ["fixed"] and failures == []


def test_forget_loaded_module_allows_reimport(tmp_path, monkeypatch):
    p = _counter_plugin(tmp_path / "again.py", "again")
    monkeypatch.setenv(ENV, str(p))
    (m,) = pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    pl.forget_loaded_module(m)
    assert m.__name__ not in sys.modules
    (m2,) = pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    assert m2 is not m and IMPORTS == ["again", "again"]


def test_keyboard_interrupt_is_not_swallowed(tmp_path, monkeypatch):
    p = _write(tmp_path / "interrupt.py", "raise KeyboardInterrupt")
    monkeypatch.setenv(ENV, str(p))
    with pytest.raises(KeyboardInterrupt):
        pl.load_plugins_from_env_isolated(ENV, module_prefix=_prefix(), plugin_kind=KIND)


def test_rollback_hooks_get_the_failed_module_name(tmp_path, monkeypatch):
    seen: list = []

    def hook(name):
        seen.append(name)

    pl.add_rollback_hook(hook)
    pl.add_rollback_hook(hook)  # once only
    try:
        _write(tmp_path / "a_bad.py", "raise RuntimeError('bad file')")
        pkg_name = f"badpkg_{uuid.uuid4().hex[:8]}"
        (tmp_path / pkg_name).mkdir()
        _write(tmp_path / pkg_name / "__init__.py", "raise RuntimeError('bad package')")
        _counter_plugin(tmp_path / "c_good.py", "c")
        monkeypatch.setenv(ENV, str(tmp_path))
        prefix = _prefix()
        with pytest.warns(pl.PluginLoadWarning):
            mods, failures = pl.load_plugins_from_env_isolated(ENV, module_prefix=prefix, plugin_kind=KIND)
        assert [m.TAG for m in mods] == ["c"]
        assert seen == [failures[0].module_name, pkg_name]
        assert seen[0].startswith(prefix + "a_bad_")
        seen.clear()
        with pytest.raises(RuntimeError, match="bad file"):  # GE's form rolls back too
            pl.load_plugins_from_env(ENV, module_prefix=prefix, plugin_kind=KIND)
        assert len(seen) == 1 and seen[0].startswith(prefix + "a_bad_")
    finally:
        pl._ROLLBACK_HOOKS.remove(hook)


def test_a_failing_rollback_hook_warns_and_the_import_error_stands(tmp_path, monkeypatch):
    def broken(name):
        raise LookupError("hook broke")

    pl.add_rollback_hook(broken)
    try:
        p = _write(tmp_path / "bad.py", "raise RuntimeError('bad file')")
        monkeypatch.setenv(ENV, str(p))
        with pytest.warns(pl.PluginLoadWarning, match="rollback of plugin module .*LookupError: hook broke"):
            with pytest.raises(RuntimeError, match="bad file"):
                pl.load_plugins_from_env(ENV, module_prefix=_prefix(), plugin_kind=KIND)
    finally:
        pl._ROLLBACK_HOOKS.remove(broken)
    with pytest.raises(TypeError, match="must be callable"):
        pl.add_rollback_hook(42)  # type: ignore[arg-type]
