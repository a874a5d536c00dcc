"""A stream's second-order summary of the rows it learnt, and the model it gives.

A PStorm iterate remembers only its last few thousand rows, and the mean of its iterates
over part of an outer iteration is a model fitted on about as many: on 4 groups independent
of the label, in X (1e5 rows, demographic parity 0.02), the group columns' coefficients of
the models measured were off by 0.1 where those of LogisticRegression on every row are off by
0.03, and the fresh gap was 0.033 against fit's 0.0095. The rows are seen once, but a linear
model of a few columns is summed up by a few small matrices: at each piece, before it is
learnt, the weighted sums of ``x x^T`` and ``x`` of the loss's second-order expansion about
the iterate, and per cell (group x label) those of the soft predictions' expansion. Their sum
over the recent outer iterations is a quadratic model of the loss and of the constraints'
cell sums over all those rows; the minimiser of the augmented Lagrangian of this model at the
stream's multipliers (a damped Newton method) is the model of these multipliers fitted on all
those rows, not on the last few thousand.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

#: The summary is kept for models of at most this many parameters (columns and intercept).
SUMMARY_MAX_PARAMS = 64
#: Outer iterations summed: those that began within the last SUMMARY_SHARE of the rows (the
#: expansion is about each piece's iterate, good near the model of the last ones).
SUMMARY_SHARE = 0.75
#: The second-order terms read every CURVATURE_EVERY-th row of a piece (weighed as many):
#: they change slowly with the rows, and the matrices cost d^2 a row where the rest costs d
#: (a stream of 20 columns took 1.5 times main's CPU with every row read).
CURVATURE_EVERY = 4
#: Newton's iterations on the summary's model.
NEWTON_ITER = 30


def piece_summary(X, coords, margins, w, cells, n_cells, theta):
    """The expansion sums of one piece about ``theta`` (see the module docstring):
    ``(loss_H, loss_b, cell_F, cell_e, cell_c, weight, rows)``, in the solver's coordinates
    ``coords = (scale, center, fit_intercept)`` (``(x - center) / scale``, then 1 for the
    intercept). The first-order terms read every row; the second-order ones (the matrices,
    and their products with ``theta`` in the vectors, so that the two agree) read every
    :data:`CURVATURE_EVERY`-th row, weighed as many."""
    scale, center, fit_intercept = coords
    order = np.argsort(cells, kind="stable")
    Z = X[order]
    Z = Z.toarray() if sp.issparse(Z) else np.array(Z, dtype=float)
    if center is not None:
        Z -= center
    Z /= scale
    d = Z.shape[1]
    s = Z @ theta[:d] + (theta[d] if fit_intercept else 0.0)
    w, margins, cells = w[order], margins[order], cells[order]
    p = expit(s)
    dp = p * (1.0 - p)
    d2p = dp * (1.0 - 2.0 * p)
    # (Sorted by cell, every k-th row is every k-th row of each cell.)
    sub = slice(None, None, CURVATURE_EVERY)
    Zs, ws, ss, cs = Z[sub], CURVATURE_EVERY * w[sub], s[sub], cells[sub]
    # The logistic loss log(1 + exp(-m s)): slope -m sigma(-m s), curvature sigma'(s).
    slope = -margins * expit(-margins * s)
    loss_H = _gram(Zs, ws * dp[sub], fit_intercept)
    loss_b = _moment(Z, w * slope, fit_intercept) - _moment(Zs, ws * dp[sub] * ss, fit_intercept)
    # Each cell's soft sum sigma(t) about s: its value, slope and curvature terms.
    one_hot = (cells[:, None] == np.arange(n_cells)).astype(float)
    first = _moment(Z, one_hot * (w * dp)[:, None], fit_intercept)
    one_sub = one_hot[sub] * (ws * d2p[sub] * ss)[:, None]
    cell_e = (first - _moment(Zs, one_sub, fit_intercept)).T
    cell_c = np.bincount(cells, weights=w * (p - dp * s), minlength=n_cells)
    cell_c += np.bincount(cs, weights=0.5 * ws * d2p[sub] * ss**2, minlength=n_cells)
    curvature = ws * d2p[sub]
    cell_F = np.zeros((n_cells, *loss_H.shape))
    ends = np.r_[0, np.cumsum(np.bincount(cs, minlength=n_cells))]
    for c in np.flatnonzero(np.diff(ends)):
        at = slice(ends[c], ends[c + 1])
        cell_F[c] = _gram(Zs[at], curvature[at], fit_intercept)
    return [loss_H, loss_b, cell_F, cell_e, cell_c, float(w.sum()), float(len(w))]


def _gram(Z, v, fit_intercept):
    """``sum_j v_j z_j z_j^T`` of the rows ``Z`` with the intercept's 1 appended."""
    d = Z.shape[1]
    M = np.empty((d + int(fit_intercept),) * 2)
    Zv = Z.T * v
    M[:d, :d] = Zv @ Z
    if fit_intercept:
        M[d, :d] = M[:d, d] = Zv.sum(axis=1)
        M[d, d] = v.sum()
    return M


def _moment(Z, v, fit_intercept):
    """``sum_j v_j z_j`` of the rows ``Z`` with the intercept's 1 appended (``v`` a vector,
    or one column per sum)."""
    out = Z.T @ v
    return np.concatenate([out, v.sum(axis=0, keepdims=True)]) if fit_intercept else out


def add(total, part):
    """Two summaries (lists of sums) as one."""
    if total is None:
        return [np.copy(v) if isinstance(v, np.ndarray) else v for v in part]
    return [a + b for a, b in zip(total, part, strict=True)]


def newton_model(summary, A, offset, y, beta, ridge, theta0):
    """The minimiser of the summary's augmented Lagrangian at ``(y, beta)``, from
    ``theta0``: ``f(t) + sum_i (max(0, y_i + beta c_i(t))^2 - y_i^2) / (2 beta)``, ``f`` the
    loss's weighted mean (plus the ridge ``ridge / 2 |t_mask|^2``, ``ridge = (strength,
    mask)``) and ``c = A S(t) / rows + offset``, ``S`` the cells' soft sums. None when the
    summary's model is not well posed (a step that does not lower it)."""
    loss_H, loss_b, cell_F, cell_e, cell_c, weight, rows = summary
    H_f, b_f = loss_H / weight, loss_b / weight
    strength, mask = ridge
    R = strength * mask.astype(float)
    # c_i(t) = cons_i + E_i t + t^T G_i t / 2
    cons = A @ cell_c / rows + offset
    E = A @ cell_e / rows
    G = np.tensordot(A, cell_F, axes=1) / rows

    def parts(t):
        c = cons + E @ t + 0.5 * np.einsum("j,ijk,k->i", t, G, t)
        lam = np.maximum(0.0, y + beta * c)
        value = 0.5 * t @ H_f @ t + b_f @ t + 0.5 * R @ t**2
        value += float(np.sum(lam**2 - y**2)) / (2.0 * beta)
        return value, lam

    t = np.array(theta0, dtype=float)
    value, lam = parts(t)
    for _ in range(NEWTON_ITER):
        J = E + G @ t  # (m, k)
        grad = H_f @ t + b_f + R * t + J.T @ lam
        hess = H_f + np.diag(R) + np.tensordot(lam, G, axes=1)
        active = lam > 0
        hess = hess + beta * J[active].T @ J[active]
        step = _descent(hess, grad)
        if step is None:
            return None
        s, done = 1.0, False
        while s > 1e-4:
            new = t - s * step
            new_value, new_lam = parts(new)
            # (Armijo's sufficient decrease, on the summary's model.)
            if new_value <= value - 1e-4 * s * float(grad @ step):
                t, value, lam = new, new_value, new_lam
                done = True
                break
            s *= 0.5
        if not done:
            break
        if s * float(np.max(np.abs(step))) < 1e-9:
            break
    return t if np.all(np.isfinite(t)) else None


def _descent(hess, grad):
    """A Newton direction, the Hessian shifted until it is positive definite."""
    shift = 0.0
    scale = max(float(np.max(np.abs(np.diag(hess)))), 1e-12)
    for _ in range(30):
        try:
            L = np.linalg.cholesky(hess + shift * np.eye(len(grad)))
        except np.linalg.LinAlgError:
            shift = max(2.0 * shift, 1e-8 * scale)
            continue
        return np.linalg.solve(L.T, np.linalg.solve(L, grad))
    return None
