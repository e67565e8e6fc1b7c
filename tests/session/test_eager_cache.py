"""Eager mode's per-node cache (ge.graphMode = off): a signature's first run compiles the whole
graph, later runs go node by node; a node seen with the same input signature reuses its
compile, a changed shape or dtype compiles it again with the right result, results equal graph
mode's bit for bit, errors name the node."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ge
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType
from ge.session import Session


def chain(n: int, dtype=DataType.DT_FLOAT):
    b = GraphBuilder("chain")
    x = b.create_input(0, data_type=dtype, shape=[-2])
    c = b.create_input(1, data_type=dtype, shape=[-2])
    y = x
    for _ in range(n):
        y = es.Add(y, c)
    y = es.Relu(es.Mul(y, c))
    return b.build_and_reset([y])


def sessions(graph):
    e = Session({"ge.graphMode": "off", "ge.threads": "1"})
    g = Session({"ge.graphMode": "on", "ge.threads": "1"})
    e.add_graph(1, graph)
    g.add_graph(1, graph)
    return e, g


def run_both(e, g, inputs):
    a = [t.numpy() for t in e.run_graph(1, inputs)]
    b = [t.numpy() for t in g.run_graph(1, inputs)]
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), "eager and graph mode differ"
    return a


def eager_stats(s):
    return dict(s._core.graph_eager_stats(1))


def test_hits_after_the_first_run():
    n = 40
    e, g = sessions(chain(n))
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    c = np.full(16, 0.01, np.float32)
    run_both(e, g, [x, c])
    assert eager_stats(e) == {"hits": 0, "misses": 0, "whole_graph_runs": 1}
    run_both(e, g, [x, c])
    assert eager_stats(e) == {"hits": 0, "misses": n + 2, "whole_graph_runs": 1}
    for _ in range(3):
        run_both(e, g, [x, c])
    assert eager_stats(e) == {"hits": 3 * (n + 2), "misses": n + 2, "whole_graph_runs": 1}
    assert e.graph_cache_stats(1)["captures"] == 0


def test_changed_shape_and_dtype_recompile_with_right_results():
    n = 5
    e, g = sessions(chain(n))
    rng = np.random.default_rng(3)
    for shape, dt in [((4,), np.float32), ((2, 3), np.float32), ((2, 3), np.float64), ((4,), np.float32)]:
        x = rng.standard_normal(shape).astype(dt)
        c = rng.standard_normal(shape).astype(dt)
        run_both(e, g, [x, c])  # the whole graph's compile, then node by node
        (out,) = run_both(e, g, [x, c])
        want = x.copy()
        for _ in range(n):
            want = want + c
        want = np.maximum(want * c, 0)
        np.testing.assert_array_equal(out, want)
        assert out.dtype == dt
    # Three signatures compiled; the fourth is the first's again: both its runs hit.
    assert eager_stats(e)["misses"] == 3 * (n + 2)
    assert eager_stats(e)["hits"] == 2 * (n + 2)
    assert eager_stats(e)["whole_graph_runs"] == 3


def test_errors_name_the_node():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[-1])
    y = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[-1])
    s = es.Add(x, y)
    graph = b.build_and_reset([es.Relu(s)])
    e, g = sessions(graph)
    for _ in range(2):
        run_both(e, g, [np.ones(3, np.float32), np.ones(3, np.float32)])
    with pytest.raises(ge.GeError) as eager_err:
        e.run_graph(1, [np.ones(3, np.float32), np.ones(4, np.float32)])
    with pytest.raises(ge.GeError) as graph_err:
        g.run_graph(1, [np.ones(3, np.float32), np.ones(4, np.float32)])
    assert type(eager_err.value) is type(graph_err.value)
    assert str(eager_err.value) == str(graph_err.value)
    assert "Add" in str(eager_err.value)
    # The session still runs good inputs afterwards.
    (out,) = run_both(e, g, [np.ones(2, np.float32), np.full(2, -3, np.float32)])
    np.testing.assert_array_equal(out, np.zeros(2, np.float32))


def test_mlp_equals_graph_mode_bitwise():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    b = GraphBuilder("mlp")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[-1, 8])
    h = es.Relu(es.Add(es.MatMulV2(x, b.create_const(w1)), b.create_const(b1)))
    y = es.SoftmaxV2(es.MatMulV2(h, b.create_const(w2)), axes=[-1])
    e, g = sessions(b.build_and_reset([y]))
    for rows in (1, 7, 1, 32, 7):
        run_both(e, g, [rng.standard_normal((rows, 8)).astype(np.float32)])
    # A whole-graph compile per signature (the product fused with its bias and Relu there, the
    # same bits), node by node on the signature's later runs.
    assert eager_stats(e)["whole_graph_runs"] == 3
    assert eager_stats(e)["misses"] == 2 * 5


@settings(max_examples=25, deadline=None)
@given(shapes=st.lists(st.lists(st.integers(1, 4), min_size=0, max_size=3), min_size=1, max_size=4),
       wide=st.booleans())
def test_any_sequence_of_signatures_gives_graph_modes_results(shapes, wide):
    """Invariant: whatever sequence of shapes and dtypes an eager session sees, each run's
    result equals graph mode's bit for bit (the cache never serves a stale compile)."""
    e, g = sessions(chain(3))
    rng = np.random.default_rng(len(shapes))
    for i, shape in enumerate(shapes):
        dt = np.float64 if wide and i % 2 else np.float32
        x = rng.standard_normal(shape).astype(dt)
        c = rng.standard_normal(shape).astype(dt)
        run_both(e, g, [x, c])
        run_both(e, g, [x, c])
