"""The steering's last word where its model leaves room inside the bound: the model of least
objective that meets the bound on predictions among those its solves reach
(:func:`best_met`).

The steering follows one side of the relation between the surrogate's bound and the rates on
predictions, and on groups of a few rows that relation is not monotone: a group of 8 rows
moves its selection rate by 0.125 a row. Demographic parity 0.05 on such a group: the first
solve missed by 0.001 on predictions, the tightened one selected none of the 8, and the
segment between them met the bound only 0.03 inside it, at objective 0.484; at 0.02 the
steering loosened its surrogate instead and ended at 0.449, a tighter bound at a lower
objective. Where the model ends that far inside the bound, other models the steering
already reached may meet it at less:

* each converged solve that meets the bound on predictions, the optimum of a posed problem;
* the converged solves among up to three with every unit's soft bound moved by one
  amount (first by the room the steering's model leaves, then halving towards the bound
  itself), where the steering's first solve, at the bound, missed it: the steering moves
  each unit by its own secant, and a unit moved far past a step of its rate leaves the
  model at a tighter surrogate than needed;
* on the segment from the unconstrained optimum towards each such solve, the first point
  that meets the bound. The objective is convex and least at the unconstrained optimum, so
  along that segment it rises: no point of it further on is better, and the point is no
  worse than the solve it heads to. The unconstrained solve is one the steering ran (a
  converged solve whose multipliers are all zero), else one solve with every bound
  loosened out of reach, warm started from the best of them;
* between any two converged solves, the first point from the lower that meets the bound
  (:func:`~._steering_pairs.between_solves`): a group's count of positive predictions
  passes through every value between the two ends, so two solves that both miss can
  meet the bound in between.

The search runs where the model leaves room, and also, at the bound, where one row moves
a constraint's value on predictions by more than ``_CELL_STEPS`` times ``bound_tol`` (a
cell of fewer than 20 rows at the default ``bound_tol``, :func:`_row_steps`): there the
steering's end is where its steps of a row happened to land, not the least objective near
the bound, and a looser bound's fit that stopped at its bound ended above a tighter one's
(equalized odds with a group of 8 rows: 0.1 at 0.6661 against 0.05 at 0.6622, now 0.6600).
Every search adds one solve with every soft band (or pair's gap) at the same narrow
half-width, whatever the bound (:func:`_solve_parity`): every bound's fit reaches the
segment from the unconstrained solve towards it.

Where no solve met the bound at all, the point between two solves of least objective is
returned before the steering's compromise (a solve moved towards the constant model, or its
threshold moved), where it is lower than that and than the constant model; where no two of
the steering's solves have such a point, the unconstrained solve and the narrow one are
paired too (76 of the 270 fits of the small-group sweep over
``benchmarks.families.random_family`` ended with the compromise, 30 now).

The model of least objective among those and the steering's own is returned. Its verdict
is that model's: a solve's own, or for a point of a segment converged where both ends
converged, as the steering's own segments between two solves are; the solver result it
reports (multipliers, residuals) is that of the solve, or of an end of the segment other
than the unconstrained solve. Under
``preset="paper"`` no solve is added and no pair searched: its solves are stochastic, and
one unconstrained solve added 35.5 passes to a case of the golden record without being
chosen; one the steering ran is still reused.
"""

from __future__ import annotations

import numpy as np

from ..problems._numeric import BOUND_EPS
from ._hard_rates import _finish, _pass_share, _say
from ._segment_sweep import _segment
from ._steering_groups import _below_constant
from ._steering_pairs import _READS, between_solves

__all__ = ["best_met"]

#: The share of an objective by which another model must be below the steering's own to
#: replace it: far above the rounding of two ways of summing the loss (a solve's objective
#: from the solver's pass, a point's from ``objective_value``).
_BETTER = 1e-9


def best_met(problem, units, fit, solve, seen, *, base, bound_tol, budget, free_solve=True,
             verbose=0):  # fmt: skip
    """``fit``, or where its model meets the bound with every unit more than ``bound_tol``
    inside it, the model of least objective among those of the module docstring.

    Parameters
    ----------
    problem : LinearProblem
        The problem at the bound (offsets ``base``).
    units : _Units
        Its constraints as the steering sees them.
    fit : HardRateFit
        The steering's fit; ``fit.results`` holds every solve it ran.
    solve : callable
        The steering's ``solve(problem, round, warm, budget)``.
    seen : dict
        ``id(result) -> (result, hard unit values)`` of the solves the steering judged
        (a solve it did not is scored here).
    base : ndarray
        The constraint offsets at the bound.
    bound_tol : float
        Width of the band below the bound.
    budget : float
        Data passes for all solves together (the unconstrained solve needs some left).
    free_solve : bool
        Whether the unconstrained solve may be run where the steering ran none (else the
        segments are not searched, nor the points between two solves: ``preset="paper"``,
        whose solves are stochastic).
    verbose : int
        ``> 0`` says which model is returned, and why.

    Returns
    -------
    HardRateFit
        ``fit`` itself, or the fit at the better model (its ``results`` with the
        unconstrained solve where one was run).
    """
    if free_solve and _no_solve_met(problem, fit):
        fit = _between_two(problem, units, fit, seen, base, verbose)
        if _no_solve_met(problem, fit) and fit.n_data_passes < budget:
            fit = _two_more(problem, units, fit, solve, seen, base, bound_tol, budget, verbose)
    room = _leaves_room(problem, fit, bound_tol)
    if not (room or free_solve and _small_cells(problem, fit, bound_tol)):
        return fit
    passes, share = fit.n_data_passes, _pass_share(problem)
    results = fit.results
    met, free = [], None
    for r in results:
        if not r.converged:
            continue
        hard, passes = _hard(problem, units, r, seen, base, passes)
        meets = _met(hard)
        if free is None and _unconstrained(r):
            free = r
            if meets:  # the least objective of all: nothing meets the bound at less
                z = problem.constraint_scores(r.x)
                return _refit(problem, units, fit, r.x, z, [r], 0.0, passes + share, verbose,
                              "the unconstrained solve, which meets the bound")  # fmt: skip
        if meets:
            met.append(r)
    if not met:
        return fit
    best = min(met, key=lambda r: r.objective)
    free_scores = None
    if free is None and free_solve and passes < budget:
        free, passes = _solve_free(problem, solve, best, results, budget - passes, passes)
        if free is not None:
            free_scores = problem.constraint_scores(free.x)
            passes += share
            if _met(units.values(problem.rate_constraints(free_scores, offset=base))):
                said = "the unconstrained solve, which meets the bound"
                return _refit(
                    problem, units, fit, free.x, free_scores, [free], 0.0, passes, verbose, said
                )
    first, passes = _hard(problem, units, results[0], seen, base, passes)
    if room and free_solve and free is not None and not _met(first):
        together, passes = _together(problem, units, solve, fit, best, base, budget, passes)
        met += together
    if free_solve and free is not None:
        passes = _solve_parity(problem, units, solve, fit, base, bound_tol, budget, passes, met)
    best = min(met, key=lambda r: r.objective)
    chosen = (best.objective, best.x, [best], 0.0)
    if free is not None:
        chosen, passes = _segments(problem, units, fit, free, free_scores, met, base, chosen,
                                   passes)  # fmt: skip
    del free_scores  # (a score a row: not kept while the model is scored)
    if free_solve:
        chosen, passes = _pairs(problem, units, fit.results, seen, base, chosen, passes)
    return _if_lower(problem, units, fit, chosen, passes, verbose)


def _if_lower(problem, units, fit, chosen, passes, verbose, below_constant=False):
    """The fit at the candidate ``chosen`` (``(objective, x, used, t)``) where it is below
    the steering's own model (and, with ``below_constant``, the constant model's), else
    ``fit`` (its passes counted)."""
    own, passes = _objective(problem, fit, passes)
    value, x, used, t = chosen
    lower = value < own - _BETTER * max(1.0, abs(own))
    if not (lower and (not below_constant or _below_constant(problem, value))):
        fit.n_data_passes = passes
        return fit
    z = problem.constraint_scores(x)
    passes += _pass_share(problem)
    said = (
        f"a converged solve that meets it, objective {value:.6g}"
        if t == 0.0
        else f"the point {t:.3g} of the way between two converged solves, the first that "
        f"meets it, objective {value:.6g}"
    )
    return _refit(problem, units, fit, x, z, used, t, passes, verbose, said, own)


def _pairs(problem, units, results, seen, base, chosen, passes):
    """``(chosen, passes)``: the candidate ``chosen`` (``(objective, x, used, t)``), or a
    point between two converged solves that meets the bound where one is lower
    (:func:`~._steering_pairs.between_solves`, the points of least bound read)."""
    points, read = between_solves(problem, units, results, seen, base)
    passes += read
    for _, t, a, b in points[:_READS]:
        x = (1.0 - t) * a.x + t * b.x
        value = _value(problem, x)
        passes += problem.n_objective_samples / problem.n_samples
        if value < chosen[0]:
            # (The unconstrained solve not first: the fit reports the first one's
            # multipliers and residuals, of a problem posed at bounds near the fit's.)
            chosen = (value, x, [b, a], 1.0 - t) if _unconstrained(a) else (value, x, [a, b], t)
    return chosen, passes


def _two_more(problem, units, fit, solve, seen, base, bound_tol, budget, verbose):
    """``fit`` where no point between two of its solves met the bound either, or the point
    between two solves once the unconstrained solve and :func:`_solve_parity`'s are among
    them."""
    passes = fit.n_data_passes
    _, passes = _solve_free(problem, solve, fit.result, fit.results, budget - passes, passes)
    passes = _solve_parity(problem, units, solve, fit, base, bound_tol, budget, passes, [])
    fit.n_data_passes = passes
    return _between_two(problem, units, fit, seen, base, verbose)


def _no_solve_met(problem, fit) -> bool:
    """Whether the steering's model meets the bound only by a move of a solve (towards the
    constant model, or of its threshold): no solve met it. In memory only (a problem on a
    cluster searches its segments with its own reductions)."""
    if getattr(problem, "segment_point", None) is not None or fit.hard is None:
        return False
    return bool(fit.met and (fit.toward_constant or fit.threshold_moved))


def _between_two(problem, units, fit, seen, base, verbose):
    """``fit``, or the point of least objective between two of its converged solves that
    meets the bound (:func:`~._steering_pairs.between_solves`) where it is below ``fit``'s
    and the constant model's objective (no further solve)."""
    chosen, passes = _pairs(problem, units, fit.results, seen, base, (np.inf,), fit.n_data_passes)
    if chosen[0] == np.inf:
        fit.n_data_passes = passes
        return fit
    return _if_lower(problem, units, fit, chosen, passes, verbose, below_constant=True)


#: Solves of :func:`_together` at most: a bisection of the room in two halves after the first.
_TOGETHER_SOLVES = 3


def _together(problem, units, solve, fit, start, base, budget, passes):
    """``(converged solves that meet the bound, passes)`` among a few with every unit's soft
    bound moved by one amount, the first by the room the steering's model leaves inside the
    bound, then halving towards the bound itself (where the steering's first solve missed it).

    The steering moves each unit by its own secant, and on groups of a few rows a hard rate
    moves in steps of a row: a unit moved far past its step leaves the model far inside the
    bound at the objective of a tighter surrogate than needed. A tighter bound's fit, whose
    first solve poses every soft bound alike, then ended lower (true-positive-rate parity,
    three groups of 100 rows with 13 to 20 positives: 0.05 at 0.3610, 0.1 at 0.3655)."""
    room = -float(np.max(fit.hard))
    lo, hi, out = 0.0, None, []
    shift = room
    warm = (start.x, start.multipliers, start.slack)
    for _ in range(_TOGETHER_SOLVES):
        if passes >= budget:
            break
        offset = base + units.spread @ np.full(len(units), shift)
        result = solve(problem.with_offset(offset), len(fit.results), warm, budget - passes)
        fit.results.append(result)
        passes += result.n_data_passes
        hard, passes = _hard(problem, units, result, {}, base, passes)
        if result.converged and _met(hard):
            out.append(result)
            hi, warm = shift, (result.x, result.multipliers, result.slack)
        else:
            lo = shift
        if hi is None:
            break  # the room itself misses: no bracket to halve
        shift = 0.5 * (lo + hi)
    return out, passes


#: The half-width of the soft bands of :func:`_solve_parity`'s solve, a share of ``bound_tol``.
_PARITY_SHARE = 0.1


def _solve_parity(problem, units, solve, fit, base, bound_tol, budget, passes, met):
    """``passes`` after one solve with every soft band of differences at the same narrow
    half-width, ``_PARITY_SHARE * bound_tol`` whatever the bound (appended to
    ``fit.results``, and to ``met`` where it converged and meets the bound; none where the
    constraints are not differences of rates with one offset, :func:`_differences`).

    The segment from the unconstrained solve towards it (:func:`_segments`) is one the fit
    at every bound reaches alike: its first point meeting a looser bound comes no later on
    it, at no higher objective (convex, least at its start). Tighter fits had reached such
    solves on their own and ended lower than looser ones (true-positive-rate parity with
    two groups of 22 rows: 0.02 at 0.4940 from a solve at half-width 0.001, 0.05 at
    0.5123; with this solve, 0.4924 and 0.4919)."""
    if passes >= budget or not _differences(problem, base):
        return passes
    offset = np.full(len(base), -_PARITY_SHARE * bound_tol)
    # Warm started from the solve whose bounds bind hardest (its largest multiplier): from
    # the unconstrained solve it took 17.9 passes a solve on a tenth of the small-group
    # sweep, 7.5 from there (the same optimum: the objective is strictly convex).
    near = max(
        (r for r in fit.results if r.converged),
        key=lambda r: float(np.max(np.abs(r.multipliers), initial=0.0)),
    )
    warm = (near.x, near.multipliers, near.slack)
    # At most twice the passes of the costliest solve so far: with cells of a row or two a
    # narrow band can take many (equalized odds, two groups of 8 rows with 1-2 positives: 90
    # passes where the fit's other solves took 4-16), and a solve cut short is not used.
    cap = 2.0 * max(r.n_data_passes for r in fit.results)
    result = solve(problem.with_offset(offset), len(fit.results), warm, min(cap, budget - passes))
    fit.results.append(result)
    hard, passes = _hard(problem, units, result, {}, base, passes + result.n_data_passes)
    met += [result] if result.converged and _met(hard) else []
    return passes


def _differences(problem, base) -> bool:
    """Whether every constraint is a difference of rates (zero where every prediction is
    the same: a band's side or a pair's gap) with one offset, the bound's: its soft value
    at parity is then the offset, whatever the overall rate. (Not ratios, nor error rates,
    whose offsets hold each group's base rate.)"""
    if not len(base) or np.ptp(base) > 0:
        return False
    at_ones = problem.rate_constraints(np.ones(problem.n_constraint_samples), offset=0.0)
    return bool(np.all(np.abs(at_ones) <= 1e-12 * max(1.0, float(np.max(np.abs(problem.W))))))


def _segments(problem, units, fit, free, free_scores, met, base, chosen, passes):
    """``(chosen, passes)``: the candidate ``chosen`` (``(objective, x, used, t)``), or the
    first point meeting the bound on a segment from the unconstrained solve ``free``
    (constraint-row scores ``free_scores``, or ``None`` if not read yet) towards a solve of
    ``met`` where one is lower."""
    # (A segment the steering itself ended on, from the unconstrained solve towards a solve
    # that met the bound, gives its own model again.)
    ends = {id(r) for r in fit.used} if fit.interpolated else set()
    towards = [r for r in met if not {id(free), id(r)} <= ends]
    if towards and free_scores is None:
        free_scores = problem.constraint_scores(free.x)
        passes += _pass_share(problem)
    for r in towards:
        point, passes = _segment_candidate(problem, units, free, free_scores, r, base, passes)
        if point[0] < chosen[0]:
            chosen = point
    return chosen, passes


def _leaves_room(problem, fit, bound_tol) -> bool:
    """Whether the steering's model meets the bound with every unit more than ``bound_tol``
    inside it, in memory (a problem on a cluster searches its segments with its own
    reductions: not done here), and is neither moved off a solve towards the constant model
    nor by a threshold (no solve met the bound) nor the unconstrained solve itself."""
    if getattr(problem, "segment_point", None) is not None or fit.hard is None:
        return False
    if not fit.met or fit.toward_constant or fit.threshold_moved or fit.group_thresholds:
        return False
    if fit.x is fit.result.x and fit.result.converged and _unconstrained(fit.result):
        return False
    return bool(np.max(fit.hard, initial=-np.inf) < -bound_tol)


#: How many times ``bound_tol`` one row must move a constraint's value on predictions for
#: a fit at its bound to search further (:func:`_small_cells`).
_CELL_STEPS = 10.0


def _small_cells(problem, fit, bound_tol) -> bool:
    """Whether the steering's model meets the bound, in memory, off the unconstrained
    solve, where one row moves a constraint's value on predictions by more than
    ``bound_tol`` (:func:`_row_steps`)."""
    if getattr(problem, "segment_point", None) is not None or fit.hard is None or not fit.met:
        return False
    if fit.x is fit.result.x and fit.result.converged and _unconstrained(fit.result):
        return False
    return _row_steps(problem) > _CELL_STEPS * bound_tol


def _row_steps(problem) -> float:
    """The most one row's prediction moves a constraint's value on predictions (a cell of
    about ``1 / step`` rows). A row the constraint rows list several times (groups balanced
    for the minibatches) moves each of its copies."""
    W, n = problem.W, problem.W.shape[0]
    rows = getattr(problem.A_con, "rows", None)
    if rows is None:
        return float(max(np.max(W), -np.min(W))) / n
    return max(float(np.max(np.bincount(rows, np.abs(W[:, k])))) for k in range(W.shape[1])) / n


def _met(hard) -> bool:
    """Whether hard unit values meet the bound (as the steering judges its solves)."""
    return bool(np.all(hard <= BOUND_EPS))


def _hard(problem, units, result, seen, base, passes):
    """``(hard unit values, passes)`` of a solve: as the steering read them, else scored."""
    kept = seen.get(id(result))
    if kept is not None and kept[0] is result:
        return kept[1], passes
    z = problem.constraint_scores(result.x)
    return units.values(problem.rate_constraints(z, offset=base)), passes + _pass_share(problem)


def _unconstrained(result) -> bool:
    """Whether a converged solve is the unconstrained optimum: every multiplier is zero
    (its KKT conditions are then the objective's own)."""
    return bool(result.converged and not np.any(np.asarray(result.multipliers) != 0))


def _solve_free(problem, solve, start, results, budget, passes):
    """``(result, passes)`` of one solve with every bound loosened past any model's reach,
    warm started from ``start`` with no multiplier; ``(None, passes)`` where it does not
    converge. (Each constraint is a mean of ``W`` over the rows' predictions: below the sum
    of its positive entries over the rows whatever the predictions.)"""
    W = problem.W
    reach = np.maximum(W, 0.0).sum(axis=0) / W.shape[0]
    loose = problem.with_offset(-(reach + 1.0))
    warm = (start.x, np.zeros(problem.n_constraints), None)
    result = solve(loose, len(results), warm, budget)
    results.append(result)
    passes += result.n_data_passes
    return (result if result.converged else None), passes


def _segment_candidate(problem, units, free, free_scores, toward, base, passes):
    """``((objective, x, used, t), passes)`` of the first point meeting the bound on the
    segment from the unconstrained solve ``free`` towards the solve ``toward``."""
    z = problem.constraint_scores(toward.x)
    passes += _pass_share(problem)
    t = float(_segment(problem)(units, free_scores, z, base))
    del z
    x = (1.0 - t) * free.x + t * toward.x
    value = _value(problem, x)
    passes += problem.n_objective_samples / problem.n_samples
    # (The solve met the bound first in the list: its multipliers and residuals are of a
    # problem posed at the steering's bounds, those of the unconstrained one are not.)
    return (value, x, [toward, free], t), passes


def _objective(problem, fit, passes):
    """``(objective, passes)`` of the steering's model: its solve's, or read on the rows."""
    if fit.x is fit.result.x:
        return float(fit.result.objective), passes
    return _value(problem, fit.x), passes + problem.n_objective_samples / problem.n_samples


def _value(problem, x) -> float:
    """The objective at ``x`` on every objective row (as the solver's: loss plus penalty)."""
    return float(problem.objective_value(x, slice(None)) + problem.h.value(x))


def _refit(problem, units, fit, x, z, used, t, passes, verbose, said, own=None):
    """The fit at ``x`` (constraint-row scores ``z``), from the solves ``used``."""
    was = "" if own is None else f" (the steering's model: {own:.6g})"
    _say(verbose, f"the steering's model leaves room inside the bound; returned: {said}{was}")
    out = _finish(problem, units, x, z, fit.results, used, t, passes)
    out.at_cap = fit.at_cap
    return out
