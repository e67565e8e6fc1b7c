"""The model commands of the ``ge`` console script: ``convert``, ``run``, ``show`` and ``compile``.

A MODEL is an ONNX model (``.onnx``), GE's ModelDef (``.air``), an offline model of ge-rs
(``.om``, from ``ge compile`` or ``ge.offline_compile``: ``run`` runs it without compiling again,
``show`` and ``convert`` take its first compiled graph) or a graph in ge's native format (anything
else, as written by ``Graph.save`` or ``ge convert -o model.ge``).

``ge compile --model=M --framework=5 --output=OUT [--input_shape="x:1,3;y:2"] [--soc_version=V]``
takes atc's flags (``--framework``: 5 ONNX, 1 ``.air``; others are refused) and writes
``OUT.om``; ``python -m ge.pyatc`` runs it with the same flags.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np


def add_parsers(sub: Any) -> None:
    cv = sub.add_parser("convert", help="convert a model (ONNX, .air, native) to .ge, .air or .onnx")
    cv.add_argument("model", type=Path)
    cv.add_argument("-o", "--out", type=Path, required=True,
                    help="output file: .air (GE ModelDef), .onnx, or anything else for ge's native format")
    cv.add_argument("--unsupported", choices=("error", "opaque"), default="error",
                    help="ONNX op types without a translator: fail (default) or keep as opaque nodes")
    rn = sub.add_parser("run", help="run a model once or several times and summarise its outputs")
    rn.add_argument("model", type=Path)
    rn.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                    help="an input from a .npy file, by graph-input name or in order; inputs not given "
                         "get random data of their static shape")
    rn.add_argument("--device", choices=("cpu", "acl", "auto"), default="cpu")
    rn.add_argument("--mode", choices=("graph", "eager"), default="graph",
                    help="graph: capture a plan and replay it (default); eager: node by node")
    rn.add_argument("--repeat", type=int, default=1, help="timed runs after the first (default 1)")
    rn.add_argument("--threads", type=int, default=None, help="ge.threads for the session")
    rn.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    rn.add_argument("--save-outputs", type=Path, default=None, metavar="DIR",
                    help="write each output to DIR/output_<i>.npy")
    rn.add_argument("--graph", type=int, default=0, help="for a bundle .om: the graph to run (default 0)")
    cp = sub.add_parser("compile", help="compile a model offline to an .om file (atc's flags)")
    cp.add_argument("--model", type=Path, required=True, help="the model: ONNX, .air or a native graph")
    cp.add_argument("--framework", default=None,
                    help="atc's framework: 5 (ONNX) or 1 (.air); default: from the model's suffix")
    cp.add_argument("--output", required=True, help="output file; '.om' is added unless it ends with it")
    cp.add_argument("--input_shape", default=None, metavar='"NAME:D,D,...;NAME:..."',
                    help="static shapes of the inputs (needed for inputs of unknown dims)")
    for flag in _ATC_RECORDED:
        cp.add_argument(f"--{flag}", default=None,
                        help="accepted and recorded in the model (the CPU ignores it)")
    sh = sub.add_parser("show", help="op histogram, parameters, inputs and outputs of a model")
    sh.add_argument("model", type=Path)
    sh.add_argument("--svg", type=Path, default=None, help="draw the graph to this SVG (needs graphviz's dot)")


# atc's flags that `ge compile` accepts and records in the model's options.
_ATC_RECORDED = ("soc_version", "input_format", "precision_mode", "log", "op_select_implmode")

# atc's --framework values.
_FRAMEWORKS = {"0": "Caffe", "1": "MindSpore (.air)", "3": "TensorFlow", "5": "ONNX"}


class CliError(Exception):
    """A user error: printed as ``ge: message`` with exit status 1."""


def load_model(path: Path, unsupported: str = "error") -> Any:
    from ge.graph import Graph

    if not path.is_file():
        raise CliError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        import ge.onnx

        return ge.onnx.load(path, unsupported=unsupported)
    if suffix == ".om":
        from ge.offline_compile import load_model as load_om

        return load_om(path).graph(0)
    if suffix == ".air":
        if not hasattr(Graph, "load_from_air"):
            raise CliError("not supported: reading .air files (Graph.load_from_air) in this build")
        return Graph.load_from_air(str(path))
    return Graph.load(str(path))


def _data_nodes(graph: Any) -> List[Any]:
    return sorted((n for n in graph.get_direct_nodes() if n.type in ("Data", "RefData")),
                  key=lambda n: n.get_attr("index"))


def _desc_text(desc: Any) -> str:
    shape = desc.get_shape()
    dims = "?" if shape == [-2] else "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"
    return f"{desc.get_data_type().name.replace('DT_', '').lower()} {dims}"


def _count_ops(graph: Any) -> collections.Counter:
    return collections.Counter(n.type for n in graph.get_all_nodes())


def cmd_convert(a: argparse.Namespace) -> int:
    g = load_model(a.model, a.unsupported)
    out: Path = a.out
    suffix = out.suffix.lower()
    if suffix == ".air":
        if not hasattr(g, "save_to_air"):
            raise CliError("not supported: writing .air files (Graph.save_to_air) in this build")
        g.save_to_air(str(out))
    elif suffix == ".onnx":
        import ge.onnx

        if not hasattr(ge.onnx, "save"):
            raise CliError("not supported: ONNX export (ge.onnx.save) in this build")
        ge.onnx.save(g, out)
    else:
        g.save(str(out))
    print(f"{a.model} -> {out} ({sum(_count_ops(g).values())} nodes)")
    return 0


def _numpy_dtype(desc: Any) -> np.dtype:
    from ge.graph.tensor import numpy_dtype

    return numpy_dtype(desc.get_data_type())


def _inputs(graph: Any, specs: Sequence[str], seed: int) -> List[np.ndarray]:
    data = _data_nodes(graph)
    named: Dict[str, np.ndarray] = {}
    ordered: List[np.ndarray] = []
    for s in specs:
        name, sep, file = s.rpartition("=")
        try:
            arr = np.load(file)
        except (OSError, ValueError) as e:
            raise CliError(f"--input {s}: {e}") from e
        if sep:
            if name not in {n.name for n in data}:
                raise CliError(f"--input {s}: the graph has no input '{name}' "
                               f"(inputs: {', '.join(n.name for n in data)})")
            named[name] = arr
        else:
            ordered.append(arr)
    rng = np.random.default_rng(seed)
    out = []
    for i, n in enumerate(data):
        if n.name in named:
            out.append(named[n.name])
            continue
        if i < len(ordered):
            out.append(ordered[i])
            continue
        desc = n.get_output_desc(0)
        shape = desc.get_shape()
        if shape == [-2] or any(d < 0 for d in shape):
            raise CliError(f"input '{n.name}' has shape {_desc_text(desc)}: give it with --input {n.name}=FILE.npy")
        dt = _numpy_dtype(desc)
        if dt.kind == "f":
            arr = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            arr = rng.integers(0, 2, shape).astype(dt)
        else:
            arr = rng.integers(0, 10, shape).astype(dt)
        out.append(arr)
    return out


def cmd_run(a: argparse.Namespace) -> int:
    from ge.session import Session

    if a.repeat < 1:
        raise CliError("--repeat must be at least 1")
    opts = {"ge.device": a.device, "ge.graphMode": "on" if a.mode == "graph" else "off"}
    if a.threads is not None:
        opts["ge.threads"] = str(a.threads)
    offline = a.model.suffix.lower() == ".om"
    if offline:
        from ge.offline_compile import load_model as load_om

        if not a.model.is_file():
            raise CliError(f"{a.model}: no such file")
        model = load_om(a.model)
        if not 0 <= a.graph < model.graph_count:
            raise CliError(f"--graph {a.graph}: the model has {model.graph_count} graph(s)")
        g = model.graph(a.graph)
        s = Session(opts)
        s.add_model(0, model, index=a.graph)
    else:
        g = load_model(a.model)
        s = Session(opts)
        s.add_graph(0, g)
    inputs = _inputs(g, a.input, a.seed)
    t0 = time.perf_counter()
    outs = s.run_graph(0, inputs)
    first = time.perf_counter() - t0
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        outs = s.run_graph(0, inputs)
        times.append(time.perf_counter() - t0)
    for i, t in enumerate(outs):
        arr = np.asarray(t.numpy())
        stats = ""
        if arr.size and arr.dtype.kind in "fiub":
            f = arr.astype(np.float64)
            stats = f"  min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}"
        print(f"output {i}: {arr.dtype} {list(arr.shape)}{stats}")
        if a.save_outputs is not None:
            a.save_outputs.mkdir(parents=True, exist_ok=True)
            np.save(a.save_outputs / f"output_{i}.npy", arr)
    ms = [t * 1e3 for t in times]
    what = "planning the compiled model" if offline else "compiling"
    print(f"first run {first * 1e3:.3f} ms (includes {what}); {len(ms)} timed run(s): "
          f"mean {statistics.fmean(ms):.3f} ms, median {statistics.median(ms):.3f} ms, min {min(ms):.3f} ms "
          f"[device {a.device}, mode {a.mode}]")
    return 0


def _parameters(graph: Any) -> Tuple[int, int, int]:
    """(Const nodes, elements, bytes) over the graph and its subgraphs."""
    count = elems = nbytes = 0
    for n in graph.get_all_nodes():
        if n.type != "Const":
            continue
        v = n.get_attr("value")
        arr = np.asarray(v.numpy()) if hasattr(v, "numpy") else np.asarray(v)
        count += 1
        elems += arr.size
        nbytes += arr.nbytes
    return count, elems, nbytes


def _dot(graph: Any) -> str:
    ids: Dict[str, str] = {}
    lines = ["digraph G {", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", '
             'fontname="Helvetica", fontsize=10];']

    def nid(n: Any) -> str:
        return ids.setdefault(n.name, f"n{len(ids)}")

    for n in graph.get_direct_nodes():
        label = f"{n.type}\\n{n.name}".replace('"', "'")
        fill = {"Data": "#d8f0d8", "Const": "#f4f4f4"}.get(n.type, "#eef3fb")
        lines.append(f'  {nid(n)} [label="{label}", fillcolor="{fill}"];')
    for n in graph.get_direct_nodes():
        for i in range(n.get_inputs_size()):
            try:
                src = n.get_in_data_nodes_and_port_indexes(i)
            except RuntimeError:  # an unconnected input (a Data node's, an absent optional one)
                continue
            s, port = src
            desc = n.get_input_desc(i)
            lines.append(f'  {nid(s)} -> {nid(n)} [label="{_desc_text(desc)}", fontsize=8];')
    for k, (n, port) in enumerate(graph.get_outputs()):
        lines.append(f'  out{k} [label="output {k}", shape=ellipse, fillcolor="#fde7c9"];')
        lines.append(f"  {nid(n)} -> out{k};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def cmd_show(a: argparse.Namespace) -> int:
    g = load_model(a.model, "opaque")
    ops = _count_ops(g)
    print(f"graph '{g.name}': {sum(ops.values())} nodes, {len(g.get_all_subgraphs())} subgraphs")
    print("inputs:")
    for n in _data_nodes(g):
        print(f"  {n.get_attr('index')}: {n.name}  {_desc_text(n.get_output_desc(0))}")
    print("outputs:")
    for k, (n, port) in enumerate(g.get_outputs()):
        print(f"  {k}: {n.name}:{port}  {_desc_text(n.get_output_desc(port))}")
    count, elems, nbytes = _parameters(g)
    print(f"parameters: {count} constants, {elems:,} elements, {nbytes / 1e6:.2f} MB")
    print("operators:")
    width = max((len(t) for t in ops), default=0)
    for t, c in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {t:<{width}}  {c}")
    if a.svg is not None:
        dot = shutil.which("dot")
        if dot is None:
            raise CliError("--svg needs graphviz's `dot` program, which is not installed "
                           "(e.g. apt install graphviz)")
        r = subprocess.run([dot, "-Tsvg", "-o", str(a.svg)], input=_dot(g), text=True,
                           capture_output=True, check=False)
        if r.returncode != 0:
            raise CliError(f"dot failed: {r.stderr.strip()}")
        print(f"drawing written to {a.svg}")
    return 0


def _framework_model(a: argparse.Namespace) -> Any:
    from ge.graph import Graph

    fw = (a.framework or "").strip().lower()
    if not a.model.is_file():
        raise CliError(f"{a.model}: no such file")
    if fw in ("", "ge"):
        return load_model(a.model)
    if fw in ("5", "onnx"):
        import ge.onnx

        return ge.onnx.load(a.model)
    if fw in ("1", "air", "mindspore"):
        return Graph.load_from_air(str(a.model))
    name = _FRAMEWORKS.get(fw, repr(a.framework))
    raise CliError(f"not supported: --framework={a.framework} ({name}); "
                   "ge compile reads ONNX (5) and .air (1)")


def cmd_compile(a: argparse.Namespace) -> int:
    from ge.offline_compile import build_finalize, build_initialize, build_model, save_model

    if not a.output:
        raise CliError("--output must not be empty")
    t0 = time.perf_counter()
    g = _framework_model(a)
    recorded = {k: getattr(a, k) for k in _ATC_RECORDED if getattr(a, k) is not None}
    global_options = {k: v for k, v in recorded.items() if k == "soc_version"}
    build_options = {k: v for k, v in recorded.items() if k != "soc_version"}
    if a.input_shape is not None:
        build_options["input_shape"] = a.input_shape
    build_initialize(global_options)
    try:
        model = build_model(g, build_options)
        save_model(a.output, model)
    finally:
        build_finalize()
    out = a.output if a.output.endswith(".om") else a.output + ".om"
    nodes = sum(_count_ops(model.graph(0)).values())
    print(f"{a.model} -> {out} ({nodes} nodes after compiling, {model.length:,} bytes, "
          f"{(time.perf_counter() - t0) * 1e3:.1f} ms)")
    return 0


def main(a: argparse.Namespace) -> int:
    from ge.errors import GeError

    cmd = {"convert": cmd_convert, "run": cmd_run, "show": cmd_show, "compile": cmd_compile}[a.cmd]
    try:
        return cmd(a)
    except (CliError, GeError, ValueError, TypeError) as e:
        print(f"ge: {e}", file=sys.stderr)
        return 1


def dot_text(graph: Any) -> str:
    """The DOT text ``ge show --svg`` draws (for tests and other tools)."""
    return _dot(graph)

