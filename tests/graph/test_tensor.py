"""``ge.graph.Tensor`` as GE's: constructor rules (list data, files, data types, placement),
properties and accessors, ``get_data()`` as nested lists, printing; numpy arrays beside it."""

import pathlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ge.es import GraphBuilder
from ge.es.all import Relu
from ge.graph import DataType, Format, Placement, Shape, Tensor, TensorDesc
from ge.graph.tensor import GE_CONSTRUCTOR_TYPES, numpy_dtype
from ge.session import Session
from common import assert_refuses_copy

DT = DataType


def int8_tensor():
    return Tensor([1, 2, 3, 4, 5, 6], None, DT.DT_INT8, Format.FORMAT_ND, [1, 2, 3])


# Construction --------------------------------------------------------------------------------


def test_positional_construction_and_accessors():
    t = int8_tensor()
    assert t.get_data() == [[[1, 2, 3], [4, 5, 6]]] and t.data == t.get_data()
    assert t.get_data_type() == DT.DT_INT8 and t.data_type == DT.DT_INT8
    assert t.get_format() == Format.FORMAT_ND and t.format == Format.FORMAT_ND
    shape = t.get_shape()
    assert isinstance(shape, Shape) and shape == [1, 2, 3] and t.shape == [1, 2, 3]
    assert t.get_placement() == Placement.PLACEMENT_HOST and t.placement == Placement.PLACEMENT_HOST


def test_keywords_have_ges_names():
    t = Tensor(data=[1.5, 2.5], data_type=DT.DT_FLOAT16, format=Format.FORMAT_NCHW, shape=[2, 1],
               placement=Placement.PLACEMENT_HOST)
    assert (t.data_type, t.format, t.shape, t.data) == (DT.DT_FLOAT16, Format.FORMAT_NCHW, [2, 1], [[1.5], [2.5]])


def test_no_arguments_is_an_empty_float_tensor():
    t = Tensor()
    assert (t.data_type, t.format, t.shape) == (DT.DT_FLOAT, Format.FORMAT_ND, [])  # GE's: shape [], no data
    with pytest.raises(ValueError, match="Scalar tensor should contain exactly one element, got 0"):
        t.get_data()
    assert t.set_data_type(DT.DT_INT32) is t and t.get_data_type() == DT.DT_INT32


def test_list_data_defaults_to_float_and_shape_none_is_a_scalar():
    t = Tensor([7])
    assert t.get_data_type() == DT.DT_FLOAT and t.get_shape() == [] and t.get_data() == 7.0
    s = Tensor([7], data_type=DT.DT_INT32, shape=[])
    assert s.get_data() == 7 and type(s.get_data()) is int
    with pytest.raises(ValueError, match=r"data has 3 elements, shape \[\] \(shape None is a scalar\) needs 1"):
        Tensor([1, 2, 3])
    with pytest.raises(ValueError, match=r"data has 5 elements, shape \[2, 3\] needs 6"):
        Tensor([1, 2, 3, 4, 5], shape=[2, 3])


def test_list_values_follow_ges_conversions():
    # Integer types take int() of each value (truncation), float types float().
    assert Tensor([1.7, -2.2], data_type=DT.DT_INT32, shape=[2]).get_data() == [1, -2]
    assert Tensor([1, 2], shape=[2]).get_data() == [1.0, 2.0]
    # All-bool data is taken as bools: as values of the type asked for.
    assert Tensor([True, False], data_type=DT.DT_BOOL, shape=[2]).get_data() == [True, False]
    assert Tensor([True, False], shape=[2]).get_data() == [1.0, 0.0]
    assert Tensor([True, False], data_type=DT.DT_UINT8, shape=[2]).get_data() == [1, 0]
    # float16 is rounded through float32, as GE's conversion does.
    x = 1.0 + 2.0 ** -11 + 2.0 ** -40
    assert Tensor([x], data_type=DT.DT_FLOAT16).numpy() == np.float16(np.float32(x))
    # Beyond the float range: infinity.
    assert Tensor([1e40, -1e40], shape=[2]).get_data() == [float("inf"), float("-inf")]


def test_nested_lists_carry_their_shape():
    assert Tensor([[1, 2], [3, 4]], data_type=DT.DT_INT32).get_shape() == [2, 2]
    assert Tensor([[1, 2], [3, 4]], data_type=DT.DT_INT32, shape=[4]).get_data() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="nested list data must be rectangular"):
        Tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="data has 4 elements"):
        Tensor([[1, 2], [3, 4]], shape=[3])


@pytest.mark.parametrize("data", [1, 2.5, True, "12", (1, 2), {1: 2}])
def test_data_that_is_not_a_list_is_refused(data):
    with pytest.raises(TypeError, match="data should be List"):
        Tensor(data, shape=[1])


@pytest.mark.parametrize("shape", [1, "23", [1, "2"], [1.0], [True]])
def test_shape_must_be_a_list_of_integers(shape):
    with pytest.raises(TypeError, match="Shape must be a list of integers"):
        Tensor([1.0], shape=shape)


def test_shape_dims_must_be_known():
    with pytest.raises(ValueError, match=r"a tensor needs a known shape, got \[-1\]"):
        Tensor([1.0], shape=[-1])
    with pytest.raises(ValueError, match="invalid shape"):
        Tensor([1.0], shape=[-3])


def test_placement_must_be_a_placement():
    with pytest.raises(TypeError, match="Placement must be a Placement"):
        Tensor([1.0], shape=[1], placement=1)


def test_format_must_be_a_format():
    with pytest.raises(TypeError, match="Format must be a Format"):
        Tensor([1.0], format="ND")


def test_data_and_file_together_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="Tensor should be created either by data or by file"):
        Tensor([1.0], str(tmp_path / "x.bin"))


def test_double_lists_are_refused_as_ge_does():
    with pytest.raises(RuntimeError, match="DT_DOUBLE is not supported in python Tensor constructor"):
        Tensor([1.0, 2.0], data_type=DT.DT_DOUBLE, shape=[2])
    # A numpy array of doubles is ge-rs's extra.
    assert Tensor(np.array([1.0, 2.0])).get_data() == [1.0, 2.0]


@pytest.mark.parametrize("dt", [DT.DT_BF16, DT.DT_COMPLEX64, DT.DT_STRING, DT.DT_INT4])
def test_other_types_are_refused_for_lists(dt):
    with pytest.raises(RuntimeError, match=f"Failed to create Tensor with data type: {int(dt)}"):
        Tensor([1.0, 2.0], data_type=dt, shape=[2])
    with pytest.raises(RuntimeError, match=f"Failed to create Tensor with data type: {int(dt)}"):
        Tensor([True], data_type=dt)


def test_bool_type_takes_only_bools():
    with pytest.raises(RuntimeError, match="Failed to create Tensor with data type: 12"):
        Tensor([1, 0], data_type=DT.DT_BOOL, shape=[2])
    with pytest.raises(RuntimeError, match="Failed to create Tensor with data type: 12"):
        Tensor([1.0, bool], None, DT.DT_BOOL, Format.FORMAT_ND, [2])


def test_unknown_data_type_value():
    with pytest.raises(RuntimeError, match="Failed to create Tensor with data type: 99"):
        Tensor([1.0], data_type=99)


def test_integer_values_must_fit_their_type():
    with pytest.raises(ValueError, match="Value 128 is out of range for DT_INT8"):
        Tensor([1, 128], data_type=DT.DT_INT8, shape=[2])
    with pytest.raises(ValueError, match="Value -1 is out of range for DT_UINT64"):
        Tensor([-1], data_type=DT.DT_UINT64)
    assert Tensor([2 ** 64 - 1], data_type=DT.DT_UINT64).get_data() == 2 ** 64 - 1


def test_unconvertible_values_raise_type_error():
    with pytest.raises(TypeError):
        Tensor([1.0, None], shape=[2])


# Files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", GE_CONSTRUCTOR_TYPES, ids=lambda d: d.name)
def test_raw_binary_file(tmp_path, dt):
    values = np.arange(6).astype(numpy_dtype(dt))
    path = tmp_path / "data.bin"
    path.write_bytes(values.astype(values.dtype.newbyteorder("<")).tobytes())
    t = Tensor(None, str(path), dt, Format.FORMAT_NCHW, [2, 3])
    assert (t.data_type, t.format, t.shape) == (dt, Format.FORMAT_NCHW, [2, 3])
    assert np.array_equal(t.numpy(), values.reshape(2, 3))
    # shape None is a scalar: the first element; bytes beyond the shape are ignored.
    assert Tensor(file_path=path, data_type=dt).get_data() == values[0].item()


def test_file_defaults_to_float(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(np.array([1.5, -2.0], "<f4").tobytes())
    assert Tensor(file_path=str(path), shape=[2]).get_data() == [1.5, -2.0]


def test_bool_file_bytes_are_true_when_nonzero(tmp_path):
    path = tmp_path / "b.bin"
    path.write_bytes(bytes([0, 1, 7]))
    assert Tensor(file_path=str(path), data_type=DT.DT_BOOL, shape=[3]).get_data() == [False, True, True]


def test_file_errors(tmp_path):
    with pytest.raises(RuntimeError, match="Failed to create Tensor: cannot read"):
        Tensor(file_path=str(tmp_path / "missing.bin"))
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="Failed to create Tensor: file .* is empty"):
        Tensor(file_path=str(empty))
    short = tmp_path / "short.bin"
    short.write_bytes(bytes(10))
    with pytest.raises(RuntimeError, match=r"Failed to create Tensor: file .* has 10 bytes, shape \[3\] of DT_FLOAT needs 12"):
        Tensor(file_path=str(short), shape=[3])
    with pytest.raises(RuntimeError, match="Failed to create Tensor from file: not supported: data type DT_DOUBLE"):
        Tensor(file_path=str(short), data_type=DT.DT_DOUBLE)
    with pytest.raises(TypeError, match="file_path must be a string"):
        Tensor(file_path=3)
    assert Tensor(file_path=pathlib.Path(short), data_type=DT.DT_UINT8, shape=[10]).get_data() == [0] * 10


# Setters, placement, copies ------------------------------------------------------------------


def test_set_format_chains_and_checks():
    t = int8_tensor()
    assert t.set_format(Format.FORMAT_NCHW) is t and t.get_format() == Format.FORMAT_NCHW
    assert t.get_data() == [[[1, 2, 3], [4, 5, 6]]]
    with pytest.raises(TypeError, match="Format must be a Format"):
        t.set_format(0)


def test_set_data_type_relabels_the_bytes():
    t = Tensor(np.array([1.0, -2.0], np.float32))
    bits = t.numpy().view(np.int32)
    assert t.set_data_type(DT.DT_INT32) is t
    assert t.get_data_type() == DT.DT_INT32 and np.array_equal(t.numpy(), bits)
    with pytest.raises(TypeError, match="Data_type must be a DataType"):
        t.set_data_type(3)
    # Another element size leaves the bytes meaningless: refused.
    with pytest.raises(RuntimeError, match="Failed to set datatype 9: .*needs 16 bytes, got 8"):
        t.set_data_type(DT.DT_INT64)
    assert t.get_data_type() == DT.DT_INT32


def test_placement_moves():
    t = Tensor([1.0], placement=Placement.PLACEMENT_DEVICE)
    assert t.placement == Placement.PLACEMENT_DEVICE and t.get_tensor_desc().get_placement() == Placement.PLACEMENT_DEVICE
    with pytest.raises(ValueError, match=r"to_device\(\) only supports host tensors"):
        t.to_device()
    assert t.to_host() is t and t.get_placement() == Placement.PLACEMENT_HOST
    with pytest.raises(ValueError, match=r"to_host\(\) only supports device tensors"):
        t.to_host()
    assert t.to_device() is t and t.placement == Placement.PLACEMENT_DEVICE
    assert t.get_data() == 1.0


def test_copies_are_refused():
    assert_refuses_copy(int8_tensor(), "Tensor")


def test_tensor_desc():
    d = int8_tensor().set_format(Format.FORMAT_NHWC).get_tensor_desc()
    assert isinstance(d, TensorDesc) and isinstance(d.get_shape(), Shape)
    assert (d.shape, d.format, d.data_type) == ([1, 2, 3], Format.FORMAT_NHWC, DT.DT_INT8)
    assert d.shape.get_shape_size() == 6


def test_str_and_repr():
    assert str(int8_tensor()) == (
        "\n        Tensor format is 2,\n        data_type is 2,\n        shape is [1, 2, 3],\n"
        "        data is [[[1, 2, 3], [4, 5, 6]]]\n        ")
    assert repr(Tensor(np.zeros((2, 3), np.float16))) == "Tensor(DT_FLOAT16[2, 3])"


# get_data -------------------------------------------------------------------------------------


def test_float_values_read_back_as_written():
    assert Tensor([2.1, 0.1, 1e-7, 3.4e38], shape=[4]).get_data() == [2.1, 0.1, 1e-7, 3.4e38]
    nan = Tensor([float("nan")]).get_data()
    assert nan != nan


def test_get_data_of_extra_types():
    assert Tensor(np.array([1 + 2j, -1j], np.complex64)).get_data() == [1 + 2j, -1j]
    assert Tensor(np.array([1.5, -3.0]), data_type=DT.DT_BF16).get_data() == [1.5, -3.0]
    assert Tensor(np.array([[0.1]])).get_data() == [[0.1]]


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float8_e4m3fn"])
def test_get_data_decodes_every_bit_pattern_of_the_narrow_floats(name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mdt = np.dtype(getattr(ml_dtypes, name))
    bits = np.arange(2 ** (8 * mdt.itemsize), dtype=np.uint16 if mdt.itemsize == 2 else np.uint8)
    want = bits.view(mdt).astype(np.float32)
    got = np.array(Tensor(bits.view(mdt)).get_data(), np.float32)
    assert np.array_equal(got, want, equal_nan=True)


def test_get_data_of_a_type_without_values():
    from ge._native import TensorData

    # (DT_STRING has values now: tests/onnx/test_strings.py.)
    t = Tensor._wrap(TensorData(b"", int(DT.DT_RESOURCE), [0]))
    with pytest.raises(RuntimeError, match="Failed to get Tensor data: not supported: values of DT_RESOURCE"):
        t.get_data()


# numpy arrays (beyond GE) ---------------------------------------------------------------------


def test_numpy_arrays_keep_dtype_and_shape():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = Tensor(a)
    assert (t.data_type, t.shape, t.get_data()) == (DT.DT_INT16, [2, 3], [[0, 1, 2], [3, 4, 5]])
    assert np.array_equal(t.numpy(), a) and t.numpy().dtype == np.int16
    c = Tensor(a, data_type=DT.DT_FLOAT, shape=[3, 2], format=Format.FORMAT_NCHW)
    assert (c.data_type, c.shape, c.format) == (DT.DT_FLOAT, [3, 2], Format.FORMAT_NCHW)
    assert c.get_data() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(ValueError, match=r"data of shape \[2, 3\] cannot take shape \[4\]"):
        Tensor(a, shape=[4])
    assert Tensor(np.float32(2.5)).get_data() == 2.5 and Tensor(np.float32(2.5)).shape == []


def test_zeros_of_a_shape():
    z = Tensor(shape=[2, 2], data_type=DT.DT_INT16)
    assert z.get_data() == [[0, 0], [0, 0]]
    assert Tensor(shape=[]).get_data() == 0.0


# The same Tensor from the graph and from a session --------------------------------------------


def test_session_outputs_and_const_values_are_tensors():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    c = b.create_const(np.array([[1.0, -1.0], [-2.0, 2.0]], np.float32))
    g = b.build_and_reset([Relu(x + c)])
    const = [n for n in g.get_all_nodes() if n.type == "Const"][0]
    value = const.get_attr("value")
    assert isinstance(value, Tensor) and value.get_data() == [[1.0, -1.0], [-2.0, 2.0]]
    s = Session()
    s.add_graph(1, g)
    (out,) = s.run_graph(1, [Tensor([0.5, 0.5, 0.5, 0.5], shape=[2, 2])])
    assert isinstance(out, Tensor) and out.placement == Placement.PLACEMENT_HOST
    assert out.get_data() == [[1.5, 0.0], [0.0, 2.5]] and out.shape == [2, 2]


# Round trip, every data type GE's constructor takes -------------------------------------------


def _values(dt):
    if dt == DT.DT_BOOL:
        return st.booleans()
    if dt == DT.DT_FLOAT:
        return st.floats(width=32)
    if dt == DT.DT_FLOAT16:
        return st.floats(width=16)
    info = np.iinfo(numpy_dtype(dt))
    return st.integers(int(info.min), int(info.max))


@st.composite
def list_tensors(draw):
    dt = draw(st.sampled_from(GE_CONSTRUCTOR_TYPES))
    shape = draw(st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3)))
    n = int(np.prod(shape)) if shape else 1
    return dt, shape, draw(st.lists(_values(dt), min_size=n, max_size=n))


def _same_nesting(a, b):
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(_same_nesting(x, y) for x, y in zip(a, b))
    return not isinstance(a, list)


@given(list_tensors())
def test_round_trip(case):
    dt, shape, values = case
    t = Tensor(values, data_type=dt, shape=shape)
    want = np.array(values, dtype=numpy_dtype(dt)).reshape(shape or [])
    assert t.get_data_type() == dt and t.get_shape() == (shape or [])
    got = t.get_data()
    assert _same_nesting(got, want.tolist())
    assert np.array_equal(np.array(got, dtype=numpy_dtype(dt)).reshape(want.shape), want, equal_nan=True)
    assert np.array_equal(t.numpy(), want, equal_nan=True) and t.numpy().dtype == want.dtype
    # Python values come back as the same Python types.
    kind = {DT.DT_BOOL: bool, DT.DT_FLOAT: float, DT.DT_FLOAT16: float}.get(dt, int)
    assert all(type(v) is kind for v in np.array(got, dtype=object).ravel().tolist())
