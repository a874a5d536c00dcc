"""The inputs of fit, the bound report and the displays (issue 34, items 3, 4, 5 and 11):
rows paired by label, the report taking what fit takes, a column of strings named as the
groups, and a report a reviewer can trace. Checked against fairlearn's metrics on the
predictions, fits on inputs put in order by hand, and the standard library's parsers."""

from __future__ import annotations

import copy
import json
import warnings
from datetime import UTC, datetime
from html.parser import HTMLParser

import matplotlib
import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, demographic_parity_difference, selection_rate
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

import sklearn_ialm
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

matplotlib.use("Agg")

from sklearn_ialm.plotting import BoundDisplay, NPROCDisplay  # noqa: E402

N = 600
BY_POSITION = "rows are paired by position"

pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning"),
]


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=N, n_features=5, random_state=3)
    noise = np.random.default_rng(3).normal(size=N)
    groups = np.where(X[:, 0] + noise > 0.3, "F", "M")
    race = np.where(X[:, 1] + noise > 0.0, "r1", "r2")
    return X, y, groups, race


def _frame(X, index=None):
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])], index=index)


def _fair(**kw):
    return FairLogisticClassifier(**{"bound": 0.05, "random_state": 0, "max_passes": 60, **kw})


# -- item 3: rows are paired by label, never silently by position ---------------------------------
def test_fit_pairs_pandas_inputs_by_label(data):
    """X, y, sample_weight and the groups, each in another row order: the model is the one
    fitted on the inputs put in X's order by hand, and its gap (fairlearn's, on the true
    groups) is the fit's own."""
    X, y, groups, _ = data
    rng = np.random.default_rng(0)
    index = rng.permutation(N) + 1000  # labels that are not positions
    w = rng.uniform(0.5, 2.0, size=N)
    df = _frame(X, index)
    series = {
        "y": pd.Series(y, index=index),
        "sample_weight": pd.Series(w, index=index),
        "sensitive_features": pd.Series(groups, index=index),
    }
    shuffled = {k: v.iloc[rng.permutation(N)] for k, v in series.items()}  # each its own order
    ordered = _fair().fit(df, series["y"], **{k: series[k] for k in series if k != "y"})
    aligned = _fair().fit(df, shuffled["y"], **{k: shuffled[k] for k in shuffled if k != "y"})
    assert_array_equal(aligned.coef_, ordered.coef_)
    assert_array_equal(aligned.intercept_, ordered.intercept_)
    gap = demographic_parity_difference(
        y, aligned.predict(df), sensitive_features=groups, sample_weight=w
    )
    assert gap == pytest.approx(aligned.hard_constraint_values_[0], abs=1e-12)
    assert gap <= aligned.bound_ + 1e-12
    # Neyman-Pearson's inputs likewise.
    np_kw = dict(max_fpr=0.1, random_state=0, max_passes=40)
    ordered = NeymanPearsonClassifier(**np_kw).fit(
        df, series["y"], sample_weight=series["sample_weight"]
    )
    aligned = NeymanPearsonClassifier(**np_kw).fit(
        df, shuffled["y"], sample_weight=shuffled["sample_weight"]
    )
    assert_array_equal(aligned.coef_, ordered.coef_)
    assert aligned.train_fpr_ == ordered.train_fpr_


@pytest.mark.parametrize(
    "name, make, match",
    [
        ("sensitive_features", lambda v, ix: pd.Series(v, index=ix + 1), "1 label"),
        ("y", lambda v, ix: pd.Series(v, index=ix + 5), "5 label"),
        ("sample_weight", lambda v, ix: pd.Series(np.ones(len(ix)), index=ix[::-1] % 7), "dup"),
    ],
)
def test_fit_refuses_other_labels_naming_the_parameter(data, name, make, match):
    X, y, groups, _ = data
    df = _frame(X)
    kw = dict(y=y, sample_weight=None, sensitive_features=groups)
    kw[name] = make(kw[name] if name != "sample_weight" else None, df.index)
    clf = _fair()
    with pytest.raises(ValueError, match=f"{name} has a pandas index .*{match}"):
        clf.fit(df, kw.pop("y"), **kw)
    assert not hasattr(clf, "coef_")


@pytest.mark.filterwarnings("ignore:.*predicting the same class for every row:UserWarning")
def test_ndarray_x_with_a_reordered_series_warns(data):
    """The issue's case: an ndarray X and a shuffled Series of groups. The rows are paired by
    position (there is no other pairing), and the fit says so."""
    X, y, groups, _ = data
    order = np.random.default_rng(1).permutation(N)
    shuffled = pd.Series(groups).iloc[order]
    with pytest.warns(UserWarning, match=f"sensitive_features is a pandas .*{BY_POSITION}"):
        _fair(max_passes=5).fit(X, y, sensitive_features=shuffled)
    with pytest.warns(UserWarning, match=f"y is a pandas .*{BY_POSITION}"):
        NeymanPearsonClassifier(max_passes=5).fit(X, pd.Series(y).iloc[order])
    # An index in increasing order (0..n-1, the rows a fold or a filter keeps) stays silent.
    keep = np.flatnonzero(X[:, 3] > -1.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{BY_POSITION}")
        _fair(max_passes=5).fit(X, y, sensitive_features=pd.Series(groups))
        _fair(max_passes=5).fit(
            X[keep], pd.Series(y)[keep], sensitive_features=pd.Series(groups)[keep]
        )


def test_a_grid_search_on_ndarray_x_with_series_groups_is_silent(data):
    """Routed metadata is split per fold with the Series' labels kept (increasing): no
    warning in every fold."""
    X, y, groups, _ = data
    est = _fair(max_passes=10)
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{BY_POSITION}")
        GridSearchCV(est, {"bound": [0.1]}, cv=3).fit(
            X, pd.Series(y), sensitive_features=pd.Series(groups)
        )


@pytest.fixture(scope="module")
def split(data):
    """A fit on 400 rows, and 200 test rows as a DataFrame with labelled rows."""
    X, y, groups, _ = data
    clf = _fair().fit(_frame(X[:400]), y[:400], sensitive_features=groups[:400])
    index = np.arange(400, N)
    test = (_frame(X[400:], index), pd.Series(y[400:], index), pd.Series(groups[400:], index))
    return clf, test


@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_report_pairs_pandas_inputs_by_label(data, split):
    clf, (X_test, y_test, g_test) = split
    order = np.random.default_rng(2).permutation(len(y_test))
    aligned = clf.bound_report(X_test, y_test, sensitive_features=g_test)
    shuffled = clf.bound_report(
        X_test, y_test.iloc[order], sensitive_features=g_test.iloc[order[::-1]]
    )
    assert shuffled.to_dict() == aligned.to_dict()
    pred = clf.predict(X_test)
    truth = demographic_parity_difference(y_test, pred, sensitive_features=g_test)
    assert shuffled.bounds[0]["value"] == pytest.approx(truth, abs=1e-12)
    frame = MetricFrame(
        metrics=selection_rate, y_true=y_test, y_pred=pred, sensitive_features=g_test
    )
    rates = {r["group"]: r["value"] for r in shuffled.rates if r["group"] != "overall"}
    assert rates == pytest.approx(frame.by_group.to_dict(), abs=1e-12)
    with pytest.raises(ValueError, match="sensitive_features has a pandas index"):
        clf.bound_report(X_test, y_test, sensitive_features=g_test.reset_index(drop=True))
    with pytest.warns(UserWarning, match=f"y and sensitive_features are pandas .*{BY_POSITION}"):
        clf.bound_report(
            X_test.to_numpy(),
            y_test.iloc[order],
            sensitive_features=g_test.iloc[order],
        )


def test_displays_pair_pandas_inputs_by_label(data, split):
    clf, (X_test, y_test, g_test) = split
    X, y, groups, _ = data
    order = np.random.default_rng(4).permutation(len(y_test))
    display = BoundDisplay.from_estimator(
        clf,
        _frame(X[:400]),
        y[:400],
        sensitive_features=groups[:400],
        X_test=X_test,
        y_test=y_test.iloc[order],
        sensitive_features_test=g_test.iloc[order],
        plot=False,
    )
    report = clf.bound_report(X_test, y_test, sensitive_features=g_test)
    assert display.reports[1].to_dict() == report.to_dict()
    np_clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0, max_passes=40)
    np_clf.fit(_frame(X[:400]), y[:400])
    roc = NPROCDisplay.from_estimator(np_clf, X_test, y_test.iloc[order], plot=False)
    truth = NPROCDisplay.from_estimator(np_clf, _frame(X[400:]), y[400:], plot=False)
    assert_array_equal(roc.fpr, truth.fpr)
    assert roc.operating_point == truth.operating_point


# -- item 4: the report takes what fit takes ------------------------------------------------------
def test_report_takes_column_names(data):
    X, y, groups, race = data
    df = _frame(X).assign(g=(groups == "F").astype(int), h=(race == "r1").astype(int))
    clf = _fair().fit(df, y, sensitive_features="g")
    by_name = clf.bound_report(df, y, sensitive_features="g")
    assert by_name.to_dict() == clf.bound_report(df, y, sensitive_features=df["g"]).to_dict()
    truth = demographic_parity_difference(y, clf.predict(df), sensitive_features=df["g"])
    assert by_name.bounds[0]["value"] == pytest.approx(truth, abs=1e-12)
    inter = _fair().fit(df, y, sensitive_features=["g", "h"])
    by_names = inter.bound_report(df, y, sensitive_features=["g", "h"])
    assert (
        by_names.to_dict()
        == inter.bound_report(df, y, sensitive_features=df[["g", "h"]]).to_dict()
    )
    assert {tuple(r["group"]) for r in by_names.rates if r["group"] != "overall"} == {
        (a, b) for a in (0, 1) for b in (0, 1)
    }
    display = BoundDisplay.from_estimator(clf, df, y, sensitive_features="g", plot=False)
    assert display.reports[0].to_dict() == by_name.to_dict()
    with pytest.raises(ValueError, match=r"\['zz'\] is not a column of X"):
        clf.bound_report(df, y, sensitive_features="zz")


@pytest.mark.parametrize("confidence", [None, "0.9", True, 0.0, 1.5, float("nan")])
def test_report_confidence_is_checked(data, split, confidence):
    clf, (X_test, y_test, g_test) = split
    with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\)"):
        clf.bound_report(X_test, y_test, sensitive_features=g_test, confidence=confidence)


def test_baseline_on_other_labels_is_refused(data, split):
    X, y, groups, _ = data
    clf, (X_test, y_test, g_test) = split
    baseline = LogisticRegression().fit(X_test, np.where(y_test == 1, "yes", "no"))
    with pytest.raises(ValueError, match=r"baseline has classes_ \['no', 'yes'\], not .*\[0, 1\]"):
        clf.bound_report(X_test, y_test, sensitive_features=g_test, baseline=baseline)

    class Predicts:  # no classes_: its predictions are checked instead
        def predict(self, X):
            return np.full(len(X), "yes")

    with pytest.raises(ValueError, match="baseline predicts labels"):
        clf.bound_report(X_test, y_test, sensitive_features=g_test, baseline=Predicts())


def test_baseline_with_the_classes_in_another_order_is_read_by_label(data):
    """The estimator's classes_ are ["b", "a"] (pos_label="a"); a baseline's are sorted."""
    X, y, groups, _ = data
    labels = np.where(y == 1, "a", "b")
    clf = _fair(pos_label="a").fit(X, labels, sensitive_features=groups)
    baseline = LogisticRegression().fit(X, labels)
    assert clf.classes_.tolist() == ["b", "a"] and baseline.classes_.tolist() == ["a", "b"]
    report = clf.bound_report(X, labels, sensitive_features=groups, baseline=baseline)
    base = baseline.predict(X)
    frame = MetricFrame(
        metrics=selection_rate, y_true=labels == "a", y_pred=base == "a", sensitive_features=groups
    )
    rates = {r["group"]: r["baseline_value"] for r in report.rates if r["group"] != "overall"}
    assert rates == pytest.approx(frame.by_group.to_dict(), abs=1e-12)
    assert report.bounds[0]["baseline_value"] == pytest.approx(
        demographic_parity_difference(labels == "a", base == "a", sensitive_features=groups)
    )


def test_bound_display_needs_a_report(split):
    with pytest.raises(ValueError, match="at least one BoundReport"):
        BoundDisplay(reports=[], labels=[])
    with pytest.raises(TypeError, match="BoundReport objects"):
        BoundDisplay(reports=[{"bounds": []}], labels=["training"])


# -- item 5: a column of strings named as the groups ----------------------------------------------
def test_a_string_column_named_in_sensitive_features_is_the_group(data):
    X, y, groups, _ = data
    df = _frame(X).assign(sex=groups)
    clf = _fair().fit(df, y, sensitive_features="sex")
    # The column gives the groups; it is no feature of the model.
    assert clf.text_group_columns_ == ["sex"]
    assert clf.feature_names_in_.tolist() == [f"f{i}" for i in range(5)]
    assert clf.n_features_in_ == clf.coef_.shape[1] == 5
    # The same model as the features and the group column given apart.
    apart = _fair().fit(_frame(X), y, sensitive_features=df["sex"])
    assert_array_equal(clf.coef_, apart.coef_)
    assert_array_equal(clf.groups_, ["F", "M"])
    # predict reads a DataFrame with the column, or without it.
    pred = clf.predict(df)
    assert_array_equal(pred, clf.predict(_frame(X)))
    # Dropping the column leaves a frame laid out otherwise: the products may differ in the
    # last bit (1e-16 on numpy 1.24), the predictions do not.
    assert_allclose(clf.predict_proba(df), apart.predict_proba(_frame(X)), rtol=1e-12)
    gap = demographic_parity_difference(y, pred, sensitive_features=df["sex"])
    assert gap == pytest.approx(clf.hard_constraint_values_[0], abs=1e-12)
    assert gap <= clf.bound_ + 1e-12
    # The report by name reads the same column.
    report = clf.bound_report(df, y, sensitive_features="sex")
    assert report.bounds[0]["value"] == pytest.approx(gap, abs=1e-12)


def test_a_grid_search_routes_a_string_column_by_name(data):
    X, y, groups, _ = data
    df = _frame(X).assign(sex=groups)
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(_fair(max_passes=20), {"bound": [0.1]}, cv=3)
        search.fit(df, y, sensitive_features="sex")
    best = search.best_estimator_
    assert best.text_group_columns_ == ["sex"] and "sex" not in best.feature_names_in_
    gap = demographic_parity_difference(y, search.predict(df), sensitive_features=groups)
    assert gap == pytest.approx(best.hard_constraint_values_[0], abs=1e-12)


def test_several_string_columns_give_intersections(data):
    X, y, groups, race = data
    df = _frame(X).assign(sex=groups, race=pd.Categorical(race), g=(X[:, 2] > 0).astype(int))
    clf = _fair().fit(df, y, sensitive_features=["sex", "race", "g"])
    # The text columns are left out, the column of numbers stays a feature.
    assert clf.text_group_columns_ == ["sex", "race"]
    assert clf.feature_names_in_.tolist() == [f"f{i}" for i in range(5)] + ["g"]
    expected = sorted(set(zip(groups, race, df["g"], strict=True)))
    assert [tuple(g) for g in clf.groups_] == expected
    apart = _fair().fit(
        df.drop(columns=["sex", "race"]), y, sensitive_features=df[["sex", "race", "g"]]
    )
    assert_array_equal(clf.coef_, apart.coef_)
    key = [f"{a}|{b}|{c}" for a, b, c in zip(groups, race, df["g"], strict=True)]
    gap = demographic_parity_difference(y, clf.predict(df), sensitive_features=key)
    assert gap == pytest.approx(clf.hard_constraint_values_[0], abs=1e-12)


def test_a_string_group_column_in_a_certified_fit(data):
    X, y, groups, _ = data
    df = _frame(X).assign(sex=groups)
    kw = dict(bound=0.2, calibration="clopper-pearson", calibration_size=0.5, delta=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # certified or not: the same check
        clf = _fair(**kw).fit(df, y, sensitive_features="sex")
        apart = _fair(**kw).fit(_frame(X), y, sensitive_features=groups)
    assert clf.text_group_columns_ == ["sex"] and "sex" not in clf.feature_names_in_
    assert_array_equal(clf.coef_, apart.coef_)
    assert clf.certificate_.value == apart.certificate_.value
    assert_array_equal(clf.predict(df), apart.predict(_frame(X)))


# -- item 11: a report a reviewer can trace -------------------------------------------------------
def test_the_report_records_what_traces_the_fit(data):
    X, y, groups, _ = data
    w = np.ones(N)
    w[:7] = 0.0  # rows of weight zero are not fitted on
    state = np.random.RandomState(0)
    before = datetime.now(UTC).replace(microsecond=0)
    clf = _fair(random_state=state, class_weight={0: 1.0, 1: 2.0})
    clf.fit(X, y, sensitive_features=groups, sample_weight=w)
    after = datetime.now(UTC)
    fit = json.loads(
        json.dumps(clf.bound_report(X, y, sensitive_features=groups).to_dict(), allow_nan=False)
    )["fit"]
    params = clf.get_params(deep=False)
    assert set(fit["params"]) == set(params)
    assert (
        fit["params"]["bound"] == params["bound"]
        and fit["params"]["constraint"] == (params["constraint"])
    )
    assert fit["params"]["class_weight"] == {"0": 1.0, "1": 2.0}
    assert fit["params"]["random_state"] == repr(state)
    assert fit["package_version"] == sklearn_ialm.__version__
    assert fit["n_samples_fit"] == clf.n_samples_fit_ == N - 7
    fitted = datetime.fromisoformat(fit["fitted_at"])
    assert fitted.utcoffset().total_seconds() == 0 and before <= fitted <= after
    assert fit["fitted_at"] == clf.fitted_at_


def test_the_rows_fitted_on_exclude_the_held_out_rows(data):
    X, y, _, _ = data
    clf = NeymanPearsonClassifier(
        max_fpr=0.2, delta=0.2, calibration="umbrella", random_state=0, max_passes=40
    ).fit(X, y)
    assert clf.n_samples_fit_ == N - clf.n_calibration_
    assert clf.bound_report(X, y).to_dict()["fit"]["n_samples_fit"] == N - clf.n_calibration_


def test_a_dask_fit_records_its_rows_and_time(data):
    da = pytest.importorskip("dask.array")
    import dask

    X, y, _, _ = data
    before = datetime.now(UTC).replace(microsecond=0)
    with dask.config.set(scheduler="synchronous"):
        clf = NeymanPearsonClassifier(max_fpr=0.2, max_passes=20, random_state=0)
        clf.fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    assert clf.n_samples_fit_ == N
    assert before <= datetime.fromisoformat(clf.fitted_at_) <= datetime.now(UTC)


def test_markdown_has_the_overall_rates(split):
    clf, (X_test, y_test, g_test) = split
    report = clf.bound_report(X_test, y_test, sensitive_features=g_test)
    markdown = report.to_markdown()
    pred = clf.predict(X_test)
    accuracy = np.mean(pred == y_test)
    fnr = 1 - np.mean(pred[y_test == 1] == 1)
    assert f"| accuracy | {accuracy:.3f} |" in markdown
    assert f"| false_negative_rate | {fnr:.3f} |" in markdown
    assert f"on {clf.n_samples_fit_} rows" in markdown


class _Page(HTMLParser):
    """The tables (by caption) and the text of an HTML page; fails on a tag left open."""

    def __init__(self):
        super().__init__()
        self.tables, self.text, self.open = {}, [], []
        self._caption = self._cell = None

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br"):
            self.open.append(tag)
        if tag == "caption":
            self._caption = ""
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        assert self.open.pop() == tag
        if tag == "caption":
            self.tables[self._caption] = self._rows = []
            self._caption = None
        elif tag in ("td", "th"):
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self._rows.append(self._row)

    def handle_data(self, data):
        self.text.append(data)
        if self._caption is not None:
            self._caption += data
        elif self._cell is not None:
            self._cell += data


def test_to_html_is_a_page_with_the_figures(data):
    X, y, groups, _ = data
    odd = np.where(groups == "F", "<i>F&amp;</i>", "M")  # markup in a label stays text
    clf = _fair().fit(X, y, sensitive_features=odd)
    report = clf.bound_report(
        X, y, sensitive_features=odd, baseline=LogisticRegression().fit(X, y)
    )
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "<i>" not in page
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.open == []
    rates = parser.tables["Rates of predict per group"]
    assert {row[2] for row in rates[1:]} == {"<i>F&amp;</i>", "M", "overall"}
    summary = {row[0]: row[1] for row in parser.tables["Overall"][1:]}
    pred = clf.predict(X)
    assert float(summary["accuracy"]) == pytest.approx(np.mean(pred == y), abs=5e-4)
    bounds = parser.tables["Bounds on these rows"]
    gap = demographic_parity_difference(y, pred, sensitive_features=odd)
    assert float(bounds[1][1]) == pytest.approx(gap, abs=5e-4)
    params = dict(parser.tables["Parameters of FairLogisticClassifier"][1:])
    assert params["bound"] == "0.05"
    assert any(sklearn_ialm.__version__ in t for t in parser.text)
    # The notebook view is the page's body, without the parameters.
    fragment = report._repr_html_()
    assert fragment.removesuffix("</div>") in page and "Parameters of" not in fragment


def test_an_old_model_without_the_trace_still_reports(split):
    clf, (X_test, y_test, g_test) = split
    old = copy.deepcopy(clf)
    del old.fitted_at_, old.n_samples_fit_
    report = old.bound_report(X_test, y_test, sensitive_features=g_test)
    assert report.to_dict()["fit"]["fitted_at"] is None
    assert "Fitted at" not in str(report)
