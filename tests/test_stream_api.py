"""partial_fit's user-facing side (issue 49, item 6): its errors, set_params between calls,
what ``bound_met_`` says and the warning of a stream that misses its bound."""

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators._base import BaseIALMClassifier

_W = np.array([1.5, -1.0, 0.8, 0.5, 0.0])


def _stream(n_batches, size, seed):
    """tests/test_partial_fit.py's stream: the group leans on the label's main feature
    (LogisticRegression's demographic-parity gap is about 0.35)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_batches):
        X = rng.standard_normal((size, 5))
        g = (X[:, 0] + rng.normal(size=size) > 0.5).astype(int)
        y = (X @ _W + rng.logistic(size=size) > 0).astype(int)
        yield X, y, g


def _fair(**params):
    return FairLogisticClassifier(**{"bound": 0.05, "random_state": 0, **params})


def _feed(clf, batches):
    for X, y, g in batches:
        if isinstance(clf, FairLogisticClassifier):
            clf.partial_fit(X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g)
        else:
            clf.partial_fit(X, y, classes=[0, 1])
    return clf


def test_groups_without_sensitive_features_is_a_clear_error():
    X, y, _ = next(_stream(1, 500, 0))
    clf = _fair()
    with pytest.raises(ValueError, match=r"groups=\[0, 1\] is given but sensitive_features"):
        clf.partial_fit(X, y, classes=[0, 1], groups=[0, 1])
    assert not hasattr(clf, "coef_")


def test_fit_after_a_stream_with_warm_start_starts_from_the_streams_model(monkeypatch):
    batches = list(_stream(8, 1000, 0))
    clf = _feed(_fair(warm_start=True), batches[:3])
    streamed = clf.multipliers_.copy()
    starts = []
    original = BaseIALMClassifier._warm_start_point

    def spy(self, *args):
        starts.append(original(self, *args))
        return starts[-1]

    monkeypatch.setattr(BaseIALMClassifier, "_warm_start_point", spy)
    X, y, g = (np.concatenate(parts) for parts in zip(*batches, strict=True))
    clf.fit(X, y, sensitive_features=g)
    x0, y0, _ = starts[0]
    assert x0 is not None
    np.testing.assert_array_equal(y0, streamed)
    assert "_stream" not in clf.__dict__ and not hasattr(clf, "n_samples_seen_")
    assert clf.converged_
    assert demographic_parity_difference(y, clf.predict(X), sensitive_features=g) <= 0.05 + 1e-9


@pytest.mark.parametrize(
    "clf",
    [
        FairLogisticClassifier(calibration="clopper-pearson"),
        NeymanPearsonClassifier(calibration="umbrella"),
    ],
)
def test_a_calibrated_estimator_says_why_it_has_no_partial_fit(clf):
    assert not hasattr(clf, "partial_fit")
    X, y, g = next(_stream(1, 200, 0))
    with pytest.raises(AttributeError) as raised:
        clf.partial_fit(X, y, classes=[0, 1])
    text = str(raised.value)
    # The message itself, not a chained cause, says why and what to do.
    assert "no certificate" in text and "calibration=None" in text and "fit on stored rows" in text
    with pytest.raises(AttributeError, match="no certificate"):
        type(clf).partial_fit(clf, X, y, classes=[0, 1])
