"""The end of a stream's outer iteration: Algorithm 1's multiplier and penalty step.

A mixin of :class:`~._stream_state.StreamState` (see :mod:`._stream`): the multipliers' step
on the constraint values measured (with ``rate="hard"`` on the hard values, at a gain that
adapts to the hard rate's slope), the penalty's growth, the momentum estimate carried to the
new augmented Lagrangian, and Neyman-Pearson's negative weight.
"""

from __future__ import annotations

import numpy as np

from ..solver.counting import Counter
from ..solver.kkt import level_shift
from ..solver.pstorm import AugmentedLagrangianEstimator
from ._hard_rates import _secant_slope
from ._stream_measurements import hard_reading

#: Rows of the first outer iteration; later ones span OUTER_SHARE of the rows seen, so a
#: stream of n rows takes about log(n) outer iterations and the last ones measure their
#: constraint values on many rows.
FIRST_OUTER_ROWS = 2000
OUTER_SHARE = 0.25
#: The hard-rate multiplier step's gain (see StreamState._hard_gain): its factor when the
#: hard value changes sign, when it keeps it, and its floor.
GAIN_SHRINK = 0.5
GAIN_GROWTH = 1.5
GAIN_MIN = 1e-3
#: The hard-rate step's noise guards (see MultiplierStep._outer), in standard errors of a
#: reading: a multiplier at 0 grows only on a value over its target by more than
#: ACTIVATION_Z of them, and a change of sign halves the gain only beyond FLIP_Z of them.
ACTIVATION_Z = 1.5
FLIP_Z = 1.0
#: Neyman-Pearson's negative weight is moved when the boundary ``score = 0`` flags a share of
#: the negatives off ``max_fpr`` by more than this factor (``fit``'s ``rel_tol``).
WEIGHT_BAND = 1.25


class MultiplierStep:
    """The outer iteration's step of :class:`StreamState`."""

    # -- the outer iteration ---------------------------------------------------------------------
    def _outer(self, problem):
        """Algorithm 1's step at the end of an outer iteration (see the module docstring)."""
        sums, self.measured = self.measured, None
        self.outer += 1
        self.rows_outer = 0
        # (A fairness stream counts from the rows on which its constraints were first posed.)
        rows = self.n_seen if self.posed_weight is None else self.posed_rows
        self.outer_rows = int(max(FIRST_OUTER_ROWS, OUTER_SHARE * rows))
        if sums is None or problem is None:
            return
        rows = sums[0]
        if self.kind == "np_logistic":
            if sums[2] <= 0 or sums[3] <= 0:
                # No positive among the rows measured (a stream that starts with negatives
                # only): the boundary's rate says nothing of the weight the classes need,
                # and moving it down there took the first 3 batches' weight e^-3 an outer
                # iteration (fresh FNR 0.632 at 3e5 rows, 0.218 at 1e6 against fit's 0.184).
                # No negative (one that starts with positives only): the rate flagged is
                # 0 / 0, read as 0, and on main 23a9350 the weight went down to e^-24 over
                # the first 3 of 20 batches and climbed back by e^3 an outer iteration to
                # the stream's end (issue 49's stream, max_fpr 0.1: fresh FPR 0, FNR 1.0;
                # with the threshold carried, FNR 0.48-0.76 against fit's 0.180).
                return
            return self._move_negative_weight(problem, sums[1] / rows)
        A, base = self._constraints()
        values = self._measured_values(sums) if self.m and A is not None else None
        if values is None:
            return
        soft, hard = values
        y_old, beta_old, z_old = self.y, self.beta, self.z
        c = soft + self.level_offset
        if self.pose.levels is not None:
            moved = level_shift(self.pose.levels, c, self.y, self.beta)
            self.level_offset = self.level_offset + moved
            c = c + moved
        p = self.n_params
        slack = np.maximum(-(c + self.y / self.beta), 0.0)
        hard_bound = self.steer and self.kind == "fair"
        # The multiplier step: on the soft values (the paper's), or with rate="hard" on the
        # hard values less the target bound_tol / 2 inside the bound, the multipliers kept
        # nonnegative: they move until the predictions meet the bound.
        k = hard + self.level_offset + 0.5 * self.bound_tol if hard_bound else c + slack
        if hard_bound:
            n = self.pose.n_cells
            met = bool(np.all(hard + self.level_offset <= 0))
            self.reading = (met, (sums[2 : 2 + n].copy(), sums[2 + 2 * n :].copy(), float(rows)))
        norm = float(np.linalg.norm(k))
        if hard_bound:
            # A reading is noisy (its rows are a few thousand of a small group's): a
            # multiplier at 0 grows only on a value over its target beyond ACTIVATION_Z
            # standard errors, and the gain halves only on a change of sign beyond FLIP_Z
            # of them (a model at the bound reads either sign by chance; on main be32ff6,
            # 4 groups independent of the label, both sides of each group's band took
            # multipliers of 0.4-0.5 from noise, the group columns' coefficients 0.13, and
            # the fresh gap 0.033 against fit's 0.0095).
            se = self._hard_spread(sums)
            k = np.where((self.y <= 0) & (k > 0), np.maximum(k - ACTIVATION_Z * se, 0.0), k)
            self.y = np.maximum(self.y + self._hard_gain(k, np.abs(k) > FLIP_Z * se) * k, 0.0)
        elif norm > 0:
            self.y = self.y + min(self.beta, 1.0 / norm) * k
        if norm > self.tol:
            self.beta = min(self.beta * self.sigma, self.beta_cap)
        self.z = np.concatenate([self.z[:p], slack])
        self._carry(problem, problem.with_offset(self.offsets(base)), z_old, y_old, beta_old)

    def _hard_gain(self, k, significant):
        """The gain of each multiplier's step on its hard value ``k``: halved when ``k``
        changed sign (the step went past the multiplier that meets the bound), grown while
        it keeps its sign and moves the multiplier. The hard rate is a steep function of the
        multiplier where the bound is dear (a model of small weights, whose predictions
        change with a small move): Algorithm 1's step, of length 1 whenever ``||k|| > 1 /
        beta``, went past it at every outer iteration (on main 6bdc02c, the group tied to the
        score: the multiplier swung between 0.9 and 1.9 around fit's 1.25, and the gap between
        +0.4 and -0.4, never settling)."""
        if self.gain is None:
            self.gain = np.full(len(k), self.beta)
        elif self.last_k is not None:
            flipped = k * self.last_k < 0
            last = self.last_significant
            flipped &= significant & (significant if last is None else last)
            # Grown only where the last step made no headway (the model lags the
            # multiplier by about an outer iteration: a reading of the same sign but
            # smaller is the model still catching up).
            stuck = (k * self.last_k > 0) & (np.abs(k) >= 0.8 * np.abs(self.last_k))
            moving = stuck & ((k > 0) | (self.y > 0))
            factor = np.where(flipped, GAIN_SHRINK, np.where(moving, GAIN_GROWTH, 1.0))
            self.gain = np.maximum(self.gain * factor, GAIN_MIN)
        self.last_k, self.last_significant = k, significant
        return self.gain

    def _hard_spread(self, sums):
        """The standard error of each hard constraint value measured (the cells'
        binomial spread on the rows measured)."""
        n, rows = self.pose.n_cells, sums[0]
        read = hard_reading(self, sums[2 : 2 + n], sums[2 + 2 * n :], rows)
        return np.zeros(self.m) if read is None else read[1]

    def _measured_values(self, sums):
        """The soft and hard constraint values of the model measured on the measured rows,
        the rates' denominators those rows' own cell weights; None where a rate has no
        measured row. The running weights count every row seen: on a stream whose mix
        drifts (a group absent from its first batches, as a new market) they are not the
        measured rows' mix, and they scaled the rates of the new group, read on its first
        rows, up to 2.5 times its bound on main 6bdc02c."""
        n, rows = self.pose.n_cells, sums[0]
        weight, soft, hard = sums[2 : 2 + n], sums[2 + n : 2 + 2 * n], sums[2 + 2 * n :]
        own = self.pose.constraints(weight / rows)
        if own is None:
            return None
        A, base = own
        return A @ soft / rows + base, A @ hard / rows + base

    def _carry(self, old, new, z_old, y_old, beta_old):
        """The momentum estimate carried to the new augmented Lagrangian: ``d`` plus the
        change of the gradient, both points on one fresh minibatch (unbiased)."""
        if self.d is None:
            return
        est_old = AugmentedLagrangianEstimator(old, "ustat")
        est_new = AugmentedLagrangianEstimator(new, "ustat")
        batches = est_old.draw(self.rng, self.batch_size, Counter())
        self.d = (
            self.d
            + est_new.gradient(self.z, self.y, self.beta, batches, Counter())
            - est_old.gradient(z_old, y_old, beta_old, batches, Counter())
        )

    def _move_negative_weight(self, problem, rate):
        """Neyman-Pearson (logistic): weigh the negatives until the boundary ``score = 0``
        flags about ``max_fpr`` of them (fit's secant steps on the log rate, see
        ``_negative_weight.fit_negative_weight``)."""
        floor = 1e-4 * self.pose.max_fpr
        error = np.log(max(rate, floor)) - np.log(self.pose.max_fpr)
        if abs(error) <= np.log(WEIGHT_BAND):
            return
        self.weight_trace.append((self.log_negative_weight, error))
        self.weight_trace = self.weight_trace[-2:]
        slope = _secant_slope(self.weight_trace, -1.0, -4.0, -0.25)
        self.log_negative_weight -= float(np.clip(error / slope, -3.0, 3.0))
        factor = np.exp(self.log_negative_weight - self.weight_trace[-1][0])
        new = problem.with_objective_weights(problem.u * np.where(problem.b > 0, 1.0, factor))
        new.smoothness = problem.smoothness
        self._carry(problem, new, self.z, self.y, self.beta)
