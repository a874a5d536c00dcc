"""The estimators' shared base: parameters, weights, warm start, working copy, predictions.

``BaseIALMClassifier`` holds what both estimators share outside the steps of a fit: the
parameters and their constraints, the checks of the target and of the sample and class
weights, the previous fit as a warm start, the working copy a fit runs on and its
publication (:mod:`._fit`), pickling, and the prediction methods. A concrete estimator says
how its data become a problem object and how its constraints are reported in the units of
its parameters (the hooks below); the steps themselves are :mod:`._steps`'.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .._warnings import warn
from ..problems._group_codes import unique_codes
from ._class_params import typed, typed_classes
from ._inputs import _DTYPES, _label, is_dask_collection
from ._steering import fit_hard_rates
from ._steps import steps

__all__ = [
    "BaseIALMClassifier",
    "InconsistentVersionWarning",
    "MatrixLike",
    "register_report_builder",
]


class InconsistentVersionWarning(UserWarning):
    """An estimator is unpickled under another sklearn-ialm version than it was pickled with."""


#: ``X`` as the estimators accept it: array-like or a scipy.sparse matrix / array.
# scipy < 1.11 has no ``sparray`` base; there the sparse arrays subclass ``spmatrix``.
MatrixLike = ArrayLike | sp.spmatrix | getattr(sp, "sparray", sp.spmatrix)


#: What :meth:`BaseIALMClassifier.bound_report` calls to build its report. The report is a
#: layer above the estimators: it registers its builder here when it is imported (and
#: ``sklearn_ialm/__init__`` imports it), so that no estimator module imports the report.
_report_builder: Callable | None = None


def register_report_builder(builder: Callable) -> None:
    """Set the function that :meth:`BaseIALMClassifier.bound_report` calls.

    :mod:`sklearn_ialm.report` calls this on import with ``BoundReport.from_estimator``.
    """
    global _report_builder
    _report_builder = builder


def _two_columns(a, b):
    """``np.column_stack([a, b])``, block by block for dask arrays."""
    if is_dask_collection(a):
        import dask.array as da

        return da.stack([a, b], axis=1)
    return np.column_stack([a, b])


def _by_rows(scores, fn):
    """``fn(scores)`` for a function of each row, block by block for dask arrays."""
    if is_dask_collection(scores):
        return scores.map_blocks(fn, dtype=np.float64)
    return fn(scores)


# The fitted state whose name does not end with "_" (see BaseIALMClassifier._working_copy).
_PRIVATE_FIT_STATE = frozenset(
    {"_slack", "_constant_fallback", "_null_dual_residual", "_n_effective_negatives", "_C_scale"}
) | {
    "_stream",  # partial_fit's state: a fit starts afresh without it
    "_bound_met_rows",  # the training rows' verdict of a calibrated fit (see _binary.Binary)
    "_feature_moments",  # the training columns' (mean, std), see _scaling.far_columns
    "_kkt_dual",  # the solve's optimal dual, solved when first read (kkt_dual_residual_)
}


def _is_fit_state(name: str) -> bool:
    """Whether attribute ``name`` is part of a fitted model (not a parameter or a setting)."""
    return (name.endswith("_") and not name.startswith("_")) or name in _PRIVATE_FIT_STATE


class BaseIALMClassifier(ClassifierMixin, BaseEstimator):
    """Linear classifier fitted under constraints by Stoc-iALM (not for direct use).

    Subclasses implement ``_build_problem`` and ``_constraint_report`` and may implement
    ``_check_fit_params`` / ``_subset_fit_params`` for per-row fit parameters, and
    ``_set_report_attributes`` for estimator-specific fitted attributes.
    """

    _parameter_constraints: dict = {
        "fit_intercept": ["boolean"],
        "C": [Interval(Real, 0, None, closed="neither"), None],
        "pos_label": [Integral, str, "boolean", None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "beta0": [Interval(Real, 0, None, closed="neither"), None],
        "sigma": [Interval(Real, 1, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 2, None, closed="left")],
        "max_passes": [Interval(Real, 0, None, closed="neither")],
        "preset": [StrOptions({"default", "paper"})],
        "n_seeds": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    #: ``(beta0, sigma)`` per ``preset`` where the estimator's defaults differ from the
    #: solver's (the solver's are 1 and 2.5; the paper preset takes the paper's ``sigma``).
    _default_schedule: dict = {}

    # -- hooks ---------------------------------------------------------------------------------
    def _penalty_schedule(self) -> dict:
        """The solver's ``beta0`` and ``sigma``: the parameters, or where one is None the
        estimator's default for its ``preset`` (else the solver's own)."""
        defaults = self._default_schedule.get(self.preset, (None, None))
        out = {}
        for name, default in zip(("beta0", "sigma"), defaults, strict=True):
            value = getattr(self, name)
            value = default if value is None else value
            if value is not None:
                out[name] = value
        return out

    def _check_fit_params(self, fit_params: dict, n_samples: int) -> dict:
        """Validate per-row fit parameters against the ``n_samples`` rows of ``X``."""
        return fit_params

    def _subset_fit_params(self, fit_params: dict, keep: np.ndarray) -> dict:
        """The per-row fit parameters of the rows ``keep``."""
        return fit_params

    def _build_problem(self, X, y01, sample_weight, fit_params):
        """``(problem, context)`` for rows ``X`` with labels ``y01`` in {0, 1}."""
        raise NotImplementedError

    def _constraint_report(self, proba, y01, sample_weight, context) -> np.ndarray:
        """Constraint values, in the units of the bound, for positive predictions ``proba``."""
        raise NotImplementedError

    def _tie_reports(self, preds, off, y01, sample_weight, context) -> list:
        """The constraint reports of hard predictions ``preds[0]`` and ``preds[1]`` (bool;
        the second is the first with rows ``off`` predicted negative)."""
        return [
            self._constraint_report(p.astype(float), y01, sample_weight, context) for p in preds
        ]

    def _set_report_attributes(self, context) -> None:
        """Estimator-specific fitted attributes (after the common ones are set)."""

    # -- validation ------------------------------------------------------------------------------
    def _check_target(self, y):
        y = np.asarray(y)
        coded = None
        if y.ndim == 1 and y.dtype.kind in "iu":
            # Integer labels: type_of_target's verdict from their count, in one pass (its
            # sort of 1e6 labels took 0.015 s, with check_classification_targets' twice).
            coded = unique_codes(y)
            y_type = "binary" if len(coded[0]) <= 2 else "multiclass"
        elif y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            # Whole numbers, labels (type_of_target casts them to int64 to tell labels from
            # values, and calls those beyond its range, such as 1e300, "continuous").
            y_type = "binary" if len(np.unique(y)) <= 2 else "multiclass"
        else:
            check_classification_targets(y)
            y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            more = " (more than two classes: fitted without calibration only)" * (
                y_type == "multiclass"
            )
            raise ValueError(
                f"Only binary classification is supported here{more}. The type of the target "
                f"is {y_type}."
            )
        classes, y01 = unique_codes(y) if coded is None else coded
        if len(classes) < 2:
            raise ValueError(
                f"y holds only 1 class ({_label(classes[0])}): {type(self).__name__} needs "
                "samples of 2 classes."
            )
        pos_label = getattr(self, "pos_label", None)
        if pos_label is not None:
            hits = [i for i, c in enumerate(classes.tolist()) if c == pos_label]
            if len(hits) != 1:
                raise ValueError(
                    f"pos_label={typed(pos_label)} is not one of the classes of y: "
                    f"{typed_classes(classes)}."
                )
            if hits[0] == 0:
                # classes_[1] is the positive class everywhere (decision_function > 0, the
                # second column of predict_proba), so the order follows pos_label.
                classes, y01 = classes[::-1].copy(), 1 - y01
        # One byte per row instead of eight: y01 lives through the whole fit.
        return classes, y01.astype(np.int8)

    def _check_weighted_classes(self, weights, y01, classes, what):
        # Both classes' totals in one pass (a mask and a copy per class: 11 ms on 1e6 rows).
        totals = np.bincount(y01, weights=weights, minlength=2)
        for k in (0, 1):
            if not totals[k] > 0:
                raise ValueError(
                    f"{type(self).__name__} needs samples of 2 classes with positive weight, "
                    f"but {what} leaves only 1 class: {_label(classes[1 - k])} "
                    f"(class {_label(classes[k])} has zero total weight)."
                )

    def _sample_weights(self, sample_weight, X, y, y01, classes):
        """Row weights of both the objective and the constraints: sample x class weight."""
        sw = self._scaled_weights(self._checked_sample_weight(sample_weight, X))
        self._check_weighted_classes(sw, y01, classes, "sample_weight")
        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None:
            if isinstance(class_weight, str):  # "balanced", on the weighted class totals
                # Written out: compute_class_weight takes sample_weight only from
                # scikit-learn 1.7, and the floor is 1.6. Both totals are > 0 (checked above).
                totals = np.bincount(y01, weights=sw, minlength=2)
                cw = totals.sum() / (2.0 * totals)
            else:
                cw = compute_class_weight(class_weight, classes=classes, y=y)
            sw = sw * cw[y01]
            self._check_weighted_classes(sw, y01, classes, "class_weight")
        return sw

    def _checked_sample_weight(self, sample_weight, X):
        """``sample_weight`` checked against the rows of ``X`` (float64, non-negative, one
        weight per row; None: ones), a ValueError naming it."""
        try:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        except ValueError as exc:
            # scikit-learn's "Sample weights must contain at least one non-zero number"
            # does not name the parameter.
            if "sample_weight" in str(exc):
                raise
            raise ValueError(f"sample_weight: {exc}") from exc
        if not np.any(sw):  # refused by scikit-learn from 1.7 only (above), here on 1.6 too
            raise ValueError(
                "sample_weight: Sample weights must contain at least one non-zero number."
            )
        return sw

    def _scaled_weights(self, sample_weight):
        """``sample_weight`` times the power of two that brings its largest near 1 when it is
        far off (within ``2**+-64`` it is used as it is, bit for bit); sets ``_C_scale``.

        Weights of 1e308 overflowed their sums (a LinAlgError), weights of 5e-324 the
        penalty's strength. Scaled by a power of two (exactly), with ``C`` scaled the other
        way, the model is the same: the penalty ``||w||^2 / (2 C sum(sample_weight))``
        reads their product (LogisticRegression's: all weights times ``k`` is ``C`` times
        ``k``).
        """
        top = float(np.max(sample_weight, initial=0.0))
        exponent = int(np.frexp(top)[1]) if top > 0 else 0
        if abs(exponent) <= 64:
            self._C_scale = 1.0
            return sample_weight
        with np.errstate(over="ignore"):  # C * 2**1024 is no penalty: inf
            self._C_scale = float(np.ldexp(1.0, exponent))
        return np.ldexp(sample_weight, -exponent)

    def _warm_start_point(self, problem, classes, n_features):
        """``(x0, y0, slack0)`` from the previous fit, or ``(None, None, None)``."""
        previous = getattr(self, "_previous_fit", None) or {}  # see _working_copy
        if not (self.warm_start and "coef_" in previous):
            return None, None, None
        coef, multipliers = previous["coef_"], previous["multipliers_"]
        # A stream's model (partial_fit) keeps its slacks in its state: they start from zero.
        slack = previous.get("_slack")
        if coef.shape[1] != n_features:
            raise ValueError(
                f"warm_start=True needs the same number of features as the previous fit "
                f"({coef.shape[1]}), got {n_features}. Set warm_start=False to refit."
            )
        if not np.array_equal(previous["classes_"], classes):
            raise ValueError(
                f"warm_start=True needs the same classes as the previous fit "
                f"({previous['classes_'].tolist()}), got {classes.tolist()}."
            )
        x0 = problem.point(coef.ravel(), previous["intercept_"][0])
        m, n_slack = problem.n_constraints, int(np.sum(problem.inequality))
        if multipliers.shape != (m,) or (slack is not None and slack.shape != (n_slack,)):
            warn(
                f"warm_start: the previous fit had {multipliers.size} constraint(s), this "
                f"one has {m}; the weights are warm-started, the multipliers start from zero.",
                UserWarning,
            )
            return x0, None, None
        return x0, multipliers, slack

    @property
    def kkt_dual_residual_(self) -> float:
        """The stationarity of the original problem at the kept solve's point, with its
        optimal multiplier (see the class's attributes); solved when first read."""
        return float(self._kkt_dual.solved()[0])

    # -- fit -------------------------------------------------------------------------------------
    def _fit(self, X, y, sample_weight=None, **fit_params):
        """The fit's steps (:func:`._steps.steps`) on a working copy, whose state replaces the
        estimator's in one step at the end (:meth:`_publish`): a guarantee's fit on the rows
        it does not hold out."""
        work = self._working_copy()
        steps(work, X, y, sample_weight, fit_params)
        self._publish(work)
        return self

    def _working_copy(self):
        """A copy of the estimator to fit on: its parameters and settings, no fitted state.

        A fit sets its attributes one by one (``validate_data`` sets ``n_features_in_``
        first); on a copy, a fit that raises or is interrupted (bad input found late, a
        failed joblib worker, Ctrl-C) leaves the estimator as it was, unfitted or the
        previous model whole, and a reader in another thread (a pickle) sees the old model or
        the new one, never a mix. The previous model stays readable for ``warm_start`` as
        ``_previous_fit`` (that of the estimator, also in a copy of a copy).
        """
        state = self.__dict__
        work = object.__new__(type(self))
        work.__dict__.update((k, v) for k, v in state.items() if not _is_fit_state(k))
        if "_previous_fit" not in state:
            work._previous_fit = {k: v for k, v in state.items() if _is_fit_state(k)}
        return work

    def _publish(self, work):
        """Replace the estimator's state by that of the fitted working copy ``work``, in one
        assignment: no stale attribute of an earlier fit survives it."""
        state = dict(work.__dict__)
        state.pop("_previous_fit", None)
        self.__dict__ = state

    #: Whether the fit's purpose includes accuracy, so that a training accuracy below the
    #: majority class's is worth a warning (not for Neyman-Pearson, which trades accuracy
    #: for fewer false negatives by design: there only a ranking no better than chance is).
    _judged_by_accuracy = True

    #: Whether a bound the fit's warning advises is checked by refitting at it (False on
    #: the refits that check it: they advise nothing).
    _checks_advice = True

    def _ratio_bound(self) -> bool:
        """Whether the bound is a ratio of rates: the remedies of a fit that misses it
        advise a lower bound, not a higher one, and its steering takes no path steps (see
        :func:`~._steering.fit_hard_rates`)."""
        return False

    def _steers_hard_rates(self, problem) -> bool:
        """Whether the fit steers the surrogate to the bound on hard predictions."""
        return False

    def _steer(self, problem, solve, context, budget):
        """The solves that steer the surrogate (a :class:`HardRateFit`)."""
        return fit_hard_rates(
            problem, solve, bound_tol=self.bound_tol, budget=budget, verbose=self.verbose,
            path_steps=not self._ratio_bound(), groups=self._row_groups(problem, context),
            # (The paper preset's solves are stochastic: no unconstrained solve is added to
            # its runs, only one the steering ran is reused.)
            free_solve=self.preset != "paper",
        )  # fmt: skip

    def _row_groups(self, problem, context):
        """The group code of each constraint row of ``problem``, or None (no groups)."""
        return None

    def _steers_hard_rates_after_fit(self, context) -> bool:
        """Whether the fit's bound is on hard predictions (see :meth:`_away_from_ties`)."""
        return False

    def _meets(self, values, context) -> bool:
        """Whether constraint report ``values`` (of :meth:`_constraint_report`) meet the bound."""
        return True

    def _decision_threshold(self, scores, y01, sample_weight) -> float:
        """The threshold of :meth:`predict` on the raw score (0 unless a subclass sets one)."""
        return 0.0

    def _negatives_rate_spent(self) -> float | None:
        """The share of the training negatives that the decision threshold flags, when the
        fit sets its threshold so (see :meth:`_decision_threshold`); None otherwise."""
        return None

    def _bound_met(self, result, fit) -> bool:
        """Whether the bound holds: on predictions when steered, else on the soft rates."""
        if fit is not None:
            return fit.met
        return bool(result.kkt_primal_residual <= self.tol)

    def _guarantee_holds(self) -> bool | None:
        """The verdict of a calibrated fit's guarantee on new data (its certificate, or its
        umbrella rule's bound), which is the fit's ``bound_met_``; None without one (the
        verdict is then on the training rows, :meth:`_bound_met`)."""
        return None

    def _rates_reached(self, context) -> str:
        """The constrained rates at the end, hard and soft, against the bound (for messages)."""
        hard = np.round(self.hard_constraint_values_, 4).tolist()
        soft = np.round(self.constraint_values_, 4).tolist()
        return f"{self._bound_text(context)}: on predictions {hard}, soft {soft}"

    def _bound_text(self, context) -> str:
        return "the constraint"

    # -- pickling ---------------------------------------------------------------------------------
    def __getstate__(self):
        # A copy: object.__getstate__ returns the instance's own dict, which the version
        # below would otherwise be written into.
        state = dict(super().__getstate__())
        from .._version import __version__

        state["_sklearn_ialm_version"] = __version__
        return state

    def __setstate__(self, state):
        from .._version import __version__

        pickled = state.pop("_sklearn_ialm_version", None)
        if pickled != __version__:
            warn(
                f"Trying to unpickle {type(self).__name__} from sklearn-ialm version "
                f"{pickled or 'unknown (pre-versioned pickle)'} when using version "
                f"{__version__}. The model may be invalid or behave differently; refit it "
                "with this version.",
                InconsistentVersionWarning,
            )
        super().__setstate__(state)

    # -- prediction ------------------------------------------------------------------------------
    def _score(self, X):
        if self.coef_.shape[0] > 1:  # K > 2 classes: one column of scores per class
            return (
                np.asarray(safe_sparse_dot(X, self.coef_.T, dense_output=True)) + self.intercept_
            )
        return np.asarray(safe_sparse_dot(X, self.coef_[0])).ravel() + self.intercept_[0]

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Score ``X @ coef_.T + intercept_`` of each row; positive means ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            A dask array (computed block by block on the workers) for dask input.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            from ._dask_inputs import blockwise_class_scores, blockwise_scores

            if self.coef_.shape[0] > 1:  # K > 2 classes: (n, K) scores
                return blockwise_class_scores(self, X)
            return blockwise_scores(self, X)
        X = validate_data(self, X, accept_sparse="csr", dtype=_DTYPES, reset=False)
        return self._score(X)

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Soft predictions: the sigmoid of the score (deterministic; not calibrated).

        The bound is on :meth:`predict`, not on these probabilities. A wrapper that
        recalibrates them, such as :class:`~sklearn.calibration.CalibratedClassifierCV`,
        predicts by its own rule (its calibrated probability against 0.5, from models fitted
        on parts of the data) and carries no bound: wrapping a
        ``FairLogisticClassifier(constraint="demographic_parity", bound=0.05)`` of the quick
        start, with ``cv=3`` its predictions' parity gap is 0.21 (sigmoid) or 0.18
        (isotonic) on the training rows (0.11 and 0.12 with the default five folds), where
        the estimator's own is 0.048. Use the estimator's
        :meth:`predict` where the bound must hold, and measure any other rule built on its
        scores (see the user guide's "What the bound means").

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``; column 1 is the soft positive prediction
            that the constraints were written with.
        """
        s = self.decision_function(X)
        if np.ndim(s) == 2:  # K > 2 classes: the softmax of the scores
            return _by_rows(s, lambda b: softmax(b, axis=1))
        return _two_columns(expit(-s), expit(s))

    def predict_log_proba(self, X: MatrixLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed without overflow.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        s = self.decision_function(X)
        if np.ndim(s) == 2:
            return _by_rows(s, lambda b: log_softmax(b, axis=1))
        return _two_columns(log_expit(-s), log_expit(s))

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Class of each row: ``classes_[1]`` where the score is positive.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if np.ndim(scores) == 2:  # K > 2 classes: the arg-max (offsets are in intercept_)
            if is_dask_collection(scores):
                classes = self.classes_
                return scores.map_blocks(
                    lambda b: classes[np.argmax(b, axis=1)], drop_axis=1, dtype=classes.dtype
                )
            return self.classes_[np.argmax(scores, axis=1)]
        positive = scores > 0
        if is_dask_collection(positive):
            classes = self.classes_
            return positive.map_blocks(lambda p: classes[p.astype(int)], dtype=classes.dtype)
        return self.classes_[positive.astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # More than two classes: the multinomial model; the certificates are binary only.
        tags.classifier_tags.multi_class = getattr(self, "calibration", None) is None
        tags.input_tags.sparse = True
        return tags

    # -- the report on any rows ------------------------------------------------------------------
    def bound_report(
        self,
        X: MatrixLike,
        y: ArrayLike,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        baseline=None,
        confidence: float = 0.95,
    ):
        """Whether the bound holds on rows ``X``, per group, with exact intervals.

        See :meth:`sklearn_ialm.BoundReport.from_estimator` (which also takes a Pipeline)
        for the parameters.

        Returns
        -------
        BoundReport
            With ``to_frame()``, ``to_dict()``, ``to_markdown()``, a plain-text ``str`` and
            an HTML view in notebooks.
        """
        # The report layer registered its builder on import: the estimators import none of it.
        if _report_builder is None:
            raise RuntimeError(
                "bound_report needs sklearn_ialm.report, which registers the report builder "
                "when it is imported: run `import sklearn_ialm.report` (or `import sklearn_ialm`)."
            )
        return _report_builder(
            self,
            X,
            y,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
            baseline=baseline,
            confidence=confidence,
        )
