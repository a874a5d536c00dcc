"""``fit`` on a dask collection within a budget of one to three passes over ``X``.

A full fit reads ``X`` tens of times (its stochastic phase, the finish's Newton steps, the
report). With ``max_passes <= 3`` (:data:`STREAM_PASSES`) the fit is out of core instead:

1. **The stream** (one pass): the blocks of ``X`` come to the client one group at a time
   (consecutive blocks up to :data:`GROUP_BYTES`, with their labels, groups and weights in
   the same compute), and each block is one ``partial_fit`` call: the same Stoc-iALM +
   PStorm state (:mod:`._stream`). Each block is computed once.
2. **The measure** (``max_passes >= 2``): one pass scores every training row with the
   published model and counts the rates the bound is on, exactly (the report attributes of
   a full fit: ``constraint_values_``, ``hard_constraint_values_``, ``bound_met_``).
   Without it, ``bound_met_`` is the stream's verdict on its recent rows (each block
   predicted by the model that learnt it, see ``partial_fit``), and the warning says so.
3. **The threshold** (``max_passes >= 3``, Neyman-Pearson with ``rate="hard"``): one pass
   sets ``threshold_`` on the training negatives as a full fit does, the lowest of a grid of
   4096 over the scores' range that flags at most ``max_fpr`` of them. A fairness bound has
   no step that one pass over ``X`` makes, so its third pass is left unspent (said in
   ``n_data_passes_``).

``converged_`` is False: a stream is an estimate, not a solve to ``tol``; the warning says
what was reached and that a full fit needs more passes.
"""

from __future__ import annotations

import contextlib
import warnings

import dask
import dask.array as da
import numpy as np
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

from .._warnings import warn
from ..problems._dask_rows import DaskRows
from ._dask import STREAM_PASSES
from ._dask_cells import _checked_labels
from ._dask_inputs import checked_rows
from ._dask_report import _rate_threshold
from ._fitting import Fitting
from ._stream import _codes
from ._stream_poses import _group_codes
from ._stream_verdict import cell_rates

#: The blocks of one compute of the stream: consecutive blocks up to this many bytes of X
#: (at least one block), held on the client together.
GROUP_BYTES = 256 << 20


class Streamed:
    """Rows of a dask collection read in one to three passes (the module docstring)."""

    def validate(self, est, X, y, sample_weight, fit_params) -> Fitting:
        """``X`` as row blocks and the labels, groups and weights checked in one pass over
        them (the stream's first compute); the stream's model."""
        if est.max_passes < 1:
            raise ValueError(
                f"max_passes={est.max_passes!r} on dask input: the least a fit reads is one "
                "pass over X (the stream). Use max_passes >= 1."
            )
        columns = getattr(X, "columns", None)
        X = checked_rows(est, X)
        names = est.__dict__.get("feature_names_in_")
        y, g, w, sf, y_values, g_values, table, n = _checked_labels(
            X, y, sample_weight, fit_params
        )
        excluded = None
        check_groups = getattr(est, "_check_group_counts", None)
        if sf is not None and check_groups is not None:
            # The checks and the policy of every other fit (min_group_size), from the
            # labels' pass, before any block of X is read: a continuous column is refused
            # there, and the groups too small to constrain are left out of the stream's.
            count = table[2].reshape(len(y_values), -1).sum(axis=0)
            excluded = g_values[check_groups(count, g_values, n)]
        if len(y_values) > 2:
            raise NotImplementedError(
                f"max_passes={est.max_passes:g} on dask input streams X (binary only), and y "
                f"holds {len(y_values)} classes: raise max_passes above {STREAM_PASSES} for "
                "the full multi-class fit."
            )
        read = dict(
            groups=g if sf is not None else None, y_values=y_values, g_values=g_values,
            table=table, n=n, names=names if columns is not None else None,
            weighted=sample_weight is not None, computes=[1],  # the labels' pass
            excluded=excluded,
        )  # fmt: skip
        return Fitting(X, y, w, y_values, fit_params, StreamModel(), source=read)

    def said(self, est, fitting) -> None:
        if est.verbose:
            computes = fitting.source["computes"][0]
            print(
                f"[dask] streamed in {computes} computes and {est.n_data_passes_:g} data passes",
                flush=True,
            )


class StreamModel:
    """The class model of a streamed fit: ``partial_fit``'s state learns block by block
    (the stream poses its problem from the first block, and starts it there); the report
    is the measure's pass, the verdict the stream's (never converged: an estimate)."""

    name = "stream"

    def limits(self):
        return contextlib.nullcontext()

    def pose(self, est, fitting, source) -> None:
        """Posed by the stream's first block (:mod:`._stream`)."""

    def start(self, est, fitting, source) -> None:
        """Started by the stream's first block (:mod:`._stream`)."""

    def solve(self, est, fitting, source) -> None:
        read, X = fitting.source, fitting.X
        w = fitting.weights if read["weighted"] else None
        _stream(est, X, fitting.labels, read["groups"], w, read["y_values"], read["g_values"],
                read["computes"], read["excluded"])  # fmt: skip
        est.n_features_in_ = X.shape[1]
        if read["names"] is not None:
            est.feature_names_in_ = read["names"]

    def report(self, est, fitting, source) -> None:
        read, state = fitting.source, est._stream
        budget = float(est.max_passes)
        passes = 1.0
        if budget >= 2:
            passes += _measure(est, state, fitting.X, fitting.labels, read["groups"],
                               fitting.weights, budget, read["computes"])  # fmt: skip
        est.n_data_passes_ = passes
        est.n_samples_fit_ = int(read["n"])
        est.n_computes_ = read["computes"][0]
        # Kish's effective number of negatives (Neyman-Pearson's warning on too few of
        # them), from the labels' pass.
        y_values, table = read["y_values"], read["table"]
        negative = np.searchsorted(y_values, state.classes[0])
        S, S2 = (v.reshape(len(y_values), -1)[negative].sum() for v in table[:2])
        est._n_effective_negatives = int(S**2 / S2 + 1e-9) if S2 > 0 else 0
        est._constant_fallback = None

    def verdict(self, est, fitting) -> tuple[bool, bool]:
        """The stream's ``bound_met_`` (running or measured); never converged."""
        return est.bound_met_, False

    def tell(self, est, fitting) -> None:
        _warn(est, float(est.max_passes) >= 2)


def _stream(est, X, y, g, w, y_values, g_values, computes, excluded=None):
    """``partial_fit`` on each block of ``X`` in order, a group of blocks per compute (the
    groups ``excluded`` left out of the constraints)."""
    fair = hasattr(est, "constraint")
    parts = [X.to_delayed().ravel(), y.to_delayed().ravel()]
    if g is not None:
        parts.append(g.to_delayed().ravel())
    if w is not None:
        parts.append(w.to_delayed().ravel())
    blocks = list(zip(*parts, strict=True))
    row_bytes = X.dtype.itemsize * X.shape[1]
    sizes = [c * row_bytes for c in X.chunks[0]]
    start, first = 0, True
    while start < len(blocks):
        end, held = start + 1, sizes[start]
        while end < len(blocks) and held + sizes[end] <= GROUP_BYTES:
            held += sizes[end]
            end += 1
        (values,) = dask.compute(blocks[start:end])
        computes[0] += 1
        for block in values:
            Xb, yb, rest = block[0], block[1], list(block[2:])
            kw = {"sample_weight": rest.pop() if w is not None else None}
            if first:
                kw["classes"] = y_values
            if fair:
                kw["sensitive_features"] = rest.pop() if g is not None else None
                if first and g is not None:
                    kw.update(groups=g_values, excluded_groups=excluded)
            with warnings.catch_warnings():
                # The fit's own warning says what the stream reached, once, at its end.
                warnings.filterwarnings("ignore", "partial_fit: the ", ConvergenceWarning)
                (est._partial_fit if fair else est.partial_fit)(Xb, yb, **kw)
            first = False
        start = end


def _cells_block(y, g, classes, codec, labels, pose):
    """The stream's cell of each row of a block (its label, and its group if any)."""
    codes = _codes(y, classes)
    groups = None if g is None else _group_codes(codec, labels, g, len(codes))
    return pose.cells(codes, groups)


def _measure_block(X, cell, w, coef, intercept, n_cells, threshold):
    """Per cell, the weight of the block's rows, of their sigmoid scores and of their
    positive predictions (``score > threshold``); the scores' smallest and largest."""
    z = np.asarray(X, dtype=np.float64) @ coef + intercept
    return (
        np.bincount(cell, weights=w, minlength=n_cells),
        np.bincount(cell, weights=w * expit(z), minlength=n_cells),
        np.bincount(cell, weights=w * (z > threshold), minlength=n_cells),
        np.array([z.min(initial=np.inf), -z.max(initial=-np.inf)]),
    )


def _measure(est, state, X, y, g, w, budget, computes):
    """The rates of the published model on every training row (one pass), and with a third
    pass Neyman-Pearson's threshold on the training negatives; the passes spent."""
    pose = state.pose
    labels = getattr(pose, "labels", None)
    codec = None
    if labels is not None:
        codec = est._group_codec()  # (the estimator's own reading: no import of fair)
    meta = np.zeros(0, np.intp)
    if labels is None:
        cell = y.map_blocks(_cells_block, None, state.classes, codec, labels, pose,
                            dtype=np.intp, meta=meta)  # fmt: skip
    else:
        cell = da.map_blocks(_cells_block, y, g, state.classes, codec, labels, pose,
                             dtype=np.intp, meta=meta)  # fmt: skip
    # Each row's weight as the stream weighs it: its sample weight times its class weight
    # (with "balanced", of the classes' weights over all the rows, as the stream ends).
    factor = _class_factor(est, state)[np.arange(pose.n_cells) % len(state.classes)]
    row_w = da.map_blocks(lambda c, w: w * factor[c], cell, w, dtype=np.float64)
    rows = DaskRows(X, cell, row_w)
    coef, intercept = est.coef_[0].copy(), float(est.intercept_[0])
    threshold = float(getattr(est, "threshold_", 0.0) or 0.0)
    parts = rows.blockwise(_measure_block, coef, intercept, pose.n_cells, threshold)
    computes[0] += 1
    t, soft, hard = (np.sum([p[i] for p in parts], axis=0) for i in range(3))
    passes = 1.0
    if budget >= 3 and state.kind.startswith("np") and state.steer:
        extremes = np.min([p[3] for p in parts], axis=0)
        negatives = np.arange(pose.n_cells) == 0
        est.threshold_, hard = _rate_threshold(
            rows, coef, intercept, negatives, est.max_fpr_, (soft, hard, extremes), passes=1
        )
        computes[0] += 1
        passes += 1.0
    est.constraint_values_ = cell_rates(est, state, t, soft)[0]
    est.hard_constraint_values_, est.bound_met_, fpr = cell_rates(est, state, t, hard)
    if fpr is not None:
        est.train_fpr_ = fpr
    return passes


def _class_factor(est, state):
    """Each class's weight per unit of sample weight, from the stream's final totals."""
    class_weight = getattr(est, "class_weight", None)
    totals = state.class_totals
    if class_weight is None:
        return np.ones(len(totals))
    if isinstance(class_weight, str):
        with np.errstate(divide="ignore"):
            return np.where(totals > 0, totals.sum() / (len(totals) * totals), 0.0)
    return np.array([float(class_weight.get(c, 1.0)) for c in state.classes.tolist()])


def _warn(est, measured):
    """What the stream reached, on which rows it was measured, and the remedy."""
    values = est.hard_constraint_values_ if measured else est.recent_constraint_values_
    where = (
        "on the training rows (measured in one more pass)"
        if measured
        else f"on the stream's last {est.n_samples_recent_} rows, each block predicted by "
        "the model that learnt it, within their sampling margin (recent_margin_; "
        "max_passes >= 2 measures them on the training rows)"
    )
    rounded = ", ".join(f"{v:.4g}" for v in np.atleast_1d(values)) or "none"
    verdict = "met" if est.bound_met_ else "not met"
    warn(
        f"max_passes={est.max_passes:g} on dask input: X was streamed once "
        f"({est.n_samples_seen_} rows, {est.n_data_passes_:g} data passes, "
        f"{est.n_computes_} computes), a stream's estimate, not a solve to tol. The bound is "
        f"{verdict} {where}: {rounded}. A full fit needs more passes: raise max_passes above "
        f"{STREAM_PASSES} (default 300).",
        ConvergenceWarning,
    )
