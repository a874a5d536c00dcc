"""The pieces of one run of :func:`~.ialm.stoc_ialm`: the start, the count, the smoothness
constants, the stop test, the inner solver, the history and the ``verbose`` lines.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from ._ialm_search import _search_budget
from .counting import Counter
from .history import History
from .inner import PStormSolver, TheorySolver
from .pstorm import AugmentedLagrangianEstimator
from .settings import RunSettings
from .smoothness import estimate_smoothness
from .stopping import StopTest

#: With ``verbose``, a stop test prints a progress line when this many seconds passed since
#: the last line: an outer iteration can run for many passes (63 on 2e6 x 50, 17 s).
_PROGRESS_SECONDS = 2.0


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
