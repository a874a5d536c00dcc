"""partial_fit on the streams users have (issue 49): any batching, a group tied to the
score, odd first batches, unit changes and glitches (estimators/_stream.py)."""

import warnings

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators._stream_measurements import SEGMENT, _cell_accuracy

_W = np.array([1.5, -1.0, 0.8, 0.5, 0.0])


def _rows(n, seed):
    """The guide's stream (tests/test_partial_fit.py): the group leans on the feature the
    label leans on most."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    g = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    y = (X @ _W + rng.logistic(size=n) > 0).astype(int)
    return X, y, g


def _fair_model():
    return FairLogisticClassifier(bound=0.05, random_state=0)


def _np_model():
    return NeymanPearsonClassifier(max_fpr=0.1, random_state=0)


def _feed(clf, X, y, g, size):
    for s in range(0, len(y), size):
        part = slice(s, s + size)
        if isinstance(clf, FairLogisticClassifier):
            clf.partial_fit(X[part], y[part], classes=[0, 1], groups=[0, 1],
                            sensitive_features=g[part])  # fmt: skip
        else:
            clf.partial_fit(X[part], y[part], classes=[0, 1])
    return clf


def test_one_row_batches_learn_the_model_of_batches_of_a_thousand():
    """A 1-row batch is SGDClassifier's everyday input: the rows are held until 1000 have
    come, so the same rows give the same model (on main 1-row batches ended at the constant
    model: each call ran a PStorm step, 30 times as many steps per row)."""
    X, y, g = _rows(2000, 0)
    ones = _feed(
        FairLogisticClassifier(bound=0.05, random_state=0), X[:1000], y[:1000], g[:1000], 1
    )
    ones = _feed(ones, X[1000:], y[1000:], g[1000:], 1000)
    thousands = _feed(FairLogisticClassifier(bound=0.05, random_state=0), X, y, g, 1000)
    np.testing.assert_allclose(ones.coef_, thousands.coef_, rtol=1e-9)
    np.testing.assert_allclose(ones.intercept_, thousands.intercept_, rtol=1e-9)
    X_new, y_new, _ = _rows(20_000, 9)
    assert np.mean(ones.predict(X_new) == y_new) > 0.62  # the constant model: 0.5


def test_batch_size_does_not_change_the_neyman_pearson_model():
    """Batches of 7 rows (which do not divide the 1000 rows learnt at once) and of 1000: the
    same fresh false-positive rate within 0.02 (on main: 0.37 against 0.09 at max_fpr 0.1
    with 1-row batches)."""
    X, y, _ = _rows(6000, 1)
    X_new, y_new, _ = _rows(50_000, 9)
    fpr = []
    for size in (7, 1000):
        clf = _feed(NeymanPearsonClassifier(max_fpr=0.1, random_state=0), X, y, None, size)
        fpr.append(clf.predict(X_new)[y_new == 0].mean())
    assert abs(fpr[0] - fpr[1]) < 0.02


def _glitched_stream(clf, change):
    """20 batches of 1000 rows of the guide's stream, ``change(i, X)`` applied to batch i."""
    X, y, g = _rows(20_000, 0)
    X = X.copy()
    for i in range(20):
        change(i, X[i * 1000 : (i + 1) * 1000])
    return _feed(clf, X, y, g, 1000)


def _one_glitch(i, X):
    if i == 3:
        X[0, 1] = 1e6


@pytest.mark.parametrize("make", [_fair_model, _np_model])
def test_one_glitch_value_is_clipped_and_named(make):
    """One value of 1e6 in a column of spread 1 (PF31, PF32): on main the fair stream ended
    at accuracy 0.373 and the Neyman-Pearson one at FPR 0.148, silently. The value is
    clipped for learning and the column named; the model is the clean stream's, about."""
    with pytest.warns(UserWarning, match=r"column\(s\) \[1\] .* standard units"):
        glitched = _glitched_stream(make(), _one_glitch)
    clean = _glitched_stream(make(), lambda i, X: None)
    X_new, y_new, _ = _rows(20_000, 9)
    accuracy = [np.mean(m.predict(X_new) == y_new) for m in (glitched, clean)]
    assert abs(accuracy[0] - accuracy[1]) < 0.02
    fpr = glitched.predict(X_new)[y_new == 0].mean()
    if isinstance(glitched, NeymanPearsonClassifier):
        assert fpr < 0.115


def test_a_unit_change_is_named():
    """A column rescaled by 1e-6 from the 4th batch (PF30): named, not silently lost."""

    def shrink(i, X):
        if i >= 3:
            X[:, 1] *= 1e-6

    with pytest.warns(UserWarning, match=r"column\(s\) \[1\] .* spread under"):
        _glitched_stream(_fair_model(), shrink)


def _tied_to_score(n, seed, d=8, sd=1.0):
    """Issue 49's family: the group ``Z @ W / |W| + sd * normal > 0.5``, tied to the
    label's score: the bound is dear (fit's accuracy about 0.53, LogisticRegression's 0.86
    at a gap of 0.5)."""
    W = np.random.default_rng(42).normal(size=d) * np.linspace(1.5, 0, d)
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    score = Z @ W
    y = (score + rng.logistic(size=n) > 0).astype(int)
    g = (score / np.linalg.norm(W) + sd * rng.normal(size=n) > 0.5).astype(int)
    return Z, y, g


@pytest.mark.parametrize("first", [None, "negatives"])
def test_the_stream_keeps_the_bound_when_the_group_is_tied_to_the_score(first):
    """One pass over 2e5 rows in batches of 1e4: on main 6bdc02c the fresh gap was 0.48
    (the multipliers swung past the bound at every outer iteration); now within bound +
    0.01 on fresh rows, by a model better than the constant one. Also when the first 3
    batches hold negatives only (the constant model, measured on them at accuracy 1, was
    kept as the best model met)."""
    X, y, g = _tied_to_score(200_000, 0)
    if first == "negatives":
        Xe, ye, ge = _tied_to_score(80_000, 2)
        head = np.flatnonzero(ye == 0)[:30_000]
        X, y, g = (np.concatenate([a[head], b[:170_000]]) for a, b in ((Xe, X), (ye, y), (ge, g)))
    clf = _feed(_fair_model(), X, y, g, 10_000)
    X_new, y_new, g_new = _tied_to_score(100_000, 10)
    pred = clf.predict(X_new)
    gap = demographic_parity_difference(y_new, pred, sensitive_features=g_new)
    assert gap <= 0.06
    assert np.mean(pred == y_new) > max(y_new.mean(), 1 - y_new.mean()) + 0.005


def test_a_group_first_seen_after_five_batches_is_held_to_the_bound():
    """Group 2 (a fifth of the rows) absent from the first 5 of 60 batches (PF6): on main
    6bdc02c the rates of its first rows were read against its running weight (a few rows
    among every row seen) and the smoothness bound of its first rows was kept: fresh gap
    0.19. Now within bound + 0.01."""
    X, y, g = _rows(60_000, 1)
    g = np.where((np.random.default_rng(3).random(len(g)) < 0.2) & (np.arange(len(g)) >= 5000),
                 2, g)  # fmt: skip
    clf = _fair_model()
    for i in range(60):
        part = slice(i * 1000, (i + 1) * 1000)
        clf.partial_fit(X[part], y[part], classes=[0, 1], groups=[0, 1, 2],
                        sensitive_features=g[part])  # fmt: skip
    X_new, y_new, g_new = _rows(50_000, 99)
    g_new = np.where(np.random.default_rng(4).random(len(g_new)) < 0.2, 2, g_new)
    gap = demographic_parity_difference(y_new, clf.predict(X_new), sensitive_features=g_new)
    assert gap <= 0.06


def test_a_stream_whose_first_batches_hold_one_group_ends_near_fits_model():
    """The first 8 of 20 batches of 2000 rows hold group 0 only (issue 49 item 1). On main
    47717cd the constraints divided each group's rates by its weight over every row seen, so
    group 1's rates, first read after 16000 rows, were scaled by up to 3 and the constraint
    pushed the model to the constant (fresh accuracy 0.51 against fit's 0.69). The rates'
    denominators now count the rows from those on which every rate has rows, and the model
    learns from the null model there: within bound + 0.01, and within 0.01 of the accuracy
    of fit on the same rows, on fresh rows."""
    X, y, g = _rows(40_000, 0)
    Xe, ye, ge = _rows(40_000, 2)
    head = np.flatnonzero(ge == 0)[:16_000]
    X, y, g = (np.concatenate([a[head], b[:24_000]]) for a, b in ((Xe, X), (ye, y), (ge, g)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the batch unlike the rows before it is named
        clf = _feed(_fair_model(), X, y, g, 2000)
    fitted = _fair_model().fit(X, y, sensitive_features=g)
    X_new, y_new, g_new = _rows(100_000, 9)
    pred, ref = clf.predict(X_new), fitted.predict(X_new)
    assert demographic_parity_difference(y_new, pred, sensitive_features=g_new) <= 0.06
    assert np.mean(pred == y_new) >= np.mean(ref == y_new) - 0.01


def test_neyman_pearson_stream_starting_with_negatives_only():
    """The first 3 of 40 batches hold negatives only: on main 6bdc02c the negatives' weight
    was moved down an outer iteration at a time while no positive was measured, and the
    stream ended far from fit's model (here FNR 0.784 against fit's 0.393).
    Now the fresh FPR is within max_fpr + 0.01 and the FNR within 0.02 of fit's."""
    X, y, _ = _rows(370_000, 0)
    Xe, ye, _ = _rows(60_000, 2)
    head = np.flatnonzero(ye == 0)[:30_000]
    X, y = np.concatenate([Xe[head], X]), np.concatenate([ye[head], y])
    clf = _feed(_np_model(), X, y, None, 10_000)
    fitted = _np_model().fit(X, y)
    X_new, y_new, _ = _rows(100_000, 9)
    pred, ref = clf.predict(X_new), fitted.predict(X_new)
    assert pred[y_new == 0].mean() <= 0.11
    assert 1 - pred[y_new == 1].mean() <= 1 - ref[y_new == 1].mean() + 0.02


def _issue_rows(n, seed):
    """Issue 49's stream: 20 standard-normal columns, the label's weights falling from 1.5
    to 0 over them."""
    weights = np.random.default_rng(42).normal(size=20) * np.linspace(1.5, 0, 20)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 20))
    return X, (X @ weights + rng.logistic(size=n) > 0).astype(int)


@pytest.mark.parametrize("first", [0, 1])
def test_neyman_pearson_stream_whose_first_batches_hold_one_class(first):
    """The first 3 of 20 batches hold one class only, on issue 49's 20 columns; fresh FPR
    within max_fpr + 0.01 and FNR within 0.02 of fit's. On main 23a9350: negatives first,
    the model published (the mean of the last half of the iterates) brought its intercept
    back from about -10 over the whole stream and the threshold, a running mean of the
    quantiles of the earlier published models, lagged behind it (FPR 0.121-0.130 at
    random_state 0-2); positives first, the negatives' weight was moved on a rate of
    flagged negatives read as 0 where no negative was measured, down to e^-24, and the
    stream ended predicting no row positive (FPR 0, FNR 1.0)."""
    X, y = _issue_rows(100_000, 0)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    head = order[y[order] == first][:15_000]
    order = np.r_[head, rng.permutation(np.setdiff1d(order, head))]
    X, y = X[order], y[order]
    clf = _feed(_np_model(), X, y, None, 5000)
    fitted = _np_model().fit(X, y)
    X_new, y_new = _issue_rows(100_000, 1)
    pred, ref = clf.predict(X_new), fitted.predict(X_new)
    assert pred[y_new == 0].mean() <= 0.11
    assert 1 - pred[y_new == 1].mean() <= 1 - ref[y_new == 1].mean() + 0.02


def test_a_stream_sorted_by_group_keeps_fits_model_and_says_it_is_sorted():
    """A stream of one group's rows, then the other's: the constraints' smoothness bound,
    read on the first group's rows, was 300 times too small for the second's pieces, and on
    main afac9f1 the model left for scores of 1e3 (every row positive to the stream's end,
    accuracy 0.10 against fit's 0.90, silently). The bound is read again on a piece unlike
    the rows it was read on, and the stream is named as sorted."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _families import Family

    family = Family(
        n_rows=60_000, group_shares=(0.4, 0.6), tie="independent", noise_sd=0.5,
        positive_share=0.1, n_features=2, seed=0,
    )  # fmt: skip
    X, y, g = family.sample()
    rows = np.argsort(g, kind="stable")
    est = FairLogisticClassifier(bound=0.02, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for start in range(0, len(rows), 5000):
            b = rows[start : start + 5000]
            est.partial_fit(
                X[b], y[b], classes=[0, 1], groups=np.unique(g), sensitive_features=g[b]
            )
    batch = FairLogisticClassifier(bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
    X_new, y_new, _ = family.sample(20_000, rows_seed=1)
    assert np.mean(est.predict(X_new) == y_new) >= np.mean(batch.predict(X_new) == y_new) - 0.01
    assert np.all(np.abs(est.coef_) < 10)
    assert any("unlike the rows before it" in str(w.message) for w in caught)


def test_a_first_batch_of_negatives_under_a_band_of_rates_waits_for_positives():
    """Four groups (a band of rates, posed with Python floats) and a first batch of
    negatives: true-positive-rate parity has no positive to divide by yet. On main afac9f1
    the first call raised ZeroDivisionError; the constraints now wait for positives."""
    rng = np.random.default_rng(0)
    X, g = rng.standard_normal((2000, 2)), rng.integers(0, 4, 2000)
    est = FairLogisticClassifier(constraint="true_positive_rate_parity", bound=0.1)
    est.partial_fit(
        X, np.zeros(2000, int), classes=[0, 1], groups=[0, 1, 2, 3], sensitive_features=g
    )
    y = (X[:, 0] + rng.logistic(size=2000) > 0).astype(int)
    est.partial_fit(X, y, sensitive_features=g)
    assert np.all(np.isfinite(est.coef_))


def _cell_sums(rows, rates):
    """``(cell weights, hard sums, rows)``: ``rows`` rows in 4 equal cells (group x label),
    each group's rows predicted positive at its rate in ``rates``."""
    weight = np.full(4, rows / 4)
    return weight, weight * np.repeat(rates, 2), float(rows)


def test_a_best_model_read_over_the_bound_on_new_rows_is_no_longer_published():
    """The stream publishes the most accurate model measured to meet the bound. On main
    d3202f9 its first reading was its verdict for good: on the guide's stream (1e6 rows, DP
    0.05) a model read within the bound on the first 5e4 rows, by chance, stayed published to
    the end, at a fresh gap of 0.058. Its readings are now pooled: when they put it over the
    bound by more than their noise, a model measured to meet the bound replaces it."""
    X, y, g = _rows(60_000, 0)
    state = _feed(_fair_model(), X, y, g, 10_000)._stream
    p = len(state.z)
    old, other = np.full(p, 1.0), np.full(p, 2.0)
    state.best, state.best_sums = old.copy(), _cell_sums(10_000, [0.4, 0.4])
    state.best_accuracy = np.full(4, 0.9)
    state.reading = state.pair = None  # (no segment between the stream's last candidates)
    state.segment = (old.copy(), other)
    # Over the last outer iteration: the best (t = 0) far over the bound (a gap of 0.2 on
    # 1e5 rows, 40 standard errors), the other end within it.
    hard = np.array([_cell_sums(100_000, [0.3 + 0.2 * (t >= 0.5), 0.5])[1] for t in SEGMENT])
    state.segment_sums = (np.full(4, 25_000.0), hard, 100_000.0)
    state._publish_candidate(other)
    assert np.allclose(state.published, 0.5 * old + 0.5 * other)  # the first point that meets
    assert state._meets(state.best_sums)


def test_a_best_model_within_the_noise_of_its_readings_is_kept():
    """A gap over the bound by less than twice its readings' standard error is noise: the
    best is not dropped for it (the stream's family at 3e5 rows lost 0.013 of accuracy on the
    group tied to the score, sd 3, when it was)."""
    X, y, g = _rows(60_000, 0)
    state = _feed(_fair_model(), X, y, g, 10_000)._stream
    gap = state.pose.bound + 0.004  # one standard error of a gap on 1e5 rows is about 0.0045
    assert state._meets(_cell_sums(100_000, [0.5 - gap, 0.5]))
    assert not state._meets(_cell_sums(100_000, [0.5 - gap - 0.02, 0.5]))


def _score_tied_rows(n, seed):
    """Issue 49's family member ``sd2`` (benchmarks' stream family): 20 features, the label
    of their score plus logistic noise, the group tied to that score with noise sd 2."""
    W = np.random.default_rng(42).normal(size=20) * np.linspace(1.5, 0, 20)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 20))
    score = X @ W
    y = (score + rng.logistic(size=n) > 0).astype(int)
    g = (score / np.linalg.norm(W) + 2.0 * rng.normal(size=n) > 0.5).astype(int)
    return X, y, g


def test_a_short_stream_never_ends_silently_below_the_constant_model():
    """Where the bound is dear (the group tied to the label's score) a short stream's
    multipliers swing about their value, and a model of a multiplier past it ranks the rows
    backwards. On main 0783125 this stream (2e5 rows in batches of 1e4) ended on such a model,
    silently: fresh accuracy 0.434 against the constant model's 0.502, gap 0.065 over the
    bound of 0.05, bound_met_ True. The constant model, which meets the bound, now replaces a
    model measured no better than it, and the call that finds it says so."""
    X, y, g = _score_tied_rows(200_000, 0)
    clf = _fair_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _feed(clf, X, y, g, 10_000)
    said = [str(w.message) for w in caught]
    X_new, y_new, g_new = _score_tied_rows(50_000, 1)
    made = clf.predict(X_new)
    constant = max(y_new.mean(), 1 - y_new.mean())
    gap = demographic_parity_difference(y_new, made, sensitive_features=g_new)
    assert np.mean(made == y_new) >= constant - 0.005
    assert gap <= 0.05 + 0.01 and clf.bound_met_
    if not np.any(clf.coef_):  # the constant model: published with a warning that says so
        warned = [s for s in said if "no better than the constant model" in s]
        assert warned and "stream more rows" in warned[-1] and "fit" in warned[-1]


def test_a_model_worse_than_the_constant_one_on_the_recent_rows_is_told():
    """The recent rows' log-loss (the stream's own objective) of the published model is read
    against the constant model's: a model ranking the rows backwards is worse, and the call
    that finds it says so; its bound gets no benefit of the sampling doubt."""
    X, y, g = _rows(30_000, 0)
    clf = _feed(_fair_model(), X, y, g, 10_000)
    assert not clf._stream.worse[2]
    state = clf._stream
    p = len(state.scale) + 1
    state.published = state.published.copy()
    state.published[:p] *= -1.0  # the model backwards
    state.recent = None
    X_new, y_new, g_new = _rows(5_000, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.partial_fit(X_new, y_new, sensitive_features=g_new)
    excess, margin, worse = clf._stream.worse
    assert worse and excess > 0.05
    said = [str(w.message) for w in caught if "worse than the constant model" in str(w.message)]
    assert len(said) == 1 and f"{excess:.4f}" in said[0] and "fit" in said[0]
    assert clf.bound_met_ == (clf.recent_constraint_values_[0] <= 0.05)


def test_a_short_stream_ends_at_the_bound_as_fit_does():
    """Issue 49's family at 1e5 rows in batches of 5000, its member whose first 3 batches
    hold negatives only (the group tied to the score, sd 2): the stream ends within 0.01 of
    fit's accuracy on the same rows. The best model measured is one of small weights, and
    the points measured between it and the last candidate were a tenth apart, the first one
    already 0.01 over the bound: on main 45b0eb9 the stream stayed at its best, fresh gap
    0.042 and accuracy 0.529 against fit's 0.054 and 0.540 (sd 2 shuffled: 0.545 against
    0.558). The segment is now measured finer near its ends, and a point at the bound is
    found."""
    X, y, g = _score_tied_rows(100_000, 0)
    X_early, y_early, g_early = _score_tied_rows(100_000, 2)
    first = np.flatnonzero(y_early == 0)[:15_000]
    X = np.concatenate([X_early[first], X[:85_000]])
    y = np.concatenate([y_early[first], y[:85_000]])
    g = np.concatenate([g_early[first], g[:85_000]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream = _feed(_fair_model(), X, y, g, 5_000)
        batch = _fair_model().fit(X, y, sensitive_features=g)
    X_new, y_new, g_new = _score_tied_rows(100_000, 1)
    made = stream.predict(X_new)
    gap = demographic_parity_difference(y_new, made, sensitive_features=g_new)
    assert gap <= 0.05 + 0.01
    assert np.mean(made == y_new) >= np.mean(batch.predict(X_new) == y_new) - 0.01


def test_a_best_model_just_over_the_bound_waits_for_a_model_as_accurate():
    """A best model that its pooled readings put just over the bound is replaced by a model
    read within the bound at about its accuracy, not by any such model: on main 8317bd5 the
    only one then read within the bound was near constant (issue 49's family, the group tied
    to the score with sd 3, 2e5 rows in batches of 1e4: fresh accuracy 0.577 -> 0.523,
    fit's 0.582)."""
    X, y, g = _rows(60_000, 0)
    state = _feed(_fair_model(), X, y, g, 10_000)._stream
    p = len(state.z)
    old, other = np.full(p, 1.0), np.full(p, 2.0)
    # The best (cells 2 * group + label): group 1 positive 0.056 more often than group 0, a
    # gap 0.006 over the bound on 1.1e6 rows (6 standard errors), accuracy 0.70. The points
    # t >= 0.5 of its segment meet the bound, near the constant model (accuracy 0.51).
    over = state.pose.bound + 0.006
    rates = np.array([0.3, 0.7, 0.3 + over, 0.7 + over])
    near_constant = np.array([0.49, 0.51, 0.49, 0.51])
    weight = np.full(4, 250_000.0)
    state.best, state.best_sums = old.copy(), (weight, weight * rates, 1e6)
    state.best_accuracy = _cell_accuracy(weight, weight * rates)
    state.reading = state.pair = None
    state.segment = (old.copy(), other)
    hard = np.array([25_000.0 * (rates if t < 0.5 else near_constant) for t in SEGMENT])
    state.segment_sums = (np.full(4, 25_000.0), hard, 100_000.0)
    state._publish_candidate(other)
    assert np.array_equal(state.published, old)
    assert not state._meets(state.best_sums)  # (kept published, not as meeting the bound)
