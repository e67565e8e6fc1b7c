"""Differential testing (issue 21, point 4): random well-typed graphs built with ``ge.es``,
exported with ``ge.onnx.save``'s exporter (``ge.onnx.to_bytes``), run by ge in graph and eager
mode with 1 and 2 threads and by onnxruntime on the same random inputs; and the other way
round, random ONNX models (``onnxgen.py``) loaded with ``ge.onnx.load``.

The generators and the comparison rule (tolerances, exact tensors) are in ``diffgen.py`` and
``onnxgen.py``. This
file runs a fixed-seed profile ("difftest-ci": derandomized, so every run checks the same
graphs); ``tools/difftest.py --minutes N`` runs the long profile. A failure prints the Python
that builds the graph: make it a named test in ``test_regressions.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import diffgen  # tests/reliability is on sys.path (pytest's rootdir-relative import)
import onnxgen

# Fixed seed, a modest number of examples: about a minute on a 2-core machine.
settings.register_profile(
    "difftest-ci",
    max_examples=4000,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def cases(draw, max_ops: int = 8) -> diffgen.Case:
    return diffgen.generate(diffgen.DrawChooser(draw), max_ops=max_ops)


@settings(settings.get_profile("difftest-ci"))
@given(case=cases())
def test_random_graphs_match_onnxruntime(case):
    diffgen.check_case(case)


@settings(settings.get_profile("difftest-ci"), max_examples=1000)
@given(case=cases(max_ops=3))
def test_small_random_graphs_match_onnxruntime(case):
    """Short graphs: one or two operators between inputs and outputs, so each operator's own
    corner cases (not only their compositions) get examples."""
    diffgen.check_case(case)


@st.composite
def onnx_cases(draw, max_ops: int = 8) -> onnxgen.OnnxCase:
    return onnxgen.generate(diffgen.DrawChooser(draw), max_ops=max_ops)


@settings(settings.get_profile("difftest-ci"), max_examples=3000)
@given(case=onnx_cases())
def test_random_onnx_models_match_onnxruntime(case):
    """The import side: ``ge.onnx.load`` of random ONNX models (Slice, Pad, Gather, norms, Conv
    with auto_pad, ConvTranspose, TopK, ...) against onnxruntime on the same model."""
    try:
        onnxgen.check(case)
    except diffgen.Skip:  # onnxruntime refused the model (its limits, e.g. ConvTranspose sizes)
        assume(False)


def test_seeded_generator_is_deterministic():
    a = diffgen.generate(diffgen.RandomChooser(1234))
    b = diffgen.generate(diffgen.RandomChooser(1234))
    assert repr(a) == repr(b)
    assert a.graph.to_bytes() == b.graph.to_bytes()
    for x, y in zip(a.feeds(), b.feeds()):
        np.testing.assert_array_equal(x, y)


def test_generator_covers_the_operator_families():
    """200 seeded cases together use every family the module promises (a generator that stopped
    producing an operator would make the differential test silently weaker)."""
    seen = set()
    for seed in range(200):
        seen.update(diffgen.generate(diffgen.RandomChooser(seed)).ops)
    families = {
        "broadcasting element-wise": {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Pow"},
        "reductions": {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd", "ReduceMinD"},
        "shape": {"Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten", "Tile", "GatherV2"},
        "concat/split/slice": {"ConcatV2", "ConcatD", "Pack", "Split", "SplitV", "SplitD", "Slice", "SliceD"},
        "matmul": {"MatMulV2", "BatchMatMulV2", "GEMM"},
        "conv/pool": {"Conv2D", "MaxPoolV3", "AvgPoolV2", "MaxPool", "AvgPool"},
        "normalisation": {"SoftmaxV2", "LogSoftmaxV2", "Rsqrt"},
        "logic": {"Greater", "SelectV2", "Cast", "LogicalNot"},
    }
    for name, ops in families.items():
        assert ops <= seen, (name, sorted(ops - seen))
    seen = set()
    for seed in range(300):
        seen.update(onnxgen.generate(diffgen.RandomChooser(seed)).ops)
    for op in [
        "Slice",
        "Pad",
        "Gather",
        "GatherElements",
        "Expand",
        "Split",
        "Conv",
        "ConvTranspose",
        "MaxPool",
        "AveragePool",
        "BatchNormalization",
        "LayerNormalization",
        "InstanceNormalization",
        "GroupNormalization",
        "TopK",
        "CumSum",
        "ArgMax",
        "ReduceLogSumExp",
        "Where",
        "Gemm",
        "MatMul",
        "Trilu",
        "DepthToSpace",
    ]:
        assert op in seen, op


def test_comparison_rule_bites():
    """The rule flags what it must: a value off by more than the tolerance, NaN on one side,
    infinities of different sign, shape and dtype changes; and allows float noise."""
    w = np.array([1.0, -2.0, 1000.0], np.float32)
    assert diffgen.compare(w * (1 + 1e-6), w) is None
    assert diffgen.compare(w + np.float32(0.5), w) is not None
    assert "NaN" in diffgen.compare(np.array([np.nan], np.float32), np.array([0.0], np.float32))
    assert diffgen.compare(np.array([np.inf], np.float32), np.array([-np.inf], np.float32)) is not None
    assert diffgen.compare(w[:2], w) is not None
    assert diffgen.compare(w.astype(np.float64), w) is not None
    assert diffgen.compare(np.array([True]), np.array([False])) is not None
