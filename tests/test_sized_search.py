"""The stochastic phase before the finish (issue 42, item 2): on a logistic objective it is
PStorm for a count of draws, with no stop test on all rows; the finish ends at the optimum."""

from __future__ import annotations

import numpy as np
from _reference import reference_solve
from sklearn.datasets import make_classification

from sklearn_ialm.problems import fairness_problem, neyman_pearson_problem
from sklearn_ialm.solver import stoc_ialm
from sklearn_ialm.solver._ialm_search import _SEARCH_DRAWS, _SEARCH_MIN_ROWS
from sklearn_ialm.solver.prox import Ridge


def _problem(n, seed=0):
    X, y = make_classification(n, 6, n_informative=4, n_redundant=0, random_state=seed)
    g = (X[:, 0] + np.random.default_rng(seed).normal(size=n) > 0.3).astype(int)
    pb = fairness_problem(
        X, y, X, g, bound=0.02, constraint="demographic_parity", loss="logistic",
        fit_intercept=True,
    )  # fmt: skip
    pb.h = Ridge(1e-3, mask=np.r_[np.ones(pb.n_features, bool), False])
    return pb


def _minibatch_passes(res):
    return res.n_passes_without_checks - res.n_finish_passes - res.n_setup_passes


def _sample(pb):
    """``pb``'s rows as a sample of themselves: the stochastic phase runs on samples only."""
    return pb.row_sample(np.random.default_rng(0), 1.0)


def test_search_reads_no_stop_test_and_the_finish_ends_at_the_optimum():
    pb = _sample(_problem(2 * _SEARCH_MIN_ROWS))
    ref = reference_solve(pb)
    assert ref["success"], ref["message"]
    res = stoc_ialm(pb, random_state=0, finish_tol=1e-3)
    assert res.converged, res.message
    # The only test on all rows is the finish's closing one.
    assert len(res.history["data_passes"]) == 1
    assert res.n_iter > 0
    # The draws of the search (and the first momentum estimate's), no more.
    rows = max(pb.n_objective_samples, pb.n_constraint_samples)
    first = 2 * 300 / pb.n_samples
    assert 0 < _minibatch_passes(res) <= min(_SEARCH_DRAWS / rows, 1.0) + first
    value = res.objective
    # Within the finish's tolerance on the constraint (1e-5) times its multiplier.
    assert abs(value - ref["objective"]) <= 1e-4 * max(1.0, abs(ref["objective"]))


def test_no_search_below_its_rows_nor_on_all_rows():
    for pb in (_sample(_problem(_SEARCH_MIN_ROWS // 2)), _problem(2 * _SEARCH_MIN_ROWS)):
        res = stoc_ialm(pb, random_state=0, finish_tol=1e-3)
        assert res.converged, res.message
        assert res.n_iter == 0 and _minibatch_passes(res) == 0


def test_no_search_on_wide_data():
    # Above _SEARCH_MAX_PARAMS parameters the step size's power iterations cost more than
    # the phase saves: the finish is the whole solve, as below _SEARCH_MIN_ROWS rows.
    import scipy.sparse as sp

    from sklearn_ialm.solver._ialm_search import _SEARCH_MAX_PARAMS

    rng = np.random.default_rng(0)
    n, d = _SEARCH_MIN_ROWS, _SEARCH_MAX_PARAMS + 1
    X = sp.random(n, d, density=5 / d, format="csr", random_state=0)
    y = (X @ rng.normal(size=d) + rng.logistic(size=n) > 0).astype(int)
    g = rng.integers(0, 2, size=n)
    pb = fairness_problem(X, y, X, g, bound=0.02, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    res = stoc_ialm(_sample(pb), random_state=0, max_passes=3)
    assert res.n_iter == 0 and _minibatch_passes(res) == 0
    narrow = fairness_problem(X[:, :50], y, X[:, :50], g, bound=0.02,
                              constraint="demographic_parity", loss="logistic",
                              fit_intercept=True)  # fmt: skip
    assert stoc_ialm(_sample(narrow), random_state=0, max_passes=10).n_iter > 0


def test_a_nonconvex_loss_keeps_algorithm_1s_search():
    # From zero multipliers the finish of the paper's sigmoid model diverges: its search still
    # ends outer iterations by stop tests and steps the multipliers.
    X, y = make_classification(
        n_samples=800, n_features=6, n_informative=4, n_redundant=0, random_state=0
    )
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    res = stoc_ialm(neyman_pearson_problem(X, y, max_fpr=0.2), random_state=1)
    assert res.converged, res.message
    assert len(res.history["data_passes"]) > 2 and res.n_outer_iter > 1
