"""The NP-ROC band: type I against type II error of thresholds with certified bounds.

Tong, Feng & Li (2018), "Neyman-Pearson classification algorithms and NP receiver operating
characteristics", Science Advances 4(2). Every candidate threshold is an order statistic
``s_(k)`` of the negatives' scores (predict positive when ``score > s_(k)``). For each, the
band gives

* horizontally, the population type I error (false-positive rate) between ``fpr_lower`` and
  ``fpr_upper``, each limit holding with probability at least ``1 - delta``: ``fpr_upper``
  is the bound the umbrella rule certifies, so the threshold a
  :class:`~sklearn_ialm.NeymanPearsonClassifier` with ``calibration="umbrella"`` would take
  from these negatives is the first one left of the vertical line at ``max_fpr``;
* vertically, the population power (1 - type II error, the true-positive rate) between
  ``tpr_lower`` and ``tpr_upper``, one-sided Clopper-Pearson limits from the positives, each
  at ``1 - delta``.

The limits are valid for data that played no part in training the scores: a test set, or
the held-out rows of a fit. matplotlib is imported when something is drawn, not before.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist

from ..estimators._rows import align_rows
from ..estimators._umbrella import fpr_confidence_bounds

__all__ = ["NPROCDisplay"]


def _binary_labels(y_true, pos_label):
    y_true = np.asarray(y_true).ravel()
    classes = np.unique(y_true)
    if classes.size != 2:
        raise ValueError(
            f"The NP-ROC band needs labels of 2 classes (negatives and positives), got "
            f"{classes.size}: {classes.tolist()}."
        )
    if pos_label is None:
        pos_label = classes[1]
    elif pos_label not in classes.tolist():
        raise ValueError(f"pos_label={pos_label!r} is not a label of y: {classes.tolist()}.")
    return (y_true == pos_label).astype(int), pos_label


def _np_roc_band(y01: np.ndarray, scores: np.ndarray, delta: float) -> dict:
    """The band's arrays, one entry per order statistic of the negatives' scores."""
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.shape != y01.shape:
        raise ValueError(f"y has {y01.size} rows but the scores have {scores.size}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("The scores contain NaN or infinity.")
    s0 = np.sort(scores[y01 == 0])
    s1 = np.sort(scores[y01 == 1])
    n0, n1 = s0.size, s1.size
    thresholds = s0
    # "score > t": the positives at or below t are missed, the negatives above it are false
    # alarms (ties go to the negative side, as in predict).
    misses = np.searchsorted(s1, thresholds, side="right")
    false_alarms = n0 - np.searchsorted(s0, thresholds, side="right")
    fpr_lower, fpr_upper = fpr_confidence_bounds(n0, delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        type2_upper = np.where(
            misses >= n1, 1.0, beta_dist.ppf(1 - delta, misses + 1, np.maximum(n1 - misses, 1))
        )
        type2_lower = np.where(
            misses <= 0, 0.0, beta_dist.ppf(delta, np.maximum(misses, 1), n1 - misses + 1)
        )
    return dict(
        thresholds=thresholds,
        fpr=false_alarms / n0,
        tpr=1.0 - misses / n1,
        fpr_lower=fpr_lower,
        fpr_upper=fpr_upper,
        tpr_lower=1.0 - type2_upper,
        tpr_upper=1.0 - type2_lower,
    )


class NPROCDisplay:
    """NP-ROC band: certified type I error against power, one point per threshold.

    Build it with :meth:`from_estimator` or :meth:`from_predictions`; the constructor takes
    precomputed arrays. All arrays have one entry per candidate threshold, the order
    statistics of the negatives' scores in increasing order.

    Parameters
    ----------
    thresholds : ndarray of shape (n_negatives,)
        Candidate thresholds on the score (predict positive when ``score > threshold``).
    fpr, tpr : ndarray of shape (n_negatives,)
        Empirical false- and true-positive rates of each threshold on the data.
    fpr_lower, fpr_upper : ndarray of shape (n_negatives,)
        Limits of the population false-positive rate, each holding with probability at
        least ``1 - delta``; ``fpr_upper`` is the umbrella rule's certified bound.
    tpr_lower, tpr_upper : ndarray of shape (n_negatives,)
        One-sided Clopper-Pearson limits of the population true-positive rate, each at
        ``1 - delta``.
    delta : float
        Tolerated probability of each limit failing.
    max_fpr : float, default=None
        A bound on the false-positive rate to draw as a vertical line.
    operating_point : tuple of float, default=None
        ``(fpr, tpr)`` of a classifier's predictions on the data, drawn as a marker.
    estimator_name : str, default=None
        Name for the legend.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes with the band.
    figure_ : matplotlib Figure
        Figure containing the band.
    band_ : matplotlib Polygon
        The filled band.
    line_ : matplotlib Line2D
        The guaranteed curve, ``(fpr_upper, tpr_lower)``.
    empirical_line_ : matplotlib Line2D
        The empirical NP-ROC curve, ``(fpr, tpr)``.

    See Also
    --------
    sklearn.metrics.RocCurveDisplay : The ROC curve, without guarantees.
    sklearn_ialm.NeymanPearsonClassifier : Its ``calibration="umbrella"`` takes the threshold
        this band certifies at ``max_fpr``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn_ialm import NeymanPearsonClassifier
    >>> from sklearn_ialm.plotting import NPROCDisplay
    >>> X, y = make_classification(n_samples=3000, n_features=5, random_state=0)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> clf = NeymanPearsonClassifier(
    ...     max_fpr=0.1, calibration="umbrella", max_passes=300, random_state=0
    ... ).fit(X_train, y_train)
    >>> display = NPROCDisplay.from_estimator(clf, X_test, y_test)
    >>> display.max_fpr, display.delta
    (0.1, 0.05)
    >>> bool(display.fpr_upper[display.umbrella_index()] <= 0.1)
    True
    """

    def __init__(
        self,
        *,
        thresholds,
        fpr,
        tpr,
        fpr_lower,
        fpr_upper,
        tpr_lower,
        tpr_upper,
        delta,
        max_fpr=None,
        operating_point=None,
        estimator_name=None,
    ):
        self.thresholds = np.asarray(thresholds)
        self.fpr = np.asarray(fpr)
        self.tpr = np.asarray(tpr)
        self.fpr_lower = np.asarray(fpr_lower)
        self.fpr_upper = np.asarray(fpr_upper)
        self.tpr_lower = np.asarray(tpr_lower)
        self.tpr_upper = np.asarray(tpr_upper)
        self.delta = delta
        self.max_fpr = max_fpr
        self.operating_point = operating_point
        self.estimator_name = estimator_name

    def umbrella_index(self, max_fpr: float | None = None) -> int | None:
        """Index of the threshold the umbrella rule takes at ``max_fpr`` from these data.

        The first threshold whose certified bound ``fpr_upper`` is ``<= max_fpr`` (the
        lowest such threshold, hence the highest power), or ``None`` when there is none.
        """
        max_fpr = self.max_fpr if max_fpr is None else max_fpr
        if max_fpr is None:
            raise ValueError("umbrella_index needs max_fpr (none was given to the display).")
        ok = np.flatnonzero(self.fpr_upper <= max_fpr)
        return int(ok[0]) if ok.size else None

    def plot(self, ax=None, *, name=None, band_kwargs=None, **kwargs):
        """Draw the band.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.
        name : str, default=None
            Name of the curve in the legend; ``estimator_name`` when None.
        band_kwargs : dict, default=None
            Keyword arguments of the filled band (:meth:`matplotlib.axes.Axes.fill`).
        **kwargs : dict
            Keyword arguments of the guaranteed curve (:meth:`matplotlib.axes.Axes.plot`).

        Returns
        -------
        display : NPROCDisplay
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        name = self.estimator_name if name is None else name
        level = f"{1 - self.delta:.0%}"

        band = dict(alpha=0.25, linewidth=0, label=f"NP-ROC band ({level} per limit)")
        band.update(band_kwargs or {})
        # Lower curve (fpr_upper, tpr_lower) forward, upper curve (fpr_lower, tpr_upper)
        # back: a closed polygon between the two.
        xs = np.concatenate([[1.0], self.fpr_upper, [0.0], self.fpr_lower[::-1], [1.0]])
        ys = np.concatenate([[1.0], self.tpr_lower, [0.0], self.tpr_upper[::-1], [1.0]])
        (self.band_,) = ax.fill(xs, ys, **band)

        line = dict(label=f"{name}: certified" if name else "certified (FPR upper, TPR lower)")
        line.update(kwargs)
        (self.line_,) = ax.plot(self.fpr_upper, self.tpr_lower, **line)
        color = self.line_.get_color()
        self.band_.set_facecolor(band.get("color", color))
        (self.empirical_line_,) = ax.plot(
            self.fpr,
            self.tpr,
            color=color,
            linestyle=":",
            label=f"{name}: empirical" if name else "empirical",
        )
        if self.max_fpr is not None:
            ax.axvline(
                self.max_fpr,
                color="k",
                linestyle="--",
                linewidth=1,
                label=f"max_fpr = {self.max_fpr:g}",
            )
        if self.operating_point is not None:
            ax.plot(
                *self.operating_point,
                marker="o",
                color=color,
                linestyle="none",
                label=f"{name}: predict" if name else "predict",
            )
        ax.set(
            xlabel="Type I error (false-positive rate)",
            ylabel="1 - type II error (true-positive rate)",
            xlim=(-0.01, 1.01),
            ylim=(-0.01, 1.01),
        )
        ax.legend(loc="lower right")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true: ArrayLike,
        y_score: ArrayLike,
        *,
        delta: float = 0.05,
        max_fpr: float | None = None,
        pos_label=None,
        y_pred: ArrayLike | None = None,
        name: str | None = None,
        ax=None,
        plot: bool = True,
        **kwargs,
    ) -> NPROCDisplay:
        """The NP-ROC band of scores on data not used in training.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Binary labels.
        y_score : array-like of shape (n_samples,)
            Scores, larger meaning more positive.
        delta : float in (0, 1), default=0.05
            Tolerated probability of each confidence limit failing.
        max_fpr : float, default=None
            A bound on the false-positive rate, drawn as a vertical line.
        pos_label : label, default=None
            The positive class; the larger label when None.
        y_pred : array-like of shape (n_samples,), default=None
            Predictions of a classifier, drawn as its operating point.
        name : str, default=None
            Name for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        plot : bool, default=True
            Whether to draw (False computes the arrays only, without matplotlib).
        **kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        display : NPROCDisplay
        """
        if not 0.0 < float(delta) < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
        y01, pos_label = _binary_labels(y_true, pos_label)
        band = _np_roc_band(y01, y_score, float(delta))
        operating_point = None
        if y_pred is not None:
            positive = np.asarray(y_pred).ravel() == pos_label
            operating_point = (
                float(np.mean(positive[y01 == 0])),
                float(np.mean(positive[y01 == 1])),
            )
        display = cls(
            **band,
            delta=float(delta),
            max_fpr=max_fpr,
            operating_point=operating_point,
            estimator_name=name,
        )
        return display.plot(ax=ax, **kwargs) if plot else display

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y: ArrayLike,
        *,
        delta: float | None = None,
        max_fpr: float | None = None,
        name: str | None = None,
        ax=None,
        plot: bool = True,
        **kwargs,
    ) -> NPROCDisplay:
        """The NP-ROC band of a fitted binary classifier on data it was not trained on.

        Scores come from ``decision_function`` (else column 1 of ``predict_proba``), the
        positive class is ``estimator.classes_[1]``, and the operating point is
        ``predict(X)``. A :class:`~sklearn.pipeline.Pipeline` transforms ``X`` with its
        steps; ``delta``, ``max_fpr`` and the default name come from its last step.

        Parameters
        ----------
        estimator : fitted classifier, or a fitted Pipeline that ends in one
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            A pandas ``y`` is paired with the rows of a DataFrame ``X`` by its index, as in
            ``fit``.
        delta : float in (0, 1), default=None
            Tolerated probability of each limit failing; the estimator's ``delta`` when it
            has one, else 0.05.
        max_fpr : float, default=None
            Bound drawn as a vertical line; the bound the estimator was fitted with
            (``max_fpr_``, or its ``max_fpr``) when it has one.
        name : str, default=None
            Name for the legend; the estimator's class name when None.
        ax : matplotlib Axes, default=None
        plot : bool, default=True
            Whether to draw.
        **kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        display : NPROCDisplay
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)
        # The labels are paired with the rows of X as a fit pairs them (by index).
        (y,) = align_rows(X, y=y)
        classes = getattr(estimator, "classes_", None)
        if classes is None or len(classes) != 2:
            raise ValueError("from_estimator needs a fitted binary classifier (2 classes_).")
        if hasattr(estimator, "decision_function"):
            scores = estimator.decision_function(X)
        else:
            scores = estimator.predict_proba(X)[:, 1]
        from .convergence import _final_step

        # The bound and the risk belong to the classifier, the last step of a pipeline.
        final = _final_step(estimator)
        if delta is None:
            delta = getattr(final, "delta", 0.05)
        if max_fpr is None:
            # max_fpr_: the bound fitted (max_class_error={negative: alpha} on two classes).
            max_fpr = getattr(final, "max_fpr_", getattr(final, "max_fpr", None))
        return cls.from_predictions(
            y,
            scores,
            delta=delta,
            max_fpr=max_fpr,
            pos_label=classes[1],
            y_pred=estimator.predict(X),
            name=type(final).__name__ if name is None else name,
            ax=ax,
            plot=plot,
            **kwargs,
        )
