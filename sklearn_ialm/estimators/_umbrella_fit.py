"""The umbrella guarantee of a Neyman-Pearson fit (``calibration="umbrella"``).

A guarantee around the fit's steps: the rows are validated once, held-out rows are drawn
(negatives for two classes; per bounded class for more, see :mod:`._multiclass_umbrella`),
the steps train on the others (weight zero is a row removed), and the threshold of each
bounded error is an order statistic of the held-out scores (Tong, Feng and Li's umbrella
rule, :mod:`._umbrella`), so that the error on new rows exceeds its bound with probability
at most ``delta``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from .._warnings import warn
from ._multiclass_umbrella import fit_multiclass_umbrella
from ._solve import calibration_seed
from ._steps import InMemory

__all__ = ["Umbrella"]


class Umbrella:
    """The route's guarantee for ``calibration="umbrella"``."""

    def fit(self, est, X, y, sample_weight, fit_params, route) -> None:
        if route.multiclass:
            fit_multiclass_umbrella(est, X, y, sample_weight)
        else:
            _fit_binary(est, X, y, sample_weight)


def _fit_binary(est, X, y, sample_weight) -> None:
    """Validate everything once, on all rows, then train on the rows that are not held out
    and set the threshold on the held-out negatives."""
    fitting = InMemory(multiclass=False).validate(est, X, y, sample_weight, {}, guarantee=True)
    X, y, y01, sw = fitting.X, fitting.y, fitting.labels, fitting.weights
    feature_names = getattr(est, "feature_names_in_", None)
    held_out = _held_out_negatives(est, y01, sw)
    # The user's weights, held-out rows zeroed: the fit applies the class weights and
    # the scale of the weights itself (on sw they would be applied twice).
    train_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, copy=True)
    train_weight[held_out] = 0.0

    # The fit sets the threshold on these rows (_decision_threshold) before it reports on
    # the training rows: its hard rates, bound_met_, converged_ and warnings are those of
    # the model that predict uses, threshold included.
    est._umbrella_rows = X[held_out]
    try:
        est._fit(X, y, sample_weight=train_weight)
    finally:
        est.__dict__.pop("_umbrella_rows", None)
    est.calibration_indices_ = held_out
    # _fit validated the (already validated) ndarray again, which forgets the names.
    if feature_names is not None:
        est.feature_names_in_ = feature_names

    if not np.all(sw[held_out] == sw[held_out][0]):
        warn(
            "sample_weight differs among the held-out negatives: the umbrella rule counts "
            "each held-out negative once, so the guarantee is for the unweighted "
            "population of negatives.",
            UserWarning,
        )


def _held_out_negatives(est, y01, sample_weight):
    """The negatives (of nonzero weight) held out for the umbrella rule, sorted."""
    negatives = np.flatnonzero((y01 == 0) & (sample_weight > 0))
    n_calibration = est._n_calibration(negatives.size)
    rng = np.random.default_rng(calibration_seed(est.random_state))
    return np.sort(rng.choice(negatives, size=n_calibration, replace=False))
