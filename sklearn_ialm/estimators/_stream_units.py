"""A stream's guards on batches unlike the rows before them.

* **Units.** ``partial_fit`` learns in the first rows' standard units, and a batch whose
  values fall far outside them (a glitch, or a column whose units changed) is clipped for
  learning and its columns named, once each, in a warning.
* **Mix.** ``partial_fit`` learns expectations over rows drawn alike; a batch whose mix of
  groups and classes is far from the rows' before it (a stream sorted by group or by label)
  is named once in a warning (:func:`warn_mix`).

On main 6bdc02c one value of 1e6 in a column of spread 1 (PF31) took the fair stream to
accuracy 0.373 with ``bound_met_=True``, and a column rescaled by 1e6 or 1e-6 from the 4th
batch (PF29b, PF30) ended at a fresh gap of 0.497 or lost the column, silently.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._warnings import warn

__all__ = ["OUTLIER_UNITS", "clipped", "warn_mix"]

#: Values more than this many standard units (the first rows' spread, about the first rows'
#: mean) from the first rows' are clipped there for learning, and the column is named in a
#: warning; a column whose spread in a batch is under 1 / OUTLIER_UNITS of the first rows'
#: is named too (its units changed: the model reads it as a near-constant).
OUTLIER_UNITS = 50.0


def clipped(X, units, warned: set):
    """``X`` with each value more than :data:`OUTLIER_UNITS` of the first rows' spread from
    their mean clipped there (for learning only), and a warning naming each column that has
    such values or a spread far under the first rows' (once a column: ``warned``, the
    columns named so far, is updated). ``units``: the first rows' ``(mean, spread)``."""
    mean, spread = units
    checked = spread > 0  # a column constant in the first rows has no units to keep
    low = np.where(checked, mean - OUTLIER_UNITS * spread, -np.inf)
    high = np.where(checked, mean + OUTLIER_UNITS * spread, np.inf)
    if sp.issparse(X):
        X = X.copy()
        cols = X.indices
        outside = (X.data < low[cols]) | (X.data > high[cols])
        far = np.unique(cols[outside])
        X.data = np.clip(X.data, low[cols], high[cols])
        narrow = np.zeros(0, dtype=np.intp)  # (the spread of a CSR batch is not read)
    else:
        X = np.asarray(X, dtype=float)
        far = np.flatnonzero(np.any(np.less(X, low) | np.greater(X, high), axis=0))
        std = X.std(axis=0) if len(X) > 1 else np.full(X.shape[1], np.inf)
        narrow = np.flatnonzero(checked & (std * OUTLIER_UNITS**2 < spread))
        if len(far):
            X = np.clip(X, low, high)
    _warn_columns(
        warned,
        far,
        f"values more than {OUTLIER_UNITS:g} standard units from the first rows'",
        "the stream learns from them clipped to that range",
    )
    _warn_columns(
        warned,
        narrow,
        f"a spread under 1/{OUTLIER_UNITS**2:g} of the first rows'",
        "the model reads such a column as a near-constant",
    )
    return X


def _warn_columns(warned, columns, what, effect):
    new = [int(j) for j in columns if int(j) not in warned]
    if not new:
        return
    warned.update(new)
    warn(
        f"partial_fit: column(s) {new} of this batch have {what} (a unit change or a "
        f"glitch?): {effect}, and the model predicts in the first rows' units. Pass every "
        "batch in the same units, or start a new stream (fit, or a new estimator) in the "
        "new ones.",
        UserWarning,
    )


def warn_mix(counts, before, n_before, name):
    """Warn, and return True, when a batch's cells ``counts`` hold far more of a cell than
    the ``n_before`` rows before it (``before``: their counts) would draw: more than 1.5
    times as many plus five standard deviations and 20 rows, a bar a shuffled stream does
    not reach. One pass learns expectations over rows drawn alike; sorted by group, a
    stream posed the constraints on one group's pieces, and sorted by label (negatives
    first), it ended at the constant model (accuracy 0.70 against fit's 0.75), silently.
    ``name(cell)`` says what a cell is."""
    if n_before < 1000:
        return False
    n = counts.sum()
    expected = n * before / n_before
    spread = np.sqrt(expected * (1.0 - before / n_before))
    far = np.flatnonzero(counts > 1.5 * expected + 5.0 * spread + 20.0)
    if not len(far):
        return False
    c = int(far[np.argmax(counts[far] - expected[far])])
    warn(
        f"partial_fit: this batch is unlike the rows before it: {name(c)} is "
        f"{counts[c] / n:.0%} of its {int(n)} rows, against {before[c] / n_before:.1%} of "
        f"the {int(n_before)} rows seen. One pass learns from rows drawn alike: on a stream "
        "ordered by group or by label the model, its bound and bound_met_ may not carry to "
        "new rows. Shuffle the rows before streaming them, or fit on them.",
        UserWarning,
    )
    return True
