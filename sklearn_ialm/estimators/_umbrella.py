"""The NP umbrella rule: a threshold whose false-positive rate is certified on new data.

Tong, Feng & Li (2018), "Neyman-Pearson classification algorithms and NP receiver operating
characteristics", Science Advances 4(2). Let ``s_(1) <= ... <= s_(n)`` be the scores of ``n``
negatives drawn independently of the scoring rule (held out from its training). Classifying
as positive when ``score > s_(k)`` gives a population false-positive rate ``R_k`` with

``P(R_k > alpha) <= v(k) = sum_{j=k}^{n} C(n, j) (1 - alpha)^j alpha^(n - j)``
``                       = P(Binomial(n, 1 - alpha) >= k)``,

whatever the distribution of the scores (ties included, with the strict ``>``). The rule
takes the smallest ``k`` with ``v(k) <= delta``: the lowest threshold, hence the fewest
false negatives, that keeps ``P(R_k > alpha) <= delta``. ``v(n) = (1 - alpha)^n``, so a
threshold exists only when ``(1 - alpha)^n <= delta``.

For continuous scores ``R_k`` follows ``Beta(n - k + 1, k)``, so the bound is exact there;
its quantiles are the confidence limits of the NP-ROC band.

A larger threshold only lowers the false-positive rate, so any threshold ``t >= s_(k)`` keeps
the guarantee (the estimator raises ``s_(k)`` by a rounding margin, see
:class:`~sklearn_ialm.NeymanPearsonClassifier`).

Pure functions of ``n``, ``alpha``, ``delta`` and the scores: no estimator, no randomness.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist
from scipy.stats import binom

__all__ = [
    "UmbrellaThreshold",
    "fpr_confidence_bounds",
    "training_fpr_upper_limit",
    "umbrella_min_calibration_size",
    "umbrella_rank",
    "umbrella_threshold",
    "umbrella_violation_bounds",
]


class UmbrellaThreshold(NamedTuple):
    """The umbrella threshold of a set of held-out negative scores."""

    #: ``s_(k)``: classify as positive when ``score > threshold``.
    threshold: float
    #: ``k``, 1-based rank of the threshold among the sorted held-out scores.
    rank: int
    #: ``v(k)``: the certified bound on ``P(population FPR > max_fpr)``; ``<= delta``.
    violation_bound: float
    #: ``n``, the number of held-out negative scores.
    n_calibration: int


def _check_rate(value: float, name: str) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}.")
    return value


def umbrella_violation_bounds(n_calibration: int, max_fpr: float) -> np.ndarray:
    """``v(k) = P(Binomial(n, 1 - max_fpr) >= k)`` for every rank ``k = 1, ..., n``.

    Parameters
    ----------
    n_calibration : int
        Number ``n >= 1`` of held-out negative scores.
    max_fpr : float in (0, 1)
        The bound ``alpha`` on the population false-positive rate.

    Returns
    -------
    ndarray of shape (n_calibration,)
        Entry ``k - 1`` bounds the probability that thresholding at the ``k``-th smallest
        held-out score gives a population false-positive rate above ``max_fpr``.
        Nonincreasing in ``k``.

    Examples
    --------
    >>> from sklearn_ialm.estimators._umbrella import umbrella_violation_bounds
    >>> umbrella_violation_bounds(3, 0.5).round(3).tolist()  # 7/8, 1/2, 1/8
    [0.875, 0.5, 0.125]
    """
    n = int(n_calibration)
    if n < 1:
        raise ValueError(f"n_calibration must be >= 1, got {n_calibration!r}.")
    alpha = _check_rate(max_fpr, "max_fpr")
    return binom.sf(np.arange(n), n, 1.0 - alpha)


def umbrella_min_calibration_size(max_fpr: float, delta: float) -> int:
    """The fewest held-out negatives with which the rule can certify ``max_fpr`` at ``delta``.

    The smallest ``n`` with ``(1 - max_fpr)^n <= delta`` (the bound of the largest score,
    ``v(n)``), computed with the same function as :func:`umbrella_violation_bounds` so that
    the two never disagree at a boundary.

    Examples
    --------
    >>> from sklearn_ialm.estimators._umbrella import umbrella_min_calibration_size
    >>> umbrella_min_calibration_size(0.05, 0.05), umbrella_min_calibration_size(0.2, 0.05)
    (59, 14)
    """
    alpha = _check_rate(max_fpr, "max_fpr")
    delta = _check_rate(delta, "delta")

    def v_top(n: int) -> float:
        return float(binom.sf(n - 1, n, 1.0 - alpha))

    n = max(1, math.ceil(math.log(delta) / math.log1p(-alpha)))
    while v_top(n) > delta:
        n += 1
    while n > 1 and v_top(n - 1) <= delta:
        n -= 1
    return n


def umbrella_rank(n_calibration: int, max_fpr: float, delta: float) -> tuple[int, float]:
    """The umbrella rank ``k`` (1-based) and its bound ``v(k)``, for ``n`` held-out scores.

    The smallest ``k`` with ``v(k) <= delta``, found over all candidates at once.

    Raises
    ------
    ValueError
        When ``v(n) = (1 - max_fpr)^n > delta``: no rank certifies the bound; the message
        gives the number of held-out negatives needed.

    Examples
    --------
    >>> from sklearn_ialm.estimators._umbrella import umbrella_rank
    >>> k, v = umbrella_rank(100, 0.05, 0.05)
    >>> k, round(v, 4)
    (99, 0.0371)
    """
    delta = _check_rate(delta, "delta")
    v = umbrella_violation_bounds(n_calibration, max_fpr)
    ok = v <= delta
    if not ok[-1]:
        needed = umbrella_min_calibration_size(max_fpr, delta)
        raise ValueError(
            f"{int(n_calibration)} held-out negative scores are too few to certify "
            f"max_fpr={float(max_fpr):g} with delta={delta:g}: the umbrella rule needs "
            f"(1 - max_fpr)^n <= delta, i.e. at least {needed}."
        )
    k = int(np.argmax(ok)) + 1
    return k, float(v[k - 1])


def umbrella_threshold(scores: ArrayLike, max_fpr: float, delta: float) -> UmbrellaThreshold:
    """The umbrella threshold of held-out negative scores.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Scores of negatives that played no part in training the scoring rule.
    max_fpr : float in (0, 1)
        The bound ``alpha`` on the population false-positive rate.
    delta : float in (0, 1)
        The tolerated probability of exceeding it.

    Returns
    -------
    UmbrellaThreshold
        ``(threshold, rank, violation_bound, n_calibration)``. Classify as positive when
        ``score > threshold``; then ``P(population FPR > max_fpr) <= violation_bound <=
        delta`` over the draw of the held-out negatives.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.estimators._umbrella import umbrella_threshold
    >>> scores = np.random.default_rng(0).standard_normal(200)
    >>> t = umbrella_threshold(scores, max_fpr=0.1, delta=0.05)
    >>> t.rank, bool(t.threshold == np.sort(scores)[t.rank - 1])
    (188, True)
    >>> round(t.violation_bound, 4)
    0.032
    """
    s = np.asarray(scores, dtype=float).ravel()
    if s.size == 0:
        raise ValueError("umbrella_threshold needs at least one held-out score.")
    if not np.all(np.isfinite(s)):
        raise ValueError("The held-out scores contain NaN or infinity.")
    k, v = umbrella_rank(s.size, max_fpr, delta)
    threshold = float(np.partition(s, k - 1)[k - 1])
    return UmbrellaThreshold(threshold, k, v, int(s.size))


def fpr_confidence_bounds(n_calibration: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Confidence limits of the population false-positive rate of each order statistic.

    Thresholding at ``s_(k)``, the population rate ``R_k`` satisfies
    ``P(R_k > upper[k - 1]) <= delta`` and ``P(R_k < lower[k - 1]) <= delta`` (exactly
    ``delta`` for continuous scores, where ``R_k ~ Beta(n - k + 1, k)``). The upper limit is
    the umbrella bound read the other way: ``v(k) <= delta`` at ``max_fpr = a`` exactly when
    ``upper[k - 1] <= a``, so the umbrella rank for ``a`` is the first ``k`` with
    ``upper[k - 1] <= a``.

    Returns
    -------
    lower, upper : ndarray of shape (n_calibration,)
        Both decreasing in ``k``.
    """
    n = int(n_calibration)
    if n < 1:
        raise ValueError(f"n_calibration must be >= 1, got {n_calibration!r}.")
    delta = _check_rate(delta, "delta")
    k = np.arange(1, n + 1)
    return beta_dist.ppf(delta, n - k + 1, k), beta_dist.isf(delta, n - k + 1, k)


def training_fpr_upper_limit(n_negatives: int, max_fpr: float, delta: float) -> float:
    """How far above ``max_fpr`` a threshold set on ``n`` negatives may put new rows' rate.

    A threshold that flags ``floor(max_fpr * n)`` of ``n`` negatives is the order statistic
    ``s_(k)``, ``k = n - floor(max_fpr * n)``. Were those negatives fresh draws, its
    population false-positive rate would follow ``Beta(n - k + 1, k)`` (continuous scores);
    this returns its upper ``1 - delta`` quantile, the value the rate on new rows exceeds
    with probability ``delta`` from sampling alone. A model fitted on the same negatives
    overfits them as well, so the real spread is wider: this is a lower bound on the
    problem, used to tell a user when the training-rows reading will not carry to new rows.

    Examples
    --------
    >>> from sklearn_ialm.estimators._umbrella import training_fpr_upper_limit
    >>> round(training_fpr_upper_limit(210, 0.1, 0.05), 3)
    0.141
    >>> round(training_fpr_upper_limit(5000, 0.1, 0.05), 3)
    0.107
    """
    n = int(n_negatives)
    if n < 1:
        raise ValueError(f"n_negatives must be >= 1, got {n_negatives!r}.")
    alpha = _check_rate(max_fpr, "max_fpr")
    delta = _check_rate(delta, "delta")
    k = n - math.floor(alpha * n)
    return float(beta_dist.isf(delta, n - k + 1, k))
