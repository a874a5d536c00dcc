"""The fit's report on its training rows, computed with shared work: the groups' codes and
totals built once for every report of the same rows (:class:`MetricRows`), and the intercept
moved off ties (``_away_from_ties``) with neither moved copy of the scores formed, nor the
accuracies read where the bound alone decides. Each against the direct computation:
``fairness_metric`` on every call, and the two full reports of the moved scores."""

import numpy as np
import pytest

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._binary import _away_from_ties
from sklearn_ialm.problems import fairness_metric
from sklearn_ialm.problems._fairness_kinds import _check_form
from sklearn_ialm.problems._fairness_metric import metric_rows

KINDS = [
    ("demographic_parity", "difference"),
    ("demographic_parity", "ratio"),
    ("equalized_odds", "difference"),
    ("true_positive_rate_parity", "ratio"),
    ("error_rate_parity", "difference"),
    ("positive_share", None),
    ("disparate_impact", None),
]


def _rows(seed, n=3000, k=3):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, k, n).astype(np.int8)
    y01 = (rng.random(n) < 0.3 + 0.1 * groups).astype(np.int64)
    w = rng.uniform(0.2, 3.0, n)
    return rng, groups, y01, w


@pytest.mark.parametrize(("kind", "form"), KINDS)
def test_metric_rows_equal_fairness_metric_on_each_prediction(kind, form):
    rng, groups, y01, w = _rows(0)
    rows = metric_rows(kind, y01, groups, w)
    checked = _check_form(kind, form)
    for protected in ([0], [1, 2], [0, 1, 2]):
        for pred in (rng.random(len(y01)) < 0.4, rng.random(len(y01))):
            pred = pred.astype(float)
            direct = fairness_metric(
                kind, y01, pred, groups, form=form, sample_weight=w, protected=protected
            )
            shared = rows.metric(kind, checked, pred, np.asarray(protected))
            assert shared == direct or (np.isnan(shared) and np.isnan(direct))


def _estimator(kind, form, bound):
    est = FairLogisticClassifier(constraint=kind, form=form, bound=bound, rate="hard")
    est.coef_, est.intercept_ = np.ones((1, 1)), np.array([0.25])
    return est


def test_constraint_report_cache_follows_the_rows():
    """Reports in one context equal those in a fresh context each, also when the labels or
    weights given change between calls (the kept rows are not those)."""
    rng, groups, y01, w = _rows(1)
    est = _estimator("equalized_odds", None, 0.1)
    shared = {"codes": groups, "protected": np.array([0, 2]), "bound": 0.1}
    other_y, other_w = rng.permutation(y01), w[::-1].copy()
    for labels, weights in ((y01, w), (y01, w), (other_y, w), (other_y, other_w), (y01, w)):
        pred = (rng.random(len(y01)) < 0.5).astype(float)
        fresh = {"codes": groups, "protected": np.array([0, 2]), "bound": 0.1}
        kept = est._constraint_report(pred, labels, weights, shared)
        direct = est._constraint_report(pred, labels, weights, fresh)
        np.testing.assert_array_equal(kept, direct)
    assert shared["report_rows"][1] is y01 and shared["report_rows"][2] is w


def _direct_away_from_ties(est, scores, y01, w, context):
    """The intercept moved off ties by the two full reports of the moved scores (the
    definition: the side that meets the bound, else the more accurate, else the first)."""
    big = max(1.0, float(np.max(np.abs(scores), initial=0.0)))
    if not np.any(np.abs(scores) <= 1e-9 * big):
        return scores, est.intercept_
    best = None
    for step in (1e-8 * big, -1e-8 * big):
        moved = scores + step
        pred = moved > 0
        fresh = dict(context)
        fresh.pop("report_rows", None)
        hard = est._constraint_report(pred.astype(float), y01, w, fresh)
        accuracy = float(np.average(pred == (y01 == 1), weights=w))
        key = (est._meets(hard, context), accuracy)
        if best is None or key > best[0]:
            best = (key, step, moved)
    return best[2], est.intercept_ + best[1]


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize(("kind", "form"), KINDS)
def test_away_from_ties_equals_the_two_full_reports(kind, form, unit):
    """Rows on the boundary (identical rows: exact zeros, and scores within the step of
    0 on both sides), weights, three groups: the same scores and intercept as the two full
    reports, at bounds that one side meets, both or neither, with the tie rows' labels
    favouring either side (so that both sides, and both ways of deciding, are taken).
    Weights 1: the second side's report from the first's counts."""
    rng, groups, y01, w = _rows(2)
    if unit:
        w = np.ones(len(y01))
    n = len(y01)
    scores = rng.normal(0, 2, n)
    on = rng.random(n) < 0.2
    # Ties mostly in group 2: the side taken moves its rates.
    scores[on & (groups == 2)] = 0.0
    near = on & (groups == 1) & (rng.random(n) < 0.3)
    scores[near] = rng.choice([-4e-8, 0.0, 3e-8, 1e-7], near.sum())
    protected = np.array([2])
    sides = set()
    for label in (0, 1):
        y = y01.copy()
        y[on & (rng.random(n) < 0.9)] = label
        est = _estimator(kind, form, 0.0)
        plain = {"codes": groups, "protected": protected}
        values = [
            est._constraint_report((scores > -s).astype(float), y, w, dict(plain))[0]
            for s in (1e-8 * np.max(np.abs(scores)), -1e-8 * np.max(np.abs(scores)))
        ]
        assert values[0] != values[1]
        low, high = min(values), max(values)
        for bound in (0.5 * (low + high), high + 0.01, low - 0.01):
            est = _estimator(kind, form, bound)
            context = dict(plain, bound=bound)
            expected, intercept = _direct_away_from_ties(est, scores, y, w, context)
            got = _away_from_ties(est, scores.copy(), y, w, context)
            np.testing.assert_array_equal(got, expected)
            assert est.intercept_[0] == intercept[0]
            sides.add(float(np.sign(est.intercept_[0] - 0.25)))
    assert sides == {-1.0, 1.0}


@pytest.mark.parametrize("kind", ["demographic_parity", "equalized_odds", "positive_share"])
def test_soft_rates_and_cap_from_given_probabilities(kind):
    """``rate_constraints`` and ``_shift_cap`` given ``expit(scores)`` (the steering's one
    evaluation for both) equal those that evaluate it; a different ``proba`` is read."""
    from scipy.special import expit

    from sklearn_ialm.estimators._hard_rates import _Units
    from sklearn_ialm.estimators._steering_bounds import _CAP_SHARES, _shift_cap
    from sklearn_ialm.problems import fairness_problem

    rng, groups, y01, w = _rows(3, n=2000)
    X = rng.normal(size=(len(y01), 3))
    pb = fairness_problem(
        X, y01, X, groups, bound=0.05, constraint=kind, sample_weight=w,
        constraint_sample_weight=w,
    )  # fmt: skip
    units = _Units(pb)
    scores = X @ rng.normal(size=3) + rng.normal(0, 0.5)
    proba = expit(scores)
    base = pb.offset.copy()
    direct = pb.rate_constraints(scores, hard=False, offset=base)
    np.testing.assert_array_equal(
        pb.rate_constraints(scores, hard=False, offset=base, proba=proba), direct
    )
    other = pb.rate_constraints(scores, hard=False, offset=base, proba=1.0 - proba)
    assert np.any(other != direct)
    column_means = pb.rate_constraints(np.ones(len(y01))) - pb.offset
    for depth in range(len(_CAP_SHARES)):
        d = np.full(len(units), depth)
        np.testing.assert_array_equal(
            _shift_cap(column_means, units, scores, base, d, proba=proba),
            _shift_cap(column_means, units, scores, base, d),
        )


@pytest.mark.parametrize(("kind", "form"), KINDS)
def test_unit_weights_take_no_products_and_change_no_bit(kind, form):
    """Every weight 1: the rates summed without the products by the weights equal, to the
    bit, those summed with them (and ``fairness_metric`` without weights takes that way)."""
    rng, groups, y01, _ = _rows(4)
    ones = np.ones(len(y01))
    by_products = metric_rows(kind, y01, groups, ones, unit=False)
    unit = metric_rows(kind, y01, groups, ones)
    assert unit.rate_weights is None and by_products.rate_weights is ones
    checked = _check_form(kind, form)
    for protected in ([0], [1, 2]):
        for pred in ((rng.random(len(y01)) < 0.4).astype(float), rng.random(len(y01))):
            expected = by_products.metric(kind, checked, pred, np.asarray(protected))
            got = unit.metric(kind, checked, pred, np.asarray(protected))
            direct = fairness_metric(kind, y01, pred, groups, form=form, protected=protected)
            assert got == expected == direct or np.isnan([got, expected, direct]).all()


@pytest.mark.parametrize("seed", range(20))
def test_more_accurate_reads_the_two_averages(seed):
    """The side of ``_more_accurate`` (from the tie rows, or both averages where rounding
    could decide) is that of the two weighted averages compared directly: few tie rows and
    many, weights or none, and ties balanced exactly (equal accuracies)."""
    from sklearn_ialm.estimators._binary import _more_accurate

    rng = np.random.default_rng(seed)
    n = 5000
    y01 = (rng.random(n) < 0.4).astype(np.int64)
    w = [None, np.ones(n)][seed % 4] if seed % 4 < 2 else rng.choice([0.5, 1.0, 2.0], n)
    first = rng.random(n) < 0.5
    second = first.copy()
    k = [0, 1, 2, 30, 2000][seed % 5]
    on = rng.choice(np.flatnonzero(first), k, replace=False)
    if seed % 3 == 0 and k >= 2:
        # One positive and one negative tie row of equal weight: a gain of exactly 0.
        on = np.concatenate([
            rng.choice(np.flatnonzero(first & (y01 == 1)), 1),
            rng.choice(np.flatnonzero(first & (y01 == 0)), 1),
        ])  # fmt: skip
        if w is not None:
            w[on] = 1.0
    second[on] = False
    accuracy = [np.average(p == (y01 == 1), weights=w) for p in (first, second)]
    assert _more_accurate([first, second], np.flatnonzero(first != second), y01, w) == int(
        accuracy[1] > accuracy[0]
    )


def test_more_accurate_follows_rounding_where_the_accuracies_are_equal():
    """Two tie rows of equal weight, one of each class: equal accuracies, whose averages
    (sums in another order) can differ in their last bit; the side is that of the averages
    as computed, as where both were always computed."""
    from sklearn_ialm.estimators._binary import _more_accurate

    by_rounding = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = 5000
        positive = rng.random(n) < 0.4
        w = rng.uniform(0.1, 3.0, n)
        first = rng.random(n) < 0.5
        a = rng.choice(np.flatnonzero(first & positive))
        b = rng.choice(np.flatnonzero(first & ~positive))
        w[b] = w[a]
        second = first.copy()
        second[[a, b]] = False
        accuracy = [np.average(p == positive, weights=w) for p in (first, second)]
        by_rounding += accuracy[1] > accuracy[0]
        assert _more_accurate(
            [first, second], np.flatnonzero(first != second), positive.astype(int), w
        ) == int(accuracy[1] > accuracy[0])
    assert by_rounding  # (the last bit decided somewhere)


@pytest.mark.parametrize(("kind", "form"), KINDS)
def test_counts_off_are_the_counts_of_the_moved_predictions(kind, form):
    """Weights 1: the counts less those of the rows turned negative are, to the bit, the
    counts of the moved predictions, and so is the metric; other weights: None."""
    rng, groups, y01, w = _rows(5)
    ones = np.ones(len(y01))
    rows = metric_rows(kind, y01, groups, ones)
    first = rng.random(len(y01)) < 0.5
    off = rng.choice(np.flatnonzero(first), 300, replace=False)
    second = first.copy()
    second[off] = False
    counts = rows.counts(kind, first.astype(float))
    moved = rows.counts_off(kind, counts, off)
    direct = rows.counts(kind, second.astype(float))
    assert moved.keys() == direct.keys()
    for key, value in direct.items():
        np.testing.assert_array_equal(np.asarray(moved[key]), np.asarray(value))
    checked = _check_form(kind, form)
    protected = np.array([1, 2])
    got = rows.metric_of_counts(kind, checked, moved, protected)
    expected = fairness_metric(kind, y01, second, groups, form=form, protected=[1, 2])
    assert got == expected or (np.isnan(got) and np.isnan(expected))
    assert metric_rows(kind, y01, groups, w).counts_off(kind, counts, off) is None
