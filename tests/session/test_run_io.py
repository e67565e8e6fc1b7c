"""Tensors in and out of a session run (issues 24 and 18): values bit for bit in every dtype,
whatever the input's layout; a C-contiguous numpy array read in one copy (never through the
bytes of ``_native_from_array``); a result handed back without a copy (``numpy()`` a read-only
view of the result's own memory, valid after the tensor is dropped)."""

from __future__ import annotations

import functools
import gc

import numpy as np
import pytest

import ge
import ge.graph.tensor as ge_tensor
from ge.es import GraphBuilder
from ge.es.all import Cast, Identity, Transpose
from ge.graph import DataType, Tensor
from ge.session import Session

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # pragma: no cover - hypothesis is a test extra
    given = None

NUMPY_TYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
               np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


def session_of(op, dtype=None):
    """A session with graph 1: ``op`` applied to one unshaped input (of ``dtype`` if given)."""
    b = GraphBuilder("io")
    x = b.create_input(0, data_type=DataType.DT_FLOAT if dtype is None else dtype)
    s = Session()
    s.add_graph(1, b.build_and_reset([op(x)]))
    return s


def random_array(dtype, shape, seed=0):
    """Every bit pattern possible (NaN payloads, -0.0, subnormals); bools 0/1."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", NUMPY_TYPES, ids=lambda t: np.dtype(t).name)
def test_every_dtype_in_and_out_bit_for_bit(dtype):
    x = random_array(dtype, (3, 5))
    s = session_of(Identity)
    s_t = session_of(lambda h: Transpose(h, [1, 0]))
    for fed in (x, Tensor(x)):  # a numpy array (one copy) and a ge.graph.Tensor (its bytes)
        (out,) = s.run_graph(1, [fed])
        assert same_bits(out.numpy(), x)
        assert out.get_data_type() == ge_tensor.data_type_of(x)
        assert list(out.get_shape()) == [3, 5] and out.get_format() == ge.graph.Format.FORMAT_ND
        (back,) = s.run_graph(1, [out])  # a result fed again: its array cloned
        assert same_bits(back.numpy(), x)
        (tr,) = s_t.run_graph(1, [fed])  # a result a kernel made
        assert same_bits(tr.numpy(), np.ascontiguousarray(x.T))
        assert tr.numpy().flags.c_contiguous


def test_get_data_and_equality_of_results_are_as_for_built_tensors():
    x = np.array([[1.5, -2.25, 3.0]], np.float32)
    (out,) = session_of(Identity).run_graph(1, [x])
    built = Tensor(x)
    assert out.get_data() == built.get_data() == [[1.5, -2.25, 3.0]]
    assert out == built and out.data == built.data
    assert repr(out) == repr(built) == "Tensor(DT_FLOAT[1, 3])"
    assert out.get_tensor_desc().get_shape().get_dims() == [1, 3]
    # Relabelling (GE's set_data_type) gives the same bytes a new type, as for a built tensor.
    assert same_bits(out.set_data_type(DataType.DT_INT32).numpy(), x.view(np.int32))
    assert out.numpy().flags.writeable  # no longer a run's result: a tensor of bytes


@pytest.mark.parametrize("make", [
    lambda a: a[:, ::2],                      # strided
    lambda a: a.T,                            # a transposed view
    lambda a: np.asfortranarray(a),           # Fortran order
    lambda a: a.astype(a.dtype.newbyteorder(">")),  # the other byte order
    lambda a: a[::-1],                        # negative strides
], ids=["strided", "transposed", "fortran", "big-endian", "reversed"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_], ids=lambda t: np.dtype(t).name)
def test_inputs_of_any_layout_give_their_values(make, dtype):
    x = make(random_array(dtype, (4, 6), seed=1))
    (out,) = session_of(Identity).run_graph(1, [x])
    want = np.ascontiguousarray(x).astype(np.dtype(dtype))  # native order, C order
    assert same_bits(out.numpy(), want)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,)], ids=str)
def test_0d_and_empty_tensors(shape):
    x = random_array(np.float32, shape, seed=2)
    for fed in (x, Tensor(x)):
        (out,) = session_of(Identity).run_graph(1, [fed])
        got = out.numpy()
        assert got.shape == shape and same_bits(got, x)
    if shape == ():
        assert out.get_data() == Tensor(x).get_data()  # a bare number


def test_result_memory_outlives_the_tensor():
    x = random_array(np.float32, (64, 64), seed=3)
    (out,) = session_of(lambda h: Transpose(h, [1, 0])).run_graph(1, [x])
    view = out.numpy()
    del out
    gc.collect()
    # Other allocations of the same size must not reuse the memory the view still owns.
    junk = [session_of(Identity).run_graph(1, [np.zeros((64, 64), np.float32)])[0] for _ in range(8)]
    assert same_bits(view, np.ascontiguousarray(x.T))
    del junk


def test_numpy_of_a_result_is_a_read_only_view_without_a_copy():
    x = np.arange(1 << 16, dtype=np.float32)
    (out,) = session_of(Identity).run_graph(1, [x])
    a, b = out.numpy(), out.numpy()
    assert np.shares_memory(a, b)  # both view the result's memory: no copy
    assert a.base is out._tensor  # the native tensor owns it, the view keeps it alive
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 7.0
    assert out.get_data()[0] == 0.0 and same_bits(out.numpy(), x)
    # The fed array was copied in: changing it later changes no result.
    x[0] = 42.0
    assert b[0] == 0.0
    # A writable array of one's own, as np.array gives it.
    own = np.array(out.numpy())
    own[0] = 1.0
    assert out.numpy()[0] == 0.0


def test_numpy_of_a_built_tensor_stays_a_writable_copy():
    t = Tensor(np.arange(4, dtype=np.int32))
    a = t.numpy()
    a[0] = 9
    assert a.flags.writeable and t.numpy().tolist() == [0, 1, 2, 3]
    assert not np.shares_memory(a, t.numpy())


def test_a_contiguous_array_skips_the_bytes_path(monkeypatch):
    """Structural: a C-contiguous array of a supported dtype is read by the run directly (one
    copy into the runtime's array); the general conversion (``_native_from_array``, whose bytes
    were two more copies) only sees the arrays that need it."""
    calls = []
    real = ge_tensor._native_from_array

    def spy(value, *args):
        calls.append(type(value).__name__)
        return real(value, *args)

    monkeypatch.setattr(ge_tensor, "_native_from_array", spy)
    s = session_of(Identity)
    x = random_array(np.float32, (8, 8))
    assert same_bits(s.run_graph(1, [x])[0].numpy(), x)
    assert calls == []
    assert same_bits(s.run_graph(1, [x[:, ::2]])[0].numpy(), np.ascontiguousarray(x[:, ::2]))
    assert calls == ["ndarray"]  # a strided array: today's path
    s.run_graph(1, [np.float32(2.5)])  # a numpy scalar: today's path
    assert calls == ["ndarray", "float32"]


def test_low_precision_and_bfloat16_results_are_their_bits():
    bits = np.array([0x3F80, 0xC000, 0x7FC1, 0x0001], np.uint16)  # 1, -2, a NaN, a subnormal
    (out,) = session_of(Identity, DataType.DT_BF16).run_graph(1, [Tensor(bits, data_type=DataType.DT_BF16)])
    assert out.get_data_type() == DataType.DT_BF16 and same_bits(out.numpy(), bits)
    assert out.get_data()[:2] == [1.0, -2.0]
    # Low-precision results (made by Cast: Identity does not take them) are their bit patterns,
    # one a byte (int4 unpacked).
    for dt, values, patterns in [
            (DataType.DT_FLOAT8_E4M3FN, np.array([1.0, -2.0, 0.5, 448.0], np.float32),
             [0x38, 0xC0, 0x30, 0x7E]),
            (DataType.DT_INT4, np.array([[1, -1, 7], [-8, 0, 3]], np.int32), [[1, 15, 7], [8, 0, 3]])]:
        s = session_of(lambda h, dt=dt: Cast(h, dst_type=dt), ge_tensor.data_type_of(values))
        (out,) = s.run_graph(1, [values])
        bits = np.array(patterns, np.uint8)
        assert out.get_data_type() == dt and same_bits(out.numpy(), bits)
        assert out == Tensor(bits, data_type=dt)  # the bytes (packed for int4) as built
        assert not out.numpy().flags.writeable and out.numpy().base is out._tensor


def test_strings_and_sequences_still_come_back():
    words = np.array([["a", "bé"], ["", "xyz"]], dtype=object)
    (out,) = session_of(Identity, DataType.DT_STRING).run_graph(1, [words])
    assert out.numpy().tolist() == words.tolist()
    assert out.get_data() == [["a", "bé"], ["", "xyz"]]


def test_unsupported_inputs_keep_their_errors():
    s = session_of(Identity)
    with pytest.raises(ge.GeError, match=r"RunGraph failed; graph_id=1; input 0: not supported: "
                                         r"dtype DT_COMPLEX64 on the CPU backend"):
        s.run_graph(1, [np.ones(3, np.complex64)])
    with pytest.raises(ge.GeError, match=r"input 0: numpy dtype datetime64\[s\] has no GE data type"):
        s.run_graph(1, [np.ones(3, "datetime64[s]")])
    with pytest.raises(ge.GeError, match=r"input 1: not supported: dtype DT_COMPLEX128"):
        s.run_graph(1, [np.ones(3, np.float32), np.ones(2, np.complex128)])


if given is not None:
    @settings(max_examples=60, deadline=None)
    @given(hnp.arrays(st.sampled_from([np.dtype(t) for t in NUMPY_TYPES]),
                      hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
           st.sampled_from(["c", "f", "strided"]))
    def test_property_results_are_the_inputs_bits(x, layout):
        x = {"c": x, "f": np.asfortranarray(x), "strided": x[..., ::2] if x.ndim else x}[layout]
        (out,) = _identity().run_graph(1, [x])
        assert same_bits(out.numpy(), np.array(x, order="C"))


@functools.lru_cache(maxsize=1)
def _identity() -> Session:
    return session_of(Identity)


def test_built_tensors_copy_their_array_once_and_keep_their_checks():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(x)
    x[0, 0] = 99.0  # the tensor has its own copy
    assert t.numpy()[0, 0] == 0.0 and t.numpy().flags.writeable
    for view in (x.T, x[:, ::2], x.astype(">f4"), np.asfortranarray(x)):
        assert Tensor(view) == Tensor(np.ascontiguousarray(view).astype(np.float32))
    assert Tensor(x, shape=[12]).get_shape().get_dims() == [12]
    with pytest.raises(ValueError, match=r"data of shape \[3, 4\] cannot take shape \[5\]"):
        Tensor(x, shape=[5])
    with pytest.raises(RuntimeError, match="Failed to set datatype"):
        Tensor(x).set_data_type(DataType.DT_INT8)  # 4-byte elements are not 1-byte ones
    assert same_bits(Tensor(x).set_data_type(DataType.DT_UINT32).numpy(), x.view(np.uint32))
    with pytest.raises(TypeError, match="C-contiguous numpy.ndarray"):
        ge._native.TensorData.from_array(x.T, int(DataType.DT_FLOAT), [4, 3])
