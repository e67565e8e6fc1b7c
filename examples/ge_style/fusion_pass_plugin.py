"""Fusion passes loaded as GE loads them: from ``ASCEND_GE_PY_PASS_PATH``.

A GE user writes pass plugins (``passes/`` here: a ``PatternFusionPass`` that turns
``MatMulV2 + Add`` into ``GEMM`` and a ``FusionBasePass`` that turns ``Mul(t, t)`` into
``Square(t)``), points ``ASCEND_GE_PY_PASS_PATH`` at them in the shell and runs the program;
``GeApi().ge_initialize`` imports them and every session's compile runs them. This program sets
the variable itself (unless the shell already did) before ``ge_initialize``:

    export ASCEND_GE_PY_PASS_PATH=$PWD/examples/ge_style/passes    # optional
    python examples/ge_style/fusion_pass_plugin.py

It checks that both passes were loaded from the plugin directory and rewrote the graph (each
plugin module lists the nodes it replaced; the compile report counts the pattern pass's rewrite)
and that the numbers are those numpy computes for the original graph.
"""

import os
import re
import sys
from pathlib import Path

import numpy as np

PASS_DIR = Path(__file__).resolve().parent / "passes"
os.environ.setdefault("ASCEND_GE_PY_PASS_PATH", str(PASS_DIR))

from common import GE_CONFIG, Checker, float_tensor  # noqa: E402
from ge.es.all import MatMulV2, Sigmoid  # noqa: E402
from ge.es.graph_builder import GraphBuilder  # noqa: E402
from ge.ge_global import GeApi  # noqa: E402
from ge.graph.types import DataType  # noqa: E402
from ge.passes.bootstrap import get_registered_passes  # noqa: E402
from ge.session import Session  # noqa: E402

PASS_NAMES = ("GeStyleMatMulV2AddToGemmPass", "GeStyleSelfMulToSquarePass")
WEIGHT = np.array([[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75]], np.float32)
SHIFT = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)


def build_graph():
    builder = GraphBuilder("FusionPassPlugin")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[2, 3])
    w = builder.create_const_float(WEIGHT.flatten().tolist(), [3, 2])
    shift = builder.create_const_float(SHIFT.flatten().tolist(), [2, 2])
    y = MatMulV2(x, w) + shift  # -> GEMM(x, w, shift, 1.0, 1.0)
    s = Sigmoid(y)
    builder.set_graph_output(s * s, 0)  # -> Square(s)
    builder.set_graph_output(y, 1)
    return builder.build_and_reset()


def main() -> int:
    check = Checker()
    ge_api = GeApi()
    ret = ge_api.ge_initialize(dict(GE_CONFIG))
    if ret != 0:
        print(f"[Error] ge_initialize failed, return code {ret}")
        return ret
    try:
        session = Session()
        ret = session.add_graph(1, build_graph())
        if ret != 0:
            print(f"[Error] add_graph failed, return code {ret}")
            return ret
        x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, -2.0]], np.float32)
        outputs = session.run_graph(1, [float_tensor(x)])
        report = session.compile_report(1)
        print(report)
        # The plugin modules (ge_finalize unloads them).
        plugins = {d["pass_name"]: sys.modules.get(d["module_name"]) for d in get_registered_passes()}
    finally:
        ge_api.ge_finalize()

    y = x @ WEIGHT + SHIFT
    s = 1 / (1 + np.exp(-y))
    check.close("Square(Sigmoid(GEMM))", outputs[0], s * s)
    check.close("GEMM", outputs[1], y)
    for name in PASS_NAMES:
        module = plugins.get(name)
        check.true(f"{name} loaded from {PASS_DIR.name}/", module is not None
                   and Path(module.__file__).parent == PASS_DIR)
        check.true(f"{name} rewrote the graph", module is not None and len(module.REWRITES) == 1)
    rewritten = re.search(PASS_NAMES[0] + r" .*rewritten (\d+)", report)
    check.true("the compile report counts one GEMM rewrite",
               rewritten is not None and rewritten.group(1) == "1")
    check.finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
