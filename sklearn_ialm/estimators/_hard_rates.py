"""What the steering to the bound on hard predictions measures and returns: the constraints
as units (:class:`_Units`), the fit (:class:`HardRateFit`, built by :func:`_finish`), and the
threshold that spends a rate budget on hard predictions (:func:`rate_threshold`).

The steering (:func:`~._steering.fit_hard_rates`, whose module says how it works) and the
Neyman-Pearson weight of the negatives (:func:`~._negative_weight.fit_negative_weight`) are
built on these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..problems._numeric import BOUND_EPS

__all__ = ["HardRateFit", "rate_threshold"]


@dataclass
class HardRateFit:
    """What :func:`fit_hard_rates` and :func:`fit_negative_weight` return."""

    x: np.ndarray
    result: object  # the solver result of the returned solve (or the segment's first end)
    results: list = field(repr=False)
    converged: bool  # every solve the returned model is built from converged
    met: bool  # every hard value of x is <= 0
    interpolated: float  # t in [0, 1] of the segment step, 0.0 when a solve was returned
    degenerate: bool  # every prediction of x is the same class
    n_data_passes: float
    negative_weight: float = 1.0  # fit_negative_weight: the weight of the negatives found
    toward_constant: bool = False  # met by moving towards the constant model (no solve met it)
    threshold_moved: bool = False  # met by moving the threshold of a solve (no solve met it)
    group_thresholds: bool = False  # ... the threshold of each group (see _cut_by_group)
    # (coef, intercept) of the solve nearest the bound, which the two moves above start from.
    nearest: tuple | None = None
    # The surrogate's bound of some unit that missed was tightened as far as the steering
    # goes (see _shift_cap) before no solve met the bound.
    at_cap: bool = False
    # (loss, penalty) of the returned model, set where its coefficients are: the report
    # computes its objective from its training scores (see _binary.solve_and_steer).
    objective_terms: tuple | None = None
    # The unit values of x on predictions (``<= 0``: met), as _finish read them.
    hard: np.ndarray | None = field(default=None, repr=False)
    # The solver results x is built from (``result`` first; a segment's two ends).
    used: list = field(default_factory=list, repr=False)


class _Units:
    """The constraints of a problem as the steering sees them: one unit per free level (a
    band of constraints whose position the solver chooses, see
    :func:`~sklearn_ialm.problems.fairness_problem`) and one per other constraint.

    A unit's value is the largest of its constraints' values at the best position of the
    level, ``min_t max_k (v_k + levels[k] t)``: ``<= 0`` exactly when some level meets every
    constraint of the unit. A shift of the unit moves all its constraints' offsets alike,
    and its value by the same amount.
    """

    def __init__(self, problem):
        levels = getattr(problem, "levels", None)
        m = len(problem.offset)
        self.members, self.slopes = [], []
        free = np.ones(m, bool)
        if levels is not None:
            for j in range(levels.shape[1]):
                rows = np.flatnonzero(levels[:, j])
                free[rows] = False
                e = levels[rows, j]
                # (Within a band every upper constraint has one slope, every lower one too.)
                self.members.append(rows)
                self.slopes.append((-e[e < 0][0], e[e > 0][0], e < 0))
        self.n_bands = len(self.members)
        self.free = np.flatnonzero(free)  # each its own unit, after the bands
        for k in self.free:
            self.members.append(np.array([k]))
            self.slopes.append(None)
        self.spread = np.zeros((m, len(self.members)))
        for u, rows in enumerate(self.members):
            self.spread[rows, u] = 1.0

    def __len__(self):
        return len(self.members)

    def values(self, V):
        """Unit values of constraint values ``V`` (shape ``(..., m)``)."""
        V = np.asarray(V, dtype=float)
        out = np.empty(V.shape[:-1] + (len(self),))
        # (np.take: indexing the columns with an array took as long as the sweep's sort.)
        out[..., self.n_bands :] = np.take(V, self.free, axis=-1)
        for u in range(self.n_bands):
            rows, (a, e, upper) = self.members[u], self.slopes[u]
            hi = V[..., rows[upper]].max(axis=-1)  # falls as a * t with the level t
            lo = V[..., rows[~upper]].max(axis=-1)  # rises as e * t
            out[..., u] = (e * hi + a * lo) / (a + e)
        return out

    def differences(self):
        """Whether each unit is a band of differences (its upper and lower constraints have
        opposite slopes in the level: ``r_g - t`` and ``t - r_g``), not of ratios."""
        out = np.zeros(len(self), bool)
        out[: self.n_bands] = [a == e for a, e, _ in self.slopes[: self.n_bands]]
        return out

    def any_positive(self, multipliers):
        """Whether each unit has a constraint with a positive multiplier."""
        return np.array([np.any(multipliers[rows] > 0) for rows in self.members])


def _secant_slope(trace, default, low, high):
    """Slope of the last two ``(argument, value)`` points of ``trace``, clipped to
    ``[low, high]``; ``default`` until there are two distinct points."""
    if len(trace) < 2:
        return default
    (a1, v1), (a2, v2) = trace[-2:]
    if abs(a2 - a1) <= 1e-12:
        return default
    return float(np.clip((v2 - v1) / (a2 - a1), low, high))


def _say(verbose, text):
    """With ``verbose``, which solve of the steering starts and why (the solver's own lines
    restart at ``k=0`` with each solve)."""
    if verbose:
        print(f"[steering] {text}")


def _pass_share(problem):
    """Data passes of one score evaluation of the constraint rows (fewer where they list
    rows again, see ``LinearProblem.constraint_score_rows``)."""
    rows = problem.n_constraint_samples
    read = getattr(problem, "constraint_score_rows", None)
    return (rows if read is None else min(rows, read())) / problem.n_samples


def _held(scores):
    """What the steering keeps of a solve's constraint-row ``scores`` across later solves:
    nothing for an array in memory (:func:`_rescored` computes it again from the solve's
    ``x``, with the same product, so with the same bits), the scores themselves on a cluster
    (a formula there). An n-vector held through each further solve was one of the fit's
    largest (dense 1e6 x 20: two solves' scores, 16 MB, at its peak; see
    benchmarks/results/memory.md)."""
    return None if isinstance(scores, np.ndarray) else scores


def _rescored(problem, x, held):
    """The constraint-row scores at ``x`` of a solve whose scores the steering kept as
    ``held`` (:func:`_held`): a fresh array, the caller's to change, where it kept none. (A
    pass over the constraint rows that the steering's count of passes leaves out: the fit
    had read them before, and its budget is as it was.)"""
    return problem.constraint_scores(x) if held is None else held


def _finish(problem, units, x, scores, results, used, t, passes, means=None):
    """The fit at ``x``, whose constraint-row ``scores`` are given (and the constraints'
    ``means`` over their predictions, ``problem.rate_constraints(scores, offset=0.0)``,
    where known)."""
    count = getattr(scores, "positive_count", None)  # scores on a cluster: from their pass
    if count is None:
        positive = scores > 0
        degenerate = bool(positive.all() or not positive.any())
    else:
        degenerate = count() in (0, len(scores))
    rates = problem.rate_constraints(scores) if means is None else means + problem.offset
    hard = units.values(rates)
    return HardRateFit(
        x=x,
        result=used[0],
        results=results,
        converged=all(r.converged for r in used),
        met=bool(np.all(hard <= BOUND_EPS)),
        interpolated=t,
        degenerate=degenerate,
        n_data_passes=passes,
        hard=hard,
        used=list(used),
    )


def _top_order(scores, w, max_rate):
    """The rows in the order of a stable sort of ``-scores``, as far as :func:`rate_threshold`
    reads them: the highest scores until their weight exceeds ``max_rate``'s share, with
    every row tied with the last (the tie test), or all rows. Found by a partition, with only
    those rows sorted: a sort of
    all 900000 negatives was 0.06 s of a 0.8 s Neyman-Pearson fit on 1e6 x 20 rows."""
    n = len(scores)
    total = w.sum()
    q = min(n, 2 * int(np.ceil(max_rate * n)) + 2)
    while q < n:
        top = np.argpartition(-scores, q - 1)[:q]
        cut = scores[top].min()
        # Every row above the cut's score is in ``top``; rows tied with the cut may be left
        # out, so only the rows strictly above it are sure to come first. They must weigh
        # more than the bound, with one more row to spare.
        above = top[scores[top] > cut]
        if len(above) and w[above].sum() > max_rate * (1 + 1e-12) * total:
            # The rows up to and including every row tied at the cut: a stable order among
            # ties is by index, which the partition does not keep.
            keep = np.flatnonzero(scores >= cut)
            return keep[np.argsort(-scores[keep], kind="stable")]
        q = min(n, 2 * q)
    return np.argsort(-scores, kind="stable")


def rate_threshold(scores, weights, max_rate) -> float:
    """The lowest threshold ``t`` with ``weighted share of (scores > t) <= max_rate``.

    The share is then the largest that the bound allows (up to ties): a Neyman-Pearson model
    spends its false-positive budget on the training negatives instead of leaving it unused.
    ``t`` lies halfway between two distinct scores, so a score recomputed with other
    rounding stays on its side.
    """
    scores = np.asarray(scores, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = _top_order(scores, w, max_rate)
    s, share = scores[order], np.cumsum(w[order]) / w.sum()
    if len(s) < len(scores) and share[-1] <= max_rate * (1 + 1e-12):
        # (The partition's rows weigh just max_rate, up to the sums' rounding.)
        order = np.argsort(-scores, kind="stable")
        s, share = scores[order], np.cumsum(w[order]) / w.sum()
    # k rows may be positive: the largest k with share[k - 1] <= max_rate, and a tie between
    # row k - 1 and row k would make row k positive too, so back off to a distinct score.
    k = int(np.searchsorted(share, max_rate * (1 + 1e-12), side="right"))
    while 0 < k < len(s) and s[k - 1] == s[k]:
        k -= 1
    if k == len(s):
        return float(s[-1] - max(1.0, abs(s[-1])))
    if k == 0:
        return float(s[0] + max(1e-9, 1e-9 * abs(s[0])))
    return float(0.5 * (s[k - 1] + s[k]))
