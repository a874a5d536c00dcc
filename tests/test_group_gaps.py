"""Five groups of Adult's shares, a few dozen positives in the smallest (issue 42, Adult by
race): a group's true-positive rate on predictions parts from its soft rate by a different
amount in each group, so that no bound on the soft rates moved for all groups alike meets
the bound on predictions; moved group by group, a solve of the surrogate does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fairlearn.metrics import equalized_odds_difference, true_positive_rate_difference
from sklearn.exceptions import ConvergenceWarning

from sklearn_ialm import FairLogisticClassifier

_METRICS = {
    "true_positive_rate_parity": true_positive_rate_difference,
    "equalized_odds": equalized_odds_difference,
}


def five_groups(n, in_x, seed=0):
    """``(X, y, groups)``: five groups of 85, 9.5, 3, 1.25 and 1.25 % of the rows (Adult's
    races), eight standard-normal features, the first leaning with the group, a logistic
    label on the first three (about a third positive: 20-35 positives in each small group
    at 10000 rows); the group one-hot in X (``in_x``) or not."""
    rng = np.random.default_rng(seed)
    groups = rng.choice(5, size=n, p=[0.85, 0.095, 0.03, 0.0125, 0.0125])
    X = rng.standard_normal((n, 8))
    X[:, 0] += np.array([0.0, -0.4, 0.3, -0.8, -0.6])[groups]
    y = (X[:, 0] + X[:, 1] + 0.5 * X[:, 2] + rng.logistic(size=n) > 1.0).astype(int)
    if in_x:
        X = np.column_stack([X, np.eye(5)[groups]])
    return X, y, groups


@pytest.mark.parametrize("in_x", [True, False], ids=["groups in X", "groups not in X"])
@pytest.mark.parametrize("kind", sorted(_METRICS))
def test_rates_of_small_groups_converge_on_predictions(kind, in_x):
    # Before the bounds were moved group by group, each of these four fits ended at a
    # model moved towards the constant one, not converged.
    X, y, groups = five_groups(10_000, in_x)
    clf = FairLogisticClassifier(constraint=kind, bound=0.05, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert clf.converged_ and clf.bound_met_
    assert _METRICS[kind](y, clf.predict(X), sensitive_features=groups) <= 0.05 + 1e-12
    assert clf.n_data_passes_ <= 100
    # A useful model: better than predicting the majority class for every row.
    assert np.mean(clf.predict(X) == y) > max(np.mean(y), 1 - np.mean(y))
