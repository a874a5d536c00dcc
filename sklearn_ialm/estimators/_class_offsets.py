"""Class offsets: a number added to every row's score of a class (to ``intercept_``), which
moves the predictions of a multi-class model without a solve. Neyman-Pearson's offsets meet
its class-error bounds (:func:`_np_offsets`); a fairness fit whose solves all missed the
bound on predictions by a few rows looks for offsets that meet it (:func:`_fair_offsets`)
before it moves towards the constant model.
"""

from __future__ import annotations

import numpy as np

from ..problems._numeric import BOUND_EPS

#: The rows, nearest first, that a candidate move of one class's offset may flip (each a
#: candidate of :func:`_fair_offsets`' step).
_FLIP_CANDIDATES = 4


def _np_offsets(problem, scores, sw, bounds, max_sweeps=50):
    """Per-class score offsets that meet every class-error bound on the training rows, or
    None if the sweeps find none.

    Each bounded class's offset is raised in turn to the least value that meets its bound
    given the others' (a weighted quantile of its rows' margins); none is lowered (a class
    whose training error is under its bound keeps the solve's scores: lowering them to spend
    the bound on digits cost 0.7 points of test accuracy for nothing on the training rows).
    Raising one class's offset only raises the others' errors, so the sweeps end at the
    least offsets that meet every bound when some do; bounds on classes that offsets alone
    cannot tell apart raise each other's offsets without end (None).
    """
    delta = np.zeros(scores.shape[1])
    y = problem.y
    for _ in range(max_sweeps):
        moved = False
        for k, alpha in bounds.items():
            rows = y == k
            z = scores[rows] + delta
            # Class k wins a row where its score is above every other (a tie goes to the
            # first class of the arg-max: counted as an error here whichever it is).
            margin = np.delete(z, k, axis=1).max(axis=1) - z[:, k]
            w = sw[rows] / sw[rows].sum()
            order = np.argsort(-margin, kind="stable")
            # The rows of the largest margins stay errors while their weight fits in alpha.
            allowed = int(np.searchsorted(np.cumsum(w[order]), alpha + 1e-12, side="right"))
            if allowed >= len(order):
                continue
            need = margin[order[allowed]]
            step = need + 1e-9 * max(1.0, abs(need))
            if step > 0:
                delta[k] += step
                moved = True
        if not moved:
            return delta
    return None


class _Flips:
    """The constraint values of the predictions of ``scores + delta`` and, for each class,
    how moving its offset past its nearest rows changes them: each row's share of a cell's
    rate (``omega / n``) times the constraints' weights of the class it leaves and of the
    class it joins. A candidate reads the rows it flips alone, not every row (a step of
    :func:`_fair_offsets` tries ``2 K _FLIP_CANDIDATES`` of them: read whole, 80 reads of
    the scores a step on 10 classes)."""

    def __init__(self, problem, scores, base):
        self.problem, self.scores, self.base = problem, scores, base
        self.share = problem.omega / len(problem.omega)

    def at(self, delta):
        """The constraint values at offsets ``delta``; ``(rows' classes, runners-up,
        margins over the runner-up)`` kept for :meth:`moves`."""
        problem, z = self.problem, self.scores + delta
        n = len(z)
        rows = np.arange(n)
        top = np.argmax(z, axis=1)  # (ties to the first class, as predict's)
        rest = z.copy()
        rest[rows, top] = -np.inf
        second = np.argmax(rest, axis=1)
        self.z, self.top, self.second = z, top, second
        self.best, self.runner = z[rows, top], rest[rows, second]
        return problem.class_rate_constraints(top, self.base)

    def moves(self, k):
        """``(move, change of the constraint values)`` of class ``k``'s offset: raised just
        past the margin of each of its ``_FLIP_CANDIDATES`` nearest rows that another class
        wins, lowered just past that of each of the nearest it wins."""
        M, cells, share = self.problem.M, self.problem.cells, self.share
        wins = self.top == k
        # (how far below its row's winner, or above its runner-up, class k's score is)
        gap = np.where(wins, self.z[:, k] - self.runner, self.best - self.z[:, k])
        out = []
        for side, joins, sign in ((~wins, None, 1.0), (wins, self.second, -1.0)):
            idx = np.flatnonzero(side)
            if not len(idx):
                continue
            near = idx[np.argsort(gap[idx], kind="stable")[:_FLIP_CANDIDATES]]
            leave = self.top[near] if joins is None else np.full(len(near), k)
            join = np.full(len(near), k) if joins is None else joins[near]
            parts = share[near, None] * (M[cells[near], join] - M[cells[near], leave])
            for j, change in enumerate(np.cumsum(parts, axis=0)):
                # (just past: a tie goes to the first class of the arg-max, as predict's)
                out.append((sign * (gap[near[j]] * (1 + 1e-9) + 1e-12), change))
        return out


def _excess(values):
    """The sum of the constraints' excesses over their bounds (0 where every bound holds)."""
    return float(np.maximum(values - BOUND_EPS, 0.0).sum())


def _fair_offsets(problem, scores, base, max_steps=None):
    """Class offsets that meet every fairness bound on the predictions of ``scores``
    (offsets ``base``), or None: steps of one class's offset, each to the move among
    :meth:`_Flips.moves` that leaves the least excess (the smaller move of equal ones),
    while the excess falls (read on every row after each step).

    Where every solve misses the bound by a row or two (wine's 124 rows, two groups of about
    60, per-class demographic parity 0.02: a row moves a group's rate by 0.017), tighter
    soft bounds do not move the predictions (five rescues reached the same solve), and the
    segment to the constant model met the bound 97 % of the way there (test accuracy 0.48).
    Offsets shared by the groups move the predictions of both; the rows they flip decide the
    gaps.
    """
    K = scores.shape[1]
    steps = 10 * K if max_steps is None else max_steps
    flips = _Flips(problem, scores, base)
    delta = np.zeros(K)
    values = flips.at(delta)
    excess = _excess(values)
    for _ in range(steps):
        if excess == 0.0:
            return delta
        best = None
        for k in range(K):
            for move, change in flips.moves(k):
                key = (_excess(values + change), abs(move))
                if best is None or key < best[0]:
                    best = (key, k, move)
        if best is None:
            return None
        trial = delta.copy()
        trial[best[1]] += best[2]
        trial_values = flips.at(trial)
        if _excess(trial_values) >= excess:
            return None
        delta, values, excess = trial, trial_values, _excess(trial_values)
    return delta if excess == 0.0 else None
