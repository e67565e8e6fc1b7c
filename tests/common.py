"""Helpers the tests of several areas share (tests/ is on sys.path: pyproject.toml's pythonpath)."""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, List, Sequence


def assert_refuses_copy(obj: Any, name: str, exact: bool = False) -> None:
    """``copy.copy`` and ``copy.deepcopy`` of ``obj`` raise RuntimeError "<name> does not support
    copy" / "... deepcopy" (``exact``: the whole message)."""
    import pytest

    for fn, what in ((copy.copy, "copy"), (copy.deepcopy, "deepcopy")):
        message = f"{name} does not support {what}"
        with pytest.raises(RuntimeError, match=f"^{message}$" if exact else message):
            fn(obj)


def float_regop(name: str, outputs: Sequence[str] = ("y",), attrs: Sequence[str] = ()) -> str:
    """The REG_OP text of operator ``name``: input x and ``outputs``, all DT_FLOAT, and ``attrs``
    (``.ATTR(...)`` arguments)."""
    lines = [f"REG_OP({name})", "    .INPUT(x, TensorType({DT_FLOAT}))"]
    lines += [f"    .OUTPUT({o}, TensorType({{DT_FLOAT}}))" for o in outputs]
    lines += [f"    .ATTR({a})" for a in attrs]
    lines.append(f"    .OP_END_FACTORY_REG({name})")
    return "\n" + "\n".join(lines) + "\n"


def run_in_threads(work: Callable[[int], Any], n: int) -> List[BaseException]:
    """Runs ``work(i)`` for i in 0..n-1 in ``n`` threads at once; returns what they raised."""
    errors: List[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except Exception as e:  # pragma: no cover - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def register_add_rewrite(name: str, stage: Any, rewrite: Callable[[Any, Any], Any], doc: str = "") -> type:
    """Registers a pattern pass ``name`` at ``stage`` (class ``name``) rewriting ``Add(x, y)`` to
    ``rewrite(x, y)``."""
    from ge.es.all import Add
    from ge.passes import PatternFusionPass, pattern, register_fusion_pass

    class Rewrite(PatternFusionPass):
        @pattern
        def add(self, inputs):
            return Add(inputs[0], inputs[1])

        def replacement(self, inputs):
            return rewrite(inputs[0], inputs[1])

    Rewrite.__name__ = Rewrite.__qualname__ = name
    Rewrite.__doc__ = doc or None
    return register_fusion_pass(name=name, stage=stage)(Rewrite)
