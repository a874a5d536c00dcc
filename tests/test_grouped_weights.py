"""A band over many groups evaluated through ``W``'s structure (group codes and the band's
overall term, ``problems._grouped_weights``) gives the dense ``W``'s values to rounding."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import fairness_problem


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize(
    "kind", ["demographic_parity", "true_positive_rate_parity", "error_rate_parity"]
)
def test_grouped_evaluation_is_the_dense_one(kind, form, sparse):
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.standard_normal((n, 6))
    y = (X[:, 0] + rng.logistic(size=n) > 0).astype(int)
    g = rng.integers(0, 12, n)
    A = sp.csr_matrix(X) if sparse else X
    problem = fairness_problem(
        A, y, A, g, bound=0.1 if form == "difference" else 0.8, constraint=kind, form=form,
        loss="logistic", fit_intercept=True, feature_scale="auto",
        constraint_sample_weight=rng.uniform(0.5, 2.0, n), constraint_scale=0.5,
    )  # fmt: skip
    assert problem.weight_groups is not None
    x = rng.standard_normal(problem.n_params) * 0.3
    got = problem.full_evaluation(x)
    problem.weight_groups = None
    want = problem.full_evaluation(x)
    eye = np.eye(problem.n_constraints)
    for a, b in zip(got[:3], want[:3], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[3](eye), want[3](eye), rtol=1e-12, atol=1e-14)


def test_two_rates_and_pairs_keep_the_dense_weights():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 3))
    y = rng.integers(0, 2, 400)
    eo = fairness_problem(X, y, X, rng.integers(0, 5, 400), bound=0.1, constraint="equalized_odds")
    pairs = fairness_problem(X, y, X, rng.integers(0, 2, 400), bound=0.1,
                             constraint="demographic_parity")  # fmt: skip
    assert eo.weight_groups is None and pairs.weight_groups is None
