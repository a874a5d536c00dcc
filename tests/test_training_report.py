"""The training report's weighing of the constant model (``_at_least_constant``): its quick
test of the log-loss against scipy's ``log_expit``, and the constant returned exactly when
the model found is worse and the constant meets the bound."""

import numpy as np
import pytest
from scipy.special import log_expit

from sklearn_ialm.estimators._binary import (
    _at_least_constant,
    _below_chance,
    _clearly_accurate,
    _clearly_below,
)


def _log_loss(scores, positive, w):
    return float(-np.average(log_expit(np.where(positive, scores, -scores)), weights=w))


def _entropy(positive, w):
    rate = float(np.average(positive, weights=w))
    return float(-(rate * np.log(rate) + (1 - rate) * np.log1p(-rate)))


@pytest.mark.parametrize("seed", range(3))
def test_clearly_below_agrees_with_log_expit(seed):
    """Around the constant's log-loss (scores from useful to adverse, large ones too): the
    quick test says below only when scipy's log-loss is below, and says so wherever that is
    below by more than a millionth."""
    rng = np.random.default_rng(seed)
    n = 20000
    x = rng.normal(size=n)
    positive = rng.random(n) < 1 / (1 + np.exp(-2 * x))
    w = rng.uniform(0.1, 5.0, n)
    constant = _entropy(positive, w)
    said = []
    for scale in np.concatenate([np.linspace(-3, 3, 61), [-200.0, 200.0]]):
        scores = scale * x + rng.normal(0, 0.01, n)
        exact = _log_loss(scores, positive, w)
        below = _clearly_below(scores, positive, w, constant)
        assert not below or exact <= constant
        if exact <= constant * (1 - 1e-6):
            assert below
        said.append(below)
    assert any(said) and not all(said)


class _Stub:
    """What ``_at_least_constant`` reads of an estimator: a demographic-parity report on
    two groups, bound 0.1; counts the reports it is asked for."""

    fit_intercept = True

    def __init__(self, groups):
        self.groups, self.reports = groups, 0
        self.coef_, self.intercept_ = np.ones((1, 2)), np.array([0.5])

    def _steers_hard_rates_after_fit(self, context):
        return True

    def _constraint_report(self, pred, y01, w, context):
        self.reports += 1
        rates = [np.average(pred[self.groups == g], weights=w[self.groups == g]) for g in (0, 1)]
        return np.array([abs(rates[0] - rates[1])])

    def _meets(self, values, context):
        return bool(np.all(values <= 0.1))


def _rows(seed, n=5000):
    """``(x, groups, y01, w)``: a score, two groups, labels that follow the score, weights."""
    rng = np.random.default_rng(seed)
    x, groups = rng.normal(size=n), rng.integers(0, 2, n)
    y01 = (rng.random(n) < 1 / (1 + np.exp(-2 * x))).astype(int)
    return x, groups, y01, rng.uniform(0.5, 2.0, n)


def test_at_least_constant_keeps_a_better_model_without_the_constants_report():
    x, groups, y01, w = _rows(0)
    est = _Stub(groups)
    scores = 2 * x
    assert _at_least_constant(est, scores, y01, w, {}) is scores
    assert est._constant_fallback is None and est.reports == 0
    np.testing.assert_array_equal(est.coef_, np.ones((1, 2)))


def test_at_least_constant_returns_the_constant_when_the_model_is_worse():
    x, groups, y01, w = _rows(1)
    n = len(x)
    est = _Stub(groups)
    scores = -2 * x  # ranks the rows the wrong way round: worse than the positive rate
    out = _at_least_constant(est, scores, y01, w, {})
    rate = np.average(y01 == 1, weights=w)
    logit = np.log(rate / (1 - rate))
    np.testing.assert_array_equal(out, np.full(n, logit))
    label, constant, found = est._constant_fallback
    assert label == int(logit > 0) and est.reports == 1
    assert constant == _entropy(y01 == 1, w) and found == _log_loss(scores, y01 == 1, w)
    np.testing.assert_array_equal(est.coef_, np.zeros((1, 2)))


@pytest.mark.parametrize("seed", range(3))
def test_clearly_accurate_agrees_with_the_sums_by_masks(seed):
    """Accuracy from well below to well above the majority class's share: the quick test
    says accurate only where the exact sums (by masks, as ``_below_chance``) say it is not
    below the majority, and says so wherever it is above by a millionth."""
    rng = np.random.default_rng(seed)
    n = 20000
    w = rng.uniform(0.0, 3.0, n)
    positive = rng.random(n) < 0.3
    total = float(np.sum(w))
    said = []
    for flip in np.linspace(0.5, 0.9, 81):  # the accuracy, about; the majority: 0.7
        predicted = np.where(rng.random(n) < flip, positive, ~positive)
        hits = predicted == positive
        share = float(np.sum(w, where=positive)) / total
        accuracy = float(np.sum(w, where=hits)) / total
        majority = max(share, 1 - share)
        quick = _clearly_accurate(w, hits, positive, total)
        assert not quick or accuracy >= majority - 1e-12
        if accuracy >= majority + 1e-6:
            assert quick
        said.append(quick)
    assert any(said) and not all(said)


class _Chance:
    _judged_by_accuracy = True
    classes_ = np.array([0, 1])


def test_below_chance_speaks_only_below_the_majority():
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.normal(size=n)
    y01 = (rng.random(n) < 1 / (1 + np.exp(-3 * x))).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    assert _below_chance(_Chance(), x, x > 0, y01, w, False) is None
    said = _below_chance(_Chance(), -x, -x > 0, y01, w, False)
    accuracy = np.average((-x > 0) == (y01 == 1), weights=w)
    assert said is not None and f"{accuracy:.4f}" in said and "AUC" in said
