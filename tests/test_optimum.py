"""Done means at the optimum (issue 33), judged as a user judges, on the families of
``benchmarks.families.OPTIMUM`` (small instances, through ``tests/_optimum.py``): a bound the
data already meet gives LogisticRegression's model, the log-loss is monotone in the bound,
and ``converged_`` agrees with an exact reference solve (SLSQP) of the problem the fit's last
solve posed."""

from __future__ import annotations

import warnings

import _optimum as optimum
import numpy as np
import pytest
from _reference import reference_solve
from sklearn.metrics import log_loss, roc_auc_score

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators import _solve as solving

_SMALL = {
    "wide_sparse": dict(n=4000, d=400, nnz=20),
    "imbalanced": dict(n=4000),
    "imbalanced_in_x": dict(n=4000),
    "many_small_groups": dict(k=60),
    "unscaled": dict(n=4000),
}


def _fit_quietly(clf, X, y, g):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=g)
    return [str(w.message) for w in caught]


def _own_gap(kind, form, y, pred, g):
    """LogisticRegression's own training value of the constrained quantity."""
    from fairlearn import metrics as fm

    rates = {
        "demographic_parity": fm.selection_rate,
        "true_positive_rate_parity": fm.true_positive_rate,
        "false_positive_rate_parity": fm.false_positive_rate,
        "error_rate_parity": lambda t, p: np.mean(t != p),
    }[kind]
    frame = fm.MetricFrame(metrics=rates, y_true=y, y_pred=pred, sensitive_features=g)
    return float(frame.ratio() if form == "ratio" else frame.difference())


def _check_is_logistic_regression(clf, caught, lr, transform, Xte, yte):
    assert clf.converged_, caught
    assert caught == []
    agreement = np.mean(clf.predict(Xte) == lr.predict(transform(Xte)))
    assert agreement >= 0.99
    auc = roc_auc_score(yte, clf.decision_function(Xte))
    assert abs(auc - roc_auc_score(yte, lr.decision_function(transform(Xte)))) <= 0.003


@pytest.mark.parametrize("family", list(_SMALL))
def test_a_loose_bound_is_logistic_regression_on_every_family(family):
    Xtr, ytr, gtr, Xte, yte, _ = optimum.FAMILIES[family](**_SMALL[family])
    lr, transform = optimum.logistic_regression_like(Xtr, ytr)
    own = _own_gap("demographic_parity", None, ytr, lr.predict(transform(Xtr)), gtr)
    clf = FairLogisticClassifier(bound=min(own + 0.1, 1.0), random_state=0)
    caught = _fit_quietly(clf, Xtr, ytr, gtr)
    _check_is_logistic_regression(clf, caught, lr, transform, Xte, yte)


def test_a_loose_bound_over_hundreds_of_groups_not_in_x_is_logistic_regression():
    """Issue 49's many-groups shape (groups of 20 rows, not columns of X), smaller: the band
    over 250 groups (500 constraints, whose KKT multiplier is solved in the residual) with
    LogisticRegression's own gap + 0.1 gives its model. (Its own gap is 0.65 here: a bound
    of 0.5, which looks loose, binds.)"""
    from sklearn.datasets import make_classification

    X, y = make_classification(5000, 10, random_state=0)
    g = np.repeat(np.arange(250), 20)
    np.random.default_rng(1).shuffle(g)
    lr, transform = optimum.logistic_regression_like(X, y)
    own = _own_gap("demographic_parity", None, y, lr.predict(transform(X)), g)
    clf = FairLogisticClassifier(bound=min(own + 0.1, 1.0), random_state=0)
    caught = _fit_quietly(clf, X, y, g)
    _check_is_logistic_regression(clf, caught, lr, transform, X, y)


@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize(
    "kind",
    [
        "demographic_parity",
        "true_positive_rate_parity",
        "false_positive_rate_parity",
        "error_rate_parity",
    ],
)
def test_a_loose_bound_is_logistic_regression_for_every_kind(kind, form):
    Xtr, ytr, gtr, Xte, yte, _ = optimum.imbalanced(n=3000, positive=0.8)
    lr, transform = optimum.logistic_regression_like(Xtr, ytr)
    own = _own_gap(kind, form, ytr, lr.predict(transform(Xtr)), gtr)
    bound = max(own - 0.1, 0.0) if form == "ratio" else own + 0.1
    clf = FairLogisticClassifier(constraint=kind, form=form, bound=bound, random_state=0)
    caught = _fit_quietly(clf, Xtr, ytr, gtr)
    _check_is_logistic_regression(clf, caught, lr, transform, Xte, yte)


def test_imbalanced_labels_get_logistic_regression_not_the_constant_model():
    # 85 % positive, the group not in X: LogisticRegression already meets DP 0.05.
    Xtr, ytr, gtr, Xte, yte, _ = optimum.imbalanced(n=5000, positive=0.85)
    lr, transform = optimum.logistic_regression_like(Xtr, ytr)
    clf = FairLogisticClassifier(bound=0.05, random_state=0)
    caught = _fit_quietly(clf, Xtr, ytr, gtr)
    assert np.any(clf.coef_ != 0)
    assert roc_auc_score(yte, clf.decision_function(Xte)) > 0.6
    ours = log_loss(ytr, clf.predict_proba(Xtr))
    assert ours <= log_loss(ytr, lr.predict_proba(transform(Xtr))) + 1e-3
    assert not any("constant model" in w for w in caught)


def test_log_loss_is_monotone_in_the_bound():
    rows = optimum.monotone_rows("imbalanced", n=3000, positive=0.8)
    losses = [r["log_loss"] for r in rows]
    # From binding to loose the training log-loss never rises, and ends at LR's.
    assert all(b <= a + 0.002 for a, b in zip(losses[:-2], losses[1:-1], strict=True))
    assert abs(losses[-2] - losses[-1]) <= 1e-3


def _last_posed(monkeypatch):
    """Capture the problem and result of the estimator's last solve."""
    seen = {}
    solve = solving._solve

    def spy(problem, seed, kwargs):
        result = solve(problem, seed, kwargs)
        seen.update(problem=problem, result=result)
        return result

    monkeypatch.setattr(solving, "_solve", spy)
    return seen


@pytest.mark.parametrize(
    "make",
    [
        lambda: (FairLogisticClassifier(bound=0.02, random_state=0), "imbalanced"),
        lambda: (
            FairLogisticClassifier(constraint="equalized_odds", bound=0.03, random_state=0),
            "imbalanced_in_x",
        ),
        lambda: (
            FairLogisticClassifier(constraint="error_rate_parity", bound=0.02, random_state=1),
            "unscaled",
        ),
        lambda: (FairLogisticClassifier(bound=0.05, random_state=0), "many_small_groups"),
        lambda: (FairLogisticClassifier(bound=0.01, random_state=0), "wide_sparse"),
        lambda: (NeymanPearsonClassifier(max_fpr=0.05, random_state=0), "imbalanced"),
    ],
)
def test_converged_agrees_with_an_exact_reference_solve(make, monkeypatch):
    clf, family = make()
    Xtr, ytr, gtr, *_ = optimum.FAMILIES[family](**_SMALL[family])
    seen = _last_posed(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if isinstance(clf, NeymanPearsonClassifier):
            clf.fit(Xtr, ytr)
        else:
            clf.fit(Xtr, ytr, sensitive_features=gtr)
    problem, result = seen["problem"], seen["result"]
    ref = reference_solve(problem, x0=result.x)
    assert ref["success"], ref["message"]
    f0, _, c, _ = problem.full_evaluation(result.x)
    ours = f0 + problem.h.value(result.x)
    close = abs(ours - ref["objective"]) <= 1e-3 * abs(ref["objective"])
    feasible = np.all(c[problem.inequality] <= clf.tol) if len(c) else True
    if clf.converged_:
        assert close and feasible, (ours, ref["objective"], c)
    else:
        # Not converged: the fit says so, whether or not it came near the optimum.
        assert any("did not converge" in str(w.message) for w in caught)


@pytest.mark.parametrize("make", [FairLogisticClassifier, NeymanPearsonClassifier])
def test_full_batches_converge_like_a_deterministic_method(make):
    Xtr, ytr, gtr, *_ = optimum.imbalanced(n=300, positive=0.7)
    clf = make(batch_size=len(Xtr), random_state=0)
    kwargs = {"sensitive_features": gtr} if make is FairLogisticClassifier else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf.fit(Xtr, ytr, **kwargs)
    assert clf.converged_
    assert clf.n_data_passes_ < 150


@pytest.mark.parametrize("center", [False, True])
def test_dual_floor_is_logistic_regressions_stop_rule(monkeypatch, center):
    """On wide data (a Hessian operator) the finish's dual tolerance floor puts every entry
    of the gradient in the data's units (``coef_``, ``intercept_``) within
    LogisticRegression's stop rule, ``tol=1e-4``, for the estimators' tol=1e-2, and no
    further: the worst gradient of that norm in the solver's ``x`` reaches it. The data's
    units from the problem's own map ``point`` (model -> ``x``), column by column. Narrow
    data have no floor."""
    from sklearn_ialm.problems import LinearProblem, _gram
    from sklearn_ialm.problems.losses import Logistic

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    pb = LinearProblem(
        X, np.ones(50), Logistic(), X, np.ones((50, 1)), np.zeros(1), fit_intercept=True,
        feature_scale=np.array([0.5, 3.0, 1.0, 7.0]),
        feature_center=rng.standard_normal(4) * 4 if center else None,
    )  # fmt: skip
    assert solving._dual_floor(FairLogisticClassifier(), pb) == 0.0
    monkeypatch.setattr(_gram, "GRAM_MAX_PARAMS", 2)
    floor = solving._dual_floor(FairLogisticClassifier(), pb)
    origin = pb.point(np.zeros(4), 0.0)
    M = np.column_stack(
        [pb.point(e, 0.0) - origin for e in np.eye(4)] + [pb.point(np.zeros(4), 1.0) - origin]
    )
    # d f / d model = M^T g: its largest entry over ||g|| = floor.
    worst = floor * np.max(np.linalg.norm(M, axis=0))
    assert worst == pytest.approx(1e-4, rel=1e-12)
