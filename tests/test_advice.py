"""Advice that works (issue 49, item 4): a bound a fit's warning advises converges when
refitted, and is within 0.02 of the smallest bound that does.

The families: six groups like COMPAS's races (two of 11 and 31 rows; the group tied to the
label, not in X), one 5-row group beside four large ones, and small random families (see
:mod:`benchmarks.families`). Each verdict is fairlearn's metric of ``predict`` on the
training rows, where the fit and its advice are judged.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
)
from sklearn.exceptions import ConvergenceWarning

from benchmarks.families import compas_like, many_small_groups, random_family, small_group
from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._verdict import _CHECK_FITS, _checked_bound_text


def _error_rate_difference(y, pred, sensitive_features):
    return MetricFrame(
        metrics=lambda t, p: np.mean(t != p), y_true=y, y_pred=pred,
        sensitive_features=sensitive_features,
    ).difference()  # fmt: skip


#: fairlearn's metric of each kind, and +1 where a looser bound is higher (-1: lower).
_METRIC = {
    ("demographic_parity", None): (demographic_parity_difference, 1),
    ("true_positive_rate_parity", None): (equal_opportunity_difference, 1),
    ("error_rate_parity", None): (_error_rate_difference, 1),
    ("demographic_parity", "ratio"): (demographic_parity_ratio, -1),
}


def _fit(X, y, groups, constraint, bound, form=None):
    """``(fit, its convergence warnings, whether fairlearn's metric of its training
    predictions meets the bound)``."""
    clf = FairLogisticClassifier(constraint=constraint, form=form, bound=bound, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    metric, looser = _METRIC[constraint, form]
    value = metric(y, clf.predict(X), sensitive_features=groups)
    return clf, said, looser * (value - bound) <= 1e-12


def _works(X, y, groups, constraint, bound, form=None):
    """Whether a fit at ``bound`` converges and meets it on its training predictions."""
    clf, _, met = _fit(X, y, groups, constraint, bound, form)
    return clf.converged_ and met


def _advised(text):
    """The bound a warning advises (as worded now, or before the checks), or None."""
    found = re.search(r"(?:Set bound=([0-9.]+):|bound=([0-9.]+) or (?:higher|lower))", text)
    return None if found is None else float(found.group(1) or found.group(2))


def _check_advice(X, y, groups, constraint, bound, form=None):
    """Fit at ``bound``; where the warning advises a bound, it works and the two bounds
    0.01 and 0.02 tighter (up to the fit's own) do not. Returns the advice."""
    clf, said, met = _fit(X, y, groups, constraint, bound, form)
    assert clf.bound_met_ == met
    advice = _advised(" ".join(said))
    if advice is None:
        return None
    assert not clf.converged_
    (text,) = said
    assert _works(X, y, groups, constraint, advice, form), (advice, text)
    looser = _METRIC[constraint, form][1]
    for tighter in (advice - 0.01 * looser, advice - 0.02 * looser):
        if looser * (tighter - bound) > 1e-9:
            assert not _works(X, y, groups, constraint, round(tighter, 2), form), (advice, text)
    # The checks' passes are in the attribute the warning names.
    assert f"which n_data_passes_ counts: {clf.n_data_passes_:.4g}" in text
    return advice


# (Seed 6, whose advice was 0.42 where 0.08 converged, converges at 0.05 itself since a
# point between two solves may meet the bound: test_fits_that_advised_now_converge.)
@pytest.mark.parametrize("seed", [0])
def test_six_races_advise_the_first_bound_that_converges(seed):
    """COMPAS-like, DP 0.05: no solve of the surrogate meets it (the 7-row group's rate on
    predictions moves in steps of 1/7). The advice was 0.23 where 0.10 converges."""
    Xtr, ytr, gtr, _, _, _ = compas_like(seed)
    advice = _check_advice(Xtr, ytr, gtr, "demographic_parity", 0.05)
    assert advice is not None
    # The smallest bound that converges, by a scan in steps of 0.01, is within 0.02.
    for tighter in np.arange(0.06, advice - 0.025, 0.01):
        assert not _works(Xtr, ytr, gtr, "demographic_parity", round(float(tighter), 2))


def test_a_five_row_group_advises_the_first_bound_that_converges():
    """One group of 5 rows, DP 0.02 (with seed 2, the solve nearest the bound reached 0.054
    and the advice was 0.26, where 0.12 was the first that converged; that fit now
    converges at 0.02: test_fits_that_advised_now_converge)."""
    X, y, groups = small_group(5, seed=3)
    advice = _check_advice(X, y, groups, "demographic_parity", 0.02)
    assert advice is not None
    for tighter in np.arange(0.03, advice - 0.025, 0.01):
        assert not _works(X, y, groups, "demographic_parity", round(float(tighter), 2))


@pytest.mark.parametrize("seed", [4, 5, 10, 15])
def test_random_small_families_advise_bounds_that_work(seed):
    """Three to six groups, one or two of 5-25 rows, tied to the label; DP or TPR parity
    at 0.01-0.05 (each of these seeds warns with an advice; seeds 1, 3 and 9 did up to main
    52736b7 and now converge: test_fits_that_advised_now_converge)."""
    X, y, groups, constraint, bound = random_family(seed)
    assert _check_advice(X, y, groups, constraint, bound) is not None


@pytest.mark.parametrize(
    "constraint, form, bound, seed",
    [("error_rate_parity", None, 0.02, 0), ("demographic_parity", "ratio", 0.95, 1)],
    ids=["error-rate parity", "ratio"],
)
def test_other_kinds_advise_bounds_that_work(constraint, form, bound, seed):
    """Error-rate parity, whose fit missed the bound (0.17 on predictions) with no remedy
    named; a ratio of selection rates, where a looser bound is a lower one."""
    X, y, groups, _, _ = random_family(seed)
    assert _check_advice(X, y, groups, constraint, bound, form) is not None


def test_a_fit_that_spends_its_budget_at_the_cap_advises_a_checked_bound():
    """Six groups (7 rows in the smallest), DP 0.02: the budget runs out with the
    surrogate's bound as tight as the steering takes it. More passes miss by as much
    (checked at three times max_passes), so the warning does not advise them (main 8317bd5
    did, and no bound); it advises a bound its refits saw converge, and that bound works."""
    X, y, groups, constraint, bound = random_family(2)
    clf, said, _ = _fit(X, y, groups, constraint, bound)
    (text,) = said
    assert not clf.converged_ and "Raise max_passes" not in text, text
    assert "More passes would not help" in text, text
    longer = FairLogisticClassifier(
        constraint=constraint, bound=bound, max_passes=3 * clf.max_passes, random_state=0
    )
    longer._checks_advice = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        longer.fit(X, y, sensitive_features=groups)
    assert not longer.converged_
    advice = _advised(text)
    assert advice is not None, text
    assert _works(X, y, groups, constraint, advice), text
    assert f"which n_data_passes_ counts: {clf.n_data_passes_:.4g}" in text


def test_the_check_of_many_small_groups_costs_a_few_fits():
    """60 groups of 20-50 rows in X, DP 0.04: the fit ends at a moved model. (At 0.05 it
    did too up to main 52736b7, and now converges: test_fits_that_advised_now_converge;
    100 groups of 20 rows at DP 0.1, where the check scanned 0.11-0.30 in steps of 0.01,
    21 refits and 697 data passes where the fit spent 34, converge too:
    tests/test_group_columns.py.) The check refits at most a few times, and what it
    advises works and the bound 0.01 tighter does not."""
    X, y, groups, _, _, _ = many_small_groups(k=60, seed=0)
    clf, said, _ = _fit(X, y, groups, "demographic_parity", 0.04)
    bare = FairLogisticClassifier(constraint="demographic_parity", bound=0.04, random_state=0)
    bare._checks_advice = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bare.fit(X, y, sensitive_features=groups)
    (text,) = said
    refits = int(re.search(r"\((\d+) refits?, ", text).group(1))
    assert refits <= 6, text
    assert clf.n_data_passes_ <= (1 + _CHECK_FITS) * bare.n_data_passes_, text
    assert f"which n_data_passes_ counts: {clf.n_data_passes_:.4g}" in text
    advice = _advised(text)
    assert advice is not None, text
    assert _works(X, y, groups, "demographic_parity", advice), text
    assert not _works(X, y, groups, "demographic_parity", round(advice - 0.01, 2)), text


def _constant_objective(y):
    """The constant model's objective: the entropy of the label's shares (no penalty)."""
    p = np.mean(y)
    return float(-(p * np.log(p) + (1 - p) * np.log1p(-p)))


@pytest.mark.parametrize(
    "make, constraint, form, bound",
    [
        (lambda: compas_like(6)[:3], "demographic_parity", None, 0.05),
        (lambda: small_group(5, seed=2), "demographic_parity", None, 0.02),
        (lambda: random_family(1)[:3], "true_positive_rate_parity", None, 0.05),
        (lambda: random_family(3)[:3], "true_positive_rate_parity", None, 0.04),
        (lambda: random_family(9)[:3], "true_positive_rate_parity", None, 0.02),
        (lambda: random_family(3)[:3], "demographic_parity", "ratio", 0.95),
        (lambda: many_small_groups(k=60, seed=0)[:3], "demographic_parity", None, 0.05),
    ],
    ids=["six races s6", "five rows s2", "random s1", "random s3", "random s9", "ratio s3",
         "60 groups"],
)  # fmt: skip
def test_fits_that_advised_now_converge(make, constraint, form, bound):
    """The fits these tests checked the advice of up to main 52736b7 (each warned, not
    converged: no solve met the bound, and the nearest was moved towards the constant
    model): a point between two converged solves meets the bound now
    (estimators/_steering_pairs.py). Converged, with no warning, the bound met as
    fairlearn measures it, below the constant model's objective."""
    X, y, groups = make()
    clf, said, met = _fit(X, y, groups, constraint, bound, form)
    assert clf.converged_ and met and not said
    assert clf.objective_ < _constant_objective(y)


def test_a_check_that_finds_no_bound_stops_at_its_budget_and_says_so():
    """Where no looser bound converges within reach, the check stops once it has spent
    _CHECK_FITS times the fit's passes (it scanned on to twice max_passes, then checked an
    estimate: 16 refits of 40 passes after a fit of 40), and its words say that no bound it
    tried works, up to which, and what the passes were."""
    est = FairLogisticClassifier(constraint="demographic_parity", bound=0.1, max_passes=300)
    est.n_data_passes_ = 40.0
    asked = []

    def refit(bound):
        asked.append(bound)
        return {"converged": False, "met": True, "hard": np.array([bound]), "passes": 40.0}

    text = _checked_bound_text(est, {"bound": 0.1}, refit, np.array([0.3]))
    assert 40.0 * len(asked) <= _CHECK_FITS * 40.0 + 40.0
    assert est.n_data_passes_ == 40.0 * (len(asked) + 1)
    # No "bound=X" in it: the words advise no bound that was not seen to work.
    assert "bound=" not in text and "no bound it tried works" in text, text
    assert f"Bounds looser than {max(asked):.2f}" in text, text
    assert f"({len(asked)} refits, {40.0 * len(asked):.4g} data passes" in text, text


def test_a_check_past_its_budget_advises_the_unconstrained_models_bound():
    """Where the budget is spent before any refit converged, one refit at the loosest bound
    reads the unconstrained model's own value, and one at that value rounded outwards
    checks it: the advice is a bound seen to work, the bounds between it and the last
    failure named as not tried (four groups of 80 rows, error-rate parity 0.02, advised
    no bound on main 8317bd5: tests/test_invariants.py)."""
    est = FairLogisticClassifier(constraint="demographic_parity", bound=0.02, max_passes=300)
    est.n_data_passes_ = 60.0
    asked = []

    def refit(bound):
        # A gap the unconstrained model reaches at 0.1931: bounds under it spend
        # max_passes without converging, bounds at or over it leave the model as it is.
        asked.append(round(bound, 2))
        works = bound >= 0.1931
        return {
            "converged": works, "met": works, "hard": np.array([min(bound, 0.1931)]),
            "reached": np.array([0.0625]), "passes": 10.0 if works else 300.0,
            "spent": not works,
        }  # fmt: skip

    text = _checked_bound_text(est, {"bound": 0.02}, refit, np.array([0.0625]))
    assert asked[-2:] == [0.99, 0.2], asked
    assert _advised(text) == 0.2, text
    assert "0.08-0.19 were not tried" in text, text
    assert est.n_data_passes_ == 60.0 + sum(10.0 if b >= 0.1931 else 300.0 for b in asked)
