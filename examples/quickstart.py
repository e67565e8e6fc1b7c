"""ge-rs quickstart (`make demo`): build a graph with ge.es, look at it, save it, load it back,
then run it on the CPU in eager and graph mode with a pass plugin from ASCEND_GE_PY_PASS_PATH."""

import os
import tempfile
import time
from pathlib import Path

import numpy as np

import ge
from ge.es import GraphBuilder, attr_scope
from ge.es.all import MatMulV2, Relu, ReduceSumD, Sigmoid
from ge.ge_global import GeApi
from ge.graph import DataType, DumpFormat, Graph
from ge.session import Session

PLUGINS = Path(__file__).resolve().parent / "pass_plugins"


def build_mlp() -> Graph:
    b = GraphBuilder("mlp")
    x = b.create_input(0, name="x", data_type=DataType.DT_FLOAT, shape=[-1, 4])  # batch dim unknown
    w1 = b.create_const(np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32))
    b1 = b.create_const(np.linspace(-0.5, 0.5, 8, dtype=np.float32))
    w2 = b.create_const(np.random.default_rng(1).standard_normal((8, 2), dtype=np.float32))
    with attr_scope({"_layer": "hidden"}):
        h = Relu(MatMulV2(x, w1) + b1)
    y = Sigmoid(h @ w2 + 0.5)             # `@` is MatMulV2 for 2-D tensors; numbers become constants
    total = ReduceSumD(y, axes=[1], keep_dims=True)
    return b.build_and_reset([y, total])


def main() -> None:
    graph = build_mlp()
    print(graph.dump_to_stream(DumpFormat.kReadable))

    # Mistakes raise where they are made, naming the op, the input and the types.
    b = GraphBuilder("oops")
    f = b.create_input(0, shape=[2])
    i = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    try:
        f + i
    except ge.GraphBuildError as e:
        print(f"eager validation: {e}\n")

    path = os.path.join(tempfile.mkdtemp(), "mlp.ge")
    graph.save(path)
    loaded = Graph.load(path)
    same = loaded.dump_to_stream(DumpFormat.kTxt) == graph.dump_to_stream(DumpFormat.kTxt)
    print(f"saved to {path} ({os.path.getsize(path)} bytes); loaded back identical: {same}")
    assert same
    run(graph)


def timed(session: Session, x: np.ndarray, repeat: int) -> float:
    """Seconds per run (after one warm-up run)."""
    session.run_graph(1, [x])
    t0 = time.perf_counter()
    for _ in range(repeat):
        session.run_graph(1, [x])
    return (time.perf_counter() - t0) / repeat


def run(graph: Graph) -> None:
    # Pass plugins come from ASCEND_GE_PY_PASS_PATH: here, examples/pass_plugins (MatMulV2 + bias
    # -> MatMulV2 with its bias input), unless the environment names other ones.
    os.environ.setdefault("ASCEND_GE_PY_PASS_PATH", str(PLUGINS))
    GeApi.ge_initialize()
    try:
        x = np.random.default_rng(2).standard_normal((3, 4), dtype=np.float32)
        eager, replay = Session({"ge.graphMode": "off"}), Session({"ge.graphMode": "on"})
        for s in (eager, replay):
            s.add_graph(1, graph)
        y_eager, total_eager = (t.numpy() for t in eager.run_graph(1, [x]))
        y_graph, total_graph = (t.numpy() for t in replay.run_graph(1, [x]))
        assert np.array_equal(y_eager, y_graph) and np.array_equal(total_eager, total_graph)
        print("\noutputs for x of shape", x.shape, "(eager and graph mode agree):")
        print(np.array2string(y_graph, precision=4))
        print(np.array2string(total_graph, precision=4))
        print()
        print(replay.compile_report(1))
        t_eager, t_graph = timed(eager, x, 200), timed(replay, x, 200)
        stats = replay.graph_cache_stats(1)
        print(f"\neager: {t_eager * 1e6:.1f} us per run (compiles every run); "
              f"graph mode: {t_graph * 1e6:.1f} us per run (replays the captured plan: "
              f"{stats['hits']} hits, {stats['misses']} miss)")
    finally:
        GeApi.ge_finalize()


if __name__ == "__main__":
    main()
