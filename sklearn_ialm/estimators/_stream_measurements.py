"""What a stream measures on rows before it learns from them, and the model it publishes.

A mixin of :class:`~._stream_state.StreamState` (see :mod:`._stream`, "Two averages of the
iterates"): the running estimates (the sums the outer step reads, Neyman-Pearson's
threshold, the points of the segment between two models measured) and, with a bound on
fairness rates of predictions, the choice of the model published among those measured to
meet the bound.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ._hard_rates import rate_threshold

#: The points ``t`` of the segment ``(1 - t) best + t candidate`` measured (see
#: StreamState._segment_readings): every tenth, and finer near either end. Where the bound
#: is dear the best is a model of small weights, and the candidate's scores outweigh its own
#: a tenth of the way: on the group tied to the score (sd 2, 1e5 rows in batches of 5000) the
#: fresh gap went from the best's 0.045 to 0.059 at t = 0.1 (accuracy 0.545 to 0.559), the
#: points at the bound lay between, and the best stayed published, 0.013 under fit's accuracy.
_NEAR_ENDS = np.array([0.01, 0.02, 0.035, 0.05, 0.075])
SEGMENT = np.unique(np.r_[np.linspace(0.0, 1.0, 11), _NEAR_ENDS, 1.0 - _NEAR_ENDS])
#: Neyman-Pearson: the threshold flags ``(1 - FPR_MARGIN) * max_fpr`` of the negatives, so
#: that the running rate's spread keeps it under ``max_fpr``.
FPR_MARGIN = 0.02
#: The fewest negatives over the threshold's quantile in a piece (its rows times the target
#: rate) on which the threshold is carried along the published model's move.
THRESHOLD_ROWS = 20
#: The published best model is dropped when its pooled readings put it over the bound by more
#: than this many standard errors of their sampling: at one, a best at the bound was dropped
#: for noise (the group tied to the score, sd 3, 3e5 rows: accuracy 0.577 -> 0.562 against
#: fit's 0.575); at two, every member of the issue-49 stream family held.
POOLED_Z = 2.0
#: A best model whose pooled readings put it over the bound by at most DROPPED_EXCESS (in the
#: bound's units) is replaced only by a model measured within DROPPED_WITHIN of its accuracy
#: (see StreamState._replacement_floor).
DROPPED_EXCESS = 0.01
DROPPED_WITHIN = 0.01
#: A reading new to the choice of the published model meets the bound only where it is
#: inside it by this many standard errors (see StreamState._publish_candidate).
MEET_Z = 1.0


class HeldOutMeasurements:
    """The measurements and the published model's choice of :class:`StreamState`."""

    def forget_measurements(self):
        """Drop what was measured against the constraints as posed so far (the best model
        that met them, the segment to measure, the multiplier steps' gains): after a move of
        the bound (set_params between calls) they judged another bound."""
        self.best = self.best_accuracy = self.best_sums = self.reading = None
        self.segment = self.segment_sums = self.previous = self.pair = self.pair_sums = None
        self.gain = self.last_k = self.last_significant = None
        self.weight_trace = []  # (Neyman-Pearson's secant measured the old target)

    def _publish_candidate(self, candidate):
        """Publish the model measured in this outer iteration's second half, or the best
        one (the highest accuracy measured) among those measured to meet the bound, points of
        the segments measured included. Where the
        bound is dear the multipliers settle slowly, and the model measured swings about
        the bound from one outer iteration to the next (the group tied to the score, 3e5
        rows: gaps from -0.28 to +0.23 at multipliers within 15 % of each other); the model
        kept is one whose rates were measured on rows it had not learnt from."""
        readings = self._segment_readings(self.segment, self.segment_sums)
        extra = self._segment_readings(self.pair, self.pair_sums)
        floor = -np.inf
        if self.best is not None and readings:
            # The segment's first point is the best, measured again on new rows: its verdict
            # is that of every reading of it, pooled, and not its first alone (a model read
            # once, by chance within the bound on the stream's first 5e4 rows, stayed
            # published to the end of the guide's stream, 1e6 rows: fresh gap 0.058 at 0.05).
            self.best_sums = _pooled(self.best_sums, readings.pop(0)[2])
            if self._meets(self.best_sums):
                self.best_accuracy = _cell_accuracy(*self.best_sums[:2])
            else:
                self.best_accuracy = None  # kept published until a model that meets is read
                floor = self._replacement_floor()
        readings += extra
        if self.reading is not None:
            readings.append((candidate, *self.reading))
        best = max(self._accuracy(self.best_accuracy), floor)
        for point, meets, sums in readings:
            # A reading new to the choice meets the bound only inside it by MEET_Z standard
            # errors: the most accurate of many readings at the bound is the one whose rows
            # by chance read its gap the smallest (the best's own readings are pooled).
            meets = meets and self._meets_by(sums, MEET_Z)
            accuracy = _cell_accuracy(*sums[:2])
            if meets and self._accuracy(accuracy) > best:
                self.best, self.best_accuracy, self.best_sums = point, accuracy, sums
                best = self._accuracy(accuracy)
        self.published = candidate if self.best is None else self.best.copy()
        self._publish_constant_if_dominated(candidate)
        # The next outer iteration measures the segment from the best model to this one,
        # and the pair from the last candidate to this one (the segment, with no best yet):
        # where the multipliers swing across their value the candidates fall on either
        # side of the bound, and a point between them meets it (the group tied to the
        # score, sd 2, 2e5 rows: fresh accuracy 0.502, the constant model, -> 0.558).
        keep = self.best is not None and self.best is not candidate
        self.segment = (self.best.copy(), candidate) if keep else None
        pair = None if self.previous is None else (self.previous, candidate)
        if self.best is None:
            self.segment, pair = pair, None
        self.pair, self.previous = pair, candidate
        self.segment_sums = self.pair_sums = None

    def _replacement_floor(self):
        """The accuracy a model must be measured at to replace a best model that its pooled
        readings put over the bound: within :data:`DROPPED_WITHIN` of the best's, where they
        put it over by at most :data:`DROPPED_EXCESS` (the best stays published until
        such a model is read); any accuracy where they put it further over. A best just
        over the bound is a better model than one far inside it: on the group tied to the
        score (sd 3, 2e5 rows in batches of 1e4) main 8317bd5 replaced a best at fresh gap
        0.055 and accuracy 0.577 by the only model then read within the bound, a near
        constant one (0.020, 0.523; fit's accuracy 0.582)."""
        weight, hard, rows = self.best_sums
        own = self.pose.constraints(weight / rows)
        if own is None:
            return -np.inf
        A, base = own
        excess = float(np.max(A @ hard / rows + base + self.level_offset))
        if excess > DROPPED_EXCESS:
            return -np.inf
        return self._accuracy(_cell_accuracy(weight, hard)) - DROPPED_WITHIN

    def _publish_constant_if_dominated(self, candidate):
        """Publish the constant model instead of the model just chosen when the constant
        one dominates it on the rows it was measured on: it meets the bound (a constant
        prediction has equal rates in every group) and the model chosen either misses the
        bound at an accuracy not above the constant's, or meets it at an accuracy below the
        constant's, both beyond :data:`POOLED_Z` standard errors. Where the bound is dear
        the multipliers swing about their value on a short stream, and a model of a
        multiplier past it ranks the rows backwards: on the group tied to the score (sd 2,
        2e5 rows in batches of 1e4) main published such a model at the stream's end, fresh
        accuracy 0.434 against the constant model's 0.502, with a gap of 0.065 over a bound
        of 0.05 and no warning. ``constant_reading`` keeps what decided it (or None) for
        the call's warning: both accuracies and the model's sums."""
        self.constant_reading = None
        if self.best is None:
            reading = self.reading
        else:
            reading = (self._meets(self.best_sums), self.best_sums)
        if reading is None:
            return
        meets, (weight, hard, rows) = reading
        constant = self._constant_model(candidate)
        constant_hard = weight * float(self._constant_positive(constant))
        if not _meets_exactly(self, weight, constant_hard, rows):
            return  # (max_fpr with a majority of positives: the constant misses too)
        accuracy = self._accuracy(_cell_accuracy(weight, hard))
        constant_accuracy = self._accuracy(_cell_accuracy(weight, constant_hard))
        margin = POOLED_Z * 0.5 / np.sqrt(max(rows, 1.0))
        below = accuracy < constant_accuracy - margin
        tied = accuracy <= constant_accuracy + margin
        if (meets and below) or (not meets and tied):
            self.published = constant
            self.constant_reading = (accuracy, constant_accuracy, weight, hard, rows)

    def _constant_model(self, like):
        """The constant model of the stream's classes so far (the log-odds of their
        weights as intercept), in the solver's coordinates of ``like``."""
        z = np.zeros_like(like)
        share = self.class_totals / self.class_totals.sum()
        if self.fit_intercept and 0 < share[1] < 1:
            z[len(self.scale)] = np.log(share[1] / share[0])
        return z

    def _constant_positive(self, constant):
        """Whether the constant model ``constant`` predicts the positive class."""
        return bool(self.fit_intercept and constant[len(self.scale)] > self.threshold)

    def _meets(self, sums):
        """Whether the pooled readings ``(cell weights, hard sums, rows)`` of the best model
        meet the constraints as posed now, within :data:`POOLED_Z` standard errors of their
        sampling spread: a best at the bound is kept; one over it by more than its readings'
        noise is not."""
        return self._meets_by(sums, -POOLED_Z)

    def _meets_by(self, sums, z):
        """Whether the readings ``sums`` put every constraint value ``z`` standard errors
        inside the bound (``z < 0``: within ``-z`` of them over it)."""
        read = hard_reading(self, *sums)
        if read is None:
            return True
        values, spread = read
        return bool(np.all(values + z * spread <= 0))

    def _accuracy(self, cell_accuracy):
        """The accuracy of a model measured (per cell) on the stream's mix of cells so far:
        models measured on different rows compare on the same mix, and one measured on rows
        that lacked a cell the stream has is not rated (on rows of negatives only, the
        constant model's accuracy read 1 and no later model could beat it)."""
        if cell_accuracy is None:
            return -np.inf
        share = self.cell_weight / self.cell_weight.sum()
        if np.any((share > 0) & np.isnan(cell_accuracy)):
            return -np.inf
        return float(np.nansum(share * cell_accuracy))

    def _segment_readings(self, segment, segment_sums):
        """``(model, meets, sums)`` of the points of the segment measured over the last
        outer iteration (its rows came after both ends were fixed). The scores are linear in
        the model, so a point between a model that meets the bound and a more accurate one
        that does not is measured by the same sums: where the bound is dear the models
        measured scatter widely about it (fresh gaps from 0.006 to 0.142 at one multiplier,
        1e6 rows), and the point of the segment at the bound is the better model."""
        if segment is None or segment_sums is None:
            return []
        weight, hard, rows = segment_sums
        own = self.pose.constraints(weight / rows)
        if own is None:
            return []
        A, base = own
        out = []
        for t, h in zip(SEGMENT, hard, strict=True):
            values = A @ h / rows + base + self.level_offset
            point = (1.0 - t) * segment[0] + t * segment[1]
            out.append((point, bool(np.all(values <= 0)), (weight, h, rows)))
        return out

    def _publishes_measured(self):
        """Whether the model published is one measured (a bound on fairness rates of
        predictions), not the mean of the last half of all the iterates.
        Where the bound is dear its model has small weights, and the noise the iterates keep
        in the directions the label does not use moves its hard rates: on the group tied to
        the score (sd 3, 3e5 rows), the mean of the last half of all the iterates, with half
        the noise of the model measured, had a fresh gap of 0.139 against the measured 0.07."""
        return self.steer and self.kind == "fair" and self.m > 0

    # -- the running estimates -----------------------------------------------------------------
    def _measure(self, X, codes, w, cells, second):
        """The published model's rates on the piece's rows, before it learns from them: the
        threshold's quantile (Neyman-Pearson, every piece) and, in the second half of an
        outer iteration, the sums the outer step reads."""
        if self.kind == "softmax":
            return
        if self.kind != "fair" and self.steer:
            self._track_threshold(X, codes, w)
        if self.segment is not None:
            self.segment_sums = self._measure_segment(X, w, cells, self.segment, self.segment_sums)
        if self.pair is not None:
            self.pair_sums = self._measure_segment(X, w, cells, self.pair, self.pair_sums)
        if not second:
            return
        scores = self.scores(X, self.current)
        n = self.pose.n_cells
        # Per cell: the rows' weight, and the weights of their soft and hard predictions.
        sums = np.zeros(2 + 3 * n)
        sums[0] = len(codes)
        sums[2 : 2 + n] = np.bincount(cells, weights=w, minlength=n)
        if self.m:
            sums[2 + n : 2 + 2 * n] = np.bincount(cells, weights=w * expit(scores), minlength=n)
            sums[2 + 2 * n :] = np.bincount(cells, weights=w * (scores > 0), minlength=n)
        if self.kind == "np_logistic":
            # The share of the negatives that the boundary score = 0 flags.
            neg = codes == 0
            flagged = float(np.dot(w[neg], scores[neg] > 0)) / max(float(w[neg].sum()), 1e-300)
            sums[1] = flagged * len(codes)
        self.measured = sums if self.measured is None else self.measured + sums

    def _measure_segment(self, X, w, cells, segment, sums):
        """Per cell, the weight of the piece's rows and of the positive predictions of each
        point of :data:`SEGMENT` on the segment between the two models measured."""
        ends = [self.scores(X, z) for z in segment]
        n = self.pose.n_cells
        weight = np.bincount(cells, weights=w, minlength=n)
        hard = np.array([
            np.bincount(cells, weights=w * ((1.0 - t) * ends[0] + t * ends[1] > 0), minlength=n)
            for t in SEGMENT
        ])  # fmt: skip
        if sums is None:
            return weight, hard, float(len(cells))
        return sums[0] + weight, sums[1] + hard, sums[2] + len(cells)

    def _track_threshold(self, X, codes, w):
        """Neyman-Pearson's threshold: a running mean of each piece's quantile of the
        published model's negative scores, over as many negatives as the published average
        spans (at least a few thousand), carried along the published model's moves.

        The published model is the mean of the last half of the iterates, and it moves
        between pieces; a mean of quantiles of the models of earlier pieces trails it. So
        the threshold kept is first moved by the change of this piece's quantile from the
        model it was tracked with to the model published now (one set of rows read by both,
        so the move carries no sampling noise). On main 23a9350 a stream whose first 3 of 20
        batches held negatives only (20 columns, max_fpr 0.1) took its published intercept
        from -10 back to -0.6 over the stream, the mean of quantiles lagged behind it by 0.3,
        and the fresh FPR ended at 0.130.
        """
        neg = codes == 0
        n_neg = float(w[neg].sum())
        if n_neg <= 0:
            return
        target = (1.0 - FPR_MARGIN) * self.pose.max_fpr
        w_neg = w[neg]
        quantile = rate_threshold(self.scores(X, self.published)[neg], w_neg, target)
        tracked = self.threshold_model
        first = self.outer == 0 and self.rows_outer < self.outer_rows // 2
        if first or not np.isfinite(self.threshold) or tracked is None:
            self.threshold = quantile  # (the null model's: above every score)
            self.threshold_model = self.published.copy()
            return
        # The move is read on pieces whose negatives put THRESHOLD_ROWS over the quantile
        # (a piece cut at an outer iteration's quarter can hold 1 row, whose "quantile"
        # moved the threshold of batches of 7 rows by 0.1); on a smaller piece the
        # threshold stays the tracked model's until one comes.
        if len(w_neg) * target >= THRESHOLD_ROWS:
            if not np.array_equal(tracked, self.published):
                self.threshold += quantile - rate_threshold(
                    self.scores(X, tracked)[neg], w_neg, target
                )
            self.threshold_model = self.published.copy()
        share = min(1.0, n_neg / max(2000.0, 0.25 * self.negatives_seen))
        self.threshold = (1.0 - share) * self.threshold + share * quantile


def hard_reading(state, weight, hard, rows):
    """``(values, standard errors)`` of the constraints as posed now, read from the cells'
    weights and hard sums on ``rows`` rows (the cells' binomial spread); None while a rate
    has no rows."""
    own = state.pose.constraints(weight / rows)
    if own is None:
        return None
    A, base = own
    values = A @ hard / rows + base + state.level_offset
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(weight > 0, hard / weight, 0.0)
        spread = (weight / rows) ** 2 * rate * (1.0 - rate) / np.maximum(weight, 1.0)
    return values, np.sqrt(A**2 @ spread)


def _cell_accuracy(weight, hard):
    """The accuracy of predictions in each cell ``2 * group + label`` (NaN in a cell without
    rows), from the cells' weights and those of their positive predictions."""
    label = np.arange(len(weight)) % 2
    with np.errstate(invalid="ignore", divide="ignore"):
        positive = np.where(weight > 0, hard / weight, np.nan)
    return np.where(label == 1, positive, 1.0 - positive)


def _meets_exactly(state, weight, hard, rows):
    """Whether predictions of hard sums ``hard`` per cell meet the constraints as posed."""
    own = state.pose.constraints(weight / rows)
    if own is None:
        return False
    A, base = own
    return bool(np.all(A @ hard / rows + base + state.level_offset <= 1e-12))


def _pooled(old, new):
    """Two readings ``(cell weights, hard sums, rows)`` of one model as one."""
    if old is None:
        return new
    return tuple(a + b for a, b in zip(old, new, strict=True))
