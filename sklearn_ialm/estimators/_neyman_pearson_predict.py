"""How :class:`~sklearn_ialm.NeymanPearsonClassifier` predicts: the score less the threshold,
and with more than two classes under the umbrella calibration, the claim rule.

A mixin placed before :class:`~._base.BaseIALMClassifier` in the estimator's bases: its
``super()`` calls reach the base class.
"""

from __future__ import annotations

import numpy as np

from ._base import MatrixLike
from ._inputs import is_dask_collection
from ._multiclass_umbrella import predict_codes


class NeymanPearsonPrediction:
    """The prediction methods of :class:`~sklearn_ialm.NeymanPearsonClassifier`."""

    # -- prediction ------------------------------------------------------------------------------
    def raw_decision_function(self, X: MatrixLike) -> np.ndarray:
        """The score ``X @ coef_.T + intercept_`` of each row, before the threshold.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return super().decision_function(X)

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Class of each row: ``classes_[1]`` where :meth:`decision_function` is positive.

        On more than two classes, the arg-max of :meth:`decision_function`; with
        ``calibration="umbrella"``, the claim rule (``claim_order_``,
        ``claim_thresholds_``): the bounded classes claim the rows whose margin reaches their
        threshold in turn, any other row gets its arg-max.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        order = getattr(self, "claim_order_", None)
        if order is None:
            return super().predict(X)
        classes = self.classes_
        codes = [int(np.flatnonzero(classes == c)[0]) for c in order]
        thresholds = [self.claim_thresholds_[c] for c in order]
        scores = self.decision_function(X)
        if is_dask_collection(scores):  # the rule is row by row: block by block
            return scores.map_blocks(
                lambda b: classes[predict_codes(b, codes, thresholds)],
                drop_axis=1,
                dtype=classes.dtype,
            )
        return classes[predict_codes(scores, codes, thresholds)]

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Score minus threshold, ``raw_decision_function(X) - threshold_``.

        Positive exactly where :meth:`predict` says ``classes_[1]``. With
        ``rate="soft"`` and ``calibration=None`` (``threshold_ = 0.0``) it is the raw score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.raw_decision_function(X) - self.threshold_
