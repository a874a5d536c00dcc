"""The compiled block of PStorm iterations for :class:`~.linear.LinearProblem`.

The numpy path spends an inner iteration in some forty small array calls, each costing a few
microseconds of interpreter and dispatch overhead whatever the minibatch size; the arithmetic
itself is two passes over a few dozen rows. This module runs a whole block of iterations (up to
the next stopping test) in one compiled call. It computes what
:meth:`AugmentedLagrangianEstimator.step` and
:meth:`AugmentedLagrangianEstimator.storm_direction` compute, from minibatch indices drawn
beforehand by the caller with the same generator calls, so a seed gives the same iterates on
either path (up to rounding: sums are taken in a different order).

The block reads its data source as four arguments ``(dense, data, indices, indptr)`` (see
:mod:`._kernels`). On wide CSR data (text: many more columns than a minibatch reads)
``_block`` runs lazy updates: the coordinates no row of an iteration reads get no gradient,
so with a linear prox (none, or the ridge shrink) their iterations are a linear map applied
in closed form when a row next reads them, and once at the end of the block; an iteration
then costs O(non-zeros) instead of O(n_features).
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import _helper, _jit, _stage

__all__ = ["lazy_plan", "pstorm_block"]


@_helper
def _dot2(dense, data, indices, indptr, row, v1, v2):
    """``(a_row . v1, a_row . v2)`` in one pass over the row."""
    s1 = 0.0
    s2 = 0.0
    if indptr is not None:
        for k in range(indptr[row], indptr[row + 1]):
            a = data[k]
            j = indices[k]
            s1 += a * v1[j]
            s2 += a * v2[j]
    if dense is not None:
        for j in range(dense.shape[1]):
            a = dense[row, j]
            s1 += a * v1[j]
            s2 += a * v2[j]
    return s1, s2


@_helper
def _add_row(dense, data, indices, indptr, row, r, g):
    """``g += r * a_row``."""
    if indptr is not None:
        for k in range(indptr[row], indptr[row + 1]):
            g[indices[k]] += r * data[k]
    if dense is not None:
        for j in range(dense.shape[1]):
            g[j] += r * dense[row, j]


@_helper
def _touch(dense, data, indptr, rows):
    """Read one value per cache line of each row, so that their misses overlap.

    The dot products read a row with a chain of dependent additions, which keeps only a
    few of the row's cache misses in flight; touching all rows of the minibatch first
    brings them in together (the rows of a large matrix are far apart in memory).
    """
    acc = 0.0
    for row in rows:
        if indptr is not None:
            for k in range(indptr[row], indptr[row + 1], 8):
                acc += data[k]
        if dense is not None:
            for j in range(0, dense.shape[1], 8):
                acc += dense[row, j]
    return acc


@_helper
def _bring_up(data, indices, indptr, row, t, eta, a, inv_scale, z, d, last, powers, V,
              touched, n_touched):  # fmt: skip
    """Bring the lazy coordinates of a CSR row to iteration ``t`` and take their step.

    A lazy coordinate ``j`` (``last[j] >= 0``) holds in ``z[j], d[j]`` its state at the start
    of iteration ``last[j]``; no row read it since, so each iteration in between was the
    linear map ``z <- a (z - eta d), d <- keep d`` (``a = 1 / (1 + eta ridge)``), applied
    here ``n = t - last[j]`` times at once from the tables ``powers[:, n]`` (see
    :func:`_powers`). Then
    the step of iteration ``t`` itself (by the same map): ``z[j]`` becomes the new
    point, ``d[j]`` stays the old direction (the iteration's end adds the gradient) and ``j``
    is listed in ``touched``. Returns the new length of that list.
    """
    for k in range(indptr[row], indptr[row + 1]):
        j = indices[k]
        s = last[j]
        if s < 0 or s > t:  # eager, or already stepped in this iteration
            continue
        n = t - s
        zt = powers[0, n] * z[j] - powers[1, n] * d[j]
        dt = powers[2, n] * d[j]
        zn = a * (zt - eta * dt)
        V[0, j] = zn * inv_scale[j]
        V[1, j] = zt * inv_scale[j]
        z[j] = zn
        d[j] = dt
        last[j] = t + 1
        touched[n_touched] = j
        n_touched += 1
    return n_touched


@_helper
def _powers(a, keep, eta, powers):
    """``powers[:, k] = (a^k, eta a S_k, keep^k)``, ``S_k = sum_{i<k} a^(k-1-i) keep^i``: ``k``
    iterations without data from ``(z, d)`` give ``(a^k z - eta a S_k d, keep^k d)``. The
    recurrence ``S_(k+1) = a S_k + keep^k`` has no cancellation, ``a == keep`` included."""
    powers[0, 0] = 1.0
    powers[2, 0] = 1.0
    s = 0.0
    powers[1, 0] = 0.0
    for k in range(1, powers.shape[1]):
        s = a * s + powers[2, k - 1]
        powers[0, k] = a * powers[0, k - 1]
        powers[1, k] = eta * a * s
        powers[2, k] = keep * powers[2, k - 1]


@_stage
def _ustat_coefficients(beta, bc, n_batches):
    """``(cw, ca, bcoef)`` of the penalty's cotangents for constraint minibatches of ``bc``
    rows: the slack block's ``w = y + cw sum K`` and the U-statistic's ``U_i = A - bcoef K_i``
    with ``A = (y + ca sum K) / bc``; the independent estimator's ``A = w / bc`` comes from
    its second batch and ``bcoef = 0``."""
    cw = ca = bcoef = 0.0
    if bc > 0:
        cw = ca = beta / bc
    if n_batches == 1 and bc > 1:
        ca = beta / (bc - 1)
        bcoef = ca / bc
    return cw, ca, bcoef


@_stage
def _prox_step(z_old, d, z_new, V, B, g, eta, eta_slack, nf, p, inv_scale, center, lam, lower,
               upper, ridge, runs, last):  # fmt: skip
    """The proximal step from ``z_old`` along ``d`` into ``z_new`` (soft-thresholding, the
    ridge shrink, then the box: each the identity when off, a prox uses one of them; the
    slacks' projection on ``s >= 0``), and the scores' weights ``V[pt]`` and intercepts
    ``B[pt]`` in data units at both points; ``g`` is zeroed on the features. Only the eager
    coordinates (``runs``) when ``last`` is given."""
    dim = z_old.shape[0]
    n_runs = 1
    if last is not None:
        n_runs = runs.shape[0]
    B[0] = B[1] = 0.0
    for r in range(n_runs):
        lo, hi = 0, dim
        if last is not None:
            lo, hi = runs[r, 0], runs[r, 1]
        for j in range(lo, hi):
            u = z_old[j] - (eta if j < p else eta_slack) * d[j]
            if j < p:
                thr = eta * lam[j]
                if thr > 0.0:
                    u = math.copysign(max(abs(u) - thr, 0.0), u)
                u = min(max(u / (1.0 + eta * ridge[j]), lower[j]), upper[j])
            z_new[j] = u if j < p else max(u, 0.0)
            if j < nf:
                V[0, j] = z_new[j] * inv_scale[j]
                V[1, j] = z_old[j] * inv_scale[j]
                B[0] -= center[j] * V[0, j]
                B[1] -= center[j] * V[1, j]
                g[j] = 0.0
            elif j < p:
                B[0] += z_new[j]
                B[1] += z_old[j]


@_stage
def _bring_up_rows(data, indices, indptr, ridx, n_rows, t, eta, a, inv_scale, z, d, last,
                   powers, V, touched, n_touched):  # fmt: skip
    """:func:`_bring_up` on the first ``n_rows`` rows ``ridx[t]`` of iteration ``t``'s
    minibatch: the new length of the ``touched`` list."""
    for i in range(n_rows):
        n_touched = _bring_up(
            data, indices, indptr, ridx[t, i], t, eta, a, inv_scale, z, d, last, powers, V,
            touched, n_touched,
        )  # fmt: skip
    return n_touched


@_stage
def _objective_rows(dense, data, indices, indptr, margins, margins_u, idx, ridx, V, B, keep,
                    loss_code, alpha, g):  # fmt: skip
    """The objective's part of an iteration on its minibatch (``idx``, rows ``ridx``):
    ``r_i = u_i b_i (loss'(b_i z_i) - keep loss'(b_i z'_i)) / bo``, each added to ``g`` times
    its row (the gradient is linear in the ``r_i``). Returns ``sum_i r_i``."""
    bo = idx.shape[0]
    rsum = 0.0
    for i in range(bo):
        row = ridx[i]
        j = idx[i]
        z1, z2 = _dot2(dense, data, indices, indptr, row, V[0], V[1])
        r = 0.0
        for pt in range(2):
            mi = margins[j] * ((z1 if pt == 0 else z2) + B[pt])
            e = math.exp(-abs(mi))
            s = 1.0 / (1.0 + e)
            slope = -(e * s if mi >= 0.0 else s)  # logistic: -sigmoid(-m)
            if loss_code == 1:
                slope /= 1.0 + (max(-mi, 0.0) + math.log1p(e)) / alpha
            elif loss_code == 2:
                slope = -e * s * s
            r += slope if pt == 0 else -keep * slope
        r *= margins_u[j] / bo
        rsum += r
        _add_row(dense, data, indices, indptr, row, r, g)
    return rsum


@_stage
def _penalty_values(dense, data, indices, indptr, W, offset, ineq, idx, ridx, n_rows, V, B,
                    z_new, z_old, p, K, dP):  # fmt: skip
    """Penalty values ``K = C + E s`` per constraint row (the slacks ``s`` from index ``p``
    of the points) and ``sigmoid'`` (``dP``) at both points, on the first ``n_rows`` of the
    minibatches ``idx`` (rows ``ridx``)."""
    m = W.shape[1]
    for at in range(n_rows):
        j = idx[at]
        z1, z2 = _dot2(dense, data, indices, indptr, ridx[at], V[0], V[1])
        for pt in range(2):
            zz = (z1 if pt == 0 else z2) + B[pt]
            e = math.exp(-abs(zz))
            s = 1.0 / (1.0 + e)
            prob = s if zz >= 0.0 else e * s
            dP[pt, at] = e * s * s
            x = z_new if pt == 0 else z_old
            slack = p
            for k in range(m):
                K[pt, at, k] = W[j, k] * prob + offset[k]
                if ineq[k]:
                    K[pt, at, k] += x[slack]
                    slack += 1


@_stage
def _stratified_cotangents(
    dense, data, indices, indptr, W, ineq, idx, ridx, bc, y, beta, keep, p, c_alpha, c_code,
    per, K, dP, wa, ssum, out, g, rsum,
):  # fmt: skip
    """The penalty's part of an iteration with stratified batches: the weighted
    U-statistic's cotangents, each added to ``g`` times its row, and the slack block's
    gradient into ``out``. Returns ``rsum`` plus the cotangents' sum."""
    m = W.shape[1]
    # U_i = alpha_i (w + beta (S_s - per alpha_i K_i) / (per - 1)), w = y + beta
    # sum_i alpha_i K_i, S_s the stratum's weighted sum.
    ssum[:, :, :] = 0.0
    for pt in range(2):
        for k in range(m):
            wa[pt, 0, k] = 0.0
        for i in range(bc):
            j = idx[i]
            s_ = c_code[j]
            for k in range(m):
                v = c_alpha[j] * K[pt, i, k]
                wa[pt, 0, k] += v
                ssum[pt, s_, k] += v
        for k in range(m):
            wa[pt, 0, k] = y[k] + beta * wa[pt, 0, k]
    slack = p
    for k in range(m):
        if ineq[k]:
            out[slack] = wa[0, 0, k] - keep * wa[1, 0, k]
            slack += 1
    inv = beta / (per - 1.0)
    for i in range(bc):
        j = idx[i]
        s_ = c_code[j]
        al = c_alpha[j]
        q = 0.0
        for pt in range(2):
            uw = 0.0
            for k in range(m):
                u = wa[pt, 0, k] + inv * (ssum[pt, s_, k] - per * al * K[pt, i, k])
                uw += al * u * W[j, k]
            q += dP[pt, i] * uw if pt == 0 else -keep * (dP[pt, i] * uw)
        rsum += q
        _add_row(dense, data, indices, indptr, ridx[i], q, g)
    return rsum


@_stage
def _cotangents(dense, data, indices, indptr, W, ineq, idx, ridx, bc, n_batches, y, cw, ca,
                bcoef, keep, p, K, dP, wa, out, g, rsum):  # fmt: skip
    """The penalty's part of an iteration with uniform batches (see
    :func:`_ustat_coefficients`): the cotangents, each added to ``g`` times its row, and the
    slack block's gradient into ``out``. Returns ``rsum`` plus the cotangents' sum."""
    m = W.shape[1]
    # wa[pt, 0] = w (the slack block's, whose gradient goes to out), wa[pt, 1] = A
    # (the cotangents' constant).
    slack = p
    for k in range(m):
        for pt in range(2):
            ksum = 0.0
            for i in range((n_batches - 1) * bc, n_batches * bc):
                ksum += K[pt, i, k]
            wa[pt, 0, k] = y[k] + cw * ksum
            wa[pt, 1, k] = (y[k] + ca * ksum) / bc
        if ineq[k]:
            out[slack] = wa[0, 0, k] - keep * wa[1, 0, k]
            slack += 1
    for i in range(bc):
        j = idx[i]
        q = 0.0
        for pt in range(2):
            uw = 0.0
            for k in range(m):
                uw += (wa[pt, 1, k] - bcoef * K[pt, i, k]) * W[j, k]
            q += dP[pt, i] * uw if pt == 0 else -keep * (dP[pt, i] * uw)
        rsum += q
        _add_row(dense, data, indices, indptr, ridx[i], q, g)
    return rsum


@_stage
def _direction(d, out, g, rsum, keep, nf, p, inv_scale, center, runs, last, touched,
               n_touched):  # fmt: skip
    """``d = keep d + the gradient of sum_i r_i score_i in x`` (see ``LinearProblem._grad``)
    and the slack block's (already in ``out``), on the eager coordinates and the
    ``n_touched`` lazy ones a row read (whose ``g`` is zeroed)."""
    dim = d.shape[0]
    n_runs = 1
    if last is not None:
        n_runs = runs.shape[0]
    for r in range(n_runs):
        lo, hi = 0, dim
        if last is not None:
            lo, hi = runs[r, 0], runs[r, 1]
        for j in range(lo, hi):
            if j < nf:
                out[j] = (g[j] - rsum * center[j]) * inv_scale[j]
            elif j < p:
                out[j] = rsum
            d[j] = keep * d[j] + out[j]
    if last is not None:
        for i in range(n_touched):
            j = touched[i]
            d[j] = keep * d[j] + g[j] * inv_scale[j]
            g[j] = 0.0


@_stage
def _catch_up(z, d, z_end, last, powers, T, nf):
    """The one pass over the coordinates at the end of a lazy block: the lazy ones to
    iteration ``T``, into ``z_end`` (the buffer that holds the final point)."""
    for j in range(nf):
        s = last[j]
        if s >= 0:
            n = T - s
            z_end[j] = powers[0, n] * z[j] - powers[1, n] * d[j]
            d[j] = powers[2, n] * d[j]


@_jit
def _block(
    z, d, y, beta, eta, eta_slack, keep, nf, intercept, inv_scale, center,
    lam, lower, upper, ridge, loss_code, alpha,
    o_dense, o_data, o_indices, o_indptr, margins, margins_u, idx_o, ridx_o,
    c_dense, c_data, c_indices, c_indptr, W, offset, ineq, idx_c, ridx_c, n_batches,
    c_alpha, c_code, per,
    z_new, V, B, g, out, K, dP, wa, ssum, runs, last, a, touched, powers,
):  # fmt: skip
    """Run ``idx_o.shape[0]`` PStorm iterations from ``(z, d)``, in place.

    The last row of arguments are work buffers (see :func:`pstorm_block`); nothing is
    allocated here. Index ``pt`` of ``V, B, K, dP`` is the point: 0 the new iterate, 1 the
    previous one (the STORM correction). Row ``t`` of ``idx_c`` (``ridx_c``) holds the
    ``n_batches`` constraint minibatches of iteration ``t`` side by side (the second is the
    independent estimator's); ``K`` and ``dP`` have room for all of them. Returns whether
    the final point is in ``z_new`` (else in ``z``).

    Stratified constraint batches (``per > 0``, one batch): constraint row ``j`` is in
    stratum ``c_code[j]`` and weighs ``c_alpha[j]``, each stratum has ``per`` rows in a
    batch, and the cotangents are the weighted U-statistic's
    (:meth:`~sklearn_ialm.solver.pstorm.AugmentedLagrangianEstimator.penalty_cotangent`);
    ``ssum`` holds the strata's weighted sums at both points.

    Lazy updates (CSR data; ``runs, last, a, touched, powers`` are None for dense data, and
    numba then compiles none of their code): only the coordinates in the ranges
    ``runs[r, 0] <= j < runs[r, 1]`` (the intercept, centred columns, those whose prox is
    not the ridge shrink ``1 / (1 + eta ridge)`` with the lazy coordinates' ``a``, the
    slacks) are updated every iteration. The others
    (``last[j] >= 0`` on entry, ``0``; ``-1`` for the eager ones) get no dense gradient
    term, so an iteration whose rows do not read them is linear in ``(z_j, d_j)``: they are
    brought up to date when a row reads them (``_bring_up``) and at the end; they live in
    ``z`` during the block. ``touched`` (``nf`` entries) and ``powers`` (``(3, T + 1)``) are
    work buffers, and ``g`` must be zero on entry.
    """
    p = nf + (1 if intercept else 0)
    m = W.shape[1]
    bo = idx_o.shape[1]
    bc = idx_c.shape[1] // n_batches
    cw, ca, bcoef = _ustat_coefficients(beta, bc, n_batches)
    T = idx_o.shape[0]
    if last is not None:
        _powers(a, keep, eta, powers)
    acc = 0.0
    swapped = False
    z_old = z
    for t in range(T):
        acc += _touch(o_dense, o_data, o_indptr, ridx_o[t])
        if m > 0:
            acc += _touch(c_dense, c_data, c_indptr, ridx_c[t])
        _prox_step(z_old, d, z_new, V, B, g, eta, eta_slack, nf, p, inv_scale, center, lam,
                   lower, upper, ridge, runs, last)  # fmt: skip
        n_touched = 0
        if last is not None:
            n_touched = _bring_up_rows(
                o_data, o_indices, o_indptr, ridx_o, bo, t, eta, a, inv_scale, z, d, last,
                powers, V, touched, n_touched,
            )  # fmt: skip
            n_touched = _bring_up_rows(
                c_data, c_indices, c_indptr, ridx_c, idx_c.shape[1], t, eta, a, inv_scale,
                z, d, last, powers, V, touched, n_touched,
            )  # fmt: skip
        rsum = _objective_rows(o_dense, o_data, o_indices, o_indptr, margins, margins_u,
                               idx_o[t], ridx_o[t], V, B, keep, loss_code, alpha, g)  # fmt: skip
        if m > 0:
            _penalty_values(c_dense, c_data, c_indices, c_indptr, W, offset, ineq, idx_c[t],
                            ridx_c[t], n_batches * bc, V, B, z_new, z_old, p, K, dP)  # fmt: skip
            if per > 0:
                rsum = _stratified_cotangents(
                    c_dense, c_data, c_indices, c_indptr, W, ineq, idx_c[t], ridx_c[t], bc, y,
                    beta, keep, p, c_alpha, c_code, per, K, dP, wa, ssum, out, g, rsum,
                )  # fmt: skip
            elif per == 0:
                rsum = _cotangents(
                    c_dense, c_data, c_indices, c_indptr, W, ineq, idx_c[t], ridx_c[t], bc,
                    n_batches, y, cw, ca, bcoef, keep, p, K, dP, wa, out, g, rsum,
                )  # fmt: skip
        _direction(d, out, g, rsum, keep, nf, p, inv_scale, center, runs, last, touched,
                   n_touched)  # fmt: skip
        z_old, z_new = z_new, z_old
        swapped = not swapped
    if last is not None:
        _catch_up(z, d, z_old, last, powers, T, nf)
    # acc is returned so that the compiler keeps the reads (without nnan, 0 * acc is not 0).
    return swapped, 0.0 * acc


def _runs(mask):
    """The ``(R, 2)`` array of the ``[start, stop)`` ranges where ``mask`` is true."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return edges.reshape(-1, 2).astype(np.intp)


def lazy_plan(nf, dim, center, lam, lower, upper, ridge):
    """Which coordinates a CSR block may update lazily (see ``_block``).

    Lazy: the features with no centring and whose prox is the ridge shrink (or none) with
    the same ridge weight as the first of them; the iterations that do not read them are
    then linear maps. Returns ``(runs, ridge0)``: the ranges of the other coordinates (the
    intercept and slacks included) of a ``dim``-vector, as an ``(R, 2)`` array of
    ``[start, stop)``, and that ridge weight; or None when no feature qualifies.
    """
    free = (center == 0.0) & (lam[:nf] == 0.0) & np.isneginf(lower[:nf])
    free &= np.isposinf(upper[:nf])
    if not free.any():
        return None
    ridge0 = float(ridge[np.flatnonzero(free)[0]])
    free &= ridge[:nf] == ridge0
    return _runs(np.concatenate([~free, np.ones(dim - nf, dtype=bool)])), ridge0


def pstorm_block(
    z, d, y, beta, eta, eta_slack, keep, nf, intercept, *args, lazy=None, strata=None
):
    """Run the compiled block (see ``_block`` for the argument order): the new ``(z, d)``.

    ``z`` and ``d`` are not modified. The minibatch index arrays are ``(T, b)`` int arrays.
    ``lazy``: for CSR data (both sources) a :func:`lazy_plan`: the block then updates only
    the coordinates its rows read, and its cost per iteration does not grow with the number
    of features (a second compiled version of ``_block``: the one without, for dense data
    or every coordinate every iteration, keeps its own code).
    ``strata``: ``(alpha, code, n_strata, per)`` of stratified constraint batches.
    """
    z = np.array(z, dtype=float)
    d = np.array(d, dtype=float)
    W, idx_c = args[-6], args[-3]
    m = W.shape[1]
    rows_c = idx_c.shape[1]
    if strata is None:
        strata = (np.zeros(0), np.zeros(0, dtype=np.intp), 0, 0)
    c_alpha, c_code, n_strata, per = strata
    bufs = (
        np.empty_like(z), np.empty((2, nf)), np.empty(2), np.zeros(nf), np.zeros_like(z),
        np.empty((2, rows_c, m)), np.empty((2, rows_c)), np.empty((2, 2, m)),
        np.empty((2, n_strata, m)),
    )  # fmt: skip
    lazy_bufs = (None,) * 5
    if lazy is not None:
        runs, ridge0 = lazy
        last = np.zeros(nf, dtype=np.intp)
        for lo, hi in runs:
            last[lo:hi] = -1  # (slices past nf are empty)
        T = args[14].shape[0]  # idx_o
        a = 1.0 / (1.0 + float(eta) * ridge0)
        lazy_bufs = (runs, last, a, np.empty(nf, dtype=np.intp), np.empty((3, T + 1)))
    swapped, _ = _block(
        z, d, np.asarray(y, dtype=float), float(beta), float(eta), float(eta_slack),
        float(keep), int(nf), bool(intercept), *args, c_alpha, c_code, int(per), *bufs,
        *lazy_bufs,
    )  # fmt: skip
    return (bufs[0] if swapped else z), d
