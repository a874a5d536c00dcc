"""The sweep along a segment of models (:func:`_segment_point`) and its parts, against
brute force: the order of its events is numpy's stable sort, and its point is the midpoint
of the first stretch where every constraint, recomputed from the scores there, holds."""

import numpy as np
import pytest

from sklearn_ialm.estimators._hard_rates import _segment_point, _stable_order, _Units
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
