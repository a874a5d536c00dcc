"""The multinomial (softmax) logistic model under constraints on per-class rates.

Scores ``z_i = W a_i + b`` for ``K`` classes, soft predictions ``p_i = softmax(z_i)`` and

    ``g(x) = sum_i u_i CE(p_i, y_i) / sum_i u_i``,
    ``c_j(x) = sum_r sign_{jr} rate_r(x) + offset_j``,

where a *rate* ``r`` is the weighted mean of ``p_{i, c_r}`` over the rows of one set of
cells (a cell is a pair ``(group, label)``): the share of a group predicted ``c``
(demographic parity), of a group's rows of label ``c`` (a true-positive rate one-vs-rest), of
its other rows (a false-positive rate), of the rows of label ``k`` not predicted ``k`` (one
minus it: a Neyman-Pearson class error). Every constraint is linear in the cells' mean
predictions, so the same weights give its value on hard predictions (the one-hot arg-max),
as in the binary :class:`~sklearn_ialm.problems.LinearProblem`.

The parameters are ``K x (d + 1)`` (``K x d`` without intercept) flattened row by row; the
features are read in place, in the units ``(x - center) / scale``.

Second order (the deterministic finish's Newton steps,
:meth:`MultinomialProblem.second_order_evaluation`): the scores are linear in the parameters,
``z_i = P abar_i`` with ``abar_i = [(a_i - center) / scale, 1]``, so a function of the scores
whose Hessian in ``z_i`` is the ``K x K`` matrix ``S_i`` has the Hessian ``sum_i S_i (x)
abar_i abar_i^T`` in ``x`` (Kronecker, class-major). For the cross-entropy ``S_i = u_i
(diag(p_i) - p_i p_i^T) / n``; for ``mu . c``, a row's term is ``omega_i p_i . v_i / n`` with
``v_i = M[s_i] mu``, and ``S_i = omega_i (diag(q_i) - q_i p_i^T - p_i q_i^T) / n``, ``q_i =
p_i * (v_i - p_i . v_i)``. The Hessian of ``g + mu . c`` is thus ``K (K + 1) / 2`` Gram
matrices of the rows ``[a, 1]``, one per pair of classes, each row weighted by its entry of
``S_i``: one read of the rows whatever the number of constraints.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator
from scipy.special import log_softmax, softmax
from sklearn.utils.extmath import safe_sparse_dot

from ..solver.problem import FiniteSumProblem
from ..solver.prox import Ridge
from ._numeric import BOUND_EPS

__all__ = ["MultinomialProblem", "Rate", "cell_codes"]

#: Above this many parameters ``K (d + 1)`` the Hessian of the finish's Newton steps is an
#: operator (Hessian-vector products, conjugate gradients) instead of a matrix: the matrix's
#: ``K (K + 1) / 2`` Gram matrices cost ``n p^2 / 2`` multiplications and its factorisation
#: ``p^3 / 3``, a product ``4 n p`` but a read of the rows. Measured on 5000 rows, 10
#: classes, demographic parity 0.02 binding: with the matrix the fit converged in 33 to 37
#: passes at p = 310, 1010, 1510 and 3010 (0.9, 3.3, 4.4 and 23 s), with products it did not
#: converge in 300 passes at any of the first three; above 2048 the matrix's CPU (p^2 n, and
#: p^3 for each factorisation) is left to the operator.
_HESSIAN_MAX_PARAMS = 2048
#: Numbers of one block of rows' weighted copy in :func:`pair_grams` (16 MB).
_GRAM_BLOCK_NUMBERS = 1 << 21
#: The most columns ``d + 1`` of dense rows whose Gram matrices come from their outer
#: products' triangles (:func:`_triangle_grams`): a block of 16 MB holds 61 rows there.
_TRIANGLE_MAX_COLS = 256
#: The most bytes of the rows' outer products that a problem keeps between its Hessians
#: (see MultinomialProblem._triangles): 32 MB, 3200 rows of 64 columns.
_TRIANGLES_KEPT_BYTES = 1 << 25


class Rate:
    """The weighted share of rows in ``cells`` predicted ``klass`` (a soft or hard rate).

    Parameters
    ----------
    klass : int
        The predicted class (its column of the scores).
    cells : array-like of int
        The cells (codes of :func:`cell_codes`) whose rows make the denominator.
    """

    def __init__(self, klass: int, cells):
        self.klass = int(klass)
        self.cells = np.asarray(cells, dtype=np.intp).reshape(-1)

    def __repr__(self):
        return f"Rate(klass={self.klass}, cells={self.cells.tolist()})"


def cell_codes(groups, y, n_classes: int):
    """``codes[i] = groups[i] * n_classes + y[i]``: the cell (group, label) of each row."""
    return np.asarray(groups, dtype=np.intp) * n_classes + np.asarray(y, dtype=np.intp)


def pair_weights(P, u, omega, v):
    """The entries ``k <= l`` (``np.triu_indices(K)`` order) of each row's Hessian in its
    scores ``S_i`` (see the module docstring), as an ``(n, K (K + 1) / 2)`` array.

    ``P``: the rows' softmax ``(n, K)``; ``u``, ``omega``: their objective and constraint
    weights (divided by the rows' count); ``v``: ``M[s_i] mu`` ``(n, K)`` (None: no term of the
    constraints).
    """
    k, l = np.triu_indices(P.shape[1])
    S = -u[:, None] * P[:, k] * P[:, l]
    diag = P * u[:, None]
    if v is not None:
        q = P * (v - np.sum(P * v, axis=1, keepdims=True))
        S -= omega[:, None] * (q[:, k] * P[:, l] + P[:, k] * q[:, l])
        diag += omega[:, None] * q
    S[:, k == l] += diag
    return S


def curvature_product(P, u, omega, v, Zd):
    """``S_i zd_i`` of every row (see :func:`pair_weights`) for score directions ``Zd`` (n, K):
    a Hessian-vector product without the Hessian."""
    out = u[:, None] * P * (Zd - np.sum(P * Zd, axis=1, keepdims=True))
    if v is not None:
        q = P * (v - np.sum(P * v, axis=1, keepdims=True))
        pz, qz = np.sum(P * Zd, axis=1, keepdims=True), np.sum(q * Zd, axis=1, keepdims=True)
        out += omega[:, None] * (q * Zd - q * pz - P * qz)
    return out


def pair_grams(X, S, triangles=None):
    """``sum_i S_ij [a_i, 1] [a_i, 1]^T`` for every column ``j`` of ``S`` (n, m): ``(m, d + 1,
    d + 1)``. Dense rows of at most ``_TRIANGLE_MAX_COLS`` columns: one product of ``S`` with
    the upper triangles of the rows' outer products (``triangles``, :func:`outer_triangles`
    of all rows where the caller keeps them, the rows ``a_i`` in its units; else formed a
    block of rows at a time, about 16 MB); else a product per column (dense rows in blocks
    of about 16 MB).

    The triangles make one product for every column of ``S``, over half of each Gram
    matrix: on digits (1257 x 64, ten classes: 55 Gram matrices) 21 ms, 10 ms with the
    triangles kept, where a weighted copy of the rows and a product per column took 38 ms.
    """
    n, d = X.shape
    upper = pair_triangles(X, S, triangles)
    if upper is not None:
        return _symmetric(upper, d + 1)
    out = np.zeros((S.shape[1], d + 1, d + 1))
    step = n if sp.issparse(X) else max(1, _GRAM_BLOCK_NUMBERS // (d + 1))
    for start in range(0, n, step):
        A, R = X[start : start + step], S[start : start + step]
        for j in range(S.shape[1]):
            Ar = A.multiply(R[:, j : j + 1]).tocsr() if sp.issparse(A) else A * R[:, j : j + 1]
            out[j, :d, :d] += safe_sparse_dot(A.T, Ar, dense_output=True)
            out[j, :d, d] += np.asarray(Ar.sum(axis=0)).ravel()
            out[j, d, d] += R[:, j].sum()
    out[:, d, :d] = out[:, :d, d]
    return out


def pair_triangles(X, S, triangles=None):
    """The upper triangles of :func:`pair_grams`' matrices, ``(m, (d + 1) (d + 2) / 2)`` in
    ``np.triu_indices``' order, where they come from the rows' outer products' triangles
    (``triangles`` given, or dense rows of at most ``_TRIANGLE_MAX_COLS`` columns), else
    None."""
    n, d = X.shape
    if triangles is None and (sp.issparse(X) or d + 1 > _TRIANGLE_MAX_COLS):
        return None
    cols = d + 1
    # (the same blocks whether the triangles are kept or not)
    step = max(1, _GRAM_BLOCK_NUMBERS // (cols * (cols + 1) // 2))
    upper = np.zeros((S.shape[1], cols * (cols + 1) // 2))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        block = outer_triangles(X[rows]) if triangles is None else triangles[:, rows]
        upper += S[rows].T @ block.T
    return upper


def outer_triangles(X):
    """The upper triangles of the outer products ``[a_i, 1] [a_i, 1]^T`` of the dense rows
    ``X``, one column per row: ``((d + 1) (d + 2) / 2, n)``, ``np.triu_indices``'s order."""
    n, d = X.shape
    cols = d + 1
    At = np.ones((cols, n))
    At[:d] = X.T
    out = np.empty((cols * (cols + 1) // 2, n))
    at = 0
    for j in range(cols):
        np.multiply(At[j], At[j:], out=out[at : at + cols - j])
        at += cols - j
    return out


def _symmetric(upper, cols):
    """``(m, cols, cols)`` symmetric matrices from their upper triangles ``(m, ...)``."""
    rows, columns = np.triu_indices(cols)
    out = np.empty((len(upper), cols, cols))
    out[:, rows, columns] = upper
    out[:, columns, rows] = upper
    return out


def _last_kept(hessian):
    """``hessian(mu)`` that returns its last value again for the same ``mu`` (the finish asks
    again at the same point and multipliers while it chooses the sides of the kinks)."""
    last = [None, None]

    def kept(mu):
        mu = np.asarray(mu, dtype=float)
        if last[0] is None or not np.array_equal(last[0], mu):
            last[:] = mu.copy(), hessian(mu)
        return last[1]

    return kept


class MultinomialProblem(FiniteSumProblem):
    """Softmax cross-entropy with the L2 penalty of ``C``, under linear constraints on rates.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    y : ndarray of int, shape (n,)
        Class codes ``0 .. n_classes - 1``.
    n_classes : int
    sample_weight : ndarray of shape (n,)
        Positive row weights, in the objective and in the rates.
    cells : ndarray of int, shape (n,)
        Each row's cell (:func:`cell_codes`); ``n_cells`` is ``cells.max() + 1`` at least.
    constraints : list of (list of (sign, Rate), offset)
        Constraint ``j`` is ``sum sign * rate + offset <= 0``.
    C : float or None
        ``LogisticRegression``'s ``C`` in the units ``(x - center) / scale``; None: no penalty.
    fit_intercept : bool
    scale, center : ndarray of shape (d,), optional
        The solver's units of the features (ones and zeros by default).
    n_cells : int, optional
    penalty_units : float, default=1.0
        The penalty is divided by it too (the estimators pass the number of live columns,
        whose units the scale holds, see :mod:`sklearn_ialm.estimators._scaling`).
    """

    #: The finish keeps Newton steps within a trust region (see
    #: :meth:`~sklearn_ialm.solver._finish_lagrangian._AugmentedLagrangian.newton`): the
    #: softmax rates make the constraints' curvature indefinite, and on digits with the
    #: group tied to the label (``benchmarks/multiclass_ties.py --data digits`` of 44730c1^) the
    #: 24 fits took 2311 passes instead of 2721, every one converged (the bound 0.05 of the
    #: "halves" family had spent its 300 passes).
    trust_region = True
    #: Whether the finish's Hessian weights the curvature of a constraint whose multiplier is
    #: still zero by its penalty's weight (see
    #: :meth:`~sklearn_ialm.solver._finish_lagrangian._AugmentedLagrangian.hessian`): the
    #: steered fairness fits set it (per-class parity on wine, a group tied to class 0: the
    #: first solve took 129 passes, now 49); Neyman-Pearson's fits keep the cap (on the
    #: golden record's 3-class case it cost 3 passes more).
    curvature_at_zero_multipliers = False

    def __init__(
        self,
        X,
        y,
        n_classes,
        sample_weight,
        cells,
        constraints,
        *,
        C=1.0,
        fit_intercept=True,
        scale=None,
        center=None,
        n_cells=None,
        penalty_units=1.0,
    ):
        n, d = X.shape
        super().__init__(n, n)
        self.X, self.y, self.K = X, np.asarray(y, dtype=np.intp), int(n_classes)
        self.d, self.fit_intercept = d, bool(fit_intercept)
        self.scale = np.ones(d) if scale is None else np.asarray(scale, dtype=float)
        self.center = np.zeros(d) if center is None else np.asarray(center, dtype=float)
        self.cols = d + int(self.fit_intercept)
        self.n_params = self.K * self.cols
        w = np.asarray(sample_weight, dtype=float)
        self.u = w * (n / w.sum())  # objective weights of mean one
        self.Y = np.zeros((n, self.K))
        self.Y[np.arange(n), self.y] = 1.0
        self.cells = np.asarray(cells, dtype=np.intp)
        n_cells = int(max(n_cells or 0, self.cells.max() + 1))
        self.cell_weight = np.bincount(self.cells, weights=w, minlength=n_cells)
        self.constraint_list = list(constraints)
        m = len(self.constraint_list)
        self.n_constraints = m
        self.inequality = np.ones(m, bool)
        # M[s, c, j]: the weight of cell s's mean prediction of class c in constraint j.
        self.M = np.zeros((n_cells, self.K, m))
        self.offset = np.zeros(m)
        for j, (terms, offset) in enumerate(self.constraint_list):
            self.offset[j] = offset
            for sign, rate in terms:
                denominator = self.cell_weight[rate.cells].sum()
                if denominator > 0:
                    self.M[rate.cells, rate.klass, j] += sign * (
                        self.cell_weight[rate.cells] / denominator
                    )
        # Row i's weight in the constraint means: mean_i omega_i p_i M[s_i] = sum_s R_s M[s].
        with np.errstate(invalid="ignore", divide="ignore"):
            self.omega = np.where(
                self.cell_weight[self.cells] > 0, w * n / self.cell_weight[self.cells], 0.0
            )
        self.C = C
        h = None
        if C is not None and np.isfinite(C):
            mask = np.ones((self.K, self.cols), bool)
            if self.fit_intercept:
                mask[:, -1] = False
            h = Ridge(1.0 / (C * w.sum() * penalty_units), mask=mask.ravel())
        self.h = h if h is not None else Ridge(0.0)
        self.smoothness = self._smoothness_bound()
        if m:
            self.stratify_constraints(self.cells)
        # The rows' outer products' triangles while they are kept (see _triangles): a list,
        # shared by the solver's copies of the problem (copy.copy), so every solve of a
        # steered fit reads them.
        self._kept_triangles = []

    # -- parameters ----------------------------------------------------------------------
    def _split(self, x):
        P = np.asarray(x, dtype=float).reshape(self.K, self.cols)
        W = P[:, : self.d] / self.scale  # the weights of the features as given
        b = P[:, self.d] - W @ self.center if self.fit_intercept else -(W @ self.center)
        return W, b

    @property
    def n_columns(self) -> int:
        """The columns of the rows a model is given on (:meth:`coef`, :meth:`point`)."""
        return self.d

    def coef(self, x):
        """``(coef, intercept)`` of ``x`` in the units of ``X``: shapes (K, d) and (K,)."""
        return self._split(x)

    def point(self, coef, intercept):
        """The parameters ``x`` of a model ``(coef, intercept)`` given in the units of ``X``."""
        coef = np.asarray(coef, dtype=float).reshape(self.K, self.d)
        P = np.zeros((self.K, self.cols))
        P[:, : self.d] = coef * self.scale
        if self.fit_intercept:
            P[:, self.d] = np.asarray(intercept, dtype=float) + coef @ self.center
        return P.ravel()

    def scores(self, x, rows=slice(None)):
        """The ``(n_rows, K)`` scores of rows ``rows``."""
        W, b = self._split(x)
        X = self.X[rows]
        return np.asarray(safe_sparse_dot(X, W.T, dense_output=True)) + b

    def _back(self, G, rows):
        """The gradient in ``x`` of ``sum_i G_i . z_i`` over rows ``rows`` (``G``: (n, K))."""
        gW = np.asarray(safe_sparse_dot(G.T, self.X[rows], dense_output=True))
        return self._back_sums(gW, G.sum(axis=0))

    def _back_sums(self, gW, gb):
        """:meth:`_back` from the sums ``G^T X`` (``gW``, (K, d)) and ``G^T 1`` (``gb``)."""
        out = np.zeros((self.K, self.cols))
        out[:, : self.d] = (gW - np.outer(gb, self.center)) / self.scale
        if self.fit_intercept:
            out[:, self.d] = gb
        return out.ravel()

    # -- oracles -------------------------------------------------------------------------
    def _rows(self, batch):
        return batch if not isinstance(batch, slice) else slice(None)

    def objective(self, x, batch):
        rows = self._rows(batch)
        P = softmax(self.scores(x, rows), axis=1)
        G = (P - self.Y[rows]) * self.u[rows, None]
        return self._back(G, rows) / self.batch_size(batch, "objective")

    def objective_value(self, x, batch):
        rows = self._rows(batch)
        logp = log_softmax(self.scores(x, rows), axis=1)
        ce = -np.sum(logp * self.Y[rows], axis=1)
        return float(np.mean(self.u[rows] * ce))

    def constraints(self, x, batch):
        rows = self._rows(batch)
        P = softmax(self.scores(x, rows), axis=1)
        Ms = self.M[self.cells[rows]]  # (b, K, m)
        om = self.omega[rows]
        C = om[:, None] * np.einsum("bk,bkm->bm", P, Ms) + self.offset

        def vjp(U):
            a = np.einsum("bkm,bm->bk", Ms, U)
            G = om[:, None] * P * (a - np.sum(P * a, axis=1, keepdims=True))
            return self._back(G, rows)

        return C, vjp

    # -- second order (the finish's Newton steps) -----------------------------------------------
    def second_order_evaluation(self, x):
        """``(f0, grad, c, J, hessian)`` on all rows: the objective's value and gradient, the
        constraint values and their Jacobian ``J`` (``m x n_params``) from one read of the
        rows, and ``hessian(mu)``, the Hessian of ``g + mu . c`` at ``x`` (see the module
        docstring): a matrix from one more read of the rows (:attr:`curvature_passes`), or
        above ``_HESSIAN_MAX_PARAMS`` parameters a
        :class:`~scipy.sparse.linalg.LinearOperator`, each product a read of the rows.
        """
        Z = self.scores(x)
        n = len(self.y)
        f0 = float(np.mean(self.u * -log_softmax(Z, axis=1)[np.arange(n), self.y]))
        P = softmax(Z, axis=1)
        grad = self._back((P - self.Y) * self.u[:, None], slice(None)) / n
        c, J = self._constraint_jacobian(P)
        return f0, grad, c, J, _last_kept(lambda mu: self._hessian(P, mu))

    @property
    def curvature_passes(self) -> float:
        """Reads of every row (in evaluations) that ``hessian(mu)`` of
        :meth:`second_order_evaluation` costs: one for the Gram matrices, none for an operator
        (the softmax of the evaluation is kept; each product is counted by its caller)."""
        return 0.0 if self._operator_hessian() else 1.0

    def _operator_hessian(self) -> bool:
        """Whether ``hessian(mu)`` is an operator (above ``_HESSIAN_MAX_PARAMS`` parameters)."""
        return self.n_params > _HESSIAN_MAX_PARAMS

    def _constraint_jacobian(self, P):
        """The constraint values and their ``(m, n_params)`` Jacobian at the softmax ``P``."""
        n, m = len(self.y), self.n_constraints
        if not m:
            return np.zeros(0), np.zeros((0, self.n_params))
        Ms = self.M[self.cells]  # (n, K, m)
        Q = np.einsum("nk,nkm->nm", P, Ms)  # each row's p_i . M[s_i]
        om = self.omega / n
        c = om @ Q + self.offset
        G = (om[:, None, None] * P[:, :, None] * (Ms - Q[:, None, :])).reshape(n, self.K * m)
        gW = np.asarray(safe_sparse_dot(G.T, self.X, dense_output=True)).reshape(self.K, m, -1)
        gb = G.sum(axis=0).reshape(self.K, m)
        # (:meth:`_back_sums` of every constraint at once)
        J = np.zeros((m, self.K, self.cols))
        J[:, :, : self.d] = (gW.transpose(1, 0, 2) - gb.T[:, :, None] * self.center) / self.scale
        if self.fit_intercept:
            J[:, :, self.d] = gb.T
        return c, J.reshape(m, self.n_params)

    def _curvature_inputs(self, mu):
        """``(u, omega, v)`` of :func:`pair_weights` for multipliers ``mu``."""
        n = len(self.y)
        v = (self.M @ mu)[self.cells] if self.n_constraints else None
        return self.u / n, self.omega / n, v

    def _hessian(self, P, mu):
        """``hessian(mu)`` of :meth:`second_order_evaluation`, at the softmax ``P``."""
        u, om, v = self._curvature_inputs(mu)
        if self._operator_hessian():

            def matvec(s):
                W, b = self._split(np.ravel(s))
                Zd = np.asarray(safe_sparse_dot(self.X, W.T, dense_output=True)) + b
                return self._back(curvature_product(P, u, om, v, Zd), slice(None))

            return LinearOperator((self.n_params,) * 2, matvec=matvec, dtype=float)
        S = pair_weights(P, u, om, v)
        kept = self._triangles()
        if kept is None:
            return self.hessian_from_grams(pair_grams(self.X, S))
        return self._assembled_triangles(pair_triangles(self.X, S, kept))

    def _triangles(self):
        """:func:`outer_triangles` of the rows in the solver's units ``(a - center) /
        scale``, formed at the first Hessian and kept until :meth:`release_triangles` where
        they take at most ``_TRIANGLES_KEPT_BYTES`` (dense rows of at most
        ``_TRIANGLE_MAX_COLS`` columns), else None (formed at each Hessian, of the rows as
        given). A steered fit on digits forms 20 to 30 Hessians: each took 23 ms, 15 ms with
        them (and no change of units, a product of each Gram matrix with two others)."""
        if self._kept_triangles:
            return self._kept_triangles[0]
        n, d = self.X.shape
        size = 8 * n * (d + 1) * (d + 2) // 2
        if sp.issparse(self.X) or d + 1 > _TRIANGLE_MAX_COLS or size > _TRIANGLES_KEPT_BYTES:
            return None
        self._kept_triangles.append(outer_triangles((self.X - self.center) / self.scale))
        return self._kept_triangles[0]

    def release_triangles(self):
        """Let the rows' kept outer products go (see :meth:`_triangles`): at the fit's end."""
        self._kept_triangles.clear()

    def hessian_from_grams(self, grams):
        """The Hessian in ``x`` from the pair Gram matrices of the rows ``[a, 1]``
        (:func:`pair_grams`, ``np.triu_indices(K)`` order): each block ``(k, l)`` is its Gram
        matrix in the solver's units ``[(a - center) / scale, 1]``.

        With an intercept, the projection on the intercepts' common shift is added: every
        function of the softmax is flat along it, so the Hessian is singular there (the
        penalty's ``J^T J`` and the ridge's diagonal too); the projection, at the
        intercepts' curvature, leaves the Newton step on the rest unchanged (the gradient
        has no part along it) and makes the matrix definite where the loss is convex (a
        Cholesky factorisation, not the finish's eigendecomposition).
        """
        d = self.d
        T = np.zeros((d + 1, d + 1))  # [(a - center) / scale, 1] = T @ [a, 1]
        T[:d, :d] = np.diag(1.0 / self.scale)
        T[:d, d] = -self.center / self.scale
        T[d, d] = 1.0
        return self._assembled(T @ grams @ T.T)

    def _assembled_triangles(self, upper):
        """:meth:`_assembled` from the pair Gram matrices' upper triangles (the solver's
        units, :func:`pair_triangles`), each block read from them at once: the same
        matrix, without the ``(m, d + 1, d + 1)`` copy (digits: 0.9 -> 0.5 ms a Hessian)."""
        d, cols, K = self.d, self.cols, self.K
        rows, columns = np.triu_indices(d + 1)
        at = np.empty((d + 1, d + 1), dtype=np.intp)  # each entry's place in a triangle
        at[rows, columns] = at[columns, rows] = np.arange(len(rows))
        at = at[:cols, :cols]
        H = np.empty((K, cols, K, cols))
        for pair, (k, l) in enumerate(zip(*np.triu_indices(K), strict=True)):
            block = upper[pair].take(at)
            H[k, :, l, :] = block
            if k != l:
                H[l, :, k, :] = block.T
        H = H.reshape(self.n_params, self.n_params)
        if self.fit_intercept:
            at = np.arange(K) * cols + d
            H[np.ix_(at, at)] += np.mean(np.diag(H)[at]) / K
        return H

    def _assembled(self, grams):
        """:meth:`hessian_from_grams` from the pair Gram matrices in the solver's units."""
        d, cols = self.d, self.cols
        blocks = grams[:, :cols, :cols]
        H = np.empty((self.n_params, self.n_params))
        for (k, l), B in zip(zip(*np.triu_indices(self.K), strict=True), blocks, strict=True):
            H[k * cols : (k + 1) * cols, l * cols : (l + 1) * cols] = B
            H[l * cols : (l + 1) * cols, k * cols : (k + 1) * cols] = B.T
        if self.fit_intercept:
            at = np.arange(self.K) * cols + d
            H[np.ix_(at, at)] += np.mean(np.diag(H)[at]) / self.K
        return H

    # -- hard rates ------------------------------------------------------------------------
    def cell_means(self, pred):
        """Each cell's weighted mean of ``pred`` ((n, K) soft or one-hot predictions)."""
        n_cells, K = self.M.shape[0], self.K
        weighted = pred * (self.omega[:, None] / len(self.omega))
        # One weighted count per (cell, class), each summed in the rows' order as
        # ``np.add.at`` sums it (the same bits), at a tenth of its time.
        bins = (self.cells[:, None] * K + np.arange(K)).ravel()
        counts = np.bincount(bins, weights=weighted.ravel(), minlength=n_cells * K)
        return counts.reshape(n_cells, K)

    def rate_constraints(self, pred, offset=None):
        """The constraint values at predictions ``pred`` ((n, K)): ``c = sum_s R_s M_s + o``."""
        offset = self.offset if offset is None else offset
        return np.einsum("sk,skm->m", self.cell_means(pred), self.M) + offset

    def class_rate_constraints(self, classes, offset=None):
        """:meth:`rate_constraints` of the one-hot predictions ``classes`` ((n,) class
        indices), counted without forming them: one weighted count per cell and class."""
        offset = self.offset if offset is None else offset
        K, n_cells = self.K, self.M.shape[0]
        share = self.omega / len(self.omega)
        counts = np.bincount(self.cells * K + classes, weights=share, minlength=n_cells * K)
        return np.einsum("sk,skm->m", counts.reshape(n_cells, K), self.M) + offset

    def meets_bounds(self, scores, offset) -> bool:
        """Whether the predictions (arg-max) of ``scores`` meet every bound, with the
        constraints' offsets ``offset``: from the predicted classes' counts (the one-hot
        matrix's sums to the bit)."""
        hard = self.class_rate_constraints(np.argmax(scores, axis=1), offset)
        return bool(np.all(hard <= BOUND_EPS))

    def objective_of_scores(self, x, scores) -> float:
        """The training objective at ``x`` from its scores ``scores`` (no read of the rows):
        :meth:`objective_value`'s weighted mean cross-entropy, plus ``h``."""
        ce = -np.sum(log_softmax(scores, axis=1) * self.Y, axis=1)
        return float(np.mean(self.u * ce)) + float(self.h.value(x))

    def hard_predictions(self, scores):
        """One-hot arg-max of ``scores`` (ties to the first class, as ``predict``)."""
        out = np.zeros_like(scores)
        out[np.arange(len(scores)), np.argmax(scores, axis=1)] = 1.0
        return out

    # -- smoothness ------------------------------------------------------------------------
    def _smoothness_bound(self):
        """``(L0, LJ)``: ``|softmax'| <= 1/2`` and the top eigenvalue of the weighted Gram of the
        augmented rows (exact up to 2000 columns, else a trace bound)."""
        L0 = 0.5 * self._scaled_gram_top(self.u)
        if not self.n_constraints:
            return float(L0), 0.0
        # |J|^2 <= lambda_max(mean omega_i^2 a_i a_i^T) * max_s |M_s|^2 / 4.
        jac2 = (
            0.25
            * self._scaled_gram_top(self.omega**2)
            * float(np.max(np.sum(self.M**2, axis=(1, 2))))
        )
        cmax = float(np.sum(np.abs(self.offset)) + np.abs(self.M).sum(axis=(1, 2)).max())
        hess = cmax * self._scaled_gram_top(self.omega * np.abs(self.M).max())
        return float(L0), float(jac2 + hess)

    def _scaled_gram_top(self, weights):
        """``lambda_max(A^T diag(weights) A / n)`` of the rows ``[(x - center) / scale, 1]``."""
        X, n = self.X, self.X.shape[0]
        if self.d + 1 > 2000:
            if sp.issparse(X):
                sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
            else:
                sq = np.einsum("ij,ij->i", X, X)
            # A trace bound, loose but safe: the mean squared norm of the scaled rows.
            s2 = float(np.max(1.0 / self.scale**2))
            return float(np.mean(weights * (sq * s2 * 2 + 2 * np.sum(self.center**2) * s2 + 1)))
        Xw = X.multiply(weights[:, None]).tocsr() if sp.issparse(X) else X * weights[:, None]
        G = np.asarray(safe_sparse_dot(X.T, Xw, dense_output=True))
        m = np.asarray(Xw.sum(axis=0)).ravel()
        return self._gram_top_from_sums(G, m, float(weights.sum()), n)

    def _gram_top_from_sums(self, G, m, total, n):
        """:meth:`_scaled_gram_top` from the weighted sums ``X^T diag X`` (``G``), ``X^T w``
        (``m``) and ``sum w`` (``total``) of ``n`` rows."""
        A = np.empty((self.d + 1, self.d + 1))
        c, s = self.center, self.scale
        A[: self.d, : self.d] = (G - np.outer(m, c) - np.outer(c, m) + total * np.outer(c, c)) / (
            np.outer(s, s)
        )
        A[: self.d, self.d] = A[self.d, : self.d] = (m - total * c) / s
        A[self.d, self.d] = total
        return float(max(np.linalg.eigvalsh(A / n)[-1], 1e-12))
