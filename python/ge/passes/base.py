"""The three pass base classes and the stages (GE's ``ge.passes.base``)."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Iterable, List, Optional, Union

from ge import _native
from ge._native import MatchResult, PassContext, PatternMatcherConfig, SubgraphBoundary
from ge.graph import DataType, Format, Graph, Node, TensorDesc

if TYPE_CHECKING:
    from .pattern import Pattern

PatternOrGraph = Union["Pattern", "Graph"]
StatusLike = Optional[Union[bool, int]]

__all__ = [
    "PassStage",
    "FusionBasePass",
    "PatternFusionPass",
    "DecomposePass",
    "PatternOrGraph",
    "StatusLike",
    "infer_shape",
]


def infer_shape(target: Union[Node, Graph],
                source: Union[MatchResult, Node, SubgraphBoundary, None] = None) -> None:
    """GE's form, ``infer_shape(replacement, source)``: seeds the replacement graph's inputs
    (Data node ``index`` i) with the description of the source's input i (a ``MatchResult``'s
    matched inputs, a ``Node``'s inputs, a ``SubgraphBoundary``'s input slots), then infers the
    replacement's shapes, dtypes and formats.

    Beyond GE, ``infer_shape(target)`` re-runs inference for one node (from its producers'
    output descriptions) or a whole graph, in topological order.
    """
    if source is None:
        _native._infer_shape(target)
        return
    if not isinstance(target, Graph):
        raise TypeError("replacement must be a ge.graph.Graph")
    if not isinstance(source, (MatchResult, Node, SubgraphBoundary)):
        raise TypeError("source must be MatchResult, Node, or SubgraphBoundary")
    nodes = target.get_all_nodes()
    if not nodes:
        raise RuntimeError("replacement graph is empty")
    descs = _source_input_descs(source)
    for node in target.get_direct_nodes():
        if node.type not in ("Data", "RefData", "AippData", "AnyData") or not node.has_attr("index"):
            continue
        index = node.get_attr("index")
        if 0 <= index < len(descs):
            node.update_output_desc(0, descs[index])
            if node.get_inputs_size() > 0:
                node.update_input_desc(0, descs[index])
    _native._infer_shape(target)


def _source_input_descs(source: Union[MatchResult, Node, SubgraphBoundary]) -> List[TensorDesc]:
    """The descriptions of a source's inputs, in input order."""
    if isinstance(source, Node):
        return [source.get_input_desc(i) for i in range(source.get_inputs_size())]
    if isinstance(source, SubgraphBoundary):
        return [node.get_input_desc(index) for node, index in source._input_anchors()]
    return [TensorDesc(shape=dims, format=Format(fmt), data_type=DataType(dt))
            for dt, dims, fmt in source._input_descs()]


class PassStage(str, Enum):
    """When a pass runs in the compile pipeline (values are GE's stage names)."""

    BEFORE_INFER_SHAPE = "BeforeInferShape"
    AFTER_INFER_SHAPE = "AfterInferShape"
    AFTER_BUILTIN_FUSION_PASS = "AfterBuiltinFusionPass"
    AFTER_ORIGIN_GRAPH_OPTIMIZE = "AfterOriginGraphOptimize"


class FusionBasePass:
    """A pass over the whole graph: implement ``run(graph, context)``.

    The hooks of the three base classes that a subclass must define raise
    ``NotImplementedError`` (as GE's base classes do), so a pass that forgets one fails with
    ``ge.PassError`` naming the pass and the missing method.

    ``run`` returns ``None``/truthy for success and ``False``/``0`` for failure (GE's
    ``StatusLike``). The graph and context are views valid during the call only.
    """

    def run(self, graph: "Graph", context: PassContext) -> StatusLike:
        raise NotImplementedError("FusionBasePass.run must be implemented")


def _forbid_run(cls: type, base: str, hooks: str) -> None:
    if "run" in cls.__dict__:
        raise TypeError(
            f"{cls.__name__} overrides run(), which the {base} execution path never calls; "
            f"implement {hooks} instead"
        )


class PatternFusionPass(FusionBasePass):
    """A pattern pass: the executor finds the matches of ``patterns()`` (or of the ``@pattern``
    methods), calls ``meet_requirements(match_result)`` for each, and replaces the accepted ones by
    ``replacement(match_result)``. Overriding ``run`` is a TypeError at class creation.

    Beyond GE: the class attribute ``max_rounds`` (default 1, GE's behaviour) repeats
    match-and-rewrite rounds while the previous round rewrote something, at most that many times.
    """

    max_rounds: int = 1

    def __init__(self, matcher_config: Optional[PatternMatcherConfig] = None) -> None:
        self._matcher_config = matcher_config

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        _forbid_run(cls, "PatternFusionPass", "patterns()/meet_requirements()/replacement()")
        from .pattern import (
            _adapt_decorated_pattern_methods,
            _adapt_expression_replacement,
            _context_hook,
            _has_decorated_pattern_methods,
        )

        if _has_decorated_pattern_methods(cls):
            if "patterns" in cls.__dict__:
                raise TypeError(
                    f"{cls.__name__} cannot combine @pattern methods with patterns(); "
                    "use one style to declare patterns"
                )
            cls.patterns = _adapt_decorated_pattern_methods(cls)  # type: ignore[method-assign]
        if "replacement" in cls.__dict__:
            cls.replacement = _adapt_expression_replacement(cls.__dict__["replacement"])  # type: ignore[method-assign]
        if "meet_requirements" in cls.__dict__:
            cls.meet_requirements = _context_hook(cls.__dict__["meet_requirements"], 2)  # type: ignore[method-assign]
        rounds = cls.__dict__.get("max_rounds", 1)
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise TypeError(f"{cls.__name__}.max_rounds must be a positive int, got {rounds!r}")

    @property
    def matcher_config(self) -> Optional[PatternMatcherConfig]:
        return getattr(self, "_matcher_config", None)

    def patterns(self) -> Iterable[PatternOrGraph]:
        raise NotImplementedError("PatternFusionPass.patterns must be implemented")

    # The hooks may also take the pass context as a last parameter, as in GE:
    # meet_requirements(self, match_result, context), replacement(self, match_result, context).
    def meet_requirements(self, match_result: MatchResult, context: Optional[PassContext] = None) -> bool:
        return True

    def replacement(self, match_result: MatchResult, context: Optional[PassContext] = None) -> "Graph":
        raise NotImplementedError("PatternFusionPass.replacement must be implemented")


class DecomposePass(FusionBasePass):
    """A decompose pass: each node whose op type is in ``op_types`` is offered to
    ``meet_requirements(node)`` and, if accepted, replaced by ``replacement(node)``. The
    replacement's inputs are the node's connected inputs in order; its outputs replace the node's
    outputs. Overriding ``run`` is a TypeError at class creation.
    """

    op_types: Optional[List[str]] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        _forbid_run(cls, "DecomposePass", "meet_requirements()/replacement()")
        from .pattern import _context_hook

        # GE's hooks may take the pass context last: meet_requirements(self, node, context).
        for hook in ("meet_requirements", "replacement"):
            if hook in cls.__dict__:
                setattr(cls, hook, _context_hook(cls.__dict__[hook], 2))

    def meet_requirements(self, node: "Node", context: Optional[PassContext] = None) -> bool:
        return True

    def replacement(self, node: "Node", context: Optional[PassContext] = None) -> "Graph":
        raise NotImplementedError("DecomposePass.replacement must be implemented")
