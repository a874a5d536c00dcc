"""Rows that live in a Dask collection: a :class:`LinearProblem` whose data no process holds.

The estimators' per-row arrays are functions of a row's *cell* (its label and group) and its
weight: the margin ``b_j`` is the label's sign, and the objective weight and every constraint
weight are the row's weight times a constant of its cell (``u_j = w_j U[c_j]``,
``W[j] = w_j H[c_j]``). So the problem keeps, per row, only the two dask arrays ``cell`` and
``weight`` (chunked like ``X``), and per cell the small tables ``B``, ``U``, ``H``; every
per-row array is formed block by block where it is read, never as an n-vector on the client.

Where the rows are read:

* the minibatches of a block of PStorm iterations are drawn on the client exactly as for data
  in memory (uniformly with replacement over all rows, by ``random_state``), then the distinct
  rows drawn are brought to the client in one ``dask.compute`` and the compiled block runs on
  them: each iteration's estimate is the in-memory one on the same rows, hence unbiased;
* everything that reads all rows (the smoothness set-up, every stop test, the hard rates of
  the steering) is a reduction: a function of each block (the parameters, a few hundred
  bytes, go with it) whose small results are summed on the client, one ``dask.compute`` a
  pass.

Imported only for dask input; numpy and scipy.sparse data never reach this module.
"""

from __future__ import annotations

import copy

import dask
import numpy as np
from scipy.special import expit

from ._gram import GRAM_MAX_PARAMS
from ._numeric import BOUND_EPS, ROUNDING_SPREAD, check_not_subnormal
from ._rows import _Rows
from .linear import LinearProblem

__all__ = ["DaskRows", "DaskLinearProblem", "column_moments"]

#: Most bytes of rows brought to the client for one block of PStorm iterations (and at most
#: an eighth of all rows): 64 MiB, 419430 rows at d = 20. A gather reads every partition
#: (the rows drawn fall in all of them), so its time is that of a read of X, whatever the
#: rows it brings: on 10**6 x 20 rows made on two workers, 0.30 s for 16384 rows, 0.33 s for
#: 131072, 0.46 s for 524288 (a pass not reading X: 0.02 s; see the user guide).
_GATHER_BYTES = 64 << 20
#: A stop test costs as much as this many gathers: both read every partition of X once
#: (10**6 x 20 rows: a test 0.27-0.40 s, a gather 0.16-0.30 s). The solver spaces its tests
#: so that the minibatch work between two of them costs at most one test (``check_work``).
_TEST_GATHERS = 1.0
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


class DaskLinearProblem(LinearProblem):
    """A :class:`LinearProblem` on rows held by a Dask cluster (see the module docstring).

    Parameters
    ----------
    rows : DaskRows
    B : ndarray of shape (n_cells,)
        The margin (label sign) of each cell.
    U : ndarray of shape (n_cells,)
        Objective weight per unit of row weight, of each cell (zero: not an objective row);
        normalised here so that the row weights ``w_j U[c_j]`` have mean one.
    H : ndarray of shape (n_cells, m)
        Constraint weights per unit of row weight, of each cell: ``W[j] = w_j H[c_j]`` over
        all rows (zero: not a constraint row).
    cell_weight : ndarray of shape (n_cells,)
        The total row weight of each cell.
    loss, offset, inequality, fit_intercept, h, constraint_names, levels, feature_scale, \
feature_center
        As for :class:`LinearProblem`.
    """

    #: Stop tests read all rows (see ``stoc_ialm``'s ``check_sample``): a subsample drawn
    #: uniformly falls in every partition, so it reads the partitions a full test reads, and
    #: it would bring its rows (up to an eighth of all rows per kind) to the client, where a
    #: full test is one reduction returning a few vectors.
    subsample_checks = False

    def __init__(
        self,
        rows,
        B,
        U,
        H,
        cell_weight,
        *,
        loss,
        offset,
        inequality=True,
        fit_intercept=False,
        h=None,
        constraint_names=None,
        levels=None,
        feature_scale=1.0,
        feature_center=None,
        smoothness=None,
    ):
        from ..solver.prox import NoProx

        n, d = rows.A.shape
        if d + fit_intercept > GRAM_MAX_PARAMS:
            raise ValueError(
                f"Dask input supports up to {GRAM_MAX_PARAMS} parameters (the smoothness "
                f"set-up sums d x d Gram matrices on the workers); got {d + fit_intercept}."
            )
        H = np.asarray(H, dtype=float).reshape(len(B), -1)
        super(LinearProblem, self).__init__(n, n if H.shape[1] else 0)
        self.setup_evaluations = 0
        self.A_obj = self.A_con = rows
        self.n_features = d
        self.fit_intercept = bool(fit_intercept)
        self.n_params = d + self.fit_intercept
        self.cell_weight = np.asarray(cell_weight, dtype=float)
        self.B = np.asarray(B, dtype=float)
        self.H = H
        self.u = self._row_mean_one(U)
        # No per-row array lives on the client: the oracles of a minibatch form theirs from
        # the rows brought here (see _view).
        self.b = self.bu = self.W = None
        self.loss = loss
        self.offset = np.asarray(offset, dtype=float).reshape(H.shape[1])
        self.n_constraints = H.shape[1]
        self.inequality = np.broadcast_to(np.asarray(inequality, dtype=bool), (H.shape[1],))
        self.levels = levels
        self.h = NoProx() if h is None else h
        self.constraint_names = constraint_names
        self.feature_scale = (
            float(feature_scale)
            if np.ndim(feature_scale) == 0
            else np.asarray(feature_scale, dtype=float).reshape(d)
        )
        self._inv_scale = 1.0 / self.feature_scale
        self._scaled = np.any(self.feature_scale != 1.0)
        if feature_center is not None and not np.any(feature_center):
            feature_center = None
        self.feature_center = feature_center
        self.paper_settings = None
        self.smoothness = self.smoothness_bound() if smoothness is None else tuple(smoothness)
        self._last_sums = None

    def _row_mean_one(self, U):
        """Cell factors ``U`` scaled so that the row weights ``w_j U[c_j]`` have mean one (from
        the cells' weight totals: no pass over the rows)."""
        U = np.asarray(U, dtype=float)
        return U / (U @ self.cell_weight / self.n_objective_samples)

    # -- rows brought to the client --------------------------------------------------------------
    def _view(self, idx):
        """An in-memory :class:`LinearProblem` on the distinct rows of ``idx`` (with the
        per-row arrays of those rows), and ``idx`` as indices into them."""
        Xr, cr, wr, local = self.A_obj.gather(idx)
        view = LinearProblem.__new__(LinearProblem)
        view.__dict__.update(self.__dict__)
        view.A_obj = view.A_con = _Rows(Xr)
        view.b = self.B[cr]
        view.u = wr * self.u[cr]
        view.bu = view.b * view.u
        view.W = wr[:, None] * self.H[cr]
        return view, local

    def _rows_here(self, batches):
        """An in-memory problem on the rows of ``batches`` (brought here in one
        ``dask.compute``) and ``batches`` as indices into them."""
        kept = [np.asarray(b) for b in batches if b is not None]
        view, local = self._view(np.concatenate([b.ravel() for b in kept]))
        out, at = [], 0
        for b in batches:
            if b is None:
                out.append(None)
                continue
            out.append(local[at : at + np.size(b)].reshape(np.shape(b)))
            at += np.size(b)
        return view, tuple(out)

    def search_sample(self, rng):
        """An in-memory :class:`LinearProblem` on a sample of the rows, brought here in one
        ``dask.compute``: the stochastic phase finds its multipliers there, and the finish
        goes on on all rows (see ``stoc_ialm``).

        Each partition gives the same share of its rows (:meth:`gather_rows` in all),
        drawn without replacement by ``rng``: the sample depends on the seed and the
        chunking only, and is a uniform sample of the rows stratified by partition. Its
        per-row arrays are the rows' own (margins, objective and constraint weights), so its
        functions are means over the sample of the same terms.
        """
        rows = self.A_obj
        n = rows.n_rows
        share = min(1.0, self.gather_rows() / n)
        idx = []
        for start, size in zip(rows._starts[:-1], rows.A.chunks[0], strict=True):
            k = min(size, int(np.rint(size * share)))
            idx.append(start + np.sort(rng.choice(size, k, replace=False)))
        idx = np.concatenate(idx)
        view, _ = self._view(idx)
        view.setup_evaluations = 0
        view._last_sums = None
        m = self.n_constraints
        # Its means are over the sample's rows; the row weights stay those of all rows (their
        # mean over the sample is near one, as over all rows): the multipliers found are in
        # the units of the problem on all rows.
        super(LinearProblem, view).__init__(len(idx), len(idx) if m else 0)
        view.sample_share = share
        return view

    def _block_rows(self, draws):
        return self._view(draws)

    def gather_rows(self) -> int:
        """The most rows drawn in one block of minibatches (one ``dask.compute``):
        ``_GATHER_BYTES`` of rows, and at most an eighth of all rows."""
        row_bytes = 8 * self.n_features
        return max(1, min(_GATHER_BYTES // row_bytes, self.A_obj.n_rows // 8))

    def check_work(self) -> float:
        """The minibatch work (per-row evaluations) that costs as much as one stop test.

        On a cluster a test and a block of minibatches cost the same: one read of every
        partition of ``X`` (a test's arithmetic on the workers and a block's rows crossing
        to the client are small beside it). A block draws up to :meth:`gather_rows` rows,
        each evaluated at two points: the work between two tests is at most
        ``_TEST_GATHERS`` such blocks, not the ``n`` rows a test evaluates (which would let
        ``n / (2 gather_rows)`` reads of ``X`` pass between two tests).
        """
        return _TEST_GATHERS * 2 * self.gather_rows()

    def pstorm_block(self, est):
        """The compiled block of :class:`LinearProblem`, at most :meth:`gather_rows` rows
        brought to the client per block.

        A shorter block draws the same minibatches (the generator's stream is the same in
        one call or several), so the cap changes the cost, not the model.
        """
        run = super().pstorm_block(est)
        if run is None:
            return None
        draws = 1 + (self.n_constraints > 0) * (1 + (est.estimator == "independent"))
        cap = self.gather_rows()

        def capped(z, d, y, beta, *, batch_size, n_iter, **kwargs):
            n_iter = max(1, min(n_iter, cap // (batch_size * draws)))
            return run(z, d, y, beta, batch_size=batch_size, n_iter=n_iter, **kwargs)

        return capped

    def objective(self, x, batch):
        view, idx = self._view(batch)
        return LinearProblem.objective(view, x, idx)

    def objective_value(self, x, batch):
        view, idx = self._view(batch)
        return LinearProblem.objective_value(view, x, idx)

    def constraints(self, x, batch):
        view, idx = self._view(batch)
        return LinearProblem.constraints(view, x, idx)

    def objective_pair(self, x1, x2, batch, a1, a2):
        view, idx = self._view(batch)
        return LinearProblem.objective_pair(view, x1, x2, idx, a1, a2)

    def constraints_pair(self, x1, x2, batch):
        view, idx = self._view(batch)
        return LinearProblem.constraints_pair(view, x1, x2, idx)

    # -- reductions over all rows ----------------------------------------------------------------
    def _distinct_weight_columns(self):
        return list(range(self.n_constraints))

    def _gram_sums(self):
        inv = np.broadcast_to(self._inv_scale, (self.n_features,)) if self._scaled else None
        G, mu, total, sq, ab = self.A_obj.reduce(_gram_block, self.u, self.H, inv)
        self.setup_evaluations += self.A_obj.n_rows
        n = self.A_con.n_rows
        self._w_means = (sq / n, ab / n)
        if not self.n_constraints:
            G, mu, total = G[:1], mu[:1], total[:1]
        return list(G), list(mu), list(total), False

    def _weight_means(self):
        return self._w_means

    # W is not in memory: the penalty's bound stays column by column (no joint terms).
    def _joint_weights(self):
        return None

    def full_evaluation(self, x, rng=None, batches=None):
        """Objective value and gradient, constraint values and ``J^T`` over all rows: one
        pass, each block's sums computed where the block is; on the rows of ``batches``
        (brought here) when given."""
        if batches is not None:
            view, batches = self._rows_here(batches)
            return LinearProblem.full_evaluation(view, x, rng, batches)
        v, b0 = self._effective(x)
        key = self._evaluation_key(x)
        if self._last_sums is not None and self._last_sums[0] == key:
            # The point of the last second-order evaluation (the finish's last point, which
            # the run's last test judges): its sums, without a read of the rows.
            out = self._last_sums[1]
        else:
            out = self.A_obj.reduce(_full_block, v, float(b0), self.loss, self.B, self.u, self.H)
            self._last_sums = (key, tuple(out))
        return self._from_sums(x, out)

    def null_gradient(self):
        """:meth:`full_evaluation`'s gradient at ``x = 0``: on the cluster a pass is one
        reduction either way."""
        return self.full_evaluation(np.zeros(self.n_params))[1]

    def _evaluation_key(self, x):
        """What the sums of a pass at ``x`` depend on, beside the rows."""
        return tuple(np.asarray(a, dtype=float).tobytes() for a in (x, self.u, self.B, self.H))

    def _from_sums(self, x, out):
        """``full_evaluation``'s ``(f0, grad, c, jac_t)`` from the blocks' summed sums."""
        m = self.n_constraints
        n = self.A_obj.n_rows
        f, g, rsum = float(out[0][0]) / n, out[1], float(out[2][0])
        grad = self._finish_grad(g, rsum, n)
        if not m:
            return f, grad, np.zeros(0), lambda y: np.zeros_like(x)
        csum, G, gsum = out[3:]
        c = csum / n + self.offset

        def jac_t(y):
            y = np.asarray(y, dtype=float)
            return self._finish_grad(G @ y, float(gsum @ y), n)

        return f, grad, c, jac_t

    #: The Hessians come in the evaluation's own compute (see :meth:`second_order_evaluation`):
    #: no further read, and no further arithmetic on the client.
    curvature_passes = 0
    curvature_cost = 0.0

    def second_order_evaluation(self, x):
        """``(f0, grad, c, J, hessian)`` over all rows in one pass: :meth:`full_evaluation`'s
        values, the Jacobian ``J`` (``m x p``) and ``hessian(mu)``, the Hessian of
        ``g + mu . c``, for the finish's Newton steps (one compute each).

        On a cluster a compute costs more than its arithmetic: the objective's and each
        constraint's Hessian (``m + 1`` Gram matrices of ``d + 1`` columns) come in the
        evaluation's compute, before ``mu`` (which depends on the constraint values) is
        known, and ``hessian`` combines them without a further compute."""
        v, b0 = self._effective(x)
        out = self.A_obj.reduce(_second_block, v, float(b0), self.loss, self.B, self.u, self.H)
        *sums, grams = out
        self._last_sums = (self._evaluation_key(x), tuple(sums))
        f, grad, c, jac_t = self._from_sums(x, sums)
        n, p, d = self.A_obj.n_rows, self.n_params, self.n_features
        # The scores are affine in x: z = [a, 1] @ M x + const, with M^T's columns the
        # gradients of the score's unit sums (``_finish_grad`` is linear in them).
        eye = np.eye(d + 1)
        Mt = np.column_stack([self._finish_grad(e[:d], e[d], 1) for e in eye])
        Hs = np.einsum("pi,kij,qj->kpq", Mt, grams, Mt) / n
        m = self.n_constraints
        J = np.vstack([jac_t(e) for e in np.eye(m)]) if m else np.zeros((0, p))
        return f, grad, c, J, lambda mu: Hs[0] + np.tensordot(mu, Hs[1:], axes=1)

    def describe_computes(self) -> str:
        """`` computes=N``: the graphs the fit has sent so far (``verbose`` lines)."""
        return f" computes={self.A_obj.n_computes}"

    def full_evaluation_cost(self) -> int:
        return self.A_obj.n_rows

    def constraint_scores(self, x):
        """The scores of every row at ``x``, as a :class:`DaskScores`: no pass now, and the
        rates asked of them share one pass over ``X``."""
        v, b0 = self._effective(x)
        return DaskScores(self, ("x", np.asarray(v, dtype=float), float(b0)))

    def rate_constraints(self, scores, *, hard=True, offset=None):
        s = scores.stats()[0 if hard else 1]
        return s / self.A_con.n_rows + (self.offset if offset is None else offset)

    def positive_share(self, scores, cells):
        """The weighted share of rows in ``cells`` (a mask over the cells) whose score is
        positive."""
        hits, total = scores.stats(cells)[5]
        return float(hits / total)

    def smallest_weight_share(self, cells):
        """The smallest positive row weight in ``cells`` (a mask over the cells), as a share
        of their total weight (from the cells' smallest weights: no pass)."""
        mask = np.asarray(cells, dtype=bool)
        return float(self.cell_min_weight[mask].min()) / float(self.cell_weight[mask].sum())

    def segment_point(self, units, z_in, z_out, offset):
        """A point ``t`` of the segment from scores ``z_in`` to ``z_out`` where every hard value
        is ``<= 0``, within ``_SEGMENT_GRID ** -_SEGMENT_PASSES`` of the first such point.

        The in-memory steering sorts the rows' events along the segment. Here one reduction
        gives the hard values at every point of a grid of ``_SEGMENT_GRID ** _SEGMENT_PASSES``
        steps; the search reads them as ``_SEGMENT_PASSES`` grids of ``_SEGMENT_GRID`` steps,
        each refining the last between the last point that misses the bound and the first
        that meets it.
        """
        rows = self.A_con
        parts = [
            dask.delayed(_segment_block, pure=True)(x, c, w, z_in.expr, z_out.expr, self.H)
            for x, c, w in rows._blocks
        ]
        rows.n_computes += 1
        (diff,) = dask.compute(_tree_sum(parts))[0]
        hard = np.cumsum(diff, axis=0) / rows.n_rows + offset
        ok = np.all(units.values(hard) <= BOUND_EPS, axis=1)
        ts = np.linspace(0.0, 1.0, _SEGMENT_FINE + 1)
        lo, span = 0, _SEGMENT_FINE
        for _ in range(_SEGMENT_PASSES):
            step = span // _SEGMENT_GRID
            grid = lo + step * np.arange(_SEGMENT_GRID + 1)
            found = np.flatnonzero(ok[grid])
            i = int(found[0]) if len(found) else _SEGMENT_GRID
            if i == 0:
                return float(ts[lo])
            lo, span = int(grid[i - 1]), step
        return float(ts[lo + span])

    def with_objective_weights(self, weights, *, overwrite=False):
        """The same problem with objective weights ``weights`` per unit of row weight, one per
        cell (as :attr:`u` is); its smoothness bound is recomputed (one pass)."""
        other = copy.copy(self)
        other.u = self._row_mean_one(np.asarray(weights, dtype=float).reshape(len(self.B)))
        other.setup_evaluations = 0
        other.smoothness = other.smoothness_bound()
        return other

    def column_moments(self, total):
        """Weighted ``(mean, std)`` of the columns under the row weights (summing to
        ``total``): :func:`column_moments` of the rows."""
        self.setup_evaluations += 2 * self.A_obj.n_rows
        return column_moments(self.A_obj, total)


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
