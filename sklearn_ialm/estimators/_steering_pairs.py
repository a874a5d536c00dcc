"""Where no solve met the bound on predictions: a point between two converged solves that
meets it (:func:`between_solves`), before the steering moves a solve towards the constant
model.

On groups of a few rows a hard rate moves in steps of a row, and no surrogate's solve need
land its small groups' counts inside a band narrower than a row: a group of 10 rows and one
of 15 at demographic parity 0.05, nine solves missed by 0.03-0.18 on predictions, and the
fit moved the nearest solve 68 % of the way to the constant model (objective 0.6497, the
constant's 0.677), not converged. Along the segment between two solves every row changes its
prediction once at most, and the counts of each group pass through every value between their
two ends: a segment between two solves that both miss can meet the bound in between, as
the segment of the steering's own end (:func:`~._steering_end._between_sides`) does between
a solve that missed and one that met it. Its models are built from converged solves, the
optimum of posed problems at nearby bounds, as that end's are.

The sweep of :func:`~._segment_sweep._segment_point` reads every hard value along a segment
exactly with no data pass. Of the points that meet the bound, the one of least objective
(read on the rows) is returned, where it is below the constant model's and the steering's
own compromise.
"""

from __future__ import annotations

import numpy as np

from ..problems._numeric import BOUND_EPS
from ._segment_sweep import _segment

__all__ = ["between_solves"]

#: Solves (the converged ones nearest the bound) whose pairs are searched: each pair is one
#: sweep, with no data pass; each solve's constraint-row scores are one read, held while the
#: pairs are searched. Over ``_HELD_ROWS`` constraint rows, ``_FEW_SOLVES`` only (the fit's
#: memory: a few vectors of all rows, see tests/test_memory.py).
_SOLVES, _FEW_SOLVES, _HELD_ROWS = 8, 3, 1 << 17

#: Points meeting the bound whose objective is read on the rows (a data pass each): those
#: of the least bound on it (the ends' objectives mixed, which a convex objective is below).
_READS = 3


def between_solves(problem, units, results, seen, base):
    """``(points, passes)``: ``(objective bound, t, a, b)`` of the points between two
    converged solves of ``results`` that meet the bound on predictions (of each pair, the
    first from the end of lower objective ``a`` at ``t = 0`` towards ``b`` at ``t = 1``),
    least bound first, and the data passes read.

    Parameters
    ----------
    problem : LinearProblem
        The problem at the bound (offsets ``base``).
    units : _Units
        Its constraints as the steering sees them.
    results : list
        The steering's solves.
    seen : dict
        ``id(result) -> (result, hard unit values)`` of the solves the steering judged: the
        nearest the bound are searched first where there are more than ``_SOLVES``.
    base : ndarray
        The constraint offsets at the bound.

    Returns
    -------
    list, float
        The points and the data passes read (the scores of the solves).
    """
    solves = [r for r in results if r.converged]

    def miss(r):
        kept = seen.get(id(r))
        return -np.inf if kept is None or kept[0] is not r else float(np.max(kept[1]))

    read = getattr(problem, "constraint_score_rows", None)
    rows = problem.n_constraint_samples if read is None else read()
    held = _SOLVES if problem.n_constraint_samples <= _HELD_ROWS else _FEW_SOLVES
    solves = sorted(solves, key=miss)[:held]
    share = rows / problem.n_samples
    scores = [problem.constraint_scores(r.x) for r in solves]
    points = []
    for i in range(len(solves)):
        for j in range(i + 1, len(solves)):
            a, b = (i, j) if solves[i].objective <= solves[j].objective else (j, i)
            t = float(_segment(problem)(units, scores[a], scores[b], base))
            z = (1.0 - t) * scores[a] + t * scores[b]
            if not np.all(units.values(problem.rate_constraints(z, offset=base)) <= BOUND_EPS):
                continue  # (no point of the segment meets the bound)
            bound = (1.0 - t) * solves[a].objective + t * solves[b].objective
            points.append((float(bound), t, solves[a], solves[b]))
    points.sort(key=lambda p: p[0])
    return points, share * len(solves)
