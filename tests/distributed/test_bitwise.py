"""ge's collectives equal mpi4py's bit for bit at 2 ranks (tests/distributed/bitwise_worker.py):
what ge computed before it worked in place on the output's buffer (it copied the tensor's bytes
in and out around the same MPI call) and after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_mpi import LAUNCH_TIMEOUT_S, MPIEXEC, clean_env, lines, needs_mpiexec

WORKER = Path(__file__).resolve().parent / "bitwise_worker.py"


@needs_mpiexec
def test_collectives_equal_mpi4py_bit_for_bit_at_2_ranks():
    r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(WORKER)], env=clean_env(), capture_output=True,
                       text=True, timeout=LAUNCH_TIMEOUT_S)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert sorted(lines(r.stdout, "OK")) == ["0", "1"], r.stdout
