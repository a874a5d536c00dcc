"""Compiled passes over all rows for :class:`~.linear.LinearProblem`'s ``full_evaluation``
(:class:`CompiledPass`).
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from ._grouped_weights import SummedJacobian
from ._rows import _NO_INDEX

# The signed columns of each weight matrix, by its identity while it lives: the copies of a
# problem share its W (the steering's solves each made their own, 3 x 10 ms on 1e6 rows).
_SIGNED = {}


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


class CompiledPass:
    """The compiled :meth:`full_evaluation` of :class:`~.linear.LinearProblem`, on all rows
    or on the rows of a :meth:`gather` batch (numba optional: None where it does not apply).

    A mixin of the problem: it reads its rows, weights and units, and its
    ``_kernel_loss_code``.
    """

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

        W = self.W
        key = id(W)
        hit = _SIGNED.get(key)
        if hit is None or hit[0]() is not W:
            hit = (weakref.ref(W, lambda _, key=key: _SIGNED.pop(key, None)),)
            hit += (_kernels.signed_columns(W),)
            _SIGNED[key] = hit
        return hit[1]

    def _pass_evaluation(self, x, sums, n_o, n_c):
        """:meth:`full_evaluation`'s ``(f0, grad, c, jac_t)`` from a compiled pass's sums over
        ``n_o`` objective and ``n_c`` constraint rows (``n_c = 0``: no constraints read)."""
        f, g, rsum, csum, G, gsum = sums
        grad = self._finish_grad(g, rsum, n_o)
        if not (self.n_constraints and n_c):
            return float(f) / n_o, grad, np.zeros(0), lambda v: np.zeros_like(x)
        return float(f) / n_o, grad, csum / n_c + self.offset, SummedJacobian(self, G, gsum, n_c)

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
