"""ge.passes: registration, the three pass kinds, the executor's rules (fresh instances, expired
views, skip/fatal/other exceptions, rollback), MatchResult/Pattern/boundary APIs, can_fuse,
report_fuse and infer_shape."""

from __future__ import annotations

import threading

import pytest

import ge
from ge.es.all import Add, Mul, Relu, Sub
from ge.es.graph_builder import GraphBuilder
from ge.graph import Graph, Node
from ge.passes import (
    DecomposePass,
    FusionBasePass,
    MatchResult,
    NodeIo,
    PassContext,
    PassFatalError,
    PassSkipException,
    PassStage,
    Pattern,
    PatternFusionPass,
    PatternMatcherConfigBuilder,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    SubgraphRewriter,
    can_fuse,
    clear_registered_passes,
    create_pattern,
    create_replacement,
    get_registered_pass_by_descriptor_key,
    get_registered_pass_dicts,
    get_registered_passes,
    infer_shape,
    pattern,
    register_decompose_pass,
    register_fusion_pass,
    report_fuse,
    run_passes,
)

AFTER = PassStage.AFTER_INFER_SHAPE


pytestmark = pytest.mark.usefixtures("clean_passes")


def chain(n: int, name: str = "chain") -> Graph:
    """x -> (Add 1 -> Relu) * n."""
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[4])
    for _ in range(n):
        x = Relu(Add(x, 1.0))
    return b.build_and_reset([x])


def types(g: Graph) -> list:
    return [n.type for n in g.get_all_nodes()]


def add_relu_pattern_graph() -> Graph:
    b = GraphBuilder("add_relu")
    x0, x1 = b.create_input(0), b.create_input(1)
    return b.build_and_reset([Relu(Add(x0, x1))])


class AddReluPass(PatternFusionPass):
    """A pattern pass on ``add_relu_pattern_graph()``; the tests add the hooks."""

    def patterns(self):
        return [add_relu_pattern_graph()]


def sub_relu_replacement() -> Graph:
    """Relu(Add(a, b)) -> Relu(Sub(a, b)): a structural stand-in for a fusion."""
    b = GraphBuilder("rep")
    x0, x1 = b.create_input(0), b.create_input(1)
    return b.build_and_reset([Relu(Sub(x0, x1))])


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


def test_register_and_query():
    @register_fusion_pass(name="A", stage=PassStage.BEFORE_INFER_SHAPE)
    class A(FusionBasePass):
        def run(self, graph, context):
            return None

    @register_fusion_pass(name="P", stage=AFTER)
    class P(AddReluPass):
        def replacement(self, match_result):
            return sub_relu_replacement()

    @register_decompose_pass(name="D", stage=AFTER, op_types=["Relu"])
    class D(DecomposePass):
        def replacement(self, node):
            raise AssertionError("not run")

    descs = get_registered_passes()
    assert [d.pass_name for d in descs] == ["A", "P", "D"]
    assert [d.kind for d in descs] == ["fusion_base", "pattern_fusion", "decompose"]
    key = f"{__name__}:{A.__qualname__}:A"
    assert descs[0].descriptor_key == key
    assert get_registered_pass_by_descriptor_key(key).cls is A
    assert get_registered_pass_by_descriptor_key("nope") is None
    assert D.op_types == ["Relu"]
    assert A.__ge_pass_descriptor__ is descs[0]
    dicts = get_registered_pass_dicts()
    assert dicts[1]["stage"] == "AfterInferShape" and dicts[2]["op_types"] == ["Relu"]
    assert set(dicts[0]) == {"descriptor_key", "pass_name", "module_name", "class_name", "stage", "kind", "op_types"}
    clear_registered_passes()
    assert get_registered_passes() == []


def test_registration_errors():
    @register_fusion_pass(name="Dup", stage=AFTER)
    class One(FusionBasePass):
        def run(self, graph, context):
            return True

    with pytest.raises(ValueError, match="already registered"):

        @register_fusion_pass(name="Dup", stage=AFTER)
        class Two(FusionBasePass):
            def run(self, graph, context):
                return True

    with pytest.raises(TypeError, match="FusionBasePass subclass"):
        register_fusion_pass(name="X", stage=AFTER)(object)
    with pytest.raises(TypeError, match="DecomposePass subclass"):
        register_decompose_pass(name="X", stage=AFTER, op_types=["Relu"])(One)
    with pytest.raises(ValueError, match="at least one op type"):
        register_decompose_pass(name="X", stage=AFTER, op_types=[])
    with pytest.raises(TypeError, match="iterable of strings"):
        register_decompose_pass(name="X", stage=AFTER, op_types="Relu")
    with pytest.raises(TypeError, match="non-empty strings"):
        register_decompose_pass(name="X", stage=AFTER, op_types=["Relu", ""])
    with pytest.raises(ValueError, match="unknown pass stage"):

        @register_fusion_pass(name="S", stage="Later")
        class S(FusionBasePass):
            def run(self, graph, context):
                return True

    assert [d.pass_name for d in get_registered_passes()] == ["Dup"]


def test_overriding_run_is_a_type_error_at_class_creation():
    with pytest.raises(TypeError, match="overrides run"):

        class BadPattern(PatternFusionPass):
            def run(self, graph, context):
                return True

    with pytest.raises(TypeError, match="overrides run"):

        class BadDecompose(DecomposePass):
            def run(self, graph, context):
                return True


def test_pattern_style_rules():
    with pytest.raises(TypeError, match="cannot combine"):

        class Both(PatternFusionPass):
            @pattern
            def p(self, inputs):
                return Relu(inputs[0])

            def patterns(self):
                return []

    with pytest.raises(TypeError, match=r"p\(self, inputs\)"):

        class Arity(PatternFusionPass):
            @pattern
            def p(self):
                return None

    with pytest.raises(TypeError, match="replacement"):

        class Rep(PatternFusionPass):
            def replacement(self, inputs, match_result, extra):
                return None

    with pytest.raises(TypeError, match="max_rounds"):

        class Rounds(PatternFusionPass):
            max_rounds = 0


# ---------------------------------------------------------------------------------------------
# Running: the three kinds
# ---------------------------------------------------------------------------------------------


def test_pattern_pass_expression_style_and_stats():
    @register_fusion_pass(name="AddReluToSub", stage=AFTER)
    class AddReluToSub(PatternFusionPass):
        @pattern
        def add_relu(self, inputs):
            return Relu(Add(inputs[0], inputs[1]))

        def meet_requirements(self, match_result):
            nodes = match_result.get_matched_nodes()
            assert [n.type for n in nodes] == ["Add", "Relu"]
            # Captures: the accessed inputs in order, then the output.
            a = match_result.get_captured_tensor(0)
            out = match_result.get_captured_tensor(2)
            assert isinstance(a, NodeIo) and out.node.type == "Relu"
            assert match_result.get_pattern_graph_name() == "AddReluToSub_add_relu_pattern"
            return True

        def replacement(self, inputs):
            return Relu(Sub(inputs[0], inputs[1]))

    g = chain(3)
    stats = run_passes(g)
    assert len(stats) == 1
    s = stats[0]
    assert (s.pass_name, s.kind, s.stage) == ("AddReluToSub", "pattern_fusion", AFTER)
    assert (s.matches_tried, s.matches_accepted, s.rewritten, s.rounds) == (3, 3, 3, 1)
    assert types(g).count("Sub") == 3 and "Add" not in types(g)
    assert s.nodes_before == s.nodes_after == len(g.get_all_nodes())
    assert "AddReluToSub" in str(s)
    g.validate()


def test_replacement_may_pass_an_input_through():
    @register_fusion_pass(name="DropRelu", stage=AFTER)
    class DropRelu(PatternFusionPass):
        @pattern
        def relu(self, inputs):
            return Relu(inputs[0])

        def replacement(self, inputs):
            return inputs[0]

    g = chain(2)
    run_passes(g)
    assert "Relu" not in types(g)
    g.validate()


def test_meet_requirements_false_keeps_the_match():
    @register_fusion_pass(name="Never", stage=AFTER)
    class Never(AddReluPass):
        def meet_requirements(self, match_result):
            return False

        def replacement(self, match_result):
            raise AssertionError("not called")

    g = chain(2)
    (s,) = run_passes(g)
    assert (s.matches_tried, s.matches_accepted, s.rewritten) == (2, 0, 0)


def test_explicit_pattern_with_captures_and_config():
    seen = []

    @register_fusion_pass(name="Explicit", stage=AFTER)
    class Explicit(PatternFusionPass):
        def __init__(self):
            super().__init__(PatternMatcherConfigBuilder().enable_ir_attr_match().build())

        def patterns(self):
            b = GraphBuilder("p")
            x0, x1 = b.create_input(0), b.create_input(1)
            add = Add(x0, x1)
            r = Relu(add)
            return [create_pattern(b.build_and_reset([r])).capture_tensor(add).capture_tensor(x1)]

        def meet_requirements(self, match_result):
            add, c = match_result.get_captured_tensor(0), match_result.get_captured_tensor(1)
            seen.append((add.node.type, add.index, c.node.type))
            with pytest.raises(ValueError, match="out of range"):
                match_result.get_captured_tensor(2)
            return True

        def replacement(self, match_result):
            return create_replacement(sub_relu_replacement())

    g = chain(2)
    run_passes(g, passes=[Explicit])
    assert seen == [("Add", 0, "Const"), ("Add", 0, "Const")]
    assert types(g).count("Sub") == 2


def test_fusion_base_pass_sees_graph_and_context():
    got = {}

    @register_fusion_pass(name="Reader", stage=PassStage.BEFORE_INFER_SHAPE)
    class Reader(FusionBasePass):
        def run(self, graph, context):
            got["name"] = context.get_pass_name()
            got["opt"] = context.get_option_value("my.option")
            with pytest.raises(RuntimeError, match="not set"):
                context.get_option_value("absent")
            got["nodes"] = len(graph.get_all_nodes())
            # Change the graph through the view: remove the last Relu's attr-free twin.
            relu = [n for n in graph.get_all_nodes() if n.type == "Relu"][0]
            relu.set_attr("_marked", True)
            return True

    g = chain(1)
    run_passes(g, options={"my.option": "v"})
    assert got == {"name": "Reader", "opt": "v", "nodes": 4}
    relu = [n for n in g.get_all_nodes() if n.type == "Relu"][0]
    assert relu.get_attr("_marked") is True


def test_failure_status_names_the_pass_and_restores_the_graph():
    @register_fusion_pass(name="Fails", stage=AFTER)
    class Fails(FusionBasePass):
        def run(self, graph, context):
            graph.get_all_nodes()[0].set_attr("_touched", True)
            context.set_error_message("invariant violated")
            return False

    g = chain(1)
    with pytest.raises(ge.PassError, match=r"pass 'Fails' failed: run\(\) returned a failure status: invariant violated"):
        run_passes(g)
    assert not g.get_all_nodes()[0].has_attr("_touched")


def test_decompose_pass():
    @register_decompose_pass(name="ReluTwice", stage=AFTER, op_types=["Relu"])
    class ReluTwice(DecomposePass):
        def meet_requirements(self, node):
            assert isinstance(node, Node) and node.type == "Relu"
            return node.name != "Relu_0"

        def replacement(self, node):
            b = GraphBuilder("twice")
            x = b.create_input(0)
            return b.build_and_reset([Relu(Relu(x))])

    g = chain(3)
    (s,) = run_passes(g)
    assert (s.kind, s.matches_tried, s.matches_accepted, s.rewritten) == ("decompose", 3, 2, 2)
    assert types(g).count("Relu") == 5
    g.validate()


# ---------------------------------------------------------------------------------------------
# The executor's rules
# ---------------------------------------------------------------------------------------------


def test_fresh_instance_per_run_and_stage_order():
    log = []

    class Base(FusionBasePass):
        def __init__(self):
            self.calls = 0

        def run(self, graph, context):
            self.calls += 1
            log.append((context.get_pass_name(), self.calls))

    for name, stage in [("late", PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE), ("early", PassStage.BEFORE_INFER_SHAPE),
                        ("mid", PassStage.AFTER_BUILTIN_FUSION_PASS)]:
        register_fusion_pass(name=name, stage=stage)(type(name, (Base,), {}))
    g = chain(1)
    run_passes(g)
    run_passes(g)
    assert log == [("early", 1), ("mid", 1), ("late", 1)] * 2
    log.clear()
    run_passes(g, stage=PassStage.AFTER_BUILTIN_FUSION_PASS)
    run_passes(g, stage="AfterOriginGraphOptimize")
    run_passes(g, passes=["early"])
    assert [n for n, _ in log] == ["mid", "late", "early"]
    with pytest.raises(ValueError, match="no registered pass named 'nope'"):
        run_passes(g, passes=["nope"])
    with pytest.raises(ValueError):
        run_passes(g, stage="Later")


def test_a_match_kept_by_its_hook_is_still_rewritten_as_found():
    """A hook that keeps its match view alive: the pass still rewrites each match from the
    match as found (its inputs and outputs), and the kept views expire."""
    kept = []

    @register_fusion_pass(name="KeepAndFuse", stage=AFTER)
    class KeepAndFuse(AddReluPass):
        def meet_requirements(self, match_result):
            kept.append(match_result)
            return True

        def replacement(self, match_result):
            kept.append(match_result)
            return sub_relu_replacement()

    g = chain(3)
    (stats,) = run_passes(g)
    assert stats.rewritten == 3
    assert sorted(types(g)) == sorted(["Data"] + ["Const"] * 3 + ["Sub", "Relu"] * 3)
    # Each Sub reads the block before it (the input for the first) and a constant.
    subs = [n for n in g.get_all_nodes() if n.type == "Sub"]
    feeds = sorted(n.get_in_data_nodes_and_port_indexes(0)[0].type for n in subs)
    assert feeds == ["Data", "Relu", "Relu"]
    assert {n.get_in_data_nodes_and_port_indexes(1)[0].type for n in subs} == {"Const"}
    assert len(kept) == 6
    with pytest.raises(RuntimeError, match="graph handle has expired"):
        kept[0].get_matched_nodes()


def test_views_expire_after_the_run():
    kept = {}

    @register_fusion_pass(name="KeepGraph", stage=AFTER)
    class KeepGraph(FusionBasePass):
        def run(self, graph, context):
            kept["graph"] = graph
            kept["node"] = graph.get_all_nodes()[0]
            kept["context"] = context

    @register_fusion_pass(name="KeepMatch", stage=AFTER)
    class KeepMatch(AddReluPass):
        def meet_requirements(self, match_result):
            kept["match"] = match_result
            kept["matched"] = match_result.get_matched_nodes()[0]
            return False

    g = chain(1)
    run_passes(g)
    for what in ("graph", "node", "match", "matched"):
        obj = kept[what]
        with pytest.raises(RuntimeError, match="graph handle has expired"):
            obj.get_all_nodes() if what == "graph" else (
                obj.get_matched_nodes() if what == "match" else obj.name)
    with pytest.raises(RuntimeError, match="expired"):
        kept["context"].get_pass_name()
    # The user's own graph is untouched by the expiry.
    assert len(g.get_all_nodes()) == 4


def test_match_result_is_invalid_after_its_hook():
    kept = []

    @register_fusion_pass(name="P", stage=AFTER)
    class P(AddReluPass):
        def meet_requirements(self, match_result):
            kept.append(match_result)
            return True

        def replacement(self, match_result):
            with pytest.raises(RuntimeError, match="expired"):
                kept[-1].get_matched_nodes()
            assert match_result.get_matched_nodes()
            return sub_relu_replacement()

    run_passes(chain(1))


def test_skip_in_fusion_pass_undoes_its_changes():
    @register_fusion_pass(name="Skipper", stage=AFTER)
    class Skipper(FusionBasePass):
        def run(self, graph, context):
            graph.get_all_nodes()[0].set_attr("_touched", True)
            raise PassSkipException("not applicable")

    g = chain(1)
    (s,) = run_passes(g)
    assert s.skipped_run
    assert not g.get_all_nodes()[0].has_attr("_touched")


def test_skip_in_pattern_hook_skips_one_match():
    @register_fusion_pass(name="SkipFirst", stage=AFTER)
    class SkipFirst(AddReluPass):
        def meet_requirements(self, match_result):
            self.n = getattr(self, "n", 0) + 1
            if self.n == 1:
                raise PassSkipException("first")
            return True

        def replacement(self, match_result):
            return sub_relu_replacement()

    g = chain(3)
    (s,) = run_passes(g)
    assert (s.skipped, s.rewritten) == (1, 2)


def test_fatal_error_fails_with_the_pass_name():
    @register_fusion_pass(name="Fatal", stage=AFTER)
    class Fatal(AddReluPass):
        def replacement(self, match_result):
            raise PassFatalError("cannot fuse this model")

    g = chain(2)
    before = str(g)
    with pytest.raises(ge.PassError, match=r"pass 'Fatal' failed \(fatal\): cannot fuse this model"):
        run_passes(g)
    assert str(g) == before


def test_other_exceptions_fail_with_the_traceback():
    @register_fusion_pass(name="Buggy", stage=AFTER)
    class Buggy(FusionBasePass):
        def run(self, graph, context):
            return {}["missing"]

    g = chain(1)
    with pytest.raises(ge.PassError) as info:
        run_passes(g)
    msg = str(info.value)
    assert "pass 'Buggy' failed" in msg and "Traceback" in msg and "KeyError" in msg and "test_passes.py" in msg
    assert isinstance(info.value.__cause__, KeyError)


def test_replacement_must_return_a_graph():
    @register_fusion_pass(name="BadReturn", stage=AFTER)
    class BadReturn(AddReluPass):
        def replacement(self, match_result):
            return None

    with pytest.raises(ge.PassError, match=r"replacement\(\) must return a ge.graph.Graph, got NoneType"):
        run_passes(chain(1))


def test_replacement_that_does_not_fit_fails_and_restores():
    @register_fusion_pass(name="Misfit", stage=AFTER)
    class Misfit(AddReluPass):
        def replacement(self, match_result):
            b = GraphBuilder("one_input")
            return b.build_and_reset([Relu(b.create_input(0))])

    g = chain(2)
    before = str(g)
    with pytest.raises(ge.PassError, match="the replacement has 1 inputs, the boundary 2"):
        run_passes(g)
    assert str(g) == before


def test_fixpoint_rounds():
    class Collapse(PatternFusionPass):
        @pattern
        def relu_relu(self, inputs):
            return Relu(Relu(inputs[0]))

        def replacement(self, inputs):
            return Relu(inputs[0])

    def relus(n):
        b = GraphBuilder("relus")
        x = b.create_input(0)
        for _ in range(n):
            x = Relu(x)
        return b.build_and_reset([x])

    register_fusion_pass(name="Once", stage=AFTER)(type("Once", (Collapse,), {}))
    register_fusion_pass(name="Fix", stage=AFTER)(type("Fix", (Collapse,), {"max_rounds": 10}))
    g = relus(8)
    run_passes(g, passes=["Once"])
    assert types(g).count("Relu") == 4
    g = relus(8)
    (s,) = run_passes(g, passes=["Fix"])
    assert types(g).count("Relu") == 1 and s.rounds == 4


def test_run_passes_argument_errors():
    with pytest.raises(TypeError, match="ge.graph.Graph"):
        run_passes("graph")

    class Unregistered(FusionBasePass):
        def run(self, graph, context):
            return True

    with pytest.raises(ValueError, match="not a registered pass"):
        run_passes(chain(1), passes=[Unregistered])


def test_passes_run_in_threads():
    @register_fusion_pass(name="T", stage=AFTER)
    class T(PatternFusionPass):
        @pattern
        def p(self, inputs):
            return Relu(Add(inputs[0], inputs[1]))

        def replacement(self, inputs):
            return Relu(Sub(inputs[0], inputs[1]))

    graphs = [chain(50, f"g{i}") for i in range(4)]
    errors = []

    def work(g):
        try:
            run_passes(g)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(g,)) for g in graphs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(types(g).count("Sub") == 50 for g in graphs)


# ---------------------------------------------------------------------------------------------
# Pattern, MatchResult, config
# ---------------------------------------------------------------------------------------------


def test_pattern_object():
    b = GraphBuilder("p")
    x = b.create_input(0)
    r = Relu(x)
    g = b.build_and_reset([r])
    p = create_pattern(g)
    assert isinstance(p, Pattern) and p.name == "p" and p.is_valid()
    # The graph now belongs to the pattern.
    assert g.is_moved
    with pytest.raises(RuntimeError, match="can be read but not changed"):
        g.set_attr("a", 1)
    assert p.capture_tensor(r) is p
    p.capture_tensor(x)
    caps = p.get_captured_tensors()
    assert [(c.node.type, c.index) for c in caps] == [("Relu", 0), ("Data", 0)]
    with pytest.raises(ValueError, match="has 1 outputs, no output 3"):
        p.capture_tensor(r, 3)
    other = chain(1).get_all_nodes()[-1]
    with pytest.raises(TypeError):
        p.capture_tensor(42)
    p.release()
    assert not p.is_valid()
    with pytest.raises(RuntimeError, match="released"):
        p.capture_tensor(r)
    with pytest.raises(RuntimeError, match="already been released"):
        p.release()
    with pytest.raises(TypeError, match="ge.graph.Graph"):
        create_pattern(other)
    with pytest.raises(TypeError, match="ge.graph.Graph"):
        create_replacement("x")


def test_pattern_errors_are_clear():
    b = GraphBuilder("no_output")
    b.create_input(0)
    with pytest.raises(ge.GraphBuildError, match="at least one output"):
        create_pattern(b.build_and_reset([]))


def test_explain_why_a_pattern_does_not_match():
    p = create_pattern(add_relu_pattern_graph())
    b = GraphBuilder("t")
    x = b.create_input(0)
    y = Relu(Mul(x, 2.0))
    g = b.build_and_reset([y])
    relu = [n for n in g.get_all_nodes() if n.type == "Relu"][0]
    text = p.explain(relu)
    assert text.startswith("no match") and "Mul" in text and "Add" in text
    g2 = chain(1)
    relu2 = [n for n in g2.get_all_nodes() if n.type == "Relu"][0]
    assert "match of pattern 'add_relu'" in p.explain(relu2)


def test_matcher_config_builder():
    c = PatternMatcherConfigBuilder().build()
    assert not c.is_enable_const_value_match() and not c.is_enable_ir_attr_match()
    assert not c.is_enable_commutative_match()
    c = PatternMatcherConfigBuilder().enable_const_value_match().enable_ir_attr_match().enable_commutative_match().build()
    assert c.is_enable_const_value_match() and c.is_enable_ir_attr_match() and c.is_enable_commutative_match()


def test_commutative_matching_is_an_option():
    def pass_with(config):
        class C(PatternFusionPass):
            def __init__(self):
                super().__init__(config)

            def patterns(self):
                b = GraphBuilder("p")
                x = b.create_input(0)
                c = b.create_const_float(1.0)
                return [b.build_and_reset([Add(c, x)])]

            def replacement(self, match_result):
                b = GraphBuilder("r")
                return b.build_and_reset([Sub(b.create_input(0), 1.0)])

        return C

    register_fusion_pass(name="Plain", stage=AFTER)(pass_with(None))
    register_fusion_pass(name="Comm", stage=AFTER)(
        pass_with(PatternMatcherConfigBuilder().enable_commutative_match().build()))
    g = chain(1)  # Add(x, const): the pattern has Add(const, x)
    (s,) = run_passes(g, passes=["Plain"])
    assert s.rewritten == 0
    (s,) = run_passes(g, passes=["Comm"])
    assert s.rewritten == 1


# ---------------------------------------------------------------------------------------------
# SubgraphRewriter, can_fuse, report_fuse, infer_shape
# ---------------------------------------------------------------------------------------------


def test_subgraph_rewriter_in_a_fusion_pass():
    @register_fusion_pass(name="ByHand", stage=AFTER)
    class ByHand(FusionBasePass):
        def run(self, graph, context):
            for relu in [n for n in graph.get_all_nodes() if n.type == "Relu"]:
                add, _ = relu.get_in_data_nodes_and_port_indexes(0)
                assert can_fuse([add, relu]).ok
                b = SubgraphBoundary()
                b.add_input(0, SubgraphInput([(add, 0)]))
                b.add_input(1, SubgraphInput([(add, 1)]))
                b.add_output(0, SubgraphOutput(relu, 0))
                assert SubgraphRewriter.replace(b, sub_relu_replacement(), context) == 0
            return True

    g = chain(2)
    (s,) = run_passes(g)
    assert types(g).count("Sub") == 2
    assert len(s.fusions) == 2 and s.fusions[0][0] == ["Add_0", "Relu_0"]
    g.validate()


def test_boundary_errors():
    g = chain(1)
    nodes = {n.type: n for n in g.get_all_nodes()}
    b = SubgraphBoundary()
    b.add_input(1, SubgraphInput([(nodes["Add"], 0)]))
    b.add_output(0, SubgraphOutput(nodes["Relu"], 0))
    with pytest.raises(ValueError, match="slots must be 0..n"):
        SubgraphRewriter.replace(b, sub_relu_replacement())
    b = SubgraphBoundary()
    b.add_input(0, SubgraphInput([(nodes["Add"], 1)]))
    b.add_output(0, SubgraphOutput(nodes["Relu"], 0))
    with pytest.raises(ValueError, match="not closed.*input_0"):
        SubgraphRewriter.replace(b, sub_relu_replacement())
    with pytest.raises(ValueError, match="no anchor"):
        SubgraphBoundary().add_input(0, SubgraphInput())
    with pytest.raises(ValueError, match="not set"):
        SubgraphBoundary().add_output(0, SubgraphOutput())
    with pytest.raises(RuntimeError, match="tuple"):
        SubgraphInput([nodes["Add"]])
    with pytest.raises(TypeError, match="ge.graph.Graph"):
        SubgraphRewriter.replace(SubgraphBoundary(), "graph")


def test_can_fuse_detects_cycles():
    b = GraphBuilder("diamond")
    x = b.create_input(0)
    a = Relu(x)
    m = Mul(a, 2.0)
    s = Add(a, m)
    g = b.build_and_reset([s])
    n = {node.type: node for node in g.get_all_nodes()}
    ok = can_fuse([n["Relu"], n["Add"]])
    assert not ok and "cycle" in ok.reason and "Mul" in ok.reason
    assert can_fuse([n["Relu"], n["Mul"], n["Add"]]).ok
    assert not can_fuse([]).ok
    with pytest.raises(TypeError, match="ge.graph.Node"):
        can_fuse([1])
    with pytest.raises(TypeError, match="PassContext"):
        report_fuse([n["Relu"]], [], "context")
    ctx = PassContext("manual")
    report_fuse([n["Relu"], n["Mul"]], [n["Add"]], ctx)
    assert ctx.get_fusion_reports() == [(["Relu_0", "Mul_0"], ["Add_0"])]


def test_infer_shape():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    g = b.build_and_reset([Relu(x)])
    relu = [n for n in g.get_all_nodes() if n.type == "Relu"][0]
    data = [n for n in g.get_all_nodes() if n.type == "Data"][0]
    data.update_output_desc(0, ge.graph.TensorDesc([5, 7], ge.graph.Format.FORMAT_ND, ge.graph.DataType.DT_FLOAT16))
    infer_shape(relu)
    d = relu.get_output_desc(0)
    assert d.get_shape() == [5, 7] and d.get_data_type() == ge.graph.DataType.DT_FLOAT16
    infer_shape(g)
    with pytest.raises(TypeError, match="Node or ge.graph.Graph"):
        infer_shape(3)


def test_match_result_to_boundary_and_text():
    texts = []

    @register_fusion_pass(name="Boundary", stage=AFTER)
    class BoundaryPass(AddReluPass):
        def meet_requirements(self, match_result: MatchResult):
            texts.append(str(match_result))
            assert isinstance(match_result.to_boundary(), SubgraphBoundary)
            return True

        def replacement(self, match_result):
            return sub_relu_replacement()

    run_passes(chain(1))
    assert "match of pattern 'add_relu'" in texts[0] and "Add_0 (Add)" in texts[0]


def test_a_missing_hook_fails_with_the_pass_name():
    @register_fusion_pass(name="NoReplacement", stage=AFTER)
    class NoReplacement(AddReluPass):
        """Patterns, no replacement."""

    with pytest.raises(ge.PassError, match=r"NoReplacement(.|\n)*PatternFusionPass.replacement must be implemented"):
        run_passes(chain(1))
