"""A band over many groups evaluated through ``W``'s structure (group codes and the band's
overall term, ``problems._grouped_weights``) gives the dense ``W``'s values to rounding."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ialm.problems import fairness_problem


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize(
    "kind", ["demographic_parity", "true_positive_rate_parity", "error_rate_parity"]
)
def test_grouped_evaluation_is_the_dense_one(kind, form, sparse):
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.standard_normal((n, 6))
    y = (X[:, 0] + rng.logistic(size=n) > 0).astype(int)
    g = rng.integers(0, 12, n)
    A = sp.csr_matrix(X) if sparse else X
    problem = fairness_problem(
        A, y, A, g, bound=0.1 if form == "difference" else 0.8, constraint=kind, form=form,
        loss="logistic", fit_intercept=True, feature_scale="auto",
        constraint_sample_weight=rng.uniform(0.5, 2.0, n), constraint_scale=0.5,
    )  # fmt: skip
    assert problem.weight_groups is not None
    x = rng.standard_normal(problem.n_params) * 0.3
    got = problem.full_evaluation(x)
    problem.weight_groups = None
    want = problem.full_evaluation(x)
    eye = np.eye(problem.n_constraints)
    for a, b in zip(got[:3], want[:3], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[3](eye), want[3](eye), rtol=1e-12, atol=1e-14)


def test_two_rates_and_pairs_keep_the_dense_weights():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 3))
    y = rng.integers(0, 2, 400)
    eo = fairness_problem(X, y, X, rng.integers(0, 5, 400), bound=0.1, constraint="equalized_odds")
    pairs = fairness_problem(X, y, X, rng.integers(0, 2, 400), bound=0.1,
                             constraint="demographic_parity")  # fmt: skip
    assert eo.weight_groups is None and pairs.weight_groups is None


def test_compiled_group_products_give_scipys_evaluation_bit_for_bit(monkeypatch):
    """The grouped evaluation of CSR rows reads them once, compiled (``A.T r``, ``E A`` and
    ``A.T dp``): the same bits as scipy's three products (each sums an entry's terms row
    after row)."""
    from sklearn_ialm.problems import _kernels

    if not _kernels.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(2)
    n = 1500
    X = sp.random(n, 30, density=0.2, format="csr", random_state=3) * 4.0
    y = (X @ rng.standard_normal(30) + rng.logistic(size=n) > 0).astype(int)
    g = rng.integers(0, 40, n)
    problem = fairness_problem(
        X, y, X, g, bound=0.1, constraint="demographic_parity", loss="logistic",
        fit_intercept=True, feature_scale="auto",
    )  # fmt: skip
    assert problem.weight_groups is not None and sp.issparse(problem.A_obj.A)
    x = rng.standard_normal(problem.n_params) * 0.3
    got = problem.second_order_evaluation(x)
    monkeypatch.setattr(_kernels, "csr_group_products", lambda *args: None)
    want = problem.second_order_evaluation(x)
    for a, b in zip(got[:4], want[:4], strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize(
    "kind",
    ["demographic_parity", "true_positive_rate_parity", "equalized_odds", "error_rate_parity"],
)
def test_band_weights_are_those_of_a_column_at_a_time(kind, form, monkeypatch):
    """``W`` of a band, filled a block of rows at a time with every column at once, holds
    the numbers of its columns' formula taken one column at a time, signed zeros included
    (rows of weight 0, and rows outside a rate's class)."""
    from sklearn_ialm.problems import _fairness_constraints as fc
    from sklearn_ialm.problems._fairness_kinds import _PARITY_RATES, _rate_terms

    monkeypatch.setattr(fc, "_BLOCK_ROWS", 700)
    rng = np.random.default_rng(0)
    n, bound = 2000, 0.1 if form == "difference" else 0.8
    g, y = rng.integers(0, 9, n), rng.random(n) < 0.4
    w = rng.uniform(0.1, 3.0, n)
    w[rng.random(n) < 0.1] = 0.0
    columns, offsets, _, _, _ = fc._level_rows(g, w, kind, form, bound, y)
    W = fc._fill_weights(n, columns, len(offsets), 1.0)
    kappa = 1.0 if form == "difference" else 2.0 / (1.0 + bound)
    sides = (
        [(1.0, -1.0), (-1.0, 1.0)]
        if form == "difference"
        else [(1.0, -kappa), (-1.0, bound * kappa)]
    )
    want = []
    for rate in _PARITY_RATES[kind]:
        cond, _, s = _rate_terms(rate, y)
        rows = 1.0 if cond is None else cond
        lin = n * w * rows * s / np.sum(w * (np.ones(n, bool) if cond is None else cond))
        for k in range(9):
            m = g == k if cond is None else (g == k) & cond
            for a, b in sides:
                want.append(a * (n * w * m * s / float(w @ m)) + b * lin)
    np.testing.assert_array_equal(W.view(np.int64), np.column_stack(want).view(np.int64))


@pytest.mark.parametrize("kind", ["demographic_parity", "equalized_odds", "error_rate_parity"])
def test_group_masks_one_at_a_time_pose_the_same_band(kind, monkeypatch):
    # Past _MASK_CELLS the groups' masks are formed one at a time, not as one matrix (1e6
    # rows of 100 groups would hold 100 MB): the same constraints, to the bit.
    from sklearn_ialm.problems import _fairness_constraints

    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 4))
    y = (X[:, 0] + rng.standard_normal(600) > 0).astype(int)
    groups = rng.integers(0, 12, size=600)
    w = rng.uniform(0.5, 2.0, size=600)

    def posed():
        p = fairness_problem(
            X, y, X, groups, bound=0.1, constraint=kind, constraint_sample_weight=w
        )
        return p.W, p.offset

    W, offset = posed()
    monkeypatch.setattr(_fairness_constraints, "_MASK_CELLS", 0)
    W0, offset0 = posed()
    np.testing.assert_array_equal(W0, W)
    np.testing.assert_array_equal(offset0, offset)


@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", ["demographic_parity", "error_rate_parity"])
def test_rates_and_curvature_weights_read_the_structure_not_w(kind, form):
    """A band over many groups takes its rates on predictions and soft predictions and its
    constraint curvature's row weights from ``W``'s structure (as its evaluations do): the
    dense products' values to rounding, with ``W`` itself never read."""
    rng = np.random.default_rng(4)
    n = 2000
    X = rng.standard_normal((n, 5))
    y = (X[:, 0] + rng.logistic(size=n) > 0).astype(int)
    problem = fairness_problem(
        X, y, X, rng.integers(0, 9, n), bound=0.1 if form == "difference" else 0.8,
        constraint=kind, form=form, constraint_sample_weight=rng.uniform(0.5, 2.0, n),
        constraint_scale=0.5,
    )  # fmt: skip
    assert problem.weight_groups is not None
    x = rng.standard_normal(problem.n_params) * 0.3
    scores = problem.constraint_scores(x)
    mu = rng.uniform(0.0, 2.0, problem.n_constraints)
    W = problem.W
    want = [(scores > 0) @ W / n, 1.0 / (1.0 + np.exp(-scores)) @ W / n]
    p = 1.0 / (1.0 + np.exp(-scores))
    want_curv = p * (1 - p) * (1 - 2 * p) * (W @ mu) / n
    problem.W = np.full_like(W, np.nan)  # (read, it would make every value NaN)
    got = [problem.rate_constraints(scores, offset=0.0),
           problem.rate_constraints(scores, hard=False, offset=0.0)]  # fmt: skip
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    got_curv = problem._constraint_curvature(scores, slice(None), mu)
    np.testing.assert_allclose(got_curv, want_curv, rtol=1e-10, atol=1e-15)
    sel = rng.choice(n, 300, replace=False)
    np.testing.assert_allclose(
        problem._constraint_curvature(scores[sel], sel, mu), want_curv[sel], rtol=1e-10,
        atol=1e-15,
    )  # fmt: skip
