"""The runtime tensor metadata of ``ge.runtime`` (GE's gert types, seen from Python).

Objects handed out by an execution context or a ``TensorDesc`` are *views*: they share the
owner's storage and expire with it (``RuntimeError: ... handle has expired``), as GE's borrowed
native views do. On the CPU backend a ``Tensor``'s ``addr`` is the address of a host (numpy)
buffer: programs may read and write through it with ctypes while the view is valid.
"""

from __future__ import annotations

import weakref
from enum import IntEnum
from typing import Any, Callable, List, Optional, Union

import numpy as np

from ge.graph.types import DataType, Format

__all__ = ["ExpandDimsType", "Shape", "StorageFormat", "StorageShape", "Tensor", "TensorDesc",
           "TensorPlacement"]

MAX_DIM_NUM = 25  # gert::Shape::kMaxDimNum
_MAX_EXPAND_SIZE = 56  # bits of the expand mask in ExpandDimsType's integer form

Alive = Callable[[], bool]


def _always() -> bool:
    return True


def _check(alive: Alive) -> None:
    if not alive():
        raise RuntimeError("the owner of this ge.runtime view is gone: handle has expired")


def _dims_of(value: Any, what: str) -> List[int]:
    if not isinstance(value, list) or any(type(d) is not int for d in value):
        raise TypeError(f"{what} must be a StorageShape, list of integers, or None")
    if len(value) > MAX_DIM_NUM:
        raise ValueError(f"{len(value)} dims exceed the maximum dimension count {MAX_DIM_NUM}")
    return list(value)


class TensorPlacement(IntEnum):
    """Where a tensor's data lives (gert::TensorPlacement)."""

    ON_DEVICE_HBM = 0
    ON_HOST = 1
    FOLLOWING = 2
    ON_DEVICE_P2P = 3
    END = 4


class Shape:
    """Dimension values; ``dim_num == 0`` is a scalar."""

    def __init__(self, dims: Optional[List[int]] = None) -> None:
        self._dims = _dims_of([] if dims is None else dims, "dims")
        self._alive: Alive = _always

    @classmethod
    def _view(cls, dims: List[int], alive: Alive) -> "Shape":
        s = cls.__new__(cls)
        s._dims, s._alive = dims, alive
        return s

    @property
    def dims(self) -> List[int]:
        _check(self._alive)
        return list(self._dims)

    @property
    def dim_num(self) -> int:
        _check(self._alive)
        return len(self._dims)

    @property
    def size(self) -> int:
        _check(self._alive)
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_scalar(self) -> bool:
        return self.dim_num == 0

    def _index(self, index: int) -> int:
        _check(self._alive)
        if type(index) is not int or not 0 <= index < len(self._dims):
            raise ValueError(f"dim index {index!r} out of range for {len(self._dims)} dims")
        return index

    def get_dim(self, index: int) -> int:
        return self._dims[self._index(index)]

    def set_dim(self, index: int, value: int) -> None:
        if type(value) is not int:
            raise TypeError("a dim value must be an int")
        self._dims[self._index(index)] = value

    def append_dim(self, value: int) -> "Shape":
        _check(self._alive)
        if type(value) is not int:
            raise TypeError("a dim value must be an int")
        if len(self._dims) < MAX_DIM_NUM:
            self._dims.append(value)
        return self

    def set_scalar(self) -> None:
        _check(self._alive)
        self._dims.clear()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shape) and self.dims == other.dims

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Shape({self.dims})"


class StorageShape:
    """The origin (logical) shape and the storage (runtime) shape of a tensor."""

    def __init__(self, origin_shape: Optional[List[int]] = None,
                 storage_shape: Optional[List[int]] = None) -> None:
        if (origin_shape is None) != (storage_shape is None):
            raise TypeError("StorageShape takes both origin_shape and storage_shape, or neither")
        self._origin = _dims_of(origin_shape or [], "origin_shape")
        self._storage = _dims_of(storage_shape or [], "storage_shape")
        self._alive: Alive = _always

    @classmethod
    def _view(cls, origin: List[int], storage: List[int], alive: Alive) -> "StorageShape":
        s = cls.__new__(cls)
        s._origin, s._storage, s._alive = origin, storage, alive
        return s

    @property
    def origin_shape(self) -> Shape:
        _check(self._alive)
        return Shape._view(self._origin, self._alive)

    @property
    def storage_shape(self) -> Shape:
        _check(self._alive)
        return Shape._view(self._storage, self._alive)

    def set_origin_shape(self, shape: Shape) -> None:
        _check(self._alive)
        self._origin[:] = shape.dims

    def set_storage_shape(self, shape: Shape) -> None:
        _check(self._alive)
        self._storage[:] = shape.dims

    def __repr__(self) -> str:
        return f"StorageShape(origin={self._origin}, storage={self._storage})"


def _storage_dims(shape: Union[StorageShape, Optional[List[int]]]) -> tuple:
    if isinstance(shape, StorageShape):
        _check(shape._alive)
        return list(shape._origin), list(shape._storage)
    if shape is None:
        return [], []
    dims = _dims_of(shape, "shape")
    return dims, list(dims)


def _check_data_type(value: Any) -> DataType:
    if not isinstance(value, DataType):
        raise TypeError(f"data_type must be a DataType, got {type(value).__name__}")
    if value >= DataType.DT_MAX:
        raise ValueError("data_type must be less than DataType.DT_MAX")
    return value


class TensorDesc:
    """Shape and data type of one input or output, as the infer-meta function of a
    ``register_op`` operator receives and returns them."""

    def __init__(self, shape: Union[StorageShape, Optional[List[int]]],
                 data_type: DataType) -> None:
        self._origin, self._storage = _storage_dims(shape)
        self._data_type = _check_data_type(data_type)

    @property
    def shape(self) -> StorageShape:
        ref = weakref.ref(self)
        return StorageShape._view(self._origin, self._storage, lambda: ref() is not None)

    @shape.setter
    def shape(self, value: Union[StorageShape, Optional[List[int]]]) -> None:
        self._origin[:], self._storage[:] = _storage_dims(value)

    @property
    def data_type(self) -> DataType:
        return self._data_type

    @data_type.setter
    def data_type(self, value: DataType) -> None:
        self._data_type = _check_data_type(value)

    def __repr__(self) -> str:
        return f"TensorDesc(shape={self._origin}, data_type={self._data_type.name})"


class ExpandDimsType:
    """Which axes of the expanded shape are inserted dims: a rule string like ``"101"``, or
    GE's integer form (length in the high 8 bits, the mask in the low 56, bit i = axis i)."""

    def __init__(self, rule: Union[str, int, None] = None) -> None:
        self._size, self._mask = 0, 0
        if rule is None:
            return
        if isinstance(rule, str):
            if len(rule) > _MAX_EXPAND_SIZE:
                return  # GE ignores an over-long rule
            if any(c not in "01" for c in rule):
                raise ValueError(f"an expand rule holds only '0' and '1', got {rule!r}")
            self._size = len(rule)
            self._mask = sum(1 << i for i, c in enumerate(rule) if c == "1")
        elif type(rule) is int:
            if rule < 0 or rule >= 1 << 64:
                raise ValueError("an integer expand rule must fit in 64 unsigned bits")
            self._size, self._mask = rule >> 56, rule & ((1 << 56) - 1)
        else:
            raise TypeError("ExpandDimsType takes a rule string, an int, or nothing")

    @property
    def full_size(self) -> int:
        return self._size

    def is_expand_index(self, index: int) -> bool:
        return 0 <= index < self._size and bool(self._mask >> index & 1)

    def set_expand_index(self, index: int) -> None:
        if 0 <= index < _MAX_EXPAND_SIZE:
            self._mask |= 1 << index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpandDimsType) and (self._size, self._mask) == (
            other._size, other._mask)

    __hash__ = None  # type: ignore[assignment]


class StorageFormat:
    """Origin format, storage format and the expand rule between them."""

    def __init__(self, origin_format: Format = Format.FORMAT_ND,
                 storage_format: Format = Format.FORMAT_ND,
                 expand_dims_type: Optional[ExpandDimsType] = None) -> None:
        for f in (origin_format, storage_format):
            if not isinstance(f, Format):
                raise TypeError(f"a format must be a Format, got {type(f).__name__}")
        self._origin, self._storage = origin_format, storage_format
        self._expand = expand_dims_type if expand_dims_type is not None else ExpandDimsType()
        self._alive: Alive = _always

    @property
    def origin_format(self) -> Format:
        _check(self._alive)
        return self._origin

    @property
    def storage_format(self) -> Format:
        _check(self._alive)
        return self._storage

    @property
    def expand_dims_type(self) -> ExpandDimsType:
        _check(self._alive)
        return self._expand

    def set_origin_format(self, value: Format) -> None:
        _check(self._alive)
        self._origin = Format(value)

    def set_storage_format(self, value: Format) -> None:
        _check(self._alive)
        self._storage = Format(value)

    def set_expand_dims_type(self, value: ExpandDimsType) -> None:
        _check(self._alive)
        self._expand = value

    def __repr__(self) -> str:
        return f"StorageFormat({self._origin.name}, {self._storage.name})"


class Tensor:
    """A runtime tensor: metadata plus the address of its data. Handed out by the execution
    context of a custom operator (inputs, outputs) and by ``RuntimeAttrs.get_tensor``; it cannot
    be constructed directly, and it expires with the context that made it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ge.runtime.Tensor cannot be constructed directly: it is handed out "
                        "by an execution context")

    @classmethod
    def _wrap(cls, array: np.ndarray, data_type: DataType, alive: Alive = _always,
              fmt: Optional[StorageFormat] = None,
              origin_dims: Optional[List[int]] = None) -> "Tensor":
        t = cls.__new__(cls)
        t._array = array
        t._data_type = data_type
        t._storage = [int(d) for d in array.shape]
        t._origin = list(origin_dims) if origin_dims is not None else list(t._storage)
        t._format = fmt if fmt is not None else StorageFormat()
        t._alive = alive
        return t

    def _live(self) -> "Tensor":
        _check(self._alive)
        return self

    @property
    def addr(self) -> int:
        return int(self._live()._array.ctypes.data)

    @property
    def size(self) -> int:
        return int(self._live()._array.nbytes)

    @property
    def shape_size(self) -> int:
        return int(self._live()._array.size)

    @property
    def shape(self) -> StorageShape:
        return StorageShape._view(self._live()._origin, self._storage, self._alive)

    @property
    def origin_shape(self) -> Shape:
        return Shape._view(self._live()._origin, self._alive)

    @property
    def storage_shape(self) -> Shape:
        return Shape._view(self._live()._storage, self._alive)

    @property
    def format(self) -> StorageFormat:
        self._live()
        f = StorageFormat(self._format._origin, self._format._storage, self._format._expand)
        f._alive = self._alive
        return f

    @property
    def storage_format(self) -> Format:
        return self._live()._format._storage

    @property
    def origin_format(self) -> Format:
        return self._live()._format._origin

    @property
    def expand_dims_type(self) -> ExpandDimsType:
        return self._live()._format._expand

    @property
    def data_type(self) -> DataType:
        return self._live()._data_type

    @property
    def placement(self) -> TensorPlacement:
        self._live()
        return TensorPlacement.ON_HOST

    def __repr__(self) -> str:
        if not self._alive():
            return "Tensor(<expired>)"
        return (f"Tensor({self._data_type.name}{self._storage}, addr=0x{self.addr:x}, "
                f"placement=ON_HOST)")
