"""The per-group threshold search of the group cuts (``estimators._group_cuts``) and the
band's group totals, against their definitions group by group: each group's scores in its
own order, each offset from its own scores, each total a masked sum."""

from __future__ import annotations

import numpy as np

from sklearn_ialm.estimators._group_cuts import _offsets_for, _sequences
from sklearn_ialm.problems._fairness_constraints import _exact_group_totals, _group_total


def _offset_of_one(z, m, positive):
    """The offset that leaves exactly the top ``m`` of ``z`` (highest first) positive."""
    if m == positive:
        return 0.0
    if m == 0:
        return float(-z[0] - max(1.0, abs(z[0])))
    if m == len(z):
        return float(-z[-1] + max(1.0, abs(z[-1])))
    return float(-0.5 * (z[m - 1] + z[m]))


def test_offsets_of_all_groups_are_each_groups_own_to_the_bit():
    rng = np.random.default_rng(0)
    for trial in range(300):
        sizes = rng.integers(1, 12, int(rng.integers(1, 30)))
        tops = np.full((len(sizes), sizes.max()), np.nan)
        rows = []
        for i, n in enumerate(sizes):
            z = np.sort(rng.standard_normal(n) * 10 ** rng.uniform(-2, 2))[::-1]
            z = np.round(z) if trial % 4 == 0 else z  # (ties, zeros, |z| <= 1)
            tops[i, :n] = z
            rows.append(z)
        positive = np.array([int(np.sum(z > 0)) for z in rows])
        m = np.array([int(rng.integers(0, n + 1)) for n in sizes])
        m = np.where(rng.random(len(m)) < 0.3, positive, m)
        got = _offsets_for(tops, m, positive, sizes)
        want = [
            _offset_of_one(z, int(k), int(p)) for z, k, p in zip(rows, m, positive, strict=True)
        ]
        assert got.tobytes() == np.array(want).tobytes(), trial


class _Band:
    """The parts of a band :func:`_sequences` reads: groups of ``sizes`` rows, two
    columns each (a rate against the level from below and from above)."""

    def __init__(self, sizes, rng):
        self.sizes = np.asarray(sizes)
        n = int(self.sizes.sum())
        self.rows = rng.permutation(n)
        self.cols = np.arange(2 * len(sizes)).reshape(-1, 2)
        self.slot = np.ones((len(sizes), 2), bool)
        self.own = np.repeat(1.0 / self.sizes, self.sizes)[:, None] * [1.0, -1.0]


class _Levels:
    def __init__(self, k):
        self.levels = np.tile([[-1.0], [1.0]], (k, 1))


def test_sequences_sort_each_group_highest_first_stably():
    """Each group's row of scores is its own rows' scores, highest first, ties in the order
    of the rows (a stable sort of each group alone), NaN past its end; the counts of
    positives are the group's own."""
    rng = np.random.default_rng(1)
    for trial in range(50):
        sizes = rng.integers(1, 9, int(rng.integers(3, 12)))
        band = _Band(sizes, rng)
        n = int(sizes.sum())
        scores = np.round(rng.standard_normal(n), 1 if trial % 2 else 8)
        block = np.arange(len(sizes))
        base = -0.05 * np.ones(2 * len(sizes))
        z, low, high, cost, positive = _sequences(_Levels(len(sizes)), band, block, scores, base)
        start = 0
        for i, size in enumerate(sizes):
            mine = band.rows[start : start + size]
            order = np.argsort(-scores[mine], kind="stable")
            assert np.array_equal(z[i, :size], scores[mine][order]), trial
            assert np.all(np.isnan(z[i, size:]))
            assert positive[i] == np.sum(scores[mine] > 0)
            assert np.all(np.isfinite(cost[i, : size + 1]))
            start += size


def test_whole_weights_give_each_groups_total_of_its_masked_sum():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 7, 500)
    cond = rng.random(500) < 0.6
    for weights in (np.ones(500), rng.integers(1, 5, 500).astype(float)):
        for c in (None, cond):
            totals = _exact_group_totals(weights, codes, 7, c)
            for g in range(7):
                mask = (codes == g) if c is None else (codes == g) & c
                assert _group_total(weights, mask, g, "rate", "kind") == totals[g]
    # Fractional weights round in another order: no totals, the masked sums decide.
    assert _exact_group_totals(rng.random(500), codes, 7, None) is None


def test_median_of_counts_is_numpys_median_of_the_rows_numbers():
    """Each row's median of its values repeated by their counts, as ``np.median`` of the
    row written out: rows held by one value over half their numbers (read without a sort)
    and the others alike, signed zeros included."""
    from sklearn_ialm.estimators._band_parts import _median_of_counts

    rng = np.random.default_rng(3)
    for trial in range(300):
        n, w = int(rng.integers(1, 30)), int(rng.integers(1, 6))
        values = np.round(rng.standard_normal((n, w)), 1)
        if trial % 2:
            values[:, 1:] = values[:, :1]
        values[rng.random((n, w)) < 0.2] = -0.0 if trial % 3 else 0.0
        counts = rng.integers(0, 9, (n, w))
        m = int(counts.sum(axis=1).max())
        counts[:, 0] += m - counts.sum(axis=1)
        got = _median_of_counts(values, counts, m)
        want = [np.median(np.repeat(v, c)) for v, c in zip(values, counts, strict=True)]
        np.testing.assert_array_equal(got, want)
