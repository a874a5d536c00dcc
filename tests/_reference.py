"""An exact reference solve of a constrained problem, independent of the package's solvers.

The truth that ``converged_`` is checked against (issue 33): scipy's SLSQP (sequential
quadratic programming, ``ftol`` 1e-12) on the problem as posed, ``min g(x) + h(x)`` subject to
``c_E(x) = 0`` and ``c_I(x) + levels @ tau <= 0``, with the problem's own oracles on all rows
(``full_evaluation``: value, gradient, constraint values and ``J^T``) and its smooth ``h``
(a ridge). No augmented Lagrangian, no multiplier schedule, no stochastic step: a method the
package does not use, so an error in the package's solver cannot agree with it by
construction. For problems small enough for SLSQP's dense quadratic programs (a few hundred
parameters, n <= 20000 rows).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize


class _Oracle:
    """``full_evaluation`` at the last point asked, kept for the constraint calls."""

    def __init__(self, problem):
        self.problem = problem
        self.p = problem.n_params
        self.m = problem.n_constraints
        self.levels = getattr(problem, "levels", None)
        self.n_levels = 0 if self.levels is None else self.levels.shape[1]
        self.key = None
        h = problem.h
        lam = getattr(h, "_lam", None)
        if lam is None and type(h).__name__ not in ("NoProx", "Prox"):
            raise ValueError(f"the reference solves problems with a smooth h, got {h!r}.")
        self.lam = (lambda x: np.zeros_like(x)) if lam is None else lam

    def at(self, v):
        if self.key is None or not np.array_equal(self.key, v):
            x = v[: self.p]
            f0, grad, c, jac_t = self.problem.full_evaluation(x)
            jac = np.array([jac_t(e) for e in np.eye(self.m)]).reshape(self.m, self.p)
            if self.n_levels:
                c = c + self.levels @ v[self.p :]
                jac = np.hstack([jac, self.levels])
            elif self.m:
                jac = jac.reshape(self.m, self.p)
            self.key, self.value = v.copy(), (float(f0), np.asarray(grad, float), c, jac)
        return self.value

    def objective(self, v):
        x = v[: self.p]
        f0, grad, _, _ = self.at(v)
        lam = self.lam(x)
        value = f0 + 0.5 * float(np.sum(lam * x * x))
        return value, np.concatenate([grad + lam * x, np.zeros(self.n_levels)])


def reference_solve(problem, x0=None, *, ftol=1e-12, maxiter=2000) -> dict:
    """The optimum of ``problem`` by SLSQP from ``x0`` (zeros by default).

    Returns a dict with ``x``, ``objective`` (``g + h``), ``constraints`` (``c(x)`` with the
    free levels at their optimum), ``success`` and ``message``.
    """
    oracle = _Oracle(problem)
    ineq = np.asarray(problem.inequality, dtype=bool) if oracle.m else np.zeros(0, bool)
    v0 = np.zeros(oracle.p + oracle.n_levels)
    if x0 is not None:
        v0[: oracle.p] = x0
    constraints = []
    if ineq.any():
        constraints.append(
            dict(type="ineq", fun=lambda v: -oracle.at(v)[2][ineq],
                 jac=lambda v: -oracle.at(v)[3][ineq])
        )  # fmt: skip
    if (~ineq).any():
        constraints.append(
            dict(type="eq", fun=lambda v: oracle.at(v)[2][~ineq],
                 jac=lambda v: oracle.at(v)[3][~ineq])
        )  # fmt: skip
    out = minimize(
        oracle.objective, v0, jac=True, method="SLSQP", constraints=constraints,
        options=dict(ftol=ftol, maxiter=maxiter),
    )  # fmt: skip
    value, _ = oracle.objective(out.x)
    return dict(
        x=out.x[: oracle.p],
        objective=value,
        constraints=oracle.at(out.x)[2],
        success=bool(out.success),
        message=str(out.message),
    )
