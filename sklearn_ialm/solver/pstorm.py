"""PStorm (Algorithm 2 of the paper) on the augmented Lagrangian of a constrained problem.

The iterate is ``z = (x, s)``: the model parameters and one nonnegative slack per
inequality. For a multiplier ``y`` and penalty ``beta`` the smooth part of the augmented
Lagrangian is

    Phi(z) = g(x) + y . k(z) + beta/2 ||k(z)||^2,   k(z) = c(x) + E s,

and PStorm needs an unbiased estimator of ``grad Phi`` from a minibatch. The term that needs
care is ``beta J(x)^T k(z)``, a product of two expectations. Two unbiased estimators:

``"independent"`` (the paper's Lemma 4)
    ``J`` from one batch and ``k`` from a second, independent batch.
``"ustat"``
    One batch of ``b`` i.i.d. draws and the U-statistic over its distinct pairs,
    ``1/(b(b-1)) sum_{i != j} J_i^T k_j``: unbiased because draws at different positions are
    independent, and it needs half the constraint samples of the two-batch form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .counting import Counter

__all__ = ["AugmentedLagrangianEstimator", "Counter", "pstorm"]


@dataclass
class AugmentedLagrangianEstimator:
    """Stochastic gradients of ``Phi(z) = L_beta(z, y) - h(x)`` for a problem.

    Parameters
    ----------
    problem : Problem
    estimator : {"ustat", "independent"}
    """

    problem: object
    estimator: str = "ustat"
    p: int = field(init=False)
    ineq: np.ndarray = field(init=False)

    def __post_init__(self):
        if self.estimator not in ("ustat", "independent"):
            raise ValueError(
                f"estimator must be 'ustat' or 'independent', got {self.estimator!r}."
            )
        self.p = self.problem.n_params
        self.ineq = np.asarray(self.problem.inequality, dtype=bool).reshape(-1)
        self.m = self.problem.n_constraints
        self.n_slack = int(self.ineq.sum())

    @property
    def dim(self) -> int:
        return self.p + self.n_slack

    def draw_evaluations(self, size):
        """Per-sample evaluations of one gradient estimate on a minibatch of ``size`` draws:
        the objective rows, and the rows of each constraint batch (two with
        ``"independent"``; a stratified batch can hold more rows than ``size``). One PStorm
        iteration evaluates its minibatch at two points."""
        if not self.m:
            return size
        rows = self.problem.constraint_batch_length(size)
        return size + rows * (1 + (self.estimator == "independent"))

    def k(self, C, s):
        """Add slacks to the inequality columns of per-sample constraint values."""
        if self.n_slack:
            C = C.copy()
            C[..., self.ineq] += s
        return C

    def draw(self, rng, size, counter):
        """One minibatch (objective rows, constraint rows[, second constraint batch])."""
        if self.estimator == "ustat" and self.m and size < 2:
            # The U-statistic averages over distinct pairs of the batch: one draw has none.
            raise ValueError(
                f"estimator='ustat' needs minibatches of at least 2 draws, got a batch of "
                f"{size}; use estimator='independent' for batches of 1 (e.g. preset='theory')."
            )
        pb = self.problem
        bo = pb.sample(rng, size, "objective")
        counter.objective_draws += size
        if self.m == 0:
            return bo, None, None
        bc = pb.sample(rng, size, "constraint")
        counter.constraint_draws += len(bc)
        bc2 = None
        if self.estimator == "independent":
            bc2 = pb.sample(rng, size, "constraint")
            counter.constraint_draws += len(bc2)
            counter.second_batch_draws += len(bc2)
        return bo, bc, bc2

    def penalty_cotangent(self, K, K2, y, beta, strata=None, strata2=None):
        """Per-sample cotangents ``U`` with ``sum_i J_i^T U_i`` unbiased for ``J^T (y + beta k)``.

        Also returns the estimate of ``y + beta k`` used for the slack block. ``strata`` (and
        ``strata2`` for ``K2``) are the batches' :meth:`~sklearn_ialm.solver.Problem.batch_strata`
        when they were drawn by stratum: row ``i`` of stratum ``s`` (``b_s`` rows, share
        ``pi_s``) weighs ``alpha_i = pi_s / b_s``; a pair of rows from two strata weighs
        ``alpha_i alpha_j`` and a pair from one stratum ``alpha_i alpha_j b_s / (b_s - 1)``
        (its U-statistic), so the double sum stays unbiased for ``J^T k``.
        """
        if strata is not None:
            return self._stratified_cotangent(K, K2, y, beta, strata, strata2)
        b = K.shape[0]
        if K2 is None:
            ksum = K.sum(axis=0)
            U = (y + (beta / (b - 1)) * ksum) / b - (beta / (b * (b - 1))) * K
            return U, y + (beta / b) * ksum
        kbar2 = K2.mean(axis=0)
        w = y + beta * kbar2
        return np.broadcast_to(w / b, K.shape), w

    def _stratified_cotangent(self, K, K2, y, beta, strata, strata2):
        codes, alpha, counts = strata
        if K2 is not None:
            w = y + beta * (strata2[1] @ K2)
            return alpha[:, None] * w, w
        aK = alpha[:, None] * K
        total = aK.sum(axis=0)
        by_stratum = np.zeros((len(counts), K.shape[1]))
        np.add.at(by_stratum, codes, aK)
        b = counts[codes][:, None].astype(float)
        U = alpha[:, None] * (y + beta * (total + (by_stratum[codes] - b * aK) / (b - 1.0)))
        return U, y + beta * total

    def _strata(self, batch):
        return None if batch is None else self.problem.batch_strata(batch)

    def gradient(self, z, y, beta, batches, counter):
        """Unbiased estimate of ``grad Phi(z)`` on the given minibatch."""
        pb = self.problem
        bo, bc, bc2 = batches
        x = z[: self.p]
        gx = pb.objective(x, bo)
        counter.objective_evaluations += pb.batch_size(bo, "objective")
        if self.m == 0:
            return gx
        s = z[self.p :]
        C, vjp = pb.constraints(x, bc)
        counter.constraint_evaluations += C.shape[0]
        K2 = None
        if bc2 is not None:
            C2, _ = pb.constraints(x, bc2)
            counter.constraint_evaluations += C2.shape[0]
            K2 = self.k(C2, s)
        U, w = self.penalty_cotangent(
            self.k(C, s), K2, y, beta, self._strata(bc), self._strata(bc2)
        )
        out = np.empty(self.dim)
        out[: self.p] = gx + vjp(U)
        out[self.p :] = w[self.ineq]
        return out

    def storm_direction(self, z_new, z, y, beta, batches, keep, counter):
        """``v(z_new) - keep * v(z)`` on one minibatch: the data part of the STORM update.

        Problems that offer ``objective_pair`` and ``constraints_pair`` evaluate both points
        in one pass over the minibatch; others are called once per point.
        """
        pb = self.problem
        if not hasattr(pb, "objective_pair"):
            v = self.gradient(z_new, y, beta, batches, counter)
            return v - keep * self.gradient(z, y, beta, batches, counter)
        bo, bc, bc2 = batches
        x1, x2 = z_new[: self.p], z[: self.p]
        gx = pb.objective_pair(x1, x2, bo, 1.0, -keep)
        counter.objective_evaluations += 2 * pb.batch_size(bo, "objective")
        if self.m == 0:
            return gx
        s1, s2 = z_new[self.p :], z[self.p :]
        C1, C2, vjp = pb.constraints_pair(x1, x2, bc)
        counter.constraint_evaluations += 2 * C1.shape[0]
        K1 = K2 = None
        if bc2 is not None:
            D1, D2, _ = pb.constraints_pair(x1, x2, bc2)
            counter.constraint_evaluations += 2 * D1.shape[0]
            K1, K2 = self.k(D1, s1), self.k(D2, s2)
        st, st2 = self._strata(bc), self._strata(bc2)
        U1, w1 = self.penalty_cotangent(self.k(C1, s1), K1, y, beta, st, st2)
        U2, w2 = self.penalty_cotangent(self.k(C2, s2), K2, y, beta, st, st2)
        out = np.empty(self.dim)
        out[: self.p] = gx + vjp(U1, -keep * U2)
        out[self.p :] = (w1 - keep * w2)[self.ineq]
        return out

    def multiplier_change(self, z, y_old, beta_old, y_new, beta_new, batch, counter):
        """Unbiased estimate of ``grad Phi_new(z) - grad Phi_old(z)`` on one batch.

        The objective term cancels, so only constraint samples are needed. Used to carry the
        momentum estimate across an outer iteration without restarting it.
        """
        pb = self.problem
        x, s = z[: self.p], z[self.p :]
        C, vjp = pb.constraints(x, batch)
        counter.constraint_evaluations += C.shape[0]
        K = self.k(C, s)
        # The U-statistic is unbiased whichever estimator the iterations use.
        st = self._strata(batch)
        U1, w1 = self.penalty_cotangent(K, None, y_new, beta_new, st)
        U0, w0 = self.penalty_cotangent(K, None, y_old, beta_old, st)
        out = np.empty(self.dim)
        out[: self.p] = vjp(U1 - U0)
        out[self.p :] = (w1 - w0)[self.ineq]
        return out

    def step(self, z, d, eta, eta_slack, h):
        """Proximal step with step ``eta`` on ``x`` and ``eta_slack`` on the slacks."""
        out = np.empty_like(z)
        out[: self.p] = h.prox(z[: self.p] - eta * d[: self.p], eta)
        out[self.p :] = np.maximum(z[self.p :] - eta_slack * d[self.p :], 0.0)
        return out


def pstorm(
    est,
    z,
    d,
    y,
    beta,
    *,
    eta,
    eta_slack,
    delta,
    batch_size,
    rng,
    counter,
    check,
    eval_every,
    budget,
    check_work=None,
    check_growth=1.0,
):
    """Run PStorm iterations from ``(z, d)`` until ``check`` accepts or the budget is spent.

    Each iteration takes the proximal step ``z+ = prox(z - eta d)`` (with its own step
    ``eta_slack`` on the slack block, whose curvature is exactly ``beta``) and updates the momentum
    estimate on one fresh minibatch, evaluated at both points:
    ``d+ = v(z+) + (1 - delta) (d - v(z))`` (STORM). ``check(z, d, t, batch_size)`` evaluates
    the stopping rule on the evaluation batch and returns ``(stop, batch_size, z, d)``:
    whether to stop, the minibatch size to go on with, and the point and estimate to go on
    from (the check postprocesses the slack block). ``budget`` caps ``counter.evaluations``
    (set-up and checks included): an iteration starts only if its evaluations fit in what
    is left, so only a check can take the count past the budget, by at most its own cost.

    The first check comes after ``eval_every`` iterations. Each interval is then
    ``check_growth`` times the previous one (``1``: every ``eval_every`` iterations, the
    paper's rule), but no longer than ``eval_every`` or the iterations whose minibatch work
    reaches ``check_work`` (the cost of one check; a callable is asked at each check, for a
    test whose cost changes), whichever is more: a test that fails costs at most that much
    idle work.

    A problem with a ``pstorm_block(est)`` method that returns a runner (see
    :meth:`~sklearn_ialm.problems.LinearProblem.pstorm_block`) runs the iterations between
    two checks in one call; otherwise (or when it returns None) each iteration is done here.

    Returns ``(z, d, n_iter, stopped, batch_size)``; ``stopped`` says whether ``check``
    accepted.
    """
    h = est.problem.h
    keep = 1.0 - delta
    t = last_t = 0
    interval = eval_every
    last_work = counter.minibatch_evaluations
    # A problem may run whole blocks of these iterations itself (compiled), same draws.
    block = getattr(est.problem, "pstorm_block", None)
    run_block = block(est) if block is not None else None
    while True:
        # The count (an integer) before the last iteration that fits: c + cost <= budget
        # exactly when c < floor(budget - cost) + 1, the form of the block's own test.
        last_start = np.floor(budget - 2 * est.draw_evaluations(batch_size)) + 1
        if counter.evaluations >= last_start:
            break
        if run_block is not None:
            second = counter.second_batch_draws
            z, d, n = run_block(
                z, d, y, beta, eta=eta, eta_slack=eta_slack, keep=keep,
                batch_size=batch_size, n_iter=last_t + interval - t, rng=rng,
                counter=counter, budget=last_start,
            )  # fmt: skip
            t += n
            if est.estimator == "independent" and est.m:
                # A block may draw its minibatches in one call, past est.draw: one second
                # constraint batch per iteration, whichever path drew it.
                counter.second_batch_draws = second + n * batch_size
        else:
            z_new = est.step(z, d, eta, eta_slack, h)
            batches = est.draw(rng, batch_size, counter)
            d = keep * d + est.storm_direction(z_new, z, y, beta, batches, keep, counter)
            z = z_new
            t += 1
        if t - last_t >= interval:
            per_iter = (counter.minibatch_evaluations - last_work) / (t - last_t)
            longest = np.inf
            if check_work is not None:
                work = check_work() if callable(check_work) else check_work
                longest = max(eval_every, int(work / max(per_iter, 1.0)))
            interval = int(min(np.ceil(check_growth * interval), longest))
            last_t, last_work = t, counter.minibatch_evaluations
            stop, batch_size, z, d = check(z, d, t, batch_size)
            if stop:
                return z, d, t, True, batch_size
    return z, d, t, False, batch_size


def pstorm_theory(est, z, y, beta, *, T, step, delta, m0, m1, rng, counter):
    """Algorithm 2 exactly as analysed, for one call with the proof's parameters.

    The momentum estimate starts from ``m0`` fresh samples, the output is built from one
    iterate ``z_tau`` with ``tau`` uniform on ``{0, ..., T-1}``, and the postprocessing step
    ``prox(z_tau - step * v)`` uses ``m1`` fresh samples. The iterations after ``tau`` do
    not change the output, so they are not run (``tau`` is drawn first): the output has the
    distribution of Algorithm 2's at a fraction of its cost.

    Returns ``(z_hat, n_iter)``.
    """
    h = est.problem.h
    tau = int(rng.integers(T))
    d = est.gradient(z, y, beta, est.draw(rng, m0, counter), counter)
    keep = 1.0 - delta
    for _ in range(tau):
        z_new = est.step(z, d, step, step, h)
        batches = est.draw(rng, 1, counter)
        d = est.gradient(z_new, y, beta, batches, counter) + keep * (
            d - est.gradient(z, y, beta, batches, counter)
        )
        z = z_new
    v = est.gradient(z, y, beta, est.draw(rng, m1, counter), counter)
    return est.step(z, v, step, step, h), tau
