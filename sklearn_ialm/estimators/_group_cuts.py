"""A threshold of each group's own, folded into the coefficient of its column of ``X``.

Where the groups' indicators are columns of ``X`` (one-hot groups, or a column that takes one
value on a group's rows and another on every other row), the model class holds a score
offset per group: the column's coefficient. A parity bound over many small groups may then
be out of reach of the smooth surrogate (groups of 8-19 rows: soft rates 0.036 apart while
the predictions' rates stay 0.38 apart) and yet within reach of a per-group threshold on the
scores of a solve. :func:`group_cut` finds the per-group thresholds that meet the bound on
predictions while flipping the fewest, least confident predictions, and folds them into the
group columns' coefficients (no data pass: the scores move by a constant per group).

Only a parity band (one free level, every constraint a group's rate against that level) of
three groups or more is cut; the model of two groups is left to the steering.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..problems._numeric import BOUND_EPS

__all__ = ["group_cut", "group_layout"]

#: How far inside each bound the cut's rates are held (see :func:`group_cut`).
INSIDE = 1e-9

#: Entries of the search over the level (candidate levels x (groups' rows + groups)) read at
#: once; more candidate levels than fit this are thinned to evenly spaced quantiles.
_SEARCH_CELLS = 2**22

#: Entries of the constraint rows' columns read at once in the search for the group columns.
_COLUMN_CELLS = 2**20


def group_cut(problem, units, groups, x, scores, base, layout=None):
    """``(x, scores)`` of the model ``x`` with one score offset per group of the parity band,
    folded into the coefficients of the group columns, that meets every bound on predictions
    (the constraint offsets ``base``); None where the problem is not such a band of three
    groups or more, a group has no column, or no offsets meet the bound.

    ``groups``: the group code of each constraint row; ``scores``: the constraint rows'
    scores at ``x`` (an ndarray); ``layout``: :func:`group_layout`'s, where the caller has it.
    """
    if not isinstance(scores, np.ndarray) or groups is None or len(groups) != len(scores):
        return None  # (rows on a cluster: not cut)
    layout = group_layout(problem, units, groups) if layout is None else layout
    if layout is None:
        return None
    parts, columns = layout
    # Rates that meet a bound exactly (a gap of 2/20 at 0.1) are met by a hair inside it:
    # fairlearn's difference of two such rates can round above the bound (1.0000000000000003e-1).
    base = base + INSIDE
    shifts = _level_search(problem, parts, groups, scores, base)
    if shifts is None:
        return None
    moved = _fold(problem, x, shifts, columns, groups)
    if moved is None:
        return None
    z = problem.constraint_scores(moved)
    if not np.all(units.values(problem.rate_constraints(z, offset=base)) <= BOUND_EPS):
        return None  # (rounding: a row on its group's threshold)
    return moved, z


def group_layout(problem, units, groups, bound_tol=None):
    """``(parts, columns)`` of a parity band of three groups or more whose groups are columns
    of the constraint rows (:func:`_own_parts`, :func:`_group_columns`), what each
    :func:`group_cut` of the problem reads; None where it is not such a band. With
    ``bound_tol``, None also where a row moves some group's constrained rate by
    ``bound_tol`` or less: where one row moves every group's rate by more, the groups' counts
    of positive predictions, not their soft rates, decide where the band ends, and moving
    the surrogate's bounds lands within ``bound_tol`` by chance only."""
    if groups is None or len(groups) != problem.n_constraint_samples:
        return None
    parts = _own_parts(problem, units, groups)
    if parts is None:
        return None
    if bound_tol is not None:
        for g, (_, own) in parts.items():
            step = np.max(np.abs(own[groups == g]), axis=1) / len(groups)
            if not np.min(step[step > 0], initial=np.inf) > bound_tol:  # (rows of weight 0)
                return None
    columns = _group_columns(problem, groups, list(parts))
    return None if columns is None else (parts, columns)


def _own_parts(problem, units, groups):
    """Per group code of the band, ``(band columns, their rows' own weights)``: each band
    constraint's weights less the part common to every group (a multiple of its level's
    coefficient, the overall rate, which the free level absorbs); None where the problem is
    not one band of three groups or more with a group of its own per constraint."""
    W = problem.W
    if units.n_bands != 1 or len(units.free) or not isinstance(W, np.ndarray):
        return None
    cols = units.members[0]
    if len(cols) < 6:
        return None
    lev = problem.levels[cols, 0]
    R = W[:, cols] / lev
    common = np.median(R, axis=1)
    R -= common[:, None]
    own = np.abs(R) > 1e-9 * max(float(np.max(np.abs(W[:, cols]))), 1.0)
    parts = {}
    for c in range(len(cols)):
        codes = np.unique(groups[own[:, c]])
        if len(codes) != 1:
            return None
        parts.setdefault(int(codes[0]), []).append(c)
    if len(parts) < 3:
        return None
    return {g: (cols[c], R[:, c] * lev[c]) for g, c in _arrays(parts)}


def _arrays(parts):
    """``(key, ndarray of the list)`` of each item of ``parts``."""
    return ((g, np.array(c)) for g, c in parts.items())


def _level_search(problem, parts, groups, scores, base):
    """Per group code, the score offset that puts the predictions where, at the best level,
    every band constraint holds with the least sum of ``|score|`` over the predictions
    flipped; None where no level and offsets meet every constraint."""
    n = len(scores)
    lev = problem.levels[:, 0]
    lows, highs, costs, starts, cuts = [], [], [], [], {}
    for g, (cols, own) in parts.items():
        rows = np.flatnonzero(groups == g)
        order = rows[np.argsort(-scores[rows], kind="stable")]
        z = scores[order]
        # Constraint values with the top m rows of the group positive, m = 0 .. n_g.
        values = base[cols] + np.vstack([np.zeros(len(cols)), np.cumsum(own[order], axis=0) / n])
        up, down = lev[cols] < 0, lev[cols] > 0
        low = np.max(values[:, up] / -lev[cols][up], axis=1, initial=-np.inf)
        high = np.min(values[:, down] / -lev[cols][down], axis=1, initial=np.inf)
        ties = np.concatenate([[False], z[1:] == z[:-1], [False]])  # m would split equal scores
        low[ties] = np.inf
        flipped = np.concatenate([[0.0], np.cumsum(np.abs(z))])
        costs.append(np.abs(flipped - flipped[int(np.sum(z > 0))]))
        starts.append(sum(len(c) for c in costs[:-1]))
        lows.append(low)
        highs.append(high)
        cuts[g] = z
    low, high, cost = np.concatenate(lows), np.concatenate(highs), np.concatenate(costs)
    level = _best_level(low, high, cost, np.array(starts))
    if level is None:
        return None
    shifts = {}
    for (g, z), s, c in zip(cuts.items(), starts, costs, strict=True):
        ok = (low[s : s + len(c)] <= level) & (high[s : s + len(c)] >= level)
        m = int(np.argmin(np.where(ok, c, np.inf)))
        shifts[g] = _offset_for(z, m)
    return shifts


def _best_level(low, high, cost, starts):
    """The level, among the ends of the groups' intervals, where every group has a count of
    positives within its interval, with the least sum of the groups' least costs."""
    ends = np.unique(np.concatenate([low, high]))
    ends = ends[np.isfinite(ends)]
    if not len(ends):
        return None
    most = max(1, _SEARCH_CELLS // len(cost))
    if len(ends) > most:
        ends = np.quantile(ends, np.linspace(0.0, 1.0, most), method="nearest")
    best, level = np.inf, None
    step = max(1, most // 8)
    for i in range(0, len(ends), step):
        t = ends[i : i + step, None]
        total = np.where((low <= t) & (high >= t), cost, np.inf)
        total = np.minimum.reduceat(total, starts, axis=1).sum(axis=1)
        k = int(np.argmin(total))
        if total[k] < best:
            best, level = float(total[k]), float(t[k, 0])
    return level


def _offset_for(z, m):
    """The score offset that leaves exactly the top ``m`` of the scores ``z`` (sorted, the
    highest first) positive: halfway between two scores, 0 where they already are."""
    if m == int(np.sum(z > 0)):
        return 0.0
    if m == 0:
        return float(-z[0] - max(1.0, abs(z[0])))
    if m == len(z):
        return float(-z[-1] + max(1.0, abs(z[-1])))
    return float(-0.5 * (z[m - 1] + z[m]))


def _group_columns(problem, groups, codes):
    """Per group code, ``(column, value on the group, value elsewhere)`` of a column of the
    constraint rows that takes one value on the group's rows and another on every other row
    (the first such column); one group may have none (the intercept then carries its
    offset, see :func:`_fold`); None where more have none."""
    A, rows = getattr(problem.A_con, "A", None), getattr(problem.A_con, "rows", None)
    if sp.issparse(A):
        A = A.tocsc()
    elif not isinstance(A, np.ndarray):
        return None
    codes = list(codes)
    member = np.full(len(groups), -1)  # each row's index in codes, -1 for none
    for i, g in enumerate(codes):
        member[groups == g] = i
    sizes = np.bincount(member[member >= 0], minlength=len(codes))
    found = {}
    # Columns a block at a time: one column at a time, the slices of a CSC matrix took 0.1 s
    # of a 0.26 s fit (100 groups of 20 rows, 110 columns).
    step = max(1, _COLUMN_CELLS // max(len(groups), 1))
    for start in range(0, A.shape[1], step):
        cells = A[:, start : start + step]
        cells = cells.toarray() if sp.issparse(cells) else np.asarray(cells)
        cells = cells if rows is None else cells[rows]
        ends = _one_group_columns(cells, member, sizes)
        for j, choices in enumerate(ends, start=start):
            for i, on, off in choices:
                if codes[i] not in found:
                    found[codes[i]] = (j, on, off)
                    break
        if len(found) == len(codes):
            break
    missing = [g for g in codes if g not in found]
    if len(missing) > 1 or (missing and not _all_in(groups, codes, problem)):
        return None
    return found


def _one_group_columns(cells, member, sizes):
    """Per column of ``cells`` (constraint rows by columns), its ``(code index, value on the
    group, value elsewhere)`` where it takes one value on exactly that group's rows and
    another on every other row: with the higher value on the group first, then the lower."""
    lo, hi = cells.min(axis=0), cells.max(axis=0)
    two = (lo != hi) & np.all((cells == lo) | (cells == hi), axis=0)
    out = [[] for _ in range(cells.shape[1])]
    for on, off in ((hi, lo), (lo, hi)):
        at = cells == on
        first = member[np.argmax(at, axis=0)]  # the group of the first row at that value
        count = at.sum(axis=0)
        same = np.sum(at & (member[:, None] == first), axis=0)
        whole = two & (first >= 0) & (count == sizes[first]) & (same == count)
        for j in np.flatnonzero(whole):
            out[j].append((int(first[j]), float(on[j]), float(off[j])))
    return out


def _all_in(groups, codes, problem):
    """Whether every constraint row is in a group of ``codes`` and the model has an
    intercept (the offset of a group without a column is then the intercept's)."""
    return problem.fit_intercept and bool(np.all(np.isin(groups, codes)))


def _fold(problem, x, shifts, columns, groups):
    """The point ``x`` with each group's score offset ``shifts[g]`` in its column's
    coefficient (the column's value elsewhere taken off the intercept); a group without a
    column takes its offset from the intercept, the others less it. None where an offset
    needs an intercept the model does not have."""
    coef, intercept = problem.coef(x)
    rest = [g for g in shifts if g not in columns]
    common = shifts[rest[0]] if rest else 0.0
    intercept += common
    for g, (j, on, off) in columns.items():
        step = (shifts.get(g, 0.0) - common) / (on - off)
        coef[j] += step
        intercept -= step * off
        if off != 0.0 and step != 0.0 and not problem.fit_intercept:
            return None
    return problem.point(coef, intercept)
