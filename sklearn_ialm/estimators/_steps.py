"""The steps of a fit: one sequence, whatever the classes or the data::

    validate -> pose -> start -> solve (and steer) -> report -> conclude

Two axes are objects that the steps consult, each chosen once at the start:

* the **data source**: rows in memory (:class:`InMemory`), or a dask collection
  (:class:`~._dask.OnDask`; :class:`~._dask_stream.Streamed` when ``max_passes`` is at most
  :data:`~._dask.STREAM_PASSES`). It checks ``X`` and pairs the labels with its rows, builds
  the problem on its rows (the constraints the class model asks for, in standard units) and
  reads them for the report.
* the **classes**: two (:class:`~._binary.Binary`), more (:class:`~._multiclass.Multinomial`)
  or a stream's model (:class:`~._dask_stream.StreamModel`). It codes and weighs the labels,
  poses the problem with the source, starts, solves and steers it to the bound on
  predictions (setting the fitted attributes), reports the rates reached and gives the
  verdict.

Each step hands :class:`~._fitting.Fitting` to the next. The guarantees (:mod:`._fit`) run
around these steps, on a working copy of the estimator.
"""

from __future__ import annotations

import functools
import warnings
from datetime import UTC, datetime

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.validation import validate_data

from ._binary import Binary, training_report
from ._fitting import Fitting, check_labels_and_weights, without_zero_weight
from ._inputs import _DTYPES, _check_labels, is_dask_collection
from ._multiclass import Multinomial, is_multiclass
from ._multiclass_pose import memory_problem
from ._new_rows import rows_to_predict
from ._scaling import _standardised, training_moments

__all__ = ["InMemory", "Unguaranteed", "conclude", "refit_at", "steps"]


def steps(est, X, y, sample_weight, fit_params: dict, *, judge: bool = True):
    """Fit ``est`` (a working copy) on ``X``, ``y``; returns ``est``, or with ``judge=False``
    the conclusion still to draw (:func:`conclude`), for a guarantee that changes the
    prediction rule first (a verdict on another rule would describe a model ``predict``
    does not use)."""
    source = data_source(est, X, y)
    fitting = source.validate(est, X, y, sample_weight, fit_params)
    model = fitting.model
    if _checks_advice(est, source):
        fitting.notes["refit"] = functools.partial(refit_at, est, X, y, sample_weight, fit_params)
    with model.limits():
        model.pose(est, fitting, source)
        model.start(est, fitting, source)
        model.solve(est, fitting, source)
        model.report(est, fitting, source)
    source.said(est, fitting)
    verdict = functools.partial(conclude, est, fitting)
    if not judge:
        return verdict
    verdict()
    return est


def data_source(est, X, y):
    """The source of the rows of ``X`` (``y`` in memory: its classes counted here)."""
    if is_dask_collection(X):
        # (Imported here: dask is an optional extra.)
        from ._dask import STREAM_PASSES, OnDask

        if est.max_passes <= STREAM_PASSES:
            from ._dask_stream import Streamed

            return Streamed()
        return OnDask()
    return InMemory(multiclass=not is_dask_collection(y) and is_multiclass(y))


def conclude(est, fitting) -> None:
    """``bound_met_``, ``converged_``, ``fitted_at_`` and the warnings, once the report is
    set: the class model's verdict, told in its words."""
    est.bound_met_, est.converged_ = fitting.model.verdict(est, fitting)
    # When the model was fitted, for a report a reviewer can trace (UTC, ISO 8601).
    est.fitted_at_ = datetime.now(UTC).isoformat(timespec="seconds")
    fitting.model.tell(est, fitting)


def _checks_advice(est, source) -> bool:
    """Whether a bound the fit's warning advises is checked by refitting at it (see
    :func:`._verdict._checked_bound`): the same steps on the same input, as the user's
    refit. An estimator with a ``bound``, rows in memory; not on the refits
    themselves, nor in the inner fit of a certified one (the user's refit there trains
    inside another margin)."""
    certified = getattr(est, "_training_bound", None) is not None
    in_memory = isinstance(source, InMemory)
    bounded = "bound" in est.get_params(deep=False)
    return bounded and in_memory and est._checks_advice and not certified


def refit_at(est, X, y, sample_weight, fit_params, bound: float) -> dict:
    """The verdict of ``est``'s parameters refitted at ``bound`` on the same input, its
    warnings silenced and its own advice not checked: ``converged``, ``met`` (on its
    training predictions), ``hard`` (its report's values), ``reached`` (the values on
    predictions of its solve nearest the bound, where no solve met it; else empty),
    ``passes`` and ``spent`` (its budget ran out)."""
    work = clone(est).set_params(verbose=0, bound=bound)
    work._checks_advice = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            verdict = steps(work, X, y, sample_weight, fit_params, judge=False)
        except ValueError:
            # A bound the fit refuses (e.g. a share no model can give): not one to advise.
            none = np.array([])
            return {
                "converged": False, "met": False, "hard": none, "reached": none,
                "passes": 0.0, "spent": False,
            }  # fmt: skip
        verdict()
    context = verdict.args[1].context  # (the Fitting the conclusion was drawn on)
    nearest = context.get("nearest") if isinstance(context, dict) else None
    return {
        "converged": bool(work.converged_),
        "met": bool(work.bound_met_),
        "hard": work.hard_constraint_values_,
        "reached": np.array([]) if nearest is None else np.asarray(nearest["hard"]),
        "passes": float(work.n_data_passes_),
        "spent": bool(work.n_data_passes_ >= work.max_passes),
    }


class Unguaranteed:
    """The route's guarantee when ``calibration`` is None: the steps on every row."""

    def fit(self, est, X, y, sample_weight, fit_params, route) -> None:
        steps(est, X, y, sample_weight, fit_params)


class InMemory:
    """Rows in memory: a numpy array or a scipy.sparse matrix (kept CSR)."""

    #: The start without a previous fit is the null model with its best intercept.
    null_start = True
    #: The seeds run through joblib (``n_jobs``).
    in_sequence = False

    def __init__(self, multiclass: bool):
        self.multiclass = multiclass

    def validate(self, est, X, y, sample_weight, fit_params, *, guarantee=False) -> Fitting:
        """The parameters, ``X`` and ``y`` checked (the features seen in fit set), the labels
        coded and weighted by the class model, the rows of weight zero dropped; for a
        ``guarantee`` (which holds rows out before the steps run on the others), every row
        kept and the validated ``y`` with them."""
        if not est.__dict__.pop("_params_validated", False):  # (checked by _fit.fit)
            est._validate_params()
        # (The per-row inputs were paired with the rows of X by the estimator's fit, see
        # _rows.align_rows.)
        _check_labels(y)
        X, y = validate_data(est, X, y, accept_sparse="csr", dtype=_DTYPES, order="C")
        if sp.issparse(X) and not X.has_canonical_format:
            # Duplicate entries would be counted apart in the column moments; a canonical
            # copy gives the same model as the canonical matrix.
            X = X.copy()
            X.sum_duplicates()
        model = Multinomial() if self.multiclass else Binary()
        classes, labels, weights, fit_params = check_labels_and_weights(
            est, model, X, y, sample_weight, fit_params
        )
        if guarantee:
            return Fitting(X, labels, weights, classes, fit_params, model, y=y)
        del y  # the labels stand for it from here (a validated copy of a list is n long)
        X, labels, weights, fit_params = without_zero_weight(est, X, labels, weights, fit_params)
        return Fitting(X, labels, weights, classes, fit_params, model)

    def binary_problem(self, est, fitting):
        """``(problem, context)``: the estimator's problem on the rows, in standard units."""
        X, sw = fitting.X, fitting.weights
        problem, context = est._build_problem(X, fitting.labels, sw, fitting.fit_params)
        C = None if est.C is None else est.C * est._C_scale  # see _scaled_weights
        # Kept: the report tells rows far from these (e.g. a Pipeline's raw rows).
        est._feature_moments = training_moments(X, sw)
        return _standardised(problem, X, sw, C, est._feature_moments), context

    def multinomial_problem(self, est, fitting, constraints, groups):
        codes, K = fitting.labels, len(fitting.classes)
        return memory_problem(est, fitting.X, codes, fitting.weights, K, constraints, groups)

    def binary_report(self, est, fitting) -> None:
        """The report on the training rows, after the problem is freed."""
        result, fit, n_passes = fitting.solved
        X = fitting.X
        n_samples = fitting.problem.n_samples
        est.n_samples_fit_ = int(X.shape[0])
        # The problem's per-row arrays (margins, weights, W) are not needed for the report,
        # which scores X again: freed first, they do not add to its n-vectors.
        fitting.problem = None
        predicted = training_report(est, X, fitting.labels, fitting.weights, fitting.context, fit)
        # The report scored every row of X once more (twice when no solve met the bound:
        # the solve nearest it too, for the warning), and the new-rows check predicts the
        # rows fit was given unless the report's predictions are theirs: part of the fit's
        # work. (No step of the report reads the count.)
        scorings = 1 + (fit is not None and fit.nearest is not None)
        rows = scorings * X.shape[0] + rows_to_predict(est, fitting, predicted)
        est.n_data_passes_ = float(n_passes + rows / n_samples)

    def said(self, est, fitting) -> None:
        """Nothing to add in ``verbose`` (the dask sources count their computes)."""
