"""Real models beyond CNNs (issue 22, point 6), built by tests/onnx/real_models.py and run through
``ge.onnx.load`` and a Session (graph mode "on" and eager "off"), every output compared with
onnxruntime (CPU):

- a dynamic batch (symbolic ``N``): one ge graph, loaded once, run at batch 1, 8 and 1 in the same
  session;
- detection post-processes: per-class TopK + NonMaxSuppression + Gather in a Loop, and an If
  choosing the NMS score threshold;
- an int8/uint8-quantised CNN + MLP head (QDQ Conv, QLinearConv, QLinearMatMul,
  DynamicQuantizeLinear, MatMulInteger);
- a decoder step with past/present key/value, run twice feeding the presents back as pasts, as
  plain ops and as the opset-23 Attention operator.

Tolerances: float outputs within rtol 1e-5 / atol 1e-6 (the MLP, whose float sums ge and
onnxruntime order differently) and rtol 1e-4 / atol 1e-5 (the decoder: softmax over dot products,
two steps chained). Indices, classes and gathered boxes/scores of the detection models are
compared exactly (they are copies of input values). The quantised network is compared exactly
with onnxruntime without graph optimisations (which computes the ONNX definition: float Conv,
round half to even, the same as ge, so every quantised value, the int32 accumulator and the
float logits derived from them agree bit for bit); onnxruntime's default optimisation fuses
DequantizeLinear -> Conv -> Relu -> QuantizeLinear into a QLinearConv with fixed-point
requantisation, whose rounding differs on values near a half step, so against it the first
quantised tensor is checked within 1 quantisation step (and downstream values are not compared:
one step upstream moves them further).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge
import ge.onnx
import real_models as rm
from ge.session import Session
from onnx_harness import assert_outputs, graph_inputs

MODES = ["on", "off"]


class Ort:
    """An onnxruntime CPU session of model ``m`` (``optimized=False``: no graph optimisations)."""

    def __init__(self, m: Any, optimized: bool = True):
        so = ort.SessionOptions()
        if not optimized:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.names = graph_inputs(m)
        self.sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])

    def __call__(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self.sess.run(None, dict(zip(self.names, feeds)))


class Ge:
    """Model ``m`` loaded once by ``ge.onnx.load`` into one Session (``mode``: ge.graphMode)."""

    def __init__(self, m: Any, mode: str):
        onnx.checker.check_model(m, full_check=True)
        self.sess = Session({"ge.graphMode": mode})
        self.sess.add_graph(0, ge.onnx.load(m.SerializeToString()))

    def __call__(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(t.numpy()) for t in self.sess.run_graph(0, list(feeds))]


# ---------------------------------------------------------------------------------------------
# (a) dynamic batch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_batch_one_graph_runs_at_batch_1_and_8(mode):
    m = rm.dynamic_batch_mlp()
    assert [d.dim_param or d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == ["N", 3, 8, 8]
    ours, theirs = Ge(m, mode), Ort(m)
    rng = np.random.default_rng(1)
    for n in (1, 8, 1):
        x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
        got = ours([x])
        assert got[0].shape == (n, 10) and got[1].shape == (n, 32)
        assert_outputs(got, theirs([x]), 1e-5, 1e-6, what=f"batch {n}")


# ---------------------------------------------------------------------------------------------
# (b) detection post-process
# ---------------------------------------------------------------------------------------------


def detections(rng: np.random.Generator, n_boxes: int, n_classes: int):
    """Boxes (y1, x1, y2, x2) of side 0.2..0.4 in the unit square, so that many overlap, and
    distinct uniform scores."""
    lo = rng.uniform(0, 1, (1, n_boxes, 2)).astype(np.float32)
    boxes = np.concatenate([lo, lo + rng.uniform(0.2, 0.4, (1, n_boxes, 2)).astype(np.float32)], axis=-1)
    scores = rng.uniform(0, 1, (1, n_classes, n_boxes)).astype(np.float32)
    return boxes, scores


@pytest.mark.parametrize("mode", MODES)
def test_detection_per_class_nms_in_a_loop(mode):
    m = rm.detection_postprocess_loop(top_k=8, max_per_class=4, iou=0.5, score_threshold=0.2)
    ours, theirs = Ge(m, mode), Ort(m)
    rng = np.random.default_rng(2)
    for n_boxes, n_classes in ((30, 3), (6, 2), (40, 1)):
        boxes, scores = detections(rng, n_boxes, n_classes)
        want = theirs([boxes, scores])
        # The case is not trivial: some class keeps fewer than its TopK candidates.
        assert 0 < len(want[2]) < n_classes * min(8, n_boxes)
        assert_outputs(ours([boxes, scores]), want, 0, 0, what=(n_boxes, n_classes))
    # A class with no score above the threshold adds nothing; with none at all the outputs are empty.
    boxes, scores = detections(rng, 12, 3)
    scores[0, 1] *= 0.1
    for s, kept in ((scores, {0, 2}), (scores * 0.1, set())):
        want = theirs([boxes, s])
        assert set(want[2].tolist()) == kept
        assert_outputs(ours([boxes, s]), want, 0, 0, what=sorted(kept))


@pytest.mark.parametrize("mode", MODES)
def test_detection_if_chooses_the_score_threshold(mode):
    m = rm.detection_threshold_if(strict_threshold=0.6, loose_threshold=0.1, iou=0.45, keep=3)
    theirs = Ort(m)
    boxes, scores = detections(np.random.default_rng(3), 25, 1)
    want = {c: theirs([boxes, scores, np.array(c)]) for c in (True, False)}
    assert len(want[True][0]) < len(want[False][0])  # the branches differ on these inputs
    ours = Ge(m, mode)
    for c in (True, False):
        assert_outputs(ours([boxes, scores, np.array(c)]), want[c], 0, 0, what=f"strict={c}")


# ---------------------------------------------------------------------------------------------
# (c) int8-quantised network
# ---------------------------------------------------------------------------------------------


def quant_inputs() -> list[np.ndarray]:
    """Normal inputs at three scales, and one of halfway values (``(m + 0.5) * x_scale``, most of
    them exact ties in float32), where QuantizeLinear's round-half-to-even matters."""
    rng = np.random.default_rng(4)
    ties = ((rng.integers(-60, 60, (1, 2, 8, 8)) + 0.5) * np.float32(0.02)).astype(np.float32)
    return [rng.standard_normal((1, 2, 8, 8)).astype(np.float32) * s for s in (1.0, 0.5, 2.0)] + [ties]


@pytest.mark.parametrize("mode", MODES)
def test_quantized_network_equals_onnxruntime_exactly(mode):
    m = rm.quantized_cnn_mlp()
    ours, theirs = Ge(m, mode), Ort(m, optimized=False)
    names = [o.name for o in m.graph.output]
    for k, x in enumerate(quant_inputs()):
        want = theirs([x])
        got = ours([x])
        assert len(got) == len(want)
        for name, g, w in zip(names, got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (k, name, g.dtype, g.shape, w.dtype, w.shape)
            np.testing.assert_array_equal(g, w, err_msg=f"input {k}: {name}")
        # Quantisation bites: the uint8 tensors use more than a handful of levels.
        assert all(len(np.unique(want[names.index(n)])) > 8 for n in ("q1", "q2", "q3", "dq"))


def test_quantized_qdq_conv_within_one_step_of_fused_onnxruntime():
    m = rm.quantized_cnn_mlp()
    ours, theirs = Ge(m, "on"), Ort(m, optimized=True)
    q1 = [o.name for o in m.graph.output].index("q1")
    for x in quant_inputs():
        got, want = ours([x])[q1], theirs([x])[q1]
        assert got.dtype == want.dtype == np.uint8 and got.shape == want.shape
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1


# ---------------------------------------------------------------------------------------------
# (d) decoder step with past key/value
# ---------------------------------------------------------------------------------------------


def decoder_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    d, h, hd = rm.DECODER_DIMS["d_model"], rm.DECODER_DIMS["heads"], rm.DECODER_DIMS["head_dim"]
    return {"x1": rng.standard_normal((2, 2, d)).astype(np.float32),        # step 1: 2 new positions
            "past_key": rng.standard_normal((2, h, 3, hd)).astype(np.float32),
            "past_value": rng.standard_normal((2, h, 3, hd)).astype(np.float32),
            "x2": rng.standard_normal((2, 1, d)).astype(np.float32)}        # step 2: 1 new position


def two_steps(step1: Any, step2: Any, f: dict[str, np.ndarray]) -> list[list[np.ndarray]]:
    """Runs step 1 on the pasts, step 2 on its presents."""
    first = step1([f["x1"], f["past_key"], f["past_value"]])
    second = step2([f["x2"], first[1], first[2]])
    return [first, second]


def check_two_steps(got: list[list[np.ndarray]], want: list[list[np.ndarray]], present: tuple = (2, 6)) -> None:
    """Both steps' outputs within tolerance; the last present key of (batch, length) ``present``."""
    for step, (g, w) in enumerate(zip(got, want)):
        assert_outputs(g, w, 1e-4, 1e-5, what=f"step {step + 1}")
    b, t = present
    assert want[1][1].shape == (b, rm.DECODER_DIMS["heads"], t, rm.DECODER_DIMS["head_dim"])


@pytest.mark.parametrize("mode", MODES)
def test_decoder_step_feeds_presents_back_as_pasts(mode):
    m = rm.decoder_step()
    ours, theirs = Ge(m, mode), Ort(m)
    check_two_steps(two_steps(ours, ours, decoder_feeds()), two_steps(theirs, theirs, decoder_feeds()))
    # The same session: generation from an empty cache at batch 1 (a 4-position prompt, then 1).
    rng = np.random.default_rng(6)
    h, hd = rm.DECODER_DIMS["heads"], rm.DECODER_DIMS["head_dim"]
    empty = np.zeros((1, h, 0, hd), np.float32)
    f = {"x1": rng.standard_normal((1, 4, rm.DECODER_DIMS["d_model"])).astype(np.float32), "past_key": empty,
         "past_value": empty, "x2": rng.standard_normal((1, 1, rm.DECODER_DIMS["d_model"])).astype(np.float32)}
    check_two_steps(two_steps(ours, ours, f), two_steps(theirs, theirs, f), present=(1, 5))


@pytest.mark.parametrize("mode", MODES)
def test_attention_op_decoder_step_with_symbolic_lengths(mode):
    m = rm.attention_decoder_step()
    theirs = Ort(m)
    want = two_steps(theirs, theirs, decoder_feeds())
    ours = Ge(m, mode)
    check_two_steps(two_steps(ours, ours, decoder_feeds()), want)


@pytest.mark.parametrize("mode", MODES)
def test_attention_op_decoder_step_with_static_lengths(mode):
    # One model per step (B, S, P fixed): what the translator supports today.
    m1, m2 = rm.attention_decoder_step(dims=(2, 2, 3)), rm.attention_decoder_step(dims=(2, 1, 5))
    f = decoder_feeds()
    want = two_steps(Ort(m1), Ort(m2), f)
    check_two_steps(two_steps(Ge(m1, mode), Ge(m2, mode), f), want)
    # The Attention operator and the plain-op decoder are the same function of the same weights.
    plain = Ort(rm.decoder_step())
    check_two_steps(want, two_steps(plain, plain, f))
