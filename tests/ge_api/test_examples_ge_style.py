"""Runs every GE-style example program (examples/ge_style/*.py) unchanged, as a GE user would:
a subprocess with this interpreter, in an empty working directory, ASCEND_GE_PY_PASS_PATH set
for the program that loads pass plugins. Each must exit 0 and print its own verdict line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ge_style"
HELPER = "common.py"  # imported by the programs, not a program itself
VERDICT = "all checks passed"
TIMEOUT_S = 120
# Programs that need the plugin directory on ASCEND_GE_PY_PASS_PATH.
NEEDS_PASS_PATH = {"fusion_pass_plugin.py"}


def _programs() -> List[Path]:
    return sorted(p for p in EXAMPLES.glob("*.py") if p.name != HELPER)


def _run(program: Path, cwd: Path, env_extra: Dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_GE_PY_PASS_PATH", "DUMP_GRAPH_PATH")}
    env.update(env_extra)
    return subprocess.run([sys.executable, str(program)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def test_the_example_set_is_there() -> None:
    names = {p.name for p in _programs()}
    assert len(names) >= 5, names
    assert NEEDS_PASS_PATH <= names
    assert (EXAMPLES / "README.md").is_file()
    readme = (EXAMPLES / "README.md").read_text()
    missing = [n for n in names if n not in readme]
    assert not missing, f"not described in examples/ge_style/README.md: {missing}"


@pytest.mark.parametrize("program", _programs(), ids=lambda p: p.stem)
def test_example_runs_and_checks_its_numbers(program: Path, tmp_path: Path) -> None:
    env = {"ASCEND_GE_PY_PASS_PATH": str(EXAMPLES / "passes")} if program.name in NEEDS_PASS_PATH else {}
    done = _run(program, tmp_path, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert done.stdout.rstrip().splitlines()[-1] == VERDICT, out
    assert "check failed" not in out


def test_a_wrong_number_fails_the_program(tmp_path: Path) -> None:
    """The programs' checker exits non-zero on a mismatch (so the test above can fail)."""
    script = tmp_path / "wrong.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "import numpy as np\n"
        "from common import Checker, float_tensor\n"
        "check = Checker()\n"
        "check.close('wrong', float_tensor(np.ones(2, np.float32)), np.array([1.0, 2.0], np.float32))\n"
        "check.finish()\n"
    )
    done = _run(script, tmp_path, {})
    assert done.returncode == 1
    assert VERDICT not in done.stdout
    assert "check failed: wrong" in done.stdout


def test_fusion_example_finds_its_passes_through_the_environment(tmp_path: Path) -> None:
    """With ASCEND_GE_PY_PASS_PATH pointing at an empty directory the program's passes are not
    loaded, and it says so instead of passing."""
    empty = tmp_path / "no_passes"
    empty.mkdir()
    done = _run(EXAMPLES / "fusion_pass_plugin.py", tmp_path, {"ASCEND_GE_PY_PASS_PATH": str(empty)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "GeStyleMatMulV2AddToGemmPass rewrote the graph: FAILED" in done.stdout
