"""Whole-pipeline fuzzing (issue 21, point 3): a helper module of ``tools/fuzz_pipeline.py`` and
``test_seeds.py``.

A case is a graph file in one of three formats — ONNX, ge-rs's own format (``Graph.to_bytes``)
or GE's ``.air`` — mutated from a seed corpus, as raw bytes or through the graph's structure.
``check`` loads it; what loads is compiled and run on the CPU, in graph mode and in eager mode,
on random inputs of the fed shapes. What is checked: nothing crashes the process, no Rust panic
reaches Python (``ge.InternalError``), and every exception raised is in the ``ge.GeError`` tree.
Results are not compared (the differential tests do that).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ge
import ge.onnx
import numpy as np
from ge.graph import DataType, Graph
from ge.session import Session

FORMATS = ("onnx", "ge", "air")
ROOT = Path(__file__).resolve().parents[2]
SEEDS = Path(__file__).resolve().parent / "seeds"
ONNX_CORPUS = ROOT / "crates" / "ge-onnx" / "fuzz" / "corpus"
MAX_FEED = 1 << 16  # elements per fed input; bigger inputs are not run (counted "big")
MAX_DIM = 4  # the size an unknown dim (-1) of an input is fed with, at most

NP = {
    DataType.DT_FLOAT: np.float32,
    DataType.DT_DOUBLE: np.float64,
    DataType.DT_FLOAT16: np.float16,
    DataType.DT_INT8: np.int8,
    DataType.DT_INT16: np.int16,
    DataType.DT_INT32: np.int32,
    DataType.DT_INT64: np.int64,
    DataType.DT_UINT8: np.uint8,
    DataType.DT_UINT16: np.uint16,
    DataType.DT_UINT32: np.uint32,
    DataType.DT_UINT64: np.uint64,
    DataType.DT_BOOL: np.bool_,
}


class Failure(Exception):
    """The pipeline broke a rule: a panic reached Python, or an exception outside ge.GeError."""


# ---------------------------------------------------------------------------------------------
# Loading, feeding, running
# ---------------------------------------------------------------------------------------------


def load(data: bytes, fmt: str) -> Graph:
    """The graph in ``data`` (format ``fmt``); a ``ge.GeError`` when it is not one."""
    if fmt == "onnx":
        return ge.onnx.load(bytes(data))
    if fmt == "ge":
        return Graph.from_bytes(bytes(data))
    fd, path = tempfile.mkstemp(suffix=".air")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return Graph.load_from_air(path)
    finally:
        os.unlink(path)


def dump(graph: Graph, fmt: str) -> bytes:
    """``graph`` written in ``fmt`` (a ``ge.GeError`` when that format cannot hold it)."""
    if fmt == "onnx":
        return ge.onnx.to_bytes(graph)
    if fmt == "ge":
        return graph.to_bytes()
    fd, path = tempfile.mkstemp(suffix=".air")
    os.close(fd)
    try:
        graph.save_to_air(path)
        return Path(path).read_bytes()
    finally:
        os.unlink(path)


def fed_inputs(graph: Graph) -> list[tuple[DataType, list[int]]] | None:
    """(dtype, dims) of each graph input (Data nodes, by their index); None when the inputs are
    not a plain 0..n-1 numbering or a dtype has no numpy form (nothing to feed)."""
    found: dict[int, tuple[DataType, list[int]]] = {}
    for n in graph.get_direct_nodes():
        if n.type != "Data":
            continue
        idx = n.get_attr("index") if n.has_attr("index") else None
        if not isinstance(idx, int) or idx in found or not 0 <= idx < 64:
            return None
        d = n.get_output_desc(0)
        dt = d.get_data_type()
        if dt not in NP:
            return None
        dims = d.get_shape().get_dims()
        found[idx] = (dt, list(dims) if dims is not None else [-1])
    if sorted(found) != list(range(len(found))):
        return None
    return [found[i] for i in range(len(found))]


def make_feeds(inputs: Sequence[tuple[DataType, list[int]]], rng: random.Random) -> list[np.ndarray] | None:
    """Random arrays of the fed dtypes and shapes (an unknown dim: 1..MAX_DIM, an unknown rank:
    rank 1..3): small integers, non-zero floats (NaN, infinities and zeros in one input in five
    of more than one element); None when one would have more than MAX_FEED elements."""
    out = []
    g = np.random.default_rng(rng.getrandbits(32))
    for dt, dims in inputs:
        if dims == [-2] or any(d < -1 for d in dims):
            dims = [-1] * rng.randint(0, 3)
        shape = [d if d >= 0 else rng.randint(1, MAX_DIM) for d in dims]
        if int(np.prod(shape, dtype=object)) > MAX_FEED:
            return None
        t = NP[dt]
        if t is np.bool_:
            a = g.random(shape) < 0.5
        elif np.issubdtype(t, np.integer):
            a = g.integers(-3 if np.issubdtype(t, np.signedinteger) else 0, 5, size=shape).astype(t)
        else:
            # Non-zero multiples of 1/2 up to 3: a scalar that sets a loop's trip count (a Range
            # written as a Loop divides by one) keeps the loop short.
            a = (g.integers(1, 7, size=shape) * g.choice([-0.5, 0.5], size=shape)).astype(t)
            if rng.random() < 0.2 and a.size > 1:
                flat = a.reshape(-1)
                flat[g.integers(a.size, size=max(1, a.size // 8))] = g.choice([np.nan, np.inf, -np.inf, 0.0])
        out.append(np.ascontiguousarray(a))
    return out


_SESSIONS: list[Session] = []


def sessions() -> list[Session]:
    """One graph-mode and one eager session (made once per process)."""
    if not _SESSIONS:
        _SESSIONS.extend(Session(o) for o in ({}, {"ge.graphMode": "off"}))
    return _SESSIONS


# Python's built-in exceptions that ge raises where GE's API specifies one (a bad argument
# value: ValueError; a wrong type: TypeError; a bad state: RuntimeError; crates/ge-py/src/
# errors.rs). They are counted apart ("built-in error" outcomes), not failures.
GE_BUILTINS = (ValueError, TypeError, RuntimeError)
BUILTIN_SEEN: list[str] = []  # "where: Type: message" of each one met (check() resets it)


def guarded(what: str, f: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, f()) or (False, the GeError or GE-style built-in error); a Failure for a panic
    or any other exception."""
    try:
        return True, f()
    except ge.InternalError as e:
        raise Failure(f"{what}: a panic reached Python: {e}") from e
    except ge.GeError as e:
        return False, e
    except GE_BUILTINS as e:
        BUILTIN_SEEN.append(f"{what}: {type(e).__name__}: {e}")
        return False, e
    except Exception as e:  # noqa: BLE001 - anything else breaks the rule
        raise Failure(f"{what}: {type(e).__module__}.{type(e).__name__} outside ge.GeError: {e}") from e


def check(data: bytes, fmt: str, rng: random.Random) -> str:
    """Runs one case through the whole pipeline; returns what happened ("load error", "big",
    "no feed", "run error", "ran"; with " (built-in error)" when ge raised a ValueError,
    TypeError or RuntimeError, see GE_BUILTINS), or raises Failure."""
    BUILTIN_SEEN.clear()
    what = _check(data, fmt, rng)
    return what + " (built-in error)" if BUILTIN_SEEN else what


def _check(data: bytes, fmt: str, rng: random.Random) -> str:
    ok, graph = guarded(f"load ({fmt})", lambda: load(data, fmt))
    if not ok:
        return "load error"
    ok, inputs = guarded("inputs", lambda: fed_inputs(graph))
    if not ok or inputs is None:
        return "no feed"
    feeds = make_feeds(inputs, rng)
    if feeds is None:
        return "big"
    ran = 0
    for mode, s in zip(("graph", "eager"), sessions()):
        gid = rng.randint(1, 1 << 30)
        ok, _ = guarded(f"add_graph ({mode})", lambda: s.add_graph(gid, graph))
        if not ok:
            continue
        try:
            ok, _ = guarded(f"run_graph ({mode})", lambda: s.run_graph(gid, feeds))
            ran += ok
        finally:
            guarded(f"remove_graph ({mode})", lambda: s.remove_graph(gid))
    return "ran" if ran else "run error"


# ---------------------------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------------------------

EXTREMES = (0, 1, -1, 2, 3, -2, 7, 64, 255, 1 << 16, (1 << 31) - 1, 1 << 31, -(1 << 31), 1 << 40,
            (1 << 63) - 1, -(1 << 63))
FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -1e30, float("nan"), float("inf"), float("-inf"), 1e-40)


def mutate_bytes(data: bytes, other: bytes, r: random.Random) -> bytes:
    """Raw mutations: bit flips, byte changes, truncation, insertion, deletion, a splice of
    another seed, a varint made huge, a repeated chunk."""
    b = bytearray(data)
    for _ in range(r.randint(1, 4)):
        if not b:
            b.append(r.getrandbits(8))
            continue
        i = r.randrange(len(b))
        k = r.randrange(8)
        if k == 0:
            b[i] ^= 1 << r.randrange(8)
        elif k == 1:
            b[i] = r.getrandbits(8)
        elif k == 2:
            del b[i:]
        elif k == 3:
            b.insert(i, r.getrandbits(8))
        elif k == 4:
            del b[i]
        elif k == 5 and other:
            s = r.randrange(len(other))
            b[i:i] = other[s : s + r.randint(1, 32)]
        elif k == 6:
            b[i : i + 2] = b"\xff\xff"
        else:
            j = min(len(b), i + r.randint(1, 16))
            b[j:j] = b[i:j] * r.randint(1, 4)
    return bytes(b)


def _extreme_like(v: Any, r: random.Random) -> Any:
    """A value of the same kind as attribute value ``v``, from the extremes."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return r.choice(EXTREMES)
    if isinstance(v, float):
        return r.choice(FLOATS)
    if isinstance(v, str):
        return r.choice(["", "NCHW", "NHWC", "SAME", "VALID", "x" * 300, "\u00e9"])
    if isinstance(v, list):
        if v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            w = list(v)
            if r.random() < 0.3:
                return [r.choice(EXTREMES) for _ in range(r.randint(0, 6))]
            w[r.randrange(len(w))] = r.choice(EXTREMES)
            return w
        if v and all(isinstance(x, float) for x in v):
            return [r.choice(FLOATS) for _ in v]
        return [r.choice(EXTREMES) for _ in range(r.randint(0, 4))]
    return r.choice(EXTREMES)


def mutate_graph(graph: Graph, r: random.Random) -> None:
    """Structure-aware mutations through ge.graph's editing API (each may be refused by the API
    as GE's refuses it, with a RuntimeError or ValueError, which the caller ignores): an IR
    attribute set to an extreme value of its kind, a Data node's shape or dtype changed, an
    edge removed or added, a node removed."""
    nodes = graph.get_all_nodes()
    if not nodes:
        return
    n = r.choice(nodes)
    k = r.randrange(6)
    if k <= 1:
        attrs = n.get_ir_attrs()
        if attrs:
            key = r.choice(sorted(attrs))
            n.set_attr(key, _extreme_like(attrs[key], r))
    elif k == 2 and n.get_outputs_size():
        d = n.get_output_desc(0)
        dims = d.get_shape().get_dims() or []
        choice = r.randrange(3)
        if choice == 0:
            dims = [r.choice((0, 1, -1, 2, 5, 1 << 31, -3)) for _ in range(r.randint(0, 5))]
        elif choice == 1 and dims:
            dims = list(dims)
            dims[r.randrange(len(dims))] = r.choice((0, 1, -1, 3, 1 << 20))
        d.set_shape(dims)
        if r.random() < 0.3:
            d.set_data_type(r.choice(list(NP) + [DataType.DT_STRING, DataType.DT_BF16]))
        n.update_output_desc(0, d)
    elif k == 3 and n.get_inputs_size():
        i = r.randrange(n.get_inputs_size())
        src, port = n.get_in_data_nodes_and_port_indexes(i)
        graph.remove_edge(src, port, n, i)
    elif k == 4 and n.get_inputs_size():
        src = r.choice(nodes)
        if src.get_outputs_size():
            i = r.randrange(n.get_inputs_size())
            try:
                old, port = n.get_in_data_nodes_and_port_indexes(i)
                graph.remove_edge(old, port, n, i)
            except ge.GeError:
                pass
            graph.add_data_edge(src, r.randrange(src.get_outputs_size()), n, i)
    else:
        graph.remove_node(n)


def mutate_onnx(data: bytes, r: random.Random) -> bytes | None:
    """Structure-aware mutations of an ONNX model (with the ``onnx`` package; None without it
    or when ``data`` does not decode): input dims and dtypes, attribute values, initializer
    dims and values, a node's inputs, op type or domain, the opset."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        return None
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception:  # noqa: BLE001 - not a model: no structure to mutate
        return None
    g = m.graph
    for _ in range(r.randint(1, 3)):
        k = r.randrange(8)
        if k == 0 and g.input:
            t = r.choice(list(g.input)).type.tensor_type
            if r.random() < 0.3:
                t.elem_type = r.randrange(1, 17)
            for d in t.shape.dim:
                if r.random() < 0.5:
                    d.dim_value = r.choice((0, 1, 2, 3, 7, 1 << 31)) if r.random() < 0.8 else 0
                    if r.random() < 0.2:
                        d.dim_param = "n"
        elif k in (1, 2) and g.node:
            n = r.choice(list(g.node))
            if n.attribute:
                a = r.choice(list(n.attribute))
                if a.type == onnx.AttributeProto.INT:
                    a.i = r.choice(EXTREMES)
                elif a.type == onnx.AttributeProto.INTS:
                    vals = list(a.ints) or [0]
                    vals[r.randrange(len(vals))] = r.choice(EXTREMES)
                    if r.random() < 0.3:
                        vals = vals[: r.randint(0, len(vals))] + [r.choice(EXTREMES)]
                    del a.ints[:]
                    a.ints.extend(vals)
                elif a.type == onnx.AttributeProto.FLOAT:
                    a.f = r.choice(FLOATS)
                elif a.type == onnx.AttributeProto.STRING:
                    a.s = r.choice([b"", b"SAME_UPPER", b"VALID", b"\xff"])
                else:
                    a.type = r.randrange(1, 14)
            else:
                n.attribute.append(onnx.helper.make_attribute(r.choice(["axis", "axes", "perm", "to"]), r.choice(EXTREMES)))
        elif k == 3 and g.initializer:
            t = r.choice(list(g.initializer))
            try:
                a = numpy_helper.to_array(t).copy()
            except Exception:  # noqa: BLE001 - a broken initializer stays broken
                continue
            if a.size and a.dtype.kind in "iu" and r.random() < 0.7:
                flat = a.reshape(-1)
                info = np.iinfo(a.dtype)
                flat[r.randrange(a.size)] = r.choice([v for v in EXTREMES if info.min <= v <= info.max])
            elif a.size and a.dtype.kind == "f":
                a.reshape(-1)[r.randrange(a.size)] = r.choice(FLOATS)
            elif r.random() < 0.5:
                a = a.reshape(-1)[: r.randint(0, a.size)]
            t.CopyFrom(numpy_helper.from_array(a, t.name))
        elif k == 4 and g.node:
            n = r.choice(list(g.node))
            names = [i.name for i in g.input] + [i.name for i in g.initializer] + [o for x in g.node for o in x.output]
            if n.input and names:
                n.input[r.randrange(len(n.input))] = r.choice(names + [""])
        elif k == 5 and g.node:
            n = r.choice(list(g.node))
            n.op_type = r.choice(["Slice", "Reshape", "Expand", "Tile", "Gather", "Concat", "Split", "Pad",
                                   "Conv", "MaxPool", "MatMul", "Transpose", "ReduceSum", "Squeeze",
                                   "Unsqueeze", "Resize", "Range", "ConstantOfShape", "TopK", "CumSum",
                                   "Where", "Cast", "Einsum", "Loop", "If", "Scan"])
        elif k == 6 and g.node:
            if r.random() < 0.5:
                del g.node[r.randrange(len(g.node))]
            else:
                g.node.append(r.choice(list(g.node)))
        elif m.opset_import:
            m.opset_import[0].version = r.choice((1, 7, 11, 13, 17, 18, 21, 22, 99))
    return m.SerializeToString()


def corpus_from_graph(graph: Graph) -> dict[str, bytes]:
    """``graph`` in each format that can hold it."""
    out = {}
    for fmt in FORMATS:
        ok, data = guarded(f"dump ({fmt})", lambda: dump(graph, fmt))
        if ok:
            out[fmt] = data
    return out


def seed_files() -> list[Path]:
    """The regression seeds kept in the repository (tests/reliability/seeds/*.{onnx,ge,air})."""
    return sorted(p for p in SEEDS.glob("*") if p.suffix[1:] in FORMATS)


def build_corpus(generated: int = 40, seed: int = 0) -> dict[str, list[bytes]]:
    """The seed corpus, per format: ge-onnx's fuzz corpus (ONNX files, and each loaded one in the
    other two formats), the regression seeds, and ``generated`` random graphs of the differential
    tests' generators (diffgen's ge.es graphs and onnxgen's models) in every format."""
    import diffgen

    corpus: dict[str, list[bytes]] = {f: [] for f in FORMATS}

    def add_graph(g: Graph) -> None:
        for fmt, data in corpus_from_graph(g).items():
            corpus[fmt].append(data)

    for p in sorted(ONNX_CORPUS.glob("*.onnx")):
        data = p.read_bytes()
        corpus["onnx"].append(data)
        ok, g = guarded("corpus", lambda: ge.onnx.load(data))
        if ok:
            for fmt in ("ge", "air"):
                ok, d = guarded(f"dump ({fmt})", lambda: dump(g, fmt))
                if ok:
                    corpus[fmt].append(d)
    for p in seed_files():
        corpus[p.suffix[1:]].append(p.read_bytes())
    for i in range(generated):
        add_graph(diffgen.generate(diffgen.RandomChooser(seed * 1000 + i), max_ops=6).graph)
    try:
        import onnxgen
    except ImportError:  # onnx absent: no generated models
        onnxgen = None
    if onnxgen is not None:
        for i in range(generated):
            model = onnxgen.generate(diffgen.RandomChooser(seed * 1000 + 500 + i), max_ops=6).model
            data = model.SerializeToString() if hasattr(model, "SerializeToString") else bytes(model)
            corpus["onnx"].append(data)
    return corpus


def make_case(corpus: dict[str, list[bytes]], r: random.Random) -> tuple[bytes, str, str]:
    """One mutated case: (bytes, format, how it was made)."""
    fmt = r.choice([f for f in FORMATS if corpus[f]])
    seed = r.choice(corpus[fmt])
    k = r.randrange(10)
    if k < 4:
        return mutate_bytes(seed, r.choice(corpus[fmt]), r), fmt, "bytes"
    if k < 6 and fmt == "onnx":
        data = mutate_onnx(seed, r)
        if data is not None:
            return data, fmt, "onnx structure"
    ok, g = guarded("corpus load", lambda: load(seed, fmt))
    if not ok:
        return mutate_bytes(seed, seed, r), fmt, "bytes"
    for _ in range(r.randint(1, 3)):
        try:
            mutate_graph(g, r)
        except ge.InternalError as e:
            raise Failure(f"ge.graph editing: a panic reached Python: {e}") from e
        except (ge.GeError, RuntimeError, ValueError, TypeError):
            pass  # the editing API refuses an edit the way GE's does (RuntimeError, ValueError)
    out = r.choice(FORMATS)
    ok, data = guarded(f"dump ({out})", lambda: dump(g, out))
    if not ok:
        out = "ge"
        ok, data = guarded("dump (ge)", lambda: dump(g, "ge"))
        if not ok:
            return mutate_bytes(seed, seed, r), fmt, "bytes"
    return data, out, "graph structure"
