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

Translators for other op types (or replacing built-in ones) are Python functions::

    @ge.onnx.register_translator("my.domain::ScaledTanh")
    def scaled_tanh(ctx):
        x = ctx.inputs[0]
        return Mul(Tanh(x), ctx.builder.create_scalar_float(ctx.attrs.get("scale", 1.0)))
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Tuple, Union

from ge._native import (
    _onnx_export_bytes,
    _onnx_exporter_keys,
    _onnx_load,
    _onnx_register_translator,
    _onnx_save,
    _onnx_translator_keys,
    _onnx_unregister_translator,
)
from ge.graph import Graph

__all__ = ["load", "save", "to_bytes", "exporter_keys", "translator_keys", "register_translator",
           "unregister_translator", "TranslatorContext"]


def load(model: Union[str, "os.PathLike[str]", bytes], unsupported: str = "error") -> Graph:
    """Loads an ONNX model from a file path (external data is read from the model's directory
    only) or from the serialized bytes.

    First the ONNX Plugins (``ge.onnx_plugin``) on ``ASCEND_CUSTOM_OPP_PATH`` are loaded (each
    file once; a failing one is skipped with a ``PluginLoadWarning``) and every registered
    plugin's ``domain::source`` is translated through it."""
    from ge.onnx_plugin._bridge import prepare_onnx_import

    prepare_onnx_import()
    if isinstance(model, (bytearray, memoryview)):
        model = bytes(model)
    if not isinstance(model, bytes):
        model = os.fspath(model)
    return _onnx_load(model, unsupported)


def translator_keys() -> List[str]:
    """The op types with a translator (``OpType`` or ``domain::OpType``), built-in and registered."""
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


class TranslatorContext:
    """What a Python translator receives for one ONNX node.

    - ``op_type``, ``domain`` (``""`` for the default domain), ``name``, ``opset`` (of the domain);
    - ``inputs``: one ``TensorHolder`` per input position (None for an absent optional input);
    - ``attrs``: the node's attributes as Python values (int, float, str, lists, numpy arrays for
      tensors; graph attributes are not offered);
    - ``num_outputs``: how many outputs the node declares;
    - ``builder``: the ``ge.es.GraphBuilder`` the inputs belong to (for constants);
    - ``input_names``, ``output_names``: the node's input and output value names as the model
      spells them (``""`` for an absent optional position).

    The translator returns one ``TensorHolder`` (one output) or a list with one entry per output
    (None for an output it does not produce), or ``NotImplemented`` to decline the node: the
    built-in translator of its op type then translates it (an error if there is none). The
    builder and tensors are usable only during the call.
    """

    def __init__(self, op_type: str, domain: str, name: str, opset: int, inputs: List[Any],
                 attrs: Dict[str, Any], num_outputs: int, builder: Any,
                 input_names: Tuple[str, ...] = (), output_names: Tuple[str, ...] = ()) -> None:
        self.op_type = op_type
        self.domain = domain
        self.name = name
        self.opset = opset
        self.inputs = inputs
        self.attrs = attrs
        self.num_outputs = num_outputs
        self.builder = builder
        self.input_names = tuple(input_names)
        self.output_names = tuple(output_names)

    def __repr__(self) -> str:
        key = f"{self.domain}::{self.op_type}" if self.domain else self.op_type
        return f"TranslatorContext({key} '{self.name}', {len(self.inputs)} inputs, opset {self.opset})"


Translator = Callable[[TranslatorContext], Any]


def register_translator(key: str) -> Callable[[Translator], Translator]:
    """Decorator: ``fn`` translates ONNX nodes of ``key`` (``"OpType"`` in the default domain, or
    ``"domain::OpType"``), replacing any built-in translator. Returns ``fn`` unchanged."""
    if not isinstance(key, str):
        raise TypeError(f"translator key must be a string, got {type(key).__name__}")

    def deco(fn: Translator) -> Translator:
        if not callable(fn):
            raise TypeError("register_translator decorates a function")
        _onnx_register_translator(key, fn)
        return fn

    return deco


def unregister_translator(key: str) -> bool:
    """Removes the Python translator registered for ``key``; returns whether there was one."""
    return _onnx_unregister_translator(key)


