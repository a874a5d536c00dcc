"""The first point of a segment between two multi-class models that meets the bound on
predictions (:func:`_segment`): the steering's models between solves
(:mod:`._multiclass_steering`) and the first solve moved towards the constant model
(:mod:`._towards_constant`).
"""

from __future__ import annotations

import numpy as np


def _segment(problem, base, Z0, Z1):
    """The least ``t`` in ``(0, 1]`` whose scores ``(1 - t) Z0 + t Z1`` meet the bound, or
    None: a grid of 64 steps, then bisection between the last miss and the first hit. The
    scores are linear in the parameters, so these are the scores of the point ``(1 - t) x0
    + t x1`` of the segment between the models of ``Z0`` and ``Z1`` (no read of the rows)."""
    ok = lambda t: problem.meets_bounds((1 - t) * Z0 + t * Z1, base)  # noqa: E731
    lo = 0.0
    for t in np.linspace(0.0, 1.0, 65)[1:]:
        if ok(t):
            hi = t
            break
        lo = t
    else:
        return None
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
