"""Every fusion-pass sample keeps what its example graph computes: ge.passes.testing
check_equivalence runs each example graph on the CPU before and after the sample's passes."""

from __future__ import annotations

from typing import List

import pytest

from ge.graph import Graph
from ge.passes import get_registered_passes
from ge.passes.testing import check_equivalence
from sample_loader import SAMPLE_FILES, load_sample


pytestmark = pytest.mark.usefixtures("clean_passes")


def _example(module) -> List[Graph]:
    if hasattr(module, "build_example_graph"):
        return [module.build_example_graph()]
    if module.__name__.endswith("with_pattern_matcher_config"):
        return [module._demo_graph(0.1, False), module._demo_graph(0.2, False)]
    return [module._demo_graph()]




@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_sample_passes_are_equivalent(sample: str) -> None:
    module = load_sample(sample)
    names = [d.pass_name for d in get_registered_passes()]
    assert names, f"{sample} registers no pass"
    rewritten = 0
    for graph in _example(module):
        # Each pass of the sample on its own, then all of them together.
        for passes in [[n] for n in names] + ([names] if len(names) > 1 else []):
            report = check_equivalence(passes, graph, rtol=1e-4, atol=1e-5)
            assert report.ok, f"{sample} {passes}:\n{report}"
            rewritten += report.rewritten + sum(len(s.fusions) for s in report.stats)
    assert rewritten > 0, f"{sample}: the example graph was never rewritten"
