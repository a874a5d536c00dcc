"""Every row a fit touches is counted: checked against counts taken outside the solver.

The data matrices are wrapped so that the full-data work is counted where it happens: a
forward product of the whole matrix with ``k`` vectors scores every row at ``k`` points, and
a block of rows sliced out of it (the set-up's sweep) reads those rows. Backward products at
a point already scored belong to the same evaluation (the unit of ``n_data_passes``) and are
not counted. The minibatch oracles are wrapped on the problem instance and count rows times
points. The solver's reported set-up, stop-test and minibatch passes must match exactly.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _counting import Tally, wrap

from sklearn_ialm.problems import LinearProblem, fairness_problem, neyman_pearson_problem
from sklearn_ialm.problems.losses import SigmoidLoss
from sklearn_ialm.solver import stoc_ialm


@pytest.fixture(autouse=True)
def _numpy_path(monkeypatch):
    """The counts are taken from outside the products, which compiled code does not go
    through; the compiled path reports the same counts as the numpy path
    (tests/test_kernel.py compares their counters)."""
    monkeypatch.setattr(LinearProblem, "use_kernel", False)


def _wrap(X, tally, sparse):
    return wrap(sp.csr_matrix(X) if sparse else X, tally)


def _count_minibatches(problem):
    """Wrap the minibatch oracles of ``problem``: rows times points, by index-array batches."""
    seen = {"rows": 0}

    def counted(name, points):
        inner = getattr(problem, name)

        def call(*args):
            batch = args[points]
            if not isinstance(batch, slice):
                seen["rows"] += len(batch) * points
            return inner(*args)

        setattr(problem, name, call)

    counted("objective", 1)
    counted("constraints", 1)
    if hasattr(problem, "objective_pair"):
        counted("objective_pair", 2)
        counted("constraints_pair", 2)
    return seen


def _data(seed=0, n=600, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.5
    X[rng.random((n, d)) < 0.3] = 0.0
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0.5).astype(int)
    groups = (X[:, 1] > 0.8).astype(int)
    return X, y, groups


def _problem(kind, sparse, tally, **kw):
    X, y, groups = _data()
    A = _wrap(X, tally, sparse)
    if kind == "np":
        return neyman_pearson_problem(A, y, max_fpr=0.2, fit_intercept=True, **kw)
    # Fairness with the constraint rows in a matrix of their own, as in the paper.
    S = _wrap(X[::2], tally, sparse)
    return fairness_problem(A, y, S, groups[::2], bound=0.3, fit_intercept=True, **kw)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", ["np", "fairness"])
@pytest.mark.parametrize("preset", ["default", "paper"])
def test_reported_passes_match_the_rows_touched(kind, sparse, preset):
    tally = Tally()
    pb = _problem(kind, sparse, tally, feature_scale="auto")
    n = pb.n_samples
    # The set-up (scale and smoothness bound) read every row of each matrix once.
    X = _data()[0]
    rows_in_matrices = X.shape[0] + (0 if kind == "np" else X[::2].shape[0])
    assert tally.read == rows_in_matrices
    assert tally.scored == 0
    assert pb.setup_evaluations == rows_in_matrices

    setup_read = tally.read
    minibatch = _count_minibatches(pb)
    res = stoc_ialm(pb, preset=preset, random_state=0, max_passes=60)
    # Only the finish's Newton steps slice blocks of rows in the fit (their Gram matrices).
    gram_read = tally.read - setup_read
    assert (gram_read > 0) == (preset == "default")

    n_checks = len(res.history["dual_residual"])
    assert n_checks >= 1
    # Stop tests: one forward product per test over every row of each matrix (NP: the
    # objective and constraint rows are subsets of one matrix, scored together).
    # ... and one per evaluation of the deterministic finish (the default's), with the
    # scores and the Gram matrix of its curvature; the test of the finish's point (the
    # default's last) reads no row: its Newton solve's evaluation there is the verdict's.
    touched = tally.scored + gram_read
    reads = n_checks - (preset == "default")
    assert touched == pytest.approx(reads * rows_in_matrices + res.n_finish_passes * n)
    assert (res.n_finish_passes > 0) == (preset == "default")
    finish_rows = res.n_finish_passes * n
    assert res.n_check_passes * n == pytest.approx(touched - finish_rows)
    assert res.n_setup_passes * n == pytest.approx(setup_read)
    assert (res.n_passes_without_checks - res.n_setup_passes) * n == pytest.approx(
        minibatch["rows"] + finish_rows
    )
    assert res.n_data_passes * n == pytest.approx(setup_read + touched + minibatch["rows"])
    assert res.n_oracle_calls == pytest.approx(setup_read + touched + minibatch["rows"])
    assert res.n_passes_without_checks == pytest.approx(res.n_data_passes - res.n_check_passes)
    # The history tells the same story, test by test.
    h = res.history
    per_test = (touched - finish_rows) / reads / n
    read_so_far = np.minimum(np.arange(1, n_checks + 1), reads)
    np.testing.assert_allclose(h["check_passes"], read_so_far * per_test)
    assert h["data_passes"][-1] == pytest.approx(res.n_data_passes)
    assert np.all(np.diff(h["data_passes"]) > 0)


def test_given_smoothness_costs_no_setup():
    tally = Tally()
    pb = _problem("np", False, tally, smoothness=(1.0, 1.0))
    assert tally.read == tally.scored == pb.setup_evaluations == 0
    res = stoc_ialm(pb, random_state=0, max_passes=50)
    assert res.n_setup_passes == 0.0


def test_power_iteration_setup_is_counted(monkeypatch):
    # Beyond the Gram matrices' size limit the bound comes from power iterations: one
    # forward product of every row per iteration and bound (objective, constraint rows,
    # one |W_k|: three bounds of 20 iterations on one shared matrix).
    import sklearn_ialm.problems._gram as _gram

    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    tally = Tally()
    pb = _problem("np", False, tally)
    assert pb.smoothness[0] > 0  # (taken when first read)
    assert tally.scored == 3 * 20 * _data()[0].shape[0]
    assert pb.smoothness_evaluations == tally.scored


@pytest.mark.parametrize("sparse", [False, True])
def test_one_pass_bound_is_the_exact_spectral_bound(sparse):
    # Against the eigenvalues of explicitly formed matrices of the solver's coordinates
    # (centred, scaled features with the intercept column).
    X, y, groups = _data(3)
    rng = np.random.default_rng(3)
    scale, center = rng.uniform(0.5, 2.0, X.shape[1]), rng.standard_normal(X.shape[1])
    w = rng.uniform(0.5, 2.0, len(y))
    A = sp.csr_matrix(X) if sparse else X
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    wn = w[neg]
    W = np.column_stack([wn - 1.0, np.abs(wn - 1.0), 1.0 - wn])
    pb = LinearProblem(
        A, np.ones(len(pos)), SigmoidLoss(), A, W, np.zeros(3), objective_weights=w[pos],
        fit_intercept=True, feature_scale=scale, feature_center=center, rows_objective=pos,
        rows_constraint=neg,
    )  # fmt: skip
    At = np.column_stack([(X - center) / scale, np.ones(len(X))])
    u = w[pos] / w[pos].mean()

    def top(B, weights):
        return np.linalg.eigvalsh(B.T @ (weights[:, None] * B) / len(B))[-1]

    # Two columns share |W_k|: one Gram serves both, and the whole bound took one pass.
    assert pb.smoothness[0] > 0  # (taken when first read)
    assert pb.smoothness_evaluations == len(X)
    lam_obj, lam_con, hess, _ = pb._spectral_bounds()
    assert lam_obj == pytest.approx(top(At[pos], u), rel=1e-10)
    assert lam_con == pytest.approx(top(At[neg], np.ones(len(neg))), rel=1e-10)
    expected = [top(At[neg], np.abs(W[:, k])) for k in range(3)]
    np.testing.assert_allclose(hess, expected, rtol=1e-10)


def test_auto_schedule_doubles_the_interval_up_to_one_tests_worth_of_work():
    # With many rows, the paper's rule (a full-data test every 50 iterations) spends most of
    # the passes on stop tests. "auto": 50 iterations, then twice the previous interval, but
    # never more iterations than cost as much as one test.
    rng = np.random.default_rng(0)
    n, d = 20_000, 5
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + rng.standard_normal(n) > 0).astype(int)
    pb = neyman_pearson_problem(X, y, max_fpr=0.2, fit_intercept=True)
    # The stochastic phase's schedule: without the finish, whose closing test follows it.
    auto = stoc_ialm(pb, random_state=0, max_passes=200, finish=False)
    fixed = stoc_ialm(pb, random_state=0, max_passes=200, eval_every=50, finish=False)
    assert auto.converged and fixed.converged
    assert auto.settings["eval_every"] == "auto" and fixed.settings["eval_every"] == 50
    h = auto.history
    assert np.all(h["batch_size"] == 30)
    # An iteration evaluates 30 objective and 30 constraint rows at two points.
    longest = max(50, pb.full_evaluation_cost() // (4 * 30))
    assert 100 < longest < 200  # the cap is reached in this run
    start = 0
    for k in np.unique(h["outer_iter"]):
        ends = h["inner_iter"][h["outer_iter"] == k]
        intervals = np.diff(np.concatenate([[start], ends]))
        expected = [50]
        while len(expected) < len(intervals):
            expected.append(min(2 * expected[-1], longest))
        np.testing.assert_array_equal(intervals, expected)
        start = ends[-1]
    np.testing.assert_array_equal(np.diff(fixed.history["inner_iter"]), 50)
    assert auto.n_check_passes < fixed.n_check_passes
    assert auto.n_data_passes < fixed.n_data_passes


def test_eval_every_is_validated():
    X, y, _ = _data()
    pb = neyman_pearson_problem(X, y, max_fpr=0.2)
    with pytest.raises(ValueError, match="eval_every must be 'auto' or an integer > 0, got 'x'"):
        stoc_ialm(pb, eval_every="x")
    with pytest.raises(ValueError, match="eval_every must be an integer > 0, got 0"):
        stoc_ialm(pb, eval_every=0)


def test_smoothness_bound_is_read_by_a_stochastic_phase_only():
    """The step size's bound (one sweep over the rows) is taken when a stochastic phase
    first reads it, charged to every run that reads it (as the set-up when the problem is
    built), and shared with the copies of other offsets."""
    tally = Tally()
    pb = _problem("fairness", False, tally)
    fresh = _problem("fairness", False, Tally())
    assert tally.read == pb.setup_evaluations == 0  # nothing read when built
    # The finish alone (minibatches of every row) needs no step size: no row read for it.
    alone = stoc_ialm(pb, random_state=0, max_passes=50, batch_size=pb.n_objective_samples)
    assert alone.n_setup_passes == 0.0
    assert alone.settings["smoothness_source"] == "unused"
    assert pb.smoothness_evaluations == 0
    # Algorithm 1 (the paper's preset) takes it: one sweep over every row of each matrix.
    read = tally.read
    res = stoc_ialm(pb, preset="paper", random_state=0, max_passes=5)
    rows = _data()[0].shape[0] + _data()[0][::2].shape[0]
    assert tally.read - read == pb.smoothness_evaluations == rows
    assert res.n_setup_passes * pb.n_samples == pytest.approx(rows)
    # A copy of another offset keeps that bound (the original offset's), charged once.
    moved = pb.with_offset(pb.offset + 0.1)
    read = tally.read
    again = stoc_ialm(moved, preset="paper", random_state=0, max_passes=5)
    assert tally.read == read and again.n_setup_passes == 0.0
    assert moved.smoothness == pb.smoothness == fresh.smoothness_bound()
