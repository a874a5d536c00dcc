"""The multinomial problem on rows that live in a Dask collection.

:class:`DaskMultinomialProblem` is :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem`
whose ``X`` no process holds: the rows' labels, cells and weights (a few numbers a row, against
``d`` for ``X``) are on the client as in memory, and on the workers as two dask arrays
chunked like ``X`` (each row's cell, whose label is ``cell % K``, and its weight). Every read
of all rows is one ``dask.compute``: each block's partial sums, computed where the block is
and summed on the client:

* a full evaluation (objective value and gradient, constraint values and the sums that give
  ``J^T v`` for any ``v``, the Jacobian itself): the deterministic finish costs one compute
  per evaluation;
* the Hessian of its Newton steps (``K (K + 1) / 2`` weighted Gram matrices of ``d + 1``
  columns, one compute), or above ``_HESSIAN_MAX_PARAMS`` parameters one compute per
  Hessian-vector product;
* the smoothness bound (the weighted Gram matrices of the rows, one pass);
* the scores of every row at a point (``n x K`` numbers brought to the client, a ``d / K``-th
  of ``X``): the steering to the bound on predictions and the training report read them.

The multi-class fit solves on all rows (``preset="default"``; the minibatch search of the
other presets is refused by the estimator on dask input); the few minibatches its set-up
draws are brought to the client (one compute each).

Imported only for dask input.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator
from scipy.special import log_softmax, softmax

from ._dask_rows import DaskRows
from .multinomial import (
    MultinomialProblem,
    _last_kept,
    curvature_product,
    pair_grams,
    pair_weights,
)

__all__ = ["DaskMultinomialProblem"]


class _Shape:
    """What :class:`MultinomialProblem`'s constructor reads of ``X``: its shape."""

    def __init__(self, shape):
        self.shape = shape


# -- per-block functions (module level: the workers import them) -------------------------------
def _scores_block(X, cell, w, W, b):
    return np.asarray(X, dtype=np.float64) @ W.T + b


def _evaluation_block(X, cell, w, W, b, K, M, u_factor, omega_factor):
    """One block's sums of :meth:`DaskMultinomialProblem.full_evaluation`: the weighted
    cross-entropy, ``G^T [X, 1]`` of the objective and of each constraint's unit vjp, and
    the constraint sums (the in-memory oracles' formulas, row by row)."""
    A = np.asarray(X, dtype=np.float64)
    z = A @ W.T + b
    rows = np.arange(len(cell))
    y = cell % K
    u = w * u_factor
    P = softmax(z, axis=1)
    ce = -log_softmax(z, axis=1)[rows, y]
    G = P * u[:, None]
    G[rows, y] -= u
    out = [np.array([u @ ce]), G.T @ A, G.sum(axis=0)]
    m = M.shape[2]
    if m:
        om = w * omega_factor[cell]
        Ms = M[cell]  # (b, K, m)
        out.append(om @ np.einsum("bk,bkm->bm", P, Ms))
        gW, gb = np.empty((m, K, A.shape[1])), np.empty((m, K))
        for j in range(m):
            a = Ms[:, :, j]
            Gj = om[:, None] * P * (a - np.sum(P * a, axis=1, keepdims=True))
            gW[j], gb[j] = Gj.T @ A, Gj.sum(axis=0)
        out += [gW, gb]
    return tuple(out)


def _curvature_inputs(X, cell, w, W, b, K, M, u_factor, omega_factor, mu):
    """A block's ``(A, P, u, omega, v)`` for :func:`~.multinomial.pair_weights` (the weights
    not divided by the rows' count)."""
    A = np.asarray(X, dtype=np.float64)
    P = softmax(A @ W.T + b, axis=1)
    v = (M @ mu)[cell] if M.shape[2] else None
    return A, P, w * u_factor, w * omega_factor[cell], v


def _hessian_block(X, cell, w, *args):
    """One block's pair Gram matrices of the Hessian (:func:`~.multinomial.pair_grams`)."""
    A, P, u, om, v = _curvature_inputs(X, cell, w, *args)
    return (pair_grams(A, pair_weights(P, u, om, v)),)


def _hessian_product_block(X, cell, w, Wd, bd, *args):
    """One block's sums ``T^T A`` and ``T^T 1`` of a Hessian-vector product in the score
    directions ``A Wd^T + bd`` (:func:`~.multinomial.curvature_product`)."""
    A, P, u, om, v = _curvature_inputs(X, cell, w, *args)
    T = curvature_product(P, u, om, v, A @ Wd.T + bd)
    return T.T @ A, T.sum(axis=0)


def _gram_block(X, cell, w, tables):
    """Per weight column ``w ** power * table[cell]``: ``A^T diag A``, ``A^T col``, sum."""
    A = np.asarray(X, dtype=np.float64)
    out = []
    for power, table in tables:
        col = w**power * table[cell]
        out += [(A * col[:, None]).T @ A, col @ A, np.array([col.sum()])]
    return tuple(out)


class DaskMultinomialProblem(MultinomialProblem):
    """:class:`MultinomialProblem` on the rows of ``rows`` (see the module docstring).

    Parameters
    ----------
    rows : DaskRows
        ``X`` chunked by rows, each row's cell (:func:`~.multinomial.cell_codes`) and weight.
    y, n_classes, sample_weight, cells, constraints, **kwargs
        As :class:`MultinomialProblem` (the per-row arrays in memory, in the rows' order).
    """

    def __init__(self, rows: DaskRows, y, n_classes, sample_weight, cells, constraints, **kw):
        self.rows = rows
        super().__init__(
            _Shape(rows.A.shape), y, n_classes, sample_weight, cells, constraints, **kw
        )
        self.X = rows.A

    # Row i's objective weight is w_i n / sum(w), its constraint weight w_i n / (its cell's
    # weight): a factor, and a factor per cell, of its weight (the blocks form them).
    def _factors(self):
        n = self.rows.n_rows
        with np.errstate(divide="ignore"):
            omega = np.where(self.cell_weight > 0, n / self.cell_weight, 0.0)
        return n / self.cell_weight.sum(), omega

    def _smoothness_bound(self):
        """As :meth:`MultinomialProblem._smoothness_bound`, its three Gram matrices in one
        pass over the rows."""
        u_factor, omega = self._factors()
        n_cells = len(self.cell_weight)
        tables = [(1, np.full(n_cells, u_factor))]
        if self.n_constraints:
            c = float(np.abs(self.M).max())
            tables += [(2, omega**2), (1, omega * c)]
        sums = self.rows.reduce(_gram_block, tables)
        tops = [
            self._gram_top_from_sums(G, m, float(total[0]), self.rows.n_rows)
            for G, m, total in (sums[3 * k : 3 * k + 3] for k in range(len(tables)))
        ]
        L0 = 0.5 * tops[0]
        if not self.n_constraints:
            return float(L0), 0.0
        jac2 = 0.25 * tops[1] * float(np.max(np.sum(self.M**2, axis=(1, 2))))
        cmax = float(np.sum(np.abs(self.offset)) + np.abs(self.M).sum(axis=(1, 2)).max())
        return float(L0), float(jac2 + cmax * tops[2])

    def _scaled_gram_top(self, weights):  # pragma: no cover - replaced by _smoothness_bound
        raise NotImplementedError

    # -- reads of all rows -----------------------------------------------------------------
    def scores(self, x, rows=slice(None)):
        """The ``(n, K)`` scores of every row, brought to the client (one compute)."""
        if not (isinstance(rows, slice) and rows == slice(None)):
            raise NotImplementedError("Scores of a subset of the rows of a dask problem.")
        W, b = self._split(x)
        return np.concatenate(self.rows.blockwise(_scores_block, W, b))

    def _gathered(self, x, batch):
        """``(A, P, y, u, omega, Ms)`` of the rows of a minibatch, brought here in one
        compute (the solver's set-up draws one even when it then solves on all rows)."""
        A, cell, w, local = self.rows.gather(batch)
        A, cell, w = A[local], cell[local], w[local]
        W, b = self._split(x)
        u_factor, omega = self._factors()
        P = softmax(A @ W.T + b, axis=1)
        return A, P, cell % self.K, w * u_factor, w * omega[cell], self.M[cell]

    def _gathered_back(self, G, A):
        return self._back_sums(G.T @ A, G.sum(axis=0))

    def objective(self, x, batch):
        if isinstance(batch, slice):
            return self.full_evaluation(x)[1]
        A, P, y, u, _, _ = self._gathered(x, batch)
        G = P * u[:, None]
        G[np.arange(len(y)), y] -= u
        return self._gathered_back(G, A) / len(y)

    def objective_value(self, x, batch):
        if isinstance(batch, slice):
            return self.full_evaluation(x)[0]
        A, P, y, u, _, _ = self._gathered(x, batch)
        return float(np.mean(u * -np.log(np.clip(P[np.arange(len(y)), y], 1e-300, None))))

    def constraints(self, x, batch):
        if isinstance(batch, slice):
            raise NotImplementedError("Per-row constraint values of all rows on dask input.")
        A, P, _, _, om, Ms = self._gathered(x, batch)
        C = om[:, None] * np.einsum("bk,bkm->bm", P, Ms) + self.offset

        def vjp(U):
            a = np.einsum("bkm,bm->bk", Ms, U)
            return self._gathered_back(
                om[:, None] * P * (a - np.sum(P * a, axis=1, keepdims=True)), A
            )

        return C, vjp

    def full_evaluation(self, x, rng=None, batches=None):
        """``(f0, grad, c, jac_t)`` over all rows in one compute."""
        if batches is not None:
            return super().full_evaluation(x, rng, batches)
        W, b = self._split(x)
        u_factor, omega = self._factors()
        sums = self.rows.reduce(_evaluation_block, W, b, self.K, self.M, u_factor, omega)
        n = self.rows.n_rows
        f = float(sums[0][0]) / n
        grad = self._back_sums(sums[1], sums[2]) / n
        if not self.n_constraints:
            return f, grad, np.zeros(0), lambda v: np.zeros_like(grad)
        c = sums[3] / n + self.offset
        gW, gb = sums[4], sums[5]

        def jac_t(v):
            v = np.asarray(v, dtype=float) / n
            return self._back_sums(np.tensordot(v, gW, axes=1), v @ gb)

        return f, grad, c, jac_t

    def second_order_evaluation(self, x):
        """``(f0, grad, c, J, hessian)`` over all rows: :meth:`full_evaluation`'s compute
        (whose sums hold the Jacobian), and ``hessian(mu)`` one compute more (a matrix, or
        above ``_HESSIAN_MAX_PARAMS`` parameters an operator, a compute per product); see
        :meth:`MultinomialProblem.second_order_evaluation`."""
        W, b = self._split(x)
        u_factor, omega = self._factors()
        sums = self.rows.reduce(_evaluation_block, W, b, self.K, self.M, u_factor, omega)
        n, m = self.rows.n_rows, self.n_constraints
        f = float(sums[0][0]) / n
        grad = self._back_sums(sums[1], sums[2]) / n
        if m:
            c = sums[3] / n + self.offset
            J = np.array([self._back_sums(sums[4][j], sums[5][j]) / n for j in range(m)])
        else:
            c, J = np.zeros(0), np.zeros((0, self.n_params))
        curvature = (W, b, self.K, self.M, u_factor, omega)
        return f, grad, c, J, _last_kept(lambda mu: self._dask_hessian(curvature, mu))

    def _dask_hessian(self, curvature, mu):
        n = self.rows.n_rows
        args = (*curvature, mu)
        if self._operator_hessian():

            def matvec(s):
                Wd, bd = self._split(np.ravel(s))
                gW, gb = self.rows.reduce(_hessian_product_block, Wd, bd, *args)
                return self._back_sums(gW, gb) / n

            return LinearOperator((self.n_params,) * 2, matvec=matvec, dtype=float)
        (grams,) = self.rows.reduce(_hessian_block, *args)
        return self.hessian_from_grams(grams / n)

    def describe_computes(self) -> str:
        """`` computes=N``: the graphs the fit has sent so far (``verbose`` lines)."""
        return f" computes={self.rows.n_computes}"
