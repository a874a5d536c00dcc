"""ConvergenceDisplay: units of the constraint, several runs, axes, errors, lazy matplotlib."""

from __future__ import annotations

import subprocess
import sys
import warnings

import matplotlib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.metrics import confusion_matrix
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier  # noqa: E402
from sklearn_ialm.plotting import ConvergenceDisplay, NPROCDisplay  # noqa: E402
from sklearn_ialm.plotting.convergence import _aggregate  # noqa: E402
from sklearn_ialm.solver import FunctionProblem, SampledProblem, ipc, stoc_ialm  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    groups = np.where(X[:, 2] < -0.5, "b", "a")
    return X, y, groups


@pytest.fixture(scope="module")
def np_clf(data):
    X, y, _ = data
    return NeymanPearsonClassifier(
        max_fpr=0.2, loss="sigmoid", tol=1e-2, max_passes=1000, random_state=0
    ).fit(X, y)


def _problem():
    a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))

    def objective(x, idx):
        r = x - a[idx]
        return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)

    def constraints(x, idx):
        n = len(a[idx])
        return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))

    return FunctionProblem(
        objective, constraints, n_params=2, n_objective_samples=200, n_constraint_samples=200
    )


def _history(x, primal, dual, constraint=None):
    return {
        "data_passes": np.asarray(x, dtype=float),
        "primal_residual": np.asarray(primal, dtype=float),
        "dual_residual": np.asarray(dual, dtype=float),
        "constraint": np.asarray(primal if constraint is None else constraint, dtype=float),
    }


def test_importing_the_package_does_not_import_matplotlib():
    code = (
        "import sys, sklearn_ialm.plotting; "
        "sys.exit(int(any(m.startswith('matplotlib') for m in sys.modules)))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning")
def test_neyman_pearson_in_units_of_the_bound(np_clf):
    display = ConvergenceDisplay.from_estimator(np_clf)
    ax_c, ax_r = display.ax_
    assert display.bound == 0.2 and display.tol == np_clf.tol
    assert ax_c.get_ylabel() == "soft false-positive rate"
    # The solver's constraint is soft FPR - max_fpr: the curve is the soft rate itself.
    line = display.lines_["constraint"]
    np.testing.assert_allclose(line.get_ydata(), np_clf.history_["constraint"] + 0.2)
    np.testing.assert_allclose(line.get_xdata(), np_clf.history_["data_passes"])
    # ... and it ends at the reported soft rate (the last check is the returned point).
    assert line.get_ydata()[-1] == pytest.approx(np_clf.train_soft_fpr_, abs=1e-9)
    assert ax_r.get_yscale() == "log"
    assert "soft FPR" in display.note and display.figure_ is ax_c.figure
    assert sorted(display.lines_) == ["constraint", "dual_residual", "primal_residual"]


def test_positive_share_in_solver_units(data):
    X, y, groups = data
    clf = FairLogisticClassifier(
        constraint="positive_share", bound=0.2, max_passes=1000, random_state=0
    )
    clf.fit(X, y, sensitive_features=groups)
    display = ConvergenceDisplay.from_estimator(clf)
    assert display.bound == 0.0
    assert "bound - share" in display.ax_[0].get_ylabel()
    np.testing.assert_allclose(
        display.lines_["constraint"].get_ydata(), clf.history_["constraint"]
    )
    assert "share of group 'b'" in display.note and "bound 0.2" in display.note
    assert "share of group 'b'" in display.ax_[0].get_title()


def test_demographic_parity_in_units_of_the_bound(data):
    X, y, groups = data
    # The solver's soft constraint is drawn; with rate="soft" the fit is the last solve's
    # point (rate="hard" may return a point between two solves, which no history holds).
    clf = FairLogisticClassifier(
        constraint="demographic_parity", bound=0.1, rate="soft", max_passes=1000, random_state=0
    ).fit(X, y, sensitive_features=groups)
    display = ConvergenceDisplay.from_estimator(clf)
    assert display.bound == 0.1
    last = display.lines_["constraint"].get_ydata()[-1]
    # max over the ordered pairs of (gap - bound), plus the bound, is the largest gap.
    assert last == pytest.approx(clf.constraint_values_[0], abs=1e-9)


def test_unconstrained_fit_is_drawn(data):
    X, y, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf = FairLogisticClassifier(
            constraint="positive_share", random_state=0, max_passes=50
        ).fit(X, y)
    display = ConvergenceDisplay.from_estimator(clf)
    assert display.note is None
    assert display.lines_["constraint"] is None  # nothing to draw, said in text


@pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning")
def test_several_seeds_mark_the_other_ends(data):
    X, y, _ = data
    clf = NeymanPearsonClassifier(
        max_fpr=0.2, loss="sigmoid", tol=1e-2, n_seeds=3, max_passes=1000, random_state=0
    )
    clf.fit(X, y)
    display = ConvergenceDisplay.from_estimator(clf)
    assert len(display.runs) == 1 and len(display.run_ends["x"]) == 2
    labels = [line.get_label() for line in display.ax_[1].get_lines()]
    assert "other seeds: primal at the end" in labels


def test_seed_histories_give_a_mean_and_a_band(np_clf):
    # Where seeds_ records carry a history, every seed is drawn (mean and band).
    clf = NeymanPearsonClassifier(
        max_fpr=0.2, loss="sigmoid", tol=1e-2, max_passes=1000, random_state=0
    )
    clf.__dict__.update(np_clf.__dict__)
    h = clf.history_
    shifted = dict(h, data_passes=h["data_passes"] + 0.5, primal_residual=h["primal_residual"] * 2)
    clf.seeds_ = [
        {"seed": 1, "selected": True, "history": h},
        {"seed": 2, "selected": False, "history": shifted},
    ]
    display = ConvergenceDisplay.from_estimator(clf, show_runs=True)
    assert len(display.runs) == 2 and display.run_ends is None
    assert any(isinstance(c, PolyCollection) for c in display.ax_[1].collections)
    assert "mean of 2 runs" in display.ax_[1].get_title()


def test_aggregate_mean_band_and_hold_after_the_end():
    runs = [
        dict(_history([1, 2, 3], [1e-1, 1e-2, 1e-3], [1, 1, 1]), x=np.array([1.0, 2, 3])),
        dict(_history([2, 4], [1e-1, 1e-1], [1, 1]), x=np.array([2.0, 4])),
    ]
    grid, center, low, high = _aggregate(runs, "primal_residual", "range", log=True)
    np.testing.assert_allclose(grid, [1, 2, 3, 4])
    # At 1 only the first run has started; at 4 the first has ended and holds 1e-3.
    # Geometric means (log scale): at 3 the second run is between its checks, at 1e-1.
    np.testing.assert_allclose(center, [1e-1, np.sqrt(1e-3), 1e-2, 1e-2])
    np.testing.assert_allclose(low, [1e-1, 1e-2, 1e-3, 1e-3])
    np.testing.assert_allclose(high, [1e-1, 1e-1, 1e-1, 1e-1])
    grid, center, low, high = _aggregate(runs, "constraint", "std", log=False)
    np.testing.assert_allclose(center[1], (1e-2 + 1e-1) / 2)
    np.testing.assert_allclose(high[1] - center[1], np.std([1e-2, 1e-1]))


def test_zero_residual_is_a_gap_not_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        display = ConvergenceDisplay(
            [_history([1, 2], [1e-2, 0.0], [1e-2, 1e-3]), _history([1, 2], [0.0, 0.0], [1, 1])]
        ).plot()
        single = ConvergenceDisplay(_history([1, 2], [1e-2, 0.0], [1e-2, 1e-3])).plot()
    assert np.isnan(single.lines_["primal_residual"].get_ydata()[1])
    assert display.lines_["primal_residual"] is not None


def test_from_results_several_seeds_and_ipc_on_the_same_axes():
    problem = _problem()
    results = [stoc_ialm(problem, random_state=seed) for seed in range(3)]
    display = ConvergenceDisplay.from_results(results, name="Stoc-iALM")
    assert len(display.runs) == 3 and display.tol == 1e-2
    other = ConvergenceDisplay.from_results(ipc(problem), name="IPC", ax=display.ax_)
    assert other.ax_[0] is display.ax_[0]
    colors = {display.lines_["dual_residual"].get_color()}
    colors.add(other.lines_["dual_residual"].get_color())
    assert len(colors) == 2
    labels = [line.get_label() for line in display.ax_[1].get_lines()]
    assert "Stoc-iALM: dual" in labels and "IPC: dual" in labels
    # A primal residual that is 0 at every check has no line on the log axis, nor a legend
    # entry; one with data has both.
    for d, name in ((display, "Stoc-iALM"), (other, "IPC")):
        drawn = any((r["primal_residual"] > 0).any() for r in d.runs)
        assert (d.lines_["primal_residual"] is not None) == drawn
        assert (f"{name}: primal" in labels) == drawn
    assert labels.count("tol 0.01") == 1  # the decoration is drawn once


def test_sampled_problem_is_drawn_against_oracle_calls():
    def sampler(rng, n):
        return rng.normal(1.0, 0.5, size=(n, 2))

    def objective(x, xi):
        r = x - xi
        return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)

    def constraints(x, xi):
        return np.full((len(xi), 1), x.sum() - 1.0), np.ones((len(xi), 1, 2))

    problem = SampledProblem(
        sampler, objective, constraints, 2, 1, evaluation_size=2000, smoothness=(1.0, 2.0)
    )
    display = ConvergenceDisplay.from_results(stoc_ialm(problem, random_state=0))
    assert display.x == "oracle_calls"
    assert display.ax_[1].get_xlabel() == "oracle calls"


def test_plot_on_given_axes(np_clf):
    fig, axes = plt.subplots(2, 1)
    display = ConvergenceDisplay.from_estimator(np_clf, ax=axes, color="C3")
    assert display.figure_ is fig
    assert display.lines_["dual_residual"].get_color() == "C3"


def test_errors(np_clf):
    with pytest.raises(NotFittedError):
        ConvergenceDisplay.from_estimator(NeymanPearsonClassifier())
    display = ConvergenceDisplay(np_clf.history_)
    with pytest.raises(ValueError, match="two Axes"):
        display.plot(ax=plt.subplots(1, 3)[1])
    with pytest.raises(ValueError, match="band"):
        display.plot(band="iqr")
    with pytest.raises(ValueError, match="no entry 'dual_residual'"):
        ConvergenceDisplay({"data_passes": [1], "primal_residual": [1], "constraint": [1]})
    with pytest.raises(ValueError, match="different lengths"):
        ConvergenceDisplay(_history([1, 2], [1, 2], [1]))
    with pytest.raises(ValueError, match="empty"):
        ConvergenceDisplay(_history([], [], []))
    with pytest.raises(ValueError, match="at least one"):
        ConvergenceDisplay([])
    with pytest.raises(TypeError, match="dict of arrays"):
        ConvergenceDisplay([np.zeros(3)])
    with pytest.raises(ValueError, match="at least one result"):
        ConvergenceDisplay.from_results([])


@pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning")
def test_convergence_display_of_a_pipeline_draws_its_last_step(data):
    # scikit-learn's displays take a fitted Pipeline; the history lives in its last step.
    X, y, _ = data
    pipe = make_pipeline(
        StandardScaler(),
        NeymanPearsonClassifier(
            max_fpr=0.2, loss="sigmoid", tol=1e-2, max_passes=1000, random_state=0
        ),
    ).fit(X, y)
    display = ConvergenceDisplay.from_estimator(pipe)
    direct = ConvergenceDisplay.from_estimator(pipe[-1])
    assert display.bound == pytest.approx(0.2)
    assert display.note == direct.note
    np.testing.assert_array_equal(display.runs[0]["constraint"], direct.runs[0]["constraint"])
    with pytest.raises(NotFittedError):
        unfitted = make_pipeline(StandardScaler(), NeymanPearsonClassifier())
        ConvergenceDisplay.from_estimator(unfitted)


@pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning")
def test_np_roc_display_of_a_pipeline_draws_max_fpr_and_its_operating_point(data):
    X, y, _ = data
    pipe = make_pipeline(
        StandardScaler(),
        NeymanPearsonClassifier(
            max_fpr=0.2, loss="sigmoid", tol=1e-2, max_passes=1000, random_state=0
        ),
    ).fit(X, y)
    display = NPROCDisplay.from_estimator(pipe, X, y)
    assert display.max_fpr == 0.2
    assert display.estimator_name == "NeymanPearsonClassifier"
    # The bound's vertical line is drawn at max_fpr.
    vertical = [
        line
        for line in display.ax_.get_lines()
        if len(line.get_xdata()) == 2 and np.ptp(line.get_xdata()) == 0
    ]
    assert [line.get_xdata()[0] for line in vertical] == [0.2]
    # The operating point is the pipeline's own predictions, rates by confusion_matrix.
    tn, fp, fn, tp = confusion_matrix(y, pipe.predict(X)).ravel()
    assert display.operating_point == pytest.approx((fp / (fp + tn), tp / (tp + fn)))
    with pytest.raises(NotFittedError):
        unfitted = make_pipeline(StandardScaler(), NeymanPearsonClassifier())
        NPROCDisplay.from_estimator(unfitted, X, y)


@pytest.mark.filterwarnings("ignore:max_fpr=.* holds on the .* training negatives:UserWarning")
def test_what_has_no_data_is_not_drawn(data):
    """Issue 23: the landing page's default Neyman-Pearson model has no constraint in the
    solver: no empty constraint panel with a "bound 0" legend, no "primal residual" legend
    entry without a line (0 on a log axis); the panels say so in text."""
    X, y, _ = data
    clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0).fit(X, y)
    assert np.isnan(clf.history_["constraint"]).all()
    assert (clf.history_["primal_residual"] == 0).all()
    display = ConvergenceDisplay.from_estimator(clf)
    ax_c, ax_r = display.ax_
    assert display.lines_["constraint"] is None and display.lines_["primal_residual"] is None
    assert not ax_c.lines and ax_c.get_legend() is None and not ax_c.axison
    assert any("no constraint" in t.get_text() for t in ax_c.texts)
    labels = ax_r.get_legend_handles_labels()[1]
    assert "primal residual" not in labels and "dual residual" in labels
    assert "primal residual: 0" in ax_r.get_title()
    # Every legend entry has data behind it.
    for line in ax_r.lines:
        if not line.get_label().startswith("_") and line.get_label() != "tol 0.003":
            assert np.isfinite(line.get_ydata()).any()
    matplotlib.pyplot.close("all")
