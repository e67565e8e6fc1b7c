"""The ONNX -> GE operator mapping table (ops/onnx_mapping.json).

Every operator type used by the ONNX backend node tests maps to GE operators of the built-in
library, or is excluded with a reason and a family. The node-test models are read with `onnx`
(a test dependency).
"""

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

import ge.ops

REPO = Path(__file__).resolve().parents[2]
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


def model_op_types(model) -> set:
    """The 'domain::OpType' strings of every node of an onnx.ModelProto, including subgraphs
    (If/Loop/Scan bodies, ...) and the bodies of model-local functions; a call of a model-local
    function counts its body, not the call."""
    local = {(f.domain, f.name) for f in model.functions}
    out = set()

    def walk(nodes):
        for n in nodes:
            if (n.domain, n.op_type) not in local:
                out.add(f"{n.domain or 'ai.onnx'}::{n.op_type}")
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g.node)
                for g in a.graphs:
                    walk(g.node)

    walk(model.graph.node)
    for f in model.functions:
        walk(f.node)
    return out


def test_op_types_of_a_hand_built_model():
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    def reread(model):
        return onnx.load_model_from_string(model.SerializeToString())

    body = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Foo", ["y"], ["z"], domain="com.x")],
        "body", [], [])
    if_node = helper.make_node("If", ["c"], ["o"], then_branch=body)
    conv = helper.make_node("Conv", ["a", "w"], ["v"], domain="")
    model = helper.make_model(helper.make_graph([if_node, conv], "g", [], []))
    assert model_op_types(reread(model)) == {
        "ai.onnx::If", "ai.onnx::Relu", "com.x::Foo", "ai.onnx::Conv"}
    # a call of a model-local function counts its body, not the call
    fn = helper.make_function("local", "MyFn", [], [], [helper.make_node("Tanh", ["p"], ["q"])],
                              opset_imports=[helper.make_opsetid("", 18)])
    call = helper.make_node("MyFn", [], [], domain="local")
    model = helper.make_model(helper.make_graph([call], "g", [], []), functions=[fn])
    assert model_op_types(reread(model)) == {"ai.onnx::Tanh"}


def _node_dir():
    """The pinned ONNX node tests where present ($GE_ONNX_NODE_DIR, default ../shared/onnx-node),
    else the node tests of the installed onnx, generated on first use (tools/onnx_node_cases.py)."""
    pinned = Path(os.environ.get("GE_ONNX_NODE_DIR", REPO.parent / "shared" / "onnx-node"))
    if pinned.is_dir():
        return pinned
    sys.path.insert(0, str(REPO / "tools"))
    import onnx_node_cases
    return onnx_node_cases.cases_dir()


def test_keys_match_the_onnx_node_tests():
    onnx = pytest.importorskip("onnx")
    root = _node_dir()
    models = sorted(root.glob("*/model.onnx"))
    assert models, f"no */model.onnx under {root}"
    used = set()
    for path in models:
        used |= model_op_types(onnx.load(str(path), load_external_data=False))
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
