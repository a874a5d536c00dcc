"""The smoothness bound of :class:`~.linear.LinearProblem`: spectral bounds of its Hessians
from the rows, set up in one sweep over them (:class:`SmoothnessBound`).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from . import _gram
from ._gram import _block_gram, _kernels_available, _scaled_block
from ._numeric import SAMPLE_SEED
from ._rows import _Rows, _Subset
from .losses import SIGMOID_CURVATURE

#: Above this many rows in a matrix the Gram matrices are estimated from that many rows
#: (with a margin, see :meth:`SmoothnessBound._spectral_bounds`). Only the stochastic phase
#: reads the bound, and before the finish it draws 30000 rows. From 200000 rows the set-up
#: was 0.10-0.14 s of a 1 s fit on 1e6 x 20 (demographic parity 0.02), LogisticRegression's
#: whole fit 0.4 s; on the anchor task (30000 x 100) the set-up from all its rows made the
#: fit with that phase 1.13 times as long as the fit without it, from 10000 rows 0.98
#: (``python -m benchmarks.finish_ab --cases anchor --seeds 0``, A/B).
_GRAM_MAX_ROWS = 10_000
#: Rows per block where a per-row array is read in blocks (a few hundred kB each).
_BLOCK_ROWS = 1 << 15
#: Entries of a block of rows of the smoothness bound's set-up sweep (see
#: :meth:`LinearProblem._gram_sums`): 512 kB of float64. Blocks of 1 MB were no faster
#: (anchor task: 46.4 vs 46.7 ms, 100000 x 20: 64.9 vs 64.8 ms) and their temporaries
#: raised a 100000 x 20 Neyman-Pearson fit's peak from 0.36 to 0.40 times X.
_SWEEP_ENTRIES = 1 << 16


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


def _tighter(bound, current):
    """``bound`` where it is materially (1 %) below ``current``, else ``current``."""
    return bound if bound < 0.99 * current else current


class _LazyBound:
    """The smoothness bound of a problem, computed on first :meth:`read` and shared by the
    copies :meth:`~.linear.LinearProblem.with_offset` makes (they keep the bound of the
    problem they were made from, as when it was computed at once).

    It holds a shallow copy of that problem (its arrays shared, not copied) and the set-up
    sums already taken (``sums``), both dropped once the bound is known; not the problem
    itself, whose arrays a cycle would keep alive until the garbage collector ran.
    """

    def __init__(self, problem, sums=None):
        self.value, self.sums, self.rows = None, sums, 0
        self.problem = None if problem is None else copy.copy(problem)
        if problem is not None:
            self.problem._bound = None  # (the copy's own would be an earlier holder)

    def read(self):
        """The bound ``(L0, LJ)``; the rows it read are ``rows``."""
        if self.value is None:
            problem = self.problem
            problem.setup_evaluations = 0
            self.value = tuple(float(v) for v in problem.smoothness_bound(self.sums))
            self.rows = problem.setup_evaluations
            self.problem = self.sums = None
        return self.value


class SmoothnessBound:
    """The smoothness bound ``(L0, LJ)`` of :class:`~.linear.LinearProblem` and its set-up.

    A mixin of the problem: it reads its rows (``A_obj``, ``A_con``), weights (``u``, ``W``,
    ``offset``) and units (``_inv_scale``, ``feature_center``), forms products with its
    ``_score``, ``_grad`` and ``_gram_in_x``, and adds the rows it reads to
    ``setup_evaluations``.
    """

    def _top_eigenvalue(self, A, weights, rng, n_iter=20, max_rows=50_000):
        """Largest eigenvalue of ``A~^T diag(weights) A~ / n`` (``A~`` with the intercept column).

        The fallback of :meth:`smoothness_bound` above ``GRAM_MAX_PARAMS`` parameters, where
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
        column while it is in cache. Above ``_GRAM_MAX_ROWS`` rows the
        sums are estimated from a fixed random subset of rows, scaled up. Adds the rows read to
        ``setup_evaluations``.

        With constraint columns of more than one ``|W_k|``, a last column weighs the rows by
        ``|W| cmax`` (:meth:`_joint_weights`): the Gram of the bound on ``sum_k c_k hess c_k``
        taken jointly.

        Returns ``(G, mu, total, estimated)`` with one entry per weight column.
        """
        rng = np.random.default_rng(SAMPLE_SEED)
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
            max_rows = _GRAM_MAX_ROWS
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
        the number of rows. Up to ``GRAM_MAX_PARAMS`` parameters they are exact eigenvalues
        of the Gram matrices of :meth:`_gram_sums` (``sums``, if already computed) in the
        solver's coordinates; beyond, power iterations (:meth:`_top_eigenvalue`).
        """
        m = self.n_constraints
        first = self._distinct_weight_columns()
        distinct = [k for k in range(m) if first[k] == k]
        if self.n_params > _gram.GRAM_MAX_PARAMS:
            rng = np.random.default_rng(SAMPLE_SEED)
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
        W = self.W
        n = max(len(W), 1)
        # As products with a vector of ones: a mean over axis 0 of a tall matrix of a few
        # columns adds its rows one at a time (1e6 x 2: 30 ms for both, 5 ms so).
        ones = np.ones(len(W))
        return np.einsum("ij,ij->j", W, W) / n, (ones @ np.abs(W)) / n

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

        The eigenvalues are exact up to ``GRAM_MAX_PARAMS`` parameters and
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
