"""The compiled kernels (optional numba): the full-data passes, the Gram sums and the column
moments here; the block of PStorm iterations in :mod:`._kernel_block`, re-exported.

The kernels read a data source as four arguments ``(dense, data, indices, indptr)``: a
C-ordered float64 matrix and three ``None``, or ``None`` and a CSR triple. numba removes the
branch of the other layout when it compiles (an ``is None`` test on an argument typed ``None``
is decided at compile time), so a fit compiles only the code its data needs. The full-data
passes (stopping tests, power iterations) are compiled for dense data only: on sparse rows
scipy's products beat compiled loops.

numba is optional (:mod:`._numba`): without it :func:`available` is false and the solver
keeps the numpy path.
"""

from __future__ import annotations

import math

import numpy as np

from ._kernel_block import lazy_plan, pstorm_block
from ._numba import _jit, _jit_ieee, numba

__all__ = [
    "available",
    "column_sums",
    "csr_absmax",
    "csr_deviation_sums",
    "csr_gram",
    "csr_group_products",
    "csr_weighted_square_sums",
    "deviation_sums",
    "full_pass",
    "gram_pass",
    "lazy_plan",
    "moment_sums",
    "pstorm_block",
]


def available() -> bool:
    """Whether numba is importable, i.e. whether the compiled path can run."""
    return numba is not None


@_jit
def _full_pass(
    dense, rows_o, rows_c, n_o, n_c, shared, v, b, margins, u, loss_code, alpha, W, cols,
    H, csum, gsum, q,
):  # fmt: skip
    """One pass over the objective rows and one over the constraint rows (one pass in all
    when they are the same rows) of a dense matrix, accumulating everything
    :meth:`full_evaluation` needs (sparse data takes the numpy path: see there).

    Adds to ``H[0]`` the sum over objective rows of ``r_i a_i`` with
    ``r_i = u_i b_i loss'(b_i z_i)``, and over constraint rows, for each column ``k = cols[l]``
    of ``W``: to ``csum[l]`` the sum ``sum_j W_jk p_j``, to ``H[1 + l]`` the sum
    ``sum_j p_j' W_jk a_j`` and to ``gsum[l]`` its intercept part ``sum_j p_j' W_jk``
    (``J^T v`` is then ``H[1:].T @ v`` for any ``v``, with no further pass over the data).
    The objective rows are ``rows_o`` (``n_o`` of them), or the first ``n_o`` rows when
    ``rows_o`` is None; the same for the constraint rows. ``q`` is a work buffer of
    ``len(cols) + 1`` values. Returns the sums of ``u_i loss(b_i z_i)`` and of ``r_i``.

    One ``exp`` per row serves the loss, its derivative and the sigmoid when ``b_i = +-1``.
    """
    m = cols.shape[0]
    f = 0.0
    prod = 1.0
    rsum = 0.0
    for i in range(n_o + (0 if shared else n_c)):
        obj = i < n_o
        # No index array for all rows in order (it would cost 8 bytes a row).
        row = i if obj else i - n_o
        if rows_o is not None and obj:
            row = rows_o[i]
        if rows_c is not None and not obj:
            row = rows_c[i - n_o]
        z = b
        for col in range(dense.shape[1]):
            z += dense[row, col] * v[col]
        e = math.exp(-abs(z))
        se = 1.0 / (1.0 + e)  # sigmoid(|z|)
        first = 1
        if obj:
            first = 0
            bi = margins[i]
            mi = bi * z
            em, s = e, se  # exp(-|m|) and sigmoid(|m|): those of z for b_i = +-1
            if abs(bi) != 1.0:
                em = math.exp(-abs(mi))
                s = 1.0 / (1.0 + em)
            neg = em * s if mi >= 0.0 else s  # sigmoid(-m)
            if loss_code == 2:
                val = neg
                der = -em * s * s
            elif loss_code == 0 and u[i] == 1.0:
                # log(1 + exp(-m)) = max(-m, 0) + log1p(em): the log1p terms of unit-weight
                # rows are summed as the log of their product, one multiply a row instead of
                # a log1p (which cost as much as the rest of the row's arithmetic).
                val = max(-mi, 0.0)
                der = -neg
                prod *= 1.0 + em
                if prod > 1e300:
                    f += math.log(prod)
                    prod = 1.0
            else:
                val = max(-mi, 0.0) + math.log1p(em)  # log(1 + exp(-m))
                der = -neg
                if loss_code == 1:
                    der /= 1.0 + val / alpha
                    val = alpha * math.log1p(val / alpha)
            f += u[i] * val
            q[0] = u[i] * bi * der
            rsum += q[0]
        last = 1
        if m > 0 and (shared or not obj):
            j = i if shared else i - n_o
            prob = se if z >= 0.0 else e * se
            dp = e * se * se
            for k in range(m):
                wk = W[j, cols[k]]
                csum[k] += wk * prob
                q[k + 1] = dp * wk
                gsum[k] += q[k + 1]
            last = m + 1
        for k in range(first, last):
            qk = q[k]
            for col in range(dense.shape[1]):
                H[k, col] += qk * dense[row, col]
    return f + math.log(prod), rsum


@_jit
def _gram_pass(dense, rows, v, b, weights, g):
    """``g += sum_i r_i a_i``; returns ``sum_i r_i`` (``r_i = weights_i (a_i . v + b)``), over
    rows of a dense matrix."""
    rsum = 0.0
    for i in range(rows.shape[0]):
        row = rows[i]
        r = b
        for j in range(dense.shape[1]):
            r += dense[row, j] * v[j]
        r *= weights[i]
        rsum += r
        for j in range(dense.shape[1]):
            g[j] += r * dense[row, j]
    return rsum


@_jit
def _csr_gram_half(data, indices, indptr, r, scale, U, D, s):
    """The pairs ``b > a`` of each row's non-zeros (each times its column's ``scale``) into
    ``U``, the squares into ``D`` (see :func:`csr_gram`). Each row's scaled values and
    its column indices are copied first, once per entry, not once per pair (the indices as
    ``intp``: on Adult's 14 non-zeros a row, 16 -> 11 ms on a loaded machine, the same sums
    in the same order)."""
    width = np.max(indptr[1:] - indptr[:-1]) if indptr.shape[0] > 1 else 0
    row, col = np.empty(width), np.empty(width, dtype=np.intp)
    for i in range(indptr.shape[0] - 1):
        ri = r[i]
        if ri == 0.0:
            continue
        lo, m = indptr[i], indptr[i + 1] - indptr[i]
        for a in range(m):
            row[a] = data[lo + a] * scale[indices[lo + a]]
            col[a] = indices[lo + a]
        for a in range(m):
            va = ri * row[a]
            ja = col[a]
            s[ja] += va
            D[ja] += va * row[a]
            for b in range(a + 1, m):
                U[ja, col[b]] += va * row[b]


def csr_gram(data, indices, indptr, r, d, scale=None):
    """``(sum_i r_i a_i a_i^T, sum_i r_i a_i)`` over the rows of a CSR matrix of ``d``
    columns, each column times ``scale`` (None: as it is; the solver's units, where raw
    sums of a column of 1e200 would overflow): each row's pairs of non-zeros once, then
    ``U + U^T`` and the squares on the diagonal (which also holds for a column repeated in
    a row). On a9a (14 non-zeros a row): 4.6 ms, where scipy's product of two sparse
    matrices took 22 ms and both orders of each pair compiled 8.7 ms."""
    U, D, s = np.zeros((d, d)), np.zeros(d), np.zeros(d)
    scale = np.ones(d) if scale is None else np.ascontiguousarray(scale, dtype=float)
    _csr_gram_half(data, indices, indptr, r, scale, U, D, s)
    G = U + U.T
    G[np.diag_indices(d)] += D
    return G, s


# Rows per partial sum of the column moments: each block's sums are added to the totals, so
# the rounding grows with the number of blocks plus the block size, not with n.
_MOMENT_BLOCK = 4096


@_jit
def _moment_sums(dense, w, absmax, wsum):
    """``absmax[j] = max_i |dense[i, j]|`` and ``wsum[j] = sum_i w_i dense[i, j]``, in one
    pass over the rows."""
    part = np.zeros(dense.shape[1])
    for start in range(0, dense.shape[0], _MOMENT_BLOCK):
        part[:] = 0.0
        for i in range(start, min(start + _MOMENT_BLOCK, dense.shape[0])):
            wi = w[i]
            for j in range(dense.shape[1]):
                x = dense[i, j]
                a = abs(x)
                if a > absmax[j]:
                    absmax[j] = a
                part[j] += wi * x
        wsum += part


@_jit
def _deviation_sums(dense, w, inv_unit, mean, first, second):
    """``first[j] = sum_i w_i e_ij`` and ``second[j] = sum_i w_i e_ij^2`` with ``e_ij =
    dense[i, j] inv_unit[j] - mean[j]``, in one pass over the rows."""
    d = dense.shape[1]
    f, s = np.zeros(d), np.zeros(d)
    for start in range(0, dense.shape[0], _MOMENT_BLOCK):
        f[:] = 0.0
        s[:] = 0.0
        for i in range(start, min(start + _MOMENT_BLOCK, dense.shape[0])):
            wi = w[i]
            for j in range(d):
                e = dense[i, j] * inv_unit[j] - mean[j]
                we = wi * e
                f[j] += we
                s[j] += we * e
        first += f
        second += s


def _readable(dense):
    """Whether the moment kernels read ``dense`` in place: numba, and a C-ordered float64
    array."""
    return (
        numba is not None
        and isinstance(dense, np.ndarray)
        and dense.dtype == np.float64
        and dense.flags.c_contiguous
    )


def moment_sums(dense, weights):
    """``(absmax, wsum)``: the largest magnitude of each column of a matrix of finite values
    and its sum under the row ``weights``, in one compiled read; None without numba or for
    another layout than C-ordered float64 (see ``_column_moments``)."""
    if not _readable(dense):
        return None
    absmax, wsum = np.zeros(dense.shape[1]), np.zeros(dense.shape[1])
    _moment_sums(dense, np.ascontiguousarray(weights, dtype=np.float64), absmax, wsum)
    return absmax, wsum


def deviation_sums(dense, weights, inv_unit, mean):
    """``(first, second)``: the weighted sums of ``e = x inv_unit - mean`` and of ``e^2`` over
    the rows of each column, in one compiled read (the caller checked :func:`moment_sums`
    applies)."""
    first, second = np.zeros(dense.shape[1]), np.zeros(dense.shape[1])
    w = np.ascontiguousarray(weights, dtype=np.float64)
    _deviation_sums(dense, w, inv_unit, mean, first, second)
    return first, second


@_jit_ieee
def _csr_absmax(data, indices, absmax):
    """``absmax[j] = max |data[k]|`` over the entries ``k`` of column ``j = indices[k]``."""
    for k in range(data.shape[0]):
        a = abs(data[k])
        j = indices[k]
        if a > absmax[j]:
            absmax[j] = a


@_jit_ieee
def _csr_deviation_sums(data, indices, indptr, w, unit, mean, step, sums, nz_count):
    """Per block of ``step`` rows, each column's sums of ``w_i e``, ``w_i e e`` and ``w_i``
    over its stored entries (``e = x / unit - mean``), each in the order of the entries, then
    added to ``sums``' rows: numpy's ``bincount`` per block, operation for operation."""
    n, d = indptr.shape[0] - 1, sums.shape[0]
    part = np.zeros((d, 3))  # a column's three sums side by side: one cache line
    for start in range(0, n, step):
        part[:] = 0.0
        for i in range(start, min(start + step, n)):
            wi = w[i]
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                dev = data[k] / unit[j] - mean[j]
                we = wi * dev
                part[j, 0] += we
                part[j, 1] += we * dev
                part[j, 2] += wi
                nz_count[j] += 1
        sums += part


@_jit
def _csr_pattern_products(data, indices, indptr, r, dp, pattern, g, M, msum):
    """``g += sum_i r_i a_i``, ``M[c] += sum_{i: pattern_i = c} dp_i a_i`` and ``msum[c]``
    the sum of those ``dp_i`` (see :func:`csr_pattern_products`)."""
    for i in range(indptr.shape[0] - 1):
        ri, wi, c = r[i], dp[i], pattern[i]
        msum[c] += wi
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            g[j] += ri * data[k]
            M[c, j] += wi * data[k]


def csr_pattern_products(X, r, dp, pattern, n_patterns):
    """``(X.T @ r, X.T @ E, E.sum(axis=0))`` with ``E[i, c] = dp_i`` where ``pattern_i = c``
    (else 0), in one compiled read of CSR ``X`` (float64 values, see :func:`_compiled_csr`):
    the backward product of an evaluation whose constraint weights take ``n_patterns``
    distinct rows, two products a non-zero whatever the number of constraints (Adult by
    race, equalized odds: 2.5 ms where scipy's product with 11 columns took 4.4, on a loaded
    machine, and the 11 columns need not be formed)."""
    d = X.shape[1]
    g, M, msum = np.zeros(d), np.zeros((n_patterns, d)), np.zeros(n_patterns)
    _csr_pattern_products(X.data, X.indices, X.indptr, r, dp, pattern, g, M, msum)
    return g, M, msum


@_jit_ieee
def _csr_weighted_scatter(data, indices, indptr, r, z, g):
    """``g += sum_i r_i z_i a_i`` in scipy's order (see :func:`csr_weighted_rmatvec`)."""
    for i in range(indptr.shape[0] - 1):
        w = r[i] * z[i]
        for k in range(indptr[i], indptr[i + 1]):
            g[indices[k]] += data[k] * w


def csr_weighted_rmatvec(X, r, z):
    """``X.T @ (r * z)`` in one compiled read of CSR ``X`` (float64 values, see
    :func:`_compiled_csr`), without forming the n-vector ``r * z``: the same operations in
    the same order as scipy's product with it, so the same values. A wide Hessian's product
    keeps the scores ``z`` of its vector beside the sum of the earlier ones (the finish's
    moved scores), and that n-vector more was the peak of a CSR 1e6 x 1e4 fit (8 MB)."""
    g = np.zeros(X.shape[1])
    _csr_weighted_scatter(X.data, X.indices, X.indptr, r, z, g)
    return g


@_jit_ieee
def _csr_group_products(data, indices, indptr, r, dp, codes, g, G, dsum):
    """``g += sum_i r_i a_i``, ``G[c] += sum_{i: codes_i = c} dp_i a_i`` and ``dsum += sum_i
    dp_i a_i``, each entry's terms added in the order of the rows (see
    :func:`csr_group_products`)."""
    for i in range(indptr.shape[0] - 1):
        ri, wi, c = r[i], dp[i], codes[i]
        for k in range(indptr[i], indptr[i + 1]):
            j, x = indices[k], data[k]
            g[j] += x * ri
            G[c, j] += wi * x
            dsum[j] += x * wi


def csr_group_products(X, r, dp, codes, n_codes):
    """``(X.T @ r, E @ X, X.T @ dp)`` with ``E[c, i] = dp_i`` where ``codes_i = c`` (else 0),
    in one compiled read of CSR ``X``, the bits of scipy's three products (each sums an
    entry's terms row after row, from zero); None without numba or for float32 values.
    The evaluation of a band over many groups (see :mod:`._grouped_weights`): 100 groups
    of 20 rows, 0.5 ms of scipy's products and the forming of ``E``, 14 times a fit."""
    if not _compiled_csr(X):
        return None
    d = X.shape[1]
    g, G, dsum = np.zeros(d), np.zeros((n_codes, d)), np.zeros(d)
    r, dp = (np.ascontiguousarray(v, dtype=np.float64) for v in (r, dp))
    _csr_group_products(X.data, X.indices, X.indptr, r, dp, codes, g, G, dsum)
    return g, G, dsum


def _compiled_csr(X):
    """Whether the CSR moment kernels read ``X`` in place: numba and float64 values."""
    return numba is not None and X.data.dtype == np.float64


def csr_absmax(X):
    """The largest magnitude of each column of CSR ``X`` in one compiled read (numpy's
    ``maximum.at`` took 1.5 s on 1e6 x 1e4 with 20 non-zeros a row; this 0.03 s); None
    without numba or for float32 values."""
    if not _compiled_csr(X):
        return None
    absmax = np.zeros(X.shape[1])
    lo, hi = X.indptr[0], X.indptr[-1]
    _csr_absmax(X.data[lo:hi], X.indices[lo:hi], absmax)
    return absmax


def csr_deviation_sums(X, weights, unit, mean, step):
    """``(first, second, nz_weight, nz_count)`` of ``_deviation_sums``' CSR read (the sums
    of ``w e``, ``w e^2`` and ``w`` over each column's stored entries, and their number) in
    one compiled read by the same blocks of ``step`` rows, so the same bits; None where
    :func:`csr_absmax` is."""
    if not _compiled_csr(X):
        return None
    sums, nz_count = np.zeros((X.shape[1], 3)), np.zeros(X.shape[1], dtype=np.int64)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    _csr_deviation_sums(X.data, X.indices, X.indptr, w, unit, mean, step, sums, nz_count)
    return sums[:, 0].copy(), sums[:, 1].copy(), sums[:, 2].copy(), nz_count


@_jit_ieee
def _csr_weighted_square_sums(data, indices, indptr, r, step, out):
    """Per block of ``step`` rows, each column's sum of ``x x r_i`` over its stored entries in
    the order of the entries, then added to ``out``: numpy's ``bincount`` per block."""
    n = indptr.shape[0] - 1
    part = np.zeros(out.shape[0])
    for start in range(0, n, step):
        part[:] = 0.0
        for i in range(start, min(start + step, n)):
            ri = r[i]
            for k in range(indptr[i], indptr[i + 1]):
                x = data[k]
                part[indices[k]] += x * x * ri
        out += part


def csr_weighted_square_sums(A, r, step):
    """``_weighted_square_sums``' CSR read (``sum_i r_i A_ik^2`` by blocks of ``step`` rows) in
    one compiled read, the same bits (1e6 x 1e4, 20 non-zeros a row: 0.03 s, numpy's blocks
    0.28); None without numba or for float32 values."""
    if not _compiled_csr(A):
        return None
    out = np.zeros(A.shape[1])
    r = np.ascontiguousarray(r, dtype=np.float64)
    _csr_weighted_square_sums(A.data, A.indices, A.indptr, r, step, out)
    return out


@_jit_ieee
def _column_sums(Q, out):
    for i in range(Q.shape[0]):
        for k in range(Q.shape[1]):
            out[k] += Q[i, k]


def column_sums(Q):
    """``Q.sum(axis=0)`` of a C-ordered float64 ``(n, k)`` array, ``k >= 2``, the same bits
    (numpy adds the rows in order for ``k >= 2``; one column it sums pairwise): 1e6 x 3 in
    6 ms where numpy's strided reduction took 22 ms, a fifth of a CSR 1e6 x 1e4 pass."""
    plain = isinstance(Q, np.ndarray) and Q.dtype == np.float64 and Q.flags.c_contiguous
    if numba is None or not plain or Q.shape[1] < 2:
        return Q.sum(axis=0)
    out = np.zeros(Q.shape[1])
    _column_sums(Q, out)
    return out


def source(dense, data, indices, indptr, sparse):
    """The kernels' four source arguments from a ``kernel_source`` tuple's first five: the
    unused layout's arrays become ``None`` (see the module docstring)."""
    if sparse:
        return None, data, indices, indptr
    return dense, None, None, None


def gram_pass(dense, rows, v, b, weights):
    """``(sum_i r_i a_i, sum_i r_i)`` with ``r_i = weights_i (a_i . v + b)``: one pass."""
    g = np.zeros(v.shape[0])
    rsum = _gram_pass(dense, rows, v, float(b), weights, g)
    return g, rsum


def signed_columns(W):
    """``(cols, pos, sign)`` with ``W[:, k] == sign[k] * W[:, cols[pos[k]]]``, ``cols`` the
    first of each set of columns equal up to sign (both sides of a parity gap are one)."""
    # A random projection of each column screens the pairs, so that only candidates are
    # compared entry by entry (many constraints over many rows would take m**2 / 2 passes).
    # (Uniform draws: the screen needs distinct projections only, and on 1e6 rows they take
    # 2 ms where normal ones took 10.)
    proj = np.abs(W.T @ np.random.default_rng(0).random(W.shape[0]))
    equal = _equal_columns(W, proj)
    cols, pos, sign = [], [], []
    for k in range(W.shape[1]):
        # The candidates among the columns kept so far, in one comparison: a call per pair
        # took 20 s (0.6 s so) with 1000 groups of 20 rows (2000 columns, a million pairs).
        near = np.isclose(proj[k], proj[cols], rtol=1e-9, atol=0.0)
        for i in np.flatnonzero(near):
            same, opposite = equal[k, cols[i]]
            if same or opposite:
                pos.append(i)
                sign.append(1.0 if same else -1.0)
                break
        else:
            pos.append(len(cols))
            sign.append(1.0)
            cols.append(k)
    return np.array(cols, dtype=np.intp), np.array(pos, dtype=np.intp), np.array(sign)


def _equal_columns(W, proj):
    """``{(k, j): (W[:, k] == W[:, j], W[:, k] == -W[:, j])}`` for each pair ``j < k`` of
    columns whose projections ``proj`` are close (:func:`signed_columns`' candidates), from
    one read of ``W`` block by block of rows: compared column by column, each comparison
    read all of ``W`` (its columns are strided), 14 ms of a fit on Adult's 53001 x 20."""
    k, j = np.nonzero(np.isclose(proj[:, None], proj[None, :], rtol=1e-9, atol=0.0))
    k, j = k[j < k], j[j < k]
    same, opposite = np.ones(len(k), bool), np.ones(len(k), bool)
    # (Each block transposed, so that a pair's columns are compared as contiguous rows;
    # a block's pairs at most 64k entries.)
    step = max(1, min(4096, (1 << 16) // max(len(k), 1)))
    for start in range(0, W.shape[0] if len(k) else 0, step):
        B = np.ascontiguousarray(W[start : start + step].T)
        left, right = B[k], B[j]
        same &= np.all(left == right, axis=1)
        opposite &= np.all(left == -right, axis=1)
    return {(a, b): (s, o) for a, b, s, o in zip(k, j, same, opposite, strict=True)}


def full_pass(
    dense, rows_o, rows_c, n_o, n_c, shared, v, b, margins, u, code, alpha, W, columns=None
):  # fmt: skip
    """Run the compiled full-data pass (see ``_full_pass``).

    Returns ``(f, g, rsum, csum, G, gsum)``: the loss sum, ``sum r_i a_i`` and ``sum r_i``
    over the objective rows; ``sum_j W_j p_j``, the ``(n_features, m)`` matrix ``G`` of
    ``sum_j p_j' W_jk a_j`` and ``sum_j p_j' W_jk`` over the constraint rows.
    ``columns``: :func:`signed_columns` of ``W`` (computed if not given); the pass
    accumulates only one of each set of columns equal up to sign.
    """
    cols, pos, sign = signed_columns(W) if columns is None else columns
    r = len(cols)
    H = np.zeros((r + 1, v.shape[0]))
    csum, gsum, q = np.zeros(r), np.zeros(r), np.zeros(r + 1)
    f, rsum = _full_pass(
        dense, rows_o, rows_c, int(n_o), int(n_c), bool(shared), v, float(b), margins, u,
        int(code), float(alpha), W, cols, H, csum, gsum, q,
    )  # fmt: skip
    return f, H[0], rsum, sign * csum[pos], H[1 + pos].T * sign, sign * gsum[pos]
