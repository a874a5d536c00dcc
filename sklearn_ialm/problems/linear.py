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

import copy
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from ..solver.problem import FiniteSumProblem
from ..solver.prox import L1, Box, NoProx, Prox, Ridge
from .losses import SIGMOID_CURVATURE, Logistic, SigmoidLoss, TruncatedLogistic

__all__ = ["LinearProblem"]

#: Above this many parameters the smoothness bound uses power iterations instead of the
#: ``d x d`` Gram matrices (8 * d**2 bytes each).
_GRAM_MAX_PARAMS = 1024
#: Above this many rows in a matrix the Gram matrices are estimated from that many rows.
_GRAM_MAX_ROWS = 200_000
#: Rows per block where a per-row array is read in blocks (a few hundred kB each).
_BLOCK_ROWS = 1 << 15


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

    # np.bincount of no entries is an int array even with weights: a minibatch of empty rows.
    def __matmul__(self, x):
        out = np.bincount(self.rows, weights=self.vals * x[self.cols], minlength=self.shape[0])
        return out.astype(float, copy=False)

    def rmatvec(self, r):
        out = np.bincount(self.cols, weights=self.vals * r[self.rows], minlength=self.shape[1])
        return out.astype(float, copy=False)


class _Subset:
    """Rows ``rows`` of a matrix, for full-data products without copying those rows."""

    def __init__(self, A, rows):
        self.A, self.rows = A, rows
        self.shape = (len(rows), A.shape[1])

    def __matmul__(self, x):
        return (self.A @ x)[self.rows]

    def rmatvec(self, r):
        # A row named several times counts as many times (an assignment would keep one).
        if r.ndim == 1:
            return self.A.T @ np.bincount(self.rows, weights=r, minlength=self.A.shape[0])
        return self.A.T @ (self._spreader() @ r)

    def _spreader(self):
        """The ``(n_rows of A, len(rows))`` 0/1 matrix that spreads values of the subset's
        rows over ``A``'s rows (formed once: per-column ``bincount`` took 13 ms a call for
        ten columns of a9a's rows)."""
        if getattr(self, "_spread_matrix", None) is None:
            k = len(self.rows)
            self._spread_matrix = sp.csr_matrix(
                (np.ones(k), (self.rows, np.arange(k))), shape=(self.A.shape[0], k)
            )
        return self._spread_matrix


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


class _Gathered(NamedTuple):
    """Rows copied in order for :meth:`LinearProblem.full_evaluation` (see
    :meth:`LinearProblem.gather`): ``A`` holds the ``n_o`` objective rows, then the ``n_c``
    constraint rows; ``b``, ``u`` and ``W`` are theirs."""

    A: np.ndarray
    n_o: int
    n_c: int
    b: np.ndarray
    u: np.ndarray
    W: np.ndarray


# Placeholders for the unused half of a kernel source (fixed dtypes: one compiled signature).
_NO_DENSE = np.zeros((0, 0))
_NO_DATA = np.zeros(0)
_NO_INDEX = np.zeros(0, dtype=np.intp)
_NO_INDPTR = np.zeros(1, dtype=np.intp)


#: Above this many entries in the classes seen (classes times weight columns), a block's
#: rows are matched to them by a sort, not by comparing every row with every class.
_CLASS_COMPARE_MAX = 4096


def _block_weight_classes(blocks, limit):
    """The distinct rows of the weight blocks ``blocks``, in lexicographic order, or None
    when there are more than ``limit`` of them. Only one block is held at a time."""
    seen = None
    for Wb in blocks:
        if seen is not None and seen.size <= _CLASS_COMPARE_MAX:
            # Rows of a class already seen (nearly all of them) need no sort.
            known = (Wb[:, None, :] == seen[None, :, :]).all(axis=2).any(axis=1)
            if known.all():
                continue
            Wb = np.vstack([seen, Wb[~known]])
        elif seen is not None:
            # Many classes of many columns (a band of 1000 groups: 1000 classes of 1003
            # weights): the comparison above grows like their product for every row (with
            # the classes' masks in the sweep, 60 s of set-up there; 14 s with sorts).
            Wb = np.vstack([seen, np.unique(Wb, axis=0)])
        seen = np.unique(Wb, axis=0)
        if len(seen) > limit:
            return None
    return np.zeros((0, 0)) if seen is None else seen


def _class_labels(Wb, classes):
    """The index in ``classes`` (distinct rows, in lexicographic order) of each row of the
    weight block ``Wb``, every row being one of them."""
    if classes.size <= _CLASS_COMPARE_MAX:
        return np.argmax((Wb[:, None, :] == classes[None, :, :]).all(axis=2), axis=1)
    # The block's distinct rows are among the classes: the union's order is theirs.
    distinct, inverse = np.unique(Wb, axis=0, return_inverse=True)
    where = np.unique(np.vstack([classes, distinct]), axis=0, return_inverse=True)[1]
    return where.reshape(-1)[len(classes) :][inverse.reshape(-1)]


def _tighter(bound, current):
    """``bound`` where it is materially (1 %) below ``current``, else ``current``."""
    return bound if bound < 0.99 * current else current


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


def _mean_one(u):
    """``u / u.mean()``, or ``u`` itself (not a copy) when its mean is exactly one.

    Dividing by 1.0 changes no value, so sharing the caller's array gives the same problem;
    at a million rows each per-row vector is 8 MB (the estimators pass weights of mean one).
    """
    mean = u.mean()
    return u if mean == 1.0 and u.dtype == np.float64 else u / mean


def _product(b, u):
    """``b * u``, or whichever factor is all ones (the same values, no new array)."""
    if np.all(u == 1.0):
        return b
    if np.all(b == 1.0):
        return u
    return b * u


#: Rows of a dense block of the weighted Gram matrix: blocks of about 1 MB.
_GRAM_BLOCK_BYTES = 1 << 20
#: Entries of a block of rows of the smoothness bound's set-up sweep (see
#: :meth:`LinearProblem._gram_sums`): 512 kB of float64. Blocks of 1 MB were no faster
#: (anchor task: 46.4 vs 46.7 ms, 100000 x 20: 64.9 vs 64.8 ms) and their temporaries
#: raised a 100000 x 20 Neyman-Pearson fit's peak from 0.36 to 0.40 times X.
_SWEEP_ENTRIES = 1 << 16
#: The finish's Hessians read up to this many rows per parameter, at least
#: ``_HESSIAN_MIN_ROWS`` (see :meth:`LinearProblem._hessian_sample`).
_HESSIAN_ROWS_PER_PARAM = 100
_HESSIAN_MIN_ROWS = 10_000
#: Rows of at most this many entries (columns, or CSR non-zeros) are sampled only past four
#: times that many rows (see :meth:`LinearProblem._hessian_sample`).
_GRAM_NARROW = 16


def _draw_chances(importance, size):
    """Chances ``min(1, lam * importance)`` summing to ``size`` (rows of no importance are
    not drawn): ``lam`` by fixed-point steps, each setting it for the rows not yet capped."""
    capped = np.zeros(len(importance), bool)
    for _ in range(100):
        free = importance[~capped].sum()
        lam = (size - capped.sum()) / free if free > 0 else 0.0
        now = lam * importance >= 1.0
        if np.array_equal(now, capped):
            break
        capped = now
    return np.minimum(1.0, lam * importance)


def _kernels_available():
    from . import _kernels

    return _kernels.available()


def _hessian_rows(n_params, n_rows):
    """The most rows of ``n_rows`` a Hessian of the finish reads (see
    :meth:`LinearProblem._hessian_sample`): a twentieth of many rows, whose Gram matrix
    costs little beside an evaluation, keeps the Newton steps near Newton's own (a reweighted
    logistic fit on 1e6 x 20 rows: the gradient fell 4 to 10 times a step from 10000 rows)."""
    return max(_HESSIAN_MIN_ROWS, _HESSIAN_ROWS_PER_PARAM * n_params, n_rows // 20)


def _weighted_gram(A, r, compiled, low, inv=None, rows=None):
    """``(sum_i r_i a_i a_i^T, sum_i r_i a_i, sum_i r_i)`` over the rows ``a_i`` of ``A``
    (those ``rows``, None: all), each column times ``inv`` (None: as it is), in one read of
    the rows: a compiled loop over all of a CSR matrix's rows (with ``compiled``), else
    blocks of rows, see :func:`_block_gram` (``low``: dense blocks in float32 where their
    products stay finite). ``r``: the weights, or a function ``r(B, rows)`` of a block's
    raw rows and its positions (a slice), which weighs the rows in the block's own read.

    ``inv`` puts the rows in the solver's units before any product: raw sums of a column of
    1e200 overflow, and of 1e-300 underflow to zeros that the scale then turned into NaN.
    ``rows`` are gathered block by block: a sample's rows are never copied whole (the
    memory of a fit is the training matrix and a few per-row vectors).
    """
    n = A.shape[0] if rows is None else len(rows)
    sparse = sp.issparse(A)
    if sparse and compiled and rows is None and A.format == "csr" and A.data.dtype == np.float64:
        from . import _kernels

        r = np.asarray(r, dtype=float)
        G, s = _kernels.csr_gram(A.data, A.indices, A.indptr, r, A.shape[1], inv)
        return G, s, float(r.sum())
    d = A.shape[1]
    G, s, t = np.zeros((d, d)), np.zeros(d), 0.0
    width = A.nnz / max(A.shape[0], 1) if sparse else d
    step = max(1, int(_GRAM_BLOCK_BYTES // (8 * max(width, 1))))
    for start in range(0, n, step):
        here = slice(start, start + step)
        gathered = rows is not None and not sparse
        if rows is None:
            B = A[here]
        else:  # (np.take: half the time of fancy indexing on 10100 x 101 rows)
            B = np.take(A, rows[here], axis=0) if gathered else A[rows[here]]
        rb = r(B, here) if callable(r) else r[here]
        scale = inv
        if gathered and inv is not None:
            B *= inv  # the block is our own copy: scaled in place
            scale = None
        g, m = _block_gram(_scaled_block(B, scale, low and not sparse), rb, compiled)
        if not np.isfinite(g).all():
            g, m = _block_gram(_scaled_block(B, scale, False), rb, compiled)
        G += g
        s += m
        t += float(rb.sum())
    return G, s, t


def _block_gram(B, r, compiled):
    """``(sum_i r_i a_i a_i^T, sum_i r_i a_i)`` over the rows of the block ``B`` (``r`` None:
    weights one), the sums in float64.

    A float32 block (see :func:`_scaled_block`) is multiplied in float32: a Gram matrix for
    a step size or a Newton step needs no more than its seven digits, and it took 9 ms
    where float64 took 14 ms (the anchor task's 30000 x 100 rows, one thread). Not where a
    column centre is subtracted from the sums afterwards: a mean many times the spread
    would cancel those digits. CSR rows go to the compiled loop (``compiled``), else to
    scipy.
    """
    if sp.issparse(B):
        B = B.tocsr()
        if compiled and B.data.dtype == np.float64:
            from . import _kernels

            w = np.ones(B.shape[0]) if r is None else np.asarray(r, dtype=float)
            return _kernels.csr_gram(B.data, B.indices, B.indptr, w, B.shape[1])
        Bw = B if r is None else B.multiply(r[:, None]).tocsr()
        return (B.T @ Bw).toarray(), np.asarray(Bw.sum(axis=0)).ravel()
    w = np.ones(len(B), B.dtype) if r is None else r.astype(B.dtype)
    if r is None:
        G = (B.T @ B).astype(float)  # one array: a symmetric product, half the arithmetic
    else:
        G = (B.T @ (B * w[:, None])).astype(float)
        G = 0.5 * (G + G.T)  # (the two triangles' float32 rounding differs)
    return G, np.asarray(w @ B, dtype=float)


def _class_sums(B, Wb, classes, live, weighted, compiled):
    """``[(G, s, t)]`` of the rows ``B`` (weights ``Wb``) for each class ``live`` of the
    smoothness bound's sweep: the unweighted sums of the rows whose weights are the class's,
    or (``weighted``: too many classes) the sums weighted by each column."""
    out = []
    labels = None if weighted or len(classes) == 1 else _class_labels(Wb, classes)
    for k in live:
        if weighted:
            out.append((*_block_gram(B, Wb[:, k], compiled), Wb[:, k].sum()))
        else:
            Bk = B if len(classes) == 1 else B[labels == k]
            out.append((*_block_gram(Bk, None, compiled), Bk.shape[0]))
    return out


def _scaled_block(B, inv, low):
    """A block of rows (of the smoothness bound's sweep, or of a Hessian) in the solver's
    units (columns times ``inv``, None: as they are), formed in one pass: with ``low``,
    dense rows in float32 (see :func:`_block_gram`; beyond its range they become inf)."""
    if sp.issparse(B):
        return B if inv is None else B.multiply(inv[None, :]).tocsr()
    if not low:
        return np.asarray(B, dtype=float) if inv is None else B * inv
    out = np.empty(B.shape, dtype=np.float32)
    with np.errstate(over="ignore"):
        if inv is None:
            out[...] = B
        else:
            np.multiply(B, inv, out=out, casting="unsafe")
    return out


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
    levels : ndarray of shape (m, n_levels), optional
        Free levels of the constraints: ``c(x) + levels @ tau <= 0`` for some ``tau``, over
        which :func:`~sklearn_ialm.solver.stoc_ialm` minimises too (see
        :func:`~sklearn_ialm.problems.fairness_problem`, whose between-groups gaps are a band
        of free position). Each constraint has at most one nonzero entry.
    rows_objective, rows_constraint : array of int, optional
        Use only these rows of ``A_objective`` / ``A_constraint`` (both may be the same
        matrix): the subsets are read in place, never copied.
    constraint_strata : array of shape (n_constraint_samples,), optional
        Labels of the constraint rows to stratify the constraint minibatches by (see
        :meth:`~sklearn_ialm.solver.FiniteSumProblem.stratify_constraints`).
    feature_scale : float, ndarray of shape (n_features,) or "auto", default=1.0
        The score is ``((a - feature_center) . w) / feature_scale + b0``: the same linear
        model as ``a.coef + intercept``, in coordinates where the features are centred and
        scaled (:meth:`coef` maps back, :meth:`point` maps forward). The data are never
        copied: centring and scaling act on the parameters, not on the rows. With ``"auto"``
        the residuals and the tolerance refer to features of (weighted) root-mean-square row
        norm one over the objective rows, whatever their number and scale.
    feature_center : ndarray of shape (n_features,), optional
        Column centre (needs ``fit_intercept=True``).
    dead_features : array of bool of shape (n_features,), optional
        Columns known not to move the score (zero, or constant beside the intercept, as the
        columns' moments tell): :meth:`second_order_evaluation` gives their weights no
        gradient, Jacobian or data curvature (a unit curvature in its place), so that the
        finish's Newton steps leave them where they are. The rounding of their centred
        sums read as a gradient which the Newton steps took in full: a constant column got
        a weight of 2e-12.

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

    #: The parameters of ``dead_features`` (a mask), or None; a class default for problems
    #: made without ``__init__`` (the Dask problem's in-memory views of its rows).
    _dead = None

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
        levels=None,
        constraint_strata=None,
        dead_features=None,
    ):
        W = np.asarray(W, dtype=float)
        if W.ndim == 1:
            W = W[:, None]
        n_obj = A_objective.shape[0] if rows_objective is None else len(rows_objective)
        n_con = A_constraint.shape[0] if rows_constraint is None else len(rows_constraint)
        super().__init__(n_obj, n_con if W.shape[1] else 0)
        # Rows read by the set-up below (scale, smoothness bound): the solver counts them.
        self.setup_evaluations = 0
        self.A_obj = _Rows(A_objective, rows_objective)
        self.A_con = _Rows(A_constraint, rows_constraint)
        self.n_features = A_objective.shape[1]
        self.fit_intercept = bool(fit_intercept)
        self.n_params = self.n_features + self.fit_intercept
        self.b = np.asarray(margins, dtype=float)
        self.u = _mean_one(
            np.ones(len(self.b)) if objective_weights is None else np.asarray(objective_weights)
        )
        self.bu = _product(self.b, self.u)
        self.loss = loss
        self.W = W
        self.offset = np.asarray(offset, dtype=float).reshape(W.shape[1])
        self.n_constraints = W.shape[1]
        self.inequality = np.broadcast_to(np.asarray(inequality, dtype=bool), (W.shape[1],))
        if levels is not None:
            levels = np.asarray(levels, dtype=float)
            if levels.ndim != 2 or levels.shape[0] != W.shape[1]:
                raise ValueError(
                    f"levels must have shape ({W.shape[1]}, n_levels), got {levels.shape}."
                )
            if np.any(np.count_nonzero(levels, axis=1) > 1) or np.any(
                np.any(levels != 0, axis=1) & ~self.inequality
            ):
                raise ValueError(
                    "levels: each constraint has at most one level, and only inequalities."
                )
        self.levels = levels
        self.stratify_constraints(constraint_strata)
        self.h = NoProx() if h is None else h
        # (Set again below once checked; the set-up sweep needs to know whether a centre is
        # subtracted from its sums.)
        self.feature_center = feature_center
        sums = None
        if isinstance(feature_scale, str) and feature_scale == "auto":
            if smoothness is None and self.n_params <= _GRAM_MAX_PARAMS:
                # The sweep behind the smoothness bound gives sum_i u_i |a_i|^2 as the trace
                # of its first Gram matrix: the scale costs no pass of its own.
                self._scaled = False  # raw sums, rescaled below
                sums = self._gram_sums()
                rms = np.sqrt(max(np.trace(sums[0][0]), 0.0) / max(self.A_obj.n_rows, 1))
                feature_scale = float(rms) or 1.0
            else:
                feature_scale = _rms_row_norm(self.A_obj, self.u) or 1.0
                self.setup_evaluations += self.A_obj.A.shape[0]  # every row is read
        if np.ndim(feature_scale) == 0:
            self.feature_scale = float(feature_scale)
        else:
            self.feature_scale = np.asarray(feature_scale, dtype=float).reshape(self.n_features)
        if not (np.all(np.isfinite(self.feature_scale)) and np.all(self.feature_scale > 0)):
            raise ValueError("feature_scale must be finite and > 0.")
        self._inv_scale = 1.0 / self.feature_scale
        self._scaled = np.any(self.feature_scale != 1.0)
        if sums is not None and self._scaled:
            G, mu, total, estimated = sums
            inv = float(self._inv_scale)
            sums = ([g * inv**2 for g in G], [v * inv for v in mu], total, estimated)
        if feature_center is not None:
            if not self.fit_intercept:
                # Centring moves part of the score into an intercept the model does not have.
                raise ValueError("feature_center needs fit_intercept=True.")
            feature_center = np.asarray(feature_center, dtype=float).reshape(self.n_features)
            if not np.any(feature_center):
                feature_center = None
        self.feature_center = feature_center
        self.smoothness = self.smoothness_bound(sums) if smoothness is None else tuple(smoothness)
        self.constraint_names = constraint_names
        if dead_features is not None and np.any(dead_features):
            dead = np.asarray(dead_features, dtype=bool).reshape(self.n_features)
            self._dead = np.r_[dead, np.zeros(int(self.fit_intercept), bool)]

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
        """Gradient in ``x`` of ``sum_i r_i score_i / n`` over the rows of ``A`` (one column
        per column of a 2-D ``r``)."""
        if r.ndim == 2:
            return self._finish_grads(_rmatvec(A, r), r.sum(axis=0), n)
        return self._finish_grad(_rmatvec(A, r), r.sum() if self.fit_intercept else 0.0, n)

    def _finish_grads(self, G, rsums, n):
        """:meth:`_finish_grad` of each column of ``G`` with its entry of ``rsums``, as the
        columns of an ``(n_params, k)`` array."""
        out = np.empty((self.n_params, G.shape[1]))
        for k in range(G.shape[1]):
            out[:, k] = self._finish_grad(G[:, k], float(rsums[k]), n)
        return out

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

    # -- rates on the constraint rows (what users measure) -------------------------------------
    def constraint_scores(self, x):
        """Scores of the constraint rows at ``x`` (one pass over those rows)."""
        return self._score(self.A_con.full, x)

    def rate_constraints(self, scores, *, hard=True, offset=None):
        """Constraint values ``mean_j W[j] q_j + offset`` for constraint-row ``scores``.

        ``q = 1[score > 0]`` (the predictions) when ``hard``, else ``sigmoid(score)`` (the
        smooth surrogate the solver works with). ``offset`` defaults to the problem's.
        """
        q = (scores > 0).astype(float) if hard else expit(scores)
        return q @ self.W / len(q) + (self.offset if offset is None else offset)

    def with_objective_weights(self, weights, *, overwrite=False):
        """The same problem (sharing its data) with objective row weights ``weights``
        (normalised to mean one); its smoothness bound is recomputed (one set-up sweep).

        With ``overwrite=True`` a float64 ``weights`` is normalised in place and kept (the
        caller gives it up): one n-vector less than a normalised copy.
        """
        other = copy.copy(self)
        u = np.asarray(weights, dtype=float).reshape(self.n_objective_samples)
        other.u = np.divide(u, u.mean(), out=u) if overwrite else _mean_one(u)
        other.bu = _product(other.b, other.u)
        other.setup_evaluations = 0
        other.smoothness = other.smoothness_bound()
        return other

    def with_offset(self, offset):
        """The same problem (sharing its data) with the constraint offsets ``offset``."""
        other = copy.copy(self)
        other.offset = np.asarray(offset, dtype=float).reshape(self.n_constraints)
        other.setup_evaluations = 0  # the set-up was done (and counted) once
        return other

    # -- all rows at once (the stopping rule) ------------------------------------------------
    def full_evaluation(self, x, rng=None, batches=None):
        """Objective value and gradient, constraint values and ``J^T`` on all rows.

        One product ``A @ x`` serves the objective and the constraints when they read the
        same matrix (the estimators' case), instead of one per oracle.
        """
        if isinstance(batches, _Gathered):
            return self._gathered_evaluation(x, batches)
        if batches is not None:
            return super().full_evaluation(x, rng, batches)
        compiled = self._full_evaluation_compiled(x)
        if compiled is not None:
            return compiled
        return self._numpy_evaluation(x)[:4]

    def _numpy_evaluation(self, x, jacobian=False):
        """:meth:`full_evaluation` by numpy's (and scipy's) products, and with ``jacobian``
        ``J`` as a fifth entry (else None): where the objective and the constraints read
        one matrix, the gradient and ``J`` come from one backward product with ``1 + m``
        columns instead of two (on CSR 2e5 x 1e4, a third of an evaluation)."""
        Ao, Ac = self.A_obj, self.A_con
        shared = self.n_constraints and Ao.A is Ac.A
        zc = None
        if shared:
            z_all = self._score(Ao.A, x)
            zo = z_all if Ao.rows is None else z_all[Ao.rows]
            zc = z_all if Ac.rows is None else z_all[Ac.rows]
            del z_all
        else:
            zo = self._score(Ao.full, x)
        # The products are formed in arrays made here (scores, and the values of the
        # package's losses, which are new arrays): a few n-vectors fewer at a time, with the
        # same values (a product of two floats does not depend on their order).
        m_obj = self.b * zo if zo is zc else np.multiply(zo, self.b, out=zo)
        own = type(self.loss) in (Logistic, TruncatedLogistic, SigmoidLoss)
        values = self.loss.value(m_obj)
        f0 = float(np.mean(np.multiply(values, self.u, out=values if own else None)))
        del values
        r = self.loss.derivative(m_obj)
        del m_obj, zo
        r = np.multiply(r, self.bu, out=r if own else None)
        fused = jacobian and shared
        grad = None if fused else self._grad(Ao.full, r, Ao.n_rows)
        if not self.n_constraints:
            return f0, grad, np.zeros(0), lambda v: np.zeros_like(x), np.zeros((0, len(x)))
        if not shared:
            zc = self._score(Ac.full, x)
        p = expit(zc, out=zc)
        del zc
        c = (self.W * p[:, None]).mean(axis=0) + self.offset
        dp = np.subtract(1.0, p)
        dp *= p
        dp /= Ac.n_rows
        del p

        def jac_t(v):
            # (A 2-D v, one column per vector, gives J^T v of each in one pass.)
            q = self.W @ np.asarray(v, dtype=float)
            q *= dp if q.ndim == 1 else dp[:, None]
            return self._grad(Ac.full, q, 1.0)

        if not jacobian:
            return f0, grad, c, jac_t, None
        if not fused:
            return f0, grad, c, jac_t, jac_t(np.eye(self.n_constraints)).T
        # Both cotangents as columns over the rows of the one matrix.
        Q = np.empty((Ao.A.shape[0], 1 + self.n_constraints))
        Q[:, 0] = r / Ao.n_rows if Ao.rows is None else np.bincount(
            Ao.rows, weights=r / Ao.n_rows, minlength=Ao.A.shape[0]
        )  # fmt: skip
        cot = self.W * dp[:, None]
        Q[:, 1:] = cot if Ac.rows is None else Ac.full._spreader() @ cot
        G = self._grad(Ao.A, Q, 1.0)
        return f0, G[:, 0], c, jac_t, G[:, 1:].T

    def gather(self, batches):
        """The rows of ``batches`` (objective rows, constraint rows) copied in order, as an
        evaluation batch that :meth:`full_evaluation` reads in one compiled sequential pass;
        None where that pass does not apply (see :meth:`_full_evaluation_compiled`).

        For a stop test that reads one subsample many times: its rows read in place are
        random reads, several times the cost a row of a sequential pass (on dense 1e6 x 20,
        the chunks' gathers took more time than the fit's minibatches and full passes
        together). The copy holds the subsample's rows only.
        """
        Ao, Ac = self.A_obj, self.A_con
        bo, bc = batches
        if self._dense_pass_code() is None or isinstance(bo, slice) or isinstance(bc, slice):
            return None
        m = self.n_constraints if bc is not None else 0
        ro = bo if Ao.rows is None else Ao.rows[bo]
        A = np.empty((len(bo) + (len(bc) if m else 0), Ao.A.shape[1]))
        np.take(Ao.A, ro, axis=0, out=A[: len(bo)])
        if m:
            np.take(Ac.A, bc if Ac.rows is None else Ac.rows[bc], axis=0, out=A[len(bo) :])
        return _Gathered(
            A,
            len(bo),
            len(bc) if m else 0,
            self.b[bo],
            self.u[bo],
            self.W[bc] if m else self.W[:0],
        )

    def _gathered_evaluation(self, x, g):
        """:meth:`full_evaluation` on the rows of a :meth:`gather` batch."""
        from . import _kernels

        v, b = self._effective(x)
        # The constraint rows follow the objective rows in the copy.
        rows_c = np.arange(g.n_o, g.n_o + g.n_c, dtype=np.intp) if g.n_c else None
        sums = _kernels.full_pass(
            g.A, None, rows_c, g.n_o, g.n_c, False, v, float(b), g.b, g.u,
            self._dense_pass_code(), self._loss_alpha(), g.W, self._signed_columns(),
        )  # fmt: skip
        return self._pass_evaluation(x, sums, g.n_o, g.n_c)

    def _dense_pass_code(self):
        """The kernel's loss code when the compiled pass over dense rows applies, else None:
        a loss the kernel has, and float64 dense rows read in place (see
        :meth:`_full_evaluation_compiled`)."""
        Ao, Ac = self.A_obj, self.A_con
        if Ao.sparse or Ac.sparse or not (Ao.in_place() and Ac.in_place()):
            return None
        return self._kernel_loss_code()

    def _signed_columns(self):
        """:func:`~._kernels.signed_columns` of ``W``, computed once per weight matrix: the
        pass accumulates ``J^T`` only for columns of ``W`` that differ up to sign (the two
        sides of a parity gap share one)."""
        from . import _kernels

        cached = getattr(self, "_kernel_columns", None)
        if cached is None or cached[0] is not self.W:
            cached = self._kernel_columns = (self.W, _kernels.signed_columns(self.W))
        return cached[1]

    def _pass_evaluation(self, x, sums, n_o, n_c):
        """:meth:`full_evaluation`'s ``(f0, grad, c, jac_t)`` from a compiled pass's sums over
        ``n_o`` objective and ``n_c`` constraint rows (``n_c = 0``: no constraints read)."""
        f, g, rsum, csum, G, gsum = sums
        grad = self._finish_grad(g, rsum, n_o)
        if not (self.n_constraints and n_c):
            return float(f) / n_o, grad, np.zeros(0), lambda v: np.zeros_like(x)

        def jac_t(y):
            y = np.asarray(y, dtype=float)
            if y.ndim == 2:
                return self._finish_grads(G @ y, gsum @ y, n_c)
            return self._finish_grad(G @ y, float(gsum @ y), n_c)

        return float(f) / n_o, grad, csum / n_c + self.offset, jac_t

    def _full_evaluation_compiled(self, x):
        """:meth:`full_evaluation` in one compiled pass over the rows, or None.

        One pass computes the scores, the objective's value and gradient, the constraint
        values and ``J^T`` as an ``(n_params, m)`` matrix (so ``jac_t`` costs no further
        pass), where the numpy path makes three passes over the data. None when the kernel
        does not apply (see :meth:`pstorm_block`), the data is not float64 in memory (which
        the kernel would have to copy) or is sparse: on CSR rows scipy's products and
        numpy's vectorised exp and log are faster than the compiled loops (a9a: 2.6 vs
        3.4 ms per stopping test, ``jac_t`` included).
        """
        Ao, Ac = self.A_obj, self.A_con
        loss_code = self._dense_pass_code()
        if loss_code is None:
            return None
        from . import _kernels

        v, b = self._effective(x)
        m = self.n_constraints
        args = (v, float(b), self.b, self.u, loss_code, self._loss_alpha(), self.W)
        args += (self._signed_columns(),)
        # (matrix, objective rows and count, constraint rows and count, shared); rows None
        # means all rows in order.
        obj, con = (Ao.rows, Ao.n_rows), (Ac.rows, Ac.n_rows)
        if not m:
            parts = [(Ao, *obj, None, 0, False)]
        elif Ao.A is Ac.A:
            shared = Ao.rows is Ac.rows or (
                Ao.rows is not None and Ac.rows is not None and np.array_equal(Ao.rows, Ac.rows)
            )
            parts = [(Ao, *obj, *con, shared)]
        else:
            parts = [(Ao, *obj, None, 0, False), (Ac, None, 0, *con, False)]
        out = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        for src, ro, n_ro, rc, n_rc, shared in parts:
            dense = src.kernel_source(_NO_INDEX)[0]
            res = _kernels.full_pass(dense, ro, rc, n_ro, n_rc, shared, *args)
            out = [a + r for a, r in zip(out, res, strict=True)]
        return self._pass_evaluation(x, out, Ao.n_rows, Ac.n_rows)

    # -- second order (the finish's Newton steps) -----------------------------------------------
    def second_order_available(self) -> bool:
        """Whether :meth:`second_order_evaluation` applies: the loss is one of this package's
        (exact types: a subclass may change the maths), whose second derivative is known."""
        return type(self.loss) in (Logistic, SigmoidLoss, TruncatedLogistic)

    def second_order_evaluation(self, x):
        """``(f0, grad, c, J, hessian)`` on all rows: :meth:`full_evaluation`'s values, the
        Jacobian ``J`` (``m x n_params``) from the same pass, and ``hessian(mu)``, the Hessian
        of ``g + mu . c`` at ``x`` for ``m`` weights ``mu`` (the finish's Newton steps).

        Every score is linear in ``x``, so that Hessian is one Gram matrix of the rows, each
        weighted by its second derivatives: ``u_i loss''(b_i z_i) / n_o`` on an objective row
        plus ``sigmoid''(z_j) (W_j . mu) / n_c`` on a constraint row. One weighted Gram matrix
        whatever the number of constraints (the constraints differ only in the rows' weights
        ``W_j``), formed when ``hessian`` is called, from the rows' scores (a read of every
        row) and, beyond :func:`_hessian_rows`, a fixed random sample of them
        (:attr:`curvature_passes` counts both). Above ``_GRAM_MAX_PARAMS`` parameters
        (``8 p**2`` bytes, and a factorisation of order ``p**3``) ``hessian`` returns a
        :class:`~scipy.sparse.linalg.LinearOperator` of Hessian-vector products instead, each
        a pass over the rows.
        """
        m = self.n_constraints
        compiled = self._full_evaluation_compiled(x)
        if compiled is not None:
            f0, grad, c, jac_t = compiled
            J = jac_t(np.eye(m)).T if m else np.zeros((0, self.n_params))
        else:
            f0, grad, c, _, J = self._numpy_evaluation(x, jacobian=True)
        x = np.array(x, dtype=float)

        def hessian(mu):
            H = self._hessian(x, np.asarray(mu, dtype=float))
            return H if self._dead is None else self._without_dead(H)

        if self._dead is not None:
            grad, J = np.where(self._dead, 0.0, grad), np.where(self._dead, 0.0, J)
        return f0, grad, c, J, hessian

    def _without_dead(self, H):
        """The Hessian ``H`` with the rows and columns of the dead features' weights those of
        a unit matrix (see ``dead_features``)."""
        dead = self._dead
        if isinstance(H, np.ndarray):
            H[dead, :] = 0.0
            H[:, dead] = 0.0
            H[dead, dead] = 1.0  # (the diagonal entries: a boolean index on both axes)
            return H
        from scipy.sparse.linalg import LinearOperator

        def matvec(v):
            v = np.ravel(v)
            return np.where(dead, v, H @ np.where(dead, 0.0, v))

        return LinearOperator(H.shape, matvec=matvec, dtype=float)

    @property
    def curvature_passes(self) -> float:
        """Reads of every row (in units of :meth:`full_evaluation_cost`) that a
        ``hessian(mu)`` of :meth:`second_order_evaluation` costs: the scores of the rows it
        weighs and the rows of its Gram matrix (the weights depend on the constraint values
        of the evaluation, so the Gram matrix cannot come in its pass)."""
        rows = 0
        for A, direct in self._curvature_matrices():
            if self.n_params > _GRAM_MAX_PARAMS:
                rows += A.shape[0]  # the scores; each product is a read more
                continue
            pick = self._hessian_sample(A)[0]
            if pick is None:
                rows += 2 * A.shape[0]
            else:
                rows += len(pick) + (0 if direct else A.shape[0])
        return rows / self.full_evaluation_cost()

    @property
    def curvature_cost(self) -> float:
        """The arithmetic of a ``hessian(mu)`` in evaluations, roughly: a Gram matrix row of
        ``w`` entries costs about ``w / 4`` rows of an evaluation (``w**2 / 2`` products
        against ``2 w`` and the loss's exponentials); the finish forms a cheap curvature
        at every Newton step (see :mod:`~sklearn_ialm.solver.finish`)."""
        rows = 0.0
        for A, direct in self._curvature_matrices():
            width = A.nnz / max(A.shape[0], 1) if sp.issparse(A) else A.shape[1]
            if self.n_params > _GRAM_MAX_PARAMS:
                rows += A.shape[0]
                continue
            pick = self._hessian_sample(A)[0]
            gram = A.shape[0] if pick is None else len(pick)
            rows += gram * width / 4 + (gram if direct and pick is not None else A.shape[0])
        return rows / self.full_evaluation_cost()

    def _curvature_matrices(self):
        """``[(matrix, direct)]``: each matrix the curvature reads, and whether its rows are
        the problem's rows as they are (no row subset), so that a sample of them is scored
        alone."""
        out = {}
        for rows in (self.A_obj, self.A_con)[: 1 + bool(self.n_constraints)]:
            A, direct = out.get(id(rows.A), (rows.A, True))
            out[id(rows.A)] = (A, direct and rows.rows is None)
        return list(out.values())

    def _hessian(self, x, mu):
        """``hessian(mu)`` of :meth:`second_order_evaluation` at ``x``."""
        if self.n_params > _GRAM_MAX_PARAMS:
            return self._hessian_operator(self._curvature_weights(x, mu, sample=False))
        H = np.zeros((self.n_params, self.n_params))
        compiled = self.use_kernel and _kernels_available()
        inv = np.broadcast_to(self._inv_scale, (self.n_features,)) if self._scaled else None
        # In float64, not float32 as the step-size sweep: the Newton steps' Hessian decides
        # where the finish stops within its tolerance, and float32 products left the dense
        # and the CSR layout of the same rows 1e-7 apart (float64: the same model).
        for A, pick, r in self._curvature_weights(x, mu, sample=True):
            H += self._gram_in_x(*_weighted_gram(A, r, compiled, False, inv, pick))
        return H

    def _hessian_sample(self, A):
        """``(pick, scale)``: the rows of ``A`` the Hessian's Gram matrix reads, all (``pick``
        None, ``scale`` 1) or, beyond ``_hessian_rows`` of them, a fixed random sample drawn
        once per matrix, each row's weight scaled by ``scale`` (one over its chance to be
        drawn: the sum over the sample is an unbiased estimate of the sum over all rows).
        The sample's indices are kept, not its rows (read block by block at each Hessian):
        a copy of them held ``max(10000, 100 p)`` rows, a tenth of 100000 x 20 training
        rows, through the rest of the fit.

        A row is drawn with a chance in proportion to its objective weight plus its largest
        constraint weight ``|W_jk|`` (capped at 1), so that the rows of small groups, whose
        constraint weights are large, are all read: drawn uniformly, the 271 rows of Adult's
        smallest race group were a hundred in a sample of 12600, and the error-rate parity
        finish spent its budget (633 reads, unconverged). A sample costs Newton steps all
        the same (there: 70 reads in the first finish, 46 with every row), so rows of at most
        ``_GRAM_NARROW`` entries (a9a's 14 non-zeros), whose Gram matrix costs a few passes,
        are all read up to four times ``_hessian_rows``. On the anchor task's 30000 rows (101
        columns) a Hessian from 10100 of them took 4.8 ms, from every row 13.8 ms, where an
        evaluation (the compiled pass) takes 2.3 ms.
        """
        n = A.shape[0]
        limit = _hessian_rows(self.n_params, n)
        width = A.nnz / max(n, 1) if sp.issparse(A) else A.shape[1]
        if n <= limit or (width <= _GRAM_NARROW and n <= 4 * limit):
            return None, 1.0
        cache = self.__dict__.setdefault("_hessian_cache", {})
        if id(A) not in cache:
            chance = _draw_chances(self._row_importance(A), limit)
            pick = np.flatnonzero(np.random.default_rng(0).random(n) < chance)
            cache[id(A)] = (A, pick, 1.0 / chance[pick])  # A kept: its id stays its own
        return cache[id(A)][1:]

    def _row_importance(self, A):
        """The objective weight plus the largest ``|W_jk|`` of each row of ``A`` (summed over
        the times a row subset names it)."""
        out = np.zeros(A.shape[0])
        for rows, weights in ((self.A_obj, self.u), (self.A_con, None)):
            if rows.A is not A or (weights is None and not self.n_constraints):
                continue
            if weights is None:
                # Column by column (a maximum along rows of a few entries took ten times as
                # long: 43 ms on 1e6 x 2).
                weights = np.abs(self.W[:, 0])
                for k in range(1, self.n_constraints):
                    np.maximum(weights, np.abs(self.W[:, k]), out=weights)
            out += weights if rows.rows is None else np.bincount(rows.rows, weights, len(out))
        return out

    def _curvature_weights(self, x, mu, *, sample):
        """``[(matrix, pick, weights)]``: the second derivatives of ``g + mu . c`` in the score
        of each row of each matrix read (zero off a row subset), on its
        :meth:`_hessian_sample` rows ``pick`` with ``sample`` (their weights scaled up to the
        sum over all rows), else on all rows (``pick`` None). Where only the sample is
        scored, ``weights`` is a function of a block of its rows (see :func:`_weighted_gram`).
        """
        Ao, Ac = self.A_obj, self.A_con
        sources = [(Ao, self._objective_curvature)]
        if self.n_constraints:
            sources.append((Ac, lambda z, sel: self._constraint_curvature(z, sel, mu)))
        out = []
        for A, direct in self._curvature_matrices():
            mine = [(rows, weigh) for rows, weigh in sources if rows.A is A]
            pick, scale = self._hessian_sample(A) if sample else (None, 1.0)
            if pick is not None and direct:
                # Only the sampled rows are scored, each block in the read that adds it to
                # the Gram matrix (see _weighted_gram).
                def weights(B, here, pick=pick, scale=scale, mine=mine):
                    z = self._score(B, x)
                    return scale[here] * sum(weigh(z, pick[here]) for _, weigh in mine)

                out.append((A, pick, weights))
                continue
            z = self._score(A, x)
            r = np.zeros(A.shape[0])
            for rows, weigh in mine:
                if rows.rows is None:
                    r += weigh(z, slice(None))
                else:
                    r += np.bincount(
                        rows.rows, weights=weigh(z[rows.rows], slice(None)),
                        minlength=A.shape[0],
                    )  # fmt: skip
            if pick is not None:
                r = r[pick]
            out.append((A, pick, r * scale))
        return out

    def _objective_curvature(self, z, sel):
        """``u_i loss''(b_i z_i) / n_o`` of the objective rows ``sel`` with scores ``z``."""
        return self.u[sel] * self.loss.second_derivative(self.b[sel] * z) / self.A_obj.n_rows

    def _constraint_curvature(self, z, sel, mu):
        """``sigmoid''(z_j) (W_j . mu) / n_c`` of the constraint rows ``sel``."""
        p = expit(z)
        return p * (1.0 - p) * (1.0 - 2.0 * p) * (self.W[sel] @ mu) / self.A_con.n_rows

    def _gram_in_x(self, G, s, t):
        """``sum_i r_i grad z_i grad z_i^T`` in the solver's ``x`` from the weighted sums of
        the rows ``[a / feature_scale, 1]``: ``G = sum r a a^T``, ``s = sum r a``,
        ``t = sum r`` (``a`` scaled).

        ``grad z = (a - feature_center) / feature_scale`` (and 1 for the intercept): the
        centre acts here, on ``d x d`` numbers, never on the rows.
        """
        d = self.n_features
        if self.feature_center is not None:
            c = self.feature_center * self._inv_scale
            G = G - np.outer(s, c) - np.outer(c, s) + t * np.outer(c, c)
            s = s - t * c
        H = np.empty((self.n_params, self.n_params))
        H[:d, :d] = G
        if self.fit_intercept:
            H[:d, d] = H[d, :d] = s
            H[d, d] = t
        return H

    def _hessian_operator(self, parts):
        """The Hessian of :meth:`_hessian` as products with it (wide data)."""
        from scipy.sparse.linalg import LinearOperator

        def matvec(v):
            v = np.ravel(v)
            return sum(self._grad(A, r * self._score(A, v), 1.0) for A, _, r in parts)

        return LinearOperator((self.n_params, self.n_params), matvec=matvec, dtype=float)

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
    #: On CSR data the compiled block may bring the coordinates no minibatch row reads up to
    #: date only when read (an iteration then costs O(non-zeros) instead of O(n_features)).
    #: "auto": when there are more than ``LAZY_RATIO`` times as many features as non-zeros in
    #: an iteration's rows (below that, the bookkeeping per non-zero costs more than the
    #: dense pass saves); True: whenever it applies; False: never.
    lazy_updates = "auto"
    #: Measured crossover (``benchmarks/kernel.py``): the lazy block costs about 12 ns more per
    #: non-zero read, the eager one about 5 ns per feature.
    LAZY_RATIO = 3.0

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
        """``(lam, lower, upper, ridge)`` of ``h`` for the kernel, or None if it does not know
        ``h``."""
        h, p = self.h, self.n_params
        lam, lower, upper = np.zeros(p), np.full(p, -np.inf), np.full(p, np.inf)
        ridge = np.zeros(p)
        # Exact types only: a subclass may override the prox.
        if type(h) in (NoProx, Prox):
            pass
        elif type(h) is L1:
            lam = np.broadcast_to(h._lam(lam), (p,)).astype(float)
        elif type(h) is Box:
            lower = np.broadcast_to(h.lower, (p,)).astype(float)
            upper = np.broadcast_to(h.upper, (p,)).astype(float)
        elif type(h) is Ridge:
            # The estimators' L2 penalty (C): without it here their fits ran the numpy path.
            ridge = np.broadcast_to(h._lam(ridge), (p,)).astype(float)
        else:
            return None
        return lam, lower, upper, ridge

    def _block_draws(self, est, batch_size, n_iter, rng, counter, budget):
        """The minibatches of up to ``n_iter`` iterations, as an ``(T, k, b)`` index array
        (stratified constraint batches: a list of ``k`` ``(T, b_k)`` arrays).

        ``k`` is 1, 2 or 3 (objective, constraint, second constraint batch), ``T`` stops where
        the numpy loop would (the budget is tested before each iteration), and the counts are
        those of ``est.draw`` and ``storm_direction``. Returns None if ``T`` is 0.
        """
        if counter.evaluations >= budget:
            return None
        ranges = [self.n_objective_samples]
        if self.n_constraints:
            ranges += [self.n_constraint_samples] * (1 + (est.estimator == "independent"))
        uniform = type(self).sample is FiniteSumProblem.sample and self._strata is None
        if uniform and len(set(ranges)) == 1:
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
        if self._strata is not None:
            return [np.array([b[i] for b in out], dtype=np.intp) for i in range(len(out[0]))]
        return np.array(out, dtype=np.intp)

    def _block_rows(self, draws):
        """``(problem, draws)`` whose rows the compiled block reads: this problem and the
        draws as they are (a problem whose rows live elsewhere brings the drawn rows here)."""
        return self, draws

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
        stratified = self._strata is not None
        if loss_code is None or prox is None or (stratified and est.estimator != "ustat"):
            return None
        alpha = self._loss_alpha()
        nf = self.n_features
        inv_scale = np.broadcast_to(self._inv_scale, (nf,)).astype(float)
        center = np.zeros(nf) if self.feature_center is None else self.feature_center
        offset = self.offset
        ineq = np.asarray(est.ineq, dtype=bool)
        no_rows = np.zeros((0, 0), dtype=np.intp)
        sparse = self.A_obj.sparse and (not self.n_constraints or self.A_con.sparse)
        plan = nnz_row = None
        if sparse and self.lazy_updates:
            plan = _kernels.lazy_plan(nf, est.dim, center, *prox)
            As = [self.A_obj.A] + ([self.A_con.A] if self.n_constraints else [])
            nnz_row = max(A.nnz / max(A.shape[0], 1) for A in As)

        row_alpha = {}

        def run(z, d, y, beta, *, eta, eta_slack, keep, batch_size, n_iter, rng, counter, budget):
            draws = self._block_draws(est, batch_size, n_iter, rng, counter, budget)
            if draws is None:
                return z, d, 0
            strata = None
            if stratified:
                # Objective and (longer) constraint batches apart, (T, b) and (T, S per).
                pb, draws = self, [np.ascontiguousarray(a) for a in draws]
                st = self._strata
                per = self._per_stratum(batch_size)
                if row_alpha.get("per") != per:  # an n-vector: formed again if per changes
                    row_alpha.update(per=per, rows=st.share[st.codes] / per)
                strata = (row_alpha["rows"], st.codes, len(st.counts), per)
            else:
                # The rows the block reads, and the draws as indices into them (the same
                # problem and draws for data in memory; rows brought from a cluster otherwise).
                pb, draws = self._block_rows(draws)
                # (T, k, b) -> k C-ordered (T, b) arrays: one compiled signature for them all.
                draws = np.ascontiguousarray(draws.transpose(1, 0, 2))
            idx_o = draws[0]
            o_src = pb.A_obj.kernel_source(idx_o)
            idx_c = ridx_c = no_rows
            c_src = o_src
            if len(draws) > 1:
                # The constraint minibatches of an iteration side by side, (T, k * b): one
                # source for them all (gathered together if need be).
                idx_c = np.concatenate(draws[1:], axis=1) if len(draws) > 2 else draws[1]
                c_src = pb.A_con.kernel_source(idx_c)
                ridx_c = c_src[5]
            lazy = plan
            if plan is not None and self.lazy_updates == "auto":
                nnz_it = sum(a.shape[1] for a in draws) * nnz_row
                lazy = plan if nf > self.LAZY_RATIO * nnz_it else None
            z, d = _kernels.pstorm_block(
                z, d, np.asarray(y, dtype=float).reshape(self.n_constraints),
                beta, eta, eta_slack, keep, nf, self.fit_intercept, inv_scale, center, *prox,
                loss_code, alpha, *_kernels.source(*o_src[:5]), pb.b, pb.bu, idx_o,
                o_src[5], *_kernels.source(*c_src[:5]), pb.W, offset, ineq, idx_c, ridx_c,
                max(len(draws) - 1, 1), lazy=lazy, strata=strata,
            )  # fmt: skip
            return z, d, idx_o.shape[0]

        return run

    # -- constants -----------------------------------------------------------------------------
    def full_evaluation_cost(self) -> int:
        """Per-sample evaluations of one :meth:`full_evaluation` on every row (a stop test).

        The rows whose scores it computes: a row subset is scored through its whole matrix,
        and one product serves the objective and the constraints when they share a matrix.
        The backward products at the same point are part of the same evaluation.
        """
        Ao, Ac = self.A_obj, self.A_con
        rows_o = Ao.A.shape[0] if Ao.rows is not None else Ao.n_rows
        if not self.n_constraints:
            return rows_o
        if Ao.A is Ac.A:
            return Ao.A.shape[0]
        return rows_o + (Ac.A.shape[0] if Ac.rows is not None else Ac.n_rows)

    def _top_eigenvalue(self, A, weights, rng, n_iter=20, max_rows=50_000):
        """Largest eigenvalue of ``A~^T diag(weights) A~ / n`` (``A~`` with the intercept column).

        The fallback of :meth:`smoothness_bound` above ``_GRAM_MAX_PARAMS`` parameters, where
        a ``d x d`` Gram matrix is too large. Power iteration from a random start converges
        from below; the 10 % margin covers the remaining gap on the problems we measured.
        Above ``max_rows`` rows it runs on a fixed random subset of that many rows (a mean over
        rows, estimated from 50000 of them), so that this set-up cost does not grow with the
        data. Adds the rows it scores (one per row and iteration) to ``setup_evaluations``.
        """
        n = A.shape[0]
        scored = A.A.shape[0] if isinstance(A, _Subset) else n
        if n > max_rows:
            keep = np.sort(rng.choice(n, size=max_rows, replace=False))
            A = A.A[A.rows[keep]] if isinstance(A, _Subset) else A[keep]
            weights = weights[keep]
            n = scored = max_rows
        v = rng.standard_normal(self.n_params)
        lam = 0.0
        gram = self._compiled_gram(A, weights, n)
        for _ in range(n_iter):
            v /= np.linalg.norm(v)
            w = self._grad(A, weights * self._score(A, v), n) if gram is None else gram(v)
            lam = float(v @ w)
            v = w
        self.setup_evaluations += n_iter * scored
        return 1.1 * lam

    def _distinct_weight_columns(self):
        """``first[k]``: the first constraint column with the same ``|W_k|`` as column ``k``."""
        W = self.W
        m = self.n_constraints
        cached = getattr(self, "_distinct", None)
        if cached is not None and cached[0] is W:
            return cached[1]

        def same(j, k):
            # By blocks of rows: |W| whole would be a copy of W (8 bytes per row and column).
            step = _BLOCK_ROWS
            return all(
                np.array_equal(np.abs(W[i : i + step, j]), np.abs(W[i : i + step, k]))
                for i in range(0, len(W), step)
            )

        # Only columns with equal fingerprints (|W| against a fixed random vector, one pass)
        # are compared entry by entry: pairwise comparisons of all columns took minutes with
        # thousands of constraints (np.unique(axis=1) on long columns takes seconds too).
        probe = np.random.default_rng(0).random(len(W))
        prints = np.zeros(m)
        for i in range(0, len(W), _BLOCK_ROWS):
            prints += probe[i : i + _BLOCK_ROWS] @ np.abs(W[i : i + _BLOCK_ROWS])
        # (Equal columns can still differ in the last bits of a BLAS product: near, not equal.)
        near = 1e-9 * max(float(np.max(prints, initial=0.0)), 1e-300)
        first, reps = [], []
        for k in range(m):
            close = np.flatnonzero(np.abs(prints[reps] - prints[k]) <= near) if reps else ()
            match = next((reps[i] for i in close if same(reps[i], k)), k)
            if match == k:
                reps.append(k)
            first.append(match)
        self._distinct = (W, first)
        return first

    def _gram_sums(self):
        """Raw weighted sums ``(sum w a a^T, sum w a, sum w)`` for every Gram the bound needs.

        The weight columns are ``u`` over the objective rows, then (with constraints) ones and
        each distinct ``|W_k|`` over the constraint rows, spread over the rows of the
        underlying matrix (zero off a row subset; a row listed twice counts twice). One sweep
        over each matrix serves them all: every block of rows is read once and used for every
        column while it is in cache. Above ``_GRAM_MAX_ROWS`` rows (fewer for large ``d``) the
        sums are estimated from a fixed random subset of rows, scaled up. Adds the rows read to
        ``setup_evaluations``.

        With constraint columns of more than one ``|W_k|``, a last column weighs the rows by
        ``|W| cmax`` (:meth:`_joint_weights`): the Gram of the bound on ``sum_k c_k hess c_k``
        taken jointly.

        Returns ``(G, mu, total, estimated)`` with one entry per weight column.
        """
        rng = np.random.default_rng(0)
        Ao, Ac = self.A_obj, self.A_con
        first = self._distinct_weight_columns()
        distinct = [k for k in range(self.n_constraints) if first[k] == k]

        # The weight columns of given rows are formed for those rows only, as ``(rows, J)``:
        # an (n, J) matrix of them would be J more n-vectors alive through the sweep. A row
        # subset spreads its weights over the rows of the matrix first (zero elsewhere).
        def obj_cols(sel):
            return self.u[sel][:, None]

        joint = self._joint_weights()

        def con_cols(sel):
            Wb = self.W[sel]
            cols = [np.ones(len(sel))] + [np.abs(Wb[:, k]) for k in distinct]
            if joint is not None:
                cols.append(np.abs(Wb) @ joint)
            return np.column_stack(cols)

        def spread(rows_of, cols):
            if rows_of.rows is None:
                return cols
            values = cols(np.arange(rows_of.n_rows))
            full = np.zeros((rows_of.A.shape[0], values.shape[1]))
            np.add.at(full, rows_of.rows, values)
            return full.__getitem__

        groups = [(Ao.A, spread(Ao, obj_cols), 1)]
        if self.n_constraints:
            con = spread(Ac, con_cols)
            if Ao.A is Ac.A:
                obj = groups[0][1]
                J = 2 + len(distinct) + (joint is not None)
                groups = [(Ao.A, lambda sel: np.hstack([obj(sel), con(sel)]), J)]
            else:
                groups.append((Ac.A, con, 1 + len(distinct) + (joint is not None)))
        G, mu, total, estimated = [], [], [], False
        # The sums are taken in the solver's units (columns divided by feature_scale), block
        # by block: raw sums of a column of 1e200 would overflow.
        inv = np.broadcast_to(self._inv_scale, (self.n_features,)) if self._scaled else None
        compiled = self.use_kernel and _kernels_available()
        # (A centre is subtracted from these sums: not in float32, see _block_gram.)
        low = self.feature_center is None
        for A, weights_of, J in groups:
            n, d = A.shape
            # The arithmetic grows like rows * d**2 per weight column: past about 2e10 flops an
            # estimate from fewer rows gives as good a step size.
            max_rows = min(_GRAM_MAX_ROWS, max(20_000, int(2e10 / (d * d * J))))
            factor, order = 1.0, np.arange(n)
            if n > max_rows:
                order = np.sort(rng.choice(n, size=max_rows, replace=False))
                factor, estimated = n / max_rows, True
            # Rows with equal weight vectors form a class: one unweighted sum per class, which
            # the weight columns then combine, reads each row into one product instead of J
            # (the estimators' weights take a few values: ones, a group's constant). Beyond a
            # few classes (e.g. sample weights), one weighted product per column.
            step = max(1, min(_SWEEP_ENTRIES >> 3, _SWEEP_ENTRIES // max(d, 1)))
            blocks = range(0, len(order), step)
            # The classes are found block by block, and each block's labels in the sweep:
            # the weights and labels of all rows read would be J + 1 more n-vectors.
            classes = _block_weight_classes(
                (weights_of(order[i : i + step]) for i in blocks), limit=max(J, 16)
            )
            weighted = classes is None
            if weighted:
                classes = np.eye(J)
            K = len(classes)
            g, m_, t_ = np.zeros((K, d, d)), np.zeros((K, d)), np.zeros(K)
            live = [k for k in range(K) if np.any(classes[k])]  # all-zero weights add nothing

            for start in blocks:
                sel = order[start : start + step]
                B = A[sel[0] : sel[-1] + 1] if len(order) == n else A[sel]
                Wb = weights_of(sel)
                how = (classes, live, weighted, compiled)
                sums = _class_sums(_scaled_block(B, inv, low), Wb, *how)
                if low and not all(np.isfinite(gk).all() for gk, _, _ in sums):
                    # Beyond float32's range: this block again in float64.
                    sums = _class_sums(_scaled_block(B, inv, False), Wb, *how)
                for k, (gk, mk, tk) in zip(live, sums, strict=True):
                    g[k] += gk
                    m_[k] += mk
                    t_[k] += tk
            g = np.tensordot(classes.T, g, axes=1)
            m_, t_ = classes.T @ m_, classes.T @ t_
            self.setup_evaluations += len(order)
            G.extend(factor * g)
            mu.extend(factor * m_)
            total.extend(factor * t_)
        return G, mu, total, estimated

    def _spectral_bounds(self, sums=None):
        """``lambda_max`` of the weighted second-moment matrices :meth:`smoothness_bound` needs.

        Returns ``(lam_obj, lam_con, hess, joint)``: over the objective rows with weights
        ``u``, over the constraint rows unweighted, over the constraint rows with weights
        ``|W_k|`` for each column ``k`` (``None`` without constraints), and with the weights
        ``|W| cmax`` of :meth:`_joint_weights` (``None`` where it gives none), all divided by
        the number of rows. Up to ``_GRAM_MAX_PARAMS`` parameters they are exact eigenvalues
        of the Gram matrices of :meth:`_gram_sums` (``sums``, if already computed) in the
        solver's coordinates; beyond, power iterations (:meth:`_top_eigenvalue`).
        """
        m = self.n_constraints
        first = self._distinct_weight_columns()
        distinct = [k for k in range(m) if first[k] == k]
        if self.n_params > _GRAM_MAX_PARAMS:
            rng = np.random.default_rng(0)
            lam_obj = self._top_eigenvalue(self.A_obj.full, self.u, rng)
            if not m:
                return lam_obj, 0.0, None, None
            ones = np.ones(self.n_constraint_samples)
            lam_con = self._top_eigenvalue(self.A_con.full, ones, rng)
            absW = np.abs(self.W)
            top = {k: self._top_eigenvalue(self.A_con.full, absW[:, k], rng) for k in distinct}
            joint = self._joint_weights()
            if joint is not None:
                joint = self._top_eigenvalue(self.A_con.full, absW @ joint, rng)
            return lam_obj, lam_con, np.array([top[first[k]] for k in range(m)]), joint

        G, mu, total, estimated = self._gram_sums() if sums is None else sums
        lams = []
        for Gj, mj, tj in zip(G, mu, total, strict=True):
            # The Gram matrix of the rows (a - centre) / scale, with the intercept column.
            M = self._gram_in_x(Gj, mj, tj)
            lams.append(max(float(np.linalg.eigvalsh(M)[-1]), 0.0))
        lams = np.array(lams) / np.array([self.A_obj.n_rows] + [self.A_con.n_rows] * (len(G) - 1))
        if estimated:
            lams *= 1.1  # estimated from a subset of rows: the margin of the power iterations
        if not m:
            return float(lams[0]), 0.0, None, None
        top = dict(zip(distinct, lams[2 : 2 + len(distinct)], strict=True))
        joint = float(lams[-1]) if len(lams) > 2 + len(distinct) else None
        return float(lams[0]), float(lams[1]), np.array([top[first[k]] for k in range(m)]), joint

    def _weight_means(self):
        """``(mean W**2, mean |W|)`` per constraint column, over the constraint rows."""
        return np.mean(self.W**2, axis=0), np.abs(self.W).mean(axis=0)

    def _joint_weights(self):
        """``cmax = mean |W_k| + |offset_k|``, a bound on each ``|c_k|``, when the constraint
        columns have more than one ``|W_k|``, else None. The penalty's second-derivative term
        is then bounded by one Gram with row weights ``|W| cmax`` rather than a sum of one
        per column, which for ``k`` groups on rows of their own is up to ``k`` times tighter.
        Columns of one ``|W_k|`` (a gap between two groups, both signs) gain nothing."""
        if not self.n_constraints:
            return None
        first = self._distinct_weight_columns()
        if sum(first[k] == k for k in range(self.n_constraints)) < 2:
            return None
        return self._weight_means()[1] + np.abs(self.offset)

    def _weight_norm_bound(self):
        """A bound on ``lambda_max(W^T W) / n`` over the ``n`` constraint rows by Schur's test,
        ``max_k sum_i |W_ik| * max_i sum_k |W_ik| / n``, in one pass over ``W``.

        The trace (the sum of the columns' ``mean W_k^2``, the column-by-column bound) adds up
        every group's term; this grows with the largest group's. With 100 groups of 20 rows,
        each compared with the overall rate, it is 784 where the trace is 19800. (The exact
        eigenvalue, 200 there, from the ``m x m`` Gram matrix, gave steps large enough to
        cost passes: Adult by race, equalised odds, 5 seeds, 1 fit of 5 within 100 passes
        against 3 of 5 with this bound.)
        """
        W = self.W
        columns, rows = np.zeros(W.shape[1]), 0.0
        for i in range(0, len(W), _BLOCK_ROWS):  # |W| whole would be a copy of W
            block = np.abs(W[i : i + _BLOCK_ROWS])
            columns += block.sum(axis=0)
            rows = max(rows, float(block.sum(axis=1).max(initial=0.0)))
        return float(columns.max(initial=0.0)) * rows / max(len(W), 1)

    def _compiled_gram(self, A, weights, n):
        """``v -> _grad(A, weights * _score(A, v), n)`` in one compiled pass, or None.

        None for sparse data: scipy's two products are faster there (CSR 50000 x 2000, 100
        values a row: 0.46 s for the bound against 1.2 s compiled).
        """
        if self._kernel_loss_code() is None or sp.issparse(getattr(A, "A", A)):
            return None
        if isinstance(A, _Subset):
            A, rows = A.A, A.rows
        else:
            rows = np.arange(A.shape[0])
        src = _Rows(A)
        if not src.in_place():
            return None
        from . import _kernels

        dense = src.kernel_source(rows[:0])[0]

        def gram(v):
            v_eff, b = self._effective(v)
            g, rsum = _kernels.gram_pass(dense, rows, v_eff, float(b), weights)
            return self._finish_grad(g, rsum if self.fit_intercept else 0.0, n)

        return gram

    def smoothness_bound(self, _sums=None) -> tuple[float, float]:
        """``(L0, LJ)`` from the data: spectral bounds of the Hessians.

        With ``lambda_D = lambda_max(A^T diag(u) A / n)`` over the objective rows and
        ``lambda_S = lambda_max(A^T A / n)`` over the constraint rows:
        ``L0 = loss.curvature * lambda_D`` bounds the Hessian of ``g``, and for the penalty
        ``|c|^2 / 2``, whose Hessian is ``J^T J + sum_k c_k hess c_k``, the per-row bounds
        ``|sigmoid'| <= 1/4`` and ``|sigmoid''| <= 1/(6 sqrt 3)`` give
        ``|J_k| <= 1/4 sqrt(lambda_S mean W_k^2)`` and
        ``|hess c_k| <= 1/(6 sqrt 3) lambda_max(A^T diag|W_k| A / n)``, summed over the
        constraints; with several groups, the tighter joint bounds ``|J|^2 <= lambda_S
        |W|^2 / (16 n)`` (:meth:`_weight_norm_bound`) and one Gram with the row weights
        ``|W| cmax`` (:meth:`_joint_weights`).

        The eigenvalues are exact up to ``_GRAM_MAX_PARAMS`` parameters and
        ``_GRAM_MAX_ROWS`` rows per matrix: every weighted Gram matrix comes from one sweep
        over the rows of each matrix, one data pass in all (``setup_evaluations``). More rows:
        the Gram matrices are estimated from a fixed subset of rows, with a 10 % margin. More
        parameters: power iterations (:meth:`_top_eigenvalue`).
        """
        lam_obj, lam_con, hess_lam, joint_lam = self._spectral_bounds(_sums)
        L0 = self.loss.curvature * lam_obj
        if not self.n_constraints:
            return L0, 0.0
        mean_sq, mean_abs = self._weight_means()
        cmax = mean_abs + np.abs(self.offset)
        # Column by column: |J|^2 <= sum_k |J_k|^2 and |sum_k c_k hess c_k| <= sum_k ...
        jac2 = lam_con * float(np.sum(mean_sq)) / 16.0
        hess = float(np.sum(cmax * SIGMOID_CURVATURE * hess_lam))
        # Jointly, where the columns have several |W_k| (joint_lam): J = W^T D A / n with
        # 0 <= D <= 1/4 gives |J|^2 <= lambda_S |W|^2 / (16 n), and sum_k c_k hess c_k =
        # A^T diag(sigmoid'' W c) A / n is one Gram. The sums above add up every group's
        # term, these grow with the largest: with 100 groups of 20 rows
        # (benchmarks.families.many_groups) LJ is 128 where the sums give 1350, and the
        # first step 10 times larger. With one |W_k| (a gap between two groups) neither is
        # tighter, and the step (and path) stays; elsewhere a joint bound within 1 % of the
        # sum keeps the sum.
        if joint_lam is not None:
            jac2 = _tighter(lam_con * self._weight_norm_bound() / 16.0, jac2)
            hess = _tighter(SIGMOID_CURVATURE * joint_lam, hess)
        return L0, float(jac2 + hess)
