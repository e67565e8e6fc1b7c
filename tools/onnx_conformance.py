#!/usr/bin/env python3
"""ONNX conformance: ONNX backend test cases through ``ge.onnx.load`` and a ``Session``.

Sets:

- ``node``: the ONNX backend node tests pinned in ``$GE_ONNX_NODE_DIR`` (default
  ``../shared/onnx-node`` beside the repository); where that folder is absent the set is not run
  (and its cases are not collected by the tests);
- ``node-generated``: the node tests of the installed ``onnx`` package, generated on first use
  into a cache (tools/onnx_node_cases.py), so every clone has them;
- ``pytorch-converted``, ``pytorch-operator``, ``simple``: shipped inside the ``onnx`` wheel.

Each case is loaded once and run in both graph modes (``ge.graphMode`` on: captured plan; off:
eager), and every output is compared with the expected one (dtype, shape, values within the
case's tolerance). The allow-list ``tests/onnx/onnx_conformance.json`` names the cases that pass,
per set (CI runs exactly those), and the excluded families (regex, tag, reason, the sets they apply
to).

Usage::

    python tools/onnx_conformance.py                 # run every set, print counts and failures
    python tools/onnx_conformance.py --set node -k conv   # one set, cases matching a regex
    python tools/onnx_conformance.py --promote       # add newly passing cases to the allow-list
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import onnx_node_cases  # tools/, beside this file

ROOT = Path(__file__).resolve().parent.parent
ALLOW_LIST = ROOT / "tests" / "onnx" / "onnx_conformance.json"
SETS = ("node", "node-generated", "pytorch-converted", "pytorch-operator", "simple")
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


def node_dir() -> Path:
    return Path(os.environ.get("GE_ONNX_NODE_DIR", str(ROOT.parent / "shared" / "onnx-node")))


def available(name: str) -> bool:
    """Whether a set can run here, without generating anything: the pinned node tests need their
    folder, every other set only the ``onnx`` package."""
    if name == "node":
        return node_dir().is_dir()
    if name == "node-generated":
        return onnx_node_cases.cache_key() is not None
    return set_dir(name) is not None


def set_dir(name: str) -> Optional[Path]:
    """The directory holding a set's cases (generated on first use for ``node-generated``), or
    None when it is not available."""
    if name == "node":
        d = node_dir()
        return d if d.is_dir() else None
    if name == "node-generated":
        return onnx_node_cases.cases_dir()
    try:
        import onnx  # noqa: F401  (test extra)
    except ImportError:
        return None
    d = Path(onnx.__file__).parent / "backend" / "test" / "data" / name
    return d if d.is_dir() else None


def cases(name: str) -> List[str]:
    d = set_dir(name)
    if d is None:
        return []
    return sorted(p.name for p in d.iterdir() if (p / "model.onnx").is_file())


def load_allow_list() -> dict:
    return json.loads(ALLOW_LIST.read_text())


def excluded_family(allow: dict, set_name: str, case: str) -> Optional[dict]:
    for fam in allow.get("excluded", []):
        if set_name in fam.get("sets", SETS) and re.search(fam["pattern"], case):
            return fam
    return None


def tolerance(allow: dict, case: str) -> Tuple[float, float]:
    for t in allow.get("tolerances", []):
        if re.search(t["pattern"], case):
            return float(t["rtol"]), float(t["atol"])
    return DEFAULT_RTOL, DEFAULT_ATOL


def _read_value(path: str, type_proto=None) -> Tuple[str, Any]:
    """One input or output of a data set: a numpy array, or for a value of sequence type a list
    of arrays, for an optional the array, list or None (``type_proto``: the model's type of it)."""
    import onnx
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    with open(path, "rb") as f:
        data = f.read()
    if kind == "sequence_type":
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return p.name, numpy_helper.to_list(p)
    if kind == "optional_type":
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return p.name, numpy_helper.to_optional(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    if not t.dims and not t.raw_data and t.data_type == 0:
        raise ValueError(f"{os.path.basename(path)} is not a tensor (sequence or optional data)")
    return t.name, numpy_helper.to_array(t)


def _data_sets(case_dir: Path) -> List[Tuple[List[Tuple[str, Any]], List[Tuple[str, Any]]]]:
    import onnx

    graph = onnx.load(str(case_dir / "model.onnx"), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    in_types = [vi.type for vi in graph.input if vi.name not in inits]
    out_types = [vi.type for vi in graph.output]

    def typ(types, k):
        return types[k] if k < len(types) else None

    out = []
    for ds in sorted(case_dir.glob("test_data_set_*")):
        in_files = sorted(glob.glob(str(ds / "input_*.pb")), key=_pb_index)
        out_files = sorted(glob.glob(str(ds / "output_*.pb")), key=_pb_index)
        ins = [_read_value(p, typ(in_types, k)) for k, p in enumerate(in_files)]
        outs = [_read_value(p, typ(out_types, k)) for k, p in enumerate(out_files)]
        out.append((ins, outs))
    return out


def _pb_index(p: str) -> int:
    return int(re.search(r"_(\d+)\.pb$", p).group(1))


def _order_inputs(graph, given: List[Tuple[str, Any]]) -> List[Any]:
    """The given inputs in the order of the graph's Data indexes (by name when named)."""
    data = sorted(
        (n for n in graph.get_direct_nodes() if n.type in ("Data", "RefData")),
        key=lambda n: n.get_attr("index"),
    )
    by_name = {name: arr for name, arr in given if name}
    if by_name and all(n.name in by_name for n in data):
        return [by_name[n.name] for n in data]
    if len(given) != len(data):
        raise ValueError(f"the case gives {len(given)} inputs, the graph has {len(data)}")
    return [arr for _, arr in given]


# ml_dtypes' types, which ge returns as their raw bits (one element a byte for the sub-byte ones).
_BITS_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz",
               "float8_e5m2fnuz", "float4_e2m1fn", "int4", "uint4", "int2", "uint2")


def fetched(v: Any) -> Any:
    """A run's output as numpy: a tensor's array, a list's arrays, None for an empty optional."""
    if v is None:
        return None
    if isinstance(v, list):
        return [fetched(x) for x in v]
    return np.asarray(v.numpy())


def compare(got: Any, want: Any, rtol: float, atol: float, what: str) -> None:
    if isinstance(want, list) or want is None:
        if want is None or got is None:
            if got is not want:
                raise AssertionError(f"{what}: {'None' if got is None else type(got).__name__}, expected "
                                     f"{'None' if want is None else type(want).__name__}")
            return
        if not isinstance(got, list) or len(got) != len(want):
            raise AssertionError(f"{what}: {type(got).__name__} of {len(got) if isinstance(got, list) else '-'}, "
                                 f"expected a list of {len(want)}")
        for k, (g, w) in enumerate(zip(got, want)):
            compare(g, w, rtol, atol, f"{what} element {k}")
        return
    if isinstance(got, list) or got is None:
        raise AssertionError(f"{what}: {'None' if got is None else 'a list'}, expected a tensor")
    if want.dtype.name in _BITS_NAMES and \
            got.dtype.itemsize == want.dtype.itemsize and got.dtype.kind == "u":
        # ge returns these types as their raw bits: read them as the expected type.
        got = got.view(want.dtype)
    if want.dtype.name in _BITS_NAMES and got.dtype == want.dtype:
        if got.shape != want.shape:
            raise AssertionError(f"{what}: shape {got.shape}, expected {want.shape}")
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)
        return
    if got.dtype != want.dtype:
        raise AssertionError(f"{what}: dtype {got.dtype}, expected {want.dtype}")
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape}, expected {want.shape}")
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def run_case(set_name: str, case: str, allow: Optional[dict] = None) -> None:
    """Loads and runs one case in both graph modes; raises on any failure."""
    import ge.onnx
    from ge.session import Session

    allow = allow if allow is not None else load_allow_list()
    d = set_dir(set_name)
    if d is None:
        raise FileNotFoundError(f"set {set_name} is not available")
    case_dir = d / case
    rtol, atol = tolerance(allow, case)
    graph = ge.onnx.load(case_dir / "model.onnx")
    sets = _data_sets(case_dir)
    for mode in ("on", "off"):
        s = Session({"ge.graphMode": mode})
        s.add_graph(0, graph)
        for k, (ins, outs) in enumerate(sets):
            got = s.run_graph(0, _order_inputs(graph, ins))
            if len(got) != len(outs):
                raise AssertionError(f"{len(got)} outputs, expected {len(outs)}")
            for i, (g, (_, w)) in enumerate(zip(got, outs)):
                compare(fetched(g), w, rtol, atol, f"graphMode={mode} data set {k} output {i}")


def run_all(selected: List[str], pattern: Optional[str], verbose: bool) -> Dict[str, Dict[str, str]]:
    """Runs the cases; returns {set: {case: "" (pass) or the failure}}."""
    allow = load_allow_list()
    results: Dict[str, Dict[str, str]] = {}
    for s in selected:
        names = cases(s)
        if not names:
            print(f"{s}: not available" + (f" (looked in {node_dir()}; set GE_ONNX_NODE_DIR)" if s == "node" else ""))
            continue
        res: Dict[str, str] = {}
        for c in names:
            if pattern and not re.search(pattern, c):
                continue
            try:
                run_case(s, c, allow)
                res[c] = ""
            except Exception as e:  # noqa: BLE001 - every failure is a result here
                msg = f"{type(e).__name__}: {e}".strip().splitlines()
                res[c] = " / ".join(msg[:3])[:300]
                if verbose:
                    traceback.print_exc()
        results[s] = res
    return results


def summary(allow: dict, results: Dict[str, Dict[str, str]]) -> List[str]:
    lines = []
    for s, res in results.items():
        total = len(res)
        passed = sum(1 for v in res.values() if not v)
        excluded = sum(1 for c in res if excluded_family(allow, s, c))
        passed_in = sum(1 for c, v in res.items() if not v and not excluded_family(allow, s, c))
        rest = total - excluded
        pct = 100.0 * passed_in / rest if rest else 0.0
        lines.append(f"{s}: {passed}/{total} pass; outside exclusions {passed_in}/{rest} ({pct:.1f}%), "
                     f"{excluded} excluded")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=SETS + ("all",), default="all")
    ap.add_argument("-k", dest="pattern", help="only cases matching this regex")
    ap.add_argument("--promote", action="store_true", help="add newly passing cases to the allow-list")
    ap.add_argument("--failures", action="store_true", help="print every failure")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    selected = list(SETS) if a.set == "all" else [a.set]
    t0 = time.perf_counter()
    results = run_all(selected, a.pattern, a.verbose)
    allow = load_allow_list()
    regressions = []
    for s, res in results.items():
        listed = set(allow["passing"].get(s, []))
        for c, v in sorted(res.items()):
            if v and c in listed:
                regressions.append(f"{s}/{c}: {v}")
            if v and (a.failures or a.pattern) and c not in listed:
                fam = excluded_family(allow, s, c)
                print(f"FAIL {s}/{c}{' [' + fam['family'] + ']' if fam else ''}: {v}")
    for line in summary(allow, results):
        print(line)
    print(f"({time.perf_counter() - t0:.1f} s)")
    if a.promote:
        added = 0
        for s, res in results.items():
            listed = set(allow["passing"].get(s, []))
            new = {c for c, v in res.items() if not v} - listed
            added += len(new)
            allow["passing"][s] = sorted(listed | new)
        ALLOW_LIST.write_text(json.dumps(allow, indent=1) + "\n")
        print(f"promoted {added} cases into {ALLOW_LIST.relative_to(ROOT)}")
    if regressions:
        print("allow-listed cases that fail:\n  " + "\n  ".join(regressions))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
