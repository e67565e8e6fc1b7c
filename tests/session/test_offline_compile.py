"""``ge.offline_compile`` (GE's offline build API), ge-rs's ``.om`` file, ``Session.add_model``,
``ge compile`` / ``ge run MODEL.om`` and ``python -m ge.pyatc``."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ge.pyatc.__main__ as pyatc_main
from ge.error import GeError
from ge.errors import ShapeInferenceError
from ge.es import GraphBuilder
from ge.es.all import Add, MatMulV2, Relu
from ge.graph import Graph
from ge.offline_compile import (
    GraphWithOptions,
    ModelBuffer,
    ModelFileError,
    build_finalize,
    build_initialize,
    build_model,
    bundle_build_model,
    bundle_save_model,
    load_model,
    save_model,
)
from ge.session import Session
from common import assert_refuses_copy

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def mlp(shape=(2, 4), name="mlp") -> Graph:
    """relu(x @ W + (1 + 1)): the constant add folds at compile."""
    b = GraphBuilder(name)
    x = b.create_input(0, shape=list(shape))
    w = b.create_const_float(W.ravel().tolist(), [4, 3])
    one = b.create_const_float([1.0] * 3, [3])
    y = Relu(MatMulV2(x, w) + Add(one, one))
    return b.build_and_reset([y])


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W + 2.0, 0)


@pytest.fixture
def built():
    build_initialize({"soc_version": "Ascend910B1"})
    yield
    build_finalize()


@pytest.fixture
def model(built) -> ModelBuffer:
    return build_model(mlp(), {"input_format": "ND"})


# -- GE's argument checks ----------------------------------------------------------------------


def test_graph_with_options_checks():
    g = Graph("g")
    assert GraphWithOptions(g).build_options == {}
    assert GraphWithOptions(g, None).build_options == {}
    assert GraphWithOptions(g, {"k": "v"}).graph is g
    with pytest.raises(TypeError, match="graph must be a Graph"):
        GraphWithOptions("g", {})
    with pytest.raises(TypeError, match="build_options must be a dictionary"):
        GraphWithOptions(g, "bad")
    for bad in ({1: "v"}, {"k": 1}):
        with pytest.raises(TypeError, match="build_options keys and values must be strings"):
            GraphWithOptions(g, bad)


def test_model_buffer_is_not_constructible_nor_copyable(model):
    with pytest.raises(RuntimeError, match="ModelBuffer objects should not be created directly"):
        ModelBuffer()
    with pytest.raises(ValueError, match="Failed to create ModelBuffer"):
        ModelBuffer._create_from(None)
    assert_refuses_copy(model, "ModelBuffer")
    assert model.length == model.get_length() == len(model.to_bytes()) > 0


@pytest.mark.parametrize("bad", ["bad", [1, 2]])
def test_build_initialize_checks(bad):
    with pytest.raises(TypeError, match="global_options must be a dictionary"):
        build_initialize(bad)
    for opts in ({1: "v"}, {"k": 2}):
        with pytest.raises(TypeError, match="global_options keys and values must be strings"):
            build_initialize(opts)


def test_build_model_checks(built):
    for bad in ("not_a_graph", 123):
        with pytest.raises(TypeError, match="graph must be a Graph"):
            build_model(bad)
    with pytest.raises(TypeError, match="build_options must be a dictionary"):
        build_model(Graph("g"), "bad")
    for opts in ({1: "v"}, {"k": 1}):
        with pytest.raises(TypeError, match="build_options keys and values must be strings"):
            build_model(Graph("g"), opts)


@pytest.mark.parametrize("save", [save_model, bundle_save_model])
def test_save_checks(model, save):
    for bad in (123, ["out.om"], None):
        with pytest.raises(TypeError, match="output_file must be a string"):
            save(bad, model)
    for bad in ("not_model", None, 42):
        with pytest.raises(TypeError, match="model must be a ModelBuffer"):
            save("out.om", bad)


def test_bundle_build_checks(built):
    for bad in ("bad", {}):
        with pytest.raises(TypeError, match="graph_with_options must be a list"):
            bundle_build_model(bad)
    for few in ([], [GraphWithOptions(mlp(), {"input_format": "ND"})]):
        with pytest.raises(ValueError, match="graph_with_options size must be larger than 1"):
            bundle_build_model(few)
    for bad in ([Graph("g"), {}], ["bad", {}]):
        with pytest.raises(TypeError, match="Each item in graph_with_options must be a GraphWithOptions"):
            bundle_build_model(bad)


def test_build_needs_build_initialize():
    build_finalize()
    with pytest.raises(GeError, match=r"^BuildModel failed; build_initialize\(\) has not been called") as e:
        build_model(mlp())
    assert e.value.api_name == "BuildModel"


# -- compiling, saving, loading, running -------------------------------------------------------


def test_build_save_load_run(model, tmp_path):
    save_model(str(tmp_path / "mlp"), model)
    path = tmp_path / "mlp.om"
    assert path.read_bytes() == model.to_bytes()
    m = load_model(path)
    assert m.length == model.length and m.graph_count == 1
    manifest = m.manifest()
    assert manifest["format_version"] == 1 and manifest["soc_version"] == "Ascend910B1"
    (g,) = manifest["graphs"]
    assert g["name"] == "mlp" and g["options"] == {"input_format": "ND"} and g["outputs"] == 1
    assert g["inputs"][0]["dims"] == [2, 4]
    # The stored graph is the compiled one: the Add of two constants was folded away.
    adds = lambda g: sum(n.type == "Add" for n in g.get_all_nodes())  # noqa: E731
    assert (adds(mlp()), adds(m.graph())) == (2, 1)
    s = Session()
    assert s.add_model(7, str(path)) == 0
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    (y,) = s.run_graph(7, [x])
    np.testing.assert_allclose(y.numpy(), expected(x), rtol=1e-6)
    # Its compile only planned it: no pass, inference or optimisation stage.
    report = s.compile_report(7)
    assert "Plan" in report and "InferShape" not in report and "BuiltinOptimize" not in report
    s.add_model(8, m)
    np.testing.assert_allclose(s.run_graph(8, [x])[0].numpy(), expected(x), rtol=1e-6)


def test_save_model_adds_om_suffix_once(model, tmp_path):
    save_model(str(tmp_path / "a.om"), model)
    assert (tmp_path / "a.om").is_file() and not (tmp_path / "a.om.om").exists()


def test_save_to_unwritable_path_is_ge_error(model, tmp_path):
    with pytest.raises(GeError, match=r"^SaveModel failed; output_file=.*cannot write"):
        save_model(str(tmp_path / "missing_dir" / "m"), model)


def test_loaded_model_refuses_other_shapes(model):
    s = Session()
    s.add_model(1, model)
    with pytest.raises(ValueError, match=r"compiled offline for inputs DT_FLOAT\[2, 4\], "
                                         r"the run gave DT_FLOAT\[3, 4\]"):
        s.run_graph(1, [np.zeros((3, 4), np.float32)])


def test_unknown_dims_need_input_shape(built):
    g = mlp(shape=(-1, 4))
    with pytest.raises(GeError,
                       match=r"BuildModel failed; not supported: input .* has shape \[-1, 4\].*input_shape"):
        build_model(g)
    m = build_model(g, {"input_shape": "input_0:3,4"})
    assert m.manifest()["graphs"][0]["inputs"][0]["dims"] == [3, 4]
    s = Session()
    s.add_model(0, m)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(s.run_graph(0, [x])[0].numpy(), expected(x), rtol=1e-6)


@pytest.mark.parametrize("shape, message", [
    ("nope:1,4", "input_shape names 'nope', which is not an input"),
    ("input_0:a,4", "has a dim that is not an integer"),
    ("input_0:-1,4", "not supported: input_shape .* unknown dim"),
    ("1,4", "is not NAME:DIM"),
])
def test_bad_input_shape(built, shape, message):
    with pytest.raises(GeError, match=message):
        build_model(mlp(shape=(-1, 4)), {"input_shape": shape})


def test_graph_that_cannot_compile_is_build_error(built):
    b = GraphBuilder("bad")
    x = b.create_input(0, shape=[-1, -1])
    y = b.create_input(1, shape=[-1, -1])
    g = b.build_and_reset([Add(x, y)])
    with pytest.raises(ShapeInferenceError, match="^BuildModel failed; shape inference"):
        build_model(g, {"input_shape": "input_0:2,4;input_1:3,5"})


def test_bundle_build_save_and_run_each_graph(built, tmp_path):
    m = bundle_build_model([GraphWithOptions(mlp(name="a")), GraphWithOptions(mlp((5, 4), name="b"))])
    assert m.graph_count == 2
    with pytest.raises(GeError,
                       match="SaveModel failed; output_file=x; the model holds 2 graph.*bundle_save_model"):
        save_model("x", m)
    bundle_save_model(str(tmp_path / "bundle"), m)
    s = Session()
    s.add_model(0, tmp_path / "bundle.om", index=0)
    s.add_model(1, tmp_path / "bundle.om", index=1)
    for gid, n in ((0, 2), (1, 5)):
        x = np.ones((n, 4), np.float32)
        np.testing.assert_allclose(s.run_graph(gid, [x])[0].numpy(), expected(x), rtol=1e-6)
    with pytest.raises(ValueError, match="the model has 2 graph"):
        s.add_model(2, m, index=2)


def test_bundle_save_of_single_model_is_error(model):
    with pytest.raises(GeError, match="BundleSaveModel failed.*holds 1 graph.*save_model"):
        bundle_save_model("x", model)


def test_add_model_checks(model):
    s = Session()
    with pytest.raises(TypeError, match="model must be a ModelBuffer"):
        s.add_model(0, 3)
    with pytest.raises(TypeError, match="Graph_id must be an integer"):
        s.add_model("0", model)
    s.add_model(0, model)
    with pytest.raises(ValueError, match="already in the session"):
        s.add_model(0, model)


def test_add_model_options_warn_at_the_callers_line(model):
    s = Session()
    with pytest.warns(UserWarning, match="did you mean 'ge.threads'") as w:
        assert s.add_model(0, model, {"ge.thread": "2"}) == 0
    assert w[0].filename == __file__
    s.run_graph(0, [np.zeros((2, 4), np.float32)])
    assert "unknown options ignored: ge.thread=2" in s.compile_report(0)


# -- damaged files -----------------------------------------------------------------------------


def _load_error(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as e:
        load_model(path)
    assert isinstance(e.value, GeError) and e.value.api_name == "LoadModel"
    assert str(path) in str(e.value)
    return str(e.value)


def test_damaged_files_are_model_file_errors(model, tmp_path):
    data = model.to_bytes()
    p = tmp_path / "m.om"
    assert "bad magic" in _load_error(p, b"PK\x03\x04 not a model")
    assert "truncated" in _load_error(p, data[:10])
    assert "truncated" in _load_error(p, data[:40])
    assert "truncated" in _load_error(p, data[:-3])
    assert "bytes after the last graph" in _load_error(p, data + b"\0")
    assert "format version 2" in _load_error(p, data[:8] + struct.pack("<I", 2) + data[12:])
    with pytest.raises(ModelFileError, match="cannot read"):
        load_model(tmp_path / "absent.om")
    with pytest.raises(ModelFileError):
        Session().add_model(0, str(tmp_path / "absent.om"))


def test_every_truncation_and_byte_flip_is_an_error_not_a_crash(model, tmp_path):
    data = model.to_bytes()
    p = tmp_path / "m.om"
    for n in range(0, len(data), max(1, len(data) // 200)):
        _load_error(p, data[:n])
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(data), 200):
        b = bytearray(data)
        b[i] ^= 0xA5
        p.write_bytes(bytes(b))
        try:
            load_model(p)
        except ModelFileError:
            pass


# -- ge compile, ge run MODEL.om, python -m ge.pyatc -------------------------------------------


def ge_cli(*args):
    return subprocess.run([sys.executable, "-m", "ge.cli", *map(str, args)], capture_output=True, text=True,
                          check=False)


@pytest.fixture
def onnx_model(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(W, "w")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], initializer=[w])
    p = tmp_path / "tiny.onnx"
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    return p


def test_ge_compile_then_run_om(onnx_model, tmp_path):
    out = tmp_path / "tiny"
    r = ge_cli("compile", f"--model={onnx_model}", "--framework=5", f"--output={out}", "--input_shape=x:2,4",
               "--soc_version=Ascend910")
    assert r.returncode == 0, r.stderr
    assert "tiny.om" in r.stdout
    m = load_model(f"{out}.om")
    assert m.manifest()["soc_version"] == "Ascend910"
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.save(tmp_path / "x.npy", x)
    r = ge_cli("run", f"{out}.om", "--input", f"x={tmp_path / 'x.npy'}", "--save-outputs", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "planning the compiled model" in r.stdout
    np.testing.assert_allclose(np.load(tmp_path / "o" / "output_0.npy"), np.maximum(x @ W, 0), rtol=1e-6)
    r = ge_cli("show", f"{out}.om")
    assert r.returncode == 0 and "MatMul" in r.stdout, r.stderr
    np.save(tmp_path / "x3.npy", np.zeros((3, 4), np.float32))
    r = ge_cli("run", f"{out}.om", "--input", f"x={tmp_path / 'x3.npy'}")
    assert r.returncode == 1
    assert "compiled offline for inputs DT_FLOAT[2, 4], the run gave DT_FLOAT[3, 4]" in r.stderr
    r = ge_cli("run", f"{out}.om", "--graph", "1")
    assert r.returncode == 1 and "--graph 1: the model has 1 graph(s)" in r.stderr


def test_ge_compile_errors(onnx_model, tmp_path):
    r = ge_cli("compile", f"--model={onnx_model}", "--framework=3", f"--output={tmp_path / 'o'}")
    assert r.returncode == 1 and "not supported: --framework=3 (TensorFlow)" in r.stderr
    r = ge_cli("compile", f"--model={onnx_model}", "--framework=5", f"--output={tmp_path / 'o'}")
    assert r.returncode == 1 and "input_shape" in r.stderr
    r = ge_cli("compile", f"--model={tmp_path / 'nope.onnx'}", f"--output={tmp_path / 'o'}")
    assert r.returncode == 1 and "no such file" in r.stderr
    (tmp_path / "bad.om").write_bytes(b"garbage")
    r = ge_cli("run", tmp_path / "bad.om")
    assert r.returncode == 1 and "bad magic" in r.stderr


def test_pyatc_maps_onto_ge_compile(onnx_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/pkg/ge/pyatc/__main__.py", f"--model={onnx_model}", "--framework=5",
                                      f"--output={tmp_path / 'p'}", "--input_shape=x:1,4"])
    with pytest.raises(SystemExit) as e:
        pyatc_main.main()
    assert e.value.code == 0
    assert (tmp_path / "p.om").is_file()
    with pytest.raises(SystemExit) as e:
        pyatc_main.main("/opt/bin/pyatc", ["--help"])
    assert e.value.code == 0 and "--input_shape" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        pyatc_main.main("/opt/bin/pyatc",
                        [f"--model={onnx_model}", "--framework=0", f"--output={tmp_path / 'q'}"])
    assert e.value.code == 1
    r = subprocess.run([sys.executable, "-m", "ge.pyatc", "--bogus"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 2 and "-m ge.pyatc" in r.stderr


def test_example_compiles_loads_and_runs(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "offline_compile" / "compile_and_run.py"
    r = subprocess.run([sys.executable, str(example), str(tmp_path)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mlp.om").is_file() and "outputs agree" in r.stdout
