"""The ES functions have the signatures GE's Python generator emits (es_generator/py_generator.h),
and calls written in GE's style build graphs that run on the CPU.

The expected ``def`` lines below are written from reading GE's generator, one per shape class:
inputs positional in IR order (dynamic ones as lists, trailing optional ones ``= None`` unless a
dynamic output exists); ``owner_graph_builder`` first for ops without inputs; one positional
``<output>_num`` per dynamic output; subgraphs positional; ``*``; every IR attribute keyword-only,
required ones first, defaults as GE prints them (C's ``%f`` for floats).
"""

from __future__ import annotations

import inspect
import re
import struct
from typing import List, Optional, Union

import numpy as np
import pytest

import ge.es.all as es_all
from ge._native import TensorHolder
from ge.es import GraphBuilder
from ge.es.all import (BatchNorm, Case, ConcatD, ConcatV2, Const, Einsum, HardSigmoid, If, IdentityN, LayerNorm,
                       Less, MatMul, Pack, ReduceSum, SelectV2, Split, SplitD, SplitV, TopKV2, Unpack, While)
from ge.es.tensor_like import TensorLike
from ge.graph import DataType, Graph, Tensor
from ge.session import Session

U = "Union[TensorHolder, TensorLike]"

# GE's generated def lines (annotations as GE writes them), one per shape class.
EXPECTED = {
    # plain: two inputs accept TensorLike, one input does not
    "Add": f"def Add(x1: {U}, x2: {U}) -> TensorHolder:",
    "Relu": "def Relu(x: TensorHolder) -> TensorHolder:",
    "Cast": "def Cast(x: TensorHolder, *, dst_type: int) -> TensorHolder:",
    "Exp": "def Exp(x: TensorHolder, *, base: float = -1.000000, scale: float = 1.000000, "
           "shift: float = 0.000000) -> TensorHolder:",
    # trailing optional inputs default to None; required attributes before defaulted ones
    "MatMul": f"def MatMul(x1: {U}, x2: {U}, bias: Optional[{U}] = None, *, transpose_x1: bool = False, "
              "transpose_x2: bool = False) -> TensorHolder:",
    "MatMulV2": f"def MatMulV2(x1: {U}, x2: {U}, bias: Optional[{U}] = None, offset_w: Optional[{U}] = None, *, "
                "transpose_x1: bool = False, transpose_x2: bool = False, offset_x: int = 0) -> TensorHolder:",
    "Conv2D": f"def Conv2D(x: {U}, filter: {U}, bias: Optional[{U}] = None, offset_w: Optional[{U}] = None, *, "
              "strides: List[int], pads: List[int], dilations: List[int] = [1, 1, 1, 1], groups: int = 1, "
              'data_format: str = "NHWC", offset_x: int = 0) -> TensorHolder:',
    "Resize": f"def Resize(x: {U}, roi: Optional[{U}] = None, scales: Optional[{U}] = None, "
              f"sizes: Optional[{U}] = None, *, "
              'coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.750000, '
              "exclude_outside: int = 0, extrapolation_value: float = 0.000000, "
              'mode: str = "nearest", nearest_mode: str = "round_prefer_floor") -> TensorHolder:',
    # dynamic inputs with N: N is an ordinary keyword attribute (Einsum's is required)
    "ConcatV2": f"def ConcatV2(x: List[{U}], concat_dim: {U}, *, N: int = 1) -> TensorHolder:",
    "ConcatD": "def ConcatD(x: List[TensorHolder], *, concat_dim: int, N: int = 1) -> TensorHolder:",
    "Pack": "def Pack(x: List[TensorHolder], *, axis: int = 0, N: int = 1) -> TensorHolder:",
    "Einsum": "def Einsum(x: List[TensorHolder], *, equation: str, N: int) -> TensorHolder:",
    # dynamic outputs: <name>_num, positional, even where the library could infer the count
    "Split": f"def Split(split_dim: {U}, x: {U}, y_num: int, *, num_split: int) -> List[TensorHolder]:",
    "SplitV": f"def SplitV(x: {U}, size_splits: {U}, split_dim: {U}, y_num: int, *, num_split: int) "
              "-> List[TensorHolder]:",
    "SplitD": "def SplitD(x: TensorHolder, y_num: int, *, split_dim: int, num_split: int) -> List[TensorHolder]:",
    "IdentityN": "def IdentityN(x: List[TensorHolder], y_num: int) -> List[TensorHolder]:",
    "Unpack": "def Unpack(x: TensorHolder, y_num: int, *, num: int, axis: int = 0) -> List[TensorHolder]:",
    # subgraph ops: output_num, then the subgraphs, positional
    "If": f"def If(cond: {U}, input: List[{U}], output_num: int, then_branch: Graph, else_branch: Graph) "
          "-> List[TensorHolder]:",
    "Case": f"def Case(branch_index: {U}, input: List[{U}], output_num: int, branches: List[Graph]) "
            "-> List[TensorHolder]:",
    "While": "def While(input: List[TensorHolder], output_num: int, cond: Graph, body: Graph, *, "
             "parallel_iterations: int = 10) -> List[TensorHolder]:",
    # no inputs: the builder comes first
    "Const": "def Const(owner_graph_builder: GraphBuilder, *, value: Tensor = Tensor()) -> TensorHolder:",
    "RandomUniform": "def RandomUniform(shape: TensorHolder, *, dtype: DataType, seed: int = 0, seed2: int = 0) "
                     "-> TensorHolder:",
    # several outputs: an <Op>Output
    "TopKV2": f"def TopKV2(x: {U}, k: {U}, *, sorted: bool = True, dim: int = -1, largest: bool = True, "
              "indices_dtype: int = 3) -> TopKV2Output:",
    "BatchNorm": f"def BatchNorm(x: {U}, scale: {U}, offset: {U}, mean: Optional[{U}] = None, "
                 f"variance: Optional[{U}] = None, *, epsilon: float = 0.000100, "
                 'data_format: str = "NHWC", is_training: bool = True, exponential_avg_factor: float = 1.000000) '
                 "-> BatchNormOutput:",
    "LayerNorm": f"def LayerNorm(x: {U}, gamma: {U}, beta: {U}, *, begin_norm_axis: int = 0, "
                 "begin_params_axis: int = 0, epsilon: float = 0.000000) -> LayerNormOutput:",
    "UniqueWithCountsAndSorting": "def UniqueWithCountsAndSorting(x: TensorHolder, *, return_inverse: bool = False, "
                                  "return_counts: bool = False, sorted: bool = True, "
                                  "out_idx: DataType = DataType.DT_INT64) -> UniqueWithCountsAndSortingOutput:",
    # default spellings: %f floats, list defaults, DataType defaults, strings; keyword names
    "HardSigmoid": "def HardSigmoid(input_x: TensorHolder, *, alpha: float = 0.166667, beta: float = 0.500000) "
                   "-> TensorHolder:",
    "ResizeBilinearV2": f"def ResizeBilinearV2(x: {U}, size: {U}, *, align_corners: bool = False, "
                        "half_pixel_centers: bool = False, dtype: DataType = DataType.DT_FLOAT, "
                        "scales: List[float] = [0.000000, 0.000000]) -> TensorHolder:",
    "PadD": "def PadD(x: TensorHolder, *, paddings: List[List[int]]) -> TensorHolder:",
    "SelectV2": f"def SelectV2(condition: {U}, then: {U}, in_else: {U}) -> TensorHolder:",
    "Shape": "def Shape(x: TensorHolder, *, dtype: int = 3) -> TensorHolder:",
}


def def_line(fn) -> str:
    src = inspect.getsource(fn)
    return src[: src.index(":\n") + 1]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_def_line_is_what_ge_generates(name):
    assert def_line(getattr(es_all, name)) == EXPECTED[name]


def expected_signature(name: str) -> inspect.Signature:
    """The signature of GE's def line, evaluated with our classes."""
    ns = {"List": List, "Optional": Optional, "Union": Union, "TensorHolder": TensorHolder,
          "TensorLike": TensorLike, "GraphBuilder": GraphBuilder, "Graph": Graph, "Tensor": Tensor,
          "DataType": DataType}
    ret = re.search(r"-> (\w+Output):$", EXPECTED[name])
    if ret:
        ns[ret.group(1)] = getattr(es_all, ret.group(1))
    exec(compile(EXPECTED[name] + " ...", name, "exec", dont_inherit=True), ns)  # noqa: S102
    return inspect.signature(ns[name])


def same_default(a, b) -> bool:
    if isinstance(a, Tensor) and isinstance(b, Tensor):  # GE's Tensor(): an empty tensor
        return a.numpy().size == b.numpy().size == 0 and a.get_data_type() == b.get_data_type()
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_signature_matches_ge(name):
    mine, ge_sig = inspect.signature(getattr(es_all, name)), expected_signature(name)
    assert [(p.name, p.kind) for p in mine.parameters.values()] == \
        [(p.name, p.kind) for p in ge_sig.parameters.values()]
    for p, q in zip(mine.parameters.values(), ge_sig.parameters.values()):
        assert p.annotation == q.annotation, p.name
        assert (p.default is p.empty) == (q.default is q.empty), p.name
        if p.default is not p.empty:
            assert same_default(p.default, q.default), (p.name, p.default, q.default)
    assert mine.return_annotation == ge_sig.return_annotation


def test_float_defaults_are_ges_printed_values():
    # C's %f of the float32 default: LayerNorm's 1e-07 prints as 0.000000.
    assert inspect.signature(LayerNorm).parameters["epsilon"].default == 0.0
    assert inspect.signature(HardSigmoid).parameters["alpha"].default == 0.166667
    assert inspect.signature(BatchNorm).parameters["epsilon"].default == 0.0001


# Calls in GE's style, run on the CPU ------------------------------------------------------------

def run(graph, *feeds):
    s = Session()
    s.add_graph(1, graph)
    return [t.numpy() for t in s.run_graph(1, list(feeds))]


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def test_split_in_ges_style():
    b = GraphBuilder("MakeSplitGraph")
    x = b.create_input(index=0, name="input", data_type=DataType.DT_FLOAT, shape=[8, 16, 64])
    parts = Split(1, x, 4, num_split=4)
    assert isinstance(parts, list) and len(parts) == 4
    for i, t in enumerate(parts):
        b.set_graph_output(t, i)
    data = np.random.default_rng(0).standard_normal((8, 16, 64)).astype(np.float32)
    got = run(b.build_and_reset(), data)
    for g, w in zip(got, np.split(data, 4, axis=1)):
        np.testing.assert_array_equal(g, w)


def test_splitv_splitd_unpack_identityn_take_their_counts():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 6])
    v = SplitV(x, [1, 2, 3], 1, 3, num_split=3)
    d = SplitD(x, 2, split_dim=1, num_split=2)
    u = Unpack(x, 2, num=2)
    n = IdentityN([x, v[0]], 2)
    graph = b.build_and_reset(v + d + u + n)
    data = np.arange(12, dtype=np.float32).reshape(2, 6)
    got = run(graph, data)
    want = np.split(data, [1, 3], axis=1) + np.split(data, 2, axis=1) + [data[0], data[1]] + [data, data[:, :1]]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_count_that_disagrees_with_the_library_is_a_value_error():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 6])
    with pytest.raises(ValueError, match="SplitD: y_num is 3 but attribute 'num_split' is 2"):
        SplitD(x, 3, split_dim=1, num_split=2)
    with pytest.raises(ValueError, match="Split: y_num is 1 but attribute 'num_split' is 2"):
        Split(1, x, 1, num_split=2)
    with pytest.raises(ValueError, match="IdentityN: y_num is 1 but input 'x' has 2 tensors"):
        IdentityN([x, x], 1)
    with pytest.raises(ValueError, match="y_num must be >= 0"):
        SplitD(x, -1, split_dim=1, num_split=2)
    with pytest.raises(TypeError, match="y_num must be an int"):
        SplitD(x, "2", split_dim=1, num_split=2)
    with pytest.raises(TypeError):
        SplitD(x, split_dim=1, num_split=2)  # y_num is required, as in GE
    assert [n.type for n in b.build_and_reset([x]).get_all_nodes()] == ["Data"]  # the failed calls added nothing


def test_concatv2_in_ges_style_with_n():
    b = GraphBuilder("MakeConcatV2Graph")
    shapes = [[8, 4, 2], [2, 4, 2], [6, 4, 2]]
    hs = [b.create_input(index=i, name=f"tensor{i + 1}", data_type=DataType.DT_FLOAT, shape=s)
          for i, s in enumerate(shapes)]
    y = ConcatV2(hs, 0, N=3)
    assert y.get_producer().get_attr("N") == 3
    b.set_graph_output(y, 0)
    data = [np.full(s, i + 1.0, np.float32) for i, s in enumerate(shapes)]
    np.testing.assert_array_equal(run(b.build_and_reset(), *data)[0], np.concatenate(data, axis=0))


def test_n_left_at_its_default_is_the_list_length():
    # GE sets nothing when N equals its default; the library derives N = len(x).
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    assert ConcatV2([x, x, x], 0).get_producer().get_attr("N") == 3
    assert ConcatD([x, x], concat_dim=0).get_producer().get_attr("N") == 2
    assert Pack([x, x, x, x]).get_producer().get_attr("N") == 4
    y = ConcatV2([x, x, x], 0, N=1)  # N=1 is the default: nothing is set, as in GE
    assert y.get_producer().get_attr("N") == 3
    got = run(b.build_and_reset([y]), np.array([1.0, 2.0], np.float32))[0]
    np.testing.assert_array_equal(got, [1, 2, 1, 2, 1, 2])


def test_n_that_disagrees_with_the_list_is_a_value_error():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    with pytest.raises(ValueError, match="ConcatV2: attribute 'N' is 2 but input 'x' has 3 tensors"):
        ConcatV2([x, x, x], 0, N=2)
    with pytest.raises(ValueError, match="ConcatD: attribute 'N' is 4 but input 'x' has 2 tensors"):
        ConcatD([x, x], concat_dim=0, N=4)
    with pytest.raises(ValueError, match="Einsum: attribute 'N' is 1 but input 'x' has 2 tensors"):
        Einsum([x, x], equation="i,i->i", N=1)
    with pytest.raises(TypeError):
        Einsum([x, x], equation="i,i->i")  # N is a required attribute of Einsum in GE
    y = Einsum([x, x], equation="i,i->i", N=2)
    got = run(b.build_and_reset([y]), np.array([3.0, 4.0], np.float32))[0]
    np.testing.assert_array_equal(got, [9, 16])


def branch(name: str, fn) -> Graph:
    g = GraphBuilder(name)
    t = g.create_input(index=0, name=f"{name}_input", data_type=DataType.DT_FLOAT, shape=[2])
    g.set_graph_output(fn(g, t), 0)
    return g.build_and_reset()


def test_if_in_ges_style():
    b = GraphBuilder("MakeIfGraph")
    x = b.create_input(index=0, name="test_input", data_type=DataType.DT_FLOAT, shape=[2])
    cond = b.create_input(index=1, name="cond", data_type=DataType.DT_INT32, shape=[])
    then_graph = branch("then_branch", lambda g, t: g.create_const_float(5.0) + t)
    else_graph = branch("else_branch", lambda g, t: t + g.create_const_float(2.0))
    outs = If(cond, [x], 1, then_graph, else_graph)
    assert isinstance(outs, list) and len(outs) == 1
    b.set_graph_output(outs[0], 0)
    s = Session()
    s.add_graph(1, b.build_and_reset())
    x_ = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(s.run_graph(1, [x_, np.array(1, np.int32)])[0].numpy(), [6, 7])
    np.testing.assert_array_equal(s.run_graph(1, [x_, np.array(0, np.int32)])[0].numpy(), [3, 4])


def test_case_and_while_in_ges_style():
    b = GraphBuilder("g")
    i = b.create_input(0, data_type=DataType.DT_INT32, shape=[])
    x = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[2])
    (c,) = Case(i, [x], 1, [branch("b0", lambda g, t: t * 10.0), branch("b1", lambda g, t: -t)])
    cond_b = GraphBuilder("cond")
    ct = cond_b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    cond_b.set_graph_output(Less(ReduceSum(ct, cond_b.create_const_int32([0])), 20.0), 0)
    (w,) = While([c], 1, cond_b.build_and_reset(), branch("body", lambda g, t: t * 2.0))
    s = Session()
    s.add_graph(1, b.build_and_reset([w]))
    x_ = np.array([1.0, 2.0], np.float32)
    # Branch 0 multiplies by 10, an out-of-range index takes the last branch (negation); then the
    # loop doubles while the sum is below 20.
    np.testing.assert_array_equal(s.run_graph(1, [np.array(0, np.int32), x_])[0].numpy(), [10, 20])
    small = np.array([0.5, 0.25], np.float32)
    np.testing.assert_array_equal(s.run_graph(1, [np.array(0, np.int32), small])[0].numpy(), [20, 10])
    np.testing.assert_array_equal(s.run_graph(1, [np.array(5, np.int32), -x_])[0].numpy(), [8, 16])


def test_batchnorm_in_ges_style():
    b = GraphBuilder("MakeBatchNormGraph")
    x = b.create_input(index=0, name="input", data_type=DataType.DT_FLOAT, shape=[1, 3, 1, 2])
    mean = b.create_input(index=1, name="mean", data_type=DataType.DT_FLOAT, shape=[3])
    variance = b.create_input(index=2, name="variance", data_type=DataType.DT_FLOAT, shape=[3])
    scale = b.create_const_float([1.0, 1.0, 1.0], shape=[3])
    offset = b.create_const_float([0.0, 0.0, 0.0], shape=[3])
    out = BatchNorm(x, scale, offset, mean, variance, epsilon=1e-4, data_format="NCHW", is_training=False)
    assert type(out).__name__ == "BatchNormOutput"
    b.set_graph_output(out.y, 0)
    data = np.arange(1, 7, dtype=np.float32).reshape(1, 3, 1, 2)
    m, v = np.array([2.0, 4.0, 6.0], np.float32), np.array([0.5, 0.5, 0.5], np.float32)
    got = run(b.build_and_reset(), data, m, v)[0]
    want = (data - m.reshape(1, 3, 1, 1)) / np.sqrt(v.reshape(1, 3, 1, 1) + 1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_matmul_in_ges_style():
    b = GraphBuilder("MakeMatMulGraph")
    x = b.create_input(index=0, name="input", data_type=DataType.DT_FLOAT, shape=[2, 3])
    weight = b.create_const_float([1.0] * 6, shape=[2, 3])
    y = MatMul(weight, x, None, transpose_x1=True, transpose_x2=False)
    b.set_graph_output(y, 0)
    data = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(run(b.build_and_reset(), data)[0], np.ones((2, 3), np.float32).T @ data)


def test_const_takes_the_builder_first():
    b = GraphBuilder("g")
    c = Const(b, value=Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
    assert c.get_owner_builder() is b
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 2])
    got = run(b.build_and_reset([x + c]), np.ones((2, 2), np.float32))[0]
    np.testing.assert_array_equal(got, [[2, 3], [4, 5]])
    with pytest.raises(TypeError):
        Const(value=Tensor(np.zeros(1, np.float32)))  # the builder is required, as in GE
    with pytest.raises(TypeError, match="GraphBuilder"):
        Const(42, value=Tensor(np.zeros(1, np.float32)))


def test_multi_output_returns_the_output_structure():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[5])
    top = TopKV2(x, 2)
    assert type(top).__name__ == "TopKV2Output"
    assert top.values is top[0] and top.indices is top[1]  # GE's attributes (and, ours, a tuple)
    got = run(b.build_and_reset([top.values, top.indices]), np.array([3, 1, 4, 1, 5], np.float32))
    np.testing.assert_array_equal(got[0], [5, 4])
    np.testing.assert_array_equal(got[1], [4, 2])


def test_keyword_named_input_takes_ges_prefix():
    b = GraphBuilder("g")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[3])
    x = b.create_input(1, data_type=DataType.DT_FLOAT, shape=[3])
    y = SelectV2(condition=c, then=x, in_else=-x)
    got = run(b.build_and_reset([y]), np.array([True, False, True]), np.array([1, 2, 3], np.float32))[0]
    np.testing.assert_array_equal(got, [1, -2, 3])


def test_the_shown_float_default_keeps_the_librarys_default():
    # GE's generated C sets an attribute only when it differs from the printed default, so the
    # node keeps the IR default: LayerNorm's epsilon shows 0.000000 and stays 1e-07.
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2, 4])
    g_, be = b.create_const_float([1.0] * 4, shape=[4]), b.create_const_float([0.0] * 4, shape=[4])
    def eps(**kw):
        return LayerNorm(x, g_, be, begin_norm_axis=1, begin_params_axis=1, **kw).y.get_producer().get_attr("epsilon")

    assert eps() == f32(1e-7)
    assert eps(epsilon=0.0) == f32(1e-7)
    assert eps(epsilon=1e-5) == f32(1e-5)
    assert HardSigmoid(x).get_producer().get_attr("alpha") == f32(0.16666666)
    assert HardSigmoid(x, alpha=0.166667).get_producer().get_attr("alpha") == f32(0.16666666)
    assert HardSigmoid(x, alpha=0.25).get_producer().get_attr("alpha") == 0.25
    y = LayerNorm(x, g_, be, begin_norm_axis=1, begin_params_axis=1).y
    data = np.array([[1, 2, 3, 4], [0, 0, 0, 1e-3]], np.float32)
    got = run(b.build_and_reset([y]), data)[0]
    mu, var = data.mean(axis=1, keepdims=True), data.var(axis=1, keepdims=True)
    np.testing.assert_allclose(got, (data - mu) / np.sqrt(var + 1e-7), rtol=1e-4, atol=1e-5)


def test_ops_without_outputs_or_with_only_optional_inputs():
    """GE's rules for the shapes the built-in library lacks, through an operator registered at run
    time: no outputs returns a TensorHolder on the node (for control edges, not data); all inputs
    optional takes ``owner_builder`` after them."""
    import ge.ops

    ge.ops.register({"name": "GeSigSink", "inputs": [{"name": "x", "kind": "required", "type": ["DT_FLOAT"]}],
                     "outputs": [], "attrs": []})
    ge.ops.register({"name": "GeSigFill",
                     "inputs": [{"name": "a", "kind": "optional", "type": ["DT_FLOAT"]},
                                {"name": "b", "kind": "optional", "type": ["DT_FLOAT"]}],
                     "outputs": [{"name": "y", "kind": "required", "type": ["DT_FLOAT"]}],
                     "attrs": [{"name": "v", "type": "Float", "default": 1e-7}]})
    sink, fill = es_all.GeSigSink, es_all.GeSigFill
    assert str(inspect.signature(sink)).endswith("-> ge._native.TensorHolder")
    P = inspect.Parameter
    assert [(p.name, p.kind, p.default) for p in inspect.signature(fill).parameters.values()] == [
        ("a", P.POSITIONAL_OR_KEYWORD, None), ("b", P.POSITIONAL_OR_KEYWORD, None),
        ("owner_builder", P.POSITIONAL_OR_KEYWORD, None), ("v", P.KEYWORD_ONLY, 0.0)]
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[2])
    s = sink(x)
    assert isinstance(s, TensorHolder) and s.get_producer().type == "GeSigSink"
    from ge import GraphBuildError
    from ge.es import control_dependency_scope
    with pytest.raises(GraphBuildError, match="has 0 outputs"):
        es_all.Relu(s)
    with control_dependency_scope([s]):
        y = es_all.Relu(x)
    assert [n.type for n in y.get_producer().get_in_control_nodes()] == ["GeSigSink"]
    assert fill(owner_builder=b).get_producer().get_attr("v") == f32(1e-7)  # the shown 0.0: the default
    assert fill(1.0, owner_builder=b).get_owner_builder() is b
    with pytest.raises(ValueError, match="explicit owner_builder is provided when supported"):
        fill()
