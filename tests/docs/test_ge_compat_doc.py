"""Keeps docs/ge-compat.md honest: every name it marks same, extended, differs or host-only is
importable from the module in its row; every name it marks not supported is not (or, where it
exists, raises "not supported" when called)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "ge-compat.md"
PRESENT = {"same", "extended", "differs", "host-only"}
ABSENT = "not supported"
STATUSES = PRESENT | {ABSENT, "internal"}
ROW = re.compile(r"^\| `(?P<module>ge[\w.]*)` \| `(?P<name>[^`]+)` \| (?P<status>[^|]+?) \|")


def _rows() -> List[Tuple[str, str, str]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m["module"], m["name"], m["status"].strip()))
    return rows


def _resolve(module: str, name: str) -> Any:
    """The object `name` (dotted for class members) of `module`; raises ImportError or
    AttributeError when absent. `(module)` stands for the module itself."""
    obj: Any = importlib.import_module(module)
    if name == "(module)":
        return obj
    for part in name.split("."):
        if part not in dir(obj) and not hasattr(obj, part):
            raise AttributeError(f"{module}.{name}: no {part}")
        obj = getattr(obj, part)
    return obj


def _relu_node() -> Any:
    from ge.es.all import Relu
    from ge.es.graph_builder import GraphBuilder

    b = GraphBuilder("compat_probe")
    graph = b.build_and_reset([Relu(b.create_input(0, shape=[2]))])
    return next(n for n in graph.get_all_nodes() if n.type == "Relu")


# Names marked not supported that exist and refuse when called: how to call them.
PROBES: Dict[str, Callable[[Any], Any]] = {
    "ge.utils:GeUtils.check_node_support_on_aicore": lambda f: f(_relu_node()),
}

ROWS = _rows()


def test_the_doc_has_its_tables() -> None:
    assert len(ROWS) > 200
    unknown = sorted({status for _, _, status in ROWS} - STATUSES)
    assert not unknown, f"statuses outside the legend: {unknown}"
    modules = {module.split(".")[1] for module, _, _ in ROWS if "." in module}
    for family in ("es", "graph", "session", "ge_global", "error", "allocator", "passes", "utils",
                   "custom_op", "runtime", "onnx_plugin", "offline_compile", "pyatc", "_capi"):
        assert family in modules, family


@pytest.mark.parametrize("module,name", [(m, n) for m, n, s in ROWS if s in PRESENT],
                         ids=lambda v: str(v))
def test_present_names_import(module: str, name: str) -> None:
    _resolve(module, name)


@pytest.mark.parametrize("module,name", [(m, n) for m, n, s in ROWS if s == ABSENT],
                         ids=lambda v: str(v))
def test_not_supported_names_are_absent_or_refuse(module: str, name: str) -> None:
    try:
        obj = _resolve(module, name)
    except (ImportError, AttributeError):
        return
    probe = PROBES.get(f"{module}:{name}")
    assert probe is not None, f"{module}.{name} is marked not supported but exists"
    with pytest.raises(Exception, match="not supported"):
        probe(obj)
