"""Prox operators against closed forms; KKT residuals against brute force."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar, nnls

from sklearn_ialm.solver import L1, Box, NoProx, optimal_dual, slack_residuals


def test_l1_prox_is_soft_thresholding_and_minimises_the_prox_objective():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20) * 2
    mask = rng.random(20) < 0.7
    op = L1(0.5, mask)
    out = op.prox(x, 0.8)
    for xi, oi, mi in zip(x, out, mask, strict=True):
        lam = 0.4 * mi
        best = minimize_scalar(lambda u, xi=xi, lam=lam: lam * abs(u) + 0.5 * (u - xi) ** 2)
        assert abs(oi - best.x) < 1e-6
    np.testing.assert_allclose(out[~mask], x[~mask])


def test_box_prox_is_projection():
    op = Box(0.0, 1.0)
    x = np.array([-2.0, 0.3, 1.7])
    np.testing.assert_array_equal(op.prox(x, 3.0), [0.0, 0.3, 1.0])
    assert op.value(np.array([0.5])) == 0.0 and op.value(np.array([2.0])) == np.inf


@pytest.mark.parametrize("op", [NoProx(), L1(0.7), Box(0.0, np.inf), Box(-1.0, 1.0)])
def test_dist_subdiff_matches_brute_force(op):
    # dist(0, g + dh(x)) for scalar coordinates, by scanning the subdifferential.
    xs = np.array([0.0, 0.0, 0.0, 0.5, -1.0, 1.0])
    gs = np.array([0.3, -0.3, 1.5, 0.2, -0.4, 0.4])
    got = op.dist_subdiff(xs, gs)
    for x, g, d in zip(xs, gs, got, strict=True):
        if isinstance(op, L1):
            lam = op.strength
            sub = [lam * np.sign(x)] if x != 0 else np.linspace(-lam, lam, 2001)
        elif isinstance(op, Box):
            lo, hi = float(op.lower), float(op.upper)
            if lo < x < hi:
                sub = [0.0]
            elif x <= lo:
                sub = -np.linspace(0, 100, 20001)
            else:
                sub = np.linspace(0, 100, 20001)
            if x < lo or x > hi:
                continue
        else:
            sub = [0.0]
        assert d == pytest.approx(np.min(np.abs(g + np.asarray(sub))), abs=1e-3)


def test_optimal_dual_closed_form_matches_nnls():
    rng = np.random.default_rng(1)
    for _ in range(20):
        g0 = rng.standard_normal(4)
        j = rng.standard_normal((1, 4))
        c = rng.standard_normal(1) * 0.1
        z = optimal_dual(g0, j, c, np.array([True]))
        A = np.vstack([j.T, np.diag(c)])
        ref, _ = nnls(A, -np.concatenate([g0, [0.0]]))
        np.testing.assert_allclose(z, ref, atol=1e-10)


def test_optimal_dual_over_many_inequalities_matches_nnls():
    """Over many inequalities the multiplier comes from a problem in the residual
    (``n_params`` unknowns): the same minimiser as NNLS over the multipliers, to rounding."""
    rng = np.random.default_rng(0)
    for _ in range(30):
        p, m = rng.integers(2, 15), rng.integers(65, 300)
        jac = rng.standard_normal((m, p)) * rng.choice([1e-3, 1.0, 10.0])
        g0 = rng.standard_normal(p)
        c = rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 0, m)
        z = optimal_dual(g0, jac, c, np.ones(m, bool))
        ref, _ = nnls(np.vstack([jac.T, np.diag(c)]), -np.r_[g0, np.zeros(m)])
        assert z.min() >= 0
        np.testing.assert_allclose(z, ref, rtol=0, atol=1e-7 * max(np.abs(ref).max(), 1.0))


def test_slack_residuals_by_hand():
    x = np.array([1.0, 2.0])
    grad = np.array([0.5, -0.5])
    J = np.array([[1.0, 0.0], [0.0, 1.0]])
    c = np.array([-0.2, 0.1])
    ineq = np.array([True, False])
    s = np.array([0.15])
    y = np.array([0.0, 0.5])
    pres, dres, g = slack_residuals(x, s, y, grad, c, lambda v: J.T @ v, NoProx(), ineq)
    np.testing.assert_allclose(g, [0.5, 0.0, 0.0])
    assert pres == pytest.approx(np.hypot(-0.05, 0.1))
    # x-block: grad + J^T y = (0.5, 0.0); slack block: s > 0 so |y_0| = 0.
    assert dres == pytest.approx(0.5)
    # A negative multiplier on an active slack (s = 0) is a dual violation.
    pres, dres, _ = slack_residuals(
        x, np.array([0.0]), np.array([-0.3, 0.5]), grad, c, lambda v: J.T @ v, NoProx(), ineq
    )
    assert dres == pytest.approx(np.hypot(np.hypot(0.2, 0.0), 0.3))
