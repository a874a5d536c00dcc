"""What must always hold, on randomised families (issue 49 item 7).

The families are those of ``tests/_families.py``: 2 to 8 groups (some of 8 to 40 rows), tied
to the label's score, to a feature or to nothing, in X or not; 10 to 50 % positives or 3 to 4
classes; raw units; CSR with mostly zeros; streams shuffled or sorted. The invariants:

1. the bound is met on :meth:`predict` (fairlearn's metric), or ``converged_`` is False with a
   ConvergenceWarning whose advised ``bound=X`` converges and is met when refitted;
2. the training objective is monotone in the bound: a tighter bound never gives a smaller one
   (both fits converged, to :data:`OBJECTIVE_TOL`);
3. a fit, converged or not, is no worse on its own objective than the constant model where
   that meets the bound (a fit whose solves end above it returns a model that is not, and is
   not converged);
4. ``partial_fit`` over one pass of a stream ends within 0.01 of ``fit``'s rates on fresh rows:
   its gap at most 0.01 above ``fit``'s, its accuracy at most 0.01 below (item 1's acceptance);
5. ``NeymanPearsonClassifier``: the training false-positive rate of :meth:`predict` meets
   ``max_fpr``, or ``converged_`` is False with a warning;

and ``objective_`` is the objective of the model returned (its docstring). A marker
``xfail(strict=True)`` names a failure of main, with its minimal example (an ``@example``,
run first under every profile): it must go when the fix lands (an XPASS fails).

The objective is computed here, from the estimators' documented definition (the penalty of
``make_pipeline(StandardScaler(), LogisticRegression(C=C))``): the weighted mean log-loss (the
cross-entropy with more than two classes) plus ``||w||^2 / (2 C n)``, ``w`` the weights of the
standardised columns (a column whose absolute mean exceeds its standard deviation centred and
divided by it, any other divided by its root mean square).

``HYPOTHESIS_PROFILE=long`` runs 200 examples of each (``ci``, the default, a few, the same on
every run); see ``tests/_families.py``.
"""

from __future__ import annotations

import contextlib
import re
import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from _families import Family, families, load_profile
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    equal_opportunity_difference,
    equalized_odds_difference,
    false_positive_rate_difference,
)
from hypothesis import assume, event, example, given, note
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

load_profile()

KINDS = (
    "demographic_parity",
    "true_positive_rate_parity",
    "false_positive_rate_parity",
    "equalized_odds",
    "error_rate_parity",
)
BOUNDS = (0.02, 0.05, 0.1, 0.2)

#: How far an objective may be off its optimum for a converged fit: the precedent of
#: tests/test_optimum.py's monotone test (0.002), in log-loss units.
OBJECTIVE_TOL = 2e-3

#: The bound is met on predictions when fairlearn's metric is at most the bound plus this
#: (rounding of the rates only: the estimators decide ``bound_met_`` at 1e-12).
MET_TOL = 1e-9

#: Rows of the streams (one pass), of their batches, and fresh rows that judge them. (The user
#: guide: a stream needs many rows, 20000 are far from meeting a bound.)
STREAM_ROWS, BATCH_ROWS, FRESH_ROWS = (100_000, 200_000), 5000, 50_000

#: Invariants 2 and 3 judge converged fits only: with more than two classes a fit that does
#: not converge spends its 300 passes for nothing here (issue 49 item 2 asks for <= 100).
MULTICLASS_BUDGET = {"max_passes": 100}

#: The multiclass families: fits of many passes, on fewer rows.
_MULTICLASS = families(n_classes=(3, 4), n_rows=(300, 1000), max_groups=4)


# -- fairlearn's metrics ----------------------------------------------------------------------
def _error_rate_difference(y, pred, sensitive_features):
    frame = MetricFrame(
        metrics=lambda t, p: np.mean(t != p), y_true=y, y_pred=pred,
        sensitive_features=sensitive_features,
    )  # fmt: skip
    return frame.difference()


_BINARY = {
    "demographic_parity": demographic_parity_difference,
    "true_positive_rate_parity": equal_opportunity_difference,
    "false_positive_rate_parity": false_positive_rate_difference,
    "equalized_odds": equalized_odds_difference,
    "error_rate_parity": _error_rate_difference,
}


def gap(kind, y, pred, groups):
    """fairlearn's between-groups difference of ``kind``; with more than two classes the
    largest over the classes one-vs-rest (the error rate: of ``pred != y``)."""
    classes = np.unique(y)
    if len(classes) == 2 or kind == "error_rate_parity":
        return float(_BINARY[kind](y, pred, sensitive_features=groups))
    return max(float(_BINARY[kind](y == c, pred == c, sensitive_features=groups)) for c in classes)


def _conditional_defined(kind, y, groups):
    """Whether every group holds every class (a conditional rate of a group without the
    class is undefined, fairlearn's metric too)."""
    if kind in ("demographic_parity", "error_rate_parity"):
        return True
    return all(len(np.unique(y[groups == g])) == len(np.unique(y)) for g in np.unique(groups))


# -- the objective ----------------------------------------------------------------------------
def _column_scales(X, fit_intercept=True):
    """The standardisation of the estimators' docstring, per column of ``X`` (dense or CSR
    alike: the rule reads the columns' moments only)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    mean, std = X.mean(axis=0), X.std(axis=0)
    scale = np.where(fit_intercept & (np.abs(mean) > std), std, np.hypot(mean, std))
    return np.where(scale > 0, scale, 1.0)  # a constant column cannot move the score


def objective(est, X, y):
    """Mean log-loss (cross-entropy) of ``y`` plus ``||w||^2 / (2 C n)``, with ``w`` the
    weights of the standardised columns (every class's, the intercepts free)."""
    scores = est.decision_function(X)
    if scores.ndim == 1:  # binary: the score is the second class's against the first's 0
        scores = np.column_stack([np.zeros_like(scores), scores])
    codes = np.searchsorted(est.classes_, y)
    loss = -np.mean(log_softmax(scores, axis=1)[np.arange(len(y)), codes])
    weights = est.coef_ * _column_scales(X, est.fit_intercept)[None, :]
    return float(loss + np.sum(weights**2) / (2 * est.C * len(y)))


def constant_objective(y):
    """The constant model's objective: the entropy of the class shares (no penalty)."""
    shares = np.bincount(np.unique(y, return_inverse=True)[1]) / len(y)
    return float(-np.sum(shares * np.log(shares)))


# -- fits -------------------------------------------------------------------------------------
def fit(est, X, y, groups=None):
    """``est`` fitted, and the warnings of the fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, **({} if groups is None else {"sensitive_features": groups}))
    for w in caught:
        # (Plain tests fit by it too: outside a hypothesis test there is nothing to note.)
        with contextlib.suppress(InvalidArgument):
            note(f"{w.category.__name__}: {w.message}")
    return est, caught


def _advised_bound(caught):
    """The ``bound=X`` of the fit's ConvergenceWarning (None without one)."""
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            found = re.search(r"bound=([0-9.]+)", str(w.message))
            if found:
                return float(found.group(1).rstrip("."))
    return None


def check_met_or_advised(est, caught, X, y, groups):
    """Invariant 1 on a fitted ``est``: a bound not met on predictions is said (``converged_``
    False, a ConvergenceWarning) with a bound to ask instead, and any bound a warning advises
    converges and is met when refitted."""
    kind, bound = est.constraint, est.bound
    reached = gap(kind, y, est.predict(X), groups)
    note(f"gap on predictions {reached:.5f}, bound {bound}, converged_ {est.converged_}")
    advised = _advised_bound(caught)
    if reached > bound + MET_TOL:
        assert not est.converged_, "converged_ is True and the bound is not met"
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
        assert advised is not None, "the bound is not met and the warning advises no bound"
    if advised is not None:
        again, _ = fit(est.__class__(**{**est.get_params(), "bound": advised}), X, y, groups)
        again_gap = gap(kind, y, again.predict(X), groups)
        note(f"refit at the advised bound={advised}: gap {again_gap:.5f}, {again.converged_}")
        assert again.converged_ and again_gap <= advised + MET_TOL


def _fair(kind, bound, **params):
    return FairLogisticClassifier(constraint=kind, bound=bound, random_state=0, **params)


# -- 1. the bound is met, or the advice works -------------------------------------------------
# The minimal falsifying examples of the known bugs (HYPOTHESIS_PROFILE=long), run first in
# every profile: the xfail then fails on every hypothesis version, and passes when fixed.
_SMALL_GROUP_NO_ADVICE = Family(
    n_rows=300, group_shares=(0.026667, 0.486667, 0.486667), tie="score", noise_sd=0.5,
    positive_share=0.1, n_features=2, seed=2,
)  # fmt: skip
_MULTICLASS_NO_ADVICE = Family(
    n_rows=435, group_shares=(0.571429, 0.142857, 0.142857, 0.142857), tie="independent",
    noise_sd=0.5, positive_share=0.1, n_classes=4, n_features=2, seed=0,
)  # fmt: skip


def check_bound(family, kind, bound):
    X, y, groups = family.sample()
    assume(_conditional_defined(kind, y, groups))
    est, caught = fit(_fair(kind, bound), X, y, groups)
    check_met_or_advised(est, caught, X, y, groups)


@given(
    family=families(small="none"), kind=st.sampled_from(KINDS[:-1]), bound=st.sampled_from(BOUNDS)
)
def test_binary_bound_met_or_advised_bound_works(family, kind, bound):
    check_bound(family, kind, bound)


# On main afac9f1: (a) no bound advised (the check's first three refits spent max_passes
# each; now 0.30, the smallest that converges); (b) advised 0.13, whose refit did not
# converge (now 0.14, checked).
@example(
    family=Family(
        n_rows=300, group_shares=(0.333333, 0.333333, 0.333333), tie="score", noise_sd=0.5,
        positive_share=0.2, n_features=2, seed=0,
    ),
    bound=0.02,
)  # fmt: skip
@example(
    family=Family(n_rows=300, tie="score", noise_sd=0.5, positive_share=0.1, n_features=2),
    bound=0.02,
)
# HYPOTHESIS_PROFILE=long (--hypothesis-seed=77) on main 8317bd5: no bound advised, the
# refits at 0.03 and 0.07 spending the check's budget (550 passes); now 0.20, the
# unconstrained model's own gap, checked by a refit past the budget.
@example(
    family=Family(
        n_rows=320, group_shares=(0.25, 0.25, 0.25, 0.25), tie="score", noise_sd=0.5,
        positive_share=0.1, n_features=2,
    ),
    bound=0.02,
)  # fmt: skip
# The same run (seed 91): the budget ran out with the surrogate's bound at its tightest, and
# the warning advised raising max_passes (1000 passes miss by as much) and no bound; now
# 0.06, checked by refits.
@example(
    family=Family(
        n_rows=2337, group_shares=(0.1, 0.1, 0.3, 0.4, 0.1), tie="hidden", noise_sd=1.0,
        positive_share=0.1, sparse=0.3, n_features=2, seed=5,
    ),
    bound=0.02,
)  # fmt: skip
@given(family=families(small="none"), bound=st.sampled_from(BOUNDS))
def test_binary_error_rate_bound_met_or_advised_bound_works(family, bound):
    check_bound(family, "error_rate_parity", bound)


# On main afac9f1 no bound was advised (the check's refits spent its budget); now 0.17,
# checked (0.16 does not converge).
@example(family=_SMALL_GROUP_NO_ADVICE, kind="error_rate_parity", bound=0.02)
@given(family=families(small="some"), kind=st.sampled_from(KINDS), bound=st.sampled_from(BOUNDS))
def test_binary_bound_met_or_advised_bound_works_with_small_groups(family, kind, bound):
    check_bound(family, kind, bound)


_MULTICLASS_ADVICE_OVER_BUDGET = Family(
    n_rows=1000, group_shares=(0.333333, 0.333333, 0.25, 0.083333), tie="feature",
    noise_sd=0.5, positive_share=0.1, n_classes=4, sparse=0.05, n_features=2, seed=2136,
)  # fmt: skip


# On main afac9f1 the warning named no bound for _MULTICLASS_NO_ADVICE (0.03 converges; it
# is now advised, checked). HYPOTHESIS_PROFILE=long found the case below (4 classes, 1000
# rows, 4 groups tied to a feature, error-rate parity 0.02): up to main 57c2dff a strict
# xfail, the advice check's refits at 0.03-0.06 (190 passes each) spending its budget of
# 600 with no bound advised; with the steering's solves to half of tol its 5 refits take
# 438 passes and 0.08 is advised (its refit converges: checked). The fit at 0.02 still
# does not converge (gap 0.074 on predictions; issue 49 items 2 and 4).
@example(family=_MULTICLASS_ADVICE_OVER_BUDGET, kind="error_rate_parity", bound=0.02)
@given(family=_MULTICLASS, kind=st.sampled_from(KINDS), bound=st.sampled_from(BOUNDS))
def test_multiclass_bound_met_or_advised_bound_works(family, kind, bound):
    check_bound(family, kind, bound)


@given(family=st.just(_MULTICLASS_NO_ADVICE))
def test_multiclass_advice_is_named_and_works(family):
    """The example of main afac9f1 whose warning named no bound (0.03 converges)."""
    check_bound(family, "error_rate_parity", 0.02)


# -- 2. the objective is monotone in the bound ------------------------------------------------
def check_monotone(family, kind, bounds, budget):
    X, y, groups = family.sample()
    assume(_conditional_defined(kind, y, groups))
    tight, loose = sorted(bounds)
    assume(tight < loose)
    fits = [fit(_fair(kind, b, **budget), X, y, groups)[0] for b in (tight, loose)]
    if not all(f.converged_ for f in fits):
        event("not both converged")
        return
    values = [objective(f, X, y) for f in fits]
    note(f"objective at bound {tight}: {values[0]:.6f}, at {loose}: {values[1]:.6f}")
    assert values[0] >= values[1] - OBJECTIVE_TOL


# Found by drawing 300-row families of this strategy at equalized odds 0.1 and 0.2 (session
# 28): on main 86948de 0.1 ended at 0.5350 and 0.2 at 0.5397, its steering's model 0.055
# inside the bound on predictions; now 0.2 ends at 0.4956, the first point meeting the bound
# from the unconstrained optimum towards a converged solve (estimators/_steering_best.py).
@example(
    family=Family(
        n_rows=300, group_shares=(0.08, 0.063333, 0.073333, 0.1, 0.113333, 0.133333, 0.09,
        0.346667), tie="hidden", noise_sd=1.0, positive_share=0.3, raw=True, n_features=6,
        seed=117,
    ),
    kind="equalized_odds",
    bounds=[0.1, 0.2],
)  # fmt: skip
# Found by `python -m benchmarks.invariants --examples 100 --seed 2031` (session 30): on main
# 23a9350 0.05 ended at 0.3610 and 0.1 at 0.3655, both at a gap of 0.0346 on predictions (13
# to 20 positives a group: a row moves a rate by 0.05-0.08); 0.1's steering had moved one
# group's soft bound 0.093 inside. Now every soft bound is also moved alike
# (estimators/_steering_best.py's `_together`).
@example(
    family=Family(
        n_rows=300, group_shares=(0.333333, 0.333333, 0.333333), tie="independent",
        noise_sd=0.5, positive_share=0.2, n_features=6, seed=849,
    ),
    kind="true_positive_rate_parity",
    bounds=[0.05, 0.1],
)  # fmt: skip
# Found by `python -m benchmarks.invariants --examples 100 --seed 2033` (session 30): on main
# 52736b7 0.05 ended at 0.6622 and 0.1 at 0.6661, a group of 8 rows (4 positives) in X;
# 0.1 ended at its bound on a segment of its steering. Now a fit at its bound where a row
# moves a rate by more than ten times bound_tol searches as one that leaves room does
# (estimators/_steering_best.py): 0.1 ends at 0.6600.
@example(
    family=Family(
        n_rows=300, group_shares=(0.026667, 0.194667, 0.194667, 0.194667, 0.389333),
        tie="independent", noise_sd=0.5, groups_in_x=True, positive_share=0.5, raw=True,
        n_features=2, seed=0,
    ),
    kind="equalized_odds",
    bounds=[0.05, 0.1],
)  # fmt: skip
@given(
    family=families(),
    kind=st.sampled_from(KINDS),
    bounds=st.lists(st.sampled_from(BOUNDS), min_size=2, max_size=2, unique=True),
)
def test_binary_objective_is_monotone_in_the_bound(family, kind, bounds):
    check_monotone(family, kind, bounds, {})


# Found by `python -m benchmarks.invariants --examples 150 --seed 2026` (session 26): a group
# of 8 rows, whose selection rate moves 0.125 a row. At bound 0.02 the steering loosens
# its surrogate and ends with one of the 8 selected (objective 0.449, the unconstrained
# model's 0.449); at 0.05 its surrogate at the bound misses by 0.001 on predictions, the
# tightened one selects none of the 8, and the segment between them holds the bound only
# there. Up to main 86948de a strict xfail, 0.05 ending at 0.484: a model that far inside
# the bound now gives way to the first point meeting it from the unconstrained optimum
# towards the tightened solve (0.449, see estimators/_steering_best.py).
@given(
    family=st.just(
        Family(
            n_rows=300, group_shares=(0.026667, 0.973333), tie="independent", noise_sd=0.5,
            positive_share=0.2, n_features=2, seed=1,
        )
    ),
    kind=st.just("demographic_parity"),
    bounds=st.just([0.02, 0.05]),
)  # fmt: skip
def test_binary_objective_is_monotone_with_a_group_of_eight_rows(family, kind, bounds):
    check_monotone(family, kind, bounds, {})


# Found by `python -m benchmarks.invariants --examples 100 --seed 2033` (session 30): on main
# 52736b7 0.1 ended at 1.0382 and 0.02 at 1.0187. 0.1's tightened re-solve stopped predicting
# one class (1.10, above the constant model's 1.064) and the bracket stayed in that basin; now
# the first solve's segment to the constant model meets 0.1 at 0.974
# (estimators/_towards_constant.py).
@example(
    family=Family(
        n_rows=559, group_shares=(0.5, 0.5), tie="score", noise_sd=1.0, positive_share=0.1,
        n_classes=3, n_features=2, seed=2702,
    ),
    kind="false_positive_rate_parity",
    bounds=[0.02, 0.1],
)  # fmt: skip
# On main 6376317 this example ended at 1.0303 at 0.05 and 1.0142 at 0.02: the steering's
# met solve at 0.05 was far inside the bound (gap 0.02), and the segment from the last solve
# that missed it was above it; from the first solve, the segment meets 0.05 at 1.0121.
@example(
    family=Family(
        n_rows=300, group_shares=(0.5, 0.5), tie="score", noise_sd=0.5, positive_share=0.1,
        n_classes=3, n_features=2, seed=5,
    ),
    kind="demographic_parity",
    bounds=[0.02, 0.05],
)  # fmt: skip
@given(
    family=_MULTICLASS,
    kind=st.sampled_from(KINDS),
    bounds=st.lists(st.sampled_from(BOUNDS), min_size=2, max_size=2, unique=True),
)
def test_multiclass_objective_is_monotone_in_the_bound(family, kind, bounds):
    check_monotone(family, kind, bounds, MULTICLASS_BUDGET)


# -- 3. no worse than the constant model ------------------------------------------------------
def check_constant(family, kind, bound, budget):
    X, y, groups = family.sample()
    assume(_conditional_defined(kind, y, groups))
    values, counts = np.unique(y, return_counts=True)
    majority = np.full(len(y), values[np.argmax(counts)])
    assume(gap(kind, y, majority, groups) <= bound)  # the constant model meets the bound
    est, _ = fit(_fair(kind, bound, **budget), X, y, groups)
    if not est.converged_:
        event("not converged")
    ours, constant = objective(est, X, y), constant_objective(y)
    note(f"objective {ours:.6f}, the constant model's {constant:.6f}")
    assert ours <= constant + OBJECTIVE_TOL


@given(family=families(), kind=st.sampled_from(KINDS), bound=st.sampled_from(BOUNDS))
def test_binary_fit_no_worse_than_the_constant_model(family, kind, bound):
    check_constant(family, kind, bound, {})


# On main be32ff6 this example converged at an objective of 1.121, above the constant model's
# 1.083: its solves were posed at soft bounds the steering had tightened, where the constant
# model is not feasible (see estimators/_below_constant.py).
@example(
    family=Family(
        n_rows=300, group_shares=(0.113333, 0.886667), tie="hidden", noise_sd=2.0,
        positive_share=0.1, n_classes=3, n_features=2, seed=4,
    ),
    kind="demographic_parity",
    bound=0.02,
)  # fmt: skip
@given(
    family=_MULTICLASS,
    kind=st.sampled_from(KINDS),
    bound=st.sampled_from(BOUNDS),
)
def test_multiclass_fit_no_worse_than_the_constant_model(family, kind, bound):
    check_constant(family, kind, bound, MULTICLASS_BUDGET)


# -- the objective the fit reports is its model's ----------------------------------------------
def _scaling_tie(X):
    """Whether a column's absolute mean equals its standard deviation (an indicator of half
    the rows): which standardisation the fit takes there is a matter of rounding."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    mean, std = np.abs(X.mean(axis=0)), X.std(axis=0)
    return bool(np.any(np.isclose(mean, std, rtol=1e-9, atol=0)))


@example(
    family=Family(n_rows=300, tie="independent", positive_share=0.2, n_features=2, seed=0),
    kind="demographic_parity",
    bound=0.02,
)
@given(
    family=families(n_classes=(2, 3)), kind=st.sampled_from(KINDS), bound=st.sampled_from(BOUNDS)
)
def test_objective_attribute_is_the_returned_models(family, kind, bound):
    """``objective_`` is "the training loss at the returned point" (the docstring): the
    objective of the model returned, which invariants 2 and 3 would otherwise read."""
    X, y, groups = family.sample()
    assume(_conditional_defined(kind, y, groups) and not _scaling_tie(X))
    est, _ = fit(_fair(kind, bound), X, y, groups)
    ours = objective(est, X, y)
    note(f"objective_ {est.objective_:.6f}, the returned model's objective {ours:.6f}")
    assert est.objective_ == pytest.approx(ours, rel=1e-6)


def test_objective_attribute_on_dask_is_the_returned_models():
    """The same on dask arrays, whose report reads the loss from its own pass: the minimal
    example above, where the steering places the model between two solves."""
    family = Family(n_rows=300, tie="independent", positive_share=0.2, n_features=2, seed=0)
    X, y, groups = family.sample()
    on_dask = (da.from_array(a, chunks=150) for a in (X, y, groups))
    est, _ = fit(_fair("demographic_parity", 0.02), *on_dask)
    assert est.objective_ == pytest.approx(objective(est, X, y), rel=1e-6)


# -- 4. partial_fit over one pass ends near fit -----------------------------------------------
def _stream_order(order, y, groups, rng):
    if order == "shuffled":
        return rng.permutation(len(y))
    key = groups if order == "by_group" else y
    return np.argsort(key, kind="stable")


def check_stream(family, kind, bound, order):
    X, y, groups = family.sample()
    assume(_conditional_defined(kind, y, groups))
    rows = _stream_order(order, y, groups, np.random.default_rng(family.seed))
    labels = np.unique(groups)
    streamed = _fair(kind, bound)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for start in range(0, len(rows), BATCH_ROWS):
            batch = rows[start : start + BATCH_ROWS]
            streamed.partial_fit(
                X[batch], y[batch], classes=[0, 1], groups=labels,
                sensitive_features=groups[batch],
            )  # fmt: skip
    batch_fit, _ = fit(_fair(kind, bound), X, y, groups)
    X_new, y_new, g_new = family.sample(FRESH_ROWS, rows_seed=1)
    rates = {}
    for name, est in (("partial_fit", streamed), ("fit", batch_fit)):
        pred = est.predict(X_new)
        rates[name] = (gap(kind, y_new, pred, g_new), float(np.mean(pred == y_new)))
    note(f"fresh (gap, accuracy): {rates}")
    unlike = any("unlike the rows before it" in str(w.message) for w in caught)
    # A sorted stream is not the rows drawn alike that one pass learns from: it ends near
    # fit, or it says so (and a shuffled one never does).
    assert not (unlike and order == "shuffled")
    if unlike:
        return
    assert rates["partial_fit"][0] <= rates["fit"][0] + 0.01
    assert rates["partial_fit"][1] >= rates["fit"][1] - 0.01


_STREAMS = families(n_rows=STREAM_ROWS, max_groups=4, small="none")


# On main be32ff6 this example ended at fresh gap 0.033 against fit's 0.0095 (accuracy 0.714
# both): the models measured were means of a few thousand rows' iterates, and noise in their
# readings gave both sides of each group's band multipliers of 0.4-0.5.
@example(
    family=Family(
        n_rows=100_000, group_shares=(0.166667, 0.5, 0.166667, 0.166667), tie="independent",
        noise_sd=0.5, groups_in_x=True, positive_share=0.5, n_features=2, seed=0,
    ),
    kind="demographic_parity",
    bound=0.02,
)  # fmt: skip
@given(family=_STREAMS, kind=st.sampled_from(KINDS), bound=st.sampled_from(BOUNDS))
def test_partial_fit_over_a_shuffled_stream_ends_near_fit(family, kind, bound):
    check_stream(family, kind, bound, "shuffled")


# On main afac9f1 this example ended at every row positive (accuracy 0.099 against fit's
# 0.904): the smoothness bound read on the first group's rows was 300 times too small for
# the second's.
@example(
    family=Family(
        n_rows=123_754, group_shares=(0.4, 0.6), tie="independent", noise_sd=0.5,
        positive_share=0.1, n_features=2, seed=0,
    ),
    kind="demographic_parity",
    bound=0.02,
    order="by_group",
)  # fmt: skip
@given(
    family=_STREAMS,
    kind=st.sampled_from(KINDS),
    bound=st.sampled_from(BOUNDS),
    order=st.sampled_from(["by_group", "by_label"]),
)
def test_partial_fit_over_a_sorted_stream_ends_near_fit_or_says_so(family, kind, bound, order):
    check_stream(family, kind, bound, order)


# -- 5. Neyman-Pearson: the false-positive rate on the training rows --------------------------
@given(family=families(), max_fpr=st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_neyman_pearson_training_fpr_met_or_warned(family, max_fpr):
    X, y, _ = family.sample()
    est, caught = fit(NeymanPearsonClassifier(max_fpr=max_fpr, random_state=0), X, y)
    fpr = float(np.mean(est.predict(X)[y == 0] == 1))
    note(f"training FPR {fpr:.5f}, max_fpr {max_fpr}, converged_ {est.converged_}")
    if not est.converged_:
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    else:
        assert fpr <= max_fpr + MET_TOL


@pytest.mark.parametrize("n_classes", [2, 3])
def test_families_draw_what_they_say(n_classes):
    """The generator's own promises: exact training group sizes, the positive share, raw
    units far from 0, CSR mostly zeros, fresh rows with the same group shares."""
    from _families import Family

    family = Family(
        n_rows=2000, group_shares=(0.6, 0.39, 0.01), tie="score", noise_sd=0.5,
        positive_share=0.2, n_classes=n_classes, raw=True,
    )  # fmt: skip
    X, y, groups = family.sample()
    assert sorted(np.unique(groups, return_counts=True)[1].tolist()) == [20, 780, 1200]
    assert len(np.unique(y)) == n_classes
    if n_classes == 2:
        assert abs(y.mean() - 0.2) < 0.03
    scales = X.std(axis=0)
    assert np.all(np.abs(X.mean(axis=0)) > 1.5 * scales) and scales.max() / scales.min() > 1.5
    X_new, _, g_new = family.sample(20_000, rows_seed=1)
    assert abs(np.mean(g_new == groups[0]) - np.mean(groups == groups[0])) < 0.02
    # Tied to the score (of the positive class, or of class 0): the groups' shares differ.
    shares = [np.mean(y[groups == g] == (1 if n_classes == 2 else 0)) for g in np.unique(groups)]
    assert max(shares) - min(shares) > 0.1
    sparse = Family(sparse=0.1, groups_in_x=True, group_shares=(0.5, 0.5)).sample()[0]
    assert sp.issparse(sparse) and sparse.nnz < 0.3 * np.prod(sparse.shape)
