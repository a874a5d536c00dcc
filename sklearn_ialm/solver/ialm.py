"""Stoc-iALM (Algorithm 1 of the paper) with PStorm as the subroutine: the outer loop.

The steps are named pieces: the settings (:mod:`.settings`), the count of rows touched and
its budget (:mod:`.counting`), the stop test (:mod:`.stopping`, :mod:`.subsample`), the inner
solver (:mod:`.inner`, :mod:`.pstorm`) and the history (:mod:`.history`). The run's pieces
are put together in :mod:`._ialm_setup`, the loop over them (and the finish after it) is in
:mod:`._ialm_loop`, and the choice of the stochastic phase before the finish in
:mod:`._ialm_search`. This module holds the entry point and the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._ialm_loop import _finish, _last_test, _LoopState, _stochastic_phase
from ._ialm_search import _before_finish
from ._ialm_setup import _generator, _Parts, _set_up
from .history import HISTORY_COUNTS
from .kkt import original_residuals, original_violation
from .problem import jacobian_matrix
from .settings import PRESETS, RunSettings, resolve_settings

__all__ = ["HISTORY_COUNTS", "PRESETS", "IALMResult", "stoc_ialm"]


@dataclass
class IALMResult:
    """What :func:`stoc_ialm` returns.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        The returned point (the last one the stopping rule evaluated).
    slack : ndarray of shape (n_inequalities,)
        Slack variables of the inequality constraints.
    multipliers : ndarray of shape (n_constraints,)
        The multiplier that certifies the dual residual, ``y_k + beta_k (c(x) + E s)``.
    primal_residual, dual_residual : float
        Residuals of the slack reformulation at ``(x, slack)`` (the stopping rule).
    primal_residual_se, dual_residual_se : float
        Standard errors of those residuals: 0 for a finite sum (they are exact on all rows),
        estimated by batch means over 10 chunks of the evaluation batch for a sampled
        problem.
    kkt_primal_residual, kkt_dual_residual : float
        Residuals of the original problem with the optimal nonnegative multiplier
        ``kkt_multipliers`` (the paper's eq. (opt-dual), how IPC is judged, solved exactly
        with ``h``'s subgradient and the free levels' stationarity: see
        :func:`~sklearn_ialm.solver.kkt_dual_residual`), at ``x``. The dual residual and
        that multiplier are solved for when first read.
    objective : float
        ``g(x) + h(x)`` on the evaluation batch.
    constraint_values : ndarray of shape (n_constraints,)
        ``c(x)`` on the evaluation batch.
    converged : bool
        Both residuals ``<= tol`` (``dual_tol``), on all rows for a finite sum. With the
        finish (the ``"default"`` preset), within ``finish_tol`` times those: by default
        the same tolerances; the estimators ask for ``finish_tol=1e-3``.
    n_iter, n_outer_iter : int
        Inner (PStorm) and outer iterations.
    n_data_passes : float
        Every row the fit touched: per-sample evaluations divided by the number of samples
        (objective plus constraint rows), with the set-up (``n_setup_passes``), the
        minibatches (a sample used at two points counts twice) and the stop tests
        (``n_check_passes``); ``nan`` for a sampled problem. ``max_passes`` caps it.
    n_setup_passes : float
        The part spent before the first iteration: the problem's own set-up
        (``problem.setup_evaluations``, e.g. the smoothness bound of a
        :class:`~sklearn_ialm.problems.LinearProblem`, one pass) when its smoothness is used,
        or the solver's finite-difference estimate of it (:mod:`.smoothness`).
    n_check_passes : float
        The part spent evaluating the stopping rule on every row: one
        ``problem.full_evaluation_cost()`` per test (by default ``n_samples``, one pass; the
        backward products at the tested point belong to the same evaluation).
    n_passes_without_checks : float
        ``n_data_passes - n_check_passes``: set-up, minibatches and finish, every per-sample
        evaluation counted (a sample read at two points twice); the paper's tables count
        less, see ``n_paper_passes``.
    n_paper_passes : float
        The count of the paper's tables: each drawn sample once, set by set, as
        ``objective_draws / n_objective_samples + constraint_draws / n_constraint_samples``,
        without the second independent constraint batch of ``estimator="independent"`` and
        without the stop tests, times ``problem.paper_settings["count_scale"]`` (one half for
        the fairness model, 1 otherwise), plus ``n_setup_passes`` when the run's smoothness
        constants came from that set-up (not with the paper's constants, which need none).
        It reproduces the step of the paper's figures: 50 inner iterations at batch 10 on
        spambase add ``50 (10/1813 + 10/2788) = 0.455``, at batch 30 on a9a
        ``50 (30/32561 + 30/16281) / 2 = 0.069``. ``nan`` for a sampled problem.
    n_oracle_calls : int
        Per-sample oracle evaluations, set-up and stop tests included (for a sampled
        problem the fresh samples of the stopping rule and of the smoothness estimate).
    n_draws : tuple (objective, constraint)
        Samples drawn, each counted once.
    history : dict of ndarray
        One entry per evaluation of the stopping rule: ``data_passes`` (all passes so far,
        this test included), ``check_passes`` (the stop tests' share of it),
        ``paper_passes`` (the paper's count so far),
        ``oracle_calls``, ``objective_draws``, ``constraint_draws``, ``inner_iter``,
        ``outer_iter``, ``beta``,
        ``primal_residual``, ``dual_residual`` (and their standard errors), ``objective``,
        ``constraint`` (the largest constraint value ``max_j c_j(x)``), ``batch_size``.
    message : str
        Why the run stopped.
    settings : dict
        Every setting the run used.
    n_finish_passes : float
        The part spent by the deterministic finish (a pass per evaluation of its inner
        solves, and the reads of its Newton steps' curvature), without its closing test on
        all rows (a stop test).
    finish_history : dict of ndarray or None
        The finish's outer iterations (``primal_residual``, ``dual_residual``, ``beta``,
        ``evaluations`` and ``passes`` so far); None when no finish ran.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, stoc_ialm
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200)
    >>> result = stoc_ialm(problem, random_state=0)
    >>> result.message
    "converged: primal and dual residuals <= the finish's tolerances"
    >>> np.round(result.x, 2), np.round(result.multipliers, 2)
    (array([0.49, 0.51]), array([0.5]))
    >>> len(result.history["data_passes"]) == len(result.history["dual_residual"])
    True
    """

    x: np.ndarray
    slack: np.ndarray
    multipliers: np.ndarray
    primal_residual: float
    dual_residual: float
    primal_residual_se: float
    dual_residual_se: float
    kkt_primal_residual: float
    kkt_dual: _KKTDual = field(repr=False)
    objective: float
    constraint_values: np.ndarray
    converged: bool
    n_iter: int
    n_outer_iter: int
    n_data_passes: float
    n_setup_passes: float
    n_check_passes: float
    n_passes_without_checks: float
    n_paper_passes: float
    n_oracle_calls: int
    n_draws: tuple
    history: dict
    message: str
    settings: dict = field(repr=False)
    n_finish_passes: float = 0.0
    finish_history: dict | None = field(default=None, repr=False)

    @property
    def kkt_dual_residual(self) -> float:
        return self.kkt_dual.solved()[0]

    @property
    def kkt_multipliers(self) -> np.ndarray:
        return self.kkt_dual.solved()[1]

    def count_totals(self) -> dict:
        """The run's total of each counting column of ``history`` (:data:`HISTORY_COUNTS`):
        what a run that follows this one adds its own counts to."""
        return dict(
            data_passes=self.n_data_passes,
            check_passes=self.n_check_passes,
            paper_passes=self.n_paper_passes,
            oracle_calls=self.n_oracle_calls,
            objective_draws=self.n_draws[0],
            constraint_draws=self.n_draws[1],
            inner_iter=self.n_iter,
        )


class _KKTDual:
    """The dual half of :func:`~.kkt.original_residuals` at a run's last point, solved for
    when first read: ``(kkt_dual_residual, kkt_multipliers)``.

    The system is the run's own: its problem's ``h`` and free levels (with the offsets the
    run moved them to), warm-started from the run's positive multipliers (100 groups of 20
    rows: two solves of the active set, 5 ms; 1000 groups, 2000 constraints: two, 1.5 s,
    where scipy's NNLS from nothing takes 7). The estimators read it of the solve they keep
    only."""

    def __init__(self, x, grad, jac, c, h, inequality, levels=None, start=None):
        self._inputs, self._solved = (x, grad, jac, c, h, inequality, levels, start), None

    def solved(self):
        if self._solved is None:
            _, dres, z = original_residuals(*self._inputs)
            self._inputs, self._solved = None, (dres, z)
        return self._solved


def stoc_ialm(
    problem,
    *,
    x0=None,
    tol: float = 1e-2,
    dual_tol: float | None = None,
    preset: str = "default",
    beta0: float = 1.0,
    sigma: float | None = None,
    gamma: float = 1.0,
    batch_size: int | None = None,
    max_passes: float = 100.0,
    max_oracle_calls: int | None = None,
    max_outer_iter: int = 60,
    multiplier_samples: int | None = None,
    theory_constants: dict | None = None,
    y0=None,
    slack0=None,
    random_state=None,
    verbose: int = 0,
    **knobs,
) -> IALMResult:
    """Solve ``min g(x) + h(x)`` subject to ``c_E(x) = 0, c_I(x) <= 0``: Stoc-iALM + PStorm.

    Algorithm 1 of the paper: for ``k = 0, 1, ...`` with ``beta_k = beta0 * sigma**k``,
    PStorm approximately minimises the augmented Lagrangian
    ``L(x, s, y) = f0(x) + y.k + beta_k/2 ||k||^2`` with ``k = c(x) + E s`` (inequalities get
    nonnegative slacks ``s``), then ``y += min(beta_k, gamma/||k||) k``. An outer iteration ends
    when the dual residual (the stationarity of ``L``) evaluated on the evaluation batch is
    ``<= dual_tol``; the run stops when the primal residual ``||k||`` is ``<= tol`` as well.
    Every row touched is counted: set-up, minibatches and stop tests (see
    :class:`IALMResult`).

    Parameters
    ----------
    problem : Problem
        A :class:`~sklearn_ialm.solver.FiniteSumProblem`, :class:`SampledProblem` or any
        object with the same protocol.
    x0, y0, slack0 : array-like, optional
        Starting point (zeros by default, as in the paper), multipliers and slacks.
    tol : float, default=1e-2
        The ``eps`` of the eps-KKT stopping rule: ``converged`` says both residuals are
        within it (and ``dual_tol``). The knob ``finish_tol`` asks the finish for a share
        of it.
    dual_tol : float, optional
        The threshold of the dual residual alone (``None``: ``tol``); the estimators set it
        relative to the dual residual at ``x = 0``.
    preset : {"default", "paper", "theory"}, default="default"
        Named settings (:data:`PRESETS`). ``"paper"`` runs Section 5 of the paper as
        written, with ``problem.paper_settings`` where the problem carries them (see
        :ref:`paper_reading`); ``"theory"`` the proof's parameters.
    beta0 : float, default=1.0
    sigma : float, optional
        Penalty schedule ``beta_k = beta0 * sigma**k``; ``None``: 2.5, or the paper's value.
    gamma : float, default=1.0
        Cap of the multiplier step, ``min(beta_k, gamma / ||k||)``.
    batch_size : int, optional
        Minibatch size (``>= 2``); ``None``: 30, or the paper's value. Clipped, with a
        warning, to the larger row count of a finite sum.
    **knobs
        The tuning knobs by name (``m0``, ``delta``, ``estimator``, ``finish``, ...), each
        documented in :class:`~sklearn_ialm.solver.settings.Settings` (``None``: the
        preset's value).
    max_passes : float, default=100
        Budget in data passes (finite sums), set-up and stop tests included; the count ends
        past it by at most the set-up and the last stop test.
    max_oracle_calls : int, optional
        Budget in per-sample oracle calls (sampled problems; default ``10**7``).
    max_outer_iter : int, default=60
    multiplier_samples : int, optional
        ``M_k``: fresh constraint samples for the multiplier step (default: the evaluation
        batch's values; with ``preset="theory"``, ``ceil(tol**-2)``).
    theory_constants : dict, optional
        With ``preset="theory"``: ``sigma_g``, ``sigma_c``, ``gap`` (see
        :func:`~sklearn_ialm.solver.theory.theory_parameters`).
    random_state : int, numpy Generator, SeedSequence or None
    verbose : int, default=0
        ``> 0`` prints one line per outer iteration, and a line at a stop test whenever
        2 seconds passed without one.

    Returns
    -------
    IALMResult
        The point, its residuals, the cost and the history of the run.

    See Also
    --------
    ipc : The IPC baseline on the same problems.
    sklearn_ialm.plotting.ConvergenceDisplay.from_results : Plot the history of runs.

    Examples
    --------
    Minimise the mean of ``|x - a_i|^2 / 2`` subject to ``x_0 + x_1 <= 1`` (the constraint is
    the same for every row here):

    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, stoc_ialm
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200)
    >>> result = stoc_ialm(problem, random_state=0)
    >>> bool(result.converged), np.round(result.x, 1)
    (True, array([0.5, 0.5]))
    >>> bool(result.primal_residual <= 1e-2 and result.dual_residual <= 1e-2)
    True
    """
    run = resolve_settings(
        problem, preset=preset, knobs=knobs, tol=tol, dual_tol=dual_tol, beta0=beta0,
        sigma=sigma, gamma=gamma, batch_size=batch_size, max_passes=max_passes,
        max_oracle_calls=max_oracle_calls, max_outer_iter=max_outer_iter,
        multiplier_samples=multiplier_samples, theory_constants=theory_constants,
    )  # fmt: skip
    rng = _generator(random_state)
    search, sized, sample = _before_finish(problem, run, rng)
    if sample is not None:
        args = dict(
            x0=x0, tol=tol, dual_tol=dual_tol, preset=preset, beta0=beta0, sigma=sigma,
            gamma=gamma, batch_size=batch_size, max_passes=max_passes,
            max_oracle_calls=max_oracle_calls, max_outer_iter=max_outer_iter,
            multiplier_samples=multiplier_samples, theory_constants=theory_constants,
            y0=y0, slack0=slack0, verbose=verbose, **knobs,
        )  # fmt: skip
        return _search_on_sample(problem, sample, rng, args)
    # A finish without search reads no minibatch (on far rows, a Dask cluster, its first
    # momentum estimate would be a read of every partition for nothing).
    parts, y = _set_up(
        problem, run, rng, x0=x0, y0=y0, slack0=slack0, verbose=verbose,
        momentum=not (run.finish and not search),
    )  # fmt: skip
    state = _stochastic_phase(parts, run, y, search=search, sized=sized)
    if run.finish:
        _finish(parts, run, state, verbose)
    else:
        _last_test(parts, state)
    return _result(parts, run, state)


def _search_on_sample(problem, sample, rng, args) -> IALMResult:
    """The run on a sample of the rows (``problem.search_sample``, rows brought from a Dask
    cluster once; ``problem.row_sample``, rows in memory, see ``_SAMPLE_MIN_ROWS``): the
    stochastic phase and its finish on the sample, then the finish on all rows from the
    sample's point, multipliers and last penalty.

    The multipliers are what the stochastic phase finds; on the cluster each of its stop
    tests and blocks of minibatches would be a read of every partition, in memory a finish
    from zero multipliers takes several outer iterations of all rows. The result's counts
    are the two runs' together, the sample's in passes over all rows.
    """
    share = sample.n_samples / problem.n_samples
    if args["verbose"]:
        print(
            f"[stoc_ialm] the stochastic phase on a sample of {sample.n_objective_samples} "
            f"rows ({share:.3g} of them), then the finish on all rows",
            flush=True,
        )
    first = stoc_ialm(sample, random_state=rng, **args)
    finished = first.finish_history
    beta0 = args["beta0"]
    if finished is not None and len(finished["beta"]):
        beta0 = float(finished["beta"][-1])
    then = stoc_ialm(
        problem, random_state=rng, **dict(
            args, x0=first.x, y0=first.multipliers, slack0=first.slack, search=False,
            beta0=beta0, max_passes=max(args["max_passes"] - share * first.n_data_passes, 0.0),
        ),
    )  # fmt: skip
    # Passes are over all rows; oracle calls, draws and iterations are counted as they are.
    scaled = ("data_passes", "check_passes", "paper_passes")
    totals = first.count_totals()
    history = {}
    for key, value in first.history.items():
        value = np.asarray(value, dtype=float)
        later = np.asarray(then.history[key], dtype=float)
        if key in totals:
            factor = share if key in scaled else 1.0
            value, later = value * factor, later + factor * totals[key]
        history[key] = np.concatenate([value, later])
    then.history = history
    then.n_iter += first.n_iter
    then.n_outer_iter += first.n_outer_iter
    for name in (
        "n_data_passes", "n_setup_passes", "n_check_passes", "n_passes_without_checks",
        "n_paper_passes",
    ):  # fmt: skip
        setattr(then, name, getattr(then, name) + share * getattr(first, name))
    then.n_oracle_calls += first.n_oracle_calls
    then.n_draws = tuple(a + b for a, b in zip(then.n_draws, first.n_draws, strict=True))
    return then


def _result(parts: _Parts, run: RunSettings, state: _LoopState) -> IALMResult:
    """The :class:`IALMResult` of the last point judged on all rows."""
    verdict, counter, est = parts.test.last, parts.counter, parts.est
    p, m, h = est.p, est.m, parts.problem.h
    xk, sk = verdict.z[:p].copy(), verdict.z[p:].copy()
    c = verdict.c
    jac = jacobian_matrix(verdict.jac_t, m, p)
    ineq = np.asarray(est.ineq, dtype=bool)
    # The KKT system is the run's: its free levels (the problem's copy carries the offsets
    # they moved to, in c), and the least squares starts from the run's multipliers.
    levels, y = getattr(parts.problem, "levels", None), verdict.y_cert
    return IALMResult(
        x=xk,
        slack=sk,
        multipliers=verdict.y_cert,
        primal_residual=verdict.pres,
        dual_residual=verdict.dres,
        primal_residual_se=verdict.pres_se,
        dual_residual_se=verdict.dres_se,
        kkt_primal_residual=original_violation(c, ineq),
        kkt_dual=_KKTDual(xk, np.array(verdict.grad, dtype=float), jac, c, h, ineq, levels, y),
        objective=verdict.f0 + h.value(xk),
        constraint_values=c,
        converged=state.converged,
        n_iter=state.n_iter,
        n_outer_iter=state.k + 1,
        n_data_passes=counter.passes(),
        n_setup_passes=counter.passes(counter.setup_evaluations),
        n_check_passes=counter.passes(counter.check_evaluations),
        n_passes_without_checks=counter.passes(counter.evaluations - counter.check_evaluations),
        n_paper_passes=counter.paper_passes(),
        n_oracle_calls=counter.evaluations,
        n_draws=(counter.objective_draws, counter.constraint_draws),
        history=parts.history.as_arrays(),
        message=state.message,
        settings=run.as_dict(parts.smoothness, parts.smoothness_source),
        n_finish_passes=counter.passes(counter.finish_evaluations),
        finish_history=state.finish_history,
    )
