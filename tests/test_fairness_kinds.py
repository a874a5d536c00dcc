"""Every fairness constraint kind and form, judged as fairlearn judges hard predictions.

The contract: the problem's constraints, evaluated at hard predictions ``1[score > 0]``
(``mean_j W[j, k] pred_j + offset_k``), are all ``<= 0`` exactly when fairlearn's metric of
those predictions meets the bound. fairlearn is the independent truth here; the library
itself never imports it.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from test_problems import _fd_grad

from sklearn_ialm.problems import CONSTRAINTS, fairness_metric, fairness_problem
from sklearn_ialm.solver import stoc_ialm

fm = pytest.importorskip("fairlearn.metrics")

PARITY = [
    "demographic_parity",
    "true_positive_rate_parity",
    "false_positive_rate_parity",
    "equalized_odds",
    "error_rate_parity",
]
FAIRLEARN = {
    "demographic_parity": "demographic_parity",
    "true_positive_rate_parity": "equal_opportunity",
    "false_positive_rate_parity": "false_positive_rate",
    "equalized_odds": "equalized_odds",
    "error_rate_parity": "zero_one_loss",
}
# The group-level rate of a row set, at predictions pred, as fairlearn defines each rate.
RATES = {
    "selection_rate": (lambda y: np.ones(len(y), bool), lambda y, p: p),
    "tpr": (lambda y: y == 1, lambda y, p: p),
    "fpr": (lambda y: y == 0, lambda y, p: p),
    "error_rate": (lambda y: np.ones(len(y), bool), lambda y, p: np.abs(y - p)),
}
KIND_RATES = {
    "demographic_parity": "selection_rate",
    "true_positive_rate_parity": "tpr",
    "false_positive_rate_parity": "fpr",
    "error_rate_parity": "error_rate",
}


def _fairlearn(kind, form, y, pred, groups, w):
    metric = getattr(fm, f"{FAIRLEARN[kind]}_{form}")
    return float(metric(y, pred, sensitive_features=groups, sample_weight=w))


def _data(seed, n_groups, n=90, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0.0
    y = (rng.random(n) < 0.45).astype(int)
    # Every group gets rows of both classes, so that every conditional rate is defined.
    groups = np.resize(np.arange(n_groups), n)
    groups[: 2 * n_groups] = np.repeat(np.arange(n_groups), 2)
    y[: 2 * n_groups] = np.tile([0, 1], n_groups)
    labels = np.array(["a", "b", "c", "d", "e"])[groups]
    w = rng.uniform(0.2, 3.0, size=n)
    return X, y, labels, w, rng


def _problem(X, y, groups, w, kind, form, bound, **kw):
    # A fixed smoothness skips the power iterations: these tests never run the solver.
    return fairness_problem(
        X,
        y,
        X,
        groups,
        bound=bound,
        constraint=kind,
        form=form,
        constraint_sample_weight=w,
        smoothness=(1.0, 1.0),
        **kw,
    )


def _hard_values(problem, scores):
    """Hard constraint values, at the best position of the free levels if there are any."""
    pred = (scores > 0).astype(float)
    if problem.A_con.rows is not None:
        pred = pred[problem.A_con.rows]
    return _at_best_levels(problem, (problem.W * pred[:, None]).mean(axis=0) + problem.offset)


def _at_best_levels(problem, v):
    """Constraint values ``v`` with every free level where the band's largest value is least."""
    if problem.levels is None:
        return v
    v = v.copy()
    # The best level sets the largest value of a band as low as it goes: the max of lines
    # in t is lowest where a falling line meets a rising one; by brute force over all pairs.
    for j in range(problem.levels.shape[1]):
        rows = np.flatnonzero(problem.levels[:, j])
        e = problem.levels[rows, j]
        cand = [
            (v[rows[a]] - v[rows[b]]) / (e[b] - e[a])
            for a in range(len(rows))
            for b in range(len(rows))
            if e[a] < 0 < e[b]
        ]
        best = min(cand, key=lambda t: np.max(v[rows] + e * t))
        v[rows] = v[rows] + e * best
    return v


def _bounds_around(m, form):
    """Bounds just below and above the metric ``m``, and farther ones, in the valid range."""
    hi = 1.0 if form == "ratio" else np.inf
    candidates = [m - 1e-7, m + 1e-7, m - 0.03, m + 0.03, 0.0, 0.5, 1.0]
    return [b for b in candidates if 0 <= b <= hi and abs(b - m) > 1e-9]


def _pairs_checked(problem, kind, form, bound, y, groups, w, p):
    """Constraint values from the names alone: each name's pair and rate, from ``p``."""
    out = []
    for name in problem.constraint_names:
        level = re.fullmatch(r"(\w+?)(?:\.(tpr|fpr))?\[(\w+)([-/])(\w+)\](<=|>=)", name)
        if "level" in (level.group(3), level.group(5)):
            # A band of free position around the overall rate r: r_g - r - b/2 <= 0 and
            # r - r_g - b/2 <= 0 (difference), r_g - k r <= 0 and b k r - r_g <= 0 (ratio,
            # k = 2 / (1 + b)), at the level the problem starts from.
            base, sub, a, op, b, direction = level.groups()
            rows, value = RATES[sub or KIND_RATES[kind]]
            g = b if a == "level" else a
            sel = (groups == g) & rows(y)
            rg = np.average(value(y, p)[sel], weights=w[sel])
            r = np.average(value(y, p)[rows(y)], weights=w[rows(y)])
            if form == "difference":
                out.append((rg - r if a == g else r - rg) - bound / 2)
            else:
                k = 2 / (1 + bound)
                out.append(rg - k * r if direction == "<=" else bound * k * r - rg)
            continue
        match = re.fullmatch(r"(\w+?)(?:\.(tpr|fpr))?\[(\w)([-/])(\w)\](<=|>=)", name)
        assert match, name
        base, sub, a, op, b, direction = match.groups()
        assert base == kind and (op, direction) == (
            ("-", "<=") if form == "difference" else ("/", ">=")
        )
        rows, value = RATES[sub or KIND_RATES[kind]]
        ra, rb = (
            np.average(value(y, p)[(groups == g) & rows(y)], weights=w[(groups == g) & rows(y)])
            for g in (a, b)
        )
        out.append(ra - rb - bound if form == "difference" else bound * rb - ra)
    return np.array(out)


# -- (a) hard constraints hold exactly when fairlearn's metric meets the bound ------------------
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_groups", [2, 3, 5])
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", PARITY)
def test_hard_constraints_hold_iff_fairlearn_metric_meets_the_bound(kind, form, n_groups, sparse):
    X, y, groups, w, rng = _data(n_groups, n_groups)
    Xs = sp.csr_matrix(X) if sparse else X
    checked = {True: 0, False: 0}
    for _ in range(4):
        scores = Xs @ rng.standard_normal(X.shape[1]) + rng.uniform(-1.0, 1.0)
        pred = (scores > 0).astype(int)
        m = _fairlearn(kind, form, y, pred, groups, w)
        assert np.isfinite(m)
        for bound in _bounds_around(m, form):
            problem = _problem(Xs, y, groups, w, kind, form, bound)
            holds = bool(np.all(_hard_values(problem, scores) <= 0))
            meets = m <= bound if form == "difference" else m >= bound
            assert holds == meets, (bound, m)
            checked[meets] += 1
    assert checked[True] and checked[False]  # the sweep saw both sides


@pytest.mark.parametrize("kind", PARITY)
def test_pairs_count_and_names(kind):
    X, y, groups, w, _ = _data(0, 3)
    per_rate = 2 if kind == "equalized_odds" else 1
    for form in ("difference", "ratio"):
        problem = _problem(X, y, groups, w, kind, form, 0.5)
        assert problem.n_constraints == per_rate * 3 * 2 == len(problem.constraint_names)
        assert len(set(problem.constraint_names)) == problem.n_constraints
    # With group "a" protected, the pair (b, c) is left out.
    problem = _problem(X, y, groups, w, kind, "difference", 0.1, protected=["a"])
    assert problem.n_constraints == per_rate * 4
    assert not any("[b-c]" in s or "[c-b]" in s for s in problem.constraint_names)


@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", PARITY)
def test_protected_pairs_match_the_restricted_metric(kind, form):
    X, y, groups, w, rng = _data(5, 3)
    for _ in range(5):
        scores = rng.standard_normal(len(y)) + rng.uniform(-1.0, 1.0)
        pred = (scores > 0).astype(int)
        m = fairness_metric(kind, y, pred, groups, form=form, sample_weight=w, protected=["b"])
        for bound in _bounds_around(m, form):
            problem = _problem(X, y, groups, w, kind, form, bound, protected=["b"])
            holds = bool(np.all(_hard_values(problem, scores) <= 0))
            assert holds == (m <= bound if form == "difference" else m >= bound)


@pytest.mark.parametrize("kind", ["positive_share", "disparate_impact"])
def test_share_kinds_hold_iff_their_metric_meets_the_bound(kind):
    X, y, groups, w, rng = _data(6, 3)
    for _ in range(5):
        scores = rng.standard_normal(len(y)) + rng.uniform(-1.0, 1.0)
        pred = (scores > 0).astype(int)
        m = fairness_metric(kind, None, pred, groups, sample_weight=w, protected=["a", "c"])
        for bound in [b for b in (m - 1e-7, m + 1e-7, m / 2, m * 1.5) if 0 < b < 1]:
            problem = _problem(X, y, groups, w, kind, None, bound, protected=["a", "c"])
            assert bool(np.all(_hard_values(problem, scores) <= 0)) == (m >= bound)


# -- (b) soft values: the same rates at p = sigmoid(score) ---------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", PARITY)
@pytest.mark.parametrize("n_groups", [3, 5])
def test_soft_values_are_the_rates_of_sigmoid_scores(kind, form, sparse, n_groups):
    X, y, groups, w, rng = _data(7, n_groups)
    Xs = sp.csr_matrix(X) if sparse else X
    bound = 0.15 if form == "difference" else 0.8
    problem = _problem(Xs, y, groups, w, kind, form, bound, fit_intercept=True)
    x = rng.standard_normal(problem.n_params)
    p = expit(X @ x[:-1] + x[-1])
    expected = _pairs_checked(problem, kind, form, bound, y, groups, w, p)
    np.testing.assert_allclose(problem.full_evaluation(x)[2], expected, atol=1e-12)
    C, _ = problem.constraints(x, slice(None))
    np.testing.assert_allclose(C.mean(axis=0), expected, atol=1e-12)


def test_constraint_scale_divides_every_parity_constraint():
    X, y, groups, w, rng = _data(8, 3)
    x = rng.standard_normal(X.shape[1])
    one = _problem(X, y, groups, w, "equalized_odds", "ratio", 0.7)
    scaled = _problem(X, y, groups, w, "equalized_odds", "ratio", 0.7, constraint_scale=4.0)
    np.testing.assert_allclose(scaled.full_evaluation(x)[2] * 4.0, one.full_evaluation(x)[2])


# -- (c) fairness_metric is fairlearn's metric ---------------------------------------------------
@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", PARITY)
def test_fairness_metric_equals_fairlearn(kind, form, n_groups):
    _, y, groups, w, rng = _data(9 + n_groups, n_groups)
    for q in (0.1, 0.4, 0.8):
        pred = (rng.random(len(y)) < q).astype(int)
        for weights in (None, w):
            ours = fairness_metric(kind, y, pred, groups, form=form, sample_weight=weights)
            assert ours == pytest.approx(_fairlearn(kind, form, y, pred, groups, weights))
            if form == "difference" or ours > 0:
                # Over all groups, the restricted metric is the whole one.
                everyone = fairness_metric(
                    kind, y, pred, groups, form=form, sample_weight=weights, protected=set(groups)
                )
                assert everyone == pytest.approx(ours)


@pytest.mark.parametrize("kind", ["true_positive_rate_parity", "false_positive_rate_parity"])
def test_fairness_metric_group_without_the_conditioning_class_is_zero_as_in_fairlearn(kind):
    y = np.array([1, 1, 0, 0, 0, 0, 1, 1, 1])
    pred = np.array([1, 0, 1, 0, 1, 1, 1, 1, 0])
    groups = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])  # group 1: no positives; group 2: none negative
    for form in ("difference", "ratio"):
        assert fairness_metric(kind, y, pred, groups, form=form) == pytest.approx(
            _fairlearn(kind, form, y, pred, groups, None)
        )


def test_fairness_metric_share_kinds_against_fairlearn_selection_rates():
    _, y, groups, w, rng = _data(12, 3)
    pred = (rng.random(len(y)) < 0.4).astype(int)
    frame = fm.MetricFrame(
        metrics=fm.selection_rate,
        y_true=y,
        y_pred=pred,
        sensitive_features=groups,
        sample_params={"sample_weight": w},
    )
    di = fairness_metric("disparate_impact", None, pred, groups, sample_weight=w)
    assert di == pytest.approx(float((frame.by_group / frame.overall).min()))
    share = fairness_metric("positive_share", None, pred, groups, sample_weight=w, protected="b")
    member = groups == "b"
    assert share == pytest.approx(np.sum(w[member] * pred[member]) / np.sum(w * pred))


def test_ratio_of_all_zero_rates_is_nan_and_the_constraints_hold():
    X, y, groups, w, _ = _data(13, 2)
    pred = np.zeros(len(y), dtype=int)
    assert np.isnan(fairness_metric("demographic_parity", y, pred, groups, form="ratio"))
    assert np.isnan(_fairlearn("demographic_parity", "ratio", y, pred, groups, None))
    problem = _problem(X, y, groups, w, "demographic_parity", "ratio", 0.8)
    assert np.all(_hard_values(problem, -np.ones(len(y))) <= 0)


# -- (d) oracles against finite differences ------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", PARITY)
def test_oracles_match_finite_differences(kind, sparse):
    X, y, groups, w, rng = _data(14, 3, n=40)
    Xs = sp.csr_matrix(X) if sparse else X
    for form in ("difference", "ratio"):
        problem = _problem(Xs, y, groups, w, kind, form, 0.6, fit_intercept=True)
        x = 0.5 * rng.standard_normal(problem.n_params)
        _, _, c, jac_t = problem.full_evaluation(x)
        C, vjp = problem.constraints(x, slice(None))
        n = C.shape[0]
        for k in range(problem.n_constraints):
            fd = _fd_grad(lambda u, k=k: problem.full_evaluation(u)[2][k], x)
            np.testing.assert_allclose(jac_t(np.eye(problem.n_constraints)[k]), fd, atol=1e-8)
            U = np.zeros_like(C)
            U[:, k] = 1.0 / n
            np.testing.assert_allclose(vjp(U), fd, atol=1e-8)


# -- (e) the shapes are solvable -----------------------------------------------------------------
@pytest.mark.parametrize("form", ["difference", "ratio"])
@pytest.mark.parametrize("kind", PARITY)
def test_stoc_ialm_meets_the_soft_constraints(kind, form):
    rng = np.random.default_rng(15)
    n = 300
    groups = rng.integers(0, 2, size=n)
    X = np.column_stack([rng.standard_normal((n, 2)), groups])
    # The label depends on the group: the unconstrained model breaks every parity.
    y = (X[:, 0] + 0.6 * (groups - 0.5) + 0.7 * rng.standard_normal(n) > 0).astype(int)
    kw = dict(fit_intercept=True, feature_scale="auto")
    free = fairness_problem(X, y, X, groups, bound=0.0, protected=[], **kw)
    free_x = stoc_ialm(free, max_passes=300, random_state=0).x
    coef, intercept = free.coef(free_x)
    p = expit(X @ coef + intercept)
    # A bound halfway from the unconstrained model's soft metric to perfect parity.
    names = [KIND_RATES.get(kind)] if kind != "equalized_odds" else ["tpr", "fpr"]
    metric = []
    for name in names:
        rows, value = RATES[name]
        r = [np.mean(value(y, p)[(groups == g) & rows(y)]) for g in (0, 1)]
        metric.append(max(r) - min(r) if form == "difference" else min(r) / max(r))
    bound = 0.5 * max(metric) if form == "difference" else 0.5 + 0.5 * min(metric)
    problem = fairness_problem(X, y, X, groups, bound=bound, constraint=kind, form=form, **kw)
    tol = 1e-2
    assert np.max(problem.full_evaluation(free_x)[2]) > tol  # same parameters: it binds
    result = stoc_ialm(problem, tol=tol, max_passes=1000, random_state=0)
    assert result.converged
    assert np.max(problem.full_evaluation(result.x)[2]) <= tol


# -- bad input -----------------------------------------------------------------------------------
def test_bad_input_names_the_parameter_and_value():
    X, y, groups, w, _ = _data(16, 2)
    with pytest.raises(ValueError, match=r"form must be one of .*got 'gap'"):
        fairness_problem(X, y, X, groups, bound=0.1, constraint="demographic_parity", form="gap")
    with pytest.raises(ValueError, match=r"form must be None for constraint='positive_share'"):
        fairness_problem(X, y, X, groups, bound=0.1, form="ratio")
    with pytest.raises(ValueError, match=r"constraint must be one of .*got 'parity'"):
        fairness_problem(X, y, X, groups, bound=0.1, constraint="parity")
    with pytest.raises(ValueError, match=r"bound must be in \[0, 1\] for form='ratio', got 1.5"):
        fairness_problem(X, y, X, groups, bound=1.5, constraint="equalized_odds", form="ratio")
    with pytest.raises(ValueError, match=r"bound must be >= 0 for form='difference', got -0.1"):
        fairness_problem(X, y, X, groups, bound=-0.1, constraint="error_rate_parity")
    with pytest.raises(ValueError, match="pass y_constraint"):
        fairness_problem(X, y, X[:50], groups[:50], bound=0.1, constraint="equalized_odds")
    with pytest.raises(ValueError, match=r"y_constraint must hold 0/1 labels .*got 2"):
        fairness_problem(
            X, y, X, groups, bound=0.1, constraint="equalized_odds", y_constraint=y + 1
        )
    with pytest.raises(ValueError, match=r"groups must have shape \(90,\)"):
        fairness_problem(X, y, X, groups[:5], bound=0.1)
    only_negatives = np.where(groups == "a", 0, y)
    with pytest.raises(ValueError, match=r"Group 'a' has no constraint rows with y=1"):
        fairness_problem(
            X, only_negatives, X, groups, bound=0.1, constraint="true_positive_rate_parity"
        )
    with pytest.raises(ValueError, match=r"y_pred must be a 1-d array of predictions in"):
        fairness_metric("demographic_parity", y, np.full(len(y), 1.5), groups)
    with pytest.raises(ValueError, match=r"protected: group 'z' has no rows"):
        fairness_metric("demographic_parity", y, y, groups, protected=["z"])


def test_y_constraint_gives_labels_to_separate_constraint_rows():
    X, y, groups, w, rng = _data(17, 2)
    Xh, yh, gh = X[:60], y[:60], groups[:60]
    kw = dict(bound=0.1, constraint="false_positive_rate_parity", smoothness=(1.0, 1.0))
    problem = fairness_problem(X, y, Xh, gh, y_constraint=yh, **kw)
    same = fairness_problem(Xh, yh, Xh, gh, **kw)  # y_constraint defaults to y
    np.testing.assert_array_equal(problem.W, same.W)
    np.testing.assert_array_equal(problem.offset, same.offset)
    flipped = fairness_problem(X, y, Xh, gh, y_constraint=1 - yh, **kw)
    assert not np.array_equal(flipped.W, problem.W)


def test_every_kind_is_listed():
    assert set(CONSTRAINTS) == {"positive_share", "disparate_impact", *PARITY}


def test_soft_predictions_give_the_metric_of_the_soft_rates():
    """With soft predictions the metric is the one the solver constrains: the constraint
    values at sigmoid scores, plus the bound, for a difference."""
    X, y, groups, w, rng = _data(23, 5)
    problem = fairness_problem(X, y, X, groups, bound=0.1, constraint="demographic_parity",
                               constraint_sample_weight=w)  # fmt: skip
    x = rng.standard_normal(problem.n_params)
    p = expit(X @ x)
    c = _at_best_levels(problem, (problem.W * p[:, None]).mean(axis=0) + problem.offset)
    metric = fairness_metric("demographic_parity", y, p, groups, sample_weight=w)
    # Five groups: a band of free level, whose largest constraint is (metric - bound) / 2.
    np.testing.assert_allclose(metric, 2 * c.max() + 0.1, rtol=1e-12)


@pytest.mark.parametrize(
    "values",
    [
        np.array([3, 0, 3, 7, 0, 1]),
        np.array([1, 0, 1, 1], dtype=np.int8),
        np.array([-2, 5, -2, 0]),
        np.array([10**12, 5, 10**12]),
        np.array(["b", "a", "c", "a"]),
        np.array([True, False, True]),
        np.array([0.5, 2.0, 0.5]),
        # Every value from the smallest to the largest present (codes without a look-up).
        np.array([2, 0, 1, 2]),
        np.array([6, 4, 5, 4], dtype=np.uint16),
        np.array([4, 3, 4], dtype=np.uint8),
        np.array([5, 5, 5]),
        np.array([0, 0], dtype=np.intp),
    ],
)
def test_unique_codes_are_numpys(values):
    from sklearn_ialm.problems._group_codes import distinct, unique_codes

    given = values.copy()
    labels, codes = unique_codes(values)
    want_labels, want_codes = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(labels, want_labels)
    assert labels.dtype == want_labels.dtype
    np.testing.assert_array_equal(codes, want_codes.reshape(-1))
    np.testing.assert_array_equal(distinct(values), want_labels)
    assert distinct(values).dtype == want_labels.dtype
    codes[:] = -1  # the codes are the caller's own: the labels given are left as they were
    np.testing.assert_array_equal(values, given)
