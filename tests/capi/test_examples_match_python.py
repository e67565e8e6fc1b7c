"""The C and C++ examples (examples/c, examples/cpp) against the Python API (issue 23: "match
the Python results for the same graphs").

Each example is compiled with the system compiler (``CC`` / ``CXX``) against es-capi's headers
and library (``cargo build -p es-capi``: a no-op after ``make test``'s cargo test) and run with
``ES_EXAMPLE_OUT`` set, so that every graph it runs is saved with its inputs and outputs
(examples/c/record.h). Then, for each run, the same graph is built here with ``ge.es``:

- its structure is the C graph's (the complete text dumps are equal);
- the inputs the example fed are the ones written here;
- a ge Session runs the Python graph, and the saved C graph loaded in Python, on those inputs,
  and both give exactly the example's outputs.

The examples check their own results too (``cargo test -p es-capi`` runs them under ASan).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
from ge.es import GraphBuilder
from ge.es.all import BatchMatMulV2, If, MatMulV2, Relu, SplitD
from ge.graph import DataType, DumpFormat, Graph
from ge.session import Session

ROOT = Path(__file__).resolve().parents[2]

# One run of an example graph: the graph built with the Python API and the inputs it is fed.
Run = Tuple[Graph, List[np.ndarray]]


@pytest.fixture(scope="module")
def capi() -> Dict[str, Path]:
    """es-capi's library directory and its two header directories, built by cargo (dev profile,
    as cargo test builds it)."""
    cargo = os.environ.get("CARGO", "cargo")
    proc = subprocess.run(
        [cargo, "build", "-p", "es-capi", "--message-format=json-render-diagnostics"],
        cwd=ROOT, capture_output=True, text=True, timeout=3600,
    )
    assert proc.returncode == 0, f"cargo build -p es-capi failed:\n{proc.stderr[-4000:]}"
    lib = generated = None
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "es_capi":
            lib = next(Path(f).parent for f in msg["filenames"] if f.endswith((".so", ".dylib")))
        elif msg.get("reason") == "build-script-executed" and "es-capi" in msg["package_id"]:
            generated = Path(msg["out_dir"]) / "include"
    assert lib is not None and generated is not None, "cargo named no es_capi library or build output"
    return {"lib": lib, "include": ROOT / "crates/es-capi/include", "generated": generated}


def run_example(capi: Dict[str, Path], lang: str, name: str, tmp_path: Path) -> Path:
    """Compiles and runs examples/<lang>/<name>; returns the directory of its recorded runs."""
    if lang == "c":
        cc, std, src = os.environ.get("CC", "cc"), "-std=c11", ROOT / f"examples/c/{name}.c"
    else:
        cc, std, src = os.environ.get("CXX", "c++"), "-std=c++17", ROOT / f"examples/cpp/{name}.cpp"
    assert shutil.which(cc), f"no C/C++ compiler '{cc}' (CC / CXX pick one)"
    exe, out = tmp_path / f"{lang}_{name}", tmp_path / "runs"
    out.mkdir()
    lib = capi["lib"]
    subprocess.run(
        [cc, std, "-Wall", "-Wextra", "-Werror", f"-I{capi['include']}", f"-I{capi['generated']}", str(src),
         "-o", str(exe), f"-L{lib}", "-les_capi", f"-Wl,-rpath,{lib}", "-lm"],
        check=True, capture_output=True, text=True, timeout=600,
    )
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["ES_EXAMPLE_OUT"] = str(out)
    proc = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{exe.name} failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def f32(values: Sequence[float], shape: Sequence[int]) -> np.ndarray:
    return np.array(values, dtype=np.float32).reshape(shape)


# ---- the examples' graphs, built with the Python API -----------------------------------------


def add_graph() -> Graph:
    """examples/c/add.c, examples/cpp/add.cpp: the seed's add graph."""
    b = GraphBuilder("graph_name")
    data0, data1 = b.create_inputs(2)
    return b.build_and_reset([data0 + data1])


def add_runs() -> List[Run]:
    return [(add_graph(), [f32([1, 2, 3], [3]), f32([10, 20, 30], [3])])]


def c_mlp_runs() -> List[Run]:
    """examples/c/mlp.c: MatMulV2 with the optional bias given and offset_w absent, Relu, a
    second MatMulV2 without bias."""
    b = GraphBuilder("mlp")
    x = b.create_input(0)
    w = b.create_const_float([1, 0, 0, 1, 1, 1], [3, 2])
    bias = b.create_const_float([-2, 0, -4], [3])
    h = Relu(MatMulV2(x, w, bias, None, transpose_x1=False, transpose_x2=True, offset_x=0))
    y = MatMulV2(h, b.create_const_float([1, 1, 1], [3, 1]), None, None)
    return [(b.build_and_reset([h, y]), [f32([1, 2, 3, 4], [2, 2])])]


def cpp_mlp_runs() -> List[Run]:
    """examples/cpp/mlp.cpp: the bias as numbers, arithmetic with numbers, and BatchMatMulV2
    called in its 8.0.0 form (offset_w absent)."""
    b = GraphBuilder("mlp")
    x = b.create_input(0)
    w = b.create_const_float([1, 0, 0, 1, 1, 1], [3, 2])
    h = Relu(MatMulV2(x, w, [-2.0, 0.0, -4.0], None, transpose_x1=False, transpose_x2=True))
    y = MatMulV2(h, b.create_const_float([1, 1, 1], [3, 1]), None, None)
    z = y * 2.0 - 1
    u = 10 / (z + 2.0)
    v = BatchMatMulV2(x, w, None, adj_x1=False, adj_x2=True)
    return [(b.build_and_reset([h, z, u, v]), [f32([1, 2, 3, 4], [2, 2])])]


def if_runs(branch_input: Optional[str]) -> List[Run]:
    """examples/c/if_subgraph.c, examples/cpp/if_subgraph.cpp: If with then = Relu(x) and
    else = x + 1, run with cond true, then false; the branches' input is named ``branch_input``
    (the C example leaves the name to the builder)."""

    def branch(name: str, relu: bool) -> Graph:
        bb = GraphBuilder(name)
        x = bb.create_input(0, name=branch_input, data_type=DataType.DT_FLOAT, shape=[2])
        return bb.build_and_reset([Relu(x) if relu else x + bb.create_scalar_float(1.0)])

    b = GraphBuilder("main")
    cond = b.create_input(0, name="cond", data_type=DataType.DT_BOOL)
    x = b.create_input(1, name="x", data_type=DataType.DT_FLOAT, shape=[2])
    out = If(cond, [x], 1, branch("then", True), branch("else", False))
    g = b.build_and_reset([out[0]])
    xv = f32([-1.5, 2.0], [2])
    return [(g, [np.array(True), xv]), (g, [np.array(False), xv])]


def split_runs() -> List[Run]:
    """examples/c/split.c, examples/cpp/split.cpp: SplitD of a [6] input into 3 outputs."""
    b = GraphBuilder("split")
    x = b.create_input(0)
    return [(b.build_and_reset(SplitD(x, 3, split_dim=0, num_split=3)), [f32([1, 2, 3, 4, 5, 6], [6])])]


EXAMPLES: Dict[Tuple[str, str], Callable[[], List[Run]]] = {
    ("c", "add"): add_runs,
    ("cpp", "add"): add_runs,
    ("c", "mlp"): c_mlp_runs,
    ("cpp", "mlp"): cpp_mlp_runs,
    ("c", "if_subgraph"): lambda: if_runs(None),
    ("cpp", "if_subgraph"): lambda: if_runs("x"),
    ("c", "split"): split_runs,
    ("cpp", "split"): split_runs,
}


def run_graph(graph: Graph, inputs: List[np.ndarray]) -> List[np.ndarray]:
    s = Session()
    s.add_graph(1, graph)
    return [t.numpy() for t in s.run_graph(1, inputs)]


def same_array(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{what}: {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}")
    np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("lang,name", sorted(EXAMPLES), ids=lambda v: v)
def test_example_matches_python(capi, tmp_path, lang, name):
    recorded = run_example(capi, lang, name, tmp_path)
    runs = EXAMPLES[(lang, name)]()
    assert sorted(p.name for p in recorded.glob("graph*.ge")) == [f"graph{k}.ge" for k in range(len(runs))]
    for k, (py_graph, inputs) in enumerate(runs):
        c_graph = Graph.load(recorded / f"graph{k}.ge")
        assert c_graph.dump_to_stream(DumpFormat.kTxt) == py_graph.dump_to_stream(DumpFormat.kTxt), (
            f"run {k}: the example's graph differs from the Python one:\n"
            f"{c_graph.dump_to_stream(DumpFormat.kReadable)}\n{py_graph.dump_to_stream(DumpFormat.kReadable)}")
        fed = sorted(recorded.glob(f"graph{k}_in*.npy"))
        assert len(fed) == len(inputs)
        for i, want in enumerate(inputs):
            same_array(np.load(recorded / f"graph{k}_in{i}.npy"), want, f"run {k} input {i}")
        c_out = [np.load(recorded / f"graph{k}_out{i}.npy") for i in range(len(list(recorded.glob(f"graph{k}_out*"))))]
        py_out = run_graph(py_graph, inputs)
        assert len(py_out) == len(c_out) > 0
        for i, (got, want) in enumerate(zip(py_out, c_out)):
            same_array(got, want, f"run {k} output {i}: Python's graph vs the example")
        for i, (got, want) in enumerate(zip(run_graph(c_graph, inputs), c_out)):
            same_array(got, want, f"run {k} output {i}: the example's graph run from Python vs the example")
