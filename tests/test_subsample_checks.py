"""Stop tests on a subsample of rows (``check_sample``): what they may and may not decide."""

import numpy as np
import pytest

import sklearn_ialm.solver.subsample as subsample
from sklearn_ialm.problems import fairness_problem, neyman_pearson_problem
from sklearn_ialm.solver import slack_residuals, stoc_ialm


def _data(n, seed=0, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    score = X @ rng.normal(0.0, 0.6, d)
    y = (score + rng.logistic(size=n) > 0).astype(int)
    groups = (score + rng.normal(0.0, 1.2 * score.std(), n) > 0).astype(int)
    return X, y, groups


def _np_problem(n=20_000, seed=0):
    X, y, _ = _data(n, seed)
    return neyman_pearson_problem(X, y, max_fpr=0.1, fit_intercept=True, feature_scale="auto")


def _full_residuals(problem, result):
    """The stop test on all rows at the returned point, slack and certifying multiplier."""
    _, grad, c, jac_t = problem.full_evaluation(result.x)
    ineq = np.asarray(problem.inequality, dtype=bool)
    pres, dres, _ = slack_residuals(
        result.x, result.slack, result.multipliers, grad, c, jac_t, problem.h, ineq
    )
    return pres, dres


def test_subsample_below_the_threshold_reads_all_rows():
    pb = _np_problem(n=2_000)
    res = stoc_ialm(pb, random_state=0)
    rows = res.history["check_rows"]
    # Every test reads all rows, but the last: the finish's last evaluation, counted there.
    assert np.all(rows[:-1] == pb.full_evaluation_cost()) and rows[-1] == 0


def test_lying_subsample_never_makes_a_convergence_claim(monkeypatch):
    # A subsample that always says "both residuals are 0 with no doubt": every test then
    # passes on it, and only the confirmation on all rows may decide. With a budget too small
    # to converge, no test on all rows passes, so no convergence may be claimed.
    monkeypatch.setattr(subsample, "_subsample_residuals", lambda *args: (0.0, 0.0, 0.0, 0.0))
    pb = _np_problem()
    res = stoc_ialm(pb, random_state=0, check_sample=200, max_passes=3)
    h = res.history
    full = pb.full_evaluation_cost()
    on_all = h["check_rows"] == full
    assert np.any(~on_all) and np.any(on_all)
    # Every subsample test that passed was followed by its confirmation at the same iteration.
    sub = np.flatnonzero(~on_all)
    assert np.all(on_all[sub[sub + 1 < len(on_all)] + 1])
    refused = on_all & (
        (h["primal_residual"] > res.settings["tol"])
        | (h["dual_residual"] > res.settings["dual_tol"])
    )
    assert refused.sum() >= 1
    assert not res.converged
    # The returned residuals are those of all rows.
    pres, dres = _full_residuals(pb, res)
    assert res.primal_residual == pytest.approx(pres, rel=1e-9, abs=1e-12)
    assert res.dual_residual == pytest.approx(dres, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_convergence_on_a_subsample_holds_on_all_rows(seed):
    # Small noisy subsamples (100 rows a kind, se near tol) on a fairness problem with its
    # slack projection: a converged run's point passes the test on all rows.
    X, y, groups = _data(20_000, seed)
    pb = fairness_problem(X, y, X, groups, bound=0.1, fit_intercept=True, feature_scale="auto")
    res = stoc_ialm(pb, random_state=seed, check_sample=100, max_passes=60)
    assert np.any(res.history["check_rows"] < pb.full_evaluation_cost())
    pres, dres = _full_residuals(pb, res)
    assert res.primal_residual == pytest.approx(pres, rel=1e-9, abs=1e-12)
    assert res.dual_residual == pytest.approx(dres, rel=1e-9, abs=1e-12)
    if res.converged:
        assert pres <= res.settings["tol"] and dres <= res.settings["dual_tol"]


def test_subsample_rows_are_counted_as_stop_tests():
    pb = _np_problem()
    res = stoc_ialm(pb, random_state=0, check_sample=500)
    h = res.history
    n = pb.n_samples
    # Each test's row evaluations: two kinds on a subsample, each row at the test's point and,
    # once a test on all rows gave the control variate's reference, at that point too; a full
    # evaluation's cost otherwise.
    np.testing.assert_allclose(h["check_passes"], np.cumsum(h["check_rows"]) / n)
    assert res.n_check_passes == pytest.approx(h["check_rows"].sum() / n)
    # The run's last test reads no row: it is the finish's last evaluation, counted there.
    assert h["check_rows"][-1] == 0
    reads = h["check_rows"][h["check_rows"] > 0]
    on_subsample = reads[reads < pb.full_evaluation_cost()]
    assert set(on_subsample) <= {k * r for r in range(500, n, 10) for k in (2, 4)}
    # The first test has no reference yet; one after a test on all rows has.
    assert on_subsample[0] == 2 * 500
    full = np.flatnonzero(h["check_rows"] >= pb.full_evaluation_cost())
    later = [c for c in h["check_rows"][full[0] + 1 :] if 0 < c < pb.full_evaluation_cost()]
    assert later and all(c % 4 == 0 and c >= 4 * 500 for c in later)


def test_same_seed_same_model_with_subsample_tests():
    pb = _np_problem()
    r1 = stoc_ialm(pb, random_state=3, check_sample=300)
    r2 = stoc_ialm(pb, random_state=3, check_sample=300)
    np.testing.assert_array_equal(r1.x, r2.x)
    for key in ("dual_residual", "check_rows", "inner_iter"):
        np.testing.assert_array_equal(r1.history[key], r2.history[key])


def test_debiased_residual_against_monte_carlo():
    # The noise of a subsample's mean inflates the squared norm of a residual by the trace of
    # its covariance: the debiased estimate's mean over many subsamples is the norm on all
    # rows up to the noise of its square root (here the dual residual of the objective
    # alone, at a point where it is about twice the noise of 500 rows).
    from scipy.optimize import minimize

    X, y, groups = _data(50_000)
    pb = fairness_problem(X, y, X, groups, bound=0.1, fit_intercept=True, feature_scale="auto")
    full = slice(None)
    x = minimize(
        lambda v: pb.objective_value(v, full), np.zeros(pb.n_params),
        jac=lambda v: pb.objective(v, full), method="L-BFGS-B",
    ).x  # fmt: skip
    x = x + 0.4
    _, grad, _, _ = pb.full_evaluation(x)
    truth = float(np.linalg.norm(grad))
    rng = np.random.default_rng(0)
    raw, debiased = [], []
    for _ in range(300):
        bo = pb.sample(rng, 500, "objective")
        chunks = [pb.full_evaluation(x, None, (bo[i::10], None)) for i in range(10)]
        f0, g, c, jt = subsample._mean_evaluation(chunks)
        no_c = [(f, gi, np.zeros(0), lambda v: 0.0) for f, gi, _, _ in chunks]
        _, dres, _, _ = subsample._subsample_residuals(
            no_c, 0.0, x, np.zeros(0), np.zeros(0), np.zeros(0), g, jt, pb.h, np.zeros(0, bool)
        )
        raw.append(np.linalg.norm(g))
        debiased.append(dres)
    raw, debiased = np.array(raw), np.array(debiased)
    se = debiased.std() / np.sqrt(len(debiased))
    assert raw.mean() - truth > 3 * se  # the plain norm is biased upwards
    assert abs(debiased.mean() - truth) < min(3 * se, (raw.mean() - truth) / 3)


@pytest.mark.parametrize("kind", ["fairness", "neyman_pearson"])
def test_gathered_rows_evaluate_as_the_rows_read_in_place(kind):
    # A stop test's chunk copied in order (LinearProblem.gather, read by the compiled pass)
    # against the same rows read through the numpy oracles: objective, gradient, constraint
    # values and J^T. The Neyman-Pearson problem's constraint rows are a subset of X's rows.
    pytest.importorskip("numba")
    X, y, groups = _data(3_000, seed=1)
    if kind == "fairness":
        pb = fairness_problem(X, y, X, groups, bound=0.1, fit_intercept=True, feature_scale="auto")
    else:
        pb = neyman_pearson_problem(X, y, max_fpr=0.1, fit_intercept=True, feature_scale="auto")
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 0.5, pb.n_params)
    batches = (
        rng.integers(pb.n_objective_samples, size=700),
        rng.integers(pb.n_constraint_samples, size=900),
    )
    copy = pb.gather(batches)
    assert copy is not None and copy.A.flags.c_contiguous
    f1, g1, c1, jt1 = pb.full_evaluation(x, None, copy)
    pb.use_kernel = False
    f0, g0, c0, jt0 = pb.full_evaluation(x, None, batches)
    v = rng.standard_normal(pb.n_constraints)
    np.testing.assert_allclose(f1, f0, rtol=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(c1, c0, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(jt1(v), jt0(v), rtol=1e-10, atol=1e-14)


def test_gather_declines_sparse_rows():
    import scipy.sparse as sp

    X, y, groups = _data(500)
    pb = fairness_problem(sp.csr_matrix(X), y, sp.csr_matrix(X), groups, bound=0.1)
    assert pb.gather((np.arange(10), np.arange(10))) is None


def test_windows_read_every_row_equally_often():
    # Windows of adjacent rows at uniform starts (wrapping around the end): each row is in a
    # draw with the same probability, the first and last rows included.
    rng = np.random.default_rng(0)
    n, width, rows, draws = 500, 64, 640, 2_000
    counts = np.zeros(n)
    for _ in range(draws):
        idx = subsample._windows(rng, n, rows, width)
        assert idx.shape == (rows // width, width)
        assert np.all(np.diff(idx, axis=1) % n == 1)  # adjacent rows, in order
        counts += np.bincount(idx.ravel(), minlength=n)
    expected = draws * rows / n
    # Each count is a sum of 2000 x 10 window indicators (p = 64 / 500): sd about 47. Without
    # the wrap, row 0 would be read only from the windows that start there (about 40 times).
    p = width / n
    assert np.abs(counts - expected).max() < 5 * np.sqrt(draws * (rows // width) * p * (1 - p))


def test_default_subsample_reads_windows_and_its_verdict_holds_on_all_rows():
    # On 150000 rows the default tests read windows of 64 rows (10 chunks of whole windows),
    # and a converged fit's point passes the test on all rows.
    X, y, groups = _data(150_000, seed=2)
    pb = fairness_problem(X, y, X, groups, bound=0.1, fit_intercept=True, feature_scale="auto")
    res = stoc_ialm(pb, random_state=0, max_passes=30)
    rows = res.history["check_rows"]
    on_sub = rows[rows < pb.full_evaluation_cost()]
    assert len(on_sub) and np.all(
        on_sub % (2 * subsample._SUBSAMPLE_CHUNKS * subsample._SUBSAMPLE_WINDOW) == 0
    )
    assert res.converged
    pres, dres = _full_residuals(pb, res)
    assert pres <= res.settings["tol"] and dres <= res.settings["dual_tol"]
