"""The first solve moved towards the constant model: a candidate model of a steered fit on
more than two classes (see :mod:`._multiclass_steering`).

The steering's re-solves start from the solve before them at soft bounds moved one by one,
and on a nonconvex surrogate (soft rates of a softmax) they can end in a poorer basin at a
looser bound than at a tighter one. The fit's first solve is posed alike at every bound (the
surrogate at the bound itself, from the null model), and the constant model (every row
predicted the majority class) is the same at every bound: the first point meeting the bound
on the segment between them moves with the bound along one path. It is the model where its
training objective is below the steering's by more than :data:`_MARGIN`.

Three classes, 559 rows, false-positive-rate parity (``tests/test_invariants.py``'s seed 2033
example): at 0.1 the steering's tightened re-solve stopped predicting one class at all (an
objective of 1.10, above the constant model's 1.064) and its bracket ended at 1.038, where the
fit at 0.02 ended at 1.019; the first solve's segment meets 0.1 at 0.974.
"""

from __future__ import annotations

import numpy as np

from ._hard_rates import _say
from ._multiclass_segment import _segment

#: The least margin of training objective by which the segment's point replaces the
#: steering's model: the solves are converged to about this (the finish's tolerance), and on
#: wine (``benchmarks.multiclass_sweep``) two points within 4e-4 of the steering's objective
#: had a training log-loss 0.002 and 0.004 above it (a smaller penalty); the one taken there
#: is 0.026 below.
_MARGIN = 1e-3


def first_towards_constant(problem, base, first, x, scores, x_const, verbose=0) -> tuple:
    """``(x, scores)``: the steered model ``x`` (its training ``scores``), or, where its
    objective is lower by more than :data:`_MARGIN`, the first point meeting the bound
    (offsets ``base``) on the segment from the first solve ``first`` (a pair ``(solve, its
    scores)``, converged) to the constant model ``x_const``.

    A first solve that met the bound is the steering's met end already: only one that
    missed it is moved. No row is read (the scores are linear in the parameters; the
    constant model's are its intercepts).
    """
    solve, start = first
    if not solve.converged or problem.meets_bounds(start, base):
        return x, scores
    _, intercept = problem.coef(x_const)
    const = np.broadcast_to(intercept, start.shape)
    t = _segment(problem, base, start, const)
    if t is None:
        return x, scores
    point, at = (1 - t) * solve.x + t * x_const, (1 - t) * start + t * const
    gain = problem.objective_of_scores(x, scores) - problem.objective_of_scores(point, at)
    if gain <= _MARGIN:
        return x, scores
    _say(
        verbose,
        f"the model: the first solve moved {t:.3f} of the way towards the constant model "
        f"(a training objective {gain:.4g} below the steering's model)",
    )
    return point, at
