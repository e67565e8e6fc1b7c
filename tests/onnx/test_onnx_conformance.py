"""ONNX conformance, enforced: every case in the allow-list (tests/onnx/onnx_conformance.json) loads
with ge.onnx.load and matches the expected outputs in both graph modes. The harness and the
promotion script are tools/onnx_conformance.py (``make conformance``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import onnx_conformance as oc  # noqa: E402

pytest.importorskip("onnx")

ALLOW = oc.load_allow_list()


def _params():
    out = []
    for s in oc.SETS:
        for c in ALLOW["passing"].get(s, []):
            out.append(pytest.param(s, c, id=f"{s}/{c}"))
    return out


@pytest.mark.parametrize("set_name,case", _params())
def test_allow_listed_case_passes(set_name, case):
    if oc.set_dir(set_name) is None:
        pytest.skip(f"set {set_name} is not available here (node tests: set GE_ONNX_NODE_DIR)")
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
