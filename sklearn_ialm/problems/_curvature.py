"""Second-order oracle of :class:`~.linear.LinearProblem`: the Jacobian and Hessians of the
finish's Newton steps (:class:`SecondOrder`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from ..solver.finish import HessianOperator
from . import _gram
from ._full_evaluation import _compiled_csr
from ._gram import _kernels_available, _weighted_gram
from ._numeric import SAMPLE_SEED
from .losses import Logistic, SigmoidLoss, TruncatedLogistic

#: The finish's Hessians read up to this many rows per parameter, at least
#: ``_HESSIAN_MIN_ROWS`` (see :meth:`LinearProblem._hessian_sample`).
_HESSIAN_ROWS_PER_PARAM = 100
_HESSIAN_MIN_ROWS = 10_000
#: Rows of at most this many entries (columns, or CSR non-zeros) are sampled only past four
#: times that many rows (see :meth:`LinearProblem._hessian_sample`).
_GRAM_NARROW = 16


#: Rows per block of :meth:`SecondOrder._row_importance`'s maximum.
_BLOCK_ROWS = 1 << 16


def _draw_chances(importance, size):
    """Chances ``min(1, lam * importance)`` summing to ``size`` (rows of no importance are
    not drawn): ``lam`` by fixed-point steps, each setting it for the rows not yet capped.
    Formed in ``importance`` (the caller's to give up): one n-vector, not three at once
    (the dense 1e6 x 20 fair fit's peak memory was this product and its minimum)."""
    capped = np.zeros(len(importance), bool)
    for _ in range(100):
        free = importance[~capped].sum()
        lam = (size - capped.sum()) / free if free > 0 else 0.0
        now = lam * importance >= 1.0
        if np.array_equal(now, capped):
            break
        capped = now
    chance = np.multiply(importance, lam, out=importance)  # (lam * importance, the same)
    return np.minimum(1.0, chance, out=chance)


def _hessian_rows(n_params, n_rows):
    """The most rows of ``n_rows`` a Hessian of the finish reads (see
    :meth:`LinearProblem._hessian_sample`): a twentieth of many rows, whose Gram matrix
    costs little beside an evaluation, keeps the Newton steps near Newton's own (a reweighted
    logistic fit on 1e6 x 20 rows: the gradient fell 4 to 10 times a step from 10000 rows)."""
    return max(_HESSIAN_MIN_ROWS, _HESSIAN_ROWS_PER_PARAM * n_params, n_rows // 20)


class SecondOrder:
    """:meth:`second_order_evaluation` of :class:`~.linear.LinearProblem` and the cost of its
    Hessians.

    A mixin of the problem: it reads its rows (``A_obj``, ``A_con``), weights (``b``, ``u``,
    ``W``) and loss, takes the first-order values from its full evaluation (compiled or
    numpy) and forms products with its ``_score``, ``_grad`` and ``_gram_in_x``.
    """

    #: The parameters of ``dead_features`` (a mask), or None; a class default for problems
    #: made without ``__init__`` (the Dask problem's in-memory views of its rows).
    _dead = None

    def second_order_available(self) -> bool:
        """Whether :meth:`second_order_evaluation` applies: the loss is one of this package's
        (exact types: a subclass may change the maths), whose second derivative is known."""
        return type(self.loss) in (Logistic, SigmoidLoss, TruncatedLogistic)

    def second_order_evaluation(self, x, scores=None):
        """``(f0, grad, c, J, hessian)`` on all rows: :meth:`full_evaluation`'s values, the
        Jacobian ``J`` (``m x n_params``) from the same pass, and ``hessian(mu)``, the Hessian
        of ``g + mu . c`` at ``x`` for ``m`` weights ``mu`` (the finish's Newton steps).

        Every score is linear in ``x``, so that Hessian is one Gram matrix of the rows, each
        weighted by its second derivatives: ``u_i loss''(b_i z_i) / n_o`` on an objective row
        plus ``sigmoid''(z_j) (W_j . mu) / n_c`` on a constraint row. One weighted Gram matrix
        whatever the number of constraints (the constraints differ only in the rows' weights
        ``W_j``), formed when ``hessian`` is called, from the rows' scores (a read of every
        row) and, beyond :func:`_hessian_rows`, a fixed random sample of them
        (:attr:`curvature_passes` counts both). Above ``GRAM_MAX_PARAMS`` parameters
        (``8 p**2`` bytes, and a factorisation of order ``p**3``) ``hessian`` returns a
        :class:`~scipy.sparse.linalg.LinearOperator` of Hessian-vector products instead, each
        a pass over the rows.

        ``scores``, where given, are the rows' scores at ``x`` from the finish's Hessian
        operator, whose conjugate gradients keep them (those of the point it was formed at,
        moved along the step its products solved for): the evaluation then reads the rows
        once, not twice.
        """
        m = self.n_constraints
        compiled = self._grouped_evaluation(x)
        if compiled is None:
            compiled = self._full_evaluation_compiled(x)
        given, scores = scores, None
        if compiled is not None:
            f0, grad, c, jac_t = compiled
            J = jac_t.matrix() if m else np.zeros((0, self.n_params))
        else:
            operator = self.n_params > _gram.GRAM_MAX_PARAMS
            if operator and self._one_matrix_logistic():
                f0, grad, c, J, scores = self._one_matrix_evaluation(x, given)
            else:
                f0, grad, c, _, J, scores = self._numpy_evaluation(
                    x, jacobian=True, scores=operator or self._scores_kept(), products=False,
                    given=given,
                )  # fmt: skip
        x = np.array(x, dtype=float)

        def hessian(mu):
            H = self._hessian(x, np.asarray(mu, dtype=float), scores)
            return H if self._dead is None else self._without_dead(H)

        if self._dead is not None:
            grad, J = np.where(self._dead, 0.0, grad), np.where(self._dead, 0.0, J)
        return f0, grad, c, J, hessian

    def _scores_kept(self):
        """Whether the numpy evaluation keeps its rows' scores for the Hessian: where its
        Gram matrix reads every row of every matrix (no sample, see :meth:`_hessian_sample`),
        the scores are an n-vector beside a Gram matrix of at least as many entries' worth
        of work, and scoring the rows again was half the Hessian's reads (Adult by race,
        equalized odds: 19 Hessians, 38 of the fit's 105 reads). CSR rows only: dense rows
        have the compiled pass, which keeps no scores, and a fit counts the same reads with
        or without it."""
        matrices = [A for A, _ in self._curvature_matrices()]
        return (
            self._dense_pass_code() is None
            and self.n_params <= _gram.GRAM_MAX_PARAMS
            and all(sp.issparse(A) and self._hessian_sample(A)[0] is None for A in matrices)
        )

    def _one_matrix_logistic(self):
        """Whether :meth:`_one_matrix_evaluation` applies: the logistic loss, constraints,
        and the objective and the constraints on every row of one matrix."""
        Ao, Ac = self.A_obj, self.A_con
        return bool(
            type(self.loss) is Logistic
            and self.n_constraints
            and Ao.A is Ac.A
            and Ao.rows is None
            and Ac.rows is None
        )

    def _one_matrix_evaluation(self, x, scores=None):
        """``(f0, grad, c, J, scores)`` of ``_numpy_evaluation(x, jacobian=True,
        scores=True)`` where :meth:`_one_matrix_logistic`: the same operations on the same
        values, in another order, so that few n-vectors are held beside the backward
        product's columns ``Q``: the scores, kept for the Hessian's weights, and the
        sigmoids while they are read. The scores were once read again for each Hessian
        instead (CSR 1e6 x 1e4, 20 non-zeros a row: 8 products with X of a fit's 41, about
        7 % of its time, for one n-vector less at an evaluation, not the fit's peak memory);
        :attr:`curvature_passes` counts neither way. ``scores`` (by the matrix's id), where
        given, are taken for the rows' scores at ``x`` (see :meth:`second_order_evaluation`).
        """
        A, n_o, n_c = self.A_obj.A, self.A_obj.n_rows, self.A_con.n_rows
        _, cotangent = self._evaluation_weights()
        cols, pos, sign = self._signed_columns()
        # (With patterns, the constraints' columns of Q are not formed: see
        # _pattern_products; ``dp`` is then an n-vector of its own.)
        patterns = self._row_patterns() if _compiled_csr(A) else None
        z = self._score(A, x) if scores is None else scores[id(A)]
        Q = np.empty((A.shape[0], 1 + (0 if patterns else len(cols))))
        m_obj = np.multiply(self.b, z, out=Q[:, 0])  # the objective's margins, in its column
        # The loss first, then the sigmoids in its array, and with patterns their slopes in
        # place: beside the kept scores and Q, one n-vector (two were the peak of a CSR
        # 1e6 x 1e4 fit: the sigmoids and their slopes, with the loss in the first).
        values = _logistic_values(m_obj, out=np.empty_like(z))
        f0 = float(np.mean(np.multiply(values, self.u, out=values)))
        p = expit(z, out=values)
        c = (p @ self.W) / n_c + self.offset
        if not patterns:
            Q[:, 1] = p  # (the slopes go in the backward product's column)
        dp = _sigmoid_slopes(p if patterns else Q[:, 1], n_c)  # ``(1 - p) p / n_c``, in place
        del p, values
        r = m_obj  # the loss's derivative, ``-expit(-m)``, in place (its steps, the same)
        np.negative(expit(np.negative(r, out=r), out=r), out=r)
        np.multiply(r, self.bu, out=r)
        np.divide(r, n_o, out=r)
        if patterns:
            G = self._pattern_products(A, r, dp, patterns)
        else:
            for k in range(cotangent.shape[1] - 1, -1, -1):  # (dp, the second column, first)
                np.multiply(cotangent[:, k], dp, out=Q[:, 1 + k])
            G = self._grad(A, Q, 1.0)
        return f0, G[:, 0], c, G[:, 1:].T[pos] * sign[:, None], {id(A): z}

    def _without_dead(self, H):
        """The Hessian ``H`` with the rows and columns of the dead features' weights those of
        a unit matrix (see ``dead_features``)."""
        dead = self._dead
        if isinstance(H, np.ndarray):
            H[dead, :] = 0.0
            H[:, dead] = 0.0
            H[dead, dead] = 1.0  # (the diagonal entries: a boolean index on both axes)
            return H

        def matvec(v):
            v = np.ravel(v)
            return np.where(dead, v, H @ np.where(dead, 0.0, v))

        return HessianOperator(
            len(dead), matvec, diagonal=lambda: np.where(dead, 1.0, H.diagonal())
        )

    @property
    def curvature_passes(self) -> float:
        """Reads of every row (in units of :meth:`full_evaluation_cost`) that a
        ``hessian(mu)`` of :meth:`second_order_evaluation` costs: the scores of the rows it
        weighs and the rows of its Gram matrix (the weights depend on the constraint values
        of the evaluation, so the Gram matrix cannot come in its pass)."""
        rows = 0
        for A, direct in self._curvature_matrices():
            if self.n_params > _gram.GRAM_MAX_PARAMS:
                # The scores, where the evaluation did not keep them (the compiled pass
                # over dense rows); each product is a read more.
                rows += 0 if self._dense_pass_code() is None else A.shape[0]
                continue
            pick = self._hessian_sample(A)[0]
            if pick is None:
                # The Gram matrix's rows, and their scores unless the evaluation kept them.
                rows += (1 if self._scores_kept() else 2) * A.shape[0]
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
            if self.n_params > _gram.GRAM_MAX_PARAMS:
                # The rows' weights, and their scores where the evaluation did not keep them.
                rows += 0.05 * A.shape[0] if self._dense_pass_code() is None else A.shape[0]
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

    def _hessian(self, x, mu, scores=None):
        """``hessian(mu)`` of :meth:`second_order_evaluation` at ``x`` (``scores``: the rows'
        scores there by matrix id, where the evaluation kept them)."""
        if self.n_params > _gram.GRAM_MAX_PARAMS:
            parts = self._curvature_weights(x, mu, sample=False, scores=scores)
            return self._hessian_operator(parts, scores)
        H = np.zeros((self.n_params, self.n_params))
        compiled = self.use_kernel and _kernels_available()
        inv = np.broadcast_to(self._inv_scale, (self.n_features,)) if self._scaled else None
        # In float64, not float32 as the step-size sweep: the Newton steps' Hessian decides
        # where the finish stops within its tolerance, and float32 products left the dense
        # and the CSR layout of the same rows 1e-7 apart (float64: the same model).
        for A, pick, r in self._curvature_weights(x, mu, sample=True, scores=scores):
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
            pick = np.flatnonzero(np.random.default_rng(SAMPLE_SEED).random(n) < chance)
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
                # long: 43 ms on 1e6 x 2), each column's magnitudes a block of rows at a
                # time (no n-vector of them beside the maximum: the fit's peak memory).
                weights = np.abs(self.W[:, 0])
                for k in range(1, self.n_constraints):
                    for start in range(0, len(weights), _BLOCK_ROWS):
                        rows_k = slice(start, start + _BLOCK_ROWS)
                        here = weights[rows_k]
                        np.maximum(here, np.abs(self.W[rows_k, k]), out=here)
            out += weights if rows.rows is None else np.bincount(rows.rows, weights, len(out))
        return out

    def _curvature_weights(self, x, mu, *, sample, scores=None):
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
            z = self._score(A, x) if scores is None else scores[id(A)]
            r = None
            for rows, weigh in mine:
                if rows.rows is None:
                    w = weigh(z, slice(None))
                elif rows is Ac and self._collapsed_weights(A) is not None:
                    # The constraint rows that name a row again summed into its own weights
                    # (the evaluation's): each row's curvature once, not once per naming
                    # (Adult by race: 32561 rows for 53001, 3.0 -> 1.8 ms a Hessian).
                    w = self._constraint_curvature(z, slice(None), mu, self._collapsed_weights(A))
                else:
                    w = np.bincount(
                        rows.rows, weights=weigh(z[rows.rows], slice(None)),
                        minlength=A.shape[0],
                    )  # fmt: skip
                # The sum from zeros without an n-vector of zeros (the finish's peak memory
                # at 1e6 rows): 0 + w is w, a -0 made +0, in w's own new array.
                r = np.add(w, 0.0, out=w) if r is None else np.add(r, w, out=r)
                del w
            if pick is not None:
                r = r[pick]
            r *= scale  # (r is made here: scaled in place, no copy)
            out.append((A, pick, r))
        return out

    def _objective_curvature(self, z, sel):
        """``u_i loss''(b_i z_i) / n_o`` of the objective rows ``sel`` with scores ``z``."""
        # The same products in place (a product of two floats does not depend on their
        # order): at 1e6 rows the Hessian's weights were the fit's peak memory.
        d2 = self.loss.second_derivative(self.b[sel] * z)
        d2 = np.multiply(self.u[sel], d2, out=d2)
        d2 /= self.A_obj.n_rows
        return d2

    def _collapsed_weights(self, A):
        """The evaluation's constraint weights summed by row of ``A`` (``V`` of
        :meth:`_evaluation_weights`), where the constraint rows name rows of ``A`` again,
        else None."""
        if A is not self.A_con.A or not hasattr(self, "_evaluation_weights"):
            return None
        return self._evaluation_weights()[0]

    def _constraint_curvature(self, z, sel, mu, W=None):
        """``sigmoid''(z_j) (W_j . mu) / n_c`` of the constraint rows ``sel`` (``W``: the
        problem's, or weights in its place)."""
        p = expit(z)
        out = np.subtract(1.0, p)
        np.multiply(p, out, out=out)  # p (1 - p)
        np.subtract(1.0, np.multiply(2.0, p, out=p), out=p)  # 1 - 2 p
        out *= p
        del p
        wg = getattr(self, "weight_groups", None) if W is None else None
        # (A band over many groups: its rows' weights by the structure, as its evaluations.)
        out *= (self.W if W is None else W)[sel] @ mu if wg is None else wg.right(mu, sel)
        out /= self.A_con.n_rows
        return out

    def _hessian_operator(self, parts, scores=None):
        """The Hessian of :meth:`_hessian` as products with it (wide data); with the rows'
        ``scores`` at its point (one matrix), able to move them along the step its products
        solve for (see :class:`~sklearn_ialm.solver.finish.HessianOperator`): each
        product scores the rows at its vector, and the scores are linear in it."""
        if scores is None or len(parts) != 1 or id(parts[0][0]) not in scores:
            matvec, image = self._products(parts), None
        else:
            (A, _, r), last = parts[0], {}

            def matvec(v):
                last["image"] = z = self._score(A, np.ravel(v))
                return self._weighted_grad(A, r, z)

            image = (last, id(A), {"scores": scores[id(A)]})
        return HessianOperator(
            self.n_params, matvec, diagonal=lambda: self._hessian_diagonal(parts), image=image
        )

    def _weighted_grad(self, A, r, z):
        """:meth:`_grad` of ``r * z`` (``n = 1``), without that n-vector where a compiled read
        of CSR ``A`` forms the product (see :func:`~._kernels.csr_weighted_rmatvec`)."""
        if not _compiled_csr(A):
            return self._grad(A, r * z, 1.0)
        from . import _kernels  # (numba loads at the first fit, not with the package)

        rsum = float(np.dot(r, z)) if self.fit_intercept else 0.0
        return self._finish_grad(_kernels.csr_weighted_rmatvec(A, r, z), rsum, 1.0)

    def _products(self, parts):
        """Products with the Hessian of ``parts`` (see :meth:`_hessian_operator`)."""

        def matvec(v):
            v = np.ravel(v)
            return sum(self._grad(A, r * self._score(A, v), 1.0) for A, _, r in parts)

        return matvec

    def _hessian_diagonal(self, parts):
        """The diagonal of :meth:`_hessian_operator`'s Hessian (a read of every row):
        ``sum_i r_i (d z_i / d x_k)^2`` for each parameter ``k``."""
        d = self.n_features
        out = np.zeros(self.n_params)
        for A, _, r in parts:
            sq = _weighted_square_sums(A, r)
            if self.feature_center is not None:
                c = self.feature_center
                sq = sq - 2.0 * c * (A.T @ r) + c * c * r.sum()
            out[:d] += sq * (self._inv_scale**2 if self._scaled else 1.0)
            if self.fit_intercept:
                out[d] += r.sum()
        return out


def _logistic_values(m, out):
    """The logistic loss ``log(1 + exp(-m))`` into ``out``, as ``log1p(exp(-|m|)) + max(-m,
    0)`` by blocks of ``_BLOCK_ROWS``: numpy's vectorised exponential and logarithm where
    ``np.logaddexp`` (:meth:`Logistic.value`) calls the scalar ones entry by entry (1e6
    rows: 7 ms against 24, an evaluation of the wide finish about 0.12 s); within an ulp
    of it or two. :meth:`Logistic.value` keeps its bits elsewhere (the record of
    ``tests/test_golden.py``)."""
    for start in range(0, len(m), _BLOCK_ROWS):
        mb, ob = m[start : start + _BLOCK_ROWS], out[start : start + _BLOCK_ROWS]
        np.abs(mb, out=ob)
        np.log1p(np.exp(np.negative(ob, out=ob), out=ob), out=ob)
        ob -= np.minimum(mb, 0.0)
    return out


def _sigmoid_slopes(p, n):
    """``(1 - p) p / n`` into ``p``, by blocks of ``_BLOCK_ROWS`` (a block's ``1 - p`` the
    only temporary): the values of ``np.subtract(1, p) * p / n``, bit for bit."""
    for start in range(0, len(p), _BLOCK_ROWS):
        block = p[start : start + _BLOCK_ROWS]
        block *= np.subtract(1.0, block)
        block /= n
    return p


def _weighted_square_sums(A, r):
    """``sum_i r_i A_ik^2`` for each column ``k`` of ``A`` (dense or CSR), in blocks of rows
    (``A.multiply(A)`` would hold a second copy of the matrix); CSR by a compiled read of
    the same blocks where it applies."""
    from . import _kernels  # (numba loads at the first fit, not with the package)

    d = A.shape[1]
    step = 1 << 12
    compiled = _kernels.csr_weighted_square_sums(A, r, step) if sp.issparse(A) else None
    if compiled is not None:
        return compiled
    out = np.zeros(d)
    for start in range(0, A.shape[0], step):
        if sp.issparse(A):
            ptr = A.indptr[start : start + step + 1]
            vals = A.data[ptr[0] : ptr[-1]]  # views
            weights = np.repeat(r[start : start + len(ptr) - 1], np.diff(ptr))
            out += np.bincount(A.indices[ptr[0] : ptr[-1]], vals * vals * weights, d)
        else:
            B = np.asarray(A[start : start + step], dtype=float)
            out += r[start : start + len(B)] @ (B * B)
    return out
