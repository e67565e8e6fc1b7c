"""The native graph file: ``save``/``load`` and ``to_bytes``/``from_bytes`` round trips, damaged
files, and the topological order of the readable dump."""

import heapq
import math
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ge
from ge.es import GraphBuilder
from ge.es.all import Add, Exp, If, Maximum, Minimum, Mul, Neg, Relu, Relu6, Sigmoid, Sqrt, Sub
from ge.graph import DataType, DumpFormat, Format, Graph, Placement, Tensor
from graph_samples import branch

HEADER = b"GERSGRPH" + struct.pack("<I", 1)

# Comparing graphs ----------------------------------------------------------------------------


def same_value(a, b):
    """Attribute equality where NaN equals NaN and -0.0 differs from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def same_desc(a, b):
    return a._raw()[:6] == b._raw()[:6] and same_value(a._raw()[6], b._raw()[6])


def edges(node):
    ins = []
    for i in range(node.get_inputs_size()):
        try:
            src, port = node.get_in_data_nodes_and_port_indexes(i)
            ins.append((src.name, port))
        except RuntimeError:
            ins.append(None)
    outs = [[(c.name, p) for c, p in node.get_out_data_nodes_and_port_indexes(i)]
            for i in range(node.get_outputs_size())]
    return ins, outs


def structure(g, keys=()):
    """Everything observable about a graph through the API, recursively (graph attributes: those
    of ``keys`` it has; the API cannot list them)."""
    nodes = []
    for n in g.get_direct_nodes():
        ins, outs = edges(n)
        nodes.append({
            "name": n.name, "type": n.type, "ins": ins, "outs": outs,
            "ctrl_in": [c.name for c in n.get_in_control_nodes()],
            "ctrl_out": [c.name for c in n.get_out_control_nodes()],
            "ir": n.get_ir_attrs(), "private": n.get_private_attrs(),
            "in_descs": [n.get_input_desc(i) for i in range(n.get_inputs_size())],
            "out_descs": [n.get_output_desc(i) for i in range(n.get_outputs_size())],
            "subgraphs": {s: structure(n.get_subgraph(s), keys) for s in n.get_subgraph_names()},
        })
    attrs = {k: g.get_attr(k) for k in keys if g.has_attr(k)}
    return {"name": g.name, "ops_version": g.ops_version, "attrs": attrs, "nodes": nodes,
            "outputs": [(n.name, p) for n, p in g.get_outputs()]}


def assert_same_structure(a, b, path="graph"):
    assert a.keys() == b.keys()
    for k in a:
        if k == "nodes":
            assert [n["name"] for n in a[k]] == [n["name"] for n in b[k]], path
            for na, nb in zip(a[k], b[k]):
                where = f"{path}/{na['name']}"
                for f in ("type", "ins", "outs", "ctrl_in", "ctrl_out"):
                    assert na[f] == nb[f], (where, f)
                for f in ("ir", "private"):
                    assert same_value(na[f], nb[f]), (where, f, na[f], nb[f])
                for f in ("in_descs", "out_descs"):
                    assert len(na[f]) == len(nb[f]) and all(map(same_desc, na[f], nb[f])), (where, f)
                assert na["subgraphs"].keys() == nb["subgraphs"].keys(), where
                for s in na["subgraphs"]:
                    assert_same_structure(na["subgraphs"][s], nb["subgraphs"][s], f"{where}/{s}")
        elif k == "attrs":
            assert same_value(a[k], b[k]), (path, a[k], b[k])
        else:
            assert a[k] == b[k], (path, k)


def assert_round_trip(g, loaded, keys=()):
    assert loaded.dump_to_stream(DumpFormat.kTxt) == g.dump_to_stream(DumpFormat.kTxt)
    assert loaded.dump_to_stream(DumpFormat.kReadable) == g.dump_to_stream(DumpFormat.kReadable)
    keys = [*keys, *EVERY_ATTR, "sub_attr"]
    assert_same_structure(structure(g, keys), structure(loaded, keys))
    # The file is canonical: saving what was loaded gives the same bytes.
    assert loaded.to_bytes() == g.to_bytes()


# A graph with a bit of everything --------------------------------------------------------------

EVERY_ATTR = {
    "int": -(2**63),
    "float": 0.1,
    "nan": float("nan"),
    "inf": float("inf"),
    "ninf": float("-inf"),
    "neg_zero": -0.0,
    "denormal": 1e-45,
    "str": "s \u00e9 \"q\" \n \x00",
    "bool": True,
    "dtype": DataType.DT_BF16,
    "list_int": [2**63 - 1, 0, -1],
    "list_float": [float("nan"), float("-inf"), -0.0, 3.5],
    "list_bool": [False, True],
    "list_str": ["", "x"],
    "list_dtype": [DataType.DT_INT4, DataType.DT_COMPLEX128],
    "list_list_int": [[], [1], [2, 3]],
    "empty_list": [],
    "tensor": Tensor(np.array([[1.5, np.nan], [-np.inf, -0.0]], np.float32), format=Format.FORMAT_NCHW),
    "tensor_i64": Tensor(np.array([2**63 - 1, -(2**63)], np.int64)),
    "tensor_empty": Tensor(np.zeros((0, 3), np.uint8)),
    "tensor_c128": Tensor(np.array([1 + 2j])),
}


def rich_graph():
    b = GraphBuilder("rich")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[2])
    w = b.create_const(np.array([0.5, -2.0], np.float32))
    then_g = branch("then", Relu)
    then_g.find_node_by_name("Relu_0").set_attr("_in_sub", [1, 2])
    then_g.set_attr("sub_attr", "yes")
    (out,) = If(c, [x], output_num=1, then_branch=then_g, else_branch=branch("else", lambda t: t * 2.0))
    e = Exp(x + w, base=2.0, shift=float("nan"))
    r = Relu(e)
    b.add_control_dependency(r, [out, c])
    b.set_tensor_attr_string(r, "_mem", "hbm")
    for k, v in EVERY_ATTR.items():
        b.set_attr(k, v)
        b.set_attr("_" + k, v, tensor=e)
    g = b.build_and_reset([out, r, e])
    relu = g.find_node_by_name("Relu_0")
    d = relu.get_output_desc(0)  # keeps the builder's tensor attribute _mem
    d.set_shape([2, -1])
    d.set_data_type(DataType.DT_FLOAT16)
    d.set_format(Format.FORMAT_NHWC)
    d.set_origin_shape([-2])
    d.set_origin_format(Format.FORMAT_NCHW)
    d.set_placement(Placement.PLACEMENT_DEVICE)
    d.set_attr("_tensor", EVERY_ATTR["tensor"])
    relu.update_output_desc(0, d)
    relu.set_input_attr("_in", 0, [1.5, float("inf")])
    relu.set_output_attr("_out", 0, DataType.DT_INT8)
    return g


def test_every_attr_type_round_trips_with_its_value():
    g = rich_graph()
    loaded = Graph.from_bytes(g.to_bytes())
    assert_round_trip(g, loaded)
    exp = loaded.find_node_by_name("Exp_0")
    for k, v in EVERY_ATTR.items():
        want = g.get_attr(k)  # floats as stored: float32
        for got in (loaded.get_attr(k), exp.get_attr("_" + k)):
            assert same_value(got, want), k
            assert type(got) is type(v)
    assert math.isnan(loaded.get_attr("nan")) and math.copysign(1, loaded.get_attr("neg_zero")) == -1
    assert loaded.get_attr("denormal") == float(np.float32(1e-45)) > 0
    t = loaded.get_attr("tensor")
    assert t.get_format() == Format.FORMAT_NCHW
    assert np.array_equal(t.numpy(), EVERY_ATTR["tensor"].numpy(), equal_nan=True)
    assert loaded.get_attr("tensor_i64").numpy().tolist() == [2**63 - 1, -(2**63)]
    assert loaded.get_attr("tensor_empty").get_shape() == [0, 3]
    assert exp.get_ir_attrs()["base"] == 2.0 and math.isnan(exp.get_ir_attrs()["shift"])


def test_ports_descs_control_edges_and_outputs_round_trip():
    loaded = Graph.from_bytes(rich_graph().to_bytes())
    relu = loaded.find_node_by_name("Relu_0")
    assert [n.name for n in relu.get_in_control_nodes()] == ["If_0", "input_0"]
    assert relu.get_input_attr("_in", 0) == [1.5, float("inf")]
    assert relu.get_output_attr("_out", 0) is DataType.DT_INT8
    assert relu.get_output_attr("_mem", 0) == "hbm"
    d = relu.get_output_desc(0)
    assert (d.get_shape(), d.get_data_type(), d.get_format()) == ([2, -1], DataType.DT_FLOAT16, Format.FORMAT_NHWC)
    assert (d.get_origin_shape(), d.get_origin_format(), d.get_placement()) == (
        [-2], Format.FORMAT_NCHW, Placement.PLACEMENT_DEVICE)
    assert d.get_attr("_tensor") == EVERY_ATTR["tensor"]
    assert [(n.name, p) for n, p in loaded.get_outputs()] == [("If_0", 0), ("Relu_0", 0), ("Exp_0", 0)]
    const = loaded.find_node_by_name("Const_0")
    assert const.get_attr("value").numpy().tolist() == [0.5, -2.0]
    loaded.validate()


def test_subgraphs_round_trip():
    g = rich_graph()
    loaded = Graph.from_bytes(g.to_bytes())
    assert [s.name for s in loaded.get_all_subgraphs()] == ["then", "else"]
    then = loaded.get_subgraph("then")
    assert then.get_parent_node().name == "If_0" and then.get_parent_graph().name == "rich"
    assert then.get_attr("sub_attr") == "yes"
    assert then.find_node_by_name("Relu_0").get_attr("_in_sub") == [1, 2]
    assert loaded.find_node_by_name("If_0").get_subgraph_names() == ["then_branch", "else_branch"]
    # Loaded subgraphs are owned by the loaded graph, which is a fresh, writable graph.
    assert not loaded.is_moved
    then.set_attr("changed", 1)
    assert not g.get_subgraph("then").has_attr("changed")


def test_nested_subgraphs_round_trip():
    g = rich_graph()
    then = g.get_subgraph("then")
    inner = branch("inner", Neg)
    inner.get_direct_nodes()[1].set_attr("_deep", float("nan"))
    then.add_subgraph(inner, then.find_node_by_name("Relu_0"), name="deep_slot")
    loaded = Graph.from_bytes(g.to_bytes())
    assert_round_trip(g, loaded)
    deep = loaded.get_subgraph("inner")
    assert deep.get_parent_node().name == "Relu_0" and deep.get_parent_graph().name == "then"
    assert math.isnan(deep.find_node_by_name("Neg_0").get_attr("_deep"))


def test_save_and_load_files(tmp_path):
    g = rich_graph()
    path = tmp_path / "g.gegraph"
    g.save(path)
    assert path.read_bytes() == g.to_bytes()
    assert path.read_bytes()[:12] == HEADER
    assert_round_trip(g, Graph.load(path))
    g.save(str(tmp_path / "s.bin"))
    assert_round_trip(g, Graph.load(str(tmp_path / "s.bin")))
    with pytest.raises(ge.GeError, match="cannot read"):
        Graph.load(tmp_path / "missing.bin")
    with pytest.raises(ge.GeError, match="cannot write"):
        g.save(tmp_path / "no_such_dir" / "g.bin")


def test_loaded_graph_is_independent(tmp_path):
    g = rich_graph()
    loaded = Graph.from_bytes(g.to_bytes())
    loaded.remove_node(loaded.find_node_by_name("Relu_0"))
    loaded.set_attr("int", 5)
    assert g.find_node_by_name("Relu_0") is not None and g.get_attr("int") == -(2**63)
    # A loaded graph can move into another graph as a subgraph.
    host = rich_graph()
    host.add_subgraph(loaded, host.find_node_by_name("Exp_0"), name="loaded")
    again = Graph.from_bytes(host.to_bytes())
    with pytest.raises(RuntimeError, match="Failed to find Node name Relu_0"):
        again.find_node_by_name("Exp_0").get_subgraph("loaded").find_node_by_name("Relu_0")


def test_graphs_with_removed_nodes_and_edges_round_trip():
    g = rich_graph()
    g.remove_node(g.find_node_by_name("Exp_0"))
    relu = g.find_node_by_name("Relu_0")
    g.remove_edge(g.find_node_by_name("If_0"), -1, relu, -1)
    g.add_data_edge(g.find_node_by_name("input_1"), 0, relu, 0)
    g.remove_subgraph("else")
    loaded = Graph.from_bytes(g.to_bytes())
    assert_round_trip(g, loaded)
    with pytest.raises(RuntimeError, match="Failed to find Node name Exp_0"):
        loaded.find_node_by_name("Exp_0")
    assert [n.name for n in loaded.find_node_by_name("Relu_0").get_in_control_nodes()] == ["input_0"]
    assert [s.name for s in loaded.get_all_subgraphs()] == ["then"]


def test_empty_graph_and_subgraph_view_round_trip():
    empty = Graph("empty")
    loaded = Graph.from_bytes(empty.to_bytes())
    assert loaded.name == "empty" and loaded.get_direct_nodes() == []
    assert_round_trip(empty, loaded)
    then = rich_graph().get_subgraph("then")
    alone = Graph.from_bytes(then.to_bytes())
    assert alone.dump_to_stream(DumpFormat.kTxt) == then.dump_to_stream(DumpFormat.kTxt)
    assert alone.get_parent_node() is None and alone.get_attr("sub_attr") == "yes"


# Damaged files ---------------------------------------------------------------------------------


def test_wrong_magic_and_version():
    good = rich_graph().to_bytes()
    for bad in (b"", b"GERSGRPH", good[:11], b"XERSGRPH" + good[8:], b"gersgrph" + good[8:], b"\x00" * 64):
        with pytest.raises(ge.GeError, match="not a ge-rs graph file"):
            Graph.from_bytes(bad)
    for version in (0, 2, 7, 2**32 - 1):
        with pytest.raises(ge.GeError, match=f"graph file format version {version} is not supported"):
            Graph.from_bytes(good[:8] + struct.pack("<I", version) + good[12:])
    with pytest.raises(ge.GeError, match="damaged graph file"):
        Graph.from_bytes(HEADER)
    with pytest.raises(TypeError):
        Graph.from_bytes("GERSGRPH")


def test_trailing_bytes_are_an_error():
    with pytest.raises(ge.GeError, match="damaged graph file"):
        Graph.from_bytes(rich_graph().to_bytes() + b"\x00")


def test_hostile_lengths_and_nesting_are_errors():
    for payload in (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff",
                    b"\xdb\xff\xff\xff\xff", b"\x91" * 100_000, b"\x81\xa1a" * 100_000):
        with pytest.raises(ge.GeError, match="damaged graph file"):
            Graph.from_bytes(HEADER + payload)


# A small MessagePack codec, to damage files structurally.

class Bin(bytes):
    pass


class F32(float):
    pass


def mp_unpack(b, i=0):
    t = b[i]
    i += 1

    def n(width):
        return int.from_bytes(b[i:i + width], "big")
    if t <= 0x7F:
        return t, i
    if t >= 0xE0:
        return t - 256, i
    if 0x80 <= t <= 0x8F or t in (0xDE, 0xDF) or 0x90 <= t <= 0x9F or t in (0xDC, 0xDD):
        if t in (0xDE, 0xDC):
            count, i = n(2), i + 2
        elif t in (0xDF, 0xDD):
            count, i = n(4), i + 4
        else:
            count = t & 0x0F
        is_map = t <= 0x8F or t in (0xDE, 0xDF)
        out = {} if is_map else []
        for _ in range(count):
            k, i = mp_unpack(b, i)
            if is_map:
                v, i = mp_unpack(b, i)
                out[k] = v
            else:
                out.append(k)
        return out, i
    if 0xA0 <= t <= 0xBF:
        return b[i:i + (t & 0x1F)].decode(), i + (t & 0x1F)
    simple = {0xC0: None, 0xC2: False, 0xC3: True}
    if t in simple:
        return simple[t], i
    widths = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}
    if t in widths:
        w = widths[t]
        size = n(w)
        raw = b[i + w:i + w + size]
        return (Bin(raw) if t <= 0xC6 else raw.decode()), i + w + size
    if t == 0xCA:
        return F32(struct.unpack(">f", b[i:i + 4])[0]), i + 4
    if t == 0xCB:
        return struct.unpack(">d", b[i:i + 8])[0], i + 8
    ints = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
            0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}
    w, signed = ints[t]
    return int.from_bytes(b[i:i + w], "big", signed=signed), i + w


def mp_pack(v):
    if v is None or v is True or v is False:
        return {None: b"\xc0", False: b"\xc2", True: b"\xc3"}[v]
    if isinstance(v, Bin):
        return b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, F32):
        return b"\xca" + struct.pack(">f", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, int):
        return b"\xcf" + struct.pack(">Q", v) if v >= 0 else b"\xd3" + struct.pack(">q", v)
    if isinstance(v, str):
        e = v.encode()
        return b"\xdb" + struct.pack(">I", len(e)) + e
    if isinstance(v, list):
        return b"\xdd" + struct.pack(">I", len(v)) + b"".join(map(mp_pack, v))
    return b"\xdf" + struct.pack(">I", len(v)) + b"".join(mp_pack(k) + mp_pack(x) for k, x in v.items())


def chain_graph():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    r0 = Relu(x)
    r1 = Relu(r0)
    b.create_const(np.arange(4, dtype=np.float32))
    b.add_control_dependency(r1, [x])
    return b.build_and_reset([r1])


def decoded(g):
    data = g.to_bytes()
    obj, end = mp_unpack(data, 12)
    assert end == len(data)
    nodes = {s["value"]["name"]: s["value"] for s in obj["nodes"] if s["value"] is not None}
    ids = {s["value"]["name"]: {"idx": i, "version": s["version"]}
           for i, s in enumerate(obj["nodes"]) if s["value"] is not None}
    return obj, nodes, ids


def test_the_codec_reencodes_a_loadable_file():
    g = chain_graph()
    obj, _, _ = decoded(g)
    assert_round_trip(g, Graph.from_bytes(HEADER + mp_pack(obj)))


def damage_cases():
    def one_sided_data_edge(obj, n, ids):
        n["Relu_0"]["outputs"][0]["consumers"] = []

    def edge_from_missing_node(obj, n, ids):
        n["Relu_1"]["inputs"][0]["source"]["node"] = {"idx": 40, "version": 1}

    def edge_from_missing_port(obj, n, ids):
        n["Relu_1"]["inputs"][0]["source"]["index"] = 3

    def consumer_of_missing_input(obj, n, ids):
        n["Relu_0"]["outputs"][0]["consumers"].append({"index": 9, "node": ids["Relu_1"]})

    def duplicate_names(obj, n, ids):
        n["Relu_0"]["name"] = "Relu_1"

    def output_of_missing_node(obj, n, ids):
        obj["outputs"] = [{"index": 0, "node": {"idx": 1, "version": 7}}]

    def output_of_missing_port(obj, n, ids):
        obj["outputs"][0]["index"] = 1

    def control_edge_to_missing_node(obj, n, ids):
        n["Relu_1"]["in_control"].append({"idx": 99, "version": 1})

    def one_sided_in_control(obj, n, ids):
        n["Relu_1"]["in_control"] = [ids["Relu_0"]]  # Relu_0's out_control does not list Relu_1

    def one_sided_out_control(obj, n, ids):
        n["input_0"]["out_control"].append(ids["Relu_0"])

    def control_edge_to_itself(obj, n, ids):
        n["Relu_1"]["in_control"].append(ids["Relu_1"])
        n["Relu_1"]["out_control"].append(ids["Relu_1"])

    def control_edge_listed_twice(obj, n, ids):
        n["Relu_1"]["in_control"].append(ids["input_0"])
        n["input_0"]["out_control"].append(ids["Relu_1"])

    def consumer_listed_twice(obj, n, ids):
        n["Relu_0"]["outputs"][0]["consumers"] *= 2

    def missing_output_out_of_range(obj, n, ids):
        obj["missing_outputs"] = [4]

    def unknown_dtype(obj, n, ids):
        n["Relu_0"]["outputs"][0]["desc"]["dtype"] = "NOT_A_TYPE"

    def unknown_attr_kind(obj, n, ids):
        n["input_0"]["attrs"]["index"] = {"Complex": 1}

    def missing_field(obj, n, ids):
        del obj["nodes"]

    def bad_slot_occupancy(obj, n, ids):
        obj["nodes"][1]["version"] = 2

    def damaged_subgraph(obj, n, ids):
        sub, _, _ = decoded(branch("sub", Relu))
        sub["outputs"] = [{"index": 5, "node": {"idx": 2, "version": 1}}]
        n["Relu_1"]["subgraphs"] = [{"name": "s", "ir_index": 0, "graph": sub}]

    return [one_sided_data_edge, edge_from_missing_node, edge_from_missing_port, consumer_of_missing_input,
            duplicate_names, output_of_missing_node, output_of_missing_port, control_edge_to_missing_node,
            one_sided_in_control, one_sided_out_control, control_edge_to_itself, control_edge_listed_twice,
            consumer_listed_twice,
            missing_output_out_of_range, unknown_dtype, unknown_attr_kind, missing_field, bad_slot_occupancy,
            damaged_subgraph]


@pytest.mark.parametrize("damage", damage_cases(), ids=lambda f: f.__name__)
def test_structurally_damaged_files_are_errors(damage):
    obj, nodes, ids = decoded(chain_graph())
    damage(obj, nodes, ids)
    with pytest.raises(ge.GeError, match="damaged graph"):
        Graph.from_bytes(HEADER + mp_pack(obj))


def test_tensor_of_the_wrong_size_is_an_error():
    obj, nodes, ids = decoded(chain_graph())
    nodes["Const_0"]["attrs"]["value"]["Tensor"]["data"] = Bin(b"\x00" * 3)  # 4 floats need 16 bytes
    with pytest.raises(ge.GeError, match="damaged graph"):
        Graph.from_bytes(HEADER + mp_pack(obj))


def test_subgraph_nesting_depth_is_bounded_when_saving():
    """Files hold at most 100 levels of nested subgraphs (the reader bounds its recursion)."""
    inner = branch("g0", Relu)
    for k in range(1, 101):
        outer = branch(f"g{k}", Relu)
        outer.add_subgraph(inner, outer.find_node_by_name("Relu_0"))
        inner = outer
    assert len(Graph.from_bytes(inner.to_bytes()).get_all_subgraphs()) == 100
    outer = branch("g101", Relu)
    outer.add_subgraph(inner, outer.find_node_by_name("Relu_0"))
    with pytest.raises(ge.GeError, match="not supported: .*nested 101 levels"):
        outer.to_bytes()


# Properties: random graphs round trip -------------------------------------------------------------

names_st = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
f32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
dtypes = st.sampled_from(list(DataType))
np_dtypes = st.sampled_from([np.float32, np.float16, np.float64, np.int8, np.int32, np.int64, np.uint8,
                             np.uint64, np.bool_, np.complex64])


@st.composite
def tensors(draw):
    dt = np.dtype(draw(np_dtypes))
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    raw = draw(st.binary(min_size=int(np.prod(shape)) * dt.itemsize, max_size=int(np.prod(shape)) * dt.itemsize))
    a = np.frombuffer(raw, dtype=dt.newbyteorder("<")).reshape(shape)
    if dt == np.bool_:
        a = np.frombuffer(raw, np.uint8).reshape(shape) % 2 == 1
    return Tensor(a, format=draw(st.sampled_from([Format.FORMAT_ND, Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0])))


attr_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1), f32, names_st, st.booleans(), dtypes,
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=4),
    st.lists(f32, min_size=1, max_size=4),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.lists(names_st, min_size=1, max_size=4),
    st.lists(dtypes, min_size=1, max_size=4),
    st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3), min_size=1, max_size=3),
    tensors(),
)
attr_maps = st.dictionaries(names_st.map(lambda s: "_" + s), attr_values, max_size=3)
UNARY = [Relu, Neg, Sigmoid, Sqrt, Relu6, Exp]
BINARY = [Add, Sub, Mul, Maximum, Minimum]


@st.composite
def random_graphs(draw):
    b = GraphBuilder(draw(names_st))
    tensors_ = [b.create_input(i, shape=[2, 3]) for i in range(draw(st.integers(1, 3)))]
    graph_attrs = draw(st.dictionaries(names_st, attr_values, max_size=3))
    for k, v in graph_attrs.items():
        b.set_attr(k, v)
    for _ in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(UNARY + BINARY))
        args = [tensors_[draw(st.integers(0, len(tensors_) - 1))] for _ in range(1 if op in UNARY else 2)]
        if op is Exp:
            t = op(*args, base=draw(f32), scale=draw(f32), shift=draw(f32))
        else:
            t = op(*args)
        for k, v in draw(attr_maps).items():
            b.set_attr(k, v, tensor=t)
        if draw(st.booleans()):
            b.set_tensor_attr_int64(t, "_mem", draw(st.integers(-(2**63), 2**63 - 1)))
        if len(tensors_) > 1 and draw(st.booleans()):
            b.add_control_dependency(t, draw(st.lists(st.sampled_from(tensors_), min_size=1, max_size=2)))
        tensors_.append(t)
    outs = draw(st.lists(st.sampled_from(tensors_), min_size=1, max_size=3))
    return b.build_and_reset(outs), list(graph_attrs)


@settings(max_examples=60, deadline=None)
@given(gk=random_graphs())
def test_random_graphs_round_trip(gk):
    g, keys = gk
    g.validate()
    loaded = Graph.from_bytes(g.to_bytes())
    assert_round_trip(g, loaded, keys)
    assert all(loaded.has_attr(k) for k in keys)
    loaded.validate()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gk=random_graphs())
def test_random_graphs_save_and_load(gk, tmp_path):
    g, keys = gk
    path = tmp_path / "g.bin"
    g.save(path)
    assert_round_trip(g, Graph.load(path), keys)


@settings(max_examples=80, deadline=None)
@given(value=attr_values, key=names_st)
def test_any_attribute_value_round_trips(value, key):
    g = Graph("g")
    g.set_attr(key, value)
    stored = g.get_attr(key)
    if isinstance(value, float) and not math.isnan(value):
        assert stored == value  # already float32
    loaded = Graph.from_bytes(g.to_bytes())
    assert same_value(loaded.get_attr(key), stored)


# Properties: damaged files are errors, never crashes -----------------------------------------------

GOOD = None


def good_file():
    global GOOD
    if GOOD is None:
        GOOD = rich_graph().to_bytes()
    return GOOD


def exercise(g):
    """Uses a graph that loaded from damaged bytes: only GeError / ValueError / RuntimeError."""
    g.dump_to_stream(DumpFormat.kTxt)
    g.dump_to_stream(DumpFormat.kReadable)
    try:
        g.validate()
    except ge.GeError:
        pass
    for n in g.get_all_nodes():
        n.name, n.type, n.get_ir_attrs(), n.get_private_attrs(), edges(n)
        for i in range(n.get_inputs_size()):
            n.get_input_desc(i)
        for i in range(n.get_outputs_size()):
            n.get_output_desc(i)
    again = Graph.from_bytes(g.to_bytes())
    assert again.dump_to_stream(DumpFormat.kTxt) == g.dump_to_stream(DumpFormat.kTxt)


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, 10**9))
def test_truncated_files_are_errors(cut):
    data = good_file()
    with pytest.raises(ge.GeError):
        Graph.from_bytes(data[:cut % len(data)])


@settings(max_examples=100, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(12, 10**9), st.integers(1, 255)), min_size=1, max_size=6))
def test_byte_flips_are_errors_or_harmless(flips):
    data = bytearray(good_file())
    for pos, x in flips:
        data[12 + pos % (len(data) - 12)] ^= x
    try:
        g = Graph.from_bytes(bytes(data))
    except (ge.GeError, ValueError):
        return
    exercise(g)


@settings(max_examples=60, deadline=None)
@given(payload=st.binary(max_size=200))
def test_random_payloads_are_errors(payload):
    with pytest.raises((ge.GeError, ValueError)):
        Graph.from_bytes(HEADER + payload)


@settings(max_examples=60, deadline=None)
@given(magic=st.binary(min_size=8, max_size=8), rest=st.binary(max_size=40))
def test_wrong_magic_is_an_error(magic, rest):
    assume(magic != b"GERSGRPH")
    with pytest.raises(ge.GeError, match="bad magic bytes"):
        Graph.from_bytes(magic + good_file()[8:])
    with pytest.raises(ge.GeError, match="bad magic bytes"):
        Graph.from_bytes(magic + rest)


@settings(max_examples=60, deadline=None)
@given(version=st.integers(0, 2**32 - 1))
def test_wrong_version_is_an_error(version):
    assume(version != 1)
    with pytest.raises(ge.GeError, match=f"version {version} is not supported"):
        Graph.from_bytes(b"GERSGRPH" + struct.pack("<I", version) + good_file()[12:])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_damaged_structure_is_an_error_or_harmless(data):
    """Replaces one random value of the decoded file with another random value."""
    obj, _, _ = decoded(chain_graph())
    slots = []

    def walk(o):
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else []
        for k, v in items:
            slots.append((o, k))
            walk(v)
    walk(obj)
    parent, key = data.draw(st.sampled_from(slots))
    parent[key] = data.draw(st.one_of(st.none(), st.booleans(), st.integers(-5, 2**32 + 5), st.text(max_size=5),
                                      st.just([]), st.just({}), st.floats()))
    try:
        g = Graph.from_bytes(HEADER + mp_pack(obj))
    except (ge.GeError, ValueError):
        return
    exercise(g)


def test_many_random_corruptions_do_not_crash_the_process():
    """A separate process: a crash (abort, segfault, panic) shows as its exit status."""
    script = r"""
import random, sys
import ge
from ge.graph import Graph
data = sys.stdin.buffer.read()
rng = random.Random(1234)
for i in range(3000):
    d = bytearray(data)
    k = i % 4
    if k == 0:
        d = d[:rng.randrange(len(d))]
    elif k == 1:
        for _ in range(rng.randint(1, 8)):
            d[rng.randrange(12, len(d))] = rng.randrange(256)
    elif k == 2:
        p = rng.randrange(12, len(d)); d[p:p] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
    else:
        p = rng.randrange(12, len(d)); del d[p:p + rng.randint(1, 9)]
    try:
        g = Graph.from_bytes(bytes(d))
        g.dump_to_stream(); g.dump_to_stream(ge.graph.DumpFormat.kTxt)
    except (ge.GeError, ValueError):
        pass
print("done")
"""
    r = subprocess.run([sys.executable, "-c", script], input=good_file(), capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert r.stdout.decode().strip() == "done"
    assert b"panicked" not in r.stderr


# Property: the readable dump is in topological order ---------------------------------------------

LINE = re.compile(r"^\s*(%\S+(?:, %\S+)*) = (\w+)\(([^)]*)\)(.*)$")


def dump_order(g):
    """[(name, [input names], [control input names])] in the order of the readable dump."""
    out = []
    for line in g.dump_to_stream(DumpFormat.kReadable).splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name = m.group(1).split(",")[0].lstrip("%").split(":")[0]
        args = [a.strip().lstrip("%").split(":")[0] for a in m.group(3).split(",") if a.strip() not in ("", "None")]
        ctrl = re.search(r" after\[([^\]]*)\]", m.group(4))
        ctrl_names = [c.strip().lstrip("^") for c in ctrl.group(1).split(",")] if ctrl else []
        out.append((name, args, ctrl_names))
    return out


def assert_topological(g):
    order = dump_order(g)
    inputs = {n.name for n in g.get_direct_nodes() if n.type == "Data"}
    listed = [name for name, _, _ in order]
    assert sorted(listed + sorted(inputs)) == sorted(n.name for n in g.get_direct_nodes())
    seen = set(inputs)
    for name, args, ctrl in order:
        for a in args + ctrl:
            assert a in seen, f"{name} uses {a} before it is defined"
        seen.add(name)
    return listed


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_readable_dump_of_builder_dags_is_topological(data):
    b = GraphBuilder("dag")
    ts = [b.create_input(i, shape=[3]) for i in range(data.draw(st.integers(1, 3)))]
    for _ in range(data.draw(st.integers(1, 15))):
        op = data.draw(st.sampled_from(UNARY + BINARY))
        t = op(*data.draw(st.lists(st.sampled_from(ts), min_size=1 if op in UNARY else 2,
                                   max_size=1 if op in UNARY else 2)))
        if data.draw(st.booleans()):
            b.add_control_dependency(t, data.draw(st.lists(st.sampled_from(ts), min_size=1, max_size=2)))
        ts.append(t)
    g = b.build_and_reset([ts[-1]])
    listed = assert_topological(g)
    # Nothing constrains the builder's order further: the dump keeps creation order.
    assert listed == [n.name for n in g.get_direct_nodes() if n.type != "Data"]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_readable_dump_is_topological_after_rewiring(data):
    """Nodes created in one order, then rewired so that a random other order is required."""
    n = data.draw(st.integers(2, 10))
    b = GraphBuilder("rewired")
    x = b.create_input(0, shape=[3])
    ts = [Add(x, x) for _ in range(n)]
    g = b.build_and_reset(ts)
    nodes = [g.find_node_by_name(f"Add_{k}") for k in range(n)]
    inp = g.find_node_by_name("input_0")
    perm = data.draw(st.permutations(range(n)))  # the order the edges will force
    preds = {k: set() for k in range(n)}
    for pos in range(1, n):
        k = perm[pos]
        earlier = perm[:pos]
        for port in range(2):
            if data.draw(st.booleans()):
                src = data.draw(st.sampled_from(earlier))
                g.remove_edge(inp, 0, nodes[k], port)
                g.add_data_edge(nodes[src], 0, nodes[k], port)
                preds[k].add(src)
        for src in data.draw(st.lists(st.sampled_from(earlier), max_size=2)):
            g.add_control_edge(nodes[src], nodes[k])
            preds[k].add(src)
    g.validate()
    listed = assert_topological(g)
    # The order is the stable one: among ready nodes, the earliest created first.
    ready = [k for k in range(n) if not preds[k]]
    heapq.heapify(ready)
    left = {k: set(p) for k, p in preds.items()}
    expect = []
    while ready:
        k = heapq.heappop(ready)
        expect.append(f"Add_{k}")
        for j in range(n):
            if k in left[j]:
                left[j].discard(k)
                if not left[j]:
                    heapq.heappush(ready, j)
    assert listed == expect
    # And the order survives a round trip.
    assert dump_order(Graph.from_bytes(g.to_bytes())) == dump_order(g)


def test_txt_dump_shows_every_field_and_distinguishes_types():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = Relu(x)
    b.set_attr("s", "nan")
    b.set_attr("f", float("nan"))
    b.set_attr("t", "DT_INT8")
    b.set_attr("d", DataType.DT_INT8)
    g = b.build_and_reset([y])
    node = g.find_node_by_name("Relu_0")
    node.set_input_attr("_in", 0, 5)
    txt = g.dump_to_stream(DumpFormat.kTxt)
    assert 'key: "s" value: "nan"' in txt and 'key: "f" value: NaN' in txt
    assert 'key: "t" value: "DT_INT8"' in txt and 'key: "d" value: DT_INT8' in txt
    assert 'attr { key: "_in" value: 5 }' in txt
    assert "origin_shape: [2]" in txt and "placement: PLACEMENT_HOST" in txt


def test_txt_dump_differs_when_constant_data_differs():
    def graph(v):
        b = GraphBuilder("g")
        return b.build_and_reset([b.create_const_float([v, 2.0])])

    assert graph(1.0).dump_to_stream(DumpFormat.kTxt) != graph(1.5).dump_to_stream(DumpFormat.kTxt)


def test_from_bytes_accepts_buffers_and_rejects_str():
    data = rich_graph().to_bytes()
    for buf in (bytearray(data), memoryview(data)):
        assert Graph.from_bytes(buf).dump_to_stream(DumpFormat.kTxt) == Graph.from_bytes(data).dump_to_stream(
            DumpFormat.kTxt)
    with pytest.raises(TypeError):
        Graph.from_bytes("GERSGRPH")
