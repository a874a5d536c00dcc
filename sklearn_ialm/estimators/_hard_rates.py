"""Steering the smooth surrogate so that the bounds hold on hard predictions.

The solver constrains rates of the soft prediction ``sigmoid(score)``; users measure rates of
``predict``, ``1[score > 0]``. Every constraint of a linear problem is a weighted mean over the
constraint rows, ``c_k = mean_j W[j, k] q_j + offset_k <= 0``, so the same weights give its
value on hard predictions. A fit that meets the soft bound can miss the hard one (a fit can
satisfy the soft rate by shrinking the scores without changing a decision), so:

1. Solve the soft problem. If every hard value is ``<= 0`` and each active one is within
   ``bound_tol`` of it, stop.
2. Otherwise set the soft constraint's offset so that it binds where the hard value is
   predicted to reach the middle of that band (a secant step on the soft and hard values the
   solves reached, warm started from the previous solution) and solve again, until a
   solution on each side of the
   band is found: an *infeasible* one (some hard value > 0) and a *feasible* one.
3. Scores are linear in the parameters, so on the segment between those two solutions every
   hard value is a cheap function of ``t`` (no data pass): the returned model is the point of
   the segment nearest the infeasible solution whose hard values are all ``<= 0``. It lies on
   the hard bound up to one row.

If no solve with the bounds moved together meets the bound, each constraint's bound is moved
by its own gap between hard and soft values (:func:`_group_by_group`, up to ``max_rounds``
further solves; once a constraint has a solve on each side of its band, by regula falsi
between them): the first such solve that meets the bound is returned.

If none does and the groups are columns of ``X`` (three groups or more), the solve nearest
the bound gets a threshold per group, in the group columns' coefficients, that meets the
bound on predictions, and the surrogate is solved once more with its bounds where that model
meets them (:func:`_cut_by_group`): that solve if it meets the bound, else the segment from
it towards the per-group thresholds, said to be a compromise.

If no solve meets the bound (within those solves or the budget), the segment towards
the constant model (intercept only, every prediction the same class, which meets every
parity bound) is searched instead, and the fit says so: it meets the bound at the price of
accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
from scipy.special import expit

from ..problems._numeric import BOUND_EPS
from ..problems.losses import Logistic
from ._group_cuts import INSIDE, group_cut

__all__ = ["HardRateFit", "fit_hard_rates", "fit_negative_weight", "rate_threshold"]


@dataclass
class HardRateFit:
    """What :func:`fit_hard_rates` and :func:`fit_negative_weight` return."""

    x: np.ndarray
    result: object  # the solver result of the returned solve (or the segment's first end)
    results: list = field(repr=False)
    converged: bool  # every solve the returned model is built from converged
    met: bool  # every hard value of x is <= 0
    interpolated: float  # t in [0, 1] of the segment step, 0.0 when a solve was returned
    degenerate: bool  # every prediction of x is the same class
    n_data_passes: float
    negative_weight: float = 1.0  # fit_negative_weight: the weight of the negatives found
    toward_constant: bool = False  # met by moving towards the constant model (no solve met it)
    threshold_moved: bool = False  # met by moving the threshold of a solve (no solve met it)
    group_thresholds: bool = False  # ... the threshold of each group (see _cut_by_group)
    # (coef, intercept) of the solve nearest the bound, which the two moves above start from.
    nearest: tuple | None = None
    # The surrogate's bound of some unit that missed was tightened as far as the steering
    # goes (see _shift_cap) before no solve met the bound.
    at_cap: bool = False
    # (loss, penalty) of the returned model, set where its coefficients are: the report
    # computes its objective from its training scores (see _binary.solve_and_steer).
    objective_terms: tuple | None = None


class _Units:
    """The constraints of a problem as the steering sees them: one unit per free level (a
    band of constraints whose position the solver chooses, see
    :func:`~sklearn_ialm.problems.fairness_problem`) and one per other constraint.

    A unit's value is the largest of its constraints' values at the best position of the
    level, ``min_t max_k (v_k + levels[k] t)``: ``<= 0`` exactly when some level meets every
    constraint of the unit. A shift of the unit moves all its constraints' offsets alike,
    and its value by the same amount.
    """

    def __init__(self, problem):
        levels = getattr(problem, "levels", None)
        m = len(problem.offset)
        self.members, self.slopes = [], []
        free = np.ones(m, bool)
        if levels is not None:
            for j in range(levels.shape[1]):
                rows = np.flatnonzero(levels[:, j])
                free[rows] = False
                e = levels[rows, j]
                # (Within a band every upper constraint has one slope, every lower one too.)
                self.members.append(rows)
                self.slopes.append((-e[e < 0][0], e[e > 0][0], e < 0))
        self.n_bands = len(self.members)
        self.free = np.flatnonzero(free)  # each its own unit, after the bands
        for k in self.free:
            self.members.append(np.array([k]))
            self.slopes.append(None)
        self.spread = np.zeros((m, len(self.members)))
        for u, rows in enumerate(self.members):
            self.spread[rows, u] = 1.0

    def __len__(self):
        return len(self.members)

    def values(self, V):
        """Unit values of constraint values ``V`` (shape ``(..., m)``)."""
        V = np.asarray(V, dtype=float)
        out = np.empty(V.shape[:-1] + (len(self),))
        # (np.take: indexing the columns with an array took as long as the sweep's sort.)
        out[..., self.n_bands :] = np.take(V, self.free, axis=-1)
        for u in range(self.n_bands):
            rows, (a, e, upper) = self.members[u], self.slopes[u]
            hi = V[..., rows[upper]].max(axis=-1)  # falls as a * t with the level t
            lo = V[..., rows[~upper]].max(axis=-1)  # rises as e * t
            out[..., u] = (e * hi + a * lo) / (a + e)
        return out

    def differences(self):
        """Whether each unit is a band of differences (its upper and lower constraints have
        opposite slopes in the level: ``r_g - t`` and ``t - r_g``), not of ratios."""
        out = np.zeros(len(self), bool)
        out[: self.n_bands] = [a == e for a, e, _ in self.slopes[: self.n_bands]]
        return out

    def any_positive(self, multipliers):
        """Whether each unit has a constraint with a positive multiplier."""
        return np.array([np.any(multipliers[rows] > 0) for rows in self.members])


#: A shift of the surrogate's bounds by less than this share of ``bound_tol`` leaves the next
#: solve where the last one ended (:func:`fit_hard_rates`).
_SAME_SHIFT = 0.1


def _secant_slope(trace, default, low, high):
    """Slope of the last two ``(argument, value)`` points of ``trace``, clipped to
    ``[low, high]``; ``default`` until there are two distinct points."""
    if len(trace) < 2:
        return default
    (a1, v1), (a2, v2) = trace[-2:]
    if abs(a2 - a1) <= 1e-12:
        return default
    return float(np.clip((v2 - v1) / (a2 - a1), low, high))


def _segment_point(problem, units, z_in, z_out, offset, means=None):
    """The first stretch of the segment from ``z_in`` to ``z_out`` where every hard value is
    ``<= 0``, and its midpoint ``t`` (``z_out`` at ``t = 1`` is feasible). ``means``, where
    known: ``problem.rate_constraints(z_in, offset=0.0)`` (the hard values at ``z_in`` are
    then read from no further pass).

    Scores are linear in ``t``, so row ``j`` changes prediction once at most, at
    ``t_j = z_in_j / (z_in_j - z_out_j)``; between two such events the hard values are
    constant. Sorting the events and accumulating each row's contribution ``+-W[j] / n``
    gives every hard value on the segment exactly, in one sweep. The midpoint of the stretch
    keeps every score away from 0, so recomputing a score with other rounding changes no
    prediction; a stretch of no length (between the events of identical rows) is skipped.
    The events of the stretches where no model can meet the bound are not sorted
    (:func:`_past_misses`); the point is the same.
    """
    q_in, q_out = z_in > 0, z_out > 0
    moving = np.flatnonzero(q_in != q_out)
    # (np.take throughout: indexing with an index array took up to ten times as long, 0.02 s
    # of the sweep's 0.056 s on 218717 events.)
    at_in = np.take(z_in, moving)
    t_event = at_in / (at_in - np.take(z_out, moving))
    del at_in
    start = problem.rate_constraints(z_in, offset=offset) if means is None else means + offset
    t = None
    if len(moving) and not np.all(units.values(start[None]) <= BOUND_EPS):
        t = _past_misses(problem.W, units, moving, t_event, q_out, start)
    return _sweep(problem.W, units, moving, t_event, q_out, start) if t is None else t


def _sweep(W, units, moving, t_event, q_out, start):
    """:func:`_segment_point`'s point by the sweep over every event, in order."""
    n = len(q_out)
    order = _stable_order(t_event)
    moving, t_event = np.take(moving, order), np.take(t_event, order)
    # In place, one (events x constraints) matrix: nearly every row may move, and each such
    # matrix is several vectors of all rows (the fit's memory, see tests/test_memory.py).
    hard = _contributions(W, moving, q_out, n)
    np.cumsum(hard, axis=0, out=hard)
    hard += start  # hard[i]: after the first i + 1 events
    meets = _all_met(units.values(hard))
    meets = np.concatenate([[bool(np.all(units.values(start[None]) <= BOUND_EPS))], meets])
    bounds = np.concatenate([[0.0], t_event, [1.0]])
    # Rows with equal scores at both ends (identical rows) change prediction at the same t:
    # the values between two of their events, an empty stretch, belong to no model.
    ok = np.flatnonzero(meets & (np.diff(bounds) > 0))
    i = int(ok[0]) if len(ok) else len(moving)
    return 0.5 * (bounds[i] + bounds[i + 1]) if i > 0 else 0.0


def _contributions(W, rows, q_out, n):
    """Each event's change of the constraint values, ``+-W[j] / n`` (one new matrix)."""
    hard = np.take(W, rows, axis=0)
    hard *= np.where(np.take(q_out, rows), 1.0, -1.0)[:, None]
    hard /= n
    return hard


#: Buckets of event times over ``[0, 1]`` that :func:`_past_misses` bounds (a power of two:
#: ``t * _BUCKETS`` is exact).
_BUCKETS = 1024


def _past_misses(W, units, moving, t_event, q_out, start):
    """:func:`_sweep`'s point, with only the events sorted from the first bucket of event
    times where a model may meet the bound on; None where rounding could decide a stretch
    (:func:`_sweep` then decides), or no bucket is passed over. The start must miss.

    A strongly binding parity bound (dense 1e6 x 20) met the bound after 204733 of 218717
    events, whose sort was 0.015 s of the sweep's 0.03 s. Within a bucket every value is at
    least its value before the bucket plus the negative contributions of the bucket's
    events; where that misses the bound by more than the rounding of either sum, no model of
    the bucket meets it. Either way a value is a sum of at most ``k = len(moving) +
    _BUCKETS + 2`` terms, within ``k eps / 2`` times the sum of their magnitudes of its
    exact value: the sweep's values and these differ by less than ``k eps`` times that sum,
    a quarter of the margin ``2 delta`` asked here; a value beyond it from the bound is on
    the same side of it in both.
    """
    n, m = len(q_out), W.shape[1]
    bucket = np.minimum((t_event * _BUCKETS).astype(np.intp), _BUCKETS - 1)
    counts = np.bincount(bucket, minlength=_BUCKETS)
    by_bucket = np.argsort(bucket.astype(np.uint16), kind="stable")  # a radix sort
    del bucket
    t_event = np.take(t_event, by_bucket)
    hard = _contributions(W, np.take(moving, by_bucket), q_out, n)
    del by_bucket
    full = np.flatnonzero(counts)
    firsts = np.cumsum(counts)[full] - counts[full]
    sums, negative = np.zeros((_BUCKETS, m)), np.zeros((_BUCKETS, m))
    sums[full] = np.add.reduceat(hard, firsts, axis=0)
    for k in range(m):  # (column by column: no second matrix of the events)
        negative[full, k] = np.add.reduceat(np.minimum(hard[:, k], 0.0), firsts)
    before = start + np.cumsum(sums, axis=0) - sums  # the values before each bucket
    magnitude = float(np.max(np.sum(sums - 2.0 * negative, axis=0))) + np.max(np.abs(start))
    delta = 2.0 * (len(moving) + _BUCKETS + 4) * np.finfo(float).eps * 1.01 * magnitude
    misses = ~_all_met(units.values(before + negative), BOUND_EPS + 2.0 * delta)
    k0 = int(np.argmin(misses)) if not misses.all() else _BUCKETS
    passed = int(np.sum(counts[:k0]))
    if passed == 0:
        return None
    last = float(np.max(t_event[:passed]))  # the last event passed over
    if passed == len(t_event):
        return 0.5 * (last + 1.0)  # no model meets the bound: as the sweep says
    rest = _stable_order(t_event[passed:])
    times = np.take(t_event[passed:], rest)
    values = np.take(hard[passed:], rest, axis=0)
    del hard
    np.cumsum(values, axis=0, out=values)
    values += before[k0]
    values = units.values(values)
    met = _all_met(values, BOUND_EPS - 2.0 * delta)
    unsure = ~met & _all_met(values, BOUND_EPS + 2.0 * delta)
    after = np.concatenate([times[1:], [1.0]])
    stretch = after > times  # the stretch after each event has a length
    found = np.flatnonzero(stretch & met)
    end = int(found[0]) if len(found) else len(times)
    if np.any((stretch & unsure)[:end]):
        return None
    return 0.5 * (times[end] + after[end]) if len(found) else 0.5 * (times[-1] + 1.0)


def _stable_order(t):
    """``np.argsort(t, kind="stable")``, by an unstable sort whose runs of equal values are
    put back in index order: on 218717 events (dense 1e6 x 20, a strongly binding parity
    bound) the stable sort took 0.024 s, the unstable one 0.015 s."""
    order = np.argsort(t)
    s = t[order]
    tied = s[1:] == s[:-1]
    if tied.any():
        # The positions in a run of equal values (identical rows), each run then sorted by
        # index: a lexicographic sort of those positions only, by value, then by index.
        inside = np.zeros(len(t), bool)
        inside[1:] |= tied
        inside[:-1] |= tied
        at = np.flatnonzero(inside)
        order[at] = order[at][np.lexsort((order[at], s[at]))]
    return order


def _all_met(values, bound=BOUND_EPS):
    """Per row of unit ``values`` (events x units), whether every unit is ``<= bound``:
    column by column (``np.all(..., axis=1)`` over few columns took ten times as long)."""
    met = values[:, 0] <= bound if values.shape[1] else np.ones(len(values), bool)
    for k in range(1, values.shape[1]):
        met &= values[:, k] <= bound
    return met


def _say(verbose, text):
    """With ``verbose``, which solve of the steering starts and why (the solver's own lines
    restart at ``k=0`` with each solve)."""
    if verbose:
        print(f"[steering] {text}")


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


def fit_hard_rates(
    problem, solve, *, bound_tol, max_rounds=8, budget=np.inf, verbose=0, path_steps=True,
    groups=None,
) -> HardRateFit:  # fmt: skip
    """Fit ``problem`` so that its constraints hold on hard predictions (see module docstring).

    Parameters
    ----------
    problem : LinearProblem
        With ``constraint_scores``, ``rate_constraints`` and ``with_offset``.
    solve : callable
        ``solve(problem, round, warm, budget) -> result`` runs the solver; ``warm`` is
        ``None`` or ``(x, multipliers, slack)`` of the previous round, ``budget`` the data
        passes left.
    bound_tol : float
        Width of the band below the bound that an active constraint's hard value may end in.
    max_rounds : int
        Solves before falling back to the constant model.
    budget : float
        Data passes for all rounds together.
    verbose : int
        ``> 0`` prints a line before each solve: which one, and why it is needed.
    path_steps : bool
        Whether a solve may be placed on the path through the last two
        (:func:`_path_step`). A ratio's hard rates do not follow that line: three groups
        at a false-positive-rate ratio of 0.5 (2000 rows) ended not converged after 11
        solves with path steps, converged in 30.5 passes without.
    """
    base = problem.offset.copy()
    units = _Units(problem)
    steering = _Steering(problem, units, base, bound_tol, verbose)
    results, passes = [], 0.0
    warm = None
    for rnd in range(max_rounds):
        if passes >= budget:
            break
        if rnd == 0:
            _say(verbose, "solve 1: the surrogate (soft rates) at the bound itself")
        shift = steering.shift  # one array, moved in place by steering.move_bounds
        offset = base + units.spread @ shift
        result = solve(problem.with_offset(offset), rnd, warm, budget - passes)
        results.append(result)
        passes += result.n_data_passes + _pass_share(problem)  # the solve and its hard check
        scores = problem.constraint_scores(result.x)
        # The constraints' means over the predictions, without an offset (``+ 0.0`` changes
        # no value): with the base offset they are the hard values, with others the start
        # of the sweep along a path step and the finish's check, read from no further pass.
        means = problem.rate_constraints(scores, offset=0.0)
        hard = units.values(means + base)
        if np.any(shift < 0) and not result.converged:
            break  # a looser bound the solver could not reach: keep what was feasible
        active = units.any_positive(result.multipliers) | (shift != 0)
        # The nearest miss before this solve: the stop at the cap asks whether it came nearer.
        nearest = steering.nearest_miss()
        if steering.keep(result, scores, hard, active) and _beats_constant(problem, result):
            return _finish(problem, units, result.x, scores, results, [result], 0.0, passes, means)
        if steering.infeasible is not None and steering.feasible is not None:
            break
        step = steering.path_step(result, scores, hard, means) if path_steps else None
        if step is None:
            if not steering.move_bounds(scores, hard, active, nearest):
                break
            warm = (result.x, result.multipliers, result.slack)
        else:
            shift[:], warm = step
        _say(
            verbose and rnd + 1 < max_rounds and passes < budget,
            f"solve {rnd + 2}: on predictions the constraints are "
            f"{np.round(hard, 4).tolist()} (a value > 0 misses the bound, an active one "
            f"below -{bound_tol:g} leaves it unused; {passes:.3g} of {budget:g} passes "
            f"spent): moving the surrogate's bound by {(np.round(-shift, 4) + 0.0).tolist()}"
            + ("" if step is None else ", where the path through the last two solves meets it"),
        )
        # Kept above if needed; dropped here, the next solve's scores do not come on top.
        del scores, means

    if steering.feasible is None and steering.infeasible is not None:
        done, passes = _no_solve_met(
            problem, units, steering, solve, results, passes, budget, max_rounds, groups, verbose
        )
        if done is not None:
            return done
    fit = _between_sides(
        problem, units, steering.infeasible, steering.feasible, results, passes, base, verbose
    )
    fit.at_cap = bool(np.any(steering.capped))
    if fit.at_cap and not fit.converged and fit.nearest is None:
        # A further solve at the tightest surrogate cut short by the budget: the solve
        # nearest the bound is reported too (the fit says what bound is within reach).
        fit.nearest = problem.coef(steering.infeasible[0])
    return fit


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
    _, scores, hard, result = steering.infeasible
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


def _cut_by_group(problem, units, steering, solve, results, passes, budget, nearest, groups,
                  verbose):  # fmt: skip
    """A solve of the surrogate with each constraint's bound where a threshold per group puts
    it, after no solve with the bounds moved together or group by group met the bound: the
    fit and the data passes spent; ``(None, passes)`` where the groups are not columns of
    ``X`` (or no thresholds meet the bound).

    Where the groups are columns of ``X`` (:func:`~._group_cuts.group_cut`), the solve
    nearest the bound with its own threshold per group, folded into the group columns'
    coefficients, meets the bound on predictions. Each constraint's bound is then moved by
    that model's gap between hard and soft values, so that the model meets the surrogate's
    bounds exactly where its predictions meet the bound, and the surrogate is solved from it:
    an optimum of a posed problem, kept if its predictions meet the bound. Else the point of
    the segment from that solve towards the per-group thresholds where the predictions meet
    the bound is returned, flagged (``threshold_moved``, ``group_thresholds``): a compromise,
    not converged. (100 groups of 20 rows, one-hot in ``X``, parity 0.1: the soft rates
    0.036 apart, the predictions' rates 0.38 apart at every bound the steering moved together
    or group by group, then moved 95 % of the way to the constant model, test accuracy
    0.485-0.508; the per-group thresholds: 0.898-0.932, where ThresholdOptimizer's is
    0.875-0.918.)
    """
    if groups is None or passes >= budget:
        return None, passes
    x_in, z_in, _, result_in = nearest
    cut = group_cut(problem, units, groups, x_in, z_in, steering.base)
    if cut is None:
        return None, passes
    x_cut, z_cut = cut
    passes += _pass_share(problem)
    offset = (
        steering.base
        + problem.rate_constraints(z_cut)
        - problem.rate_constraints(z_cut, hard=False)
    )
    _say(
        verbose,
        f"solve {len(results) + 1}: a threshold per group (in the group columns' "
        "coefficients) meets the bound on predictions; the surrogate's bounds moved to where "
        "that model's predictions meet it",
    )
    warm = (x_cut, result_in.multipliers, None)
    result = solve(problem.with_offset(offset), len(results), warm, budget - passes)
    results.append(result)
    passes += result.n_data_passes + _pass_share(problem)
    scores = problem.constraint_scores(result.x)
    # (Held a hair inside the bound, as the cut is: see _group_cuts.INSIDE.)
    inside = steering.base + INSIDE
    hard = units.values(problem.rate_constraints(scores, offset=inside))
    if np.all(hard <= BOUND_EPS) and _beats_constant(problem, result):
        return _finish(problem, units, result.x, scores, results, [result], 0.0, passes), passes
    # Missed (the predictions' rates of groups of a dozen rows move a row at a time): the
    # point of the segment from that solve towards the per-group thresholds where the
    # predictions meet the bound, a compromise the fit says it is.
    t = _segment(problem)(units, scores, z_cut.copy(), inside)
    _say(
        verbose,
        f"the solve misses ({np.round(hard, 4).tolist()}): moved {t:.0%} of the way to the "
        "per-group thresholds, until its predictions meet the bound",
    )
    scores *= 1 - t
    scores += t * z_cut
    fit = _finish(problem, units, (1 - t) * result.x + t * x_cut, scores, results, [result], t,
                  passes)  # fmt: skip
    fit.threshold_moved = fit.group_thresholds = True
    fit.nearest = problem.coef(x_in)
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
    u, b = getattr(problem, "u", None), getattr(problem, "b", None)
    if u is None or b is None or not getattr(problem, "fit_intercept", False):
        return True
    if type(problem.loss) is not Logistic:
        return True
    p = float(u[b > 0].sum() / u.sum())
    if not 0.0 < p < 1.0:
        return True
    return bool(result.objective <= -(p * np.log(p) + (1.0 - p) * np.log1p(-p)))


class _Steering:
    """What :func:`fit_hard_rates` carries from one solve to the next: per unit, the shift of
    the surrogate's bound and how it got there; and the best solve on each side of the bound.
    """

    def __init__(self, problem, units, base, bound_tol, verbose):
        self.problem, self.units, self.base = problem, units, base
        self.bound_tol, self.verbose = bound_tol, verbose
        m = len(units)
        self.shift = np.zeros(m)
        self.trace = [[] for _ in range(m)]  # (soft value, hard value) per unit, for the secant
        self.misses = np.zeros(m)  # solves in a row whose shifted bound still missed, per unit
        self.capped = np.zeros(m, bool)  # the unit's shift is at its cap (see _shift_cap)
        self.depth = np.zeros(m, int)  # the cap's step in _CAP_SHARES, per unit
        self.column_means = None  # see _shift_cap
        # (x, scores, shift, solver result, hard values, means) of the last solve: the
        # means over its predictions, ``rate_constraints(scores, offset=0.0)``.
        self.last = None
        # (x, scores, hard values, solver result) of the best solve on each side of the bound:
        # the scores are kept, so the segment between the two costs no further data pass.
        self.infeasible = self.feasible = None

    def nearest_miss(self):
        """The largest hard value of the best infeasible solve so far (inf before one)."""
        return np.inf if self.infeasible is None else np.max(self.infeasible[2])

    def keep(self, result, scores, hard, active):
        """Keep the solve if it is the best so far on its side of the bound; True when it is
        the answer: every hard value ``<= 0`` and each active one within ``bound_tol``."""
        if np.all(hard <= BOUND_EPS):
            unused = np.where(active, hard, 0.0)
            # Kept before it is returned as the answer: where the caller turns it down (a
            # solve no better than the constant model, at a budget spent on the null start),
            # the fit ends from the solves kept, and this one met the bound.
            if self.feasible is None or np.min(unused) > np.min(self.feasible[2]):
                self.feasible = (result.x, scores, unused, result)
            return bool(np.all(unused >= -self.bound_tol))
        elif self.infeasible is None or np.max(hard) < np.max(self.infeasible[2]):
            self.infeasible = (result.x, scores, hard, result)
            self.infeasible_shift = self.shift.copy()
        return False

    def path_step(self, result, scores, hard, means):
        """The next solve's shift and warm start where the path of solutions through the
        last solve and this one meets the bound (:func:`_path_step`), or None; this solve
        becomes the last (``means``: its constraints' means over its predictions)."""
        last = (result.x, scores, self.shift.copy(), result, hard, means)
        before, self.last = self.last, last
        if before is None or not isinstance(scores, np.ndarray):
            return None  # (scores on a cluster: the sweep would be a pass of its own)
        if self.column_means is None:
            self.column_means = _column_means(self.problem, scores)
        depth = np.zeros(len(self.units), int)
        cap = _shift_cap(self.column_means, self.units, scores, self.base, depth, (_PATH_SHARE,))
        return _path_step(
            self.problem, self.units, before, self.last, self.base, cap, self.bound_tol
        )

    def move_bounds(self, scores, hard, active, nearest):
        """Move the surrogate's bounds for the next solve (:func:`_move_bounds`); False, with
        a word why, when the next solve would repeat this one: no further solve is worth it."""
        units, base = self.units, self.base
        if self.column_means is None:
            self.column_means = _column_means(self.problem, scores)
        missing = hard > BOUND_EPS
        # A solve at nine tenths of the way to parity can still miss by a hair where one
        # at 99 in 100 meets the bound (one group of 443 rows without an intercept: 0.0356
        # against a bound of 0.03, then 0.028): a miss at the cap deepens it once.
        deeper = _deepen(units, self.column_means, base, self.capped, missing, self.depth)
        if self._stalled(hard, missing, deeper, nearest):
            _say(
                self.verbose,
                f"no further solve: on predictions the constraints are "
                f"{np.round(hard, 4).tolist()}, at the tightest bound the surrogate allows",
            )
            return False
        self.depth[deeper] += 1
        before = self.shift.copy()
        self.misses = _move_bounds(
            self.problem, units, scores, hard, active, base, self.column_means, self.shift,
            self.capped, self.misses, self.trace, self.bound_tol, self.depth,
        )  # fmt: skip
        if np.all(np.abs(self.shift - before) <= _SAME_SHIFT * self.bound_tol):
            # The surrogate's bounds would not move (each that misses is at the tightest
            # bound the surrogate allows): the next solve would repeat this one. (Error-rate
            # parity on Adult by race: six such solves, none nearer the bound.)
            _say(
                self.verbose,
                f"no further solve: on predictions the constraints are "
                f"{np.round(hard, 4).tolist()}, and the surrogate's bounds are already the "
                "tightest it allows",
            )
            return False
        return True

    def _stalled(self, hard, missing, deeper, nearest):
        """Every unit that misses had the tightest bound the surrogate allows, and this solve
        came no nearer than an earlier one (or was at the deepest cap): another solve at that
        bound repeats it. (A strongly binding group on 1e6 rows: five more solves at the cap,
        their hard gaps 0.04-0.08 in no order, before the budget of solves ran out.)

        Only where the constant model meets the bound, so that the segment towards it does:
        error rates differ at a constant, and there the further solves found the bound (a9a,
        error-rate parity 0.0543: missed by 0.008 when the steering stopped).
        """
        return bool(
            np.any(missing)
            and np.all(self.capped[missing])
            and not np.any(deeper)
            and (np.max(hard) >= nearest or np.all(self.depth[missing] == len(_CAP_SHARES) - 1))
            and _constant_meets(self.units, self.column_means, self.base)
        )


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
    for k in range(len(units)):
        if not (hard[k] > BOUND_EPS or (active[k] and hard[k] < -bound_tol)):
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

    z_out = at(1.0 + reach, z_a, z_b)
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


def _between_sides(problem, units, infeasible, feasible, results, passes, base, verbose):
    """The fit once the solves are done: the best feasible solve if no solve missed, else
    the point of the segment from the nearest infeasible solve towards a feasible one (or
    the constant model, or a moved threshold) where the bounds on predictions hold."""
    if infeasible is None:
        # Every solve met the bound with room to spare (a looser one failed): keep the best.
        x, scores, _, result = feasible
        return _finish(problem, units, x, scores, results, [result], 0.0, passes)
    x_in, z_in, _, result_in = infeasible
    used = [result_in]
    if feasible is not None:
        x_out, z_out, _, result_out = feasible
        used.append(result_out)
    else:
        # No solve met the bound: the solve nearest it is moved towards the constant model
        # with its intercept (every prediction the same: every gap between groups' selection
        # rates, TPR and FPR is zero) until it meets the bound.
        coef, intercept = problem.coef(x_in)
        x_out = problem.point(np.zeros_like(coef), intercept)
        z_out = problem.constraint_scores(x_out)
        passes += _pass_share(problem)
        if np.any(units.values(problem.rate_constraints(z_out, offset=base)) > BOUND_EPS):
            # Not every bound holds at a constant (error rates differ between groups with
            # their base rates): the solve's threshold is moved instead, if some threshold
            # meets the bound; else the solve is returned, and the fit says the bound is not
            # met.
            del z_out
            moved = _threshold_point(problem, units, x_in, z_in, base)
            if moved is None:
                return _finish(problem, units, x_in, z_in, results, [result_in], 0.0, passes)
            _say(
                verbose,
                "no solve met the bound on predictions, nor does the constant model: the one "
                f"nearest it meets it with its intercept moved by {moved[0][-1] - x_in[-1]:+.4g}",
            )
            fit = _finish(problem, units, *moved, results, [result_in], 0.0, passes)
            fit.threshold_moved, fit.nearest = True, problem.coef(x_in)
            return fit
    t = _segment(problem)(units, z_in, z_out, base)
    # Scores are linear in x: those of the point on the segment need no data pass. They are
    # formed in the two ends' arrays (no longer needed), not in two new n-vectors.
    x = (1 - t) * x_in + t * x_out
    if isinstance(z_in, np.ndarray):
        z = np.multiply(z_in, 1 - t, out=z_in)
        z += np.multiply(z_out, t, out=z_out)
    else:  # scores on a cluster: a formula, scored where the rows are
        z = z_in * (1 - t) + z_out * t
    fit = _finish(problem, units, x, z, results, used, float(t), passes)
    fit.toward_constant = feasible is None
    if fit.toward_constant:
        fit.nearest = problem.coef(x_in)
    return fit


def _segment(problem):
    """:func:`_segment_point` for ``problem`` (a problem whose rows are on a cluster
    searches the segment with its own reductions)."""
    return getattr(problem, "segment_point", partial(_segment_point, problem))


def _threshold_point(problem, units, x, z, offset):
    """``(x, z)`` of the model ``x`` with its intercept moved by the least that meets every
    bound on predictions, or None (no threshold does, or no intercept).

    Adding ``delta`` to the intercept adds it to every score: the segment from ``z`` to
    ``z + delta`` with ``|delta|`` past every score (all rows one class at its end) holds
    every threshold on that side, and :func:`_segment_point` reads it in one sweep. Of the
    two sides, the smaller move that meets the bound is kept.
    """
    if not getattr(problem, "fit_intercept", False) or not len(z):
        return None
    abs_max = getattr(z, "abs_max", None)  # scores on a cluster: from their pass
    reach = float(np.max(np.abs(z)) if abs_max is None else abs_max()) + 1.0
    best = None
    for delta in (reach, -reach):
        t = _segment(problem)(units, z, z + delta, offset)
        moved = z + t * delta
        meets = np.all(units.values(problem.rate_constraints(moved, offset=offset)) <= BOUND_EPS)
        if t > 0 and meets and (best is None or abs(t * delta) < abs(best)):
            best = t * delta
    if best is None:
        return None
    x = x.copy()
    x[-1] += best
    return x, z + best


def _pass_share(problem):
    """Data passes of one score evaluation of the constraint rows."""
    return problem.n_constraint_samples / problem.n_samples


def _finish(problem, units, x, scores, results, used, t, passes, means=None):
    """The fit at ``x``, whose constraint-row ``scores`` are given (and the constraints'
    ``means`` over their predictions, ``problem.rate_constraints(scores, offset=0.0)``,
    where known)."""
    count = getattr(scores, "positive_count", None)  # scores on a cluster: from their pass
    if count is None:
        positive = scores > 0
        degenerate = bool(positive.all() or not positive.any())
    else:
        degenerate = count() in (0, len(scores))
    rates = problem.rate_constraints(scores) if means is None else means + problem.offset
    return HardRateFit(
        x=x,
        result=used[0],
        results=results,
        converged=all(r.converged for r in used),
        met=bool(np.all(units.values(rates) <= BOUND_EPS)),
        interpolated=t,
        degenerate=degenerate,
        n_data_passes=passes,
    )


def _top_order(scores, w, max_rate):
    """The rows in the order of a stable sort of ``-scores``, as far as :func:`rate_threshold`
    reads them: the highest scores until their weight exceeds ``max_rate``'s share, with
    every row tied with the last (the tie test), or all rows. Found by a partition, with only
    those rows sorted: a sort of
    all 900000 negatives was 0.06 s of a 0.8 s Neyman-Pearson fit on 1e6 x 20 rows."""
    n = len(scores)
    total = w.sum()
    q = min(n, 2 * int(np.ceil(max_rate * n)) + 2)
    while q < n:
        top = np.argpartition(-scores, q - 1)[:q]
        cut = scores[top].min()
        # Every row above the cut's score is in ``top``; rows tied with the cut may be left
        # out, so only the rows strictly above it are sure to come first. They must weigh
        # more than the bound, with one more row to spare.
        above = top[scores[top] > cut]
        if len(above) and w[above].sum() > max_rate * (1 + 1e-12) * total:
            # The rows up to and including every row tied at the cut: a stable order among
            # ties is by index, which the partition does not keep.
            keep = np.flatnonzero(scores >= cut)
            return keep[np.argsort(-scores[keep], kind="stable")]
        q = min(n, 2 * q)
    return np.argsort(-scores, kind="stable")


def rate_threshold(scores, weights, max_rate) -> float:
    """The lowest threshold ``t`` with ``weighted share of (scores > t) <= max_rate``.

    The share is then the largest that the bound allows (up to ties): a Neyman-Pearson model
    spends its false-positive budget on the training negatives instead of leaving it unused.
    ``t`` lies halfway between two distinct scores, so a score recomputed with other
    rounding stays on its side.
    """
    scores = np.asarray(scores, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = _top_order(scores, w, max_rate)
    s, share = scores[order], np.cumsum(w[order]) / w.sum()
    if len(s) < len(scores) and share[-1] <= max_rate * (1 + 1e-12):
        # (The partition's rows weigh just max_rate, up to the sums' rounding.)
        order = np.argsort(-scores, kind="stable")
        s, share = scores[order], np.cumsum(w[order]) / w.sum()
    # k rows may be positive: the largest k with share[k - 1] <= max_rate, and a tie between
    # row k - 1 and row k would make row k positive too, so back off to a distinct score.
    k = int(np.searchsorted(share, max_rate * (1 + 1e-12), side="right"))
    while 0 < k < len(s) and s[k - 1] == s[k]:
        k -= 1
    if k == len(s):
        return float(s[-1] - max(1.0, abs(s[-1])))
    if k == 0:
        return float(s[0] + max(1e-9, 1e-9 * abs(s[0])))
    return float(0.5 * (s[k - 1] + s[k]))


def fit_negative_weight(
    problem, solve, negatives, weights, max_rate, *, budget, max_rounds=8, rel_tol=0.25,
    verbose=0,
) -> HardRateFit:  # fmt: skip
    """Weight the negatives of a logistic ``problem`` until ``score > 0`` flags about
    ``max_rate`` of them.

    The false-positive rate of the weighted logistic fit falls as the negatives' weight
    grows, roughly like a power of it: secant steps on ``log rate`` against ``log weight``
    (warm started) stop when the rate is within a factor ``1 + rel_tol`` of ``max_rate``.
    The weight need not be exact: the estimator's threshold then spends the budget exactly;
    the weight only puts the logistic fit's boundary, where it ranks best, near the operating
    point.

    Parameters
    ----------
    problem : LinearProblem
        The weighted logistic problem (no constraints; its constraint rows are all rows).
    solve : callable
        As for :func:`fit_hard_rates`.
    negatives : ndarray of bool
        The negative rows (of the problem's rows).
    weights : ndarray
        The rows' sample weights, for the rate.
    max_rate : float
    budget : float
        Data passes for all solves together.
    verbose : int
        ``> 0`` prints a line before each solve: which one, and why it is needed.
    """
    base_u = problem.u  # read only: each round's weights are a new array
    share = getattr(problem, "positive_share", None)  # rows on a cluster: reductions
    if share is None:
        floor = 0.5 * weights[negatives].min() / weights[negatives].sum()
    else:
        floor = 0.5 * problem.smallest_weight_share(negatives)
    log_w, trace, results, passes = 0.0, [], [], 0.0
    best = None  # (|log error|, x, scores, result, log weight)
    warm = None
    for rnd in range(max_rounds):
        if passes >= budget:
            break
        if rnd == 0:
            _say(verbose, "solve 1: logistic regression, the negatives weighing 1")
            pb = problem
        else:
            u = np.where(negatives, np.exp(log_w), 1.0)
            u *= base_u
            pb = problem.with_objective_weights(u, overwrite=True)
            del u
        result = solve(pb, rnd, warm, budget - passes)
        del pb  # its weights (two n-vectors) are not needed past its solve
        results.append(result)
        passes += result.n_data_passes + _pass_share(problem)
        scores = problem.constraint_scores(result.x)
        if share is not None:
            rate = share(scores, negatives)
        else:
            rate = np.dot(weights[negatives], scores[negatives] > 0) / weights[negatives].sum()
        error = np.log(max(rate, floor)) - np.log(max_rate)
        if best is None or abs(error) < best[0]:
            best = (abs(error), result.x, scores, result, log_w)
        if abs(error) <= np.log1p(rel_tol):
            break
        trace.append((log_w, error))
        # The rate falls about as the weight grows; at most a factor e^3 a step.
        log_w -= float(np.clip(error / _secant_slope(trace, -1.0, -4.0, -0.25), -3.0, 3.0))
        if rnd + 1 < max_rounds and passes < budget:
            _say(
                verbose,
                f"solve {rnd + 2}: the boundary flags {rate:.4f} of the negatives, not within "
                f"a factor {1 + rel_tol:g} of max_fpr={max_rate:g} ({passes:.3g} of "
                f"{budget:g} passes spent): weighting the negatives {np.exp(log_w):.4g}",
            )
        warm = (result.x, None, None)
        # Kept in best if needed; the next round's scores do not come on top.
        del scores
    _, x, scores, result, log_w = best
    fit = _finish(problem, _Units(problem), x, scores, results, [result], 0.0, passes)
    fit.negative_weight = float(np.exp(log_w))
    return fit
