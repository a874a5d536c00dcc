"""Stoc-iALM (Algorithm 1 of the paper) with PStorm as the subroutine: the outer loop.

The steps are named pieces: the settings (:mod:`.settings`), the count of rows touched and
its budget (:mod:`.counting`), the stop test (:mod:`.stopping`, :mod:`.subsample`), the inner
solver (:mod:`.inner`, :mod:`.pstorm`) and the history (:mod:`.history`). This module holds
the loop over them (:func:`_outer_loop`) and the result.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from .counting import Counter
from .finish import alm_finish
from .history import HISTORY_COUNTS, History
from .inner import PStormSolver, TheorySolver
from .kkt import original_residuals
from .pstorm import AugmentedLagrangianEstimator
from .settings import PRESETS, RunSettings, resolve_settings
from .settings import _check_positive as _check_positive  # the IPC solver imports it here
from .settings import clip_batch_size as clip_batch_size  # the estimators import it here
from .smoothness import estimate_smoothness
from .stopping import StopTest, Verdict

#: With ``verbose``, a stop test prints a progress line when this many seconds passed since
#: the last line: an outer iteration can run for many passes (63 on 2e6 x 50, 17 s).
_PROGRESS_SECONDS = 2.0

#: The finish's first penalty at least this: at the stochastic phase's last penalty (0.3
#: to 3 with the estimators' schedules) the first solves hardly moved the constraint
#: violation. Passes of six fits (n = 3000 and 30000; three constraint kinds, a certified
#: fit, Neyman-Pearson), summed, when it was chosen: 627.6, 607.1, 574.6 and 554.1 with a
#: floor of 0, 3, 10 and 30 (10 kept: the larger, the worse the inner solves' conditioning).
_FINISH_BETA0 = 10.0
#: When the finish follows (and :func:`_sized_search_applies`), the stochastic phase is
#: PStorm on the augmented Lagrangian at the caller's multipliers and ``beta0``, without stop
#: tests (the finish's first evaluation judges its point), for this many minibatch draws, at
#: most one pass and at most ``_SEARCH_SHARE`` of ``max_passes``. Measured (solver-level A/B,
#: CPU of the search and finish against the finish alone, one thread): the draws that shorten
#: the finish most are about the same count whatever the rows: 1 pass on the anchor task
#: (30000 rows, A/B 0.75; 0.25 pass 0.89, 2 passes 0.86), 0.25-0.5 pass on dense 1e5 x 20
#: (0.83-0.89; 2 passes 1.32), 0.03-0.1 pass on dense 1e6 x 20 (0.82; 0.3 pass 0.96), 0.5
#: pass on Adult by race (53333 constraint rows, 0.96-1.01). Algorithm 1's loop with stop
#: tests on all rows that it replaces cost A/B 1.3-2.4 there (its tests alone 8-19 passes):
#: its multipliers saved the finish about 3 outer iterations of a pass or less each, and
#: took 5-10 outer iterations, each ended by a test on all rows. From ``_SAMPLE_MIN_ROWS``
#: rows on, the search and a finish run on a sample of the rows instead (see
#: ``_SAMPLE_ROWS``): at the estimator level the search on all rows did not pay there
#: (``FairLogisticClassifier``, dense 1e6 x 20, demographic parity 0.02: A/B 1.12).
_SEARCH_DRAWS = 30_000
#: Below this many rows there is no stochastic phase before the finish: on 100 groups of 20
#: rows (2000 rows, demographic parity 0.1) a pass of it cost more than it saved (A/B 1.03,
#: 18.9 passes against 18.0, ``git log -- benchmarks/results/finish_ab_stochastic.md``),
#: and within a budget of 10 passes it left the steering's re-solves short of passes.
_SEARCH_MIN_ROWS = 10_000
#: On all rows (not a sample, see ``_SAMPLE_MIN_ROWS``) there is none at any size: it cost
#: more than it saved (``FairLogisticClassifier``, CPU with it over CPU without, one thread,
#: ``git log -- benchmarks/results/finish_ab_before_samples.md``: the anchor task 0.98,
#: Adult by race 1.14-1.26 for the five kinds at 0.05, 1.06 by race and sex; dense 1e6 x 20
#: 1.12 before the sample).
#: Above this many parameters there is no stochastic phase before the finish either: its
#: step size needs power iterations on the rows (a Gram matrix of more would not fit), which
#: cost more than the phase saves. CSR 2e5 x 1e4 (30 values a row, demographic parity 0.02,
#: one thread, ``git log -- benchmarks/results/finish_ab_wide.md``): with the phase 19.7
#: and 35.2 passes (loose, binding), 3.96 and 6.70 x LogisticRegression's CPU; without it
#: 18.5 and 36.5 passes, 2.81 and 5.39 x.
_SEARCH_MAX_PARAMS = 1024
#: From this many rows (the larger set), the stochastic phase before the finish is the run
#: on a sample of ``_SAMPLE_ROWS`` rows, at most ``_SAMPLE_SHARE`` of them (the search, when
#: the sample has ``_SEARCH_MIN_ROWS`` rows, and the finish on the sample), then the finish
#: on all rows from the sample's point, multipliers and penalty: the finish then starts in
#: Newton's basin for both (the point and the multipliers of the sample are those of all
#: rows up to the sampling error), and the set-up of the search's step size reads the sample
#: only (a spectral bound: 0.3 s of a 1.0 s fit on dense 1e6 x 20, where the search itself
#: read 0.03 pass). Measured (``FairLogisticClassifier(bound=0.02)`` against the same fit
#: without the stochastic phase, CPU, one thread, 3 seeds): dense 1e6 x 20 A/B 1.12 -> 0.81
#: (7.1 -> 4.7-5.8 passes; the finish on all rows from the sample: 3-5 evaluations where it
#: took 9 from zero), samples of 10000, 30000, 60000, 100000 rows A/B 0.85, 0.81, 0.88,
#: 0.90; dense 1e5 x 20 A/B 1.10 -> 0.89 with a 10 % sample (30 %: 1.02). Below these rows
#: it did not pay: on Adult by race (32561 rows, 126 columns, demographic parity 0.05) a
#: 10 % sample's point cost the finish on all rows 20 evaluations (A/B 1.14, 23.6 passes
#: against 14.5), on the anchor task (30000 x 100) A/B 0.95-1.0 against 1.10, within the
#: timing noise of a 0.1 s fit.
_SAMPLE_MIN_ROWS = 100_000
_SAMPLE_ROWS = 30_000
_SAMPLE_SHARE = 0.1
#: The sample must hold this many rows per parameter: its optimum is then within about
#: ``sqrt(params / rows)``, a tenth, of all rows' (in the metric of the Hessian). On wide
#: data it is not: CSR 2e5 x 1e4 (30 values a row, demographic parity 0.02, loose), a
#: 20000-row sample's finish read 176 of its passes and the finish on all rows from its
#: point 61.5, where the finish from zero read 19.7 in all.
_SAMPLE_ROWS_PER_PARAM = 100
#: What Algorithm 1's stochastic phase may spend when the finish follows it (a loss other
#: than the logistic, see :func:`_sized_search_applies`): a tenth of ``max_passes``
#: or ``_SEARCH_PASSES``, whichever is more, and at most half. The Newton finish converges
#: from any start (Adult by race, every fairness kind at 0.05, and 100 groups of 20 rows:
#: 13 to 36 passes without the stochastic phase), so a phase that has not found the
#: multipliers by then only costs: with half the budget of 300, error-rate parity on Adult
#: took 163 passes (median of 3 seeds, 149 in the stochastic phase) and the 100 groups 164;
#: with 30, 42-45 and 44, every seed converged with the bound met.
_SEARCH_SHARE = 0.5
_SEARCH_PASSES = 30.0

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
        ``kkt_multipliers`` (the paper's eq. (opt-dual), how IPC is judged).
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
    n_finish_passes: float = 0.0
    finish_history: dict | None = field(default=None, repr=False)

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


def _before_finish(problem, run, rng):
    """``(search, sized, sample)``: whether the run has a stochastic phase on these rows,
    whether it is the sized search (:func:`_search`, a finish follows), and the sample of the
    rows the run starts on instead (:func:`_sample_of`), or None."""
    search = bool(problem.n_constraints) and run.knobs.search and not run.full_batch
    sized = run.finish and _sized_search_applies(problem)
    wide = problem.n_params > _SEARCH_MAX_PARAMS
    search = search and not (sized and (_search_passes(run) == 0.0 or wide))
    sample = _sample_of(problem, run, rng, search=search, sized=sized)
    if sized and getattr(problem, "sample_share", None) is None:
        # Before the finish, the stochastic phase runs on a sample of the rows only (see
        # _SAMPLE_MIN_ROWS): on all rows it cost more than it saved at every size measured.
        search = False
    return search, sized, sample


def _stochastic_phase(parts, run, y, *, search, sized) -> _LoopState:
    """The run's stochastic phase: none, the sized search, or Algorithm 1's loop."""
    if run.finish and not search:
        # No multipliers to find (none, or the caller's y0 are a finished solve's), or
        # minibatches of every row (a deterministic method, whose quasi-Newton form the
        # finish is): the deterministic finish is the whole solve.
        return _LoopState(y=y, beta=float(run.beta0), message="no search")
    if sized:
        return _search(parts, run, y)
    return _outer_loop(parts, run, y)


def _sample_of(problem, run, rng, *, search, sized):
    """The sample of the rows whose run starts the finish on all rows, or None (see
    ``_SAMPLE_MIN_ROWS``): for the multipliers of the stochastic phase (``search``), and for
    a start in Newton's basin where there are no constraints (Neyman-Pearson's weighted
    logistic fits: dense 1e6 x 20, ``max_fpr=0.05``, each from zero took 6 evaluations of
    all rows)."""
    if not run.finish:
        return None
    if hasattr(problem, "search_sample"):  # far rows (a Dask cluster): for the search only
        return problem.search_sample(rng) if search else None
    plain = not problem.n_constraints and run.knobs.search and not run.full_batch
    if not ((search or plain) and sized and run.rows >= _SAMPLE_MIN_ROWS):
        return None
    share = min(_SAMPLE_ROWS / run.rows, _SAMPLE_SHARE)
    if not hasattr(problem, "row_sample"):
        return None
    if share * problem.n_objective_samples < _SAMPLE_ROWS_PER_PARAM * problem.n_params:
        return None
    return problem.row_sample(rng, share)


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


@dataclass
class _Parts:
    """The named pieces of one run (see :func:`_set_up`)."""

    problem: object
    est: AugmentedLagrangianEstimator
    rng: np.random.Generator
    counter: Counter
    test: StopTest
    inner: PStormSolver | TheorySolver
    history: History
    progress: _Progress
    smoothness: tuple
    smoothness_source: str


@dataclass
class _LoopState:
    """Where Algorithm 1's loop stopped: the multipliers ``y``, the last penalty ``beta``
    and outer iteration ``k``, the inner iterations, and why it stopped."""

    y: np.ndarray
    beta: float
    k: int = 0
    n_iter: int = 0
    converged: bool = False
    message: str = "maximum number of outer iterations reached"
    finish_history: dict | None = None


def _outer_loop(parts: _Parts, run: RunSettings, y) -> _LoopState:
    """Algorithm 1 from the multipliers ``y``: the penalty schedule, the inner solve (which
    ends by its stop test), the multiplier step; each stop test is in the history.

    The last point tested is ``parts.test.last``, ``parts.inner.z``.
    """
    test, inner = parts.test, parts.inner
    state = _LoopState(y=y, beta=float(run.beta0))
    for k in range(run.max_outer_iter):
        state.k, state.beta = k, run.penalty(k)
        t, stopped = inner.run(state.y, state.beta, k, state.n_iter)
        state.n_iter += t
        if not stopped:
            # Budget spent: judge the last iterate.
            if test.last is None or test.last.z is not inner.z:
                inner.z = test.evaluate(inner.z, state.y, state.beta, k, state.n_iter).z
            state.message = _budget_spent(parts.problem)
            break
        if test.last.converged(run.tol, run.search_dual_tol):
            state.converged = True
            state.message = "converged: primal and dual residuals <= tol"
            break
        y_old = state.y
        state.y = _multiplier_step(parts, run, state.y, state.beta, inner.z, test.last)
        parts.progress.outer(k, state.beta, test.last)
        if not inner.carry(y_old, state.beta, state.y, run.penalty(k + 1)):
            state.message = _budget_spent(parts.problem)
            break
    return state


def _last_test(parts: _Parts, state: _LoopState) -> None:
    """Judge the last point on all rows if its test read a subsample: the returned
    residuals, constraint values and KKT residuals are those of all rows (the start's, when
    no test ran)."""
    test = parts.test
    if test.last is None:
        test.evaluate(parts.inner.z, state.y, state.beta, state.k, state.n_iter, full=True)
    elif not test.last.exact:
        test.evaluate(test.last.z, *test.last.al, full=True)
    parts.progress.end(state.k, state.beta, test.last, state.message)


def _finish(parts: _Parts, run: RunSettings, state: _LoopState, verbose) -> None:
    """The deterministic finish (:mod:`.finish`) from the last point tested and its
    multipliers, in what is left of the budget; then the test on all rows of the point it
    reached, at the multipliers of its last solve, whose verdict on the finish's
    tolerances is the run's."""
    test, counter, problem, p = parts.test, parts.counter, parts.problem, parts.est.p
    counter.budget = run.max_passes * counter.n_samples
    z, y = (parts.inner.z, state.y) if test.last is None else (test.last.z, test.last.y_cert)
    left = (counter.budget - counter.evaluations) // test.full_cost - 1
    tol, dual_tol = run.finish_tols
    fin = alm_finish(
        problem, z[:p], y, max(state.beta, _FINISH_BETA0), tol=tol, dual_tol=dual_tol,
        max_evaluations=max(int(left), 0), verbose=verbose, passes_before=counter.passes(),
        pass_share=counter.passes(test.full_cost),
    )  # fmt: skip
    counter.finish_evaluations += fin.n_evaluations * test.full_cost
    state.finish_history = dict(fin.history)
    state.finish_history["passes"] = counter.passes(fin.history["evaluations"] * test.full_cost)
    if not fin.n_evaluations:
        # No budget left for the finish: the stochastic phase's last point is the run's.
        state.message = _budget_spent(problem)
        _last_test(parts, state)
        return
    evaluation = fin.evaluation
    if np.any(fin.shift):
        problem.offset = problem.offset + fin.shift  # the free levels' (problem is a copy)
        if evaluation is not None:
            f0, grad, c, J = evaluation
            evaluation = (f0, grad, np.asarray(c, dtype=float) + fin.shift, J)
    z = np.concatenate([fin.x, z[p:]])
    # The finish's last Newton solve read all rows at its point: the verdict reads none.
    verdict = test.evaluate(
        z, fin.solve_multipliers, fin.beta, state.k, state.n_iter, full=True,
        evaluation=evaluation,
    )  # fmt: skip
    parts.inner.z = verdict.z
    state.converged = verdict.converged(tol, dual_tol)
    if state.converged:
        state.message = "converged: primal and dual residuals <= the finish's tolerances"
    elif fin.converged:
        state.message = "the finish's point is not within its tolerances on all rows"
    else:
        state.message = fin.message
    parts.progress.end(state.k, state.beta, verdict, state.message)


def _search_budget(max_passes):
    """The passes Algorithm 1's stochastic phase may spend before the finish (see
    ``_SEARCH_PASSES``)."""
    return min(_SEARCH_SHARE * max_passes, max(0.1 * max_passes, _SEARCH_PASSES))


def _sized_search_applies(problem) -> bool:
    """Whether the stochastic phase before the finish is :func:`_search` (else Algorithm 1's
    loop with its stop tests): where the objective is the logistic loss of a linear score,
    convex, whose finish converges from any multipliers. From zero multipliers the finish
    of the paper's nonconvex Neyman-Pearson model (sigmoid loss, 800 rows) diverged (a
    coefficient of 1e9): it needs the multipliers that Algorithm 1's loop finds. Read from
    the loss's ``convex`` (the solver knows no loss class: the problems layer is above it)."""
    return bool(getattr(getattr(problem, "loss", None), "convex", False))


def _search_passes(run: RunSettings) -> float:
    """The passes of :func:`_search` (see ``_SEARCH_DRAWS``); none below
    ``_SEARCH_MIN_ROWS`` rows."""
    if run.rows < _SEARCH_MIN_ROWS:
        return 0.0
    return min(_SEARCH_DRAWS / run.rows, 1.0, _SEARCH_SHARE * run.max_passes)


def _search(parts: _Parts, run: RunSettings, y) -> _LoopState:
    """The stochastic phase when the finish follows: PStorm on the augmented Lagrangian at
    ``(y, beta0)`` for :func:`_search_passes`, no stop test; the
    finish starts from its last iterate and ``y``."""
    inner, counter = parts.inner, parts.counter
    inner.every, inner.work, inner.growth = np.iinfo(np.int64).max, None, 1.0
    # Counted from here: the set-up and the first momentum estimate are spent already.
    counter.budget = min(
        counter.budget, counter.evaluations + _search_passes(run) * counter.n_samples
    )
    state = _LoopState(y=y, beta=float(run.beta0), message="search length spent")
    state.n_iter, _ = inner.run(y, state.beta, 0, 0)
    return state


def _multiplier_step(parts, run, y, beta, z, verdict: Verdict):
    """Algorithm 1's ``y + min(beta, gamma / ||k||) k``, with ``k`` on the stop test's rows
    or on ``M_k`` fresh constraint samples."""
    kk = verdict.k
    n_mult = run.multiplier_samples
    if n_mult is None and run.theory:
        n_mult = int(np.ceil(run.tol**-2))
    if n_mult is not None:
        problem, est, p = parts.problem, parts.est, parts.est.p
        bc = problem.sample(parts.rng, int(n_mult), "constraint")
        C, _ = problem.constraints(z[:p], bc)
        parts.counter.add("constraint", draws=C.shape[0], evaluations=C.shape[0])
        strata = problem.batch_strata(bc)
        K = est.k(C, z[p:])
        kk = K.mean(axis=0) if strata is None else strata[1] @ K
    return y + min(beta, run.gamma / float(np.linalg.norm(kk))) * kk


def _budget_spent(problem) -> str:
    return "budget of data passes spent" if problem.finite else "oracle budget spent"


def _generator(random_state):
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise ValueError(
            "random_state must be None, an int >= 0, a numpy Generator, BitGenerator or "
            f"SeedSequence, got {random_state!r}."
        ) from None


def _vector(name, value, size, what):
    """``value`` as a float vector of length ``size``, or an error naming ``name``."""
    arr = np.array(value, dtype=float)
    if arr.size != size:
        raise ValueError(f"{name} must have {size} entries ({what}), got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got non-finite entries.")
    return arr.reshape(size)


def _smoothness(problem, from_paper, x, rng, counter):
    """``((L0, LJ), source)``: the paper's constants, the problem's own bound, or an
    estimate; the set-up that computed them is counted."""
    if "smoothness" in from_paper:
        # The paper's constants. The problem's own set-up is spent all the same, as when the
        # preset was written (a bound taken when first read is taken here): the strict count
        # keeps it, and with it the budget left to the iterations; the paper's count (which
        # has no set-up for them) leaves it out.
        getattr(problem, "smoothness", None)
        _charge_setup(problem, counter, bound=True)
        return tuple(float(v) for v in from_paper["smoothness"]), "paper"
    if problem.smoothness:
        # The problem's own set-up (e.g. a spectral bound from one pass over its rows).
        _charge_setup(problem, counter, bound=True)
        L0, LJ = problem.smoothness
        return (L0, LJ), "problem"
    return tuple(estimate_smoothness(problem, x, rng, counter=counter)), "estimated"


def _charge_setup(problem, counter, *, bound):
    """Count the problem's set-up in this run: the rows read when it was built
    (``setup_evaluations``) and, with ``bound``, those of its smoothness bound if taken
    when first read (``smoothness_evaluations``). Every run is charged alike, whichever
    took the bound: seeds run in turn or in parallel spend the same budget."""
    counter.setup_evaluations += int(getattr(problem, "setup_evaluations", 0))
    if bound:
        counter.setup_evaluations += int(getattr(problem, "smoothness_evaluations", 0))


def _set_up(problem, run: RunSettings, rng, *, x0, y0, slack0, verbose, momentum=True):
    """The pieces of a run (its inner solver started at ``x0, slack0``, with its first
    momentum estimate and its smoothness constants unless not ``momentum``: then it never
    steps) and the starting multipliers."""
    levels = getattr(problem, "levels", None)
    if levels is not None:
        # The free levels move the constraint offsets: on a copy of the problem, so that the
        # caller's problem (shared by seeds and later solves) keeps its own.
        problem = copy.copy(problem)
        problem.offset = np.array(problem.offset, dtype=float)
    est = AugmentedLagrangianEstimator(problem, run.knobs.estimator)
    p, m = est.p, est.m
    x = np.zeros(p) if x0 is None else _vector("x0", x0, p, "problem.n_params")
    s = (
        np.zeros(est.n_slack)
        if slack0 is None
        else _vector("slack0", slack0, est.n_slack, "the number of inequalities")
    )
    s = np.maximum(s, 0.0)
    y = np.zeros(m) if y0 is None else _vector("y0", y0, m, "problem.n_constraints")
    z = np.concatenate([problem.h.prox(x, 1.0) if x0 is not None else x, s])
    counter = Counter.for_problem(
        problem,
        # With the finish after it, Algorithm 1's loop may spend a share of the budget.
        max_passes=_search_budget(run.max_passes) if run.finish else run.max_passes,
        max_oracle_calls=run.max_oracle_calls,
        count_scale=float(run.paper.get("count_scale", 1.0)),
    )
    if momentum:
        smoothness, source = _smoothness(problem, run.from_paper, x, rng, counter)
    else:
        # No stochastic phase: no step size, and no set-up for one. (A set-up the problem
        # spent all the same, e.g. its scale, is counted.)
        _charge_setup(problem, counter, bound=False)
        smoothness, source = None, "unused"
    counter.setup_in_paper_count = source != "paper"
    history, progress = History(counter, m), _Progress(verbose, counter)

    def observe(verdict):
        history.record(verdict)
        progress.stop_test(verdict)

    test = StopTest(
        problem, est, rng, counter, tol=run.tol, dual_tol=run.search_dual_tol,
        slack_projection=run.knobs.slack_projection, check_sample=run.knobs.check_sample,
        batch_size=run.batch_size, observer=observe,
    )  # fmt: skip
    if run.theory:
        inner = TheorySolver(
            est, rng, counter, test, smoothness=smoothness, tol=run.tol,
            theory_constants=run.theory_constants,
        )  # fmt: skip
    else:
        inner = PStormSolver(
            est, rng, counter, test, run.knobs, smoothness=smoothness,
            batch_size=run.batch_size,
        )  # fmt: skip
    if momentum:
        inner.start(z, y, float(run.beta0))
    else:
        inner.z = z
    return _Parts(
        problem, est, rng, counter, test, inner, history, progress, smoothness, source
    ), y


class _Progress:
    """The ``verbose`` lines: one per outer iteration, one at a stop test whenever
    ``_PROGRESS_SECONDS`` passed without a line, one at the end."""

    def __init__(self, verbose, counter):
        self.verbose, self.counter = verbose, counter
        self.last = time.monotonic()

    def stop_test(self, verdict):
        if self.verbose and time.monotonic() - self.last >= _PROGRESS_SECONDS:
            _, _, k, inner = verdict.al
            print(
                f"[stoc_ialm]   k={k:2d} inner={inner} stop test: pres={verdict.pres:.2e} "
                f"dres={verdict.dres:.2e} {self.counter.describe()} (outer iteration {k} goes on)"
            )
            self.last = time.monotonic()

    def outer(self, k, beta, verdict):
        if self.verbose:
            print(
                f"[stoc_ialm] k={k:2d} beta={beta:9.3g} pres={verdict.pres:.2e} "
                f"dres={verdict.dres:.2e} max c={np.max(verdict.c):+.3e} "
                f"{self.counter.describe()}"
            )
            self.last = time.monotonic()

    def end(self, k, beta, verdict, message):
        if self.verbose:
            print(
                f"[stoc_ialm] k={k:2d} beta={beta:9.3g} pres={verdict.pres:.2e} "
                f"dres={verdict.dres:.2e} {self.counter.describe()} -- {message}"
            )


def _result(parts: _Parts, run: RunSettings, state: _LoopState) -> IALMResult:
    """The :class:`IALMResult` of the last point judged on all rows."""
    verdict, counter, est = parts.test.last, parts.counter, parts.est
    p, m, h = est.p, est.m, parts.problem.h
    xk, sk = verdict.z[:p].copy(), verdict.z[p:].copy()
    c = verdict.c
    jac = np.vstack([verdict.jac_t(e) for e in np.eye(m)]) if m else np.zeros((0, p))
    kpres, kdres, kz = original_residuals(xk, verdict.grad, jac, c, h, est.ineq)
    return IALMResult(
        x=xk,
        slack=sk,
        multipliers=verdict.y_cert,
        primal_residual=verdict.pres,
        dual_residual=verdict.dres,
        primal_residual_se=verdict.pres_se,
        dual_residual_se=verdict.dres_se,
        kkt_primal_residual=kpres,
        kkt_dual_residual=kdres,
        kkt_multipliers=kz,
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
