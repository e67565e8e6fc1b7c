"""Loads a file of examples/fusion_pass as a fresh module (its passes register on import)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ge.passes import clear_registered_passes

SAMPLES = Path(__file__).resolve().parent.parent / "examples" / "fusion_pass"


def load_sample(filename: str) -> ModuleType:
    """Clears the pass registry, then imports ``examples/fusion_pass/<filename>``."""
    clear_registered_passes()
    path = SAMPLES / filename
    name = f"_fusion_sample_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
