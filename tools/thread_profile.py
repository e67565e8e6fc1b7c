"""Where a model's run goes at 2 threads: which kernels the calling thread runs while the pool's
other worker is idle (docs/perf-runtime.md, "Both cores, session 24").

    python tools/thread_profile.py run MODEL THREADS SECONDS   # the timed loop perf records
    python tools/thread_profile.py report perf.txt             # the breakdown

MODEL is one of bench_models.py's exported files in /tmp/ge_bench_models (``googlenet``,
``densenet121``, ``shufflenet_v2``, ``resnet50``, ...). A full session:

    perf record -F 1000 --call-graph dwarf,16384 -o p.data -- \\
        python tools/thread_profile.py run googlenet 2 3
    perf script -i p.data -F tid,comm,time,ip,sym --no-inline > p.txt
    python tools/thread_profile.py report p.txt

The report counts the calling thread's samples inside ``Plan::run`` by operator (the first
``ge_runtime`` frame above ``IntoOp::run``/``Plan::run``), and how many of them fell while the
other worker had no sample in a kernel within 0.6 ms (idle: asleep, or spinning). Samples of
the worker in ``Spin::run``/rayon's wait loop count as idle.
"""

from __future__ import annotations

import bisect
import collections
import re
import sys
import time


def run(model: str, threads: int, secs: float) -> None:
    import numpy as np

    import ge.onnx
    import ge.session

    base = f"/tmp/ge_bench_models/{model}_v2_op17"
    x = np.load(base + "_input.npy")
    s = ge.session.Session({"ge.threads": str(threads)})
    s.add_graph(1, ge.onnx.load(base + ".onnx"))
    for _ in range(3):
        s.run_graph(1, [x])
    times = []
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        t = time.perf_counter()
        s.run_graph(1, [x])
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"{model} {threads}t median {times[len(times) // 2] * 1e3:.2f} ms over {len(times)} runs",
          file=sys.stderr)


def samples(path: str):
    """(comm, tid, time, frames leaf first) per sample of ``perf script -F tid,comm,time,ip,sym``."""
    for blk in open(path).read().split("\n\n"):
        lines = [ln for ln in blk.strip().split("\n") if ln.strip()]
        if not lines:
            continue
        head = lines[0].split()
        frames = [re.sub(r"^\s*[0-9a-f]+\s+", "", ln).strip() for ln in lines[1:]]
        yield head[0], head[1], float(head[2].rstrip(":")), frames


def op_of(frames) -> str:
    for i, f in enumerate(frames):
        if "IntoOp::run" in f or "Plan::run" in f:
            j = i - 1
            while j >= 0 and "ge_runtime" not in frames[j]:
                j -= 1
            if j < 0:
                return "?"
            return re.sub(r"<.*?>|ge_runtime::kernels::|::\{\{closure\}\}", "", frames[j])
    return "?"


def report(path: str) -> None:
    all_samples = list(samples(path))
    in_plan = collections.Counter(
        t for c, t, _, f in all_samples if c == "python" and any("Plan::run" in x for x in f))
    caller = in_plan.most_common(1)[0][0]
    busy = sorted(ts for c, _, ts, f in all_samples if c.startswith("ge-cpu")
                  and any("ge_runtime::kernels" in x for x in f))

    def worker_busy(ts: float) -> bool:
        i = bisect.bisect_left(busy, ts - 0.0006)
        return i < len(busy) and busy[i] <= ts + 0.0006

    total, alone, serial = collections.Counter(), collections.Counter(), collections.Counter()
    for _, t, ts, f in all_samples:
        if t != caller or not any("Plan::run" in x for x in f):
            continue
        op = op_of(f)
        total[op] += 1
        if not worker_busy(ts):
            alone[op] += 1
            if not any("rayon" in x for x in f):
                serial[op] += 1
    n = sum(total.values())
    print(f"caller samples in Plan::run: {n}; worker samples in kernels: {len(busy)}")
    print(f"caller alone (worker idle): {sum(alone.values())} ({100 * sum(alone.values()) / n:.0f}%),"
          f" of which outside any parallel section: {sum(serial.values())}")
    print(f"{'samples':>8} {'alone':>6} {'serial':>6}  operator")
    for op, v in total.most_common(15):
        print(f"{v:8d} {alone[op]:6d} {serial[op]:6d}  {op}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
