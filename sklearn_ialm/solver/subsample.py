"""Stop tests on a random subsample of rows (``check_sample``), with their standard errors.

See :class:`~sklearn_ialm.solver.settings.Settings` (``check_sample``) for the rule; the
:class:`Subsample` holds its state between tests (the rows a test reads, the reference
evaluation of the control variate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problem import jacobian_matrix

__all__ = ["Subsample"]

#: ``check_sample="auto"``: stop tests read a random subsample of this many rows per kind
#: (objective, constraint) ...
_SUBSAMPLE_ROWS = 10_000
#: ... when a test on all rows reads at least this many rows.
_SUBSAMPLE_MIN_ROWS = 100_000
#: A subsample's verdict needs the residual's standard error times this below the tolerance
#: ...
_SUBSAMPLE_MARGIN = 1.0
#: ... and a residual near the tolerance (below twice it) grows the subsample until its
#: standard error is at most this share of the tolerance.
_SUBSAMPLE_SE_SHARE = 0.2
#: Chunks of the subsample for its batch-means standard errors.
_SUBSAMPLE_CHUNKS = 10
#: ``check_sample="auto"``: the subsample is drawn as windows of this many adjacent rows at
#: uniform starts (every row equally likely), read in order; each chunk holds whole windows.
_SUBSAMPLE_WINDOW = 64


@dataclass
class Subsample:
    """The state of the subsample stop tests of one run.

    Attributes
    ----------
    start : int
        Rows per kind of a test after a test on all rows (the subsample starts small again).
    window : int
        Adjacent rows per draw (1: single rows).
    rows : int or None
        Rows per kind of the next test; ``None``: the tests read all rows (the subsample
        would be more than a quarter of them).
    ref : tuple or None
        ``(x0, f0, grad0, c0, jac0, offset0)``: the last test on all rows, the control
        variate of the subsample's estimates.
    """

    start: int
    window: int
    rows: int | None = None
    ref: tuple | None = None

    def __post_init__(self):
        if self.rows is None:
            self.rows = self.start

    @classmethod
    def for_problem(cls, problem, check_sample, check_cost) -> Subsample | None:
        """The subsample of a run, or None when every test reads all rows."""
        # A problem may say that a subsample test would read as much as a test on all rows
        # (rows held by a Dask cluster: random rows fall in every partition, so either test
        # reads them all): its tests then read all rows.
        if not problem.finite or check_sample is False:
            return None
        if not getattr(problem, "subsample_checks", True):
            return None
        rows0 = _SUBSAMPLE_ROWS if check_sample == "auto" else int(check_sample)
        least = _SUBSAMPLE_MIN_ROWS if check_sample == "auto" else 4 * rows0 + 1
        if check_cost < least:
            return None
        # Random rows cost several times a row of a sequential pass (memory latency): the
        # default's windows are read nearly in order. A subsample size the caller sets is
        # drawn row by row.
        window = _SUBSAMPLE_WINDOW if check_sample == "auto" else 1
        return cls(start=_round_up(rows0, _SUBSAMPLE_CHUNKS * window), window=window)

    def read(self, problem, rng, x, m):
        """Draw a fresh subsample and evaluate it at ``x`` chunk by chunk.

        Returns ``(chunks, rows_read)``: the chunks' evaluations and the rows read (each
        row at ``x`` and at the reference point).
        """
        # A fresh subsample per test, read once, chunk by chunk: the chunks' estimates give
        # the standard errors, their mean the subsample's.
        # (Uniform rows: a test's plain means read them, stratified draws or not.)
        rows = self.rows
        bo = _windows(rng, problem.n_objective_samples, rows, self.window)
        bc = _windows(rng, problem.n_constraint_samples, rows, self.window) if m else None
        # Each row at the test's point, and at the reference point (control variate).
        rows_read = (1 + bool(m)) * rows * (1 + (self.ref is not None))
        chunks = [
            _chunk_evaluation(problem, x, _subsample_chunk(problem, bo, bc, i), self.ref)
            for i in range(_SUBSAMPLE_CHUNKS)
        ]
        return chunks, rows_read

    def restart(self, problem, x, f0, grad, c, jac_t, m, p):
        """A test on all rows at ``x``: the new reference, and the subsample starts small."""
        jac = np.ascontiguousarray(jacobian_matrix(jac_t, m, p).T)
        offset = np.array(getattr(problem, "offset", 0.0), dtype=float)
        self.ref = (x.copy(), f0, grad, c, jac, offset)
        self.rows = self.start

    def grow(self, pres, dres, pres_se, dres_se, tol, dual_tol, full_cost, kinds):
        """Grow the subsample where a residual near its tolerance has a standard error above
        ``_SUBSAMPLE_SE_SHARE`` of it (the standard error falls like one over the root of the
        rows); all rows once a subsample would read more than a quarter of them."""
        rows = self.rows
        need = rows
        for value, se, limit in ((pres, pres_se, tol), (dres, dres_se, dual_tol)):
            target = _SUBSAMPLE_SE_SHARE * limit
            if value < 2 * limit and se > target:
                need = max(need, rows * (se / target) ** 2)
        if need > rows:
            rows = _round_up(need, _SUBSAMPLE_CHUNKS * self.window)
            self.rows = None if 4 * kinds * rows > full_cost else rows


def _round_up(value, multiple):
    return int(-(-int(np.ceil(value)) // multiple) * multiple)


def _windows(rng, n, rows, width):
    """``rows`` row indices of ``n`` as an array of ``rows / width`` windows of ``width``
    adjacent rows, each at a uniform start (wrapping around): every row is equally likely to
    be read, as with rows drawn one by one, and a window is read in order."""
    starts = rng.integers(n, size=rows // width)
    return (starts[:, None] + np.arange(width)) % n


def _subsample_chunk(problem, bo, bc, i):
    """Chunk ``i`` of a stop test's subsample ``(bo, bc)`` (windows of rows, see
    :func:`_windows`: every tenth window), as the evaluation batch it is read through.

    A problem that can (``gather``) copies the chunk's rows in order: the chunk is then read
    at random once, and at its two points (see :func:`_chunk_evaluation`) in order. Read in
    place, each point's evaluation gathered the rows again: on dense 1e6 x 20 the tests took
    more time than the fit's minibatches and full passes together. One chunk's copy is held
    at a time, a tenth of a subsample of at most a quarter of the rows (see
    :meth:`Subsample.grow`).
    """
    chunk = tuple(None if b is None else b[i::_SUBSAMPLE_CHUNKS].ravel() for b in (bo, bc))
    gather = getattr(problem, "gather", None)
    copy = gather(chunk) if gather is not None else None
    return chunk if copy is None else copy


def _chunk_evaluation(problem, x, batches, ref):
    """``full_evaluation`` at ``x`` on the rows ``batches``, with the last evaluation on all
    rows as a control variate when there is one (``ref``).

    With ``ref = (x0, f0, grad0, c0, jac0, offset0)``, the estimate of ``c(x)`` is
    ``c0 + mean_i (C_i(x) - C_i(x0))`` (the offsets' change since added), and so for the
    objective, its gradient and ``J^T``: still unbiased, and the per-row differences are
    small when ``x`` is near ``x0``, where the rows' own values vary by their whole range.
    Both points are evaluated on the same gathered rows.
    """
    now = problem.full_evaluation(x, None, batches)
    if ref is None:
        return now
    x0, f0, grad0, c0, jac0, offset0 = ref
    then = problem.full_evaluation(x0, None, batches)
    moved = np.array(getattr(problem, "offset", 0.0), dtype=float) - offset0
    jt_now, jt_then = now[3], then[3]

    def jac_t(v):
        return jac0 @ np.asarray(v, dtype=float) + jt_now(v) - jt_then(v)

    return (
        f0 + now[0] - then[0],
        grad0 + now[1] - then[1],
        c0 + moved + now[2] - then[2],
        jac_t,
    )


def _mean_evaluation(chunks):
    """``full_evaluation``'s ``(f0, grad, c, jac_t)`` on the union of equal-sized chunks,
    from the chunks' own evaluations."""
    f0 = float(np.mean([ch[0] for ch in chunks]))
    grad = np.mean([ch[1] for ch in chunks], axis=0)
    c = np.mean([ch[2] for ch in chunks], axis=0)

    def jac_t(v):
        return np.mean([ch[3](v) for ch in chunks], axis=0)

    return f0, grad, c, jac_t


def _subsample_residuals(chunks, shift, x, s, y_cert, c, grad, jac_t, h, ineq):
    """Residuals of a subsample stop test and their batch-means standard errors.

    The residual vectors ``k = c + E s`` and ``dist(0, grad g + dh + J^T y)`` are means over
    the subsample; noise adds its trace of covariance ``T`` to their expected squared norm,
    so ``sqrt(max(|v|^2 - T, 0))`` is returned, with ``T`` estimated from the spread of the
    chunks' vectors. The standard errors are the spread of the chunks' residuals over
    ``sqrt(n_chunks)``. The slack block of the dual residual depends on ``y_cert`` alone,
    exact given it.
    """
    n = len(chunks)
    yi = y_cert[ineq]
    rs = np.where(s > 0, np.abs(yi), np.maximum(-yi, 0.0))
    rs2 = float(rs @ rs)

    def vectors(ci, gi, jt):
        k = ci.copy()
        k[ineq] += s
        return k, h.dist_subdiff(x, gi + jt(y_cert) if y_cert.size else gi)

    k, rx = vectors(c, grad, jac_t)
    ks, rxs = zip(*(vectors(ch[2] + shift, ch[1], ch[3]) for ch in chunks), strict=True)
    ks, rxs = np.array(ks), np.array(rxs)

    def trace(vs):
        return float(np.sum((vs - vs.mean(axis=0)) ** 2)) / (n * (n - 1))

    pres = np.sqrt(max(float(k @ k) - trace(ks), 0.0))
    dres = np.sqrt(max(float(rx @ rx) + rs2 - trace(rxs), 0.0))
    per_chunk = np.column_stack(
        [np.linalg.norm(ks, axis=1), np.sqrt(np.sum(rxs**2, axis=1) + rs2)]
    )
    se = np.std(per_chunk, axis=0, ddof=1) / np.sqrt(n)
    return float(pres), float(dres), float(se[0]), float(se[1])
