"""The model the steering returns once its solves are done: the point of the segment between
a solve that missed the bound on predictions and one that met it, or, where none met it,
towards the constant model or with the threshold moved (:func:`_threshold_point`).
"""

from __future__ import annotations

import numpy as np

from ..problems._numeric import BOUND_EPS
from ._hard_rates import _finish, _pass_share, _rescored, _say
from ._segment_sweep import _segment


def _between_sides(problem, units, infeasible, feasible, results, passes, base, verbose):
    """The fit once the solves are done: the best feasible solve if no solve missed, else
    the point of the segment from the nearest infeasible solve towards a feasible one (or
    the constant model, or a moved threshold) where the bounds on predictions hold."""
    if infeasible is None:
        # Every solve met the bound with room to spare (a looser one failed): keep the best.
        x, scores, _, result = feasible
        scores = _rescored(problem, x, scores)
        return _finish(problem, units, x, scores, results, [result], 0.0, passes)
    x_in, z_in, _, result_in = infeasible
    z_in = _rescored(problem, x_in, z_in)
    used = [result_in]
    if feasible is not None:
        x_out, z_out, _, result_out = feasible
        z_out = _rescored(problem, x_out, z_out)
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
