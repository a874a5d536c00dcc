"""Least squares with bounds on the unknowns, by an active set: the KKT multipliers' problem.

``min ||A w - b||^2 + ||damping * w||^2`` subject to ``lower <= w <= upper`` (infinite bounds
allowed; the damping is the complementarity rows ``diag(c)`` of the multipliers' problem,
kept as a vector: an ``m x m`` block would be 32 MB at 2000 constraints): Lawson and
Hanson's active-set method for nonnegative least squares, with each unknown held at either
of its bounds rather than at zero only (the bounded-variable form). Every unknown is either
free, solved for in an unconstrained least squares over the free ones, or held at one of its
bounds; an unknown leaves its bound when the gradient pulls it inside, and a step that would
take a free one past a bound stops there and holds it. Each change of the free set is a
least-squares solve on the free columns, so a start from a good guess of that set (the
solver's own positive multipliers) ends in a few solves, where a start from nothing adds
the unknowns one solve at a time.

Why not :func:`scipy.optimize.nnls`: it starts from nothing (at 1000 groups, 2000
multipliers, 7 s where the solver's multipliers as a start take 1.5), and has no upper
bounds (the interval of an L1 subgradient) nor free unknowns.

Precision: a pull no larger than the rounding of the gradient is not followed (see
:func:`_entering`). Where columns differ in scale by seven orders and the damping is 1e-12
of them, 90 of 3000 random solves ended above scipy's bounded least squares by more than
rounding (by up to 3e-5 of ``||b||``); the KKT systems of the estimators' fits agree with
scipy's NNLS to 1e-8 relative or better.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bounded_least_squares"]


def bounded_least_squares(A, b, lower, upper, damping=None, start=None, max_iter=None):
    """``argmin ||A w - b||^2 + ||damping * w||^2`` over ``lower <= w <= upper``.

    ``start`` (boolean, one per unknown) says which unknowns to try free first; unknowns
    strictly inside their bounds at ``w = clip(0, lower, upper)`` start free anyway.
    ``max_iter`` caps the changes of the free set (by default three per unknown, and 30
    more; Lawson and Hanson's method ends in finitely many, rounding can make it cycle).
    """
    system = _System(A, b, damping)
    n = system.n
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (n,))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (n,))
    w = np.clip(np.zeros(n), lower, upper)
    inside = (lower < w) & (w < upper)
    free = inside if start is None else inside | (np.asarray(start, dtype=bool) & (lower < upper))
    if max_iter is None:
        max_iter = 3 * n + 30
    w, free = _free_solve(system, w, free, lower, upper)
    blocked = np.zeros(n, dtype=bool)  # tried at this w, and its solve moved it the wrong way
    for _ in range(max_iter):
        j = _entering(system, w, free, lower, upper, blocked)
        if j is None:
            break
        trial = free.copy()
        trial[j] = True
        s = system.solve(w, trial)
        # Lawson and Hanson's guard: the entering unknown must move inside; where rounding
        # says otherwise, the solve would drop it at once and the loop would repeat.
        if not (lower[j] < s[j] < upper[j] or _toward_inside(s[j], w[j], lower[j], upper[j])):
            blocked[j] = True
            continue
        w, free = _free_solve(system, w, trial, lower, upper, s)
        blocked[:] = False
    return w


class _System:
    """``[A; diag(damping)] w ~ [b; 0]``: its gradient, its rounding, its free solves."""

    def __init__(self, A, b, damping):
        self.A = np.asarray(A, dtype=float)
        self.b = np.asarray(b, dtype=float)
        self.n = self.A.shape[1]
        self.d = np.zeros(self.n) if damping is None else np.asarray(damping, dtype=float)
        self.size = np.abs(self.A)  # (the scale of the products' rounding)
        norms = np.sqrt(np.einsum("ij,ij->j", self.A, self.A) + self.d**2)
        self.column_norms = np.where(norms > 0, norms, 1.0)

    def pull(self, w):
        """Minus the gradient of half the squared residual."""
        return self.A.T @ (self.b - self.A @ w) - self.d**2 * w

    def rounding(self, w):
        """About the rounding of :meth:`pull`'s entries, over ``eps``."""
        size = self.size
        return size.T @ (np.abs(self.b) + size @ np.abs(w)) + self.d**2 * np.abs(w)

    def solve(self, w, free):
        """The unconstrained least squares over the free unknowns, the held ones at ``w``."""
        A, held = self.A, ~free
        rhs = self.b - A[:, held] @ w[held] if np.any(held) else self.b
        s = w.copy()
        if not np.any(free):
            return s
        Af = A[:, free]
        rows = np.any(Af != 0, axis=1)  # (rows of held unknowns alone add nothing)
        damped = np.flatnonzero(self.d[free])
        stacked = np.zeros((int(rows.sum()) + len(damped), Af.shape[1]))
        stacked[: rows.sum()] = Af[rows]
        stacked[rows.sum() + np.arange(len(damped)), damped] = self.d[free][damped]
        # On columns of unit norm: the solve's rounding is then that of the columns'
        # directions, not of their scales (a column 1e5 times smaller than another left
        # the free unknowns' gradient at 2e-8 where it is 1e-13 so).
        norms = np.linalg.norm(stacked, axis=0)
        norms[norms == 0] = 1.0
        target = np.concatenate([rhs[rows], np.zeros(len(damped))])
        s[free] = np.linalg.lstsq(stacked / norms, target, rcond=None)[0] / norms
        return s


def _toward_inside(s, w, lo, hi):
    """Whether a step from ``w`` (at a bound) to ``s`` moves inside the bounds."""
    return (w <= lo and s > w) or (w >= hi and s < w)


def _entering(system, w, free, lower, upper, blocked):
    """The held unknown whose bound the gradient pulls it from most (None: none, beyond
    rounding: ``w`` is optimal)."""
    g = system.pull(w)
    # A pull below this is rounding: the free unknowns' own entries of g, zero at their
    # least squares but for rounding (100 groups: 6e-16 with ||b|| 0.1, each pull of the
    # held ones as large sent it the wrong way in its solve), per unit of a column's norm
    # (a small column's pull is as small, its rounding too: 185 of 3000 random solves
    # stopped short with the largest free entry as the threshold, 90 so), and the
    # rounding of the products themselves (:meth:`_System.rounding`).
    eps = np.finfo(float).eps
    norms = system.column_norms
    noise = float(np.max(np.abs(g[free]) / norms[free], initial=0.0)) * norms
    tol = np.maximum(10.0 * noise, 10.0 * eps * system.rounding(w))
    pull = np.where(w <= lower, g, np.where(w >= upper, -g, 0.0))
    pull[free | blocked | (lower >= upper)] = 0.0
    pull = np.where(pull > tol, pull, 0.0)
    if not np.any(pull):
        return None
    return int(np.argmax(pull))


def _free_solve(system, w, free, lower, upper, s=None):
    """The inner loop: from a feasible ``w``, toward the free least squares ``s``, holding at
    its bound every free unknown the step reaches, until the solve lies inside the bounds.
    Returns the new ``(w, free)``."""
    free = free.copy()
    for _ in range(system.n + 1):
        if s is None:
            s = system.solve(w, free)
        below = free & (s < lower)
        above = free & (s > upper)
        if not (np.any(below) or np.any(above)):
            return s, free
        d = s - w
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.where(below, (lower - w) / d, np.where(above, (upper - w) / d, np.inf))
        alpha = float(np.clip(np.min(steps), 0.0, 1.0))
        w = np.where(free, w + alpha * d, w)
        # The unknowns that reached a bound (the nearest exactly, others within rounding) are
        # held there.
        reached = (below | above) & (steps <= alpha * (1 + 1e-12) + 1e-300)
        w = np.where(reached & below, lower, np.where(reached & above, upper, w))
        w = np.clip(w, lower, upper)
        free &= ~reached
        s = None
    return w, free
