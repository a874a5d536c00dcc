"""Where the fit falls short: the data families, the penalty schedule.

* the data families of issue 20 (``families.CASES``, :func:`run_case`): the bound on the
  training predictions, ``converged_`` and accuracy against the constant model and
  fairlearn's peer;
* ``--schedule [--seeds N]``: the penalty schedules ``(beta0, sigma)`` of
  ``FairLogisticClassifier`` over seeds on a fixed 70/30 split (``penalty_schedule.md``).

The full default run rewrites ``robust.md``. (Until issue 52 it also fitted issue 12's
cases of X in odd units beside ``StandardScaler() + LogisticRegression()``; their
conclusion is ``tests/test_robust.py``'s, their last figures
``git log -- benchmarks/results/robust.md``.)
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from benchmarks import families
from benchmarks.common import load_bank, make_anchor, write
from benchmarks.families import _METRIC
from sklearn_ialm.datasets import load_a9a
from sklearn_ialm.estimators import FairLogisticClassifier

#: The introduction of the families' part of ``robust.md``.
FAMILIES_INTRO = """The data families of issue 20, judged as a user judges them.

Each case fits ``FairLogisticClassifier`` at a bound and reports, on the training rows
(fairlearn's metric of ``predict``) and on test rows: the gap, accuracy, data passes and
``converged_``, beside what the user could have instead on the same split: the constant model
(one class for every row), and fairlearn's group-aware ``ThresholdOptimizer`` on
``LogisticRegression`` where the group is a column of X, else ``ExponentiatedGradient`` on
``LogisticRegression`` at the same bound (its own training gap is printed: the comparison is
fair where the two gaps are alike). The targets of issue 20: bound met on the training rows,
``converged_`` within 100 passes, accuracy at least the constant model's and at least the
peer's minus 0.01, where the peer is ExponentiatedGradient, at the same training gap (ours is
refitted at EG's gap when the two differ by more than 0.005). Cases of fewer than 100000
training rows are fitted with 5 seeds: accuracy is their mean, gap and passes the worst,
``converged_`` and ``bound_met_`` whether all seeds say so. Each row says which targets it
misses."""

_LINES: list[str] = []


def _report(line):
    """Print a line and keep it for the results file."""
    print(line, flush=True)
    _LINES.append(line)


def _a9a():
    d = load_a9a()
    return d.data, d.target, d.groups


def _anchor():
    Xtr, ytr, atr, Xte, yte, ate = make_anchor(0)
    return np.vstack([Xtr, Xte]), np.r_[ytr, yte], np.r_[atr, ate]


def _bank():
    d = load_bank()
    return d.data, d.target, d.groups


#: The data sets of the penalty schedule: ``(X, y, groups)``.
DATA_SETS = {"a9a": _a9a, "anchor": _anchor, "bank": _bank}


# -- the data families of issue 20 ------------------------------------------------------

#: Below this many training rows a single fit's test accuracy and passes move with the seed
#: (Adult by race, equalised odds: 24 to 286 passes over 5 seeds): the row reports the mean
#: accuracy over these seeds, the worst gap and passes, and whether all converged.
_SMALL, _SEEDS = 100_000, 5


def _fit(kind, bound, X, y, g, seed):
    clf = FairLogisticClassifier(constraint=kind, bound=bound, random_state=seed)
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=g)
    return clf, time.process_time() - t, caught


def run_case(name, report, n_seeds=None):
    make, in_x, settings = families.CASES[name]
    X, y, g, Xt, yt, gt = make()
    seeds = range(n_seeds or (_SEEDS if X.shape[0] < _SMALL else 1))
    for kind, bound in settings:
        metric = _METRIC[kind][0]
        fits = [_fit(kind, bound, X, y, g, seed) for seed in seeds]
        gaps = [metric(y, clf.predict(X), sensitive_features=g) for clf, _, _ in fits]
        accs = [np.mean(clf.predict(Xt) == yt) for clf, _, _ in fits]
        gap, acc = max(gaps), float(np.mean(accs))
        test_gap = max(metric(yt, clf.predict(Xt), sensitive_features=gt) for clf, _, _ in fits)
        clf = max(fits, key=lambda f: f[0].n_data_passes_)[0]  # the slowest seed speaks
        seconds = float(np.mean([f[1] for f in fits]))
        caught = [w for f in fits for w in f[2]]
        const = max(np.mean(yt), 1 - np.mean(yt))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            peer, peer_pred, peer_gap = families._peer(kind, bound, in_x, X, y, g, Xt, gt)
            peer_seconds = time.process_time() - t
        peer_acc = np.nan if peer_pred is None else np.mean(peer_pred == yt)
        # ExponentiatedGradient's training gap can be far from ours at the same bound (twice
        # it where the bound binds hard): the target compares the two at the same gap, ours
        # refitted at EG's.
        at_peer = ""
        ours = acc
        if peer.startswith("ExponentiatedGradient") and abs(peer_gap - gap) > 0.005:
            again = [_fit(kind, peer_gap, X, y, g, seed)[0] for seed in seeds]
            ours = float(np.mean([np.mean(c.predict(Xt) == yt) for c in again]))
            at_peer = f" (ours at the peer's gap: {ours:.4f})"
        misses = []
        if not gap <= bound + 1e-12:
            missed = sum(not v <= bound + 1e-12 for v in gaps)
            misses.append(
                f"bound missed by {gap - bound:.4f}"
                + (f" ({missed} of {len(fits)} seeds)" if len(fits) > 1 else "")
            )
        if not (all(f[0].converged_ for f in fits) and clf.n_data_passes_ <= 100):
            done = sum(f[0].converged_ and f[0].n_data_passes_ <= 100 for f in fits)
            misses.append(
                (f"{done} of {len(fits)} seeds converged within 100 passes; the slowest: "
                 if len(fits) > 1 else "")
                + f"converged_={clf.converged_} at {clf.n_data_passes_:.0f} passes "
                f"({clf.n_rounds_} solves; primal {clf.primal_residual_:.2g}, dual "
                f"{clf.dual_residual_:.2g})"
            )  # fmt: skip
        if acc < const:
            misses.append(f"{const - acc:.4f} below the constant model")
        if ours < peer_acc - 0.01:
            misses.append(f"{peer_acc - ours:.4f} below the peer")
        said = {str(w.message).split(":")[0][:60] for w in caught if "did not" in str(w.message)}
        report(
            f"| {name}{f' ({len(seeds)} seeds)' if len(seeds) > 1 else ''} | {kind} {bound:g} "
            f"| {gap:.4f} | {test_gap:.4f} | {acc:.4f} | {const:.4f} | {peer} | {peer_gap:.4f} | "
            f"{peer_acc:.4f} | {acc - peer_acc:+.4f}{at_peer} | {clf.n_data_passes_:.1f} | "
            f"{all(f[0].converged_ for f in fits)} | {all(f[0].bound_met_ for f in fits)} | "
            f"{seconds:.1f} / {peer_seconds:.1f} | "
            f"{'; '.join(misses) or 'all met'}{' (warned)' if said else ''} |"
        )


HEADER = [
    "| case | bound | train gap | test gap | test acc | constant | peer | peer train gap | "
    "peer test acc | ours - peer | passes | converged_ | bound_met_ | CPU s (ours / peer) | "
    "targets missed |",
    "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|---:|---|",
]


# -- the penalty schedule -------------------------------------------------------------

# The schedule FairLogisticClassifier() runs with (its beta0 and sigma default to None).
DEFAULT = FairLogisticClassifier._default_schedule["default"]
SCHEDULES = [DEFAULT, (1.0, 2.5), (1.0, 1.25), (0.1, 1.25), (0.3, 1.5)]
DATA = [("a9a", 0.05), ("bank", 0.05), ("anchor", 0.05), ("anchor", 0.02)]


def _row(name, bound, schedule, seeds):
    X, y, g = DATA_SETS[name]()
    Xtr, Xte, ytr, yte, gtr, _ = train_test_split(X, y, g, test_size=0.3, random_state=0)
    passes, seconds, conv, met, acc = [], [], 0, 0, []
    for seed in range(seeds):
        est = FairLogisticClassifier(
            constraint="demographic_parity",
            bound=bound,
            beta0=schedule[0],
            sigma=schedule[1],
            random_state=seed,
        )
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")
            t = time.process_time()
            est.fit(Xtr, ytr, sensitive_features=gtr)
            seconds.append(time.process_time() - t)
        passes.append(est.n_data_passes_)
        conv += bool(est.converged_)
        met += bool(est.bound_met_)
        acc.append(float(np.mean(est.predict(Xte) == yte)))
    label = f"{schedule[0]:g}, {schedule[1]:g}" + (" (default)" if schedule == DEFAULT else "")
    return (
        f"| {name} | {bound:g} | {label} | {np.median(passes):.1f} | {np.max(passes):.1f} "
        f"| {np.median(seconds):.2f} | {conv}/{seeds} | {met}/{seeds} | {np.mean(acc):.4f} |"
    )


def schedule_main(seeds: int) -> None:
    """Write ``penalty_schedule.md``: every schedule of ``SCHEDULES`` on every ``DATA``."""
    lines = [
        "# The penalty schedule of FairLogisticClassifier",
        "",
        "Generated by `python -m benchmarks penalty_schedule` (`benchmarks/robust.py`); do "
        f"not edit. Demographic parity, {seeds} seeds per row, one BLAS thread; passes are "
        "`n_data_passes_` (every row read: set-up, minibatches, stop tests, every solve of "
        "the hard-rate steering); converged and met count the seeds.",
        "",
        "| data | bound | beta0, sigma | median passes | worst passes | median CPU s "
        "| converged | met on predict | test accuracy |",
        "|---|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for name, bound in DATA:
        for schedule in SCHEDULES:
            lines.append(_row(name, bound, schedule, seeds))
            print(lines[-1], flush=True)
    write("penalty_schedule.md", "\n".join(lines) + "\n")


def main(argv: list[str]) -> None:
    """Arguments: names of ``families.CASES`` (all by default: the committed report); or
    ``--schedule [--seeds N]``."""
    if "--schedule" in argv:
        seeds = int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else 8
        schedule_main(seeds)
        return
    names = argv or list(families.CASES)
    for line in HEADER:
        _report(line)
    for name in names:
        run_case(name, _report)
    if names == list(families.CASES):
        # The full default run is the committed report (regenerated, never edited).
        write(
            "robust.md",
            "# Robust fits\n\nGenerated by `OMP_NUM_THREADS=1 python -m benchmarks.robust` "
            "(regenerated, never edited; the notes at the end are kept).\n\n"
            "## The data families of issue 20\n\n"
            + FAMILIES_INTRO
            + "\n\n"
            + "\n".join(_LINES)
            + "\n\n",
        )


if __name__ == "__main__":
    main(sys.argv[1:])
