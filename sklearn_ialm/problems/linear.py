"""Linear-score problems: the shape of both of the paper's models.

The parameters are ``x = (w, b0)`` (``b0`` only with an intercept) and the score of a row
``a`` is ``z = a.w + b0``. The objective is a weighted mean of a margin loss over the
objective rows, the constraints are weighted means of the soft prediction ``sigmoid(z)`` over
the constraint rows:

    g(x)   = mean_i  u_i * loss(b_i z_i)
    c_k(x) = mean_j  W[j, k] * sigmoid(z_j) + offset_k

Every fairness constraint of :mod:`.fairness` and the false-positive constraint of
:mod:`.neyman_pearson` is of this form, with a per-row weight matrix ``W``.

:class:`LinearProblem` holds the data, the units and the first-order oracles; one concept
per module beside it: row access (``_rows``), weighted Gram matrices (``_gram``), the
evaluation of all rows by numpy's products (``_full_evaluation``), the sample of the rows
(``_row_sample``), the smoothness bound (``_smoothness``), the second-order oracle of the
finish (``_curvature``) and the compiled code (``_compiled_pass``, ``_pstorm_block``), the
last six as mixins.
"""

from __future__ import annotations

import copy

import numpy as np
from scipy.special import expit

from ..solver.problem import FiniteSumProblem
from ..solver.prox import NoProx
from . import _gram
from ._compiled_pass import CompiledPass, _Gathered
from ._curvature import SecondOrder
from ._full_evaluation import NumpyEvaluation
from ._grouped_weights import GroupedEvaluation
from ._pstorm_block import PStormBlock
from ._row_sample import RowSample
from ._rows import _mean_one, _product, _rmatvec, _rms_row_norm, _Rows, _SparseRows
from ._smoothness import SmoothnessBound, _LazyBound
from .losses import Logistic, SigmoidLoss, TruncatedLogistic

__all__ = ["LinearProblem"]


class LinearProblem(
    NumpyEvaluation,
    GroupedEvaluation,
    RowSample,
    SecondOrder,
    SmoothnessBound,
    CompiledPass,
    PStormBlock,
    FiniteSumProblem,
):
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
    weight_groups : WeightGroups, optional
        ``W`` by its structure, each entry a row's group term plus an overall one (a band
        over many groups, see :mod:`._grouped_weights`): evaluations of all rows read the
        structure, ``O(n d + m d)``, not ``W``, ``O(n m)``.

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

    #: The share of another problem's rows this one holds (:meth:`row_sample`), or None:
    #: the solver runs its stochastic phase on samples only (see ``stoc_ialm``).
    sample_share: float | None = None

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
        weight_groups=None,
    ):
        W = np.asarray(W, dtype=float)
        if W.ndim == 1:
            W = W[:, None]
        n_obj = A_objective.shape[0] if rows_objective is None else len(rows_objective)
        n_con = A_constraint.shape[0] if rows_constraint is None else len(rows_constraint)
        super().__init__(n_obj, n_con if W.shape[1] else 0)
        # Rows read by the set-up below (scale, sums for the smoothness bound), and by the
        # bound when first read (see ``smoothness``): the solver counts them.
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
        self.weight_groups = weight_groups
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
            if smoothness is None and self.n_params <= _gram.GRAM_MAX_PARAMS:
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
        if smoothness is None:
            self._bound, self._owns_bound = _LazyBound(self, sums), True
        else:
            self.smoothness = smoothness
        self.constraint_names = constraint_names
        if dead_features is not None and np.any(dead_features):
            dead = np.asarray(dead_features, dtype=bool).reshape(self.n_features)
            self._dead = np.r_[dead, np.zeros(int(self.fit_intercept), bool)]

    @property
    def smoothness(self) -> tuple[float, float]:
        """``(L0, LJ)``, the step size's smoothness bound (:meth:`smoothness_bound` unless
        given), computed when first read: only the stochastic phase reads it, and a fit
        without one (the finish alone) reads no row for it (0.13 s of a 1.1 s fit on dense
        1e6 x 20, 0.3 s on CSR 2e5 x 1e4). See ``smoothness_evaluations``."""
        return self._bound.read()

    @smoothness.setter
    def smoothness(self, value) -> None:
        self._bound = _LazyBound(None)
        self._bound.value = tuple(float(v) for v in value)
        self._owns_bound = True

    def share_setup(self) -> None:
        """Compute now, in this process, what every run of this problem reads alike (the
        smoothness bound), before runs in other processes read it: there BLAS runs with
        other threads (joblib's workers get one each), and the bound's sums could differ in
        their last bits (OpenBLAS with 2 threads, numpy 1.24: ``n_jobs=2`` against 1 moved
        ``coef_`` by 1 ulp). The runs are charged its rows as when they read it."""
        self._bound.read()

    @property
    def smoothness_evaluations(self) -> int:
        """The rows the smoothness bound read, once read (0 before): a set-up that every run
        using it is charged, as ``setup_evaluations`` (the rows read when the problem was
        built); 0 on a copy of other offsets (:meth:`with_offset`), whose runs share it."""
        return self._bound.rows if self._owns_bound else 0

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
            # In place where the product is a new float64 array (no second n-vector).
            fresh = type(z) is np.ndarray and z.dtype == np.float64 and z.flags.owndata
            z = np.add(z, b, out=z) if fresh else z + b
        return z

    def _grad(self, A, r, n):
        """Gradient in ``x`` of ``sum_i r_i score_i / n`` over the rows of ``A`` (one column
        per column of a 2-D ``r``)."""
        if r.ndim == 2:
            from . import _kernels  # (numba loads at the first fit, not with the package)

            return self._finish_grads(_rmatvec(A, r), _kernels.column_sums(r), n)
        return self._finish_grad(_rmatvec(A, r), r.sum() if self.fit_intercept else 0.0, n)

    def _finish_grads(self, G, rsums, n):
        """:meth:`_finish_grad` of each column of ``G`` with its entry of ``rsums``, as the
        columns of an ``(n_params, k)`` array."""
        # The same operations on every column at once, entry by entry the same values (a
        # column at a time, a Jacobian of 200 constraints took 5 ms of a 20 ms evaluation).
        rsums = np.asarray(rsums, dtype=float)
        if self.fit_intercept and self.feature_center is not None:
            G = G - rsums * self.feature_center[:, None]
        if self._scaled:
            G = G * np.reshape(self._inv_scale, (-1, 1))  # (a scalar or one per feature)
        out = np.empty((self.n_params, G.shape[1]))
        out[: self.n_features] = G
        if self.fit_intercept:
            out[-1] = rsums
        out /= n
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

    def constraint_score_rows(self) -> int:
        """The rows :meth:`constraint_scores` reads: where the constraint rows list rows of
        their matrix again (groups balanced for the minibatches), the matrix's rows, each
        scored once (``_Subset``'s product; Adult by race: 32561 of 53001 constraint rows),
        else the constraint rows."""
        Ac = self.A_con
        return Ac.n_rows if Ac.rows is None else min(Ac.n_rows, Ac.A.shape[0])

    def rate_constraints(self, scores, *, hard=True, offset=None, proba=None):
        """Constraint values ``mean_j W[j] q_j + offset`` for constraint-row ``scores``.

        ``q = 1[score > 0]`` (the predictions) when ``hard``, else ``sigmoid(score)`` (the
        smooth surrogate the solver works with), or ``proba`` where the caller has
        ``expit(scores)`` already (with ``hard=False``). ``offset`` defaults to the problem's.
        """
        q = (scores > 0).astype(float) if hard else proba
        if q is None:
            q = expit(scores)
        # A band over many groups sums by its structure, as its evaluations do (100 groups
        # of 20 rows: seven products with the 2000 x 200 W, 1.8 ms of a 30 ms fit).
        wg = self.weight_groups
        qW = q @ self.W if wg is None or len(wg.codes) != len(q) else wg.left(q)
        return qW / len(q) + (self.offset if offset is None else offset)

    def with_objective_weights(self, weights, *, overwrite=False):
        """The same problem (sharing its data) with objective row weights ``weights``
        (normalised to mean one); its smoothness bound is its own (one set-up sweep, when read).

        With ``overwrite=True`` a float64 ``weights`` is normalised in place and kept (the
        caller gives it up): one n-vector less than a normalised copy.
        """
        other = copy.copy(self)
        u = np.asarray(weights, dtype=float).reshape(self.n_objective_samples)
        other.u = np.divide(u, u.mean(), out=u) if overwrite else _mean_one(u)
        other.bu = _product(other.b, other.u)
        other.setup_evaluations = 0
        other._bound, other._owns_bound = _LazyBound(other), True
        return other

    def with_offset(self, offset):
        """The same problem (sharing its data) with the constraint offsets ``offset``."""
        other = copy.copy(self)
        other.offset = np.asarray(offset, dtype=float).reshape(self.n_constraints)
        # The same rows and weights: the Hessian's row sample (drawn from them, a read of
        # W; 0.09 s a draw on 5e6 x 20) is shared, not drawn again by each of the
        # steering's solves.
        other._hessian_cache = self.__dict__.setdefault("_hessian_cache", {})
        # The set-up was done (and counted) once: the bound too, taken when first read.
        other.setup_evaluations, other._owns_bound = 0, False
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
        grouped = self._grouped_evaluation(x)
        if grouped is not None:
            return grouped
        compiled = self._full_evaluation_compiled(x)
        if compiled is not None:
            return compiled
        return self._numpy_evaluation(x)[:4]

    def null_gradient(self):
        """:meth:`full_evaluation`'s gradient at ``x = 0``, where every score is 0: one
        backward product over the objective rows, without the scores, the loss values or the
        constraints (on dense 1e6 x 20, 5 ms against a 14 ms compiled pass; the estimators'
        stop test is scaled by its norm)."""
        r = self.loss.derivative(np.zeros(1))[0] * self.bu
        return self._grad(self.A_obj.full, r, self.A_obj.n_rows)

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

    # -- compiled code -------------------------------------------------------------------------
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
