"""Patterns: ``Pattern``, ``NodeIo``, ``create_pattern`` and the ``@pattern`` expression style."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import wraps
from typing import Any, Callable, Iterator, List, Optional, Tuple, Union, overload

from ge._native import MatchResult, PassContext, Pattern
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph import DataType, Format, Graph, Node

__all__ = ["NodeIo", "Pattern", "PatternInputs", "capture_tensor", "create_pattern", "ensure_pattern", "pattern"]

_MARK = "__ge_pattern_method__"
# (dtype, dims, format) of an expression pattern's inputs: unknown dtype and rank, so that eager
# validation accepts them wherever any tensor may stand (a pattern input matches any producer).
_PATTERN_INPUT = (DataType.DT_UNDEFINED.value, [-2], Format.FORMAT_ND.value)


@dataclass(frozen=True)
class NodeIo:
    """One node output: ``node`` and output ``index``."""

    node: Node
    index: int = 0


class PatternInputs:
    """The inputs of an expression-style pattern or replacement.

    ``inputs[i]`` creates graph input ``i`` (and every lower one) on first use; ``inputs[:n]``
    returns the first ``n``. The count is open, so iterating is an error. In a pattern the
    inputs are tensors of unknown dtype and rank (a pattern input matches any producer); in a
    replacement each input has the dtype, shape and format of the matched tensor it stands for.
    """

    __slots__ = ("_builder", "_inputs", "_descs")

    def __init__(self, builder: GraphBuilder, descs: Optional[List[Tuple[int, List[int], int]]] = None,
                 created: Optional[List[TensorHolder]] = None) -> None:
        self._builder = builder
        # Input i at position i (inputs are created in index order). ``created``: inputs
        # 0..n-1 made already (a replacement's, in one native call), taken as they are.
        self._inputs: List[TensorHolder] = created if created is not None else []
        self._descs = descs

    @overload
    def __getitem__(self, index: int) -> TensorHolder: ...

    @overload
    def __getitem__(self, index: slice) -> List[TensorHolder]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[TensorHolder, List[TensorHolder]]:
        inputs = self._inputs
        if type(index) is int:
            if 0 <= index < len(inputs):
                return inputs[index]
            if index >= 0:  # the next inputs, in index order
                self._ensure(index + 1)
                return inputs[index]
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise ValueError("PatternInputs slice step must be 1")
            if index.stop is None:
                raise ValueError("PatternInputs slice needs a stop, for example inputs[:3]")
            start = 0 if index.start is None else index.start
            if start < 0 or index.stop < start:
                raise ValueError(f"bad PatternInputs slice {start}:{index.stop}")
            self._ensure(index.stop)
            return inputs[start:index.stop]
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError("PatternInputs index must be an int or a slice")
        raise ValueError("PatternInputs index must be non-negative")

    def _ensure(self, count: int) -> None:
        """Creates inputs 0..count-1 that do not exist yet: with the matched tensor's dtype,
        shape and format in a replacement, of unknown dtype and rank in a pattern (a pattern
        input matches any producer)."""
        descs = self._descs
        inputs = self._inputs
        for i in range(len(inputs), count):
            if descs is not None and i < len(descs):
                dt, dims, fmt = descs[i]
            else:
                dt, dims, fmt = _PATTERN_INPUT
            inputs.append(self._builder._create_input(i, None, "Data", dt, fmt, dims))

    def __iter__(self) -> Iterator[TensorHolder]:
        raise TypeError("PatternInputs cannot be iterated (the input count is open); use inputs[:n]")

    def created(self) -> List[TensorHolder]:
        """The inputs created so far, in index order."""
        return list(self._inputs)


def create_pattern(graph: Graph) -> Pattern:
    """A ``Pattern`` from a pattern graph (the graph is moved into it: read-only afterwards)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"create_pattern needs a ge.graph.Graph, got {type(graph).__name__}")
    return Pattern(graph)


def ensure_pattern(pattern_or_graph: Union[Pattern, Graph]) -> Pattern:
    """A ``Pattern`` as ``patterns()`` may give it: a ``Pattern`` as it is, a ``Graph`` through
    ``create_pattern``; anything else is GE's ``TypeError``."""
    if isinstance(pattern_or_graph, Pattern):
        return pattern_or_graph
    if isinstance(pattern_or_graph, Graph):
        return create_pattern(pattern_or_graph)
    raise TypeError("PatternFusionPass.patterns must return Pattern or Graph objects")


def capture_tensor(
    pattern: Pattern, source: Union[TensorHolder, Node, NodeIo], index: Optional[int] = None
) -> Pattern:
    """Captures a tensor of ``pattern``'s graph (``Pattern.capture_tensor`` as a function);
    ``MatchResult.get_captured_tensor(i)`` returns the tensor the i-th capture matched.

    ``source`` is a ``TensorHolder`` of the pattern graph (the output it stands for, or output
    ``index`` of its producer), a ``Node`` with an output ``index`` (default 0), or a ``NodeIo``
    (taken as it is; no ``index`` then). Returns ``pattern``, for chaining.
    """
    if not isinstance(pattern, Pattern):
        raise TypeError(f"capture_tensor needs a Pattern, got {type(pattern).__name__}")
    return pattern.capture_tensor(source, index)


def pattern(method: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a ``PatternFusionPass`` method ``name(self, inputs)`` as one expression pattern.

    It returns a TensorHolder (one output) or a list/tuple of them (one pattern with several
    outputs). The accessed inputs are captured in index order, then the outputs in order.
    """
    setattr(method, _MARK, True)
    return method


def _pattern_methods(cls: type) -> List[Callable[..., Any]]:
    return [m for m in cls.__dict__.values() if callable(m) and getattr(m, _MARK, False)]


def _has_decorated_pattern_methods(cls: type) -> bool:
    return bool(_pattern_methods(cls))


def _positional(method: Callable[..., Any]) -> List[inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p for p in inspect.signature(method).parameters.values() if p.kind in kinds]


def _check_arity(method: Callable[..., Any], lo: int, hi: int, message: str) -> None:
    n = len(_positional(method))
    required_kw = any(
        p.kind == inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
        for p in inspect.signature(method).parameters.values()
    )
    if not lo <= n <= hi or required_kw:
        raise TypeError(message)


def _outputs(result: object, hook: str) -> List[TensorHolder]:
    if isinstance(result, TensorHolder):
        return [result]
    if isinstance(result, (list, tuple)) and result and all(isinstance(t, TensorHolder) for t in result):
        return list(result)
    raise TypeError(f"expression-style {hook} must return a TensorHolder or a non-empty list/tuple of them")


def _adapt_decorated_pattern_methods(cls: type) -> Callable[[Any], List[Pattern]]:
    methods = _pattern_methods(cls)
    for m in methods:
        _check_arity(m, 2, 2, f"@pattern method {m.__name__} must be {m.__name__}(self, inputs)")

    def patterns(self: Any) -> List[Pattern]:
        out = []
        for m in methods:
            builder = GraphBuilder(f"{type(self).__name__}_{m.__name__}_pattern")
            inputs = PatternInputs(builder)
            result = m(self, inputs)
            if isinstance(result, (Pattern, Graph)):
                out.append(ensure_pattern(result))
                continue
            if isinstance(result, (list, tuple)) and result and all(isinstance(r, (Pattern, Graph)) for r in result):
                raise TypeError(
                    "a @pattern method declares one pattern; declare several @pattern methods for several"
                )
            outputs = _outputs(result, "pattern")
            created = inputs.created()
            pat = create_pattern(builder.build_and_reset(outputs))
            for t in created:
                pat.capture_tensor(t)
            for t in outputs:
                pat.capture_tensor(t)
            out.append(pat)
        return out

    return patterns


def _is_context_param(p: inspect.Parameter) -> bool:
    ann = p.annotation
    return p.name == "context" or ann is PassContext or ann == "PassContext"


def _context_hook(method: Callable[..., Any], n_plain: int) -> Callable[..., Any]:
    """The hook as the executor calls it, ``hook(self, x, context)``: GE lets a hook take the
    pass context as its last parameter (``meet_requirements(self, match_result, context)``,
    ``replacement(self, node, context)``) or leave it out. ``n_plain``: the positional
    parameters of the form without it (self included)."""
    if getattr(method, "_ge_context_hook", False):
        return method
    params = _positional(method)
    takes = len(params) > n_plain and _is_context_param(params[n_plain])
    has_varargs = any(p.kind == inspect.Parameter.VAR_POSITIONAL
                      for p in inspect.signature(method).parameters.values())

    @wraps(method)
    def hook(self: Any, x: Any, context: Any = None) -> Any:
        if takes or has_varargs:
            return method(self, x, context)
        return method(self, x)

    hook._ge_context_hook = True  # type: ignore[attr-defined]
    return hook


def _adapt_expression_replacement(method: Callable[..., Any]) -> Callable[..., Any]:
    params = _positional(method)
    if len(params) < 2 or params[1].name != "inputs":
        return _context_hook(method, 2)
    forms = ("expression-style replacement must be replacement(self, inputs), "
             "replacement(self, inputs, match_result), replacement(self, inputs, context) or "
             "replacement(self, inputs, match_result, context)")
    _check_arity(method, 2, 4, forms)
    extra = params[2:]
    with_context = bool(extra) and _is_context_param(extra[-1])
    if len(extra) == 2 and not with_context:
        raise TypeError(forms)
    with_match = len(extra) - int(with_context) == 1

    @wraps(method)
    def replacement(self: Any, match_result: Any, context: Any = None) -> Graph:
        builder = GraphBuilder(f"{type(self).__name__}_replacement")
        if type(match_result) is MatchResult:
            # Every input of the match exists in the replacement, used or not: made in one call.
            inputs = PatternInputs(builder, None, match_result._create_inputs(builder))
            descs: Optional[List[Tuple[int, List[int], int]]] = None
        else:
            input_descs = getattr(match_result, "_input_descs", None)
            descs = input_descs() if input_descs is not None else None
            inputs = PatternInputs(builder, descs)
        if with_match:
            result = method(self, inputs, match_result, context) if with_context else method(self, inputs, match_result)
        else:
            result = method(self, inputs, context) if with_context else method(self, inputs)
        # Every input of the match must exist in the replacement, used or not.
        if descs and len(inputs._inputs) < len(descs) and not isinstance(result, Graph):
            inputs._ensure(len(descs))
        # Outputs checked here: set them and build without the public method's checks.
        if type(result) is TensorHolder:
            builder.set_graph_output(result, 0)
        elif isinstance(result, Graph):
            return result
        else:
            for i, t in enumerate(_outputs(result, "replacement")):
                builder.set_graph_output(t, i)
        return builder._build_and_reset()

    replacement._ge_context_hook = True  # type: ignore[attr-defined]
    return replacement
