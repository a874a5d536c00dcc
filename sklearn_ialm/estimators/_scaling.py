"""The solver's coordinates: the features in standard units, without copying ``X``.

The estimators' problems are posed on the data as given; the solver works on the weights of
standardised features (each column divided by its spread, centred where its mean exceeds it),
which makes ``tol`` and the penalty mean the same whatever the units of ``X``. The column
moments are computed here for in-memory data; the Dask fit computes them on its workers
(:meth:`~sklearn_ialm.problems._dask_rows.DaskLinearProblem.column_moments`) and shares
:func:`_feature_scaling`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import safe_sparse_dot

from ..problems import LinearProblem
from ..problems._numeric import ROUNDING_SPREAD, check_not_subnormal
from ..solver.prox import Ridge

__all__ = ["DEFERRED_SCALING"]

#: What the concrete estimators pass to their problem builders: the features are put in
#: standard units afterwards (:func:`_standardised`), so the builder's own smoothness bound
#: would be computed for nothing (and a data-derived scale can overflow on huge features).
DEFERRED_SCALING = dict(feature_scale=1.0, smoothness=(1.0, 1.0))

# Entries per block when the column moments are computed: a few temporaries of this many
# floats (512 KiB each), never a copy of X.
_BLOCK_ENTRIES = 1 << 16


def _column_moments(X, weights) -> tuple[np.ndarray, np.ndarray]:
    """Weighted ``(mean, std)`` of the columns of ``X`` under row ``weights`` (summing to 1).

    Columns are first divided by their largest magnitude (no overflow on ``X * 1e200``) and
    the variance is a second pass around the mean (no cancellation on a column of mean
    ``1e7`` and spread 1), corrected by the mean deviation of that pass (the corrected
    two-pass formula of Chan, Golub and LeVeque): the rounding of the mean, which grows with
    the number of rows, then leaves no spread in a constant column (0.3 in each of 2000 rows
    had std 2e-15, which standardising blew up into a feature of unit spread). A spread
    within ``ROUNDING_SPREAD`` (:mod:`sklearn_ialm.problems._numeric`) of the column's
    largest magnitude is the rounding of the values themselves and counts as 0. CSR input
    is read by blocks of rows, never densified; dense and CSR copies of the same data give
    the same moments up to rounding. C-ordered float64 data is read twice by compiled loops
    where numba is present (the largest magnitudes with the weighted sums, then the
    deviations; 1e6 x 20: 20 ms, where numpy's three reads took 85), else by numpy's blocks.

    Raises a ValueError for a column whose values are all subnormal: a linear model on it
    would need coefficients beyond the float64 range.
    """
    total = float(np.sum(weights))
    # Imported here: numba, which the compiled moments need, loads at the first fit, not
    # with the package.
    from ..problems import _kernels

    compiled = None if sp.issparse(X) else _kernels.moment_sums(X, weights)
    absmax = _column_absmax(X) if compiled is None else compiled[0]
    check_not_subnormal(absmax)
    unit = np.where(absmax > 0, absmax, 1.0)
    if compiled is None:
        mean = np.asarray(safe_sparse_dot(weights, X)).ravel() / (unit * total)
        first, second = _deviation_sums(X, weights, unit, mean, total)
    else:
        # (A product by the inverse of the unit: a column's values all scaled by one
        # rounding, as a division scales them, and |x / unit| <= 1 either way.)
        mean = compiled[1] / (unit * total)
        first, second = _kernels.deviation_sums(X, weights, 1.0 / unit, mean)
    shift = first / total  # the mean deviation: the rounding error of the mean
    std = np.sqrt(np.clip(second / total - shift * shift, 0.0, None))
    std[std <= ROUNDING_SPREAD] = 0.0
    return (mean + shift) * unit, std * unit


def _block_rows(X) -> int:
    """Rows per block of :func:`_column_moments`' numpy reads: a few temporaries of
    ``_BLOCK_ENTRIES`` floats, never a copy of ``X``."""
    per_row = X.nnz / max(X.shape[0], 1) if sp.issparse(X) else X.shape[1]
    return max(1, int(_BLOCK_ENTRIES / max(per_row, 1)))


def _column_absmax(X) -> np.ndarray:
    """The largest magnitude of each column of ``X``, by blocks of rows (CSR: slices of its
    arrays, not sub-matrices, 0.1 s of 0.13 s on 2e5 x 1e4; dense: through one buffer), or
    for float64 CSR with numba in one compiled read (``_kernels.csr_absmax``)."""
    from ..problems import _kernels

    compiled = _kernels.csr_absmax(X) if sp.issparse(X) else None
    if compiled is not None:
        return compiled
    n, d = X.shape
    step = _block_rows(X)
    buf = None if sp.issparse(X) else np.empty((min(step, n), d))
    absmax = np.zeros(d)
    for start in range(0, n, step):
        if sp.issparse(X):
            lo, hi = X.indptr[start], X.indptr[min(start + step, n)]
            np.maximum.at(absmax, X.indices[lo:hi], np.abs(X.data[lo:hi]))
        else:
            block = X[start : start + step]
            out = np.abs(block, out=buf[: len(block)])
            np.maximum(absmax, out.max(axis=0), out=absmax)
    return absmax


def _deviation_sums(X, weights, unit, mean, total):
    """The weighted sums of ``(x / unit - mean)`` and of its square over each column of
    ``X``, by blocks of rows (see :func:`_column_absmax`; CSR by the compiled
    ``_kernels.csr_deviation_sums`` where it applies: the same blocks and bits, 0.2 s where
    numpy's took 0.7 on 1e6 x 1e4, 20 non-zeros a row)."""
    from ..problems import _kernels

    n, d = X.shape
    sparse = sp.issparse(X)
    step = _block_rows(X)
    buf = None if sparse else np.empty((min(step, n), d))
    first = np.zeros(d)
    second = np.zeros(d)
    nz_weight = np.zeros(d)  # total weight of the stored entries of each column
    nz_count = np.zeros(d, dtype=np.int64)
    compiled = _kernels.csr_deviation_sums(X, weights, unit, mean, step) if sparse else None
    if compiled is not None:
        first, second, nz_weight, nz_count = compiled
    for start in range(0, n if compiled is None else 0, step):
        w = weights[start : start + step]
        if sparse:
            stop = min(start + step, n)
            lo, hi = X.indptr[start], X.indptr[stop]
            indices = X.indices[lo:hi]
            row_w = np.repeat(w, np.diff(X.indptr[start : stop + 1]))
            dev = X.data[lo:hi] / unit[indices] - mean[indices]
            first += np.bincount(indices, weights=row_w * dev, minlength=d)
            second += np.bincount(indices, weights=row_w * dev * dev, minlength=d)
            nz_weight += np.bincount(indices, weights=row_w, minlength=d)
            nz_count += np.bincount(indices, minlength=d)
        else:
            block = X[start : start + step]
            dev = np.divide(block, unit, out=buf[: len(block)])
            dev -= mean
            first += w @ dev
            second += w @ np.multiply(dev, dev, out=dev)
    if sparse:
        # Implicit zeros deviate from the mean by -mean. A column stored in every row has
        # none: its total - nz_weight is rounding, which would read as a spread.
        implicit = np.where(nz_count < n, np.clip(total - nz_weight, 0.0, None), 0.0)
        first -= implicit * mean
        second += implicit * mean * mean
    return first, second


def _feature_scaling(X, weights, fit_intercept: bool, moments=None):
    """``(scale, center, live)``: the solver's coordinates are the weights of standardised
    features; ``live`` marks the columns that can move the score (not zero, nor constant
    beside an intercept).

    A column whose mean exceeds its spread (an offset such as ``x * 1e6 + 1e7``) is centred
    (with an intercept) and divided by its standard deviation: left uncentred it would be
    nearly collinear with the intercept. Other columns are divided by their root mean square
    and not centred: sparse columns stay sparse in effect (centring a CSR column acts on the
    parameters and costs nothing, but it made every minibatch gradient dense and the fit
    noisier: 70000 x 10000 CSR rows with 20 non-zeros each, 100 passes, test AUC 0.56
    centred vs 0.75 not; ``benchmarks/robust.py`` of 10462b4^). The rule reads the moments only, so
    dense and CSR copies of the same data get the same coordinates and the same model. A
    column of zero spread gets scale 1 (centred, its gradient is zero). ``moments``: the
    ``(mean, std)`` of the columns if already computed (e.g. on a Dask cluster).
    """
    mean, std = _column_moments(X, weights) if moments is None else moments
    center = fit_intercept & (np.abs(mean) > std)
    scale = np.where(center, std, np.hypot(mean, std))
    live = (scale > 0) & np.isfinite(scale)
    scale = np.where(live, scale, 1.0)
    return scale, (np.where(center, mean, 0.0) if fit_intercept else None), live


def _standardised(problem, X, sample_weight, C, moments=None):
    """The estimator's problem in standard units, with the L2 penalty of ``C``.

    The same model and data as ``problem``; only the solver's coordinates change (see
    :class:`~sklearn_ialm.problems.LinearProblem`'s ``feature_scale``): each weight is that of
    a feature scaled by :func:`_feature_scaling` (centred and divided by its standard
    deviation where its mean exceeds its spread, as a ``StandardScaler`` would; else divided
    by its root mean square), without copying ``X``. The penalty
    ``||w||^2 / (2 C sum(sample_weight))`` on those weights (intercept free) is
    ``LogisticRegression(C)``'s on the columns so scaled. ``moments``: the columns'
    ``(mean, std)`` under the normalised ``sample_weight``, if already computed.
    """
    if not isinstance(problem, LinearProblem):
        return problem
    weights = sample_weight / sample_weight.sum()
    scale, mean, live = _feature_scaling(X, weights, problem.fit_intercept, moments)
    del weights  # an n-vector: not kept through the smoothness sweep below
    # Standardised columns divided by sqrt(d) more: rows of unit root-mean-square norm, the
    # paper's scale. A gradient's norm in these units is the root mean square of its
    # standardised coordinates, so tol means the same for 1 feature or 10000 (in plain
    # standard units a 100-feature fit was held to a 10 times tighter tol). Columns that
    # cannot move the score (zero, or constant beside the intercept) do not count: they
    # leave the model, and its units, as they are without them.
    d = problem.n_features
    scale = scale * np.sqrt(max(1, int(live.sum())))
    h = None
    if C is not None and np.isfinite(C):
        rows = problem.A_obj.rows
        total = float(sample_weight.sum() if rows is None else sample_weight[rows].sum())
        mask = np.r_[np.ones(d, bool), np.zeros(int(problem.fit_intercept), bool)]
        # ||standardised weights||^2 = ||x||^2 / d_live in the solver's coordinates x.
        # A strength beyond the float range (C * sum(sample_weight) below 1e-308) pins the
        # weights at 0 as surely as the largest finite one.
        with np.errstate(over="ignore", divide="ignore"):
            strength = 1.0 / (C * total * max(1, int(live.sum())))
        h = Ridge(min(strength, np.finfo(np.float64).max), mask=mask)
    return LinearProblem(
        problem.A_obj.A,
        problem.b,
        problem.loss,
        problem.A_con.A,
        problem.W,
        problem.offset,
        objective_weights=problem.u,
        inequality=problem.inequality,
        fit_intercept=problem.fit_intercept,
        h=h,
        constraint_names=problem.constraint_names,
        feature_scale=scale,
        feature_center=mean,
        rows_objective=problem.A_obj.rows,
        rows_constraint=problem.A_con.rows,
        levels=problem.levels,
        constraint_strata=problem.constraint_strata,
        dead_features=~live,
        weight_groups=problem.weight_groups,
    )


def training_moments(X, sample_weight) -> tuple[np.ndarray, np.ndarray]:
    """The training columns' weighted ``(mean, std)`` (:func:`_column_moments` under the
    normalised ``sample_weight``), which the fit keeps (``_feature_moments``) to tell when
    rows given to it later are far from the rows it was fitted on."""
    return _column_moments(X, sample_weight / sample_weight.sum())


#: A column's mean is far from its training mean when it is this many training standard
#: deviations off (raw rows given to a step fitted on standardised ones: about 3), and
#: beyond the sampling noise of the rows' mean (``5 / sqrt(n)`` of the larger of the two
#: spreads); its spread is far when this many times larger or smaller.
FAR_SHIFT, FAR_SCALE = 2.0, 3.0

#: Fewer rows than this are too few to tell (a rare column's mean in 10 rows is noise).
FAR_MIN_ROWS = 20


def far_columns(moments, X) -> list[tuple[int, float, float]]:
    """The columns of rows ``X`` far from the training ``moments`` ``(mean, std)``:
    ``(column, shift, scale)`` with ``shift`` the difference of the means in training
    standard deviations and ``scale`` the ratio of the spreads; empty when none is, or
    with fewer than ``FAR_MIN_ROWS`` rows.

    A column whose mean is far counts on its own: the noise allowance reads the larger
    spread, so that a rare column (a word count, a one-hot level) in a few rows is not far.
    A spread alone is noisier (a rare column's varies from one sample to another by more
    than its ratio says), so spreads count when they are far in at least half of the
    columns, as they are in rows given in other units (raw rows given to the last step of
    a Pipeline). Columns constant in training (which the model does not use) are left out.
    Held-out rows of a random split are not far (spambase, a9a: 20 rows to all of them,
    ``tests/test_bound_report.py``).
    """
    mean, std = moments
    n = X.shape[0]
    used = std > 0
    if n < FAR_MIN_ROWS or not used.any():
        return []
    m, s = _column_moments(X, np.full(n, 1.0 / n))
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(used, (m - mean) / std, 0.0)
        scale = np.where(used, s / std, 1.0)
    delta = np.abs(m - mean)
    far_mean = used & (delta > FAR_SHIFT * std) & (delta > 5.0 * np.maximum(std, s) / np.sqrt(n))
    # (A column constant in these rows, a rare level absent from them, says nothing of
    # their units.)
    far_scale = used & (s > 0) & ((scale > FAR_SCALE) | (scale < 1.0 / FAR_SCALE))
    if far_scale.sum() < 0.5 * used.sum():
        far_scale[:] = False
    far = np.flatnonzero(far_mean | far_scale)
    return [(int(j), float(shift[j]), float(scale[j])) for j in far]
