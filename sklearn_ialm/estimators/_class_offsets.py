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


def _excess(problem, scores, base):
    """The sum of the constraints' excesses over their bounds on the predictions of
    ``scores`` (0 where every bound holds)."""
    hard = problem.rate_constraints(problem.hard_predictions(scores), base)
    return float(np.maximum(hard - BOUND_EPS, 0.0).sum())


def _moves(z, k):
    """The offset changes of class ``k`` that flip its nearest rows: raised just past the
    margin of each of the ``_FLIP_CANDIDATES`` rows nearest to winning class ``k``, lowered
    just past that of each of the nearest winning it."""
    margin = z[:, k] - np.delete(z, k, axis=1).max(axis=1)  # > 0: class k wins the row
    behind = np.sort(-margin[margin <= 0])[:_FLIP_CANDIDATES]
    ahead = np.sort(margin[margin > 0])[:_FLIP_CANDIDATES]
    # (just past: a tie goes to the first class of the arg-max, as predict's)
    past = lambda m: m * (1 + 1e-9) + 1e-12  # noqa: E731
    return np.concatenate([past(behind), -past(ahead)])


def _fair_offsets(problem, scores, base, max_steps=None):
    """Class offsets that meet every fairness bound on the predictions of ``scores``
    (offsets ``base``), or None: steps of one class's offset, each to the move among
    :func:`_moves` that leaves the least excess (the smaller move of equal ones), while the
    excess falls.

    Where every solve misses the bound by a row or two (wine's 124 rows, two groups of about
    60, per-class demographic parity 0.02: a row moves a group's rate by 0.017), tighter
    soft bounds do not move the predictions (five rescues reached the same solve), and the
    segment to the constant model met the bound 97 % of the way there (test accuracy 0.48).
    Offsets shared by the groups move the predictions of both; the rows they flip decide the
    gaps.
    """
    K = scores.shape[1]
    steps = 10 * K if max_steps is None else max_steps
    delta = np.zeros(K)
    excess = _excess(problem, scores, base)
    for _ in range(steps):
        if excess == 0.0:
            return delta
        z = scores + delta
        best = None
        for k in range(K):
            for move in _moves(z, k):
                trial = delta.copy()
                trial[k] += move
                key = (_excess(problem, scores + trial, base), abs(move))
                if best is None or key < best[0]:
                    best = (key, trial)
        if best is None or best[0][0] >= excess:
            return None
        (excess, _), delta = best
    return delta if excess == 0.0 else None
