"""ge.passes.testing.check_equivalence: runs a graph before and after passes on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from ge.es import GraphBuilder
from ge.es.all import Add, Mul, Relu, Sub
from ge.graph import DataType
from ge.passes import PassStage
from ge.passes.testing import check_equivalence, random_inputs
from common import register_add_rewrite

F32 = DataType.DT_FLOAT


pytestmark = pytest.mark.usefixtures("clean_passes")


def graph(dims=(2, -1)):
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=list(dims))
    y = b.create_input(1, data_type=F32, shape=list(dims))
    return b.build_and_reset([Relu(Add(x, y)), Mul(x, 2.0)])


def register_rewrites():
    register_add_rewrite("AddCommute", PassStage.BEFORE_INFER_SHAPE, lambda x, y: Add(y, x),
                         "Right: x + y -> y + x.")
    register_add_rewrite("AddToSub", PassStage.BEFORE_INFER_SHAPE, Sub, "Wrong: x + y -> x - y.")


def test_a_correct_pass_is_equivalent():
    register_rewrites()
    g = graph()
    text = str(g)
    report = check_equivalence(["AddCommute"], g)
    assert report and report.ok and report.rewritten == 1
    assert [o.max_abs_diff for o in report.outputs] == [0.0, 0.0]
    assert str(g) == text, "the graph itself is not changed"
    assert "equivalent" in str(report)


def test_a_wrong_pass_is_caught_with_its_difference():
    register_rewrites()
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    y = np.ones((2, 2), np.float32)
    report = check_equivalence(["AddToSub"], graph(), inputs=[x, y])
    assert not report
    first, second = report.outputs
    assert not first.ok and first.max_abs_diff == pytest.approx(2.0)
    assert second.ok
    assert "NOT equivalent" in str(report) and "DIFFERS" in str(report)


def test_random_inputs_follow_the_descriptions():
    xs = random_inputs(graph((3, -1)), unknown_dim=5)
    assert [a.shape for a in xs] == [(3, 5), (3, 5)] and all(a.dtype == np.float32 for a in xs)
    b = GraphBuilder("u")
    x = b.create_input(0, data_type=F32, shape=[-2])
    with pytest.raises(ValueError, match="unknown rank: give the inputs"):
        random_inputs(b.build_and_reset([Relu(x)]))


def test_the_demo_plugin_is_equivalent(monkeypatch):
    from pathlib import Path

    from ge.es.all import MatMulV2
    from ge.passes import load_pass_plugins, unload_pass_plugins

    monkeypatch.setenv("ASCEND_GE_PY_PASS_PATH", str(Path(__file__).resolve().parents[2] / "examples" / "pass_plugins"))
    unload_pass_plugins()
    load_pass_plugins()
    try:
        b = GraphBuilder("g")
        x = b.create_input(0, data_type=F32, shape=[-1, 4])
        w = b.create_const_float([0.1 * i for i in range(12)], [4, 3])
        bias = b.create_const_float([1.0, -1.0, 0.5], [3])
        g = b.build_and_reset([Relu(MatMulV2(x, w) + bias), MatMulV2(x, w) + 2.0])
        report = check_equivalence(["MatMulBiasFusion"], g)
        assert report.ok and report.rewritten == 1, report
    finally:
        unload_pass_plugins()
