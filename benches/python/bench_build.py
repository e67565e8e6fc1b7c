"""Graph-building speed, side by side: ge.es vs onnx.helper vs torch.fx, in one run.

Builds chains of N blocks ``y = Relu(Add(x, c))`` (2 nodes per block) with
  * ge:           ``Relu(Add(x, c))`` through the generated ES functions (eager validation and
                  shape inference on every call), then ``build_and_reset``;
  * onnx.helper:  ``make_node`` per node, then ``make_graph`` + ``make_model`` (a ModelProto);
  * torch.fx:     ``fx.Graph().call_function`` per node (an ``fx.Graph`` built directly).
Prints µs per node, the ratios and how time grows from N=10^4 to N=10^5 blocks. Usage:
``python benches/python/bench_build.py [N ...] [--peer-max N]`` (default N = 10^3, 10^4, 10^5
and 10^6; the peers run up to ``--peer-max``, default 10^5).
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from typing import Any, Callable, Dict, List, Optional


def build_ge(n: int) -> None:
    from ge.es import GraphBuilder
    from ge.es.all import Add, Relu
    from ge.graph import DataType

    b = GraphBuilder("chain")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[16])
    c = b.create_const_float(1.0)
    for _ in range(n):
        x = Relu(Add(x, c))
    b.build_and_reset([x])


def onnx_chain(n: int) -> Any:
    """The chain as an ONNX graph built with onnx.helper (also what bench_rewrite.py rewrites)."""
    from onnx import TensorProto, helper

    nodes = []
    prev = "x"
    for i in range(n):
        nodes.append(helper.make_node("Add", [prev, "c"], [f"a{i}"], name=f"Add_{i}"))
        nodes.append(helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"Relu_{i}"))
        prev = f"r{i}"
    return helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [16])],
        [helper.make_tensor("c", TensorProto.FLOAT, [], [1.0])],
    )


def build_onnx(n: int) -> None:
    from onnx import helper

    helper.make_model(onnx_chain(n))


def build_fx(n: int) -> None:
    import operator

    import torch
    import torch.fx as fx

    g = fx.Graph()
    x = g.placeholder("x")
    c = g.get_attr("c")
    for _ in range(n):
        x = g.call_function(torch.relu, (g.call_function(operator.add, (x, c)),))
    g.output(x)


def timed(fn: Callable[[int], None], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: List[str]) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--peer-max", type=int, default=100_000,
                    help="largest N the peers (onnx.helper, torch.fx) run; ge runs every N")
    args = ap.parse_args(argv)
    peers: Dict[str, Callable[[int], None]] = {"ge": build_ge}
    for name, fn, mod in (("onnx.helper", build_onnx, "onnx"), ("torch.fx", build_fx, "torch")):
        try:
            __import__(mod)
            peers[name] = fn
        except ImportError:
            print(f"({name} not installed: skipped; `pip install ge-rs[bench]`)")
    import ge

    print(f"ge-rs {ge.__version__}; Python {platform.python_version()}; {platform.machine()} "
          f"{platform.processor() or ''}".strip())
    print(f"{'N blocks':>9} {'nodes':>8} " + " ".join(f"{k + ' µs/node':>20}" for k in peers)
          + " " + " ".join(f"{k + '/ge':>14}" for k in peers if k != "ge"))
    per_node: Dict[str, Dict[int, float]] = {k: {} for k in peers}
    for n in args.sizes:
        repeat = 3 if n <= 10_000 else 1
        nodes = 2 * n
        cells, ratios = [], []
        for k, fn in peers.items():
            if k != "ge" and n > args.peer_max:
                cells.append(f"{'(skipped)':>20}")
                continue
            per_node[k][n] = timed(fn, n, repeat) / nodes * 1e6
            cells.append(f"{per_node[k][n]:>20.3f}")
            if k != "ge":
                ratios.append(f"{per_node[k][n] / per_node['ge'][n]:>14.1f}")
        print(f"{n:>9} {nodes:>8} " + " ".join(cells) + " " + " ".join(ratios), flush=True)
    print("# time growth N=100000 / N=10000 (10 = linear)")
    for k, by_n in per_node.items():
        if 10_000 in by_n and 100_000 in by_n:
            print(f"#   {k}: {10 * by_n[100_000] / by_n[10_000]:.1f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
