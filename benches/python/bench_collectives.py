"""All-reduce over MPI: ge-rs's HcomAllReduce (a one-node graph, replayed) beside mpi4py's own
Allreduce on numpy arrays, over message sizes, at 2 and 4 ranks on one machine; and the end-to-end
time of a tensor-parallel MLP at 1, 2 and 4 ranks, and of an all-reduce beside independent compute
with the plan's overlap off and on (GE_COLLECTIVE_OVERLAP; docs/distributed.md).

    python benches/python/bench_collectives.py [--ranks 2,4] [--max-mib 256] [--repeats 20]

Bus bandwidth is NCCL's: 2 (n - 1) / n * bytes / time. Each time is the minimum over the repeats
of the slowest rank (a barrier before each). The launcher is the mpi extra's mpiexec.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def worker(max_mib: int, repeats: int) -> None:
    from mpi4py import MPI  # first: ge-rs shares mpi4py's MPI

    import numpy as np

    import ge.distributed
    from ge.es import GraphBuilder
    from ge.es import all as es
    from ge.graph import DataType, Tensor
    from ge.session import Session

    comm = MPI.COMM_WORLD
    rank, size = ge.distributed.get_rank(), ge.distributed.get_world_size()

    def timed(fn) -> float:
        best = float("inf")
        for _ in range(repeats):
            comm.Barrier()
            t = time.perf_counter()
            fn()
            dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
            best = min(best, dt)
        return best

    rows = []
    nbytes = 1024
    while nbytes <= max_mib << 20:
        n = nbytes // 4
        x = np.ones(n, np.float32)
        b = GraphBuilder("ar")
        h = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[n])
        s = Session()
        s.add_graph(1, b.build_and_reset([es.HcomAllReduce(h, reduction="sum", group="hccl_world_group")]))
        feed = [Tensor(x)]
        s.run_graph(1, feed)  # compile once
        out = np.empty_like(x)
        t_ge = timed(lambda: s.run_graph(1, feed))
        t_mpi = timed(lambda: comm.Allreduce(x, out, op=MPI.SUM))
        bus = 2 * (size - 1) / size * nbytes
        rows.append({"bytes": nbytes, "ge_s": t_ge, "mpi4py_s": t_mpi,
                     "ge_busbw_gbs": bus / t_ge / 1e9, "mpi4py_busbw_gbs": bus / t_mpi / 1e9})
        nbytes *= 4
    # Tensor-parallel MLP: [batch, d] x [d, h/size] -> Relu -> x [h/size, d] -> AllReduce.
    batch, d, hidden = 64, 1024, 4096
    rng = np.random.default_rng(0)
    xin = rng.standard_normal((batch, d)).astype(np.float32)
    w1 = rng.standard_normal((d, hidden // size)).astype(np.float32)
    w2 = rng.standard_normal((hidden // size, d)).astype(np.float32)
    b = GraphBuilder("tp")
    hx = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[batch, d])
    y = es.MatMulV2(es.Relu(es.MatMulV2(hx, b.create_const_float(w1.ravel().tolist(), list(w1.shape)))),
                    b.create_const_float(w2.ravel().tolist(), list(w2.shape)))
    if size > 1:
        y = es.HcomAllReduce(y, reduction="sum", group="hccl_world_group")
    s = Session()
    s.add_graph(1, b.build_and_reset([y]))
    feed = [Tensor(xin)]
    s.run_graph(1, feed)
    t_mlp = timed(lambda: s.run_graph(1, feed))
    overlap = overlap_step(np, es, GraphBuilder, DataType, Tensor, Session, timed) if size > 1 else None
    if rank == 0:
        print("RESULT " + json.dumps({"ranks": size, "allreduce": rows, "tp_mlp_s": t_mlp, "overlap": overlap}),
              flush=True)


def overlap_step(np, es, GraphBuilder, DataType, Tensor, Session, timed) -> dict:
    """An all-reduce of [1024, 4096] float32 (16 MiB, of a fed tensor times 2) beside a MatMul
    chain [128, 512] x [512, 1024] x [1024, 512] that does not read it: the plan run with the
    collective where it stands (GE_COLLECTIVE_OVERLAP=0) and split, started before the chain
    and waited for after it."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 4096)).astype(np.float32)
    xin = rng.standard_normal((128, 512)).astype(np.float32)
    w = [rng.standard_normal(shape).astype(np.float32) for shape in ((512, 1024), (1024, 512))]

    def graph():
        b = GraphBuilder("overlap")
        big = b.create_input(0, data_type=DataType.DT_FLOAT, shape=list(a.shape))
        x = b.create_input(1, data_type=DataType.DT_FLOAT, shape=list(xin.shape))
        c = [b.create_const_float(v.ravel().tolist(), list(v.shape)) for v in w]
        g = es.HcomAllReduce(es.Mul(big, b.create_const_float(2.0)), reduction="sum", group="hccl_world_group")
        z = es.MatMulV2(es.MatMulV2(x, c[0]), c[1])
        return b.build_and_reset([g, z])

    out = {}
    for label, setting in (("blocking_s", "0"), ("overlapped_s", "1")):
        os.environ["GE_COLLECTIVE_OVERLAP"] = setting
        s = Session()
        s.add_graph(1, graph())
        feed = [Tensor(a), Tensor(xin)]
        s.run_graph(1, feed)
        out[label] = timed(lambda: s.run_graph(1, feed))
    os.environ.pop("GE_COLLECTIVE_OVERLAP", None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--max-mib", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.max_mib, a.repeats)
        return
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    mpiexec = shutil.which("mpiexec", path=path)
    if mpiexec is None:
        raise SystemExit("mpiexec not found: pip install ge-rs[mpi]")
    env = {**os.environ, "GE_THREADS": "1"}
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    mlp, overlaps = {}, {}
    for n in [1] + [int(r) for r in a.ranks.split(",")]:
        cmd = [mpiexec, "-n", str(n), sys.executable, __file__, "--worker", "--max-mib", str(a.max_mib if n > 1 else 0),
               "--repeats", str(a.repeats)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
        if r.returncode != 0 or line is None:
            raise SystemExit(f"{n} ranks failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
        res = json.loads(line[7:])
        mlp[n] = res["tp_mlp_s"]
        if res["overlap"]:
            overlaps[n] = res["overlap"]
        if n == 1:
            continue
        print(f"\nall-reduce, {n} ranks (float32; time: min over {a.repeats} of the slowest rank)")
        print(f"{'bytes':>12} {'ge ms':>10} {'mpi4py ms':>10} {'ge/mpi4py':>10} {'ge GB/s':>9} {'mpi4py GB/s':>12}")
        for row in res["allreduce"]:
            print(f"{row['bytes']:>12} {row['ge_s'] * 1e3:>10.3f} {row['mpi4py_s'] * 1e3:>10.3f} "
                  f"{row['ge_s'] / row['mpi4py_s']:>10.2f} {row['ge_busbw_gbs']:>9.2f} {row['mpi4py_busbw_gbs']:>12.2f}")
    print("\ntensor-parallel MLP [64, 1024] x [1024, 4096] x [4096, 1024], one thread per rank")
    for n, t in mlp.items():
        print(f"{n} rank(s): {t * 1e3:.3f} ms ({mlp[1] / t:.2f}x one rank's speed)")
    print("\nan all-reduce of 16 MiB beside an independent [128, 512] x [512, 1024] x [1024, 512] chain")
    for n, o in overlaps.items():
        print(f"{n} ranks: collective where it stands {o['blocking_s'] * 1e3:.3f} ms, overlapped "
              f"{o['overlapped_s'] * 1e3:.3f} ms ({o['blocking_s'] / o['overlapped_s']:.2f}x)")
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
