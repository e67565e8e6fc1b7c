"""The ``ge`` command: ``ge ops list``, ``ge ops show OP``, ``ge ops import-regop FILE... [--out JSON]``,
``ge codegen (--ops FILE | --regop HEADER...) --out DIR [--module_name NAME | --package NAME]``,
and the model commands ``ge convert MODEL -o OUT``,
``ge run MODEL [--input NAME=FILE.npy ...] [--device cpu|acl|auto] [--mode eager|graph] [--repeat N]``,
``ge show MODEL [--svg OUT.svg]``, ``ge compile --model M --framework 5 --output OUT [--input_shape ...]
[--soc_version V]`` (atc's flags; writes ``OUT.om``, which ``ge run OUT.om`` runs without compiling
again) (see ``ge._model_cli``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional


def _type_text(op: Dict[str, Any], t: Any) -> str:
    if isinstance(t, str):
        allowed = op.get("type_vars", {}).get(t, [])
        return f"{t} in {{{', '.join(d.replace('DT_', '') for d in allowed)}}}"
    return "{" + ", ".join(d.replace("DT_", "") for d in t) + "}"


def show(op: Dict[str, Any]) -> str:
    """Readable prototype: inputs, outputs, attributes with defaults, dtypes, versions."""
    lines = [f"{op['name']}: {op.get('doc', '')}".rstrip()]

    def since(x: Dict[str, Any]) -> str:
        return f"  (since {x['since']})" if x.get("since") else ""

    for title, key in (("inputs", "inputs"), ("outputs", "outputs")):
        lines.append(f"  {title}:")
        for io in op.get(key, []):
            lines.append(f"    {io['name']:<16} {io.get('kind', 'required'):<9} {_type_text(op, io['type'])}{since(io)}")
    if op.get("attrs"):
        lines.append("  attributes:")
        for a in op["attrs"]:
            d = "required" if a.get("required") else f"default {json.dumps(a.get('default'))}"
            derived = op.get("derived_attrs", {}).get(a["name"])
            extra = f", derived: {derived}" if derived else ""
            lines.append(f"    {a['name']:<16} {a['type']:<12} {d}{extra}{since(a)}")
    for s in op.get("subgraphs", []):
        lines.append(f"  subgraph {s['name']} ({s.get('kind', 'static')})")
    for o, rule in op.get("output_counts", {}).items():
        lines.append(f"  output count: {o} = {rule}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None, prog: Optional[str] = None) -> int:
    ap = argparse.ArgumentParser(prog=prog or "ge", description="ge-rs command line")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ops = sub.add_parser("ops", help="the operator library")
    ops_sub = ops.add_subparsers(dest="ops_cmd", required=True)
    ops_sub.add_parser("list", help="every operator name")
    show_p = ops_sub.add_parser("show", help="one operator's prototype")
    show_p.add_argument("op")
    imp = ops_sub.add_parser("import-regop", help="convert GE REG_OP text to the library's JSON format")
    imp.add_argument("files", nargs="+", type=Path)
    imp.add_argument("--out", type=Path, help="write the JSON here (default: standard output)")
    cg = sub.add_parser("codegen", help="generate an ES package for an operator library")
    from ge import codegen

    codegen.add_arguments(cg, builtin_default=False)
    from ge import _model_cli

    _model_cli.add_parsers(sub)
    a = ap.parse_args(argv)
    if a.cmd in ("convert", "run", "show", "compile"):
        return _model_cli.main(a)

    if a.cmd == "ops":
        import ge.ops

        if a.ops_cmd == "list":
            print("\n".join(ge.ops.list_ops()))
            return 0
        if a.ops_cmd == "import-regop":
            operators: List[Dict[str, Any]] = []
            for f in a.files:
                try:
                    operators += json.loads(ge.ops.regop_to_json(f.read_text()))["operators"]
                except (OSError, ValueError) as e:
                    print(f"ge: {f}: {e}", file=sys.stderr)
                    return 1
            text = json.dumps({"format_version": 1, "version": "imported", "operators": operators}, indent=1)
            if a.out:
                a.out.write_text(text + "\n")
                print(f"{len(operators)} operators written to {a.out}")
            else:
                print(text)
            return 0
        try:
            print(show(ge.ops.get_op(a.op)))
        except KeyError as e:
            print(f"ge: {e.args[0]}", file=sys.stderr)
            return 1
        return 0
    return codegen.run(a)


if __name__ == "__main__":
    sys.exit(main())
