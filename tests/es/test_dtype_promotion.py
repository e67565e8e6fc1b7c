"""Operator dtypes from GE's rules (issue point 6).

Add's dtype inference in CANN promotes mixed operand dtypes with GE's table (`PromoteType`):
f32+i64 -> f32, i32+i64 -> i64, f16+f32 -> f32, bool+x -> x, bf16+f16 -> f32, u8+i8 -> i16.
The aclnn element-wise and comparison kernels (Sub, Mul, Div, RealDiv, Maximum, Minimum, Equal,
NotEqual, Less, LessEqual, Greater, GreaterEqual) promote the same way; comparisons give bool.
Other operators keep one dtype per type variable.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ge
from ge.es import GraphBuilder
from ge.es.all import (Add, Div, Equal, Greater, GreaterEqual, Less, LessEqual, Maximum, Minimum, Mul,
                       NotEqual, Pow, RealDiv, Sub)
from ge.graph import DataType, Tensor
from ge.session import Session

DT = DataType
NP = {DT.DT_FLOAT: np.float32, DT.DT_FLOAT16: np.float16, DT.DT_DOUBLE: np.float64, DT.DT_INT8: np.int8,
      DT.DT_UINT8: np.uint8, DT.DT_INT16: np.int16, DT.DT_INT32: np.int32, DT.DT_INT64: np.int64,
      DT.DT_BOOL: np.bool_}

# (a, b) -> GE's promoted dtype, for the dtypes numpy can carry.
PROMOTED = {
    (DT.DT_FLOAT, DT.DT_INT64): DT.DT_FLOAT,
    (DT.DT_INT32, DT.DT_INT64): DT.DT_INT64,
    (DT.DT_FLOAT16, DT.DT_FLOAT): DT.DT_FLOAT,
    (DT.DT_BOOL, DT.DT_INT32): DT.DT_INT32,
    (DT.DT_BOOL, DT.DT_FLOAT16): DT.DT_FLOAT16,
    (DT.DT_UINT8, DT.DT_INT8): DT.DT_INT16,
    (DT.DT_INT16, DT.DT_FLOAT16): DT.DT_FLOAT16,
    (DT.DT_INT64, DT.DT_DOUBLE): DT.DT_DOUBLE,
    (DT.DT_FLOAT, DT.DT_DOUBLE): DT.DT_DOUBLE,
}

ARITH = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Maximum: np.maximum, Minimum: np.minimum}
COMPARE = {Equal: np.equal, NotEqual: np.not_equal, Less: np.less, LessEqual: np.less_equal,
           Greater: np.greater, GreaterEqual: np.greater_equal}


def _graph(op, da, db, shape=(2, 3)):
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=da, shape=list(shape))
    y = b.create_input(1, data_type=db, shape=list(shape))
    out = op(x, y)
    dtype = out._desc[0]
    return b.build_and_reset([out]), dtype


def _values(dt, rng, shape=(2, 3)):
    if dt == DT.DT_BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt in (DT.DT_UINT8,):
        return rng.integers(0, 20, shape).astype(NP[dt])
    return rng.integers(-5, 6, shape).astype(NP[dt])


def _run(graph, *arrays):
    s = Session()
    s.add_graph(1, graph)
    return s.run_graph(1, [Tensor(a) for a in arrays])[0].numpy()


# Maximum's and Minimum's prototypes take neither bool nor int16 (operands or promoted dtype).
ARITH_CASES = [(op, pair) for op in ARITH for pair in PROMOTED
               if op not in (Maximum, Minimum) or not {DT.DT_BOOL, DT.DT_INT16} & ({PROMOTED[pair]} | set(pair))]


@pytest.mark.parametrize("op,pair", ARITH_CASES,
                         ids=lambda c: c.__name__ if callable(c) else f"{c[0].name}-{c[1].name}")
def test_arithmetic_promotes_both_ways_and_computes_in_the_promoted_dtype(op, pair):
    rng = np.random.default_rng(1)
    for da, db in (pair, pair[::-1]):
        graph, dtype = _graph(op, da, db)
        want_dt = PROMOTED[pair]
        assert dtype == want_dt.value, (op.__name__, da, db)
        a, b = _values(da, rng), _values(db, rng)
        got = _run(graph, a, b)
        want = ARITH[op](a.astype(NP[want_dt]), b.astype(NP[want_dt]))
        assert got.dtype == NP[want_dt]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", list(COMPARE), ids=lambda f: f.__name__)
def test_comparisons_promote_their_operands_and_give_bool(op):
    rng = np.random.default_rng(2)
    graph, dtype = _graph(op, DT.DT_INT32, DT.DT_FLOAT)
    assert dtype == DT.DT_BOOL.value
    a = rng.integers(-3, 4, (2, 3)).astype(np.int32)
    b = (rng.integers(-6, 7, (2, 3)) / 2).astype(np.float32)  # halves: compared in float
    np.testing.assert_array_equal(_run(graph, a, b), COMPARE[op](a.astype(np.float32), b))


def test_division_promotes_integers_with_floats():
    rng = np.random.default_rng(3)
    for op in (Div, RealDiv):
        graph, dtype = _graph(op, DT.DT_INT32, DT.DT_FLOAT)
        assert dtype == DT.DT_FLOAT.value
        a = rng.integers(-9, 10, (2, 3)).astype(np.int32)
        b = rng.uniform(1, 3, (2, 3)).astype(np.float32)
        np.testing.assert_allclose(_run(graph, a, b), a / b, rtol=1e-6)


def test_the_table_for_types_numpy_lacks():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DT.DT_BF16, shape=[2])
    y = b.create_input(1, data_type=DT.DT_FLOAT16, shape=[2])
    z = b.create_input(2, data_type=DT.DT_INT8, shape=[2])
    assert Add(x, y)._desc[0] == DT.DT_FLOAT.value
    assert Add(x, z)._desc[0] == DT.DT_BF16.value


@pytest.mark.parametrize("op,da,db,message", [
    # Mul takes uint16, but GE's table has no common dtype for uint16 and float.
    (Mul, DT.DT_UINT16, DT.DT_FLOAT, "input 'x2' has dtype DT_FLOAT, input 'x1' has DT_UINT16, and GE has "
                                     "no common dtype for the two"),
    (Maximum, DT.DT_UINT8, DT.DT_INT8, "promote to DT_INT16, which Maximum does not take"),
    # Pow is outside the promoting family: one dtype per type variable.
    (Pow, DT.DT_FLOAT, DT.DT_INT64, "both must have the same dtype"),
], ids=["no-common-dtype", "promoted-dtype-not-taken", "not-promoting"])
def test_dtype_errors_at_build_time(op, da, db, message):
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=da, shape=[2])
    y = b.create_input(1, data_type=db, shape=[2])
    with pytest.raises(ge.GraphBuildError, match=message):
        op(x, y)


def test_the_compile_report_counts_the_inserted_casts():
    graph, _ = _graph(Add, DT.DT_INT32, DT.DT_FLOAT)
    s = Session()
    s.add_graph(1, graph)
    s.run_graph(1, [Tensor(np.ones((2, 3), np.int32)), Tensor(np.ones((2, 3), np.float32))])
    assert "casts inserted for dtype promotion: 1" in s.compile_report(1)


def test_an_unshaped_input_promotes_with_the_fed_dtype():
    # The declared dtype is replaced by the fed one at compile, and promotion follows it.
    b = GraphBuilder("g")
    x = b.create_input(0)
    y = b.create_input(1, data_type=DT.DT_INT64)
    graph = b.build_and_reset([Add(x, y)])
    got = _run(graph, np.array([1, 2], np.int32), np.array([10, 20], np.int64))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [11, 22])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(PROMOTED, key=lambda p: (p[0].value, p[1].value))),
       st.integers(min_value=1, max_value=4), st.integers(min_value=1, max_value=4))
def test_add_with_broadcasting_matches_numpy_in_the_promoted_dtype(pair, m, n):
    da, db = pair
    rng = np.random.default_rng(m * 10 + n)
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=da, shape=[m, 1])
    y = b.create_input(1, data_type=db, shape=[n])
    graph = b.build_and_reset([Add(x, y)])
    a, c = _values(da, rng, (m, 1)), _values(db, rng, (n,))
    want_dt = NP[PROMOTED[pair]]
    np.testing.assert_array_equal(_run(graph, a, c), a.astype(want_dt) + c.astype(want_dt))
