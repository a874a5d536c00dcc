"""Issue 40: fits that tell the truth, warnings that agree and point at the user's line.

Each test failed on main 0109861: an intersectional fit below the majority class's accuracy
reported converged_ without a word; without an intercept a one-group fit returned the
constant model (with an intercept it was not allowed to have); identical rows split by the
steering's segment left a fit that missed its bound beside warnings that said it held; the
warnings pointed at the library's lines; the report's Markdown named two columns "bound"
and a Pipeline's last step as the baseline failed on the raw rows without saying why.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import demographic_parity_difference
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, roc_auc_score

import sklearn_ialm
import sklearn_ialm.estimators._steering_best as best
from sklearn_ialm import FairLogisticClassifier

PACKAGE = Path(sklearn_ialm.__file__).parent


def _issue_data():
    """The issue's data: 2000 rows, a group ``a`` that is a noisy threshold of the first
    (informative) feature and a group ``b`` that is the sign of the second."""
    X, y = make_classification(2000, 10, n_informative=5, shuffle=False, random_state=0)
    a = (X[:, 0] + np.random.default_rng(0).normal(0, 0.5, 2000) > 0.5).astype(int)
    b = (X[:, 1] > 0).astype(int)
    return X, y, a, b


def _fit(make, X, y, groups):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = make().fit(X, y, sensitive_features=groups)
    return clf, caught


def _texts(caught, category=Warning):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def _assert_warnings_agree(clf, caught):
    """What every fit's warnings must say of its attributes."""
    texts = _texts(caught)
    convergence = _texts(caught, ConvergenceWarning)
    assert bool(convergence) == (not clf.converged_), texts
    if clf.bound_met_:
        assert not any("NOT met" in t or "still misses" in t for t in texts), texts
    else:
        assert any("NOT met" in t for t in convergence), texts
        assert not any("until its predictions met the bound" in t for t in texts), texts
    # The solver's own "converged: ..." is not the verdict of a fit that did not converge.
    assert not any(re.search(r"did not converge[^:]*: converged", t) for t in texts), texts


def test_intersections_below_the_majority_class_say_so_and_do_not_claim_convergence():
    """The issue's intersections at a parity gap of 0.01: no solve of the soft surrogate
    meets the bound on predictions, nor a point between two of them, so the model returned
    is the nearest solve moved towards the constant model: the optimum of no posed problem.
    Main called such a model converged, with no warning, at an accuracy below that of
    predicting the majority class. (At 0.03, this test's gap up to main 52736b7, a point
    between two converged solves now meets the bound: see the test below.)"""
    X, y, a, b = _issue_data()
    sf = pd.DataFrame({"a": a, "b": b})
    clf, caught = _fit(lambda: FairLogisticClassifier(bound=0.01, random_state=0), X, y, sf)
    _assert_warnings_agree(clf, caught)
    accuracy = accuracy_score(y, clf.predict(X))
    majority = max(np.mean(y), 1 - np.mean(y))
    assert clf.bound_met_
    assert demographic_parity_difference(y, clf.predict(X), sensitive_features=sf) <= 0.01
    assert not clf.converged_
    (text,) = _texts(caught, ConvergenceWarning)
    # The figures of the warning are those scikit-learn computes.
    assert f"Its training accuracy, {accuracy:.4f}, is below" in text
    assert f"({majority:.4f})" in text
    assert f"AUC of its scores is {roc_auc_score(y, clf.decision_function(X)):.3f}" in text
    assert "moved towards the constant model" in text
    # The report says so too.
    report = clf.bound_report(X, y, sensitive_features=sf)
    assert any("below that of predicting the majority class" in n for n in report.notes)
    # The remedy it names works: at that bound the surrogate reaches the bound, the fit
    # converges, and the model beats the majority class.
    looser = float(re.search(r"Set bound=([0-9.]+):", text).group(1))
    assert 0.01 < looser < 0.1
    again, caught = _fit(lambda: FairLogisticClassifier(bound=looser, random_state=0), X, y, sf)
    _assert_warnings_agree(again, caught)
    assert again.converged_ and again.bound_met_
    assert accuracy_score(y, again.predict(X)) > majority


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_intersections_at_003_converge_above_the_majority_class(fit_intercept):
    """The intersections at 0.03 ended, up to main 52736b7, at the nearest solve moved
    towards the constant model (accuracy 0.4855 with an intercept, the zero model's 0.5010
    without), not converged: a point between two converged solves meets the bound now,
    more accurate than predicting the majority class."""
    X, y, a, b = _issue_data()
    sf = pd.DataFrame({"a": a, "b": b})
    clf, caught = _fit(
        lambda: FairLogisticClassifier(bound=0.03, fit_intercept=fit_intercept, random_state=0),
        X, y, sf,
    )  # fmt: skip
    _assert_warnings_agree(clf, caught)
    assert clf.converged_ and clf.bound_met_ and not _texts(caught, ConvergenceWarning)
    assert demographic_parity_difference(y, clf.predict(X), sensitive_features=sf) <= 0.03
    assert accuracy_score(y, clf.predict(X)) > max(np.mean(y), 1 - np.mean(y))


def test_no_intercept_reaches_the_bound_with_a_useful_model():
    """One group, a parity gap of 0.03, ``fit_intercept=False``: the surrogate's solves at
    nine tenths of the way to parity missed the bound on predictions by 0.0056, and the
    fallback (towards the constant model, which without an intercept is the zero model)
    returned a model of one class with intercept_ -0.004. One solve at 99 in 100 meets it
    with a model about as accurate as the one with an intercept (the classes are centred;
    that one's solves all miss, and its threshold is moved onto the bound)."""
    X, y, a, _ = _issue_data()
    fits = {}
    for intercept in (True, False):
        clf, caught = _fit(
            lambda i=intercept: FairLogisticClassifier(
                bound=0.03, fit_intercept=i, random_state=0
            ),
            X,
            y,
            a,
        )
        _assert_warnings_agree(clf, caught)
        fits[intercept] = clf
    clf = fits[False]
    assert clf.intercept_.tolist() == [0.0]
    assert clf.converged_ and clf.bound_met_
    assert demographic_parity_difference(y, clf.predict(X), sensitive_features=a) <= 0.03
    accuracy = accuracy_score(y, clf.predict(X))
    assert accuracy >= accuracy_score(y, fits[True].predict(X)) - 0.01
    assert accuracy > max(np.mean(y), 1 - np.mean(y)) + 0.1


def test_without_an_intercept_the_constant_model_has_no_intercept(monkeypatch):
    """Where nothing but a constant meets the bound, a fit without an intercept returns the
    zero model (every score 0), never an intercept it was told not to fit. (On these data a
    point between two converged solves now meets the bound, see the test above: the search
    for it is left out here, so that the fit ends as where none does.)"""
    monkeypatch.setattr(best, "_between_two", lambda problem, units, fit, *a: fit)
    monkeypatch.setattr(best, "_two_more", lambda problem, units, fit, *a: fit)
    X, y, a, b = _issue_data()
    sf = pd.DataFrame({"a": a, "b": b})
    clf, caught = _fit(
        lambda: FairLogisticClassifier(bound=0.03, fit_intercept=False, random_state=0),
        X,
        y,
        sf,
    )
    _assert_warnings_agree(clf, caught)
    assert clf.intercept_.tolist() == [0.0]
    assert not clf.converged_ and clf.bound_met_
    (text,) = _texts(caught, ConvergenceWarning)
    assert "the zero model" in text and "intercept alone" not in text


def compas_like(n=6000, seed=0):
    """A table like COMPAS's: two races (half and half), recidivism more frequent in one,
    whole-number features (age, priors, juvenile counts, one-hot age bands), so that many
    rows are identical."""
    rng = np.random.default_rng(seed)
    race = (rng.random(n) < 0.5).astype(int)
    age = np.round(rng.normal(35 - 4 * race, 11, n).clip(18, 75))
    priors = rng.poisson(np.where(race == 1, 4.0, 2.0) * rng.gamma(1.0, 1.0, n)).clip(0, 38)
    juv_fel = rng.poisson(0.05 + 0.15 * race)
    juv_misd = rng.poisson(0.05 + 0.1 * race)
    felony = (rng.random(n) < 0.6 + 0.1 * race).astype(int)
    male = (rng.random(n) < 0.8).astype(int)
    bands = np.eye(3)[np.digitize(age, [25, 45])]
    logit = (
        -0.6 + 0.17 * priors - 0.045 * (age - 35) + 0.5 * juv_fel + 0.3 * juv_misd
        + 0.2 * felony + 0.3 * male + 0.3 * race
    )  # fmt: skip
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return np.column_stack([age, priors, juv_fel, juv_misd, felony, male, bands]), y, race


def test_identical_rows_are_not_split_by_the_segment():
    """COMPAS-like table, parity gap 0.05: the segment between the two sides of the bound
    stopped between the events of three identical rows, where one of them had flipped and
    the others not, a model that cannot exist. Main's fit ended at a gap of 0.0505 with
    bound_met_ False; now the three rows flip together and the bound holds."""
    X, y, race = compas_like(seed=8)
    clf, caught = _fit(lambda: FairLogisticClassifier(bound=0.05, random_state=0), X, y, race)
    _assert_warnings_agree(clf, caught)
    assert clf.bound_met_ and clf.converged_
    assert demographic_parity_difference(y, clf.predict(X), sensitive_features=race) <= 0.05


def test_multiclass_warning_gives_the_fits_verdict_not_the_solvers():
    """Three classes, a parity gap of 0.005: every solve converged, none met the bound on
    predictions, and the model was moved towards the constant one. Main 0109861's warning
    read "did not converge on 3 classes: converged: primal and dual residuals <= ..." (at
    0.02 then; the reworked multi-class steering now meets 0.02)."""
    X, y = make_classification(
        1500, 6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=3
    )
    g = (X[:, 0] + np.random.default_rng(3).normal(0, 0.5, len(y)) > 0.3).astype(int)
    clf, caught = _fit(lambda: FairLogisticClassifier(bound=0.005, random_state=0), X, y, g)
    _assert_warnings_agree(clf, caught)
    (text,) = _texts(caught, ConvergenceWarning)
    assert "did not converge on 3 classes: no solve met the bound on predictions" in text


def test_segment_point_skips_the_empty_stretch_between_identical_rows():
    """The segment's point is never at an event of identical rows: there some of them would
    have flipped and the others not. Here flipping one of two identical rows of group 0
    would meet the bound; the point returned flips both, and no score is at 0."""
    from sklearn_ialm.estimators._hard_rates import _Units
    from sklearn_ialm.estimators._segment_sweep import _segment_point
    from sklearn_ialm.problems import fairness_problem

    g = np.repeat([0, 1], 10)
    y = np.tile([0, 1], 10)
    X = np.column_stack([g, np.arange(20.0)])
    pb = fairness_problem(X, y, X, g, bound=0.15, constraint="demographic_parity")
    units = _Units(pb)
    # Group 0: all 10 positive at z_in (rate 1), two identical rows negative at z_out;
    # group 1: 8 of 10 positive at both ends (rate 0.8).
    z_in = np.where(g == 0, 0.1, np.where(np.arange(20) < 18, 0.3, -0.3))
    z_out = z_in.copy()
    z_out[[0, 1]] = -0.2
    gap = demographic_parity_difference(y, z_in > 0, sensitive_features=g)
    assert gap > 0.15 and demographic_parity_difference(y, z_out > 0, sensitive_features=g) < 0.15
    t = _segment_point(pb, units, z_in, z_out, pb.offset)
    z = (1 - t) * z_in + t * z_out
    assert np.min(np.abs(z)) > 1e-3
    assert (z[0] > 0) == (z[1] > 0)
    assert demographic_parity_difference(y, z > 0, sensitive_features=g) <= 0.15


def test_warnings_point_at_the_callers_line():
    """Every warning of a fit is attributed to the line that called into the package: the
    user's ``fit``, or scikit-learn's line that called it in ``cross_val_score``, one
    warning per fit (main: ``fair.py:637``)."""
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(300, 4, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line() + 1
        FairLogisticClassifier(random_state=0).fit(X, y)
    (w,) = caught
    assert (w.filename, w.lineno) == (__file__, line)
    assert "sensitive_features is None" in str(w.message)
    assert "enable_metadata_routing" in str(w.message)  # what to do about it
    # Deeper paths: the steering's warning after solves run through joblib, and a certified
    # fit that replays the warnings of the fit inside it.
    X, y, groups, _ = _issue_data()
    for make in (
        lambda: FairLogisticClassifier(bound=0.05, max_passes=3, n_seeds=2, random_state=0),
        lambda: FairLogisticClassifier(
            bound=0.2, max_passes=3, calibration="clopper-pearson", random_state=0
        ),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = _line() + 1
            make().fit(X, y, sensitive_features=groups)
        assert caught
        assert {(w.filename, w.lineno) for w in caught} == {(__file__, line)}
    X, y = make_classification(300, 4, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_val_score(FairLogisticClassifier(random_state=0), X, y, cv=3)
    assert len(caught) == 3
    for w in caught:
        assert not Path(w.filename).is_relative_to(PACKAGE), w.filename


def test_routed_groups_leave_nothing_to_warn():
    """The forgotten groups' remedy works: routed, cross_val_score passes them to each fit."""
    import sklearn
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(300, 4, random_state=0)
    groups = (X[:, 0] > 0).astype(int)
    with (
        sklearn.config_context(enable_metadata_routing=True),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        cross_val_score(
            FairLogisticClassifier(random_state=0),
            X,
            y,
            cv=3,
            params={"sensitive_features": groups},
        )
    assert not [w for w in caught if "sensitive_features is None" in str(w.message)]


def _line():
    """The line of the caller."""
    import inspect

    return inspect.currentframe().f_back.f_lineno


def _pipeline_data():
    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n),
            "sex": rng.choice(["M", "F"], n),
            "priors": rng.poisson(2, n),
        }
    )
    y = (rng.random(n) < 1 / (1 + np.exp(-(X["age"] - 40) / 10 - (X["sex"] == "M")))).astype(int)
    return X, y, rng.choice(["a", "b"], n)


def test_report_headers_are_unique_and_a_pipeline_step_baseline_is_refused_clearly():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sklearn_ialm import BoundReport

    X, y, race = _pipeline_data()

    def prep():
        return make_column_transformer(
            (OneHotEncoder(), ["sex"]), (StandardScaler(), ["age", "priors"])
        )

    pipe = make_pipeline(prep(), FairLogisticClassifier(bound=0.05, random_state=0))
    pipe.fit(X, y, fairlogisticclassifier__sensitive_features=race)
    plain = make_pipeline(prep(), LogisticRegression()).fit(X, y)
    # The last step of a Pipeline was fitted on transformed rows: refused, saying what to
    # pass (main: "could not convert string to float: 'M'").
    with pytest.raises(ValueError, match="not the last step of a Pipeline"):
        BoundReport.from_estimator(pipe, X, y, sensitive_features=race, baseline=plain[-1])
    # A whole fitted Pipeline predicts from the raw rows, as the estimator's does.
    report = BoundReport.from_estimator(pipe, X, y, sensitive_features=race, baseline=plain)
    expected = demographic_parity_difference(y, plain.predict(X), sensitive_features=race)
    assert report.bounds[0]["baseline_value"] == pytest.approx(expected, abs=1e-12)
    tables = [
        block.splitlines()[0]
        for block in report.to_markdown().split("\n\n")
        if block.startswith("|")
    ]
    assert len(tables) == 3
    for header in tables:
        cells = [c.strip() for c in header.strip("|").split("|")]
        assert len(cells) == len(set(cells)), header
    text_header = str(report).splitlines()[2].split()
    assert text_header.count("bound") == 1
    # The guide says what to pass.
    guide = (PACKAGE.parent / "doc" / "user_guide" / "constraints.rst").read_text()
    assert "not the last step" in guide
