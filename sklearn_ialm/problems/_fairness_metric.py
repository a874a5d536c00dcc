"""The fairness metric of predictions (:func:`fairness_metric`, fairlearn's metrics for the
parity kinds), and the rows' counts behind it (:class:`MetricRows`), which weigh several
predictions of the same rows with the same operations, to the bit.
"""

from __future__ import annotations

import numpy as np

from ._fairness_kinds import _PARITY_RATES, _check_form, _rate_terms
from ._group_codes import _binary, _label, unique_codes

__all__ = ["MetricRows", "checked_predictions", "fairness_metric", "metric_rows"]


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
    # (A set of the protected labels: a scan of them per label took 1 ms of a report of
    # 100 groups, 10 ms in all of a fit's reports.)
    wanted = set(np.asarray(protected).tolist())
    mine = np.array([label in wanted for label in labels.tolist()], dtype=bool)
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
        present = set(labels.tolist())
        missing = [g for g in protected if g not in present]
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
