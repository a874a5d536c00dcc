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
from ..solver.prox import NoProx
from .losses import SIGMOID_CURVATURE

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


class _Rows:
    """Row access with a one-entry cache: PStorm reads each minibatch at two points."""

    def __init__(self, A):
        if sp.issparse(A):
            A = sp.csr_matrix(A)
            A.sort_indices()
        self.A = A
        self.sparse = sp.issparse(A)
        self._key = None
        self._rows = None

    def __call__(self, idx):
        if isinstance(idx, slice):
            return self.A if idx == slice(None) else self.A[idx]
        if idx is not self._key:
            self._key = idx
            self._rows = _SparseRows(self.A, idx) if self.sparse else self.A[idx]
        return self._rows


def _rms_row_norm(A) -> float:
    sq = A.multiply(A).sum() if sp.issparse(A) else np.einsum("ij,ij->", A, A)
    return float(np.sqrt(sq / max(A.shape[0], 1)))


def _rmatvec(A, r):
    """``A.T @ r`` for a dense block, a CSR matrix or a sparse minibatch."""
    if isinstance(A, _SparseRows):
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
    feature_scale : float or "auto", default=1.0
        The score is ``(a.w) / feature_scale + b0``: the same model as ``a.x + b0`` with
        ``x = w / feature_scale`` (:meth:`coef` maps back). Residuals and the tolerance then
        refer to features of root-mean-square row norm one when ``"auto"``, whatever their
        number and scale (the paper's data have rows of norm about 1 to 4).

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
    ):
        W = np.asarray(W, dtype=float)
        if W.ndim == 1:
            W = W[:, None]
        super().__init__(A_objective.shape[0], A_constraint.shape[0] if W.shape[1] else 0)
        self.A_obj = _Rows(A_objective)
        self.A_con = _Rows(A_constraint)
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
            feature_scale = _rms_row_norm(A_objective) or 1.0
        self.feature_scale = float(feature_scale)
        self._inv_scale = 1.0 / self.feature_scale
        self.smoothness = self.smoothness_bound() if smoothness is None else tuple(smoothness)
        self.constraint_names = constraint_names

    def coef(self, x):
        """Split the solver's ``x`` into the model's ``(coef, intercept)``."""
        coef = x[: self.n_features] * self._inv_scale
        return coef, (float(x[-1]) if self.fit_intercept else 0.0)

    # -- helpers -----------------------------------------------------------------------------
    def _score(self, A, x):
        z = A @ x[: self.n_features]
        if self.feature_scale != 1.0:
            z *= self._inv_scale
        if self.fit_intercept:
            z = z + x[-1]
        return z

    def _grad(self, A, r, n):
        g = _rmatvec(A, r)
        if self.feature_scale != 1.0:
            g *= self._inv_scale
        if self.fit_intercept:
            return np.append(g, r.sum()) / n
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

    # -- constants -----------------------------------------------------------------------------
    def _top_eigenvalue(self, A, weights, rng, n_iter=40):
        """Largest eigenvalue of ``A~^T diag(weights) A~ / n`` (``A~`` with the intercept column).

        Power iteration from a random start converges from below; the 10 % margin covers the
        remaining gap at 40 iterations on the problems we measured.
        """
        n = A.shape[0]
        v = rng.standard_normal(self.n_params)
        lam = 0.0
        for _ in range(n_iter):
            v /= np.linalg.norm(v)
            z = weights * self._score(A, v)
            w = self._grad(A, z, n)
            lam = float(v @ w)
            v = w
        return 1.1 * lam

    def smoothness_bound(self) -> tuple[float, float]:
        """``(L0, LJ)`` from the data: spectral bounds of the Hessians.

        ``L0 = loss.curvature * lambda_max(A^T diag(u) A / n)`` bounds the Hessian of ``g``.
        For the penalty ``|c|^2 / 2``, whose Hessian is ``J^T J + sum_k c_k hess c_k``, with
        ``|sigmoid'| <= 1/4`` and ``|sigmoid''| <= 1/(6 sqrt 3)``:
        ``|J_k| <= 1/4 sqrt(lambda_max(A^T A / n) mean W_k^2)`` and
        ``|hess c_k| <= 1/(6 sqrt 3) lambda_max(A^T diag|W_k| A / n)``.
        """
        rng = np.random.default_rng(0)
        A_obj, A_con = self.A_obj.A, self.A_con.A
        L0 = self.loss.curvature * self._top_eigenvalue(A_obj, self.u, rng)
        if not self.n_constraints:
            return L0, 0.0
        lam = self._top_eigenvalue(A_con, np.ones(A_con.shape[0]), rng)
        LJ = 0.0
        for k in range(self.n_constraints):
            w = self.W[:, k]
            jac = 0.25 * np.sqrt(lam * np.mean(w**2))
            hess = SIGMOID_CURVATURE * self._top_eigenvalue(A_con, np.abs(w), rng)
            cmax = np.mean(np.abs(w)) + abs(self.offset[k])
            LJ += jac**2 + cmax * hess
        return L0, float(LJ)
