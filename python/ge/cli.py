"""The ``ge`` command: ``ge ops list``, ``ge ops show OP``, ``ge ops import-regop FILE... [--out JSON]``,
``ge codegen (--ops FILE | --regop HEADER...) --out DIR [--module_name NAME | --package NAME]``,
and the model commands ``ge convert MODEL -o OUT``,
``ge run MODEL [--input NAME=FILE.npy ...] [--device cpu|acl|auto] [--mode eager|graph] [--repeat N]``,
``ge show MODEL [--svg OUT.svg]``, ``ge compile --model M --framework 5 --output OUT [--input_shape ...]
[--soc_version V]`` (atc's flags; writes ``OUT.om``, which ``ge run OUT.om`` runs without compiling
again) (see ``ge._model_cli``), and ``ge launch -n N [--hosts FILE] (PROG.py | -m MODULE) [ARGS...]``,
which runs a program on N ranks with MPI's launcher (see :func:`launch`)."""

from __future__ import annotations

import argparse
import json
import os
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


def add_launch_parser(sub: Any) -> None:
    lp = sub.add_parser("launch", help="run a program on N ranks with MPI's launcher (mpiexec)",
                        usage="ge launch -n N [--hosts FILE] (PROG.py | -m MODULE) [ARGS...]",
                        description="Runs `mpiexec -n N [-f FILE] python PROG.py ARGS...` with this Python "
                                    "and the mpi extra's mpiexec (pip install ge-rs[mpi]); its exit status "
                                    "is mpiexec's. See docs/distributed.md.")
    lp.add_argument("-n", dest="ranks", type=int, required=True, metavar="N", help="the number of ranks")
    lp.add_argument("--hosts", type=Path, default=None, metavar="FILE",
                    help="MPICH's host file (mpiexec -f): one machine per line, host[:slots]")
    lp.add_argument("-m", dest="module", nargs=argparse.REMAINDER, default=None, metavar="MODULE [ARGS...]",
                    help="run a module, as python -m (what follows it is the module's arguments)")
    lp.add_argument("program", nargs=argparse.REMAINDER, metavar="PROG.py [ARGS...]",
                    help="the program and its arguments (ge launch's own options come before it)")


def launch_command(a: argparse.Namespace, mpiexec: str) -> List[str]:
    """The launcher's command line for ``ge launch``'s arguments `a` (raises ValueError for
    arguments it cannot run)."""
    if a.ranks < 1:
        raise ValueError(f"-n {a.ranks}: the number of ranks must be at least 1")
    cmd = [mpiexec, "-n", str(a.ranks)]
    if a.hosts is not None:
        if not a.hosts.is_file():
            raise ValueError(f"--hosts {a.hosts}: no such file")
        cmd += ["-f", str(a.hosts)]
    cmd.append(sys.executable)
    if a.module is not None:
        if not a.module:
            raise ValueError("-m needs a module name")
        return cmd + ["-m", *a.module]
    if not a.program:
        raise ValueError("launch needs a program (PROG.py [ARGS...]) or -m MODULE")
    if not os.path.isfile(a.program[0]):
        raise ValueError(f"{a.program[0]}: no such file")
    return cmd + a.program


def launch(a: argparse.Namespace) -> int:
    """``ge launch``: replaces this process with MPI's launcher running this Python on the
    program (so the launcher's exit status, a failing rank's, is the command's). Not a process
    manager of its own: mpiexec starts, watches and ends the ranks."""
    from ge._internal import mpi_locate

    mpiexec = mpi_locate.find_launcher()
    if mpiexec is None:
        print("ge: launch: MPI's launcher (mpiexec) was not found beside this Python or on PATH; "
              "install the mpi extra: pip install ge-rs[mpi]", file=sys.stderr)
        return 1
    try:
        cmd = launch_command(a, mpiexec)
    except ValueError as e:
        print(f"ge: launch: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(mpiexec, cmd)
    return 1  # not reached: execv returns only by raising


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
    add_launch_parser(sub)
    a = ap.parse_args(argv)
    if a.cmd == "launch":
        return launch(a)
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
