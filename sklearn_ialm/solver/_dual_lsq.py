"""Least squares with bounds on the unknowns, by an active set: the KKT multipliers' problem.

``min ||A w - b||`` subject to ``lower <= w <= upper`` (infinite bounds allowed): Lawson and
Hanson's active-set method for nonnegative least squares, with each unknown held at either
of its bounds rather than at zero only (the bounded-variable form). Every unknown is either
free, solved for in an unconstrained least squares over the free ones, or held at one of its
bounds; an unknown leaves its bound when the gradient pulls it inside, and a step that would
take a free one past a bound stops there and holds it. Each change of the free set is a
least-squares solve on the free columns, so a start from a good guess of that set (the
solver's own positive multipliers) ends in a few solves, where a start from nothing adds
the unknowns one solve at a time.

Why not :func:`scipy.optimize.nnls`: it starts from nothing (at 1000 groups, 2000
multipliers, 7 s where the solver's multipliers as a start take 1.7), and has no upper
bounds (the interval of an L1 subgradient) nor free unknowns.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bounded_least_squares"]


def bounded_least_squares(A, b, lower, upper, start=None, max_iter=None):
    """``argmin ||A w - b||`` over ``lower <= w <= upper``, by an active set.

    ``start`` (boolean, one per unknown) says which unknowns to try free first; unknowns
    strictly inside their bounds at ``w = clip(0, lower, upper)`` start free anyway.
    ``max_iter`` caps the changes of the free set (by default three per unknown, and 30
    more; Lawson and Hanson's method ends in finitely many, rounding can make it cycle).
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (A.shape[1],))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (A.shape[1],))
    n = A.shape[1]
    w = np.clip(0.0, lower, upper)
    inside = (lower < w) & (w < upper)
    free = inside if start is None else inside | (np.asarray(start, dtype=bool) & (lower < upper))
    if max_iter is None:
        max_iter = 3 * n + 30
    w, free = _free_solve(A, b, w, free, lower, upper)
    size = np.abs(A)  # (the scale of the products' rounding, see _entering)
    blocked = np.zeros(n, dtype=bool)  # tried at this w, and its solve moved it the wrong way
    for _ in range(max_iter):
        j = _entering(A, size, b, w, free, lower, upper, blocked)
        if j is None:
            break
        trial = free.copy()
        trial[j] = True
        s = _solve_free(A, b, w, trial)
        # Lawson and Hanson's guard: the entering unknown must move inside; where rounding
        # says otherwise, the solve would drop it at once and the loop would repeat.
        if not (lower[j] < s[j] < upper[j] or _toward_inside(s[j], w[j], lower[j], upper[j])):
            blocked[j] = True
            continue
        w, free = _free_solve(A, b, w, trial, lower, upper, s)
        blocked[:] = False
    return w


def _toward_inside(s, w, lo, hi):
    """Whether a step from ``w`` (at a bound) to ``s`` moves inside the bounds."""
    return (w <= lo and s > w) or (w >= hi and s < w)


def _entering(A, size, b, w, free, lower, upper, blocked):
    """The held unknown whose bound the gradient pulls it from most (None: none, beyond
    rounding: ``w`` is optimal)."""
    g = A.T @ (b - A @ w)  # minus the gradient of ||A w - b||^2 / 2
    # A pull below this is rounding: the free unknowns' own entries of g, zero at their
    # least squares but for rounding (100 groups: 6e-16 with ||b|| 0.1, each pull of the
    # held ones as large sent it the wrong way in its solve), and the rounding of the
    # products themselves, about eps |A|^T (|b| + |A| |w|) (``size`` is ``|A|``).
    eps = np.finfo(float).eps
    noise = float(np.max(np.abs(g[free]), initial=0.0))
    tol = np.maximum(10.0 * noise, 10.0 * eps * (size.T @ (np.abs(b) + size @ np.abs(w))))
    pull = np.where(w <= lower, g, np.where(w >= upper, -g, 0.0))
    pull[free | blocked | (lower >= upper)] = 0.0
    pull = np.where(pull > tol, pull, 0.0)
    if not np.any(pull):
        return None
    return int(np.argmax(pull))


def _solve_free(A, b, w, free):
    """The unconstrained least squares over the free unknowns, the held ones at ``w``."""
    held = ~free
    rhs = b - A[:, held] @ w[held] if np.any(held) else b
    s = w.copy()
    if np.any(free):
        Af = A[:, free]
        rows = np.any(Af != 0, axis=1)  # (rows of held unknowns alone add nothing)
        # On columns of unit norm: the solve's rounding is then that of the columns'
        # directions, not of their scales (a column 1e5 times smaller than another left
        # the free unknowns' gradient at 2e-8 where it is 1e-13 so).
        norms = np.linalg.norm(Af, axis=0)
        norms[norms == 0] = 1.0
        s[free] = np.linalg.lstsq(Af[rows] / norms, rhs[rows], rcond=None)[0] / norms
    return s


def _free_solve(A, b, w, free, lower, upper, s=None):
    """The inner loop: from a feasible ``w``, toward the free least squares ``s``, holding at
    its bound every free unknown the step reaches, until the solve lies inside the bounds.
    Returns the new ``(w, free)``."""
    free = free.copy()
    for _ in range(A.shape[1] + 1):
        if s is None:
            s = _solve_free(A, b, w, free)
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
