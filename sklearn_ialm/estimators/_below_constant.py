"""The constant model as a floor of a fairness fit on more than two classes.

Predicting the majority class for every row meets every parity bound that the constant
model meets, at the training objective of the class shares' entropy. A steered fit's
solves are posed at soft bounds the steering moved (often tighter than the bound), where
the constant model may not be feasible, so a converged solve can end above it: 300 rows of
three classes, a group of 34 rows, demographic parity 0.02 ended at a training objective of
1.121 where the constant model's is 1.083 (found by ``tests/test_invariants.py`` with
hypothesis's seed 2029). The model returned is then the point of least objective that
meets the bound on the segment from the steering's model to the constant model (the
scores are linear in the parameters: no row is read), and the fit says so.
"""

from __future__ import annotations

import numpy as np

#: The segment's points tried (besides the minimum of the objective along it).
_GRID = 32
#: Golden-section steps for the objective's minimum along the segment (convex in ``t``).
_GOLDEN_STEPS = 25
#: A model above the constant's objective by less than this share of it is kept.
_REL_TOL = 1e-9


def at_least_constant(problem, x, scores, x_const, base):
    """``(x, scores, moved)``: the steering's model ``x`` (with its training ``scores``)
    where its objective is at most the constant model's ``x_const`` or the constant model
    misses the bound (offsets ``base``), and ``moved`` None; else the point of least
    objective meeting the bound on the segment from ``x`` to ``x_const``, and ``moved``
    ``("constant objective", (t, found, constant, returned))``: the share of the way to the
    constant model, the objectives of ``x``, of the constant model and of the point."""
    _, intercept = problem.coef(x_const)
    const_scores = np.broadcast_to(intercept, scores.shape)
    found = problem.objective_of_scores(x, scores)
    constant = problem.objective_of_scores(x_const, const_scores)
    if found <= constant * (1.0 + _REL_TOL) or not problem.meets_bounds(const_scores, base):
        return x, scores, None

    def point(t):
        return (1.0 - t) * x + t * x_const, (1.0 - t) * scores + t * const_scores

    def value(t):
        return problem.objective_of_scores(*point(t))

    candidates = [_least_along(value), *np.linspace(0.0, 1.0, _GRID + 1)]
    best_t, best_value = 1.0, constant
    for t in candidates:
        v = value(t)
        if v < best_value and problem.meets_bounds(point(t)[1], base):
            best_t, best_value = float(t), v
    x_new, scores_new = point(best_t)
    return x_new, scores_new, ("constant objective", (best_t, found, constant, best_value))


def _least_along(value) -> float:
    """The minimiser of the convex ``value`` over ``[0, 1]`` by golden sections."""
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    lo, hi = 0.0, 1.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = value(a), value(b)
    for _ in range(_GOLDEN_STEPS):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = value(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = value(b)
    return 0.5 * (lo + hi)
