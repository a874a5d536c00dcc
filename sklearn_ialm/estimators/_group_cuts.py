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

__all__ = ["group_cut"]

#: How far inside each bound the cut's rates are held (see :func:`group_cut`).
INSIDE = 1e-9

#: Entries of the search over the level (candidate levels x (groups' rows + groups)) read at
#: once; more candidate levels than fit this are thinned to evenly spaced quantiles.
_SEARCH_CELLS = 2**22


def group_cut(problem, units, groups, x, scores, base):
    """``(x, scores)`` of the model ``x`` with one score offset per group of the parity band,
    folded into the coefficients of the group columns, that meets every bound on predictions
    (the constraint offsets ``base``); None where the problem is not such a band of three
    groups or more, a group has no column, or no offsets meet the bound.

    ``groups``: the group code of each constraint row; ``scores``: the constraint rows'
    scores at ``x`` (an ndarray).
    """
    if not isinstance(scores, np.ndarray) or groups is None or len(groups) != len(scores):
        return None  # (rows on a cluster: not cut)
    parts = _own_parts(problem, units, groups)
    if parts is None:
        return None
    columns = _group_columns(problem, groups, list(parts))
    if columns is None:
        return None
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
    constraint rows that takes one value on the group's rows and another on every other row;
    one group may have none (the intercept then carries its offset, see :func:`_fold`);
    None where more have none."""
    A, rows = getattr(problem.A_con, "A", None), getattr(problem.A_con, "rows", None)
    if sp.issparse(A):
        A = A.tocsc()
    elif not isinstance(A, np.ndarray):
        return None
    sizes = {g: int(np.sum(groups == g)) for g in codes}
    found = {}
    for j in range(A.shape[1]):
        v = A[:, j].toarray().ravel() if sp.issparse(A) else A[:, j]
        v = v if rows is None else v[rows]
        lo, hi = v.min(), v.max()
        if lo == hi or not np.all((v == lo) | (v == hi)):
            continue
        for on, off in ((hi, lo), (lo, hi)):
            at = v == on
            g = int(groups[np.argmax(at)])
            whole = g in sizes and np.sum(at) == sizes[g] and np.all(groups[at] == g)
            if whole and g not in found:
                found[g] = (j, float(on), float(off))
                break
        if len(found) == len(codes):
            break
    missing = [g for g in codes if g not in found]
    if len(missing) > 1 or (missing and not _all_in(groups, codes, problem)):
        return None
    return found


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
