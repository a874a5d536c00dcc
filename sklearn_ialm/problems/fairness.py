"""The fairness-constrained model of the paper (Section 5.1) and its relatives.

``min_x mean_D loss(b a.x)  s.t.  fairness constraints on the soft positive prediction
p(a) = sigmoid(a.x)`` over a (possibly unlabelled) set ``S``. Every constraint is linear in
the per-row predictions, ``c_k = mean_S W[j, k] p_j + offset_k <= 0``, so that the same
``W`` and ``offset`` evaluated at hard predictions ``1[a.x > 0]`` give the constraint on the
classifier itself.

The paper's constraint and a one-sided relative:

``positive_share`` (the paper's, eq. (fair))
    ``sum_{S_g} p >= bound * sum_S p``: the group receives at least a share ``bound`` of all
    positive predictions. Written as the average over ``S`` of
    ``(bound - 1[j in S_g]) p_j <= 0``, which has the paper's feasible set.
``disparate_impact``
    ``mean_{S_g} p >= bound * mean_S p``: each protected group's selection rate is at least
    ``bound`` times the overall one (the four-fifths rule at ``bound = 0.8``). This keeps its
    meaning from earlier releases; it is one-sided and relative to the overall rate, so it
    is not fairlearn's ``demographic_parity_ratio`` (that is ``demographic_parity`` with
    ``form="ratio"``).

The parity kinds match fairlearn's metrics (``method="between_groups"``): one group-level
rate per group, and the metric is the largest gap (``form="difference"``: largest minus
smallest rate, at most ``bound``) or the smallest ratio (``form="ratio"``: smallest over
largest rate, at least ``bound``) between groups:

``demographic_parity``
    selection rate ``P[pred = 1 | g]``: fairlearn's ``demographic_parity_difference`` and
    ``demographic_parity_ratio``.
``true_positive_rate_parity`` (equal opportunity)
    ``P[pred = 1 | g, y = 1]``: ``equal_opportunity_difference`` / ``_ratio``.
``false_positive_rate_parity``
    ``P[pred = 1 | g, y = 0]``: ``false_positive_rate_difference`` / ``_ratio``.
``equalized_odds``
    both of the above, each within the bound: ``equalized_odds_difference`` / ``_ratio``.
``error_rate_parity``
    ``P[pred != y | g]``: ``zero_one_loss_difference`` / ``_ratio``.

Rates are weighted by the constraint rows' sample weights. With two or three groups (or some
groups protected), "largest gap at most ``bound``" is the set of pairwise inequalities
``rate_a - rate_b <= bound`` for every ordered pair of groups ``(a, b)``, and "smallest ratio
at least ``bound``" is ``bound * rate_b - rate_a <= 0`` for every ordered pair, so ``k``
groups give ``k (k - 1)`` constraints (twice that for ``equalized_odds``, one set per rate).
With four or more groups, all constrained, each rate is a band of free level instead:
``t <= rate_g <= t + bound`` (or ``bound t <= rate_g <= t``), ``2 k`` constraints and one
level ``t`` per rate, which the solver minimises over. Difference constraints are in units
of the rates (the bound's units); ratio constraints in units of ``rate_b * (bound - rate_a /
rate_b)``, a rate times the ratio's shortfall. With ``protected`` groups given, only the pairs that
involve at least one protected group are constrained: with all groups protected (the
default), or with two groups and one of them protected, that is fairlearn's metric.

The error rate is linear in the prediction as well: ``1[pred != y] = y + (1 - 2 y) pred``.
So for every kind and form, the constraints are all ``<= 0`` at hard predictions exactly
when :func:`fairness_metric` of those predictions meets the bound, with one exception: a
ratio is undefined (fairlearn returns ``nan``) when every rate involved is zero, while the
constraints ``0 <= 0`` hold.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

from .linear import LinearProblem
from .losses import LOSSES, TruncatedLogistic

__all__ = ["CONSTRAINTS", "FORMS", "fairness_metric", "fairness_problem"]

# The group-level rates behind each parity kind, in the order their constraints appear.
_PARITY_RATES = {
    "demographic_parity": ("selection_rate",),
    "true_positive_rate_parity": ("true_positive_rate",),
    "false_positive_rate_parity": ("false_positive_rate",),
    "equalized_odds": ("true_positive_rate", "false_positive_rate"),
    "error_rate_parity": ("error_rate",),
}
_SHORT = {"true_positive_rate": "tpr", "false_positive_rate": "fpr"}
CONSTRAINTS = ("positive_share", "disparate_impact", *_PARITY_RATES)
FORMS = ("difference", "ratio")


def _check_form(kind, form):
    """The form of ``kind``: parity kinds take both, the others only their own."""
    if kind not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {kind!r}.")
    if kind in _PARITY_RATES:
        if form is None:
            return "difference"
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS} or None, got {form!r}.")
        return form
    own = "ratio" if kind == "disparate_impact" else None
    if form is not None and form != own:
        allowed = "None or 'ratio'" if own else "None"
        raise ValueError(f"form must be {allowed} for constraint={kind!r}, got {form!r}.")
    return own


def _rate_terms(rate, y):
    """Rows a rate averages over (``None``: all), and ``(c, s)``: a row counts ``c + s pred``."""
    if rate == "selection_rate":
        return None, 0.0, 1.0
    if rate == "true_positive_rate":
        return y, 0.0, 1.0
    if rate == "false_positive_rate":
        return ~y, 0.0, 1.0
    # error_rate: 1[pred != y] = y + (1 - 2 y) pred
    return None, y.astype(float), 1.0 - 2.0 * y


def _is_zero(c) -> bool:
    """Whether a rate's constant term ``c`` (see :func:`_rate_terms`) is the scalar 0."""
    return isinstance(c, float) and c == 0.0


def _is_one(s) -> bool:
    """Whether a rate's slope ``s`` is the scalar 1 (a product by it changes nothing)."""
    return isinstance(s, float) and s == 1.0


def _label(value):
    """A numpy scalar as the Python value, for error messages (``'a'``, not ``np.str_('a')``)."""
    return value.item() if isinstance(value, np.generic) else value


def _binary(name, values, n):
    """``values`` as a bool array of length ``n`` (True for 1); other labels are an error."""
    values = np.asarray(values)
    if values.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {values.shape}.")
    bad = ~np.isin(values, (0, 1))
    if bad.any():
        first = _label(values[bad][0])
        raise ValueError(f"{name} must hold 0/1 labels (1 is the positive class), got {first!r}.")
    return values == 1


def unique_codes(groups):
    """``(labels, codes)``: the sorted distinct values of ``groups`` and each row's position
    among them, as ``np.unique(groups, return_inverse=True)``.

    Small non-negative integers (0/1 labels, the estimators' own group codes) are counted in
    one pass; other values are sorted (``np.unique``: on 1e6 rows a sort took 0.02-0.08 s,
    and a fit asked for several). Where every value from the smallest to the largest is
    present, the codes are the values less the smallest, with no table look-up; two
    values present need no count either (the extremes are present): 0/1 labels of 1e6 rows
    took 3.7 ms, 0.4 now.
    """
    present = _present(groups)
    if present is not None:
        low, high = int(present[0]), int(present[-1])
        if len(present) == high - low + 1:
            codes = groups.astype(np.intp)  # a copy: the caller may write to its codes
            if low:
                codes -= low
            return present.astype(groups.dtype), codes
        lookup = np.zeros(high + 1, dtype=np.intp)
        lookup[present] = np.arange(len(present))
        return present.astype(groups.dtype), lookup[groups]
    labels, codes = np.unique(groups, return_inverse=True)
    return labels, codes.reshape(-1)


def _present(groups):
    """The sorted distinct values of small non-negative integers ``groups`` (none above twice
    the number of rows), counted in one pass; None for other values."""
    if groups.dtype.kind not in "iu" or not len(groups):
        return None
    low, high = int(groups.min()), int(groups.max())
    if low < 0 or high > 2 * len(groups):
        return None
    if high - low <= 1:
        return np.arange(low, high + 1)
    return np.flatnonzero(np.bincount(groups))


def distinct(values) -> np.ndarray:
    """The sorted distinct ``values``, as ``np.unique(values)``: counted for small
    non-negative integers (see :func:`unique_codes`; numpy hashed 1e6 group codes in 3 ms),
    with no codes (their copy took 40 ms on 5e6 rows, three times a fit)."""
    values = np.asarray(values)
    present = _present(values)
    return np.unique(values) if present is None else present.astype(values.dtype)


def _group_counts(rate, codes, n_groups, weights, y, pred, group_weight):
    """``(hits, total)``: the weighted counts of each group (``codes`` in ``0 .. n_groups -
    1``) whose ratio is its rate at predictions ``pred`` in {0, 1}, in one pass over the rows
    each (a mask per group read every row once per group: 0.12 s a report on 1e6 rows).
    ``group_weight``: each group's total weight, the denominators of the rates over all
    rows. ``weights`` None: every weight 1, by which no product is formed (``1.0 * x`` is
    ``x``, to the bit).
    """
    rows, c, s = _rate_terms(rate, y)
    w = weights
    if rows is not None:
        w = rows.astype(float) if weights is None else weights * rows
    total = group_weight if rows is None else np.bincount(codes, weights=w, minlength=n_groups)
    # A selection rate counts the predictions as they are (0 + 1 * pred is pred).
    terms = pred if rate == "selection_rate" else c + s * pred
    hits = np.bincount(codes, weights=terms if w is None else w * terms, minlength=n_groups)
    return hits, total


def _rates(counts):
    """Each group's rate from its ``(hits, total)``. A group without rows that the rate
    averages over has rate 0, as in fairlearn (whose rates come from scikit-learn's
    normalised confusion matrix)."""
    hits, total = counts
    return np.divide(hits, total, out=np.zeros(len(total)), where=total != 0)


def _pair_metric(rates, labels, protected, form):
    """Largest gap or smallest ratio over the pairs that involve a protected group.

    In one pass over the k groups, not over their k (k - 1) pairs (a million with 1000
    groups): a difference and a ratio are monotone in each argument, rounding included, so a
    protected group's best partner on either side is the group of the smallest or largest
    rate among the others, and the value is that of the best pair, bit for bit.
    """
    k = len(labels)
    mine = np.array([label in protected for label in labels], dtype=bool)
    if k < 2 or not mine.any():
        return np.nan
    order = np.argsort(rates, kind="stable")
    first = np.arange(k)
    # The smallest and the largest rate of the groups other than each group.
    low = np.where(first == order[0], rates[order[1]], rates[order[0]])[mine]
    high = np.where(first == order[-1], rates[order[-2]], rates[order[-1]])[mine]
    own = rates[mine]
    if form == "difference":
        return float(max(np.max(own - low), np.max(high - own)))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.concatenate([(own / high)[high > 0], (low / own)[own > 0]])
    # A pair whose denominator is 0 is left out: its inverse pair, also constrained, has
    # ratio 0 (or is 0 / 0 too, when the ratio is undefined).
    return float(np.min(ratio)) if len(ratio) else np.nan


def fairness_metric(
    kind: str,
    y_true,
    y_pred,
    groups,
    *,
    form: str | None = None,
    sample_weight=None,
    protected=None,
) -> float:
    """The fairness metric of hard predictions that :func:`fairness_problem` constrains.

    For the parity kinds this is fairlearn's metric (``method="between_groups"``, the
    default ``agg="worst_case"`` for equalized odds), computed with numpy:

    ====================================  ==================================================
    kind                                  fairlearn equivalent (``form`` difference / ratio)
    ====================================  ==================================================
    ``"demographic_parity"``              ``demographic_parity_difference`` / ``_ratio``
    ``"true_positive_rate_parity"``       ``equal_opportunity_difference`` / ``_ratio``
    ``"false_positive_rate_parity"``      ``false_positive_rate_difference`` / ``_ratio``
    ``"equalized_odds"``                  ``equalized_odds_difference`` / ``_ratio``
    ``"error_rate_parity"``               ``zero_one_loss_difference`` / ``_ratio``
    ====================================  ==================================================

    ``"disparate_impact"`` gives the smallest ratio of a protected group's selection rate to
    the overall one, ``"positive_share"`` the smallest share of the positive predictions
    that a protected group receives.

    Parameters
    ----------
    kind : str
        One of :data:`CONSTRAINTS`.
    y_true : array-like of shape (n,) or None
        True 0/1 labels; only read by the kinds whose rates condition on or compare with
        the label.
    y_pred : array-like of shape (n,)
        Hard 0/1 predictions; soft predictions in ``[0, 1]`` give the same metric with
        every rate a mean of the soft predictions (the quantity the solver constrains).
    groups : array-like of shape (n,)
        Group of each row.
    form : {"difference", "ratio"} or None, default=None
        ``None`` is ``"difference"`` for the parity kinds; ``"disparate_impact"`` is a
        ratio and ``"positive_share"`` a share (``form`` must then be ``None`` or, for
        ``"disparate_impact"``, ``"ratio"``).
    sample_weight : array-like of shape (n,), optional
    protected : sequence, optional
        Restrict to the pairs of groups that involve a protected group (parity kinds), or
        to the protected groups (the other two). All groups by default.

    Returns
    -------
    float
        The metric: the constraints of ``fairness_problem(..., bound=bound)`` hold at these
        predictions exactly when it is ``<= bound`` (difference) or ``>= bound`` (ratio,
        share); ``nan`` where a ratio is undefined (every rate involved is zero).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.problems import fairness_metric
    >>> y_pred = np.array([1, 1, 0, 0, 1, 0, 0, 0])
    >>> groups = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])
    >>> fairness_metric("demographic_parity", None, y_pred, groups)
    0.25
    >>> fairness_metric("demographic_parity", None, y_pred, groups, form="ratio")
    0.5
    """
    form = _check_form(kind, form)
    pred = checked_predictions(y_pred)
    n = len(pred)
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise ValueError(f"groups must have shape ({n},), got {groups.shape}.")
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
    rows = metric_rows(kind, y_true, groups, w, unit=True if sample_weight is None else None)
    protected = rows.labels if protected is None else np.asarray(list(protected))
    return rows.metric(kind, form, pred, protected)


class MetricRows:
    """What :func:`fairness_metric` reads of the rows besides the predictions: the groups'
    labels and codes, their total weights, the weights and the labels (``y``, bool, for
    the kinds that read them). Built once by :func:`metric_rows`, it gives the metric of
    several predictions of the same rows (the fit's report weighs four or five) with the
    same operations, to the bit, as :func:`fairness_metric` on each."""

    def __init__(self, y, labels, codes, group_weight, weights, unit):
        self.y, self.labels, self.codes = y, labels, codes
        self.group_weight, self.weights = group_weight, weights
        # Every weight 1 (no sample weights): the rates' sums take no products by them.
        self.rate_weights = None if unit else weights

    def metric(self, kind, form, pred, protected) -> float:
        """:func:`fairness_metric` of predictions ``pred`` (of :func:`checked_predictions`),
        ``form`` of :func:`_check_form`, ``protected`` an array of labels."""
        return self.metric_of_counts(kind, form, self.counts(kind, pred), protected)

    def counts(self, kind, pred) -> dict:
        """The weighted counts that the metric of ``pred`` reads: each rate's ``(hits,
        total)`` per group (:func:`_group_counts`), and for the share kinds the weighted
        count of positive predictions, ``"positive"``."""
        codes, k = self.codes, len(self.labels)
        if kind in ("positive_share", "disparate_impact"):
            hits = _group_counts(
                "selection_rate", codes, k, self.rate_weights, None, pred, self.group_weight
            )
            return {"selection_rate": hits, "positive": np.dot(self.weights, pred)}
        return {
            r: _group_counts(r, codes, k, self.rate_weights, self.y, pred, self.group_weight)
            for r in _PARITY_RATES[kind]
        }

    def metric_of_counts(self, kind, form, counts, protected) -> float:
        """:meth:`metric` from the :meth:`counts` of the predictions."""
        labels, w, group_weight = self.labels, self.weights, self.group_weight
        missing = [g for g in protected if g not in labels]
        if missing:
            raise ValueError(f"protected: group {_label(missing[0])!r} has no rows in groups.")
        if kind in ("positive_share", "disparate_impact"):
            at = np.searchsorted(labels, protected)
            rates = _rates(counts["selection_rate"])[at]
            overall = counts["positive"] / w.sum()
            if kind == "positive_share":
                rates = rates * group_weight[at] / w.sum()
            with np.errstate(invalid="ignore", divide="ignore"):
                return float(np.min(rates / overall)) if overall > 0 else np.nan
        values = [
            _pair_metric(_rates(counts[r]), labels, protected, form) for r in _PARITY_RATES[kind]
        ]
        # Python's max/min over the per-rate metrics, in fairlearn's order (tpr, then fpr).
        return float(max(values) if form == "difference" else min(values))

    def counts_off(self, kind, counts, off):
        """The :meth:`counts` of hard predictions whose rows ``off``, predicted positive in
        those of ``counts``, are predicted negative; None unless every weight is 1.

        With weights 1, every count of 0/1 predictions is a whole number, summed exactly in
        any order: the counts less those of the rows ``off`` are, to the bit, the counts of
        the other predictions, read from those rows only (the training report weighs the
        two sides of a tie: a second pass over every row, 0.03 s on 5e6 rows).
        """
        if self.rate_weights is not None:
            return None
        codes, k = np.take(self.codes, off), len(self.labels)
        y = None if self.y is None else np.take(self.y, off)
        out = {}
        for r, value in counts.items():
            if r == "positive":
                out[r] = value - float(len(off))
                continue
            hits, total = value
            rows, _, slope = _rate_terms(r, y)
            # A row's term moves by -slope as its prediction goes from 1 to 0.
            change = np.ones(len(off)) * slope if rows is None else rows * slope
            out[r] = (hits - np.bincount(codes, weights=change, minlength=k), total)
        return out


def checked_predictions(y_pred) -> np.ndarray:
    """``y_pred`` as a float array; an error unless 1-d with values in ``[0, 1]``."""
    pred = np.asarray(y_pred, dtype=float)
    # (Two reductions: a nan fails both comparisons, an infinity one.)
    if pred.ndim != 1 or not (pred.min(initial=0.0) >= 0 and pred.max(initial=1.0) <= 1):
        raise ValueError("y_pred must be a 1-d array of predictions in [0, 1].")
    return pred


def metric_rows(kind, y_true, groups, weights, unit=None) -> MetricRows:
    """The :class:`MetricRows` of rows with labels ``y_true`` (read by the kinds that need
    them), ``groups`` and float ``weights`` of the same length; an error for labels other
    than 0/1 and for a group of zero total weight. ``unit``: whether every weight is 1
    (None: read from ``weights``)."""
    n = len(weights)
    needs_y = kind in _PARITY_RATES and kind != "demographic_parity"
    y = _binary("y_true", y_true, n) if needs_y else None
    labels, codes = unique_codes(groups)
    group_weight = np.bincount(codes, weights=weights, minlength=len(labels))
    if np.any(group_weight <= 0):
        g = labels[np.flatnonzero(group_weight <= 0)[0]]
        raise ValueError(f"Group {_label(g)!r} has zero total sample_weight.")
    if unit is None:
        unit = bool(np.all(weights == 1.0))
    return MetricRows(y, labels, codes, group_weight, weights, unit)


#: Rows per block when ``W`` is filled: each group's per-row weights exist for one block at a
#: time, so building ``W`` needs ``W`` and a few block-sized temporaries, not one n-vector per
#: group and constraint (at a million rows each is 8 MB).
_BLOCK_ROWS = 1 << 16


def _fill_weights(n, columns, m, scale):
    """The ``(n, m)`` matrix ``W`` whose rows ``rows`` are ``columns(rows) / scale``.

    ``columns(rows)`` gives the ``m`` columns on a slice of rows; every entry is computed by
    the same elementwise operations as on all rows at once, so the blocks change no value.
    """
    W = np.empty((n, m))
    for start in range(0, n, _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        for k, col in enumerate(columns(rows)):
            W[rows, k] = col if scale == 1.0 else col / scale  # (x / 1 is x)
    return W


def _share_rows(groups, weights, protected, constraint, bound):
    """``(columns, offsets, names)`` of ``positive_share`` / ``disparate_impact``; see
    :func:`_fill_weights` for ``columns``."""
    n = len(groups)
    total = weights.sum()
    totals, offsets, names = [], [], []
    for g in protected:
        wg = weights @ (groups == g)
        if wg <= 0:
            raise ValueError(
                f"Protected group {_label(g)!r} has no members (or zero total weight)."
            )
        totals.append(wg)
        offsets.append(0.0)
        names.append(f"{constraint}[{g}]")

    def columns(rows):
        w, grp = weights[rows], groups[rows]
        for g, wg in zip(protected, totals, strict=True):
            member = grp == g
            if constraint == "positive_share":
                yield n * w * (bound - member) / total
            else:
                yield n * w * (bound / total - member / wg)

    return columns, offsets, names


def _group_total(weights, rows, g, rate, kind) -> float:
    """The total weight of group ``g``'s ``rows``; none makes its rate undefined."""
    wg = float(weights @ rows)  # (a product by the mask: 1 ms where a masked copy took 4)
    if wg <= 0:
        what = {"true_positive_rate": " with y=1", "false_positive_rate": " with y=0"}
        raise ValueError(
            f"Group {_label(g)!r} has no constraint rows{what.get(rate, '')} (or zero "
            f"total weight): its {rate} is undefined for constraint={kind!r}."
        )
    return wg


def _parity_rows(groups, weights, protected, kind, form, bound, y):
    """``(columns, offsets, names)`` of the pairwise parity constraints; see
    :func:`_fill_weights` for ``columns``.

    Each group's rate is ``mean_S a_g[j] pred_j + k_g``; a difference pair ``(a, b)`` is
    ``rate_a - rate_b - bound <= 0`` and a ratio pair ``bound * rate_b - rate_a <= 0``.
    """
    n = len(groups)
    labels = distinct(groups)
    protected = set(protected)
    pairs, offsets, names, totals = [], [], [], {}
    for rate in _PARITY_RATES[kind]:
        cond, c, _ = _rate_terms(rate, y)
        const = []
        for g in labels:
            m = groups == g if cond is None else (groups == g) & cond
            wg = _group_total(weights, m, g, rate, kind)
            totals[rate, g] = wg
            # (c = 0, as for every rate but the error rate: a sum of zeros, not a pass.)
            const.append(0.0 if _is_zero(c) else float(np.sum(weights * m * c)) / wg)
        tag = kind if len(_PARITY_RATES[kind]) == 1 else f"{kind}.{_SHORT[rate]}"
        for i, j in permutations(range(len(labels)), 2):
            a, b = labels[i], labels[j]
            if a not in protected and b not in protected:
                continue
            pairs.append((rate, i, j))
            if form == "difference":
                offsets.append(const[i] - const[j] - bound)
                names.append(f"{tag}[{a}-{b}]<=")
            else:
                offsets.append(bound * const[j] - const[i])
                names.append(f"{tag}[{a}/{b}]>=")

    def columns(rows):
        w, grp = weights[rows], groups[rows]
        nw = n * w  # the products n * w * m * s / total, left to right, as they were
        lin = {}
        for rate in _PARITY_RATES[kind]:
            cond, _, s = _rate_terms(rate, None if y is None else y[rows])
            for i, g in enumerate(labels):
                m = grp == g if cond is None else (grp == g) & cond
                col = nw * m
                if not _is_one(s):
                    col *= s
                col /= totals[rate, g]
                lin[rate, i] = col
        for rate, i, j in pairs:
            if form == "difference":
                yield lin[rate, i] - lin[rate, j]
            else:
                yield bound * lin[rate, j] - lin[rate, i]

    return columns, offsets, names


def _level_rows(groups, weights, kind, form, bound, y):
    """``(columns, offsets, names, levels)`` of the parity constraints with a free level.

    A largest gap ``max_g r_g - min_g r_g <= bound`` holds exactly when some level ``t``
    has ``t <= r_g <= t + bound`` for every group, and a smallest ratio ``min_g r_g /
    max_g r_g >= bound`` when some ``t`` has ``bound t <= r_g <= t``: two constraints per
    group and one free level per rate, where the pairs of groups take ``k (k - 1)``. The
    level is written relative to the overall rate ``r`` (over the same rows), ``t = r -
    bound / 2 + tau`` (difference) or ``t = 2 r / (1 + bound) + tau`` (ratio), so that
    ``tau = 0`` centres the band on ``r`` and ``tau`` moves little as the model does.
    ``levels[k, j]`` is the coefficient of ``tau_j`` in constraint ``k``: the solver
    minimises over ``tau`` (see :func:`~sklearn_ialm.solver.stoc_ialm`).
    """
    n = len(groups)
    labels = distinct(groups)
    offsets, names, coef, spec = [], [], [], []
    kappa = 1.0 if form == "difference" else 2.0 / (1.0 + bound)
    totals = {}
    for j, rate in enumerate(_PARITY_RATES[kind]):
        cond, c, _ = _rate_terms(rate, y)
        rows_all = np.ones(n, bool) if cond is None else cond
        w_all = float(np.sum(weights * rows_all))
        totals[rate, None] = w_all
        const_all = float(np.sum(weights * rows_all * c)) / w_all
        tag = kind if len(_PARITY_RATES[kind]) == 1 else f"{kind}.{_SHORT[rate]}"
        for i, g in enumerate(labels):
            m = (groups == g) & rows_all
            wg = _group_total(weights, m, g, rate, kind)
            totals[rate, i] = wg
            const_g = float(np.sum(weights * m * c)) / wg
            if form == "difference":
                # r_g - r - bound/2 - tau <= 0 and r - r_g - bound/2 + tau <= 0
                spec += [(rate, i, 1.0, -1.0), (rate, i, -1.0, 1.0)]
                offsets += [const_g - const_all - bound / 2, const_all - const_g - bound / 2]
                names += [f"{tag}[{g}-level]<=", f"{tag}[level-{g}]<="]
                coef += [(j, -1.0), (j, 1.0)]
            else:
                # r_g - kappa r - tau <= 0 and bound (kappa r + tau) - r_g <= 0
                spec += [(rate, i, 1.0, -kappa), (rate, i, -1.0, bound * kappa)]
                offsets += [const_g - kappa * const_all, bound * kappa * const_all - const_g]
                names += [f"{tag}[{g}/level]<=", f"{tag}[{g}/level]>="]
                coef += [(j, -1.0), (j, bound)]
    levels = np.zeros((len(offsets), len(_PARITY_RATES[kind])))
    for k, (j, v) in enumerate(coef):
        levels[k, j] = v

    def columns(rows):
        w, grp = weights[rows], groups[rows]
        lin = {}
        for rate in _PARITY_RATES[kind]:
            cond, _, s = _rate_terms(rate, None if y is None else y[rows])
            rows_all = 1.0 if cond is None else cond
            lin[rate, None] = n * w * rows_all * s / totals[rate, None]
        for rate, i, a, b in spec:
            cond, _, s = _rate_terms(rate, None if y is None else y[rows])
            m = grp == labels[i] if cond is None else (grp == labels[i]) & cond
            yield a * (n * w * m * s / totals[rate, i]) + b * lin[rate, None]

    return columns, offsets, names, levels


def _balanced_rows(groups, W, min_copies=1):
    """``(rows, W')``: constraint rows with each group listed about ``n / k`` times.

    Row ``j`` of group ``g`` appears ``r_g`` times with weights ``W[j] (N / n) / r_g``
    (``N`` rows in all): the mean over the ``N`` rows of ``W' q`` is the mean over the ``n``
    rows of ``W q`` for any per-row ``q``, so the constraints are the same functions, and a
    uniform minibatch of the ``N`` rows is a minibatch stratified towards equal groups.
    Unless some group is listed at least ``min_copies`` times, the rows are kept as they are.
    """
    n = len(groups)
    labels, codes = unique_codes(np.asarray(groups))
    counts = np.bincount(codes, minlength=len(labels))
    reps = np.maximum(1, np.rint(n / (len(labels) * counts))).astype(np.intp)
    if np.all(reps == 1) or reps.max() < min_copies:
        return None, W
    per_row = reps[codes]
    rows = np.repeat(np.arange(n), per_row)
    total = len(rows)
    W = W[rows]
    W *= (total / n / per_row[rows])[:, None]
    return rows, W


def _check_arguments(constraint, form, loss, bound, constraint_scale):
    """``(form, bound)``: the resolved form and the bound as a float, after checking the
    arguments that do not depend on the data."""
    form = _check_form(constraint, form)
    if loss not in ("truncated_logistic", "logistic"):
        raise ValueError(f"loss must be 'truncated_logistic' or 'logistic', got {loss!r}.")
    bound = float(bound)
    if not np.isfinite(bound):
        raise ValueError(f"bound must be a finite number, got {bound!r}.")
    if form == "difference" and bound < 0:
        raise ValueError(f"bound must be >= 0 for form='difference', got {bound!r}.")
    if form == "ratio" and constraint != "disparate_impact" and not 0 <= bound <= 1:
        raise ValueError(f"bound must be in [0, 1] for form='ratio', got {bound!r}.")
    if not (np.isfinite(constraint_scale) and constraint_scale > 0):
        raise ValueError(f"constraint_scale must be a number > 0, got {constraint_scale!r}.")
    return form, bound


def _constraint_groups(groups, protected, n_s):
    """``(groups, present, protected)``: the groups as an array, the set of groups present
    and the protected ones (all present groups by default), each checked to be present."""
    groups = np.asarray(groups)
    if groups.shape != (n_s,):
        raise ValueError(
            f"groups must have shape ({n_s},) (one per constraint row), got {groups.shape}."
        )
    present = set(distinct(groups).tolist())
    protected = sorted(present) if protected is None else list(protected)
    for g in protected:
        if g not in present:
            raise ValueError(
                f"Protected group {_label(g)!r} has no members (or zero total weight)."
            )
    return groups, present, protected


def _constraint_labels(constraint, X, y, X_constraint, y_constraint, n_s):
    """The constraint rows' labels as a bool array for the parity kinds that read them
    (``None`` for the others): ``y_constraint``, or ``y`` when ``X_constraint is X``."""
    if constraint not in _PARITY_RATES or constraint == "demographic_parity":
        return None
    if y_constraint is None:
        if X_constraint is not X:
            raise ValueError(
                f"constraint={constraint!r} needs the labels of the constraint "
                "rows: pass y_constraint (it defaults to y only when X_constraint "
                "is X)."
            )
        y_constraint = y
    return _binary("y_constraint", y_constraint, n_s)


def _constraint_rows(groups, weights, present, protected, constraint, form, bound, y):
    """``(columns, offsets, names, levels)`` of the constraint kind (see :func:`_fill_weights`
    for ``columns``; ``levels`` is ``None`` but for bands with a free level)."""
    if constraint not in _PARITY_RATES:
        return (*_share_rows(groups, weights, protected, constraint, bound), None)
    if len(present) >= 4 and set(protected) == present and (form, bound) != ("ratio", 0):
        # Every pair of groups: a free level keeps the constraints linear in k, 2k where
        # the pairs are k (k - 1) (as many at k = 3: the pairs are kept there, as they are
        # for a ratio of at least 0, which holds anyway).
        return _level_rows(groups, weights, constraint, form, bound, y)
    return (*_parity_rows(groups, weights, protected, constraint, form, bound, y), None)


def _balanced_strata(groups, W, constraint, y, levels):
    """``(rows_constraint, W, strata)`` of ``balance_groups=True`` for a parity kind: the
    constraint rows listed with every group about equally often (``None``: as they are),
    their weights and the strata of their minibatches (``None``: uniform draws)."""
    # Measured (python -m benchmarks.robust): bands of four or more groups (Adult by
    # race, DP 0.05) converge in 40 passes with balanced draws where uniform ones
    # spent 300. With pairs only a small group gains: bank (a group of 1 %) 30 -> 8
    # passes, a 7 % group of 1000 rows 0.644 -> 0.693 test accuracy; a group of 22 %
    # (the anchor task) lost in one seed of three, and a9a's positive share slowed
    # from 12 passes to over 300. So pairs are balanced only for a group under 40 %
    # of an equal share (listed three times or more), and share kinds never.
    # The rates that condition on the label are means over a group's rows of one
    # class: those cells are what a minibatch must find, so they are the strata. An
    # error rate reads both classes with opposite signs: cells of group and class
    # again (a9a by race, 4 seeds: 26-33 passes, all converged, where strata of
    # groups alone left all 4 at the budget and uniform draws 2 of 4).
    # On top of the balanced list (whose smoothness bound, and so step, is the
    # better one) every constraint batch holds every stratum: a uniform batch of 30
    # found a cell of a few rows now and then, and its estimate of that cell's rate
    # was a lottery. Adult by race, 5 seeds: equalised odds 0.828 -> 0.845 test
    # accuracy (no seed left at the constant model), 302 -> 229 passes; TPR parity
    # 150 -> 48 passes; DP 62 -> 41.
    strata = groups
    if constraint in ("true_positive_rate_parity", "false_positive_rate_parity",
                      "equalized_odds", "error_rate_parity"):  # fmt: skip
        strata = unique_codes(groups)[1] * 2 + y
    rows_constraint, W = _balanced_rows(strata, W, 1 if levels is not None else 3)
    if levels is None and rows_constraint is None:
        strata = None
    elif rows_constraint is not None:
        strata = strata[rows_constraint]
    return rows_constraint, W, strata


def _constraints(
    X, y, X_constraint, groups, protected, y_constraint, constraint_sample_weight,
    constraint, form, bound, constraint_scale, balance_groups,
):  # fmt: skip
    """``(W, offset, names, levels, rows_constraint, strata)``: the arguments of
    :class:`LinearProblem` that :func:`fairness_problem` builds for the constraints."""
    n_s = X_constraint.shape[0]
    if protected is not None and len(protected) == 0:
        # No protected group: the unconstrained model (groups and labels are not read).
        return np.zeros((n_s, 0)), np.zeros(0), [], None, None, None
    groups, present, protected = _constraint_groups(groups, protected, n_s)
    cw = (
        np.ones(n_s)
        if constraint_sample_weight is None
        else np.asarray(constraint_sample_weight, dtype=float)
    )
    yc = _constraint_labels(constraint, X, y, X_constraint, y_constraint, n_s)
    columns, offsets, names, levels = _constraint_rows(
        groups, cw, present, protected, constraint, form, bound, yc
    )
    W = _fill_weights(n_s, columns, len(offsets), constraint_scale)
    rows_constraint = strata = None
    if balance_groups and constraint in _PARITY_RATES:
        rows_constraint, W, strata = _balanced_strata(groups, W, constraint, yc, levels)
    offset = np.array(offsets) / constraint_scale
    if levels is not None:
        levels = levels / constraint_scale
    return W, offset, names, levels, rows_constraint, strata


def _paper_settings(constraint, loss, truncation):
    """The paper's Section 5.1 settings for its model (``LinearProblem.paper_settings``), or
    ``None`` for other models."""
    if constraint == "positive_share" and loss == "truncated_logistic" and truncation == 2.0:
        # Section 5.1: beta_k = 2.5^k, the smoothness constant 10 + beta_k, minibatch 30; the
        # paper's tables count half of the samples drawn from D and S (a9a: 0.069 per 50
        # iterations). stoc_ialm(preset="paper") reads them.
        return dict(smoothness=(10.0, 1.0), sigma=2.5, batch_size=30, count_scale=0.5)
    return None


def fairness_problem(
    X,
    y,
    X_constraint,
    groups,
    *,
    bound: float,
    constraint: str = "positive_share",
    form: str | None = None,
    protected=None,
    y_constraint=None,
    loss: str = "truncated_logistic",
    truncation: float = 2.0,
    fit_intercept: bool = False,
    sample_weight=None,
    constraint_sample_weight=None,
    smoothness: tuple[float, float] | None = None,
    feature_scale: float | str = 1.0,
    constraint_scale: float = 1.0,
    balance_groups: bool = False,
) -> LinearProblem:
    """Build the fairness-constrained problem.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
        Labelled rows ``D`` of the objective.
    y : ndarray of shape (n,)
        Labels in {0, 1} (1 is the positive class).
    X_constraint : {ndarray, sparse matrix} of shape (n_s, d)
        Rows ``S`` of the constraints (may be ``X`` itself).
    groups : ndarray of shape (n_s,)
        Group label of each row of ``S``.
    bound : float
        The constraint's bound (the paper's ``c``): a share or ratio for
        ``positive_share``, ``disparate_impact`` and ``form="ratio"`` (in [0, 1] for the
        latter), the largest gap between two groups' rates for ``form="difference"``
        (>= 0).
    constraint : str, default="positive_share"
        One of :data:`CONSTRAINTS`; see the module docstring for each kind's rate and
        fairlearn metric.
    form : {"difference", "ratio"} or None, default=None
        For the parity kinds: bound the largest gap between groups (``None`` means this)
        or the smallest ratio. ``positive_share`` takes only ``None`` and
        ``disparate_impact`` ``None`` or ``"ratio"``.
    protected : sequence, optional
        ``positive_share``/``disparate_impact``: the groups that get a constraint. Parity
        kinds: the pairs of groups that involve at least one of these are constrained. All
        groups by default; an empty sequence gives the unconstrained model.
    y_constraint : ndarray of shape (n_s,), optional
        0/1 labels of ``S``, read by the kinds that condition on or compare with the label
        (``true_positive_rate_parity``, ``false_positive_rate_parity``, ``equalized_odds``,
        ``error_rate_parity``). Defaults to ``y`` when ``X_constraint is X``.
    loss : {"truncated_logistic", "logistic"}
    truncation : float, default=2.0
        ``alpha`` of the truncated logistic loss.
    fit_intercept : bool, default=False
    sample_weight, constraint_sample_weight : ndarray, optional
        Row weights on ``D`` and on ``S``; group rates become weighted rates.
    smoothness : (L0, LJ), optional
    constraint_scale : float, default=1.0
        The constraints are divided by this positive constant (same feasible set). The
        ``positive_share`` and ``disparate_impact`` constraints are in units of
        ``mean_S p * (bound - share)``: dividing by a typical positive rate puts their
        residuals, and so ``tol``, in the units of the bound. Parity differences are
        already in the bound's units.
    balance_groups : bool, default=False
        For the parity kinds, with four or more groups (a band) or a group under 40 % of
        an equal share, draw the constraint minibatches with every group about equally
        often: the rows of a
        group of ``n_g`` rows are listed ``r_g = max(1, round(n_s / (k n_g)))`` times among
        the constraint rows, each copy with ``1 / r_g`` of the row's weight, so every
        constraint value is unchanged while a group of a hundred rows is no longer a
        lottery in a minibatch of thirty (the penalty gradient's variance falls with it).
        On that list every constraint minibatch is then drawn by stratum (the group, or
        group and class for the kinds that condition on the label): at least two rows of
        each, weighted back by its share (``LinearProblem(constraint_strata=...)``).
    feature_scale : float or "auto", default=1.0
        See :class:`LinearProblem`; ``"auto"`` makes ``tol`` independent of the scale of ``X``.

    Returns
    -------
    LinearProblem
        Its ``constraint_names`` say the kind, the group or pair and the direction:
        ``"positive_share[g]"``, ``"demographic_parity[a-b]<="`` (``rate_a - rate_b <=
        bound``), ``"demographic_parity[a/b]>="`` (``rate_a / rate_b >= bound``),
        ``"equalized_odds.tpr[a-b]<="``, ...
        ``paper_settings`` holds the paper's Section 5.1 values for its model (the
        ``positive_share`` constraint with the truncated logistic loss, ``truncation=2``):
        ``smoothness=(10, 1)`` (the paper's ``10 + beta``), ``sigma=2.5``, ``batch_size=30``
        and ``count_scale=0.5`` (see
        :attr:`~sklearn_ialm.solver.IALMResult.n_paper_passes`), which
        ``stoc_ialm(problem, preset="paper")`` uses; ``None`` for other models.

    Examples
    --------
    The paper's constraint on a small data set: group 1 receives at least 20 % of the soft
    positive predictions.

    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm.problems import fairness_problem
    >>> from sklearn_ialm.solver import stoc_ialm
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> groups = (X[:, 2] < -0.5).astype(int)
    >>> problem = fairness_problem(X, y, X, groups, bound=0.2, protected=[1],
    ...                            fit_intercept=True)
    >>> problem.constraint_names
    ['positive_share[1]']
    >>> result = stoc_ialm(problem, max_passes=1000, random_state=0)
    >>> coef, intercept = problem.coef(result.x)
    >>> p = expit(X @ coef + intercept)
    >>> share = float(p[groups == 1].sum() / p.sum())
    >>> bool(result.converged), share >= 0.2 - 1e-2  # the bound, within stoc_ialm's tol
    (True, True)

    Equal opportunity as fairlearn measures it, true positive rates within 0.1 of each
    other: one inequality per ordered pair of groups.

    >>> problem = fairness_problem(X, y, X, groups, bound=0.1,
    ...                            constraint="true_positive_rate_parity")
    >>> problem.constraint_names
    ['true_positive_rate_parity[0-1]<=', 'true_positive_rate_parity[1-0]<=']
    """
    form, bound = _check_arguments(constraint, form, loss, bound, constraint_scale)
    W, offset, names, levels, rows_constraint, strata = _constraints(
        X, y, X_constraint, groups, protected, y_constraint, constraint_sample_weight,
        constraint, form, bound, constraint_scale, balance_groups,
    )  # fmt: skip
    loss_obj = TruncatedLogistic(truncation) if loss == "truncated_logistic" else LOSSES[loss]()
    problem = LinearProblem(
        X,
        np.where(np.asarray(y) == 1, 1.0, -1.0),
        loss_obj,
        X_constraint,
        W,
        offset,
        objective_weights=sample_weight,
        inequality=True,
        fit_intercept=fit_intercept,
        smoothness=smoothness,
        feature_scale=feature_scale,
        constraint_names=names,
        levels=levels,
        rows_constraint=rows_constraint,
        constraint_strata=strata,
    )
    problem.paper_settings = _paper_settings(constraint, loss, truncation)
    return problem
