"""The fit reads the training matrix in place: memory-mapped, read-only and sparse input.

Not timing tests: they check models for equality and allocations with ``tracemalloc``
(numpy reports its buffers to it; the pages of a memory-mapped file are not allocations).
``benchmarks/memory.py`` measures the same at scale, with parallel seeds.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_config
from numpy.testing import assert_array_equal

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=600, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    groups = (rng.random(n) < 0.3 + 0.2 * (y == 0)).astype(int)
    return X, y, groups


def _fit(kind, X, y, groups, **kw):
    if kind == "fair":
        est = FairLogisticClassifier(
            constraint="demographic_parity", bound=0.05, loss="logistic", **kw
        )
        return est.fit(X, y, sensitive_features=groups)
    return NeymanPearsonClassifier(max_fpr=0.2, **kw).fit(X, y)


def _assert_same_model(a, b):
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.intercept_, b.intercept_)
    assert_array_equal(a.multipliers_, b.multipliers_)
    assert a.n_data_passes_ == b.n_data_passes_


def _read_only_memmap(X, path):
    mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    del mm
    return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)


@pytest.mark.parametrize("kind", ["fair", "np"])
def test_read_only_memmap_gives_the_same_model(kind, tmp_path):
    X, y, groups = _data()
    ro = _read_only_memmap(X, tmp_path / "X.dat")
    assert not ro.flags.writeable
    kw = dict(random_state=0, max_passes=20)
    _assert_same_model(_fit(kind, X, y, groups, **kw), _fit(kind, ro, y, groups, **kw))
    assert_array_equal(np.asarray(ro), X)


@pytest.mark.parametrize("kind", ["fair", "np"])
def test_read_only_csr_is_used_as_given(kind):
    X, y, groups = _data()
    X[np.abs(X) < 0.8] = 0.0
    A = sp.csr_matrix(X)
    ro = sp.csr_matrix((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    for arr in (ro.data, ro.indices, ro.indptr):
        arr.flags.writeable = False
    kw = dict(random_state=0, max_passes=20)
    a = _fit(kind, A, y, groups, **kw)
    b = _fit(kind, ro, y, groups, **kw)
    _assert_same_model(a, b)
    assert_array_equal(ro.toarray(), X)


def _peak_fit_allocation(kind, X, y, groups, max_passes=2):
    """Peak of the allocations during one fit (tracemalloc: numpy's buffers included)."""
    tracemalloc.start()
    try:
        _fit(kind, X, y, groups, random_state=0, max_passes=max_passes)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", ["fair", "np"])
@pytest.mark.parametrize("container", ["ndarray", "memmap", "csr"])
def test_fit_makes_no_copy_of_X(kind, container, tmp_path):
    # 5000 x 200 float64: 8 MB. The fit needs O(n + d) vectors and minibatch blocks of a
    # few hundred rows at most here (m0 = 300); a copy of X (or a densified CSR, or a
    # C-ordered copy of a Fortran-ordered X: peak 1.17 x X) would put the peak above X's size.
    X, y, groups = _data(n=5000, d=200, seed=1)
    dense_nbytes = X.nbytes
    if container == "memmap":
        X = _read_only_memmap(X, tmp_path / "X.dat")
    elif container == "csr":
        X[np.abs(X) < 1.0] = 0.0
        X = sp.csr_matrix(X)
    _peak_fit_allocation(kind, X, y, groups)  # first call: imports, caches
    peak = _peak_fit_allocation(kind, X, y, groups)
    assert peak < 0.5 * dense_nbytes, (peak, dense_nbytes)


@pytest.mark.parametrize("kind, limit", [("np", 0.4), ("fair", 0.85)])
def test_fit_keeps_few_per_row_vectors(kind, limit):
    # 100000 x 20 float64: X is 16 MB, 160 bytes a row, so every float64 n-vector alive at
    # the peak is 5 % of X. The fit used to hold several copies of each per-row array
    # (labels and group codes as int64, weights divided into a copy, margins times weights,
    # one n-vector per group and pair while building W, the problem alive during the
    # report): peaks of 0.50 x X (NP) and 1.05 x X (fair). Fair's peak is now the set-up
    # sweep's (n, 3) matrix of per-row weights.
    X, y, groups = _data(n=100_000, d=20, seed=2)
    _peak_fit_allocation(kind, X, y, groups, max_passes=10)  # first call: imports, caches
    peak = _peak_fit_allocation(kind, X, y, groups, max_passes=10)
    assert peak < limit * X.nbytes, (peak / X.nbytes, limit)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("container", ["ndarray", "memmap"])
def test_parallel_seeds_read_X_memory_mapped(container, tmp_path):
    # max_nbytes=1 makes joblib hand every array to the workers as a read-only memmap (as it
    # does above 1 MB by default): the seeds must run on it and give the sequential models.
    X, y, groups = _data()
    if container == "memmap":
        X = _read_only_memmap(X, tmp_path / "X.dat")
    kw = dict(random_state=0, max_passes=20, n_seeds=2)
    one = _fit("fair", X, y, groups, n_jobs=1, **kw)
    with parallel_config(max_nbytes=1, mmap_mode="r"):
        two = _fit("fair", X, y, groups, n_jobs=2, **kw)
    _assert_same_model(one, two)
    assert one.seeds_ == two.seeds_
