"""ONNX import: ``ge.onnx.load(path_or_bytes, unsupported="error"|"opaque") -> Graph``.

``load`` translates an ONNX model into a ge ``Graph``: graph inputs become Data nodes (by
position), initializers become Const parameters, each node goes through the translator of its
op type (``ops/onnx_mapping.json`` and the special handlers of ``crates/ge-onnx``). Op types no
translator handles are listed in one ``TranslationError``; with ``unsupported="opaque"`` they
are kept as nodes (op type ``OpType`` or ``domain::OpType``) that a pass can replace.

ONNX export: ``ge.onnx.save(graph, path)`` writes a real ONNX model (opset 18, standard ops
only) that onnxruntime runs: Data nodes become graph inputs in index order, Const nodes
initializers, every other op goes through its exporter (``exporter_keys()``); op types without
one are listed in one ``TranslationError``. ``Graph.dump_to_file(DumpFormat.kOnnx)`` writes any
graph for viewing (GE op types kept in the domain ``ge``).
"""

from __future__ import annotations

import os
from typing import List, Union

from ge._native import (
    _onnx_export_bytes,
    _onnx_exporter_keys,
    _onnx_load,
    _onnx_save,
    _onnx_translator_keys,
)
from ge.graph import Graph

__all__ = ["load", "save", "to_bytes", "exporter_keys", "translator_keys"]


def load(model: Union[str, "os.PathLike[str]", bytes], unsupported: str = "error") -> Graph:
    """Loads an ONNX model from a file path (external data is read from the model's directory
    only) or from the serialized bytes."""
    if isinstance(model, (bytearray, memoryview)):
        model = bytes(model)
    if not isinstance(model, bytes):
        model = os.fspath(model)
    return _onnx_load(model, unsupported)


def translator_keys() -> List[str]:
    """The op types the built-in translators handle (``OpType`` or ``domain::OpType``)."""
    return _onnx_translator_keys()


def save(graph: Graph, path: Union[str, "os.PathLike[str]"]) -> None:
    """Writes ``graph`` as an ONNX model (standard ONNX ops, runnable by onnxruntime)."""
    _onnx_save(graph, os.fspath(path))


def to_bytes(graph: Graph) -> bytes:
    """``graph`` as a serialized ONNX model (what ``save`` writes)."""
    return _onnx_export_bytes(graph)


def exporter_keys() -> List[str]:
    """The GE op types ``save`` can export (besides Data and Const)."""
    return _onnx_exporter_keys()
