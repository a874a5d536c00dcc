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
residual ``dist(0, df0 + J^T z)``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

__all__ = ["optimal_dual", "original_residuals", "slack_residuals"]


def slack_residuals(x, s, y, grad_g, c, jac_t, h, inequality):
    """Primal and dual residuals of the slack reformulation at ``(x, s)`` with multiplier ``y``.

    ``jac_t(v)`` computes ``J(x)^T v``. Returns ``(pres, dres, grad)`` where ``grad`` is the
    gradient of the smooth part of the Lagrangian in ``(x, s)``, ``(grad g + J^T y, y_I)``.
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
    the closed form ``[-(grad_f0 . grad_c) / (c^2 + ||grad_c||^2)]_+``.
    """
    jac = np.atleast_2d(jac)
    m = jac.shape[0]
    if m == 0:
        return np.zeros(0)
    comp = np.diag(np.where(inequality, c, 0.0))
    A = np.vstack([jac.T, comp])
    b = -np.concatenate([grad_f0, np.zeros(m)])
    if m == 1 and inequality[0]:
        g = jac[0]
        return np.array([max(-(grad_f0 @ g) / (c[0] ** 2 + g @ g), 0.0)])
    # Free equality multipliers: split z = z+ - z- on those rows.
    eq = ~np.asarray(inequality, dtype=bool)
    if eq.any():
        A = np.hstack([A, -A[:, eq]])
    sol, _ = nnls(A, b)
    z = sol[:m].copy()
    z[eq] -= sol[m:]
    return z


def original_residuals(x, grad_g, jac, c, h, inequality):
    """KKT residuals of the original problem with the optimal dual of :func:`optimal_dual`.

    Returns ``(pres, dres, z)``.
    """
    inequality = np.asarray(inequality, dtype=bool)
    viol = np.where(inequality, np.maximum(c, 0.0), np.abs(c))
    pres = float(np.linalg.norm(viol))
    z = optimal_dual(grad_g, jac, c, inequality)
    g = grad_g + (jac.T @ z if z.size else 0.0)
    dres = float(np.linalg.norm(h.dist_subdiff(x, g)))
    return pres, dres, z
