"""Loading and saving large models (issue 19, point 4): `ge.onnx.load` of an ONNX file with
~100 MB of initializers against `onnx.load` and onnxruntime's session creation (which reads and
checks the same file), and ge's own `.ge`/`.air` save and load, beside the time to read the
file's bytes (the disk-speed floor, from the page cache after the first run).

Usage: python benches/python/bench_load.py [OUT_DIR] [MB] [REPEATS]
Prints seconds (median of REPEATS, each in this process after one warm-up) and MB/s.
"""
import os, statistics, sys, tempfile, time
from pathlib import Path

import numpy as np

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ge_bench_load_"))
MB = int(sys.argv[2]) if len(sys.argv) > 2 else 100
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
OUT.mkdir(parents=True, exist_ok=True)


def make_model(path: Path) -> None:
    """An MLP whose 1024x1024 float32 weights (4 MiB each) add up to about MB megabytes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    d = 1024
    layers = max(1, MB * 2**20 // (d * d * 4))
    rng = np.random.default_rng(0)
    nodes, inits, cur = [], [], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((d, d)) / d ** 0.5).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(np.zeros(d, np.float32), f"b{i}"))
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
        cur = f"h{i}"
    g = helper.make_graph(nodes, "big_mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, d])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, d])],
                          initializer=inits)
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def timed(fn) -> float:
    fn()  # warm-up (page cache, lazy imports)
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    import ge
    model = OUT / "big_mlp.onnx"
    if not model.exists():
        make_model(model)
    size_mb = model.stat().st_size / 2**20
    rows = [("read the file's bytes", timed(lambda: model.read_bytes()))]
    try:
        import onnx
        rows.append(("onnx.load", timed(lambda: onnx.load(str(model)))))
    except ImportError:
        pass
    try:
        import onnxruntime as ort
        so = ort.SessionOptions(); so.intra_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        rows.append(("onnxruntime InferenceSession (no optimisation)",
                     timed(lambda: ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"]))))
    except ImportError:
        pass
    rows.append(("ge.onnx.load", timed(lambda: ge.onnx.load(str(model)))))
    graph = ge.onnx.load(str(model))
    native = OUT / "big_mlp.ge"
    air = OUT / "big_mlp.air"
    rows.append(("ge Graph.save (.ge)", timed(lambda: graph.save(str(native)))))
    rows.append(("ge Graph.load (.ge)", timed(lambda: ge.graph.Graph.load(str(native)))))
    rows.append(("ge save .air", timed(lambda: graph.save_to_air(str(air)))))
    rows.append(("ge load .air", timed(lambda: ge.graph.Graph.load_from_air(str(air)))))
    print(f"model {model} ({size_mb:.0f} MiB), median of {REPEATS}, {os.cpu_count()} CPUs")
    print(f"{'what':50s} {'seconds':>9s} {'MiB/s':>9s}")
    for what, s in rows:
        print(f"{what:50s} {s:9.3f} {size_mb / s:9.0f}")


if __name__ == "__main__":
    main()
