"""``ge.passes``: graph passes written in Python, with GE's API.

Three kinds of pass (``FusionBasePass``, ``PatternFusionPass``, ``DecomposePass``) registered with
``register_fusion_pass`` / ``register_decompose_pass``, discovered from ``ASCEND_GE_PY_PASS_PATH``
and the ``ge.passes.plugins`` entry points (``load_pass_plugins``), and run by the Rust executor
through ``run_passes(graph)`` (outside a session) or a session's compile pipeline. See
docs/passes.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ge import _native
from ge._native import (
    MatchResult,
    PassContext,
    PatternMatcherConfig,
    PatternMatcherConfigBuilder,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    SubgraphRewriter,
)
from ge.graph import DataType, Format, Graph, Node, TensorDesc

from .base import DecomposePass, FusionBasePass, PassStage, PatternFusionPass, infer_shape
from .bootstrap import get_plugin_load_errors, load_pass_plugins, unload_pass_plugins
from .errors import PassFatalError, PassSkipException
from .fuse_inspector import FuseCheckResult, can_fuse, report_fuse
from .pattern import NodeIo, Pattern, PatternInputs, capture_tensor, create_pattern, pattern
from .registry import (
    PassDescriptor,
    clear_registered_passes,
    get_registered_pass_by_descriptor_key,
    get_registered_pass_dicts,
    get_registered_passes,
    register_decompose_pass,
    register_fusion_pass,
    unregister_pass,
)
from .replacement import create_replacement

__all__ = [
    "DecomposePass",
    "FuseCheckResult",
    "FusionBasePass",
    "MatchResult",
    "NodeIo",
    "PassContext",
    "PassDescriptor",
    "PassFatalError",
    "PassSkipException",
    "PassStage",
    "PassStats",
    "Pattern",
    "PatternFusionPass",
    "PatternInputs",
    "PatternMatcherConfig",
    "PatternMatcherConfigBuilder",
    "SubgraphBoundary",
    "SubgraphInput",
    "SubgraphOutput",
    "SubgraphRewriter",
    "can_fuse",
    "capture_tensor",
    "clear_registered_passes",
    "create_pattern",
    "create_replacement",
    "get_plugin_load_errors",
    "get_registered_pass_by_descriptor_key",
    "get_registered_pass_dicts",
    "get_registered_passes",
    "infer_shape",
    "load_pass_plugins",
    "pattern",
    "register_decompose_pass",
    "register_fusion_pass",
    "report_fuse",
    "run_passes",
    "unload_pass_plugins",
    "unregister_pass",
]


@dataclass(frozen=True)
class PassStats:
    """What one pass run did (``run_passes`` returns one per pass run, in run order)."""

    pass_name: str
    descriptor_key: str
    kind: str
    stage: PassStage
    matches_tried: int
    matches_accepted: int
    rewritten: int
    skipped: int
    rounds: int
    skipped_run: bool
    nodes_before: int
    nodes_after: int
    seconds: float
    fusions: List[Tuple[List[str], List[str]]] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.pass_name} [{self.kind}, {self.stage.value}]: tried {self.matches_tried}, "
            f"accepted {self.matches_accepted}, rewritten {self.rewritten}, skipped {self.skipped}, "
            f"nodes {self.nodes_before} -> {self.nodes_after}, {self.seconds * 1e3:.3f} ms"
        )


def run_passes(
    graph: Graph,
    stage: Optional[Union[PassStage, str]] = None,
    passes: Optional[Sequence[Union[str, type]]] = None,
    options: Optional[Dict[str, str]] = None,
) -> List[PassStats]:
    """Applies registered passes to ``graph`` in place, outside a session.

    ``stage``: only passes of that stage (default: every stage, in pipeline order). ``passes``:
    only these (pass names, descriptor keys or registered classes), still in stage and
    registration order. ``options``: what ``PassContext.get_option_value`` returns. Returns the
    statistics of each pass run. A failing pass raises ``ge.PassError`` naming it, and the graph
    is left as it was before that pass.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"run_passes needs a ge.graph.Graph, got {type(graph).__name__}")
    st = None if stage is None else PassStage(stage).value
    names: Optional[List[str]] = None
    if passes is not None:
        names = []
        for p in passes:
            if isinstance(p, type):
                d = getattr(p, "__ge_pass_descriptor__", None)
                if d is None:
                    raise ValueError(f"{p.__name__} is not a registered pass")
                names.append(d.descriptor_key)
            elif isinstance(p, str):
                names.append(p)
            else:
                raise TypeError("passes must be pass names, descriptor keys or registered classes")
    raw = _native._run_passes(graph, st, names, dict(options) if options else None)
    out = []
    for d in raw:
        d = dict(d)
        d["stage"] = PassStage(d["stage"])
        d["fusions"] = [(list(b), list(a)) for b, a in d["fusions"]]
        out.append(PassStats(**d))
    import logging

    log = logging.getLogger("ge.passes")
    for s in out:
        log.info("%s", s)
    return out


