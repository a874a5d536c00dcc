"""The steering of a fit on more than two classes to its bound on predictions (see
:mod:`._multiclass`): re-solves at soft bounds moved by the hard violation
(:func:`_steer_soft_bounds`) and the segment between solves (the class offsets:
:mod:`._class_offsets`).
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import softmax

from ..problems._numeric import BOUND_EPS
from ..solver.settings import finish_tolerances
from . import _solve as solving  # every run through _solve.py's _solve: one seam
from ._class_offsets import _fair_offsets
from ._hard_rates import _say
from ._multiclass_segment import _segment
from ._towards_constant import first_towards_constant

#: The most solves of a fairness fit's steering (the first included).
_MAX_ROUNDS = 10
#: The secant of the steering (see _move_bounds): from soft values this far apart, its
#: slope within [1 / _SECANT_MAX, _SECANT_MAX].
_SECANT_MIN_STEP = 1e-4
_SECANT_MAX = 4.0
#: Bisections of a move of the soft bounds that would leave no room (see _move_bounds).
_ROOM_BISECTIONS = 12
#: The most solves of :func:`_rescue_bounds`, on top of the rounds.
_RESCUES = 5
#: The share of ``max_passes`` a polish of the first solve may spend (:func:`_polished`).
#: Over 126 digits fits (``benchmarks.families.multiclass_ties``, draws 0-2) every polish
#: that converged took 10 passes but one (21); the 7 that did not ran out of a tenth (30
#: passes each, 210 in all, for nothing kept). At a twentieth: 5369 -> 5177 passes, the same
#: models but three (log-loss within 1e-3), every fit converged.
_POLISH_SHARE = 0.05
#: A polish of a first solve that missed the bound (see :func:`_segments`) runs this many
#: passes first, and goes on only where its residuals are then within
#: ``_POLISH_PROBE_FACTOR`` times the finish's tolerances (see :func:`_probe_goes_on`).
_POLISH_PROBE_PASSES = 6
_POLISH_PROBE_FACTOR = 50.0
#: The least share of the bracket's width between a step of _narrow_bracket and either
#: end: each step narrows it by a fifth at least.
_BRACKET_SHARE = 0.2
#: The finish's tolerances of a steered fairness fit's solves (the first, at the bound
#: itself, and the re-solves at moved soft bounds), as a share of the stop test's (other
#: fits: ``_solve._FINISH_TOL``, 1e-3): half of it, so every solve is converged by the stop
#: test's own measure. The steering moves the soft bounds by the hard rates, within a band
#: of ``bound_tol`` (0.005), and a hard rate moves in steps of a row (1/60 on wine's
#: groups): soft rates within 5e-3 (tol=0.01, in the Euclidean norm of all of them) are as
#: fine as that band, and the outer iterations that took them on to 1e-3 cost a quarter of
#: the passes (a re-solve of digits, the group tied to the class halves, per-class bound
#: 0.04: residuals 1.1e-3 after 23 passes, 1.7e-4 after 67). Issue 49's sweep on digits
#: and wine (42 fits, see CHANGELOG): to 1e-3, 7 fits over 100 passes and 2642 passes in
#: all; to 3e-3, 3 and 2198; to 5e-3, 1 and 2040. To 7e-3 and 1e-2 the steering of wine
#: (tied to the class halves, 0.1) bounced between soft bounds in 1-pass solves until its
#: rounds ran out and ended on the segment to the constant model. The model is a solve's
#: (or the first solve's, polished to 1e-3 of tol).
_RESOLVE_FINISH_TOL = 0.5


def _relaxation_room(problem, offset):
    """The largest ``delta`` such that some cell means (a point of the simplex per cell, as
    if the model could tell every cell apart) meet every constraint with ``offset`` within
    ``delta``: ``< 0`` where the bounds ask for the empty set (a linear programme)."""
    cost, A_ub, A_eq, b_eq, bounds = _room_programme(problem)
    out = linprog(
        cost, A_ub=A_ub, b_ub=-np.asarray(offset, dtype=float), A_eq=A_eq, b_eq=b_eq,
        bounds=bounds, method="highs",
    )  # fmt: skip
    return float(-out.fun) if out.status == 0 else -np.inf


def _has_room(problem, offset) -> bool:
    """Whether ``_relaxation_room(problem, offset) >= 0``: without the programme where the
    same cell means in every cell (each class's share ``1 / K``) meet every constraint
    with ``offset`` within ``_ROOM_MARGIN`` (a point of the programme whose ``delta`` is
    that margin at least, far above its solver's tolerances). A parity constraint is then
    its offset alone: every move of wine's and digits' soft bounds at per-class bounds
    0.02 and 0.05 was decided so (one programme of 0.5 to 2.5 ms each)."""
    K = problem.M.shape[1]
    common = problem.M.sum(axis=(0, 1)) / K + np.asarray(offset, dtype=float)
    if np.max(common, initial=-np.inf) <= -_ROOM_MARGIN:
        return True
    return _relaxation_room(problem, offset) >= 0


#: The least ``delta`` of the same cell means that :func:`_has_room` takes as proof.
_ROOM_MARGIN = 1e-6
#: Each problem's programme of :func:`_relaxation_room` but the offsets (see
#: :func:`_room_programme`), while the problem lives.
_ROOM_PROGRAMMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _room_programme(problem):
    """``(cost, A_ub, A_eq, b_eq, bounds)`` of :func:`_relaxation_room`'s linear programme,
    formed once per problem (its cells' weights ``M`` do not change during a fit; the
    offsets do): building its sparse matrices took half of each programme's time, and
    the programmes 41 % of a wine fit's (per-class bound 0.02: 8 programmes, 99 of 240
    ms). The same matrices, so the same optimum to the bit."""
    kept = _ROOM_PROGRAMMES.get(problem)
    if kept is not None and kept[0] is problem.M:
        return kept[1]
    n_cells, K, m = problem.M.shape
    # Variables: the cell means R (n_cells x K, row by row), then delta (maximised).
    A_ub = sp.hstack([sp.csr_matrix(problem.M.reshape(n_cells * K, m).T), np.ones((m, 1))])
    A_eq = sp.hstack([sp.kron(sp.eye(n_cells), np.ones((1, K))), sp.csr_matrix((n_cells, 1))])
    cost = np.zeros(n_cells * K + 1)
    cost[-1] = -1.0
    bounds = [(0.0, 1.0)] * (n_cells * K) + [(None, 1.0)]
    programme = (cost, A_ub, A_eq, np.ones(n_cells), bounds)
    _ROOM_PROGRAMMES[problem] = (problem.M, programme)
    return programme


def _steer_soft_bounds(est, problem, results, kwargs, seed, passes, x_const, tol, base, rounds):
    """Re-solve at soft bounds moved by the hard violation until the bound holds on the
    training predictions (offsets ``base``), each active constraint within ``tol`` of it;
    once a converged solve on each side of the bound is found, at soft bounds between theirs
    (:func:`_narrow_bracket`) until the bracket is as narrow as a solve can tell apart. The
    rounds and the budget end the search too (see the module docstring).

    Returns ``(x, results, chosen, passes, moved)``: the model, every solve, the solve whose
    verdict is the fit's, the passes so far and how a model that no solve met the bound
    with was moved (None: not moved; see :func:`_moved`). ``x_const`` None: no segment is
    searched (Neyman-Pearson's class offsets meet the bound instead).
    """
    # (solve, its scores, its soft bounds, its hard values): the converged solve of least
    # objective that met the bound, the last converged one that missed it, the one that
    # missed it by the least (_rescue_bounds); the first solve (_towards_constant).
    met = missed = nearest = low = first = None
    seen = None  # the soft and hard values of the last converged solve
    rescues = 0  # the solves of _rescue_bounds so far
    starts = []  # (the solve started from, the soft bounds) of each re-solve so far
    while True:
        last = results[-1]
        scores = problem.scores(last.x)
        passes += 1.0
        first = (last, scores) if first is None else first
        hard = problem.class_rate_constraints(np.argmax(scores, axis=1), base)
        soft = problem.rate_constraints(softmax(scores, axis=1), np.zeros_like(base))
        active = last.multipliers > 0
        entry = (last, scores, problem.offset.copy(), hard)
        if last.converged and np.all(hard <= BOUND_EPS):
            # (of equal objectives the latest: the bracket's met end moves with it, where
            # it stayed and the same re-solve ran again and again: digits, the group
            # leaning on odd labels, per-class bound 0.05, seven alike in 51 passes)
            if met is None or last.objective <= met[0].objective + 1e-6:
                met = entry
            if not np.any(active & (hard < -tol)):
                break
        elif last.converged:
            missed = entry
            if nearest is None or hard.max() < nearest[3].max():
                nearest = entry
            if low is None or last.objective < low[0].objective:
                low = entry
        bracket = met is not None and missed is not None and x_const is not None
        spent = len(results) - rescues >= rounds  # (rescues come on top of the rounds)
        rescue = spent and x_const is not None and met is None and nearest is not None
        rescue = rescue and rescues < _RESCUES
        if (spent and not rescue) or passes >= est.max_passes - 1:
            break
        warm = last
        if bracket and _outside_bracket(met, missed, last):
            # (the miss is the last solve: the moves start from its values)
            _move_bounds(
                est, problem, (soft, hard), seen, active, tol, base, passes, len(results)
            )  # fmt: skip
        elif bracket:
            # (a bracket moves the worst constraint: its met end's within the band ends it)
            if met[3].max() >= -tol or not _narrow_bracket(est, problem, met, missed, tol, passes):
                break
        elif rescue:
            _rescue_bounds(est, problem, nearest, rescues, tol, passes)
            # (the segment's end that missed: the nearest miss, not the last move's)
            warm, missed, rescues = nearest[0], nearest, rescues + 1
        else:
            # (Neyman-Pearson: one re-solve whose bounds the class offsets then meet.)
            met_yet = met is not None or x_const is None
            _move_bounds(
                est, problem, (soft, hard), seen, active, tol, base, passes, len(results),
                met_yet,
            )  # fmt: skip
        if last.converged:
            seen = (soft, hard)
        if any(_same_bounds(problem, o, w, warm, bracket) for w, o in starts):
            break
        starts.append((warm, problem.offset.copy()))
        more = _resolve_settings(est, kwargs, warm, passes, x_const is not None)
        results.append(solving._solve(problem, seed + [len(results)], more))
        passes += results[-1].n_data_passes
    problem.offset = base
    if met is not None:
        # The solves that missed below the met one's objective (see _segments); the miss
        # of least objective only where the met solve is more than the band inside the
        # bound (the steering overshot: within the band, its model is what it aims at).
        below = [
            e if e is not None and e[0].objective < met[0].objective else None
            for e in (missed, low)
        ]
        if met[3].max() >= -tol or (
            missed is not None and low is not None and low[0] is missed[0]
        ):
            below[1] = None
        met, passes = _polished(est, problem, kwargs, seed, passes, results, met[:2])
        x = met[0].x
        if x_const is not None:
            args = (est, problem, kwargs, seed, passes, results, base, met, *below)
            x, scores, passes = _segments(*args)
            x, _ = first_towards_constant(problem, base, first, x, scores, x_const, est.verbose)
        return x, results, met[0], passes, None
    if x_const is None or problem.meets_bounds(scores, base):
        return last.x, results, last, passes, None
    return _moved(problem, results, passes, x_const, base, last, scores, nearest)


def _segments(est, problem, kwargs, seed, passes, results, base, met, missed, low):
    """``(x, scores, passes)``: the model of a fit whose solves met the bound (``met``, polished):
    the point nearest ``missed`` (the last converged solve that missed it, None where it is
    above the met solve's objective) on the segment to the met solve that meets the bound
    (the loss is convex, so the point is below the met solve's objective), else the met
    solve; of that and the same point from ``low`` (another converged miss, the one of
    least objective, often the first solve; or None), the one of least training objective.

    On 300 rows of three classes (per-class parity 0.06) the last miss was above the met
    solve, itself far inside the bound (a gap of 0.013), and the first solve's segment met
    the bound at an objective of 1.009 where the met solve was at 1.024 (the fit at 0.04:
    1.012). ``low`` is looked at only where the met solve is more than the band inside the
    bound, as the binary steering's least-objective model (``_steering_best``), and is not
    polished (see :func:`_polished`): over wine's 168 fits of
    ``benchmarks.multiclass_sweep``, polishing the first solve where its segment won gave
    5 models lower by at most 0.0026 of log-loss for 541 more passes."""

    def along(start):
        t = _segment(problem, base, start[1], met[1])
        point, at = (1 - t) * start[0].x + t * met[0].x, (1 - t) * start[1] + t * met[1]
        return problem.objective_of_scores(point, at), point, at

    x, scores = met[0].x, met[1]
    if missed is not None:
        missed, passes = _polished(
            est, problem, kwargs, seed, passes, results, missed[:2], probe=True
        )  # fmt: skip
        t = _segment(problem, base, missed[1], met[1])
        x, scores = (1 - t) * missed[0].x + t * x, (1 - t) * missed[1] + t * scores
    if low is None:
        return x, scores, passes
    value, point, at = along(low)
    if value < problem.objective_of_scores(x, scores):
        return point, at, passes
    return x, scores, passes


def _moved(problem, results, passes, x_const, base, last, scores, nearest):
    """Where no solve met the bound on predictions: of the last solve moved towards the
    constant model ``x_const`` (the least share of the way that meets the bound) and the
    solve nearest the bound with its class offsets moved (:func:`._fair_offsets`), the model
    of least training objective; ``moved`` says which: ``("constant", share)`` or
    ``("offsets", offsets)`` (the last solve itself, ``None``, where neither meets it).
    """
    passes += 1.0
    t = _segment(problem, base, scores, problem.scores(x_const))
    found = [] if t is None else [((1 - t) * last.x + t * x_const, last, ("constant", t))]
    if nearest is not None and problem.fit_intercept:
        delta = _fair_offsets(problem, nearest[1], base)
        if delta is not None:
            coef, intercept = problem.coef(nearest[0].x)
            found.append((problem.point(coef, intercept + delta), nearest[0], ("offsets", delta)))
    if not found:
        return last.x, results, last, passes, None
    if len(found) > 1:  # (a read of the rows each)
        passes += len(found)
        found.sort(key=lambda f: _objective(problem, f[0]))
    x, chosen, moved = found[0]
    return x, results, chosen, passes, moved


def _rescue_bounds(est, problem, nearest, rescues, tol, passes):
    """Set the soft bounds of a rescue: where the rounds are spent and no solve met the
    bound on predictions, those of ``nearest`` (the converged solve that missed it by the
    least), every one tightened by a margin, the next solve starting from it. The margin:
    the nearest miss plus ``tol``, doubled at each rescue that missed too (at most
    ``_RESCUES``).

    Until then such a fit was moved towards the constant model, and the segment there
    meets the bound only near its end where the hard rates along it rise before they fall:
    on digits (the group tied to the class halves, per-class bound 0.03) with numpy 1.24 and
    scipy 1.9 the moves of the soft bounds one by one (:func:`_move_bounds`) each met all
    but one or two of the 20 coupled constraints, missing by a row or two, another each
    time, and the fit ended all the way to the constant model (test accuracy 0.130, where
    newer versions met the bound at 0.837). A margin on every bound at once trades no miss
    for another. The rescue is set by the count of solves, not by the values they reached:
    where the moves stall follows the last bits of the arithmetic.
    """
    margin = (max(float(nearest[3].max()), 0.0) + tol) * 2.0**rescues
    _move_with_room(problem, nearest[2] + margin)
    _say(
        est.verbose,
        f"next solve (rescue {rescues + 1} of {_RESCUES}): no solve "
        f"met the bound on predictions, the nearest missed it by {nearest[3].max():.4f}; "
        f"its soft bounds, each tightened by {margin:.4g}, from its solution "
        f"({passes:.3g} of {est.max_passes:g} passes spent)",
    )


def _same_bounds(problem, offset, start, warm, bracket) -> bool:
    """Whether the next re-solve (from ``warm``, at ``problem.offset``) would repeat one at
    soft bounds ``offset`` from ``start``: the same bounds from the same start (with the
    solver's search off a re-solve does not depend on its seed), or, inside a bracket, the
    same bounds from any start (the bracket did not narrow; a solve from elsewhere only
    wanders between the nonconvex surrogate's optima).

    On wine (the group drawn at random, draw 1, per-class bound 0.02) the rescues from the
    nearest miss made no move at the edge of the room, and the last three re-ran the solve
    before them (6 passes each, the same objective). On wine (the group tied to the class
    halves, draw 0, 0.08) a bracket solve met the bound above the met end's objective, the
    bracket stayed, and three more solves at the same soft bounds each met it a little
    higher (53 passes, 47 now, the same model)."""
    return (bracket or start is warm) and np.array_equal(problem.offset, offset)


def _outside_bracket(met, missed, last) -> bool:
    """Whether the last solve is the bracket's ``missed`` end and misses a constraint whose
    soft bound is the same at both ends (each end ``(solve, scores, soft bounds, hard
    values)``): soft bounds between the ends' can meet it only by undoing the moves of the
    others, so the next move is :func:`_move_bounds`' from the miss (it tightens that one).

    On wine (the group tied to class 0, draw 0, per-class bound 0.03) the first solve met
    the bound with room; loosening the two constraints it held active made class 2's gap,
    unmoved, miss by 0.018, and the bracket's solves between the two ends undid the
    loosening: training log-loss 0.466, where the fit at 0.02 met both bounds at 0.395
    with those two loosened further and the others tightened."""
    if missed[0] is not last:
        return False
    return bool(np.any((missed[3] > 0) & (missed[2] == met[2])))


def _narrow_bracket(est, problem, met, missed, tol, passes):
    """Set the soft bounds of the next solve between those of the ``met`` and the ``missed``
    solve (each ``(solve, scores, soft bounds, hard values)``), where the line between their
    worst hard values reaches the band's middle (regula falsi, kept within the bracket's
    middle three fifths). False where the two sets of soft bounds are within ``tol / 2``: a
    re-solve's soft rates are no finer (see ``_RESOLVE_FINISH_TOL``).

    The first solve that meets the bound can be far inside it, and the segment from the
    one that missed (see :func:`_steer_soft_bounds`) is no solve's optimum: on wine (the
    group tied to the class halves, per-class bound 0.08) the first move overshot to a worst
    gap of 0.056, and the segment met the bound at a training log-loss of 0.1122, above the
    0.1102 of the fit at 0.06, whose model meets 0.08 as well. Solves inside the bracket
    find the model at 0.1095.
    """
    width = missed[2] - met[2]
    if np.max(np.abs(width)) <= 0.5 * tol:
        return False
    worst_met, worst_missed = met[3].max(), missed[3].max()
    share = (-0.5 * tol - worst_met) / max(worst_missed - worst_met, 1e-12)
    share = float(np.clip(share, _BRACKET_SHARE, 1 - _BRACKET_SHARE))
    problem.offset = met[2] + share * width
    _say(
        est.verbose,
        f"next solve: between the soft bounds of a solve that met the bound (worst "
        f"constraint on predictions {worst_met:+.4f}) and of one that missed it "
        f"({worst_missed:+.4f}), {share:.2f} of the way ({passes:.3g} of "
        f"{est.max_passes:g} passes spent)",
    )
    return True


def _objective(problem, x):
    """The training objective at ``x`` (a read of the rows)."""
    return problem.objective_value(x, slice(None)) + problem.h.value(x)


def _polished(est, problem, kwargs, seed, passes, results, entry, probe=False):
    """``(entry, passes)``: the fit's first solve, solved to the re-solves' tolerance, taken
    on to the finish's own (``_solve._FINISH_TOL``) where the model is built from it
    (``entry``, a pair (solve, its scores), is ``results[0]``'s), at the bound itself (the
    offsets the steering left), from its point and multipliers, within ``_POLISH_SHARE`` of
    the budget; kept where it converged and meets the bound on predictions as the first did.

    The model of a steered fit is a solve's, or a point between two: at the coarser
    tolerance of the first solve, a refit from the model itself (``warm_start``) moved the
    coefficients by 2.5e-3 (the segment from the first solve, which missed the bound).
    """
    first = results[0]
    if entry[0] is not first or kwargs.get("finish_tol") == solving._FINISH_TOL:
        return entry, passes
    more = _resolve_settings(est, kwargs, first, passes, fair=False)  # (its last penalty)
    more["finish_tol"] = solving._FINISH_TOL
    more["max_passes"] = min(more["max_passes"], _POLISH_SHARE * est.max_passes)
    if more["max_passes"] < 2:
        return entry, passes
    _say(
        est.verbose,
        f"solve {len(results) + 1}: the first solve taken on to the finish's tolerance "
        f"{solving._FINISH_TOL:g}, at the bound (the model is built from it)",
    )
    if probe and more["max_passes"] > _POLISH_PROBE_PASSES:
        polished = _probed(problem, seed + [len(results)], more, results)
        if polished is None:  # (abandoned: no read of its scores)
            return entry, passes + results[-1].n_data_passes
        passes += results[-1].n_data_passes
    else:
        polished = solving._solve(problem, seed + [len(results)], more)
    results.append(polished)
    passes += polished.n_data_passes + 1.0  # (and the read of its scores)
    scores = problem.scores(polished.x)
    meets = problem.meets_bounds(scores, problem.offset)
    if polished.converged and meets == problem.meets_bounds(entry[1], problem.offset):
        return (polished, scores), passes
    return entry, passes


def _probed(problem, seed, more, results):
    """The polish of :func:`_polished` at settings ``more`` in two runs: the first within
    ``_POLISH_PROBE_PASSES`` (appended to ``results``), then, where it neither converged nor
    was abandoned (:func:`_probe_goes_on`), the rest of the budget from its point,
    multipliers and last penalty. Returns that solve (the first, where it converged), or
    None where the polish was abandoned."""
    first = solving._solve(problem, seed, dict(more, max_passes=_POLISH_PROBE_PASSES))
    if first.converged:
        return first
    results.append(first)
    if not _probe_goes_on(first, more):
        return None
    rest = dict(more, x0=first.x, y0=first.multipliers, slack0=None)
    rest["max_passes"] = more["max_passes"] - first.n_data_passes
    if first.finish_history is not None and len(first.finish_history["beta"]):
        rest["beta0"] = float(first.finish_history["beta"][-1])
    return solving._solve(problem, seed, rest)


def _probe_goes_on(first, more) -> bool:
    """Whether a polish whose first run (``first``, at settings ``more``) did not converge
    goes on: its residuals within ``_POLISH_PROBE_FACTOR`` times the finish's tolerances.

    A polish of a missed first solve is kept where it converges and still misses (see
    :func:`_segments`). Of 42 on the wine and digits sweeps (``benchmarks.multiclass_sweep``'s
    fits), 20 did not converge in their 14 passes (16 of digits' 17): after 5 passes their
    residuals were 6.4e-4 to 8.7e-3 (tolerance 1e-5), those of wine's 16 kept at most
    4.2e-4; digits' one kept (3.3e-3) is now given up, its fit's log-loss within 1e-3."""
    tol, dual_tol = finish_tolerances(
        more["tol"], more["dual_tol"], more["finish_tol"], more.get("finish_dual_floor", 0.0)
    )
    worst = max(first.primal_residual / tol, first.dual_residual / dual_tol)
    return bool(worst <= _POLISH_PROBE_FACTOR)


def _resolve_settings(est, kwargs, last, passes, fair) -> dict:
    """The solver's settings of a re-solve of the steering from the ``last`` solve."""
    more = dict(kwargs, x0=last.x, y0=last.multipliers, slack0=None, search=False)
    # (the last pass: the training report's)
    more["max_passes"] = est.max_passes - passes - 1
    if last.finish_history is not None and len(last.finish_history["beta"]):
        # A fairness re-solve starts its penalty where the last solve's finish started (as
        # the binary steering does): from the last one's end (1e4 on digits) each of its
        # Newton solves took 80 to 130 reads at the moved bounds.
        more["beta0"] = float(last.finish_history["beta"][0 if fair else -1])
    if fair:
        more["finish_tol"] = _RESOLVE_FINISH_TOL
    return more


def _move_bounds(est, problem, values, seen, active, tol, base, passes, done, met_yet=True):
    """Set the soft bounds for the next solve (see :func:`_steer_soft_bounds`): of the violated
    constraints (tighter) and of the active ones met with room to spare (looser).

    ``values``: the soft (no offset) and hard values the last solve reached; ``seen``: those
    of the converged solve before it (None: none); ``met_yet``: whether a converged solve
    met the bound already.

    Until one did, the moves aim at the band's tight end, ``-tol``; the bounds met with room
    to spare are loosened by their room all the while. Aimed at the band's middle, the moves
    of digits' 20 coupled constraints (the group tied to the label, per-class bound 0.06)
    missed by 0.003 to 0.023 for five solves (300 passes) and the fit ended at the constant
    model. Left where they were until a solve met the bound (as up to mc21), they held the
    fit in a problem tighter than the user's: on wine (the group tied to one class,
    per-class bound 0.04) the gap of class 2 was tightened by 0.076, the fit met the bound
    at a training log-loss of 0.463, where the fit at 0.03 met it at 0.429 with the bounds
    of class 0's gaps loosened by 0.007 and 0.027.
    """
    soft, hard = values
    # Aim at the band [-tol, 0] (see above): a soft bound at the soft value reached, moved
    # by the hard value's distance from there times the soft value's change per change of
    # the hard one, from the last two solves (a secant; 1 until known, or where the hard
    # value moved against the soft one, by other constraints' moves). On wine the hard gap
    # moved twice as far as the soft one, and the moves overshot from side to side.
    aim = 0.5 * tol if met_yet else tol
    slope = np.ones_like(soft)
    if seen is not None:
        ds, dh = soft - seen[0], hard - seen[1]
        known = (np.abs(ds) > _SECANT_MIN_STEP) & (dh * ds > 0)
        slope[known] = np.clip(dh[known] / ds[known], 1 / _SECANT_MAX, _SECANT_MAX)
    if not met_yet:
        # A bound met with room is loosened no further than its hard value's distance:
        # loosened by four times that (the secant's shallowest slope), a digits gap went
        # from -0.019 to +0.020.
        slope = np.where(hard < 0, np.maximum(slope, 1.0), slope)
    loosen = active & (hard < -tol)
    moving = (hard > 0) | loosen
    target = _targets(problem, soft, hard, aim, slope, moving, active, base)
    _move_with_room(problem, target)
    _say(
        est.verbose,
        f"solve {done + 1}: on predictions the constraints are "
        f"{np.round(hard, 4).tolist()} (a value > 0 misses the bound, an active one below "
        f"-{tol:g} leaves it unused; {passes:.3g} of {est.max_passes:g} passes spent): "
        f"the surrogate's bounds of constraints {np.flatnonzero(moving).tolist()} set to "
        f"the bound + {(np.round(base - problem.offset, 4)[moving] + 0.0).tolist()}",
    )


def _targets(problem, soft, hard, aim, slope, moving, active, base):
    """The soft bounds (offsets) that the moves of :func:`_move_bounds` ask for."""
    target = np.where(moving, -(soft - (hard + aim) / slope), problem.offset)
    # An inactive bound that an earlier move tightened goes back to the bound itself: it
    # does not shape the solution, and kept it left no room for the moves of the others
    # (wine: the gap g0 - g1 of class 0 held below -0.025 while its reverse was tightened).
    return np.where(~moving & ~active & (target > base), base, target)


def _move_with_room(problem, target):
    """Move the soft bounds (``problem.offset``) towards ``target``, short of asking for the
    empty set.

    Bounds moved one by one can ask for the empty set: the gaps g - h and h - g of one
    class tightened in turn, or three classes' gaps whose sum is 0 (each group's rates
    sum to 1); on wine at 0.02 such re-solves spent their budget raising the penalty to
    1e15. So the move stops halfway to where no cell means meet the bounds at all (the
    room of :func:`_relaxation_room`, concave along the move: halfway keeps half of the
    room the last bounds had, which their solve's cell means met).
    """
    step = target - problem.offset
    if not _has_room(problem, target):
        lo, hi = 0.0, 1.0
        for _ in range(_ROOM_BISECTIONS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _has_room(problem, problem.offset + mid * step) else (lo, mid)
        step = 0.5 * lo * step
    problem.offset = problem.offset + step
