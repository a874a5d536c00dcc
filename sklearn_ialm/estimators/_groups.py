"""The groups of a fairness fit: per-row labels (one column, or the intersections of several)
encoded as codes, column names of a DataFrame ``X`` read as its columns, and the checks on
their sizes. The estimator, its Dask and streaming fits and the bound report read groups
through these functions alone."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _num_samples, check_array

from .._warnings import warn
from ..problems._group_codes import unique_codes

__all__ = ["MIN_GROUP_SIZE", "check_group_counts", "encode_groups"]


def _python_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def _group_key(label):
    """A hashable key equal for a label and its numpy / list spellings."""
    if isinstance(label, (tuple, list, np.ndarray)):
        return tuple(_python_scalar(v) for v in label)
    return _python_scalar(label)


def encode_groups(sensitive_features, n_samples: int):
    """``(codes, labels)``: ``labels[codes[i]]`` is the group of row ``i``.

    A 1-D input (array, list, Series, one-column frame) holds one label per row. With several
    columns a group is an intersection: the tuple of a row's values, one per column.
    """
    sf = check_array(
        sensitive_features,
        ensure_2d=False,
        allow_nd=True,  # refused below, with the parameter's name
        dtype=None,
        input_name="sensitive_features",
    )
    if sf.shape[0] != n_samples:
        raise ValueError(
            f"sensitive_features has {sf.shape[0]} rows but X has {n_samples}: it must give "
            "one group label per row of X."
        )
    if sf.ndim > 2:
        raise ValueError(f"sensitive_features must be 1-D or 2-D, got {sf.ndim} dimensions.")
    if sf.ndim == 2 and sf.shape[1] == 1:
        sf = sf[:, 0]
    try:
        if sf.ndim == 1:
            labels, codes = _column_codes(sf)
            return codes, labels
        per_column = [_column_codes(sf[:, j]) for j in range(sf.shape[1])]
    except TypeError as exc:
        raise ValueError(
            "sensitive_features labels must be comparable with each other (e.g. all strings "
            f"or all numbers within a column): {exc}"
        ) from exc
    sizes = [len(col_labels) for col_labels, _ in per_column]
    if float(np.prod(sizes, dtype=float)) < 2.0**62:
        # The columns' codes as the digits of one integer (the first column the highest):
        # its order is the combinations' lexicographic order, which np.unique(axis=0) sorts
        # the rows into (that sort of Adult's 32561 x 2 codes: 9 ms).
        key = np.zeros(len(sf), dtype=np.int64)
        for size, (_, code) in zip(sizes, per_column, strict=True):
            key = key * size + code
        present, codes = unique_codes(key)
        combos = np.empty((len(present), len(sizes)), dtype=np.int64)
        for j in range(len(sizes) - 1, -1, -1):
            present, combos[:, j] = np.divmod(present, sizes[j])
    else:
        joint = np.column_stack([code.reshape(-1) for _, code in per_column])
        combos, codes = np.unique(joint, axis=0, return_inverse=True)
    labels = np.empty(len(combos), dtype=object)
    for i, combo in enumerate(combos):
        columns = zip(per_column, combo, strict=True)
        labels[i] = tuple(_python_scalar(col_labels[c]) for (col_labels, _), c in columns)
    return codes.reshape(-1), labels


def _column_codes(column):
    """``(labels, codes)`` of one column of labels, as ``np.unique(column,
    return_inverse=True)``; a ValueError where a label is None.

    Numbers go to :func:`~sklearn_ialm.problems._group_codes.unique_codes`. Other labels are
    hashed, and only the distinct ones sorted: ``np.unique``'s sort of Adult's 32561 race
    strings took 20 to 70 ms, a third to all of ``LogisticRegression``'s fit there.
    Labels that cannot be hashed are sorted as they are.
    """
    if column.dtype != object:
        return unique_codes(column)
    index = {}
    try:
        first = np.fromiter(
            (index.setdefault(v, len(index)) for v in column), dtype=np.intp, count=len(column)
        )
    except TypeError:
        index, first = None, None
    if any(v is None for v in (column if index is None else index)):
        raise ValueError("sensitive_features contains None (a missing group label).")
    if index is None:
        labels, codes = np.unique(column, return_inverse=True)
        return labels, codes.reshape(-1)
    distinct = np.empty(len(index), dtype=object)
    distinct[:] = list(index)
    labels, order = np.unique(distinct, return_inverse=True)
    return labels, order.reshape(-1)[first]


def _columns_of_x(X, sensitive_features):
    """``(labels, names)``: ``sensitive_features`` as per-row labels, and the column names of
    ``X`` it gave (None when it gave the labels themselves). A column name (or a list of column
    names) of a DataFrame ``X`` stands for that column (those columns) of ``X``.

    A single value is refused with a message that says what is expected. A list is read as
    column names when it is not one label per row and holds a column name of ``X``.
    """
    if sensitive_features is None:
        return None, None
    single = np.ndim(sensitive_features) == 0
    columns = getattr(X, "columns", None)
    if single and columns is None:
        raise ValueError(
            f"sensitive_features={sensitive_features!r} is a single value: pass one group "
            "label per row of X (an array of n_samples), or a column name of X when X is a "
            f"pandas DataFrame (X is a {type(X).__name__})."
        )
    if single:
        names = [sensitive_features]
    elif (
        columns is not None
        and isinstance(sensitive_features, list | tuple)
        and len(sensitive_features) != _num_samples(X)
    ):
        names = list(sensitive_features)
    else:
        return sensitive_features, None
    missing = [name for name in names if not _is_column(columns, name)]
    if len(missing) == len(names) and not single:
        # Per-row labels (of the wrong length: encode_groups says).
        return sensitive_features, None
    if missing:
        shown = list(columns[:20]) + (["..."] if len(columns) > 20 else [])
        raise ValueError(
            f"sensitive_features={sensitive_features!r}: {missing!r} is not a column of X "
            f"(its columns: {shown}). Pass a column name of X, or one group label per row."
        )
    return (X[names[0]] if single else X[names]), names


def _holds_text(column) -> bool:
    """Whether a column of a DataFrame holds strings or categories (numpy kinds O, U, S; a
    pandas string or categorical dtype has kind O), which no linear model reads as a
    number."""
    return getattr(getattr(column, "dtype", None), "kind", None) in ("O", "U", "S")


def _without_text_groups(X, names):
    """``(X, text)``: ``X`` without the group columns ``names`` that hold text, and those
    columns' names. They are the groups only, not features: a column of strings is no
    feature without an encoding."""
    text = [name for name in names or () if _holds_text(X[name])]
    return (X.drop(columns=text) if text else X), text


def _is_column(columns, name):
    try:
        return name in columns
    except TypeError:  # an unhashable value
        return False


#: The default ``min_group_size``: a group rate estimated from fewer rows than this is
#: noise, not a fairness statement.
MIN_GROUP_SIZE = 5


def check_group_counts(
    counts, labels, n_samples: int, min_group_size: int = MIN_GROUP_SIZE, warn_excluded=True
) -> np.ndarray:
    """The codes of the groups left out of the constraints: those of fewer than
    ``min_group_size`` rows (``counts``, rows per group; the Dask fits count them in one
    pass). A continuous column (about one group per row) is refused.

    A group left out still trains the loss; its rate is bounded against no other group's.
    The one warning of the fit names those groups, their rows and the remedy
    (``warn_excluded=False``: the caller has told it, as a certified fit's inner fit).
    Every path of a fairness fit (in memory, on dask input, streamed, more than two
    classes, certified) decides through this function: one policy.
    """
    counts = np.asarray(counts)
    # (Whatever min_group_size: a measurement is no group label at any minimum.)
    rare = int(np.count_nonzero(counts < MIN_GROUP_SIZE))
    if len(labels) > 2 and (
        len(labels) > n_samples / 2 or (2 * rare > len(labels) and _fractional(labels))
    ):
        raise ValueError(
            f"sensitive_features has {len(labels)} distinct values for {n_samples} rows: it "
            f"looks continuous ({rare} values in fewer than {MIN_GROUP_SIZE} rows each). Pass "
            "group labels, e.g. bins of the column (pandas.cut)."
        )
    small = np.flatnonzero(counts < min_group_size)
    if len(small) and warn_excluded:
        warn(_excluded_text(counts, labels, small, min_group_size), UserWarning)
    return small


def _fractional(labels) -> bool:
    """Whether the labels are numbers with a fractional part: measurements, not codes (a
    group column of such values, most in a handful of rows, is a continuous column)."""
    values = np.asarray(labels)
    if values.dtype.kind != "f":
        return False
    finite = values[np.isfinite(values)]
    return bool(np.any(finite != np.round(finite)))


def _excluded_text(counts, labels, small, min_group_size):
    """The warning of a fit that leaves the groups ``small`` out of its constraints."""
    sizes = {_group_key(labels[g]): int(counts[g]) for g in small}
    shown = ", ".join(f"{g!r}: {c}" for g, c in list(sizes.items())[:10])
    shown += " ..." if len(sizes) > 10 else ""
    kept = len(counts) - len(small)
    rest = (
        f"the other {kept} groups are constrained"
        if kept >= 2
        else f"{kept} group is left, so there is nothing to constrain"
    )
    return (
        f"sensitive_features: {len(small)} group(s) have fewer than "
        f"min_group_size={min_group_size} rows ({{{shown}}} rows): a rate on so few rows "
        f"is noise, so they are left out of the fairness constraints (their rows still "
        f"train the model; excluded_groups_ names them) and {rest}. To constrain them, "
        f"merge them into larger groups, or set min_group_size={int(counts[small].min())} "
        "(a bound on their rates then holds on the training rows only)."
    )
