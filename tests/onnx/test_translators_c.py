"""ONNX translators of issue 22 point 4, part C: DFT with a run-time axis and length, STFT
(ops/signal.rs), MelWeightMatrix from run-time inputs (ops/source.rs), Resize's
keep_aspect_ratio_policy with run-time sizes (ops/sampling.rs). Each model is built with
onnx.helper, loaded with ge.onnx.load, run in a Session (both graph modes) and compared with
onnx's ReferenceEvaluator (numpy's FFT); value-giving inputs are fed both as graph inputs (read
at run time) and as initializers."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from onnx_harness import check_model, node_model  # noqa: E402

rng = np.random.default_rng(2204)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def refuse(m, match):
    with pytest.raises(ge.TranslationError, match=match):
        ge.onnx.load(m.SerializeToString())


def check_named(op, names, arrays, runtime, rtol, atol, opset, **attrs):
    """One `op` node on inputs `names` ('' absent) valued by `arrays`: the first is a graph
    input, the others graph inputs when `runtime`, else initializers."""
    present = [n for n in names if n]
    ins = [(n, arrays[n]) for n in (present if runtime else present[:1])]
    inits = [] if runtime else [(n, arrays[n]) for n in present[1:]]
    m = node_model(op, ins, inits, node_inputs=names, opset=opset, **attrs)
    return check_model(m, dict(ins), rtol, atol, modes=("on", "off"))


# ------------------------------------------------------------------------------------- DFT


@settings(max_examples=50, deadline=None)
@given(
    rank=st.integers(2, 4),
    data=st.data(),
    comp=st.sampled_from([1, 2]),
    inverse=st.booleans(),
    onesided=st.booleans(),
    length=st.sampled_from([None, -1, +2]),
    runtime=st.booleans(),
)
def test_dft_matches_numpy(rank, data, comp, inverse, onesided, length, runtime):
    dims = [data.draw(st.integers(1, 6)) for _ in range(rank - 1)]
    axis = data.draw(st.integers(-rank, rank - 2))
    if axis == -1:
        return
    n = (dims + [comp])[axis]
    if inverse and onesided:
        comp = 2
        if n < 2 and length is None:
            return
    x = randn(*dims, comp, dtype=np.float64)
    if length is not None:
        if n + length < 1:
            return
        ln = np.array(n + length, np.int64)
    else:
        ln = None
    arrays = {"x": x, "len": ln, "axis": np.array(axis, np.int64)}
    names = ["x", "" if ln is None else "len", "axis"]
    check_named("DFT", names, arrays, runtime, 1e-9, 1e-9, 20, inverse=int(inverse),
                onesided=int(onesided))


def test_dft_f32_is_rounded_once():
    """An f32 inverse DFT whose outputs are near zero: the sums are taken in f64, so values
    match numpy's to f32 rounding (the reference test's atol is 1e-7)."""
    x = np.fft.fft(randn(3, 16).astype(np.float64), axis=1)
    x = np.stack([x.real, x.imag], -1).astype(np.float32)
    arrays = {"x": x, "axis": np.array(1, np.int64)}
    for runtime in (False, True):
        got = check_named("DFT", ["x", "", "axis"], arrays, runtime, 1e-4, 1e-7, 20, inverse=1)
        assert got[0].dtype == np.float32


def test_dft_runtime_axis_and_length():
    x = randn(2, 5, 3, 2)
    for axis in (0, 1, 2, -2, -4):
        for ln in (3, 5, 8):
            arrays = {"x": x, "len": np.array(ln, np.int64), "axis": np.array(axis, np.int64)}
            check_named("DFT", ["x", "len", "axis"], arrays, True, 1e-4, 1e-4, 20)


def test_dft_refusals():
    x = randn(2, 8, 1)
    last = node_model("DFT", [("x", x)], [("axis", np.array(2, np.int64))],
                      node_inputs=["x", "", "axis"], opset=20)
    refuse(last, "last")
    refuse(node_model("DFT", [("x", randn(2, 8, 3))], opset=20), "last dim must be 1")
    zero = node_model("DFT", [("x", x)], [("len", np.array(0, np.int64))], opset=20)
    refuse(zero, "must be positive")
    refuse(node_model("DFT", [("x", x.astype(np.int32))], opset=20), "not supported")


# ------------------------------------------------------------------------------------ STFT


@settings(max_examples=20, deadline=None)
@given(
    length=st.integers(4, 24),
    data=st.data(),
    comp=st.sampled_from([1, 2]),
    window=st.booleans(),
    onesided=st.booleans(),
    runtime=st.booleans(),
)
def test_stft_matches_reference(length, data, comp, window, onesided, runtime):
    frame = data.draw(st.integers(1, length))
    step = data.draw(st.integers(1, 4))
    if comp == 2:
        onesided = False  # onesided needs a real signal
    x = randn(2, length, comp, dtype=np.float64)
    w = np.hanning(frame).astype(np.float64) if window else None
    arrays = {"x": x, "step": np.array(step, np.int64), "w": w, "len": np.array(frame, np.int64)}
    names = ["x", "step", "w" if window else "", "len"]
    check_named("STFT", names, arrays, runtime, 1e-9, 1e-9, 17, onesided=int(onesided))


def test_stft_without_frame_length_uses_the_window():
    arrays = {"x": randn(1, 32, 1), "step": np.array(4, np.int64), "w": np.hamming(8).astype(np.float32)}
    for runtime in (False, True):
        check_named("STFT", ["x", "step", "w"], arrays, runtime, 1e-4, 1e-4, 17)


def test_stft_refusals():
    step = [("step", np.array(2, np.int64))]
    refuse(node_model("STFT", [("x", randn(2, 16))] + step, opset=17), "batch, length")
    refuse(node_model("STFT", [("x", randn(2, 16, 3))] + step, opset=17), "last dim")
    zero = node_model("STFT", [("x", randn(2, 16, 1))], [("step", np.array(0, np.int64))], opset=17)
    refuse(zero, "must be positive")


# ---------------------------------------------------------------------------- MelWeightMatrix


@pytest.mark.parametrize("bins,dft,rate,lo,hi,out", [
    (8, 16, 8192, 0.0, 2048.0, 1),
    (10, 64, 16000, 30.0, 7000.0, 11),
    (5, 9, 1000, 0.0, 500.0, 1),
    (20, 32, 8000, 100.0, 4000.0, 1),  # narrow bands: one-bin spikes
])
def test_mel_weight_matrix_runtime(bins, dft, rate, lo, hi, out):
    vals = [("bins", np.array(bins, np.int64)), ("dft", np.array(dft, np.int64)),
            ("rate", np.array(rate, np.int64)), ("lo", np.array(lo, np.float32)),
            ("hi", np.array(hi, np.float32))]
    for k in range(len(vals)):
        # Input k at run time, the others constant.
        m = node_model("MelWeightMatrix", [vals[k]], [v for i, v in enumerate(vals) if i != k],
                       node_inputs=[n for n, _ in vals], opset=17, output_datatype=out)
        got = check_model(m, {vals[k][0]: vals[k][1]}, 1e-6, 1e-7, modes=("on", "off"))
        assert got[0].shape == (dft // 2 + 1, bins)


# ------------------------------------------------------------------------------------ Resize


@settings(max_examples=50, deadline=None)
@given(
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    sh=st.integers(1, 20),
    sw=st.integers(1, 20),
    policy=st.sampled_from(["not_larger", "not_smaller"]),
    mode=st.sampled_from(["nearest", "linear", "cubic"]),
    coord=st.sampled_from(["half_pixel", "asymmetric"]),
    runtime=st.booleans(),
)
@example(h=1, w=7, sh=1, sw=17, policy="not_smaller", mode="nearest", coord="half_pixel", runtime=False)
def test_resize_keep_aspect_ratio(h, w, sh, sw, policy, mode, coord, runtime):
    x = randn(1, 2, h, w)
    sizes = np.array([sh, sw], np.int64)
    named = [("x", x), ("", None), ("", None), ("sizes", sizes)]
    ins = named if runtime else named[:3]
    inits = [] if runtime else [("sizes", sizes)]
    m = node_model("Resize", ins, inits, node_inputs=["x", "", "", "sizes"], opset=19, mode=mode,
                   coordinate_transformation_mode=coord, keep_aspect_ratio_policy=policy, axes=[2, 3],
                   out_types={0: onnx.TensorProto.FLOAT})
    feeds = dict(n_a for n_a in ins if n_a[0])
    # onnxruntime is the reference: onnx 1.23's ReferenceEvaluator picks a wrong nearest pixel
    # where a source coordinate lands within rounding of an integer (x of width 7 to 17 pixels,
    # not_smaller, half_pixel: pixels ... 3, 2, 3 ..., not monotone).
    import onnxruntime as ort

    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    check_model(m, feeds, 1e-4, 1e-5, modes=("on", "off"), expected=want)


def test_resize_keep_aspect_ratio_all_axes():
    x = randn(2, 3, 5)
    m = node_model("Resize", [("x", x), ("", None), ("", None), ("sizes", np.array([4, 7, 3], np.int64))],
                   node_inputs=["x", "", "", "sizes"], opset=19, mode="nearest",
                   keep_aspect_ratio_policy="not_larger")
    check_model(m, {"x": x, "sizes": np.array([4, 7, 3], np.int64)}, modes=("on", "off"))


def test_resize_keep_aspect_ratio_refusals():
    ins = [("x", randn(1, 1, 4, 4)), ("", None), ("", None), ("sizes", np.array([3, 3], np.int64))]
    for coord in ("align_corners", "half_pixel_symmetric", "pytorch_half_pixel"):
        m = node_model("Resize", ins, opset=19, mode="linear", coordinate_transformation_mode=coord,
                       keep_aspect_ratio_policy="not_larger", axes=[2, 3])
        refuse(m, "not supported")
    m = node_model("Resize", ins, opset=19, mode="cubic", exclude_outside=1,
                   keep_aspect_ratio_policy="not_smaller", axes=[2, 3])
    refuse(m, "exclude_outside")
