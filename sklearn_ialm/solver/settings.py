"""Stoc-iALM's settings as data: the tuning knobs, the named presets, and their checks.

:class:`Settings` holds the knobs a preset sets; :func:`resolve_settings` merges a preset with
the arguments of :func:`~sklearn_ialm.solver.stoc_ialm`, checks them all (in a fixed order:
the first wrong argument is the one named) and returns the :class:`RunSettings` of one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType

import numpy as np

from .._warnings import warn
from .finish import finish_applies
from .problem import check_problem

__all__ = ["PRESETS", "RunSettings", "Settings", "clip_batch_size", "resolve_settings"]


@dataclass(frozen=True)
class Settings(Mapping):
    """The tuning knobs of Stoc-iALM with PStorm; the defaults are the ``"default"`` preset.

    A read-only mapping as well (``settings["m0"]``, ``dict(settings)``). Each departure of
    ``"default"`` from the paper's reading is listed with its measured figure in the user
    guide, "The paper's reading" (``doc/user_guide/paper_reading.rst``): medians of the
    paper's count over 10 seeds on spambase with the paper preset and that one knob set to
    the default's value (``benchmarks/results/np_spambase_variants.md``; a9a and bank in
    ``fairness_*_variants.md``). "F" marks figures of the project's earlier implementation
    quoted there.

    Parameters
    ----------
    estimator : {"ustat", "independent"}, default="ustat"
        Unbiased estimator of the penalty gradient ``beta J^T k`` (see
        :mod:`sklearn_ialm.solver.pstorm`): one batch and the U-statistic over its distinct
        pairs, or the paper's two independent batches (Lemma 4). Chosen by: spambase
        16.20 [8.24, 20.53]; F: a9a 16.4 -> 8.1, spambase 22.9 -> 10.0.
    momentum : {"warm", "restart"}, default="warm"
        At a new outer iteration, ``"restart"`` re-initialises the momentum estimate from
        ``m0`` fresh samples (Algorithm 2); ``"warm"`` keeps it and adds an unbiased
        correction for the change of ``(y, beta)`` computed on ``batch_size`` fresh
        constraint samples at the same point. Chosen by: spambase 15.27 [10.95, 16.86];
        F: a9a 8.1 -> 3.5.
    slack_step : {"exact", "shared"}, default="exact"
        Step on the slack block: ``"exact"`` takes ``min(eta, 1/beta_k)`` (``1/beta_k`` is
        the exact minimiser of the slack's quadratic), ``"shared"`` the step ``eta`` of
        ``x``. Chosen by: spambase 16.20 [10.97, 21.44] (with the fairness constant
        ``1/(10 + beta) < 1/beta`` it changes nothing).
    delta : float in (0, 1), default=0.02
        STORM momentum parameter. Chosen by: spambase 14.15 [10.97, 18.25]; F: 0.002 to
        0.02 all converge. The paper gives none (``"paper"``: 0.01, F's choice;
        ``"theory"``: 0.5, a placeholder: every call takes the proof's own value).
    m0 : int, default=300
        Size of the batch that initialises the momentum estimate (``None``:
        ``batch_size``); at most the rows of a finite sum. Chosen by: spambase
        15.70 [15.02, 17.75].
    batch_growth : float >= 1, default=2.0
        Adaptive minibatch: at an evaluation of the stopping rule that fails, the exact
        gradient it computed measures the error of the momentum estimate; when the dual
        residual has not improved by 10 % for ``growth_patience`` evaluations and that
        error is above ``noise_ratio`` times the residual (a noise floor rather than slow
        progress), the minibatch grows by this factor (up to ``max_batch_size``). ``1``
        keeps it fixed. Chosen by: a9a 5.60 [4.56, 70.35] (5 seeds); on spambase it never
        triggers at ``tol=1e-2``; a9a at ``tol=3e-3``: 39 passes (CHANGELOG).
    growth_patience : int, default=10
        Failed evaluations without a 10 % improvement before the minibatch may grow. Not
        measured.
    noise_ratio : float, default=0.5
        The share of the dual residual above which the momentum estimate's error counts as
        a noise floor. Not measured.
    max_batch_size : int, optional
        Largest minibatch of the growth (``None``: the larger row count of a finite sum,
        else unbounded). Not measured.
    eval_every : int or "auto", default="auto"
        Inner iterations between two evaluations of the stopping rule (``"paper"``: 50).
        ``"auto"``: the first test of an outer iteration after 50 inner iterations, then
        each interval twice the previous one, but no longer than 50 iterations or the
        iterations whose minibatch evaluations cost as much as one test
        (``problem.full_evaluation_cost()``, or ``n_samples``; for a sampled problem
        ``problem.evaluation_size`` per kind; ``problem.check_work()`` when the problem
        prices its tests on all rows itself), whichever is more. Chosen by: spambase
        14.43, strict count 59.7 -> 44.1 passes; a9a 6.13 [4.52, 12.98].
    slack_projection : bool, default=True
        At each stop test, replace the slack block by its exact minimiser given ``x``
        (``max(-(c + y/beta), 0)``) and the momentum estimate's slack block by its exact
        gradient (``"paper"``: False, the iterate is tested as it is). Chosen by: an
        inactive constraint then gets multiplier 0; spambase 16.20 (no change, its
        constraint is active).
    postprocess : int, optional
        ``m1``: before each stop test, Algorithm 2's postprocessing step, one proximal step
        from the current iterate with a gradient estimate on ``m1`` fresh samples; the
        tested point is the run's point from then on. ``None`` (every preset): off.
        Algorithm 2 applies it to a random iterate at the end of a fixed number of
        iterations (see ``preset="theory"``); here it is applied to the iterate being
        tested. Measured: ``postprocess=200`` on spambase 21.71 [14.70, 24.90].
    paper_constants : bool, default=False
        Take the smoothness constants, ``sigma`` and ``batch_size`` from
        ``problem.paper_settings`` (the paper's Section 5 values, carried by the paper's two
        models) where ``sigma`` and ``batch_size`` are not passed (``"paper"``: True;
        ``False``: the problem's own smoothness bound, 2.5 and 30). Measured: the exact
        bound in the paper preset, 6/10 seeds converge on spambase, median 46.13.
    check_sample : "auto", int or False, default="auto"
        Stop tests on a subsample of rows (finite sums only). ``"auto"``: when a test on
        all rows reads at least 100000 rows, each test first reads a fresh random subsample
        of 10240 objective and 10240 constraint rows (drawn from the run's generator, with
        replacement, as windows of 64 adjacent rows at uniform starts: every row equally
        likely, read nearly in order; random single rows cost several times a row of a
        sequential pass); an int ``r``: of ``r`` single rows of each kind, whenever a test
        on all rows reads more than ``4 r`` rows. The residuals on the subsample come with
        batch-means standard errors over 10 chunks of it, and the squared noise of the
        residual vectors (their trace of covariance, from the same chunks) is taken off
        their squared norms. A test whose dual residual is not below ``dual_tol`` by its
        standard error says "not yet" on the subsample; one that passes and whose primal
        residual is above ``tol`` by its standard error ends the outer iteration (the
        multiplier step uses the subsample's constraint values); any other passing test is
        repeated on all rows, whose verdict stands: convergence is only declared by a test
        on all rows. The slack projection and the free levels' step use the test's
        constraint values (the subsample's, within a standard error of the exact ones; exact
        on the confirmation). When the residuals come within twice the tolerance, the subsample
        grows until their standard errors are at most a fifth of it, and the tests read
        all rows once it would be more than a quarter of them. The rows read are counted as
        stop tests. ``False`` (``"paper"``): every test on all rows. Chosen by: dense
        1e6 x 20 with a binding group, fairness 23.5 s -> 3.9 s CPU, 189 -> 16 passes
        (CHANGELOG, issue 21); the windows: on dense 1e6 x 20 the row-by-row tests took
        more CPU than the fit's minibatches and full passes together (CHANGELOG). The
        thresholds (10000 rows, 100000 rows, the margin, the fifth) are not measured.
    step_scale : float, default=1.0
        The step is ``step_scale / (L0 + penalty_scale * LJ * beta_k)`` with
        ``problem.smoothness = (L0, LJ)`` (estimated if the problem has none). Not measured.
    penalty_scale : float, default=1.0
        See ``step_scale``. Not measured.
    finish : bool, default=True
        End the run with the deterministic finish (:func:`~sklearn_ialm.solver.finish.alm_finish`):
        the augmented Lagrangian method with Newton inner solves on all rows takes the
        stochastic phase's point and multipliers to the finish's tolerances (``finish_tol``);
        ``converged`` is its verdict. Before it, on a logistic loss, the stochastic phase
        runs on a sample of the rows only: from 100000 rows, PStorm at the starting
        multipliers for 30000 minibatch draws and a finish, on a sample of 30000 rows (at
        most a tenth), with no stop test (``eval_every`` and ``check_sample`` unused); the
        finish on all rows starts from the sample's point and multipliers. On dense 1e6 x 20
        (demographic parity 0.02) the fit takes 0.66-0.71 of the CPU of the finish alone
        (``benchmarks/results/finish_ab.md``, A/B). On all rows the phase cost more than
        it saved at every size measured (Adult by race, 32561 rows: 1.14-1.26 times the CPU
        of the finish alone; dense 1e6 x 20: 1.12), and so did the sample on wide data
        (more than 1024 parameters, or fewer than 100 sample rows a parameter: CSR 2e5 x
        1e4): there the finish is the whole solve (both: ``git log --
        'benchmarks/results/finish_ab_*'``).
        Other losses
        keep Algorithm 1's loop, which looks for the multipliers (its stop test on ``tol``
        for both residuals): from zero multipliers the finish of the paper's sigmoid model
        diverged. For finite sums whose ``h`` is smooth
        or a box (else off). ``"paper"`` and ``"theory"``: off, the paper's algorithm as
        written. Chosen by: on wide sparse data (CSR 7e4 x 1e4, 50 non-zeros a row) the
        stochastic phase alone spent its 300 passes at a dual residual of 2e-3, its noise
        floor (before the finish, ``FairLogisticClassifier(bound=0.02)``); with the finish
        a loose bound gives LogisticRegression's model, its predictions on every test row
        and its training log-loss 0.2380, in 67.5 passes in all
        (``git log -- benchmarks/results/optimum.md``).
    search : bool, default=True
        With ``finish``: run the stochastic phase to find the multipliers. ``False``: the
        caller's ``y0`` are already a finished solve's (the estimators' re-solves at a moved
        bound), and the finish starts from ``x0, y0`` at once. Chosen by: on 3000 rows with
        equalized odds, the steering's two re-solves spent 26 and 8 stochastic passes to
        reach multipliers no better than those they started from.
    finish_tol : float in (0, 1], default=1.0
        The finish's tolerances as a share of the run's: it aims at a primal residual within
        ``finish_tol * tol`` and a dual residual within ``finish_tol * dual_tol``, and
        ``converged`` is judged there. ``1``: the caller's ``tol`` and ``dual_tol``; less asks
        for more precision, at more passes. The estimators ask for ``1e-3``: with their
        ``tol=1e-2`` and a dual tolerance of a tenth of the gradient at ``coef_ = 0``, the
        dual residual ends 1e-4 of the null model's, the precision of
        ``LogisticRegression``'s default ``tol=1e-4`` on a gradient of order one. Chosen by:
        with ``1e-3`` for every caller, 0, 0 and 1 of 10 seeds of the paper's problems (a9a
        and bank fairness, spambase Neyman-Pearson) converged in their 100 passes, all the
        others at residuals within ``tol`` (a9a, seed 0: 2.5e-4 / 1.5e-4; issue 40); with
        ``1``, 10 of 10 on each (``git log -- benchmarks/results/paper_converged.md``).
    finish_dual_floor : float >= 0, default=0.0
        The finish's dual tolerance is at least this (its Euclidean norm, in the problem's
        ``x``): ``finish_tol * dual_tol`` asks for more precision than a caller's reference
        may have (the estimators: ``LogisticRegression``'s, see their ``solver_settings``).

    Examples
    --------
    >>> from sklearn_ialm.solver import PRESETS
    >>> PRESETS["paper"]["m0"] is None, PRESETS["default"]["m0"]
    (True, 300)
    >>> PRESETS["default"].replace(delta=0.05)["delta"]
    0.05
    """

    estimator: str = "ustat"
    momentum: str = "warm"
    slack_step: str = "exact"
    delta: float = 0.02
    m0: int | None = 300
    batch_growth: float = 2.0
    growth_patience: int = 10
    noise_ratio: float = 0.5
    max_batch_size: int | None = None
    eval_every: int | str = "auto"
    slack_projection: bool = True
    postprocess: int | None = None
    paper_constants: bool = False
    check_sample: int | str | bool = "auto"
    step_scale: float = 1.0
    penalty_scale: float = 1.0
    finish: bool = True
    search: bool = True
    finish_tol: float = 1.0
    finish_dual_floor: float = 0.0

    def __getitem__(self, name: str):
        if name not in _KNOBS:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(_KNOBS)

    def __len__(self) -> int:
        return len(_KNOBS)

    def replace(self, **changes) -> Settings:
        """A copy with the knobs in ``changes`` set."""
        return replace(self, **changes)


_KNOBS = tuple(f.name for f in fields(Settings))

# The paper's Section 5 reading of Algorithms 1-2: two independent batches for ``J^T c``
# (Lemma 4), the momentum estimate re-initialised from ``m0`` fresh samples at every outer
# iteration, the step ``1/L(beta)`` for all of ``z``, a test on all rows every 50 inner
# iterations of the iterate as it is, Section 5's constants.
_PAPER_READING = Settings(
    estimator="independent", momentum="restart", slack_step="shared", m0=None,
    batch_growth=1.0, eval_every=50, slack_projection=False, postprocess=None,
    paper_constants=True, check_sample=False, finish=False,
)  # fmt: skip

#: Named settings (:class:`Settings`). ``"default"`` is the best we measured (see the user
#: guide and ``benchmarks/results``); ``"paper"`` is the paper's Section 5 reading of
#: Algorithms 1-2; ``"theory"`` the proof's parameters (Lemma 3, Theorem 3, see
#: :mod:`sklearn_ialm.solver.theory`).
PRESETS: Mapping[str, Settings] = MappingProxyType(
    {
        "default": Settings(),
        "paper": _PAPER_READING.replace(delta=0.01),
        "theory": _PAPER_READING.replace(delta=0.5),
    }
)


@dataclass(frozen=True)
class RunSettings:
    """Everything one run of :func:`~sklearn_ialm.solver.stoc_ialm` uses, checked.

    ``knobs`` are the preset's :class:`Settings` with the caller's overrides and ``m0``
    resolved; the others are the arguments of ``stoc_ialm`` of the same names, with
    ``sigma``, ``dual_tol`` and ``batch_size`` resolved (``batch_size`` clipped to the rows
    of a finite sum). ``paper`` is ``problem.paper_settings`` (or ``{}``) and
    ``from_paper`` the part of it the run takes (``{}`` unless ``paper_constants``).
    """

    preset: str
    knobs: Settings
    tol: float
    dual_tol: float
    beta0: float
    sigma: float
    gamma: float
    batch_size: int
    max_passes: float
    max_oracle_calls: int | None
    max_outer_iter: int
    multiplier_samples: int | None
    theory_constants: dict | None
    paper: dict
    from_paper: dict
    finish: bool = False
    rows: float = np.inf

    @property
    def theory(self) -> bool:
        return self.preset == "theory"

    @property
    def full_batch(self) -> bool:
        """Whether the minibatches hold as many draws as the rows (clipped to them)."""
        return self.batch_size >= self.rows

    @property
    def search_dual_tol(self) -> float:
        """The stochastic phase's dual tolerance: ``dual_tol``, or ``tol`` when the
        finish follows (the phase then only looks for the multipliers)."""
        return max(self.tol, self.dual_tol) if self.finish else self.dual_tol

    @property
    def finish_tols(self) -> tuple[float, float]:
        """The finish's primal and dual tolerances (see :func:`finish_tolerances`)."""
        knobs = self.knobs
        return finish_tolerances(
            self.tol, self.dual_tol, knobs.finish_tol, knobs.finish_dual_floor
        )

    def penalty(self, k: int) -> float:
        """``beta_k = beta0 * sigma**k``, Algorithm 1's penalty schedule."""
        return self.beta0 * self.sigma**k

    def as_dict(self, smoothness, source) -> dict:
        """The ``settings`` of the run's :class:`~sklearn_ialm.solver.IALMResult`."""
        return dict(
            self.knobs,
            preset=self.preset,
            tol=self.tol,
            dual_tol=self.dual_tol,
            beta0=self.beta0,
            sigma=self.sigma,
            gamma=self.gamma,
            batch_size=self.batch_size,
            eval_every=self.knobs.eval_every,
            smoothness=smoothness,
            smoothness_source=source,
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


def _check_preset(preset, theory_constants):
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


def _check_choices(knobs, preset):
    """The knobs checked before the run's numbers (their errors come first)."""
    if preset == "theory" and knobs.estimator == "ustat":
        raise ValueError(
            "estimator='ustat' needs minibatches of at least 2 draws, and preset='theory' "
            "draws batches of 1: use estimator='independent' (the preset's) with it."
        )
    if knobs.postprocess is not None:
        _check_positive("postprocess", knobs.postprocess, integer=True)
    check_sample = knobs.check_sample
    if not (check_sample is False or check_sample == "auto"):
        if isinstance(check_sample, bool | str) or not float(check_sample).is_integer():
            raise ValueError(
                f"check_sample must be 'auto', an integer >= 2 or False, got {check_sample!r}."
            )
        _check_positive("check_sample", check_sample, integer=True)
    if knobs.slack_step not in ("exact", "shared"):
        raise ValueError(f"slack_step must be 'exact' or 'shared', got {knobs.slack_step!r}.")
    if knobs.momentum not in ("warm", "restart"):
        raise ValueError(f"momentum must be 'warm' or 'restart', got {knobs.momentum!r}.")


def finish_tolerances(
    tol: float, dual_tol: float, finish_tol: float, finish_dual_floor: float = 0.0
) -> tuple[float, float]:
    """The finish's primal and dual tolerances: ``finish_tol`` times the run's, the dual
    one at least ``finish_dual_floor`` (see :class:`Settings`)."""
    return finish_tol * tol, max(finish_tol * dual_tol, finish_dual_floor)


def _check_numbers(knobs):
    _check_positive("delta", knobs.delta, upper=1)
    _check_positive("step_scale", knobs.step_scale)
    _check_positive("penalty_scale", knobs.penalty_scale, strict=False)
    eval_every = knobs.eval_every
    if isinstance(eval_every, str):
        if eval_every != "auto":
            raise ValueError(f"eval_every must be 'auto' or an integer > 0, got {eval_every!r}.")
    else:
        _check_positive("eval_every", eval_every, integer=True)
    if not (np.isfinite(knobs.batch_growth) and knobs.batch_growth >= 1):
        raise ValueError(f"batch_growth must be a number >= 1, got {knobs.batch_growth!r}.")
    _check_positive("noise_ratio", knobs.noise_ratio)
    _check_positive("growth_patience", knobs.growth_patience, integer=True)
    # At most 1: a finish short of the caller's tolerances would not be "converged".
    if not (np.isfinite(knobs.finish_tol) and 0 < knobs.finish_tol <= 1):
        raise ValueError(f"finish_tol must be a number > 0 and <= 1, got {knobs.finish_tol!r}.")
    floor = knobs.finish_dual_floor
    if not (np.isfinite(floor) and floor >= 0):
        raise ValueError(f"finish_dual_floor must be a number >= 0, got {floor!r}.")


def _check_rows(problem):
    if problem.finite:
        for kind, n_rows in (
            ("objective", problem.n_objective_samples),
            ("constraint", problem.n_constraint_samples if problem.n_constraints else 1),
        ):
            if n_rows < 1:
                raise ValueError(f"problem has no {kind} samples (n_{kind}_samples={n_rows}).")


def _resolve_m0(knobs, batch_size, problem):
    m0 = batch_size if knobs.m0 is None else int(knobs.m0)
    _check_positive("m0", m0, integer=True)
    if problem.finite:
        # More initial draws than rows add cost, not accuracy, on small data.
        rows = problem.n_objective_samples
        if problem.n_constraints:
            rows = min(rows, problem.n_constraint_samples)
        m0 = min(m0, max(batch_size, rows))
    return m0


def resolve_settings(
    problem,
    *,
    preset,
    knobs,
    tol,
    dual_tol,
    beta0,
    sigma,
    gamma,
    batch_size,
    max_passes,
    max_oracle_calls,
    max_outer_iter,
    multiplier_samples,
    theory_constants,
) -> RunSettings:
    """Merge ``preset`` with the caller's ``knobs`` (a dict; ``None`` values keep the
    preset's) and check every argument of :func:`~sklearn_ialm.solver.stoc_ialm`.

    Raises the first error in the order the arguments are checked; warns when
    ``batch_size`` is clipped to the rows of a finite sum.
    """
    check_problem(problem)
    unknown = sorted(set(knobs) - set(_KNOBS))
    if unknown:
        raise TypeError(f"stoc_ialm() got an unexpected keyword argument {unknown[0]!r}")
    _check_preset(preset, theory_constants)
    settings = PRESETS[preset].replace(**{k: v for k, v in knobs.items() if v is not None})
    _check_choices(settings, preset)
    # Section 5's per-problem values (the paper's two models carry them), unless passed.
    paper = getattr(problem, "paper_settings", None) or {}
    from_paper = dict(paper) if settings.paper_constants else {}
    if sigma is None:
        sigma = from_paper.get("sigma", 2.5)
    if batch_size is None:
        batch_size = from_paper.get("batch_size", 30)
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
    _check_numbers(settings)
    _check_positive("max_passes", max_passes)
    _check_rows(problem)
    batch_size = clip_batch_size(batch_size, problem)
    settings = settings.replace(m0=_resolve_m0(settings, batch_size, problem))
    return RunSettings(
        preset=preset,
        knobs=settings,
        tol=tol,
        dual_tol=dual_tol,
        beta0=beta0,
        sigma=sigma,
        gamma=gamma,
        batch_size=batch_size,
        max_passes=max_passes,
        max_oracle_calls=max_oracle_calls,
        max_outer_iter=max_outer_iter,
        multiplier_samples=multiplier_samples,
        theory_constants=theory_constants,
        paper=paper,
        from_paper=from_paper,
        finish=bool(settings.finish) and finish_applies(problem),
        rows=_rows(problem),
    )


def _rows(problem) -> float:
    """The rows the minibatches are drawn from (the larger set; inf for a sampled
    problem)."""
    if not problem.finite:
        return np.inf
    rows = problem.n_objective_samples
    if problem.n_constraints:
        rows = max(rows, problem.n_constraint_samples)
    return max(rows, 2)


def clip_batch_size(batch_size, problem) -> int:
    """``batch_size`` as an int, clipped to the rows of a finite-sum ``problem`` (with a
    warning that names the value used).

    Draws are with replacement, so a larger minibatch is valid, but each iteration then
    costs more than a pass over the data for an estimate hardly better than the full
    gradient, and a budget in passes buys almost no iterations.
    """
    batch_size = int(batch_size)
    if not problem.finite:
        return batch_size
    rows = _rows(problem)  # at least 2: the U-statistic needs two draws
    if batch_size <= rows:
        return batch_size
    warn(
        f"batch_size={batch_size} is more than the {rows} rows the minibatches are drawn "
        f"from; using batch_size={rows}.",
        UserWarning,
    )
    return rows
