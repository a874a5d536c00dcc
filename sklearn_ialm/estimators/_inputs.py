"""Checks and conventions of the estimators' inputs, shared by every fit path (the estimators'
base, the streaming fits, the Dask fits): a module of its own, below all of them, so that
none of those paths imports another to read an input."""

from __future__ import annotations

import sys

import numpy as np

# float32 is kept as is: the solver's parameters are float64 and products upcast, so a
# float32 matrix is never copied (a large training matrix should be read, not duplicated).
_DTYPES = (np.float64, np.float32)


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a dask collection, without importing dask (nor paying for it)."""
    if "dask" not in sys.modules:
        return False  # a dask collection cannot exist before dask is imported
    import dask

    return dask.is_dask_collection(obj)


def _is_missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN
    except TypeError:  # pd.NA: its comparisons are NA, which has no truth value
        return True


def _check_labels(y) -> None:
    """A ValueError naming ``y`` for labels that are missing or of mixed types (an object
    array); scikit-learn's checks fail on them with a TypeError or "Unknown label type"."""
    if y is None:
        return  # validate_data's message
    values = np.asarray(y).ravel()  # (pandas gives NaN for pd.NA in a nullable dtype)
    if values.dtype.kind == "f":
        missing = np.flatnonzero(np.isnan(values))
    elif values.dtype == object:
        missing = np.flatnonzero([_is_missing(v) for v in values])
    else:
        return
    if missing.size:
        raise ValueError(
            f"y has no label (None, NaN or pd.NA) in {missing.size} row(s), the first at "
            f"position {missing[0]}: every row needs one. Drop those rows or fill them in."
        )
    if values.dtype != object:
        return
    kinds = {"str" if isinstance(v, str) else type(v).__name__ for v in values}
    if "str" in kinds and len(kinds) > 1:
        raise ValueError(
            f"y mixes strings with other labels ({', '.join(sorted(kinds))}): a class would "
            "have two spellings (1 and '1'). Give all labels one type, e.g. y.astype(str)."
        )


def _label(value):
    """A class label as users wrote it (``1``, not ``np.int64(1)``) for messages."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def protected_codes(protected_groups, lookup: dict, key, unknown) -> np.ndarray:
    """The codes of the groups that ``protected_groups`` names, in its order, each once:
    ``lookup`` maps a group's key (``key(label)``) to its code; ``unknown(key)`` is the
    message for a name that is not there. The batch fit and the stream share this reading."""
    chosen = []
    for label in list(protected_groups):
        k = key(label)
        if k not in lookup:
            raise ValueError(unknown(k))
        if lookup[k] not in chosen:
            chosen.append(lookup[k])
    if not chosen:
        raise ValueError(
            "protected_groups is empty; use None for the default rule, or name at least one group."
        )
    return np.array(chosen)
