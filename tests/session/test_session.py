"""ge.session: Session and its options, running graphs, the plan cache (hits, misses, captures,
evictions), eager vs graph mode, errors, threads and async runs, passes in the compile, GeApi."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, Cast, Div, MatMulV2, Mul, ReduceSum, Relu, SoftmaxV2, Sub
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.passes import PassStage
from ge.session import Session
from common import float_regop, register_add_rewrite, run_in_threads

F32 = DataType.DT_FLOAT


pytestmark = pytest.mark.usefixtures("clean_passes")


def mlp(dynamic: bool = True) -> Graph:
    """softmax(relu(x @ w + 1)), x: [-1, 4] float."""
    b = GraphBuilder("mlp")
    x = b.create_input(0, data_type=F32, shape=[-1 if dynamic else 2, 4])
    w = b.create_const_float([float(i) / 10 for i in range(32)], [4, 8])
    return b.build_and_reset([SoftmaxV2(Relu(MatMulV2(x, w) + 1.0))])


def mlp_ref(x: np.ndarray) -> np.ndarray:
    w = (np.arange(32, dtype=np.float32) / 10).reshape(4, 8)
    h = np.maximum(x @ w + 1, 0)
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def two_inputs() -> Graph:
    b = GraphBuilder("two")
    x = b.create_input(0, data_type=F32, shape=[-1])
    y = b.create_input(1, data_type=F32, shape=[-1])
    return b.build_and_reset([Sub(Mul(x, y), x), Add(x, y)])


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def test_run_graph_matches_numpy_with_arrays_and_tensors():
    s = Session()
    s.add_graph(1, mlp())
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (out,) = s.run_graph(1, [x])
    assert isinstance(out, Tensor)
    np.testing.assert_allclose(out.numpy(), mlp_ref(x), rtol=1e-5, atol=1e-6)
    (out2,) = s.run_graph(1, [Tensor(x)])
    np.testing.assert_array_equal(out2.numpy(), out.numpy())


def test_several_outputs_in_order():
    s = Session()
    s.add_graph(7, two_inputs())
    x, y = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    a, b = s.run_graph(7, [x, y])
    np.testing.assert_array_equal(a.numpy(), x * y - x)
    np.testing.assert_array_equal(b.numpy(), x + y)


def test_eager_and_graph_mode_agree():
    graph_s, eager_s = Session(), Session({"ge.graphMode": "off"})
    for s in (graph_s, eager_s):
        s.add_graph(1, mlp())
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 2):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        (a,) = graph_s.run_graph(1, [x])
        (b,) = eager_s.run_graph(1, [x])
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Eager runs never touch the cache.
    assert eager_s.graph_cache_stats(1)["captures"] == 0
    assert graph_s.graph_cache_stats(1)["hits"] == 1


def test_graph_level_mode_overrides_the_session():
    s = Session()
    s.add_graph(1, mlp(), {"ge.graphMode": "off"})
    s.add_graph(2, mlp())
    x = np.ones((2, 4), np.float32)
    for _ in range(2):
        s.run_graph(1, [x])
        s.run_graph(2, [x])
    assert s.graph_cache_stats(1)["misses"] == 0
    assert s.graph_cache_stats(2) == {"hits": 1, "misses": 1, "captures": 1, "evictions": 0, "size": 1, "capacity": 12}


def test_lru_hits_misses_and_evictions():
    s = Session({"ge.graphCacheCapacity": "2"})
    s.add_graph(1, mlp())
    run = lambda n: s.run_graph(1, [np.ones((n, 4), np.float32)])  # noqa: E731
    run(1)
    run(2)  # two plans
    run(1)  # hit; 2 is now least recently used
    run(3)  # evicts 2
    run(1)  # hit
    run(2)  # miss again, evicts 3
    st = s.graph_cache_stats(1)
    assert st == {"hits": 2, "misses": 4, "captures": 4, "evictions": 2, "size": 2, "capacity": 2}


def test_cache_capacity_from_the_environment(monkeypatch):
    monkeypatch.setenv("GE_GRAPH_CACHE_CAPACITY", "1")
    s = Session()
    s.add_graph(1, mlp())
    s.run_graph(1, [np.ones((1, 4), np.float32)])
    s.run_graph(1, [np.ones((2, 4), np.float32)])
    assert s.graph_cache_stats(1)["evictions"] == 1
    monkeypatch.setenv("GE_GRAPH_MODE", "off")
    assert Session().options["ge.graphMode"] == "off"
    monkeypatch.setenv("GE_GRAPH_MODE", "sometimes")
    with pytest.raises(ValueError, match="GE_GRAPH_MODE must be on or off"):
        Session()


def test_a_new_dtype_is_a_new_signature():
    b = GraphBuilder("any")
    x = b.create_input(0, data_type=DataType.DT_UNDEFINED, shape=[-2])
    g = b.build_and_reset([Add(x, x)])
    s = Session()
    s.add_graph(1, g)
    (a,) = s.run_graph(1, [np.array([1, 2], np.int32)])
    (f,) = s.run_graph(1, [np.array([1.5], np.float64)])
    assert a.numpy().dtype == np.int32 and a.numpy().tolist() == [2, 4]
    assert f.numpy().dtype == np.float64 and f.numpy().tolist() == [3.0]
    assert s.graph_cache_stats(1)["captures"] == 2


def test_compile_report():
    s = Session()
    s.add_graph(1, mlp())
    assert s.compile_report(1) is None
    s.run_graph(1, [np.ones((1, 4), np.float32)])
    text = s.compile_report(1)
    for stage in ("BeforeInferShape", "InferShape", "AfterInferShape", "AfterBuiltinFusionPass",
                  "AfterOriginGraphOptimize", "planned nodes"):
        assert stage in text


def test_passes_run_when_a_graph_compiles():
    register_add_rewrite("AddToSub", PassStage.AFTER_INFER_SHAPE, Sub)

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[2])
    y = b.create_input(1, data_type=F32, shape=[2])
    s = Session()
    s.add_graph(1, b.build_and_reset([Add(x, y)]))
    (out,) = s.run_graph(1, [np.array([5, 5], np.float32), np.array([1, 2], np.float32)])
    assert out.numpy().tolist() == [4, 3]
    assert "AddToSub" in s.compile_report(1)


def test_dead_nodes_are_not_run():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[2])
    _unused = Div(x, 0.0)
    g = b.build_and_reset([Relu(x)])
    s = Session()
    s.add_graph(1, g)
    (out,) = s.run_graph(1, [np.array([-1, 1], np.float32)])
    assert out.numpy().tolist() == [0, 1]
    assert "planned nodes: 1" in s.compile_report(1)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def test_unknown_option_is_a_warning_naming_the_closest_key():
    # GE accepts unknown keys (with a warning in its log); tests/session/test_options.py has the rest.
    with pytest.warns(UserWarning, match=r"unknown option 'ge.nope' ignored"):
        Session({"ge.nope": "1"})
    s = Session()
    with pytest.warns(UserWarning, match="did you mean 'ge.graphMode'"):
        s.add_graph(1, mlp(), {"ge.graphmode": "on"})
    with pytest.raises(ValueError, match="ge.graphCacheCapacity must be a positive integer"):
        Session({"ge.graphCacheCapacity": "0"})
    with pytest.raises(ValueError, match="ge.device must be cpu, acl or auto"):
        Session({"ge.device": "gpu"})


def test_device_options():
    # Running on ACL (and without it) is tested in tests/acl/test_acl.py.
    assert Session({"ge.device": "auto"}).options["ge.device"] == "auto"
    assert Session({"ge.exec.deviceId": "0"}).options["ge.exec.deviceId"] == 0
    with pytest.raises(ValueError, match="ge.exec.deviceId must be a device number"):
        Session({"ge.exec.deviceId": "-1"})


def test_bad_inputs_name_what_is_wrong():
    s = Session()
    s.add_graph(1, mlp(dynamic=False))
    with pytest.raises(ValueError, match="has 1 inputs, the run gave 2"):
        s.run_graph(1, [np.ones((2, 4), np.float32)] * 2)
    # As in GE, the fed tensor's description replaces the declared one: a float64 input is
    # refused by the ops it reaches, and another batch size simply runs.
    with pytest.raises(ge.GeError, match=r"MatMulV2: input 'x1' has dtype DT_DOUBLE, expected one of"):
        s.run_graph(1, [np.ones((2, 4))])
    assert s.run_graph(1, [np.ones((3, 4), np.float32)])[0].numpy().shape[0] == 3
    with pytest.raises(ge.GeError, match=r"inner dimensions differ: x1 \[2, 5\]"):
        s.run_graph(1, [np.ones((2, 5), np.float32)])
    with pytest.raises(TypeError, match="inputs must be a list of Tensor"):
        s.run_graph(1, np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="graph id 9 is not in the session"):
        s.run_graph(9, [])
    with pytest.raises(ValueError, match="already in the session"):
        s.add_graph(1, mlp())
    with pytest.raises(TypeError, match="Graph_id must be an integer"):
        s.run_graph("1", [])
    s.remove_graph(1)
    with pytest.raises(ValueError, match="not in the session"):
        s.remove_graph(1)


def test_ops_without_kernels_are_listed_at_compile_time():
    import ge.ops

    ge.ops.register_regop(float_regop("NoKernelOpA"))
    from ge.es.all import NoKernelOpA  # type: ignore[attr-defined]

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[2])
    g = b.build_and_reset([NoKernelOpA(NoKernelOpA(x))])
    s = Session()
    s.add_graph(1, g)
    with pytest.raises(ge.GeError, match=r"not supported: no CPU kernel for: NoKernelOpA \(node 'NoKernelOpA_0'\), NoKernelOpA \(node 'NoKernelOpA_1'\)"):
        s.run_graph(1, [np.ones(2, np.float32)])


def test_a_failing_run_leaves_the_session_usable():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2])
    y = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    s = Session()
    s.add_graph(1, b.build_and_reset([Div(x, y)]))
    with pytest.raises(ge.ExecutionError, match=r"node 'Div_0' \(Div\): integer division by zero"):
        s.run_graph(1, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])
    (out,) = s.run_graph(1, [np.array([7, -7], np.int32), np.array([2, 2], np.int32)])
    assert out.numpy().tolist() == [3, -3]


# ---------------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------------


def test_runs_from_several_threads():
    s = Session({"ge.graphCacheCapacity": "3"})
    s.add_graph(1, mlp())
    s.add_graph(2, two_inputs())
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((n, 4)).astype(np.float32) for n in (1, 2, 3, 4, 5)]

    def worker(k: int) -> None:
        for i in range(20):
            x = inputs[(k + i) % len(inputs)]
            (out,) = s.run_graph(1, [x])
            np.testing.assert_allclose(out.numpy(), mlp_ref(x), rtol=1e-5, atol=1e-6)
            v = np.full(3, k, np.float32)
            a, _ = s.run_graph(2, [v, v])
            assert a.numpy().tolist() == [k * k - k] * 3

    assert run_in_threads(worker, 4) == []
    st = s.graph_cache_stats(1)
    assert st["hits"] + st["misses"] == 80 and st["size"] <= 3


def _large_graph() -> Graph:
    """Work large enough for every threaded kernel: a thin and a tall matrix product, a batched
    product, a convolution over several images, softmax, LayerNorm and element-wise ops."""
    from ge.es.all import BatchMatMulV2, Conv2D, LayerNorm

    rng = np.random.default_rng(7)
    b = GraphBuilder("large")
    x = b.create_input(0, data_type=F32, shape=[-1, 256])
    img = b.create_input(1, data_type=F32, shape=[4, 8, 64, 64])
    bm = b.create_input(2, data_type=F32, shape=[16, 64, 64])
    w = b.create_const_float(rng.standard_normal(256 * 512).astype(np.float32).tolist(), [256, 512])
    f = b.create_const_float(rng.standard_normal(16 * 8 * 9).astype(np.float32).tolist(), [16, 8, 3, 3])
    g = b.create_const_float([1.5] * 512, [512])
    be = b.create_const_float([0.25] * 512, [512])
    h = Relu(MatMulV2(x, w) * 0.5 + 1.0)
    ln = LayerNorm(h, g, be, begin_norm_axis=-1, begin_params_axis=-1).y
    conv = Conv2D(img, f, strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], data_format="NCHW")
    return b.build_and_reset([SoftmaxV2(ln), conv, BatchMatMulV2(bm, bm), Mul(conv, conv)])


def test_thread_counts_give_identical_results():
    rng = np.random.default_rng(3)
    big = [
        rng.standard_normal((300, 256)).astype(np.float32),
        rng.standard_normal((4, 8, 64, 64)).astype(np.float32),
        rng.standard_normal((16, 64, 64)).astype(np.float32),
    ]
    thin = [rng.standard_normal((16, 256)).astype(np.float32)] + big[1:]  # the gemm crate
    results = {}
    for threads in ("1", "2", "3"):
        s = Session({"ge.threads": threads})
        assert s.options["ge.threads"] == int(threads)
        s.add_graph(1, _large_graph())
        results[threads] = [[t.numpy() for t in s.run_graph(1, ins)] for ins in (big, thin)]
    for threads in ("2", "3"):
        for got, want in zip(results[threads], results["1"]):
            for g, w in zip(got, want):
                assert g.tobytes() == w.tobytes()
    # And against numpy, loosely (the kernels' precision is tested elsewhere).
    x, img, bm = big
    y = results["1"][0]
    np.testing.assert_allclose(y[2], bm @ bm, rtol=1e-4, atol=1e-3)
    assert np.allclose(y[0].sum(-1), 1.0, atol=1e-5)


def test_threads_option_is_validated_and_read_from_the_environment(monkeypatch):
    with pytest.raises(ValueError, match="ge.threads must be a positive integer, got '0'"):
        Session({"ge.threads": "0"})
    with pytest.raises(ValueError, match="ge.threads must be a positive integer"):
        Session().add_graph(1, mlp(), {"ge.threads": "many"})
    monkeypatch.setenv("GE_THREADS", "3")
    assert Session().options["ge.threads"] == 3
    monkeypatch.setenv("GE_THREADS", "-1")
    with pytest.raises(ValueError, match="GE_THREADS must be a positive integer"):
        Session()


def test_run_graph_async_returns_a_future():
    s = Session()
    s.add_graph(1, mlp())
    x = np.ones((2, 4), np.float32)
    fut = s.run_graph_async(1, [x])
    assert isinstance(fut, Future)
    np.testing.assert_allclose(fut.result(timeout=30)[0].numpy(), mlp_ref(x), rtol=1e-5)
    bad = s.run_graph_async(1, [np.ones((2, 5), np.float32)])
    with pytest.raises(ge.GeError, match="inner dimensions differ"):
        bad.result(timeout=30)


# ---------------------------------------------------------------------------------------------
# GeApi
# ---------------------------------------------------------------------------------------------


def test_ge_initialize_loads_plugins_and_sets_defaults(tmp_path, monkeypatch):
    plugin = tmp_path / "my_pass.py"
    plugin.write_text(
        "from ge.es.all import Relu\n"
        "from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass\n"
        "@register_fusion_pass(name='DropRelu', stage=PassStage.BEFORE_INFER_SHAPE)\n"
        "class DropRelu(PatternFusionPass):\n"
        "    @pattern\n"
        "    def relu(self, inputs):\n"
        "        return Relu(inputs[0])\n"
        "    def replacement(self, inputs):\n"
        "        return inputs[0]\n"
    )
    monkeypatch.setenv("ASCEND_GE_PY_PASS_PATH", str(tmp_path))
    try:
        GeApi.ge_initialize({"ge.graphMode": "off"})
        s = Session()
        assert s.options["ge.graphMode"] == "off"
        b = GraphBuilder("g")
        x = b.create_input(0, data_type=F32, shape=[2])
        s.add_graph(1, b.build_and_reset([Relu(x)]))
        (out,) = s.run_graph(1, [np.array([-1, 1], np.float32)])
        assert out.numpy().tolist() == [-1, 1]  # the plugin's pass removed the Relu
    finally:
        GeApi.ge_finalize()
    assert Session().options["ge.graphMode"] == "on"
    with pytest.warns(UserWarning, match="unknown option 'ge.bad' ignored"):
        GeApi.ge_initialize({"ge.bad": "1"})
    GeApi.ge_finalize()


def test_cast_and_reduce_through_a_session():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2, 3])
    g = b.build_and_reset([ReduceSum(Cast(x, dst_type=int(DataType.DT_FLOAT)), [1], keep_dims=True)])
    s = Session()
    s.add_graph(1, g)
    (out,) = s.run_graph(1, [np.arange(6, dtype=np.int32).reshape(2, 3)])
    assert out.numpy().dtype == np.float32 and out.numpy().tolist() == [[3.0], [12.0]]


def test_builtin_optimisations_keep_results_and_are_reported():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[2])
    c = b.create_const_float([1.0, 2.0], [2])
    folded = Mul(c, 3.0)  # constant: computed at compile time
    y = Add(Relu(Add(x, folded)), Relu(Add(x, folded)))  # the second Relu(Add) is a duplicate
    s = Session()
    s.add_graph(1, b.build_and_reset([y]))
    (out,) = s.run_graph(1, [np.array([-4.0, 1.0], np.float32)])
    assert out.numpy().tolist() == [0.0, 14.0]
    report = s.compile_report(1)
    assert "constants folded 1" in report and "duplicates merged 2" in report
    assert "planned nodes: 3" in report


def test_python_kernels_for_custom_ops():
    import ge.ops

    ge.ops.register_regop(float_regop("ScaleShift", ("y", "z"), ("scale, Float, 2.0",)))
    ge.ops.register_infer("ScaleShift", lambda inputs, attrs: [inputs[0], inputs[0]])
    from ge.es.all import ScaleShift  # type: ignore[attr-defined]

    seen = {}

    def kernel(x, scale):
        seen["scale"] = scale
        return x * np.float32(scale), x + np.float32(1)

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[3])
    out = ScaleShift(x, scale=3.0)
    g = b.build_and_reset([out.y, out.z])
    s = Session()
    s.add_graph(1, g)
    ge.ops.register_kernel("ScaleShift", kernel)
    try:
        assert "ScaleShift" in ge.ops.kernel_op_types()
        y, z = s.run_graph(1, [np.array([1, 2, 3], np.float32)])
        assert y.numpy().tolist() == [3, 6, 9] and z.numpy().tolist() == [2, 3, 4]
        assert seen["scale"] == pytest.approx(3.0)

        ge.ops.register_kernel("ScaleShift", lambda x, scale: (x.astype(np.float64), x))
        s2 = Session()
        s2.add_graph(1, g)
        with pytest.raises(ge.ExecutionError, match=r"node 'ScaleShift_0' \(ScaleShift\): the Python kernel of ScaleShift returned DT_DOUBLE for output 0"):
            s2.run_graph(1, [np.ones(3, np.float32)])

        def broken(x, scale):
            raise ZeroDivisionError("boom")

        ge.ops.register_kernel("ScaleShift", broken)
        s3 = Session()
        s3.add_graph(1, g)
        with pytest.raises(ge.ExecutionError, match="raised ZeroDivisionError: boom"):
            s3.run_graph(1, [np.ones(3, np.float32)])
        ge.ops.register_kernel("ScaleShift", lambda x, scale: x)
        s4 = Session()
        s4.add_graph(1, g)
        with pytest.raises(ge.ExecutionError, match="returned 1 arrays, the node has 2 outputs"):
            s4.run_graph(1, [np.ones(3, np.float32)])
    finally:
        assert ge.ops.unregister_kernel("ScaleShift")
    s5 = Session()
    s5.add_graph(1, g)
    with pytest.raises(ge.GeError, match="no CPU kernel for: ScaleShift"):
        s5.run_graph(1, [np.ones(3, np.float32)])
    assert not ge.ops.unregister_kernel("ScaleShift")
    with pytest.raises(TypeError):
        ge.ops.register_kernel("ScaleShift", 3)
