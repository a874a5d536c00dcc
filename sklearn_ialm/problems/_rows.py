"""Row access for :class:`~.linear.LinearProblem`: minibatches, row subsets, kernel views.

The matrices are never copied: CSR input is read as given, dense and memory-mapped arrays
by row index, a row subset through its whole matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class _SparseRows:
    """Rows of a CSR matrix as flat (column, value, row) triples.

    Products with a minibatch of a few dozen rows are two ``bincount`` calls; building a
    scipy.sparse matrix per minibatch costs ten times more in object overhead.
    """

    __slots__ = ("cols", "vals", "rows", "shape")

    def __init__(self, A, idx):
        starts = A.indptr[idx]
        lens = A.indptr[idx + 1] - starts
        total = int(lens.sum())
        ends = np.cumsum(lens)
        # Positions of the selected rows' entries in A.data, without a Python loop.
        pos = np.arange(total) + np.repeat(starts - (ends - lens), lens)
        self.cols = A.indices[pos]
        self.vals = A.data[pos]
        self.rows = np.repeat(np.arange(len(idx)), lens)
        self.shape = (len(idx), A.shape[1])

    # np.bincount of no entries is an int array even with weights: a minibatch of empty rows.
    def __matmul__(self, x):
        out = np.bincount(self.rows, weights=self.vals * x[self.cols], minlength=self.shape[0])
        return out.astype(float, copy=False)

    def rmatvec(self, r):
        out = np.bincount(self.cols, weights=self.vals * r[self.rows], minlength=self.shape[1])
        return out.astype(float, copy=False)


class _Subset:
    """Rows ``rows`` of a matrix, for full-data products without copying those rows."""

    def __init__(self, A, rows):
        self.A, self.rows = A, rows
        self.shape = (len(rows), A.shape[1])

    def __matmul__(self, x):
        return (self.A @ x)[self.rows]

    def rmatvec(self, r):
        # A row named several times counts as many times (an assignment would keep one).
        if r.ndim == 1:
            return self.A.T @ np.bincount(self.rows, weights=r, minlength=self.A.shape[0])
        return self.A.T @ (self._spreader() @ r)

    def _spreader(self):
        """The ``(n_rows of A, len(rows))`` 0/1 matrix that spreads values of the subset's
        rows over ``A``'s rows (formed once: per-column ``bincount`` took 13 ms a call for
        ten columns of a9a's rows)."""
        if getattr(self, "_spread_matrix", None) is None:
            k = len(self.rows)
            self._spread_matrix = sp.csr_matrix(
                (np.ones(k), (self.rows, np.arange(k))), shape=(self.A.shape[0], k)
            )
        return self._spread_matrix


class _Rows:
    """Row access to a matrix (or to a subset of its rows) by minibatch index.

    A one-entry cache serves the two points at which PStorm reads each minibatch. The matrix
    is never copied: CSR input is used as given (other sparse formats are converted once),
    dense and memory-mapped arrays are read by row index.
    """

    def __init__(self, A, rows=None):
        if sp.issparse(A) and A.format != "csr":
            A = sp.csr_matrix(A)
        self.A = A
        self.rows = None if rows is None else np.asarray(rows, dtype=np.intp)
        self.sparse = sp.issparse(A)
        self.full = A if self.rows is None else _Subset(A, self.rows)
        self.n_rows = A.shape[0] if self.rows is None else len(self.rows)
        self._key = None
        self._block = None

    def __call__(self, idx):
        if isinstance(idx, slice):
            if idx == slice(None):
                return self.full
            idx = np.arange(self.n_rows)[idx]
        if idx is not self._key:
            self._key = idx
            rows = idx if self.rows is None else self.rows[idx]
            self._block = _SparseRows(self.A, rows) if self.sparse else self.A[rows]
        return self._block

    def in_place(self) -> bool:
        """Whether the kernel reads this data in place (float64 dense C-ordered, or CSR)."""
        A = self.A
        if self.sparse:
            return A.data.dtype == np.float64
        return isinstance(A, np.ndarray) and A.dtype == np.float64 and A.flags.c_contiguous

    def kernel_source(self, idx):
        """The compiled kernel's view of the rows ``idx`` (an int array of any shape).

        Returns ``(dense, data, indices, indptr, sparse, ridx)``: the rows are
        ``dense[ridx]`` or rows ``ridx`` of the CSR triple. In-memory float64 data (C-ordered
        dense or CSR) is read in place; any other source (another dtype or layout, or a
        chunked array that only supports row indexing) has the rows gathered first, so the
        kernel sees only what this row-index interface returns.
        """
        rows = idx if self.rows is None else self.rows[idx]
        A = self.A
        if not self.in_place():
            A = A[rows.ravel()]
            A = sp.csr_matrix(A, dtype=np.float64) if self.sparse else np.asarray(A, dtype=float)
            rows = np.arange(rows.size).reshape(rows.shape)
        if self.sparse:
            return _NO_DENSE, A.data, A.indices, A.indptr, True, rows
        return np.ascontiguousarray(A), _NO_DATA, _NO_INDEX, _NO_INDPTR, False, rows


# Placeholders for the unused half of a kernel source (fixed dtypes: one compiled signature).
_NO_DENSE = np.zeros((0, 0))
_NO_DATA = np.zeros(0)
_NO_INDEX = np.zeros(0, dtype=np.intp)
_NO_INDPTR = np.zeros(1, dtype=np.intp)


def _rmatvec(A, r):
    """``A.T @ r`` for a dense block, a CSR matrix, a row subset or a sparse minibatch."""
    if isinstance(A, _SparseRows | _Subset):
        return A.rmatvec(r)
    return A.T @ r


def _rms_row_norm(rows, weights) -> float:
    """Root of the weighted mean squared row norm (weights of mean one)."""
    A = rows.A
    if sp.issparse(A):
        # In blocks of rows: A.multiply(A) would hold a second copy of the matrix.
        sq = np.empty(A.shape[0])
        step = 1 << 10
        for start in range(0, A.shape[0], step):
            ptr = A.indptr[start : start + step + 1]
            counts = np.diff(ptr)
            rows_of = np.repeat(np.arange(len(counts)), counts)
            vals = A.data[ptr[0] : ptr[-1]]  # a view
            sq[start : start + len(counts)] = np.bincount(
                rows_of, weights=vals * vals, minlength=len(counts)
            )
    else:
        sq = np.einsum("ij,ij->i", A, A)
    if rows.rows is not None:
        sq = sq[rows.rows]
    return float(np.sqrt(np.mean(weights * sq))) if len(sq) else 0.0


def _mean_one(u):
    """``u / u.mean()``, or ``u`` itself (not a copy) when its mean is exactly one.

    Dividing by 1.0 changes no value, so sharing the caller's array gives the same problem;
    at a million rows each per-row vector is 8 MB (the estimators pass weights of mean one).
    """
    mean = u.mean()
    return u if mean == 1.0 and u.dtype == np.float64 else u / mean


def _product(b, u):
    """``b * u``, or whichever factor is all ones (the same values, no new array)."""
    if np.all(u == 1.0):
        return b
    if np.all(b == 1.0):
        return u
    return b * u
