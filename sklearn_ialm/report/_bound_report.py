"""The bound report: the class users hold, its construction from a fitted model, its views."""

from __future__ import annotations

from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from .._warnings import warn
from ..estimators import FairLogisticClassifier, NeymanPearsonClassifier
from ..estimators._groups import _columns_of_x, encode_groups
from ..estimators._inputs import is_dask_collection
from ..estimators._rows import align_rows
from ..estimators._scaling import far_columns
from . import _render
from ._rates import plain_key
from ._records import Records, fit_record

__all__ = ["BoundReport"]

#: The conditions of a rate of the one-against-the-rest view of class ``{}``.
_ONE_AGAINST_REST = {"all": "all", "y=1": "y={}", "y=0": "y!={}", "pred=1": "pred={}"}


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
        The fit's ``protected_groups_`` (fairness), None for Neyman-Pearson and for a
        parity bound on every pair of groups (the default with two groups, where the fit's
        "protected" smaller group constrains the one pair both ways: no group is
        protected; a note states the rule when ``protected_groups=None`` picked the
        protected group of a share bound).
    n_samples : int
        Rows the report was computed on.
    confidence : float
        Two-sided level of the intervals (and of the limits' argument).
    weighted : bool
        Whether the rates are weighted (the intervals then use the effective sample size).
    bounds : list of dict
        One record per bound: ``name`` (fairlearn's metric, ``false_positive_rate``, or
        with more than two classes the metric of class ``k`` against the rest,
        ``...[class k]``; for Neyman-Pearson ``class_error[class k]``, the share of the
        rows of class ``k`` predicted another class),
        ``value`` on these rows (``k`` of ``n`` for a bound on one rate), ``direction``
        (``"<="`` or ``">="``), ``bound``, ``limit`` (worst case over the intervals),
        ``status`` (``"not met"``, ``"met"``, ``"certified"`` or ``"undefined"``; never
        ``"certified"`` when the positive class, or class ``k``, is predicted for no row
        or every row: its rates are constant, a note says so) and, with a baseline,
        ``baseline_value`` and ``baseline_status``. The views print a value and its limit
        with the digits it takes to compare with the bound as they do (42/837 is
        ``0.0502 (42/837)`` against 0.05, not ``0.050``).
    rates : list of dict
        One record per rate and group (and the overall rate): ``rate``, ``condition`` (the
        rows it is a share of: ``"all"``, ``"y=1"``, ``"y=0"``, ``"pred=1"``; with more than
        two classes ``"y=k"``, ``"y!=k"``, ``"pred=k"`` of class ``k``), ``group``,
        ``protected``, ``excluded`` (the group was left out of the fit's constraints, see
        ``excluded_groups``; None for the overall rate), ``n``, ``k``, ``value``,
        ``lower``, ``upper`` (``n_effective`` with
        weights; ``baseline_value``, ``baseline_lower``, ``baseline_upper`` with a baseline).
    summary : list of dict
        Overall accuracy, selection rate, false-positive and false-negative rates, with
        intervals, and with a baseline its values and ``difference`` (model minus baseline):
        the price of the bound.
    fit : dict
        What the fit itself established: its ``bound_met_`` (``bound_met``), decided by
        its training rows or, for a calibrated fit, by its guarantee (``bound_met_by``:
        ``"training rows"`` or ``"guarantee"``; then ``training_rows`` holds the training
        rows' values and bound, reported beside it),
        the certificate of a calibrated fit (``certificate``), the Neyman-Pearson
        ``threshold`` and umbrella ``delta`` / ``violation_bound``; and what traces it: the
        classifier's ``params`` (``get_params(deep=False)``, JSON-ready: other objects as
        their ``repr``), the ``package_version`` that made the report, the rows it was
        fitted on (``n_samples_fit``, its ``n_samples_fit_``) and when (``fitted_at``, its
        ``fitted_at_``, UTC).
    notes : list of str
        Caveats of these rows (groups absent, undefined ratios, groups excluded, rows far
        from the rows the model was fitted on, a class never predicted).
    excluded_groups : list or None
        The fit's ``excluded_groups_`` (fairness; None for Neyman-Pearson): the groups of
        fewer than ``min_group_size`` training rows, left out of its constraints. Their
        rates are reported (``excluded`` is True in their records, and the tables say
        ``excluded``), but they enter neither the metric nor its limit.

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
        excluded_groups=None,
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
        self.excluded_groups = excluded_groups

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
            steps: its report is that of its last step on the transformed rows. Rows far
            from those the classifier was fitted on (its training columns' means and
            spreads; the usual cause is the raw rows given to the last step of a Pipeline)
            give a :class:`UserWarning` naming the columns, and a note.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Any rows: the training rows, a test set, ``X[clf.calibration_indices_]``.
        y : array-like of shape (n_samples,)
            True labels, in the estimator's ``classes_``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns), \
                str or list of str
            The group of each row, as given to ``fit``: labels, or a column name of a
            DataFrame ``X`` (a list of them for intersections). Required for the fairness
            classifier; for Neyman-Pearson it adds the rates per group.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rates (see :mod:`sklearn_ialm.report` for the intervals).
        baseline : fitted classifier, default=None
            An unconstrained model (e.g. a fitted
            :class:`~sklearn.linear_model.LogisticRegression`) whose ``predict(X)`` is
            reported beside the estimator's: the price of the bound. It gets the same
            ``X`` as ``estimator``: the raw rows when ``estimator`` is a Pipeline, so pass
            a fitted Pipeline with its own preprocessing
            (``make_pipeline(preprocessor, LogisticRegression()).fit(X, y)``), not the
            last step of one (fitted on transformed rows, it is refused with a message
            that says so).
        confidence : float in (0, 1), default=0.95
            Two-sided level of the exact intervals.

        Pandas inputs are paired with the rows of ``X`` by their index when ``X`` is a
        DataFrame, as in ``fit`` (put in the order of ``X``'s index, or refused when they
        hold other labels); when ``X`` has no index, rows are paired by position, with a
        warning for a pandas input whose index is not in increasing order.

        Returns
        -------
        BoundReport
        """
        confidence = _check_confidence(confidence)
        sensitive_features, _ = _columns_of_x(X, sensitive_features)
        y, sensitive_features, sample_weight = align_rows(
            X, y=y, sensitive_features=sensitive_features, sample_weight=sample_weight
        )
        clf, X_last = _final_step(estimator, X)
        far = _far_rows(clf, X_last, piped=X_last is not X)
        if len(getattr(clf, "classes_", ())) > 2:
            report = cls._per_class(
                clf, X_last, X, y, sensitive_features, sample_weight, baseline, confidence
            )
            report.notes += [far] if far else []
            return report
        is_fair = _check_classifier(clf, sensitive_features)
        y01, pred, base_pred, weights = _labels_and_predictions(
            clf, X_last, y, sample_weight, baseline, X
        )
        codes = labels = None
        if sensitive_features is not None:
            codes, labels = encode_groups(sensitive_features, len(y01))

        records = Records(y01, pred, base_pred, codes, labels, weights, confidence)
        if is_fair:
            description, bounds = records.fairness(clf)
        else:
            description, bounds = records.neyman_pearson(clf)
        if getattr(clf, "max_fpr", None) is not None and is_fair:
            bounds.append(records.fpr_bound(clf.max_fpr))
        summary = records.summary()
        if is_fair:
            records.note_below_majority(summary)
        return cls(
            estimator_name=type(clf).__name__,
            description=description,
            protected_groups=records.protected_groups,
            n_samples=len(y01),
            confidence=confidence,
            weighted=weights is not None,
            bounds=bounds,
            rates=records.rates,
            summary=summary,
            fit=fit_record(clf, is_fair),
            notes=records.notes + ([far] if far else []),
            excluded_groups=records.excluded_groups,
        )

    @classmethod
    def _per_class(cls, clf, X_last, X, y, sensitive_features, sample_weight, baseline, conf):
        """The report of a fit on ``K > 2`` classes, every class seen one against the rest:
        a fairness fit's bound for every class, a Neyman-Pearson fit's class error
        ``P(predict != k | y = k)`` for every class ``k`` it bounds (rates and bounds named
        ``...[class k]``); the summary is the accuracy over all classes."""
        is_fair = _check_classifier(clf, sensitive_features)
        if is_fair and clf.constraint == "error_rate_parity":
            raise NotImplementedError(
                "The bound report of constraint='error_rate_parity' on more than two classes "
                f"is not available yet (this {type(clf).__name__} has {len(clf.classes_)} "
                "classes). On the training rows, hard_constraint_values_ holds the bound's "
                "value per class; on other rows, measure the error rate per group, as the "
                "user guide's 'More than two classes' shows."
            )
        # The checks of labels, rows and weights of the binary report (its 0/1 view unused).
        weights = _labels_and_predictions(clf, X_last, y, sample_weight, None, X)[3]
        y = column_or_1d(y)
        pred = clf.predict(X_last)
        # A baseline fitted on other labels is refused as in the binary report: its
        # predictions never equal a class, and would read as errors of every row.
        base = (
            None if baseline is None else _baseline_predictions(clf, baseline, X, X_last is not X)
        )
        codes = labels = None
        if sensitive_features is not None:
            codes, labels = encode_groups(sensitive_features, len(y))

        def one_against_rest(c):
            label = c.item() if isinstance(c, np.generic) else c
            return Records(
                y == c, pred == c, None if base is None else base == c, codes, labels,
                weights, conf, positive_name=f"class {label!r}",
            )  # fmt: skip

        bounds, rates, notes, parts, protected, excluded = [], [], [], [], None, None
        if is_fair:
            per_class = [(c, None) for c in clf.classes_]
        else:
            # The bounds fitted (none for an unconstrained fit, max_class_error=None).
            per_class = list(getattr(clf, "max_class_error_", {}).items())
        for c, alpha in per_class:
            records = one_against_rest(c)
            label = c.item() if isinstance(c, np.generic) else c
            tag = f"[class {label}]"
            if is_fair:
                description, class_bounds = records.fairness(clf)
            else:
                class_bounds = [records.class_error_bound(alpha)]
                description = f"class_error{tag} <= {alpha:g}"
                if not records.rates[-1]["n"]:
                    notes.append(f"Class {label!r} has no rows here: its error is undefined.")
            parts.append(description)
            for record in class_bounds:
                record["name"] += tag
            for record in records.rates:
                record["rate"] += tag
                # The rows of the 0/1 view in the class's own terms ("y=1" is y == label).
                record["condition"] = _ONE_AGAINST_REST[record["condition"]].format(label)
            bounds += class_bounds
            rates += records.rates
            notes += [note for note in records.notes if note not in notes]
            protected, excluded = records.protected_groups, records.excluded_groups
        every = np.ones(len(y), bool)
        overall = Records(
            every, pred == y, None if base is None else base == y, None, None, weights, conf
        )
        summary = [row for row in overall.summary() if row["metric"] == "accuracy"]
        if is_fair:
            description = f"{parts[-1]} for every class, one against the rest"
        elif parts:
            description = ", ".join(parts) + " (class_error[class k] = P(predict != k | y = k))"
        else:
            description = "no class error bounded (max_class_error=None)"
        return cls(
            estimator_name=type(clf).__name__,
            description=description,
            protected_groups=protected,
            n_samples=len(y),
            confidence=conf,
            weighted=weights is not None,
            bounds=bounds,
            rates=rates,
            summary=summary,
            fit=fit_record(clf, is_fair),
            notes=notes,
            excluded_groups=excluded,
        )

    # -- views -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The report as JSON-ready Python (nan as None, group tuples as lists).

        Returns
        -------
        dict
            ``estimator``, ``description``, ``protected_groups``, ``excluded_groups``,
            ``n_samples``, ``confidence``, ``weighted``, ``bounds``, ``rates``, ``summary``,
            ``fit``, ``notes``.
        """
        return _render.to_dict(self)

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
        return _render.to_frame(self, table)

    def to_markdown(self) -> str:
        """A short Markdown summary for a model card or a README.

        Returns
        -------
        str
            A line naming the bound, the bounds table, the per-group rates table, the
            overall rates (accuracy, selection rate, false-positive and false-negative
            rates) and the sentences of the text view.
        """
        return _render.to_markdown(self)

    def to_html(self) -> str:
        """The report as a self-contained HTML page (inline style, no script, no link).

        The tables of the notebook view, the sentences, and the estimator's parameters;
        every value is escaped. Write it to a file to share the report with a reviewer.

        Returns
        -------
        str
            A complete HTML5 document.
        """
        return _render.to_html(self, document=True)

    def __str__(self) -> str:
        return _render.to_text(self)

    def __repr__(self) -> str:
        status = ", ".join(f"{b['name']} {b['status']}" for b in self.bounds)
        return f"<BoundReport of {self.estimator_name} on {self.n_samples} rows: {status}>"

    def _repr_html_(self) -> str:
        return _render.to_html(self)


def _final_step(estimator, X):
    """The classifier at the end of a (nested) Pipeline, and ``X`` transformed for it."""
    from sklearn.pipeline import Pipeline

    while isinstance(estimator, Pipeline):
        if len(estimator) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    return estimator, X


#: Columns named in the warning of rows far from the training rows; more are counted.
_FAR_NAMED = 5


def _far_rows(clf, X, piped) -> str | None:
    """Warn (and return the note) when the rows ``X`` given to ``clf`` are far from the rows
    it was fitted on (the training columns' moments kept by the fit, see
    :func:`~sklearn_ialm.estimators._scaling.far_columns`): the usual cause is raw rows given
    to the last step of a Pipeline fitted on transformed ones. None when they are not, or
    when the fit kept no moments (a stream, a Dask fit, a model pickled before)."""
    moments = getattr(clf, "_feature_moments", None)
    if moments is None or is_dask_collection(X):
        return None
    columns = getattr(X, "columns", None)
    text = getattr(clf, "text_group_columns_", None)
    if columns is not None and text:  # group columns that are not features (see fit)
        X = X.drop(columns=[c for c in text if c in set(columns)])
    try:
        X = check_array(X, accept_sparse="csr", dtype=np.float64)
        far = far_columns(moments, X) if X.shape[1] == len(moments[0]) else []
    except (TypeError, ValueError):
        return None  # predict says what is wrong with these rows
    if not far:
        return None
    names = getattr(clf, "feature_names_in_", None)
    said = [
        (repr(names[j]) if names is not None else f"column {j}")
        + f" (mean {shift:+.2g} training standard deviations off, spread x{scale:.2g})"
        for j, shift, scale in far[:_FAR_NAMED]
    ]
    more = f" and {len(far) - _FAR_NAMED} more" if len(far) > _FAR_NAMED else ""
    where = (
        "The rows, as the Pipeline's first steps transform them, are"
        if piped
        else f"The rows given to {type(clf).__name__} are"
    )
    text = (
        f"{where} far from the rows it was fitted on, in {len(far)} of {X.shape[1]} "
        f"columns: {', '.join(said)}{more}. "
    )
    if piped:
        text += "The rates here are of rows unlike the training rows (a shift in the data?)."
    else:
        text += (
            "If it is the last step of a Pipeline fitted on transformed rows, pass the "
            "Pipeline: BoundReport.from_estimator(pipe, X, y, ...) transforms the rows as "
            "pipe.predict does; the last step given raw rows reads them in the wrong units."
        )
    warn(text, UserWarning)
    return text


def _check_classifier(clf, sensitive_features) -> bool:
    """Whether ``clf`` is the fairness classifier (else Neyman-Pearson), checked fitted."""
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
    return is_fair


def _labels_and_predictions(clf, X, y, sample_weight, baseline, X_raw):
    """``(y01, pred, base_pred, weights)``: the rows' labels and the predictions of ``clf``
    on ``X`` (and of ``baseline`` on ``X_raw``) as booleans of the positive class, and the
    checked weights (None without ``sample_weight``)."""
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
        base_pred = _baseline_predictions(clf, baseline, X_raw, X is not X_raw) == positive
    return y01, pred, base_pred, weights


def _check_confidence(confidence) -> float:
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, Real)
        or not 0.0 < float(confidence) < 1.0
    ):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
    return float(confidence)


def _baseline_predict(baseline, X, piped):
    """``baseline.predict(X)`` as a 1-D array, or a ValueError that says which rows the
    baseline gets (``piped``: the estimator is a Pipeline, whose first steps transform
    ``X`` for its last) and what to pass instead.

    The usual slip is a Pipeline's last step as the baseline: fitted on transformed rows, it
    fails on the raw rows (scikit-learn's "could not convert string to float: 'M'")."""
    if piped:
        rows = "the raw rows X given to the report, which the estimator's Pipeline transforms"
        instead = (
            "pass a fitted Pipeline with the same preprocessing, e.g. "
            "make_pipeline(preprocessor, LogisticRegression()).fit(X, y), not the last step "
            "of a Pipeline (fitted on transformed rows)"
        )
    else:
        rows = "the rows X given to the report, as the estimator does"
        instead = "pass a model fitted on rows like these (the same columns, untransformed)"
    n_columns = X.shape[1] if len(getattr(X, "shape", ())) == 2 else None
    expected = getattr(baseline, "n_features_in_", None)
    if expected is not None and n_columns is not None and expected != n_columns:
        raise ValueError(
            f"baseline was fitted on {expected} features but gets {rows}: {n_columns} "
            f"columns. {instead[0].upper()}{instead[1:]}."
        )
    try:
        return column_or_1d(baseline.predict(X))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"baseline.predict failed on {rows} ({exc}): {instead}.") from exc


def _baseline_predictions(clf, baseline, X, piped):
    """The baseline's predictions (see :func:`_baseline_predict`), in the estimator's
    labels; a ValueError for a baseline fitted on other labels, whose predictions would
    never equal the positive class (and would be reported as a selection rate of 0)."""
    ours = {plain_key(c) for c in clf.classes_}
    theirs = getattr(baseline, "classes_", None)
    if theirs is not None and {plain_key(c) for c in np.asarray(theirs)} != ours:
        raise ValueError(
            f"baseline has classes_ {[plain_key(c) for c in theirs]}, not the estimator's "
            f"{[plain_key(c) for c in clf.classes_]}: its predictions cannot be compared "
            "with y. Fit the baseline on the same labels as the estimator."
        )
    pred = _baseline_predict(baseline, X, piped)
    unknown = {plain_key(v) for v in np.unique(pred)} - ours
    if unknown:
        raise ValueError(
            f"baseline predicts labels {sorted(map(repr, unknown))} that are not the "
            f"estimator's classes_ {[plain_key(c) for c in clf.classes_]}: fit the baseline "
            "on the same labels as the estimator."
        )
    return pred
