"""The data families of issue 20, judged as a user judges them.

Each case fits ``FairLogisticClassifier`` at a bound and reports, on the training rows
(fairlearn's metric of ``predict``) and on test rows: the gap, accuracy, data passes and
``converged_``, beside what the user could have instead on the same split: the constant model
(one class for every row), and fairlearn's group-aware ``ThresholdOptimizer`` on
``LogisticRegression`` where the group is a column of X, else ``ExponentiatedGradient`` on
``LogisticRegression`` at the same bound (its own training gap is printed: the comparison is
fair where the two gaps are alike). The targets of issue 20: bound met on the training rows,
``converged_`` within 100 passes, accuracy at least the constant model's and at least the
peer's minus 0.01, where the peer is ExponentiatedGradient, at the same training gap (ours is
refitted at EG's gap when the two differ by more than 0.005). Cases of fewer than 100000
training rows are fitted with 5 seeds: accuracy is their mean, gap and passes the worst,
``converged_`` and ``bound_met_`` whether all seeds say so. Each row says which targets it
misses.

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 python -m benchmarks.families [--seeds N] [case ...]

``python -m benchmarks.robust`` runs these cases after its own and writes both to
``benchmarks/results/robust.md``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from fairlearn import metrics as fm
from fairlearn.postprocessing import ThresholdOptimizer
from fairlearn.reductions import (
    DemographicParity,
    EqualizedOdds,
    ErrorRateParity,
    ExponentiatedGradient,
    FalsePositiveRateParity,
    TruePositiveRateParity,
)
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.datasets import load_a9a

#: fairlearn's metric of each kind (training and test gaps) and its moment for EG.
_METRIC = {
    "demographic_parity": (fm.demographic_parity_difference, DemographicParity),
    "equalized_odds": (fm.equalized_odds_difference, EqualizedOdds),
    "true_positive_rate_parity": (fm.equal_opportunity_difference, TruePositiveRateParity),
    "false_positive_rate_parity": (fm.false_positive_rate_difference, FalsePositiveRateParity),
    "error_rate_parity": (
        lambda y, p, sensitive_features: fm.MetricFrame(
            metrics=lambda t, q: np.mean(t != q),
            y_true=y,
            y_pred=p,
            sensitive_features=sensitive_features,
        ).difference(),
        ErrorRateParity,
    ),
}

# a9a's one-hot blocks (0-based first column of each of Adult's 14 variables, LIBSVM's
# encoding of binned numbers and categories): decoded to categories, one-hot again below.
_A9A_BLOCKS = [0, 5, 13, 18, 34, 39, 46, 60, 66, 71, 73, 75, 77, 82, 123]
_A9A_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital", "occupation",
    "relationship", "race", "sex", "capital_gain", "capital_loss", "hours", "country",
]  # fmt: skip
_RACES = ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]


def _a9a_frame(X):
    """a9a's rows as Adult's 14 categorical columns ("none" where a block is empty)."""
    X = sp.csr_matrix(X)
    cols = {}
    for name, lo, hi in zip(_A9A_NAMES, _A9A_BLOCKS[:-1], _A9A_BLOCKS[1:], strict=True):
        block = X[:, lo:hi]
        code = np.asarray(block.argmax(axis=1)).ravel()
        empty = np.asarray(block.sum(axis=1)).ravel() == 0
        cols[name] = np.where(empty, "none", code.astype(str))
    frame = pd.DataFrame(cols)
    frame["race"] = [_RACES[int(c)] if c != "none" else "none" for c in frame["race"]]
    frame["sex"] = frame["sex"].map({"0": "Female", "1": "Male"})
    return frame


def adult_race():
    """Adult (a9a decoded to its 14 columns, one-hot through a ColumnTransformer: the race
    columns are in X); five groups: White 27816 training rows, Asian-Pac-Islander 1039,
    Amer-Indian-Eskimo 311, Other 271, Black 3124."""
    d = load_a9a()
    train, test = _a9a_frame(d.data), _a9a_frame(d.data_test)
    ct = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), _A9A_NAMES)])
    Xtr, Xte = ct.fit_transform(train).tocsr(), ct.transform(test).tocsr()
    return Xtr, d.target, train["race"].to_numpy(), Xte, d.target_test, test["race"].to_numpy()


def intersections():
    """Adult by race and sex, given as a two-column frame (ten intersections, the smallest
    of 90 training rows)."""
    d = load_a9a()
    train, test = _a9a_frame(d.data), _a9a_frame(d.data_test)
    ct = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), _A9A_NAMES)])
    Xtr, Xte = ct.fit_transform(train).tocsr(), ct.transform(test).tocsr()
    return Xtr, d.target, train[["race", "sex"]], Xte, d.target_test, test[["race", "sex"]]


def many_groups(n=4000, k=100, seed=0):
    """100 groups of 20 training rows, the group one-hot in X (sparse)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(k), n // k)
    X = rng.standard_normal((n, 10))
    X[:, 0] += (groups % 5) * 0.3
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=n) > 0.5).astype(int)
    X = sp.hstack([sp.csr_matrix(X), sp.csr_matrix(np.eye(k)[groups])]).tocsr()
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, groups, test_size=0.5, stratify=groups, random_state=0
    )
    return Xtr, ytr, gtr, Xte, yte, gte


def _label_and_group(s, noise, rng, lean=None):
    """``y = 1[s + logistic noise > 0]`` and the group, a noisy threshold of ``lean`` (the
    score ``s`` itself when ``None``): ``1[lean + N(0, (noise std(lean))^2) > 0]``."""
    y = (s + rng.logistic(size=len(s)) > 0).astype(int)
    t = s if lean is None else lean
    g = (t + rng.normal(scale=noise * t.std(), size=len(s)) > 0).astype(int)
    return y, g


def binding_data(noise, n=1_000_000, d=20, seed=0, on="score"):
    """Dense n x d (and n / 10 test rows); the group (not in X) a noisy threshold of the
    label's own score (``on="score"``) or of the feature the label leans on most
    (``on="feature"``: the column of largest ``|w|``, signed as ``w``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n // 10, d))
    w = rng.standard_normal(d) / np.sqrt(d) * 2
    s = X @ w
    lean = None
    if on == "feature":
        j = int(np.argmax(np.abs(w)))
        lean = np.sign(w[j]) * X[:, j]
    y, g = _label_and_group(s, noise, rng, lean)
    return X[:n], y[:n], g[:n], X[n:], y[n:], g[n:]


def binding_csr(noise, n=1_000_000, d=10_000, nnz=20, seed=0):
    """CSR n x d (and n / 10 test rows), ``nnz`` standard-normal non-zeros a row in uniform
    columns (the rare duplicates summed); label and group from the score as
    :func:`binding_data` makes them (the group not a column of X)."""
    rng = np.random.default_rng(seed)
    m = n + n // 10
    cols = rng.integers(0, d, size=m * nnz, dtype=np.int32)
    vals = rng.standard_normal(m * nnz)
    indptr = np.arange(0, m * nnz + 1, nnz, dtype=np.int32)
    X = sp.csr_matrix((vals, cols, indptr), shape=(m, d))
    # Canonical CSR, as most producers give: the estimators would copy a non-canonical one.
    X.sum_duplicates()
    # w ~ N(0, 4 / nnz): the score's spread is that of the dense recipe.
    s = X @ (rng.standard_normal(d) * 2 / np.sqrt(nnz))
    y, g = _label_and_group(s, noise, rng)
    return X[:n], y[:n], g[:n], X[n:], y[n:], g[n:]


def binding_strong():
    """1e6 x 20, the group a noisy threshold of the label's score: a bound that binds hard
    (LogisticRegression's parity gap about 0.8 on the training rows)."""
    return binding_data(0.3)


def binding_moderate():
    """The same with a noisier group (LogisticRegression's gap about 0.44)."""
    return binding_data(1.2)


def sparse_rows(n, d, nnz, rng):
    """``(X, s, y)``: CSR rows of ``nnz`` non-zeros in [0, 1) (as TF-IDF or counts give),
    the score ``s`` of a sparse linear model and labels from it with logistic noise."""
    cols = rng.integers(0, d, size=(n, nnz))
    vals = rng.random((n, nnz))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    w = rng.standard_normal(d) * (rng.random(d) < 0.1) * 3
    s = X @ w
    y = (s + rng.logistic(size=n) > np.median(s)).astype(int)
    return X, s, y


def tfidf(n=100_000, d=10_000, nnz=50, seed=0):
    """CSR 1e5 x 1e4, 50 non-zeros a row (see :func:`sparse_rows`), the group not a column
    of X but following the score."""
    rng = np.random.default_rng(seed)
    X, s, y = sparse_rows(n, d, nnz, rng)
    g = (s + rng.normal(scale=2 * s.std(), size=n) > np.median(s)).astype(int)
    return _split(X, y, g)


def constant_column():
    """The README's quick-start data with a constant column (3.0) beside them."""
    X, y = make_classification(
        n_samples=2000, n_features=10, n_informative=5, shuffle=False, random_state=0
    )
    g = (X[:, 0] + np.random.default_rng(0).normal(scale=0.5, size=len(X)) > 0.5).astype(int)
    return _split(np.column_stack([X, np.full(len(X), 3.0)]), y, g)


def small_table(n=1500, seed=0):
    """A small table: 1500 rows, 8 columns, one group of about 100 rows (not in X) whose
    rows lean positive."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    g = (rng.random(n) < 0.07).astype(int)
    X[:, 0] += 0.8 * g
    y = (X[:, 0] + 0.7 * X[:, 1] - 0.5 * X[:, 2] + rng.logistic(size=n) > 0.3).astype(int)
    return _split(X, y, g)


def _split(X, y, g):
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, g, test_size=0.3, stratify=g, random_state=0
    )
    return Xtr, ytr, gtr, Xte, yte, gte


#: name -> (data, the group is a column of X, [(kind, bound), ...])
CASES = {
    "adult_race": (
        adult_race,
        True,
        [(kind, 0.05) for kind in _METRIC],
    ),
    "intersections": (intersections, True, [("demographic_parity", 0.05)]),
    "many_groups": (many_groups, True, [("demographic_parity", 0.1)]),
    "binding_strong": (binding_strong, False, [("demographic_parity", 0.02)]),
    "binding_moderate": (binding_moderate, False, [("demographic_parity", 0.02)]),
    "tfidf": (tfidf, False, [("demographic_parity", 0.02)]),
    "constant_column": (constant_column, False, [("demographic_parity", 0.05)]),
    "small_table": (small_table, False, [("demographic_parity", 0.05)]),
}


def _peer(kind, bound, in_x, X, y, g, Xt, gt):
    """``(name, test predictions, training gap)`` of the peer a user would reach for."""
    metric = _METRIC[kind][0]
    if in_x and kind != "error_rate_parity":
        dense = (lambda A: A.toarray()) if sp.issparse(X) else np.asarray
        to = ThresholdOptimizer(
            estimator=LogisticRegression(max_iter=1000),
            constraints=kind,
            predict_method="decision_function",
        )
        to.fit(dense(X), y, sensitive_features=g)
        train = to.predict(dense(X), sensitive_features=g, random_state=0)
        test = to.predict(dense(Xt), sensitive_features=gt, random_state=0)
        return "ThresholdOptimizer", test, metric(y, train, sensitive_features=g)
    if sp.issparse(X):
        if X.shape[0] * X.shape[1] > 1e8:
            return "ExponentiatedGradient (not run: needs X dense)", None, np.nan
        X, Xt = X.toarray(), Xt.toarray()  # fairlearn's reductions take dense rows only
    eg = ExponentiatedGradient(
        LogisticRegression(max_iter=1000), _METRIC[kind][1](difference_bound=bound)
    )
    eg.fit(X, y, sensitive_features=g)
    return (
        "ExponentiatedGradient",
        eg.predict(Xt, random_state=0),
        metric(y, eg.predict(X, random_state=0), sensitive_features=g),
    )


#: Below this many training rows a single fit's test accuracy and passes move with the seed
#: (Adult by race, equalised odds: 24 to 286 passes over 5 seeds): the row reports the mean
#: accuracy over these seeds, the worst gap and passes, and whether all converged.
_SMALL, _SEEDS = 100_000, 5


def _fit(kind, bound, X, y, g, seed):
    clf = FairLogisticClassifier(constraint=kind, bound=bound, random_state=seed)
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=g)
    return clf, time.process_time() - t, caught


def run_case(name, report, n_seeds=None):
    make, in_x, settings = CASES[name]
    X, y, g, Xt, yt, gt = make()
    seeds = range(n_seeds or (_SEEDS if X.shape[0] < _SMALL else 1))
    for kind, bound in settings:
        metric = _METRIC[kind][0]
        fits = [_fit(kind, bound, X, y, g, seed) for seed in seeds]
        gaps = [metric(y, clf.predict(X), sensitive_features=g) for clf, _, _ in fits]
        accs = [np.mean(clf.predict(Xt) == yt) for clf, _, _ in fits]
        gap, acc = max(gaps), float(np.mean(accs))
        test_gap = max(metric(yt, clf.predict(Xt), sensitive_features=gt) for clf, _, _ in fits)
        clf = max(fits, key=lambda f: f[0].n_data_passes_)[0]  # the slowest seed speaks
        seconds = float(np.mean([f[1] for f in fits]))
        caught = [w for f in fits for w in f[2]]
        const = max(np.mean(yt), 1 - np.mean(yt))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            peer, peer_pred, peer_gap = _peer(kind, bound, in_x, X, y, g, Xt, gt)
            peer_seconds = time.process_time() - t
        peer_acc = np.nan if peer_pred is None else np.mean(peer_pred == yt)
        # ExponentiatedGradient's training gap can be far from ours at the same bound (twice
        # it where the bound binds hard): the target compares the two at the same gap, ours
        # refitted at EG's.
        at_peer = ""
        ours = acc
        if peer.startswith("ExponentiatedGradient") and abs(peer_gap - gap) > 0.005:
            again = [_fit(kind, peer_gap, X, y, g, seed)[0] for seed in seeds]
            ours = float(np.mean([np.mean(c.predict(Xt) == yt) for c in again]))
            at_peer = f" (ours at the peer's gap: {ours:.4f})"
        misses = []
        if not gap <= bound + 1e-12:
            missed = sum(not v <= bound + 1e-12 for v in gaps)
            misses.append(
                f"bound missed by {gap - bound:.4f}"
                + (f" ({missed} of {len(fits)} seeds)" if len(fits) > 1 else "")
            )
        if not (all(f[0].converged_ for f in fits) and clf.n_data_passes_ <= 100):
            done = sum(f[0].converged_ and f[0].n_data_passes_ <= 100 for f in fits)
            misses.append(
                (f"{done} of {len(fits)} seeds converged within 100 passes; the slowest: "
                 if len(fits) > 1 else "")
                + f"converged_={clf.converged_} at {clf.n_data_passes_:.0f} passes "
                f"({clf.n_rounds_} solves; primal {clf.primal_residual_:.2g}, dual "
                f"{clf.dual_residual_:.2g})"
            )  # fmt: skip
        if acc < const:
            misses.append(f"{const - acc:.4f} below the constant model")
        if ours < peer_acc - 0.01:
            misses.append(f"{peer_acc - ours:.4f} below the peer")
        said = {str(w.message).split(":")[0][:60] for w in caught if "did not" in str(w.message)}
        report(
            f"| {name}{f' ({len(seeds)} seeds)' if len(seeds) > 1 else ''} | {kind} {bound:g} "
            f"| {gap:.4f} | {test_gap:.4f} | {acc:.4f} | {const:.4f} | {peer} | {peer_gap:.4f} | "
            f"{peer_acc:.4f} | {acc - peer_acc:+.4f}{at_peer} | {clf.n_data_passes_:.1f} | "
            f"{all(f[0].converged_ for f in fits)} | {all(f[0].bound_met_ for f in fits)} | "
            f"{seconds:.1f} / {peer_seconds:.1f} | "
            f"{'; '.join(misses) or 'all met'}{' (warned)' if said else ''} |"
        )


def best_single_linear(case, bound=0.05, n_directions=6000, seed=0):
    """The most accurate linear model on the training rows whose demographic-parity gap
    there is at most ``bound``, among LogisticRegression's weights and ``n_directions``
    random perturbations of them (at four scales), each with every threshold; returns its
    ``(training accuracy, test accuracy, test gap)``. What a user could reach with one
    deterministic linear model chosen on the training rows (the search overfits them).

    ``python -c "from benchmarks.families import *; print(best_single_linear('small_table'))"``
    """
    X, y, g, Xt, yt, gt = CASES[case][0]()
    w0 = LogisticRegression().fit(X, y).coef_.ravel()
    rng = np.random.default_rng(seed)
    best = (-1.0, None, None)
    scales = np.repeat([0.1, 0.3, 0.6, 1.0], n_directions // 4)
    for w in [w0] + [w0 + rng.standard_normal(len(w0)) * sc for sc in scales]:
        s = X @ w
        order = np.argsort(-s)
        ys, gs = y[order], g[order]
        n = len(y)
        tp = np.concatenate([[0], np.cumsum(ys)])
        # The top j rows predicted positive, for every j.
        acc = (tp + (n - y.sum()) - (np.arange(n + 1) - tp)) / n
        rate1 = np.concatenate([[0], np.cumsum(gs)]) / gs.sum()
        rate0 = np.concatenate([[0], np.cumsum(1 - gs)]) / (n - gs.sum())
        ok = np.abs(rate1 - rate0) <= bound
        j = int(np.argmax(np.where(ok, acc, -1.0)))
        if ok[j] and acc[j] > best[0] and 0 < j < n:
            best = (acc[j], w, (s[order[j - 1]] + s[order[j]]) / 2)
    acc, w, threshold = best
    pred = (Xt @ w > threshold).astype(int)
    gap = abs(pred[gt == 1].mean() - pred[gt == 0].mean())
    return round(float(acc), 4), round(float(np.mean(pred == yt)), 4), round(float(gap), 4)


def per_group_thresholds(case="many_groups", positives=10):
    """LogisticRegression on the columns of X that are not a group's indicator, then in
    each training group its ``positives`` highest-scoring rows predicted positive: a linear
    model whose groups' columns act as per-group thresholds, with a training gap of 0 when
    the groups are of equal size. Returns ``(training accuracy, test accuracy, test gap)``.

    ``python -c "from benchmarks.families import *; print(per_group_thresholds())"``
    """
    X, y, g, Xt, yt, gt = CASES[case][0]()
    X, Xt = (sp.csr_matrix(a).toarray() for a in (X, Xt))
    groups = np.unique(g)
    features = [j for j in range(X.shape[1]) if not np.isin(X[:, j], (0, 1)).all()]
    coef = LogisticRegression().fit(X[:, features], y).coef_.ravel()
    s, st = X[:, features] @ coef, Xt[:, features] @ coef
    pred, pred_t = np.zeros(len(y), int), np.zeros(len(yt), int)
    for v in groups:
        rows = np.flatnonzero(g == v)
        top = np.sort(s[rows])[::-1]
        threshold = (top[positives - 1] + top[positives]) / 2
        pred[rows] = s[rows] > threshold
        pred_t[gt == v] = st[gt == v] > threshold
    rates = [pred_t[gt == v].mean() for v in groups]
    return (
        round(float(np.mean(pred == y)), 4),
        round(float(np.mean(pred_t == yt)), 4),
        round(float(max(rates) - min(rates)), 4),
    )


#: Why the rows that miss a target miss it: what was measured on each (sessions 5 to 8,
#: with the commands in the issue's notes). Printed under the table; the table's figures
#: are this run's.
WHY = """### Why the misses

- **adult_race, equalised odds** (one seed of five over 100 passes): after two solves the
  predictions' TPR gap still misses by 0.033, and the third solve, at the surrogate's
  tightest bound (nine tenths of the way to a gap of 0), spends 250 passes in outer
  iterations at penalty 5 to 13 whose dual residual hovers at tol (0.0099-0.0102). The
  other four seeds converge in 24-116 passes.
- **adult_race, error-rate parity** (budget; bound missed in 2 seeds of 5, where the code
  before session 8 missed it in 4): in both the first solve spends the whole budget. In
  seed 1 that is one inner solve at penalty 5.5 whose dual residual creeps along tol
  (0.0107-0.0116 over 270 passes, batches grown to 960 rows: slow, not noisy), at the step
  the penalty's curvature bound allows. No solve is left to steer, the constant model does
  not meet an error-rate bound (its error rates are the groups' base rates), and no
  threshold of that solve meets it. ExponentiatedGradient misses this bound too (training
  gap 0.064); at that gap ours is within 0.007 of it.
- **intersections** (budget, below the peer): the first solve converges in about 30
  passes, but on predictions its gap is 0.06-0.07 where the soft gap is 0.05 (cells of 90
  rows); the further solves at tighter surrogate bounds spend the rest in inner solves at
  penalty 8-17 that creep along tol (seed 2 traced). Three seeds of five converge, each
  at about 300 passes.
  Tried, one seed each (session 6): fixed larger steps (4 to 200 times the bound's) reach
  0.78-0.82 at the budget; a step of 1 / (the penalty's curvature at the test point, 0.55
  against the bound's 245 then) converges in 215 passes at 0.825, but that curvature came
  from power iterations whose passes were not counted (about 15 a test); moving the
  surrogate's bound at the outer iterations of one solve instead of solving again reaches
  0.818 at the budget.
- **many_groups** (budget, at the constant model's accuracy): the joint curvature bound
  cut the penalty's 1350 to 128, and the fit now leaves its start (0.56 test accuracy at
  bound 0.5, 0.68 at 0.95, where it stayed at the constant model before), but at 0.1 it
  ends within 0.004 of the constant model. What bounds it is the loss itself, not the
  constraints: at bound 0.999, with the penalty's curvature all but removed (beta0 = 0.004,
  a step of 1.3 against the loss's 1 / 0.25 = 4), 300 passes bring the dual residual to
  0.0093 where the stop test asks for 0.0028. In the solver's units the loss's Hessian at
  LogisticRegression's solution has condition number 353 (eigenvalues 0.17 down to 4.9e-4,
  besides the null direction of the one-hot columns that sum to the intercept), so a
  first-order method needs about 800 steps for each tenfold fall in the slowest direction,
  and every step reads a row of every group (0.125 passes a step here: 2400 steps in 300
  passes). LogisticRegression's L-BFGS reaches 8.8e-5 in 19 iterations. Neither peer meets
  this bound (ThresholdOptimizer's training gap is 0.30, ExponentiatedGradient's 0.45); a
  linear model with the groups' columns as per-group thresholds does
  (`per_group_thresholds` above: training gap 0, test accuracy 0.70). Tried: the first
  penalty from the ratio of the loss's to the penalty's curvature (beta0 = 2 L0 / LJ): 0.61
  at bound 0.5 but the constant model at 0.1, and Adult's equalised odds at about 300
  passes in each of three seeds; the exact norm of the weights instead of Schur's test (LJ 91): no
  better here, and Adult's equalised odds within 100 passes in 1 seed of 5 (3 with
  Schur's).
- **tfidf** (budget, and the test gap): the Newton finish on 10000 sparse features takes
  its Hessian-vector products one read of the rows each, and the steering's re-solves
  several finishes, so a seed can end at the budget near the optimum (residuals of order
  1e-6). The bound met on the training rows does not carry to new rows on this family: the
  group is nearly independent of X beyond the label's score, so on the population a linear
  model meets it only by flattening its score, while on the training rows it can fit the
  groups' rates through rare features. fairlearn's ExponentiatedGradient does the same where
  it can run (a dense copy of X: smaller members of the family,
  `benchmarks/results/heldout_gap.md`). The certified fit (`calibration="clopper-pearson"`)
  sees the gap on its held-out calibration rows and says so: `certified_` is False, with a
  warning naming the certified value.
- **small_table** (below the peer): the 7 % group is not in X and leans positive on the
  main feature, so a linear model meets the bound only by leaning less on that feature.
  Ours reaches 0.684 over 5 seeds at training gap 0.048, ExponentiatedGradient 0.711 at
  0.045 with predictions drawn from its randomised mixture. The most accurate single
  linear model on the training rows at gap <= 0.05 that a search finds (LogisticRegression's
  weights and 6000 perturbations of them, every threshold; `best_single_linear` above) has
  training accuracy 0.715 but test accuracy 0.660 (test gap 0.120). At tol 1e-3 and 3000
  passes the fit stays at the minibatch noise floor (about 0.0011) and says so.
- **Tried in session 9, not adopted** (scripts in the closing note of issue 20): the step
  is not what holds the creeping solves back. At the end of Adult's equalised-odds solves
  (seed 0) the augmented Lagrangian's largest curvature is 0.16, 0.41 and 1.1 at penalty
  1.4, 4.4 and 13.3, where the step's bound L0 + beta LJ is 21, 63 and 192 (finite
  differences of the full gradient); yet a tighter proven bound (|J_k|^2 by Cauchy-Schwarz
  weighted by |W_k|: LJ 14.4 -> 11.0 for equalised odds, 9.5 -> 5.7 for error-rate parity)
  left equalised odds within 100 passes in 2 seeds of 5 (3 now) and missed error-rate
  parity in 4 of 5 (2 now), and scaling the columns by the penalty's curvature on them (a
  diagonal preconditioner as a change of units) left LJ at 13.7 and helped no row.
"""

HEADER = [
    "| case | bound | train gap | test gap | test acc | constant | peer | peer train gap | "
    "peer test acc | ours - peer | passes | converged_ | bound_met_ | CPU s (ours / peer) | "
    "targets missed |",
    "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|---:|---|",
]


def main(names, report=print, n_seeds=None):
    for line in HEADER:
        report(line)
    for name in names:
        run_case(name, report, n_seeds)


if __name__ == "__main__":
    args = sys.argv[1:]
    n_seeds = None
    if "--seeds" in args:
        at = args.index("--seeds")
        n_seeds = int(args[at + 1])
        del args[at : at + 2]
    main(args or list(CASES), report=lambda line: print(line, flush=True), n_seeds=n_seeds)
