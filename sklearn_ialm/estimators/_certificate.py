"""A certificate on new data for fairness constraints, from a held-out calibration split.

The fairness analogue of the NP umbrella rule (:mod:`._umbrella`) and of the Seldonian safety
test: a model trained without the calibration rows is checked once on them, and it is either
certified, ``P(population metric worse than the certified value) <= delta``, or the fit says
that it could not certify.

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
from scipy.optimize import brentq
from scipy.stats import beta as beta_dist
from scipy.stats import norm

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

#: The constraint kinds and the cells (rows a rate is taken over) of each.
KINDS = {
    "demographic_parity": ("all",),
    "true_positive_rate_parity": ("y=1",),
    "false_positive_rate_parity": ("y=0",),
    "equalized_odds": ("y=1", "y=0"),
    "error_rate_parity": ("all",),
    "positive_share": ("pred=1",),
}
_FORMS = ("difference", "ratio", "minimum")
_NEEDS_LABELS = ("true_positive_rate_parity", "false_positive_rate_parity", "equalized_odds")


def _check_level(value: float, name: str, *, low_closed: bool = False) -> float:
    value = float(value)
    ok = (0.0 <= value < 1.0) if low_closed else (0.0 < value < 1.0)
    if not ok:
        interval = "[0, 1)" if low_closed else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}.")
    return value


def _cp(k, n, alpha_lower, alpha_upper):
    """Clopper-Pearson limits without validation; ``k`` may be fractional (see the margin)."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    # Safe shape parameters where the limit is fixed (k = 0 or k = n), so scipy sees no
    # invalid Beta(0, .) and returns no nan.
    has_low = k > 0
    has_up = k < n
    lower = beta_dist.ppf(
        alpha_lower, np.where(has_low, k, 1.0), np.where(has_low, n - k + 1, 1.0)
    )
    upper = beta_dist.isf(alpha_upper, np.where(has_up, k + 1, 1.0), np.where(has_up, n - k, 1.0))
    return np.where(has_low, lower, 0.0), np.where(has_up, upper, 1.0)


def clopper_pearson(
    k: ArrayLike, n: ArrayLike, alpha_lower: float, alpha_upper: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided confidence limits of a binomial proportion (Clopper-Pearson).

    For ``K ~ Binomial(n, p)``: ``P(p < lower(K)) <= alpha_lower`` and
    ``P(p > upper(K)) <= alpha_upper`` for every ``p``. ``lower`` is the ``alpha_lower``
    quantile of ``Beta(k, n - k + 1)`` (0 when ``k = 0``), ``upper`` the ``1 - alpha_upper``
    quantile of ``Beta(k + 1, n - k)`` (1 when ``k = n``).

    Parameters
    ----------
    k, n : array-like of int
        Successes and trials, broadcast together, ``0 <= k <= n``. ``n = 0`` gives the
        uninformative interval ``[0, 1]``.
    alpha_lower, alpha_upper : float in [0, 1)
        One-sided error levels; a two-sided interval at level ``a`` uses ``a / 2`` each. A
        level 0 gives the trivial limit (0 or 1).

    Returns
    -------
    lower, upper : ndarray
        Of the broadcast shape of ``k`` and ``n``.

    Examples
    --------
    >>> from sklearn_ialm.estimators._certificate import clopper_pearson
    >>> lower, upper = clopper_pearson([0, 3, 10], 10, 0.025, 0.025)
    >>> lower.round(4).tolist(), upper.round(4).tolist()
    ([0.0, 0.0667, 0.6915], [0.3085, 0.6525, 1.0])
    """
    alpha_lower = _check_level(alpha_lower, "alpha_lower", low_closed=True)
    alpha_upper = _check_level(alpha_upper, "alpha_upper", low_closed=True)
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k), np.asarray(n))
    for name, a in (("k", k_arr), ("n", n_arr)):
        if a.size and not (np.all(np.isfinite(a)) and np.all(a == np.round(a))):
            raise ValueError(f"{name} must hold whole numbers, got {a.tolist()!r}.")
    if np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError(
            f"k must satisfy 0 <= k <= n, got k={k_arr.tolist()!r}, n={n_arr.tolist()!r}."
        )
    return _cp(k_arr, n_arr, alpha_lower, alpha_upper)


@dataclass(frozen=True)
class CalibrationCounts:
    """The calibration rows per group and cell: all a certificate needs before predicting."""

    #: Group labels, sorted (``np.unique`` order), shape ``(n_groups,)``.
    groups: np.ndarray
    #: One name per cell (row of ``n``), see :data:`KINDS`.
    cells: tuple[str, ...]
    #: Rows per cell and group, shape ``(n_cells, n_groups)``. For ``positive_share`` the
    #: group sizes (the positive predictions are not known before predicting).
    n: np.ndarray


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {tuple(KINDS)}, got {kind!r}.")
    return kind


def _check_form(kind: str, form: str) -> str:
    if form not in _FORMS:
        raise ValueError(f"form must be one of {_FORMS}, got {form!r}.")
    if form == "minimum" and kind != "positive_share":
        raise ValueError(f"form='minimum' is for kind='positive_share' only, got kind={kind!r}.")
    return form


def _binary(values, name: str, n_rows: int) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1 or a.shape[0] != n_rows:
        raise ValueError(
            f"{name} must be 1-d with {n_rows} entries (one per row of groups), "
            f"got shape {a.shape}."
        )
    if a.dtype == bool:
        return a.astype(np.int64)
    bad = ~np.isin(a, (0, 1))
    if np.any(bad):
        raise ValueError(f"{name} must hold 0/1 values, got {a[bad][0].item()!r}.")
    return a.astype(np.int64)


def calibration_counts(
    groups: ArrayLike, y_true: ArrayLike | None = None, *, kind: str
) -> CalibrationCounts:
    """The calibration rows per group (and per class for the conditional kinds).

    Needs no predictions, so it can set the training bound (:func:`certification_margin`)
    before the one look at the calibration predictions.

    Parameters
    ----------
    groups : array-like of shape (n,)
        Group of each calibration row.
    y_true : array-like of shape (n,) with 0/1 values, optional
        Required for the conditional kinds (``true_positive_rate_parity``,
        ``false_positive_rate_parity``, ``equalized_odds``).
    kind : str
        See :data:`KINDS`.

    Returns
    -------
    CalibrationCounts

    Examples
    --------
    >>> from sklearn_ialm.estimators._certificate import calibration_counts
    >>> c = calibration_counts(["a", "a", "b", "b", "b"], [1, 0, 1, 1, 0], kind="equalized_odds")
    >>> c.groups.tolist(), c.cells, c.n.tolist()
    (['a', 'b'], ('y=1', 'y=0'), [[1, 2], [1, 1]])
    """
    kind = _check_kind(kind)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] == 0:
        raise ValueError(f"groups must be a non-empty 1-d array, got shape {g.shape}.")
    labels, codes = np.unique(g, return_inverse=True)
    cells = KINDS[kind]
    if kind in _NEEDS_LABELS:
        if y_true is None:
            raise ValueError(f"kind={kind!r} needs y_true: its rates are per group and class.")
        y = _binary(y_true, "y_true", len(g))
        by_class = {"y=1": y == 1, "y=0": y == 0}
        n = np.array([np.bincount(codes[by_class[c]], minlength=len(labels)) for c in cells])
    else:
        n = np.bincount(codes, minlength=len(labels))[None, :]
    return CalibrationCounts(labels, cells, n)


def _pairs(groups: np.ndarray, protected) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs ``(a, b)``, ``a != b``, that involve a protected group; and the mask."""
    k = len(groups)
    if protected is None:
        is_protected = np.ones(k, dtype=bool)
    else:
        protected = np.asarray(protected).ravel().tolist()
        missing = [p for p in protected if p not in set(groups.tolist())]
        if missing or not protected:
            raise ValueError(
                f"protected must name groups of the calibration rows {groups.tolist()}, "
                f"got {protected!r}."
            )
        is_protected = np.isin(groups, protected)
    pair = (is_protected[:, None] | is_protected[None, :]) & ~np.eye(k, dtype=bool)
    return pair, is_protected


def _worst(value: np.ndarray, mask: np.ndarray, largest: bool) -> tuple[float, tuple]:
    """The worst entry of ``value`` (shape (cells, ...)) over ``mask``, and its index."""
    filled = np.where(mask, value, -np.inf if largest else np.inf)
    flat = np.nanargmax(filled) if largest else np.nanargmin(filled)
    idx = np.unravel_index(flat, filled.shape)
    return float(filled[idx]), tuple(int(i) for i in idx)


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


def _check_bound(form: str, bound: float) -> float:
    bound = float(bound)
    if not 0.0 <= bound <= 1.0:
        raise ValueError(f"bound must be in [0, 1] for form={form!r}, got {bound!r}.")
    return bound


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


def _expected_limits(n, p, alpha_lower, alpha_upper):
    """Clopper-Pearson limits at the expected count ``n p`` (a smooth stand-in for them)."""
    return _cp(np.asarray(n, float) * p, n, alpha_lower, alpha_upper)


def _ratio_margin(n_hi, p_hi, n_lo, bound, alpha, z, cov=0.0):
    """Smallest ``R - bound`` with ``E[lower_lo / upper_hi] - z sd >= bound`` at rate ratio R."""

    def slack(ratio):
        p_lo = ratio * p_hi
        lo = _expected_limits(n_lo, p_lo, alpha, alpha)[0]
        hi = _expected_limits(n_hi, p_hi, alpha, alpha)[1]
        value = float(lo / hi)
        # Delta method: relative variances add; shares of one total covary negatively,
        # which adds 2 / n_pos (passed in as cov = 1 / n_pos).
        rel = (1 - p_lo) / (n_lo * p_lo) + (1 - p_hi) / (n_hi * p_hi) + 2 * cov
        return value - z * value * np.sqrt(max(rel, 0.0)) - bound

    if min(n_hi, n_lo) == 0 or p_hi <= 0 or slack(1.0) < 0:
        return np.inf
    if bound <= 0 or slack(bound) >= 0:
        return 0.0
    return brentq(slack, bound, 1.0, xtol=1e-6) - bound


def _minimum_margin(n_pos, bound, delta, z):
    """Smallest ``s - bound`` with ``E[lower(share)] - z sd >= bound`` at population share s."""

    def slack(share):
        lo = float(_expected_limits(n_pos, share, delta, 0.0)[0])
        return lo - z * np.sqrt(share * (1 - share) / n_pos) - bound

    top = 1.0 - 1e-12
    if n_pos <= 0 or slack(top) < 0:
        return np.inf
    return 0.0 if slack(bound) >= 0 else brentq(slack, bound, top, xtol=1e-6) - bound


def certification_margin(
    kind: str,
    form: str,
    counts: CalibrationCounts | ArrayLike,
    delta: float,
    *,
    bound: float,
    rates: float | ArrayLike = 0.5,
    power: float = 0.5,
    protected: ArrayLike | None = None,
) -> float:
    """How much tighter than ``bound`` to train so that the certificate passes.

    The Seldonian candidate-selection step: computed from the calibration counts only, before
    the one look at the calibration predictions (the certificate conditions on the counts,
    so using them here keeps its guarantee). Train at ``bound - margin`` (difference) or
    ``bound + margin`` (ratio, minimum); a model whose population metric sits there passes the
    certificate with probability about ``power``.

    Approximation: the certified value is the calibration estimate plus the Clopper-Pearson
    distances of the worst pair, taken at the expected counts ``n * rate``; the estimate is
    normal around the population value (the delta method for ratios). The worst pair (or
    cell) is the one with the largest margin, so with unequal groups the margin is set by
    the smallest ones. With more than two groups near the extremes the plug-in maximum is
    biased upward and the pass probability is a little lower than ``power``; with two cells
    (equalized odds) both must pass, about ``power ** 2`` when both sit at the margin.

    Parameters
    ----------
    kind, form : str
        As in :func:`fairness_certificate`.
    counts : CalibrationCounts or array-like of shape (n_cells, n_groups)
        From :func:`calibration_counts` (an array is read as its ``n``, with groups
        ``0, ..., n_groups - 1``). For ``positive_share``: the group sizes.
    delta : float in (0, 1)
    bound : float in [0, 1]
    rates : float or array-like broadcastable to (n_cells, n_groups), default=0.5
        Expected rate of each cell at the operating point (selection rate, TPR in ``y=1``
        cells, FPR in ``y=0`` cells, error rate); for a ratio, the rate of the higher group.
        0.5 gives the widest intervals, hence a safe margin for a difference (a ratio's
        relative widths grow as the rate falls). For ``positive_share``: the
        overall positive prediction rate (a scalar); the shares are taken at ``bound``
        (minimum) or at the groups' proportions (difference, ratio).
    power : float in (0, 1), default=0.5
        Wanted probability of passing.
    protected : array-like, optional
        As in :func:`fairness_certificate`.

    Returns
    -------
    float
        The margin, in the units of the metric; ``inf`` when even a model at the metric's
        best value (gap 0, ratio 1, share 1) would not pass with probability ``power``:
        the calibration split is too small for this bound.

    Examples
    --------
    >>> from sklearn_ialm.estimators._certificate import certification_margin
    >>> m = certification_margin("demographic_parity", "difference", [[1000, 1000]], 0.05,
    ...                          bound=0.1, rates=0.3)
    >>> round(m, 3)
    0.058
    """
    kind = _check_kind(kind)
    form = _check_form(kind, form)
    bound = _check_bound(form, bound)
    delta = _check_level(delta, "delta")
    power = _check_level(power, "power")
    z = float(norm.ppf(power))
    n, p, pair = _margin_inputs(kind, counts, rates, protected)
    if kind == "positive_share":
        return _share_margin(form, n, p, pair, bound, delta, z)
    return _pair_margin(form, n, p, pair, bound, delta, z, cov=0.0)


def _margin_inputs(kind, counts, rates, protected):
    """``(n, p, pair)``: the checked counts and rates, shape ``(n_cells, n_groups)``, and the
    pairs of groups that count (see :func:`certification_margin`)."""
    if isinstance(counts, CalibrationCounts):
        labels, n = counts.groups, np.asarray(counts.n)
    else:
        n = np.atleast_2d(np.asarray(counts))
        labels = np.arange(n.shape[1])
    n_cells = len(KINDS[kind])
    if n.ndim != 2 or n.shape[0] != n_cells or np.any(n < 0):
        raise ValueError(
            f"counts for kind={kind!r} must be non-negative, of shape ({n_cells}, n_groups), "
            f"got {n.tolist()!r}."
        )
    pair = _pairs(labels, None if protected is None else np.asarray(protected))[0]
    p = np.broadcast_to(np.asarray(rates, dtype=float), n.shape).astype(float)
    if np.any((p <= 0) | (p >= 1)):
        raise ValueError(f"rates must be in (0, 1), got {np.asarray(rates).tolist()!r}.")
    return n, p, pair


def _share_margin(form, n, p, pair, bound, delta, z):
    """The margin for ``positive_share``, from the group sizes ``n`` and the overall
    positive prediction rate ``p[0, 0]``.

    Shares are rates over the positive predictions, ``n_pos`` of them (expected), taken at
    the groups' proportions: what parity of selection rates would give.
    """
    sizes = n.astype(float)
    n_pos = float(p[0, 0]) * float(sizes.sum())
    if form == "minimum":
        return _minimum_margin(n_pos, bound, delta, z)
    # Shares of one multinomial total covary negatively: var(a - b) gains 2 s_a s_b / n.
    return _pair_margin(
        form, np.full(sizes.shape, n_pos), sizes / sizes.sum(), pair, bound, delta, z, cov=1.0
    )


def _pair_margin(form, n, p, pair, bound, delta, z, cov):
    """The margin of a difference or ratio: the largest over the cells and the pairs that
    count, each side's limit at ``delta / 2``; ``cov`` 1 for shares of one total, else 0."""
    alpha = delta / 2
    if form == "difference":
        with np.errstate(divide="ignore", invalid="ignore"):
            lower, upper = _expected_limits(n, p, alpha, alpha)
            var = np.where(n > 0, p * (1 - p) / np.maximum(n, 1), np.inf)
            extra = cov * 2 * p[:, :, None] * p[:, None, :] / np.maximum(n, 1)[:, :, None]
            m = (
                (upper - p)[:, :, None]
                + (p - lower)[:, None, :]
                + z * np.sqrt(var[:, :, None] + var[:, None, :] + extra)
            )
        margin = _worst(m, np.broadcast_to(pair, m.shape), largest=True)[0]
        return float(margin) if margin < bound else np.inf
    margins = [
        _ratio_margin(
            n[c, a], p[c, a], n[c, b], bound, alpha, z, cov=cov / n[c, a] if cov else 0.0
        )
        for c in range(n.shape[0])
        for a, b in zip(*np.nonzero(pair), strict=True)
    ]
    return float(max(margins))


def difference_training_bound(
    n: ArrayLike,
    rates: ArrayLike,
    pair: ArrayLike,
    *,
    bound: float,
    delta: float,
    power: float,
    trial_bound: float,
) -> float | None:
    """The loosest bound to train a difference at so that every cell passes the certificate
    together with probability about ``power``; None when not even a model with no gap would.

    The Seldonian candidate selection of :func:`certification_margin`, for a model whose
    rates are known from a trial fit at ``trial_bound`` (its predictions on the training
    rows, never the calibration rows'): ``rates[c, g]`` per cell and group, aligned with the
    calibration counts ``n``. Loosening the training bound by ``s`` is taken to raise every
    pair's gap by ``s`` (the pairs at the bound move with it; the others move less, so this
    errs on the safe side), capped at the new bound. A pair passes when its estimate plus
    the Clopper-Pearson distances at the expected counts stays within ``bound``, the
    estimate normal around the gap; the cells' and pairs' passes are taken as independent
    (pairs sharing a group pass together more often: the product errs on the safe side).
    So a cell far inside the bound costs nothing, where the per-cell margin of
    :func:`certification_margin` charges every cell as if it were at the bound.
    """
    n = np.asarray(n, dtype=float)
    p = np.broadcast_to(np.asarray(rates, dtype=float), n.shape)
    pair = np.broadcast_to(np.asarray(pair, dtype=bool), (n.shape[0],) + pair.shape[-2:])
    if np.any(n[np.any(pair, axis=2)] == 0) or np.any(n[np.any(pair, axis=1)] == 0):
        return None  # an empty cell of a pair that counts: the interval [0, 1]
    alpha = delta / 2
    lower, upper = _expected_limits(n, p, alpha, alpha)
    var = p * (1 - p) / np.maximum(n, 1)
    # Per pair (a, b) of each cell: the distances, the sd of the estimate, the trial gap.
    dist = (upper - p)[:, :, None] + (p - lower)[:, None, :]
    sd = np.sqrt(var[:, :, None] + var[:, None, :])
    gap = p[:, :, None] - p[:, None, :]
    # The pairs that lean the other way (a negative gap) are left out: they fail only when
    # the estimate swings across parity by more than the distances, which matters for a
    # model near parity only; there the pass probability is overstated (about 0.8 for 0.9
    # at gap 0), as with the per-cell margin of :func:`certification_margin`.
    pair = pair & (gap >= 0)
    dist, sd, gap = dist[pair], sd[pair], gap[pair]

    def log_pass(t):
        shifted = np.minimum(gap + (t - trial_bound), t)
        return float(np.sum(norm.logcdf((bound - shifted - dist) / np.maximum(sd, 1e-12))))

    target = np.log(_check_level(power, "power"))
    if log_pass(0.0) < target:
        return None
    if log_pass(bound) >= target:
        return float(bound)
    return float(brentq(lambda t: log_pass(t) - target, 0.0, bound, xtol=1e-6))
