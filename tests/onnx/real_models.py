"""Builders of the "real models beyond CNNs" that tests/onnx/test_real_models.py runs through ge
and onnxruntime (issue 22, point 6). Each builder returns an ``onnx.ModelProto`` made with
``onnx.helper``, weights drawn from a seeded numpy generator, written the way an exporter or a
user writes such a model (no rewriting to suit ge):

- ``dynamic_batch_mlp``: an MLP/LayerNorm/Softmax classifier over images ``[N, 3, 8, 8]`` with a
  symbolic batch ``N``, flattened by the exporter's Shape -> Gather -> Unsqueeze -> Concat ->
  Reshape chain;
- ``detection_postprocess_loop``: per-class TopK + NonMaxSuppression + Gather in a Loop over the
  classes, the kept boxes, scores and classes accumulated by Concat in loop-carried values;
- ``detection_threshold_if``: an If that chooses the score threshold of a NonMaxSuppression
  (strict or loose) from a bool input, then TopK/Gather on the kept detections;
- ``quantized_cnn_mlp``: an int8/uint8 network: QuantizeLinear/DequantizeLinear around a Conv
  (QDQ form, per-channel int8 weights), QLinearConv, QLinearMatMul, DynamicQuantizeLinear and
  MatMulInteger (a small CNN and an MLP head);
- ``decoder_step``: one decoder layer step with ``past_key``/``past_value`` inputs and
  ``present_key``/``present_value`` outputs (Concat along the sequence axis, attention over past
  and new positions with a causal mask for the new ones, symbolic batch/past/new lengths);
- ``attention_decoder_step``: the same step written with the opset-23 ``Attention`` operator and
  its ``past_key``/``past_value`` inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
U8 = TensorProto.UINT8
I8 = TensorProto.INT8
BOOL = TensorProto.BOOL


def _vi(name: str, dtype: int, shape: Sequence[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def _init(name: str, a: Any) -> Any:
    return numpy_helper.from_array(np.asarray(a), name)


def _i64(name: str, values: Sequence[int]) -> Any:
    return _init(name, np.asarray(values, np.int64))


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], opset: int,
           name: str) -> Any:
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9 if opset < 21 else 10,
                          producer_name="ge-rs tests/onnx/real_models.py")
    return m


def _weights(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# (a) dynamic batch
# ---------------------------------------------------------------------------------------------


def dynamic_batch_mlp(seed: int = 0) -> Any:
    """Input ``x: [N, 3, 8, 8]`` (N symbolic); outputs ``probs: [N, 10]`` (Softmax) and
    ``feat: [N, 32]`` (the LayerNorm'd hidden layer)."""
    rng = np.random.default_rng(seed)
    nodes = [
        # Flatten as exporters write it: Reshape to [N, -1] with N read from the input's shape.
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h1b"]),
        helper.make_node("Relu", ["h1b"], ["h1r"]),
        helper.make_node("LayerNormalization", ["h1r", "ln_g", "ln_b"], ["feat"], axis=-1, epsilon=1e-5),
        helper.make_node("Gemm", ["feat", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    inits = [
        _init("zero", np.array(0, np.int64)), _i64("axes0", [0]), _i64("minus1", [-1]),
        _init("w1", _weights(rng, 192, 32, scale=0.1)), _init("b1", _weights(rng, 32)),
        _init("ln_g", 1.0 + _weights(rng, 32, scale=0.1)), _init("ln_b", _weights(rng, 32, scale=0.1)),
        _init("w2", _weights(rng, 10, 32)), _init("b2", _weights(rng, 10)),
    ]
    return _model(nodes, [_vi("x", F, ["N", 3, 8, 8])], [_vi("probs", F, ["N", 10]), _vi("feat", F, ["N", 32])],
                  inits, 17, "dynamic_batch_mlp")


# ---------------------------------------------------------------------------------------------
# (b) detection post-process
# ---------------------------------------------------------------------------------------------


def detection_postprocess_loop(top_k: int = 8, max_per_class: int = 4, iou: float = 0.5,
                               score_threshold: float = 0.2) -> Any:
    """Inputs ``boxes: [1, B, 4]`` (y1, x1, y2, x2) and ``scores: [1, C, B]`` (B, C symbolic).
    A Loop over the C classes: TopK of the class's scores, NonMaxSuppression over those
    candidates, Gather of the kept ones back to box indices, boxes and scores; the kept boxes
    ``[K, 4]``, scores ``[K]`` and classes ``[K]`` (int64) of all classes are concatenated in
    loop-carried values."""
    body_nodes = [
        helper.make_node("Gather", ["scores", "c"], ["cls_scores"], axis=1),            # [1, B]
        helper.make_node("Shape", ["cls_scores"], ["cs_shape"]),
        helper.make_node("Gather", ["cs_shape", "one"], ["nb"], axis=0),                # B
        helper.make_node("Unsqueeze", ["nb", "axes0"], ["nb1"]),
        helper.make_node("Concat", ["nb1", "k_max"], ["k_pair"], axis=0),
        helper.make_node("ReduceMin", ["k_pair"], ["k"], keepdims=1),                   # [1]: min(B, top_k)
        helper.make_node("TopK", ["cls_scores", "k"], ["top_scores", "top_idx"], axis=1),  # [1, k]
        helper.make_node("Squeeze", ["top_idx", "axes0"], ["cand"]),                    # [k]
        helper.make_node("Gather", ["boxes", "cand"], ["cand_boxes"], axis=1),          # [1, k, 4]
        helper.make_node("Unsqueeze", ["top_scores", "axes0"], ["cand_scores"]),        # [1, 1, k]
        helper.make_node("NonMaxSuppression", ["cand_boxes", "cand_scores", "max_out", "iou", "thr"],
                         ["selected"]),                                                  # [S, 3]
        helper.make_node("Gather", ["selected", "two"], ["sel_k"], axis=1),             # [S]
        helper.make_node("Gather", ["cand", "sel_k"], ["kept"], axis=0),                # [S] box indices
        helper.make_node("Squeeze", ["boxes", "axes0"], ["boxes2"]),                    # [B, 4]
        helper.make_node("Gather", ["boxes2", "kept"], ["kept_boxes"], axis=0),         # [S, 4]
        helper.make_node("Squeeze", ["cls_scores", "axes0"], ["cls1"]),                 # [B]
        helper.make_node("Gather", ["cls1", "kept"], ["kept_scores"], axis=0),          # [S]
        helper.make_node("Shape", ["kept"], ["s_shape"]),
        helper.make_node("Expand", ["c", "s_shape"], ["kept_cls"]),                     # [S]
        helper.make_node("Concat", ["acc_boxes", "kept_boxes"], ["acc_boxes_out"], axis=0),
        helper.make_node("Concat", ["acc_scores", "kept_scores"], ["acc_scores_out"], axis=0),
        helper.make_node("Concat", ["acc_cls", "kept_cls"], ["acc_cls_out"], axis=0),
        helper.make_node("Identity", ["cond"], ["cond_out"]),
    ]
    body = helper.make_graph(
        body_nodes, "per_class",
        [_vi("c", I64, []), _vi("cond", BOOL, []), _vi("acc_boxes", F, ["K", 4]), _vi("acc_scores", F, ["K"]),
         _vi("acc_cls", I64, ["K"])],
        [_vi("cond_out", BOOL, []), _vi("acc_boxes_out", F, ["K2", 4]), _vi("acc_scores_out", F, ["K2"]),
         _vi("acc_cls_out", I64, ["K2"])],
    )
    nodes = [
        helper.make_node("Shape", ["scores"], ["sc_shape"]),
        helper.make_node("Gather", ["sc_shape", "one"], ["n_cls"], axis=0),            # C (scalar)
        helper.make_node("Loop", ["n_cls", "true", "boxes0", "scores0", "cls0"],
                         ["det_boxes", "det_scores", "det_classes"], body=body),
    ]
    inits = [
        _init("one", np.array(1, np.int64)), _init("two", np.array(2, np.int64)), _i64("axes0", [0]),
        _i64("k_max", [top_k]), _init("true", np.array(True)),
        _init("max_out", np.array([max_per_class], np.int64)), _init("iou", np.array([iou], np.float32)),
        _init("thr", np.array([score_threshold], np.float32)),
        _init("boxes0", np.zeros((0, 4), np.float32)), _init("scores0", np.zeros((0,), np.float32)),
        _init("cls0", np.zeros((0,), np.int64)),
    ]
    return _model(nodes, [_vi("boxes", F, [1, "B", 4]), _vi("scores", F, [1, "C", "B"])],
                  [_vi("det_boxes", F, ["K", 4]), _vi("det_scores", F, ["K"]), _vi("det_classes", I64, ["K"])],
                  inits, 17, "detection_postprocess_loop")


def detection_threshold_if(strict_threshold: float = 0.6, loose_threshold: float = 0.1, iou: float = 0.45,
                           keep: int = 3) -> Any:
    """Inputs ``boxes: [1, B, 4]``, ``scores: [1, 1, B]``, ``strict: bool[]``. An If runs
    NonMaxSuppression with the strict or the loose score threshold (each branch its own
    constant); TopK (k = min(keep, kept)) takes the best kept boxes by score, Gather their boxes.
    Outputs the NMS result ``selected [S, 3]``, ``top_scores [k]`` and ``top_boxes [k, 4]``."""

    def branch(name: str, thr: float) -> Any:
        return helper.make_graph(
            [helper.make_node("Constant", [], [f"{name}_thr"], value=numpy_helper.from_array(
                np.array([thr], np.float32), f"{name}_thr_v")),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", f"{name}_thr"],
                              [f"{name}_sel"])],
            name, [], [_vi(f"{name}_sel", I64, ["S", 3])])

    nodes = [
        helper.make_node("If", ["strict"], ["selected"], then_branch=branch("strict_nms", strict_threshold),
                         else_branch=branch("loose_nms", loose_threshold)),
        helper.make_node("Gather", ["selected", "two"], ["kept"], axis=1),              # [S]
        helper.make_node("Squeeze", ["scores", "axes01"], ["scores1"]),                 # [B]
        helper.make_node("Gather", ["scores1", "kept"], ["kept_scores"], axis=0),       # [S]
        helper.make_node("Shape", ["kept_scores"], ["n_kept"]),
        helper.make_node("Concat", ["n_kept", "keep"], ["k_pair"], axis=0),
        helper.make_node("ReduceMin", ["k_pair"], ["k"], keepdims=1),
        helper.make_node("TopK", ["kept_scores", "k"], ["top_scores", "top_pos"], axis=0),
        helper.make_node("Gather", ["kept", "top_pos"], ["top_idx"], axis=0),
        helper.make_node("Squeeze", ["boxes", "axes0"], ["boxes2"]),
        helper.make_node("Gather", ["boxes2", "top_idx"], ["top_boxes"], axis=0),
    ]
    inits = [
        _init("two", np.array(2, np.int64)), _i64("axes0", [0]), _i64("axes01", [0, 1]), _i64("keep", [keep]),
        _init("max_out", np.array([50], np.int64)), _init("iou", np.array([iou], np.float32)),
    ]
    return _model(nodes, [_vi("boxes", F, [1, "B", 4]), _vi("scores", F, [1, 1, "B"]), _vi("strict", BOOL, [])],
                  [_vi("selected", I64, ["S", 3]), _vi("top_scores", F, ["k"]), _vi("top_boxes", F, ["k", 4])],
                  inits, 17, "detection_threshold_if")


# ---------------------------------------------------------------------------------------------
# (c) int8-quantised CNN + MLP head
# ---------------------------------------------------------------------------------------------


def _quant(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int = 0) -> np.ndarray:
    """Round-half-to-even quantisation (per tensor, or per channel along ``axis``)."""
    shape = [1] * x.ndim
    if np.ndim(scale):
        shape[axis] = -1
    s = np.reshape(scale, shape)
    z = np.reshape(zp, shape).astype(np.int32)
    info = np.iinfo(zp.dtype)
    return np.clip(np.rint(x / s) + z, info.min, info.max).astype(zp.dtype)


def quantized_cnn_mlp(seed: int = 0) -> Any:
    """Input ``x: [1, 2, 8, 8]`` float. QuantizeLinear (uint8) -> DequantizeLinear -> Conv with
    DequantizeLinear'd per-channel int8 weights (the QDQ form) -> Relu -> QuantizeLinear
    (``q1``, uint8) -> QLinearConv (stride 2, int32 bias; ``q2``) -> Reshape ->
    QLinearMatMul (uint8 x int8 weights; ``q3``) -> DequantizeLinear -> DynamicQuantizeLinear
    (``dq``, ``dq_scale``, ``dq_zp``) -> MatMulInteger with uint8 weights and zero points
    (``acc``, int32) -> Cast, Mul by the two scales -> ``logits``. Every named intermediate is
    an output too."""
    rng = np.random.default_rng(seed)
    x_scale, x_zp = np.float32(0.02), np.uint8(128)
    w1 = _weights(rng, 4, 2, 3, 3, scale=0.4)
    w1_scale = (np.abs(w1).reshape(4, -1).max(axis=1) / 127).astype(np.float32)
    w1_q = _quant(w1, w1_scale, np.zeros(4, np.int8))
    b1 = _weights(rng, 4, scale=0.1)
    q1_scale, q1_zp = np.float32(0.015), np.uint8(0)
    w2 = _weights(rng, 6, 4, 3, 3, scale=0.3)
    w2_scale = (np.abs(w2).reshape(6, -1).max(axis=1) / 127).astype(np.float32)
    w2_q = _quant(w2, w2_scale, np.zeros(6, np.int8))
    b2 = np.rint(_weights(rng, 6, scale=0.05) / (q1_scale * w2_scale)).astype(np.int32)
    q2_scale, q2_zp = np.float32(0.02), np.uint8(0)
    w3 = _weights(rng, 6 * 4 * 4, 16, scale=0.15)
    w3_scale, w3_zp = np.float32(np.abs(w3).max() / 127), np.int8(0)
    w3_q = _quant(w3, w3_scale, w3_zp)
    q3_scale, q3_zp = np.float32(0.03), np.uint8(100)
    w4 = _weights(rng, 16, 5, scale=0.3)
    w4_scale, w4_zp = np.float32((w4.max() - w4.min()) / 255), np.uint8(120)
    w4_q = _quant(w4, w4_scale, w4_zp)

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["x_dq"]),
        helper.make_node("DequantizeLinear", ["w1_q", "w1_scale", "w1_zp"], ["w1_dq"], axis=0),
        helper.make_node("Conv", ["x_dq", "w1_dq", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("QuantizeLinear", ["r1", "q1_scale", "q1_zp"], ["q1"]),
        helper.make_node("QLinearConv", ["q1", "q1_scale", "q1_zp", "w2_q", "w2_scale", "w2_zp", "q2_scale",
                                         "q2_zp", "b2"], ["q2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Reshape", ["q2", "flat_shape"], ["q2_flat"]),
        helper.make_node("QLinearMatMul", ["q2_flat", "q2_scale", "q2_zp", "w3_q", "w3_scale", "w3_zp",
                                           "q3_scale", "q3_zp"], ["q3"]),
        helper.make_node("DequantizeLinear", ["q3", "q3_scale", "q3_zp"], ["h"]),
        helper.make_node("DynamicQuantizeLinear", ["h"], ["dq", "dq_scale", "dq_zp"]),
        helper.make_node("MatMulInteger", ["dq", "w4_q", "dq_zp", "w4_zp"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=F),
        helper.make_node("Mul", ["dq_scale", "w4_scale"], ["out_scale"]),
        helper.make_node("Mul", ["acc_f", "out_scale"], ["logits"]),
    ]
    inits = [
        _init("x_scale", x_scale), _init("x_zp", x_zp),
        _init("w1_q", w1_q), _init("w1_scale", w1_scale), _init("w1_zp", np.zeros(4, np.int8)), _init("b1", b1),
        _init("q1_scale", q1_scale), _init("q1_zp", q1_zp),
        _init("w2_q", w2_q), _init("w2_scale", w2_scale), _init("w2_zp", np.zeros(6, np.int8)), _init("b2", b2),
        _init("q2_scale", q2_scale), _init("q2_zp", q2_zp), _i64("flat_shape", [1, -1]),
        _init("w3_q", w3_q), _init("w3_scale", w3_scale), _init("w3_zp", w3_zp),
        _init("q3_scale", q3_scale), _init("q3_zp", q3_zp),
        _init("w4_q", w4_q), _init("w4_scale", w4_scale), _init("w4_zp", w4_zp),
    ]
    outputs = [_vi("logits", F, [1, 5]), _vi("q1", U8, [1, 4, 8, 8]), _vi("q2", U8, [1, 6, 4, 4]),
               _vi("q3", U8, [1, 16]), _vi("dq", U8, [1, 16]), _vi("dq_scale", F, []), _vi("dq_zp", U8, []),
               _vi("acc", TensorProto.INT32, [1, 5])]
    return _model(nodes, [_vi("x", F, [1, 2, 8, 8])], outputs, inits, 21, "quantized_cnn_mlp")


# ---------------------------------------------------------------------------------------------
# (d) decoder step with past key/value
# ---------------------------------------------------------------------------------------------

DECODER_DIMS: dict[str, int] = {"d_model": 16, "heads": 2, "head_dim": 8}


def _decoder_weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = DECODER_DIMS["d_model"]
    return {"wq": _weights(rng, d, d), "wk": _weights(rng, d, d), "wv": _weights(rng, d, d),
            "wo": _weights(rng, d, d), "ln_g": 1.0 + _weights(rng, d, scale=0.1),
            "ln_b": _weights(rng, d, scale=0.1)}


def decoder_step(seed: int = 0) -> Any:
    """Inputs ``x: [B, S, 16]`` (S new positions), ``past_key``/``past_value: [B, 2, P, 8]``;
    outputs ``y: [B, S, 16]`` (LayerNorm(x + attention)), ``present_key``/``present_value:
    [B, 2, P + S, 8]``. Q/K/V projections split into heads (Reshape [B, S, 2, 8] with zeros
    copying B and S, Transpose); the new K/V concatenated after the past ones on axis 2; scores
    ``Q K^T / sqrt(8)`` plus a causal bias in which new position i sees every past position and
    the new positions up to i (built from Range/Less/Where over the runtime lengths); Softmax;
    times V; heads merged; output projection; residual; LayerNorm. B, S and P are symbolic."""
    w = _decoder_weights(seed)
    h, hd, d = DECODER_DIMS["heads"], DECODER_DIMS["head_dim"], DECODER_DIMS["d_model"]

    def heads(src: str, wname: str, out: str) -> list[Any]:
        return [helper.make_node("MatMul", [src, wname], [f"{out}_p"]),
                helper.make_node("Reshape", [f"{out}_p", "split_heads"], [f"{out}_r"]),
                helper.make_node("Transpose", [f"{out}_r"], [out], perm=[0, 2, 1, 3])]

    nodes = heads("x", "wq", "q") + heads("x", "wk", "k_new") + heads("x", "wv", "v_new") + [
        helper.make_node("Concat", ["past_key", "k_new"], ["present_key"], axis=2),
        helper.make_node("Concat", ["past_value", "v_new"], ["present_value"], axis=2),
        helper.make_node("Transpose", ["present_key"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "k_t"], ["qk"]),
        helper.make_node("Div", ["qk", "sqrt_hd"], ["scores"]),
        # Causal bias [S, P + S]: key j is visible from new position i when j <= P + i.
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "one"], ["s_len"], axis=0),
        helper.make_node("Shape", ["past_key"], ["pk_shape"]),
        helper.make_node("Gather", ["pk_shape", "two"], ["p_len"], axis=0),
        helper.make_node("Add", ["p_len", "s_len"], ["t_len"]),
        helper.make_node("Range", ["zero", "s_len", "one"], ["rows"]),
        helper.make_node("Add", ["rows", "p_len"], ["rows_p"]),
        helper.make_node("Unsqueeze", ["rows_p", "axes1"], ["rows_col"]),                 # [S, 1]
        helper.make_node("Range", ["zero", "t_len", "one"], ["cols"]),                    # [T]
        helper.make_node("Greater", ["cols", "rows_col"], ["future"]),                    # [S, T]
        helper.make_node("Where", ["future", "neg_inf", "zero_f"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "present_value"], ["ctx"]),                  # [B, H, S, hd]
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge_heads"], ["ctx_m"]),
        helper.make_node("MatMul", ["ctx_m", "wo"], ["attn"]),
        helper.make_node("Add", ["x", "attn"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "ln_g", "ln_b"], ["y"], axis=-1, epsilon=1e-5),
    ]
    inits = [_init(k, v) for k, v in w.items()] + [
        _i64("split_heads", [0, 0, h, hd]), _i64("merge_heads", [0, 0, d]),
        _init("sqrt_hd", np.array(np.sqrt(hd), np.float32)),
        _init("zero", np.array(0, np.int64)), _init("one", np.array(1, np.int64)), _init("two", np.array(2, np.int64)),
        _i64("axes1", [1]), _init("neg_inf", np.array(-np.inf, np.float32)), _init("zero_f", np.array(0, np.float32)),
    ]
    inputs = [_vi("x", F, ["B", "S", d]), _vi("past_key", F, ["B", h, "P", hd]), _vi("past_value", F, ["B", h, "P", hd])]
    outputs = [_vi("y", F, ["B", "S", d]), _vi("present_key", F, ["B", h, "T", hd]),
               _vi("present_value", F, ["B", h, "T", hd])]
    return _model(nodes, inputs, outputs, inits, 17, "decoder_step")


def attention_decoder_step(seed: int = 0, dims: Sequence[Any] = ("B", "S", "P")) -> Any:
    """``decoder_step`` with its attention written as the opset-23 ``Attention`` operator: 3-D
    Q/K/V (``q_num_heads = kv_num_heads = 2``), ``past_key``/``past_value`` inputs, the
    ``present_key``/``present_value`` outputs, ``is_causal = 1`` (the causal mask offset by the
    past length, as the operator defines it). ``dims``: B, S and P (symbolic names or sizes)."""
    w = _decoder_weights(seed)
    h, hd, d = DECODER_DIMS["heads"], DECODER_DIMS["head_dim"], DECODER_DIMS["d_model"]
    b, s, p = dims
    t = p + s if isinstance(p, int) and isinstance(s, int) else "T"
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Attention", ["q", "k", "v", "", "past_key", "past_value"],
                         ["ctx", "present_key", "present_value"], q_num_heads=h, kv_num_heads=h, is_causal=1),
        helper.make_node("MatMul", ["ctx", "wo"], ["attn"]),
        helper.make_node("Add", ["x", "attn"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "ln_g", "ln_b"], ["y"], axis=-1, epsilon=1e-5),
    ]
    inits = [_init(k, v) for k, v in w.items()]
    inputs = [_vi("x", F, [b, s, d]), _vi("past_key", F, [b, h, p, hd]), _vi("past_value", F, [b, h, p, hd])]
    outputs = [_vi("y", F, [b, s, d]), _vi("present_key", F, [b, h, t, hd]), _vi("present_value", F, [b, h, t, hd])]
    return _model(nodes, inputs, outputs, inits, 23, "attention_decoder_step")
