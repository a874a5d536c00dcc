"""KKT residuals: of the slack reformulation (the stopping rule) and of the original problem.

For ``z = (x, s)`` and a multiplier ``y`` the slack reformulation
``min g(x) + h(x) + 1{s >= 0}  s.t.  c(x) + E s = 0`` (``E`` puts the slacks on the
inequality rows) has

* primal residual ``||c(x) + E s||``;
* dual residual ``dist(0, [grad g(x) + dh(x) + J(x)^T y ;  E^T y + N_{s >= 0}(s)])``.

These are the residuals of the paper's Definition 1, with the subdifferential taken exactly.

The original problem (inequalities kept as such) is judged like the IPC baseline in the
paper (eq. (opt-dual)): with the nonnegative multiplier ``z`` that minimises
``||grad f0 + J^T z||^2 + ||z * c||^2``, the primal residual is ``||[c_I]_+, c_E||`` and the dual
residual ``dist(0, df0 + J^T z)``. :func:`kkt_dual_residual` solves that least squares
exactly with the subgradient of ``h`` among its unknowns and, where constraints have free
levels, the levels' own stationarity as a block.
"""

from __future__ import annotations

import numpy as np

from ._dual_lsq import bounded_least_squares
from .prox import Prox

__all__ = [
    "kkt_dual_residual",
    "level_shift",
    "level_values",
    "optimal_dual",
    "original_residuals",
    "slack_residuals",
]


def slack_residuals(x, s, y, grad_g, c, jac_t, h, inequality):
    """Primal and dual residuals of the slack reformulation at ``(x, s)`` with multiplier ``y``.

    ``jac_t(v)`` computes ``J(x)^T v``. Returns ``(pres, dres, grad)`` where ``grad`` is the
    gradient of the smooth part of the Lagrangian in ``(x, s)``, ``(grad g + J^T y, y_I)``.

    Parameters
    ----------
    x : ndarray of shape (n_params,)
        The point.
    s : ndarray of shape (n_inequalities,)
        The slacks of the inequality constraints (nonnegative).
    y : ndarray of shape (n_constraints,)
        The multipliers.
    grad_g : ndarray of shape (n_params,)
        The gradient of the smooth objective ``g`` at ``x``.
    c : ndarray of shape (n_constraints,)
        The constraint values at ``x``.
    jac_t : callable
        ``jac_t(v) = J(x)^T v`` for ``v`` of shape ``(n_constraints,)``.
    h : Prox
        The nonsmooth term of the objective.
    inequality : ndarray of bool, shape (n_constraints,)
        Which constraints are inequalities ``c_j(x) <= 0``.

    Returns
    -------
    pres, dres : float
        ``||c(x) + E s||`` and ``dist(0, [grad g + dh + J^T y ; y_I + N_{s >= 0}(s)])``.
    grad : ndarray of shape (n_params + n_inequalities,)
        ``(grad g + J^T y, y_I)``.

    Examples
    --------
    ``min ||x - (2, 0)||^2 / 2`` subject to ``x_0 - 1 <= 0``: at ``x = (1, 0)`` with slack 0
    and multiplier 1 the KKT conditions hold exactly.

    >>> import numpy as np
    >>> from sklearn_ialm.solver import NoProx, slack_residuals
    >>> x, J = np.array([1.0, 0.0]), np.array([[1.0, 0.0]])
    >>> pres, dres, grad = slack_residuals(
    ...     x, np.zeros(1), np.ones(1), x - [2.0, 0.0], np.array([x[0] - 1.0]),
    ...     lambda v: J.T @ v, NoProx(), np.array([True]))
    >>> pres, dres
    (0.0, 0.0)
    """
    k = c.copy()
    k[inequality] += s
    pres = float(np.linalg.norm(k))
    gx = grad_g + jac_t(y) if y.size else grad_g
    rx = h.dist_subdiff(x, gx)
    # Slack block: gradient y_I, normal cone of s >= 0 absorbs positive parts at s = 0.
    yi = y[inequality]
    rs = np.where(s > 0, np.abs(yi), np.maximum(-yi, 0.0))
    dres = float(np.sqrt(np.dot(rx, rx) + np.dot(rs, rs)))
    return pres, dres, np.concatenate([gx, yi])


def optimal_dual(grad_f0, jac, c, inequality):
    """The paper's eq. (opt-dual): ``argmin ||grad_f0 + J^T z||^2 + ||z * c_I||^2``.

    ``z`` is nonnegative on the inequality rows and free on the equality rows (where the
    complementarity term vanishes since ``c_E`` should be zero). For one inequality this is
    the closed form ``[-(grad_f0 . grad_c) / (c^2 + ||grad_c||^2)]_+``, else the exact
    solution of the bounded least squares (an active set, :mod:`._dual_lsq`). The
    multiplier of :func:`kkt_dual_residual` also sees ``h`` and the free levels.

    Parameters
    ----------
    grad_f0 : ndarray of shape (n_params,)
        The gradient of the objective.
    jac : ndarray of shape (n_constraints, n_params)
        The Jacobian of the constraints.
    c : ndarray of shape (n_constraints,)
        The constraint values.
    inequality : ndarray of bool, shape (n_constraints,)
        Which constraints are inequalities ``c_j(x) <= 0``.

    Returns
    -------
    z : ndarray of shape (n_constraints,)
        The multiplier, nonnegative on the inequality rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import optimal_dual
    >>> optimal_dual(np.array([-1.0, 0.0]), np.array([[1.0, 0.0]]), np.array([0.0]),
    ...              np.array([True]))
    array([1.])
    """
    jac = np.atleast_2d(jac)
    m = jac.shape[0]
    if m == 0:
        return np.zeros(0)
    if m == 1 and inequality[0]:
        g = jac[0]
        return np.array([max(-(grad_f0 @ g) / (c[0] ** 2 + g @ g), 0.0)])
    zero = np.zeros(len(grad_f0))
    ineq = np.asarray(inequality, dtype=bool)
    return _multipliers(grad_f0, jac, np.asarray(c, dtype=float), ineq, zero, zero)


def kkt_dual_residual(
    x: np.ndarray,
    grad_g: np.ndarray,
    jac: np.ndarray,
    c: np.ndarray,
    h,
    inequality: np.ndarray,
    levels: np.ndarray | None = None,
    start: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """The dual residual of the original problem at ``x``, with its best multiplier.

    The problem ``min g(x) + h(x)`` subject to ``c_E(x) = 0`` and ``c_I(x) + levels @ tau
    <= 0`` for some free levels ``tau`` (none without ``levels``): its stationarity at
    ``x`` is ``grad g + dh(x) + J^T z = 0`` in ``x`` and ``levels^T z = 0`` in ``tau``, with
    ``z >= 0`` on the inequalities. The multiplier ``z`` and the subgradient ``v`` in
    ``dh(x)`` solve, exactly, the least squares of the paper's eq. (opt-dual) with both
    blocks: ``min ||grad g + v + J^T z||^2 + ||levels^T z||^2 + ||z * c_I||^2``, the
    subgradient within each coordinate's interval (``h.subgradient_bounds``: a ridge's
    gradient, an L1 term's ``[-lam, lam]`` at zero, a box's normal cone). The residual is
    the first two blocks' norm at that solution.

    The residual is that of the point and problem given: for an estimator, the solve it
    kept (``kkt_dual_residual_``), at that solve's point and with its constraints.

    Parameters
    ----------
    x : ndarray of shape (n_params,)
        The point.
    grad_g : ndarray of shape (n_params,)
        The gradient of the smooth objective ``g`` at ``x``.
    jac : ndarray of shape (n_constraints, n_params)
        The Jacobian of the constraints at ``x``.
    c : ndarray of shape (n_constraints,)
        The constraint values at ``x`` (and at the levels ``tau``, with levels).
    h : Prox
        The nonsmooth term of the objective (without ``subgradient_bounds``, the multiplier
        is fitted to ``grad_g`` alone, and the residual still measures ``dh``).
    inequality : array-like of bool, shape (n_constraints,)
        Which constraints are inequalities.
    levels : ndarray of shape (n_constraints, n_levels), optional
        Each free level's coefficient in each constraint.
    start : ndarray of shape (n_constraints,), optional
        A guess of the multiplier (e.g. the solver's): the least squares starts with its
        positive entries free, and ends in a few solves where the guess is good.

    Returns
    -------
    dres : float
        ``sqrt(dist(0, grad g + dh(x) + J^T z)^2 + ||levels^T z||^2)``.
    z : ndarray of shape (n_constraints,)
        The multiplier, nonnegative on the inequalities.

    Examples
    --------
    ``min (x - 2)^2 / 2 + |x| / 2`` subject to ``x - 1 <= 0``: at ``x = 1`` the gradient
    ``-1`` and the L1 term's ``1/2`` leave the multiplier ``1/2``.

    >>> import numpy as np
    >>> from sklearn_ialm.solver import L1, kkt_dual_residual
    >>> dres, z = kkt_dual_residual(np.array([1.0]), np.array([-1.0]), np.array([[1.0]]),
    ...                             np.array([0.0]), L1(0.5), [True])
    >>> float(dres), z
    (0.0, array([0.5]))
    """
    x = np.asarray(x, dtype=float)
    grad_g = np.asarray(grad_g, dtype=float)
    c = np.asarray(c, dtype=float)
    inequality = np.asarray(inequality, dtype=bool)
    jac = np.asarray(jac, dtype=float).reshape(len(inequality), len(x))
    lower, upper = _subgradient_bounds(h, x)
    levels = None if levels is None else np.asarray(levels, dtype=float)
    z = np.zeros(0)
    if len(inequality):
        z = _multipliers(grad_g, jac, c, inequality, lower, upper, levels, start)
    g = grad_g + jac.T @ z if z.size else grad_g
    rx = h.dist_subdiff(x, g)
    rt = levels.T @ z if levels is not None else np.zeros(0)
    return float(np.sqrt(rx @ rx + rt @ rt)), z


def _subgradient_bounds(h, x):
    """``h.subgradient_bounds(x)``; zeros (the smooth gradient alone) for a user's ``h``
    that has none, or that measures its own ``dist_subdiff`` with the base class's."""
    own = getattr(type(h), "subgradient_bounds", None)
    inherited = own is Prox.subgradient_bounds and type(h).dist_subdiff is not Prox.dist_subdiff
    if own is None or inherited:
        return np.zeros_like(x), np.zeros_like(x)
    lower, upper = h.subgradient_bounds(x)
    return np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)


def _multipliers(grad, jac, c, inequality, lower, upper, levels=None, start=None):
    """The multiplier of :func:`kkt_dual_residual`'s least squares, with the subgradient's
    intervals ``[lower, upper]`` (equal ends: a fixed gradient).

    The unknowns are ``z`` (nonnegative on the inequalities, free on the equalities) and
    the subgradient at each kink (the coordinates with ``lower < upper``): a unit column
    each, in its interval. The stacked system is ``[J^T, E; levels^T, 0; diag(c_I), 0]``
    against ``[-(grad + the fixed subgradient); 0; 0]``, its diagonal block a damping.
    """
    m, p = jac.shape
    kink = np.flatnonzero(lower < upper)
    fixed = np.where(lower < upper, 0.0, lower)
    n_lev = 0 if levels is None else levels.shape[1]
    A = np.zeros((p + n_lev, m + len(kink)))
    A[:p, :m] = jac.T
    if n_lev:
        A[p:, :m] = levels.T
    A[kink, m + np.arange(len(kink))] = 1.0
    b = np.zeros(p + n_lev)
    b[:p] = -(grad + fixed)
    damping = np.concatenate([np.where(inequality, c, 0.0), np.zeros(len(kink))])
    lo = np.concatenate([np.where(inequality, 0.0, -np.inf), lower[kink]])
    hi = np.concatenate([np.full(m, np.inf), upper[kink]])
    guess = np.zeros(m + len(kink), dtype=bool)
    if start is not None:
        guess[:m] = np.asarray(start, dtype=float) > 0
    return bounded_least_squares(A, b, lo, hi, damping=damping, start=guess)[:m]


def original_residuals(x, grad_g, jac, c, h, inequality, levels=None, start=None):
    """KKT residuals of the original problem, with the multiplier of :func:`kkt_dual_residual`.

    Returns ``(pres, dres, z)``.

    Parameters
    ----------
    x : ndarray of shape (n_params,)
        The point.
    grad_g : ndarray of shape (n_params,)
        The gradient of the smooth objective ``g`` at ``x``.
    jac : ndarray of shape (n_constraints, n_params)
        The Jacobian of the constraints at ``x``.
    c : ndarray of shape (n_constraints,)
        The constraint values at ``x``.
    h : Prox
        The nonsmooth term of the objective.
    inequality : array-like of bool, shape (n_constraints,)
        Which constraints are inequalities ``c_j(x) <= 0``.
    levels : ndarray of shape (n_constraints, n_levels), optional
        The free levels' coefficients (see :func:`kkt_dual_residual`).
    start : ndarray of shape (n_constraints,), optional
        A guess of the multiplier (see :func:`kkt_dual_residual`).

    Returns
    -------
    pres : float
        ``||([c_I]_+, c_E)||``, the violation of the constraints.
    dres : float
        The stationarity, ``dist(0, grad g + dh + J^T z)`` (with the levels' block).
    z : ndarray of shape (n_constraints,)
        The multiplier of :func:`kkt_dual_residual`.

    Examples
    --------
    ``min ||x - (2, 0)||^2 / 2`` subject to ``x_0 - 1 <= 0``, at the solution ``(1, 0)``:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import NoProx, original_residuals
    >>> x = np.array([1.0, 0.0])
    >>> original_residuals(x, x - [2.0, 0.0], np.array([[1.0, 0.0]]), np.array([0.0]),
    ...                    NoProx(), [True])
    (0.0, 0.0, array([1.]))
    """
    inequality = np.asarray(inequality, dtype=bool)
    pres = original_violation(c, inequality)
    dres, z = kkt_dual_residual(x, grad_g, jac, c, h, inequality, levels, start)
    return pres, dres, z


def original_violation(c, inequality):
    """:func:`original_residuals`' primal residual ``||([c_I]_+, c_E)||`` (``inequality``
    a boolean array)."""
    return float(np.linalg.norm(np.where(inequality, np.maximum(c, 0.0), np.abs(c))))


#: The least constraints of a band whose free levels the compiled kernel solves
#: (:mod:`._level_kernel`, the same bits as numpy's): its first compile, once per
#: installation (numba's cache), made the first 100-group fit on a fresh install 5.8 s
#: where numpy's took 2.3 s, for 75 -> 19 us a call there (26 calls a fit, 8 % of it); a
#: band of a few groups (Adult by race: 10 rows) never pays it.
_COMPILED_LEVEL_ROWS = 64


def _level_root(e, a, beta):
    """The root nearest 0 of ``F(t) = sum_k e_k max(a_k + beta e_k t, 0)``: compiled where
    numba is and the terms are many (:mod:`._level_kernel`, the same operations and bits),
    else :func:`_level_root_numpy`."""
    if len(e) < _COMPILED_LEVEL_ROWS:
        return _level_root_numpy(e, a, beta)
    from ._level_kernel import root  # (numba loads at the first fit, not with the package)

    out = root(e, a, beta)
    return _level_root_numpy(e, a, beta) if out is None else out


def _level_root_numpy(e, a, beta):
    """The root nearest 0 of ``F(t) = sum_k e_k max(a_k + beta e_k t, 0)``.

    ``F`` is the derivative in ``t`` of the augmented Lagrangian with the slacks minimised
    out; it is nondecreasing and piecewise linear, with a kink where a term turns on, so the
    root is exact by interpolation between the kinks that bracket it. Rows with ``e < 0``
    make ``F`` fall without bound to the left, rows with ``e > 0`` rise to the right.
    """

    def F(t):
        return np.sum(e[:, None] * np.maximum(a[:, None] + beta * e[:, None] * t, 0.0), axis=0)

    f0 = float(F(np.zeros(1))[0])
    if f0 == 0.0:
        return 0.0
    kinks = -a / (beta * e)
    side = kinks[kinks < 0] if f0 > 0 else kinks[kinks > 0]
    pts = np.concatenate([[0.0], np.unique(side)])
    pts = np.sort(pts)[::-1] if f0 > 0 else np.sort(pts)  # walking away from 0
    i, vals = _first_crossing(F, pts, f0 > 0)
    if i is not None:
        t0, t1, v0, v1 = pts[i - 1], pts[i], vals[i - 1], vals[i]
        return float(t1 + (0.0 - v1) * (t0 - t1) / (v0 - v1)) if v0 != v1 else float(t1)
    # Past the last kink F is linear with the slope of the terms on there.
    far = pts[-1]
    on = a + beta * e * (far - np.sign(f0)) > 0
    slope = beta * float(np.sum(e[on] ** 2))
    return float(far - vals[-1] / slope) if slope > 0 else 0.0


#: Kinks at which :func:`_first_crossing` evaluates ``F`` at once.
_KINK_BLOCK = 16


def _first_crossing(F, pts, falling):
    """``(i, vals)``: the first of the points ``pts`` where ``F`` reaches 0 (``<= 0`` where
    ``falling``, else ``>= 0``; None where none does) and ``F`` at the points up to it (at
    all where none does). ``F`` is taken at :data:`_KINK_BLOCK` points at a time, until the
    crossing: the values are those of ``F(pts)`` at once (numpy adds the rows of each column
    in order where the points are at least two, so no block is of one point unless ``pts``
    is), and the root is mostly a kink or two from 0 (100 groups: 200 kinks a level, and
    ``F`` at each a 200 x 200 array, 23 times a fit)."""
    vals, start = [], 0
    while start < len(pts):
        stop = start + _KINK_BLOCK + (len(pts) - start == _KINK_BLOCK + 1)
        vals.append(F(pts[start:stop]))
        cross = np.flatnonzero(vals[-1] <= 0 if falling else vals[-1] >= 0)
        if len(cross) and start + cross[0] == 0:
            # (F(0) on rounding's other side of 0: the caller reads the last point too)
            return 0, F(pts)
        if len(cross):
            return start + int(cross[0]), np.concatenate(vals)
        start = stop
    return None, np.concatenate(vals)


def level_shift(levels, c, y, beta):
    """The change of the constraint values when the free levels minimise the AL given ``x``.

    With constraints ``c_k + levels[k] @ tau <= 0`` (slacks minimised out), each level
    ``tau_j`` enters only its own constraints, so each is a one-dimensional convex problem:
    its derivative ``sum_k levels[k, j] max(y_k + beta (c_k + levels[k, j] t), 0)`` is set to
    zero (the root nearest the current level). Returns ``levels @ t``, to add to ``c`` (and
    to the offsets); then ``levels.T @ (y + beta k)`` is zero: the levels are stationary.
    """
    return levels @ level_values(levels, c, y, beta)


def level_values(levels, c, y, beta):
    """The free levels ``t`` that minimise the AL given ``x`` (see :func:`level_shift`, which
    returns ``levels @ t``), from the constraint values ``c`` at ``t = 0``."""
    compiled = None
    if levels.shape[0] >= _COMPILED_LEVEL_ROWS:
        from ._level_kernel import values  # (numba loads at the first fit, not with the package)

        compiled = values(np.asarray(levels), np.asarray(c), np.asarray(y), beta)
    t = np.zeros(levels.shape[1])
    for j in range(levels.shape[1]):
        if compiled is not None and compiled[1][j]:
            t[j] = compiled[0][j]
            continue
        rows = np.flatnonzero(levels[:, j])
        if len(rows):
            t[j] = _level_root(levels[rows, j], y[rows] + beta * c[rows], beta)
    return t
