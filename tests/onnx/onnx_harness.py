"""The shared helper of the ONNX tests (tests/onnx/test_onnx_*.py): models built with
``onnx.helper``, run through ge (``ge.onnx.load`` and a Session, in graph or eager mode) and
through a reference (onnx's ReferenceEvaluator or onnxruntime), and their outputs compared.

Importing it needs ``onnx``: the test files skip themselves first (``pytest.importorskip``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import ge
import ge.onnx
import numpy as np
from ge.session import Session
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

NP2ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16,
    np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.uint64): TensorProto.UINT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}

Named = Tuple[str, Optional[np.ndarray]]
Feeds = Union[Sequence[np.ndarray], Mapping[str, np.ndarray]]

# ---------------------------------------------------------------------------------------------
# Building models
# ---------------------------------------------------------------------------------------------


def vi(name: str, dtype: int = TensorProto.FLOAT, shape: Optional[Sequence[Any]] = (2, 3)) -> Any:
    """A value info (``shape`` None: unknown rank)."""
    return helper.make_tensor_value_info(name, dtype, list(shape) if shape is not None else None)


def graph_model(nodes: Sequence[Any], inputs: Sequence[Any], outputs: Sequence[Any], inits: Iterable[Any] = (),
                opset: int = 17, opsets: Sequence[Tuple[str, int]] = (), functions: Iterable[Any] = (),
                ir_version: Optional[int] = 8) -> Any:
    """A model of ``nodes`` (graph "g"): the default domain at ``opset`` unless ``opsets`` lists
    every (domain, version)."""
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits))
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or [("", opset)])]
    kw = {} if ir_version is None else {"ir_version": ir_version}
    return helper.make_model(g, opset_imports=imports, functions=list(functions), **kw)


def node_model(op: str, inputs: Sequence[Named], inits: Sequence[Tuple[str, np.ndarray]] = (), *,
               node_inputs: Optional[Sequence[str]] = None, n_out: int = 1,
               outputs: Optional[Sequence[str]] = None, out_types: Optional[Dict[int, int]] = None,
               opset: int = 21, domain: str = "", ir_version: Optional[int] = None, **attrs: Any) -> Any:
    """A one-node model. ``inputs``: (name, array) graph inputs (name '' or array None: an absent
    input); ``inits``: (name, array) initializers, node inputs after the graph inputs unless
    ``inputs`` already names them; ``node_inputs`` overrides the node's input list; outputs
    ``y0..`` (or ``outputs``; '' is absent) of type ``out_types[i]`` (default unknown); a
    ``domain`` is imported at version 1."""
    given = {n for n, _ in inputs}
    const = {n for n, _ in inits}
    names = [n for n, _ in inputs] + [n for n, _ in inits if n not in given]
    outs = list(outputs) if outputs is not None else [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, list(node_inputs) if node_inputs is not None else names, outs, domain=domain,
                            **attrs)
    g_in = [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], list(a.shape))
            for n, a in inputs if n and a is not None and n not in const]
    g_out = [helper.make_tensor_value_info(o, (out_types or {}).get(i, TensorProto.UNDEFINED), None)
             for i, o in enumerate(outs) if o]
    opsets = [("", opset)] + ([(domain, 1)] if domain else [])
    return graph_model([node], g_in, g_out, [numpy_helper.from_array(a, n) for n, a in inits],
                       opsets=opsets, ir_version=ir_version)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def run_graph(graph: Any, feeds: Sequence[Any], mode: Optional[str] = None) -> List[np.ndarray]:
    """Runs a ge graph in a fresh Session (``mode``: "on" graph mode, "off" eager mode, None:
    the default); its outputs as numpy arrays."""
    s = Session({} if mode is None else {"ge.graphMode": mode})
    s.add_graph(0, graph)
    return [np.asarray(t.numpy()) for t in s.run_graph(0, list(feeds))]


def graph_inputs(m: Any) -> List[str]:
    """The names of a model's graph inputs that are not initializers, in order."""
    consts = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in consts]


def run_ge(m: Any, feeds: Feeds, mode: Optional[str] = None) -> List[np.ndarray]:
    """Loads model ``m`` with ``ge.onnx.load`` and runs it (``feeds`` in input order, or by name)."""
    if isinstance(feeds, Mapping):
        feeds = [feeds[n] for n in graph_inputs(m)]
    return run_graph(ge.onnx.load(m.SerializeToString()), feeds, mode)


def reference(m: Any, feeds: Mapping[str, np.ndarray]) -> List[np.ndarray]:
    """onnx's ReferenceEvaluator on ``m``."""
    return [np.asarray(r) for r in ReferenceEvaluator(m).run(None, dict(feeds))]


def run_ort(path: Union[str, Path], feeds: Sequence[np.ndarray]) -> List[np.ndarray]:
    """onnxruntime (CPU) on the model file at ``path``, fed in input order."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, feeds)))


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------


def assert_outputs(got: Sequence[np.ndarray], want: Sequence[Any], rtol: float, atol: float, *,
                   check_dtype: bool = True, equal_nan: bool = False, exact_ints: bool = True,
                   what: Any = None) -> None:
    """As many outputs as wanted, each with the wanted shape (and dtype, with ``check_dtype``):
    floats within ``atol + rtol * |want|``, integers and bools equal (or, without
    ``exact_ints``, within the same tolerance)."""
    assert len(got) == len(want), (what, len(got), len(want))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if check_dtype:
            assert g.dtype == w.dtype, (what, g.dtype, w.dtype)
        assert g.shape == w.shape, (what, g.shape, w.shape)
        if w.dtype.kind == "f" or not exact_ints:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=equal_nan, err_msg=str(what or ""))
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(what or ""))


def check_model(m: Any, feeds: Mapping[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6,
                modes: Sequence[Optional[str]] = (None,), expected: Optional[Sequence[Any]] = None,
                **kw: Any) -> List[np.ndarray]:
    """Runs ``m`` through ge in each of ``modes`` and checks the outputs against ``expected``
    (default: the ReferenceEvaluator's) with ``assert_outputs``; returns the last run's outputs."""
    want = reference(m, feeds) if expected is None else expected
    got: List[np.ndarray] = []
    for mode in modes:
        got = run_ge(m, feeds, mode)
        assert_outputs(got, want, rtol, atol, what=mode, **kw)
    return got
