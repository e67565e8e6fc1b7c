"""The transformer models of benches/python/bench_models.py stay valid: each builder, at tiny sizes,
makes a model that onnx's checker accepts, that has the structure the benchmark claims (ops, the
tied LM head), and on which ge matches onnxruntime numerically; the causal and attention masks
do what they are for; and the benchmark's worker checks outputs before it times anything."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge.onnx  # noqa: E402
import ge.session  # noqa: E402

BENCHES = str(Path(__file__).resolve().parents[2] / "benches" / "python")
if BENCHES not in sys.path:
    sys.path.insert(0, BENCHES)

import bench_models  # noqa: E402
import models_transformer as mt  # noqa: E402

# Batch 2 so that the mask broadcasts and the class token's Expand are per sample; heads that do
# not divide evenly into a power of two, odd vocabularies.
TINY: Dict[str, Dict[str, int]] = {
    "bert": dict(vocab=97, seq=12, d=24, heads=3, ffn=40, layers=2, batch=2),
    "gpt": dict(vocab=53, seq=10, d=16, heads=2, ffn=32, layers=2, batch=2),
    "vit": dict(image=16, patch=4, d=16, heads=2, ffn=32, layers=2, classes=10, batch=2),
}
NEEDED = {
    "bert": {"Gather", "LayerNormalization", "Erf", "Softmax", "MatMul", "Cast", "Unsqueeze", "Tanh"},
    "gpt": {"Gather", "LayerNormalization", "Trilu", "Where", "Tanh", "Pow", "Softmax", "Transpose"},
    "vit": {"Conv", "Concat", "Expand", "Erf", "LayerNormalization", "Softmax", "Gather"},
}


def run_ge(model: Any, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
    sess = ge.session.Session({"ge.threads": "1"})
    sess.add_graph(1, ge.onnx.load(model.SerializeToString()))
    return [o.numpy() for o in sess.run_graph(1, [feeds[i.name] for i in model.graph.input])]


def run_ort(model: Any, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("name", sorted(TINY))
def test_builder_matches_onnxruntime(name: str) -> None:
    model, feeds = mt.build(name, TINY[name], seed=3)  # onnx.checker's full check inside
    assert NEEDED[name] <= {n.op_type for n in model.graph.node}
    want, got = run_ort(model, feeds), run_ge(model, feeds)
    assert len(got) == len(want) == len(model.graph.output)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        assert np.all(np.isfinite(w)) and float(np.std(w)) > 1e-3  # not a degenerate model
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5 * float(np.max(np.abs(w))))
    assert bench_models.matches(bench_models.compare(got, want))


def test_sizes_fit_their_builders() -> None:
    for name, by_size in mt.SIZES.items():
        for sizes in by_size.values():
            assert sizes["d"] % sizes["heads"] == 0
            if name == "vit":
                assert sizes["image"] % sizes["patch"] == 0
    assert set(mt.SIZES) == set(mt.BUILDERS) == set(bench_models.BUILT)


def test_gpt_is_causal_and_its_head_tied() -> None:
    model, feeds = mt.build("gpt", TINY["gpt"], seed=5)
    table = next(n.input[0] for n in model.graph.node if n.op_type == "Gather" and "tok" in n.name)
    head = next(n for n in model.graph.node if n.output[0] == "logits")
    transpose = next(n for n in model.graph.node if n.output[0] == head.input[1])
    assert transpose.op_type == "Transpose" and transpose.input[0] == table
    assert list(transpose.attribute[0].ints) == [1, 0]
    base = run_ge(model, feeds)[0]
    ids = feeds["input_ids"].copy()
    ids[:, -1] = (ids[:, -1] + 1) % TINY["gpt"]["vocab"]
    changed = run_ge(model, {"input_ids": ids})[0]
    np.testing.assert_allclose(changed[:, :-1], base[:, :-1], rtol=1e-5, atol=1e-6)  # the past ignores it
    assert float(np.max(np.abs(changed[:, -1] - base[:, -1]))) > 1e-3


def test_bert_mask_hides_padding() -> None:
    model, feeds = mt.build("bert", TINY["bert"], seed=7)
    mask = feeds["attention_mask"]
    assert mask.min() == 0 and mask.max() == 1
    base = run_ge(model, feeds)[0]
    ids = feeds["input_ids"].copy()
    ids[mask == 0] = (ids[mask == 0] + 1) % TINY["bert"]["vocab"]
    changed = run_ge(model, dict(feeds, input_ids=ids))[0]
    keep = mask == 1
    np.testing.assert_allclose(changed[keep], base[keep], rtol=1e-4, atol=1e-5)  # padding is not attended
    unmasked = run_ge(model, dict(feeds, attention_mask=np.ones_like(mask)))[0]
    assert float(np.max(np.abs(unmasked[keep] - base[keep]))) > 1e-3


def test_worker_checks_before_timing(tmp_path: Path) -> None:
    model, feeds = mt.build("vit", TINY["vit"], seed=11)
    path, inputs = str(tmp_path / "vit.onnx"), str(tmp_path / "inputs.npz")
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    spec = {"model": path, "input": inputs, "threads": 1, "repeat": 3, "warmup": 0, "budget": 0.0}
    ref = bench_models.worker(dict(spec, runtime="ort", out=str(tmp_path / "ort.npz"), reference=None))
    assert "error" not in ref and ref["repeats"] == 3 and ref["peak_mib"] >= ref["base_mib"] > 0
    good = bench_models.worker(dict(spec, runtime="ge", out=str(tmp_path / "ge.npz"),
                                    reference=str(tmp_path / "ort.npz")))
    assert "error" not in good and not good.get("mismatch") and good["repeats"] == 3
    assert good["error_vs_ref"]["max_rel"] <= bench_models.TOLERANCE
    # a reference 1% off: reported as a mismatch, and nothing is timed
    want = bench_models.load_outputs(str(tmp_path / "ort.npz"))
    np.savez(tmp_path / "off.npz", *[w * np.float32(1.01) for w in want])
    bad = bench_models.worker(dict(spec, runtime="ge", out=str(tmp_path / "ge2.npz"),
                                   reference=str(tmp_path / "off.npz")))
    assert bad["mismatch"] and "median_s" not in bad and bad["error_vs_ref"]["max_rel"] > 1e-3
    assert os.path.exists(tmp_path / "ge2.npz")


def test_worker_reports_a_failing_model(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="odd", domain="")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = str(tmp_path / "odd.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    r = bench_models.worker({"runtime": "ge", "model": path, "input": str(tmp_path / "x.npy"), "threads": 1,
                             "out": str(tmp_path / "o.npz"), "reference": None, "repeat": 3, "warmup": 0,
                             "budget": 0.0})
    assert "median_s" not in r and "NoSuchOp" in r["error_full"]


def test_cache_feeds_in_input_order(tmp_path: Path) -> None:
    path, inputs = bench_models.build_cached("bert", "quick", str(tmp_path))
    names = [i.name for i in onnx.load(path).graph.input]
    assert names == ["input_ids", "attention_mask", "token_type_ids"]
    assert list(bench_models.load_feeds(inputs)) == names  # ge and tract are fed by position
    mtime = os.path.getmtime(path)
    assert bench_models.build_cached("bert", "quick", str(tmp_path)) == (path, inputs)
    assert os.path.getmtime(path) == mtime  # reused, not rebuilt
