"""The model commands of the ``ge`` console script: convert, run, show."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def ge_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ge.cli", *map(str, args)], capture_output=True, text=True,
                          check=False, cwd=cwd)


@pytest.fixture
def model(tmp_path):
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
                 helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], initializer=[w])
    p = tmp_path / "tiny.onnx"
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    return p


def test_show_lists_inputs_outputs_parameters_and_ops(model):
    r = ge_cli("show", model)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "graph 'tiny'" in out
    assert "0: x  float [2, 3, 4]" in out and "1: b  float [3, 4]" in out
    assert "parameters: 1 constants, 12 elements" in out
    assert "Relu" in out and "Add" in out


def test_run_with_given_and_random_inputs(model, tmp_path):
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    np.save(tmp_path / "x.npy", x)
    b = np.full((3, 4), 0.25, np.float32)
    np.save(tmp_path / "b.npy", b)
    r = ge_cli("run", model, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"b={tmp_path / 'b.npy'}",
               "--repeat", "3", "--save-outputs", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "output 0: float32 [2, 3, 4]" in r.stdout and "3 timed run(s)" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"), np.maximum(x + b, 0))
    for mode in ("eager", "graph"):
        r = ge_cli("run", model, "--mode", mode, "--threads", "1")
        assert r.returncode == 0 and f"mode {mode}" in r.stdout, r.stderr


def test_run_errors(model, tmp_path):
    r = ge_cli("run", model, "--input", f"nope={tmp_path / 'x.npy'}")
    assert r.returncode == 1 and "ge: --input" in r.stderr
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    r = ge_cli("run", model, "--input", f"nope={tmp_path / 'x.npy'}")
    assert r.returncode == 1 and "has no input 'nope'" in r.stderr
    r = ge_cli("run", tmp_path / "missing.onnx")
    assert r.returncode == 1 and "no such file" in r.stderr
    r = ge_cli("run", model, "--repeat", "0")
    assert r.returncode == 1 and "--repeat" in r.stderr
    r = ge_cli("run", model, "--device", "acl")
    assert r.returncode == 1 and "ge:" in r.stderr


def test_run_needs_inputs_of_unknown_shape(tmp_path):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "dyn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    p = tmp_path / "dyn.onnx"
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    r = ge_cli("run", p)
    assert r.returncode == 1 and "give it with --input x=FILE.npy" in r.stderr


def test_convert_to_native_and_back(model, tmp_path):
    out = tmp_path / "tiny.ge"
    r = ge_cli("convert", model, "-o", out)
    assert r.returncode == 0 and "(5 nodes)" in r.stdout, r.stderr + r.stdout
    r = ge_cli("show", out)
    assert r.returncode == 0 and "graph 'tiny'" in r.stdout


def test_unsupported_ops_in_convert_and_opaque(tmp_path):
    g = helper.make_graph([helper.make_node("Mystery", ["x"], ["y"], domain="x.y")], "m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    p = tmp_path / "m.onnx"
    onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("x.y", 1)]), p)
    r = ge_cli("convert", p, "-o", tmp_path / "m.ge")
    assert r.returncode == 1 and "x.y::Mystery" in r.stderr
    r = ge_cli("convert", p, "-o", tmp_path / "m.ge", "--unsupported", "opaque")
    assert r.returncode == 0, r.stderr
    r = ge_cli("show", p)  # show keeps unsupported ops as opaque nodes
    assert r.returncode == 0 and "x.y::Mystery" in r.stdout


def test_svg_drawing(model, tmp_path):
    import ge.onnx
    from ge._model_cli import dot_text

    text = dot_text(ge.onnx.load(model))
    assert text.startswith("digraph G {") and "Relu" in text and "->" in text
    r = ge_cli("show", model, "--svg", tmp_path / "g.svg")
    if shutil.which("dot") is None:
        assert r.returncode == 1 and "graphviz" in r.stderr
    else:
        assert r.returncode == 0 and (tmp_path / "g.svg").read_text().lstrip().startswith("<")
