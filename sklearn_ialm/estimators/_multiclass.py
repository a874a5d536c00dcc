"""Fits on more than two classes: the multinomial model under per-class rate bounds.

Both estimators pose a :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem` when
``y`` has ``K > 2`` classes:

* :class:`~sklearn_ialm.FairLogisticClassifier`: every parity kind one-vs-rest, per class
  ``c``: the gap between two groups in the rate of predicting ``c`` (among all their rows for
  demographic parity, among their rows of label ``c`` for the true-positive rate, of another
  label for the false-positive rate, both for equalized odds) is at most ``bound``; for the
  error rate, the gap in the share of rows not predicted their label.
* :class:`~sklearn_ialm.NeymanPearsonClassifier` with ``max_class_error``: the share of the
  rows of class ``k`` predicted as another class is at most ``alpha_k`` (Tian and Feng's
  multi-class Neyman-Pearson classification), the cross-entropy minimised.

The solver bounds soft rates (softmax probabilities); ``predict`` is the arg-max. The
steering to the bound on predictions:

* Neyman-Pearson: the first solve is unconstrained; where ``predict`` misses a bound, one
  re-solve at a soft bound moved by the excess (a cost-sensitive model); then per-class
  score offsets (added to ``intercept_``): raising class ``k``'s score lowers its error and
  raises the others', so each bounded class's offset is raised in turn to the least value
  that meets its bound given the others, until all hold (exact on the training rows, a
  weighted quantile of margins, no data pass).
* Fairness: offsets shared by all groups cannot close a gap between groups, so the soft
  bounds are moved by the hard violation (a secant on the last two solves) and the problem
  solved again from the last solution (at most :data:`_MAX_ROUNDS` solves, within the
  budget). A move stops short of asking for the empty set (:func:`_relaxation_room`), and a
  bound that no longer binds goes back to the bound itself; one met with room to spare is
  loosened. Once a converged solve meets the bound and another misses it, the next soft
  bounds lie between theirs (regula falsi on the worst hard value) until a solve meets
  the bound within ``bound_tol`` or the two are as close as a solve can tell apart; the
  model is then the point of the segment between the solve of least objective that met
  the bound and the last that missed it, nearest the one that missed, that meets it (the
  scores are linear in the parameters: no read of the rows), or the first point meeting the
  bound on the segment from the first solve to the constant model where its training
  objective is lower by more than 1e-3 (:mod:`._towards_constant`: the first solve is posed
  alike at every bound, the re-solves are not). Where the solves are spent
  and none met the bound, up to three more start from the one that missed it by the least,
  at its soft bounds each tightened by a margin (doubled at each miss). If none meets the
  bound, the model is moved along the segment towards the constant model (every row
  predicted the majority class, which meets every parity bound) until it does, and the fit
  says so. Where the model reached has a training objective above the constant model's
  (its solves posed at soft bounds tighter than the constant meets), the model returned is
  the point of least objective meeting the bound on the segment between them
  (:mod:`._below_constant`), not converged, and the fit says so.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from ..problems._group_codes import unique_codes
from ..solver.threads import one_blas_thread
from ._below_constant import at_least_constant
from ._class_offsets import _np_offsets
from ._class_params import check_two_class_params
from ._hard_rates import _say
from ._multiclass_pose import _spec, _weights
from ._multiclass_report import _class_rates, _warn_not_converged
from ._multiclass_steering import _MAX_ROUNDS, _RESOLVE_FINISH_TOL, _steer_soft_bounds
from ._new_rows import rows_to_predict
from ._solve import (
    _joined_history,
    _select,
    run_seeds,
    set_solution,
    solver_settings,
    spawn_seeds,
)

__all__ = ["Multinomial", "is_multiclass"]


def is_multiclass(y) -> bool:
    """Whether ``y`` (not a dask collection) holds more than two classes."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "iu":
        # Integer labels: type_of_target's verdict, counted in one pass (its sort of 1e6
        # labels took 0.015 s, and a fit asks twice).
        return len(unique_codes(y)[0]) > 2
    try:
        with warnings.catch_warnings():
            # y not validated yet: inf or nan in a float y warn in its cast to int; the
            # binary path's validation names them.
            warnings.simplefilter("ignore", RuntimeWarning)
            return type_of_target(y, input_name="y") == "multiclass"
    except (ValueError, TypeError):  # (TypeError: labels of mixed types, pd.NA)
        return False  # the binary path's validation names the problem


def _class_codes(y):
    check_classification_targets(y)
    classes, codes = unique_codes(np.asarray(y))
    return classes, codes.astype(np.intp)


def _start(est, problem, codes, sw, K, classes):
    """The previous fit (``warm_start``), else the null model: weights 0, intercepts the
    log of the weighted class shares (of the classes present)."""
    # The estimator's model before this fit (the fit runs on a working copy without it, see
    # BaseIALMClassifier._working_copy).
    previous = getattr(est, "_previous_fit", None) or {}
    coef = previous.get("coef_")
    same = coef is not None and coef.shape == (K, problem.n_columns)
    same = same and "class_offsets_" in previous
    if est.warm_start and same and np.array_equal(previous["classes_"], classes):
        return problem.point(coef, previous["intercept_"] - previous["class_offsets_"])
    return _null_point(problem, codes, sw, K)


def _null_point(problem, codes, sw, K):
    """Weights 0 and (with an intercept) the log of the weighted class shares."""
    if not problem.fit_intercept:
        return np.zeros(problem.n_params)
    share = np.bincount(codes, weights=sw, minlength=K) / sw.sum()
    logs = np.log(np.clip(share, 1e-12, None))
    return problem.point(np.zeros((K, problem.n_columns)), logs - logs.mean())


class Multinomial:
    """The steps' model of more than two classes (see the module docstring)."""

    name = "multinomial"

    def limits(self):
        # Every product of the fit is thin ((n, d) by (d, K)): BLAS threads only wait on each
        # other (digits, 1257 x 64 by 64 x 10 on 2 busy cores: 14 ms with threads, 0.2 ms
        # without), so the fit runs on one, whatever its size. By the process's one
        # controller: threadpoolctl's own looked the libraries up at each fit (7 ms, a
        # third of a wine fit's CPU).
        return one_blas_thread(0)

    def labels(self, est, y):
        classes, codes = _class_codes(y)
        check_two_class_params(est, len(classes))
        return classes, codes

    weights = staticmethod(_weights)

    def pose(self, est, fitting, source) -> None:
        codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
        cons, names, groups, context = _spec(est, codes, sw, classes, fitting.fit_params)
        fitting.problem = source.multinomial_problem(est, fitting, cons, groups)
        fitting.context = context
        fitting.notes.update(names=names, constrained=bool(cons))

    def start(self, est, fitting, source) -> None:
        codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
        fitting.start = _start(est, fitting.problem, codes, sw, len(classes), classes)

    def solve(self, est, fitting, source) -> None:
        fitting.solved = _solve_and_steer(est, fitting)

    def report(self, est, fitting, source) -> None:
        notes = fitting.notes
        _class_rates(
            est, fitting.problem, notes["scores"], fitting.labels, fitting.weights,
            notes["names"], fitting.context,
        )  # fmt: skip

    def verdict(self, est, fitting) -> tuple[bool, bool]:
        """``(bound_met_, converged_)``."""
        result, moved = fitting.solved
        context = fitting.context
        if context["kind"] == "np":
            bounds = np.array(list(context["bounds"].values()))
            met = bool(np.all(est.hard_constraint_values_ <= bounds + 1e-12))
        elif len(est.hard_constraint_values_):
            met = bool(np.all(est.hard_constraint_values_ <= context["bound"] + 1e-12))
        else:
            met = True
        if getattr(est, "rate", "hard") == "soft" and context["kind"] == "fair":
            met = bool(result.kkt_primal_residual <= est.tol)
        held = est._guarantee_holds()  # a calibrated fit's verdict is its guarantee
        met = met if held is None else held
        return met, bool(result.converged and met and moved is None)

    def tell(self, est, fitting) -> None:
        if not est.converged_:
            refit = fitting.notes.get("refit")
            _warn_not_converged(est, *fitting.solved, context=fitting.context, refit=refit)


def _solve_and_steer(est, fitting):
    """Every seed's solve, the steering's re-solves and the class offsets; sets the fitted
    attributes. ``(the solve whose verdict is the fit's, how the model was moved from the
    solves or None)`` (see ``_multiclass_steering._moved``)."""
    problem, context = fitting.problem, fitting.context
    codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
    K = len(classes)
    seeds = spawn_seeds(est.random_state, est.n_seeds)
    kwargs = solver_settings(est, problem, x0=fitting.start)
    base = problem.offset.copy()
    if context["kind"] == "np" and est.rate == "hard":
        # The first solve is unconstrained (every soft bound 2 above any rate: never
        # binding): the class offsets meet the bounds on predict exactly, and a soft bound
        # at alpha asks far more (the soft error of a row predicted right is still
        # 1 - p_k > 0); the steering tightens the soft bounds that the offsets alone would
        # meet only at a cost, from the soft errors reached (see _steer_soft_bounds).
        problem.offset = base - 2.0
    if est.preset == "default":
        # The augmented Lagrangian method on all rows from the start (the deterministic
        # finish without the stochastic search for the multipliers): on digits (650
        # parameters) the search spent 500 of 630 passes where this spent 132, to the same
        # objective (to 1e-9) and multipliers (to 1e-4).
        kwargs["search"] = False
    steered = fitting.notes["constrained"] and getattr(est, "rate", "hard") == "hard"
    if steered and context["kind"] == "fair":
        # The first solve to the re-solves' tolerance: the steering moves the soft bounds by
        # the hard rates it reaches, within a band as wide (where the model is built
        # from it, it is taken on to the finer one: see _polished). Asked ten times finer,
        # the first solve of digits (the group tied to the class halves, drawn by
        # default_rng(1), per-class bound 0.04) reached residuals 8e-6 and 4e-5 in 71
        # passes, then its next inner solves walked off that point (the rates' nonconvex
        # curvature) for the rest of the 300; with no re-solve, the model was moved all the
        # way to the constant model (test accuracy 0.159). Stopped there, it converged.
        kwargs["finish_tol"] = _RESOLVE_FINISH_TOL
        # Its soft rates start far from their bounds, from zero multipliers: see
        # MultinomialProblem.curvature_at_zero_multipliers.
        problem.curvature_at_zero_multipliers = True
    if steered:
        first = {
            "np": "the multinomial model, every soft bound loose (class offsets then meet the "
            "bounds on predictions)",
            "fair": "the surrogate (soft rates) at the bound itself",
        }
        _say(est.verbose, f"solve 1: {first[context['kind']]}")
    runs = run_seeds(problem, seeds, kwargs, est.n_jobs)
    best = _select(runs)
    results = [runs[best]]
    passes = float(sum(r.n_data_passes for r in runs))
    x, chosen = results[0].x, results[0]
    offsets, moved, x_const = np.zeros(K), None, None
    if steered:
        if context["kind"] == "np":
            # One re-solve, where predict misses a bound: the soft bound at the soft error
            # reached less the excess (a cost-sensitive model); the offsets then meet it.
            band, x_const, rounds = 0.1 * min(context["bounds"].values()), None, 2
        else:
            band, x_const = est.bound_tol, _null_point(problem, codes, sw, K)
            rounds = _MAX_ROUNDS
        x, results, chosen, passes, moved = _steer_soft_bounds(
            est, problem, results, kwargs, [seeds[best]], passes, x_const, band, base, rounds
        )
    problem.release_triangles()  # (no Hessian after the solves)
    scores = problem.scores(x)
    if x_const is not None:
        x, scores, below = at_least_constant(problem, x, scores, x_const, base)
        moved = below or moved
    if context["kind"] == "np":
        found = _np_offsets(problem, scores, sw, context["bounds"])
        # None: no offsets meet the bounds together; the solve's model is kept, and the
        # fit says that the bound is not met.
        offsets = found if found is not None else offsets
        scores = scores + offsets
    passes += 1.0  # the training report below reads every row once more
    objective = float(chosen.objective)
    if x is not chosen.x:  # a point between solves: its own loss, a read of the rows more
        objective = problem.objective_value(x, slice(None)) + problem.h.value(x)
        passes += 1.0
    coef, intercept = problem.coef(x)
    est.classes_ = classes
    set_solution(
        est, coef.copy(), intercept + offsets, chosen, results, _joined_history(results),
        runs, seeds, best,
    )  # fmt: skip
    est.class_offsets_ = offsets
    if hasattr(est, "max_class_error"):
        est.threshold_ = 0.0  # the class offsets are in intercept_
    # (With the classes known: the rows the new-rows check will predict after the fit.)
    est.n_data_passes_ = float(passes + rows_to_predict(est, fitting) / len(sw))
    est.n_samples_fit_ = int(fitting.X.shape[0])
    est.objective_ = objective
    fitting.notes["scores"] = scores
    return chosen, moved
