"""ge.runtime: TensorDesc, Shape, StorageShape, StorageFormat, ExpandDimsType, TensorPlacement,
and the Tensor views a custom operator's execute receives (GE's documented behaviour)."""

import ctypes
import gc
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ge.custom_op as custom_op
import ge.es.all as es_all
import ge.runtime as runtime
from ge.es import GraphBuilder
from ge.graph import DataType, Format
from ge.graph import Tensor as GeTensor
from ge.runtime import (ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc,
                        TensorPlacement)
from ge.session import Session

_ids = itertools.count()


def _dims(s: StorageShape):
    return s.origin_shape.dims, s.storage_shape.dims


def test_runtime_exports_ges_names():
    assert sorted(runtime.__all__) == ["ExpandDimsType", "Shape", "StorageFormat", "StorageShape",
                                       "Tensor", "TensorDesc", "TensorPlacement"]
    from ge.runtime import _native

    assert runtime.TensorDesc is _native.TensorDesc


def test_tensor_desc_copies_its_shape_and_owns_it():
    source = StorageShape([1, 2], [1, 1, 2])
    desc = TensorDesc(source, DataType.DT_FLOAT16)
    assert _dims(desc.shape) == ([1, 2], [1, 1, 2])
    assert desc.data_type == DataType.DT_FLOAT16
    source.origin_shape.set_dim(0, 9)
    assert _dims(desc.shape) == ([1, 2], [1, 1, 2])
    desc.shape = [3, -1]
    assert _dims(desc.shape) == ([3, -1], [3, -1])
    view = desc.shape
    view.origin_shape.set_dim(0, 5)  # a view writes through to its owner
    assert desc.shape.origin_shape.dims == [5, -1]
    desc.shape = None
    desc.data_type = DataType.DT_UNDEFINED
    assert _dims(desc.shape) == ([], []) and desc.data_type == DataType.DT_UNDEFINED


@pytest.mark.parametrize("shape", [(1, 2), "1,2", [True], [1.0]])
def test_tensor_desc_rejects_invalid_shape(shape):
    with pytest.raises(TypeError, match="StorageShape, list of integers, or None"):
        TensorDesc(shape, DataType.DT_FLOAT)


def test_tensor_desc_rejects_too_many_dimensions():
    with pytest.raises(ValueError, match="maximum dimension count"):
        TensorDesc([1] * 1024, DataType.DT_FLOAT)


@pytest.mark.parametrize("data_type", [0, True, Format.FORMAT_NCHW, "DT_FLOAT"])
def test_tensor_desc_rejects_invalid_data_type(data_type):
    with pytest.raises(TypeError, match="data_type must be a DataType"):
        TensorDesc(None, data_type)


def test_tensor_desc_rejects_the_data_type_boundary():
    with pytest.raises(ValueError, match="less than DataType.DT_MAX"):
        TensorDesc(None, DataType.DT_MAX)


def test_tensor_desc_shape_view_expires_with_its_owner():
    desc = TensorDesc([1], DataType.DT_FLOAT)
    shape = desc.shape
    del desc
    gc.collect()
    with pytest.raises(RuntimeError, match="handle has expired"):
        _ = shape.origin_shape.dims


def test_shape_operations():
    s = Shape([2, 3])
    assert (s.dims, s.dim_num, s.size, s.is_scalar()) == ([2, 3], 2, 6, False)
    s.set_dim(1, 4)
    assert s.get_dim(1) == 4
    assert s.append_dim(5) is s and s.dims == [2, 4, 5]
    with pytest.raises(ValueError):
        s.get_dim(3)
    with pytest.raises(ValueError):
        s.set_dim(-1, 1)
    s.set_scalar()
    assert s.is_scalar() and s.size == 1
    full = Shape([1] * 25)
    full.append_dim(7)  # at the maximum dimension count append leaves the shape unchanged
    assert full.dim_num == 25


@given(st.lists(st.integers(-1, 64), max_size=8), st.lists(st.integers(0, 64), max_size=8))
def test_storage_shape_keeps_both_shapes(origin, storage):
    s = StorageShape(origin, storage)
    assert _dims(s) == (origin, storage)
    assert _dims(TensorDesc(s, DataType.DT_INT8).shape) == (origin, storage)


def test_storage_shape_default_is_scalar_and_setters_copy():
    s = StorageShape()
    assert _dims(s) == ([], [])
    s.set_origin_shape(Shape([4]))
    s.set_storage_shape(Shape([2, 2]))
    assert _dims(s) == ([4], [2, 2])


def test_expand_dims_type_forms():
    e = ExpandDimsType("101")
    assert e.full_size == 3
    assert [e.is_expand_index(i) for i in range(3)] == [True, False, True]
    same = ExpandDimsType((3 << 56) | 0b101)
    assert same == e
    e2 = ExpandDimsType()
    assert e2.full_size == 0
    assert ExpandDimsType("1" * 57).full_size == 0  # an over-long rule is ignored (GE)
    e3 = ExpandDimsType("000")
    e3.set_expand_index(1)
    assert e3.is_expand_index(1) and not e3.is_expand_index(0)
    with pytest.raises(ValueError):
        ExpandDimsType("12")
    with pytest.raises(TypeError):
        ExpandDimsType(1.5)


def test_storage_format_defaults_and_setters():
    f = StorageFormat()
    assert (f.origin_format, f.storage_format) == (Format.FORMAT_ND, Format.FORMAT_ND)
    f.set_origin_format(Format.FORMAT_NCHW)
    f.set_storage_format(Format.FORMAT_NC1HWC0)
    f.set_expand_dims_type(ExpandDimsType("1100"))
    assert (f.origin_format, f.storage_format, f.expand_dims_type.full_size) == (
        Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, 4)
    with pytest.raises(TypeError):
        StorageFormat(0, Format.FORMAT_ND)


def test_tensor_placement_values_follow_gert():
    assert [p.name for p in TensorPlacement] == ["ON_DEVICE_HBM", "ON_HOST", "FOLLOWING",
                                                 "ON_DEVICE_P2P", "END"]


def test_tensor_is_not_constructible():
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        Tensor()


def test_execute_gets_host_tensors_and_writes_through_addr():
    """Inside execute the inputs are Tensor views of host buffers: metadata as GE reports it,
    and ctypes writes through the output's addr land in the graph's output."""
    op = f"RtTensorProbe{next(_ids)}"
    seen = {}

    @custom_op.register_op(op_type=op)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, DataType.DT_INT32)

    @custom_op.register_op_impl(op_type=op)
    class Probe:
        def execute(self, x: Tensor) -> None:
            ctx = custom_op.get_execute_ctx()
            seen.update(shape=x.shape.origin_shape.dims, storage=x.storage_shape.dims,
                        origin=x.origin_shape.dims, size=x.size, n=x.shape_size,
                        dtype=x.data_type, placement=x.placement, fmt=x.storage_format,
                        ofmt=x.format.origin_format, expand=x.expand_dims_type.full_size)
            y = ctx.malloc_output_tensor(0, x.shape, x.format, DataType.DT_INT32)
            src = (ctypes.c_float * x.shape_size).from_address(x.addr)
            dst = (ctypes.c_int32 * y.shape_size).from_address(y.addr)
            for i in range(y.shape_size):
                dst[i] = int(src[i] * 10)
            seen["view"] = y

    b = GraphBuilder("probe")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 3])
    b.set_graph_output(getattr(es_all, op)(x), 0)
    s = Session({})
    s.add_graph(0, b.build_and_reset())
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = s.run_graph(0, [GeTensor(data)])
    np.testing.assert_array_equal(out.numpy(), (data * 10).astype(np.int32))
    assert seen["shape"] == seen["storage"] == seen["origin"] == [2, 3]
    assert (seen["size"], seen["n"], seen["dtype"]) == (24, 6, DataType.DT_FLOAT)
    assert seen["placement"] == TensorPlacement.ON_HOST
    assert (seen["fmt"], seen["ofmt"], seen["expand"]) == (Format.FORMAT_ND, Format.FORMAT_ND, 0)
    with pytest.raises(RuntimeError, match="handle has expired"):
        _ = seen["view"].addr  # views end with the callback
