"""BoundReport and BoundDisplay against independent truths: fairlearn's MetricFrame and metric
functions on the same predictions, scipy's exact binomial limits, scikit-learn's confusion
matrix, the fit's own certificate, and the report of a Pipeline's last step."""

from __future__ import annotations

import json
import warnings
from html.parser import HTMLParser

import matplotlib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from fairlearn import metrics as flm
from scipy.stats import beta, binomtest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, confusion_matrix
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ialm import BoundReport, FairLogisticClassifier, NeymanPearsonClassifier

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_ialm.plotting import BoundDisplay  # noqa: E402

N = 400

#: fairlearn's metric of each parity kind and form.
FAIRLEARN = {
    ("demographic_parity", "difference"): flm.demographic_parity_difference,
    ("demographic_parity", "ratio"): flm.demographic_parity_ratio,
    ("true_positive_rate_parity", "difference"): flm.equal_opportunity_difference,
    ("true_positive_rate_parity", "ratio"): flm.equal_opportunity_ratio,
    ("false_positive_rate_parity", "difference"): flm.false_positive_rate_difference,
    ("false_positive_rate_parity", "ratio"): flm.false_positive_rate_ratio,
    ("equalized_odds", "difference"): flm.equalized_odds_difference,
    ("equalized_odds", "ratio"): flm.equalized_odds_ratio,
    ("error_rate_parity", "difference"): flm.zero_one_loss_difference,
    ("error_rate_parity", "ratio"): flm.zero_one_loss_ratio,
}
CASES = [(kind, form) for kind, form in FAIRLEARN] + [
    ("positive_share", None),
    ("disparate_impact", None),
]
BOUNDS = {"difference": 0.1, "ratio": 0.8, None: 0.15}


def _error_rate(y_true, y_pred, sample_weight=None):
    return 1.0 - accuracy_score(y_true, y_pred, sample_weight=sample_weight)


#: MetricFrame's metric for each rate of the report.
RATE_METRICS = {
    "selection_rate": flm.selection_rate,
    "true_positive_rate": flm.true_positive_rate,
    "false_positive_rate": flm.false_positive_rate,
    "false_negative_rate": flm.false_negative_rate,
    "error_rate": _error_rate,
}


def _data(n_groups, seed=0):
    X, y = make_classification(
        n_samples=N, n_features=6, n_informative=4, random_state=seed, shuffle=False
    )
    rng = np.random.default_rng(seed)
    order = rng.permutation(N)  # make_classification without shuffle sorts rows by class
    X, y = X[order], y[order]
    # Groups that go with a feature, so that the rates differ between them.
    score = X[:, 0] + rng.normal(scale=1.0, size=N)
    groups = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_groups + 1)[1:-1]))
    return X, y, np.array([f"g{g}" for g in groups])


def _fit(kind, form, X, y, groups, **kwargs):
    clf = FairLogisticClassifier(
        constraint=kind, form=form, bound=BOUNDS[form], max_passes=40, random_state=0, **kwargs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short budget may not converge: not the point here
        return clf.fit(X, y, sensitive_features=groups)


def _by_group(report, rate):
    return {r["group"]: r for r in report.rates if r["rate"] == rate}


def _check_against_fairlearn(clf, report, X, y, groups, sample_weight=None):
    pred = (clf.predict(X) == clf.classes_[1]).astype(int)  # y is 0/1 here
    kind, form = clf.constraint, clf.form
    params = None if sample_weight is None else {"sample_weight": sample_weight}
    rate_names = sorted({r["rate"] for r in report.rates} - {"share_of_positives"})
    frame = flm.MetricFrame(
        metrics={name: RATE_METRICS[name] for name in rate_names},
        y_true=y,
        y_pred=pred,
        sensitive_features=groups,
        sample_params=None if params is None else {name: params for name in rate_names},
    )
    for name in rate_names:
        rows = _by_group(report, name)
        for group, expected in frame.by_group[name].items():
            assert rows[group]["value"] == pytest.approx(expected, abs=1e-12), (name, group)
        assert rows["overall"]["value"] == pytest.approx(frame.overall[name], abs=1e-12)
        for group in np.unique(groups):
            # The rows the rate is a share of: the group, and its class where it conditions.
            cond = {"true_positive_rate": y == 1, "false_positive_rate": y == 0}
            cond.update(false_negative_rate=y == 1)
            mask = (groups == group) & cond.get(name, np.ones(N, dtype=bool))
            assert rows[group]["n"] == mask.sum()
    value = report.bounds[0]["value"]
    w = np.ones(N) if sample_weight is None else sample_weight
    if (kind, form or "difference") in FAIRLEARN:
        metric = FAIRLEARN[kind, form or "difference"]
        expected = metric(y, pred, sensitive_features=groups, sample_weight=sample_weight)
    elif kind == "positive_share":
        expected = min(
            np.sum(w * pred * (groups == g)) / np.sum(w * pred) for g in clf.protected_groups_
        )
        shares = _by_group(report, "share_of_positives")
        for g in np.unique(groups):
            share = np.sum(w * pred * (groups == g)) / np.sum(w * pred)
            assert shares[g]["value"] == pytest.approx(share, abs=1e-12)
    else:
        overall = np.average(pred, weights=w)
        expected = min(
            np.average(pred[groups == g], weights=w[groups == g]) / overall
            for g in clf.protected_groups_
        )
    assert value == pytest.approx(expected, abs=1e-12)
    bound = report.bounds[0]
    # A value on the bound up to rounding (1e-12, the report's BOUND_EPS) meets it.
    eps = 1e-12
    if bound["direction"] == "<=":
        broken = value > bound["bound"] + eps
    else:
        broken = value < bound["bound"] - eps
    assert (bound["status"] == "not met") == broken


@pytest.mark.parametrize("n_groups", [2, 5])
@pytest.mark.parametrize(("kind", "form"), CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_rates_and_metric_equal_fairlearn(kind, form, n_groups):
    X, y, groups = _data(n_groups)
    clf = _fit(kind, form, X, y, groups)
    report = clf.bound_report(X, y, sensitive_features=groups)
    _check_against_fairlearn(clf, report, X, y, groups)
    # Two groups: the minority is protected, one pair; five: every group. A parity bound
    # then constrains every pair, and protects no group.
    expected = 1 if n_groups == 2 else 5
    assert len(clf.protected_groups_) == expected
    if kind in ("positive_share", "disparate_impact"):
        assert len(report.protected_groups) == expected
        protected = {r["group"] for r in report.rates if r["protected"]}
        assert protected == set(clf.protected_groups_.tolist())
    else:
        assert report.protected_groups is None
        assert all(r["protected"] is None for r in report.rates)


@pytest.mark.parametrize("layout", ["dense", "csr", "pandas"])
@pytest.mark.parametrize("kind", ["demographic_parity", "equalized_odds"])
def test_input_layouts_give_fairlearns_values(layout, kind):
    X, y, groups = _data(5, seed=1)
    y_in, groups_in = y, groups
    if layout == "csr":
        X = sp.csr_matrix(X)
    elif layout == "pandas":
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
        y_in = pd.Series(np.where(y == 1, "yes", "no"))
        groups_in = pd.Series(groups, name="group")
    clf = _fit(kind, "difference", X, y_in, groups_in)
    report = clf.bound_report(X, y_in, sensitive_features=groups_in)
    _check_against_fairlearn(clf, report, X, y, groups)


def test_intervals_are_scipys_exact_binomial_limits():
    X, y, groups = _data(5)
    clf = _fit("equalized_odds", "difference", X, y, groups)
    for confidence in (0.95, 0.8):
        report = clf.bound_report(X, y, sensitive_features=groups, confidence=confidence)
        for r in report.rates + report.summary:
            n, k = (r["n"], r["k"]) if "n" in r else (None, None)
            if n is None:
                continue
            ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
            assert (r["lower"], r["upper"]) == pytest.approx((ci.low, ci.high), abs=1e-10)
        for s in report.summary:
            assert s["lower"] <= s["value"] <= s["upper"]


def test_weighted_rates_are_fairlearns_and_intervals_use_the_effective_size():
    X, y, groups = _data(2)
    w = np.random.default_rng(3).uniform(0.2, 3.0, size=N)
    clf = _fit("demographic_parity", "difference", X, y, groups)
    report = clf.bound_report(X, y, sensitive_features=groups, sample_weight=w)
    _check_against_fairlearn(clf, report, X, y, groups, sample_weight=w)
    pred = clf.predict(X)
    for g, r in _by_group(report, "selection_rate").items():
        rows = groups == g if g != "overall" else np.ones(N, dtype=bool)
        wg = w[rows]
        n_eff = wg.sum() ** 2 / np.sum(wg**2)
        k_eff = n_eff * np.average(pred[rows], weights=wg)
        assert r["n_effective"] == pytest.approx(n_eff)
        assert r["lower"] == pytest.approx(beta.ppf(0.025, k_eff, n_eff - k_eff + 1))
        assert r["upper"] == pytest.approx(beta.ppf(0.975, k_eff + 1, n_eff - k_eff))
    # Equal weights: the effective size is the row count, the intervals the exact ones.
    equal = clf.bound_report(X, y, sensitive_features=groups, sample_weight=np.full(N, 2.5))
    plain = clf.bound_report(X, y, sensitive_features=groups)
    for a, b in zip(equal.rates, plain.rates, strict=True):
        assert (a["value"], a["lower"], a["upper"]) == pytest.approx(
            (b["value"], b["lower"], b["upper"])
        )


def test_limit_on_the_calibration_rows_is_the_certificate():
    X, y = make_classification(n_samples=3000, n_features=5, random_state=0)
    noise = np.random.default_rng(0).normal(size=len(X))
    groups = np.where(X[:, 0] + noise < -0.5, "b", "a")
    clf = FairLogisticClassifier(
        constraint="demographic_parity",
        bound=0.2,
        calibration="clopper-pearson",
        calibration_size=0.5,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    held = clf.calibration_indices_
    report = clf.bound_report(
        X[held], y[held], sensitive_features=groups[held], confidence=1 - clf.delta
    )
    assert report.bounds[0]["limit"] == pytest.approx(clf.certificate_.value, abs=1e-12)
    certified = report.bounds[0]["status"] == "certified"
    assert certified == clf.certified_
    fit = report.fit["certificate"]
    assert fit["value"] == clf.certificate_.value and fit["certified"] == clf.certified_
    assert fit["n_calibration"] == len(held)
    assert "Certificate of the fit" in str(report)


def test_pipeline_report_is_its_last_steps_on_transformed_rows():
    X, y, groups = _data(5)
    X = X * 50 + 7
    pipe = make_pipeline(
        StandardScaler(),
        FairLogisticClassifier(
            constraint="true_positive_rate_parity", bound=0.1, max_passes=40, random_state=0
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y, fairlogisticclassifier__sensitive_features=groups)
    base = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    report = BoundReport.from_estimator(pipe, X, y, sensitive_features=groups, baseline=base)
    step = pipe[-1].bound_report(
        pipe[:-1].transform(X), y, sensitive_features=groups, baseline=_Fixed(base.predict(X))
    )
    assert report.to_dict() == step.to_dict()


class _Fixed:
    """A 'model' that predicts given labels: the baseline of the transformed rows."""

    def __init__(self, pred):
        self.pred = pred

    def predict(self, X):
        return self.pred


def test_baseline_gives_the_price_of_the_bound():
    X, y, groups = _data(2)
    clf = _fit("demographic_parity", "difference", X, y, groups)
    base = LogisticRegression().fit(X, y)
    report = clf.bound_report(X, y, sensitive_features=groups, baseline=base)
    summary = {s["metric"]: s for s in report.summary}
    acc, base_acc = accuracy_score(y, clf.predict(X)), accuracy_score(y, base.predict(X))
    assert summary["accuracy"]["value"] == pytest.approx(acc)
    assert summary["accuracy"]["baseline_value"] == pytest.approx(base_acc)
    assert summary["accuracy"]["difference"] == pytest.approx(acc - base_acc)
    fnr = flm.false_negative_rate(y, base.predict(X))
    assert summary["false_negative_rate"]["baseline_value"] == pytest.approx(fnr)
    gap = flm.demographic_parity_difference(y, base.predict(X), sensitive_features=groups)
    assert report.bounds[0]["baseline_value"] == pytest.approx(gap)
    rates = _by_group(report, "selection_rate")
    for g in ("g0", "g1"):
        expected = base.predict(X)[groups == g].mean()
        assert rates[g]["baseline_value"] == pytest.approx(expected)
    assert "baseline" in report.to_frame("summary").columns.tolist()[3]


def test_neyman_pearson_rates_are_the_confusion_matrix_rates():
    X, y, groups = _data(2)
    clf = NeymanPearsonClassifier(max_fpr=0.1, max_passes=40, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X[:300], y[:300])
    report = clf.bound_report(X[300:], y[300:], sensitive_features=groups[300:])
    tn, fp, fn, tp = confusion_matrix(y[300:], clf.predict(X[300:])).ravel()
    fpr, fnr = _by_group(report, "false_positive_rate"), _by_group(report, "false_negative_rate")
    assert fpr["overall"]["value"] == pytest.approx(fp / (fp + tn))
    assert (fpr["overall"]["n"], fpr["overall"]["k"]) == (fp + tn, fp)
    assert fnr["overall"]["value"] == pytest.approx(fn / (fn + tp))
    bound = report.bounds[0]
    assert bound["name"] == "false_positive_rate" and bound["bound"] == 0.1
    assert bound["limit"] == fpr["overall"]["upper"]
    for g in ("g0", "g1"):
        m = groups[300:] == g
        tn, fp, fn, tp = confusion_matrix(y[300:][m], clf.predict(X[300:][m])).ravel()
        assert fpr[g]["value"] == pytest.approx(fp / (fp + tn))
        assert fnr[g]["value"] == pytest.approx(fn / (fn + tp))
    assert report.fit["threshold"] == clf.threshold_
    # Without groups: the overall rates only.
    alone = clf.bound_report(X[300:], y[300:])
    assert [r["group"] for r in alone.rates] == ["overall", "overall"]


def test_umbrella_delta_is_reported():
    X, y = make_classification(n_samples=1500, n_features=5, random_state=0)
    clf = NeymanPearsonClassifier(
        max_fpr=0.1, calibration="umbrella", max_passes=40, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X[:1000], y[:1000])
    report = clf.bound_report(X[1000:], y[1000:])
    umbrella = report.fit["umbrella"]
    assert umbrella["delta"] == clf.delta and umbrella["n_calibration"] == clf.n_calibration_
    assert umbrella["violation_bound"] == clf.violation_bound_ <= clf.delta
    assert f"delta={clf.delta:g}" in str(report) and "Umbrella" in report._repr_html_()


class _Tables(HTMLParser):
    """The cell texts of every table row, per table caption."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell, self._row, self._in_caption = {}, None, None, False
        self._caption = None

    def handle_starttag(self, tag, attrs):
        if tag == "caption":
            self._in_caption, self._caption = True, ""
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "caption":
            self._in_caption = False
            self.tables[self._caption] = []
        elif tag in ("td", "th"):
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.tables[self._caption].append(self._row)

    def handle_data(self, data):
        if self._in_caption:
            self._caption += data
        elif self._cell is not None:
            self._cell += data


def test_html_has_a_row_per_group_and_rate():
    X, y, groups = _data(5)
    clf = _fit("equalized_odds", "difference", X, y, groups)
    report = clf.bound_report(
        X, y, sensitive_features=groups, baseline=LogisticRegression().fit(X, y)
    )
    parser = _Tables()
    parser.feed(report._repr_html_())
    rates = parser.tables["Rates of predict per group"]
    header, body = rates[0], rates[1:]
    assert "95% interval" in header and "baseline" in header
    # Two rates (TPR, FPR), five groups and the overall row each.
    assert len(body) == 2 * 6
    assert {row[2] for row in body} == {"g0", "g1", "g2", "g3", "g4", "overall"}
    bounds = parser.tables["Bounds on these rows"]
    assert bounds[1][0] == "equalized_odds_difference"
    assert len(parser.tables["Overall"]) == 1 + 4


def test_text_markdown_frame_and_json():
    X, y, _ = _data(2)
    # Intersections of two columns: tuple labels must survive every export.
    sf = np.column_stack([np.where(X[:, 0] > 0, "p", "q"), np.where(X[:, 1] > 0, "r", "s")])
    clf = _fit("demographic_parity", "difference", X, y, sf)
    report = clf.bound_report(X, y, sensitive_features=sf)
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert [r["group"] for r in data["rates"]][:4] == [
        ["p", "r"],
        ["p", "s"],
        ["q", "r"],
        ["q", "s"],
    ]
    assert data["bounds"][0]["value"] == pytest.approx(report.bounds[0]["value"])
    frame = report.to_frame()
    row = frame[(frame["rate"] == "selection_rate") & (frame["group"] == ("p", "r"))]
    assert row["n"].tolist() == [np.sum((sf[:, 0] == "p") & (sf[:, 1] == "r"))]
    assert report.to_frame("bounds").index.tolist() == ["demographic_parity_difference"]
    markdown = report.to_markdown()
    # The rates table's rows (five cells; the overall table's have three).
    table_rows = [
        line
        for line in markdown.splitlines()
        if line.startswith("| selection_rate") and line.count(" | ") == 4
    ]
    assert len(table_rows) == 5  # four groups and overall
    text = str(report)
    assert report.bounds[0]["status"] in text and "demographic_parity_difference" in text
    with pytest.raises(ValueError, match="table"):
        report.to_frame("nope")


def test_errors():
    X, y, groups = _data(2)
    clf = _fit("demographic_parity", "difference", X, y, groups)
    with pytest.raises(ValueError, match="sensitive_features"):
        clf.bound_report(X, y)
    with pytest.raises(ValueError, match="confidence"):
        clf.bound_report(X, y, sensitive_features=groups, confidence=1.0)
    with pytest.raises(ValueError, match="classes_"):
        clf.bound_report(X, y + 5, sensitive_features=groups)
    with pytest.raises(TypeError, match="FairLogisticClassifier"):
        BoundReport.from_estimator(LogisticRegression().fit(X, y), X, y)


def test_display_of_a_pipeline_training_and_test_rows():
    X, y, groups = _data(5)
    pipe = make_pipeline(
        StandardScaler(),
        FairLogisticClassifier(
            constraint="equalized_odds", bound=0.15, max_passes=40, random_state=0
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X[:300], y[:300], fairlogisticclassifier__sensitive_features=groups[:300])
    try:
        display = BoundDisplay.from_estimator(
            pipe,
            X[:300],
            y[:300],
            sensitive_features=groups[:300],
            X_test=X[300:],
            y_test=y[300:],
            sensitive_features_test=groups[300:],
        )
        # TPR, FPR and the bound panel; the reports are those of the Pipeline.
        assert len(display.axes_) == 3 and display.labels == ["training", "test"]
        test = BoundReport.from_estimator(pipe, X[300:], y[300:], sensitive_features=groups[300:])
        assert display.reports[1].to_dict() == test.to_dict()
        ticks = [t.get_text() for t in display.axes_[-1].get_xticklabels()]
        assert f"test: {test.bounds[0]['status']}" in ticks[0]
        # One given Axes is split into the panels.
        fig, ax = plt.subplots()
        split = BoundDisplay.from_estimator(pipe, X, y, sensitive_features=groups, ax=ax)
        assert len(split.axes_) == 3 and split.figure_ is fig
        with pytest.raises(ValueError, match="3 axes"):
            display.plot(ax=[ax])
    finally:
        plt.close("all")


def _bounds_row(text, name):
    """The cells of the bounds table's row of ``name`` in the plain-text report."""
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return [cell.strip() for cell in line.split("  ") if cell.strip()]


def test_bound_values_are_printed_with_the_digits_that_decide():
    """Issue 49 item 5: "0.050 <= 0.05 not met" (42/837 = 0.0502). The printed value and
    limit compare with the bound as the values do; the fraction is printed beside."""
    X, y = make_classification(n_samples=8000, n_features=5, random_state=0)
    clf = NeymanPearsonClassifier(max_fpr=0.05, random_state=0).fit(X[:4000], y[:4000])
    pred, y_new = clf.predict(X[4000:]), y[4000:]
    fp = np.flatnonzero((y_new == 0) & (pred == 1)) + 4000
    tn = np.flatnonzero((y_new == 0) & (pred == 0)) + 4000
    for n_fp, n_tn in ((42, 795), (41, 779), (40, 760)):  # 0.0502, 0.04997, 0.05 exactly
        rows = np.concatenate([fp[:n_fp], tn[:n_tn]])
        report = clf.bound_report(X[rows], y[rows])
        bound = report.bounds[0]
        assert (bound["k"], bound["n"]) == (n_fp, n_fp + n_tn)
        met = n_fp / (n_fp + n_tn) <= 0.05
        assert (bound["status"] != "not met") == met
        cells = _bounds_row(str(report), "false_positive_rate")
        value, fraction = cells[1].split(" ")
        assert fraction == f"({n_fp}/{n_fp + n_tn})"
        assert (float(value) <= 0.05) == met, cells
        # The limit likewise decides "certified" (it does not meet the bound here).
        assert (float(cells[2]) <= 0.05) == (bound["limit"] <= 0.05)
        assert f"| {value} ({n_fp}/{n_fp + n_tn}) |" in report.to_markdown()


def test_decisive_rendering_agrees_with_the_status():
    from sklearn_ialm.report._rates import meets
    from sklearn_ialm.report._render import decisive

    rng = np.random.default_rng(0)
    for bound in (0.05, 0.1, 0.8, 1 / 3):
        for value in bound + rng.normal(scale=10.0 ** -rng.integers(2, 10, size=200)):
            for direction in ("<=", ">="):
                shown = float(decisive(value, bound, direction))
                printed_bound = float(f"{bound:g}")
                agrees = shown <= printed_bound if direction == "<=" else shown >= printed_bound
                assert agrees == meets(value, bound, direction), (value, bound, direction)


def test_a_parity_bound_on_every_pair_protects_no_group():
    """Issue 49 item 5: the default protected group of two is the smaller one, so a
    COMPAS-like report read "Caucasian protected: yes" for a demographic-parity gap, which
    constrains the one pair both ways. No group is protected there; for a share bound the
    estimator's protected_groups decides, and its default rule is stated."""
    X, y = make_classification(n_samples=2000, n_features=6, random_state=0)
    score = X[:, 0] + np.random.default_rng(0).normal(size=2000)
    race = np.where(score > 0.8, "Caucasian", "African-American")
    assert np.sum(race == "Caucasian") < np.sum(race == "African-American")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dp = FairLogisticClassifier(bound=0.1, max_passes=40, random_state=0).fit(
            X, y, sensitive_features=race
        )
    assert dp.protected_groups_.tolist() == ["Caucasian"]  # the fit's device: one pair
    report = dp.bound_report(X, y, sensitive_features=race)
    assert report.protected_groups is None
    assert all(r["protected"] is None for r in report.rates)
    text = str(report)
    assert "protected" not in text and "every pair of groups" in text
    value = flm.demographic_parity_difference(y, dp.predict(X), sensitive_features=race)
    assert report.bounds[0]["value"] == pytest.approx(value, abs=1e-12)
    rates = _by_group(report, "selection_rate")
    worst = max(
        rates[a]["upper"] - rates[b]["lower"]
        for a in ("Caucasian", "African-American")
        for b in ("Caucasian", "African-American")
        if a != b
    )
    assert report.bounds[0]["limit"] == pytest.approx(worst)
    # A share bound protects the group the fit protects, and says by which rule.
    for given in (None, ["African-American"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            share = FairLogisticClassifier(
                constraint="positive_share", bound=0.2, protected_groups=given,
                max_passes=40, random_state=0,
            ).fit(X, y, sensitive_features=race)  # fmt: skip
        report = share.bound_report(X, y, sensitive_features=race)
        expected = ["Caucasian"] if given is None else given
        assert report.protected_groups == expected
        assert {r["group"] for r in report.rates if r["protected"]} == set(expected)
        stated = [n for n in report.notes if "protected_groups=None" in n]
        assert bool(stated) == (given is None)
        if stated:
            assert "'Caucasian'" in stated[0] and "smaller" in stated[0]


def test_a_class_never_predicted_is_not_certified():
    """Issue 49 item 5: a multi-class report called a class never predicted on its rows
    "certified" (every group's rate 0, intervals [0, upper]) with no note. Its bound holds
    trivially: "met", with a note naming the class."""
    X, y = make_classification(
        n_samples=3000, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    groups = np.where(X[:, 0] + np.random.default_rng(0).normal(size=3000) > 0, "a", "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairLogisticClassifier(bound=0.1, max_passes=40, random_state=0).fit(
            X, y, sensitive_features=groups
        )
    pred = clf.predict(X)
    rows = pred != 2  # rows on which class 2 is never predicted
    report = clf.bound_report(X[rows], y[rows], sensitive_features=groups[rows])
    by_name = {b["name"]: b for b in report.bounds}
    never = by_name["demographic_parity_difference[class 2]"]
    assert never["value"] == 0.0 and never["status"] == "met"
    # Its limit meets the bound: by the intervals alone it would read "certified".
    assert never["limit"] <= never["bound"]
    assert any("class 2" in n and "no row" in n for n in report.notes), report.notes
    # The classes that are predicted keep their verdicts, fairlearn's metric on them.
    for c in (0, 1):
        value = flm.demographic_parity_difference(
            y[rows] == c, pred[rows] == c, sensitive_features=groups[rows]
        )
        assert by_name[f"demographic_parity_difference[class {c}]"]["value"] == pytest.approx(
            value, abs=1e-12
        )
    assert not [n for n in report.notes if "class 0" in n or "class 1" in n]


def test_raw_rows_given_to_the_last_step_of_a_pipeline_are_told():
    """Issue 49 item 5: a Pipeline(StandardScaler(), FairLogisticClassifier()) fitted on
    rows with column means near 3 and scales near 4; pipe[-1].bound_report(X_raw, ...)
    read them in the units of the scaled rows (about three training standard deviations
    off) and reported another gap, with no word. The fit keeps its training columns'
    moments; the report warns, naming the columns and the Pipeline's report."""
    X, y = make_classification(n_samples=6000, n_features=8, random_state=0)
    groups = np.where(X[:, 0] + np.random.default_rng(0).normal(size=6000) > 0.5, "b", "a")
    X_raw = 3.0 + 4.0 * X
    train, test = np.arange(4000), np.arange(4000, 6000)
    pipe = make_pipeline(
        StandardScaler(), FairLogisticClassifier(bound=0.05, max_passes=40, random_state=0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X_raw[train], y[train], fairlogisticclassifier__sensitive_features=groups[train])
    with pytest.warns(UserWarning, match="far from the rows it was fitted on") as caught:
        wrong = pipe[-1].bound_report(X_raw[test], y[test], sensitive_features=groups[test])
    text = str(caught[0].message)
    assert "BoundReport.from_estimator(pipe" in text
    assert "column 0 (mean +3" in text and "8 of 8 columns" in text
    assert any("far from the rows it was fitted on" in n for n in wrong.notes)
    # The Pipeline's report transforms the rows: no warning, fairlearn's gap of pipe.predict.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        right = BoundReport.from_estimator(
            pipe, X_raw[test], y[test], sensitive_features=groups[test]
        )
        on_training = BoundReport.from_estimator(
            pipe, X_raw[train], y[train], sensitive_features=groups[train]
        )
    gap = flm.demographic_parity_difference(
        y[test], pipe.predict(X_raw[test]), sensitive_features=groups[test]
    )
    assert right.bounds[0]["value"] == pytest.approx(gap, abs=1e-12)
    assert not [n for n in right.notes + on_training.notes if "far from" in n]
    # Named columns are named.
    frame = pd.DataFrame(X_raw, columns=[f"f{i}" for i in range(8)])
    named = make_pipeline(
        StandardScaler().set_output(transform="pandas"),
        FairLogisticClassifier(bound=0.05, max_passes=40, random_state=0),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named.fit(
            frame.iloc[train], y[train], fairlogisticclassifier__sensitive_features=groups[train]
        )
    with pytest.warns(UserWarning, match="'f0' \\(mean"):
        named[-1].bound_report(frame.iloc[test], y[test], sensitive_features=groups[test])


@pytest.mark.parametrize("dataset", ["spambase", "a9a"])
def test_ordinary_held_out_rows_are_not_far(dataset):
    """No false alarm: held-out rows of a random split, from 20 rows to all of them, on
    heavy-tailed counts (spambase, raw) and sparse one-hot levels (a9a)."""
    from sklearn_ialm.datasets import load_a9a, load_spambase
    from sklearn_ialm.estimators._scaling import far_columns, training_moments

    X = load_spambase(return_X_y=True)[0] if dataset == "spambase" else load_a9a().data
    n = X.shape[0]
    for seed in range(10):
        order = np.random.default_rng(seed).permutation(n)
        train, rest = order[: int(0.7 * n)], order[int(0.7 * n) :]
        moments = training_moments(X[train], np.ones(len(train)))
        for size in (20, 50, 200, len(rest)):
            assert far_columns(moments, X[rest[:size]]) == [], (seed, size)
        # The same rows in other units are far.
        assert len(far_columns(moments, X[rest] * 10.0)) > 0


def test_held_out_rows_of_a_fit_give_no_warning():
    X, y = make_classification(n_samples=3000, n_features=6, random_state=2)
    clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0).fit(X[:2000], y[:2000])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for size in (20, 100, 1000):
            clf.bound_report(X[2000 : 2000 + size], y[2000 : 2000 + size])
    with pytest.warns(UserWarning, match="far from"):
        clf.bound_report(3.0 + 4.0 * X[2000:], y[2000:])


def test_bound_report_calls_the_builder_the_report_registered(monkeypatch):
    """The estimators import nothing of the report: ``bound_report`` calls the builder that
    ``sklearn_ialm.report`` registered on import, and says what to import without one."""
    from sklearn_ialm.estimators import _base

    X, y, groups = _data(2)
    clf = _fit("demographic_parity", "difference", X, y, groups)
    assert _base._report_builder == BoundReport.from_estimator
    direct = BoundReport.from_estimator(clf, X, y, sensitive_features=groups)
    assert clf.bound_report(X, y, sensitive_features=groups).to_dict() == direct.to_dict()
    monkeypatch.setattr(_base, "_report_builder", None)
    with pytest.raises(RuntimeError, match="import sklearn_ialm.report"):
        clf.bound_report(X, y, sensitive_features=groups)


def test_bound_report_of_an_unpickled_model_in_a_fresh_process(tmp_path):
    """Unpickling imports ``sklearn_ialm`` and so registers the report's builder: a fresh
    process that imports only pickle gets the same report as this one."""
    import pickle
    import subprocess
    import sys

    X, y, groups = _data(2)
    clf = _fit("demographic_parity", "difference", X, y, groups)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps((clf, X, y, groups)))
    code = (
        "import pickle, sys; clf, X, y, g = pickle.load(open(sys.argv[1], 'rb')); "
        "print(clf.bound_report(X, y, sensitive_features=g).to_markdown())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == clf.bound_report(X, y, sensitive_features=groups).to_markdown().strip()
