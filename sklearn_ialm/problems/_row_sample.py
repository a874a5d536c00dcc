"""A problem on a sample of its rows (:meth:`RowSample.row_sample`): where the solver runs
its stochastic phase and a first finish before the finish on all rows (see
:mod:`~sklearn_ialm.solver._ialm_search`).
"""

from __future__ import annotations

import copy

import numpy as np

from ..solver.problem import FiniteSumProblem
from ._rows import _product, _Rows
from ._smoothness import _LazyBound


class RowSample:
    """The mixin of :class:`~.linear.LinearProblem` that draws a sample of its rows."""

    def row_sample(self, rng, share):
        """The same problem on a ``share`` of its objective rows, drawn without replacement
        by ``rng``, and the same share of its constraint rows, copied (a
        contiguous block the compiled pass reads in order).

        Its functions are means over the sample of the same per-row terms: the row weights
        stay those of all rows (not renormalised), the parameters keep their units
        (``feature_scale``, ``feature_center``), so a point and multipliers found on the
        sample are those of the problem on all rows, up to the sampling error. The
        constraint rows are drawn stratum by stratum (each stratum its share, at least two
        rows) where the problem stratifies them. The sample's smoothness bound is its own,
        read from the sample when first needed; the copy is its set-up (``setup_evaluations``,
        its rows read once).
        """
        n_o, n_c = self.A_obj.n_rows, self.A_con.n_rows if self.n_constraints else 0
        share = min(1.0, share)
        io = _draw(rng, n_o, share)
        shared = self.A_obj.A is self.A_con.A and (
            self.A_obj.rows is self.A_con.rows
            or (n_o == n_c and np.array_equal(self.A_obj.rows, self.A_con.rows))
        )
        if not n_c or (shared and self.constraint_strata is None):
            ic = io  # the same rows serve both: one copy
        elif self.constraint_strata is None:
            ic = _draw(rng, n_c, share)
        else:
            strata = self._strata
            ic = np.sort(np.concatenate([
                strata.order[start + _draw(rng, count, share, least=2)]
                for start, count in zip(strata.starts, strata.counts, strict=True)
            ]))  # fmt: skip
        view = copy.copy(self)
        # Its Hessian's row sample is its own: in the cache of all rows (shared by the
        # steering's copies, see with_offset) the sample's rows stayed alive through the
        # rest of the fit (30000 x 20, 4.8 MB on dense 1e6 x 20).
        view._hessian_cache = {}
        obj = _take_rows(self.A_obj, io)
        view.A_obj = _Rows(obj)
        view.A_con = view.A_obj if ic is io else _Rows(_take_rows(self.A_con, ic))
        view.b, view.u = self.b[io], self.u[io]
        view.bu = _product(view.b, view.u)
        view.W = self.W[ic] if n_c else self.W
        if n_c and self.weight_groups is not None:
            view.weight_groups = self.weight_groups.rows(ic)
        FiniteSumProblem.__init__(view, len(io), len(ic) if n_c else 0)
        if self.constraint_strata is not None:
            view.stratify_constraints(np.asarray(self.constraint_strata)[ic])
        view.setup_evaluations = len(io) + (len(ic) if n_c else 0)
        view._bound, view._owns_bound = _LazyBound(view), True
        view.sample_share = share
        return view


def _draw(rng, n, share, least=1):
    """``round(share * n)`` (at least ``least``, at most ``n``) of ``range(n)``, drawn
    without replacement, in order."""
    k = min(n, max(least, round(share * n)))
    return np.sort(rng.choice(n, k, replace=False))


def _take_rows(rows, idx):
    """A copy of the rows ``idx`` of a :class:`_Rows` (C-ordered float64 when dense)."""
    ridx = idx if rows.rows is None else rows.rows[idx]
    if rows.sparse:
        return rows.A[ridx]
    return np.ascontiguousarray(np.take(rows.A, ridx, axis=0), dtype=np.float64)
