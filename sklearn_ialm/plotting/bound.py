"""The bound display: the groups' rates with exact intervals, and the bounded metric, on
training and new rows side by side.

It draws :class:`~sklearn_ialm.BoundReport` objects: one panel per rate the bound is on
(selection rate, true- and false-positive rates, ...), the groups on the horizontal axis and,
for each set of rows, the rate of ``predict`` with its exact interval; then one panel per
bound with the metric, its worst case over the intervals (the limit) and the bound. matplotlib
is imported when something is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..report import BoundReport
from ..report._rates import OVERALL

__all__ = ["BoundDisplay"]


def _panel_rates(report):
    """The rates of the per-group panels, in the report's order (each once)."""
    names = []
    for r in report.rates:
        if r["rate"] not in names:
            names.append(r["rate"])
    return names


def _axes_for(ax, n_panels, figsize):
    """``n_panels`` axes: new ones, the given sequence, or a single Axes split in columns
    (as scikit-learn's PartialDependenceDisplay splits one)."""
    import matplotlib.pyplot as plt

    widths = [3] * (n_panels - 1) + [2]
    if ax is None:
        fig = plt.figure(figsize=figsize, layout="constrained")
        return np.array(fig.subplots(1, n_panels, gridspec_kw={"width_ratios": widths}), ndmin=1)
    if isinstance(ax, Sequence | np.ndarray):
        axes = np.asarray(ax, dtype=object).ravel()
        if len(axes) != n_panels:
            raise ValueError(f"ax must hold {n_panels} axes (one per panel), got {len(axes)}.")
        return axes
    spec = ax.get_subplotspec().subgridspec(1, n_panels, width_ratios=widths)
    fig = ax.figure
    ax.remove()
    return np.array([fig.add_subplot(s) for s in spec], dtype=object)


class BoundDisplay:
    """The groups' rates with exact intervals and the bound, on one or more sets of rows.

    Build it with :meth:`from_estimator`; the constructor takes computed reports. Each
    panel but the last shows one rate of ``predict`` per group (and overall, at the right), with
    its exact interval, one marker per set of rows (training rows and new rows side by
    side). Where the bound is on differences between the groups' rates, a band of the
    bound's width, centred on the midrange of each set's rates, shows where the rates must
    fit; for a ratio, a line at ``bound`` times the largest rate; for a share, a line at the
    bound. The last panel shows each bound's metric (fairlearn's) per set of rows: the value
    (dot), the limit (the metric's worst case over the intervals, end of the bar) and the
    bound (dashed line); the side that breaks the bound is shaded.

    Parameters
    ----------
    reports : list of BoundReport
        Reports of one estimator on different rows (e.g. training and test rows); at least
        one.
    labels : list of str
        Name of each report's rows, for the legend.
    estimator_name : str, default=None
        Name for the title; the reports' estimator when None.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
        The panels: the rates, then the bounds.
    figure_ : matplotlib Figure
        The figure of the panels.

    See Also
    --------
    sklearn_ialm.BoundReport : The numbers of the figure, as tables.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import FairLogisticClassifier
    >>> from sklearn_ialm.plotting import BoundDisplay
    >>> X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    >>> groups = np.where(X[:, 2] < -0.5, "b", "a")
    >>> clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1,
    ...                              random_state=0)
    >>> clf = clf.fit(X[:400], y[:400], sensitive_features=groups[:400])
    >>> display = BoundDisplay.from_estimator(
    ...     clf, X[:400], y[:400], sensitive_features=groups[:400],
    ...     X_test=X[400:], y_test=y[400:], sensitive_features_test=groups[400:])
    >>> display.labels, len(display.axes_)
    (['training', 'test'], 2)
    """

    def __init__(self, *, reports, labels, estimator_name=None):
        reports, labels = list(reports), list(labels)
        if not reports:
            raise ValueError(
                "BoundDisplay needs at least one BoundReport (reports is empty): build it "
                "with BoundDisplay.from_estimator, or pass the reports of "
                "estimator.bound_report(X, y, ...)."
            )
        if not all(isinstance(r, BoundReport) for r in reports):
            kinds = sorted({type(r).__name__ for r in reports if not isinstance(r, BoundReport)})
            raise TypeError(f"reports must be BoundReport objects, got {kinds}.")
        if len(reports) != len(labels):
            raise ValueError(f"{len(reports)} reports but {len(labels)} labels.")
        self.reports = list(reports)
        self.labels = list(labels)
        self.estimator_name = estimator_name

    def plot(self, ax=None, *, colors=None, figsize=None):
        """Draw the panels.

        Parameters
        ----------
        ax : matplotlib Axes or array of Axes, default=None
            One Axes per panel (the rates, then one for the bounds), or a single Axes whose
            space is split into them; a new figure when None.
        colors : list of color, default=None
            One per set of rows; matplotlib's first colors when None.
        figsize : tuple, default=None
            Size of a new figure; about 3 inches per panel when None.

        Returns
        -------
        display : BoundDisplay
        """
        first = self.reports[0]
        rates = _panel_rates(first)
        n_panels = len(rates) + 1
        figsize = figsize or (3.2 * len(rates) + 2.6, 3.6)
        axes = _axes_for(ax, n_panels, figsize)
        colors = colors or [f"C{i}" for i in range(len(self.reports))]
        for a, rate in zip(axes[:-1], rates, strict=True):
            self._plot_rate(a, rate, colors)
        self._plot_bounds(axes[-1], colors)
        axes[0].legend(loc="best", fontsize="small")
        name = self.estimator_name or first.estimator_name
        axes[0].figure.suptitle(f"{name}: {first.description}", fontsize="medium")
        self.axes_ = axes
        self.figure_ = axes[0].figure
        return self

    def _plot_rate(self, ax, rate, colors):
        first = self.reports[0]
        groups = [r["group"] for r in first.rates if r["rate"] == rate]
        n_sets = len(self.reports)
        offsets = (np.arange(n_sets) - (n_sets - 1) / 2) * 0.25
        bound = first.bounds[0]
        form = _form(bound)
        shown = []  # every value drawn, for the zoom of the y axis
        for i, (report, label, color) in enumerate(
            zip(self.reports, self.labels, colors, strict=True)
        ):
            rows = {r["group"]: r for r in report.rates if r["rate"] == rate}
            xs, values, err = [], [], []
            for j, group in enumerate(groups):
                r = rows.get(group)
                if r is None or not np.isfinite(r["value"]):
                    continue
                xs.append(j + offsets[i])
                values.append(r["value"])
                err.append((r["value"] - r["lower"], r["upper"] - r["value"]))
                shown += [r["lower"], r["upper"]]
            err = np.array(err).T.reshape(2, -1)
            ax.errorbar(
                xs, values, yerr=err, fmt="o", color=color, capsize=3, label=f"{label} rows"
            )
            in_groups = [
                rows[g]["value"]
                for g in groups
                if g in rows and g is not OVERALL and np.isfinite(rows[g]["value"])
            ]
            if not in_groups or bound["name"] == "false_positive_rate":
                continue
            # Where the rates must fit for the bound to hold on these rows.
            if form == "difference":
                mid = (max(in_groups) + min(in_groups)) / 2
                half = bound["bound"] / 2
                ax.axhspan(mid - half, mid + half, color=color, alpha=0.12, linewidth=0)
                shown += [mid - half, mid + half]
            elif form == "ratio" and bound["name"] != "min_impact_ratio":
                ax.axhline(bound["bound"] * max(in_groups), color=color, ls=":", lw=1)
                shown.append(bound["bound"] * max(in_groups))
        lines = [b["bound"] for b in first.bounds if b["name"] == "false_positive_rate"]
        lines = (lines if rate == "false_positive_rate" else []) + (
            [bound["bound"]] if form == "share" else []
        )
        for level in lines:
            ax.axhline(level, color="k", ls="--", lw=1)
        shown += lines
        ax.set_xticks(range(len(groups)), [str(g) for g in groups])
        for tick, group in zip(ax.get_xticklabels(), groups, strict=True):
            protected = next(
                (r["protected"] for r in first.rates if r["rate"] == rate and r["group"] == group),
                None,
            )
            if protected:
                tick.set_fontweight("bold")
        ax.set(
            title=f"{rate.replace('_', ' ')} ({_condition_text(rate, first)})",
            ylabel=f"rate, {first.confidence:.0%} exact interval",
            ylim=_zoom(shown),
            xlim=(-0.6, len(groups) - 0.4),
        )
        ax.title.set_fontsize("medium")

    def _plot_bounds(self, ax, colors):
        first = self.reports[0]
        names = [b["name"] for b in first.bounds]
        n_sets = len(self.reports)
        offsets = (np.arange(n_sets) - (n_sets - 1) / 2) * 0.25
        for i, (report, color) in enumerate(zip(self.reports, colors, strict=True)):
            for j, b in enumerate(report.bounds):
                x = j + offsets[i]
                if np.isfinite(b["limit"]):
                    ax.plot([x, x], [b["value"], b["limit"]], color=color, lw=2)
                    ax.plot(x, b["limit"], marker="_", color=color, ms=10, mew=2)
                ax.plot(x, b["value"], "o", color=color)
        for j, b in enumerate(first.bounds):
            ax.hlines(b["bound"], j - 0.45, j + 0.45, colors="k", linestyles="--", lw=1)
            # The side of the dashed line that breaks the bound.
            low, high = (b["bound"], 1.0) if b["direction"] == "<=" else (0.0, b["bound"])
            ax.fill_between([j - 0.45, j + 0.45], low, high, color="tab:red", alpha=0.08, lw=0)
        # Each bound's name, then the status on each set of rows: what a reviewer reads first.
        ticks = [
            "\n".join(
                [n.replace("_", " ")]
                + [f"{label}: {r.bounds[j]['status']}" for r, label in zip(
                    self.reports, self.labels, strict=True)]
            )
            for j, n in enumerate(names)
        ]  # fmt: skip
        ax.set_xticks(range(len(names)), ticks, fontsize="small")
        shown = [b["bound"] for b in first.bounds] + [
            v for r in self.reports for b in r.bounds for v in (b["value"], b["limit"])
        ]
        ax.set(
            title=f"metric and {first.confidence:.0%} limit",
            ylim=_zoom(shown),
            xlim=(-0.6, len(names) - 0.4),
        )
        ax.title.set_fontsize("medium")

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y: ArrayLike,
        *,
        sensitive_features: ArrayLike | None = None,
        X_test=None,
        y_test: ArrayLike | None = None,
        sensitive_features_test: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        sample_weight_test: ArrayLike | None = None,
        confidence: float = 0.95,
        labels: tuple[str, str] = ("training", "test"),
        name: str | None = None,
        ax=None,
        plot: bool = True,
        **kwargs,
    ) -> BoundDisplay:
        """The display of a fitted constrained classifier (or a Pipeline ending in one).

        Parameters
        ----------
        estimator : FairLogisticClassifier, NeymanPearsonClassifier or Pipeline
            Fitted; a Pipeline is reported as its last step on the transformed rows.
        X, y : rows and labels, usually the training rows
            Pandas inputs are paired with the rows of ``X`` as in
            :meth:`~sklearn_ialm.BoundReport.from_estimator`.
        sensitive_features : array-like, str or list of str, default=None
            Groups of the rows of ``X`` (required for the fairness classifier), or a column
            name of a DataFrame ``X`` (a list of them), as in ``fit``.
        X_test, y_test, sensitive_features_test : default=None
            New rows, drawn beside the first ones.
        sample_weight, sample_weight_test : array-like, default=None
            Weights of the rates of each set of rows.
        confidence : float in (0, 1), default=0.95
            Level of the exact intervals.
        labels : tuple of str, default=("training", "test")
            Names of the two sets of rows.
        name : str, default=None
            Name for the title; the estimator's class name when None.
        ax : matplotlib Axes or array of Axes, default=None
            See :meth:`plot`.
        plot : bool, default=True
            Whether to draw (False computes the reports only, without matplotlib).
        **kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        display : BoundDisplay
        """
        reports = [
            BoundReport.from_estimator(
                estimator,
                X,
                y,
                sensitive_features=sensitive_features,
                sample_weight=sample_weight,
                confidence=confidence,
            )
        ]
        if X_test is not None:
            if y_test is None:
                raise ValueError("X_test needs y_test (the rates condition on the labels).")
            reports.append(
                BoundReport.from_estimator(
                    estimator,
                    X_test,
                    y_test,
                    sensitive_features=sensitive_features_test,
                    sample_weight=sample_weight_test,
                    confidence=confidence,
                )
            )
        display = cls(reports=reports, labels=list(labels[: len(reports)]), estimator_name=name)
        return display.plot(ax=ax, **kwargs) if plot else display


def _zoom(values):
    """Limits of a y axis that shows ``values`` (nan ignored) with a margin, within [0, 1]
    unless a value lies beyond (an impact ratio can exceed 1)."""
    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    low, high = (0.0, 1.0) if not values.size else (values.min(), values.max())
    pad = max(0.05, 0.08 * (high - low))
    return max(low - pad, -0.02), min(high + pad, max(1.02, high + 0.02))


def _form(bound):
    """``"difference"``, ``"ratio"`` or ``"share"`` of a bound record."""
    if bound["name"] == "min_share_of_positives":
        return "share"
    if bound["direction"] == "<=":
        return "difference"
    return "ratio"


def _condition_text(rate, report):
    condition = next(r["condition"] for r in report.rates if r["rate"] == rate)
    return {"all": "all rows", "y=1": "rows with y=1", "y=0": "rows with y=0"}.get(
        condition, "of the positive predictions"
    )
