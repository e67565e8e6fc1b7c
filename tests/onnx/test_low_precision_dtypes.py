"""The low-precision types (float8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ/E8M0, float4 E2M1, int4/uint4,
int2/uint2): ge.Tensor interop (ml_dtypes arrays, uint8 bit patterns, packed sub-byte bytes),
Cast/QuantizeLinear/DequantizeLinear through a session against ml_dtypes and onnx's reference,
and the clear errors of kernels that do not take them."""

from __future__ import annotations

import numpy as np
import pytest

import ge
import ge.onnx
from ge.graph import Tensor
from ge.graph.types import DataType

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_harness import graph_model, run_graph, vi  # noqa: E402

# (ONNX element type, ge DataType, ml_dtypes type, bits an element)
TYPES = [
    (TensorProto.FLOAT8E4M3FN, DataType.DT_FLOAT8_E4M3FN, ml_dtypes.float8_e4m3fn, 8),
    (TensorProto.FLOAT8E4M3FNUZ, DataType.DT_FLOAT8_E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, 8),
    (TensorProto.FLOAT8E5M2, DataType.DT_FLOAT8_E5M2, ml_dtypes.float8_e5m2, 8),
    (TensorProto.FLOAT8E5M2FNUZ, DataType.DT_FLOAT8_E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, 8),
    (TensorProto.FLOAT8E8M0, DataType.DT_FLOAT8_E8M0, ml_dtypes.float8_e8m0fnu, 8),
    (TensorProto.FLOAT4E2M1, DataType.DT_FLOAT4_E2M1, ml_dtypes.float4_e2m1fn, 4),
    (TensorProto.INT4, DataType.DT_INT4, ml_dtypes.int4, 4),
    (TensorProto.UINT4, DataType.DT_UINT4, ml_dtypes.uint4, 4),
    (TensorProto.INT2, DataType.DT_INT2, ml_dtypes.int2, 2),
    (TensorProto.UINT2, DataType.DT_UINT2, ml_dtypes.uint2, 2),
]
IDS = [t[1].name for t in TYPES]
# Cast takes every type both ways (GE's prototype lists float8 E4M3FN/E5M2 and float4 E2M1;
# ge-rs extends its lists with the others, docs/onnx.md). QuantizeLinear has no E8M0 target.
QUANT_TYPES = [t for t in TYPES if t[1] != DataType.DT_FLOAT8_E8M0]
QUANT_IDS = [t[1].name for t in QUANT_TYPES]

VALUES = np.array([0.0, 0.3, -1.0, 2.5, -3.75, 1.0, 7.0, 100.0, -0.0, 1e-6, -2.0], np.float32)


def _model(nodes, inputs, outputs, inits=(), opset=25):
    return graph_model(nodes, inputs, outputs, inits, opset, ir_version=11).SerializeToString()


def _all_patterns(bits: int) -> np.ndarray:
    return np.arange(1 << bits, dtype=np.uint8)


def test_extension_types_are_outside_ges_range():
    for dt in (DataType.DT_UINT4, DataType.DT_FLOAT8_E4M3FNUZ, DataType.DT_FLOAT8_E5M2FNUZ):
        assert dt >= 1000
    assert DataType.DT_INT4 == 29 and DataType.DT_INT2 == 31 and DataType.DT_FLOAT8_E8M0 == 37
    assert DataType.DT_FLOAT4_E2M1 == 40


@pytest.mark.parametrize("onnx_t,dt,ml,bits", TYPES, ids=IDS)
def test_ml_dtypes_arrays_round_trip_as_bit_patterns(onnx_t, dt, ml, bits):
    a = _all_patterns(bits).view(ml).reshape(-1)
    t = Tensor(a)
    assert t.get_data_type() == dt and t.get_shape() == [a.size]
    got = t.numpy()
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, a.view(np.uint8))
    # Sub-byte types are packed in the tensor's bytes, the first element in the low bits.
    assert len(t._tensor.data) == -(-a.size * bits // 8)
    if bits == 4:
        assert t._tensor.data[0] == 0x10  # elements 0 and 1
    # Bit patterns as uint8 with an explicit type give the same tensor; an odd count packs too.
    assert Tensor(a.view(np.uint8), data_type=dt) == t
    odd = Tensor(a.view(np.uint8)[:3], data_type=dt)
    np.testing.assert_array_equal(odd.numpy(), a.view(np.uint8)[:3])
    # get_data gives the values.
    want = a.astype(np.float64)
    np.testing.assert_array_equal(np.array(t.get_data(), np.float64), want)


@pytest.mark.parametrize("onnx_t,dt,ml,bits", TYPES, ids=IDS)
def test_values_are_converted_with_an_explicit_type(onnx_t, dt, ml, bits):
    t = Tensor(VALUES, data_type=dt)
    np.testing.assert_array_equal(t.numpy(), VALUES.astype(ml).view(np.uint8))


def test_values_without_ml_dtypes_need_bit_patterns(monkeypatch):
    import ge.graph.tensor as gt

    monkeypatch.setattr(gt, "_ml_dtype", lambda dt: None)
    with pytest.raises(TypeError, match="need ml_dtypes.*uint8"):
        Tensor(VALUES, data_type=DataType.DT_FLOAT8_E4M3FNUZ)
    # Integers into the 4-bit integer types keep their low bits without ml_dtypes.
    t = Tensor(np.array([-8, 7, -1], np.int8), data_type=DataType.DT_INT4)
    assert t.get_data() == [-8, 7, -1]
    assert t.numpy().tolist() == [8, 7, 15]


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("onnx_t,dt,ml,bits", TYPES, ids=IDS)
def test_cast_there_and_back_matches_onnx_reference(onnx_t, dt, ml, bits, saturate):
    from onnx.reference.ops.op_cast import cast_to

    x = np.concatenate([VALUES, np.array([np.inf, -np.inf, np.nan, 1e6, -1e6], np.float32)])
    if bits < 8:
        x = x[np.isfinite(x)]  # ml_dtypes' casts of inf/NaN to the integers are not defined
    n = x.size
    attrs = {"saturate": saturate} if bits == 8 and dt != DataType.DT_FLOAT8_E8M0 else {}
    m = _model([helper.make_node("Cast", ["x"], ["q"], to=onnx_t, **attrs),
                helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)],
               [vi("x", TensorProto.FLOAT, (n,))],
               [vi("q", onnx_t, (n,)), vi("y", TensorProto.FLOAT, (n,))])
    g = ge.onnx.load(m)
    want = cast_to(x, onnx_t, bool(saturate))
    for mode in ("on", "off"):
        q, y = run_graph(g, [x], mode)
        np.testing.assert_array_equal(q, want.view(np.uint8), err_msg=mode)
        np.testing.assert_array_equal(y, want.astype(np.float32), err_msg=mode)


def test_bad_round_mode_is_refused_at_import():
    bad = _model([helper.make_node("Cast", ["x"], ["q"], to=TensorProto.FLOAT8E8M0, round_mode="odd")],
                 [vi("x", TensorProto.FLOAT, (2,))], [vi("q", TensorProto.FLOAT8E8M0, (2,))])
    with pytest.raises(ge.GeError, match="round_mode"):
        ge.onnx.load(bad)


def test_types_ges_prototypes_refuse_are_clear_errors():
    # Cast takes them all (the ge-rs extension); GE's Reshape (TensorType::ALL) does not.
    m = _model([helper.make_node("Reshape", ["x", "s"], ["q"])],
               [vi("x", TensorProto.FLOAT8E4M3FNUZ, (2,))], [vi("q", TensorProto.FLOAT8E4M3FNUZ, (1, 2))],
               [numpy_helper.from_array(np.array([1, 2], np.int64), "s")])
    with pytest.raises(ge.GeError, match="DT_FLOAT8_E4M3FNUZ"):
        ge.onnx.load(m)


def test_packed_float4_initializer_is_unpacked_in_order():
    vals = np.array([0.5, -1.0, 6.0, -0.0, 3.0], np.float32)  # 5 elements: the last byte padded
    init = numpy_helper.from_array(vals.astype(ml_dtypes.float4_e2m1fn), "w")
    assert len(init.raw_data) == 3
    m = _model([helper.make_node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)],
               [], [vi("y", TensorProto.FLOAT, (5,))], [init])
    (y,) = run_graph(ge.onnx.load(m), [])
    np.testing.assert_array_equal(y, vals)


@pytest.mark.parametrize("onnx_t,dt,ml,bits", QUANT_TYPES, ids=QUANT_IDS)
def test_quantize_dequantize_match_onnx_reference(onnx_t, dt, ml, bits):
    from onnx.reference import ReferenceEvaluator

    x = np.array([[0.0, 2.5, 4.8, 8.6], [-30.0, -20.0, 6.0, 9.0], [-0.1, -2.5, -4.8, -8.6]], np.float32)
    scale = np.array([2.0, 3.0, 4.0], np.float32)
    zp = numpy_helper.from_array(np.zeros((), np.float32).astype(ml), "zp")
    m = graph_model([helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"], axis=0),
                     helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["y"], axis=0)],
                    [vi("x", TensorProto.FLOAT, (3, 4))],
                    [vi("q", onnx_t, (3, 4)), vi("y", TensorProto.FLOAT, (3, 4))],
                    [numpy_helper.from_array(scale, "scale"), zp], 25, ir_version=11)
    want_q, want_y = ReferenceEvaluator(m).run(None, {"x": x})
    q, y = run_graph(ge.onnx.load(m.SerializeToString()), [x])
    np.testing.assert_array_equal(q, want_q.view(np.uint8))
    np.testing.assert_array_equal(y, want_y)


def test_kernels_that_compute_refuse_low_precision_types_by_name():
    m = _model([helper.make_node("Add", ["a", "b"], ["c"])],
               [vi("a", TensorProto.FLOAT8E4M3FN, (2,)), vi("b", TensorProto.FLOAT8E4M3FN, (2,))],
               [vi("c", TensorProto.FLOAT8E4M3FN, (2,))])
    a = np.array([1.0, 2.0], np.float32).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(ge.GeError, match="not supported.*Add.*DT_FLOAT8_E4M3FN"):
        run_graph(ge.onnx.load(m), [a, a])
