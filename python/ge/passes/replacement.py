"""``create_replacement``: GE's helper that checks a replacement graph."""

from ge.graph import Graph

__all__ = ["create_replacement"]


def create_replacement(graph: Graph) -> Graph:
    """Returns ``graph`` (a replacement for pattern fusion or decomposition); TypeError for
    anything that is not a ``ge.graph.Graph``."""
    if not isinstance(graph, Graph):
        raise TypeError(f"create_replacement needs a ge.graph.Graph, got {type(graph).__name__}")
    return graph
