"""ONNX sequences and optionals (GE's DT_VARIANT values): each sequence and optional operator
against onnx's ReferenceEvaluator, Loop and If carrying them, sequences fed and fetched through a
Session as lists of arrays (None for an empty optional), and the errors: a sequence given to a
numeric operator, SequenceAt out of range."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

import pytest

onnx = pytest.importorskip("onnx")

import ge  # noqa: E402
import ge.onnx  # noqa: E402
import numpy as np  # noqa: E402
from ge.session import Session  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from onnx_conformance import compare, fetched  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def seq_vi(name: str, elem: int = F, shape: Optional[Sequence[Any]] = None) -> Any:
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def opt_vi(name: str, elem_type: Any) -> Any:
    return helper.make_value_info(name, helper.make_optional_type_proto(elem_type))


def tvi(name: str, elem: int = F, shape: Optional[Sequence[Any]] = None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, opset: int = 18) -> Any:
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ge(m: Any, feeds: List[Any], mode: Optional[str] = None) -> List[Any]:
    s = Session({} if mode is None else {"ge.graphMode": mode})
    s.add_graph(0, ge.onnx.load(m.SerializeToString()))
    return [fetched(t) for t in s.run_graph(0, list(feeds))]


def same(got: Any, want: Any) -> None:
    compare(got, want, 1e-6, 1e-7, "output")


def check(m: Any, feeds: List[Any]) -> List[Any]:
    names = [i.name for i in m.graph.input]
    want = ReferenceEvaluator(m).run(None, dict(zip(names, feeds)))
    for mode in ("on", "off"):
        got = run_ge(m, feeds, mode)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    return got


rng = np.random.default_rng(7)
A = rng.standard_normal((2, 3)).astype(np.float32)
B = rng.standard_normal((1, 3)).astype(np.float32)
C = rng.standard_normal((4, 3)).astype(np.float32)


def test_construct_at_length_and_concat():
    m = model([
        helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
        helper.make_node("SequenceAt", ["s", "i"], ["x"]),
        helper.make_node("SequenceLength", ["s"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0),
    ], [tvi("a", shape=[2, 3]), tvi("b", shape=[1, 3]), tvi("c", shape=[4, 3]), tvi("i", I64, [])],
        [tvi("x"), tvi("n", I64), tvi("cat")])
    for i in (0, 1, -1, -3):
        out = check(m, [A, B, C, np.array(i, np.int64)])
    assert out[1] == 3


def test_empty_insert_erase_and_stack():
    m = model([
        helper.make_node("SequenceEmpty", [], ["e"], dtype=F),
        helper.make_node("SequenceInsert", ["e", "a"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "b"], ["s2"]),
        helper.make_node("SequenceInsert", ["s2", "b2", "p"], ["s3"]),
        helper.make_node("SequenceErase", ["s3", "q"], ["s4"]),
        helper.make_node("SequenceErase", ["s4"], ["s5"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["st"], axis=-1, new_axis=1),
    ], [tvi("a", shape=[3]), tvi("b", shape=[3]), tvi("b2", shape=[3]), tvi("p", I64, []), tvi("q", I64, [])],
        [seq_vi("s4"), seq_vi("s5"), tvi("st")])
    v = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
    for p, q in ((0, 1), (-1, -2)):
        check(m, v + [np.array(p, np.int64), np.array(q, np.int64)])
    # Inserting at position n appends (onnx's reference evaluator gets this one wrong: it
    # gives [a, b] for s4; ONNX's definition and onnxruntime give [b, b2]).
    got = run_ge(m, v + [np.array(2, np.int64), np.array(0, np.int64)])
    same(got[0], [v[1], v[2]])
    same(got[1], [v[1]])


@pytest.mark.parametrize("split,axis,keepdims", [
    (None, 0, 1), (None, 1, 0), (np.array(2, np.int64), 1, 1), (np.array([1, 3], np.int64), 0, 1),
])
def test_split_to_sequence(split, axis, keepdims):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    ins = ["x"] + (["split"] if split is not None else [])
    vis = [tvi("x", shape=[4, 5])] + ([tvi("split", I64, list(split.shape))] if split is not None else [])
    m = model([helper.make_node("SplitToSequence", ins, ["s"], axis=axis, keepdims=keepdims)], vis, [seq_vi("s")])
    check(m, [x] + ([split] if split is not None else []))


def test_sequences_fed_and_fetched_as_lists():
    m = model([helper.make_node("Identity", ["s"], ["t"]),
               helper.make_node("SequenceLength", ["s"], ["n"])],
              [seq_vi("s", F)], [seq_vi("t", F), tvi("n", I64)])
    got = check(m, [[A, B, C]])
    assert isinstance(got[0], list) and len(got[0]) == 3
    check(m, [[A]])


def test_sequence_map_runs_its_body_per_element():
    body = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Shape", ["z"], ["sh"])], "body",
        [tvi("x", F, None), tvi("y", F, None)], [tvi("z", F, None), tvi("sh", I64, None)])
    m = model([helper.make_node("SequenceMap", ["s", "t"], ["o", "shapes"], body=body)],
              [seq_vi("s", F), tvi("t", F, [3])], [seq_vi("o", F), seq_vi("shapes", I64)])
    check(m, [[A, B, C], np.ones(3, np.float32)])


def test_optionals():
    elem = helper.make_tensor_type_proto(F, None)
    m = model([helper.make_node("Optional", ["x"], ["o"]),
               helper.make_node("OptionalHasElement", ["o"], ["h"]),
               helper.make_node("OptionalGetElement", ["o"], ["y"]),
               helper.make_node("OptionalHasElement", ["e"], ["h2"])],
              [tvi("x", F, [2, 3]), opt_vi("e", elem)], [tvi("h", TensorProto.BOOL), tvi("y"),
                                                         tvi("h2", TensorProto.BOOL)])
    # onnx's reference evaluator returns OptionalGetElement's tensor wrapped in a list; the
    # expected values are ONNX's definition.
    for e, has in ((None, False), (B, True)):
        for mode in ("on", "off"):
            h, y, h2 = run_ge(m, [A, e], mode)
            same(h, np.array(True))
            same(y, A)
            same(h2, np.array(has))
    # An empty optional comes back as None.
    m2 = model([helper.make_node("Identity", ["e"], ["f"])], [opt_vi("e", elem)], [opt_vi("f", elem)])
    assert run_ge(m2, [None]) == [None]
    same(run_ge(m2, [A])[0], A)


def test_if_chooses_between_sequences():
    def branch(name, vals):
        consts = [helper.make_node("Constant", [], [f"{name}{k}"], value=onnx.numpy_helper.from_array(v))
                  for k, v in enumerate(vals)]
        return helper.make_graph(consts + [helper.make_node("SequenceConstruct", [f"{name}{k}" for k in range(len(vals))],
                                                            [f"{name}_s"])],
                                 name, [], [seq_vi(f"{name}_s", F)])
    m = model([helper.make_node("If", ["c"], ["s"], then_branch=branch("t", [A, B]), else_branch=branch("e", [C]))],
              [tvi("c", TensorProto.BOOL, [])], [seq_vi("s", F)])
    check(m, [np.array(True)])
    check(m, [np.array(False)])


def test_loop_carries_a_sequence():
    # Each iteration appends x[:i+1] (a growing shape) to the carried sequence.
    body = helper.make_graph([
        helper.make_node("Constant", [], ["zero"], value=onnx.numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Add", ["i", "one"], ["i1"]),
        helper.make_node("Unsqueeze", ["i1", "zero"], ["end"]),
        helper.make_node("Slice", ["x", "zero", "end"], ["part"]),
        helper.make_node("SequenceInsert", ["s_in", "part"], ["s_out"]),
        helper.make_node("Identity", ["cond"], ["cond_out"]),
    ], "body", [tvi("i", I64, []), tvi("cond", TensorProto.BOOL, []), seq_vi("s_in", F)],
        [tvi("cond_out", TensorProto.BOOL, []), seq_vi("s_out", F)])
    one = onnx.numpy_helper.from_array(np.array(1, np.int64), "one")
    g = helper.make_graph([
        helper.make_node("SequenceEmpty", [], ["s0"], dtype=F),
        helper.make_node("Loop", ["n", "", "s0"], ["s"], body=body),
    ], "g", [tvi("n", I64, []), tvi("x", F, [5])], [seq_vi("s", F)], initializer=[one])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    x = np.arange(5, dtype=np.float32)
    got = run_ge(m, [np.array(4, np.int64), x])[0]
    assert [g.tolist() for g in got] == [x[:k].tolist() for k in range(1, 5)]
    got = run_ge(m, [np.array(0, np.int64), x])[0]
    assert got == []


def test_a_sequence_into_a_numeric_op_is_refused():
    m = model([helper.make_node("SequenceConstruct", ["a"], ["s"]),
               helper.make_node("Relu", ["s"], ["y"])], [tvi("a", F, [2, 3])], [tvi("y")])
    with pytest.raises(ge.GeError, match="sequence|DT_VARIANT"):
        run_ge(m, [A])


def test_sequence_at_out_of_range_names_the_node():
    n = helper.make_node("SequenceAt", ["s", "i"], ["x"], name="pick")
    m = model([n], [seq_vi("s", F), tvi("i", I64, [])], [tvi("x")])
    with pytest.raises(ge.GeError, match=r"(?s)pick.*index 3 is out of range for a list of 2"):
        run_ge(m, [[A, B], np.array(3, np.int64)])
    with pytest.raises(ge.GeError, match=r"index -3 is out of range"):
        run_ge(m, [[A, B], np.array(-3, np.int64)])


def test_optional_get_element_of_an_empty_optional_is_an_error():
    elem = helper.make_tensor_type_proto(F, None)
    m = model([helper.make_node("OptionalGetElement", ["e"], ["y"], name="get")], [opt_vi("e", elem)], [tvi("y")])
    with pytest.raises(ge.GeError, match=r"(?s)get.*the optional is empty"):
        run_ge(m, [None])


def test_mixed_dtypes_in_a_fed_list_are_refused():
    m = model([helper.make_node("Identity", ["s"], ["t"])], [seq_vi("s", F)], [seq_vi("t", F)])
    with pytest.raises((ge.GeError, ValueError), match="dtype"):
        run_ge(m, [[A, np.zeros(2, np.int64)]])
