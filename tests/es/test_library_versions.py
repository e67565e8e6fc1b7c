"""ge.compat: the built-in library versions and adapting graphs between them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ge
import ge.compat
from ge.es import GraphBuilder
from ge.es.all import BatchMatMulV2, ReduceSum, Relu, TopKV2
from ge.graph import DataType, DumpFormat, Graph


def test_versions():
    assert ge.compat.versions() == ["8.0.0", "8.1.0"]
    assert ge.compat.current_version() == "8.1.0"
    b = GraphBuilder("g")
    assert b.build_and_reset([b.create_input(0)]).ops_version == "8.1.0"


def build(noop=True, k_dtype=None, offset=False):
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    r = ReduceSum(x, [1], keep_dims=True, noop_with_empty_axes=noop)
    extra = {} if k_dtype is None else {"indices_dtype": k_dtype}
    top = TopKV2(x, 2, **extra)
    w = b.create_input(1, data_type=DataType.DT_INT8, shape=[3, 3])
    xi = b.create_input(2, data_type=DataType.DT_INT8, shape=[2, 3])
    mm = BatchMatMulV2(xi, w, None, b.create_const([1, 1, 1], DataType.DT_INT8) if offset else None)
    return b.build_and_reset([Relu(r), top.values, mm])


def node(g, op):
    return next(n for n in g.get_direct_nodes() if n.type == op)


def test_unused_additions_are_removed_going_back():
    g = build()
    changes = ge.compat.adapt(g, "8.0.0")
    assert g.ops_version == "8.0.0"
    assert not node(g, "ReduceSum").has_attr("noop_with_empty_axes")
    assert not node(g, "TopKV2").has_attr("indices_dtype")
    assert node(g, "BatchMatMulV2").get_inputs_size() == 3
    text = "\n".join(changes)
    assert "noop_with_empty_axes" in text and "indices_dtype" in text and "offset_w" in text


def test_round_trip_through_the_older_version_restores_defaults():
    g = build()
    before = g.dump_to_stream(DumpFormat.kTxt)
    ge.compat.adapt(g, "8.0.0")
    ge.compat.adapt(g, "8.1.0")
    assert g.dump_to_stream(DumpFormat.kTxt) == before


@pytest.mark.parametrize("kwargs,what", [
    ({"noop": False}, "noop_with_empty_axes"),
    ({"k_dtype": 9}, "indices_dtype"),
    ({"offset": True}, "offset_w"),
])
def test_used_additions_are_refused(kwargs, what):
    g = build(**kwargs)
    before = g.dump_to_stream(DumpFormat.kTxt)
    with pytest.raises(ge.CompatibilityError, match=f"{what}.*8.0.0.*8.1.0|{what}.*8.1.0.*8.0.0"):
        ge.compat.adapt(g, "8.0.0")
    assert g.dump_to_stream(DumpFormat.kTxt) == before and g.ops_version == "8.1.0"


def test_errors():
    g = build()
    with pytest.raises(ge.CompatibilityError, match="7.0.0 is not known"):
        ge.compat.adapt(g, "7.0.0")
    with pytest.raises(TypeError):
        ge.compat.adapt("graph", "8.0.0")
    moved = build()
    sub = GraphBuilder("main")
    from ge.es.all import If

    c = sub.create_input(0, data_type=DataType.DT_BOOL)
    If(c, [c], output_num=1, then_branch=moved, else_branch=Graph("e"))
    with pytest.raises(RuntimeError, match="read but not changed"):
        ge.compat.adapt(moved, "8.0.0")


def test_version_survives_save_and_load():
    g = build()
    ge.compat.adapt(g, "8.0.0")
    assert Graph.from_bytes(g.to_bytes()).ops_version == "8.0.0"


@given(noop=st.booleans(), k_dtype=st.sampled_from([None, 3, 9]), offset=st.booleans())
def test_adaptation_matches_the_table(noop, k_dtype, offset):
    """Refused exactly when an 8.1.0 addition is used (set to a non-default value or connected)."""
    g = build(noop=noop, k_dtype=k_dtype, offset=offset)
    used = (not noop) or k_dtype == 9 or offset
    if used:
        with pytest.raises(ge.CompatibilityError):
            ge.compat.adapt(g, "8.0.0")
        assert g.ops_version == "8.1.0"
    else:
        ge.compat.adapt(g, "8.0.0")
        assert g.ops_version == "8.0.0"
        ge.compat.adapt(g, "8.1.0")
        assert node(g, "ReduceSum").get_attr("noop_with_empty_axes") is True


# Random prototype evolutions (hypothesis) ---------------------------------------------------

ATTRS = {"a0": 1, "a1": 2, "a2": 3}  # optional Int attributes and their defaults
INPUTS = ["i0", "i1"]  # optional inputs, in prototype order


def proto(attrs, inputs):
    return {
        "name": "EvolvingOp",
        "inputs": [{"name": "x", "type": "T"}] + [{"name": i, "kind": "optional", "type": "T"} for i in inputs],
        "outputs": [{"name": "y", "type": "T"}],
        "attrs": [{"name": a, "type": "Int", "default": ATTRS[a]} for a in attrs],
        "type_vars": {"T": ["DT_FLOAT"]},
    }


def library(attrs, inputs):
    return {"version": ge.compat.current_version(), "operators": [proto(attrs, inputs)]}


ordered = lambda pool: st.sets(st.sampled_from(pool)).map(lambda s: [p for p in pool if p in s])  # noqa: E731


@given(base_attrs=ordered(list(ATTRS)), target_attrs=ordered(list(ATTRS)), base_inputs=ordered(INPUTS),
       target_inputs=ordered(INPUTS), data=st.data())
def test_random_evolutions_follow_the_table(base_attrs, target_attrs, base_inputs, target_inputs, data):
    import ge.ops

    ge.ops.register(proto(base_attrs, base_inputs))
    from ge.es import all as es_all

    values = {a: data.draw(st.sampled_from([ATTRS[a], ATTRS[a] + 10]), label=a) for a in base_attrs}
    connected = {i: data.draw(st.booleans(), label=i) for i in base_inputs}
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = es_all.EvolvingOp(x, *[x if connected[i] else None for i in base_inputs], **values)
    g = b.build_and_reset([y])

    added = (set(target_attrs) - set(base_attrs)) | (set(target_inputs) - set(base_inputs))
    removed_attrs = set(base_attrs) - set(target_attrs)
    removed_inputs = set(base_inputs) - set(target_inputs)
    refuse = (
        (added and (removed_attrs or removed_inputs))  # both added and removed: an incompatible change
        or any(values[a] != ATTRS[a] for a in removed_attrs)  # row 1: a used attribute the target lacks
        or any(connected[i] for i in removed_inputs)  # row 5: a used input the target lacks
    )
    before = g.dump_to_stream(DumpFormat.kTxt)
    if refuse:
        with pytest.raises(ge.CompatibilityError, match="EvolvingOp"):
            ge.compat.adapt_between(g, library(base_attrs, base_inputs), library(target_attrs, target_inputs))
        assert g.dump_to_stream(DumpFormat.kTxt) == before
        return
    ge.compat.adapt_between(g, library(base_attrs, base_inputs), library(target_attrs, target_inputs))
    node = node_of(g)
    # Rows 2 and 4: unused removed attributes are gone; added ones take the target's default.
    for a in ATTRS:
        if a in target_attrs:
            assert node.get_attr(a) == values.get(a, ATTRS[a])
        else:
            assert not node.has_attr(a)
    # Rows 6 and 8: the inputs are the target's, connected as before.
    assert node.get_inputs_size() == 1 + len(target_inputs)
    for k, i in enumerate(target_inputs, start=1):
        if connected.get(i):
            assert node.get_in_data_nodes_and_port_indexes(k)[0].name == "input_0"
        else:
            with pytest.raises(RuntimeError, match="not connected"):
                node.get_in_data_nodes_and_port_indexes(k)


def node_of(g):
    return next(n for n in g.get_direct_nodes() if n.type == "EvolvingOp")


def test_adapt_between_checks_its_arguments():
    with pytest.raises(TypeError):
        ge.compat.adapt_between("g", {}, {})
    b = GraphBuilder("g")
    g = b.build_and_reset([b.create_input(0)])
    with pytest.raises(ValueError, match="not valid JSON"):
        ge.compat.adapt_between(g, "{", "{}")
