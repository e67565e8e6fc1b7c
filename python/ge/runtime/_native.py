"""GE's module path of the runtime types (``ge.runtime._native``); here they are Python."""

from ._types import (ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc,
                     TensorPlacement)

__all__ = ["ExpandDimsType", "Shape", "StorageFormat", "StorageShape", "Tensor", "TensorDesc",
           "TensorPlacement"]
