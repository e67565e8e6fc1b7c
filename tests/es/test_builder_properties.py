"""Hypothesis properties of the builder rules against a small reference model."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ge.es import GraphBuilder
from ge.es.all import Add, Mul, Relu

# An action: ("input", b) | ("op", kind, i, j) | ("build", b)
actions = st.lists(
    st.one_of(
        st.tuples(st.just("input"), st.integers(0, 1)),
        st.tuples(st.just("op"), st.sampled_from(["add", "mul", "relu", "radd"]), st.integers(0, 30), st.integers(0, 30)),
        st.tuples(st.just("build"), st.integers(0, 1)),
    ),
    max_size=40,
)


@given(actions)
def test_builder_rules_match_the_reference_model(acts):
    builders = [GraphBuilder("b0"), GraphBuilder("b1")]
    built = [False, False]
    inputs = [0, 0]
    tensors = []  # (tensor, owner index)
    nodes = [0, 0]  # nodes each builder should hold
    for act in acts:
        if act[0] == "input":
            b = act[1]
            if built[b]:
                with pytest.raises(RuntimeError, match="already been built"):
                    builders[b].create_input(inputs[b], shape=[2])
                continue
            tensors.append((builders[b].create_input(inputs[b], shape=[2]), b))
            inputs[b] += 1
            nodes[b] += 1
        elif act[0] == "op":
            if not tensors:
                continue
            _, kind, i, j = act
            (ta, ba), (tb, bb) = tensors[i % len(tensors)], tensors[j % len(tensors)]
            if kind == "relu":
                owners = {ba}
                call = lambda: Relu(ta)  # noqa: E731
            elif kind == "add":
                owners = {ba, bb}
                call = lambda: Add(ta, tb)  # noqa: E731
            elif kind == "mul":
                owners = {ba, bb}
                call = lambda: Mul(ta, tb)  # noqa: E731
            else:
                owners = {ba}
                call = lambda: 2.0 + ta  # noqa: E731
            first = next(iter(owners)) if len(owners) == 1 else ba
            if built[first]:
                with pytest.raises(RuntimeError, match="already been built"):
                    call()
            elif len(owners) > 1:
                with pytest.raises(ValueError, match="GraphBuilder"):
                    call()
            else:
                out = call()
                assert out.get_owner_builder() is builders[first]
                tensors.append((out, first))
                nodes[first] += 2 if kind == "radd" else 1
        else:
            b = act[1]
            if built[b]:
                with pytest.raises(RuntimeError, match="already been built"):
                    builders[b].build_and_reset()
                continue
            graph = builders[b].build_and_reset()
            built[b] = True
            assert len(graph.get_direct_nodes()) == nodes[b]
            names = [n.name for n in graph.get_direct_nodes()]
            assert len(set(names)) == len(names)
