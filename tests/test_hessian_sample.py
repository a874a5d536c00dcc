"""The finish's Hessian from a sample of the rows is an estimate of the Hessian of all rows,
whatever seed the user's data came from (``problems._numeric.SAMPLE_SEED``)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from sklearn_ialm.problems import fairness_problem


def test_the_sampled_hessian_is_that_of_all_rows_for_data_drawn_with_seed_0():
    # A group drawn as users often draw one: default_rng(0).random(n) < 0.3. With the
    # sample's own seed 0 the Hessian's rows (default_rng(0).random(n) < 0.1) were all in
    # the group, and its column's curvature came out 3.4 times too large.
    n = 100_000
    rng = np.random.default_rng(0)
    group = (rng.random(n) < 0.3).astype(float)
    X = np.column_stack([rng.standard_normal((n, 4)), group])
    y = (rng.random(n) < expit(X[:, 0] - group)).astype(int)
    pb = fairness_problem(X, y, X, group.astype(int), bound=0.1, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True, protected=[])  # fmt: skip
    pick, _ = pb._hessian_sample(pb.A_obj.A)
    assert pick is not None  # the case under test: a sample of the rows
    x = np.random.default_rng(1).normal(scale=0.3, size=pb.n_params)
    H = np.asarray(pb.second_order_evaluation(x)[4](np.zeros(0)))
    # The exact Hessian of the mean logistic loss: sum_i p_i (1 - p_i) a_i a_i^T / n.
    A1 = np.column_stack([X, np.ones(n)])
    p = expit(A1 @ x)
    exact = (A1 * (p * (1 - p))[:, None]).T @ A1 / n
    assert np.linalg.norm(H - exact) <= 0.05 * np.linalg.norm(exact)


def test_copies_at_other_bounds_share_the_hessian_sample(monkeypatch):
    # The steering solves copies of one problem at moved bounds (with_offset): the same rows
    # and weights, so the same sample, drawn once (a read of the constraint weights).
    from sklearn_ialm.problems._curvature import SecondOrder

    n = 60_000
    rng = np.random.default_rng(2)
    X = rng.standard_normal((n, 20))
    group = (X[:, 0] + rng.standard_normal(n) > 0).astype(int)
    y = (rng.random(n) < expit(X[:, 1])).astype(int)
    pb = fairness_problem(X, y, X, group, bound=0.02, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    draws = []
    importance = SecondOrder._row_importance
    monkeypatch.setattr(
        SecondOrder, "_row_importance", lambda self, A: draws.append(1) or importance(self, A)
    )
    copies = [pb.with_offset(pb.offset - shift) for shift in (0.0, 0.01)]
    picks = [c._hessian_sample(c.A_obj.A)[0] for c in [*copies, pb]]
    assert picks[0] is not None and len(picks[0]) < n  # a sample, the case under test
    assert len(draws) == 1
    for pick in picks[1:]:
        np.testing.assert_array_equal(pick, picks[0])
