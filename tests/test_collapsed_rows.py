"""Constraint rows that list the matrix's rows again (groups balanced for the minibatches):
an evaluation on all rows reads each row once, with the weights of its copies summed, and
gives the functions of the listed rows."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import LinearProblem
from sklearn_ialm.problems._rows import _Subset
from sklearn_ialm.problems.losses import Logistic


def _problems(seed=0, n=300, d=6, m=4):
    """The same problem twice: constraint rows as indices into the matrix (a row listed up
    to three times), and as an explicit copy of those rows."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, d, density=0.5, random_state=seed, format="csr")
    margins = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    rows = np.repeat(np.arange(n), rng.integers(1, 4, size=n))
    W = rng.standard_normal((len(rows), m))
    offset = rng.standard_normal(m) * 0.1
    kw = dict(fit_intercept=True, feature_scale=1.0)
    listed = LinearProblem(A, margins, Logistic(), A, W, offset, rows_constraint=rows, **kw)
    copied = LinearProblem(A, margins, Logistic(), A[rows], W, offset, **kw)
    return listed, copied, rng.standard_normal(d + 1)


def test_evaluation_is_the_listed_rows_functions():
    listed, copied, x = _problems()
    got, want = listed.second_order_evaluation(x), copied.second_order_evaluation(x)
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
    mu = np.array([0.3, 0.0, 1.2, 0.5])
    np.testing.assert_allclose(got[4](mu), want[4](mu), rtol=1e-10, atol=1e-14)
    f, g, c, jac_t = listed.full_evaluation(x)
    v = np.array([1.0, -2.0, 0.5, 0.25])
    np.testing.assert_allclose(c, want[2], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(jac_t(v), want[3].T @ v, rtol=1e-10, atol=1e-14)


def test_evaluation_reads_each_row_once(monkeypatch):
    """No evaluation spreads the listed rows' terms onto the matrix's rows: their weights
    are summed once (by one sparse product, cached for the problem's W) and every
    evaluation reads the sums."""
    listed, _, x = _problems(seed=1)
    V, _ = listed._evaluation_weights()  # the one sum, before the spreader is forbidden
    rows, n = listed.A_con.rows, listed.A_con.A.shape[0]
    summed = [np.bincount(rows, weights=w, minlength=n) for w in listed.W.T]
    np.testing.assert_allclose(V, np.column_stack(summed), rtol=1e-13, atol=1e-15)

    def spread(self):
        pytest.fail("an evaluation spread the listed rows' terms")

    monkeypatch.setattr(_Subset, "_spreader", spread)
    monkeypatch.setattr(_Subset, "rmatvec", lambda self, r: spread(self))
    listed.second_order_evaluation(x)
    listed.full_evaluation(x)[3](np.ones(4))
