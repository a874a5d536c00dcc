"""``ConvergenceDisplay``: the constraint against its bound and the KKT residuals of a fit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ._histories import (
    _aggregate,
    _check_history,
    _estimator_units,
    _final_step,
    _positive,
)

__all__ = ["ConvergenceDisplay"]

_BANDS = ("range", "std")


def _pyplot():
    """``matplotlib.pyplot``, imported on first use (the ``plot`` extra)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised without matplotlib only
        raise ImportError(
            "ConvergenceDisplay needs matplotlib to draw: pip install 'sklearn-ialm[plot]'."
        ) from exc
    return plt


def _two_axes(ax):
    """The two panels (constraint, residuals) as an object array: ``ax``, or a new figure's."""
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(9.6, 3.6), layout="constrained")
    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != 2:
        raise ValueError(
            f"ax must hold two Axes (constraint, residuals), got {axes.size} of them."
        )
    return axes


class ConvergenceDisplay:
    """Convergence of a constrained fit: the constraint against its bound, and the residuals.

    Two panels over data passes: on the left the constraint value with its bound (and the
    bound plus ``tol``, what a converged run guarantees); on the right the primal and dual
    residuals on a log scale with ``tol``. One run is drawn as it was checked; several runs
    (seeds) as their mean with a band. Create it with :meth:`from_estimator` or
    :meth:`from_results`; the constructor takes histories that are already in the units to
    display.

    Parameters
    ----------
    histories : dict of ndarray, or list of them
        One history per run, each with equal-length 1-D arrays under ``x`` (below),
        ``"primal_residual"``, ``"dual_residual"`` and ``"constraint"`` (the constraint value
        in the units of ``bound``), like ``history_`` of the estimators.
    bound : float, default=0.0
        The bound of the constraint, in its units (``0`` for ``c(x) <= 0``).
    tol : float, default=None
        The tolerance of the run, drawn on both panels; ``None`` draws none.
    constraint_label : str, default="largest constraint value c(x)"
        The label of the constraint axis.
    bound_label : str, default=None
        The legend entry of the bound; ``None`` means ``"bound <value>"``.
    name : str, default=None
        Name of the model or method, for the legend.
    note : str, default=None
        A short text over the constraint panel (e.g. the values at the end of the fit).
    run_ends : dict of ndarray, default=None
        End points of other runs whose histories are not available: equal-length arrays
        ``x``, ``"primal_residual"`` and ``"dual_residual"``, drawn as markers.
    x : str, default="data_passes"
        The history entry on the horizontal axis (``"oracle_calls"`` for a sampled problem).

    Attributes
    ----------
    runs : list of dict
        The histories, checked, as float arrays (the horizontal axis also under ``"x"``).
    ax_ : ndarray of matplotlib Axes, shape (2,)
        The constraint panel and the residual panel.
    figure_ : matplotlib Figure
        The figure of the panels.
    lines_ : dict of matplotlib Line2D or None
        The drawn curves: ``"constraint"``, ``"primal_residual"`` and ``"dual_residual"``.
        ``None`` for a curve with nothing to draw: a fit without constraints (the weighted
        logistic Neyman-Pearson score, a single group) has no constraint value, and its
        primal residual is 0 at every check; the constraint panel then says so in text and
        the residual panel's title says why the primal residual is absent.

    See Also
    --------
    ConvergenceDisplay.from_estimator : Plot the convergence of a fitted estimator.
    ConvergenceDisplay.from_results : Plot the convergence of solver results.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import NeymanPearsonClassifier
    >>> from sklearn_ialm.plotting import ConvergenceDisplay
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> clf = NeymanPearsonClassifier(max_fpr=0.2, loss="sigmoid", tol=1e-2, random_state=0)
    >>> display = ConvergenceDisplay.from_estimator(clf.fit(X, y))  # the paper's model
    >>> display.ax_[0].get_ylabel()
    'soft false-positive rate'
    >>> display.bound, display.tol
    (0.2, 0.01)
    """

    def __init__(
        self,
        histories,
        *,
        bound: float = 0.0,
        tol: float | None = None,
        constraint_label: str = "largest constraint value c(x)",
        bound_label: str | None = None,
        name: str | None = None,
        note: str | None = None,
        run_ends: Mapping | None = None,
        x: str = "data_passes",
    ):
        if isinstance(histories, Mapping):
            histories = [histories]
        runs = [_check_history(h, x) for h in histories]
        if not runs:
            raise ValueError("ConvergenceDisplay needs at least one history.")
        self.runs = [dict(r, x=r[x]) for r in runs]
        self.bound = float(bound)
        self.tol = None if tol is None else float(tol)
        self.constraint_label = constraint_label
        self.bound_label = f"bound {self.bound:g}" if bound_label is None else bound_label
        self.name = name
        self.note = note
        self.run_ends = (
            None
            if run_ends is None
            else {
                "x": np.asarray(run_ends[x], dtype=float),
                "primal_residual": np.asarray(run_ends["primal_residual"], dtype=float),
                "dual_residual": np.asarray(run_ends["dual_residual"], dtype=float),
            }
        )
        self.x = x

    # -- drawing -----------------------------------------------------------------------------
    def plot(
        self, ax=None, *, name=None, band="range", show_runs=False, show_outer=True, color=None
    ):
        """Draw the two panels.

        Parameters
        ----------
        ax : sequence of two matplotlib Axes, default=None
            The constraint panel and the residual panel. ``None`` makes a new figure. Pass
            the ``ax_`` of another display to draw two fits on the same panels.
        name : str, default=None
            Name for the legend; overrides the display's ``name``.
        band : {"range", "std"}, default="range"
            With several runs: the band spans all runs (``"range"``, from the smallest to the
            largest value at each data pass) or one standard deviation around the mean
            (``"std"``, in log scale for the residuals, as in the paper's figures).
        show_runs : bool, default=False
            With several runs, also draw each run as a thin line.
        show_outer : bool, default=True
            With one run, mark the checks that ended an outer iteration (where the
            multipliers were updated and the penalty grew) by thin vertical lines on the
            residual panel.
        color : matplotlib color, default=None
            Color of this display's curves; ``None`` takes the next color of the cycle.

        Returns
        -------
        display : ConvergenceDisplay
            ``self``, with ``ax_``, ``figure_`` and ``lines_`` set.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from sklearn_ialm.plotting import ConvergenceDisplay
        >>> history = {"data_passes": [0.5, 1.0, 1.5], "constraint": [0.3, 0.05, 0.002],
        ...            "primal_residual": [0.3, 0.05, 0.002], "dual_residual": [0.2, 0.04, 0.008]}
        >>> fig, axes = plt.subplots(1, 2)
        >>> display = ConvergenceDisplay(history, tol=1e-2).plot(ax=axes)
        >>> sorted(display.lines_)
        ['constraint', 'dual_residual', 'primal_residual']
        """
        if band not in _BANDS:
            raise ValueError(f"band must be one of {_BANDS}, got {band!r}.")
        axes = _two_axes(ax)
        ax_c, ax_r = axes
        name = self.name if name is None else name
        # Displays drawn on the same panels take the colors of the cycle in turn.
        n_before = getattr(ax_r, "_ialm_displays", 0)
        ax_r._ialm_displays = n_before + 1
        first = n_before == 0
        if color is None:
            color = f"C{n_before % 10}"
        has_constraint, has_primal = self._draw_curves(ax_c, ax_r, name, band, show_runs, color)
        self._draw_run_ends(ax_r, color)
        if show_outer:
            for i, x in enumerate(self._outer_ends()):
                ax_r.axvline(
                    x,
                    color=color,
                    lw=0.6,
                    alpha=0.4,
                    zorder=0,
                    label="multiplier update" if i == 0 else None,
                )
        if len(self.runs) > 1:
            what = "range" if band == "range" else "one standard deviation"
            ax_r.set_title(f"mean of {len(self.runs)} runs, band: {what}", fontsize="small")
        if first:
            self._decorate(ax_c, ax_r, has_constraint)
        self._annotate(ax_c, ax_r, name, first, has_constraint, has_primal)
        if has_constraint:
            ax_c.legend(loc="best", fontsize="small")
        ax_r.legend(loc="best", fontsize="small")
        self.ax_ = axes
        self.figure_ = ax_c.figure
        return self

    def _draw_curves(self, ax_c, ax_r, name, band, show_runs, color):
        """The constraint and residual curves into ``lines_``: ``(has_constraint,
        has_primal)``, whether there was a constraint curve and a primal one to draw."""
        # What has no data is not drawn (an empty panel, a legend entry without a line), and
        # the panels say so: a fit without constraints has no constraint curve, and its
        # primal residual is 0 at every check, which a log axis cannot show.
        has_constraint = any(np.isfinite(r["constraint"]).any() for r in self.runs)
        has_primal = any((r["primal_residual"] > 0).any() for r in self.runs)
        self.lines_ = {"constraint": None, "primal_residual": None}
        if has_constraint:
            self.lines_["constraint"] = self._draw(
                ax_c, "constraint", False, band, show_runs, color, "-", name
            )
        if has_primal:
            self.lines_["primal_residual"] = self._draw(
                ax_r,
                "primal_residual",
                True,
                band,
                show_runs,
                color,
                "-",
                f"{name}: primal" if name else "primal residual",
            )
        self.lines_["dual_residual"] = self._draw(
            ax_r,
            "dual_residual",
            True,
            band,
            show_runs,
            color,
            "--",
            f"{name}: dual" if name else "dual residual",
        )
        return has_constraint, has_primal

    def _draw_run_ends(self, ax_r, color):
        """The other seeds' residuals at the end of their runs (``run_ends``), if any."""
        if self.run_ends is None or not len(self.run_ends["x"]):
            return
        ends = self.run_ends
        ax_r.plot(
            ends["x"],
            _positive(ends["primal_residual"]),
            "o",
            mfc="none",
            mec=color,
            label="other seeds: primal at the end",
        )
        ax_r.plot(
            ends["x"],
            _positive(ends["dual_residual"]),
            "x",
            color=color,
            label="other seeds: dual at the end",
        )

    def _annotate(self, ax_c, ax_r, name, first, has_constraint, has_primal):
        """The display's note, and what the panels leave out and why."""
        note = f"{name}: {self.note}" if (name and self.note) else self.note
        if not has_constraint and first:
            ax_c.set_axis_off()
            text = f"Nothing to draw here: the solver had {self.constraint_label}."
            ax_c.text(
                0.5, 0.5, text + (f"\n\n{note}" if note else ""), ha="center", va="center",
                wrap=True, fontsize="small", transform=ax_c.transAxes,
            )  # fmt: skip
        elif note:
            title = ax_c.get_title()
            ax_c.set_title(f"{title}\n{note}" if title else note, fontsize="small")
        if not has_primal:
            title = ax_r.get_title()
            said = "primal residual: 0 at every check, not drawn (log axis)"
            ax_r.set_title(f"{title}\n{said}" if title else said, fontsize="small")

    def _draw(self, ax, key, log, band, show_runs, color, linestyle, label):
        runs = self.runs
        if len(runs) == 1:
            r = runs[0]
            y = _positive(r[key]) if log else r[key]
            (line,) = ax.plot(r["x"], y, linestyle, color=color, marker=".", label=label)
            return line
        if show_runs:
            for r in runs:
                y = _positive(r[key]) if log else r[key]
                ax.plot(r["x"], y, linestyle, color=color, lw=0.6, alpha=0.5)
        grid, center, low, high = _aggregate(runs, key, band, log)
        (line,) = ax.plot(grid, center, linestyle, color=color, label=label)
        if linestyle == "-":  # one band per panel and display: around the solid curve
            ax.fill_between(grid, low, high, color=color, alpha=0.2, lw=0)
        # Where each run ended: after its end the mean holds its last value.
        ends = np.array([(r["x"][-1], r[key][-1]) for r in runs])
        ax.plot(
            ends[:, 0],
            _positive(ends[:, 1]) if log else ends[:, 1],
            "o" if linestyle == "-" else "x",
            color=color,
            ms=4,
            mfc="none" if linestyle == "-" else color,
            label="ends of the runs" if key == "constraint" else None,
        )
        return line

    def _outer_ends(self):
        """Data passes of the checks that ended an outer iteration (multiplier updates)."""
        if len(self.runs) != 1 or "outer_iter" not in self.runs[0]:
            return np.array([])
        r = self.runs[0]
        ends = r["x"][:-1][np.diff(r["outer_iter"]) > 0]
        return ends if len(ends) <= 30 else np.array([])

    def _decorate(self, ax_c, ax_r, has_constraint=True):
        xlabel = self.x.replace("_", " ")
        if has_constraint:
            ax_c.axhline(self.bound, color="k", ls="--", lw=1, label=self.bound_label)
        if self.tol is not None and has_constraint:
            ax_c.axhspan(
                self.bound,
                self.bound + self.tol,
                color="0.5",
                alpha=0.15,
                lw=0,
                label=f"bound + tol ({self.tol:g})",
            )
        if self.tol is not None:
            ax_r.axhline(self.tol, color="k", ls=":", lw=1, label=f"tol {self.tol:g}")
        ax_c.set_xlabel(xlabel)
        ax_c.set_ylabel(self.constraint_label)
        ax_r.set_xlabel(xlabel)
        ax_r.set_ylabel("KKT residual")
        ax_r.set_yscale("log")

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_estimator(
        cls, estimator, *, ax=None, name=None, band="range", show_runs=False, color=None
    ):
        """Plot the convergence of a fitted estimator of this package.

        The constraint is drawn in the units of the estimator's bound where the solver's
        constraint value maps onto them exactly: the soft false-positive rate against
        ``max_fpr`` (:class:`~sklearn_ialm.NeymanPearsonClassifier`), the largest parity gap
        ``|mean_g p - mean_rest p|`` against ``bound_`` (``"demographic_parity"``). For
        ``"positive_share"`` and ``"disparate_impact"`` the solver's value is the bound's
        shortfall times the mean positive prediction,
        ``c(x) = mean p * (bound - share)`` (or ``* (bound - ratio)``), feasible at
        ``c(x) <= 0``; the title then gives the values in the units of the bound at the end
        of the fit (``constraint_values_`` against ``bound_``).

        With ``n_seeds > 1`` the estimator keeps the history of the run it selected; the
        other seeds' residuals at the end of their runs (``seeds_``) are drawn as markers.
        Where ``seeds_`` records carry a ``"history"``, every seed is drawn, as a mean with
        a band.

        Parameters
        ----------
        estimator : fitted FairLogisticClassifier or NeymanPearsonClassifier
            Or any fitted object with ``history_`` and ``tol``, or a fitted
            :class:`~sklearn.pipeline.Pipeline` whose last step is one of these.
        ax : sequence of two matplotlib Axes, default=None
            See :meth:`plot`.
        name : str, default=None
            Name for the legend (none by default).
        band : {"range", "std"}, default="range"
            See :meth:`plot`.
        show_runs : bool, default=False
            See :meth:`plot`.
        color : matplotlib color, default=None
            See :meth:`plot`.

        Returns
        -------
        display : ConvergenceDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np
        >>> from sklearn.datasets import make_classification
        >>> from sklearn_ialm import FairLogisticClassifier
        >>> from sklearn_ialm.plotting import ConvergenceDisplay
        >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
        >>> groups = np.where(X[:, 2] < -0.5, "b", "a")
        >>> clf = FairLogisticClassifier(
        ...     constraint="positive_share", bound=0.2, max_passes=1000, random_state=0
        ... )
        >>> clf = clf.fit(X, y, sensitive_features=groups)
        >>> display = ConvergenceDisplay.from_estimator(clf)
        >>> print(display.note)
        at the end: share of group 'b' 0.295 soft, 0.201 hard; bound 0.2
        """
        from sklearn.utils.validation import check_is_fitted

        estimator = _final_step(estimator)
        check_is_fitted(estimator, "history_")
        bound, label, bound_label, note = _estimator_units(estimator)
        run_ends = None
        seeds = getattr(estimator, "seeds_", None)
        if seeds and all("history" in s for s in seeds):
            sources = [s["history"] for s in seeds]
        else:
            sources = [estimator.history_]
            if seeds:
                others = [s for s in seeds if not s.get("selected", False)]
                run_ends = {
                    "data_passes": [s["n_data_passes"] for s in others],
                    "primal_residual": [s["primal_residual"] for s in others],
                    "dual_residual": [s["dual_residual"] for s in others],
                }
        # In the units of the bound: the solver's max_j c_j(x) is value - bound for the
        # false-positive rate and the parity gap; the other constraints stay in the solver's
        # units, where the bound is 0.
        histories = [
            dict(h, constraint=np.asarray(h["constraint"], dtype=float) + bound) for h in sources
        ]
        display = cls(
            histories,
            bound=bound,
            tol=getattr(estimator, "tol", None),
            constraint_label=label,
            bound_label=bound_label,
            name=name,
            note=note,
            run_ends=run_ends,
        )
        return display.plot(ax=ax, band=band, show_runs=show_runs, color=color)

    @classmethod
    def from_results(
        cls, results, *, ax=None, name=None, band="range", show_runs=False, color=None
    ):
        """Plot the convergence of solver runs (:func:`~sklearn_ialm.solver.stoc_ialm` or
        :func:`~sklearn_ialm.solver.ipc`).

        The constraint panel shows the largest constraint value ``max_j c_j(x)`` against 0
        (inequalities ``c_j(x) <= 0``). Several results (e.g. one per seed) are drawn as a
        mean with a band. Sampled (expectation) problems are drawn against oracle calls.

        Parameters
        ----------
        results : IALMResult or IPCResult, or a list of them
            The runs to draw, all of one problem.
        ax : sequence of two matplotlib Axes, default=None
            See :meth:`plot`.
        name : str, default=None
            Name for the legend.
        band : {"range", "std"}, default="range"
            See :meth:`plot`.
        show_runs : bool, default=False
            See :meth:`plot`.
        color : matplotlib color, default=None
            See :meth:`plot`.

        Returns
        -------
        display : ConvergenceDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np
        >>> from sklearn_ialm.solver import FunctionProblem, stoc_ialm
        >>> from sklearn_ialm.plotting import ConvergenceDisplay
        >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
        >>> def objective(x, idx):
        ...     r = x - a[idx]
        ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
        >>> def constraints(x, idx):
        ...     n = len(a[idx])
        ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
        >>> problem = FunctionProblem(objective, constraints, n_params=2,
        ...                           n_objective_samples=200, n_constraint_samples=200)
        >>> results = [stoc_ialm(problem, random_state=seed) for seed in range(3)]
        >>> display = ConvergenceDisplay.from_results(results, name="Stoc-iALM")
        >>> len(display.runs)
        3
        """
        if not isinstance(results, Sequence):
            results = [results]
        if not results:
            raise ValueError("from_results needs at least one result.")
        histories = [r.history for r in results]
        x = "data_passes"
        if all(
            not np.isfinite(np.asarray(h.get(x, [np.nan]), dtype=float)).any() for h in histories
        ):
            x = "oracle_calls"  # a sampled problem has no data passes
        tols = {r.settings.get("tol") for r in results}
        display = cls(
            histories, bound=0.0, tol=tols.pop() if len(tols) == 1 else None, x=x, name=name
        )
        return display.plot(ax=ax, band=band, show_runs=show_runs, color=color)
