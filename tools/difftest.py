"""The long differential-testing profile (issue 21, point 4): random well-typed ge graphs against
onnxruntime, for a given time or number of cases.

    python tools/difftest.py --minutes 10            # what `make difftest` runs
    python tools/difftest.py --cases 5000 --seed 7   # a fixed number of cases
    python tools/difftest.py --case 123456           # re-run one case (prints its program)
    python tools/difftest.py --minutes 2 --specials  # inputs with NaN/inf (exploratory, see below)

Case i is generated from the seed ``seed + i`` (``tests/reliability/diffgen.py``, the generator
the pytest profile ``tests/reliability/test_differential.py`` drives through hypothesis), so a
failing case number reproduces exactly. Every failure is printed with the Python that builds
its graph; distinct failures (by their first line) are counted. The summary gives the cases,
the duration, the failures and the operator histogram; the exit status is 1 when anything
failed.

``--specials`` feeds NaN, +inf, -inf and 0 into the inputs. Engines legitimately differ there
(a float-to-int Cast of NaN is undefined; onnxruntime's ReduceMax skips NaN and its MaxPool
gives -FLT_MAX for an all -inf padded window): the conventions ge follows are tested in
``tests/reliability/test_regressions.py``; this mode is for looking, not for pass/fail.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
os.environ.setdefault("ORT_LOGGING_LEVEL", "3")

import diffgen


def family(name: str):
    """(generate, check) of a family: "es" (ge.es graphs exported to ONNX) or "onnx" (ONNX
    models imported with ge.onnx.load)."""
    if name == "onnx":
        import onnxgen

        return (lambda ch, max_ops, specials: onnxgen.generate(ch, max_ops)), onnxgen.check
    return diffgen.generate, diffgen.check_case


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, help="run for this long (default 10 unless --cases)")
    ap.add_argument("--cases", type=int, help="run this many cases")
    ap.add_argument(
        "--seed",
        type=int,
        default=int(time.time()) % 1_000_000 * 1000,
        help="case i uses seed+i (default: from the clock; printed)",
    )
    ap.add_argument("--case", type=int, help="run the one case of this seed and print its program")
    ap.add_argument("--max-ops", type=int, default=10, help="steps per graph (default 10)")
    ap.add_argument("--specials", action="store_true", help="inputs with NaN/inf (exploratory; es family)")
    ap.add_argument(
        "--family",
        choices=["both", "es", "onnx"],
        default="both",
        help="es: ge.es graphs exported; onnx: ONNX models imported; both: alternate (default)",
    )
    ap.add_argument("--show", type=int, default=3, help="failures printed in full per distinct kind")
    args = ap.parse_args(argv)

    try:
        import onnxruntime as ort

        ort.set_default_logger_severity(3)
    except ImportError:
        print("difftest: onnxruntime is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2

    families = ["es", "onnx"] if args.family == "both" else [args.family]

    def fam(seed: int) -> str:
        return families[seed % len(families)]

    if args.case is not None:
        gen, check = family(fam(args.case))
        case = gen(diffgen.RandomChooser(args.case), args.max_ops, args.specials)
        print(repr(case))
        check(case)
        print("ok")
        return 0

    limit = None if args.cases is not None and args.minutes is None else 60.0 * (args.minutes or 10.0)
    start = time.monotonic()
    n = fails = skipped = 0
    fams = {f: family(f) for f in families}
    per_family: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    ops: collections.Counter = collections.Counter()
    print(
        f"difftest: seed {args.seed}, " + (f"{args.cases} cases" if limit is None else f"{limit / 60:g} min"),
        flush=True,
    )
    while True:
        if args.cases is not None and n >= args.cases:
            break
        if limit is not None and time.monotonic() - start >= limit:
            break
        seed = args.seed + n
        n += 1
        gen, check = fams[fam(seed)]
        per_family[fam(seed)] += 1
        try:
            case = gen(diffgen.RandomChooser(seed), args.max_ops, args.specials)
            ops.update(case.ops)
            check(case)
        except diffgen.Skip:  # onnxruntime refused a generated ONNX model: not a finding
            skipped += 1
        except Exception as e:  # noqa: BLE001  (a Mismatch, or a generator/ge error: all are findings)
            fails += 1
            first = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]
            key = first.split(", first at")[0]
            kinds[key] += 1
            if kinds[key] <= args.show:
                print(
                    f"\n--- case {seed} (python tools/difftest.py --case {seed} --family {fam(seed)}"
                    f"{' --specials' if args.specials else ''}) ---"
                )
                print(str(e) if isinstance(e, diffgen.Mismatch) else traceback.format_exc())
        if n % 1000 == 0:
            print(f"  {n} cases, {time.monotonic() - start:.0f} s, {fails} failures", flush=True)
    took = time.monotonic() - start
    print(
        f"\ndifftest: {n} cases in {took:.0f} s ({n / max(took, 1e-9):.0f}/s), seed {args.seed}, "
        f"{fails} failures, {len(kinds)} distinct; "
        + ", ".join(f"{k} {v}" for k, v in per_family.items())
        + f"; {skipped} onnx models onnxruntime refused (not counted)"
    )
    for k, v in kinds.most_common():
        print(f"  {v:6d}  {k}")
    print("operators: " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
