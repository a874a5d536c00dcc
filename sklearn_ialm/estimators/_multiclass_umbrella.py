"""The umbrella guarantee of a multi-class Neyman-Pearson fit: per bounded class, a union bound.

:class:`~sklearn_ialm.NeymanPearsonClassifier` with ``max_class_error={k: alpha_k, ...}`` on
``K > 2`` classes and ``calibration="umbrella"`` holds out ``calibration_size`` of the rows of
each bounded class ``k`` (stratified, seeded as the binary hold-out), fits the multinomial
model on the other rows, and replaces the arg-max by a *claim* rule set on the held-out rows.

The rule. With the fitted scores ``s_j(x)`` (class offsets included), the bounded classes
``b_1, ..., b_B`` (in the order of ``max_class_error``'s keys) claim rows in turn: ``b_i``
claims the rows not claimed by ``b_1, ..., b_{i-1}`` where it scores at least every bounded
class after it and its margin over the unbounded classes,
``m_{b_i}(x) = s_{b_i}(x) - max_{j unbounded} s_j(x)``, is at least its threshold
``c_{b_i} <= 0``. :meth:`predict` gives a claimed row its claimant and any other row its
arg-max. A bounded class thus takes rows from the unbounded classes only (between bounded
classes the scores decide, as in the arg-max), and ``c_k <= 0`` lets it claim every free row
where it is the arg-max.

Why the guarantee holds. Given the training rows and the labels, the held-out rows of
different classes are independent, those of class ``k`` drawn from ``P(x | y = k)``. Let
``e_k(x) = -m_k(x)`` on the rows class ``k`` may claim (not claimed before it, not outscored
by a later bounded class), ``+inf`` on the others: a function fixed by the training rows and
by the earlier thresholds, that is by held-out rows of *other* classes only. A class-``k``
row is predicted another class at most when it is not claimed by ``k``, i.e. when
``e_k(x) > -c_k``. With ``T_k = e_(r_k)``, the order statistic of the held-out class-``k``
values that the umbrella rule picks at ``alpha_k`` and ``delta / B``, and ``-c_k >= T_k``,
the error of class ``k`` on new rows is at most ``P(e_k(x) > T_k)``, which exceeds
``alpha_k`` with probability at most ``v(r_k) <= delta / B`` (Tong, Feng & Li 2018, for any
distribution of ``e_k``, atoms included; conditionally on the earlier thresholds, hence also
unconditionally). Summing over the bounded classes (a union bound),

``P(some bounded class k has error on new rows > alpha_k) <= sum_k v(r_k) <= delta``.

The claims interact in one direction only, and that order is what makes each class's rule a
fixed function when its threshold is set. (Offsets of an arg-max set on every class's
held-out rows together would make each class's score depend on its own held-out rows through
the others' offsets, and the order statistic would lose its exact law.) When ``T_k`` is
``+inf`` (more than ``n_k - r_k`` held-out class-``k`` rows claimed before it or outscored by
a later bounded class) the class cannot be certified: it claims all its free held-out rows,
the fit warns and ``class_certified_[k]`` is False; the bound above then holds for the
certified classes (``violation_bound_`` sums their ``v(r_k)``).
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from .._warnings import warn
from ._class_params import _class_bounds, _python
from ._solve import calibration_seed
from ._steps import InMemory, steps
from ._umbrella import umbrella_min_calibration_size, umbrella_rank

__all__ = ["fit_multiclass_umbrella", "predict_codes"]

#: Fitted attributes of a multi-class umbrella fit only.
UMBRELLA_ONLY = (
    "claim_order_", "claim_thresholds_", "violation_bounds_", "calibration_ranks_",
    "calibration_class_errors_", "class_certified_",
)  # fmt: skip


def _claim_scores(scores: np.ndarray, order) -> tuple[np.ndarray, np.ndarray]:
    """Per bounded class (columns in ``order``): its margin over the unbounded classes
    (``+inf`` when every class is bounded) and whether it scores at least every bounded class
    after it (the rows it may claim)."""
    K = scores.shape[1]
    unbounded = [j for j in range(K) if j not in order]
    if unbounded:
        best_unbounded = scores[:, unbounded].max(axis=1)
    else:
        best_unbounded = np.full(scores.shape[0], -np.inf)
    margin = np.empty((scores.shape[0], len(order)))
    eligible = np.empty((scores.shape[0], len(order)), dtype=bool)
    for i, k in enumerate(order):
        margin[:, i] = scores[:, k] - best_unbounded
        later = list(order[i + 1 :])
        eligible[:, i] = (
            scores[:, k] >= scores[:, later].max(axis=1) if later else np.ones(len(scores), bool)
        )
    return margin, eligible


def claims(scores: np.ndarray, order, thresholds) -> np.ndarray:
    """The class code claiming each row (``-1``: none): the bounded classes in ``order``, each
    claiming the free rows where it scores at least every bounded class after it and its
    margin over the unbounded classes reaches its threshold."""
    margin, eligible = _claim_scores(scores, order)
    out = np.full(scores.shape[0], -1, dtype=np.intp)
    for i, (k, c) in enumerate(zip(order, thresholds, strict=True)):
        out[(out < 0) & eligible[:, i] & (margin[:, i] >= c)] = k
    return out


def predict_codes(scores: np.ndarray, order, thresholds) -> np.ndarray:
    """The claim rule's class codes: the claimant, else the arg-max."""
    out = claims(scores, order, thresholds)
    free = out < 0
    out[free] = np.argmax(scores[free], axis=1)
    return out


def _rounding_margin(est, X) -> float:
    """Bound on how much a margin computed twice (in other batches) may differ: each of its
    two scores is within ``gamma_(d+1) (|x|.|w| + |b|)`` of exact (Higham, eq. 3.5)."""
    n_terms = est.coef_.shape[1] + 1
    u = np.finfo(np.float64).eps / 2
    gamma = n_terms * u / (1 - n_terms * u)
    magnitude = np.asarray(abs(X) @ np.abs(est.coef_).T) + np.abs(est.intercept_)
    return float(4 * gamma * magnitude.max()) if magnitude.size else 0.0


def _held_out(est, codes, sw, bounds, delta_each, classes):
    """Rows held out (sorted): per bounded class, ``calibration_size`` of its rows of nonzero
    weight, drawn with the binary hold-out's seed; a ``ValueError`` per class when too few."""
    rng = np.random.default_rng(calibration_seed(est.random_state))
    size, picked = est.calibration_size, []
    for k, alpha in bounds.items():
        rows = np.flatnonzero((codes == k) & (sw > 0))
        n = int(size) if isinstance(size, Integral) else math.ceil(float(size) * rows.size)
        label = _python(classes[k])
        what = (
            f"calibration_size={size!r} holds out {n} of the {rows.size} rows of class "
            f"{label!r} (with nonzero weight)"
        )
        if n >= rows.size:
            raise ValueError(f"{what}, which leaves none to train on; choose a smaller one.")
        needed = umbrella_min_calibration_size(alpha, delta_each)
        if n < needed:
            more = f"calibration_size >= {needed}"
            if not isinstance(size, Integral):
                more += (
                    f" as an int, or at least {math.ceil(needed / float(size))} rows of "
                    f"class {label!r} at calibration_size={size!r}"
                )
            raise ValueError(
                f"Too few held-out rows of class {label!r} for the umbrella rule: {what}, but "
                f"max_class_error[{label!r}]={alpha!r} and delta={est.delta!r} shared by "
                f"{len(bounds)} bounded classes (delta / {len(bounds)} = {delta_each:.4g} "
                f"each) need at least {needed} (the smallest n with (1 - alpha)^n <= "
                f"delta / {len(bounds)}). Hold out more ({more}), or raise the bound or delta."
            )
        picked.append(rng.choice(rows, size=n, replace=False))
    return np.sort(np.concatenate(picked))


def _calibrate(est, X_held, y_held, bounds, delta_each):
    """Set the claim thresholds in order on the held-out rows (see the module docstring)."""
    scores = est._score(X_held)
    order = list(bounds)
    margin, eligible = _claim_scores(scores, order)
    eps = _rounding_margin(est, X_held)
    claimed = np.full(len(y_held), -1, dtype=np.intp)
    thresholds = []
    out = {name: {} for name in UMBRELLA_ONLY[2:]}
    uncertified = []
    for i, k in enumerate(order):
        label = _python(est.classes_[k])
        rows = y_held == k
        # e_k: +inf where class k cannot claim the row (claimed before, or a later bounded
        # class scores higher); a class-k row is an error exactly when e_k > -c_k.
        free = (claimed[rows] < 0) & eligible[rows, i]
        e = np.where(free, -margin[rows, i], np.inf)
        rank, bound = umbrella_rank(e.size, bounds[k], delta_each)
        t = float(np.partition(e, rank - 1)[rank - 1])
        certified = t < np.inf
        if not certified:
            finite = e[e < np.inf]
            t = float(finite.max()) if finite.size else 0.0
            uncertified.append(label)
        # Never above 0: a bounded class claims every free row where it is the arg-max.
        c = min(0.0, -t - eps)
        claimed[(claimed < 0) & eligible[:, i] & (margin[:, i] >= c)] = k
        thresholds.append(c)
        out["violation_bounds_"][label] = float(bound)
        out["calibration_ranks_"][label] = int(rank)
        out["class_certified_"][label] = certified
    pred = predict_codes(scores, order, thresholds)
    for k in order:
        rows = y_held == k
        out["calibration_class_errors_"][_python(est.classes_[k])] = float(
            np.mean(pred[rows] != k)
        )
    est.claim_order_ = [_python(est.classes_[k]) for k in order]
    est.claim_thresholds_ = dict(zip(est.claim_order_, thresholds, strict=True))
    for name, value in out.items():
        setattr(est, name, value)
    est.n_calibration_ = {
        _python(est.classes_[k]): int(np.count_nonzero(y_held == k)) for k in order
    }
    est.violation_bound_ = float(
        sum(v for lab, v in est.violation_bounds_.items() if est.class_certified_[lab])
    )
    if uncertified:
        warn(
            f"The umbrella rule cannot certify class(es) {uncertified}: more of their "
            "held-out rows than the bound allows are claimed by a bounded class before them "
            "or outscored by one after them (in max_class_error's order, "
            f"{est.claim_order_}); the guarantee holds for the other bounded classes only "
            "(class_certified_). Loosen the bounds, or hold out more rows.",
            UserWarning,
        )


def fit_multiclass_umbrella(est, X, y, sample_weight):
    """Fit ``est`` (a working copy) on ``K > 2`` classes with the umbrella hold-out."""
    est._validate_params()
    if est.max_class_error is None:
        raise ValueError(
            "Only binary classification is supported with calibration='umbrella' and "
            "max_class_error=None: on more than two classes the umbrella rule certifies the "
            "class errors of max_class_error; set max_class_error={class label: alpha, ...}."
        )
    fitting = InMemory(multiclass=True).validate(est, X, y, sample_weight, {}, guarantee=True)
    X, y, codes, classes = fitting.X, fitting.y, fitting.labels, fitting.classes
    feature_names = getattr(est, "feature_names_in_", None)
    bounds = _class_bounds(est, classes)
    delta_each = float(est.delta) / len(bounds)
    # The user's weights (checked), to train on with the held-out rows zeroed: the steps
    # apply the class weights and the scale of the weights themselves.
    sw = est._checked_sample_weight(sample_weight, X)
    held_out = _held_out(est, codes, sw, bounds, delta_each, classes)
    train_weight = sw.copy()
    train_weight[held_out] = 0.0  # a row of weight 0 is a row removed for the fit
    judge = steps(est, X, y, train_weight, {}, judge=False)
    if feature_names is not None:
        est.feature_names_in_ = feature_names
    _calibrate(est, X[held_out], codes[held_out], bounds, delta_each)
    est.calibration_indices_ = held_out
    _claim_rule_errors(est, X, codes, train_weight, bounds)
    judge()  # bound_met_, converged_ and their warning, on the rule predict uses
    if not np.all(sw[held_out] == sw[held_out][0]):
        warn(
            "sample_weight differs among the held-out rows: the umbrella rule counts each "
            "held-out row once, so the guarantee is for the unweighted population of each "
            "bounded class.",
            UserWarning,
        )
    return est


def _claim_rule_errors(est, X, codes, train_weight, bounds):
    """The training rows' class errors of the claim rule (the model predict uses)."""
    keep = train_weight > 0
    codes, w = codes[keep], train_weight[keep]
    order = list(bounds)  # the class codes of claim_order_ (see _calibrate)
    pred = predict_codes(est._score(X[keep]), order, list(est.claim_thresholds_.values()))
    errors = np.array([
        np.average(pred[codes == k] != k, weights=w[codes == k]) if np.any(codes == k)
        else np.nan
        for k in range(len(est.classes_))
    ])  # fmt: skip
    est.train_class_errors_ = errors
    est.hard_constraint_values_ = errors[list(bounds)]
    alphas = np.array(list(bounds.values()))
    est.bound_met_ = bool(np.all(est.hard_constraint_values_ <= alphas + 1e-12))
