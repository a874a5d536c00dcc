"""Algorithm 1's loop, the sized search that replaces it when the finish follows, and the
finish after either (:mod:`.finish`): each from the pieces of :mod:`._ialm_setup`, each
ending in the state the run's result is read from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._ialm_search import _search_passes
from ._ialm_setup import _Parts
from .finish import alm_finish
from .settings import RunSettings
from .stopping import Verdict

#: The finish's first penalty at least this: at the stochastic phase's last penalty (0.3
#: to 3 with the estimators' schedules) the first solves hardly moved the constraint
#: violation. Passes of six fits (n = 3000 and 30000; three constraint kinds, a certified
#: fit, Neyman-Pearson), summed, when it was chosen: 627.6, 607.1, 574.6 and 554.1 with a
#: floor of 0, 3, 10 and 30 (10 kept: the larger, the worse the inner solves' conditioning).
_FINISH_BETA0 = 10.0


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
