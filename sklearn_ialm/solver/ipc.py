"""IPC: the inexact proximally constrained method of Ma, Lin and Yang (2019), deterministic.

The baseline the paper compares Stoc-iALM with (Section 5), for

``min_x f0(x) + h(x)  s.t.  c_j(x) <= 0,  j = 1..m``

with ``f0`` and every ``c_j`` weakly convex. Outer loop: an inexact proximal-point method that
adds the same quadratic to the objective *and* to every constraint,

``x_{k+1} ~ argmin_x f0(x) + h(x) + q_k(x)  s.t.  c_j(x) + q_k(x) <= 0  (all j)``,
``q_k(x) = rho/2 ||x - x_k||^2``,

which, for ``rho`` above the weak-convexity modulus, is strongly convex with strongly convex
constraints (and its feasible set lies inside the original one). Inner loop: the switching
subgradient method on that subproblem, with full-data gradients (the paper runs IPC in its
deterministic version).

Reference: R. Ma, Q. Lin, T. Yang, "Proximally constrained methods for weakly convex
optimization with weakly convex constraints", arXiv:1908.01871 (2019); published as
"Quadratically regularized subgradient methods for weakly convex optimization with weakly
convex constraints", ICML 2020. The authors' code is not public: the parameter choices are
ours, each documented in :func:`ipc`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ialm import _check_positive
from .kkt import original_residuals
from .prox import Box
from .smoothness import _power

__all__ = ["IPCResult", "ipc"]


@dataclass
class IPCResult:
    """What :func:`ipc` returns.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        The returned point: the inner method's output (the weighted average of its
        objective-step iterates) at the check that stopped the run, or at the end of the
        budget.
    kkt_primal_residual : float
        ``||[c(x)]_+||`` on all constraint rows.
    kkt_dual_residual : float
        ``dist(0, grad f0(x) + dh(x) + J(x)^T z)`` with ``z = kkt_multipliers``.
    kkt_multipliers : ndarray of shape (n_constraints,)
        The nonnegative multiplier of the paper's eq. (opt-dual) at ``x``
        (:func:`~sklearn_ialm.solver.optimal_dual`); IPC itself keeps no multiplier.
    objective : float
        ``f0(x) + h(x)`` on all objective rows.
    constraint_values : ndarray of shape (n_constraints,)
        ``c(x)`` on all constraint rows.
    converged : bool
        Both KKT residuals ``<= tol`` at ``x``.
    n_outer_iter : int
        Proximal (outer) iterations started, the last one possibly cut short by the stop.
    n_iter : int
        Switching-subgradient (inner) iterations, all outer iterations together.
    n_data_passes : float
        Per-sample oracle evaluations divided by ``problem.n_samples`` (objective plus
        constraint rows); includes the curvature estimate when ``rho`` was estimated.
    history : dict of ndarray
        One entry per check of the stopping rule (at the start, after every completed data
        pass and at the end), all of the same length: ``data_passes`` (nondecreasing),
        ``primal_residual``, ``dual_residual``, ``objective``, ``constraint``
        (``max_j c_j`` at the checked point, ``nan`` without constraints),
        ``complementarity`` (``||z * c||``, which the paper's stopping rule does not test),
        ``outer_iter`` and ``inner_iter`` (iterations completed at the check).
    message : str
        Why the run stopped.
    settings : dict
        Every setting the run used, including the resolved ``rho`` and ``mu`` and the
        curvature estimate behind the default ``rho`` (``None`` when ``rho`` was given).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, ipc
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200)
    >>> result = ipc(problem)
    >>> result.message, bool(result.kkt_primal_residual <= 1e-2)
    ('converged: KKT residuals <= tol', True)
    """

    x: np.ndarray
    kkt_primal_residual: float
    kkt_dual_residual: float
    kkt_multipliers: np.ndarray
    objective: float
    constraint_values: np.ndarray
    converged: bool
    n_outer_iter: int
    n_iter: int
    n_data_passes: float
    history: dict
    message: str
    settings: dict = field(repr=False)


class _Oracle:
    """Full-data oracles of a finite-sum problem with strict per-sample counting."""

    def __init__(self, problem):
        self.problem = problem
        rng = np.random.default_rng(0)  # finite sums ignore it: the batch is every row
        self.bo = problem.evaluation_batch(rng, "objective")
        self.bc = problem.evaluation_batch(rng, "constraint") if problem.n_constraints else None
        self.n_samples = int(problem.n_samples)
        self.evaluations = 0

    @property
    def passes(self) -> float:
        return self.evaluations / self.n_samples

    @property
    def whole_passes(self) -> int:
        return self.evaluations // self.n_samples

    def objective_grad(self, x):
        """Gradient of ``f0`` on every objective row."""
        self.evaluations += self.problem.batch_size(self.bo, "objective")
        return self.problem.objective(x, self.bo)

    def constraints(self, x):
        """``c(x)`` and ``j -> grad c_j(x)``: one evaluation of every constraint row.

        The gradients come from the vjp of the same evaluation (same rows, same point), so
        they cost nothing more.
        """
        C, vjp = self.problem.constraints(x, self.bc)
        n = C.shape[0]
        self.evaluations += n

        def grad(j):
            U = np.zeros_like(C)
            U[:, j] = 1.0 / n
            return vjp(U)

        return C.mean(axis=0), grad


def _curvature(oracle, x, n_iter):
    """Largest curvature magnitude of ``f0`` and of each ``c_j`` around ``x``.

    Power iterations on finite-difference Hessian-vector products (the estimator of
    :mod:`sklearn_ialm.solver.smoothness`), every evaluation counted, with a difference step
    of ``max(1, ||x||)`` rather than an infinitesimal one: at ``x = 0`` the sigmoid losses of
    the paper's problems have an inflection point and no local curvature at all, while the
    curvature that matters is the one the iterates meet. The start vector comes from a fixed
    seed, so the run stays deterministic.
    """
    rng = np.random.default_rng(0)
    r = max(1.0, float(np.linalg.norm(x)))
    lam = _power(oracle.objective_grad, x, rng, n_iter, r=r)
    for j in range(oracle.problem.n_constraints):
        lam = max(lam, _power(lambda u, j=j: oracle.constraints(u)[1](j), x, rng, n_iter, r=r))
    return lam


def ipc(
    problem,
    *,
    x0=None,
    tol: float = 1e-2,
    rho: float | None = None,
    mu: float | None = None,
    inner_iter: int = 10,
    inner_increment: float = 1.0,
    step_offset: float = 12.0,
    switch_scale: float = 0.5,
    max_passes: float = 2000.0,
    max_outer_iter: int = 100_000,
    curvature_iter: int = 3,
    rho_min: float = 1e-3,
    verbose: int = 0,
) -> IPCResult:
    """Solve ``min f0(x) + h(x)`` subject to ``c_I(x) <= 0`` by IPC (Ma, Lin, Yang 2019).

    **Outer loop** (inexact proximal point). From ``x_0`` (zeros by default, as in the
    paper), outer iteration ``k`` approximately solves the strongly convex subproblem

    ``min f0(x) + h(x) + q_k(x)  s.t.  s_k(x) := max_j c_j(x) + q_k(x) <= 0``,
    ``q_k(x) = rho/2 ||x - x_k||^2``,

    and its output is ``x_{k+1}``. The quadratic on the constraints is what distinguishes
    IPC from a proximal-point method on the objective alone: the subproblem's feasible set is
    convex and contained in the original one.

    **Inner loop** (switching subgradient, ``T_k = inner_iter + ceil(inner_increment * k)``
    iterations from ``u_0 = x_k``), with step ``eta_t = 2 / (mu (t + step_offset))``:

    * if ``s_k(u_t) <= eps_t``: *objective step*
      ``u_{t+1} = prox_{eta_t h}(u_t - eta_t (grad f0(u_t) + rho (u_t - x_k)))``, and ``t``
      joins the set ``I``;
    * else: *constraint step* ``u_{t+1} = u_t - eta_t g_t`` with
      ``g_t = grad c_j(u_t) + rho (u_t - x_k)`` for a most violated ``j``;

    with the switching tolerance ``eps_t = switch_scale * eta_t * ||g_t||^2``. The output is
    the weighted average ``sum_{t in I} w_t u_t / sum_{t in I} w_t``,
    ``w_t = t + step_offset - 1``, of the objective-step iterates; if ``I`` is empty (the
    subproblem is not feasible yet, e.g. from an infeasible ``x_0``) it is the last iterate,
    which the constraint steps moved towards feasibility. A
    :class:`~sklearn_ialm.solver.Box` ``h`` is the domain ``X`` of the method and is
    projected onto after every step; any other ``h`` (``NoProx``, ``L1``) is part of the
    objective and enters through the prox of the objective steps only.

    These are the ingredients of the strongly convex switching-subgradient analysis (steps
    ``2 / (mu t)``, a tolerance ``eta_t M^2`` with ``M`` a subgradient bound, an average
    weighted by ``t``), with three practical choices of ours. Each was measured (data passes
    to ``tol``, and the objective's relative error against scipy's solution) on five small
    problems: the three of ``tests/test_ipc.py`` (least squares with an active linear
    constraint, truncated logistic with a sigmoid constraint, least squares with a linear and
    a quadratic constraint), a second truncated-logistic problem (d = 8) and a 2-d projection.

    * The observed ``||g_t||`` replaces the global bound ``M`` in ``eps_t``, halved
      (``switch_scale = 0.5``). A constraint step moves ``s_k`` down by about
      ``eta_t ||g_t||^2``, so the iterates zigzag across the boundary with that amplitude; a
      tolerance of half of it centres the averaged objective-step iterates on the boundary.
      Switching at exact feasibility (``switch_scale = 0``) leaves the average inside the
      feasible set by ``O(eta_T ||g||^2)``, a bias that does not shrink with the outer
      iterations since ``grad f0`` does not vanish at a constrained optimum: at
      ``tol = 1e-2`` the objective stayed 6 to 24 % above the optimum on four of the five
      problems (0.06 to 3.5 % with the default). ``switch_scale = 1`` overshoots to the
      infeasible side: three of the five did not converge in 5000 passes.
    * ``step_offset = 12``: the first step is ``eta_0 = 1 / (6 mu) = 1 / (3 rho)``, at most
      ``1 / (2 L_k)`` where ``L_k <= 3 rho / 2`` is the smoothness of the subproblem when
      ``rho >= 2 w``. The textbook ``2 / (mu (t + 2))`` can start above ``2 / L_k`` and
      oscillate on a smooth subproblem until the ``1 / t`` decay takes over: with it two of
      the five problems did not reach ``tol = 1e-2`` in 5000 passes. 6 was 7.6 times slower on
      one problem at ``tol = 1e-2``; 24 was 1.3 to 1.4 times slower on all five at
      ``tol = 1e-2`` (but faster on two at ``1e-3``).
    * The inner iteration count grows by ``inner_increment = 1`` per outer iteration from
      ``inner_iter = 10``. The subproblem error of the switching method decays like ``1 / T``
      only, so with a fixed ``T`` the outer loop settles where the residuals are of the size
      that ``T`` allows: ``T = 10`` fixed was 1.1 to 1.8 times cheaper at ``tol = 1e-2`` but
      did not reach ``tol = 1e-3`` on the active least-squares problem in 5000 passes
      (objective 5 % above the optimum; ``T = 20`` likewise), while a growing ``T_k`` drives
      the subproblem error to zero. Faster growth (2.5 per iteration, or from 20) cost 1.2 to
      1.7 times more passes at ``tol = 1e-2``.

    **Counting** is strict. An inner iteration evaluates the constraint values on every
    constraint row (their gradients come from the same evaluation, counted once):
    ``n_constraint_samples`` per-sample evaluations; an objective step adds the objective
    gradient on every objective row, ``n_objective_samples``. So an objective step costs one
    data pass (``problem.n_samples``), a constraint step ``n_constraint_samples / n_samples``.
    The curvature estimate behind the default ``rho`` is counted too, about
    ``curvature_iter + 1`` passes for one constraint.

    **Stopping.** At the start, after every completed data pass and at the end, the paper's
    residuals are evaluated at the current output point (the running weighted average of the
    current inner loop, or its last iterate while ``I`` is empty) and stored in the history:
    ``||[c]_+||`` and the dual residual with the optimal multiplier of eq. (opt-dual), via
    :func:`~sklearn_ialm.solver.original_residuals`. These full-data checks are not counted
    as data passes (as in :func:`~sklearn_ialm.solver.stoc_ialm` and the paper). The run
    stops as soon as both are ``<= tol``, or once ``max_passes`` are spent (the last inner
    iteration may overshoot the budget by at most one pass). Note that the paper's rule does
    not test complementarity: a point strictly inside the feasible set, where ``grad f0`` is
    nearly parallel to ``grad c``, passes it. The history records ``||z * c||`` for that.
    With a nonzero ``h`` (e.g. ``L1``), eq. (opt-dual) is solved with the smooth gradient
    only (:func:`~sklearn_ialm.solver.optimal_dual` does not see ``dh``), so the multiplier
    of an inactive constraint need not be zero and the dual residual can stall slightly
    above the true stationarity measure.

    Parameters
    ----------
    problem : FiniteSumProblem
        A finite sum (IPC is run deterministically on all rows) whose constraints are all
        inequalities ``c_j(x) <= 0``; any number ``m >= 0`` of them.
    x0 : array-like of shape (n_params,), optional
        Starting point; zeros by default. It need not be feasible.
    tol : float, default=1e-2
        The ``eps`` of the stopping rule (both KKT residuals ``<= tol``).
    rho : float, optional
        Proximal parameter, added to the objective and to the constraints. It must exceed the
        weak-convexity modulus ``w`` of ``f0`` and of every ``c_j`` for the subproblems to be
        strongly convex. Default: ``max(2 w_hat, rho_min)`` with ``w_hat`` the largest
        curvature magnitude of ``f0`` and of each ``c_j`` found by ``curvature_iter`` power
        iterations on finite-difference Hessian-vector products at ``x0``, with a difference
        step of ``max(1, ||x0||)`` (at ``x0 = 0`` the paper's sigmoid losses have an
        inflection point and no local curvature); these evaluations are counted as passes.
        ``rho = 2 w`` balances the two loops: the subproblem is then
        ``(rho - w) >= rho / 2``-strongly convex and ``(rho + w) <= 3 rho / 2``-smooth, a
        condition number of at most 3 for the inner loop, while a larger ``rho`` shortens the
        proximal steps and slows the outer loop in proportion. Measured at ``tol = 1e-2`` on
        the five problems above: twice the default cost 2.3 to 2.8 times more passes; half of
        it was twice as fast on four but 23 times slower on the nonconvex d = 8 problem,
        whose subproblems it no longer made convex enough.
    mu : float, optional
        Strong-convexity modulus assumed by the step rule; default ``rho / 2``, the modulus
        of the subproblem when ``rho = 2 w``.
    inner_iter : int, default=10
        Switching-subgradient iterations of the first proximal subproblem (each at most one
        data pass).
    inner_increment : float, default=1.0
        Growth of the inner iteration count per outer iteration (``0`` keeps it fixed).
    step_offset : float, default=12.0
        ``t_0`` of the step ``eta_t = 2 / (mu (t + t_0))`` and of the weights
        ``t + t_0 - 1`` (``t_0 = 2`` is the textbook schedule).
    switch_scale : float, default=0.5
        ``eps_t = switch_scale * eta_t * ||g_t||^2``; ``0`` switches at exact feasibility of
        the subproblem.
    max_passes : float, default=2000
        Budget in data passes (the paper's IPC runs needed from 3 to 1804).
    max_outer_iter : int, default=100000
        A safety cap on the proximal iterations; the budget normally binds first.
    curvature_iter : int, default=3
        Power iterations per function for the default ``rho`` (ignored when ``rho`` is given).
    rho_min : float, default=1e-3
        Floor of the default ``rho`` (linear problems have no curvature to estimate).
    verbose : int, default=0
        ``> 0`` prints one line per proximal iteration.

    Returns
    -------
    IPCResult

    Raises
    ------
    ValueError
        For equality constraints (IPC handles inequalities only), for a sampled (non
        finite-sum) problem, and for invalid parameters.

    Examples
    --------
    Minimise the mean of ``|x - a_i|^2 / 2`` subject to ``x_0 - x_1 <= -1``:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, ipc
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x[0] - x[1] + 1.0), np.tile([1.0, -1.0], (n, 1, 1))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200)
    >>> result = ipc(problem, tol=1e-3)
    >>> bool(result.converged), np.round(result.x, 1)
    (True, array([0.5, 1.5]))
    """
    ineq = np.asarray(problem.inequality, dtype=bool).reshape(-1)
    m = int(problem.n_constraints)
    if ineq.shape != (m,):
        raise ValueError(f"problem.inequality must have shape ({m},), got {ineq.shape}.")
    if not ineq.all():
        raise ValueError(
            "IPC handles inequality constraints c_j(x) <= 0 only, but constraints "
            f"{np.flatnonzero(~ineq).tolist()} are equalities. Use stoc_ialm, or write each "
            "equality c(x) = 0 as the two inequalities c(x) <= 0 and -c(x) <= 0."
        )
    if not getattr(problem, "finite", False):
        raise ValueError(
            "IPC is run in its deterministic version and needs a finite-sum problem "
            "(problem.finite is False)."
        )
    _check_positive("tol", tol)
    _check_positive("inner_iter", inner_iter, integer=True)
    _check_positive("inner_increment", inner_increment, strict=False)
    _check_positive("step_offset", step_offset)
    if step_offset < 1:
        raise ValueError(f"step_offset must be a number >= 1, got {step_offset!r}.")
    _check_positive("switch_scale", switch_scale, strict=False)
    _check_positive("max_passes", max_passes)
    _check_positive("max_outer_iter", max_outer_iter, integer=True)
    _check_positive("curvature_iter", curvature_iter, integer=True)
    _check_positive("rho_min", rho_min)
    if rho is not None:
        _check_positive("rho", rho)
    if mu is not None:
        _check_positive("mu", mu)
    inner_iter, max_outer_iter = int(inner_iter), int(max_outer_iter)

    p = int(problem.n_params)
    h = problem.h
    domain = isinstance(h, Box)  # a Box is the method's domain X: project after every step
    oracle = _Oracle(problem)
    x = np.zeros(p) if x0 is None else np.array(x0, dtype=float).reshape(p)
    if domain:
        x = h.prox(x, 1.0)

    curvature = None
    if rho is None:
        curvature = _curvature(oracle, x, int(curvature_iter))
        rho = max(2.0 * curvature, float(rho_min))
    rho = float(rho)
    mu = rho / 2.0 if mu is None else float(mu)

    keys = (
        "data_passes",
        "primal_residual",
        "dual_residual",
        "objective",
        "constraint",
        "complementarity",
        "outer_iter",
        "inner_iter",
    )
    hist = {key: [] for key in keys}
    last = {}
    eval_rng = np.random.default_rng(0)

    def check(xc, outer, inner):
        """Residuals at ``xc`` on all rows (not counted), into the history."""
        f0, grad, c, jac_t = problem.full_evaluation(xc, eval_rng)
        jac = np.vstack([jac_t(e) for e in np.eye(m)]) if m else np.zeros((0, p))
        pres, dres, z = original_residuals(xc, grad, jac, c, h, ineq)
        obj = f0 + h.value(xc)
        values = (
            oracle.passes,
            pres,
            dres,
            obj,
            float(np.max(c)) if m else np.nan,
            float(np.linalg.norm(z * c)),
            outer,
            inner,
        )
        for key, val in zip(keys, values, strict=True):
            hist[key].append(val)
        last.update(x=xc.copy(), pres=pres, dres=dres, z=z, obj=obj, c=c)
        return pres <= tol and dres <= tol

    def output(avg, weight, u):
        return avg / weight if weight > 0 else u.copy()

    converged = check(x, 0, 0)
    checked = oracle.whole_passes
    fresh = True  # the last check saw the current output
    n_iter = 0
    k = 0
    while not converged and k < max_outer_iter and oracle.passes < max_passes:
        center = x
        u = x.copy()
        avg, weight, n_obj_steps = np.zeros(p), 0.0, 0
        n_inner = inner_iter + int(np.ceil(inner_increment * k))
        for t in range(n_inner):
            if oracle.passes >= max_passes:
                break
            eta = 2.0 / (mu * (t + step_offset))
            d = u - center
            if m:
                c, cgrad = oracle.constraints(u)
                j = int(np.argmax(c))
                gs = cgrad(j) + rho * d
                objective_step = c[j] + 0.5 * rho * (d @ d) <= switch_scale * eta * (gs @ gs)
            else:
                objective_step = True
            if objective_step:
                w = t + step_offset - 1.0
                avg += w * u
                weight += w
                n_obj_steps += 1
                g = oracle.objective_grad(u) + rho * d
                u = h.prox(u - eta * g, eta)
            else:
                u = u - eta * gs
                if domain:
                    u = h.prox(u, eta)
            n_iter += 1
            fresh = False
            if oracle.whole_passes > checked:
                checked = oracle.whole_passes
                fresh = True
                if check(output(avg, weight, u), k, n_iter):
                    converged = True
                    break
        k += 1
        x = last["x"] if converged else output(avg, weight, u)
        if verbose:
            print(
                f"[ipc] k={k:5d} passes={oracle.passes:9.2f} T={n_inner:5d} "
                f"objective steps={n_obj_steps:5d} |x_k+1 - x_k|={np.linalg.norm(x - center):.2e}"
                f" pres={last['pres']:.2e} dres={last['dres']:.2e}"
            )
    if not converged and not fresh:
        converged = check(x, k, n_iter)
    if converged:
        message = "converged: KKT residuals <= tol"
    elif oracle.passes >= max_passes:
        message = "budget of data passes spent"
    else:
        message = "maximum number of outer iterations reached"
    if verbose:
        print(
            f"[ipc] k={k:5d} passes={oracle.passes:9.2f} pres={last['pres']:.2e} "
            f"dres={last['dres']:.2e} -- {message}"
        )

    history = {key: np.asarray(val, dtype=float) for key, val in hist.items()}
    for key in ("outer_iter", "inner_iter"):
        history[key] = history[key].astype(int)
    return IPCResult(
        x=last["x"],
        kkt_primal_residual=last["pres"],
        kkt_dual_residual=last["dres"],
        kkt_multipliers=last["z"],
        objective=last["obj"],
        constraint_values=last["c"],
        converged=bool(converged),
        n_outer_iter=k,
        n_iter=n_iter,
        n_data_passes=oracle.passes,
        history=history,
        message=message,
        settings=dict(
            tol=tol,
            rho=rho,
            mu=mu,
            inner_iter=inner_iter,
            inner_increment=inner_increment,
            step_offset=step_offset,
            switch_scale=switch_scale,
            max_passes=max_passes,
            max_outer_iter=max_outer_iter,
            curvature=curvature,
            curvature_iter=int(curvature_iter) if curvature is not None else None,
            rho_min=rho_min,
            domain=domain,
        ),
    )
