"""Loads a file of examples/fusion_pass as a fresh module (its passes register on import)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import List

from ge.passes import clear_registered_passes

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "fusion_pass"
# The samples' shared helpers (imported by them, not a sample itself).
HELPER = "sample_common.py"


def sample_files() -> List[str]:
    """The file names of the samples, sorted (every ``*.py`` of the folder but the helper)."""
    return sorted(p.name for p in SAMPLES.glob("*.py") if p.name != HELPER)

# Every sample, in the order of the examples' README: MatMul + Add -> GEMM (three styles),
# Add(x, 0) removal (two), the grouped-Conv2D decomposition, then the BatchMatMul, Tile, Concat,
# data-format and MMoE rewrites.
SAMPLE_FILES = [
    "fuse_matmul_add_pass.py",
    "fuse_matmul_add_pass_with_capture_tensor.py",
    "fuse_matmul_add_pass_with_pattern_matcher_config.py",
    "add_zero_pass.py",
    "add_zero_pass_in_custom_op.py",
    "decompose_grouped_conv_pass.py",
    "batch_matmul_flatten_pass.py",
    "remove_redundant_tile_pass.py",
    "batch_matmul_to_mul_reduce_pass.py",
    "move_relu_before_concat_pass.py",
    "modify_conv_data_format_pass.py",
    "mmoe_matmul_merge_pass.py",
    "mmoe_bmm_split_pass.py",
]


def load_sample(filename: str) -> ModuleType:
    """Clears the pass registry, then imports ``examples/fusion_pass/<filename>`` with that folder on
    ``sys.path``, as running the sample as a script puts it (the samples import ``sample_common``)."""
    if str(SAMPLES) not in sys.path:
        sys.path.insert(0, str(SAMPLES))
    clear_registered_passes()
    path = SAMPLES / filename
    name = f"_fusion_sample_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
