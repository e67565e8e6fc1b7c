"""The ACL backend (``ge.device="acl"``) from Python, against the ACL test double (a C library
built here that stands in for Huawei's runtime; see tests/acl/acl_double.py). Nothing here runs on an
NPU. Without ACL installed, ``acl`` is a DeviceError and ``auto`` runs on the CPU: checked in a
fresh interpreter, because ACL stays loaded in a process once it has loaded."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import ge
from acl_double import AclTestDouble
from ge.es import GraphBuilder
from ge.es.all import Log, MatMulV2, ReduceSumD, Relu, Sigmoid, Sin, SoftmaxV2
from ge.graph import DataType, Graph
from ge.session import Session

F32 = DataType.DT_FLOAT
ILLEGAL_IN_CAPTURE = {
    "aclrtSynchronizeStream", "aclrtMemcpy", "aclrtMemset", "aclrtMalloc", "aclrtFree",
    "aclrtMallocHost", "aclrtFreeHost",
}


@pytest.fixture(scope="module")
def double(tmp_path_factory):
    d = AclTestDouble(tmp_path_factory.mktemp("ascend"))
    old = os.environ.get("ASCEND_HOME_PATH")
    os.environ["ASCEND_HOME_PATH"] = str(d.root)
    yield d
    # Later tests (and their subprocesses) see no ACL again; in this process it stays loaded.
    if old is None:
        del os.environ["ASCEND_HOME_PATH"]
    else:
        os.environ["ASCEND_HOME_PATH"] = old


@pytest.fixture
def acl(double):
    double.reset()
    yield double
    gc.collect()


def mlp() -> Graph:
    """The quickstart's model: sigmoid(relu(x @ w1 + b1) @ w2 + 0.5) and its row sums."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("mlp")
    x = b.create_input(0, data_type=F32, shape=[-1, 4])
    w1 = b.create_const(rng.standard_normal((4, 8), dtype=np.float32))
    b1 = b.create_const(np.linspace(-0.5, 0.5, 8, dtype=np.float32))
    w2 = b.create_const(rng.standard_normal((8, 2), dtype=np.float32))
    y = Sigmoid(Relu(MatMulV2(x, w1) + b1) @ w2 + 0.5)
    return b.build_and_reset([SoftmaxV2(y), ReduceSumD(y, axes=[1], keep_dims=True)])


def run_both(graph: Graph, xs, options=None):
    cpu, npu = Session(), Session({"ge.device": "acl", **(options or {})})
    cpu.add_graph(1, graph)
    npu.add_graph(1, graph)
    assert npu.graph_device(1) == "acl" and cpu.graph_device(1) == "cpu"
    for x in xs:
        want = [t.numpy() for t in cpu.run_graph(1, [x])]
        got = [t.numpy() for t in npu.run_graph(1, [x])]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return npu


def between_captures(names):
    inside, cur = [], None
    for n in names:
        if n == "aclmdlRICaptureBegin":
            cur = []
        elif n == "aclmdlRICaptureEnd":
            inside.append(cur)
            cur = None
        elif cur is not None:
            cur.append(n)
    return inside


def test_graph_mode_captures_once_replays_and_matches_the_cpu(acl):
    xs = [np.random.default_rng(i).standard_normal((3, 4), dtype=np.float32) for i in range(3)]
    s = run_both(mlp(), xs)
    st = s.graph_cache_stats(1)
    assert (st["misses"], st["hits"], st["captures"]) == (1, 2, 1)
    assert acl.calls("aclmdlRICaptureBegin") == 1
    assert acl.calls("aclmdlRIExecuteAsync") == 3
    assert acl.calls("aclnnMatmul") == 2  # two products, launched once (in the capture)
    [inside] = between_captures(acl.call_names())
    assert "aclnnMatmul" in inside
    assert not ILLEGAL_IN_CAPTURE & set(inside), inside
    assert acl.violations() == 0, acl.log()


def test_eager_mode_launches_node_by_node(acl):
    xs = [np.ones((2, 4), np.float32)] * 2
    run_both(mlp(), xs, {"ge.graphMode": "off"})
    assert acl.calls("aclmdlRICaptureBegin") == 0
    assert acl.calls("aclnnMatmul") == 4
    assert acl.violations() == 0, acl.log()


def test_eviction_and_shutdown_release_everything(acl):
    before = {k: acl.live(k) for k in ("device_buffers", "graphs", "streams", "contexts")}
    s = Session({"ge.device": "acl", "ge.graphCacheCapacity": "1"})
    s.add_graph(1, mlp())
    for n in (1, 2, 3):
        s.run_graph(1, [np.ones((n, 4), np.float32)])
    assert s.graph_cache_stats(1)["evictions"] == 2
    assert acl.calls("aclmdlRIDestroy") == 2
    assert acl.live("graphs") == before["graphs"] + 1
    del s
    gc.collect()
    assert {k: acl.live(k) for k in before} == before
    assert acl.calls("aclmdlRIDestroy") == 3
    assert acl.violations() == 0, acl.log()


def test_operators_the_backend_cannot_run_are_listed_together(acl):
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[2])
    g = b.build_and_reset([Sin(Relu(Log(x)))])
    s = Session({"ge.device": "acl"})
    s.add_graph(1, g)
    with pytest.raises(ge.GeError, match=r"the ACL backend cannot run 2 node\(s\): .*\(Log\).*\(Sin\)"):
        s.run_graph(1, [np.ones(2, np.float32)])


def test_acl_errors_raise_with_the_runtime_message(acl):
    s = Session({"ge.device": "acl", "ge.graphMode": "off"})
    s.add_graph(1, mlp())
    acl.fail_next("aclnnRelu", 361001, "injected: AI core exception")
    with pytest.raises(ge.ExecutionError, match=r"\(Relu\).*361001.*injected: AI core exception"):
        s.run_graph(1, [np.ones((2, 4), np.float32)])
    acl.fail_next("aclrtMalloc", 207001, "injected: out of device memory")
    with pytest.raises(ge.DeviceError, match="aclrtMalloc failed with error 207001: injected: out of device memory"):
        s.run_graph(1, [np.ones((2, 4), np.float32)])
    s.run_graph(1, [np.ones((2, 4), np.float32)])  # and it recovers


def test_auto_and_device_ids(acl):
    s = Session({"ge.device": "auto"})
    s.add_graph(1, mlp())
    assert s.graph_device(1) == "acl"
    s.add_graph(2, mlp(), {"ge.device": "cpu"})
    assert s.graph_device(2) == "cpu"
    with pytest.raises(ge.DeviceError, match=r"ge.exec.deviceId is 7, but ACL reports 1 device\(s\)"):
        Session({"ge.device": "acl", "ge.exec.deviceId": "7"})
    assert "MatMulV2" in ge._native._acl_op_types()


def test_without_acl_installed_acl_is_a_device_error_and_auto_uses_the_cpu(tmp_path):
    if os.path.exists("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"):
        pytest.skip("CANN is installed on this machine: nothing is missing")
    code = f"""
import ge
from ge.session import Session
try:
    Session({{"ge.device": "acl"}})
except ge.DeviceError as e:
    print("DeviceError:", e)
s = Session({{"ge.device": "auto"}})
from ge.es import GraphBuilder
from ge.es.all import Relu
b = GraphBuilder("g")
s.add_graph(1, b.build_and_reset([Relu(b.create_input(0, shape=[2]))]))
print("auto:", s.graph_device(1))
"""
    code = "import logging; logging.basicConfig(format='LOG %(name)s %(levelname)s %(message)s')\n" + code
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")}
    env["ASCEND_HOME_PATH"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    out, err = r.stdout, r.stderr
    assert "DeviceError: CreateSession failed; the ACL runtime was not found" in out, out
    assert str(tmp_path / "lib64") in out and "/usr/local/Ascend/ascend-toolkit/latest/lib64" in out, out
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in out, out
    assert "auto: cpu" in out, out
    assert "LOG ge.session WARNING ge.device=auto: running on the CPU, because ACL is not usable: the ACL runtime was not found" in err, err


def test_the_cli_runs_a_model_on_acl(acl, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [1, -1, 2, -2, 3, -3])])
    path = tmp_path / "m.onnx"
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    r = subprocess.run([sys.executable, "-m", "ge.cli", "run", str(path), "--device", "acl",
                        "--input", f"x={tmp_path / 'x.npy'}"],
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    # relu(ones @ w) = [[6, 0], [6, 0]]
    assert "float32 [2, 2]  min 0  max 6  mean 3" in r.stdout, r.stdout
    assert "[device acl, mode graph]" in r.stdout, r.stdout
