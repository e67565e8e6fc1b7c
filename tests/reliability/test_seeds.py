"""The whole-pipeline fuzzer's regression seeds and a short fixed-seed run (issue 21, point 3).

Every file in ``tests/reliability/seeds`` (``*.onnx``, ``*.ge``, ``*.air``) is an input that once
crashed the process, let a Rust panic reach Python, or raised an exception outside
``ge.GeError``. Each is loaded and, when it loads, compiled and run in graph and eager mode on
random inputs (``pipeline.check``): a ``ge.GeError`` or a result is fine, anything else fails.
The long runs are ``tools/fuzz_pipeline.py`` (``make fuzz``); see docs/reliability.md.
"""

from __future__ import annotations

import random

import pipeline
import pytest

SEEDS = pipeline.seed_files()


def test_the_seeds_are_there():
    assert SEEDS and {p.suffix[1:] for p in SEEDS} <= set(pipeline.FORMATS), SEEDS


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_seed_loads_compiles_and_runs_or_raises_a_ge_error(path):
    data = path.read_bytes()
    for k in range(3):  # a few different inputs
        pipeline.check(data, path.suffix[1:], random.Random(k))


def test_failure_classification_bites():
    """check() turns a panic and a foreign exception into a Failure, a GeError into an outcome."""
    import ge

    def boom(e):
        def f():
            raise e
        return f

    with pytest.raises(pipeline.Failure, match="panic"):
        pipeline.guarded("x", boom(ge.InternalError("internal error, please report: boom")))
    with pytest.raises(pipeline.Failure, match="KeyError outside ge.GeError"):
        pipeline.guarded("x", boom(KeyError("k")))
    ok, e = pipeline.guarded("x", boom(ValueError("a GE-style argument error")))
    assert not ok and pipeline.BUILTIN_SEEN[-1] == "x: ValueError: a GE-style argument error"
    ok, e = pipeline.guarded("x", boom(ge.GeError("fine")))
    assert not ok and isinstance(e, ge.GeError)
    assert pipeline.check(b"\x08\xff\xff", "onnx", random.Random(0)) == "load error"
    assert pipeline.check(b"not a graph", "ge", random.Random(0)) == "load error"
    assert pipeline.check(b"", "air", random.Random(0)) == "load error"


def test_short_fixed_seed_fuzz_run():
    """120 mutated cases of a small corpus, the same on every run: none may fail (a crash would
    take the test process with it)."""
    corpus = pipeline.build_corpus(generated=4, seed=0)
    outcomes = {}
    for i in range(120):
        r = random.Random((7 << 32) + i)
        data, fmt, _how = pipeline.make_case(corpus, r)
        what = pipeline.check(data, fmt, r)
        outcomes[what] = outcomes.get(what, 0) + 1
    assert any(k.startswith("ran") for k in outcomes), outcomes
