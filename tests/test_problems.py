"""Oracles of the paper's models against finite differences and direct formulas."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from sklearn_ialm.problems import LOSSES, LinearProblem, fairness_problem, neyman_pearson_problem
from sklearn_ialm.problems.losses import TruncatedLogistic


def _data(seed=0, n=40, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0.0
    y = (rng.random(n) < 0.5).astype(int)
    groups = rng.integers(0, 3, size=n)
    return X, y, groups, rng


def _problems(sparse):
    X, y, groups, rng = _data()
    Xs = sp.csr_matrix(X) if sparse else X
    w = rng.uniform(0.5, 2.0, size=len(y))
    out = []
    for constraint in ("positive_share", "disparate_impact", "demographic_parity"):
        for fit_intercept in (False, True):
            out.append(
                fairness_problem(
                    Xs,
                    y,
                    Xs,
                    groups,
                    bound=0.3,
                    constraint=constraint,
                    fit_intercept=fit_intercept,
                    sample_weight=w,
                    constraint_sample_weight=w[::-1],
                )
            )
    out.append(fairness_problem(Xs, y, Xs[:25], groups[:25], bound=0.1, loss="logistic"))
    out.append(neyman_pearson_problem(Xs, y, max_fpr=0.2, fit_intercept=True, sample_weight=w))
    # Per-column scale and centre (the estimators' internal standardisation).
    scale, center = rng.uniform(0.5, 3.0, X.shape[1]), rng.standard_normal(X.shape[1])
    out.append(
        LinearProblem(
            Xs, np.where(y == 1, 1.0, -1.0), LOSSES["logistic"](), Xs, w[:, None] - 1.0,
            np.array([0.1]), fit_intercept=True, feature_scale=scale, feature_center=center,
        )
    )  # fmt: skip
    return out


def _fd_grad(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


@pytest.mark.parametrize("sparse", [False, True])
def test_oracles_match_finite_differences(sparse):
    rng = np.random.default_rng(1)
    for pb in _problems(sparse):
        x = 0.5 * rng.standard_normal(pb.n_params)
        full = slice(None)
        grad = pb.objective(x, full)
        fd = _fd_grad(lambda u: pb.objective_value(u, full), x)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)
        # Jacobian of the mean constraint values, row by row through the vjp.
        C, vjp = pb.constraints(x, full)
        n = C.shape[0]
        for k in range(pb.n_constraints):
            U = np.zeros_like(C)
            U[:, k] = 1.0 / n
            fd = _fd_grad(lambda u, k=k: pb.constraints(u, full)[0][:, k].mean(), x)
            np.testing.assert_allclose(vjp(U), fd, rtol=1e-5, atol=1e-8)
        # Minibatch oracles are the means over the rows of the batch.
        idx = rng.integers(pb.n_objective_samples, size=7)
        g_b = pb.objective(x, idx)
        g_rows = np.mean([pb.objective(x, np.array([i])) for i in idx], axis=0)
        np.testing.assert_allclose(g_b, g_rows, rtol=1e-10, atol=1e-12)


def test_sparse_and_dense_oracles_agree():
    x = np.random.default_rng(2).standard_normal(6)
    for pd, ps in zip(_problems(False), _problems(True), strict=True):
        xx = x[: pd.n_params]
        np.testing.assert_allclose(pd.objective(xx, slice(None)), ps.objective(xx, slice(None)))
        np.testing.assert_allclose(
            pd.constraints(xx, slice(None))[0], ps.constraints(xx, slice(None))[0]
        )


def test_fairness_constraint_values_match_the_definitions():
    X, y, groups, rng = _data(3)
    x = rng.standard_normal(X.shape[1])
    p = expit(X @ x)
    bound = 0.3
    share = fairness_problem(X, y, X, groups, bound=bound, protected=[1])
    c = share.constraints(x, slice(None))[0].mean(axis=0)
    # The paper's sum form, divided by |S|: same sign, same feasible set.
    np.testing.assert_allclose(c, (bound * p.sum() - p[groups == 1].sum()) / len(p))
    di = fairness_problem(X, y, X, groups, bound=bound, constraint="disparate_impact")
    c = di.constraints(x, slice(None))[0].mean(axis=0)
    expected = [bound * p.mean() - p[groups == g].mean() for g in (0, 1, 2)]
    np.testing.assert_allclose(c, expected)
    dp = fairness_problem(X, y, X, groups, bound=bound, constraint="demographic_parity")
    c = dp.constraints(x, slice(None))[0].mean(axis=0)
    # fairlearn's between-groups gap: one constraint per ordered pair of groups.
    r = {g: p[groups == g].mean() for g in (0, 1, 2)}
    expected = [r[a] - r[b] - bound for a, b in itertools.permutations((0, 1, 2), 2)]
    np.testing.assert_allclose(c, expected)
    # Four groups and more: each group's rate in a band of width bound around a free level,
    # which starts centred on the overall rate (2k constraints instead of k (k - 1)).
    four = np.where(np.arange(len(groups)) % 7 == 0, 3, groups)
    dp = fairness_problem(X, y, X, four, bound=bound, constraint="demographic_parity")
    c = dp.constraints(x, slice(None))[0].mean(axis=0)
    r = {g: p[four == g].mean() for g in range(4)}
    expected = [v for g in range(4) for v in (r[g] - p.mean(), p.mean() - r[g])]
    np.testing.assert_allclose(c, np.array(expected) - bound / 2)


def test_neyman_pearson_values():
    X, y, _, rng = _data(4)
    x = rng.standard_normal(X.shape[1])
    pb = neyman_pearson_problem(X, y, max_fpr=0.2)
    np.testing.assert_allclose(pb.objective_value(x, slice(None)), np.mean(expit(-X[y == 1] @ x)))
    c = pb.constraints(x, slice(None))[0].mean()
    np.testing.assert_allclose(c, np.mean(expit(X[y == 0] @ x)) - 0.2)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_derivatives_and_curvature_bound(name):
    loss = LOSSES[name]()
    m = np.linspace(-30, 30, 2001)
    fd = (loss.value(m + 1e-6) - loss.value(m - 1e-6)) / 2e-6
    np.testing.assert_allclose(loss.derivative(m), fd, rtol=1e-5, atol=1e-8)
    second = np.gradient(loss.derivative(m), m)
    assert np.max(np.abs(second)) <= loss.curvature * 1.001
    fd2 = (loss.derivative(m + 1e-6) - loss.derivative(m - 1e-6)) / 2e-6
    np.testing.assert_allclose(loss.second_derivative(m), fd2, rtol=1e-5, atol=1e-8)
    assert np.all(np.isfinite(loss.value(np.array([-1e4, 1e4]))))


def test_truncated_logistic_is_the_papers_formula():
    m = np.linspace(-5, 5, 11)
    alpha = 2.0
    expected = alpha * np.log(1 + np.log(1 + np.exp(-m)) / alpha)
    np.testing.assert_allclose(TruncatedLogistic(alpha).value(m), expected)


def test_smoothness_bound_dominates_the_curvature():
    rng = np.random.default_rng(5)
    for pb in _problems(False):
        L0, LJ = pb.smoothness
        for _ in range(5):
            x = rng.standard_normal(pb.n_params)
            v = rng.standard_normal(pb.n_params)
            v /= np.linalg.norm(v)
            hv = (pb.objective(x + 1e-5 * v, slice(None)) - pb.objective(x, slice(None))) / 1e-5
            assert np.linalg.norm(hv) <= L0 * 1.01

            def pen(u):
                C, vjp = pb.constraints(u, slice(None))
                return vjp(np.broadcast_to(C.mean(0) / C.shape[0], C.shape))

            hp = (pen(x + 1e-5 * v) - pen(x)) / 1e-5
            assert np.linalg.norm(hp) <= LJ * 1.01


def _column_sum_bound(pb):
    """The penalty's bound taken column by column: sum_k |J_k|^2 + sum_k cmax_k |hess c_k|."""
    from sklearn_ialm.problems.losses import SIGMOID_CURVATURE

    _, lam_con, hess, _ = pb._spectral_bounds()
    mean_sq, mean_abs = pb._weight_means()
    cmax = mean_abs + np.abs(pb.offset)
    return lam_con * np.sum(mean_sq) / 16 + np.sum(cmax * SIGMOID_CURVATURE * hess)


def _penalty_curvature(pb, x, h=1e-6):
    """The largest eigenvalue of the Hessian of |c(x)|^2 / 2 at x, by finite differences of
    its gradient J^T c (offsets included)."""

    def grad(u):
        C, vjp = pb.constraints(u, slice(None))
        c = C.mean(0) + pb.offset
        return vjp(np.broadcast_to(c / C.shape[0], C.shape))

    H = np.column_stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(len(x))])
    return np.max(np.abs(np.linalg.eigvalsh((H + H.T) / 2)))


def test_penalty_bound_of_many_groups_does_not_add_up_every_group():
    from sklearn_ialm.problems.losses import SIGMOID_CURVATURE

    # 20 equal groups on rows of their own, a band of two constraints each (2k constraints
    # with a free level), each group a column of X.
    rng = np.random.default_rng(3)
    n, k = 2000, 20
    groups = np.repeat(np.arange(k), n // k)
    X = np.column_stack([rng.standard_normal((n, 3)), np.eye(k)[groups]])
    y = (X[:, 0] + 0.2 * (groups % 4) + rng.logistic(size=n) > 0.5).astype(int)
    pb = fairness_problem(
        X, y, X, groups, bound=0.1, constraint="demographic_parity", fit_intercept=True,
        loss="logistic",
    )  # fmt: skip
    assert pb.n_constraints == 2 * k
    # |J|^2 <= lambda_S |W|^2 / (16 n). Each group's rate is compared with the overall rate:
    # W_ik = +-(k [i in g] - 1) in its group's two columns, so W^T W / n has the largest
    # eigenvalue 2 k (on a pair's (1, -1)), the columns' mean W_k^2 (the column sum) add up
    # to 2 k (k - 1), and Schur's test (column means of |W| 2 (k - 1) / k, row sums of |W|
    # 4 (k - 1)) gives 8 (k - 1)^2 / k, between the two.
    W = pb.W
    assert np.linalg.eigvalsh(W.T @ W / n)[-1] == pytest.approx(2 * k)
    assert np.sum(pb._weight_means()[0]) == pytest.approx(2 * k * (k - 1))
    assert pb._weight_norm_bound() == pytest.approx(8 * (k - 1) ** 2 / k)
    # The second-derivative term: one Gram of the rows weighted by |W| cmax.
    A = np.column_stack([X, np.ones(n)])
    cmax = np.abs(pb.W).mean(axis=0) + np.abs(pb.offset)
    weights = np.abs(pb.W) @ cmax
    top = np.linalg.eigvalsh(A.T @ (weights[:, None] * A) / n)[-1]
    _, lam_con, _, joint = pb._spectral_bounds()
    assert joint == pytest.approx(top, rel=1e-6)  # (the sweep's Gram matrices in float32)
    bound = pb.smoothness[1]
    assert bound == pytest.approx(
        lam_con * 8 * (k - 1) ** 2 / k / 16 + SIGMOID_CURVATURE * top, rel=1e-6
    )
    assert bound < _column_sum_bound(pb) / 2
    # Still a bound: the penalty's curvature stays under it, at points where the scores
    # spread little and much (sigmoid'' is largest at |score| about 1.3).
    for scale in (0.3, 1.0, 3.0):
        x = scale * rng.standard_normal(pb.n_params)
        assert _penalty_curvature(pb, x) <= bound


def test_penalty_bound_of_a_gap_between_two_groups_is_the_column_sum():
    # The gap's two constraints read the same rows with opposite signs: jointly nothing is
    # gained, and the bound (so the step, and the fit) stays the column sum it always was.
    X, y, groups, _ = _data(n=400)
    two = np.minimum(groups, 1)
    pb = fairness_problem(X, y, X, two, bound=0.1, constraint="demographic_parity")
    assert pb.n_constraints == 2
    assert pb.smoothness[1] == _column_sum_bound(pb)


def test_empty_protected_group_is_an_error():
    X, y, groups, _ = _data()
    with pytest.raises(ValueError, match="group 7"):
        fairness_problem(X, y, X, groups, bound=0.1, protected=[7])


def test_training_matrix_is_shared_not_copied_and_memmap_works(tmp_path):
    from sklearn_ialm.solver import stoc_ialm

    X, y, groups, _ = _data(6, n=200)
    Xs = sp.csr_matrix(X)
    for A in (X, Xs):
        np_pb = neyman_pearson_problem(A, y, max_fpr=0.3)
        assert np_pb.A_obj.A is A and np_pb.A_con.A is A
        fair_pb = fairness_problem(A, y, A, groups, bound=0.1)
        assert fair_pb.A_obj.A is A and fair_pb.A_con.A is A
    path = tmp_path / "X.dat"
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    ro = np.memmap(path, dtype=np.float64, mode="r", shape=X.shape)
    r_mem = stoc_ialm(neyman_pearson_problem(X, y, max_fpr=0.3), random_state=0, max_passes=5)
    r_map = stoc_ialm(neyman_pearson_problem(ro, y, max_fpr=0.3), random_state=0, max_passes=5)
    np.testing.assert_array_equal(r_mem.x, r_map.x)


@pytest.mark.parametrize("sparse", [False, True])
def test_full_evaluation_matches_the_generic_oracles(sparse):
    # The fused all-rows evaluation (one product for objective and constraints) against the
    # generic one built from the per-row oracles.
    from sklearn_ialm.solver.problem import Problem

    rng = np.random.default_rng(7)
    for pb in _problems(sparse):
        x = 0.3 * rng.standard_normal(pb.n_params)
        fused = pb.full_evaluation(x)
        generic = Problem.full_evaluation(pb, x, None, (slice(None), slice(None)))
        np.testing.assert_allclose(fused[0], generic[0], rtol=1e-12)
        np.testing.assert_allclose(fused[1], generic[1], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(fused[2], generic[2], rtol=1e-10, atol=1e-14)
        v = rng.standard_normal(pb.n_constraints)
        np.testing.assert_allclose(fused[3](v), generic[3](v), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
def test_null_gradient_is_the_full_evaluations_at_zero(sparse):
    # The estimators scale their stop test by the gradient at x = 0, now read in one
    # backward product: it must be the full evaluation's there, and the objective's slope.
    for pb in _problems(sparse) + [_subset_problem(sparse)]:
        zero = np.zeros(pb.n_params)
        got = pb.null_gradient()
        np.testing.assert_allclose(got, pb.full_evaluation(zero)[1], rtol=1e-12, atol=1e-15)
        slope = _fd_grad(lambda x, pb=pb: pb.full_evaluation(x)[0], zero)
        np.testing.assert_allclose(got, slope, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_row_subset_with_repeated_rows_is_the_copied_rows(sparse):
    # A constraint row list may name a row several times (the estimators' balanced lists
    # repeat small groups' rows): every oracle must read it as that many rows, as the same
    # problem on the rows copied out does. The all-rows J^T once kept one copy of each.
    from sklearn_ialm.solver.problem import Problem

    X, y, groups, rng = _data(n=60)
    Xs = sp.csr_matrix(X) if sparse else X
    rows = np.r_[np.arange(60), np.repeat(np.flatnonzero(groups == 0), 3)]
    W = np.column_stack([groups[rows] == 0, groups[rows] == 1]).astype(float)
    W /= W.mean(axis=0)
    b = np.where(y == 1, 1.0, -1.0)
    kw = dict(fit_intercept=True, feature_center=rng.standard_normal(X.shape[1]))
    subset = LinearProblem(
        Xs, b, LOSSES["logistic"](), Xs, W, np.zeros(2), rows_constraint=rows, **kw
    )
    copied = LinearProblem(Xs, b, LOSSES["logistic"](), Xs[rows], W, np.zeros(2), **kw)
    x = 0.3 * rng.standard_normal(subset.n_params)
    v = rng.standard_normal(2)
    truth = copied.full_evaluation(x)
    generic = Problem.full_evaluation(subset, x, None, (slice(None), slice(None)))
    for ev in (subset.full_evaluation(x), generic):
        np.testing.assert_allclose(ev[2], truth[2], rtol=1e-12)
        np.testing.assert_allclose(ev[3](v), truth[3](v), rtol=1e-10, atol=1e-14)


def test_smoothness_bound_on_a_row_subset_of_large_data():
    # Above 50000 rows the power iterations run on a random subset of rows: the bound stays
    # within a few per cent of the one computed on every row.
    rng = np.random.default_rng(9)
    X = rng.standard_normal((60_000, 8)) * np.linspace(0.5, 2.0, 8)
    y = (X[:, 0] > 0).astype(int)
    pb = neyman_pearson_problem(X, y, max_fpr=0.2, fit_intercept=True)
    full = LinearProblem._top_eigenvalue(pb, pb.A_obj.full, pb.u, rng, max_rows=10**9)
    sub = LinearProblem._top_eigenvalue(pb, pb.A_obj.full, pb.u, rng)
    assert sub == pytest.approx(full, rel=0.05)


@pytest.mark.parametrize("sparse", [False, True])
def test_scaled_and_centred_problem_is_the_same_linear_model(sparse):
    """coef/point are inverse maps, and the score is a.coef + intercept on the raw data."""
    X, y, _, rng = _data(4)
    Xs = sp.csr_matrix(X) if sparse else X
    scale, center = rng.uniform(0.5, 3.0, X.shape[1]), rng.standard_normal(X.shape[1])
    pb = LinearProblem(
        Xs, np.where(y == 1, 1.0, -1.0), LOSSES["logistic"](), Xs, np.ones((len(y), 1)),
        np.array([-0.5]), fit_intercept=True, feature_scale=scale, feature_center=center,
    )  # fmt: skip
    x = rng.standard_normal(pb.n_params)
    coef, intercept = pb.coef(x)
    np.testing.assert_allclose(pb.point(coef, intercept), x, rtol=1e-12, atol=1e-12)
    C, _ = pb.constraints(x, slice(None))
    np.testing.assert_allclose(C[:, 0], expit(X @ coef + intercept) - 0.5, rtol=1e-12)
    with pytest.raises(ValueError, match="feature_center needs fit_intercept"):
        LinearProblem(X, y, LOSSES["logistic"](), X, np.ones((len(y), 1)), [0.0],
                      feature_center=center)  # fmt: skip


def _subset_problem(sparse):
    """Constraint rows naming some rows three times, centred features (see
    :func:`test_row_subset_with_repeated_rows_is_the_copied_rows`)."""
    X, y, groups, rng = _data(n=60)
    Xs = sp.csr_matrix(X) if sparse else X
    rows = np.r_[np.arange(60), np.repeat(np.flatnonzero(groups == 0), 3)]
    W = np.column_stack([groups[rows] == 0, groups[rows] == 1]).astype(float)
    W /= W.mean(axis=0)
    return LinearProblem(
        Xs, np.where(y == 1, 1.0, -1.0), LOSSES["logistic"](), Xs, W, np.zeros(2),
        rows_constraint=rows, fit_intercept=True, feature_center=rng.standard_normal(X.shape[1]),
    )  # fmt: skip


def _fd_hessian(pb, x, mu, h=1e-5):
    """Central differences of ``grad g + J^T mu`` from ``full_evaluation``."""

    def grad(u):
        _, g, _, jac_t = pb.full_evaluation(u)
        return g + jac_t(mu)

    return np.array([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(len(x))]).T


@pytest.mark.parametrize("sparse", [False, True])
def test_second_order_evaluation_is_the_derivative_of_the_full_evaluation(sparse):
    """The finish's Newton oracle: its values are ``full_evaluation``'s, ``J`` is the vjp's
    matrix, and ``hessian(mu)`` (one weighted Gram matrix) is the central difference of
    ``grad g + J^T mu`` (an independent truth), for every loss, scale, centre and row
    subset."""
    rng = np.random.default_rng(11)
    for pb in [*_problems(sparse), _subset_problem(sparse)]:
        for name in sorted(LOSSES):
            pb.loss = LOSSES[name]()
            x = 0.3 * rng.standard_normal(pb.n_params)
            f, g, c, J, hessian = pb.second_order_evaluation(x)
            f0, g0, c0, jac_t = pb.full_evaluation(x)
            np.testing.assert_allclose(f, f0, rtol=1e-12)
            np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(c, c0, rtol=1e-12, atol=1e-15)
            for k, e in enumerate(np.eye(pb.n_constraints)):
                np.testing.assert_allclose(J[k], jac_t(e), rtol=1e-10, atol=1e-14)
            mu = rng.standard_normal(pb.n_constraints)
            H = hessian(mu)
            np.testing.assert_allclose(H, _fd_hessian(pb, x, mu), rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-15)


def test_hessian_of_many_parameters_is_an_operator_of_the_same_products(monkeypatch):
    """Above ``_GRAM_MAX_PARAMS`` parameters the Hessian is a LinearOperator: its products
    are the central differences of the gradient along the same directions."""
    from scipy.sparse.linalg import LinearOperator

    from sklearn_ialm.problems import _gram

    rng = np.random.default_rng(12)
    problems = [*_problems(True), _subset_problem(True)]
    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    for pb in problems:
        x = 0.3 * rng.standard_normal(pb.n_params)
        mu = rng.standard_normal(pb.n_constraints)
        H = pb.second_order_evaluation(x)[4](mu)
        assert isinstance(H, LinearOperator)
        # The rows' scores come from the evaluation itself: the curvature reads no row more,
        # each product is a pass.
        assert pb.curvature_passes == 0.0
        V = rng.standard_normal((pb.n_params, 3))
        np.testing.assert_allclose(
            np.column_stack([H @ v for v in V.T]), _fd_hessian(pb, x, mu) @ V,
            rtol=1e-5, atol=1e-7,
        )  # fmt: skip


@pytest.mark.parametrize("many", [False, True])
def test_dead_features_get_no_newton_terms(monkeypatch, many):
    """A constant column beside the intercept, marked dead: its weight has no gradient,
    Jacobian or curvature in the Newton oracle (a unit row and column of the Hessian, matrix
    or operator), and every other entry is the unmarked problem's."""
    from sklearn_ialm.problems import _gram

    X, y, groups, rng = _data(n=200)
    Xc = np.column_stack([X, np.full(len(X), 0.7)])
    center = np.r_[np.zeros(X.shape[1]), Xc[:, -1].mean()]
    kw = dict(fit_intercept=True, feature_scale=np.full(Xc.shape[1], 2.0), feature_center=center)
    W = rng.uniform(-1.0, 1.0, (len(y), 2))
    args = (Xc, np.where(y == 1, 1.0, -1.0), LOSSES["logistic"](), Xc, W, np.zeros(2))
    plain = LinearProblem(*args, **kw)
    dead = LinearProblem(*args, dead_features=np.r_[np.zeros(X.shape[1], bool), True], **kw)
    if many:
        monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    x, mu = 0.3 * rng.standard_normal(plain.n_params), rng.uniform(0.0, 1.0, 2)
    _, g0, _, J0, hess0 = plain.second_order_evaluation(x)
    _, g, _, J, hess = dead.second_order_evaluation(x)
    j, keep = X.shape[1], np.r_[np.arange(X.shape[1]), X.shape[1] + 1]
    assert g[j] == 0.0 and not np.any(J[:, j])
    np.testing.assert_array_equal(g[keep], g0[keep])
    np.testing.assert_array_equal(J[:, keep], J0[:, keep])
    eye = np.eye(plain.n_params)
    H0, H = (np.column_stack([h(mu) @ e for e in eye]) for h in (hess0, hess))
    np.testing.assert_array_equal(H[:, j], eye[j])
    np.testing.assert_array_equal(H[j], eye[j])
    np.testing.assert_allclose(H[np.ix_(keep, keep)], H0[np.ix_(keep, keep)], rtol=1e-12)


@pytest.mark.parametrize("factor", [1e200, 1e-300])
@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_in_the_solver_units_whatever_the_units_of_the_rows(factor, sparse):
    """Rows times 1e200 or 1e-300 with the scale times the same factor: the same problem in
    ``x``, so the same Hessian (it overflowed, or was 0 * inf, in raw units), with and
    without a centre."""
    X, y, groups, rng = _data(n=300)
    W = rng.uniform(-1.0, 1.0, (len(y), 2))
    scale, center = rng.uniform(0.5, 2.0, X.shape[1]), np.r_[0.4, np.zeros(X.shape[1] - 1)]
    x, mu = 0.3 * rng.standard_normal(X.shape[1] + 1), rng.uniform(0.0, 1.0, 2)
    out = []
    for f in (1.0, factor):
        A = sp.csr_matrix(X * f) if sparse else X * f
        for c in (None, center * f):
            pb = LinearProblem(
                A, np.where(y == 1, 1.0, -1.0), LOSSES["logistic"](), A, W, np.zeros(2),
                fit_intercept=True, feature_scale=scale * f, feature_center=c,
            )  # fmt: skip
            out.append(pb.second_order_evaluation(x)[4](mu))
    # (float32 products where no centre is subtracted: seven digits.)
    np.testing.assert_allclose(out[2], out[0], rtol=1e-5, atol=1e-7 * np.abs(out[0]).max())
    np.testing.assert_allclose(out[3], out[1], rtol=1e-9, atol=1e-12 * np.abs(out[1]).max())


@pytest.mark.parametrize("kind", ["fairness", "neyman_pearson"])
def test_hessian_of_many_rows_reads_a_fixed_sample_of_them(monkeypatch, kind):
    """Past ``_hessian_rows`` rows the Gram matrix reads a fixed random sample (weights
    scaled up): within 15 % of the Gram matrix of every row, the same on every
    call, and counted as the rows it reads: the sample alone where the problem's rows are
    the matrix's, else the scores of every row too (Neyman-Pearson's row subsets); every
    row twice (scores, then the Gram matrix) without a sample."""
    from sklearn_ialm.problems import _curvature

    rng = np.random.default_rng(13)
    n = 30_000
    X = rng.standard_normal((n, 20))  # (rows of 16 entries or fewer: all read to 4 * limit)
    y = (X[:, 0] + rng.logistic(size=n) > 0).astype(int)
    if kind == "fairness":
        groups = (X[:, 1] > 0.5).astype(int)
        pb = fairness_problem(X, y, X, groups, bound=0.02, loss="logistic", fit_intercept=True)
    else:
        pb = neyman_pearson_problem(X, y, max_fpr=0.1, fit_intercept=True)
    x = 0.5 * rng.standard_normal(pb.n_params)
    mu = np.abs(rng.standard_normal(pb.n_constraints))
    hessian = pb.second_order_evaluation(x)[4]
    sampled = hessian(mu)
    np.testing.assert_array_equal(hessian(mu), sampled)
    limit = _curvature._hessian_rows(pb.n_params, n)
    drawn = len(pb._hessian_sample(pb.A_obj.A)[0])
    assert limit < n and drawn == pytest.approx(limit, rel=0.05)
    scores = 0 if kind == "fairness" else n
    assert pb.curvature_passes == pytest.approx((drawn + scores) / n)
    monkeypatch.setattr(_curvature, "_HESSIAN_MIN_ROWS", n)
    every = hessian(mu)
    assert pb.curvature_passes == 2.0
    np.testing.assert_allclose(every, _fd_hessian(pb, x, mu), rtol=1e-5, atol=1e-7)
    assert np.linalg.norm(sampled - every, 2) <= 0.15 * np.linalg.norm(every, 2)


@pytest.mark.parametrize("compiled", [False, True])
def test_weighted_gram_of_csr_rows_is_the_dense_product(compiled):
    """The finish's weighted Gram matrix of CSR rows (compiled: each row's pairs of
    non-zeros once) against the dense product, with a column named twice in a row (a
    non-canonical CSR matrix, whose two entries add up)."""
    from sklearn_ialm.problems._gram import _weighted_gram

    X, _, _, rng = _data(n=50)
    A = sp.csr_matrix(X)
    # Row 0 gets its first stored entry again, as a second entry of the same column.
    data = np.r_[A.data[:1], A.data]
    indices = np.r_[A.indices[:1], A.indices]
    indptr = np.r_[0, A.indptr[1:] + 1]
    B = sp.csr_matrix((data, indices, indptr), shape=A.shape)
    dense = B.toarray()
    assert not B.has_canonical_format and dense[0, indices[0]] == 2 * A.data[0]
    r = rng.standard_normal(50)
    G, s, t = _weighted_gram(B, r, compiled, low=False)
    np.testing.assert_allclose(G, dense.T @ (r[:, None] * dense), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s, r @ dense, rtol=1e-12, atol=1e-14)
    assert t == pytest.approx(r.sum())
