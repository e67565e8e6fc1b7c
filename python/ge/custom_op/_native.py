"""The execution contexts a custom operator's callbacks receive (GE's native module
``ge.custom_op._native``; here Python over numpy host buffers).

Every object a context hands out (tensors, attributes) expires when the callback ends.
Contexts are made by the CPU backend's HOST kernel, never by user code.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ge._internal.accessors import read_only
from ge.graph.tensor import _DT_TO_NP, _NP_TO_DT
from ge.graph.types import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor

from ._ir_types import AttrType, InputType

__all__ = ["AnnotatedArgsContext", "AnnotatedKernelArgs", "AnnotatedKernelLaunchInfo",
           "EagerOpExecutionContext", "WorkspaceAddr"]


class _NotConstructible:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"{type(self).__name__} cannot be constructed directly: the backend "
                        f"hands it to the callback")

    @classmethod
    def _new(cls) -> Any:
        return cls.__new__(cls)


class _Validity:
    """The shared marker of one callback's views."""

    def __init__(self) -> None:
        self.valid = True

    def __call__(self) -> bool:
        return self.valid


def _wrap_array(array: np.ndarray, alive: _Validity) -> Tensor:
    dt = _NP_TO_DT.get(array.dtype)
    if dt is None:
        raise RuntimeError(f"not supported: a custom operator tensor of numpy dtype {array.dtype}")
    return Tensor._wrap(array, dt, alive)


class RuntimeAttrs(_NotConstructible):
    """The attributes of the running node, read by IR index and type."""

    @classmethod
    def _make(cls, attrs: Sequence[Tuple[str, str, Any]], alive: _Validity) -> "RuntimeAttrs":
        a = cls._new()
        a._attrs, a._alive = list(attrs), alive
        return a

    def _get(self, index: int, vt: str) -> Any:
        if not self._alive():
            raise RuntimeError("the execution context has ended: handle has expired")
        if type(index) is not int or not 0 <= index < len(self._attrs):
            raise RuntimeError(f"attr index {index!r} out of range ({len(self._attrs)} attrs)")
        name, actual, value = self._attrs[index]
        if actual != vt:
            raise RuntimeError(f"attr {index} ('{name}') is {actual}, not {vt}")
        return value

    def get_int(self, index: int) -> int:
        return int(self._get(index, AttrType.INT))

    def get_float(self, index: int) -> float:
        return float(self._get(index, AttrType.FLOAT))

    def get_bool(self, index: int) -> bool:
        return bool(self._get(index, AttrType.BOOL))

    def get_str(self, index: int) -> str:
        return str(self._get(index, AttrType.STRING))

    def get_data_type(self, index: int) -> DataType:
        return DataType(self._get(index, AttrType.DATA_TYPE))

    def get_tensor(self, index: int) -> Tensor:
        return _wrap_array(np.ascontiguousarray(self._get(index, AttrType.TENSOR)), self._alive)

    def get_list_int(self, index: int) -> List[int]:
        return [int(v) for v in self._get(index, AttrType.LIST_INT)]

    def get_list_float(self, index: int) -> List[float]:
        return [float(v) for v in self._get(index, AttrType.LIST_FLOAT)]

    def get_list_bool(self, index: int) -> List[bool]:
        return [bool(v) for v in self._get(index, AttrType.LIST_BOOL)]

    def get_list_str(self, index: int) -> List[str]:
        return [str(v) for v in self._get(index, AttrType.LIST_STRING)]

    def get_list_data_type(self, index: int) -> List[DataType]:
        return [DataType(v) for v in self._get(index, AttrType.LIST_DATA_TYPE)]

    def get_list_list_int(self, index: int) -> List[List[int]]:
        return [[int(v) for v in row] for row in self._get(index, AttrType.LIST_LIST_INT)]

    def get_attr_num(self) -> int:
        return len(self._attrs)


class _NodeView(_NotConstructible):
    """Inputs (grouped by IR input) and attributes of the running node."""

    def _init_view(self, op_type: str, arrays: Sequence[Optional[np.ndarray]],
                   groups: Sequence[Tuple[int, List[int]]],
                   attrs: Sequence[Tuple[str, str, Any]]) -> None:
        self._op_type = op_type
        self._alive = _Validity()
        self._inputs = [None if a is None else _wrap_array(np.ascontiguousarray(a), self._alive)
                        for a in arrays]
        self._groups = list(groups)  # per IR input: (kind, flat indices)
        self._runtime_attrs = RuntimeAttrs._make(attrs, self._alive)
        self._buffers: List[np.ndarray] = []

    def _live(self) -> None:
        if not self._alive():
            raise RuntimeError(f"the execution context of {self._op_type} has ended: "
                               f"handle has expired")

    def _group(self, ir_index: int) -> Tuple[int, List[int]]:
        self._live()
        if type(ir_index) is not int or not 0 <= ir_index < len(self._groups):
            raise RuntimeError(f"{self._op_type} has no IR input {ir_index!r}")
        return self._groups[ir_index]

    def _flat(self, index: int) -> Optional[Tensor]:
        self._live()
        if type(index) is not int or not 0 <= index < len(self._inputs):
            raise RuntimeError(f"{self._op_type} has no input {index!r} "
                               f"({len(self._inputs)} inputs)")
        return self._inputs[index]

    def _required(self, ir_index: int) -> Tensor:
        _, flat = self._group(ir_index)
        t = self._flat(flat[0]) if flat else None
        if t is None:
            raise RuntimeError(f"input {ir_index} of {self._op_type} is not available")
        return t

    def _optional(self, ir_index: int) -> Optional[Tensor]:
        _, flat = self._group(ir_index)
        return self._flat(flat[0]) if flat else None

    def _dynamic_num(self, ir_index: int) -> int:
        kind, flat = self._group(ir_index)
        return len(flat) if kind == InputType.DYNAMIC else 0

    def _dynamic(self, ir_index: int, relative_index: int) -> Tensor:
        kind, flat = self._group(ir_index)
        if kind != InputType.DYNAMIC or not 0 <= relative_index < len(flat):
            raise RuntimeError(f"dynamic input {ir_index} of {self._op_type} has no instance "
                               f"{relative_index!r}")
        t = self._flat(flat[relative_index])
        assert t is not None
        return t

    def _workspace(self, size: int) -> int:
        self._live()
        if type(size) is not int or size < 0:
            raise RuntimeError(f"a workspace size must be a non-negative int, got {size!r}")
        buf = np.zeros(max(size, 1), dtype=np.uint8)
        self._buffers.append(buf)
        return int(buf.ctypes.data)

    def _invalidate(self) -> None:
        self._alive.valid = False


def _storage_dims(shape: Any) -> Tuple[List[int], List[int]]:
    if isinstance(shape, StorageShape):
        return shape.origin_shape.dims, shape.storage_shape.dims
    if isinstance(shape, list) and all(type(d) is int for d in shape):
        return list(shape), list(shape)
    raise RuntimeError("an output shape must be a StorageShape (or a list of ints)")


class EagerOpExecutionContext(_NodeView):
    """The context of ``execute``: inputs, attributes, output and workspace allocation.

    On the CPU backend tensors are host buffers (``placement`` ON_HOST), ``get_stream()`` is 0
    (there is no device stream) and workspaces are host memory freed after the callback."""

    @classmethod
    def _make(cls, op_type: str, arrays: Sequence[Optional[np.ndarray]],
              groups: Sequence[Tuple[int, List[int]]],
              attrs: Sequence[Tuple[str, str, Any]]) -> "EagerOpExecutionContext":
        c = cls._new()
        c._init_view(op_type, arrays, groups, attrs)
        c._outputs: Dict[int, Tuple[np.ndarray, List[int]]] = {}
        return c

    def get_input_tensor(self, index: int) -> Tensor:
        t = self._flat(index)
        if t is None:
            raise RuntimeError(f"input {index} of {self._op_type} is not available")
        return t

    def get_input_num(self) -> int:
        self._live()
        return len(self._inputs)

    def get_dynamic_input_num(self, ir_index: int) -> int:
        return self._dynamic_num(ir_index)

    def get_attrs(self) -> RuntimeAttrs:
        self._live()
        return self._runtime_attrs

    def get_required_input_tensor(self, ir_index: int) -> Tensor:
        return self._required(ir_index)

    def get_optional_input_tensor(self, ir_index: int) -> Optional[Tensor]:
        return self._optional(ir_index)

    def get_dynamic_input_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        return self._dynamic(ir_index, relative_index)

    def _check_output_index(self, index: int) -> None:
        self._live()
        if type(index) is not int or index < 0:
            raise RuntimeError(f"output index must be a non-negative int, got {index!r}")

    def malloc_output_tensor(self, index: int, shape: StorageShape, format: StorageFormat,
                             dtype: DataType) -> Tensor:
        self._check_output_index(index)
        origin, storage = _storage_dims(shape)
        if any(d < 0 for d in storage):
            raise RuntimeError(f"output {index} of {self._op_type}: cannot allocate the unknown "
                               f"shape {storage}")
        np_dtype = _DT_TO_NP.get(DataType(dtype)) if isinstance(dtype, DataType) else None
        if np_dtype is None:
            raise RuntimeError(f"not supported: output {index} of {self._op_type} with data "
                               f"type {dtype!r} on the CPU backend")
        if not isinstance(format, StorageFormat):
            raise RuntimeError("an output format must be a StorageFormat")
        array = np.zeros(storage, dtype=np_dtype)
        self._outputs[index] = (array, origin)
        return Tensor._wrap(array, DataType(dtype), self._alive,
                            StorageFormat(format.origin_format, format.storage_format,
                                          format.expand_dims_type), origin)

    def make_output_ref_input(self, output_index: int, input_index: int) -> Tensor:
        self._check_output_index(output_index)
        src = self.get_input_tensor(input_index)
        self._outputs[output_index] = (src._array, list(src._origin))
        return src

    def malloc_workspace(self, size: int) -> int:
        return self._workspace(size)

    def get_output_tensor(self, index: int) -> Tensor:
        self._check_output_index(index)
        if index not in self._outputs:
            raise RuntimeError(f"output {index} of {self._op_type} is not allocated")
        array, origin = self._outputs[index]
        return Tensor._wrap(array, _NP_TO_DT[array.dtype], self._alive, origin_dims=origin)

    def get_stream(self) -> int:
        self._live()
        return 0

    def _results(self, n_outputs: Optional[int]) -> List[np.ndarray]:
        """The output arrays in output order (in their origin shape)."""
        n = n_outputs if n_outputs is not None else (max(self._outputs) + 1 if self._outputs
                                                      else 0)
        arrays = []
        for i in range(n):
            if i not in self._outputs:
                raise RuntimeError(f"execute of {self._op_type} did not allocate output {i} "
                                   f"(ctx.malloc_output_tensor or ctx.make_output_ref_input)")
            array, origin = self._outputs[i]
            size = 1
            for d in origin:
                size *= d
            arrays.append(array.reshape(origin) if size == array.size else array)
        return arrays


class WorkspaceAddr(_NotConstructible):
    """A workspace allocated by ``AnnotatedArgsContext.malloc_workspace``."""

    @classmethod
    def _make(cls, index: int, addr: int) -> "WorkspaceAddr":
        w = cls._new()
        w._index, w._addr = index, addr
        return w

    index: int = read_only("_index")
    addr: int = read_only("_addr")


class AnnotatedKernelLaunchInfo:
    """What one device kernel launch needs: the kernel's name and binary, its block dim and
    the stream."""

    def __init__(self, *, kernel_name: str, kernel_bin: bytes, block_dim: int,
                 stream_id: int) -> None:
        if not isinstance(kernel_name, str) or not kernel_name:
            raise ValueError("kernel_name must be a non-empty string")
        if not isinstance(kernel_bin, (bytes, bytearray)) or not kernel_bin:
            raise ValueError("kernel_bin must be non-empty bytes")
        if type(block_dim) is not int or block_dim <= 0:
            raise ValueError("block_dim must be a positive int")
        if type(stream_id) is not int or stream_id < 0:
            raise ValueError("stream_id must be a non-negative int")
        self.kernel_name, self.kernel_bin = kernel_name, bytes(kernel_bin)
        self.block_dim, self.stream_id = block_dim, stream_id

    def __repr__(self) -> str:
        return (f"AnnotatedKernelLaunchInfo(kernel_name={self.kernel_name!r}, "
                f"kernel_bin=<{len(self.kernel_bin)} bytes>, block_dim={self.block_dim}, "
                f"stream_id={self.stream_id})")


class AnnotatedKernelArgs(_NotConstructible):
    """The argument sequence of one kernel launch, in order."""

    @classmethod
    def _make(cls) -> "AnnotatedKernelArgs":
        a = cls._new()
        a.entries: List[Tuple[str, Any]] = []
        return a

    def _append(self, kind: str, value: Any) -> None:
        self.entries.append((kind, value))

    def append_input(self, instance_index: int, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise TypeError("append_input takes a ge.runtime.Tensor")
        self._append("input", (instance_index, tensor.addr))

    def append_output(self, instance_index: int, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise TypeError("append_output takes a ge.runtime.Tensor")
        self._append("output", (instance_index, tensor.addr))

    def append_workspace(self, workspace: WorkspaceAddr) -> None:
        if not isinstance(workspace, WorkspaceAddr):
            raise TypeError("append_workspace takes a WorkspaceAddr")
        self._append("workspace", workspace.index)

    def append_scalar(self, value: int) -> None:
        if type(value) is not int:
            raise TypeError("append_scalar takes an int")
        self._append("scalar", value)


class AnnotatedArgsContext(_NodeView):
    """The context of ``declare_launch_args``: declares device kernel launches. The CPU
    backend records them; running them needs an NPU."""

    @classmethod
    def _make(cls, op_type: str, arrays: Sequence[Optional[np.ndarray]],
              groups: Sequence[Tuple[int, List[int]]], attrs: Sequence[Tuple[str, str, Any]],
              outputs: Sequence[Tuple[int, List[np.ndarray]]]) -> "AnnotatedArgsContext":
        c = cls._new()
        c._init_view(op_type, arrays, groups, attrs)
        c._output_groups = [(kind, [_wrap_array(a, c._alive) for a in arrays_])
                            for kind, arrays_ in outputs]
        c.launches: List[Tuple[AnnotatedKernelLaunchInfo, AnnotatedKernelArgs]] = []
        c._workspaces = 0
        return c

    def malloc_workspace(self, size: int) -> WorkspaceAddr:
        addr = self._workspace(size)
        self._workspaces += 1
        return WorkspaceAddr._make(self._workspaces - 1, addr)

    def get_stream_id(self) -> int:
        self._live()
        return 0

    def create_kernel_args(self) -> AnnotatedKernelArgs:
        self._live()
        return AnnotatedKernelArgs._make()

    def add_launch(self, launch_info: AnnotatedKernelLaunchInfo,
                   args: AnnotatedKernelArgs) -> None:
        self._live()
        if not isinstance(launch_info, AnnotatedKernelLaunchInfo):
            raise TypeError("add_launch takes an AnnotatedKernelLaunchInfo")
        if not isinstance(args, AnnotatedKernelArgs):
            raise TypeError("add_launch takes the AnnotatedKernelArgs of create_kernel_args()")
        self.launches.append((launch_info, args))

    # The bridge's readers (private in GE too).
    def _get_required_input_tensor(self, ir_index: int) -> Tensor:
        return self._required(ir_index)

    def _get_optional_input_tensor(self, ir_index: int) -> Optional[Tensor]:
        return self._optional(ir_index)

    def _get_dynamic_input_num(self, ir_index: int) -> int:
        return self._dynamic_num(ir_index)

    def _get_dynamic_input_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        return self._dynamic(ir_index, relative_index)

    def _output_group(self, ir_index: int) -> List[Tensor]:
        self._live()
        if type(ir_index) is not int or not 0 <= ir_index < len(self._output_groups):
            raise RuntimeError(f"{self._op_type} has no IR output {ir_index!r}")
        return self._output_groups[ir_index][1]

    def _get_required_output_tensor(self, ir_index: int) -> Tensor:
        return self._output_group(ir_index)[0]

    def _get_dynamic_output_num(self, ir_index: int) -> int:
        return len(self._output_group(ir_index))

    def _get_dynamic_output_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        return self._output_group(ir_index)[relative_index]

    def _get_attrs(self) -> RuntimeAttrs:
        self._live()
        return self._runtime_attrs


# GE reaches the native module as ``ge.custom_op._native._native``.
_native = sys.modules[__name__]
