"""``ge.runtime``: the runtime tensor types of GE's Python package (``Tensor``, ``TensorDesc``,
``Shape``, ``StorageShape``, ``StorageFormat``, ``ExpandDimsType``, ``TensorPlacement``), used by
Python custom operators (``ge.custom_op``)."""

__all__ = [
    "ExpandDimsType",
    "Shape",
    "StorageFormat",
    "StorageShape",
    "Tensor",
    "TensorDesc",
    "TensorPlacement",
]

from ._native import (ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc,
                      TensorPlacement)
