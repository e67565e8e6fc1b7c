"""StridedSliceV2 (GE's form of ONNX Slice; the Slice translator emits it) on the CPU: every
dtype the prototype allows that the CPU backend has (bool included), against numpy's slicing.

The spec is ONNX Slice's: begin/end/strides along ``axes`` (any subset of x's dims in any
order, negative or not; absent: the leading dims), strides absent or any non-zero value,
begins and ends past either end of the dim (clamped). Both modes (graph and eager) must agree
byte for byte (kernel_harness.run). Kernel unit tests: crates/ge-runtime/src/kernels/shape/slice.rs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

import ge
import numpy as np
import pytest
from ge.es import all as es
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
import kernel_harness as kh  # noqa: E402

X = kh.proto_dtypes("StridedSliceV2", "x")
INDEX = kh.proto_dtypes("StridedSliceV2", "begin")


def test_every_cpu_dtype_and_bool_is_allowed():
    assert "bool" in X and set(X) == set(kh.ALL)
    assert set(INDEX) == {"int32", "int64"}


@st.composite
def onnx_spec(draw: Any) -> Tuple[List[int], List[int], List[int], Optional[List[int]], Optional[List[int]], tuple]:
    """(shape, begin, end, axes or None, strides or None, the numpy index)."""
    shape = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3), label="shape")
    r = len(shape)
    with_axes = draw(st.booleans(), label="axes given")
    if with_axes:
        axes = draw(st.permutations(range(r)), label="order")[: draw(st.integers(1, r), label="n")]
    else:
        axes = list(range(draw(st.integers(1, r), label="n")))
    begin, end, strides = [], [], []
    idx: List[Any] = [slice(None)] * r
    for a in axes:
        d = shape[a]
        b, e = (draw(st.integers(-d - 3, d + 3), label=n) for n in ("begin", "end"))
        s = draw(st.sampled_from([1, 2, 3, -1, -2, -3]), label="stride")
        begin.append(b), end.append(e), strides.append(s)
        idx[a] = slice(b, e, s)
    named = [a - r if draw(st.booleans(), label="negative axis") else a for a in axes]
    no_strides = all(s == 1 for s in strides) and draw(st.booleans(), label="strides absent")
    return (shape, begin, end, named if with_axes else None, None if no_strides else strides,
            tuple(idx))


@kh.HYP(25)
@given(spec=onnx_spec(), data=st.data())
def test_strided_slice_v2_matches_numpy_in_every_dtype(spec, data):
    shape, begin, end, axes, strides, idx = spec
    rng = kh.rng_of(data)
    for k, d in enumerate(X):
        ix = INDEX[k % len(INDEX)]
        with kh.case("StridedSliceV2", d, ix):
            x = kh.values(rng, d, shape)

            def build(b, h):
                opt = [None if v is None else kh.vector(b, v, ix) for v in (axes, strides)]
                return es.StridedSliceV2(h, kh.vector(b, begin, ix), kh.vector(b, end, ix), *opt)

            got = kh.run1(build, (x, d))
            kh.same(got, x[idx], d, f"{shape} begin {begin} end {end} axes {axes} strides {strides}")


def test_strided_slice_v2_masks_apply_after_the_spread():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    # shrink_axis_mask bit 1 names dim 1 of the spread spec (axes [1]): x[:, 2, :].
    got = kh.run1(lambda b, h: es.StridedSliceV2(h, kh.vector(b, [2]), kh.vector(b, [3]),
                                                 kh.vector(b, [1]), shrink_axis_mask=2), x)
    kh.same(got, x[:, 2, :], "int32")


@pytest.mark.parametrize(
    "begin, end, axes, strides, match",
    [
        ([0], [1], [3], None, "axis 3 is out of range"),
        ([0, 0], [1, 1], [1, -1], None, "twice|repeat|duplicate|more than once"),
        ([0], [1], None, [0], "zero stride"),
        ([0, 0], [1], None, None, "'end'"),
    ],
)
def test_strided_slice_v2_bad_specs_are_ge_errors(begin, end, axes, strides, match):
    x = np.zeros((2, 3), np.float32)

    def build(b, h):
        opt = [None if v is None else kh.vector(b, v) for v in (axes, strides)]
        return es.StridedSliceV2(h, kh.vector(b, begin), kh.vector(b, end), *opt)

    with pytest.raises(ge.GeError, match=match):
        kh.run1(build, x)
