"""What the steps of a fit hand on (:class:`Fitting`), and the checks of the labels and
weights that every data source shares (:func:`check_labels_and_weights`).

Below the steps (:mod:`._steps`), the data sources (in memory there, :mod:`._dask`,
:mod:`._dask_stream`) and the class models (:mod:`._binary`, :mod:`._multiclass`): each of
them reads and fills one ``Fitting``, none imports another to hand it on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Fitting", "check_labels_and_weights", "without_zero_weight"]


@dataclass
class Fitting:
    """One fit's state between its steps.

    ``validate`` sets the rows ``X``, their ``labels`` (0/1 for two classes, class codes for
    more), ``weights`` (sample times class weight, rows of weight zero dropped), ``classes``,
    the checked ``fit_params`` and the ``model`` of the classes; a data source may keep its
    own reductions in ``source`` (the Dask fit's cells), and a guarantee the validated ``y``
    (its rows all kept, see :meth:`._steps.InMemory.validate`). ``pose`` sets ``problem`` and
    ``context`` (what the report and the verdict need of the bound), ``start`` the start,
    ``solve`` the ``solved`` run(s) and the fitted attributes; the model keeps what its own
    steps hand on in ``notes``.
    """

    X: Any
    labels: np.ndarray
    weights: np.ndarray
    classes: np.ndarray
    fit_params: dict
    model: Any
    source: Any = None
    y: Any = None
    problem: Any = None
    context: Any = None
    start: Any = None
    solved: Any = None
    notes: dict = field(default_factory=dict)


def check_labels_and_weights(est, model, X, y, sample_weight, fit_params):
    """``(classes, labels, weights, fit_params)`` of the rows of ``X`` (validated, or a
    stand-in with their number of rows): the labels coded and the weights checked by the
    class ``model``, the per-row fit parameters by the estimator."""
    classes, labels = model.labels(est, y)
    weights = model.weights(est, sample_weight, X, y, labels, classes)
    fit_params = est._check_fit_params(fit_params, X.shape[0])
    return classes, labels, weights, fit_params


def without_zero_weight(est, X, labels, weights, fit_params):
    """``(X, labels, weights, fit_params)`` of the rows of nonzero weight."""
    # Zero-weight rows change neither the objective nor the constraints; dropping them
    # also keeps them out of the minibatches, so weight 0 is exactly "row removed".
    keep = weights > 0
    if not keep.all():
        X, labels, weights = X[keep], labels[keep], weights[keep]
        fit_params = est._subset_fit_params(fit_params, keep)
    return X, labels, weights, fit_params
