"""``Tensor``: a tensor description plus its data, convertible to and from numpy."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ge._native import TensorData
from ge.graph.tensor_desc import TensorDesc, _dims
from ge.graph.types import DataType, Format

_NP_TO_DT = {
    np.dtype(np.float32): DataType.DT_FLOAT,
    np.dtype(np.float16): DataType.DT_FLOAT16,
    np.dtype(np.float64): DataType.DT_DOUBLE,
    np.dtype(np.int8): DataType.DT_INT8,
    np.dtype(np.int16): DataType.DT_INT16,
    np.dtype(np.int32): DataType.DT_INT32,
    np.dtype(np.int64): DataType.DT_INT64,
    np.dtype(np.uint8): DataType.DT_UINT8,
    np.dtype(np.uint16): DataType.DT_UINT16,
    np.dtype(np.uint32): DataType.DT_UINT32,
    np.dtype(np.uint64): DataType.DT_UINT64,
    np.dtype(np.bool_): DataType.DT_BOOL,
    np.dtype(np.complex64): DataType.DT_COMPLEX64,
    np.dtype(np.complex128): DataType.DT_COMPLEX128,
}
_DT_TO_NP = {v: k for k, v in _NP_TO_DT.items()}


# Types numpy lacks, as ml_dtypes (used by onnx, JAX, TensorFlow) names them: data is moved as
# raw bits (uint16 for bf16, uint8 for the float8 types).
_BITS_TYPES = {
    "bfloat16": (DataType.DT_BF16, np.dtype(np.uint16)),
    "float8_e4m3fn": (DataType.DT_FLOAT8_E4M3FN, np.dtype(np.uint8)),
    "float8_e5m2": (DataType.DT_FLOAT8_E5M2, np.dtype(np.uint8)),
}
_BITS_OF = {dt: bits for dt, bits in _BITS_TYPES.values()}


def numpy_dtype(dt: DataType) -> np.dtype:
    """The numpy dtype of a GE data type (bf16 and the float8 types are returned as their raw bits:
    uint16, uint8)."""
    if DataType(dt) in _BITS_OF:
        return _BITS_OF[DataType(dt)]
    try:
        return _DT_TO_NP[DataType(dt)]
    except KeyError:
        raise TypeError(f"{DataType(dt).name} has no numpy equivalent") from None


def data_type_of(array: np.ndarray) -> DataType:
    """The GE data type of a numpy array's dtype."""
    try:
        return _NP_TO_DT[array.dtype.newbyteorder("=")]  # byte-swapped arrays too
    except KeyError:
        if array.dtype.name in _BITS_TYPES:
            return _BITS_TYPES[array.dtype.name][0]
        raise TypeError(f"numpy dtype {array.dtype} has no GE data type") from None


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    """The bf16 bit patterns (uint16) of numeric values, rounded to nearest even; NaN stays NaN."""
    f = np.array(values, dtype=np.float32, order="C")
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    quiet_nan = (u >> 16) | 0x40
    return np.where(np.isnan(f), quiet_nan, rounded).astype(np.uint16)


def _native_from_array(value: Any, data_type: Optional[DataType] = None) -> TensorData:
    """A native tensor from anything numpy can turn into an array."""
    if isinstance(value, Tensor):
        return value._tensor
    array = np.asarray(value)
    if array.dtype.name in _BITS_TYPES:  # an ml_dtypes array (bfloat16, float8): its raw bits
        dt, bits = _BITS_TYPES[array.dtype.name]
        if data_type is None or DataType(data_type) == dt:
            return TensorData(np.ascontiguousarray(array).view(bits).tobytes(order="C"), int(dt),
                              list(array.shape))
        array = array.astype(np.float32)
    if data_type is None:
        if array.dtype == np.dtype(np.float64) and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)
        dt = data_type_of(array)
    else:
        dt = DataType(data_type)
        if dt == DataType.DT_BF16 and array.dtype != np.uint16:
            array = _bf16_bits(array)  # values; a uint16 array is taken as raw bf16 bits
        else:
            array = array.astype(numpy_dtype(dt))
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return TensorData(little.tobytes(order="C"), int(dt), list(array.shape))


class Tensor:
    """A tensor: description and bytes.

    ``Tensor(np.ones((2, 3), np.float32))``, ``Tensor([1, 2, 3], data_type=DataType.DT_INT32)``,
    ``Tensor()`` is an empty float tensor of shape [0]. ``numpy()`` gives the data back.
    """

    __slots__ = ("_tensor",)

    def __init__(self, data: Any = None, *, data_type: Optional[DataType] = None,
                 shape: Optional[Sequence[int]] = None, format: Format = Format.FORMAT_ND) -> None:
        if data is None:
            dt = DataType.DT_FLOAT if data_type is None else DataType(data_type)
            dims = _dims(shape) if shape is not None else [0]
            if any(d < 0 for d in dims):
                raise ValueError(f"a tensor needs a known shape, got {dims}")
            size = int(np.prod(dims)) if dims else 1
            self._tensor = TensorData(bytes(size * numpy_dtype(dt).itemsize), int(dt), dims, int(format))
            return
        t = _native_from_array(data, data_type)
        dims = list(t.shape)
        if shape is not None:
            want = list(shape)
            if int(np.prod(want)) != int(np.prod(dims)):
                raise ValueError(f"data of shape {dims} cannot take shape {want}")
            dims = want
        self._tensor = TensorData(t.data, t.dtype, dims, int(format))

    @classmethod
    def _wrap(cls, native: TensorData) -> "Tensor":
        obj = cls.__new__(cls)
        obj._tensor = native
        return obj

    def numpy(self) -> np.ndarray:
        """The data as a writable numpy array of its own (the bytes are copied once; bf16 and the
        float8 types come back as their raw bits, uint16 and uint8)."""
        dt = numpy_dtype(DataType(self._tensor.dtype))
        arr = np.frombuffer(self._tensor.to_bytearray(), dtype=dt.newbyteorder("<")).reshape(self._tensor.shape)
        return arr if arr.dtype == dt else arr.astype(dt)

    def get_data(self) -> bytes:
        return self._tensor.data

    def get_data_type(self) -> DataType:
        return DataType(self._tensor.dtype)

    def get_shape(self) -> List[int]:
        return list(self._tensor.shape)

    def get_format(self) -> Format:
        return Format(self._tensor.format)

    def get_tensor_desc(self) -> TensorDesc:
        return TensorDesc(shape=self.get_shape(), data_type=self.get_data_type(), format=self.get_format())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        a, b = self._tensor, other._tensor
        return (a.dtype, a.shape, a.format, a.data) == (b.dtype, b.shape, b.format, b.data)

    def __repr__(self) -> str:
        return f"Tensor({self.get_data_type().name}{self.get_shape()})"
