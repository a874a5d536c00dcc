"""The compiled PStorm block (numba, optional) against the numpy path it replaces."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import LinearProblem, _kernels
from sklearn_ialm.problems.losses import Logistic, SigmoidLoss, TruncatedLogistic
from sklearn_ialm.solver import L1, Box
from sklearn_ialm.solver.prox import Ridge
from sklearn_ialm.solver.pstorm import AugmentedLagrangianEstimator, Counter, pstorm

needs_numba = pytest.mark.skipif(not _kernels.available(), reason="numba is not installed")


def _problem(sparse, intercept, m, loss=None, h=None, scale=1.0, center=False, dtype=float):
    rng = np.random.default_rng(3)
    n, nf = 120, 7
    X = rng.standard_normal((n, nf))
    X[rng.random((n, nf)) < 0.4] = 0.0
    X = X.astype(dtype)
    if sparse:
        X = sp.csr_matrix(X)
    b = np.where(rng.random(n) < 0.5, 1.0, -1.0)[: n // 2 if m == 3 else n]
    group = rng.random(n) < 0.3
    # Two inequalities (both sides of a parity gap) and, with m == 3, one equality.
    cols = [group / group.mean() - ~group / (~group).mean()]
    cols.append(-cols[0])
    if m == 3:
        cols.append(np.ones(n))
    W = np.column_stack(cols[:m]) if m else np.zeros((n, 0))
    offset = np.array([-0.05, -0.05, -0.5][:m])
    rows_objective = np.arange(0, n, 2) if m == 3 else None
    n_obj = n if rows_objective is None else len(rows_objective)
    return LinearProblem(
        X,
        b,
        loss or Logistic(),
        X,
        W,
        offset,
        objective_weights=rng.uniform(0.5, 1.5, n_obj),
        inequality=[True, True, False][:m],
        fit_intercept=intercept,
        h=h,
        feature_scale=rng.uniform(0.5, 2.0, nf) if scale == "vector" else scale,
        feature_center=rng.standard_normal(nf) if center else None,
        rows_objective=rows_objective,
    )


def _run(pb, estimator, use_kernel, n_iter=37, eval_every=10, budget=10**9):
    """PStorm from a fixed point for ``n_iter`` iterations (the check grows the batch once)."""
    pb.use_kernel = use_kernel
    est = AugmentedLagrangianEstimator(pb, estimator)
    start = np.random.default_rng(1)
    z = start.standard_normal(est.dim) * 0.3
    z[est.p :] = np.abs(z[est.p :])
    d = start.standard_normal(est.dim)
    y = np.linspace(0.2, 0.5, pb.n_constraints)
    counter = Counter()
    checks = []

    def check(z, d, t, batch_size):
        checks.append(t)
        return t >= n_iter, (batch_size * 2 if t == 20 else batch_size), z, d

    out = pstorm(
        est, z, d, y, 3.0, eta=0.05, eta_slack=0.1, delta=0.1, batch_size=6,
        rng=np.random.default_rng(0), counter=counter, check=check,
        eval_every=eval_every, budget=budget,
    )  # fmt: skip
    return out, counter, checks


CASES = [
    dict(sparse=False, intercept=True, m=2),
    dict(sparse=True, intercept=True, m=2),
    dict(sparse=False, intercept=False, m=2),
    dict(sparse=True, intercept=False, m=3),
    dict(sparse=False, intercept=True, m=0),
    dict(sparse=True, intercept=True, m=3, scale="vector", center=True),
    dict(sparse=False, intercept=True, m=2, scale=2.5, loss=TruncatedLogistic(1.5), h=L1(0.3)),
    dict(sparse=False, intercept=False, m=3, loss=SigmoidLoss(), h=Box(-0.2, 0.4)),
    # The estimators' L2 penalty, intercept free.
    dict(sparse=True, intercept=True, m=2, h=Ridge(0.7, mask=[True] * 7 + [False])),
    dict(sparse=False, intercept=True, m=2, dtype=np.float32),
    dict(sparse=True, intercept=True, m=2, dtype=np.float32),
]


@needs_numba
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("estimator", ["ustat", "independent"])
def test_kernel_matches_numpy_path(case, estimator):
    """Same seed, same draws: the same iterates, counts and checks on both paths."""
    results = [_run(_problem(**case), estimator, use) for use in (False, True)]
    (z0, d0, t0, stop0, b0), c0, checks0 = results[0]
    (z1, d1, t1, stop1, b1), c1, checks1 = results[1]
    assert (t0, stop0, b0, checks0) == (t1, stop1, b1, checks1) == (40, True, 12, [10, 20, 30, 40])
    assert c0 == c1
    scale = 1.0 + np.abs(z0).max()
    np.testing.assert_allclose(z1, z0, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(d1, d0, rtol=0, atol=1e-12 * (1.0 + np.abs(d0).max()))


@needs_numba
@pytest.mark.parametrize("case", CASES[:4])
def test_kernel_matches_numpy_path_with_stratified_batches(case):
    """Constraint batches drawn by stratum (four strata of 8 to 70 rows): the compiled
    block's weighted U-statistic gives the numpy path's iterates and counts."""
    results = []
    for use in (False, True):
        pb = _problem(**case)
        strata = np.repeat([0, 1, 2, 3], [70, 30, 12, 8])
        pb.stratify_constraints(np.random.default_rng(5).permutation(strata))
        results.append(_run(pb, "ustat", use))
    (z0, d0, t0, stop0, b0), c0, checks0 = results[0]
    (z1, d1, t1, stop1, b1), c1, checks1 = results[1]
    assert (t0, stop0, b0, checks0) == (t1, stop1, b1, checks1)
    assert c0 == c1
    if case["m"]:
        # A batch of 6 draws holds two rows of each of the 4 strata (8 rows), of 12 three.
        assert c0.constraint_draws == 20 * 8 + 20 * 12
    np.testing.assert_allclose(z1, z0, rtol=0, atol=1e-12 * (1.0 + np.abs(z0).max()))
    np.testing.assert_allclose(d1, d0, rtol=0, atol=1e-12 * (1.0 + np.abs(d0).max()))


@needs_numba
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_stops_at_the_budget_like_the_numpy_path(sparse):
    """A budget that runs out between two checks ends the block after the same iteration:
    the last one that fits in it."""
    for budget in (1, 500, 1000.5, 1234):
        runs = [_run(_problem(sparse, True, 2), "ustat", use, budget=budget) for use in (0, 1)]
        (z0, _, t0, stop0, b0), c0, _ = runs[0]
        (z1, _, t1, stop1, _), c1, _ = runs[1]
        assert (t0, stop0, c0) == (t1, stop1, c1)
        # An iteration evaluates b objective and b constraint rows at two points.
        assert not stop0 and c0.evaluations <= budget < c0.evaluations + 2 * b0 * 2
        np.testing.assert_allclose(z1, z0, rtol=0, atol=1e-12 * (1 + np.abs(z0).max()))


def test_numpy_path_when_the_kernel_does_not_apply(monkeypatch):
    """No numba, an unknown loss or prox, or use_kernel=False: no runner (numpy path)."""
    est = AugmentedLagrangianEstimator(_problem(False, True, 2))
    monkeypatch.setattr(_kernels, "numba", None)
    assert est.problem.pstorm_block(est) is None
    monkeypatch.undo()

    class MyLoss(Logistic):
        pass

    for pb in (
        _problem(False, True, 2, loss=MyLoss()),
        _problem(False, True, 2, h=type("MyL1", (L1,), {})(0.1)),
    ):
        assert pb.pstorm_block(AugmentedLagrangianEstimator(pb)) is None
    pb = _problem(False, True, 2)
    pb.use_kernel = False
    assert pb.pstorm_block(AugmentedLagrangianEstimator(pb)) is None


@needs_numba
def test_kernel_source_reads_in_place_or_gathers():
    """float64 data is passed as is; other dtypes are gathered to the rows asked for."""
    idx = np.array([[3, 3, 0], [5, 1, 2]])
    for sparse in (False, True):
        pb = _problem(sparse, True, 2)
        src = pb.A_obj.kernel_source(idx)
        assert (src[1] is pb.A_obj.A.data) if sparse else (src[0] is pb.A_obj.A)
        np.testing.assert_array_equal(src[5], idx)
        pb32 = _problem(sparse, True, 2, dtype=np.float32)
        src = pb32.A_obj.kernel_source(idx)
        A = pb32.A_obj.A
        rows = A[idx.ravel()].toarray() if sparse else A[idx.ravel()]
        if sparse:
            got = sp.csr_matrix((src[1], src[2], src[3]), shape=(len(src[3]) - 1, 7)).toarray()
        else:
            got = src[0]
        np.testing.assert_array_equal(got[src[5].ravel()], rows)


FULL_CASES = CASES + [
    dict(sparse=False, intercept=True, m=2, separate=True),
    dict(sparse=True, intercept=False, m=3, separate=True, scale="vector"),
    # Unit weights: the kernel sums the logistic loss's log1p terms as one log of a product.
    dict(sparse=False, intercept=True, m=3, unit_weights=True),
]


@needs_numba
@pytest.mark.parametrize("case", FULL_CASES)
def test_compiled_full_evaluation_matches_numpy_path(case):
    """Value, gradient, constraints and J^T (all m columns) agree with the numpy path."""
    case = dict(case)
    separate = case.pop("separate", False)
    unit_weights = case.pop("unit_weights", False)
    pb = _problem(**case)
    if unit_weights:
        pb = pb.with_objective_weights(np.ones(pb.n_objective_samples))
    if separate:
        # Constraint rows from a different matrix (a row-permuted copy of the same data).
        A = pb.A_con.A
        pb.A_con = type(pb.A_con)(A[::-1].copy())
    x = np.random.default_rng(5).standard_normal(pb.n_params) * 0.5
    # Compiled on dense float64 data in memory; sparse data takes the numpy path.
    in_place = pb.A_obj.in_place() and pb.A_con.in_place() and not pb.A_obj.sparse
    assert (pb._full_evaluation_compiled(x) is not None) == in_place
    results = []
    for use in (False, True):
        pb.use_kernel = use
        f0, grad, c, jac_t = pb.full_evaluation(x)
        jac = np.array([jac_t(e) for e in np.eye(pb.n_constraints)])
        results.append((f0, grad, c, jac))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


@needs_numba
@pytest.mark.parametrize("case", FULL_CASES[:6])
def test_compiled_smoothness_bound_matches_numpy_path(case):
    """The power iterations' products (one compiled pass each) give the same bound."""
    case = {k: v for k, v in case.items() if k != "separate"}
    pb = _problem(**case)
    bounds = []
    for use in (False, True):
        pb.use_kernel = use
        bounds.append(pb.smoothness_bound())
    np.testing.assert_allclose(bounds[1], bounds[0], rtol=1e-10)


@needs_numba
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", ["fair", "fair-sparse", "neyman-pearson"])
def test_estimator_gives_the_same_model_on_either_path(kind, monkeypatch):
    """A whole fit: same random_state, same model (to rounding) with or without the kernel."""
    from sklearn.datasets import make_classification

    from sklearn_ialm.estimators import FairLogisticClassifier, NeymanPearsonClassifier

    X, y = make_classification(n_samples=600, n_features=8, random_state=0)
    group = (X[:, 0] > 0.3).astype(int)
    X = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)) if kind == "fair-sparse" else X
    models = []
    for use in (False, True):
        monkeypatch.setattr(LinearProblem, "use_kernel", use)
        if kind == "neyman-pearson":
            clf = NeymanPearsonClassifier(random_state=0, max_passes=20).fit(X, y)
        else:
            clf = FairLogisticClassifier(
                constraint="demographic_parity", bound=0.02, random_state=0
            ).fit(X, y, sensitive_features=group)
        models.append((clf.coef_.ravel(), clf.intercept_, clf.n_iter_, clf.n_data_passes_))
    assert models[0][2:] == models[1][2:]
    np.testing.assert_allclose(models[1][0], models[0][0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(models[1][1], models[0][1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weights", ["classes", "sample"])
def test_gram_sums_equal_the_weighted_products(sparse, weights, monkeypatch):
    """One sum per class of equal weight rows (or per weight column with sample weights)
    gives ``A^T diag(w) A``, ``A^T w`` and ``sum w`` of each weight column, in the solver's
    units, computed here directly on the rows."""
    from sklearn_ialm.problems import _smoothness

    pb = _problem(sparse, True, 3, scale="vector")  # sample weights on the objective rows
    if weights == "classes":
        pb = pb.with_objective_weights(np.ones(60))
    found = []
    classes_of = _smoothness._block_weight_classes
    monkeypatch.setattr(
        _smoothness,
        "_block_weight_classes",
        lambda *a, **k: found.append(classes_of(*a, **k)) or found[-1],
    )
    X = pb.A_obj.A.toarray() if sparse else pb.A_obj.A
    S = X * pb._inv_scale
    rows_o = pb.A_obj.rows
    G, mu, total, estimated = pb._gram_sums()
    absW = np.abs(pb.W)
    cols = [(S[rows_o], pb.u), (S, np.ones(len(S)))]
    cols += [
        (S, absW[:, k]) for k in range(pb.n_constraints) if pb._distinct_weight_columns()[k] == k
    ]
    if pb._joint_weights() is not None:
        # Columns of more than one |W_k|: the rows weighted by |W| cmax, for the joint bound.
        cols.append((S, absW @ pb._joint_weights()))
    assert len(G) == len(cols) and not estimated
    # The rows fall into 2 x 2 classes (objective row or not, in the group or not).
    assert [len(c) if c is not None else None for c in found] == (
        [4] if weights == "classes" else [None]
    )
    # Dense rows are multiplied in float32 (a step size needs no more digits): to 1e-6 of
    # the largest entry.
    rtol = 1e-12 if sparse else 1e-6
    for Gj, mj, tj, (A, w) in zip(G, mu, total, cols, strict=True):
        want = A.T @ (w[:, None] * A)
        np.testing.assert_allclose(Gj, want, rtol=rtol, atol=rtol * np.abs(want).max())
        np.testing.assert_allclose(mj, A.T @ w, rtol=rtol, atol=rtol * np.abs(want).max())
        np.testing.assert_allclose(tj, w.sum(), rtol=1e-12)


def test_signed_columns_rebuild_the_weight_matrix():
    """Columns equal up to sign share one accumulated column; nearly equal ones do not."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    zero = np.zeros(50)
    W = np.column_stack([a, -a, b, a, zero, -b, zero, a + 1e-15])
    cols, pos, sign = _kernels.signed_columns(W)
    np.testing.assert_array_equal(cols, [0, 2, 4, 7])
    np.testing.assert_array_equal(W, W[:, cols[pos]] * sign)


def test_signed_columns_once_per_weight_matrix(monkeypatch):
    """Copies of a problem (the steering's solves) share its W and its signed columns; a new
    W is read afresh, also where it reuses a dead one's address."""
    import copy
    import gc

    calls = []
    real = _kernels.signed_columns
    monkeypatch.setattr(_kernels, "signed_columns", lambda W: calls.append(W) or real(W))
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 3))
    col = np.where(rng.random(40) < 0.4, 1.0, -0.5)
    pb = LinearProblem(X, np.sign(col), Logistic(), X, np.column_stack([col, -col]), [0.0, 0.0])
    copies = [copy.copy(pb) for _ in range(3)]
    for p in copies + [pb]:
        cols, pos, sign = p._signed_columns()
    assert len(calls) == 1
    np.testing.assert_array_equal(pb.W, pb.W[:, cols[pos]] * sign)
    for _ in range(5):  # new matrices, whose ids may be those of the dead ones
        calls.clear()
        pb.W = np.column_stack([col, col, 2 * col])
        gc.collect()
        cols, pos, sign = pb._signed_columns()
        assert len(calls) == 1
        np.testing.assert_array_equal(cols, [0, 2])
        np.testing.assert_array_equal(pb.W, pb.W[:, cols[pos]] * sign)


def _wide_problem(m, h):
    """CSR data with many more columns than a minibatch reads (60 columns, 3 non-zeros a
    row), two centred columns, per-column scales and an intercept."""
    rng = np.random.default_rng(7)
    n, nf = 200, 60
    cols = rng.integers(nf, size=(n, 3))
    X = sp.csr_matrix(
        (rng.standard_normal(3 * n), cols.ravel(), np.arange(0, 3 * n + 1, 3)), shape=(n, nf)
    )
    X.sum_duplicates()
    b = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    group = rng.random(n) < 0.3
    col = group / group.mean() - ~group / (~group).mean()
    W = np.column_stack([col, -col])[:, :m]
    center = np.zeros(nf)
    center[[4, 31]] = [0.3, -1.2]
    return LinearProblem(
        X, b, Logistic(), X, W, np.full(m, -0.05), inequality=[True] * m,
        fit_intercept=True, h=h, feature_scale=rng.uniform(0.5, 2.0, nf),
        feature_center=center, objective_weights=rng.uniform(0.5, 1.5, n),
    )  # fmt: skip


WIDE_PROXES = {
    "none": None,
    "ridge": Ridge(0.7, mask=[True] * 60 + [False]),
    # Two ridge weights: the columns of the second one stay on the eager path.
    "two ridges": Ridge(0.7, mask=[True] * 40 + [False] * 21),
    # Thresholded columns are eager, the others (lam = 0) lazy.
    "partial L1": L1(0.3, mask=[True] * 10 + [False] * 51),
}


@needs_numba
@pytest.mark.parametrize("prox", list(WIDE_PROXES))
@pytest.mark.parametrize("m", [0, 2])
@pytest.mark.parametrize("estimator", ["ustat", "independent"])
def test_lazy_csr_block_gives_the_eager_iterates(prox, m, estimator, monkeypatch):
    """Coordinates no row of an iteration reads, brought up to date only when read (closed
    form over the skipped iterations), give the iterates of updating every coordinate every
    iteration (the eager kernel, and the numpy path), with the same counts and checks."""
    lazy_calls = []
    block = _kernels.pstorm_block

    def record(z, *args, lazy=None, **kwargs):
        if lazy is not None:
            lazy_calls.append(1)
        return block(z, *args, lazy=lazy, **kwargs)

    monkeypatch.setattr(_kernels, "pstorm_block", record)
    runs = {}
    # "auto" chooses block by block (the batch grows at t = 20).
    paths = [("numpy", False, False), ("eager", True, False), ("auto", True, "auto")]
    for name, use, lazy in paths + [("lazy", True, True)]:
        pb = _wide_problem(m, WIDE_PROXES[prox])
        pb.lazy_updates = lazy
        n_calls = len(lazy_calls)
        runs[name] = _run(pb, estimator, use, n_iter=57)
        if lazy != "auto":
            assert (len(lazy_calls) > n_calls) == lazy
    (z0, d0, *rest0), c0, checks0 = runs["eager"]
    for name in ("numpy", "auto", "lazy"):
        (z1, d1, *rest1), c1, checks1 = runs[name]
        assert (rest1, c1, checks1) == (rest0, c0, checks0)
        np.testing.assert_allclose(z1, z0, rtol=0, atol=1e-12 * (1.0 + np.abs(z0).max()))
        np.testing.assert_allclose(d1, d0, rtol=0, atol=1e-12 * (1.0 + np.abs(d0).max()))


@needs_numba
def test_lazy_plan_keeps_dense_data_and_non_linear_proxes_eager():
    """Dense data, or a prox that is not a ridge shrink on every feature, centred columns
    and the intercept: those coordinates are updated every iteration."""
    pb = _wide_problem(2, Box(-1.0, 1.0))
    est = AugmentedLagrangianEstimator(pb)
    assert _kernels.lazy_plan(60, est.dim, pb.feature_center, *pb._kernel_prox()) is None
    pb = _wide_problem(2, WIDE_PROXES["two ridges"])
    est = AugmentedLagrangianEstimator(pb)
    runs, ridge0 = _kernels.lazy_plan(60, est.dim, pb.feature_center, *pb._kernel_prox())
    assert ridge0 == 0.7
    np.testing.assert_array_equal(runs, [[4, 5], [31, 32], [40, est.dim]])


@pytest.mark.skipif(not _kernels.available(), reason="numba is not installed")
def test_compiled_csr_square_sums_and_column_sums_are_numpys_bit_for_bit(monkeypatch):
    from sklearn_ialm.problems import _curvature

    rng = np.random.default_rng(0)
    A = sp.random(9000, 200, density=0.05, format="csr", random_state=1)
    r = rng.standard_normal(9000)
    compiled = _curvature._weighted_square_sums(A, r)
    for k in (2, 3):  # (numpy sums one column pairwise: the kernel leaves it to numpy)
        Q = rng.standard_normal((9000, k)) * np.exp(5 * rng.standard_normal((9000, 1)))
        assert _kernels.column_sums(Q).tobytes() == Q.sum(axis=0).tobytes()
    monkeypatch.setattr(_kernels, "csr_weighted_square_sums", lambda *args: None)
    assert _curvature._weighted_square_sums(A, r).tobytes() == compiled.tobytes()
