"""Values whose rank the importer does not know, resolved without refusing the model: an If
whose condition follows at import from constants and declared static shapes keeps only the
branch taken (the other may be invalid for those shapes, as in ONNX function bodies such as
AffineGrid's); an enclosing graph's constants are constants inside If branches and Scan bodies
(Unsqueeze/Squeeze axes, so a Scan output's rank is known); Unsqueeze and Squeeze of a value of
unknown rank with negative or run-time axes become a Reshape whose shape is computed at run
time. Each model is checked against onnx's ReferenceEvaluator in both graph modes."""

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
B = TensorProto.BOOL


def tvi(name: str, elem: int = F, shape: Optional[Sequence[Any]] = None) -> Any:
    """A tensor value info; ``shape=None``: rank unknown."""
    return helper.make_tensor_value_info(name, elem, shape)


def const(name: str, values: Sequence[int], shape: Optional[Sequence[int]] = None) -> Any:
    dims = [len(values)] if shape is None else list(shape)
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name + "_v", I64, dims, list(values)))


def model(nodes: List[Any], inputs: List[Any], outputs: List[Any], opset: int = 18) -> Any:
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def check(m: Any, feeds: List[Any]) -> ge.graph.Graph:
    """Runs ``m`` through ge in both graph modes and compares with the reference; returns the
    imported graph."""
    names = [i.name for i in m.graph.input]
    want = ReferenceEvaluator(m).run(None, dict(zip(names, feeds)))
    graph = ge.onnx.load(m.SerializeToString())
    for mode in ("on", "off"):
        s = Session({"ge.graphMode": mode})
        s.add_graph(0, graph)
        got = [fetched(t) for t in s.run_graph(0, list(feeds))]
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            compare(g, np.asarray(w), 1e-6, 1e-6, f"graphMode={mode} output {k}")
    return graph


def op_types(graph: Any) -> List[str]:
    return [n.type for n in graph.get_all_nodes()]


def branch(nodes: List[Any], outputs: List[Any], name: str) -> Any:
    return helper.make_graph(nodes, name, [], outputs)


# -- If with a condition known at import ------------------------------------------------------

# Branches that are invalid for x of shape [2, 5] (they would be refused if translated).
DEAD = {
    "squeeze_of_a_dim_not_1": [helper.make_node("Squeeze", ["x", "zero"], ["y_dead"])],
    "split_of_5_into_4": [
        helper.make_node("Split", ["x"], ["y_dead", "s1", "s2", "s3"], axis=1, num_outputs=4)],
}


def _size_condition_model(dead: List[Any], size_is: int) -> Any:
    """y = x * 2 when Size(x) == size_is (x is float[2, 5]), else the dead branch."""
    live = branch([helper.make_node("Add", ["x", "x"], ["y_live"])], [tvi("y_live")], "live")
    other = branch(list(dead), [tvi("y_dead")], "dead")
    nodes = [
        const("zero", [0]),
        const("n", [size_is], []),
        helper.make_node("Size", ["x"], ["size"]),
        helper.make_node("Equal", ["size", "n"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=live, else_branch=other),
    ]
    return model(nodes, [tvi("x", F, [2, 5])], [tvi("y")])


@pytest.mark.parametrize("dead", sorted(DEAD))
def test_an_if_on_a_declared_size_keeps_only_the_branch_taken(dead: str) -> None:
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    graph = check(_size_condition_model(DEAD[dead], 10), [x])
    assert "If" not in op_types(graph)


def test_the_dead_branch_is_refused_when_it_is_the_one_taken() -> None:
    m = _size_condition_model(DEAD["squeeze_of_a_dim_not_1"], 11)
    with pytest.raises(ge.TranslationError, match="Squeeze"):
        ge.onnx.load(m.SerializeToString())


def test_nested_ifs_on_constants_fold_inside_a_run_time_branch() -> None:
    """The inner If's condition compares two constants of the enclosing graph (copied into the
    branch), so it folds even inside a branch of an If whose condition is a graph input."""
    inner = helper.make_node(
        "If", ["inner_cond"], ["t"],
        then_branch=branch([helper.make_node("Neg", ["x"], ["t_then"])], [tvi("t_then")], "it"),
        else_branch=branch(DEAD["squeeze_of_a_dim_not_1"], [tvi("y_dead")], "ie"))
    then_g = branch([inner, helper.make_node("Mul", ["t", "x"], ["o_then"])], [tvi("o_then")], "t")
    else_g = branch([helper.make_node("Abs", ["x"], ["o_else"])], [tvi("o_else")], "e")
    nodes = [
        const("zero", [0]),
        const("a", [3], []),
        const("b", [3], []),
        helper.make_node("Equal", ["a", "b"], ["inner_cond"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    m = model(nodes, [tvi("c", B, []), tvi("x", F, [2, 5])], [tvi("y")])
    x = np.linspace(-2, 2, 10, dtype=np.float32).reshape(2, 5)
    for c in (True, False):
        graph = check(m, [np.array(c), x])
    assert op_types(graph).count("If") == 1


def test_an_if_on_a_run_time_condition_keeps_both_branches() -> None:
    then_g = branch([helper.make_node("Neg", ["x"], ["a"])], [tvi("a")], "t")
    else_g = branch([helper.make_node("Abs", ["x"], ["b"])], [tvi("b")], "e")
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
              [tvi("c", B, []), tvi("x", F, [3])], [tvi("y")])
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    for c in (True, False):
        graph = check(m, [np.array(c), x])
    assert "If" in op_types(graph)


def test_a_known_condition_of_several_elements_is_an_error() -> None:
    then_g = branch([helper.make_node("Neg", ["x"], ["a"])], [tvi("a")], "t")
    else_g = branch([helper.make_node("Abs", ["x"], ["b"])], [tvi("b")], "e")
    nodes = [
        const("p", [1, 2]),
        helper.make_node("Equal", ["p", "p"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    m = model(nodes, [tvi("x", F, [3])], [tvi("y")])
    with pytest.raises(ge.TranslationError, match="condition has 2 elements"):
        ge.onnx.load(m.SerializeToString())


# -- Outer constants inside subgraphs --------------------------------------------------------


def test_outer_constant_axes_give_a_scan_output_its_rank() -> None:
    """Squeeze(Unsqueeze(x_t, A), A) with A a constant of the enclosing graph: the scan
    output's rank is known at import (A is a constant in the body, not a captured input)."""
    body = helper.make_graph(
        [
            helper.make_node("Unsqueeze", ["x_t", "axes"], ["u"]),
            helper.make_node("Squeeze", ["u", "axes"], ["sq"]),
            helper.make_node("Add", ["s_in", "sq"], ["s_out"]),
            helper.make_node("Mul", ["sq", "s_out"], ["y_t"]),
        ],
        "body",
        [tvi("s_in", F, [3]), tvi("x_t", F, [3])],
        [tvi("s_out", F, [3]), tvi("y_t")],
    )
    nodes = [
        const("axes", [-1]),
        helper.make_node("Scan", ["s0", "x"], ["s", "ys"], num_scan_inputs=1, body=body),
    ]
    m = model(nodes, [tvi("s0", F, [3]), tvi("x", F, [4, 3])], [tvi("s", F, [3]), tvi("ys")])
    s0 = np.array([1.0, -1.0, 0.5], dtype=np.float32)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    check(m, [s0, x])


def test_an_overridable_initializer_stays_an_input_of_the_branch() -> None:
    """An initializer that is also a graph input is a parameter a caller may override: the
    branches capture it (not a copy of its value)."""
    then_g = branch([helper.make_node("Add", ["x", "w"], ["a"])], [tvi("a")], "t")
    else_g = branch([helper.make_node("Sub", ["x", "w"], ["b"])], [tvi("b")], "e")
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "g",
        [tvi("c", B, []), tvi("x", F, [2]), tvi("w", F, [2])], [tvi("y")],
        initializer=[helper.make_tensor("w", F, [2], [10.0, 20.0])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    x = np.array([1.0, 2.0], dtype=np.float32)
    for c in (True, False):
        graph = check(m, [np.array(c), x])
    outer = {n.name: n.type for n in graph.get_direct_nodes()}
    assert outer.get("w") == "Const"
    inner = [n.type for n in graph.get_all_nodes() if n.name.startswith("w")]
    assert inner.count("Const") == 1, inner


# -- Unsqueeze and Squeeze of unknown rank ----------------------------------------------------


@pytest.mark.parametrize("axes", [[-1], [0, -1], [-3, 1], [-1, -2]])
@pytest.mark.parametrize("shape", [(), (3,), (2, 1, 4)])
def test_unsqueeze_with_negative_axes_of_unknown_rank(axes: List[int], shape: tuple) -> None:
    nodes = [const("axes", axes), helper.make_node("Unsqueeze", ["x", "axes"], ["y"])]
    m = model(nodes, [tvi("x", F, None)], [tvi("y")])
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if len(shape) + len(axes) < max(abs(a) for a in axes):
        # Axes out of range for the fed rank: an error when it runs, not at import.
        s = Session()
        s.add_graph(0, ge.onnx.load(m.SerializeToString()))
        with pytest.raises(ge.GeError, match="out of range"):
            s.run_graph(0, [x])
        return
    check(m, [x])


@pytest.mark.parametrize("axes,shape", [([-1], (2, 3, 1)), ([-3, -1], (1, 4, 1)), ([0, -2], (1, 1, 5))])
def test_squeeze_with_negative_axes_of_unknown_rank(axes: List[int], shape: tuple) -> None:
    nodes = [const("axes", axes), helper.make_node("Squeeze", ["x", "axes"], ["y"])]
    m = model(nodes, [tvi("x", F, None)], [tvi("y")])
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check(m, [x])


@pytest.mark.parametrize("op,axes,shape", [
    ("Unsqueeze", [1, -1], (2, 3)),
    ("Unsqueeze", [-1, 0], (5,)),
    ("Squeeze", [-1, 1], (3, 1, 1)),
    ("Squeeze", [0], (1, 2)),
])
def test_run_time_axes_of_unknown_rank(op: str, axes: List[int], shape: tuple) -> None:
    m = model([helper.make_node(op, ["x", "axes"], ["y"])],
              [tvi("x", F, None), tvi("axes", I64, [len(axes)])], [tvi("y")])
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check(m, [x, np.array(axes, dtype=np.int64)])


def test_squeeze_of_a_dim_not_1_is_an_error_at_run_time() -> None:
    nodes = [const("axes", [-1]), helper.make_node("Squeeze", ["x", "axes"], ["y"])]
    m = model(nodes, [tvi("x", F, None)], [tvi("y")])
    s = Session()
    s.add_graph(0, ge.onnx.load(m.SerializeToString()))
    with pytest.raises(ge.GeError):
        s.run_graph(0, [np.zeros((2, 3), dtype=np.float32)])


@pytest.mark.parametrize("op,axes,shape", [("Unsqueeze", [-4], (2, 3)), ("Squeeze", [3], (2, 1))])
def test_axes_out_of_range_of_the_fed_rank_are_an_error_at_run_time(
        op: str, axes: List[int], shape: tuple) -> None:
    nodes = [const("axes", axes), helper.make_node(op, ["x", "axes"], ["y"])]
    m = model(nodes, [tvi("x", F, None)], [tvi("y")])
    s = Session()
    s.add_graph(0, ge.onnx.load(m.SerializeToString()))
    with pytest.raises(ge.GeError, match="out of range"):
        s.run_graph(0, [np.zeros(shape, dtype=np.float32)])


# -- MatMul of unknown rank -------------------------------------------------------------------


@pytest.mark.parametrize("sa,sb", [
    ((4,), (4,)), ((4,), (4, 3)), ((2, 4), (4,)), ((2, 4), (4, 3)), ((5, 2, 4), (4, 3)),
    ((2, 4), (5, 4, 3)), ((2, 1, 2, 4), (3, 4, 3)), ((4,), (5, 4, 3)), ((5, 2, 4), (4,)),
])
def test_matmul_of_unknown_rank(sa: tuple, sb: tuple) -> None:
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"])],
              [tvi("a", F, None), tvi("b", F, None)], [tvi("y")])
    rng = np.random.default_rng(0)
    check(m, [rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)])


def test_matmul_of_unknown_rank_with_a_scalar_is_an_error_at_run_time() -> None:
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"])],
              [tvi("a", F, None), tvi("b", F, None)], [tvi("y")])
    s = Session()
    s.add_graph(0, ge.onnx.load(m.SerializeToString()))
    with pytest.raises(ge.GeError):
        s.run_graph(0, [np.float32(2.0), np.ones((3,), dtype=np.float32)])
