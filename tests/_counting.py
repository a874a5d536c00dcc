"""Counting the rows a fit touches from outside the solver (``tests/test_counting.py``).

The data matrices are wrapped before the problem is built, so every count is taken where the
work happens, whatever the solver reports: a forward product of a whole matrix with ``k``
vectors scores every row at ``k`` points, and a block of rows sliced out of it reads those rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class Tally:
    def __init__(self):
        self.scored = 0  # rows times points of forward products of a whole matrix
        self.read = 0  # rows sliced out of a matrix


def _points(A, other):
    return A.shape[0] * (1 if np.ndim(other) == 1 else other.shape[1])


class CountedArray(np.ndarray):
    """A dense matrix that counts its forward products and the row blocks sliced from it.

    Arrays derived from it (row blocks, transposes, minibatches) carry no tally: their own
    products are not counted twice.
    """

    def __array_finalize__(self, obj):
        self.tally = None

    def __matmul__(self, other):
        if self.tally is not None:
            self.tally.scored += _points(self, other)
        return np.asarray(self) @ other

    def __getitem__(self, key):
        if self.tally is not None and isinstance(key, slice):
            self.tally.read += len(range(*key.indices(self.shape[0])))
        return np.asarray(self)[key]


class CountedCSR(sp.csr_matrix):
    """The same for CSR (minibatches read its arrays directly and are counted elsewhere)."""

    tally = None

    def __matmul__(self, other):
        if self.tally is not None:
            self.tally.scored += _points(self, other)
        return sp.csr_matrix(self) @ other

    def __getitem__(self, key):
        if self.tally is not None and isinstance(key, slice):
            self.tally.read += len(range(*key.indices(self.shape[0])))
        return sp.csr_matrix(self)[key]


def wrap(X, tally):
    A = CountedCSR(X) if sp.issparse(X) else np.ascontiguousarray(X).view(CountedArray)
    A.tally = tally
    return A
