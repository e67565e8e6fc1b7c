#!/usr/bin/env python3
"""The ONNX backend node tests of the installed ``onnx`` package, as case directories.

``onnx.backend.test.case.node.collect_testcases()`` builds every node test (model, inputs and
expected outputs) from the onnx package's own Python code, so any clone with the ``onnx`` test
dependency has them. ``cases_dir()`` writes them once, in the layout of onnx's backend test data
(``<case>/model.onnx``, ``<case>/test_data_set_0/input_<i>.pb`` and ``output_<i>.pb``), into a
cache keyed by the onnx and numpy versions: ``.cache/onnx-node-cases/`` in the repository (git
ignores it) or ``$GE_ONNX_CASE_CACHE``. The generation runs in a child process with numpy's global
generator seeded, so the same versions give the same data in every clone.

Usage::

    python tools/onnx_node_cases.py DIR     # write the cases into DIR (what cases_dir() runs)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
# Bump when the written layout changes: older caches are then rebuilt.
CACHE_FORMAT = 1
MARKER = "COMPLETE"


def cache_root() -> Path:
    return Path(os.environ.get("GE_ONNX_CASE_CACHE", str(ROOT / ".cache" / "onnx-node-cases")))


def cache_key() -> Optional[str]:
    """The cache directory's name for the installed onnx and numpy, or None without onnx."""
    try:
        import numpy as np
        import onnx
    except ImportError:
        return None
    return f"onnx-{onnx.__version__}-numpy-{np.__version__}-v{CACHE_FORMAT}"


def cases_dir() -> Optional[Path]:
    """The generated cases of the installed onnx (written on first use), or None without onnx."""
    key = cache_key()
    if key is None:
        return None
    d = cache_root() / key
    if (d / MARKER).is_file():
        return d
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d.parent / f".{key}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(tmp)],
                           check=False, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"generating the ONNX node cases into {tmp} failed:\n{r.stderr[-3000:]}")
        if (d / MARKER).is_file():  # another process finished first
            return d
        shutil.rmtree(d, ignore_errors=True)  # an incomplete leftover
        try:
            os.rename(tmp, d)
        except OSError:
            if not (d / MARKER).is_file():  # not another process's finished copy
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return d


def _proto(value: Any, vi: Any) -> Any:
    """One input or output as the proto onnx's backend data uses for the value's type."""
    from onnx import TensorProto, numpy_helper

    t = vi.type
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vi.name)
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vi.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vi.name)
    return value if isinstance(value, TensorProto) else numpy_helper.from_array(value, vi.name)


def generate(dest: Path) -> int:
    """Writes every node case of the installed onnx under ``dest``; returns how many."""
    import numpy as np

    np.random.seed(0)  # the cases draw their random data from numpy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = collect_testcases()
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError("the onnx package gives two node cases the same name")
    for c in cases:
        case_dir = dest / c.name
        case_dir.mkdir(parents=True)
        (case_dir / "model.onnx").write_bytes(c.model.SerializeToString())
        graph = c.model.graph
        for k, (inputs, outputs) in enumerate(c.data_sets):
            ds = case_dir / f"test_data_set_{k}"
            ds.mkdir()
            for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, v in enumerate(values):
                    (ds / f"{kind}_{j}.pb").write_bytes(_proto(v, infos[j]).SerializeToString())
    (dest / MARKER).write_text("\n".join(sorted(names)) + "\n")
    return len(cases)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    n = generate(Path(sys.argv[1]))
    print(f"{n} node cases written into {sys.argv[1]}")
