"""Which class NeymanPearsonClassifier takes as positive (issue 49 item 5): said at fit when
the labels do not say it, chosen with pos_label, and what max_fpr then bounds, checked with
fairlearn's false-positive rate of predict."""

import warnings

import numpy as np
import pytest
from fairlearn.metrics import false_positive_rate
from sklearn.datasets import make_classification

from sklearn_ialm import NeymanPearsonClassifier

SAID = "as the positive class"


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    return X, y


def _fit(X, labels, **params):
    clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, labels)
    return clf, [str(w.message) for w in caught if SAID in str(w.message)]


@pytest.mark.parametrize("calibration", [None, "umbrella"])
def test_string_labels_say_which_class_is_positive(data, calibration):
    X, y = data
    labels = np.where(y == 1, "denied", "approved")
    clf, said = _fit(X, labels, calibration=calibration)
    assert len(said) == 1, said  # once, at fit
    assert "takes 'denied' as the positive class" in said[0]
    assert "pos_label='approved'" in said[0]
    assert clf.classes_.tolist() == ["approved", "denied"]
    # max_fpr bounds the rate at which 'approved' rows are predicted 'denied'.
    pred = clf.predict(X)
    if calibration is None:
        assert false_positive_rate(labels, pred, pos_label="denied") <= 0.1
    else:
        held = clf.calibration_indices_
        assert false_positive_rate(labels[held], pred[held], pos_label="denied") <= 0.1


def test_pos_label_chooses_and_silences(data):
    X, y = data
    labels = np.where(y == 1, "denied", "approved")
    for positive, negative in (("denied", "approved"), ("approved", "denied")):
        clf, said = _fit(X, labels, pos_label=positive)
        assert not said
        assert clf.classes_.tolist() == [negative, positive]
        pred = clf.predict(X)
        fpr = false_positive_rate(labels, pred, pos_label=positive)
        assert fpr == pytest.approx(clf.train_fpr_, abs=1e-12) and fpr <= 0.1
    with pytest.raises(ValueError, match=r"pos_label='granted' \(str\) .* \['approved', "):
        NeymanPearsonClassifier(pos_label="granted").fit(X, labels)


@pytest.mark.parametrize(
    "coded", [lambda y: y, lambda y: 2 * y - 1, lambda y: y.astype(bool), lambda y: y * 1.0]
)
def test_plain_labels_need_no_word(data, coded):
    X, y = data
    clf, said = _fit(X, coded(y))
    assert not said and clf.classes_[1] == 1


def test_a_stream_says_it_at_its_first_call(data):
    X, y = data
    labels = np.where(y == 1, "denied", "approved")
    clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for start in range(0, 2000, 500):
            clf.partial_fit(
                X[start : start + 500], labels[start : start + 500], classes=["approved", "denied"]
            )
    said = [str(w.message) for w in caught if SAID in str(w.message)]
    assert len(said) == 1 and "'denied'" in said[0]
