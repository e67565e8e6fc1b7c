"""``ge.utils``: GE's public utility APIs (``GeUtils``)."""

from ge.utils.ge_utils import GeUtils

__all__ = ["GeUtils"]
