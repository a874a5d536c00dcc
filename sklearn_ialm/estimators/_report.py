"""The bound report: does a fitted model's bound hold on given rows, for whom, at what cost.

It reads the predictions of a fitted :class:`~sklearn_ialm.FairLogisticClassifier` or
:class:`~sklearn_ialm.NeymanPearsonClassifier` on any rows (training, test, held-out) and
puts side by side, per group (and per class where the constraint conditions on it): the
counts, the rate of ``predict`` that the constraint uses, its exact (Clopper-Pearson)
interval, the constrained metric as fairlearn computes it, the bound, and whether it is met;
optionally the same for an unconstrained baseline model. No solver is run.

**What the intervals mean.** Each rate is a share of rows (``k`` of ``n``): the interval is
the two-sided exact binomial interval at ``confidence`` (each side ``(1 - confidence) / 2``).
It covers the population rate of the model with that probability when the rows are a
random draw that the model was not fitted on (a test set, ``calibration_indices_``); on the
training rows it only shows the size of the sampling noise. The *limit* of a bound is the
worst value of its metric over the groups' intervals (``upper[a] - lower[b]`` over the
constrained pairs for a difference, ``lower[b] / upper[a]`` for a ratio, the smallest lower
limit for a share), the construction of :class:`~sklearn_ialm.FairLogisticClassifier`'s
certificate: on new rows, the population metric is worse than the limit with probability at
most ``1 - confidence``, and the bound is *certified* when the limit meets it.

**With sample weights** the rates are weighted (as fairlearn's ``sample_params``) and the
intervals use Kish's effective sample size ``n_eff = (sum w)^2 / sum w^2`` of the rows of
each rate, with ``k_eff = rate * n_eff``: an approximation (exact when all weights are
equal), not a guarantee.
"""

from __future__ import annotations

import html
import math
import textwrap
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..problems import fairness_metric
from .fair import FairLogisticClassifier, encode_groups
from .neyman_pearson import NeymanPearsonClassifier

__all__ = ["BoundReport"]

#: The rates behind each fairness kind: ``(rate, condition)``, in the order of the metric.
_KIND_RATES = {
    "demographic_parity": (("selection_rate", "all"),),
    "true_positive_rate_parity": (("true_positive_rate", "y=1"),),
    "false_positive_rate_parity": (("false_positive_rate", "y=0"),),
    "equalized_odds": (("true_positive_rate", "y=1"), ("false_positive_rate", "y=0")),
    "error_rate_parity": (("error_rate", "all"),),
    "positive_share": (("share_of_positives", "pred=1"),),
    "disparate_impact": (("selection_rate", "all"),),
}

#: The fairlearn function that computes each parity kind's metric (``between_groups``).
_FAIRLEARN = {
    "demographic_parity": "demographic_parity",
    "true_positive_rate_parity": "equal_opportunity",
    "false_positive_rate_parity": "false_positive_rate",
    "equalized_odds": "equalized_odds",
    "error_rate_parity": "zero_one_loss",
}

#: The overall rates of the summary, each a share of the rows of its condition.
_SUMMARY = (
    ("accuracy", "all"),
    ("selection_rate", "all"),
    ("false_positive_rate", "y=0"),
    ("false_negative_rate", "y=1"),
)

#: Comparisons with a bound allow the float noise of sums (the fits' own test uses it).
_EPS = 1e-12


def _exact_limits(k, n, confidence):
    """Two-sided Clopper-Pearson limits; ``k`` and ``n`` may be fractional (weights).

    The lower limit is the ``alpha/2`` quantile of ``Beta(k, n - k + 1)`` (0 when
    ``k = 0``), the upper the ``1 - alpha/2`` quantile of ``Beta(k + 1, n - k)`` (1 when
    ``k = n``); ``n = 0`` gives ``[0, 1]``.
    """
    alpha = (1.0 - confidence) / 2
    lower = 0.0 if k <= 0 else float(beta_dist.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k >= n else float(beta_dist.isf(alpha, k + 1, n - k))
    return lower, upper


def _rate(hit, rows, weights, confidence):
    """``n``, ``k``, the (weighted) share of ``hit`` among ``rows`` and its interval."""
    n = int(rows.sum())
    k = int((hit & rows).sum())
    out = {"n": n, "k": k}
    if n == 0:
        return {**out, "value": math.nan, "lower": 0.0, "upper": 1.0}
    if weights is None:
        value, n_eff = k / n, float(n)
    else:
        w = weights[rows]
        total = w.sum()
        value = float(np.dot(w, hit[rows])) / total if total > 0 else math.nan
        n_eff = float(total**2 / np.dot(w, w)) if total > 0 else 0.0
        out["n_effective"] = n_eff
    if not np.isfinite(value) or n_eff == 0:
        return {**out, "value": value, "lower": 0.0, "upper": 1.0}
    lower, upper = _exact_limits(value * n_eff, n_eff, confidence)
    return {**out, "value": value, "lower": lower, "upper": upper}


def _condition(condition, y01, pred):
    if condition == "all":
        return np.ones(len(y01), dtype=bool)
    if condition == "pred=1":
        return pred
    return y01 if condition == "y=1" else ~y01


def _hits(rate, y01, pred):
    """Which rows count towards ``rate`` (among the rows of its condition)."""
    if rate == "error_rate":
        return pred != y01
    if rate == "accuracy":
        return pred == y01
    if rate == "false_negative_rate":
        return ~pred
    return pred


def _key(label):
    """A label as plain Python (tuples for intersections): equal across numpy spellings."""
    if isinstance(label, (tuple, list, np.ndarray)):
        return tuple(_key(v) for v in label)
    return label.item() if isinstance(label, np.generic) else label


def _final_step(estimator, X):
    """The classifier at the end of a (nested) Pipeline, and ``X`` transformed for it."""
    from sklearn.pipeline import Pipeline

    while isinstance(estimator, Pipeline):
        if len(estimator) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    return estimator, X


def _met(value, bound, direction):
    if value is None or not np.isfinite(value):
        return None
    return bool(value <= bound + _EPS if direction == "<=" else value >= bound - _EPS)


def _status(value, limit, bound, direction):
    met = _met(value, bound, direction)
    if met is None:
        return "undefined"
    if not met:
        return "not met"
    return "certified" if _met(limit, bound, direction) else "met"


def _limit(rows, rate_names, form):
    """The worst value of the metric over the groups' intervals (see the module docstring)."""
    worst = []
    for name in rate_names:
        cell = [r for r in rows if r["rate"] == name and r["group"] is not _OVERALL]
        for a in cell:
            if form == "share":
                if a["protected"]:
                    worst.append(a["lower"])
                continue
            for b in cell:
                if a is b or not (a["protected"] or b["protected"]):
                    continue
                if form == "difference":
                    worst.append(a["upper"] - b["lower"])
                elif a["upper"] > 0:  # lower[b] / upper[a]; 0 / 0 is left out
                    worst.append(b["lower"] / a["upper"])
    if not worst:
        return math.nan
    return float(max(worst) if form == "difference" else min(worst))


class _OverallLabel(str):
    """The group label of the rows of all groups: ``"overall"``, told apart from a group of
    that name by identity."""


_OVERALL = _OverallLabel("overall")


def _plain(value):
    """``value`` as JSON-ready Python: nan becomes None, tuples lists, numpy scalars Python."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if value is _OVERALL:
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (Real, np.generic)) and not isinstance(value, (int, np.integer)):
        return "nan" if not np.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def _interval(row, prefix=""):
    lower, upper = row.get(prefix + "lower"), row.get(prefix + "upper")
    if lower is None:
        return "-"
    return f"[{lower:.3f}, {upper:.3f}]"


class BoundReport:
    """Per-group rates with exact intervals, the bound and its status, on given rows.

    Build it with :meth:`from_estimator` or a fitted estimator's ``bound_report``; the
    constructor takes the computed records. See the user guide's section "The bound
    report" for what the intervals and the limit mean.

    Parameters
    ----------
    estimator_name : str
        Class name of the fitted classifier.
    description : str
        The bound in words, e.g. ``"demographic_parity difference <= 0.05"``.
    protected_groups : list or None
        The fit's ``protected_groups_`` (fairness), None for Neyman-Pearson.
    n_samples : int
        Rows the report was computed on.
    confidence : float
        Two-sided level of the intervals (and of the limits' argument).
    weighted : bool
        Whether the rates are weighted (the intervals then use the effective sample size).
    bounds : list of dict
        One record per bound: ``name`` (fairlearn's metric, or ``false_positive_rate``),
        ``value`` on these rows, ``direction`` (``"<="`` or ``">="``), ``bound``, ``limit``
        (worst case over the intervals), ``status`` (``"not met"``, ``"met"``,
        ``"certified"`` or ``"undefined"``) and, with a baseline, ``baseline_value`` and
        ``baseline_status``.
    rates : list of dict
        One record per rate and group (and the overall rate): ``rate``, ``condition`` (the
        rows it is a share of: ``"all"``, ``"y=1"``, ``"y=0"``, ``"pred=1"``), ``group``,
        ``protected``, ``n``, ``k``, ``value``, ``lower``, ``upper`` (``n_effective`` with
        weights; ``baseline_value``, ``baseline_lower``, ``baseline_upper`` with a baseline).
    summary : list of dict
        Overall accuracy, selection rate, false-positive and false-negative rates, with
        intervals, and with a baseline its values and ``difference`` (model minus baseline):
        the price of the bound.
    fit : dict
        What the fit itself established: the bound on its training rows (``bound_met``),
        the certificate of a calibrated fit (``certificate``), the Neyman-Pearson
        ``threshold`` and umbrella ``delta`` / ``violation_bound``.
    notes : list of str
        Caveats of these rows (groups absent, undefined ratios).

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import FairLogisticClassifier
    >>> X, y = make_classification(n_samples=400, n_features=5, random_state=0)
    >>> groups = np.where(X[:, 2] < -0.5, "b", "a")
    >>> clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.1,
    ...                              random_state=0).fit(X, y, sensitive_features=groups)
    >>> report = clf.bound_report(X, y, sensitive_features=groups)
    >>> bound = report.bounds[0]
    >>> bound["name"], bound["direction"], bound["bound"], bound["status"] != "not met"
    ('demographic_parity_difference', '<=', 0.1, True)
    >>> [(r["group"], r["n"]) for r in report.rates]
    [('a', 291), ('b', 109), ('overall', 400)]
    >>> data = json.loads(json.dumps(report.to_dict()))
    >>> data["bounds"][0]["name"]
    'demographic_parity_difference'
    """

    def __init__(
        self,
        *,
        estimator_name,
        description,
        protected_groups,
        n_samples,
        confidence,
        weighted,
        bounds,
        rates,
        summary,
        fit,
        notes=(),
    ):
        self.estimator_name = estimator_name
        self.description = description
        self.protected_groups = protected_groups
        self.n_samples = n_samples
        self.confidence = confidence
        self.weighted = weighted
        self.bounds = bounds
        self.rates = rates
        self.summary = summary
        self.fit = fit
        self.notes = list(notes)

    @property
    def has_baseline(self) -> bool:
        """Whether a baseline model was reported beside the estimator."""
        return bool(self.bounds) and "baseline_value" in self.bounds[0]

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y: ArrayLike,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        baseline=None,
        confidence: float = 0.95,
    ) -> BoundReport:
        """The report of a fitted constrained classifier (or a Pipeline ending in one).

        Parameters
        ----------
        estimator : FairLogisticClassifier, NeymanPearsonClassifier or Pipeline
            Fitted. A :class:`~sklearn.pipeline.Pipeline` transforms ``X`` with its first
            steps: its report is that of its last step on the transformed rows.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Any rows: the training rows, a test set, ``X[clf.calibration_indices_]``.
        y : array-like of shape (n_samples,)
            True labels, in the estimator's ``classes_``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
            The group of each row, as given to ``fit``. Required for the fairness
            classifier; for Neyman-Pearson it adds the rates per group.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rates (see the module docstring for the intervals).
        baseline : fitted classifier, default=None
            An unconstrained model (e.g. a fitted
            :class:`~sklearn.linear_model.LogisticRegression`) whose ``predict(X)`` is
            reported beside the estimator's: the price of the bound. It gets the same
            ``X`` as ``estimator`` (the raw rows when ``estimator`` is a Pipeline).
        confidence : float in (0, 1), default=0.95
            Two-sided level of the exact intervals.

        Returns
        -------
        BoundReport
        """
        if not 0.0 < float(confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
        confidence = float(confidence)
        X_raw = X
        clf, X = _final_step(estimator, X)
        if not isinstance(clf, (FairLogisticClassifier, NeymanPearsonClassifier)):
            raise TypeError(
                "BoundReport needs a FairLogisticClassifier or NeymanPearsonClassifier (or a "
                f"Pipeline that ends in one), got {type(clf).__name__}."
            )
        check_is_fitted(clf)
        is_fair = isinstance(clf, FairLogisticClassifier)
        if is_fair and sensitive_features is None:
            raise ValueError(
                "The fairness bound is on the groups' rates: pass sensitive_features, the "
                "group of every row of X."
            )
        positive = clf.classes_[1]
        y = column_or_1d(y, warn=True)
        unknown = np.setdiff1d(np.unique(y), clf.classes_)
        if unknown.size:
            raise ValueError(
                f"y has labels {unknown.tolist()} that are not in the estimator's classes_ "
                f"{clf.classes_.tolist()}."
            )
        y01 = y == positive
        pred = clf.predict(X) == positive
        n = len(y01)
        if pred.shape != (n,):
            raise ValueError(f"X has {pred.shape[0]} rows but y has {n}.")
        weights = None
        if sample_weight is not None:
            weights = column_or_1d(sample_weight).astype(float)
            if weights.shape != (n,) or np.any(weights < 0) or not np.all(np.isfinite(weights)):
                raise ValueError(f"sample_weight must hold {n} finite weights >= 0.")
        base_pred = None
        if baseline is not None:
            base_pred = column_or_1d(baseline.predict(X_raw)) == positive
        codes = labels = None
        if sensitive_features is not None:
            codes, labels = encode_groups(sensitive_features, n)

        builder = _Builder(y01, pred, base_pred, codes, labels, weights, confidence)
        if is_fair:
            description, bounds = builder.fairness(clf)
        else:
            description, bounds = builder.neyman_pearson(clf)
        if getattr(clf, "max_fpr", None) is not None and is_fair:
            bounds.append(builder.fpr_bound(clf.max_fpr))
        return cls(
            estimator_name=type(clf).__name__,
            description=description,
            protected_groups=builder.protected_groups,
            n_samples=n,
            confidence=confidence,
            weighted=weights is not None,
            bounds=bounds,
            rates=builder.rates,
            summary=builder.summary(),
            fit=_fit_record(clf, is_fair),
            notes=builder.notes,
        )

    # -- exports ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The report as JSON-ready Python (nan as None, group tuples as lists).

        Returns
        -------
        dict
            ``estimator``, ``description``, ``protected_groups``, ``n_samples``,
            ``confidence``, ``weighted``, ``bounds``, ``rates``, ``summary``, ``fit``,
            ``notes``.
        """
        return _plain(
            {
                "estimator": self.estimator_name,
                "description": self.description,
                "protected_groups": self.protected_groups,
                "n_samples": self.n_samples,
                "confidence": self.confidence,
                "weighted": self.weighted,
                "bounds": self.bounds,
                "rates": self.rates,
                "summary": self.summary,
                "fit": self.fit,
                "notes": self.notes,
            }
        )

    def to_frame(self, table: str = "rates"):
        """One of the report's tables as a :class:`pandas.DataFrame`.

        Parameters
        ----------
        table : {"rates", "bounds", "summary"}, default="rates"
            The per-group rates (one row per rate and group, with columns ``rate`` and
            ``group``), the bounds (indexed by metric), or the overall rates (indexed by
            metric).

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        if table == "rates":
            # Plain columns, no index: intersections are tuples, and tuples beside the
            # "overall" string cannot be sorted into an index level.
            frame = pd.DataFrame.from_records(self.rates)
            frame["group"] = [str(g) if g is _OVERALL else g for g in frame["group"]]
            return frame
        if table == "bounds":
            return pd.DataFrame.from_records(self.bounds).set_index("name")
        if table == "summary":
            return pd.DataFrame.from_records(self.summary).set_index("metric")
        raise ValueError(f"table must be 'rates', 'bounds' or 'summary', got {table!r}.")

    def _bound_cells(self, b):
        cells = [
            b["name"],
            _fmt(b["value"]),
            _fmt(b["limit"]),
            f"{b['direction']} {b['bound']:g}",
            b["status"],
        ]
        if self.has_baseline:
            cells += [_fmt(b["baseline_value"]), b["baseline_status"]]
        return cells

    def _bound_header(self):
        level = f"{self.confidence:.0%}"
        head = ["bound", "value", f"{level} limit", "bound", "status"]
        return head + (["baseline", "baseline status"] if self.has_baseline else [])

    def _rate_cells(self, r):
        cells = [
            r["rate"],
            r["condition"],
            _fmt(r["group"]) if r["group"] is not _OVERALL else "overall",
            "" if r["protected"] is None else _fmt(r["protected"]),
            str(r["n"]),
            str(r["k"]),
            _fmt(r["value"]),
            _interval(r),
        ]
        if self.has_baseline:
            cells += [_fmt(r["baseline_value"]), _interval(r, "baseline_")]
        return cells

    def _rate_header(self):
        level = f"{self.confidence:.0%}"
        head = ["rate", "of rows", "group", "protected", "n", "k", "rate", f"{level} interval"]
        return head + (["baseline", "baseline interval"] if self.has_baseline else [])

    def _summary_cells(self, s):
        cells = [s["metric"], _fmt(s["value"]), _interval(s)]
        if self.has_baseline:
            cells += [_fmt(s["baseline_value"]), f"{s['difference']:+.3f}"]
        return cells

    def _summary_header(self):
        head = ["overall", "value", f"{self.confidence:.0%} interval"]
        return head + (["baseline", "model - baseline"] if self.has_baseline else [])

    def _fit_lines(self) -> list[str]:
        lines = []
        fit = self.fit
        if fit.get("bound_met") is not None:
            lines.append(f"The fit met its bound on its training rows: {_fmt(fit['bound_met'])}.")
        cert = fit.get("certificate")
        if cert is not None:
            cmp = "<=" if cert["form"] == "difference" else ">="
            verdict = "certified" if cert["certified"] else "NOT certified"
            lines.append(
                f"Certificate of the fit ({cert['n_calibration']} held-out rows): certified "
                f"value {cert['value']:.4g} {cmp} {cert['bound']:g} at delta={cert['delta']:g}: "
                f"{verdict} (held-out estimate {cert['estimate']:.4g}; trained at "
                f"{cert['training_bound']:.4g})."
            )
        umbrella = fit.get("umbrella")
        if umbrella is not None:
            lines.append(
                f"Umbrella calibration ({umbrella['n_calibration']} held-out negatives): "
                f"P(population FPR > {umbrella['max_fpr']:g}) <= "
                f"{umbrella['violation_bound']:.3g} <= delta={umbrella['delta']:g}."
            )
        return lines

    def _caveat(self) -> str:
        level = f"{self.confidence:.0%}"
        text = (
            f"Intervals: exact (Clopper-Pearson) at {level}, valid for rows the model was not "
            f"fitted on; the limit is the metric's worst case over them, and 'certified' means "
            f"it meets the bound (at {level})."
        )
        if self.weighted:
            text += " Weighted rates: intervals from the effective sample size (approximate)."
        return text

    def _title(self) -> str:
        text = f"{self.estimator_name}: {self.description}, on {self.n_samples} rows"
        if self.protected_groups is not None:
            text += f" (protected groups: {', '.join(map(repr, self.protected_groups))})"
        return text

    def __str__(self) -> str:
        def table(header, rows):
            widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
            fmt = "  ".join(f"{{:<{w}}}" for w in widths)
            return "\n".join(fmt.format(*line).rstrip() for line in [header, *rows])

        parts = [
            self._title(),
            "",
            table(self._bound_header(), [self._bound_cells(b) for b in self.bounds]),
            "",
            table(self._rate_header(), [self._rate_cells(r) for r in self.rates]),
            "",
            table(self._summary_header(), [self._summary_cells(s) for s in self.summary]),
        ]
        # Sentences wrapped to the width of the tables, not one long line per sentence.
        tail = [textwrap.fill(t, 88) for t in self._fit_lines() + self.notes + [self._caveat()]]
        return "\n".join(parts + [""] + tail)

    def __repr__(self) -> str:
        status = ", ".join(f"{b['name']} {b['status']}" for b in self.bounds)
        return f"<BoundReport of {self.estimator_name} on {self.n_samples} rows: {status}>"

    def _repr_html_(self) -> str:
        def table(header, rows, caption):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                for row in rows
            )
            return (
                f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr>"
                f"</thead><tbody>{body}</tbody></table>"
            )

        style = (
            "<style>.ialm-report table{border-collapse:collapse;margin:0.4em 0 0.8em 0;"
            "font-size:0.9em}.ialm-report caption{text-align:left;font-weight:bold;"
            "padding:0.2em 0}.ialm-report th,.ialm-report td{border:1px solid #ccc;"
            "padding:0.15em 0.5em;text-align:right}.ialm-report td:first-child,"
            ".ialm-report th:first-child{text-align:left}.ialm-report p{margin:0.3em 0;"
            "max-width:60em}</style>"
        )
        bounds = table(
            self._bound_header(),
            [self._bound_cells(b) for b in self.bounds],
            "Bounds on these rows",
        )
        for word, color in (("not met", "#b00020"), ("certified", "#006400")):
            # Color the verdicts; "met" alone stays plain.
            bounds = bounds.replace(
                f"<td>{word}</td>", f'<td style="color:{color};font-weight:bold">{word}</td>'
            )
        rates = table(
            self._rate_header(),
            [self._rate_cells(r) for r in self.rates],
            "Rates of predict per group",
        )
        summary = table(
            self._summary_header(),
            [self._summary_cells(s) for s in self.summary],
            "Overall",
        )
        paragraphs = "".join(
            f"<p>{html.escape(line)}</p>"
            for line in self._fit_lines() + self.notes + [self._caveat()]
        )
        return (
            f'<div class="ialm-report">{style}<p><b>{html.escape(self._title())}</b></p>'
            f"{bounds}{rates}{summary}{paragraphs}</div>"
        )

    def to_markdown(self) -> str:
        """A short Markdown summary for a model card or a README.

        Returns
        -------
        str
            A line naming the bound, the bounds table and the per-group rates table.
        """

        def table(header, rows):
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += [
                "| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows
            ]
            return "\n".join(lines)

        level = f"{self.confidence:.0%}"
        rate_header = ["rate", "group", "n", "rate", f"{level} interval"]
        if self.has_baseline:
            rate_header.append("baseline")
        rate_rows = []
        for r in self.rates:
            group = "overall" if r["group"] is _OVERALL else _fmt(r["group"])
            row = [r["rate"], group, r["n"], _fmt(r["value"]), _interval(r)]
            if self.has_baseline:
                row.append(_fmt(r["baseline_value"]))
            rate_rows.append(row)
        parts = [
            f"**{self._title()}**",
            "",
            table(self._bound_header(), [self._bound_cells(b) for b in self.bounds]),
            "",
            table(rate_header, rate_rows),
            "",
            " ".join(self._fit_lines() + [self._caveat()]),
        ]
        return "\n".join(parts) + "\n"


class _Builder:
    """Computes the records of one report from the 0/1 labels and predictions."""

    def __init__(self, y01, pred, base_pred, codes, labels, weights, confidence):
        self.y01, self.pred, self.base_pred = y01, pred, base_pred
        self.codes, self.labels, self.weights = codes, labels, weights
        self.confidence = confidence
        self.rates = []
        self.notes = []
        self.protected_groups = None

    def _record(self, rate, condition, group, protected, hit_rows, base_rows=None):
        """One rate record: ``hit_rows(pred) -> (hit, rows)`` for the model and baseline."""
        hit, rows = hit_rows(self.pred)
        record = {"rate": rate, "condition": condition, "group": group, "protected": protected}
        record.update(_rate(hit, rows, self.weights, self.confidence))
        if self.base_pred is not None:
            hit, rows = hit_rows(self.base_pred)
            base = _rate(hit, rows, self.weights, self.confidence)
            record.update(
                baseline_value=base["value"],
                baseline_lower=base["lower"],
                baseline_upper=base["upper"],
            )
        return record

    def _group_rates(self, rate, condition, protected_codes, overall=True):
        """Records of ``rate`` for every group present (and overall)."""
        y01, codes = self.y01, self.codes
        out = []
        groups = [] if codes is None else range(len(self.labels))
        for g in groups:
            member = codes == g
            if rate == "share_of_positives":
                # The group's share of the positive predictions: a share of the rows pred=1.
                def hit_rows(p, member=member):
                    return member, p

            else:

                def hit_rows(p, member=member):
                    return _hits(rate, y01, p), member & _condition(condition, y01, p)

            protected = None if protected_codes is None else bool(g in protected_codes)
            out.append(self._record(rate, condition, _key(self.labels[g]), protected, hit_rows))
        if overall:
            out.append(
                self._record(
                    rate,
                    condition,
                    _OVERALL,
                    None,
                    lambda p: (_hits(rate, y01, p), _condition(condition, y01, p)),
                )
            )
        self.rates.extend(out)
        return out

    def _metric(self, kind, form, pred, protected_codes):
        if not len(protected_codes):
            return math.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            return fairness_metric(
                kind,
                self.y01.astype(int),
                pred.astype(float),
                self.codes,
                form=None if form == "share" else form,
                sample_weight=self.weights,
                protected=list(protected_codes),
            )

    def fairness(self, clf):
        kind = clf.constraint
        if kind == "positive_share":
            form = "share"
        elif kind == "disparate_impact":
            form = "ratio"
        else:
            form = clf.form or "difference"
        bound = float(clf.bound_)
        direction = "<=" if form == "difference" else ">="
        present = {_key(label): g for g, label in enumerate(self.labels)}
        protected, absent = [], []
        for label in clf.protected_groups_:
            key = _key(label)
            (protected.append(present[key]) if key in present else absent.append(key))
        if absent:
            self.notes.append(
                f"Protected group(s) {absent} have no rows here: their bound is not evaluated."
            )
        protected = np.array(protected, dtype=int)
        rate_names = []
        for rate, condition in _KIND_RATES[kind]:
            # A share of the positive predictions has no overall value (it is 1).
            self._group_rates(rate, condition, protected, overall=kind != "positive_share")
            rate_names.append(rate)
        value = self._metric(kind, form, self.pred, protected)
        # The limit reads the records' "protected" flags, set from the same codes.
        if kind in _FAIRLEARN:
            name = f"{_FAIRLEARN[kind]}_{form}"
            limit = _limit(self.rates, rate_names, form)
        elif kind == "positive_share":
            name, limit = "min_share_of_positives", _limit(self.rates, rate_names, form)
        else:
            # The impact ratio is relative to the overall rate, which moves with the group's
            # own: the groups' intervals give no limit of it.
            name, limit = "min_impact_ratio", math.nan
        record = {
            "name": name,
            "value": value,
            "direction": direction,
            "bound": bound,
            "limit": limit,
            "status": _status(value, limit, bound, direction),
        }
        if self.base_pred is not None:
            base = self._metric(kind, form, self.base_pred, protected)
            record.update(
                baseline_value=base, baseline_status=_status(base, math.nan, bound, direction)
            )
        if not np.isfinite(value):
            self.notes.append(
                f"{name} is undefined on these rows (every rate of a ratio is 0)."
                if len(protected)
                else f"{name}: no protected group has rows here."
            )
        self.protected_groups = [_key(g) for g in clf.protected_groups_]
        what = f"{kind} {form}" if kind in _FAIRLEARN else kind
        return f"{what} {direction} {bound:g}", [record]

    def fpr_bound(self, max_fpr):
        """The bound ``FPR <= max_fpr`` on all rows; its limit is the FPR's upper limit."""
        overall = [r for r in self.rates if r["rate"] == "false_positive_rate"]
        overall = [r for r in overall if r["group"] is _OVERALL]
        if overall:
            fpr = overall[0]
        else:
            fpr = self._record(
                "false_positive_rate", "y=0", _OVERALL, None, lambda p: (p, ~self.y01)
            )
        record = {
            "name": "false_positive_rate",
            "value": fpr["value"],
            "direction": "<=",
            "bound": float(max_fpr),
            "limit": fpr["upper"],
            "status": _status(fpr["value"], fpr["upper"], max_fpr, "<="),
        }
        if self.base_pred is not None:
            base = fpr["baseline_value"]
            record.update(
                baseline_value=base, baseline_status=_status(base, math.nan, max_fpr, "<=")
            )
        return record

    def neyman_pearson(self, clf):
        for rate, condition in (("false_positive_rate", "y=0"), ("false_negative_rate", "y=1")):
            self._group_rates(rate, condition, None)
        description = f"false_positive_rate <= {clf.max_fpr:g}"
        return description, [self.fpr_bound(clf.max_fpr)]

    def summary(self):
        out = []
        for metric, condition in _SUMMARY:

            def hit_rows(p, metric=metric, condition=condition):
                return _hits(metric, self.y01, p), _condition(condition, self.y01, p)

            r = self._record(metric, condition, _OVERALL, None, hit_rows)
            s = {"metric": metric, "value": r["value"], "lower": r["lower"], "upper": r["upper"]}
            if self.base_pred is not None:
                s.update(
                    baseline_value=r["baseline_value"],
                    difference=r["value"] - r["baseline_value"],
                )
            out.append(s)
        return out


def _fit_record(clf, is_fair):
    """What the fit established, from its public fitted attributes."""
    fit = {"bound_met": bool(clf.bound_met_) if hasattr(clf, "bound_met_") else None}
    if is_fair and hasattr(clf, "certificate_"):
        cert = clf.certificate_
        fit["certificate"] = {
            "kind": cert.kind,
            "form": cert.form,
            "bound": cert.bound,
            "delta": cert.delta,
            "value": cert.value,
            "estimate": cert.estimate,
            "certified": bool(clf.certified_),
            "n_calibration": len(clf.calibration_indices_),
            "training_bound": clf.training_bound_,
        }
    if not is_fair:
        fit["threshold"] = float(clf.threshold_)
        if hasattr(clf, "violation_bound_"):
            fit["umbrella"] = {
                "max_fpr": clf.max_fpr,
                "delta": clf.delta,
                "violation_bound": clf.violation_bound_,
                "n_calibration": clf.n_calibration_,
                "calibration_fpr": clf.calibration_fpr_,
            }
    return fit
