"""Compile a graph offline to an .om model, then load and run it without compiling again.

GE's offline build API (``ge.offline_compile``) writes the model; ge-rs's ``Session.add_model``
runs it (GE would load it through ACL). Run: ``python examples/offline_compile/compile_and_run.py
[OUT_DIR]``. The same from the command line: ``ge compile --model=m.onnx --framework=5
--output=m --input_shape="x:8,64"`` then ``ge run m.om``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ge.es import GraphBuilder
from ge.es.all import Add, MatMulV2, Relu
from ge.offline_compile import build_finalize, build_initialize, build_model, save_model
from ge.session import Session


def make_graph(batch: int = 8, width: int = 64, depth: int = 4):
    """An MLP whose bias is the sum of two constants (folded at compile)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("mlp")
    h = b.create_input(0, shape=[-1, width])  # batch unknown: the build gives it
    for _ in range(depth):
        w = b.create_const_float((rng.standard_normal(width * width) / width ** 0.5).tolist(), [width, width])
        half = b.create_const_float([0.05] * width, [width])
        h = Relu(MatMulV2(h, w) + Add(half, half))
    return b.build_and_reset([h])


def main(out_dir: Path) -> int:
    graph = make_graph()
    build_initialize({"soc_version": "Ascend910B1"})  # recorded in the model; the CPU runs any
    try:
        model = build_model(graph, {"input_shape": "input_0:8,64"})
        save_model(str(out_dir / "mlp"), model)  # writes mlp.om
    finally:
        build_finalize()
    print(f"mlp.om: {model.length} bytes, {model.manifest()['graphs'][0]['inputs']}")

    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    Session()  # the first session of a process pays a one-time start-up: keep it out of both timings
    t0 = time.perf_counter()
    offline = Session()
    offline.add_model(0, str(out_dir / "mlp.om"))  # read the file: no pass, no inference
    y_om = offline.run_graph(0, [x])[0].numpy()
    t_om = time.perf_counter() - t0

    t0 = time.perf_counter()
    online = Session()
    online.add_graph(0, graph)  # compiled at its first run
    y_graph = online.run_graph(0, [x])[0].numpy()
    t_graph = time.perf_counter() - t0

    np.testing.assert_allclose(y_om, y_graph, rtol=1e-5, atol=1e-6)
    print(f"load to first result: .om {t_om * 1e3:.2f} ms, from the graph {t_graph * 1e3:.2f} ms; "
          "outputs agree")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as d:
        sys.exit(main(Path(d)))
