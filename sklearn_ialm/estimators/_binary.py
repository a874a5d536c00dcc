"""Two classes: the estimator's own problem, steered to its bound on predictions.

The class model of a fit on two classes (:class:`Binary`), which the steps of
:mod:`._steps` consult: the labels (``0``/``1``, ``classes_[1]`` the positive class, see
``pos_label``) and their weights, the problem the estimator builds (its hook
``_build_problem``, on the rows of the data source), the start (the previous fit or the null
model), the solves of every seed and the steering to the bound on predictions (the hooks
``_steers_hard_rates`` and ``_steer``), the report on the training rows (the hook
``_constraint_report``) and the verdict (``bound_met_``, ``converged_``, the words of
:mod:`._verdict`).
"""

from __future__ import annotations

import contextlib

import numpy as np
from scipy.special import expit, log_expit
from sklearn.metrics import roc_auc_score
from sklearn.utils.extmath import safe_sparse_dot

from . import _solve as solving  # every run through _solve.py's _solve: one seam
from ._inputs import _label
from ._solve import (
    _joined_history,
    _null_start,
    _select,
    run_seeds,
    set_solution,
    solver_settings,
    spawn_seeds,
)
from ._verdict import warn_if_not_converged

__all__ = ["Binary"]


class Binary:
    """The steps' model of two classes (see the module docstring)."""

    name = "binary"

    def limits(self):
        return contextlib.nullcontext()

    def labels(self, est, y):
        return est._check_target(y)

    def weights(self, est, sample_weight, X, y, labels, classes):
        return est._sample_weights(sample_weight, X, y, labels, classes)

    def pose(self, est, fitting, source) -> None:
        fitting.problem, fitting.context = source.binary_problem(est, fitting)

    def start(self, est, fitting, source) -> None:
        problem = fitting.problem
        x0, y0, slack0 = est._warm_start_point(problem, fitting.classes, fitting.X.shape[1])
        if x0 is None and source.null_start:
            x0 = _null_start(problem)
        fitting.start = (x0, y0, slack0)

    def solve(self, est, fitting, source) -> None:
        x0, y0, slack0 = fitting.start
        fitting.solved = solve_and_steer(
            est, fitting.problem, fitting.context, fitting.classes, x0, y0, slack0,
            in_sequence=source.in_sequence,
        )  # fmt: skip

    def report(self, est, fitting, source) -> None:
        source.binary_report(est, fitting)

    def verdict(self, est, fitting) -> tuple[bool, bool]:
        """``(bound_met_, converged_)``."""
        result, fit, _ = fitting.solved
        # The training rows' reading; a calibrated fit's verdict is its guarantee on new
        # data (the user guide's "What the bound means"), the training rows' reading beside.
        est._bound_met_rows = est._bound_met(result, fit)
        held = est._guarantee_holds()
        met = est._bound_met_rows if held is None else held
        if fit is None:
            converged = bool(result.converged)
        else:
            # A model moved from the solve nearest the bound towards the constant model (or
            # its threshold moved) is the optimum of no problem posed: not converged.
            moved = fit.toward_constant or fit.threshold_moved
            converged = fit.converged and met and not moved
        if est._constant_fallback is not None:
            converged = False
        return met, converged

    def tell(self, est, fitting) -> None:
        result, fit, _ = fitting.solved
        refit = fitting.notes.get("refit")
        warn_if_not_converged(est, result, fitting.context, fit, refit=refit)


def solve_and_steer(est, problem, context, classes, x0, y0, slack0, in_sequence=False):
    """Solve ``problem`` (every seed, then the steering's further solves) and set the
    fitted attributes of the solution; ``(result, fit, data passes)``. The seeds run
    through joblib, or one after the other ``in_sequence`` (on dask: each already keeps the
    cluster busy)."""
    seeds = spawn_seeds(est.random_state, est.n_seeds)
    solver_kwargs = solver_settings(est, problem, x0=x0, y0=y0, slack0=slack0)
    first = {}

    def solve(pb, rnd, warm, budget):
        """Round 0: every seed, the best kept; later rounds warm-start the chosen seed."""
        kwargs = dict(solver_kwargs, max_passes=budget)
        if rnd == 0:
            results = run_seeds(pb, seeds, kwargs, est.n_jobs, in_sequence)
            first.update(results=results, best=_select(results))
            first["last"] = results[first["best"]]
            return first["last"]
        kwargs.update(x0=warm[0], y0=warm[1], slack0=warm[2])
        finished = first["last"].finish_history
        if (
            est.preset == "default"
            and pb.n_constraints
            and finished is not None
            and len(finished["beta"])
        ):
            # The multipliers are a finished solve's at a nearby bound: no search, and
            # the finish goes on at the penalty it ended with. (Without constraints, e.g.
            # Neyman-Pearson's reweighted fits, the run may start on a sample of the rows:
            # its point is the new weights' optimum, where the last solve's is not.)
            kwargs.update(search=False, beta0=float(finished["beta"][0]))
        first["last"] = solving._solve(pb, [seeds[first["best"]], rnd], kwargs)
        return first["last"]

    if est._steers_hard_rates(problem):
        fit = est._steer(problem, solve, context, float(est.max_passes))
        result, x, n_passes = fit.result, fit.x, fit.n_data_passes
    else:
        result = solve(problem, 0, None, float(est.max_passes))
        fit, x, n_passes = None, result.x, result.n_data_passes
    results = fit.results if fit is not None else [result]
    history = _joined_history(fit.results) if fit is not None else result.history
    coef, intercept = problem.coef(x)
    if fit is not None:
        # Its loss is read from the report's training scores (no pass more), where the
        # steering or the report moved the point off the chosen solve's; the penalty here.
        penalty = float(problem.h.value(problem.point(coef, intercept)))
        fit.objective_terms = (problem.loss, penalty, x is not result.x)
    est.classes_ = classes
    runs, best = first["results"], first["best"]
    set_solution(
        est, coef.reshape(1, -1).copy(), np.array([intercept]), result, results, history,
        runs, seeds, best,
    )  # fmt: skip
    return result, fit, n_passes


def training_report(est, X, y01, sample_weight, context, fit):
    """The rates of the model on its training rows (soft and hard), after its intercept
    is moved off ties and the constant model is weighed against it; returns its hard
    predictions of ``X`` where they are ``predict``'s (its scores unmoved), else None."""
    sw = sample_weight
    intercept = est.intercept_
    own = est._score(X)
    scores = _away_from_ties(est, own, y01, sw, context)
    scores = _at_least_constant(est, scores, y01, sw, context)
    _published_objective(est, scores, y01, sw, fit, moved=est.intercept_ is not intercept)
    threshold = est._decision_threshold(scores, y01, sw)
    est.constraint_values_ = est._constraint_report(expit(scores), y01, sw, context)
    predicted = scores > threshold
    est.hard_constraint_values_ = est._constraint_report(predicted.astype(float), y01, sw, context)
    if isinstance(context, dict):
        # One class for every row, judged at the threshold predict uses (the steering
        # judged its solve at 0; the umbrella's threshold is set after it).
        one_class = bool(predicted.all() or not predicted.any())
        context.update(steering=fit, scores=scores, y01=y01, weights=sw, one_class=one_class)
        context["chance"] = _below_chance(est, scores, predicted, y01, sw, one_class)
        if fit is not None and fit.nearest is not None:
            context["nearest"] = _nearest_solve(est, X, fit.nearest, y01, sw, context)
    est._set_report_attributes(context)
    # ``scores > threshold`` is ``predict``'s ``score - threshold_ > 0`` (a difference of
    # floats is 0 only where they are equal, and keeps its sign): where the scores are the
    # model's own, unmoved, these are its predictions of X, bit for bit.
    return predicted if scores is own else None


def _published_objective(est, scores, y01, sample_weight, fit, moved) -> None:
    """Sets ``objective_`` to the objective of the model returned, from its training
    ``scores``, where it is not the chosen solve's point: the steering placed it between
    solves, moved a threshold, a group's cut or towards the constant model, or the report
    moved its intercept off ties (``moved``) or returned the constant model. The weighted
    mean loss of every row plus the penalty of ``coef_`` (none for the constant model,
    whose ``coef_`` is zero; the intercept is free)."""
    if fit is None or fit.objective_terms is None:
        return  # no steering: the solve's point, whose objective stands
    loss, penalty, steered = fit.objective_terms
    constant = est._constant_fallback is not None
    if not (steered or moved or constant):
        return  # the chosen solve's point: its own objective stands (bit for bit)
    if constant:
        penalty = 0.0
    margins = np.where(y01 == 1, scores, -scores)
    est.objective_ = float(np.average(loss.value(margins), weights=sample_weight) + penalty)


def _below_chance(est, scores, predicted, y01, sw, one_class) -> str | None:
    """The sentence saying that the model does worse on its training rows than
    predicting the majority class for every row (accuracy weighted as the fit weighs the
    rows, class weights included), or ranks them no better than chance (AUC <= 0.5); None
    otherwise. The AUC (a sort of the scores) is computed only where the accuracy is
    below the majority's or the predictions are one class."""
    # Weighted sums by masks (``where=``): no n-vector of products at the fit's peak.
    positive, total = y01 == 1, float(np.sum(sw))
    if not one_class and _clearly_accurate(sw, predicted == positive, positive, total):
        return None  # (what the lines below return then, at a third of their cost)
    share = float(np.sum(sw, where=positive)) / total
    majority = max(share, 1.0 - share)
    accuracy = float(np.sum(sw, where=predicted == positive)) / total
    low = accuracy < majority - 1e-12
    if not (low or one_class) or np.ptp(scores) == 0:
        auc = None  # a constant score ranks nothing: the one-class warning says so
    else:
        auc = float(roc_auc_score(positive, scores, sample_weight=sw))
    low = low and est._judged_by_accuracy
    if not low and (auc is None or auc > 0.5):
        return None
    label = _label(est.classes_[int(share > 0.5)])
    ranks = "" if auc is None else f"; the AUC of its scores is {auc:.3f}"
    said = (
        f"Its training accuracy, {accuracy:.4f}, is below that of predicting class {label} "
        f"for every row ({majority:.4f}){ranks}"
        if low
        else f"Its scores rank the training rows no better than chance (AUC {auc:.3f})"
    )
    return (
        f"{said}: compare it with that constant model before using it (the bound may "
        "leave a linear model little room on these data)."
    )


def _clearly_accurate(sw, hits, positive, total) -> bool:
    """Whether the weighted accuracy (rows ``hits``) is above the majority class's share by
    far more than rounding, by dot products (two sums by masks took 0.011 s on 1e6 rows):
    then :func:`_below_chance` says nothing, and needs neither its exact sums nor the AUC.

    A sum of ``n`` non-negative terms, in any order, is within ``(n - 1) eps / 2`` of its
    value, relative: a share summed two ways differs by less than ``n eps``, and the margin
    ``4 n eps`` on each side covers both shares.
    """
    margin = 4.0 * len(sw) * np.finfo(float).eps
    share = float(np.dot(sw, positive)) / total
    accuracy = float(np.dot(sw, hits)) / total
    return accuracy - margin >= max(share, 1.0 - share) + margin - 1e-12


def _nearest_solve(est, X, nearest, y01, sw, context) -> dict:
    """The constrained rates (as the report computes them) and the accuracy of the
    solve nearest the bound, ``nearest = (coef, intercept)``, on the training rows."""
    coef, intercept = nearest
    predicted = np.asarray(safe_sparse_dot(X, coef)).ravel() + intercept > 0
    hard = est._constraint_report(predicted.astype(float), y01, sw, context)
    accuracy = float(np.sum(sw, where=predicted == (y01 == 1)) / np.sum(sw))
    return {"hard": hard, "accuracy": accuracy}


def _away_from_ties(est, scores, y01, sample_weight, context):
    """The training scores with no row on the decision boundary (the intercept moved).

    A row whose score is zero up to rounding (identical rows of one-hot data, at a
    boundary placed on them) is predicted by the last bit of a product, which another
    layout of ``X`` can flip, and with it a rate on the bound. The intercept moves by a
    hair to the side where the bound holds (else the more accurate one), so that
    ``predict`` and the fit's report agree on every training row.
    """
    if not (est._steers_hard_rates_after_fit(context) and est.fit_intercept):
        return scores  # (without an intercept there is nothing to move)
    size = np.abs(scores)
    big = max(1.0, float(np.max(size, initial=0.0)))
    if not np.any(size <= 1e-9 * big):
        return scores
    del size
    # ``scores + step > 0`` is ``scores > -step``: a sum rounds to 0 only where it is 0
    # (gradual underflow) and keeps its sign, so no moved copy is formed for either side.
    steps = (1e-8 * big, -1e-8 * big)
    preds = [scores > -step for step in steps]
    off = np.flatnonzero(preds[0] != preds[1])  # the ties: positive on the first side only
    reports = est._tie_reports(preds, off, y01, sample_weight, context)
    meets = [est._meets(report, context) for report in reports]
    if meets[0] != meets[1]:
        side = 0 if meets[0] else 1  # (the accuracy, second in the order, is not read)
    else:
        side = _more_accurate(preds, off, y01, sample_weight)
    est.intercept_ = est.intercept_ + steps[side]
    return scores + steps[side]


def _more_accurate(preds, tie, y01, sample_weight) -> int:
    """1 where predictions ``preds[1]`` are more accurate than ``preds[0]`` (their weighted
    averages of ``pred == (y01 == 1)`` compared; a tie, or a nan: 0), where ``preds[1]``
    differs from ``preds[0]`` only on rows ``tie``, which ``preds[0]`` predicts positive.

    Read from those rows (the ties: a few, where each average read every row), where
    their difference is far beyond rounding: each average is a sum of ``n`` non-negative
    terms over another, within ``(2 n + 1) eps / 2`` of its value, relative (each at most
    1), and the rows' own sum within ``k eps`` of the sum of their ``k`` weights; the
    margin is twice both. Else (equal accuracies, up to rounding) by the two averages,
    but where every weight is 1.
    """
    wrong_first = y01[tie] == 0  # (the first predicts each positive)
    w = np.ones(len(tie)) if sample_weight is None else sample_weight[tie]
    gain = float(np.sum(w, where=wrong_first)) - float(np.sum(w, where=~wrong_first))
    total = len(y01) if sample_weight is None else float(np.sum(sample_weight))
    eps = np.finfo(float).eps
    margin = 2.0 * ((2 * len(y01) + 2) * eps * total + len(tie) * eps * float(np.sum(w)))
    if abs(gain) > margin or sample_weight is None or np.all(sample_weight == 1.0):
        # (Weights 1: each average is a whole count, exact, over ``n``: equal counts give
        # equal averages, and the gain, exact too, decides.)
        return int(gain > 0)
    positive = y01 == 1
    accuracy = [float(np.average(p == positive, weights=sample_weight)) for p in preds]
    return int(accuracy[1] > accuracy[0])


def _at_least_constant(est, scores, y01, sample_weight, context):
    """The training scores of the model returned: the constant model instead, when it
    meets the bound and its training log-loss is below the model found's.

    A user could always have predicted the positive rate for every row (whose hard
    predictions, one class, meet every parity bound that the constant meets). The fit
    is judged by its own objective, the log-loss, never by accuracy: on imbalanced
    labels a model at the optimum (``LogisticRegression``'s own, for a bound that does
    not bind) is often less accurate than the majority class and far better in
    log-loss and ranking. A fit at the optimum of the soft problem cannot lose to the
    constant (which is feasible); one that does failed, and the constant is returned:
    ``coef_`` zero, ``intercept_`` the log-odds of the positive rate (0 without an
    intercept), ``converged_`` False, and the fit says so
    (:func:`._verdict.warn_if_not_converged`).
    """
    est._constant_fallback = None
    if not est._steers_hard_rates_after_fit(context):
        return scores
    positive = y01 == 1
    rate = float(np.average(positive, weights=sample_weight))
    if not 0.0 < rate < 1.0:
        return scores
    if est.fit_intercept:
        logit = float(np.log(rate / (1.0 - rate)))
        constant = float(-(rate * np.log(rate) + (1.0 - rate) * np.log1p(-rate)))
    else:
        # Without an intercept the only constant score is 0: p = 1/2 for every row,
        # predicting classes_[0] (a score of 0 is not positive).
        logit, constant = 0.0, float(np.log(2.0))
    if _clearly_below(scores, positive, sample_weight, constant):
        return scores  # (what the tests below return too, at less than half their cost)
    label = int(logit > 0)
    pred = np.full(len(scores), float(label))
    if not est._meets(est._constraint_report(pred, y01, sample_weight, context), context):
        return scores
    signed = np.where(positive, scores, -scores)
    found = float(-np.average(log_expit(signed), weights=sample_weight))
    # (Within rounding of the constant's: the model found is that constant, e.g. the
    # zero model without an intercept, whose average of log 2 can come out 1 ulp above.)
    if found <= constant * (1.0 + 1e-12):
        return scores
    est.coef_ = np.zeros_like(est.coef_)
    est.intercept_ = np.array([logit])
    est._constant_fallback = (label, constant, found)
    return np.full(len(scores), logit)


#: The relative margin below the constant's log-loss that :func:`_clearly_below` asks of
#: its estimate: far above the few units in the last place that it is off by.
_CLEAR = 1e-9


def _clearly_below(scores, positive, sample_weight, constant) -> bool:
    """Whether the training log-loss of ``scores`` is below ``constant`` by far more than
    rounding, by numpy's vectorised ``log1p(exp(-|m|)) + max(-m, 0)`` of each margin ``m``
    (a few units in the last place from scipy's ``log_expit``: at most 3 on 1e6 normal
    margins of scales 1 to 300; 0.012 s where ``log_expit`` took 0.045 s): then the
    constant model is not returned, whether or not it meets the bound, and neither its
    report nor the exact log-loss is needed."""
    loss = np.where(positive, -scores, scores)  # minus each margin, in place below
    term = np.abs(loss)
    np.negative(term, out=term)
    np.exp(term, out=term)
    np.log1p(term, out=term)
    np.maximum(loss, 0.0, out=loss)
    loss += term
    del term
    return bool(np.average(loss, weights=sample_weight) <= constant * (1.0 - _CLEAR))
