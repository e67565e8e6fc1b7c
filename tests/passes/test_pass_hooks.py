"""Pass hooks in every form GE accepts: the pass context may be the last parameter of
``meet_requirements`` and ``replacement`` (pattern passes, expression-style replacements, decompose
passes), and what a hook records in it (an error message) reaches the run."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

import ge
from ge.es.all import Add, Mul, Relu, Sub
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph
from ge.passes import (
    DecomposePass,
    PassContext,
    PassStage,
    PatternFusionPass,
    clear_registered_passes,
    pattern,
    register_decompose_pass,
    register_fusion_pass,
    run_passes,
)
from ge.session import Session

AFTER = PassStage.AFTER_INFER_SHAPE
SEEN: List[str] = []


@pytest.fixture(autouse=True)
def _clean():
    clear_registered_passes()
    SEEN.clear()
    yield
    clear_registered_passes()


def add_relu() -> Graph:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    y = b.create_input(1, shape=[4])
    return b.build_and_reset([Relu(Add(x, y))])


def types(graph: Graph) -> List[str]:
    return sorted(n.type for n in graph.get_all_nodes() if n.type not in ("Data",))


def run(graph: Graph, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    s = Session()
    s.add_graph(1, graph)
    return s.run_graph(1, [a, c])[0].numpy()


def _add_pattern() -> Graph:
    b = GraphBuilder("p")
    x, y = b.create_inputs(2)
    return b.build_and_reset([Add(x, y)])


class AddPass(PatternFusionPass):
    """A pattern pass on ``_add_pattern()``; the tests add the hooks."""

    def patterns(self):
        return [_add_pattern()]


def test_classic_hooks_taking_the_context():
    @register_fusion_pass(name="ctx_classic", stage=AFTER)
    class AddToSubSub(AddPass):
        def meet_requirements(self, match_result, context: PassContext):
            SEEN.append(f"meet {type(context).__name__} {context.get_pass_name()}")
            return True

        def replacement(self, match_result, context: PassContext):
            SEEN.append("replacement")
            b = GraphBuilder("r")
            x, y = b.create_inputs(2)
            return b.build_and_reset([Sub(x, Sub(0.0, y))])  # x - (0 - y) == x + y

    g = add_relu()
    run_passes(g)
    assert SEEN == ["meet PassContext ctx_classic", "replacement"]
    assert "Add" not in types(g)
    a, c = np.array([1, -2, 3, -4], np.float32), np.array([1, 1, -5, 1], np.float32)
    np.testing.assert_array_equal(run(g, a, c), np.maximum(a + c, 0))


@pytest.mark.parametrize("form", ["inputs_context", "inputs_match_context"])
def test_expression_replacements_taking_the_context(form):
    if form == "inputs_context":
        class Doubled(PatternFusionPass):
            @pattern
            def p(self, inputs):
                return Add(inputs[0], inputs[1])

            def replacement(self, inputs, context: PassContext):
                SEEN.append(type(context).__name__)
                return Mul(Add(inputs[0], inputs[1]), 1.0)
    else:
        class Doubled(PatternFusionPass):
            @pattern
            def p(self, inputs):
                return Add(inputs[0], inputs[1])

            def replacement(self, inputs, match_result, context):
                SEEN.append(f"{type(match_result).__name__} {type(context).__name__}")
                return Mul(Add(inputs[0], inputs[1]), 1.0)

    register_fusion_pass(name="ctx_expr", stage=AFTER)(Doubled)
    g = add_relu()
    run_passes(g)
    assert SEEN == (["PassContext"] if form == "inputs_context" else ["MatchResult PassContext"])
    assert "Mul" in types(g)


def test_what_a_hook_records_in_the_context_reaches_the_next_hook():
    @register_fusion_pass(name="ctx_carries", stage=AFTER)
    class Carries(AddPass):
        def meet_requirements(self, match_result, context):
            context.set_error_message("noted by meet_requirements")
            return True

        def replacement(self, match_result, context):
            SEEN.append(context.get_error_message())
            b = GraphBuilder("r")
            x, y = b.create_inputs(2)
            return b.build_and_reset([Add(y, x)])

    g = add_relu()
    (stats,) = run_passes(g)
    assert SEEN == ["noted by meet_requirements"] and stats.rewritten == 1


def test_a_context_view_expires_after_its_hook():
    kept = []

    @register_fusion_pass(name="ctx_keeps", stage=AFTER)
    class Keeps(AddPass):
        def meet_requirements(self, match_result, context):
            kept.append(context)
            return False

    run_passes(add_relu())
    with pytest.raises(RuntimeError, match="pass context has expired"):
        kept[0].get_error_message()


def test_decompose_hooks_taking_the_context():
    @register_decompose_pass(name="ctx_decompose", stage=AFTER, op_types=["Relu"])
    class ReluAsMax(DecomposePass):
        def meet_requirements(self, node, context: PassContext):
            SEEN.append(f"meet {node.type} {type(context).__name__}")
            return True

        def replacement(self, node, context: PassContext):
            SEEN.append("replacement")
            b = GraphBuilder("r")
            (x,) = b.create_inputs(1)
            from ge.es.all import Maximum

            return b.build_and_reset([Maximum(x, 0.0)])

    g = add_relu()
    run_passes(g)
    assert SEEN == ["meet Relu PassContext", "replacement"]
    assert "Relu" not in types(g) and "Maximum" in types(g)
    a, c = np.array([1, -2, 3, -4], np.float32), np.array([1, 1, -5, 1], np.float32)
    np.testing.assert_array_equal(run(g, a, c), np.maximum(a + c, 0))


def test_hooks_without_the_context_still_work_and_can_be_called_by_hand():
    class Plain(AddPass):
        def meet_requirements(self, match_result):
            return match_result is not None

    assert Plain().meet_requirements(object()) is True
    assert Plain().meet_requirements(object(), None) is True


def test_a_context_hook_the_executor_cannot_call_is_reported():
    with pytest.raises(TypeError, match="expression-style replacement must be"):
        class Bad(PatternFusionPass):
            @pattern
            def p(self, inputs):
                return Add(inputs[0], inputs[1])

            def replacement(self, inputs, match_result, extra):
                return inputs[0]
    assert ge.PassError is not None


def test_tensor_holder_arithmetic_methods_take_other_as_ge():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    for name in ("add", "sub", "mul", "div"):
        assert getattr(x, name)(other=2.0)._desc[1] == [2]


def test_a_returned_graph_held_elsewhere_is_copied_and_stays_whole():
    # A graph the hook keeps (here in a list) is copied into the target; one only the hook's
    # return holds is moved. Both rewrite alike, and the kept graph stays readable and intact.
    kept: List[Graph] = []

    @register_fusion_pass(name="kept_replacement", stage=AFTER)
    class Kept(AddPass):
        def meet_requirements(self, match_result):
            return True

        def replacement(self, match_result):
            b = GraphBuilder("r")
            x, y = b.create_inputs(2)
            kept.append(b.build_and_reset([Sub(x, Sub(0.0, y))]))
            return kept[-1]

    g = add_relu()
    (stats,) = run_passes(g)
    assert stats.rewritten == 1 and "Add" not in types(g) and types(g).count("Sub") == 2
    assert sorted(n.type for n in kept[0].get_all_nodes()) == ["Const", "Data", "Data", "Sub", "Sub"]
    a, c = np.array([1, -2, 3, -4], np.float32), np.array([1, 1, -5, 1], np.float32)
    np.testing.assert_array_equal(run(g, a, c), np.maximum(a + c, 0))
    np.testing.assert_array_equal(run(kept[0], a, c), a + c)


def test_a_returned_graph_only_the_hook_held_gives_the_same_rewrite_as_a_kept_one():
    def rewritten(keep: bool) -> List[str]:
        clear_registered_passes()
        kept: List[Graph] = []

        @register_fusion_pass(name=f"moved_{keep}", stage=AFTER)
        class Moved(AddPass):
            def meet_requirements(self, match_result):
                return True

            def replacement(self, match_result):
                b = GraphBuilder("r")
                x, y = b.create_inputs(2)
                r = b.build_and_reset([Mul(Add(y, x), 1.0)])
                if keep:
                    kept.append(r)
                return r

        g = add_relu()
        run_passes(g)
        return [f"{n.name}:{n.type}" for n in g.get_all_nodes()]

    assert rewritten(True) == rewritten(False)
