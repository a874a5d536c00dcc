"""``partial_fit``'s learning state: what a stream carries from one call to the next.

:class:`StreamState` (pickled with the estimator) and its step: a batch is counted, held
until :data:`LEARN_ROWS` rows have come, cut into pieces of at most :data:`PIECE_ROWS` rows,
and learnt by PStorm on the augmented Lagrangian of each piece (see :mod:`._stream`). The
outer iteration's end is :class:`~._stream_multipliers.MultiplierStep`'s; what is measured on
rows before they are learnt, and the model published, are
:class:`~._stream_measurements.HeldOutMeasurements`'.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import safe_sparse_dot

from ..problems import LinearProblem
from ..problems.losses import Logistic, SigmoidLoss, TruncatedLogistic
from ..problems.multinomial import MultinomialProblem
from ..solver.counting import Counter
from ..solver.prox import Ridge
from ..solver.pstorm import AugmentedLagrangianEstimator, pstorm
from ..solver.settings import PRESETS
from ._inputs import _label
from ._prequential import count_prequential
from ._scaling import _column_moments, _feature_scaling
from ._stream_measurements import HeldOutMeasurements
from ._stream_multipliers import FIRST_OUTER_ROWS, MultiplierStep
from ._stream_poses import _Pose
from ._stream_summary import (
    SUMMARY_MAX_PARAMS,
    SUMMARY_SHARE,
    add,
    newton_model,
    piece_summary,
)
from ._stream_units import clipped, warn_mix

__all__ = ["StreamState"]

#: Rows of one PStorm call; the measurements of the running estimates are taken between two.
PIECE_ROWS = 5000
#: The fewest rows learnt at once: smaller batches wait in the state until this many have
#: come (their predictions are counted as they come), so that a stream of 1-row batches
#: learns from the same pieces as one of 1000-row batches, and its coordinates are taken
#: from this many rows, not from a first batch of a handful.
LEARN_ROWS = 1000
#: Iterations between two updates of the running averages of the iterates; the fewest
#: iterations the published average spans, and its share of all the iterations so far.
AVERAGE_EVERY = 25
AVERAGE_MIN = 300
AVERAGE_SHARE = 0.5
#: A multiplier move under this share of the multiplier (or of 1) keeps the mean of the
#: iterates going across the outer iteration's end.
SETTLED_MOVE = 0.02


def _shares(cells, n_cells):
    return np.bincount(cells, minlength=n_cells) / max(len(cells), 1)


# -- the state ------------------------------------------------------------------------------------
@dataclass
class StreamState(HeldOutMeasurements, MultiplierStep):
    """Everything a stream carries from one ``partial_fit`` call to the next."""

    classes: np.ndarray
    kind: str  # "fair", "np_logistic", "np_sigmoid" or "softmax"
    pose: _Pose
    scale: np.ndarray
    center: np.ndarray | None
    n_live: int
    fit_intercept: bool
    loss: str
    C: float | None
    steer: bool  # the bound is on hard predictions (the offsets / threshold are steered)
    bound_tol: float
    rng: np.random.Generator
    beta: float
    beta_cap: float
    sigma: float
    tol: float
    batch_size: int
    z: np.ndarray = None
    d: np.ndarray = None
    published: np.ndarray = None
    y: np.ndarray = None
    smoothness: tuple | None = None
    level_offset: np.ndarray = None  # the free levels' position (bands of 4+ groups)
    outer: int = 0
    rows_outer: int = 0
    outer_rows: int = FIRST_OUTER_ROWS
    n_iter: int = 0
    average: np.ndarray = None  # the mean of this outer iteration's iterates, from 1/4 on
    averaged: int = 0  # the iterations in it
    current: np.ndarray = None  # the model of the current multipliers, measured
    iters: int = 0  # iterations folded into the published average
    measured: np.ndarray = None  # sums over the second half of the outer iteration
    n_seen: int = 0
    cell_weight: np.ndarray = None  # running weight of each cell, every row seen
    cell_positive: np.ndarray = None  # and of its positive predictions (as the rows came)
    posed_weight: np.ndarray = None  # each cell's weight since the constraints were posable
    posed_rows: int = 0  # and the rows since then
    threshold: float = 0.0
    threshold_model: np.ndarray = None  # the published model the threshold last tracked
    log_negative_weight: float = 0.0
    weight_trace: list = field(default_factory=list)
    units: tuple | None = None  # the first rows' column means and spreads (for the clip)
    warned_columns: set = field(default_factory=set)
    warned_mix: bool = False  # a batch unlike the rows before it was named (warn_mix)
    cell_rows: np.ndarray = None  # rows of each cell so far (unweighted, for warn_mix)
    frozen: bool = False  # the model measured in this outer iteration's second half is set
    best: np.ndarray = None  # the best model measured to meet the bound, and its accuracy
    best_accuracy: np.ndarray = None  # per cell
    best_sums: tuple | None = None  # its readings pooled: (cell weights, hard sums, rows)
    segment: tuple | None = None  # (best, last candidate): the points between are measured
    segment_sums: tuple | None = None  # (cell weights, hard sums per point, rows)
    previous: np.ndarray = None  # the last candidate measured (a segment's end, no best yet)
    pair: tuple | None = None  # (previous, last candidate), measured as the segment is
    pair_sums: tuple | None = None
    reading: tuple | None = None  # (meets, sums) of the model measured at the outer end
    constant_reading: tuple | None = None  # a model the constant one replaced, measured
    smooth_outer: int = -1  # the outer iteration whose first piece checked the bound
    smooth_share: np.ndarray = None  # the cells' shares when the smoothness bound was read
    smooth_rows: np.ndarray = None  # and the cells' shares of the rows it was read on
    settled: bool = False  # the multipliers barely moved: the mean of the iterates goes on
    gain: np.ndarray = None  # the hard-rate multiplier step's gain per constraint
    last_k: np.ndarray = None  # and the hard values it last read
    last_significant: np.ndarray = None  # and which of them were beyond their noise
    negatives_seen: float = 0.0
    ready: bool = False  # every rate the constraints divide by has rows
    warm: tuple | None = None  # the model fit left, which the stream starts from
    class_totals: np.ndarray = None  # the sample weight of each class so far
    text_columns: list = field(default_factory=list)
    params: dict = field(default_factory=dict)  # the parameters of the first call (set_params)
    recent: np.ndarray = None  # the recent calls' cell sums (_stream_verdict)
    worse: tuple = (0.0, np.nan, False)  # their log-loss over the constant model's
    held: list = field(default_factory=list)  # batches waiting for LEARN_ROWS rows
    held_rows: int = 0
    provisional: bool = False  # the coordinates are of a first batch under LEARN_ROWS rows
    step_credit: float = 0.0  # the fraction of a PStorm iteration owed to the rows learnt
    # With calibration="clopper-pearson": rows and positive predictions per cell, unweighted,
    # each batch predicted before it was learnt (_prequential), shape (2, n_cells).
    prequential: np.ndarray = None
    # The second-order summary of the rows learnt (_stream_summary): one [outer iteration,
    # rows learnt before it, sums] per outer iteration, and the rows learnt.
    summary_blocks: list = None
    summary_rows: int = 0

    def __deepcopy__(self, memo):
        # The held batches are never written to (a release makes new arrays): the copy
        # shares them, so that a stream of 1-row calls does not copy its hold at each call.
        new = copy.copy(self)
        for name, value in vars(self).items():
            if name != "held":
                setattr(new, name, copy.deepcopy(value, memo))
        new.held = list(self.held)
        return new

    # -- the problem of a piece ----------------------------------------------------------------
    @property
    def m(self) -> int:
        return 0 if self.kind in ("softmax", "np_logistic") else self.pose.m

    def offsets(self, base):
        return base + self.level_offset

    def problem(self, X, codes, w, cells, smoothness="state"):
        """The augmented Lagrangian's problem on the rows of a piece."""
        smooth = self.smoothness if smoothness == "state" else smoothness
        if self.kind == "softmax":
            return self._softmax_problem(X, codes, w)
        loss = {"logistic": Logistic, "truncated_logistic": TruncatedLogistic}.get(self.loss)
        h = self._ridge(X.shape[1])
        margins = np.where(codes == 1, 1.0, -1.0)
        m = self.m
        A, base = self._constraints()
        W = np.zeros((len(codes), m)) if A is None else (A[:, cells] * w).T
        offset = self.offsets(base) if A is not None else np.zeros(m)
        common = dict(
            fit_intercept=self.fit_intercept, h=h, smoothness=smooth, feature_scale=self.scale,
            feature_center=self.center, inequality=True,
        )  # fmt: skip
        if self.kind == "np_sigmoid":
            pos, neg = np.flatnonzero(codes == 1), np.flatnonzero(codes == 0)
            if not len(pos) or not len(neg):
                return None  # no objective row, or no constraint row: nothing to learn
            return LinearProblem(
                X, np.ones(len(pos)), SigmoidLoss(), X, W[neg], offset,
                objective_weights=w[pos], rows_objective=pos, rows_constraint=neg, **common,
            )  # fmt: skip
        u = w
        if self.kind == "np_logistic":
            u = w * np.where(codes == 1, 1.0, np.exp(self.log_negative_weight))
        return LinearProblem(X, margins, loss(), X, W, offset, objective_weights=u, **common)

    def _ridge(self, d):
        if self.C is None or not np.isfinite(self.C):
            return None
        # fit's penalty ||w||^2 / (2 C sum(sample_weight)) over every row seen so far, in
        # standard units (see _scaling._standardised).
        total = float(self.cell_weight.sum())
        strength = 1.0 / (self.C * total * self.n_live)
        mask = np.r_[np.ones(d, bool), np.zeros(int(self.fit_intercept), bool)]
        return Ridge(min(strength, np.finfo(np.float64).max), mask=mask)

    def _softmax_problem(self, X, codes, w):
        # C scaled so that the problem's penalty 1 / (C' w.sum() units) reads every row seen.
        C = None
        if self.C is not None:
            C = self.C * float(self.cell_weight.sum()) / float(w.sum())
        return MultinomialProblem(
            X, codes, len(self.classes), w, np.zeros(len(codes), dtype=np.intp), [], C=C,
            fit_intercept=self.fit_intercept, scale=self.scale, center=self.center,
            penalty_units=self.n_live,
        )  # fmt: skip

    def _constraints(self):
        """``(A, base offset)`` at the running cell weights, or ``(None, None)`` while a
        rate's denominator has no rows yet (the constraints are off until then)."""
        if not self.m:
            return np.zeros((0, self.pose.n_cells)), np.zeros(0)
        weight, rows = self.cell_weight, self.n_seen
        if self.posed_weight is not None:
            weight, rows = self.posed_weight, self.posed_rows
        posed = self.pose.constraints(weight / rows)
        return posed if posed is not None else (None, None)

    def _count_posed(self, weight, n_rows):
        """Count a batch's cell weights into the constraints' denominators (a fairness
        stream): those of the rows from the ones not yet learnt when every rate first had
        rows. The rows before are not the mix to come: on a stream whose first 3e4 rows held
        one group, the other's rates were scaled by the rows seen over its own (4 at 4e4
        rows), and the constraint pushed every rate down, the model to the constant."""
        if self.posed_weight is not None:
            self.posed_weight += weight
            self.posed_rows += n_rows
        elif self.kind == "fair" and self.m and self.pose.constraints(self.cell_weight):
            n = self.pose.n_cells
            self.posed_weight = sum(
                np.bincount(c, weights=w, minlength=n) for _, _, w, c in self.held
            )
            self.posed_rows = self.held_rows

    # -- the model --------------------------------------------------------------------------------
    def coef(self, z):
        """``(coef, intercept)`` of the solver's ``z`` in the units of ``X``."""
        p = self.n_params
        if self.kind == "softmax":
            K, d = len(self.classes), len(self.scale)
            P = z[:p].reshape(K, -1)
            W = P[:, :d] / self.scale
            b = P[:, d] if self.fit_intercept else np.zeros(K)
            if self.center is not None:
                b = b - W @ self.center
            return W, b
        v = z[: len(self.scale)] / self.scale
        b = float(z[len(self.scale)]) if self.fit_intercept else 0.0
        if self.center is not None:
            b -= float(self.center @ v)
        return v, b

    @property
    def n_params(self) -> int:
        cols = len(self.scale) + int(self.fit_intercept)
        return cols * (len(self.classes) if self.kind == "softmax" else 1)

    def scores(self, X, z):
        coef, intercept = self.coef(z)
        if self.kind == "softmax":
            return np.asarray(safe_sparse_dot(X, coef.T, dense_output=True)) + intercept
        return np.asarray(safe_sparse_dot(X, coef)).ravel() + intercept

    # -- one batch --------------------------------------------------------------------------------
    def learn(self, X, codes, w, groups):
        """Count the batch's predictions (by the model as it came), then learn from it, or
        hold it until :data:`LEARN_ROWS` rows have come."""
        cells = self.pose.cells(codes, groups)
        n_cells = self.pose.n_cells
        counts = np.bincount(cells, minlength=n_cells)
        if self.cell_rows is None:
            self.cell_rows = np.zeros(n_cells)
        if not self.warned_mix:
            self.warned_mix = warn_mix(
                counts, self.cell_rows, self.cell_rows.sum(), self._cell_name
            )
        self.cell_rows += counts
        weight = np.bincount(cells, weights=w, minlength=n_cells)
        self.cell_weight += weight
        self.n_seen += len(codes)
        if self.kind.startswith("np"):
            self.negatives_seen += float(weight[0])
        if self.z is None:
            self.provisional = len(codes) < self._learn_rows() and self.warm is None
            self._start(X, codes, w, cells)
        if self.kind != "softmax":
            positive = self.predicted(X)
            self.cell_positive += np.bincount(cells, weights=w * positive, minlength=n_cells)
            if self.prequential is not None:
                self.prequential += count_prequential(cells, positive, n_cells)
        self.held.append((X, codes, w, cells))
        self.held_rows += len(codes)
        self._count_posed(weight, len(codes))
        if self.held_rows < self._learn_rows():
            return
        X, codes, w, cells = self._release()
        if self.provisional:
            # Nothing learnt yet: the coordinates are taken again from these rows.
            self.provisional, self.smoothness, self.ready = False, None, False
            self._start(X, codes, w, cells)
        restart = self.posed_weight is not None and self.n_iter and not self.ready
        if restart and self._publishes_measured():
            self._restart()
        X = clipped(X, self.units, self.warned_columns)
        start = 0
        while start < len(codes):
            R = self.outer_rows
            end = next(b for b in (R // 4, R // 2, R) if b > self.rows_outer)
            take = min(len(codes) - start, end - self.rows_outer, PIECE_ROWS)
            rows = slice(start, start + take)
            self._piece(X[rows], codes[rows], w[rows], cells[rows])
            start += take

    def _cell_name(self, cell):
        labels = getattr(self.pose, "labels", None)
        if labels is None:
            return f"class {_label(self.classes[cell])}"
        return f"group {_label(labels[cell // 2])} with class {_label(self.classes[cell % 2])}"

    def _learn_rows(self):
        return max(LEARN_ROWS, self.batch_size)

    def _release(self):
        """The held batches as one, emptying the hold."""
        held, self.held, self.held_rows = self.held, [], 0
        if len(held) == 1:
            return held[0]
        X = [part[0] for part in held]
        X = sp.vstack(X, format="csr") if sp.issparse(X[0]) else np.concatenate(X)
        return (X, *(np.concatenate([part[i] for part in held]) for i in (1, 2, 3)))

    def predicted(self, X):
        """The published model's positive predictions (binary) or classes (softmax)."""
        scores = self.scores(X, self.published)
        if self.kind == "softmax":
            return np.argmax(scores, axis=1)
        return (scores > self.threshold).astype(float)

    def _start(self, X, codes, w, cells):
        """The coordinates (the first batch's column moments, see the module docstring), the
        start (the null model, or the model ``fit`` left) and the smoothness."""
        moments = _column_moments(X, w / w.sum())
        self.units = tuple(np.asarray(v, dtype=float) for v in moments)
        scale, center, live = _feature_scaling(X, None, self.fit_intercept, moments)
        self.n_live = max(1, int(live.sum()))
        self.scale = scale * np.sqrt(self.n_live)
        self.center = center if center is not None and np.any(center) else None
        self.y = np.zeros(self.m)
        self.level_offset = np.zeros(self.m)
        z = np.zeros(self.n_params + self.m)
        if self.kind.startswith("np") and self.steer:
            # No negative seen yet: the threshold that flags none of them.
            self.threshold = np.inf
        if self.warm is not None:
            coef, intercept, multipliers, threshold = self.warm
            z[: self.n_params] = self._point(coef, intercept)
            self.threshold = threshold if self.steer else 0.0
            if multipliers is not None:
                self.y = multipliers.copy()
            self.warm = None
        elif self.fit_intercept and self.kind != "np_sigmoid":
            share = np.bincount(codes, weights=w, minlength=len(self.classes)) / w.sum()
            logs = np.log(np.clip(share, 1e-12, None))
            if self.kind == "softmax":
                z[: self.n_params] = self._point(np.zeros((len(logs), 0)), logs - logs.mean())
            elif 0 < share[1] < 1:
                z[len(self.scale)] = logs[1] - logs[0]
        self.z = self.published = self.current = z
        self._refresh_smoothness(X, codes, w, cells)

    def _point(self, coef, intercept):
        """The solver's parameters of the model ``(coef, intercept)`` (:meth:`coef`'s
        inverse); ``coef`` with no columns means zeros."""
        K = len(self.classes) if self.kind == "softmax" else 1
        d, cols = len(self.scale), self.n_params // K
        P = np.zeros((K, cols))
        coef = np.asarray(coef, dtype=float).reshape(K, -1)
        if coef.shape[1]:
            P[:, :d] = coef * self.scale
        if self.fit_intercept:
            P[:, d] = np.asarray(intercept, dtype=float).reshape(K)
            if self.center is not None and coef.shape[1]:
                P[:, d] += coef @ self.center
        return P.ravel()

    def _refresh_smoothness(self, X, codes, w, cells):
        """The smoothness bound from the rows of this batch (one sweep): at the start, when
        the constraints are posed for the first time, and with constraints when a cell's
        share of the rows moved by a quarter since (checked once an outer iteration): their
        coefficients follow the running weights of the cells, and a group first seen late
        has a small weight that the bound read at its first rows kept (PF6
        on main 6bdc02c: a group absent from the first 5 batches, the step of a constraint
        coefficient 5 times too large for the rest of the stream, fresh gap 0.170)."""
        ready = self.m == 0 or self._constraints()[0] is not None
        if self.smoothness is not None and (self.ready or not ready) and not self._drifted():
            return
        problem = self.problem(X, codes, w, cells, smoothness=None)
        if problem is not None:
            # To 7 digits: the dense and CSR kernels' bounds differ in their last bits
            # (8e-10), and the step, which the model follows, should not.
            self.smoothness = tuple(float(f"{v:.6e}") for v in problem.smoothness)
            self.ready = ready
            self.smooth_share = self.cell_weight / self.cell_weight.sum()
            self.smooth_rows = _shares(cells, self.pose.n_cells)

    def _guard_smoothness(self, X, codes, w, cells):
        """The bound read again on a piece that holds far more of a cell than the rows it was
        read on, and the larger kept. The bound is read on the rows of a piece, whose cells
        weigh ``1 / share``: on a stream sorted by group, read on rows of the first group only
        while the second's first rows held 1 % of the rows seen, it was 300 times too small
        for the next piece, of the second group only, and the model left for scores of 1e3
        (every row positive to the stream's end, accuracy 0.10 against fit's 0.90). A
        shuffled stream's pieces hold each cell near its share and never read it again."""
        if self.m == 0 or self.smooth_rows is None or self.smoothness is None:
            return
        counts = np.bincount(cells, minlength=self.pose.n_cells)
        # Against the running shares too: the rows it was read on may be a small piece.
        share = np.maximum(self.smooth_rows, self.cell_weight / self.cell_weight.sum())
        expected = share * len(cells)
        if not np.any(counts > 1.5 * expected + 3.0 * np.sqrt(expected) + 10.0):
            return
        problem = self.problem(X, codes, w, cells, smoothness=None)
        if problem is not None:
            here = (float(f"{v:.6e}") for v in problem.smoothness)
            self.smoothness = tuple(max(a, b) for a, b in zip(self.smoothness, here, strict=True))
            self.smooth_rows = np.maximum(self.smooth_rows, counts / len(cells))

    def _drifted(self):
        """Whether a cell's share of the rows has moved by more than a quarter since the
        smoothness bound was read (a constrained stream only)."""
        if self.m == 0 or self.smooth_share is None:
            return False
        share = self.cell_weight / self.cell_weight.sum()
        return bool(np.any(np.abs(share - self.smooth_share) > 0.25 * self.smooth_share))

    # -- a piece ----------------------------------------------------------------------------------
    def _piece(self, X, codes, w, cells):
        if self.smoothness is None or not self.ready or self.smooth_outer != self.outer:
            self.smooth_outer = self.outer
            self._refresh_smoothness(X, codes, w, cells)
        self._guard_smoothness(X, codes, w, cells)
        problem = self.problem(X, codes, w, cells)
        second = self.rows_outer >= self.outer_rows // 2
        self._measure(X, codes, w, cells, second)
        if problem is not None and self.smoothness is not None:
            self._summarise(X, codes, w, cells)
            if self.d is None:
                est = AugmentedLagrangianEstimator(problem, "ustat")
                batches = est.draw(self.rng, PRESETS["default"].m0, Counter())
                self.d = est.gradient(self.z, self.y, self.beta, batches, Counter())
            self._steps(problem, len(codes))
        self.rows_outer += len(codes)
        # The second half: the model measured is the mean of this outer iteration's iterates
        # (from its first quarter on); a model to publish is measured as it was at the half,
        # on rows it has not learnt from.
        second = self.rows_outer >= self.outer_rows // 2 and self.average is not None
        if second and not (self._publishes_measured() and self.frozen):
            self.current = self._summary_model(self.average)
            self.frozen = True
        if self.rows_outer >= self.outer_rows:
            y_before = self.y
            measured = self._publishes_measured() and self.frozen
            candidate = self.current.copy() if measured else None
            self.frozen = False
            self.reading = None
            self._outer(problem)
            if candidate is not None:
                self._publish_candidate(candidate)
            # A multiplier that barely moved keeps the mean of its model's iterates going:
            # the longer the mean, the less noise in the model measured and published.
            # (At most the last AVERAGE_SHARE of the iterations, as the published mean: the
            # multipliers stay at 0 while the null model meets the bound, and a mean from the
            # start kept a stream that began with 3 batches of negatives at the constant
            # model for 1.5e5 rows.)
            moved = np.abs(self.y - y_before) > SETTLED_MOVE * np.maximum(np.abs(self.y), 1.0)
            self.settled = (
                self._publishes_measured()
                and not np.any(moved)
                and self.averaged <= AVERAGE_SHARE * self.iters
            )
            if not self.settled:
                self.average, self.averaged = None, 0

    def _restart(self):
        """The null model, when the constraints are first posed on a stream that learnt
        without them (its first batches held one group only): the unconstrained model's
        weights, 100 times those of the model at a dear bound, shrank slower than the
        multiplier grew, which overshot (one group for 3e4 rows, then 2.7e5 shuffled:
        fresh accuracy 0.523 against fit's 0.552). The outer iterations start again too, as
        a stream's first: of FIRST_OUTER_ROWS rows, then a share of the rows since (1e5 rows
        in batches of 5000, the first 3 of one group: its outer iterations of a quarter of
        every row seen gave the multipliers too few steps to settle, and the stream ended
        over the bound, at fresh gap 0.202 against fit's 0.056)."""
        z = self._constant_model(self.z)
        self.z = z
        self.d = None
        self.current = z.copy()
        self.average, self.averaged = None, 0
        self.rows_outer, self.outer_rows = 0, FIRST_OUTER_ROWS
        self.measured, self.frozen, self.settled = None, False, False
        self.gain = self.last_k = self.last_significant = None
        self.summary_blocks, self.summary_rows = None, 0

    # -- the second-order summary ---------------------------------------------------------------
    def _summarises(self):
        return (
            self._publishes_measured() and self.loss == "logistic"
            and self.n_params <= SUMMARY_MAX_PARAMS
        )  # fmt: skip

    def _summarise(self, X, codes, w, cells):
        """Add the piece's expansion about the iterate to this outer iteration's block."""
        if not self._summarises():
            return
        coords = (self.scale, self.center, self.fit_intercept)
        margins = np.where(codes == 1, 1.0, -1.0)
        part = piece_summary(
            X, coords, margins, w, cells, self.pose.n_cells, self.z[: self.n_params]
        )
        if self.summary_blocks is None:
            self.summary_blocks = []
        blocks = self.summary_blocks
        if not blocks or blocks[-1][0] != self.outer:
            blocks.append([self.outer, self.summary_rows, None])
        blocks[-1][2] = add(blocks[-1][2], part)
        self.summary_rows += len(codes)
        keep = (1.0 - SUMMARY_SHARE) * self.summary_rows
        while len(blocks) > 2 and blocks[1][1] <= keep:
            blocks.pop(0)

    def _summary_model(self, average):
        """The minimiser of the summary's augmented Lagrangian at the multipliers (from the
        mean of the iterates ``average``), or ``average`` where there is none."""
        if not self._summarises() or not self.summary_blocks:
            return average.copy()
        A, base = self._constraints()
        if A is None:
            return average.copy()
        total = None
        for _, _, sums in self.summary_blocks:
            total = add(total, sums)
        p = self.n_params
        ridge = self._ridge(len(self.scale))
        mask = np.r_[np.ones(len(self.scale)), np.zeros(int(self.fit_intercept))]
        strength = 0.0 if ridge is None else ridge.strength
        theta = newton_model(
            total, A, self.offsets(base), self.y, self.beta, (strength, mask), average[:p]
        )
        if theta is None:
            return average.copy()
        out = average.copy()
        out[:p] = theta
        return out

    def _steps(self, problem, n_rows):
        """PStorm's iterations on the piece: one per ``batch_size`` rows, the fraction owed
        carried over."""
        knobs = PRESETS["default"]
        est = AugmentedLagrangianEstimator(problem, knobs.estimator)
        L0, LJ = self.smoothness
        eta = knobs.step_scale / (L0 + knobs.penalty_scale * LJ * self.beta)
        eta_slack = min(eta, 1.0 / self.beta)
        # One iteration per batch_size rows, the fraction carried to the next piece: the
        # same rows get the same number of steps however they are batched.
        self.step_credit += n_rows / self.batch_size
        n_iter = int(self.step_credit)
        if n_iter == 0:
            return
        self.step_credit -= n_iter
        per_iter = 2 * est.draw_evaluations(self.batch_size)
        folded = [0]

        def fold(z, d, t, batch_size):
            self._fold(z, t - folded[0])
            folded[0] = t
            return False, batch_size, z, d

        self.z, self.d, t, _, _ = pstorm(
            est, self.z, self.d, self.y, self.beta, eta=eta, eta_slack=eta_slack,
            delta=knobs.delta, batch_size=self.batch_size, rng=self.rng, counter=Counter(),
            check=fold, eval_every=AVERAGE_EVERY, budget=n_iter * per_iter,
        )  # fmt: skip
        self._fold(self.z, t - folded[0])
        self.n_iter += t

    def _fold(self, z, n_iter):
        """Fold ``n_iter`` iterations ending at ``z`` into the published average (of the last
        AVERAGE_SHARE of the iterations) and into the outer iteration's average of its
        iterates (past its first quarter, the inner solve's burn-in)."""
        if n_iter <= 0:
            return
        self.iters += n_iter
        if not self._publishes_measured():
            share = min(1.0, n_iter / max(AVERAGE_MIN, AVERAGE_SHARE * self.iters))
            self.published = (1.0 - share) * self.published + share * z
        if self.rows_outer < self.outer_rows // 4 and not self.settled:
            return
        self.averaged += n_iter
        if self.average is None:
            self.average = z.copy()
        else:
            self.average += (n_iter / self.averaged) * (z - self.average)
