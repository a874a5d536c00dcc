"""Constraint weights of one band over many groups by their structure: each row's weight in
constraint ``k`` is ``W[j, k] = s_j (a_k [code_j = group_k] + b_k)``, its group's term and the
band's overall one (see :func:`._fairness_constraints._level_rows`). An evaluation of all rows
then costs ``O(n d + m d)``, where the dense ``W`` costs ``O(n m)``: on 1000 groups of 20
rows (2000 constraints) a pass read 320 MB of ``W``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.special import expit


class WeightGroups(NamedTuple):
    """``W[j, k] = row_weight[j] * (col_a[k] * (codes[j] == col_group[k]) + col_b[k])``."""

    codes: np.ndarray
    row_weight: np.ndarray
    col_group: np.ndarray
    col_a: np.ndarray
    col_b: np.ndarray

    def rows(self, index):
        """The structure of ``W[index]``."""
        return self._replace(codes=self.codes[index], row_weight=self.row_weight[index])

    def _size(self):
        return int(max(self.col_group.max(), self.codes.max())) + 1

    def left(self, q):
        """``q @ W`` (a weight per row) from the structure: per group and overall, the sums
        of the rows' weighted ``q``, as the evaluation forms its constraint values."""
        sq = self.row_weight * q
        return self.col_a * np.bincount(self.codes, sq, self._size())[self.col_group] + (
            self.col_b * sq.sum()
        )

    def right(self, mu, sel=slice(None)):
        """``W[sel] @ mu`` (a weight per column) from the structure: each row's group term
        and the overall one."""
        per_group = np.bincount(self.col_group, self.col_a * mu, self._size())
        return self.row_weight[sel] * (per_group[self.codes[sel]] + self.col_b @ mu)


class GroupedEvaluation:
    """The mixin of :class:`~.linear.LinearProblem` that evaluates all rows through
    ``weight_groups`` (see the module docstring), where the objective and the constraints
    read every row of one matrix."""

    weight_groups: WeightGroups | None = None

    def _grouped_evaluation(self, x):
        """``(f0, grad, c, jac_t)`` of :meth:`full_evaluation` on all rows, or None where
        the structure is not known or the rows are not one matrix read whole."""
        Ao, Ac, wg = self.A_obj, self.A_con, self.weight_groups
        if wg is None or not self.n_constraints or Ao.A is not Ac.A:
            return None
        if Ao.rows is not None or Ac.rows is not None:
            return None
        A, n = Ao.A, Ao.n_rows
        z = self._score(A, x)
        margins = self.b * z
        f0 = float(np.mean(self.u * self.loss.value(margins)))
        r = self.bu * self.loss.derivative(margins)
        p = expit(z)
        dp = p * (1.0 - p)
        k = wg.col_group
        size = int(max(k.max(), wg.codes.max())) + 1
        sp, sdp = wg.row_weight * p, wg.row_weight * dp
        # Per group and overall: the sums of the weighted predictions, and of the rows
        # weighted by sigmoid' (one sparse product: each row is in one group).
        c = wg.col_a * np.bincount(wg.codes, sp, size)[k] + wg.col_b * sp.sum()
        c = c / n + self.offset
        products = _grouped_products(A, r, sdp, wg.codes, size)
        if products is None:
            grad = self._grad(A, r, n)
            E = sparse.csr_matrix((sdp, (wg.codes, np.arange(n))), shape=(size, n))
            G = E @ A
            G, dsum = (G.toarray() if sparse.issparse(G) else np.asarray(G)), A.T @ sdp
        else:
            gr, G, dsum = products
            grad = self._finish_grad(gr, r.sum() if self.fit_intercept else 0.0, n)
        G = G.T[:, k] * wg.col_a + np.outer(dsum, wg.col_b)
        gsum = wg.col_a * np.bincount(wg.codes, sdp, size)[k] + wg.col_b * sdp.sum()
        return f0, grad, c, SummedJacobian(self, G, gsum, n)


def _grouped_products(A, r, dp, codes, size):
    """``(A.T @ r, E @ A, A.T @ dp)`` (``E[g, i] = dp_i`` on the rows of group ``g``) in one
    compiled read of CSR ``A``, scipy's bits, or None (dense rows, or no numba)."""
    if not sparse.issparse(A) or A.format != "csr":
        return None
    from . import _kernels  # (numba loads at the first fit, not with the package)

    return _kernels.csr_group_products(A, r, dp, codes, size)


class SummedJacobian:
    """``jac_t`` (``y -> J^T y``) of an evaluation that summed ``J^T`` over the rows as
    ``G`` (``(n_features, m)``) and ``gsum`` (the intercept's row) over ``n`` rows: the
    problem's ``_finish_grad`` of ``(G @ y, gsum @ y)``. :meth:`matrix` is ``J`` itself
    (what ``jac_t`` of each unit vector gives, without the products: each Newton step of a
    band of 200 constraints multiplied ``G`` by a 200 x 200 unit matrix)."""

    def __init__(self, problem, G, gsum, n):
        self.problem, self.G, self.gsum, self.n = problem, G, gsum, n

    def __call__(self, y):
        y = np.asarray(y, dtype=float)
        if y.ndim == 2:
            return self.problem._finish_grads(self.G @ y, self.gsum @ y, self.n)
        return self.problem._finish_grad(self.G @ y, float(self.gsum @ y), self.n)

    def matrix(self):
        return self.problem._finish_grads(self.G, self.gsum, self.n).T
