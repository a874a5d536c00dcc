"""The Neyman-Pearson bound on new rows: the umbrella calibration and the few-negatives warning.

A mixin of :class:`~sklearn_ialm.NeymanPearsonClassifier`: with ``calibration="umbrella"``
the held-out negatives' size checked and their threshold set by the umbrella rule (its
certificate with it); without one, the warning that a bound met on few training negatives
is no promise on new rows.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from .._warnings import warn
from ._new_rows import NewRowsWarning
from ._umbrella import (
    training_fpr_upper_limit,
    umbrella_min_calibration_size,
    umbrella_threshold,
)

#: Without a hold-out, warn when the rate on new rows may exceed ``max_fpr`` by more than this
#: factor from the sampling of the training negatives alone (with probability ``delta``):
#: 210 negatives at ``max_fpr=0.1`` give 1.41 (a test FPR of 0.177 was met on such data, the
#: score overfitting on top), 2000 give 1.12, 600 give 1.22.
_SMALL_SAMPLE_EXCESS = 1.25


def _expected(est) -> str:
    """The new-row expectation of ``new_rows_`` in words, for the few-negatives warning."""
    info = getattr(est, "new_rows_", None)
    if not info:
        return ""
    low, high = info["interval"]
    return (
        f" Expected FPR on new rows: about {info['training_value']:.3g}, "
        f"{info['level']:.0%} interval [{low:.3g}, {high:.3g}] (new_rows_)."
    ) + (
        f" The model has {info['n_parameters']} parameters for {info['smallest_cell']} "
        "negatives: its training FPR is optimistic beyond their sampling, expect more."
        if info["rare_features"]
        else ""
    )


class NeymanPearsonGuarantee:
    """The umbrella calibration and the few-negatives warning of
    :class:`~sklearn_ialm.NeymanPearsonClassifier`."""

    def _umbrella_threshold(self, X_held):
        """The umbrella threshold of the held-out negatives' scores (set and returned), and
        its certificate."""
        scores = self._score(X_held)
        umbrella = umbrella_threshold(scores, self.max_fpr_, self.delta)
        self.threshold_ = umbrella.threshold + self._rounding_margin(X_held)
        self.violation_bound_ = umbrella.violation_bound
        self.calibration_rank_ = umbrella.rank
        self.n_calibration_ = umbrella.n_calibration
        self.calibration_fpr_ = float(np.mean(scores > self.threshold_))
        return self.threshold_

    def _few_negatives_limit(self) -> float | None:
        """The ``1 - delta`` quantile of the new-row FPR from the sampling of the training
        negatives where it exceeds ``max_fpr`` by more than a quarter, else None."""
        if len(self.classes_) > 2:
            return None  # a multi-class fit bounds class errors, not the false-positive rate
        upper = training_fpr_upper_limit(self._n_effective_negatives, self.max_fpr_, self.delta)
        return None if upper <= _SMALL_SAMPLE_EXCESS * self.max_fpr_ else upper

    def _warn_if_few_negatives(self):
        """Say when the bound on the training negatives will not carry to new rows.

        The threshold is an order statistic of ``n`` training negatives; the rate it gives
        on new rows spreads like ``Beta(n - k + 1, k)`` around ``max_fpr`` even for a score
        that never saw them (:func:`training_fpr_upper_limit`). When its ``1 - delta``
        quantile exceeds ``max_fpr`` by more than a quarter, the training reading is no
        promise about new rows, and the umbrella calibration is what makes one.
        """
        upper = self._few_negatives_limit()
        if upper is None:
            return
        n, max_fpr = self._n_effective_negatives, self.max_fpr_
        needed = umbrella_min_calibration_size(max_fpr, self.delta)
        warn(
            f"max_fpr={max_fpr:g} holds on the {n} training negatives, but a threshold "
            f"set on so few is an estimate: on new rows its false-positive rate exceeds "
            f"{upper:.3f} with probability delta={self.delta:g} from their sampling alone "
            "(more where the score overfits them). For a bound on new data, use "
            "calibration='umbrella': it holds out calibration_size of the negatives and "
            "certifies P(false-positive rate on new rows > max_fpr) <= delta (it needs at "
            f"least {needed} held-out negatives at this max_fpr and delta)." + _expected(self),
            NewRowsWarning,
        )

    def _guarantee_holds(self):
        """With ``calibration="umbrella"``, the umbrella rule's guarantee on new data: its
        violation bound at most ``delta`` (every bounded class certified, with more than
        two classes); None without one."""
        if self.calibration != "umbrella" or not hasattr(self, "violation_bound_"):
            return None
        certified = getattr(self, "class_certified_", None)
        if certified is not None and not all(certified.values()):
            return False
        return bool(self.violation_bound_ <= self.delta)

    def _rounding_margin(self, X) -> float:
        """Twice the worst floating-point error of a score of the rows ``X``.

        ``|fl(x.w + b) - (x.w + b)| <= gamma_(d+1) (|x|.|w| + |b|)`` with
        ``gamma_n = n u / (1 - n u)`` for any order of summation (Higham, Accuracy and
        Stability of Numerical Algorithms, eq. 3.5), so two computations of the same score
        differ by at most twice that.
        """
        n_terms = self.coef_.shape[1] + 1
        u = np.finfo(np.float64).eps / 2
        gamma = n_terms * u / (1 - n_terms * u)
        magnitude = np.asarray(abs(X) @ np.abs(self.coef_[0])).ravel() + abs(self.intercept_[0])
        return float(2 * gamma * magnitude.max())

    def _n_calibration(self, n_negatives: int) -> int:
        """Number of negatives to hold out, checked against the umbrella rule's minimum."""
        size = self.calibration_size
        n = int(size) if isinstance(size, Integral) else math.ceil(float(size) * n_negatives)
        what = (
            f"calibration_size={size!r} holds out {n} of {n_negatives} negatives (with "
            "nonzero weight)"
        )
        if n >= n_negatives:
            raise ValueError(f"{what}, which leaves none to train on; choose a smaller one.")
        needed = umbrella_min_calibration_size(self.max_fpr_, self.delta)
        if n < needed:
            more = f"calibration_size >= {needed}"
            if not isinstance(size, Integral):
                more += (
                    f" as an int, or data with at least {math.ceil(needed / float(size))} "
                    f"negatives at calibration_size={size!r}"
                )
            raise ValueError(
                f"Too few held-out negatives for the umbrella rule: {what}, but "
                f"max_fpr={self.max_fpr_!r} and delta={self.delta!r} need at least {needed} "
                f"(the smallest n with (1 - max_fpr)^n <= delta). Hold out more ({more}), "
                "or raise max_fpr or delta."
            )
        return n
