"""The preprocessing of the Stoc-iALM paper's Neyman-Pearson experiments."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_array

__all__ = ["neyman_pearson_preprocess"]


def neyman_pearson_preprocess(X: ArrayLike) -> np.ndarray:
    """Standardise each feature, then scale each sample to unit Euclidean norm.

    This is the preprocessing of the paper's Neyman-Pearson experiments (after Yan et al.,
    2022): each column is shifted and scaled to mean 0 and variance 1 using the statistics
    of ``X`` itself, then each row is divided by its 2-norm.

    A constant column becomes 0 instead of NaN, and a row that is 0 after standardisation
    (every entry equal to its column mean) stays 0.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Dense data; sparse input is rejected because centring would densify it.

    Returns
    -------
    X_new : ndarray of shape (n_samples, n_features)
        Preprocessed float64 copy of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.datasets import neyman_pearson_preprocess
    >>> X = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])
    >>> neyman_pearson_preprocess(X)
    array([[-1.,  0.],
           [ 0.,  0.],
           [ 1.,  0.]])
    """
    X = check_array(X, dtype=np.float64, copy=True, input_name="X")
    # Constant columns are found exactly and zeroed: their computed standard deviation is
    # rounding noise (1e-17 for a column of 0.1), and dividing by it would blow the noise
    # of the centred values up to O(1) entries.
    constant = np.ptp(X, axis=0) == 0
    std = X.std(axis=0)
    std[constant] = 1.0
    X -= X.mean(axis=0)
    X[:, constant] = 0.0
    X /= std
    norms = np.linalg.norm(X, axis=1)
    norms[norms == 0] = 1.0
    X /= norms[:, None]
    return X
