"""How rows that live in a Dask collection are read: :class:`DaskRows` (the rows, each
with its cell and weight), the functions each block runs on the workers, and
:class:`DaskScores` (the scores of every row at a point, as a formula).

Everything that reads all rows is a reduction: a function of each block (the parameters, a
few hundred bytes, go with it) whose small results are summed on the client, one
``dask.compute`` a pass. :class:`~._dask_rows.DaskLinearProblem` is the problem on them.
"""

from __future__ import annotations

import dask
import numpy as np
from scipy.special import expit

from ._numeric import ROUNDING_SPREAD, check_not_subnormal

__all__ = ["DaskRows", "DaskScores", "column_moments"]

#: Candidate points per pass of the segment search (:meth:`DaskLinearProblem.segment_point`).
_SEGMENT_GRID = 64
#: Passes of the segment search: the point found is within ``_SEGMENT_GRID ** -3`` (4e-6) of
#: the segment's length from the first point that meets the bound.
_SEGMENT_PASSES = 3


def _sum_parts(parts):
    """The elementwise sum of a list of equal-length tuples of arrays."""
    return [sum(vals[1:], start=vals[0]) for vals in zip(*parts, strict=True)]


class DaskRows:
    """The rows of a row-chunked dask array, with each row's cell and weight.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
        Chunked by rows only.
    cell, weight : dask.array.Array of shape (n,)
        Chunked like ``X``.
    n_computes : int, default=0
        The graphs the fit sent before (its set-up's), counted on from there.
    """

    sparse = False
    rows = None  # every row of X (the problem's row subsets are cells of weight zero)

    def __init__(self, X, cell, weight, n_computes=0):
        self.A = X
        self.cell = cell
        self.weight = weight
        self.n_rows = X.shape[0]
        # Each block's (X, cell, weight) as delayed objects, made once: every pass and every
        # gather is a task per block on them (turning the arrays into delayed blocks
        # optimises their graphs, a cost on the client best paid once per fit).
        self._blocks = list(
            zip(
                X.to_delayed().ravel(),
                cell.to_delayed().ravel(),
                weight.to_delayed().ravel(),
                strict=True,
            )
        )
        self._starts = np.r_[0, np.cumsum(X.chunks[0])]
        # The offsets of the rows a gather takes from a block travel in its task, and the
        # client's distributed keeps its last messages (``distributed.admin.
        # low-level-log-length``, 1000): the smallest integers that index a block.
        self._offset_type = np.min_scalar_type(max(max(X.chunks[0]) - 1, 0))
        #: The graphs the fit sent so far (each a ``dask.compute`` or ``persist``): ``verbose``
        #: shows it.
        self.n_computes = n_computes

    def in_place(self) -> bool:
        return False

    def gather(self, idx):
        """``(X rows, cells, weights, local)`` of the distinct rows in ``idx``, brought here in
        one ``dask.compute``; ``local`` indexes them as ``idx`` indexes all rows.

        Each block that holds rows of ``idx`` sends only those (a task per block, given
        their offsets in it), so the client receives the rows and nothing more.
        """
        rows, local = np.unique(np.asarray(idx).ravel(), return_inverse=True)
        # rows is sorted: the rows of block k are a run of it.
        cuts = np.searchsorted(rows, self._starts)
        parts = [
            dask.delayed(_take_rows, pure=True)(
                x, c, w, (rows[a:b] - start).astype(self._offset_type)
            )
            for (x, c, w), a, b, start in zip(
                self._blocks, cuts[:-1], cuts[1:], self._starts[:-1], strict=True
            )
            if b > a
        ]
        self.n_computes += 1
        Xr = np.empty((len(rows), self.A.shape[1]))
        cr = np.empty(len(rows), dtype=self.cell.dtype)
        wr = np.empty(len(rows), dtype=self.weight.dtype)
        at = 0
        for X_part, c_part, w_part in _results_in_turn(parts):
            k = len(c_part)
            Xr[at : at + k], cr[at : at + k], wr[at : at + k] = X_part, c_part, w_part
            at += k
        return Xr, cr, wr, local.reshape(np.shape(idx))

    def blockwise(self, fn, *args):
        """``[fn(X_block, cell_block, weight_block, *args) for each block]``, one compute;
        ``args`` (small) travel with each block's task."""
        parts = [dask.delayed(fn, pure=True)(x, c, w, *args) for x, c, w in self._blocks]
        self.n_computes += 1
        return dask.compute(*parts)

    def reduce(self, fn, *args):
        """``sum over blocks of fn(X_block, cell_block, weight_block, *args)``, one compute;
        ``fn`` returns a tuple of arrays."""
        return _sum_parts(self.blockwise(fn, *args))


# -- per-block functions (module level: the workers import them) ---------------------------------
def _results_in_turn(parts, groups=4):
    """The computed values of ``parts`` in order, from one graph (one ``dask.compute``'s
    reads of X), brought to a distributed client a quarter at a time.

    The rows a block of minibatches gathers are copied into one array: received at once,
    they would be held twice on the client (the parts and their copy); a quarter at a time,
    1.25 times. The workers hold the parts until they are fetched, as for ``dask.compute``.
    """
    client = getattr(dask.base.get_scheduler(), "__self__", None)
    if client is None or not hasattr(client, "compute") or not hasattr(client, "gather"):
        yield from dask.compute(*parts)
        return
    futures = client.compute(list(parts))
    step = -(-len(futures) // groups)
    for at in range(0, len(futures), step):
        batch = futures[at : at + step]
        futures[at : at + step] = [None] * len(batch)
        values = client.gather(batch)
        for future in batch:
            future.release()
        del batch
        values.reverse()
        while values:  # each part let go once the caller has copied it
            yield values.pop()


def _take_rows(X, cell, w, rows):
    return np.ascontiguousarray(X[rows], dtype=np.float64), cell[rows], w[rows]


def _moments_first(X, cell, w, total):
    Xf = np.asarray(X, dtype=np.float64)
    return (np.abs(Xf).max(axis=0, initial=0.0), (w / total) @ Xf)


def _moments_second(X, cell, w, total, unit, mean):
    dev = np.asarray(X, dtype=np.float64) / unit - mean
    wt = w / total
    return (wt @ dev, wt @ (dev * dev))


def _gram_block(X, cell, w, U, H, inv):
    """Gram sums of the weight columns ``(u, 1, |W_1|, ..., |W_m|)`` and W's moments."""
    B = np.asarray(X, dtype=np.float64)
    if inv is not None:
        B = B * inv
    cols = [w * U[cell], np.ones(len(w))]
    Wb = w[:, None] * H[cell]
    cols += [np.abs(Wb[:, k]) for k in range(H.shape[1])]
    C = np.column_stack(cols)
    # One matrix product per column (BLAS), not one einsum over all three indices: 0.38 s
    # against 1.28 s for 250000 x 20 rows and three columns.
    G = np.stack([(B * C[:, j, None]).T @ B for j in range(C.shape[1])])
    return G, C.T @ B, C.sum(axis=0), (Wb**2).sum(axis=0), np.abs(Wb).sum(axis=0)


def _full_block(X, cell, w, v, b0, loss, B, U, H):
    """The sums of :meth:`LinearProblem.full_evaluation` over one block."""
    A = np.asarray(X, dtype=np.float64)
    z = A @ v + b0
    b, u = B[cell], w * U[cell]
    margin = b * z
    f = np.dot(u, loss.value(margin))
    r = b * u * loss.derivative(margin)
    out = [np.array([f]), A.T @ r, np.array([r.sum()])]
    if H.shape[1]:
        Wb = w[:, None] * H[cell]
        p = expit(z)
        dp = p * (1.0 - p)
        DW = dp[:, None] * Wb
        out += [p @ Wb, A.T @ DW, DW.sum(axis=0)]
    return tuple(out)


def _second_block(X, cell, w, v, b0, loss, B, U, H):
    """:func:`_full_block`'s sums and the weighted Gram matrices of ``[X, 1]`` of the
    objective's and each constraint's second derivative in the score."""
    out = _full_block(X, cell, w, v, b0, loss, B, U, H)
    A = np.asarray(X, dtype=np.float64)
    z = A @ v + b0
    b, u = B[cell], w * U[cell]
    cols = [u * loss.second_derivative(b * z)]
    if H.shape[1]:
        p = expit(z)
        d2 = p * (1.0 - p) * (1.0 - 2.0 * p)
        Wb = w[:, None] * H[cell]
        cols += [d2 * Wb[:, k] for k in range(H.shape[1])]
    Aa = np.column_stack([A, np.ones(len(z))])
    return (*out, np.stack([(Aa * col[:, None]).T @ Aa for col in cols]))


def _scores_of(expr, X):
    """The scores of a block by the formula ``expr`` of :class:`DaskScores`, in its order of
    operations (so that they are the bits an array of persisted scores would hold)."""
    kind = expr[0]
    if kind == "x":
        return np.asarray(X, dtype=np.float64) @ expr[1] + expr[2]
    if kind == "scale":
        return _scores_of(expr[1], X) * expr[2]
    if kind == "shift":
        return _scores_of(expr[1], X) + expr[2]
    return _scores_of(expr[1], X) + _scores_of(expr[2], X)  # "sum"


def _stats_block(X, cell, w, expr, H, mask):
    """What the steering reads of the scores of a block (see :meth:`DaskScores.stats`)."""
    z = _scores_of(expr, X)
    WH = w[:, None] * H[cell]
    positive = z > 0
    out = [
        positive.astype(float) @ WH,  # the hard rates' sums
        expit(z) @ WH,  # the soft rates' sums
        np.ones(len(z)) @ WH,  # at every prediction 1
        np.array([expit(z).sum(), positive.sum()]),
        np.array([np.max(np.abs(z), initial=0.0)]),  # (the largest over blocks, not a sum)
    ]
    if mask is not None:
        keep = w * mask[cell]
        out.append(np.array([keep @ positive, keep.sum()]))
    return tuple(out)


#: Points of the segment search's grid (:meth:`DaskLinearProblem.segment_point`).
_SEGMENT_FINE = _SEGMENT_GRID**_SEGMENT_PASSES


def _segment_block(X, cell, w, expr_in, expr_out, H):
    """Per constraint, the changes of the hard sums between the points ``i / _SEGMENT_FINE``
    of the segment from scores ``expr_in`` to ``expr_out`` (their cumulative sum is the hard
    sum at each point).

    A row's score ``(1 - t) z_in + t z_out`` is linear in ``t``: it is positive on the grid
    points below its crossing (falling) or above it (rising), found by a search of the grid
    and checked, with the formula the points are scored by, at the grid points around it.
    """
    z_in, z_out = _scores_of(expr_in, X), _scores_of(expr_out, X)
    WH = w[:, None] * H[cell]
    G = _SEGMENT_FINE
    ts = np.linspace(0.0, 1.0, G + 1)

    def positive_at(i, rows):
        t = ts[i]
        return (1.0 - t) * z_in[rows] + t * z_out[rows] > 0

    diff = np.zeros((G + 2, H.shape[1]))
    p_in, p_out = z_in > 0, z_out > 0
    diff[0] += WH[p_in & p_out].sum(axis=0)  # positive everywhere
    moving = np.flatnonzero(p_in != p_out)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = z_in[moving] / (z_in[moving] - z_out[moving])
    # First grid point past the crossing for a falling row (positive before it), first one
    # positive for a rising row; then moved to where the formula itself changes sign.
    k = np.clip(np.searchsorted(ts, cross, side="left"), 0, G + 1)
    falling = p_in[moving]
    for _ in range(3):
        below = np.clip(k - 1, 0, G)
        back = (k > 0) & (positive_at(below, moving) != falling)
        k = np.where(back, k - 1, k)
        at = np.clip(k, 0, G)
        ahead = (k <= G) & (positive_at(at, moving) == falling)
        k = np.where(ahead, k + 1, k)
    for j in range(H.shape[1]):
        Wj = WH[moving, j]
        # falling: +W from 0 up to k; rising: +W from k on.
        diff[:, j] += np.bincount(k, weights=np.where(falling, -Wj, Wj), minlength=G + 2)
        diff[0, j] += Wj[falling].sum()
    return (diff[: G + 1],)


def _tree_sum(parts):
    """The sum of delayed values, pairwise on the workers (one value reaches the client)."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [
            dask.delayed(np.add, pure=True)(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return parts[0]


class DaskScores:
    """The scores of every row at a point, as a formula evaluated where the rows are.

    No score is held anywhere: each pass that reads them (the rates the steering asks for,
    the segment search) scores the blocks of ``X`` it reads. A formula is the scores of a
    point (``("x", v, b0)``, ``X @ v + b0``), or one scaled, shifted, or the sum of two:
    ``z * k``, ``z + c`` and ``z1 + z2`` build them, in the order of operations of the same
    expressions on arrays. Everything the steering reads of one set of scores (the hard
    and soft rates, the rates at every prediction 1, the mean probability, the count of
    positive predictions, the largest absolute score, and a share of positive predictions)
    comes from one reduction, made at the first question (:meth:`stats`).
    """

    def __init__(self, problem, expr):
        self._problem = problem
        self.expr = expr
        self._stats = None

    def __len__(self):
        return self._problem.A_con.n_rows

    def __mul__(self, k):
        return DaskScores(self._problem, ("scale", self.expr, float(k)))

    def __add__(self, other):
        if isinstance(other, DaskScores):
            return DaskScores(self._problem, ("sum", self.expr, other.expr))
        return DaskScores(self._problem, ("shift", self.expr, float(other)))

    def stats(self, mask=None):
        """``[hard sums, soft sums, sums at all ones, (sum of sigmoids, positives), (largest
        |score|,), (share hits, share total)]``: one reduction at the first call, and one
        more for a share of another ``mask`` of cells."""
        key = None if mask is None else np.asarray(mask, dtype=float).tobytes()
        if self._stats is not None and key in (None, self._stats[0]):
            return self._stats[1]
        mask = None if key is None else np.asarray(mask, dtype=float)
        parts = self._problem.A_con.blockwise(_stats_block, self.expr, self._problem.H, mask)
        out = _sum_parts([p[:4] + p[5:] for p in parts])
        out.insert(4, np.max([p[4] for p in parts], axis=0))
        self._stats = (key, out)
        return self._stats[1]

    def mean_probability(self) -> float:
        """The mean of ``sigmoid(score)`` over the rows."""
        return float(self.stats()[3][0]) / len(self)

    def positive_count(self) -> int:
        return int(self.stats()[3][1])

    def abs_max(self) -> float:
        return float(self.stats()[4][0])

    def ones_like(self):
        """Scores positive on every row, whose rates are read from this one's reduction."""
        return _AllPositive(self)


class _AllPositive:
    """:meth:`DaskScores.ones_like`."""

    def __init__(self, scores):
        self.scores = scores

    def stats(self, mask=None):
        hard, _, ones, *rest = self.scores.stats()
        return [ones, ones, ones, *rest]


def column_moments(rows: DaskRows, total: float):
    """Weighted ``(mean, std)`` of the columns of ``rows`` under their weights (summing to
    ``total``): the two passes and the corrected two-pass formula of the in-memory
    ``_column_moments`` (see there), each pass one reduction."""
    absmax, mean = rows.reduce(_moments_first, total)
    bad = np.flatnonzero(~np.isfinite(absmax))
    if len(bad):
        # Checked in the first pass over X, before any solve (a NaN would otherwise end
        # the fit in a LinAlgError of the set-up's Gram matrices).
        raise ValueError(f"Input X contains NaN or infinity (columns {bad[:10].tolist()}).")
    check_not_subnormal(absmax)
    unit = np.where(absmax > 0, absmax, 1.0)
    mean = mean / unit
    first, second = rows.reduce(_moments_second, total, unit, mean)
    std = np.sqrt(np.clip(second - first * first, 0.0, None))
    std[std <= ROUNDING_SPREAD] = 0.0
    return (mean + first) * unit, std * unit
