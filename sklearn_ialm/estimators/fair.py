"""Logistic classification under group-fairness constraints on the soft positive prediction."""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array

from ..problems import CONSTRAINTS, fairness_problem
from ._base import DEFERRED_SCALING, BaseIALMClassifier, MatrixLike

__all__ = ["FairLogisticClassifier"]

#: ``bound=None`` means these: the paper's share, the four-fifths rule, a 0.1 parity gap.
DEFAULT_BOUNDS = {"positive_share": 0.1, "disparate_impact": 0.8, "demographic_parity": 0.1}


def _python_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def _group_key(label):
    """A hashable key equal for a label and its numpy / list spellings."""
    if isinstance(label, (tuple, list, np.ndarray)):
        return tuple(_python_scalar(v) for v in label)
    return _python_scalar(label)


def encode_groups(sensitive_features, n_samples: int):
    """``(codes, labels)``: ``labels[codes[i]]`` is the group of row ``i``.

    A 1-D input (array, list, Series, one-column frame) holds one label per row. With several
    columns a group is an intersection: the tuple of a row's values, one per column.
    """
    sf = check_array(
        sensitive_features,
        ensure_2d=False,
        dtype=None,
        input_name="sensitive_features",
    )
    if sf.shape[0] != n_samples:
        raise ValueError(
            f"sensitive_features has {sf.shape[0]} rows but X has {n_samples}: it must give "
            "one group label per row of X."
        )
    if sf.ndim > 2:
        raise ValueError(f"sensitive_features must be 1-D or 2-D, got {sf.ndim} dimensions.")
    if sf.dtype == object and any(v is None for v in sf.ravel()):
        raise ValueError("sensitive_features contains None (a missing group label).")
    if sf.ndim == 2 and sf.shape[1] == 1:
        sf = sf[:, 0]
    try:
        if sf.ndim == 1:
            labels, codes = np.unique(sf, return_inverse=True)
            return codes.reshape(-1), labels
        per_column = [np.unique(sf[:, j], return_inverse=True) for j in range(sf.shape[1])]
    except TypeError as exc:
        raise ValueError(
            "sensitive_features labels must be comparable with each other (e.g. all strings "
            f"or all numbers within a column): {exc}"
        ) from exc
    joint = np.column_stack([code.reshape(-1) for _, code in per_column])
    combos, codes = np.unique(joint, axis=0, return_inverse=True)
    labels = np.empty(len(combos), dtype=object)
    for i, combo in enumerate(combos):
        columns = zip(per_column, combo, strict=True)
        labels[i] = tuple(_python_scalar(col_labels[c]) for (col_labels, _), c in columns)
    return codes.reshape(-1), labels


#: A group constraint estimated from fewer rows than this is noise, not a fairness statement.
MIN_GROUP_SIZE = 5


def _check_group_sizes(codes, labels):
    """Refuse a continuous column (about one group per row) and groups of too few rows."""
    counts = np.bincount(codes, minlength=len(labels))
    n_samples = len(codes)
    if len(labels) > 2 and len(labels) > n_samples / 2:
        raise ValueError(
            f"sensitive_features has {len(labels)} distinct values for {n_samples} rows: it "
            "looks continuous. Pass group labels, e.g. bins of the column (pandas.cut)."
        )
    small = [_group_key(labels[g]) for g in np.flatnonzero(counts < MIN_GROUP_SIZE)]
    if small:
        shown = ", ".join(repr(g) for g in small[:10]) + (" ..." if len(small) > 10 else "")
        raise ValueError(
            f"sensitive_features: {len(small)} group(s) have fewer than {MIN_GROUP_SIZE} rows "
            f"({shown}): a constraint on so few rows is noise. Merge them into larger groups."
        )


class FairLogisticClassifier(BaseIALMClassifier):
    """Logistic classifier with one fairness constraint per protected group.

    The fairness-constrained model of the paper (Section 5.1), fitted by Stoc-iALM with
    PStorm. With the score ``s(x) = x @ coef_.T + intercept_``, the soft positive prediction
    ``p(x) = sigmoid(s(x))`` and the groups ``S_g`` given by ``sensitive_features``:

    ``min  mean of loss(y, s(x))   s.t.   one constraint per protected group g``

    where ``constraint`` is

    ``"positive_share"`` (the paper's)
        ``sum over S_g of p >= bound * sum over all rows of p``: group ``g`` receives at least
        the share ``bound`` of the positive predictions.
    ``"disparate_impact"``
        ``mean over S_g of p >= bound * mean over all rows of p`` (the four-fifths rule at
        ``bound = 0.8``).
    ``"demographic_parity"``
        ``|mean over S_g of p - mean over the other rows of p| <= bound`` (two inequalities).

    The constraints are written on the training rows (weighted by ``sample_weight`` times
    ``class_weight``, like the objective). Binary classification only; ``classes_[1]`` is the
    positive class.

    Parameters
    ----------
    constraint : {"positive_share", "disparate_impact", "demographic_parity"}, \
            default="positive_share"
        The fairness constraint, see above.
    bound : float, default=None
        The constraint's bound: in (0, 1) for ``"positive_share"`` and
        ``"disparate_impact"``, in [0, 1) for ``"demographic_parity"``. ``None`` means 0.1,
        0.8 and 0.1 respectively (``bound_`` holds the value used). With ``k`` protected
        groups, ``"positive_share"`` needs ``bound <= 1/k`` (the shares add up to at most 1).
    protected_groups : array-like, default=None
        Labels of the groups that get a constraint (tuples for intersections of several
        columns). ``None`` applies the rule: with two groups, only the minority (the group
        with fewer rows of nonzero weight; a tie goes to the first label in sorted order);
        with three or more groups, every group (for ``"demographic_parity"``, each group
        against the rest).
    loss : {"truncated_logistic", "logistic"}, default="truncated_logistic"
        ``"truncated_logistic"`` is the paper's
        ``truncation * log(1 + log(1 + exp(-m)) / truncation)`` of the margin ``m``, robust
        to outliers and nonconvex; ``"logistic"`` is ``log(1 + exp(-m))``.
    truncation : float, default=2.0
        The ``alpha`` of the truncated logistic loss (unused with ``loss="logistic"``).
    class_weight : dict or "balanced", default=None
        Weights of the classes, ``{label: weight}``; ``"balanced"`` uses
        ``n_samples / (n_classes * weighted count of the class)``. They multiply
        ``sample_weight`` in both the objective and the constraints.
    fit_intercept : bool, default=True
        Whether to fit an intercept.
    C : float or None, default=1.0
        Inverse strength of an L2 penalty, as in
        :class:`~sklearn.linear_model.LogisticRegression`: the objective gets
        ``||w||^2 / (2 * C * sum(sample_weight))`` with ``w`` the weights of the
        standardised features (the intercept is not penalised), which is what
        ``make_pipeline(StandardScaler(), LogisticRegression(C=C))`` penalises. ``None``
        fits the paper's unpenalised model.
    pos_label : int, str or bool, default=None
        The positive class (``classes_[1]``). ``None`` takes the larger label in sorted
        order (``1`` of ``{0, 1}``, ``"yes"`` of ``{"no", "yes"}``); name it when the
        sorted order is not the meaning (e.g. ``{"bad", "good"}`` with ``"bad"`` positive).
        ``classes_`` is then ordered ``[other, pos_label]``.
    tol : float, default=1e-2
        The ``eps`` of the eps-KKT stopping rule: the run stops when the primal and dual
        residuals of the slack reformulation, evaluated on all training rows, are both
        ``<= tol``. The primal residual is in the units of the constraint (how far the soft
        constraint may exceed its bound). The dual residual is a gradient norm with respect
        to the weights of the standardised features (each column divided by its weighted
        root mean square, or, when its mean exceeds its spread and there is an intercept,
        centred and divided by its standard deviation; ``X`` is never copied), so ``tol``
        means the same whatever the units of the features; it must also fall to a tenth of
        its value at the null model ``coef_ = 0``. ``coef_`` is in the units of ``X`` as given.
    beta0 : float, default=1.0
        Initial penalty of the augmented Lagrangian.
    sigma : float, default=2.5
        Growth factor of the penalty, ``beta_k = beta0 * sigma**k``; must be > 1.
    batch_size : int, default=30
        Minibatch size of the stochastic gradients (at least 2).
    max_passes : float, default=100.0
        Budget in data passes (per-sample evaluations divided by the number of objective plus
        constraint rows). A run that spends it before reaching ``tol`` ends with a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    preset : {"default", "paper"}, default="default"
        Named solver settings (:data:`sklearn_ialm.solver.PRESETS`): ``"default"`` is the
        best measured, ``"paper"`` the paper's Section 5 reading.
    n_seeds : int, default=1
        Independent runs from seeds spawned from ``random_state``. The model kept is the
        lowest objective among the runs that met ``tol``; if none did, the run with the
        smallest ``max(primal_residual, dual_residual)``.
    n_jobs : int, default=None
        Parallel runs of the seeds through :class:`joblib.Parallel`. ``None`` means 1 unless
        in a :func:`joblib.parallel_config` context. Results do not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the minibatch sampling. An int gives the same model on every call, for any
        ``n_jobs``.
    warm_start : bool, default=False
        Start from the weights, multipliers and slacks of the previous fit instead of from
        zero (the penalty schedule restarts at ``beta0``).
    verbose : int, default=0
        ``> 0`` prints one line per outer iteration of the solver.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights of the score.
    intercept_ : ndarray of shape (1,)
        Intercept of the score (0 when ``fit_intercept=False``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when ``X`` has string column names.
    groups_ : ndarray
        Labels of the groups of the training rows (tuples for intersections).
    protected_groups_ : ndarray
        Labels of the constrained groups, in the order of ``constraint_values_``; empty when
        the constraint is void (a single group).
    bound_ : float
        The bound used.
    multipliers_ : ndarray of shape (n_constraints,)
        Lagrange multipliers (in the solver's scaling, the ones that certify the dual
        residual): one per protected group, two per group for ``"demographic_parity"``
        (its ``<=`` then its ``>=`` inequality).
    constraint_values_ : ndarray of shape (n_protected_groups,)
        The optimised soft quantity of each protected group on the training rows, in the
        units of ``bound``: its share of the positive predictions, its disparate-impact ratio,
        or its parity gap ``mean_g p - mean_rest p`` (signed).
    hard_constraint_values_ : ndarray of shape (n_protected_groups,)
        The same quantities with hard predictions (score > 0); ``nan`` where undefined (no
        positive prediction at all).
    objective_ : float
        The training loss at the returned point.
    primal_residual_, dual_residual_ : float
        Residuals of the stopping rule at the returned point.
    kkt_primal_residual_, kkt_dual_residual_ : float
        Residuals of the original inequality problem at the returned point, with the optimal
        nonnegative multiplier (the paper's eq. (opt-dual)): the violation ``||[c]_+||`` and
        the stationarity.
    converged_ : bool
        Whether both residuals are ``<= tol``.
    n_iter_ : int
        Inner (PStorm) iterations.
    n_outer_iter_ : int
        Outer (augmented Lagrangian) iterations.
    n_data_passes_ : float
        Per-sample evaluations divided by the number of objective plus constraint rows.
    history_ : dict of ndarray
        One entry per evaluation of the stopping rule, at least ``data_passes``,
        ``primal_residual``, ``dual_residual``, ``constraint`` (largest constraint value in
        the solver's scaling), ``objective`` and ``beta``.
    seeds_ : list of dict
        When ``n_seeds > 1``: one record per run with ``seed``, ``converged``,
        ``primal_residual``, ``dual_residual``, ``n_data_passes``, ``objective`` and
        ``selected``. ``stoc_ialm(problem, random_state=seed)`` replays a run.

    See Also
    --------
    NeymanPearsonClassifier : Fewest false negatives under a false-positive-rate bound.
    sklearn.linear_model.LogisticRegression : The unconstrained logistic model.
    sklearn_ialm.solver.stoc_ialm : The solver, on problem objects.

    Notes
    -----
    ``sensitive_features`` is requested for metadata routing, so with
    ``sklearn.set_config(enable_metadata_routing=True)`` a :class:`~sklearn.pipeline.Pipeline`
    or :class:`~sklearn.model_selection.GridSearchCV` passes it to this estimator, split per
    fold; with routing off, ``Pipeline.fit(X, y, <step>__sensitive_features=groups)``.
    Without ``sensitive_features`` (or with a single group) there is nothing to constrain:
    the unconstrained model is fitted, with a warning. Rows with zero weight are dropped
    before fitting.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import FairLogisticClassifier
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> groups = np.where(X[:, 2] < -0.5, "b", "a")  # "b": 137 rows, 5 positives
    >>> clf = FairLogisticClassifier(bound=0.2, max_passes=1000, random_state=0)
    >>> clf = clf.fit(X, y, sensitive_features=groups)
    >>> clf.protected_groups_
    array(['b'], dtype='<U1')
    >>> share = float(clf.constraint_values_[0])  # group "b"'s share of positive predictions
    >>> bool(clf.converged_), bool(share >= clf.bound_ - 0.05)
    (True, True)
    """

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        **BaseIALMClassifier._parameter_constraints,
        "constraint": [StrOptions(set(CONSTRAINTS))],
        "bound": [Interval(Real, 0, 1, closed="left"), None],
        "protected_groups": ["array-like", None],
        "loss": [StrOptions({"truncated_logistic", "logistic"})],
        "truncation": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        constraint="positive_share",
        bound=None,
        protected_groups=None,
        loss="truncated_logistic",
        truncation=2.0,
        class_weight=None,
        fit_intercept=True,
        C=1.0,
        pos_label=None,
        tol=1e-2,
        beta0=1.0,
        sigma=2.5,
        batch_size=30,
        max_passes=100.0,
        preset="default",
        n_seeds=1,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.constraint = constraint
        self.bound = bound
        self.protected_groups = protected_groups
        self.loss = loss
        self.truncation = truncation
        self.class_weight = class_weight
        self.fit_intercept = fit_intercept
        self.C = C
        self.pos_label = pos_label
        self.tol = tol
        self.beta0 = beta0
        self.sigma = sigma
        self.batch_size = batch_size
        self.max_passes = max_passes
        self.preset = preset
        self.n_seeds = n_seeds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def fit(
        self,
        X: MatrixLike,
        y: ArrayLike,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> FairLogisticClassifier:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input is converted to CSR, never densified.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` is the positive class (see ``pos_label``).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns), \
                default=None
            One group label per row (array, list, pandas Series). With several columns
            (2-D array, DataFrame) the groups are the intersections of the columns. ``None``
            (or a single group) leaves nothing to constrain: the unconstrained model is
            fitted, with a warning.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights, in the objective and in the constraints.

        Returns
        -------
        self : FairLogisticClassifier
        """
        return self._fit(X, y, sample_weight, sensitive_features=sensitive_features)

    # -- hooks -----------------------------------------------------------------------------------
    def _check_fit_params(self, fit_params, n_samples):
        sf = fit_params["sensitive_features"]
        if sf is None:
            if self.protected_groups is not None:
                raise ValueError(
                    "protected_groups is set but sensitive_features is None: pass the group "
                    "of every row to fit (with metadata routing on, check that it is routed)."
                )
            return {"codes": None, "labels": None}
        codes, labels = encode_groups(sf, n_samples)
        _check_group_sizes(codes, labels)
        return {"codes": codes, "labels": labels}

    def _subset_fit_params(self, fit_params, keep):
        if fit_params["codes"] is None:
            return fit_params
        return dict(fit_params, codes=fit_params["codes"][keep])

    def _check_bound(self):
        bound = DEFAULT_BOUNDS[self.constraint] if self.bound is None else float(self.bound)
        if self.constraint == "demographic_parity":
            ok, interval = 0 <= bound < 1, "[0, 1)"
        else:
            ok, interval = 0 < bound < 1, "(0, 1)"
        if not ok:
            raise ValueError(
                f"bound must be in {interval} for constraint={self.constraint!r}, got {bound!r}."
            )
        return bound

    def _protected_codes(self, codes, labels):
        """Codes of the protected groups among the groups present in ``codes``."""
        present, counts = np.unique(codes, return_counts=True)
        if self.protected_groups is None:
            if len(present) == 2:
                # np.argmin returns the first minimum: ties go to the first sorted label.
                return present[[np.argmin(counts)]]
            return present
        lookup = {_group_key(labels[c]): c for c in present}
        chosen = []
        for label in list(self.protected_groups):
            key = _group_key(label)
            if key not in lookup:
                raise ValueError(
                    f"protected_groups: group {key!r} has no members in sensitive_features "
                    f"(rows with nonzero weight); groups present: "
                    f"{[_group_key(labels[c]) for c in present]}."
                )
            if lookup[key] not in chosen:
                chosen.append(lookup[key])
        if not chosen:
            raise ValueError(
                "protected_groups is empty; use None for the default rule, or name at least "
                "one group."
            )
        return np.array(chosen)

    def _build_problem(self, X, y01, sample_weight, fit_params):
        bound = self._check_bound()
        codes, labels = fit_params["codes"], fit_params["labels"]
        void = None
        if codes is None:
            void = "sensitive_features is None"
        else:
            # Explicit groups are checked first: naming a group that is absent is an error
            # even when the data leave nothing to constrain.
            protected = self._protected_codes(codes, labels)
            if len(np.unique(codes)) == 1:
                void = f"sensitive_features has a single group ({_group_key(labels[codes[0]])!r})"
        if void is not None:
            warnings.warn(
                f"{void}: the fairness constraint is void; fitting the unconstrained "
                f"{self.loss} model.",
                UserWarning,
                stacklevel=4,
            )
            context = dict(
                codes=codes,
                protected=np.array([], dtype=int),
                bound=bound,
                groups=np.array([] if labels is None else labels[np.unique(codes)]),
                labels=labels,
            )
            problem = fairness_problem(
                X,
                y01,
                X,
                codes,
                bound=bound,
                protected=[],
                loss=self.loss,
                truncation=self.truncation,
                fit_intercept=self.fit_intercept,
                sample_weight=sample_weight,
                **DEFERRED_SCALING,
            )
            return problem, context

        if self.constraint == "positive_share" and len(protected) * bound > 1 + 1e-12:
            # The shares of disjoint groups add up to at most 1: no model can meet this.
            raise ValueError(
                f"bound={bound:g} is infeasible for constraint='positive_share' with "
                f"{len(protected)} protected groups: their shares of the positive predictions "
                f"add up to at most 1, so bound must be <= 1/{len(protected)}."
            )
        problem = fairness_problem(
            X,
            y01,
            X,
            codes,
            bound=bound,
            constraint=self.constraint,
            protected=list(protected),
            loss=self.loss,
            truncation=self.truncation,
            fit_intercept=self.fit_intercept,
            sample_weight=sample_weight,
            constraint_sample_weight=sample_weight,
            **DEFERRED_SCALING,
            constraint_scale=self._constraint_scale(y01, sample_weight),
        )
        context = dict(
            codes=codes,
            protected=protected,
            bound=bound,
            groups=labels[np.unique(codes)],
            labels=labels,
        )
        return problem, context

    def _constraint_scale(self, y01, sample_weight):
        """The constant that puts the share constraint (and ``tol``) in the units of ``bound``.

        A share ``r`` enters the problem as ``mean(p) * (bound - r)``; the labels' positive
        rate stands for ``mean(p)``. A parity gap is already in its units. The impact ratio
        is left in rate units (``mean(p) * (bound - ratio)``): its per-row weights are
        ``n / n_group``, and dividing them by the positive rate as well made a9a's
        four-fifths fit miss ``tol`` in 100 passes instead of converging in 5.
        """
        if self.constraint != "positive_share":
            return 1.0
        w = np.ones(len(y01)) if sample_weight is None else sample_weight
        rate = float(np.sum(w * (y01 == 1)) / np.sum(w))
        return min(max(rate, 0.05), 1.0)

    def _constraint_report(self, proba, y01, sample_weight, context):
        codes, w = context["codes"], sample_weight
        out = []
        # Undefined ratios (no positive prediction at all) are reported as nan.
        with np.errstate(invalid="ignore", divide="ignore"):
            for g in context["protected"]:
                member = codes == g
                if self.constraint == "positive_share":
                    out.append(np.sum(w[member] * proba[member]) / np.sum(w * proba))
                elif self.constraint == "disparate_impact":
                    mean_g = np.average(proba[member], weights=w[member])
                    out.append(mean_g / np.average(proba, weights=w))
                else:
                    mean_g = np.average(proba[member], weights=w[member])
                    out.append(mean_g - np.average(proba[~member], weights=w[~member]))
        return np.array(out, dtype=float)

    def _set_report_attributes(self, context):
        self.bound_ = context["bound"]
        self.groups_ = context["groups"]
        labels = context["labels"]
        self.protected_groups_ = (
            labels[context["protected"]] if labels is not None else np.array([])
        )

    def _violation_hint(self, context):
        return (
            f"the {self.constraint} bound {context['bound']:g} may be unreachable for the "
            f"protected groups {list(self.protected_groups_)} (soft values at the end: "
            f"{np.round(self.constraint_values_, 4).tolist()})"
        )
