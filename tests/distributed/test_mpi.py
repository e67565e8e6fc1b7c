"""The HCCL collectives across processes: 2 and 4 ranks started with ``mpiexec`` from the ``mpi``
extra (MPICH), each scenario of mpi_worker.py checked on every rank against the single-process
graph (or numpy) computing the same thing: tensor and expert parallel (HcomAllToAllV) steps,
send/receive pairs and a ring, groups made from rank lists; a rank mismatch raises the same
error on every rank (a receive of another shape: on the receiving rank); ranks that
stop agreeing time out instead of hanging. Every launch has a timeout, so nothing can hang the
suite. Skipped, with the reason shown, only where mpiexec cannot start two processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_worker.py"
LAUNCH_TIMEOUT_S = 240


def find_mpiexec() -> "str | None":
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("mpiexec", path=path)


def clean_env() -> dict:
    """The environment for a launch: without a GE_MPI_LIBRARY or launcher variables of ours."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GE_MPI_LIBRARY", "PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",
                        "MPI_LOCALNRANKS")}
    env["GE_THREADS"] = "1"
    return env


MPIEXEC = find_mpiexec()


def _why_not() -> "str | None":
    if MPIEXEC is None:
        return "mpiexec not found (pip install ge-rs[mpi], or `make test`, installs MPICH)"
    try:
        r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-c", "pass"], env=clean_env(),
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"mpiexec cannot start 2 processes: {e}"
    if r.returncode != 0:
        return f"mpiexec cannot start 2 processes (exit {r.returncode}): {r.stderr.strip()[-300:]}"
    return None


WHY_NOT = _why_not()
needs_mpiexec = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def launch(n: int, *scenarios: str, timeout: float = LAUNCH_TIMEOUT_S) -> subprocess.CompletedProcess:
    assert MPIEXEC is not None
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, str(WORKER), *scenarios],
                          env=clean_env(), capture_output=True, text=True, timeout=timeout, cwd=HERE)


def lines(out: str, tag: str) -> List[str]:
    return [line[len(tag) + 1:] for line in out.splitlines() if line.startswith(tag + " ")]


def the_same_error_on_every_rank(r: subprocess.CompletedProcess, n: int, scenario: str) -> str:
    """The scenario ran on n ranks and each printed one ERROR line, all the same: that line."""
    expect_ok(r, n, scenario)
    errors = lines(r.stdout, "ERROR")
    assert len(errors) == n and len(set(errors)) == 1, r.stdout
    return errors[0]


def expect_ok(r: subprocess.CompletedProcess, n: int, *scenarios: str) -> None:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    ok = lines(r.stdout, "OK")
    for s in scenarios:
        assert sorted(x for x in ok if x.split()[0] == s) == sorted(f"{s} {rank} {n}" for rank in range(n)), r.stdout


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_collectives_across_ranks_equal_the_single_process_graph(n):
    scenarios = ("tp_mlp", "gather_scatter", "broadcast", "rank_options")
    expect_ok(launch(n, *scenarios), n, *scenarios)


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_a_shape_mismatch_is_the_same_clear_error_on_every_rank(n):
    error = the_same_error_on_every_rank(launch(n, "mismatch"), n, "mismatch")
    ranks = "; ".join(f"rank {q}: DT_FLOAT [4, {8 if q == 0 else 6}]" for q in range(n))
    assert f"the ranks disagree on the inputs of HcomAllReduce: {ranks}; every rank must give the same " \
           "dtype and shape" in error, error


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_expert_parallel_moe_and_send_receive_equal_numpy(n):
    scenarios = ("moe_ep", "p2p", "groups")
    expect_ok(launch(n, *scenarios), n, *scenarios)


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_all_to_all_v_counts_that_do_not_pair_up_are_the_same_error_on_every_rank(n):
    error = the_same_error_on_every_rank(launch(n, "a2a_mismatch"), n, "a2a_mismatch")
    assert (f"the ranks disagree on the counts of HcomAllToAllV: rank {n - 1} sends 1 elements to rank 0 "
            f"(send_counts[0]), which expects 2 from it (recv_counts[{n - 1}])") in error, error


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_a_receive_of_another_shape_is_an_error_not_garbage(n):
    r = launch(n, "p2p_mismatch")
    expect_ok(r, n, "p2p_mismatch")
    errors = lines(r.stdout, "ERROR")
    assert len(errors) == n // 2, r.stdout
    assert "HcomReceive from rank " in errors[0] and " (sr_tag 5) expects DT_FLOAT [3, 2] (its dtype and shape), " \
        "but rank " in errors[0] and errors[0].endswith(" sent DT_FLOAT [2, 3]"), errors[0]


@needs_mpiexec
@pytest.mark.parametrize("n", [2, 4])
def test_collectives_overlap_independent_compute_with_the_same_bits(n):
    expect_ok(launch(n, "overlap", "send_first"), n, "overlap", "send_first")


@needs_mpiexec
def test_mpi4py_and_ge_share_one_mpi():
    expect_ok(launch(2, "with_mpi4py", "--mpi4py"), 2, "with_mpi4py")


@needs_mpiexec
def test_ranks_that_stop_agreeing_time_out_instead_of_hanging():
    r = launch(2, "diverge", timeout=120)
    errors = lines(r.stdout, "ERROR")
    assert len(errors) == 1, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "HcomAllReduce: MPI_Iallgather timed out on rank 0 of 2 after 1.5 s waiting for the other ranks" \
        in errors[0], errors[0]
    assert "exchanging the ranks' input descriptors" in errors[0]
    assert "ge.exec.hcclExecuteTimeOut" in errors[0]


def test_a_graph_needing_ranks_without_mpi_names_the_extra():
    """A process told it has 2 ranks whose MPI library cannot load: the error names the extra."""
    code = (
        "import ge, numpy as np\n"
        "from ge.es import GraphBuilder\nfrom ge.es import all as es\nfrom ge.graph import DataType\n"
        "from ge.session import Session\n"
        "b = GraphBuilder('g'); x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])\n"
        "g = b.build_and_reset([es.HcomAllReduce(x, reduction='sum', group='hccl_world_group')])\n"
        "s = Session(); s.add_graph(1, g)\n"
        "try:\n    s.run_graph(1, [np.ones(2, np.float32)])\n"
        "except ge.GeError as e:\n    print(type(e).__name__, e)\n"
    )
    env = {**clean_env(), "PMI_SIZE": "2", "PMI_RANK": "0", "GE_MPI_LIBRARY": "/nonexistent/libmpi.so.12"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "launched with 2 ranks (PMI_SIZE) but MPI is not usable" in r.stdout, r.stdout
    assert "pip install ge-rs[mpi]" in r.stdout, r.stdout


def test_one_process_is_a_world_of_one():
    code = "import ge.distributed as d; print(d.world())"
    r = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(0, 1, 'single process')"
