"""How much tighter than the bound to train so that the fairness certificate passes.

The Seldonian candidate-selection step of the certified fit (:mod:`._certified`), computed
from the calibration counts only, before any look at the calibration predictions (see
:func:`certification_margin`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.stats import norm

from ._certificate_counts import (
    KINDS,
    CalibrationCounts,
    _check_bound,
    _check_form,
    _check_kind,
    _check_level,
    _cp,
    _pairs,
    _worst,
)

__all__ = ["certification_margin", "difference_training_bound"]


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
    any look at the calibration predictions (the certificate conditions on the counts,
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
