"""``Tensor``: a tensor description plus its data.

GE's API: ``Tensor(data=None, file_path=None, data_type=DT_FLOAT, format=FORMAT_ND, shape=None,
placement=PLACEMENT_HOST)``, where ``data`` is a flat list (``shape=None`` is a scalar) and
``file_path`` a raw binary file of the data type's elements; ``get_data()`` gives the values
as a nested list shaped like the tensor (a bare number for a scalar); ``set_format`` and
``set_data_type`` return the tensor; ``to_device``/``to_host`` move it between placements.

Beyond GE: numpy arrays as data (``Tensor(array)`` keeps the array's dtype and shape, any dtype
numpy has, plus ml_dtypes' bfloat16/float8 as raw bits), nested lists (their nesting is their
shape), ``Tensor(shape=..., data_type=...)`` as zeros, ``numpy()``, comparison by value.
"""

from __future__ import annotations

import os
from typing import Any, List, NoReturn, Optional, Sequence, Union

import numpy as np

from ge._internal.accessors import from_getter, read_only
from ge._native import TensorData
from ge.graph.tensor_desc import Shape, TensorDesc, _dims
from ge.graph.types import DataType, Format, Placement

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
    "float8_e4m3fnuz": (DataType.DT_FLOAT8_E4M3FNUZ, np.dtype(np.uint8)),
    "float8_e5m2fnuz": (DataType.DT_FLOAT8_E5M2FNUZ, np.dtype(np.uint8)),
    "float8_e8m0fnu": (DataType.DT_FLOAT8_E8M0, np.dtype(np.uint8)),
    "float4_e2m1fn": (DataType.DT_FLOAT4_E2M1, np.dtype(np.uint8)),
    "int4": (DataType.DT_INT4, np.dtype(np.uint8)),
    "uint4": (DataType.DT_UINT4, np.dtype(np.uint8)),
    "int2": (DataType.DT_INT2, np.dtype(np.uint8)),
    "uint2": (DataType.DT_UINT2, np.dtype(np.uint8)),
}
_BITS_OF = {dt: bits for dt, bits in _BITS_TYPES.values()}
_ML_NAME = {dt: name for name, (dt, _) in _BITS_TYPES.items()}

# Sub-byte types: bits an element. A tensor's bytes hold them packed, the first element in the
# lowest bits (GE's and ONNX's order); numpy() gives one bit pattern a byte (uint8).
_SUB_BYTE = {DataType.DT_INT4: 4, DataType.DT_UINT4: 4, DataType.DT_FLOAT4_E2M1: 4,
             DataType.DT_INT2: 2, DataType.DT_UINT2: 2}
_SMALL_INTS = {DataType.DT_INT4, DataType.DT_UINT4, DataType.DT_INT2, DataType.DT_UINT2}


def _ml_dtype(dt: DataType) -> Optional[np.dtype]:
    """ml_dtypes' dtype for a type numpy lacks, None where ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(getattr(ml_dtypes, _ML_NAME[dt]))


def _pack(bits: np.ndarray, dt: DataType) -> bytes:
    """One-pattern-a-byte elements packed into a sub-byte type's bytes (last byte padded)."""
    width = _SUB_BYTE[dt]
    per = 8 // width
    flat = np.ascontiguousarray(bits, dtype=np.uint8).reshape(-1) & np.uint8((1 << width) - 1)
    flat = np.concatenate([flat, np.zeros((-flat.size) % per, np.uint8)]).reshape(-1, per)
    shifts = (np.arange(per, dtype=np.uint8) * width).astype(np.uint8)
    return np.bitwise_or.reduce(flat << shifts, axis=1).astype(np.uint8).tobytes()


def _unpack(raw: Union[bytes, bytearray], dt: DataType, count: int) -> np.ndarray:
    """The first ``count`` elements of packed sub-byte data, one bit pattern a byte (uint8)."""
    width = _SUB_BYTE[dt]
    per = 8 // width
    b = np.frombuffer(raw, np.uint8)
    shifts = (np.arange(per, dtype=np.uint8) * width).astype(np.uint8)
    return ((b[:, None] >> shifts) & np.uint8((1 << width) - 1)).reshape(-1)[:count].copy()


def _bit_patterns(array: np.ndarray, dt: DataType) -> np.ndarray:
    """The bit patterns (uint8, one a byte) of values for a float8/float4/int4/int2 type: a
    uint8 array is taken as the patterns; integers keep their low bits; other values are
    converted by ml_dtypes (round to nearest even), which must be installed for them."""
    if array.dtype == np.uint8:
        return array
    if dt in _SMALL_INTS and array.dtype.kind in "iub":
        return (array.astype(np.int64) & ((1 << _SUB_BYTE[dt]) - 1)).astype(np.uint8)
    ml = _ml_dtype(dt)
    if ml is None:
        raise TypeError(f"values of {dt.name} from numpy {array.dtype} need ml_dtypes; "
                        "give the bit patterns as a uint8 array instead")
    return array.astype(ml).view(np.uint8)

# The data types GE's constructor takes from a list or a file (EsCreateEsCTensor's).
_GE_INT_TYPES = (DataType.DT_INT8, DataType.DT_INT16, DataType.DT_INT32, DataType.DT_INT64,
                 DataType.DT_UINT8, DataType.DT_UINT16, DataType.DT_UINT32, DataType.DT_UINT64)
GE_CONSTRUCTOR_TYPES = _GE_INT_TYPES + (DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_BOOL)

TensorValue = Union[int, float, bool, complex, List[Any]]


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
    """The GE data type of a numpy array's dtype (str, bytes and object arrays: DT_STRING)."""
    if array.dtype.kind in "USO":
        return DataType.DT_STRING
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


def _e4m3fn_table() -> np.ndarray:
    """The float32 value of each float8_e4m3fn bit pattern (bias 7, no infinities, S.1111.111 NaN)."""
    bits = np.arange(256, dtype=np.uint32)
    exp, man = (bits >> 3) & 0xF, (bits & 7).astype(np.float32)
    mag = np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp.astype(np.float32) - 7))
    mag = np.where((exp == 0xF) & (man == 7), np.nan, mag)
    return np.where(bits & 0x80, -mag, mag).astype(np.float32)


def _values(array: np.ndarray, dt: DataType) -> np.ndarray:
    """An array whose ``tolist()`` gives a tensor's values as Python numbers: float32 values as
    the shortest decimal that reads back as the same float32 (2.1, not 2.0999999046325684),
    the 16-bit and 8-bit float types exactly."""
    if dt == DataType.DT_FLOAT:
        return array.astype(str).astype(np.float64)
    if dt == DataType.DT_BF16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    if dt == DataType.DT_FLOAT8_E5M2:
        return (array.astype(np.uint16) << 8).view(np.float16)
    if dt == DataType.DT_FLOAT8_E4M3FN:
        return _e4m3fn_table()[array]
    if dt in _SMALL_INTS:  # two's complement in the low bits for the signed ones
        v, width = array.astype(np.int64), _SUB_BYTE[dt]
        signed = dt in (DataType.DT_INT4, DataType.DT_INT2)
        return np.where(v >= 1 << (width - 1), v - (1 << width), v) if signed else v
    if dt in _ML_NAME:  # the other low-precision types: decoded by ml_dtypes
        ml = _ml_dtype(dt)
        if ml is None:
            raise TypeError(f"values of {dt.name} need ml_dtypes")
        return array.view(ml).astype(np.float64)
    return array


def _text(v: Any) -> str:
    """One element of a string tensor: str as is, bytes as UTF-8; anything else is refused."""
    if isinstance(v, (str, np.str_)):
        return str(v)
    if isinstance(v, (bytes, np.bytes_)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"a DT_STRING element must be UTF-8 text, got {v!r}") from None
    raise TypeError(f"a DT_STRING element must be str or bytes, got {type(v).__name__}")


def _is_text(v: Any) -> bool:
    return isinstance(v, (str, bytes, np.str_, np.bytes_))


def _native_strings(array: np.ndarray, format: Format = Format.FORMAT_ND) -> TensorData:
    """A DT_STRING native tensor (GE's layout) from an array of str or bytes (object arrays of
    them too); numbers are refused (Cast converts them in a graph)."""
    if array.dtype.kind not in "USO":
        raise TypeError(f"DT_STRING has no numpy equivalent of {array.dtype}: a string tensor takes str "
                        "or bytes data")
    return TensorData.from_strings([_text(v) for v in array.ravel().tolist()], list(array.shape), int(format))


def _native_from_array(value: Any, data_type: Optional[DataType] = None) -> TensorData:
    """A native tensor from anything numpy can turn into an array (the builder's constants)."""
    if isinstance(value, Tensor):
        return value._tensor
    if isinstance(value, (str, bytes)) and data_type is None:
        raise TypeError(f"a bare {type(value).__name__} is not a tensor (wrap it in a numpy array)")
    array = np.asarray(value)
    if array.dtype.kind in "USO" or (data_type is not None and DataType(data_type) == DataType.DT_STRING):
        if data_type is not None and DataType(data_type) != DataType.DT_STRING:
            raise TypeError(f"string data cannot make a tensor of {DataType(data_type).name}")
        return _native_strings(array)
    if array.dtype.name in _BITS_TYPES:  # an ml_dtypes array (bfloat16, float8): its raw bits
        dt, bits = _BITS_TYPES[array.dtype.name]
        if data_type is None or DataType(data_type) == dt:
            return _native(np.ascontiguousarray(array).view(bits), dt, list(array.shape), Format.FORMAT_ND)
        array = array.astype(np.float32)
    if data_type is None:
        if array.dtype == np.dtype(np.float64) and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)
        dt = data_type_of(array)
    else:
        dt = DataType(data_type)
        if dt == DataType.DT_BF16 and array.dtype != np.uint16:
            array = _bf16_bits(array)  # values; a uint16 array is taken as raw bf16 bits
        elif dt in _BITS_OF and dt != DataType.DT_BF16:
            array = _bit_patterns(array, dt)  # values, or a uint8 array of bit patterns
        else:
            array = array.astype(numpy_dtype(dt))
    return _native(array, dt, list(array.shape), Format.FORMAT_ND)


# From this many bytes on, a tensor's bytes are read from the array's memory in one copy
# (TensorData.from_array) rather than through ``tobytes`` (two copies, but less overhead for
# small arrays: the crossover measured by benches/python/bench_io.py's Tensor(x) column).
_READ_IN_PLACE_FROM = 32 << 10


def _native(array: np.ndarray, dt: DataType, dims: List[int], format: Format) -> TensorData:
    if dt in _SUB_BYTE:
        return TensorData(_pack(array, dt), int(dt), dims, int(format))
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    if little.nbytes < _READ_IN_PLACE_FROM:  # small: bytes are cheaper than the array interface
        return TensorData(little.tobytes(order="C"), int(dt), dims, int(format))
    return TensorData.from_array(np.ascontiguousarray(little), int(dt), dims, int(format))  # one copy


def _size(dims: Sequence[int]) -> int:
    size = 1
    for d in dims:
        size *= d
    return size


def _ge_data_type(data_type: Any) -> DataType:
    """A constructor's data type; GE's RuntimeError for a value that is not one."""
    try:
        if isinstance(data_type, bool):
            raise TypeError
        return DataType(data_type)
    except (ValueError, TypeError):
        raise RuntimeError(f"Failed to create Tensor with data type: {data_type}") from None


def _list_array(values: List[Any], dt: DataType) -> np.ndarray:
    """GE's conversion of flat list data: all-bool data is taken as bools, ints for the integer
    types, floats for DT_FLOAT and DT_FLOAT16; other types are GE's RuntimeError."""
    all_bool = all(isinstance(v, (bool, np.bool_)) for v in values)
    if all_bool and dt not in GE_CONSTRUCTOR_TYPES:
        raise RuntimeError(f"Failed to create Tensor with data type: {int(dt)}")
    if all_bool and dt == DataType.DT_BOOL:
        return np.array(values, dtype=np.bool_)
    if dt in _GE_INT_TYPES:
        ints = [int(v) for v in values]
        info = np.iinfo(_DT_TO_NP[dt])
        for v in ints:
            if not info.min <= v <= info.max:
                raise ValueError(f"Value {v} is out of range for {dt.name}")
        return np.array(ints, dtype=_DT_TO_NP[dt])
    if dt in (DataType.DT_FLOAT, DataType.DT_FLOAT16):
        with np.errstate(over="ignore"):  # beyond the type's range: inf, as C's conversion
            # float16 through float32, as GE rounds it.
            return np.array([float(v) for v in values], dtype=np.float64).astype(np.float32).astype(_DT_TO_NP[dt])
    if dt == DataType.DT_DOUBLE:
        raise RuntimeError("DT_DOUBLE is not supported in python Tensor constructor")
    raise RuntimeError(f"Failed to create Tensor with data type: {int(dt)}")


def _check_count(count: int, dims: List[int], given: Optional[Sequence[int]], what: str) -> None:
    want = _size(dims)
    if count != want:
        scalar = " (shape None is a scalar)" if given is None else ""
        raise ValueError(f"{what} has {count} elements, shape {dims}{scalar} needs {want}")


def _known(dims: List[int]) -> List[int]:
    if any(d < 0 for d in dims):
        raise ValueError(f"a tensor needs a known shape, got {dims}")
    return dims


class Tensor:
    """A tensor: a description (data type, format, shape), its data, and a placement.

    >>> Tensor([1, 2, 3, 4, 5, 6], None, DataType.DT_INT8, Format.FORMAT_ND, [2, 3]).get_data()
    [[1, 2, 3], [4, 5, 6]]
    >>> Tensor(np.ones((2, 3), np.float32)).numpy().shape
    (2, 3)
    """

    __slots__ = ("_tensor", "_placement", "_no_data")

    def __init__(self, data: Any = None, file_path: Optional[Union[str, os.PathLike]] = None,
                 data_type: Optional[DataType] = None, format: Format = Format.FORMAT_ND,
                 shape: Optional[Sequence[int]] = None,
                 placement: Placement = Placement.PLACEMENT_HOST) -> None:
        """``data_type`` None is GE's default, DT_FLOAT, except for a numpy array, which keeps
        its own dtype."""
        if shape is not None:
            shape = _dims(shape, "Shape")
        if not isinstance(placement, Placement):
            raise TypeError("Placement must be a Placement")
        if data is not None and file_path is not None:
            raise RuntimeError("Tensor should be created either by data or by file")
        try:
            fmt = Format(format)
        except (ValueError, TypeError):
            raise TypeError("Format must be a Format") from None
        if data is not None:
            self._tensor = _from_data(data, data_type, fmt, shape)
        elif file_path is not None:
            self._tensor = _from_file(file_path, data_type, fmt, shape)
        else:
            dt = DataType.DT_FLOAT if data_type is None else _ge_data_type(data_type)
            dims = _known(list(shape)) if shape is not None else [0]
            if dt == DataType.DT_STRING:  # empty strings
                self._tensor = _native_strings(np.full(dims, "", dtype=object), fmt)
            else:
                self._tensor = _native(np.zeros(dims, numpy_dtype(dt)), dt, dims, fmt)
        # GE's ``Tensor()``: a description of shape [] and no data (held here as zero elements).
        self._no_data = data is None and file_path is None and shape is None
        self._placement = Placement.PLACEMENT_HOST
        if placement == Placement.PLACEMENT_DEVICE:
            self.to_device()

    @classmethod
    def _wrap(cls, native: TensorData) -> "Tensor":
        obj = cls.__new__(cls)
        obj._tensor = native
        obj._placement = Placement.PLACEMENT_HOST
        obj._no_data = False
        return obj

    # GE's properties.

    data: TensorValue = from_getter("get_data")
    data_type: DataType = from_getter("get_data_type")
    format: Format = from_getter("get_format")
    shape: Shape = from_getter("get_shape")
    placement: Placement = read_only("_placement")

    # GE's accessors.

    def get_data(self) -> TensorValue:
        """The values as nested lists shaped like the tensor; a bare number for a scalar."""
        if self._no_data:
            raise ValueError("Scalar tensor should contain exactly one element, got 0")
        dt = DataType(self._tensor.dtype)
        try:
            array = self.numpy()
        except TypeError:
            raise RuntimeError(f"Failed to get Tensor data: not supported: values of {dt.name}") from None
        return _values(array, dt).tolist()

    def get_data_type(self) -> DataType:
        return DataType(self._tensor.dtype)

    def set_data_type(self, data_type: DataType) -> "Tensor":
        """Relabels the data as GE does (the bytes stay); the element size must not change (use
        ``numpy().astype(...)`` to convert values)."""
        if not isinstance(data_type, DataType):
            raise TypeError("Data_type must be a DataType")
        self._relabel(data_type, Format(self._tensor.format), f"Failed to set datatype {int(data_type)}")
        return self

    def get_format(self) -> Format:
        return Format(self._tensor.format)

    def set_format(self, format: Format) -> "Tensor":
        if not isinstance(format, Format):
            raise TypeError("Format must be a Format")
        self._relabel(DataType(self._tensor.dtype), format, f"Failed to set format {int(format)}")
        return self

    def get_shape(self) -> Shape:
        return Shape([] if self._no_data else self._tensor.shape)

    def get_placement(self) -> Placement:
        return self._placement

    def get_tensor_desc(self) -> TensorDesc:
        desc = TensorDesc(self.get_shape(), self.get_format(), self.get_data_type())
        return desc.set_placement(self._placement)

    def to_device(self) -> "Tensor":
        """Marks a host tensor as device-placed. Its bytes stay in host memory: the CPU backend's
        device memory is host memory, and a session copies inputs to an NPU when it runs."""
        if self._placement != Placement.PLACEMENT_HOST:
            raise ValueError("to_device() only supports host tensors")
        self._placement = Placement.PLACEMENT_DEVICE
        return self

    def to_host(self) -> "Tensor":
        """Marks a device-placed tensor as host-placed (its bytes are already in host memory)."""
        if self._placement != Placement.PLACEMENT_DEVICE:
            raise ValueError("to_host() only supports device tensors")
        self._placement = Placement.PLACEMENT_HOST
        return self

    def _relabel(self, dt: DataType, fmt: Format, failure: str) -> None:
        t = self._tensor
        try:
            self._tensor = t.with_desc(int(dt), list(t.shape), int(fmt))
        except Exception as e:  # noqa: BLE001 - the native error, under GE's message
            raise RuntimeError(f"{failure}: {e}") from None

    # Beyond GE.

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (bf16 and the float8, float4, int4 and int2 types come back
        as their raw bits, uint16 and uint8, one element a byte; ``.view()`` them as ml_dtypes'
        types where it is installed; DT_STRING as an object array of str, as ONNX and onnxruntime
        give strings).

        A session run's numeric result gives a read-only view of the result's own memory, no
        copy (it stays valid after the tensor is dropped; nothing else writes it;
        ``np.array(t.numpy())`` or ``.copy()`` for a writable array); any other tensor gives a
        writable array of its own (the bytes copied once)."""
        if self._tensor.viewable:
            return np.asarray(self._tensor)
        if DataType(self._tensor.dtype) == DataType.DT_STRING:
            values = self._tensor.strings()
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out.reshape(self._tensor.shape)
        dt = numpy_dtype(DataType(self._tensor.dtype))
        if DataType(self._tensor.dtype) in _SUB_BYTE:  # one bit pattern a byte
            shape = self._tensor.shape
            return _unpack(self._tensor.data, DataType(self._tensor.dtype), _size(shape)).reshape(shape)
        arr = np.frombuffer(self._tensor.to_bytearray(), dtype=dt.newbyteorder("<")).reshape(self._tensor.shape)
        return arr if arr.dtype == dt else arr.astype(dt)

    def __copy__(self) -> NoReturn:
        raise RuntimeError("Tensor does not support copy")

    def __deepcopy__(self, memodict: Any) -> NoReturn:
        raise RuntimeError("Tensor does not support deepcopy")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        a, b = self._tensor, other._tensor
        return (self._no_data, a.dtype, a.shape, a.format, a.data) == (other._no_data, b.dtype, b.shape, b.format, b.data)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"""
        Tensor format is {int(self.get_format())},
        data_type is {int(self.get_data_type())},
        shape is {self.get_shape()},
        data is {self.get_data()}
        """

    def __repr__(self) -> str:
        return f"Tensor({self.get_data_type().name}{list(self.get_shape())})"


def _from_data(data: Any, data_type: Optional[DataType], fmt: Format,
               shape: Optional[List[int]]) -> TensorData:
    if isinstance(data, (np.ndarray, np.generic)):  # beyond GE: the array's own dtype and shape
        t = _native_from_array(data, None if data_type is None else _ge_data_type(data_type))
        dims = list(t.shape)
        if shape is not None:
            if _size(shape) != _size(dims):
                raise ValueError(f"data of shape {dims} cannot take shape {shape}")
            dims = _known(shape)
        return t.with_desc(t.dtype, dims, int(fmt))  # the same bytes, not copied
    if not isinstance(data, list):
        raise TypeError("data should be List")
    dt = DataType.DT_FLOAT if data_type is None else _ge_data_type(data_type)
    text = np.array(data, dtype=object) if dt == DataType.DT_STRING else None
    if text is not None and text.size and all(_is_text(v) for v in text.ravel()):
        # Beyond GE: a (nested) list of str, its nesting the shape (other data: GE's error below).
        array = text
        if shape is not None:
            _check_count(array.size, _known(shape), shape, "data")
            array = array.reshape(shape)
        return _native_strings(array, fmt)
    if any(isinstance(v, (list, tuple, np.ndarray)) for v in data):
        # Beyond GE: nested lists, whose nesting is their shape.
        nested = np.array(data, dtype=object)
        values, dims = nested.ravel().tolist(), list(nested.shape)
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            raise ValueError("nested list data must be rectangular")
        if shape is not None:
            dims = _known(shape)
            _check_count(len(values), dims, shape, "data")
    else:
        values, dims = data, _known(list(shape)) if shape is not None else []
        _check_count(len(values), dims, shape, "data")
    return _native(_list_array(values, dt).reshape(dims), dt, dims, fmt)


def _from_file(file_path: Any, data_type: Optional[DataType], fmt: Format,
               shape: Optional[List[int]]) -> TensorData:
    """GE's raw binary file: the elements of the data type, little-endian, at least as many as
    the shape holds (extra bytes are ignored, as GE does)."""
    if not isinstance(file_path, (str, os.PathLike)):
        raise TypeError("file_path must be a string")
    dt = DataType.DT_FLOAT if data_type is None else _ge_data_type(data_type)
    if dt not in GE_CONSTRUCTOR_TYPES:
        raise RuntimeError(f"Failed to create Tensor from file: not supported: data type {dt.name}")
    dims = _known(list(shape) if shape is not None else [])
    try:
        with open(file_path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise RuntimeError(f"Failed to create Tensor: cannot read '{os.fspath(file_path)}': {e.strerror}") from None
    item = numpy_dtype(dt).itemsize
    need = _size(dims) * item
    if not raw:
        raise RuntimeError(f"Failed to create Tensor: file '{os.fspath(file_path)}' is empty")
    if len(raw) < need:
        raise RuntimeError(f"Failed to create Tensor: file '{os.fspath(file_path)}' has {len(raw)} bytes, "
                           f"shape {dims} of {dt.name} needs {need}")
    raw = raw[:need]
    if dt == DataType.DT_BOOL:  # any nonzero byte is true, as C++'s bool reads it
        raw = (np.frombuffer(raw, np.uint8) != 0).tobytes()
    return TensorData(raw, int(dt), dims, int(fmt))


def _parse_str_list(list_str: str) -> List[Union[int, float]]:
    """The numbers of a list written as text (``"[1, 2.5, -3]"``), as GE's engine prints tensor
    data: ints where an item is an integer, floats otherwise; GE's ``ValueError`` for text that is
    not in brackets or an item that is not a number."""
    text = list_str.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("Input must start with '[' and end with ']'")
    body = text[1:-1].strip()
    if not body:
        return []
    out: List[Union[int, float]] = []
    for item in (part.strip() for part in body.split(",")):
        digits = item[1:] if item.startswith("-") else item
        if digits.isdigit():
            out.append(int(item))
            continue
        try:
            out.append(float(item))
        except ValueError:
            raise ValueError(f"Invalid item: '{item}'") from None
    return out


def unflatten_tensor_data(tensor_data: str, shape: List[int]) -> Any:
    """GE's helper of ``Tensor.get_data``: the values of ``tensor_data`` (a flat list as text,
    ``"[1.0, 2.0]"``) arranged as nested lists of ``shape``; for the scalar shape ``[]`` the one
    value itself. ``ValueError`` when the count does not fit the shape."""
    from ge.es.tensor_like import _unflatten

    values = _parse_str_list(tensor_data)
    if len(shape) == 0:
        if len(values) != 1:
            raise ValueError(f"Scalar tensor should contain exactly one element, got {len(values)}")
        return values[0]
    return _unflatten(values, list(shape))
