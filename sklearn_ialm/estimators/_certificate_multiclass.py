"""The Clopper-Pearson certificate of a fairness bound on more than two classes, per class.

On ``K > 2`` classes :class:`~sklearn_ialm.FairLogisticClassifier` bounds every parity kind
one-vs-rest (:mod:`._multiclass`): per class ``c`` and group ``g`` a rate ``r[c, g]``,

===============================  ==============================================  ==============
kind                             rate                                            cells
===============================  ==============================================  ==============
``demographic_parity``           ``P(pred = c | G = g)``                         ``all[c]``
``true_positive_rate_parity``    ``P(pred = c | G = g, Y = c)``                  ``own[c]``
``false_positive_rate_parity``   ``P(pred = c | G = g, Y != c)``                 ``other[c]``
``equalized_odds``               both of the above                               both
``error_rate_parity``            ``P(pred != y | G = g)`` (one rate, no class)   ``error``
===============================  ==============================================  ==============

and the metric is the largest gap ``max_cells max_{a != b} r[cell, a] - r[cell, b]`` over the
pairs that involve a protected group (``form="difference"`` only, as the fit).

**Why it holds, and why no union over classes is needed for the model's verdict.** The model
is trained without the calibration rows. The calibration rows of a group are an i.i.d. draw
from that group's population (a simple random draw within each group; for
``true_positive_rate_parity`` within each group and class, whose cells are single classes).
Given the labels of the calibration rows, the rows of a cell (a group's rows of one label, or
of every label but ``c``, or all of them) are then an i.i.d. draw from the cell's population,
so the count ``k[cell, g]`` is ``Binomial(n[cell, g], r[cell, g])`` and Clopper-Pearson's
limits at ``delta / 2`` a side fail with probability at most ``delta / 2`` each, whatever the
rate. (A draw stratified by group *and* class would fix the class mix of the cells that pool
classes, ``all[c]`` and ``other[c]``, to the sample's: their counts would be sums of binomials
of different rates, whose target is not the population's mix; hence the draw by group.) The
certified value is ``U = max_cells max_{a != b} upper[cell, a] - lower[cell, b]``. The
population metric is attained at one cell (one class, one part) and one pair, which depend on
the population and the model only, not on the calibration draw; exactly as in the binary
argument (:mod:`._certificate`), ``D > U`` needs that cell's pair's upper limit to fail or its
lower limit to fail, so ``P(D > U) <= delta``: the class is one more index of the cell, and
the worst class is fixed in advance, as the worst pair is.

**Per class.** ``class_values[c]`` is the same worst case over the cells of class ``c`` only.
Each class's statement ``D_c <= class_values[c]`` holds with probability at least
``1 - delta`` *on its own* (its worst pair is fixed in advance too); all of them at once is a
union over the classes, ``P(some D_c > class_values[c]) <= K delta``. The model's verdict
(``certified``) is the first statement, ``max_c D_c <= value``, at ``delta``.

A class that the model never predicts on the calibration rows has counts 0 in its cells: its
limits are finite (Clopper-Pearson's upper limit for 0 of ``n``) and bound its rates all the
same, but its gap is not a measured one; it is reported as ``"never predicted"``, not as
``"certified"``.

Counts are unweighted (the population the calibration rows are drawn from, each row once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._certificate import (
    FairnessCertificate,
    _certify,
    _check_bound,
    _check_level,
    _pairs,
)
from ._certificate_margin import _pair_margin

__all__ = [
    "MULTICLASS_KINDS",
    "MulticlassCertificate",
    "multiclass_cells",
    "multiclass_counts",
    "multiclass_fairness_certificate",
    "multiclass_margin",
    "multiclass_rates",
]

#: The kinds certified on more than two classes and the parts of each (one cell per class,
#: but ``"error"``, a single cell).
MULTICLASS_KINDS = {
    "demographic_parity": ("all",),
    "true_positive_rate_parity": ("own",),
    "false_positive_rate_parity": ("other",),
    "equalized_odds": ("own", "other"),
    "error_rate_parity": ("error",),
}


def _check_kind(kind: str) -> str:
    if kind not in MULTICLASS_KINDS:
        raise ValueError(
            f"kind must be one of {tuple(MULTICLASS_KINDS)} on more than two classes, "
            f"got {kind!r}."
        )
    return kind


def multiclass_cells(kind: str, n_classes: int) -> tuple[tuple[str, ...], np.ndarray]:
    """``(names, classes)``: the cells of ``kind`` on ``n_classes`` classes and the class code
    of each (-1 for ``"error"``)."""
    kind = _check_kind(kind)
    names, owner = [], []
    for part in MULTICLASS_KINDS[kind]:
        for c in [-1] if part == "error" else range(n_classes):
            names.append("error" if c < 0 else f"{part}[{c}]")
            owner.append(c)
    return tuple(names), np.asarray(owner, dtype=np.intp)


def _cell_rows(part: str, c: int, y: np.ndarray) -> np.ndarray:
    """The rows a cell's rate is taken over."""
    if part == "own":
        return y == c
    if part == "other":
        return y != c
    return np.ones(len(y), dtype=bool)


def _cell_counts(kind, y, codes, n_groups, n_classes, hit_of=None):
    """Rows (``hit_of`` None) or hits per cell and group, shape ``(n_cells, n_groups)``."""
    out = []
    for part in MULTICLASS_KINDS[kind]:
        for c in [-1] if part == "error" else range(n_classes):
            rows = _cell_rows(part, c, y)
            weights = None if hit_of is None else hit_of(part, c)[rows]
            out.append(np.bincount(codes[rows], weights=weights, minlength=n_groups))
    return np.asarray(out).astype(np.int64)


def _codes_in(values, name: str, n_rows: int, n_classes: int) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1 or a.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-d with {n_rows} entries, got shape {a.shape}.")
    if a.size and not (
        np.issubdtype(a.dtype, np.integer) and a.min() >= 0 and a.max() < n_classes
    ):
        raise ValueError(
            f"{name} must hold class codes 0 .. {n_classes - 1} (positions in classes_), "
            f"got values from {a.min()!r} to {a.max()!r}."
        )
    return a.astype(np.intp)


def multiclass_counts(
    groups: ArrayLike, y_true: ArrayLike, *, n_classes: int, kind: str
) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """``(group labels, cell names, n)``: calibration rows per cell and group, before any
    prediction (for :func:`multiclass_margin`). ``y_true`` holds class codes."""
    kind = _check_kind(kind)
    labels, codes = np.unique(np.asarray(groups), return_inverse=True)
    y = _codes_in(y_true, "y_true", len(codes), n_classes)
    names, _ = multiclass_cells(kind, n_classes)
    return labels, names, _cell_counts(kind, y, codes, len(labels), n_classes)


@dataclass(frozen=True)
class MulticlassCertificate:
    """The safety test of a fairness bound on more than two classes (module docstring)."""

    #: The certificate over every cell (all classes): ``value``, ``certified`` and the
    #: counts and limits per cell (``overall.cells`` names them) and group.
    overall: FairnessCertificate
    #: The classes (``classes_`` of the model), in code order.
    classes: np.ndarray
    #: Per class: the worst case of the limits over its cells (nan for ``error_rate_parity``,
    #: a rate of no class). Each holds at ``delta`` on its own; together at ``K delta``.
    class_values: np.ndarray
    #: Per class: the predictions of that class on the calibration rows.
    n_predicted: np.ndarray
    #: Per class label: ``"certified"``, ``"not certified"`` or ``"never predicted"``
    #: (no calibration row was predicted that class: its bound is not a measured gap).
    class_status: dict

    kind = property(lambda self: self.overall.kind)
    form = property(lambda self: self.overall.form)
    bound = property(lambda self: self.overall.bound)
    delta = property(lambda self: self.overall.delta)
    value = property(lambda self: self.overall.value)
    estimate = property(lambda self: self.overall.estimate)
    certified = property(lambda self: self.overall.certified)
    groups = property(lambda self: self.overall.groups)

    @property
    def message(self) -> str:
        """The overall decision and what set it, with the classes not certified."""
        text = self.overall.message
        cell = self.overall.cells[self.overall.worst[0]]
        owner = multiclass_cells(self.kind, len(self.classes))[1][self.overall.worst[0]]
        if owner >= 0:
            label = self.classes.tolist()[owner]
            text = text.replace(f"cell {cell}", f"cell {cell} (class {label!r})")
        never = [k for k, s in self.class_status.items() if s == "never predicted"]
        missed = [k for k, s in self.class_status.items() if s == "not certified"]
        if missed:
            text += f" Classes not certified: {missed}."
        if never:
            text += f" Never predicted on the calibration rows: {never}."
        return text


def multiclass_fairness_certificate(
    y_pred: ArrayLike,
    y_true: ArrayLike,
    groups: ArrayLike,
    *,
    classes: ArrayLike,
    kind: str,
    bound: float,
    delta: float,
    protected: ArrayLike | None = None,
) -> MulticlassCertificate:
    """Certify a one-vs-rest fairness bound on ``K > 2`` classes from calibration rows.

    See the module docstring for the rates and for why ``P(population metric > value) <=
    delta`` over the draw of the calibration rows, given a model trained without them.

    Parameters
    ----------
    y_pred, y_true : array-like of shape (n,) of int
        Predicted and true class codes (positions in ``classes``) of the calibration rows.
    groups : array-like of shape (n,)
        Group of each calibration row.
    classes : array-like of shape (K,)
        The class labels, for the report; ``K >= 2``.
    kind : str
        One of :data:`MULTICLASS_KINDS`.
    bound : float in [0, 1]
        The largest gap allowed.
    delta : float in (0, 1)
    protected : array-like, optional
        Groups whose pairs count; all groups by default.

    Returns
    -------
    MulticlassCertificate

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.estimators._certificate_multiclass import (
    ...     multiclass_fairness_certificate)
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(["a", "b"], 3000)
    >>> y_pred = rng.choice(3, size=6000, p=[0.5, 0.3, 0.2])
    >>> cert = multiclass_fairness_certificate(y_pred, y_pred, groups, classes=["x", "y", "z"],
    ...                                        kind="demographic_parity", bound=0.08, delta=0.05)
    >>> bool(cert.certified), cert.class_status["z"]
    (True, 'certified')
    """
    kind = _check_kind(kind)
    bound = _check_bound("difference", bound)
    delta = _check_level(delta, "delta")
    classes = np.asarray(classes)
    K = len(classes)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] == 0:
        raise ValueError(f"groups must be a non-empty 1-d array, got shape {g.shape}.")
    labels, codes = np.unique(g, return_inverse=True)
    if len(labels) < 2:
        raise ValueError(f"A difference needs at least 2 groups, got {labels.tolist()}.")
    pred = _codes_in(y_pred, "y_pred", len(g), K)
    y = _codes_in(y_true, "y_true", len(g), K)
    pair, is_protected = _pairs(labels, None if protected is None else np.asarray(protected))
    names, owner = multiclass_cells(kind, K)
    n = _cell_counts(kind, y, codes, len(labels), K)

    def hit_of(part, c):
        return (pred != y) if part == "error" else (pred == c)

    k = _cell_counts(kind, y, codes, len(labels), K, hit_of)
    overall = _certify(kind, "difference", bound, delta, labels, names, n, k, pair, is_protected)
    d = overall.upper[:, :, None] - overall.lower[:, None, :]
    d = np.where(pair[None], d, -np.inf)
    n_predicted = np.bincount(pred, minlength=K)
    class_values = np.full(K, np.nan)
    status = {}
    for c in range(K):
        label = classes[c].item() if hasattr(classes[c], "item") else classes[c]
        if owner[0] >= 0:
            class_values[c] = float(d[owner == c].max())
        if n_predicted[c] == 0:
            status[label] = "never predicted"
        elif owner[0] < 0:
            status[label] = "certified" if overall.certified else "not certified"
        else:
            status[label] = "certified" if class_values[c] <= bound else "not certified"
    return MulticlassCertificate(overall, classes, class_values, n_predicted, status)


def multiclass_margin(
    n: np.ndarray,
    delta: float,
    *,
    bound: float,
    pair: np.ndarray,
    power: float,
    rates: float | ArrayLike = 0.5,
) -> float:
    """How much tighter than ``bound`` to train so that the certificate passes with about
    probability ``power`` (:func:`._certificate.certification_margin`'s approximation, with
    ``rates`` the expected rate of each cell and group: 0.5, the widest intervals, by
    default); ``inf`` when no model would pass."""
    from scipy.stats import norm

    n = np.asarray(n, dtype=float)
    p = np.broadcast_to(np.asarray(rates, dtype=float), n.shape)
    z = float(norm.ppf(_check_level(power, "power")))
    return _pair_margin("difference", n, p, pair, bound, delta, z, cov=0.0)


def multiclass_rates(
    kind: str, y_pred: np.ndarray, y_true: np.ndarray, codes: np.ndarray, *, n_classes: int
) -> np.ndarray:
    """The rate of each cell and group of a model's predictions (class codes) on rows that
    are not calibration rows (the training rows), shape ``(n_cells, codes.max() + 1)``: what
    :func:`multiclass_margin` takes as ``rates``. A cell without rows takes 0.5 (the widest
    intervals); the rates are kept off 0 and 1 (an estimate, not a certainty)."""
    n_groups = int(codes.max()) + 1

    def hit_of(part, c):
        return (y_pred != y_true) if part == "error" else (y_pred == c)

    rows = _cell_counts(kind, y_true, codes, n_groups, n_classes)
    hits = _cell_counts(kind, y_true, codes, n_groups, n_classes, hit_of)
    rates = np.where(rows > 0, hits / np.maximum(rows, 1), 0.5)
    return np.clip(rates, 1e-3, 1 - 1e-3)
