"""The deterministic finish: the augmented Lagrangian method on all rows, from the multipliers
that Stoc-iALM found.

Stoc-iALM's minibatch steps find the multipliers (and so which constraints are active) in a
few passes, but their precision is bound by the gradient noise of a small batch: larger or
preconditioned stochastic steps diverge once the penalty grows (see the user guide,
"How a fit ends"). Started from the stochastic phase's point and multipliers, a few outer
iterations of the classical augmented Lagrangian method with exact inner solves end where
``LogisticRegression`` ends: at a gradient as small as its own. With no active constraint
the augmented Lagrangian is the unconstrained objective, so a bound that does not bind gives
the unconstrained model.

With the slacks of the inequalities minimised out, the augmented Lagrangian of
``min g(x) + h(x)  s.t.  c_E(x) = 0, c_I(x) <= 0`` is

    ``g(x) + h(x) + sum_i (w_i^2 - y_i^2) / (2 beta)``,  ``w = y + beta c(x)`` (``w_I >= 0``)

whose gradient is ``grad g + grad h + J^T w``; the multiplier step sets ``y = w``. Free
levels ``tau`` (``c(x) + levels @ tau <= 0``, see :func:`~.kkt.level_shift`) are variables of
the inner solve beside ``x``. ``h`` must be smooth (:class:`~.prox.Ridge`, :class:`~.prox.NoProx`)
or a :class:`~.prox.Box` (its bounds go to L-BFGS-B).

The inner solves are Newton's method where the problem offers
``second_order_evaluation(x) -> (f0, grad, c, J, hessian)`` (every
:class:`~sklearn_ialm.problems.LinearProblem` with one of the package's losses, and its Dask
form) and ``h`` is smooth: ``hessian(mu)`` is the Hessian of ``g + mu . c``, the constraint
curvature weighted by the solve's multipliers. For a linear score that is one weighted Gram
matrix of the rows whatever the number of constraints, so an iteration costs about the same
with one constraint or forty; with the penalty's ``beta J^T J`` it makes the inner solves
converge in a few iterations where L-BFGS-B, blind to the penalty's curvature, needed tens
to hundreds of evaluations (Adult by race, five groups, every fairness kind at 0.05: 301
passes, none converged; on a Dask cluster each evaluation is a compute). Above a thousand
parameters the Hessian is an operator and the steps come from conjugate gradients. Other
problems (a loss of the user's, a box) keep L-BFGS-B (scipy's ``L-BFGS-B``), each evaluation
one read of every row (``problem.full_evaluation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._finish_lagrangian import _AugmentedLagrangian
from ._newton_steps import HessianOperator
from .kkt import level_values
from .prox import Box, NoProx, Ridge

__all__ = ["FinishResult", "HessianOperator", "finish_applies", "alm_finish"]

#: Penalty growth when an outer iteration did not shrink the constraint violation fourfold
#: (the classical rule of the augmented Lagrangian method).
_PENALTY_GROWTH = 10.0
_PRIMAL_DECREASE = 0.25
#: The inner solves' tolerance: a share of the last constraint violation, at most the first.
_INNER_SHARE = 0.1
_FIRST_INNER_TOL = 1e-3


@dataclass
class FinishResult:
    """What :func:`alm_finish` returns.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
    shift : ndarray of shape (n_constraints,)
        The change of the constraint offsets by the free levels (zeros without levels).
    multipliers : ndarray of shape (n_constraints,)
        ``y`` after the last multiplier step (``>= 0`` on the inequalities).
    solve_multipliers : ndarray of shape (n_constraints,)
        ``y`` of the last inner solve: ``multipliers`` is ``max(solve_multipliers + beta c,
        0)`` (on the inequalities) at ``x``.
    beta : float
        The penalty of the last inner solve.
    primal_residual : float
        ``||k||``, ``k = c(x) + shift + s`` with the slacks at their minimiser.
    dual_residual : float
        ``||grad g + grad h + J^T y||`` (and the levels' block), with the returned ``y``.
    converged : bool
        Both residuals within their tolerances.
    n_evaluations : float
        Reads of every row: calls of ``problem.full_evaluation`` (or
        ``second_order_evaluation``), each one, and the Newton steps' curvature
        (``problem.curvature_passes`` each; a Hessian-vector product one).
    n_outer_iter : int
    message : str
    evaluation : tuple or None
        The problem's ``(f0, grad, c, J)`` at ``x`` on all rows (``c`` with the problem's
        offsets, without ``shift``), where the last inner solve formed it (Newton's): the
        verdict on ``x`` needs no read of its own.
    history : dict of ndarray
        One entry per outer iteration: ``primal_residual``, ``dual_residual``, ``beta`` and
        ``evaluations`` (the count so far).
    """

    x: np.ndarray
    shift: np.ndarray
    multipliers: np.ndarray
    solve_multipliers: np.ndarray
    beta: float
    primal_residual: float
    dual_residual: float
    converged: bool
    n_evaluations: float
    n_outer_iter: int
    message: str
    history: dict
    evaluation: tuple | None = None


def finish_applies(problem) -> bool:
    """Whether :func:`alm_finish` can solve ``problem``: a finite sum whose ``h`` is smooth
    or a box (an L1 term would need a proximal quasi-Newton method)."""
    h = getattr(problem, "h", NoProx())
    return bool(problem.finite) and type(h) in (NoProx, Ridge, Box)


def _newton_applies(problem) -> bool:
    """Whether the inner solves use Newton's method (see the module docstring)."""
    second = getattr(problem, "second_order_evaluation", None)
    available = getattr(problem, "second_order_available", lambda: second is not None)
    return second is not None and available() and type(problem.h) in (NoProx, Ridge)


def _first_of(*values):
    """The first of ``values`` that is not None."""
    return next(v for v in values if v is not None)


def _primal(c, y, beta, ineq):
    """``||c + s||`` with the slacks at the minimiser ``max(-(c + y / beta), 0)``."""
    k = c.copy()
    k[ineq] = np.maximum(c[ineq], -y[ineq] / beta)
    return float(np.linalg.norm(k))


def alm_finish(
    problem,
    x0,
    y0,
    beta0: float,
    *,
    tol: float,
    dual_tol: float,
    max_evaluations: int,
    max_outer_iter: int = 20,
    verbose: int = 0,
    passes_before: float = 0.0,
    pass_share: float = 1.0,
) -> FinishResult:
    """The augmented Lagrangian method with Newton (or L-BFGS-B) inner solves on all rows,
    from ``(x0, y0)`` at penalty ``beta0``.

    Parameters
    ----------
    problem : FiniteSumProblem
        See :func:`finish_applies`. Its ``offset`` is not changed: the levels' change is
        returned as ``shift``.
    x0, y0 : ndarray
        Start (Stoc-iALM's point and multipliers; ``y0`` is clipped to ``>= 0`` on the
        inequalities).
    beta0 : float
        The first inner solve's penalty.
    tol, dual_tol : float
        The primal residual's and the dual residual's (Euclidean norms) tolerances.
    max_evaluations : int
        Budget of reads of every row (evaluations, and the Newton steps' curvature: see
        :class:`FinishResult`'s ``n_evaluations``).
    max_outer_iter : int, default=20
    verbose : int, default=0
        ``> 0`` prints a line per outer iteration: the penalty, both residuals, the
        evaluations, the run's data passes so far and, on a cluster, the computes so far.
    passes_before : float, default=0.0
        The run's data passes before the finish (for the ``verbose`` lines).
    pass_share : float, default=1.0
        Data passes per evaluation (for the ``verbose`` lines).

    Returns
    -------
    FinishResult
    """
    m = problem.n_constraints
    ineq = np.asarray(problem.inequality, dtype=bool) if m else np.zeros(0, bool)
    levels = getattr(problem, "levels", None)
    al = _AugmentedLagrangian(problem, levels, ineq, max_evaluations)
    # A Newton step reads the rows for its point, its curvature and a trial point: with
    # fewer reads left it cannot end, where L-BFGS-B's first steps (a read each) make
    # progress (a 600-row Neyman-Pearson fit at max_passes=5 had 2 reads for its finish:
    # it returned its starting point, the constant model, instead of a model).
    newton = _newton_applies(problem) and max_evaluations >= 2 + getattr(
        problem, "curvature_passes", 0
    )
    y = np.array(y0, dtype=float).reshape(m)
    y[ineq] = np.maximum(y[ineq], 0.0)
    beta = float(beta0)
    v = np.concatenate(
        [np.asarray(x0, dtype=float), np.zeros(0 if levels is None else levels.shape[1])]
    )
    bounds = None if al.bounds is None else al.bounds + [(None, None)] * (len(v) - al.p)
    pres = dres = np.inf
    message, converged, k = "maximum number of outer iterations reached", False, 0
    if max_outer_iter < 1:
        raise ValueError(f"max_outer_iter must be >= 1, got {max_outer_iter!r}.")
    y_solve, beta_solve = y, beta
    # Whether the multipliers may come from Newton's step on the KKT system, whether the
    # last ones did, and the point and classical multipliers they replaced.
    kkt_steps, from_kkt, before_kkt = newton and m > 0, False, None
    record = {"primal_residual": [], "dual_residual": [], "beta": [], "evaluations": []}
    if levels is not None and newton and max_evaluations >= 2:
        # The free levels start where they minimise the augmented Lagrangian at x0 (no
        # further read): a warm start at a moved bound has them at zero, and from there
        # the first Newton steps crossed the kinks of max(y + beta c, 0) back and forth
        # (error-rate parity on Adult by race: 33 reads per re-solve instead of 1 to 3).
        c0 = al.constraint_values(v)
        v[al.p :] = level_values(levels, c0, y, beta)
    for k in range(max_outer_iter):
        if max_evaluations - al.n_evaluations < 2:
            message = "budget of data passes spent"
            break
        # Inexact inner solves while the multipliers are still moving: to a tenth of the
        # last constraint violation (in the gradient's units, capped at _FIRST_INNER_TOL),
        # the dual tolerance at the end; in the max-norm L-BFGS-B reads (entries within
        # tol / sqrt(n) put the Euclidean norm within tol).
        inner_tol = max(dual_tol, min(_FIRST_INNER_TOL, _INNER_SHARE * pres)) if m else dual_tol
        spent = al.solve(v, y, beta, inner_tol, newton=newton, bounds=bounds)
        if al.best is None:
            message = "budget of data passes spent"
            break
        _, v, c, w, g = al.best
        pres_new = _primal(c, y, beta, ineq) if m else 0.0
        y_solve, beta_solve = y, beta
        y = w.copy()
        dres = float(np.linalg.norm(g))
        for key, value in zip(record, (pres_new, dres, beta, al.n_evaluations), strict=True):
            record[key].append(value)
        if verbose:
            computes = getattr(problem, "describe_computes", lambda: "")()
            print(
                f"[finish] k={k} beta={beta:.3g} pres={pres_new:.2e} dres={dres:.2e} "
                f"evaluations={al.n_evaluations:g} "
                f"passes={passes_before + pass_share * al.n_evaluations:.3f}{computes}",
                flush=True,
            )
        if pres_new <= tol and dres <= dual_tol:
            pres, converged = pres_new, True
            message = "converged: primal and dual residuals <= tol on all rows"
            break
        if spent:
            pres, message = pres_new, "budget of data passes spent"
            break
        if from_kkt and pres_new > pres:
            # The last Newton multipliers moved the constraints away: the linear model of
            # c they solve does not hold this far from the optimum (five groups'
            # demographic parity from zero at beta = 1: the violation 0.15, 1.5, 8.2 and
            # on to 1e4, unconverged in 2000 reads). The solve is undone: the classical
            # steps go on from the last point, as they do where the curvature is not cheap.
            (v, y), kkt_steps, from_kkt = before_kkt, False, False
            al.best_evaluation = None  # (the undone solve's: not at v)
            continue
        kkt = al.newton_multipliers(y_solve, beta_solve) if kkt_steps else None
        before_kkt, from_kkt = (v, y), kkt is not None
        y = _first_of(kkt, y)
        if pres_new > _PRIMAL_DECREASE * pres and pres_new > tol:
            beta *= _PENALTY_GROWTH
        pres = pres_new
    x, tau = al.split(v)
    return FinishResult(
        x=x.copy(),
        shift=al.shift(tau),
        multipliers=y,
        solve_multipliers=y_solve,
        beta=beta_solve,
        primal_residual=float(pres),
        dual_residual=float(dres),
        converged=converged,
        n_evaluations=al.n_evaluations,
        n_outer_iter=k + 1,
        message=message,
        history={key: np.asarray(value) for key, value in record.items()},
        evaluation=al.best_evaluation if al.best is not None else None,
    )
