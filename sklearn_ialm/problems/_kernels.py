"""A compiled block of PStorm iterations for :class:`~.linear.LinearProblem` (optional numba).

The numpy path spends an inner iteration in some forty small array calls, each costing a few
microseconds of interpreter and dispatch overhead whatever the minibatch size; the arithmetic
itself is two passes over a few dozen rows. This module runs a whole block of iterations (up to
the next stopping test) in one compiled call. It computes what
:meth:`AugmentedLagrangianEstimator.step` and
:meth:`AugmentedLagrangianEstimator.storm_direction` compute, from minibatch indices drawn
beforehand by the caller with the same generator calls, so a seed gives the same iterates on
either path (up to rounding: sums are taken in a different order).

The block reads its data source as four arguments ``(dense, data, indices, indptr)``: a
C-ordered float64 matrix and three ``None``, or ``None`` and a CSR triple. numba removes the
branch of the other layout when it compiles (an ``is None`` test on an argument typed ``None``
is decided at compile time), so a fit compiles only the code its data needs. The full-data
passes (stopping tests, power iterations) are compiled for dense data only: on sparse rows
scipy's products beat compiled loops.

On wide CSR data (text: many more columns than a minibatch reads) ``_block`` runs lazy
updates: the coordinates no row of an iteration reads get no gradient, so with a linear
prox (none, or the ridge shrink) their iterations are a linear map applied in closed form
when a row next reads them, and once at the end of the block; an iteration then costs
O(non-zeros) instead of O(n_features).

numba is optional: without it :func:`available` is false and the solver keeps the numpy path.
Compiled code is cached on disk (``cache=True``), so the compile cost is paid once per
installation and argument types, not once per process.
"""

from __future__ import annotations

import math
import sys

import numpy as np


def _import_numba():
    """numba, or None when it is not installed.

    An import cut short (Ctrl-C while numba loads, in the first fit of a process) leaves
    numba's finished submodules in ``sys.modules`` without their parents' links to them;
    every later ``import numba`` then fails ("module 'numba' has no attribute 'core'") and
    no fit could run again. The modules the failed import added are forgotten, so the next
    fit imports numba afresh.
    """
    loaded = set(sys.modules)
    try:
        import numba
    except BaseException as exc:
        for name in set(sys.modules) - loaded:
            sys.modules.pop(name, None)
        if isinstance(exc, ImportError):  # pragma: no cover - numba is not installed
            return None
        raise
    return numba


numba = _import_numba()

__all__ = [
    "available",
    "csr_gram",
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


# Reassociation lets the row loops vectorise; no finite-math or approximate-function flags,
# which would change results beyond rounding.
FM = {"reassoc", "contract", "nsz", "arcp"}


def _jit(fn):
    if numba is None:
        return fn
    return numba.njit(cache=True, nogil=True, fastmath=FM)(fn)


def _helper(fn):
    """A function called only from compiled code: no Python entry point to build (each one
    costs about 0.05 s of the first, uncached compile)."""
    if numba is None:
        return fn
    return numba.njit(cache=True, fastmath=FM, no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)


def _stage(fn):
    """A stage of :func:`_block`, inlined into it by numba (``inline="always"``, on numba's
    own IR): the block compiles to one function, as it was written before its split.

    Called as a separate function instead, a stage is optimised on its own, and with
    ``fastmath`` its rounding then depended on the specialisation's argument types (a
    read-only or non-contiguous array); since a call runs any loaded specialisation its
    arguments convert to, the last bits of a fit depended on what the process had compiled
    or loaded before (measured: 4 of 140 recorded blocks).
    """
    if numba is None:
        return fn
    return numba.njit(
        inline="always", fastmath=FM, no_cpython_wrapper=True, no_cfunc_wrapper=True
    )(fn)


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
    ``U``, the squares into ``D`` (see :func:`csr_gram`)."""
    row = np.empty(np.max(indptr[1:] - indptr[:-1]) if indptr.shape[0] > 1 else 0)
    for i in range(indptr.shape[0] - 1):
        ri = r[i]
        if ri == 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        for a in range(lo, hi):  # the scaled row, once per entry (not once per pair)
            row[a - lo] = data[a] * scale[indices[a]]
        for a in range(lo, hi):
            va = ri * row[a - lo]
            ja = indices[a]
            s[ja] += va
            D[ja] += va * row[a - lo]
            for b in range(a + 1, hi):
                U[ja, indices[b]] += va * row[b - lo]


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
    cols, pos, sign = [], [], []
    for k in range(W.shape[1]):
        # The candidates among the columns kept so far, in one comparison: a call per pair
        # took 20 s (0.6 s so) with 1000 groups of 20 rows (2000 columns, a million pairs).
        near = np.isclose(proj[k], proj[cols], rtol=1e-9, atol=0.0)
        for i in np.flatnonzero(near):
            j = cols[i]
            same = np.array_equal(W[:, k], W[:, j])
            if same or np.array_equal(W[:, k], -W[:, j]):
                pos.append(i)
                sign.append(1.0 if same else -1.0)
                break
        else:
            pos.append(len(cols))
            sign.append(1.0)
            cols.append(k)
    return np.array(cols, dtype=np.intp), np.array(pos, dtype=np.intp), np.array(sign)


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
