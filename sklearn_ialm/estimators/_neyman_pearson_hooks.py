"""What :class:`~sklearn_ialm.NeymanPearsonClassifier` gives the fit sequence (the hooks of
:class:`~._base.BaseIALMClassifier`): the classes and the bound ``max_fpr_``, the problem,
the steering of the negatives' weight, the decision threshold, and the report.

A mixin placed before :class:`~._base.BaseIALMClassifier` in the estimator's bases: its
``super()`` calls reach the base class.
"""

from __future__ import annotations

import numpy as np

from .._warnings import warn
from ..problems import neyman_pearson_logistic_problem, neyman_pearson_problem
from ._class_params import _python, binary_max_fpr
from ._hard_rates import rate_threshold
from ._negative_weight import fit_negative_weight
from ._scaling import DEFERRED_SCALING

#: Labels whose positive class needs no word when ``pos_label`` is None: 1 (or True).
_PLAIN_LABELS = ({0, 1}, {-1, 1})

#: The bound of a two-class fit when neither ``max_fpr`` nor ``max_class_error`` is set.
_DEFAULT_MAX_FPR = 0.2


class NeymanPearsonHooks:
    """The fit sequence's hooks of :class:`~sklearn_ialm.NeymanPearsonClassifier`."""

    def _say_positive_class(self):
        """Warn, once a fit, which class is positive when ``pos_label`` is None and the
        labels do not say it (anything but ``{0, 1}``, ``{-1, 1}`` or booleans): the
        sorted order (``"denied"`` after ``"approved"``) is no meaning, and ``max_fpr``
        bounds the errors of the other class."""
        if self.pos_label is not None or len(self.classes_) != 2:
            return
        negative, positive = (_python(c) for c in self.classes_)
        if self.classes_.dtype.kind in "biuf" and {negative, positive} in _PLAIN_LABELS:
            return
        warn(
            f"NeymanPearsonClassifier takes {positive!r} as the positive class (the greater "
            f"label in sorted order, classes_[1]): max_fpr={self.max_fpr_:g} bounds the rate "
            f"at which rows labelled {negative!r} are predicted {positive!r}, and the rows "
            f"labelled {positive!r} predicted {negative!r} are the errors it minimises. To "
            f"bound the errors on the rows labelled {positive!r} instead, set "
            f"pos_label={negative!r}; pos_label={positive!r} keeps this model and says so.",
            UserWarning,
        )

    def _check_target(self, y):
        """The classes (ordered by ``pos_label``) and the bound this fit fits, ``max_fpr_``.

        ``max_fpr_`` is read from the parameters once, here, by every fit path (in memory,
        umbrella, dask) and is what every later step reads: ``max_fpr`` (0.2 when None),
        or with ``max_class_error={negative label: alpha}`` that ``alpha``. The parameters are
        never changed by a fit, and the attribute is set on the fit's working copy, so it
        is published with the rest of the model.
        """
        classes, y01 = super()._check_target(y)
        self.max_fpr_ = self._max_fpr_of(classes)
        return classes, y01

    def _max_fpr_of(self, classes) -> float:
        """The bound on the false-positive rate that the parameters ask of two ``classes``
        (read again by a stream at each call, so that it follows ``set_params``)."""
        if self.max_class_error is not None:
            return binary_max_fpr(self, classes)
        return _DEFAULT_MAX_FPR if self.max_fpr is None else float(self.max_fpr)

    def _decision_threshold(self, scores, y01, sample_weight):
        """With ``rate="hard"`` (and no hold-out), the threshold that spends ``max_fpr`` on
        the training negatives; with ``calibration="umbrella"``, the umbrella rule's on the
        held-out negatives."""
        if getattr(self, "_umbrella_rows", None) is not None:
            return self._umbrella_threshold(self._umbrella_rows)
        self.threshold_ = 0.0
        max_rate = self._negatives_rate_spent()
        if max_rate is not None:
            neg = y01 == 0
            self.threshold_ = rate_threshold(scores[neg], sample_weight[neg], max_rate)
        return self.threshold_

    def _negatives_rate_spent(self):
        """``max_fpr`` with ``rate="hard"`` and no hold-out: the threshold spends it."""
        return self.max_fpr_ if self.rate == "hard" and self.calibration is None else None

    def _bound_met(self, result, fit):
        if self.rate == "hard":
            return bool(self.hard_constraint_values_[0] <= self.max_fpr_)
        return super()._bound_met(result, fit)

    def _bound_text(self, context):
        return f"false-positive rate bound max_fpr={self.max_fpr_:g}"

    def _build_problem(self, X, y01, sample_weight, fit_params):
        if self.rate == "soft" and self.loss != "sigmoid":
            raise ValueError(
                "rate='soft' is the paper's model, a bound on the soft false-positive rate of "
                f"the sigmoid loss: use loss='sigmoid' with it (got loss={self.loss!r})."
            )
        context = dict(negatives=y01 == 0, weights=sample_weight)
        if self.loss == "logistic":
            problem = neyman_pearson_logistic_problem(
                X,
                y01,
                fit_intercept=self.fit_intercept,
                sample_weight=sample_weight,
                **DEFERRED_SCALING,
            )
            return problem, context
        problem = neyman_pearson_problem(
            X,
            y01,
            max_fpr=self.max_fpr_,
            fit_intercept=self.fit_intercept,
            sample_weight=sample_weight,
            **DEFERRED_SCALING,
        )
        return problem, context

    def _steers_hard_rates(self, problem):
        return self.loss == "logistic"

    def _steer(self, problem, solve, context, budget):
        return fit_negative_weight(
            problem, solve, context["negatives"], context["weights"], self.max_fpr_,
            budget=budget, verbose=self.verbose,
        )  # fmt: skip

    def _constraint_report(self, proba, y01, sample_weight, context):
        neg = y01 == 0
        return np.array([np.average(proba[neg], weights=sample_weight[neg])])

    def _set_report_attributes(self, context):
        steering = context.get("steering") if isinstance(context, dict) else None
        self.negative_weight_ = steering.negative_weight if steering is not None else None
        self.train_soft_fpr_ = float(self.constraint_values_[0])
        self.train_fpr_ = float(self.hard_constraint_values_[0])
        if isinstance(context, dict):
            # Kish's effective number of negatives: the n of an unweighted sample whose mean
            # is as precise as the weighted one (the count itself when the weights are equal).
            w = context["weights"][context["negatives"]]
            self._n_effective_negatives = int(w.sum() ** 2 / np.dot(w, w) + 1e-9)
