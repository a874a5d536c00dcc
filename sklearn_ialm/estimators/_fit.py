"""The estimators' fit: its route chosen once, its steps run on a working copy, published whole.

``fit`` of either estimator comes here with its rows paired (:func:`._rows.align_rows`)::

    working copy -> guarantee [hold rows out -> steps -> certify] -> publish
    steps: validate -> pose -> start -> solve (and steer) -> report -> conclude

The route (:class:`Route`) is read once from the estimator and its input: the guarantee, an
object whose ``fit`` runs the steps (``Unguaranteed``, Clopper-Pearson's certificate of a
fairness bound in :mod:`._certified`, the umbrella threshold of Neyman-Pearson's in
:mod:`._umbrella_fit`), and for a guarantee whether ``y`` holds more than two classes. A
combination that no step supports is refused here, before any step runs. The steps
themselves, with their data source and class model, are :mod:`._steps`'.

A fit on a working copy that raises or is interrupted leaves the estimator as it was
(:meth:`BaseIALMClassifier._working_copy`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..solver.threads import one_blas_thread
from ._certified import ClopperPearson
from ._inputs import is_dask_collection
from ._multiclass import is_multiclass
from ._new_rows import assess_new_rows, judge
from ._steps import Unguaranteed
from ._umbrella_fit import Umbrella

__all__ = ["Route", "fit"]


_GUARANTEES = {None: Unguaranteed(), "clopper-pearson": ClopperPearson(), "umbrella": Umbrella()}


@dataclass(frozen=True)
class Route:
    """The axes of one fit, read from the estimator and its input."""

    guarantee: object  # _GUARANTEES[est.calibration]: its fit runs the steps
    multiclass: bool  # a guarantee's y (in memory) holds more than two classes

    @classmethod
    def of(cls, est, X, y) -> Route:
        # Only a guarantee reads the classes here (the steps count them as they validate):
        # a fit without one does not pay for a second count of y.
        multiclass = est.calibration is not None and not is_dask_collection(y) and is_multiclass(y)
        route = cls(_GUARANTEES[est.calibration], multiclass)
        route._refuse(est, X, y)
        return route

    def _refuse(self, est, X, y) -> None:
        """Refuse a combination no step supports, naming the parameter."""
        if est.calibration is not None and (is_dask_collection(X) or is_dask_collection(y)):
            # A guarantee holds rows out by group (and class), trains on the rest and reads
            # the held-out rows' predictions once: steps over rows in memory. Computing a
            # collection here would hide a copy of every row on the client.
            raise ValueError(
                f"calibration={est.calibration!r} needs the rows in memory: its hold-out "
                "draws rows by group and class and reads their predictions on the client, "
                "and X or y is a dask collection. Pass X.compute() and y.compute() (and "
                "computed sensitive_features) when they fit in memory, or use "
                "calibration=None for an out-of-core fit, whose bound is on the training "
                "rows."
            )


def fit(est, X, y, sample_weight, fit_params: dict, **published):
    """Fit ``est`` along its route on a working copy and publish it with ``published``
    (attributes the estimator's ``fit`` read from its input); returns ``est``."""
    work = est._working_copy()
    work._validate_params()  # (the route reads calibration)
    # The steps need not check them again (see _steps.InMemory.validate): one check of
    # sklearn's constraints took 0.3 ms, 1 % of a fit of 100 groups of 20 rows.
    work._params_validated = True
    route = Route.of(work, X, y)
    if not is_dask_collection(X):
        # The new-rows check below reads these rows: the report takes its predictions from
        # its own where it scored this very array (see _new_rows.rows_to_predict).
        work._new_rows_input = X
    with one_blas_thread(_stored_values(X)):
        route.guarantee.fit(work, X, y, sample_weight, fit_params, route)
        work.__dict__.pop("_params_validated", None)  # (a route that did not read it)
        if not is_dask_collection(X):
            assess_new_rows(work, X, y, fit_params.get("sensitive_features"), sample_weight)
        elif work.calibration is None:
            # (A Dask fit's report summed its cells' predictions: no further pass.)
            judge(work, work.__dict__.pop("_new_rows_cells", []))
    for name, value in published.items():
        setattr(work, name, value)
    est._publish(work)
    return est


def _stored_values(X) -> float:
    """The values ``X`` holds (non-zeros of a sparse matrix, every entry else; infinite for
    a dask collection or an input without a shape): the size that decides whether the fit's
    BLAS calls run on one thread (:func:`~sklearn_ialm.solver.threads.one_blas_thread`)."""
    if is_dask_collection(X):
        return np.inf
    if sp.issparse(X):
        return float(X.nnz)
    shape = getattr(X, "shape", None)
    return float(np.prod(shape)) if shape is not None else np.inf
