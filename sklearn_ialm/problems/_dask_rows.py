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

from ._dask_reads import (
    _SEGMENT_FINE,
    _SEGMENT_GRID,
    _SEGMENT_PASSES,
    DaskRows,
    DaskScores,
    _full_block,
    _gram_block,
    _second_block,
    _segment_block,
    _sum_parts,  # noqa: F401 (the dask data source of the estimators reads it from here)
    _tree_sum,
    column_moments,
)
from ._gram import GRAM_MAX_PARAMS
from ._numeric import BOUND_EPS
from ._rows import _Rows
from ._smoothness import _LazyBound
from .linear import LinearProblem

__all__ = ["DaskRows", "DaskLinearProblem", "DaskScores", "column_moments"]

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
        self._last_sums = None
        if smoothness is None:
            # Taken when first read, as in memory: only the stochastic phase reads it, so a
            # solve without one (Neyman-Pearson's re-weighted solves) reads no row for it.
            self._bound, self._owns_bound = _LazyBound(self), True
        else:
            self.smoothness = smoothness

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
        cell (as :attr:`u` is); its smoothness bound is its own (one pass, when read)."""
        other = copy.copy(self)
        other.u = self._row_mean_one(np.asarray(weights, dtype=float).reshape(len(self.B)))
        other.setup_evaluations = 0
        other._bound, other._owns_bound = _LazyBound(other), True
        return other

    def column_moments(self, total):
        """Weighted ``(mean, std)`` of the columns under the row weights (summing to
        ``total``): :func:`column_moments` of the rows."""
        self.setup_evaluations += 2 * self.A_obj.n_rows
        return column_moments(self.A_obj, total)
