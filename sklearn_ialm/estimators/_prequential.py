"""A prequential certificate for ``partial_fit``: the rows of a stream, each predicted by the
model of its time before any model learnt from it.

``FairLogisticClassifier(calibration="clopper-pearson").partial_fit`` counts, per group and
label, the rows of nonzero weight and their positive predictions, each batch predicted by the
model the stream had *before* that batch (``StreamState.prequential``: two small integer
arrays, whatever the stream's length). No row is held out: every row is both a test row for
the models before it and a training row for those after.

**What it certifies: the sequence of models, not the final one.** Row ``i`` of a cell (a group,
and a label for the conditional kinds) is predicted by a model ``f_i`` fixed before the row was
drawn; with the rows an i.i.d. draw from one population (no drift), the row's hit (a positive
prediction, or an error) is a Bernoulli draw of probability ``p_i``, the population rate of
``f_i`` in that cell, given everything before it. The certified quantity of a cell is the mean
``p_bar = (1 / n) sum_i p_i`` over its ``n`` rows: the rate, on new rows, of the stream's
models as they predicted (the rate of the randomised classifier that answers a row of the cell
with the model of a row of the cell picked at random). The certificate's metric is the
fairness metric of these rates. It says nothing of the final model (``coef_``): the
early models, whose gaps are larger, weigh in it as much as the last; the final model's rates
on new rows need held-out rows (:meth:`fit` with the calibration).

**Why the limits hold.** ``p_i`` changes with the rows before it (the models learn), so the
count is not binomial and Clopper-Pearson's limits are not exact for it: a rate chosen after
seeing the earlier hits can lead them astray (rate 0.5 until the hits fall 3 standard
deviations short, then rate 1, breaks Clopper-Pearson's upper limit at ``alpha = 0.025`` in 54
of 1200 streams of 10000 rows, against a binomial limit of 39; the limit below in none:
``tests/test_certificate_coverage.py``). The limits here hold for any such sequence:
for ``lam > 0``, ``M_n = prod_i exp(-lam X_i) / (1 - p_i (1 - e^-lam))`` is a martingale of
mean 1, and as ``log`` is concave, ``sum_i log(1 - p_i a) <= n log(1 - p_bar a)``, so
``M_n >= exp(-lam S - n log(1 - p_bar a))``. A mixture of such martingales over a grid of
``lam`` fixed in advance (:data:`LAMBDAS`, equal weights) is one too, and Ville's inequality
gives ``P(for some n, mixture >= 1 / alpha) <= alpha``; the upper limit is the largest
``p_bar`` at which the bound on the mixture stays below ``1 / alpha`` (the lower limit the same
with ``exp(+lam X_i)``). The limits hold **at every call at once** (a stream's user reads them
after every call: no peeking penalty), but they are wider than Clopper-Pearson's at the same
level: 1.7 to 1.8 times as wide for a cell of 100 to 1e5 rows at rate 0.3 (the price of rates
that move with the rows, and of reading at any call), see :func:`prequential_limits`.

**The delta split.** The worst pair of groups of the sequence's rates depends on the stream
(the models are random), so it is not fixed in advance as in the held-out certificate: every
interval the metric uses must hold at once, a union bound, ``delta / m`` for each of the ``m``
one-sided limits the pairs that count use (upper limits of the groups that can be the higher
one of a pair, lower limits of those that can be the lower one, in every cell).

Counts are unweighted (each row once). Pure numpy/scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.special import logsumexp

from ._certificate import (
    KINDS,
    FairnessCertificate,
    _check_bound,
    _check_form,
    _check_kind,
    _check_level,
    _metric,
    _pairs,
    _worst_case,
)

__all__ = [
    "LAMBDAS",
    "PrequentialCertificate",
    "PrequentialFPRCertificate",
    "count_prequential",
    "prequential_certificate",
    "prequential_counts",
    "prequential_fpr_certificate",
    "prequential_limits",
    "publish_prequential",
]

#: The mixture's grid of exponents, fixed in advance (a factor sqrt(2) apart from 2^-12 to 4:
#: near the best one for a cell of 1 to 1e7 rows).
LAMBDAS = 2.0 ** (np.arange(-24, 5) / 2)


def _log_mixture(s, n, p, sign):
    """log of the mixture's bound at mean rate ``p``: ``sign`` -1 for the upper limit (the
    hits too few for ``p``), +1 for the lower limit (too many)."""
    lam = LAMBDAS
    if sign < 0:
        terms = -lam * s - n * np.log1p(-p * -np.expm1(-lam))
    else:
        terms = lam * s - n * np.log1p(p * np.expm1(lam))
    return float(logsumexp(terms) - np.log(len(lam)))


def _limit(s, n, alpha, sign):
    """One limit of one cell (trivial at ``alpha`` 0 or without rows)."""
    if alpha <= 0 or n == 0:
        return 1.0 if sign < 0 else 0.0
    level = -np.log(alpha)
    if sign < 0:  # upper: the bound grows with p; at p = s / n it is below 1 <= 1 / alpha
        top = 1.0 - 1e-15
        if s == n or _log_mixture(s, n, top, sign) < level:
            return 1.0
        return brentq(lambda p: _log_mixture(s, n, p, sign) - level, s / n, top, xtol=1e-10)
    if s == 0 or _log_mixture(s, n, 0.0, sign) < level:
        return 0.0
    return brentq(lambda p: _log_mixture(s, n, p, sign) - level, 0.0, s / n, xtol=1e-10)


def prequential_limits(
    k: ArrayLike, n: ArrayLike, alpha_lower: float, alpha_upper: float
) -> tuple[np.ndarray, np.ndarray]:
    """Limits of the mean rate of a predictable sequence of Bernoulli draws, at every ``n``.

    For hits ``X_i`` with ``P(X_i = 1 | the past) = p_i``: ``P(for some n, p_bar_n <
    lower(S_n, n)) <= alpha_lower`` and the same above at ``alpha_upper`` (module docstring).

    Parameters
    ----------
    k, n : array-like of int
        Hits and rows, broadcast together, ``0 <= k <= n``.
    alpha_lower, alpha_upper : float in [0, 1)
        One-sided levels; 0 gives the trivial limit.

    Returns
    -------
    lower, upper : ndarray

    Examples
    --------
    >>> from sklearn_ialm.estimators._certificate import clopper_pearson
    >>> from sklearn_ialm.estimators._prequential import prequential_limits
    >>> [round(float(v[0]), 4) for v in prequential_limits([300], [1000], 0.025, 0.025)]
    [0.2506, 0.3526]
    >>> [round(float(v[0]), 4) for v in clopper_pearson([300], [1000], 0.025, 0.025)]
    [0.2717, 0.3295]
    """
    alpha_lower = _check_level(alpha_lower, "alpha_lower", low_closed=True)
    alpha_upper = _check_level(alpha_upper, "alpha_upper", low_closed=True)
    k, n = np.broadcast_arrays(np.asarray(k), np.asarray(n))
    if np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)):
        raise ValueError(f"k must be whole with 0 <= k <= n, got k={k.tolist()!r}.")
    lower = np.array([_limit(s, m, alpha_lower, +1) for s, m in zip(k.flat, n.flat, strict=True)])
    upper = np.array([_limit(s, m, alpha_upper, -1) for s, m in zip(k.flat, n.flat, strict=True)])
    return lower.reshape(k.shape), upper.reshape(k.shape)


@dataclass(frozen=True)
class PrequentialCertificate:
    """The certificate of the stream's sequence of models (module docstring)."""

    #: The limits and counts per cell and group (``alpha_lower``/``alpha_upper``: the level of
    #: each limit, ``delta`` over the number of limits used); ``value``, ``certified``.
    sequence: FairnessCertificate
    #: The stream's rows counted (nonzero weight, each predicted before it was learnt).
    n_rows: int

    kind = property(lambda self: self.sequence.kind)
    form = property(lambda self: self.sequence.form)
    bound = property(lambda self: self.sequence.bound)
    delta = property(lambda self: self.sequence.delta)
    value = property(lambda self: self.sequence.value)
    estimate = property(lambda self: self.sequence.estimate)
    certified = property(lambda self: self.sequence.certified)

    @property
    def message(self) -> str:
        return (
            f"Prequential certificate of the stream's models as they predicted its "
            f"{self.n_rows} rows (not of the final model): "
            + self.sequence.message.replace("calibration estimate", "prequential estimate")
        )


@dataclass(frozen=True)
class PrequentialFPRCertificate:
    """Neyman-Pearson's prequential certificate: an upper limit of the false-positive rate of
    the stream's models as they predicted its negatives (not of the final model)."""

    bound: float  # max_fpr
    delta: float
    #: The upper limit at level ``delta`` (the only limit: the whole ``delta`` on it).
    value: float
    #: The share of the negatives predicted positive, each by the model of its time.
    estimate: float
    certified: bool
    #: The negatives counted, and those predicted positive.
    n: int
    k: int
    #: The stream's rows counted (nonzero weight, each predicted before it was learnt).
    n_rows: int
    kind: str = "false_positive_rate"
    form: str = "upper"

    @property
    def message(self) -> str:
        verdict = "certified" if self.certified else "could not certify"
        return (
            f"Prequential certificate of the stream's models as they predicted its "
            f"{self.n_rows} rows (not of the final model): {verdict} false-positive rate <= "
            f"{self.bound:g} at delta={self.delta:g}: upper limit {self.value:.4g} "
            f"(prequential estimate {self.estimate:.4g}, {self.k}/{self.n} negatives)."
        )


def prequential_fpr_certificate(
    negatives: int, false_positives: int, *, max_fpr: float, delta: float, n_rows: int
) -> PrequentialFPRCertificate:
    """Certify ``max_fpr`` for the sequence of a Neyman-Pearson stream's models from its
    prequential counts of negatives and of their positive predictions (module docstring;
    one limit, so the whole ``delta`` on it).

    Examples
    --------
    >>> from sklearn_ialm.estimators._prequential import prequential_fpr_certificate
    >>> cert = prequential_fpr_certificate(5000, 400, max_fpr=0.1, delta=0.05, n_rows=10000)
    >>> bool(cert.certified), round(cert.value, 4)
    (True, 0.0932)
    """
    delta = _check_level(delta, "delta")
    upper = float(prequential_limits([false_positives], [negatives], 0.0, delta)[1][0])
    estimate = false_positives / negatives if negatives else float("nan")
    return PrequentialFPRCertificate(
        bound=float(max_fpr), delta=delta, value=upper, estimate=estimate,
        certified=bool(upper <= max_fpr), n=int(negatives), k=int(false_positives),
        n_rows=int(n_rows),
    )  # fmt: skip


def _cell_counts(kind, rows, positive):
    """``(n, k)`` of ``kind``'s cells from rows and positive predictions per group and label
    (shape ``(n_groups, 2)``, label 0 then 1)."""
    rows, positive = np.asarray(rows, np.int64), np.asarray(positive, np.int64)
    if kind == "positive_share":
        k = positive.sum(axis=1)[None, :]
        return np.full_like(k, int(k.sum())), k
    if kind == "error_rate_parity":
        errors = positive[:, 0] + rows[:, 1] - positive[:, 1]
        return rows.sum(axis=1)[None, :], errors[None, :]
    if kind == "demographic_parity":
        return rows.sum(axis=1)[None, :], positive.sum(axis=1)[None, :]
    label = {"y=1": 1, "y=0": 0}
    cells = [label[c] for c in KINDS[kind]]
    return rows[:, cells].T, positive[:, cells].T


def prequential_certificate(
    rows: ArrayLike,
    positive: ArrayLike,
    groups: ArrayLike,
    *,
    kind: str,
    form: str = "difference",
    bound: float,
    delta: float,
    protected: ArrayLike | None = None,
) -> PrequentialCertificate:
    """Certify a fairness bound for the sequence of a stream's models from prequential counts.

    Parameters
    ----------
    rows, positive : array-like of int, shape (n_groups, 2)
        Per group and label (0, 1): the rows, and their positive predictions, each by the
        model of its time, before it learnt from the row.
    groups : array-like of shape (n_groups,)
        The group labels, in the order of the rows of ``rows``.
    kind, form, bound, delta, protected
        As in :func:`._certificate.fairness_certificate`.

    Returns
    -------
    PrequentialCertificate

    Examples
    --------
    >>> from sklearn_ialm.estimators._prequential import prequential_certificate
    >>> cert = prequential_certificate([[7000, 3000], [7000, 3000]],
    ...                                [[1400, 1800], [1500, 1900]], ["a", "b"],
    ...                                kind="demographic_parity", bound=0.06, delta=0.05)
    >>> bool(cert.certified), round(cert.estimate, 3), round(cert.value, 3)
    (True, 0.02, 0.055)
    """
    kind = _check_kind(kind)
    form = _check_form(kind, form)
    bound = _check_bound(form, bound)
    delta = _check_level(delta, "delta")
    labels = np.asarray(groups)
    rows, positive = np.asarray(rows), np.asarray(positive)
    if rows.shape != (len(labels), 2) or positive.shape != rows.shape:
        raise ValueError(
            f"rows and positive must have shape ({len(labels)}, 2) (group x label), got "
            f"{rows.shape} and {positive.shape}."
        )
    if form != "minimum" and len(labels) < 2:
        raise ValueError(f"A {form} needs at least 2 groups, got {labels.tolist()}.")
    pair, is_protected = _pairs(labels, None if protected is None else np.asarray(protected))
    n, k = _cell_counts(kind, rows, positive)
    if form == "minimum":
        m = int(is_protected.sum())
        alpha_lower, alpha_upper = delta / m, 0.0
    else:
        # Upper limits of the groups that can be the higher of a pair, lower limits of those
        # that can be the lower one, in every cell: all must hold at once.
        m = n.shape[0] * int(pair.any(axis=1).sum() + pair.any(axis=0).sum())
        alpha_lower = alpha_upper = delta / m
    lower, upper = prequential_limits(k, n, alpha_lower, alpha_upper)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    value, worst, certified = _worst_case(form, bound, lower, upper, pair, is_protected)
    sequence = FairnessCertificate(
        kind=kind, form=form, bound=bound, delta=delta, value=value,
        estimate=_metric(rates, form, pair, is_protected), certified=bool(certified),
        groups=labels, cells=KINDS[kind], n=n, k=k, lower=lower, upper=upper,
        alpha_lower=alpha_lower, alpha_upper=alpha_upper, worst=worst,
    )  # fmt: skip
    return PrequentialCertificate(sequence, int(np.asarray(rows).sum()))


# -- the stream's side ------------------------------------------------------------------------
def count_prequential(cells: np.ndarray, positive: np.ndarray, n_cells: int) -> np.ndarray:
    """The batch's rows and positive predictions per cell (``2 * group + label``), to add to
    ``StreamState.prequential`` before the batch is learnt."""
    return np.stack(
        [np.bincount(cells, minlength=n_cells), np.bincount(cells, weights=positive,
                                                             minlength=n_cells)]
    ).astype(np.int64)  # fmt: skip


def prequential_counts(work, pose) -> np.ndarray | None:
    """The zero counts of a new certified stream, shape ``(2, pose.n_cells)`` (None without
    a calibration), or the ValueError of a stream with nothing to certify. ``pose``: the
    stream's (:mod:`._stream`): Neyman-Pearson's has ``max_fpr``, a fairness one with
    groups has ``labels``."""
    if getattr(work, "calibration", None) is None:
        return None
    if not hasattr(work, "constraint"):
        if getattr(pose, "max_fpr", None) is None:  # more than two classes, no bound
            raise ValueError(
                "calibration='umbrella' with partial_fit certifies max_fpr on two classes; "
                "this stream has more than two classes and no bound to certify."
            )
        return np.zeros((2, pose.n_cells), dtype=np.int64)  # cell 0: the negatives
    if work.constraint == "disparate_impact":
        raise ValueError(
            "calibration='clopper-pearson' does not certify constraint='disparate_impact' "
            "(a ratio to the overall rate); use constraint='demographic_parity' with "
            "form='ratio', the ratio between groups."
        )
    if getattr(pose, "labels", None) is None or not len(pose.protected):
        raise ValueError(
            "calibration='clopper-pearson' needs sensitive_features and groups= (at least "
            "two groups, one protected, of min_group_size rows) on the first call to "
            "partial_fit: the certificate is on the groups' rates."
        )
    return np.zeros((2, pose.n_cells), dtype=np.int64)


def publish_prequential(work, state) -> None:
    """``prequential_certificate_`` and ``prequential_certified_`` of a certified stream, from
    its counts over the groups kept in the constraints (``min_group_size``); of the
    negatives' false-positive rate for Neyman-Pearson."""
    pose = state.pose
    if not hasattr(work, "constraint"):
        rows, positive = state.prequential
        cert = prequential_fpr_certificate(
            int(rows[0]), int(positive[0]), max_fpr=pose.max_fpr, delta=work.delta,
            n_rows=int(rows.sum()),
        )  # fmt: skip
        work.prequential_certificate_ = cert
        work.prequential_certified_ = bool(cert.certified)
        return
    kept = np.setdiff1d(np.arange(len(pose.labels)), pose.excluded)
    rows, positive = (c.reshape(-1, 2)[kept] for c in state.prequential)
    kind, form = work.constraint, pose.form or "difference"
    if kind == "positive_share":
        form = "minimum"
    cert = prequential_certificate(
        rows, positive, pose.labels[kept], kind=kind, form=form, bound=pose.bound,
        delta=work.delta, protected=pose.labels[pose.protected],
    )  # fmt: skip
    work.prequential_certificate_ = cert
    work.prequential_certified_ = bool(cert.certified)
