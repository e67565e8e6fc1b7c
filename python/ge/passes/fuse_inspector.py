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


def can_fuse(nodes: Iterable[Node]) -> FuseCheckResult:
    """Whether ``nodes`` (of one graph) can become one node: fusing them must not create a cycle
    (no path leaves the set and comes back)."""
    ok, reason = _native._can_fuse(_nodes(nodes, "can_fuse"))
    return FuseCheckResult(ok=ok, reason=reason)


def report_fuse(nodes_before: Iterable[Node], nodes_after: Iterable[Node], context: PassContext) -> None:
    """Records a fusion done by hand (call it after rewriting, before removing the old nodes);
    it appears in the pass's statistics (``PassStats.fusions``)."""
    if not isinstance(context, PassContext):
        raise TypeError("report_fuse: context must be a PassContext")
    _native._report_fuse(_nodes(nodes_before, "report_fuse"), _nodes(nodes_after, "report_fuse"), context)
