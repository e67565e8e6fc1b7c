"""ONNX conformance, enforced: every case in the allow-list (tests/onnx/onnx_conformance.json) loads
with ge.onnx.load and matches the expected outputs in both graph modes. The harness and the
promotion script are tools/onnx_conformance.py (``make conformance``).

The ``node-generated`` set is built from the installed onnx package (tools/onnx_node_cases.py,
cached under .cache/), so every clone runs it; the pinned ``node`` set lives outside the
repository (../shared/onnx-node or $GE_ONNX_NODE_DIR) and is collected only where it is present."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import onnx_conformance as oc  # noqa: E402
import onnx_node_cases  # noqa: E402

pytest.importorskip("onnx")

ALLOW = oc.load_allow_list()


def _params():
    out = []
    for s in oc.SETS:
        if not oc.available(s):
            continue  # the pinned node tests are not in this checkout: not collected, not skipped
        for c in ALLOW["passing"].get(s, []):
            out.append(pytest.param(s, c, id=f"{s}/{c}"))
    return out


@pytest.mark.parametrize("set_name,case", _params())
def test_allow_listed_case_passes(set_name, case):
    oc.run_case(set_name, case, ALLOW)


def test_allow_list_is_well_formed():
    assert set(ALLOW["passing"]) == set(oc.SETS)
    for s, names in ALLOW["passing"].items():
        assert names == sorted(set(names)), f"{s}: keep the list sorted and unique"
    for fam in ALLOW["excluded"]:
        assert set(fam) <= {"pattern", "family", "reason", "sets"}, fam
        assert fam["reason"].strip() and fam["family"].strip()
        re.compile(fam["pattern"])
        for s in oc.SETS:
            listed = [c for c in ALLOW["passing"][s] if re.search(fam["pattern"], c)]
            assert not listed, f"{fam['family']}: passing cases match the exclusion: {listed[:5]}"


def test_wheel_sets_are_present():
    """The onnx wheel ships the pytorch-converted, pytorch-operator and simple sets; CI must run them."""
    for s in ("pytorch-converted", "pytorch-operator", "simple"):
        assert oc.cases(s), f"the onnx package has no {s} set"


def test_generated_set_is_complete():
    """The generated set holds every node case of the installed onnx, each with a model and data."""
    d = oc.set_dir("node-generated")
    assert d is not None, "onnx is installed, so the node cases can be generated"
    listed = (d / onnx_node_cases.MARKER).read_text().split()
    assert oc.cases("node-generated") == listed
    assert len(listed) > 1000, f"only {len(listed)} node cases generated"
    for c in listed:
        assert list((d / c).glob("test_data_set_0/output_*.pb")), f"{c}: no expected output"
    missing = sorted(set(ALLOW["passing"]["node-generated"]) - set(listed))
    assert not missing, f"allow-listed cases the installed onnx does not generate: {missing[:5]}"


def _digest(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def test_generated_set_is_reproducible(tmp_path, monkeypatch):
    """A fresh generation (as a fresh clone does it) writes the same bytes as the cache the
    allow-list was checked on: the random inputs come from a seeded generator."""
    cached = oc.set_dir("node-generated")
    monkeypatch.setenv("GE_ONNX_CASE_CACHE", str(tmp_path))
    fresh = onnx_node_cases.cases_dir()
    assert fresh is not None and fresh.parent == tmp_path and fresh.name == cached.name
    assert [p.name for p in tmp_path.iterdir()] == [fresh.name], "a temporary folder was left behind"
    a, b = _digest(cached), _digest(fresh)
    assert a.keys() == b.keys()
    differ = sorted(k for k in a if a[k] != b[k])
    assert not differ, f"regenerated files differ: {differ[:5]}"
