"""Issue 49's multi-class sweep: digits and wine with a made-up group tied to the label in
three ways (``families.multiclass_ties``: the class halves, class 0, or none), several draws
of the group and the split, per-class demographic parity from 0.3 down to 0.02.

Per data set: the fits that converged, those over 100 passes, the pairs of converged fits of
one draw and tie where the tighter bound ends at a training log-loss lower by more than
:data:`MONOTONE_TOL` (the objective should never fall as the bound tightens), and the passes
and CPU seconds (one thread) of all fits. Written to ``multiclass_sweep.md``.

Usage: ``python -m benchmarks.multiclass_sweep [--names wine,digits] [--draws 0,1,2]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict

import numpy as np
from sklearn.metrics import log_loss
from threadpoolctl import threadpool_limits

from benchmarks.common import write
from benchmarks.families import multiclass_ties
from sklearn_ialm import FairLogisticClassifier

BOUNDS = (0.3, 0.25, 0.2, 0.15, 0.12, 0.1, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02)
TIES = ("halves", "one", "random")
#: A tighter bound's training log-loss may fall below a looser one's by this much at most.
MONOTONE_TOL = 2e-3


def _fit(name, tie, draw, bound):
    X, _, y, _, g, _ = multiclass_ties(name, tie, draw)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairLogisticClassifier(bound=bound, random_state=0).fit(X, y, sensitive_features=g)
    cpu = time.process_time() - start
    loss = log_loss(y, clf.predict_proba(X), labels=clf.classes_)
    return dict(
        draw=draw, tie=tie, bound=bound, converged=bool(clf.converged_),
        passes=float(clf.n_data_passes_), loss=float(loss), cpu=cpu,
    )  # fmt: skip


def _falls(fits):
    """The pairs of converged fits of one draw and tie where the tighter bound ends lower."""
    by = defaultdict(list)
    for f in fits:
        by[(f["draw"], f["tie"])].append(f)
    out = []
    for group in by.values():
        for a in group:
            for b in group:
                low = b["bound"] < a["bound"] and b["loss"] < a["loss"] - MONOTONE_TOL
                if a["converged"] and b["converged"] and low:
                    out.append((a["loss"] - b["loss"], a, b))
    return sorted(out, key=lambda t: -t[0])


def _section(name, fits):
    falls = _falls(fits)
    lines = [
        f"## {name}",
        "",
        f"- fits: {len(fits)}; converged: {sum(f['converged'] for f in fits)}; over 100 "
        f"passes: {sum(f['passes'] > 100 for f in fits)}",
        f"- passes in all: {sum(f['passes'] for f in fits):.0f}; CPU seconds in all: "
        f"{sum(f['cpu'] for f in fits):.1f}",
        f"- pairs where the tighter bound ends lower by more than {MONOTONE_TOL:g}: "
        f"{len(falls)}" + (f", the worst by {falls[0][0]:.4f}" if falls else ""),
    ]
    for _, a, b in falls[:5]:
        lines.append(
            f"  - draw {a['draw']}, {a['tie']}: {a['bound']:g} at {a['loss']:.4f}, "
            f"{b['bound']:g} at {b['loss']:.4f}"
        )
    for f in fits:
        if not f["converged"]:
            lines.append(
                f"- not converged: draw {f['draw']}, {f['tie']}, bound {f['bound']:g} "
                f"({f['passes']:.0f} passes, log-loss {f['loss']:.4f})"
            )
    return lines + [""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", default="wine,digits")
    parser.add_argument("--draws", default=None, help="default: wine 0-3, digits 0-2")
    args = parser.parse_args(argv)
    text = [
        "# Multi-class fairness across bounds (issue 49, item 2)",
        "",
        f"Written by `python -m benchmarks.multiclass_sweep --names {args.names}"
        + (f" --draws {args.draws}`" if args.draws else "`")
        + f"; bounds {', '.join(f'{b:g}' for b in BOUNDS)}; ties {', '.join(TIES)}.",
        "",
    ]
    for name in args.names.split(","):
        draws = args.draws or ("0,1,2,3" if name == "wine" else "0,1,2")
        with threadpool_limits(limits=1):
            fits = [
                _fit(name, tie, int(d), bound)
                for d in draws.split(",")
                for tie in TIES
                for bound in BOUNDS
            ]
        text += _section(name, fits)
    write("multiclass_sweep.md", "\n".join(text))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
