"""When does the Neyman-Pearson bound on the training rows carry to new rows? (issue 23)

Gaussian classes in 10 dimensions, so a linear rule's population rates are exact (``Phi``).
For each number of training negatives, ``REPS`` draws fit
``NeymanPearsonClassifier(max_fpr=0.1)`` and its ``calibration="umbrella"`` (``delta=0.1``):
the mean population FPR, how often it exceeds ``max_fpr`` and ``1.25 max_fpr``, the mean
FNR, and the spread the default's warning reads. Second table: the chance that a finite
test set's FPR exceeds ``max_fpr`` under the umbrella rule (Beta-Binomial, integrated with
scipy). Writes ``np_small_data.md``.
"""

from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np
from scipy import integrate
from scipy.stats import beta, binom, norm
from sklearn.exceptions import ConvergenceWarning

from benchmarks.common import write
from sklearn_ialm import NeymanPearsonClassifier
from sklearn_ialm.estimators._umbrella import training_fpr_upper_limit, umbrella_rank

ALPHA, DELTA, REPS, D = 0.1, 0.1, 200, 10
SIZES = (100, 210, 600, 2000)
MU = np.r_[1.2, 0.8, 0.5, np.zeros(D - 3)]


def _rates(clf):
    w, b, t = clf.coef_[0], clf.intercept_[0], clf.threshold_
    norm_w = np.linalg.norm(w)
    return norm.sf((t - b) / norm_w), norm.cdf((t - b - w @ MU) / norm_w)


def simulate(n_neg):
    n_pos = int(0.6 * n_neg)
    rows = {"default": [], "umbrella": []}
    for rep in range(REPS):
        rng = np.random.default_rng([rep, n_neg, 23])
        X = np.vstack([rng.standard_normal((n_neg, D)), MU + rng.standard_normal((n_pos, D))])
        y = np.repeat([0, 1], [n_neg, n_pos])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the small-sample and convergence warnings
            for name, kw in (("default", {}), ("umbrella", dict(calibration="umbrella"))):
                clf = NeymanPearsonClassifier(max_fpr=ALPHA, delta=DELTA, random_state=rep, **kw)
                rows[name].append(_rates(clf.fit(X, y)))
    return {name: np.array(r) for name, r in rows.items()}


def test_set_exceedance(n_held, m_test):
    """P(test FPR > ALPHA) for the umbrella rule on n_held negatives, m_test test ones."""
    k, _ = umbrella_rank(n_held, ALPHA, DELTA)
    limit = math.floor(ALPHA * m_test)

    def density(r):
        return beta.pdf(r, n_held - k + 1, k) * binom.sf(limit, m_test, r)

    return integrate.quad(density, 0, 1, limit=200)[0]


def main():
    start = time.perf_counter()
    warnings.simplefilter("ignore", ConvergenceWarning)
    lines = [
        "# Neyman-Pearson on small data: the training bound and new rows",
        "",
        "Command: `python -m benchmarks.np_small_data` (module docstring: the set-up). "
        f"max_fpr = {ALPHA}, umbrella delta = {DELTA}, {REPS} draws per size, {D} features, "
        "population rates exact (Gaussian classes).",
        "",
        "| training negatives | warning's limit (delta 0.05) | default: mean FPR on new rows "
        "| default: FPR > 0.1 | default: FPR > 0.125 | default: mean FNR | umbrella: mean FPR "
        "| umbrella: FPR > 0.1 | umbrella: mean FNR |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n_neg in SIZES:
        r = simulate(n_neg)
        d, u = r["default"], r["umbrella"]
        lines.append(
            f"| {n_neg} | {training_fpr_upper_limit(n_neg, ALPHA, 0.05):.3f} "
            f"| {d[:, 0].mean():.3f} | {np.sum(d[:, 0] > ALPHA)}/{REPS} "
            f"| {np.sum(d[:, 0] > 1.25 * ALPHA)}/{REPS} | {d[:, 1].mean():.3f} "
            f"| {u[:, 0].mean():.3f} | {np.sum(u[:, 0] > ALPHA)}/{REPS} | {u[:, 1].mean():.3f} |"
        )
    lines += [
        "",
        "## A finite test set adds its own noise",
        "",
        "Chance that the umbrella rule's FPR on a test set of m negatives exceeds 0.1 (exact: "
        "Beta order statistic times binomial count), and the chance of 5 or more such splits "
        "in 20 were they independent:",
        "",
        "| held-out negatives | rank k | v(k) | test negatives m | P(test FPR > 0.1) "
        "| P(>= 5 of 20) |",
        "|---|---|---|---|---|---|",
    ]
    for n_held, m in ((105, 90), (105, 210), (1000, 1000)):
        k, v = umbrella_rank(n_held, ALPHA, DELTA)
        p = test_set_exceedance(n_held, m)
        lines.append(f"| {n_held} | {k} | {v:.4f} | {m} | {p:.3f} | {binom.sf(4, 20, p):.3f} |")
    lines += ["", f"Total time {time.perf_counter() - start:.0f} s.", ""]
    write("np_small_data.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if "--reps" in sys.argv:  # fewer draws per size: a check that the code runs
        REPS = int(sys.argv[sys.argv.index("--reps") + 1])
    main()
