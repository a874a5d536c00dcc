"""What a fit on more than two classes reports: its rates on the training rows per class
(:func:`_class_rates`) and the warning of a fit that did not converge.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning

from .._warnings import warn
from ._class_params import _python
from ._verdict import _checked_bound_text


def _per_class(values, K, names, context):
    """Constraint values (bound units, ``c + bound``) reduced to one per class: the largest
    gap (fairness) or the class error (Neyman-Pearson, one per bounded class)."""
    if context["kind"] == "np":
        return values
    bound = context["bound"]
    out = np.zeros(K)
    for v, name in zip(values, names, strict=True):
        c = 0 if name.startswith("error_rate") else int(name.split("[")[1].split("]")[0])
        out[c] = max(out[c], v + bound)
    return out if not names[0].startswith("error_rate") else out[:1]


def _class_rates(est, problem, scores, codes, sw, names, context):
    K = len(est.classes_)
    soft = np.exp(log_softmax(scores, axis=1))
    hard = problem.hard_predictions(scores)
    if context["kind"] == "np":
        bounds = context["bounds"]

        def errors(pred, which):
            return np.array([
                1.0 - np.average(pred[codes == k, k], weights=sw[codes == k]) for k in which
            ])  # fmt: skip

        est.constraint_values_ = errors(soft, bounds)
        est.hard_constraint_values_ = errors(hard, bounds)
        # Every class's error on the training predictions, bounded or not.
        est.train_class_errors_ = errors(hard, range(K))
        est.max_class_error_ = {_python(est.classes_[k]): a for k, a in bounds.items()}
        return
    if not names:
        est.constraint_values_ = est.hard_constraint_values_ = np.array([], dtype=float)
    else:
        est.constraint_values_ = _per_class(problem.rate_constraints(soft), K, names, context)
        est.hard_constraint_values_ = _per_class(problem.rate_constraints(hard), K, names, context)
    est.bound_ = context["bound"]
    est.groups_ = context["groups"]
    labels = context["labels"]
    est.protected_groups_ = (
        context["groups"][context["protected"]] if labels is not None else np.array([])
    )
    excluded = context.get("excluded", np.array([], dtype=np.intp))
    est.excluded_groups_ = labels[excluded] if labels is not None else np.array([])


def _warn_not_converged(est, result, moved, context=None, refit=None):
    """The account of a multi-class fit that did not converge: what stopped it, what it
    reached, how the model was moved where no solve met the bound (``moved``, see
    ``_multiclass_steering._moved``), and a fairness bound that works, checked by refitting
    at it (``refit``, :func:`._verdict._checked_bound`)."""
    met = est.bound_met_
    name = type(est).__name__
    reason = result.message
    guarantee = est._guarantee_holds() is not None  # the verdict is the guarantee's
    if result.converged:  # the solver's message ("converged: ...") is not the fit's verdict
        reason = (
            "its solves ended above the constant model's training objective"
            if moved is not None and moved[0] == "constant objective"
            else "no solve met the bound on predictions"
            if moved is not None
            else "the guarantee on new data does not hold"
            if guarantee
            else "the solver converged but the bound on predictions is not met"
        )
    parts = [f"{name} did not converge on {len(est.classes_)} classes: {reason}"]
    parts.append(
        f"after {est.n_data_passes_:.4g} data passes (max_passes={est.max_passes:g}, "
        f"{est.n_rounds_} solves); primal residual {result.primal_residual:.3g}, dual "
        f"residual {result.dual_residual:.3g} (tol={est.tol:g})."
    )
    parts.append(
        f"Rates on the training predictions: {np.round(est.hard_constraint_values_, 4).tolist()}"
        f", soft {np.round(est.constraint_values_, 4).tolist()}."
    )
    if moved is not None:
        parts.append(_moved_text(moved, met))
    # (Read before the advice check below adds its refits' passes to n_data_passes_.)
    budget_spent = est.n_data_passes_ >= est.max_passes - 1
    if not met and guarantee:
        parts.append(
            "The umbrella rule could not certify every bounded class (class_certified_): "
            "the guarantee holds for the certified ones only."
        )
    elif not met:
        parts.append(
            "The bound is NOT met on the training predictions; check hard_constraint_values_ "
            "before using this model."
        )
        if refit is not None and context is not None and context.get("kind") == "fair":
            # (4 classes, 4 groups of 62-249 rows, error-rate parity 0.02: the warning named
            # no bound, where 0.03 converges.)
            parts.append(_checked_bound_text(est, context, refit, est.hard_constraint_values_))
    if budget_spent:
        parts.append(_more_passes(est))
    warn(" ".join(parts), ConvergenceWarning)


def _moved_text(moved, met) -> str:
    """How a model was moved where no solve met the bound on predictions, or where the
    steering's model ended above the constant model's objective."""
    how, value = moved
    if how == "constant objective":
        t, found, constant, returned = value
        where = (
            "the constant model itself"
            if t >= 1.0
            else "the point of least objective that meets the bound on the segment between "
            f"them, {t:.0%} of the way to the constant model (objective {returned:.4f})"
        )
        return (
            f"The steering's model has a training objective of {found:.4f}, above the "
            f"constant model's {constant:.4f} (every row predicted the majority class, which "
            f"meets the bound): the model returned is {where}. The bound may leave a linear "
            "model little room on these data: loosen it."
        )
    if how == "constant":
        what = f"the model was moved towards the constant model ({value:.0%} of the way)"
    else:
        what = (
            "the class offsets of the solve nearest it were moved by "
            f"{np.round(value, 4).tolist()} (added to intercept_)"
        )
    held = ": the bound holds at a cost in accuracy." if met else ", and still misses it."
    return f"No solve met the bound on predictions, so {what}{held}"


def _more_passes(est) -> str:
    """The remedy of a fit whose budget ran out: a ``max_passes`` with room for two more
    solves of the steering at the pace of its solves so far (digits, the group tied to the
    label, per-class bound 0.01: 302 passes at accuracy 0.17, converged in 396)."""
    per_solve = est.n_data_passes_ / max(est.n_rounds_, 1)
    advised = 100 * int(np.ceil((est.n_data_passes_ + 2 * per_solve) / 100))
    return (
        f"The budget ran out: raise max_passes (now {est.max_passes:g}), to about {advised} "
        f"(room for two more solves of about {per_solve:.0f} passes each, the pace of its "
        f"{est.n_rounds_} so far)."
    )
