"""The deterministic finish (issue 33) against an exact reference solve (SLSQP) and against
LogisticRegression, on the problems the estimators pose."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import reference_solve
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from sklearn_ialm.problems import CONSTRAINTS, fairness_problem, neyman_pearson_problem
from sklearn_ialm.solver.finish import alm_finish
from sklearn_ialm.solver.prox import Ridge


def _data(n=1500, d=6, seed=0):
    X, y = make_classification(n, d, n_informative=4, n_redundant=0, random_state=seed)
    groups = (X[:, 0] + np.random.default_rng(seed).normal(size=n) > 0.3).astype(int)
    return X, y, groups


def _ridge(pb, strength=1e-3):
    pb.h = Ridge(strength, mask=np.r_[np.ones(pb.n_features, bool), False])
    return pb


_BINDING = {"positive_share": 0.6, "disparate_impact": 0.99}


@pytest.mark.parametrize("kind", CONSTRAINTS)
def test_finish_reaches_the_reference_optimum(kind):
    X, y, g = _data()
    bound = _BINDING.get(kind, 0.02)
    protected = [1] if kind in _BINDING else None
    pb = _ridge(fairness_problem(X, y, X, g, bound=bound, constraint=kind, loss="logistic",
                                 fit_intercept=True, protected=protected))  # fmt: skip
    ref = reference_solve(pb)
    assert ref["success"], ref["message"]
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert fin.converged, fin.message
    f = pb.full_evaluation(fin.x)
    value = f[0] + pb.h.value(fin.x)
    assert abs(value - ref["objective"]) <= 1e-6 * max(1.0, abs(ref["objective"]))
    c = f[2] + fin.shift
    assert np.all(c[pb.inequality] <= 1e-5)
    # Binding: the constraint is active at the reference optimum.
    assert np.max(ref["constraints"]) > -2e-3


def test_finish_on_neyman_pearson_reaches_the_reference_optimum():
    X, y, _ = _data(seed=2)
    pb = _ridge(neyman_pearson_problem(X, y, max_fpr=0.05, fit_intercept=True))
    ref = reference_solve(pb)
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert fin.converged, fin.message
    f = pb.full_evaluation(fin.x)
    # Nonconvex (a sigmoid loss): the same local optimum from the same start, or a better one.
    assert f[0] + pb.h.value(fin.x) <= ref["objective"] + 1e-6
    assert f[2][0] <= 1e-5


def test_finish_of_a_loose_bound_is_logistic_regression():
    X, y, g = _data(seed=1)
    n = len(X)
    C = 0.5
    pb = fairness_problem(X, y, X, g, bound=0.9, constraint="demographic_parity",
                          loss="logistic", fit_intercept=True)  # fmt: skip
    pb.h = Ridge(1.0 / (C * n), mask=np.r_[np.ones(X.shape[1], bool), False])
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-7, max_evaluations=2000)  # fmt: skip
    lr = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(X, y)
    coef, intercept = pb.coef(fin.x)
    np.testing.assert_allclose(coef, lr.coef_[0], atol=1e-5)
    np.testing.assert_allclose(intercept, lr.intercept_[0], atol=1e-5)
    np.testing.assert_array_equal(fin.multipliers, 0.0)


def test_finish_counts_and_stops_at_its_budget():
    X, y, g = _data()
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.0, constraint="demographic_parity",
                                 loss="logistic", fit_intercept=True))  # fmt: skip
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-12, dual_tol=1e-12, max_evaluations=7)  # fmt: skip
    assert not fin.converged and fin.n_evaluations <= 8
    assert "budget" in fin.message


@pytest.mark.parametrize("budget", [2, 3])
def test_a_finish_too_short_for_a_newton_step_still_moves(budget):
    # A Newton step reads the rows three times or more (its point, the curvature: two reads
    # here, a trial point); with fewer reads the Newton finish returned its start unchanged
    # (a small Neyman-Pearson fit at max_passes=5: the constant model). The augmented
    # Lagrangian at the point returned is below the start's, whatever took the steps.
    X, y, _ = _data(n=600)
    pb = _ridge(neyman_pearson_problem(X, y, max_fpr=0.2, fit_intercept=True))
    x0, y0 = np.zeros(pb.n_params), np.zeros(pb.n_constraints)
    assert pb.curvature_passes == 2.0
    fin = alm_finish(pb, x0, y0, 1.0, tol=1e-12, dual_tol=1e-12, max_evaluations=budget)
    assert 0 < fin.n_evaluations <= budget

    def lagrangian(x):  # at the solve's multipliers y0 = 0 and penalty 1
        f, _, c, _ = pb.full_evaluation(x)
        return f + pb.h.value(x) + 0.5 * float(np.sum(np.maximum(c, 0.0) ** 2))

    assert lagrangian(fin.x) < lagrangian(x0) - 1e-3


def _five_groups(n=3000, seed=0):
    X, y = make_classification(n, 6, n_informative=4, n_redundant=0, random_state=seed)
    noise = np.random.default_rng(seed).normal(size=n)
    return X, y, np.digitize(X[:, 0] + noise, [-1.0, -0.3, 0.3, 1.0])


@pytest.mark.parametrize("kind", ["equalized_odds", "error_rate_parity"])
def test_newton_finish_of_many_constraints_reaches_the_reference_in_few_passes(kind):
    """Five groups (20 constraints for equalized odds): the Newton inner solves (one Gram
    matrix an iteration, whatever the number of constraints) reach SLSQP's optimum in a few
    dozen reads of the rows, where L-BFGS-B's inner solves took 188 (equalized odds) and
    112 (error-rate parity)."""
    X, y, g = _five_groups()
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.05, constraint=kind, loss="logistic",
                                 fit_intercept=True))  # fmt: skip
    ref = reference_solve(pb)
    assert ref["success"], ref["message"]
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert fin.converged, fin.message
    assert fin.n_evaluations <= 60
    f = pb.full_evaluation(fin.x)
    value = f[0] + pb.h.value(fin.x)
    assert abs(value - ref["objective"]) <= 1e-6 * max(1.0, abs(ref["objective"]))
    np.testing.assert_allclose(fin.x, ref["x"], atol=1e-4)
    assert np.max(ref["constraints"]) > -2e-3


def test_newton_conjugate_gradient_finish_reaches_the_reference(monkeypatch):
    """Past ``_GRAM_MAX_PARAMS`` parameters the Newton steps come from conjugate gradients
    on Hessian-vector products (each counted as a read of the rows): the same optimum as
    SLSQP's."""
    from sklearn_ialm.problems import _gram

    X, y, g = _five_groups(seed=1)
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.05, constraint="demographic_parity",
                                 loss="logistic", fit_intercept=True))  # fmt: skip
    ref = reference_solve(pb)
    assert ref["success"], ref["message"]
    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=3000)  # fmt: skip
    assert fin.converged, fin.message
    f = pb.full_evaluation(fin.x)
    value = f[0] + pb.h.value(fin.x)
    assert abs(value - ref["objective"]) <= 1e-6 * max(1.0, abs(ref["objective"]))
    np.testing.assert_allclose(fin.x, ref["x"], atol=1e-4)


def _wide_csr(n=4000, d=1100, nnz=10, seed=0):
    """CSR rows of ``nnz`` non-zeros in [0, 1) over ``d`` columns (more than
    ``GRAM_MAX_PARAMS``: the finish's Hessian is an operator), labels and a group that
    follow a sparse linear score."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols, vals = rng.integers(0, d, size=(n, nnz)), rng.random((n, nnz))
    indptr = np.arange(0, n * nnz + 1, nnz)
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n, d))
    X.sum_duplicates()
    s = X @ (rng.standard_normal(d) * (rng.random(d) < 0.1) * 3)
    y = (s + rng.logistic(size=n) > np.median(s)).astype(int)
    g = (s + rng.normal(scale=s.std(), size=n) > np.median(s)).astype(int)
    return X, y, g


def _wide_problem(bound):
    X, y, g = _wide_csr()
    return _ridge(fairness_problem(X, y, X, g, bound=bound, constraint="demographic_parity",
                                   loss="logistic", fit_intercept=True))  # fmt: skip


def _finish(pb, tol=1e-6):
    start = np.zeros(pb.n_params), np.zeros(pb.n_constraints)
    return alm_finish(pb, *start, 1.0, tol=tol, dual_tol=tol, max_evaluations=3000)


def test_wide_csr_finish_reaches_the_dense_newton_optimum(monkeypatch):
    """CSR rows of 1100 columns: the finish by conjugate gradients on Hessian products
    reaches the optimum of the finish by Cholesky on the Gram matrix (the same problem with
    the Gram matrix allowed), the bound binding. Both at tol=1e-7: the objectives' bar
    (1e-7) is the multiplier (about 0.5) times the primal residual, and at tol=1e-6 a
    converged finish may end 7e-7 inside the bound, 3.6e-7 above the optimum."""
    from sklearn_ialm.problems import _gram

    pb = _wide_problem(0.02)
    assert pb.n_params > _gram.GRAM_MAX_PARAMS
    wide = _finish(pb, 1e-7)
    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 10**5)
    dense = _finish(_wide_problem(0.02), 1e-7)
    assert wide.converged and dense.converged, (wide.message, dense.message)
    f, ref = pb.full_evaluation(wide.x), pb.full_evaluation(dense.x)
    assert abs(f[0] + pb.h.value(wide.x) - ref[0] - pb.h.value(dense.x)) <= 1e-7
    np.testing.assert_allclose(wide.x, dense.x, atol=1e-4)
    assert np.all(f[2] <= 1e-5) and np.max(ref[2]) > -1e-5  # met, and binding


def test_operator_newton_step_takes_the_penalty_it_crosses_into(monkeypatch):
    """At a point inside the bound, a penalty past its kink (``y + beta c < 0``), the Newton
    step of the augmented Lagrangian crosses into the penalty's side. By conjugate gradients
    it is the step of the piecewise quadratic model as Cholesky's active-set steps find it;
    blind to the penalty it crossed, it was ten times as long (a line search's three
    reads, on CSR 2e5 x 1e4 at beta = 1000)."""
    from sklearn_ialm.problems import _gram
    from sklearn_ialm.solver._finish_lagrangian import _AugmentedLagrangian

    pb = _wide_problem(0.02)
    opt, loose = _finish(pb), _finish(_wide_problem(0.9))
    x = opt.x - 0.1 * (loose.x - opt.x)  # from the optimum away from the unconstrained one
    c = pb.full_evaluation(x)[2]
    k = int(np.argmax(opt.multipliers))
    y = opt.multipliers
    beta = 3.0 * y[k] / abs(c[k])
    assert c[k] < 0 and y[k] > 0

    def step(limit):
        monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", limit)
        al = _AugmentedLagrangian(pb, None, np.asarray(pb.inequality, bool), 10**6)
        _, grad, cx, w, Jv = al.point(x, y, beta)
        assert w[k] == 0.0  # the penalty is flat at the point
        s = al.direction(grad, y, beta, cx, w, Jv, True)
        return s, y[k] + beta * (cx[k] + Jv[k] @ s)

    (s_op, w_op), (s_dense, w_dense) = step(1024), step(10**5)
    assert w_dense > 0  # the step ends on the penalty's side
    assert 0.8 <= np.linalg.norm(s_op) / np.linalg.norm(s_dense) <= 1.25
    assert abs(w_op - w_dense) <= 0.05 * w_dense


@pytest.mark.parametrize("kind", ["demographic_parity", "equalized_odds"])
def test_cheap_curvature_is_formed_at_every_step_of_every_solve(monkeypatch, kind):
    """Where the curvature is cheap (a sample of many rows, a cluster's), every Newton step,
    the first of each outer iteration's solve included, uses the curvature formed at its own
    point (the last solve's was formed a step earlier, with other multipliers), and the
    multipliers come from Newton's step on the KKT system; from zero on five groups at
    ``beta = 1`` that step once moved the constraints away (before: unconverged in 2000
    reads). The same optimum as SLSQP's."""
    from sklearn_ialm.problems.linear import LinearProblem
    from sklearn_ialm.solver._finish_lagrangian import _AugmentedLagrangian

    X, y, g = _five_groups()
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.05, constraint=kind, loss="logistic",
                                 fit_intercept=True))  # fmt: skip
    monkeypatch.setattr(LinearProblem, "curvature_cost", 0.0)
    stale = []
    direction = _AugmentedLagrangian.direction

    def checked(self, *args, **kwargs):
        step = direction(self, *args, **kwargs)
        stale.append(self._curvature_at != self._second[0])
        return step

    monkeypatch.setattr(_AugmentedLagrangian, "direction", checked)
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert fin.converged, fin.message
    assert fin.n_outer_iter >= 2  # a solve that starts where the last one's steps ended
    assert len(stale) > fin.n_outer_iter and not any(stale)
    ref = reference_solve(pb)
    np.testing.assert_allclose(fin.x, ref["x"], atol=1e-4)


@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_operator_diagonal_is_the_products_own(monkeypatch, sparse):
    """The Hessian operator's diagonal (the preconditioner's scalar comes from it) is that
    of its products, ``e_k . H e_k``: dense and CSR rows, in centred and scaled units,
    the objective and the constraints on subsets of the rows."""
    import scipy.sparse as sp

    from sklearn_ialm.problems import LinearProblem, _gram
    from sklearn_ialm.problems.losses import Logistic

    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 6)) + 0.5
    X[rng.random(X.shape) < 0.3] = 0.0
    pos, neg = np.arange(0, 500, 2), np.arange(1, 500, 2)
    W = np.column_stack([rng.uniform(-1, 1, len(neg)), rng.uniform(0, 2, len(neg))])
    A = sp.csr_matrix(X) if sparse else X
    pb = LinearProblem(
        A, (X[pos, 0] > 0.5) * 2.0 - 1.0, Logistic(), A, W, np.zeros(2),
        fit_intercept=True, feature_scale=rng.uniform(0.5, 2.0, 6),
        feature_center=rng.standard_normal(6), rows_objective=pos, rows_constraint=neg,
    )  # fmt: skip
    H = pb.second_order_evaluation(rng.normal(size=pb.n_params))[4](np.array([0.7, 0.2]))
    products = np.array([(H @ e)[k] for k, e in enumerate(np.eye(pb.n_params))])
    np.testing.assert_allclose(H.diagonal(), products, rtol=1e-10, atol=0)


def test_preconditioned_cg_reaches_the_dense_newton_step():
    """At the optimum's multipliers and a large penalty (beta = 1000, the finish's last),
    conjugate gradients preconditioned by the penalty (Woodbury) reach the solution of the
    same Hessian formed column by column and solved densely, in fewer products than
    without the preconditioner."""
    from sklearn_ialm.solver._finish_lagrangian import _AugmentedLagrangian
    from sklearn_ialm.solver._newton_steps import _cg_solve

    pb = _wide_problem(0.02)
    opt = _finish(pb)
    ineq = np.asarray(pb.inequality, bool)
    al = _AugmentedLagrangian(pb, None, ineq, 10**6)
    x = opt.x + np.random.default_rng(2).normal(scale=1e-2, size=pb.n_params)
    y, beta = opt.multipliers, 1e3
    _, grad, c, w, Jv = al.point(x, y, beta)
    active = ~ineq | (w > 0)
    assert np.any(active)
    H = al.hessian(y, beta, w, Jv, True, active)
    assert H.precondition is not None
    dense = np.column_stack([H @ e for e in np.eye(pb.n_params)])
    exact = np.linalg.solve(dense, -grad)
    counts = {}
    for name, pre in (("plain", None), ("preconditioned", H.precondition)):
        before = al.n_evaluations
        s = _cg_solve(H, -grad, 1e-10 * np.linalg.norm(grad), pre)
        counts[name] = al.n_evaluations - before
        np.testing.assert_allclose(s, exact, rtol=0, atol=1e-6 * np.linalg.norm(exact))
    assert counts["preconditioned"] < counts["plain"], counts


def test_an_undone_kkt_step_leaves_no_evaluation_of_another_point(monkeypatch):
    """Where the finish ends right after undoing a Newton multiplier step (here the last
    outer iteration), the evaluation it returns for the verdict is of the point it returns,
    or none (the verdict then reads the rows), never the undone solve's."""
    from sklearn_ialm.problems.linear import LinearProblem

    X, y, g = _five_groups()
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.05, constraint="demographic_parity",
                                 loss="logistic", fit_intercept=True))  # fmt: skip
    monkeypatch.setattr(LinearProblem, "curvature_cost", 0.0)
    full = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                      tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert full.history["primal_residual"][1] > full.history["primal_residual"][0]  # undone
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000, max_outer_iter=2)  # fmt: skip
    if fin.evaluation is not None:
        np.testing.assert_allclose(fin.evaluation[1], pb.full_evaluation(fin.x)[1], rtol=1e-12)


def test_trust_region_step_is_the_shifted_newton_step_of_that_length():
    """An indefinite Hessian's step within a radius (the multinomial problem's finish): the
    Newton step of the eigenvalues in absolute value where it fits, else the shifted step
    ``-(|H| + sigma I)^-1 g`` whose length is the radius, sigma found by scipy's brentq."""
    from scipy.optimize import brentq

    from sklearn_ialm.solver._newton_steps import _newton_step

    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    lam = np.array([-2.0, -1e-3, 1e-4, 0.5, 1.0, 2.0, 3.0, 5.0])
    H, g = Q @ np.diag(lam) @ Q.T, rng.normal(size=8)
    free = -Q @ ((Q.T @ g) / np.abs(lam))
    assert np.allclose(_newton_step(H, g), free)
    assert np.allclose(_newton_step(H, g, radius=2 * np.linalg.norm(free)), free)
    radius = 0.1 * np.linalg.norm(free)
    length = lambda s: np.linalg.norm((Q.T @ g) / (np.abs(lam) + s)) - radius  # noqa: E731
    sigma = brentq(length, 0.0, np.linalg.norm(g) / radius)
    step = _newton_step(H, g, radius=radius)
    assert np.linalg.norm(step) <= radius * (1 + 1e-9)
    assert np.allclose(step, -Q @ ((Q.T @ g) / (np.abs(lam) + sigma)), rtol=1e-6)


def test_trust_region_keeps_a_positive_definite_step_within_the_radius():
    """A positive definite Hessian's Newton step longer than the radius is the shifted step
    ``-(H + sigma I)^-1 g`` of that length (sigma by scipy's brentq), where the Cholesky
    step ignored the radius: at a penalty of 1e4 on digits its steps were cut to 1e-7 of
    their length one after another. A step within the radius is Newton's own."""
    from scipy.optimize import brentq

    from sklearn_ialm.solver._newton_steps import _newton_step

    rng = np.random.default_rng(1)
    Q = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    lam = np.array([1e-4, 1e-3, 0.1, 0.5, 1.0, 2.0, 1e3, 1e4])
    H, g = Q @ np.diag(lam) @ Q.T, rng.normal(size=8)
    newton = -np.linalg.solve(H, g)
    assert np.allclose(_newton_step(H, g, radius=2 * np.linalg.norm(newton)), newton)
    radius = 1e-3 * np.linalg.norm(newton)
    length = lambda s: np.linalg.norm((Q.T @ g) / (lam + s)) - radius  # noqa: E731
    sigma = brentq(length, 0.0, np.linalg.norm(g) / radius)
    step = _newton_step(H, g, radius=radius)
    assert np.linalg.norm(step) <= radius * (1 + 1e-9)
    assert np.allclose(step, -Q @ ((Q.T @ g) / (lam + sigma)), rtol=1e-6)
    assert float(g @ step) < 0.0


def test_a_flipped_data_block_gives_the_shifted_cholesky_step_of_that_length():
    """The multi-class finish's step where its Hessian ``H = D + P`` is indefinite (``D``
    the data block with negative eigenvalues, ``P`` the penalty's positive semidefinite
    terms, beside a levels block): ``-(H - F + sigma I)^-1 g`` with ``F = 2 V diag(lam) V^T``
    of ``D``'s negative eigenpairs (so ``D - F = |D|``), ``sigma = 0`` where the step fits
    the radius, else the ``sigma`` of a step of that length (scipy's brentq); a descent
    direction either way. Without the flip, the step takes ``H``'s absolute eigenvalues."""
    from scipy.optimize import brentq

    from sklearn_ialm.solver._newton_steps import _newton_step

    rng = np.random.default_rng(2)
    Q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    lam = np.array([-0.3, -1e-3, 1e-2, 0.5, 1.0, 2.0])
    J = rng.normal(size=(2, 8))
    H = J.T @ J + 1e-3 * np.eye(8)
    H[:6, :6] += Q @ np.diag(lam) @ Q.T
    g = rng.normal(size=8)
    F = 2.0 * (Q[:, :2] * lam[:2]) @ Q[:, :2].T
    M = H.copy()
    M[:6, :6] -= F
    lm, Qm = np.linalg.eigh(M)
    assert lm.min() > 0.0
    free = -np.linalg.solve(M, g)
    assert np.allclose(_newton_step(H, g, flip=lambda: F), free)
    radius = 0.05 * np.linalg.norm(free)
    length = lambda s: np.linalg.norm((Qm.T @ g) / (lm + s)) - radius  # noqa: E731
    sigma = brentq(length, 0.0, np.linalg.norm(g) / radius)
    step = _newton_step(H, g, radius=radius, flip=lambda: F)
    assert np.linalg.norm(step) <= radius * (1 + 1e-9)
    assert np.allclose(step, -Qm @ ((Qm.T @ g) / (lm + sigma)), rtol=1e-6)
    assert float(g @ step) < 0.0 and float(g @ free) < 0.0
    lh, Qh = np.linalg.eigh(H)
    assert np.allclose(_newton_step(H, g), -Qh @ ((Qh.T @ g) / np.abs(lh)))


@pytest.mark.parametrize("n_groups", [4, 6])
def test_equalized_odds_with_the_groups_in_x_takes_few_passes(n_groups):
    """Equalized odds 0.05 on 5000 generated rows, the groups one-hot in X: converged, the
    bound met, within 30 passes. Main at 47717cd: 47.8 passes (four groups), and 447 passes
    unconverged (six groups).

    Four groups: the free levels of a band sit where they minimise the augmented Lagrangian
    at each Newton point (Newton's steps in ``(x, tau)`` crossed the band's kinks back and
    forth, the levels' gradient stuck above the inner tolerance while ``x``'s had
    converged): 21.4 passes. Six groups: that and the steering's holding a band of
    differences that leaves its bound unused while another misses (loosening it moved the
    other band away from its bound, solve after solve): 28.7 passes."""
    from sklearn_ialm import FairLogisticClassifier

    rng = np.random.default_rng(0)
    n, k = 5000, n_groups
    g = rng.choice(k, size=n, p=np.r_[0.7, np.full(k - 1, 0.3 / (k - 1))])
    X = rng.standard_normal((n, 6))
    score = X @ rng.standard_normal(6) + 1.5 * (g == 0) - 0.5
    y = (score + rng.logistic(size=n) > 0).astype(int)
    X = np.hstack([X, np.eye(k)[g]])
    model = FairLogisticClassifier(constraint="equalized_odds", bound=0.05, random_state=0)
    model.fit(X, y, sensitive_features=g)
    assert model.converged_ and model.bound_met_
    assert model.n_data_passes_ <= 30


def test_cholesky_step_is_scipys_to_the_bit_and_fails_as_scipy_does():
    """The Newton steps' Cholesky solve calls LAPACK directly (scipy's wrappers cost as much
    as a 112 x 112 factorisation): its answer is scipy's ``cho_solve(cho_factor(H), b)``
    bit for bit (a vector, columns, F-ordered columns), and a matrix that is not positive
    definite or not finite raises scipy's errors."""
    from scipy.linalg import cho_factor, cho_solve

    from sklearn_ialm.solver._newton_steps import _cholesky_solve

    rng = np.random.default_rng(0)
    for n in (1, 7, 112):
        A = rng.standard_normal((2 * n, n))
        H = A.T @ A + 1e-3 * np.eye(n)
        for b in (
            rng.standard_normal(n),
            rng.standard_normal((n, 3)),
            np.asfortranarray(rng.standard_normal((n, 4))),
        ):
            np.testing.assert_array_equal(_cholesky_solve(H, b), cho_solve(cho_factor(H), b))
        indefinite = H.copy()
        indefinite[-1, -1] = -1.0
        with pytest.raises(np.linalg.LinAlgError):
            cho_factor(indefinite)
        with pytest.raises(np.linalg.LinAlgError):
            _cholesky_solve(indefinite, b)
        H[0, 0] = np.nan
        with pytest.raises(ValueError):
            _cholesky_solve(H, b)


def test_the_levels_of_a_newton_point_form_its_gradient_once(monkeypatch):
    """A Newton point with its free levels solved reads the constraint values at the old
    levels, then forms the augmented Lagrangian's value and gradient once, at the new ones
    (twice up to int28: the first gradient was thrown away). The finish still reaches the
    reference optimum (scipy's, see ``_reference``)."""
    from sklearn_ialm.solver import _finish_lagrangian

    AL = _finish_lagrangian._AugmentedLagrangian
    X, y, g = _data()
    g = 2 * g + (X[:, 1] > 0.5)  # four groups: a band with a free level
    pb = _ridge(fairness_problem(X, y, X, g, bound=0.02, constraint="demographic_parity",
                                 loss="logistic", fit_intercept=True))  # fmt: skip
    assert pb.levels is not None
    calls, inside = [], []
    point, solved = AL.point, AL._levels_solved

    def counted_point(self, v, y, beta):
        if inside:
            inside[-1] += 1
        return point(self, v, y, beta)

    def counted_levels(self, v, y, beta):
        inside.append(0)
        out = solved(self, v, y, beta)
        calls.append(inside.pop())
        return out

    monkeypatch.setattr(AL, "point", counted_point)
    monkeypatch.setattr(AL, "_levels_solved", counted_levels)
    fin = alm_finish(pb, np.zeros(pb.n_params), np.zeros(pb.n_constraints), 1.0,
                     tol=1e-6, dual_tol=1e-6, max_evaluations=2000)  # fmt: skip
    assert fin.converged, fin.message
    assert calls and set(calls) == {1}, calls
    ref = reference_solve(pb)
    f = pb.full_evaluation(fin.x)
    assert abs(f[0] + pb.h.value(fin.x) - ref["objective"]) <= 1e-6 * max(1.0, ref["objective"])


def test_newton_directions_search_the_kinks_from_the_last_steps_sides(monkeypatch):
    """100 groups of 20 rows (``benchmarks.families.many_groups``, demographic parity 0.1):
    each Newton direction's search of the kinks' sides adds those where the last step
    ended to the point's own, which alone (the levels' re-solve turns most of them off)
    took more Cholesky factorisations for as many directions; the model is the same,
    within 1e-6."""
    import warnings

    from benchmarks.families import many_groups
    from sklearn_ialm import FairLogisticClassifier
    from sklearn_ialm.solver import _finish_lagrangian, _newton_steps

    X, y, g, *_ = many_groups()
    factorise, direction = _newton_steps.dpotrf, _finish_lagrangian._AugmentedLagrangian.direction
    counts = {}

    def counted_factorise(*args, **kwargs):
        counts["factorisations"] += 1
        return factorise(*args, **kwargs)

    def counted_direction(self, *args, **kwargs):
        counts["directions"] += 1
        return direction(self, *args, **kwargs)

    monkeypatch.setattr(_newton_steps, "dpotrf", counted_factorise)
    monkeypatch.setattr(_finish_lagrangian._AugmentedLagrangian, "direction", counted_direction)
    fits = {}
    for warm in (False, True):
        # (raising=False: without the switch both fits are the point's own search.)
        monkeypatch.setattr(_finish_lagrangian, "_WARM_SIDES", warm, raising=False)
        counts.update(factorisations=0, directions=0)
        clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[warm] = (clf.fit(X, y, sensitive_features=g), dict(counts))
    (cold, n_cold), (warm, n_warm) = fits[False], fits[True]
    assert cold.converged_ and warm.converged_
    assert cold.bound_met_ and warm.bound_met_
    assert n_warm["directions"] <= n_cold["directions"]
    assert n_warm["factorisations"] < n_cold["factorisations"], (n_cold, n_warm)
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-6)
    assert abs(warm.objective_ - cold.objective_) <= 1e-6 * abs(cold.objective_)
