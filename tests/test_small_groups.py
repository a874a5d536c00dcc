"""Groups under ``min_group_size`` (issue 49, item 3): left out of the constraints, named
once in a warning, in ``excluded_groups_`` and in the bound report; a grid search whose folds
leave a group under the minimum scores every fold (it failed all of them)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import sklearn
from fairlearn.metrics import demographic_parity_difference
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

from sklearn_ialm import BoundReport, FairLogisticClassifier


def six_groups(n=6000, small=(11, 31), seed=0):
    """``(X, y, groups)``: six groups "A".."F" in ``n`` rows, "E" and "F" of ``small`` rows
    (six-race COMPAS' two smallest: 11 and 31 of 6172), the others of random sizes; eight
    standard-normal features and a logistic label on them plus a shift per group, so the
    group is tied to the label and is not in ``X``."""
    rng = np.random.default_rng(seed)
    share = rng.dirichlet(np.full(4, 3.0))
    sizes = np.r_[np.round(share * (n - sum(small))).astype(int), small]
    sizes[0] += n - sizes.sum()
    groups = rng.permutation(np.repeat(np.array(list("ABCDEF")), sizes))
    X = rng.standard_normal((n, 8))
    shift = dict(zip("ABCDEF", rng.normal(size=6), strict=True))
    score = 0.8 * X @ rng.normal(size=8) + np.array([shift[g] for g in groups])
    y = (score + rng.logistic(size=n) > 0).astype(int)
    return X, y, groups


def _fit(X, y, groups, **params):
    clf = FairLogisticClassifier(bound=0.1, random_state=0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught if "min_group_size" in str(w.message)]
    return clf, said


@pytest.fixture(scope="module")
def family():
    return six_groups()


def test_a_grid_search_whose_folds_leave_a_group_under_the_minimum_scores_every_fold(family):
    X, y, groups = family
    strata = np.char.add(groups.astype(str), y.astype(str))
    X_tr, X_te, y_tr, y_te, g_tr, g_te = train_test_split(
        X, y, groups, test_size=0.3, stratify=strata, random_state=0
    )
    cv = KFold(3, shuffle=True, random_state=0)
    in_folds = [int(np.sum(g_tr[train] == "E")) for train, _ in cv.split(X_tr)]
    # (The setting of the issue: some fold's training rows hold "E" under the minimum,
    # another at or over it.)
    assert min(in_folds) < 5 <= max(in_folds), in_folds
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            FairLogisticClassifier(random_state=0),
            {"C": [0.1, 1.0], "bound": [0.05, 0.1]},
            cv=cv,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search.fit(X_tr, y_tr, sensitive_features=g_tr)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)), scores
    said = [str(w.message) for w in caught if "min_group_size" in str(w.message)]
    # One warning per fit of the fold that leaves "E" under the minimum (4 candidates),
    # each naming it with its rows.
    n_short = sum(n < 5 for n in in_folds)
    assert len(said) == 4 * n_short
    assert all(re.search(r"\{'E': \d\} rows", text) for text in said)
    # The refit (every row of "E" in it) constrains every group; it predicts and scores
    # on fresh rows of every group.
    best = search.best_estimator_
    assert best.excluded_groups_.tolist() == []
    assert "E" in best.protected_groups_.tolist()
    assert 0.5 < search.score(X_te, y_te) <= 1.0


def test_a_model_that_left_a_group_out_predicts_and_reports_every_group(family):
    X, y, groups = family
    keep = np.flatnonzero(groups != "E")
    train = np.r_[keep[:3000], np.flatnonzero(groups == "E")[:3]]
    clf, said = _fit(X[train], y[train], groups[train])
    assert clf.excluded_groups_.tolist() == ["E"]
    fresh = np.setdiff1d(np.arange(len(y)), train)
    assert "E" in groups[fresh]
    assert 0.5 < clf.score(X[fresh], y[fresh]) <= 1.0
    report = clf.bound_report(X[fresh], y[fresh], sensitive_features=groups[fresh])
    assert report.excluded_groups == ["E"]
    assert np.isfinite(report.bounds[0]["value"])


def test_a_small_group_is_named_once_and_left_out_of_the_constraints(family):
    X, y, groups = family
    groups = groups.copy()
    groups[np.flatnonzero(groups == "E")[4:]] = "A"  # "E" keeps 4 rows
    clf, said = _fit(X, y, groups)
    assert len(said) == 1
    assert "{'E': 4} rows" in said[0]
    assert "min_group_size=5" in said[0] and "set min_group_size=4" in said[0]
    assert clf.excluded_groups_.tolist() == ["E"]
    assert clf.protected_groups_.tolist() == ["A", "B", "C", "D", "F"]
    assert clf.groups_.tolist() == list("ABCDEF")
    assert clf.n_samples_fit_ == len(y)  # its rows train the loss
    # The bound is fairlearn's metric over the other groups' rows, and it holds there.
    kept = groups != "E"
    gap = demographic_parity_difference(
        y[kept], clf.predict(X[kept]), sensitive_features=groups[kept]
    )
    assert clf.hard_constraint_values_[0] == pytest.approx(gap, abs=1e-12)
    assert clf.bound_met_ == (gap <= 0.1 + 1e-12)
    if clf.converged_:
        assert gap <= 0.1 + 1e-12


def test_the_report_shows_the_excluded_group(family):
    X, y, groups = family
    groups = groups.copy()
    groups[np.flatnonzero(groups == "E")[4:]] = "A"
    clf, _ = _fit(X, y, groups)
    report = BoundReport.from_estimator(clf, X, y, sensitive_features=groups)
    rows = {r["group"]: r for r in report.rates if r["rate"] == "selection_rate"}
    # (A parity bound on every pair of groups protects none: the role column says who is out.)
    assert rows["E"]["excluded"] is True and rows["E"]["protected"] is None
    assert not rows["A"]["excluded"] and rows["A"]["protected"] is None
    assert "excluded" in str(report)
    kept = groups != "E"
    gap = demographic_parity_difference(
        y[kept], clf.predict(X[kept]), sensitive_features=groups[kept]
    )
    assert report.bounds[0]["value"] == pytest.approx(gap, abs=1e-12)
    # The limit is over the groups constrained: "E"'s wide interval does not enter it.
    kept_rows = [r for g, r in rows.items() if g not in ("E", "overall")]
    widest = max(a["upper"] - b["lower"] for a in kept_rows for b in kept_rows if a is not b)
    assert report.bounds[0]["limit"] == pytest.approx(widest)
    assert report.to_dict()["excluded_groups"] == ["E"]
    text = str(report)
    assert "excluded from the constraints: 'E'" in text
    assert any("min_group_size=5" in note for note in report.notes)
    assert "E (excluded)" in report.to_markdown()


def test_min_group_size_one_constrains_every_group(family):
    X, y, groups = family
    groups = groups.copy()
    groups[np.flatnonzero(groups == "E")[4:]] = "A"
    clf, said = _fit(X, y, groups, min_group_size=1)
    assert said == []
    assert clf.excluded_groups_.tolist() == []
    assert "E" in clf.protected_groups_.tolist()
    gap = demographic_parity_difference(y, clf.predict(X), sensitive_features=groups)
    assert clf.hard_constraint_values_[0] == pytest.approx(gap, abs=1e-12)


def test_a_larger_minimum_leaves_out_more_groups(family):
    X, y, groups = family
    clf, said = _fit(X, y, groups, min_group_size=40)
    assert clf.excluded_groups_.tolist() == ["E", "F"]
    assert len(said) == 1 and "{'E': 11, 'F': 31} rows" in said[0]


@pytest.mark.parametrize("value", [0, -3, 2.5, "5", None])
def test_a_bad_min_group_size_is_refused_naming_it(value):
    X, y, groups = six_groups(n=300, small=(20, 20))
    with pytest.raises(ValueError, match="min_group_size"):
        FairLogisticClassifier(min_group_size=value).fit(X, y, sensitive_features=groups)


def test_fewer_than_two_groups_left_fits_the_unconstrained_model_with_a_warning():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 4))
    y = (X[:, 0] + rng.logistic(size=400) > 0).astype(int)
    groups = np.where(np.arange(400) < 3, "b", "a")
    clf = FairLogisticClassifier(bound=0.05, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught]
    assert sum("{'b': 3} rows" in s for s in said) == 1
    assert any("leaves 1 group of at least min_group_size=5 rows" in s and "void" in s
               for s in said)  # fmt: skip
    assert clf.excluded_groups_.tolist() == ["b"]
    assert clf.protected_groups_.tolist() == []
    plain = FairLogisticClassifier(bound=0.05, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.fit(X, y)
    np.testing.assert_allclose(clf.coef_, plain.coef_)


def test_the_certificate_leaves_the_excluded_group_out():
    # (A group of 31 rows holds out 10: too few for any certificate at 0.25. With the
    # minimum at 40 it is left out too, and the others are certifiable.)
    X, y, groups = six_groups(n=6000, small=(4, 31), seed=1)
    clf = FairLogisticClassifier(
        bound=0.25, calibration="clopper-pearson", min_group_size=40, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught if "min_group_size" in str(w.message)]
    assert len(said) == 1 and "{'E': 4, 'F': 31} rows" in said[0]
    assert clf.excluded_groups_.tolist() == ["E", "F"]
    assert not np.any(np.isin(groups[clf.calibration_indices_], ["E", "F"]))
    assert sorted(str(g) for g in clf.certificate_.groups) == ["A", "B", "C", "D"]


def test_more_than_two_classes_leave_the_small_group_out():
    rng = np.random.default_rng(5)
    n = 1500
    X = rng.standard_normal((n, 5))
    y = np.argmax(X[:, :3] + rng.gumbel(size=(n, 3)), axis=1)
    groups = np.where(X[:, 3] > 0, "a", "b")
    groups[:3] = "c"
    clf = FairLogisticClassifier(bound=0.1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught if "min_group_size" in str(w.message)]
    assert len(said) == 1 and "{'c': 3} rows" in said[0]
    assert clf.excluded_groups_.tolist() == ["c"]
    assert "c" not in clf.protected_groups_.tolist()
    # The bound per class is fairlearn's over the groups constrained.
    kept = groups != "c"
    pred = clf.predict(X[kept])
    gaps = [
        demographic_parity_difference(y[kept] == k, pred == k, sensitive_features=groups[kept])
        for k in clf.classes_
    ]
    np.testing.assert_allclose(clf.hard_constraint_values_, gaps, atol=1e-12)


def test_a_protected_group_under_the_minimum_is_left_out_too(family):
    X, y, groups = family
    groups = groups.copy()
    groups[np.flatnonzero(groups == "E")[4:]] = "A"
    clf, said = _fit(X, y, groups, protected_groups=["E", "B"])
    assert len(said) == 1
    assert clf.excluded_groups_.tolist() == ["E"]
    assert clf.protected_groups_.tolist() == ["B"]
    # Only "E" protected: nothing is left to constrain; the unconstrained model, said so.
    clf, said = _fit(X, y, groups, protected_groups=["E"])
    assert clf.protected_groups_.tolist() == []
    assert any("every protected group has fewer than min_group_size=5 rows" in s for s in said)


def test_partial_fit_constrains_every_declared_group():
    """A stream declares its groups before it has seen their rows: it leaves none out
    (the fit's min_group_size counts the rows of a fit)."""
    X, y, groups = six_groups(n=2000, small=(3, 20))
    clf = FairLogisticClassifier(bound=0.1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.partial_fit(X, y, classes=[0, 1], groups=list("ABCDEF"), sensitive_features=groups)
    assert not any("min_group_size" in str(w.message) for w in caught)
    assert clf.excluded_groups_.tolist() == []
    assert clf.protected_groups_.tolist() == list("ABCDEF")
