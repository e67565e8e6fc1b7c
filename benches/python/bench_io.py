"""Tensors in and out of a session run: the time of ``Session.run_graph`` on a graph whose
plan does no work (a Data straight to the output: Identity is removed at compile, so the plan has
no node and the run is only the conversions in and out), against ``np.copy`` of the same array,
the memcpy anchor, over sizes from 1 KiB to 256 MiB of float32 (docs/perf-frontend.md,
"Tensors in and out of a run").

    python benches/python/bench_io.py [--max-mib 256] [--repeats 10] [--budget 2.0] [--graph identity|relu]

Columns (microseconds, the minimum over the repeats; GB/s = bytes / time):
  np.copy     ``np.copy(x)``: one read and one write of the bytes;
  run(np)     ``run_graph(gid, [x])`` with x a numpy array;
  run(T)      ``run_graph(gid, [t])`` with t a ``ge.graph.Tensor`` made once from x;
  run+numpy   ``run_graph(gid, [x])[0].numpy()``: the result as a numpy array;
  Tensor(x)   ``ge.graph.Tensor(x)``: making the tensor a GE-style program feeds.
``copies`` is run(np) / np.copy: about how many memcpys of the bytes the run costs.
``--graph relu`` runs a Relu instead (one kernel that reads and writes the bytes once).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import numpy as np


def best_of(fn: Callable[[], object], repeats: int, budget: float) -> float:
    """The minimum time of ``fn`` over ``repeats`` calls (fewer once ``budget`` seconds pass)."""
    fn()  # warm: compile, first-touch the pages
    best = float("inf")
    start = time.perf_counter()
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() - start > budget:
            break
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-mib", type=int, default=256, help="largest size in MiB (default 256)")
    ap.add_argument("--repeats", type=int, default=10, help="timed calls per measurement (default 10)")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds at most per measurement (default 2)")
    ap.add_argument("--graph", choices=["identity", "relu"], default="identity",
                    help="the graph run: Data -> Identity (no planned node) or Data -> Relu")
    a = ap.parse_args()

    from ge.es import GraphBuilder
    from ge.es import all as es
    from ge.graph import DataType, Tensor
    from ge.session import Session

    b = GraphBuilder("io")
    h = b.create_input(0, data_type=DataType.DT_FLOAT)  # unshaped: one graph for every size
    s = Session()
    s.add_graph(1, b.build_and_reset([es.Identity(h) if a.graph == "identity" else es.Relu(h)]))

    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"graph: {a.graph}; time: min over {a.repeats} calls (at most {a.budget} s each)")
    print(f"{'bytes':>10} {'np.copy us':>11} {'run(np) us':>11} {'run(T) us':>10} {'run+numpy us':>13} "
          f"{'Tensor(x) us':>13} {'copy GB/s':>10} {'run GB/s':>9} {'copies':>7}")
    nbytes = 1024
    while nbytes <= a.max_mib << 20:
        x = np.random.default_rng(0).standard_normal(nbytes // 4, dtype=np.float32)
        t = Tensor(x)
        got = s.run_graph(1, [x])[0].numpy()
        want = x if a.graph == "identity" else np.maximum(x, 0)
        if not np.array_equal(got, want):
            raise SystemExit(f"wrong result at {nbytes} bytes")
        del got
        t_copy = best_of(lambda: np.copy(x), a.repeats, a.budget)
        t_np = best_of(lambda: s.run_graph(1, [x]), a.repeats, a.budget)
        t_t = best_of(lambda: s.run_graph(1, [t]), a.repeats, a.budget)
        t_numpy = best_of(lambda: s.run_graph(1, [x])[0].numpy(), a.repeats, a.budget)
        t_make = best_of(lambda: Tensor(x), a.repeats, a.budget)
        print(f"{nbytes:>10} {t_copy * 1e6:>11.1f} {t_np * 1e6:>11.1f} {t_t * 1e6:>10.1f} "
              f"{t_numpy * 1e6:>13.1f} {t_make * 1e6:>13.1f} {nbytes / t_copy / 1e9:>10.2f} "
              f"{nbytes / t_np / 1e9:>9.2f} {t_np / t_copy:>7.2f}", flush=True)
        nbytes *= 4
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
