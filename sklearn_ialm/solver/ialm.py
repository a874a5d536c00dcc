"""Stoc-iALM (Algorithm 1 of the paper) with PStorm as the subroutine."""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .kkt import level_shift, original_residuals, slack_residuals
from .problem import check_problem
from .pstorm import AugmentedLagrangianEstimator, Counter, pstorm, pstorm_theory
from .smoothness import estimate_smoothness
from .theory import theory_parameters

#: With ``verbose``, a stop test prints a progress line when this many seconds passed since
#: the last line: an outer iteration can run for many passes (63 on 2e6 x 50, 17 s).
_PROGRESS_SECONDS = 2.0

__all__ = ["HISTORY_COUNTS", "PRESETS", "IALMResult", "stoc_ialm"]

#: The columns of ``IALMResult.history`` that count from the start of the run (data passes,
#: stop-test passes, the paper's passes, oracle calls, draws, inner iterations); the others
#: are values at each stop test.
HISTORY_COUNTS = (
    "data_passes",
    "check_passes",
    "paper_passes",
    "oracle_calls",
    "objective_draws",
    "constraint_draws",
    "inner_iter",
)

#: ``eval_every="auto"``: growth of the interval between two stop tests within an outer
#: iteration (see :func:`~sklearn_ialm.solver.pstorm.pstorm`).
_CHECK_GROWTH = 2.0
#: ... and the longest interval, as minibatch work in units of one test's cost.
_CHECK_WORK_RATIO = 1.0

#: ``check_sample="auto"``: stop tests read a random subsample of this many rows per kind
#: (objective, constraint) ...
_SUBSAMPLE_ROWS = 10_000
#: ... when a test on all rows reads at least this many rows.
_SUBSAMPLE_MIN_ROWS = 100_000
#: A subsample's verdict needs the residual's standard error times this below the tolerance
#: ...
_SUBSAMPLE_MARGIN = 1.0
#: ... and a residual near the tolerance (below twice it) grows the subsample until its
#: standard error is at most this share of the tolerance.
_SUBSAMPLE_SE_SHARE = 0.2
#: Chunks of the subsample for its batch-means standard errors.
_SUBSAMPLE_CHUNKS = 10
#: ``check_sample="auto"``: the subsample is drawn as windows of this many adjacent rows at
#: uniform starts (every row equally likely), read in order; each chunk holds whole windows.
_SUBSAMPLE_WINDOW = 64

#: Named settings. ``"default"`` is the best we measured (see the user guide and
#: ``benchmarks/results``); ``"paper"`` is the paper's Section 5 reading of Algorithms 1-2:
#: two independent batches for ``J^T c`` (Lemma 4), the momentum estimate re-initialised
#: from ``m0`` fresh samples at every outer iteration, and the step ``1/L(beta)``.
#: ``eval_every``: ``"paper"`` tests the stopping rule every 50 inner iterations (Section 5);
#: ``"default"`` (``"auto"``) doubles the interval after each failed test of an outer
#: iteration, up to the iterations whose minibatch work costs as much as one test (see
#: :func:`stoc_ialm`).
#: ``slack_projection``: the default replaces the slack block by its exact minimiser at every
#: stop test; the paper tests the iterate as it is. ``postprocess``: Algorithm 2's last
#: step (``m1`` fresh samples, one proximal step) before each stop test, off in both (the
#: paper's Section 5 tests the running iterate every 50 iterations). ``paper_constants``:
#: take ``L0, LJ``, ``sigma`` and ``batch_size`` from ``problem.paper_settings`` (Section 5's
#: values for the paper's two models) when the caller does not pass them. Each departure is
#: listed with its measured figure in the user guide, "The paper's reading".
#: ``check_sample``: the default evaluates a stop test on large data on a random subsample
#: of rows and confirms on all rows before it declares convergence; the paper's tests read
#: every row.
_COMMON = dict(
    step_scale=1.0, penalty_scale=1.0, growth_patience=10, noise_ratio=0.5, max_batch_size=None
)
_PAPER_READING = dict(
    _COMMON, estimator="independent", momentum="restart", slack_step="shared", m0=None,
    batch_growth=1.0, eval_every=50, slack_projection=False, postprocess=None,
    paper_constants=True, check_sample=False,
)  # fmt: skip
PRESETS: dict[str, dict] = {
    "default": dict(
        _COMMON, estimator="ustat", momentum="warm", slack_step="exact", delta=0.02, m0=300,
        batch_growth=2.0, eval_every="auto", slack_projection=True, postprocess=None,
        paper_constants=False, check_sample="auto",
    ),
    "paper": dict(_PAPER_READING, delta=0.01),
    # The proof's parameters (Lemma 3, Theorem 3): see sklearn_ialm.solver.theory.
    "theory": dict(_PAPER_READING, delta=0.5),
}  # fmt: skip


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
        ``kkt_multipliers`` (the paper's eq. (opt-dual), how IPC is judged).
    objective : float
        ``g(x) + h(x)`` on the evaluation batch.
    constraint_values : ndarray of shape (n_constraints,)
        ``c(x)`` on the evaluation batch.
    converged : bool
        Both residuals ``<= tol``.
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
        ``n_data_passes - n_check_passes``: set-up plus minibatches, every per-sample
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
    'converged: primal and dual residuals <= tol'
    >>> np.round(result.x, 2), np.round(result.multipliers, 2)
    (array([0.5 , 0.51]), array([0.49]))
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
    kkt_dual_residual: float
    kkt_multipliers: np.ndarray
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


def _check_positive(name, value, *, integer=False, strict=True, upper=None):
    ok = np.isfinite(value) and (value > 0 if strict else value >= 0)
    if integer:
        ok = ok and float(value).is_integer()
    if upper is not None:
        ok = ok and value < upper
    if not ok:
        what = "an integer" if integer else "a number"
        bound = "> 0" if strict else ">= 0"
        extra = f" and < {upper}" if upper is not None else ""
        raise ValueError(f"{name} must be {what} {bound}{extra}, got {value!r}.")


def _vector(name, value, size, what):
    """``value`` as a float vector of length ``size``, or an error naming ``name``."""
    arr = np.array(value, dtype=float)
    if arr.size != size:
        raise ValueError(f"{name} must have {size} entries ({what}), got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got non-finite entries.")
    return arr.reshape(size)


def _check_oracle_values(f0, grad, c, p, m):
    """Raise at once on a wrong shape or a non-finite value from the full evaluation: a NaN
    would otherwise travel through every later iterate and end in a meaningless result."""
    grad, c = np.asarray(grad), np.asarray(c)
    if grad.shape != (p,):
        raise ValueError(
            f"the problem's objective gradient has shape {grad.shape}, expected ({p},) "
            "(problem.n_params)."
        )
    if c.shape != (m,):
        raise ValueError(
            f"the problem's constraint values have shape {c.shape}, expected ({m},) "
            "(problem.n_constraints)."
        )
    for what, val in (("objective value", f0), ("objective gradient", grad), ("constraints", c)):
        if not np.all(np.isfinite(val)):
            raise FloatingPointError(
                f"the problem's {what} is not finite (NaN or inf) at the current point: "
                "check the oracles and the data (e.g. overflow in the features)."
            )


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
    m0: int | None = None,
    delta: float | None = None,
    step_scale: float | None = None,
    penalty_scale: float | None = None,
    estimator: str | None = None,
    momentum: str | None = None,
    slack_step: str | None = None,
    batch_growth: float | None = None,
    growth_patience: int | None = None,
    noise_ratio: float | None = None,
    max_batch_size: int | None = None,
    eval_every: int | str | None = None,
    slack_projection: bool | None = None,
    postprocess: int | None = None,
    paper_constants: bool | None = None,
    check_sample: int | str | bool | None = None,
    max_passes: float = 100.0,
    max_oracle_calls: int | None = None,
    max_outer_iter: int = 60,
    multiplier_samples: int | None = None,
    theory_constants: dict | None = None,
    y0=None,
    slack0=None,
    random_state=None,
    verbose: int = 0,
) -> IALMResult:
    """Solve ``min g(x) + h(x)`` subject to ``c_E(x) = 0, c_I(x) <= 0``: Stoc-iALM + PStorm.

    Algorithm 1 of the paper: for ``k = 0, 1, ...`` with ``beta_k = beta0 * sigma**k``,
    PStorm approximately minimises the augmented Lagrangian
    ``L(x, s, y) = f0(x) + y.k + beta_k/2 ||k||^2`` with ``k = c(x) + E s`` (inequalities get
    nonnegative slacks ``s``), then ``y += min(beta_k, gamma/||k||) k``. An outer iteration ends
    when the dual residual (the stationarity of ``L``) evaluated on the evaluation batch is
    ``<= tol``; the run stops when the primal residual ``||k||`` is ``<= tol`` as well. The
    residuals are evaluated every ``eval_every`` inner iterations (the paper's 50) or, by
    default, at intervals that double within an outer iteration (see ``eval_every``), so
    that large data sets are not tested every few minibatches. Every row touched is
    counted: set-up, minibatches and stop tests (see :class:`IALMResult`).

    Parameters
    ----------
    problem : Problem
        A :class:`~sklearn_ialm.solver.FiniteSumProblem`, :class:`SampledProblem` or any
        object with the same protocol.
    x0 : array-like of shape (n_params,), optional
        Starting point (zeros by default, as in the paper).
    tol : float, default=1e-2
        The ``eps`` of the eps-KKT stopping rule.
    dual_tol : float, optional
        The threshold of the dual residual alone (``None``: ``tol``). A caller that knows the
        scale of the problem's gradient sets it relative to that scale (the estimators use
        ``tol`` times the dual residual at ``x = 0``), so that the test cannot pass where
        the gradient is merely small in absolute terms.
    preset : {"default", "paper", "theory"}, default="default"
        Named settings (see :data:`PRESETS`); an explicit argument overrides the preset.
        ``"paper"`` runs Section 5 of the paper as written: with a problem built by
        :func:`~sklearn_ialm.problems.fairness_problem` or
        :func:`~sklearn_ialm.problems.neyman_pearson_problem` it also takes the paper's
        smoothness constants, ``sigma`` and ``batch_size`` from ``problem.paper_settings``.
    beta0 : float, default=1.0
    sigma : float, optional
        Penalty schedule ``beta_k = beta0 * sigma**k``. ``None``: 2.5, or the paper's value
        of the problem (``problem.paper_settings``) with ``preset="paper"``.
    gamma : float, default=1.0
        Cap of the multiplier step, ``min(beta_k, gamma / ||k||)``.
    batch_size : int, optional
        Minibatch size ``b`` for the objective and for the constraints (``b >= 2``).
        ``None``: 30, or the paper's value of the problem with ``preset="paper"``. For a
        finite sum, at most the larger of its two row counts: a larger value is clipped to
        it with a warning (more draws than rows cost more than a data pass per iteration).
    m0 : int, optional
        Size of the batch that initialises the momentum estimate (``None``: ``batch_size``).
    delta : float in (0, 1)
        STORM momentum parameter.
    step_scale, penalty_scale : float
        The step is ``step_scale / (L0 + penalty_scale * LJ * beta_k)`` with
        ``problem.smoothness = (L0, LJ)`` (estimated if the problem has none).
    estimator : {"ustat", "independent"}
        Unbiased estimator of the penalty gradient ``beta J^T k`` (see
        :mod:`sklearn_ialm.solver.pstorm`).
    momentum : {"warm", "restart"}
        At a new outer iteration, ``"restart"`` re-initialises the momentum estimate from
        ``m0`` fresh samples (Algorithm 2); ``"warm"`` keeps it and adds an unbiased
        correction for the change of ``(y, beta)`` computed on ``batch_size`` fresh
        constraint samples at the same point.
    slack_step : {"exact", "shared"}
        Step on the slack block: ``"exact"`` takes ``min(eta, 1/beta_k)`` (``1/beta_k`` is the
        exact minimiser of the slack's quadratic), ``"shared"`` the step ``eta`` of ``x``.
    batch_growth : float >= 1
        Adaptive minibatch: at an evaluation of the stopping rule that fails, the exact
        gradient it computed measures the error of the momentum estimate; when the dual
        residual has not improved by 10 % for ``growth_patience`` evaluations and that
        error is above
        ``noise_ratio`` times the residual (a noise floor rather than slow progress), the
        minibatch grows by this factor (up to
        ``max_batch_size``, by default the number of rows). ``1`` keeps it fixed.
    growth_patience : int
    noise_ratio : float
    max_batch_size : int, optional
    eval_every : int or "auto"
        Inner iterations between two evaluations of the stopping rule (``"paper"``: 50).
        ``"auto"`` (``"default"``): the first test of an outer iteration after 50 inner
        iterations, then each interval twice the previous one, but no longer than 50
        iterations or the iterations whose minibatch evaluations cost as much as one test
        (``problem.full_evaluation_cost()``, or ``n_samples``; for a sampled problem
        ``problem.evaluation_size`` per kind; ``problem.check_work()`` when the problem
        prices its tests on all rows itself), whichever is more.
    slack_projection : bool
        At each stop test, replace the slack block by its exact minimiser given ``x``
        (``max(-(c + y/beta), 0)``) and the momentum estimate's slack block by its exact
        gradient (``"default"``: True; ``"paper"``: False, the iterate is tested as it is).
    postprocess : int, optional
        ``m1``: before each stop test, Algorithm 2's postprocessing step, one proximal step
        from the current iterate with a gradient estimate on ``m1`` fresh samples; the
        tested point is the run's point from then on. ``None`` (both presets): off. Algorithm
        2 applies it to a random iterate at the end of a fixed number of iterations (see
        ``preset="theory"``); here it is applied to the iterate being tested.
    paper_constants : bool
        Take the smoothness constants, ``sigma`` and ``batch_size`` from
        ``problem.paper_settings`` (the paper's Section 5 values, carried by the paper's two
        models) where ``sigma`` and ``batch_size`` are not passed (``"paper"``: True;
        ``"default"``: False, the problem's own smoothness bound, 2.5 and 30).
    check_sample : "auto", int or False
        Stop tests on a subsample of rows (finite sums only). ``"auto"`` (``"default"``):
        when a test on all rows reads at least 100000 rows, each test first reads a fresh
        random subsample of 10240 objective and 10240 constraint rows (drawn from the run's
        generator, with replacement, as windows of 64 adjacent rows at uniform starts: every
        row equally likely, read nearly in order; random single rows cost several times a
        row of a sequential pass), an int ``r``: of ``r`` single rows of each kind, whenever
        a test on all rows reads more than ``4 r`` rows. The residuals on the subsample come
        with batch-means standard errors over 10 chunks of it, and the squared noise of the
        residual vectors (their trace of covariance, from the same chunks) is taken off
        their squared norms, which noise alone would inflate. A test whose dual residual is
        not below ``dual_tol`` by twice its standard error says "not yet" on the subsample;
        one that passes and whose primal residual is above ``tol`` by twice its standard
        error ends the outer iteration (the multiplier step uses the subsample's constraint
        values, like ``multiplier_samples``); any other passing test is repeated on all rows,
        whose verdict stands: convergence is only declared by a test on all rows. The slack
        projection and the free levels' step use the constraint values of the test: on a
        subsample they are the minimisers of the augmented Lagrangian with ``c`` estimated
        on it (within a standard error of ``c`` of the exact ones, the start of the next
        iterations), on the confirmation they are exact. When the residuals come within
        twice the tolerance, the subsample grows until their standard errors are at most a
        quarter of it, and the tests read all rows once it would be more than a quarter of
        them. The rows read are counted as stop tests (``n_check_passes``). ``False``
        (``"paper"``): every test on all rows.
    max_passes : float, default=100
        Budget in data passes (finite sums), set-up and stop tests included. Minibatch work
        (an iteration, a momentum estimate) is done only if it fits in what is left, so the
        count ends past the budget by at most the set-up and the last stop test.
    max_oracle_calls : int, optional
        Budget in per-sample oracle calls (sampled problems; default ``10**7``).
    max_outer_iter : int, default=60
    multiplier_samples : int, optional
        ``M_k``: fresh constraint samples for ``c(x_{k+1})`` in the multiplier step. By default
        the value on the evaluation batch is used (all rows of a finite sum, as in the paper).
    theory_constants : dict, optional
        With ``preset="theory"``: ``sigma_g``, ``sigma_c`` (variance bounds) and ``gap`` (a
        bound of the subproblems' initial gaps), from which :func:`theory_parameters` sets
        every PStorm call; ``M_k`` defaults to ``ceil(tol**-2)``.
    y0, slack0 : array-like, optional
        Initial multipliers and slacks (warm starts).
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
    check_problem(problem)
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}.")
    if theory_constants is not None and preset != "theory":
        raise ValueError(
            f"theory_constants is read with preset='theory' only, got preset={preset!r} and "
            f"theory_constants={theory_constants!r}."
        )
    if preset == "theory" and not (
        isinstance(theory_constants, dict)
        and set(theory_constants) == {"sigma_g", "sigma_c", "gap"}
    ):
        raise ValueError(
            "preset='theory' needs theory_constants=dict(sigma_g=..., sigma_c=..., gap=...), "
            f"got {theory_constants!r}."
        )
    settings = dict(PRESETS[preset])
    for name, value in dict(
        delta=delta,
        step_scale=step_scale,
        penalty_scale=penalty_scale,
        estimator=estimator,
        momentum=momentum,
        slack_step=slack_step,
        m0=m0,
        batch_growth=batch_growth,
        growth_patience=growth_patience,
        noise_ratio=noise_ratio,
        max_batch_size=max_batch_size,
        eval_every=eval_every,
        slack_projection=slack_projection,
        postprocess=postprocess,
        paper_constants=paper_constants,
        check_sample=check_sample,
    ).items():
        if value is not None:
            settings[name] = value
    if preset == "theory" and settings["estimator"] == "ustat":
        raise ValueError(
            "estimator='ustat' needs minibatches of at least 2 draws, and preset='theory' "
            "draws batches of 1: use estimator='independent' (the preset's) with it."
        )
    if settings["postprocess"] is not None:
        _check_positive("postprocess", settings["postprocess"], integer=True)
    check_sample = settings["check_sample"]
    if not (check_sample is False or check_sample == "auto"):
        if isinstance(check_sample, bool | str) or not float(check_sample).is_integer():
            raise ValueError(
                f"check_sample must be 'auto', an integer >= 2 or False, got {check_sample!r}."
            )
        _check_positive("check_sample", check_sample, integer=True)
    # Section 5's per-problem values (the paper's two models carry them), unless passed.
    paper = getattr(problem, "paper_settings", None) or {}
    from_paper = dict(paper) if settings["paper_constants"] else {}
    if sigma is None:
        sigma = from_paper.get("sigma", 2.5)
    if batch_size is None:
        batch_size = from_paper.get("batch_size", 30)
    if settings["slack_step"] not in ("exact", "shared"):
        raise ValueError(
            f"slack_step must be 'exact' or 'shared', got {settings['slack_step']!r}."
        )
    if settings["momentum"] not in ("warm", "restart"):
        raise ValueError(f"momentum must be 'warm' or 'restart', got {settings['momentum']!r}.")
    _check_positive("tol", tol)
    dual_tol = tol if dual_tol is None else dual_tol
    _check_positive("dual_tol", dual_tol)
    _check_positive("max_outer_iter", max_outer_iter, integer=True)
    _check_positive("beta0", beta0)
    if not (np.isfinite(sigma) and sigma > 1):
        raise ValueError(f"sigma must be a number > 1, got {sigma!r}.")
    _check_positive("gamma", gamma)
    if not (float(batch_size).is_integer() and batch_size >= 2):
        raise ValueError(f"batch_size must be an integer >= 2, got {batch_size!r}.")
    _check_positive("delta", settings["delta"], upper=1)
    _check_positive("step_scale", settings["step_scale"])
    _check_positive("penalty_scale", settings["penalty_scale"], strict=False)
    eval_every = settings["eval_every"]
    if isinstance(eval_every, str):
        if eval_every != "auto":
            raise ValueError(f"eval_every must be 'auto' or an integer > 0, got {eval_every!r}.")
    else:
        _check_positive("eval_every", eval_every, integer=True)
    if not (np.isfinite(settings["batch_growth"]) and settings["batch_growth"] >= 1):
        raise ValueError(f"batch_growth must be a number >= 1, got {settings['batch_growth']!r}.")
    _check_positive("noise_ratio", settings["noise_ratio"])
    _check_positive("growth_patience", settings["growth_patience"], integer=True)
    _check_positive("max_passes", max_passes)
    if problem.finite:
        for kind, n_rows in (
            ("objective", problem.n_objective_samples),
            ("constraint", problem.n_constraint_samples if problem.n_constraints else 1),
        ):
            if n_rows < 1:
                raise ValueError(f"problem has no {kind} samples (n_{kind}_samples={n_rows}).")
    batch_size = clip_batch_size(batch_size, problem)
    m0 = batch_size if settings["m0"] is None else int(settings["m0"])
    _check_positive("m0", m0, integer=True)
    if problem.finite:
        # More initial draws than rows add cost, not accuracy, on small data.
        rows = problem.n_objective_samples
        if problem.n_constraints:
            rows = min(rows, problem.n_constraint_samples)
        m0 = min(m0, max(batch_size, rows))
    settings["m0"] = m0

    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise ValueError(
            "random_state must be None, an int >= 0, a numpy Generator, BitGenerator or "
            f"SeedSequence, got {random_state!r}."
        ) from None
    levels = getattr(problem, "levels", None)
    if levels is not None:
        # The free levels move the constraint offsets: on a copy of the problem, so that the
        # caller's problem (shared by seeds and later solves) keeps its own.
        problem = copy.copy(problem)
        problem.offset = np.array(problem.offset, dtype=float)
    est = AugmentedLagrangianEstimator(problem, settings["estimator"])
    p, m, ineq = est.p, est.m, est.ineq
    h = problem.h

    x = np.zeros(p) if x0 is None else _vector("x0", x0, p, "problem.n_params")
    s = (
        np.zeros(est.n_slack)
        if slack0 is None
        else _vector("slack0", slack0, est.n_slack, "the number of inequalities")
    )
    s = np.maximum(s, 0.0)
    y = np.zeros(m) if y0 is None else _vector("y0", y0, m, "problem.n_constraints")
    z = np.concatenate([h.prox(x, 1.0) if x0 is not None else x, s])

    if problem.finite:
        n_samples = problem.n_samples
        budget = max_passes * n_samples
    else:
        n_samples = None
        budget = 10**7 if max_oracle_calls is None else int(max_oracle_calls)

    counter = Counter()
    if "smoothness" in from_paper:
        # The paper's constants. The problem's own set-up was spent all the same: the strict
        # count keeps it, the paper's count (which has no set-up for them) leaves it out.
        L0, LJ = (float(v) for v in from_paper["smoothness"])
        source = "paper"
        counter.setup_evaluations += int(getattr(problem, "setup_evaluations", 0))
    elif problem.smoothness:
        source = "problem"
        L0, LJ = problem.smoothness
        # The problem's own set-up (e.g. a spectral bound from one pass over its rows).
        counter.setup_evaluations += int(getattr(problem, "setup_evaluations", 0))
    else:
        source = "estimated"
        L0, LJ = estimate_smoothness(problem, x, rng, counter=counter)
    if problem.finite:
        cost_of = getattr(problem, "full_evaluation_cost", None)
        check_cost = int(cost_of()) if cost_of is not None else n_samples
    else:
        size = getattr(problem, "evaluation_size", None)
        check_cost = None if size is None else int(size) * (1 + bool(problem.n_constraints))
    # Rows per kind of a subsample stop test (None: all rows).
    # ``start``: None when every test reads all rows; ``ref``: the last test on all rows, the
    # control variate of the subsample's estimates.
    sub = {"rows": None, "start": None, "ref": None, "window": 1}
    # A problem may say that a subsample test would read as much as a test on all rows (rows
    # held by a Dask cluster: random rows fall in every partition, so either test reads them
    # all): its tests then read all rows.
    if problem.finite and check_sample is not False and getattr(problem, "subsample_checks", True):
        rows0 = _SUBSAMPLE_ROWS if check_sample == "auto" else int(check_sample)
        least = _SUBSAMPLE_MIN_ROWS if check_sample == "auto" else 4 * rows0 + 1
        if check_cost >= least:
            # Random rows cost several times a row of a sequential pass (memory latency):
            # the default's windows are read nearly in order. A subsample size the caller
            # sets is drawn row by row.
            sub["window"] = _SUBSAMPLE_WINDOW if check_sample == "auto" else 1
            sub["rows"] = sub["start"] = _round_up(rows0, _SUBSAMPLE_CHUNKS * sub["window"])
    kinds = 1 + bool(m)

    def test_cost():
        return check_cost if sub["rows"] is None else kinds * sub["rows"]

    check_every, check_work, check_growth = eval_every, None, 1.0
    if eval_every == "auto":
        check_every, check_growth = 50, _CHECK_GROWTH
        if check_cost is not None:
            # The cost of the test in use: a subsample's grows with it.
            check_work = lambda: _CHECK_WORK_RATIO * test_cost()  # noqa: E731
            own_work = getattr(problem, "check_work", None)
            if own_work is not None and sub["start"] is None:
                # A problem may price a test on all rows in minibatch work itself, when the
                # rows a test reads are not what it costs (rows on a Dask cluster).
                check_work = lambda: _CHECK_WORK_RATIO * own_work()  # noqa: E731
    hist = {
        k: []
        for k in HISTORY_COUNTS
        + (
            "outer_iter",
            "beta",
            "primal_residual",
            "dual_residual",
            "primal_residual_se",
            "dual_residual_se",
            "objective",
            "constraint",
            "batch_size",
            "check_rows",
        )
    }
    state = {}
    n_iter = 0

    def passes(evaluations=None):
        if evaluations is None:
            evaluations = counter.evaluations
        return evaluations / n_samples if n_samples else np.nan

    count_scale = float(paper.get("count_scale", 1.0))

    def paper_passes():
        """The paper's count: each drawn sample once, set by set, the second independent
        constraint batch and the stop tests left out, the set-up in (see IALMResult)."""
        if not n_samples:
            return np.nan
        used = counter.objective_draws / problem.n_objective_samples
        if m:
            used += (
                counter.constraint_draws - counter.second_batch_draws
            ) / problem.n_constraint_samples
        setup = 0.0 if source == "paper" else passes(counter.setup_evaluations)
        return setup + count_scale * used

    clock = {"last": time.monotonic()}  # of the last verbose line

    def cost():
        return f"passes={passes():.3f}" if n_samples else f"oracle calls={counter.evaluations}"

    def evaluate(z, y, beta, k, inner, full=False):
        """Residuals at z for the AL at (y, beta) on the evaluation batch, into the history:
        on a subsample of rows unless ``full`` or the tests read all rows (``sub``)."""
        xk, sk = z[:p], z[p:]
        batches = None
        rows = None if full else sub["rows"]
        chunks = None
        if rows is not None:
            # A fresh subsample per test, read once, chunk by chunk: the chunks' estimates
            # give the standard errors, their mean the subsample's.
            # (Uniform rows: a test's plain means read them, stratified draws or not.)
            bo = _windows(rng, problem.n_objective_samples, rows, sub["window"])
            bc = _windows(rng, problem.n_constraint_samples, rows, sub["window"]) if m else None
            # Each row at the test's point, and at the reference point (control variate).
            charged = kinds * rows * (1 + (sub["ref"] is not None))
            counter.check_evaluations += charged
            chunks = [
                _chunk_evaluation(
                    problem,
                    xk,
                    _subsample_chunk(problem, bo, bc, i),
                    sub["ref"],
                )
                for i in range(_SUBSAMPLE_CHUNKS)
            ]
            f0, grad, c, jac_t = _mean_evaluation(chunks)
        elif not problem.finite:
            # No full data to check against: the evaluation batch is a fresh sample, and its
            # draws are oracle calls like any other.
            batches = (
                problem.evaluation_batch(rng, "objective"),
                problem.evaluation_batch(rng, "constraint") if m else None,
            )
            for kind, b in zip(("objective", "constraint"), batches, strict=True):
                if b is not None:
                    nb = problem.batch_size(b, kind)
                    counter.add(kind, draws=nb)
                    counter.check_evaluations += nb
        else:
            counter.check_evaluations += check_cost
        if chunks is None:
            f0, grad, c, jac_t = problem.full_evaluation(xk, rng, batches)
            if sub["start"] is not None:
                # The new reference of the subsample tests, which start small again.
                jac = np.column_stack([jac_t(e) for e in np.eye(m)]) if m else np.zeros((p, 0))
                offset = np.array(getattr(problem, "offset", 0.0), dtype=float)
                sub.update(ref=(xk.copy(), f0, grad, c, jac, offset), rows=sub["start"])
        _check_oracle_values(f0, grad, c, p, m)
        shift = 0.0
        if levels is not None:
            # The levels minimise the AL given x exactly (as the slacks below): the
            # constraints move by ``shift``, and the momentum estimate with them (check).
            # On a subsample, given its estimate of c; the confirmation makes them exact.
            shift = level_shift(levels, c, y, beta)
            c = c + shift
            problem.offset += shift
            state["level_moved"] = state.get("level_moved", 0.0) + shift
        if settings["slack_projection"]:
            # Postprocessing of the slack block with its exact gradient: s minimises the AL
            # given x in closed form. The iterate's own slack tracks the minibatch estimates
            # of c, which would leave an inactive constraint with multiplier beta * noise.
            sk = np.maximum(-(c[ineq] + y[ineq] / beta), 0.0)
        z = np.concatenate([xk, sk])
        kk = c.copy()
        kk[ineq] += sk
        y_cert = y + beta * kk
        pres, dres, grad_phi = slack_residuals(xk, sk, y_cert, grad, c, jac_t, h, ineq)
        pres_se = dres_se = 0.0 if problem.finite else np.nan
        if batches is not None:
            pres_se, dres_se = _standard_errors(problem, xk, sk, y_cert, batches, h, ineq)
        if chunks is not None:
            pres, dres, pres_se, dres_se = _subsample_residuals(
                chunks, shift, xk, sk, y_cert, c, grad, jac_t, h, ineq
            )
            _grow_subsample(sub, pres, dres, pres_se, dres_se, tol, dual_tol, check_cost, kinds)
        state.update(z=z, c=c, k=kk, y_cert=y_cert, pres=pres, dres=dres, f0=f0, grad=grad)
        state.update(pres_se=pres_se, dres_se=dres_se, exact=rows is None, al=(y, beta, k, inner))
        state["grad_phi"] = grad_phi
        state["jac_t"] = jac_t
        for key, val in (
            ("data_passes", passes()),
            ("check_passes", passes(counter.check_evaluations)),
            ("paper_passes", paper_passes()),
            ("oracle_calls", counter.evaluations),
            ("objective_draws", counter.objective_draws),
            ("constraint_draws", counter.constraint_draws),
            ("inner_iter", inner),
            ("outer_iter", k),
            ("beta", beta),
            ("primal_residual", pres),
            ("dual_residual", dres),
            ("primal_residual_se", pres_se),
            ("dual_residual_se", dres_se),
            ("objective", f0 + h.value(xk)),
            ("constraint", float(np.max(c)) if m else np.nan),
            ("batch_size", state.get("batch_size", batch_size)),
            ("check_rows", charged if rows is not None else check_cost or np.nan),
        ):
            hist[key].append(val)
        if verbose and time.monotonic() - clock["last"] >= _PROGRESS_SECONDS:
            print(
                f"[stoc_ialm]   k={k:2d} inner={inner} stop test: pres={pres:.2e} "
                f"dres={dres:.2e} {cost()} (outer iteration {k} goes on)"
            )
            clock["last"] = time.monotonic()
        return pres, dres

    def init_momentum(z, y, beta):
        batches = est.draw(rng, m0, counter)
        d = est.gradient(z, y, beta, batches, counter)
        if d.shape != z.shape:
            raise ValueError(
                f"the problem's gradient has shape {d.shape[:1]}, expected ({p},) "
                "(problem.n_params): check the objective / constraint oracles."
            )
        if not np.all(np.isfinite(d)):
            raise FloatingPointError(
                "the problem's minibatch gradient at the starting point is not finite "
                "(NaN or inf): check the oracles and the data."
            )
        return d

    beta = float(beta0)
    batch = batch_size

    def fits(evaluations):
        """Whether minibatch work of this many evaluations fits in what is left of the budget."""
        return counter.evaluations + evaluations <= budget

    max_batch = max(batch_size, settings["max_batch_size"] or 10**9)
    if problem.finite and settings["max_batch_size"] is None:
        max_batch = max(batch_size, problem.n_objective_samples, problem.n_constraint_samples)
    d = None
    if preset != "theory" and fits(est.draw_evaluations(m0)):
        d = init_momentum(z, y, beta)
    converged = False
    k = 0
    message = "maximum number of outer iterations reached"
    for k in range(max_outer_iter):  # noqa: B007 - k is read after the loop
        beta = beta0 * sigma**k
        eta = settings["step_scale"] / (L0 + settings["penalty_scale"] * LJ * beta)
        # The slack block of the AL is a quadratic with curvature beta: 1/beta is its exact
        # step. The paper's reading takes the one step for all of z.
        eta_slack = eta if settings["slack_step"] == "shared" else min(eta, 1.0 / beta)

        stall = {"best": np.inf, "since": 0}

        def check(
            zc, dc, t, b, y=y, beta=beta, k=k, base=n_iter, stall=stall, eta=eta, eta_s=eta_slack
        ):
            state["batch_size"] = b
            if settings["postprocess"] is not None:
                # Algorithm 2's last step: a proximal step on a fresh m1-sample estimate.
                batches = est.draw(rng, settings["postprocess"], counter)
                zc = est.step(zc, est.gradient(zc, y, beta, batches, counter), eta, eta_s, h)
            pres, dres = evaluate(zc, y, beta, k, base + t)
            passed = dres <= dual_tol
            if not state["exact"]:
                # A subsample says "not yet" unless the dual residual is below dual_tol by a
                # margin; a pass is repeated on all rows unless the primal residual is clearly
                # above tol (then the outer iteration ends on the subsample's values).
                margin = _SUBSAMPLE_MARGIN
                passed = dres + margin * state["dres_se"] <= dual_tol
                if passed and pres - margin * state["pres_se"] <= tol:
                    dres = evaluate(state["z"], y, beta, k, base + t, full=True)[1]
                    passed = dres <= dual_tol
            zc = state["z"]
            moved = state.pop("level_moved", None)
            if moved is not None and np.any(moved):
                # A level step is a change of multipliers y -> y + beta * shift as far as the
                # gradient in x is concerned: the momentum estimate follows it unbiasedly.
                bc = problem.sample(rng, b, "constraint")
                counter.constraint_draws += len(bc)
                dc = dc + est.multiplier_change(zc, y, beta, y + beta * moved, beta, bc, counter)
            if settings["slack_projection"]:
                dc = dc.copy()
                dc[p:] = state["grad_phi"][p:]  # the slack block's gradient is known exactly
            if passed:
                return True, b, zc, dc
            if dres < 0.9 * stall["best"]:
                stall.update(best=dres, since=0)
                return False, b, zc, dc
            stall["since"] += 1
            # Stalled for growth_patience checks: the exact gradient of the stop test measures the
            # momentum estimator's error. When that error is a sizeable share of the residual,
            # it is a noise floor that more iterations at this batch size cannot go under.
            error = float(np.linalg.norm(dc - state["grad_phi"]))
            if stall["since"] >= settings["growth_patience"] and (
                error > settings["noise_ratio"] * dres
            ):
                b = min(int(np.ceil(settings["batch_growth"] * b)), max_batch)
                stall["since"] = 0
            return False, b, zc, dc

        if preset == "theory":
            prm = theory_parameters(
                L0, LJ, **theory_constants, y_norm=float(np.linalg.norm(y)), beta=beta, eps=tol
            )
            z, t = pstorm_theory(
                est,
                z,
                y,
                beta,
                **{k_: prm[k_] for k_ in ("T", "step", "delta", "m0", "m1")},
                rng=rng,
                counter=counter,
            )
            # The proof has no inner exit test: judge the output, then go on to the next k.
            evaluate(z, y, beta, k, n_iter + t)
            z = state["z"]
            stopped = counter.evaluations < budget
        elif d is None:
            # Not even the first momentum estimate fits in the budget: the start is judged.
            t, stopped = 0, False
        else:
            z, d, t, stopped, batch = pstorm(
                est,
                z,
                d,
                y,
                beta,
                eta=eta,
                eta_slack=eta_slack,
                delta=settings["delta"],
                batch_size=batch,
                rng=rng,
                counter=counter,
                check=check,
                eval_every=check_every,
                check_work=check_work,
                check_growth=check_growth,
                budget=budget,
            )
        n_iter += t
        if not stopped:
            # Budget spent: judge the last iterate.
            if state.get("z") is not z:
                evaluate(z, y, beta, k, n_iter)
                z = state["z"]
            message = "budget of data passes spent" if problem.finite else "oracle budget spent"
            break
        if state["exact"] and state["pres"] <= tol and state["dres"] <= dual_tol:
            converged = True
            message = "converged: primal and dual residuals <= tol"
            break
        # Multiplier step (Algorithm 1), on the evaluation batch or on M_k fresh samples.
        kk = state["k"]
        n_mult = multiplier_samples
        if n_mult is None and preset == "theory":
            n_mult = int(np.ceil(tol**-2))
        if n_mult is not None:
            bc = problem.sample(rng, int(n_mult), "constraint")
            C, _ = problem.constraints(z[:p], bc)
            counter.add("constraint", draws=C.shape[0], evaluations=C.shape[0])
            strata = problem.batch_strata(bc)
            K = est.k(C, z[p:])
            kk = K.mean(axis=0) if strata is None else strata[1] @ K
        y_old, beta_old = y, beta
        y = y + min(beta, gamma / float(np.linalg.norm(kk))) * kk
        if verbose:
            print(
                f"[stoc_ialm] k={k:2d} beta={beta:9.3g} pres={state['pres']:.2e} "
                f"dres={state['dres']:.2e} max c={np.max(state['c']):+.3e} {cost()}"
            )
            clock["last"] = time.monotonic()
        beta_next = beta0 * sigma ** (k + 1)
        warm = m and settings["momentum"] == "warm"
        if preset == "theory":
            spent = problem.finite and counter.evaluations >= budget
        else:
            # A new estimate and one iteration must fit: else work that no test reports.
            change = problem.constraint_batch_length(batch) if warm else est.draw_evaluations(m0)
            spent = not fits(change + 2 * est.draw_evaluations(batch))
        if spent:
            message = "budget of data passes spent" if problem.finite else "oracle budget spent"
            break
        if preset == "theory":
            pass  # every call starts from its own m0-sample estimate
        elif warm:
            bc = problem.sample(rng, batch, "constraint")
            counter.constraint_draws += len(bc)
            d = d + est.multiplier_change(z, y_old, beta_old, y, beta_next, bc, counter)
        else:
            d = init_momentum(z, y, beta_next)
    if not state["exact"]:
        # The returned residuals, constraint values and KKT residuals are those of all rows.
        evaluate(state["z"], *state["al"], full=True)
    if verbose:
        print(
            f"[stoc_ialm] k={k:2d} beta={beta:9.3g} pres={state['pres']:.2e} "
            f"dres={state['dres']:.2e} {cost()} -- {message}"
        )

    z = state["z"]
    xk, sk = z[:p].copy(), z[p:].copy()
    c = state["c"]
    jac = np.vstack([state["jac_t"](e) for e in np.eye(m)]) if m else np.zeros((0, p))
    kpres, kdres, kz = original_residuals(xk, state["grad"], jac, c, h, ineq)
    history = {key: np.asarray(val) for key, val in hist.items()}
    return IALMResult(
        x=xk,
        slack=sk,
        multipliers=state["y_cert"],
        primal_residual=state["pres"],
        dual_residual=state["dres"],
        primal_residual_se=state["pres_se"],
        dual_residual_se=state["dres_se"],
        kkt_primal_residual=kpres,
        kkt_dual_residual=kdres,
        kkt_multipliers=kz,
        objective=state["f0"] + h.value(xk),
        constraint_values=c,
        converged=converged,
        n_iter=n_iter,
        n_outer_iter=k + 1,
        n_data_passes=passes(),
        n_setup_passes=passes(counter.setup_evaluations),
        n_check_passes=passes(counter.check_evaluations),
        n_passes_without_checks=passes(counter.evaluations - counter.check_evaluations),
        n_paper_passes=paper_passes(),
        n_oracle_calls=counter.evaluations,
        n_draws=(counter.objective_draws, counter.constraint_draws),
        history=history,
        message=message,
        settings=dict(
            settings,
            preset=preset,
            tol=tol,
            dual_tol=dual_tol,
            beta0=beta0,
            sigma=sigma,
            gamma=gamma,
            batch_size=batch_size,
            eval_every=eval_every,
            smoothness=(L0, LJ),
            smoothness_source=source,
        ),
    )


def clip_batch_size(batch_size, problem, stacklevel=3) -> int:
    """``batch_size`` as an int, clipped to the rows of a finite-sum ``problem`` (with a
    warning that names the value used).

    Draws are with replacement, so a larger minibatch is valid, but each iteration then
    costs more than a pass over the data for an estimate hardly better than the full
    gradient, and a budget in passes buys almost no iterations.
    """
    batch_size = int(batch_size)
    if not problem.finite:
        return batch_size
    rows = problem.n_objective_samples
    if problem.n_constraints:
        rows = max(rows, problem.n_constraint_samples)
    rows = max(rows, 2)  # the U-statistic needs two draws
    if batch_size <= rows:
        return batch_size
    warnings.warn(
        f"batch_size={batch_size} is more than the {rows} rows the minibatches are drawn "
        f"from; using batch_size={rows}.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return rows


def _round_up(value, multiple):
    return int(-(-int(np.ceil(value)) // multiple) * multiple)


def _windows(rng, n, rows, width):
    """``rows`` row indices of ``n`` as an array of ``rows / width`` windows of ``width``
    adjacent rows, each at a uniform start (wrapping around): every row is equally likely to
    be read, as with rows drawn one by one, and a window is read in order."""
    starts = rng.integers(n, size=rows // width)
    return (starts[:, None] + np.arange(width)) % n


def _subsample_chunk(problem, bo, bc, i):
    """Chunk ``i`` of a stop test's subsample ``(bo, bc)`` (windows of rows, see
    :func:`_windows`: every tenth window), as the evaluation batch it is read through.

    A problem that can (``gather``) copies the chunk's rows in order: the chunk is then read
    at random once, and at its two points (see :func:`_chunk_evaluation`) in order. Read in
    place, each point's evaluation gathered the rows again: on dense 1e6 x 20 the tests took
    more time than the fit's minibatches and full passes together. One chunk's copy is held
    at a time, a tenth of a subsample of at most a quarter of the rows (see
    :func:`_grow_subsample`).
    """
    chunk = tuple(None if b is None else b[i::_SUBSAMPLE_CHUNKS].ravel() for b in (bo, bc))
    gather = getattr(problem, "gather", None)
    copy = gather(chunk) if gather is not None else None
    return chunk if copy is None else copy


def _chunk_evaluation(problem, x, batches, ref):
    """``full_evaluation`` at ``x`` on the rows ``batches``, with the last evaluation on all
    rows as a control variate when there is one (``ref``).

    With ``ref = (x0, f0, grad0, c0, jac0, offset0)``, the estimate of ``c(x)`` is
    ``c0 + mean_i (C_i(x) - C_i(x0))`` (the offsets' change since added), and so for the
    objective, its gradient and ``J^T``: still unbiased, and the per-row differences are
    small when ``x`` is near ``x0``, where the rows' own values vary by their whole range.
    Both points are evaluated on the same gathered rows.
    """
    now = problem.full_evaluation(x, None, batches)
    if ref is None:
        return now
    x0, f0, grad0, c0, jac0, offset0 = ref
    then = problem.full_evaluation(x0, None, batches)
    moved = np.array(getattr(problem, "offset", 0.0), dtype=float) - offset0
    jt_now, jt_then = now[3], then[3]

    def jac_t(v):
        return jac0 @ np.asarray(v, dtype=float) + jt_now(v) - jt_then(v)

    return (
        f0 + now[0] - then[0],
        grad0 + now[1] - then[1],
        c0 + moved + now[2] - then[2],
        jac_t,
    )


def _mean_evaluation(chunks):
    """``full_evaluation``'s ``(f0, grad, c, jac_t)`` on the union of equal-sized chunks,
    from the chunks' own evaluations."""
    f0 = float(np.mean([ch[0] for ch in chunks]))
    grad = np.mean([ch[1] for ch in chunks], axis=0)
    c = np.mean([ch[2] for ch in chunks], axis=0)

    def jac_t(v):
        return np.mean([ch[3](v) for ch in chunks], axis=0)

    return f0, grad, c, jac_t


def _subsample_residuals(chunks, shift, x, s, y_cert, c, grad, jac_t, h, ineq):
    """Residuals of a subsample stop test and their batch-means standard errors.

    The residual vectors ``k = c + E s`` and ``dist(0, grad g + dh + J^T y)`` are means over
    the subsample; noise adds its trace of covariance ``T`` to their expected squared norm,
    so ``sqrt(max(|v|^2 - T, 0))`` is returned, with ``T`` estimated from the spread of the
    chunks' vectors. The standard errors are those of :func:`_standard_errors` (the spread
    of the chunks' residuals over ``sqrt(n_chunks)``). The slack block of the dual residual
    depends on ``y_cert`` alone, exact given it.
    """
    n = len(chunks)
    yi = y_cert[ineq]
    rs = np.where(s > 0, np.abs(yi), np.maximum(-yi, 0.0))
    rs2 = float(rs @ rs)

    def vectors(ci, gi, jt):
        k = ci.copy()
        k[ineq] += s
        return k, h.dist_subdiff(x, gi + jt(y_cert) if y_cert.size else gi)

    k, rx = vectors(c, grad, jac_t)
    ks, rxs = zip(*(vectors(ch[2] + shift, ch[1], ch[3]) for ch in chunks), strict=True)
    ks, rxs = np.array(ks), np.array(rxs)

    def trace(vs):
        return float(np.sum((vs - vs.mean(axis=0)) ** 2)) / (n * (n - 1))

    pres = np.sqrt(max(float(k @ k) - trace(ks), 0.0))
    dres = np.sqrt(max(float(rx @ rx) + rs2 - trace(rxs), 0.0))
    per_chunk = np.column_stack(
        [np.linalg.norm(ks, axis=1), np.sqrt(np.sum(rxs**2, axis=1) + rs2)]
    )
    se = np.std(per_chunk, axis=0, ddof=1) / np.sqrt(n)
    return float(pres), float(dres), float(se[0]), float(se[1])


def _grow_subsample(sub, pres, dres, pres_se, dres_se, tol, dual_tol, full_cost, kinds):
    """Grow the stop tests' subsample where a residual near its tolerance has a standard
    error above ``_SUBSAMPLE_SE_SHARE`` of it (the standard error falls like one over the
    root of the rows); all rows once a subsample would read more than a quarter of them."""
    rows = sub["rows"]
    need = rows
    for value, se, limit in ((pres, pres_se, tol), (dres, dres_se, dual_tol)):
        target = _SUBSAMPLE_SE_SHARE * limit
        if value < 2 * limit and se > target:
            need = max(need, rows * (se / target) ** 2)
    if need > rows:
        rows = _round_up(need, _SUBSAMPLE_CHUNKS * sub["window"])
        sub["rows"] = None if 4 * kinds * rows > full_cost else rows


def _standard_errors(problem, x, s, y_cert, batches, h, ineq, n_chunks=10):
    """Standard errors of the residual estimates by batch means over chunks of the batch.

    Each chunk gives its own estimate of (pres, dres) at the returned multiplier
    ``y_cert``; their spread over ``n_chunks`` chunks, divided by ``sqrt(n_chunks)``,
    estimates the standard error of the full-batch estimate.
    """
    bo, bc = batches
    est = []
    for i in range(n_chunks):
        sub = (bo[i::n_chunks], None if bc is None else bc[i::n_chunks])
        _, grad, c, jac_t = problem.full_evaluation(x, None, sub)
        pres, dres, _ = slack_residuals(x, s, y_cert, grad, c, jac_t, h, ineq)
        est.append((pres, dres))
    se = np.std(np.array(est), axis=0, ddof=1) / np.sqrt(n_chunks)
    return float(se[0]), float(se[1])
