"""The groups' own parts of a parity band's weights read from the band's structure (see
:func:`~._group_cuts._own_parts`, whose dense reading of every entry it spares).

A band posed by its structure (:func:`~sklearn_ialm.problems._fairness_constraints._level_rows`,
``problem.weight_groups``) gives each group two constraints, and each row the weight ``b *
lin`` of its row off its own group's two columns: within a class of columns of one ``b`` and
one level's coefficient, one number a row. The row's median over the band is then an order
statistic of a few numbers with their counts, and its own parts are those of its group's two
columns: a read of a few entries a row and one comparison of ``W`` with the numbers the
structure gives, where the dense reading takes a quotient, a partition and comparisons of
every entry (100 groups of 20 rows: 7 ms of a 0.08 s fit).
"""

from __future__ import annotations

import numpy as np


def structured_owners(problem, W, lev, tiny, groups):
    """``(code, med)`` of :func:`~._group_cuts._owners` (each column's group and each row's
    median of ``W / lev``, the same numbers) read from the band's structure, or None where
    ``W`` (all of ``problem.W``'s columns) is not as the structure gives it, or any check of
    the dense reading would fail there (that reading then decides)."""
    wg = getattr(problem, "weight_groups", None)
    n, m = W.shape
    if wg is None or W is not problem.W or len(wg.codes) != n or len(wg.col_group) != m:
        return None
    codes, group = wg.codes, wg.col_group
    if not np.all(np.bincount(group) == 2):
        return None
    pairs = np.argsort(group, kind="stable").reshape(-1, 2)  # each group's two columns
    # The classes of columns whose entries off a row's own group are one number a row.
    key = np.column_stack([wg.col_b, lev, np.sign(wg.col_a)])
    _, cls = np.unique(key, axis=0, return_inverse=True)
    cls = cls.reshape(-1)
    rows = np.arange(n)
    own_cols = pairs[codes]  # (n, 2)
    reps, counts = [], []
    for t in range(cls.max() + 1):
        members = np.flatnonzero(cls == t)
        # A member of another group than the row's (the second where the first is its own).
        rep = np.where(group[members[0]] == codes, members[-1], members[0])
        reps.append(rep)
        counts.append(len(members) - np.sum(cls[own_cols] == t, axis=1))
    reps, counts = np.column_stack(reps), np.column_stack(counts)
    if np.any((counts > 0) & (group[reps] == codes[:, None])):
        return None  # (a class of one column: the row's own)
    at_reps, at_own = W[rows[:, None], reps], W[rows[:, None], own_cols]
    expected = np.take(at_reps, cls, axis=1)  # (C-ordered as W: compared at its pace)
    expected[rows[:, None], own_cols] = at_own
    if not np.array_equal(expected, W):
        return None
    values = np.column_stack([at_reps / lev[reps], at_own / lev[own_cols]])
    med = _median_of_counts(values, np.column_stack([counts, np.ones((n, 2), int)]), m)
    off = values[:, : reps.shape[1]] - med[:, None]
    if np.any((counts > 0) & (np.abs(off) > tiny)):
        return None  # (an own part off the group's columns)
    own = np.abs(values[:, reps.shape[1] :] - med[:, None]) > tiny
    first = np.full(m, n)
    for s in (0, 1):
        np.minimum.at(first, own_cols[:, s], np.where(own[:, s], rows, n))
    if np.any(first == n):
        return None  # (a column without an own row)
    code = groups[first]
    if np.any(own & (groups[:, None] != code[own_cols])):
        return None
    return code, med


def _median_of_counts(values, counts, m):
    """Each row's median of ``m`` numbers, ``values`` with their ``counts`` (a row each):
    its order statistics as ``np.partition`` finds them, and the mean of the middle two as
    ``np.median`` forms it where ``m`` is even.

    A value held by more than half of a row's numbers fills its middle: the median is that
    value (the mean of it with itself where ``m`` is even), read without sorting the row
    (a band's row holds one number off its own group's columns: 2000 rows' sorts took
    0.3 ms of a 30 ms fit of 100 groups). Other rows, and a held value of 0 (whose sign
    the sort's order decides), are sorted."""
    held = np.zeros(values.shape, dtype=counts.dtype)
    for k in range(values.shape[1]):
        held += counts[:, k, None] * (values[:, k, None] == values)
    major = 2 * held > m
    rows = np.arange(len(values))
    v = values[rows, np.argmax(major, axis=1)]
    done = np.any(major, axis=1) & (v != 0)
    out = np.empty(len(values))
    out[done] = v[done] if m % 2 else (v[done] + v[done]) / 2
    if not np.all(done):
        out[~done] = _sorted_median(values[~done], counts[~done], m)
    return out


def _sorted_median(values, counts, m):
    """:func:`_median_of_counts` of rows by sorting each."""
    order = np.argsort(values, axis=1, kind="stable")
    values = np.take_along_axis(values, order, axis=1)
    ends = np.cumsum(np.take_along_axis(counts, order, axis=1), axis=1)
    rows, h = np.arange(len(values)), m // 2

    def at(i):
        return values[rows, np.sum(ends <= i, axis=1)]

    return at(h) if m % 2 else (at(h - 1) + at(h)) / 2
