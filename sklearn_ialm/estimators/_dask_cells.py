"""The rows' cells of a dask fit: its labels, groups and weights read in one pass, checked,
and the cells (a label and a group) through which they enter the problem (see
:class:`~._dask.OnDask`).
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from ._dask_inputs import like_rows


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
    rows: np.ndarray  # each cell's number of rows


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
    return _Cells(
        cell, row_w, classes, y01_all[live], sw_live, S, S2, factor, params, smallest, count[live]
    )
