"""The estimators on dask collections: inputs as row-chunked arrays, blockwise predictions.

Imported only when an input is a dask collection (see ``_base.is_dask_collection``), so that
numpy and scipy.sparse users never import dask.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np


def as_rows(X, *, name: str = "X"):
    """``X`` as a dask array chunked by rows only (all columns in each block).

    A DataFrame or Series becomes an array whose partition lengths are known (dask reads them
    once: row indices need them). A 1-D input stays 1-D.
    """
    if hasattr(X, "to_dask_array"):
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"{name} must be a dask array, DataFrame or Series, got {type(X)}.")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def like_rows(value, X, *, name: str):
    """A per-row ``value`` (dask or in memory) as a 1-D dask array chunked like ``X``."""
    if dask.is_dask_collection(value):
        value = as_rows(value, name=name)
    else:
        value = da.from_array(np.asarray(value), chunks=(X.chunks[0],))
    if value.ndim != 1 or value.shape[0] != X.shape[0]:
        raise ValueError(
            f"{name} must have shape ({X.shape[0]},) (one value per row of X), got "
            f"{value.shape}."
        )
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
    """``estimator._score`` of every block of ``X``: a dask array of shape (n_samples,)."""
    X = check_features(estimator, X)
    coef, intercept = estimator.coef_[0].copy(), float(estimator.intercept_[0])

    def score(block):
        # The in-memory formula (float64 products), block by block: the same values as
        # decision_function on the computed array.
        return np.asarray(block, dtype=np.float64) @ coef + intercept

    return X.map_blocks(score, drop_axis=1, dtype=np.float64)
