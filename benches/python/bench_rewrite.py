"""Pattern-rewriting speed, side by side: ge vs torch.fx vs onnxscript vs TorchInductor, in one run.

A chain of N blocks ``y = Relu(Add(x, c))`` (one constant ``c`` shared by every Add) is rewritten,
block by block, into one fused custom op ``FusedAddRelu(x, c)`` by
  * ge:          a ``PatternFusionPass`` with an ``@pattern`` method and a Python
                 ``meet_requirements`` and ``replacement`` called for every match, run by
                 ``ge.passes.run_passes`` (the registered custom op ``FusedAddRelu``);
  * torch.fx:    ``torch.fx.subgraph_rewriter.replace_pattern`` on an ``fx.GraphModule``
                 (``FusedAddRelu`` is an ``fx.wrap``-ped function);
  * onnxscript:  ``onnxscript.rewriter.rewrite`` with one ``RewriteRule`` (with a condition
                 function, the counterpart of ``meet_requirements``) on an ONNX ModelProto;
  * inductor:    TorchInductor's ``PatternMatcherPass`` with ``register_replacement`` (the fused
                 op a ``torch.library`` custom op) applied to an ``fx.Graph``.
Only the rewrite is timed (not building the input). Every tool's result is checked: N fused
nodes, no Add or Relu left. Prints rewrites per second and, per tool, how time grows from one N
to the next (10x more blocks: 10x time is linear, 100x quadratic).

Usage: ``python benches/python/bench_rewrite.py [N ...]`` (default 1000 10000 100000).
A peer that is not installed is reported and skipped. torch.fx is quadratic here, so it runs
only up to ``--fx-max`` blocks (default 10000; its 10^5 run would take hours); inductor is linear
but slow (a few hundred rewrites per second), so it runs up to ``--inductor-max`` (default 10000).
"""

import argparse
import gc
import os
import platform
import sys
import time
import warnings
from typing import Callable, Dict, List, Optional, Tuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:  # torch.fx.wrap must be called at a module's top level
    import torch as _torch
    import torch.fx as _fx

    def fused_add_relu(x: "_torch.Tensor", y: "_torch.Tensor") -> "_torch.Tensor":
        """The fused op of the torch.fx run (a leaf: fx does not trace into it)."""
        return _torch.relu(x + y)

    _fx.wrap("fused_add_relu")
except ImportError:
    pass

FUSED_REGOP = """
REG_OP(FusedAddRelu)
    .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16}))
    .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(FusedAddRelu)
"""

# A peer's run: build the input for N blocks, then return (seconds for the rewrite, rewrites).
Runner = Callable[[int], Tuple[float, int]]


# ---------------------------------------------------------------------------------------------
# ge
# ---------------------------------------------------------------------------------------------


def ge_runner() -> Runner:
    import ge.ops
    from ge.es import GraphBuilder
    from ge.es.all import Add, Relu
    from ge.graph import DataType
    from ge.passes import (
        PassStage,
        PatternFusionPass,
        clear_registered_passes,
        pattern,
        register_fusion_pass,
        run_passes,
    )

    if "FusedAddRelu" not in ge.ops.list_ops():
        ge.ops.register_regop(FUSED_REGOP)
    from ge.es.all import FusedAddRelu  # type: ignore[attr-defined]

    clear_registered_passes()

    @register_fusion_pass(name="FuseAddRelu", stage=PassStage.AFTER_INFER_SHAPE)
    class FuseAddRelu(PatternFusionPass):
        @pattern
        def add_relu(self, inputs):  # type: ignore[no-untyped-def]
            return Relu(Add(inputs[0], inputs[1]))

        def meet_requirements(self, match_result):  # type: ignore[no-untyped-def]
            return match_result.get_pattern_graph_name() != ""

        def replacement(self, inputs):  # type: ignore[no-untyped-def,override]
            return FusedAddRelu(inputs[0], inputs[1])

    def run(n: int) -> Tuple[float, int]:
        b = GraphBuilder("chain")
        x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[16])
        c = b.create_const_float(1.0)
        for _ in range(n):
            x = Relu(Add(x, c))
        g = b.build_and_reset([x])
        gc.collect()
        t0 = time.perf_counter()
        (stats,) = run_passes(g, passes=["FuseAddRelu"])
        dt = time.perf_counter() - t0
        types = [node.type for node in g.get_all_nodes()]
        assert types.count("FusedAddRelu") == n and "Add" not in types and "Relu" not in types
        return dt, stats.rewritten

    return run


# ---------------------------------------------------------------------------------------------
# torch.fx
# ---------------------------------------------------------------------------------------------


def fx_runner() -> Runner:
    import torch
    import torch.fx as fx
    from torch.fx import subgraph_rewriter

    def pattern(x, y):  # type: ignore[no-untyped-def]
        return torch.relu(torch.add(x, y))

    def replacement(x, y):  # type: ignore[no-untyped-def]
        return fused_add_relu(x, y)

    def run(n: int) -> Tuple[float, int]:
        g = fx.Graph()
        x = g.placeholder("x")
        c = g.placeholder("c")
        for _ in range(n):
            x = g.call_function(torch.relu, (g.call_function(torch.add, (x, c)),))
        g.output(x)
        gm = fx.GraphModule(torch.nn.Module(), g)
        gc.collect()
        t0 = time.perf_counter()
        matches = subgraph_rewriter.replace_pattern(gm, pattern, replacement)
        dt = time.perf_counter() - t0
        targets = [node.target for node in gm.graph.nodes if node.op == "call_function"]
        assert len(matches) == n and targets.count(fused_add_relu) == n and torch.add not in targets
        return dt, len(matches)

    return run


# ---------------------------------------------------------------------------------------------
# onnxscript
# ---------------------------------------------------------------------------------------------


def onnxscript_runner() -> Runner:
    from bench_build import onnx_chain
    from onnx import helper
    from onnxscript import ir
    from onnxscript.rewriter import pattern as orp
    from onnxscript.rewriter import rewrite

    def target(op, x, y):  # type: ignore[no-untyped-def]
        return op.Relu(op.Add(x, y))

    def condition(context, x, y) -> bool:  # type: ignore[no-untyped-def]
        return True

    def fused(op, x, y):  # type: ignore[no-untyped-def]
        return op.FusedAddRelu(x, y, _domain="custom")

    rule = orp.RewriteRule(target, fused, condition)

    def run(n: int) -> Tuple[float, int]:
        proto = helper.make_model(onnx_chain(n), opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)])
        model = ir.serde.deserialize_model(proto)
        gc.collect()
        t0 = time.perf_counter()
        model = rewrite(model, pattern_rewrite_rules=[rule])
        dt = time.perf_counter() - t0
        types = [node.op_type for node in model.graph]
        assert types.count("FusedAddRelu") == n and "Add" not in types, types[:4]
        return dt, types.count("FusedAddRelu")

    return run


# ---------------------------------------------------------------------------------------------
# TorchInductor's PatternMatcherPass
# ---------------------------------------------------------------------------------------------


def inductor_runner() -> Runner:
    import torch
    import torch.fx as fx
    from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement
    from torch._subclasses.fake_tensor import FakeTensorMode

    if not hasattr(torch.ops, "gebench") or not hasattr(torch.ops.gebench, "fused_add_relu"):

        @torch.library.custom_op("gebench::fused_add_relu", mutates_args=())
        def fused_add_relu(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(x + y)

        @fused_add_relu.register_fake
        def _(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(x)

    fused_op = torch.ops.gebench.fused_add_relu.default

    def search(x, y):  # type: ignore[no-untyped-def]
        return torch.ops.aten.relu.default(torch.ops.aten.add.Tensor(x, y))

    def replace(x, y):  # type: ignore[no-untyped-def]
        return torch.ops.gebench.fused_add_relu(x, y)

    matcher = PatternMatcherPass()
    example = [torch.empty(16), torch.empty(16)]
    register_replacement(search, replace, example, fwd_only, [matcher])

    def run(n: int) -> Tuple[float, int]:
        g = fx.Graph()
        x = g.placeholder("x")
        c = g.placeholder("c")
        val = FakeTensorMode().from_tensor(torch.empty(16))
        x.meta["val"] = val
        c.meta["val"] = val
        for _ in range(n):
            a = g.call_function(torch.ops.aten.add.Tensor, (x, c))
            a.meta["val"] = val
            x = g.call_function(torch.ops.aten.relu.default, (a,))
            x.meta["val"] = val
        g.output(x)
        gm = fx.GraphModule(torch.nn.Module(), g)
        gc.collect()
        t0 = time.perf_counter()
        count = matcher.apply(gm.graph)
        dt = time.perf_counter() - t0
        targets = [node.target for node in gm.graph.nodes if node.op == "call_function"]
        assert targets.count(fused_op) == n and torch.ops.aten.add.Tensor not in targets, targets[:4]
        return dt, int(count)

    return run


# ---------------------------------------------------------------------------------------------


PEERS: List[Tuple[str, Callable[[], Runner]]] = [
    ("ge", ge_runner),
    ("torch.fx", fx_runner),
    ("onnxscript", onnxscript_runner),
    ("inductor", inductor_runner),
]


def versions() -> str:
    out = [f"Python {platform.python_version()}", platform.machine()]
    for mod in ("ge", "torch", "onnxscript", "onnx"):
        try:
            m = __import__(mod)
            out.append(f"{mod} {getattr(m, '__version__', '?')}")
        except ImportError:
            pass
    return "; ".join(out)


def main(argv: List[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10_000, 100_000])
    ap.add_argument("--fx-max", type=int, default=10_000, help="largest N torch.fx runs")
    ap.add_argument("--inductor-max", type=int, default=10_000, help="largest N inductor runs")
    ap.add_argument("--peers", default=",".join(p for p, _ in PEERS), help="comma-separated")
    args = ap.parse_args(argv)
    wanted = args.peers.split(",")
    warnings.filterwarnings("ignore")
    runners: Dict[str, Runner] = {}
    for name, make in PEERS:
        if name not in wanted:
            continue
        try:
            runners[name] = make()
        except Exception as e:  # a peer that cannot run here is reported, not fatal
            print(f"# {name}: not run ({type(e).__name__}: {e})")
    print(f"# {versions()}")
    print(f"# {os.cpu_count()} CPUs; chain of N Add->Relu blocks, every block rewritten into FusedAddRelu")
    results: Dict[str, Dict[int, Optional[float]]] = {name: {} for name in runners}
    header = f"{'N':>8} " + " ".join(f"{name + ' rw/s':>16}" for name in runners)
    print(header)
    for n in args.sizes:
        row = [f"{n:>8}"]
        for name, run in runners.items():
            limit = {"torch.fx": args.fx_max, "inductor": args.inductor_max}.get(name)
            if limit is not None and n > limit:
                results[name][n] = None
                row.append(f"{'(skipped)':>16}")
                continue
            try:
                dt, count = run(n)
            except Exception as e:
                print(f"# {name} at N={n} failed: {type(e).__name__}: {e}")
                results[name][n] = None
                row.append(f"{'(failed)':>16}")
                continue
            assert count == n, (name, n, count)
            results[name][n] = dt
            row.append(f"{n / dt:>16.0f}")
        print(" ".join(row), flush=True)
    print()
    print("# time growth per 10x more blocks (10 = linear, 100 = quadratic)")
    for name, by_n in results.items():
        sizes = sorted(k for k, v in by_n.items() if v)
        steps = [
            f"N={a}->{b}: {by_n[b] / by_n[a]:.1f}x"  # type: ignore[operator]
            for a, b in zip(sizes, sizes[1:])
        ]
        print(f"#   {name}: {', '.join(steps) or '-'}")
    if "ge" in results:
        for name, by_n in results.items():
            common = [k for k in by_n if by_n[k] and results["ge"].get(k)]
            if name != "ge" and common:
                k = max(common)
                print(f"# ge vs {name} at N={k}: {by_n[k] / results['ge'][k]:.1f}x faster")  # type: ignore[operator]


if __name__ == "__main__":
    main(sys.argv[1:])
