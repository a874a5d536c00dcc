"""The sweep along a segment of models (:func:`_segment_point`) and its parts, against
brute force: the order of its events is numpy's stable sort, and its point is the midpoint
of the first stretch where every constraint, recomputed from the scores there, holds."""

import numpy as np
import pytest

from sklearn_ialm.estimators._hard_rates import _Units
from sklearn_ialm.estimators._segment_sweep import (
    _past_misses,
    _segment_point,
    _stable_order,
    _sweep,
)
from sklearn_ialm.problems import fairness_problem
from sklearn_ialm.problems._numeric import BOUND_EPS


@pytest.mark.parametrize("seed", range(5))
def test_stable_order_is_numpys_stable_sort(seed):
    """Runs of equal values (identical rows, a signed zero beside a zero) keep index order."""
    rng = np.random.default_rng(seed)
    n = 5000
    # Few distinct values: long runs of ties; then some distinct ones, and both zeros.
    t = rng.integers(0, 40, n) / 39.0  # 0.0 among them
    distinct = rng.random(n) < 0.5
    t[distinct] = rng.random(int(distinct.sum()))
    t[rng.integers(0, n, 50)] = -0.0
    expected = np.argsort(t, kind="stable")
    assert np.any(t[expected][1:] == t[expected][:-1])  # the data has ties
    np.testing.assert_array_equal(_stable_order(t), expected)


def test_stable_order_without_ties_and_empty():
    t = np.random.default_rng(0).random(1000)
    np.testing.assert_array_equal(_stable_order(t), np.argsort(t, kind="stable"))
    assert len(_stable_order(np.zeros(0))) == 0


def _brute_point(problem, units, z_in, z_out, offset):
    """The midpoint of the first stretch of positive length between distinct event times
    where the constraints of the scores there all hold: scores recomputed, no sweep."""
    moving = (z_in > 0) != (z_out > 0)
    times = np.unique(z_in[moving] / (z_in[moving] - z_out[moving]))
    bounds = np.concatenate([[0.0], times, [1.0]])
    for i in range(len(bounds) - 1):
        if i and bounds[i + 1] <= bounds[i]:
            continue
        t = 0.0 if i == 0 else 0.5 * (bounds[i] + bounds[i + 1])
        z = (1 - t) * z_in + t * z_out if i else z_in
        if np.all(units.values(problem.rate_constraints(z, offset=offset)) <= BOUND_EPS):
            return t
    return 0.5 * (bounds[-2] + 1.0)


def _problem(rng, n, kind, n_groups):
    X = rng.normal(size=(n, 3))
    X[n // 2 : n // 2 + n // 5] = X[: n // 5]  # identical rows: events at the same t
    g = rng.integers(0, n_groups, n)
    g[n // 2 : n // 2 + n // 5] = g[: n // 5]
    y = (X[:, 0] + rng.normal(0, 1, n) > 0).astype(int)
    y[n // 2 : n // 2 + n // 5] = y[: n // 5]
    w = rng.uniform(0.2, 3.0, n)  # weights: every row its own contribution
    pb = fairness_problem(
        X, y, X, g, bound=0.05, constraint=kind, sample_weight=w, constraint_sample_weight=w
    )
    return pb, X, g


def _ends(rng, X, g):
    """Scores that set group 0 apart (far from parity), and scores of the features only."""
    z_in = 0.5 * X @ rng.normal(size=3) + 2.0 * (g == 0) - 1.0
    z_out = 0.5 * X @ rng.normal(size=3) + rng.normal(0, 0.1)
    return z_in, z_out


@pytest.mark.parametrize(
    "kind, n_groups",
    [("demographic_parity", 2), ("equalized_odds", 3), ("demographic_parity", 5)],
)
@pytest.mark.parametrize("seed", range(4))
def test_segment_point_is_the_first_stretch_that_meets(kind, n_groups, seed):
    """On random segments (a model tied to one group's rows towards one that is not), the
    sweep's point is brute force's: every stretch's constraints recomputed from its scores.
    Five groups: a band with a free level (``_Units``' bands)."""
    rng = np.random.default_rng(seed)
    pb, X, g = _problem(rng, 400, kind, n_groups)
    units = _Units(pb)
    z_in, z_out = _ends(rng, X, g)
    offset = pb.offset
    t = _segment_point(pb, units, z_in, z_out, offset)
    assert t == _brute_point(pb, units, z_in, z_out, offset)


def test_segment_point_lands_inside_on_some_segment():
    """The random segments above are not all trivial: on some the point is strictly inside
    (neither end's stretch)."""
    inside = 0
    for seed in range(4):
        rng = np.random.default_rng(seed)
        pb, X, g = _problem(rng, 400, "demographic_parity", 2)
        z_in, z_out = _ends(rng, X, g)
        t = _segment_point(pb, _Units(pb), z_in, z_out, pb.offset)
        inside += 0.0 < t < 1.0
    assert inside


def _events(pb, z_in, z_out):
    q_out = z_out > 0
    moving = np.flatnonzero((z_in > 0) != q_out)
    t_event = z_in[moving] / (z_in[moving] - z_out[moving])
    return moving, t_event, q_out


@pytest.mark.parametrize("kind, n_groups", [("demographic_parity", 2), ("demographic_parity", 5)])
def test_past_misses_is_the_full_sweep_or_defers_to_it(kind, n_groups):
    """Passing over the buckets of event times where no model meets the bound gives the
    full sweep's point, or None; on most of these segments it passes over some."""
    passed = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        pb, X, g = _problem(rng, 3000, kind, n_groups)
        units = _Units(pb)
        z_in, z_out = _ends(rng, X, g)
        moving, t_event, q_out = _events(pb, z_in, z_out)
        start = pb.rate_constraints(z_in, offset=pb.offset)
        assert not np.all(units.values(start[None]) <= BOUND_EPS)  # the start misses
        full = _sweep(pb.W, units, moving, t_event, q_out, start)
        quick = _past_misses(pb.W, units, moving, t_event, q_out, start)
        assert quick is None or quick == full
        passed += quick is not None
    assert passed >= 4


def test_segment_point_where_values_reach_the_bound_exactly():
    """Two groups of 1000 rows, unweighted, bound 0.05: the gap between selection rates
    reaches the bound exactly (values within rounding of 0): the point is brute force's."""
    rng = np.random.default_rng(0)
    n = 2000
    g = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 2))
    y = (rng.random(n) < 0.5).astype(int)
    pb = fairness_problem(X, y, X, g, bound=0.05, constraint="demographic_parity")
    units = _Units(pb)
    z_in = X[:, 0] + 1.5 * (g == 0) - 0.75
    z_out = X[:, 0] + rng.normal(0, 0.3, n)
    t = _segment_point(pb, units, z_in, z_out, pb.offset)
    assert 0 < t < 1 and t == _brute_point(pb, units, z_in, z_out, pb.offset)
    z = (1 - t) * z_in + t * z_out
    rates = [np.mean(z[g == k] > 0) for k in (0, 1)]
    assert abs(rates[0] - rates[1]) <= 0.05 + 1e-12


def test_segment_point_finds_a_dip_within_one_bucket_of_event_times():
    """Within one bucket of event times (width 1/1024) the bound is met, then missed again
    before the bucket ends (group 0's rows flip first, then group 1's): the bucket's value
    at its end misses, the point is inside it."""
    n = 2000
    g = np.repeat([0, 1], n // 2)
    X = np.column_stack([np.arange(n, dtype=float), g])
    y = np.tile([0, 1], n // 2)
    pb = fairness_problem(X, y, X, g, bound=0.0505, constraint="demographic_parity")
    units = _Units(pb)
    # Group 0: every row positive; group 1: half. Rows flip at the times ``t`` given.
    z_in = np.where((g == 0) | (np.arange(n) < 1500), 1.0, -1.0)
    t = np.full(n, np.nan)
    t[:460] = 0.5 + 0.0004 * np.arange(460) / 460  # group 0 down to 0.54: met
    t[1000:1460] = 0.5006 + 0.0003 * np.arange(460) / 460  # group 1 down to 0.04: missed
    # Earlier, in other buckets: pairs of group 1's rows flip each way (its rate stays).
    t[1460:1500] = np.linspace(0.1, 0.3, 40)
    t[1500:1540] = t[1460:1500] + 1e-4
    inverse = 1.0 / np.where(np.isnan(t), 1.0, t)  # t = z_in / (z_in - z_out)
    z_out = np.where(np.isnan(t), z_in, z_in * (1.0 - inverse))
    point = _segment_point(pb, units, z_in, z_out, pb.offset)
    assert 0.5 < point < 0.5006
    assert point == _brute_point(pb, units, z_in, z_out, pb.offset)
    # The buckets of the flipping pairs are passed over: the point without the full sweep.
    moving, t_event, q_out = _events(pb, z_in, z_out)
    start = pb.rate_constraints(z_in, offset=pb.offset)
    assert _past_misses(pb.W, units, moving, t_event, q_out, start) == point


@pytest.mark.parametrize(
    "kind, n_groups",
    [("demographic_parity", 2), ("equalized_odds", 3), ("demographic_parity", 5)],
)
@pytest.mark.parametrize("seed", range(3))
def test_segment_point_from_known_means_is_the_same(kind, n_groups, seed):
    """The start's means given (the steering's hard check of the same scores): the point
    of the sweep that reads them from the scores, at offsets other than the problem's."""
    rng = np.random.default_rng(seed)
    pb, X, g = _problem(rng, 400, kind, n_groups)
    units = _Units(pb)
    z_in, z_out = _ends(rng, X, g)
    means = pb.rate_constraints(z_in, offset=0.0)
    for offset in (pb.offset, pb.offset + rng.uniform(-0.05, 0.05, pb.n_constraints)):
        start = pb.rate_constraints(z_in, offset=offset)
        np.testing.assert_array_equal(means + offset, start)
        t = _segment_point(pb, units, z_in, z_out, offset, means)
        assert t == _segment_point(pb, units, z_in, z_out, offset)
        assert t == _brute_point(pb, units, z_in, z_out, offset)
