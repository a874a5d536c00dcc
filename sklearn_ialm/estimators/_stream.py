"""``partial_fit``: Stoc-iALM + PStorm on a stream of batches, every row seen once.

The estimators' ``fit`` solves a finite sum and ends on all rows; a stream has no "all rows".
This module is the expectation setting of the paper (its Algorithm 1 with PStorm, the
constraints expectations over the rows to come), one batch at a time:

* **The state** (:class:`StreamState`, pickled with the estimator): the iterate ``z`` (the
  model in the solver's coordinates and one slack per inequality), the momentum estimate
  ``d`` of PStorm, the multipliers ``y``, the penalty ``beta``, the outer iteration and its
  rows, the free levels' position, the random generator, the running weights of the cells
  (group x label) and of their positive predictions, and two averages of the iterates.
* **The step** (:meth:`StreamState.learn`): batches under :data:`LEARN_ROWS` rows are held
  until that many rows have come (a 1-row batch then learns as the same rows in one batch
  would; on main 6bdc02c each call ran at least one PStorm step, so 1-row batches took 30 times
  the steps and ended at the constant model); the rows are cut into pieces of at most
  :data:`PIECE_ROWS` rows; on each piece PStorm (:func:`~sklearn_ialm.solver.pstorm.pstorm`)
  runs one iteration per ``batch_size`` rows (the fraction carried to the next piece) on the
  augmented Lagrangian at the current ``(y, beta)``, with minibatches drawn from the piece. An
  outer iteration of Algorithm 1 spans ``max(FIRST_OUTER_ROWS, OUTER_SHARE * rows seen)`` rows:
  at its end the multipliers take Algorithm 1's step ``y + min(beta, 1 / ||k||) k`` with ``k``
  the constraint values measured on the rows of its second half, before the model learnt from
  them (the running constraint estimates), the slacks are projected (as the solver's stop test
  does), the penalty grows by ``sigma`` up to its cap while ``||k|| > tol``, and the momentum
  estimate follows the change of the augmented Lagrangian by an unbiased correction on one
  minibatch (the solver's ``momentum="warm"``).
* **The constraints** are means over the rows, ``c = mean_j w_j A[:, cell_j] q_j + offset``:
  the group rates' denominators (and the error rates' base rates) are the running weights of
  the cells over every row seen so far, posed by :mod:`~sklearn_ialm.problems.fairness`'s own
  constraint builder on a one-row-per-cell summary; so every kind and form of ``fit`` streams,
  with the same names and units.
* **The bound on predictions** (``rate="hard"``): the multiplier step reads ``k`` on the
  *hard* predictions, less the target ``bound_tol / 2`` inside the bound, the multipliers
  kept nonnegative, while the gradients come from the soft surrogate: the multipliers move
  until the predictions meet the bound. (Moving the soft bound instead by the hard value's
  distance from the soft one, as ``fit`` steers, with the soft multiplier step, ended at the
  same final gap on the benchmark's stream, 1e6 rows in batches of 1e4: 0.021 against 0.020
  on fresh rows, but with a running gap of 0.028 against 0.023, and it needs a cap on the
  move.) Neyman-Pearson's threshold is
  the running quantile of the negatives' scores that flags ``max_fpr`` of them, less a margin
  (:data:`FPR_MARGIN`).
* **Two averages of the iterates.** A PStorm iterate at a fixed step remembers only its last
  few thousand rows, and its hard rates are those of a model fitted on so few: at a fixed
  multiplier the demographic-parity gap of means of its iterates over windows of 1e5 rows
  spread by 0.006, over 3e5 rows by 0.003. The model *measured* for the multiplier step is
  the mean of the outer iteration's iterates past its first quarter (the inner solve's
  burn-in), from its middle on: a mean reaching back into the previous outer iteration
  measured the previous multipliers' model, and the multipliers swung with it. The model
  *published* (``coef_``, ``intercept_``, and the predictions the running rates count) is
  the mean of the last :data:`AVERAGE_SHARE` of all the iterations, which carries the
  stream's rows; with a bound on fairness rates of predictions it is a model measured: the
  mean of an outer iteration's iterates from its first quarter to its half (kept going while
  the multipliers barely move), measured on the rows of the second half, and the best of
  these measured to meet the bound (:meth:`StreamState._publish_candidate`), since the hard
  rates of a model of small weights depend on the noise its mean keeps (see
  :meth:`StreamState._publishes_measured`). With a hard bound the multiplier step's gain
  adapts to the hard rate's slope (:meth:`StreamState._hard_gain`).

**Feature scaling** is fixed from the first batch: the solver's coordinates (the columns'
weighted moments of the first batch, as ``fit`` takes them from all rows), the smoothness
bound and with it the step. The iterate, the momentum estimate and the step are all in these
coordinates, and the model is the same in any of them: new moments would change only the
conditioning, which a first batch of a few thousand rows already gets within a few percent,
while moving the coordinates would ask to carry ``z`` and ``d`` over by the same linear map at
every call. A first batch under :data:`LEARN_ROWS` rows gives provisional coordinates (the
null model does not depend on them), taken again from the first :data:`LEARN_ROWS` rows when
they are learnt.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import update_wrapper, wraps
from types import MethodType
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import validate_data

from .._warnings import warn
from ..problems import LinearProblem
from ..problems.fairness import _constraints as fairness_constraints
from ..problems.losses import Logistic, SigmoidLoss, TruncatedLogistic
from ..problems.multinomial import MultinomialProblem
from ..solver.counting import Counter
from ..solver.kkt import level_shift
from ..solver.prox import Ridge
from ..solver.pstorm import AugmentedLagrangianEstimator, pstorm
from ..solver.settings import PRESETS
from ._hard_rates import _secant_slope, rate_threshold
from ._inputs import _DTYPES, _check_labels, _label, is_dask_collection, protected_codes
from ._prequential import count_prequential, prequential_counts, publish_prequential
from ._scaling import _column_moments, _feature_scaling
from ._solve import spawn_seeds
from ._stream_units import clipped
from ._stream_verdict import _share, cell_rates, count_recent, publish_recent, warn_if_missed

__all__ = ["GroupCodec", "StreamState", "partial_fit", "stream_method"]

#: Rows of one PStorm call; the measurements of the running estimates are taken between two.
PIECE_ROWS = 5000
#: The fewest rows learnt at once: smaller batches wait in the state until this many have
#: come (their predictions are counted as they come), so that a stream of 1-row batches
#: learns from the same pieces as one of 1000-row batches, and its coordinates are taken
#: from this many rows, not from a first batch of a handful.
LEARN_ROWS = 1000
#: Rows of the first outer iteration; later ones span OUTER_SHARE of the rows seen, so a
#: stream of n rows takes about log(n) outer iterations and the last ones measure their
#: constraint values on many rows.
FIRST_OUTER_ROWS = 2000
OUTER_SHARE = 0.25
#: The penalty of a stream when ``beta0`` is None, and its cap (``max(beta0, PENALTY)``).
PENALTY = 3.0
#: Iterations between two updates of the running averages of the iterates; the fewest
#: iterations the published average spans, and its share of all the iterations so far.
AVERAGE_EVERY = 25
AVERAGE_MIN = 300
AVERAGE_SHARE = 0.5
#: The hard-rate multiplier step's gain (see StreamState._hard_gain): its factor when the
#: hard value changes sign, when it keeps it, and its floor.
GAIN_SHRINK = 0.5
GAIN_GROWTH = 1.5
GAIN_MIN = 1e-3
#: A multiplier move under this share of the multiplier (or of 1) keeps the mean of the
#: iterates going across the outer iteration's end.
SETTLED_MOVE = 0.02
#: The points ``t`` of the segment ``(1 - t) best + t candidate`` measured (see
#: StreamState._segment_readings).
SEGMENT = np.linspace(0.0, 1.0, 11)
#: Neyman-Pearson: the threshold flags ``(1 - FPR_MARGIN) * max_fpr`` of the negatives, so
#: that the running rate's spread keeps it under ``max_fpr``.
FPR_MARGIN = 0.02
#: Neyman-Pearson's negative weight is moved when the boundary ``score = 0`` flags a share of
#: the negatives off ``max_fpr`` by more than this factor (``fit``'s ``rel_tol``).
WEIGHT_BAND = 1.25


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- the poses: how a batch becomes a problem ----------------------------------------------------
class _Pose:
    """What a stream constrains, as data (no reference to the estimator): here nothing, the
    cells being the class labels."""

    m: int = 0
    names: tuple = ()
    levels = None

    def __init__(self, n_cells: int = 2):
        self.n_cells = n_cells

    def cells(self, codes, groups):
        return codes.astype(np.intp)

    def constraints(self, cell_weight):
        """``(A, offset)`` at the running cell weights (``A``: m x n_cells), or None while
        some cell the constraints divide by has no weight yet."""
        return np.zeros((0, self.n_cells)), np.zeros(0)


class _FairPose(_Pose):
    """The fairness constraints of a :class:`~sklearn_ialm.FairLogisticClassifier`: cells
    ``2 * group + label`` over the declared groups."""

    def __init__(self, est, labels, protected, bound, max_fpr, excluded=()):
        self.labels = labels
        self.protected = protected
        # The groups left out of the constraints (positions; min_group_size, known to the
        # streamed dask fit): their cells train the loss and count in no rate.
        self.excluded = np.asarray(excluded, dtype=np.intp)
        self.n_cells = 2 * len(labels)
        self.kind, self.form = est.constraint, None if est._form() == "share" else est._form()
        self.bound, self.max_fpr = bound, max_fpr
        self.scale_share = est.constraint == "positive_share"
        # The constraints' names and free levels do not depend on the weights.
        *_, self.names, self.levels = self._pose(np.ones(self.n_cells))
        self.m = len(self.names)

    def cells(self, codes, groups):
        return 2 * groups.astype(np.intp) + codes.astype(np.intp)

    def constrained(self, group, t):
        """``(group, t)`` of the constraints: a cell of a group left out is given the first
        group kept and weight 0 (fit's ``_constrained_rows``)."""
        if not len(self.excluded):
            return group, t
        kept = ~np.isin(group, self.excluded)
        host = np.flatnonzero(~np.isin(np.arange(len(self.labels)), self.excluded))[0]
        return np.where(kept, group, host), t * kept

    def _pose(self, cell_weight):
        cells = np.arange(self.n_cells)
        group, label = cells // 2, cells % 2
        t = np.asarray(cell_weight, dtype=float)
        scale = 1.0
        if self.scale_share:
            # fit's _constraint_scale: the weighted positive rate, clipped to [0.05, 1].
            rate = t[label == 1].sum() / t.sum() if t.sum() > 0 else 1.0
            scale = min(max(rate, 0.05), 1.0)
        group, t = self.constrained(group, t)
        if len(self.protected):
            dummy = np.zeros((self.n_cells, 0))
            W, offset, names, levels, _, _ = fairness_constraints(
                dummy, label, dummy, group, list(self.protected), None, t, self.kind,
                self.form, self.bound, scale, False,
            )  # fmt: skip
        else:
            W, offset, names, levels = np.zeros((self.n_cells, 0)), np.zeros(0), [], None
        if self.max_fpr is not None:
            negatives = cell_weight * (label == 0)
            # fit's _with_fpr_bound: n w 1[y = 0] / sum of the negatives' weights.
            W = np.column_stack([W, self.n_cells * negatives / negatives.sum()])
            offset = np.append(offset, -float(self.max_fpr))
            names = [*names, "false_positive_rate"]
            if levels is not None:
                levels = np.vstack([levels, np.zeros((1, levels.shape[1]))])
        return W, offset, names, levels

    def constraints(self, cell_weight):
        t = np.asarray(cell_weight, dtype=float)
        try:
            with np.errstate(invalid="raise", divide="raise"):
                W, offset, _, _ = self._pose(t)
        except (ValueError, FloatingPointError):
            return None  # a rate's denominator has no rows yet
        # fairness_constraints weighs summary row ``s`` by n_cells * t_s times its
        # coefficient: the per-row coefficient of a row of that cell is that over n_cells t_s.
        live = t > 0
        A = np.zeros((self.m, self.n_cells))
        A[:, live] = (W[live] / (self.n_cells * t[live, None])).T
        return A, offset


class _NPPose(_Pose):
    """Neyman-Pearson's bound ``max_fpr`` (cells: the label). With ``loss="logistic"`` no
    constraint (the negatives' weight and the threshold are steered); with
    ``loss="sigmoid"`` the paper's soft false-positive constraint, the mean of
    ``sigmoid(score)`` over the negatives at most ``max_fpr``."""

    def __init__(self, max_fpr, constrained):
        super().__init__(2)
        self.max_fpr = float(max_fpr)
        self.m = int(constrained)
        self.names = ["false_positive_rate"] if constrained else []

    def constraints(self, cell_weight):
        if cell_weight[0] <= 0:
            return None
        return np.array([[1.0 / cell_weight[0], 0.0]]), np.array([-self.max_fpr])


# -- the state ------------------------------------------------------------------------------------
@dataclass
class StreamState:
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
    threshold: float = 0.0
    log_negative_weight: float = 0.0
    weight_trace: list = field(default_factory=list)
    units: tuple | None = None  # the first rows' column means and spreads (for the clip)
    warned_columns: set = field(default_factory=set)
    frozen: bool = False  # the model measured in this outer iteration's second half is set
    best: np.ndarray = None  # the best model measured to meet the bound, and its accuracy
    best_accuracy: np.ndarray = None  # per cell
    segment: tuple | None = None  # (best, last candidate): the points between are measured
    segment_sums: tuple | None = None  # (cell weights, hard sums per point, rows)
    reading: tuple | None = None  # (meets, accuracy) of the model measured at the outer end
    smooth_outer: int = -1  # the outer iteration whose first piece checked the bound
    smooth_share: np.ndarray = None  # the cells' shares when the smoothness bound was read
    settled: bool = False  # the multipliers barely moved: the mean of the iterates goes on
    gain: np.ndarray = None  # the hard-rate multiplier step's gain per constraint
    last_k: np.ndarray = None  # and the hard values it last read
    negatives_seen: float = 0.0
    ready: bool = False  # every rate the constraints divide by has rows
    warm: tuple | None = None  # the model fit left, which the stream starts from
    class_totals: np.ndarray = None  # the sample weight of each class so far
    text_columns: list = field(default_factory=list)
    params: dict = field(default_factory=dict)  # the parameters of the first call (set_params)
    recent: np.ndarray = None  # the recent calls' cell sums (_stream_verdict)
    held: list = field(default_factory=list)  # batches waiting for LEARN_ROWS rows
    held_rows: int = 0
    provisional: bool = False  # the coordinates are of a first batch under LEARN_ROWS rows
    step_credit: float = 0.0  # the fraction of a PStorm iteration owed to the rows learnt
    # With calibration="clopper-pearson": rows and positive predictions per cell, unweighted,
    # each batch predicted before it was learnt (_prequential), shape (2, n_cells).
    prequential: np.ndarray = None

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
        posed = self.pose.constraints(self.cell_weight / self.n_seen)
        return posed if posed is not None else (None, None)

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
        if self.held_rows < self._learn_rows():
            return
        X, codes, w, cells = self._release()
        if self.provisional:
            # Nothing learnt yet: the coordinates are taken again from these rows.
            self.provisional, self.smoothness, self.ready = False, None, False
            self._start(X, codes, w, cells)
        X = clipped(X, self.units, self.warned_columns)
        start = 0
        while start < len(codes):
            R = self.outer_rows
            end = next(b for b in (R // 4, R // 2, R) if b > self.rows_outer)
            take = min(len(codes) - start, end - self.rows_outer, PIECE_ROWS)
            rows = slice(start, start + take)
            self._piece(X[rows], codes[rows], w[rows], cells[rows])
            start += take

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
        problem = self.problem(X, codes, w, cells)
        second = self.rows_outer >= self.outer_rows // 2
        self._measure(X, codes, w, cells, second)
        if problem is not None and self.smoothness is not None:
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
            self.current = self.average.copy()
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

    def forget_measurements(self):
        """Drop what was measured against the constraints as posed so far (the best model
        that met them, the segment to measure, the multiplier steps' gains): after a move of
        the bound (set_params between calls) they judged another bound."""
        self.best = self.best_accuracy = self.reading = None
        self.segment = self.segment_sums = None
        self.gain = self.last_k = None
        self.weight_trace = []  # (Neyman-Pearson's secant measured the old target)

    def _publish_candidate(self, candidate):
        """Publish the model measured in this outer iteration's second half, or the best
        one (the highest accuracy measured) among those measured to meet the bound, points of
        the segments measured included. Where the
        bound is dear the multipliers settle slowly, and the model measured swings about
        the bound from one outer iteration to the next (the group tied to the score, 3e5
        rows: gaps from -0.28 to +0.23 at multipliers within 15 % of each other); the model
        kept is one whose rates were measured on rows it had not learnt from."""
        readings = self._segment_readings()
        if self.reading is not None:
            readings.append((candidate, *self.reading))
        best = self._accuracy(self.best_accuracy)
        for point, meets, accuracy in readings:
            if meets and self._accuracy(accuracy) > best:
                self.best, self.best_accuracy = point, accuracy
                best = self._accuracy(accuracy)
        self.published = candidate if self.best is None else self.best.copy()
        # The next outer iteration measures the segment from the best model to this one.
        keep = self.best is not None and self.best is not candidate
        self.segment = (self.best.copy(), candidate) if keep else None
        self.segment_sums = None

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

    def _segment_readings(self):
        """``(model, meets, accuracy)`` of the points of the segment measured over the last
        outer iteration (its rows came after both ends were fixed). The scores are linear in
        the model, so a point between a model that meets the bound and a more accurate one
        that does not is measured by the same sums: where the bound is dear the models
        measured scatter widely about it (fresh gaps from 0.006 to 0.142 at one multiplier,
        1e6 rows), and the point of the segment at the bound is the better model."""
        if self.segment is None or self.segment_sums is None:
            return []
        weight, hard, rows = self.segment_sums
        own = self.pose.constraints(weight / rows)
        if own is None:
            return []
        A, base = own
        out = []
        for t, h in zip(SEGMENT, hard, strict=True):
            values = A @ h / rows + base + self.level_offset
            point = (1.0 - t) * self.segment[0] + t * self.segment[1]
            out.append((point, bool(np.all(values <= 0)), _cell_accuracy(weight, h)))
        return out

    def _publishes_measured(self):
        """Whether the model published is one measured (a bound on fairness rates of
        predictions), not the mean of the last half of all the iterates.
        Where the bound is dear its model has small weights, and the noise the iterates keep
        in the directions the label does not use moves its hard rates: on the group tied to
        the score (sd 3, 3e5 rows), the mean of the last half of all the iterates, with half
        the noise of the model measured, had a fresh gap of 0.139 against the measured 0.07."""
        return self.steer and self.kind == "fair" and self.m > 0

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

    # -- the running estimates -----------------------------------------------------------------
    def _measure(self, X, codes, w, cells, second):
        """The published model's rates on the piece's rows, before it learns from them: the
        threshold's quantile (Neyman-Pearson, every piece) and, in the second half of an
        outer iteration, the sums the outer step reads."""
        if self.kind == "softmax":
            return
        if self.kind != "fair" and self.steer:
            self._track_threshold(self.scores(X, self.published), codes, w)
        if self.segment is not None:
            self._measure_segment(X, w, cells)
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

    def _measure_segment(self, X, w, cells):
        """Per cell, the weight of the piece's rows and of the positive predictions of each
        point of :data:`SEGMENT` on the segment between the two models measured."""
        ends = [self.scores(X, z) for z in self.segment]
        n = self.pose.n_cells
        weight = np.bincount(cells, weights=w, minlength=n)
        hard = np.array([
            np.bincount(cells, weights=w * ((1.0 - t) * ends[0] + t * ends[1] > 0), minlength=n)
            for t in SEGMENT
        ])  # fmt: skip
        if self.segment_sums is None:
            self.segment_sums = (weight, hard, float(len(cells)))
        else:
            old = self.segment_sums
            self.segment_sums = (old[0] + weight, old[1] + hard, old[2] + len(cells))

    def _track_threshold(self, scores, codes, w):
        """Neyman-Pearson's threshold: a running mean of each piece's quantile of the
        published model's negative scores, over as many negatives as the published average
        spans (at least a few thousand)."""
        neg = codes == 0
        n_neg = float(w[neg].sum())
        if n_neg <= 0:
            return
        target = (1.0 - FPR_MARGIN) * self.pose.max_fpr
        quantile = rate_threshold(scores[neg], w[neg], target)
        if self.outer == 0 and self.rows_outer < self.outer_rows // 2:
            self.threshold = quantile  # the null model's: above every score
            return
        share = min(1.0, n_neg / max(2000.0, 0.25 * self.negatives_seen))
        self.threshold = (1.0 - share) * self.threshold + share * quantile

    # -- the outer iteration ---------------------------------------------------------------------
    def _outer(self, problem):
        """Algorithm 1's step at the end of an outer iteration (see the module docstring)."""
        sums, self.measured = self.measured, None
        self.outer += 1
        self.rows_outer = 0
        self.outer_rows = int(max(FIRST_OUTER_ROWS, OUTER_SHARE * self.n_seen))
        if sums is None or problem is None:
            return
        rows = sums[0]
        if self.kind == "np_logistic":
            if sums[3] <= 0:
                # No positive among the rows measured (a stream that starts with negatives
                # only): the boundary's rate says nothing of the weight the classes need,
                # and moving it down there took the first 3 batches' weight e^-3 an outer
                # iteration (fresh FNR 0.632 at 3e5 rows, 0.218 at 1e6 against fit's 0.184).
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
            accuracy = _cell_accuracy(sums[2 : 2 + n], sums[2 + 2 * n :])
            self.reading = (bool(np.all(hard + self.level_offset <= 0)), accuracy)
        norm = float(np.linalg.norm(k))
        if hard_bound:
            self.y = np.maximum(self.y + self._hard_gain(k) * k, 0.0)
        elif norm > 0:
            self.y = self.y + min(self.beta, 1.0 / norm) * k
        if norm > self.tol:
            self.beta = min(self.beta * self.sigma, self.beta_cap)
        self.z = np.concatenate([self.z[:p], slack])
        self._carry(problem, problem.with_offset(self.offsets(base)), z_old, y_old, beta_old)

    def _hard_gain(self, k):
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
            # Grown only where the last step made no headway (the model lags the
            # multiplier by about an outer iteration: a reading of the same sign but
            # smaller is the model still catching up).
            stuck = (k * self.last_k > 0) & (np.abs(k) >= 0.8 * np.abs(self.last_k))
            moving = stuck & ((k > 0) | (self.y > 0))
            factor = np.where(flipped, GAIN_SHRINK, np.where(moving, GAIN_GROWTH, 1.0))
            self.gain = np.maximum(self.gain * factor, GAIN_MIN)
        self.last_k = k
        return self.gain

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
        ``_hard_rates.fit_negative_weight``)."""
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


def _cell_accuracy(weight, hard):
    """The accuracy of predictions in each cell ``2 * group + label`` (NaN in a cell without
    rows), from the cells' weights and those of their positive predictions."""
    label = np.arange(len(weight)) % 2
    with np.errstate(invalid="ignore", divide="ignore"):
        positive = np.where(weight > 0, hard / weight, np.nan)
    return np.where(label == 1, positive, 1.0 - positive)


# -- partial_fit ----------------------------------------------------------------------------------
def streams(est) -> bool:
    """Whether ``est`` has ``partial_fit``: a calibrated fit holds rows out, which a stream
    cannot, so its estimator has no ``partial_fit`` and scikit-learn's checks and ``hasattr``
    see it as a batch estimator. Raises the AttributeError that says so. The exception is a
    stream whose calibration certifies the sequence of its models from rows predicted
    before they were learnt (:mod:`._prequential`): ``"clopper-pearson"`` for fairness and
    ``"umbrella"`` for Neyman-Pearson (there a prequential limit, no umbrella threshold)."""
    calibration = getattr(est, "calibration", None)
    prequential = calibration == ("clopper-pearson" if hasattr(est, "constraint") else "umbrella")
    if calibration is not None and not prequential:
        own = "clopper-pearson" if hasattr(est, "constraint") else "umbrella"
        raise AttributeError(
            f"{type(est).__name__} has no partial_fit with calibration={est.calibration!r}: "
            f"its stream is certified with calibration={own!r} (a prequential certificate "
            "of the stream's sequence of models, from rows predicted before they were "
            "learnt), or streams without one with calibration=None; use fit on stored rows "
            "for a certificate of the final model."
        )
    return True


class stream_method:  # noqa: N801 (a decorator, as scikit-learn's available_if)
    """``partial_fit`` that exists unless :func:`streams` says no, as
    ``available_if(streams)`` makes it, but whose AttributeError is :func:`streams`'s own:
    ``available_if`` raises "has no attribute 'partial_fit'" with the reason only in the
    chained cause, which a user reading the message does not see."""

    def __init__(self, fn):
        self.fn = fn
        update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is not None:
            streams(obj)
            return MethodType(self.fn, obj)

        @wraps(self.fn)
        def unbound(est, *args, **kwargs):
            streams(est)
            return self.fn(est, *args, **kwargs)

        return unbound


def partial_fit(est, X, y, *, classes=None, sample_weight=None, groups=None, **fit_params):
    """One ``partial_fit`` call of ``est`` (see the estimators' method for the parameters).

    The batch is validated and learnt on a copy of the stream's state; the estimator's state
    is replaced in one step at the end, so a call that raises changes nothing.
    """
    state = est.__dict__.get("_stream")
    fitted = "coef_" in est.__dict__
    work = est._working_copy()
    work._validate_params()
    if is_dask_collection(X) or is_dask_collection(y):
        raise NotImplementedError(
            "partial_fit takes one batch in memory (a numpy array, a sparse matrix or a "
            "DataFrame), got a dask collection: pass its blocks one by one, e.g. "
            "for block in X.to_delayed().ravel(): clf.partial_fit(block.compute(), ...)."
        )
    _check_labels(y)
    reset = state is None and not fitted
    X, y = validate_data(
        work if reset else est, X, y, accept_sparse="csr", dtype=_DTYPES, reset=reset
    )
    if not reset:
        for name in ("n_features_in_", "feature_names_in_"):
            if name in est.__dict__:
                setattr(work, name, est.__dict__[name])
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if state is None:
        start = _classes_of(work, est if fitted else None, classes)
    else:
        state = copy.deepcopy(state)
        _check_same_classes(state.classes, classes)
        start = None
    known = state.classes if state is not None else start[0]
    codes = _codes(y, known)
    w = work._checked_sample_weight(sample_weight, X)
    if state is None:
        state = _new_state(work, est if fitted else None, codes, w, start, groups, fit_params)
        state.text_columns = list(fit_params.get("text_group_columns") or [])
        state.params = _stream_params(work)
    else:
        _follow_params(work, state)
        if groups is not None:
            _check_same_groups(fit_params["codec"], state, groups)
    w = _class_weighted(work, state, codes, w)
    batch_groups = _batch_groups(
        fit_params.get("codec"), state, fit_params.get("sensitive_features"), X.shape[0]
    )
    keep = w > 0
    if not keep.all():
        X, codes, w = X[keep], codes[keep], w[keep]
        batch_groups = None if batch_groups is None else batch_groups[keep]
    if len(codes):
        state.learn(X, codes, w, batch_groups)
        count_recent(state, X, codes, w, batch_groups)
    _publish(work, state)
    warn_if_missed(work, est.__dict__)
    est._publish(work)
    return est


def _classes_of(work, fitted, classes):
    """``(classes, K)`` of a new stream: ``classes`` (ordered as ``fit`` orders them), or
    those of the model that ``fit`` left (which the stream then continues)."""
    if classes is None:
        if fitted is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every class label "
                "of the stream (e.g. classes=[0, 1]), as a batch may hold only some of them."
            )
        classes = fitted.classes_
    values = np.asarray(classes)
    if values.ndim != 1 or len(values) < 2 or len(np.unique(values)) != len(values):
        raise ValueError(
            f"classes must list at least 2 distinct class labels, got classes={classes!r}."
        )
    if fitted is not None:
        _check_same_classes(fitted.classes_, values)
    if len(values) > 2:
        return np.unique(values), len(values)
    ordered, _ = work._check_target(np.unique(values))
    return ordered, 2


def _check_same_classes(known, classes):
    if classes is None:
        return
    same = len(np.asarray(classes)) == len(known) and set(np.asarray(classes).tolist()) == set(
        known.tolist()
    )
    if not same:
        raise ValueError(
            f"classes={list(np.asarray(classes).tolist())!r} is not the same as the stream's "
            f"classes {known.tolist()!r} (fixed on the first call); fit starts a new model."
        )


def _codes(y, classes):
    """Each label's position in ``classes``; a label not among them is an error naming y."""
    y = np.asarray(y)
    order = np.argsort(classes, kind="stable")
    try:
        at = np.clip(np.searchsorted(classes[order], y), 0, len(classes) - 1)
        found = classes[order][at] == y
    except (TypeError, ValueError):
        found = np.zeros(len(y), bool)
    if not np.all(found):
        bad = y[~np.asarray(found, bool)][0]
        raise ValueError(
            f"y holds the label {_label(bad)}, which is not one of the classes declared on the "
            f"first call to partial_fit: {classes.tolist()!r}."
        )
    return order[at].astype(np.intp)


def _new_state(work, fitted, codes, w, start, groups, fit_params):
    """The state of a new stream: what it constrains (its pose), its coordinates and
    settings; the model it starts from is the null model, or the one ``fit`` left."""
    classes, K = start
    fair = hasattr(work, "constraint")
    pose, kind = _Pose(K), "softmax" if K > 2 else "fair"
    if fair:
        pose = _fair_pose(work, classes, K, codes, w, groups, fit_params)
    elif K > 2:
        if work.max_class_error is not None:
            raise NotImplementedError(
                "partial_fit fits more than two classes without a bound only: "
                "max_class_error is not streamed yet; use fit for it."
            )
        warn(
            f"max_class_error is None: no class error is bounded on these {K} classes, the "
            "unconstrained multinomial model is streamed (max_fpr is the two-class form).",
            UserWarning,
        )
    else:
        if work.rate == "soft" and work.loss != "sigmoid":
            raise ValueError(
                "rate='soft' is the paper's model, a bound on the soft false-positive rate of "
                f"the sigmoid loss: use loss='sigmoid' with it (got loss={work.loss!r})."
            )
        kind = "np_sigmoid" if work.loss == "sigmoid" else "np_logistic"
        pose = _NPPose(work.max_fpr_, kind == "np_sigmoid")
    state = _state(work, fitted, kind, pose, classes)
    state.prequential = prequential_counts(work, pose)
    return state


def _state(work, fitted, kind, pose, classes):
    beta = PENALTY if work.beta0 is None else float(work.beta0)
    sigma = 1.25 if work.sigma is None else float(work.sigma)
    seed = spawn_seeds(work.random_state, 1)[0]
    return StreamState(
        classes=np.asarray(classes), kind=kind, pose=pose, scale=None, center=None,
        n_live=1, fit_intercept=work.fit_intercept, loss=work.loss, C=work.C,
        steer=work.rate == "hard", bound_tol=float(getattr(work, "bound_tol", 0.0)),
        rng=np.random.default_rng(seed), beta=beta, beta_cap=max(beta, PENALTY), sigma=sigma,
        tol=float(work.tol), batch_size=int(work.batch_size),
        cell_weight=np.zeros(pose.n_cells), cell_positive=np.zeros(pose.n_cells),
        warm=None if fitted is None else _fitted_model(fitted, kind, pose),
        class_totals=np.zeros(len(classes)),
    )  # fmt: skip


def _fitted_model(fitted, kind, pose):
    """The model ``fit`` left, for the stream to start from: ``(coef, intercept,
    multipliers, threshold)`` (multipliers only where the constraints are the same)."""
    multipliers = getattr(fitted, "multipliers_", None)
    if multipliers is None or multipliers.shape != (pose.m,) or kind == "np_logistic":
        multipliers = None
    return (
        np.asarray(fitted.coef_, dtype=float),
        np.asarray(fitted.intercept_, dtype=float),
        multipliers,
        float(getattr(fitted, "threshold_", 0.0)),
    )


class GroupCodec(NamedTuple):
    """How a fairness stream reads group labels (the estimator's own functions, passed in
    by ``FairLogisticClassifier.partial_fit``): ``encode(values, n) -> (codes, labels)`` and
    ``key(label)``, a hashable key equal for a label's spellings."""

    encode: Callable
    key: Callable


# -- the groups of a fairness stream --------------------------------------------------------------
def _fair_pose(work, classes, K, codes, w, groups, fit_params):
    """The fairness pose of a new stream: the declared groups, the protected ones, the
    bound (the unconstrained model, with fit's warning, when there are no groups)."""
    sf = fit_params.get("sensitive_features")
    if groups is not None and sf is None:
        raise ValueError(
            f"groups={np.asarray(groups).tolist()!r} is given but sensitive_features is None: "
            "pass the group of each row of the batch (sensitive_features=...) with groups=, "
            "or neither for the unconstrained model."
        )
    if groups is None and sf is None:
        if work.protected_groups is not None:
            raise ValueError(
                "protected_groups is set but sensitive_features is None: pass the group of "
                "every row to partial_fit, and declare the groups on the first call (groups=)."
            )
        _warn_void(work, "sensitive_features is None")
        return _Pose(K)
    if K > 2:
        raise NotImplementedError(
            "partial_fit fits more than two classes without a bound only: a fairness bound "
            "on a multinomial model is not streamed yet; use fit for it."
        )
    if groups is None:
        raise ValueError(
            "groups must be passed on the first call to partial_fit with sensitive_features: "
            "every group of the stream (e.g. groups=['a', 'b']), as classes= declares the "
            "classes, since a batch may hold only some of them and the constraints are posed "
            "once for all."
        )
    codec = fit_params["codec"]
    declared = np.asarray(groups, dtype=object if _is_tuples(groups) else None)
    _, labels = codec.encode(declared, len(declared))
    if len(labels) < 2:
        _warn_void(work, f"groups declares a single group ({labels[0]!r})")
        return _Pose(K)
    batch = _group_codes(codec, labels, sf, len(codes))
    excluded = _excluded(codec, labels, fit_params.get("excluded_groups"))
    protected = _protected(work, codec, labels, batch, w, excluded)
    if len(excluded) and (len(labels) - len(excluded) < 2 or not len(protected)):
        _warn_void(
            work,
            "sensitive_features leaves fewer than two groups (or no protected group) of at "
            f"least min_group_size={work.min_group_size} rows",
        )
        protected = protected[:0]
    bound = _checked_bound(work, protected)
    return _FairPose(work, labels, protected, bound, work.max_fpr, excluded)


def _checked_bound(work, protected):
    """``bound`` as the stream poses it (the default of its form where None)."""
    bound = work._check_bound()
    if work.constraint == "positive_share" and len(protected) * bound > 1 + 1e-12:
        raise ValueError(
            f"bound={bound:g} is infeasible for constraint='positive_share' with "
            f"{len(protected)} protected groups: their shares of the positive predictions "
            f"add up to at most 1, so bound must be <= 1/{len(protected)}."
        )
    return bound


# -- the parameters between calls ----------------------------------------------------------------
#: Parameters a stream never reads: fit's budget, seeds, hold-out and printing, and
#: class_weight, read again at every call. (``calibration`` and ``delta`` are fixed: the
#: prequential certificate holds at every call for a level chosen before the stream.)
_NOT_FIXED = frozenset(
    {"verbose", "n_jobs", "n_seeds", "max_passes", "warm_start", "preset",
     "calibration_size", "class_weight"}
)  # fmt: skip
#: The bound: posed again from the next call on (the constraints' offsets, Neyman-Pearson's
#: target rate), so that set_params(bound=...) between calls moves the stream to it.
_FOLLOWED = frozenset({"bound", "max_fpr", "max_class_error"})


def _stream_params(work):
    return {k: v for k, v in work.get_params(deep=False).items() if k not in _NOT_FIXED}


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.random.RandomState | np.random.Generator):
        return type(a) is type(b)  # the stream drew its seed from it on the first call
    try:
        return np.shape(a) == np.shape(b) and bool(np.all(a == b))
    except (TypeError, ValueError):
        return False


def _follow_params(work, state):
    """The parameters set since the stream's first call: the bound is posed again, from this
    call on; any other parameter the stream fixed on its first call is refused, with the
    remedy (a parameter silently ignored would let get_params disagree with the model)."""
    if not getattr(state, "params", None):  # a stream pickled before they were kept
        state.params = _stream_params(work)
    # (The attributes, not get_params, which reads the signature: a call of one row is 6 ms.)
    now = {name: getattr(work, name, None) for name in state.params}
    changed = [k for k, v in state.params.items() if not _same(v, now[k])]
    for name in changed:
        if name not in _FOLLOWED:
            raise ValueError(
                f"{name}={now[name]!r} was set after the stream's first call, which fixed "
                f"{name}={state.params[name]!r} for the whole stream (its model is learnt "
                "with it). Set it back, or start a new stream with it: a new estimator, or "
                "fit (partial_fit then goes on from the fitted model)."
            )
    if changed:
        _move_bound(work, state)
        state.params.update((name, now[name]) for name in changed)


def _move_bound(work, state):
    """Pose the stream's constraints at the bound of ``work``'s parameters."""
    pose = state.pose
    if isinstance(pose, _FairPose):
        if (pose.max_fpr is None) != (work.max_fpr is None):
            raise ValueError(
                f"max_fpr={work.max_fpr!r} was set after the stream's first call, which "
                f"posed its constraints with max_fpr={pose.max_fpr!r}: a stream can move "
                "max_fpr but not add or remove it. Start a new stream with it: a new "
                "estimator, or fit (partial_fit then goes on from the fitted model)."
            )
        pose.bound = _checked_bound(work, pose.protected)
        pose.max_fpr = None if work.max_fpr is None else float(work.max_fpr)
        state.forget_measurements()
    elif isinstance(pose, _NPPose):
        max_fpr = work._max_fpr_of(state.classes)
        if max_fpr != pose.max_fpr:
            pose.max_fpr = max_fpr
            state.forget_measurements()
    elif state.kind == "softmax" and getattr(work, "max_class_error", None) is not None:
        raise NotImplementedError(
            "partial_fit fits more than two classes without a bound only: max_class_error "
            "is not streamed yet; use fit for it."
        )


def _is_tuples(groups):
    return len(groups) > 0 and isinstance(next(iter(groups)), tuple)


def _warn_void(work, why):
    warn(
        f"{why}: the fairness constraint is void; fitting the unconstrained {work.loss} model.",
        UserWarning,
    )


def _group_codes(codec, labels, sensitive_features, n):
    """Each row's position among the declared group ``labels``; a group not declared is an
    error naming sensitive_features."""
    codes, present = codec.encode(sensitive_features, n)
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    where = np.empty(len(present), dtype=np.intp)
    for i, label in enumerate(present):
        key = codec.key(label)
        if key not in lookup:
            raise ValueError(
                f"sensitive_features holds the group {key!r}, which is not one of the groups "
                f"declared on the first call to partial_fit: "
                f"{[codec.key(g) for g in labels]!r}."
            )
        where[i] = lookup[key]
    return where[codes]


def _excluded(codec, labels, excluded_groups):
    """The positions of the groups left out of the constraints (labels given by the
    streamed dask fit, which has counted them; a stream of ``partial_fit`` calls leaves
    none out)."""
    if excluded_groups is None:
        return np.array([], dtype=np.intp)
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    return np.array([lookup[codec.key(g)] for g in excluded_groups], dtype=np.intp)


def _protected(work, codec, labels, batch, w, excluded=()):
    """The protected groups' positions: ``protected_groups``, else (as fit's rule) with two
    groups the one of less weight in the first batch (a tie: the first), else all; none of
    the groups ``excluded``."""
    named = _named_protected(work, codec, labels, batch, w)
    return named[~np.isin(named, excluded)]


def _named_protected(work, codec, labels, batch, w):
    if work.protected_groups is None:
        if len(labels) == 2:
            weight = np.bincount(batch, weights=w, minlength=2)
            return np.array([int(np.argmin(weight))])
        return np.arange(len(labels))
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    return protected_codes(
        work.protected_groups,
        lookup,
        codec.key,
        lambda key: (
            f"protected_groups: group {key!r} is not one of the declared groups "
            f"{[codec.key(g) for g in labels]!r}."
        ),
    )


def _check_same_groups(codec, state, groups):
    labels = getattr(state.pose, "labels", None)
    declared = np.asarray(groups, dtype=object if _is_tuples(groups) else None)
    _, given = codec.encode(declared, len(declared))
    if (
        labels is None
        or len(given) != len(labels)
        or not all(a == b for a, b in zip(given.tolist(), labels.tolist(), strict=True))
    ):
        raise ValueError(
            f"groups={list(given.tolist())!r} is not the stream's declared groups "
            f"{None if labels is None else labels.tolist()!r} (fixed on the first call); fit "
            "starts a new model."
        )


def _batch_groups(codec, state, sensitive_features, n):
    """The batch's group positions (None for a stream without groups)."""
    labels = getattr(state.pose, "labels", None)
    if labels is None:
        if sensitive_features is not None and state.kind == "fair":
            raise ValueError(
                "sensitive_features is given, but this stream was started without groups: its "
                "model is unconstrained. Start a new stream (fit, or a new estimator) with "
                "groups= and sensitive_features on its first call."
            )
        return None
    if sensitive_features is None:
        raise ValueError(
            "sensitive_features is None: every batch of this stream needs the group of each "
            "row (its constraints read them)."
        )
    return _group_codes(codec, labels, sensitive_features, n)


def _class_weighted(work, state, codes, w):
    """``w`` times the class weights (``"balanced"``: on the classes' weights so far, this
    batch included); counts the batch's class weights."""
    state.class_totals = state.class_totals + np.bincount(
        codes, weights=w, minlength=len(state.classes)
    )
    class_weight = getattr(work, "class_weight", None)
    if class_weight is None:
        return w
    totals = state.class_totals
    if isinstance(class_weight, str):
        with np.errstate(divide="ignore"):
            cw = np.where(totals > 0, totals.sum() / (len(totals) * totals), 0.0)
    else:
        cw = np.array([float(class_weight.get(c, 1.0)) for c in state.classes.tolist()])
    return w * cw[codes]


# -- publishing -----------------------------------------------------------------------------------
def _publish(work, state):
    """The fitted attributes of the stream's published model, set on ``work``."""
    coef, intercept = state.coef(state.published)
    work._stream = state
    work.classes_ = state.classes
    if state.kind == "softmax":
        work.coef_, work.intercept_ = np.array(coef), np.array(intercept, dtype=float)
    else:
        work.coef_ = np.array(coef).reshape(1, -1)
        work.intercept_ = np.array([intercept], dtype=float)
    work.multipliers_ = np.array(state.y, dtype=float)
    work.n_samples_seen_ = int(state.n_seen)
    work.n_iter_, work.n_outer_iter_ = int(state.n_iter), int(state.outer)
    work.fitted_at_ = _utc_now()
    if hasattr(work, "constraint"):
        _publish_fair(work, state)
    elif state.kind != "softmax":
        work.max_fpr_ = state.pose.max_fpr
        work.threshold_ = float(state.threshold)
        work.negative_weight_ = (
            float(np.exp(state.log_negative_weight)) if state.kind == "np_logistic" else None
        )
        fpr = _share(state.cell_positive[0], state.cell_weight[0])
        work.running_constraint_values_ = np.array([fpr])
        publish_recent(work, state)
        if getattr(state, "prequential", None) is not None:
            publish_prequential(work, state)
    else:
        if not hasattr(work, "constraint"):
            work.threshold_ = 0.0  # as fit's multinomial model: the arg-max of the scores
        work.running_constraint_values_ = np.zeros(0)
        work.bound_met_ = True


def _publish_fair(work, state):
    pose = state.pose
    labels = getattr(pose, "labels", None)
    work.text_group_columns_ = list(state.text_columns)
    if labels is None:
        work.bound_ = work._check_bound() if state.kind != "softmax" else None
        work.groups_ = work.protected_groups_ = work.excluded_groups_ = np.array([])
        work.running_constraint_values_ = np.zeros(0)
        work.bound_met_ = True
        return
    work.bound_, work.groups_ = pose.bound, labels
    work.protected_groups_ = labels[pose.protected]
    work.excluded_groups_ = labels[pose.excluded]
    values, _, fpr = cell_rates(work, state, state.cell_weight, state.cell_positive)
    work.running_constraint_values_ = values
    if fpr is not None:
        work.running_fpr_ = fpr
    publish_recent(work, state)
    if getattr(state, "prequential", None) is not None:
        publish_prequential(work, state)
