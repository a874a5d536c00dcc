"""The stopping rule of Stoc-iALM: the residuals at a point, and the verdict on them.

One interface, :meth:`StopTest.evaluate` (the residuals) and :meth:`StopTest.judge` (the
verdict of an inner iteration's test), over the ways a test reads the data: all rows of a
finite sum (``problem.full_evaluation``, which a problem on a Dask cluster computes on its
workers and prices with ``problem.check_work``), a random subsample of them
(:mod:`.subsample`), or a fresh evaluation batch of a sampled problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import subsample as _subsample
from .kkt import level_shift, slack_residuals
from .problem import JacobianMatrix
from .subsample import _SUBSAMPLE_CHUNKS, _SUBSAMPLE_MARGIN, Subsample, _mean_evaluation

__all__ = ["StopTest", "Verdict", "check_schedule"]

#: ``eval_every="auto"``: growth of the interval between two stop tests within an outer
#: iteration (see :func:`~sklearn_ialm.solver.pstorm.pstorm`).
_CHECK_GROWTH = 2.0
#: ... and the longest interval, as minibatch work in units of one test's cost.
_CHECK_WORK_RATIO = 1.0


@dataclass
class Verdict:
    """One evaluation of the stopping rule.

    ``z`` is the tested point (its slack block projected with ``slack_projection``), ``c``
    and ``k = c + E s`` the constraint values and residual vector, ``y_cert = y + beta k``
    the multiplier that certifies the dual residual, ``grad_phi`` the augmented
    Lagrangian's gradient; ``f0``, ``grad``, ``jac_t`` the evaluation itself. ``exact``: on
    all rows (or the sampled problem's evaluation batch), not a subsample. ``al`` is
    ``(y, beta, k, inner)``: the augmented Lagrangian and the iteration counts of the test.
    ``passed`` is set by :meth:`StopTest.judge`.
    """

    z: np.ndarray
    c: np.ndarray
    k: np.ndarray
    y_cert: np.ndarray
    pres: float
    dres: float
    pres_se: float
    dres_se: float
    f0: float
    objective: float
    grad: np.ndarray
    grad_phi: np.ndarray
    jac_t: object
    exact: bool
    al: tuple
    check_rows: float
    batch_size: int
    passed: bool = False

    def converged(self, tol, dual_tol) -> bool:
        """The eps-KKT rule, on all rows only."""
        return bool(self.exact and self.pres <= tol and self.dres <= dual_tol)


class StopTest:
    """Evaluate the stopping rule of a run at a point, on the rows its settings say.

    Parameters
    ----------
    problem : Problem
        The run's problem (its copy when free levels move its offsets).
    est : AugmentedLagrangianEstimator
    rng : numpy Generator
        The run's generator (subsamples and fresh evaluation batches are drawn from it).
    counter : Counter
        Charged the rows each test reads (``check_evaluations``).
    tol, dual_tol : float
    slack_projection : bool
    check_sample : "auto", int or False
    batch_size : int
        The minibatch size recorded with the tests until :meth:`judge` says another.
    observer : callable, optional
        Called with each :class:`Verdict` (the run's history and progress lines).
    """

    def __init__(
        self, problem, est, rng, counter, *, tol, dual_tol, slack_projection, check_sample,
        batch_size, observer=None,
    ):  # fmt: skip
        self.problem, self.est, self.rng, self.counter = problem, est, rng, counter
        self.tol, self.dual_tol = tol, dual_tol
        self.slack_projection = slack_projection
        self.batch_size = batch_size
        self.observer = observer
        self.kinds = 1 + bool(est.m)
        if problem.finite:
            cost_of = getattr(problem, "full_evaluation_cost", None)
            self.full_cost = int(cost_of()) if cost_of is not None else problem.n_samples
        else:
            size = getattr(problem, "evaluation_size", None)
            self.full_cost = None if size is None else int(size) * self.kinds
        self.subsample = Subsample.for_problem(problem, check_sample, self.full_cost)
        self.levels = getattr(problem, "levels", None)
        self.last = None  # the last Verdict
        self._moved = None  # level steps since the last take_level_moves()

    def cost(self):
        """Rows the next test reads (None: unknown, a sampled problem without a size)."""
        if self.subsample is None or self.subsample.rows is None:
            return self.full_cost
        return self.kinds * self.subsample.rows

    def judge(self, z, y, beta, k, inner, batch_size) -> Verdict:
        """The test of an inner iteration at ``z``: whether the outer iteration ends.

        On all rows it passes when the dual residual is ``<= dual_tol``. A subsample says
        "not yet" unless the dual residual is below ``dual_tol`` by a margin; a pass is
        repeated on all rows unless the primal residual is clearly above ``tol`` (then the
        outer iteration ends on the subsample's values).
        """
        self.batch_size = batch_size
        verdict = self.evaluate(z, y, beta, k, inner)
        passed = verdict.dres <= self.dual_tol
        if not verdict.exact:
            margin = _SUBSAMPLE_MARGIN
            passed = verdict.dres + margin * verdict.dres_se <= self.dual_tol
            if passed and verdict.pres - margin * verdict.pres_se <= self.tol:
                verdict = self.evaluate(verdict.z, y, beta, k, inner, full=True)
                passed = verdict.dres <= self.dual_tol
        verdict.passed = passed
        return verdict

    def take_level_moves(self):
        """The free levels' total step since the last call (None: no levels)."""
        moved, self._moved = self._moved, None
        return moved

    def _read(self, x, full, evaluation=None):
        """``(f0, grad, c, jac_t)`` at ``x``, the evaluation batches of a sampled problem,
        the subsample's chunks and the rows read: on a subsample unless ``full`` or the
        tests read all rows; ``evaluation``: ``(f0, grad, c, J)`` on all rows at ``x``,
        already read (by the finish), used as it is."""
        problem, counter, m = self.problem, self.counter, self.est.m
        sub = self.subsample
        batches = chunks = None
        if evaluation is not None:
            f0, grad, c, J = evaluation
            J = np.asarray(J, dtype=float)
            # (Read by the finish and counted there: this test reads no row of its own.)
            return (f0, grad, c, JacobianMatrix(J)), batches, chunks, 0.0
        if not full and sub is not None and sub.rows is not None:
            chunks, rows_read = sub.read(problem, self.rng, x, m)
            counter.check_evaluations += rows_read
            f0, grad, c, jac_t = _mean_evaluation(chunks)
            return (f0, grad, c, jac_t), batches, chunks, rows_read
        if not problem.finite:
            # No full data to check against: the evaluation batch is a fresh sample, and its
            # draws are oracle calls like any other.
            batches = (
                problem.evaluation_batch(self.rng, "objective"),
                problem.evaluation_batch(self.rng, "constraint") if m else None,
            )
            for kind, b in zip(("objective", "constraint"), batches, strict=True):
                if b is not None:
                    nb = problem.batch_size(b, kind)
                    counter.add(kind, draws=nb)
                    counter.check_evaluations += nb
        else:
            counter.check_evaluations += self.full_cost
        f0, grad, c, jac_t = problem.full_evaluation(x, self.rng, batches)
        if sub is not None:
            # The new reference of the subsample tests, which start small again.
            sub.restart(problem, x, f0, grad, c, jac_t, m, self.est.p)
        return (f0, grad, c, jac_t), batches, chunks, self.full_cost or np.nan

    def evaluate(self, z, y, beta, k, inner, full=False, evaluation=None) -> Verdict:
        """Residuals at ``z`` for the augmented Lagrangian at ``(y, beta)``: on a subsample
        of rows unless ``full`` or the tests read all rows, or from ``evaluation`` (see
        :meth:`_read`). ``k`` and ``inner`` (outer and inner iterations) are recorded with
        it."""
        est, problem, h, ineq = self.est, self.problem, self.problem.h, self.est.ineq
        p, m = est.p, est.m
        xk, sk = z[:p], z[p:]
        (f0, grad, c, jac_t), batches, chunks, rows_read = self._read(xk, full, evaluation)
        _check_oracle_values(f0, grad, c, p, m)
        shift = 0.0
        if self.levels is not None:
            # The levels minimise the AL given x exactly (as the slacks below): the
            # constraints move by ``shift``, and the momentum estimate with them (check).
            # On a subsample, given its estimate of c; the confirmation makes them exact.
            shift = level_shift(self.levels, c, y, beta)
            c = c + shift
            problem.offset += shift
            self._moved = (0.0 if self._moved is None else self._moved) + shift
        if self.slack_projection:
            # Postprocessing of the slack block with its exact gradient: s minimises the AL
            # given x in closed form. The iterate's own slack tracks the minibatch estimates
            # of c, which would leave an inactive constraint with multiplier beta * noise.
            sk = np.maximum(-(c[ineq] + y[ineq] / beta), 0.0)
        z = np.concatenate([xk, sk])
        kk = c.copy()
        kk[ineq] += sk
        y_cert = y + beta * kk
        pres, dres, grad_phi = slack_residuals(xk, sk, y_cert, grad, c, jac_t, h, ineq)
        pres_se = dres_se = 0.0 if problem.finite else np.nan
        if batches is not None:
            pres_se, dres_se = _standard_errors(problem, xk, sk, y_cert, batches, h, ineq)
        if chunks is not None:
            pres, dres, pres_se, dres_se = _subsample._subsample_residuals(
                chunks, shift, xk, sk, y_cert, c, grad, jac_t, h, ineq
            )
            self.subsample.grow(
                pres, dres, pres_se, dres_se, self.tol, self.dual_tol, self.full_cost, self.kinds
            )
        verdict = Verdict(
            z=z, c=c, k=kk, y_cert=y_cert, pres=pres, dres=dres, pres_se=pres_se,
            dres_se=dres_se, f0=f0, objective=f0 + h.value(xk), grad=grad, grad_phi=grad_phi,
            jac_t=jac_t, exact=chunks is None, al=(y, beta, k, inner), check_rows=rows_read,
            batch_size=self.batch_size,
        )  # fmt: skip
        self.last = verdict
        if self.observer is not None:
            self.observer(verdict)
        return verdict


def check_schedule(eval_every, stop_test):
    """``(every, work, growth)`` of :func:`~sklearn_ialm.solver.pstorm.pstorm`'s stop tests
    for ``eval_every`` (see :class:`~sklearn_ialm.solver.settings.Settings`)."""
    if eval_every != "auto":
        return eval_every, None, 1.0
    work = None
    if stop_test.full_cost is not None:
        # The cost of the test in use: a subsample's grows with it.
        work = lambda: _CHECK_WORK_RATIO * stop_test.cost()  # noqa: E731
        own_work = getattr(stop_test.problem, "check_work", None)
        if own_work is not None and stop_test.subsample is None:
            # A problem may price a test on all rows in minibatch work itself, when the
            # rows a test reads are not what it costs (rows on a Dask cluster).
            work = lambda: _CHECK_WORK_RATIO * own_work()  # noqa: E731
    return 50, work, _CHECK_GROWTH


def _check_oracle_values(f0, grad, c, p, m):
    """Raise at once on a wrong shape or a non-finite value from the full evaluation: a NaN
    would otherwise travel through every later iterate and end in a meaningless result."""
    grad, c = np.asarray(grad), np.asarray(c)
    if grad.shape != (p,):
        raise ValueError(
            f"the problem's objective gradient has shape {grad.shape}, expected ({p},) "
            "(problem.n_params)."
        )
    if c.shape != (m,):
        raise ValueError(
            f"the problem's constraint values have shape {c.shape}, expected ({m},) "
            "(problem.n_constraints)."
        )
    for what, val in (("objective value", f0), ("objective gradient", grad), ("constraints", c)):
        if not np.all(np.isfinite(val)):
            raise FloatingPointError(
                f"the problem's {what} is not finite (NaN or inf) at the current point: "
                "check the oracles and the data (e.g. overflow in the features)."
            )


def _standard_errors(problem, x, s, y_cert, batches, h, ineq, n_chunks=_SUBSAMPLE_CHUNKS):
    """Standard errors of the residual estimates of a sampled problem by batch means over
    chunks of its evaluation batch.

    Each chunk gives its own estimate of (pres, dres) at the returned multiplier
    ``y_cert``; their spread over ``n_chunks`` chunks, divided by ``sqrt(n_chunks)``,
    estimates the standard error of the full-batch estimate.
    """
    bo, bc = batches
    est = []
    for i in range(n_chunks):
        sub = (bo[i::n_chunks], None if bc is None else bc[i::n_chunks])
        _, grad, c, jac_t = problem.full_evaluation(x, None, sub)
        pres, dres, _ = slack_residuals(x, s, y_cert, grad, c, jac_t, h, ineq)
        est.append((pres, dres))
    se = np.std(np.array(est), axis=0, ddof=1) / np.sqrt(n_chunks)
    return float(se[0]), float(se[1])
