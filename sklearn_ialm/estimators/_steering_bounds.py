"""Where the steering puts the surrogate's bounds for its next solve: a secant step per
unit (:func:`_move_bounds`) within the cap of each unit's shift (:func:`_shift_cap`), or a
point on the path through the last two solves (:func:`_path_step`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..problems._numeric import BOUND_EPS
from ._hard_rates import _rescored, _secant_slope
from ._segment_sweep import _segment_point


def _constant_meets(units, column_means, base):
    """Whether both constant models (every prediction 0, every prediction 1) meet every
    unit's bound: the constraints' values are then ``base`` and ``column_means + base``."""
    return bool(
        np.all(units.values(base) <= BOUND_EPS)
        and np.all(units.values(column_means + base) <= BOUND_EPS)
    )


#: How far each unit's shift may go towards perfect parity (see :func:`_shift_cap`): nine
#: tenths, then, for a unit whose solve at that cap still missed, 99 in 100.
_CAP_SHARES = (0.9, 0.99)


def _shift_cap(column_means, units, scores, base, depth, shares=_CAP_SHARES, proba=None):
    """The largest shift each unit can take: ``_CAP_SHARES[depth]`` of the way to the value
    its constraints have at equal soft predictions ``q`` for every row (perfect parity at the
    current overall rate), ``q * column_means + base``. A surrogate's bound tightened past
    that asks for a gap below zero, a band of negative width: no model meets it (it was seen
    to stall a fit at its primal residual).

    A band of differences (its upper and lower constraints move alike with its level) has
    the same value at parity at every rate; it is read at ``q = 1/2``, where error rates are
    equal too (every row is wrong half the time). At the current rate a constant model's
    error rates are the groups' base rates, apart: read there, the cap of error-rate parity
    was zero, and the steering could not tighten its surrogate at all (Adult by race, 0.05).
    ``proba``: ``expit(scores)`` where already computed.
    """
    mean = getattr(scores, "mean_probability", None)  # scores on a cluster: from their pass
    if mean is not None:
        q = float(mean())
    else:
        q = float(np.mean(expit(scores) if proba is None else proba))
    at_rate = units.values(q * column_means + base)
    half = units.differences()
    if np.any(half):
        at_rate[half] = units.values(0.5 * column_means + base)[half]
    share = np.asarray(shares)[depth]
    return share * np.maximum(-at_rate, 0.0)


def _deepen(units, column_means, base, capped, missing, depth):
    """The units whose cap goes one step deeper (see ``_CAP_SHARES``): those that missed at
    their cap, where the value at parity is the same at every overall rate (a gap between
    rates; not a ratio nor a false-positive rate), so that the deeper cap cannot leave a
    band of negative width when the overall rate moves."""
    flat = np.abs(units.values(column_means + base) - units.values(base)) <= BOUND_EPS
    return capped & missing & flat & (depth < len(_CAP_SHARES) - 1)


def _given(proba):
    """The keyword that passes soft predictions ``proba`` to ``rate_constraints`` (none
    where they are not at hand: scores on a cluster, whose problem takes no such keyword)."""
    return {} if proba is None else {"proba": proba}


def _column_means(problem, scores):
    """The mean of each constraint's row weights: its value at predictions all 1, less its
    offset (one product with the weights, once; an array like the scores, in memory or on
    Dask workers)."""
    ones = getattr(scores, "ones_like", None)  # on a cluster: from the scores' pass
    ones = scores * 0.0 + 1.0 if ones is None else ones()
    return problem.rate_constraints(ones) - problem.offset


def _move_bounds(
    problem, units, scores, hard, active, base, column_means, shift, capped, misses, trace,
    bound_tol, depth,
):  # fmt: skip
    """The next solve's bounds: each unit that misses its bound on predictions (or leaves
    it unused while active) has its ``shift`` moved by a secant step, in place (with
    ``capped`` and its ``trace``); returns the count of misses in a row per unit."""
    # A unit already shifted that misses again aims twice as deep each time: a solve
    # meets its soft bound only to within tol, so a hard value aimed at the middle of a
    # band narrower than that can miss on every solve (3 groups, error rates 0.02: eight
    # solves, all 0.0006-0.012 over). One solve on the feasible side is enough: the
    # segment between the two sides then brings the model back to the bound.
    misses = np.where((shift != 0) & (hard > BOUND_EPS), misses + 1, 0)
    # The secant relates each hard value to the soft value the solve reached (with the
    # base offset), not to the shift asked for: a solve that ends inside its soft bound
    # moved the hard value less than its shift, and a secant on the shift would read
    # that as a flat relation and overshoot (e.g. ask for the reverse gap: infeasible).
    # The soft predictions once, for both (in memory; 0.03 s each on 5e6 rows).
    proba = expit(scores) if isinstance(scores, np.ndarray) else None
    soft = problem.rate_constraints(scores, hard=False, offset=base, **_given(proba))
    soft = units.values(soft)
    cap = _shift_cap(column_means, units, scores, base, depth, proba=proba)
    # A band of differences that leaves its bound unused is loosened only once no unit
    # misses: the bands share the model, and loosening one moved the others away from their
    # bounds (Adult by race, equalized odds 0.05: the false-positive-rate band loosened by
    # 0.0022 while the true-positive-rate band missed by 0.0139, which then missed by
    # 0.0175, a solve spent for nothing). Not a ratio's side: the two sides of one ratio
    # are units of their own, and loosening the one unused is how the other's rate moves
    # (two groups, a false-positive-rate ratio: held, no solve met the bound).
    held = units.differences() & np.any(hard > BOUND_EPS)
    loosen = active & (hard < -bound_tol) & ~held
    for k in range(len(units)):
        if not (hard[k] > BOUND_EPS or loosen[k]):
            continue
        # The hard value falls about as much as the soft value does.
        trace[k].append((soft[k], hard[k]))
        slope = _secant_slope(trace[k], 1.0, 0.25, 4.0)
        # The next solve's soft bound binds where the hard value should reach target.
        target = -0.5 * bound_tol * 2.0 ** misses[k]
        proposal = (hard[k] - target) / slope - soft[k]
        if misses[k]:
            # Missed again: at least as much deeper as it missed by, whatever the secant.
            proposal = max(proposal, shift[k] + hard[k] - target)
        capped[k] = proposal >= cap[k]
        shift[k] = min(proposal, cap[k])
    return misses


#: How near to parity a path step (:func:`_path_step`) may take a unit's surrogate bound:
#: its shift is read off the hard values the path predicts, not guessed, so it may go
#: further than the steps of ``_CAP_SHARES`` (two groups, the group tied to the score, 1e6
#: rows: the bound is met at 0.9935 of the way to parity).
_PATH_SHARE = 0.999


#: Rows per block of :func:`_along`.
_BLOCK_ROWS = 1 << 16


def _along(a, b, t):
    """``a + t * (b - a)``, the same values, formed in ``a`` a block of rows at a time (no
    temporary n-vector beside the two)."""
    for start in range(0, len(a), _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        a[rows] += t * (b[rows] - a[rows])
    return a


def _path_step(problem, units, before, after, base, cap, bound_tol):
    """The shift of the next solve, and its warm start ``(x, multipliers, slack)``, where the
    path of solutions through two solves that missed the bound, ``before`` and ``after``
    (each ``(x, scores, shift, result, hard values, means)``, ``after``'s bounds the
    tighter; ``means``: the constraints' means over the predictions, with no offset),
    puts every moved unit's hard value at the middle of its band; None where the two solves
    set no such direction or the path meets no bound before ``cap``.

    The solution moves smoothly with the surrogate's bound, its hard rates need not: near a
    model whose scores are all small, a shift of 1e-4 moves a hard gap by 0.01. On the line
    through the two solutions (extended until a unit's shift reaches its cap) the scores are
    linear, and :func:`_segment_point` reads every hard value on it exactly, with no data
    pass: a secant on the solutions, not on the hard values (two groups, the group tied to
    the score, 1e6 rows: the line through the solves at shifts 0 and 0.018 put the hard gap
    at 0.0199 within 6e-4 of the solve there, where the secant on hard values stopped at
    the cap and eight solves followed).
    """
    x_a, z_a, s_a, r_a, _, _ = before
    x_b, z_b, s_b, r_b, h_b, m_b = after
    d = s_b - s_a
    if not (np.any(d > 0) and np.all(d >= 0) and np.any(h_b > BOUND_EPS)):
        return None
    reach = float(np.min((cap - s_b)[d > 0] / d[d > 0]))
    if reach <= 0:
        return None

    def at(t, a, b):
        """The line's point ``t``: ``a`` at 0, ``b`` at 1."""
        return a + t * (b - a)

    # The line's point ``1 + reach``, formed in ``before``'s scores, computed again (the
    # steering holds no scores through a solve) and not needed after.
    z_out = _along(_rescored(problem, x_a, z_a), z_b, 1.0 + reach)
    # The units moved aim at the middle of their band, the others stay within theirs.
    target = base + units.spread @ np.where(d > 0, 0.5 * bound_tol, 0.0)
    u = _segment_point(problem, units, z_b, z_out, target, m_b)
    z_out -= z_b
    z_out *= u
    z_out += z_b  # the scores at the point found
    met = np.all(units.values(problem.rate_constraints(z_out, offset=target)) <= BOUND_EPS)
    del z_out
    if not met:
        return None
    t = 1.0 + u * reach
    y = np.maximum(at(t, r_a.multipliers, r_b.multipliers), 0.0)
    slack = np.maximum(at(t, r_a.slack, r_b.slack), 0.0)
    return at(t, s_a, s_b), (at(t, x_a, x_b), y, slack)
