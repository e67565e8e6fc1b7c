"""``ge.graph.TensorDesc`` and ``ge.graph.Shape`` as GE's: argument order, properties, chaining
setters, messages; placement and attributes beside them."""


import pytest

from ge.es import GraphBuilder
from ge.es.all import Relu
from ge.graph import DataType, Format, Placement, Shape, TensorDesc
from common import assert_refuses_copy

# Shape ---------------------------------------------------------------------------------------


def test_shape_is_a_list():
    s = Shape([1, 3, 224, 224])
    assert isinstance(s, list) and s == [1, 3, 224, 224] and s[1] == 3 and len(s) == 4
    assert repr(s) == "[1, 3, 224, 224]" and str(s) == "[1, 3, 224, 224]"
    assert Shape() == [] and Shape(None) == []
    assert Shape((2, 3)) == [2, 3]  # a tuple too (beyond GE)


@pytest.mark.parametrize("dims, size", [([], 0), ([2, 3, 4], 24), ([1], 1), ([0, 3], 0), ([2, -1], -1), ([-2], -1)])
def test_shape_size_as_ge_counts_it(dims, size):
    assert Shape(dims).get_shape_size() == size


@pytest.mark.parametrize("dims, unknown", [([], False), ([2, 3], False), ([2, -1], True), ([-2], True)])
def test_unknown_shape(dims, unknown):
    assert Shape(dims).is_unknown_shape() is unknown


def test_shape_accessors_beyond_ge():
    s = Shape([2, -1, 3])
    assert s.get_dims() == [2, -1, 3] and s.get_dim_num() == 3 and s.get_dim(2) == 3
    assert not s.is_unknown_rank() and Shape([-2]).is_unknown_rank() and Shape([-2]).get_dim_num() == -1
    dims = s.get_dims()
    dims.append(1)
    assert s == [2, -1, 3]


@pytest.mark.parametrize("dims", ["invalid", [1, "x"], [1.0, 2.0], 3, [True]])
def test_shape_type_errors(dims):
    with pytest.raises(TypeError, match="dims must be a list of integers"):
        Shape(dims)


@pytest.mark.parametrize("dims", [[-3], [1, -2]])
def test_shape_value_errors(dims):
    with pytest.raises(ValueError, match="invalid shape"):
        Shape(dims)


# TensorDesc ----------------------------------------------------------------------------------


def test_ge_argument_order():
    d = TensorDesc([1, 2, 3], Format.FORMAT_NCHW, DataType.DT_INT8)
    assert isinstance(d.get_shape(), Shape) and d.get_shape() == [1, 2, 3]
    assert d.get_shape().get_shape_size() == 6
    assert (d.get_format(), d.get_data_type()) == (Format.FORMAT_NCHW, DataType.DT_INT8)
    assert (d.shape, d.format, d.data_type) == ([1, 2, 3], Format.FORMAT_NCHW, DataType.DT_INT8)
    # The origin starts as the description itself.
    assert (d.origin_shape, d.origin_format) == ([1, 2, 3], Format.FORMAT_NCHW)


def test_defaults():
    d = TensorDesc()
    assert (d.shape, d.format, d.data_type) == ([], Format.FORMAT_ND, DataType.DT_FLOAT)
    assert d.shape.get_shape_size() == 0 and d.get_placement() == Placement.PLACEMENT_HOST


def test_setters_chain():
    d = TensorDesc([1, 2, 3], Format.FORMAT_NCHW)
    r = (d.set_shape([2, 3]).set_data_type(DataType.DT_INT32).set_format(Format.FORMAT_ND)
         .set_origin_shape([4, 5]).set_origin_format(Format.FORMAT_NHWC)
         .set_placement(Placement.PLACEMENT_DEVICE).set_attr("_k", 1))
    assert r is d
    assert (d.shape, d.data_type, d.format) == ([2, 3], DataType.DT_INT32, Format.FORMAT_ND)
    assert (d.get_origin_shape(), d.get_origin_format()) == ([4, 5], Format.FORMAT_NHWC)
    assert d.placement == Placement.PLACEMENT_DEVICE and d.get_attr("_k") == 1
    # Shapes come out as copies.
    d.shape.append(9)
    assert d.shape == [2, 3]


def test_constructor_errors():
    with pytest.raises(TypeError, match="Format must be a Format"):
        TensorDesc(format="invalid")
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        TensorDesc(data_type=0)
    with pytest.raises(TypeError, match="shape must be a list of integers"):
        TensorDesc(shape="invalid")
    # The pre-GE order (shape, data_type, format) is caught: a DataType is not a Format.
    with pytest.raises(TypeError, match="Format must be a Format"):
        TensorDesc([2], DataType.DT_FLOAT16)
    with pytest.raises(ValueError, match=r"invalid shape \[2, -3\]"):
        TensorDesc([2, -3])


@pytest.mark.parametrize("shape", ["invalid", [1, "x"], [1.0, 2.0]])
def test_setter_shape_errors(shape):
    d = TensorDesc()
    with pytest.raises(TypeError, match="^shape must be a list of integers"):
        d.set_shape(shape)
    with pytest.raises(TypeError, match="^origin shape must be a list of integers"):
        d.set_origin_shape(shape)
    assert d.shape == [] and d.origin_shape == []


def test_setter_type_errors():
    d = TensorDesc()
    with pytest.raises(TypeError, match="Format must be a Format"):
        d.set_format("invalid")
    with pytest.raises(TypeError, match="Format must be a Format"):
        d.set_origin_format(2)
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        d.set_data_type("invalid")
    with pytest.raises(TypeError, match="Placement must be a Placement"):
        d.set_placement(1)
    with pytest.raises(TypeError, match="Attribute name must be a non-empty string"):
        d.set_attr("", 1)
    with pytest.raises(RuntimeError, match="TensorDesc has no attribute '_b'"):
        d.get_attr("_b")


def test_copies_are_refused():
    assert_refuses_copy(TensorDesc(), "TensorDesc")


def test_repr_and_equality():
    d = TensorDesc([1, 2], Format.FORMAT_ND, DataType.DT_FLOAT)
    assert repr(d) == "TensorDesc(shape=[1, 2], format=2, data_type=0)"
    assert d == TensorDesc([1, 2]) and d != TensorDesc([1, 2], Format.FORMAT_NCHW) and d != [1, 2]


def test_node_descriptions_are_tensor_descs():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    g = b.build_and_reset([Relu(x)])
    relu = [n for n in g.get_all_nodes() if n.type == "Relu"][0]
    d = relu.get_output_desc(0)
    assert isinstance(d, TensorDesc) and isinstance(d.shape, Shape) and d.shape == [2, 3]
    relu.update_output_desc(0, d.set_shape([4, -1]).set_format(Format.FORMAT_NCHW))
    got = relu.get_output_desc(0)
    assert (got.shape, got.format, got.data_type) == ([4, -1], Format.FORMAT_NCHW, DataType.DT_FLOAT)
    assert got.shape.is_unknown_shape() and got.shape.get_shape_size() == -1
