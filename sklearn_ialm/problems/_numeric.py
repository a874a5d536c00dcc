"""Numeric tolerances and checks shared by the problems and the layers above them.

They live in the lowest layer that uses them: the rows of a problem on a Dask cluster
(:mod:`._dask_rows`) apply them as the estimators' in-memory code does, and both must agree
to the bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BOUND_EPS", "ROUNDING_SPREAD", "SAMPLE_SEED", "check_not_subnormal"]

#: A hard value this close to 0 is on the bound: a rate that equals its bound exactly comes
#: out of floating-point sums as 1e-17 or so.
BOUND_EPS = 1e-12

#: A column's spread within this share of its largest magnitude (2.3e-13, a thousand units in
#: the last place) is what rounding leaves in values that are equal (0.1 + 0.2 beside 0.3, a
#: mean computed in another order): the column is constant.
ROUNDING_SPREAD = 1024 * np.finfo(np.float64).eps

#: The seed of the rows a problem samples for itself (the smoothness bound's Gram rows, the
#: finish's Hessian rows): fixed, so that a fit is the same every time, and not 0, the seed
#: users' own data most often come from. With 0, ``default_rng(0).random(n) < 0.1`` drew
#: exactly rows where a group made as ``default_rng(0).random(n) < 0.3`` was 1: the Newton
#: finish's Hessian saw that group only, and ``NeymanPearsonClassifier()`` on 1e5 x 20 rows
#: spent 300 passes, not converged.
SAMPLE_SEED = 0x5EED_1A1


def check_not_subnormal(absmax: np.ndarray) -> None:
    """A ValueError naming the columns of X whose nonzero values are all subnormal.

    Parameters
    ----------
    absmax : ndarray of shape (n_features,)
        The largest magnitude of each column.
    """
    tiny = np.finfo(np.float64).tiny
    bad = np.flatnonzero((absmax > 0) & (absmax < tiny))
    if bad.size:
        shown = bad[:10].tolist() + (["..."] if bad.size > 10 else [])
        raise ValueError(
            f"X has {bad.size} column(s) whose values are all subnormal (largest magnitude "
            f"{absmax[bad].max():.3g}, below the smallest normal float64 {tiny:.3g}; columns "
            f"{shown}): a linear model on them needs coefficients beyond the float64 range, "
            "and the values have lost precision. Rescale X first (e.g. multiply it by a "
            "power of ten, or put a StandardScaler before this estimator)."
        )
