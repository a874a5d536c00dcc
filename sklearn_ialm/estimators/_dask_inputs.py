"""The estimators' dask inputs: row-chunked arrays, checked, and blockwise predictions.

Imported only for dask input (see :mod:`._dask`), so that numpy and scipy.sparse users never
import dask.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

#: Partitions of fewer rows than this (on average) are joined into blocks of
#: ``_BLOCK_BYTES``: each partition is a task of every pass.
_MIN_BLOCK_ROWS = 512
_BLOCK_BYTES = 16 << 20


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
