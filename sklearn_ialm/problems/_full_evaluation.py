"""All rows at once by numpy's (and scipy's) products: :class:`~.linear.LinearProblem`'s
evaluation where the compiled pass does not apply, and the one behind the finish's
second-order evaluation (:mod:`._curvature`), with the Jacobian from the same backward
product.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .losses import Logistic, SigmoidLoss, TruncatedLogistic

#: :meth:`LinearProblem._evaluation_weights` by (id of W, id of the constraint rows).
_EVALUATION_WEIGHTS = {}
#: The most distinct rows of the constraint weights :meth:`_pattern_products` sums by:
#: its sums are ``n_patterns x n_features`` (and a product with ``P``) beside one read.
_MAX_PATTERNS = 256
#: Rows per block of :func:`_distinct_rows`' check.
_BLOCK_ROWS = 4096


def _compiled_csr(A):
    """Whether :meth:`NumpyEvaluation._pattern_products` reads ``A``: a CSR matrix of
    float64 values, and numba."""
    from . import _kernels  # (numba loads at the first fit, not with the package)

    return sp.issparse(A) and A.format == "csr" and _kernels._compiled_csr(A)


def _distinct_rows(C):
    """``(pattern, P)`` with ``C == P[pattern]``, ``P`` the distinct rows of ``C`` (at most
    :data:`_MAX_PATTERNS`), else None. Rows are told apart by a random projection, one
    product, and the split is checked entry by entry: rows of equal projection that differ
    give None, equal rows projected apart one pattern more."""
    if not C.size:
        return None
    proj = C @ np.random.default_rng(0).random(C.shape[1])
    found = _few_values(proj)
    if found is None:
        return None
    values, pattern = found
    # A row of each value (the check below holds for every row of it or for none).
    first = np.empty(len(values), dtype=np.intp)
    first[pattern] = np.arange(len(pattern))
    P = np.ascontiguousarray(C[first])
    # (Block by block of rows: no copy of C, and rows read whole, not column by column.)
    step = _BLOCK_ROWS
    for start in range(0, len(C), step):
        if not np.array_equal(P[pattern[start : start + step]], C[start : start + step]):
            return None
    return pattern, P


def _few_values(a):
    """``(values, index)``: the distinct values of ``a`` sorted, and each entry's index among
    them (``np.unique``'s values and inverse), or None where more than
    :data:`_MAX_PATTERNS` (or a value not finite). Found from a few rows' values, each
    entry then looked up among them (a binary search in a few values), where ``np.unique``
    sorted all of ``a`` (a million rows: about 0.1 s, 3 % of a CSR 1e6 x 1e4 fit). The index
    is of the smallest unsigned integer type that holds it (``uint8`` for up to 256 values):
    the fit keeps it, and an ``intp`` index was 8 MB of a CSR 1e6 x 1e4 fit's peak."""
    if not np.all(np.isfinite(a)):
        return None
    values = np.unique(a[:_BLOCK_ROWS])
    while len(values) <= _MAX_PATTERNS:
        index = np.minimum(np.searchsorted(values, a), len(values) - 1)
        missed = values[index] != a
        if not missed.any():
            return values, index.astype(np.min_scalar_type(len(values) - 1))
        values = np.union1d(values, a[missed])
    return None


class NumpyEvaluation:
    """The mixin of :class:`~.linear.LinearProblem` that evaluates all its rows by numpy's
    products (see the module docstring)."""

    def _numpy_evaluation(self, x, jacobian=False, scores=False, products=True, given=None):
        """:meth:`full_evaluation` by numpy's (and scipy's) products, and with ``jacobian``
        ``J`` as a fifth entry (else None): where the objective and the constraints read
        one matrix, the gradient and ``J`` come from one backward product with ``1 + m``
        columns instead of two (on CSR 2e5 x 1e4, a third of an evaluation). With
        ``jacobian``, a sixth entry: with ``scores``, the scores of every row of each
        matrix read, by the matrix's id (the Hessian's weights then need no read of their
        own), else None. ``products=False``: no products with ``J^T`` where ``J`` comes from
        that backward product (fourth entry None; their row weights no n-vector beside it).
        ``given``: rows' scores at ``x`` by the matrix's id, taken where they are given (see
        :meth:`~._curvature.SecondOrder.second_order_evaluation`)."""
        Ao, Ac = self.A_obj, self.A_con

        def score(A):
            """The rows' scores of ``A`` at ``x``: given, or a product."""
            return given[id(A)] if given and id(A) in given else self._score(A, x)

        shared = self.n_constraints and Ao.A is Ac.A
        # Constraint rows that list rows of the matrix again (groups balanced for the
        # minibatches, see _fairness_constraints._balanced_rows) are read once each, with
        # their weights summed (collapsed): the same functions, on the matrix's rows.
        V, cotangent = self._evaluation_weights() if shared else (None, None)
        fused = jacobian and shared
        in_q = fused and (V is not None or Ac.rows is None)
        patterns = self._row_patterns() if in_q and _compiled_csr(Ao.A) else None
        # The scores ``kept`` are the scores themselves, left unchanged (the products below
        # go to new arrays); scores not kept are overwritten by the products. Either way no
        # copy of them: at a million rows each n-vector is 8 MB, and the fit's peak memory is
        # an evaluation of the finish (issue 51).
        kept = {} if scores else None
        if shared:
            z_all = score(Ao.A)
            if scores:
                kept[id(Ao.A)] = z_all
            zo = z_all if Ao.rows is None else z_all[Ao.rows]
            zc = z_all if V is not None or Ac.rows is None else z_all[Ac.rows]
            del z_all
        else:
            zo = score(Ao.A)
            if scores:
                kept[id(Ao.A)] = zo
            zo = zo if Ao.rows is None else zo[Ao.rows]
            zc = None

        def own(z):
            """Whether ``z`` may be overwritten: not a kept matrix's scores."""
            return not scores or all(z is not k for k in kept.values())

        # The products are formed in arrays made here (scores, and the values of the
        # package's losses, which are new arrays): a few n-vectors fewer at a time, with the
        # same values (a product of two floats does not depend on their order).
        m_obj = self.b * zo if zo is zc or not own(zo) else np.multiply(zo, self.b, out=zo)
        ours = type(self.loss) in (Logistic, TruncatedLogistic, SigmoidLoss)
        values = self.loss.value(m_obj)
        f0 = float(np.mean(np.multiply(values, self.u, out=values if ours else None)))
        del values
        r = self.loss.derivative(m_obj)
        del m_obj, zo
        r = np.multiply(r, self.bu, out=r if ours else None)
        grad = None if fused else self._grad(Ao.full, r, Ao.n_rows)
        if not self.n_constraints:
            no_jac = np.zeros((0, len(x))) if jacobian else None
            return f0, grad, np.zeros(0), lambda v: np.zeros_like(x), no_jac, kept
        if fused:
            # Both cotangents as columns over the rows of the one matrix, one per column of W
            # up to sign: the two sides of a parity gap share one (a third of the backward
            # product on CSR 2e5 x 1e4 with one gap), whose negation is exact. The
            # objective's column is filled (and ``r`` freed) before the constraints' arrays
            # are made. With ``patterns`` the constraints' columns are never formed (see
            # _pattern_products).
            cols, pos, sign = self._signed_columns()
            Q = np.empty((Ao.A.shape[0], 1 + (0 if patterns else len(cols))))
            if Ao.rows is None:
                np.divide(r, Ao.n_rows, out=Q[:, 0])
            else:
                Q[:, 0] = np.bincount(Ao.rows, weights=r / Ao.n_rows, minlength=Ao.A.shape[0])
            del r
        if not shared:
            zc = score(Ac.A)
            if scores:
                kept[id(Ac.A)] = zc
            zc = zc if Ac.rows is None else zc[Ac.rows]
        p = expit(zc, out=zc) if own(zc) else expit(zc)
        del zc
        # (A product, not the mean of W * p: a tenth of the time on 53001 x 20.)
        Wc, Ar = (self.W, Ac.full) if V is None else (V, Ao.A)
        c = (p @ Wc) / Ac.n_rows + self.offset
        # ``(1 - p) p / n_c``, formed in Q's second column when the constraint rows are
        # Q's rows, then copied into ``p`` (no n-vector more).
        in_q = in_q and not patterns
        dp = Q[:, 1] if in_q else np.empty_like(p)
        np.subtract(1.0, p, out=dp)
        dp *= p
        dp /= Ac.n_rows
        if in_q and products:
            p[:] = dp
            dp = p
        del p

        def jac_t(v):
            # (A 2-D v, one column per vector, gives J^T v of each in one pass.)
            q = Wc @ np.asarray(v, dtype=float)
            q *= dp if q.ndim == 1 else dp[:, None]
            return self._grad(Ar, q, 1.0)

        if not jacobian:
            return f0, grad, c, jac_t, None, None
        if not fused:
            return f0, grad, c, jac_t, jac_t(np.eye(self.n_constraints)).T, kept
        if patterns:
            G = self._pattern_products(Ao.A, Q[:, 0], dp, patterns)
        elif in_q:  # (from the last column: ``dp`` may be the second, read before it is set)
            for k in range(cotangent.shape[1] - 1, -1, -1):
                np.multiply(cotangent[:, k], dp, out=Q[:, 1 + k])
        else:
            Q[:, 1:] = Ac.full._spreader() @ (cotangent * dp[:, None])
        if not patterns:
            G = self._grad(Ao.A, Q, 1.0)
        jac_t = jac_t if products else None
        return f0, G[:, 0], c, jac_t, G[:, 1:].T[pos] * sign[:, None], kept

    def _pattern_products(self, A, r, dp, patterns):
        """``self._grad(A, Q, 1.0)`` of the fused backward product, ``Q = [r, cotangent *
        dp]``, in one compiled read of CSR ``A`` whose cost does not grow with the number of
        constraints: ``cotangent`` is ``P[pattern]`` (``patterns``, see :meth:`_row_patterns`),
        so that its columns' product is ``(A.T @ E) @ P`` with one non-zero ``dp_i`` a row of
        ``E`` (the Jacobian's 10 columns of Adult by race's equalized odds: an evaluation
        took 11 ms, about 6 of them in those columns and their fill)."""
        from . import _kernels  # (numba loads at the first fit, not with the package)

        pattern, P = patterns
        g, M, msum = _kernels.csr_pattern_products(A, r, dp, pattern, len(P))
        G = np.column_stack([g, M.T @ P])
        return self._finish_grads(G, np.concatenate([[r.sum()], msum @ P]), 1.0)

    def _row_patterns(self):
        """``(pattern, P)`` with :meth:`_evaluation_weights`' cotangent equal to
        ``P[pattern]``, computed once per weight matrix and rows like it, or None where its
        rows take more than :data:`_MAX_PATTERNS` distinct values. Fairness and
        Neyman-Pearson weights depend on a row's group and label only (Adult by race,
        equalized odds: 10 distinct rows of 32561)."""
        key = (id(self.W), id(self.A_con.rows))
        self._evaluation_weights()  # (its entry, which holds this one's)
        found = _EVALUATION_WEIGHTS[key][-1]
        if "patterns" not in found:
            found["patterns"] = _distinct_rows(self._evaluation_weights()[1])
        return found["patterns"]

    def _evaluation_weights(self):
        """``(V, cotangent)``: ``V``, ``W`` summed over the constraint rows that name each row
        of the matrix (``V[i] = sum_{j: rows[j] = i} W[j]``) where the constraint rows list
        its rows again (balanced groups), else None; and the columns of ``V`` (else ``W``)
        that :meth:`_signed_columns` keeps. With ``V``, ``mean_j W[j] q(rows[j])`` is ``q @ V
        / n_c``, a read of the matrix's rows only (Adult by race: 53001 constraint rows on
        32561 rows). Columns in a run (a parity gap between two groups: the first) are a view;
        others are taken, contiguous, once per weight matrix and rows (the steering's copies
        of the problem share them): taken at each evaluation they took 3 ms of a 7 ms
        evaluation on Adult, and kept they are n-vectors more through the fit (8 MB each at
        a million rows)."""
        rows = self.A_con.rows
        key = (id(self.W), id(rows))
        hit = _EVALUATION_WEIGHTS.get(key)
        if hit is None or hit[0]() is not self.W or (rows is not None and hit[1]() is not rows):
            V = None
            if rows is not None and len(rows) > self.A_con.A.shape[0]:
                # (The sums of bincount column by column, in the same order: 24 ms there,
                # a fifth of LogisticRegression's fit, where this product takes 2.)
                V = self.A_con.full._spreader() @ self.W
            cols = self._signed_columns()[0]
            run = None
            if len(cols) and np.array_equal(cols, np.arange(cols[0], cols[0] + len(cols))):
                run = slice(int(cols[0]), int(cols[0]) + len(cols))
            # (A view is not kept here: it would keep W alive, and this entry with it.)
            taken = None if run else np.ascontiguousarray((self.W if V is None else V)[:, cols])
            drop = lambda _, key=key: _EVALUATION_WEIGHTS.pop(key, None)  # noqa: E731
            held = None if rows is None else weakref.ref(rows, drop)
            hit = (weakref.ref(self.W, drop), held, V, taken, run, {})
            _EVALUATION_WEIGHTS[key] = hit
        V, taken, run = hit[2:5]
        return V, taken if run is None else (self.W if V is None else V)[:, run]
