"""A compiled block of PStorm iterations for :class:`~.linear.LinearProblem` (optional numba).

The numpy path spends an inner iteration in some forty small array calls, each costing a few
microseconds of interpreter and dispatch overhead whatever the minibatch size; the arithmetic
itself is two passes over a few dozen rows. This module runs a whole block of iterations (up to
the next stopping test) in one compiled call. It computes what
:meth:`AugmentedLagrangianEstimator.step` and
:meth:`AugmentedLagrangianEstimator.storm_direction` compute, from minibatch indices drawn
beforehand by the caller with the same generator calls, so a seed gives the same iterates on
either path (up to rounding: sums are taken in a different order).

numba is optional: without it :func:`available` is false and the solver keeps the numpy path.
Compiled code is cached on disk (``cache=True``), so the compile cost is paid once per
installation and argument types, not once per process.
"""

from __future__ import annotations

import math

import numpy as np

try:  # pragma: no cover - which branch runs depends on the environment
    import numba
except ImportError:  # pragma: no cover
    numba = None

__all__ = ["available", "full_pass", "gram_pass", "pstorm_block"]


def available() -> bool:
    """Whether numba is importable, i.e. whether the compiled path can run."""
    return numba is not None


FM = {"reassoc", "contract", "nsz", "arcp"}


def _jit(fn):
    if numba is None:
        return fn
    # No fastmath: the kernel must agree with the numpy path to rounding.
    return numba.njit(cache=True, nogil=True, fastmath=FM)(fn)


@_jit
def _expit(t):
    if t >= 0.0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


@_jit
def _loss_derivative(code, alpha, m):
    if code == 0:
        return -_expit(-m)
    if code == 1:
        # log(1 + exp(-m)) without overflow.
        soft = max(-m, 0.0) + math.log1p(math.exp(-abs(m)))
        return -_expit(-m) / (1.0 + soft / alpha)
    p = _expit(m)
    return -p * (1.0 - p)


@_jit
def _loss_value(code, alpha, m):
    soft = max(-m, 0.0) + math.log1p(math.exp(-abs(m)))  # log(1 + exp(-m))
    if code == 0:
        return soft
    if code == 1:
        return alpha * math.log1p(soft / alpha)
    return _expit(-m)


@_jit
def _scores(dense, data, indices, indptr, sparse, row, v1, v2):
    """``(a_row . v1, a_row . v2)`` in one pass over the row."""
    s1 = 0.0
    s2 = 0.0
    if sparse:
        for k in range(indptr[row], indptr[row + 1]):
            a = data[k]
            j = indices[k]
            s1 += a * v1[j]
            s2 += a * v2[j]
    else:
        for j in range(dense.shape[1]):
            a = dense[row, j]
            s1 += a * v1[j]
            s2 += a * v2[j]
    return s1, s2


@_jit
def _dot(dense, data, indices, indptr, sparse, row, v):
    """``a_row . v``."""
    s = 0.0
    if sparse:
        for k in range(indptr[row], indptr[row + 1]):
            s += data[k] * v[indices[k]]
    else:
        for j in range(dense.shape[1]):
            s += dense[row, j] * v[j]
    return s


@_jit
def _add_row(dense, data, indices, indptr, sparse, row, r, g):
    """``g += r * a_row``."""
    if sparse:
        for k in range(indptr[row], indptr[row + 1]):
            g[indices[k]] += r * data[k]
    else:
        for j in range(dense.shape[1]):
            g[j] += r * dense[row, j]


@_jit
def _touch(dense, data, indptr, sparse, rows):
    """Read one value per cache line of each row, so that their misses overlap.

    The dot products read a row with a chain of dependent additions, which keeps only a
    few of the row's cache misses in flight; touching all rows of the minibatch first
    brings them in together (the rows of a large matrix are far apart in memory).
    """
    acc = 0.0
    for row in rows:
        if sparse:
            for k in range(indptr[row], indptr[row + 1], 8):
                acc += data[k]
        else:
            for j in range(0, dense.shape[1], 8):
                acc += dense[row, j]
    return acc


@_jit
def _effective(x, nf, inv_scale, center, intercept):
    v = x[:nf] * inv_scale
    b = 0.0
    if intercept:
        b = x[nf]
        for j in range(nf):
            b -= center[j] * v[j]
    return v, b


@_jit
def _finish_grad(g, rsum, n, nf, inv_scale, center, intercept, out):
    """``out[:p] += LinearProblem._grad`` given ``g = sum r_i a_i`` and ``rsum = sum r_i``."""
    for j in range(nf):
        gj = g[j]
        if intercept:
            gj -= rsum * center[j]
        out[j] += gj * inv_scale[j] / n
    if intercept:
        out[nf] += rsum / n


@_jit
def _constraint_pass(
    dense, data, indices, indptr, sparse, idx, ridx, W, offset, ineq, s1, s2, v1, b1, v2, b2
):
    """Penalty values ``K = C + E s`` at both points, and ``dP = sigmoid'`` per row."""
    bsz = idx.shape[0]
    m = W.shape[1]
    K1 = np.empty((bsz, m))
    K2 = np.empty((bsz, m))
    dP = np.empty((bsz, 2))
    for i in range(bsz):
        z1, z2 = _scores(dense, data, indices, indptr, sparse, ridx[i], v1, v2)
        p1 = _expit(z1 + b1)
        p2 = _expit(z2 + b2)
        dP[i, 0] = p1 * (1.0 - p1)
        dP[i, 1] = p2 * (1.0 - p2)
        slack = 0
        for k in range(m):
            wk = W[idx[i], k]
            K1[i, k] = wk * p1 + offset[k]
            K2[i, k] = wk * p2 + offset[k]
            if ineq[k]:
                K1[i, k] += s1[slack]
                K2[i, k] += s2[slack]
                slack += 1
    return K1, K2, dP


@_jit
def _block(
    z,
    d,
    y,
    beta,
    eta,
    eta_slack,
    keep,
    nf,
    intercept,
    inv_scale,
    center,
    lam,
    lower,
    upper,
    ridge,
    loss_code,
    alpha,
    o_dense,
    o_data,
    o_indices,
    o_indptr,
    o_sparse,
    margins,
    margins_u,
    idx_o,
    ridx_o,
    c_dense,
    c_data,
    c_indices,
    c_indptr,
    c_sparse,
    W,
    offset,
    ineq,
    idx_c,
    ridx_c,
    idx_c2,
    ridx_c2,
):
    """Run ``idx_o.shape[0]`` PStorm iterations from ``(z, d)``; returns the new ``(z, d)``."""
    p = nf + (1 if intercept else 0)
    dim = z.shape[0]
    m = W.shape[1]
    independent = idx_c2.shape[0] > 0
    g = np.empty(nf)
    touched = 0.0
    for t in range(idx_o.shape[0]):
        touched += _touch(o_dense, o_data, o_indptr, o_sparse, ridx_o[t])
        if m > 0:
            touched += _touch(c_dense, c_data, c_indptr, c_sparse, ridx_c[t])
            if independent:
                touched += _touch(c_dense, c_data, c_indptr, c_sparse, ridx_c2[t])
        # The proximal step: soft-thresholding, the ridge shrink, then the box (each the
        # identity when off; a prox uses one of them).
        z_new = np.empty(dim)
        for j in range(p):
            u = z[j] - eta * d[j]
            thr = eta * lam[j]
            if thr > 0.0:
                u = math.copysign(max(abs(u) - thr, 0.0), u)
            u = u / (1.0 + eta * ridge[j])
            z_new[j] = min(max(u, lower[j]), upper[j])
        for j in range(p, dim):
            z_new[j] = max(z[j] - eta_slack * d[j], 0.0)
        v1, b1 = _effective(z_new, nf, inv_scale, center, intercept)
        v2, b2 = _effective(z, nf, inv_scale, center, intercept)
        out = np.zeros(dim)

        # Objective: r_i = u_i b_i (loss'(b_i z1_i) - keep loss'(b_i z2_i)).
        bsz = idx_o.shape[1]
        g[:] = 0.0
        rsum = 0.0
        for i in range(bsz):
            row = ridx_o[t, i]
            z1, z2 = _scores(o_dense, o_data, o_indices, o_indptr, o_sparse, row, v1, v2)
            bi = margins[idx_o[t, i]]
            r = margins_u[idx_o[t, i]] * (
                _loss_derivative(loss_code, alpha, bi * (z1 + b1))
                - keep * _loss_derivative(loss_code, alpha, bi * (z2 + b2))
            )
            rsum += r
            _add_row(o_dense, o_data, o_indices, o_indptr, o_sparse, row, r, g)
        _finish_grad(g, rsum, bsz, nf, inv_scale, center, intercept, out)

        if m > 0:
            s1 = z_new[p:]
            s2 = z[p:]
            bsz = idx_c.shape[1]
            K1, K2, dP = _constraint_pass(
                c_dense, c_data, c_indices, c_indptr, c_sparse, idx_c[t], ridx_c[t],
                W, offset, ineq, s1, s2, v1, b1, v2, b2,
            )  # fmt: skip
            # Per-sample cotangents U (see AugmentedLagrangianEstimator.penalty_cotangent)
            # as U = A_k + B K_ik, and the slack block's w, at both points.
            w1 = np.empty(m)
            w2 = np.empty(m)
            a1 = np.empty(m)
            a2 = np.empty(m)
            if independent:
                D1, D2, _ = _constraint_pass(
                    c_dense, c_data, c_indices, c_indptr, c_sparse, idx_c2[t], ridx_c2[t],
                    W, offset, ineq, s1, s2, v1, b1, v2, b2,
                )  # fmt: skip
                for k in range(m):
                    w1[k] = y[k] + beta * (D1[:, k].sum() / bsz)
                    w2[k] = y[k] + beta * (D2[:, k].sum() / bsz)
                    a1[k] = w1[k] / bsz
                    a2[k] = w2[k] / bsz
                bcoef = 0.0
            else:
                for k in range(m):
                    k1 = K1[:, k].sum()
                    k2 = K2[:, k].sum()
                    a1[k] = (y[k] + (beta / (bsz - 1)) * k1) / bsz
                    a2[k] = (y[k] + (beta / (bsz - 1)) * k2) / bsz
                    w1[k] = y[k] + (beta / bsz) * k1
                    w2[k] = y[k] + (beta / bsz) * k2
                bcoef = beta / (bsz * (bsz - 1))
            g[:] = 0.0
            rsum = 0.0
            for i in range(bsz):
                j = idx_c[t, i]
                u1 = 0.0
                u2 = 0.0
                for k in range(m):
                    u1 += (a1[k] - bcoef * K1[i, k]) * W[j, k]
                    u2 += (a2[k] - bcoef * K2[i, k]) * W[j, k]
                q = dP[i, 0] * u1 - keep * (dP[i, 1] * u2)
                rsum += q
                _add_row(c_dense, c_data, c_indices, c_indptr, c_sparse, ridx_c[t, i], q, g)
            _finish_grad(g, rsum, 1.0, nf, inv_scale, center, intercept, out)
            slack = p
            for k in range(m):
                if ineq[k]:
                    out[slack] = w1[k] - keep * w2[k]
                    slack += 1
        for j in range(dim):
            d[j] = keep * d[j] + out[j]
        z = z_new
    # Returned so that the compiler keeps the reads (without nnan, 0 * touched is not 0).
    return z, d, 0.0 * touched


@_jit
def _full_pass(
    dense, data, indices, indptr, sparse, rows_o, rows_c, shared, v, b,
    margins, u, loss_code, alpha, W,
):  # fmt: skip
    """One pass over the objective rows and one over the constraint rows (one pass in all
    when they are the same rows), accumulating everything :meth:`full_evaluation` needs.

    Returns the sum over objective rows of ``u_i loss(b_i z_i)``, ``sum r_i a_i`` and
    ``sum r_i`` with ``r_i = u_i b_i loss'(b_i z_i)``, and over constraint rows
    ``sum_j W_j p_j`` and, per constraint ``k``, ``G[:, k] = sum_j p_j' W_jk a_j`` and its
    intercept part ``sum_j p_j' W_jk``: ``J^T v`` is then ``G @ v`` for any ``v``, with no
    further pass over the data.
    """
    nf = v.shape[0]
    m = W.shape[1]
    f = 0.0
    rsum = 0.0
    # H[0] accumulates the objective's r_i a_i, H[1 + k] constraint k's p_j' W_jk a_j; with
    # one contiguous row per cotangent each update is a plain (vectorisable) axpy.
    H = np.zeros((m + 1, nf))
    csum = np.zeros(m)
    gsum = np.zeros(m)
    q = np.zeros(m + 1)
    n_o = rows_o.shape[0]
    n_c = 0 if shared else rows_c.shape[0]
    for i in range(n_o + n_c):
        obj = i < n_o
        row = rows_o[i] if obj else rows_c[i - n_o]
        z = b + _dot(dense, data, indices, indptr, sparse, row, v)
        q[0] = 0.0
        if obj:
            mi = margins[i] * z
            f += u[i] * _loss_value(loss_code, alpha, mi)
            q[0] = u[i] * margins[i] * _loss_derivative(loss_code, alpha, mi)
            rsum += q[0]
        con = m > 0 and (shared or not obj)
        if con:
            j = i if shared else i - n_o
            p = _expit(z)
            dp = p * (1.0 - p)
            for k in range(m):
                csum[k] += W[j, k] * p
                q[k + 1] = dp * W[j, k]
                gsum[k] += q[k + 1]
        n_q = m + 1 if con else 1
        if sparse:
            for kk in range(indptr[row], indptr[row + 1]):
                a = data[kk]
                col = indices[kk]
                for k in range(n_q):
                    H[k, col] += q[k] * a
        else:
            for k in range(n_q):
                qk = q[k]
                for col in range(nf):
                    H[k, col] += qk * dense[row, col]
    return f, H[0].copy(), rsum, csum, H[1:].T.copy(), gsum


@_jit
def _gram_pass(dense, data, indices, indptr, sparse, rows, v, b, weights):
    """``(sum_i r_i a_i, sum_i r_i)`` with ``r_i = weights_i (a_i . v + b)``: one pass."""
    g = np.zeros(v.shape[0])
    rsum = 0.0
    for i in range(rows.shape[0]):
        row = rows[i]
        r = weights[i] * (b + _dot(dense, data, indices, indptr, sparse, row, v))
        rsum += r
        _add_row(dense, data, indices, indptr, sparse, row, r, g)
    return g, rsum


def gram_pass(*args):
    """Run the compiled product ``A^T diag(weights) A v`` (see ``_gram_pass``)."""
    return _gram_pass(*args)


def full_pass(*args):
    """Run the compiled full-data pass (see ``_full_pass``)."""
    return _full_pass(*args)


def pstorm_block(*args):
    """Run the compiled block (see ``_block`` for the argument order): ``(z, d)``."""
    z, d, _ = _block(*args)
    return z, d
