"""Weighted Gram matrices of rows, in one read of them (the smoothness bound's set-up and
the finish's Hessians).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Above this many parameters the smoothness bound uses power iterations instead of the
#: ``d x d`` Gram matrices (8 * d**2 bytes each), and the finish's Hessians are products.
#: Its users read it as ``_gram.GRAM_MAX_PARAMS`` when called: one value for them all.
GRAM_MAX_PARAMS = 1024
#: Rows of a dense block of the weighted Gram matrix: blocks of about 1 MB.
_GRAM_BLOCK_BYTES = 1 << 20


def _kernels_available():
    from . import _kernels

    return _kernels.available()


def _weighted_gram(A, r, compiled, low, inv=None, rows=None):
    """``(sum_i r_i a_i a_i^T, sum_i r_i a_i, sum_i r_i)`` over the rows ``a_i`` of ``A``
    (those ``rows``, None: all), each column times ``inv`` (None: as it is), in one read of
    the rows: a compiled loop over all of a CSR matrix's rows (with ``compiled``), else
    blocks of rows, see :func:`_block_gram` (``low``: dense blocks in float32 where their
    products stay finite). ``r``: the weights, or a function ``r(B, rows)`` of a block's
    raw rows and its positions (a slice), which weighs the rows in the block's own read.

    ``inv`` puts the rows in the solver's units before any product: raw sums of a column of
    1e200 overflow, and of 1e-300 underflow to zeros that the scale then turned into NaN.
    ``rows`` are gathered block by block: a sample's rows are never copied whole (the
    memory of a fit is the training matrix and a few per-row vectors).
    """
    n = A.shape[0] if rows is None else len(rows)
    sparse = sp.issparse(A)
    if sparse and compiled and rows is None and A.format == "csr" and A.data.dtype == np.float64:
        from . import _kernels

        r = np.asarray(r, dtype=float)
        G, s = _kernels.csr_gram(A.data, A.indices, A.indptr, r, A.shape[1], inv)
        return G, s, float(r.sum())
    d = A.shape[1]
    G, s, t = np.zeros((d, d)), np.zeros(d), 0.0
    width = A.nnz / max(A.shape[0], 1) if sparse else d
    step = max(1, int(_GRAM_BLOCK_BYTES // (8 * max(width, 1))))
    for start in range(0, n, step):
        here = slice(start, start + step)
        gathered = rows is not None and not sparse
        if rows is None:
            B = A[here]
        else:  # (np.take: half the time of fancy indexing on 10100 x 101 rows)
            B = np.take(A, rows[here], axis=0) if gathered else A[rows[here]]
        rb = r(B, here) if callable(r) else r[here]
        scale = inv
        if gathered and inv is not None:
            B *= inv  # the block is our own copy: scaled in place
            scale = None
        g, m = _block_gram(_scaled_block(B, scale, low and not sparse), rb, compiled)
        if not np.isfinite(g).all():
            g, m = _block_gram(_scaled_block(B, scale, False), rb, compiled)
        G += g
        s += m
        t += float(rb.sum())
    return G, s, t


def _block_gram(B, r, compiled):
    """``(sum_i r_i a_i a_i^T, sum_i r_i a_i)`` over the rows of the block ``B`` (``r`` None:
    weights one), the sums in float64.

    A float32 block (see :func:`_scaled_block`) is multiplied in float32: a Gram matrix for
    a step size or a Newton step needs no more than its seven digits, and it took 9 ms
    where float64 took 14 ms (the anchor task's 30000 x 100 rows, one thread). Not where a
    column centre is subtracted from the sums afterwards: a mean many times the spread
    would cancel those digits. CSR rows go to the compiled loop (``compiled``), else to
    scipy.
    """
    if sp.issparse(B):
        B = B.tocsr()
        if compiled and B.data.dtype == np.float64:
            from . import _kernels

            w = np.ones(B.shape[0]) if r is None else np.asarray(r, dtype=float)
            return _kernels.csr_gram(B.data, B.indices, B.indptr, w, B.shape[1])
        Bw = B if r is None else B.multiply(r[:, None]).tocsr()
        return (B.T @ Bw).toarray(), np.asarray(Bw.sum(axis=0)).ravel()
    w = np.ones(len(B), B.dtype) if r is None else r.astype(B.dtype)
    if r is None:
        G = (B.T @ B).astype(float)  # one array: a symmetric product, half the arithmetic
    else:
        G = (B.T @ (B * w[:, None])).astype(float)
        G = 0.5 * (G + G.T)  # (the two triangles' float32 rounding differs)
    return G, np.asarray(w @ B, dtype=float)


def _scaled_block(B, inv, low):
    """A block of rows (of the smoothness bound's sweep, or of a Hessian) in the solver's
    units (columns times ``inv``, None: as they are), formed in one pass: with ``low``,
    dense rows in float32 (see :func:`_block_gram`; beyond its range they become inf)."""
    if sp.issparse(B):
        return B if inv is None else B.multiply(inv[None, :]).tocsr()
    if not low:
        return np.asarray(B, dtype=float) if inv is None else B * inv
    out = np.empty(B.shape, dtype=np.float32)
    with np.errstate(over="ignore"):
        if inv is None:
            out[...] = B
        else:
            np.multiply(B, inv, out=out, casting="unsafe")
    return out
