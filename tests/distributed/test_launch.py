"""``ge launch -n N [--hosts FILE] (PROG.py | -m MODULE) ARGS...`` (python/ge/cli.py): runs the
program on N ranks with the mpi extra's mpiexec, passes the arguments and a failing rank's exit
status through, and without a launcher says to install the extra."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from ge import cli
from ge._internal import mpi_locate

from test_mpi import LAUNCH_TIMEOUT_S, clean_env, lines, needs_mpiexec

HERE = Path(__file__).resolve().parent
PROG = HERE / "launch_prog.py"


def ge_launch(*args, cwd=HERE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ge.cli", "launch", *map(str, args)], env=clean_env(),
                          capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S, cwd=cwd)


@needs_mpiexec
def test_two_ranks_run_the_program_with_its_arguments_and_an_all_reduce():
    r = ge_launch("-n", 2, PROG, "-n", "5", "--flag")
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert sorted(lines(r.stdout, "RANK")) == ["0 2 -n 5 --flag", "1 2 -n 5 --flag"]
    # (0, 1, 2) + rank summed over ranks 0 and 1.
    assert sorted(lines(r.stdout, "SUM")) == ["0 1.0 3.0 5.0", "1 1.0 3.0 5.0"]
    # The compile report at 2 ranks: 12 bytes, each rank sends 2 * 1/2 of them (ring all-reduce).
    reports = sorted(lines(r.stdout, "REPORT"))
    assert [x.split("'", 2)[::2] for x in reports] == [
        [f"{q} HcomAllReduce ", ": group hccl_world_group (2 ranks), reduction sum, DT_FLOAT [3]; "
                                "per rank: 12 bytes in, 12 bytes out, 12 bytes moved"] for q in range(2)], reports


@needs_mpiexec
def test_a_module_runs_with_dash_m_and_a_host_file_is_passed_on(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    pkg = tmp_path / "launchmod.py"
    pkg.write_text(PROG.read_text())
    r = ge_launch("--hosts", hosts, "-n", 2, "-m", "launchmod", "a", cwd=tmp_path)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert sorted(lines(r.stdout, "RANK")) == ["0 2 a", "1 2 a"]


@needs_mpiexec
def test_the_exit_status_of_a_failing_rank_is_the_commands():
    r = ge_launch("-n", 2, PROG, "--fail-rank", 1)
    assert r.returncode == 3, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "RANK 1 2 --fail-rank 1" in r.stdout


def test_without_a_launcher_the_error_names_the_extra(tmp_path, monkeypatch, capsys):
    # A search path with no mpiexec on it: what a Python without the mpi extra and without an
    # MPI on PATH sees.
    monkeypatch.setattr(mpi_locate, "launcher_search_path", lambda: str(tmp_path))
    assert mpi_locate.find_launcher() is None
    assert cli.main(["launch", "-n", "2", str(PROG)]) == 1
    err = capsys.readouterr().err
    assert "mpiexec" in err and "pip install ge-rs[mpi]" in err, err


def test_the_launcher_is_found_on_the_search_path(tmp_path):
    exe = tmp_path / "mpiexec"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert mpi_locate.find_launcher(str(tmp_path)) == str(exe)
    assert str(Path(sys.executable).parent) in mpi_locate.launcher_search_path().split(":")


def _args(*argv):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    cli.add_launch_parser(sub)
    return ap.parse_args(["launch", *argv])


def test_the_command_line_handed_to_mpiexec(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("")
    hosts = tmp_path / "hosts"
    hosts.write_text("a:1\nb:1\n")
    assert cli.launch_command(_args("-n", "4", str(prog), "-x", "1"), "/m/mpiexec") == \
        ["/m/mpiexec", "-n", "4", sys.executable, str(prog), "-x", "1"]
    assert cli.launch_command(_args("-n", "2", "--hosts", str(hosts), "-m", "pkg.mod", "--y"), "mpiexec") == \
        ["mpiexec", "-n", "2", "-f", str(hosts), sys.executable, "-m", "pkg.mod", "--y"]


@pytest.mark.parametrize("argv, message", [
    (("-n", "0", "p.py"), "-n 0: the number of ranks must be at least 1"),
    (("-n", "2"), "launch needs a program (PROG.py [ARGS...]) or -m MODULE"),
    (("-n", "2", "missing.py"), "missing.py: no such file"),
    (("-n", "2", "--hosts", "nohosts", "-m", "m"), "--hosts nohosts: no such file"),
    (("-n", "2", "-m"), "-m needs a module name"),
])
def test_arguments_it_cannot_run_are_clear_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text("")
    monkeypatch.setattr(mpi_locate, "find_launcher", lambda search_path=None: "/nonexistent/mpiexec")
    assert cli.main(["launch", *argv]) == 1
    assert f"ge: launch: {message}" in capsys.readouterr().err
