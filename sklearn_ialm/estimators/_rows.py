"""Pairing the per-row inputs (``y``, ``sample_weight``, groups) with the rows of ``X``.

pandas objects carry row labels; numpy arrays and sparse matrices do not. Where ``X`` and an
input both have an index, their rows are paired by label: an input whose index holds the same
labels in another order is put in the order of ``X``, and one whose labels differ is refused
(pairing it by position would silently mix rows). Where ``X`` has no index, rows can only be
paired by position: a pandas input whose index is not in increasing order (a shuffled or
reordered Series, e.g. one split by ``train_test_split`` apart from ``X``) gets a warning that
says so. An index in increasing order (``0..n-1``, or the rows kept by a cross-validation
fold or a boolean filter) is taken as the rows of ``X`` in their order.

Dask collections are left to the Dask fit, which pairs its partitions itself.
"""

from __future__ import annotations

from .._warnings import warn
from ._base import is_dask_collection

__all__ = ["align_rows"]


def _index(value):
    """The pandas index of ``value``, or None (a list has an ``index`` method, not an index:
    only pandas-like indexes, which have ``equals``, count)."""
    index = getattr(value, "index", None)
    return index if hasattr(index, "equals") else None


def _aligned(x_index, name, value):
    """``value`` in the order of ``x_index``, or a ValueError naming ``name``."""
    v_index = value.index
    if x_index.equals(v_index):
        return value
    if not (x_index.is_unique and v_index.is_unique):
        why = "one of the indexes has duplicate labels, so rows cannot be paired by label"
    else:
        missing, extra = x_index.difference(v_index), v_index.difference(x_index)
        if not len(missing) and not len(extra):
            return value.reindex(x_index)  # the same rows in another order
        why = (
            f"{len(missing)} label(s) of X's index are not in it (e.g. {list(missing[:3])}) "
            f"and {len(extra)} of its labels are not in X's (e.g. {list(extra[:3])})"
        )
    raise ValueError(
        f"{name} has a pandas index that differs from the index of X: {why}. Rows are paired "
        f"by label when X and {name} both have an index; select the rows of X (e.g. "
        f"{name}.loc[X.index]), or drop both indexes (reset_index(drop=True), or pass "
        "numpy arrays) to pair them by position."
    )


def align_rows(X, **named):
    """The per-row inputs ``named`` (``name=value``) paired with the rows of ``X``.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame
        The rows.
    **named : dict
        The per-row inputs by parameter name (None and non-pandas values pass as they are).

    Returns
    -------
    list
        The values in the order of ``named``: a pandas value reindexed to ``X``'s index
        where both have the same labels in another order, else as given.

    Raises
    ------
    ValueError
        Naming the parameter whose index holds other labels than ``X``'s.

    Warns
    -----
    UserWarning
        When ``X`` has no index and a pandas input's index is not in increasing order: its
        rows are paired with those of ``X`` by position.
    """
    values = list(named.values())
    if is_dask_collection(X) or any(is_dask_collection(v) for v in values):
        return values
    x_index = _index(X)
    out, by_position = [], []
    for name, value in named.items():
        v_index = _index(value)
        if v_index is None:
            out.append(value)
        elif x_index is not None:
            out.append(_aligned(x_index, name, value))
        else:
            if not (v_index.is_monotonic_increasing and v_index.is_unique):
                by_position.append(name)
            out.append(value)
    if by_position:
        names = " and ".join(by_position)
        warn(
            f"{names} {'is a pandas object' if len(by_position) == 1 else 'are pandas objects'}"
            f" whose index is not in increasing order, but X has no index ({type(X).__name__}):"
            f" rows are paired by position, not by label. If the rows of {names} are in "
            "another order than those of X, the results pair the wrong rows. Pass X as a "
            "DataFrame with the same index to pair them by label, or pass "
            f"{by_position[0]}.to_numpy() to confirm the pairing by position.",
            UserWarning,
        )
    return out
