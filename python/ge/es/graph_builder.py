"""``GraphBuilder``: eager-style graph construction (GE's ``ge.es.graph_builder``)."""

from __future__ import annotations

import contextlib
from enum import Enum
from typing import Any, Dict, Iterator, List, Optional, Union

import numpy as np

from ge._native import GraphBuilderBase, TensorHolder, _pop_attr_scope, _pop_control_scope
from ge._native import _push_attr_scope, _push_control_scope
from ge.graph import Graph
from ge.graph.tensor import Tensor, _native_from_array
from ge.graph.types import DataType, Format

__all__ = ["GraphBuilder", "InputType", "attr_scope", "control_dependency_scope"]


class InputType(Enum):
    """Op type of a graph input node."""

    DATA = "Data"
    REF_DATA = "RefData"
    AIPP_DATA = "AippData"
    ANY_DATA = "AnyData"


def _check_int(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer")


def _values_and_dims(value: Any, shape: Optional[List[int]], kind: type, what: str) -> tuple:
    """``what``: GE's wording of the accepted values ("an integer or list of integers")."""
    ok = (int,) if kind is int else (int, float)
    if isinstance(value, ok) and not isinstance(value, bool):
        values = [value]
        dims = [] if shape is None else list(shape)
    elif isinstance(value, list):
        if not all(isinstance(v, ok) and not isinstance(v, bool) for v in value):
            raise TypeError(f"Value must be {what}")
        values = value
        dims = list(shape) if shape is not None else [len(value)]
    else:
        raise TypeError(f"Value must be {what}")
    if shape is not None and (not isinstance(shape, list) or not all(isinstance(d, int) for d in shape)):
        raise TypeError("Shape must be a list of integers")
    count = 1
    for d in dims:
        count *= d
    if count != len(values):
        raise ValueError(f"Value count ({len(values)}) doesn't match shape {dims} (expected {count} elements)")
    return values, dims


_RANGES = {
    DataType.DT_INT64: (-(2**63), 2**63 - 1),
    DataType.DT_INT32: (-(2**31), 2**31 - 1),
    DataType.DT_UINT64: (0, 2**64 - 1),
    DataType.DT_UINT32: (0, 2**32 - 1),
}


class GraphBuilder(GraphBuilderBase):
    """Builds one graph, op call by op call; every call is validated where it is made.

    Tensors keep their builder alive. After ``build_and_reset`` the builder and its tensors
    cannot be used (RuntimeError); mixing tensors of two builders is a ValueError.

    >>> b = GraphBuilder("g")
    >>> x, y = b.create_inputs(2)
    >>> graph = b.build_and_reset([x + y])
    """

    def __init__(self, name: Optional[str] = None) -> None:  # noqa: D107 (set up in __new__)
        pass

    # Inputs --------------------------------------------------------------------------------

    def create_input(self, index: int, *, name: Optional[str] = None,
                     type_str: InputType = InputType.DATA, data_type: DataType = DataType.DT_FLOAT,
                     format: Format = Format.FORMAT_ND, shape: Optional[List[int]] = None) -> TensorHolder:
        """A graph input with index ``index`` (name ``input_<index>`` by default); shape None is a scalar."""
        _check_int(index, "Input index")
        if shape is not None and (not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in shape)):
            raise TypeError("Shape must be a list of integers")
        if not isinstance(type_str, InputType):
            raise TypeError("type_str must be an InputType")
        if name is not None and not isinstance(name, str):
            raise TypeError("Input name must be a string")
        return self._create_input(index, name, type_str.value, data_type, format, shape)

    def create_inputs(self, num: int, start_index: int = 0) -> List[TensorHolder]:
        """``num`` float inputs with indexes ``start_index`` .. ``start_index + num - 1``."""
        if isinstance(num, bool) or not isinstance(num, int) or num <= 0:
            raise TypeError("Number of inputs must be a positive integer")
        if isinstance(start_index, bool) or not isinstance(start_index, int) or start_index < 0:
            raise TypeError("Start index must be a non-negative integer")
        return [self.create_input(i) for i in range(start_index, start_index + num)]

    # Constants -----------------------------------------------------------------------------

    def _const(self, values: List[Any], dims: List[int], dt: DataType) -> TensorHolder:
        if dt in _RANGES:
            lo, hi = _RANGES[dt]
            for v in values:
                if not lo <= v <= hi:
                    raise ValueError(f"Value {v} is out of range for {dt.name}")
        return self._create_const(_native_from_array(np.array(values).reshape(dims), dt))

    def _int_const(self, value: Any, shape: Optional[List[int]], dt: DataType) -> TensorHolder:
        """``create_const_<int type>``: an integer or a list of them, range-checked for ``dt``."""
        values, dims = _values_and_dims(value, shape, int, "an integer or list of integers")
        return self._const(values, dims, dt)

    def create_const_int64(self, value: Union[int, List[int]], shape: Optional[List[int]] = None) -> TensorHolder:
        return self._int_const(value, shape, DataType.DT_INT64)

    def create_const_int32(self, value: Union[int, List[int]], shape: Optional[List[int]] = None) -> TensorHolder:
        return self._int_const(value, shape, DataType.DT_INT32)

    def create_const_uint64(self, value: Union[int, List[int]], shape: Optional[List[int]] = None) -> TensorHolder:
        return self._int_const(value, shape, DataType.DT_UINT64)

    def create_const_uint32(self, value: Union[int, List[int]], shape: Optional[List[int]] = None) -> TensorHolder:
        return self._int_const(value, shape, DataType.DT_UINT32)

    def create_const_float(self, value: Union[float, List[float]], shape: Optional[List[int]] = None) -> TensorHolder:
        values, dims = _values_and_dims(value, shape, float, "a float or list of floats")
        return self._const([float(v) for v in values], dims, DataType.DT_FLOAT)

    def create_const(self, value: Any, data_type: Optional[DataType] = None) -> TensorHolder:
        """A constant from a numpy array, a ``ge.graph.Tensor`` or nested lists (beyond GE)."""
        return self._create_const(_native_from_array(value, data_type))

    def create_scalar_int64(self, value: int) -> TensorHolder:
        _check_int(value, "Value")
        return self._const([value], [], DataType.DT_INT64)

    def create_scalar_int32(self, value: int) -> TensorHolder:
        _check_int(value, "Value")
        return self._const([value], [], DataType.DT_INT32)

    def create_scalar_uint64(self, value: int) -> TensorHolder:
        _check_int(value, "Value")
        if value < 0:
            raise ValueError("Value must be non-negative for uint64")
        return self._const([value], [], DataType.DT_UINT64)

    def create_scalar_uint32(self, value: int) -> TensorHolder:
        _check_int(value, "Value")
        if not 0 <= value <= 2**32 - 1:
            raise ValueError("Value must be in range [0, 2^32-1] for uint32")
        return self._const([value], [], DataType.DT_UINT32)

    def create_scalar_float(self, value: float) -> TensorHolder:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("Value must be a float")
        return self._const([float(value)], [], DataType.DT_FLOAT)

    def create_vector_int64(self, value: List[int]) -> TensorHolder:
        if not isinstance(value, list):
            raise TypeError("Value must be a list of integers")
        return self.create_const_int64(value, [len(value)])

    def create_variable(self, index: int, name: str) -> TensorHolder:
        _check_int(index, "Index")
        if not isinstance(name, str):
            raise TypeError("Name must be a string")
        return self._create_variable(index, name)

    # Attributes ----------------------------------------------------------------------------

    def set_graph_attr_int64(self, attr_name: str, value: int) -> None:
        self._set_typed_attr(None, attr_name, value, "Int")

    def set_graph_attr_string(self, attr_name: str, value: str) -> None:
        self._set_typed_attr(None, attr_name, value, "String")

    def set_graph_attr_bool(self, attr_name: str, value: bool) -> None:
        self._set_typed_attr(None, attr_name, value, "Bool")

    def set_tensor_attr_int64(self, tensor: TensorHolder, attr_name: str, value: int) -> None:
        self._set_typed_attr(self._set_tensor_attr, attr_name, value, "Int", tensor)

    def set_tensor_attr_string(self, tensor: TensorHolder, attr_name: str, value: str) -> None:
        self._set_typed_attr(self._set_tensor_attr, attr_name, value, "String", tensor)

    def set_tensor_attr_bool(self, tensor: TensorHolder, attr_name: str, value: bool) -> None:
        self._set_typed_attr(self._set_tensor_attr, attr_name, value, "Bool", tensor)

    def set_node_attr_int64(self, tensor: TensorHolder, attr_name: str, value: int) -> None:
        self._set_typed_attr(self._set_node_attr, attr_name, value, "Int", tensor)

    def set_node_attr_string(self, tensor: TensorHolder, attr_name: str, value: str) -> None:
        self._set_typed_attr(self._set_node_attr, attr_name, value, "String", tensor)

    def set_node_attr_bool(self, tensor: TensorHolder, attr_name: str, value: bool) -> None:
        self._set_typed_attr(self._set_node_attr, attr_name, value, "Bool", tensor)

    def _set_typed_attr(self, setter: Any, attr_name: Any, value: Any, ty: str, tensor: Any = None) -> None:
        """GE's typed setters: checks the tensor (for ``setter`` ``_set_tensor_attr`` or
        ``_set_node_attr``; None sets a graph attribute), the name, then the value against ``ty``."""
        if setter is not None:
            _check_tensor(tensor)
        _check_name(attr_name)
        _VALUE_CHECKS[ty](value)
        if setter is None:
            self._set_graph_attr(attr_name, value, ty)
        else:
            setter(tensor, attr_name, value, ty)

    def set_attr(self, name: str, value: Any, tensor: Optional[TensorHolder] = None) -> None:
        """Pythonic form: a graph attribute, or (with ``tensor``) an attribute of its producer
        node; the attribute type follows the value (int, float, str, bool, DataType, lists)."""
        _check_name(name)
        if tensor is None:
            self._set_graph_attr(name, value)
        else:
            _check_tensor(tensor)
            self._set_node_attr(tensor, name, value)

    # Building ------------------------------------------------------------------------------

    def build_and_reset(self, outputs: Optional[List[TensorHolder]] = None) -> Graph:
        """Finishes the graph (outputs, when given, become outputs 0..n-1). The builder and its
        tensors cannot be used afterwards."""
        if outputs is not None:
            if not isinstance(outputs, list):
                raise TypeError("Outputs must be a list")
            if not all(isinstance(t, TensorHolder) for t in outputs):
                raise TypeError("All outputs must be TensorHolder objects")
            for i, t in enumerate(outputs):
                self.set_graph_output(t, i)
        return self._build_and_reset()

    def __repr__(self) -> str:
        return f"GraphBuilder('{self.name}'{', built' if self._is_built else ''})"


def _check_name(name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError("Attribute name must be a string")


def _check_str(value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError("Value must be a string")


def _check_bool(value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError("Value must be a boolean")


def _check_tensor(tensor: Any) -> None:
    if not isinstance(tensor, TensorHolder):
        raise TypeError("Tensor must be a TensorHolder")


# The value check of each attribute type the typed setters take.
_VALUE_CHECKS = {"Int": lambda value: _check_int(value, "Value"), "String": _check_str, "Bool": _check_bool}


@contextlib.contextmanager
def attr_scope(attr_maps: Dict[str, Any]) -> Iterator[None]:
    """Every node created inside gets these (private) attributes; scopes nest, per thread."""
    if not isinstance(attr_maps, dict):
        raise TypeError("attr_scope takes a dict of attribute names to values")
    _push_attr_scope(attr_maps)
    try:
        yield
    finally:
        _pop_attr_scope()


@contextlib.contextmanager
def control_dependency_scope(tensors: List[TensorHolder]) -> Iterator[None]:
    """Every node created inside runs after the producers of ``tensors``; scopes nest, per thread."""
    if not isinstance(tensors, list):
        raise TypeError("control_dependency_scope takes a list of TensorHolder")
    _push_control_scope(tensors)
    try:
        yield
    finally:
        _pop_control_scope()


_ = Tensor  # re-exported for users of this module
