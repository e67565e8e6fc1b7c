"""Load-to-first-result of an offline model: `.om` (Session.add_model, no compile stages) vs
compiling from the graph (`ge.onnx.load` or `Graph.load(".ge")` plus `add_graph`).

Usage: python benches/python/bench_offline.py OUT_DIR [BLOCKS] [conv|mlp]
(`conv`: BLOCKS Conv+BatchNorm+ReLU blocks, 64 channels, 56x56; `mlp`: BLOCKS blocks of width 128).
Each measurement is a fresh process; medians of 7 runs at 1 and 2 threads; needs `onnx`.
"""
import statistics, subprocess, sys, time, json
from pathlib import Path
import numpy as np

D = Path(sys.argv[1]); D.mkdir(exist_ok=True)
BLOCKS = int(sys.argv[2]) if len(sys.argv) > 2 else 16
KIND = sys.argv[3] if len(sys.argv) > 3 else "conv"

def make_mlp(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    d = 128
    cur = "x"
    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
    for i in range(BLOCKS):
        init(f"w{i}", rng.standard_normal((d, d)) / d ** 0.5); init(f"b{i}", 0.1 * rng.standard_normal(d))
        init(f"g{i}", 1 + 0.1 * rng.standard_normal(d)); init(f"e{i}", 0.5 * np.ones(d))
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Mul", [f"g{i}", f"e{i}"], [f"k{i}"]),  # constant: folds
                  helper.make_node("Mul", [f"a{i}", f"k{i}"], [f"s{i}"]),
                  helper.make_node("Sigmoid", [f"s{i}"], [f"q{i}"]),
                  helper.make_node("Mul", [f"s{i}", f"q{i}"], [f"h{i}"])]
        cur = f"h{i}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, d])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [4, d])], initializer=inits)
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def make_onnx(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    c, h = 64, 56
    cur = "x"
    def init(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
    for i in range(BLOCKS):
        w = rng.standard_normal((c, c, 3, 3)) * (2 / (9 * c)) ** 0.5
        init(f"w{i}", w)
        nodes.append(helper.make_node("Conv", [cur, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        for k, v in (("s", 1 + 0.1 * rng.standard_normal(c)), ("b", 0.1 * rng.standard_normal(c)),
                     ("m", 0.1 * rng.standard_normal(c)), ("v", 1 + 0.1 * rng.random(c))):
            init(f"{k}{i}", v)
        nodes.append(helper.make_node("BatchNormalization", [f"c{i}", f"s{i}", f"b{i}", f"m{i}", f"v{i}"], [f"n{i}"]))
        nodes.append(helper.make_node("Relu", [f"n{i}"], [f"r{i}"]))
        if i % 2 == 1:
            nodes.append(helper.make_node("Add", [f"r{i}", f"r{i-1}"], [f"a{i}"])); cur = f"a{i}"
        else:
            cur = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [cur], ["g"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"]))
    init("fw", rng.standard_normal((c, 10)) / 8); nodes.append(helper.make_node("MatMul", ["f", "fw"], ["y"]))
    g = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializer=inits)
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)

CHILD = r'''
import sys, time
t0 = time.perf_counter()
import numpy as np
from ge.session import Session
kind, path, threads = sys.argv[1], sys.argv[2], sys.argv[3]
x = np.load(sys.argv[4])
t1 = time.perf_counter()
s = Session({"ge.threads": threads})
if kind == "om":
    s.add_model(0, path)
elif kind == "onnx":
    import ge.onnx
    s.add_graph(0, ge.onnx.load(path))
else:
    from ge.graph import Graph
    s.add_graph(0, Graph.load(path))
ta = time.perf_counter()
y = s.run_graph(0, [x])[0].numpy()
t2 = time.perf_counter()
np.save(sys.argv[5], y)
t3 = time.perf_counter(); s.run_graph(0, [x]); t4 = time.perf_counter()
print(f"{(t2 - t1) * 1e3:.3f} {(t4 - t3) * 1e3:.3f} {(ta - t1) * 1e3:.3f} {(t2 - ta) * 1e3:.3f}")
'''

onnx_path = D / "convnet.onnx"
(make_mlp if KIND == "mlp" else make_onnx)(onnx_path)
import ge.onnx
from ge.offline_compile import build_initialize, build_model, save_model
g = ge.onnx.load(onnx_path); g.save(str(D / "convnet.ge"))
build_initialize({})
t = time.perf_counter(); m = build_model(g); tb = time.perf_counter() - t
save_model(str(D / "convnet"), m)
x = np.random.default_rng(1).standard_normal((4, 128) if KIND == "mlp" else (1, 64, 56, 56)).astype(np.float32); np.save(D / "x.npy", x)
(D / "child.py").write_text(CHILD)
nodes = len(g.get_all_nodes()); cnodes = len(m.graph().get_all_nodes())
print(f"model: {KIND} {BLOCKS} blocks, {nodes} nodes as imported, {cnodes} after compile; "
      f"build_model {tb*1e3:.1f} ms; sizes: onnx {onnx_path.stat().st_size:,} B, om {m.length:,} B")
for threads in ("1", "2"):
    res = {}
    for kind, p in (("onnx", onnx_path), ("ge", D / "convnet.ge"), ("om", D / "convnet.om")):
        firsts, seconds, adds, runs1 = [], [], [], []
        for r in range(7):
            out = subprocess.run([sys.executable, str(D / "child.py"), kind, str(p), threads, str(D / "x.npy"),
                                  str(D / f"y_{kind}.npy")], capture_output=True, text=True, check=True).stdout.split()
            firsts.append(float(out[0])); seconds.append(float(out[1])); adds.append(float(out[2])); runs1.append(float(out[3]))
        res[kind] = (statistics.median(firsts), statistics.median(seconds), statistics.median(adds), statistics.median(runs1))
    ys = {k: np.load(D / f"y_{k}.npy") for k in res}
    assert np.allclose(ys["om"], ys["onnx"], rtol=1e-4, atol=1e-4), np.abs(ys["om"] - ys["onnx"]).max()
    for k, (f, s, a, r1) in res.items():
        print(f"threads {threads}  {k:>5}: load+first result {f:9.2f} ms = load/add {a:7.2f} + first run {r1:7.2f}   (next run {s:7.2f} ms)")
    print(f"threads {threads}  om vs onnx: {res['onnx'][0] / res['om'][0]:.2f}x faster; om vs .ge: {res['ge'][0] / res['om'][0]:.2f}x")
