"""The estimators on dask collections: inputs as row-chunked arrays, blockwise predictions.

Imported only when an input is a dask collection (see ``_base.is_dask_collection``), so that
numpy and scipy.sparse users never import dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from ..problems._dask_rows import DaskLinearProblem, DaskRows, _sum_parts, column_moments
from ..problems.multinomial import cell_codes
from ..solver.prox import Ridge
from ._binary import Binary
from ._fitting import Fitting, check_labels_and_weights, without_zero_weight
from ._multiclass import Multinomial
from ._scaling import _feature_scaling


def as_rows(X, *, name: str = "X"):
    """``X`` as a dask array chunked by rows only (all columns in each block).

    A DataFrame or Series becomes an array whose partition lengths are known (dask reads them
    once: row indices need them). A 1-D input stays 1-D.
    """
    if hasattr(X, "to_dask_array"):
        # Not ``lengths=True``: that counts the rows of the frame's partitions as they are
        # for ``len`` (dask may read a column subset of Parquet files in fewer, larger
        # partitions than the whole frame) and fails when the array's partitions differ;
        # the array's own blocks are counted below instead (one read of X).
        X = X.to_dask_array()
    if not isinstance(X, da.Array):
        raise TypeError(f"{name} must be a dask array, DataFrame or Series, got {type(X)}.")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def like_rows(value, X, *, name: str):
    """A per-row ``value`` (dask or in memory) as a 1-D dask array chunked like ``X``."""
    on_dask = dask.is_dask_collection(value)
    value = as_rows(value, name=name) if on_dask else np.asarray(value)
    # Checked before an in-memory value is chunked like X: dask's "Chunks do not add up to
    # shape" would name neither.
    if value.ndim != 1 or value.shape[0] != X.shape[0]:
        raise ValueError(
            f"{name} must have shape ({X.shape[0]},) (one value per row of X), got {value.shape}."
        )
    if not on_dask:
        return da.from_array(value, chunks=(X.chunks[0],))
    return value.rechunk((X.chunks[0],)) if value.chunks[0] != X.chunks[0] else value


def check_features(estimator, X):
    """``X`` (a dask collection) as rows, checked against the fitted features."""
    columns = getattr(X, "columns", None)
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and columns is not None and list(columns) != list(names):
        raise ValueError(
            "The feature names of X differ from those seen in fit: "
            f"{list(columns)[:10]} vs {list(names)[:10]}."
        )
    X = as_rows(X)
    if X.ndim != 2 or X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1] if X.ndim == 2 else 'no'} features, but "
            f"{type(estimator).__name__} is expecting {estimator.n_features_in_} features as "
            "input."
        )
    return X


def blockwise_scores(estimator, X):
    """``estimator._score`` of every block of ``X``: a dask array of shape (n_samples,),
    named by a token of ``X`` and the coefficients."""
    X = check_features(estimator, X)
    coef, intercept = estimator.coef_[0].copy(), float(estimator.intercept_[0])

    def score(block):
        # The in-memory formula (float64 products), block by block: the same values as
        # decision_function on the computed array.
        return np.asarray(block, dtype=np.float64) @ coef + intercept

    name = f"score-{dask.base.tokenize(X, coef, intercept)}"
    return X.map_blocks(score, drop_axis=1, dtype=np.float64, name=name)


def blockwise_class_scores(estimator, X):
    """The ``(n_samples, K)`` scores of a model of ``K > 2`` classes, block by block: a dask
    array chunked like ``X``'s rows, all ``K`` columns in each block."""
    X = check_features(estimator, X)
    coef, intercept = estimator.coef_.copy(), estimator.intercept_.copy()

    def score(block):
        # The in-memory formula (_score: X @ coef_.T + intercept_, float64), block by block.
        return np.asarray(block, dtype=np.float64) @ coef.T + intercept

    name = f"class-scores-{dask.base.tokenize(X, coef, intercept)}"
    return X.map_blocks(score, chunks=(X.chunks[0], (coef.shape[0],)), dtype=np.float64, name=name)


# -- fit -----------------------------------------------------------------------------------------
def _cells_block(y, g, y_values, g_values):
    """The cell (label, group) of each row of a block, as an index into the cell table."""
    return np.searchsorted(y_values, y) * len(g_values) + np.searchsorted(g_values, g)


def _labels_block(y, g, w):
    """A block's distinct labels and groups, its (label, group) pairs as codes into them,
    and per pair: total weight, total squared weight, rows, smallest positive weight; and
    the block's smallest and largest weight."""
    uy, iy = np.unique(y, return_inverse=True)
    ug, ig = np.unique(g, return_inverse=True)
    pairs, at = np.unique(iy.ravel() * len(ug) + ig.ravel(), return_inverse=True)
    at = at.ravel()
    k = len(pairs)
    smallest = np.full(k, np.inf)
    np.minimum.at(smallest, at[w > 0], w[w > 0])
    sums = (
        np.bincount(at, weights=w, minlength=k),
        np.bincount(at, weights=w * w, minlength=k),
        np.bincount(at, minlength=k),
        smallest,
    )
    bounds = np.array([w.min(initial=np.inf), w.max(initial=-np.inf)])
    return uy, ug, pairs // len(ug), pairs % len(ug), sums, bounds


def _label_table(y, g, w):
    """``(y values, group values, (S, S2, count, smallest), (w_min, w_max))`` in one pass
    over the labels, groups and weights: per cell ``label * n_groups + group``, its total
    weight, total squared weight, rows and smallest positive weight."""
    parts = dask.compute(*(
        dask.delayed(_labels_block, pure=True)(yb, gb, wb)
        for yb, gb, wb in zip(y.to_delayed().ravel(), g.to_delayed().ravel(),
                              w.to_delayed().ravel(), strict=True)
    ))  # fmt: skip
    y_values = np.unique(np.concatenate([p[0] for p in parts]))
    g_values = np.unique(np.concatenate([p[1] for p in parts]))
    bounds = np.array([p[5] for p in parts])
    K = len(y_values) * len(g_values)
    S, S2, count = np.zeros(K), np.zeros(K), np.zeros(K, dtype=np.intp)
    smallest = np.full(K, np.inf)
    for uy, ug, py, pg, (s, s2, c, m), _ in parts:
        cell = np.searchsorted(y_values, uy[py]) * len(g_values) + np.searchsorted(
            g_values, ug[pg]
        )
        S[cell] += s
        S2[cell] += s2
        count[cell] += c
        smallest[cell] = np.minimum(smallest[cell], m)
    return y_values, g_values, (S, S2, count, smallest), (bounds[:, 0].min(), bounds[:, 1].max())


def _expit(z):
    from scipy.special import expit

    return expit(z)


def _report_block(X, cell, w, coef, intercept, n_cells, ts, negatives, loss=None, signs=None):
    """The training report's sums over a block, its scores formed as ``decision_function``
    forms them (float64 products).

    Without ``ts``: per cell, the weight times the sigmoid and times ``score > 0``, and the
    block's smallest and largest scores; with a ``loss``, per cell too, the weight times
    the loss of the margin (``signs``: each cell's label, +-1). With the sorted grid ``ts``:
    per grid point, the negatives' weight above it (``z > ts[i]`` exactly when
    ``i < searchsorted(ts, z)``: a row's weight is counted in the bin of its position among
    the thresholds, and the weight above ``ts[i]`` is the sum of the bins after ``i``), their
    total, and the same per cell of all rows (each cell's hard sum at each threshold).
    """
    z = np.asarray(X, dtype=np.float64) @ coef + intercept
    if ts is None:
        sums = (
            np.bincount(cell, weights=w * _expit(z), minlength=n_cells),
            np.bincount(cell, weights=w * (z > 0.0), minlength=n_cells),
            np.array([z.min(initial=np.inf), -z.max(initial=-np.inf)]),
        )
        if loss is None:
            return sums
        return (
            *sums,
            np.bincount(cell, weights=w * loss.value(signs[cell] * z), minlength=n_cells),
        )
    keep = w * negatives[cell]
    at = np.searchsorted(ts, z, side="left")
    bins = np.bincount(at, weights=keep, minlength=len(ts) + 1)
    above = np.cumsum(bins[::-1])[::-1][1:]
    k = len(ts) + 1
    cells = np.bincount(cell.astype(np.intp) * k + at, weights=w, minlength=n_cells * k)
    cells = cells.reshape(n_cells, k)
    return above, np.array([keep.sum()]), np.cumsum(cells[:, ::-1], axis=1)[:, ::-1][:, 1:]


def _rate_threshold(rows, coef, intercept, negatives, max_rate, first, *, grid=4096, passes=2):
    """The threshold of ``rate_threshold`` on the negatives' scores, by grid passes, and
    each cell's weight of scores above it.

    ``first`` is the pass without a grid (its last entry: the scores' smallest and largest,
    negated). Each pass measures the weighted share of negatives above ``grid + 1``
    thresholds in one reduction and keeps the interval where the share crosses
    ``max_rate``; the threshold returned is the interval's upper end, whose share is
    ``<= max_rate``: the lowest threshold meeting the rate up to ``grid ** -passes``
    (``2 ** -24``) of the scores' range.
    """
    lo, hi = float(first[2][0]), float(-first[2][1])
    lo = lo - 1e-9 * max(1.0, abs(lo))
    mask = np.asarray(negatives, dtype=float)
    n_cells = len(first[0])
    for _ in range(passes):
        ts = np.linspace(lo, hi, grid + 1)
        above, total, cells = rows.reduce(_report_block, coef, intercept, n_cells, ts, mask)
        ok = np.flatnonzero(above / total[0] <= max_rate * (1 + 1e-12))
        i = int(ok[0])  # the largest score itself has share 0
        if i == 0:
            return float(ts[0]), cells[:, 0]
        lo, hi = float(ts[i - 1]), float(ts[i])
    return hi, cells[:, i]


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


@dataclass
class _Cells:
    """The rows' cells (a label and a group) and what the problem needs of them.

    ``cell`` and ``row_weight`` are per-row dask arrays kept on the workers; the rest are
    per-cell arrays on the client, over the cells of positive weight.
    """

    cell: da.Array  # each row's cell, an index into the per-cell arrays
    row_weight: da.Array  # each row's weight in the problem: sample weight x class weight
    classes: np.ndarray
    y01: np.ndarray  # each cell's label in {0, 1}
    weight: np.ndarray  # each cell's total row weight (the builder's sample weight)
    sums: np.ndarray  # each cell's total sample weight
    square_sums: np.ndarray  # each cell's total squared sample weight
    factor: np.ndarray  # each cell's class weight, per unit of sample weight
    params: dict  # the estimator's per-row fit parameters, one row per cell
    smallest: np.ndarray  # each cell's smallest positive row weight (inf: none)


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


def checked_rows(est, X):
    """The parameters checked, and ``X`` as float rows; sets the features seen in fit."""
    est._validate_params()
    if getattr(est, "max_fpr", None) is not None and hasattr(est, "constraint"):
        raise NotImplementedError(
            "On dask input, FairLogisticClassifier's max_fpr is not supported yet."
        )
    columns = getattr(X, "columns", None)
    X = as_rows(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must hold numbers, got dtype {X.dtype}.")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    n, d = X.shape
    if X.numblocks[0] > 1 and n / X.numblocks[0] < _MIN_BLOCK_ROWS:
        # Every pass is a task per partition: 300 partitions of one row took 60-80 s.
        rows = min(n, max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (8 * d)))
        if est.verbose:
            print(
                f"[dask] X's {X.numblocks[0]} partitions hold {n / X.numblocks[0]:.3g} rows "
                f"each: rechunked to blocks of {rows} rows",
                flush=True,
            )
        X = X.rechunk({0: rows})
    est.n_features_in_ = X.shape[1]
    if columns is not None and all(isinstance(c, str) for c in columns):
        est.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    return X


#: ``fit`` on dask input streams X (:mod:`._dask_stream`) when ``max_passes`` is at most this.
STREAM_PASSES = 3
#: Partitions of fewer rows than this (on average) are joined into blocks of
#: ``_BLOCK_BYTES``: each partition is a task of every pass.
_MIN_BLOCK_ROWS = 512
_BLOCK_BYTES = 16 << 20
#: ``X`` is kept on the workers when it takes at most this share of their memory.
_PERSIST_SHARE = 0.5


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


def _checked_labels(X, y, sample_weight, fit_params):
    """``(y, g, w, sf, y_values, g_values, table, n)``: the labels, groups and weights as
    rows of ``X``, checked in one pass over them (see :func:`_cells`)."""
    n = X.shape[0]
    y = like_rows(y, X, name="y")
    w = (
        da.ones(n, chunks=(X.chunks[0],))
        if sample_weight is None
        else like_rows(sample_weight, X, name="sample_weight").astype(np.float64)
    )
    sf = fit_params.get("sensitive_features")
    g = (
        da.zeros(n, dtype=np.int8, chunks=(X.chunks[0],))
        if sf is None
        else like_rows(sf, X, name="sensitive_features")
    )
    # One pass over the labels, groups and weights checks them as the in-memory fit does,
    # before any pass over X: a continuous group column would otherwise make one cell per
    # value and the problem's tables grow with their square.
    y_values, g_values, table, (w_min, w_max) = _label_table(y, g, w)
    if not (np.isfinite(w_min) and np.isfinite(w_max)):
        raise ValueError("Input sample_weight contains NaN or infinity.")
    if w_min < 0:
        raise ValueError("Negative values in sample_weight are not allowed.")
    for name, values in (("y", y_values), ("sensitive_features", g_values)):
        if values.dtype.kind in "fc" and np.any(np.isnan(values)):
            raise ValueError(f"Input {name} contains NaN.")
    return y, g, w, sf, y_values, g_values, table, n


def _cells(est, X, labels, fit_params) -> _Cells:
    """The rows' cells from their checked labels, groups and weights (:func:`_checked_labels`)."""
    y, g, w, sf, y_values, g_values, table, n = labels
    K = len(y_values) * len(g_values)
    cell = da.map_blocks(
        _cells_block, y, g, y_values, g_values, dtype=np.intp, meta=np.zeros(0, np.intp)
    )
    S, S2, count, smallest = table
    check_groups = getattr(est, "_check_group_counts", None)
    excluded = np.array([], dtype=np.intp)
    if sf is not None and check_groups is not None:
        excluded = check_groups(count.reshape(len(y_values), -1).sum(axis=0), g_values, n)
    y_cells = np.repeat(y_values, len(g_values))
    g_cells = np.tile(g_values, len(y_values))
    classes, y01_all = est._check_target(y_cells)
    # One row per cell of positive weight stands for the cell in the estimator's builder.
    live = np.flatnonzero(S > 0)
    Xc = np.zeros((len(live), X.shape[1]))
    sw_live = est._sample_weights(S[live], Xc, y_cells[live], y01_all[live], classes)
    # The cells of positive weight are the problem's cells; a row of a cell of weight zero
    # (weight zero itself) is put in cell 0, where its zero weight leaves every sum as it is.
    remap = np.zeros(K, dtype=np.intp)
    remap[live] = np.arange(len(live))
    cell = cell.map_blocks(lambda c: remap[c], dtype=np.intp)
    S, S2 = S[live], S2[live]
    factor = sw_live / S  # class weights, per unit of sample weight
    # Each cell's smallest positive row weight (a product is monotone in its factor).
    smallest = np.where(factor > 0, smallest[live] * factor, np.inf)
    row_w = da.map_blocks(lambda c, w: w * factor[c], cell, w, dtype=np.float64)
    params = {}
    if "sensitive_features" in fit_params:
        params = (
            {"codes": None, "labels": None, "excluded": excluded}
            if sf is None
            else {
                "codes": np.searchsorted(g_values, g_cells[live]).astype(np.intp),
                "labels": g_values,
                "excluded": excluded,
            }
        )
    return _Cells(cell, row_w, classes, y01_all[live], sw_live, S, S2, factor, params, smallest)


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


def _report_from_cells(est, X, problem, cells: _Cells, context, fit, n_passes):
    """The fitted report attributes, each reported rate read from the cells' weighted means
    of the predictions: one pass over ``X`` (and two more for a Neyman-Pearson threshold),
    each scoring its blocks."""
    coef, intercept = est.coef_[0].copy(), float(est.intercept_[0])
    report_passes = 1.0
    y01c, sw_live, cell_weight = cells.y01, cells.weight, cells.weight
    rows = problem.A_obj
    terms = None if fit is None else fit.objective_terms
    moved = terms is not None and terms[2]  # off the chosen solve's point: its own loss
    loss = (terms[0], np.where(y01c == 1, 1.0, -1.0)) if moved else ()
    parts = rows.blockwise(_report_block, coef, intercept, len(sw_live), None, None, *loss)
    soft, hard = _sum_parts([p[:2] for p in parts])
    if moved:
        # (Weighted as the problem weighs its rows: the report's cell weights.)
        losses = _sum_parts([p[3:] for p in parts])[0]
        est.objective_ = float(losses.sum() / cell_weight.sum() + terms[1])
    # The scores' smallest and largest (for the threshold's grid).
    first = (soft, hard, np.min([p[2] for p in parts], axis=0))
    max_rate = est._negatives_rate_spent()
    if max_rate is not None:
        negatives = y01c == 0
        est.threshold_, hard = _rate_threshold(rows, coef, intercept, negatives, max_rate, first)
    elif hasattr(est, "threshold_"):
        est.threshold_ = 0.0
    est.n_data_passes_ = float(n_passes + report_passes)
    est.n_samples_fit_ = int(X.shape[0])  # (rows of weight zero included: they stay in X)
    est.constraint_values_ = est._constraint_report(soft / cell_weight, y01c, sw_live, context)
    est.hard_constraint_values_ = est._constraint_report(
        hard / cell_weight, y01c, sw_live, context
    )
    context.update(steering=fit, scores=None, y01=y01c, weights=sw_live)
    est._set_report_attributes(context)
    if "negatives" in context:
        # Kish's effective number of negatives from the rows' weights, not the cells'.
        neg = y01c == 0
        S, S2, factor = cells.sums, cells.square_sums, cells.factor
        w_neg, w2_neg = (S[neg] * factor[neg]).sum(), (S2[neg] * factor[neg] ** 2).sum()
        est._n_effective_negatives = int(w_neg**2 / w2_neg + 1e-9)
