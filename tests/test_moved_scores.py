"""Wide rows (a Hessian operator): the point a Newton step reaches is scored from the scores
of its conjugate-gradient products, not by a product with X of its own (issue 51, CSR 1e6 x
1e4). The scores are linear in the parameters, so the moved scores are the point's own to
rounding, and a fit gives the same model reading the rows fewer times."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.problems import fairness_problem, neyman_pearson_logistic_problem
from sklearn_ialm.problems.linear import LinearProblem
from sklearn_ialm.solver import _newton_steps


def _wide(n=6000, d=1500, nnz=8, seed=0):
    # More than GRAM_MAX_PARAMS parameters: the finish's Hessian is an operator.
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, size=n * nnz)
    X = sp.csr_matrix(
        (rng.standard_normal(n * nnz), cols, np.arange(0, n * nnz + 1, nnz)), shape=(n, d)
    )
    X.sum_duplicates()
    s = X @ rng.standard_normal(d)
    y = (s + rng.logistic(size=n) > 0).astype(int)
    groups = (s + rng.standard_normal(n) > 0).astype(int)
    return X, y, groups


@pytest.mark.parametrize("kind", ["fair", "np"])
def test_moved_scores_are_the_scores_of_the_moved_point(kind):
    # A fairness problem (one matrix for the objective and the constraints) and
    # Neyman-Pearson's reweighted logistic regression (no constraint: numpy's evaluation).
    X, y, groups = _wide()
    if kind == "fair":
        pb = fairness_problem(X, y, X, groups, bound=0.02)
    else:
        pb = neyman_pearson_logistic_problem(X, y, negative_weight=3.0, fit_intercept=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(pb.n_params) * 0.1
    g = rng.standard_normal(pb.n_params)
    for t in (1.0, 0.3):
        *_, hessian = pb.second_order_evaluation(x)
        H = hessian(np.array([0.0, 0.4][: pb.n_constraints]))
        step = _newton_steps._cg_solve(H, -g, 1e-6 * np.linalg.norm(g))
        track = H.last_track
        (moved,) = track.moved(t).values()
        assert track.moved(t) is None  # once: formed in the track's own array
        exact = pb._score(X, x + t * step)
        np.testing.assert_allclose(moved, exact, rtol=0, atol=1e-12 * np.abs(exact).max())
        # The evaluation from them: the point's values to rounding.
        fresh = pb.second_order_evaluation(x + t * step)
        given = pb.second_order_evaluation(x + t * step, scores={id(X): moved})
        for a, b in zip(fresh[:4], given[:4], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


@pytest.mark.filterwarnings("ignore")
def test_a_wide_fit_reads_its_rows_fewer_times_for_the_same_model(monkeypatch):
    X, y, groups = _wide()
    reads = []
    score = LinearProblem._score

    def counted(self, A, x):
        reads.append(A.shape[0] == X.shape[0])
        return score(self, A, x)

    monkeypatch.setattr(LinearProblem, "_score", counted)

    def fit():
        reads.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = FairLogisticClassifier(bound=0.02, random_state=0)
            est.fit(X, y, sensitive_features=groups)
        return est, sum(reads)

    moved, n_moved = fit()
    # The same fit with each point scored by a product of its own.
    never = type("Never", (_newton_steps._ScoreTrack,), {"moved": lambda self, t: None})
    monkeypatch.setattr(_newton_steps, "_ScoreTrack", never)
    plain, n_plain = fit()
    # The same model to the solver's precision, and fewer reads of the rows per pass. (The
    # passes themselves may differ by an evaluation: the moved scores round differently
    # from a product's, and with the BLAS of CI's floor versions at two threads a step's
    # line search took one evaluation more, 45 against 44.5.)
    assert abs(moved.n_data_passes_ - plain.n_data_passes_) <= 1.0
    np.testing.assert_allclose(moved.coef_, plain.coef_, rtol=0, atol=1e-6)
    assert n_moved / moved.n_data_passes_ < n_plain / plain.n_data_passes_
    assert n_moved < n_plain, (n_moved, n_plain)
