"""The stochastic phase on a sample of the rows (``LinearProblem.row_sample``, used by
``stoc_ialm`` from ``_SAMPLE_MIN_ROWS`` rows): the sample's functions are the means over its
rows, and the finish on all rows from the sample's point ends at the optimum."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.datasets import make_classification

from sklearn_ialm.problems import fairness_problem
from sklearn_ialm.solver import stoc_ialm
from sklearn_ialm.solver._ialm_search import _SAMPLE_MIN_ROWS, _SAMPLE_ROWS


def _data(n, seed=0):
    X, y = make_classification(n, 5, n_informative=4, n_redundant=0, random_state=seed)
    g = (X[:, 0] + np.random.default_rng(seed).normal(size=n) > 0.3).astype(int)
    return X, y, g


@pytest.mark.parametrize("sparse", [False, True])
def test_the_sample_is_the_mean_over_its_rows(sparse):
    X, y, g = _data(4000)
    rows_in = sp.csr_matrix(X) if sparse else X
    pb = fairness_problem(rows_in, y, rows_in, g, bound=0.05, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    view = pb.row_sample(np.random.default_rng(0), 0.1)
    assert view.n_objective_samples == 400
    x = np.random.default_rng(1).normal(size=pb.n_params)
    f0, grad, c, jac_t = view.full_evaluation(x)
    # The truth from the rows the view holds (its copy), by numpy and finite differences.
    A = view.A_obj.A.toarray() if sparse else view.A_obj.A
    coef, b0 = pb.coef(x)
    rows = np.flatnonzero(np.isin(X, A).all(axis=1))
    assert len(rows) == 400 and np.allclose(X[rows], A)
    margins = np.where(y[rows] == 1, 1.0, -1.0)
    assert np.isclose(f0, np.mean(np.logaddexp(0.0, -margins * (X[rows] @ coef + b0))))
    p = expit(X[rows] @ coef + b0)
    expected = [np.mean(pb.W[rows, k] * p) + pb.offset[k] for k in range(pb.n_constraints)]
    assert np.allclose(c, expected)

    def value(z):
        return view.full_evaluation(z)[0]

    fd = [(value(x + 1e-6 * e) - value(x - 1e-6 * e)) / 2e-6 for e in np.eye(pb.n_params)]
    assert np.allclose(grad, fd, atol=1e-6)
    assert view.setup_evaluations == 800  # its copy: the objective and the constraint rows


def test_strata_keep_their_shares():
    X, y, g = _data(3000)
    g = np.where(np.arange(3000) < 60, 2, g)  # a group of 60 rows
    pb = fairness_problem(X, y, X, g, bound=0.05, constraint="demographic_parity",
                          balance_groups=True)  # fmt: skip
    assert pb.constraint_strata is not None
    view = pb.row_sample(np.random.default_rng(0), 0.1)
    full = np.unique(pb.constraint_strata, return_counts=True)
    part = np.unique(view.constraint_strata, return_counts=True)
    assert np.array_equal(full[0], part[0])
    assert np.all(np.abs(part[1] - 0.1 * full[1]) <= 1 + (full[1] < 20))


def test_a_large_problem_runs_on_a_sample_and_ends_at_the_finish_alone_optimum(capsys):
    X, y, g = _data(_SAMPLE_MIN_ROWS)
    pb = fairness_problem(X, y, X, g, bound=0.02, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    res = stoc_ialm(pb, random_state=0, finish_tol=1e-3, verbose=1)
    assert "on a sample of" in capsys.readouterr().out
    alone = stoc_ialm(pb, random_state=0, finish_tol=1e-3, search=False)
    assert res.converged and alone.converged
    # Both within the finish's tolerances (1e-5 on the constraints, times the multipliers).
    assert abs(res.objective - alone.objective) <= 1e-5
    assert np.max(res.constraint_values) <= 1e-5
    # The sample's reads count as the sample's share of a pass each.
    share = min(_SAMPLE_ROWS / _SAMPLE_MIN_ROWS, 0.1)
    assert res.n_setup_passes >= share * 0.5
    assert res.n_data_passes < alone.n_data_passes


def test_an_unconstrained_fit_starts_on_a_sample_and_ends_at_logistic_regressions(capsys):
    """Without constraints (Neyman-Pearson's reweighted fits) the finish on all rows starts
    from the sample's optimum too, and ends at scikit-learn's unpenalised optimum, in fewer
    passes than from the caller's start."""
    from sklearn.linear_model import LogisticRegression

    X, y, g = _data(_SAMPLE_MIN_ROWS, seed=1)
    pb = fairness_problem(X, y, X, g, bound=0.02, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True, protected=[])  # fmt: skip
    assert pb.n_constraints == 0
    res = stoc_ialm(pb, random_state=0, finish_tol=1e-6, verbose=1)
    assert "on a sample of" in capsys.readouterr().out
    alone = stoc_ialm(pb, random_state=0, finish_tol=1e-6, search=False)
    assert "on a sample of" not in capsys.readouterr().out
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    coef, intercept = pb.coef(res.x)
    assert res.converged
    np.testing.assert_allclose(coef, ref.coef_[0], atol=1e-6)
    assert abs(intercept - ref.intercept_[0]) <= 1e-6
    assert res.n_data_passes < alone.n_data_passes


def test_a_wide_problem_keeps_all_rows(capsys):
    """Where the sample would hold fewer than _SAMPLE_ROWS_PER_PARAM rows per parameter its
    optimum is far from all rows' (CSR 2e5 x 1e4: the finish from it read three times the
    passes of the finish from zero): the run does not start on a sample."""
    from sklearn_ialm.solver._ialm_search import _SAMPLE_ROWS_PER_PARAM, _SAMPLE_SHARE

    rng = np.random.default_rng(0)
    n = _SAMPLE_MIN_ROWS
    d = int(min(_SAMPLE_ROWS, _SAMPLE_SHARE * n) / _SAMPLE_ROWS_PER_PARAM) + 1
    X = sp.random(n, d, density=5 / d, format="csr", random_state=0)
    y = (X @ rng.normal(size=d) + rng.logistic(size=n) > 0).astype(int)
    g = rng.integers(0, 2, size=n)
    pb = fairness_problem(X, y, X, g, bound=0.02, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    stoc_ialm(pb, random_state=0, max_passes=2, verbose=1)
    assert "on a sample of" not in capsys.readouterr().out
    narrow = fairness_problem(X[:, : d // 2], y, X[:, : d // 2], g, bound=0.02,
                              constraint="demographic_parity", loss="logistic",
                              fit_intercept=True)  # fmt: skip
    stoc_ialm(narrow, random_state=0, max_passes=2, verbose=1)
    assert "on a sample of" in capsys.readouterr().out
