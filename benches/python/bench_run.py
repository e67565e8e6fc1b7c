"""Running graphs, side by side: ge (graph mode, eager) vs onnxruntime vs tract vs torch eager, in one run.

Cases (the same random inputs and weights for every peer, written once to a temporary .npz):
  * chain16 / chain256: a chain of N ``y = Add(y, c)`` (default N = 1000) on shape [16] and
    [256, 256]; ``x`` and ``c`` are graph inputs, so nothing can be folded. Reported as µs per op
    (one run's time / N). onnxruntime runs with optimizations off (``ORT_DISABLE_ALL``, so the
    chain stays) and 1 thread; torch eager is a Python loop of ``torch.add`` (1 thread).
  * mlp: 3 layers 256 -> 512 -> 512 -> 10, MatMul + bias, Relu between layers; input [B, 256].
  * xfmr: one post-LN transformer encoder block: d_model 256, 4 heads, seq 64, FFN 1024 (Relu),
    LayerNorm eps 1e-5, softmax attention; input [B, 64, 256].
  The models are built with ge.es, with onnx.helper (opset 17, run by onnxruntime with its default
  optimizations and by tract) and with torch (``nn.Linear``s for the MLP,
  ``nn.TransformerEncoderLayer`` for the block, in eval mode under ``torch.inference_mode``), at
  batch 1 and 32, onnxruntime and torch at 1 and 2 threads.

ge has no thread-count option (its kernels are single-threaded, matrixmultiply included), so it
runs once per model and batch; tract runs single-threaded too.

Every measurement runs in its own subprocess: the peer's output for the benchmark input is checked
against a float64 numpy reference of the same math before anything is timed (and, afterwards,
every peer against every other), then the peer is warmed up and timed (median of repeats, each
measurement limited to a time budget). Memory: the subprocess resets its peak RSS after importing
its runtime and loading the inputs and weights (``/proc/self/clear_refs``), and reports
``VmHWM - VmRSS(baseline)`` at the end: the peak memory added by building, compiling and running.

Usage: ``python benches/python/bench_run.py [--quick] [--peers ge,ge-eager,ort,tract,torch]
[--chain N] [--budget SECONDS]``. A peer that is not installed is reported and skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

PEER_MODULES = {"ge": "ge", "ge-eager": "ge", "ort": "onnxruntime", "tract": "tract", "torch": "torch"}
SINGLE_THREAD = ("ge-eager", "tract")  # run once: ge eager at 1 thread; tract has no thread option
PEER_LABEL = {"ge": "ge graph", "ge-eager": "ge eager", "ort": "onnxruntime", "tract": "tract",
              "torch": "torch eager"}
D_MODEL, HEADS, SEQ, FFN, LN_EPS = 256, 4, 64, 1024, 1e-5
MLP_DIMS = (256, 512, 512, 10)
Data = Dict[str, np.ndarray]


# ---------------------------------------------------------------------------------------------
# Data and the float64 numpy reference
# ---------------------------------------------------------------------------------------------


def make_data(case: str, batch: int) -> Data:
    rng = np.random.default_rng(20240601)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    if case.startswith("chain"):
        shape = [16] if case == "chain16" else [256, 256]
        return {"x": rng.standard_normal(shape).astype(np.float32),
                "c": rng.uniform(-0.01, 0.01, shape).astype(np.float32)}
    if case == "mlp":
        d: Data = {"x": rng.standard_normal((batch, MLP_DIMS[0])).astype(np.float32)}
        for i in range(3):
            d[f"w{i}"] = w(MLP_DIMS[i], MLP_DIMS[i + 1])
            d[f"b{i}"] = bias(MLP_DIMS[i + 1])
        return d
    assert case == "xfmr"
    d = {"x": rng.standard_normal((batch, SEQ, D_MODEL)).astype(np.float32)}
    for n in ("q", "k", "v", "o"):
        d[f"w{n}"] = w(D_MODEL, D_MODEL)
        d[f"b{n}"] = bias(D_MODEL)
    d["w1"], d["b1"] = w(D_MODEL, FFN), bias(FFN)
    d["w2"], d["b2"] = w(FFN, D_MODEL), bias(D_MODEL)
    for n in ("1", "2"):
        d[f"g{n}"] = (1.0 + 0.1 * rng.standard_normal(D_MODEL)).astype(np.float32)
        d[f"be{n}"] = bias(D_MODEL)
    return d


def reference(case: str, d: Data, chain: int) -> np.ndarray:
    f = {k: v.astype(np.float64) for k, v in d.items()}
    if case.startswith("chain"):
        return f["x"] + chain * f["c"]
    if case == "mlp":
        h = np.maximum(f["x"] @ f["w0"] + f["b0"], 0)
        h = np.maximum(h @ f["w1"] + f["b1"], 0)
        return h @ f["w2"] + f["b2"]

    def ln(t: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(var + LN_EPS) * g + b

    x = f["x"]
    bsz, dh = x.shape[0], D_MODEL // HEADS

    def heads(t: np.ndarray) -> np.ndarray:
        return t.reshape(bsz, SEQ, HEADS, dh).transpose(0, 2, 1, 3)

    q, k, v = (heads(x @ f[f"w{n}"] + f[f"b{n}"]) for n in "qkv")
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    a = (p @ v).transpose(0, 2, 1, 3).reshape(bsz, SEQ, D_MODEL)
    h = ln(x + a @ f["wo"] + f["bo"], f["g1"], f["be1"])
    ff = np.maximum(h @ f["w1"] + f["b1"], 0) @ f["w2"] + f["b2"]
    return ln(h + ff, f["g2"], f["be2"])


def tolerance(case: str) -> Dict[str, float]:
    return {"rtol": 1e-4, "atol": 1e-4} if case.startswith("chain") else {"rtol": 2e-3, "atol": 2e-4}


# ---------------------------------------------------------------------------------------------
# Peers: each builds its model and returns (run, to_numpy, note); only ``run()`` is timed;
# ``to_numpy(run())`` is the output checked; ``note()`` a remark for the table.
# ---------------------------------------------------------------------------------------------

Peer = Tuple[Callable[[], Any], Callable[[Any], np.ndarray], Callable[[], str]]


def ge_peer(case: str, d: Data, chain: int, graph_mode: bool, threads: int = 1) -> Peer:
    import ge
    from ge.es import GraphBuilder
    from ge.es import all as es
    from ge.graph import DataType
    from ge.session import Session

    note = ""
    b = GraphBuilder(case)
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=list(d["x"].shape))
    inputs = [d["x"]]

    def const(a: np.ndarray) -> Any:
        return b.create_const(np.ascontiguousarray(a))

    def dense(h: Any, wk: str, bk: str) -> Any:
        return es.Add(es.MatMulV2(h, const(d[wk])), const(d[bk]))

    if case.startswith("chain"):
        c = b.create_input(1, data_type=DataType.DT_FLOAT, shape=list(d["c"].shape))
        inputs.append(d["c"])
        y = x
        for _ in range(chain):
            y = es.Add(y, c)
    elif case == "mlp":
        y = es.Relu(dense(x, "w0", "b0"))
        y = es.Relu(dense(y, "w1", "b1"))
        y = dense(y, "w2", "b2")
    else:
        bsz, dh = d["x"].shape[0], D_MODEL // HEADS
        use_ln_op = "LayerNorm" in set(getattr(ge._native, "_cpu_kernel_op_types", lambda: [])())
        note = "LayerNorm op" if use_ln_op else "LayerNorm decomposed (no LayerNorm kernel)"
        eps = const(np.array(LN_EPS, np.float32))

        def layer_norm(t: Any, g: str, be: str) -> Any:
            if use_ln_op:
                return es.LayerNorm(t, const(d[g]), const(d[be]), begin_norm_axis=1,
                                    begin_params_axis=1, epsilon=LN_EPS).y
            mu = es.ReduceMeanD(t, axes=[-1], keep_dims=True)
            dev = es.Sub(t, mu)
            var = es.ReduceMeanD(es.Mul(dev, dev), axes=[-1], keep_dims=True)
            return es.Add(es.Mul(es.Mul(dev, es.Rsqrt(es.Add(var, eps))), const(d[g])), const(d[be]))

        x2 = es.Reshape(x, b.create_const_int64([bsz * SEQ, D_MODEL]))
        to_heads = b.create_const_int64([bsz, SEQ, HEADS, dh])
        perm = b.create_const_int64([0, 2, 1, 3])

        def heads(n: str) -> Any:
            return es.Transpose(es.Reshape(dense(x2, f"w{n}", f"b{n}"), to_heads), perm)

        q, k, v = heads("q"), heads("k"), heads("v")
        s = es.Mul(es.BatchMatMulV2(q, k, adj_x2=True), const(np.array(1 / math.sqrt(dh), np.float32)))
        a = es.BatchMatMulV2(es.SoftmaxV2(s, axes=[-1]), v)
        a = es.Reshape(es.Transpose(a, perm), b.create_const_int64([bsz * SEQ, D_MODEL]))
        h = layer_norm(es.Add(x2, dense(a, "wo", "bo")), "g1", "be1")
        ff = dense(es.Relu(dense(h, "w1", "b1")), "w2", "b2")
        y = es.Reshape(layer_norm(es.Add(h, ff), "g2", "be2"), b.create_const_int64([bsz, SEQ, D_MODEL]))
    g = b.build_and_reset([y])
    sess = Session({"ge.graphMode": "on" if graph_mode else "off", "ge.threads": str(threads)})
    sess.add_graph(1, g)

    def run() -> Any:
        return sess.run_graph(1, inputs)

    def remark() -> str:  # graph mode: how many nodes the plan runs (the chain must stay)
        rep = (sess.compile_report(1) or "") if graph_mode and not note else ""
        planned = [ln.split(":")[1].strip() for ln in rep.splitlines() if "planned nodes" in ln]
        return f"{planned[0]} planned nodes" if planned else note

    return run, (lambda out: out[0].numpy()), remark


def onnx_model(case: str, d: Data, chain: int) -> Tuple[bytes, Data]:
    from onnx import TensorProto, helper, numpy_helper

    nodes: List[Any] = []
    inits: List[Any] = []
    feeds = {"x": d["x"]}
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(d["x"].shape))]

    def init(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(a), name))
        return name

    def node(op: str, inputs: List[str], **attrs: Any) -> str:
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{len(nodes)}", **attrs))
        return out

    def dense(h: str, wk: str, bk: str) -> str:
        return node("Add", [node("MatMul", [h, init(wk, d[wk])]), init(bk, d[bk])])

    if case.startswith("chain"):
        ins.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, list(d["c"].shape)))
        feeds["c"] = d["c"]
        y = "x"
        for _ in range(chain):
            y = node("Add", [y, "c"])
    elif case == "mlp":
        y = node("Relu", [dense("x", "w0", "b0")])
        y = node("Relu", [dense(y, "w1", "b1")])
        y = dense(y, "w2", "b2")
    else:
        bsz, dh = d["x"].shape[0], D_MODEL // HEADS
        to_heads = init("to_heads", np.array([bsz, SEQ, HEADS, dh], np.int64))

        def heads(n: str, perm: List[int]) -> str:
            return node("Transpose", [node("Reshape", [dense("x", f"w{n}", f"b{n}"), to_heads])], perm=perm)

        q, k, v = heads("q", [0, 2, 1, 3]), heads("k", [0, 2, 3, 1]), heads("v", [0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [q, k]), init("scale", np.array(1 / math.sqrt(dh), np.float32))])
        a = node("MatMul", [node("Softmax", [s], axis=-1), v])
        a = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]),
                             init("to_model", np.array([bsz, SEQ, D_MODEL], np.int64))])
        h = node("LayerNormalization", [node("Add", ["x", dense(a, "wo", "bo")]), init("g1", d["g1"]),
                                        init("be1", d["be1"])], axis=-1, epsilon=LN_EPS)
        ff = dense(node("Relu", [dense(h, "w1", "b1")]), "w2", "b2")
        y = node("LayerNormalization", [node("Add", [h, ff]), init("g2", d["g2"]), init("be2", d["be2"])],
                 axis=-1, epsilon=LN_EPS)
    out_shape = [d["x"].shape[0], MLP_DIMS[-1]] if case == "mlp" else list(d["x"].shape)
    outs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_shape)]
    graph = helper.make_graph(nodes, case, ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), feeds


def ort_peer(case: str, d: Data, chain: int, threads: int) -> Peer:
    import onnxruntime as ort

    model, feeds = onnx_model(case, d, chain)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    chain_case = case.startswith("chain")
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if chain_case
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    note = "optimizations off" if chain_case else "optimizations all"
    return (lambda: sess.run(None, feeds)), (lambda out: out[0]), (lambda: note)


def tract_peer(case: str, d: Data, chain: int, tmp: str) -> Peer:
    import tract

    model, feeds = onnx_model(case, d, chain)
    path = os.path.join(tmp, f"tract_{case}_{os.getpid()}.onnx")
    with open(path, "wb") as fh:
        fh.write(model)
    runnable = tract.onnx().load(path).into_model().into_runnable()
    args = list(feeds.values())
    return (lambda: runnable.run(args)), (lambda out: out[0].to_numpy()), (lambda: "optimized model")


def torch_peer(case: str, d: Data, chain: int, threads: int) -> Peer:
    import torch

    torch.set_num_threads(threads)
    t = {k: torch.from_numpy(v.copy()) for k, v in d.items()}
    x = t["x"]
    if case.startswith("chain"):
        c = t["c"]

        def fn() -> Any:
            y = x
            for _ in range(chain):
                y = torch.add(y, c)
            return y
    elif case == "mlp":
        lins = []
        for i in range(3):
            lin = torch.nn.Linear(MLP_DIMS[i], MLP_DIMS[i + 1])
            with torch.no_grad():
                lin.weight.copy_(t[f"w{i}"].T)
                lin.bias.copy_(t[f"b{i}"])
            lins.append(lin)
        net = torch.nn.Sequential(lins[0], torch.nn.ReLU(), lins[1], torch.nn.ReLU(), lins[2]).eval()

        def fn() -> Any:
            return net(x)
    else:
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=0.0, activation="relu",
                                                 layer_norm_eps=LN_EPS, batch_first=True).eval()
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([t["wq"].T, t["wk"].T, t["wv"].T]))
            layer.self_attn.in_proj_bias.copy_(torch.cat([t["bq"], t["bk"], t["bv"]]))
            layer.self_attn.out_proj.weight.copy_(t["wo"].T)
            layer.self_attn.out_proj.bias.copy_(t["bo"])
            layer.linear1.weight.copy_(t["w1"].T)
            layer.linear1.bias.copy_(t["b1"])
            layer.linear2.weight.copy_(t["w2"].T)
            layer.linear2.bias.copy_(t["b2"])
            layer.norm1.weight.copy_(t["g1"])
            layer.norm1.bias.copy_(t["be1"])
            layer.norm2.weight.copy_(t["g2"])
            layer.norm2.bias.copy_(t["be2"])

        def fn() -> Any:
            return layer(x)

    def run() -> Any:
        with torch.inference_mode():
            return fn()

    return run, (lambda out: out.numpy()), (lambda: "")


# ---------------------------------------------------------------------------------------------
# The worker: one peer, one case, in its own process
# ---------------------------------------------------------------------------------------------


def _rss_kib(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    import resource

    peer, case, threads = spec["peer"], spec["case"], spec["threads"]
    import numpy.testing  # noqa: F401  (used after the baseline: import it before)

    # imports (and their memory) come before the baseline: the delta is the runtime's work alone
    for mod in {"ge": ["ge", "ge.es", "ge.es.all", "ge.graph", "ge.session"],
                "ort": ["onnxruntime", "onnx.helper", "onnx.numpy_helper"],
                "tract": ["tract", "onnx.helper", "onnx.numpy_helper"],
                "torch": ["torch", "torch.nn"]}[peer.replace("-eager", "")]:
        for attempt in range(5):  # the ge extension may be being rebuilt right now: retry briefly
            try:
                importlib.import_module(mod)
                break
            except (ImportError, OSError):
                if attempt == 4:
                    raise
                time.sleep(3)
    with np.load(spec["data"]) as z:
        d = {k: z[k] for k in z.files}
    ref = np.load(spec["ref"])
    import_peak = _rss_kib("VmHWM") or 0
    try:  # reset the peak RSS so that VmHWM is the peak from here on
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        base, reset = _rss_kib("VmRSS"), True
    except OSError:
        base, reset = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, False
    chain = spec["chain"]
    t0 = time.perf_counter()
    if peer in ("ge", "ge-eager"):
        run, to_np, note = ge_peer(case, d, chain, graph_mode=peer == "ge", threads=threads)
    elif peer == "ort":
        run, to_np, note = ort_peer(case, d, chain, threads)
    elif peer == "tract":
        run, to_np, note = tract_peer(case, d, chain, spec["tmp"])
    else:
        run, to_np, note = torch_peer(case, d, chain, threads)
    out = to_np(run())
    first_s = time.perf_counter() - t0
    np.testing.assert_allclose(out, ref.astype(np.float32), **tolerance(case),
                               err_msg=f"{peer} {case}: output differs from the numpy reference")
    np.save(spec["out"], out)
    # warm-up, then repeats until the budget is spent (at least min_repeats)
    for _ in range(spec["warmup"]):
        run()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < spec["min_repeats"] or (time.perf_counter() - start < spec["budget"]
                                               and len(times) < spec["max_repeats"]):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    peak = _rss_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"median_s": float(np.median(times)), "repeats": len(times), "first_s": first_s,
            "peak_delta_mib": ((peak or 0) - (base or 0)) / 1024,
            "peak_total_mib": max(import_peak, peak or 0) / 1024,
            "delta_exact": reset, "note": note()}


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


def versions() -> str:
    """Versions from package metadata: the driver imports no peer, so that its memory stays small."""
    from importlib import metadata

    out = [f"Python {platform.python_version()}", platform.machine()]
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
        if model:
            out.append(model)
    except OSError:
        pass
    out.append(f"{os.cpu_count()} CPUs")
    for dist in ("ge-rs", "onnxruntime", "tract", "torch", "onnx", "numpy"):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return "; ".join(out)


def busy_cpu_s() -> Optional[float]:
    """CPU-seconds the whole machine has spent busy (all processes), from /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            f = [int(v) for v in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = f
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_worker(spec: Dict[str, Any], timeout: float, script: str = __file__) -> Dict[str, Any]:
    """Runs ``script --worker <spec>`` (this file by default; bench_models.py passes its own) in a
    fresh process with ``spec["threads"]`` BLAS threads; its last JSON line, or an error entry."""
    env = dict(os.environ)
    n = str(spec["threads"])
    env.update({"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n})
    try:
        p = subprocess.run([sys.executable, os.path.abspath(script), "--worker", json.dumps(spec)],
                           capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or [""])[-1]
        why = f"exit {p.returncode}" if p.returncode >= 0 else f"signal {-p.returncode}"
        return {"error": f"crashed ({why}){': ' + tail[:120] if tail else ''}"}
    return json.loads(lines[-1])


def fmt(v: Optional[float], width: int, digits: int = 3) -> str:
    return f"{'-' if v is None else f'{v:.{digits}f}':>{width}}"


def main(argv: List[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 100-op chains, batch 1, tiny budgets")
    ap.add_argument("--peers", default="ge,ge-eager,ort,tract,torch", help="comma-separated")
    ap.add_argument("--chain", type=int, default=None, help="Adds per chain (default 1000, --quick 100)")
    ap.add_argument("--budget", type=float, default=None, help="seconds of timed repeats per measurement")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))), flush=True)
        return

    chain = args.chain or (100 if args.quick else 1000)
    budget = args.budget if args.budget is not None else (0.2 if args.quick else 1.5)
    batches = [1] if args.quick else [1, 32]
    wanted = [p for p in args.peers.split(",") if p]
    peers: List[str] = []
    for p in wanted:
        if p not in PEER_MODULES:
            sys.exit(f"unknown peer {p!r}; known: {', '.join(PEER_MODULES)}")
        missing = [m for m in [PEER_MODULES[p]] + (["onnx"] if p in ("ort", "tract") else [])
                   if importlib.util.find_spec(m) is None]
        if missing:
            print(f"# {PEER_LABEL[p]}: skipped ({', '.join(missing)} not installed:"
                  f" `pip install {' '.join(missing)}`)")
        else:
            peers.append(p)
    print(f"# {versions()}")
    print("# ge graph mode, onnxruntime and torch at 1 and 2 threads (ge.threads, intra-op threads,"
          " set_num_threads); ge eager at 1 thread; tract runs single-threaded")
    print(f"# timing: warm-up, then median of repeats (>= 3, up to {budget:g} s per measurement);"
          " each measurement in its own subprocess; outputs checked against a float64 reference first")
    busy0, own0, t_start = busy_cpu_s(), own_cpu_s(), time.perf_counter()

    # (case, batch, peer, threads) measurements
    jobs: List[Tuple[str, int, str, int]] = []
    for case in ("chain16", "chain256"):
        jobs += [(case, 0, p, 1) for p in peers]
    for case in ("mlp", "xfmr"):
        for bsz in batches:
            for p in peers:
                for th in ((1,) if p in SINGLE_THREAD else (1, 2)):
                    jobs.append((case, bsz, p, th))

    results: Dict[Tuple[str, int, str, int], Dict[str, Any]] = {}
    failures: List[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_run_") as tmp:
        prepared: Dict[Tuple[str, int], Tuple[str, str]] = {}
        for case, bsz, peer, th in jobs:
            key = (case, bsz)
            if key not in prepared:
                d = make_data(case, max(bsz, 1))
                data, ref = os.path.join(tmp, f"{case}_{bsz}.npz"), os.path.join(tmp, f"{case}_{bsz}_ref.npy")
                np.savez(data, **d)
                np.save(ref, reference(case, d, chain))
                prepared[key] = (data, ref)
            slow = peer == "ge-eager" or case == "xfmr"
            spec = {"peer": peer, "case": case, "threads": th, "chain": chain, "tmp": tmp,
                    "data": prepared[key][0], "ref": prepared[key][1],
                    "out": os.path.join(tmp, f"out_{case}_{bsz}_{peer}_{th}.npy"),
                    "warmup": 1 if (args.quick or slow) else 3, "min_repeats": 2 if args.quick else 3,
                    "max_repeats": 2000, "budget": budget}
            r = run_worker(spec, timeout=300)
            results[(case, bsz, peer, th)] = r
            if "error" in r:
                failures.append(f"{PEER_LABEL[peer]} {case} b{bsz} t{th}: {r['error']}")
        # cross-check: every peer's output against every other's
        cross: Dict[Tuple[str, int], float] = {}
        for key in prepared:
            outs = [(f"{PEER_LABEL[p]} {t}t", np.load(os.path.join(tmp, f"out_{c}_{b}_{p}_{t}.npy")))
                    for (c, b, p, t), r in results.items() if (c, b) == key and "error" not in r]
            worst = 0.0
            for i, (na, a) in enumerate(outs):
                for nb, o in outs[i + 1:]:
                    np.testing.assert_allclose(a, o, **tolerance(key[0]), err_msg=f"{key}: {na} vs {nb}")
                    worst = max(worst, float(np.max(np.abs(a - o))))
            cross[key] = worst

    def med(case: str, bsz: int, peer: str, th: int) -> Optional[float]:
        r = results.get((case, bsz, peer, th))
        return None if r is None or "error" in r else r["median_s"]

    def ratio(a: Optional[float], b: Optional[float], width: int) -> str:
        return fmt(a / b if a and b else None, width, 2)

    def label(p: str, t: int) -> str:
        return PEER_LABEL[p] + ("" if p in SINGLE_THREAD else f" {t}t")

    # Table 1: per-op time on the chains
    print()
    print(f"## chains of {chain} Adds: µs per op (median run / {chain}), 1 thread")
    head = " ".join(f"{PEER_LABEL[p]:>12}" for p in peers)
    extra = f" {'ge/ort':>7} {'eager/ort':>9}" if {"ge", "ge-eager", "ort"} <= set(peers) else ""
    print(f"{'shape':>10} {head}{extra}  max|Δ| peers")
    for case, shape in (("chain16", "[16]"), ("chain256", "[256,256]")):
        us = {p: (lambda v: None if v is None else v / chain * 1e6)(med(case, 0, p, 1)) for p in peers}
        row = f"{shape:>10} " + " ".join(fmt(us[p], 12) for p in peers)
        if extra:
            row += " " + ratio(us["ge"], us["ort"], 7) + " " + ratio(us["ge-eager"], us["ort"], 9)
        print(f"{row}  {cross.get((case, 0), float('nan')):.1e}")
    notes = {f"{PEER_LABEL[p]}: {r['note']}" for (c, _, p, _), r in results.items()
             if c.startswith("chain") and "error" not in r and r["note"]}
    if notes:
        print("#   " + "; ".join(sorted(notes)))

    # Table 2: models
    mcols = [(p, t) for p in peers for t in ((1,) if p in SINGLE_THREAD else (1, 2))]
    print()
    print("## models: ms per run (median); ratios compare ge graph mode with onnxruntime at the same"
          " thread count")
    head = " ".join(f"{label(p, t):>14}" for p, t in mcols)
    extra = f" {'ge/ort 1t':>9} {'ge/ort 2t':>9}" if {"ge", "ort"} <= set(peers) else ""
    print(f"{'model':>5} {'batch':>5} {head}{extra}  max|Δ| peers")
    for case in ("mlp", "xfmr"):
        for bsz in batches:
            ms = {(p, t): (lambda v: None if v is None else v * 1e3)(med(case, bsz, p, t)) for p, t in mcols}
            row = f"{case:>5} {bsz:>5} " + " ".join(fmt(ms[c], 14) for c in mcols)
            if extra:
                row += " " + ratio(ms[("ge", 1)], ms[("ort", 1)], 9) + " " + ratio(ms[("ge", 2)], ms[("ort", 2)], 9)
            print(f"{row}  {cross.get((case, bsz), float('nan')):.1e}")
    notes = {f"{PEER_LABEL[p]}: {r['note']}" for (c, _, p, _), r in results.items()
             if c == "xfmr" and "error" not in r and r["note"]}
    if notes:
        print("#   transformer: " + "; ".join(sorted(notes)))

    # Table 3: memory
    print()
    print("## peak memory, MiB: what building, compiling and running adds to the process's RSS after its"
          " imports and the loading of inputs and weights (peak reset there); in () the process's whole peak")
    print(f"{'case':>10} " + " ".join(f"{label(p, t):>16}" for p, t in mcols))
    for case, bsz in [("chain16", 0), ("chain256", 0)] + [(c, b) for c in ("mlp", "xfmr") for b in batches]:
        cells = []
        for p, t in mcols:
            r = results.get((case, bsz, p, t))
            if r is None and case.startswith("chain"):
                cells.append(" " * 16)
            elif r is None or "error" in r:
                cells.append(f"{'-':>16}")
            else:
                cells.append(f"{r['peak_delta_mib']:>9.1f} ({r['peak_total_mib']:>4.0f})")
        print(f"{case if case.startswith('chain') else f'{case} b{bsz}':>10} " + " ".join(cells))
    if any(not r.get("delta_exact", True) for r in results.values()):
        print("#   (some deltas are ru_maxrss differences: /proc/self/clear_refs was not writable)")

    # The aims
    print()
    g16, e16, o16 = med("chain16", 0, "ge", 1), med("chain16", 0, "ge-eager", 1), med("chain16", 0, "ort", 1)
    if g16:
        us16 = g16 / chain * 1e6
        print(f"# aim: ge graph mode <= 0.1 µs/op on the [16] chain: {us16:.3f} -> "
              f"{'met' if us16 <= 0.1 else 'missed'}")
    if e16 and o16:
        print(f"# aim: ge eager no slower than onnxruntime on the [16] chain: {e16 / o16:.2f}x -> "
              f"{'met' if e16 <= o16 else 'missed'}")
    for case in ("mlp", "xfmr"):
        for bsz in batches:
            g, o = med(case, bsz, "ge", 1), med(case, bsz, "ort", 1)
            if g and o:
                print(f"# aim: {case} b{bsz} within 1.5x of onnxruntime at 1 thread: {g / o:.2f}x -> "
                      f"{'met' if g <= 1.5 * o else 'missed'}")
    for f in failures:
        print(f"# failed: {f}")
    wall = time.perf_counter() - t_start
    busy1 = busy_cpu_s()
    others = "" if busy0 is None or busy1 is None else (
        f"; other processes used {max(0.0, (busy1 - busy0) - (own_cpu_s() - own0)) / wall:.2f} of the"
        f" {os.cpu_count()} CPUs meanwhile (above ~0.1 the 2-thread columns are unreliable)")
    print(f"# total {wall:.0f} s{others}")


if __name__ == "__main__":
    main(sys.argv[1:])
