"""Graph-building speed, side by side: ge.es vs onnx.helper vs torch.fx, in one run.

Builds chains of N blocks ``y = Relu(Add(x, c))`` (2 nodes per block) with
  * ge:           ``Relu(Add(x, c))`` through the generated ES functions (eager validation and
                  shape inference on every call), then ``build_and_reset``;
  * onnx.helper:  ``make_node`` per node, then ``make_graph`` + ``make_model`` (a ModelProto);
  * torch.fx:     ``fx.Graph().call_function`` per node (an ``fx.Graph`` built directly).
Prints µs per node and the ratios. Usage: ``python benches/python/bench_build.py [N ...]``.
"""

from __future__ import annotations

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
    sizes = [int(a) for a in argv] or [10_000, 100_000]
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
    print(f"{'N blocks':>9} {'nodes':>7} " + " ".join(f"{k + ' µs/node':>20}" for k in peers)
          + " " + " ".join(f"{k + '/ge':>14}" for k in peers if k != "ge"))
    for n in sizes:
        repeat = 3 if n <= 10_000 else 1
        res = {k: timed(fn, n, repeat) for k, fn in peers.items()}
        nodes = 2 * n
        row = f"{n:>9} {nodes:>7} " + " ".join(f"{res[k] / nodes * 1e6:>20.3f}" for k in peers)
        ratios: List[Optional[str]] = [f"{res[k] / res['ge']:>14.1f}" for k in peers if k != "ge"]
        print(row + " " + " ".join(r for r in ratios if r))


if __name__ == "__main__":
    main(sys.argv[1:])
