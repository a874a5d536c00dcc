"""The training report of a dask fit: each rate read from the cells' weighted means of the
predictions, one pass over ``X`` scoring its blocks (two more for a Neyman-Pearson
threshold, found by grid passes).
"""

from __future__ import annotations

import numpy as np

from ..problems._dask_rows import _sum_parts
from ._dask_cells import _Cells
from ._new_rows import summed_cells


def _expit(z):
    from scipy.special import expit

    return expit(z)


def report_block(X, cell, w, coef, intercept, n_cells, ts, negatives, loss=None, signs=None):
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
        above, total, cells = rows.reduce(report_block, coef, intercept, n_cells, ts, mask)
        ok = np.flatnonzero(above / total[0] <= max_rate * (1 + 1e-12))
        i = int(ok[0])  # the largest score itself has share 0
        if i == 0:
            return float(ts[0]), cells[:, 0]
        lo, hi = float(ts[i - 1]), float(ts[i])
    return hi, cells[:, i]


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
    parts = rows.blockwise(report_block, coef, intercept, len(sw_live), None, None, *loss)
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
    # What to expect on new rows, from the same sums (judged with the verdict, as in memory):
    # the rows' sample weights, the hard sums divided by each cell's class weight.
    hits = np.divide(hard, cells.factor, out=np.zeros_like(hard), where=cells.factor > 0)
    codes, labels = cells.params.get("codes"), cells.params.get("labels")
    est._new_rows_cells = summed_cells(
        est, y01c, cells.rows, cells.sums, cells.square_sums, hits, codes, labels
    )
