"""``TensorDesc`` and ``Shape``: a tensor's metadata (shape, format, data type and their origins).

GE's API: ``TensorDesc(shape=None, format=FORMAT_ND, data_type=DT_FLOAT)`` with the properties
``shape``, ``origin_shape``, ``format``, ``origin_format``, ``data_type`` and chaining ``set_*``
methods; ``Shape`` is a ``list`` of dims with ``get_shape_size`` and ``is_unknown_shape``.
Beyond GE: a description also carries a placement and tensor attributes (``get_placement``,
``set_placement``, ``get_attr``, ``set_attr``), compares by value, and takes tuples as shapes.
"""

from __future__ import annotations

from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

from ge._internal.accessors import from_getter, read_only
from ge.graph.types import DataType, Format, Placement

UNKNOWN_DIM = -1
UNKNOWN_DIM_NUM = -2
UNKNOWN_DIM_SIZE = -1

_RawDesc = Tuple[int, int, List[int], int, List[int], int, Dict[str, Any]]


def _dims(shape: Any, arg_name: str = "shape") -> List[int]:
    """A shape as a plain list of ints: GE's TypeError for anything but a list (or tuple) of
    ints; a ValueError for dims GE has no meaning for (below -1, or -2 beside other dims)."""
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise TypeError(f"{arg_name} must be a list of integers")
    dims = [int(d) for d in shape]
    if dims != [UNKNOWN_DIM_NUM] and any(d < UNKNOWN_DIM for d in dims):
        raise ValueError(f"invalid shape {dims}: dims are >= 0 or -1, or the shape is [-2]")
    return dims


class Shape(list):
    """GE's Shape: a list of dims. ``Shape()`` is a scalar, -1 an unknown dim, ``[-2]`` an
    unknown rank."""

    def __init__(self, dims: Optional[Sequence[int]] = None) -> None:
        super().__init__(_dims(dims if dims is not None else [], "dims"))

    def get_shape_size(self) -> int:
        """The element count as GE counts it: 0 for a scalar, -1 when a dim or the rank is
        unknown."""
        if len(self) == 0:
            return 0
        if self.is_unknown_shape():
            return UNKNOWN_DIM_SIZE
        size = 1
        for d in self:
            size *= d
        return size

    def is_unknown_shape(self) -> bool:
        return any(d in (UNKNOWN_DIM, UNKNOWN_DIM_NUM) for d in self)

    # Beyond GE's Python API (ge::Shape's C++ accessors).

    def get_dims(self) -> List[int]:
        return list(self)

    def get_dim_num(self) -> int:
        """The rank; -1 for an unknown rank."""
        return -1 if self.is_unknown_rank() else len(self)

    def get_dim(self, index: int) -> int:
        return self[index]

    def is_unknown_rank(self) -> bool:
        return list(self) == [UNKNOWN_DIM_NUM]


def _check_format(format: Any) -> Format:
    if not isinstance(format, Format):
        raise TypeError("Format must be a Format")
    return format


def _check_data_type(data_type: Any) -> DataType:
    if not isinstance(data_type, DataType):
        raise TypeError("Data type must be a DataType")
    return data_type


class TensorDesc:
    """A tensor's description: shape, format and data type, their origins, a placement and
    tensor attributes.

    >>> d = TensorDesc([1, 3, 224, 224], Format.FORMAT_NCHW, DataType.DT_FLOAT)
    >>> d.set_shape([2, 3]).set_data_type(DataType.DT_INT32).shape
    [2, 3]
    """

    __slots__ = ("_shape", "_dtype", "_format", "_origin_shape", "_origin_format", "_placement", "_attrs")

    def __init__(self, shape: Optional[Sequence[int]] = None, format: Format = Format.FORMAT_ND,
                 data_type: DataType = DataType.DT_FLOAT) -> None:
        self._format = _check_format(format)
        self._dtype = _check_data_type(data_type)
        self._shape: List[int] = _dims(shape if shape is not None else [])
        self._origin_shape: List[int] = list(self._shape)
        self._origin_format = self._format
        self._placement = Placement.PLACEMENT_HOST
        self._attrs: Dict[str, Any] = {}

    @classmethod
    def _from_raw(cls, raw: _RawDesc) -> "TensorDesc":
        d = cls.__new__(cls)
        dt, fmt, shape, ofmt, oshape, place, attrs = raw
        d._dtype, d._format, d._shape = DataType(dt), Format(fmt), list(shape)
        d._origin_format, d._origin_shape = Format(ofmt), list(oshape)
        d._placement, d._attrs = Placement(place), dict(attrs)
        return d

    def _raw(self) -> _RawDesc:
        return (int(self._dtype), int(self._format), list(self._shape), int(self._origin_format),
                list(self._origin_shape), int(self._placement), dict(self._attrs))

    # GE's properties.

    shape: Shape = from_getter("get_shape")
    origin_shape: Shape = from_getter("get_origin_shape")
    format: Format = read_only("_format")
    origin_format: Format = read_only("_origin_format")
    data_type: DataType = read_only("_dtype")

    # GE's accessors; every setter returns the description.

    def get_shape(self) -> Shape:
        return Shape(self._shape)

    def set_shape(self, shape: Sequence[int]) -> "TensorDesc":
        self._shape = _dims(shape, "shape")
        return self

    def get_origin_shape(self) -> Shape:
        return Shape(self._origin_shape)

    def set_origin_shape(self, shape: Sequence[int]) -> "TensorDesc":
        self._origin_shape = _dims(shape, "origin shape")
        return self

    def get_format(self) -> Format:
        return self._format

    def set_format(self, format: Format) -> "TensorDesc":
        self._format = _check_format(format)
        return self

    def get_origin_format(self) -> Format:
        return self._origin_format

    def set_origin_format(self, format: Format) -> "TensorDesc":
        self._origin_format = _check_format(format)
        return self

    def get_data_type(self) -> DataType:
        return self._dtype

    def set_data_type(self, data_type: DataType) -> "TensorDesc":
        self._dtype = _check_data_type(data_type)
        return self

    # Beyond GE's Python API: placement and tensor attributes (ge::TensorDesc has them in C++).

    placement: Placement = read_only("_placement")

    def get_placement(self) -> Placement:
        return self._placement

    def set_placement(self, placement: Placement) -> "TensorDesc":
        if not isinstance(placement, Placement):
            raise TypeError("Placement must be a Placement")
        self._placement = placement
        return self

    def get_attr(self, name: str) -> Any:
        if name not in self._attrs:
            raise RuntimeError(f"TensorDesc has no attribute '{name}'")
        return self._attrs[name]

    def set_attr(self, name: str, value: Any) -> "TensorDesc":
        if not isinstance(name, str) or not name:
            raise TypeError("Attribute name must be a non-empty string")
        self._attrs[name] = value
        return self

    def __copy__(self) -> NoReturn:
        raise RuntimeError("TensorDesc does not support copy")

    def __deepcopy__(self, memodict: Any) -> NoReturn:
        raise RuntimeError("TensorDesc does not support deepcopy")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorDesc) and self._raw() == other._raw()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"TensorDesc(shape={list(self._shape)}, format={int(self._format)}, "
                f"data_type={int(self._dtype)})")
