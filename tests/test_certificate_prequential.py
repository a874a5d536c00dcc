"""partial_fit with calibration="clopper-pearson": the prequential certificate of the stream's
sequence of models, from each batch's predictions by the model before it learnt the batch."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._certificate import clopper_pearson
from sklearn_ialm.estimators._prequential import prequential_certificate, prequential_limits


def _batches(n_batches, size, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n_batches):
        g = rng.integers(0, 2, size)
        y = (rng.random(size) < 0.3 + 0.2 * g).astype(int)
        X = np.column_stack([y + rng.normal(size=size), g + rng.normal(size=size)])
        yield X, y, g


def _stream(clf, batches):
    """Stream ``batches``, replaying the prequential counts with ``predict`` of a copy of the
    estimator taken before each call (rows and positive predictions per group and label)."""
    rows, positive = np.zeros((2, 2), np.int64), np.zeros((2, 2), np.int64)
    for i, (X, y, g) in enumerate(batches):
        if i:  # (before the first call the model is the null model, which predict lacks)
            before = copy.deepcopy(clf).predict(X)
            np.add.at(rows, (g, y), 1)
            np.add.at(positive, (g, y), before)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.partial_fit(X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g)
        if not i:
            first = clf._stream.prequential.copy()
    return rows, positive, first


def test_counts_are_the_predictions_before_each_batch_was_learnt():
    clf = FairLogisticClassifier(bound=0.1, calibration="clopper-pearson", random_state=0)
    rows, positive, first = _stream(clf, _batches(6, 1500, 0))
    counts = clf._stream.prequential - first  # the calls after the first
    np.testing.assert_array_equal(counts[0].reshape(2, 2), rows)
    np.testing.assert_array_equal(counts[1].reshape(2, 2), positive)
    cert = clf.prequential_certificate_
    replay = prequential_certificate(
        *clf._stream.prequential.reshape(2, 2, 2), [0, 1], kind="demographic_parity",
        bound=0.1, delta=0.05, protected=clf.protected_groups_,
    )  # fmt: skip
    assert cert.value == replay.value and clf.prequential_certified_ == (cert.value <= 0.1)
    assert cert.n_rows == clf.n_samples_seen_ == 9000
    assert "not of the final model" in cert.message
    text = str(clf.bound_report(*next(_batches(1, 2000, 9))[:2], sensitive_features=g_of(9)))
    text = " ".join(text.split())
    assert "for the sequence of the stream's models as they predicted, not for the final" in text


def g_of(seed):
    return next(_batches(1, 2000, seed))[2]


def test_a_failed_call_changes_nothing():
    clf = FairLogisticClassifier(bound=0.1, calibration="clopper-pearson", random_state=0)
    _stream(clf, _batches(2, 1500, 1))
    before = clf._stream.prequential.copy()
    cert = clf.prequential_certificate_
    X, y, g = next(_batches(1, 100, 2))
    with pytest.raises(ValueError, match="label 7"):
        clf.partial_fit(X, np.where(y == 1, 7, 0), sensitive_features=g)
    np.testing.assert_array_equal(clf._stream.prequential, before)
    assert clf.prequential_certificate_ is cert


def test_a_certified_stream_needs_groups_and_a_fixed_calibration():
    X, y, g = next(_batches(1, 500, 3))
    clf = FairLogisticClassifier(calibration="clopper-pearson")
    needs = "calibration='clopper-pearson' needs sensitive_features"
    with pytest.raises(ValueError, match=needs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(clf, "coef_")
    plain = FairLogisticClassifier(bound=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.partial_fit(X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g)
    assert not hasattr(plain, "prequential_certificate_")
    plain.set_params(calibration="clopper-pearson")
    with pytest.raises(ValueError, match="calibration='clopper-pearson' was set after"):
        plain.partial_fit(X, y, sensitive_features=g)


def test_the_limits_are_wider_than_clopper_pearson_and_contain_the_estimate():
    k, n = np.array([0, 3, 300, 999, 1000]), np.array([1000] * 5)
    lower, upper = prequential_limits(k, n, 0.025, 0.025)
    cp_lower, cp_upper = clopper_pearson(k, n, 0.025, 0.025)
    assert np.all(lower <= cp_lower + 1e-12) and np.all(upper >= cp_upper - 1e-12)
    assert np.all((lower <= k / n) & (k / n <= upper))
    assert lower[0] == 0.0 and upper[-1] == 1.0
    with pytest.raises(ValueError, match="k must be whole"):
        prequential_limits([5], [3], 0.025, 0.025)


def test_a_neyman_pearson_stream_certifies_the_sequence_fpr():
    from sklearn_ialm import NeymanPearsonClassifier

    clf = NeymanPearsonClassifier(max_fpr=0.1, calibration="umbrella", random_state=0)
    negatives = false_positives = 0
    rng = np.random.default_rng(0)
    for i in range(6):
        y = (rng.random(1500) < 0.4).astype(int)
        X = np.column_stack([1.5 * y + rng.normal(size=1500), rng.normal(size=1500)])
        if i:
            before = copy.deepcopy(clf).predict(X)
            negatives += int(np.sum(y == 0))
            false_positives += int(np.sum(before[y == 0] == 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.partial_fit(X, y, classes=[0, 1])
        if not i:
            first = clf._stream.prequential[:, 0].copy()
    counts = clf._stream.prequential[:, 0] - first
    assert counts.tolist() == [negatives, false_positives]
    cert = clf.prequential_certificate_
    total, hits = clf._stream.prequential[:, 0]
    assert cert.value == prequential_limits([hits], [total], 0.0, 0.05)[1][0]
    assert clf.prequential_certified_ == (cert.value <= 0.1)
    assert cert.estimate == pytest.approx(hits / total)
    text = " ".join(str(clf.bound_report(X, y)).split())
    assert "certified false-positive rate value" in text and "not for the final model" in text
