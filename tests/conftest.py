import os
import sys

import pytest

# Tests import the installed package (make build); nothing to set up here beyond hypothesis.
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
