"""The inner solvers of Algorithm 1: PStorm on the augmented Lagrangian of each outer
iteration, until its stop test passes or the budget is spent.

Both keep the iterate ``z`` across outer iterations and share one interface: ``start`` (the
first point), ``run`` (one outer iteration's subproblem) and ``carry`` (to the next
multipliers and penalty).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .pstorm import pstorm, pstorm_theory
from .stopping import check_schedule
from .theory import theory_parameters

__all__ = ["PStormSolver", "TheorySolver"]


class PStormSolver:
    """PStorm with the knobs of :class:`~sklearn_ialm.solver.settings.Settings`.

    Holds the iterate ``z``, the momentum estimate ``d`` and the minibatch size
    ``batch_size`` across outer iterations, and within one the stall bookkeeping of the
    minibatch growth.

    Parameters
    ----------
    est : AugmentedLagrangianEstimator
    rng : numpy Generator
    counter : Counter
        The run's count, with its budget.
    stop_test : StopTest
    knobs : Settings
    smoothness : tuple (L0, LJ) or None
        None for a solver that never steps (a run whose finish is the whole solve).
    batch_size : int
        The first minibatch size.
    """

    def __init__(self, est, rng, counter, stop_test, knobs, *, smoothness, batch_size):
        self.est, self.rng, self.counter, self.test, self.knobs = (
            est, rng, counter, stop_test, knobs,
        )  # fmt: skip
        self.L0, self.LJ = smoothness or (None, None)
        self.batch_size = batch_size
        problem = est.problem
        self.max_batch = max(batch_size, knobs.max_batch_size or 10**9)
        if problem.finite and knobs.max_batch_size is None:
            self.max_batch = max(
                batch_size, problem.n_objective_samples, problem.n_constraint_samples
            )
        self.every, self.work, self.growth = check_schedule(knobs.eval_every, stop_test)
        self.z = self.d = None
        self._best, self._since = np.inf, 0

    def start(self, z, y, beta) -> None:
        """Start at ``z``, with a first momentum estimate if it fits in the budget."""
        self.z = z
        if self.counter.fits(self.est.draw_evaluations(self.knobs.m0)):
            self.d = self._init_momentum(z, y, beta)

    def steps(self, beta):
        """``(eta, eta_slack)``: the steps on ``x`` and on the slack block at ``beta``."""
        eta = self.knobs.step_scale / (self.L0 + self.knobs.penalty_scale * self.LJ * beta)
        # The slack block of the AL is a quadratic with curvature beta: 1/beta is its exact
        # step. The paper's reading takes the one step for all of z.
        eta_slack = eta if self.knobs.slack_step == "shared" else min(eta, 1.0 / beta)
        return eta, eta_slack

    def run(self, y, beta, k, n_iter):
        """Iterate on the augmented Lagrangian at ``(y, beta)`` until a stop test passes.

        Returns ``(n_iter, stopped)``: the inner iterations run, and whether a test passed
        (``False``: the budget is spent).
        """
        if self.d is None:
            # Not even the first momentum estimate fits in the budget: the start is judged.
            return 0, False
        eta, eta_slack = self.steps(beta)
        self._best, self._since = np.inf, 0
        check = partial(self._check, y=y, beta=beta, k=k, base=n_iter, eta=eta, eta_s=eta_slack)
        self.z, self.d, t, stopped, self.batch_size = pstorm(
            self.est, self.z, self.d, y, beta, eta=eta, eta_slack=eta_slack,
            delta=self.knobs.delta, batch_size=self.batch_size, rng=self.rng,
            counter=self.counter, check=check, eval_every=self.every, check_work=self.work,
            check_growth=self.growth, budget=self.counter.budget,
        )  # fmt: skip
        return t, stopped

    def _check(self, zc, dc, t, b, *, y, beta, k, base, eta, eta_s):
        """PStorm's ``check``: ``(stop, batch_size, z, d)`` at iteration ``t``."""
        est, knobs, rng, counter = self.est, self.knobs, self.rng, self.counter
        if knobs.postprocess is not None:
            # Algorithm 2's last step: a proximal step on a fresh m1-sample estimate.
            batches = est.draw(rng, knobs.postprocess, counter)
            d_post = est.gradient(zc, y, beta, batches, counter)
            zc = est.step(zc, d_post, eta, eta_s, est.problem.h)
        verdict = self.test.judge(zc, y, beta, k, base + t, b)
        zc = verdict.z
        moved = self.test.take_level_moves()
        if moved is not None and np.any(moved):
            # A level step is a change of multipliers y -> y + beta * shift as far as the
            # gradient in x is concerned: the momentum estimate follows it unbiasedly.
            bc = est.problem.sample(rng, b, "constraint")
            counter.constraint_draws += len(bc)
            dc = dc + est.multiplier_change(zc, y, beta, y + beta * moved, beta, bc, counter)
        if knobs.slack_projection:
            dc = dc.copy()
            dc[est.p :] = verdict.grad_phi[est.p :]  # the slack block's gradient is exact
        if verdict.passed:
            return True, b, zc, dc
        if verdict.dres < 0.9 * self._best:
            self._best, self._since = verdict.dres, 0
            return False, b, zc, dc
        self._since += 1
        # Stalled for growth_patience checks: the exact gradient of the stop test measures the
        # momentum estimator's error. When that error is a sizeable share of the residual,
        # it is a noise floor that more iterations at this batch size cannot go under.
        error = float(np.linalg.norm(dc - verdict.grad_phi))
        if self._since >= knobs.growth_patience and error > knobs.noise_ratio * verdict.dres:
            b = min(int(np.ceil(knobs.batch_growth * b)), self.max_batch)
            self._since = 0
        return False, b, zc, dc

    def carry(self, y_old, beta_old, y, beta) -> bool:
        """Carry the momentum estimate to the next outer iteration's ``(y, beta)``: a
        correction on fresh constraint samples (``"warm"``) or a new estimate
        (``"restart"``). ``False`` when that and one iteration do not fit in the budget
        (work that no test would report)."""
        est, counter = self.est, self.counter
        warm = est.m and self.knobs.momentum == "warm"
        if warm:
            change = est.problem.constraint_batch_length(self.batch_size)
        else:
            change = est.draw_evaluations(self.knobs.m0)
        if not counter.fits(change + 2 * est.draw_evaluations(self.batch_size)):
            return False
        if warm:
            bc = est.problem.sample(self.rng, self.batch_size, "constraint")
            counter.constraint_draws += len(bc)
            self.d = self.d + est.multiplier_change(self.z, y_old, beta_old, y, beta, bc, counter)
        else:
            self.d = self._init_momentum(self.z, y, beta)
        return True

    def _init_momentum(self, z, y, beta):
        est = self.est
        batches = est.draw(self.rng, self.knobs.m0, self.counter)
        d = est.gradient(z, y, beta, batches, self.counter)
        if d.shape != z.shape:
            raise ValueError(
                f"the problem's gradient has shape {d.shape[:1]}, expected ({est.p},) "
                "(problem.n_params): check the objective / constraint oracles."
            )
        if not np.all(np.isfinite(d)):
            raise FloatingPointError(
                "the problem's minibatch gradient at the starting point is not finite "
                "(NaN or inf): check the oracles and the data."
            )
        return d


class TheorySolver:
    """Algorithm 2 as analysed (``preset="theory"``): each outer iteration one call of
    :func:`~sklearn_ialm.solver.pstorm.pstorm_theory` with the proof's parameters
    (:func:`~sklearn_ialm.solver.theory.theory_parameters`), then one stop test of its
    output (the proof has no inner exit test)."""

    def __init__(self, est, rng, counter, stop_test, *, smoothness, tol, theory_constants):
        self.est, self.rng, self.counter, self.test = est, rng, counter, stop_test
        self.L0, self.LJ = smoothness
        self.tol, self.constants = tol, theory_constants
        self.z = None

    def start(self, z, y, beta) -> None:
        self.z = z  # every call starts from its own m0-sample estimate

    def run(self, y, beta, k, n_iter):
        prm = theory_parameters(
            self.L0, self.LJ, **self.constants, y_norm=float(np.linalg.norm(y)), beta=beta,
            eps=self.tol,
        )  # fmt: skip
        z, t = pstorm_theory(
            self.est, self.z, y, beta,
            **{key: prm[key] for key in ("T", "step", "delta", "m0", "m1")},
            rng=self.rng, counter=self.counter,
        )  # fmt: skip
        self.z = self.test.evaluate(z, y, beta, k, n_iter + t).z
        return t, self.counter.evaluations < self.counter.budget

    def carry(self, y_old, beta_old, y, beta) -> bool:
        counter = self.counter
        return not (self.est.problem.finite and counter.evaluations >= counter.budget)
