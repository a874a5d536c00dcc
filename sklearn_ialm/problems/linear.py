"""Linear-score problems: the shape of both of the paper's models.

The parameters are ``x = (w, b0)`` (``b0`` only with an intercept) and the score of a row
``a`` is ``z = a.w + b0``. The objective is a weighted mean of a margin loss over the
objective rows, the constraints are weighted means of the soft prediction ``sigmoid(z)`` over
the constraint rows:

    g(x)   = mean_i  u_i * loss(b_i z_i)
    c_k(x) = mean_j  W[j, k] * sigmoid(z_j) + offset_k

Every fairness constraint of :mod:`.fairness` and the false-positive constraint of
:mod:`.neyman_pearson` is of this form, with a per-row weight matrix ``W``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from ..solver.problem import FiniteSumProblem
from ..solver.prox import L1, Box, NoProx, Prox
from .losses import SIGMOID_CURVATURE, Logistic, SigmoidLoss, TruncatedLogistic

__all__ = ["LinearProblem"]


class _SparseRows:
    """Rows of a CSR matrix as flat (column, value, row) triples.

    Products with a minibatch of a few dozen rows are two ``bincount`` calls; building a
    scipy.sparse matrix per minibatch costs ten times more in object overhead.
    """

    __slots__ = ("cols", "vals", "rows", "shape")

    def __init__(self, A, idx):
        starts = A.indptr[idx]
        lens = A.indptr[idx + 1] - starts
        total = int(lens.sum())
        ends = np.cumsum(lens)
        # Positions of the selected rows' entries in A.data, without a Python loop.
        pos = np.arange(total) + np.repeat(starts - (ends - lens), lens)
        self.cols = A.indices[pos]
        self.vals = A.data[pos]
        self.rows = np.repeat(np.arange(len(idx)), lens)
        self.shape = (len(idx), A.shape[1])

    def __matmul__(self, x):
        return np.bincount(self.rows, weights=self.vals * x[self.cols], minlength=self.shape[0])

    def rmatvec(self, r):
        return np.bincount(self.cols, weights=self.vals * r[self.rows], minlength=self.shape[1])


class _Subset:
    """Rows ``rows`` of a matrix, for full-data products without copying those rows."""

    def __init__(self, A, rows):
        self.A, self.rows = A, rows
        self.shape = (len(rows), A.shape[1])

    def __matmul__(self, x):
        return (self.A @ x)[self.rows]

    def rmatvec(self, r):
        full = np.zeros(self.A.shape[0])
        full[self.rows] = r
        return self.A.T @ full


class _Rows:
    """Row access to a matrix (or to a subset of its rows) by minibatch index.

    A one-entry cache serves the two points at which PStorm reads each minibatch. The matrix
    is never copied: CSR input is used as given (other sparse formats are converted once),
    dense and memory-mapped arrays are read by row index.
    """

    def __init__(self, A, rows=None):
        if sp.issparse(A) and A.format != "csr":
            A = sp.csr_matrix(A)
        self.A = A
        self.rows = None if rows is None else np.asarray(rows, dtype=np.intp)
        self.sparse = sp.issparse(A)
        self.full = A if self.rows is None else _Subset(A, self.rows)
        self.n_rows = A.shape[0] if self.rows is None else len(self.rows)
        self._key = None
        self._block = None

    def __call__(self, idx):
        if isinstance(idx, slice):
            if idx == slice(None):
                return self.full
            idx = np.arange(self.n_rows)[idx]
        if idx is not self._key:
            self._key = idx
            rows = idx if self.rows is None else self.rows[idx]
            self._block = _SparseRows(self.A, rows) if self.sparse else self.A[rows]
        return self._block

    def in_place(self) -> bool:
        """Whether the kernel reads this data in place (float64 dense C-ordered, or CSR)."""
        A = self.A
        if self.sparse:
            return A.data.dtype == np.float64
        return isinstance(A, np.ndarray) and A.dtype == np.float64 and A.flags.c_contiguous

    def kernel_source(self, idx):
        """The compiled kernel's view of the rows ``idx`` (an int array of any shape).

        Returns ``(dense, data, indices, indptr, sparse, ridx)``: the rows are
        ``dense[ridx]`` or rows ``ridx`` of the CSR triple. In-memory float64 data (C-ordered
        dense or CSR) is read in place; any other source (another dtype or layout, or a
        chunked array that only supports row indexing) has the rows gathered first, so the
        kernel sees only what this row-index interface returns.
        """
        rows = idx if self.rows is None else self.rows[idx]
        A = self.A
        if not self.in_place():
            A = A[rows.ravel()]
            A = sp.csr_matrix(A, dtype=np.float64) if self.sparse else np.asarray(A, dtype=float)
            rows = np.arange(rows.size).reshape(rows.shape)
        if self.sparse:
            return _NO_DENSE, A.data, A.indices, A.indptr, True, rows
        return np.ascontiguousarray(A), _NO_DATA, _NO_INDEX, _NO_INDPTR, False, rows


# Placeholders for the unused half of a kernel source (fixed dtypes: one compiled signature).
_NO_DENSE = np.zeros((0, 0))
_NO_DATA = np.zeros(0)
_NO_INDEX = np.zeros(0, dtype=np.intp)
_NO_INDPTR = np.zeros(1, dtype=np.intp)


def _rms_row_norm(rows, weights) -> float:
    """Root of the weighted mean squared row norm (weights of mean one)."""
    A = rows.A
    if sp.issparse(A):
        # In blocks of rows: A.multiply(A) would hold a second copy of the matrix.
        sq = np.empty(A.shape[0])
        step = 1 << 10
        for start in range(0, A.shape[0], step):
            ptr = A.indptr[start : start + step + 1]
            counts = np.diff(ptr)
            rows_of = np.repeat(np.arange(len(counts)), counts)
            vals = A.data[ptr[0] : ptr[-1]]  # a view
            sq[start : start + len(counts)] = np.bincount(
                rows_of, weights=vals * vals, minlength=len(counts)
            )
    else:
        sq = np.einsum("ij,ij->i", A, A)
    if rows.rows is not None:
        sq = sq[rows.rows]
    return float(np.sqrt(np.mean(weights * sq))) if len(sq) else 0.0


def _rmatvec(A, r):
    """``A.T @ r`` for a dense block, a CSR matrix, a row subset or a sparse minibatch."""
    if isinstance(A, _SparseRows | _Subset):
        return A.rmatvec(r)
    return A.T @ r


class LinearProblem(FiniteSumProblem):
    """A finite-sum problem with a linear score (see the module docstring).

    Parameters
    ----------
    A_objective : {ndarray, sparse matrix} of shape (n_objective, n_features)
    margins : ndarray of shape (n_objective,)
        Label signs ``b_i`` in {-1, +1}.
    loss : object with ``value``, ``derivative`` and ``curvature``
        See :mod:`.losses`.
    A_constraint : {ndarray, sparse matrix} of shape (n_constraint, n_features)
    W : ndarray of shape (n_constraint, m)
    offset : ndarray of shape (m,)
    objective_weights : ndarray of shape (n_objective,), optional
        Per-row weights ``u_i`` (normalised to mean one).
    inequality : bool or array of bool, default=True
    fit_intercept : bool, default=False
    h : Prox, optional
    smoothness : (L0, LJ), optional
        Defaults to the bound of :meth:`smoothness_bound`.
    constraint_names : list of str, optional
    rows_objective, rows_constraint : array of int, optional
        Use only these rows of ``A_objective`` / ``A_constraint`` (both may be the same
        matrix): the subsets are read in place, never copied.
    feature_scale : float, ndarray of shape (n_features,) or "auto", default=1.0
        The score is ``((a - feature_center) . w) / feature_scale + b0``: the same linear
        model as ``a.coef + intercept``, in coordinates where the features are centred and
        scaled (:meth:`coef` maps back, :meth:`point` maps forward). The data are never
        copied: centring and scaling act on the parameters, not on the rows. With ``"auto"``
        the residuals and the tolerance refer to features of (weighted) root-mean-square row
        norm one over the objective rows, whatever their number and scale.
    feature_center : ndarray of shape (n_features,), optional
        Column centre (needs ``fit_intercept=True``).

    Examples
    --------
    Logistic regression whose mean soft positive prediction is at most 0.5
    (``W = 1``, ``offset = -0.5``):

    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm.problems import LinearProblem
    >>> from sklearn_ialm.problems.losses import Logistic
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> problem = LinearProblem(X, np.where(y == 1, 1.0, -1.0), Logistic(), X,
    ...                         np.ones((300, 1)), np.array([-0.5]), fit_intercept=True)
    >>> problem.n_params, problem.n_constraints
    (6, 1)
    >>> C, vjp = problem.constraints(np.zeros(6), np.arange(3))  # sigmoid(0) - 0.5 per row
    >>> C.ravel()
    array([0., 0., 0.])
    """

    def __init__(
        self,
        A_objective,
        margins,
        loss,
        A_constraint,
        W,
        offset,
        *,
        objective_weights=None,
        inequality=True,
        fit_intercept=False,
        h=None,
        smoothness=None,
        constraint_names=None,
        feature_scale=1.0,
        feature_center=None,
        rows_objective=None,
        rows_constraint=None,
    ):
        W = np.asarray(W, dtype=float)
        if W.ndim == 1:
            W = W[:, None]
        n_obj = A_objective.shape[0] if rows_objective is None else len(rows_objective)
        n_con = A_constraint.shape[0] if rows_constraint is None else len(rows_constraint)
        super().__init__(n_obj, n_con if W.shape[1] else 0)
        self.A_obj = _Rows(A_objective, rows_objective)
        self.A_con = _Rows(A_constraint, rows_constraint)
        self.n_features = A_objective.shape[1]
        self.fit_intercept = bool(fit_intercept)
        self.n_params = self.n_features + self.fit_intercept
        self.b = np.asarray(margins, dtype=float)
        u = np.ones(len(self.b)) if objective_weights is None else np.asarray(objective_weights)
        self.u = u / u.mean()
        self.bu = self.b * self.u
        self.loss = loss
        self.W = W
        self.offset = np.asarray(offset, dtype=float).reshape(W.shape[1])
        self.n_constraints = W.shape[1]
        self.inequality = np.broadcast_to(np.asarray(inequality, dtype=bool), (W.shape[1],))
        self.h = NoProx() if h is None else h
        if isinstance(feature_scale, str) and feature_scale == "auto":
            feature_scale = _rms_row_norm(self.A_obj, self.u) or 1.0
        if np.ndim(feature_scale) == 0:
            self.feature_scale = float(feature_scale)
        else:
            self.feature_scale = np.asarray(feature_scale, dtype=float).reshape(self.n_features)
        if not (np.all(np.isfinite(self.feature_scale)) and np.all(self.feature_scale > 0)):
            raise ValueError("feature_scale must be finite and > 0.")
        self._inv_scale = 1.0 / self.feature_scale
        self._scaled = np.any(self.feature_scale != 1.0)
        if feature_center is not None:
            if not self.fit_intercept:
                # Centring moves part of the score into an intercept the model does not have.
                raise ValueError("feature_center needs fit_intercept=True.")
            feature_center = np.asarray(feature_center, dtype=float).reshape(self.n_features)
            if not np.any(feature_center):
                feature_center = None
        self.feature_center = feature_center
        self.smoothness = self.smoothness_bound() if smoothness is None else tuple(smoothness)
        self.constraint_names = constraint_names

    def coef(self, x):
        """Split the solver's ``x`` into the model's ``(coef, intercept)``."""
        v, b = self._effective(x)
        return v.copy(), float(b)

    def point(self, coef, intercept=0.0):
        """The solver's ``x`` of the model ``(coef, intercept)``: the inverse of :meth:`coef`."""
        coef = np.asarray(coef, dtype=float).reshape(self.n_features)
        x = coef * self.feature_scale
        if not self.fit_intercept:
            return x
        b0 = float(intercept)
        if self.feature_center is not None:
            b0 += float(self.feature_center @ coef)
        return np.append(x, b0)

    # -- helpers -----------------------------------------------------------------------------
    def _effective(self, x):
        """``(v, b)`` with ``score = a.v + b`` in the units of the data."""
        v = x[: self.n_features]
        if self._scaled:
            v = v * self._inv_scale
        b = x[-1] if self.fit_intercept else 0.0
        if self.feature_center is not None:
            b = b - self.feature_center @ v
        return v, b

    def _score(self, A, x):
        v, b = self._effective(x)
        z = A @ v
        if self.fit_intercept:
            z = z + b
        return z

    def _grad(self, A, r, n):
        """Gradient in ``x`` of ``sum_i r_i score_i / n`` over the rows of ``A``."""
        return self._finish_grad(_rmatvec(A, r), r.sum() if self.fit_intercept else 0.0, n)

    def _finish_grad(self, g, rsum, n):
        """:meth:`_grad` from ``g = A.T @ r`` and ``rsum = r.sum()``."""
        if self.fit_intercept and self.feature_center is not None:
            g = g - rsum * self.feature_center
        if self._scaled:
            g = g * self._inv_scale
        if self.fit_intercept:
            return np.append(g, rsum) / n
        return g / n

    def _sel(self, v, idx):
        return v if isinstance(idx, slice) else v[idx]

    # -- oracles -----------------------------------------------------------------------------
    def objective(self, x, batch):
        A = self.A_obj(batch)
        z = self._score(A, x)
        r = self._sel(self.bu, batch) * self.loss.derivative(self._sel(self.b, batch) * z)
        return self._grad(A, r, A.shape[0])

    def objective_value(self, x, batch):
        A = self.A_obj(batch)
        z = self._score(A, x)
        loss = self.loss.value(self._sel(self.b, batch) * z)
        return float(np.mean(self._sel(self.u, batch) * loss))

    def constraints(self, x, batch):
        A = self.A_con(batch)
        W = self._sel(self.W, batch)
        p = expit(self._score(A, x))
        C = W * p[:, None] + self.offset
        dp = p * (1.0 - p)

        def vjp(U):
            q = dp * np.einsum("ij,ij->i", U, W)
            return self._grad(A, q, 1.0)

        return C, vjp

    # -- all rows at once (the stopping rule) ------------------------------------------------
    def full_evaluation(self, x, rng=None, batches=None):
        """Objective value and gradient, constraint values and ``J^T`` on all rows.

        One product ``A @ x`` serves the objective and the constraints when they read the
        same matrix (the estimators' case), instead of one per oracle.
        """
        if batches is not None:
            return super().full_evaluation(x, rng, batches)
        compiled = self._full_evaluation_compiled(x)
        if compiled is not None:
            return compiled
        Ao, Ac = self.A_obj, self.A_con
        shared = self.n_constraints and Ao.A is Ac.A
        if shared:
            z_all = self._score(Ao.A, x)
            zo = z_all if Ao.rows is None else z_all[Ao.rows]
            zc = z_all if Ac.rows is None else z_all[Ac.rows]
        else:
            zo = self._score(Ao.full, x)
        m_obj = self.b * zo
        f0 = float(np.mean(self.u * self.loss.value(m_obj)))
        grad = self._grad(Ao.full, self.bu * self.loss.derivative(m_obj), Ao.n_rows)
        if not self.n_constraints:
            return f0, grad, np.zeros(0), lambda v: np.zeros_like(x)
        if not shared:
            zc = self._score(Ac.full, x)
        p = expit(zc)
        c = (self.W * p[:, None]).mean(axis=0) + self.offset
        dp = p * (1.0 - p) / Ac.n_rows

        def jac_t(v):
            return self._grad(Ac.full, dp * (self.W @ np.asarray(v, dtype=float)), 1.0)

        return f0, grad, c, jac_t

    def _full_evaluation_compiled(self, x):
        """:meth:`full_evaluation` in one compiled pass over the rows, or None.

        One pass computes the scores, the objective's value and gradient, the constraint
        values and ``J^T`` as an ``(n_params, m)`` matrix (so ``jac_t`` costs no further
        pass), where the numpy path makes three passes over the data. None when the kernel
        does not apply (see :meth:`pstorm_block`) or the data is not float64 in memory
        (which the kernel would have to copy).
        """
        Ao, Ac = self.A_obj, self.A_con
        loss_code = self._kernel_loss_code()
        if loss_code is None or not (Ao.in_place() and Ac.in_place()):
            return None
        from . import _kernels

        v, b = self._effective(x)
        m = self.n_constraints
        rows_o = np.arange(Ao.n_rows) if Ao.rows is None else Ao.rows
        rows_c = np.arange(Ac.n_rows) if Ac.rows is None else Ac.rows
        args = (v, float(b), self.b, self.u, loss_code, self._loss_alpha(), self.W)
        none = np.zeros(0, dtype=np.intp)
        if not m:
            parts = [(Ao, rows_o, none, False)]
        elif Ao.A is Ac.A:
            shared = Ao.rows is Ac.rows or (
                Ao.rows is not None and Ac.rows is not None and np.array_equal(Ao.rows, Ac.rows)
            )
            parts = [(Ao, rows_o, rows_c, shared)]
        else:
            parts = [(Ao, rows_o, none, False), (Ac, none, rows_c, False)]
        out = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        for src, ro, rc, shared in parts:
            res = _kernels.full_pass(*src.kernel_source(none)[:5], ro, rc, shared, *args)
            out = [a + r for a, r in zip(out, res, strict=True)]
        f, g, rsum, csum, G, gsum = out
        n_o, n_c = Ao.n_rows, Ac.n_rows
        grad = self._finish_grad(g, rsum, n_o)
        if not m:
            return float(f) / n_o, grad, np.zeros(0), lambda v: np.zeros_like(x)
        c = csum / n_c + self.offset

        def jac_t(y):
            y = np.asarray(y, dtype=float)
            return self._finish_grad(G @ y, float(gsum @ y), n_c)

        return float(f) / n_o, grad, c, jac_t

    # -- the same minibatch at two points (PStorm's fast path) ---------------------------------
    def _score_pair(self, A, x1, x2):
        """Scores at two points as a ``(b, 2)`` array: one product with a two-column matrix."""
        v1, b1 = self._effective(x1)
        v2, b2 = self._effective(x2)
        if isinstance(A, _SparseRows):
            Z = np.column_stack([A @ v1, A @ v2])
        else:
            Z = A @ np.column_stack([v1, v2])
        if self.fit_intercept:
            Z += np.array([b1, b2])
        return Z

    def objective_pair(self, x1, x2, batch, a1, a2):
        """``a1 * objective(x1, batch) + a2 * objective(x2, batch)`` with one backward product."""
        A = self.A_obj(batch)
        b = self._sel(self.b, batch)[:, None]
        R = self._sel(self.bu, batch)[:, None] * self.loss.derivative(
            b * self._score_pair(A, x1, x2)
        )
        return self._grad(A, R @ np.array([a1, a2]), A.shape[0])

    def constraints_pair(self, x1, x2, batch):
        """Values at both points and ``vjp(U1, U2) = sum_i J_i(x1)^T U1_i + J_i(x2)^T U2_i``."""
        A = self.A_con(batch)
        W = self._sel(self.W, batch)
        P = expit(self._score_pair(A, x1, x2))
        C1 = W * P[:, :1] + self.offset
        C2 = W * P[:, 1:] + self.offset
        dP = P * (1.0 - P)

        def vjp(U1, U2):
            q = dP[:, 0] * np.einsum("ij,ij->i", U1, W) + dP[:, 1] * np.einsum("ij,ij->i", U2, W)
            return self._grad(A, q, 1.0)

        return C1, C2, vjp

    # -- a block of PStorm iterations in compiled code ----------------------------------------
    #: Set to False (on the class or an instance) to keep PStorm on the numpy path.
    use_kernel = True

    def _kernel_loss_code(self):
        """The kernel's code of the loss, or None when the compiled path does not apply."""
        from . import _kernels

        if not (self.use_kernel and _kernels.available()):
            return None
        # Exact types only: a subclass may change the maths.
        return {Logistic: 0, TruncatedLogistic: 1, SigmoidLoss: 2}.get(type(self.loss))

    def _loss_alpha(self):
        return float(getattr(self.loss, "alpha", 1.0))

    def _kernel_prox(self):
        """``(lam, lower, upper)`` of ``h`` for the kernel, or None if it does not know ``h``."""
        h, p = self.h, self.n_params
        lam, lower, upper = np.zeros(p), np.full(p, -np.inf), np.full(p, np.inf)
        # Exact types only: a subclass may override the prox.
        if type(h) in (NoProx, Prox):
            pass
        elif type(h) is L1:
            lam = np.broadcast_to(h._lam(lam), (p,)).astype(float)
        elif type(h) is Box:
            lower = np.broadcast_to(h.lower, (p,)).astype(float)
            upper = np.broadcast_to(h.upper, (p,)).astype(float)
        else:
            return None
        return lam, lower, upper

    def _block_draws(self, est, batch_size, n_iter, rng, counter, budget):
        """The minibatches of up to ``n_iter`` iterations, as an ``(T, k, b)`` index array.

        ``k`` is 1, 2 or 3 (objective, constraint, second constraint batch), ``T`` stops where
        the numpy loop would (the budget is tested before each iteration), and the counts are
        those of ``est.draw`` and ``storm_direction``. Returns None if ``T`` is 0.
        """
        if counter.evaluations >= budget:
            return None
        ranges = [self.n_objective_samples]
        if self.n_constraints:
            ranges += [self.n_constraint_samples] * (1 + (est.estimator == "independent"))
        if type(self).sample is FiniteSumProblem.sample and len(set(ranges)) == 1:
            # One call for the whole block: ``integers`` with one range draws its values in
            # sequence from the generator's stream, so this is the per-iteration calls' sample
            # (the kernel-vs-numpy tests check it).
            per_it = 2 * batch_size * len(ranges)
            # The iterations the budget allows: the least T with E + T per_it >= budget
            # (the budget may be a float; the two loops correct the division's rounding).
            E = counter.evaluations
            T = int(np.ceil((budget - E) / per_it))
            while T > 1 and E + (T - 1) * per_it >= budget:
                T -= 1
            while E + T * per_it < budget:
                T += 1
            T = min(n_iter, T)
            draws = rng.integers(ranges[0], size=(T, len(ranges), batch_size))
            counter.add("objective", draws=T * batch_size, evaluations=2 * T * batch_size)
            if len(ranges) > 1:
                k = (len(ranges) - 1) * T * batch_size
                counter.add("constraint", draws=k, evaluations=2 * k)
            return draws
        out = []
        while len(out) < n_iter and counter.evaluations < budget:
            batches = [b for b in est.draw(rng, batch_size, counter) if b is not None]
            counter.add("objective", evaluations=2 * len(batches[0]))
            for b in batches[1:]:
                counter.add("constraint", evaluations=2 * len(b))
            out.append(batches)
        return np.array(out, dtype=np.intp)

    def pstorm_block(self, est):
        """A runner of PStorm iterations in compiled code, or None for the numpy path.

        None when numba is not installed, when :attr:`use_kernel` is false, or when the
        loss or ``h`` is not one the kernel knows (a subclass of them included).

        Parameters
        ----------
        est : AugmentedLagrangianEstimator
            The estimator the iterations use (its ``problem`` is this problem).

        Returns
        -------
        run : callable or None
            ``run(z, d, y, beta, *, eta, eta_slack, keep, batch_size, n_iter, rng, counter,
            budget) -> (z, d, n_done)`` runs up to ``n_iter`` iterations of
            :func:`~sklearn_ialm.solver.pstorm.pstorm`'s loop (fewer if the budget runs out
            first), drawing each minibatch with ``est.draw`` and counting it exactly as the
            numpy path does.
        """
        from . import _kernels

        loss_code = self._kernel_loss_code()
        prox = self._kernel_prox()
        if loss_code is None or prox is None:
            return None
        alpha = self._loss_alpha()
        nf = self.n_features
        inv_scale = np.broadcast_to(self._inv_scale, (nf,)).astype(float)
        center = np.zeros(nf) if self.feature_center is None else self.feature_center
        offset = self.offset
        ineq = np.asarray(est.ineq, dtype=bool)
        no_rows = np.zeros((0, 0), dtype=np.intp)

        def run(z, d, y, beta, *, eta, eta_slack, keep, batch_size, n_iter, rng, counter, budget):
            draws = self._block_draws(est, batch_size, n_iter, rng, counter, budget)
            if draws is None:
                return z, d, 0
            idx_o = draws[:, 0]
            o_src = self.A_obj.kernel_source(idx_o)
            idx_c = idx_c2 = ridx_c = ridx_c2 = no_rows
            c_src = o_src
            if draws.shape[1] > 1:
                idx_c = draws[:, 1]
                if draws.shape[1] > 2:
                    idx_c2 = draws[:, 2]
                # One source for both constraint batches (gathered together if need be).
                both = idx_c if not idx_c2.size else np.concatenate([idx_c, idx_c2])
                c_src = self.A_con.kernel_source(both)
                ridx_c, ridx_c2 = c_src[5][: len(draws)], c_src[5][len(draws) :]
            z, d = _kernels.pstorm_block(
                np.array(z, dtype=float),
                np.array(d, dtype=float),
                np.asarray(y, dtype=float).reshape(self.n_constraints),
                float(beta), float(eta), float(eta_slack), float(keep),
                nf, self.fit_intercept, inv_scale, center, *prox, loss_code, alpha,
                *o_src[:5], self.b, self.bu, idx_o, o_src[5],
                *c_src[:5], self.W, offset, ineq, idx_c, ridx_c, idx_c2, ridx_c2,
            )  # fmt: skip
            return z, d, draws.shape[0]

        return run

    # -- constants -----------------------------------------------------------------------------
    def _top_eigenvalue(self, A, weights, rng, n_iter=20, max_rows=50_000):
        """Largest eigenvalue of ``A~^T diag(weights) A~ / n`` (``A~`` with the intercept column).

        Power iteration from a random start converges from below; the 10 % margin covers the
        remaining gap on the problems we measured. Above ``max_rows`` rows it runs on a fixed
        random subset of that many rows (a mean over rows, estimated from 50000 of them), so
        that this set-up cost does not grow with the data.
        """
        n = A.shape[0]
        if n > max_rows:
            keep = np.sort(rng.choice(n, size=max_rows, replace=False))
            A = A.A[A.rows[keep]] if isinstance(A, _Subset) else A[keep]
            weights = weights[keep]
            n = max_rows
        v = rng.standard_normal(self.n_params)
        lam = 0.0
        gram = self._compiled_gram(A, weights, n)
        for _ in range(n_iter):
            v /= np.linalg.norm(v)
            w = self._grad(A, weights * self._score(A, v), n) if gram is None else gram(v)
            lam = float(v @ w)
            v = w
        return 1.1 * lam

    def _compiled_gram(self, A, weights, n):
        """``v -> _grad(A, weights * _score(A, v), n)`` in one compiled pass, or None."""
        if self._kernel_loss_code() is None:
            return None
        if isinstance(A, _Subset):
            A, rows = A.A, A.rows
        else:
            rows = np.arange(A.shape[0])
        src = _Rows(A)
        if not src.in_place():
            return None
        from . import _kernels

        source = src.kernel_source(rows[:0])[:5]

        def gram(v):
            v_eff, b = self._effective(v)
            g, rsum = _kernels.gram_pass(*source, rows, v_eff, float(b), weights)
            return self._finish_grad(g, rsum if self.fit_intercept else 0.0, n)

        return gram

    def smoothness_bound(self) -> tuple[float, float]:
        """``(L0, LJ)`` from the data: spectral bounds of the Hessians.

        With ``lambda_D = lambda_max(A^T diag(u) A / n)`` over the objective rows and
        ``lambda_S = lambda_max(A^T A / n)`` over the constraint rows (one power iteration
        serves both when they are the same rows, unweighted):
        ``L0 = loss.curvature * lambda_D`` bounds the Hessian of ``g``, and for the penalty
        ``|c|^2 / 2``, whose Hessian is ``J^T J + sum_k c_k hess c_k``, the per-row bounds
        ``|sigmoid'| <= 1/4`` and ``|sigmoid''| <= 1/(6 sqrt 3)`` give
        ``|J_k| <= 1/4 sqrt(lambda_S mean W_k^2)`` and
        ``|hess c_k| <= 1/(6 sqrt 3) lambda_max(A^T diag|W_k| A / n)``.
        """
        rng = np.random.default_rng(0)
        lam_obj = self._top_eigenvalue(self.A_obj.full, self.u, rng)
        L0 = self.loss.curvature * lam_obj
        if not self.n_constraints:
            return L0, 0.0
        same_rows = self.A_obj.A is self.A_con.A and (self.A_obj.rows is self.A_con.rows is None)
        if same_rows and np.all(self.u == 1.0):
            lam = lam_obj
        else:
            lam = self._top_eigenvalue(self.A_con.full, np.ones(self.n_constraint_samples), rng)
        absW = np.abs(self.W)
        jac = 0.25 * np.sqrt(lam * np.mean(self.W**2, axis=0))
        # One power iteration per distinct |W_k| (the two sides of a parity constraint share).
        # Columns are compared pairwise: np.unique(axis=1) on long columns takes seconds.
        hess = np.empty(self.n_constraints)
        for k in range(self.n_constraints):
            same = [j for j in range(k) if np.array_equal(absW[:, j], absW[:, k])]
            hess[k] = (
                hess[same[0]]
                if same
                else SIGMOID_CURVATURE * self._top_eigenvalue(self.A_con.full, absW[:, k], rng)
            )
        cmax = absW.mean(axis=0) + np.abs(self.offset)
        return L0, float(np.sum(jac**2 + cmax * hess))
