"""Issue 49's small-group sweep: binary fairness fits on ``families.random_family`` (three to
six groups, one or two of 5-25 rows, tied to the label; the group not in X) for each draw,
demographic parity, true-positive-rate parity and equalized odds, at bounds 0.1, 0.05 and
0.02.

The fits that converged, the bound met on predictions (fairlearn's metric), the pairs of
converged fits of one draw and kind where the tighter bound ends at a training objective
(``objective_``) lower by more than :data:`MONOTONE_TOL`, and the passes and CPU seconds
(one thread) of all fits. Written to ``small_groups.md``.

Usage: ``python -m benchmarks.small_groups [--draws 30]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import numpy as np
from fairlearn.metrics import (
    demographic_parity_difference,
    equalized_odds_difference,
    true_positive_rate_difference,
)
from threadpoolctl import threadpool_limits

from benchmarks.common import write
from benchmarks.families import random_family
from sklearn_ialm import FairLogisticClassifier

KINDS = {
    "demographic_parity": demographic_parity_difference,
    "true_positive_rate_parity": true_positive_rate_difference,
    "equalized_odds": equalized_odds_difference,
}
BOUNDS = (0.1, 0.05, 0.02)
#: A tighter bound's training objective may fall below a looser one's by this much at most.
MONOTONE_TOL = 2e-3


def _fit(draw, kind, bound):
    X, y, g, _, _ = random_family(draw)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairLogisticClassifier(constraint=kind, bound=bound, random_state=0)
        clf.fit(X, y, sensitive_features=g)
    cpu = time.process_time() - start
    gap = KINDS[kind](y, clf.predict(X), sensitive_features=g)
    return dict(
        draw=draw, kind=kind, bound=bound, converged=bool(clf.converged_),
        met=bool(gap <= bound + 1e-12), objective=float(clf.objective_),
        passes=float(clf.n_data_passes_), cpu=cpu, smallest=int(np.bincount(g).min()),
    )  # fmt: skip


def _falls(fits):
    """The pairs of converged fits of one draw and kind where the tighter bound ends lower."""
    out = []
    for a in fits:
        for b in fits:
            same = (a["draw"], a["kind"]) == (b["draw"], b["kind"])
            low = b["bound"] < a["bound"] and b["objective"] < a["objective"] - MONOTONE_TOL
            if same and low and a["converged"] and b["converged"]:
                out.append((a["objective"] - b["objective"], a, b))
    return sorted(out, key=lambda t: -t[0])


def _lines(fits):
    falls = _falls(fits)
    missed = Counter((f["kind"], f["bound"]) for f in fits if not f["converged"])
    lines = [
        f"- fits: {len(fits)}; converged: {sum(f['converged'] for f in fits)}; the bound met "
        f"on predictions: {sum(f['met'] for f in fits)}",
        f"- passes in all: {sum(f['passes'] for f in fits):.0f} (of the converged: "
        f"{sum(f['passes'] for f in fits if f['converged']):.0f}); CPU seconds in all: "
        f"{sum(f['cpu'] for f in fits):.1f}",
        "- not converged, by kind and bound: "
        + (", ".join(f"{k} {b:g}: {n}" for (k, b), n in sorted(missed.items())) or "none"),
        f"- pairs where the tighter bound ends lower by more than {MONOTONE_TOL:g}: "
        f"{len(falls)}" + (f", the worst by {falls[0][0]:.4f}" if falls else ""),
    ]
    for _, a, b in falls:
        lines.append(
            f"  - draw {a['draw']} (smallest group {a['smallest']} rows), {a['kind']}: "
            f"{a['bound']:g} at {a['objective']:.4f}, {b['bound']:g} at {b['objective']:.4f}"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=30)
    args = parser.parse_args(argv)
    with threadpool_limits(limits=1):
        fits = [
            _fit(draw, kind, bound)
            for draw in range(args.draws)
            for kind in KINDS
            for bound in BOUNDS
        ]
    text = [
        "# Binary fairness with groups of a few rows, across bounds (issue 49, items 3 and 7)",
        "",
        f"Written by `python -m benchmarks.small_groups --draws {args.draws}`: "
        f"`benchmarks.families.random_family` draws 0-{args.draws - 1}, "
        f"{', '.join(KINDS)}, bounds {', '.join(f'{b:g}' for b in BOUNDS)}.",
        "",
        *_lines(fits),
        "",
    ]
    write("small_groups.md", "\n".join(text))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
