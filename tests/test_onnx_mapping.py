"""The ONNX -> GE operator mapping table (ops/onnx_mapping.json).

Every operator type used by the ONNX backend node tests maps to GE operators of the built-in
library, or is excluded with a reason and a family. The node-test models are read with the small
protobuf reader below (the `onnx` package is not a test dependency).
"""

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import ge.ops

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "ops" / "onnx_mapping.json"
SUMMARY = REPO / "ops" / "ONNX_MAPPING.md"

FAMILIES = {"training", "sequence", "string", "ml", "random", "missing", "unsupported"}
MAPPED_KEYS = {"ge", "note", "native", "direct"}
EXCLUDED_KEYS = {"excluded", "family", "needs", "note"}

# Raise it when more ONNX operator types get mapped; it must never go down.
MAPPED_FLOOR = 183


def _load_table():
    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        dup = sorted(k for k, n in Counter(keys).items() if n > 1)
        assert not dup, f"duplicate keys in {TABLE.name}: {dup}"
        return dict(pairs)

    return json.loads(TABLE.read_text(encoding="utf-8"), object_pairs_hook=no_duplicates)


TABLE_DATA = _load_table()
LIBRARY = set(ge.ops.list_ops())


def _ge_names(entry):
    return list(entry.get("ge", [])) + list(entry.get("native", [])) + list(entry.get("needs", []))


# --------------------------------------------------------------------------------------------
# 1. shape of every entry


def test_keys_are_sorted_and_well_formed():
    keys = list(TABLE_DATA)
    assert keys == sorted(keys), "onnx_mapping.json keys must be sorted"
    for key in keys:
        domain, sep, op_type = key.partition("::")
        assert sep and domain and op_type and "::" not in op_type, f"bad key {key!r} (want 'domain::OpType')"
        assert domain == "ai.onnx" or domain.startswith("ai.onnx."), f"{key}: unexpected domain"


@pytest.mark.parametrize("key", sorted(TABLE_DATA))
def test_entry_is_mapped_or_excluded(key):
    entry = TABLE_DATA[key]
    assert isinstance(entry, dict), key
    mapped, excluded = "ge" in entry, "excluded" in entry
    assert mapped != excluded, f"{key}: needs exactly one of 'ge' and 'excluded'"
    if mapped:
        assert set(entry) <= MAPPED_KEYS, f"{key}: unknown keys {set(entry) - MAPPED_KEYS}"
        ops = entry["ge"]
        assert isinstance(ops, list) and ops, f"{key}: 'ge' must be a non-empty list"
        assert all(isinstance(o, str) and o for o in ops), key
        assert len(set(ops)) == len(ops), f"{key}: repeated GE operator in 'ge'"
    else:
        assert set(entry) <= EXCLUDED_KEYS, f"{key}: unknown keys {set(entry) - EXCLUDED_KEYS}"
        assert isinstance(entry["excluded"], str) and entry["excluded"].strip(), f"{key}: empty reason"
        assert entry.get("family") in FAMILIES, f"{key}: family must be one of {sorted(FAMILIES)}"
        if entry["family"] == "missing":
            needs = entry.get("needs")
            assert isinstance(needs, list) and needs, \
                f"{key}: a 'missing' entry names the GE operators in 'needs'"
            for op in needs:
                assert op in entry["excluded"], f"{key}: the reason should name {op}"
        else:
            assert "needs" not in entry, f"{key}: 'needs' belongs to family 'missing'"
    for field in ("note",):
        if field in entry:
            assert isinstance(entry[field], str) and entry[field].strip(), f"{key}: empty {field}"
    for field in ("native", "needs"):
        if field in entry:
            assert isinstance(entry[field], list) and entry[field], \
                f"{key}: '{field}' must be a non-empty list"


# --------------------------------------------------------------------------------------------
# 2. every GE operator named exists (or, for native/needs, is known to be missing)


def test_every_mapped_ge_op_is_in_the_library():
    unknown = sorted({f"{k}: {op}" for k, e in TABLE_DATA.items()
                      for op in e.get("ge", []) if op not in LIBRARY})
    assert not unknown, "GE operators not in ge.ops.list_ops():\n" + "\n".join(unknown)


def test_missing_and_native_ops_are_really_missing():
    # 'needs' (excluded: missing) and 'native' (GE's dedicated operator, replacing a composite)
    # name operators that are NOT in the library yet. Once one is added, update the entry.
    added = sorted({f"{k}: {op}" for k, e in TABLE_DATA.items()
                    for op in e.get("needs", []) + e.get("native", []) if op in LIBRARY})
    assert not added, ("now in the library, update ops/onnx_mapping.json (map to it, or drop it from "
                       "'native'/'needs'):\n" + "\n".join(added))


# --------------------------------------------------------------------------------------------
# 3. the keys are exactly the operator types of the ONNX node tests
#
# A minimal protobuf wire-format reader: enough of onnx.proto to walk every node.
#   ModelProto:     graph = 7, functions = 25
#   GraphProto:     node = 1
#   NodeProto:      op_type = 4, domain = 7, attribute = 5
#   AttributeProto: g = 6, graphs = 11
#   FunctionProto:  name = 1, node = 7, domain = 10


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf):
    """Yields (field number, value) for the varint and length-delimited fields of a message;
    fixed32/fixed64 fields are skipped."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value = buf[pos:pos + size]
            if len(value) != size:
                raise ValueError("truncated field")
            pos += size
        elif wire == 1:
            pos += 8
            continue
        elif wire == 5:
            pos += 4
            continue
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, value


def _text(value):
    return bytes(value).decode("utf-8")


def _node(buf, out, local_functions):
    op_type, domain, subgraphs = "", "", []
    for number, value in _fields(buf):
        if number == 4:
            op_type = _text(value)
        elif number == 7:
            domain = _text(value)
        elif number == 5:
            subgraphs.extend(v for n, v in _fields(value) if n in (6, 11))
    if (domain, op_type) not in local_functions:  # a call of a model-local function
        out.add(f"{domain or 'ai.onnx'}::{op_type}")
    for graph in subgraphs:
        _graph(graph, out, local_functions)


def _graph(buf, out, local_functions):
    for number, value in _fields(buf):
        if number == 1:
            _node(value, out, local_functions)


def model_op_types(data):
    """The 'domain::OpType' strings of every node of a serialized ModelProto, including
    subgraphs (If/Loop/Scan bodies, ...) and the bodies of model-local functions."""
    buf = memoryview(data)
    graphs, functions = [], []
    for number, value in _fields(buf):
        if number == 7:
            graphs.append(value)
        elif number == 25:
            functions.append(value)
    local = set()
    for f in functions:
        name = domain = ""
        for number, value in _fields(f):
            if number == 1:
                name = _text(value)
            elif number == 10:
                domain = _text(value)
        local.add((domain, name))
    out = set()
    for g in graphs:
        _graph(g, out, local)
    for f in functions:
        for number, value in _fields(f):
            if number == 7:
                _node(value, out, local)
    return out


def test_reader_on_a_hand_built_model():
    # ModelProto(ir_version=8, graph=GraphProto(node=[
    #     NodeProto(op_type="If",
    #               attribute=[AttributeProto(type=GRAPH, g=GraphProto(node=[Relu, com.x::Foo]))]),
    #     NodeProto(op_type="Conv", domain="", <a fixed32 field>)]))
    def varint(n):
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)

    def field(number, payload):
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    relu = field(4, b"Relu")
    foo = field(4, b"Foo") + field(7, b"com.x")
    body = field(1, relu) + field(1, foo)
    attr = field(1, b"then_branch") + varint(20 << 3) + varint(5) + field(6, body)
    if_node = field(4, b"If") + field(5, attr)
    conv = field(4, b"Conv") + field(7, b"") + varint(2 << 3 | 5) + bytes([0, 0, 128, 63])
    model = varint(1 << 3) + varint(8) + field(7, field(1, if_node) + field(1, conv))
    assert model_op_types(model) == {"ai.onnx::If", "ai.onnx::Relu", "com.x::Foo", "ai.onnx::Conv"}
    # a call of a model-local function counts its body, not the call
    fn = field(1, b"MyFn") + field(10, b"local") + field(7, field(4, b"Tanh"))
    call = field(4, b"MyFn") + field(7, b"local")
    model = field(7, field(1, call)) + field(25, fn)
    assert model_op_types(model) == {"ai.onnx::Tanh"}


def _node_dir():
    return Path(os.environ.get("GE_ONNX_NODE_DIR", REPO.parent / "shared" / "onnx-node"))


def test_keys_match_the_onnx_node_tests():
    root = _node_dir()
    if not root.is_dir():
        pytest.skip(f"ONNX node-test data not found at {root} (set GE_ONNX_NODE_DIR)")
    models = sorted(root.glob("*/model.onnx"))
    assert models, f"no */model.onnx under {root}"
    used = set()
    for path in models:
        used |= model_op_types(path.read_bytes())
    keys = set(TABLE_DATA)
    assert not used - keys, \
        f"operator types used by the node tests but not in the table: {sorted(used - keys)}"
    assert not keys - used, f"table entries not used by any node test: {sorted(keys - used)}"


# --------------------------------------------------------------------------------------------
# 4. coverage can only go up


def _counts():
    mapped = sum("ge" in e for e in TABLE_DATA.values())
    families = Counter(e["family"] for e in TABLE_DATA.values() if "excluded" in e)
    return mapped, families


def test_mapped_count_floor():
    mapped, families = _counts()
    excluded = sum(families.values())
    print(f"\nONNX mapping: {mapped} mapped, {excluded} excluded of {len(TABLE_DATA)} "
          f"({', '.join(f'{f} {n}' for f, n in sorted(families.items()))})")
    assert mapped >= MAPPED_FLOOR, f"only {mapped} ONNX operator types mapped, the floor is {MAPPED_FLOOR}"


def test_summary_matches_the_table():
    text = SUMMARY.read_text(encoding="utf-8")
    mapped, families = _counts()
    assert f"| mapped | {mapped} |" in text, "ONNX_MAPPING.md: the mapped count is out of date"
    for family, n in families.items():
        assert f"| {family} | {n} |" in text, \
            f"ONNX_MAPPING.md: the count of family {family!r} is out of date"
    for key, entry in TABLE_DATA.items():
        for op in entry.get("needs", []):
            assert f"`{op}`" in text, f"ONNX_MAPPING.md does not list the missing GE operator {op} ({key})"
