"""The finish's evaluation on wide rows read by the objective and the constraints alike
(issue 51): its memory-lean order of operations gives the general evaluation's values bit for
bit, and the Hessian read from scores computed again equals the one from kept scores."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import fairness_problem


@pytest.mark.parametrize("seed", range(3))
def test_one_matrix_evaluation_is_the_general_one_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    n, d, nnz = 5000, 1500, 8
    cols = rng.integers(0, d, size=n * nnz)
    X = sp.csr_matrix(
        (rng.standard_normal(n * nnz), cols, np.arange(0, n * nnz + 1, nnz)), shape=(n, d)
    )
    X.sum_duplicates()
    s = X @ rng.standard_normal(d)
    y = (s + rng.logistic(size=n) > 0).astype(int)
    groups = rng.integers(0, 2 + seed, n)
    w = rng.uniform(0.5, 2.0, n) if seed == 2 else None
    pb = fairness_problem(
        X, y, X, groups, bound=0.02, loss="logistic", sample_weight=w,
        constraint_sample_weight=w,
    )  # fmt: skip
    x = rng.standard_normal(pb.n_params) * 0.1
    assert pb._one_matrix_logistic()
    general = pb._numpy_evaluation(x, jacobian=True, scores=True)
    lean = pb._one_matrix_evaluation(x)
    for a, b in zip((general[0], general[1], general[2], general[4]), lean, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    *_, hessian = pb.second_order_evaluation(x)
    mu = 0.3 * np.arange(pb.n_constraints)
    v = rng.standard_normal(pb.n_params)
    assert (hessian(mu) @ v).tobytes() == (pb._hessian(x, mu) @ v).tobytes()
