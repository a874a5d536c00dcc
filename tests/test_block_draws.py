"""Window draws (benchmarks/block_draws.py): uniform marginals, and which penalty estimator
stays unbiased on them."""

import numpy as np
import pytest

from benchmarks.block_draws import cross_window_penalty, window_draws


def test_each_row_is_drawn_with_probability_one_over_n():
    n, window, size, draws = 50, 8, 30, 20_000
    rng = np.random.default_rng(0)
    counts = np.array(
        [np.bincount(window_draws(rng, n, size, window), minlength=n) for _ in range(draws)]
    )
    # Draws within a window are dependent: the error bar is the spread over windows.
    freq = counts.mean(axis=0) / size
    se = counts.std(axis=0) / np.sqrt(draws) / size
    assert np.all(np.abs(freq - 1 / n) < 5 * se)
    # And exactly: over the n starts and window offsets every row appears window times.
    starts, offsets = np.meshgrid(np.arange(n), np.arange(window))
    exact = np.bincount(((starts + offsets) % n).ravel(), minlength=n)
    np.testing.assert_array_equal(exact, window)


def _ordered_rows(n=40, m=2, p=3, seed=0):
    # Rows whose values drift with their position: neighbours are alike, as in sorted data.
    rng = np.random.default_rng(seed)
    t = np.linspace(-1, 1, n)
    J = t[:, None, None] * rng.standard_normal((1, m, p)) + 0.1 * rng.standard_normal((n, m, p))
    K = t[:, None] * rng.standard_normal((1, m)) + 0.1 * rng.standard_normal((n, m))
    return J, K


def _all_pairs(J, K, rows):
    b = len(rows)
    Js, Ks = J[rows], K[rows]
    total = np.einsum("imp,jm->p", Js, Ks) - np.einsum("imp,im->p", Js, Ks)
    return total / (b * (b - 1))


@pytest.mark.slow
def test_cross_window_penalty_is_unbiased_and_all_pairs_in_one_window_is_not():
    J, K = _ordered_rows()
    n, window, b, reps = len(K), 6, 10, 40_000
    truth = np.einsum("mp,m->p", J.mean(axis=0), K.mean(axis=0))
    rng = np.random.default_rng(1)
    cross, within = [], []
    for _ in range(reps):
        rows_a = window_draws(rng, n, b // 2, window)
        rows_b = window_draws(rng, n, b - b // 2, window)
        cross.append(cross_window_penalty(J, K, rows_a, rows_b))
        within.append(_all_pairs(J, K, window_draws(rng, n, b, window)))
    cross, within = np.array(cross), np.array(within)
    se_cross = cross.std(axis=0) / np.sqrt(reps)
    se_within = within.std(axis=0) / np.sqrt(reps)
    assert np.all(np.abs(cross.mean(axis=0) - truth) < 4 * se_cross)
    assert np.max(np.abs(within.mean(axis=0) - truth) / se_within) > 10
    # On uniform i.i.d. draws the all-pairs U-statistic is unbiased (the solver's default).
    iid = np.array([_all_pairs(J, K, rng.integers(n, size=b)) for _ in range(reps)])
    assert np.all(np.abs(iid.mean(axis=0) - truth) < 4 * iid.std(axis=0) / np.sqrt(reps))
