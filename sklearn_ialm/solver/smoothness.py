"""Smoothness constants ``(L0, LJ)`` of a problem, estimated when the problem gives none.

The step rule needs ``L(beta) = L0 + LJ * beta``, the smoothness of the augmented Lagrangian:
``L0`` of ``g`` and ``LJ`` of the penalty ``||c||^2 / 2``. A few power iterations on
finite-difference Hessian-vector products at the starting point (on the evaluation batch)
give the largest curvature magnitude of each; the estimate is doubled, since curvature
away from the starting point can be larger. It costs ``n_iter + 1`` evaluations of each
evaluation batch (every row of a finite sum), counted as set-up.
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

    Every evaluation (``n_iter + 1`` on each evaluation batch) is added to
    ``counter.setup_evaluations``; for a sampled problem the batches' samples are draws too.
    """
    bo = problem.evaluation_batch(rng, "objective")
    L0 = _power(lambda u: problem.objective(u, bo), x, rng, n_iter)

    def count(kind, batch):
        if counter is not None:
            n = problem.batch_size(batch, kind)
            counter.setup_evaluations += (n_iter + 1) * n
            if not problem.finite:
                counter.add(kind, draws=n)

    count("objective", bo)
    LJ = 0.0
    if problem.n_constraints:
        bc = problem.evaluation_batch(rng, "constraint")
        count("constraint", bc)

        def penalty_grad(u):
            C, vjp = problem.constraints(u, bc)
            n = C.shape[0]
            return vjp(np.broadcast_to(C.mean(axis=0) / n, C.shape))

        LJ = _power(penalty_grad, x, rng, n_iter)
    # Floors keep the step finite on flat regions (e.g. linear objectives).
    return 2.0 * max(L0, 1e-3), 2.0 * max(LJ, 1e-3)
