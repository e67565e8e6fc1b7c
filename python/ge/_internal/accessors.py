"""Property helpers for GE's accessor pairs (not a public API).

GE's Python classes expose many values twice: as a read-only property (``desc.shape``) and as a
``get_*`` method (``desc.get_shape()``), or as a plain read-only property over a private field
(``block.addr``). These two helpers build those properties in one place; the class states each
property's type in its annotation, e.g. ``shape: Shape = from_getter("get_shape")``.
"""

from __future__ import annotations

from operator import attrgetter, methodcaller
from typing import Any


def read_only(field: str) -> Any:
    """A read-only property that returns ``self.<field>``."""
    return property(attrgetter(field))


def from_getter(getter: str) -> Any:
    """GE's property form of an accessor: reading it returns ``self.<getter>()`` (looked up on the
    instance, so a subclass's getter is the one called)."""
    return property(methodcaller(getter))
