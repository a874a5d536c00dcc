"""A block of PStorm iterations in compiled code for :class:`~.linear.LinearProblem`
(:class:`PStormBlock`): the block's minibatch draws and the kernel's view of ``h``.
"""

from __future__ import annotations

import numpy as np

from ..solver.problem import FiniteSumProblem
from ..solver.prox import L1, Box, NoProx, Prox, Ridge


class PStormBlock:
    """:meth:`pstorm_block` of :class:`~.linear.LinearProblem` (numba optional).

    A mixin of the problem: it reads its rows (through ``_block_rows``, which a problem
    whose rows live elsewhere overrides), weights, units, ``h`` and constraint strata, and
    its ``_kernel_loss_code``.
    """

    #: On CSR data the compiled block may bring the coordinates no minibatch row reads up to
    #: date only when read (an iteration then costs O(non-zeros) instead of O(n_features)).
    #: "auto": when there are more than ``LAZY_RATIO`` times as many features as non-zeros in
    #: an iteration's rows (below that, the bookkeeping per non-zero costs more than the
    #: dense pass saves); True: whenever it applies; False: never.
    lazy_updates = "auto"
    #: Measured crossover (``benchmarks/kernel.py``): the lazy block costs about 12 ns more per
    #: non-zero read, the eager one about 5 ns per feature.
    LAZY_RATIO = 3.0

    def _kernel_prox(self):
        """``(lam, lower, upper, ridge)`` of ``h`` for the kernel, or None if it does not know
        ``h``."""
        h, p = self.h, self.n_params
        lam, lower, upper = np.zeros(p), np.full(p, -np.inf), np.full(p, np.inf)
        ridge = np.zeros(p)
        # Exact types only: a subclass may override the prox.
        if type(h) in (NoProx, Prox):
            pass
        elif type(h) is L1:
            lam = np.broadcast_to(h._lam(lam), (p,)).astype(float)
        elif type(h) is Box:
            lower = np.broadcast_to(h.lower, (p,)).astype(float)
            upper = np.broadcast_to(h.upper, (p,)).astype(float)
        elif type(h) is Ridge:
            # The estimators' L2 penalty (C): without it here their fits ran the numpy path.
            ridge = np.broadcast_to(h._lam(ridge), (p,)).astype(float)
        else:
            return None
        return lam, lower, upper, ridge

    def _block_draws(self, est, batch_size, n_iter, rng, counter, budget):
        """The minibatches of up to ``n_iter`` iterations, as an ``(T, k, b)`` index array
        (stratified constraint batches: a list of ``k`` ``(T, b_k)`` arrays).

        ``k`` is 1, 2 or 3 (objective, constraint, second constraint batch), ``T`` stops where
        the numpy loop would (the budget is tested before each iteration), and the counts are
        those of ``est.draw`` and ``storm_direction``. Returns None if ``T`` is 0.
        """
        if counter.evaluations >= budget:
            return None
        ranges = [self.n_objective_samples]
        if self.n_constraints:
            ranges += [self.n_constraint_samples] * (1 + (est.estimator == "independent"))
        uniform = type(self).sample is FiniteSumProblem.sample and self.constraint_strata is None
        if uniform and len(set(ranges)) == 1:
            # One call for the whole block: ``integers`` with one range draws its values in
            # sequence from the generator's stream, so this is the per-iteration calls' sample
            # (the kernel-vs-numpy tests check it).
            per_it = 2 * batch_size * len(ranges)
            # The iterations the budget allows: the least T with E + T per_it >= budget
            # (the budget may be a float; the two loops correct the division's rounding).
            E = counter.evaluations
            T = int(np.ceil((budget - E) / per_it))
            while T > 1 and E + (T - 1) * per_it >= budget:
                T -= 1
            while E + T * per_it < budget:
                T += 1
            T = min(n_iter, T)
            draws = rng.integers(ranges[0], size=(T, len(ranges), batch_size))
            counter.add("objective", draws=T * batch_size, evaluations=2 * T * batch_size)
            if len(ranges) > 1:
                k = (len(ranges) - 1) * T * batch_size
                counter.add("constraint", draws=k, evaluations=2 * k)
            return draws
        out = []
        while len(out) < n_iter and counter.evaluations < budget:
            batches = [b for b in est.draw(rng, batch_size, counter) if b is not None]
            counter.add("objective", evaluations=2 * len(batches[0]))
            for b in batches[1:]:
                counter.add("constraint", evaluations=2 * len(b))
            out.append(batches)
        if self.constraint_strata is not None:
            return [np.array([b[i] for b in out], dtype=np.intp) for i in range(len(out[0]))]
        return np.array(out, dtype=np.intp)

    def _block_rows(self, draws):
        """``(problem, draws)`` whose rows the compiled block reads: this problem and the
        draws as they are (a problem whose rows live elsewhere brings the drawn rows here)."""
        return self, draws

    def pstorm_block(self, est):
        """A runner of PStorm iterations in compiled code, or None for the numpy path.

        None when numba is not installed, when :attr:`use_kernel` is false, or when the
        loss or ``h`` is not one the kernel knows (a subclass of them included).

        Parameters
        ----------
        est : AugmentedLagrangianEstimator
            The estimator the iterations use (its ``problem`` is this problem).

        Returns
        -------
        run : callable or None
            ``run(z, d, y, beta, *, eta, eta_slack, keep, batch_size, n_iter, rng, counter,
            budget) -> (z, d, n_done)`` runs up to ``n_iter`` iterations of
            :func:`~sklearn_ialm.solver.pstorm.pstorm`'s loop (fewer if the budget runs out
            first), drawing each minibatch with ``est.draw`` and counting it exactly as the
            numpy path does.
        """
        from . import _kernels

        loss_code = self._kernel_loss_code()
        prox = self._kernel_prox()
        stratified = self.constraint_strata is not None
        if loss_code is None or prox is None or (stratified and est.estimator != "ustat"):
            return None
        alpha = self._loss_alpha()
        nf = self.n_features
        inv_scale = np.broadcast_to(self._inv_scale, (nf,)).astype(float)
        center = np.zeros(nf) if self.feature_center is None else self.feature_center
        offset = self.offset
        ineq = np.asarray(est.ineq, dtype=bool)
        no_rows = np.zeros((0, 0), dtype=np.intp)
        sparse = self.A_obj.sparse and (not self.n_constraints or self.A_con.sparse)
        plan = nnz_row = None
        if sparse and self.lazy_updates:
            plan = _kernels.lazy_plan(nf, est.dim, center, *prox)
            As = [self.A_obj.A] + ([self.A_con.A] if self.n_constraints else [])
            nnz_row = max(A.nnz / max(A.shape[0], 1) for A in As)

        row_alpha = {}

        def run(z, d, y, beta, *, eta, eta_slack, keep, batch_size, n_iter, rng, counter, budget):
            draws = self._block_draws(est, batch_size, n_iter, rng, counter, budget)
            if draws is None:
                return z, d, 0
            strata = None
            if stratified:
                # Objective and (longer) constraint batches apart, (T, b) and (T, S per).
                pb, draws = self, [np.ascontiguousarray(a) for a in draws]
                st = self._strata
                per = self._per_stratum(batch_size)
                if row_alpha.get("per") != per:  # an n-vector: formed again if per changes
                    row_alpha.update(per=per, rows=st.share[st.codes] / per)
                strata = (row_alpha["rows"], st.codes, len(st.counts), per)
            else:
                # The rows the block reads, and the draws as indices into them (the same
                # problem and draws for data in memory; rows brought from a cluster otherwise).
                pb, draws = self._block_rows(draws)
                # (T, k, b) -> k C-ordered (T, b) arrays: one compiled signature for them all.
                draws = np.ascontiguousarray(draws.transpose(1, 0, 2))
            idx_o = draws[0]
            o_src = pb.A_obj.kernel_source(idx_o)
            idx_c = ridx_c = no_rows
            c_src = o_src
            if len(draws) > 1:
                # The constraint minibatches of an iteration side by side, (T, k * b): one
                # source for them all (gathered together if need be).
                idx_c = np.concatenate(draws[1:], axis=1) if len(draws) > 2 else draws[1]
                c_src = pb.A_con.kernel_source(idx_c)
                ridx_c = c_src[5]
            lazy = plan
            if plan is not None and self.lazy_updates == "auto":
                nnz_it = sum(a.shape[1] for a in draws) * nnz_row
                lazy = plan if nf > self.LAZY_RATIO * nnz_it else None
            z, d = _kernels.pstorm_block(
                z, d, np.asarray(y, dtype=float).reshape(self.n_constraints),
                beta, eta, eta_slack, keep, nf, self.fit_intercept, inv_scale, center, *prox,
                loss_code, alpha, *_kernels.source(*o_src[:5]), pb.b, pb.bu, idx_o,
                o_src[5], *_kernels.source(*c_src[:5]), pb.W, offset, ineq, idx_c, ridx_c,
                max(len(draws) - 1, 1), lazy=lazy, strata=strata,
            )  # fmt: skip
            return z, d, idx_o.shape[0]

        return run
