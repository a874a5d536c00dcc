"""The stream's second-order summary (estimators/_stream_summary.py): the model it gives is
the minimiser of the augmented Lagrangian on every row summed, against scikit-learn and
scipy on the same rows."""

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log1p
from sklearn.linear_model import LogisticRegression

from sklearn_ialm.estimators._stream_summary import add, newton_model, piece_summary

N_CELLS = 4  # two groups x two labels


def _rows(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X @ np.array([1.0, -0.5, 0.3]) + 0.4 + rng.logistic(size=n) > 0).astype(int)
    group = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y, 2 * group + y


def _summary(X, y, cells, theta, pieces=8):
    """Pieces expanded about points near ``theta`` (each its own, as a stream's iterates)."""
    rng = np.random.default_rng(1)
    total = None
    coords = (np.ones(X.shape[1]), None, True)
    for rows in np.array_split(np.arange(len(y)), pieces):
        about = theta + 0.05 * rng.normal(size=len(theta))
        part = piece_summary(
            X[rows], coords, np.where(y[rows] == 1, 1.0, -1.0), np.ones(len(rows)),
            cells[rows], N_CELLS, about,
        )  # fmt: skip
        total = add(total, part)
    return total


def test_without_constraints_the_summary_gives_logistic_regressions_model():
    X, y, cells = _rows()
    lr = LogisticRegression(C=1e10, tol=1e-12, max_iter=1000).fit(X, y)
    exact = np.r_[lr.coef_.ravel(), lr.intercept_]
    summary = _summary(X, y, cells, exact)
    none = np.zeros((0, N_CELLS))
    model = newton_model(
        summary, none, np.zeros(0), np.zeros(0), 3.0, (0.0, np.r_[np.ones(3), 0.0]),
        np.zeros(4),
    )  # fmt: skip
    # Expanded 0.05 off the optimum, the quadratic model's error is second order.
    np.testing.assert_allclose(model, exact, atol=5e-3)


def test_with_a_constraint_the_summary_gives_the_augmented_lagrangians_minimiser():
    """Demographic parity's two sides at bound 0.02 between the groups' soft rates, at a
    multiplier that binds: scipy minimises the exact augmented Lagrangian."""
    X, y, cells = _rows()
    n = len(y)
    share = np.bincount(cells, minlength=N_CELLS) / n
    rate = np.array([1.0, 1.0, 0.0, 0.0]) / (share[0] + share[1])
    other = np.array([0.0, 0.0, 1.0, 1.0]) / (share[2] + share[3])
    A = np.vstack([rate - other, other - rate])
    offset = np.full(2, -0.02)
    y_mult, beta = np.array([0.0, 0.3]), 3.0
    Z = np.column_stack([X, np.ones(n)])
    margins = np.where(y == 1, 1.0, -1.0)

    def exact_objective(t):
        s = Z @ t
        loss = np.mean(log1p(np.exp(-margins * s)))
        c = A @ np.bincount(cells, weights=expit(s), minlength=N_CELLS) / n + offset
        lam = np.maximum(0.0, y_mult + beta * c)
        return loss + np.sum(lam**2 - y_mult**2) / (2.0 * beta)

    truth = minimize(exact_objective, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    summary = _summary(X, y, cells, truth)
    model = newton_model(
        summary, A, offset, y_mult, beta, (0.0, np.r_[np.ones(3), 0.0]), np.zeros(4)
    )
    np.testing.assert_allclose(model, truth, atol=5e-3)
    # (The multiplier moves the model: it is not the unconstrained one.)
    lr = LogisticRegression(C=1e10, tol=1e-12, max_iter=1000).fit(X, y)
    assert np.max(np.abs(np.r_[lr.coef_.ravel(), lr.intercept_] - truth)) > 0.05
