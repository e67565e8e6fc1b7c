import os
import sys

import pytest

# Tests import the installed package (make build). Here: the hypothesis profile and the fixtures
# tests of several folders share; shared helper modules are tests/common.py and tests/sample_loader.py
# (tests/ is on sys.path: pyproject.toml), per-area ones sit in their folders (kernel_harness.py,
# onnx_harness.py, graph_samples.py, acl_double.py).
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
assert sys.version_info >= (3, 9)


@pytest.fixture
def clean_passes():
    """The pass registry empty before and after the test (``pytest.mark.usefixtures``)."""
    from ge.passes import clear_registered_passes

    clear_registered_passes()
    yield
    clear_registered_passes()
