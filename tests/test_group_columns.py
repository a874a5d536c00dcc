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


def test_group_columns_read_from_stored_entries_as_from_every_entry():
    """CSR rows give the group columns the dense rows give (the stored entries are read,
    and a column is read whole where its rows at 0 could be a group's): one-hot columns at
    any scale and sign, explicit zeros, a complement's indicator, a union of two groups, a
    group outside the band, a column of two values, dense and empty columns."""
    from types import SimpleNamespace

    import scipy.sparse as sp

    from sklearn_ialm.estimators._group_cuts import _group_columns

    rng = np.random.default_rng(0)
    g = rng.permutation(np.repeat(np.arange(6), [5, 8, 3, 9, 6, 4]))
    on = lambda k, v=1.0: np.where(g == k, v, 0.0)  # noqa: E731
    columns = [
        rng.standard_normal(len(g)),  # dense
        np.zeros(len(g)),  # empty
        on(5),  # a group outside the band's codes
        on(0) + on(1),  # two groups
        np.where(g == 2, 2.0, np.where(g == 0, 3.0, 0.0)),  # two values
        on(1, 2.5),
        on(1, -4.0),  # a second column of group 1: the first is kept
        on(2, -1.5),
        np.where(g == 3, 0.0, 1.0),  # 0 on group 3, 1 elsewhere
        on(4, 1e-3),
        on(0, 7.0),
    ]
    dense = np.column_stack(columns)
    stored = sp.csr_matrix(dense)
    stored[np.flatnonzero(g == 4)[:2], 2] = 0.0  # explicit zeros where group 5 is 0 anyway
    assert stored.nnz > np.count_nonzero(dense)
    for codes in ([0, 1, 2, 3, 4], [4, 2, 0], [1, 3]):
        got = [
            _group_columns(
                SimpleNamespace(A_con=SimpleNamespace(A=A, rows=None), fit_intercept=True),
                g,
                codes,
            )
            for A in (dense, stored)
        ]
        assert got[0] == got[1], codes
    assert got[0] == {1: (5, 2.5, 0.0), 3: (8, 0.0, 1.0)}


def test_row_medians_are_numpys():
    """A value held by more than half of a row is taken as its median without a partition:
    the numbers are ``np.median``'s, rows of odd and even length and rows of zeros."""
    from sklearn_ialm.estimators._group_cuts import _row_medians

    rng = np.random.default_rng(0)
    for m in (7, 8, 200, 201):
        R = np.repeat(rng.standard_normal((500, 1)), m, axis=1)
        R[np.arange(500), rng.integers(0, m, 500)] += 1.0
        R[np.arange(500), rng.integers(0, m, 500)] -= 2.0
        R[:50] = rng.standard_normal((50, m))
        R[50:60] = 0.0
        R[50:60, 0] = -0.0
        np.testing.assert_array_equal(_row_medians(R), np.median(R, axis=1))
        Z = rng.integers(0, 3, (300, m)).astype(float)
        np.testing.assert_array_equal(_row_medians(Z), np.median(Z, axis=1))


@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize(
    "kind", ["demographic_parity", "true_positive_rate_parity", "error_rate_parity"]
)
def test_band_parts_from_the_structure_are_those_of_every_entry(kind, form):
    """A band's own parts read from its structure (a few entries a row) are those of every
    entry read (rows of weight 0, a constraint scale); where ``W`` is not the structure's,
    every entry is read."""
    from sklearn_ialm.estimators._band_parts import structured_owners
    from sklearn_ialm.estimators._group_cuts import _band_weights, _own_parts

    rng = np.random.default_rng(0)
    n = 900
    X, y = rng.standard_normal((n, 3)), rng.integers(0, 2, n)
    g = rng.integers(0, 30, n)
    sw = rng.uniform(0.5, 2.0, n)
    sw[rng.random(n) < 0.05] = 0.0
    problem = fairness_problem(
        X, y, X, g, bound=0.1 if form == "difference" else 0.8, constraint=kind, form=form,
        fit_intercept=True, constraint_sample_weight=sw, constraint_scale=0.5,
    )  # fmt: skip
    weights = _band_weights(problem, _Units(problem))
    W, _, lev, tiny = weights
    assert structured_owners(problem, W, lev, tiny, g) is not None
    got, want = _own_parts(weights, g, problem), _own_parts(weights, g)
    assert got.codes == want.codes
    for a, b in zip(got[1:], want[1:], strict=True):
        np.testing.assert_array_equal(a, b)
    problem.W[0, 5] += 1.0  # not the structure's weights: read whole
    assert structured_owners(problem, W, lev, tiny, g) is None
