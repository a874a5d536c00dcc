"""Smoothness constants ``(L0, LJ)`` of a problem, estimated when the problem gives none.

The step rule needs ``L(beta) = L0 + LJ * beta``, the smoothness of the augmented Lagrangian:
``L0`` of ``g`` and ``LJ`` of the penalty ``||c||^2 / 2``. A few power iterations on
finite-difference Hessian-vector products at the starting point (on the evaluation batch)
give the largest curvature magnitude of each; the estimate is doubled, since curvature
away from the starting point can be larger.
"""

from __future__ import annotations

import numpy as np

__all__ = ["estimate_smoothness"]


def _power(grad, x, rng, n_iter=10, r=1e-4):
    v = rng.standard_normal(x.shape)
    v /= np.linalg.norm(v)
    g0 = grad(x)
    lam = 0.0
    for _ in range(n_iter):  # n_iter + 1 gradient evaluations in all
        hv = (grad(x + r * v) - g0) / r
        lam = float(np.linalg.norm(hv))
        if lam == 0.0:
            break
        v = hv / lam
    return lam


def estimate_smoothness(problem, x, rng, n_iter: int = 10, counter=None) -> tuple[float, float]:
    """Estimate ``(L0, LJ)`` for ``problem`` around ``x`` (see the module docstring).

    For a sampled problem the draws and evaluations are added to ``counter``: they are oracle
    calls like any other. (A finite sum's evaluations on all rows are set-up, like the
    stopping rule's, and are not counted as data passes.)
    """
    bo = problem.evaluation_batch(rng, "objective")
    L0 = _power(lambda u: problem.objective(u, bo), x, rng, n_iter)
    count = counter is not None and not problem.finite
    if count:
        n = problem.batch_size(bo, "objective")
        counter.add("objective", draws=n, evaluations=(n_iter + 1) * n)
    LJ = 0.0
    if problem.n_constraints:
        bc = problem.evaluation_batch(rng, "constraint")
        if count:
            n = problem.batch_size(bc, "constraint")
            counter.add("constraint", draws=n, evaluations=(n_iter + 1) * n)

        def penalty_grad(u):
            C, vjp = problem.constraints(u, bc)
            n = C.shape[0]
            return vjp(np.broadcast_to(C.mean(axis=0) / n, C.shape))

        LJ = _power(penalty_grad, x, rng, n_iter)
    # Floors keep the step finite on flat regions (e.g. linear objectives).
    return 2.0 * max(L0, 1e-3), 2.0 * max(LJ, 1e-3)
