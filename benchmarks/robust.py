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


#: Why the rows that miss a target miss it: what was measured on each (sessions 5 to 8,
#: with the commands in the issue's notes). Printed under the table; the table's figures
#: are this run's.
WHY = """### Why the misses

- **adult_race, equalised odds** (one seed of five over 100 passes): after two solves the
  predictions' TPR gap still misses by 0.033, and the third solve, at the surrogate's
  tightest bound (nine tenths of the way to a gap of 0), spends 250 passes in outer
  iterations at penalty 5 to 13 whose dual residual hovers at tol (0.0099-0.0102). The
  other four seeds converge in 24-116 passes.
- **adult_race, error-rate parity** (budget; bound missed in 2 seeds of 5, where the code
  before session 8 missed it in 4): in both the first solve spends the whole budget. In
  seed 1 that is one inner solve at penalty 5.5 whose dual residual creeps along tol
  (0.0107-0.0116 over 270 passes, batches grown to 960 rows: slow, not noisy), at the step
  the penalty's curvature bound allows. No solve is left to steer, the constant model does
  not meet an error-rate bound (its error rates are the groups' base rates), and no
  threshold of that solve meets it. ExponentiatedGradient misses this bound too (training
  gap 0.064); at that gap ours is within 0.007 of it.
- **intersections** (budget, below the peer): the first solve converges in about 30
  passes, but on predictions its gap is 0.06-0.07 where the soft gap is 0.05 (cells of 90
  rows); the further solves at tighter surrogate bounds spend the rest in inner solves at
  penalty 8-17 that creep along tol (seed 2 traced). Three seeds of five converge, each
  at about 300 passes.
  Tried, one seed each (session 6): fixed larger steps (4 to 200 times the bound's) reach
  0.78-0.82 at the budget; a step of 1 / (the penalty's curvature at the test point, 0.55
  against the bound's 245 then) converges in 215 passes at 0.825, but that curvature came
  from power iterations whose passes were not counted (about 15 a test); moving the
  surrogate's bound at the outer iterations of one solve instead of solving again reaches
  0.818 at the budget.
- **many_groups** (budget, at the constant model's accuracy): the joint curvature bound
  cut the penalty's 1350 to 128, and the fit now leaves its start (0.56 test accuracy at
  bound 0.5, 0.68 at 0.95, where it stayed at the constant model before), but at 0.1 it
  ends within 0.004 of the constant model. What bounds it is the loss itself, not the
  constraints: at bound 0.999, with the penalty's curvature all but removed (beta0 = 0.004,
  a step of 1.3 against the loss's 1 / 0.25 = 4), 300 passes bring the dual residual to
  0.0093 where the stop test asks for 0.0028. In the solver's units the loss's Hessian at
  LogisticRegression's solution has condition number 353 (eigenvalues 0.17 down to 4.9e-4,
  besides the null direction of the one-hot columns that sum to the intercept), so a
  first-order method needs about 800 steps for each tenfold fall in the slowest direction,
  and every step reads a row of every group (0.125 passes a step here: 2400 steps in 300
  passes). LogisticRegression's L-BFGS reaches 8.8e-5 in 19 iterations. Neither peer meets
  this bound (ThresholdOptimizer's training gap is 0.30, ExponentiatedGradient's 0.45); a
  linear model with the groups' columns as per-group thresholds does
  (training gap 0, test accuracy 0.70). Tried: the first
  penalty from the ratio of the loss's to the penalty's curvature (beta0 = 2 L0 / LJ): 0.61
  at bound 0.5 but the constant model at 0.1, and Adult's equalised odds at about 300
  passes in each of three seeds; the exact norm of the weights instead of Schur's test (LJ 91): no
  better here, and Adult's equalised odds within 100 passes in 1 seed of 5 (3 with
  Schur's).
- **tfidf** (budget, and the test gap): the Newton finish on 10000 sparse features takes
  its Hessian-vector products one read of the rows each, and the steering's re-solves
  several finishes, so a seed can end at the budget near the optimum (residuals of order
  1e-6). The bound met on the training rows does not carry to new rows on this family: the
  group is nearly independent of X beyond the label's score, so on the population a linear
  model meets it only by flattening its score, while on the training rows it can fit the
  groups' rates through rare features. fairlearn's ExponentiatedGradient does the same where
  it can run (a dense copy of X: smaller members of the family,
  the CHANGELOG's `benchmarks/heldout_gap.py`). The certified fit (`calibration="clopper-pearson"`)
  sees the gap on its held-out calibration rows and says so: `certified_` is False, with a
  warning naming the certified value.
- **small_table** (below the peer): the 7 % group is not in X and leans positive on the
  main feature, so a linear model meets the bound only by leaning less on that feature.
  Ours reaches 0.684 over 5 seeds at training gap 0.048, ExponentiatedGradient 0.711 at
  0.045 with predictions drawn from its randomised mixture. The most accurate single
  linear model on the training rows at gap <= 0.05 that a search finds (LogisticRegression's
  weights and 6000 perturbations of them, every threshold) has
  training accuracy 0.715 but test accuracy 0.660 (test gap 0.120). At tol 1e-3 and 3000
  passes the fit stays at the minibatch noise floor (about 0.0011) and says so.
- **Tried in session 9, not adopted** (scripts in the closing note of issue 20): the step
  is not what holds the creeping solves back. At the end of Adult's equalised-odds solves
  (seed 0) the augmented Lagrangian's largest curvature is 0.16, 0.41 and 1.1 at penalty
  1.4, 4.4 and 13.3, where the step's bound L0 + beta LJ is 21, 63 and 192 (finite
  differences of the full gradient); yet a tighter proven bound (|J_k|^2 by Cauchy-Schwarz
  weighted by |W_k|: LJ 14.4 -> 11.0 for equalised odds, 9.5 -> 5.7 for error-rate parity)
  left equalised odds within 100 passes in 2 seeds of 5 (3 now) and missed error-rate
  parity in 4 of 5 (2 now), and scaling the columns by the penalty's curvature on them (a
  diagonal preconditioner as a change of units) left LJ at 13.7 and helped no row.
"""

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
            "(regenerated, never edited).\n\n"
            "## The data families of issue 20\n\n"
            + FAMILIES_INTRO
            + "\n\n"
            + "\n".join(_LINES)
            + "\n\n"
            + WHY,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
