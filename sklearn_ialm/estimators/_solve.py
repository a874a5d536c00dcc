"""The solver runs of a fit: their start, their seeds, the choice among them.

Module-level functions, so that joblib's workers import them (:func:`_solve`) and the Dask fit
shares them with the in-memory one.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ..problems import LinearProblem, _gram
from ..problems.losses import Logistic
from ..solver import stoc_ialm
from ..solver.history import HISTORY_COUNTS
from ..solver.settings import clip_batch_size
from ..solver.threads import one_blas_thread

__all__ = ["calibration_seed", "set_solution", "solver_settings", "spawn_seeds"]

# The stop test needs the dual residual at most this share of its value at coef_ = 0 (and at
# most tol): a fit cannot stop where a weak signal leaves the gradient small from the start.
# A relative test alone (tol times the start) made every subproblem of the augmented
# Lagrangian far stricter: 6000 x 300 Neyman-Pearson did not finish its first one in 100
# passes, and its constraint was never enforced.
_MIN_DECREASE = 0.1
# The estimators' precision: the finish takes the residuals to this share of the stop test's
# tolerances (``stoc_ialm``'s ``finish_tol``; its own default aims at the tolerances). With
# tol=1e-2 and the dual tolerance a tenth of the null model's gradient, the dual residual ends
# 1e-4 of it: the precision of LogisticRegression's default tol=1e-4.
_FINISH_TOL = 1e-3
# LogisticRegression stops where no entry of its gradient (in the data's units) exceeds its
# tol, by default 1e-4: a hundredth of the estimators' default tol. The finish's dual
# tolerance is a share of the null model's gradient, which on wide data is far from order
# one: on CSR 2e5 x 1e4 (30 non-zeros a row) it asked for 9.4e-7, where LogisticRegression
# stopped at a gradient a hundredth of the null model's (its tol=1e-6 reaches ours). The
# finish stops at LogisticRegression's precision at the latest (see _dual_floor) where more
# precision costs reads: on wide data, whose Newton steps take conjugate-gradient products
# (on narrow data Cholesky's steps converge quadratically: an order costs little).
_LR_TOL_SHARE = 1e-2


def _initial_dual_residual(problem) -> float:
    """The dual residual at ``x = 0`` with zero multipliers: the gradient's own scale.

    In standard units this is of the order of the features' correlations with the labels;
    the estimators' stop test asks for a tenfold decrease from it, so that a fit cannot pass
    the test at (or near) the null model only because the gradient there is small.
    """
    x = np.zeros(problem.n_params)
    null = getattr(problem, "null_gradient", None)
    grad = null() if null is not None else problem.full_evaluation(x)[1]
    return float(np.linalg.norm(problem.h.dist_subdiff(x, np.asarray(grad, dtype=float))))


def _dual_floor(est, problem) -> float:
    """The dual residual (Euclidean, in the solver's ``x``) that puts every entry of the
    gradient in the data's units within ``LogisticRegression``'s tol (``_LR_TOL_SHARE``
    times the estimator's): that gradient's entry of column ``k`` is ``s_k g_k + c_k g_b``
    (``s`` the feature scale, ``c`` the centre, ``g_b`` the intercept's entry), at most
    ``sqrt(s_k^2 + c_k^2) ||g||``. 0 (no floor) up to ``GRAM_MAX_PARAMS`` parameters
    and for a problem in other units (the multinomial model's)."""
    if problem.n_params <= _gram.GRAM_MAX_PARAMS or not hasattr(problem, "feature_scale"):
        return 0.0
    scale = np.broadcast_to(problem.feature_scale, (problem.n_features,))
    center = problem.feature_center
    center = np.zeros_like(scale) if center is None else center
    unit = max(1.0, float(np.max(np.hypot(scale, center), initial=0.0)))
    return _LR_TOL_SHARE * est.tol / unit


def _null_start(problem):
    """The start ``x0`` of a fit: the null model (all weights 0) with its best intercept.

    With the logistic loss that intercept is the log-odds of the weighted positive share,
    in closed form and without reading ``X``. Starting at 0 instead left the intercept to
    the solver, and where the classes' weights are far apart the loss saturates on the way:
    on scikit-learn's ``check_class_weight_classifiers`` (class weights 1000 and 1e-4, the
    optimal intercept -16) the gradient fell below ``tol`` at intercept -15 with weights
    pointing nowhere in particular (the objective 0.009 above its minimum, where
    ``LogisticRegression`` stops 1e-5 above it), and 16 % of the rows were predicted 1.
    None (start at 0) without an intercept, with another loss, or with one class only in
    the objective (Neyman-Pearson's sigmoid loss reads the positives only).
    """
    if not (isinstance(problem, LinearProblem) and problem.fit_intercept):
        return None
    if type(problem.loss) is not Logistic:
        return None
    # (Products by the masks: 2 ms, where the masked copies took 10 on 1e6 rows.)
    positive = float(problem.u @ (problem.b > 0))
    negative = float(problem.u @ (problem.b < 0))
    if positive <= 0 or negative <= 0:
        return None
    return problem.point(np.zeros(problem.n_features), np.log(positive / negative))


def spawn_seeds(random_state, n_seeds: int) -> list[int]:
    """``n_seeds`` independent integer seeds for the solver runs, from ``random_state``.

    One integer is drawn from ``check_random_state(random_state)``; a
    :class:`numpy.random.SeedSequence` built on it spawns one child per run, and each child
    gives one 32-bit seed. The seeds depend on ``random_state`` only, never on the order in
    which runs execute, so any ``n_jobs`` gives the same models; and a recorded seed replays
    its run: ``stoc_ialm(problem, random_state=seed, ...)``.
    """
    entropy = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    children = np.random.SeedSequence(entropy).spawn(int(n_seeds))
    return [int(child.generate_state(1)[0]) for child in children]


#: Spawn key of a hold-out's random stream: the solver's seeds are children of the same
#: entropy (spawn keys 0, 1, ...), so a hold-out is independent of them.
_CALIBRATION_STREAM = 2**32 - 1


def calibration_seed(random_state) -> np.random.SeedSequence:
    """The seed of a calibration hold-out: one draw from ``random_state``, as the solver's
    seeds take, on a stream of its own."""
    entropy = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    return np.random.SeedSequence(entropy, spawn_key=(_CALIBRATION_STREAM,))


def _solve(problem, seed, solver_kwargs):
    """One solver run (a module-level function so joblib workers can import it); a small
    problem's on one BLAS thread, in a worker as in the fit's own process (see
    :mod:`~sklearn_ialm.solver.threads`), so that ``n_jobs`` gives the same model."""
    with one_blas_thread(_stored_values(problem)):
        return stoc_ialm(problem, random_state=seed, **solver_kwargs)


def _stored_values(problem) -> float:
    """The values of the rows ``problem`` reads (as :func:`._fit._stored_values` counts X's),
    infinite where they are not one array in memory."""
    A = getattr(getattr(problem, "A_obj", None), "A", None)
    if sp.issparse(A):
        return float(A.nnz)
    return float(A.size) if isinstance(A, np.ndarray) else np.inf


def run_seeds(problem, seeds, solver_kwargs, n_jobs=None, in_sequence=False) -> list:
    """One solver run per seed: through joblib (``n_jobs``), or one after the other."""
    if len(seeds) == 1 or in_sequence:
        return [_solve(problem, seed, solver_kwargs) for seed in seeds]
    share = getattr(problem, "share_setup", None)
    if share is not None:
        share()  # so that n_jobs gives the same model (see LinearProblem.share_setup)
    return Parallel(n_jobs=n_jobs)(delayed(_solve)(problem, seed, solver_kwargs) for seed in seeds)


def _select(results) -> int:
    """Index of the chosen run: the lowest objective among the converged runs, else the
    smallest ``max(primal, dual)`` residual. Ties go to the earliest seed (deterministic)."""
    converged = [i for i, r in enumerate(results) if r.converged]
    if converged:
        return min(converged, key=lambda i: results[i].objective)
    return min(
        range(len(results)),
        key=lambda i: max(results[i].primal_residual, results[i].dual_residual),
    )


def _joined_history(results) -> dict:
    """The histories of successive solves as one: the counts (passes, stop-test passes, the
    paper's passes, oracle calls, draws, inner iterations) run on from the first solve."""
    out = {}
    offset = dict.fromkeys(HISTORY_COUNTS, 0.0)
    for rnd, r in enumerate(results):
        for key, val in r.history.items():
            val = np.asarray(val, dtype=float)
            if key in offset:
                val = val + offset[key]
            out.setdefault(key, []).append(val)
        out.setdefault("round", []).append(np.full(len(r.history["data_passes"]), rnd))
        for key, total in r.count_totals().items():
            offset[key] += float(total)
    return {key: np.concatenate(val) for key, val in out.items()}


def solver_settings(est, problem, **start) -> dict:
    """The solver's settings for the runs of ``est``'s fit on ``problem`` from ``start``
    (``x0``, and ``y0``, ``slack0`` where known); sets ``est._null_dual_residual``.

    In standard units the dual residual no longer depends on the units of X; the test also
    asks for a tenfold decrease from the null model (see :func:`_initial_dual_residual`).
    Its footing stays at x = 0, not at the start: at the null model's best intercept the
    residual is the weighted correlations alone (2e-8 on the class-weight check, see
    :func:`_null_start`), a tenth of which no stochastic gradient meets, at a start that is
    already optimal. The primal residual is in the units of the bound already.
    """
    est._null_dual_residual = _initial_dual_residual(problem)
    dual_tol = min(est.tol, _MIN_DECREASE * est._null_dual_residual) or est.tol
    return dict(
        start,
        tol=est.tol,
        dual_tol=dual_tol,
        preset=est.preset,
        **est._penalty_schedule(),
        # Clipped here, to warn once for all the solves of the fit.
        batch_size=clip_batch_size(est.batch_size, problem),
        max_passes=est.max_passes,
        verbose=est.verbose,
        finish_tol=_FINISH_TOL,
        finish_dual_floor=_dual_floor(est, problem),
    )


def set_solution(est, coef, intercept, result, results, history, runs, seeds, best) -> None:
    """The fitted attributes of a solution, set together: the model (``coef``,
    ``intercept``), the solve whose verdict is the fit's (``result``) among all its solves
    (``results``, their joined ``history``), and the first solve's ``runs`` of ``seeds``, of
    which the one at ``best`` was kept."""
    est.coef_ = coef
    est.intercept_ = intercept
    est.n_rounds_ = len(results)
    est.multipliers_ = np.asarray(result.multipliers, dtype=float).copy()
    est._slack = np.asarray(result.slack, dtype=float).copy()
    for name in ("primal_residual", "dual_residual", "kkt_primal_residual"):
        setattr(est, name + "_", float(getattr(result, name)))
    # Solved when ``kkt_dual_residual_`` is first read, not by every fit (an active-set least
    # squares: 100 groups of 20 rows 5 ms, 1000 groups 1.5 s).
    est._kkt_dual = result.kkt_dual
    est.n_iter_ = int(sum(r.n_iter for r in results))
    est.n_outer_iter_ = int(sum(r.n_outer_iter for r in results))
    est.objective_ = float(result.objective)
    est.history_ = {key: np.asarray(val).copy() for key, val in history.items()}
    if len(runs) > 1:
        est.seeds_ = [
            dict(seed=s, converged=bool(r.converged), primal_residual=float(r.primal_residual),
                 dual_residual=float(r.dual_residual), n_data_passes=float(r.n_data_passes),
                 objective=float(r.objective), selected=i == best)
            for i, (s, r) in enumerate(zip(seeds, runs, strict=True))
        ]  # fmt: skip
