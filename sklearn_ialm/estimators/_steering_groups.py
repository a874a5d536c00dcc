"""Where no solve with the surrogate's bounds moved together meets the bound on predictions:
solves with each constraint's bound moved by its own gap (:func:`_group_by_group`), then,
where the groups are columns of ``X``, a threshold per group (:func:`_cut_by_group`).
"""

from __future__ import annotations

import numpy as np

from ..problems._numeric import BOUND_EPS
from ..problems.losses import Logistic
from ._group_cuts import INSIDE, group_cut, group_layout
from ._hard_rates import _finish, _pass_share, _rescored, _say
from ._segment_sweep import _segment
from ._steering_bounds import _column_means, _shift_cap


def _no_solve_met(problem, units, steering, solve, results, passes, budget, max_rounds, groups,
                  verbose):  # fmt: skip
    """Where no solve with the bounds moved together met them: ``(fit, passes)`` of the
    solves with the bounds moved group by group, or of a threshold per group where the
    groups are columns of X; ``(None, passes)`` where neither is the answer, the steering
    left to end as it would without them."""
    nearest = steering.infeasible
    done, passes = _group_by_group(
        problem, units, steering, solve, results, passes, budget, max_rounds, verbose
    )
    if done is not None:
        return done, passes
    done, passes = _cut_by_group(
        problem, units, steering, solve, results, passes, budget, nearest, groups, verbose
    )
    if done is not None:
        done.at_cap = bool(np.any(steering.capped))  # (the advice's words, as below)
        return done, passes
    # No solve with bounds moved group by group was the answer: the fit ends as it would
    # without them, from the nearest solve with the bounds moved together (the warning's
    # remedy is read from its gap: the surrogate reaches a bound above it). A segment
    # towards a solve whose own bounds were moved apart is not taken: on 30 groups of 10-50
    # rows it ended worse than the constant model.
    steering.infeasible, steering.feasible = nearest, None
    return None, passes


def _cut_first(problem, units, steering, solve, results, passes, budget, groups, verbose):
    """After a first solve that missed the bound, where one row moves every group's rate by
    more than ``bound_tol`` (:func:`~._group_cuts.group_layout`): ``(fit, passes)`` of the
    solves with the soft rates pinned at thresholds per group (:func:`_cut_by_group`), or
    ``(None, passes)`` where there are none or none meets the bound. (100 groups of 20
    rows, parity 0.1: converged in 15.5 passes, where five further solves with the bounds
    moved came no nearer and the fit ended unconverged after 34.)"""
    if steering.feasible is not None or steering.infeasible is None:
        return None, passes
    layout = group_layout(problem, units, groups, steering.bound_tol)
    if layout is None:
        return None, passes
    return _cut_by_group(
        problem, units, steering, solve, results, passes, budget, steering.infeasible, groups,
        verbose, compromise=False, layout=layout,
    )  # fmt: skip


#: The share of each constraint's gap between its values on predictions and on soft
#: predictions that one solve of :func:`_group_by_group` takes into its bound.
_GAP_SHARE = 0.5

#: Solves in a row of :func:`_group_by_group` no nearer the bound after which it stops.
_STALE = 3

#: The least share of a bracket's width between a regula-falsi step of
#: :func:`_group_by_group` and either end of the bracket (see :class:`_Brackets`).
_INSIDE = 0.02


class _Brackets:
    """Per unit, the last solve of :func:`_group_by_group` whose hard value is above the
    middle of the band ``[-bound_tol, 0]`` and the last below it, as ``(offsets, f)`` with
    ``f`` the hard value less that middle; once a unit has both, its next bound is the
    regula-falsi point between them.

    Where the hard rates are very sensitive to the soft bound (two groups, the group tied
    to the score, 1e6 rows: the hard gap moves about 50 times as far as the soft one), a
    step by a share of the gap overshoots each time, from one side to the other ([0.33,
    -0.37], then [-0.40, 0.36]); the regula-falsi point stays inside the bracket, which
    closes on the band. The Illinois modification halves the ``f`` of an end kept twice in
    a row, so that a bend of the relation does not leave one end fixed for ever.
    """

    def __init__(self, n_units, middle):
        self.middle = middle
        self.above, self.below = [None] * n_units, [None] * n_units
        self.last = np.zeros(n_units, int)  # +1: the last solve was above; -1: below

    def add(self, offset, hard):
        """Record a solve at constraint offsets ``offset`` (kept, not copied) with unit hard
        values ``hard``."""
        for u, f in enumerate(hard - self.middle):
            side = 1 if f > 0 else -1
            kept = self.below if side > 0 else self.above
            if side == self.last[u] and kept[u] is not None:
                kept[u] = (kept[u][0], 0.5 * kept[u][1])  # Illinois
            (self.above if side > 0 else self.below)[u] = (offset, f)
            self.last[u] = side

    def closed(self, u):
        """Whether unit ``u`` has a solve on each side."""
        return self.above[u] is not None and self.below[u] is not None

    def move(self, units, offset, last, steer):
        """``offset`` (changed in place) with each bracketed unit's rows set to its
        regula-falsi point if it is to ``steer`` (it missed or left its bound unused), else
        to its ``last`` offsets (it met its band: kept); the mask of those rows; and the
        units set to their regula-falsi point."""
        moved, points = np.zeros(len(offset), bool), []
        for u in range(len(units)):
            if self.closed(u):
                rows = units.members[u]
                offset[rows] = self.point(u, rows) if steer[u] else last[rows]
                moved[rows] = True
                points += [u] if steer[u] else []
        return offset, moved, points

    def point(self, u, rows):
        """The offsets of constraints ``rows`` (unit ``u``'s) where the line between the two
        ends reaches the middle of the band, at least ``_INSIDE`` of the way from each."""
        (o_up, f_up), (o_down, f_down) = self.above[u], self.below[u]
        w = float(np.clip(f_up / (f_up - f_down), _INSIDE, 1.0 - _INSIDE))
        return o_up[rows] + w * (o_down[rows] - o_up[rows])


def _group_by_group(problem, units, steering, solve, results, passes, budget, rounds, verbose):
    """Solves whose surrogate has each constraint's bound moved by its own gap between hard
    and soft rates, after no solve with the bounds moved together met the bound.

    A group's rate on predictions can part from its soft rate, by a different amount in
    each group (a few dozen positives: Adult's true-positive rates of the smaller races are
    0.04-0.08 from their soft rates when the soft rates are equal), so that moving every
    bound alike, even to soft parity, leaves the hard gap. Each constraint's offset moves
    instead by ``_GAP_SHARE`` of its own gap (``hard - soft`` at the last solve) less its
    shift so far, with the margin ``bound_tol / 2`` inside the bound (doubled on each miss
    in a row). Each solve is the optimum of the surrogate at those bounds. The whole gap
    in one step overshot: a hard rate moves about twice as fast as the soft one near the
    boundary (Adult's Black positives), and two groups took turns below the band for eight
    solves; half the gap is the Newton step of that slope. Once a unit that still misses
    (or leaves its bound unused) has had a solve on each side of its band's middle, its
    bounds move to the regula-falsi point between the two instead (:class:`_Brackets`).
    Returns the first solve that is the answer (every hard value ``<= 0``, each active one
    within ``bound_tol``), else ``None`` after ``rounds`` solves, the budget, or
    ``_STALE`` solves in a row that came no nearer the bound.
    """
    base, bound_tol = steering.base, steering.bound_tol
    x, scores, hard, result = steering.infeasible
    scores = _rescored(problem, x, scores)
    shift = units.spread @ steering.infeasible_shift
    offset = base + shift
    brackets = _Brackets(len(units), -0.5 * bound_tol)
    brackets.add(offset, hard)
    # Room for the margin: half the cap, so that the moved bounds with the margin stay
    # within the cap (the shift's share common to a band's two sides halves each solve).
    if steering.column_means is None:
        steering.column_means = _column_means(problem, scores)
    room = 0.5 * _shift_cap(steering.column_means, units, scores, base, 0)
    inside = np.where(units.any_positive(result.multipliers) | (hard > BOUND_EPS), 0.5, 0.0)
    misses = np.zeros(len(units))
    steer = np.zeros(len(units), bool)  # the units that missed or left the bound unused
    nearest, stale = float(np.max(hard)), 0
    for rnd in range(len(results), len(results) + rounds):
        if passes >= budget:
            break
        gap = problem.rate_constraints(scores) - problem.rate_constraints(scores, hard=False)
        shift += _GAP_SHARE * (gap - shift)
        margin = np.minimum(inside * bound_tol * 2.0**misses, room)
        lift = units.spread @ margin
        offset, moved, points = brackets.move(units, base + shift + lift, offset, steer)
        shift[moved] = offset[moved] - base[moved] - lift[moved]
        _say(
            verbose,
            f"solve {rnd + 1}: on predictions the constraints are "
            f"{np.round(hard, 4).tolist()}, and moving the surrogate's bounds together does "
            f"not meet them ({passes:.3g} of {budget:g} passes spent): each constraint's "
            "bound moved by half its own gap between hard and soft rates"
            + (f" (units {points}: to the regula-falsi point of their bracket)" if points else ""),
        )
        warm = (result.x, result.multipliers, result.slack)
        result = solve(problem.with_offset(offset), rnd, warm, budget - passes)
        results.append(result)
        passes += result.n_data_passes + _pass_share(problem)
        del scores  # the next solve's scores do not come on top
        scores = problem.constraint_scores(result.x)
        hard = units.values(problem.rate_constraints(scores, offset=base))
        active = _in_play(units, result, margin)
        if steering.keep(result, scores, hard, active) and _beats_constant(problem, result):
            return _finish(
                problem, units, result.x, scores, results, [result], 0.0, passes
            ), passes
        brackets.add(offset, hard)
        steer = (hard > BOUND_EPS) | (active & (hard < -bound_tol))
        misses = np.where(hard > BOUND_EPS, misses + 1, 0)
        # Solves in a row no nearer the bound than the nearest before them: these bounds
        # do not close the gap here (100 groups of 20 rows: eight such solves, none nearer
        # than 0.1, tripled the fit's passes; after two, a five-group fit still met it).
        stale = stale + 1 if np.max(hard) >= nearest else 0
        nearest = min(nearest, float(np.max(hard)))
        if stale == _STALE:
            break
    return None, passes


#: Solves of :func:`_cut_by_group` with each group's soft rate pinned where a threshold per
#: group puts its predictions (each from the last one's predictions cut again), and the
#: solves in a row no nearer the bound than the nearest before them after which it stops.
#: 60 groups of 20-50 rows (benchmarks.families.many_small_groups, data seeds 0-7), parity
#: 0.05: at most 3 solves and a stop at the first no nearer, 2 of 8 fits converged; 6 and
#: none, 5; 10 and 4, 7 (in 14-38 passes; the eighth ended after 105). Each miss is a row
#: or two in a few groups, a different few from one solve to the next.
_PIN_ROUNDS, _PIN_PATIENCE = 10, 4


def _cut_by_group(problem, units, steering, solve, results, passes, budget, nearest, groups,
                  verbose, compromise=True, layout=None):  # fmt: skip
    """Solves of the surrogate with each group's soft rate pinned where a threshold per group
    puts its predictions in the band: the fit and the data passes spent; ``(None, passes)``
    where the groups are not columns of ``X`` (or no thresholds meet the bound), or, without
    ``compromise``, where no such solve meets the bound.

    Where the groups are columns of ``X`` (:func:`~._group_cuts.group_cut`), the solve
    ``nearest`` the bound with its own threshold per group, folded into the group columns'
    coefficients, meets the bound on predictions. Every constraint's bound is then moved to
    that model's soft value (at level 0): the band of soft rates closes on it, each group's
    soft rate pinned relative to the free level, and the surrogate is solved from it, an
    optimum of a posed problem. With its soft rate pinned, a group's count of positive
    predictions moves by a row or two at most (the other coefficients move a little), where
    a band of the bound's width in soft rates left the counts free: 100 groups of 20 rows,
    one-hot in ``X``, parity 0.1, the solve with each bound moved by the thresholds' gap
    between hard and soft rates missed by 0.4 (a gap of 0.5 on predictions) and the fit ended
    at the thresholds themselves, not converged; pinned, the first solve misses by a row (a
    gap of 0.15), the second meets the bound. A solve that misses is cut again and pinned
    there, up to ``_PIN_ROUNDS`` solves, until ``_PIN_PATIENCE`` in a row come no nearer the
    bound; the first that meets it is returned. Else, with ``compromise``, the point of the
    segment from the last solve towards its per-group thresholds where the predictions meet
    the bound, flagged (``threshold_moved``, ``group_thresholds``): a compromise, not
    converged.
    """
    if groups is None or passes >= budget:
        return None, passes
    layout = group_layout(problem, units, groups) if layout is None else layout
    if layout is None:
        return None, passes
    x, z, _, result = nearest
    z = _rescored(problem, x, z)
    miss, stale = np.inf, 0
    for _ in range(_PIN_ROUNDS):
        cut = group_cut(problem, units, groups, x, z, steering.base, layout)
        if cut is None or passes >= budget:
            break
        x_cut, z_cut = cut
        passes += _pass_share(problem)
        if passes >= budget:
            break  # (the cut's read spent the budget: a solve needs some left)
        _say(
            verbose,
            f"solve {len(results) + 1}: a threshold per group (in the group columns' "
            "coefficients) meets the bound on predictions; the surrogate's bounds pinned to "
            "that model's soft rates",
        )
        offset = -problem.rate_constraints(z_cut, hard=False, offset=0.0)
        warm = (x_cut, result.multipliers, None)
        result = solve(problem.with_offset(offset), len(results), warm, budget - passes)
        results.append(result)
        passes += result.n_data_passes + _pass_share(problem)
        x, z = result.x, problem.constraint_scores(result.x)
        # Judged as every solve of the steering is (_Steering.keep): a gap equal to the
        # bound meets it, where the cut held its thresholds a hair inside (INSIDE).
        # (The means over the predictions read once: the fit's own hard values are them.)
        means = problem.rate_constraints(z, offset=0.0)
        hard = units.values(means + steering.base)
        steering.note(result, hard)
        if np.all(hard <= BOUND_EPS) and _beats_constant(problem, result):
            return _finish(problem, units, x, z, results, [result], 0.0, passes, means), passes
        _say(verbose, f"the pinned solve misses ({np.round(hard, 4).tolist()})")
        stale = stale + 1 if np.max(hard) >= miss else 0
        if stale == _PIN_PATIENCE:
            break
        miss = min(miss, float(np.max(hard)))
    if not compromise or x is nearest[0]:
        return None, passes
    cut = group_cut(problem, units, groups, x, z, steering.base, layout)
    if cut is None:
        return None, passes
    x_cut, z_cut = cut
    # Missed (the predictions' rates of groups of a dozen rows move a row at a time): the
    # point of the segment from the last solve towards its per-group thresholds where the
    # predictions meet the bound, a compromise the fit says it is.
    # (Held a hair inside the bound, as the cut is: see _group_cuts.INSIDE.)
    t = _segment(problem)(units, z, z_cut.copy(), steering.base + INSIDE)
    _say(verbose, f"moved {t:.0%} of the way to the per-group thresholds, until its predictions "
                  "meet the bound")  # fmt: skip
    z *= 1 - t
    z += t * z_cut
    fit = _finish(problem, units, (1 - t) * x + t * x_cut, z, results, [result], t, passes)
    fit.threshold_moved = fit.group_thresholds = True
    fit.nearest = problem.coef(nearest[0])
    return fit, passes


def _in_play(units, result, margin):
    """The units of a solve of :func:`_group_by_group` whose bound shapes it: a positive
    multiplier, or a margin taken into the bound unless the solve was finished (exact
    multipliers: a zero one is a bound that does not bind, and another margin there gives
    the same model). A hard value inside such a bound by more than ``bound_tol`` is not
    room left unused. (A ratio of three groups' selection rates, 2000 rows, bound 0.8: the
    solve met every bound on predictions, the one it binds within the band, another pair's
    margin left 0.02 inside with a zero multiplier; taken as unused, the steering
    re-solved the same model until it stalled and moved it towards the constant model.)"""
    finished = getattr(result, "finish_history", None) is not None and result.converged
    return units.any_positive(result.multipliers) | ((margin != 0) & (not finished))


def _beats_constant(problem, result):
    """Whether the solve's objective is below the constant model's logistic loss (in closed
    form: the entropy of the weighted positive share); True where that is not at hand
    (another loss, no intercept, rows on a cluster). With bounds moved group by group a
    solve can meet the bound at a loss above the constant's (30 groups of 10-50 rows: 3.2
    against 0.69), a model no user wants; the fit then ends as without those solves."""
    return _below_constant(problem, result.objective)


def _below_constant(problem, value):
    """Whether an objective ``value`` is at most the constant model's logistic loss (see
    :func:`_beats_constant`); True where that is not at hand."""
    u, b = getattr(problem, "u", None), getattr(problem, "b", None)
    if u is None or b is None or not getattr(problem, "fit_intercept", False):
        return True
    if type(problem.loss) is not Logistic:
        return True
    p = float(u[b > 0].sum() / u.sum())
    if not 0.0 < p < 1.0:
        return True
    return bool(value <= -(p * np.log(p) + (1.0 - p) * np.log1p(-p)))
