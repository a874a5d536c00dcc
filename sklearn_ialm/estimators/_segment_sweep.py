"""The hard values along a segment of models, in one sweep with no data pass: the first
point of the segment where every bound on predictions holds (:func:`_segment_point`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..problems._numeric import BOUND_EPS


def _segment(problem):
    """:func:`_segment_point` for ``problem`` (a problem whose rows are on a cluster
    searches the segment with its own reductions)."""
    return getattr(problem, "segment_point", partial(_segment_point, problem))


def _segment_point(problem, units, z_in, z_out, offset, means=None):
    """The first stretch of the segment from ``z_in`` to ``z_out`` where every hard value is
    ``<= 0``, and its midpoint ``t`` (``z_out`` at ``t = 1`` is feasible). ``means``, where
    known: ``problem.rate_constraints(z_in, offset=0.0)`` (the hard values at ``z_in`` are
    then read from no further pass).

    Scores are linear in ``t``, so row ``j`` changes prediction once at most, at
    ``t_j = z_in_j / (z_in_j - z_out_j)``; between two such events the hard values are
    constant. Sorting the events and accumulating each row's contribution ``+-W[j] / n``
    gives every hard value on the segment exactly, in one sweep. The midpoint of the stretch
    keeps every score away from 0, so recomputing a score with other rounding changes no
    prediction; a stretch of no length (between the events of identical rows) is skipped.
    The events of the stretches where no model can meet the bound are not sorted
    (:func:`_past_misses`); the point is the same.
    """
    # (Whether each row is positive at z_in only for this: one bool n-vector less.)
    moving = np.flatnonzero((z_in > 0) != (z_out > 0))
    q_out = z_out > 0
    # (np.take throughout: indexing with an index array took up to ten times as long, 0.02 s
    # of the sweep's 0.056 s on 218717 events.)
    at_in = np.take(z_in, moving)
    t_event = at_in / (at_in - np.take(z_out, moving))
    del at_in
    start = problem.rate_constraints(z_in, offset=offset) if means is None else means + offset
    t = None
    if len(moving) and not np.all(units.values(start[None]) <= BOUND_EPS):
        t = _past_misses(problem.W, units, moving, t_event, q_out, start)
    return _sweep(problem.W, units, moving, t_event, q_out, start) if t is None else t


def _sweep(W, units, moving, t_event, q_out, start):
    """:func:`_segment_point`'s point by the sweep over every event, in order."""
    n = len(q_out)
    order = _stable_order(t_event)
    moving, t_event = np.take(moving, order), np.take(t_event, order)
    # In place, one (events x constraints) matrix: nearly every row may move, and each such
    # matrix is several vectors of all rows (the fit's memory, see tests/test_memory.py).
    hard = _contributions(W, moving, q_out, n)
    np.cumsum(hard, axis=0, out=hard)
    hard += start  # hard[i]: after the first i + 1 events
    meets = _all_met(units.values(hard))
    meets = np.concatenate([[bool(np.all(units.values(start[None]) <= BOUND_EPS))], meets])
    bounds = np.concatenate([[0.0], t_event, [1.0]])
    # Rows with equal scores at both ends (identical rows) change prediction at the same t:
    # the values between two of their events, an empty stretch, belong to no model.
    ok = np.flatnonzero(meets & (np.diff(bounds) > 0))
    i = int(ok[0]) if len(ok) else len(moving)
    return 0.5 * (bounds[i] + bounds[i + 1]) if i > 0 else 0.0


def _contributions(W, rows, q_out, n):
    """Each event's change of the constraint values, ``+-W[j] / n`` (one new matrix)."""
    hard = np.take(W, rows, axis=0)
    # The rows that turn negative change sign, exactly as a product with -1.0 (and with
    # 1.0 the others stay): no float vector of the signs beside the matrix.
    np.negative(hard, out=hard, where=~np.take(q_out, rows)[:, None])
    hard /= n
    return hard


#: Buckets of event times over ``[0, 1]`` that :func:`_past_misses` bounds (a power of two:
#: ``t * _BUCKETS`` is exact).
_BUCKETS = 1024


def _past_misses(W, units, moving, t_event, q_out, start):
    """:func:`_sweep`'s point, with only the events sorted from the first bucket of event
    times where a model may meet the bound on; None where rounding could decide a stretch
    (:func:`_sweep` then decides), or no bucket is passed over. The start must miss.

    ``moving`` and ``t_event`` are put in that order in place, the events of each bucket in
    their order (:func:`_sweep` then reads the events in the same order: by a stable sort of
    the times, whose ties are in one bucket): not held in both orders beside the events'
    matrix (the fit's memory, see tests/test_memory.py).

    A strongly binding parity bound (dense 1e6 x 20) met the bound after 204733 of 218717
    events, whose sort was 0.015 s of the sweep's 0.03 s. Within a bucket every value is at
    least its value before the bucket plus the negative contributions of the bucket's
    events; where that misses the bound by more than the rounding of either sum, no model of
    the bucket meets it. Either way a value is a sum of at most ``k = len(moving) +
    _BUCKETS + 2`` terms, within ``k eps / 2`` times the sum of their magnitudes of its
    exact value: the sweep's values and these differ by less than ``k eps`` times that sum,
    a quarter of the margin ``2 delta`` asked here; a value beyond it from the bound is on
    the same side of it in both.
    """
    n, m = len(q_out), W.shape[1]
    bucket = np.minimum((t_event * _BUCKETS).astype(np.intp), _BUCKETS - 1)
    counts = np.bincount(bucket, minlength=_BUCKETS)
    by_bucket = np.argsort(bucket.astype(np.uint16), kind="stable")  # a radix sort
    del bucket
    t_event[:] = np.take(t_event, by_bucket)
    moving[:] = np.take(moving, by_bucket)
    del by_bucket
    hard = _contributions(W, moving, q_out, n)
    full = np.flatnonzero(counts)
    firsts = np.cumsum(counts)[full] - counts[full]
    sums, negative = np.zeros((_BUCKETS, m)), np.zeros((_BUCKETS, m))
    sums[full] = np.add.reduceat(hard, firsts, axis=0)
    for k in range(m):  # (column by column: no second matrix of the events)
        negative[full, k] = np.add.reduceat(np.minimum(hard[:, k], 0.0), firsts)
    before = start + np.cumsum(sums, axis=0) - sums  # the values before each bucket
    magnitude = float(np.max(np.sum(sums - 2.0 * negative, axis=0))) + np.max(np.abs(start))
    delta = 2.0 * (len(moving) + _BUCKETS + 4) * np.finfo(float).eps * 1.01 * magnitude
    misses = ~_all_met(units.values(before + negative), BOUND_EPS + 2.0 * delta)
    k0 = int(np.argmin(misses)) if not misses.all() else _BUCKETS
    passed = int(np.sum(counts[:k0]))
    if passed == 0:
        return None
    last = float(np.max(t_event[:passed]))  # the last event passed over
    if passed == len(t_event):
        return 0.5 * (last + 1.0)  # no model meets the bound: as the sweep says
    rest = _stable_order(t_event[passed:])
    times = np.take(t_event[passed:], rest)
    values = np.take(hard[passed:], rest, axis=0)
    del hard
    np.cumsum(values, axis=0, out=values)
    values += before[k0]
    values = units.values(values)
    met = _all_met(values, BOUND_EPS - 2.0 * delta)
    unsure = ~met & _all_met(values, BOUND_EPS + 2.0 * delta)
    after = np.concatenate([times[1:], [1.0]])
    stretch = after > times  # the stretch after each event has a length
    found = np.flatnonzero(stretch & met)
    end = int(found[0]) if len(found) else len(times)
    if np.any((stretch & unsure)[:end]):
        return None
    return 0.5 * (times[end] + after[end]) if len(found) else 0.5 * (times[-1] + 1.0)


def _stable_order(t):
    """``np.argsort(t, kind="stable")``, by an unstable sort whose runs of equal values are
    put back in index order: on 218717 events (dense 1e6 x 20, a strongly binding parity
    bound) the stable sort took 0.024 s, the unstable one 0.015 s."""
    order = np.argsort(t)
    s = t[order]
    tied = s[1:] == s[:-1]
    if tied.any():
        # The positions in a run of equal values (identical rows), each run then sorted by
        # index: a lexicographic sort of those positions only, by value, then by index.
        inside = np.zeros(len(t), bool)
        inside[1:] |= tied
        inside[:-1] |= tied
        at = np.flatnonzero(inside)
        order[at] = order[at][np.lexsort((order[at], s[at]))]
    return order


def _all_met(values, bound=BOUND_EPS):
    """Per row of unit ``values`` (events x units), whether every unit is ``<= bound``:
    column by column (``np.all(..., axis=1)`` over few columns took ten times as long)."""
    met = values[:, 0] <= bound if values.shape[1] else np.ones(len(values), bool)
    for k in range(1, values.shape[1]):
        met &= values[:, k] <= bound
    return met
