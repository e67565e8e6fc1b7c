"""No Rust panic reaches Python (issue 21, point 1).

Every entry point of ``ge._native`` runs its body through ``guard`` (crates/ge-py/src/guard.rs),
which turns a panic into ``ge.InternalError`` ("internal error, please report: <panic text>"), a
``ge.GeError``, instead of PyO3's ``pyo3_runtime.PanicException`` (a ``BaseException``).

How that is proven:
- coverage, from the source: every ``#[pyfunction]`` and ``#[pymethods]`` of the crate is written
  inside ``guarded! { ... }`` (the macro that wraps each body), every class and function the
  module exports is declared there, no ``#[pyclass]`` asks PyO3 for generated methods (field
  getters, comparisons, hashing) that would run outside it, and the module's init is guarded;
- the mapping, at run time, without a test-only entry point: a Python callback that raises
  ``PanicException`` makes PyO3 resume a real Rust panic inside the entry point that called it
  (``PyErr::take``), which must come out as ``ge.InternalError``;
- oversized shapes (the issue's ``Fill`` of ``[2**31, 2**31]``, and the others found the same
  way) must give an ordinary ``ge.GeError`` naming the problem, not even ``InternalError`` (the
  kernels size and allocate through ge-runtime's checked, fallible helpers). Every shape used needs more bytes than a 64-bit address space holds, so that no fix can turn a
  test into a real allocation.
"""

from __future__ import annotations

import re
from pathlib import Path

import ge
import ge.onnx
import ge.ops
import numpy as np
import pytest
from ge import _native
from ge.es import GraphBuilder
from ge.es.all import BroadcastTo, Fill, Tile
from ge.graph import DataType
from ge.session import Session

SRC = Path(__file__).resolve().parents[2] / "crates" / "ge-py" / "src"


# ---- the source: every entry point is declared inside guarded! ----


def code_mask(text: str) -> list[bool]:
    """For each character of Rust source, whether it is inside a comment or a literal."""
    mask = [False] * len(text)
    i, n = 0, len(text)

    def cover(j: int) -> int:
        for k in range(i, j):
            mask[k] = True
        return j

    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = cover(n if j < 0 else j)
        elif text.startswith("/*", i):
            i = cover(text.index("*/", i) + 2)
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            i = cover(text.index('"' + m.group(1), m.end()) + 1 + len(m.group(1)))
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = cover(j + 1)
        elif m := re.compile(r"'(\\[^']+|[^\\'])'").match(text, i):
            i = cover(m.end())
        else:
            i += 1
    return mask


def guarded_spans(text: str, mask: list[bool]) -> list[tuple[int, int]]:
    """The (start, end) of every `guarded! { ... }` invocation."""
    spans = []
    for m in re.finditer(r"\bguarded!\s*\{", text):
        if mask[m.start()]:
            continue
        depth, j = 0, m.end() - 1
        while True:
            if not mask[j]:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
            j += 1
        spans.append((m.start(), j))
    return spans


def sources() -> dict[str, tuple[str, list[bool], list[tuple[int, int]]]]:
    out = {}
    for path in sorted(SRC.glob("*.rs")):
        if path.name == "guard.rs":  # the macro itself
            continue
        text = path.read_text()
        mask = code_mask(text)
        out[path.name] = (text, mask, guarded_spans(text, mask))
    return out


def code_matches(pattern: str):
    """(file, match, inside a guarded! span) for every match of `pattern` in code."""
    for name, (text, mask, spans) in sources().items():
        for m in re.finditer(pattern, text):
            if not mask[m.start()]:
                yield name, m, any(a < m.start() < b for a, b in spans)


def test_the_scanner_sees_code_not_comments_or_strings():
    text = '// #[pyfunction]\nlet s = "{ #[pymethods] }"; let c = \'{\'; guarded! { fn f() { "}" } }'
    mask = code_mask(text)
    assert mask[text.index("#[pyfunction]")] and mask[text.index("#[pymethods]")]
    ((a, b),) = guarded_spans(text, mask)
    assert text[a : b + 1] == 'guarded! { fn f() { "}" } }'


def test_every_pyfunction_and_pymethods_block_is_guarded():
    found = list(code_matches(r"#\[\s*(?:pyo3\s*::\s*)?(pyfunction|pymethods)\b"))
    assert len(found) > 50, "the scan lost the entry points"
    outside = [f"{name}:{m.group(0)} at offset {m.start()}" for name, m, inside in found if not inside]
    assert outside == [], "entry points outside guarded! (a panic there would reach Python as PanicException)"


def test_every_exported_callable_is_declared_inside_guarded():
    """Each function and class `ge._native` exports has its `fn` / `impl` inside guarded!."""
    fns = {m.group(1) for _, m, inside in code_matches(r"\bfn\s+(\w+)") if inside}
    impls = {m.group(1) for _, m, inside in code_matches(r"\bimpl\s+(\w+)\s*\{") if inside}
    exceptions = {
        n
        for n in _native.__all__
        if isinstance(getattr(_native, n), type) and issubclass(getattr(_native, n), BaseException)
    }
    missing = []
    for name in _native.__all__:
        obj = getattr(_native, name)
        if name in exceptions or name == "__version__":
            continue
        if isinstance(obj, type):
            # PyO3 makes a class's methods from its #[pymethods] blocks (all guarded: checked
            # above) and from #[pyclass] options (none: checked below).
            if name not in impls:
                missing.append(f"class {name}")
        elif callable(obj):
            if name not in fns:
                missing.append(f"function {name}")
        else:
            missing.append(f"unknown export {name}")
    assert missing == []


def test_no_pyclass_asks_pyo3_for_generated_methods():
    """`#[pyclass(eq, ord, hash, str, get_all, set_all)]` and `#[pyo3(get, set)]` fields make
    methods PyO3 writes, outside guarded!: none is used (write a guarded method instead)."""
    generated = r"\b(eq|ord|hash|str|get_all|set_all)\b"
    bad = [
        f"{name}: {m.group(0)}"
        for name, m, _ in code_matches(r"#\[pyclass\(([^\]]*)\)\]")
        if re.search(generated, m.group(1))
    ]
    bad += [f"{name}: {m.group(0)}" for name, m, _ in code_matches(r"#\[pyo3\(\s*(get|set)\b")]
    assert bad == []


def test_module_init_is_guarded():
    text = (SRC / "lib.rs").read_text()
    init = text[text.index("#[pymodule_init]") :]
    body = init[init.index("{") + 1 :]
    assert body.lstrip().startswith("crate::guard::guard(")


# ---- the mapping, with real panics ----


def unary_op(name: str) -> dict:
    return {
        "name": name,
        "inputs": [{"name": "x", "type": "T"}],
        "outputs": [{"name": "y", "type": "T"}],
        "type_vars": {"T": ["DT_FLOAT"]},
    }


def panic_exceptions() -> List[type]:
    """pyo3_runtime.PanicException: not importable, found among BaseException's subclasses (PyO3
    creates it the first time Rust fetches a Python error, as a failing callback makes it). Each
    PyO3 extension loaded has its own class of that name: to ge, the others are plain
    exceptions."""
    ge.ops.register(unary_op("NoPanicProbe"))
    ge.ops.register_infer("NoPanicProbe", lambda inputs, attrs: 1 / 0)
    from ge.es.all import NoPanicProbe

    with pytest.raises(ge.ShapeInferenceError):
        NoPanicProbe(GraphBuilder("probe").create_input(0, shape=[2]))
    found = [c for c in BaseException.__subclasses__()
             if c.__module__ == "pyo3_runtime" and c.__name__ == "PanicException"]
    assert found
    return found


def test_internal_error_is_in_the_ge_error_tree():
    assert issubclass(ge.InternalError, ge.GeError) and ge.InternalError is ge.errors.InternalError
    assert ge.InternalError.__module__ == "ge" and "InternalError" in ge.errors.__all__
    assert ge.InternalError is _native.InternalError


def test_a_panic_while_building_is_an_internal_error():
    """ge's PanicException raised by an inference rule resumes as a Rust panic inside the op call
    (a PanicException escaping would fail the test: it is not an Exception)."""
    ge.ops.register(unary_op("NoPanicInfer"))
    from ge.es.all import NoPanicInfer

    internal = []
    for panic in panic_exceptions():
        def rule(inputs, attrs, panic=panic):
            raise panic("boom in an inference rule")

        ge.ops.register_infer("NoPanicInfer", rule)
        x = GraphBuilder("g").create_input(0, shape=[2])
        try:
            NoPanicInfer(x)
        except ge.InternalError as e:
            internal.append(str(e))
        except ge.ShapeInferenceError:
            pass  # another extension's PanicException: a failing rule like any other
    assert internal == ["internal error, please report: boom in an inference rule"]


def test_a_panic_while_running_is_an_internal_error():
    ge.ops.register(unary_op("NoPanicKernel"))
    ge.ops.register_infer("NoPanicKernel", lambda inputs, attrs: [inputs[0]])
    from ge.es.all import NoPanicKernel

    b = GraphBuilder("g")
    graph = b.build_and_reset([NoPanicKernel(b.create_input(0, shape=[2]))])
    internal = []
    try:
        for panic in panic_exceptions():
            def kernel(x, panic=panic):
                raise panic("boom in a kernel")

            ge.ops.register_kernel("NoPanicKernel", kernel)
            for mode in ("on", "off"):
                session = Session({"ge.graphMode": mode})
                session.add_graph(1, graph)
                try:
                    session.run_graph(1, [np.zeros(2, np.float32)])
                except ge.InternalError as e:
                    internal.append(str(e))
                except ge.ExecutionError:
                    pass  # another extension's PanicException
    finally:
        ge.ops.unregister_kernel("NoPanicKernel")
    # The session's calls prefix their errors GE's way ("RunGraph failed; graph_id=1; ...").
    assert len(internal) == 2, internal
    for message in internal:
        assert re.fullmatch(r"RunGraph failed; graph_id=1; internal error, please report: boom in a kernel",
                            message), message


# ---- oversized shapes: ordinary errors ----

# Fill dims whose element count (or byte size) overflows 64 bits.
FILL_DIMS = [([2**31, 2**31], np.int64), ([2**31 - 1, 2**31 - 1], np.int32),
             ([2**40, 2**30], np.int64), ([2**62, 4], np.int64)]


def fill_of_const(dims, dtype):
    b = GraphBuilder("g")
    return b.build_and_reset([Fill(b.create_const(np.array(dims, dtype)), 1.0)]), []


def fill_of_fed_dims():
    b = GraphBuilder("g")
    dims = b.create_input(0, data_type=DataType.DT_INT64, shape=[2])
    return b.build_and_reset([Fill(dims, 1.0)]), [np.array([2**31, 2**31], np.int64)]


def broadcast_to():
    b = GraphBuilder("g")
    return b.build_and_reset([BroadcastTo(b.create_const(np.float32(1)), [2**31, 2**31])]), []


def tile():
    b = GraphBuilder("g")
    return b.build_and_reset([Tile(b.create_const(np.ones((2, 2), np.float32)), [2**62, 2**62])]), []


OVERSIZED = [
    *(pytest.param(lambda d=d, t=t: fill_of_const(d, t), id=f"fill-{t.__name__}-{d}")
      for d, t in FILL_DIMS),
    pytest.param(fill_of_fed_dims, id="fill-fed-dims"),
    pytest.param(broadcast_to, id="broadcast_to"),
    pytest.param(tile, id="tile"),
]


@pytest.mark.parametrize("mode", ["on", "off"])  # ge.graphMode: captured plans, and eager runs
@pytest.mark.parametrize("make", OVERSIZED)
def test_oversized_run_is_a_ge_error(make, mode):
    """A run whose output would not fit in memory raises a ge.GeError naming it, not
    InternalError."""
    graph, inputs = make()
    session = Session({"ge.graphMode": mode})
    session.add_graph(1, graph)
    with pytest.raises(ge.GeError) as info:
        session.run_graph(1, inputs)
    assert not isinstance(info.value, ge.InternalError), str(info.value)


@pytest.mark.parametrize("dims,dtype", FILL_DIMS)
def test_oversized_fill_builds_and_saves(dims, dtype, tmp_path):
    """Building, dumping and saving the issue's Fill never computes its value."""
    graph, _ = fill_of_const(dims, dtype)
    assert "Fill" in graph.dump_to_stream(ge.graph.DumpFormat.kReadable)
    graph.save(str(tmp_path / "g.ge"))
    ge.onnx.save(graph, str(tmp_path / "g.onnx"))


def test_oversized_tensor_data_is_a_value_error():
    """GE's API raises ValueError for a bad tensor (ge-py's TensorData checks the size)."""
    from ge._native import TensorData

    for shape in ([2**31, 2**31], [2**62, 2**62, 4]):
        with pytest.raises(ValueError, match="bytes|more elements than can be stored"):
            TensorData(b"\0" * 16, DataType.DT_FLOAT, shape)
