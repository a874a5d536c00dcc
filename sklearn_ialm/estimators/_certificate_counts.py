"""The calibration counts and their Clopper-Pearson limits, which the fairness certificate
(:mod:`._certificate`) and its training margin (:mod:`._certificate_margin`) share: the
constraint kinds and their cells, the checks of the arguments, the rows per group and cell,
and the pairs of groups that count.

Pure numpy/scipy: no estimator, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist

__all__ = ["KINDS", "CalibrationCounts", "calibration_counts", "clopper_pearson"]

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
    before any look at the calibration predictions.

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


def _check_bound(form: str, bound: float) -> float:
    bound = float(bound)
    if not 0.0 <= bound <= 1.0:
        raise ValueError(f"bound must be in [0, 1] for form={form!r}, got {bound!r}.")
    return bound
