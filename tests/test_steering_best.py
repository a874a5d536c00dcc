"""The steering's last word where its model leaves room inside the bound (issue 49 item 7,
``sklearn_ialm/estimators/_steering_best.py``): the model of least objective that meets
the bound on predictions among the converged solves and the segments from the
unconstrained optimum towards them, with a verdict that is that model's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _families import Family
from fairlearn.metrics import demographic_parity_difference
from scipy.optimize import minimize
from scipy.special import log_expit
from test_invariants import _column_scales, objective

import sklearn_ialm.estimators._steering as steering
import sklearn_ialm.estimators._steering_best as best
from sklearn_ialm import FairLogisticClassifier

#: A group of 8 rows (its selection rate moves 0.125 a row) beside 292: at demographic
#: parity 0.05 the steering alone ends 0.03 inside the bound on predictions.
EIGHT_ROWS = Family(
    n_rows=300, group_shares=(0.026667, 0.973333), tie="independent", noise_sd=0.5,
    positive_share=0.2, n_features=2, seed=1,
)  # fmt: skip


def _fit(X, y, groups, bound, **params):
    est = FairLogisticClassifier(
        constraint="demographic_parity", bound=bound, random_state=0, **params
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, sensitive_features=groups)


def _unconstrained_objective(X, y, C=1.0):
    """The least objective of any model (no bound), by scipy: the mean log-loss plus
    ``||w * scale||^2 / (2 C n)`` (the estimators' penalty, see tests/test_invariants.py)."""
    scale, n, d = _column_scales(X), len(y), X.shape[1]
    sign = np.where(y == 1, 1.0, -1.0)

    def value(p):
        w, b = p[:d], p[d]
        return -np.mean(log_expit(sign * (X @ w + b))) + np.sum((w * scale) ** 2) / (2 * C * n)

    return float(minimize(value, np.zeros(d + 1), method="BFGS", options={"gtol": 1e-10}).fun)


def test_a_model_inside_the_bound_gives_way_to_a_better_one_that_meets_it(monkeypatch):
    X, y, groups = EIGHT_ROWS.sample()
    solves = []

    def counting(step):
        def counted(problem, units, solve, fit, *args):
            before = len(fit.results)
            out = step(problem, units, solve, fit, *args)
            solves.append(len(fit.results) - before)
            return out

        return counted

    monkeypatch.setattr(best, "_together", counting(best._together))
    monkeypatch.setattr(best, "_solve_parity", counting(best._solve_parity))
    ours = _fit(X, y, groups, 0.05)
    monkeypatch.setattr(steering, "best_met", lambda problem, units, fit, *a, **k: fit)
    alone = _fit(X, y, groups, 0.05)
    # Both meet the bound on predictions as fairlearn measures it, ours at a lower objective
    # (0.449 against 0.484), never below the least objective of any model.
    for est in (ours, alone):
        assert demographic_parity_difference(y, est.predict(X), sensitive_features=groups) <= 0.05
    assert objective(ours, X, y) < objective(alone, X, y) - 0.01
    assert objective(ours, X, y) >= _unconstrained_objective(X, y) - 1e-9
    # The verdict and the report are the returned model's: converged (a point between two
    # converged solves), the bound met, objective_ its objective, the solves counted.
    assert ours.converged_ and ours.bound_met_
    assert ours.objective_ == pytest.approx(objective(ours, X, y), rel=1e-9)
    gap = demographic_parity_difference(y, ours.predict(X), sensitive_features=groups)
    assert ours.hard_constraint_values_[0] == pytest.approx(gap, abs=1e-12)
    # The unconstrained solve, those with the soft bounds moved alike and the one at narrow
    # soft bands.
    assert ours.n_rounds_ == alone.n_rounds_ + 1 + sum(solves)


def test_the_paper_preset_runs_no_unconstrained_solve(monkeypatch):
    """The paper preset's solves are stochastic: an unconstrained solve would add its passes
    to every fit whose model leaves room (35.5 to one of the golden record's cases, not
    chosen), so only one the steering ran is reused there."""
    X, y, groups = EIGHT_ROWS.sample()
    calls = []
    solve_free = best._solve_free

    def counted(*args, **kwargs):
        calls.append(1)
        return solve_free(*args, **kwargs)

    monkeypatch.setattr(best, "_solve_free", counted)
    _fit(X, y, groups, 0.05)
    assert len(calls) == 1
    # (Up to main 86948de this fit raised a TypeError: every solve met the bound, and the
    # steering's end looked for the nearest that missed.)
    paper = _fit(X, y, groups, 0.05, preset="paper")
    assert len(calls) == 1
    gap = demographic_parity_difference(y, paper.predict(X), sensitive_features=groups)
    assert paper.bound_met_ == (gap <= 0.05 + 1e-12)
