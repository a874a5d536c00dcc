"""A certificate on new data for fairness constraints, from a held-out calibration split.

The fairness analogue of the NP umbrella rule (:mod:`._umbrella`) and of the Seldonian safety
test: a model trained without the calibration rows is checked once on them, and it is either
certified, ``P(population metric worse than the certified value) <= delta``, or the fit says
that it could not certify. (The certified fit checks a few such models in an order fixed
before the check: :mod:`._certified_sequence` says why ``delta`` still covers the bound of
the model it keeps.)

The metrics are fairlearn's, on hard predictions: per protected group ``g`` and cell ``c``
(the rows the rate is taken over) a rate ``r[c, g]``; the kinds and their cells are

===============================  =================================  ============================
kind                             rate ``r[c, g]``                    cells ``c``
===============================  =================================  ============================
``demographic_parity``           ``P(pred = 1 | G = g)``             all rows
``true_positive_rate_parity``    ``P(pred = 1 | G = g, Y = 1)``      rows with ``y = 1``
``false_positive_rate_parity``   ``P(pred = 1 | G = g, Y = 0)``      rows with ``y = 0``
``equalized_odds``               both of the above                   ``y = 1`` and ``y = 0``
``error_rate_parity``            ``P(pred != y | G = g)``            all rows
``positive_share``               ``P(G = g | pred = 1)``             positive predictions
===============================  =================================  ============================

``positive_share`` is the paper's: ``q_g / sum_h q_h`` with ``q_g = P(G = g, pred = 1)``, i.e.
the group's share of all positive predictions, a rate over the positive predictions.

Forms: ``"difference"``, ``max_c max_{a != b} r[c, a] - r[c, b] <= bound`` (fairlearn's
``between_groups`` difference, worst case over cells as in ``equalized_odds_difference``);
``"ratio"``, ``min_c min_{a != b} r[c, b] / r[c, a] >= bound``; and, for ``positive_share``
only, ``"minimum"``, ``min_g r[g] >= bound`` (the paper's constraint, one per protected group).
With ``protected`` groups given, only the pairs that involve a protected group count (and only
the protected groups' shares for ``"minimum"``).

**What the certificate needs.** Every cell of every group must have calibration rows: group
sizes for ``demographic_parity`` and ``error_rate_parity``; group x class sizes (labelled
calibration rows) for the conditional kinds; for ``positive_share`` the positive predictions,
so enough rows that the expected number of positives is large. An empty cell has the interval
``[0, 1]`` and no bound below 1 can be certified.

**Why it holds.** The model is trained without the calibration rows. Given the number of
rows ``n[c, g]`` in a cell, the count ``k[c, g]`` (positive predictions, or errors) is
``Binomial(n[c, g], r[c, g])`` when the cell's rows are an i.i.d. draw from its population,
so a split stratified by group (and class) is fine. For ``positive_share`` the rows must be
an i.i.d. draw from the whole population (groups not fixed in advance): then, given the number
of positive predictions, the number from group ``g`` is ``Binomial(n_pos, r[g])``.
Clopper-Pearson gives ``P(r > upper) <= alpha_upper`` and ``P(r < lower) <= alpha_lower`` for
each cell, whatever the rate. The certified difference is
``U = max_c max_{a != b} upper[c, a] - lower[c, b]``.
The population metric is attained at a cell ``c*`` and pair ``(a*, b*)`` that depend on the
population and the model only, not on the calibration draw, so (as ``U >= 0``, ``D > U``
implies ``D > 0`` and ``a* != b*``)

``D > U  =>  r[c*, a*] - r[c*, b*] > upper[c*, a*] - lower[c*, b*]``
``       =>  r[c*, a*] > upper[c*, a*]  or  r[c*, b*] < lower[c*, b*]``,

and ``P(D > U) <= alpha_upper + alpha_lower = delta`` with ``delta / 2`` on each side. No
union over groups, pairs or cells is needed: only the two intervals of the (unknown but
fixed) worst pair can fail in a way that matters. The ratio form is the same argument with
``lower[c, b] / upper[c, a]``; ``"minimum"`` needs only the lower limit of the (fixed) worst
group, so it takes the whole ``delta`` on that side. The counts may be used before the check
(:func:`certification_margin`): the argument conditions on them. So may anything that does
not read the calibration rows' predictions or labels beyond the counts, such as a trial
model's predictions on the training rows (:func:`difference_training_bound`): the final
model is then still a function of the training rows and the counts, fixed given them, and
the calibration rows' predictions are still binomial given the counts.

**Price.** ``delta / 2`` per side is a union bound over the two intervals of the worst pair;
a violation needs the *sum* of two independent deviations to exceed the sum of the two margins,
which is rarer than either alone, so when both groups carry sampling noise the violation
frequency is well below ``delta`` (about ``Phi(-sqrt(2) z_{delta/2}) = 0.003`` at
``delta = 0.05`` for two equal groups; it approaches ``delta / 2`` when one of the two rates is
0 or 1). The certified excess over the estimate is at most ``sqrt(2) z_{delta/2} / z_delta``
(1.68 at ``delta = 0.05``) times the normal-approximation width ``z_delta * sd(estimate)``;
a Bonferroni split over all ``2 k`` intervals of ``k`` groups would cost about 2.1 at
``k = 4``. The whole ``delta`` on each side (16% narrower at ``delta = 0.05``) kept the exact
violation probability of two independent groups at ``<= delta`` over a grid of rates and
sizes, but there is no proof of it (and the shares of ``positive_share`` are not
independent), so the rule keeps ``delta / 2``.

Counts are unweighted: the guarantee is for the population the calibration rows are drawn
from, every row counted once, as in the NP umbrella rule.

Pure numpy/scipy: no estimator, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

# The counts, the limits and the margin are re-exported: the certified fit, the prequential
# certificate and the tests import them from here.
from ._certificate_counts import (
    _NEEDS_LABELS,
    KINDS,
    CalibrationCounts,
    _binary,
    _check_bound,
    _check_form,
    _check_kind,
    _check_level,
    _cp,
    _pairs,
    _worst,
    calibration_counts,
    clopper_pearson,
)
from ._certificate_margin import certification_margin, difference_training_bound

__all__ = [
    "CalibrationCounts",
    "FairnessCertificate",
    "KINDS",
    "calibration_counts",
    "certification_margin",
    "clopper_pearson",
    "difference_training_bound",
    "fairness_certificate",
]


@dataclass(frozen=True)
class FairnessCertificate:
    """The outcome of the safety test on the calibration rows."""

    kind: str
    form: str
    bound: float
    delta: float
    #: The certified worst case of the population metric: upper confidence limit of the
    #: difference, lower confidence limit of the ratio or of the smallest share.
    value: float
    #: The metric of the predictions on the calibration rows (fairlearn's value, unweighted);
    #: pairs with an empty cell or a 0/0 ratio are left out, nan if none is left.
    estimate: float
    #: ``value`` meets ``bound``: ``P(population metric worse than bound) <= delta``.
    certified: bool
    groups: np.ndarray
    cells: tuple[str, ...]
    #: Rows per cell and group (for ``positive_share``: positive predictions, every group).
    n: np.ndarray
    #: Positive predictions (errors for ``error_rate_parity``; the group's positive
    #: predictions for ``positive_share``) per cell and group.
    k: np.ndarray
    #: Clopper-Pearson limits per cell and group, at one-sided levels ``alpha_lower`` and
    #: ``alpha_upper`` (0 means the side is not used and its limit is trivial).
    lower: np.ndarray
    upper: np.ndarray
    alpha_lower: float
    alpha_upper: float
    #: ``(cell, high group, low group)`` whose limits give ``value`` (for ``"minimum"``
    #: ``(cell, group, group)``).
    worst: tuple

    @property
    def message(self) -> str:
        """One sentence for a warning or a log: the decision and what set it."""
        cell, hi, lo = self.worst
        # Plain Python labels: "'a'" or "1" in the message, not "np.int64(1)".
        names = self.groups.tolist()
        cmp = "<=" if self.form == "difference" else ">="
        verdict = "certified" if self.certified else "could not certify"
        where = f"cell {self.cells[cell]}"
        if self.form == "minimum":
            what = (
                f"lower limit of group {names[lo]!r}'s share {self.lower[cell, lo]:.4g} "
                f"({self.k[cell, lo]}/{self.n[cell, lo]})"
            )
        else:
            what = (
                f"group {names[hi]!r} upper {self.upper[cell, hi]:.4g} "
                f"({self.k[cell, hi]}/{self.n[cell, hi]}) vs group {names[lo]!r} lower "
                f"{self.lower[cell, lo]:.4g} ({self.k[cell, lo]}/{self.n[cell, lo]}), {where}"
            )
        return (
            f"{verdict} {self.kind} {self.form} {cmp} {self.bound:g} at delta={self.delta:g}: "
            f"certified value {self.value:.4g} (calibration estimate {self.estimate:.4g}; {what})."
        )


def _metric(rates, form, pair, is_protected):
    """The metric of per-cell, per-group rates (nan when no pair of groups has one)."""
    if form == "minimum":
        return float(np.min(rates[0, is_protected]))
    if form == "difference":
        value = rates[:, :, None] - rates[:, None, :]
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = rates[:, None, :] / rates[:, :, None]
    # Empty cells (nan rates) and 0/0 ratios are left out; a zero rate against a positive one
    # still gives the ratio 0, as min/max does.
    masked = np.where(np.broadcast_to(pair, value.shape), value, np.nan)
    if np.all(np.isnan(masked)):
        return float("nan")
    return float(np.nanmax(masked) if form == "difference" else np.nanmin(masked))


def fairness_certificate(
    y_pred: ArrayLike,
    y_true: ArrayLike | None,
    groups: ArrayLike,
    *,
    kind: str,
    form: str = "difference",
    bound: float,
    delta: float,
    protected: ArrayLike | None = None,
) -> FairnessCertificate:
    """Certify a fairness bound on new data from held-out calibration rows.

    See the module docstring for the metrics and for why ``P(population metric worse than
    value) <= delta`` over the draw of the calibration rows, given a model trained without
    them.

    Parameters
    ----------
    y_pred : array-like of shape (n,) with 0/1 (or bool) values
        Hard predictions of the model on the calibration rows (1 = positive class).
    y_true : array-like of shape (n,) with 0/1 values, or None
        Labels of the calibration rows; needed by the conditional kinds and
        ``error_rate_parity``.
    groups : array-like of shape (n,)
        Group of each calibration row.
    kind : str
        One of :data:`KINDS`.
    form : {"difference", "ratio", "minimum"}, default="difference"
        ``"minimum"`` (smallest protected share ``>= bound``) for ``positive_share`` only.
    bound : float in [0, 1]
        The user's bound: the difference must be ``<= bound``, the ratio or share ``>=``.
    delta : float in (0, 1)
        The tolerated probability that the population metric is worse than ``value``.
    protected : array-like, optional
        Groups whose pairs (or shares) count; all groups by default.

    Returns
    -------
    FairnessCertificate
        ``value``, ``certified``, the counts and intervals used, the levels
        ``alpha_lower = alpha_upper = delta / 2`` (``"minimum"``: ``delta`` and 0), and a
        ``message`` for the fit's warning when ``certified`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.estimators._certificate import fairness_certificate
    >>> rng = np.random.default_rng(1)
    >>> groups = np.repeat(["a", "b"], 1000)
    >>> y_pred = rng.random(2000) < np.where(groups == "a", 0.30, 0.33)
    >>> cert = fairness_certificate(y_pred, None, groups, kind="demographic_parity",
    ...                             bound=0.1, delta=0.05)
    >>> bool(cert.certified), round(cert.estimate, 3), round(cert.value, 3)
    (True, 0.013, 0.071)
    """
    kind = _check_kind(kind)
    form = _check_form(kind, form)
    bound = _check_bound(form, bound)
    delta = _check_level(delta, "delta")
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] == 0:
        raise ValueError(f"groups must be a non-empty 1-d array, got shape {g.shape}.")
    pred = _binary(y_pred, "y_pred", len(g))
    labels, codes = np.unique(g, return_inverse=True)
    if form != "minimum" and len(labels) < 2:
        raise ValueError(f"A {form} needs at least 2 groups, got {labels.tolist()}.")
    pair, is_protected = _pairs(labels, None if protected is None else np.asarray(protected))
    cells, n, k = _hit_counts(kind, pred, y_true, g, codes, len(labels))
    return _certify(kind, form, bound, delta, labels, cells, n, k, pair, is_protected)


def _hit_counts(kind, pred, y_true, g, codes, n_groups):
    """``(cells, n, k)``: the rows ``n`` and the counted ones ``k`` per cell and group.

    ``k`` counts what the rate counts (positive predictions, or errors for
    ``error_rate_parity``); for ``positive_share`` the cell is the positive predictions, so
    ``n`` is their total in every group and ``k`` each group's part of it.
    """
    if kind == "positive_share":
        k = np.bincount(codes, weights=pred, minlength=n_groups).astype(np.int64)[None, :]
        return KINDS[kind], np.full_like(k, int(pred.sum())), k
    if kind == "error_rate_parity":
        if y_true is None:
            raise ValueError("kind='error_rate_parity' needs y_true.")
        hit = pred != _binary(y_true, "y_true", len(g))
    else:
        hit = pred == 1
    # The rows per cell as calibration_counts gives them to the margin: one count for both.
    counts = calibration_counts(g, y_true, kind=kind)
    cells, n = counts.cells, counts.n
    if kind in _NEEDS_LABELS:
        y = _binary(y_true, "y_true", len(g))
        rows = {"y=1": y == 1, "y=0": y == 0}
        k = np.array(
            [np.bincount(codes[rows[c]], weights=hit[rows[c]], minlength=n_groups) for c in cells]
        ).astype(np.int64)
    else:
        k = np.bincount(codes, weights=hit, minlength=n_groups).astype(np.int64)[None, :]
    return cells, n, k


def _certify(kind, form, bound, delta, labels, cells, n, k, pair, is_protected):
    """The certificate of the counts: Clopper-Pearson limits per cell and group at
    ``delta / 2`` a side (``"minimum"`` uses the lower side only, at ``delta``), the
    calibration estimate, and the worst case of the limits over the pairs that count."""
    alpha_lower, alpha_upper = (delta, 0.0) if form == "minimum" else (delta / 2, delta / 2)
    lower, upper = _cp(k, n, alpha_lower, alpha_upper)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    estimate = _metric(rates, form, pair, is_protected)
    value, worst, certified = _worst_case(form, bound, lower, upper, pair, is_protected)
    return FairnessCertificate(
        kind=kind,
        form=form,
        bound=bound,
        delta=delta,
        value=value,
        estimate=estimate,
        certified=bool(certified),
        groups=labels,
        cells=cells,
        n=n,
        k=k,
        lower=lower,
        upper=upper,
        alpha_lower=alpha_lower,
        alpha_upper=alpha_upper,
        worst=worst,
    )


def _worst_case(form, bound, lower, upper, pair, is_protected):
    """``(value, worst, certified)``: the certified value (the worst combination of the
    limits, see the module docstring), the ``(cell, high group, low group)`` that sets it,
    and whether it meets ``bound``."""
    if form == "minimum":
        value, (cell, grp) = _worst(lower, is_protected[None, :], largest=False)
        return value, (cell, grp, grp), value >= bound
    if form == "difference":
        d = upper[:, :, None] - lower[:, None, :]
        value, worst = _worst(d, np.broadcast_to(pair, d.shape), largest=True)
        return value, worst, value <= bound
    # upper > 0 always (k = n gives 1, k < n gives a positive quantile).
    r = lower[:, None, :] / upper[:, :, None]
    value, worst = _worst(r, np.broadcast_to(pair, r.shape), largest=False)
    return value, worst, value >= bound
