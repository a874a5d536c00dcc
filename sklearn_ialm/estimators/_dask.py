"""The estimators on dask collections: the ``OnDask`` source, its problems posed on the rows.

Its inputs and blockwise predictions are :mod:`._dask_inputs`', the rows' cells
:mod:`._dask_cells`', the training report :mod:`._dask_report`'s. Imported only when an
input is a dask collection (see ``_base.is_dask_collection``), so that numpy and
scipy.sparse users never import dask.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from ..problems._dask_rows import DaskLinearProblem, DaskRows, column_moments
from ..problems.multinomial import cell_codes
from ..solver.prox import Ridge
from ._binary import Binary
from ._dask_cells import _Cells, _cells, _checked_labels
from ._dask_inputs import checked_rows
from ._dask_report import _report_from_cells
from ._fitting import Fitting, check_labels_and_weights, without_zero_weight
from ._multiclass import Multinomial
from ._scaling import _feature_scaling

#: ``fit`` on dask input streams X (:mod:`._dask_stream`) when ``max_passes`` is at most this.
STREAM_PASSES = 3
#: ``X`` is kept on the workers when it takes at most this share of their memory.
_PERSIST_SHARE = 0.5


def _wait(*collections):
    """Block until persisted collections are computed.

    A distributed client persists in the background: a pass started meanwhile would read
    X's blocks on the workers and hold them there until the rows' cells (which it reads
    too) are computed, a worker storing many blocks of X at once. The other schedulers
    persist before returning.
    """
    try:
        from distributed import futures_of, wait
    except ImportError:
        return
    futures = futures_of(collections)
    if futures:
        wait(futures)


class OnDask:
    """Rows of a dask collection: ``X`` never comes to the client.

    With two classes the labels, groups and weights enter the problem through the cells they
    form (a label and a group): the estimator's own problem builder runs on one row per
    cell, weighted by the cell's total, and its per-row weights are spread back over the
    rows (each row's weight times its cell's factor), so every bound and offset is the
    estimator's own. The report is computed the same way: each rate the estimators report
    is a weighted mean of the predictions over a label and a group, hence of the cells'
    weighted means. With more, the labels, groups and weights (checked) come to the client
    in one compute; X stays on the workers (see
    :mod:`sklearn_ialm.problems._dask_multinomial`).
    """

    #: No null start: its intercept would read the rows' labels by class on the workers.
    null_start = False
    #: The seeds run one after the other: each already keeps the cluster busy.
    in_sequence = True

    def validate(self, est, X, y, sample_weight, fit_params) -> Fitting:
        X = checked_rows(est, X)
        labels = _checked_labels(X, y, sample_weight, fit_params)
        if len(labels[4]) > 2:
            return self._multinomial(est, X, labels, sample_weight, fit_params)
        cells = _cells(est, X, labels, fit_params)
        return Fitting(
            X, cells.y01, cells.weight, cells.classes, cells.params, Binary(), source=cells
        )

    def _multinomial(self, est, X, labels, sample_weight, fit_params) -> Fitting:
        if est.preset != "default":
            raise ValueError(
                f"preset={est.preset!r} is not available for more than two classes on dask "
                "input (its minibatch search reads rows the client does not hold); use "
                "preset='default'."
            )
        y, g, w, sf = labels[:4]
        wanted = [y] + [w] * (sample_weight is not None) + [g] * (sf is not None)
        values = list(dask.compute(*wanted))
        y = np.asarray(values.pop(0))
        sample_weight = values.pop(0) if sample_weight is not None else None
        if sf is not None:
            fit_params = dict(fit_params, sensitive_features=values.pop(0))
        model = Multinomial()
        # (The weights are checked against the number of rows: X stays on the workers.)
        rows = np.empty((X.shape[0], 0))
        classes, codes, sw, fit_params = check_labels_and_weights(
            est, model, rows, y, sample_weight, fit_params
        )
        X, codes, sw, fit_params = without_zero_weight(est, X, codes, sw, fit_params)
        return Fitting(X, codes, sw, classes, fit_params, model)

    def binary_problem(self, est, fitting):
        """``(problem, context)``: the estimator's problem on one row per cell, posed on the
        rows (:func:`_pose_problem`)."""
        cells = fitting.source
        zeros = np.zeros((len(cells.weight), fitting.X.shape[1]))
        problem_c, context = est._build_problem(zeros, cells.y01, cells.weight, cells.params)
        problem = _pose_problem(est, fitting.X, cells, problem_c)
        fitting.X = problem.A_obj.A  # held on the workers when they have room
        return problem, context

    def multinomial_problem(self, est, fitting, constraints, groups):
        codes, K = fitting.labels, len(fitting.classes)
        C = None if est.C is None else est.C * est._C_scale  # see _scaled_weights
        return pose_multinomial(
            est, fitting.X, cell_codes(groups, codes, K), fitting.weights, y=codes,
            n_classes=K, constraints=constraints, C=C, n_cells=(int(groups.max()) + 1) * K,
        )  # fmt: skip

    def binary_report(self, est, fitting) -> None:
        _, fit, n_passes = fitting.solved
        problem, cells = fitting.problem, fitting.source
        _report_from_cells(est, fitting.X, problem, cells, fitting.context, fit, n_passes)
        # (Rows on the boundary stay where they are, and no constant model is weighed
        # against the fit: both read every training score on the client.)
        est._constant_fallback = None

    def said(self, est, fitting) -> None:
        if est.verbose:
            problem = fitting.problem
            rows = problem.A_obj if fitting.model.name == "binary" else problem.rows
            print(
                f"[dask] fitted in {rows.n_computes} computes and {est.n_data_passes_:.3g} "
                "data passes",
                flush=True,
            )


def pose_multinomial(est, X, cells, sw, **kwargs):
    """The :class:`~sklearn_ialm.problems._dask_multinomial.DaskMultinomialProblem` of a
    multi-class fit on the rows of ``X`` (a dask array): the cells and weights (in memory)
    persisted beside X, the features' units from two reductions."""
    from ..problems._dask_multinomial import DaskMultinomialProblem

    X, keep = _held_on_workers(est, X)
    chunks = (X.chunks[0],)
    cell_d = da.from_array(cells.astype(np.min_scalar_type(int(cells.max()))), chunks=chunks)
    w_d = da.from_array(sw, chunks=chunks)
    cell_d, w_d, X = dask.persist(cell_d, w_d, X) if keep else (*dask.persist(cell_d, w_d), X)
    _wait(cell_d, w_d, X)
    # Counted from the set-up's three computes: the labels' pass, the labels brought to the
    # client (_fit_multiclass_dask) and the persist above.
    rows = DaskRows(X, cell_d, w_d, n_computes=3)
    total = float(sw.sum())
    moments = column_moments(rows, total)
    scale, center, live = _feature_scaling(None, None, est.fit_intercept, moments=moments)
    n_live = max(1, int(live.sum()))
    return DaskMultinomialProblem(
        rows, cells=cells, sample_weight=sw, scale=scale * np.sqrt(n_live), center=center,
        penalty_units=n_live, fit_intercept=est.fit_intercept, **kwargs,
    )  # fmt: skip


def _current_client():
    """The distributed client that runs ``dask.compute`` now, or None."""
    client = getattr(dask.base.get_scheduler(), "__self__", None)
    return client if hasattr(client, "scheduler_info") else None


def _held_on_workers(est, X):
    """``(X, keep)``: whether to persist ``X`` on the workers, when their memory holds it
    with margin (each pass then reads it from their memory, not from its source); said in
    ``verbose``."""
    client = _current_client()
    size = f"{X.nbytes / 2**30:.3g} GiB"
    if client is None:
        if est.verbose:
            print(f"[dask] X ({size}) is read from its source at every pass (no distributed "
                  "client)", flush=True)  # fmt: skip
        return X, False
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:  # distributed before 2025.4 lists every worker without asking
        workers = client.scheduler_info()["workers"]
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    room = sum(limits) if limits and all(limits) else 0
    # X, and the 17 bytes a row of cells, weights and scores the fit keeps there.
    need = X.nbytes + 17 * X.shape[0]
    keep = bool(room and need <= _PERSIST_SHARE * room)
    if est.verbose and keep:
        print(f"[dask] X ({size}) persisted on the {len(limits)} workers "
              f"({room / 2**30:.3g} GiB of memory): every pass reads it there",
              flush=True)  # fmt: skip
    elif est.verbose:
        print(f"[dask] X ({size}) is read from its source at every pass: the workers' memory "
              f"({room / 2**30:.3g} GiB) does not hold it with margin", flush=True)  # fmt: skip
    return X, keep


def _pose_problem(est, X, cells: _Cells, problem_c):
    """The estimator's problem on the rows, in standard units, from ``problem_c``, its
    problem on one row per cell."""
    n, d = X.shape
    if problem_c.A_con.rows is not None and problem_c.n_constraints:
        raise NotImplementedError(
            "On dask input, bands of four or more groups (balanced constraint draws) are not "
            "supported yet."
        )
    # The builder's per-row arrays, per unit of row weight (see DaskLinearProblem).
    sw_live = cells.weight
    L = len(sw_live)
    obj = np.arange(L) if problem_c.A_obj.rows is None else problem_c.A_obj.rows
    U = np.zeros(L)
    np.add.at(U, obj, problem_c.u / sw_live[obj])
    m = problem_c.n_constraints
    H = np.zeros((L, m))
    if m:
        con = np.arange(L) if problem_c.A_con.rows is None else problem_c.A_con.rows
        scale = n / (problem_c.A_con.n_rows * sw_live[con])
        np.add.at(H, con, problem_c.W * scale[:, None])
    B = np.where(cells.y01 == 1, 1.0, -1.0)
    cell_weight = sw_live
    # Each row's cell and weight stay on the workers (9 bytes a row, against 8 d for X): every
    # pass and every minibatch reads them, and they would otherwise be recomputed from y, the
    # groups and the weights (re-read from their files) each time.
    X, keep = _held_on_workers(est, X)
    cells.cell, cells.row_weight, X = dask.persist(
        cells.cell.astype(np.min_scalar_type(max(L - 1, 0))), cells.row_weight, X
    ) if keep else (*dask.persist(
        cells.cell.astype(np.min_scalar_type(max(L - 1, 0))), cells.row_weight
    ), X)  # fmt: skip
    _wait(cells.cell, cells.row_weight, X)
    # Counted from the set-up's two computes: the labels' pass and the persist above.
    rows = DaskRows(X, cells.cell, cells.row_weight, n_computes=2)
    common = dict(
        loss=problem_c.loss,
        offset=problem_c.offset,
        inequality=problem_c.inequality,
        fit_intercept=problem_c.fit_intercept,
        constraint_names=problem_c.constraint_names,
        levels=problem_c.levels,
    )
    raw = DaskLinearProblem(rows, B, U, H, cell_weight, smoothness=(1.0, 1.0), **common)
    raw.cell_min_weight = cells.smallest
    total = float(cell_weight.sum())
    moments = raw.column_moments(total)
    scale, mean, live_cols = _feature_scaling(None, None, raw.fit_intercept, moments=moments)
    n_live = max(1, int(live_cols.sum()))
    h = None
    # C times the power of two the weights were scaled by (BaseIALMClassifier._scaled_weights).
    C = None if est.C is None else est.C * est._C_scale
    if C is not None and np.isfinite(C):
        mask = np.r_[np.ones(d, bool), np.zeros(int(raw.fit_intercept), bool)]
        h = Ridge(1.0 / (C * total * n_live), mask=mask)
    problem = DaskLinearProblem(
        rows, B, raw.u, H, cell_weight, h=h, feature_scale=scale * np.sqrt(n_live),
        feature_center=mean, **common,
    )  # fmt: skip
    problem.setup_evaluations += raw.setup_evaluations
    problem.cell_min_weight = cells.smallest
    return problem
