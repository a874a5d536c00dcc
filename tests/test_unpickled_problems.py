"""A problem sent to another process (a joblib task on Dask) computes what it computes at home:
its arrays come back at aligned addresses, however the transport placed their bytes."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import fairness_problem
from sklearn_ialm.solver import stoc_ialm


def _round_trip(obj, offset=2):
    """``obj`` pickled with its large buffers out of band, each restored in place at
    ``offset`` bytes past a 64-byte boundary, as Dask rebuilt the training matrix in a
    worker (at 2 mod 8: not aligned for float64)."""
    buffers = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    placed = []
    for buf in buffers:
        raw = buf.raw()
        store = np.empty(raw.nbytes + 64, dtype=np.uint8)
        start = (-store.ctypes.data) % 64 + offset
        store[start : start + raw.nbytes] = np.frombuffer(raw, dtype=np.uint8)
        placed.append(memoryview(store[start : start + raw.nbytes]))
    return pickle.loads(data, buffers=placed)


def _arrays(pb):
    """The problem's own arrays and those of its row access (the training matrix's)."""
    out = [v for v in vars(pb).values() if isinstance(v, np.ndarray)]
    for rows in (pb.A_obj, pb.A_con):
        A = rows.A
        out += [A.data, A.indices, A.indptr] if sp.issparse(A) else [A, rows.full]
    return out


def _problem(sparse):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 10))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = (X[:, 0] + rng.standard_normal(3000) > 0).astype(int)
    groups = (X[:, 1] > 0.3).astype(int)
    Xs = sp.csr_matrix(X) if sparse else X
    return fairness_problem(
        Xs, y, Xs, groups, bound=0.05, constraint="demographic_parity", fit_intercept=True,
        feature_scale="auto", loss="logistic",
    )  # fmt: skip


@pytest.mark.parametrize("sparse", [False, True])
def test_unpickled_problem_has_aligned_arrays_and_shares_its_matrix(sparse):
    pb = _problem(sparse)
    # The premise: the matrix travels out of band, its bytes placed by the transport.
    buffers = []
    pickle.dumps(pb, protocol=5, buffer_callback=buffers.append)
    assert any(buf.raw().nbytes == pb.A_obj.A.data.nbytes for buf in buffers)
    back = _round_trip(pb)
    assert all(a.flags.aligned for a in _arrays(back))
    # One matrix for the objective and the constraints, as before the trip (one copy).
    assert back.A_obj.A is back.A_con.A
    if not sparse:
        assert back.A_obj.full is back.A_obj.A
    for mine, theirs in zip(_arrays(pb), _arrays(back), strict=True):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("sparse", [False, True])
def test_unpickled_problem_gives_the_same_bits(sparse):
    # Same process, same CPU: the only difference is where the arrays' bytes sit. Unaligned,
    # the dense Hessian differed in its last bits (A.T @ B of an unaligned A runs BLAS on a
    # transposed copy: 2e-17 here, with OpenBLAS), and so did each seed's fit on Dask.
    pb = _problem(sparse)
    back = _round_trip(pb)
    x = np.random.default_rng(1).normal(scale=0.3, size=pb.n_params)
    mu = np.array([0.7, 0.2])
    f0, grad, c, J, hessian = pb.second_order_evaluation(x)
    f0b, gradb, cb, Jb, hessianb = back.second_order_evaluation(x)
    assert f0 == f0b
    for mine, theirs in ((grad, gradb), (c, cb), (J, Jb), (hessian(mu), hessianb(mu))):
        np.testing.assert_array_equal(mine, theirs)
    kwargs = dict(random_state=0, max_passes=30)
    np.testing.assert_array_equal(stoc_ialm(pb, **kwargs).x, stoc_ialm(back, **kwargs).x)
