"""``can_fuse`` and ``report_fuse``: checks and records for passes that rewrite by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ge import _native
from ge._native import PassContext
from ge.graph import Node

__all__ = ["FuseCheckResult", "can_fuse", "report_fuse"]


@dataclass(frozen=True)
class FuseCheckResult:
    """Whether a node set can be fused into one node, and why not."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _nodes(nodes: Iterable[Node], what: str) -> list:
    out = list(nodes)
    if not all(isinstance(n, Node) for n in out):
        raise TypeError(f"{what}: nodes must be ge.graph.Node objects")
    return out


_STREAM_LABEL = "_user_stream_label"


def can_fuse(nodes: Iterable[Node]) -> FuseCheckResult:
    """Whether ``nodes`` can become one node. Not when the set is empty, when the nodes belong to
    different graphs, when they carry different user stream labels (GE's ``_user_stream_label``
    attribute), or when fusing them would create a cycle (a path leaves the set and comes back)."""
    members = _nodes(nodes, "can_fuse")
    if not members:
        return FuseCheckResult(ok=False, reason="the node set is empty")
    try:
        ok, reason = _native._can_fuse(members)
    except ValueError as e:
        if "different graphs" not in str(e):
            raise
        return FuseCheckResult(ok=False, reason="the nodes belong to different graphs")
    labels = sorted({str(n.get_attr(_STREAM_LABEL)) for n in members if n.has_attr(_STREAM_LABEL)})
    if len(labels) > 1:
        return FuseCheckResult(ok=False, reason="the nodes have different user stream labels: "
                               + ", ".join(f"'{label}'" for label in labels))
    return FuseCheckResult(ok=ok, reason=reason)


def report_fuse(nodes_before: Iterable[Node], nodes_after: Iterable[Node], context: PassContext) -> None:
    """Records a fusion done by hand (call it after rewriting, before removing the old nodes);
    it appears in the pass's statistics (``PassStats.fusions``)."""
    if not isinstance(context, PassContext):
        raise TypeError("report_fuse: context must be a PassContext")
    _native._report_fuse(_nodes(nodes_before, "report_fuse"), _nodes(nodes_after, "report_fuse"), context)
