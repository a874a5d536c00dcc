"""Many tiny groups (issue 42, item 5): a fit at a parity bound that the smooth surrogate
cannot steer its predictions to says so, with a bound that does converge."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference
from sklearn.exceptions import ConvergenceWarning

from sklearn_ialm import FairLogisticClassifier


def tiny_groups(sizes, in_x, seed=0):
    """``(X, y, groups)``: ``len(sizes)`` groups of those many rows, ten standard-normal
    features, the first shifted with the group (five levels) and a logistic label on the
    first two; the group one-hot in X (``in_x``) or not."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.standard_normal((len(groups), 10))
    X[:, 0] += (groups % 5) * 0.3
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=len(groups)) > 0.5).astype(int)
    if in_x:
        X = np.column_stack([X, np.eye(len(sizes))[groups]])
    return X, y, groups


def _fit(X, y, groups, bound):
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=bound, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    gap = demographic_parity_difference(y, clf.predict(X), sensitive_features=groups)
    return clf, said, gap


@pytest.mark.parametrize("in_x", [True, False], ids=["groups in X", "groups not in X"])
@pytest.mark.parametrize("family", ["100 groups of 20 rows", "30 groups of 10-50 rows"])
def test_a_bound_out_of_reach_names_one_that_converges(family, in_x):
    sizes = (
        [20] * 100 if family.startswith("100") else np.random.default_rng(1).integers(10, 51, 30)
    )
    X, y, groups = tiny_groups(sizes, in_x)
    clf, said, gap = _fit(X, y, groups, 0.1)
    # The verdicts agree with fairlearn's and with the warnings.
    assert clf.bound_met_ == (gap <= 0.1 + 1e-12)
    assert bool(said) == (not clf.converged_)
    if clf.converged_:
        return
    # Not converged: the warning says why and names a bound within the surrogate's reach.
    (text,) = said
    assert "in small groups the rates on predictions part from the soft rates" in text
    looser = float(re.search(r"Set bound=([0-9.]+):", text).group(1))
    assert 0.1 < looser < 1
    # That bound converges, is met on the training predictions, and beats the constant.
    clf, said, gap = _fit(X, y, groups, looser)
    assert clf.converged_ and not said
    assert gap <= looser + 1e-12
    assert np.mean(clf.predict(X) == y) > max(np.mean(y), 1 - np.mean(y))
