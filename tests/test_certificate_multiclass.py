"""calibration="clopper-pearson" on more than two classes: certified per class, checked the way
a user checks it (predict, fairlearn's metrics, held-out and fresh rows); dask input refused
with a ValueError naming what is missing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

from benchmarks.families import three_classes
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators._certificate_multiclass import multiclass_fairness_certificate


def _per_class(metric, y, pred, g):
    """fairlearn's metric one-vs-rest for each class."""
    return np.array([metric(y == c, pred == c, sensitive_features=g) for c in range(3)])


def _fit(kind, bound=0.12, **kw):
    X, y, g = three_classes(9000, 0)
    clf = FairLogisticClassifier(
        constraint=kind, bound=bound, calibration="clopper-pearson", random_state=0, **kw
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y, sensitive_features=g)
    return clf, X, y, g


@pytest.mark.parametrize(
    ("kind", "metric", "bound"),
    [
        ("demographic_parity", demographic_parity_difference, 0.12),
        # (Cells of one class per group: fewer held-out rows each, a looser bound.)
        ("equalized_odds", equalized_odds_difference, 0.2),
    ],
)
def test_a_multiclass_fit_is_certified_per_class(kind, metric, bound):
    clf, X, y, g = _fit(kind, bound)
    cert = clf.certificate_
    held = clf.calibration_indices_
    train = np.setdiff1d(np.arange(len(y)), held)
    # The held-out estimate is fairlearn's worst class on predict of the held-out rows.
    on_held = _per_class(metric, y[held], clf.predict(X[held]), g[held])
    assert cert.estimate == pytest.approx(on_held.max(), abs=1e-12)
    # Training rows: the model was steered to the training bound, inside the user's.
    on_train = _per_class(metric, y[train], clf.predict(X[train]), g[train])
    assert clf.training_bound_ < clf.bound_ == bound
    assert on_train.max() <= clf.training_bound_ + 1e-9
    # Fresh rows: within the certified value (held with probability >= 1 - delta).
    Xf, yf, gf = three_classes(100_000, 1)
    fresh = _per_class(metric, yf, clf.predict(Xf), gf)
    assert fresh.max() <= cert.value
    assert np.all(fresh <= cert.class_values)
    assert clf.certified_ == (cert.value <= bound) == clf.bound_met_
    assert set(cert.class_status) == {0, 1, 2}
    assert all(s == "certified" for s in cert.class_status.values()) == clf.certified_
    text = str(clf.bound_report(Xf[:2000], yf[:2000], sensitive_features=gf[:2000]))
    text = " ".join(text.split())
    assert "Per class, each at delta on its own" in text and "class 2:" in text


def test_a_class_never_predicted_is_reported_as_such():
    rng = np.random.default_rng(0)
    g = np.repeat(["a", "b"], 2000)
    y = rng.choice(3, size=4000)
    pred = np.where(rng.random(4000) < 0.5, 0, 1)  # class 2 never predicted
    cert = multiclass_fairness_certificate(
        pred, y, g, classes=["x", "y", "z"], kind="demographic_parity", bound=0.1, delta=0.05
    )
    assert cert.class_status["z"] == "never predicted"
    assert cert.n_predicted.tolist()[2] == 0 and np.isfinite(cert.class_values[2])
    assert cert.class_status["x"] == "certified"
    assert "Never predicted on the calibration rows: ['z']" in cert.message


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (dict(form="ratio", bound=0.8), "form='ratio'"),
        (dict(constraint="positive_share", bound=0.3), "constraint='positive_share'"),
        (dict(bound=0.01, calibration_size=0.05), "too few to certify bound=0.01"),
    ],
)
def test_multiclass_refusals_name_the_parameter_and_change_nothing(params, match):
    X, y, g = three_classes(3000, 0)
    clf = FairLogisticClassifier(calibration="clopper-pearson", **params)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y, sensitive_features=g)
    assert not hasattr(clf, "coef_")


@pytest.mark.parametrize(
    "make",
    [
        lambda: FairLogisticClassifier(bound=0.2, calibration="clopper-pearson"),
        lambda: NeymanPearsonClassifier(max_fpr=0.2, calibration="umbrella"),
    ],
)
def test_calibration_on_dask_input_says_what_is_missing(make):
    da = pytest.importorskip("dask.array")
    X, y, g = three_classes(2000, 0)
    y = (y > 0).astype(int)
    Xd, yd = da.from_array(X, chunks=500), da.from_array(y, chunks=500)
    clf = make()
    kw = {"sensitive_features": g} if hasattr(clf, "constraint") else {}
    with pytest.raises(ValueError, match=r"calibration='[a-z-]+' needs the rows in memory"):
        clf.fit(Xd, yd, **kw)
    assert not hasattr(clf, "coef_")
    # The remedy the message gives works.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(Xd.compute(), yd.compute(), **kw)
    assert hasattr(clf, "calibration_indices_")


def test_a_class_with_a_gap_is_not_certified_and_says_so():
    rng = np.random.default_rng(1)
    g = np.repeat(["a", "b"], 3000)
    y = rng.choice(3, size=6000)
    # Class 2 predicted for 30 % of group a and 10 % of group b; classes 0 and 1 share the
    # rest (a gap of 0.1 each, which the limits cannot certify below 0.1 either).
    two = rng.random(6000) < np.where(g == "a", 0.3, 0.1)
    pred = np.where(two, 2, rng.integers(0, 2, 6000))
    cert = multiclass_fairness_certificate(
        pred, y, g, classes=[0, 1, 2], kind="demographic_parity", bound=0.1, delta=0.05
    )
    assert not cert.certified and cert.class_status[2] == "not certified"
    assert cert.class_values[2] == cert.value > 0.1
    assert "Classes not certified: [0, 1, 2]" in cert.message and "(class 2)" in cert.message


def test_intersectional_groups_are_named_by_their_labels():
    pd = pytest.importorskip("pandas")
    X, y, g = three_classes(9000, 0)
    sf = pd.DataFrame({"sex": np.where(g == 1, "F", "M"), "age": np.arange(9000) % 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairLogisticClassifier(bound=0.2, calibration="clopper-pearson", random_state=0)
        clf.fit(X, y, sensitive_features=sf)
    assert [tuple(k) for k in clf.certificate_.groups] == [("F", 0), ("F", 1), ("M", 0), ("M", 1)]
    assert "group ('" in clf.certificate_.message


def test_too_few_rows_name_settings_that_work():
    import re

    X, y, g = three_classes(3000, 0)
    clf = FairLogisticClassifier(bound=0.12, calibration="clopper-pearson", random_state=0)
    with pytest.raises(ValueError, match="Each of these alone would make it certifiable") as e:
        clf.fit(X, y, sensitive_features=g)
    remedies = str(e.value).split("certifiable:")[1]
    advice = dict(re.findall(r"(calibration_size|bound|delta)=([0-9]+(?:\.[0-9]+)?)", remedies))
    assert set(advice) == {"calibration_size", "bound", "delta"}
    for name, value in advice.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = clf.set_params(**{name: float(value)}).fit(X, y, sensitive_features=g)
        assert hasattr(fitted, "certificate_")  # the certificate is within reach: no error
        clf.set_params(bound=0.12, calibration_size=0.3, delta=0.05)


def _pass_probability(rates, sizes, bound, delta, draws, seed=0):
    """Monte Carlo share of calibration draws whose demographic-parity certificate passes,
    for a model predicting class ``c`` in group ``g`` with probability ``rates[c, g]``:
    multinomial counts per group, Clopper-Pearson limits from scipy's beta quantiles."""
    from scipy.stats import beta

    rng = np.random.default_rng(seed)
    passed = 0
    for _ in range(draws):
        k = np.stack([rng.multinomial(n, rates[:, g]) for g, n in enumerate(sizes)], axis=1)
        n = np.asarray(sizes)[None, :]
        lower = np.where(k > 0, beta.ppf(delta / 2, np.maximum(k, 1), n - k + 1), 0.0)
        upper = np.where(k < n, beta.isf(delta / 2, k + 1, np.maximum(n - k, 1)), 1.0)
        # The worst cell and ordered pair of distinct groups (the pair of a group with
        # itself is left out).
        value = np.max(upper[:, :, None] - lower[:, None, :] - np.eye(2)[None] * 9)
        passed += value <= bound
    return passed / draws


def test_multiclass_training_bound_passes_with_about_the_stated_power(monkeypatch):
    """Issue 50: the multi-class certified fit's candidate at power 0.9 (here the only one)
    trains as loose as still passes the certificate about 9 times in 10 for a model with its
    rates (by simulation), not at the margin of the widest intervals (rates of 0.5), which
    passed 97 times in 100 here and cost 3.1 accuracy points on this family."""
    import sklearn_ialm.estimators._certified_sequence as sequence
    from sklearn_ialm.estimators._certified_multiclass import _POWER

    monkeypatch.setattr(sequence, "POWERS", (_POWER,))
    clf, X, y, g = _fit("demographic_parity")
    assert len(clf.certification_path_) == 1
    held = clf.calibration_indices_
    train = np.setdiff1d(np.arange(len(y)), held)
    pred = clf.predict(X[train])
    rates = np.array([[np.mean(pred[g[train] == j] == c) for j in (0, 1)] for c in range(3)])
    sizes = [int(np.sum(g[held] == j)) for j in (0, 1)]
    share = _pass_probability(rates, sizes, 0.12, clf.delta, draws=4000)
    # The approximation errs on the safe side (pairs and cells taken as independent); 4000
    # draws put the share within 0.01 (two standard errors).
    assert _POWER - 0.05 <= share <= 0.95, (share, clf.training_bound_)


def test_multiclass_candidates_are_certified_in_order_up_to_the_first_failure():
    """As for two classes: candidates tight to loose, none tested past a failure, and the
    model published is the loosest certified, whole (its held-out predictions give its
    certificate again)."""
    clf, X, y, g = _fit("demographic_parity")
    bounds, values, passed = (
        list(column) for column in zip(*clf.certification_path_, strict=True)
    )
    assert bounds == sorted(set(bounds)) and all(passed[:-1])
    kept = max((i for i in range(len(passed)) if passed[i]), default=0)
    assert clf.training_bound_ == bounds[kept] and clf.certified_ == passed[kept]
    held = clf.calibration_indices_
    again = multiclass_fairness_certificate(
        clf.predict(X[held]), y[held], g[held], classes=clf.classes_,
        kind="demographic_parity", bound=0.12, delta=clf.delta,
    )  # fmt: skip
    assert again.value == pytest.approx(values[kept]) == clf.certificate_.value
