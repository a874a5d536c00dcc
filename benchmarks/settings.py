"""Measure the solver's settings on the paper's problems: the evidence behind the defaults.

Usage (from the repository root)::

    python -m benchmarks.settings --dataset a9a --seeds 10 "" "step_scale=1.5" "delta=0.01"
    python -m benchmarks.settings --dataset spambase --seeds 20 "" "preset='paper'"

Each positional argument is a set of keyword overrides for ``stoc_ialm`` on top of the
defaults (the empty string is the defaults). Prints, per setting, how many seeds reached
eps-KKT and the median and range of data passes counted as the paper does (see
``benchmarks/paper.py``), and the median wall time of one fit.
"""

from __future__ import annotations

import argparse
import ast
import time

import numpy as np

from benchmarks.paper import build
from sklearn_ialm.solver import stoc_ialm


def parse(overrides: str) -> dict:
    call = ast.parse(f"f({overrides})", mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.settings", description=__doc__)
    ap.add_argument("--dataset", required=True, choices=["a9a", "bank", "spambase"])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-passes", type=float, default=400.0)
    ap.add_argument("settings", nargs="*", default=[""])
    args = ap.parse_args(argv)
    task = "np" if args.dataset == "spambase" else "fairness"
    make, paper, factor = build(task, args.dataset)
    pb = make()
    for overrides in args.settings:
        kw = dict(sigma=paper["sigma"], batch_size=paper["batch_size"], **parse(overrides))
        passes, times, ok = [], [], 0
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            r = stoc_ialm(pb, random_state=seed, max_passes=args.max_passes, **kw)
            times.append(time.perf_counter() - t0)
            no, nc = r.n_draws
            passes.append(factor * (no / pb.n_objective_samples + nc / pb.n_constraint_samples))
            ok += r.converged
        p = np.array(passes)
        print(
            f"{args.dataset:9s} {overrides or '(defaults)':45s} eps-KKT {ok}/{args.seeds}  "
            f"passes median {np.median(p):6.2f} [{p.min():.2f}, {p.max():.2f}]  "
            f"time {np.median(times):.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
