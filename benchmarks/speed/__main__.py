"""Run the speed benchmark's parts and write ``benchmarks/results/speed.md``.

Usage (from the repository root)::

    python -m benchmarks.speed                          # every part, ~25-35 min on 2 cores
    python -m benchmarks.speed --parts anchor,profile   # some parts; the report uses the
                                                        # saved results of the others
    python -m benchmarks.speed --report-only            # rewrite speed.md from the results

Parts (modules of this package): ``anchor`` (anchor task and spambase against
LogisticRegression, ExponentiatedGradient and nproc), ``passes`` (the solver's data passes on
the paper's problems), ``firstfit`` (fresh-process fit, cold and warm numba cache),
``scaling`` (dense to 1e7 x 20, CSR to 1e6 x 1e4) and ``profile`` (cProfile of one anchor
fairness fit), ``binding`` (binding bounds of issue 21: dense 1e6 x 20 at two binding
levels, dense 5e6 x 20, CSR 1e6 x 1e4 and dense 2e6 x 50 Neyman-Pearson, against
LogisticRegression) and ``np_splits`` (spambase, 30 stratified splits: Neyman-Pearson's test
FNR against LogisticRegression thresholded at the same training FPR). Each saves
``results/speed_<part>.json``; the report is built from those.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.speed import anchor, binding, firstfit, np_splits, passes, profile, scaling
from benchmarks.speed.common import load, machine_facts, save
from benchmarks.speed.report import write

PARTS = ("anchor", "passes", "firstfit", "scaling", "profile", "binding", "np_splits")
# Cases whose default budget would take over ~3 minutes on this machine get a smaller one.
SCALING_CAPS = {("dense", 10_000_000): 50, ("csr", 100_000): 100, ("csr", 1_000_000): 30}


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the fast fits")
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the pass counts")
    ap.add_argument(
        "--kinds",
        default="dense,csr",
        help="scaling data kinds to run; the saved rows of the other kinds are kept",
    )
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    parts = [] if args.report_only else args.parts.split(",")
    unknown = set(parts) - set(PARTS)
    if unknown:
        ap.error(f"--parts: unknown part(s) {sorted(unknown)}; choose from {PARTS}")
    for part in parts:
        start, facts = time.perf_counter(), machine_facts()
        if part == "anchor":
            rows = anchor.run(log, repeats=args.repeats)
        elif part == "passes":
            rows = passes.run(log, seeds=args.seeds)
        elif part == "firstfit":
            rows = firstfit.run(log)
        elif part == "scaling":
            kinds = args.kinds.split(",")
            cases = {k: v for k, v in scaling.CASES.items() if k in kinds}
            rows = scaling.run(
                log, max_passes_for=lambda k, n: SCALING_CAPS.get((k, n)), cases=cases
            )
            old = load("scaling")
            if old and set(cases) != set(scaling.CASES):
                rows = [r for r in old["rows"] if r.get("kind") not in cases] + rows
        elif part == "binding":
            rows = binding.run(log)
        elif part == "np_splits":
            rows = np_splits.run(log)
        else:
            rows = profile.run(log)
        facts["load_end"] = machine_facts()["load"]
        save(part, dict(rows=rows, facts=facts, seconds=time.perf_counter() - start))
        log(f"{part} done")
    path = write()
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
