"""Whole-pipeline fuzzing (issue 21, point 3): mutated graphs loaded, compiled and run.

    python tools/fuzz_pipeline.py --minutes 15             # what `make fuzz MINUTES=15` runs
    python tools/fuzz_pipeline.py --cases 2000 --seed 3    # a fixed number of cases
    python tools/fuzz_pipeline.py --case 1234 --seed 3     # re-run one case in this process

Each case mutates a seed of the corpus (``tests/reliability/pipeline.py``: ge-onnx's ONNX fuzz
corpus, the regression seeds of ``tests/reliability/seeds``, random graphs of the differential
tests' generators; each in ONNX, ge-rs's own format and ``.air``) as raw bytes or through its
structure (ONNX fields, ge.graph editing), then loads it and, when it loads, compiles and runs it
in a graph-mode and an eager CPU session on random inputs of the fed shapes. A case fails when a
Rust panic reaches Python (``ge.InternalError``), an exception outside ``ge.GeError`` escapes, or
the process dies (a crash, an abort). Case i of seed s is made from ``random.Random((s << 32) + i)``
over the same corpus, so a case number reproduces.

The cases run in a worker process (an address-space limit, ``--mem-gb``, stands for a machine's
memory: an allocation past it fails instead of swapping); a dead worker is a crash: the input is
kept in ``--out`` and a new worker goes on with the next case. A case that runs past
``--timeout`` seconds is a hang (kept and reported: ge has no iteration bound on While loops).
The summary gives the duration, the cases, what happened to them, and every distinct failure;
the exit status is 1 when a case failed or crashed.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
os.environ.setdefault("ORT_LOGGING_LEVEL", "3")


def case_rng(seed: int, i: int) -> random.Random:
    return random.Random((seed << 32) + i)


def worker(args: argparse.Namespace) -> None:
    """Runs cases args.start.. (forever, or to args.end), one line per case on stdout."""
    if args.mem_gb > 0:
        lim = int(args.mem_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    import pipeline

    corpus = pipeline.build_corpus(args.corpus_size, args.seed)
    out = Path(args.out)
    print("ready " + " ".join(f"{f}={len(v)}" for f, v in corpus.items()), flush=True)
    i = args.start
    while args.end < 0 or i < args.end:
        r = case_rng(args.seed, i)
        try:
            data, fmt, how = pipeline.make_case(corpus, r)
        except pipeline.Failure as e:
            print(f"fail {i} - making ~ {str(e).splitlines()[0]}", flush=True)
            i += 1
            continue
        (out / f"current.{fmt}").write_bytes(data)
        print(f"start {i} {fmt} {how}", flush=True)
        try:
            what = pipeline.check(data, fmt, r)
            print(f"done {i} {what}", flush=True)
        except pipeline.Failure as e:
            print(f"fail {i} {fmt} {how} ~ {str(e).splitlines()[0][:300]}", flush=True)
        i += 1


def one(args: argparse.Namespace) -> int:
    """Re-runs case args.case in this process, printing what happens."""
    import pipeline

    corpus = pipeline.build_corpus(args.corpus_size, args.seed)
    r = case_rng(args.seed, args.case)
    data, fmt, how = pipeline.make_case(corpus, r)
    path = Path(args.out) / f"case-{args.seed}-{args.case}.{fmt}"
    path.write_bytes(data)
    print(f"case {args.case}: {fmt} ({how}), {len(data)} bytes, written to {path}", flush=True)
    try:
        print("result:", pipeline.check(data, fmt, r))
    except pipeline.Failure:
        traceback.print_exc()
        return 1
    return 0


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.proc: subprocess.Popen | None = None
        self.buf = b""

    def spawn(self, start: int, end: int) -> None:
        cmd = [sys.executable, __file__, "--worker", "--seed", str(self.args.seed), "--start", str(start),
               "--end", str(end), "--out", str(self.out), "--mem-gb", str(self.args.mem_gb),
               "--corpus-size", str(self.args.corpus_size)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        self.buf = b""

    def line(self, timeout: float) -> str | None:
        """The worker's next line; None at EOF; "" on timeout."""
        assert self.proc is not None and self.proc.stdout is not None
        end = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return ""
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk
        text, self.buf = self.buf.split(b"\n", 1)
        return text.decode(errors="replace")

    def stop(self) -> tuple[int | None, str]:
        """Kills the worker (if alive); its exit status and the tail of its stderr."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        return self.proc.returncode, err[-2000:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=0.0)
    ap.add_argument("--cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case", type=int, default=-1, help="re-run one case in this process")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--mem-gb", type=float, default=4.0, help="the worker's address-space limit (0: none)")
    ap.add_argument("--corpus-size", type=int, default=40, help="generated graphs per generator")
    ap.add_argument("--out", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "fuzz_pipeline"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, default=-1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.worker:
        worker(args)
        return 0
    if args.case >= 0:
        return one(args)
    if not args.minutes and not args.cases:
        args.minutes = 1.0
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else float("inf")
    last = args.cases if args.cases else -1
    t0 = time.monotonic()
    out = Path(args.out)
    outcomes: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    failures: dict[str, list[int]] = collections.defaultdict(list)
    crashes: list[tuple[int, str]] = []
    hangs: list[int] = []
    cases = 0
    nxt = 0
    run = Runner(args)
    current: tuple[int, str] | None = None
    print(f"fuzz_pipeline: seed {args.seed}, " + (f"{args.minutes} min" if args.minutes else f"{args.cases} cases")
          + f", out {out}", flush=True)
    while time.monotonic() < deadline and (last < 0 or nxt < last):
        run.spawn(nxt, last)
        while time.monotonic() < deadline:
            ln = run.line(max(1.0, min(args.timeout, deadline - time.monotonic())) if current else 600.0)
            if ln is None:  # the worker died
                code, err = run.stop()
                if current is None:
                    print(f"the worker died before a case (status {code}):\n{err}", file=sys.stderr)
                    return 2
                i, fmt = current
                keep = out / f"crash-{args.seed}-{i}.{fmt}"
                shutil.copy(out / f"current.{fmt}", keep)
                why = (err.strip().splitlines() or [f"exit status {code}"])[-1]
                crashes.append((i, f"status {code}: {why}"))
                print(f"CRASH case {i} ({fmt}): status {code}: {why} -> {keep}", flush=True)
                cases += 1
                nxt = i + 1
                current = None
                break
            if ln == "":
                if current is None:  # still building the corpus
                    continue
                i, fmt = current
                if time.monotonic() >= deadline:
                    break
                keep = out / f"hang-{args.seed}-{i}.{fmt}"
                shutil.copy(out / f"current.{fmt}", keep)
                hangs.append(i)
                print(f"HANG case {i} ({fmt}) past {args.timeout:.0f} s -> {keep}", flush=True)
                run.stop()
                cases += 1
                nxt = i + 1
                current = None
                break
            word, _, rest = ln.partition(" ")
            if word == "ready":
                continue
            if word == "start":
                i, fmt, how = rest.split(" ", 2)
                current = (int(i), fmt)
                kinds[f"{fmt} {how}"] += 1
            elif word in ("done", "fail"):
                i = int(rest.split(" ", 1)[0])
                cases += 1
                nxt = i + 1
                current = None
                if word == "done":
                    outcomes[rest.split(" ", 1)[1]] += 1
                else:
                    head, _, msg = rest.partition(" ~ ")
                    outcomes["FAILED"] += 1
                    key = msg.split(":")[0] + ": " + msg.split(": ", 2)[-1][:120]
                    failures[key].append(i)
                    if len(failures[key]) <= 3:
                        print(f"FAIL case {i} ({head.split(' ', 1)[1] if ' ' in head else head}): {msg}", flush=True)
                if cases % 500 == 0:
                    print(f"  {cases} cases, {time.monotonic() - t0:.0f} s: {dict(outcomes)}", flush=True)
                if last >= 0 and nxt >= last:
                    break
        if run.proc is not None and run.proc.poll() is None:
            run.stop()
    took = time.monotonic() - t0
    print(f"\n{cases} cases in {took:.0f} s (seed {args.seed}, cases {0}..{nxt - 1})")
    print("outcomes:", ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    print("made as:", ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    print(f"crashes {len(crashes)}, failures {sum(len(v) for v in failures.values())} "
          f"({len(failures)} distinct), hangs {len(hangs)}")
    for i, why in crashes:
        print(f"  crash: case {i}: {why}   (python tools/fuzz_pipeline.py --seed {args.seed} --case {i})")
    for key, idx in failures.items():
        print(f"  failure x{len(idx)}: {key}   (e.g. --seed {args.seed} --case {idx[0]})")
    for i in hangs:
        print(f"  hang: case {i}")
    return 1 if crashes or failures else 0


if __name__ == "__main__":
    sys.exit(main())
