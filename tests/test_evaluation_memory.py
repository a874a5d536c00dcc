"""The finish's evaluation on wide rows (issue 51): the scores it keeps for the Hessian are
the scores themselves (no copy), so nothing after may write into them, and its n-vectors at
a time are few; read by the objective and the constraints alike, its memory-lean order of
operations gives the general evaluation's values (the objective's to rounding), and the
Hessian read from scores computed again equals the one from kept scores. Not timing tests:
values compared bit for bit (two paths of the same process), allocations by tracemalloc.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

from sklearn_ialm.problems import fairness_problem


def _wide_rows(rng, n, d, nnz):
    """CSR rows of ``nnz`` entries, their scores and labels (the label's own score)."""
    cols = rng.integers(0, d, size=n * nnz)
    X = sp.csr_matrix(
        (rng.standard_normal(n * nnz), cols, np.arange(0, n * nnz + 1, nnz)), shape=(n, d)
    )
    X.sum_duplicates()
    s = X @ rng.standard_normal(d)
    return X, s, (s + rng.logistic(size=n) > 0).astype(int)


def _wide_problem(n=20_000, d=2000, nnz=10, seed=0):
    # More than GRAM_MAX_PARAMS parameters: the Hessian is an operator over kept scores.
    rng = np.random.default_rng(seed)
    X, s, y = _wide_rows(rng, n, d, nnz)
    groups = (s + rng.standard_normal(n) > 0).astype(int)
    problem = fairness_problem(X, y, X, groups, bound=0.02)
    x = rng.standard_normal(problem.n_params) * 0.1
    return problem, x


def _n_vectors_at_peak(problem, evaluate, x):
    """The most memory ``evaluate(x)`` allocates at once (tracemalloc), in n-vectors of
    float64 of the problem's rows."""
    tracemalloc.start()
    try:
        out = evaluate(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak / (8 * problem.A_obj.A.shape[0])


def test_kept_scores_are_the_scores_and_change_no_value():
    problem, x = _wide_problem()
    plain = problem._numpy_evaluation(x, jacobian=True, scores=False)
    kept = problem._numpy_evaluation(x, jacobian=True, scores=True)
    for a, b in zip(plain[:3], kept[:3], strict=True):
        assert_array_equal(a, b)
    assert_array_equal(plain[4], kept[4])
    (z,) = kept[5].values()
    assert_array_equal(z, problem._score(problem.A_obj.A, x))  # not overwritten after
    # The Hessian's products from the kept scores and from scores read again agree.
    f0, grad, c, J, hessian = problem.second_order_evaluation(x)
    v = np.random.default_rng(1).standard_normal(problem.n_params)
    mu = np.array([0.5, 0.0])
    again = problem._hessian(x, mu)
    assert_array_equal(hessian(mu) @ v, again @ v)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_second_order_evaluation_holds_few_row_vectors():
    # Its arrays at a time: the kept scores, the backward product's columns (the
    # objective's and one per constraint up to sign: two here) and one more. It held 7.0
    # n-vectors here: a copy of the scores, the objective's column apart from the product's,
    # the constraints' p (1 - p) / n apart, and their quotient by n while it was copied in.
    problem, x = _wide_problem(n=200_000)
    problem.second_order_evaluation(x)  # first call: caches (signed columns, weights)
    held = _n_vectors_at_peak(problem, problem.second_order_evaluation, x)
    width = 1 + len(problem._signed_columns()[0])
    assert held < 2.5 + width, (held, width)


@pytest.mark.parametrize("seed", range(3))
def test_one_matrix_evaluation_is_the_general_one(seed):
    rng = np.random.default_rng(seed)
    n = 5000
    X, _, y = _wide_rows(rng, n, 1500, 8)
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
    # The objective from numpy's vectorised exponential and logarithm (see
    # _curvature._logistic_values): within an ulp or two of each row's loss.
    np.testing.assert_allclose(lean[0], general[0], rtol=1e-14, atol=0)
    for a, b in zip((general[1], general[2], general[4]), lean[1:4], strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # The scores it keeps for the Hessian are the general evaluation's.
    assert [z.tobytes() for z in lean[4].values()] == [z.tobytes() for z in general[5].values()]
    *_, hessian = pb.second_order_evaluation(x)
    mu = 0.3 * np.arange(pb.n_constraints)
    v = rng.standard_normal(pb.n_params)
    assert (hessian(mu) @ v).tobytes() == (pb._hessian(x, mu) @ v).tobytes()


@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds"])
def test_pattern_products_give_the_columns_product(monkeypatch, constraint):
    # The Jacobian from the constraint weights' distinct rows (one compiled read) against
    # scipy's product with every column (no patterns): the same values to rounding.
    from sklearn_ialm.problems import _full_evaluation

    rng = np.random.default_rng(3)
    X, _, y = _wide_rows(rng, 3000, 40, 6)
    groups = rng.integers(0, 4, 3000)
    pb = fairness_problem(X, y, X, groups, bound=0.02, constraint=constraint)
    x = rng.standard_normal(pb.n_params) * 0.1
    patterns = pb._row_patterns()
    assert patterns is not None
    assert_array_equal(patterns[1][patterns[0]], pb._evaluation_weights()[1])
    lean = pb._numpy_evaluation(x, jacobian=True, products=False)
    _full_evaluation._EVALUATION_WEIGHTS.clear()
    monkeypatch.setattr(_full_evaluation, "_MAX_PATTERNS", 0)
    assert pb._row_patterns() is None
    full = pb._numpy_evaluation(x, jacobian=True, products=False)
    _full_evaluation._EVALUATION_WEIGHTS.clear()
    for a, b in zip(lean[:3] + lean[4:5], full[:3] + full[4:5], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_distinct_rows_tells_apart_rows_of_equal_projection():
    from sklearn_ialm.problems._full_evaluation import _distinct_rows

    C = np.repeat(np.eye(3), 4, axis=0)
    pattern, P = _distinct_rows(C)
    assert len(P) == 3
    assert_array_equal(P[pattern], C)
    # Rows that project alike but differ are never merged: a check, not the projection,
    # decides.
    C[5, 1] = np.nextafter(C[5, 1], 2.0)
    out = _distinct_rows(C)
    assert out is None or np.array_equal(out[1][out[0]], C)


def test_few_values_are_numpys_unique():
    # The distinct values of a vector and each entry's index among them, looked up from a
    # first block's values (values past the first block found by the misses), are
    # np.unique's; more than _MAX_PATTERNS values, or a value not finite, give None.
    from sklearn_ialm.problems import _full_evaluation as fe

    rng = np.random.default_rng(0)
    late = np.zeros(3 * fe._BLOCK_ROWS)
    late[-5:] = [3.0, -1.0, 3.0, 2.5, -7.0]  # none in the first block
    for a in (rng.integers(0, 7, 10_000) * 0.1, late, np.array([2.0]), rng.random(50)):
        values, index = fe._few_values(a)
        expected, inverse = np.unique(a, return_inverse=True)
        assert_array_equal(values, expected)
        assert_array_equal(index, np.ravel(inverse))
    assert fe._few_values(rng.random(fe._MAX_PATTERNS + 1)) is None
    assert fe._few_values(np.array([0.0, np.nan])) is None


def test_logistic_values_are_the_loss():
    # Against the loss from exact arithmetic's terms (log1p and exp of numbers of one
    # sign, each accurate to an ulp) and the package's np.logaddexp form, on margins of
    # both signs, zeros and overflow: within a few ulps, never a digit.
    from sklearn_ialm.problems._curvature import _logistic_values
    from sklearn_ialm.problems.losses import Logistic

    rng = np.random.default_rng(0)
    m = np.concatenate([rng.standard_normal(200_000) * 8, [0.0, -0.0, 800.0, -800.0, 1e-300]])
    got = _logistic_values(m, np.empty_like(m))
    ref = Logistic().value(m.copy())
    assert np.all(np.abs(got - ref) <= 4 * np.spacing(np.abs(ref)))
    assert got[-3] == 0.0 and got[-2] == 800.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_one_matrix_evaluation_with_patterns_holds_three_row_vectors():
    # With the constraint weights' distinct rows (a compiled read), beside the kept scores
    # and the objective's column, one n-vector: the loss, then the sigmoids in its array,
    # then their slopes in place. It held 4.0 n-vectors (the sigmoids and their slopes
    # apart) and the patterns' index as intp (a byte a row now), the peak of a CSR
    # 1e6 x 1e4 fit (benchmarks/results/memory.md).
    from sklearn_ialm.problems import _kernels

    rng = np.random.default_rng(5)
    X, s, y = _wide_rows(rng, 200_000, 2000, 10)
    groups = (s + rng.standard_normal(len(y)) > 0).astype(int)
    problem = fairness_problem(X, y, X, groups, bound=0.02, loss="logistic")
    x = rng.standard_normal(problem.n_params) * 0.1
    if not _kernels._compiled_csr(problem.A_obj.A):
        pytest.skip("needs numba (the compiled read of CSR rows)")
    assert problem._one_matrix_logistic()
    problem._one_matrix_evaluation(x)  # first call: caches (signed columns, patterns)
    pattern, _ = problem._row_patterns()
    assert pattern.dtype == np.uint8
    held = _n_vectors_at_peak(problem, problem._one_matrix_evaluation, x)
    assert held < 3.5, held


def test_weighted_products_and_slopes_are_numpys():
    # The fused product X.T @ (r * z) (no n-vector r * z) against scipy's, and the sigmoids'
    # slopes in place against numpy's, bit for bit.
    from sklearn_ialm.problems import _kernels
    from sklearn_ialm.problems._curvature import _sigmoid_slopes

    rng = np.random.default_rng(4)
    X, s, _ = _wide_rows(rng, 70_000, 300, 5)
    r, z = rng.random(X.shape[0]), rng.standard_normal(X.shape[0])
    if _kernels._compiled_csr(X):
        assert _kernels.csr_weighted_rmatvec(X, r, z).tobytes() == (X.T @ (r * z)).tobytes()
    p = 1.0 / (1.0 + np.exp(-s))
    expected = np.subtract(1.0, p) * p / 7.0
    assert _sigmoid_slopes(p.copy(), 7.0).tobytes() == expected.tobytes()
