"""The root of a free level's derivative (:func:`~.kkt._level_root`) compiled with numba:
the same operations in the same order as numpy's, so the same bits, in a few microseconds
where numpy's two dozen calls on small arrays took 55 (100 groups of 20 rows: 26 roots a
fit, 200 constraints each). Without numba, :func:`root` is None and numpy's stays.

numpy's sums are reproduced: a column of one point is summed pairwise (numpy's
``pairwise_sum``: eight accumulators up to 128 terms, halves beyond), a block of two points
or more row after row.
"""

from __future__ import annotations

import numpy as np

from ._numba import _import_numba

numba = _import_numba()

#: numpy's block of terms summed by eight accumulators (``PW_BLOCKSIZE``).
_PW_BLOCK = 128


def _leaf(x, lo, n):
    """numpy's sum of ``x[lo : lo + n]`` for ``n <= 128``: in order below eight terms,
    else by eight accumulators."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += x[i]
        return res
    r0, r1, r2, r3 = x[lo], x[lo + 1], x[lo + 2], x[lo + 3]
    r4, r5, r6, r7 = x[lo + 4], x[lo + 5], x[lo + 6], x[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += x[lo + i]
        r1 += x[lo + i + 1]
        r2 += x[lo + i + 2]
        r3 += x[lo + i + 3]
        r4 += x[lo + i + 4]
        r5 += x[lo + i + 5]
        r6 += x[lo + i + 6]
        r7 += x[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[lo + i]
        i += 1
    return res


def _pairwise(x, n):
    """numpy's pairwise sum of ``x[:n]``: blocks of up to 128 terms, each longer run the sum
    of its two halves (the first a multiple of eight). Its recursion unrolled on a stack:
    numba's cached code of a recursive function crashed when loaded."""
    if n <= _PW_BLOCK:
        return _leaf(x, 0, n)
    los, ns, states = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    sums = np.empty(64)
    top, done = 0, 0
    los[0], ns[0], states[0] = 0, n, 0
    while top >= 0:
        lo, m = los[top], ns[top]
        if m <= _PW_BLOCK:
            sums[done] = _leaf(x, lo, m)
            done += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if states[top] == 0:
            states[top] = 1
            top += 1
            los[top], ns[top], states[top] = lo, half, 0
        elif states[top] == 1:
            states[top] = 2
            top += 1
            los[top], ns[top], states[top] = lo + half, m - half, 0
        else:
            sums[done - 2] = sums[done - 2] + sums[done - 1]
            done -= 1
            top -= 1
    return sums[0]


def _terms(e, a, be, t, out):
    """``e * max(a + be * t, 0)`` into ``out`` (numpy's maximum: NaN kept, ``-0`` kept)."""
    for k in range(len(e)):
        v = a[k] + be[k] * t
        out[k] = e[k] * (v if (v >= 0.0 or v != v) else 0.0)


def _column(e, a, be, t, out):
    """``F(t)`` of one point of a block of two or more: the rows summed in order."""
    _terms(e, a, be, t, out)
    s = 0.0
    for k in range(len(out)):
        s += out[k]
    return s


def _sift(x, start, end):
    """Move ``x[start]`` down the max-heap ``x[: end]``."""
    root = start
    while 2 * root + 1 < end:
        child = 2 * root + 1
        if child + 1 < end and x[child] < x[child + 1]:
            child += 1
        if not x[root] < x[child]:
            return
        x[root], x[child] = x[child], x[root]
        root = child


def _heapsort(x):
    """Sort ``x`` (no NaN) in place, ascending: the same array as ``np.sort`` (distinct
    floats have one order), compiled in a fraction of the time numba takes for its own."""
    n = len(x)
    for start in range(n // 2 - 1, -1, -1):
        _sift(x, start, n)
    for end in range(n - 1, 0, -1):
        x[0], x[end] = x[end], x[0]
        _sift(x, 0, end)


def _walk(a, be, falling):
    """0, then the distinct kinks ``-a / be`` on the side the root is (below 0 where
    ``falling``), nearest first: numpy's ``np.unique`` of them, walked away from 0 (one
    sort and loops, not ``np.unique`` and ``np.concatenate``, which took numba seconds more
    to compile; equal kinks are one, as there)."""
    side, count = np.empty(len(a)), 0
    for k in range(len(a)):
        kink = -a[k] / be[k]
        if (kink < 0) if falling else (kink > 0):
            side[count] = kink
            count += 1
    side = side[:count]
    _heapsort(side)
    pts, n = np.empty(count + 1), 1
    pts[0] = 0.0
    for i in range(count):
        v = side[count - 1 - i] if falling else side[i]
        if n == 1 or v != pts[n - 1]:
            pts[n] = v
            n += 1
    return pts[:n]


def _root(e, a, beta):
    be = beta * e
    work = np.empty(len(e))
    _terms(e, a, be, 0.0, work)
    f0 = 0.0 + _pairwise(work, len(work))
    if f0 == 0.0:
        return 0.0
    falling = f0 > 0
    pts = _walk(a, be, falling)
    count = len(pts)
    vals = np.empty(count)
    crossed = -1
    for i in range(count):
        # (A single point is summed as numpy sums a column of one: pairwise.)
        vals[i] = _column(e, a, be, pts[i], work) if count > 1 else f0
        if (vals[i] <= 0.0) if falling else (vals[i] >= 0.0):
            crossed = i
            break
    if crossed == 0:
        # F(0) on rounding's other side of 0: numpy's reads the last point too.
        vals[count - 1] = _column(e, a, be, pts[count - 1], work) if count > 1 else f0
        crossed, last = 0, count - 1
    else:
        last = crossed - 1
    if crossed >= 0:
        t0, t1, v0, v1 = pts[last], pts[crossed], vals[last], vals[crossed]
        return t1 + (0.0 - v1) * (t0 - t1) / (v0 - v1) if v0 != v1 else t1
    far = pts[count - 1]
    sign = 1.0 if f0 > 0 else -1.0
    square = np.empty(len(e))
    m = 0
    for k in range(len(e)):
        if a[k] + be[k] * (far - sign) > 0:
            square[m] = e[k] * e[k]
            m += 1
    slope = beta * (0.0 + _pairwise(square, m))
    return far - vals[count - 1] / slope if slope > 0 else 0.0


def _levels(levels, c, y, beta, t, done):
    """Each level's root (``t[j]``, ``done[j]``) from its rows of ``levels`` (the non-zero
    entries of column ``j``) and ``a = y + beta c`` on them, as :func:`~.kkt.level_values`
    forms them; a level whose ``a`` is not finite is left undone (numpy's decides)."""
    m, q = levels.shape
    e, a = np.empty(m), np.empty(m)
    for j in range(q):
        n = 0
        for k in range(m):
            if levels[k, j] != 0:
                e[n] = levels[k, j]
                a[n] = y[k] + beta * c[k]
                n += 1
        finite = True
        for k in range(n):
            if not np.isfinite(a[k]):
                finite = False
        done[j] = finite
        t[j] = _root(e[:n].copy(), a[:n].copy(), beta) if finite and n > 0 else 0.0


if numba is not None:
    _leaf = numba.njit(cache=True)(_leaf)
    _pairwise = numba.njit(cache=True)(_pairwise)
    _terms = numba.njit(cache=True)(_terms)
    _column = numba.njit(cache=True)(_column)
    _sift = numba.njit(cache=True)(_sift)
    _heapsort = numba.njit(cache=True)(_heapsort)
    _walk = numba.njit(cache=True)(_walk)
    _root = numba.njit(cache=True, nogil=True)(_root)
    _levels = numba.njit(cache=True, nogil=True)(_levels)


def root(e, a, beta):
    """:func:`~.kkt._level_root` of float64 ``e``, finite ``a`` and ``beta``, compiled;
    None without numba or for other inputs (numpy's then decides)."""
    if numba is None or not (np.isfinite(beta) and np.all(np.isfinite(a))):
        return None
    if e.dtype != np.float64 or a.dtype != np.float64:
        return None
    return float(_root(np.ascontiguousarray(e), np.ascontiguousarray(a), float(beta)))


def values(levels, c, y, beta):
    """``(t, done)``: :func:`~.kkt.level_values`' levels compiled, ``done[j]`` where level
    ``j`` was (its ``a`` finite); None without numba or for other inputs. One call for all
    the levels (each root's own call, its checks and its gathers took 40 of a level's 50
    microseconds in a fit of 100 groups)."""
    arrays = (levels, c, y)
    if numba is None or not np.isfinite(beta) or any(v.dtype != np.float64 for v in arrays):
        return None
    if levels.ndim != 2 or c.ndim != 1 or y.ndim != 1:
        return None
    t, done = np.empty(levels.shape[1]), np.empty(levels.shape[1], np.bool_)
    levels, c, y = (np.ascontiguousarray(v) for v in arrays)
    _levels(levels, c, y, float(beta), t, done)
    return t, done
