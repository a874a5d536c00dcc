"""Many small groups whose indicators are columns of X (issue 49, item 3): the model class
holds a score offset per group (the group column's coefficient), and the fit reaches the
bound with it, at ThresholdOptimizer's accuracy, where the surrogate alone cannot."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._group_cuts import group_cut
from sklearn_ialm.estimators._hard_rates import _Units
from sklearn_ialm.problems import fairness_problem


def groups_in_x(n_groups, seed, drop_first=False):
    """``make_classification(20 n_groups, 10)`` with ``n_groups`` groups of 20 rows, one-hot
    in X (without the first group's column with ``drop_first``), split 70/30."""
    X, y = make_classification(20 * n_groups, 10, random_state=seed)
    g = np.repeat(np.arange(n_groups), 20)
    np.random.default_rng(seed).shuffle(g)
    onehot = np.eye(n_groups)[g][:, int(drop_first) :]
    return train_test_split(np.column_stack([X, onehot]), y, g, test_size=0.3, random_state=seed)


@pytest.mark.parametrize("drop_first", [False, True], ids=["one-hot", "drop first"])
@pytest.mark.parametrize("seed", [0, 1])
def test_group_columns_reach_the_bound_at_threshold_optimizers_accuracy(seed, drop_first):
    X_tr, X_te, y_tr, y_te, g_tr, g_te = groups_in_x(30, seed, drop_first)
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X_tr, y_tr, sensitive_features=g_tr)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    # The bound holds on the training predictions, as fairlearn measures it. (On fresh rows
    # a group holds about six: no classifier's gap there is near 0.1, ThresholdOptimizer's
    # neither.)
    gap = demographic_parity_difference(y_tr, clf.predict(X_tr), sensitive_features=g_tr)
    assert gap <= 0.1 + 1e-12 and clf.bound_met_
    # Held-out accuracy at ThresholdOptimizer's (its prediction randomised at a fixed seed)
    # within 0.02; on main the fit moved 95 % of the way to the constant model (about 0.5).
    to = ThresholdOptimizer(
        estimator=LogisticRegression(max_iter=2000),
        constraints="demographic_parity",
        predict_method="auto",
    ).fit(X_tr, y_tr, sensitive_features=g_tr)
    to_accuracy = np.mean(to.predict(X_te, sensitive_features=g_te, random_state=0) == y_te)
    assert np.mean(clf.predict(X_te) == y_te) >= to_accuracy - 0.02
    # Converged, or a compromise that says so and how it was reached.
    assert bool(said) == (not clf.converged_)
    if not clf.converged_:
        (text,) = said
        assert "compromise, not the optimum of a posed problem" in text
        assert "a threshold of each group's own" in text


def _cut(X, y, g, columns):
    """LogisticRegression's model on ``X[:, columns]`` cut by group at demographic parity 0.1:
    ``(coef, intercept)`` before and after, or after None."""
    Xc = X[:, columns]
    problem = fairness_problem(
        Xc, y, Xc, g, bound=0.1, constraint="demographic_parity", fit_intercept=True
    )
    lr = LogisticRegression(max_iter=2000).fit(Xc, y)
    x = problem.point(lr.coef_.ravel(), lr.intercept_[0])
    cut = group_cut(problem, _Units(problem), g, x, problem.constraint_scores(x), problem.offset)
    return problem.coef(x), None if cut is None else problem.coef(cut[0])


def test_a_group_cut_moves_only_the_group_columns_and_meets_the_bound():
    X_tr, _, y_tr, _, g_tr, _ = groups_in_x(30, 0)
    (coef, intercept), (cut_coef, cut_intercept) = _cut(X_tr, y_tr, g_tr, slice(None))
    pred = X_tr @ cut_coef + cut_intercept > 0
    assert demographic_parity_difference(y_tr, pred, sensitive_features=g_tr) <= 0.1 + 1e-12
    before = X_tr @ coef + intercept > 0
    assert demographic_parity_difference(y_tr, before, sensitive_features=g_tr) > 0.1
    np.testing.assert_array_equal(cut_coef[:10], coef[:10])  # the features' own
    # Each group's scores moved by one offset: the cut is a threshold per group.
    moved = (X_tr @ cut_coef + cut_intercept) - (X_tr @ coef + intercept)
    for k in range(30):
        assert np.ptp(moved[g_tr == k]) < 1e-9


def test_no_group_cut_without_the_group_columns():
    X_tr, _, y_tr, _, g_tr, _ = groups_in_x(30, 0)
    # Without the columns, or with two of them missing (the intercept carries one only).
    assert _cut(X_tr, y_tr, g_tr, slice(0, 10))[1] is None
    assert _cut(X_tr, y_tr, g_tr, np.r_[0:10, 12:40])[1] is None
    # Two groups: left to the steering (its fits are the golden record's).
    two = (g_tr % 2).astype(int)
    assert _cut(np.column_stack([X_tr[:, :10], two]), y_tr, two, slice(None))[1] is None


def test_a_hundred_groups_of_twenty_rows_converge_at_the_bound():
    """100 groups of 20 rows one-hot in X (benchmarks.families.many_groups), DP 0.1: a rate
    moves 0.05 a row. The fit converges (no warning, so no advice check) at the optimum of
    the problem its last solve posed, with the bound met on its training predictions as
    fairlearn measures them; the same model for the same random_state. It ended unconverged
    after 125.5 data passes (29 of them the fit's, the rest the advice check's refits)."""
    from benchmarks.families import many_groups

    X, y, g, *_ = many_groups()
    fits = []
    for _ in range(2):
        clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(X, y, sensitive_features=g)
        fits.append(clf)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert clf.converged_ and not said, said
    assert clf.kkt_primal_residual_ <= clf.tol and clf.dual_residual_ <= clf.tol
    gap = demographic_parity_difference(y, clf.predict(X), sensitive_features=g)
    assert gap <= 0.1 + 1e-12 and clf.bound_met_
    assert clf.n_data_passes_ <= 30
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].intercept_ == fits[1].intercept_
