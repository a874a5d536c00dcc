"""A small fit's BLAS calls run on one thread (sklearn_ialm.solver.threads): its results do
not depend on the thread count the environment sets, and threads that only wait on each
other on small products cost it no time."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.problems import linear
from sklearn_ialm.solver.threads import SMALL_VALUES, one_blas_thread


def _blas_threads():
    return max(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    g = (X[:, 0] + rng.standard_normal(n) > 0).astype(int)
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=n) > 0).astype(int)
    return X, y, g


def _threads_seen(monkeypatch, problem_class):
    """The BLAS threads each ``second_order_evaluation`` of ``problem_class`` sees, in a
    list filled as the fits run."""
    seen = []
    evaluate = problem_class.second_order_evaluation

    def spy(self, x):
        seen.append(_blas_threads())
        return evaluate(self, x)

    monkeypatch.setattr(problem_class, "second_order_evaluation", spy)
    return seen


@pytest.mark.parametrize("make", [
    lambda: FairLogisticClassifier(bound=0.05, random_state=0),
    lambda: NeymanPearsonClassifier(max_fpr=0.1, random_state=0),
])  # fmt: skip
def test_small_fit_runs_blas_on_one_thread(make, monkeypatch):
    """Under two BLAS threads set by the user, every evaluation of a 1500 x 5 fit sees one;
    the user's setting is back after the fit."""
    seen = _threads_seen(monkeypatch, linear.LinearProblem)
    X, y, g = _data()
    kw = {"sensitive_features": g} if isinstance(make(), FairLogisticClassifier) else {}
    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        make().fit(X, y, **kw)
        assert _blas_threads() == before
    assert seen and set(seen) == {1}


def test_same_model_whatever_the_thread_count():
    X, y, g = _data(seed=1)
    fits = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            est = FairLogisticClassifier(bound=0.02, random_state=0)
            fits.append(est.fit(X, y, sensitive_features=g))
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].intercept_ == fits[1].intercept_


def test_large_data_keep_the_users_threads():
    with threadpool_limits(2, user_api="blas"):
        threads = _blas_threads()
        with one_blas_thread(SMALL_VALUES + 1):
            assert _blas_threads() == threads
        with one_blas_thread(SMALL_VALUES):
            assert _blas_threads() == 1
        assert _blas_threads() == threads


def test_multiclass_fit_runs_blas_on_one_thread_whatever_its_size(monkeypatch):
    """A multi-class fit's products are thin whatever the rows' count: its evaluations see
    one BLAS thread even where the data count as large (the size rule patched away), and
    the user's setting is back after the fit."""
    from sklearn_ialm.estimators import _fit, _solve
    from sklearn_ialm.problems import multinomial

    seen = _threads_seen(monkeypatch, multinomial.MultinomialProblem)
    for module in (_fit, _solve):  # (every other limit of the fit: none)
        monkeypatch.setattr(module, "one_blas_thread", lambda n: one_blas_thread(SMALL_VALUES + 1))
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 4))
    y = np.argmax(X[:, :3] + rng.logistic(size=(300, 3)), axis=1)
    g = (X[:, 3] > 0).astype(int)
    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        FairLogisticClassifier(bound=0.1, random_state=0).fit(X, y, sensitive_features=g)
        assert _blas_threads() == before
    assert seen and set(seen) == {1}
