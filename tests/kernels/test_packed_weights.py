"""f32 products against a constant rank-2 weight pack that weight once at compile and run an own
kernel on it (issue 18, docs/perf-runtime.md "Weights packed once, session 27"): ONNX MatMul and
Gemm (transA/transB, alpha/beta, a bias), a batched MatMul broadcasting a rank-2 weight, a fused
bias and activation. Each case runs at 1, 2 and 3 threads and must give the same bits at every
thread count, match onnxruntime and an f64 numpy product; sizes are odd (no multiple of a vector
width or tile) and include rows below the packing cut. The compile report says how many weights
were packed and their bytes, which the memory report counts with the constants; which products
pack depends on the CPU's kernels (AVX-512: from 8 rows; AVX2 and FMA: from 17; none elsewhere).
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

THREADS = (1, 2, 3)


def _flags() -> Optional[set]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


FLAGS = _flags()


def packs(rows: int) -> Optional[bool]:
    """Whether a product of `rows` output rows packs its weight on this CPU (None: unknown)."""
    if FLAGS is None:
        return None
    if "avx512f" in FLAGS:
        return rows >= 8
    if "avx2" in FLAGS and "fma" in FLAGS:
        return rows > 16
    return False


def tile_cols() -> int:
    return 32 if FLAGS and "avx512f" in FLAGS else 16


def make(nodes, x_shapes, inits=()):
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, list(s)) for i, s in enumerate(x_shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def note(report: str, pattern: str) -> int:
    m = re.search(pattern, report)
    assert m, report
    return int(m.group(1))


def run_ge(model, xs, threads, mode="on"):
    s = Session({"ge.threads": str(threads), "ge.graphMode": mode})
    s.add_graph(1, ge.onnx.load(model))
    y = s.run_graph(1, list(xs))[0].numpy()
    rep = s.compile_report(1)
    packed = note(rep, r"weights packed once: (\d+)")
    packed_bytes = note(rep, r"weights packed once: \d+ \((\d+) bytes\)")
    consts = note(rep, r"constants (\d+)")
    return y, packed, packed_bytes, consts


def check(model, xs, want64, packed_products, weight_elems=0, k_n=None, others=None):
    """Bit-identical at 1, 2 and 3 threads and in eager mode; onnxruntime's values and the f64
    product's within f32 rounding; `packed_products` weights packed (None: not checked on this
    CPU). With `others` (the bytes of the other constants), the plan holds the packed copy
    instead of the weight; without, beside it."""
    got = [run_ge(model, xs, t) for t in THREADS]
    y0, n0, b0, c0 = got[0]
    for t, (y, n, b, c) in zip(THREADS, got):
        assert y.shape == y0.shape
        assert np.array_equal(y, y0), f"{t} threads differ from 1 thread"
        assert (n, b, c) == (n0, b0, c0)
    eager = run_ge(model, xs, 1, "off")[0]
    assert np.array_equal(eager, y0), "eager mode differs from the captured plan"
    if packed_products is not None:
        assert n0 == packed_products, f"{n0} weights packed, want {packed_products}"
    if n0 == 0:
        assert b0 == 0
    elif k_n is not None:
        # Panels of the kernels' width, zero-padded; counted with the constants.
        k, n = k_n
        nr = tile_cols()
        assert b0 == n0 * -(-n // nr) * nr * k * 4
        if others is not None:
            assert b0 <= c0 <= b0 + others, "the plan still holds the weight"
        else:
            assert c0 >= b0 + weight_elems * 4
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    want = sess.run(None, {f"x{i}": x for i, x in enumerate(xs)})[0]
    assert y0.shape == want.shape == want64.shape
    scale = max(1.0, float(np.abs(want64).max()))
    np.testing.assert_allclose(y0, want, rtol=1e-5, atol=2e-5 * scale)
    np.testing.assert_allclose(y0, want64, rtol=1e-5, atol=2e-5 * scale)


def f64(a):
    return np.asarray(a, np.float64)


@pytest.mark.parametrize("m,k,n", [(1, 17, 31), (5, 7, 33), (7, 64, 40), (8, 33, 17),
                                   (17, 1, 15), (33, 129, 65), (70, 300, 257), (130, 96, 700)])
@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm(m, k, n, ta, tb):
    """Gemm with transA/transB, alpha, beta and a bias row: the weight packs where the product
    has enough rows (transposed where transB: laid out once, then packed)."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n + ta * 7 + tb * 3)
    w = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    x = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    node = helper.make_node("Gemm", ["x0", "w", "c"], ["y"], transA=ta, transB=tb, alpha=0.75,
                            beta=1.5)
    model = make([node], [x.shape], [("w", w), ("c", c)])
    a64 = f64(x).T if ta else f64(x)
    w64 = f64(w).T if tb else f64(w)
    want = 0.75 * (a64 @ w64) + 1.5 * f64(c)
    p = packs(m)
    check(model, [x], want, None if p is None else int(p), k * n, (k, n), others=n * 4 + 64)


@pytest.mark.parametrize("batch,m", [((2, 3), 9), ((1,), 1), ((4,), 2), ((3, 1), 45)])
def test_batched_matmul_with_a_rank2_weight(batch, m):
    """[*batch, m, k] @ w [k, n]: the batch folds into the rows of one product on the packed
    weight (rows = prod(batch) * m)."""
    k, n = 37, 71
    rng = np.random.default_rng(m + len(batch))
    w = rng.standard_normal((k, n)).astype(np.float32)
    x = rng.standard_normal((*batch, m, k)).astype(np.float32)
    model = make([helper.make_node("MatMul", ["x0", "w"], ["y"])], [x.shape], [("w", w)])
    rows = int(np.prod(batch)) * m
    p = packs(rows)
    check(model, [x], f64(x) @ f64(w), None if p is None else int(p), k * n, (k, n), others=64)


@pytest.mark.parametrize("act", ["Relu", "Tanh", "Sigmoid"])
def test_fused_bias_and_activation(act):
    """act(x @ w + b): the bias and activation fused into the product still apply to what the
    packed kernel wrote; two products read the same weight (each packs its own copy)."""
    m, k, n = 77, 130, 99
    rng = np.random.default_rng(5)
    w = rng.standard_normal((k, n)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((n, n)).astype(np.float32) * 0.1
    b = rng.standard_normal(n).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x0", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["hb"]),
        helper.make_node(act, ["hb"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["y"]),
    ]
    model = make(nodes, [x.shape], [("w", w), ("w2", w2), ("b", b)])
    h = f64(x) @ f64(w) + f64(b)
    a = {"Relu": np.maximum(h, 0), "Tanh": np.tanh(h), "Sigmoid": 1 / (1 + np.exp(-h))}[act]
    p = packs(m)
    check(model, [x], a @ f64(w2), None if p is None else 2 * int(p))


def test_weight_read_elsewhere_is_kept():
    """A weight also read by another node (a Mul: an Add would be fused into the product as its
    bias) stays in the plan beside its packed copy; the product's result is the same."""
    k = 24
    rng = np.random.default_rng(9)
    w = rng.standard_normal((k, k)).astype(np.float32)
    x = rng.standard_normal((k, k)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x0", "w"], ["h"]),
        helper.make_node("Mul", ["h", "w"], ["hw"]),
        helper.make_node("Relu", ["hw"], ["y"]),
    ]
    model = make(nodes, [x.shape], [("w", w)])
    want = np.maximum((f64(x) @ f64(w)) * f64(w), 0)
    p = packs(k)
    check(model, [x], want, None if p is None else int(p), k * k, (k, k))


def test_large_product_splits_bit_identically():
    """Enough work to split across threads, by panels (many columns) and by strips of rows
    (few columns): the same bits at 1, 2 and 3 threads."""
    rng = np.random.default_rng(11)
    for m, k, n in [(129, 257, 1031), (1500, 300, 40)]:
        w = rng.standard_normal((k, n)).astype(np.float32)
        x = rng.standard_normal((m, k)).astype(np.float32)
        model = make([helper.make_node("MatMul", ["x0", "w"], ["y"])], [x.shape], [("w", w)])
        p = packs(m)
        check(model, [x], f64(x) @ f64(w), None if p is None else int(p), k * n, (k, n),
              others=64)


def test_activation_weight_does_not_pack():
    """Both operands fed: nothing constant to pack."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 20)).astype(np.float32)
    w = rng.standard_normal((20, 30)).astype(np.float32)
    model = make([helper.make_node("MatMul", ["x0", "x1"], ["y"])], [x.shape, w.shape])
    check(model, [x, w], f64(x) @ f64(w), 0)


def test_memory_limit_counts_the_packed_weight():
    """The packed copy is part of the plan's peak: a limit between the plan's peak without it
    and with it refuses the compile."""
    if not packs(64):
        pytest.skip("no packed kernels on this CPU")
    rng = np.random.default_rng(4)
    k, n, m = 256, 512, 64
    w = rng.standard_normal((k, n)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    model = make([helper.make_node("MatMul", ["x0", "w"], ["y"])], [x.shape], [("w", w)])
    s = Session({"ge.threads": "1"})
    s.add_graph(1, ge.onnx.load(model))
    s.run_graph(1, [x])
    rep = s.compile_report(1)
    peak = note(rep, r"memory: peak (\d+) bytes")
    packed_bytes = note(rep, r"weights packed once: \d+ \((\d+) bytes\)")
    assert packed_bytes >= k * n * 4
    s2 = Session({"ge.threads": "1", "ge.memoryLimit": str(peak - packed_bytes // 2)})
    s2.add_graph(1, ge.onnx.load(model))
    with pytest.raises(ge.ResourceError, match="memory limit"):
        s2.run_graph(1, [x])


@pytest.mark.parametrize("batch,m", [((16,), 1), ((3,), 5), ((2, 2), 3)])
def test_batched_product_with_a_transposed_first_operand_keeps_its_weight(batch, m):
    """BatchMatMulV2(x, w, adj_x1=True) with x [*batch, k, m] and a constant w [k, n]: the
    weight packs, but a batched transposed operand runs on the allocating kernel, which reads
    the weight: the plan keeps it (found by the differential fuzzer, with 262144 batches of 1 x 1)."""
    from ge.es import GraphBuilder
    from ge.es.all import BatchMatMulV2

    k, n = 3, 5
    rng = np.random.default_rng(len(batch) * 10 + m)
    x = rng.standard_normal((*batch, k, m)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    want = np.swapaxes(f64(x), -1, -2) @ f64(w)
    outs = []
    for threads, mode in [(1, "on"), (2, "on"), (1, "off")]:
        b = GraphBuilder("g")
        t = b.create_input(0, shape=list(x.shape))
        c = b.create_const_float(w.ravel().tolist(), [k, n])
        g = b.build_and_reset([BatchMatMulV2(t, c, adj_x1=True)])
        s = Session({"ge.threads": str(threads), "ge.graphMode": mode})
        s.add_graph(1, g)
        outs.append(s.run_graph(1, [x])[0].numpy())
    for y in outs:
        assert np.array_equal(y, outs[0])
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-5)
