"""``kkt_dual_residual_`` is the true dual residual of the solve a fit kept.

The truth is formed here, independently of ``sklearn_ialm.solver.kkt``: the kept solve's
gradient and Jacobian read again from its problem at its point, its constraint values (at the
free levels it ended on), the ridge's gradient, the levels' coefficients; the multiplier is
scipy's NNLS on the stacked system ``[J^T; levels^T; diag(c)]`` (paper eq. (opt-dual) with
the levels' stationarity), or, with an L1 kink, scipy's bounded least squares with the
subgradient among the unknowns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import lsq_linear, nnls
from sklearn.datasets import make_classification

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators import _solve
from sklearn_ialm.solver import L1, Box, NoProx, Prox
from sklearn_ialm.solver.prox import Ridge


@pytest.fixture
def solves(monkeypatch):
    """Every solver run of the fits in the test, with its problem's evaluation at the run's
    point taken at once (a later solve of the steering may move the problem)."""
    runs = []
    run = _solve.stoc_ialm

    def recording(problem, **kwargs):
        result = run(problem, **kwargs)
        _, grad, _, jac_t = problem.full_evaluation(result.x)
        m, p = problem.n_constraints, problem.n_params
        J = np.array([np.asarray(jac_t(e), dtype=float) for e in np.eye(m)]).reshape(m, p)
        runs.append(
            (
                result,
                dict(
                    x=result.x.copy(), grad=np.asarray(grad, dtype=float), J=J,
                    c=np.array(result.constraint_values, dtype=float),
                    levels=getattr(problem, "levels", None), h=problem.h,
                    ineq=np.asarray(problem.inequality, dtype=bool),
                ),
            )
        )  # fmt: skip
        return result

    monkeypatch.setattr(_solve, "stoc_ialm", recording)
    return runs


def _kept(clf, runs):
    """The kept solve's system (its result is the one whose dual the estimator reads)."""
    kept = [system for result, system in runs if result.kkt_dual is clf._kkt_dual]
    assert len(kept) == 1
    return kept[0]


def _ridge_gradient(h, x):
    if isinstance(h, Ridge):
        return h.strength * (1.0 if h.mask is None else h.mask) * x
    assert type(h) in (NoProx, Prox), h  # (the estimators' terms are a ridge or none)
    return np.zeros_like(x)


def _nnls_truth(system):
    """The dual residual with scipy's NNLS multiplier on the stacked KKT system."""
    x, J, c, ineq, levels = (system[k] for k in ("x", "J", "c", "ineq", "levels"))
    g = system["grad"] + _ridge_gradient(system["h"], x)
    m = len(c)
    L = np.zeros((m, 0)) if levels is None else levels
    A = np.vstack([J.T, L.T, np.diag(np.where(ineq, c, 0.0))])
    b = -np.concatenate([g, np.zeros(L.shape[1] + m)])
    A = np.hstack([A, -A[:, ~ineq]])  # free equality multipliers as differences
    sol, _ = nnls(A, b, maxiter=50 * A.shape[1])
    z = sol[:m].copy()
    z[~ineq] -= sol[m:]
    return float(np.linalg.norm(np.concatenate([g + J.T @ z, L.T @ z]))), np.linalg.norm(g)


def _fit(clf, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(X, y, **kw)


def _agrees(clf, runs):
    truth, scale = _nnls_truth(_kept(clf, runs))
    got = clf.kkt_dual_residual_
    # Four digits, or rounding's level where the truth is rounding (a solution in the
    # interior, the multiplier zero).
    assert got == pytest.approx(truth, rel=1e-4, abs=1e-12 * max(scale, 1.0)), (got, truth)
    return got


@pytest.mark.parametrize("csr", [True, False])
def test_a_hundred_steered_groups_read_the_kept_solves_residual(solves, csr):
    """100 groups of 20 rows, the group one-hot in X, DP 0.1 (steered: the hard rates move
    the threshold and re-solve): the kept solve converged, and its dual residual is the
    NNLS truth with the ridge's gradient and the band's free level (6.2e-9). It read 0.68
    (0.57 on dense rows): the multiplier was fitted without either, and over 64
    constraints through a residual's rounding."""
    from benchmarks.families import many_groups

    X, y, groups, *_ = many_groups()
    X = X if csr else X.toarray()
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1, random_state=0)
    _fit(clf, X, y, sensitive_features=groups)
    assert clf.converged_ and len(solves) > 1
    assert _kept(clf, solves)["levels"] is not None
    got = _agrees(clf, solves)
    assert got < 1e-6


def _two_groups(n=1500, seed=0):
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, random_state=seed)
    groups = (X[:, 0] + np.random.default_rng(seed).normal(size=n) > 0.3).astype(int)
    return X, y, groups


def _four_groups(n=2000, seed=1):
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, random_state=seed)
    groups = np.digitize(X[:, 1], [-0.8, 0.0, 0.8])
    return X, y, groups


def _three_classes(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    groups = rng.integers(2, size=n)
    scores = X @ rng.normal(size=(5, 3)) + np.outer(groups, [1.2, 0.0, -1.2])
    y = np.argmax(scores + rng.gumbel(size=(n, 3)), axis=1)
    return np.column_stack([X, groups]), y, groups


_EO, _ERR = "equalized_odds", "error_rate_parity"
#: The kinds: their rows, the estimator's parameters, whether X is CSR.
_FAIR = {
    "two groups dense": (_two_groups, dict(bound=0.02), False),
    "two groups CSR": (_two_groups, dict(bound=0.02), True),
    "two groups soft": (_two_groups, dict(bound=0.0002, rate="soft"), False),
    "four groups equalized odds": (_four_groups, dict(constraint=_EO, bound=0.03), False),
    "four groups loose bound": (_four_groups, dict(bound=0.9), False),
    "three classes parity": (_three_classes, dict(bound=0.05), False),
    "three classes error rate": (_three_classes, dict(constraint=_ERR, bound=0.005), False),
}


@pytest.mark.parametrize("name", list(_FAIR))
def test_fair_fits_agree_with_nnls(solves, name):
    """Each kind's kept solve: two groups (dense, CSR, soft rates), four groups (equalized
    odds, a bound that does not bind), three classes (parity, error rate)."""
    make, kw, csr = _FAIR[name]
    X, y, groups = make()
    clf = FairLogisticClassifier(random_state=0, **kw)
    _fit(clf, sp.csr_matrix(X) if csr else X, y, sensitive_features=groups)
    _agrees(clf, solves)
    z = clf._kkt_dual.solved()[1]
    # Every kind but the loose bound's binds: a multiplier well above rounding.
    assert (z.max() > 1e-3) != ("loose" in name), z


@pytest.mark.parametrize("csr", [False, True])
def test_neyman_pearson_agrees_with_nnls(solves, csr):
    """The paper's model (the sigmoid loss, a bound on the soft false-positive rate), whose
    constraint stays in the kept solve (with hard rates the moved threshold carries it)."""
    X, y = make_classification(n_samples=2000, n_features=8, n_informative=5, random_state=3)
    clf = NeymanPearsonClassifier(max_fpr=0.05, rate="soft", loss="sigmoid", random_state=0)
    _fit(clf, sp.csr_matrix(X) if csr else X, y)
    _agrees(clf, solves)
    assert clf._kkt_dual.solved()[1][0] > 0.1  # the bound binds


def _bounded_truth(x, grad, J, c, lam, mask):
    """scipy's bounded least squares over the multiplier (nonnegative) and the L1 term's
    subgradient at its kinks (in ``[-lam, lam]``); the residual of the stationarity rows."""
    m, p = J.shape
    lam_i = lam * mask
    kink = np.flatnonzero((x == 0) & (lam_i > 0))
    fixed = np.where(x == 0, 0.0, lam_i * np.sign(x))
    E = np.eye(p)[:, kink]
    A = np.block([[J.T, E], [np.diag(c), np.zeros((m, len(kink)))]])
    b = -np.concatenate([grad + fixed, np.zeros(m)])
    lo = np.concatenate([np.zeros(m), -lam_i[kink]])
    hi = np.concatenate([np.full(m, np.inf), lam_i[kink]])
    ref = lsq_linear(A, b, bounds=(lo, hi), method="bvls", tol=1e-15)
    return float(np.linalg.norm((A @ ref.x - b)[:p])), ref.x[:m]


def test_an_l1_kink_agrees_with_scipys_bounded_least_squares():
    """An L1 term with coordinates at zero (its kink: the subgradient anywhere in
    ``[-lam, lam]``, an unpenalised coordinate none) and constraints at and off their
    bounds: the residual and the multiplier are those of scipy's bounded least squares over
    the multiplier and the kinks' subgradients. Fitted to the smooth gradient alone (as
    before), the multiplier leaves a residual above it."""
    from sklearn_ialm.solver import kkt_dual_residual

    rng = np.random.default_rng(4)
    worse = 0
    for _ in range(30):
        p, m = rng.integers(3, 9), rng.integers(1, 5)
        x = rng.normal(size=p) * (rng.random(p) < 0.5)
        mask = rng.random(p) < 0.8
        lam = 0.3
        J = rng.normal(size=(m, p))
        c = rng.normal(size=m) * 0.1 * (rng.random(m) < 0.5)
        grad = -J.T @ rng.exponential(size=m) + rng.normal(size=p) * 0.3
        truth, z_ref = _bounded_truth(x, grad, J, c, lam, mask)
        got, z = kkt_dual_residual(x, grad, J, c, L1(lam, mask=mask), np.ones(m, bool))
        assert got == pytest.approx(truth, rel=1e-6, abs=1e-12)
        np.testing.assert_allclose(z, z_ref, rtol=1e-5, atol=1e-8)
        alone = nnls(np.vstack([J.T, np.diag(c)]), -np.r_[grad, np.zeros(m)])[0]
        before = np.linalg.norm(L1(lam, mask=mask).dist_subdiff(x, grad + J.T @ alone))
        worse += before > got * 1.01
    assert worse >= 10


def test_bounded_least_squares_matches_scipy_on_random_boxes():
    """The active set against scipy's bounded least squares on the stacked system: unknowns
    nonnegative, free, in an interval around 0 or on one side of it, tall and wide
    systems, columns of scales 1e-3 to 1e2, with and without damping rows (some zero),
    with and without a start (whose guess never changes the answer)."""
    from sklearn_ialm.solver._dual_lsq import bounded_least_squares

    rng = np.random.default_rng(0)
    kinds = [(0.0, np.inf), (-np.inf, np.inf), (-0.3, 0.3), (-np.inf, 0.0), (0.0, 0.0)]
    for trial in range(60):
        rows, cols = rng.integers(3, 30), rng.integers(2, 25)
        A = rng.standard_normal((rows, cols)) * rng.choice([1e-3, 1.0, 1e2], size=cols)
        b = rng.standard_normal(rows)
        damping = None
        if trial % 2:
            damping = rng.standard_normal(cols) * 10.0 ** rng.uniform(-9, 0, cols)
            damping[rng.random(cols) < 0.3] = 0.0
        pick = rng.integers(len(kinds), size=cols)
        lo = np.array([kinds[k][0] for k in pick])
        hi = np.array([kinds[k][1] for k in pick])
        S = A if damping is None else np.vstack([A, np.diag(damping)])
        t = np.concatenate([b, np.zeros(len(S) - rows)])
        # (scipy takes no unknown fixed by its bounds: those stay at 0, out of its system.)
        moving = lo < hi
        if not moving.any():
            continue
        ref = lsq_linear(S[:, moving], t, bounds=(lo[moving], hi[moving]), method="bvls",
                         tol=1e-14)  # fmt: skip
        best = np.linalg.norm(S[:, moving] @ ref.x - t)
        for start in (None, rng.random(cols) < 0.5):
            w = bounded_least_squares(A, b, lo, hi, damping=damping, start=start)
            assert np.all(w >= lo) and np.all(w <= hi)
            # As small, up to the rounding of the products (a wide system is met exactly).
            rounding = 1e-12 * (np.linalg.norm(b) + np.abs(S) @ np.abs(w)).max()
            assert np.linalg.norm(S @ w - t) <= best * (1 + 1e-9) + rounding, trial


@pytest.mark.parametrize(
    "h",
    [
        NoProx(),
        L1(0.4, mask=[True, True, False, True]),
        Box(-1.0, [0.5, 1.0, 2.0, 1.0]),
        Box(0.0, 0.0),
        Ridge(0.7, mask=[True, False, True, True]),
    ],  # fmt: skip
)
def test_subgradient_bounds_are_the_subdifferential_of_dist_subdiff(h):
    """``dist(0, g + dh(x))`` measured by ``dist_subdiff`` is the distance from ``-g`` to the
    intervals of ``subgradient_bounds``, at kinks, on bounds and off them."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = rng.choice([0.0, -1.0, 0.5, 1.0, 2.0, rng.normal()], size=4)
        x = h.prox(x, 1.0)
        g = rng.normal(size=4) * 2
        lo, hi = h.subgradient_bounds(x)
        assert np.all(lo <= hi)
        np.testing.assert_allclose(np.abs(g + np.clip(-g, lo, hi)), h.dist_subdiff(x, g))
