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
ours, each documented in :func:`ipc` and :data:`IPC_TUNED`.

The method
----------
**Outer loop** (inexact proximal point). From ``x_0`` (zeros by default, as in the
paper), outer iteration ``k`` approximately solves the subproblem

``min f0(x) + h(x) + q_k(x)  s.t.  s_k(x) := max_j c_j(x) + q_k(x) <= 0``,

and its output is ``x_{k+1}``. The quadratic on the constraints is what distinguishes
IPC from a proximal-point method on the objective alone: for ``rho`` above the
weak-convexity modulus the subproblem is strongly convex, and its feasible set is convex
and contained in the original one.

**Inner loop** (switching subgradient, ``T_k = inner_iter + ceil(inner_increment * k)``
iterations from ``u_0 = x_k``), with step ``eta_t = 2 / (mu (t + t0))``,
``t0 = step_offset``:

* if ``s_k(u_t) <= eps_t``: *objective step*
  ``u_{t+1} = prox_{eta_t h}(u_t - eta_t (grad f0(u_t) + rho (u_t - x_k)))``, and ``t``
  joins the set ``I``;
* else: *constraint step* ``u_{t+1} = u_t - eta_t g_t`` with
  ``g_t = grad c_j(u_t) + rho (u_t - x_k)`` for a most violated ``j``;

with the switching tolerance ``eps_t = max(switch_scale * eta_t * ||g_t||^2,
switch_floor * tol)``. The output is the weighted average
``sum_{t in I, t >= 1} w_t u_t / sum w_t``, ``w_t = t + t0 - 1``, of the objective-step
iterates after the centre (``include_center=True`` adds ``u_0 = x_k``); if there is none
(the subproblem is not feasible yet, e.g. from an infeasible ``x_0``) it is the last
iterate, which the constraint steps moved towards feasibility. A
:class:`~sklearn_ialm.solver.Box` ``h`` is the domain ``X`` of the method and is
projected onto after every step; any other ``h`` (``NoProx``, ``L1``) is part of the
objective and enters through the prox of the objective steps only.

These are the ingredients of Ma, Lin and Yang's strongly convex switching subgradient
method (steps ``2 / (mu t)``, a tolerance ``eta_t M^2`` with ``M`` a subgradient bound,
an average weighted by ``t``); the authors' code is not public, and the parameters of
:func:`ipc` are ours.

**Counting** is strict. An inner iteration evaluates the constraint values on every
constraint row (their gradients come from the same evaluation, counted once):
``n_constraint_samples`` per-sample evaluations; an objective step adds the objective
gradient on every objective row, ``n_objective_samples``. So an objective step costs one
data pass (``problem.n_samples``), a constraint step ``n_constraint_samples / n_samples``.
The curvature estimate behind the default ``rho`` and step is counted too, about
``curvature_iter + 1`` passes for one constraint (4 of the 9.2 on spambase).

**Stopping.** At the start, after every completed data pass and at the end, the paper's
residuals are evaluated at the current output point (the running weighted average of the
current inner loop, or its last iterate while it has none) and stored in the history:
``||[c]_+||`` and the dual residual with the optimal multiplier of eq. (opt-dual), via
:func:`~sklearn_ialm.solver.original_residuals`. These full-data checks are not counted
as data passes (as in :func:`~sklearn_ialm.solver.stoc_ialm` and the paper). The run
stops as soon as both are ``<= tol``, once ``max_passes`` are spent (the last inner
iteration may overshoot the budget by at most one pass), or when the iterates stop
being finite (the last checked point is returned). Note that the paper's rule does
not test complementarity: a point strictly inside the feasible set, where ``grad f0`` is
nearly parallel to ``grad c``, passes it. The history records ``||z * c||`` for that.
Nor does it test the objective: far from the data the paper's losses are flat and
their far-away near-stationary points pass it (see :data:`IPC_TUNED`, ``step_offset``).
With a nonzero ``h`` (e.g. ``L1``), eq. (opt-dual) takes ``h``'s subgradient among its
unknowns (:func:`~sklearn_ialm.solver.kkt_dual_residual`): the dual residual is the
stationarity measure itself, exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ._ipc_rules import IPC_TUNED, _Oracle, _Settings
from .kkt import original_residuals
from .problem import check_problem, jacobian_matrix
from .prox import Box

__all__ = ["IPC_TUNED", "IPCResult", "ipc"]


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
        The nonnegative multiplier of the paper's eq. (opt-dual) at ``x``, with ``h``'s
        subgradient (:func:`~sklearn_ialm.solver.kkt_dual_residual`); IPC itself keeps no
        multiplier.
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
        constraint rows); includes the curvature estimate when one was made.
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
        Every setting the run used, including the resolved ``rho``, ``mu`` and
        ``step_offset`` and the curvature ``w`` behind them (``None`` when neither rule
        needed it; ``curvature_iter`` is ``None`` unless it was estimated).

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


def _check_problem(problem) -> np.ndarray:
    """``problem.inequality`` as a bool array, after checking that IPC can solve ``problem``."""
    check_problem(problem)
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
    return ineq


def _start(problem, x0) -> np.ndarray:
    """The starting point: ``x0`` (zeros by default), projected onto a Box ``h``."""
    p = int(problem.n_params)
    x = np.zeros(p) if x0 is None else np.array(x0, dtype=float).reshape(p)
    if isinstance(problem.h, Box):
        x = problem.h.prox(x, 1.0)
    return x


class _Monitor:
    """The checks of the stopping rule and the history they record.

    ``checked`` is the number of whole data passes at the last check and ``fresh`` whether
    that check saw the current output; ``last`` holds what the last check found.
    """

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

    def __init__(self, problem, oracle, ineq, tol):
        self.problem, self.oracle, self.ineq, self.tol = problem, oracle, ineq, tol
        self.hist = {key: [] for key in self.keys}
        self.last = {}
        self.rng = np.random.default_rng(0)
        self.checked = oracle.whole_passes
        self.fresh = True

    def check(self, xc, outer, inner):
        """Residuals at ``xc`` on all rows (not counted), into the history: whether both are
        ``<= tol``, or ``None`` (nothing recorded) where a value is not finite."""
        problem = self.problem
        m, p, h = int(problem.n_constraints), int(problem.n_params), problem.h
        f0, grad, c, jac_t = problem.full_evaluation(xc, self.rng)
        jac = jacobian_matrix(jac_t, m, p)
        if not all(np.all(np.isfinite(v)) for v in (xc, f0, grad, c, jac)):
            return None  # diverged: nothing is recorded
        pres, dres, z = original_residuals(xc, grad, jac, c, h, self.ineq)
        obj = f0 + h.value(xc)
        values = (
            self.oracle.passes,
            pres,
            dres,
            obj,
            float(np.max(c)) if m else np.nan,
            float(np.linalg.norm(z * c)),
            outer,
            inner,
        )
        for key, val in zip(self.keys, values, strict=True):
            self.hist[key].append(val)
        self.last.update(x=xc.copy(), pres=pres, dres=dres, z=z, obj=obj, c=c)
        return pres <= self.tol and dres <= self.tol

    def due(self, u) -> bool:
        """Whether a check is due after an inner iteration ending at ``u``: a data pass was
        completed since the last check, or ``u`` is not finite."""
        return self.oracle.whole_passes > self.checked or not np.all(np.isfinite(u))

    def history(self) -> dict:
        """The history as arrays (``IPCResult.history``)."""
        history = {key: np.asarray(val, dtype=float) for key, val in self.hist.items()}
        for key in ("outer_iter", "inner_iter"):
            history[key] = history[key].astype(int)
        return history


def _switching_step(oracle, s, h, u, center, eta):
    """One switching-subgradient step of the subproblem centred at ``center`` from ``u``:
    ``(u_next, whether it was an objective step)``."""
    d = u - center
    if oracle.problem.n_constraints:
        c, cgrad = oracle.constraints(u)
        j = int(np.argmax(c))
        gs = cgrad(j) + s.rho * d
        eps_t = max(s.switch_scale * eta * (gs @ gs), s.switch_floor * s.tol)
        objective_step = c[j] + 0.5 * s.rho * (d @ d) <= eps_t
    else:
        objective_step = True
    if objective_step:
        g = oracle.objective_grad(u) + s.rho * d
        return h.prox(u - eta * g, eta), True
    u = u - eta * gs
    if isinstance(h, Box):  # a Box is the method's domain X: project after every step
        u = h.prox(u, eta)
    return u, False


def _inner_loop(oracle, monitor, s, center, k, n_iter):
    """Outer iteration ``k``: the switching subgradient method on the subproblem centred at
    ``center``, checking the stopping rule after every completed data pass.

    Returns ``(x_next, n_iter, n_inner, n_obj_steps, stop)``: the subproblem's output (the
    last checked point if a check stopped the run), the inner iterations of the run so far,
    the planned ``T_k``, the objective steps taken and ``None``, ``"converged"`` or
    ``"diverged"``.
    """
    h = oracle.problem.h
    u = center.copy()
    avg, weight, n_obj_steps = np.zeros(center.shape[0]), 0.0, 0
    n_inner = s.inner_iter + int(np.ceil(s.inner_increment * k))
    for t in range(n_inner):
        if oracle.passes >= s.max_passes:
            break
        eta = 2.0 / (s.mu * (t + s.step_offset))
        u_next, objective_step = _switching_step(oracle, s, h, u, center, eta)
        if objective_step:
            if t > 0 or s.include_center:
                w = t + s.step_offset - 1.0
                avg += w * u
                weight += w
            n_obj_steps += 1
        u = u_next
        n_iter += 1
        monitor.fresh = False
        if monitor.due(u):
            monitor.checked = oracle.whole_passes
            monitor.fresh = True
            ok = monitor.check(_output(avg, weight, u), k, n_iter)
            if ok is None:  # the steps blew up: stop, returning the last checked point
                return monitor.last["x"], n_iter, n_inner, n_obj_steps, "diverged"
            if ok:
                return monitor.last["x"], n_iter, n_inner, n_obj_steps, "converged"
    return _output(avg, weight, u), n_iter, n_inner, n_obj_steps, None


def _output(avg, weight, u):
    """The inner loop's output: the weighted average, or the last iterate while it has none."""
    return avg / weight if weight > 0 else u.copy()


def _outer_loop(oracle, monitor, s, x, stop, verbose):
    """The proximal-point iterations from ``x`` until ``stop`` is set, the budget is spent or
    ``max_outer_iter`` is reached, then the final check if the last one did not see the
    output: ``(k, n_iter, stop)``."""
    n_iter = 0
    k = 0
    while stop is None and k < s.max_outer_iter and oracle.passes < s.max_passes:
        center = x
        x, n_iter, n_inner, n_obj_steps, stop = _inner_loop(oracle, monitor, s, x, k, n_iter)
        k += 1
        if verbose:
            last = monitor.last
            print(
                f"[ipc] k={k:5d} passes={oracle.passes:9.2f} T={n_inner:5d} "
                f"objective steps={n_obj_steps:5d} |x_k+1 - x_k|={np.linalg.norm(x - center):.2e}"
                f" pres={last['pres']:.2e} dres={last['dres']:.2e}"
            )
    if stop is None and not monitor.fresh:
        ok = monitor.check(x, k, n_iter)
        stop = "diverged" if ok is None else "converged" if ok else None
    return k, n_iter, stop


def _message(stop, oracle, max_passes) -> str:
    """Why the run stopped."""
    if stop == "converged":
        return "converged: KKT residuals <= tol"
    if stop == "diverged":
        return "diverged: a non-finite iterate; the last checked point is returned"
    if oracle.passes >= max_passes:
        return "budget of data passes spent"
    return "maximum number of outer iterations reached"


def _result(problem, oracle, monitor, s, k, n_iter, stop) -> IPCResult:
    """The result of a run that ended with ``stop`` after ``k`` outer iterations."""
    last = monitor.last
    return IPCResult(
        x=last["x"],
        kkt_primal_residual=last["pres"],
        kkt_dual_residual=last["dres"],
        kkt_multipliers=last["z"],
        objective=last["obj"],
        constraint_values=last["c"],
        converged=stop == "converged",
        n_outer_iter=k,
        n_iter=n_iter,
        n_data_passes=oracle.passes,
        history=monitor.history(),
        message=_message(stop, oracle, s.max_passes),
        settings={**asdict(s), "domain": isinstance(problem.h, Box)},
    )


def ipc(
    problem,
    *,
    x0=None,
    tol: float = 1e-2,
    rho: float | None = None,
    rho_scale: float = 2.0,
    curvature: float | None = None,
    mu: float | None = None,
    inner_iter: int = 10,
    inner_increment: float = 1.0,
    step_offset: float | None = 12.0,
    step_scale: float = 1.0,
    switch_scale: float = 0.5,
    switch_floor: float = 0.1,
    include_center: bool = False,
    max_passes: float = 2000.0,
    max_outer_iter: int = 100_000,
    curvature_iter: int = 3,
    rho_min: float = 1e-6,
    verbose: int = 0,
) -> IPCResult:
    """Solve ``min f0(x) + h(x)`` subject to ``c_I(x) <= 0`` by IPC (Ma, Lin, Yang 2019).

    Outer iteration ``k`` approximately solves ``min f0(x) + h(x) + q_k(x)`` s.t.
    ``max_j c_j(x) + q_k(x) <= 0``, ``q_k(x) = rho/2 ||x - x_k||^2``, by ``T_k = inner_iter
    + ceil(inner_increment * k)`` switching-subgradient steps from ``x_k`` with step
    ``eta_t = 2 / (mu (t + step_offset))``: an objective step where the subproblem's
    constraint is at most ``eps_t = max(switch_scale * eta_t * ||g_t||^2, switch_floor *
    tol)``, else a step on a most violated constraint; ``x_{k+1}`` is the weighted average
    of the objective-step iterates. Every oracle evaluation is counted; the paper's KKT
    residuals are checked after every data pass. The module docstring of
    ``sklearn_ialm.solver.ipc`` gives the method, the counting and the stopping rule in full.
    The defaults solve well-scaled problems at tight tolerances; :data:`IPC_TUNED` is the
    rule tuned on the paper's problems (``ipc(problem, **IPC_TUNED)``), and its
    documentation gives the measurements behind both.

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
        Proximal parameter, added to the objective and to the constraints. The theory wants
        it above the weak-convexity modulus of ``f0`` and of every ``c_j``, for strongly
        convex subproblems. Default: ``max(rho_scale * w, rho_min)``.
    rho_scale : float, default=2.0
        ``rho = rho_scale * w`` when ``rho`` is not given, with ``w`` the curvature
        magnitude below (:data:`IPC_TUNED`: 0.125).
    curvature : float, optional
        The curvature magnitude ``w`` of the rules for ``rho`` and ``t0``. Default: the
        largest curvature magnitude of ``f0`` and of each ``c_j`` found by
        ``curvature_iter`` power iterations on finite-difference Hessian-vector products at
        ``x0``, with a difference step of ``max(1, ||x0||)`` (at ``x0 = 0`` the paper's
        sigmoid losses have an inflection point and no local curvature); these evaluations
        are counted as passes. Not estimated when neither rule needs it (``rho`` and
        ``step_offset`` given).
    mu : float, optional
        Strong-convexity modulus assumed by the step rule; default ``rho / 2``.
    inner_iter : int, default=10
        Switching-subgradient iterations of the first proximal subproblem (each at most one
        data pass).
    inner_increment : float, default=1.0
        Growth of the inner iteration count per outer iteration (``0`` keeps it fixed).
    step_offset : float or None, default=12.0
        ``t0`` of the step ``eta_t = 2 / (mu (t + t0))`` and of the weights
        ``t + t0 - 1`` (``t0 = 2`` is the textbook schedule). ``None``:
        ``max(2, 2 (w + rho) / (mu * step_scale))``, i.e. ``eta_0 = step_scale / (w + rho)``.
    step_scale : float, default=1.0
        ``eta_0 * (w + rho)`` of the rule for ``step_offset=None`` (ignored otherwise).
    switch_scale : float, default=0.5
        ``eps_t >= switch_scale * eta_t * ||g_t||^2``; ``0`` (with ``switch_floor=0``)
        switches at exact feasibility of the subproblem.
    switch_floor : float, default=0.1
        ``eps_t >= switch_floor * tol``.
    include_center : bool, default=False
        Whether the average that ends an inner loop includes its first iterate, the centre
        ``x_k`` (Ma, Lin and Yang's average does).
    max_passes : float, default=2000
        Budget in data passes (the paper's IPC runs needed from 3 to 1804).
    max_outer_iter : int, default=100000
        A safety cap on the proximal iterations; the budget normally binds first.
    curvature_iter : int, default=3
        Power iterations per function for the curvature estimate.
    rho_min : float, default=1e-6
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
        finite-sum) problem, for invalid parameters, and for a non-finite objective or
        constraint at ``x0``.

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
    ineq = _check_problem(problem)
    settings = _Settings(
        tol=tol, rho=rho, mu=mu, inner_iter=inner_iter, inner_increment=inner_increment,
        step_offset=step_offset, step_scale=step_scale, rho_scale=rho_scale,
        switch_scale=switch_scale, switch_floor=switch_floor, include_center=include_center,
        max_passes=max_passes, max_outer_iter=max_outer_iter, curvature=curvature,
        curvature_iter=curvature_iter, rho_min=rho_min,
    )  # fmt: skip
    settings.check()
    oracle = _Oracle(problem)
    x = _start(problem, x0)
    settings = settings.resolved(oracle, x)
    monitor = _Monitor(problem, oracle, ineq, settings.tol)
    converged = monitor.check(x, 0, 0)
    if converged is None:
        raise ValueError("The objective or the constraints are not finite at x0.")
    stop = "converged" if converged else None
    k, n_iter, stop = _outer_loop(oracle, monitor, settings, x, stop, verbose)
    result = _result(problem, oracle, monitor, settings, k, n_iter, stop)
    if verbose:
        print(
            f"[ipc] k={k:5d} passes={oracle.passes:9.2f} pres={result.kkt_primal_residual:.2e} "
            f"dres={result.kkt_dual_residual:.2e} -- {result.message}"
        )
    return result
