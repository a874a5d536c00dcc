"""More than two classes as the per-class bound tightens (issue 49, item 2): no cliff.

Digits and wine, standardised, 70/30 stratified splits, with a made-up group (not in X) tied
to the label in several ways: by class halves, by one class, or not at all. The truths are
independent: fairlearn's demographic parity difference of ``predict`` one-vs-rest per class,
scikit-learn's ``log_loss`` and ``LogisticRegression``.
"""

import re
import warnings

import numpy as np
from fairlearn.metrics import demographic_parity_difference
from sklearn.datasets import load_digits, load_wine
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks.families import multiclass_lean, multiclass_ties
from sklearn_ialm import FairLogisticClassifier

#: Test accuracy may fall by at most this much per 0.01 of bound (issue 49's acceptance).
_FALL_PER_HUNDREDTH = 0.05


def _tied(loader, tie, draw=0):
    """``(X, y, g, X_test, y_test)`` of benchmarks.families.multiclass_ties: the group is "b"
    with chance 0.7 for the upper half of the classes and 0.3 for the lower ("halves"), 0.8
    for class 0 and 0.4 for the others ("one"), or 0.5 ("random"); ``draw`` seeds the group
    and the split."""
    X, X_test, y, y_test, g, _ = multiclass_ties(
        "digits" if loader is load_digits else "wine", tie, draw
    )
    return X, y, g, X_test, y_test


def _worst_gap(y, pred, g):
    """fairlearn's demographic parity difference of each class one-vs-rest, the largest."""
    return max(
        demographic_parity_difference(y == c, pred == c, sensitive_features=g)
        for c in np.unique(y)
    )


def _sweep(loader, tie, bounds):
    """Fit at each bound; assert each converged within the default budget and met its bound
    on its training predictions; ``(test accuracies, training log-losses)``."""
    X, y, g, X_test, y_test = _tied(loader, tie)
    accuracy, loss = [], []
    for bound in bounds:
        clf = FairLogisticClassifier(bound=bound, random_state=0).fit(X, y, sensitive_features=g)
        assert clf.converged_ and clf.n_data_passes_ <= 300, (bound, clf.n_data_passes_)
        assert _worst_gap(y, clf.predict(X), g) <= bound + 1e-12
        accuracy.append(clf.score(X_test, y_test))
        loss.append(log_loss(y, clf.predict_proba(X), labels=clf.classes_))
    return np.array(accuracy), np.array(loss)


def _no_cliff(bounds, accuracy):
    """Test accuracy falls by at most ``_FALL_PER_HUNDREDTH`` per 0.01 of bound."""
    allowed = _FALL_PER_HUNDREDTH * -np.diff(bounds) / 0.01
    assert np.all(-np.diff(accuracy) <= allowed + 1e-12), (bounds, accuracy)


def test_digits_with_a_random_group_down_to_002():
    """Below LogisticRegression's worst gap (0.046): on main 0.02 ended unconverged after 302
    passes at training log-loss 1.39 (LogisticRegression's 0.03); each fit converges, meets
    its bound, and its log-loss rises as the bound tightens."""
    bounds = (0.04, 0.03, 0.02)
    accuracy, loss = _sweep(load_digits, "random", bounds)
    _no_cliff(bounds, accuracy)
    assert np.all(np.diff(loss) > 0), loss


def test_wine_with_a_group_tied_to_class_halves():
    """On main bound 0.1 ended unconverged after its 10 solves (0.09 converged)."""
    X, y, g, *_ = _tied(load_wine, "halves")
    lr_gap = _worst_gap(y, LogisticRegression(max_iter=10_000).fit(X, y).predict(X), g)
    bounds = np.round(np.arange(np.floor(lr_gap * 100) / 100, 0.015, -0.01), 2)
    assert bounds[0] >= 0.1 and bounds[-1] == 0.02  # from LogisticRegression's gap (0.175)
    accuracy, _ = _sweep(load_wine, "halves", bounds)
    _no_cliff(bounds, accuracy)


def test_digits_issue_49_reproduction_at_006():
    """The issue's reproduction: the group "b" with chance 0.7 for digits 5-9, 0.3 for 0-4,
    per-class bound 0.06. On main: unconverged after 302 passes, moved all the way to the
    constant model (test accuracy 0.230, where the 0.07 fit had 0.926). Here it converges
    and keeps the accuracy that LogisticRegression's (0.972 at gap 0.095) less 0.05 per 0.01
    of bound allows."""
    X, y, g, X_test, y_test = _tied(load_digits, "halves")
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_gap = _worst_gap(y, lr.predict(X), g)
    accuracy, loss = _sweep(load_digits, "halves", (0.06,))
    assert accuracy[0] >= lr.score(X_test, y_test) - _FALL_PER_HUNDREDTH * (lr_gap - 0.06) / 0.01
    assert loss[0] > log_loss(y, lr.predict_proba(X))


def test_digits_issue_49_reproduction_at_005():
    """The issue's family at 0.05: on main the third solve's finish spent 130 reads in one
    inner solve (Newton steps on an indefinite Hessian, cut to a tenth one after another)
    and the fit ended unconverged at its 300 passes. Here it converges within them, meets
    the bound on its training predictions (fairlearn), and its test accuracy keeps to
    LogisticRegression's less 0.05 per 0.01 of bound."""
    X, y, g, X_test, y_test = _tied(load_digits, "halves")
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_gap = _worst_gap(y, lr.predict(X), g)
    accuracy, _ = _sweep(load_digits, "halves", (0.05,))
    assert accuracy[0] >= lr.score(X_test, y_test) - _FALL_PER_HUNDREDTH * (lr_gap - 0.05) / 0.01


def test_digits_halves_another_draw_at_004_keeps_off_the_constant_model():
    """The issue's family with another draw of the group (default_rng(1)), per-class bound
    0.04: on branch mc the first solve reached residuals 8e-6 and 4e-5 (the finish asked
    1e-5) in 71 passes, then walked off that point for the rest of the 300, and the fit was
    moved all the way to the constant model (test accuracy 0.159, training log-loss 2.30).
    Here it meets the bound on its training predictions (fairlearn) at a test accuracy that
    LogisticRegression's less 0.05 per 0.01 of bound allows, and a training log-loss a small
    share of the constant model's (scikit-learn's DummyClassifier)."""
    X0, y0 = load_digits(return_X_y=True)
    chance = np.where(y0 >= 5, 0.7, 0.3)
    g0 = np.where(np.random.default_rng(1).random(len(y0)) < chance, "b", "a")
    X, X_test, y, y_test, g, _ = train_test_split(
        X0, y0, g0, test_size=0.3, random_state=0, stratify=y0
    )
    scaler = StandardScaler().fit(X)
    X, X_test = scaler.transform(X), scaler.transform(X_test)
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_gap = _worst_gap(y, lr.predict(X), g)
    clf = FairLogisticClassifier(bound=0.04, random_state=0).fit(X, y, sensitive_features=g)
    assert _worst_gap(y, clf.predict(X), g) <= 0.04 + 1e-12
    allowed = _FALL_PER_HUNDREDTH * (lr_gap - 0.04) / 0.01
    assert clf.score(X_test, y_test) >= lr.score(X_test, y_test) - allowed
    constant = DummyClassifier(strategy="prior").fit(X, y)
    assert log_loss(y, clf.predict_proba(X)) < 0.2 * log_loss(y, constant.predict_proba(X))


def test_digits_with_a_group_tied_to_one_class_at_002():
    """On main: unconverged after 302 passes, test accuracy 0.230 (0.909 at 0.03)."""
    X, y, g, X_test, y_test = _tied(load_digits, "one")
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_gap = _worst_gap(y, lr.predict(X), g)
    accuracy, _ = _sweep(load_digits, "one", (0.02,))
    assert accuracy[0] >= lr.score(X_test, y_test) - _FALL_PER_HUNDREDTH * (lr_gap - 0.02) / 0.01


def test_a_fit_out_of_passes_says_how_many_would_do():
    """Issue 49 item 6: a multi-class fit stopped by max_passes said so, but not that more
    passes would do. The warning names a max_passes, and a fit with it converges and meets
    the bound."""
    X, y, g, *_ = _tied(load_wine, "one")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        short = FairLogisticClassifier(bound=0.02, max_passes=60, random_state=0)
        short.fit(X, y, sensitive_features=g)
    assert not short.converged_
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    advised = re.search(r"raise max_passes \(now 60\), to about (\d+)", said)
    assert advised is not None, said
    clf = FairLogisticClassifier(bound=0.02, max_passes=int(advised.group(1)), random_state=0)
    clf.fit(X, y, sensitive_features=g)
    assert clf.converged_
    assert _worst_gap(y, clf.predict(X), g) <= 0.02 + 1e-12


def test_wine_with_a_group_tied_to_one_class_within_100_passes():
    """Issue 51's pace on more than two classes: on int19 each of these fits took 132 to 167
    passes, 100 to 130 of them in the first solve, whose first inner solve (from zero
    multipliers) had no curvature of the constraints' penalty and took 50 Newton steps. Each
    converges within 100 passes and meets its bound on its training predictions."""
    X, y, g, *_ = _tied(load_wine, "one")
    for bound in (0.06, 0.05, 0.04, 0.03, 0.02):
        clf = FairLogisticClassifier(bound=bound, random_state=0).fit(X, y, sensitive_features=g)
        assert clf.converged_ and clf.n_data_passes_ <= 100, (bound, clf.n_data_passes_)
        assert _worst_gap(y, clf.predict(X), g) <= bound + 1e-12


def test_wine_halves_training_log_loss_never_falls_as_the_bound_tightens():
    """A training log-loss that falls as the bound tightens: the fit at the looser bound is
    not at the optimum of the problem the user posed (the tighter fit's model meets its
    bound too). On main (a23f81d) the fits at 0.08 and 0.05 ended on the segment from a
    solve that missed to one that met far inside the bound (log-loss 0.1122 and 0.1268),
    above the fits at 0.06 and 0.04 (0.1102 and 0.1244); solves inside that bracket find
    0.1095 and 0.1227. Each fit converges and meets its bound."""
    bounds = (0.08, 0.06, 0.05, 0.04)
    _, loss = _sweep(load_wine, "halves", bounds)
    assert np.all(np.diff(loss) >= 0), loss


def test_wine_one_class_looser_bounds_end_no_higher_than_002():
    """The fit at 0.02 (the group tied to class 0) meets 0.05 and 0.04 too, so theirs may not
    end above it. On main (23a9350) their first solves met the bound with room, loosening
    the two active constraints made class 2's gap (never moved) miss, and the bracket's
    solves undid the loosening: log-loss 0.392 and 0.420 against 0.395 at 0.02. Each fit
    converges and meets its bound (fairlearn); the looser ones end no higher."""
    _, loss = _sweep(load_wine, "one", (0.05, 0.04, 0.02))
    assert np.all(loss[:2] <= loss[2]), loss


def test_a_steering_whose_moves_stall_is_rescued_off_the_constant_model(monkeypatch):
    """A forced stall: the moves of the soft bounds one by one leave them where they are, so
    every re-solve repeats the first solve, which misses the bound (wine, the group tied to
    the class halves, per-class bound 0.03: by 0.012 on predictions). On main the rounds ran
    out and the model was moved towards the constant model (not converged). Here the stall
    is noticed and every soft bound tightened at once: the fit converges, meets its bound
    (fairlearn) and keeps a training log-loss far below the constant model's."""
    from sklearn_ialm.estimators import _multiclass_steering

    monkeypatch.setattr(_multiclass_steering, "_move_bounds", lambda *args, **kwargs: None)
    X, y, g, *_ = _tied(load_wine, "halves")
    clf = FairLogisticClassifier(bound=0.03, random_state=0).fit(X, y, sensitive_features=g)
    assert clf.n_rounds_ > _multiclass_steering._MAX_ROUNDS  # (a rescue on top of the rounds)
    assert clf.converged_ and clf.n_data_passes_ <= 100, clf.n_data_passes_
    assert _worst_gap(y, clf.predict(X), g) <= 0.03 + 1e-12
    constant = DummyClassifier(strategy="prior").fit(X, y)
    assert log_loss(y, clf.predict_proba(X)) < 0.2 * log_loss(y, constant.predict_proba(X))


def test_digits_halves_down_to_002_never_lands_on_the_constant_model():
    """Issue 49's family at 0.03 and 0.02. With numpy 1.24 and scipy 1.9 (the floor
    versions) main's moves of the soft bounds traded misses of a row or two between the 20
    coupled constraints for all ten solves; 0.03 ended on the constant model (test accuracy
    0.130, training log-loss 2.30) and 0.02 unconverged after 147 passes. Each converges,
    meets its bound (fairlearn), and keeps to LogisticRegression's test accuracy less 0.05
    per 0.01 of bound."""
    X, y, g, X_test, y_test = _tied(load_digits, "halves")
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_gap = _worst_gap(y, lr.predict(X), g)
    bounds = (0.03, 0.02)
    accuracy, _ = _sweep(load_digits, "halves", bounds)
    allowed = _FALL_PER_HUNDREDTH * (lr_gap - np.array(bounds)) / 0.01
    assert np.all(accuracy >= lr.score(X_test, y_test) - allowed), accuracy


def test_wine_halves_of_another_draw_converges_at_a_bound_that_barely_binds():
    """The group and split drawn by seed 1, per-class bound 0.2 (LogisticRegression's worst
    gap 0.201): no solve of the rounds met the bound on predictions, the three rescues
    neither, and on main (86948de) the model was moved towards the constant model (not
    converged, training log-loss 0.291, where the fit at 0.15 converges at 0.118). The fifth
    rescue meets it: converged, the bound met (fairlearn), and a training log-loss between
    the fits at the looser and the tighter bound."""
    X, y, g, *_ = _tied(load_wine, "halves", draw=1)
    loss = {}
    for bound in (0.25, 0.2, 0.15):
        clf = FairLogisticClassifier(bound=bound, random_state=0).fit(X, y, sensitive_features=g)
        assert clf.converged_ and clf.n_data_passes_ <= 100, (bound, clf.n_data_passes_)
        assert _worst_gap(y, clf.predict(X), g) <= bound + 1e-12
        loss[bound] = log_loss(y, clf.predict_proba(X), labels=clf.classes_)
    assert loss[0.25] <= loss[0.2] <= loss[0.15], loss


def test_wine_random_a_row_from_the_bound_moves_class_offsets_not_to_the_constant_model():
    """The group drawn at random (seed 1), per-class bound 0.02: a row moves a group's rate
    by 0.017, every solve missed the bound by a row, tighter soft bounds left the
    predictions where they were, and on main (86948de) the model was moved 97 % of the way
    to the constant model (test accuracy 0.48, where the fit at 0.03 has 0.91). Now the
    class offsets of the solve nearest the bound are moved until the predictions meet it:
    the bound holds (fairlearn), no cliff in test accuracy from the fit at 0.03, and the
    fit says it did not converge and how its model was moved."""
    X, y, g, X_test, y_test = _tied(load_wine, "random", draw=1)
    looser = FairLogisticClassifier(bound=0.03, random_state=0).fit(X, y, sensitive_features=g)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = FairLogisticClassifier(bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    assert clf.bound_met_
    assert _worst_gap(y, clf.predict(X), g) <= 0.02 + 1e-12
    fall = looser.score(X_test, y_test) - clf.score(X_test, y_test)
    assert fall <= _FALL_PER_HUNDREDTH, fall
    # (on numpy 1.24 and scipy 1.9 a solve meets it: converged, no move)
    if not clf.converged_:
        assert "class offsets" in said and "moved towards the constant" not in said, said


def test_class_offsets_beat_the_segment_to_the_constant_model_where_no_solve_meets(monkeypatch):
    """A forced miss: every move of the soft bounds and every rescue leaves them where they
    are, so each solve repeats the first, which misses per-class bound 0.02 on wine (the
    group drawn at random, seed 1). Of the two ways to a model that meets the bound, the
    class offsets of the solve give a training log-loss below the segment's to the constant
    model (the only way on main); either meets the bound (fairlearn), and neither is called
    converged."""
    from sklearn_ialm.estimators import _multiclass_steering

    monkeypatch.setattr(_multiclass_steering, "_move_bounds", lambda *args, **kwargs: None)
    monkeypatch.setattr(_multiclass_steering, "_rescue_bounds", lambda *args, **kwargs: None)
    X, y, g, *_ = _tied(load_wine, "random", draw=1)
    fits = {}
    for way in ("offsets", "constant"):
        if way == "constant":
            monkeypatch.setattr(_multiclass_steering, "_fair_offsets", lambda *args: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = FairLogisticClassifier(bound=0.02, random_state=0)
            fits[way] = clf.fit(X, y, sensitive_features=g)
        assert clf.bound_met_ and not clf.converged_
        assert _worst_gap(y, clf.predict(X), g) <= 0.02 + 1e-12
    loss = {way: log_loss(y, clf.predict_proba(X)) for way, clf in fits.items()}
    assert loss["offsets"] < loss["constant"], loss


def test_a_bracket_solve_alike_the_met_one_narrows_the_bracket():
    """Issue 51's digits case (``benchmarks.families.multiclass_lean``, odd labels lean to
    group 1), per-class bound 0.05: on main (86948de) a re-solve inside the bracket met the
    bound at the objective of the solve that met it before, the bracket stayed where it was,
    and the same re-solve ran seven times (51 passes, 11 solves). Now it ends within issue
    51's 40 passes, converged, its bound met (fairlearn), at LogisticRegression's test
    accuracy within 0.05."""
    X, y, g, X_test, y_test, _ = multiclass_lean("digits")
    clf = FairLogisticClassifier(bound=0.05, random_state=0).fit(X, y, sensitive_features=g)
    assert clf.converged_ and clf.n_data_passes_ <= 40, clf.n_data_passes_
    assert _worst_gap(y, clf.predict(X), g) <= 0.05 + 1e-12
    reference = LogisticRegression(max_iter=2000).fit(X, y).score(X_test, y_test)
    assert clf.score(X_test, y_test) >= reference - 0.05


def test_no_re_solve_repeats_a_start_at_the_same_soft_bounds(monkeypatch):
    """Wine, the group drawn at random (draw 1), per-class bound 0.02: the rescues start from
    the nearest miss with its soft bounds tightened, short of leaving no room; at the edge of
    the room they did not move, and on main (23a9350) the last three re-ran the solve before
    them (6 passes each, the same objective). A re-solve's search is off, so the same start
    at the same soft bounds gives the same solve: none runs twice."""
    from sklearn_ialm.estimators import _multiclass_steering

    runs = []
    solve = _multiclass_steering.solving._solve

    def spy(problem, seed, settings):
        runs.append((id(settings["x0"]), problem.offset.tobytes()))
        return solve(problem, seed, settings)

    monkeypatch.setattr(_multiclass_steering.solving, "_solve", spy)
    X, y, g, *_ = _tied(load_wine, "random", draw=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        FairLogisticClassifier(bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
    assert len(runs) > 5  # (re-solves ran)
    assert len(set(runs)) == len(runs), len(runs) - len(set(runs))


def test_a_bracket_that_does_not_narrow_ends(monkeypatch):
    """Wine, the group tied to the class halves (draw 0), per-class bound 0.08: a solve
    inside the bracket met the bound above the objective of the bracket's met end, so the
    bracket stayed where it was, and on main (23a9350) three more solves ran at the same
    soft bounds (each from the last, each meeting the bound a little higher). Now no two
    re-solves share their soft bounds; the fit converges and meets its bound (fairlearn)."""
    from sklearn_ialm.estimators import _multiclass_steering

    bounds = []
    solve = _multiclass_steering.solving._solve

    def spy(problem, seed, settings):
        if settings.get("y0") is not None:  # (a re-solve: from a solve's multipliers)
            bounds.append(problem.offset.tobytes())
        return solve(problem, seed, settings)

    monkeypatch.setattr(_multiclass_steering.solving, "_solve", spy)
    X, y, g, *_ = _tied(load_wine, "halves")
    clf = FairLogisticClassifier(bound=0.08, random_state=0).fit(X, y, sensitive_features=g)
    assert clf.converged_
    assert _worst_gap(y, clf.predict(X), g) <= 0.08 + 1e-12
    assert len(bounds) > 3  # (the steering re-solved)
    assert len(set(bounds)) == len(bounds), len(bounds) - len(set(bounds))


def test_a_polish_that_does_not_converge_spends_a_twentieth_of_the_budget(monkeypatch):
    """Digits, the group tied to class 0 (draw 0), per-class bound 0.05: the first solve's
    polish to the finish's tolerance does not converge, and its model is not kept. With a
    tenth of the budget for it (main, 86948de) it spent 30 passes for nothing; with a
    twentieth the fit returns the same model, converged and meeting its bound (fairlearn),
    at least 10 passes sooner. (Here the polish is of a first solve that missed the bound:
    without the first run that now ends it, see the next test.)"""
    from sklearn_ialm.estimators import _multiclass_steering

    monkeypatch.setattr(_multiclass_steering, "_POLISH_PROBE_PASSES", np.inf)
    X, y, g, *_ = _tied(load_digits, "one")
    fits = {}
    for share in (0.1, _multiclass_steering._POLISH_SHARE):
        monkeypatch.setattr(_multiclass_steering, "_POLISH_SHARE", share)
        clf = FairLogisticClassifier(bound=0.05, random_state=0)
        fits[share] = clf.fit(X, y, sensitive_features=g)
        assert clf.converged_
        assert _worst_gap(y, clf.predict(X), g) <= 0.05 + 1e-12
    before, now = fits.values()
    np.testing.assert_array_equal(now.coef_, before.coef_)
    assert now.n_data_passes_ <= before.n_data_passes_ - 10, (
        before.n_data_passes_, now.n_data_passes_,
    )  # fmt: skip


def test_a_polish_of_the_missed_first_solve_that_cannot_converge_is_abandoned(monkeypatch):
    """Digits (benchmarks.finish_ab's case, odd labels leaning to group 1), per-class bound
    0.02: the first solve misses the bound, and its polish to the finish's tolerance ran its
    14 passes without converging (residuals 1e-3 against 1e-5), for nothing kept: 49
    passes. Its first run of 5 passes is 360 times the tolerance off, and the polish ends
    there: the same model, converged and meeting its bound (fairlearn), within issue 51's
    40 passes."""
    from sklearn_ialm.estimators import _multiclass_steering

    X, y, g, *_ = multiclass_lean("digits")
    fits = {}
    for probe in (np.inf, _multiclass_steering._POLISH_PROBE_PASSES):
        monkeypatch.setattr(_multiclass_steering, "_POLISH_PROBE_PASSES", probe)
        clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.02, random_state=0)
        fits[probe] = clf.fit(X, y, sensitive_features=g)
        assert clf.converged_
        assert _worst_gap(y, clf.predict(X), g) <= 0.02 + 1e-12
    before, now = fits.values()
    np.testing.assert_array_equal(now.coef_, before.coef_)
    np.testing.assert_array_equal(now.intercept_, before.intercept_)
    assert now.n_data_passes_ <= 40 < before.n_data_passes_, (
        before.n_data_passes_, now.n_data_passes_,
    )  # fmt: skip


def test_class_offset_moves_read_the_rows_they_flip_as_a_full_read_does(monkeypatch):
    """The class offsets' search reads a candidate move on the rows it flips alone (a
    whole read of the scores per candidate cost 15.7 s on 1e5 rows of 10 classes where it
    now costs 1.3 s): each candidate's constraint values equal the problem's own reading of
    the predictions at the moved offsets (wine, the group drawn at random, seed 1, bound
    0.02, where every solve missed the bound)."""
    from sklearn_ialm.estimators import _class_offsets, _multiclass_steering

    seen = []

    def capture(problem, scores, base, max_steps=None):
        seen.append((problem, scores.copy(), base.copy()))
        return _class_offsets._fair_offsets(problem, scores, base, max_steps)

    monkeypatch.setattr(_multiclass_steering, "_move_bounds", lambda *args, **kwargs: None)
    monkeypatch.setattr(_multiclass_steering, "_rescue_bounds", lambda *args, **kwargs: None)
    monkeypatch.setattr(_multiclass_steering, "_fair_offsets", capture)
    X, y, g, *_ = _tied(load_wine, "random", draw=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FairLogisticClassifier(bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
    problem, scores, base = seen[0]
    flips = _class_offsets._Flips(problem, scores, base)
    delta = np.zeros(scores.shape[1])
    values = flips.at(delta)
    read = lambda d: problem.rate_constraints(problem.hard_predictions(scores + d), base)  # noqa: E731
    np.testing.assert_allclose(values, read(delta), atol=1e-12)
    checked = 0
    for k in range(scores.shape[1]):
        for move, change in flips.moves(k):
            moved = delta.copy()
            moved[k] += move
            np.testing.assert_allclose(values + change, read(moved), atol=1e-12)
            checked += 1
    assert checked >= 2 * scores.shape[1]


def test_a_steered_model_above_the_constant_models_objective_gives_way_to_it():
    """A converged solve at soft bounds the steering tightened can end above the constant
    model's training objective (which meets every parity bound): on main 3 classes of 300
    rows, a group of 34, demographic parity 0.02 converged at a log-loss of 1.121 where the
    class shares' entropy is 1.083 (hypothesis's seed 2029). The model returned is never
    worse than the constant model, and a moved one says so."""
    from _families import Family

    family = Family(
        n_rows=300, group_shares=(0.113333, 0.886667), tie="hidden", noise_sd=2.0,
        positive_share=0.1, n_classes=3, n_features=2, seed=4,
    )  # fmt: skip
    X, y, g = family.sample()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = FairLogisticClassifier(bound=0.02, random_state=0, max_passes=100)
        clf.fit(X, y, sensitive_features=g)
    shares = np.bincount(y) / len(y)
    entropy = float(-np.sum(shares * np.log(shares)))
    assert log_loss(y, clf.predict_proba(X)) <= entropy + 1e-9
    assert clf.objective_ <= entropy + 1e-9
    assert _worst_gap(y, clf.predict(X), g) <= 0.02 + 1e-12
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    if not clf.converged_:
        assert any("above the constant model's" in s for s in said)
    if not np.any(clf.coef_):
        # The constant model predicts one class whatever the row: its gap is 0 on new rows
        # too, and the fit does not warn that the bound is unlikely to hold there (on main
        # it did, with an interval up to 0.103 from the 34-row group's sampling).
        X_new, y_new, g_new = family.sample(5000, rows_seed=1)
        assert _worst_gap(y_new, clf.predict(X_new), g_new) == 0.0
        assert clf.new_rows_["interval"] == (0.0, 0.0)
        assert not any(w.category.__name__ == "NewRowsWarning" for w in caught)
